//! The world stream and the default game end to end: the real
//! `buildat-server` with `__loader`, `network`, `client_file`,
//! `voxelworld`, `worldgen` and `main` (copied into a temporary module
//! path, `--set voxelworld.view_radius=2`), and `buildat-client` processes
//! running the game's `main/client_lua/init.lua` plus bot scripts written
//! here:
//!
//! - a joining client receives the chunk it stands in first, then every
//!   chunk within the radius exactly once (the closing summary line), and
//!   prints the maps;
//! - two clients: one digs and places next to its spawn point, the other
//!   sees each change through `buildat.world.get_voxel`; after a server
//!   restart on the same world a third client finds the edits;
//! - a client that stops acknowledging stops receiving chunks at the
//!   server's budget but stays connected, and resuming brings the rest.
//!
//! The server binary is looked up next to this test's executable
//! (`target/<profile>/buildat-server`): `cargo test --workspace` builds it.
//! The tests run one at a time (each starts its own server).

use std::process::Output;
use std::time::{Duration, Instant};

use crate::common::Server;
use crate::common::game::{Running, SERIAL, Setup, spawn_position, text};

const RADIUS: i32 = 2;

/// (held, received, updates, first chunk) from the world summary line.
fn world_line(stderr: &str) -> (u64, u64, u64, Option<[i32; 3]>) {
    let line = stderr
        .lines()
        .find(|l| l.contains("world: held "))
        .unwrap_or_else(|| panic!("no world line in:\n{stderr}"));
    let after = |key: &str| -> &str {
        line.split(key)
            .nth(1)
            .unwrap_or_else(|| panic!("{key:?} missing in {line}"))
    };
    let number = |key: &str| -> u64 {
        after(key)
            .split(|c: char| !c.is_ascii_digit())
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no number after {key:?} in {line}"))
    };
    let first = after("first chunk ");
    let first = first
        .strip_prefix('(')
        .and_then(|f| f.split(')').next())
        .map(|f| {
            let v: Vec<i32> = f
                .split(',')
                .map(|n| n.parse().expect("coordinate"))
                .collect();
            [v[0], v[1], v[2]]
        });
    assert!(!line.contains("malformed"), "{line}");
    (number("held "), number("received "), number("("), first)
}

fn chunks_in_radius() -> usize {
    let r = RADIUS;
    (-r..=r)
        .flat_map(|z| (-r..=r).flat_map(move |y| (-r..=r).map(move |x| [x, y, z])))
        .filter(|[x, y, z]| x * x + y * y + z * z <= r * r)
        .count()
}

/// Lines of `stderr` containing `tag`, each cut after it.
fn tagged(stderr: &str, tag: &str) -> Vec<String> {
    stderr
        .lines()
        .filter_map(|l| l.split(tag).nth(1).map(|s| s.trim().to_string()))
        .collect()
}

fn check_exit(out: &Output, what: &str, server: &mut Server) -> String {
    let stderr = text(&out.stderr);
    eprintln!("--- {what}:\n{stderr}");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{what} failed:\n{stderr}\n--- server:\n{}",
        server.output()
    );
    stderr
}

// ---------------------------------------------------------------------------
// (a) Joining: the own chunk first, then the radius once each
// ---------------------------------------------------------------------------

const RADIUS_BOT: &str = r#"
local main = require("buildat/module/main")
local log = buildat.Logger("radius")
local R = tonumber("@RADIUS@")
main.on_spawn(function(_, sx, sy, sz)
    local cx, cy, cz = math.floor(sx / 32), math.floor(sy / 32), math.floor(sz / 32)
    local want = {}
    for dz = -R, R do for dy = -R, R do for dx = -R, R do
        if dx * dx + dy * dy + dz * dz <= R * R then
            table.insert(want, { cx + dx, cy + dy, cz + dz })
        end
    end end end
    local full_at = nil
    buildat.set_interval(0.1, function()
        if full_at == nil and buildat.world.chunk_count() >= #want then
            full_at = os.clock()
        end
        -- A second more, to catch any chunk sent twice.
        if full_at ~= nil and os.clock() - full_at > 1.0 then
            local held = 0
            for _, c in ipairs(want) do
                if buildat.world.get_voxel(c[1] * 32, c[2] * 32, c[3] * 32) ~= nil then
                    held += 1
                end
            end
            log:info("radius check: " .. held .. " of " .. #want .. " chunks within the radius held")
            buildat.disconnect()
        end
    end)
end)
"#;

#[test]
fn a_joining_client_gets_its_own_chunk_first_then_the_radius_once_each() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let setup = Setup::new();
    let (mut server, address) = setup.start(&[]);
    let script = setup.script(
        "radius.lua",
        &RADIUS_BOT.replace("@RADIUS@", &RADIUS.to_string()),
    );
    let png = setup.scratch.path().join("map.png");
    let started = Instant::now();
    let out = setup
        .command(
            &address,
            "alice",
            &script,
            &["--ascii-map", "--map", &png.display().to_string()],
        )
        .output()
        .expect("run buildat-client");
    let took = started.elapsed();
    let stderr = check_exit(&out, "joining client", &mut server);
    let want = chunks_in_radius();
    assert!(
        stderr.contains(&format!(
            "radius check: {want} of {want} chunks within the radius held"
        )),
        "{stderr}"
    );
    let (held, received, updates, first) = world_line(&stderr);
    assert_eq!(
        (held, received, updates),
        (want as u64, want as u64, 0),
        "every chunk within the radius once, no more"
    );
    let spawn = spawn_position(&stderr);
    let spawn_chunk = spawn.map(|v| (v.floor() as i32).div_euclid(32));
    assert_eq!(
        first,
        Some(spawn_chunk),
        "the chunk it stands in comes first"
    );
    eprintln!("joined and held the whole radius in {took:?} (including a 1 s wait)");

    // The maps, centred on the player.
    let stdout = text(&out.stdout);
    println!("{stdout}");
    assert!(stdout.starts_with("map: top-down"), "{stdout}");
    let focus = spawn.map(|v| v.floor() as i32);
    assert!(
        stdout.contains(&format!(
            "focus ({},{},{}) is @",
            focus[0], focus[1], focus[2]
        )),
        "{stdout}"
    );
    let rows: Vec<&str> = stdout.lines().filter(|l| l.starts_with('|')).collect();
    assert_eq!(rows.len(), 49);
    assert!(rows[24].chars().nth(25) == Some('@'), "{}", rows[24]);
    let terrain = rows
        .iter()
        .flat_map(|r| r.chars())
        .filter(|c| "#\"%.~*".contains(*c))
        .count();
    assert!(
        terrain > 49 * 49 / 2,
        "most columns show terrain:\n{stdout}"
    );
    let decoder = png::Decoder::new(std::io::BufReader::new(
        std::fs::File::open(&png).expect("the PNG map"),
    ));
    let info = decoder.read_info().expect("a PNG").info().clone();
    let side = 49 * buildat_client::world::PNG_PIXELS_PER_COLUMN;
    assert_eq!((info.width, info.height), (side, side));
    assert_eq!(
        server.stop(Duration::from_secs(30)),
        Some(0),
        "{}",
        server.output()
    );
}

// ---------------------------------------------------------------------------
// (b) Two clients see each other's edits; the edits survive a restart
// ---------------------------------------------------------------------------

/// Digs A (the top of the column two east of the spawn point), places stone
/// on B (two west), digs that stone again and places sand there; one edit a
/// second, each waited for (its own edit in `main:edits`). Prints `EDIT x,y,z name`.
/// B stands on the ground beside the player, so every target is in sight
/// whatever the terrain (the server refuses edits out of sight).
const DIGGER_BOT: &str = r#"
local main = require("buildat/module/main")
local log = buildat.Logger("digger")
local function top(x, z, near)
    for y = math.floor(near) + 8, math.floor(near) - 16, -1 do
        local name = buildat.world.get_voxel(x, y, z)
        if name ~= nil and name ~= "air" then return y end
    end
    return nil
end
local plan, step, waiting, last = nil, 1, false, 0
main.on_edit(function(who, x, y, z, name)
    if who ~= main.peer() or plan == nil or not waiting then return end
    local s = plan[step]
    if x == s[2] and y == s[3] and z == s[4] then
        log:info("EDIT " .. x .. "," .. y .. "," .. z .. " " .. name)
        waiting, last, step = false, os.clock(), step + 1
    end
end)
main.on_refused(function(reason)
    log:error("REFUSED " .. reason)
    buildat.disconnect()
end)
main.on_spawn(function(_, sx, sy, sz)
    local bx, bz = math.floor(sx), math.floor(sz)
    buildat.set_interval(0.1, function()
        if plan == nil then
            local ya, yb = top(bx + 2, bz, sy), top(bx - 2, bz, sy)
            if ya == nil or yb == nil then return end
            plan = {
                { "dig", bx + 2, ya, bz },
                { "place", bx - 2, yb + 1, bz, "stone" },
                { "dig", bx - 2, yb + 1, bz },
                { "place", bx - 2, yb + 1, bz, "sand" },
            }
            last = os.clock()
        end
        if waiting or os.clock() - last < 1.0 then return end
        local s = plan[step]
        if s == nil then
            log:info("DONE")
            buildat.disconnect()
            return
        end
        if s[1] == "dig" then main.dig(s[2], s[3], s[4]) else main.place(s[2], s[3], s[4], s[5]) end
        waiting = true
    end)
end)
"#;

/// Watches every edit (`main:edits`) and prints `SEEN x,y,z name` once its own
/// world view (the chunk stream) shows the new voxel; leaves after 4.
const WATCHER_BOT: &str = r#"
local main = require("buildat/module/main")
local log = buildat.Logger("watcher")
local pending, seen = {}, 0
main.on_edit(function(_, x, y, z, name)
    table.insert(pending, { x, y, z, name })
end)
buildat.set_interval(0.05, function()
    -- In order: a later edit of the same voxel waits for the earlier one.
    local p = pending[1]
    if p ~= nil and buildat.world.get_voxel(p[1], p[2], p[3]) == p[4] then
        log:info("SEEN " .. p[1] .. "," .. p[2] .. "," .. p[3] .. " " .. p[4])
        table.remove(pending, 1)
        seen += 1
        if seen == 4 then
            buildat.set_timeout(0.5, buildat.disconnect)
        end
    end
end)
"#;

/// Prints `AFTER x,y,z name` for each voxel once held, then leaves.
const CHECKER_BOT: &str = r#"
local log = buildat.Logger("checker")
require("buildat/module/main")
local voxels = { @VOXELS@ }
local done = {}
buildat.set_interval(0.1, function()
    local left = 0
    for i, v in ipairs(voxels) do
        if not done[i] then
            local name = buildat.world.get_voxel(v[1], v[2], v[3])
            if name ~= nil then
                log:info("AFTER " .. v[1] .. "," .. v[2] .. "," .. v[3] .. " " .. name)
                done[i] = true
            else
                left += 1
            end
        end
    end
    if left == 0 then buildat.disconnect() end
end)
"#;

#[test]
fn two_clients_share_edits_and_the_edits_survive_a_restart() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let setup = Setup::new();
    let (mut server, address) = setup.start(&[]);
    let watcher_script = setup.script("watcher.lua", WATCHER_BOT);
    let mut watcher = Running::spawn(setup.command(&address, "watcher", &watcher_script, &["-v"]));
    watcher
        .wait_for("spawned at ", Duration::from_secs(120))
        .unwrap_or_else(|| panic!("the watcher did not spawn:\n{}", server.output()));
    let digger_script = setup.script("digger.lua", DIGGER_BOT);
    let out = setup
        .command(&address, "digger", &digger_script, &[])
        .output()
        .expect("run the digger");
    let digger = check_exit(&out, "digger", &mut server);
    let edits = tagged(&digger, "EDIT ");
    assert_eq!(edits.len(), 4, "four edits:\n{digger}");
    assert!(digger.contains("DONE"));
    let (code, watched) = watcher.finish(Duration::from_secs(60));
    eprintln!("--- watcher:\n{watched}");
    assert_eq!(code, Some(0), "the watcher saw everything and left");
    assert_eq!(
        tagged(&watched, "SEEN "),
        edits,
        "the watcher saw each change in its world view, in order"
    );
    let (_, _, updates, _) = world_line(&watched);
    assert_eq!(updates, 0, "no chunk was resent whole");
    let voxel_updates: usize = watched
        .split(" voxel updates")
        .next()
        .and_then(|before| before.rsplit("; ").next())
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0);
    assert!(
        voxel_updates >= 2,
        "the changed voxels came as single-voxel updates: {voxel_updates}"
    );
    assert!(
        watched.contains("player digger"),
        "the watcher saw the digger"
    );

    // Restart on the same world: the last edit of each voxel is there.
    assert_eq!(
        server.stop(Duration::from_secs(30)),
        Some(0),
        "{}",
        server.output()
    );
    drop(server);
    let mut last: Vec<(String, String)> = Vec::new();
    for edit in &edits {
        let (pos, name) = edit.split_once(' ').expect("x,y,z name");
        last.retain(|(p, _)| p != pos);
        last.push((pos.to_string(), name.to_string()));
    }
    let voxels: Vec<String> = last.iter().map(|(p, _)| format!("{{{p}}}")).collect();
    let checker_script = setup.script(
        "checker.lua",
        &CHECKER_BOT.replace("@VOXELS@", &voxels.join(", ")),
    );
    let (mut server, address) = setup.start(&[]);
    let out = setup
        .command(&address, "checker", &checker_script, &[])
        .output()
        .expect("run the checker");
    let checked = check_exit(&out, "checker after the restart", &mut server);
    let mut after = tagged(&checked, "AFTER ");
    after.sort();
    let mut expected: Vec<String> = last.iter().map(|(p, n)| format!("{p} {n}")).collect();
    expected.sort();
    assert_eq!(after, expected, "the edits persisted");
    assert_eq!(
        server.stop(Duration::from_secs(30)),
        Some(0),
        "{}",
        server.output()
    );
}

// ---------------------------------------------------------------------------
// (c) Flow control: no acks, no chunks; still connected; resume
// ---------------------------------------------------------------------------

const BUDGET: u32 = 16;

/// Stops acking at once; once the budget's worth arrived, watches the count
/// for 1.5 s (`PAUSED first last`), resumes, and leaves once the whole
/// radius arrived and a second more passed, or when the count has not moved
/// for 5 s (`RESUMED n`).
const PAUSING_BOT: &str = r#"
local log = buildat.Logger("pausing")
buildat.world.set_acking(false)
require("buildat/module/main")
local BUDGET = tonumber("@BUDGET@")
local WANT = tonumber("@WANT@")
local phase, first, since, last = "filling", 0, os.clock(), -1
buildat.set_interval(0.05, function()
    local n = buildat.world.chunks_received()
    if phase == "filling" then
        if n >= BUDGET then
            phase, first, since = "paused", n, os.clock()
        end
    elseif phase == "paused" then
        if os.clock() - since >= 1.5 then
            log:info("PAUSED " .. first .. " " .. n)
            buildat.world.set_acking(true)
            phase, since, last = "resumed", os.clock(), n
        end
    elseif n ~= last then
        last, since = n, os.clock()
    elseif os.clock() - since >= (n >= WANT and 1.0 or 5.0) then
        log:info("RESUMED " .. n)
        buildat.disconnect()
    end
end)
"#;

#[test]
fn a_client_that_stops_acking_stops_receiving_but_stays_connected() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let setup = Setup::new();
    let budget = format!("voxelworld.stream_budget={BUDGET}");
    let (mut server, address) = setup.start(&["--set", &budget]);
    let script = setup.script(
        "pausing.lua",
        &PAUSING_BOT
            .replace("@BUDGET@", &BUDGET.to_string())
            .replace("@WANT@", &chunks_in_radius().to_string()),
    );
    let out = setup
        .command(&address, "pausing", &script, &[])
        .output()
        .expect("run buildat-client");
    let stderr = check_exit(&out, "pausing client", &mut server);
    let paused = tagged(&stderr, "PAUSED ");
    assert_eq!(
        paused,
        [format!("{BUDGET} {BUDGET}")],
        "exactly the budget arrived, and nothing more for 1.5 s"
    );
    let want = chunks_in_radius();
    assert_eq!(
        tagged(&stderr, "RESUMED "),
        [want.to_string()],
        "resuming brought the rest of the radius"
    );
    let (held, received, updates, _) = world_line(&stderr);
    assert_eq!((held, received, updates), (want as u64, want as u64, 0));
    // It left by itself (exit 0, `buildat.disconnect()`), after receiving
    // more on the same connection: it stayed connected throughout.
    assert!(stderr.contains("disconnected (buildat.disconnect())"));
    assert_eq!(
        server.stop(Duration::from_secs(30)),
        Some(0),
        "{}",
        server.output()
    );
}
