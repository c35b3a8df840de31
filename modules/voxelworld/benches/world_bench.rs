//! World storage benchmark: saving and loading generated terrain sections
//! through the world (voxel blobs by name, node records, one transaction
//! per section) against the raw floor run in the same process: the same
//! chunks as plain u32 arrays through flate2 level 6 and the database's
//! client directly, one transaction per section, an insert per chunk. Both
//! backends: SQLite (rusqlite), and PostgreSQL (the `postgres` crate) when
//! `BUILDAT_TEST_PG` names a cluster (`eval "$(scripts/pg-cluster start)"`;
//! fresh databases are made there and dropped; its loads, ours and the
//! floor's, are the best of three passes). Also the stored bytes per
//! chunk, and what streaming a chunk costs: the bytes of its
//! `voxelworld:chunk` packet and of its `voxelworld:light` packet, and the
//! time to light it. And what storing a dig together with its drop costs:
//! `EditTogether` of one edit and one 300-byte value (the section and the
//! value in one transaction, before the answer) against `EditVoxels` +
//! `PutValues` (the value's transaction now, the section left to the
//! periodic save), and against those two followed by saving the section
//! (the same durability, in two transactions), per operation, on a section
//! of generated terrain. Prints a table; asserts nothing.
//!
//! Run: `cargo bench -p buildat-module-voxelworld --bench world_bench`

mod support;
use support::{open_world, open_world_on};

use std::io::{Read, Write};
use std::time::Instant;

use buildat_format::Packet;
use buildat_format::encode_voxels;
use buildat_module_voxelworld::storage::postgresql;
use buildat_module_voxelworld::stream::encode_light_packet;
use buildat_module_voxelworld::world::{World, replace_allows};
use buildat_test_pg::TestDatabase;
use buildat_voxel::geometry::{CHUNK_VOLUME, Pos, SectionSize};
use buildat_voxelworld_api::stream::Chunk;
use buildat_voxelworld_api::{EditGroup, EditVoxel, Replace, ValueWrite};
use rusqlite::{Connection, params};

const SEED: u64 = 1;

use buildat_worldgen_terrain as terrain;

/// A section's chunks as plain voxel arrays.
type RawSection = (Pos, Vec<(Pos, Vec<u32>)>);

fn sections() -> Vec<Pos> {
    let mut list = Vec::new();
    for y in -1..=0 {
        for z in -3..3 {
            for x in -3..3 {
                list.push([x, y, z]);
            }
        }
    }
    list
}

fn raw_chunks(section: Pos) -> Vec<(Pos, Vec<u32>)> {
    SectionSize::default()
        .chunks_of_section(section)
        .into_iter()
        .map(|chunk| (chunk, terrain::generate_chunk(SEED, chunk)))
        .collect()
}

fn main() {
    let dir = tempfile::tempdir().expect("temp");
    let positions = sections();
    let chunk_count = positions.len() * 8;

    // Ours: generate (not timed), save, then load in a fresh world.
    let ours_path = dir.path().join("ours.sqlite");
    let (ours_save, ours_load, mut world) = ours(&positions, &|| open_world(&ours_path));
    // The stream: each chunk's packet, then its light's (lit from the
    // chunks around it, as the server does when it first streams it).
    let (mut chunk_bytes, mut light_bytes) = (0usize, 0usize);
    let started = Instant::now();
    let mut lights = Vec::new();
    for pos in &positions {
        for chunk in SectionSize::default().chunks_of_section(*pos) {
            lights.push((
                chunk,
                world.chunk_light(chunk).expect("light").expect("lit"),
            ));
        }
    }
    let light_time = started.elapsed().as_secs_f64();
    for (chunk, light) in &lights {
        let blob = world.get_chunk(*chunk).expect("chunk").expect("held").blob;
        chunk_bytes += Chunk {
            chunk: *chunk,
            blob,
        }
        .encode()
        .expect("encode")
        .len();
        light_bytes += encode_light_packet(*chunk, light).expect("encode").len();
    }
    let ours_bytes: i64 = Connection::open(&ours_path)
        .expect("open")
        .query_row("SELECT SUM(LENGTH(data)) FROM node", [], |r| r.get(0))
        .expect("size");

    // Raw floor: the same chunks, u32 little-endian, zlib level 6, rusqlite.
    let raw: Vec<RawSection> = positions.iter().map(|p| (*p, raw_chunks(*p))).collect();
    let raw_path = dir.path().join("raw.sqlite");
    let connection = Connection::open(&raw_path).expect("open");
    connection
        .pragma_update(None, "journal_mode", "WAL")
        .expect("wal");
    connection
        .pragma_update(None, "synchronous", "NORMAL")
        .expect("sync");
    connection
        .execute_batch("CREATE TABLE chunk (sx, sy, sz, cx, cy, cz, data BLOB); CREATE INDEX by_section ON chunk (sx, sy, sz);")
        .expect("schema");
    let mut connection = connection;
    let started = Instant::now();
    for (section, chunks) in &raw {
        let transaction = connection.transaction().expect("tx");
        for (chunk, voxels) in chunks {
            let bytes: Vec<u8> = voxels.iter().flat_map(|v| v.to_le_bytes()).collect();
            let mut encoder =
                flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::new(6));
            encoder.write_all(&bytes).expect("deflate");
            let blob = encoder.finish().expect("deflate");
            transaction
                .execute(
                    "INSERT INTO chunk VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                    params![
                        section[0], section[1], section[2], chunk[0], chunk[1], chunk[2], blob
                    ],
                )
                .expect("insert");
        }
        transaction.commit().expect("commit");
    }
    let raw_save = started.elapsed().as_secs_f64();
    let started = Instant::now();
    let mut statement = connection
        .prepare("SELECT data FROM chunk WHERE sx = ?1 AND sy = ?2 AND sz = ?3")
        .expect("prepare");
    let mut loaded = 0;
    for (section, _) in &raw {
        let blobs: Vec<Vec<u8>> = statement
            .query_map(params![section[0], section[1], section[2]], |r| r.get(0))
            .expect("query")
            .collect::<Result<_, _>>()
            .expect("rows");
        for blob in blobs {
            let mut bytes = Vec::with_capacity(CHUNK_VOLUME * 4);
            flate2::read::ZlibDecoder::new(&blob[..])
                .read_to_end(&mut bytes)
                .expect("inflate");
            let voxels: Vec<u32> = bytes
                .chunks_exact(4)
                .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect();
            loaded += voxels.len();
        }
    }
    let raw_load = started.elapsed().as_secs_f64();
    assert_eq!(loaded, chunk_count * CHUNK_VOLUME);
    let raw_bytes: i64 = connection
        .query_row("SELECT SUM(LENGTH(data)) FROM chunk", [], |r| r.get(0))
        .expect("size");

    let postgres = std::env::var("BUILDAT_TEST_PG")
        .ok()
        .filter(|url| !url.is_empty())
        .map(|admin| {
            let ours_db = TestDatabase::create(&admin, "buildat_bench_ours")
                .expect("a database for the world");
            let ours_url = ours_db.url.clone();
            let open = || {
                open_world_on(Box::new(
                    postgresql::PgStorage::open(&ours_url, SectionSize::default()).expect("open"),
                ))
            };
            let (save, first_load, _) = ours(&positions, &open);
            // Loads are short against a server's round trips: the best of
            // three, for the floor too.
            let load = (0..2)
                .map(|_| load_pass(&positions, &open).0)
                .fold(first_load, f64::min);
            let mut client =
                postgres::Client::connect(&ours_url, postgres::NoTls).expect("connect");
            let bytes: i64 = client
                .query_one("SELECT SUM(octet_length(data))::BIGINT FROM node", &[])
                .expect("size")
                .get(0);
            drop(client);
            let raw_db = TestDatabase::create(&admin, "buildat_bench_raw")
                .expect("a database for the floor");
            let (raw_save, raw_load) = raw_postgres(&raw_db.url, &raw);
            drop((ours_db, raw_db));
            let together_db = TestDatabase::create(&admin, "buildat_bench_together")
                .expect("a database for edits with values");
            let together_url = together_db.url.clone();
            let together = edit_with_value(&|| {
                open_world_on(Box::new(
                    postgresql::PgStorage::open(&together_url, SectionSize::default())
                        .expect("open"),
                ))
            });
            drop(together_db);
            (save, load, raw_save, raw_load, bytes, together)
        });
    let together_path = dir.path().join("together.sqlite");
    let sqlite_together = edit_with_value(&|| open_world(&together_path));

    let sections_n = positions.len() as f64;
    println!();
    println!(
        "{:<40} {:>12} {:>12} {:>7}  goal",
        "measure", "buildat", "raw", "ratio"
    );
    println!(
        "{:<40} {:>12.0} {:>12.0} {:>7.2}  >= 0.5 of raw",
        "sqlite section save (sections/s)",
        sections_n / ours_save,
        sections_n / raw_save,
        raw_save / ours_save
    );
    println!(
        "{:<40} {:>12.0} {:>12.0} {:>7.2}  >= 0.5 of raw",
        "sqlite section load (sections/s)",
        sections_n / ours_load,
        sections_n / raw_load,
        raw_load / ours_load
    );
    print_together("sqlite", sqlite_together);
    match postgres {
        Some((save, load, raw_save, raw_load, bytes, together)) => {
            print_together("postgresql", together);
            println!(
                "{:<40} {:>12.0} {:>12.0} {:>7.2}  >= 0.5 of raw",
                "postgresql section save (sections/s)",
                sections_n / save,
                sections_n / raw_save,
                raw_save / save
            );
            println!(
                "{:<40} {:>12.0} {:>12.0} {:>7.2}  >= 0.5 of raw",
                "postgresql section load (sections/s)",
                sections_n / load,
                sections_n / raw_load,
                raw_load / load
            );
            println!(
                "{:<40} {:>12.0}",
                "postgresql stored bytes per chunk",
                bytes as f64 / chunk_count as f64
            );
        }
        None => println!(
            "postgresql: not measured, BUILDAT_TEST_PG is not set \
             (eval \"$(scripts/pg-cluster start)\")"
        ),
    }
    let per_chunk = ours_bytes as f64 / chunk_count as f64;
    println!(
        "{:<40} {:>12.0} {:>12.0} {:>7.4}  (raw u32 chunk: {} bytes; ratio vs u32)",
        "sqlite stored bytes per chunk",
        per_chunk,
        raw_bytes as f64 / chunk_count as f64,
        per_chunk / (CHUNK_VOLUME * 4) as f64,
        CHUNK_VOLUME * 4
    );
    let n = chunk_count as f64;
    println!(
        "{:<40} {:>12.0} {:>12} {:>7}  (chunk packet + light packet: {:.0} bytes, light +{:.0}%)",
        "stream: chunk packet bytes per chunk",
        chunk_bytes as f64 / n,
        "",
        "",
        (chunk_bytes + light_bytes) as f64 / n,
        100.0 * light_bytes as f64 / chunk_bytes as f64
    );
    println!(
        "{:<40} {:>12.0}",
        "stream: light packet bytes per chunk",
        light_bytes as f64 / n
    );
    println!(
        "{:<40} {:>12.2}",
        "lighting a chunk (ms, with its margin)",
        1000.0 * light_time / n
    );
}

/// Operations of each kind [`edit_with_value`] times (after as many
/// not timed).
const EDIT_OPS: usize = 300;
/// The value stored with each edit: an inventory's few stacks.
const VALUE_BYTES: usize = 300;
/// Groups in one batched `EditTogether` (divides [`EDIT_OPS`]).
const BATCH: usize = 20;

/// Microseconds per operation of a dig (or place) stored with a
/// 300-byte value, on a generated section in a world from `open`:
/// `EditTogether` (one group: the edit and the value, stored in one
/// transaction), `EditVoxels` + `PutValues` (the edit checked and set in
/// memory and committed, the value in its own transaction; the section is
/// written later, by the periodic save, for many edits at once), and
/// those two followed by saving the section (durable like `EditTogether`,
/// in two transactions). Also `EditTogether` of [`BATCH`] such groups in
/// one call (a tick's digs of as many players), per group.
fn edit_with_value(open: &dyn Fn() -> World) -> (f64, f64, f64, f64) {
    let mut world = open();
    let section = [0, 0, 0];
    world.load_section(section).expect("load");
    let chunks = raw_chunks(section)
        .into_iter()
        .map(|(chunk, voxels)| {
            let blob = encode_voxels(&voxels, |id| terrain::PALETTE.get(id as usize).copied())
                .expect("encode");
            (chunk, blob)
        })
        .collect();
    world.apply_generated(section, chunks).expect("apply");
    world
        .set_section_save_enabled(section, true)
        .expect("enable");
    world.save_all().expect("save");
    let stone = world.voxels.get_id("stone").expect("stone");
    let pos = [5, 5, 5];
    // A dig, then a place, and so on: every edit changes the voxel.
    let edit = |i: usize| EditVoxel {
        pos,
        voxel: if i.is_multiple_of(2) {
            buildat_voxel::AIR
        } else {
            stone
        },
        replace: Replace::Any,
        save: true,
        by: Some("ann".into()),
    };
    let write = |i: usize| ValueWrite {
        space: "inventory".into(),
        key: "player:ann".into(),
        value: Some(vec![(i % 251) as u8; VALUE_BYTES]),
        only_if_absent: false,
    };
    let mut i = 0;
    let mut time = |world: &mut World, op: &dyn Fn(&mut World, usize)| {
        for _ in 0..EDIT_OPS {
            op(world, i);
            i += 1;
        }
        let started = Instant::now();
        for _ in 0..EDIT_OPS {
            op(world, i);
            i += 1;
        }
        1e6 * started.elapsed().as_secs_f64() / EDIT_OPS as f64
    };
    let together = time(&mut world, &|world, i| {
        let group = EditGroup {
            edits: vec![edit(i)],
            writes: vec![write(i)],
        };
        let done = world.edit_together(&[group]).expect("stored");
        assert_eq!(done.applied, [true]);
        world.commit();
        world.take_special();
    });
    // A tick's digs of many players in one call: one transaction, the
    // section written once.
    let batched = time(&mut world, &|world, i| {
        if !i.is_multiple_of(BATCH) {
            return;
        }
        let groups: Vec<EditGroup> = (0..BATCH)
            .map(|j| EditGroup {
                edits: vec![EditVoxel {
                    pos: [j as i32, 6, 5],
                    ..edit(i / BATCH)
                }],
                writes: vec![ValueWrite {
                    key: format!("player:{j}"),
                    ..write(i)
                }],
            })
            .collect();
        let done = world.edit_together(&groups).expect("stored");
        assert!(done.applied.iter().all(|a| *a));
        world.commit();
        world.take_special();
    });
    let apart = |world: &mut World, i: usize| {
        let edit = edit(i);
        let current = world.get_voxel(edit.pos).expect("read").expect("generated");
        assert!(replace_allows(edit.replace, current));
        world
            .set_voxel_by(edit.pos, edit.voxel, edit.by.as_deref())
            .expect("set");
        world.commit();
        world.take_special();
        assert!(world.storage_mut().put_values(&[write(i)]).expect("put"));
    };
    let separate = time(&mut world, &apart);
    let separate_saved = time(&mut world, &|world, i| {
        apart(world, i);
        assert_eq!(world.save_all().expect("save"), 1);
    });
    (together, batched, separate, separate_saved)
}

fn print_together(backend: &str, (together, batched, apart, apart_saved): (f64, f64, f64, f64)) {
    println!(
        "{:<40} {:>12.0}",
        format!("{backend} dig+value EditTogether (us/op)"),
        together
    );
    println!(
        "{:<40} {:>12.0}               (per group, {BATCH} groups in one call)",
        format!("{backend} dig+value EditTogether x{BATCH} (us/op)"),
        batched
    );
    println!(
        "{:<40} {:>12.0} {:>12} {:>7.2}  (section left to the periodic save; ratio together/this)",
        format!("{backend} dig+value apart (us/op)"),
        apart,
        "",
        together / apart
    );
    println!(
        "{:<40} {:>12.0} {:>12} {:>7.2}  (then the section saved: as durable, 2 transactions)",
        format!("{backend} dig+value apart+save (us/op)"),
        apart_saved,
        "",
        together / apart_saved
    );
}

/// Ours: the sections generated (not timed) and edited in a world from
/// `open`, saved; then loaded, every chunk decoded, in a world opened again.
/// Returns the save and load times and the loaded world.
fn ours(positions: &[Pos], open: &dyn Fn() -> World) -> (f64, f64, World) {
    let mut world = open();
    for pos in positions {
        world.load_section(*pos).expect("load");
        let chunks = raw_chunks(*pos)
            .into_iter()
            .map(|(chunk, voxels)| {
                let blob = encode_voxels(&voxels, |id| terrain::PALETTE.get(id as usize).copied())
                    .expect("encode");
                (chunk, blob)
            })
            .collect();
        world.apply_generated(*pos, chunks).expect("apply");
        world.set_section_save_enabled(*pos, true).expect("enable");
        // Edit every chunk, so saving encodes them all (an unchanged chunk
        // would be saved with the blob it came with, at no cost).
        let stone = world.voxels.get_id("stone").expect("stone");
        for chunk in SectionSize::default().chunks_of_section(*pos) {
            let origin = buildat_voxel::geometry::chunk_origin(chunk);
            world.set_voxel(origin, stone).expect("edit");
        }
    }
    let started = Instant::now();
    let saved = world.save_all().expect("save");
    let save = started.elapsed().as_secs_f64();
    assert_eq!(saved as usize, positions.len());
    drop(world);
    let (load, world) = load_pass(positions, open);
    (save, load, world)
}

/// Loads the sections, every chunk decoded, in a world from `open`: the
/// time, and the world.
fn load_pass(positions: &[Pos], open: &dyn Fn() -> World) -> (f64, World) {
    let chunk_count = positions.len() * 8;
    let mut world = open();
    let started = Instant::now();
    let mut loaded_voxels = 0;
    for pos in positions {
        world.load_section(*pos).expect("load");
        // Decode every chunk too, as the raw floor does (the world itself
        // decodes lazily, on first read).
        for chunk in SectionSize::default().chunks_of_section(*pos) {
            loaded_voxels += world
                .get_chunk_voxels(chunk)
                .expect("chunk")
                .map_or(0, |v| v.len());
        }
    }
    let load = started.elapsed().as_secs_f64();
    assert_eq!(loaded_voxels, chunk_count * CHUNK_VOLUME);
    (load, world)
}

/// The chunk as the raw floors store it: u32 little-endian, zlib level 6.
fn deflate(voxels: &[u32]) -> Vec<u8> {
    let bytes: Vec<u8> = voxels.iter().flat_map(|v| v.to_le_bytes()).collect();
    let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::new(6));
    encoder.write_all(&bytes).expect("deflate");
    encoder.finish().expect("deflate")
}

fn inflate(blob: &[u8]) -> Vec<u32> {
    let mut bytes = Vec::with_capacity(CHUNK_VOLUME * 4);
    flate2::read::ZlibDecoder::new(blob)
        .read_to_end(&mut bytes)
        .expect("inflate");
    bytes
        .chunks_exact(4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

/// The PostgreSQL floor: the same blobs through the `postgres` crate, one
/// transaction per section, a prepared insert per chunk; then a prepared
/// select per section (the best of three passes). Returns the save and
/// load times.
fn raw_postgres(url: &str, raw: &[RawSection]) -> (f64, f64) {
    let mut client = postgres::Client::connect(url, postgres::NoTls).expect("connect");
    client
        .batch_execute(
            "CREATE TABLE chunk (sx INTEGER, sy INTEGER, sz INTEGER, cx INTEGER, cy INTEGER,
                 cz INTEGER, data BYTEA);
             CREATE INDEX by_section ON chunk (sx, sy, sz);",
        )
        .expect("schema");
    let insert = client
        .prepare("INSERT INTO chunk VALUES ($1, $2, $3, $4, $5, $6, $7)")
        .expect("prepare");
    let started = Instant::now();
    for (section, chunks) in raw {
        let mut transaction = client.transaction().expect("tx");
        for (chunk, voxels) in chunks {
            let blob = deflate(voxels);
            transaction
                .execute(
                    &insert,
                    &[
                        &section[0],
                        &section[1],
                        &section[2],
                        &chunk[0],
                        &chunk[1],
                        &chunk[2],
                        &blob,
                    ],
                )
                .expect("insert");
        }
        transaction.commit().expect("commit");
    }
    let save = started.elapsed().as_secs_f64();
    let select = client
        .prepare("SELECT data FROM chunk WHERE sx = $1 AND sy = $2 AND sz = $3")
        .expect("prepare");
    let mut load = f64::MAX;
    for _ in 0..3 {
        let started = Instant::now();
        let mut loaded = 0;
        for (section, _) in raw {
            for row in client
                .query(&select, &[&section[0], &section[1], &section[2]])
                .expect("query")
            {
                loaded += inflate(row.get(0)).len();
            }
        }
        load = load.min(started.elapsed().as_secs_f64());
        assert_eq!(loaded, raw.len() * 8 * CHUNK_VOLUME);
    }
    (save, load)
}
