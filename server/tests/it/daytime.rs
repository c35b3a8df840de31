//! End-to-end tests of the time of day in the real server (the default
//! game plus `daytime`) with the real client: a client's Lua
//! (`require("buildat/module/daytime")`) sees the time the server tells it
//! advance, the console's `time 23:00` makes night reach it at once (and
//! `daytime:night_changed` is logged), and the clock survives a restart
//! (written when the module unloads, read back when it starts) and a
//! reload of the module. Over the raw protocol: a joining player gets
//! `daytime:time`, reads `/time` in chat and sets it with `/time HH:MM`
//! only once granted `settime`. The `creatures` module (an optional
//! dependency) rests from dusk to dawn.

use std::process::{Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use buildat_format::Packet;
use buildat_harness::raw_client::RawClient;
use buildat_main_api::{Chat, ChatLine, Join, Login};

use crate::common::{Scratch, Server, client_binary, console, lines_of, start_game};

const SCRIPT: &str = r#"
local daytime = require("buildat/module/daytime")
local log = buildat.Logger("daytest")
local first, advanced = nil, false
daytime.on_change(function(t)
	if first == nil then
		first = t
		log:info("first told " .. daytime.clock())
	elseif not advanced and t > first then
		advanced = true
		log:info(string.format("time advances from %.4f to %.4f", first, t))
	end
	if advanced and daytime.night() then
		log:info("night at " .. daytime.clock())
		buildat.disconnect()
	end
end)
"#;

/// The default game with the daytime module.
fn setup() -> Scratch {
    let scratch = Scratch::new();
    scratch.add_game();
    scratch.add_modules(&["daytime"]);
    scratch
}

/// Waits up to 60 s for a line of `lines` holding `what` (every line
/// read is kept in `seen` and printed when it never comes).
fn wait_line(lines: &Receiver<String>, seen: &mut Vec<String>, what: &str) -> Option<String> {
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        if let Ok(line) = lines.recv_timeout(Duration::from_millis(200)) {
            seen.push(line.clone());
            if line.contains(what) {
                return Some(line);
            }
        }
    }
    eprintln!("the client's lines:\n{}", seen.join("\n"));
    None
}

/// "HH:MM" as minutes since midnight.
fn minutes_of(clock: &str) -> u32 {
    let (hours, minutes) = clock.trim().split_once(':').expect("HH:MM");
    hours.parse::<u32>().expect("hours") * 60 + minutes.parse::<u32>().expect("minutes")
}

/// The "HH:MM" before ", day" in a `time` answer.
fn clock_of(answer: &str) -> &str {
    let end = answer.find(", day").expect("HH:MM, day N");
    &answer[end - 5..end]
}

#[test]
fn a_client_sees_the_time_advance_and_night_fall_when_the_console_sets_it() {
    let scratch = setup();
    // A 5-minute day told every second: 0.003 of a day a second.
    let (mut server, address) = start_game(
        &scratch,
        &[
            "voxelworld.view_radius=1",
            "daytime.day_minutes=5",
            "daytime.send_seconds=1",
        ],
    );
    let shown = console(&mut server, "time", ", day 0");
    assert!(!shown.contains("night"), "{shown}");

    let dir = tempfile::tempdir().expect("temp dir");
    let script = dir.path().join("day.lua");
    std::fs::write(&script, SCRIPT).expect("script");
    let mut client = Command::new(client_binary())
        .args(["--connect", &address, "--cache"])
        .arg(dir.path().join("cache"))
        .args(["--name", "daybot", "--quit-after", "90", "-v", "--script"])
        .arg(&script)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run buildat-client");
    let lines = lines_of(&mut client);
    let mut seen = Vec::new();
    let mut wait_for = |what: &str, server: &Server| {
        wait_line(&lines, &mut seen, what).unwrap_or_else(|| {
            panic!(
                "the client logs '{what}' within 60 s\n--- server:\n{}",
                server.output()
            )
        })
    };
    wait_for("first told ", &server);
    let advanced = wait_for("time advances from ", &server);
    assert!(!advanced.contains("night"), "{advanced}");

    console(&mut server, "time 23:00", "time set: 23:00, day 0, night");
    let night = wait_for("night at ", &server);
    let at = minutes_of(night.rsplit("night at ").next().expect("a clock"));
    assert!((23 * 60..23 * 60 + 10).contains(&at), "{night}");
    let status = client.wait().expect("the client exits");
    assert!(status.success(), "the client exits 0 after night fell");
    assert!(
        server.output().contains("night falls at 23:00"),
        "{}",
        server.output()
    );
}

#[test]
fn the_clock_survives_a_restart() {
    let scratch = setup();
    // A 2-minute day: 12 minutes of the clock a second.
    let (mut server, _) = start_game(
        &scratch,
        &["voxelworld.view_radius=1", "daytime.day_minutes=2"],
    );
    console(&mut server, "time 20:30", "time set: 20:30");
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(
        server.stop(Duration::from_secs(60)),
        Some(0),
        "{}",
        server.output()
    );

    // Stopped now: the clock stays where the last run left it.
    let (mut server, _) = start_game(
        &scratch,
        &["voxelworld.view_radius=1", "daytime.day_minutes=0"],
    );
    let shown = console(&mut server, "time", ", day 0");
    let at = minutes_of(clock_of(&shown));
    assert!(
        (20 * 60 + 50..24 * 60).contains(&at),
        "later than 20:30 by the seconds run before the stop: {shown}"
    );
    assert!(shown.contains("night"), "{shown}");
    // A reload of the module carries the clock over (its stash).
    console(&mut server, "reload daytime", "daytime");
    let again = console(&mut server, "time", ", day 0");
    assert_eq!(clock_of(&again), clock_of(&shown), "{again}");
    assert_eq!(
        server.stop(Duration::from_secs(60)),
        Some(0),
        "{}",
        server.output()
    );
}

/// Reads `client`'s packets until a `P` that `wanted` accepts (30 s); the
/// chat lines seen on the way are in the panic.
fn wait_packet<P: Packet>(client: &mut RawClient, mut wanted: impl FnMut(&P) -> bool) -> P {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut lines = Vec::new();
    loop {
        let left = deadline
            .checked_duration_since(Instant::now())
            .unwrap_or_else(|| panic!("no {} in time; chat seen: {lines:?}", P::NAME));
        let Some(packet) = client.recv(left).expect("still connected") else {
            continue;
        };
        if packet.name == ChatLine::NAME {
            lines.push(ChatLine::decode(&packet.data).expect("a chat line").text);
        }
        if packet.name == P::NAME {
            let decoded = P::decode(&packet.data).expect("decodes");
            if wanted(&decoded) {
                return decoded;
            }
        }
    }
}

#[test]
fn a_joining_player_is_told_the_time_reads_it_in_chat_and_sets_it_only_with_settime() {
    let scratch = setup();
    let (mut server, address) = start_game(
        &scratch,
        &[
            "voxelworld.view_radius=1",
            "daytime.day_minutes=0",
            "daytime.start_time=0.5",
        ],
    );
    // An account (the first login claims the name), so it can be granted.
    let mut ann = RawClient::connect(&address).expect("connect");
    ann.send_packet(&Login {
        name: "ann".into(),
        password: "ann's secret".into(),
    })
    .expect("log in");
    ann.send_packet(&Join { name: "ann".into() }).expect("join");
    // daytime:time, 8 bytes: f32 time, f32 day_seconds (docs/protocol.md
    // §15; read raw: the server's tests do not link the daytime API).
    let deadline = Instant::now() + Duration::from_secs(30);
    let told = loop {
        let left = deadline
            .checked_duration_since(Instant::now())
            .expect("daytime:time within 30 s of joining");
        if let Some(packet) = ann.recv(left).expect("still connected")
            && packet.name == "daytime:time"
        {
            break packet.data;
        }
    };
    assert_eq!(told.len(), 8);
    let time = f32::from_le_bytes(told[..4].try_into().expect("4 bytes"));
    let day_seconds = f32::from_le_bytes(told[4..].try_into().expect("4 bytes"));
    assert_eq!((time, day_seconds), (0.5, 0.0));

    ann.send_packet(&Chat {
        text: "/time".into(),
    })
    .expect("chat");
    wait_packet::<ChatLine>(&mut ann, |line| line.text.contains("12:00, day 0"));
    ann.send_packet(&Chat {
        text: "/time 23:00".into(),
    })
    .expect("chat");
    // Asked at once, judged on the next tick (main is asked then).
    wait_packet::<ChatLine>(&mut ann, |line| {
        line.text.contains("setting the time to 23:00")
    });
    wait_packet::<ChatLine>(&mut ann, |line| {
        line.text == "setting the time needs the 'settime' privilege"
    });
    let shown = console(&mut server, "time", ", day 0");
    assert!(shown.contains("12:00, day 0"), "unchanged: {shown}");

    // Granted the privilege, the same line sets it.
    console(&mut server, "grant ann settime", "settime");
    ann.send_packet(&Chat {
        text: "/time 23:00".into(),
    })
    .expect("chat");
    wait_packet::<ChatLine>(&mut ann, |line| {
        line.text == "time set: 23:00, day 0, night"
    });
    let shown = console(&mut server, "time", ", day 0");
    assert!(shown.contains("23:00, day 0, night"), "{shown}");
}

#[test]
fn creatures_rest_when_the_console_makes_it_night_and_walk_at_dawn() {
    let scratch = setup();
    scratch.add_creatures();
    let (mut server, _) = start_game(
        &scratch,
        &[
            "voxelworld.view_radius=1",
            "daytime.day_minutes=0",
            "daytime.start_time=0.5",
            "creatures.active_radius=0",
        ],
    );
    let report = console(&mut server, "creatures", "creatures: ");
    assert!(!report.contains("resting"), "{report}");
    console(&mut server, "time 23:00", "time set: 23:00");
    let report = console(&mut server, "creatures", "creatures: ");
    assert!(report.contains("resting for the night"), "{report}");
    console(&mut server, "time 7:00", "time set: 07:00");
    let report = console(&mut server, "creatures", "creatures: ");
    assert!(!report.contains("resting"), "{report}");
}
