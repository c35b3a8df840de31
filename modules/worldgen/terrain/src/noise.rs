//! Deterministic noise: a position hash, value noise in 2D and 3D, and
//! fractal sums of it.
//!
//! Owns: turning a seed and a position into numbers in [0, 1). Pure and
//! platform-independent (integer hashing, f64 arithmetic). Does not own:
//! what the numbers mean (`column.rs`, `lib.rs`, `structures.rs`).

/// A 64-bit hash of a seed and a lattice point.
pub fn hash(seed: u64, x: i32, y: i32, z: i32) -> u64 {
    let mut h = seed ^ 0x9e37_79b9_7f4a_7c15;
    for v in [x, y, z] {
        h ^= v as u32 as u64;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
    }
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 29)
}

/// The hash as a number in [0, 1).
pub fn unit(seed: u64, x: i32, y: i32, z: i32) -> f64 {
    (hash(seed, x, y, z) >> 11) as f64 / (1u64 << 53) as f64
}

/// `x.floor()` for the noise's coordinates (well within ±2^63), without a
/// call into libm: the baseline x86-64 target has no rounding instruction,
/// so `f64::floor` is a function call on every lattice lookup.
fn floor(x: f64) -> f64 {
    let truncated = x as i64 as f64;
    if truncated > x {
        truncated - 1.0
    } else {
        truncated
    }
}

fn smooth(t: f64) -> f64 {
    t * t * (3.0 - 2.0 * t)
}

fn lerp(a: f64, b: f64, t: f64) -> f64 {
    a + (b - a) * t
}

/// Value noise in 2D, in [0, 1).
pub fn noise2(seed: u64, x: f64, z: f64) -> f64 {
    let (x0, z0) = (floor(x), floor(z));
    let (tx, tz) = (smooth(x - x0), smooth(z - z0));
    let (ix, iz) = (x0 as i32, z0 as i32);
    let a = lerp(unit(seed, ix, 0, iz), unit(seed, ix + 1, 0, iz), tx);
    let b = lerp(unit(seed, ix, 0, iz + 1), unit(seed, ix + 1, 0, iz + 1), tx);
    lerp(a, b, tz)
}

/// Value noise in 3D, in [0, 1).
pub fn noise3(seed: u64, x: f64, y: f64, z: f64) -> f64 {
    let (x0, y0, z0) = (floor(x), floor(y), floor(z));
    let (tx, ty, tz) = (smooth(x - x0), smooth(y - y0), smooth(z - z0));
    let (ix, iy, iz) = (x0 as i32, y0 as i32, z0 as i32);
    let corner = |dx, dy, dz| unit(seed, ix + dx, iy + dy, iz + dz);
    let x00 = lerp(corner(0, 0, 0), corner(1, 0, 0), tx);
    let x10 = lerp(corner(0, 1, 0), corner(1, 1, 0), tx);
    let x01 = lerp(corner(0, 0, 1), corner(1, 0, 1), tx);
    let x11 = lerp(corner(0, 1, 1), corner(1, 1, 1), tx);
    lerp(lerp(x00, x10, ty), lerp(x01, x11, ty), tz)
}

/// Fractal value noise in 2D: `octaves` layers, each at twice the
/// frequency and half the weight of the one before, normalised to [0, 1).
/// `scale` is the size in voxels of the first layer's features.
pub fn fractal2(seed: u64, x: i32, z: i32, scale: f64, octaves: u32) -> f64 {
    let (mut sum, mut weight, mut total, mut frequency) = (0.0, 1.0, 0.0, 1.0 / scale);
    for octave in 0..octaves {
        let layer_seed = seed.wrapping_add(u64::from(octave).wrapping_mul(0x2545_f491_4f6c_dd1d));
        sum += weight
            * noise2(
                layer_seed,
                f64::from(x) * frequency,
                f64::from(z) * frequency,
            );
        total += weight;
        weight *= 0.5;
        frequency *= 2.0;
    }
    sum / total
}

/// Maps `value` from [`low`, `high`] to [0, 1], smoothly, clamped outside.
pub fn smoothstep(low: f64, high: f64, value: f64) -> f64 {
    smooth(((value - low) / (high - low)).clamp(0.0, 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floor_is_f64_floor() {
        for x in [
            -2.5,
            -2.0,
            -1e-300,
            -0.0,
            0.0,
            0.3,
            1.0,
            1.999,
            7e15,
            -7e15,
            -1e9 - 0.5,
        ] {
            assert_eq!(floor(x), x.floor(), "{x}");
        }
    }

    #[test]
    fn noise_stays_in_unit_range_and_is_continuous() {
        let mut previous = fractal2(5, 0, 0, 64.0, 4);
        for x in 1..2000 {
            let value = fractal2(5, x, x / 3, 64.0, 4);
            assert!((0.0..1.0).contains(&value), "{value}");
            assert!((value - previous).abs() < 0.1, "jump at {x}");
            previous = value;
        }
        for i in 0..1000 {
            let v = noise3(9, f64::from(i) * 0.37, f64::from(i) * -0.11, 3.5);
            assert!((0.0..1.0).contains(&v));
        }
    }
}
