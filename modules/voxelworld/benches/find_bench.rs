//! `find_voxels` benchmark: the scan the `active` module's ABMs run, over
//! 256 chunks (`MAX_FIND_CHUNKS`, 32 sections) of generated terrain in
//! memory, against a raw scan of the same voxels in the same run: plain
//! `u32` arrays, the same type table, face neighbours and seeded chance
//! (`keeps`), no world around them. Cases: grass (every one), dirt beside
//! grass, grass with chance 1/20. Best of five passes each; prints a
//! table, asserts only that both found the same.
//!
//! Run: `cargo bench -p buildat-module-voxelworld --bench find_bench`

mod support;
use support::open_world;

use std::collections::HashMap;
use std::time::Instant;

use buildat_format::encode_voxels;
use buildat_module_voxelworld::world::keeps;
use buildat_voxel::geometry::{self, CHUNK_SIZE, FACES, Pos, SectionSize};
use buildat_voxelworld_api::FindVoxels;
use buildat_worldgen_terrain as terrain;

const SEED: u64 = 1;
const PASSES: usize = 5;

/// The raw scan: what `find_voxels` answers, over plain arrays.
fn raw_find(chunks: &HashMap<Pos, Vec<u32>>, order: &[Pos], find: &FindVoxels) -> usize {
    let table = |types: &[u32]| {
        let mut t = vec![false; 64];
        for &id in types {
            t[id as usize] = true;
        }
        t
    };
    let types = table(&find.types);
    let neighbours = table(&find.neighbours);
    let size = CHUNK_SIZE as usize;
    let at = |pos: Pos| -> Option<u32> {
        let voxels = chunks.get(&geometry::chunk_of_voxel(pos))?;
        voxels.get(geometry::index_in_chunk(pos)).copied()
    };
    let mut found = 0;
    for chunk in order {
        let voxels = &chunks[chunk];
        let origin = geometry::chunk_origin(*chunk);
        for (index, &voxel) in voxels.iter().enumerate() {
            if !types[(voxel & 0x1f_ffff) as usize] {
                continue;
            }
            let pos = [
                origin[0] + (index % size) as i32,
                origin[1] + ((index / size) % size) as i32,
                origin[2] + (index / (size * size)) as i32,
            ];
            if !keeps(find.seed, pos, find.chance) {
                continue;
            }
            if !find.neighbours.is_empty()
                && !FACES.iter().any(|f| {
                    at([pos[0] + f[0], pos[1] + f[1], pos[2] + f[2]])
                        .is_some_and(|v| neighbours[(v & 0x1f_ffff) as usize])
                })
            {
                continue;
            }
            found += 1;
        }
    }
    found
}

fn best(mut run: impl FnMut() -> usize) -> (f64, usize) {
    let mut best = f64::MAX;
    let mut found = 0;
    for _ in 0..PASSES {
        let started = Instant::now();
        found = run();
        best = best.min(started.elapsed().as_secs_f64());
    }
    (best, found)
}

fn main() {
    let dir = tempfile::tempdir().expect("temp");
    let mut world = open_world(&dir.path().join("find.sqlite"));
    let mut sections = Vec::new();
    for x in -2..2 {
        for z in -2..2 {
            for y in -1..1 {
                sections.push([x, y, z]);
            }
        }
    }
    let mut order = Vec::new();
    for pos in &sections {
        world.load_section(*pos).expect("load");
        let chunks = SectionSize::default()
            .chunks_of_section(*pos)
            .into_iter()
            .map(|chunk| {
                order.push(chunk);
                let voxels = terrain::generate_chunk(SEED, chunk);
                let blob = encode_voxels(&voxels, |id| terrain::PALETTE.get(id as usize).copied())
                    .expect("encode");
                (chunk, blob)
            })
            .collect();
        world.apply_generated(*pos, chunks).expect("apply");
    }
    let raw: HashMap<Pos, Vec<u32>> = order
        .iter()
        .map(|c| (*c, world.get_chunk_voxels(*c).expect("read").expect("held")))
        .collect();
    let id = |name: &str| world.voxels.get_id(name).expect(name);
    let (grass, dirt) = (id("grass"), id("dirt"));
    let find = |types: Vec<u32>, neighbours: Vec<u32>, chance: u32| FindVoxels {
        chunks: order.clone(),
        types,
        neighbours,
        chance,
        seed: 7,
        limit: u32::MAX,
    };
    let cases = [
        ("grass", find(vec![grass], vec![], 1)),
        ("dirt beside grass", find(vec![dirt], vec![grass], 1)),
        ("grass, chance 1/20", find(vec![grass], vec![], 20)),
    ];
    println!(
        "find_voxels over {} chunks of terrain ({} voxels), best of {PASSES}",
        order.len(),
        order.len() * geometry::CHUNK_VOLUME
    );
    println!(
        "{:<22} {:>8} {:>14} {:>12} {:>8} {:>14}",
        "case", "found", "find_voxels ms", "raw scan ms", "ratio", "us per chunk"
    );
    for (name, request) in &cases {
        let (ours, found) = best(|| world.find_voxels(request).expect("find").found.len());
        let (floor, raw_found) = best(|| raw_find(&raw, &order, request));
        assert_eq!(found, raw_found, "{name}: the same voxels");
        println!(
            "{:<22} {:>8} {:>14.2} {:>12.2} {:>8.2} {:>14.1}",
            name,
            found,
            ours * 1e3,
            floor * 1e3,
            ours / floor,
            ours * 1e6 / order.len() as f64
        );
    }
}
