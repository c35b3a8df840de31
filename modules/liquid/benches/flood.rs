//! The goal bench of the flow: a 10,000-voxel flood (a 100 × 100 lake whose
//! floor goes at once, over a cavity) run through the real queue and step
//! (`buildat_module_liquid::queue`) over a world in memory, at the default
//! budget and cap; prints the steps, positions looked at per second, the
//! slowest step and the queue's peak. Run with
//! `cargo bench -p buildat-module-liquid`.

use std::time::{Duration, Instant};

use buildat_module_liquid::flow::Kinds;
use buildat_module_liquid::queue::{MemWorld, Queue, step};
use buildat_voxel::{AIR, VoxelInstance};

const STONE: u32 = 1;
const KINDS: Kinds = Kinds {
    water: 5,
    water_flowing: 30,
    lava: Some((31, 32)),
    cooled: Some(STONE),
};
/// The module's defaults (`liquid.updates_per_tick`, `liquid.max_queue`).
const BUDGET: u32 = 1024;
const CAP: usize = 100_000;
const SIDE: i32 = 100;

fn main() {
    let mut world = MemWorld {
        default: Some(STONE),
        ..MemWorld::default()
    };
    let mut queue = Queue::new(CAP);
    for x in 0..SIDE {
        for z in 0..SIDE {
            world.set([x, 1, z], KINDS.water);
            world.set([x, -1, z], AIR);
        }
    }
    // The floor goes in one commit: each change told.
    for x in 0..SIDE {
        for z in 0..SIDE {
            world.set([x, 0, z], AIR);
            queue.push_told(Some(&KINDS), [x, 0, z], STONE, AIR);
        }
    }
    let started = Instant::now();
    let (mut steps, mut looked, mut changed) = (0u32, 0u64, 0u64);
    let mut slowest = Duration::ZERO;
    while !queue.is_empty() {
        let at = Instant::now();
        let (report, _) = match step(&mut queue, &KINDS, &mut world, BUDGET, 4096) {
            Ok(done) => done,
            Err(never) => match never {},
        };
        slowest = slowest.max(at.elapsed());
        assert!(report.looked <= BUDGET);
        steps += 1;
        looked += u64::from(report.looked);
        changed += u64::from(report.changed);
        assert!(steps < 100_000, "the flood never settles");
    }
    let elapsed = started.elapsed();
    let flowing = VoxelInstance::new(KINDS.water_flowing, 7).0;
    let flooded = (0..SIDE)
        .flat_map(|x| (0..SIDE).map(move |z| [x, 0, z]))
        .filter(|pos| world.at(*pos) == Some(flowing))
        .count();
    assert_eq!(flooded, (SIDE * SIDE) as usize, "the floor's layer flooded");
    println!(
        "liquid flood: {changed} voxels changed ({flooded} under the lake) in {steps} steps of at most {BUDGET}, {looked} positions looked at in {:.1} ms: {:.0} updates/s, slowest step {:.2} ms, queue peak {} (cap {CAP}), dropped {}, {} reads (most {} voxels)",
        elapsed.as_secs_f64() * 1000.0,
        looked as f64 / elapsed.as_secs_f64(),
        slowest.as_secs_f64() * 1000.0,
        queue.peak,
        queue.dropped,
        world.gets,
        world.most_read,
    );
}
