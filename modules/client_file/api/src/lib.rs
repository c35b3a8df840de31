//! `buildat-client-file-api`: the `client_file` module's public API.
//!
//! Owns: the event `client_file:files_transmitted` and the typed calls
//! ([`AddFileContent`], [`AddFilePath`], [`RemoveFile`], [`ListFiles`]).
//! Re-exports the file transfer packets every client speaks
//! (`buildat-client-file-protocol`). Does not own: the packets' layouts
//! (`buildat-client-file-protocol`), the file registry or the transfer
//! (the `client_file` module), or who sends what when
//! (`docs/protocol.md`, the module, the client).
//!
//! Versioned on its own: a change here rebuilds the modules that depend on
//! it (and only them) when they are next loaded or reloaded.

use buildat_interface::Event;
use buildat_network_api::PeerId;
use serde::{Deserialize, Serialize};

pub use buildat_client_file_protocol::*;

/// The client_file module's name.
pub const MODULE: &str = "client_file";

/// Emitted once per peer when it has every announced file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FilesTransmitted {
    pub peer: PeerId,
}
impl Event for FilesTransmitted {
    const NAME: &'static str = "client_file:files_transmitted";
}

/// Call `add_file_content`: register bytes under a name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AddFileContent {
    pub name: String,
    #[serde(with = "serde_bytes")]
    pub content: Vec<u8>,
}

/// Call `add_file_path`: register a file's current content under a name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AddFilePath {
    pub name: String,
    pub path: String,
}

/// Call `remove_file`: withdraw a name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RemoveFile {
    pub name: String,
}

/// Call `list_files`: every registered file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ListFiles {}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileInfo {
    pub name: String,
    /// SHA-256 of the content.
    pub hash: ContentHash,
    pub size: u64,
}

buildat_interface::calls! {
    module MODULE;
    AddFileContent = "add_file_content" -> ();
    AddFilePath = "add_file_path" -> ();
    RemoveFile = "remove_file" -> ();
    ListFiles = "list_files" -> Vec<FileInfo>;
}
