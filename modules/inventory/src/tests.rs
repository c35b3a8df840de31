//! The module on the test kit: a fake world that keeps values and applies
//! `EditTogether` groups as voxelworld does (all or nothing per group, a
//! later group sharing a key with a refused one refused too, a storage
//! failure applying nothing), fake items, crafting and players; then
//! every action's rules, the anti-duplication cases, reach and ownership,
//! stack limits, wear and the census.
//!
//! Owns: these tests and their fakes. Does not own: the rules of a change
//! alone (`tx.rs` tests them), the real world (server e2e).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use buildat_crafting_api::{CraftMatch, MatchGrid};
use buildat_health_api::{Cause, Died, Respawned};
use buildat_interface::ModuleError;
use buildat_interface::core_api::RunCommand;
use buildat_interface::events::Tick;
use buildat_interface::testing::{TestHost, TestModule};
use buildat_inventory_api::{
    Act, Action, Answer, Census, Change, CreateInventory, EditVoxel, GetInventory, GetSlots,
    Inventory, ItemStack, Lists, Overflow, Owner, Preview, RemoveInventory, SlotRef, Transact,
    TransactMany, Transaction, TxOutcome, VALUE_SPACE,
};
use buildat_items_api::{GetItems, GroupCap, ItemDef, ItemRegistry, ToolCaps};
use buildat_main_api::{PlayerJoined, PlayerLeft, VAR_PEER, VAR_PLAYER};
use buildat_network_api::Disconnect;
use buildat_network_api::receive::testing::{DeliverPackets, disconnected, sent};
use buildat_voxelworld_api::{
    CreateNodes, DynamicNode, EditTogether, GetValue, IDENTITY, ListNodes, ListValues,
    MemoryValues, NodeMotion, NodesChanged, PutValues, RemoveNodes, Replace, SetNodeVar,
};

use crate::Inventories;
use crate::store;

/// The world's values and what the fake voxelworld did.
#[derive(Default)]
struct World {
    values: MemoryValues,
    /// Every write fails (a full disk, a lost database).
    fail_writes: bool,
    /// Edits at these voxels are refused (somebody changed the voxel).
    refuse_at: BTreeSet<[i32; 3]>,
    /// Edits applied, in order.
    edits: Vec<EditVoxel>,
    next_node: u64,
    nodes: BTreeMap<u64, BTreeMap<String, Vec<u8>>>,
}

type Shared = Arc<Mutex<World>>;

fn world(shared: &Shared) -> std::sync::MutexGuard<'_, World> {
    shared.lock().unwrap_or_else(|p| p.into_inner())
}

fn items() -> ItemRegistry {
    let mut stick = ItemDef::craft("stick", "Stick", "stick.png");
    stick.stack_max = 10;
    let defs = [
        stick,
        ItemDef::craft("wood", "Wood", "wood.png"),
        ItemDef::craft("planks", "Planks", "planks.png"),
        ItemDef::craft("bucket", "Bucket", "bucket.png"),
        ItemDef::craft("water_bucket", "Water bucket", "wb.png"),
        ItemDef::craft("cobble", "Cobble", "cobble.png"),
        ItemDef::tool(
            "pick",
            "Pick",
            "pick.png",
            ToolCaps::default().with("cracky", GroupCap::new(&[1.0], 2, 0)),
        ),
    ];
    ItemRegistry {
        version: 1,
        items: defs.into_iter().map(|d| (d.name.clone(), d)).collect(),
    }
}

/// Crafting's answer: one `wood` anywhere makes 4 `planks`; a
/// `water_bucket` with a `wood` makes a `stick` and leaves a `bucket`.
fn match_grid(grid: &[Option<ItemStack>]) -> Option<CraftMatch> {
    let full: Vec<usize> = (0..grid.len()).filter(|i| grid[*i].is_some()).collect();
    let name = |i: usize| grid[i].as_ref().map(|s| s.name.as_str());
    let mut take = vec![0; grid.len()];
    let mut leave = vec![None; grid.len()];
    match full.as_slice() {
        [one] if name(*one) == Some("wood") => {
            take[*one] = 1;
            Some(CraftMatch {
                output: ItemStack::new("planks", 4),
                take,
                leave,
            })
        }
        [a, b] => {
            let (water, wood) = if name(*a) == Some("water_bucket") {
                (*a, *b)
            } else {
                (*b, *a)
            };
            if name(water) != Some("water_bucket") || name(wood) != Some("wood") {
                return None;
            }
            take[water] = 1;
            take[wood] = 1;
            leave[water] = Some(ItemStack::new("bucket", 1));
            Some(CraftMatch {
                output: ItemStack::new("stick", 1),
                take,
                leave,
            })
        }
        _ => None,
    }
}

fn kit() -> (TestHost, Shared) {
    let kit = TestHost::new();
    let shared: Shared = Arc::default();
    let w = shared.clone();
    kit.answer(move |get: GetValue| Ok(world(&w).values.answer_get(&get)));
    let w = shared.clone();
    kit.answer(move |put: PutValues| {
        let mut world = world(&w);
        if world.fail_writes {
            return Err(ModuleError::msg("the disk is full"));
        }
        world.values.answer_put(&put.writes);
        Ok(true)
    });
    let w = shared.clone();
    kit.answer(move |together: EditTogether| {
        let mut world = world(&w);
        if world.fail_writes {
            return Err(ModuleError::msg("the disk is full"));
        }
        let mut refused_keys = BTreeSet::new();
        let mut applied = Vec::new();
        for group in &together.groups {
            let keys: BTreeSet<_> = group.writes.iter().map(|w| w.key.clone()).collect();
            let ok = group
                .edits
                .iter()
                .all(|e| !world.refuse_at.contains(&e.pos))
                && keys.is_disjoint(&refused_keys);
            if ok {
                world.values.answer_put(&group.writes);
                world.edits.extend(group.edits.iter().cloned());
            } else {
                refused_keys.extend(keys);
            }
            applied.push(ok);
        }
        Ok(applied)
    });
    let w = shared.clone();
    kit.answer(move |list: ListValues| Ok(world(&w).values.answer_list(&list)));
    kit.answer(|_: GetItems| Ok(items()));
    kit.answer(|m: MatchGrid| Ok(match_grid(&m.grid)));
    kit.answer(|_: Disconnect| Ok(()));
    let w = shared.clone();
    kit.answer(move |create: CreateNodes| {
        let mut world = world(&w);
        let mut ids = Vec::new();
        for node in create.nodes {
            world.next_node += 1;
            let id = world.next_node;
            world.nodes.insert(id, node.vars);
            ids.push(Some(id));
        }
        Ok(ids)
    });
    let w = shared.clone();
    kit.answer(move |list: ListNodes| {
        let world = world(&w);
        Ok(world
            .nodes
            .iter()
            .filter(|(_, vars)| list.with_var.as_ref().is_none_or(|v| vars.contains_key(v)))
            .map(|(id, vars)| DynamicNode {
                id: *id,
                position: [0.0; 3],
                orientation: IDENTITY,
                velocity: [0.0; 3],
                parent: None,
                save_enabled: false,
                vars: vars.clone(),
            })
            .collect())
    });
    let w = shared.clone();
    kit.answer(move |remove: RemoveNodes| {
        let mut world = world(&w);
        Ok(remove
            .ids
            .into_iter()
            .filter(|id| world.nodes.remove(id).is_none())
            .collect())
    });
    let w = shared.clone();
    kit.answer(move |set: SetNodeVar| {
        if let Some(node) = world(&w).nodes.get_mut(&set.id) {
            node.insert(set.name, set.value);
        }
        Ok(())
    });
    (kit, shared)
}

fn ann() -> Owner {
    Owner::Player("ann".into())
}

fn slot(owner: &Owner, list: &str, index: u16) -> SlotRef {
    SlotRef {
        owner: owner.clone(),
        list: list.into(),
        index,
    }
}

/// Joins `name` on `peer`, standing at `position`.
fn join(
    inv: &mut TestModule<Inventories>,
    shared: &Shared,
    name: &str,
    peer: u64,
    position: [f64; 3],
) {
    let _ = shared;
    // main makes the player's node, then tells of the join.
    inv.emit(&NodesChanged {
        changed: vec![DynamicNode {
            id: 1000 + peer,
            position,
            orientation: IDENTITY,
            velocity: [0.0; 3],
            parent: None,
            save_enabled: false,
            vars: BTreeMap::from([
                (VAR_PLAYER.to_string(), name.as_bytes().to_vec()),
                (VAR_PEER.to_string(), peer.to_le_bytes().to_vec()),
            ]),
        }],
        moved: Vec::new(),
        removed: Vec::new(),
    })
    .unwrap();
    inv.emit(&PlayerJoined {
        name: name.into(),
        peer,
    })
    .unwrap();
}

/// main moved the player of `peer` to `position`.
fn move_player(inv: &mut TestModule<Inventories>, peer: u64, position: [f64; 3]) {
    inv.emit(&NodesChanged {
        changed: Vec::new(),
        moved: vec![NodeMotion {
            id: 1000 + peer,
            position,
            orientation: IDENTITY,
            velocity: [0.0; 3],
        }],
        removed: Vec::new(),
    })
    .unwrap();
}

/// A module with `ann` playing on peer 1 at the origin.
fn started() -> (TestHost, Shared, TestModule<Inventories>) {
    let (kit, shared) = kit();
    let mut inv = kit.load::<Inventories>().unwrap();
    join(&mut inv, &shared, "ann", 1, [0.0, 0.0, 0.0]);
    (kit, shared, inv)
}

fn command(
    inv: &mut TestModule<Inventories>,
    name: &str,
    args: &[&str],
) -> Result<String, ModuleError> {
    inv.call(&RunCommand {
        name: name.into(),
        args: args.iter().map(|a| a.to_string()).collect(),
        by: None,
    })
}

fn give(inv: &mut TestModule<Inventories>, player: &str, item: &str, count: u16) {
    command(inv, "give", &[player, item, &count.to_string()]).unwrap();
}

/// The inventory as the module holds it.
fn held(inv: &mut TestModule<Inventories>, owner: &Owner) -> Option<Inventory> {
    inv.call(&GetInventory {
        owner: owner.clone(),
    })
    .unwrap()
}

/// The inventory as stored.
fn stored(shared: &Shared, owner: &Owner) -> Option<Inventory> {
    let world = world(shared);
    let bytes = world.values.get(&(VALUE_SPACE.to_string(), owner.key()))?;
    Some(store::decode(owner, bytes).unwrap().inventory)
}

fn main_slot(inventory: &Inventory, index: usize) -> Option<ItemStack> {
    inventory.lists["main"][index].clone()
}

/// Sends an action from `peer`; the answer.
fn act(inv: &mut TestModule<Inventories>, peer: u64, seq: u32, action: Action) -> Answer {
    inv.packet(peer, &Act { seq, action }).unwrap();
    // Queued actions run at the tick.
    inv.emit(&Tick { dtime: 0.0 }).unwrap();
    let answers: Vec<Answer> = sent::<Answer>(inv.kit())
        .into_iter()
        .filter(|(p, a)| *p == peer && a.seq == seq)
        .map(|(_, a)| a)
        .collect();
    assert_eq!(answers.len(), 1, "one answer to {seq}");
    answers[0].clone()
}

fn moving(from: SlotRef, to: SlotRef, count: u16) -> Action {
    Action::Move { from, to, count }
}

#[test]
fn joining_makes_the_players_inventory_once_and_sends_it() {
    let (kit, shared, mut inv) = started();
    let made = stored(&shared, &ann()).unwrap();
    assert_eq!(made.lists["main"].len(), 32);
    assert_eq!(made.lists["craft"].len(), 4);
    let lists = sent::<Lists>(&kit);
    assert!(
        lists
            .iter()
            .any(|(peer, l)| *peer == 1 && l.owner == ann() && l.lists.len() == 2)
    );
    assert!(
        sent::<Preview>(&kit)
            .iter()
            .any(|(peer, p)| *peer == 1 && p.output.is_none())
    );

    give(&mut inv, "ann", "stick", 3);
    inv.emit(&PlayerLeft {
        name: "ann".into(),
        peer: 1,
    })
    .unwrap();
    join(&mut inv, &shared, "ann", 2, [0.0, 0.0, 0.0]);
    let again = held(&mut inv, &ann()).unwrap();
    assert_eq!(
        main_slot(&again, 0),
        Some(ItemStack::new("stick", 3)),
        "kept over a rejoin"
    );
}

#[test]
fn a_move_is_stored_before_it_is_answered_and_sent_to_the_player() {
    let (kit, shared, mut inv) = started();
    give(&mut inv, "ann", "stick", 5);
    kit.clear();
    let answer = act(
        &mut inv,
        1,
        7,
        moving(slot(&ann(), "main", 0), slot(&ann(), "main", 3), 2),
    );
    assert!(answer.ok, "{answer:?}");
    let inventory = stored(&shared, &ann()).unwrap();
    assert_eq!(main_slot(&inventory, 0), Some(ItemStack::new("stick", 3)));
    assert_eq!(main_slot(&inventory, 3), Some(ItemStack::new("stick", 2)));
    assert_eq!(held(&mut inv, &ann()), Some(inventory.clone()));
    // The lists went out before the answer.
    let lists = sent::<Lists>(&kit);
    assert_eq!(lists.len(), 1);
    assert_eq!(
        lists[0]
            .1
            .lists
            .iter()
            .find(|(n, _)| n == "main")
            .unwrap()
            .1,
        inventory.lists["main"]
    );
}

#[test]
fn moves_merge_up_to_the_stack_size_swap_whole_stacks_and_refuse_the_rest() {
    let (_kit, _shared, mut inv) = started();
    give(&mut inv, "ann", "stick", 10);
    give(&mut inv, "ann", "stick", 6); // slot 1
    give(&mut inv, "ann", "wood", 2); // slot 2
    let me = ann();
    // Merge 6 onto... slot 0 is full: refused.
    let full = act(
        &mut inv,
        1,
        1,
        moving(slot(&me, "main", 1), slot(&me, "main", 0), 6),
    );
    assert!(!full.ok && full.reason.contains("full"), "{full:?}");
    // Half a stack onto another item: refused.
    let part = act(
        &mut inv,
        1,
        2,
        moving(slot(&me, "main", 1), slot(&me, "main", 2), 3),
    );
    assert!(!part.ok, "{part:?}");
    // The whole stack swaps.
    assert!(
        act(
            &mut inv,
            1,
            3,
            moving(slot(&me, "main", 1), slot(&me, "main", 2), 6)
        )
        .ok
    );
    let now = held(&mut inv, &me).unwrap();
    assert_eq!(main_slot(&now, 1), Some(ItemStack::new("wood", 2)));
    assert_eq!(main_slot(&now, 2), Some(ItemStack::new("stick", 6)));
    // Merging takes only what fits: 4 of 6 onto a stack of 6 (max 10).
    give(&mut inv, "ann", "stick", 4); // fills slot 2 to 10? it stacks first
    let now = held(&mut inv, &me).unwrap();
    assert_eq!(main_slot(&now, 2), Some(ItemStack::new("stick", 10)));
    give(&mut inv, "ann", "stick", 6); // slot 3
    assert!(
        act(
            &mut inv,
            1,
            4,
            moving(slot(&me, "main", 3), slot(&me, "craft", 0), 2)
        )
        .ok
    );
    assert!(
        act(
            &mut inv,
            1,
            5,
            moving(slot(&me, "main", 3), slot(&me, "craft", 0), 4)
        )
        .ok
    );
    let now = held(&mut inv, &me).unwrap();
    assert_eq!(main_slot(&now, 3), None);
    assert_eq!(now.lists["craft"][0], Some(ItemStack::new("stick", 6)));
    // More than the slot holds, nothing, and a slot onto itself: refused.
    for (seq, count) in [(6, 7), (7, 0)] {
        assert!(
            !act(
                &mut inv,
                1,
                seq,
                moving(slot(&me, "craft", 0), slot(&me, "main", 9), count)
            )
            .ok
        );
    }
    assert!(
        !act(
            &mut inv,
            1,
            8,
            moving(slot(&me, "craft", 0), slot(&me, "craft", 0), 1)
        )
        .ok
    );
    assert!(
        !act(
            &mut inv,
            1,
            9,
            moving(slot(&me, "main", 9), slot(&me, "main", 99), 1)
        )
        .ok
    );
}

#[test]
fn a_storage_failure_puts_nothing_in_memory_and_answers_the_client_with_an_error() {
    let (_kit, shared, mut inv) = started();
    give(&mut inv, "ann", "stick", 5);
    let before = held(&mut inv, &ann()).unwrap();
    world(&shared).fail_writes = true;
    let answer = act(
        &mut inv,
        1,
        1,
        moving(slot(&ann(), "main", 0), slot(&ann(), "main", 1), 5),
    );
    assert!(!answer.ok);
    assert!(answer.reason.contains("not stored"), "{answer:?}");
    assert_eq!(held(&mut inv, &ann()).unwrap(), before, "memory as before");
    assert_eq!(
        stored(&shared, &ann()).unwrap(),
        before,
        "storage as before"
    );
    // A dig's transaction fails whole too: no drop given, no voxel taken.
    let outcomes = inv
        .call(&TransactMany {
            txs: vec![dig_giving([5, 5, 5], "cobble")],
        })
        .unwrap();
    assert!(matches!(&outcomes[0], TxOutcome::Refused(why) if why.contains("not stored")));
    assert!(world(&shared).edits.is_empty());
    assert_eq!(held(&mut inv, &ann()).unwrap(), before);
    world(&shared).fail_writes = false;
    assert!(
        act(
            &mut inv,
            1,
            2,
            moving(slot(&ann(), "main", 0), slot(&ann(), "main", 1), 5)
        )
        .ok
    );
}

/// A dig at `pos` giving ann one `item`.
fn dig_giving(pos: [i32; 3], item: &str) -> Transaction {
    Transaction {
        changes: vec![Change::Give {
            owner: ann(),
            list: "main".into(),
            stack: ItemStack::new(item, 1),
            overflow: Overflow::DropAt([0.5, 0.5, 0.5]),
        }],
        edit: Some(EditVoxel {
            pos,
            voxel: 0,
            replace: Replace::NotAir,
            save: true,
            by: Some("ann".into()),
        }),
        by: Some("ann".into()),
    }
}

#[test]
fn a_refused_edit_gives_nothing_and_refuses_the_later_transactions_built_on_it() {
    let (_kit, shared, mut inv) = started();
    join(&mut inv, &shared, "bob", 2, [0.0, 0.0, 0.0]);
    world(&shared).refuse_at.insert([1, 1, 1]);
    let to_bob = Transaction {
        changes: vec![Change::Give {
            owner: Owner::Player("bob".into()),
            list: "main".into(),
            stack: ItemStack::new("wood", 1),
            overflow: Overflow::Refuse,
        }],
        edit: None,
        by: None,
    };
    let outcomes = inv
        .call(&TransactMany {
            txs: vec![
                dig_giving([1, 1, 1], "cobble"),
                dig_giving([2, 2, 2], "wood"),
                to_bob,
            ],
        })
        .unwrap();
    assert!(matches!(outcomes[0], TxOutcome::Refused(_)), "{outcomes:?}");
    // Ann's second dig was computed on top of the first: refused with it.
    assert!(matches!(outcomes[1], TxOutcome::Refused(_)), "{outcomes:?}");
    assert_eq!(outcomes[2], TxOutcome::Done);
    for inventory in [
        held(&mut inv, &ann()).unwrap(),
        stored(&shared, &ann()).unwrap(),
    ] {
        assert!(
            inventory.lists.values().flatten().all(Option::is_none),
            "ann got nothing"
        );
    }
    assert_eq!(
        main_slot(&stored(&shared, &Owner::Player("bob".into())).unwrap(), 0),
        Some(ItemStack::new("wood", 1))
    );
    assert!(world(&shared).edits.is_empty());
    // Alone, the second dig applies: its voxel and its drop together.
    let outcomes = inv
        .call(&TransactMany {
            txs: vec![dig_giving([2, 2, 2], "wood")],
        })
        .unwrap();
    assert_eq!(outcomes, vec![TxOutcome::Done]);
    assert_eq!(world(&shared).edits.len(), 1);
    assert_eq!(
        main_slot(&stored(&shared, &ann()).unwrap(), 0),
        Some(ItemStack::new("wood", 1))
    );
}

#[test]
fn a_disconnect_between_actions_leaves_the_stored_state_whole() {
    let (_kit, shared, mut inv) = started();
    give(&mut inv, "ann", "stick", 10);
    assert!(
        act(
            &mut inv,
            1,
            1,
            moving(slot(&ann(), "main", 0), slot(&ann(), "craft", 1), 4)
        )
        .ok
    );
    let census_before = inv.call(&Census {}).unwrap();
    inv.emit(&PlayerLeft {
        name: "ann".into(),
        peer: 1,
    })
    .unwrap();
    // An action the gone peer sent before it left: refused, nothing moves.
    let late = act(
        &mut inv,
        1,
        2,
        moving(slot(&ann(), "craft", 1), slot(&ann(), "main", 5), 4),
    );
    assert!(!late.ok);
    let kept = stored(&shared, &ann()).unwrap();
    assert_eq!(main_slot(&kept, 0), Some(ItemStack::new("stick", 6)));
    assert_eq!(kept.lists["craft"][1], Some(ItemStack::new("stick", 4)));
    assert_eq!(inv.call(&Census {}).unwrap(), census_before);
    assert_eq!(census_before["stick"], 10);
    // A reload (a new instance reading storage) finds the same.
    let mut again = inv.kit().clone().load::<Inventories>().unwrap();
    assert_eq!(held(&mut again, &ann()), Some(kept));
}

#[test]
fn only_the_own_inventory_and_voxels_within_reach_are_used() {
    let (_kit, shared, mut inv) = started();
    join(&mut inv, &shared, "bob", 2, [0.0, 0.0, 0.0]);
    give(&mut inv, "bob", "wood", 1);
    let bob = Owner::Player("bob".into());
    let stolen = act(
        &mut inv,
        1,
        1,
        moving(slot(&bob, "main", 0), slot(&ann(), "main", 0), 1),
    );
    assert!(
        !stolen.ok && stolen.reason.contains("another player"),
        "{stolen:?}"
    );
    let module = Owner::Module {
        module: "shop".into(),
        key: "till".into(),
    };
    inv.call(&CreateInventory {
        owner: module.clone(),
        lists: vec![("main".into(), 4)],
    })
    .unwrap();
    let refused = act(
        &mut inv,
        2,
        2,
        moving(slot(&bob, "main", 0), slot(&module, "main", 0), 1),
    );
    assert!(
        !refused.ok && refused.reason.contains("module"),
        "{refused:?}"
    );

    let near = Owner::Voxel([1, 0, 1]);
    let far = Owner::Voxel([40, 0, 0]);
    for chest in [&near, &far] {
        inv.call(&CreateInventory {
            owner: chest.clone(),
            lists: vec![("main".into(), 32)],
        })
        .unwrap();
    }
    let out = act(
        &mut inv,
        2,
        3,
        moving(slot(&bob, "main", 0), slot(&far, "main", 0), 1),
    );
    assert!(!out.ok && out.reason.contains("out of reach"), "{out:?}");
    assert!(!act(&mut inv, 2, 4, Action::Open { voxel: [40, 0, 0] }).ok);
    assert!(act(&mut inv, 2, 5, Action::Open { voxel: [1, 0, 1] }).ok);
    assert!(
        act(
            &mut inv,
            2,
            6,
            moving(slot(&bob, "main", 0), slot(&near, "main", 0), 1)
        )
        .ok
    );
    assert_eq!(
        main_slot(&stored(&shared, &near).unwrap(), 0),
        Some(ItemStack::new("wood", 1))
    );
    // Bob opened it: he hears of its changes; a voxel without an inventory does not open.
    assert!(!act(&mut inv, 2, 7, Action::Open { voxel: [0, 0, 1] }).ok);
    // Bob walks away: the chest is out of reach now.
    move_player(&mut inv, 2, [100.0, 0.0, 0.0]);
    assert!(
        !act(
            &mut inv,
            2,
            8,
            moving(slot(&near, "main", 0), slot(&bob, "main", 0), 1)
        )
        .ok
    );
    // A peer that never joined is refused.
    assert!(!act(&mut inv, 9, 9, Action::Open { voxel: [1, 0, 1] }).ok);
    // A drop is not moved from by hand.
    assert!(
        !act(
            &mut inv,
            1,
            10,
            moving(slot(&Owner::Drop(1), "main", 0), slot(&ann(), "main", 0), 1)
        )
        .ok
    );
}

#[test]
fn the_holders_of_an_opened_chest_hear_of_its_changes() {
    let (kit, shared, mut inv) = started();
    join(&mut inv, &shared, "bob", 2, [0.0, 0.0, 0.0]);
    let chest = Owner::Voxel([1, 0, 1]);
    inv.call(&CreateInventory {
        owner: chest.clone(),
        lists: vec![("main".into(), 32)],
    })
    .unwrap();
    assert!(act(&mut inv, 2, 1, Action::Open { voxel: [1, 0, 1] }).ok);
    give(&mut inv, "ann", "wood", 1);
    kit.clear();
    assert!(
        act(
            &mut inv,
            1,
            1,
            moving(slot(&ann(), "main", 0), slot(&chest, "main", 0), 1)
        )
        .ok
    );
    let lists = sent::<Lists>(&kit);
    assert!(lists.iter().any(|(peer, l)| *peer == 2 && l.owner == chest));
    assert!(lists.iter().any(|(peer, l)| *peer == 1 && l.owner == ann()));
    assert!(
        !lists.iter().any(|(peer, l)| *peer == 1 && l.owner == chest),
        "ann did not open it"
    );
    assert!(act(&mut inv, 2, 2, Action::Close { voxel: [1, 0, 1] }).ok);
    kit.clear();
    assert!(
        act(
            &mut inv,
            1,
            2,
            moving(slot(&chest, "main", 0), slot(&ann(), "main", 0), 1)
        )
        .ok
    );
    assert!(
        !sent::<Lists>(&kit).iter().any(|(peer, _)| *peer == 2),
        "closed"
    );
}

#[test]
fn gives_keep_to_stack_sizes_and_refuse_what_does_not_fit() {
    let (_kit, shared, mut inv) = started();
    give(&mut inv, "ann", "stick", 25);
    let now = held(&mut inv, &ann()).unwrap();
    assert_eq!(main_slot(&now, 0), Some(ItemStack::new("stick", 10)));
    assert_eq!(main_slot(&now, 1), Some(ItemStack::new("stick", 10)));
    assert_eq!(main_slot(&now, 2), Some(ItemStack::new("stick", 5)));
    // 32 slots of 10: 320 at most; 296 more do not fit: nothing given.
    let refused = command(&mut inv, "give", &["ann", "stick", "296"]);
    assert!(refused.is_err(), "{refused:?}");
    assert_eq!(held(&mut inv, &ann()).unwrap(), now);
    assert_eq!(stored(&shared, &ann()).unwrap(), now);
    assert!(command(&mut inv, "give", &["ann", "nothing_known", "1"]).is_err());
}

#[test]
fn all_of_a_transaction_or_nothing_of_it() {
    let (_kit, shared, mut inv) = started();
    give(&mut inv, "ann", "wood", 3);
    let before = held(&mut inv, &ann()).unwrap();
    let tx = Transaction {
        changes: vec![
            Change::Take {
                slot: slot(&ann(), "main", 0),
                name: "wood".into(),
                count: 3,
            },
            Change::Put {
                slot: slot(&ann(), "main", 5),
                stack: ItemStack::new("wood", 3),
            },
            // Fails: only 3.
            Change::Take {
                slot: slot(&ann(), "main", 5),
                name: "wood".into(),
                count: 4,
            },
        ],
        edit: None,
        by: None,
    };
    let outcomes = inv.call(&TransactMany { txs: vec![tx] }).unwrap();
    assert!(matches!(outcomes[0], TxOutcome::Refused(_)));
    assert_eq!(held(&mut inv, &ann()).unwrap(), before);
    assert_eq!(stored(&shared, &ann()).unwrap(), before);
}

#[test]
fn wear_breaks_a_tool_at_the_end_of_its_uses() {
    let (_kit, shared, mut inv) = started();
    give(&mut inv, "ann", "pick", 1);
    let wear = || Transaction {
        changes: vec![Change::Wear {
            slot: slot(&ann(), "main", 0),
            name: "pick".into(),
            amount: buildat_items_api::wear_per_use(2),
        }],
        edit: None,
        by: None,
    };
    assert_eq!(
        inv.call(&TransactMany { txs: vec![wear()] }).unwrap(),
        vec![TxOutcome::Done]
    );
    assert!(main_slot(&stored(&shared, &ann()).unwrap(), 0).is_some_and(|p| p.wear > 0));
    assert_eq!(
        inv.call(&TransactMany { txs: vec![wear()] }).unwrap(),
        vec![TxOutcome::Done]
    );
    assert_eq!(
        main_slot(&stored(&shared, &ann()).unwrap(), 0),
        None,
        "broken after 2 uses"
    );
    assert!(matches!(
        inv.call(&TransactMany { txs: vec![wear()] }).unwrap()[0],
        TxOutcome::Refused(_)
    ));
}

#[test]
fn a_voxel_holding_items_is_not_dug_and_an_empty_ones_inventory_goes_with_it() {
    let (_kit, shared, mut inv) = started();
    let chest = Owner::Voxel([3, 0, 0]);
    inv.call(&CreateInventory {
        owner: chest.clone(),
        lists: vec![("main".into(), 32)],
    })
    .unwrap();
    let put = Transaction {
        changes: vec![Change::Give {
            owner: chest.clone(),
            list: "main".into(),
            stack: ItemStack::new("wood", 1),
            overflow: Overflow::Refuse,
        }],
        edit: None,
        by: None,
    };
    assert_eq!(
        inv.call(&TransactMany { txs: vec![put] }).unwrap(),
        vec![TxOutcome::Done]
    );
    let refused = inv
        .call(&TransactMany {
            txs: vec![dig_giving([3, 0, 0], "cobble")],
        })
        .unwrap();
    assert!(matches!(&refused[0], TxOutcome::Refused(why) if why.contains("holds items")));
    assert!(world(&shared).edits.is_empty());
    // Emptied into ann's inventory, then dug: the inventory is gone with it.
    let take = Transaction {
        changes: vec![
            Change::Take {
                slot: slot(&chest, "main", 0),
                name: "wood".into(),
                count: 1,
            },
            Change::Give {
                owner: ann(),
                list: "main".into(),
                stack: ItemStack::new("wood", 1),
                overflow: Overflow::Refuse,
            },
        ],
        edit: Some(dig_giving([3, 0, 0], "cobble").edit.unwrap()),
        by: None,
    };
    assert_eq!(
        inv.call(&TransactMany { txs: vec![take] }).unwrap(),
        vec![TxOutcome::Done]
    );
    assert_eq!(stored(&shared, &chest), None);
    assert_eq!(held(&mut inv, &chest), None);
    assert_eq!(world(&shared).edits.len(), 1);
}

#[test]
fn crafting_takes_the_ingredients_leaves_replacements_and_previews() {
    let (kit, _shared, mut inv) = started();
    give(&mut inv, "ann", "wood", 2);
    give(&mut inv, "ann", "water_bucket", 1);
    kit.clear();
    assert!(
        act(
            &mut inv,
            1,
            1,
            moving(slot(&ann(), "main", 0), slot(&ann(), "craft", 0), 1)
        )
        .ok
    );
    let previews = sent::<Preview>(&kit);
    assert_eq!(
        previews.last().unwrap().1.output,
        Some(ItemStack::new("planks", 4))
    );
    assert!(
        act(
            &mut inv,
            1,
            2,
            Action::Craft {
                grid: ann(),
                to: slot(&ann(), "main", 5),
            }
        )
        .ok
    );
    let now = held(&mut inv, &ann()).unwrap();
    assert_eq!(main_slot(&now, 5), Some(ItemStack::new("planks", 4)));
    assert_eq!(now.lists["craft"][0], None);
    assert_eq!(sent::<Preview>(&kit).last().unwrap().1.output, None);
    // Nothing in the grid: nothing made.
    assert!(
        !act(
            &mut inv,
            1,
            3,
            Action::Craft {
                grid: ann(),
                to: slot(&ann(), "main", 6),
            }
        )
        .ok
    );
    // The bucket stays behind in its slot.
    assert!(
        act(
            &mut inv,
            1,
            4,
            moving(slot(&ann(), "main", 0), slot(&ann(), "craft", 0), 1)
        )
        .ok
    );
    assert!(
        act(
            &mut inv,
            1,
            5,
            moving(slot(&ann(), "main", 1), slot(&ann(), "craft", 3), 1)
        )
        .ok
    );
    assert!(
        act(
            &mut inv,
            1,
            6,
            Action::Craft {
                grid: ann(),
                to: slot(&ann(), "main", 6),
            }
        )
        .ok
    );
    let now = held(&mut inv, &ann()).unwrap();
    assert_eq!(main_slot(&now, 6), Some(ItemStack::new("stick", 1)));
    assert_eq!(now.lists["craft"][3], Some(ItemStack::new("bucket", 1)));
    assert_eq!(now.lists["craft"][0], None);
    // Into a slot holding another item: refused whole, the grid as it was.
    give(&mut inv, "ann", "wood", 1);
    let before = held(&mut inv, &ann()).unwrap();
    let wood_at = before.lists["main"]
        .iter()
        .position(|s| s.as_ref().is_some_and(|s| s.name == "wood"))
        .unwrap() as u16;
    assert!(
        act(
            &mut inv,
            1,
            7,
            moving(slot(&ann(), "main", wood_at), slot(&ann(), "craft", 1), 1)
        )
        .ok
    );
    let before = held(&mut inv, &ann()).unwrap();
    assert!(
        !act(
            &mut inv,
            1,
            8,
            Action::Craft {
                grid: ann(),
                to: slot(&ann(), "main", 6),
            }
        )
        .ok
    );
    assert_eq!(held(&mut inv, &ann()).unwrap(), before);
}

#[test]
fn the_census_counts_every_stored_item() {
    let (_kit, _shared, mut inv) = started();
    give(&mut inv, "ann", "stick", 25);
    give(&mut inv, "bob", "wood", 3);
    let chest = Owner::Voxel([1, 0, 0]);
    inv.call(&CreateInventory {
        owner: chest.clone(),
        lists: vec![("main".into(), 32)],
    })
    .unwrap();
    assert!(
        act(
            &mut inv,
            1,
            1,
            moving(slot(&ann(), "main", 0), slot(&chest, "main", 4), 10)
        )
        .ok
    );
    let census = inv.call(&Census {}).unwrap();
    assert_eq!(census["stick"], 25);
    assert_eq!(census["wood"], 3);
    let report = command(&mut inv, "census", &[]).unwrap();
    assert!(
        report.contains("stick 25") && report.ends_with("total 28"),
        "{report}"
    );
    // An empty inventory is removed, a full one is not.
    assert!(
        !inv.call(&RemoveInventory {
            owner: chest.clone()
        })
        .unwrap()
    );
}

#[test]
fn a_malformed_action_drops_its_peer() {
    let (kit, _shared, mut inv) = started();
    inv.packet_bytes(1, "inventory:act", &[1, 0, 0, 0, 99])
        .unwrap();
    let dropped = disconnected(&kit);
    assert_eq!(dropped.len(), 1);
    assert!(
        dropped[0].1.contains("malformed inventory:act"),
        "{dropped:?}"
    );
}

#[test]
fn create_inventory_grows_lists_and_never_drops_items() {
    let (_kit, shared, mut inv) = started();
    give(&mut inv, "ann", "wood", 1);
    inv.call(&CreateInventory {
        owner: ann(),
        lists: vec![("main".into(), 2), ("bag".into(), 3)],
    })
    .unwrap();
    let now = stored(&shared, &ann()).unwrap();
    assert_eq!(now.lists["main"].len(), 32, "not shrunk");
    assert_eq!(now.lists["bag"].len(), 3);
    assert_eq!(main_slot(&now, 0), Some(ItemStack::new("wood", 1)));
    let empty = Owner::Voxel([9, 9, 9]);
    inv.call(&CreateInventory {
        owner: empty.clone(),
        lists: vec![("main".into(), 1)],
    })
    .unwrap();
    assert!(
        inv.call(&RemoveInventory {
            owner: empty.clone()
        })
        .unwrap()
    );
    assert_eq!(stored(&shared, &empty), None);
    let _ = inv.emit(&Tick { dtime: 0.1 });
}

/// Makes every drop in memory `seconds` older.
fn age_drops(inv: &mut TestModule<Inventories>, seconds: u64) {
    for stored in inv.module_mut().held.values_mut() {
        if let Some(place) = &mut stored.drop {
            place.since -= seconds;
        }
    }
}

/// The drop nodes of the fake world: (item, count) each.
fn drop_nodes(shared: &Shared) -> Vec<(String, u16)> {
    world(shared)
        .nodes
        .values()
        .filter(|vars| vars.contains_key("drop"))
        .map(|vars| {
            let count = u16::from_le_bytes(vars["count"].as_slice().try_into().unwrap());
            (String::from_utf8(vars["item"].clone()).unwrap(), count)
        })
        .collect()
}

#[test]
fn a_dropped_stack_lies_as_a_node_merges_and_is_picked_up_by_walking_over_it() {
    let (_kit, shared, mut inv) = started();
    give(&mut inv, "ann", "wood", 5);
    let dropped = act(
        &mut inv,
        1,
        1,
        Action::Drop {
            from: slot(&ann(), "main", 0),
            count: 3,
        },
    );
    assert!(dropped.ok, "{dropped:?}");
    assert_eq!(
        main_slot(&stored(&shared, &ann()).unwrap(), 0),
        Some(ItemStack::new("wood", 2))
    );
    assert_eq!(
        main_slot(&stored(&shared, &Owner::Drop(1)).unwrap(), 0),
        Some(ItemStack::new("wood", 3))
    );
    assert_eq!(drop_nodes(&shared), vec![("wood".to_string(), 3)]);
    assert_eq!(
        inv.call(&Census {}).unwrap()["wood"],
        5,
        "dropping loses nothing"
    );
    // Not straight back to the one who dropped it.
    inv.emit(&Tick { dtime: 0.1 }).unwrap();
    assert!(stored(&shared, &Owner::Drop(1)).is_some());
    // A second drop at the same place merges into the first.
    assert!(
        act(
            &mut inv,
            1,
            2,
            Action::Drop {
                from: slot(&ann(), "main", 0),
                count: 1,
            }
        )
        .ok
    );
    assert_eq!(
        main_slot(&stored(&shared, &Owner::Drop(1)).unwrap(), 0),
        Some(ItemStack::new("wood", 4))
    );
    assert_eq!(drop_nodes(&shared), vec![("wood".to_string(), 4)]);
    // A moment later, walking over it picks it up whole.
    age_drops(&mut inv, 10);
    inv.emit(&Tick { dtime: 0.1 }).unwrap();
    assert_eq!(stored(&shared, &Owner::Drop(1)), None);
    assert!(drop_nodes(&shared).is_empty());
    assert_eq!(
        main_slot(&stored(&shared, &ann()).unwrap(), 0),
        Some(ItemStack::new("wood", 5))
    );
    assert_eq!(inv.call(&Census {}).unwrap()["wood"], 5);
}

#[test]
fn what_does_not_fit_lies_on_the_ground_until_it_expires() {
    let (kit, shared) = kit();
    let kit = kit.config("inventory.drop_seconds", "30");
    let mut inv = kit.load::<Inventories>().unwrap();
    join(&mut inv, &shared, "ann", 1, [50.0, 0.0, 0.0]);
    give(&mut inv, "ann", "stick", 320);
    let outcomes = inv
        .call(&TransactMany {
            txs: vec![dig_giving([0, 0, 0], "cobble")],
        })
        .unwrap();
    assert_eq!(outcomes, vec![TxOutcome::Done]);
    assert_eq!(
        world(&shared).edits.len(),
        1,
        "the dig applied with its drop"
    );
    assert_eq!(inv.call(&Census {}).unwrap()["cobble"], 1, "on the ground");
    assert_eq!(drop_nodes(&shared), vec![("cobble".to_string(), 1)]);
    // A full player walking over it leaves it there.
    move_player(&mut inv, 1, [0.5, 0.0, 0.5]);
    age_drops(&mut inv, 10);
    inv.emit(&Tick { dtime: 0.1 }).unwrap();
    assert_eq!(inv.call(&Census {}).unwrap()["cobble"], 1);
    // After 30 s it is gone, and only then the census changes.
    age_drops(&mut inv, 25);
    inv.emit(&Tick { dtime: 1.0 }).unwrap();
    assert!(!inv.call(&Census {}).unwrap().contains_key("cobble"));
    assert!(drop_nodes(&shared).is_empty());
}

#[test]
fn a_dead_players_inventory_dropped_in_one_transaction_stays_until_it_respawns() {
    let (_kit, shared, mut inv) = started();
    give(&mut inv, "ann", "wood", 5);
    give(&mut inv, "ann", "stick", 3);
    // What the health module sends when ann dies: every slot taken, each
    // stack dropped where it died.
    let at = [0.5, 0.5, 0.5];
    let outcome = inv
        .call(&Transact {
            tx: Transaction {
                changes: vec![
                    Change::Take {
                        slot: slot(&ann(), "main", 0),
                        name: "wood".into(),
                        count: 5,
                    },
                    Change::Drop {
                        stack: ItemStack::new("wood", 5),
                        at,
                    },
                    Change::Take {
                        slot: slot(&ann(), "main", 1),
                        name: "stick".into(),
                        count: 3,
                    },
                    Change::Drop {
                        stack: ItemStack::new("stick", 3),
                        at,
                    },
                ],
                edit: None,
                by: Some("ann".into()),
            },
        })
        .unwrap();
    assert_eq!(outcome, TxOutcome::Done);
    let mut nodes = drop_nodes(&shared);
    nodes.sort();
    assert_eq!(
        nodes,
        vec![("stick".to_string(), 3), ("wood".to_string(), 5)]
    );
    assert_eq!(main_slot(&stored(&shared, &ann()).unwrap(), 0), None);
    assert_eq!(inv_total(&mut inv), 8, "nothing lost");
    // A drop of more than the player held fails whole (no items made).
    let greedy = inv
        .call(&Transact {
            tx: Transaction {
                changes: vec![
                    Change::Drop {
                        stack: ItemStack::new("wood", 1),
                        at,
                    },
                    Change::Take {
                        slot: slot(&ann(), "main", 0),
                        name: "wood".into(),
                        count: 1,
                    },
                ],
                edit: None,
                by: None,
            },
        })
        .unwrap();
    assert!(matches!(greedy, TxOutcome::Refused(_)), "{greedy:?}");
    assert_eq!(inv_total(&mut inv), 8);
    // Dead on the drops: its body picks nothing up.
    inv.emit(&Died {
        player: "ann".into(),
        cause: Cause::Fall,
        position: at,
    })
    .unwrap();
    age_drops(&mut inv, 10);
    inv.emit(&Tick { dtime: 0.1 }).unwrap();
    assert_eq!(drop_nodes(&shared).len(), 2, "{:?}", drop_nodes(&shared));
    // Back to life there, it does.
    inv.emit(&Respawned {
        player: "ann".into(),
        position: at,
    })
    .unwrap();
    inv.emit(&Tick { dtime: 0.1 }).unwrap();
    assert!(drop_nodes(&shared).is_empty());
    assert_eq!(inv_total(&mut inv), 8);
}

#[test]
fn stored_drops_come_back_as_nodes_after_a_restart_and_are_adopted_after_a_reload() {
    let (kit, shared, mut inv) = started();
    give(&mut inv, "ann", "wood", 2);
    assert!(
        act(
            &mut inv,
            1,
            1,
            Action::Drop {
                from: slot(&ann(), "main", 0),
                count: 2,
            }
        )
        .ok
    );
    drop(inv);
    // A reload: the node is still there, adopted rather than made twice.
    let again = kit.load::<Inventories>().unwrap();
    assert_eq!(drop_nodes(&shared).len(), 1);
    drop(again);
    // A restart: transient nodes are gone; the stored drop makes its node again.
    world(&shared).nodes.clear();
    let mut restarted = kit.load::<Inventories>().unwrap();
    assert_eq!(drop_nodes(&shared), vec![("wood".to_string(), 2)]);
    // And new drops are numbered after it.
    join(&mut restarted, &shared, "bob", 2, [0.0, 0.0, 0.0]);
    give(&mut restarted, "bob", "stick", 1);
    move_player(&mut restarted, 2, [9.0, 0.0, 9.0]);
    assert!(
        act(
            &mut restarted,
            2,
            1,
            Action::Drop {
                from: slot(&Owner::Player("bob".into()), "main", 0),
                count: 1,
            }
        )
        .ok
    );
    assert!(stored(&shared, &Owner::Drop(2)).is_some());
    assert_eq!(inv_total(&mut restarted), 3);
}

fn inv_total(inv: &mut TestModule<Inventories>) -> u64 {
    inv.call(&Census {}).unwrap().values().sum()
}

#[test]
fn an_item_registered_since_the_last_look_is_known_at_once() {
    let (kit, _shared, mut inv) = started();
    assert!(command(&mut inv, "give", &["ann", "torch", "1"]).is_err());
    // Registered meanwhile; its items:changed has not come yet.
    kit.answer(|_: GetItems| {
        let mut registry = items();
        let torch = ItemDef::craft("torch", "Torch", "torch.png");
        registry.items.insert(torch.name.clone(), torch);
        Ok(registry)
    });
    assert_eq!(
        command(&mut inv, "give", &["ann", "torch", "1"]).unwrap(),
        "gave 1 torch to ann"
    );
}

#[test]
fn a_ticks_actions_are_stored_in_one_write_and_a_stale_one_is_refused() {
    let (kit, shared, mut inv) = started();
    join(&mut inv, &shared, "bob", 2, [0.0, 0.0, 0.0]);
    let chest = Owner::Voxel([1, 0, 1]);
    inv.call(&CreateInventory {
        owner: chest.clone(),
        lists: vec![("main".into(), 32)],
    })
    .unwrap();
    give(&mut inv, "ann", "wood", 1);
    let ann_to_chest = moving(slot(&ann(), "main", 0), slot(&chest, "main", 0), 1);
    assert!(act(&mut inv, 1, 1, ann_to_chest).ok);
    kit.clear();
    // Both take the chest's wood in the same tick: the first gets it.
    let bob = Owner::Player("bob".into());
    inv.packet(
        1,
        &Act {
            seq: 2,
            action: moving(slot(&chest, "main", 0), slot(&ann(), "main", 3), 1),
        },
    )
    .unwrap();
    inv.packet(
        2,
        &Act {
            seq: 1,
            action: moving(slot(&chest, "main", 0), slot(&bob, "main", 0), 1),
        },
    )
    .unwrap();
    assert!(
        sent::<Answer>(&kit).is_empty(),
        "nobody answered before the store"
    );
    inv.emit(&Tick { dtime: 0.0 }).unwrap();
    assert_eq!(kit.calls::<PutValues>().len(), 1, "one write for the tick");
    let answers = sent::<Answer>(&kit);
    assert_eq!(answers.len(), 2);
    assert!(answers.iter().any(|(peer, a)| *peer == 1 && a.ok));
    assert!(
        answers
            .iter()
            .any(|(peer, a)| *peer == 2 && !a.ok && a.reason.contains("changed"))
    );
    assert_eq!(
        main_slot(&stored(&shared, &ann()).unwrap(), 3),
        Some(ItemStack::new("wood", 1))
    );
    assert_eq!(inv.call(&Census {}).unwrap()["wood"], 1);
    // A player's second action runs after its first: judged on its result.
    kit.clear();
    inv.packet(
        1,
        &Act {
            seq: 3,
            action: moving(slot(&ann(), "main", 3), slot(&ann(), "main", 4), 1),
        },
    )
    .unwrap();
    inv.packet(
        1,
        &Act {
            seq: 4,
            action: moving(slot(&ann(), "main", 4), slot(&ann(), "main", 5), 1),
        },
    )
    .unwrap();
    inv.emit(&Tick { dtime: 0.0 }).unwrap();
    assert!(
        sent::<Answer>(&kit).iter().all(|(_, a)| a.ok),
        "{:?}",
        sent::<Answer>(&kit)
    );
    assert_eq!(
        main_slot(&held(&mut inv, &ann()).unwrap(), 5),
        Some(ItemStack::new("wood", 1))
    );
}

#[test]
fn queued_actions_are_stored_and_answered_before_a_reload() {
    let (kit, _shared, mut inv) = started();
    give(&mut inv, "ann", "wood", 1);
    inv.packet(
        1,
        &Act {
            seq: 1,
            action: moving(slot(&ann(), "main", 0), slot(&ann(), "main", 1), 1),
        },
    )
    .unwrap();
    let mut again = inv.reload::<Inventories>().unwrap();
    assert!(
        sent::<Answer>(&kit)
            .iter()
            .any(|(peer, a)| *peer == 1 && a.seq == 1 && a.ok)
    );
    assert_eq!(
        main_slot(&held(&mut again, &ann()).unwrap(), 1),
        Some(ItemStack::new("wood", 1))
    );
    // The peers came over: ann still acts.
    assert!(
        act(
            &mut again,
            1,
            2,
            moving(slot(&ann(), "main", 1), slot(&ann(), "main", 2), 1)
        )
        .ok
    );
}

#[test]
fn get_slots_answers_many_slots_in_one_call() {
    let (_kit, _shared, mut inv) = started();
    give(&mut inv, "ann", "wood", 2);
    let stacks = inv
        .call(&GetSlots {
            slots: vec![
                slot(&ann(), "main", 0),
                slot(&ann(), "main", 1),
                slot(&ann(), "nothing", 0),
                slot(&ann(), "main", 999),
                slot(&Owner::Player("nobody".into()), "main", 0),
            ],
        })
        .unwrap();
    assert_eq!(
        stacks,
        vec![Some(ItemStack::new("wood", 2)), None, None, None, None]
    );
}

#[test]
fn a_batch_larger_than_one_write_is_stored_in_several_each_whole() {
    let (kit, shared, mut inv) = started();
    let give_one = || Transaction {
        changes: vec![Change::Give {
            owner: ann(),
            list: "main".into(),
            stack: ItemStack::new("stick", 1),
            overflow: Overflow::Refuse,
        }],
        edit: None,
        by: None,
    };
    kit.clear();
    let n = buildat_inventory_api::MAX_TRANSACTIONS_PER_WRITE + 5;
    let outcomes = inv
        .call(&TransactMany {
            txs: (0..n).map(|_| give_one()).collect(),
        })
        .unwrap();
    assert!(outcomes.iter().all(|o| *o == TxOutcome::Done));
    assert_eq!(kit.calls::<PutValues>().len(), 2);
    assert_eq!(inv.call(&Census {}).unwrap()["stick"], n as u64);
    let _ = shared;
}

#[test]
fn a_crafting_table_within_reach_crafts_into_the_players_inventory() {
    let (_kit, _shared, mut inv) = started();
    let table = Owner::Voxel([1, 0, 1]);
    let far = Owner::Voxel([30, 0, 0]);
    for owner in [&table, &far] {
        inv.call(&CreateInventory {
            owner: owner.clone(),
            lists: vec![("craft".into(), 9)],
        })
        .unwrap();
    }
    give(&mut inv, "ann", "wood", 1);
    assert!(act(&mut inv, 1, 1, Action::Open { voxel: [1, 0, 1] }).ok);
    assert!(
        act(
            &mut inv,
            1,
            2,
            moving(slot(&ann(), "main", 0), slot(&table, "craft", 4), 1)
        )
        .ok
    );
    let craft = |grid: &Owner| Action::Craft {
        grid: grid.clone(),
        to: slot(&ann(), "main", 7),
    };
    assert!(!act(&mut inv, 1, 3, craft(&far)).ok, "out of reach");
    assert!(act(&mut inv, 1, 4, craft(&table)).ok);
    assert_eq!(
        main_slot(&held(&mut inv, &ann()).unwrap(), 7),
        Some(ItemStack::new("planks", 4))
    );
    assert!(
        held(&mut inv, &table).unwrap().lists["craft"]
            .iter()
            .all(Option::is_none)
    );
}

/// The slots' changes the module emits for the rollback log, as
/// `(by, inventory, slot, item, count)`.
fn logged(kit: &TestHost) -> Vec<(String, String, u16, String, i32)> {
    kit.emitted::<buildat_voxelworld_api::LogItems>()
        .into_iter()
        .flat_map(|l| l.changes)
        .map(|c| (c.by, c.inventory, c.slot, c.item, c.count))
        .collect()
}

/// Every stored transaction is told to the rollback log, slot by slot,
/// with who made it: a give (by the operator), a move, a craft; a
/// transaction that is not stored tells nothing.
#[test]
fn stored_transactions_are_told_to_the_rollback_log_slot_by_slot() {
    let (kit, shared, mut inv) = started();
    kit.clear();
    give(&mut inv, "ann", "wood", 2);
    let entry = |by: &str, inv: &str, slot, item: &str, count| {
        (
            by.to_string(),
            inv.to_string(),
            slot,
            item.to_string(),
            count,
        )
    };
    assert_eq!(
        logged(&kit),
        vec![entry("console", "player:ann main", 0, "wood", 2)]
    );
    kit.clear();
    assert!(
        act(
            &mut inv,
            1,
            1,
            moving(slot(&ann(), "main", 0), slot(&ann(), "craft", 0), 1)
        )
        .ok
    );
    assert_eq!(
        logged(&kit),
        vec![
            entry("ann", "player:ann craft", 0, "wood", 1),
            entry("ann", "player:ann main", 0, "wood", -1),
        ]
    );
    kit.clear();
    assert!(
        act(
            &mut inv,
            1,
            2,
            Action::Craft {
                grid: ann(),
                to: slot(&ann(), "main", 5),
            }
        )
        .ok
    );
    assert_eq!(
        logged(&kit),
        vec![
            entry("ann", "player:ann craft", 0, "wood", -1),
            entry("ann", "player:ann main", 5, "planks", 4),
        ]
    );
    // Not stored: nothing logged.
    kit.clear();
    world(&shared).fail_writes = true;
    assert!(
        !act(
            &mut inv,
            1,
            3,
            moving(slot(&ann(), "main", 0), slot(&ann(), "main", 1), 1)
        )
        .ok
    );
    assert!(logged(&kit).is_empty());
}
