//! The `creatures` module in the real server: creatures appear on the
//! terrain and move, a reload keeps every one of them, and a restart, or
//! a backup restored into a new world, brings the persistent ones back
//! without making them again.

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::{Scratch, Server, run_headless, start_game, start_server, with_world};
use buildat_harness::creatures_report::CreaturesReport as Report;
use buildat_harness::raw_client::RawClient;

const TRANSIENT: usize = 4;
const PERSISTENT: usize = 3;

fn start(scratch: &Scratch) -> Server {
    start_with(scratch, TRANSIENT, 12)
}

/// A server whose creatures are `transient` chickens (and the persistent
/// ones) within `radius` voxels of the origin.
fn start_with(scratch: &Scratch, transient: usize, radius: u32) -> Server {
    start_in(scratch, &scratch.world(), transient, radius)
}

/// [`start_with`] on the world in `world`.
fn start_in(scratch: &Scratch, world: &std::path::Path, transient: usize, radius: u32) -> Server {
    let mut args = with_world(scratch.server_args(), world);
    args.extend(
        [
            "--no-watch",
            "--set",
            &format!("creatures.count={transient}"),
            "--set",
            &format!("creatures.persistent={PERSISTENT}"),
            "--set",
            &format!("creatures.radius={radius}"),
            // No player joins: every creature is simulated all the same.
            "--set",
            "creatures.active_radius=0",
        ]
        .map(String::from),
    );
    let mut server = start_server(&args, Stdio::piped());
    server.expect_line("server started", Duration::from_secs(300));
    server
}

/// The persistent kinds' creatures (cows and sheep).
fn persistent(report: &Report) -> usize {
    report.kind("cow") + report.kind("sheep")
}

fn report(server: &mut Server) -> Report {
    server.pump();
    let from = server.seen.len();
    server.send("creatures");
    let line = server
        .wait_for_from(from, "moved in the last second", Duration::from_secs(30))
        .unwrap_or_else(|| panic!("the creatures command answers:\n{}", server.output()));
    Report::parse(&line).unwrap_or_else(|| panic!("a report: {line}"))
}

/// Asks for reports until one satisfies `done`.
fn wait_report(server: &mut Server, timeout: Duration, done: impl Fn(&Report) -> bool) -> Report {
    let deadline = Instant::now() + timeout;
    loop {
        let report = report(server);
        if done(&report) {
            return report;
        }
        assert!(
            Instant::now() < deadline,
            "last report {report:?}:\n{}",
            server.output()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

fn all_there(report: &Report) -> bool {
    report.kind("chicken") == TRANSIENT && persistent(report) == PERSISTENT && report.to_place == 0
}

/// Reports for a while (past an adoption round, every 5 s): the counts
/// never go over what the settings ask.
fn never_more_than_asked(server: &mut Server, seconds: u64) -> Report {
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let mut last = report(server);
    while Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(700));
        last = report(server);
        assert!(
            last.kind("chicken") <= TRANSIENT && persistent(&last) <= PERSISTENT,
            "duplicated: {last:?}:\n{}",
            server.output()
        );
    }
    last
}

#[test]
fn creatures_wander_survive_a_reload_and_persist_without_duplicates() {
    let scratch = Scratch::new();
    scratch.add_creatures();
    let mut server = start(&scratch);
    let first = wait_report(&mut server, Duration::from_secs(120), all_there);
    assert_eq!(first.total, TRANSIENT + PERSISTENT, "{first:?}");
    // They walk, and on the terrain: none falls for long.
    wait_report(&mut server, Duration::from_secs(30), |r| r.moved > 0);
    wait_report(&mut server, Duration::from_secs(30), |r| {
        r.on_ground == r.total
    });

    server.send("reload creatures");
    server.expect_line("reloaded creatures", Duration::from_secs(300));
    let after_reload = report(&mut server);
    assert!(all_there(&after_reload), "{after_reload:?}");
    let later = never_more_than_asked(&mut server, 7);
    assert!(all_there(&later), "{later:?}");
    wait_report(&mut server, Duration::from_secs(30), |r| r.moved > 0);
    server.stop_cleanly();

    // Counted in the world's storage, not in a file beside it.
    assert!(!scratch.world().join("creatures.txt").exists());

    let mut server = start(&scratch);
    let again = wait_report(&mut server, Duration::from_secs(120), all_there);
    assert_eq!(again.total, TRANSIENT + PERSISTENT, "{again:?}");
    let later = never_more_than_asked(&mut server, 7);
    assert!(all_there(&later), "{later:?}");
    server.stop_cleanly();
    let log_lines = server.seen.clone();

    // A backup restored into a new world has the herd and its count: the
    // persistent creatures are found there, not made again.
    let file = scratch.dir.path().join("herd.backup");
    let (status, output) = run_headless(&scratch, &["backup".into(), file.display().to_string()]);
    assert_eq!(status, Some(0), "{output}");
    let restored = scratch.dir.path().join("restored");
    let mut args = vec!["restore".to_string(), file.display().to_string()];
    args.extend(with_world(scratch.server_args(), &restored));
    let mut restore = start_server(&args, Stdio::null());
    assert_eq!(
        restore.wait_exit(Duration::from_secs(300)),
        Some(0),
        "{}",
        restore.output()
    );
    let mut server = start_in(&scratch, &restored, TRANSIENT, 12);
    let back = wait_report(&mut server, Duration::from_secs(120), all_there);
    assert_eq!(back.total, TRANSIENT + PERSISTENT, "{back:?}");
    let later = never_more_than_asked(&mut server, 7);
    assert!(all_there(&later), "{later:?}");
    server.stop_cleanly();
    assert!(
        !log_lines
            .iter()
            .any(|l| l.contains("creatures") && (l.contains("ERROR") || l.contains("WARN"))),
        "{}",
        server.output()
    );
}

#[test]
fn a_crowded_herd_reports_how_crowded_it_is() {
    // 40 chickens (and 3 cows or sheep) made to stay within 4 voxels of the
    // origin: they spawn close together, push apart as they wander, and
    // the report says how many overlap (the separation itself is checked
    // deterministically in the module's unit tests; here, walking at 10
    // ticks a second they still run into each other for a tick at times).
    let scratch = Scratch::new();
    scratch.add_creatures();
    let mut server = start_with(&scratch, 40, 4);
    let first = wait_report(&mut server, Duration::from_secs(120), |r| {
        r.total == 40 + PERSISTENT && r.to_place == 0
    });
    let later = wait_report(&mut server, Duration::from_secs(60), |r| {
        r.crowded < r.total / 2 && r.on_ground == r.total
    });
    assert!(later.total >= first.total, "{later:?}");
    server.stop_cleanly();
}

#[test]
fn creatures_wait_for_a_player_and_sleep_when_left_alone() {
    let scratch = Scratch::new();
    scratch.add_game();
    scratch.add_creatures();
    let (mut server, address) = start_game(
        &scratch,
        &[
            "creatures.count=4",
            "creatures.persistent=0",
            "creatures.radius=12",
            "creatures.active_radius=64",
            "main.free_movement=true",
        ],
    );
    // Nobody near: the herd waits to be placed.
    wait_report(&mut server, Duration::from_secs(60), |r| r.to_place == 4);
    std::thread::sleep(Duration::from_secs(2));
    let waiting = report(&mut server);
    assert_eq!((waiting.total, waiting.to_place), (0, 4), "{waiting:?}");
    let mut player = RawClient::join(&address, "shepherd", Duration::from_secs(60)).expect("joins");
    let placed = wait_report(&mut server, Duration::from_secs(60), |r| r.total == 4);
    assert_eq!(placed.asleep, 0, "{placed:?}");
    // Away: alone for 10 s, they fall asleep (no nodes left)...
    let home = player.spawn;
    let mut position = home;
    let mut go = |player: &mut RawClient, to_x: f64| {
        while (position[0] - to_x).abs() > 0.1 {
            position[0] += (to_x - position[0]).clamp(-15.0, 15.0);
            player
                .send_packet(&buildat_main_api::Move { position })
                .expect("the connection is open");
        }
    };
    go(&mut player, home[0] + 600.0);
    let slept = wait_report(&mut server, Duration::from_secs(60), |r| r.asleep == 4);
    assert_eq!(slept.total, 0, "{slept:?}");
    // ...and back: they wake where they stood.
    go(&mut player, home[0]);
    let woken = wait_report(&mut server, Duration::from_secs(60), |r| r.total == 4);
    assert_eq!((woken.asleep, woken.to_place), (0, 0), "{woken:?}");
    server.stop_cleanly();
}
