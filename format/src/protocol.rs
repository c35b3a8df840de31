//! The core packets every client speaks, beyond framing: their names and
//! bincode payloads (`bincode::config::standard()`, little-endian varints,
//! with a decode limit), shared by the server's modules and the client.
//!
//! Owns: names and payload types of `core:announce_file`,
//! `core:tell_after_all_files_transferred`, `core:request_file`,
//! `core:file_content`, `core:file_error`, `core:all_files_transferred`,
//! `core:remove_file`, `core:run_script` and `core:disconnect`, plus
//! [`encode`] / [`decode`]. Does not own: framing ([`crate::packet`]) or who
//! sends what when (`docs/protocol.md`, the `client_file` module, the client).
//!
//! Byte fields use `serde_bytes`: the same bytes as a `Vec<u8>` (varint
//! length, then the bytes), copied in one go instead of one byte at a time.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// SHA-256 of a file's content.
pub type ContentHash = [u8; 32];

/// Server → client: a file exists with this content hash.
pub const ANNOUNCE_FILE: &str = "core:announce_file";
/// Server → client: every file has been announced; answer
/// [`ALL_FILES_TRANSFERRED`] once every announced file is present.
pub const TELL_AFTER_ALL_FILES_TRANSFERRED: &str = "core:tell_after_all_files_transferred";
/// Client → server: send me this file.
pub const REQUEST_FILE: &str = "core:request_file";
/// Server → client: one piece of a file's content.
pub const FILE_CONTENT: &str = "core:file_content";
/// Server → client: a request could not be served.
pub const FILE_ERROR: &str = "core:file_error";
/// Client → server: every announced file is present (empty data).
pub const ALL_FILES_TRANSFERRED: &str = "core:all_files_transferred";
/// Server → client: a file was withdrawn (its module unloaded).
pub const REMOVE_FILE: &str = "core:remove_file";
/// Server → client: run a transferred Lua file, sandboxed.
pub const RUN_SCRIPT: &str = "core:run_script";
/// Server → client before closing on purpose: data is the UTF-8 reason (raw,
/// not bincode).
pub const DISCONNECT: &str = "core:disconnect";

/// Largest piece of file content in one `core:file_content` packet.
pub const MAX_FILE_PIECE: usize = 256 * 1024;
/// Decode limit of a payload.
pub const MAX_PAYLOAD: usize = 16 << 20;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnnounceFile {
    pub name: String,
    pub hash: ContentHash,
    pub size: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestFile {
    pub name: String,
    pub hash: ContentHash,
}

/// Pieces of one file arrive in order, `offset` ascending, until
/// `offset + data.len() == size`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileContent {
    pub name: String,
    pub hash: ContentHash,
    pub size: u64,
    pub offset: u64,
    #[serde(with = "serde_bytes")]
    pub data: Vec<u8>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileError {
    pub name: String,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoveFile {
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunScript {
    /// A transferred file's name, e.g. `mymod/client_lua/init.lua`.
    pub name: String,
}

/// A payload that does not decode as its packet's type.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("malformed payload: {0}")]
pub struct PayloadError(String);

fn config() -> impl bincode::config::Config {
    bincode::config::standard().with_limit::<MAX_PAYLOAD>()
}

/// Encodes a payload.
pub fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    bincode::serde::encode_to_vec(value, config()).unwrap_or_default()
}

/// Decodes a whole payload; trailing bytes are an error.
pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, PayloadError> {
    let (value, used) = bincode::serde::decode_from_slice(bytes, config())
        .map_err(|e| PayloadError(e.to_string()))?;
    if used != bytes.len() {
        return Err(PayloadError(format!(
            "{} trailing bytes",
            bytes.len() - used
        )));
    }
    Ok(value)
}
