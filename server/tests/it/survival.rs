//! The survival loop end to end (issue 45's "done when"): the real server
//! with the default game (`main`, `items`, `crafting`, `inventory`,
//! `survival`, not creative) and the real headless client running
//! `scripts/bots/survival.lua`: wood by hand from a tree, planks, sticks, a
//! crafting table, a wooden pickaxe, stone with it (faster than by hand),
//! a stone pickaxe, blocks placed from the inventory; then the server
//! restarts and the same player finds its inventory again (the bot's
//! second run exits 0 only then).
//!
//! The bot may fly, teleport and move fast (`main.default_privileges`): it
//! goes to the nearest tree it holds.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use crate::common::{Scratch, client_binary, output_text, repo_root, start_game};

const SETTINGS: [&str; 2] = [
    "voxelworld.view_radius=2",
    "main.default_privileges=interact,shout,fly,fast,teleport,noclip",
];

/// The default game with its survival modules.
fn setup() -> Scratch {
    let scratch = Scratch::new();
    scratch.add_survival_game();
    scratch
}

fn bot_script() -> std::path::PathBuf {
    repo_root()
        .join("scripts")
        .join("bots")
        .join("survival.lua")
}

fn bot(address: &str, cache: &std::path::Path) -> Command {
    let mut command = Command::new(client_binary());
    command
        .args(["--connect", address, "--cache"])
        .arg(cache)
        .args(["--name", "survivor", "-v", "--script"])
        .arg(bot_script())
        .stdin(Stdio::null());
    command
}

/// Every line the child writes (stdout and stderr), as they come.
fn lines_of(child: &mut Child) -> Receiver<String> {
    let (send, lines) = channel();
    let out = child.stdout.take().expect("piped stdout");
    let err = child.stderr.take().expect("piped stderr");
    let to = send.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            let _ = to.send(line);
        }
    });
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            let _ = send.send(line);
        }
    });
    lines
}

/// The `survival: inventory: ...` line's list.
fn inventory_of(text: &str) -> String {
    text.lines()
        .filter_map(|l| l.split("survival: inventory: ").nth(1))
        .next_back()
        .unwrap_or_else(|| panic!("no inventory line in:\n{text}"))
        .trim()
        .to_string()
}

/// The server's seconds of the first `survival: stone with TOOL: S s
/// (measured M s)` line.
fn pick_seconds(text: &str) -> f64 {
    let line = text
        .lines()
        .find(|l| l.contains("survival: stone with ") && l.contains(" s (measured"))
        .unwrap_or_else(|| panic!("no pickaxe line in:\n{text}"));
    line.split(" s (measured")
        .next()
        .and_then(|before| before.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no seconds in {line:?}"))
}

#[test]
fn a_bot_plays_the_survival_loop_and_finds_its_inventory_after_a_restart() {
    let scratch = setup();
    let cache = tempfile::tempdir().expect("temp dir");
    let (mut server, address) = start_game(&scratch, &SETTINGS);

    let mut child = bot(&address, cache.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run buildat-client");
    let lines = lines_of(&mut child);
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(400);
    let mut waiting = false;
    while Instant::now() < deadline {
        match lines.recv_timeout(Duration::from_millis(500)) {
            Ok(line) => {
                waiting |= line.contains("survival: waiting for a server restart");
                let failed = line.contains("survival: FAILED");
                seen.push(line);
                if waiting || failed {
                    break;
                }
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    let text = seen.join("\n");
    if !waiting {
        let _ = child.kill();
        panic!(
            "the bot did not finish the loop:\n{text}\n--- server:\n{}",
            server.output()
        );
    }
    eprintln!("--- the bot's first run:\n{text}");
    for step in [
        "survival: a tree at ",
        "survival: punched 3 wood by hand",
        "survival: crafted planks",
        "survival: crafted sticks",
        "survival: crafted a crafting table",
        "survival: crafted a wooden pickaxe",
        "survival: stone by hand: ",
        "survival: mined 3 stone",
        "survival: crafted a stone pickaxe",
        "survival: placed ",
    ] {
        assert!(text.contains(step), "{step:?} missing:\n{text}");
    }
    // Faster than by hand: by hand the server refuses (a negative time) or
    // takes longer.
    let hand = text
        .lines()
        .find_map(|l| l.split("survival: stone by hand: ").nth(1))
        .expect("the hand's line");
    let pick = pick_seconds(&text);
    assert!(pick > 0.0, "{text}");
    if !hand.starts_with("cannot be dug") {
        let hand: f64 = hand.trim_end_matches(" s").parse().expect("seconds");
        assert!(pick < hand, "the pickaxe {pick} s, the hand {hand} s");
    }
    let placed: Vec<&str> = text
        .lines()
        .filter_map(|l| l.split(" from my inventory: ").nth(1))
        .collect();
    assert!(placed.len() >= 2, "{text}");
    for counts in &placed {
        let (before, after) = counts.split_once(" -> ").expect("before -> after");
        let before: u32 = before.trim().parse().expect("a count");
        let after: u32 = after.trim().parse().expect("a count");
        assert_eq!(after + 1, before, "the count goes down: {counts}");
    }
    let before_restart = inventory_of(&text);

    // A restart: the client loses its connection (not a success), the
    // inventory stays.
    assert_eq!(
        server.stop(Duration::from_secs(60)),
        Some(0),
        "{}",
        server.output()
    );
    let status = child.wait().expect("the first run ends");
    assert_ne!(status.code(), Some(0), "half the loop is not a success");
    let (mut server, address) = start_game(&scratch, &SETTINGS);
    let out = bot(&address, cache.path())
        .args(["--quit-after", "120"])
        .output()
        .expect("run buildat-client again");
    let again = output_text(&out);
    eprintln!("--- the bot's second run:\n{again}");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{again}\n--- server:\n{}",
        server.output()
    );
    assert!(
        again.contains("survival: found my inventory again after a restart"),
        "{again}"
    );
    assert!(again.contains("survival: done"), "{again}");
    assert_eq!(inventory_of(&again), before_restart);
    assert_eq!(
        server.stop(Duration::from_secs(60)),
        Some(0),
        "{}",
        server.output()
    );
}

/// The README's builder bot plays survival too: it digs the top of a
/// column for as long as the server says, places back what digging gave it
/// (grass gives dirt) from its hotbar, and nothing is refused.
#[test]
fn the_builder_bot_digs_and_places_back_what_it_dug_in_survival() {
    let scratch = setup();
    let (mut server, address) = start_game(&scratch, &SETTINGS);
    let dir = tempfile::tempdir().expect("temp dir");
    let out = Command::new(client_binary())
        .args(["--connect", &address, "--cache"])
        .arg(dir.path().join("cache"))
        .args(["--name", "builder", "--quit-after", "15", "--script"])
        .arg(repo_root().join("scripts/bots/builder.lua"))
        .stdin(Stdio::null())
        .output()
        .expect("run buildat-client");
    let text = output_text(&out);
    let counts: Vec<u32> = text
        .split("builder: builder: ")
        .nth(1)
        .and_then(|rest| rest.lines().next())
        .map(|line| {
            line.split(", ")
                .filter_map(|part| part.split(' ').next()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    let context = || format!("{text}\n--- server:\n{}", server.output());
    // digs, places, edits confirmed, refused
    let [digs, places, confirmed, refused] = counts[..] else {
        panic!("the builder's counts: {}", context());
    };
    assert!(digs >= 2 && places >= 2, "{}", context());
    assert!(confirmed >= 4, "{}", context());
    assert_eq!(refused, 0, "{}", context());
    server.pump();
    // What it dug went back, but for a dig not yet placed at the end.
    let census = crate::common::console(&mut server, "census", "total ");
    let total: u32 = census
        .rsplit("total ")
        .next()
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("a census total: {census}"));
    assert!(total <= 1, "{census}");
}
