//! The game's glue on the test kit: a flat fake world answering its calls,
//! players joining, digging, placing, punching and using blocks (told to
//! their handler module) and sending what does not decode, a
//! reload in the middle, and the commands (their usage and help from their
//! clap definitions), with no server.
//!
//! Owns: these tests and their fake world. Does not own: the rules judged
//! (`rules.rs` has their own unit tests), the real world (server e2e).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use buildat_interface::core_api::ListCommands;
use buildat_interface::events::Tick;
use buildat_interface::testing::{TestHost, TestModule};
use buildat_inventory_api::{
    Change, GetInventory, GetSlots, Inventory, Overflow, Owner, SlotRef, TransactMany, TxOutcome,
};
use buildat_items_api::{DropRule, GetItems, GroupCap, ItemDef, ItemRegistry, ItemStack, ToolCaps};
use buildat_main_api::{
    BlockAction, BlockActionKind, BlockActions, Chat, ChatLine, Correct, Dig, DigStart, DigTime,
    Edits, GetPlayers, Join, NodeAction, NodeActions, Place, PlayerJoined, PlayerLeft, Punch,
    PunchNode, Refused, Spawn, Teleport, Use, UseNode, VoxelActions, Wield, block_action_event,
};
use buildat_network_api::receive::testing::{DeliverPackets, disconnected, sent};
use buildat_network_api::{ClientConnected, Disconnect};
use buildat_voxel::geometry::Pos;
use buildat_voxel::{AIR, VoxelName, VoxelRegistry};
use buildat_voxelworld_api::{
    Border, CreateNodes, DropOldTables, DynamicNode, EditOutcome, EditVoxels, GetBorder, GetNode,
    GetRegistry, GetSizes, GetSpawn, GetValue, GetVoxel, GetVoxels, ListValues, MemoryValues,
    MoveNodes, PutValues, ReadOldTable, RegisterBlock, RemoveNode, Replace, Sizes,
};

use buildat_format::Packet;
use buildat_interface::Event;

use crate::{Game, GetTickStats, TickStep};

/// A flat world: stone below y = 0, air from there up, every section
/// generated; the values of accounts kept in memory.
#[derive(Default)]
struct FakeWorld {
    edited: HashMap<Pos, u32>,
    values: MemoryValues,
    next_node: u64,
    /// Each player's `main` list, as the `inventory` module would keep it.
    inventories: BTreeMap<String, Vec<Option<ItemStack>>>,
    /// Where each node is.
    nodes: BTreeMap<u64, [f64; 3]>,
    /// What `get_border` answers.
    border: Option<Border>,
}

/// The fake game's items: stone (cracky, drops cobble) and dirt
/// (crumbly) as blocks, a fast pickaxe.
fn items() -> ItemRegistry {
    let pick = ItemDef::tool(
        "pick",
        "Pick",
        "pick.png",
        ToolCaps::default().with("cracky", GroupCap::new(&[-1.0, -1.0, 0.2], 10, 0)),
    );
    // A tool that never wears.
    let wand = ItemDef::tool(
        "wand",
        "Wand",
        "wand.png",
        ToolCaps::default().with("cracky", GroupCap::new(&[-1.0, -1.0, 0.2], 0, 0)),
    );
    let defs = [
        wand,
        ItemDef::block("stone")
            .with_groups(&[("cracky", 3)])
            .with_drops(vec![DropRule::always("cobble", 1)]),
        ItemDef::block("dirt").with_groups(&[("crumbly", 3)]),
        ItemDef::block("torch"),
        ItemDef::craft("cobble", "Cobble", "cobble.png"),
        pick,
    ];
    ItemRegistry {
        version: 1,
        items: defs.into_iter().map(|d| (d.name.clone(), d)).collect(),
    }
}

/// Applies one change to the fake inventories; why not.
fn apply_change(
    inventories: &mut BTreeMap<String, Vec<Option<ItemStack>>>,
    change: &Change,
) -> Result<(), String> {
    let list = |inventories: &mut BTreeMap<String, Vec<Option<ItemStack>>>, owner: &Owner| {
        let Owner::Player(name) = owner else {
            return Err("only players here".to_string());
        };
        Ok(inventories
            .entry(name.clone())
            .or_insert_with(|| vec![None; 32])
            .clone())
    };
    let owner = match change {
        Change::Take { slot, .. } | Change::Wear { slot, .. } | Change::Put { slot, .. } => {
            slot.owner.clone()
        }
        Change::Give { owner, .. } => owner.clone(),
        Change::Drop { .. } => return Err("not faked".into()),
    };
    let mut slots = list(inventories, &owner)?;
    match change {
        Change::Take { slot, name, count } => {
            let held = slots
                .get_mut(usize::from(slot.index))
                .ok_or("no such slot")?;
            match held {
                Some(stack) if stack.name == *name && stack.count >= *count => {
                    stack.count -= count;
                    if stack.count == 0 {
                        *held = None;
                    }
                }
                _ => return Err(format!("no {count} {name} in slot {}", slot.index)),
            }
        }
        Change::Give { stack, .. } => {
            if let Some(same) = slots.iter_mut().flatten().find(|s| s.stacks_with(stack)) {
                same.count += stack.count;
            } else if let Some(empty) = slots.iter_mut().find(|s| s.is_none()) {
                *empty = Some(stack.clone());
            } else {
                return Err("full".into());
            }
        }
        Change::Wear { slot, name, amount } => match slots.get_mut(usize::from(slot.index)) {
            Some(Some(tool)) if tool.name == *name => tool.wear += amount,
            _ => return Err(format!("no {name} in slot {}", slot.index)),
        },
        Change::Put { .. } | Change::Drop { .. } => return Err("not faked".into()),
    }
    let Owner::Player(name) = owner else {
        unreachable!("checked above");
    };
    inventories.insert(name, slots);
    Ok(())
}

fn registry() -> VoxelRegistry {
    let mut registry = VoxelRegistry::default();
    // A lever is handled by the module `levers`.
    for (name, handler, solid) in [
        ("stone", "", true),
        ("torch", "", false),
        ("lever", "levers", true),
        ("dirt", "", true),
    ] {
        registry
            .add(
                VoxelName::simple(name),
                [""; 6].map(String::from),
                handler,
                solid,
            )
            .expect("a fresh registry takes four voxels");
    }
    registry
}

impl FakeWorld {
    fn voxel(&self, pos: Pos) -> u32 {
        let stone = registry().get_id("stone").expect("registered");
        *self
            .edited
            .get(&pos)
            .unwrap_or(if pos[1] < 0 { &stone } else { &AIR })
    }
}

/// A kit whose world is a [`FakeWorld`], with the game loaded on it,
/// everyone creative (`main.creative`: endless blocks, instant digs).
fn game() -> (TestHost, Arc<Mutex<FakeWorld>>, TestModule<Game>) {
    game_with(&[("main.creative", "true")])
}

/// A kit whose world is a [`FakeWorld`] with the settings `config`, the
/// game loaded on it.
fn game_with(config: &[(&str, &str)]) -> (TestHost, Arc<Mutex<FakeWorld>>, TestModule<Game>) {
    game_on(config, FakeWorld::default())
}

/// A kit whose world is `world` with the settings `config`, the game
/// loaded on it.
fn game_on(
    config: &[(&str, &str)],
    world: FakeWorld,
) -> (TestHost, Arc<Mutex<FakeWorld>>, TestModule<Game>) {
    let world_dir = tempfile::tempdir().expect("a temp dir");
    let mut kit = TestHost::new()
        .name("main")
        .world_path(world_dir.path())
        .config("main.guests", "true");
    for (key, value) in config {
        kit = kit.config(key, value);
    }
    // The directory stays for the test process (the game may write there).
    std::mem::forget(world_dir);
    let world = Arc::new(Mutex::new(world));
    answer_world(&kit, &world);
    let game = kit.load::<Game>().expect("the game loads on the kit");
    (kit, world, game)
}

fn answer_world(kit: &TestHost, world: &Arc<Mutex<FakeWorld>>) {
    let at = |world: &Arc<Mutex<FakeWorld>>| Arc::clone(world);
    kit.answer(|_: GetSizes| {
        Ok(Sizes {
            chunk_size: 16,
            section_size: [2, 2, 2],
        })
    })
    .answer(|_: GetRegistry| Ok(registry()))
    .answer(|_: RegisterBlock| Ok(Vec::new()))
    .answer(|_: ListCommands| Ok(Vec::new()))
    .answer(|_: Disconnect| Ok(()))
    .answer(|_: ReadOldTable| Ok(None))
    .answer(|_: DropOldTables| Ok(()))
    .answer(|_: ListValues| Ok(Vec::new()))
    .answer(|_: GetSpawn| Ok(Some([0.5, 0.0, 0.5])))
    .answer(|_: RemoveNode| Ok(()))
    .answer(|moves: MoveNodes| Ok(moves.moves.iter().map(|m| m.id).collect()));
    let w = at(world);
    kit.answer(move |_: GetBorder| Ok(w.lock().unwrap().border));
    let w = at(world);
    kit.answer(move |get: GetVoxel| Ok(Some(w.lock().unwrap().voxel(get.pos))));
    let w = at(world);
    kit.answer(move |get: GetVoxels| {
        let world = w.lock().unwrap();
        Ok(get
            .positions
            .iter()
            .map(|p| Some(world.voxel(*p)))
            .collect())
    });
    let w = at(world);
    kit.answer(move |edits: EditVoxels| {
        let mut world = w.lock().unwrap();
        Ok(edits
            .edits
            .iter()
            .map(|edit| {
                let previous = world.voxel(edit.pos);
                world.edited.insert(edit.pos, edit.voxel);
                EditOutcome::Edited { previous }
            })
            .collect())
    });
    let w = at(world);
    kit.answer(move |create: CreateNodes| {
        let mut world = w.lock().unwrap();
        Ok(create
            .nodes
            .iter()
            .map(|node| {
                world.next_node += 1;
                let id = world.next_node;
                world.nodes.insert(id, node.position);
                Some(id)
            })
            .collect())
    });
    let w = at(world);
    kit.answer(move |get: GetNode| {
        Ok(w.lock()
            .unwrap()
            .nodes
            .get(&get.id)
            .map(|position| DynamicNode {
                id: get.id,
                position: *position,
                orientation: [0.0, 0.0, 0.0, 1.0],
                velocity: [0.0; 3],
                parent: None,
                save_enabled: false,
                vars: BTreeMap::new(),
            }))
    });
    kit.answer(|_: GetItems| Ok(items()));
    let w = at(world);
    kit.answer(move |get: GetInventory| {
        let Owner::Player(name) = get.owner else {
            return Ok(None);
        };
        Ok(w.lock()
            .unwrap()
            .inventories
            .get(&name)
            .map(|slots| Inventory {
                lists: BTreeMap::from([("main".to_string(), slots.clone())]),
            }))
    });
    let w = at(world);
    kit.answer(move |get: GetSlots| {
        let world = w.lock().unwrap();
        Ok(get
            .slots
            .iter()
            .map(|slot| {
                let Owner::Player(name) = &slot.owner else {
                    return None;
                };
                world
                    .inventories
                    .get(name)?
                    .get(usize::from(slot.index))
                    .cloned()
                    .flatten()
            })
            .collect())
    });
    let w = at(world);
    kit.answer(move |many: TransactMany| {
        let mut world = w.lock().unwrap();
        Ok(many
            .txs
            .iter()
            .map(|tx| {
                let mut inventories = world.inventories.clone();
                if let Some(edit) = &tx.edit {
                    let there = world.voxel(edit.pos);
                    let fits = match edit.replace {
                        Replace::Exactly(id) => there == id,
                        Replace::OnlyAir => there == AIR,
                        Replace::NotAir => there != AIR,
                        Replace::Any => true,
                    };
                    if !fits {
                        return TxOutcome::Refused("the voxel changed".into());
                    }
                }
                for change in &tx.changes {
                    if let Err(why) = apply_change(&mut inventories, change) {
                        return TxOutcome::Refused(why);
                    }
                }
                world.inventories = inventories;
                if let Some(edit) = &tx.edit {
                    world.edited.insert(edit.pos, edit.voxel);
                }
                TxOutcome::Done
            })
            .collect())
    });
    let w = at(world);
    kit.answer(move |get: GetValue| Ok(w.lock().unwrap().values.answer_get(&get)));
    let w = at(world);
    kit.answer(move |put: PutValues| Ok(w.lock().unwrap().values.answer_put(&put.writes)));
}

/// A loopback guest `name` as peer `peer`, joined and spawned.
fn join(kit: &TestHost, game: &mut TestModule<Game>, peer: u64, name: &str) -> [f64; 3] {
    game.emit(&ClientConnected {
        peer,
        address: format!("127.0.0.1:{}", 40000 + peer),
    })
    .expect("connected");
    game.packet(peer, &Join { name: name.into() })
        .expect("join");
    game.emit(&Tick { dtime: 0.05 }).expect("a tick");
    let spawns: Vec<_> = sent::<Spawn>(kit)
        .into_iter()
        .filter(|(to, _)| *to == peer)
        .collect();
    assert_eq!(spawns.len(), 1, "{name} is spawned once: {spawns:?}");
    spawns[0].1.position
}

#[test]
fn a_guest_joins_on_the_ground_and_digs_within_reach() {
    let (kit, world, mut game) = game();
    assert!(kit.subscriptions().contains(&TickStep::NAME.to_string()));
    let position = join(&kit, &mut game, 1, "ann");
    assert_eq!(position, [0.5, 0.0, 0.5], "at the world's spawn");

    game.packet(1, &Dig { voxel: [0, -1, 0] }).expect("dig");
    game.emit(&Tick { dtime: 0.05 }).expect("a tick");
    assert_eq!(world.lock().unwrap().voxel([0, -1, 0]), AIR, "dug");
    let edits = kit.calls::<EditVoxels>();
    assert_eq!(edits.len(), 1);
    assert_eq!(edits[0].edits[0].by.as_deref(), Some("ann"), "made for ann");
    assert!(!sent::<Edits>(&kit).is_empty(), "the dig is news");

    // Far out of reach: refused, the world unchanged.
    game.packet(1, &Dig { voxel: [40, -1, 0] }).expect("dig");
    game.emit(&Tick { dtime: 0.05 }).expect("a tick");
    assert_ne!(world.lock().unwrap().voxel([40, -1, 0]), AIR);
    assert!(
        sent::<Refused>(&kit).iter().any(|(to, _)| *to == 1),
        "told why"
    );
}

#[test]
fn a_malformed_packet_drops_only_its_sender() {
    let (kit, _world, mut game) = game();
    join(&kit, &mut game, 1, "ann");
    join(&kit, &mut game, 2, "bob");
    game.packet_bytes(2, Place::NAME, &[0xff, 0xff])
        .expect("handled");
    let dropped = disconnected(&kit);
    assert_eq!(dropped.len(), 1, "{dropped:?}");
    assert_eq!(dropped[0].0, 2);
    assert!(dropped[0].1.starts_with("malformed main:place packet"));
    assert_eq!(
        game.module().players.len(),
        2,
        "until the network says it left"
    );
    game.packet(1, &Dig { voxel: [0, -1, 0] })
        .expect("ann still plays");
}

#[test]
fn players_stay_across_a_reload() {
    let (kit, _world, mut game) = game();
    join(&kit, &mut game, 1, "ann");
    game.packet(1, &Dig { voxel: [0, -1, 0] }).expect("dig");
    let game = game.reload::<Game>().expect("reloaded");
    assert_eq!(game.module().players.len(), 1);
    assert_eq!(
        game.module().pending_actions.len(),
        1,
        "the dig waits for the next tick"
    );
    let mut game = game;
    game.emit(&Tick { dtime: 0.05 }).expect("a tick");
    assert_eq!(
        kit.calls::<EditVoxels>().len(),
        1,
        "judged by the new version"
    );
}

#[test]
fn settings_are_declared_and_a_bad_value_is_named() {
    let (kit, _world, _game) = game();
    let declared = kit.calls::<buildat_interface::core_api::DeclareSettings>();
    let keys: Vec<_> = declared[0]
        .settings
        .iter()
        .map(|s| s.key.as_str())
        .collect();
    assert!(keys.contains(&"main.max_speed"), "{keys:?}");

    let kit = TestHost::new()
        .name("main")
        .config("main.max_speed", "fast");
    let error = kit.load::<Game>().err().expect("refused");
    assert!(error.to_string().contains("main.max_speed"), "{error}");
}

/// What peer `peer` was told in chat, in order.
fn told(kit: &TestHost, peer: u64) -> Vec<String> {
    sent::<ChatLine>(kit)
        .into_iter()
        .filter(|(to, _)| *to == peer)
        .map(|(_, line)| line.text)
        .collect()
}

#[test]
fn commands_register_their_usage_and_help_from_their_definitions() {
    let (kit, _world, mut game) = game();
    let registered = kit.commands();
    let kick = registered
        .iter()
        .find(|c| c.name == "kick")
        .expect("kick is a console command");
    assert_eq!(kick.usage, "<NAME> [REASON]...");
    assert_eq!(kick.help, "disconnect a player, telling it why");
    assert_eq!(kick.privilege.as_deref(), Some("kick"));
    let ban = registered.iter().find(|c| c.name == "ban").expect("ban");
    assert_eq!(ban.usage, "<NAME|IP> [DURATION] [REASON]...");
    let names: Vec<&str> = registered.iter().map(|c| c.name.as_str()).collect();
    assert!(names.contains(&"admin"), "the console's own: {names:?}");
    for chat_only in ["me", "password", "help"] {
        assert!(!names.contains(&chat_only), "{chat_only} in {names:?}");
    }

    // A guest's /help lists what it may run, from the same definitions.
    join(&kit, &mut game, 1, "ann");
    game.packet(
        1,
        &Chat {
            text: "/help".into(),
        },
    )
    .expect("chat");
    let help = told(&kit, 1).pop().expect("answered");
    assert!(
        help.contains("/msg <NAME> <TEXT>... — say TEXT to NAME only"),
        "{help}"
    );
    assert!(
        help.contains("/status — who is playing, for how long the server has run"),
        "{help}"
    );
    assert!(!help.contains("/kick"), "a guest holds no kick: {help}");
}

#[test]
fn words_that_do_not_parse_are_answered_with_clap_s_message_and_usage() {
    let (kit, _world, mut game) = game();
    let answer = game.command("kick", &[], None).expect("answered");
    assert_eq!(
        answer,
        "error: the following required arguments were not provided:\n  <NAME>\n\
         usage: /kick <NAME> [REASON]..."
    );
    let help = game.command("kick", &["--help"], None).expect("answered");
    assert!(
        help.starts_with("disconnect a player, telling it why\nusage: /kick <NAME> [REASON]..."),
        "{help}"
    );
    assert!(!help.contains('\x1b'), "no colour: {help:?}");

    // In chat, to the player who typed it.
    join(&kit, &mut game, 1, "ann");
    game.packet(
        1,
        &Chat {
            text: "/msg bob".into(),
        },
    )
    .expect("chat");
    let answer = told(&kit, 1).pop().expect("answered");
    assert!(answer.contains("<TEXT>..."), "{answer}");
    assert!(
        answer.ends_with("\nusage: /msg <NAME> <TEXT>..."),
        "{answer}"
    );
    assert!(!answer.contains('\x1b'), "no colour: {answer:?}");

    // Words clap lets through that are no place: the same usage.
    let answer = game
        .command("tp", &["ann", "x", "y", "z"], None)
        .expect("answered");
    assert!(
        answer.ends_with("usage: /tp [NAME] <X> <Y> <Z> | [NAME] <TO_NAME>"),
        "{answer}"
    );
}

#[test]
fn grant_from_the_console_reaches_the_account() {
    let (_kit, _world, mut game) = game();
    let ann = crate::names::check_name("Ann").expect("a name");
    let defaults = BTreeSet::from(["shout".to_string()]);
    assert!(
        game.module()
            .accounts
            .create(&ann, "a verifier", &defaults, "127.0.0.1")
            .expect("created")
    );
    let answer = game.command("grant", &["ann", "fly"], None).expect("ran");
    assert_eq!(answer, "granted fly to Ann");
    let privileges = game.module().accounts.privileges("ann").expect("read");
    assert!(privileges.contains("fly"), "{privileges:?}");
    let answer = game.command("revoke", &["ann", "fly"], None).expect("ran");
    assert_eq!(answer, "revoked fly from Ann");
    let answer = game
        .command("grant", &["ann", "flying"], None)
        .expect("ran");
    assert_eq!(answer, "no privilege 'flying'; /privs lists them");
    let answer = game
        .command("grant", &["ann", "fly", "now"], None)
        .expect("ran");
    assert!(answer.contains("'now'"), "{answer}");
    assert!(
        answer.ends_with("usage: /grant <NAME> <PRIVILEGE|all>"),
        "{answer}"
    );
}

#[test]
fn tp_takes_negative_coordinates() {
    let (kit, _world, mut game) = game();
    join(&kit, &mut game, 1, "ann");
    let answer = game
        .command("tp", &["ann", "3.5", "-0.5", "-2"], None)
        .expect("ran");
    assert_eq!(answer, "ann is at [3.5, -0.5, -2.0]");
    assert_eq!(game.module().players[&1].position, [3.5, -0.5, -2.0]);
}

/// Every refusal sent to `peer`.
fn refusals(kit: &TestHost, peer: u64) -> Vec<String> {
    sent::<Refused>(kit)
        .into_iter()
        .filter(|(to, _)| *to == peer)
        .map(|(_, refused)| refused.reason)
        .collect()
}

/// What the game told the module `levers` of punches and uses.
fn told_levers(kit: &TestHost) -> Vec<BlockActions> {
    kit.emitted_named(&block_action_event("levers"))
}

#[test]
fn a_use_and_a_punch_within_reach_are_told_to_the_block_s_handler_with_the_player() {
    let (kit, world, mut game) = game();
    let lever = registry().get_id("lever").expect("registered");
    world.lock().unwrap().edited.insert([2, 0, 0], lever);
    join(&kit, &mut game, 1, "ann");

    game.packet(1, &Use { voxel: [2, 0, 0] }).expect("use");
    game.packet(1, &Punch { voxel: [2, 0, 0] }).expect("punch");
    assert!(told_levers(&kit).is_empty(), "judged at the tick");
    game.emit(&Tick { dtime: 0.05 }).expect("a tick");
    let action = |kind| BlockAction {
        pos: [2, 0, 0],
        voxel: lever,
        player: "ann".into(),
        item: None,
        kind,
    };
    assert_eq!(
        told_levers(&kit),
        [BlockActions {
            actions: vec![action(BlockActionKind::Use), action(BlockActionKind::Punch)]
        }],
        "one event for the module, in the order they came"
    );
    assert_eq!(
        kit.emitted::<VoxelActions>(),
        [VoxelActions {
            actions: vec![action(BlockActionKind::Use), action(BlockActionKind::Punch)]
        }],
        "and to every module, whatever the block"
    );
    assert!(refusals(&kit, 1).is_empty(), "{:?}", refusals(&kit, 1));
    assert!(kit.calls::<EditVoxels>().is_empty(), "nothing edited");
    assert!(sent::<Edits>(&kit).is_empty(), "no news");
}

#[test]
fn a_use_of_a_voxel_without_a_handler_is_told_only_as_a_voxel_action() {
    let (kit, world, mut game) = game();
    let stone = registry().get_id("stone").expect("registered");
    world.lock().unwrap().edited.insert([2, 0, 0], stone);
    join(&kit, &mut game, 1, "ann");
    game.packet(1, &Use { voxel: [2, 0, 0] }).expect("use");
    game.emit(&Tick { dtime: 0.05 }).expect("a tick");
    assert!(told_levers(&kit).is_empty());
    let told = kit.emitted::<VoxelActions>();
    assert_eq!(told.len(), 1, "{told:?}");
    assert_eq!(told[0].actions[0].pos, [2, 0, 0]);
    assert_eq!(told[0].actions[0].kind, BlockActionKind::Use);
}

#[test]
fn the_teleport_call_moves_a_player_as_tp_does_and_names_who_is_missing() {
    let (kit, _world, mut game) = game();
    join(&kit, &mut game, 1, "ann");
    game.call(&Teleport {
        player: "ann".into(),
        position: [3.5, 10.0, -2.0],
    })
    .expect("moved");
    assert_eq!(game.module().players[&1].position, [3.5, 10.0, -2.0]);
    assert!(
        sent::<Correct>(&kit)
            .iter()
            .any(|(to, c)| *to == 1 && c.position == [3.5, 10.0, -2.0]),
        "the client is corrected"
    );
    let missing = game
        .call(&Teleport {
            player: "bob".into(),
            position: [0.0, 0.0, 0.0],
        })
        .unwrap_err();
    assert!(missing.to_string().contains("bob"), "{missing}");
}

#[test]
fn a_use_out_of_reach_or_out_of_sight_is_refused_and_told_to_nobody() {
    let (kit, world, mut game) = game();
    let lever = registry().get_id("lever").expect("registered");
    let stone = registry().get_id("stone").expect("registered");
    {
        let mut world = world.lock().unwrap();
        world.edited.insert([40, 0, 0], lever);
        // A lever behind a wall of stone, within reach.
        world.edited.insert([4, 1, 0], lever);
        for y in 0..4 {
            for z in -3..=3 {
                world.edited.insert([3, y, z], stone);
            }
        }
    }
    join(&kit, &mut game, 1, "ann");
    game.packet(1, &Use { voxel: [40, 0, 0] }).expect("use");
    game.packet(1, &Punch { voxel: [4, 1, 0] }).expect("punch");
    game.emit(&Tick { dtime: 0.05 }).expect("a tick");
    assert_eq!(
        refusals(&kit, 1),
        ["[40, 0, 0] is out of reach", "[4, 1, 0] is out of sight"]
    );
    assert!(told_levers(&kit).is_empty());
}

#[test]
fn a_use_of_a_voxel_without_a_handler_does_nothing() {
    let (kit, _world, mut game) = game();
    join(&kit, &mut game, 1, "ann");
    game.packet(1, &Use { voxel: [0, -1, 0] }).expect("use");
    game.packet(1, &Punch { voxel: [1, -1, 0] }).expect("punch");
    game.emit(&Tick { dtime: 0.05 }).expect("a tick");
    let told: Vec<String> = kit
        .emitted_names()
        .into_iter()
        .filter(|name| name.starts_with(buildat_main_api::BLOCK_ACTION_PREFIX))
        .collect();
    assert!(told.is_empty(), "{told:?}");
    assert!(refusals(&kit, 1).is_empty(), "{:?}", refusals(&kit, 1));
    assert!(kit.calls::<EditVoxels>().is_empty(), "nothing edited");
}

#[test]
fn punches_count_against_the_action_rate() {
    let (kit, world, mut game) = game();
    let lever = registry().get_id("lever").expect("registered");
    world.lock().unwrap().edited.insert([2, 0, 0], lever);
    join(&kit, &mut game, 1, "ann");
    for _ in 0..30 {
        game.packet(1, &Punch { voxel: [2, 0, 0] }).expect("punch");
    }
    game.emit(&Tick { dtime: 0.05 }).expect("a tick");
    let refused = refusals(&kit, 1);
    assert!(!refused.is_empty(), "some refused");
    assert!(
        refused.iter().all(|r| r.contains("actions a second")),
        "{refused:?}"
    );
    let told = told_levers(&kit);
    assert_eq!(told.len(), 1);
    assert_eq!(told[0].actions.len() + refused.len(), 30);
}

#[test]
fn a_stash_of_another_layout_starts_the_game_without_it() {
    let (kit, world, game) = game();
    drop(game);
    kit.clear();
    // What a version with another stash layout left behind.
    kit.host()
        .tmp_store_data(buildat_interface::stash::STASH_NAME, &[1, 0, 0, 0, 9])
        .expect("stored");
    let game = kit.load_continued::<Game>().expect("starts anyway");
    assert!(game.module().players.is_empty());
    assert!(!kit.commands().is_empty(), "its commands registered");
    drop(world);
}

/// A survival game (nobody creative) with `ann` joined as peer 1, holding
/// `slots` in her main list.
fn survival(slots: &[(usize, ItemStack)]) -> (TestHost, Arc<Mutex<FakeWorld>>, TestModule<Game>) {
    let (kit, world, mut game) = game_with(&[]);
    let mut main = vec![None; 32];
    for (index, stack) in slots {
        main[*index] = Some(stack.clone());
    }
    world.lock().unwrap().inventories.insert("ann".into(), main);
    join(&kit, &mut game, 1, "ann");
    (kit, world, game)
}

/// The `main:dig_time` answers sent to peer 1.
fn dig_times(kit: &TestHost) -> Vec<DigTime> {
    sent::<DigTime>(kit)
        .into_iter()
        .filter(|(to, _)| *to == 1)
        .map(|(_, time)| time)
        .collect()
}

/// What ann holds in slot `index`.
fn slot(world: &Arc<Mutex<FakeWorld>>, index: usize) -> Option<ItemStack> {
    world.lock().unwrap().inventories["ann"][index].clone()
}

#[test]
fn a_survival_dig_takes_the_tool_s_time_and_gives_the_drop_and_wears_the_tool() {
    let (kit, world, mut game) = survival(&[(0, ItemStack::new("pick", 1))]);
    let stone = registry().get_id("stone").expect("registered");
    game.packet(1, &DigStart { voxel: [0, -1, 0] })
        .expect("start");
    game.emit(&Tick { dtime: 0.05 }).expect("a tick");
    assert_eq!(
        dig_times(&kit),
        [DigTime {
            voxel: [0, -1, 0],
            seconds: 0.2
        }],
        "the pick's cracky 3 time"
    );
    // At once: too early, nothing dug, the dig ends.
    game.packet(1, &Dig { voxel: [0, -1, 0] }).expect("dig");
    game.emit(&Tick { dtime: 0.05 }).expect("a tick");
    assert_eq!(world.lock().unwrap().voxel([0, -1, 0]), stone);
    let refused = refusals(&kit, 1);
    assert!(refused[0].contains("takes 0.20 s to dig"), "{refused:?}");
    assert!(kit.calls::<TransactMany>().is_empty());

    game.packet(1, &DigStart { voxel: [0, -1, 0] })
        .expect("start");
    game.emit(&Tick { dtime: 0.05 }).expect("a tick");
    std::thread::sleep(std::time::Duration::from_millis(120));
    game.packet(1, &Dig { voxel: [0, -1, 0] }).expect("dig");
    game.emit(&Tick { dtime: 0.05 }).expect("a tick");
    assert_eq!(world.lock().unwrap().voxel([0, -1, 0]), AIR, "dug");
    assert!(kit.calls::<EditVoxels>().is_empty(), "not a creative edit");
    let many = kit.calls::<TransactMany>();
    assert_eq!(many.len(), 1);
    let tx = &many[0].txs[0];
    let edit = tx.edit.as_ref().expect("the dig is the transaction's edit");
    assert_eq!(
        edit.replace,
        Replace::Exactly(stone),
        "exactly what was seen"
    );
    assert_eq!(edit.voxel, AIR);
    let slot0 = SlotRef {
        owner: Owner::Player("ann".into()),
        list: "main".into(),
        index: 0,
    };
    assert_eq!(
        tx.changes,
        [
            Change::Give {
                owner: Owner::Player("ann".into()),
                list: "main".into(),
                stack: ItemStack::new("cobble", 1),
                overflow: Overflow::DropAt([0.5, -0.5, 0.5]),
            },
            Change::Wear {
                slot: slot0,
                name: "pick".into(),
                amount: 6554,
            },
        ]
    );
    assert_eq!(slot(&world, 1), Some(ItemStack::new("cobble", 1)));
    assert_eq!(slot(&world, 0).map(|s| s.wear), Some(6554));
    assert!(!sent::<Edits>(&kit).is_empty(), "the dig is news");
}

#[test]
fn stone_cannot_be_dug_by_hand_and_a_dig_without_a_start_is_refused() {
    let (kit, world, mut game) = survival(&[]);
    let stone = registry().get_id("stone").expect("registered");
    game.packet(1, &DigStart { voxel: [0, -1, 0] })
        .expect("start");
    game.emit(&Tick { dtime: 0.05 }).expect("a tick");
    assert!(dig_times(&kit)[0].seconds < 0.0);
    assert_eq!(refusals(&kit, 1), ["stone cannot be dug with the hand"]);
    game.packet(1, &Dig { voxel: [0, -1, 0] }).expect("dig");
    game.emit(&Tick { dtime: 0.05 }).expect("a tick");
    assert!(
        refusals(&kit, 1)[1].starts_with("start digging [0, -1, 0] first"),
        "{:?}",
        refusals(&kit, 1)
    );
    assert_eq!(world.lock().unwrap().voxel([0, -1, 0]), stone);

    // Dirt by hand: the hand's crumbly time, no tool worn.
    let dirt = registry().get_id("dirt").expect("registered");
    world.lock().unwrap().edited.insert([1, 0, 0], dirt);
    game.packet(1, &DigStart { voxel: [1, 0, 0] })
        .expect("start");
    game.emit(&Tick { dtime: 0.05 }).expect("a tick");
    assert_eq!(dig_times(&kit)[1].seconds, 0.7);
}

#[test]
fn wielding_another_slot_or_another_voxel_stops_the_dig() {
    let (kit, world, mut game) = survival(&[(0, ItemStack::new("pick", 1))]);
    let stone = registry().get_id("stone").expect("registered");
    game.packet(1, &DigStart { voxel: [0, -1, 0] })
        .expect("start");
    game.emit(&Tick { dtime: 0.05 }).expect("a tick");
    game.packet(1, &Wield { index: 1 }).expect("wield");
    std::thread::sleep(std::time::Duration::from_millis(250));
    game.packet(1, &Dig { voxel: [0, -1, 0] }).expect("dig");
    game.emit(&Tick { dtime: 0.05 }).expect("a tick");
    assert_eq!(world.lock().unwrap().voxel([0, -1, 0]), stone);
    assert!(refusals(&kit, 1)[0].starts_with("start digging"));

    game.packet(1, &Wield { index: 0 }).expect("wield");
    game.packet(1, &DigStart { voxel: [0, -1, 0] })
        .expect("start");
    game.emit(&Tick { dtime: 0.05 }).expect("a tick");
    std::thread::sleep(std::time::Duration::from_millis(250));
    game.packet(1, &Dig { voxel: [1, -1, 0] }).expect("dig");
    game.emit(&Tick { dtime: 0.05 }).expect("a tick");
    assert!(
        refusals(&kit, 1)[1].starts_with("digging [0, -1, 0], not [1, -1, 0]"),
        "{:?}",
        refusals(&kit, 1)
    );
    assert_eq!(world.lock().unwrap().voxel([1, -1, 0]), stone);

    game.packet(1, &Wield { index: 8 }).expect("wield");
    assert_eq!(refusals(&kit, 1)[2], "the hotbar has slots 0 to 7");
    assert_eq!(game.module().players[&1].wield, 0);
}

#[test]
fn a_survival_place_takes_one_from_the_wielded_stack_until_none_is_left() {
    let (kit, world, mut game) = survival(&[(2, ItemStack::new("stone", 2))]);
    let stone = registry().get_id("stone").expect("registered");
    game.packet(1, &Wield { index: 2 }).expect("wield");
    for x in 1..=3 {
        game.packet(
            1,
            &Place {
                voxel: [x, 0, 0],
                name: "stone".into(),
            },
        )
        .expect("place");
        game.emit(&Tick { dtime: 0.05 }).expect("a tick");
    }
    let world_now = |pos| world.lock().unwrap().voxel(pos);
    assert_eq!(world_now([1, 0, 0]), stone);
    assert_eq!(world_now([2, 0, 0]), stone);
    assert_eq!(world_now([3, 0, 0]), AIR, "none left for the third");
    assert_eq!(slot(&world, 2), None, "both placed");
    assert_eq!(refusals(&kit, 1), ["no 1 stone in slot 2"]);
    let many = kit.calls::<TransactMany>();
    assert_eq!(
        many[0].txs[0].changes,
        [Change::Take {
            slot: SlotRef {
                owner: Owner::Player("ann".into()),
                list: "main".into(),
                index: 2,
            },
            name: "stone".into(),
            count: 1,
        }]
    );
    assert_eq!(
        many[0].txs[0].edit.as_ref().map(|e| e.replace),
        Some(Replace::OnlyAir)
    );
    assert!(kit.calls::<EditVoxels>().is_empty());
}

#[test]
fn the_creative_privilege_keeps_endless_blocks_and_instant_digs() {
    let (kit, world, mut game) =
        game_with(&[("main.default_privileges", "interact,shout,creative")]);
    join(&kit, &mut game, 1, "ann");
    game.packet(1, &Dig { voxel: [0, -1, 0] }).expect("dig");
    game.packet(
        1,
        &Place {
            voxel: [1, 0, 0],
            name: "torch".into(),
        },
    )
    .expect("place");
    game.emit(&Tick { dtime: 0.05 }).expect("a tick");
    assert_eq!(world.lock().unwrap().voxel([0, -1, 0]), AIR);
    assert_ne!(world.lock().unwrap().voxel([1, 0, 0]), AIR);
    assert_eq!(kit.calls::<EditVoxels>().len(), 1, "one world call");
    assert!(kit.calls::<TransactMany>().is_empty(), "no inventory");
    assert!(refusals(&kit, 1).is_empty(), "{:?}", refusals(&kit, 1));
    game.packet(1, &DigStart { voxel: [0, -2, 0] })
        .expect("start");
    game.emit(&Tick { dtime: 0.05 }).expect("a tick");
    assert_eq!(dig_times(&kit)[0].seconds, 0.0, "instant");
}

#[test]
fn players_are_listed_and_their_joining_and_leaving_told() {
    let (kit, _world, mut game) = game();
    join(&kit, &mut game, 1, "ann");
    join(&kit, &mut game, 2, "bob");
    assert_eq!(
        kit.emitted::<PlayerJoined>(),
        [
            PlayerJoined {
                name: "ann".into(),
                peer: 1
            },
            PlayerJoined {
                name: "bob".into(),
                peer: 2
            }
        ]
    );
    game.packet(2, &Wield { index: 3 }).expect("wield");
    let players = game.call(&GetPlayers {}).expect("answered");
    assert_eq!(players.len(), 2);
    assert_eq!(players[1].name, "bob");
    assert_eq!(players[1].wield, 3);
    assert_eq!(players[0].position, [0.5, 0.0, 0.5]);
    game.emit(&buildat_network_api::ClientDisconnected {
        peer: 1,
        reason: "gone".into(),
    })
    .expect("left");
    assert_eq!(
        kit.emitted::<PlayerLeft>(),
        [PlayerLeft {
            name: "ann".into(),
            peer: 1
        }]
    );
    assert_eq!(game.call(&GetPlayers {}).expect("answered").len(), 1);
}

#[test]
fn node_punches_and_uses_within_reach_are_told_with_the_wielded_item() {
    let (kit, world, mut game) = survival(&[(0, ItemStack::new("pick", 1))]);
    let (near, far) = {
        let mut world = world.lock().unwrap();
        world.next_node += 2;
        let near = world.next_node - 1;
        world.nodes.insert(near, [2.0, 0.0, 0.5]);
        world.nodes.insert(near + 1, [50.0, 0.0, 0.5]);
        (near, near + 1)
    };
    game.packet(1, &PunchNode { node: near }).expect("punch");
    game.packet(1, &UseNode { node: far }).expect("use");
    game.packet(1, &UseNode { node: 999 }).expect("use");
    game.emit(&Tick { dtime: 0.05 }).expect("a tick");
    assert_eq!(
        kit.emitted::<NodeActions>(),
        [NodeActions {
            actions: vec![NodeAction {
                node: near,
                player: "ann".into(),
                item: Some(ItemStack::new("pick", 1)),
                kind: BlockActionKind::Punch,
            }]
        }]
    );
    assert_eq!(
        refusals(&kit, 1),
        [format!("node {far} is out of reach"), "no node 999".into()]
    );
    assert_eq!(kit.calls::<GetSlots>().len(), 1, "one call for the tick");
    assert!(
        kit.calls::<GetInventory>().len() <= 1,
        "only the start's probe"
    );
}

#[test]
fn a_block_s_handler_is_told_the_wielded_item() {
    let (kit, world, mut game) = survival(&[(0, ItemStack::new("pick", 1))]);
    let lever = registry().get_id("lever").expect("registered");
    world.lock().unwrap().edited.insert([2, 0, 0], lever);
    game.packet(1, &Punch { voxel: [2, 0, 0] }).expect("punch");
    game.emit(&Tick { dtime: 0.05 }).expect("a tick");
    let told = told_levers(&kit);
    assert_eq!(told[0].actions[0].item, Some(ItemStack::new("pick", 1)));
}

#[test]
fn without_an_inventory_module_everyone_plays_creative() {
    let world_dir = tempfile::tempdir().expect("a temp dir");
    let kit = TestHost::new()
        .name("main")
        .world_path(world_dir.path())
        .config("main.guests", "true");
    let world = Arc::new(Mutex::new(FakeWorld::default()));
    answer_world(&kit, &world);
    // As if no inventory module were loaded: its call fails.
    kit.answer(
        |_: GetInventory| -> Result<Option<Inventory>, buildat_interface::ModuleError> {
            Err(buildat_interface::ModuleError::msg("no module inventory"))
        },
    );
    let mut game = kit.load::<Game>().expect("loads");
    join(&kit, &mut game, 1, "ann");
    game.packet(1, &Dig { voxel: [0, -1, 0] }).expect("dig");
    game.emit(&Tick { dtime: 0.05 }).expect("a tick");
    assert_eq!(world.lock().unwrap().voxel([0, -1, 0]), AIR, "dug at once");
    assert_eq!(kit.calls::<EditVoxels>().len(), 1);
}

#[test]
fn a_tool_taken_out_of_the_wielded_slot_during_the_dig_refuses_it() {
    let (kit, world, mut game) = survival(&[(0, ItemStack::new("wand", 1))]);
    let stone = registry().get_id("stone").expect("registered");
    game.packet(1, &DigStart { voxel: [0, -1, 0] })
        .expect("start");
    game.emit(&Tick { dtime: 0.05 }).expect("a tick");
    // The wand (which never wears) moved away (an inventory move): dirt in its slot now.
    world.lock().unwrap().inventories.get_mut("ann").unwrap()[0] = Some(ItemStack::new("dirt", 1));
    std::thread::sleep(std::time::Duration::from_millis(120));
    game.packet(1, &Dig { voxel: [0, -1, 0] }).expect("dig");
    game.emit(&Tick { dtime: 0.05 }).expect("a tick");
    assert_eq!(world.lock().unwrap().voxel([0, -1, 0]), stone, "not dug");
    assert_eq!(refusals(&kit, 1), ["no wand in slot 0"]);
    assert_eq!(
        slot(&world, 0),
        Some(ItemStack::new("dirt", 1)),
        "nothing given"
    );
}

#[test]
fn the_wielded_slot_and_a_waiting_dig_start_cross_a_reload() {
    let (kit, _world, mut game) = survival(&[(0, ItemStack::new("pick", 1))]);
    game.packet(1, &Wield { index: 3 }).expect("wield");
    game.packet(1, &DigStart { voxel: [0, -1, 0] })
        .expect("start");
    let mut game = game.reload::<Game>().expect("reloaded");
    assert_eq!(game.module().players[&1].wield, 3);
    game.emit(&Tick { dtime: 0.05 }).expect("a tick");
    let times = dig_times(&kit);
    assert_eq!(times.len(), 1, "answered by the new version");
    assert!(times[0].seconds < 0.0, "slot 3 is empty: the hand");
}

/// `main.whitelist` lets the names on it play, refuses others (a guest,
/// or a login, before any account is made) with the reason; `main.motd`
/// is told each joiner.
#[test]
fn the_whitelist_refuses_other_names_and_joiners_are_told_the_motd() {
    let (kit, _world, mut game) = game_with(&[
        ("main.whitelist", "Ann, bob"),
        ("main.motd", "  Welcome to the test world!  "),
    ]);
    join(&kit, &mut game, 1, "ANN");
    assert_eq!(told(&kit, 1), ["Welcome to the test world!"]);

    game.emit(&ClientConnected {
        peer: 2,
        address: "127.0.0.1:40002".into(),
    })
    .expect("connected");
    game.packet(2, &Join { name: "Eve".into() }).expect("join");
    game.emit(&ClientConnected {
        peer: 3,
        address: "127.0.0.1:40003".into(),
    })
    .expect("connected");
    game.packet(
        3,
        &buildat_main_api::Login {
            name: "mallory".into(),
            password: "secret".into(),
        },
    )
    .expect("login");
    game.emit(&Tick { dtime: 0.05 }).expect("a tick");
    assert_eq!(
        disconnected(&kit),
        [
            (2, "Eve is not on this server's whitelist".to_string()),
            (3, "mallory is not on this server's whitelist".to_string()),
        ]
    );
    assert_eq!(game.module().players.len(), 1, "only ann plays");
    assert!(game.module().pending_logins.is_empty(), "no password work");
    assert!(kit.calls::<PutValues>().is_empty(), "no account made");

    // A name that is none is refused at start, naming the setting.
    let kit = TestHost::new()
        .name("main")
        .config("main.whitelist", "ann,10.0.0.1");
    let error = kit.load::<Game>().err().expect("refused");
    assert!(error.to_string().contains("main.whitelist"), "{error}");
}

/// The console's `set` of `main.motd` and `main.whitelist` is applied at
/// once: a joiner after it is told the new motd; a player not on the new
/// whitelist is disconnected, told why; a value the game cannot take is
/// refused and the old one stays.
#[test]
fn motd_and_whitelist_are_applied_live() {
    use buildat_interface::core_api::ApplySettings;
    let (kit, _world, mut game) = game_with(&[("main.motd", "old news")]);
    join(&kit, &mut game, 1, "ann");
    join(&kit, &mut game, 2, "bob");
    assert_eq!(told(&kit, 1).first().map(String::as_str), Some("old news"));
    let apply = |keys: &[&str]| ApplySettings {
        namespace: "main".into(),
        keys: keys.iter().map(|k| k.to_string()).collect(),
    };

    kit.set_config("main.motd", "new news");
    let reply = game.call(&apply(&["main.motd"])).expect("applied");
    assert_eq!(reply, "");
    join(&kit, &mut game, 3, "cid");
    assert_eq!(told(&kit, 3).first().map(String::as_str), Some("new news"));

    kit.set_config("main.whitelist", "ann,cid");
    let reply = game.call(&apply(&["main.whitelist"])).expect("applied");
    assert_eq!(reply, "disconnected 1 not on the new whitelist: bob");
    assert_eq!(
        disconnected(&kit),
        [(2, "bob is not on this server's whitelist".to_string())]
    );
    assert_eq!(game.module().players.len(), 2, "ann and cid play on");

    // Refused late: the game keeps what it had.
    kit.set_config("main.whitelist", "ann,10.0.0.1");
    let error = game.call(&apply(&["main.whitelist"])).unwrap_err();
    assert!(error.to_string().contains("main.whitelist"), "{error}");
    assert_eq!(game.module().whitelist.len(), 2);
    assert_eq!(game.module().motd, "new news");
}

/// Positions the game accepted for peer `peer`'s moves: where it is.
fn move_to(game: &mut TestModule<Game>, peer: u64, to: [f64; 3]) -> [f64; 3] {
    game.packet(peer, &buildat_main_api::Move { position: to })
        .expect("move");
    game.emit(&Tick { dtime: 0.05 }).expect("a tick");
    game.module().players[&peer].position
}

/// The world's border (`get_border`) stops every move out of it, also
/// with the movement checks off; one beyond it may come back; `/tp` does
/// not take a player out.
#[test]
fn moves_stop_at_the_world_border() {
    let world = FakeWorld {
        border: Border::of_setting(20),
        ..FakeWorld::default()
    };
    let (kit, _world, mut game) = game_on(
        &[("main.creative", "true"), ("main.free_movement", "true")],
        world,
    );
    join(&kit, &mut game, 1, "ann");
    assert_eq!(move_to(&mut game, 1, [8.5, 0.0, 0.5]), [8.5, 0.0, 0.5]);
    assert_eq!(move_to(&mut game, 1, [16.5, 0.0, 0.5]), [16.5, 0.0, 0.5]);
    assert_eq!(
        move_to(&mut game, 1, [24.5, 0.0, 0.5]),
        [16.5, 0.0, 0.5],
        "put back"
    );
    assert!(
        sent::<Correct>(&kit)
            .iter()
            .any(|(to, c)| *to == 1 && c.position == [16.5, 0.0, 0.5]),
        "the client is corrected"
    );
    let refused = refusals(&kit, 1);
    assert!(
        refused.iter().any(|r| r.contains("border is 20 blocks")),
        "{refused:?}"
    );
    assert_eq!(move_to(&mut game, 1, [20.0, 0.0, 0.5]), [20.0, 0.0, 0.5]);
    assert_eq!(
        move_to(&mut game, 1, [20.0, 0.0, -12.0]),
        [20.0, 0.0, -12.0]
    );
    assert_eq!(
        move_to(&mut game, 1, [20.0, 0.0, -20.0]),
        [20.0, 0.0, -20.0]
    );
    assert_eq!(
        move_to(&mut game, 1, [20.0, 0.0, -20.5]),
        [20.0, 0.0, -20.0]
    );

    let answer = game
        .command("tp", &["ann", "40", "0", "0"], None)
        .expect("ran");
    assert!(answer.contains("border"), "{answer}");
    // Beyond it already (the border set after it went there): it comes back.
    game.module_mut().players.get_mut(&1).expect("ann").position = [30.0, 0.0, 0.5];
    assert_eq!(move_to(&mut game, 1, [31.0, 0.0, 0.5]), [30.0, 0.0, 0.5]);
    assert_eq!(move_to(&mut game, 1, [25.0, 0.0, 0.5]), [25.0, 0.0, 0.5]);

    // `set voxelworld.border` on the console: the world tells the game.
    game.emit(&buildat_voxelworld_api::BorderChanged {
        border: Border::of_setting(40),
    })
    .expect("told");
    assert_eq!(move_to(&mut game, 1, [35.0, 0.0, 0.5]), [35.0, 0.0, 0.5]);
    assert_eq!(move_to(&mut game, 1, [41.0, 0.0, 0.5]), [35.0, 0.0, 0.5]);
    game.emit(&buildat_voxelworld_api::BorderChanged { border: None })
        .expect("told");
    assert_eq!(move_to(&mut game, 1, [41.0, 0.0, 0.5]), [41.0, 0.0, 0.5]);
}

/// `/status` and `get_tick_stats` give the last minute's tick p50 and p99.
#[test]
fn status_shows_the_last_minute_s_tick_time() {
    let (kit, _world, mut game) = game();
    let status = game.command("status", &[], None).expect("ran");
    assert!(status.contains("no tick in the last minute"), "{status}");
    join(&kit, &mut game, 1, "ann");
    for _ in 0..9 {
        game.emit(&Tick { dtime: 0.05 }).expect("a tick");
    }
    let stats = game.call(&GetTickStats {}).expect("answers");
    assert_eq!(stats.minute_count, 10, "{stats:?}");
    assert!(stats.minute_p50_seconds > 0.0, "{stats:?}");
    assert!(stats.minute_p99_seconds >= stats.minute_p50_seconds);
    let status = game.command("status", &[], None).expect("ran");
    assert!(
        status.contains("tick p50 ") && status.contains(" ms over the last minute (10 ticks)"),
        "{status}"
    );
    assert!(status.contains("1 playing: ann"), "{status}");
}

/// `/inspect` in chat: inspect mode (the privilege voxelworld's `inspect`
/// declares); a dig start, a dig and a punch each tell the voxel's history
/// (voxelworld's `inspect X Y Z`, by the player) and dig nothing, no dig
/// time; `/inspect off` ends it and digs dig again. Without the privilege
/// it is refused.
#[test]
fn inspect_mode_tells_a_voxels_history_instead_of_digging_it() {
    use buildat_interface::core_api::{CommandInfo, RunModuleCommand};
    let (kit, world, mut game) = game_with(&[
        ("main.default_privileges", "interact,shout,server"),
        ("main.creative", "true"),
    ]);
    kit.answer(|_: ListCommands| {
        Ok(vec![CommandInfo {
            name: "inspect".into(),
            module: "voxelworld".into(),
            usage: String::new(),
            help: String::new(),
            privilege: Some("server".into()),
        }])
    });
    let asked = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&asked);
    kit.answer(move |run: RunModuleCommand| {
        seen.lock()
            .unwrap()
            .push((run.name.clone(), run.args.clone(), run.by.clone()));
        Ok(format!(
            "{}, newest first:\n... griefer: stone -> air",
            run.args.join(" ")
        ))
    });
    join(&kit, &mut game, 1, "ann");
    let stone = registry().get_id("stone").expect("registered");
    let say = |game: &mut TestModule<Game>, text: &str| {
        game.packet(1, &Chat { text: text.into() }).expect("chat");
    };
    say(&mut game, "/inspect");
    assert!(
        told(&kit, 1).last().unwrap().starts_with("inspect mode on"),
        "{:?}",
        told(&kit, 1)
    );
    kit.clear();
    game.packet(1, &DigStart { voxel: [0, -1, 0] })
        .expect("start");
    game.packet(1, &Dig { voxel: [0, -1, 0] }).expect("dig");
    game.packet(1, &Punch { voxel: [1, -1, 0] }).expect("punch");
    game.emit(&Tick { dtime: 0.05 }).expect("a tick");
    assert_eq!(world.lock().unwrap().voxel([0, -1, 0]), stone, "not dug");
    assert!(dig_times(&kit).is_empty());
    let lines = told(&kit, 1);
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert!(lines[2].starts_with("1 -1 0, newest first"), "{lines:?}");
    assert_eq!(
        asked.lock().unwrap()[0],
        (
            "inspect".to_string(),
            vec!["0".to_string(), "-1".into(), "0".into()],
            Some("ann".to_string())
        )
    );
    say(&mut game, "/inspect off");
    assert!(
        told(&kit, 1)
            .last()
            .unwrap()
            .starts_with("inspect mode off")
    );
    game.packet(1, &Dig { voxel: [0, -1, 0] }).expect("dig");
    game.emit(&Tick { dtime: 0.05 }).expect("a tick");
    assert_ne!(world.lock().unwrap().voxel([0, -1, 0]), stone, "dug");

    // Without the privilege: refused.
    let (kit, _world, mut game) = self::game();
    kit.answer(|_: ListCommands| {
        Ok(vec![CommandInfo {
            name: "inspect".into(),
            module: "voxelworld".into(),
            usage: String::new(),
            help: String::new(),
            privilege: Some("server".into()),
        }])
    });
    join(&kit, &mut game, 1, "ann");
    game.packet(
        1,
        &Chat {
            text: "/inspect".into(),
        },
    )
    .expect("chat");
    assert!(
        told(&kit, 1)
            .last()
            .unwrap()
            .contains("needs the 'server' privilege"),
        "{:?}",
        told(&kit, 1)
    );
}
