//! `liquid flood X Z SOURCES`: water sources placed on the ground in a
//! grid, for a bench's flood (`scripts/bench-living flood`).
//!
//! Owns: the grid and the edits placing its sources. Does not own: the
//! ground (voxelworld's `get_ground`) or the flow that follows (the queue,
//! told by voxelworld's `voxels_changed`).

use buildat_voxel::AIR;
use buildat_voxelworld_api::{EditVoxel, Ground, MAX_VOXELS_PER_CALL, Replace};

/// Most sources one flood places (one `EditVoxels` call).
pub const MOST_SOURCES: u32 = MAX_VOXELS_PER_CALL as u32;

/// The columns (x, z) of a square grid of `sources` columns, `spacing`
/// apart, centred on `x`, `z`, row by row.
pub fn grid(x: i32, z: i32, sources: u32, spacing: u32) -> Vec<(i32, i32)> {
    let side = (1..).find(|s: &u32| s * s >= sources.max(1)).unwrap_or(1);
    let spacing = spacing.max(1) as i32;
    let half = (side as i32 - 1) * spacing / 2;
    (0..sources)
        .map(|i| {
            let (col, row) = ((i % side) as i32, (i / side) as i32);
            (x - half + col * spacing, z - half + row * spacing)
        })
        .collect()
}

/// A source of `water` on the ground of a column, placed only on air;
/// `None` where the column has no known ground or something not air on it.
pub fn source_on(column: (i32, i32), ground: Ground, water: u32) -> Option<EditVoxel> {
    match ground {
        Ground::Solid { y, above } if above == AIR => Some(EditVoxel {
            pos: [column.0, y + 1, column.1],
            voxel: water,
            replace: Replace::OnlyAir,
            save: true,
            by: buildat_voxelworld_api::by_module("liquid"),
        }),
        _ => None,
    }
}
