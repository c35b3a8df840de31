//! End-to-end tests of active voxels: rules over loaded voxels near players, voxel timers kept with their sections.
//!
//! Through the real server binary with the default game, `active`, and a
//! small test module written here (`active_probe`): it registers an ABM on
//! grass next to air, logs each batch it is told, sets a timer on the
//! first voxel of a batch when `active_probe.set_timer` is on, logs the
//! timers that fire, and has console commands to set many timers around
//! the player (`probe_many N`) and to load far sections, pushing the
//! player's out of memory (`probe_load N`).

use std::time::Duration;

use crate::common::{Scratch, Server, console, join, start_game};

const PROBE_TOML: &str = r#"[package]
name = "buildat-test-active-probe"
version = "0.1.0"
edition = "2024"
publish = false

[lib]
crate-type = ["cdylib"]

[dependencies]
buildat-interface.workspace = true
buildat-active-api.workspace = true
buildat-main-api.workspace = true
buildat-voxelworld-api.workspace = true
serde.workspace = true
clap.workspace = true
"#;

const PROBE_META: &str = r#"{
  "dependencies": [
    {"module": "active"},
    {"module": "main"},
    {"module": "voxelworld"}
  ]
}
"#;

const PROBE_LIB: &str = r#"//! The active e2e tests' module: an ABM on grass, a timer, many timers.
//!
//! Owns: nothing but its log lines. Does not own: anything else.

use buildat_active_api::{
    Abm, AbmBatch, GetTimers, RegisterAbm, SetTimers, TimersFired, VoxelTimer, abm_event,
    timers_event,
};
use buildat_interface::settings::Settings;
use buildat_interface::{Host, Module, ModuleError, Receive, events, export_module, log};
use buildat_main_api::GetPlayers;
use buildat_voxelworld_api::{GetVoxels, LoadOrGenerateSection};

buildat_interface::settings! {
    /// The probe's switches.
    pub(crate) struct ProbeSettings in "active_probe" {
        /// Set a timer on the first voxel of the first batch.
        set_timer: bool = false,
        /// Its seconds.
        timer_seconds: f64 = 0.5,
    }
}

/// `probe_many N`: at least N timers on voxels around the player.
#[derive(clap::Parser)]
#[command(name = "probe_many", about = "set many timers around the player")]
struct Many {
    count: u32,
}

/// `probe_load N`: load N far sections.
#[derive(clap::Parser)]
#[command(name = "probe_load", about = "load far sections")]
struct Load {
    count: i32,
}

struct Probe {
    host: Host,
    set_timer: bool,
    seconds: f64,
    timer_set: bool,
}

const NAME: &str = "active_probe";

impl Module for Probe {
    fn create(host: Host) -> Result<Self, ModuleError> {
        let settings = ProbeSettings::read(&host)?;
        Ok(Self {
            host,
            set_timer: settings.set_timer,
            seconds: settings.timer_seconds,
            timer_set: false,
        })
    }

    fn receive(table: &mut Receive<Self>) {
        table
            .settings::<ProbeSettings>()
            .event(|p, _: events::Start| {
                p.host.call(&RegisterAbm {
                    abm: Abm {
                        name: "active_probe:grass".into(),
                        module: NAME.into(),
                        nodes: vec!["grass".into()],
                        neighbours: vec!["air".into()],
                        interval_seconds: 0.5,
                        chance: 1,
                    },
                })?;
                Ok(())
            })
            .event_named(abm_event(NAME), |p, batch: AbmBatch| p.batch(batch))
            .event_named(timers_event(NAME), |_, fired: TimersFired| {
                for t in fired.timers {
                    log::info!(
                        "active_probe timer fired at {:?} tag {} late {:.3}",
                        t.pos,
                        t.tag,
                        t.late_seconds
                    );
                }
                Ok(())
            })
            .command(None, |p, _, many: Many| p.many(many.count))
            .command(None, |p, _, load: Load| {
                for i in 0..load.count {
                    p.host.call(&LoadOrGenerateSection {
                        section: [1000 + i, 0, 0],
                    })?;
                }
                Ok(format!("probe_load done {}", load.count))
            });
    }
}

impl Probe {
    fn batch(&mut self, batch: AbmBatch) -> Result<(), ModuleError> {
        log::info!(
            "active_probe batch {} of {} voxels",
            batch.name,
            batch.voxels.len()
        );
        if self.set_timer && !self.timer_set {
            if let Some((pos, _)) = batch.voxels.first() {
                self.host.call(&SetTimers {
                    module: NAME.into(),
                    timers: vec![VoxelTimer {
                        pos: *pos,
                        seconds: self.seconds,
                        tag: "probe".into(),
                    }],
                })?;
                self.timer_set = true;
                log::info!("active_probe timer set at {pos:?}");
            }
        }
        Ok(())
    }

    fn many(&mut self, count: u32) -> Result<String, ModuleError> {
        let players = self.host.call(&GetPlayers {})?;
        let Some(player) = players.first() else {
            return Ok("probe_many: nobody plays".into());
        };
        let c = player.position.map(|v| (v.floor() as i32).div_euclid(32));
        let mut chunks = Vec::new();
        // The chunks streamed to the player (a view radius of 2).
        for x in -2i32..=2 {
            for y in -2i32..=2 {
                for z in -2i32..=2 {
                    if x * x + y * y + z * z <= 4 {
                        chunks.push([c[0] + x, c[1] + y, c[2] + z]);
                    }
                }
            }
        }
        chunks.sort_by_key(|d| {
            (d[0] - c[0]).pow(2) + (d[1] - c[1]).pow(2) + (d[2] - c[2]).pow(2)
        });
        let mut total = 0u32;
        for chunk in chunks {
            if total >= count {
                break;
            }
            let origin = chunk.map(|v| v * 32);
            let there = self.host.call(&GetVoxels {
                positions: vec![origin],
            })?;
            if there.first().copied().flatten().is_none() {
                continue;
            }
            let positions: Vec<[i32; 3]> = (0..4096)
                .map(|i| [origin[0] + i % 32, origin[1] + (i / 32) % 32, origin[2] + i / 1024])
                .collect();
            self.host.call(&SetTimers {
                module: NAME.into(),
                timers: positions
                    .iter()
                    .map(|pos| VoxelTimer {
                        pos: *pos,
                        seconds: 1e6,
                        tag: "many".into(),
                    })
                    .collect(),
            })?;
            let left = self.host.call(&GetTimers {
                module: NAME.into(),
                positions,
            })?;
            total += left.iter().filter(|l| l.is_some()).count() as u32;
        }
        Ok(format!("probe_many set {total}"))
    }
}

export_module!(Probe);
"#;

/// The default game with `active` and the probe.
fn setup() -> Scratch {
    let scratch = Scratch::new();
    scratch.add_game();
    scratch.add_modules(&["active"]);
    let probe = scratch.modules().join("active_probe");
    std::fs::create_dir_all(probe.join("src")).expect("probe dir");
    std::fs::write(probe.join("Cargo.toml"), PROBE_TOML).expect("Cargo.toml");
    std::fs::write(probe.join("meta.json"), PROBE_META).expect("meta.json");
    std::fs::write(probe.join("src").join("lib.rs"), PROBE_LIB).expect("lib.rs");
    scratch
}

/// The number before `word` in the console's `active` line.
fn count_before(line: &str, word: &str) -> u64 {
    let words: Vec<&str> = line.split_whitespace().collect();
    let at = words
        .iter()
        .position(|w| w.trim_matches(',') == word)
        .unwrap_or_else(|| panic!("'{word}' in {line}"));
    words[at - 1]
        .trim_matches(|c: char| !c.is_ascii_digit())
        .parse()
        .unwrap_or_else(|_| panic!("a number before '{word}' in {line}"))
}

/// The `timers N loaded` of the console's `active`.
fn timers_loaded(server: &mut Server) -> u64 {
    let line = console(server, "active", "active: ");
    let tail = line.split("timers ").last().expect("timers");
    count_before(&format!("timers {tail}"), "loaded")
}

/// A player joins: the ABM's batches of grass near it reach the probe,
/// counted on the console; a timer set on a voxel fires once; the web
/// page and `/metrics` show the backlog and the timers.
#[test]
fn abm_batches_reach_their_module_and_a_timer_fires() {
    let scratch = setup();
    scratch.add_web();
    let web = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .to_string();
    let (mut server, address) = start_game(
        &scratch,
        &[
            "active_probe.set_timer=true",
            "active_probe.timer_seconds=0.5",
            &format!("web.listen={web}"),
        ],
    );
    let _ann = join(&address, "ann");
    let batch = server.expect_line(
        "active_probe batch active_probe:grass of",
        Duration::from_secs(60),
    );
    assert!(!batch.contains(" of 0 voxels"), "{batch}");
    server.expect_line("active_probe timer set at", Duration::from_secs(30));
    let fired = server.expect_line("active_probe timer fired at", Duration::from_secs(30));
    assert!(fired.contains("tag probe"), "{fired}");
    let line = console(&mut server, "active", "active: ");
    assert!(line.contains("1 abms"), "{line}");
    assert!(count_before(&line, "voxels") > 0, "{line}");
    let metrics = buildat_harness::http::request(&web, "GET", "/metrics", None)
        .expect("/metrics")
        .text();
    assert!(
        metrics.contains("\nbuildat_active_backlog_chunks "),
        "{metrics}"
    );
    assert!(
        metrics.contains("\nbuildat_active_timers_fired_total 1\n"),
        "{metrics}"
    );
    let page = buildat_harness::http::request(&web, "GET", "/", None)
        .expect("the status page")
        .text();
    assert!(page.contains("active voxels"), "{page}");
    assert!(page.contains("timers 0 loaded, 1 fired"), "{page}");
    std::thread::sleep(Duration::from_secs(1));
    server.pump();
    assert_eq!(
        server.lines_with(0, "active_probe timer fired at").len(),
        1,
        "once"
    );
    server.stop_cleanly();
}

/// A timer set before a stop fires once after the restart, when its
/// section is loaded again, late by the time the server was away.
#[test]
fn a_timer_survives_a_restart_and_fires_late_once() {
    let scratch = setup();
    let (mut server, address) = start_game(
        &scratch,
        &[
            "active_probe.set_timer=true",
            "active_probe.timer_seconds=4",
        ],
    );
    let ann = join(&address, "ann");
    let set = server.expect_line("active_probe timer set at", Duration::from_secs(60));
    drop(ann);
    server.stop_cleanly();
    assert!(
        !server.output().contains("active_probe timer fired"),
        "not before the stop"
    );
    std::thread::sleep(Duration::from_secs(4));

    let (mut server, address) = start_game(&scratch, &[]);
    let _ann = join(&address, "ann");
    let fired = server.expect_line("active_probe timer fired at", Duration::from_secs(60));
    let pos = set.split("set at ").last().expect("a position");
    assert!(fired.contains(pos.trim()), "{fired} / {set}");
    let late: f64 = fired
        .split("late ")
        .last()
        .and_then(|l| l.trim().parse().ok())
        .unwrap_or_else(|| panic!("late in {fired}"));
    // Due 4 s after it was set, before a stop, 4 s away and a start: late.
    assert!(late > 0.0, "{fired}");
    std::thread::sleep(Duration::from_secs(2));
    server.pump();
    assert_eq!(
        server.lines_with(0, "active_probe timer fired at").len(),
        1,
        "once"
    );
    server.stop_cleanly();
}

/// 100,000 timers on voxels around the player: in memory while their
/// sections are, none once the sections have left memory (the player gone,
/// far sections loaded past the budget), all back when the player returns.
#[test]
fn timers_in_unloaded_sections_are_not_in_memory() {
    let scratch = setup();
    let (mut server, address) = start_game(
        &scratch,
        &[
            "voxelworld.view_radius=2",
            "voxelworld.max_loaded_sections=40",
        ],
    );
    let ann = join(&address, "ann");
    server.expect_line("active_probe batch", Duration::from_secs(60));
    let mut set = 0;
    for _ in 0..20 {
        let line = console(&mut server, "probe_many 100000", "probe_many");
        set = count_before(&format!("{line} x"), "x");
        if set >= 100_000 {
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    assert!(set >= 100_000, "{set}");
    assert_eq!(timers_loaded(&mut server), set);

    drop(ann);
    console(&mut server, "probe_load 48", "probe_load done");
    let loaded = crate::common::wait_until(Duration::from_secs(30), || {
        let n = timers_loaded(&mut server);
        (n == 0).then_some(n)
    });
    assert_eq!(loaded, Some(0), "{}", server.output());

    let _ann = join(&address, "ann");
    let back = crate::common::wait_until(Duration::from_secs(60), || {
        let n = timers_loaded(&mut server);
        (n == set).then_some(n)
    });
    assert_eq!(back, Some(set), "{}", server.output());
    server.stop_cleanly();
}
