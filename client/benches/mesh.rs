//! Benchmark of chunk meshing on generated terrain (the default game's
//! `worldgen`, seed 1), over the same chunks in one run: a 9 × 3 × 9 block
//! of chunks around the origin's surface, each meshed from its 26
//! neighbours as the renderer does.
//!
//! - the client's mesher (`mesh_chunk`: binary greedy meshing, hidden
//!   faces culled by kind, per-vertex ambient occlusion and smooth light,
//!   water's top lowered, solid, cutout and blended lists, 8-byte vertices);
//! - its naive baseline (`mesh_chunk_naive`: the same faces, one quad each);
//! - the `binary-greedy-meshing` crate (`Mesher::fast_mesh`, the same
//!   culling of opaque and transparent voxels, greedy merging by voxel type;
//!   no AO, no light, no vertices: packed quads), timed from the same
//!   neighbourhood, its padded copy and masks included as the client's are.
//!
//! Prints per mesher: chunks per second (median and best of the rounds),
//! microseconds per chunk, triangles per non-empty chunk and bytes per
//! non-empty chunk uploaded (the client: vertices; the crate: its 8-byte
//! packed quads), then the ratios.
//!
//! Run: `cargo bench -p buildat-client --bench mesh`. Plain
//! `std::time::Instant`, no harness.

use std::collections::{BTreeSet, HashMap};
use std::hint::black_box;
use std::time::Instant;

use binary_greedy_meshing as bgm;
use buildat_client::render::mesh::{
    ChunkMesh, ChunkVoxels, Kind, MeshTable, Neighbourhood, mesh_chunk, mesh_chunk_naive,
};
use buildat_voxel::geometry::Pos;
use buildat_worldgen_terrain::{self as terrain, PALETTE};

const SEED: u64 = 1;
const ROUNDS: usize = 7;
const CS: usize = 32;
const CS_P: usize = CS + 2;

/// Each terrain block's kind as the atlas gives it with the default game's
/// textures (`render::atlas` tests that): water a liquid, leaves cutout,
/// ice blended, the rest opaque. A layer per block.
fn kind(name: &str) -> Kind {
    match name {
        "air" => Kind::Empty,
        "water" => Kind::Liquid,
        "leaves" | "pine_leaves" => Kind::Cutout,
        "ice" => Kind::Blended,
        _ => Kind::Opaque,
    }
}

fn table() -> MeshTable {
    MeshTable::new(
        PALETTE
            .iter()
            .enumerate()
            .map(|(i, name)| (kind(name), [i as u32; 6]))
            .collect(),
    )
}

/// What one mesher made of one chunk: quads and bytes uploaded.
#[derive(Clone, Copy, Default)]
struct Made {
    quads: usize,
    bytes: usize,
}

/// The crate's mesher with its buffers, reused between chunks as the
/// client reuses its own.
struct Crate {
    mesher: bgm::Mesher<CS>,
    voxels: Vec<u16>,
    opaque: Vec<u64>,
    transparent: Vec<u64>,
    /// Per palette id: 0 empty, 1 opaque, 2 transparent.
    classes: Vec<u8>,
    /// Seconds spent in `fast_mesh` alone this round.
    meshing: f64,
}

impl Crate {
    fn new() -> Self {
        let transparent: BTreeSet<usize> = PALETTE
            .iter()
            .enumerate()
            .filter(|(_, name)| !matches!(kind(name), Kind::Empty | Kind::Opaque))
            .map(|(i, _)| i)
            .collect();
        Self {
            mesher: bgm::Mesher::new(),
            voxels: vec![0; CS_P * CS_P * CS_P],
            opaque: vec![0; CS_P * CS_P],
            transparent: vec![0; CS_P * CS_P],
            classes: (0..PALETTE.len())
                .map(|i| match i {
                    0 => 0,
                    _ if transparent.contains(&i) => 2,
                    _ => 1,
                })
                .collect(),
            meshing: 0.0,
        }
    }

    /// The crate's padded copy (z fastest, then x, then y) and its column
    /// masks, from the neighbourhood; then its mesh.
    fn mesh(&mut self, neighbourhood: &Neighbourhood) -> Made {
        self.opaque.fill(0);
        self.transparent.fill(0);
        let step = |p: usize| (usize::from(p > 0) + usize::from(p > CS), (p + CS - 1) % CS);
        for py in 0..CS_P {
            let (cy, ly) = step(py);
            for px in 0..CS_P {
                let (cx, lx) = step(px);
                let column = py * CS_P + px;
                let (mut opaque, mut transparent) = (0u64, 0u64);
                for pz in 0..CS_P {
                    let (cz, lz) = step(pz);
                    let value = match &neighbourhood.neighbours[cx + 3 * cy + 9 * cz] {
                        // Not held: opaque, as the client counts it.
                        None => 1,
                        Some(chunk) => chunk[lx + CS * (ly + CS * lz)],
                    };
                    let id = value as u16;
                    self.voxels[column * CS_P + pz] = id;
                    match self.classes.get(usize::from(id)).copied().unwrap_or(1) {
                        1 => opaque |= 1 << pz,
                        2 => transparent |= 1 << pz,
                        _ => {}
                    }
                }
                self.opaque[column] = opaque;
                self.transparent[column] = transparent;
            }
        }
        let started = Instant::now();
        self.mesher.clear();
        self.mesher
            .fast_mesh(&self.voxels, &self.opaque, &self.transparent);
        self.meshing += started.elapsed().as_secs_f64();
        let quads = self.mesher.quads.iter().map(Vec::len).sum();
        Made {
            quads,
            bytes: quads * std::mem::size_of::<bgm::Quad>(),
        }
    }
}

fn client(mesh: &ChunkMesh) -> Made {
    Made {
        quads: mesh.quads(),
        bytes: mesh.vertex_bytes(),
    }
}

/// (seconds for all chunks, what was made of each) of one round.
fn round(
    chunks: &[Pos],
    mut mesh: impl FnMut(&Neighbourhood) -> Made,
    held: &HashMap<Pos, ChunkVoxels>,
) -> (f64, Vec<Made>) {
    let started = Instant::now();
    let made: Vec<Made> = chunks
        .iter()
        .map(|&c| black_box(mesh(&Neighbourhood::gather(c, held))))
        .collect();
    (started.elapsed().as_secs_f64(), made)
}

struct Row {
    name: &'static str,
    median: f64,
    best: f64,
    triangles: usize,
    bytes: usize,
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
        "meshing {} chunks of generated terrain (seed {SEED}), {ROUNDS} rounds each, interleaved",
        chunks.len()
    );
    let mut yardstick = Crate::new();
    let names = [
        "client (binary greedy, AO, light, transparency)",
        "client naive (one quad per face)",
        "binary-greedy-meshing 0.5.2 (copy + fast_mesh)",
        "binary-greedy-meshing 0.5.2 (fast_mesh alone)",
    ];
    let mut times: [Vec<f64>; 4] = Default::default();
    let mut made: [Vec<Made>; 4] = Default::default();
    for _ in 0..ROUNDS {
        for m in 0..3 {
            let (seconds, out) = match m {
                0 => round(&chunks, |n| client(&mesh_chunk(n, &table)), &held),
                1 => round(&chunks, |n| client(&mesh_chunk_naive(n, &table)), &held),
                _ => {
                    yardstick.meshing = 0.0;
                    round(&chunks, |n| yardstick.mesh(n), &held)
                }
            };
            times[m].push(seconds);
            made[m] = out;
        }
        times[3].push(yardstick.meshing);
    }
    made[3] = made[2].clone();
    let rows: Vec<Row> = names
        .iter()
        .zip(&mut times)
        .zip(&made)
        .map(|((&name, times), made)| {
            times.sort_by(f64::total_cmp);
            let drawn: Vec<&Made> = made.iter().filter(|m| m.quads > 0).collect();
            let count = drawn.len().max(1);
            Row {
                name,
                median: chunks.len() as f64 / times[ROUNDS / 2],
                best: chunks.len() as f64 / times[0],
                triangles: drawn.iter().map(|m| m.quads * 2).sum::<usize>() / count,
                bytes: drawn.iter().map(|m| m.bytes).sum::<usize>() / count,
            }
        })
        .collect();
    println!(
        "{:<48} {:>10} {:>10} {:>10} {:>16} {:>12}",
        "mesher", "chunks/s", "best", "µs/chunk", "triangles/chunk", "bytes/chunk"
    );
    for row in &rows {
        println!(
            "{:<48} {:>10.0} {:>10.0} {:>10.1} {:>16} {:>12}",
            row.name,
            row.median,
            row.best,
            1e6 / row.median,
            row.triangles,
            row.bytes
        );
    }
    if let [greedy, naive, copied, alone] = &rows[..] {
        println!(
            "client vs binary-greedy-meshing: {:.2}x its time with its copy, {:.2}x fast_mesh alone (medians)",
            copied.median / greedy.median,
            alone.median / greedy.median,
        );
        println!(
            "client vs its naive baseline: {:.2}x faster, {:.2}x fewer triangles",
            greedy.median / naive.median,
            naive.triangles as f64 / greedy.triangles.max(1) as f64
        );
    }
}
