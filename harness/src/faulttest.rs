//! `faulttest`: while loadbots play, reload every module in turn ROUNDS
//! times, make a module panic and hang, and run the abuse corpus; then
//! count lost events, dropped players and server exits.
//!
//! Lost events are counted two ways: the `fault_probe` fixtures (`fault_a`
//! and `fault_b`) number the events they send each other every tick and
//! check each arrives once, in order, across their own and everybody's
//! reloads; and every bot ping is an event through network → main →
//! network, so a ping without a pong within 10 s is a lost event too.
//! `fault_victim` (the same fixture) is the one made to panic and hang.
//!
//! Owns: the fault run and its report. Does not own: the corpus (`abuse`),
//! the bots (`fleet`).

use std::time::{Duration, Instant};

use crate::abuse;
use crate::creatures_report::CreaturesReport;
use crate::fleet::{Fleet, FleetOptions};
use crate::histogram::show_ms;
use crate::layout::Layout;
use crate::server::{ONE_ADDRESS_CROWD, Server, ServerOptions};

/// Modules reloaded each round, in this order.
pub const RELOADED: [&str; 10] = [
    "network",
    "client_file",
    "voxelworld",
    "worldgen",
    "replicate",
    "creatures",
    "main",
    "fault_a",
    "fault_b",
    "__loader",
];

#[derive(Debug, Clone, clap::Args)]
pub struct FaultOptions {
    /// Bots playing throughout.
    #[arg(long, default_value_t = 20)]
    pub bots: u32,
    /// Reloads of each module.
    #[arg(long, default_value_t = 100)]
    pub rounds: u32,
    /// Panics of fault_victim (each followed by loading it again).
    #[arg(long, default_value_t = 3)]
    pub panics: u32,
    /// Skip the abuse corpus.
    #[arg(long)]
    pub no_abuse: bool,
}

const TIMEOUT: Duration = Duration::from_secs(120);

/// Reload times of one module, in milliseconds.
#[derive(Default)]
struct Timings(Vec<f64>);

impl Timings {
    fn summary(&mut self) -> String {
        self.0.sort_by(f64::total_cmp);
        let n = self.0.len();
        if n == 0 {
            return "none".into();
        }
        format!(
            "{n} reloads, median {:.1} ms, max {:.1} ms",
            self.0[n / 2],
            self.0[n - 1]
        )
    }
}

/// What one receiver counted of one sender's events.
struct EventCounts {
    first: u64,
    received: u64,
    next: u64,
    gaps: u64,
    repeats: u64,
}

impl EventCounts {
    /// Every event from the first one seen arrived once, in order.
    fn is_whole(&self) -> bool {
        self.gaps == 0 && self.repeats == 0 && self.received == self.next - self.first
    }
}

/// `fault_probe NAME from SENDER: first F, received N, next M, gaps G, repeats R`
fn event_line(server: &Server, from: usize, receiver: &str, sender: &str) -> Option<EventCounts> {
    let needle = format!("fault_probe {receiver} from {sender}: ");
    let line = server.lines_with(from, &needle).pop()?;
    let numbers: Vec<u64> = line
        .rsplit(&needle)
        .next()?
        .split(", ")
        .filter_map(|part| part.rsplit(' ').next()?.parse().ok())
        .collect();
    match numbers[..] {
        [first, received, next, gaps, repeats] if first <= next => Some(EventCounts {
            first,
            received,
            next,
            gaps,
            repeats,
        }),
        _ => None,
    }
}

/// The game's nodes as its modules count them: the console's `creatures`
/// and the nodes `replicate` tracks (`replicate: N nodes, ...`).
#[derive(Debug, Clone, PartialEq, Eq)]
struct NodeCensus {
    creatures: CreaturesReport,
    replicated: usize,
}

fn node_census(server: &mut Server) -> anyhow::Result<NodeCensus> {
    let creatures = server.command("creatures", &["creatures: "], TIMEOUT)?;
    let replicate = server.command("replicate", &["replicate: "], TIMEOUT)?;
    let replicated = replicate
        .split_once("replicate: ")
        .and_then(|(_, rest)| rest.split(' ').next()?.parse().ok());
    match (CreaturesReport::parse(&creatures), replicated) {
        (Some(creatures), Some(replicated)) => Ok(NodeCensus {
            creatures,
            replicated,
        }),
        _ => anyhow::bail!("cannot read the census from {creatures:?} and {replicate:?}"),
    }
}

/// Asks for the census until `done` holds or `timeout` passes; the last one.
fn census_until(
    server: &mut Server,
    fleet: &mut Fleet,
    timeout: Duration,
    done: impl Fn(&NodeCensus) -> bool,
) -> anyhow::Result<NodeCensus> {
    let deadline = Instant::now() + timeout;
    loop {
        let census = node_census(server)?;
        if done(&census) || Instant::now() >= deadline {
            return Ok(census);
        }
        fleet.pump();
        std::thread::sleep(Duration::from_millis(500));
    }
}

fn pump_both(server: &mut Server, fleet: &mut Fleet) {
    server.pump();
    fleet.pump();
}

pub fn run(layout: &Layout, options: &FaultOptions) -> anyhow::Result<bool> {
    let modules = layout.add_fixtures("fault_probe", &["fault_a", "fault_b", "fault_victim"])?;
    let mut server_options: ServerOptions = abuse::server_options(layout, vec![modules]);
    server_options.watchdog_ms = Some(1000);
    server_options
        .settings
        .extend(ONE_ADDRESS_CROWD.map(String::from));
    server_options
        .settings
        .push(crate::fleet::BOTS_MAX_SPEED.to_string());
    let mut server = Server::start(layout, &server_options)?;
    println!(
        "faulttest: server {} on {}; {} bots; {} reloads of each of {}",
        server.pid(),
        server.address,
        options.bots,
        options.rounds,
        RELOADED.join(", ")
    );
    let mut fleet = Fleet::start(
        layout,
        &server.address,
        &FleetOptions {
            bots: options.bots,
            per_process: 100,
            ramp: Duration::ZERO,
            seconds: 24.0 * 3600.0,
            light: false,
            nice: 0,
        },
    )?;
    let mut failures: Vec<String> = Vec::new();
    // Everyone in before the faults start.
    let deadline = Instant::now() + Duration::from_secs(120);
    while fleet.report.spawned < u64::from(options.bots) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
        pump_both(&mut server, &mut fleet);
    }
    println!("{} of {} bots spawned", fleet.report.spawned, options.bots);

    // The nodes before the reloads (once the herd is placed): after them,
    // no creature is gone and `replicate` tracks at least every creature
    // with a node and every player.
    let census_before = census_until(&mut server, &mut fleet, Duration::from_secs(60), |c| {
        c.creatures.total > 0 && c.creatures.to_place == 0
    })?;

    // 1. Reloads.
    let mut timings: Vec<Timings> = RELOADED.iter().map(|_| Timings::default()).collect();
    let reloads_started = Instant::now();
    'rounds: for round in 1..=options.rounds {
        for (module, timing) in RELOADED.iter().zip(&mut timings) {
            let started = Instant::now();
            if let Err(error) = server.command(
                &format!("reload {module}"),
                &[&format!("reloaded {module}")],
                TIMEOUT,
            ) {
                failures.push(format!("round {round}: {error:#}"));
                break 'rounds;
            }
            timing.0.push(started.elapsed().as_secs_f64() * 1e3);
            fleet.pump();
        }
        if round % 10 == 0 || round == options.rounds {
            let window = fleet.take_window();
            println!(
                "reload round {round:>4}: {:.0} s; bots ended {}; pongs {} p99 {} ms, lost {}",
                reloads_started.elapsed().as_secs_f64(),
                fleet.report.ended.len(),
                window.answered,
                show_ms(window.hist.percentile_ms(99.0)),
                window.lost
            );
        }
    }
    for (module, timing) in RELOADED.iter().zip(&mut timings) {
        println!("  reload {module:<12} {}", timing.summary());
    }
    let players = fleet.report.spawned as usize - fleet.report.ended.len();
    let whole = |c: &NodeCensus| {
        c.creatures.total >= census_before.creatures.total
            && c.replicated >= c.creatures.with_node() + players
    };
    // Creatures fall asleep and wake as the bots walk: a few tries.
    let census_after = census_until(&mut server, &mut fleet, Duration::from_secs(30), whole)?;
    println!(
        "nodes: creatures {} before the reloads, {} after ({} asleep); replicate tracks {} \
         (at least {} creatures with a node and {players} players)",
        census_before.creatures.total,
        census_after.creatures.total,
        census_after.creatures.asleep,
        census_after.replicated,
        census_after.creatures.with_node(),
    );
    if !whole(&census_after) {
        failures.push(format!(
            "nodes lost across the reloads: before {census_before:?}, after {census_after:?}, {players} players"
        ));
    }

    // 2. Panics: each must be contained, named, and the module loadable again.
    let mut panics_contained = 0;
    for i in 1..=options.panics {
        server.pump();
        let from = server.seen.len();
        let result = server
            .command(
                "emit fault:panic fault_victim",
                &["emitted fault:panic"],
                TIMEOUT,
            )
            .and_then(|_| {
                // The core names the module and says it panicked.
                server
                    .wait_for_from(from, "module fault_victim failed", Duration::from_secs(30))
                    .ok_or_else(|| anyhow::anyhow!("no log line names fault_victim as failed"))?;
                server
                    .wait_for_from(from, "panicked", Duration::from_secs(30))
                    .ok_or_else(|| anyhow::anyhow!("the panic was not reported"))?;
                // Wait for the core to finish unloading it, then load it again.
                let deadline = Instant::now() + Duration::from_secs(30);
                loop {
                    match server.command("load fault_victim", &["loaded fault_victim"], TIMEOUT) {
                        Ok(_) => break Ok(()),
                        Err(error) if Instant::now() > deadline => break Err(error),
                        Err(_) => std::thread::sleep(Duration::from_millis(200)),
                    }
                }
            });
        match result {
            Ok(()) if server.is_running() => panics_contained += 1,
            Ok(()) => failures.push(format!("panic {i}: the server exited")),
            Err(error) => failures.push(format!("panic {i}: {error:#}")),
        }
        if let Some(line) = server.lines_with(from, "panicked").first() {
            println!("panic {i}: {}", line.trim());
        }
        fleet.pump();
    }

    // 3. A hang: the watchdog names it, the others go on, it recovers.
    server.pump();
    let from = server.seen.len();
    // The bots' counts from here on are those during the hang.
    fleet.take_window();
    let hang = server
        .command(
            "emit fault:hang fault_victim 3000",
            &["emitted fault:hang"],
            TIMEOUT,
        )
        .and_then(|_| {
            let stuck = server
                .wait_for_from(
                    from,
                    "watchdog: module fault_victim",
                    Duration::from_secs(20),
                )
                .ok_or_else(|| anyhow::anyhow!("the watchdog did not report the hang"))?;
            println!("hang: {}", stuck.trim());
            let back = server
                .wait_for_from(
                    from,
                    "fault_victim is responsive again",
                    Duration::from_secs(30),
                )
                .ok_or_else(|| anyhow::anyhow!("the hung module did not come back"))?;
            println!("hang: {}", back.trim());
            Ok(())
        });
    fleet.pump();
    let during_hang = fleet.take_window();
    println!(
        "hang: bots meanwhile: {} pongs, p99 {} ms, lost {}",
        during_hang.answered,
        show_ms(during_hang.hist.percentile_ms(99.0)),
        during_hang.lost
    );
    if let Err(error) = hang {
        failures.push(format!("hang: {error:#}"));
    }

    // 4. The abuse corpus, bots still playing.
    let abuse_ok = if options.no_abuse {
        true
    } else {
        println!("abuse corpus while the bots play:");
        abuse::run_corpus(&mut server)?
    };
    if !abuse_ok {
        failures.push("the abuse corpus".into());
    }

    // 5. Let every ping resolve (answered or lost after 10 s), then count.
    let tail = Instant::now() + Duration::from_secs(15);
    while Instant::now() < tail {
        std::thread::sleep(Duration::from_millis(200));
        pump_both(&mut server, &mut fleet);
    }
    server.pump();
    let from = server.seen.len();
    server.command("emit fault:report", &["emitted fault:report"], TIMEOUT)?;
    std::thread::sleep(Duration::from_millis(500));
    server.pump();
    let mut events_ok = true;
    for (receiver, sender) in [("fault_a", "fault_b"), ("fault_b", "fault_a")] {
        match event_line(&server, from, receiver, sender) {
            Some(counts) => {
                println!(
                    "events {sender} -> {receiver}: from number {} on, {} received, next expected {}, gaps {}, repeats {}",
                    counts.first, counts.received, counts.next, counts.gaps, counts.repeats
                );
                events_ok &= counts.is_whole();
            }
            None => {
                println!("events {sender} -> {receiver}: no report line");
                events_ok = false;
            }
        }
    }
    if !events_ok {
        // What the server said around it: the probe names each gap as it
        // sees it, next to the reloads, hangs and warnings. The gaps first,
        // in full, then the most recent context.
        for line in server.seen.iter().filter(|l| {
            l.contains("fault_probe") && (l.contains("missing before") || l.contains("first event"))
        }) {
            println!("  {}", line.trim());
        }
        let context: Vec<&String> = server
            .seen
            .iter()
            .filter(|l| {
                ["WARN", "ERROR", "reloaded", "reloading", "fault_probe"]
                    .iter()
                    .any(|w| l.contains(w))
            })
            .collect();
        println!(
            "server lines around the events ({} shown at most 60):",
            context.len()
        );
        for line in context.iter().rev().take(60).rev() {
            println!("  {}", line.trim());
        }
        failures.push("fault_probe events lost or repeated".into());
    }
    // The bots were meant to play on: any session that ended was dropped.
    let dropped_players = fleet.report.ended.len();
    for line in fleet.report.health_lines(options.bots) {
        println!("{line}");
    }
    if dropped_players > 0 {
        failures.push(format!("{dropped_players} players dropped"));
    }
    if !fleet.report.is_healthy(options.bots) {
        failures.push("bots not all connected, or pings lost, or Lua errors".into());
    }
    drop(fleet);
    let up = server.is_running();
    let status = server.stop(Duration::from_secs(60));
    println!(
        "dropped players: {dropped_players}; panics contained: {panics_contained} of {}; server exits: {}; exit status after `stop`: {}",
        options.panics,
        if up { 0 } else { 1 },
        status.map_or("did not exit".to_string(), |s| s.to_string())
    );
    if status != Some(0) {
        failures.push("the server did not stop cleanly".into());
    }
    for failure in &failures {
        println!("FAILED: {failure}");
    }
    let pass = failures.is_empty();
    println!("faulttest: {}", if pass { "PASS" } else { "FAIL" });
    Ok(pass)
}
