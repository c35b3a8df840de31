//! The rules of [`super`] computed as plainly as they can be: a box lit
//! whole, brightest first, and a chunk lit as the box of it and
//! [`MARGIN`] voxels around. Slow (a chunk visits about 240,000 voxels and
//! takes milliseconds) and kept for that: [`super::light_region`] must give
//! what this gives, voxel for voxel, and the light bench measures both.
//!
//! Owns: [`light_box`] and [`light_chunk`] as they were before lighting
//! was made fast. Does not own: anything a server runs.

use super::{
    CLEAR_VOXEL, LightError, LightTable, MARGIN, MAX_LIGHT, OPAQUE, OPAQUE_VOXEL, Surroundings,
    pack,
};
use crate::VoxelLight;
use crate::geometry::{CHUNK_SIZE, CHUNK_VOLUME};

const SIZE: usize = CHUNK_SIZE as usize;
/// A lit chunk's box side: the chunk and [`MARGIN`] voxels each side.
const BOX: usize = SIZE + 2 * MARGIN;

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
