//! Replication benchmark: what `replicate` sends and what a tick of it
//! costs, against the naive floor run in the same process: every node's
//! whole state (`DynamicNode`, bincode) to every peer in range every tick.
//! Three worlds: creatures moving among the peers; the same with ten times
//! as many creatures moving far from every peer (the cost must follow what
//! peers see, not the world's size); and idle creatures. Columns: nodes
//! each peer knows; bytes a peer gets a second per node it knows, sent by
//! `replicate` and by the naive floor, and their ratio; the median time of
//! a tick (taking the moves, then `Replicator::tick`) and of the floor's
//! encoding for every peer.
//! Prints a table; asserts nothing.
//!
//! Run: `cargo bench -p buildat-module-replicate --bench replicate_bench`

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use buildat_format::payload;
use buildat_module_replicate::interest::Replicator;
use buildat_voxelworld_api::{DynamicNode, NodeMotion};

const TICK_S: f64 = 0.1;
const TICKS: u32 = 100;
const PEERS: u64 = 100;
const NEAR_CREATURES: u64 = 2_000;
const RADIUS: f64 = 96.0;
/// The peers and the near creatures share a square this wide.
const AREA: f64 = 400.0;

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
}

fn run(far_creatures: u64, moving: bool) -> Figures {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut replicator = Replicator::new(RADIUS, usize::MAX);
    let peers: Vec<(u64, [f64; 3])> = (0..PEERS)
        .map(|p| (p + 1, [rng.next() * AREA, 20.0, rng.next() * AREA]))
        .collect();
    let mut creatures: Vec<Creature> = (0..NEAR_CREATURES)
        .map(|i| creature(i + 1, rng.next() * AREA, rng.next() * AREA, &mut rng))
        .collect();
    // Far away: a band 10,000 voxels out, never within anyone's radius.
    for i in 0..far_creatures {
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
    let known_per_peer = known as f64 / f64::from(TICKS) / PEERS as f64;
    let per = |bytes: u64, known_per_peer: f64| {
        bytes as f64 / PEERS as f64 / seconds / known_per_peer.max(1.0)
    };
    let naive_known_per_peer = naive_known as f64 / f64::from(TICKS) / PEERS as f64;
    Figures {
        bytes_per_peer_s_node: per(replicator.stats().bytes_sent - start_bytes, known_per_peer),
        naive_bytes_per_peer_s_node: per(naive_bytes, naive_known_per_peer),
        known_per_peer,
        tick: median(tick_times),
        naive_tick: median(naive_times),
    }
}

fn main() {
    println!(
        "measure: {PEERS} peers and {NEAR_CREATURES} creatures in a {AREA}-voxel square, radius {RADIUS}, {TICKS} ticks of {TICK_S} s"
    );
    println!(
        "{:<28} {:>10} {:>14} {:>14} {:>7} {:>12} {:>12}",
        "case", "known/peer", "B/peer/s/node", "naive B", "ratio", "tick µs", "naive µs"
    );
    let mut rows = Vec::new();
    for (name, far, moving) in [
        ("moving", 0, true),
        ("moving, 10x more far away", NEAR_CREATURES * 10, true),
        ("idle", 0, false),
    ] {
        let f = run(far, moving);
        println!(
            "{:<28} {:>10.0} {:>14.1} {:>14.1} {:>7.3} {:>12.0} {:>12.0}",
            name,
            f.known_per_peer,
            f.bytes_per_peer_s_node,
            f.naive_bytes_per_peer_s_node,
            f.bytes_per_peer_s_node / f.naive_bytes_per_peer_s_node.max(f64::MIN_POSITIVE),
            f.tick.as_secs_f64() * 1e6,
            f.naive_tick.as_secs_f64() * 1e6,
        );
        rows.push(f);
    }
    if let [near, far, ..] = rows.as_slice() {
        println!(
            "far creatures change: bytes {:+.1} %, tick time {:+.1} %",
            (far.bytes_per_peer_s_node / near.bytes_per_peer_s_node - 1.0) * 100.0,
            (far.tick.as_secs_f64() / near.tick.as_secs_f64() - 1.0) * 100.0
        );
    }
}
