//! Lighting a region of whole chunks in one padded box, fast: the light
//! [`super::light_chunk`] and [`light_region`] give.
//!
//! Owns: how the rules of [`super`] are computed quickly. The region (a
//! block of `nx × ny × nz` chunks) and [`MARGIN`] voxels around it are
//! copied once into a box of one byte per voxel (source and absorption),
//! padded by one opaque voxel on every side so no step needs a bounds test
//! of its own; full sunlight is filled straight down each open column (a
//! heightmap), and only where it stands beside a darker column is it
//! spread sideways; block light spreads from the sources found while
//! copying (none: no block pass). A region of open sky (clear voxels of one
//! type under full sunlight, no source around) is answered without a box.
//! Everything spreads brightest first in
//! buckets of voxel indices. The buffers are kept per thread, so lighting
//! allocates only its answer. Pure: no panics on any input, no I/O.
//! Does not own: the rules themselves, which [`super::reference`] states as
//! plainly as they can be and this must match voxel for voxel (the tests
//! and `buildat-worldgen-terrain`'s light bench check it), or which chunks
//! are lit when (`voxelworld`).

use std::cell::RefCell;

use super::{FULL_SUN, LightTable, MARGIN, MAX_LIGHT, OPAQUE};
use crate::geometry::{CHUNK_SIZE, CHUNK_VOLUME};

const SIZE: usize = CHUNK_SIZE as usize;
/// A box byte's absorption bits (its source is the high nibble).
const ABSORPTION: u8 = 0x0f;

/// A region of chunks to light and the world around it.
#[derive(Debug, Clone, Default)]
pub struct Region<'a> {
    /// Chunks along x, y and z lit (each at least 1).
    pub size: [usize; 3],
    /// The region's chunks and one chunk around them, `(nx + 2) × (ny + 2)
    /// × (nz + 2)`, x fastest: index `gx + (nx + 2)·(gy + (ny + 2)·gz)` is
    /// the chunk at offset `(gx - 1, gy - 1, gz - 1)` from the region's
    /// first chunk; `None` where not loaded (beside or below: dark rock;
    /// above: open sky).
    pub chunks: Vec<Option<&'a [u32]>>,
    /// Per chunk of the row above the region's chunks and their
    /// surroundings (`(nx + 2) × (nz + 2)`, index `gx + (nx + 2)·gz`),
    /// whether full sunlight comes down into the top of each of its
    /// columns ([`super::sun_exits`]); `None`: all of them.
    pub sun_in: Vec<Option<&'a [bool]>>,
}

/// Most voxels a region's box may have (its buffers take three bytes a
/// voxel): 256 M, a region of about 19³ chunks.
pub const MAX_BOX_VOXELS: usize = 1 << 28;

/// The light of every chunk of `region`, in the order of its chunks (x
/// fastest, then y, then z), [`CHUNK_VOLUME`] bytes each; exactly what
/// [`super::reference::light_chunk`] gives each of them. A region whose
/// `chunks` or `sun_in` have another length than its size asks for, or
/// whose box would be over [`MAX_BOX_VOXELS`], lights nothing (an empty
/// answer).
pub fn light_region(region: &Region<'_>, table: &LightTable) -> Vec<Vec<u8>> {
    let [nx, ny, nz] = region.size;
    if nx == 0 || ny == 0 || nz == 0 {
        return Vec::new();
    }
    let grid = [nx, ny, nz].map(|n| n.saturating_add(2));
    let cells = grid[0]
        .checked_mul(grid[1])
        .and_then(|c| c.checked_mul(grid[2]));
    let columns = grid[0].checked_mul(grid[2]);
    if cells != Some(region.chunks.len()) || columns != Some(region.sun_in.len()) {
        return Vec::new();
    }
    let side = |n: usize| n.saturating_mul(SIZE).saturating_add(2 * MARGIN + 2);
    let volume = side(nx).saturating_mul(side(ny)).saturating_mul(side(nz));
    if volume > MAX_BOX_VOXELS {
        return Vec::new();
    }
    if is_open_sky(region, table) {
        return vec![vec![FULL_SUN; CHUNK_VOLUME]; nx * ny * nz];
    }
    let light = |region: &Region<'_>| {
        SCRATCH.with(|scratch| match scratch.try_borrow_mut() {
            Ok(mut scratch) => scratch.light(region, table),
            // Only if lighting called itself: light with fresh buffers.
            Err(_) => Scratch::default().light(region, table),
        })
    };
    if !missing_above_some(region) {
        return light(region);
    }
    // A chunk missing beside the region above its lowest row is open sky
    // to the chunks below it and rock to those beside it: no one box holds
    // both, so each chunk is lit in its own, with the sunlight coming into
    // each row of the grid followed down from the masks above it.
    let at = |g: [usize; 3]| g[0] + grid[0] * (g[1] + grid[1] * g[2]);
    let chunk = |g: [usize; 3]| region.chunks.get(at(g)).copied().flatten();
    // masks[gx + grid_x·(gz + grid_z·gy)]: sunlight into the chunk at row gy.
    let mut masks: Vec<Option<Vec<bool>>> = vec![None; grid[0] * grid[1] * grid[2]];
    for gz in 0..grid[2] {
        for gx in 0..grid[0] {
            let mut coming = region
                .sun_in
                .get(gx + grid[0] * gz)
                .copied()
                .flatten()
                .map(<[bool]>::to_vec);
            for gy in (1..=ny + 1).rev() {
                if gy <= ny {
                    coming = chunk([gx, gy + 1, gz])
                        .map(|above| super::sun_exits(above, table, coming.as_deref()));
                }
                if let Some(slot) = masks.get_mut(gx + grid[0] * (gz + grid[2] * gy)) {
                    slot.clone_from(&coming);
                }
            }
        }
    }
    let mut lit = Vec::with_capacity(nx * ny * nz);
    for cz in 1..=nz {
        for cy in 1..=ny {
            for cx in 1..=nx {
                let one = Region {
                    size: [1, 1, 1],
                    chunks: (0..27)
                        .map(|i| chunk([cx + i % 3 - 1, cy + i / 3 % 3 - 1, cz + i / 9 - 1]))
                        .collect(),
                    sun_in: (0..9)
                        .map(|i| {
                            let (gx, gz) = (cx + i % 3 - 1, cz + i / 3 - 1);
                            masks
                                .get(gx + grid[0] * (gz + grid[2] * (cy + 1)))
                                .and_then(|m| m.as_deref())
                        })
                        .collect(),
                };
                lit.extend(light(&one));
            }
        }
    }
    lit
}

/// Whether the region is open sky: each of its chunks and those above it
/// all one clear voxel type (no absorption, no light of its own) or, above,
/// not there (open sky); full sunlight coming into every column over it;
/// and no light source in any chunk around. Then every voxel of it holds
/// full sunlight and no block light, whatever else is around: sunlight comes
/// straight down through clear voxels undimmed, and nothing is brighter.
/// Checked before the box is built: the sky over a generated world is most
/// of its chunks, and costs a comparison a voxel here.
fn is_open_sky(region: &Region<'_>, table: &LightTable) -> bool {
    let [nx, ny, nz] = region.size;
    let grid = [nx + 2, ny + 2, nz + 2];
    let byte = |voxel: u32| table.packed_of(voxel);
    let uniform = |voxels: &[u32]| {
        let first = *voxels.first()?;
        voxels.iter().all(|&v| v == first).then_some(first)
    };
    for gz in 1..=nz {
        for gx in 1..=nx {
            for gy in 1..=ny + 1 {
                let at = gx + grid[0] * (gy + grid[1] * gz);
                match region.chunks.get(at).copied().flatten() {
                    Some(voxels)
                        if voxels.len() == CHUNK_VOLUME
                            && uniform(voxels).is_some_and(|v| byte(v) == 0) => {}
                    None if gy == ny + 1 => {}
                    _ => return false,
                }
            }
            let mask = region.sun_in.get(gx + grid[0] * gz).copied().flatten();
            if mask.is_some_and(|mask| mask.iter().any(|&open| !open)) {
                return false;
            }
        }
    }
    region
        .chunks
        .iter()
        .flatten()
        .all(|voxels| match uniform(voxels) {
            Some(voxel) => byte(voxel) >> 4 == 0,
            None => voxels.iter().all(|&voxel| byte(voxel) >> 4 == 0),
        })
}

/// Whether a chunk around the region is missing in a row beside the
/// region other than its lowest (grid rows 2..=ny): above some of the
/// region's chunks and beside others.
fn missing_above_some(region: &Region<'_>) -> bool {
    let [nx, ny, nz] = region.size;
    let grid = [nx + 2, ny + 2, nz + 2];
    (2..=ny).any(|gy| {
        (0..grid[2]).any(|gz| {
            (0..grid[0]).any(|gx| {
                region
                    .chunks
                    .get(gx + grid[0] * (gy + grid[1] * gz))
                    .copied()
                    .flatten()
                    .is_none_or(|v| v.len() != CHUNK_VOLUME)
            })
        })
    })
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::default();
}

/// The buffers one lighting uses, kept for the next on the same thread.
#[derive(Default)]
struct Scratch {
    /// Per box voxel: source << 4 | absorption.
    props: Vec<u8>,
    sun: Vec<u8>,
    block: Vec<u8>,
    /// Per box column (x + width·z): the lowest y of its full sunlight,
    /// `height` if none.
    sun_bottom: Vec<u32>,
    /// Runs of box voxels that hold a light source: (first index, length).
    source_runs: Vec<(usize, usize)>,
    /// Per box voxel: its distance in steps to the nearest voxel of the
    /// region (at most [`MAX_LIGHT`]); light no brighter than that cannot
    /// reach the region, and is not spread. Made again only when the box's
    /// size changes.
    distance: Vec<u8>,
    distance_dims: [usize; 3],
    buckets: Buckets,
}

/// Voxel indices by light level.
#[derive(Default)]
struct Buckets {
    levels: [Vec<u32>; MAX_LIGHT as usize + 1],
}

/// A box axis: the padded length, and for each padded coordinate the
/// chunk (grid index) and the coordinate in it (`None`: padding).
struct Axis {
    len: usize,
    at: Vec<Option<(usize, usize)>>,
}

impl Axis {
    fn new(chunks: usize) -> Self {
        let inner = chunks * SIZE + 2 * MARGIN;
        let mut at = Vec::with_capacity(inner + 2);
        at.push(None);
        for b in 0..inner {
            let r = b as i64 - MARGIN as i64;
            let chunk = (r.div_euclid(SIZE as i64) + 1) as usize;
            at.push(Some((chunk, r.rem_euclid(SIZE as i64) as usize)));
        }
        at.push(None);
        Self { len: inner + 2, at }
    }

    /// Runs of this axis' coordinates in one chunk: (first padded
    /// coordinate, chunk, first coordinate in it, length).
    fn runs(&self) -> Vec<(usize, usize, usize, usize)> {
        let mut runs: Vec<(usize, usize, usize, usize)> = Vec::new();
        for (b, at) in self.at.iter().enumerate() {
            let Some((chunk, local)) = *at else { continue };
            match runs.last_mut() {
                Some(run) if run.1 == chunk => run.3 += 1,
                _ => runs.push((b, chunk, local, 1)),
            }
        }
        runs
    }
}

impl Scratch {
    fn light(&mut self, region: &Region<'_>, table: &LightTable) -> Vec<Vec<u8>> {
        let [nx, ny, nz] = region.size;
        let axes = [Axis::new(nx), Axis::new(ny), Axis::new(nz)];
        let [w, h, d] = [axes[0].len, axes[1].len, axes[2].len];
        let (row, layer) = (w, w * h);
        let volume = w * h * d;
        let grid = [nx + 2, ny + 2, nz + 2];
        let chunk = |g: [usize; 3]| {
            region
                .chunks
                .get(g[0] + grid[0] * (g[1] + grid[1] * g[2]))
                .copied()
                .flatten()
                .filter(|v| v.len() == CHUNK_VOLUME)
        };
        let pack = |voxel: u32| table.packed_of(voxel);

        // The box: padding opaque, the rest copied run by run.
        let props = &mut self.props;
        props.clear();
        props.resize(volume, OPAQUE);
        let x_runs = axes[0].runs();
        let source_runs = &mut self.source_runs;
        source_runs.clear();
        for (bz, z_at) in axes[2].at.iter().enumerate() {
            let Some((gz, lz)) = *z_at else { continue };
            for (by, y_at) in axes[1].at.iter().enumerate() {
                let Some((gy, ly)) = *y_at else { continue };
                let line = row * by + layer * bz;
                for &(bx, gx, lx, len) in &x_runs {
                    let Some(out) = props.get_mut(line + bx..line + bx + len) else {
                        continue;
                    };
                    let Some(voxels) = chunk([gx, gy, gz]) else {
                        // Above: open sky. Beside or below: dark rock.
                        out.fill(if gy == ny + 1 { 0 } else { OPAQUE });
                        continue;
                    };
                    let start = lx + SIZE * (ly + SIZE * lz);
                    let Some(src) = voxels.get(start..start + len) else {
                        continue;
                    };
                    let first = src.first().copied().unwrap_or(0);
                    let any = if src.iter().all(|&v| v == first) {
                        let byte = pack(first);
                        out.fill(byte);
                        byte
                    } else {
                        let mut any = 0;
                        for (o, &v) in out.iter_mut().zip(src) {
                            *o = pack(v);
                            any |= *o;
                        }
                        any
                    };
                    if any >> 4 != 0 {
                        source_runs.push((line + bx, len));
                    }
                }
            }
        }

        // Sunlight: down each open column while it stays full, then
        // sideways from where a column's full sunlight stands above its
        // neighbour's.
        let sun = &mut self.sun;
        sun.clear();
        sun.resize(volume, 0);
        let buckets = &mut self.buckets;
        for level in &mut buckets.levels {
            level.clear();
        }
        let sun_bottom = &mut self.sun_bottom;
        sun_bottom.clear();
        sun_bottom.resize(w * d, h as u32);
        let top = h - 2;
        for (bz, z_at) in axes[2].at.iter().enumerate() {
            let Some((gz, lz)) = *z_at else { continue };
            for (bx, x_at) in axes[0].at.iter().enumerate() {
                let Some((gx, lx)) = *x_at else { continue };
                if !sky_open(region, grid, [gx, gz], [lx, lz], &chunk, &pack) {
                    continue;
                }
                let mut y = top;
                let mut bottom = h as u32;
                loop {
                    let index = bx + row * y + layer * bz;
                    let absorption = props.get(index).map_or(OPAQUE, |p| p & ABSORPTION);
                    if absorption == 0 {
                        if let Some(slot) = sun.get_mut(index) {
                            *slot = MAX_LIGHT;
                        }
                        bottom = y as u32;
                        y -= 1;
                        continue;
                    }
                    if absorption < OPAQUE
                        && let Some(slot) = sun.get_mut(index)
                    {
                        *slot = MAX_LIGHT - absorption;
                        buckets.push(*slot, index);
                    }
                    break;
                }
                if let Some(slot) = sun_bottom.get_mut(bx + w * bz) {
                    *slot = bottom;
                }
            }
        }
        for bz in 1..d - 1 {
            for bx in 1..w - 1 {
                let column = bx + w * bz;
                let bottom = sun_bottom.get(column).copied().unwrap_or(h as u32) as usize;
                let neighbours = [column - 1, column + 1, column - w, column + w];
                let reach = neighbours
                    .iter()
                    .map(|&c| sun_bottom.get(c).copied().unwrap_or(h as u32) as usize)
                    .max()
                    .unwrap_or(0)
                    .min(h - 1);
                for y in bottom..reach {
                    let index = bx + row * y + layer * bz;
                    let beside_darker = [index - 1, index + 1, index - layer, index + layer]
                        .iter()
                        .zip(&neighbours)
                        .any(|(&next, &c)| {
                            y < sun_bottom.get(c).copied().unwrap_or(0) as usize
                                && props.get(next).is_some_and(|p| p & ABSORPTION < OPAQUE)
                        });
                    if beside_darker {
                        buckets.push(MAX_LIGHT, index);
                    }
                }
            }
        }
        if self.distance_dims != [w, h, d] {
            self.distance = distances([w, h, d], region.size);
            self.distance_dims = [w, h, d];
        }
        let distance = &self.distance;
        spread(props, distance, sun, buckets, [1, row, layer]);

        // Block light, if any voxel gives some.
        let block = &mut self.block;
        block.clear();
        let has_block = !source_runs.is_empty();
        if has_block {
            block.resize(volume, 0);
            for &(start, len) in source_runs.iter() {
                for index in start..start + len {
                    let source = props.get(index).map_or(0, |p| p >> 4);
                    if source > 0
                        && let Some(slot) = block.get_mut(index)
                    {
                        *slot = source;
                        buckets.push(source, index);
                    }
                }
            }
            spread(props, distance, block, buckets, [1, row, layer]);
        }

        // Each chunk's bytes out of the box.
        let mut lit = Vec::with_capacity(nx * ny * nz);
        for cz in 0..nz {
            for cy in 0..ny {
                for cx in 0..nx {
                    let mut out = Vec::with_capacity(CHUNK_VOLUME);
                    for z in 0..SIZE {
                        for y in 0..SIZE {
                            let [bx, by, bz] =
                                [cx * SIZE, cy * SIZE + y, cz * SIZE + z].map(|c| c + FIRST);
                            let start = bx + row * by + layer * bz;
                            let suns = sun.get(start..start + SIZE).unwrap_or(&[]);
                            if has_block {
                                let blocks = block.get(start..start + SIZE).unwrap_or(&[]);
                                out.extend(suns.iter().zip(blocks).map(|(&s, &b)| s << 4 | b));
                            } else {
                                out.extend(suns.iter().map(|&s| s << 4));
                            }
                        }
                    }
                    out.resize(CHUNK_VOLUME, 0);
                    lit.push(out);
                }
            }
        }
        lit
    }
}

/// The padded box coordinate of a region's first voxel on each axis.
const FIRST: usize = MARGIN + 1;

/// Each padded box voxel's distance in steps to the region (the box's
/// inside less [`MARGIN`] each side), at most [`MAX_LIGHT`].
fn distances([w, h, d]: [usize; 3], [nx, ny, nz]: [usize; 3]) -> Vec<u8> {
    let along = |len: usize, chunks: usize| -> Vec<usize> {
        let last = FIRST + chunks * SIZE - 1;
        (0..len)
            .map(|c| FIRST.saturating_sub(c) + c.saturating_sub(last))
            .collect()
    };
    let (ax, ay, az) = (along(w, nx), along(h, ny), along(d, nz));
    let mut out = Vec::with_capacity(w * h * d);
    for &dz in &az {
        for &dy in &ay {
            out.extend(
                ax.iter()
                    .map(|&dx| (dx + dy + dz).min(usize::from(MAX_LIGHT)) as u8),
            );
        }
    }
    out
}

/// Whether full sunlight comes down into the box's top at column (gx, gz)
/// of the grid, (lx, lz) in that chunk: open sky when the chunk above the
/// box is not loaded, else if sunlight comes into that column of it and
/// everything of it above the box is clear.
fn sky_open<'a>(
    region: &Region<'a>,
    grid: [usize; 3],
    [gx, gz]: [usize; 2],
    [lx, lz]: [usize; 2],
    chunk: &impl Fn([usize; 3]) -> Option<&'a [u32]>,
    pack: &impl Fn(u32) -> u8,
) -> bool {
    let Some(voxels) = chunk([gx, grid[1] - 1, gz]) else {
        return true;
    };
    let sun_in = region
        .sun_in
        .get(gx + grid[0] * gz)
        .copied()
        .flatten()
        .is_none_or(|mask| mask.get(lx + SIZE * lz).copied().unwrap_or(false));
    // The box's top is this chunk's y MARGIN - 1; above it, the rest.
    sun_in
        && (MARGIN..SIZE).all(|ly| {
            voxels
                .get(lx + SIZE * (ly + SIZE * lz))
                .is_some_and(|&v| pack(v) & ABSORPTION == 0)
        })
}

impl Buckets {
    fn push(&mut self, level: u8, index: usize) {
        if let (Some(bucket), Ok(index)) = (
            self.levels.get_mut(usize::from(level)),
            u32::try_from(index),
        ) {
            bucket.push(index);
        }
    }
}

/// Spreads the queued light through the box until nothing brightens,
/// brightest first (a voxel is final when its level is reached). Every
/// step costs 1 and the absorption of the voxel entered: full sunlight
/// going straight down was filled in already, and a box voxel at 15 is
/// either that or a source. Light that cannot reach the region any more
/// (no brighter than its `distance`) is left out: only the region's light
/// is answered.
fn spread(
    props: &[u8],
    distance: &[u8],
    light: &mut [u8],
    buckets: &mut Buckets,
    [dx, dy, dz]: [usize; 3],
) {
    for level in (2..=MAX_LIGHT).rev() {
        let Some(bucket) = buckets.levels.get_mut(usize::from(level)) else {
            continue;
        };
        let mut queue = std::mem::take(bucket);
        while let Some(index) = queue.pop() {
            let index = index as usize;
            if light.get(index).copied() != Some(level) {
                continue; // brightened since it was queued
            }
            // Padding is opaque and never queued: no neighbour wraps.
            for next in [
                index.wrapping_sub(dx),
                index + dx,
                index.wrapping_sub(dy),
                index + dy,
                index.wrapping_sub(dz),
                index + dz,
            ] {
                let Some(absorption) = props.get(next).map(|p| p & ABSORPTION) else {
                    continue;
                };
                if absorption >= OPAQUE || level <= absorption + 1 {
                    continue;
                }
                let lit = level - 1 - absorption;
                if lit <= distance.get(next).copied().unwrap_or(MAX_LIGHT) {
                    continue;
                }
                if let Some(slot) = light.get_mut(next)
                    && lit > *slot
                {
                    *slot = lit;
                    if lit > 1 {
                        buckets.push(lit, next);
                    }
                }
            }
        }
        if let Some(bucket) = buckets.levels.get_mut(usize::from(level)) {
            *bucket = queue;
        }
    }
    for bucket in &mut buckets.levels[..2] {
        bucket.clear();
    }
}
