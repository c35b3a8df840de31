//! `buildat-client-file-protocol`: the file transfer packets every client
//! speaks (`docs/protocol.md`), depending only on `buildat-format`, so the
//! client links no module ABI; `buildat-client-file-api` re-exports them.
//!
//! Owns: the packets `core:announce_file`,
//! `core:tell_after_all_files_transferred`, `core:request_file`,
//! `core:file_content`, `core:file_error`, `core:all_files_transferred`,
//! `core:remove_file` and `core:run_script`, content hashes and the largest
//! piece. Does not own: the file registry or the transfer (the
//! `client_file` module), framing (`buildat-format`), or who sends what
//! when (`docs/protocol.md`, the module, the client).

use buildat_format::PayloadError;
use serde::{Deserialize, Serialize};

/// SHA-256 of a file's content.
pub type ContentHash = [u8; 32];

/// Largest piece of file content in one [`FileContent`] packet.
pub const MAX_FILE_PIECE: usize = 256 * 1024;

/// Server → client: a file exists with this content hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnnounceFile {
    pub name: String,
    pub hash: ContentHash,
    pub size: u64,
}

/// Server → client: every file has been announced; answer
/// [`AllFilesTransferred`] once every announced file is present.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TellAfterAllFilesTransferred {}

/// Client → server: send me this file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestFile {
    pub name: String,
    pub hash: ContentHash,
}

/// Server → client: one piece of a file's content. Pieces of one file
/// arrive in order, `offset` ascending, until `offset + data.len() == size`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileContent {
    pub name: String,
    pub hash: ContentHash,
    pub size: u64,
    pub offset: u64,
    #[serde(with = "serde_bytes")]
    pub data: Vec<u8>,
}

/// A [`FileContent`] read in place: its name and data borrowed from the
/// packet's bytes (a client hashes and stores the data without copying it
/// out of the packet first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub struct FileContentRef<'a> {
    pub name: &'a str,
    pub hash: ContentHash,
    pub size: u64,
    pub offset: u64,
    pub data: &'a [u8],
}

impl<'a> FileContentRef<'a> {
    /// Reads a whole `core:file_content` payload; never panics.
    pub fn decode(bytes: &'a [u8]) -> Result<Self, PayloadError> {
        buildat_format::payload::decode_borrowed(bytes)
    }
}

impl FileContent {
    /// The payload of a piece of `data_len` bytes up to its data: the data
    /// follows it (so the data can be sent from a shared buffer without
    /// being copied into the packet; `head ++ data` is the whole payload).
    pub fn encode_head(
        name: &str,
        hash: &ContentHash,
        size: u64,
        offset: u64,
        data_len: usize,
    ) -> Result<Vec<u8>, PayloadError> {
        /// The fields of [`FileContent`] in order, the data's length last:
        /// bincode writes a byte field as its length, then the bytes.
        #[derive(Serialize)]
        struct Head<'a> {
            name: &'a str,
            hash: &'a ContentHash,
            size: u64,
            offset: u64,
            data_len: u64,
        }
        buildat_format::payload::encode(&Head {
            name,
            hash,
            size,
            offset,
            data_len: data_len as u64,
        })
    }
}

/// Server → client: a request could not be served.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileError {
    pub name: String,
    pub message: String,
}

/// Client → server: every announced file is present.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AllFilesTransferred {}

/// Server → client: a file was withdrawn (its module unloaded).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoveFilePacket {
    pub name: String,
}

/// Server → client: run a transferred Lua file, sandboxed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunScript {
    /// A transferred file's name, e.g. `mymod/client_lua/init.lua`.
    pub name: String,
}

buildat_format::bincode_packet! {
    AnnounceFile = "core:announce_file";
    TellAfterAllFilesTransferred = "core:tell_after_all_files_transferred";
    RequestFile = "core:request_file";
    FileContent = "core:file_content";
    FileError = "core:file_error";
    AllFilesTransferred = "core:all_files_transferred";
    RemoveFilePacket = "core:remove_file";
    RunScript = "core:run_script";
}

#[cfg(test)]
mod tests {
    use buildat_format::Packet;

    use super::*;

    #[test]
    fn payloads_round_trip_and_reject_trailing_bytes() {
        let content = FileContent {
            name: "m/client_data/a.bin".into(),
            hash: [7; 32],
            size: 300,
            offset: 256,
            data: vec![1, 2, 3],
        };
        let bytes = content.encode().unwrap();
        assert_eq!(FileContent::decode(&bytes).unwrap(), content);
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(FileContent::decode(&longer).is_err());
        assert!(FileContent::decode(&bytes[..bytes.len() - 1]).is_err());
        // Empty packets are empty payloads.
        assert!(AllFilesTransferred {}.encode().unwrap().is_empty());
        assert!(TellAfterAllFilesTransferred::decode(&[]).is_ok());
    }

    #[test]
    fn a_head_then_its_data_is_the_whole_piece() {
        // Around the data lengths where the length's varint grows.
        for len in [0, 1, 250, 251, 252, 65_535, 65_536, MAX_FILE_PIECE] {
            let content = FileContent {
                name: "m/client_data/big.bin".into(),
                hash: [9; 32],
                size: 1 << 40,
                offset: 300_000,
                data: (0..len).map(|i| i as u8).collect(),
            };
            let mut parted = FileContent::encode_head(
                &content.name,
                &content.hash,
                content.size,
                content.offset,
                len,
            )
            .unwrap();
            parted.extend_from_slice(&content.data);
            assert_eq!(parted, content.encode().unwrap(), "{len} bytes");
            let borrowed = FileContentRef::decode(&parted).unwrap();
            assert_eq!(
                (borrowed.name, borrowed.data, borrowed.offset),
                (
                    content.name.as_str(),
                    content.data.as_slice(),
                    content.offset
                )
            );
            assert!(FileContentRef::decode(&parted[..parted.len() - 1]).is_err());
        }
    }
}
