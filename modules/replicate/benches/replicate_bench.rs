//! Replication benchmark: what `replicate` sends and what a tick of it
//! costs, against the naive floor run in the same process: every node's
//! whole state (`DynamicNode`, bincode) to every peer in range every tick.
//! Four worlds of 100 peers: creatures moving among the peers; the same
//! with ten times as many creatures moving far from every peer (the cost
//! must follow what peers see, not the world's size); the first with every
//! knower told every change (no rates by distance); and idle creatures.
//! Then the game's shape (`loadtest 500 --set creatures.count=2000 --set
//! creatures.radius=100`): 500 peers among 2,000 creatures, each knowing
//! its nearest 256, with rates by distance and without (no naive floor:
//! its whole states to 500 peers are the same for both). Columns: nodes
//! each peer knows; bytes a peer gets a second per node it knows, sent by
//! `replicate` and by the naive floor, and their ratio; the median time of
//! a tick (taking the moves, then `Replicator::tick`) and of the floor's
//! encoding.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use buildat_format::payload;
use buildat_module_replicate::interest::{DEFAULT_FULL_RATE_RADIUS, Replicator};
use buildat_voxelworld_api::{DynamicNode, NodeMotion};

const TICK_S: f64 = 0.1;
const TICKS: u32 = 100;
const NEAR_CREATURES: u64 = 2_000;
const RADIUS: f64 = 96.0;

/// One world: `peers` viewers and the near creatures in a square `area`
/// voxels wide, `far` more creatures far from every peer.
struct Case {
    name: &'static str,
    peers: u64,
    area: f64,
    max_known: usize,
    far: u64,
    moving: bool,
    full_rate_radius: f64,
    /// Whether to run the naive floor beside it.
    naive: bool,
}

/// A small deterministic generator (xorshift).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

struct Creature {
    node: DynamicNode,
    heading: f64,
    turn_in: u32,
}

fn creature(id: u64, x: f64, z: f64, rng: &mut Rng) -> Creature {
    let vars = BTreeMap::from([
        ("creature".to_string(), b"sheep".to_vec()),
        ("colour".to_string(), vec![230, 230, 230]),
        (
            "size".to_string(),
            [0.9f32, 1.2, 1.4]
                .iter()
                .flat_map(|f| f.to_le_bytes())
                .collect(),
        ),
    ]);
    Creature {
        node: DynamicNode::at_rest(id, [x, 20.0, z], true, vars),
        heading: rng.next() * std::f64::consts::TAU,
        turn_in: (rng.next() * 30.0) as u32,
    }
}

/// A wandering step: 3 voxels a second along a heading that changes every
/// few seconds, turned to face it.
fn walk(c: &mut Creature, rng: &mut Rng) {
    if c.turn_in == 0 {
        c.heading = rng.next() * std::f64::consts::TAU;
        c.turn_in = 10 + (rng.next() * 40.0) as u32;
    }
    c.turn_in -= 1;
    let (dx, dz) = (c.heading.cos() * 3.0, c.heading.sin() * 3.0);
    c.node.position[0] += dx * TICK_S;
    c.node.position[2] += dz * TICK_S;
    c.node.velocity = [dx as f32, 0.0, dz as f32];
    let half = (c.heading / 2.0) as f32;
    c.node.orientation = [0.0, half.sin(), 0.0, half.cos()];
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort_unstable();
    times.get(times.len() / 2).copied().unwrap_or_default()
}

struct Figures {
    bytes_per_peer_s_node: f64,
    naive_bytes_per_peer_s_node: f64,
    known_per_peer: f64,
    tick: Duration,
    naive_tick: Duration,
    naive: bool,
}

fn run(case: &Case) -> Figures {
    let Case {
        peers,
        area,
        moving,
        ..
    } = *case;
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut replicator = Replicator::new(RADIUS, case.max_known, case.full_rate_radius);
    let peers: Vec<(u64, [f64; 3])> = (0..peers)
        .map(|p| (p + 1, [rng.next() * area, 20.0, rng.next() * area]))
        .collect();
    let mut creatures: Vec<Creature> = (0..NEAR_CREATURES)
        .map(|i| creature(i + 1, rng.next() * area, rng.next() * area, &mut rng))
        .collect();
    // Far away: a band 10,000 voxels out, never within anyone's radius.
    for i in 0..case.far {
        let c = creature(
            1_000_000 + i,
            10_000.0 + rng.next() * 20_000.0,
            10_000.0 + rng.next() * 20_000.0,
            &mut rng,
        );
        creatures.push(c);
    }
    for (peer, position) in &peers {
        replicator.set_viewer(*peer, *position);
    }
    for c in &creatures {
        replicator.node_changed(&c.node);
    }
    replicator.tick(0).expect("first tick");
    let start_bytes = replicator.stats().bytes_sent;
    let mut tick_times = Vec::with_capacity(TICKS as usize);
    let mut naive_times = Vec::with_capacity(TICKS as usize);
    let mut naive_bytes = 0u64;
    let mut naive_known = 0u64;
    let mut known = 0u64;
    for t in 1..=TICKS {
        if moving {
            for c in &mut creatures {
                walk(c, &mut rng);
            }
        }
        let started = Instant::now();
        if moving {
            for c in &creatures {
                replicator.node_moved(&NodeMotion {
                    id: c.node.id,
                    position: c.node.position,
                    orientation: c.node.orientation,
                    velocity: c.node.velocity,
                });
            }
        }
        let out = replicator.tick(u64::from(t) * 100).expect("tick");
        tick_times.push(started.elapsed());
        std::hint::black_box(out);
        known += replicator.stats().known;
        if !case.naive {
            continue;
        }
        // The naive floor: each peer gets every node in its range whole.
        let started = Instant::now();
        for (_, at) in &peers {
            let mut packet = Vec::new();
            for c in &creatures {
                let p = c.node.position;
                let near = (0..3).all(|i| (p[i] - at[i]).abs() <= RADIUS);
                if near {
                    naive_known += 1;
                    packet.extend(payload::encode(&c.node).expect("encode"));
                }
            }
            naive_bytes += packet.len() as u64;
        }
        naive_times.push(started.elapsed());
    }
    let seconds = f64::from(TICKS) * TICK_S;
    let peer_count = peers.len() as f64;
    let known_per_peer = known as f64 / f64::from(TICKS) / peer_count;
    let per = |bytes: u64, known_per_peer: f64| {
        bytes as f64 / peer_count / seconds / known_per_peer.max(1.0)
    };
    let naive_known_per_peer = naive_known as f64 / f64::from(TICKS) / peer_count;
    Figures {
        bytes_per_peer_s_node: per(replicator.stats().bytes_sent - start_bytes, known_per_peer),
        naive_bytes_per_peer_s_node: per(naive_bytes, naive_known_per_peer),
        known_per_peer,
        tick: median(tick_times),
        naive_tick: median(naive_times),
        naive: case.naive,
    }
}

fn main() {
    println!("measure: creatures walking 3 voxels/s, radius {RADIUS}, {TICKS} ticks of {TICK_S} s");
    println!(
        "{:<40} {:>10} {:>14} {:>14} {:>7} {:>12} {:>12}",
        "case", "known/peer", "B/peer/s/node", "naive B", "ratio", "tick µs", "naive µs"
    );
    let full = DEFAULT_FULL_RATE_RADIUS;
    let among = |name, far, moving, full_rate_radius| Case {
        name,
        peers: 100,
        area: 400.0,
        max_known: usize::MAX,
        far,
        moving,
        full_rate_radius,
        naive: true,
    };
    let game = |name, full_rate_radius| Case {
        name,
        peers: 500,
        area: 200.0,
        max_known: 256,
        far: 0,
        moving: true,
        full_rate_radius,
        naive: false,
    };
    let cases = [
        among("100 peers, 2,000 moving", 0, true, full),
        among("... 10x more far away", NEAR_CREATURES * 10, true, full),
        among("... all at the full rate", 0, true, f64::INFINITY),
        among("... idle", 0, false, full),
        game("500 peers knowing 256 of 2,000", full),
        game("... all at the full rate", f64::INFINITY),
    ];
    let mut rows = Vec::new();
    for case in &cases {
        let f = run(case);
        let (naive_bytes, ratio, naive_tick) = if f.naive {
            (
                format!("{:.1}", f.naive_bytes_per_peer_s_node),
                format!(
                    "{:.3}",
                    f.bytes_per_peer_s_node / f.naive_bytes_per_peer_s_node.max(f64::MIN_POSITIVE)
                ),
                format!("{:.0}", f.naive_tick.as_secs_f64() * 1e6),
            )
        } else {
            ("-".into(), "-".into(), "-".into())
        };
        println!(
            "{:<40} {:>10.0} {:>14.1} {:>14} {:>7} {:>12.0} {:>12}",
            case.name,
            f.known_per_peer,
            f.bytes_per_peer_s_node,
            naive_bytes,
            ratio,
            f.tick.as_secs_f64() * 1e6,
            naive_tick,
        );
        rows.push(f);
    }
    let ratio = |a: &Figures, b: &Figures| {
        (
            a.bytes_per_peer_s_node / b.bytes_per_peer_s_node,
            a.tick.as_secs_f64() / b.tick.as_secs_f64(),
        )
    };
    if let [near, far, full_rate, _, game, game_full_rate] = rows.as_slice() {
        let (bytes, tick) = ratio(far, near);
        println!(
            "far creatures change: bytes {:+.1} %, tick time {:+.1} %",
            (bytes - 1.0) * 100.0,
            (tick - 1.0) * 100.0
        );
        for (name, rates, every) in [
            ("100 peers", near, full_rate),
            ("the game's shape", game, game_full_rate),
        ] {
            let (bytes, tick) = ratio(rates, every);
            println!(
                "{name}: rates by distance (full rate within {full} voxels) against every change to every knower: bytes {bytes:.3}x, tick time {tick:.3}x"
            );
        }
    }
}
