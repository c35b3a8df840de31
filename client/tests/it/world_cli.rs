//! The world stream through the `buildat-client` binary against an in-test
//! fake server (the real server's stream is `tests/world_e2e.rs`): chunks
//! acknowledged in batches, updates and unloads counted in the summary
//! line, the ASCII map on stdout and the PNG map; acking paused and resumed
//! from a bot script; and `--bots 3` (three sessions on threads, named
//! `bot-1..3`, each with its own world view, the worst exit code).

use buildat_format::Packet;
use buildat_main_protocol::{Dig, Edit, Edits, Join, Move, Ping, Place, Pong, Refused, Spawn};
use buildat_network_protocol::DisconnectPacket;
use buildat_replicate_protocol::{NodeDelta, NodeState, NodeUpdates};
use buildat_voxelworld_protocol::DynamicNode;
use buildat_voxelworld_protocol::stream::{Ack, Chunk, Registry, UnloadChunk};
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use crate::common::world_data::*;
use buildat_harness::fake_server::{Conn, fake_server, fake_server_many, serve_files};

const CLIENT: &str = env!("CARGO_BIN_EXE_buildat-client");

fn client(args: &[&str]) -> Output {
    Command::new(CLIENT)
        .args(args)
        .output()
        .expect("run buildat-client")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Reads packets until the acks add up to `want` (or the time is up);
/// returns the acks' counts and the other packets' names.
fn read_acks(conn: &mut Conn, want: u32, timeout: Duration) -> (Vec<u32>, Vec<String>) {
    let deadline = Instant::now() + timeout;
    let (mut acks, mut other) = (Vec::new(), Vec::new());
    while acks.iter().sum::<u32>() < want {
        let Some(left) = deadline.checked_duration_since(Instant::now()) else {
            break;
        };
        let Some(p) = conn.recv(left) else { break };
        if p.name == Ack::NAME {
            let ack = Ack::decode(&p.data).expect("a well-formed ack");
            acks.push(ack.chunks);
        } else {
            other.push(p.name);
        }
    }
    (acks, other)
}

const MAP_MODULE: &str = r#"
buildat.world.set_focus(0.5, 11, 0.5)
buildat.sub_packet("test:done", function()
    print("seen " .. tostring(buildat.world.get_voxel(0, 10, 0)) .. " at 0,10,0; "
        .. buildat.world.chunk_count() .. " chunks held, "
        .. buildat.world.chunks_received() .. " received")
    buildat.disconnect()
end)
"#;

#[test]
fn the_stream_is_acked_counted_and_mapped() {
    let (address, server) = fake_server(|mut conn| {
        serve_files(
            &mut conn,
            &[("game/client_lua/init.lua", MAP_MODULE.as_bytes().to_vec())],
        );
        let registry = registry();
        conn.send(Registry::NAME, &registry_packet(&registry));
        for chunk in MAP_CHUNKS {
            conn.send(Chunk::NAME, &chunk_packet(&registry, chunk, &terrain));
        }
        conn.send(Chunk::NAME, &chunk_packet(&registry, [0, 1, 0], &|_| "air"));
        let (first, _) = read_acks(&mut conn, 4, Duration::from_secs(20));
        // An update of a held chunk and an unload.
        conn.send(Chunk::NAME, &chunk_packet(&registry, [0, 0, 0], &terrain));
        conn.send(UnloadChunk::NAME, &unload_packet([0, 1, 0]));
        let (second, _) = read_acks(&mut conn, 1, Duration::from_secs(20));
        conn.send("test:done", b"");
        assert!(conn.wait_closed(Duration::from_secs(10)), "the client left");
        (first, second)
    });
    let scratch = tempfile::tempdir().expect("temp dir");
    let png_path = scratch.path().join("map.png");
    let out = client(&[
        "--connect",
        &address,
        "--cache",
        &scratch.path().join("cache").display().to_string(),
        "--quit-after",
        "60",
        "--ascii-map",
        "--map",
        &png_path.display().to_string(),
    ]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    eprintln!("{stderr}");
    println!("{stdout}");
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let (first, second) = server.join().expect("server");
    assert_eq!(first.iter().sum::<u32>(), 4, "every chunk acked: {first:?}");
    assert!(first.len() <= 4, "{first:?}");
    assert_eq!(second, [1]);
    assert!(
        stderr.contains("seen grass at 0,10,0; 3 chunks held, 5 received"),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "buildat-client: world: held 3 chunks, received 5 chunk packets (1 updates), \
             first chunk (0,0,0); 1 unloaded\n"
        ),
        "{stderr}"
    );
    // The map on stdout: the focus row as the synthetic terrain says.
    assert!(stdout.starts_with("map: top-down"), "{stdout}");
    assert!(
        stdout.contains(&format!("|{}|", terrain_row(0, true))),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("|{}|", terrain_row(7, false))),
        "{stdout}"
    );
    assert!(stderr.contains(&format!("map written to {}", png_path.display())));
    let decoder = png::Decoder::new(std::io::BufReader::new(
        std::fs::File::open(&png_path).expect("the PNG exists"),
    ));
    let info = decoder.read_info().expect("a PNG").info().clone();
    let side = 49 * buildat_client::world::PNG_PIXELS_PER_COLUMN;
    assert_eq!((info.width, info.height), (side, side));
}

#[test]
fn a_bot_pauses_and_resumes_acking() {
    let (address, server) = fake_server(|mut conn| {
        serve_files(&mut conn, &[]);
        let registry = registry();
        conn.send(Registry::NAME, &registry_packet(&registry));
        for x in 0..5 {
            conn.send(Chunk::NAME, &chunk_packet(&registry, [x, 0, 0], &terrain));
        }
        let started = Instant::now();
        let (paused, _) = read_acks(&mut conn, 1, Duration::from_millis(500));
        let (resumed, _) = read_acks(&mut conn, 5, Duration::from_secs(20));
        let waited = started.elapsed();
        conn.send("test:bye", b"");
        assert!(conn.wait_closed(Duration::from_secs(10)), "the client left");
        (paused, resumed, waited)
    });
    let scratch = tempfile::tempdir().expect("temp dir");
    let script = scratch.path().join("pause.lua");
    std::fs::write(
        &script,
        r#"
        local log = buildat.Logger("pause")
        buildat.world.set_acking(false)
        buildat.set_timeout(1.5, function()
            log:info("resuming with " .. buildat.world.chunks_received() .. " chunks")
            buildat.world.set_acking(true)
        end)
        buildat.sub_packet("test:bye", function() buildat.disconnect() end)
        "#,
    )
    .expect("script");
    let out = client(&[
        "--connect",
        &address,
        "--cache",
        &scratch.path().join("cache").display().to_string(),
        "--script",
        &script.display().to_string(),
        "--quit-after",
        "60",
    ]);
    let stderr = text(&out.stderr);
    eprintln!("{stderr}");
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let (paused, resumed, waited) = server.join().expect("server");
    assert_eq!(paused, Vec::<u32>::new(), "no ack while paused");
    assert_eq!(resumed, [5], "one ack for everything received meanwhile");
    assert!(waited >= Duration::from_millis(1000), "{waited:?}");
    assert!(stderr.contains("resuming with 5 chunks"), "{stderr}");
    assert!(stderr.contains(
        "world: held 5 chunks, received 5 chunk packets (0 updates), first chunk (0,0,0)"
    ));
}

const HELLO_MODULE: &str = r#"
buildat.send_packet("test:hello", buildat.client_name)
buildat.sub_packet("test:bye", function() buildat.disconnect() end)
"#;

#[test]
fn bots_run_as_named_threads_and_the_worst_exit_code_wins() {
    let (address, server) = fake_server_many(3, |mut conn| {
        serve_files(
            &mut conn,
            &[("game/client_lua/init.lua", HELLO_MODULE.as_bytes().to_vec())],
        );
        let hello = conn.recv(Duration::from_secs(30)).expect("hello");
        assert_eq!(hello.name, "test:hello");
        let name = String::from_utf8(hello.data).expect("name");
        let n: i32 = name
            .strip_prefix("bot-")
            .expect("bot-N")
            .parse()
            .expect("N");
        let registry = registry();
        conn.send(Registry::NAME, &registry_packet(&registry));
        for x in 0..n {
            conn.send(Chunk::NAME, &chunk_packet(&registry, [x, 0, 0], &terrain));
        }
        let (acks, _) = read_acks(&mut conn, n as u32, Duration::from_secs(20));
        if n == 3 {
            conn.send(DisconnectPacket::NAME, b"test over");
        } else {
            conn.send("test:bye", b"");
        }
        conn.wait_closed(Duration::from_secs(10));
        (name, acks.iter().sum::<u32>())
    });
    let scratch = tempfile::tempdir().expect("temp dir");
    let png = scratch.path().join("map.png");
    let out = client(&[
        "--connect",
        &address,
        "--cache",
        &scratch.path().join("cache").display().to_string(),
        "--bots",
        "3",
        "--quit-after",
        "60",
        "--map",
        &png.display().to_string(),
    ]);
    let stderr = text(&out.stderr);
    eprintln!("{stderr}");
    let mut served = server.join().expect("server");
    served.sort();
    assert_eq!(
        served,
        [
            ("bot-1".to_string(), 1),
            ("bot-2".to_string(), 2),
            ("bot-3".to_string(), 3)
        ]
    );
    assert_eq!(
        out.status.code(),
        Some(5),
        "bot-3 was disconnected: the worst code"
    );
    for n in 1..=3 {
        assert!(
            stderr.contains(&format!(
                "bot-{n}: world: held {n} chunks, received {n} chunk packets (0 updates), first chunk (0,0,0)"
            )),
            "{stderr}"
        );
        assert!(
            stderr.contains(&format!("bot-{n}: files: 1 announced")),
            "{stderr}"
        );
        assert!(scratch.path().join(format!("map-bot-{n}.png")).is_file());
    }
    assert!(stderr.contains("bot-3: disconnected by the server: test over"));
    assert!(stderr.contains("bot-1: disconnected (buildat.disconnect())"));
    // --bots with a usage error still exits 2.
    assert_eq!(
        client(&["--connect", &address, "--bots", "0"])
            .status
            .code(),
        Some(2)
    );
}

#[test]
fn bot_scripts_parse_and_use_the_game_module() {
    // Each shipped bot script compiles and runs against a stand-in for the
    // game module (the real one is exercised in tests/world_e2e.rs).
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for bot in ["walker", "builder", "pinger"] {
        let path = root.join("scripts").join("bots").join(format!("{bot}.lua"));
        let source = std::fs::read(&path).expect("bot script");
        let rt = buildat_client::sandbox::Runtime::new(buildat_client::sandbox::Options::default())
            .expect("runtime");
        rt.set_file(
            "main/client_lua/init.lua",
            br#"
            local M = {}
            function M.on_spawn(fn) fn(1, 0.5, 11, 0.5) end
            function M.on_edit(fn) end
            function M.on_refused(fn) end
            function M.position() return 0.5, 11, 0.5 end
            function M.peer() return 1 end
            function M.move() end
            function M.dig() end
            function M.place() end
            function M.ping() return 1 end
            return M
            "#,
        );
        rt.run_trusted(&path.display().to_string(), &source)
            .unwrap_or_else(|e| panic!("{bot}: {e}"));
        std::thread::sleep(Duration::from_millis(300));
        let errors = rt.run_due_timers(Instant::now());
        assert!(errors.is_empty(), "{bot}: {errors:?}");
        assert!(rt.run_exit_hooks().is_empty(), "{bot}");
    }
}

#[test]
fn the_game_module_speaks_the_main_protocol() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let init =
        std::fs::read(root.join("modules/main/client_lua/init.lua")).expect("main's init.lua");
    let (address, server) = fake_server(move |mut conn| {
        serve_files(&mut conn, &[("main/client_lua/init.lua", init)]);
        // The game's Lua and the game's packet definitions agree on every
        // layout: the Rust definitions write what the Lua reads and read
        // what it writes.
        let join = conn.recv(Duration::from_secs(30)).expect("join");
        assert_eq!(join.name, Join::NAME);
        assert_eq!(Join::decode(&join.data).unwrap().name, "tester");
        conn.send_packet(&Spawn {
            peer: 7,
            position: [0.5, 11.0, 0.5],
        });
        // The other player and this one, as the nodes replication sends.
        let player = |id: u64, peer: u64, name: &str, position: [f64; 3]| {
            let vars = std::collections::BTreeMap::from([
                ("player".to_string(), name.as_bytes().to_vec()),
                ("peer".to_string(), peer.to_le_bytes().to_vec()),
            ]);
            NodeState::of(&DynamicNode::at_rest(id, position, false, vars))
        };
        let other = player(100, 9, "other", [1.0, 2.0, 3.0]);
        conn.send_packet(&NodeUpdates {
            time_ms: 1,
            added: vec![other.clone(), player(101, 7, "tester", [0.5, 11.0, 0.5])],
            changed: vec![],
            removed: vec![],
        });
        conn.send_packet(&Edits {
            edits: vec![Edit {
                peer: 9,
                voxel: [1, 10, -2],
                name: "stone".into(),
            }],
        });
        // A move of the other player, as a delta.
        conn.send_packet(&NodeUpdates {
            time_ms: 2,
            added: vec![],
            changed: vec![
                NodeDelta::between(&other, &player(100, 9, "other", [4.0, 2.0, 3.0]))
                    .expect("moved"),
            ],
            removed: vec![],
        });
        conn.send_packet(&Refused {
            reason: "too far".into(),
        });
        let mut seen = Vec::new();
        while seen.len() < 4 {
            let p = conn
                .recv(Duration::from_secs(30))
                .expect("the bot's actions");
            match p.name.as_str() {
                Move::NAME => assert_eq!(Move::decode(&p.data).unwrap().position, [1.5, 11.0, 0.5]),
                Dig::NAME => assert_eq!(Dig::decode(&p.data).unwrap().voxel, [1, 10, -1]),
                Place::NAME => {
                    let place = Place::decode(&p.data).unwrap();
                    assert_eq!((place.voxel, place.name.as_str()), ([1, 10, -1], "stone"));
                }
                Ping::NAME => {
                    let ping = Ping::decode(&p.data).unwrap();
                    assert!(ping.data.len() <= 64);
                    conn.send_packet(&Pong { data: ping.data });
                }
                other => panic!("unexpected {other}"),
            }
            seen.push(p.name);
        }
        let checked = conn.recv(Duration::from_secs(30)).expect("checked");
        assert_eq!(checked.name, "test:checked");
        conn.send_packet(&NodeUpdates {
            time_ms: 3,
            added: vec![],
            changed: vec![],
            removed: vec![100],
        });
        assert!(conn.wait_closed(Duration::from_secs(20)), "the client left");
        seen
    });
    let scratch = tempfile::tempdir().expect("temp dir");
    let script = scratch.path().join("bot.lua");
    std::fs::write(
        &script,
        r#"
        local main = require("buildat/module/main")
        local log = buildat.Logger("bot")
        main.on_spawn(function(peer, x, y, z)
            log:info("on_spawn " .. peer .. " " .. x .. "," .. y .. "," .. z)
            main.move(x + 1, y, z)
            main.dig(1, 10, -0.5)
            main.place(1.9, 10, -1, "stone")
            main.ping(function(rtt) log:info("pong after " .. string.format("%.3f", rtt) .. " s") end)
        end)
        main.on_edit(function(who, x, y, z, name) log:info("on_edit " .. who .. " " .. x .. "," .. y .. "," .. z .. " " .. name) end)
        buildat.set_timeout(1.0, function()
            local n = 0
            for peer, p in pairs(main.players()) do n += 1 log:info("player " .. peer .. " " .. p.name .. " at x " .. p.x) end
            log:info("check: peer " .. tostring(main.peer()) .. ", players " .. n .. ", edits " .. main.edits_seen())
            log:info(main.summary())
            buildat.send_packet("test:checked", "")
            buildat.set_timeout(0.5, function()
                log:info("after leave: " .. main.summary())
                buildat.disconnect()
            end)
        end)
        "#,
    )
    .expect("script");
    let out = client(&[
        "--connect",
        &address,
        "--cache",
        &scratch.path().join("cache").display().to_string(),
        "--script",
        &script.display().to_string(),
        "--name",
        "tester",
        "--quit-after",
        "60",
        "--ascii-map",
        "--map-radius",
        "2",
        "-v",
    ]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    eprintln!("{stderr}");
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let mut seen = server.join().expect("server");
    seen.sort();
    assert_eq!(seen, [Dig::NAME, Move::NAME, Ping::NAME, Place::NAME]);
    for expected in [
        "info    main: spawned at 0.5,11.0,0.5 as peer 7",
        "on_spawn 7 0.5,11,0.5",
        "verbose main: player other (peer 9) is at 1.0,2.0,3.0",
        "on_edit 9 1,10,-2 stone",
        "warning main: refused: too far",
        "pong after ",
        "player 9 other at x 4",
        "check: peer 7, players 1, edits 1",
        "position 1.5,11.0,0.5; chunks held 0; edits seen 1; players 2",
        "verbose main: player other (peer 9) left",
        "after leave: position 1.5,11.0,0.5; chunks held 0; edits seen 1; players 1",
        "nodes: 1 known",
    ] {
        assert!(stderr.contains(expected), "{expected:?} missing:\n{stderr}");
    }
    // The module set the focus: the map is centred on the player.
    assert!(stdout.contains("focus (1,11,0) is @"), "{stdout}");
}
