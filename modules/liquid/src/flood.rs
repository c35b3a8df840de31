//! `liquid flood X Z SOURCES`: water sources placed on the ground in a
//! grid, for a bench's flood (`scripts/bench-living flood`).
//!
//! Owns: the grid and the edits placing its sources. Does not own: the
//! flow that follows (the queue, told by voxelworld's `voxels_changed`).

use buildat_voxel::AIR;
use buildat_voxel::geometry::Pos;
use buildat_voxelworld_api::{ColumnTops, EditVoxel, MAX_VOXELS_PER_CALL, Replace, Tops};

/// Most sources one flood places (one `EditVoxels` call).
pub const MOST_SOURCES: u32 = MAX_VOXELS_PER_CALL as u32;
/// The columns' range searched for the ground.
const Y_TOP: i32 = 255;
const Y_BOTTOM: i32 = -256;

/// The square grid of `sources` columns, `spacing` apart, centred on `x`,
/// `z`: the `ColumnTops` call asking for their ground.
pub fn grid(x: i32, z: i32, sources: u32, spacing: u32) -> ColumnTops {
    let side = (1..).find(|s: &u32| s * s >= sources.max(1)).unwrap_or(1);
    let spacing = spacing.max(1);
    let half = ((side - 1) * spacing / 2) as i32;
    ColumnTops {
        x: x - half,
        z: z - half,
        width: side,
        depth: side,
        step: spacing,
        y_top: Y_TOP,
        y_bottom: Y_BOTTOM,
    }
}

/// A source of `water` on each known column of `tops` (the first
/// `sources`, row by row), on its top voxel, placed only on air.
pub fn sources_on(grid: &ColumnTops, tops: &Tops, sources: u32, water: u32) -> Vec<EditVoxel> {
    let width = grid.width.max(1) as usize;
    let step = grid.step as i32;
    tops.heights
        .iter()
        .zip(&tops.voxels)
        .enumerate()
        .take(sources as usize)
        .filter(|(_, (height, voxel))| **height != i32::MIN && **voxel != AIR)
        .map(|(i, (height, _))| {
            let pos: Pos = [
                grid.x + (i % width) as i32 * step,
                height + 1,
                grid.z + (i / width) as i32 * step,
            ];
            EditVoxel {
                pos,
                voxel: water,
                replace: Replace::OnlyAir,
                save: true,
                by: None,
            }
        })
        .collect()
}
