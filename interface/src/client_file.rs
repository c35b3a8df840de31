//! The `client_file` module's events and calls (its public API).
//!
//! Owns: names and payload types. Does not own: the file registry or the
//! transfer (the `client_file` module) or the packets (`buildat-format`'s
//! `protocol`).

use serde::{Deserialize, Serialize};

use crate::Event;
use crate::network::PeerId;

/// The client_file module's name, for `Host::call`.
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
pub const ADD_FILE_CONTENT: &str = "add_file_content";
/// Call `add_file_path`: register a file's current content under a name.
pub const ADD_FILE_PATH: &str = "add_file_path";
/// Call `remove_file`: withdraw a name.
pub const REMOVE_FILE: &str = "remove_file";
/// Call `list_files`: answers `Vec<FileInfo>`.
pub const LIST_FILES: &str = "list_files";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AddFileContent {
    pub name: String,
    #[serde(with = "serde_bytes")]
    pub content: Vec<u8>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AddFilePath {
    pub name: String,
    pub path: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RemoveFile {
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileInfo {
    pub name: String,
    /// SHA-256 of the content.
    pub hash: [u8; 32],
    pub size: u64,
}
