//! `loadtest N SECONDS`: N loadbots (`buildat-client --bots`) play against
//! a real server for SECONDS; every window prints the ping round trips,
//! losses, and the server's CPU and memory; the end prints totals and the
//! verdict against the goal.
//!
//! Owns: the load run and its report. Does not own: the bots' behaviour
//! (`scripts/bots/loadbot.lua`) or the parsing of their lines (`fleet`).

use std::time::{Duration, Instant};

use crate::fleet::{Counts, Fleet, FleetOptions};
use crate::histogram::show_ms;
use crate::layout::Layout;
use crate::proc_stats::{Sample, cpu_percent};
use crate::server::{ONE_ADDRESS_CROWD, Server, ServerOptions};

#[derive(Debug, Clone, clap::Args)]
pub struct LoadOptions {
    /// Number of bots.
    pub bots: u32,
    /// How long each bot plays, in seconds.
    pub seconds: f64,
    /// Bots per client process (they join together).
    #[arg(long, default_value_t = 50)]
    pub per_process: u32,
    /// Seconds over which the client processes are started (default: one
    /// process every 5 s).
    #[arg(long)]
    pub ramp: Option<f64>,
    /// The world's view radius in chunks (`voxelworld.view_radius`).
    #[arg(long, default_value_t = 3)]
    pub view_radius: u32,
    /// Seconds per report window.
    #[arg(long, default_value_t = 10.0)]
    pub window: f64,
    /// Rust light bots (no Lua, no world kept: the server is what is
    /// measured) instead of `buildat-client --bots` with the Lua bot.
    #[arg(long)]
    pub light: bool,
    /// More server settings, `KEY=VALUE` (repeatable), e.g.
    /// `--set creatures.count=2000`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub settings: Vec<String>,
}

/// One row of the table.
struct Row {
    t: f64,
    counts: Counts,
    server_cpu: f64,
    server_rss_kib: u64,
    clients_cpu: f64,
    /// The module with the most queued messages, and how many.
    deepest_queue: Option<(String, u64)>,
}

pub fn print_header() {
    println!(
        "{:>6} {:>6} {:>7} {:>8} {:>8} {:>8} {:>5} {:>8} {:>9} {:>9}  {:<13}",
        "t s",
        "bots",
        "pongs",
        "p50 ms",
        "p99 ms",
        "max ms",
        "lost",
        "srv CPU%",
        "srv RSS",
        "bots CPU%",
        "deepest queue"
    );
}

fn print_row(spawned: u64, row: &Row) {
    let h = &row.counts.hist;
    println!(
        "{:>6.0} {:>6} {:>7} {:>8} {:>8} {:>8} {:>5} {:>8.0} {:>6} MiB {:>9.0}  {}",
        row.t,
        spawned,
        row.counts.answered,
        show_ms(h.percentile_ms(50.0)),
        show_ms(h.percentile_ms(99.0)),
        show_ms(h.max_ms()),
        row.counts.lost,
        row.server_cpu,
        row.server_rss_kib / 1024,
        row.clients_cpu,
        row.deepest_queue
            .as_ref()
            .map_or("-".to_string(), |(name, n)| format!("{name} {n}"))
    );
}

/// What a driven run measured besides the fleet's own report.
struct Driven {
    /// Counts of the windows after the ramp: the steady state.
    steady: Counts,
    notes: Vec<String>,
    peak_rss_kib: u64,
}

/// Runs the fleet against `server` until it is done, printing a row per
/// window.
fn drive(server: &mut Server, fleet: &mut Fleet, options: &LoadOptions, ramp: Duration) -> Driven {
    let started = Instant::now();
    let window = Duration::from_secs_f64(options.window.max(1.0));
    let limit = Duration::from_secs_f64(options.seconds) + ramp + Duration::from_secs(60);
    let mut driven = Driven {
        steady: Counts::default(),
        notes: Vec::new(),
        peak_rss_kib: 0,
    };
    let mut last_server: Option<Sample> = server.sample();
    let mut last_fleet: Option<Sample> = fleet.sample();
    let mut next_row = started + window;
    print_header();
    loop {
        std::thread::sleep(Duration::from_millis(250));
        server.pump();
        fleet.pump();
        let t = started.elapsed().as_secs_f64();
        if !server.is_running() {
            driven
                .notes
                .push(format!("the server exited at t = {t:.0} s"));
            break;
        }
        let fleet_done = fleet.report.ended.len() as u32 >= options.bots;
        if Instant::now() >= next_row || fleet_done {
            next_row += window;
            let server_now = server.sample();
            let fleet_now = fleet.sample();
            let counts = fleet.take_window();
            let row = Row {
                t,
                server_cpu: match (&last_server, &server_now) {
                    (Some(a), Some(b)) => cpu_percent(a, b),
                    _ => 0.0,
                },
                server_rss_kib: server_now.map_or(0, |s| s.rss_kib),
                // Processes starting or ending in the window make this rough.
                clients_cpu: match (&last_fleet, &fleet_now) {
                    (Some(a), Some(b)) => cpu_percent(a, b).max(0.0),
                    _ => 0.0,
                },
                counts,
                deepest_queue: deepest_queue(server),
            };
            print_row(fleet.report.spawned, &row);
            driven.peak_rss_kib = driven.peak_rss_kib.max(row.server_rss_kib);
            if started.elapsed() > ramp + window && fleet.all_started() {
                driven.steady.merge(&row.counts);
            }
            last_server = server_now;
            // CPU of the clients: only between samples of the same processes.
            last_fleet = fleet_now;
        }
        if fleet_done {
            break;
        }
        if started.elapsed() > limit {
            driven.notes.push(format!(
                "the bots were still running {} s after their end",
                (limit - ramp).as_secs()
            ));
            break;
        }
    }
    fleet.wait(Duration::from_secs(30));
    driven
}

/// The fleet's totals as report lines, its health first; also whether it
/// is healthy.
fn fleet_summary(fleet: &Fleet, bots: u32, seconds: f64, steady: &Counts) -> (bool, Vec<String>) {
    let r = &fleet.report;
    let h = &r.total.hist;
    let mut lines = r.health_lines(bots);
    lines.extend([
        format!(
            "ping round trip, whole run:  p50 {} ms, p99 {} ms, max {} ms",
            show_ms(h.percentile_ms(50.0)),
            show_ms(h.percentile_ms(99.0)),
            show_ms(h.max_ms())
        ),
        format!(
            "ping round trip, after ramp: p50 {} ms, p99 {} ms, max {} ms ({} pongs)",
            show_ms(steady.hist.percentile_ms(50.0)),
            show_ms(steady.hist.percentile_ms(99.0)),
            show_ms(steady.hist.max_ms()),
            steady.answered
        ),
        format!(
            "actions: {} moves, {} digs, {} places; {} edits seen, {} refused",
            r.total.moves, r.total.digs, r.total.places, r.total.edits, r.total.refused
        ),
        format!(
            "chunks received:             {} ({:.0} chunks/s)",
            r.chunk_packets,
            r.chunk_packets as f64 / seconds.max(1.0)
        ),
    ]);
    let healthy = r.is_healthy(bots) && r.ended.len() as u64 == u64::from(bots);
    (healthy, lines)
}

/// The module with the most messages queued, from the console's
/// `modules` table.
fn deepest_queue(server: &mut Server) -> Option<(String, u64)> {
    let from = server.seen.len();
    server.send("modules");
    server.wait_for("queued", Duration::from_secs(5))?;
    std::thread::sleep(Duration::from_millis(50));
    server.pump();
    let header = from
        + server.seen[from..]
            .iter()
            .position(|l| l.contains("queued"))?;
    server.seen[header + 1..]
        .iter()
        .map_while(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            // module, state, build, queued, loaded ("N s ago" or "-").
            let queued = fields.get(3)?.parse::<u64>().ok()?;
            Some((fields.first()?.to_string(), queued))
        })
        .max_by_key(|(_, queued)| *queued)
}

/// Console commands whose answers end the report (those of the game's
/// modules that are loaded).
const STATUS_COMMANDS: [&str; 3] = ["world", "replicate", "creatures"];

/// The answers of [`STATUS_COMMANDS`] at the end of the run.
fn ask_status(server: &mut Server) -> Vec<String> {
    let mut told = Vec::new();
    for command in STATUS_COMMANDS {
        server.send(command);
        if let Some(line) = server.wait_for(&format!("{command}: "), Duration::from_secs(10)) {
            let answer = line
                .find(&format!("{command}: "))
                .map_or(line.as_str(), |at| &line[at..]);
            told.push(answer.to_string());
        }
    }
    told
}

pub fn run(layout: &Layout, options: &LoadOptions) -> anyhow::Result<bool> {
    let processes = options.bots.div_ceil(options.per_process.max(1));
    let ramp = Duration::from_secs_f64(
        options
            .ramp
            .unwrap_or(5.0 * f64::from(processes.saturating_sub(1))),
    );
    println!(
        "loadtest: {} bots in {processes} client processes (ramp {:.0} s), {} s each, view radius {}",
        options.bots,
        ramp.as_secs_f64(),
        options.seconds,
        options.view_radius
    );
    let mut server = Server::start(
        layout,
        &ServerOptions {
            world: layout.path("world"),
            extra_module_paths: Vec::new(),
            settings: [format!("voxelworld.view_radius={}", options.view_radius)]
                .into_iter()
                .chain(ONE_ADDRESS_CROWD.map(String::from))
                .chain(options.settings.iter().cloned())
                .collect(),
            tick_ms: 100,
            watchdog_ms: None,
            log_file: layout.path("server.log"),
        },
    )?;
    println!("server {} listening on {}", server.pid(), server.address);
    let start_sample = server.sample();
    let mut fleet = Fleet::start(
        layout,
        &server.address,
        &FleetOptions {
            bots: options.bots,
            per_process: options.per_process,
            ramp,
            seconds: options.seconds,
            light: options.light,
        },
    )?;
    let Driven {
        steady,
        notes,
        peak_rss_kib,
    } = drive(&mut server, &mut fleet, options, ramp);
    let end_sample = server.sample();
    let told = ask_status(&mut server);
    let problems = server.problems_since(0);
    let status = server.stop(Duration::from_secs(60));
    let (clean, mut lines) = fleet_summary(&fleet, options.bots, options.seconds, &steady);
    if let (Some(a), Some(b)) = (start_sample, end_sample) {
        lines.push(format!(
            "server: CPU {:.0} % of one core on average, {:.1} CPU s in all; RSS {} MiB at start, {} MiB peak, {} MiB at end ({} KiB per bot)",
            cpu_percent(&a, &b),
            b.cpu_seconds - a.cpu_seconds,
            a.rss_kib / 1024,
            peak_rss_kib / 1024,
            b.rss_kib / 1024,
            b.rss_kib.saturating_sub(a.rss_kib) / u64::from(options.bots.max(1))
        ));
    }
    lines.push(format!(
        "server: {} ERROR/WARN lines; exit status after `stop`: {}",
        problems.len(),
        status.map_or("did not exit".to_string(), |s| s.to_string())
    ));
    for line in problems.iter().take(5) {
        lines.push(format!("  server: {line}"));
    }
    lines.extend(told.iter().map(|t| format!("server: {t}")));
    lines.extend(notes.iter().map(|n| format!("note: {n}")));
    let pass = clean && status == Some(0) && notes.is_empty();
    let p99 = fleet.report.total.hist.percentile_ms(99.0);
    let goal_met = options.bots >= 500
        && options.seconds >= 300.0
        && fleet.report.unexpected.is_empty()
        && p99.is_some_and(|p| p < 50.0);
    lines.push(format!(
        "goal (500 bots, 5 min, 0 unexpected disconnects, p99 < 50 ms): {}",
        if goal_met {
            "met".to_string()
        } else if options.bots < 500 || options.seconds < 300.0 {
            format!(
                "not measured by this run ({} bots, {} s)",
                options.bots, options.seconds
            )
        } else {
            "NOT met".to_string()
        }
    ));
    lines.push(format!("loadtest: {}", if pass { "PASS" } else { "FAIL" }));
    println!("\n{}", lines.join("\n"));
    Ok(pass)
}
