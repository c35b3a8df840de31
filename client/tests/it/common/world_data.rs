//! Synthetic world stream data for the client's tests: a registry with the
//! default terrain's block names, chunks built from a function of world
//! coordinates, and the `voxelworld:*` payloads (through
//! `buildat_voxel::stream` and `buildat_format`'s voxel blob, as the server
//! encodes them). Shared by `world` and `world_cli`.

use buildat_format::encode_voxels;
use buildat_voxel::geometry::{CHUNK_SIZE, CHUNK_VOLUME, Pos, chunk_origin};
use buildat_voxel::{BlockDefinition, BlockRegistry, VoxelRegistry};
use buildat_voxelworld_protocol::stream::{Chunk, Registry, UnloadChunk};

pub const BLOCKS: [&str; 7] = [
    "stone", "dirt", "grass", "sand", "water", "coal_ore", "lamp",
];

/// air, unknown, then [`BLOCKS`] in order (stone = 2, ...).
pub fn registry() -> VoxelRegistry {
    let mut voxels = VoxelRegistry::default();
    let mut blocks = BlockRegistry::default();
    for name in BLOCKS {
        blocks
            .add(
                BlockDefinition::simple(name, &format!("{name}.png")),
                &mut voxels,
            )
            .expect("block");
    }
    voxels
}

pub fn registry_packet(registry: &VoxelRegistry) -> Vec<u8> {
    encoded(&Registry {
        voxels: registry.clone(),
    })
}

/// A chunk whose voxel at world position p is `name_at(p)`.
pub fn chunk_values(
    registry: &VoxelRegistry,
    chunk: Pos,
    name_at: &dyn Fn(Pos) -> &'static str,
) -> Vec<u32> {
    let origin = chunk_origin(chunk);
    let mut values = Vec::with_capacity(CHUNK_VOLUME);
    for z in 0..CHUNK_SIZE {
        for y in 0..CHUNK_SIZE {
            for x in 0..CHUNK_SIZE {
                let name = name_at([origin[0] + x, origin[1] + y, origin[2] + z]);
                values.push(registry.get_id(name).expect("a registered name"));
            }
        }
    }
    values
}

/// A `voxelworld:chunk` payload (names through `registry`; a name it lacks
/// can be forced with `rename`).
pub fn chunk_packet_of(
    registry: &VoxelRegistry,
    chunk: Pos,
    values: &[u32],
    rename: Option<(u32, &str)>,
) -> Vec<u8> {
    let blob = encode_voxels(values, |id| match rename {
        Some((from, to)) if from == id => Some(to.to_string()),
        _ => registry.get_name(id),
    })
    .expect("encode");
    encoded(&Chunk { chunk, blob })
}

pub fn chunk_packet(
    registry: &VoxelRegistry,
    chunk: Pos,
    name_at: &dyn Fn(Pos) -> &'static str,
) -> Vec<u8> {
    chunk_packet_of(
        registry,
        chunk,
        &chunk_values(registry, chunk, name_at),
        None,
    )
}

pub fn unload_packet(chunk: Pos) -> Vec<u8> {
    encoded(&UnloadChunk { chunk })
}

/// The test terrain: solid up to y = 10; the top voxel by x: water below
/// -8, sand to 0, grass to 8, dirt to 16, stone beyond; coal ore on top at
/// (20, 10, 20); stone below the top; a lamp (an "other" block) at
/// (-3, 10, 3).
pub fn terrain(p: Pos) -> &'static str {
    let [x, y, z] = p;
    if y > 10 {
        return "air";
    }
    if y < 10 {
        return "stone";
    }
    if (x, z) == (20, 20) {
        return "coal_ore";
    }
    if (x, z) == (-3, 3) {
        return "lamp";
    }
    match x {
        ..-8 => "water",
        -8..0 => "sand",
        0..8 => "grass",
        8..16 => "dirt",
        _ => "stone",
    }
}

/// The ASCII map row of [`terrain`] at z (with every chunk held), x from
/// -24 to 24, the focus at x = 0 when `focus`.
pub fn terrain_row(z: i32, focus: bool) -> String {
    (-24..=24)
        .map(|x| {
            if focus && x == 0 {
                return '@';
            }
            match terrain([x, 10, z]) {
                "water" => '~',
                "sand" => '.',
                "grass" => '"',
                "dirt" => '%',
                "stone" => '#',
                "coal_ore" => '*',
                _ => '?',
            }
        })
        .collect()
}

/// The four chunks under a 49 × 49 map around (0, y, 0) at y 0..32, but
/// (-1, 0, -1): x < 0 and z < 0 stays unheld.
pub const MAP_CHUNKS: [Pos; 3] = [[0, 0, 0], [-1, 0, 0], [0, 0, -1]];

/// A packet's payload, by its definition (the harness's one helper).
#[allow(unused_imports)]
pub use buildat_harness::raw_client::encoded;
