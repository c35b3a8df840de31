//! End-to-end tests of health: the real server with the survival game and
//! `health`, the real headless client running a Lua bot
//! (`require("buildat/module/health")`): a fall taken step by step with
//! main's `move` hurts (`health:hurt`, cause `fall`); `/kill` in chat
//! kills, the inventory lies on the ground where it died (the census still
//! counts it, the player holds none), `respawn()` brings it back at the
//! spawn with full hp; hp persists across a reconnect (`health NAME` on the
//! console says the same).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{Scratch, client_binary, console, lines_of, output_text, start_game};

const SETTINGS: [&str; 3] = [
    "voxelworld.view_radius=2",
    "main.default_privileges=interact,shout,fly,fast,teleport",
    "health.regen_seconds=0",
];

/// The bot: run 1 (full hp at join) falls, is killed, respawns, falls
/// again and leaves; run 2 (less than full hp at join) prints its hp and
/// leaves. Failures leave through a malformed packet (exit 5).
const BOT: &str = concat!(
    r#"
local main = require("buildat/module/main")
local inv = require("buildat/module/inventory")
local health = require("buildat/module/health")
local log = buildat.Logger("hbot")

"#,
    include_str!("common/bot_coroutines.lua"),
    r#"
local hurts, died = {}, nil
health.on_hurt(function(amount, cause)
	table.insert(hurts, { amount = amount, cause = cause })
end)
health.on_died(function(cause)
	died = cause
end)

local function count(name)
	local n = 0
	for _, slot in ipairs(inv.list("me", "main") or {}) do
		if slot and slot.name == name then
			n += slot.count
		end
	end
	return n
end

-- Up by /tp (a teleport is no fall), then down a voxel every 0.05 s.
local function fall(x, y, z, height)
	main.chat(string.format("/tp %.2f %.2f %.2f", x, y + height, z))
	wait_until("the teleport", function()
		local _, py = main.position()
		return py ~= nil and math.abs(py - (y + height)) < 0.1
	end, 10)
	sleep(0.5)
	for step = height - 1, 0, -1 do
		main.move(x, y + step, z)
		sleep(0.05)
	end
end

local function fall_hurts(x, y, z)
	local before = #hurts
	fall(x, y, z, 12)
	wait_until("fall damage", function()
		return #hurts > before and hurts[#hurts].cause == "fall"
	end, 10)
	return hurts[#hurts].amount
end

local function play()
	wait_until("spawning and my health", function()
		return main.position() ~= nil and health.hp() ~= nil and inv.list("me", "main") ~= nil
	end, 120)
	if health.hp() < health.max_hp() then
		log:info("joined with hp " .. health.hp())
		buildat.disconnect()
		return
	end
	local x, y, z = main.position()
	log:info(string.format("spawned at %.2f,%.2f,%.2f hp %d", x, y, z, health.hp()))
	sleep(1.0)
	local amount = fall_hurts(x, y, z)
	log:info("hurt " .. amount .. " fall, hp " .. health.hp())
	wait_until("5 dirt given", function()
		return count("dirt") == 5
	end, 60)
	main.chat("/kill")
	wait_until("death", function()
		return died ~= nil and health.dead()
	end, 10)
	wait_until("my inventory dropped", function()
		return count("dirt") == 0
	end, 10)
	log:info("died " .. died .. ", holding " .. count("dirt") .. " dirt")
	sleep(0.3)
	health.respawn()
	wait_until("respawning", function()
		return not health.dead() and health.hp() == 20
	end, 20)
	wait_until("being back at the spawn", function()
		local px, py, pz = main.position()
		return math.abs(px - x) < 1 and math.abs(py - y) < 2 and math.abs(pz - z) < 1
	end, 10)
	local px, py, pz = main.position()
	log:info(string.format("respawned at %.2f,%.2f,%.2f hp %d", px, py, pz, health.hp()))
	sleep(1.0)
	amount = fall_hurts(px, py, pz)
	sleep(1.5)
	log:info("leaving with hp " .. health.hp())
	buildat.disconnect()
end

co = coroutine.create(play)
resume()
"#
);

fn bot(address: &str, cache: &std::path::Path, script: &std::path::Path) -> Command {
    let mut command = Command::new(client_binary());
    command
        .args(["--connect", address, "--cache"])
        .arg(cache)
        .args(["--name", "faller", "-v", "--script"])
        .arg(script)
        .stdin(Stdio::null());
    command
}

/// The number after `after` on the line holding it.
fn number_after(text: &str, after: &str) -> u32 {
    text.lines()
        .find_map(|l| l.split(after).nth(1))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.trim_end_matches(',').parse().ok())
        .unwrap_or_else(|| panic!("no number after {after:?} in:\n{text}"))
}

#[test]
fn a_bot_falls_is_killed_drops_its_inventory_respawns_and_keeps_its_hp() {
    let scratch = Scratch::new();
    scratch.add_survival_game();
    scratch.add_modules(&["health"]);
    let script = scratch.dir.path().join("hbot.lua");
    std::fs::write(&script, BOT).expect("the bot script");
    let cache = tempfile::tempdir().expect("temp dir");
    let (mut server, address) = start_game(&scratch, &SETTINGS);

    let mut child = bot(&address, cache.path(), &script)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run buildat-client");
    let lines = lines_of(&mut child);
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(240);
    let mut given = false;
    let status = loop {
        if let Ok(Some(status)) = child.try_wait() {
            break Some(status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            break None;
        }
        while let Ok(line) = lines.recv_timeout(Duration::from_millis(100)) {
            if !given && line.contains("hbot: hurt ") {
                given = true;
                console(&mut server, "give faller dirt 5", "gave 5 dirt");
            }
            seen.push(line);
        }
    };
    while let Ok(line) = lines.recv_timeout(Duration::from_millis(200)) {
        seen.push(line);
    }
    let text = seen.join("\n");
    eprintln!("--- the bot's first run:\n{text}");
    assert_eq!(
        status.and_then(|s| s.code()),
        Some(0),
        "{text}\n--- server:\n{}",
        server.output()
    );
    // The fall: 12 voxels, 3 safe: 9 hp.
    assert_eq!(number_after(&text, "hbot: hurt "), 9, "{text}");
    assert_eq!(number_after(&text, "fall, hp "), 11, "{text}");
    assert!(
        text.contains("hbot: died command, holding 0 dirt"),
        "{text}"
    );
    assert!(text.contains(" hp 20"), "{text}");
    let left = number_after(&text, "hbot: leaving with hp ");
    assert_eq!(left, 11, "{text}");
    // The dirt lies on the ground: the census counts it still.
    let census = console(&mut server, "census", "total ");
    let output = server.output();
    assert!(output.contains("dirt 5"), "{census}\n{output}");
    assert!(output.contains("faller died (command)"), "{output}");
    console(
        &mut server,
        "health faller",
        "faller (not in the game): hp 11/20",
    );

    // Run 2: the same hp after a reconnect.
    let out = bot(&address, cache.path(), &script)
        .args(["--quit-after", "60"])
        .output()
        .expect("run buildat-client again");
    let again = output_text(&out);
    assert_eq!(out.status.code(), Some(0), "{again}");
    assert_eq!(number_after(&again, "hbot: joined with hp "), 11, "{again}");
    assert_eq!(
        server.stop(Duration::from_secs(60)),
        Some(0),
        "{}",
        server.output()
    );
}

#[test]
fn health_loads_with_the_game_and_answers_its_console_command() {
    let scratch = Scratch::new();
    scratch.add_survival_game();
    scratch.add_modules(&["health"]);
    let (mut server, _address) = start_game(&scratch, &["voxelworld.view_radius=1"]);
    console(
        &mut server,
        "health nobody",
        "nobody: never hurt, respawn at the spawn point",
    );
    let answer = console(&mut server, "kill nobody", "not in the game");
    assert!(answer.contains("nobody"), "{answer}");
    assert_eq!(
        server.stop(Duration::from_secs(60)),
        Some(0),
        "{}",
        server.output()
    );
}
