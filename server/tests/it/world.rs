//! The voxelworld and worldgen modules in the real server: pregen, kill -9
//! while saving under load (the world in SQLite and in PostgreSQL),
//! migrating a world between them, backups and restores, and the world's
//! files kept from other local users.

use std::process::Stdio;
use std::time::Duration;

use crate::common::{
    Scratch, console, join, ping, run_headless, run_headless_args, start_game, start_server,
    with_world,
};
use buildat_harness::pg::TestDatabase;
use buildat_harness::world_check::{SECTIONS, WorldDb, stored_round};
use rusqlite::Connection;

/// `buildat-server pregen --radius N --world DIR ...`: the world module's
/// console command run headless, the server's options after it.
fn run_pregen(scratch: &Scratch, radius: u32) -> String {
    let mut args = vec!["pregen".to_string(), "--radius".into(), radius.to_string()];
    args.extend(scratch.server_args());
    let mut server = start_server(&args, Stdio::null());
    let status = server.wait_exit(Duration::from_secs(300));
    assert_eq!(status, Some(0), "{}", server.output());
    server.output()
}

#[test]
fn pregen_is_a_console_command_of_the_world_listed_by_help() {
    let scratch = Scratch::new();
    scratch.add_world(false);
    let mut args = scratch.server_args();
    args.push("--no-watch".into());
    let mut server = start_server(&args, Stdio::piped());
    server.expect_line("server started", Duration::from_secs(300));
    server.send("help");
    let line = server
        .wait_for("pregen --radius N [--height H]", Duration::from_secs(10))
        .unwrap_or_else(|| panic!("help lists pregen:\n{}", server.output()));
    assert!(line.contains("(voxelworld)"), "{line}");
    // On a running server pregen goes on between ticks: the console and the
    // game are answered meanwhile, a second one is refused, `stop` ends it.
    server.send("pregen --radius 6 --height 0");
    server
        .wait_for(
            "pregen started: 169 sections to generate, 0 already present",
            Duration::from_secs(120),
        )
        .unwrap_or_else(|| panic!("pregen on the console:\n{}", server.output()));
    server.send("pregen --radius 1");
    server
        .wait_for("a pregen is running (", Duration::from_secs(10))
        .unwrap_or_else(|| panic!("a second pregen refused:\n{}", server.output()));
    server.send("world");
    server
        .wait_for("; pregen running: ", Duration::from_secs(10))
        .unwrap_or_else(|| panic!("`world` answered during pregen:\n{}", server.output()));
    // Its progress, logged each second; then stopped halfway.
    server
        .wait_for("] pregen: ", Duration::from_secs(60))
        .unwrap_or_else(|| panic!("pregen's progress:\n{}", server.output()));
    server.send("pregen stop");
    let stopped = server
        .wait_for("pregen stopped at ", Duration::from_secs(10))
        .unwrap_or_else(|| panic!("pregen stop:\n{}", server.output()));
    assert!(stopped.contains("/169 sections"), "{stopped}");
    // Again: what the first run saved is skipped, the rest generated.
    server.send("pregen --radius 6 --height 0");
    let started = server
        .wait_for("pregen started: ", Duration::from_secs(10))
        .unwrap_or_else(|| panic!("pregen again:\n{}", server.output()));
    let counts: Vec<u64> = started
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|n| n.parse().ok())
        .collect();
    let [to_generate, present] = counts[counts.len() - 2..] else {
        panic!("{started}");
    };
    assert_eq!(to_generate + present, 169, "{started}");
    assert!(present > 0, "the stopped run saved its sections: {started}");
    server
        .wait_for(
            &format!("pregen: generated {to_generate} sections in"),
            Duration::from_secs(300),
        )
        .unwrap_or_else(|| panic!("pregen finished:\n{}", server.output()));
    // Words that do not parse: clap's message from the command's one
    // definition.
    server.send("pregen --radius");
    server
        .wait_for(
            "a value is required for '--radius <N>'",
            Duration::from_secs(10),
        )
        .unwrap_or_else(|| panic!("a usage error:\n{}", server.output()));
    server.stop_cleanly();
}

#[test]
fn an_unknown_headless_command_names_the_ones_there_are() {
    let scratch = Scratch::new();
    scratch.add_world(false);
    let mut args = scratch.server_args();
    args.extend(["pregenerate".into(), "--radius".into(), "1".into()]);
    let mut server = start_server(&args, Stdio::null());
    assert_eq!(server.wait_exit(Duration::from_secs(300)), Some(1));
    assert!(
        server
            .output()
            .contains(
                "unknown command 'pregenerate': the loaded modules offer backup, inspect, migrate, pregen, restore, rollback, world"
            ),
        "{}",
        server.output()
    );
}

#[test]
fn pregen_twice_writes_nothing_the_second_time() {
    let scratch = Scratch::new();
    scratch.add_world(false);
    let first = run_pregen(&scratch, 1);
    assert!(
        first.contains("pregen done: 27 sections generated, 0 already present"),
        "{first}"
    );
    let database = scratch.world().join("world.sqlite");
    let before = std::fs::read(&database).expect("database");
    let second = run_pregen(&scratch, 1);
    assert!(
        second.contains("pregen done: 0 sections generated, 27 already present"),
        "{second}"
    );
    assert_eq!(
        std::fs::read(&database).expect("database"),
        before,
        "nothing was written"
    );
    let wider = run_pregen(&scratch, 2);
    assert!(
        wider.contains("pregen done: 48 sections generated, 27 already present"),
        "{wider}"
    );
}

#[test]
fn kill_9_while_saving_loses_no_acknowledged_save() {
    kill_9_while_saving(None, 10);
}

#[test]
fn kill_9_while_saving_in_postgresql_loses_no_acknowledged_save() {
    if let Some(database) = TestDatabase::on_test_cluster("buildat_it_kill") {
        kill_9_while_saving(Some(&database), 5);
    }
}

/// Kills the server `iterations` times while the probe saves rounds, the
/// world in `database` (or in SQLite), checking every acknowledged save.
fn kill_9_while_saving(database: Option<&TestDatabase>, iterations: u64) {
    let scratch = Scratch::new();
    scratch.add_world(true);
    let mut args = scratch.server_args();
    args.extend(["--no-watch".into(), "--tick-ms".into(), "20".into()]);
    if let Some(database) = database {
        args.extend([
            "--set".into(),
            format!("voxelworld.storage={}", database.url),
        ]);
    }
    let mut previous = 0u64;
    for iteration in 0..iterations {
        let mut server = start_server(&args, Stdio::piped());
        let ready = server
            .wait_for("world_probe ready at round ", Duration::from_secs(120))
            .unwrap_or_else(|| panic!("iteration {iteration}:\n{}", server.output()));
        let start: u64 = ready
            .rsplit(' ')
            .next()
            .and_then(|n| n.parse().ok())
            .expect("round");
        assert_eq!(
            start, previous,
            "iteration {iteration}: the world holds the last round saved"
        );
        let target = start + 1 + iteration % 5 * 3;
        server
            .wait_for(&format!("saved round {target}"), Duration::from_secs(60))
            .unwrap_or_else(|| panic!("iteration {iteration}:\n{}", server.output()));
        server.kill();
        server.wait_exit(Duration::from_secs(5));
        let acknowledged = server
            .seen
            .iter()
            .filter_map(|l| {
                l.rsplit("saved round ")
                    .next()
                    .filter(|_| l.contains("saved round "))
            })
            .filter_map(|n| n.trim().parse::<u64>().ok())
            .max()
            .expect("rounds saved");
        let mut connection = match database {
            Some(database) => WorldDb::postgres(&database.url),
            None => WorldDb::sqlite(&scratch.world().join("world.sqlite")),
        }
        .expect("open");
        let verdict = connection.integrity().expect("integrity_check");
        assert_eq!(verdict, "ok", "iteration {iteration}");
        let mut rounds = Vec::new();
        for section in SECTIONS {
            let round = connection
                .stored_round(section)
                .expect("the section decodes")
                .expect("a round is stored");
            assert!(
                round == acknowledged || round == acknowledged + 1,
                "iteration {iteration}: section {section:?} holds round {round}, last acknowledged {acknowledged}"
            );
            rounds.push(round);
        }
        // The probe continues from section 0's round next time.
        previous = rounds[0];
    }
}

#[test]
fn reload_voxelworld_keeps_the_world_and_its_registry() {
    let scratch = Scratch::new();
    scratch.add_world(true);
    let mut args = scratch.server_args();
    args.extend(["--no-watch".into(), "--tick-ms".into(), "20".into()]);
    let mut server = start_server(&args, Stdio::piped());
    server.expect_line("world_probe ready at round 0", Duration::from_secs(120));
    server
        .wait_for("saved round 6", Duration::from_secs(60))
        .expect("rounds saved");
    server.send("reload voxelworld");
    server.expect_line("reloaded voxelworld", Duration::from_secs(60));
    server.send("reload worldgen");
    server
        .wait_for("reloaded worldgen", Duration::from_secs(60))
        .expect("worldgen reloaded");
    let before = server.seen.len();
    let last = server.wait_for("saved round 30", Duration::from_secs(60));
    assert!(
        last.is_some(),
        "edits go on after the reloads:\n{}",
        server.output()
    );
    assert!(
        !server.seen[before..]
            .iter()
            .any(|l| l.contains("ERROR") || l.contains("WARN")),
        "{}",
        server.output()
    );
    server.send("stop");
    assert_eq!(
        server.wait_exit(Duration::from_secs(30)),
        Some(0),
        "{}",
        server.output()
    );
    let acknowledged = server
        .seen
        .iter()
        .filter_map(|l| l.split("saved round ").nth(1))
        .filter_map(|n| n.trim().parse::<u64>().ok())
        .max()
        .expect("rounds");
    let connection = Connection::open(scratch.world().join("world.sqlite")).expect("open");
    // `stop` saves what is in memory: the last acknowledged round, or the
    // round after it when the probe's edit came before the final save and
    // the probe was stopped before it heard of that save.
    for section in SECTIONS {
        let round = stored_round(&connection, section)
            .expect("the section decodes")
            .expect("a round is stored");
        assert!(
            round == acknowledged || round == acknowledged + 1,
            "{section:?} saved on stop: round {round}, last acknowledged {acknowledged}"
        );
    }
}

#[test]
fn a_world_migrates_to_postgresql_and_back_and_plays_there() {
    let Some(database) = TestDatabase::on_test_cluster("buildat_it_migrate") else {
        return;
    };
    let scratch = Scratch::new();
    scratch.add_world(false);
    let words = |text: &str| {
        text.split_whitespace()
            .map(String::from)
            .collect::<Vec<_>>()
    };
    let (status, output) = run_headless(&scratch, &words("pregen --radius 1 --height 0"));
    assert_eq!(status, Some(0), "{output}");
    let (status, output) = run_headless(
        &scratch,
        &["migrate".to_string(), "--to".into(), database.url.clone()],
    );
    assert_eq!(status, Some(0), "{output}");
    assert!(
        output.contains("values copied")
            && output.contains("source 9 sections")
            && output.contains("destination 9 sections")
            && output.contains("they match"),
        "{output}"
    );
    // The world now played from PostgreSQL: everything already there.
    let on_pg = [
        "--set".to_string(),
        format!("voxelworld.storage={}", database.url),
    ];
    let mut pregen = words("pregen --radius 1 --height 0");
    pregen.extend(on_pg.clone());
    let (status, output) = run_headless(&scratch, &pregen);
    assert_eq!(status, Some(0), "{output}");
    assert!(
        output.contains("pregen done: 0 sections generated, 9 already present"),
        "{output}"
    );
    // And back into a new SQLite file, counted alike.
    let mut back = words("migrate --to sqlite:back.sqlite");
    back.extend(on_pg);
    let (status, output) = run_headless(&scratch, &back);
    assert_eq!(status, Some(0), "{output}");
    assert!(
        output.contains("source 9 sections") && output.contains("destination 9 sections"),
        "{output}"
    );
    let original = Connection::open(scratch.world().join("world.sqlite")).expect("open");
    let copy = Connection::open(scratch.world().join("back.sqlite")).expect("open");
    let nodes = |c: &Connection| -> Vec<(i64, Vec<u8>)> {
        c.prepare("SELECT id, data FROM node ORDER BY id")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    };
    assert_eq!(
        nodes(&original),
        nodes(&copy),
        "node for node, byte for byte"
    );
    // Into a database that is not empty: refused.
    let (status, output) = run_headless(
        &scratch,
        &["migrate".to_string(), "--to".into(), database.url.clone()],
    );
    assert_ne!(status, Some(0), "{output}");
    assert!(output.contains("already holds 9 sections"), "{output}");
}

#[test]
fn a_postgresql_server_that_is_down_is_named_without_its_password() {
    let scratch = Scratch::new();
    scratch.add_world(false);
    let words: Vec<String> = [
        "pregen",
        "--radius",
        "0",
        "--set",
        "voxelworld.storage=postgresql://me:hunter2@127.0.0.1:1/world",
    ]
    .map(String::from)
    .to_vec();
    let (status, output) = run_headless(&scratch, &words);
    assert_ne!(status, Some(0), "{output}");
    assert!(
        output
            .contains("cannot connect to the world database postgresql://me:***@127.0.0.1:1/world"),
        "{output}"
    );
    assert!(!output.contains("hunter2"), "{output}");
}

#[test]
fn dynamic_nodes_carry_their_riders_into_the_next_section_and_persist() {
    let scratch = Scratch::new();
    scratch.add_world(true);
    let mut args = scratch.server_args();
    args.extend(["--no-watch", "--set", "world_probe.idle=1"].map(String::from));
    let mut server = start_server(&args, Stdio::piped());
    server.expect_line("server started", Duration::from_secs(300));
    let created = console(&mut server, "probe-nodes create 3", "created nodes ");
    let ids: Vec<u64> = created
        .split("created nodes ")
        .nth(1)
        .unwrap_or_default()
        .split_whitespace()
        .map(|id| id.parse().expect("an id"))
        .collect();
    assert_eq!(ids.len(), 3, "{created}");
    // The first node walks 70 voxels along x, into section (1, 4, 0): the
    // two attached to it come along.
    console(
        &mut server,
        "probe-nodes walk 70",
        "moved 1 node, 0 unknown",
    );
    console(&mut server, "probe-nodes show 0", "node 0 unknown");
    server
        .wait_for(
            "world_probe: nodes changed 3, removed 0",
            Duration::from_secs(30),
        )
        .unwrap_or_else(|| panic!("the world tells what changed:\n{}", server.output()));
    console(&mut server, "probe-nodes save", "saved ");
    server.send("stop");
    assert_eq!(server.wait_exit(Duration::from_secs(60)), Some(0));

    let mut server = start_server(&args, Stdio::piped());
    server.expect_line("server started", Duration::from_secs(300));
    let show = format!("probe-nodes show {} {} {}", ids[0], ids[1], ids[2]);
    console(&mut server, &show, &format!("node {}", ids[2]));
    server.pump();
    let output = server.output();
    let expect = [
        format!("node {} at [71.5, 266.5, 1.5] parent none", ids[0]),
        format!("node {} at [73.5, 266.5, 1.5] parent {}", ids[1], ids[0]),
        format!("node {} at [75.5, 266.5, 1.5] parent {}", ids[2], ids[0]),
    ];
    for line in expect {
        assert!(
            output.contains(&line),
            "'{line}' after a restart:\n{output}"
        );
    }
    // Several removed in one call: the one not there is named.
    let remove = format!("probe-nodes remove {} {} 999999999", ids[1], ids[2]);
    console(
        &mut server,
        &remove,
        "removed 2 of 3 nodes, not there: [999999999]",
    );
    console(
        &mut server,
        &format!("probe-nodes show {} {}", ids[1], ids[2]),
        &format!("node {} unknown", ids[2]),
    );
    assert!(
        server
            .output()
            .contains(&format!("node {} unknown", ids[1])),
        "{}",
        server.output()
    );
    server.send("stop");
    assert_eq!(server.wait_exit(Duration::from_secs(60)), Some(0));
}

/// A world's sections and nodes as stored, row for row.
type StoredRows = (
    Vec<(i32, i32, i32, bool, bool)>,
    Vec<(i64, i32, i32, i32, Vec<u8>)>,
);

fn stored_rows(database: &std::path::Path) -> StoredRows {
    let c = Connection::open(database).expect("open");
    let sections = c
        .prepare("SELECT sx, sy, sz, save_enabled, generated FROM section ORDER BY sx, sy, sz")
        .unwrap()
        .query_map([], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let nodes = c
        .prepare("SELECT id, sx, sy, sz, data FROM node ORDER BY id")
        .unwrap()
        .query_map([], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    (sections, nodes)
}

#[test]
fn a_backup_taken_while_a_player_plays_restores_section_for_section_byte_for_byte() {
    let scratch = Scratch::new();
    scratch.add_game();
    let (status, output) = run_headless(
        &scratch,
        &["pregen", "--radius", "2", "--height", "0"].map(String::from),
    );
    assert_eq!(status, Some(0), "{output}");
    let (mut server, address) = start_game(&scratch, &[]);
    let mut player = join(&address, "stays");
    ping(&mut player, b"before");
    let file = scratch.dir.path().join("world.backup");
    console(
        &mut server,
        &format!("backup {}", file.display()),
        "backup started into",
    );
    ping(&mut player, b"during");
    let done = server
        .wait_for("backup done in", Duration::from_secs(120))
        .unwrap_or_else(|| panic!("the backup ends:\n{}", server.output()));
    assert!(done.contains(" sections, "), "{done}");
    ping(&mut player, b"after");
    // Never over a file that is there.
    console(
        &mut server,
        &format!("backup {}", file.display()),
        "exists: remove it or name another file",
    );
    server.stop_cleanly();

    let inspected = run_headless_args(&["inspect".to_string(), file.display().to_string()]);
    assert!(
        inspected.contains("sections of 2x2x2 chunks of 32x32x32 voxels")
            && inspected.contains("[0, 0, 0]")
            && inspected.contains("generated saved"),
        "{inspected}"
    );
    let one = run_headless_args(&[
        "inspect".to_string(),
        file.display().to_string(),
        "--section".into(),
        "0,0,0".into(),
    ]);
    assert!(
        one.contains("chunk") && one.contains("buildat_voxel_data ("),
        "{one}"
    );

    let restored = scratch.dir.path().join("restored");
    let restore = |scratch: &Scratch| {
        let mut args = vec!["restore".to_string(), file.display().to_string()];
        args.extend(with_world(scratch.server_args(), &restored));
        let mut server = start_server(&args, Stdio::null());
        let status = server.wait_exit(Duration::from_secs(300));
        (status, server.output())
    };
    let (status, output) = restore(&scratch);
    assert_eq!(status, Some(0), "{output}");
    assert!(output.contains("restore done in"), "{output}");
    // Section for section, byte for byte: what the backup holds is what the
    // world held (sections generated after it, around the player, aside).
    let (original_sections, original_nodes) = stored_rows(&scratch.world().join("world.sqlite"));
    let (sections, nodes) = stored_rows(&restored.join("world.sqlite"));
    assert!(sections.len() >= 25, "{} sections", sections.len());
    for section in &sections {
        assert!(original_sections.contains(section), "{section:?}");
    }
    assert!(!nodes.is_empty());
    for node in &nodes {
        assert!(
            original_nodes.iter().any(|n| n == node),
            "node {} differs or is missing",
            node.0
        );
    }
    // The world's own fields; the modules' tables the server added after
    // them are not taken from a backup (a headless restore adds none).
    let original = std::fs::read_to_string(scratch.world().join("world.toml")).unwrap();
    let restored_toml = std::fs::read_to_string(restored.join("world.toml")).unwrap();
    assert!(
        original.starts_with(&restored_toml),
        "{restored_toml}
---
{original}"
    );
    // Not twice into one world.
    let (status, output) = restore(&scratch);
    assert_ne!(status, Some(0), "{output}");
    assert!(output.contains("restore into a new world"), "{output}");
}

/// The permission bits of `path`, not following a symlink.
fn mode_of(path: &std::path::Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::symlink_metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o777
}

/// The world's directory is 0700 and its secrets 0600 (whatever the
/// umask: the tests run under the usual 022).
fn assert_private(world: &std::path::Path) {
    assert_eq!(mode_of(world), 0o700, "{}", world.display());
    for name in ["world.toml", "world.sqlite"] {
        assert_eq!(mode_of(&world.join(name)), 0o600, "{name}");
    }
    for name in ["world.sqlite-wal", "world.sqlite-shm", "tls/key.pem"] {
        if world.join(name).exists() {
            assert_eq!(mode_of(&world.join(name)), 0o600, "{name}");
        }
    }
}

#[test]
fn a_world_is_private_and_its_backups_never_replace_a_file() {
    let scratch = Scratch::new();
    scratch.add_game();
    let (status, output) = run_headless(
        &scratch,
        &["pregen", "--radius", "1", "--height", "0"].map(String::from),
    );
    assert_eq!(status, Some(0), "{output}");
    let (mut server, _) = start_game(&scratch, &["network.tls=on"]);
    assert_private(&scratch.world());
    assert_eq!(mode_of(&scratch.world().join("tls/key.pem")), 0o600);

    let theirs = scratch.dir.path().join("theirs.txt");
    std::fs::write(&theirs, b"someone else's").unwrap();
    let link = scratch.dir.path().join("link.backup");
    std::os::unix::fs::symlink(&theirs, &link).unwrap();
    for taken in [&theirs, &link] {
        console(
            &mut server,
            &format!("backup {}", taken.display()),
            "exists: remove it or name another file",
        );
    }
    assert_eq!(std::fs::read(&theirs).unwrap(), b"someone else's");
    let file = scratch.dir.path().join("fresh.backup");
    console(
        &mut server,
        &format!("backup {}", file.display()),
        "backup started into",
    );
    server
        .wait_for("backup done in", Duration::from_secs(120))
        .unwrap_or_else(|| panic!("the backup ends:\n{}", server.output()));
    server.stop_cleanly();
    assert_eq!(mode_of(&file), 0o600);
    assert_private(&scratch.world());
}

#[test]
fn a_backup_cannot_redirect_the_world_it_restores() {
    let scratch = Scratch::new();
    scratch.add_world(false);
    let (status, output) = run_headless(
        &scratch,
        &["pregen", "--radius", "1", "--height", "0"].map(String::from),
    );
    assert_eq!(status, Some(0), "{output}");
    // A crafted world.toml in the backup: its storage elsewhere (dotted
    // keys, which a line by line filter of `storage = ` misses).
    let elsewhere = scratch.dir.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let elsewhere_db = elsewhere.join("stolen.sqlite");
    std::fs::write(
        scratch.world().join("world.toml"),
        format!(
            "world.name = \"Crafted\"\nworld.seed = 7\nworld.storage = \"sqlite:{}\"\n",
            elsewhere_db.display()
        ),
    )
    .unwrap();
    let file = scratch.dir.path().join("crafted.backup");
    let (status, output) = run_headless(
        &scratch,
        &[
            "backup".to_string(),
            file.display().to_string(),
            "--set".into(),
            "voxelworld.storage=sqlite".into(),
        ],
    );
    assert_eq!(status, Some(0), "{output}");
    assert!(!elsewhere_db.exists());

    let restored = scratch.dir.path().join("restored");
    let mut args = vec!["restore".to_string(), file.display().to_string()];
    args.extend(with_world(scratch.server_args(), &restored));
    let mut server = start_server(&args, Stdio::null());
    assert_eq!(
        server.wait_exit(Duration::from_secs(300)),
        Some(0),
        "{}",
        server.output()
    );
    let settings = std::fs::read_to_string(restored.join("world.toml")).unwrap();
    assert!(settings.contains("name = \"Crafted\""), "{settings}");
    assert!(!settings.contains("elsewhere"), "{settings}");
    // The restored world, started again, stores in its own folder.
    let mut args = vec!["pregen".to_string(), "--radius".into(), "2".into()];
    args.extend(with_world(scratch.server_args(), &restored));
    let mut server = start_server(&args, Stdio::null());
    assert_eq!(
        server.wait_exit(Duration::from_secs(300)),
        Some(0),
        "{}",
        server.output()
    );
    assert!(
        server.output().contains(&format!(
            "world storage: {}",
            restored.join("world.sqlite").display()
        )),
        "{}",
        server.output()
    );
    assert_eq!(
        std::fs::read_dir(&elsewhere).unwrap().count(),
        0,
        "nothing written elsewhere"
    );
    assert_private(&restored);
}
