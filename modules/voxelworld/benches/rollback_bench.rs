//! Rollback log benchmark, the two goals: the bytes on disk an
//! edit costs, and the time to roll back 100,000 edits. A world of
//! generated terrain in a SQLite file (8 x 2 x 8 sections around the
//! origin); 500 players dig and place 1,000,000 times (`-- --edits N`) at random spots in
//! it (one of them, the griefer, 100,000 of those), recorded as the
//! module records them (`World::set_voxel_by`), written every 50,000 edits
//! (about 10 s of 500 bots at 10 edits a second) as the module writes them
//! (`rollback::write_log`, a slice of `WRITE_SLICE` edits a tick). The file's growth (after a WAL checkpoint,
//! sections not saved again) over the edits is the bytes an edit. Then the
//! rollback of the griefer's edits: the log read and decoded, what to put
//! back chosen (`rollback::select`), and each voxel checked and set with a
//! commit every 1,024 edits, as `EditVoxels` does (streaming to players is
//! not part of it). Prints a table; asserts nothing.
//!
//! Run: `cargo bench -p buildat-module-voxelworld --bench rollback_bench`

mod support;
use support::open_world;

use std::time::Instant;

use buildat_format::encode_voxels;
use buildat_module_voxelworld::rollback::{self, now_ms};
use buildat_module_voxelworld::world::World;
use buildat_voxel::geometry::{Pos, SectionSize};
use buildat_worldgen_terrain as terrain;
use rusqlite::Connection;

/// Edits logged unless `-- --edits N` says otherwise (the goal's
/// 10,000,000: `-- --edits 10000000`).
const DEFAULT_EDITS: usize = 1_000_000;
const GRIEFER_EDITS: usize = 100_000;
const PLAYERS: usize = 500;
const WRITE_EVERY: usize = 50_000;

fn file_bytes(path: &std::path::Path) -> u64 {
    let connection = Connection::open(path).expect("open");
    connection
        .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .expect("checkpoint");
    let wal = path.with_extension("sqlite-wal");
    std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
        + std::fs::metadata(wal).map(|m| m.len()).unwrap_or(0)
}

/// Writes everything recorded, a slice at a time as the module's ticks do.
fn write_all(world: &mut World, total: &mut f64, slowest: &mut f64) {
    while !world.log.is_empty() {
        let t = Instant::now();
        rollback::write_log(world, rollback::WRITE_SLICE).expect("write");
        let took = t.elapsed().as_secs_f64();
        *total += took;
        *slowest = slowest.max(took);
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let edits_arg = args
        .iter()
        .position(|a| a == "--edits")
        .and_then(|i| args.get(i + 1))
        .map(|n| n.parse::<usize>().expect("--edits N: a count of edits"));
    let total_edits = edits_arg.unwrap_or(DEFAULT_EDITS).max(GRIEFER_EDITS);
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("world.sqlite");
    let mut world = open_world(&path);
    let size = SectionSize::default();
    let mut sections = Vec::new();
    for sy in -1..=0 {
        for sz in -4..4 {
            for sx in -4..4 {
                sections.push([sx, sy, sz]);
            }
        }
    }
    for section in &sections {
        world.load_section(*section).expect("load");
        let chunks = size
            .chunks_of_section(*section)
            .into_iter()
            .map(|chunk| {
                let voxels = terrain::generate_chunk(1, chunk);
                let blob = encode_voxels(&voxels, |id| terrain::PALETTE.get(id as usize).copied())
                    .expect("encode");
                (chunk, blob)
            })
            .collect();
        world.apply_generated(*section, chunks).expect("apply");
        world
            .set_section_save_enabled(*section, true)
            .expect("enable");
    }
    world.save_all().expect("save");
    world.log.enabled = true;
    let before_bytes = file_bytes(&path);
    let stone = world.voxels.get_id("stone").expect("stone");
    let air = buildat_voxel::AIR;
    let [w, h, d] = size.0.map(|c| c * buildat_voxel::geometry::CHUNK_SIZE);
    let low = [-4 * w, -h, -4 * d];
    let span = [8 * w, 2 * h, 8 * d];
    let names: Vec<String> = (0..PLAYERS).map(|i| format!("player{i}")).collect();
    // Each player works around a spot of its own, walking.
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut spots: Vec<Pos> = (0..PLAYERS)
        .map(|_| {
            let r = next();
            [0, 1, 2].map(|a| low[a] + ((r >> (a * 16)) % span[a] as u64) as i32)
        })
        .collect();
    let started = Instant::now();
    let (mut write_time, mut slowest_slice) = (0.0, 0.0f64);
    let mut griefed = 0;
    for i in 0..total_edits {
        let r = next();
        let griefer = i % (total_edits / GRIEFER_EDITS) == 0;
        let who = if griefer {
            0
        } else {
            1 + (r as usize % (PLAYERS - 1))
        };
        let spot = &mut spots[who];
        for a in 0..3 {
            let step = ((r >> (8 + a * 4)) % 3) as i32 - 1;
            spot[a] = (spot[a] + step).clamp(low[a], low[a] + span[a] - 1);
        }
        let current = world.get_voxel(*spot).expect("read").expect("generated");
        let voxel = if current == air { stone } else { air };
        world
            .set_voxel_by(*spot, voxel, Some(&names[who]))
            .expect("set");
        griefed += usize::from(griefer);
        if i % 1024 == 1023 {
            world.commit();
        }
        if i % WRITE_EVERY == WRITE_EVERY - 1 {
            write_all(&mut world, &mut write_time, &mut slowest_slice);
        }
    }
    world.commit();
    write_all(&mut world, &mut write_time, &mut slowest_slice);
    let edit_time = started.elapsed().as_secs_f64();
    let after_bytes = file_bytes(&path);
    let logged = after_bytes.saturating_sub(before_bytes);

    // Roll back the griefer (player0): everything since an hour ago.
    let t = Instant::now();
    let since = now_ms() - 3_600_000;
    let griefer = names[0].clone();
    let entries = rollback::read_log(&mut world, since, [[i32::MIN; 3], [i32::MAX; 3]], &|e| {
        e.by == griefer
    })
    .expect("read");
    let read_time = t.elapsed().as_secs_f64();
    let (reverts, edits) = rollback::select(&entries, &names[0], since, None);
    let select_time = t.elapsed().as_secs_f64() - read_time;
    let t = Instant::now();
    let mut put_back = 0;
    for (i, revert) in reverts.iter().enumerate() {
        let current = world.get_voxel(revert.pos).expect("read");
        if current == Some(revert.expect) {
            world
                .set_voxel_by(revert.pos, revert.to, Some(rollback::ROLLBACK_ACTOR))
                .expect("set");
            put_back += 1;
        }
        if i % 1024 == 1023 {
            world.commit();
        }
    }
    world.commit();
    rollback::write_log(&mut world, usize::MAX).expect("write");
    let apply_time = t.elapsed().as_secs_f64();

    println!("| rollback log ({total_edits} edits by {PLAYERS} players, SQLite) | value |");
    println!("|---|---|");
    println!(
        "| bytes on disk an edit (file growth {logged} B) | {:.2} |",
        logged as f64 / total_edits as f64
    );
    println!(
        "| 10 million edits on disk (at this rate) | {:.0} MB |",
        logged as f64 / total_edits as f64 * 1e7 / 1e6
    );
    println!(
        "| recording + writing, per edit (edits themselves included) | {:.2} us |",
        edit_time / total_edits as f64 * 1e6
    );
    println!(
        "| writing the log: {} writes, in all | {:.3} s |",
        total_edits.div_ceil(WRITE_EVERY),
        write_time
    );
    println!(
        "| the slowest slice of {} edits written (a tick's share) | {:.1} ms |",
        rollback::WRITE_SLICE,
        slowest_slice * 1e3
    );
    println!("| griefer's edits made / found in the log | {griefed} / {edits} |");
    println!(
        "| rollback: reading and decoding {total_edits} logged edits (the griefer's {} kept) | {:.3} s |",
        entries.len(),
        read_time
    );
    println!(
        "| rollback: choosing {} voxels | {select_time:.3} s |",
        reverts.len()
    );
    println!(
        "| rollback: checking and setting them ({put_back} put back), committing, logging | {apply_time:.3} s |"
    );
    println!(
        "| rollback of {edits} edits in all | {:.3} s |",
        read_time + select_time + apply_time
    );
}
