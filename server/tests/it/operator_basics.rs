//! The operator's basics against the real server (the default game) with
//! wire clients and the real `buildat-client`, one server for all:
//! `main.whitelist` lets a name on it join (told `main.motd` as it joins)
//! and refuses others, a guest and a login (the real client shows why),
//! with no account made; `/status` (chat and console) gives the game's
//! tick time p50 and p99 over the last minute; with `voxelworld.border` a
//! bot walking toward the border is put back at it, `pregen` skips the
//! sections beyond it and none of them is ever stored.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use buildat_format::Packet;
use buildat_harness::raw_client::RawClient;
use buildat_main_api::{Chat, ChatLine, Correct, Join, Move, Refused, Spawn};
use buildat_network_api::DisconnectPacket;

use crate::common::{Scratch, client_binary, console, output_text, start_small_game};

const TIMEOUT: Duration = Duration::from_secs(60);
const MOTD: &str = "Welcome to the border test; be kind";

/// Reads `client`'s packets until `wanted` returns something for one.
fn wait_for<T>(
    client: &mut RawClient,
    what: &str,
    mut wanted: impl FnMut(&buildat_format::RawPacket) -> Option<T>,
) -> T {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let left = deadline
            .checked_duration_since(Instant::now())
            .unwrap_or_else(|| panic!("no {what} within {TIMEOUT:?}"));
        let Some(packet) = client.recv(left).expect("still connected") else {
            continue;
        };
        if let Some(found) = wanted(&packet) {
            return found;
        }
    }
}

/// The next chat line holding `text`.
fn chat_line(client: &mut RawClient, text: &str) -> String {
    wait_for(client, text, |packet| {
        (packet.name == ChatLine::NAME)
            .then(|| ChatLine::decode(&packet.data).expect("a chat line").text)
            .filter(|line| line.contains(text))
    })
}

/// Reads until the server closes the connection; the reason it gave.
fn disconnect_reason(client: &mut RawClient) -> String {
    let packets = client
        .wait_closed(TIMEOUT)
        .expect("the server closes the connection");
    packets
        .iter()
        .find(|p| p.name == DisconnectPacket::NAME)
        .map(|p| DisconnectPacket::decode(&p.data).expect("a reason").reason)
        .unwrap_or_else(|| panic!("no core:disconnect among {} packets", packets.len()))
}

#[test]
fn the_whitelist_motd_status_and_border_hold_on_a_real_server() {
    let scratch = Scratch::new();
    scratch.add_game();
    let motd = format!("main.motd={MOTD}");
    let (mut server, address) = start_small_game(
        &scratch,
        &[
            "main.whitelist=Ann,bob",
            &motd,
            "voxelworld.border=20",
            // Only the border holds moves back: the bot walks in a line.
            "main.free_movement=true",
        ],
    );

    // A name on the whitelist joins (a loopback guest) and is told the motd.
    let mut ann = RawClient::connect(&address).expect("connect");
    ann.send_packet(&Join { name: "ann".into() }).expect("join");
    let spawn = wait_for(&mut ann, "spawn", |packet| {
        (packet.name == Spawn::NAME).then(|| Spawn::decode(&packet.data).expect("a spawn").position)
    });
    assert_eq!(chat_line(&mut ann, "Welcome"), MOTD);

    // Another is refused with the reason: a guest, and a login through
    // the real client, which shows it.
    let mut eve = RawClient::connect(&address).expect("connect");
    eve.send_packet(&Join { name: "Eve".into() }).expect("join");
    assert_eq!(
        disconnect_reason(&mut eve),
        "Eve is not on this server's whitelist"
    );
    let dir = scratch.dir.path();
    let password = dir.join("password-mallory");
    std::fs::write(&password, "mallory's secret\n").expect("password file");
    let out = Command::new(client_binary())
        .args(["--connect", &address, "--cache"])
        .arg(dir.join("cache"))
        .args(["--name", "mallory", "--password-file"])
        .arg(&password)
        .args(["--quit-after", "30"])
        .stdin(Stdio::null())
        .output()
        .expect("run buildat-client");
    let said = output_text(&out);
    assert_eq!(out.status.code(), Some(5), "disconnected:\n{said}");
    assert!(
        said.contains("mallory is not on this server's whitelist"),
        "{said}"
    );
    // No account was made: an operator's grant finds none.
    console(
        &mut server,
        "grant mallory fly",
        "no account is called mallory",
    );
    assert!(
        !server.output().contains("claimed the name mallory"),
        "{}",
        server.output()
    );

    // `/status` in chat and on the console: the last minute's tick time.
    ann.send_packet(&Chat {
        text: "/status".into(),
    })
    .expect("chat");
    let status = chat_line(&mut ann, "playing");
    assert!(
        status.contains("tick p50 ") && status.contains(" ms over the last minute ("),
        "{status}"
    );
    assert!(status.contains("1 playing: ann"), "{status}");
    let answer = console(&mut server, "status", "over the last minute");
    assert!(answer.contains(", p99 "), "{answer}");

    // Walking toward x = 20: put back at the last place inside.
    let [_, y, z] = spawn;
    for x in [8.5, 16.5, 24.5, 32.5] {
        ann.send_packet(&Move {
            position: [x, y, z],
        })
        .expect("move");
    }
    let why = wait_for(&mut ann, "refusal", |packet| {
        (packet.name == Refused::NAME).then(|| Refused::decode(&packet.data).expect("why").reason)
    });
    assert!(why.contains("border is 20 blocks from 0,0"), "{why}");
    let back = wait_for(&mut ann, "correction", |packet| {
        (packet.name == Correct::NAME).then(|| {
            Correct::decode(&packet.data)
                .expect("a correction")
                .position
        })
    });
    assert_eq!(back, [16.5, y, z], "put back inside");
    ann.send_packet(&Move {
        position: [20.0, y, z],
    })
    .expect("move");
    ann.send_packet(&Move {
        position: [20.5, y, z],
    })
    .expect("move");
    // (A correction back to 16.5 of a move that came a tick later may
    // come first.)
    wait_for(&mut ann, "correction to the border", |packet| {
        (packet.name == Correct::NAME)
            .then(|| {
                Correct::decode(&packet.data)
                    .expect("a correction")
                    .position
            })
            .filter(|back| *back == [20.0, y, z])
    });

    // Pregen of 5 × 5 × 3 sections of 64 voxels: the 2 × 2 × 3 that reach
    // inside the border, none beyond.
    let skipped = console(
        &mut server,
        "pregen --radius 2",
        "sections beyond the world border",
    );
    assert!(
        skipped.contains("pregen: 63 sections beyond the world border (20 blocks) skipped"),
        "{skipped}"
    );
    let planned = server
        .wait_for_from(0, "sections to generate", TIMEOUT)
        .expect("pregen plans");
    let counts: Vec<u64> = planned
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|n| n.parse().ok())
        .collect();
    assert_eq!(counts.iter().rev().take(2).sum::<u64>(), 12, "{planned}");
    server
        .wait_for_from(0, "pregen: generated", TIMEOUT)
        .unwrap_or_else(|| panic!("pregen ends:\n{}", server.output()));
    drop(ann);
    assert_eq!(
        server.stop(TIMEOUT),
        Some(0),
        "stops cleanly:\n{}",
        server.output()
    );

    // Stored: the sections inside, and not one beyond.
    let database = rusqlite::Connection::open(scratch.world().join("world.sqlite")).expect("open");
    let stored: Vec<(i32, i32, i32)> = database
        .prepare("SELECT sx, sy, sz FROM section")
        .expect("prepare")
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows");
    assert!(stored.len() >= 12, "{stored:?}");
    assert!(
        stored
            .iter()
            .all(|(x, _, z)| (-1..=0).contains(x) && (-1..=0).contains(z)),
        "{stored:?}"
    );
}
