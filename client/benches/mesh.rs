//! Benchmark of chunk meshing on generated terrain (the default game's
//! `worldgen`, seed 1): the client's mesher (hidden faces culled, equal
//! coplanar faces merged greedily, per-vertex ambient occlusion) against
//! the naive baseline (one quad per visible face, the same culling and AO)
//! in the same run, over the same chunks: a 9 × 3 × 9 block of chunks
//! around the origin's surface, each meshed with its 26 neighbours as the
//! renderer does. Median of 5 rounds.
//!
//! Prints: chunks per second, triangles per (non-empty) chunk, and the
//! vertex bytes per chunk uploaded to the GPU.
//!
//! Run: `cargo bench -p buildat-client --bench mesh`. Plain
//! `std::time::Instant`, no harness.

use std::collections::HashMap;
use std::time::Instant;

use buildat_client::render::mesh::{
    ChunkMesh, ChunkVoxels, Kind, MeshTable, Neighbourhood, mesh_chunk, mesh_chunk_naive,
};
use buildat_voxel::geometry::Pos;
use buildat_worldgen_terrain::{self as terrain, PALETTE};

const SEED: u64 = 1;
const ROUNDS: usize = 5;

fn table() -> MeshTable {
    MeshTable::new(
        PALETTE
            .iter()
            .enumerate()
            .map(|(i, name)| {
                let kind = match *name {
                    "air" => Kind::Empty,
                    "water" => Kind::Liquid,
                    _ => Kind::Opaque,
                };
                (kind, [i as u32; 6])
            })
            .collect(),
    )
}

type Mesher = fn(&Neighbourhood, &MeshTable) -> ChunkMesh;

/// (seconds for all chunks, meshes) of one round.
fn round(
    mesher: Mesher,
    chunks: &[Pos],
    held: &HashMap<Pos, ChunkVoxels>,
    table: &MeshTable,
) -> (f64, Vec<ChunkMesh>) {
    let started = Instant::now();
    let meshes: Vec<ChunkMesh> = chunks
        .iter()
        .map(|&c| mesher(&Neighbourhood::gather(c, held), table))
        .collect();
    (started.elapsed().as_secs_f64(), meshes)
}

fn main() {
    let table = table();
    let mut held = HashMap::new();
    let mut chunks = Vec::new();
    let surface_chunk = terrain::surface_height(SEED, 0, 0).div_euclid(32);
    for x in -5..=5 {
        for y in surface_chunk - 2..=surface_chunk + 2 {
            for z in -5..=5 {
                let voxels: ChunkVoxels = terrain::generate_chunk(SEED, [x, y, z]).into();
                held.insert([x, y, z], voxels);
                if x.abs() <= 4 && z.abs() <= 4 && (y - surface_chunk).abs() <= 1 {
                    chunks.push([x, y, z]);
                }
            }
        }
    }
    println!(
        "meshing {} chunks of generated terrain (seed {SEED}), median of {ROUNDS} rounds",
        chunks.len()
    );
    println!(
        "{:<28} {:>10} {:>16} {:>18}",
        "mesher", "chunks/s", "triangles/chunk", "vertex KiB/chunk"
    );
    let mut rates = Vec::new();
    for (name, mesher) in [
        ("greedy (client)", mesh_chunk as Mesher),
        ("naive one quad per face", mesh_chunk_naive as Mesher),
    ] {
        let mut times = Vec::new();
        let mut meshes = Vec::new();
        for _ in 0..ROUNDS {
            let (seconds, m) = round(mesher, &chunks, &held, &table);
            times.push(seconds);
            meshes = m;
        }
        times.sort_by(f64::total_cmp);
        let median = times[ROUNDS / 2];
        let drawn: Vec<&ChunkMesh> = meshes.iter().filter(|m| !m.is_empty()).collect();
        let count = drawn.len().max(1);
        let triangles = drawn.iter().map(|m| m.triangles()).sum::<usize>() / count;
        let vertex_kib =
            drawn.iter().map(|m| m.vertex_bytes()).sum::<usize>() as f64 / count as f64 / 1024.0;
        let rate = chunks.len() as f64 / median;
        rates.push((rate, triangles));
        println!("{name:<28} {rate:>10.0} {triangles:>16} {vertex_kib:>18.1}");
    }
    if let [(greedy_rate, greedy_tris), (naive_rate, naive_tris)] = rates[..] {
        println!(
            "greedy vs naive: {:.2}x the time, {:.2}x fewer triangles",
            naive_rate / greedy_rate,
            naive_tris as f64 / greedy_tris.max(1) as f64
        );
    }
}
