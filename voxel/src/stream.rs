//! The world stream to clients: packet names and payloads shared by the
//! server's `voxelworld` module and the client.
//!
//! Owns: names and bincode payloads (`bincode::config::standard()`, byte
//! fields as length + bytes) of `voxelworld:registry`,
//! `voxelworld:chunk`, `voxelworld:unload_chunk` (server → client) and
//! `voxelworld:ack` (client → server), plus [`encode`] / [`decode`].
//! Does not own: which chunks go when (the `voxelworld` module) or how a
//! client stores them.
//!
//! Flow: a client first gets `voxelworld:registry`, then chunks nearest its
//! player first. It answers `voxelworld:ack { chunks }` for chunks it has
//! processed; the server keeps at most a budget of unacknowledged chunks in
//! flight per client and pauses while the budget is used up. A chunk that
//! leaves the view radius is withdrawn with `voxelworld:unload_chunk`; a
//! chunk that changes is sent again to every client holding it.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::VoxelRegistry;
use crate::geometry::Pos;

pub const REGISTRY: &str = "voxelworld:registry";
pub const CHUNK: &str = "voxelworld:chunk";
pub const UNLOAD_CHUNK: &str = "voxelworld:unload_chunk";
pub const ACK: &str = "voxelworld:ack";
pub const VOXELS: &str = "voxelworld:voxels";

/// More single-voxel changes than this in one chunk since the last commit,
/// and its holders get the whole chunk again instead.
pub const MAX_VOXEL_UPDATES: usize = 1024;

/// Decode limit of a stream payload.
pub const MAX_PAYLOAD: usize = 16 << 20;

/// `voxelworld:registry`: every voxel type (call `reindex` after decoding).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Registry {
    pub voxels: VoxelRegistry,
}

/// `voxelworld:chunk`: a chunk's voxels as a `buildat-format` voxel blob
/// (voxels by canonical name).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Chunk {
    pub chunk: Pos,
    #[serde(with = "serde_bytes")]
    pub blob: Vec<u8>,
}

/// `voxelworld:unload_chunk`.
/// `voxelworld:voxels`: single voxels of a chunk the client holds changed
/// (sent instead of the whole chunk; at most [`MAX_VOXEL_UPDATES`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VoxelUpdates {
    pub chunk: Pos,
    /// (index in the chunk, new voxel instance), in the order they were made.
    pub changes: Vec<(u16, u32)>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UnloadChunk {
    pub chunk: Pos,
}

/// `voxelworld:ack`: this many chunks were received and processed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ack {
    pub chunks: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed stream payload: {0}")]
pub struct StreamError(String);

fn config() -> impl bincode::config::Config {
    bincode::config::standard().with_limit::<MAX_PAYLOAD>()
}

pub fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    bincode::serde::encode_to_vec(value, config()).unwrap_or_default()
}

/// Decodes a whole payload; trailing bytes are an error.
pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, StreamError> {
    let (value, used) = bincode::serde::decode_from_slice(bytes, config())
        .map_err(|e| StreamError(e.to_string()))?;
    if used != bytes.len() {
        return Err(StreamError(format!(
            "{} trailing bytes",
            bytes.len() - used
        )));
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_round_trip_and_the_registry_reindexes() {
        let chunk = Chunk {
            chunk: [-1, 2, 3],
            blob: vec![1, 2, 3],
        };
        assert_eq!(decode::<Chunk>(&encode(&chunk)).unwrap(), chunk);
        let updates = VoxelUpdates {
            chunk: [0, -1, 0],
            changes: vec![(32767, 5), (0, 0)],
        };
        assert_eq!(decode::<VoxelUpdates>(&encode(&updates)).unwrap(), updates);
        assert!(decode::<VoxelUpdates>(&encode(&updates)[..5]).is_err());
        assert!(decode::<Chunk>(&encode(&chunk)[1..]).is_err());
        let mut registry: Registry = decode(&encode(&Registry {
            voxels: VoxelRegistry::default(),
        }))
        .unwrap();
        registry.voxels.reindex();
        assert_eq!(registry.voxels.get_id("air"), Some(crate::AIR));
    }
}
