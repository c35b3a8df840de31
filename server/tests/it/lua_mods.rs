//! Server-side Lua mods (the `lua` module, issue 48) end to end: the real
//! server with the default game, `items`, `crafting`, `inventory`,
//! `active` and `lua`, and the real headless client running a Lua bot.
//! - The examples (`examples/lua_mods`, loaded from the repository as
//!   they are): `hello` answers in its setting's words with its count,
//!   `bouncer`'s block placed by the bot gets a torch on itself, is touched,
//!   says who used it and when it is dug, `garden`'s `/seeds` gives seeds,
//!   its recipe crafts grass into seeds and its ABM turns dirt in the open
//!   into grass, `circler`'s entity goes round.
//! - An edit to `hello`'s `init.lua` (a copy) goes live with the bot
//!   connected, its count kept; a broken edit (a syntax error, an error
//!   while loading) keeps the old version answering and logs
//!   `init.lua:LINE`.
//! - Runaway mods written by the test (an entity step that never returns, a
//!   command eating memory, an error on every tick) are stopped and named
//!   with file and line; the other mods' commands and the players go on,
//!   and saving a stopped mod's file loads it again.
//! - A saved recipe (`garden`'s, a copy) replaces the old one: the bot's
//!   craft preview of the same grass changes, and it crafts the new count.
//! - A mod folder moved into a watched module path of a running server
//!   loads; taken away, it unloads.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use crate::common::{
    Scratch, Server, client_binary, console, copy_dir, join, lines_of, ping, repo_root,
    start_server,
};

/// What every test here loads beside the default game.
const MODULES: [&str; 5] = ["items", "crafting", "inventory", "active", "lua"];

/// The Lua example mods' folder in the repository.
fn examples() -> PathBuf {
    repo_root().join("examples").join("lua_mods")
}

/// The scratch's module path of Lua mods (beside the one of native
/// modules, a cargo workspace whose members are all its folders).
fn lua_mods(scratch: &Scratch) -> PathBuf {
    scratch.dir.path().join("lua_mods")
}

/// The default game with `MODULES`, and copies of the example mods named
/// in [`lua_mods`].
fn setup(example_mods: &[&str]) -> Scratch {
    let scratch = Scratch::new();
    scratch.add_game();
    scratch.add_modules(&MODULES);
    std::fs::create_dir_all(lua_mods(&scratch)).expect("a folder of Lua mods");
    for name in example_mods {
        copy_dir(&examples().join(name), &lua_mods(&scratch).join(name));
    }
    scratch
}

/// The server over `scratch` (with [`lua_mods`] and `extra_paths`),
/// creative (the bot places any block), one chunk of view, `hello` saying
/// "hi there".
fn start(scratch: &Scratch, extra_paths: &[PathBuf], settings: &[&str]) -> (Server, String) {
    start_with(scratch, extra_paths, settings, false)
}

/// [`start`], the module paths watched if `watch` (a folder dropped in
/// loads).
fn start_with(
    scratch: &Scratch,
    extra_paths: &[PathBuf],
    settings: &[&str],
    watch: bool,
) -> (Server, String) {
    let mut all = vec![
        "voxelworld.view_radius=1",
        "main.creative=true",
        "hello.text=hi there",
    ];
    all.extend_from_slice(settings);
    let mut args = scratch.server_args();
    for path in std::iter::once(&lua_mods(scratch)).chain(extra_paths) {
        args.extend(["--modules".to_string(), path.display().to_string()]);
    }
    for setting in &all {
        args.extend(["--set".to_string(), setting.to_string()]);
    }
    args.extend(["--listen", "127.0.0.1:0"].map(String::from));
    if !watch {
        args.push("--no-watch".to_string());
    }
    let mut server = start_server(&args, Stdio::piped());
    let address = server.listen_address();
    server.expect_line("server started", Duration::from_secs(600));
    (server, address)
}

/// What every bot script starts with: a coroutine that can sleep and wait,
/// the chat it was told (each line logged as `chat: LINE`), and `fail`,
/// which leaves through a malformed packet (the client exits 5).
const BOT_PRELUDE: &str = concat!(
    r#"
local main = require("buildat/module/main")
local inv = require("buildat/module/inventory")
local log = buildat.Logger(BOT_NAME)
local ME = "me"

"#,
    include_str!("common/bot_coroutines.lua"),
    r#"
local chat = {}
main.on_chat(function(line)
	table.insert(chat, line)
	log:info("chat: " .. line)
end)

-- The first chat line holding `text`, or nil.
local function said(text)
	for _, line in ipairs(chat) do
		if string.find(line, text, 1, true) then
			return line
		end
	end
	return nil
end

local function voxel(x, y, z)
	return buildat.world.get_voxel(x, y, z)
end
"#
);

/// The examples' bot (`luabot`): each step in turn, each logging `ok
/// STEP: ...` or `FAILED STEP: why`; then leaves (exit 0) if all passed.
const EXAMPLES_BOT: &str = r#"
local function hello()
	main.chat("/hello")
	wait_until("/hello's answer", function()
		return said("hi there #")
	end)
	return said("hi there #")
end

-- Above my head (air: the spawn is on its column's highest ground).
local function bouncer(x, y, z)
	local by = y + 2
	main.place(x, by, z, "lua_bouncer")
	wait_until("the bouncer with a torch on it", function()
		return voxel(x, by, z) == "lua_bouncer" and voxel(x, by + 1, z) == "torch"
	end)
	sleep(0.3)
	main.use(x, by, z)
	wait_until("using the bouncer announced", function()
		return said("luabot bounces (")
	end)
	sleep(0.3)
	main.dig(x, by, z)
	local gone = string.format("the bouncer at %d,%d,%d is gone", x, by, z)
	wait_until("digging the bouncer announced", function()
		return said(gone)
	end)
	return string.format("at %d,%d,%d: torch, %s, %s", x, by, z, said("luabot bounces ("), gone)
end

-- /seeds, then the grass the console gave me crafted into seeds.
local function garden_items()
	main.chat("/seeds")
	wait_until("/seeds' answer and 3 seeds", function()
		return said("gave luabot 3 seeds") ~= nil and inv.count("seed") == 3
	end)
	wait_until("the grass given on the console", function()
		return inv.find("grass") ~= nil
	end)
	local from = inv.find("grass")
	local ok, reason = await(function(cb)
		inv.move({ owner = ME, list = "main", index = from }, { owner = ME, list = "craft", index = 1 }, 1, cb)
	end)
	if not ok then
		error("moving grass into my craft grid: " .. tostring(reason), 0)
	end
	wait_until("a craft preview", function()
		return inv.preview(ME) ~= nil
	end, 10)
	local preview = inv.preview(ME)
	local to = inv.find("seed")
	ok, reason = await(function(cb)
		inv.craft(ME, { owner = ME, list = "main", index = to }, cb)
	end)
	if not ok then
		error("crafting " .. preview.name .. ": " .. tostring(reason), 0)
	end
	wait_until("the crafted seeds", function()
		return inv.count("seed") == 5
	end, 10)
	return string.format("given 3 seeds, grass crafts %s %d, now %d seeds", preview.name, preview.count, inv.count("seed"))
end

-- Grass with dirt on it, in the air beside me: the ABM turns the dirt
-- (in the open) into grass.
local function garden_abm(x, y, z)
	local gx, gz = x + 3, z
	for gy = y + 1, y + 12 do
		if voxel(gx, gy, gz) == "air" and voxel(gx, gy + 1, gz) == "air" and voxel(gx, gy + 2, gz) == "air" then
			main.place(gx, gy, gz, "grass")
			wait_until("the grass placed", function()
				return voxel(gx, gy, gz) == "grass"
			end, 10)
			sleep(0.3)
			main.place(gx, gy + 1, gz, "dirt")
			wait_until("the dirt placed", function()
				return voxel(gx, gy + 1, gz) == "dirt"
			end, 10)
			local placed = os.clock()
			wait_until("the dirt turning into grass", function()
				return voxel(gx, gy + 1, gz) == "grass"
			end, 90)
			return string.format("dirt at %d,%d,%d became grass", gx, gy + 1, gz)
		end
	end
	error("no air beside me", 0)
end

-- A node that goes round: its x and z each spread over more than 6 (a
-- circle of radius 4), seen at 10 places at least.
local function circler(y)
	local seen = {}
	local found = nil
	wait_until("a node going round", function()
		for id, node in buildat.nodes.each() do
			local s = seen[id]
			if s == nil then
				s = { n = 0, minx = node.x, maxx = node.x, minz = node.z, maxz = node.z }
				seen[id] = s
			end
			local key = string.format("%.2f,%.2f", node.x, node.z)
			if s.key ~= key then
				s.key, s.n = key, s.n + 1
			end
			s.minx, s.maxx = math.min(s.minx, node.x), math.max(s.maxx, node.x)
			s.minz, s.maxz = math.min(s.minz, node.z), math.max(s.maxz, node.z)
			s.y = node.y
			if s.n >= 10 and s.maxx - s.minx > 6 and s.maxz - s.minz > 6 then
				found = s
				return true
			end
		end
		return false
	end, 90)
	return string.format("places %d spread %.2f %.2f height %.2f", found.n, found.maxx - found.minx,
		found.maxz - found.minz, found.y - y)
end

local function play()
	wait_until("spawning and my inventory", function()
		return main.position() ~= nil and inv.list(ME, "main") ~= nil
	end, 120)
	local px, py, pz = main.position()
	local x, y, z = math.floor(px), math.floor(py), math.floor(pz)
	log:info(string.format("spawned at %.2f,%.2f,%.2f", px, py, pz))
	local all = true
	local function step(name, f, ...)
		local ok, what = pcall(f, ...)
		if ok then
			log:info("ok " .. name .. ": " .. tostring(what))
		else
			all = false
			log:error("FAILED " .. name .. ": " .. tostring(what))
		end
		sleep(1.1)
	end
	step("hello", hello)
	step("bouncer", bouncer, x, y, z)
	step("garden items", garden_items)
	step("garden abm", garden_abm, x, y, z)
	step("circler", circler, py)
	if all then
		log:info("all done")
		buildat.disconnect()
	else
		fail("a step failed")
	end
end

co = coroutine.create(play)
resume()
"#;

/// The live-edit bot (`livebot`): says /hello every 1.1 s (a player may
/// send 5 lines in 5 s) until an answer holds "bye #", then leaves.
const LIVE_BOT: &str = r#"
local function play()
	wait_until("spawning", function()
		return main.position() ~= nil
	end, 120)
	log:info("spawned")
	while not said("bye #") do
		main.chat("/hello")
		sleep(1.1)
	end
	log:info("told bye")
	buildat.disconnect()
end

co = coroutine.create(play)
resume()
"#;

/// The real headless client running a bot script, every line it writes
/// kept; killed on drop.
struct Bot {
    child: Child,
    lines: Receiver<String>,
    seen: Vec<String>,
    _dir: tempfile::TempDir,
}

impl Bot {
    /// `BOT_PRELUDE` then `script`, as player `name`.
    fn start(address: &str, name: &str, script: &str) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join(format!("{name}.lua"));
        let text = format!("local BOT_NAME = {name:?}\n{BOT_PRELUDE}\n{script}");
        std::fs::write(&path, text).expect("the bot script");
        let mut child = Command::new(client_binary())
            .args(["--connect", address, "--cache"])
            .arg(dir.path().join("cache"))
            .args(["--name", name, "-v", "--script"])
            .arg(&path)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run buildat-client");
        let lines = lines_of(&mut child);
        Self {
            child,
            lines,
            seen: Vec::new(),
            _dir: dir,
        }
    }

    /// Waits for a line, from the `from`-th on, holding `needle`.
    fn wait_for(&mut self, from: usize, needle: &str, timeout: Duration) -> Option<String> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(line) = self.seen.get(from..)?.iter().find(|l| l.contains(needle)) {
                return Some(line.clone());
            }
            let left = deadline.checked_duration_since(Instant::now())?;
            match self
                .lines
                .recv_timeout(left.min(Duration::from_millis(200)))
            {
                Ok(line) => self.seen.push(line),
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    return self
                        .seen
                        .get(from..)?
                        .iter()
                        .find(|l| l.contains(needle))
                        .cloned();
                }
            }
        }
    }

    /// Waits for the client to exit (killed after `timeout`): its exit code.
    fn finish(&mut self, timeout: Duration) -> Option<i32> {
        let deadline = Instant::now() + timeout;
        let status = loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                break status.code();
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                break None;
            }
            while let Ok(line) = self.lines.recv_timeout(Duration::from_millis(100)) {
                self.seen.push(line);
            }
        };
        while let Ok(line) = self.lines.recv_timeout(Duration::from_millis(200)) {
            self.seen.push(line);
        }
        status
    }

    fn text(&self) -> String {
        self.seen.join("\n")
    }
}

impl Drop for Bot {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The number right after `after` in `line`.
fn number_after(line: &str, after: &str) -> u64 {
    line.split(after)
        .nth(1)
        .map(|rest| {
            rest.chars()
                .take_while(char::is_ascii_digit)
                .collect::<String>()
        })
        .and_then(|digits| digits.parse().ok())
        .unwrap_or_else(|| panic!("no number after {after:?} in {line:?}"))
}

#[test]
fn the_lua_examples_work_with_a_real_client() {
    let scratch = setup(&[]);
    let (mut server, address) = start(&scratch, &[examples()], &[]);
    // Grass for the bot to craft, in its inventory before it joins.
    console(&mut server, "give luabot grass 1", "gave 1 grass");

    let mut bot = Bot::start(&address, "luabot", EXAMPLES_BOT);
    let status = bot.finish(Duration::from_secs(400));
    let text = bot.text();
    server.pump();
    let context = || format!("--- the bot:\n{text}\n--- the server:\n{}", server.output());
    let step = |name: &str| {
        text.lines()
            .find_map(|l| l.split(&format!("luabot: ok {name}: ")).nth(1))
            .map(str::to_string)
    };
    let missing: Vec<&str> = ["hello", "bouncer", "garden items", "garden abm", "circler"]
        .into_iter()
        .filter(|name| step(name).is_none())
        .collect();
    assert!(
        missing.is_empty(),
        "steps failed: {missing:?}\n{}",
        context()
    );

    // hello: its setting's words and the first count.
    assert!(
        step("hello").unwrap().contains("hi there #1"),
        "{}",
        context()
    );
    // bouncer: the torch it put on itself touched it (before the player used it).
    let bouncer = step("bouncer").unwrap();
    assert!(bouncer.contains("luabot bounces ("), "{}", context());
    assert!(
        server.output().contains("lua_bouncer ") && server.output().contains(" touched (1)"),
        "the bouncer counts touches:\n{}",
        context()
    );
    // garden: given, crafted from grass (shapeless, two seeds).
    let items = step("garden items").unwrap();
    assert!(
        items.contains("grass crafts seed 2, now 5 seeds"),
        "{items}\n{}",
        context()
    );
    // circler: 4 around, 2 above the spawn.
    let circler = step("circler").unwrap();
    let spread: Vec<f64> = circler
        .split("spread ")
        .nth(1)
        .and_then(|rest| rest.split(" height").next())
        .map(|s| s.split(' ').filter_map(|n| n.parse().ok()).collect())
        .unwrap_or_default();
    assert!(
        spread.len() == 2 && spread.iter().all(|s| *s <= 8.2),
        "a circle of radius 4: {circler}\n{}",
        context()
    );
    let height: f64 = circler
        .split("height ")
        .nth(1)
        .and_then(|h| h.trim().parse().ok())
        .unwrap_or(f64::NAN);
    assert!(
        (height - 2.0).abs() <= 1.0,
        "about 2 above the spawn: {circler}\n{}",
        context()
    );
    assert_eq!(status, Some(0), "{}", context());

    // On the console too, the count going on.
    console(&mut server, "hello", "hi there #2");
}

/// `hello`'s init.lua (a copy) with its answer's `" #"` replaced by `with`.
fn answer_with(original: &str, with: &str) -> String {
    let edited = original.replace(r#"text .. " #""#, with);
    assert_ne!(
        edited, original,
        "hello's init.lua answers `text .. \" #\"`"
    );
    edited
}

#[test]
fn an_edit_goes_live_with_a_client_connected_and_a_broken_edit_keeps_the_old_version() {
    let scratch = setup(&["hello"]);
    let init = lua_mods(&scratch).join("hello/server_lua/init.lua");
    let original = std::fs::read_to_string(&init).expect("hello's init.lua");
    let (mut server, address) = start(&scratch, &[], &[]);
    let mut bot = Bot::start(&address, "livebot", LIVE_BOT);
    bot.wait_for(0, "chat: hi there #", Duration::from_secs(180))
        .unwrap_or_else(|| {
            panic!(
                "/hello answers:\n{}\n--- server:\n{}",
                bot.text(),
                server.output()
            )
        });

    // A good edit: live while the bot keeps asking, the count going on.
    let edited = answer_with(&original, r#"text .. ", edited #""#);
    let from = bot.seen.len();
    server.pump();
    let from_server = server.seen.len();
    let saved = Instant::now();
    write(&init, &edited);
    let reloaded = server
        .wait_for_from(
            from_server,
            "lua mod hello reloaded",
            Duration::from_secs(30),
        )
        .unwrap_or_else(|| panic!("the edit reloads hello:\n{}", server.output()));
    eprintln!("reloaded {:?} after saving: {reloaded}", saved.elapsed());
    let first = bot
        .wait_for(from, "chat: hi there, edited #", Duration::from_secs(30))
        .unwrap_or_else(|| {
            panic!(
                "the edit goes live:\n{}\n--- server:\n{}",
                bot.text(),
                server.output()
            )
        });
    eprintln!("the edit answered {:?} after saving", saved.elapsed());
    let last_old = bot
        .seen
        .iter()
        .filter(|l| l.contains("chat: hi there #"))
        .map(|l| number_after(l, "hi there #"))
        .max()
        .expect("old answers");
    assert_eq!(
        number_after(&first, "edited #"),
        last_old + 1,
        "the count is kept over the reload:\n{}",
        bot.text()
    );

    // Broken edits: the old version keeps answering, the error is logged
    // with file and line.
    for (broken, line) in [
        (
            edited.replacen('\n', "\nlocal broken = = 1\n", 1),
            "init.lua:2",
        ),
        (
            edited.replacen('\n', "\nerror(\"broken on purpose\")\n", 1),
            "init.lua:2: broken on purpose",
        ),
    ] {
        server.pump();
        let from_server = server.seen.len();
        write(&init, &broken);
        let logged = server
            .wait_for_from(from_server, line, Duration::from_secs(30))
            .unwrap_or_else(|| panic!("the broken edit logs {line:?}:\n{}", server.output()));
        eprintln!("the broken edit logged: {logged}");
        let from = bot.seen.len();
        bot.wait_for(from, "chat: hi there, edited #", Duration::from_secs(30))
            .unwrap_or_else(|| {
                panic!(
                    "the old version answers after {line:?}:\n{}\n--- server:\n{}",
                    bot.text(),
                    server.output()
                )
            });
        console(&mut server, "hello", "hi there, edited #");
    }

    // The last edit says bye: the bot, connected all along, leaves.
    write(&init, &answer_with(&original, r#""bye #""#));
    let status = bot.finish(Duration::from_secs(60));
    let text = bot.text();
    assert!(
        text.contains("livebot: told bye"),
        "{text}\n--- server:\n{}",
        server.output()
    );
    let last_edited = text
        .lines()
        .filter(|l| l.contains("chat: hi there, edited #"))
        .map(|l| number_after(l, "edited #"))
        .max()
        .expect("edited answers");
    let bye = text
        .lines()
        .find(|l| l.contains("chat: bye #"))
        .map(|l| number_after(l, "bye #"))
        .expect("a bye");
    // (The console's /hello counted too.)
    assert!(bye > last_edited, "the count goes on: {text}");
    assert_eq!(status, Some(0), "{text}\n--- server:\n{}", server.output());
}

/// The recipe bot (`crafter`): puts one grass in its craft grid and reads
/// the preview, takes it back and again, until the preview is 3 seeds
/// (the recipe as saved), then crafts them and leaves.
const RECIPE_BOT: &str = r#"
local previews = 0
inv.on_preview(function()
	previews += 1
end)

local function slot(list, index)
	return { owner = ME, list = list, index = index }
end

local function move(from, to, n)
	local ok, reason = await(function(cb)
		inv.move(from, to, n, cb)
	end)
	if not ok then
		error("moving " .. from.list .. " " .. from.index .. " to " .. to.list .. " " .. to.index .. ": " .. tostring(reason), 0)
	end
end

local function empty_main_slot()
	for i, stack in ipairs(inv.list(ME, "main") or {}) do
		if stack == false then
			return i
		end
	end
	error("no empty slot", 0)
end

local function play()
	wait_until("spawning and my grass", function()
		return main.position() ~= nil and inv.count("grass") == 3
	end, 120)
	local deadline = os.clock() + 120
	while true do
		local before = previews
		move(slot("main", inv.find("grass")), slot("craft", 1), 1)
		wait_until("a preview", function()
			return previews > before and inv.preview(ME) ~= nil
		end, 10)
		local preview = inv.preview(ME)
		log:info("preview " .. preview.name .. " " .. preview.count)
		if preview.name == "seed" and preview.count == 3 then
			break
		end
		if os.clock() > deadline then
			error("the recipe did not change", 0)
		end
		move(slot("craft", 1), slot("main", inv.find("grass")), 1)
		sleep(0.5)
	end
	local ok, reason = await(function(cb)
		inv.craft(ME, slot("main", empty_main_slot()), cb)
	end)
	if not ok then
		error("crafting: " .. tostring(reason), 0)
	end
	wait_until("the seeds", function()
		return inv.count("seed") == 3
	end, 10)
	log:info("crafted " .. inv.count("seed") .. " seeds")
	buildat.disconnect()
end

co = coroutine.create(play)
resume()
"#;

#[test]
fn a_saved_recipe_replaces_the_old_one_for_a_connected_player() {
    let scratch = setup(&["garden"]);
    let init = lua_mods(&scratch).join("garden/server_lua/init.lua");
    let original = std::fs::read_to_string(&init).expect("garden's init.lua");
    let (mut server, address) = start(&scratch, &[], &[]);
    console(&mut server, "give crafter grass 3", "gave 3 grass");
    let mut bot = Bot::start(&address, "crafter", RECIPE_BOT);
    bot.wait_for(0, "crafter: preview seed 2", Duration::from_secs(180))
        .unwrap_or_else(|| {
            panic!(
                "grass crafts 2 seeds:\n{}\n--- server:\n{}",
                bot.text(),
                server.output()
            )
        });
    let edited = original.replace(r#"output = "seed 2""#, r#"output = "seed 3""#);
    assert_ne!(edited, original, "garden's recipe makes \"seed 2\"");
    write(&init, &edited);
    let status = bot.finish(Duration::from_secs(180));
    let text = bot.text();
    let context = || format!("{text}\n--- server:\n{}", server.output());
    assert!(text.contains("crafter: crafted 3 seeds"), "{}", context());
    assert_eq!(status, Some(0), "{}", context());
}

/// Writes `text` to `path` (a whole new file, as an editor saves).
fn write(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
}

/// A Lua mod named `name` in [`lua_mods`]: `init` as its
/// `server_lua/init.lua`.
fn add_lua_mod(scratch: &Scratch, name: &str, dependencies: &[&str], init: &str) -> PathBuf {
    let deps: Vec<String> = std::iter::once("lua")
        .chain(dependencies.iter().copied())
        .map(|d| format!("{{\"module\": \"{d}\"}}"))
        .collect();
    let dir = lua_mods(scratch).join(name);
    std::fs::create_dir_all(dir.join("server_lua")).expect("server_lua");
    write(
        &dir.join("meta.json"),
        &format!(
            "{{\"disable_rust\": true, \"dependencies\": [{}]}}",
            deps.join(", ")
        ),
    );
    write(&dir.join("server_lua").join("init.lua"), init);
    dir
}

/// An entity step that never returns (line 4).
const SPINNER: &str = r#"buildat.register_entity("spinner", {
	keep = 1, place = function() return {x = 0, y = 40, z = 0} end,
	on_step = function(self)
		while true do end
	end,
})
"#;

/// A command that eats memory (lines 4-5).
const BOMB: &str = r#"buildat.register_chatcommand("bomb", {description = "Eats memory", func = function()
	local hoard = {}
	while true do
		hoard[#hoard + 1] = string.rep("x", 1000000) .. #hoard
	end
end})
"#;

/// An error on every tick (line 3).
const GRUMBLER: &str = r#"local function again()
	buildat.after(0, again)
	error("grumbling on purpose")
end
buildat.after(0, again)
"#;

#[test]
fn a_runaway_mod_is_stopped_and_named_and_the_game_goes_on() {
    let scratch = setup(&["hello"]);
    let spinner_dir = add_lua_mod(&scratch, "spinner", &["voxelworld"], SPINNER);
    add_lua_mod(&scratch, "bomb", &[], BOMB);
    add_lua_mod(&scratch, "grumbler", &[], GRUMBLER);
    let (mut server, address) = start(&scratch, &[], &["lua.memory_mb=16"]);

    // Where a stop does not say what it should, the rest is still tried;
    // all is told at the end.
    let mut problems = Vec::new();
    let mut stopped = |server: &mut Server, name: &str, wanted: &[&str]| {
        let found = server
            .wait_for_from(
                0,
                &format!("lua mod {name} stopped"),
                Duration::from_secs(60),
            )
            .unwrap_or_else(|| panic!("{name} is stopped:\n{}", server.output()));
        if !wanted.iter().any(|w| found.contains(w)) {
            problems.push(format!("{name}'s stop names one of {wanted:?}: {found}"));
        }
        found
    };
    // The endless step: stopped by the time limit, where it looped.
    let spinner = stopped(&mut server, "spinner", &["init.lua:4"]);
    assert!(spinner.contains("time limit"), "{spinner}");
    // The memory bomb, set off on the console: stopped where it ate.
    server.send("bomb");
    let bomb = stopped(&mut server, "bomb", &["init.lua:3", "init.lua:4"]);
    assert!(bomb.contains("memory limit"), "{bomb}");
    // A stopped mod's command says so.
    console(&mut server, "bomb", "stopped");

    // The game goes on: another mod's command answers, a player joins and
    // is served.
    console(&mut server, "hello", "hi there #1");
    let mut client = join(&address, "bystander");
    ping(&mut client, b"still here");

    // Saving a stopped mod's file loads it again.
    write(
        &spinner_dir.join("server_lua").join("init.lua"),
        "buildat.register_chatcommand(\"spin\", {func = function() return true, \"fixed\" end})\n",
    );
    console_until(&mut server, "spin", "fixed", Duration::from_secs(30));

    // The error on every tick (an `after` job scheduled while loading):
    // stopped after too many, with the error's line.
    let grumbler = stopped(&mut server, "grumbler", &["init.lua:3"]);
    assert!(grumbler.contains("grumbling on purpose"), "{grumbler}");
    // Each stop is logged once.
    server.pump();
    for name in ["spinner", "grumbler", "bomb"] {
        let count = server
            .lines_with(0, &format!("lua mod {name} stopped"))
            .len();
        assert_eq!(
            count,
            1,
            "{name}'s stop is logged once:\n{}",
            server.output()
        );
    }
    ping(&mut client, b"still here after all");
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn a_mod_folder_dropped_into_a_running_server_loads_and_one_taken_away_unloads() {
    let scratch = setup(&[]);
    let (mut server, _address) = start_with(&scratch, &[], &[], true);
    server.expect_line("watching module folders", Duration::from_secs(30));
    // Copied elsewhere, then moved in whole (as a file manager drops it).
    let staged = scratch.dir.path().join("staged_hello");
    copy_dir(&examples().join("hello"), &staged);
    let dir = lua_mods(&scratch).join("hello");
    std::fs::rename(&staged, &dir).expect("move the mod in");
    console_until(&mut server, "hello", "hi there #1", Duration::from_secs(60));
    server
        .wait_for_from(0, "lua mod hello loaded", Duration::from_secs(10))
        .unwrap_or_else(|| panic!("its load is logged:\n{}", server.output()));

    std::fs::remove_dir_all(&dir).expect("take the mod away");
    server
        .wait_for_from(0, "lua mod hello unloaded", Duration::from_secs(60))
        .unwrap_or_else(|| panic!("the mod taken away unloads:\n{}", server.output()));
    server.send("hello");
    assert!(
        server
            .wait_for("hi there #", Duration::from_secs(3))
            .is_none(),
        "/hello is gone with its mod:\n{}",
        server.output()
    );
}

/// Sends a console line every second until a line holding `answer` comes.
fn console_until(server: &mut Server, line: &str, answer: &str, timeout: Duration) {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        server.send(line);
        if server.wait_for(answer, Duration::from_secs(1)).is_some() {
            return;
        }
    }
    panic!("'{line}' answers '{answer}':\n{}", server.output());
}
