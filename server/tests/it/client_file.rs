//! The client_file module in the real server over real sockets: the file
//! flow, warm caches, name refusal, live re-announce, big files beside small
//! packets, Lua-only modules, and surviving reloads.

use buildat_client_file_api::{
    AnnounceFile, FileContent, FileError, RequestFile, TellAfterAllFilesTransferred,
};
use buildat_format::Packet;
use buildat_test_net_probe_api::Echo;
use std::collections::HashMap;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use crate::common::{Scratch, Server, start_server};
use buildat_harness::raw_client::RawClient;

const QUIET: Duration = Duration::from_millis(700);

fn start(scratch: &Scratch, extra: &[&str]) -> (Server, String) {
    scratch.add_client_file();
    let mut args = scratch.server_args();
    args.extend(["--listen", "127.0.0.1:0"].map(String::from));
    args.extend(extra.iter().map(|a| a.to_string()));
    let mut server = start_server(&args, Stdio::piped());
    let address = server.listen_address();
    server.expect_line("server started", Duration::from_secs(120));
    (server, address)
}

/// A Lua-only module with a few client files.
fn add_lua_module(scratch: &Scratch, name: &str, depends_on: Option<&str>) {
    let meta = match depends_on {
        Some(other) => {
            format!(r#"{{"disable_rust": true, "dependencies": [{{"module": "{other}"}}]}}"#)
        }
        None => r#"{"disable_rust": true}"#.to_string(),
    };
    let dir = scratch.add_meta_only(name, &meta);
    std::fs::create_dir_all(dir.join("client_lua/lib")).unwrap();
    std::fs::create_dir_all(dir.join("client_data")).unwrap();
    std::fs::write(
        dir.join("client_lua/init.lua"),
        format!("print('{name} runs')\n"),
    )
    .unwrap();
    std::fs::write(dir.join("client_lua/lib/util.lua"), "return {}\n").unwrap();
    std::fs::write(dir.join("client_data/stone.txt"), format!("{name} stone\n")).unwrap();
}

#[test]
fn files_reach_clients_verified_and_a_warm_cache_requests_nothing() {
    let scratch = Scratch::new();
    add_lua_module(&scratch, "lua_a", None);
    add_lua_module(&scratch, "lua_b", Some("lua_a"));
    let (mut server, address) = start(&scratch, &["--no-watch"]);

    let mut cache = HashMap::new();
    let mut client = RawClient::connect(&address).expect("connect");
    let first = client.sync_files(&mut cache, QUIET);
    let expected = [
        "lua_a/client_data/stone.txt",
        "lua_a/client_lua/init.lua",
        "lua_a/client_lua/lib/util.lua",
        "lua_b/client_data/stone.txt",
        "lua_b/client_lua/init.lua",
        "lua_b/client_lua/lib/util.lua",
    ];
    assert_eq!(first.announced.keys().collect::<Vec<_>>(), expected);
    assert_eq!(first.requested.len(), 6, "a cold cache requests every file");
    assert_eq!(
        first.scripts,
        ["lua_a/client_lua/init.lua", "lua_b/client_lua/init.lua"],
        "init.lua of each module, in load order"
    );
    drop(client);

    let mut again = RawClient::connect(&address).expect("connect");
    let second = again.sync_files(&mut cache, QUIET);
    assert!(
        second.requested.is_empty(),
        "warm cache requests nothing: {:?}",
        second.requested
    );
    assert_eq!(second.content_bytes, 0, "no content bytes sent");
    assert_eq!(second.scripts.len(), 2);
    server.stop_cleanly();
}

/// The console's `modules` footer: `shared buffers: N (X MiB)`.
fn shared_buffers(server: &mut Server) -> String {
    server.send("modules");
    let line = server
        .wait_for("shared buffers: ", Duration::from_secs(10))
        .unwrap_or_else(|| panic!("modules shows shared buffers:\n{}", server.output()));
    line.split("shared buffers: ")
        .nth(1)
        .unwrap_or_default()
        .trim()
        .to_string()
}

#[test]
fn file_content_is_shared_once_and_given_back_when_its_holder_reloads() {
    let scratch = Scratch::new();
    add_lua_module(&scratch, "lua_a", None);
    let big: Vec<u8> = (0..3u32 << 20).map(|i| (i % 251) as u8).collect();
    std::fs::write(scratch.modules().join("lua_a/client_data/big.bin"), &big).unwrap();
    let (mut server, address) = start(&scratch, &["--no-watch"]);
    assert_eq!(
        shared_buffers(&mut server),
        "0 (0.0 MiB)",
        "nothing sent yet"
    );

    let mut first = HashMap::new();
    let mut client = RawClient::connect(&address).expect("connect");
    let sync = client.sync_files(&mut first, QUIET);
    let hash = sync.announced["lua_a/client_data/big.bin"];
    assert_eq!(first[&hash], big, "3 MiB through shared buffers, intact");
    drop(client);
    // Each file's bytes are in one host buffer held by client_file's
    // registry; the network module held ranges of them only until it
    // framed them.
    assert_eq!(shared_buffers(&mut server), "4 (3.0 MiB)");

    // A second client is served from the same buffers: none is added.
    let mut second = HashMap::new();
    let mut client = RawClient::connect(&address).expect("connect");
    client.sync_files(&mut second, QUIET);
    assert_eq!(second, first);
    drop(client);
    assert_eq!(shared_buffers(&mut server), "4 (3.0 MiB)");

    // The old instance's references end with it; the new one keeps the
    // files as bytes (from its stash) until it sends them again.
    server.send("reload client_file");
    server
        .wait_for("reloaded client_file", Duration::from_secs(60))
        .expect("client_file reloaded");
    assert_eq!(shared_buffers(&mut server), "0 (0.0 MiB)");
    let mut third = HashMap::new();
    let mut client = RawClient::connect(&address).expect("connect");
    client.sync_files(&mut third, QUIET);
    assert_eq!(third, first, "the same files after the reload");
    drop(client);
    assert_eq!(shared_buffers(&mut server), "4 (3.0 MiB)");
    server.stop_cleanly();
}

#[test]
fn only_registered_names_are_served() {
    let scratch = Scratch::new();
    add_lua_module(&scratch, "lua_c", None);
    let (mut server, address) = start(&scratch, &["--no-watch"]);
    let mut client = RawClient::connect(&address).expect("connect");
    let mut cache = HashMap::new();
    let sync = client.sync_files(&mut cache, QUIET);
    let real_hash = sync.announced["lua_c/client_lua/init.lua"];
    let secret = scratch.modules().join("lua_c/meta.json");
    for name in [
        "../x",
        "/etc/passwd",
        "a\\b",
        "lua_c/client_lua/../meta.json",
        secret.to_str().unwrap(),
        "lua_c/meta.json",
        "lua_c/client_lua/missing.lua",
    ] {
        let request = RequestFile {
            name: name.to_string(),
            hash: real_hash,
        };
        client.send_packet(&request).unwrap();
        let packet = client
            .recv(Duration::from_secs(10))
            .unwrap()
            .expect("an answer");
        assert_eq!(
            packet.name,
            FileError::NAME,
            "{name} is refused, not served"
        );
        let error = FileError::decode(&packet.data).unwrap();
        assert_eq!(error.name, name);
    }
    // A stale hash of a registered name is refused too.
    let stale = RequestFile {
        name: "lua_c/client_lua/init.lua".into(),
        hash: [0; 32],
    };
    client.send_packet(&stale).unwrap();
    let packet = client
        .recv(Duration::from_secs(10))
        .unwrap()
        .expect("an answer");
    let error = FileError::decode(&packet.data).unwrap();
    assert!(error.message.contains("stale hash"), "{}", error.message);
    server
        .wait_for("refused file request", Duration::from_secs(5))
        .expect("logged");
    server.stop_cleanly();
}

#[test]
fn editing_a_client_file_re_announces_it_to_connected_clients() {
    let scratch = Scratch::new();
    add_lua_module(&scratch, "lua_live", None);
    let (mut server, address) = start(&scratch, &[]);
    server
        .wait_for("watching module folders", Duration::from_secs(10))
        .expect("watching");
    let mut client = RawClient::connect(&address).expect("connect");
    let mut cache = HashMap::new();
    let before = client.sync_files(&mut cache, QUIET);
    let path = scratch.modules().join("lua_live/client_lua/init.lua");
    std::fs::write(&path, "print('edited')\n").unwrap();
    let packet = client
        .recv(Duration::from_secs(20))
        .unwrap()
        .expect("a re-announce");
    assert_eq!(packet.name, AnnounceFile::NAME);
    let announce = AnnounceFile::decode(&packet.data).unwrap();
    assert_eq!(announce.name, "lua_live/client_lua/init.lua");
    assert_ne!(
        announce.hash,
        before.announced["lua_live/client_lua/init.lua"]
    );
    server.stop_cleanly();
}

#[test]
fn a_big_file_does_not_stall_other_clients_and_survives_reloads() {
    let scratch = Scratch::new();
    add_lua_module(&scratch, "lua_big", None);
    let big: Vec<u8> = (0..50u32 << 20)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    std::fs::write(scratch.modules().join("lua_big/client_data/big.bin"), &big).unwrap();
    // A small network queue limit: the transfer must pace itself below it
    // (a client whose backlog passes it is dropped as not reading).
    let (mut server, address) = start(
        &scratch,
        &["--no-watch", "--set", "network.max_queue_bytes=3000000"],
    );

    // A small-packet client keeps echoing while the big file goes out.
    let echo_address = address.clone();
    let echoes = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let echoer = {
        let (echoes, stop) = (echoes.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut client = RawClient::connect(&echo_address).expect("connect");
            let mut cache = HashMap::new();
            let _ = client.sync_files(&mut cache, Duration::from_millis(100));
            let mut seq = 0u64;
            while !stop.load(Ordering::Relaxed) {
                client.send_packet(&Echo::seq(seq)).unwrap();
                let packet = loop {
                    let packet = client.recv(Duration::from_secs(30)).unwrap().expect("echo");
                    if packet.name == Echo::NAME {
                        break packet;
                    }
                };
                let echo = Echo::decode(&packet.data).expect("an echo");
                assert_eq!(echo.read_seq(), Some(seq), "echoes in order");
                seq += 1;
                echoes.store(seq, Ordering::Relaxed);
            }
        })
    };
    crate::common::wait_until(Duration::from_secs(30), || {
        (echoes.load(Ordering::Relaxed) > 0).then_some(())
    })
    .expect("the echo client runs");

    let mut client = RawClient::connect(&address).expect("connect");
    let mut cache = HashMap::new();
    // Both modules reload while the transfer runs.
    server.send("reload client_file");
    server.send("reload network");
    let before = echoes.load(Ordering::Relaxed);
    let sync = client.sync_files(&mut cache, QUIET);
    let during = echoes.load(Ordering::Relaxed) - before;
    stop.store(true, Ordering::Relaxed);
    echoer.join().expect("the echo client kept its connection");
    let hash = sync.announced["lua_big/client_data/big.bin"];
    assert_eq!(cache[&hash], big, "50 MiB delivered intact");
    assert!(
        during >= 20,
        "the other client was served during the transfer ({during} echoes)"
    );
    server
        .wait_for("reloaded client_file", Duration::from_secs(30))
        .expect("client_file reloaded");
    server
        .wait_for("reloaded network", Duration::from_secs(30))
        .expect("network reloaded");
    assert!(
        !server.output().contains("disconnected:"),
        "{}",
        server.output()
    );
    server.stop_cleanly();
}

/// Reads the announcements up to `core:tell_after_all_files_transferred`:
/// each file's hash.
fn read_announcements(client: &mut RawClient) -> HashMap<String, [u8; 32]> {
    let mut announced = HashMap::new();
    loop {
        let packet = client
            .recv(Duration::from_secs(30))
            .expect("connected")
            .expect("announcements");
        match packet.name.as_str() {
            AnnounceFile::NAME => {
                let announce = AnnounceFile::decode(&packet.data).expect("announce");
                announced.insert(announce.name, announce.hash);
            }
            TellAfterAllFilesTransferred::NAME => return announced,
            _ => {}
        }
    }
}

#[test]
fn repeated_requests_cost_one_transfer_and_a_non_reader_is_dropped() {
    const BIG: &str = "lua_flood/client_data/big.bin";
    let scratch = Scratch::new();
    add_lua_module(&scratch, "lua_flood", None);
    // Bigger than what the kernel's socket buffers take on loopback.
    let big: Vec<u8> = (0..32u32 << 20).map(|i| (i >> 10) as u8).collect();
    std::fs::write(scratch.modules().join(BIG), &big).unwrap();
    let (mut server, address) = start(
        &scratch,
        &[
            "--no-watch",
            "--set",
            "client_file.max_backlog_bytes=1000000",
            "--set",
            "client_file.stall_timeout_ms=1000",
        ],
    );

    // Ten requests for the same file in one write: one transfer.
    let mut client = RawClient::connect(&address).expect("connect");
    let hash = read_announcements(&mut client)[BIG];
    let request = RequestFile {
        name: BIG.into(),
        hash,
    };
    for _ in 0..10 {
        client.queue_packet(&request).expect("queue");
    }
    client.flush().expect("send");
    let mut received = 0u64;
    while let Some(packet) = client.recv(QUIET).expect("connected") {
        if packet.name == FileContent::NAME {
            let piece = FileContent::decode(&packet.data).expect("a piece");
            received += piece.data.len() as u64;
        }
    }
    assert_eq!(received, big.len() as u64, "one copy, not ten");

    // A client that requests it and never reads is dropped, not held.
    let mut lazy = RawClient::connect(&address).expect("connect");
    let hash = read_announcements(&mut lazy)[BIG];
    lazy.send_packet(&RequestFile {
        name: BIG.into(),
        hash,
    })
    .expect("request");
    server
        .wait_for("not reading its files", Duration::from_secs(60))
        .unwrap_or_else(|| panic!("the non-reader is dropped:\n{}", server.output()));
    drop(lazy);

    // A name over the limit is malformed: the sender is dropped, and the
    // reason does not repeat the name.
    let mut long = RawClient::connect(&address).expect("connect");
    read_announcements(&mut long);
    long.send_packet(&RequestFile {
        name: "x".repeat(60 * 1024),
        hash,
    })
    .expect("request");
    let packets = long
        .wait_closed(Duration::from_secs(10))
        .expect("the sender is dropped");
    assert!(
        packets.iter().all(|p| p.data.len() < 1024),
        "nothing echoes the name"
    );
    let line = server
        .wait_for("malformed file request", Duration::from_secs(10))
        .expect("logged");
    assert!(!line.contains("xxxx"), "{line}");

    // Everyone else is still served.
    let mut cache = HashMap::new();
    let mut fresh = RawClient::connect(&address).expect("connect");
    let sync = fresh.sync_files(&mut cache, QUIET);
    assert_eq!(sync.scripts, ["lua_flood/client_lua/init.lua"]);
    server.send("stop");
    assert_eq!(server.wait_exit(Duration::from_secs(30)), Some(0));
}

#[test]
fn refusals_are_logged_a_few_per_client_not_one_per_request() {
    let scratch = Scratch::new();
    add_lua_module(&scratch, "lua_log", None);
    let (mut server, address) = start(&scratch, &["--no-watch"]);
    let mut client = RawClient::connect(&address).expect("connect");
    read_announcements(&mut client);
    for n in 0..50 {
        client
            .queue_packet(&RequestFile {
                name: format!("lua_log/client_lua/missing{n}.lua"),
                hash: [0; 32],
            })
            .expect("queue");
    }
    client.flush().expect("send");
    let mut answered = 0;
    while answered < 50 {
        let packet = client
            .recv(Duration::from_secs(10))
            .expect("connected")
            .expect("every request is answered");
        answered += usize::from(packet.name == FileError::NAME);
    }
    server.pump();
    let logged = server.lines_with(0, "refused file request").len();
    assert!((1..=5).contains(&logged), "{logged} lines for 50 refusals");
    server.send("stop");
    assert_eq!(server.wait_exit(Duration::from_secs(30)), Some(0));
}
