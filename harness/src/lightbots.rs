//! `lightbots`: players written in Rust, one thread each, that play as
//! `scripts/bots/loadbot.lua` does (travel to a home on a spiral, walk a
//! square around it, dig and place back, ping twice a second) without the
//! client's Lua, world decoding or drawing, so a load test measures the
//! server and not the client processes sharing its cores.
//!
//! Owns: the bots' behaviour and their report lines, written to stderr in
//! the Lua bot's format (`SESSION: loadbot report sent=... hist=...`,
//! `loadbot final`, `loadbot spawned at`, `session ended, exit code N`) so
//! [`crate::fleet`] reads either kind the same. Does not own: the server,
//! the fleet's processes or the verdicts.
//!
//! A bot acknowledges the chunks it receives every 100 ms (so the world
//! stream runs as for a real client) and counts them; it knows no voxel, so it walks at
//! the height the server last put it and digs the voxel under its feet
//! beside it (a refusal is counted, as for the Lua bot).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use buildat_format::Packet;
use buildat_main_api::{Correct, Dig, Edits, Move, Ping, Place, Pong, Refused, Spawn};
use buildat_voxelworld_api::stream::{Ack, Chunk};

use crate::histogram::Histogram;
use crate::raw_client::RawClient;

#[derive(Debug, Clone, clap::Args)]
pub struct LightBotOptions {
    /// The server's address.
    #[arg(long)]
    pub connect: String,
    /// Bots in this process (a thread each).
    #[arg(long, default_value_t = 50)]
    pub bots: u32,
    /// Session names are NAME-1, NAME-2, ...
    #[arg(long, default_value = "lightbot")]
    pub name: String,
    /// Each bot plays this long, in seconds.
    #[arg(long)]
    pub seconds: f64,
}

/// As the Lua bot: seconds between pings, moves, actions and reports.
const PING_EVERY: f64 = 0.5;
const MOVE_EVERY: f64 = 1.0;
const ACT_EVERY: f64 = 1.5;
const REPORT_EVERY: f64 = 5.0;
/// Seconds between two acknowledgements of the chunks received, as a
/// client acknowledges once a frame or poll: one packet per chunk would
/// spend a crowded server's fair share of input on acks and queue the
/// pings behind them.
const ACK_EVERY: f64 = 0.1;
/// A ping unanswered this long counts as lost.
const LOST_AFTER: f64 = 10.0;
/// Voxels: the square around the home, steps around it and on the way.
const HALF_SIDE: f64 = 6.0;
const STEP: f64 = 3.0;
const TRAVEL_STEP: f64 = 12.0;
const SPREAD: f64 = 16.0;

/// One window's counts, as the Lua bot's report line has them.
#[derive(Default)]
struct Window {
    sent: u64,
    answered: u64,
    lost: u64,
    late: u64,
    moves: u64,
    digs: u64,
    places: u64,
    edits: u64,
    refused: u64,
    hist: Histogram,
}

impl Window {
    fn line(&self, kind: &str, chunks: u64, inflight: usize) -> String {
        format!(
            "loadbot {kind} sent={} answered={} lost={} late={} moves={} digs={} places={} edits={} refused={} chunks={chunks} inflight={inflight} hist={}",
            self.sent,
            self.answered,
            self.lost,
            self.late,
            self.moves,
            self.digs,
            self.places,
            self.edits,
            self.refused,
            self.hist.to_field()
        )
    }
}

/// One bot's session: joins, plays for `seconds`, reports; its exit code
/// (0, or 1 if the server closed it or it could not join).
fn play(session: &str, address: &str, seconds: f64, stderr: &Mutex<()>) -> i32 {
    let say = |line: String| {
        let _guard = stderr.lock();
        eprintln!("{session}: {line}");
    };
    let mut client = match RawClient::join(address, session, Duration::from_secs(60)) {
        Ok(client) => client,
        Err(error) => {
            say(format!("error   lightbot: {error}"));
            return 1;
        }
    };
    let spawn = client.spawn;
    say(format!(
        "loadbot spawned at {:.1},{:.1},{:.1}",
        spawn[0], spawn[1], spawn[2]
    ));
    let peer = client.peer as f64;
    let (angle, reach) = (peer * 2.39996, SPREAD * peer.sqrt());
    let home = [
        spawn[0] + reach * angle.cos(),
        spawn[2] + reach * angle.sin(),
    ];
    let corners = [
        home,
        [home[0] - HALF_SIDE, home[1] - HALF_SIDE],
        [home[0] + HALF_SIDE, home[1] - HALF_SIDE],
        [home[0] + HALF_SIDE, home[1] + HALF_SIDE],
        [home[0] - HALF_SIDE, home[1] + HALF_SIDE],
    ];
    let (mut corner, mut step) = (0usize, TRAVEL_STEP);
    let mut position = spawn;
    let mut dug: Option<[i32; 3]> = None;
    let mut window = Window::default();
    let mut outstanding: HashMap<u32, Instant> = HashMap::new();
    let mut seq = 0u32;
    let mut chunks = 0u64;
    let mut unacked = 0u32;
    let mut next_ack = Instant::now();
    let start = Instant::now();
    let every = |s: f64| Duration::from_secs_f64(s);
    // Players joining together do not act in step: each bot's timers start
    // at its own phase (spread evenly by its peer id).
    let phase = (peer * 0.618_034).fract();
    let (mut next_ping, mut next_move, mut next_act, mut next_report) = (
        start + every(PING_EVERY * phase),
        start + every(MOVE_EVERY * (1.0 + phase)),
        start + every(ACT_EVERY * (1.0 + phase)),
        start + every(REPORT_EVERY),
    );
    let end = start + every(seconds);
    let mut code = 0;
    while Instant::now() < end {
        let now = Instant::now();
        let mut sent = Ok(());
        if now >= next_ping {
            next_ping += every(PING_EVERY);
            seq = seq.wrapping_add(1);
            outstanding.insert(seq, now);
            window.sent += 1;
            sent = sent.and(client.queue_packet(&Ping {
                data: seq.to_le_bytes().to_vec(),
            }));
        }
        if now >= next_move {
            next_move += every(MOVE_EVERY);
            let [tx, tz] = corners[corner];
            let (dx, dz) = (tx - position[0], tz - position[2]);
            let distance = dx.hypot(dz);
            if distance < 0.01 {
                // Home: round the square at walking pace from now on.
                corner = corner % 4 + 1;
                step = STEP;
            } else {
                let h = step.min(distance);
                position[0] += dx / distance * h;
                position[2] += dz / distance * h;
                window.moves += 1;
                sent = sent.and(client.queue_packet(&Move { position }));
            }
        }
        if now >= next_act {
            next_act += every(ACT_EVERY);
            let below = [
                position[0].floor() as i32 + 1,
                position[1].floor() as i32 - 1,
                position[2].floor() as i32,
            ];
            match dug.take() {
                Some(voxel) => {
                    window.places += 1;
                    sent = sent.and(client.queue_packet(&Place {
                        voxel,
                        name: "stone".into(),
                    }));
                }
                None => {
                    window.digs += 1;
                    dug = Some(below);
                    sent = sent.and(client.queue_packet(&Dig { voxel: below }));
                }
            }
        }
        if unacked > 0 && now >= next_ack {
            next_ack = now + every(ACK_EVERY);
            sent = sent.and(client.queue_packet(&Ack { chunks: unacked }));
            unacked = 0;
        }
        if now >= next_report {
            next_report += every(REPORT_EVERY);
            let before = outstanding.len();
            outstanding.retain(|_, at| at.elapsed().as_secs_f64() <= LOST_AFTER);
            window.lost += (before - outstanding.len()) as u64;
            say(window.line("report", chunks, outstanding.len()));
            window = Window::default();
        }
        if sent.and_then(|()| client.flush()).is_err() {
            code = 1;
            break;
        }
        let ack_due = if unacked > 0 { next_ack } else { end };
        let due = [next_ping, next_move, next_act, next_report, ack_due]
            .into_iter()
            .min()
            .unwrap_or(now);
        let wait = due
            .saturating_duration_since(Instant::now())
            .max(Duration::from_millis(1));
        match client.recv(wait) {
            Ok(Some(packet)) => match packet.name.as_str() {
                Pong::NAME => {
                    let answered = Pong::decode(&packet.data)
                        .ok()
                        .and_then(|p| p.data.get(..4)?.try_into().ok())
                        .map(u32::from_le_bytes)
                        .and_then(|s| outstanding.remove(&s));
                    if let Some(at) = answered {
                        window.answered += 1;
                        window.hist.record_ms(at.elapsed().as_secs_f64() * 1e3);
                    }
                }
                Chunk::NAME => {
                    chunks += 1;
                    unacked += 1;
                }
                Edits::NAME => {
                    window.edits += Edits::count(&packet.data).map_or(0, |n| n as u64);
                }
                Refused::NAME => window.refused += 1,
                Correct::NAME => {
                    if let Ok(correct) = Correct::decode(&packet.data) {
                        position = correct.position;
                    }
                }
                Spawn::NAME => {
                    if let Ok(spawned) = Spawn::decode(&packet.data) {
                        position = spawned.position;
                    }
                }
                _ => {}
            },
            Ok(None) => {}
            Err(error) => {
                say(format!("disconnected: {error}"));
                code = 1;
                break;
            }
        }
    }
    // The pongs still on their way, as the Lua bot's final line has them.
    let deadline = Instant::now() + Duration::from_secs(2);
    while code == 0 && !outstanding.is_empty() && Instant::now() < deadline {
        if let Some(packet) = client.recv_some(Duration::from_millis(100))
            && packet.name == Pong::NAME
            && let Some(at) = packet
                .data
                .get(..4)
                .and_then(|b| b.try_into().ok())
                .and_then(|b| outstanding.remove(&u32::from_le_bytes(b)))
        {
            window.answered += 1;
            window.hist.record_ms(at.elapsed().as_secs_f64() * 1e3);
        }
    }
    say(window.line("final", chunks, outstanding.len()));
    say(format!(
        "world: held 0 chunks, received {chunks} chunk packets (a light bot keeps none)"
    ));
    client.close();
    say(format!("session ended, exit code {code}"));
    code
}

/// Runs the bots, each on its own thread; true if every one ended well.
pub fn run(options: &LightBotOptions) -> bool {
    let stderr = Arc::new(Mutex::new(()));
    let failed = Arc::new(AtomicU64::new(0));
    let threads: Vec<_> = (1..=options.bots)
        .map(|i| {
            let (stderr, failed) = (stderr.clone(), failed.clone());
            let session = format!("{}-{i}", options.name);
            let (address, seconds) = (options.connect.clone(), options.seconds);
            std::thread::Builder::new()
                .name(session.clone())
                .stack_size(256 * 1024)
                .spawn(move || {
                    if play(&session, &address, seconds, &stderr) != 0 {
                        failed.fetch_add(1, Ordering::Relaxed);
                    }
                })
        })
        .collect();
    for thread in threads {
        match thread {
            Ok(handle) => {
                if handle.join().is_err() {
                    failed.fetch_add(1, Ordering::Relaxed);
                }
            }
            Err(_) => {
                failed.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
    failed.load(Ordering::Relaxed) == 0
}
