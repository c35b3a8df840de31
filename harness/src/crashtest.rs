//! `crashtest ITERATIONS [--pg URL]`: kill -9 the server while it saves
//! under load, reopen the world, check its soundness (`PRAGMA
//! integrity_check`; in PostgreSQL, no node outside a section) and that no
//! acknowledged save is lost, again and again on the same world. With
//! `--pg` the world is stored in a fresh database on that cluster, dropped
//! at the end.
//!
//! The saver is the `world_probe` fixture: every tick it writes numbered
//! rounds into four sections and logs `saved round N` once voxelworld's
//! save returned (the acknowledgement). Meanwhile loadbots walk, dig and
//! place, and voxelworld saves their edits every half second. After the
//! kill every section must hold the last acknowledged round, or the one
//! after it (a save that committed but was not yet logged).
//!
//! Owns: the crash loop and its table. Does not own: decoding the stored
//! rounds (`world_check`).

use std::time::{Duration, Instant};

use crate::fleet::{Fleet, FleetOptions};
use crate::layout::Layout;
use crate::pg::TestDatabase;
use crate::server::{Server, ServerOptions};
use crate::world_check::{SECTIONS, WorldDb};
use anyhow::Context;

#[derive(Debug, Clone, clap::Args)]
pub struct CrashOptions {
    /// Number of kill -9 iterations.
    pub iterations: u32,
    /// Bots playing during each iteration.
    #[arg(long, default_value_t = 20)]
    pub bots: u32,
    /// Seed of the kill timing (default: from the clock; printed).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Store the world in PostgreSQL: a fresh database on the cluster this
    /// URL names (any database there), dropped at the end.
    #[arg(long, value_name = "URL")]
    pub pg: Option<String>,
}

/// xorshift64*: enough to spread kill times, reproducible from its seed.
pub(crate) struct Random(pub(crate) u64);

impl Random {
    /// Seeded with `seed`, or from the clock (printed by the caller).
    pub(crate) fn seed(seed: Option<u64>) -> u64 {
        seed.unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
                | 1
        })
    }

    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n.max(1)
    }
}

/// The highest `saved round N` logged from line `from` on.
fn last_acknowledged(server: &Server, from: usize) -> Option<u64> {
    server
        .lines_with(from, "saved round ")
        .iter()
        .filter_map(|l| l.rsplit("saved round ").next()?.trim().parse().ok())
        .max()
}

pub fn run(layout: &Layout, options: &CrashOptions) -> anyhow::Result<bool> {
    let seed = Random::seed(options.seed);
    let mut random = Random(seed);
    let database = match &options.pg {
        Some(url) => Some(TestDatabase::create(url, "buildat_crashtest")?),
        None => None,
    };
    println!(
        "crashtest: {} iterations, {} bots, seed {seed}, storage {}",
        options.iterations,
        options.bots,
        if database.is_some() {
            "postgresql"
        } else {
            "sqlite"
        }
    );
    let modules = layout.add_fixtures("world_probe", &["world_probe"])?;
    let world = layout.path("world");
    let mut settings = vec![
        "voxelworld.save_interval_s=0.5".to_string(),
        crate::fleet::BOTS_MAX_SPEED.to_string(),
    ];
    if let Some(database) = &database {
        settings.push(format!("voxelworld.storage={}", database.url));
    }
    let server_options = ServerOptions {
        world: world.clone(),
        extra_module_paths: vec![modules],
        settings,
        tick_ms: 20,
        watchdog_ms: None,
        slow_handler_ms: None,
        log_file: layout.path("server.log"),
    };
    println!(
        "{:>4} {:>8} {:>8} {:>10} {:>22} {:>9} {:>6} time",
        "iter", "start at", "acked", "bots", "stored rounds", "integrity", "lost"
    );
    let mut previous: Option<u64> = None;
    let mut lost_total = 0u64;
    let mut integrity_failures = 0u32;
    let mut restart_mismatches = 0u32;
    for iteration in 1..=options.iterations {
        let started = Instant::now();
        let mut server = Server::start(layout, &server_options)?;
        let ready = server
            .wait_for("world_probe ready at round ", Duration::from_secs(120))
            .with_context(|| server.failure("world_probe never became ready"))?;
        let start: u64 = ready
            .rsplit(' ')
            .next()
            .and_then(|n| n.trim().parse().ok())
            .context("the ready line names a round")?;
        if previous.is_some_and(|p| p != start) {
            restart_mismatches += 1;
        }
        let mut fleet = Fleet::start(
            layout,
            &server.address,
            &FleetOptions {
                bots: options.bots,
                per_process: options.bots.max(1),
                ramp: Duration::ZERO,
                seconds: 600.0,
                light: false,
                nice: 0,
            },
        )?;
        // Let the bots join and play for 1-3 s, then kill at a save.
        let play = Duration::from_millis(1000 + random.below(2000));
        let play_until = Instant::now() + play;
        while Instant::now() < play_until {
            std::thread::sleep(Duration::from_millis(50));
            server.pump();
            fleet.pump();
        }
        let acked_now = last_acknowledged(&server, 0).unwrap_or(start);
        let target = acked_now + 1 + random.below(5);
        server
            .wait_for(&format!("saved round {target}"), Duration::from_secs(60))
            .with_context(|| server.failure("the rounds stopped"))?;
        std::thread::sleep(Duration::from_micros(random.below(30_000)));
        server.kill();
        fleet.pump();
        let spawned = fleet.report.spawned;
        drop(fleet);
        let acknowledged = last_acknowledged(&server, 0).unwrap_or(start);
        drop(server);
        let mut connection = match &database {
            Some(database) => WorldDb::postgres(&database.url),
            None => WorldDb::sqlite(&world.join("world.sqlite")),
        }
        .context("reopening the world")?;
        let verdict = connection.integrity()?;
        if verdict != "ok" {
            integrity_failures += 1;
        }
        let mut rounds = Vec::new();
        let mut lost = 0;
        for section in SECTIONS {
            let round = connection.stored_round(section)?;
            match round {
                Some(r) if r == acknowledged || r == acknowledged + 1 => {}
                _ => lost += 1,
            }
            rounds.push(round);
        }
        drop(connection);
        lost_total += lost;
        let shown: Vec<String> = rounds
            .iter()
            .map(|r| r.map_or("-".to_string(), |r| r.to_string()))
            .collect();
        println!(
            "{:>4} {:>8} {:>8} {:>10} {:>22} {:>9} {:>6} {:.1} s",
            iteration,
            start,
            acknowledged,
            format!("{spawned}/{}", options.bots),
            shown.join(","),
            verdict,
            lost,
            started.elapsed().as_secs_f64()
        );
        previous = rounds.first().copied().flatten();
    }
    println!(
        "crashtest: {} iterations; integrity not ok: {integrity_failures}; sections missing an acknowledged save: {lost_total}; restarts not at the stored round: {restart_mismatches}",
        options.iterations
    );
    let pass = integrity_failures == 0 && lost_total == 0 && restart_mismatches == 0;
    println!("crashtest: {}", if pass { "PASS" } else { "FAIL" });
    Ok(pass)
}
