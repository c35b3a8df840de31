//! World geometry: chunk and section coordinates.
//!
//! Owns: the fixed chunk size, conversions between voxel, chunk and section
//! positions, and the voxel index inside a chunk. Does not own: the section
//! size, which a world chooses at creation (it is passed in).

use serde::{Deserialize, Serialize};

/// Voxels along each side of a chunk.
pub const CHUNK_SIZE: i32 = 32;
/// Voxels in a chunk.
pub const CHUNK_VOLUME: usize = (CHUNK_SIZE * CHUNK_SIZE * CHUNK_SIZE) as usize;

/// A position in voxels, chunks or sections (by context).
pub type Pos = [i32; 3];

/// Chunks along each side of a section (fixed per world).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SectionSize(pub [i32; 3]);

impl Default for SectionSize {
    fn default() -> Self {
        Self([2, 2, 2])
    }
}

impl SectionSize {
    pub fn section_of_chunk(self, chunk: Pos) -> Pos {
        std::array::from_fn(|i| chunk[i].div_euclid(self.0[i]))
    }

    /// Every chunk of a section, x fastest.
    pub fn chunks_of_section(self, section: Pos) -> Vec<Pos> {
        let [w, h, d] = self.0;
        let mut chunks = Vec::with_capacity((w * h * d) as usize);
        for z in 0..d {
            for y in 0..h {
                for x in 0..w {
                    chunks.push([section[0] * w + x, section[1] * h + y, section[2] * d + z]);
                }
            }
        }
        chunks
    }
}

/// The chunk holding a voxel.
/// The six face directions of a voxel (+x, -x, +y, -y, +z, -z): its face
/// neighbours' offsets, and the order of `VoxelDefinition::textures`.
pub const FACES: [Pos; 6] = [
    [1, 0, 0],
    [-1, 0, 0],
    [0, 1, 0],
    [0, -1, 0],
    [0, 0, 1],
    [0, 0, -1],
];

pub fn chunk_of_voxel(voxel: Pos) -> Pos {
    voxel.map(|v| v.div_euclid(CHUNK_SIZE))
}

/// The chunks a player in chunk `center` sees with a view radius of
/// `radius` chunks: a sphere (the world stream's, and its tests').
pub fn chunks_in_view(center: Pos, radius: i32) -> Vec<Pos> {
    let mut chunks = Vec::new();
    for dz in -radius..=radius {
        for dy in -radius..=radius {
            for dx in -radius..=radius {
                if dx * dx + dy * dy + dz * dz <= radius * radius {
                    chunks.push([center[0] + dx, center[1] + dy, center[2] + dz]);
                }
            }
        }
    }
    chunks
}

/// A voxel's index in its chunk's array (x fastest, then y, then z).
pub fn index_in_chunk(voxel: Pos) -> usize {
    let [x, y, z] = voxel.map(|v| v.rem_euclid(CHUNK_SIZE) as usize);
    let size = CHUNK_SIZE as usize;
    x + size * (y + size * z)
}

/// The first voxel of a chunk.
pub fn chunk_origin(chunk: Pos) -> Pos {
    chunk.map(|c| c * CHUNK_SIZE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_view_is_a_sphere_of_chunks() {
        assert_eq!(chunks_in_view([0, 0, 0], 0), vec![[0, 0, 0]]);
        assert_eq!(chunks_in_view([0, 0, 0], 1).len(), 7);
        assert_eq!(chunks_in_view([5, 5, 5], 3).len(), 123);
        assert!(chunks_in_view([5, 5, 5], 3).contains(&[8, 5, 5]));
    }

    #[test]
    fn negative_positions_floor_correctly() {
        assert_eq!(chunk_of_voxel([-1, 0, 31]), [-1, 0, 0]);
        assert_eq!(chunk_of_voxel([-32, -33, 32]), [-1, -2, 1]);
        assert_eq!(index_in_chunk([-1, 0, 0]), 31);
        assert_eq!(
            SectionSize::default().section_of_chunk([-1, 1, 2]),
            [-1, 0, 1]
        );
        let chunks = SectionSize::default().chunks_of_section([-1, 0, 0]);
        assert_eq!(chunks.len(), 8);
        assert_eq!(chunks[0], [-2, 0, 0]);
        assert_eq!(chunks[7], [-1, 1, 1]);
    }
}
