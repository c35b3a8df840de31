//! The living world end to end (issue 46's "done when"): the real server
//! with the default game and its living modules (`active`, `liquid`,
//! `health`, `daytime`; survival, not creative) and the real headless
//! client running `scripts/bots/living.lua`. The bot places dirt and sees
//! grass spread onto it, digs a lake's bank and watches the water flow
//! out and stop, takes a source with a bucket, sees the time move and
//! night fall after `time 23:00` on the console, takes fall damage, dies,
//! respawns; it exits 0 only when all of that worked.

use std::process::{Command, Stdio};
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

use crate::common::{Scratch, client_binary, lines_of, repo_root, start_game};

const SETTINGS: [&str; 5] = [
    "voxelworld.view_radius=2",
    "main.default_privileges=interact,shout,fly,fast,teleport,noclip",
    "main.creative=false",
    "survival.grass_seconds=1",
    "survival.grass_chance=1",
];

#[test]
fn the_living_bot_sees_grass_water_time_falls_death_and_respawn() {
    let scratch = Scratch::new();
    scratch.add_living_world();
    let cache = tempfile::tempdir().expect("temp dir");
    let (mut server, address) = start_game(&scratch, &SETTINGS);
    let mut child = Command::new(client_binary())
        .args(["--connect", &address, "--cache"])
        .arg(cache.path())
        .args(["--name", "living", "-v", "--script"])
        .arg(repo_root().join("scripts").join("bots").join("living.lua"))
        .args(["--quit-after", "400"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run buildat-client");
    let lines = lines_of(&mut child);
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(420);
    while Instant::now() < deadline {
        match lines.recv_timeout(Duration::from_millis(500)) {
            Ok(line) => {
                // What the bot asks of the operator.
                if line.contains("living: spawned at ") {
                    server.send("give living bucket");
                    server.send("give living dirt 4");
                }
                // What the active voxels did, in the server's log for a
                // failure's report.
                if line.contains("living: placed dirt") {
                    server.send("active");
                }
                if line.contains("living: waiting for night") {
                    server.send("time 23:00");
                }
                let over = line.contains("living: FAILED") || line.contains("living: done");
                seen.push(line);
                if over {
                    break;
                }
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break,
        }
    }
    let text = seen.join("\n");
    let status = child.wait().expect("the bot ends");
    assert_eq!(
        status.code(),
        Some(0),
        "the bot did not prove the living world:\n{text}\n--- server:\n{}",
        server.output()
    );
    eprintln!("--- the living bot:\n{text}");
    for step in [
        "living: grass spread onto the dirt I placed",
        "living: dug the bank at ",
        "living: the water flowed out: ",
        "living: the water stopped",
        "living: took a source with a bucket",
        "living: the time of day moved",
        "living: night fell",
        "living: took fall damage",
        "living: died (fall)",
        "living: respawned at ",
        "living: done",
    ] {
        assert!(text.contains(step), "{step:?} missing:\n{text}");
    }
    assert_eq!(
        server.stop(Duration::from_secs(60)),
        Some(0),
        "{}",
        server.output()
    );
}
