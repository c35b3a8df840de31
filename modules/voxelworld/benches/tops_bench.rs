//! Map benchmark: the `column_tops` calls behind the web module's
//! level-0 map tiles (one per tile of 128 × 128 columns) over a 1,024 ×
//! 1,024 voxel area of stored default terrain, against the raw floor run in
//! the same process: reading the same sections from SQLite and decoding
//! every chunk of them (what a map that decoded everything would do). Also
//! the same tiles from sections in memory. (The web module's shading and
//! PNG come on top: its `buildat_web_tile_render_seconds_total` against
//! `buildat_web_column_tops_seconds_total`.) Prints a table; asserts
//! nothing but that the columns show terrain and nothing was loaded.
//!
//! Run: `cargo bench -p buildat-module-voxelworld --bench tops_bench`

mod support;
use support::open_world;

use std::time::Instant;

use buildat_format::{decode_voxels, encode_voxels};
use buildat_module_voxelworld::storage::{SqliteStorage, WorldStorage};
use buildat_module_voxelworld::world::World;
use buildat_voxel::geometry::{Pos, SectionSize};
use buildat_voxelworld_api::{ColumnTops, StoredNode, StoredNodeKind, VAR_VOXEL_DATA};
use buildat_worldgen_terrain as terrain;

const SEED: u64 = 1;
/// Sections from -R to R-1 along x and z: 16 × 64 = 1,024 voxels.
const R: i32 = 8;
/// Columns along a tile's side.
const TILE: i32 = 128;

fn sections() -> Vec<Pos> {
    let mut list = Vec::new();
    for y in -1..=1 {
        for z in -R..R {
            for x in -R..R {
                list.push([x, y, z]);
            }
        }
    }
    list
}

/// The column tops of every level-0 tile of the area; answers (tiles,
/// columns with a top).
fn draw_all(world: &mut World) -> (usize, usize) {
    let (mut tiles, mut opaque) = (0, 0);
    let blocks = R * 64 / TILE;
    for bz in -blocks..blocks {
        for bx in -blocks..blocks {
            let tops = world
                .column_tops(&ColumnTops {
                    x: bx * TILE,
                    z: bz * TILE,
                    width: TILE as u32,
                    depth: TILE as u32,
                    step: 1,
                    y_top: 127,
                    y_bottom: -64,
                })
                .expect("tops");
            opaque += tops.heights.iter().filter(|h| **h != i32::MIN).count();
            tiles += 1;
        }
    }
    (tiles, opaque)
}

fn main() {
    let dir = tempfile::tempdir().expect("temp");
    let path = dir.path().join("world.sqlite");
    let positions = sections();
    {
        let mut world = open_world(&path);
        for pos in &positions {
            world.load_section(*pos).expect("load");
            let chunks = SectionSize::default()
                .chunks_of_section(*pos)
                .into_iter()
                .map(|chunk| {
                    let voxels = terrain::generate_chunk(SEED, chunk);
                    let blob =
                        encode_voxels(&voxels, |id| terrain::PALETTE.get(id as usize).copied())
                            .expect("encode");
                    (chunk, blob)
                })
                .collect();
            world.apply_generated(*pos, chunks).expect("apply");
            world.set_section_save_enabled(*pos, true).expect("enable");
        }
        world.save_all().expect("save");
    }
    let mut world = open_world(&path);

    // Raw floor: every stored section read and every chunk decoded.
    let mut storage = SqliteStorage::open(&path, SectionSize::default()).expect("open");
    let started = Instant::now();
    let mut decoded = 0usize;
    for pos in &positions {
        let section = storage.load_section(*pos).expect("read").expect("stored");
        for (_, data) in section.nodes {
            let node: StoredNode = buildat_interface::decode(&data).expect("node");
            if let StoredNodeKind::StaticChunk { .. } = node.kind {
                let blob = node.vars.get(VAR_VOXEL_DATA).expect("blob");
                let voxels =
                    decode_voxels(blob, |name| world.voxels.get_id(name), 1).expect("decode");
                decoded += voxels.voxels.len() / (32 * 32 * 32);
            }
        }
    }
    let raw = started.elapsed().as_secs_f64();

    let started = Instant::now();
    let (tiles, opaque) = draw_all(&mut world);
    let stored = started.elapsed().as_secs_f64();
    assert!(
        opaque > tiles * 128 * 128 * 9 / 10,
        "the tiles show terrain"
    );
    assert_eq!(world.loaded_sections(), 0, "drawing loads nothing");

    for pos in &positions {
        world.load_section(*pos).expect("load");
    }
    let started = Instant::now();
    draw_all(&mut world);
    let loaded = started.elapsed().as_secs_f64();

    let side = R * 2 * 64;
    println!(
        "map of {side} x {side} voxels: {tiles} tiles of 128 x 128 columns, {} sections, {decoded} chunks",
        positions.len()
    );
    println!(
        "case                                  total s   per tile ms   tiles/s   chunks decoded/s"
    );
    println!(
        "raw: read + decode every chunk        {raw:7.3}   {:11.2}   {:7.1}   {:16.0}",
        raw * 1000.0 / tiles as f64,
        tiles as f64 / raw,
        decoded as f64 / raw
    );
    println!(
        "tops of tiles from stored sections    {stored:7.3}   {:11.2}   {:7.1}",
        stored * 1000.0 / tiles as f64,
        tiles as f64 / stored
    );
    println!(
        "tops of tiles from sections in memory {loaded:7.3}   {:11.2}   {:7.1}",
        loaded * 1000.0 / tiles as f64,
        tiles as f64 / loaded
    );
}
