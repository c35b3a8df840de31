//! Per-voxel light: sunlight from above and block light from sources (a
//! torch), one byte per voxel, computed for a box of voxels or for one
//! chunk from its surroundings.
//!
//! Owns: the light byte (sunlight in the high nibble, block light in the
//! low one, each 0..=15), the propagation rules, the [`LightTable`] (each
//! voxel type's light properties by type id), lighting a box
//! ([`light_box`]), lighting a chunk exactly from its 26 neighbours and the
//! sunlight coming down into the chunks above ([`light_chunk`]), and which
//! columns full sunlight leaves a chunk through ([`sun_exits`]). Pure:
//! bounds-checked, no panics on any input, no allocation beyond the box.
//! Does not own: which chunks are loaded, when light is recomputed or how
//! it is stored and streamed (`voxelworld`), or how it is drawn (the
//! client).
//!
//! Rules (the same in every box, so a chunk lit from its surroundings holds
//! exactly the light of the same voxels lit as one big box):
//! - A step from a voxel at level `L` into a neighbour whose type absorbs
//!   `a` ([`LightTable`]: 0 air, 1 water and leaves, [`OPAQUE`] = no light
//!   enters) gives it `L - 1 - a` (at least 0).
//! - Sunlight at full strength (15) going straight down loses only `a`: it
//!   stays 15 through air all the way down, and spreads sideways (and down
//!   under anything that dimmed it) like any light, 1 less per step.
//! - Block light starts at each source voxel's level (even an opaque
//!   source glows) and spreads the same way, without the straight-down
//!   rule.
//! - A chunk's light depends only on voxels within [`MARGIN`] (15) of it:
//!   light from farther has spent itself. Around a chunk, a neighbour that
//!   is not loaded is dark and opaque beside and below it; above it, one
//!   that is not loaded is open sky (clear, full sunlight coming down), so
//!   the top of the loaded world is lit before what is above it arrives.

pub mod reference;
mod region;

pub use reference::light_box;
pub use region::{MAX_BOX_VOXELS, Region, light_region};

use crate::geometry::{CHUNK_SIZE, CHUNK_VOLUME};
use crate::{MAX_TYPE_ID, VoxelLight, VoxelRegistry};

/// The brightest light: full sunlight, and the strongest source.
pub const MAX_LIGHT: u8 = 15;
/// An absorption of this or more lets no light in.
pub const OPAQUE: u8 = 15;
/// How far light reaches: the voxels around a chunk its light depends on.
pub const MARGIN: usize = MAX_LIGHT as usize;
/// A chunk's light byte per voxel when it is all open sky.
pub const FULL_SUN: u8 = MAX_LIGHT << 4;
/// Columns of a chunk (x + 32·z), the length of a sunlight mask.
pub const COLUMNS: usize = (CHUNK_SIZE * CHUNK_SIZE) as usize;

const SIZE: usize = CHUNK_SIZE as usize;

/// serde's default absorption: opaque.
pub(crate) fn opaque() -> u8 {
    OPAQUE
}

/// A light byte from its sunlight and block light (each clamped to 15).
pub fn pack(sun: u8, block: u8) -> u8 {
    (sun.min(MAX_LIGHT) << 4) | block.min(MAX_LIGHT)
}

/// A light byte's sunlight, 0..=15.
pub fn sun(light: u8) -> u8 {
    light >> 4
}

/// A light byte's block light, 0..=15.
pub fn block(light: u8) -> u8 {
    light & 0x0f
}

/// Something the light of a box could not be computed from.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LightError {
    #[error("a box of {size:?} voxels is {expected} voxels, {actual} given")]
    WrongVolume {
        size: [usize; 3],
        expected: usize,
        actual: usize,
    },
    #[error("a box of {size:?} voxels has {expected} columns, {actual} sky flags given")]
    WrongSky {
        size: [usize; 3],
        expected: usize,
        actual: usize,
    },
}

/// Each voxel type's light properties, by type id.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LightTable {
    props: Vec<VoxelLight>,
    /// Per type id: source << 4 | absorption, as lighting a box reads it.
    packed: Vec<u8>,
}

impl LightTable {
    /// The registry's types' light.
    pub fn new(registry: &VoxelRegistry) -> Self {
        let mut props = Vec::with_capacity(registry.len());
        for definition in registry.definitions() {
            let id = definition.id as usize;
            if props.len() <= id {
                props.resize(id + 1, OPAQUE_VOXEL);
            }
            if let Some(slot) = props.get_mut(id) {
                *slot = VoxelLight {
                    source: definition.light_source.min(MAX_LIGHT),
                    absorption: definition.light_absorption.min(OPAQUE),
                };
            }
        }
        Self::from_props(props)
    }

    /// A table from each type id's light (index = type id).
    pub fn from_props(props: Vec<VoxelLight>) -> Self {
        let packed = props
            .iter()
            .map(|p| p.source.min(MAX_LIGHT) << 4 | p.absorption.min(OPAQUE))
            .collect();
        Self { props, packed }
    }

    /// A voxel's source level << 4 | its absorption (game bits ignored; an
    /// unknown type is opaque and dark), as lighting a box reads it.
    pub(crate) fn packed_of(&self, voxel: u32) -> u8 {
        self.packed
            .get((voxel & MAX_TYPE_ID) as usize)
            .copied()
            .unwrap_or(OPAQUE)
    }

    /// A voxel's light properties (by its type id; game bits ignored). An
    /// unknown type is opaque and dark.
    pub fn get(&self, voxel: u32) -> VoxelLight {
        self.props
            .get((voxel & MAX_TYPE_ID) as usize)
            .map_or(OPAQUE_VOXEL, |p| VoxelLight {
                source: p.source.min(MAX_LIGHT),
                absorption: p.absorption.min(OPAQUE),
            })
    }
}

const OPAQUE_VOXEL: VoxelLight = VoxelLight {
    source: 0,
    absorption: OPAQUE,
};
const CLEAR_VOXEL: VoxelLight = VoxelLight {
    source: 0,
    absorption: 0,
};

/// What lighting one chunk needs of the world around it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Surroundings<'a> {
    /// The chunk (index 13) and its 26 neighbours' voxels (x fastest, then
    /// y, then z): index `i` is the chunk at offset `(i % 3 - 1, i / 3 % 3 -
    /// 1, i / 9 - 1)`; `None` where not loaded.
    pub chunks: [Option<&'a [u32]>; 27],
    /// Per chunk of the row above (index `i` is the chunk at offset `(i % 3
    /// - 1, 1, i / 3 - 1)`), whether full sunlight comes down into the top
    /// of each of its columns (x + 32·z), as [`sun_exits`] of the chunk
    /// above it gives; `None`: all of them (nothing loaded above it).
    pub sun_in: [Option<&'a [bool]>; 9],
}

/// Which of a chunk's columns full sunlight leaves through its bottom
/// (x + 32·z): those it comes down into (`sun_in`, `None`: all) that hold
/// only clear voxels. A slice of another length than a chunk's reads as
/// opaque.
pub fn sun_exits(voxels: &[u32], table: &LightTable, sun_in: Option<&[bool]>) -> Vec<bool> {
    let mut open = match sun_in {
        Some(mask) => (0..COLUMNS)
            .map(|c| mask.get(c).copied().unwrap_or(false))
            .collect(),
        None => vec![true; COLUMNS],
    };
    if voxels.len() != CHUNK_VOLUME {
        return vec![false; COLUMNS];
    }
    for (column, open) in open.iter_mut().enumerate() {
        let (x, z) = (column % SIZE, column / SIZE);
        *open = *open
            && (0..SIZE).all(|y| {
                voxels
                    .get(x + SIZE * (y + SIZE * z))
                    .is_some_and(|&v| table.get(v).absorption == 0)
            });
    }
    open
}

/// The light of the chunk at the centre of `around` (x fastest, then y,
/// then z, [`CHUNK_VOLUME`] bytes), computed over the chunk and [`MARGIN`]
/// voxels on each side: exactly what lighting its whole neighbourhood at
/// once gives it ([`reference::light_chunk`] states it plainly; this is
/// [`light_region`] of one chunk).
pub fn light_chunk(around: &Surroundings<'_>, table: &LightTable) -> Vec<u8> {
    let region = Region {
        size: [1, 1, 1],
        chunks: around.chunks.to_vec(),
        sun_in: around.sun_in.to_vec(),
    };
    light_region(&region, table)
        .pop()
        .unwrap_or_else(|| vec![0; CHUNK_VOLUME])
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::geometry::Pos;

    const AIR: u32 = 0;
    const STONE: u32 = 2;
    const WATER: u32 = 3;
    const LEAVES: u32 = 4;
    const TORCH: u32 = 5;
    const GLOWSTONE: u32 = 6;

    fn table() -> LightTable {
        let light = |source, absorption| VoxelLight { source, absorption };
        LightTable::from_props(vec![
            light(0, 0),       // air
            light(0, OPAQUE),  // unknown
            light(0, OPAQUE),  // stone
            light(0, 1),       // water
            light(0, 1),       // leaves
            light(14, 0),      // torch
            light(15, OPAQUE), // glowstone
        ])
    }

    /// A world of whole chunks; voxels outside them are not loaded.
    #[derive(Default)]
    struct World {
        chunks: HashMap<Pos, Vec<u32>>,
    }

    impl World {
        fn filled(chunks: &[Pos], f: impl Fn([i32; 3]) -> u32) -> Self {
            let mut world = Self::default();
            for &chunk in chunks {
                let mut voxels = Vec::with_capacity(CHUNK_VOLUME);
                for z in 0..CHUNK_SIZE {
                    for y in 0..CHUNK_SIZE {
                        for x in 0..CHUNK_SIZE {
                            let o = chunk.map(|c| c * CHUNK_SIZE);
                            voxels.push(f([o[0] + x, o[1] + y, o[2] + z]));
                        }
                    }
                }
                world.chunks.insert(chunk, voxels);
            }
            world
        }

        fn set(&mut self, p: [i32; 3], voxel: u32) {
            let chunk = crate::geometry::chunk_of_voxel(p);
            if let Some(voxels) = self.chunks.get_mut(&chunk) {
                voxels[crate::geometry::index_in_chunk(p)] = voxel;
            }
        }

        /// Sunlight coming down into the top of `chunk`.
        fn sun_in(&self, chunk: Pos, table: &LightTable) -> Option<Vec<bool>> {
            let above = [chunk[0], chunk[1] + 1, chunk[2]];
            let voxels = self.chunks.get(&above)?;
            let in_above = self.sun_in(above, table);
            Some(sun_exits(voxels, table, in_above.as_deref()))
        }

        /// One chunk lit from its surroundings.
        fn light(&self, chunk: Pos) -> Vec<u8> {
            let table = table();
            let offset = |i: usize| [i % 3, i / 3 % 3, i / 9].map(|o| o as i32 - 1);
            let masks: Vec<Option<Vec<bool>>> = (0..9usize)
                .map(|i| {
                    let [dx, dz] = [(i % 3) as i32 - 1, (i / 3) as i32 - 1];
                    self.sun_in([chunk[0] + dx, chunk[1] + 1, chunk[2] + dz], &table)
                })
                .collect();
            let around = Surroundings {
                chunks: std::array::from_fn(|i| {
                    let o = offset(i);
                    self.chunks
                        .get(&[chunk[0] + o[0], chunk[1] + o[1], chunk[2] + o[2]])
                        .map(Vec::as_slice)
                }),
                sun_in: std::array::from_fn(|i| masks[i].as_deref()),
            };
            light_chunk(&around, &table)
        }

        fn light_at(&self, p: [i32; 3]) -> u8 {
            let chunk = crate::geometry::chunk_of_voxel(p);
            self.light(chunk)[crate::geometry::index_in_chunk(p)]
        }
    }

    /// Chunks (0..2, 0..2, 0..2) of hills, a cave and a pool across chunk
    /// borders, torches and a glowing block near them, leaves and an
    /// overhang; the layer of chunks above is air.
    fn hills(p: [i32; 3]) -> u32 {
        let [x, y, z] = p;
        let ground = 30 + ((x * 7 + z * 3) % 11) - ((x / 5 + z / 7) % 4) * 3;
        let cave = (y - 20).abs() <= 2 && (z - 33).abs() <= 3 && (5..60).contains(&x);
        let shaft = (x - 40).abs() <= 1 && (z - 33).abs() <= 1 && y >= 20;
        if [[31, 20, 33], [32, 21, 30], [20, 20, 33]].contains(&p) {
            return TORCH;
        }
        if p == [33, 19, 36] {
            return GLOWSTONE;
        }
        if (20..28).contains(&x) && (28..36).contains(&z) && (38..40).contains(&y) {
            return STONE; // an overhang in the air
        }
        if (44..50).contains(&x) && (10..40).contains(&z) && (41..45).contains(&y) {
            return if y == 44 { LEAVES } else { WATER };
        }
        if y >= 64 || cave || shaft || y >= ground {
            AIR
        } else {
            STONE
        }
    }

    fn area() -> Vec<Pos> {
        let mut chunks = Vec::new();
        for z in 0..2 {
            for y in 0..3 {
                for x in 0..2 {
                    chunks.push([x, y, z]);
                }
            }
        }
        chunks
    }

    #[test]
    fn light_crosses_chunk_borders_exactly_as_in_one_big_box() {
        let world = World::filled(&area(), hills);
        let table = table();
        // The whole 2 × 3 × 2 chunks as one box, open sky above.
        let size = [64, 96, 64];
        let mut props = Vec::new();
        for z in 0..64 {
            for y in 0..96 {
                for x in 0..64 {
                    props.push(table.get(hills([x, y, z])));
                }
            }
        }
        let whole = light_box(size, &props, &vec![true; 64 * 64]).unwrap();
        let mut lit_by_torch = 0;
        let mut dimmed_sun = 0;
        for z in 0..2 {
            for y in 0..2 {
                for x in 0..2 {
                    let chunk = [x, y, z];
                    let light = world.light(chunk);
                    for (i, &got) in light.iter().enumerate() {
                        let l = [i % 32, i / 32 % 32, i / 1024].map(|c| c as i32);
                        let p = [x * 32 + l[0], y * 32 + l[1], z * 32 + l[2]];
                        let want = whole[(p[0] + 64 * (p[1] + 96 * p[2])) as usize];
                        assert_eq!(got, want, "voxel {p:?} of chunk {chunk:?}");
                        lit_by_torch += usize::from(block(got) > 0);
                        dimmed_sun += usize::from((1..MAX_LIGHT).contains(&sun(got)));
                    }
                }
            }
        }
        assert!(lit_by_torch > 500, "the torches light the cave");
        assert!(dimmed_sun > 500, "sunlight spreads under things");
    }

    #[test]
    fn an_open_field_is_in_full_sun_and_an_overhang_shades_it() {
        let world = World::filled(&area(), hills);
        // High above the hills, and on the ground beside the overhang.
        assert_eq!(world.light_at([10, 60, 10]), FULL_SUN);
        assert_eq!(sun(world.light_at([5, 45, 5])), MAX_LIGHT);
        // Under the overhang (x 20..28, z 28..36, y 38..40) light comes in
        // from the sides, less the farther in.
        let edge = sun(world.light_at([20, 37, 32]));
        let middle = sun(world.light_at([23, 37, 32]));
        assert_eq!(edge, MAX_LIGHT - 1, "one step in from the open side");
        assert!(middle < edge && middle > 0, "{middle}");
    }

    #[test]
    fn a_torch_gives_14_at_itself_and_13_next_to_it() {
        let world = World::filled(&area(), hills);
        let torch = [20, 20, 33];
        assert_eq!(block(world.light_at(torch)), 14);
        assert_eq!(block(world.light_at([21, 20, 33])), 13);
        assert_eq!(block(world.light_at([20, 20, 31])), 12);
        // Stone stops it: inside the rock beside the cave, nothing.
        assert_eq!(world.light_at([20, 20, 40]), 0);
        // A glowing opaque block lights its neighbours, not through itself.
        assert_eq!(block(world.light_at([33, 19, 36])), 15);
    }

    #[test]
    fn water_and_leaves_dim_sunlight() {
        let world = World::filled(&area(), hills);
        // A pool (y 41..44) under a layer of leaves (y 44): full sun loses
        // 1 into the leaves, then 2 a voxel (a step and the water's 1).
        assert_eq!(hills([46, 43, 20]), WATER);
        assert_eq!(sun(world.light_at([46, 44, 20])), 14);
        assert_eq!(sun(world.light_at([46, 43, 20])), 12);
        assert_eq!(sun(world.light_at([46, 42, 20])), 10);
    }

    #[test]
    fn digging_a_hole_lets_the_sun_down_and_removing_a_torch_darkens() {
        let mut world = World::filled(&area(), hills);
        let bottom = [40, 20, 33]; // the shaft's bottom, in the cave
        assert_eq!(sun(world.light_at(bottom)), MAX_LIGHT, "the shaft is open");
        // Cover the shaft: no sun straight down any more.
        for x in 39..=41 {
            for z in 32..=34 {
                world.set([x, 50, z], STONE);
            }
        }
        let covered = sun(world.light_at(bottom));
        assert!(covered < MAX_LIGHT, "{covered}");
        // Dig a one-voxel hole through the lid: the sun is back below it.
        world.set([40, 50, 33], AIR);
        assert_eq!(sun(world.light_at(bottom)), MAX_LIGHT);
        // A torch out: beside it only the light of the next torch, 10
        // voxels along the cave, is left.
        let near = [21, 20, 33];
        assert_eq!(block(world.light_at(near)), 13);
        world.set([20, 20, 33], AIR);
        assert_eq!(block(world.light_at(near)), 14 - 10);
        assert_eq!(block(world.light_at([10, 20, 33])), 0, "dark past it");
    }

    #[test]
    fn missing_neighbours_are_dark_beside_and_sky_above() {
        let world = World::filled(&[[0, 0, 0]], |_| AIR);
        let light = world.light([0, 0, 0]);
        assert!(light.iter().all(|&l| sun(l) == MAX_LIGHT), "open sky above");
        let cave = World::filled(&[[0, 0, 0], [0, 1, 0]], |p| {
            if p[1] >= 32 { STONE } else { AIR }
        });
        assert!(
            cave.light([0, 0, 0]).iter().all(|&l| l == 0),
            "rock above, nothing loaded beside: dark"
        );
    }

    /// A small xorshift for worlds made up by the tests.
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
    }

    #[test]
    fn the_fast_lighting_gives_what_the_reference_gives_voxel_for_voxel() {
        let table = table();
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        for round in 0..24 {
            // Terrain of a random height with random holes, leaves, water,
            // torches and glowstone; some neighbours missing, some sunlight
            // masks closed.
            let ground = rng.below(96) as i32 - 16;
            let mut chunks: Vec<Vec<u32>> = Vec::new();
            for i in 0..27 {
                let o = [i % 3, i / 3 % 3, i / 9].map(|c| c - 1);
                let mut voxels = Vec::with_capacity(CHUNK_VOLUME);
                for j in 0..CHUNK_VOLUME {
                    let y = o[1] * 32 + (j / 32 % 32) as i32;
                    let roll = rng.below(1000);
                    voxels.push(match roll {
                        0..=2 => TORCH,
                        3 => GLOWSTONE,
                        4..=40 => LEAVES,
                        41..=70 => WATER,
                        _ if y < ground && roll < 900 => STONE,
                        _ if y < ground => AIR,
                        _ if roll < 990 => AIR,
                        _ => STONE,
                    });
                }
                chunks.push(voxels);
            }
            let masks: Vec<Vec<bool>> = (0..9)
                .map(|_| (0..COLUMNS).map(|_| rng.below(8) != 0).collect())
                .collect();
            let missing: Vec<bool> = (0..27).map(|i| i != 13 && rng.below(5) == 0).collect();
            let around = Surroundings {
                chunks: std::array::from_fn(|i| (!missing[i]).then(|| chunks[i].as_slice())),
                sun_in: std::array::from_fn(|i| (rng.below(3) != 0).then(|| masks[i].as_slice())),
            };
            let fast = light_chunk(&around, &table);
            let plain = reference::light_chunk(&around, &table);
            for (i, (f, p)) in fast.iter().zip(&plain).enumerate() {
                assert_eq!(
                    f,
                    p,
                    "round {round}, voxel {i} (x, y, z = {}, {}, {})",
                    i % 32,
                    i / 32 % 32,
                    i / 1024
                );
            }
        }
    }

    #[test]
    fn a_region_lit_at_once_is_its_chunks_lit_one_by_one() {
        let world = World::filled(&area(), hills);
        let table = table();
        // The 2 × 2 × 2 chunks from (0, 0, 0), with the world around them.
        let grid: Vec<Pos> = (0..64)
            .map(|i| [i % 4 - 1, i / 4 % 4 - 1, i / 16 - 1])
            .collect();
        let masks: Vec<Option<Vec<bool>>> = (0..16)
            .map(|i| world.sun_in([i % 4 - 1, 2, i / 4 - 1], &table))
            .collect();
        let region = Region {
            size: [2, 2, 2],
            chunks: grid
                .iter()
                .map(|c| world.chunks.get(c).map(Vec::as_slice))
                .collect(),
            sun_in: masks.iter().map(|m| m.as_deref()).collect(),
        };
        let lit = light_region(&region, &table);
        assert_eq!(lit.len(), 8);
        for (i, light) in lit.iter().enumerate() {
            let chunk = [i as i32 % 2, i as i32 / 2 % 2, i as i32 / 4];
            assert!(*light == world.light(chunk), "chunk {chunk:?}");
        }
        // Two chunks tall at the edge of the world (nothing at x = -1):
        // the chunk missing beside the upper one is sky to the lower.
        let grid: Vec<Pos> = (0..36)
            .map(|i| [i % 3 - 1, i / 3 % 4 - 1, i / 12 - 1])
            .collect();
        let masks: Vec<Option<Vec<bool>>> = (0..9)
            .map(|i| world.sun_in([i % 3 - 1, 2, i / 3 - 1], &table))
            .collect();
        let tall = Region {
            size: [1, 2, 1],
            chunks: grid
                .iter()
                .map(|c| world.chunks.get(c).map(Vec::as_slice))
                .collect(),
            sun_in: masks.iter().map(|m| m.as_deref()).collect(),
        };
        let lit = light_region(&tall, &table);
        assert!(lit[0] == world.light([0, 0, 0]), "the lower chunk");
        assert!(lit[1] == world.light([0, 1, 0]), "the upper chunk");
        // The sky over the hills (chunks at y = 2 and up, all air): full
        // sunlight without a box, as one by one; with a torch in the hills
        // just below, its light reaches up and the box is built.
        let sky_over = |world: &World| {
            let grid: Vec<Pos> = (0..64)
                .map(|i| [i % 4 - 1, i / 4 % 4 + 1, i / 16 - 1])
                .collect();
            let chunks: Vec<Option<Vec<u32>>> =
                grid.iter().map(|c| world.chunks.get(c).cloned()).collect();
            let region = Region {
                size: [2, 2, 2],
                chunks: chunks.iter().map(Option::as_deref).collect(),
                sun_in: vec![None; 16],
            };
            let lit = light_region(&region, &table);
            for (i, light) in lit.iter().enumerate() {
                let chunk = [i as i32 % 2, i as i32 / 2 % 2 + 2, i as i32 / 4];
                assert!(*light == world.light(chunk), "chunk {chunk:?}");
            }
            lit
        };
        let mut sky = World::filled(
            &[
                area(),
                (0..32)
                    .map(|i| [i % 4 - 1, i / 4 % 2 + 3, i / 8 - 1])
                    .collect(),
            ]
            .concat(),
            hills,
        );
        assert!(
            sky_over(&sky)
                .iter()
                .all(|l| l.iter().all(|&b| b == FULL_SUN))
        );
        sky.set([20, 63, 20], TORCH);
        assert!(
            sky_over(&sky)
                .iter()
                .any(|l| l.iter().any(|&b| block(b) > 0)),
            "the torch's light is in the sky's lowest voxels"
        );
        let wrong = Region {
            size: [2, 2, 2],
            chunks: Vec::new(),
            sun_in: Vec::new(),
        };
        assert!(light_region(&wrong, &table).is_empty());
        let huge = Region {
            size: [usize::MAX, 3, usize::MAX / 2],
            chunks: vec![None; 5],
            sun_in: vec![None; 5],
        };
        assert!(
            light_region(&huge, &table).is_empty(),
            "no overflow, no panic"
        );
        let too_big = Region {
            size: [1, 1, 1 << 20],
            chunks: vec![None; 9 * ((1 << 20) + 2)],
            sun_in: vec![None; 3 * ((1 << 20) + 2)],
        };
        assert!(
            light_region(&too_big, &table).is_empty(),
            "a box too big to hold"
        );
    }

    #[test]
    fn bad_input_is_an_error_or_darkness_never_a_panic() {
        assert!(matches!(
            light_box([2, 2, 2], &[CLEAR_VOXEL; 7], &[true; 4]),
            Err(LightError::WrongVolume { .. })
        ));
        assert!(matches!(
            light_box([2, 2, 2], &[CLEAR_VOXEL; 8], &[true; 3]),
            Err(LightError::WrongSky { .. })
        ));
        assert_eq!(light_box([0, 5, 0], &[], &[]), Ok(Vec::new()));
        assert_eq!(
            light_box([usize::MAX, 2, 2], &[], &[]).map_err(|_| ()),
            Err(())
        );
        let short = [AIR; 10];
        let around = Surroundings {
            chunks: std::array::from_fn(|i| (i == 13).then_some(&short[..])),
            sun_in: [Some(&[true][..]); 9],
        };
        assert_eq!(light_chunk(&around, &table()).len(), CHUNK_VOLUME);
        assert_eq!(sun_exits(&short, &table(), None), vec![false; COLUMNS]);
        let table = table();
        assert_eq!(table.get(u32::MAX).absorption, OPAQUE, "unknown: opaque");
        assert_eq!(pack(200, 99), 0xff);
    }
}
