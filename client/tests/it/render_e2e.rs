//! The renderer end to end, against the real server running the default
//! game (`common::game`):
//!
//! - offscreen: a screenshot from the player's eyes at spawn shows terrain
//!   (most pixels below the horizon are not sky, and many colours appear);
//!   then, with the camera aimed at a ground voxel near spawn, a bot digs
//!   that voxel and the next screenshot differs around the crosshair;
//!   against a TLS port a screenshot follows the client's one rule
//!   (loopback plaintext; as a remote server TLS with its key pinned), and
//!   with nothing to connect to it fails without writing a picture;
//!   with the `daytime` module a screenshot at midnight (set on the
//!   console) is much darker than one at noon from the same eyes;
//!   floors seen straight down through a water voxel a bot placed differ
//!   from the same floors dry and still differ from each other (water is
//!   seen through, not its own colour), and an eye inside that water sees
//!   a dark blue fog;
//! - window: under Xvfb, the window mode starts and survives 10 s of
//!   scripted input (keys, mouse motion, clicks, the wheel) from xdotool.
//!
//! Both need a Vulkan driver (mesa's lavapipe on CI, `.ci/run` installs
//! it); the window test needs `Xvfb` and `xdotool`: without them it fails
//! on CI (`CI` set) and is skipped elsewhere, saying so.

use std::io::Cursor;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use buildat_client::render::SKY;

use crate::common::game::{CLIENT, Running, SERIAL, Setup, text};
use crate::common::xvfb::{Xvfb, installed};

/// A decoded screenshot: width, height, RGB rows.
struct Image {
    width: usize,
    height: usize,
    rgb: Vec<u8>,
}

impl Image {
    fn read(path: &Path) -> Self {
        let bytes = std::fs::read(path).expect("screenshot written");
        let decoder = png::Decoder::new(Cursor::new(bytes));
        let mut reader = decoder.read_info().expect("a PNG");
        let mut rgb = vec![0; reader.output_buffer_size().expect("size")];
        let info = reader.next_frame(&mut rgb).expect("PNG data");
        assert_eq!(info.color_type, png::ColorType::Rgb);
        Self {
            width: info.width as usize,
            height: info.height as usize,
            rgb,
        }
    }

    fn pixel(&self, x: usize, y: usize) -> [u8; 3] {
        let at = (y * self.width + x) * 3;
        [self.rgb[at], self.rgb[at + 1], self.rgb[at + 2]]
    }
}

/// The sky as it lands in the sRGB screenshot.
fn sky_srgb() -> [u8; 3] {
    SKY.map(|c| {
        let s = if c <= 0.003_130_8 {
            c * 12.92
        } else {
            1.055 * c.powf(1.0 / 2.4) - 0.055
        };
        (s * 255.0).round() as u8
    })
}

fn is_sky(pixel: [u8; 3]) -> bool {
    let sky = sky_srgb();
    pixel
        .iter()
        .zip(sky)
        .all(|(&p, s)| (i32::from(p) - i32::from(s)).abs() <= 3)
}

/// Runs `--screenshot` with `extra` arguments; the stderr line describing
/// the shot.
fn screenshot(setup: &Setup, address: &str, path: &Path, extra: &[&str]) -> String {
    let out = Command::new(CLIENT)
        .args(["--connect", address, "--cache"])
        .arg(setup.cache())
        .args([
            "--name",
            "camera",
            "--size",
            "320x180",
            "--quit-after",
            "150",
            "--screenshot",
        ])
        .arg(path)
        .args(extra)
        .output()
        .expect("run buildat-client --screenshot");
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let line = stderr
        .lines()
        .find(|l| l.contains("screenshot written to"))
        .unwrap_or_else(|| panic!("no screenshot line:\n{stderr}"))
        .to_string();
    assert!(!line.contains("before the world settled"), "{line}");
    line
}

/// The eye position from a screenshot line's `camera X,Y,Z`.
fn camera_eye(line: &str) -> [f64; 3] {
    let v: Vec<f64> = line
        .split("camera ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .expect("camera position")
        .split(',')
        .map(|n| n.parse().expect("coordinate"))
        .collect();
    [v[0], v[1], v[2]]
}

/// Finds the top voxel of the column two voxels along +x of the spawn
/// point and prints it; with `DIG`, digs it and waits for the edit.
const DIGGER: &str = r#"
local main = require("buildat/module/main")
local log = buildat.Logger("digger")
local DIG = @DIG@
main.on_spawn(function(_, x, y, z)
    local tx, tz = math.floor(x) + 2, math.floor(z)
    local function find()
        for ty = math.floor(y) + 8, math.floor(y) - 16, -1 do
            local name = buildat.world.get_voxel(tx, ty, tz)
            if name ~= nil and name ~= "air" then
                return ty
            end
        end
        return nil
    end
    local function try()
        local ty = find()
        if ty == nil then
            buildat.set_timeout(0.2, try)
            return
        end
        log:info("top " .. tx .. "," .. ty .. "," .. tz)
        if not DIG then
            buildat.disconnect()
            return
        end
        main.on_edit(function(_, ex, ey, ez)
            if ex == tx and ey == ty and ez == tz then
                log:info("dug")
                buildat.set_timeout(0.5, buildat.disconnect)
            end
        end)
        main.dig(tx, ty, tz)
    end
    try()
end)
"#;

/// Runs the digger; the voxel it found.
fn digger(setup: &Setup, address: &str, dig: bool) -> [i32; 3] {
    let script = setup.script("digger.lua", &DIGGER.replace("@DIG@", &dig.to_string()));
    let out = setup
        .command(address, "digger", &script, &[])
        .output()
        .expect("run the digger");
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    if dig {
        assert!(stderr.contains("digger: dug"), "{stderr}");
    }
    let v = numbers_after(&stderr, "digger: top ", ',');
    [v[0], v[1], v[2]]
}

/// The integers after `marker` on the first line of `log` holding it,
/// split by `separator`; panics naming the marker and quoting the log
/// when there is none.
fn numbers_after(log: &str, marker: &str, separator: char) -> Vec<i32> {
    let line = log
        .lines()
        .find(|l| l.contains(marker))
        .unwrap_or_else(|| panic!("no line with {marker:?}:\n{log}"));
    let (_, numbers) = line.split_once(marker).expect("the marker");
    numbers
        .split(separator)
        .map(|n| n.trim().parse().expect("an integer"))
        .collect()
}

/// A screenshot from spawn shows terrain: most pixels below the horizon
/// are not sky, and many colours appear.
fn assert_terrain(image: &Image, line: &str) {
    assert_eq!((image.width, image.height), (320, 180));
    let mut below = 0;
    let mut sky = 0;
    let mut colours = std::collections::HashSet::new();
    for y in image.height / 2 + 2..image.height {
        for x in 0..image.width {
            let pixel = image.pixel(x, y);
            below += 1;
            if is_sky(pixel) {
                sky += 1;
            } else {
                colours.insert(pixel.map(|c| c >> 3));
            }
        }
    }
    assert!(
        sky * 2 < below,
        "{sky} of {below} pixels below the horizon are sky ({line})"
    );
    assert!(
        colours.len() >= 8,
        "only {} colours below the horizon ({line})",
        colours.len()
    );
}

#[test]
fn a_screenshot_from_spawn_shows_terrain_and_a_dig_changes_the_next() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let setup = Setup::new();
    let (_server, address) = setup.start(&[]);
    let shots = setup.scratch.path();

    let spawn_shot = shots.join("spawn.png");
    let line = screenshot(&setup, &address, &spawn_shot, &[]);
    assert_terrain(&Image::read(&spawn_shot), &line);

    // Aim at the top voxel two voxels along +x of spawn, shoot, dig, shoot.
    let eye = camera_eye(&line);
    let target = digger(&setup, &address, false);
    let centre = target.map(|c| f64::from(c) + 0.5);
    let d = [centre[0] - eye[0], centre[1] - eye[1], centre[2] - eye[2]];
    let yaw = d[2].atan2(d[0]).to_degrees();
    let pitch = d[1].atan2(d[0].hypot(d[2])).to_degrees();
    let camera = format!("{},{},{},{yaw},{pitch}", eye[0], eye[1], eye[2]);
    let before = shots.join("before.png");
    screenshot(&setup, &address, &before, &["--camera", &camera]);
    assert_eq!(digger(&setup, &address, true), target);
    let after = shots.join("after.png");
    screenshot(&setup, &address, &after, &["--camera", &camera]);
    let (a, b) = (Image::read(&before), Image::read(&after));
    let (cx, cy) = (a.width / 2, a.height / 2);
    let mut changed = 0;
    let mut total = 0;
    for y in cy - 10..cy + 10 {
        for x in cx - 10..cx + 10 {
            total += 1;
            let (p, q) = (a.pixel(x, y), b.pixel(x, y));
            if p.iter()
                .zip(q)
                .any(|(&p, q)| (i32::from(p) - i32::from(q)).abs() > 8)
            {
                changed += 1;
            }
        }
    }
    assert!(
        changed * 4 > total,
        "only {changed} of {total} pixels around the crosshair changed"
    );
}

#[test]
fn a_screenshot_follows_the_clients_rule_against_a_tls_server() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let setup = Setup::new();
    let (server, address) = setup.start(&["--set", "network.tls=on"]);
    let shots = setup.scratch.path();
    // Loopback: plaintext, which the TLS port serves to a loopback peer.
    let plain = shots.join("plain.png");
    let line = screenshot(&setup, &address, &plain, &[]);
    assert_terrain(&Image::read(&plain), &line);
    // The same server as a remote one: TLS and its key pinned, as the
    // headless client does.
    let known_hosts = shots.join("known_hosts");
    let remote = shots.join("remote.png");
    let out = Command::new(CLIENT)
        .args(["--connect", &address, "--cache"])
        .arg(setup.cache())
        .arg("--known-hosts")
        .arg(&known_hosts)
        .args(["--size", "320x180", "--quit-after", "150", "--screenshot"])
        .arg(&remote)
        .env("BUILDAT_TEST_TREAT_AS_REMOTE", "1")
        .output()
        .expect("run buildat-client --screenshot");
    let said = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(said.contains("is now pinned"), "{said}");
    assert_terrain(&Image::read(&remote), &said);
    drop(server);
    // Nothing to connect to: it fails, and writes no picture of nothing.
    let nothing = shots.join("nothing.png");
    let out = Command::new(CLIENT)
        .args(["--connect", &address, "--cache"])
        .arg(setup.cache())
        .args(["--size", "320x180", "--quit-after", "30", "--screenshot"])
        .arg(&nothing)
        .output()
        .expect("run buildat-client --screenshot");
    let said = text(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{said}");
    assert!(said.contains("no screenshot written"), "{said}");
    assert!(!nothing.exists(), "{said}");
}

/// Builds a little scene beside spawn, column A two voxels along +x of the
/// spawn point and column B two further along +z: with `STEP` "floor" it
/// places a stone block on B's top (A keeps its natural top: grass); with
/// "water" a water voxel on each column's top. Either way it then prints
/// `floors X A_Y Z B_Y` (the top voxel under each water, B at Z + 2).
const POOL: &str = r#"
local main = require("buildat/module/main")
local log = buildat.Logger("pool")
local STEP = "@STEP@"
main.on_refused(function(reason)
    log:error("refused: " .. tostring(reason))
end)
main.on_spawn(function(_, x, y, z)
    local tx, tz = math.floor(x) + 2, math.floor(z)
    local function top(cx, cz)
        for ty = math.floor(y) + 8, math.floor(y) - 16, -1 do
            local name = buildat.world.get_voxel(cx, ty, cz)
            if name ~= nil and name ~= "air" and name ~= "water" then
                return ty
            end
        end
        return nil
    end
    local function try()
        local a, b = top(tx, tz), top(tx, tz + 2)
        if a == nil or b == nil then
            buildat.set_timeout(0.2, try)
            return
        end
        local places
        if STEP == "floor" then
            places = { { tx, b + 1, tz + 2, "stone" } }
            b = b + 1
        else
            places = { { tx, a + 1, tz, "water" }, { tx, b + 1, tz + 2, "water" } }
        end
        local left = #places
        main.on_edit(function(_, ex, ey, ez, name)
            for _, p in ipairs(places) do
                if p[1] == ex and p[2] == ey and p[3] == ez and p[4] == name then
                    left -= 1
                end
            end
            if left == 0 then
                log:info("floors " .. tx .. " " .. a .. " " .. tz .. " " .. b)
                buildat.set_timeout(0.5, buildat.disconnect)
            end
        end)
        for _, p in ipairs(places) do
            main.place(p[1], p[2], p[3], p[4])
        end
    end
    try()
end)
"#;

/// Runs the pool builder's `step`; column A's x, floor y and z, and B's
/// floor y (at z + 2).
fn pool(setup: &Setup, address: &str, step: &str) -> (i32, i32, i32, i32) {
    let script = setup.script(&format!("pool-{step}.lua"), &POOL.replace("@STEP@", step));
    let out = setup
        .command(address, "builder", &script, &[])
        .output()
        .expect("run the pool builder");
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let v = numbers_after(&stderr, "pool: floors ", ' ');
    (v[0], v[1], v[2], v[3])
}

/// The mean colour of the `r`-pixel square around the picture's centre.
fn centre_mean(image: &Image, r: usize) -> [f64; 3] {
    let (cx, cy) = (image.width / 2, image.height / 2);
    let mut sum = [0.0; 3];
    let mut n = 0.0;
    for y in cy - r..cy + r {
        for x in cx - r..cx + r {
            let p = image.pixel(x, y);
            for c in 0..3 {
                sum[c] += f64::from(p[c]);
            }
            n += 1.0;
        }
    }
    sum.map(|s| s / n)
}

fn colour_distance(a: [f64; 3], b: [f64; 3]) -> f64 {
    (0..3).map(|c| (a[c] - b[c]).powi(2)).sum::<f64>().sqrt()
}

/// Water is seen through: looking straight down at two floors (grass, and
/// a stone block a bot placed), then at the same floors under a water
/// voxel each. Under water each floor's picture changes (the water is
/// drawn), and the two wet pictures still differ as their floors do (an
/// opaque water would look alike over both: its own colour). Then an eye
/// inside the water sees a dark blue fog, not the sky.
#[test]
fn terrain_seen_through_water_differs_from_dry_terrain_and_from_water() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let setup = Setup::new();
    let (_server, address) = setup.start(&[]);
    let shots = setup.scratch.path();
    let (x, a, z, b) = pool(&setup, &address, "floor");
    // Straight down from 4 voxels above a floor's top face.
    let above = |floor: i32, dz: i32| {
        format!(
            "{},{},{},0,-89.5",
            f64::from(x) + 0.5,
            f64::from(floor) + 5.0,
            f64::from(z + dz) + 0.5
        )
    };
    let shoot = |name: &str, camera: &str| {
        let path = shots.join(name);
        screenshot(&setup, &address, &path, &["--camera", camera]);
        path
    };
    let dry = [
        shoot("dry-a.png", &above(a, 0)),
        shoot("dry-b.png", &above(b, 2)),
    ];
    assert_eq!(pool(&setup, &address, "water"), (x, a, z, b));
    let wet = [
        shoot("wet-a.png", &above(a, 0)),
        shoot("wet-b.png", &above(b, 2)),
    ];
    let inside = format!(
        "{},{},{},30,-20",
        f64::from(x) + 0.5,
        f64::from(a) + 1.4,
        f64::from(z) + 0.5
    );
    let under = shoot("under.png", &inside);
    if let Some(keep) = std::env::var_os("BUILDAT_TEST_KEEP_SHOTS") {
        let keep = Path::new(&keep);
        std::fs::create_dir_all(keep).expect("the folder for the pictures");
        for shot in dry.iter().chain(&wet).chain([&under]) {
            let name = shot.file_name().expect("a file name");
            std::fs::copy(shot, keep.join(name)).expect("a picture kept");
        }
    }
    let mean = |path: &Path| centre_mean(&Image::read(path), 8);
    let (dry, wet) = (dry.map(|p| mean(&p)), wet.map(|p| mean(&p)));
    let said = format!("dry {dry:.0?}, wet {wet:.0?}");
    for i in 0..2 {
        assert!(
            colour_distance(dry[i], wet[i]) > 12.0,
            "the water changes nothing over floor {i}: {said}"
        );
    }
    let floors = colour_distance(dry[0], dry[1]);
    assert!(floors > 25.0, "the two floors look alike: {said}");
    // Seen through the water, the floors still differ, the same way.
    let through = colour_distance(wet[0], wet[1]);
    assert!(
        through > floors * 0.2 && through > 8.0,
        "over both floors the water looks the same (its own colour): {said}"
    );
    let along: f64 = (0..3)
        .map(|c| (dry[0][c] - dry[1][c]) * (wet[0][c] - wet[1][c]))
        .sum();
    assert!(along > 0.0, "the floors show through reversed: {said}");

    // From inside the water: a dark blue fog where the sky would be.
    let under = Image::read(&under);
    let mut sum = [0.0f64; 3];
    for p in under.rgb.chunks_exact(3) {
        for c in 0..3 {
            sum[c] += f64::from(p[c]);
        }
    }
    let [r, g, bl] = sum.map(|s| s / (under.rgb.len() / 3) as f64);
    assert!(
        bl > r + 30.0 && bl > g,
        "under water the picture is not blue: mean {r:.0} {g:.0} {bl:.0}"
    );
    assert!(
        !is_sky(under.pixel(0, 0)),
        "under water the sky shows: {:?}",
        under.pixel(0, 0)
    );
}

/// The mean of every channel of every pixel, 0..255.
fn mean_brightness(image: &Image) -> f64 {
    let sum: u64 = image.rgb.iter().map(|&c| u64::from(c)).sum();
    sum as f64 / image.rgb.len().max(1) as f64
}

/// The time of day in the picture: with the `daytime` module (its clock
/// stopped at noon), a screenshot from spawn, then the console sets
/// midnight and a screenshot from the same eyes: the sky is the client's
/// own at noon and dark at midnight, the terrain much darker yet not black
/// (a night keeps a little light).
#[test]
fn a_screenshot_at_midnight_is_darker_than_at_noon() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let setup = Setup::new();
    crate::common::copy_dir(
        &crate::common::repo_root().join("modules").join("daytime"),
        &setup.modules.join("daytime"),
    );
    let (mut server, address) = setup.start(&[
        "--set",
        "daytime.day_minutes=0",
        "--set",
        "daytime.start_time=0.5",
    ]);
    let shots = setup.scratch.path();
    let noon = shots.join("noon.png");
    let line = screenshot(&setup, &address, &noon, &[]);
    let eye = camera_eye(&line);
    let camera = format!("{},{},{},0,0", eye[0], eye[1], eye[2]);

    server.pump();
    let from = server.seen.len();
    server.send("time 0:00");
    server
        .wait_for_from(from, "time set: 00:00", Duration::from_secs(60))
        .unwrap_or_else(|| panic!("the console sets midnight:\n{}", server.output()));
    let midnight = shots.join("midnight.png");
    screenshot(&setup, &address, &midnight, &["--camera", &camera]);

    // To look at them: BUILDAT_TEST_KEEP_SHOTS=DIR keeps both pictures there.
    if let Some(keep) = std::env::var_os("BUILDAT_TEST_KEEP_SHOTS") {
        let keep = Path::new(&keep);
        std::fs::create_dir_all(keep).expect("the folder for the pictures");
        for shot in [&noon, &midnight] {
            let name = shot.file_name().expect("a file name");
            std::fs::copy(shot, keep.join(name)).expect("a picture kept");
        }
    }
    let (noon, midnight) = (Image::read(&noon), Image::read(&midnight));
    assert_terrain(&noon, &line);
    assert!(
        is_sky(noon.pixel(0, 0)),
        "noon's sky: {:?}",
        noon.pixel(0, 0)
    );
    let night_sky = midnight.pixel(0, 0);
    assert!(
        night_sky.iter().all(|&c| c < 70),
        "midnight's sky: {night_sky:?}"
    );
    let (day, night) = (mean_brightness(&noon), mean_brightness(&midnight));
    assert!(night < day * 0.5, "midnight {night:.1} vs noon {day:.1}");
    // Below the horizon, the lit terrain still shows at night.
    let lit = (midnight.height / 2 + 2..midnight.height)
        .flat_map(|y| (0..midnight.width).map(move |x| (x, y)))
        .filter(|&(x, y)| midnight.pixel(x, y).iter().any(|&c| c > 12))
        .count();
    assert!(
        lit > 100,
        "a night keeps a little light: {lit} pixels not black"
    );
}

#[test]
fn the_window_survives_ten_seconds_of_scripted_input_under_xvfb() {
    let missing: Vec<&str> = ["Xvfb", "xdotool"]
        .into_iter()
        .filter(|p| !installed(p))
        .collect();
    if !missing.is_empty() {
        let message = format!(
            "{missing:?} not installed: the window test needs them (Debian: apt-get install xvfb \
             xdotool; .ci/run installs them)"
        );
        assert!(std::env::var_os("CI").is_none(), "{message}");
        eprintln!("skipped: {message}");
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let setup = Setup::new();
    let (_server, address) = setup.start(&[]);
    let xvfb = Xvfb::start();
    let mut command = Command::new(CLIENT);
    command
        .args(["--connect", &address, "--cache"])
        .arg(setup.cache())
        .args([
            "--name",
            "player",
            "--window",
            "--size",
            "640x480",
            "--quit-after",
            "45",
        ])
        .env("DISPLAY", &xvfb.display);
    let mut client = Running::spawn(command);
    assert!(
        client
            .wait_for("spawned at", Duration::from_secs(60))
            .is_some(),
        "the windowed client never spawned"
    );
    let started = Instant::now();
    let keys = ["w", "a", "s", "d", "space", "1", "2", "Escape"];
    let mut round = 0;
    while started.elapsed() < Duration::from_secs(10) {
        let key = keys[round % keys.len()];
        xvfb.xdotool(&["search", "--name", "Buildat", "windowfocus"]);
        xvfb.xdotool(&["keydown", key]);
        xvfb.xdotool(&["mousemove_relative", "--", "15", "-5"]);
        xvfb.xdotool(&["click", if round % 2 == 0 { "1" } else { "3" }]);
        xvfb.xdotool(&["click", if round % 2 == 0 { "4" } else { "5" }]);
        std::thread::sleep(Duration::from_millis(300));
        xvfb.xdotool(&["keyup", key]);
        round += 1;
    }
    assert!(client.running(), "the window closed during the input");
    // It ends at --quit-after, cleanly.
    let (code, stderr) = client.finish(Duration::from_secs(90));
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains(" 0 Lua errors"), "{stderr}");
}
