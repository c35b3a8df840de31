//! The default generator's terrain: a chunk's voxels from a seed and its
//! position.
//!
//! Owns: the block names the terrain uses (`BLOCKS`), and filling a box of
//! the world: each column's layers by biome (`column.rs`), water up to sea
//! level (ice where it is cold), caves (tunnels that open to the surface,
//! and caverns deep down), ores by depth, then the structures that reach
//! into the box (`structures.rs`). Pure and deterministic: the same seed
//! and position always give the same voxel, whatever box it is generated
//! in. Does not own: registering blocks or talking to voxelworld (the
//! `worldgen` module does). A crate of its own so benchmarks and tools can
//! generate the default terrain without linking a module library.

pub mod column;
pub mod noise;
pub mod structures;

use buildat_voxel::geometry::{self, CHUNK_SIZE, Pos};
pub use column::{Biome, Column, SEA_LEVEL, column, surface_height};
use noise::{hash, noise3};
use structures::Write;
pub use structures::{pine_voxels, tree_voxels};

/// A block the terrain uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Block {
    pub name: &'static str,
    /// Whether players collide with it.
    pub solid: bool,
}

const fn block(name: &'static str, solid: bool) -> Block {
    Block { name, solid }
}

/// Local palette: index → block.
pub const BLOCKS: [Block; 17] = [
    block("air", false),
    block("stone", true),
    block("dirt", true),
    block("grass", true),
    block("sand", true),
    block("water", false),
    block("coal_ore", true),
    block("iron_ore", true),
    block("gold_ore", true),
    block("gravel", true),
    block("sandstone", true),
    block("snow", true),
    block("ice", true),
    block("wood", true),
    block("leaves", true),
    block("pine_leaves", true),
    block("cactus", true),
];
// A block after the table's end would shift nothing: these are its indices.
pub const AIR: u32 = 0;
pub const STONE: u32 = 1;
pub const DIRT: u32 = 2;
pub const GRASS: u32 = 3;
pub const SAND: u32 = 4;
pub const WATER: u32 = 5;
pub const COAL: u32 = 6;
pub const IRON: u32 = 7;
pub const GOLD: u32 = 8;
pub const GRAVEL: u32 = 9;
pub const SANDSTONE: u32 = 10;
pub const SNOW: u32 = 11;
pub const ICE: u32 = 12;
pub const WOOD: u32 = 13;
pub const LEAVES: u32 = 14;
pub const PINE_LEAVES: u32 = 15;
pub const CACTUS: u32 = 16;
/// Tower stone: the structures' own blocks, after the terrain's.
pub const COBBLESTONE: u32 = 17;
pub const MOSSY_COBBLESTONE: u32 = 18;

/// Every block name by local index, structures' blocks included.
pub const PALETTE: [&str; 19] = {
    let mut names = [""; 19];
    let mut i = 0;
    while i < BLOCKS.len() {
        names[i] = BLOCKS[i].name;
        i += 1;
    }
    names[COBBLESTONE as usize] = "cobblestone";
    names[MOSSY_COBBLESTONE as usize] = "mossy_cobblestone";
    names
};

/// Whether the block at local index `id` is solid.
pub fn is_solid(id: u32) -> bool {
    match id {
        COBBLESTONE | MOSSY_COBBLESTONE => true,
        _ => BLOCKS.get(id as usize).is_some_and(|b| b.solid),
    }
}

/// How much light the block at local index `id` takes away
/// (`BlockDefinition::light_absorption`): air 0; water, ice and leaves let
/// light through dimmed (1, 2 and 1); everything else is opaque (15).
pub fn light_absorption(id: u32) -> u8 {
    match id {
        AIR => 0,
        WATER | LEAVES | PINE_LEAVES => 1,
        ICE => 2,
        _ => 15,
    }
}

/// The voxels of `chunk` as local palette indices (x fastest).
pub fn generate_chunk(seed: u64, chunk: Pos) -> Vec<u32> {
    generate_box(seed, geometry::chunk_origin(chunk), [CHUNK_SIZE; 3])
}

/// The columns of an area of x and z, worked out once for every box
/// generated over it (a column is the same at every height, and working it
/// out is most of a column's cost above and below ground).
pub struct Columns {
    seed: u64,
    /// The area's smallest x and z, and its size along them.
    min: [i32; 2],
    size: [i32; 2],
    columns: Vec<Column>,
}

impl Columns {
    /// The columns of x in `min[0]..min[0] + size[0]` and z in
    /// `min[1]..min[1] + size[1]`.
    pub fn new(seed: u64, min: [i32; 2], size: [i32; 2]) -> Self {
        let size = size.map(|s| s.max(0));
        let mut columns = Vec::with_capacity((size[0] * size[1]) as usize);
        for z in min[1]..min[1] + size[1] {
            for x in min[0]..min[0] + size[0] {
                columns.push(column::column(seed, x, z));
            }
        }
        Self {
            seed,
            min,
            size,
            columns,
        }
    }

    /// Whether these are the columns of `seed` over the area of x and z
    /// from `min` of `size` (or more).
    pub fn covers(&self, seed: u64, min: [i32; 2], size: [i32; 2]) -> bool {
        self.seed == seed && self.contains(min, size)
    }

    /// Whether the area from `min` of `size` lies within these columns.
    fn contains(&self, min: [i32; 2], size: [i32; 2]) -> bool {
        (0..2).all(|a| min[a] >= self.min[a] && min[a] + size[a] <= self.min[a] + self.size[a])
    }

    fn at(&self, x: i32, z: i32) -> &Column {
        let (lx, lz) = ((x - self.min[0]) as usize, (z - self.min[1]) as usize);
        &self.columns[lx + self.size[0] as usize * lz]
    }
}

/// The voxels of the box from `min` of `size` voxels as local palette
/// indices, x fastest, then y, then z.
pub fn generate_box(seed: u64, min: Pos, size: [i32; 3]) -> Vec<u32> {
    let columns = Columns::new(seed, [min[0], min[2]], [size[0], size[2]]);
    generate_box_in(&columns, min, size)
}

/// [`generate_box`] over `columns`, whose area must hold the box's x and z
/// (panics otherwise).
pub fn generate_box_in(columns: &Columns, min: Pos, size: [i32; 3]) -> Vec<u32> {
    assert!(
        columns.contains([min[0], min[2]], [size[0], size[2]]),
        "the columns do not cover the box from {min:?} of {size:?}"
    );
    let seed = columns.seed;
    let [sx, sy, sz] = size.map(|s| s.max(0) as usize);
    let mut voxels = vec![AIR; sx * sy * sz];
    // Caves only where there is ground: a box above every column's ground
    // (the sky, the sea) needs no cave noise.
    let mut top = i32::MIN;
    for lz in 0..sz as i32 {
        for lx in 0..sx as i32 {
            top = top.max(columns.at(min[0] + lx, min[2] + lz).height);
        }
    }
    let caves = (top >= min[1]).then(|| CaveField::new(seed, min, size));
    let mut ore_cell = OreCell::default();
    for lz in 0..sz {
        for lx in 0..sx {
            let (x, z) = (min[0] + lx as i32, min[2] + lz as i32);
            let column = columns.at(x, z);
            for ly in 0..sy {
                let y = min[1] + ly as i32;
                let at = ([x, y, z], [lx, ly, lz]);
                let voxel = column_voxel(seed, column, caves.as_ref(), &mut ore_cell, at);
                voxels[lx + sx * (ly + sy * lz)] = voxel;
            }
        }
    }
    let max = [min[0] + size[0], min[1] + size[1], min[2] + size[2]];
    for placement in structures::placements_touching(seed, min, max) {
        structures::stamp(&placement, &mut |[x, y, z], voxel, write| {
            let local = [x - min[0], y - min[1], z - min[2]];
            if (0..3).any(|i| local[i] < 0 || local[i] >= size[i]) {
                return;
            }
            let index = local[0] as usize + sx * (local[1] as usize + sy * local[2] as usize);
            if write == Write::Replace || voxels[index] == AIR {
                voxels[index] = voxel;
            }
        });
    }
    voxels
}

/// The terrain's voxel at `pos` (`local` in the box) in `column`, before
/// structures. `caves` is there wherever `pos` may be ground.
fn column_voxel(
    seed: u64,
    column: &Column,
    caves: Option<&CaveField>,
    ore_cell: &mut OreCell,
    (pos, local): (Pos, [usize; 3]),
) -> u32 {
    let [x, y, z] = pos;
    let height = column.height;
    if y > height {
        return if y > SEA_LEVEL {
            AIR
        } else if y == SEA_LEVEL && column.temperature < 0.22 {
            ICE
        } else {
            WATER
        };
    }
    let depth = height - y;
    // Caves reach the surface on land (cave mouths), but stay under a
    // lid of ground where water lies above.
    let lid = if height <= SEA_LEVEL + 1 { 5 } else { 0 };
    if depth >= lid && caves.is_some_and(|caves| caves.is_open(local, y)) {
        return AIR;
    }
    let layer = match column.biome {
        Biome::Ocean if height > SEA_LEVEL - 6 => [SAND, SAND, SAND],
        Biome::Ocean => [GRAVEL, GRAVEL, STONE],
        Biome::Beach => [SAND, SAND, SAND],
        Biome::Desert => [SAND, SAND, SANDSTONE],
        Biome::SnowyPeaks => [SNOW, STONE, STONE],
        Biome::Grassland | Biome::Forest => [GRASS, DIRT, DIRT],
    };
    match depth {
        0 => layer[0],
        1..=2 => layer[1],
        3..=5 => layer[2],
        _ => ore_or_stone(seed, [x, y, z], ore_cell),
    }
}

/// The last ore cell asked for and its draw: a column goes up through each
/// cell three voxels in a row, so its hash is worked out once for them.
#[derive(Default)]
struct OreCell {
    cell: Option<Pos>,
    draw: u64,
}

/// Ores by depth, in clusters: a 3 × 3 × 3 cell is an ore cell of the kind
/// its depth allows, and about half its voxels are that ore.
fn ore_or_stone(seed: u64, [x, y, z]: Pos, last: &mut OreCell) -> u32 {
    let cell = [x.div_euclid(3), y.div_euclid(3), z.div_euclid(3)];
    if last.cell != Some(cell) {
        *last = OreCell {
            cell: Some(cell),
            draw: hash(seed ^ 0x30, cell[0], cell[1], cell[2]) % 1000,
        };
    }
    let ore = match last.draw {
        0..18 if y < 48 => COAL,
        18..28 if y < -8 => IRON,
        28..32 if y < -40 => GOLD,
        _ => return STONE,
    };
    if hash(seed ^ 0x31, x, y, z) & 1 == 0 {
        ore
    } else {
        STONE
    }
}

/// Cave noise sampled on a lattice every `STEP` voxels (aligned to the
/// world, so any box sees the same values) and interpolated between.
struct CaveField {
    /// Lattice origin (a multiple of STEP) and size in lattice points.
    origin: Pos,
    points: [usize; 3],
    /// Offset of the box's min inside the lattice, in voxels.
    offset: [usize; 3],
    /// Per lattice point: two tunnel fields and one cavern field.
    samples: Vec<[f32; 3]>,
    /// Per cell (by its first corner's index): whether any of its voxels
    /// may be cave ([`cell_may_open`]); most are not.
    may_open: Vec<bool>,
}

const STEP: i32 = 4;

impl CaveField {
    fn new(seed: u64, min: Pos, size: [i32; 3]) -> Self {
        let origin = min.map(|m| m.div_euclid(STEP) * STEP);
        let points: [usize; 3] =
            std::array::from_fn(|i| ((min[i] + size[i] - origin[i]) / STEP + 2).max(1) as usize);
        let offset = std::array::from_fn(|i| (min[i] - origin[i]) as usize);
        let mut samples = Vec::with_capacity(points.iter().product());
        for pz in 0..points[2] {
            for py in 0..points[1] {
                for px in 0..points[0] {
                    let [x, y, z] = [
                        f64::from(origin[0] + px as i32 * STEP),
                        f64::from(origin[1] + py as i32 * STEP),
                        f64::from(origin[2] + pz as i32 * STEP),
                    ];
                    samples.push([
                        noise3(seed ^ 0x50, x / 48.0, y / 24.0, z / 48.0) as f32,
                        noise3(seed ^ 0x51, x / 48.0, y / 24.0, z / 48.0) as f32,
                        noise3(seed ^ 0x52, x / 40.0, y / 18.0, z / 40.0) as f32,
                    ]);
                }
            }
        }
        // A cell per lattice point but the last of each axis (those are
        // never a cell's first corner).
        let mut may_open = vec![false; samples.len()];
        for pz in 0..points[2].saturating_sub(1) {
            for py in 0..points[1].saturating_sub(1) {
                for px in 0..points[0].saturating_sub(1) {
                    let at = |dx: usize, dy: usize, dz: usize| {
                        samples[(px + dx) + points[0] * ((py + dy) + points[1] * (pz + dz))]
                    };
                    let corners = [
                        at(0, 0, 0),
                        at(1, 0, 0),
                        at(0, 1, 0),
                        at(1, 1, 0),
                        at(0, 0, 1),
                        at(1, 0, 1),
                        at(0, 1, 1),
                        at(1, 1, 1),
                    ];
                    let min_y = origin[1] + py as i32 * STEP;
                    may_open[px + points[0] * (py + points[1] * pz)] =
                        cell_may_open(&corners, min_y);
                }
            }
        }
        Self {
            origin,
            points,
            offset,
            samples,
            may_open,
        }
    }

    /// Whether the voxel at `local` (in the box; world height `y`) is cave.
    fn is_open(&self, local: [usize; 3], y: i32) -> bool {
        let at: [usize; 3] = std::array::from_fn(|i| local[i] + self.offset[i]);
        let step = STEP as usize;
        let cell: [usize; 3] = at.map(|a| a / step);
        let cell_index = cell[0] + self.points[0] * (cell[1] + self.points[1] * cell[2]);
        if !self.may_open[cell_index] {
            return false;
        }
        let t: [f32; 3] = at.map(|a| (a % step) as f32 / STEP as f32);
        let sample = |dx: usize, dy: usize, dz: usize| {
            let index = (cell[0] + dx)
                + self.points[0] * ((cell[1] + dy) + self.points[1] * (cell[2] + dz));
            self.samples[index]
        };
        let mut value = [0f32; 3];
        for (field, out) in value.iter_mut().enumerate() {
            let c = |dx, dy, dz| sample(dx, dy, dz)[field];
            let x00 = c(0, 0, 0) + (c(1, 0, 0) - c(0, 0, 0)) * t[0];
            let x10 = c(0, 1, 0) + (c(1, 1, 0) - c(0, 1, 0)) * t[0];
            let x01 = c(0, 0, 1) + (c(1, 0, 1) - c(0, 0, 1)) * t[0];
            let x11 = c(0, 1, 1) + (c(1, 1, 1) - c(0, 1, 1)) * t[0];
            let y0 = x00 + (x10 - x00) * t[1];
            let y1 = x01 + (x11 - x01) * t[1];
            *out = y0 + (y1 - y0) * t[2];
        }
        let _ = self.origin;
        is_cave(value, y)
    }
}

/// Tunnels where both of the first two fields are near their middle: long
/// winding tubes. Caverns where the third is high, deep down only.
fn is_cave(value: [f32; 3], y: i32) -> bool {
    let tunnel = (value[0] - 0.5).abs() < TUNNEL_BAND && (value[1] - 0.5).abs() < TUNNEL_BAND;
    let cavern = y < CAVERN_BELOW && value[2] > CAVERN_ABOVE;
    tunnel || cavern
}

const TUNNEL_BAND: f32 = 0.035;
const CAVERN_BELOW: i32 = -24;
const CAVERN_ABOVE: f32 = 0.74;

/// Whether a cell of the lattice whose 8 corners hold `corners` may hold
/// a cave voxel (its lowest voxel at height `min_y`). Trilinear
/// interpolation stays between its corners' least and greatest, so a field
/// whose range misses the band never reaches it inside the cell.
fn cell_may_open(corners: &[[f32; 3]; 8], min_y: i32) -> bool {
    let range = |field: usize| {
        corners.iter().fold((f32::MAX, f32::MIN), |(low, high), c| {
            (low.min(c[field]), high.max(c[field]))
        })
    };
    // A margin for the interpolation's rounding: a cell kept that holds no
    // cave costs a little time, one skipped that holds one a wrong voxel.
    const MARGIN: f32 = 1e-4;
    let band = TUNNEL_BAND + MARGIN;
    let near_middle = |(low, high): (f32, f32)| low < 0.5 + band && high > 0.5 - band;
    let tunnel = near_middle(range(0)) && near_middle(range(1));
    let cavern = min_y < CAVERN_BELOW && range(2).1 > CAVERN_ABOVE - MARGIN;
    tunnel || cavern
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_per_seed_and_different_across_seeds() {
        assert_eq!(generate_chunk(7, [0, 0, 0]), generate_chunk(7, [0, 0, 0]));
        assert_ne!(generate_chunk(7, [0, 0, 0]), generate_chunk(8, [0, 0, 0]));
    }

    /// The terrain of a fixed seed over a block of chunks from deep caves
    /// to open sky, hashed: a change to the generator's output (not only
    /// to its speed) fails here. Worlds generated before keep their
    /// sections, so new terrain beside them must match their edges.
    #[test]
    fn a_fixed_seed_gives_the_terrain_it_always_gave() {
        let mut hash = 0xcbf2_9ce4_8422_2325u64;
        for z in -3..3 {
            for y in -4..4 {
                for x in -3..3 {
                    for voxel in generate_chunk(1, [x, y, z]) {
                        hash = (hash ^ u64::from(voxel)).wrapping_mul(0x100_0000_01b3);
                    }
                }
            }
        }
        assert_eq!(hash, GOLDEN, "{hash:#x}");
    }
    const GOLDEN: u64 = 0xe541_ce38_0da4_48f5;

    #[test]
    fn palette_names_are_unique_and_filled() {
        let mut names: Vec<_> = PALETTE.to_vec();
        assert!(names.iter().all(|n| !n.is_empty()));
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), PALETTE.len());
    }
}

#[cfg(test)]
mod seam_tests {
    use super::*;
    use structures::{Kind, placements_touching};

    /// 3 × 3 × 3 chunks around the first tower and around the first
    /// forest tree found near the origin.
    fn regions(seed: u64) -> Vec<Pos> {
        let near = placements_touching(seed, [-2000, -64, -2000], [2000, 200, 2000]);
        let tower = near
            .iter()
            .find(|p| p.kind == Kind::Tower)
            .expect("a tower");
        let forest = near
            .iter()
            .find(|p| column(seed, p.base[0], p.base[2]).biome == Biome::Forest)
            .expect("a forest");
        [tower, forest]
            .map(|p| p.base.map(|v| v.div_euclid(CHUNK_SIZE) - 1))
            .to_vec()
    }

    /// The seam is exact: every chunk generated alone, in any order, holds
    /// the voxels that generating the whole region at once puts there, and
    /// structures in the region do cross chunk borders.
    #[test]
    fn chunks_alone_match_the_region_generated_at_once() {
        let seed = 1;
        let count = [3, 3, 3];
        let (mut crossing_total, mut tower_stone) = (0, 0);
        for min_chunk in regions(seed) {
            let min = geometry::chunk_origin(min_chunk);
            let size = count.map(|c| c * CHUNK_SIZE);
            let region = generate_box(seed, min, size);
            let mut chunks = Vec::new();
            for cz in 0..count[2] {
                for cy in 0..count[1] {
                    for cx in 0..count[0] {
                        chunks.push([min_chunk[0] + cx, min_chunk[1] + cy, min_chunk[2] + cz]);
                    }
                }
            }
            // Reverse and interleaved orders: generation keeps no state, so
            // order cannot matter; this pins it.
            let mut orders = vec![chunks.clone(), chunks.iter().rev().copied().collect()];
            orders.push(
                chunks
                    .iter()
                    .step_by(2)
                    .chain(chunks.iter().skip(1).step_by(2))
                    .copied()
                    .collect(),
            );
            for order in orders {
                for chunk in order {
                    let alone = generate_chunk(seed, chunk);
                    let origin = geometry::chunk_origin(chunk);
                    for (index, voxel) in alone.iter().enumerate() {
                        let s = CHUNK_SIZE as usize;
                        let local = [index % s, index / s % s, index / (s * s)];
                        let at: [usize; 3] =
                            std::array::from_fn(|i| (origin[i] - min[i]) as usize + local[i]);
                        let [sx, sy] = [size[0] as usize, size[1] as usize];
                        let expected = region[at[0] + sx * (at[1] + sy * at[2])];
                        assert_eq!(*voxel, expected, "chunk {chunk:?} voxel {local:?}");
                    }
                }
            }
            // Not vacuous: structures in the region cross chunk borders.
            let max = std::array::from_fn(|i| min[i] + size[i]);
            let crossing = placements_touching(seed, min, max)
                .into_iter()
                .filter(|p| {
                    let reach = if p.kind == Kind::Tower { 4 } else { 2 };
                    (0..3).step_by(2).any(|axis| {
                        (p.base[axis] - reach).div_euclid(CHUNK_SIZE)
                            != (p.base[axis] + reach).div_euclid(CHUNK_SIZE)
                    })
                })
                .count();
            crossing_total += crossing;
            tower_stone += region
                .iter()
                .filter(|&&v| v == COBBLESTONE || v == MOSSY_COBBLESTONE)
                .count();
        }
        assert!(
            crossing_total > 5,
            "only {crossing_total} structures cross chunk borders"
        );
        assert!(tower_stone > 100, "the tower is in its region");
    }
}
