//! The flow through its real queue and step over a world in memory (a
//! source beside a dug hole fills it and stops, a removed source dries its
//! flow, a fall, a 10,000-voxel flood within its budget and cap), the
//! buckets' plans, and the module on the test kit: voxelworld's calls
//! answered from the same world in memory.

use std::sync::{Arc, Mutex};

use buildat_interface::events::Tick;
use buildat_interface::testing::{TestHost, TestModule};
use buildat_inventory_api::{Change, Transact, TxOutcome};
use buildat_items_api::ItemStack;
use buildat_liquid_api::{GetLiquidStats, level_of};
use buildat_main_api::{BlockAction, BlockActionKind, GetPlayers, PlayerState, VoxelActions};
use buildat_voxel::geometry::Pos;
use buildat_voxel::{AIR, BlockDefinition, BlockRegistry, VoxelInstance};
use buildat_voxelworld_api::{
    EditOutcome, EditVoxels, GetGround, GetRegistry, GetVoxels, Ground, RegisterBlock, Replace,
    VoxelChange, VoxelRegistry, VoxelsChanged,
};

use crate::bucket::{self, Plan};
use crate::flow::{Cell, Kinds, Liquid};
use crate::queue::{MemWorld, Queue, World, step};
use crate::{Liquids, stats_line};

const STONE: u32 = 1;
const KINDS: Kinds = Kinds {
    water: 5,
    water_flowing: 30,
    lava: Some((31, 32)),
    cooled: Some(STONE),
};

fn flowing(level: u8) -> u32 {
    VoxelInstance::new(KINDS.water_flowing, level).0
}

/// Stone everywhere but what is set.
fn stone_world() -> MemWorld {
    MemWorld {
        default: Some(STONE),
        ..MemWorld::default()
    }
}

/// Runs steps until the queue is empty, checking each against its budget
/// and the queue against its cap; the steps taken.
fn settle(world: &mut MemWorld, queue: &mut Queue, budget: u32, max_steps: u32) -> u32 {
    for steps in 0..max_steps {
        if queue.is_empty() {
            return steps;
        }
        let (report, _) = step(queue, &KINDS, world, budget, 4096).unwrap();
        assert!(report.looked <= budget, "{report:?} over {budget}");
        assert!(queue.len() <= queue.cap());
    }
    panic!("not settled in {max_steps} steps: {} queued", queue.len());
}

/// A source at x 0, a stone bank at x 1, a dug trench at x 2..=5, stone
/// beyond (y 0, z 0, in stone).
fn trench() -> MemWorld {
    let mut world = stone_world();
    world.set([0, 0, 0], KINDS.water);
    for x in 2..=5 {
        world.set([x, 0, 0], AIR);
    }
    world
}

fn trench_levels(world: &MemWorld) -> Vec<u32> {
    (0..=6).map(|x| world.at([x, 0, 0]).unwrap()).collect()
}

#[test]
fn a_source_beside_a_dug_hole_fills_it_and_stops() {
    let mut world = trench();
    let mut queue = Queue::new(1000);
    // The trench dug beside the bank: nothing flows through the bank.
    for x in 2..=5 {
        queue.push_told(Some(&KINDS), [x, 0, 0], STONE, AIR);
    }
    settle(&mut world, &mut queue, 64, 10);
    assert_eq!(world.at([2, 0, 0]), Some(AIR));
    // The bank dug: the trench fills, 7 beside the source, one less a voxel.
    world.set([1, 0, 0], AIR);
    queue.push_told(Some(&KINDS), [1, 0, 0], STONE, AIR);
    let steps = settle(&mut world, &mut queue, 64, 20);
    assert_eq!(
        trench_levels(&world),
        vec![
            KINDS.water,
            flowing(7),
            flowing(6),
            flowing(5),
            flowing(4),
            flowing(3),
            STONE
        ]
    );
    // One voxel a step: five voxels, then the steps that find it settled.
    assert!((5..=8).contains(&steps), "{steps} steps");
    // It stopped: looking at everything again changes nothing.
    for x in -1..=7 {
        queue.push_changed([x, 0, 0]);
    }
    let (report, _) = step(&mut queue, &KINDS, &mut world, 1000, 4096).unwrap();
    assert_eq!(report.changed, 0);
}

#[test]
fn removing_the_source_dries_the_flow() {
    let mut world = trench();
    world.set([1, 0, 0], AIR);
    let mut queue = Queue::new(1000);
    queue.push_changed([1, 0, 0]);
    settle(&mut world, &mut queue, 64, 20);
    assert_eq!(world.at([5, 0, 0]), Some(flowing(3)));
    // A bucket takes the source.
    world.set([0, 0, 0], AIR);
    queue.push_told(Some(&KINDS), [0, 0, 0], KINDS.water, AIR);
    settle(&mut world, &mut queue, 64, 100);
    assert_eq!(trench_levels(&world)[..6], [AIR; 6]);
}

#[test]
fn a_fall_makes_level_seven_below_and_spreads_where_it_lands() {
    // A room of air x, z -3..=3, y 0..=5 in stone; a source at its top.
    let mut world = stone_world();
    for x in -3..=3 {
        for y in 0..=5 {
            for z in -3..=3 {
                world.set([x, y, z], AIR);
            }
        }
    }
    world.set([0, 5, 0], KINDS.water);
    let mut queue = Queue::new(10_000);
    queue.push_told(Some(&KINDS), [0, 5, 0], AIR, KINDS.water);
    settle(&mut world, &mut queue, 256, 100);
    for y in 0..5 {
        assert_eq!(world.at([0, y, 0]), Some(flowing(7)), "y {y}");
    }
    // Beside the source flowing 7, which falls rather than spreading on.
    assert_eq!(world.at([1, 5, 0]), Some(flowing(7)));
    assert_eq!(world.at([2, 5, 0]), Some(AIR));
    // Where the falls land they spread: the centre column's fall and its
    // neighbours' falls reach the floor, then one less a voxel.
    assert_eq!(world.at([1, 0, 0]), Some(flowing(7)));
    assert_eq!(world.at([2, 0, 0]), Some(flowing(6)));
    assert_eq!(world.at([3, 0, 0]), Some(flowing(5)));
    assert_eq!(world.at([3, 0, 3]), Some(flowing(2)));
    assert_eq!(world.at([2, 2, 0]), Some(AIR));
}

/// A lake of `side`² sources at y 1 over a stone floor at y 0, a cavity
/// of air at y -1 under it; the floor goes at once (as one commit would
/// tell it).
fn flood(side: i32) -> (MemWorld, Vec<Pos>) {
    let mut world = stone_world();
    let mut floor = Vec::new();
    for x in 0..side {
        for z in 0..side {
            world.set([x, 1, z], KINDS.water);
            world.set([x, -1, z], AIR);
            world.set([x, 0, z], AIR);
            floor.push([x, 0, z]);
        }
    }
    (world, floor)
}

#[test]
fn a_ten_thousand_voxel_flood_settles_within_its_budget_and_cap() {
    let (mut world, floor) = flood(100);
    let budget = 1024;
    let mut queue = Queue::new(100_000);
    for pos in &floor {
        queue.push_told(Some(&KINDS), *pos, STONE, AIR);
    }
    let steps = settle(&mut world, &mut queue, budget, 2000);
    assert_eq!(queue.dropped, 0);
    assert!(queue.peak <= queue.cap());
    assert!(world.most_read <= 4096, "{} read at once", world.most_read);
    for x in 0..100 {
        for z in 0..100 {
            assert_eq!(world.at([x, 0, z]), Some(flowing(7)));
            assert_eq!(world.at([x, -1, z]), Some(flowing(7)));
            assert_eq!(world.at([x, 1, z]), Some(KINDS.water));
        }
    }
    assert_eq!(world.at([100, 0, 0]), Some(STONE));
    // Bounded: about (positions looked at) / budget steps.
    assert!(steps < 1000, "{steps} steps");
}

#[test]
fn a_full_queue_drops_and_counts_and_the_flood_still_ends() {
    let (mut world, floor) = flood(40);
    let mut queue = Queue::new(500);
    for pos in &floor {
        queue.push_changed(*pos);
    }
    assert!(queue.dropped > 0);
    assert_eq!(queue.len(), 500);
    settle(&mut world, &mut queue, 100, 5000);
    assert!(queue.peak <= 500);
}

#[test]
fn an_edit_refused_because_the_voxel_changed_is_not_counted_as_made() {
    /// Every edit refused, as if a player got there first.
    struct Busy(MemWorld);
    impl World for Busy {
        type Error = std::convert::Infallible;
        fn get(&mut self, positions: &[Pos]) -> Result<Vec<Option<u32>>, Self::Error> {
            self.0.get(positions)
        }
        fn edit(&mut self, edits: &[(Pos, u32, u32)]) -> Result<Vec<bool>, Self::Error> {
            Ok(vec![false; edits.len()])
        }
    }
    let mut world = trench();
    world.set([1, 0, 0], AIR);
    let mut busy = Busy(world);
    let mut queue = Queue::new(100);
    queue.push_changed([1, 0, 0]);
    let (report, made) = step(&mut queue, &KINDS, &mut busy, 100, 4096).unwrap();
    assert_eq!((report.changed, report.refused), (0, 1));
    assert!(made.is_empty());
}

#[test]
fn lava_meeting_water_cools_to_stone() {
    let mut world = trench();
    world.set([1, 0, 0], AIR);
    world.set([6, 0, 0], 31); // a lava source at the trench's end
    let mut queue = Queue::new(1000);
    queue.push_changed([1, 0, 0]);
    queue.push_changed([6, 0, 0]);
    settle(&mut world, &mut queue, 64, 100);
    let levels = trench_levels(&world);
    assert!(levels.contains(&STONE), "{levels:?}");
    assert_eq!(levels[1], flowing(7));
}

fn eyes_above(pos: Pos) -> [f64; 3] {
    [
        f64::from(pos[0]) + 0.5,
        f64::from(pos[1]) + 3.0,
        f64::from(pos[2]) + 0.5,
    ]
}

#[test]
fn a_bucket_takes_the_source_used_or_the_one_over_the_bed_used() {
    let source = [0, 5, 0];
    let at = |pos: Pos, voxel: u32| -> Vec<(Pos, Option<u32>)> {
        bucket::candidates(pos, eyes_above(pos))
            .into_iter()
            .map(|p| {
                let v = if p == pos {
                    voxel
                } else if p == source {
                    KINDS.water
                } else {
                    STONE
                };
                (p, Some(v))
            })
            .collect()
    };
    assert_eq!(
        bucket::plan(&KINDS, bucket::BUCKET, &at(source, KINDS.water)),
        Plan::Take {
            pos: source,
            seen: KINDS.water,
            gives: bucket::BUCKET_WATER
        }
    );
    // The client points at the bed under the water.
    assert_eq!(
        bucket::plan(&KINDS, bucket::BUCKET, &at([0, 4, 0], STONE)),
        Plan::Take {
            pos: source,
            seen: KINDS.water,
            gives: bucket::BUCKET_WATER
        }
    );
    // Flowing water is not taken.
    let only_flowing: Vec<_> = bucket::candidates([9, 9, 9], eyes_above([9, 9, 9]))
        .into_iter()
        .map(|p| (p, Some(flowing(7))))
        .collect();
    assert_eq!(
        bucket::plan(&KINDS, bucket::BUCKET, &only_flowing),
        Plan::Nothing
    );
}

#[test]
fn a_full_bucket_pours_on_air_or_the_face_nearest_the_eyes() {
    let pos = [0, 0, 0];
    let near = bucket::candidates(pos, eyes_above(pos));
    assert_eq!(near[1], [0, 1, 0], "the top face is nearest eyes above");
    let solid_but_top: Vec<_> = near
        .iter()
        .map(|p| (*p, Some(if *p == [0, 1, 0] { AIR } else { STONE })))
        .collect();
    assert_eq!(
        bucket::plan(&KINDS, bucket::BUCKET_WATER, &solid_but_top),
        Plan::Pour {
            pos: [0, 1, 0],
            seen: AIR,
            source: KINDS.water
        }
    );
    let air: Vec<_> = near.iter().map(|p| (*p, Some(flowing(3)))).collect();
    assert_eq!(
        bucket::plan(&KINDS, bucket::BUCKET_LAVA, &air),
        Plan::Pour {
            pos,
            seen: flowing(3),
            source: 31
        }
    );
    let walled: Vec<_> = near.iter().map(|p| (*p, Some(STONE))).collect();
    assert_eq!(
        bucket::plan(&KINDS, bucket::BUCKET_WATER, &walled),
        Plan::Nothing
    );
    let no_lava = Kinds {
        lava: None,
        ..KINDS
    };
    assert_eq!(
        bucket::plan(&no_lava, bucket::BUCKET_LAVA, &air),
        Plan::Nothing
    );
}

#[test]
fn a_use_is_one_transaction_taking_one_bucket_and_giving_the_other_with_the_edit() {
    let plan = Plan::Take {
        pos: [1, 2, 3],
        seen: KINDS.water,
        gives: bucket::BUCKET_WATER,
    };
    let tx = bucket::transaction("ann", 4, bucket::BUCKET, &plan).unwrap();
    match &tx.changes[..] {
        [
            Change::Take { slot, name, count },
            Change::Give { stack, .. },
        ] => {
            assert_eq!((slot.index, name.as_str(), *count), (4, "bucket", 1));
            assert_eq!(stack, &ItemStack::new("bucket_water", 1));
        }
        other => panic!("{other:?}"),
    }
    let edit = tx.edit.unwrap();
    assert_eq!(
        (edit.pos, edit.voxel, edit.replace),
        ([1, 2, 3], AIR, Replace::Exactly(KINDS.water))
    );
    assert!(bucket::transaction("ann", 0, "bucket", &Plan::Nothing).is_none());
    let recipe = bucket::recipe();
    assert_eq!(recipe.ingredients().count(), 3);
}

/// Voxelworld on the kit: a registry holding worldgen's `water` and
/// `stone`, the voxels a [`MemWorld`].
struct Kit {
    world: Arc<Mutex<MemWorld>>,
    registry: Arc<Mutex<VoxelRegistry>>,
    transactions: Arc<Mutex<Vec<Transact>>>,
}

fn load(settings: &[(&str, &str)]) -> (TestModule<Liquids>, Kit) {
    let mut kit = TestHost::new().name("liquid");
    for (key, value) in settings {
        kit = kit.config(key, value);
    }
    let registry = Arc::new(Mutex::new(VoxelRegistry::default()));
    let blocks = Arc::new(Mutex::new(BlockRegistry::default()));
    for name in ["stone", "water"] {
        let block = BlockDefinition::simple(name, "t.png");
        let mut voxels = registry.lock().unwrap();
        blocks.lock().unwrap().add(block, &mut voxels).unwrap();
    }
    let answer = Arc::clone(&registry);
    kit.answer::<GetRegistry>(move |_| Ok(answer.lock().unwrap().clone()));
    let answer = Arc::clone(&registry);
    kit.answer(move |register: RegisterBlock| {
        let mut voxels = answer.lock().unwrap();
        Ok(blocks
            .lock()
            .unwrap()
            .add(register.block, &mut voxels)
            .unwrap())
    });
    let world = Arc::new(Mutex::new(stone_world()));
    let answer = Arc::clone(&world);
    kit.answer(move |get: GetVoxels| Ok(answer.lock().unwrap().get(&get.positions).unwrap()));
    let answer = Arc::clone(&world);
    kit.answer(move |column: GetGround| {
        // The surface band's highest voxel that is not air, as ground.
        let world = answer.lock().unwrap();
        let at = |y| world.at([column.x, y, column.z]).unwrap_or(AIR);
        Ok((-64..128)
            .rev()
            .find(|y| at(*y) != AIR)
            .map_or(Ground::NoGround, |y| Ground::Solid {
                y,
                above: at(y + 1),
            }))
    });
    let answer = Arc::clone(&world);
    kit.answer(move |edit: EditVoxels| {
        let mut world = answer.lock().unwrap();
        Ok(edit
            .edits
            .iter()
            .map(|e| {
                let previous = world.at(e.pos).unwrap();
                match e.replace {
                    Replace::Exactly(seen) if seen != previous => {
                        EditOutcome::Refused { current: previous }
                    }
                    _ => {
                        world.set(e.pos, e.voxel);
                        EditOutcome::Edited { previous }
                    }
                }
            })
            .collect())
    });
    kit.answer(|_: GetPlayers| {
        Ok(vec![PlayerState {
            name: "ann".into(),
            peer: 1,
            position: [0.5, 3.0, 0.5],
            wield: 2,
        }])
    });
    let transactions = Arc::new(Mutex::new(Vec::new()));
    let kept = Arc::clone(&transactions);
    kit.answer(move |tx: Transact| {
        kept.lock().unwrap().push(tx);
        Ok(TxOutcome::Done)
    });
    let module = kit.load::<Liquids>().unwrap();
    (
        module,
        Kit {
            world,
            registry,
            transactions,
        },
    )
}

impl Kit {
    fn id(&self, name: &str) -> u32 {
        self.registry.lock().unwrap().get_id(name).unwrap()
    }

    fn at(&self, pos: Pos) -> u32 {
        self.world.lock().unwrap().at(pos).unwrap()
    }
}

fn tick(liquid: &mut TestModule<Liquids>, times: usize) {
    for _ in 0..times {
        liquid.emit(&Tick { dtime: 0.05 }).unwrap();
    }
}

#[test]
fn the_module_registers_its_blocks_and_flows_from_a_told_change_in_steps() {
    let (mut liquid, kit) = load(&[("liquid.step_seconds", "0")]);
    let water = kit.id("water");
    let flowing_id = kit.id("water_flowing");
    assert!(
        kit.registry
            .lock()
            .unwrap()
            .get_id("lava_flowing")
            .is_some()
    );
    {
        let mut world = kit.world.lock().unwrap();
        world.set([0, 0, 0], water);
        for x in 2..=3 {
            world.set([x, 0, 0], AIR);
        }
    }
    // Nothing flows until a change is told (a generated lake stays still):
    // the bank at x 1 is dug.
    tick(&mut liquid, 5);
    kit.world.lock().unwrap().set([1, 0, 0], AIR);
    tick(&mut liquid, 5);
    assert_eq!(kit.at([1, 0, 0]), AIR);
    liquid
        .emit(&VoxelsChanged {
            changes: vec![VoxelChange {
                pos: [1, 0, 0],
                was: 1,
                now: AIR,
                by: Some("ann".into()),
            }],
            untold: 0,
        })
        .unwrap();
    tick(&mut liquid, 10);
    let levels: Vec<u32> = (1..=3).map(|x| kit.at([x, 0, 0])).collect();
    assert_eq!(
        levels,
        [7, 6, 5].map(|l| VoxelInstance::new(flowing_id, l).0)
    );
    assert_eq!(level_of(kit.at([3, 0, 0])), 5);
    let stats = liquid.call(&GetLiquidStats {}).unwrap();
    assert_eq!(stats.queued, 0);
    assert_eq!(stats.changed_total, 3);
    assert!(stats.updated_total >= 3);
    assert_eq!(stats.budget_per_tick, 1024);
    let line = liquid.command("liquid", &[], None).unwrap();
    assert_eq!(line, stats_line(&stats));
    assert!(
        line.contains("0 queued") && line.contains("3 voxels changed"),
        "{line}"
    );
}

#[test]
fn the_module_steps_only_every_step_seconds_and_within_its_budget() {
    let (mut liquid, kit) = load(&[
        ("liquid.step_seconds", "0.2"),
        ("liquid.updates_per_tick", "3"),
        ("liquid.max_queue", "25"),
    ]);
    let water = kit.id("water");
    kit.world.lock().unwrap().set([0, 0, 0], water);
    kit.world.lock().unwrap().set([1, 0, 0], AIR);
    // Sources taken: each queues its neighbourhood.
    let change = |x| VoxelChange {
        pos: [x, 0, 0],
        was: water,
        now: AIR,
        by: None,
    };
    liquid
        .emit(&VoxelsChanged {
            changes: (1..=5).map(change).collect(),
            untold: 0,
        })
        .unwrap();
    let stats = liquid.call(&GetLiquidStats {}).unwrap();
    assert_eq!(stats.queued, 25, "capped");
    assert!(stats.dropped > 0);
    tick(&mut liquid, 3); // 0.15 s: no step yet
    assert_eq!(liquid.call(&GetLiquidStats {}).unwrap().updated_total, 0);
    tick(&mut liquid, 1);
    let stats = liquid.call(&GetLiquidStats {}).unwrap();
    assert_eq!((stats.updated_last_tick, stats.updated_total), (3, 3));
}

#[test]
fn a_bucket_use_is_one_transact_and_other_uses_are_not_the_liquids_business() {
    let (mut liquid, kit) = load(&[]);
    let water = kit.id("water");
    kit.world.lock().unwrap().set([0, 1, 0], water);
    let action = |item: Option<&str>, kind| BlockAction {
        pos: [0, 0, 0],
        voxel: STONE,
        player: "ann".into(),
        item: item.map(|name| ItemStack::new(name, 1)),
        kind,
    };
    liquid
        .emit(&VoxelActions {
            actions: vec![
                action(Some("stone"), BlockActionKind::Use),
                action(None, BlockActionKind::Use),
                action(Some("bucket"), BlockActionKind::Punch),
                action(Some("bucket"), BlockActionKind::Use),
            ],
        })
        .unwrap();
    let txs = kit.transactions.lock().unwrap();
    assert_eq!(txs.len(), 1);
    let edit = txs[0].tx.edit.clone().unwrap();
    assert_eq!(
        (edit.pos, edit.voxel, edit.replace),
        ([0, 1, 0], AIR, Replace::Exactly(water))
    );
    match &txs[0].tx.changes[0] {
        Change::Take { slot, .. } => assert_eq!(slot.index, 2, "the wielded slot"),
        other => panic!("{other:?}"),
    }
    let _ = Cell::Source(Liquid::Water);
}

#[test]
fn the_queue_and_counters_cross_a_reload_and_a_disabled_flow_moves_nothing() {
    let (mut liquid, kit) = load(&[("liquid.step_seconds", "0"), ("liquid.enabled", "false")]);
    let water = kit.id("water");
    kit.world.lock().unwrap().set([0, 0, 0], water);
    kit.world.lock().unwrap().set([1, 0, 0], AIR);
    liquid
        .emit(&VoxelsChanged {
            changes: vec![VoxelChange {
                pos: [1, 0, 0],
                was: AIR,
                now: water,
                by: None,
            }],
            untold: 0,
        })
        .unwrap();
    tick(&mut liquid, 5);
    assert_eq!(kit.at([1, 0, 0]), AIR, "disabled: nothing flows");
    let before = liquid.call(&GetLiquidStats {}).unwrap();
    assert_eq!(before.queued, 11);
    let mut liquid = liquid.reload::<Liquids>().unwrap();
    let after = liquid.call(&GetLiquidStats {}).unwrap();
    assert_eq!(after.queued, before.queued);
    assert_eq!(after.queue_peak, before.queue_peak);
}

#[test]
fn the_buckets_are_registered_and_their_recipe_once_iron_lumps_are_known() {
    use buildat_crafting_api::{Recipe, RegisterRecipes};
    use buildat_items_api::{GetItems, ItemDef, ItemRegistry, ItemsChanged, RegisterItems};

    let kit = TestHost::new().name("liquid");
    let registry = Arc::new(Mutex::new(VoxelRegistry::default()));
    let blocks = Arc::new(Mutex::new(BlockRegistry::default()));
    let answer = Arc::clone(&registry);
    kit.answer::<GetRegistry>(move |_| Ok(answer.lock().unwrap().clone()));
    let answer = Arc::clone(&registry);
    kit.answer(move |register: RegisterBlock| {
        let mut voxels = answer.lock().unwrap();
        Ok(blocks
            .lock()
            .unwrap()
            .add(register.block, &mut voxels)
            .unwrap())
    });
    let items = Arc::new(Mutex::new(ItemRegistry::default()));
    let kept = Arc::clone(&items);
    kit.answer(move |register: RegisterItems| {
        let mut items = kept.lock().unwrap();
        for def in register.items {
            items.items.insert(def.name.clone(), def);
        }
        Ok(())
    });
    let kept = Arc::clone(&items);
    kit.answer(move |_: GetItems| Ok(kept.lock().unwrap().clone()));
    let recipes: Arc<Mutex<Vec<Recipe>>> = Arc::new(Mutex::new(Vec::new()));
    let kept = Arc::clone(&recipes);
    kit.answer(move |register: RegisterRecipes| {
        kept.lock().unwrap().extend(register.recipes);
        Ok(())
    });
    let mut liquid = kit.load::<Liquids>().unwrap();
    // No worldgen here: liquid registers the water source itself.
    assert!(registry.lock().unwrap().get_id("water").is_some());
    let names: Vec<String> = items.lock().unwrap().items.keys().cloned().collect();
    assert_eq!(names, ["bucket", "bucket_lava", "bucket_water"]);
    assert_eq!(items.lock().unwrap().stack_max("bucket_water"), 1);
    assert!(recipes.lock().unwrap().is_empty(), "no iron lumps yet");
    // Survival registers its lumps: the recipe follows, once.
    items.lock().unwrap().items.insert(
        "iron_lump".into(),
        ItemDef::craft("iron_lump", "Iron lump", "iron_lump.png"),
    );
    liquid.emit(&ItemsChanged { version: 2 }).unwrap();
    liquid.emit(&ItemsChanged { version: 3 }).unwrap();
    let recipes = recipes.lock().unwrap();
    assert_eq!(recipes.len(), 1);
    assert_eq!(recipes[0].output, ItemStack::new("bucket", 1));
}

#[test]
fn a_dig_queues_its_voxel_a_liquid_change_its_neighbourhood_other_changes_nothing() {
    let (mut liquid, kit) = load(&[("liquid.step_seconds", "60")]);
    let water = kit.id("water");
    let stone = kit.id("stone");
    let mut told = |was, now| {
        liquid
            .emit(&VoxelsChanged {
                changes: vec![VoxelChange {
                    pos: [0, 0, 0],
                    was,
                    now,
                    by: None,
                }],
                untold: 0,
            })
            .unwrap();
        let queued = liquid.call(&GetLiquidStats {}).unwrap().queued;
        // Empty the queue again: a step, looking at it all.
        liquid.emit(&Tick { dtime: 61.0 }).unwrap();
        queued
    };
    assert_eq!(told(stone, 1), 0, "a block replaced by a block");
    assert_eq!(told(AIR, stone), 0, "a block placed");
    assert_eq!(told(stone, AIR), 1, "a dig");
    assert_eq!(told(AIR, water), 11, "a source poured");
    assert_eq!(told(water, AIR), 11, "a source taken");
}

/// `liquid flood X Z SOURCES` (the bench's flood): a source on the ground
/// of each column of a square grid around X, Z (`get_ground` each, one
/// `EditVoxels`, placed only on air); told back as voxelworld would tell
/// it, each flows over flat ground into its 112 voxels and the flow stops.
#[test]
fn a_bench_flood_places_sources_on_the_ground_of_a_grid_and_they_flow_and_stop() {
    let (mut liquid, kit) = load(&[("liquid.step_seconds", "0")]);
    let water = kit.id("water");
    {
        // A stone floor at y 0 walled in, air above and around it.
        let mut world = kit.world.lock().unwrap();
        world.default = Some(AIR);
        for x in -40..=40 {
            for z in -40..=40 {
                world.set([x, 0, z], STONE);
                if x.abs() == 40 || z.abs() == 40 {
                    world.set([x, 1, z], STONE);
                }
            }
        }
    }
    let line = liquid
        .command("liquid", &["flood", "0", "0", "9"], None)
        .unwrap();
    assert!(line.starts_with("liquid flood: 9 sources placed"), "{line}");
    let edits = liquid.kit().calls::<EditVoxels>();
    let placed = &edits.last().unwrap().edits;
    let mut at: Vec<Pos> = placed.iter().map(|e| e.pos).collect();
    at.sort_unstable();
    let mut grid = Vec::new();
    for x in [-16, 0, 16] {
        for z in [-16, 0, 16] {
            grid.push([x, 1, z]);
        }
    }
    assert_eq!(at, grid);
    assert!(
        placed
            .iter()
            .all(|e| e.voxel == water && e.replace == Replace::OnlyAir && e.save)
    );
    liquid
        .emit(&VoxelsChanged {
            changes: grid
                .iter()
                .map(|pos| VoxelChange {
                    pos: *pos,
                    was: AIR,
                    now: water,
                    by: None,
                })
                .collect(),
            untold: 0,
        })
        .unwrap();
    for _ in 0..100 {
        tick(&mut liquid, 1);
        if liquid.call(&GetLiquidStats {}).unwrap().queued == 0 {
            break;
        }
    }
    let stats = liquid.call(&GetLiquidStats {}).unwrap();
    assert_eq!(stats.queued, 0, "settled");
    assert_eq!(stats.changed_total, 9 * 112, "{stats:?}");
    assert_eq!(level_of(kit.at([7, 1, 0])), 1);
    assert_eq!(kit.at([8, 1, 0]), AIR);
    // The sources and every flow are the module's own edits, so the
    // rollback log names it.
    let calls = liquid.kit().calls::<EditVoxels>();
    assert!(calls.len() > 1, "sources and flows");
    assert!(
        calls
            .iter()
            .flat_map(|call| &call.edits)
            .all(|e| e.by.as_deref() == Some("liquid (module)")),
        "{:?}",
        calls[0].edits.first()
    );
    // Too many sources for one call, or none, are refused by the parser.
    assert!(
        liquid
            .command("liquid", &["flood", "0", "0", "0"], None)
            .is_err()
    );
    assert!(
        liquid
            .command("liquid", &["flood", "0", "0", "4097"], None)
            .is_err()
    );
}
