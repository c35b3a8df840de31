//! The `inventory` module in the real server with the real client: the
//! operator gives a player items on the console (`give`), the headless
//! client (`--script`) sees them through the module's Lua
//! (`require("buildat/module/inventory")`), moves some (answered after
//! the server stored it), drops one (a node it sees) and walks it back up,
//! is refused a move from an empty slot, and the
//! `census` counts the same items before and after a restart.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{
    Scratch, Server, client_binary, console, output_text, run_headless, start_game,
};

const SCRIPT: &str = r#"
local inv = require("buildat/module/inventory")
local log = buildat.Logger("invtest")
local step = "wait"
local function slot(i) return { owner = "me", list = "main", index = i } end
buildat.set_interval(0.2, function()
	if step == "wait" and inv.count("stone") == 5 then
		log:info("got 5 stone in slot " .. tostring(inv.find("stone")))
		step = "moving"
		inv.move(slot(1), slot(9), 2, function(ok, reason)
			log:info("move answered " .. tostring(ok) .. " " .. reason)
			step = ok and "moved" or "failed"
		end)
	elseif step == "moved" then
		local main = inv.list("me", "main")
		if main[1] and main[1].count == 3 and main[9] and main[9].count == 2 then
			log:info("moved: 3 and 2, still " .. inv.count("stone"))
			step = "dropping"
			inv.drop(slot(9), 1, function(ok, reason)
				log:info("drop answered " .. tostring(ok) .. " " .. reason)
				step = ok and "dropped" or "failed"
			end)
		end
	elseif step == "dropped" and inv.count("stone") == 4 then
		log:info("dropped one, 4 left")
		step = "lying"
	elseif step == "lying" and inv.count("stone") == 5 then
		log:info("picked it up again, 5")
		step = "done"
		inv.move(slot(20), slot(21), 1, function(ok, reason)
			log:info("empty move answered " .. tostring(ok) .. ": " .. reason)
			buildat.disconnect()
		end)
	end
end)
buildat.nodes.on_added(function(id)
	local node = buildat.nodes.get(id)
	if node ~= nil and node.vars.item == "stone" then
		log:info("a drop node of stone, " .. string.unpack("<I2", node.vars.count))
	end
end)
"#;

/// The default game with its survival modules.
fn setup() -> Scratch {
    let scratch = Scratch::new();
    scratch.add_survival_game();
    scratch
}

/// Gives on the console, again while the item is not known yet (the
/// items module learns the terrain's blocks a moment after start).
fn give(server: &mut Server, line: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        server.pump();
        let from = server.seen.len();
        server.send(line);
        let answer = server
            .wait_for_from(from, "invbot", Duration::from_secs(30))
            .unwrap_or_else(|| panic!("'{line}' is answered:\n{}", server.output()));
        if answer.contains("gave ") {
            return;
        }
        assert!(
            answer.contains("unknown item") && Instant::now() < deadline,
            "{answer}\n{}",
            server.output()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

fn census(server: &mut Server) -> String {
    console(server, "census", "total ")
}

#[test]
fn a_client_moves_given_items_through_the_server_and_the_census_keeps_them() {
    let scratch = setup();
    let (mut server, address) = start_game(&scratch, &["voxelworld.view_radius=1"]);
    give(&mut server, "give invbot stone 5");

    let dir = tempfile::tempdir().expect("temp dir");
    let script = dir.path().join("inv.lua");
    std::fs::write(&script, SCRIPT).expect("script");
    let out = Command::new(client_binary())
        .args(["--connect", &address, "--cache"])
        .arg(dir.path().join("cache"))
        .args(["--name", "invbot", "--quit-after", "90", "-v", "--script"])
        .arg(&script)
        .stdin(Stdio::null())
        .output()
        .expect("run buildat-client");
    let text = output_text(&out);
    let context = || format!("{text}\n--- server:\n{}", server.output());
    assert!(text.contains("got 5 stone in slot 1"), "{}", context());
    assert!(text.contains("move answered true"), "{}", context());
    assert!(text.contains("moved: 3 and 2, still 5"), "{}", context());
    assert!(text.contains("drop answered true"), "{}", context());
    assert!(text.contains("dropped one, 4 left"), "{}", context());
    assert!(text.contains("a drop node of stone, 1"), "{}", context());
    assert!(text.contains("picked it up again, 5"), "{}", context());
    assert!(
        text.contains("empty move answered false: slot 19 is empty"),
        "{}",
        context()
    );

    let counted = census(&mut server);
    assert!(
        counted.contains("total 5"),
        "{counted}\n{}",
        server.output()
    );
    assert_eq!(
        server.stop(Duration::from_secs(60)),
        Some(0),
        "{}",
        server.output()
    );

    // After a restart the stored inventories count the same.
    let (mut server, _) = start_game(&scratch, &["voxelworld.view_radius=1"]);
    let counted = census(&mut server);
    assert!(
        counted.contains("total 5"),
        "{counted}\n{}",
        server.output()
    );
    server.pump();
    let from = server.seen.len();
    server.send("census");
    let stone = server
        .wait_for_from(from, "stone ", Duration::from_secs(30))
        .unwrap_or_else(|| panic!("census lists stone:\n{}", server.output()));
    assert!(stone.contains("stone 5"), "{stone}");
    assert_eq!(
        server.stop(Duration::from_secs(60)),
        Some(0),
        "{}",
        server.output()
    );

    // Headless, the server stopped: the same count from storage.
    let (status, output) = run_headless(&scratch, &["census".to_string()]);
    assert_eq!(status, Some(0), "{output}");
    assert!(
        output.contains("stone 5") && output.contains("total 5"),
        "{output}"
    );
}
