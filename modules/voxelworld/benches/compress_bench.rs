//! The stream's bytes: zlib (what chunk and light blobs use today, level 6
//! through flate2) against zstd (what Luanti moved its map blocks to) on
//! the default terrain's chunks, in one run: compressed bytes, and the CPU
//! to compress (the server, once per chunk change) and to decompress (every
//! client, and the server on load), per chunk.
//!
//! `cargo bench -p buildat-module-voxelworld --bench compress_bench [-- --quick]`
//!
//! What is compressed is exactly what the blobs compress: a chunk blob's
//! body (its names, palette and runs, taken out of a real
//! `buildat_format::voxel_blob` blob) and a chunk's 32,768 light bytes
//! (lit by `buildat_voxel::light`). Each codec's output is decompressed and
//! checked equal to its input.

use std::time::Instant;

use buildat_format::voxel_blob::encode_voxels;
use buildat_voxel::VoxelLight;
use buildat_voxel::geometry::Pos;
use buildat_voxel::light::{self, LightTable, Region};
use buildat_worldgen_terrain as terrain;

const SEED: u64 = 1;

/// One codec at one level, with its contexts made once and reused (as a
/// server compressing chunk after chunk, or a client decompressing them,
/// would keep them).
enum Codec {
    Zlib(u32, flate2::Compress, flate2::Decompress),
    Zstd(
        i32,
        zstd::bulk::Compressor<'static>,
        zstd::bulk::Decompressor<'static>,
    ),
}

impl Codec {
    fn zlib(level: u32) -> Self {
        Codec::Zlib(
            level,
            flate2::Compress::new(flate2::Compression::new(level), true),
            flate2::Decompress::new(true),
        )
    }

    fn zstd(level: i32) -> Self {
        Codec::Zstd(
            level,
            zstd::bulk::Compressor::new(level).expect("zstd"),
            zstd::bulk::Decompressor::new().expect("zstd"),
        )
    }

    fn name(&self) -> String {
        match self {
            Codec::Zlib(level, ..) => format!("zlib {level}"),
            Codec::Zstd(level, ..) => format!("zstd {level}"),
        }
    }

    fn compress(&mut self, data: &[u8]) -> Vec<u8> {
        match self {
            Codec::Zlib(_, compress, _) => {
                compress.reset();
                // Room for deflate's worst case: stored blocks, a few bytes each.
                let mut out = Vec::with_capacity(data.len() + data.len() / 16 + 64);
                compress
                    .compress_vec(data, &mut out, flate2::FlushCompress::Finish)
                    .expect("deflate");
                out
            }
            Codec::Zstd(_, compress, _) => compress.compress(data).expect("zstd"),
        }
    }

    fn decompress(&mut self, data: &[u8], len: usize) -> Vec<u8> {
        match self {
            Codec::Zlib(_, _, decompress) => {
                decompress.reset(true);
                let mut out = Vec::with_capacity(len);
                decompress
                    .decompress_vec(data, &mut out, flate2::FlushDecompress::Finish)
                    .expect("inflate");
                out
            }
            Codec::Zstd(_, _, decompress) => decompress.decompress(data, len).expect("zstd"),
        }
    }
}

/// A LEB128 varint at `at`; moves `at` past it.
fn varint(bytes: &[u8], at: &mut usize) -> u64 {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = bytes[*at];
        *at += 1;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            break;
        }
    }
    value
}

/// A voxel blob's body: inflated from after its format byte and two
/// varints (docs/formats.md).
fn blob_body(blob: &[u8]) -> Vec<u8> {
    let mut at = 1;
    varint(blob, &mut at);
    let len = varint(blob, &mut at) as usize;
    Codec::zlib(6).decompress(&blob[at..], len)
}

fn table() -> LightTable {
    LightTable::from_props(
        (0..terrain::PALETTE.len() as u32)
            .map(|id| VoxelLight {
                source: 0,
                absorption: terrain::light_absorption(id),
            })
            .collect(),
    )
}

/// The chunk bodies and light of sections x, z in -r..r, y -1..=0.
fn inputs(radius: i32) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let table = table();
    let mut bodies = Vec::new();
    let mut lights = Vec::new();
    for sz in -radius..radius {
        for sy in -1..=0 {
            for sx in -radius..radius {
                let first: Pos = [sx * 2, sy * 2, sz * 2];
                // The section and one chunk around it.
                let grid: Vec<Vec<u32>> = (0..64)
                    .map(|i| {
                        let g = [i % 4 - 1, i / 4 % 4 - 1, i / 16 - 1];
                        terrain::generate_chunk(SEED, [0, 1, 2].map(|a| first[a] + g[a]))
                    })
                    .collect();
                let region = Region {
                    size: [2, 2, 2],
                    chunks: grid.iter().map(|c| Some(c.as_slice())).collect(),
                    sun_in: vec![None; 16],
                };
                lights.extend(light::light_region(&region, &table));
                for i in 0..8 {
                    let g = [1 + i % 2, 1 + i / 2 % 2, 1 + i / 4];
                    let voxels = &grid[(g[0] + 4 * (g[1] + 4 * g[2])) as usize];
                    let blob = encode_voxels(voxels, |id| terrain::PALETTE.get(id as usize))
                        .expect("encodes");
                    bodies.push(blob_body(&blob));
                }
            }
        }
    }
    (bodies, lights)
}

/// Total compressed bytes, and the best seconds per pass to compress and
/// to decompress all of `items`.
fn measure(codec: &mut Codec, items: &[Vec<u8>], passes: usize) -> (usize, f64, f64) {
    let packed: Vec<Vec<u8>> = items.iter().map(|i| codec.compress(i)).collect();
    for (item, packed) in items.iter().zip(&packed) {
        assert!(
            codec.decompress(packed, item.len()) == *item,
            "{} round trip",
            codec.name()
        );
    }
    let bytes = packed.iter().map(Vec::len).sum();
    let (mut compress, mut decompress) = (f64::INFINITY, f64::INFINITY);
    for _ in 0..passes {
        let started = Instant::now();
        for item in items {
            std::hint::black_box(codec.compress(item));
        }
        compress = compress.min(started.elapsed().as_secs_f64());
        let started = Instant::now();
        for (item, packed) in items.iter().zip(&packed) {
            std::hint::black_box(codec.decompress(packed, item.len()));
        }
        decompress = decompress.min(started.elapsed().as_secs_f64());
    }
    (bytes, compress, decompress)
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let (radius, passes) = if quick { (1, 1) } else { (2, 5) };
    let (bodies, lights) = inputs(radius);
    let n = bodies.len() as f64;
    println!(
        "compress_bench: {} chunks of the default terrain (seed {SEED}), best of {passes}, one thread",
        bodies.len()
    );
    let mut codecs = [
        Codec::zlib(6),
        Codec::zlib(1),
        Codec::zstd(1),
        Codec::zstd(3),
        Codec::zstd(9),
    ];
    for (what, items) in [("chunk body", &bodies), ("light", &lights)] {
        let raw: usize = items.iter().map(Vec::len).sum();
        println!("\n{what}: {:.0} bytes a chunk uncompressed", raw as f64 / n);
        println!(
            "{:<10} {:>12} {:>9} {:>14} {:>9} {:>16} {:>9}",
            "codec",
            "bytes/chunk",
            "× zlib 6",
            "compress µs",
            "× zlib 6",
            "decompress µs",
            "× zlib 6"
        );
        let base = measure(&mut Codec::zlib(6), items, passes);
        for codec in &mut codecs {
            let (bytes, compress, decompress) = measure(codec, items, passes);
            println!(
                "{:<10} {:>12.0} {:>9.2} {:>14.1} {:>9.2} {:>16.1} {:>9.2}",
                codec.name(),
                bytes as f64 / n,
                bytes as f64 / base.0 as f64,
                1e6 * compress / n,
                compress / base.1,
                1e6 * decompress / n,
                decompress / base.2
            );
        }
    }
}
