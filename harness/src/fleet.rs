//! A fleet of `buildat-client --bots` processes running
//! `scripts/bots/loadbot.lua` against a server, and what their output says:
//! sessions spawned and ended (with exit codes), ping round trips per time
//! window, lost pings, actions, Lua errors, chunks received.
//!
//! Owns: the client processes and the parsing of their stderr. Does not own:
//! the server, or the verdicts (the tests).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::time::{Duration, Instant};

use anyhow::Context;

use crate::histogram::Histogram;
use crate::layout::Layout;
use crate::proc_stats::{self, Sample};

/// The server setting a fleet's server needs: the bots (`loadbot.lua`,
/// `lightbots`) travel home 12 voxels a move, a move a second, faster than
/// a player walks (the default `main.max_speed` is 6.75, 1.5× the
/// client's walk); their server allows the 24 it allowed before, so the
/// load is what it was.
pub const BOTS_MAX_SPEED: &str = "main.max_speed=24";

/// How a fleet is made.
#[derive(Debug, Clone)]
pub struct FleetOptions {
    pub bots: u32,
    /// Sessions per client process (each session is a thread with its own
    /// Lua VM).
    pub per_process: u32,
    /// Start the processes this far apart.
    pub ramp: Duration,
    /// Each process quits (exit 0) after this long.
    pub seconds: f64,
    /// Rust light bots (`buildat-harness lightbots`, this binary) instead
    /// of `buildat-client --bots` with the Lua bot.
    pub light: bool,
    /// Run the client processes under `nice -n` this (0: as the harness
    /// runs), so a server sharing the machine with its bots gets the CPU
    /// first, as it would on a machine of its own.
    pub nice: u8,
}

/// Counts of a `loadbot report` or `loadbot final` line, summed.
#[derive(Debug, Default, Clone)]
pub struct Counts {
    pub reports: u64,
    pub sent: u64,
    pub answered: u64,
    pub lost: u64,
    pub late: u64,
    pub moves: u64,
    pub digs: u64,
    pub places: u64,
    pub edits: u64,
    pub refused: u64,
    pub inflight_at_exit: u64,
    pub hist: Histogram,
}

impl Counts {
    fn add_line(&mut self, fields: &str) -> Option<bool> {
        let mut is_final = false;
        for field in fields.split_whitespace() {
            if field == "final" {
                is_final = true;
            }
            let Some((key, value)) = field.split_once('=') else {
                continue;
            };
            if key == "hist" {
                self.hist.merge(&Histogram::parse(value)?);
                continue;
            }
            let n: u64 = value.parse().ok()?;
            match key {
                "sent" => self.sent += n,
                "answered" => self.answered += n,
                "lost" => self.lost += n,
                "late" => self.late += n,
                "moves" => self.moves += n,
                "digs" => self.digs += n,
                "places" => self.places += n,
                "edits" => self.edits += n,
                "refused" => self.refused += n,
                "inflight" if is_final => self.inflight_at_exit += n,
                _ => {}
            }
        }
        self.reports += 1;
        Some(is_final)
    }

    pub fn merge(&mut self, other: &Counts) {
        self.reports += other.reports;
        self.sent += other.sent;
        self.answered += other.answered;
        self.lost += other.lost;
        self.late += other.late;
        self.moves += other.moves;
        self.digs += other.digs;
        self.places += other.places;
        self.edits += other.edits;
        self.refused += other.refused;
        self.inflight_at_exit += other.inflight_at_exit;
        self.hist.merge(&other.hist);
    }
}

/// What the fleet said so far.
#[derive(Debug, Default)]
pub struct FleetReport {
    pub spawned: u64,
    /// (session, exit code) of every session that ended.
    pub ended: Vec<(String, i32)>,
    /// Sessions that ended with another code than 0, with their last words.
    pub unexpected: Vec<String>,
    pub total: Counts,
    pub lua_errors: u64,
    pub error_lines: Vec<String>,
    pub chunk_packets: u64,
    /// Counts of reports that arrived since the last `take_window`.
    pub window: Counts,
    /// Sums of the `key=value` fields of every `<bot> tally ...` line (bots
    /// other than the load bot).
    pub tallies: std::collections::BTreeMap<String, u64>,
}

impl FleetReport {
    /// Connects, disconnects, pings and Lua errors, with a few examples of
    /// what went wrong.
    pub fn health_lines(&self, bots: u32) -> Vec<String> {
        let t = &self.total;
        let mut lines = vec![
            format!("connects (spawned):          {} of {bots}", self.spawned),
            format!("sessions ended:              {}", self.ended.len()),
            format!("unexpected disconnects:      {}", self.unexpected.len()),
            format!(
                "pings: sent {}, answered {}, lost (no pong in 10 s) {}, late {}, in flight at exit {}",
                t.sent, t.answered, t.lost, t.late, t.inflight_at_exit
            ),
            format!("Lua errors:                  {}", self.lua_errors),
        ];
        for line in self.unexpected.iter().take(10) {
            lines.push(format!("  unexpected: {line}"));
        }
        for line in self.error_lines.iter().take(5) {
            lines.push(format!("  error line: {line}"));
        }
        lines
    }

    /// Every bot connected, none ended with another code than 0, no ping
    /// lost, no Lua error.
    pub fn is_healthy(&self, bots: u32) -> bool {
        self.spawned == u64::from(bots)
            && self.unexpected.is_empty()
            && self.total.lost == 0
            && self.lua_errors == 0
            && self.error_lines.is_empty()
    }
}

pub struct Fleet {
    children: Vec<Child>,
    /// Processes not started yet, with when they are due.
    pending: std::collections::VecDeque<(Instant, Command)>,
    send: Sender<String>,
    lines: Receiver<String>,
    pub report: FleetReport,
    /// Last line of each session that was not a loadbot report, for
    /// explaining unexpected ends.
    last_words: std::collections::HashMap<String, String>,
}

/// A command running `program` with its `leading` arguments first, under
/// `nice -n nice` unless `nice` is 0.
fn niced(program: std::ffi::OsString, leading: &[&str], nice: u8) -> Command {
    let mut command = if nice == 0 {
        Command::new(program)
    } else {
        let mut command = Command::new("nice");
        command.arg("-n").arg(nice.to_string()).arg(program);
        command
    };
    command.args(leading);
    command
}

fn read_lines(stream: impl std::io::Read + Send + 'static, send: Sender<String>) {
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines().map_while(Result::ok) {
            if send.send(line).is_err() {
                return;
            }
        }
    });
}

impl Fleet {
    /// Starts the first client process now; the others start spread over
    /// `ramp`, as [`Fleet::pump`] finds them due. Each has its own cache.
    pub fn start(layout: &Layout, address: &str, options: &FleetOptions) -> anyhow::Result<Self> {
        Self::start_script(layout, address, options, "loadbot.lua")
    }

    /// [`Fleet::start`] with another bot of `scripts/bots/` (`shuffle.lua`:
    /// it logs `shuffle spawned at ...` once spawned, and `shuffle tally
    /// key=value ...` lines, summed in [`FleetReport::tallies`]).
    pub fn start_script(
        layout: &Layout,
        address: &str,
        options: &FleetOptions,
        bot: &str,
    ) -> anyhow::Result<Self> {
        let script = layout.repo.join("scripts").join("bots").join(bot);
        let (send, lines) = channel();
        let per_process = options.per_process.max(1);
        let processes = options.bots.div_ceil(per_process).max(1);
        let now = Instant::now();
        let mut pending = std::collections::VecDeque::new();
        for p in 0..processes {
            let bots = per_process.min(options.bots - p * per_process);
            // The harness's subcommand comes before its options.
            let (program, subcommand, own_args): (
                std::ffi::OsString,
                &[&str],
                Vec<std::ffi::OsString>,
            ) = if options.light {
                let harness = std::env::current_exe().context("the harness binary")?;
                (
                    harness.into(),
                    &["lightbots"],
                    vec!["--seconds".into(), options.seconds.to_string().into()],
                )
            } else {
                (
                    layout.client_bin.clone().into(),
                    &[],
                    vec![
                        "--script".into(),
                        script.clone().into(),
                        "--cache".into(),
                        layout.path(&format!("cache-{p}")).into(),
                        "--quit-after".into(),
                        options.seconds.to_string().into(),
                    ],
                )
            };
            let mut command = niced(program, subcommand, options.nice);
            command
                .arg("--connect")
                .arg(address)
                .arg("--bots")
                .arg(bots.to_string())
                .arg("--name")
                .arg(format!("bot{p}"))
                .args(own_args)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped());
            let due = now + options.ramp.mul_f64(f64::from(p) / f64::from(processes));
            pending.push_back((due, command));
        }
        let mut fleet = Self {
            children: Vec::new(),
            pending,
            send,
            lines,
            report: FleetReport::default(),
            last_words: Default::default(),
        };
        fleet.start_due()?;
        Ok(fleet)
    }

    /// Starts the processes whose time has come.
    fn start_due(&mut self) -> anyhow::Result<()> {
        while let Some((due, _)) = self.pending.front() {
            if *due > Instant::now() {
                break;
            }
            let Some((_, mut command)) = self.pending.pop_front() else {
                break;
            };
            let mut child = command.spawn().context("starting buildat-client")?;
            read_lines(
                child.stderr.take().context("client stderr")?,
                self.send.clone(),
            );
            self.children.push(child);
        }
        Ok(())
    }

    /// Whether every process has been started.
    pub fn all_started(&self) -> bool {
        self.pending.is_empty()
    }

    pub fn pids(&self) -> Vec<u32> {
        self.children.iter().map(Child::id).collect()
    }

    /// CPU seconds and RSS of all client processes together.
    pub fn sample(&self) -> Option<Sample> {
        let samples: Vec<Sample> = self
            .pids()
            .into_iter()
            .filter_map(proc_stats::sample)
            .collect();
        let first = samples.first()?;
        Some(Sample {
            at: first.at,
            cpu_seconds: samples.iter().map(|s| s.cpu_seconds).sum(),
            rss_kib: samples.iter().map(|s| s.rss_kib).sum(),
        })
    }

    /// Starts the processes now due and reads every line printed so far.
    pub fn pump(&mut self) {
        if let Err(error) = self.start_due() {
            self.report.error_lines.push(format!("{error:#}"));
            self.pending.clear();
        }
        while let Ok(line) = self.lines.try_recv() {
            self.take_line(&line);
        }
    }

    fn take_line(&mut self, line: &str) {
        let (session, rest) = line.split_once(": ").unwrap_or(("?", line));
        let report = &mut self.report;
        if let Some(fields) = rest.split_once("loadbot report ").map(|(_, f)| f) {
            let mut counts = Counts::default();
            if counts.add_line(fields).is_some() {
                report.window.merge(&counts);
                report.total.merge(&counts);
            }
            return;
        }
        if let Some(fields) = rest.split_once("loadbot final ").map(|(_, f)| f) {
            let mut counts = Counts::default();
            if counts.add_line(&format!("final {fields}")).is_some() {
                report.window.merge(&counts);
                report.total.merge(&counts);
            }
            return;
        }
        if rest.contains("loadbot spawned at ") || rest.contains("shuffle spawned at ") {
            report.spawned += 1;
        } else if let Some(fields) = rest.split_once(" tally ").map(|(_, f)| f) {
            for (key, value) in fields.split_whitespace().filter_map(|f| f.split_once('=')) {
                if let Ok(value) = value.parse::<u64>() {
                    *report.tallies.entry(key.to_string()).or_default() += value;
                }
            }
            return;
        } else if let Some(code) = rest.strip_prefix("session ended, exit code ") {
            let code = code.trim().parse().unwrap_or(-1);
            report.ended.push((session.to_string(), code));
            if code != 0 {
                let words = self.last_words.get(session).cloned().unwrap_or_default();
                report
                    .unexpected
                    .push(format!("{session}: exit code {code}: {words}"));
            }
            return;
        } else if let Some(files) = rest.strip_prefix("files: ") {
            if let Some(errors) = files
                .split("scripts: ")
                .nth(1)
                .and_then(|s| s.split(" run, ").nth(1))
                .and_then(|s| s.split(' ').next())
                .and_then(|n| n.parse::<u64>().ok())
            {
                report.lua_errors += errors;
            }
        } else if let Some(world) = rest.strip_prefix("world: held ") {
            if let Some(n) = world
                .split("received ")
                .nth(1)
                .and_then(|s| s.split(' ').next())
                .and_then(|n| n.parse::<u64>().ok())
            {
                report.chunk_packets += n;
            }
        } else if rest.starts_with("error ") && report.error_lines.len() < 20 {
            report.error_lines.push(line.to_string());
        }
        self.last_words
            .insert(session.to_string(), rest.to_string());
    }

    /// The counts reported since the last call.
    pub fn take_window(&mut self) -> Counts {
        std::mem::take(&mut self.report.window)
    }

    /// Waits for every process to exit (killing them after `timeout`), reads
    /// their last lines; true if all exited by themselves.
    pub fn wait(&mut self, timeout: Duration) -> bool {
        self.pending.clear();
        let deadline = Instant::now() + timeout;
        let mut all_exited = true;
        for child in &mut self.children {
            loop {
                if let Ok(Some(_)) = child.try_wait() {
                    break;
                }
                if Instant::now() > deadline {
                    let _ = child.kill();
                    let _ = child.wait();
                    all_exited = false;
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        // The reader threads end with the pipes; give them a moment.
        std::thread::sleep(Duration::from_millis(200));
        self.pump();
        all_exited
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fleet_from(lines: &[&str]) -> Fleet {
        let (send, receive) = channel();
        for line in lines {
            send.send(line.to_string()).expect("send");
        }
        let mut fleet = Fleet {
            children: Vec::new(),
            pending: Default::default(),
            send,
            lines: receive,
            report: FleetReport::default(),
            last_words: Default::default(),
        };
        fleet.pump();
        fleet
    }

    #[test]
    fn a_niced_fleet_runs_its_program_under_nice_and_a_plain_one_as_is() {
        let niced_command = niced("buildat-harness".into(), &["lightbots"], 15);
        assert_eq!(niced_command.get_program(), "nice");
        let args: Vec<_> = niced_command.get_args().collect();
        assert_eq!(args, ["-n", "15", "buildat-harness", "lightbots"]);
        let plain = niced("buildat-harness".into(), &["lightbots"], 0);
        assert_eq!(plain.get_program(), "buildat-harness");
        let args: Vec<_> = plain.get_args().collect();
        assert_eq!(args, ["lightbots"]);
    }

    #[test]
    fn parses_the_client_and_loadbot_lines() {
        let fleet = fleet_from(&[
            "bot0-1: info    loadbot: loadbot spawned at 0.5,20.0,0.5",
            "bot0-1: info    main: spawned at 0.5,20.0,0.5 as peer 1",
            "bot0-3: info    shuffle: shuffle tally acts=4 ok=3 refused=1 drops=0",
            "bot0-4: info    shuffle: shuffle tally acts=2 ok=2 refused=0 drops=1",
            "bot0-1: info    loadbot: loadbot report sent=10 answered=9 lost=1 late=0 moves=5 digs=2 places=1 edits=7 refused=1 chunks=120 inflight=0 hist=3:8,150:1",
            "bot0-1: info    loadbot: loadbot final sent=2 answered=1 lost=0 late=1 moves=1 digs=0 places=0 edits=0 refused=0 chunks=120 inflight=1 hist=4:1",
            "bot0-1: files: 3 announced, 3 requested, 100 bytes received; scripts: 2 run, 1 Lua errors",
            "bot0-1: world: held 120 chunks, received 130 chunk packets (10 updates), first chunk (0,0,0)",
            "bot0-1: session ended, exit code 0",
            "bot0-2: error   main: something broke",
            "bot0-2: disconnected by the server: kicked",
            "bot0-2: session ended, exit code 5",
        ]);
        let r = &fleet.report;
        assert_eq!(r.spawned, 1, "the game's own spawn line is not a bot's");
        assert_eq!(r.tallies.get("acts"), Some(&6));
        assert_eq!(r.tallies.get("ok"), Some(&5));
        assert_eq!(r.tallies.get("drops"), Some(&1));
        assert_eq!(r.total.sent, 12);
        assert_eq!(r.total.answered, 10);
        assert_eq!(r.total.lost, 1);
        assert_eq!(r.total.late, 1);
        assert_eq!(r.total.inflight_at_exit, 1);
        assert_eq!(r.total.hist.total(), 10);
        assert_eq!(r.lua_errors, 1);
        assert_eq!(r.chunk_packets, 130);
        assert_eq!(r.ended.len(), 2);
        assert_eq!(r.error_lines.len(), 1);
        assert_eq!(
            r.unexpected,
            ["bot0-2: exit code 5: disconnected by the server: kicked"]
        );
    }
}
