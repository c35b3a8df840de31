//! What the creatures know of the world: whether voxels are solid, kept
//! between ticks so a creature walking the same ground asks the world
//! nothing new.
//!
//! Owns: [`Solidity`], a cache of voxels' solidity by chunk (two bits a
//! voxel: known, solid), forgotten a chunk at a time when the world says
//! it changed (`voxelworld:node_volume_updated`) and all at once past
//! [`MAX_CHUNKS`]; and [`TypeSolidity`], whether each voxel type is
//! physically solid, from the registry. Does not own: fetching voxels
//! (`lib.rs` batches `GetVoxels`).

use std::collections::HashMap;

use buildat_voxel::geometry::{self, Pos};
use buildat_voxel::{VoxelInstance, VoxelRegistry};

/// Chunks kept (8 KiB each) before the cache starts over.
pub const MAX_CHUNKS: usize = 1024;

const WORDS: usize = (geometry::CHUNK_SIZE as usize).pow(3) / 64;

struct ChunkBits {
    known: Box<[u64; WORDS]>,
    solid: Box<[u64; WORDS]>,
}

/// Whether voxels are solid, as far as known.
#[derive(Default)]
pub struct Solidity {
    chunks: HashMap<Pos, ChunkBits>,
}

impl Solidity {
    /// `None`: not known (never fetched, or its chunk changed since).
    pub fn get(&self, pos: Pos) -> Option<bool> {
        let bits = self.chunks.get(&geometry::chunk_of_voxel(pos))?;
        let index = geometry::index_in_chunk(pos);
        let (word, bit) = (index / 64, 1u64 << (index % 64));
        (bits.known[word] & bit != 0).then_some(bits.solid[word] & bit != 0)
    }

    /// [`Self::get`] for many nearby voxels: remembers the last chunk, so
    /// reads in one chunk (a creature's, nearly always) hash once.
    pub fn reader(&self) -> impl FnMut(Pos) -> Option<bool> + '_ {
        let mut last: Option<(Pos, Option<&ChunkBits>)> = None;
        move |pos: Pos| {
            let chunk = geometry::chunk_of_voxel(pos);
            let bits = match last {
                Some((at, bits)) if at == chunk => bits,
                _ => {
                    let bits = self.chunks.get(&chunk);
                    last = Some((chunk, bits));
                    bits
                }
            }?;
            let index = geometry::index_in_chunk(pos);
            let (word, bit) = (index / 64, 1u64 << (index % 64));
            (bits.known[word] & bit != 0).then_some(bits.solid[word] & bit != 0)
        }
    }

    pub fn insert(&mut self, pos: Pos, solid: bool) {
        let chunk = geometry::chunk_of_voxel(pos);
        if !self.chunks.contains_key(&chunk) && self.chunks.len() >= MAX_CHUNKS {
            self.chunks.clear();
        }
        let bits = self.chunks.entry(chunk).or_insert_with(|| ChunkBits {
            known: Box::new([0; WORDS]),
            solid: Box::new([0; WORDS]),
        });
        let index = geometry::index_in_chunk(pos);
        let (word, bit) = (index / 64, 1u64 << (index % 64));
        bits.known[word] |= bit;
        if solid {
            bits.solid[word] |= bit;
        } else {
            bits.solid[word] &= !bit;
        }
    }

    /// The chunk's voxels changed: know none of them.
    pub fn forget_chunk(&mut self, chunk: Pos) {
        self.chunks.remove(&chunk);
    }

    pub fn chunks(&self) -> usize {
        self.chunks.len()
    }
}

/// Whether each voxel type is physically solid.
#[derive(Default)]
pub struct TypeSolidity {
    by_type: Vec<bool>,
}

impl TypeSolidity {
    pub fn new(registry: &VoxelRegistry) -> Self {
        let mut by_type = Vec::new();
        for definition in registry.definitions() {
            let id = VoxelInstance(definition.id).type_id() as usize;
            if by_type.len() <= id {
                by_type.resize(id + 1, false);
            }
            by_type[id] = definition.physically_solid;
        }
        Self { by_type }
    }

    /// `None`: a type the registry this was made from does not have.
    pub fn solid(&self, voxel: u32) -> Option<bool> {
        self.by_type
            .get(VoxelInstance(voxel).type_id() as usize)
            .copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn voxels_are_known_until_their_chunk_changes() {
        let mut cache = Solidity::default();
        let a = [5, -3, 40];
        let b = [6, -3, 40];
        assert_eq!(cache.get(a), None);
        cache.insert(a, true);
        cache.insert(b, false);
        assert_eq!(cache.get(a), Some(true));
        assert_eq!(cache.get(b), Some(false));
        assert_eq!(cache.get([7, -3, 40]), None);
        {
            let mut read = cache.reader();
            for pos in [a, b, [7, -3, 40], [-1, 0, 0], a] {
                assert_eq!(read(pos), cache.get(pos), "{pos:?}");
            }
        }
        cache.insert(a, false);
        assert_eq!(cache.get(a), Some(false));
        cache.forget_chunk(geometry::chunk_of_voxel(a));
        assert_eq!(cache.get(b), None);
    }

    #[test]
    fn the_cache_starts_over_past_its_size() {
        let mut cache = Solidity::default();
        for i in 0..MAX_CHUNKS as i32 + 1 {
            cache.insert([i * geometry::CHUNK_SIZE, 0, 0], true);
        }
        assert_eq!(cache.chunks(), 1);
    }
}
