//! The module on the test kit: its registry from voxelworld's, its calls,
//! its event and its packets to joined players.

use std::sync::{Arc, Mutex};

use buildat_interface::events::Tick;
use buildat_interface::testing::{TestHost, TestModule};
use buildat_items_api::{
    DropRule, GetItems, GroupCap, ItemDef, ItemDefs, ItemsChanged, RegisterItems, ToolCaps,
    WireKind,
};
use buildat_main_api::{PlayerJoined, PlayerLeft};
use buildat_network_api::receive::testing::sent;
use buildat_network_api::{ClientDisconnected, PeerId};
use buildat_voxel::{BlockDefinition, BlockRegistry};
use buildat_voxelworld_api::{GetRegistry, VoxelRegistry};

use super::Items;

/// A voxelworld that can grow: its registry, shared with the kit's answer.
struct World {
    voxels: Arc<Mutex<VoxelRegistry>>,
    blocks: BlockRegistry,
}

impl World {
    fn new(kit: &TestHost, names: &[&str]) -> Self {
        let voxels = Arc::new(Mutex::new(VoxelRegistry::default()));
        let answer = Arc::clone(&voxels);
        kit.answer::<GetRegistry>(move |_| Ok(answer.lock().unwrap().clone()));
        let mut world = Self {
            voxels,
            blocks: BlockRegistry::default(),
        };
        for name in names {
            world.add(name);
        }
        world
    }

    fn add(&mut self, name: &str) {
        let block = BlockDefinition::simple(name, "t.png");
        let mut voxels = self.voxels.lock().unwrap();
        self.blocks.add(block, &mut voxels).unwrap();
    }
}

fn load(names: &[&str]) -> (TestModule<Items>, World) {
    let kit = TestHost::new().name("items");
    let world = World::new(&kit, names);
    (kit.load::<Items>().unwrap(), world)
}

fn pick_wood() -> ItemDef {
    let caps = ToolCaps::default().with("cracky", GroupCap::new(&[-1.0, -1.0, 1.5], 10, 0));
    ItemDef::tool("pick_wood", "Wooden pickaxe", "pick_wood.png", caps)
}

fn join(items: &mut TestModule<Items>, name: &str, peer: PeerId) {
    let joined = PlayerJoined {
        name: name.into(),
        peer,
    };
    items
        .emit_raw(
            "main:player_joined",
            &buildat_interface::encode(&joined).unwrap(),
        )
        .unwrap();
}

#[test]
fn every_block_is_an_item_from_the_start() {
    let (mut items, _world) = load(&["stone", "dirt", "coal_ore"]);
    let registry = items.call(&GetItems {}).unwrap();
    let names: Vec<&str> = registry.items.keys().map(String::as_str).collect();
    assert_eq!(names, ["coal_ore", "dirt", "stone"]);
    assert_eq!(registry.items["coal_ore"].description, "Coal ore");
    assert_eq!(registry.get_block("stone").unwrap().voxel(), Some("stone"));
    assert_eq!(registry.version, 1);
    assert_eq!(
        items.kit().emitted::<ItemsChanged>(),
        vec![ItemsChanged { version: 1 }]
    );
}

#[test]
fn registrations_refine_blocks_add_tools_and_are_announced() {
    let (mut items, _world) = load(&["stone", "cobblestone"]);
    let stone = ItemDef::block("stone")
        .with_groups(&[("cracky", 3)])
        .with_drops(vec![DropRule::always("cobblestone", 1)]);
    items
        .call(&RegisterItems {
            items: vec![stone, pick_wood()],
        })
        .unwrap();
    let registry = items.call(&GetItems {}).unwrap();
    assert_eq!(registry.version, 2);
    assert_eq!(registry.items["stone"].group("cracky"), 3);
    assert_eq!(registry.stack_max("pick_wood"), 1);
    let by_hand = registry.dig_params("stone", None);
    let with_pick = registry.dig_params("stone", Some("pick_wood"));
    assert!(by_hand.is_none());
    assert_eq!(with_pick.map(|p| p.seconds), Some(1.5));
    assert_eq!(
        items.kit().emitted::<ItemsChanged>().last(),
        Some(&ItemsChanged { version: 2 })
    );
}

#[test]
fn a_bad_registration_changes_nothing_and_says_why() {
    let (mut items, _world) = load(&["stone"]);
    let error = items
        .call(&RegisterItems {
            items: vec![pick_wood(), ItemDef::block("marble")],
        })
        .unwrap_err();
    assert!(error.to_string().contains("marble"), "{error}");
    let registry = items.call(&GetItems {}).unwrap();
    assert!(registry.get("pick_wood").is_none());
    assert_eq!(registry.version, 1);
    let mut tool = pick_wood();
    tool.stack_max = 3;
    let error = items
        .call(&RegisterItems { items: vec![tool] })
        .unwrap_err();
    assert!(error.to_string().contains("stack_max"), "{error}");
}

#[test]
fn joined_players_get_the_definitions_and_every_change() {
    let (mut items, _world) = load(&["stone"]);
    assert!(sent::<ItemDefs>(items.kit()).is_empty());
    join(&mut items, "ann", 7);
    join(&mut items, "bob", 8);
    let defs = sent::<ItemDefs>(items.kit());
    assert_eq!(defs.len(), 2);
    assert_eq!(defs[0].0, 7);
    assert_eq!(defs[0].1.items.len(), 1);
    assert_eq!(defs[0].1.items[0].kind, WireKind::Block);
    assert_eq!(defs[0].1.items[0].voxel, "stone");
    let left = PlayerLeft {
        name: "bob".into(),
        peer: 8,
    };
    items
        .emit_raw(
            "main:player_left",
            &buildat_interface::encode(&left).unwrap(),
        )
        .unwrap();
    items.kit().clear();
    items
        .call(&RegisterItems {
            items: vec![pick_wood()],
        })
        .unwrap();
    let defs = sent::<ItemDefs>(items.kit());
    assert_eq!(defs.len(), 1, "only ann is still here");
    assert_eq!(defs[0].0, 7);
    assert_eq!(defs[0].1.version, 2);
    let pick = defs[0]
        .1
        .items
        .iter()
        .find(|i| i.name == "pick_wood")
        .unwrap();
    assert_eq!((pick.kind, pick.stack_max), (WireKind::Tool, 1));
    assert_eq!(pick.texture, "pick_wood.png");
    items
        .emit(&ClientDisconnected {
            peer: 7,
            reason: "gone".into(),
        })
        .unwrap();
    items.kit().clear();
    items
        .call(&RegisterItems {
            items: vec![ItemDef::craft("stick", "Stick", "stick.png")],
        })
        .unwrap();
    assert!(sent::<ItemDefs>(items.kit()).is_empty());
}

#[test]
fn new_blocks_become_items_on_the_next_poll_or_registration() {
    let (mut items, mut world) = load(&["stone"]);
    world.add("planks");
    items.emit(&Tick { dtime: 0.5 }).unwrap();
    assert!(items.call(&GetItems {}).unwrap().get("planks").is_none());
    items.emit(&Tick { dtime: 2.0 }).unwrap();
    let registry = items.call(&GetItems {}).unwrap();
    assert!(registry.get_block("planks").is_some());
    assert_eq!(registry.version, 2);
    // A registration naming a block registered a moment ago reads it first.
    world.add("chest");
    items
        .call(&RegisterItems {
            items: vec![ItemDef::block("chest").with_groups(&[("choppy", 2)])],
        })
        .unwrap();
    assert_eq!(
        items.call(&GetItems {}).unwrap().items["chest"].group("choppy"),
        2
    );
}

#[test]
fn a_reload_keeps_registrations_players_and_a_growing_version() {
    let (mut items, _world) = load(&["stone"]);
    join(&mut items, "ann", 7);
    items
        .call(&RegisterItems {
            items: vec![pick_wood()],
        })
        .unwrap();
    items.kit().clear();
    let mut items = items.reload::<Items>().unwrap();
    let registry = items.call(&GetItems {}).unwrap();
    assert!(registry.get("pick_wood").is_some());
    assert_eq!(registry.version, 3);
    let defs = sent::<ItemDefs>(items.kit());
    assert_eq!(defs.len(), 1);
    assert_eq!((defs[0].0, defs[0].1.version), (7, 3));
}
