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
/// A lit chunk's box side: the chunk and [`MARGIN`] voxels each side.
const BOX: usize = SIZE + 2 * MARGIN;

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
        Self { props }
    }

    /// A table from each type id's light (index = type id).
    pub fn from_props(props: Vec<VoxelLight>) -> Self {
        Self { props }
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

/// The light of a box of `size` voxels (x fastest, then y, then z), from
/// each voxel's light properties and, per column (x + size_x·z), whether
/// full sunlight comes down into its top voxel. Nothing outside the box
/// lights it.
pub fn light_box(
    size: [usize; 3],
    props: &[VoxelLight],
    sky: &[bool],
) -> Result<Vec<u8>, LightError> {
    let [sx, sy, sz] = size;
    let volume = sx.saturating_mul(sy).saturating_mul(sz);
    if props.len() != volume {
        return Err(LightError::WrongVolume {
            size,
            expected: volume,
            actual: props.len(),
        });
    }
    let columns = sx.saturating_mul(sz);
    if sky.len() != columns {
        return Err(LightError::WrongSky {
            size,
            expected: columns,
            actual: sky.len(),
        });
    }
    if volume == 0 {
        return Ok(Vec::new());
    }
    let mut queue = Buckets::default();
    // Sunlight: full sun into the top voxel of each open column.
    let mut sun = vec![0u8; volume];
    for z in 0..sz {
        for x in 0..sx {
            if !sky.get(x + sx * z).copied().unwrap_or(false) {
                continue;
            }
            let top = x + sx * ((sy - 1) + sy * z);
            let absorption = props.get(top).map_or(OPAQUE, |p| p.absorption);
            if absorption < OPAQUE
                && let Some(slot) = sun.get_mut(top)
            {
                *slot = MAX_LIGHT - absorption;
                queue.push(*slot, top);
            }
        }
    }
    spread(size, props, &mut sun, &mut queue, true);
    // Block light: every source at its level.
    let mut block_light = vec![0u8; volume];
    for (index, p) in props.iter().enumerate() {
        if p.source > 0
            && let Some(slot) = block_light.get_mut(index)
        {
            *slot = p.source.min(MAX_LIGHT);
            queue.push(*slot, index);
        }
    }
    spread(size, props, &mut block_light, &mut queue, false);
    Ok(sun
        .iter()
        .zip(&block_light)
        .map(|(&s, &b)| pack(s, b))
        .collect())
}

/// Voxel indices by light level, brightest processed first.
#[derive(Default)]
struct Buckets {
    levels: [Vec<usize>; MAX_LIGHT as usize + 1],
}

impl Buckets {
    fn push(&mut self, level: u8, index: usize) {
        if let Some(bucket) = self.levels.get_mut(usize::from(level)) {
            bucket.push(index);
        }
    }
}

/// Spreads the queued light through the box until nothing brightens: a
/// voxel is final when its level's bucket is reached (every step costs at
/// least as much as it did before, so brightest first is exact).
fn spread(
    size: [usize; 3],
    props: &[VoxelLight],
    light: &mut [u8],
    queue: &mut Buckets,
    sunlight: bool,
) {
    let [sx, sy, sz] = size;
    let (row, layer) = (sx, sx * sy);
    for level in (1..=MAX_LIGHT).rev() {
        while let Some(index) = queue.levels[usize::from(level)].pop() {
            if light.get(index).copied() != Some(level) {
                continue; // brightened since it was queued
            }
            let (x, y, z) = (index % sx, index / row % sy, index / layer);
            let neighbours = [
                (x > 0, index.wrapping_sub(1), false),
                (x + 1 < sx, index + 1, false),
                (y > 0, index.wrapping_sub(row), true),
                (y + 1 < sy, index + row, false),
                (z > 0, index.wrapping_sub(layer), false),
                (z + 1 < sz, index + layer, false),
            ];
            for (inside, next, down) in neighbours {
                if !inside {
                    continue;
                }
                let Some(absorption) = props.get(next).map(|p| p.absorption) else {
                    continue;
                };
                if absorption >= OPAQUE {
                    continue;
                }
                let cost = if sunlight && down && level == MAX_LIGHT {
                    absorption
                } else {
                    absorption + 1
                };
                let lit = level.saturating_sub(cost);
                if let Some(slot) = light.get_mut(next)
                    && lit > *slot
                {
                    *slot = lit;
                    queue.push(lit, next);
                }
            }
        }
    }
}

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

/// Where a box coordinate falls: the chunk offset (0..3 for -1..=1) and the
/// coordinate inside that chunk.
fn split(b: usize) -> (usize, usize) {
    let r = b as i32 - MARGIN as i32;
    (
        (r.div_euclid(CHUNK_SIZE) + 1) as usize,
        r.rem_euclid(CHUNK_SIZE) as usize,
    )
}

/// The light of the chunk at the centre of `around` (x fastest, then y,
/// then z, [`CHUNK_VOLUME`] bytes), computed over the chunk and [`MARGIN`]
/// voxels on each side: exactly what lighting its whole neighbourhood at
/// once gives it.
pub fn light_chunk(around: &Surroundings<'_>, table: &LightTable) -> Vec<u8> {
    let axis: Vec<(usize, usize)> = (0..BOX).map(split).collect();
    let chunk = |cx: usize, cy: usize, cz: usize| {
        around
            .chunks
            .get(cx + 3 * cy + 9 * cz)
            .copied()
            .flatten()
            .filter(|v| v.len() == CHUNK_VOLUME)
    };
    let mut props = Vec::with_capacity(BOX * BOX * BOX);
    for &(cz, lz) in &axis {
        for &(cy, ly) in &axis {
            for &(cx, lx) in &axis {
                props.push(match chunk(cx, cy, cz) {
                    Some(voxels) => voxels
                        .get(lx + SIZE * (ly + SIZE * lz))
                        .map_or(OPAQUE_VOXEL, |&v| table.get(v)),
                    // Above: open sky. Beside or below: dark rock.
                    None if cy == 2 => CLEAR_VOXEL,
                    None => OPAQUE_VOXEL,
                });
            }
        }
    }
    // Full sunlight into the box's top: the chunk above's column from just
    // above the box up is clear and sunlit.
    let (_, top) = split(BOX - 1);
    let mut sky = Vec::with_capacity(BOX * BOX);
    for &(cz, lz) in &axis {
        for &(cx, lx) in &axis {
            let open = match chunk(cx, 2, cz) {
                None => true,
                Some(voxels) => {
                    let sun_in = around
                        .sun_in
                        .get(cx + 3 * cz)
                        .copied()
                        .flatten()
                        .is_none_or(|mask| mask.get(lx + SIZE * lz).copied().unwrap_or(false));
                    sun_in
                        && (top + 1..SIZE).all(|ly| {
                            voxels
                                .get(lx + SIZE * (ly + SIZE * lz))
                                .is_some_and(|&v| table.get(v).absorption == 0)
                        })
                }
            };
            sky.push(open);
        }
    }
    let lit = light_box([BOX; 3], &props, &sky).unwrap_or_default();
    let mut out = Vec::with_capacity(CHUNK_VOLUME);
    for z in 0..SIZE {
        for y in 0..SIZE {
            for x in 0..SIZE {
                let at = (x + MARGIN) + BOX * ((y + MARGIN) + BOX * (z + MARGIN));
                out.push(lit.get(at).copied().unwrap_or(0));
            }
        }
    }
    out
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
