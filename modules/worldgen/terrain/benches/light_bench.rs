//! Voxels lit per second on one core: the default terrain's chunks lit by
//! today's lighting (`buildat_voxel::light::light_chunk`, a padded box with
//! sunlight filled down a heightmap), by the same over a whole section at
//! once (`light_region`, what voxelworld lights when a section's chunks are
//! asked together), and by the lighting before it
//! (`light::reference::light_chunk`, kept as the plain statement of the
//! rules), in one run, on the same chunks; every answer is checked equal to
//! the reference's. Starlight's figure (Paper's light engine: a 16×16×256
//! chunk in about 0.69 ms, about 95 M voxels a second on one core) is the
//! goal printed beside them.
//!
//! `cargo bench -p buildat-worldgen-terrain --bench light_bench [-- --quick]`
//!
//! Two areas of chunks: the terrain as generated (sunlight only), and the
//! same with a torch on the ground every 8 voxels each way (block light
//! too). The chunks lit are those from y -64 to 63 (sea level 0) in a
//! square of 8 × 8 chunks around spawn (`--quick`: 4 × 4); their
//! surroundings are generated one chunk further.

use std::collections::HashMap;
use std::time::Instant;

use buildat_voxel::VoxelLight;
use buildat_voxel::geometry::{CHUNK_SIZE, Pos};
use buildat_voxel::light::{self, LightTable, Region, Surroundings};
use buildat_worldgen_terrain as terrain;

const SEED: u64 = 1;
/// Starlight's figure: voxels lit per second on one core.
const STARLIGHT: f64 = 95.0e6;
const TORCH: u32 = terrain::PALETTE.len() as u32;

struct Area {
    chunks: HashMap<Pos, Vec<u32>>,
    /// Sunlight coming down into the top of each chunk, where the chunk
    /// above is generated.
    sun_in: HashMap<Pos, Vec<bool>>,
}

impl Area {
    /// Chunks x and z in -2r-1..=2r, y in -3..=2: the lit ones are x and
    /// z in -2r..2r (whole sections), y -2..=1, and every one of them has
    /// all its neighbours.
    fn new(radius: i32, torches: bool, table: &LightTable) -> Self {
        let radius = 2 * radius;
        let mut chunks = HashMap::new();
        for z in -radius - 1..=radius {
            for y in -3..=2 {
                for x in -radius - 1..=radius {
                    let chunk = [x, y, z];
                    let mut voxels = terrain::generate_chunk(SEED, chunk);
                    if torches {
                        place_torches(&mut voxels);
                    }
                    chunks.insert(chunk, voxels);
                }
            }
        }
        let mut sun_in = HashMap::new();
        for z in -radius - 1..=radius {
            for x in -radius - 1..=radius {
                let mut coming: Option<Vec<bool>> = None;
                for y in (-3..=1).rev() {
                    let above = &chunks[&[x, y + 1, z]];
                    let mask = light::sun_exits(above, table, coming.as_deref());
                    sun_in.insert([x, y, z], mask.clone());
                    coming = Some(mask);
                }
            }
        }
        Self { chunks, sun_in }
    }

    fn lit_chunks(radius: i32) -> Vec<Pos> {
        let radius = 2 * radius;
        let mut out = Vec::new();
        for z in -radius..radius {
            for y in -2..=1 {
                for x in -radius..radius {
                    out.push([x, y, z]);
                }
            }
        }
        out
    }

    fn surroundings(&self, chunk: Pos) -> Surroundings<'_> {
        Surroundings {
            chunks: std::array::from_fn(|i| {
                let o = [i % 3, i / 3 % 3, i / 9].map(|c| c as i32 - 1);
                self.chunks
                    .get(&[chunk[0] + o[0], chunk[1] + o[1], chunk[2] + o[2]])
                    .map(Vec::as_slice)
            }),
            sun_in: std::array::from_fn(|i| {
                let [dx, dz] = [(i % 3) as i32 - 1, (i / 3) as i32 - 1];
                self.sun_in
                    .get(&[chunk[0] + dx, chunk[1] + 1, chunk[2] + dz])
                    .map(Vec::as_slice)
            }),
        }
    }

    /// The 2×2×2 chunks from `first` (a section) and the world around.
    fn region(&self, first: Pos) -> Region<'_> {
        let at = |g: [i32; 3]| {
            [
                first[0] + g[0] - 1,
                first[1] + g[1] - 1,
                first[2] + g[2] - 1,
            ]
        };
        Region {
            size: [2, 2, 2],
            chunks: (0..64)
                .map(|i| {
                    self.chunks
                        .get(&at([i % 4, i / 4 % 4, i / 16]))
                        .map(Vec::as_slice)
                })
                .collect(),
            sun_in: (0..16)
                .map(|i| {
                    let above = at([i % 4, 3, i / 4]);
                    self.sun_in.get(&above).map(Vec::as_slice)
                })
                .collect(),
        }
    }
}

/// A torch on the first air voxel above ground every 8 voxels each way.
fn place_torches(voxels: &mut [u32]) {
    let size = CHUNK_SIZE as usize;
    for z in (0..size).step_by(8) {
        for x in (0..size).step_by(8) {
            for y in 1..size {
                let below = x + size * (y - 1 + size * z);
                let here = x + size * (y + size * z);
                if voxels[here] == terrain::AIR && terrain::is_solid(voxels[below]) {
                    voxels[here] = TORCH;
                    break;
                }
            }
        }
    }
}

fn table() -> LightTable {
    let mut props: Vec<VoxelLight> = (0..terrain::PALETTE.len() as u32)
        .map(|id| VoxelLight {
            source: 0,
            absorption: terrain::light_absorption(id),
        })
        .collect();
    props.push(VoxelLight {
        source: 14,
        absorption: 0,
    });
    LightTable::from_props(props)
}

/// Seconds per pass (best of `passes`) of lighting every chunk with `f`.
fn time(passes: usize, mut f: impl FnMut() -> usize) -> (f64, usize) {
    let mut best = f64::INFINITY;
    let mut lit = 0;
    for _ in 0..passes {
        let started = Instant::now();
        lit = std::hint::black_box(f());
        best = best.min(started.elapsed().as_secs_f64());
    }
    (best, lit)
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    // In sections: chunks x and z in -2·radius..2·radius.
    let (radius, passes) = if quick { (1, 1) } else { (2, 3) };
    let table = table();
    println!(
        "light_bench: default terrain, seed {SEED}, chunks x,z -{r}..{r} y -2..=1, best of {passes}, one thread",
        r = 2 * radius
    );
    println!(
        "{:<56} {:>8} {:>10} {:>12} {:>10} {:>11}",
        "lighting", "chunks", "ms/chunk", "M voxels/s", "× before", "× Starlight"
    );
    for torches in [false, true] {
        let area = Area::new(radius, torches, &table);
        let chunks = Area::lit_chunks(radius);
        let voxels = (chunks.len() * buildat_voxel::geometry::CHUNK_VOLUME) as f64;
        // The reference, and its answers to check the others against.
        let expected: Vec<Vec<u8>> = chunks
            .iter()
            .map(|&c| light::reference::light_chunk(&area.surroundings(c), &table))
            .collect();
        let (before, _) = time(passes.min(2), || {
            chunks
                .iter()
                .map(|&c| light::reference::light_chunk(&area.surroundings(c), &table).len())
                .sum()
        });
        for (chunk, want) in chunks.iter().zip(&expected) {
            let got = light::light_chunk(&area.surroundings(*chunk), &table);
            assert!(
                got == *want,
                "light_chunk differs from the reference at {chunk:?}"
            );
        }
        let (per_chunk, _) = time(passes, || {
            chunks
                .iter()
                .map(|&c| light::light_chunk(&area.surroundings(c), &table).len())
                .sum()
        });
        let sections: Vec<Pos> = chunks
            .iter()
            .copied()
            .filter(|c| c.iter().all(|v| v.rem_euclid(2) == 0))
            .collect();
        let index: HashMap<Pos, usize> = chunks.iter().enumerate().map(|(i, c)| (*c, i)).collect();
        for &first in &sections {
            let lit = light::light_region(&area.region(first), &table);
            for (i, got) in lit.iter().enumerate() {
                let i = i as i32;
                let chunk = [first[0] + i % 2, first[1] + i / 2 % 2, first[2] + i / 4];
                assert!(
                    *got == expected[index[&chunk]],
                    "light_region differs from the reference at {chunk:?}"
                );
            }
        }
        let (per_section, _) = time(passes, || {
            sections
                .iter()
                .map(|&first| light::light_region(&area.region(first), &table).len())
                .sum()
        });
        let what = if torches {
            ", a torch every 8 voxels"
        } else {
            ""
        };
        for (name, seconds) in [
            (format!("before: reference per chunk{what}"), before),
            (format!("now: light_chunk{what}"), per_chunk),
            (format!("now: light_region of a section{what}"), per_section),
        ] {
            let rate = voxels / seconds;
            println!(
                "{name:<56} {:>8} {:>10.3} {:>12.1} {:>10.2} {:>11.2}",
                chunks.len(),
                1000.0 * seconds / chunks.len() as f64,
                rate / 1e6,
                before / seconds,
                rate / STARLIGHT
            );
        }
    }
}
