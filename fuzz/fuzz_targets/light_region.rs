//! Fuzz target: lighting a region of chunks fast (`light_region`) never
//! panics and gives every chunk exactly what the plain reference
//! (`light::reference::light_chunk`) gives it, whatever the voxels, the
//! chunks missing around it and the sunlight coming down.
#![no_main]

use buildat_voxel::VoxelLight;
use buildat_voxel::geometry::CHUNK_VOLUME;
use buildat_voxel::light::{
    LightTable, Region, Surroundings, light_region, reference, sun_exits,
};
use libfuzzer_sys::fuzz_target;

/// Air, stone, water, leaves, ice, a torch, glowstone.
fn table() -> LightTable {
    let light = |source, absorption| VoxelLight { source, absorption };
    LightTable::from_props(vec![
        light(0, 0),
        light(0, 15),
        light(0, 1),
        light(0, 1),
        light(0, 2),
        light(14, 0),
        light(15, 15),
    ])
}

fuzz_target!(|data: &[u8]| {
    let Some((&head, body)) = data.split_first() else {
        return;
    };
    if body.is_empty() {
        return;
    }
    let size = [1 + (head & 1) as usize, 1 + (head >> 1 & 1) as usize, 1];
    let grid = [size[0] + 2, size[1] + 2, size[2] + 2];
    let count = grid[0] * grid[1] * grid[2];
    // Each chunk's voxels: runs read off the input (type, length), a
    // chunk missing when its first byte says so (never one of the region).
    let mut at = 0usize;
    let mut next = || {
        let byte = body[at % body.len()];
        at += 1;
        byte
    };
    let mut chunks: Vec<Option<Vec<u32>>> = Vec::with_capacity(count);
    for i in 0..count {
        let g = [i % grid[0], i / grid[0] % grid[1], i / (grid[0] * grid[1])];
        let inside = (0..3).all(|a| (1..=size[a]).contains(&g[a]));
        if !inside && next() % 6 == 0 {
            chunks.push(None);
            continue;
        }
        let mut voxels = Vec::with_capacity(CHUNK_VOLUME);
        while voxels.len() < CHUNK_VOLUME {
            let byte = next();
            let kind = u32::from(byte % 7);
            let run = 1 + usize::from(next()) * 16;
            voxels.extend(std::iter::repeat_n(kind, run.min(CHUNK_VOLUME - voxels.len())));
        }
        chunks.push(Some(voxels));
    }
    let columns = 32 * 32;
    let masks: Vec<Option<Vec<bool>>> = (0..grid[0] * grid[2])
        .map(|_| {
            let open = next();
            (open % 3 != 0).then(|| (0..columns).map(|c| (c as u8 ^ open) % 5 != 0).collect())
        })
        .collect();
    let table = table();
    let region = Region {
        size,
        chunks: chunks.iter().map(|c| c.as_deref()).collect(),
        sun_in: masks.iter().map(|m| m.as_deref()).collect(),
    };
    let lit = light_region(&region, &table);
    assert_eq!(lit.len(), size[0] * size[1] * size[2]);
    for (n, got) in lit.iter().enumerate() {
        let c = [n % size[0] + 1, n / size[0] % size[1] + 1, 1];
        // Sunlight into each chunk of the row above this one: the masks
        // above the grid followed down through the rows between.
        let below: Vec<Option<Vec<bool>>> = (0..9)
            .map(|i| {
                let (gx, gz) = (c[0] + i % 3 - 1, c[2] + i / 3 - 1);
                let mut coming = masks[gx + grid[0] * gz].clone();
                for row in (c[1] + 1..=size[1]).rev() {
                    coming = chunks[gx + grid[0] * (row + 1 + grid[1] * gz)]
                        .as_deref()
                        .map(|above| sun_exits(above, &table, coming.as_deref()));
                }
                coming
            })
            .collect();
        let around = Surroundings {
            chunks: std::array::from_fn(|i| {
                let g = [c[0] + i % 3 - 1, c[1] + i / 3 % 3 - 1, c[2] + i / 9 - 1];
                chunks[g[0] + grid[0] * (g[1] + grid[1] * g[2])].as_deref()
            }),
            sun_in: std::array::from_fn(|i| below[i].as_deref()),
        };
        assert!(*got == reference::light_chunk(&around, &table), "chunk {c:?}");
    }
});
