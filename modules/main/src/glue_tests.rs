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
use buildat_main_api::{
    BlockAction, BlockActionKind, BlockActions, Chat, ChatLine, Dig, Edits, Join, Place, Punch,
    Refused, Spawn, Use, block_action_event,
};
use buildat_network_api::receive::testing::{DeliverPackets, disconnected, sent};
use buildat_network_api::{ClientConnected, Disconnect};
use buildat_voxel::geometry::Pos;
use buildat_voxel::{AIR, VoxelName, VoxelRegistry};
use buildat_voxelworld_api::{
    CreateNodes, DropOldTables, EditOutcome, EditVoxels, GetRegistry, GetSizes, GetSpawn, GetValue,
    GetVoxel, GetVoxels, ListValues, MoveNodes, PutValues, ReadOldTable, RegisterBlock, RemoveNode,
    Sizes,
};

use buildat_format::Packet;
use buildat_interface::Event;

use crate::{Game, TickStep};

/// A flat world: stone below y = 0, air from there up, every section
/// generated; the values of accounts kept in memory.
#[derive(Default)]
struct FakeWorld {
    edited: HashMap<Pos, u32>,
    values: BTreeMap<(String, String), Vec<u8>>,
    next_node: u64,
}

fn registry() -> VoxelRegistry {
    let mut registry = VoxelRegistry::default();
    // A lever is handled by the module `levers`.
    for (name, handler, solid) in [
        ("stone", "", true),
        ("torch", "", false),
        ("lever", "levers", true),
    ] {
        registry
            .add(
                VoxelName::simple(name),
                [""; 6].map(String::from),
                handler,
                solid,
            )
            .expect("a fresh registry takes three voxels");
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

/// A kit whose world is a [`FakeWorld`], with the game loaded on it.
fn game() -> (TestHost, Arc<Mutex<FakeWorld>>, TestModule<Game>) {
    let world_dir = tempfile::tempdir().expect("a temp dir");
    let kit = TestHost::new()
        .name("main")
        .world_path(world_dir.path())
        .config("main.guests", "true");
    // The directory stays for the test process (the game may write there).
    std::mem::forget(world_dir);
    let world = Arc::new(Mutex::new(FakeWorld::default()));
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
            .map(|_| {
                world.next_node += 1;
                Some(world.next_node)
            })
            .collect())
    });
    let w = at(world);
    kit.answer(move |get: GetValue| {
        Ok(w.lock().unwrap().values.get(&(get.space, get.key)).cloned())
    });
    let w = at(world);
    kit.answer(move |put: PutValues| {
        let mut world = w.lock().unwrap();
        for write in put.writes {
            let key = (write.space, write.key);
            match write.value {
                Some(value) => world.values.insert(key, value),
                None => world.values.remove(&key),
            };
        }
        Ok(true)
    });
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
        kind,
    };
    assert_eq!(
        told_levers(&kit),
        [BlockActions {
            actions: vec![action(BlockActionKind::Use), action(BlockActionKind::Punch)]
        }],
        "one event for the module, in the order they came"
    );
    assert!(refusals(&kit, 1).is_empty(), "{:?}", refusals(&kit, 1));
    assert!(kit.calls::<EditVoxels>().is_empty(), "nothing edited");
    assert!(sent::<Edits>(&kit).is_empty(), "no news");
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
