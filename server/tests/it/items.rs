//! The `items`, `crafting` and `survival` modules in the real server with
//! the real headless client: a player that joined gets every item
//! definition (`items:defs`), its Lua (`require("buildat/module/items")`)
//! knows the terrain's blocks and the survival content's tools with what
//! the server registered.

use std::process::{Command, Stdio};

use crate::common::{Scratch, client_binary, output_text, start_game};

const SCRIPT: &str = r#"
local items = require("buildat/module/items")
local log = buildat.Logger("itemstest")
items.on_change(function(version)
	local pick, stone, planks = items.get("pick_wood"), items.get("stone"), items.get("planks")
	if pick and stone and planks then
		log:info(string.format("pick_wood: %s %d %s %q", pick.kind, pick.stack_max, pick.texture, pick.description))
		log:info(string.format("stone: %s %s %s", stone.kind, tostring(stone.voxel), stone.description))
		log:info(string.format("planks: %s %s", planks.kind, tostring(planks.voxel)))
		buildat.disconnect()
	end
end)
"#;

/// The default game with its survival modules.
fn setup() -> Scratch {
    let scratch = Scratch::new();
    scratch.add_survival_game();
    scratch
}

#[test]
fn a_joined_client_knows_every_item_the_server_registered() {
    let scratch = setup();
    let (server, address) = start_game(&scratch, &["voxelworld.view_radius=1"]);
    let dir = tempfile::tempdir().expect("temp dir");
    let script = dir.path().join("items.lua");
    std::fs::write(&script, SCRIPT).expect("script");
    let out = Command::new(client_binary())
        .args(["--connect", &address, "--cache"])
        .arg(dir.path().join("cache"))
        .args(["--name", "itembot", "--quit-after", "90", "-v", "--script"])
        .arg(&script)
        .stdin(Stdio::null())
        .output()
        .expect("run buildat-client");
    let text = output_text(&out);
    let context = || format!("{text}\n--- server:\n{}", server.output());
    assert!(
        text.contains(r#"pick_wood: tool 1 pick_wood.png "Wooden pickaxe""#),
        "{}",
        context()
    );
    assert!(text.contains("stone: block stone Stone"), "{}", context());
    assert!(text.contains("planks: block planks"), "{}", context());
    assert_eq!(out.status.code(), Some(0), "{}", context());
}
