//! The world stream to clients: its packets, shared by the server's
//! `voxelworld` module and the client.
//!
//! Owns: the definitions of `voxelworld:registry`, `voxelworld:chunk`,
//! `voxelworld:voxels`, `voxelworld:light`, `voxelworld:unload_chunk`
//! (server → client) and `voxelworld:ack` (client → server).
//! Does not own: which chunks go when (the `voxelworld` module) or how a
//! client stores them.
//!
//! Flow: a client first gets `voxelworld:registry`, then chunks nearest its
//! player first. It answers `voxelworld:ack { chunks }` for chunks it has
//! processed; the server keeps at most a budget of unacknowledged chunks in
//! flight per client and pauses while the budget is used up. A chunk that
//! leaves the view radius is withdrawn with `voxelworld:unload_chunk`; a
//! chunk that changes is sent again to every client holding it. Every chunk
//! is followed by its light (`voxelworld:light`), and a held chunk whose
//! light changes (an edit, a neighbour arriving) gets its light again, once
//! per server tick at most.

use buildat_voxel::VoxelRegistry;
use buildat_voxel::geometry::Pos;
use serde::{Deserialize, Serialize};

/// More single-voxel changes than this in one chunk since the last commit,
/// and its holders get the whole chunk again instead.
pub const MAX_VOXEL_UPDATES: usize = 1024;

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

/// `voxelworld:voxels`: single voxels of a chunk the client holds changed
/// (sent instead of the whole chunk; at most [`MAX_VOXEL_UPDATES`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VoxelUpdates {
    pub chunk: Pos,
    /// (index in the chunk, new voxel instance), in the order they were made.
    pub changes: Vec<(u16, u32)>,
}

/// `voxelworld:light`: the light of a chunk the client holds, sent right
/// after the chunk and again whenever it changes: a `buildat-format` light
/// blob (`encode_light`) of one byte per voxel in the chunk's voxel order,
/// sunlight in the high nibble and block light in the low one (see
/// `buildat_voxel::light`). It replaces the chunk's light as a whole.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Light {
    pub chunk: Pos,
    #[serde(with = "serde_bytes")]
    pub light: Vec<u8>,
}

/// `voxelworld:unload_chunk`: the chunk left the view radius.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UnloadChunk {
    pub chunk: Pos,
}

/// `voxelworld:ack`: this many chunks were received and processed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ack {
    pub chunks: u32,
}

buildat_format::bincode_packet! {
    Registry = "voxelworld:registry";
    Chunk = "voxelworld:chunk";
    VoxelUpdates = "voxelworld:voxels";
    Light = "voxelworld:light";
    UnloadChunk = "voxelworld:unload_chunk";
    Ack = "voxelworld:ack";
}

#[cfg(test)]
mod tests {
    use buildat_format::Packet;

    use super::*;

    #[test]
    fn payloads_round_trip_and_the_registry_reindexes() {
        let chunk = Chunk {
            chunk: [-1, 2, 3],
            blob: vec![1, 2, 3],
        };
        assert_eq!(Chunk::decode(&chunk.encode().unwrap()).unwrap(), chunk);
        let updates = VoxelUpdates {
            chunk: [0, -1, 0],
            changes: vec![(32767, 5), (0, 0)],
        };
        assert_eq!(
            VoxelUpdates::decode(&updates.encode().unwrap()).unwrap(),
            updates
        );
        assert!(VoxelUpdates::decode(&updates.encode().unwrap()[..5]).is_err());
        assert!(Chunk::decode(&chunk.encode().unwrap()[1..]).is_err());
        let light = Light {
            chunk: [4, -5, 6],
            light: vec![1, 4, 0xf0],
        };
        assert_eq!(Light::decode(&light.encode().unwrap()).unwrap(), light);
        let sent = Registry {
            voxels: VoxelRegistry::default(),
        };
        let mut registry = Registry::decode(&sent.encode().unwrap()).unwrap();
        registry.voxels.reindex();
        assert_eq!(registry.voxels.get_id("air"), Some(buildat_voxel::AIR));
    }
}
