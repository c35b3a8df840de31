//! `timerbench`: voxel timers (issue 46's third goal) through the real
//! server with the default game and `active`: N timers (default 100,000)
//! set on voxels around a player, what the server costs while their
//! sections are out of memory against the same world without timers, and
//! how long they take to come back and fire (all late, each once) when the
//! player returns. A small module written into the scratch workspace
//! (`timer_probe`) sets them and counts what fires.
//!
//! Owns: the timer bench and its report. Does not own: the timers (the
//! `active` module) or the sections' loading (`voxelworld`).

use std::time::{Duration, Instant};

use anyhow::Context;

use crate::layout::{Layout, write_module_workspace};
use crate::proc_stats::cpu_percent;
use crate::raw_client::RawClient;
use crate::server::{Server, ServerOptions};

#[derive(Debug, Clone, clap::Args)]
pub struct TimerOptions {
    /// Timers to set (4096 a chunk, around the player).
    #[arg(long, default_value_t = 100_000)]
    pub timers: u32,
    /// Seconds of each timer; the player stays away longer, so all fire late.
    #[arg(long, default_value_t = 60.0)]
    pub seconds: f64,
    /// Seconds over which the idle server is measured (without timers, then
    /// with them stored and unloaded).
    #[arg(long, default_value_t = 10.0)]
    pub idle: f64,
}

const PROBE_TOML: &str = r#"[package]
name = "buildat-bench-timer-probe"
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

const PROBE_LIB: &str = r#"//! The timer bench's module: sets many timers around the player, loads far
//! sections, counts the timers that fire.
//!
//! Owns: its counts. Does not own: anything else.

use std::collections::HashSet;

use buildat_active_api::{SetTimers, TimersFired, VoxelTimer, timers_event};
use buildat_interface::{Host, Module, ModuleError, Receive, export_module};
use buildat_main_api::GetPlayers;
use buildat_voxelworld_api::{GetVoxels, LoadOrGenerateSection};

/// `timer_probe_set N SECONDS`: at least N timers on voxels around the player.
#[derive(clap::Parser)]
#[command(name = "timer_probe_set", about = "set many timers around the player")]
struct Set {
    count: u32,
    seconds: f64,
}

/// `timer_probe_load N FROM`: load N far sections, from x = FROM on.
#[derive(clap::Parser)]
#[command(name = "timer_probe_load", about = "load far sections")]
struct Load {
    count: i32,
    from: i32,
}

/// `timer_probe`: what fired.
#[derive(clap::Parser)]
#[command(name = "timer_probe", about = "the timers fired")]
struct Fired {}

struct Probe {
    host: Host,
    fired: u64,
    positions: HashSet<[i32; 3]>,
    late_min: f64,
    late_max: f64,
}

const NAME: &str = "timer_probe";

impl Module for Probe {
    fn create(host: Host) -> Result<Self, ModuleError> {
        Ok(Self {
            host,
            fired: 0,
            positions: HashSet::new(),
            late_min: f64::INFINITY,
            late_max: 0.0,
        })
    }

    fn receive(table: &mut Receive<Self>) {
        table
            .event_named(timers_event(NAME), |p, fired: TimersFired| {
                for t in fired.timers {
                    p.fired += 1;
                    p.positions.insert(t.pos);
                    p.late_min = p.late_min.min(t.late_seconds);
                    p.late_max = p.late_max.max(t.late_seconds);
                }
                Ok(())
            })
            .command(None, |p, _, set: Set| p.set(set.count, set.seconds))
            .command(None, |p, _, load: Load| {
                for i in 0..load.count {
                    p.host.call(&LoadOrGenerateSection {
                        section: [load.from + i, 0, 0],
                    })?;
                }
                Ok(format!("timer_probe_load: done {}", load.count))
            })
            .command(None, |p, _, _: Fired| {
                Ok(format!(
                    "timer_probe: {} fired at {} positions, late {:.1} to {:.1} s",
                    p.fired,
                    p.positions.len(),
                    if p.fired == 0 { 0.0 } else { p.late_min },
                    p.late_max
                ))
            });
    }
}

impl Probe {
    fn set(&mut self, count: u32, seconds: f64) -> Result<String, ModuleError> {
        let players = self.host.call(&GetPlayers {})?;
        let Some(player) = players.first() else {
            return Ok("timer_probe_set: nobody plays".into());
        };
        let c = player.position.map(|v| (v.floor() as i32).div_euclid(32));
        let mut chunks = Vec::new();
        for x in -2i32..=2 {
            for y in -2i32..=2 {
                for z in -2i32..=2 {
                    if x * x + y * y + z * z <= 4 {
                        chunks.push([c[0] + x, c[1] + y, c[2] + z]);
                    }
                }
            }
        }
        chunks.sort_by_key(|d| (d[0] - c[0]).pow(2) + (d[1] - c[1]).pow(2) + (d[2] - c[2]).pow(2));
        let mut total = 0u32;
        for chunk in chunks {
            if total >= count {
                break;
            }
            let origin = chunk.map(|v| v * 32);
            let there = self.host.call(&GetVoxels { positions: vec![origin] })?;
            if there.first().copied().flatten().is_none() {
                continue;
            }
            let n = (count - total).min(4096) as i32;
            self.host.call(&SetTimers {
                module: NAME.into(),
                timers: (0..n)
                    .map(|i| VoxelTimer {
                        pos: [origin[0] + i % 32, origin[1] + (i / 32) % 32, origin[2] + i / 1024],
                        seconds,
                        tag: "bench".into(),
                    })
                    .collect(),
            })?;
            total += n as u32;
        }
        Ok(format!("timer_probe_set: {total} set"))
    }
}

export_module!(Probe);
"#;

/// Writes the probe module into a scratch module folder; the folder.
fn write_probe(layout: &Layout) -> anyhow::Result<std::path::PathBuf> {
    let modules = layout.path("bench_modules").join("modules");
    write_module_workspace(&modules)?;
    let probe = modules.join("timer_probe");
    std::fs::create_dir_all(probe.join("src")).context("the probe's folder")?;
    std::fs::write(probe.join("Cargo.toml"), PROBE_TOML)?;
    std::fs::write(probe.join("meta.json"), PROBE_META)?;
    std::fs::write(probe.join("src").join("lib.rs"), PROBE_LIB)?;
    Ok(modules)
}

/// The number before `word` in `line` (`timers 5 loaded`: 5 before
/// "loaded").
pub fn number_before(line: &str, word: &str) -> Option<u64> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let at = words.iter().position(|w| w.trim_matches(',') == word)?;
    words
        .get(at.checked_sub(1)?)?
        .trim_matches(|c: char| !c.is_ascii_digit())
        .parse()
        .ok()
}

/// The console's `active` line.
fn active(server: &mut Server) -> anyhow::Result<String> {
    server.command("active", &["active: "], Duration::from_secs(10))
}

/// Asks `active` every 100 ms until `done` accepts its line (or `timeout`);
/// the line and the seconds it took.
fn until_active(
    server: &mut Server,
    timeout: Duration,
    done: impl Fn(&str) -> bool,
) -> anyhow::Result<(String, f64)> {
    let started = Instant::now();
    loop {
        let line = active(server)?;
        if done(&line) {
            return Ok((line, started.elapsed().as_secs_f64()));
        }
        if started.elapsed() > timeout {
            anyhow::bail!("not within {timeout:?}: {line}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The server idle for `seconds`: its CPU percent and RSS at the end, and
/// active's tick p99 then.
fn idle(server: &mut Server, seconds: f64) -> anyhow::Result<String> {
    let a = server.sample().context("a /proc sample")?;
    std::thread::sleep(Duration::from_secs_f64(seconds));
    server.pump();
    let b = server.sample().context("a /proc sample")?;
    let line = active(server)?;
    Ok(format!(
        "server CPU {:.1} % over {seconds:.0} s, RSS {} MiB; {line}",
        cpu_percent(&a, &b),
        b.rss_kib / 1024
    ))
}

/// Player `ann` leaves, far sections (new ones, from x = `far` on) push
/// its sections out of memory; waits until `active` holds no timer.
fn leave(server: &mut Server, ann: RawClient, far: i32) -> anyhow::Result<f64> {
    drop(ann);
    server.command(
        &format!("timer_probe_load 48 {far}"),
        &["timer_probe_load: "],
        Duration::from_secs(120),
    )?;
    let (_, took) = until_active(server, Duration::from_secs(60), |l| {
        number_before(l, "loaded") == Some(0)
    })?;
    Ok(took)
}

pub fn run(layout: &Layout, options: &TimerOptions) -> anyhow::Result<bool> {
    let modules = write_probe(layout)?;
    let mut server = Server::start(
        layout,
        &ServerOptions {
            world: layout.path("world"),
            extra_module_paths: vec![modules],
            settings: vec![
                "voxelworld.view_radius=2".into(),
                "voxelworld.max_loaded_sections=40".into(),
                // No ABM rounds (timers still fire): the grass ABMs would
                // change voxels under timers, which drops them.
                "active.enabled=false".into(),
                "web.listen=127.0.0.1:0".into(),
                // No creatures: a creature's node keeps its section in
                // memory, and the timers there with it.
                "creatures.count=0".into(),
                "creatures.persistent=0".into(),
            ],
            tick_ms: 100,
            watchdog_ms: None,
            slow_handler_ms: None,
            log_file: layout.path("server.log"),
        },
    )?;
    println!("server {} listening on {}", server.pid(), server.address);
    let join = |server: &Server| {
        RawClient::join(&server.address, "ann", Duration::from_secs(60)).context("ann joins")
    };
    let mut lines = Vec::new();

    // The world without timers: the player's sections loaded, then out.
    let ann = join(&server)?;
    std::thread::sleep(Duration::from_secs(5));
    leave(&mut server, ann, 1000)?;
    std::thread::sleep(Duration::from_secs(2));
    lines.push(format!(
        "no timers, player away:     {}",
        idle(&mut server, options.idle)?
    ));

    // The timers set around the player.
    let ann = join(&server)?;
    std::thread::sleep(Duration::from_secs(5));
    let started = Instant::now();
    let set_line = server.command(
        &format!("timer_probe_set {} {}", options.timers, options.seconds),
        &["timer_probe_set: "],
        Duration::from_secs(120),
    )?;
    let set_at = Instant::now();
    let set = number_before(&set_line, "set").unwrap_or(0);
    lines.push(format!(
        "{set} timers set ({} s each) in {:.2} s",
        options.seconds,
        started.elapsed().as_secs_f64()
    ));
    lines.push(format!(
        "timers loaded, player here: {}",
        idle(&mut server, 2.0)?
    ));
    let gone = leave(&mut server, ann, 2000)?;
    lines.push(format!(
        "sections out of memory {gone:.1} s after the far sections were loaded"
    ));
    std::thread::sleep(Duration::from_secs(2));
    lines.push(format!(
        "{set} timers stored, away:  {}",
        idle(&mut server, options.idle)?
    ));
    let due = Duration::from_secs_f64(options.seconds + 2.0);
    if let Some(wait) = due.checked_sub(set_at.elapsed()) {
        std::thread::sleep(wait);
    }

    // The player returns: its sections load, the timers with them, late.
    let before = number_before(&active(&mut server)?, "fired").unwrap_or(0);
    if before > 0 {
        lines.push(format!(
            "note: {before} fired before the player came back (--seconds too short)"
        ));
    }
    let back = Instant::now();
    let _ann = join(&server)?;
    let joined = back.elapsed().as_secs_f64();
    // Done when all fired, or (a timer whose voxel changed is dropped) when
    // none is left in memory after some fired.
    let (line, loaded_in) = until_active(&mut server, Duration::from_secs(120), |l| {
        let fired = number_before(l, "fired").unwrap_or(0);
        fired >= set || (fired > before && number_before(l, "loaded") == Some(0))
    })?;
    lines.push(format!(
        "player back: joined in {joined:.2} s; {} of {set} fired {:.2} s after the join",
        number_before(&line, "fired").unwrap_or(0) - before,
        loaded_in
    ));
    std::thread::sleep(Duration::from_secs(3));
    let fired = server.command("timer_probe", &["timer_probe: "], Duration::from_secs(10))?;
    let after = active(&mut server)?;
    lines.push(format!("3 s later: {fired}"));
    lines.push(format!("           {after}"));
    let once = number_before(&fired, "fired") == Some(set)
        && number_before(&fired, "positions") == Some(set);
    let problems = server.problems_since(0);
    let status = server.stop(Duration::from_secs(60));
    lines.push(format!(
        "server: {} ERROR/WARN lines; exit status after `stop`: {}",
        problems.len(),
        status.map_or("did not exit".to_string(), |s| s.to_string())
    ));
    for line in problems.iter().take(5) {
        lines.push(format!("  server: {line}"));
    }
    let pass = set >= u64::from(options.timers) && once && before == 0 && status == Some(0);
    lines.push(format!(
        "timerbench: {}",
        if pass {
            "PASS"
        } else {
            "FAIL (timers not all set, or not each fired once)"
        }
    ));
    println!("{}", lines.join("\n"));
    Ok(pass)
}

#[cfg(test)]
mod tests {
    use super::number_before;

    #[test]
    fn a_count_is_the_number_before_its_word() {
        let line = "active: 2 abms, 9 active chunks (1 players), backlog 0 chunks, tick 12 us \
                    (p99 40 us, budget 3000 us, 0 ticks over), 5 voxels delivered, timers 102400 loaded 7 fired";
        assert_eq!(number_before(line, "loaded"), Some(102_400));
        assert_eq!(number_before(line, "fired"), Some(7));
        assert_eq!(number_before(line, "abms"), Some(2));
        assert_eq!(number_before(line, "missing"), None);
        assert_eq!(number_before("fired first", "fired"), None);
    }
}
