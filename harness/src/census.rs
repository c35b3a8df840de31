//! `census ITERATIONS [--bots N] [--reloads R] [--seed S]`: no item is
//! ever duplicated or lost. Bots (`scripts/bots/shuffle.lua`) keep items
//! moving (moves, splits, merges, swaps between their lists, drops and
//! pickups) in a survival world while the harness, again and again:
//! reloads each item module (`inventory`, `items`, `crafting`) under that
//! traffic, and kills the server with SIGKILL (sometimes the bots first,
//! so their transactions are cut off mid-way, sometimes the server first).
//! After each, the census (the inventory module's `census` command: every
//! stack in every inventory, drop and chest, read from the world's
//! storage) must equal the one taken when the items were given out.
//! Drops never expire here (`inventory.drop_seconds=0`), so no item may
//! legitimately vanish.
//!
//! Owns: the census loop and its table. Does not own: the census itself
//! (the inventory module's command) or the bots' play (the Lua script).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::Context;

use crate::crashtest::Random;
use crate::fleet::{Fleet, FleetOptions};
use crate::layout::Layout;
use crate::server::{Server, ServerOptions};

#[derive(Debug, Clone, clap::Args)]
pub struct CensusOptions {
    /// Number of kill -9 iterations.
    pub iterations: u32,
    /// Bots moving items.
    #[arg(long, default_value_t = 5)]
    pub bots: u32,
    /// Reload rounds (each reloads inventory, items and crafting once)
    /// before the kills.
    #[arg(long, default_value_t = 3)]
    pub reloads: u32,
    /// Seed of the timing (default: from the clock; printed).
    #[arg(long)]
    pub seed: Option<u64>,
}

/// What each bot is given at the start: (item, count).
const GIFTS: [(&str, u16); 4] = [
    ("cobblestone", 150),
    ("planks", 60),
    ("stick", 45),
    ("torch", 20),
];

/// The modules reloaded under traffic.
const RELOADED: [&str; 3] = ["inventory", "items", "crafting"];

/// Items by name as the census counts them.
type Counts = BTreeMap<String, u64>;

/// What the bots reported since the last window: their tallies and Lua
/// errors.
struct Window {
    tallies: BTreeMap<String, u64>,
    lua_errors: u64,
}

impl Window {
    /// Reads the fleet's lines and takes what they reported.
    fn take(fleet: &mut Fleet) -> Self {
        fleet.pump();
        Self {
            tallies: std::mem::take(&mut fleet.report.tallies),
            lua_errors: std::mem::take(&mut fleet.report.lua_errors),
        }
    }

    fn get(&self, key: &str) -> u64 {
        self.tallies.get(key).copied().unwrap_or(0)
    }
}

/// Runs the inventory module's `census` command: items by name.
pub fn census(server: &mut Server) -> anyhow::Result<Counts> {
    let from = server.lines_with(0, "").len();
    server.command("census", &["total "], Duration::from_secs(60))?;
    let mut counts = Counts::new();
    for line in server.lines_with(from, "") {
        if line.starts_with("total ") {
            break;
        }
        let Some((name, count)) = line.split_once(' ') else {
            continue;
        };
        let is_name = !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b':');
        if let (true, Ok(count)) = (is_name, count.trim().parse::<u64>()) {
            counts.insert(name.to_string(), count);
        }
    }
    Ok(counts)
}

/// The names whose counts differ, with both counts.
fn differences(expected: &Counts, found: &Counts) -> Vec<String> {
    let mut names: Vec<&String> = expected.keys().chain(found.keys()).collect();
    names.sort();
    names.dedup();
    names
        .into_iter()
        .filter_map(|name| {
            let (e, f) = (
                expected.get(name).copied().unwrap_or(0),
                found.get(name).copied().unwrap_or(0),
            );
            (e != f).then(|| format!("{name} {e}→{f}"))
        })
        .collect()
}

fn start_fleet(layout: &Layout, server: &Server, bots: u32) -> anyhow::Result<Fleet> {
    Fleet::start_script(
        layout,
        &server.address,
        &FleetOptions {
            bots,
            per_process: bots.max(1),
            ramp: Duration::ZERO,
            seconds: 600.0,
            light: false,
            nice: 0,
        },
        "shuffle.lua",
    )
}

/// Pumps both until every bot has spawned.
fn wait_spawned(server: &mut Server, fleet: &mut Fleet, bots: u32) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(180);
    while fleet.report.spawned < u64::from(bots) {
        if Instant::now() > deadline {
            anyhow::bail!(
                "{} of {bots} bots spawned in 180 s: {:?}",
                fleet.report.spawned,
                fleet.report.unexpected
            );
        }
        std::thread::sleep(Duration::from_millis(50));
        server.pump();
        fleet.pump();
    }
    Ok(())
}

/// Lets the bots play for `for_how_long`.
fn play(server: &mut Server, fleet: &mut Fleet, for_how_long: Duration) {
    let until = Instant::now() + for_how_long;
    while Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50));
        server.pump();
        fleet.pump();
    }
}

pub fn run(layout: &Layout, options: &CensusOptions) -> anyhow::Result<bool> {
    let seed = Random::seed(options.seed);
    let mut random = Random(seed);
    println!(
        "census: {} reload rounds, {} kills, {} bots, seed {seed}",
        options.reloads, options.iterations, options.bots
    );
    let server_options = ServerOptions {
        world: layout.path("world"),
        extra_module_paths: Vec::new(),
        settings: vec![
            "main.creative=false".to_string(),
            "inventory.drop_seconds=0".to_string(),
            crate::fleet::BOTS_MAX_SPEED.to_string(),
        ],
        tick_ms: 50,
        watchdog_ms: None,
        slow_handler_ms: None,
        log_file: layout.path("server.log"),
    };
    let mut server = Server::start(layout, &server_options)?;
    let mut fleet = start_fleet(layout, &server, options.bots)?;
    wait_spawned(&mut server, &mut fleet, options.bots)?;
    for bot in 1..=options.bots {
        for (item, count) in GIFTS {
            server.command(
                &format!("give bot0-{bot} {item} {count}"),
                &["gave "],
                Duration::from_secs(30),
            )?;
        }
    }
    let given = census(&mut server)?;
    let expected_total: u64 =
        GIFTS.iter().map(|(_, c)| u64::from(*c)).sum::<u64>() * u64::from(options.bots);
    let given_total: u64 = given.values().sum();
    println!("given: {given:?} (total {given_total}, expected {expected_total})");
    let mut failures = Vec::new();
    if given_total != expected_total {
        failures.push(format!(
            "the census after giving counts {given_total} items, not {expected_total}"
        ));
    }
    println!(
        "{:>6} {:>13} {:>8} {:>8} {:>8} {:>7} {:>8} differences",
        "round", "event", "acts", "ok", "refused", "drops", "time"
    );
    let mut moved = 0u64;
    let mut lua_errors = 0u64;
    let mut kill_rounds_moved = 0u64;
    let mut row =
        |window: Window, round: String, event: &str, started: Instant, diff: &[String]| {
            moved += window.get("ok");
            if round.starts_with('k') {
                kill_rounds_moved += window.get("ok");
            }
            lua_errors += window.lua_errors;
            println!(
                "{:>6} {:>13} {:>8} {:>8} {:>8} {:>7} {:>6.1} s {}",
                round,
                event,
                window.get("acts"),
                window.get("ok"),
                window.get("refused"),
                window.get("drops"),
                started.elapsed().as_secs_f64(),
                if diff.is_empty() {
                    "none".to_string()
                } else {
                    diff.join(", ")
                }
            );
        };
    for round in 1..=options.reloads {
        for module in RELOADED {
            let started = Instant::now();
            play(
                &mut server,
                &mut fleet,
                Duration::from_millis(300 + random.below(700)),
            );
            server
                .command(
                    &format!("reload {module}"),
                    &["reloaded "],
                    Duration::from_secs(600),
                )
                .with_context(|| format!("reloading {module}"))?;
            play(&mut server, &mut fleet, Duration::from_millis(300));
            let window = Window::take(&mut fleet);
            let found = census(&mut server)?;
            let diff = differences(&given, &found);
            if !diff.is_empty() {
                failures.push(format!("after reload {module}: {}", diff.join(", ")));
            }
            row(
                window,
                format!("r{round}"),
                &format!("reload {module}"),
                started,
                &diff,
            );
        }
    }
    for iteration in 1..=options.iterations {
        let started = Instant::now();
        play(
            &mut server,
            &mut fleet,
            Duration::from_millis(1000 + random.below(2000)),
        );
        // Half the time the bots vanish first, mid-transaction, then the
        // server; else the server dies under them.
        let bots_first = random.below(2) == 0;
        let window = Window::take(&mut fleet);
        if bots_first {
            fleet.pump();
            drop(fleet);
            std::thread::sleep(Duration::from_micros(random.below(20_000)));
            server.kill();
        } else {
            server.kill();
            fleet.pump();
            drop(fleet);
        }
        drop(server);
        server = Server::start(layout, &server_options)?;
        let found = census(&mut server)?;
        let diff = differences(&given, &found);
        if !diff.is_empty() {
            failures.push(format!("after kill {iteration}: {}", diff.join(", ")));
        }
        fleet = start_fleet(layout, &server, options.bots)?;
        wait_spawned(&mut server, &mut fleet, options.bots)?;
        row(
            window,
            format!("k{iteration}"),
            if bots_first {
                "kill bots+srv"
            } else {
                "kill server"
            },
            started,
            &diff,
        );
    }
    drop(fleet);
    server.stop_cleanly();
    if moved == 0 {
        failures.push("the bots moved no item: nothing was tested".to_string());
    }
    if options.iterations > 0 && kill_rounds_moved == 0 {
        failures.push("no item moved in the rounds ended by a kill".to_string());
    }
    if lua_errors > 0 {
        failures.push(format!("{lua_errors} Lua errors in the bots"));
    }
    println!(
        "census: {} reloads and {} kills, {moved} actions answered ok; census differences: {}",
        options.reloads * RELOADED.len() as u32,
        options.iterations,
        failures.len()
    );
    for failure in &failures {
        println!("  {failure}");
    }
    let pass = failures.is_empty();
    println!("census: {}", if pass { "PASS" } else { "FAIL" });
    Ok(pass)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn differences_name_each_item_whose_count_changed() {
        let given: Counts = [("stick".to_string(), 10), ("torch".to_string(), 5)].into();
        let found: Counts = [("stick".to_string(), 11), ("planks".to_string(), 2)].into();
        assert_eq!(
            differences(&given, &found),
            vec!["planks 0→2", "stick 10→11", "torch 5→0"]
        );
        assert!(differences(&given, &given).is_empty());
    }
}
