//! The terrain function: a chunk's voxels from a seed and its position.
//!
//! Owns: the noise (hashed value noise, smoothed, in octaves), the shape
//! (rolling surface around sea level 0, sand beaches, water below sea level,
//! caves, coal and iron ore) and the block names it uses. Pure and
//! deterministic: the same seed and chunk always give the same voxels.
//! Does not own: registering blocks or talking to voxelworld (the
//! `worldgen` module does). A crate of its own so benchmarks and tools can
//! generate the default terrain without linking a module library.

use buildat_voxel::geometry::{self, CHUNK_SIZE, CHUNK_VOLUME, Pos};

/// Local palette: index → block name.
pub const PALETTE: [&str; 8] = [
    "air", "stone", "dirt", "grass", "sand", "water", "coal_ore", "iron_ore",
];
pub const AIR: u32 = 0;
pub const STONE: u32 = 1;
pub const DIRT: u32 = 2;
pub const GRASS: u32 = 3;
pub const SAND: u32 = 4;
pub const WATER: u32 = 5;
pub const COAL: u32 = 6;
pub const IRON: u32 = 7;

fn hash(seed: u64, x: i32, y: i32, z: i32) -> u64 {
    let mut h = seed ^ 0x9e37_79b9_7f4a_7c15;
    for v in [x, y, z] {
        h ^= v as u32 as u64;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
    }
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 29)
}

fn unit(seed: u64, x: i32, y: i32, z: i32) -> f64 {
    (hash(seed, x, y, z) >> 11) as f64 / (1u64 << 53) as f64
}

fn smooth(t: f64) -> f64 {
    t * t * (3.0 - 2.0 * t)
}

fn lerp(a: f64, b: f64, t: f64) -> f64 {
    a + (b - a) * t
}

/// Value noise in 2D, in [0, 1).
fn noise2(seed: u64, x: f64, z: f64) -> f64 {
    let (x0, z0) = (x.floor(), z.floor());
    let (tx, tz) = (smooth(x - x0), smooth(z - z0));
    let (ix, iz) = (x0 as i32, z0 as i32);
    let a = lerp(unit(seed, ix, 0, iz), unit(seed, ix + 1, 0, iz), tx);
    let b = lerp(unit(seed, ix, 0, iz + 1), unit(seed, ix + 1, 0, iz + 1), tx);
    lerp(a, b, tz)
}

/// Value noise in 3D, in [0, 1).
fn noise3(seed: u64, x: f64, y: f64, z: f64) -> f64 {
    let (x0, y0, z0) = (x.floor(), y.floor(), z.floor());
    let (tx, ty, tz) = (smooth(x - x0), smooth(y - y0), smooth(z - z0));
    let (ix, iy, iz) = (x0 as i32, y0 as i32, z0 as i32);
    let corner = |dx, dy, dz| unit(seed, ix + dx, iy + dy, iz + dz);
    let x00 = lerp(corner(0, 0, 0), corner(1, 0, 0), tx);
    let x10 = lerp(corner(0, 1, 0), corner(1, 1, 0), tx);
    let x01 = lerp(corner(0, 0, 1), corner(1, 0, 1), tx);
    let x11 = lerp(corner(0, 1, 1), corner(1, 1, 1), tx);
    lerp(lerp(x00, x10, ty), lerp(x01, x11, ty), tz)
}

/// The surface height at a column.
pub fn surface_height(seed: u64, x: i32, z: i32) -> i32 {
    let (fx, fz) = (f64::from(x), f64::from(z));
    let broad = noise2(seed, fx / 128.0, fz / 128.0);
    let detail = noise2(seed ^ 1, fx / 32.0, fz / 32.0);
    (-12.0 + 40.0 * broad + 8.0 * detail).floor() as i32
}

/// The voxels of `chunk` as local palette indices (x fastest).
pub fn generate_chunk(seed: u64, chunk: Pos) -> Vec<u32> {
    let mut voxels = vec![AIR; CHUNK_VOLUME];
    let origin = geometry::chunk_origin(chunk);
    for lz in 0..CHUNK_SIZE {
        for lx in 0..CHUNK_SIZE {
            let (x, z) = (origin[0] + lx, origin[2] + lz);
            let height = surface_height(seed, x, z);
            for ly in 0..CHUNK_SIZE {
                let y = origin[1] + ly;
                let voxel = if y > height {
                    if y <= 0 { WATER } else { AIR }
                } else if y == height {
                    if height <= 1 { SAND } else { GRASS }
                } else if y > height - 4 {
                    if height <= 1 { SAND } else { DIRT }
                } else {
                    let cave = noise3(
                        seed ^ 2,
                        f64::from(x) / 20.0,
                        f64::from(y) / 14.0,
                        f64::from(z) / 20.0,
                    );
                    if cave > 0.72 && y < height - 6 {
                        AIR
                    } else {
                        let roll = hash(seed ^ 3, x, y, z) % 1000;
                        if roll < 6 {
                            COAL
                        } else if roll < 9 && y < -16 {
                            IRON
                        } else {
                            STONE
                        }
                    }
                };
                voxels[geometry::index_in_chunk([x, y, z])] = voxel;
            }
        }
    }
    voxels
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_per_seed_and_different_across_seeds() {
        assert_eq!(generate_chunk(7, [0, 0, 0]), generate_chunk(7, [0, 0, 0]));
        assert_ne!(generate_chunk(7, [0, 0, 0]), generate_chunk(8, [0, 0, 0]));
    }

    #[test]
    fn terrain_has_surface_stone_caves_and_ores() {
        let mut counts = [0usize; PALETTE.len()];
        let mut cave_air = 0;
        for cx in (-24..24).step_by(6) {
            for cz in (-24..24).step_by(6) {
                for cy in -2..1 {
                    let chunk = [cx, cy, cz];
                    let origin = geometry::chunk_origin(chunk);
                    for (index, voxel) in generate_chunk(1, chunk).into_iter().enumerate() {
                        counts[voxel as usize] += 1;
                        let size = CHUNK_SIZE as usize;
                        let (x, y, z) = (index % size, index / size % size, index / (size * size));
                        let world = [
                            origin[0] + x as i32,
                            origin[1] + y as i32,
                            origin[2] + z as i32,
                        ];
                        if voxel == AIR && world[1] < surface_height(1, world[0], world[2]) - 6 {
                            cave_air += 1;
                        }
                    }
                }
            }
        }
        for (index, name) in PALETTE.iter().enumerate() {
            assert!(counts[index] > 0, "no {name} at all: {counts:?}");
        }
        assert!(cave_air > 0, "no caves");
        assert!(counts[STONE as usize] > counts[COAL as usize] * 20);
    }
}
