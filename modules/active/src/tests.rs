//! The module on the test kit, over a small fake world answering
//! voxelworld's calls (voxels by position in the chunks it holds, values
//! in a map) and one player node.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use buildat_active_api::{
    AbmBatch, GetActiveStats, TimersFired, VoxelTimer, abm_event, timers_event,
};
use buildat_interface::testing::{TestHost, TestModule};
use buildat_voxel::geometry::{CHUNK_SIZE, chunk_of_voxel, chunks_in_view};
use buildat_voxel::{AIR, BlockDefinition, BlockRegistry};
use buildat_voxelworld_api::{
    DynamicNode, FoundVoxels, IDENTITY, MemoryValues, Sizes, VoxelChange,
};

use super::*;

/// The fake world: voxels that are not air, the chunks in memory, values.
#[derive(Default)]
struct World {
    voxels: HashMap<Pos, u32>,
    chunks: BTreeSet<Pos>,
    values: MemoryValues,
    find_calls: usize,
    /// How long `find_voxels` takes per chunk looked at.
    per_chunk: Duration,
}

type Shared = Arc<Mutex<World>>;

fn lock(world: &Shared) -> std::sync::MutexGuard<'_, World> {
    world.lock().expect("not poisoned")
}

const STONE: u32 = 2;
const DIRT: u32 = 3;

fn registry() -> VoxelRegistry {
    let mut voxels = VoxelRegistry::default();
    let mut blocks = BlockRegistry::default();
    for name in ["stone", "dirt"] {
        blocks
            .add(BlockDefinition::simple(name, "x.png"), &mut voxels)
            .expect("adds");
    }
    assert_eq!(voxels.get_id("stone"), Some(STONE));
    voxels
}

/// A kit answering voxelworld's calls from `world`, a player at the origin.
fn fake_kit(world: &Shared, settings: &[(&str, &str)]) -> TestHost {
    let mut kit = TestHost::new();
    for (key, value) in settings {
        kit = kit.config(key, value);
    }
    kit.answer(|_: GetSizes| {
        Ok(Sizes {
            chunk_size: CHUNK_SIZE,
            section_size: [2, 2, 2],
        })
    });
    kit.answer(|_: GetRegistry| Ok(registry()));
    kit.answer(|_: ListNodes| {
        Ok(vec![DynamicNode {
            id: 1,
            position: [1.0, 1.0, 1.0],
            orientation: IDENTITY,
            velocity: [0.0; 3],
            parent: None,
            save_enabled: false,
            vars: BTreeMap::from([(VAR_PLAYER.to_string(), b"ann".to_vec())]),
        }])
    });
    let w = world.clone();
    kit.answer(move |find: FindVoxels| {
        let mut world = lock(&w);
        world.find_calls += 1;
        // The world's time on the call, told in the answer as voxelworld
        // does.
        let work = world.per_chunk * find.chunks.len() as u32;
        std::thread::sleep(work);
        let mut answer = FoundVoxels {
            micros: work.as_micros() as u64,
            ..FoundVoxels::default()
        };
        for chunk in &find.chunks {
            if !world.chunks.contains(chunk) {
                answer.missing.push(*chunk);
                continue;
            }
            let mut here: Vec<(Pos, u32)> = world
                .voxels
                .iter()
                .filter(|(p, v)| chunk_of_voxel(**p) == *chunk && find.types.contains(v))
                .map(|(p, v)| (*p, *v))
                .collect();
            here.sort();
            answer.found.extend(here);
            answer.scanned += 1;
        }
        Ok(answer)
    });
    let w = world.clone();
    kit.answer(move |get: GetVoxels| {
        let world = lock(&w);
        Ok(get
            .positions
            .iter()
            .map(|p| {
                world
                    .chunks
                    .contains(&chunk_of_voxel(*p))
                    .then(|| world.voxels.get(p).copied().unwrap_or(AIR))
            })
            .collect())
    });
    let w = world.clone();
    kit.answer(move |put: PutValues| Ok(lock(&w).values.answer_put(&put.writes)));
    let w = world.clone();
    kit.answer(move |list: ListValues| Ok(lock(&w).values.answer_list(&list)));
    kit
}

fn tick(module: &mut TestModule<Active>) {
    module.emit(&events::Tick { dtime: 0.05 }).expect("ticks");
}

fn abm(chance: u32) -> Abm {
    Abm {
        name: "test:stone".into(),
        module: "test".into(),
        nodes: vec!["stone".into()],
        neighbours: vec![],
        interval_seconds: 1.0,
        chance,
    }
}

/// An ABM's voxels near the player are delivered in one batch per tick to
/// its module; voxels outside the area are not; with no budget, one call
/// a tick, the rest waits as backlog (reported) and is worked off; the
/// next round waits for its interval.
#[test]
fn abm_rounds_deliver_batches_within_the_budget() {
    let world = Shared::default();
    {
        let mut w = lock(&world);
        for chunk in chunks_in_view([0, 0, 0], 4) {
            w.chunks.insert(chunk);
        }
        w.voxels.insert([5, 5, 5], STONE);
        w.voxels.insert([-30, 60, 5], STONE);
        w.voxels.insert([6, 5, 5], DIRT);
        w.voxels.insert([100, 5, 5], STONE); // chunk 3: outside radius 2
    }
    let kit = fake_kit(&world, &[("active.budget_ms", "0")]);
    let mut active = kit.load::<Active>().expect("loads");
    active
        .call(&RegisterAbm { abm: abm(1) })
        .expect("registers");
    tick(&mut active);
    let stats = active.call(&GetActiveStats {}).expect("stats");
    assert_eq!(stats.abms, 1);
    assert_eq!(stats.active_chunks, 125);
    assert_eq!(lock(&world).find_calls, 1, "one call a tick on no budget");
    assert!(stats.backlog_chunks > 0 && stats.backlog_chunks < 125);
    assert!(
        active
            .command("active", &[], None)
            .expect("runs")
            .contains("backlog")
    );
    for _ in 0..200 {
        tick(&mut active);
    }
    let batches = kit.emitted_named::<AbmBatch>(&abm_event("test"));
    let mut delivered: Vec<(Pos, u32)> = batches.iter().flat_map(|b| b.voxels.clone()).collect();
    delivered.sort();
    delivered.dedup();
    assert_eq!(delivered, vec![([-30, 60, 5], STONE), ([5, 5, 5], STONE)]);
    assert!(batches.iter().all(|b| b.name == "test:stone"));
    let stats = active.call(&GetActiveStats {}).expect("stats");
    assert!(stats.voxels_delivered >= 2, "{stats:?}");
    // 200 ticks of 0.05 s: the round of 1 s came back.
    assert!(stats.backlog_chunks < 125, "{stats:?}");
    assert!(lock(&world).find_calls > 125, "a second round ran");

    // With a budget, a round is done in one tick.
    let world2 = Shared::default();
    lock(&world2).chunks.insert([0, 0, 0]);
    lock(&world2).voxels.insert([1, 1, 1], STONE);
    let kit2 = fake_kit(&world2, &[("active.budget_ms", "50")]);
    let mut active = kit2.load::<Active>().expect("loads");
    active
        .call(&RegisterAbm { abm: abm(1) })
        .expect("registers");
    tick(&mut active);
    assert_eq!(
        active
            .call(&GetActiveStats {})
            .expect("stats")
            .backlog_chunks,
        0
    );
    assert_eq!(kit2.emitted_named::<AbmBatch>(&abm_event("test")).len(), 1);
    assert!(
        active
            .call(&RemoveAbm {
                name: "test:stone".into()
            })
            .expect("removed")
    );
    assert!(
        active
            .call(&RegisterAbm {
                abm: Abm {
                    interval_seconds: 0.01,
                    ..abm(1)
                }
            })
            .is_err()
    );
}

/// `active.enabled=false`: no round runs.
#[test]
fn disabled_abms_do_not_scan() {
    let world = Shared::default();
    lock(&world).chunks.insert([0, 0, 0]);
    let kit = fake_kit(&world, &[("active.enabled", "false")]);
    let mut active = kit.load::<Active>().expect("loads");
    active
        .call(&RegisterAbm { abm: abm(1) })
        .expect("registers");
    tick(&mut active);
    assert_eq!(lock(&world).find_calls, 0);
}

fn set(active: &mut TestModule<Active>, pos: Pos, seconds: f64) {
    active
        .call(&SetTimers {
            module: "test".into(),
            timers: vec![VoxelTimer {
                pos,
                seconds,
                tag: "grow".into(),
            }],
        })
        .expect("set");
}

fn fired(kit: &TestHost) -> Vec<FiredTimer> {
    kit.emitted_named::<TimersFired>(&timers_event("test"))
        .into_iter()
        .flat_map(|f| f.timers)
        .collect()
}

/// A timer fires once on its module's event; one whose voxel is replaced
/// by another type is dropped; timers are stored by chunk in the world's
/// values, leave memory with their section and come back with it, a late
/// one firing once with how late it is; a new instance reads them back.
#[test]
fn timers_fire_once_and_live_with_their_sections() {
    let world = Shared::default();
    {
        let mut w = lock(&world);
        for chunk in SectionSize::default().chunks_of_section([0, 0, 0]) {
            w.chunks.insert(chunk);
        }
        w.voxels.insert([1, 1, 1], STONE);
        w.voxels.insert([2, 1, 1], STONE);
        w.voxels.insert([3, 1, 1], DIRT);
    }
    let kit = fake_kit(&world, &[]);
    let mut active = kit.load::<Active>().expect("loads");
    set(&mut active, [1, 1, 1], 0.0);
    set(&mut active, [2, 1, 1], 0.0);
    set(&mut active, [3, 1, 1], 3600.0);
    set(&mut active, [9, 9, 900], 0.0); // not in memory: not set
    let left = active
        .call(&GetTimers {
            module: "test".into(),
            positions: vec![[3, 1, 1], [9, 9, 900]],
        })
        .expect("read");
    assert!(left[0].is_some_and(|s| s > 3500.0), "{left:?}");
    assert_eq!(left[1], None);
    // The voxel at [2, 1, 1] is dug.
    lock(&world).voxels.remove(&[2, 1, 1]);
    active
        .emit(&VoxelsChanged {
            changes: vec![VoxelChange {
                pos: [2, 1, 1],
                was: STONE,
                now: AIR,
                by: None,
            }],
            untold: 0,
        })
        .expect("told");
    tick(&mut active);
    tick(&mut active);
    let once = fired(&kit);
    assert_eq!(once.len(), 1, "{once:?}");
    assert_eq!(once[0].pos, [1, 1, 1]);
    assert_eq!(once[0].voxel, STONE);
    assert_eq!(once[0].tag, "grow");
    let stats = active.call(&GetActiveStats {}).expect("stats");
    assert_eq!((stats.timers_loaded, stats.timers_fired), (1, 1));
    assert_eq!(
        active
            .call(&CancelTimers {
                module: "test".into(),
                positions: vec![[3, 1, 1], [5, 5, 5]],
            })
            .expect("cancelled"),
        1
    );

    // A timer due while its section is away fires once, late, on its return.
    set(&mut active, [1, 1, 1], 0.05);
    assert_eq!(lock(&world).values.len(), 1, "one chunk stored");
    active
        .emit(&SectionsUnloaded {
            sections: vec![[0, 0, 0]],
        })
        .expect("told");
    let stats = active.call(&GetActiveStats {}).expect("stats");
    assert_eq!(stats.timers_loaded, 0, "nothing in memory");
    std::thread::sleep(Duration::from_millis(150));
    tick(&mut active);
    assert_eq!(fired(&kit).len(), 1, "not while away");
    // A new instance (a restart): the section comes back.
    drop(active);
    kit.clear();
    let mut active = kit.load::<Active>().expect("loads");
    active
        .emit(&SectionsLoaded {
            sections: vec![[0, 0, 0]],
        })
        .expect("told");
    assert_eq!(
        active
            .call(&GetActiveStats {})
            .expect("stats")
            .timers_loaded,
        1
    );
    tick(&mut active);
    tick(&mut active);
    let late = fired(&kit);
    assert_eq!(late.len(), 1, "once: {late:?}");
    assert!(late[0].late_seconds >= 0.1, "{late:?}");
    assert!(lock(&world).values.is_empty(), "its chunk's key removed");
}

/// Timers of a section kept across a reload of the module, ABMs too.
#[test]
fn a_reload_keeps_the_abms_and_the_loaded_timers() {
    let world = Shared::default();
    {
        let mut w = lock(&world);
        for chunk in SectionSize::default().chunks_of_section([0, 0, 0]) {
            w.chunks.insert(chunk);
        }
        w.voxels.insert([1, 1, 1], STONE);
    }
    let kit = fake_kit(&world, &[]);
    let mut active = kit.load::<Active>().expect("loads");
    active
        .call(&RegisterAbm { abm: abm(1) })
        .expect("registers");
    set(&mut active, [1, 1, 1], 3600.0);
    let mut active = active.reload::<Active>().expect("reloads");
    let stats = active.call(&GetActiveStats {}).expect("stats");
    assert_eq!((stats.abms, stats.timers_loaded), (1, 1));
}

/// Sections in memory around a player before the module started (no
/// `sections_loaded` heard) have their stored timers read at start.
#[test]
fn timers_around_the_players_are_read_at_start() {
    let world = Shared::default();
    {
        let mut w = lock(&world);
        for chunk in SectionSize::default().chunks_of_section([0, 0, 0]) {
            w.chunks.insert(chunk);
        }
        w.voxels.insert([1, 1, 1], STONE);
    }
    let kit = fake_kit(&world, &[]);
    let mut active = kit.load::<Active>().expect("loads");
    set(&mut active, [1, 1, 1], 3600.0);
    drop(active);
    let mut active = kit.load::<Active>().expect("loads again");
    assert_eq!(
        active
            .call(&GetActiveStats {})
            .expect("stats")
            .timers_loaded,
        1,
        "read without a sections_loaded"
    );
}

/// With scans that take time, a tick spends about its budget (never much
/// more than one call over it), sized calls follow the measured cost, and
/// the rest of the round waits: the backlog drains over the next ticks.
#[test]
fn a_tick_keeps_to_its_budget() {
    let world = Shared::default();
    {
        let mut w = lock(&world);
        for chunk in chunks_in_view([0, 0, 0], 4) {
            w.chunks.insert(chunk);
        }
        w.per_chunk = Duration::from_millis(1);
    }
    let kit = fake_kit(&world, &[("active.budget_ms", "10")]);
    let mut active = kit.load::<Active>().expect("loads");
    active
        .call(&RegisterAbm { abm: abm(1) })
        .expect("registers");
    let mut backlogs = Vec::new();
    for _ in 0..8 {
        tick(&mut active);
        let stats = active.call(&GetActiveStats {}).expect("stats");
        assert!(
            stats.last_tick_micros < 10_000 + 20_000,
            "about the budget: {stats:?}"
        );
        backlogs.push(stats.backlog_chunks);
    }
    assert!(
        backlogs[0] > 90,
        "most waits after the first tick: {backlogs:?}"
    );
    assert!(
        backlogs.windows(2).all(|w| w[1] < w[0] || w[1] == 0),
        "{backlogs:?}"
    );
    let stats = active.call(&GetActiveStats {}).expect("stats");
    assert!(stats.p99_tick_micros >= 5_000, "{stats:?}");
}
