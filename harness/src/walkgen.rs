//! `buildat-harness walkgen`: how long a player walking into terrain never
//! generated waits for its full view (issue 21's live-generation figure),
//! against what the same server generates when nothing waits (`pregen`).
//!
//! A release server starts on a fresh world with the default game. Each
//! walker joins (may fly, so terrain never stops it) and waits for its
//! first full view at the spawn point, then walks away from the spawn in a
//! straight line of its own (walkers spread evenly around the circle) at
//! `--speed` voxels a second, acknowledging the chunks it receives as a
//! client does. Each time its position enters a new chunk, its view
//! (every chunk within the view radius of that chunk, as the server's
//! streamer counts it) gains the chunks just come into range: a chunk's
//! wait is from then until it arrives (one that leaves the view first is
//! counted as passed by), and the share of the walk with the whole view
//! held is the other figure. Then a headless `pregen` of the same
//! world generates a square of sections with nothing waiting on it: its
//! sections a second are the machine's capacity, and the walk's need is the
//! distinct sections its views took a second.
//!
//! Owns: this measurement and its table. Does not own: the server driver
//! (`server`), the wire client (`raw_client`).

use std::collections::{HashMap, HashSet};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::Context;
use buildat_format::Packet;
use buildat_main_api::{Correct, Spawn};
use buildat_voxel::geometry::{self, Pos};
use buildat_voxelworld_api::stream::{Ack, Chunk, UnloadChunk};

use crate::layout::Layout;
use crate::proc_stats::cpu_percent;
use crate::raw_client::RawClient;
use crate::server::{Server, ServerOptions};

#[derive(Debug, Clone, clap::Args)]
pub struct WalkOptions {
    /// Seconds each walker walks.
    #[arg(long, default_value_t = 60.0)]
    pub seconds: f64,
    /// Walking speed, voxels a second.
    #[arg(long, default_value_t = 10.0)]
    pub speed: f64,
    /// Walkers, each on its own straight line out of the spawn.
    #[arg(long, default_value_t = 1)]
    pub walkers: u32,
    /// The world's view radius in chunks (`voxelworld.view_radius`).
    #[arg(long, default_value_t = 3)]
    pub view_radius: i32,
    /// `pregen --radius` of the capacity run (headless, after the walk), in
    /// sections, at the origin.
    #[arg(long, default_value_t = 6)]
    pub pregen_radius: u32,
    /// More `--set KEY=VALUE` server settings.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub settings: Vec<String>,
}

/// Chunks a side of a default world's section (`section_size` [2, 2, 2]).
const SECTION_CHUNKS: i32 = 2;
/// Seconds between two moves, and between two acknowledgements.
const STEP: f64 = 0.05;
/// How long a walker waits for its first full view at the spawn point.
const FIRST_VIEW_TIMEOUT: Duration = Duration::from_secs(120);

fn chunk_at(position: [f64; 3]) -> Pos {
    geometry::chunk_of_voxel(position.map(|p| p.floor() as i32))
}

/// What one walker saw.
#[derive(Debug, Default)]
struct WalkReport {
    first_view: Option<f64>,
    /// Seconds from a chunk coming into the walker's view to its arrival.
    waits: Vec<f64>,
    /// Chunks that came into view and left it again before they arrived.
    passed_by: u32,
    /// Seconds of the walk with the full view held.
    full_seconds: f64,
    walked_seconds: f64,
    corrections: u32,
    chunks_received: u64,
    /// Distinct sections in the views of the walk.
    sections: HashSet<Pos>,
    error: Option<String>,
}

/// The walker's connection and what it holds.
struct Walker {
    client: RawClient,
    held: HashSet<Pos>,
    unacked: u32,
    position: [f64; 3],
    corrections: u32,
    received: u64,
}

impl Walker {
    /// Reads what arrives until `until`; acknowledges what it received.
    fn take_packets(&mut self, until: Instant) -> anyhow::Result<()> {
        loop {
            let left = until.saturating_duration_since(Instant::now());
            let packet = self.client.recv(left.max(Duration::from_millis(1)))?;
            let Some(packet) = packet else {
                break;
            };
            match packet.name.as_str() {
                Chunk::NAME => {
                    let chunk = Chunk::decode(&packet.data).context("a chunk packet")?;
                    self.held.insert(chunk.chunk);
                    self.unacked += 1;
                    self.received += 1;
                }
                UnloadChunk::NAME => {
                    let unload = UnloadChunk::decode(&packet.data).context("an unload packet")?;
                    self.held.remove(&unload.chunk);
                }
                Correct::NAME => {
                    self.position = Correct::decode(&packet.data)
                        .context("a correction")?
                        .position;
                    self.corrections += 1;
                }
                Spawn::NAME => {
                    self.position = Spawn::decode(&packet.data).context("a spawn")?.position;
                }
                _ => {}
            }
            if Instant::now() >= until {
                break;
            }
        }
        if self.unacked > 0 {
            self.client.send_packet(&Ack {
                chunks: self.unacked,
            })?;
            self.unacked = 0;
        }
        Ok(())
    }

    fn holds(&self, chunks: &[Pos]) -> bool {
        chunks.iter().all(|c| self.held.contains(c))
    }
}

fn walk(address: &str, index: u32, options: &WalkOptions) -> WalkReport {
    let mut report = WalkReport::default();
    if let Err(error) = walk_into(address, index, options, &mut report) {
        report.error = Some(format!("walker {index}: {error:#}"));
    }
    report
}

fn walk_into(
    address: &str,
    index: u32,
    options: &WalkOptions,
    report: &mut WalkReport,
) -> anyhow::Result<()> {
    let client = RawClient::join(address, &format!("walker-{index}"), Duration::from_secs(60))?;
    let mut walker = Walker {
        position: client.spawn,
        client,
        held: HashSet::new(),
        unacked: 0,
        corrections: 0,
        received: 0,
    };
    let radius = options.view_radius;
    let joined = Instant::now();
    let spawn_view = geometry::chunks_in_view(chunk_at(walker.position), radius);
    while !walker.holds(&spawn_view) {
        anyhow::ensure!(
            joined.elapsed() < FIRST_VIEW_TIMEOUT,
            "no full view at the spawn point within {FIRST_VIEW_TIMEOUT:?} ({} of {} chunks)",
            spawn_view
                .iter()
                .filter(|c| walker.held.contains(*c))
                .count(),
            spawn_view.len()
        );
        walker.take_packets(Instant::now() + Duration::from_secs_f64(STEP))?;
    }
    report.first_view = Some(joined.elapsed().as_secs_f64());
    let angle = std::f64::consts::TAU * f64::from(index) / f64::from(options.walkers.max(1));
    let direction = [angle.cos(), angle.sin()];
    let start = Instant::now();
    let end = start + Duration::from_secs_f64(options.seconds);
    let mut center = chunk_at(walker.position);
    let mut wanted = geometry::chunks_in_view(center, radius);
    // Chunks in view and not arrived yet: since when they are in view.
    let mut pending: HashMap<Pos, Instant> = HashMap::new();
    let mut full_since = Some(start);
    let mut next_step = start;
    while Instant::now() < end {
        next_step += Duration::from_secs_f64(STEP);
        walker.position[0] += direction[0] * options.speed * STEP;
        walker.position[2] += direction[1] * options.speed * STEP;
        walker.client.send_packet(&buildat_main_api::Move {
            position: walker.position,
        })?;
        walker.take_packets(next_step)?;
        let now = Instant::now();
        pending.retain(|chunk, since| {
            let arrived = walker.held.contains(chunk);
            if arrived {
                report.waits.push(now.duration_since(*since).as_secs_f64());
            }
            !arrived
        });
        let here = chunk_at(walker.position);
        if here != center {
            center = here;
            wanted = geometry::chunks_in_view(center, radius);
            report.sections.extend(
                wanted
                    .iter()
                    .map(|c| c.map(|v| v.div_euclid(SECTION_CHUNKS))),
            );
            let in_view: HashSet<Pos> = wanted.iter().copied().collect();
            let before = pending.len();
            pending.retain(|chunk, _| in_view.contains(chunk));
            report.passed_by += (before - pending.len()) as u32;
            for chunk in &wanted {
                if !walker.held.contains(chunk) {
                    pending.entry(*chunk).or_insert(now);
                }
            }
        }
        let holds = pending.is_empty() && walker.holds(&wanted);
        match (holds, full_since) {
            (true, None) => full_since = Some(now),
            (false, Some(since)) => {
                report.full_seconds += now.duration_since(since).as_secs_f64();
                full_since = None;
            }
            _ => {}
        }
    }
    if let Some(since) = full_since {
        report.full_seconds += Instant::now().duration_since(since).as_secs_f64();
    }
    report.walked_seconds = start.elapsed().as_secs_f64();
    report.corrections = walker.corrections;
    report.chunks_received = walker.received;
    walker.client.close();
    Ok(())
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let at = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[at.min(sorted.len() - 1)]
}

/// `pregen: generated N sections in T s` → (N, T).
fn pregen_result(line: &str) -> Option<(u64, f64)> {
    let rest = line.split("pregen: generated ").nth(1)?;
    let mut words = rest.split_whitespace();
    let sections = words.next()?.parse().ok()?;
    let seconds = words.nth(2)?.parse().ok()?;
    Some((sections, seconds))
}

pub fn run(layout: &Layout, options: &WalkOptions) -> anyhow::Result<bool> {
    let mut settings = vec![
        format!("voxelworld.view_radius={}", options.view_radius),
        // Walkers fly and pass through terrain: the walk is never stopped
        // by a hill, so every walker covers the same distance.
        "main.default_privileges=interact,fly,noclip".to_string(),
    ];
    settings.extend(options.settings.iter().cloned());
    let server_options = ServerOptions {
        world: layout.path("world"),
        extra_module_paths: Vec::new(),
        settings,
        tick_ms: 100,
        watchdog_ms: None,
        slow_handler_ms: None,
        log_file: layout.path("server.log"),
    };
    let mut server = Server::start(layout, &server_options)?;
    let address = server.address.clone();
    println!(
        "walkgen: {} walker(s) at {} voxels/s for {} s into fresh terrain, view radius {} chunks ({} chunks a view)",
        options.walkers,
        options.speed,
        options.seconds,
        options.view_radius,
        geometry::chunks_in_view([0, 0, 0], options.view_radius).len()
    );
    let cpu_before = server.sample();
    let walkers: Vec<_> = (0..options.walkers)
        .map(|index| {
            let (address, options) = (address.clone(), options.clone());
            std::thread::spawn(move || walk(&address, index, &options))
        })
        .collect();
    let reports: Vec<WalkReport> = walkers
        .into_iter()
        .map(|walker| {
            walker.join().unwrap_or_else(|_| WalkReport {
                error: Some("a walker thread panicked".into()),
                ..WalkReport::default()
            })
        })
        .collect();
    let mut ok = true;
    for error in reports.iter().filter_map(|r| r.error.as_ref()) {
        println!("FAILED: {error}");
        ok = false;
    }
    let mut waits: Vec<f64> = reports.iter().flat_map(|r| r.waits.clone()).collect();
    waits.sort_by(f64::total_cmp);
    let mut firsts: Vec<f64> = reports.iter().filter_map(|r| r.first_view).collect();
    firsts.sort_by(f64::total_cmp);
    let passed_by: u32 = reports.iter().map(|r| r.passed_by).sum();
    let walked: f64 = reports.iter().map(|r| r.walked_seconds).sum();
    let full: f64 = reports.iter().map(|r| r.full_seconds).sum();
    let corrections: u32 = reports.iter().map(|r| r.corrections).sum();
    let received: u64 = reports.iter().map(|r| r.chunks_received).sum();
    let sections: HashSet<Pos> = reports
        .iter()
        .flat_map(|r| r.sections.iter().copied())
        .collect();
    let per_walk_second = sections.len() as f64 / (walked / f64::from(options.walkers.max(1)));
    println!(
        "first full view at the spawn point: median {:.2} s, max {:.2} s",
        percentile(&firsts, 0.5),
        percentile(&firsts, 1.0)
    );
    println!(
        "{:<40} {:>8} {:>8} {:>8} {:>8} {:>8} {:>9} {:>7}",
        "walking", "chunks", "p50 s", "p90 s", "p99 s", "max s", "passed by", "full %"
    );
    println!(
        "{:<40} {:>8} {:>8.2} {:>8.2} {:>8.2} {:>8.2} {:>9} {:>7.0}",
        "a chunk come into view, until it arrives",
        waits.len(),
        percentile(&waits, 0.5),
        percentile(&waits, 0.9),
        percentile(&waits, 0.99),
        percentile(&waits, 1.0),
        passed_by,
        100.0 * full / walked.max(f64::EPSILON)
    );
    println!(
        "chunks received {received}, corrections {corrections}; the views took {} distinct sections, {per_walk_second:.1} a second",
        sections.len()
    );
    // Where the server's threads went: each module's handlers (worldgen's
    // pool threads are not in its figure).
    if let Some(modules) = crate::loadtest::module_table(&mut server) {
        let busy: Vec<String> = modules
            .iter()
            .filter(|m| m.busy_seconds >= 0.1)
            .map(|m| {
                format!(
                    "{} {:.1} s (wait p99 {})",
                    m.name, m.busy_seconds, m.wait_p99
                )
            })
            .collect();
        println!("server: busy in handlers since start: {}", busy.join(", "));
    }
    if let (Some(first), Some(last)) = (cpu_before, server.sample()) {
        println!(
            "server: CPU during the walk {:.0} % of one core",
            cpu_percent(&first, &last)
        );
    }
    match server.command("world", &["world: "], Duration::from_secs(30)) {
        Ok(line) => println!("server: {}", line.trim()),
        Err(error) => println!("server: `world`: {error:#}"),
    }
    let status = server.stop(Duration::from_secs(60));
    if status != Some(0) {
        println!("server: exit status after `stop`: {status:?}");
        ok = false;
    }
    // Capacity: headless pregen of a square of sections around the origin
    // in the same world (those the walk made are skipped), nothing waiting.
    let mut args = Server::start_args(layout, &server_options);
    args.extend(
        [
            "pregen".to_string(),
            "--radius".to_string(),
            options.pregen_radius.to_string(),
            "--height".to_string(),
            "1".to_string(),
        ]
        .map(Into::into),
    );
    let mut headless = Server::spawn(&layout.server_bin, &args, Stdio::piped())?;
    headless.log_to(&layout.path("pregen.log"))?;
    let line = headless
        .wait_for("pregen: generated", Duration::from_secs(900))
        .with_context(|| headless.failure("headless pregen did not finish in 15 minutes"))?;
    match pregen_result(&line) {
        Some((generated, seconds)) if seconds > 0.0 => {
            let rate = generated as f64 / seconds;
            println!(
                "headless pregen (nothing waiting): {generated} sections in {seconds:.1} s = {rate:.1} sections/s; the walk needed {per_walk_second:.1}/s = {:.3} of it",
                per_walk_second / rate
            );
        }
        _ => println!("headless pregen: {}", line.trim()),
    }
    if headless.wait_exit(Duration::from_secs(60)) != Some(0) {
        println!("headless pregen: did not exit with 0");
        ok = false;
    }
    Ok(ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pregen_line_is_read() {
        assert_eq!(
            pregen_result("INFO [voxelworld] pregen: generated 338 sections in 4.2 s"),
            Some((338, 4.2))
        );
        assert_eq!(pregen_result("pregen: 3 sections to generate"), None);
    }
}
