//! The module on the test kit: a fake main (players and their positions,
//! teleport, privileges), a fake world (a floor of stone at y < 0, water
//! where told, values), a fake inventory (one player's lists, the
//! transaction it was sent); then falls through ticks, death dropping the
//! inventory and respawning at the spawn or the bed, storage across a
//! rejoin, the calls and commands.
//!
//! Owns: these tests and their fakes. Does not own: the rules alone
//! (`rules.rs` tests them), the real server (server/tests/it/health.rs).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use buildat_health_api::{
    Cause, Damage, Damaged, Died, GetHealth, Heal, Health, HealthState, Hurt, MAX_BREATH, MAX_HP,
    RespawnRequest, Respawned, SetRespawn, YouDied,
};
use buildat_interface::ModuleError;
use buildat_interface::core_api::RunCommand;
use buildat_interface::events::Tick;
use buildat_interface::testing::{TestHost, TestModule};
use buildat_inventory_api::{Change, GetInventory, Inventory, ItemStack, Transact, TxOutcome};
use buildat_main_api::{GetPlayers, PlayerJoined, PlayerLeft, PlayerState, Teleport, VAR_PLAYER};
use buildat_network_api::Disconnect;
use buildat_network_api::receive::testing::{DeliverPackets, disconnected, sent};
use buildat_voxel::{VoxelName, VoxelRegistry};
use buildat_voxelworld_api::{
    DynamicNode, GetRegistry, GetSpawn, GetValue, GetVoxels, ListNodes, MemoryValues, NodesChanged,
    PutValues,
};

use crate::HealthModule;

#[derive(Default)]
struct World {
    /// Players in the game: name → (peer, feet).
    players: BTreeMap<String, (u64, [f64; 3])>,
    values: MemoryValues,
    /// Voxels of water (everything else: stone below y 0, air above).
    water: BTreeSet<[i32; 3]>,
    inventory: Option<Inventory>,
}

type Shared = Arc<Mutex<World>>;

fn world(shared: &Shared) -> std::sync::MutexGuard<'_, World> {
    shared.lock().unwrap_or_else(|p| p.into_inner())
}

fn registry() -> VoxelRegistry {
    let mut registry = VoxelRegistry::default();
    for (name, solid) in [("stone", true), ("water", false)] {
        registry
            .add(
                VoxelName::simple(name),
                [""; 6].map(String::from),
                "",
                solid,
            )
            .unwrap();
    }
    registry
}

const SPAWN: [f64; 3] = [0.5, 0.0, 0.5];

fn kit() -> (TestHost, Shared) {
    let kit = TestHost::new();
    let shared: Shared = Arc::default();
    let ids = registry();
    let (stone, water) = (ids.get_id("stone").unwrap(), ids.get_id("water").unwrap());
    kit.answer(move |_: GetRegistry| Ok(registry()));
    let w = shared.clone();
    kit.answer(move |get: GetVoxels| {
        let world = world(&w);
        Ok(get
            .positions
            .iter()
            .map(|p| {
                Some(if world.water.contains(p) {
                    water
                } else if p[1] < 0 {
                    stone
                } else {
                    0
                })
            })
            .collect())
    });
    let w = shared.clone();
    kit.answer(|_: ListNodes| Ok(Vec::new()));
    kit.answer(move |_: GetPlayers| {
        Ok(world(&w)
            .players
            .iter()
            .map(|(name, (peer, position))| PlayerState {
                name: name.clone(),
                peer: *peer,
                position: *position,
                wield: 0,
            })
            .collect())
    });
    let w = shared.clone();
    kit.answer(move |tp: Teleport| {
        let mut world = world(&w);
        let player = world
            .players
            .get_mut(&tp.player)
            .ok_or_else(|| ModuleError::msg("not in the game"))?;
        player.1 = tp.position;
        Ok(())
    });
    kit.answer(|_: GetSpawn| Ok(Some(SPAWN)));
    let w = shared.clone();
    kit.answer(move |get: GetValue| Ok(world(&w).values.answer_get(&get)));
    let w = shared.clone();
    kit.answer(move |put: PutValues| Ok(world(&w).values.answer_put(&put.writes)));
    let w = shared.clone();
    kit.answer(move |_: GetInventory| Ok(world(&w).inventory.clone()));
    kit.answer(|_: Transact| Ok(TxOutcome::Done));
    kit.answer(|_: Disconnect| Ok(()));
    (kit, shared)
}

fn join(health: &mut TestModule<HealthModule>, shared: &Shared, name: &str, peer: u64) {
    world(shared).players.insert(name.into(), (peer, SPAWN));
    health
        .emit(&PlayerJoined {
            name: name.into(),
            peer,
        })
        .unwrap();
}

fn move_to(shared: &Shared, name: &str, position: [f64; 3]) {
    if let Some(player) = world(shared).players.get_mut(name) {
        player.1 = position;
    }
}

/// A tick of the game: main moves every player's node where the fake world
/// has it (`voxelworld:nodes_changed`, node id = peer), then `core:tick`.
fn tick(health: &mut TestModule<HealthModule>, shared: &Shared) {
    let changed: Vec<DynamicNode> = world(shared)
        .players
        .iter()
        .map(|(name, (peer, position))| {
            let mut node = DynamicNode::at_rest(*peer, *position, false, BTreeMap::new());
            node.vars
                .insert(VAR_PLAYER.to_string(), name.as_bytes().to_vec());
            node
        })
        .collect();
    health
        .emit(&NodesChanged {
            changed,
            ..NodesChanged::default()
        })
        .unwrap();
    health.emit(&Tick { dtime: 0.05 }).unwrap();
}

fn started() -> (TestHost, Shared, TestModule<HealthModule>) {
    let (kit, shared) = kit();
    let mut health = kit.load::<HealthModule>().unwrap();
    join(&mut health, &shared, "ann", 1);
    tick(&mut health, &shared);
    (kit, shared, health)
}

fn hp(health: &mut TestModule<HealthModule>, name: &str) -> Option<Health> {
    health
        .call(&GetHealth {
            player: name.into(),
        })
        .unwrap()
}

fn command(
    health: &mut TestModule<HealthModule>,
    name: &str,
    args: &[&str],
    by: Option<&str>,
) -> Result<String, ModuleError> {
    health.call(&RunCommand {
        name: name.into(),
        args: args.iter().map(|a| a.to_string()).collect(),
        by: by.map(str::to_string),
    })
}

#[test]
fn a_join_sends_full_health_and_a_fall_through_ticks_hurts() {
    let (kit, shared, mut health) = started();
    let states = sent::<HealthState>(&kit);
    assert_eq!(
        states.first(),
        Some(&(
            1,
            HealthState {
                hp: MAX_HP,
                max_hp: MAX_HP,
                breath: MAX_BREATH,
                max_breath: MAX_BREATH
            }
        ))
    );
    // Up a pillar by teleport (no fall), then down 9 voxels step by step.
    move_to(&shared, "ann", [0.5, 9.0, 0.5]);
    tick(&mut health, &shared);
    for y in (0..9).rev() {
        move_to(&shared, "ann", [0.5, f64::from(y) + 0.3, 0.5]);
        tick(&mut health, &shared);
    }
    assert!(kit.emitted::<Damaged>().is_empty(), "not landed yet");
    move_to(&shared, "ann", [0.5, 0.0, 0.5]);
    tick(&mut health, &shared);
    let damaged = kit.emitted::<Damaged>();
    assert_eq!(
        damaged,
        vec![Damaged {
            player: "ann".into(),
            amount: 6,
            cause: Cause::Fall,
            hp: 14
        }]
    );
    assert_eq!(
        sent::<Hurt>(&kit),
        vec![(
            1,
            Hurt {
                amount: 6,
                cause: "fall".into()
            }
        )]
    );
    assert_eq!(sent::<HealthState>(&kit).last().unwrap().1.hp, 14);
}

#[test]
fn drowning_under_water_takes_breath_then_hp() {
    let (kit, shared, mut health) = started();
    world(&shared).water.extend([[0, 0, 0], [0, 1, 0]]);
    for _ in 0..20 * 12 {
        tick(&mut health, &shared);
    }
    let now = hp(&mut health, "ann").unwrap();
    assert_eq!(now.breath, 0);
    assert!((17..=19).contains(&now.hp), "{now:?}");
    assert!(
        kit.emitted::<Damaged>()
            .iter()
            .all(|d| d.cause == Cause::Drown)
    );
}

#[test]
fn death_drops_the_inventory_and_a_respawn_asked_for_puts_it_at_the_spawn() {
    let (kit, shared, mut health) = started();
    world(&shared).inventory = Some(Inventory {
        lists: BTreeMap::from([(
            "main".to_string(),
            vec![
                Some(ItemStack::new("dirt", 5)),
                None,
                Some(ItemStack::new("pick", 1)),
            ],
        )]),
    });
    let place = [4.5, 2.0, -3.5];
    move_to(&shared, "ann", place);
    tick(&mut health, &shared);
    // A module's damage past the hp left kills.
    let after = health
        .call(&Damage {
            player: "ann".into(),
            amount: 50,
            cause: Cause::Module("creatures:bite".into()),
        })
        .unwrap();
    assert_eq!(after, Some(0));
    let died = kit.emitted::<Died>();
    assert_eq!(died.len(), 1);
    assert_eq!(died[0].position, place);
    assert_eq!(died[0].cause, Cause::Module("creatures:bite".into()));
    assert_eq!(
        sent::<YouDied>(&kit),
        vec![(
            1,
            YouDied {
                cause: "creatures:bite".into()
            }
        )]
    );
    // One transaction took every slot and dropped each stack there.
    let txs = kit.calls::<Transact>();
    assert_eq!(txs.len(), 1);
    let changes = &txs[0].tx.changes;
    assert_eq!(changes.len(), 4);
    let drops: Vec<(&str, [f64; 3])> = changes
        .iter()
        .filter_map(|c| match c {
            Change::Drop { stack, at } => Some((stack.name.as_str(), *at)),
            _ => None,
        })
        .collect();
    assert_eq!(
        drops,
        vec![("dirt", [4.5, 2.5, -3.5]), ("pick", [4.5, 2.5, -3.5])]
    );
    // Dead: not hurt again, not healed, not moved by the rules.
    assert_eq!(
        health
            .call(&Damage {
                player: "ann".into(),
                amount: 1,
                cause: Cause::Fall
            })
            .unwrap(),
        None
    );
    assert_eq!(
        health
            .call(&Heal {
                player: "ann".into(),
                amount: 1
            })
            .unwrap(),
        None
    );
    assert!(command(&mut health, "heal", &["ann"], None).is_err());
    assert_eq!(
        hp(&mut health, "ann"),
        Some(Health {
            hp: 0,
            breath: MAX_BREATH,
            dead: true
        })
    );
    // The respawn: full health at the spawn.
    health.packet(1, &RespawnRequest {}).unwrap();
    assert_eq!(
        kit.calls::<Teleport>(),
        vec![Teleport {
            player: "ann".into(),
            position: SPAWN
        }]
    );
    assert_eq!(
        kit.emitted::<Respawned>(),
        vec![Respawned {
            player: "ann".into(),
            position: SPAWN
        }]
    );
    assert_eq!(
        hp(&mut health, "ann"),
        Some(Health {
            hp: MAX_HP,
            breath: MAX_BREATH,
            dead: false
        })
    );
    // Asked again alive: nothing.
    health.packet(1, &RespawnRequest {}).unwrap();
    assert_eq!(kit.calls::<Teleport>().len(), 1);
    // The teleport was no fall.
    tick(&mut health, &shared);
    assert_eq!(kit.emitted::<Damaged>().len(), 1);
}

#[test]
fn a_bed_is_where_the_dead_come_back_and_the_void_kills() {
    let (kit, shared, mut health) = started();
    let bed = [10.5, 1.0, 10.5];
    health
        .call(&SetRespawn {
            player: "ann".into(),
            position: Some(bed),
        })
        .unwrap();
    assert!(
        health
            .call(&SetRespawn {
                player: "ann".into(),
                position: Some([f64::NAN, 0.0, 0.0]),
            })
            .is_err()
    );
    move_to(&shared, "ann", [0.5, -200.0, 0.5]);
    tick(&mut health, &shared);
    assert_eq!(kit.emitted::<Died>()[0].cause, Cause::Void);
    assert!(
        command(&mut health, "health", &["ann"], None)
            .unwrap()
            .contains("dead")
    );
    health.packet(1, &RespawnRequest {}).unwrap();
    assert_eq!(kit.calls::<Teleport>()[0].position, bed);
    health
        .call(&SetRespawn {
            player: "ann".into(),
            position: None,
        })
        .unwrap();
    command(&mut health, "kill", &[], Some("ann")).unwrap();
    health.packet(1, &RespawnRequest {}).unwrap();
    assert_eq!(kit.calls::<Teleport>()[1].position, SPAWN);
}

#[test]
fn health_is_stored_and_read_back_on_the_next_join() {
    let (kit, shared, mut health) = started();
    health
        .call(&Damage {
            player: "ann".into(),
            amount: 7,
            cause: Cause::Command,
        })
        .unwrap();
    health
        .emit(&PlayerLeft {
            name: "ann".into(),
            peer: 1,
        })
        .unwrap();
    world(&shared).players.clear();
    assert_eq!(hp(&mut health, "ann"), None, "not in the game");
    assert!(
        command(&mut health, "health", &["ann"], None)
            .unwrap()
            .contains("hp 13/20")
    );
    // A new instance of the module (a restart) reads it back.
    drop(health);
    let mut health = kit.load::<HealthModule>().unwrap();
    kit.clear();
    join(&mut health, &shared, "ann", 2);
    assert_eq!(hp(&mut health, "ann").unwrap().hp, 13);
    assert_eq!(
        sent::<HealthState>(&kit)[0],
        (
            2,
            HealthState {
                hp: 13,
                max_hp: MAX_HP,
                breath: MAX_BREATH,
                max_breath: MAX_BREATH
            }
        )
    );
    // A player that left dead comes back dead and is told so.
    command(&mut health, "kill", &["ann"], None).unwrap();
    health
        .emit(&PlayerLeft {
            name: "ann".into(),
            peer: 2,
        })
        .unwrap();
    kit.clear();
    join(&mut health, &shared, "ann", 3);
    assert!(hp(&mut health, "ann").unwrap().dead);
    assert_eq!(sent::<YouDied>(&kit).len(), 1);
}

#[test]
fn kill_and_heal_commands_check_privileges() {
    let (_kit, shared, mut health) = started();
    join(&mut health, &shared, "bob", 2);
    // In chat (inside main's call, where asking main would be a cycle) a
    // player kills only itself; the console kills anyone.
    let refused = command(&mut health, "kill", &["ann"], Some("bob")).unwrap_err();
    assert!(refused.to_string().contains("console"), "{refused}");
    assert!(!hp(&mut health, "ann").unwrap().dead);
    command(&mut health, "kill", &["ann"], None).unwrap();
    assert!(hp(&mut health, "ann").unwrap().dead);
    assert!(
        command(&mut health, "kill", &[], None).is_err(),
        "the console names one"
    );
    assert!(command(&mut health, "kill", &["nobody"], None).is_err());
    health
        .call(&Damage {
            player: "bob".into(),
            amount: 15,
            cause: Cause::Lava,
        })
        .unwrap();
    assert_eq!(
        command(&mut health, "heal", &["bob", "3"], None).unwrap(),
        "bob has 8 hp"
    );
    assert_eq!(
        command(&mut health, "heal", &["bob"], None).unwrap(),
        "bob has 20 hp"
    );
}

#[test]
fn a_reload_keeps_health_and_the_players_and_counts_are_told() {
    let (kit, shared, mut health) = started();
    health
        .call(&Damage {
            player: "ann".into(),
            amount: 5,
            cause: Cause::Lava,
        })
        .unwrap();
    assert_eq!(
        command(&mut health, "health", &[], None).unwrap(),
        "health: 1 players in the game, 0 dead; 1 hurts and 0 deaths since loaded"
    );
    let mut health = health.reload::<HealthModule>().unwrap();
    // Adopted from main's players, with the hp stored at the unload.
    assert_eq!(hp(&mut health, "ann").unwrap().hp, 15);
    // And it goes on hurting: a fall of 10 after the reload.
    move_to(&shared, "ann", [0.5, 10.0, 0.5]);
    tick(&mut health, &shared);
    move_to(&shared, "ann", [0.5, 5.0, 0.5]);
    tick(&mut health, &shared);
    move_to(&shared, "ann", [0.5, 0.0, 0.5]);
    tick(&mut health, &shared);
    assert_eq!(hp(&mut health, "ann").unwrap().hp, 8);
    assert_eq!(kit.emitted::<Damaged>().last().unwrap().cause, Cause::Fall);
}

#[test]
fn a_malformed_respawn_drops_its_peer_and_respawns_nobody() {
    let (kit, _shared, mut health) = started();
    command(&mut health, "kill", &["ann"], None).unwrap();
    health.packet_bytes(1, "health:respawn", &[1, 2]).unwrap();
    let dropped = disconnected(&kit);
    assert_eq!(dropped.len(), 1, "{dropped:?}");
    assert_eq!(dropped[0].0, 1);
    assert!(dropped[0].1.contains("health:respawn"), "{dropped:?}");
    assert!(hp(&mut health, "ann").unwrap().dead);
    assert!(kit.calls::<Teleport>().is_empty());
    // A peer that never joined asks: nothing.
    health.packet(9, &RespawnRequest {}).unwrap();
    assert!(kit.calls::<Teleport>().is_empty());
}

#[test]
fn a_second_join_before_the_first_session_left_keeps_the_body() {
    let (kit, shared, mut health) = started();
    health
        .call(&Damage {
            player: "ann".into(),
            amount: 4,
            cause: Cause::Drown,
        })
        .unwrap();
    // Not stored yet (within the second); the new session comes first.
    join(&mut health, &shared, "ann", 7);
    assert_eq!(hp(&mut health, "ann").unwrap().hp, 16);
    // The old session's leave does not take the player away.
    health
        .emit(&PlayerLeft {
            name: "ann".into(),
            peer: 1,
        })
        .unwrap();
    assert_eq!(hp(&mut health, "ann").unwrap().hp, 16);
    assert_eq!(sent::<HealthState>(&kit).last().unwrap().0, 7);
    // Its respawn request comes from the new peer only.
    command(&mut health, "kill", &["ann"], None).unwrap();
    health.packet(1, &RespawnRequest {}).unwrap();
    assert!(hp(&mut health, "ann").unwrap().dead);
    health.packet(7, &RespawnRequest {}).unwrap();
    assert!(!hp(&mut health, "ann").unwrap().dead);
}

#[test]
fn settings_turn_the_world_harmless_and_bad_ones_refuse_the_load() {
    let (kit, shared) = kit();
    let kit = kit.config("health.enabled", "false");
    let mut health = kit.load::<HealthModule>().unwrap();
    join(&mut health, &shared, "ann", 1);
    for position in [[0.5, 30.0, 0.5], [0.5, 0.0, 0.5], [0.5, -300.0, 0.5]] {
        move_to(&shared, "ann", position);
        tick(&mut health, &shared);
    }
    assert!(kit.emitted::<Damaged>().is_empty());
    // The calls still work.
    assert_eq!(
        health
            .call(&Damage {
                player: "ann".into(),
                amount: 3,
                cause: Cause::Command,
            })
            .unwrap(),
        Some(17)
    );
    for (key, value) in [
        ("health.fall_safe", "-1"),
        ("health.breath_seconds", "0"),
        ("health.regen_seconds", "NaN"),
    ] {
        let (kit, _) = super::tests::kit();
        let refused = kit.config(key, value).load::<HealthModule>();
        assert!(refused.is_err(), "{key}={value}");
    }
}

/// The bodies' positions come from the players' nodes: a tick asks main
/// nothing (a chat command of this module runs inside a call from main, so
/// a call to main from here at that moment would be a cycle).
#[test]
fn ticks_follow_the_players_nodes_and_ask_main_nothing() {
    let (kit, shared, mut health) = started();
    let asked = kit.calls::<GetPlayers>().len();
    move_to(&shared, "ann", [0.5, 9.0, 0.5]);
    tick(&mut health, &shared);
    for y in (0..9).rev() {
        move_to(&shared, "ann", [0.5, f64::from(y), 0.5]);
        tick(&mut health, &shared);
    }
    assert_eq!(kit.calls::<GetPlayers>().len(), asked, "no call to main");
    assert!(
        hp(&mut health, "ann").unwrap().hp < MAX_HP,
        "the fall seen through the node hurts"
    );
}
