//! The `buildat-client` binary against an in-test fake server speaking the
//! protocol through `buildat-format`'s codec: exit codes, the file flow with
//! a cold and a warm cache, bot mode, `--quit-after`, and a hostile script
//! that does not stop the others. (The same flow against the real server
//! is `tests/e2e.rs`.)

use buildat_client_file_protocol::{
    AnnounceFile, FileContent, RequestFile, TellAfterAllFilesTransferred,
};
use buildat_format::Packet;
use buildat_network_protocol::DisconnectPacket;
use std::io::Write;
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use buildat_harness::fake_server::{Conn, fake_server, serve_files, sha256};

const CLIENT: &str = env!("CARGO_BIN_EXE_buildat-client");

fn client(args: &[&str]) -> Output {
    Command::new(CLIENT)
        .args(args)
        .output()
        .expect("run buildat-client")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// (announced, requested) from the closing summary.
fn summary(output: &Output) -> (u64, u64) {
    let text = stderr(output);
    let line = text
        .lines()
        .find(|l| l.contains(" announced, "))
        .unwrap_or_else(|| panic!("no summary in:\n{text}"));
    let numbers: Vec<u64> = line
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().expect("number"))
        .collect();
    (numbers[0], numbers[1])
}

fn module_files() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        (
            "game/client_lua/init.lua",
            br#"
            local log = buildat.Logger("game")
            local helper = buildat.run_script_file("game/client_lua/helper.lua")
            buildat.sub_packet("test:reply", function(data)
                log:info("reply: " .. data)
                buildat.disconnect()
            end)
            buildat.send_packet("test:hello", helper.greeting .. " from " .. buildat.client_name)
            "#
            .to_vec(),
        ),
        (
            "game/client_lua/helper.lua",
            b"return { greeting = 'hello' }".to_vec(),
        ),
        (
            "game/client_data/big.bin",
            (0..700_000u32).map(|i| (i % 253) as u8).collect(),
        ),
    ]
}

/// The server half of one game session: files, then hello → reply, then
/// the client leaves. Returns the files requested.
fn game_server(conn: &mut Conn) -> Vec<String> {
    let requested = serve_files(conn, &module_files());
    let hello = conn.recv(Duration::from_secs(30)).expect("hello");
    assert_eq!(hello.name, "test:hello");
    assert_eq!(hello.data, b"hello from bot-7");
    conn.send("test:reply", b"welcome");
    assert!(conn.wait_closed(Duration::from_secs(10)), "the client left");
    requested
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        &[][..],
        &["--connect"][..],
        &["--connect", "127.0.0.1:1", "--quit-after", "-1"][..],
        &[
            "--connect",
            "127.0.0.1:1",
            "--script",
            "/nonexistent/bot.lua",
        ][..],
        &["--connect", "127.0.0.1:1", "--bogus"][..],
    ] {
        let out = client(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
    }
    let help = client(&["--help"]);
    assert_eq!(help.status.code(), Some(0));
    let text = String::from_utf8_lossy(&help.stdout);
    for code in [
        "0  normal end",
        "2  usage",
        "3  the server could not",
        "4  protocol",
        "5  disconnected",
    ] {
        assert!(
            text.contains(code),
            "--help documents exit code {code}:\n{text}"
        );
    }
}

#[test]
fn refused_connection_exits_3() {
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let dir = tempfile::tempdir().expect("temp");
    let out = client(&[
        "--connect",
        &format!("127.0.0.1:{port}"),
        "--cache",
        dir.path().to_str().expect("utf8"),
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).contains("cannot connect"), "{}", stderr(&out));
    let out = client(&[
        "--connect",
        "no-such-host.invalid:1",
        "--cache",
        dir.path().to_str().expect("utf8"),
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
}

#[test]
fn disconnect_by_server_exits_5_with_the_reason() {
    let (address, server) = fake_server(|mut conn| {
        conn.send(DisconnectPacket::NAME, "the server is full".as_bytes());
    });
    let dir = tempfile::tempdir().expect("temp");
    let out = client(&[
        "--connect",
        &address,
        "--cache",
        dir.path().to_str().expect("utf8"),
    ]);
    server.join().expect("server");
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    assert!(stderr(&out).contains("disconnected by the server: the server is full"));
}

#[test]
fn a_reason_sent_before_a_reset_is_reported_though_a_write_failed_first() {
    // The kick arrives together with a packet whose handler keeps the
    // client busy and then sends; by then the server has reset the
    // connection, so the client's write fails before it acts on the kick.
    let files: Vec<(&str, Vec<u8>)> = vec![(
        "game/client_lua/init.lua",
        br#"buildat.sub_packet("test:hold", function()
                local n = 0
                for i = 1, 20000000 do n = n + i end
                buildat.send_packet("test:late", tostring(n))
            end)
            buildat.send_packet("test:ready", "")"#
            .to_vec(),
    )];
    let (address, server) = fake_server(move |mut conn| {
        serve_files(&mut conn, &files);
        let ready = conn.recv(Duration::from_secs(30)).expect("ready");
        assert_eq!(ready.name, "test:ready");
        // Both in one write, so the client reads the kick before the reset
        // (a reset makes the client's kernel drop what it has not read).
        conn.send_together(&[
            ("test:hold", b""),
            (DisconnectPacket::NAME, b"kicked: bye for now"),
        ]);
        std::thread::sleep(Duration::from_millis(20));
        conn.reset();
    });
    let dir = tempfile::tempdir().expect("temp");
    let out = client(&[
        "--connect",
        &address,
        "--cache",
        dir.path().to_str().expect("utf8"),
        "--lua-time-ms",
        "10000",
    ]);
    server.join().expect("server");
    let text = stderr(&out);
    assert_eq!(out.status.code(), Some(5), "{text}");
    assert!(
        text.contains("disconnected by the server: kicked: bye for now"),
        "{text}"
    );
}

#[test]
fn protocol_errors_exit_4() {
    // A packet of a type never defined.
    let (address, server) = fake_server(|mut conn| {
        let mut frame = 150u16.to_le_bytes().to_vec();
        frame.extend(0u32.to_le_bytes());
        conn.stream.write_all(&frame).expect("write");
        conn.wait_closed(Duration::from_secs(10))
    });
    let dir = tempfile::tempdir().expect("temp");
    let out = client(&[
        "--connect",
        &address,
        "--cache",
        dir.path().to_str().expect("utf8"),
    ]);
    assert!(server.join().expect("server"));
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert!(stderr(&out).contains("protocol error"), "{}", stderr(&out));

    // File content that does not match the announced hash.
    let (address, server) = fake_server(|mut conn| {
        let a = AnnounceFile {
            name: "m/client_lua/init.lua".into(),
            hash: sha256(b"good"),
            size: 4,
        };
        conn.send(AnnounceFile::NAME, &encoded(&a));
        conn.send(TellAfterAllFilesTransferred::NAME, &[]);
        let request = conn.recv(Duration::from_secs(10)).expect("request");
        assert_eq!(request.name, RequestFile::NAME);
        let bad = FileContent {
            name: a.name,
            hash: a.hash,
            size: 4,
            offset: 0,
            data: b"evil".to_vec(),
        };
        conn.send(FileContent::NAME, &encoded(&bad));
        conn.wait_closed(Duration::from_secs(10))
    });
    let out = client(&[
        "--connect",
        &address,
        "--cache",
        dir.path().to_str().expect("utf8"),
    ]);
    assert!(server.join().expect("server"));
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert!(stderr(&out).contains("hashes to"), "{}", stderr(&out));
    assert_eq!(
        std::fs::read_dir(dir.path().join("files"))
            .expect("cache")
            .count(),
        0,
        "nothing bad was cached"
    );
}

fn run_game(cache: &Path) -> (Output, Vec<String>) {
    let (address, server) = fake_server(|mut conn| game_server(&mut conn));
    let out = client(&[
        "--connect",
        &address,
        "--cache",
        cache.to_str().expect("utf8"),
        "--name",
        "bot-7",
        "--quit-after",
        "60",
        "-v",
    ]);
    let requested = server.join().expect("server side passed");
    (out, requested)
}

#[test]
fn files_flow_cold_then_warm_then_repaired() {
    let dir = tempfile::tempdir().expect("temp");
    let (out, mut requested) = run_game(dir.path());
    let text = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("game: reply: welcome"), "{text}");
    assert!(
        text.contains("disconnected (buildat.disconnect())"),
        "{text}"
    );
    assert!(
        text.contains("receiving files:") || text.contains("files received:"),
        "{text}"
    );
    requested.sort();
    assert_eq!(
        requested,
        [
            "game/client_data/big.bin",
            "game/client_lua/helper.lua",
            "game/client_lua/init.lua"
        ]
    );
    assert_eq!(summary(&out), (3, 3));
    let entries = std::fs::read_dir(dir.path().join("files"))
        .expect("cache")
        .count();
    assert_eq!(entries, 3);

    // Warm: nothing is transferred.
    let (out, requested) = run_game(dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(requested.is_empty(), "{requested:?}");
    assert_eq!(summary(&out), (3, 0));
    assert!(stderr(&out).contains("game: reply: welcome"));

    // A corrupted entry is detected and only it is fetched again.
    let big: Vec<u8> = (0..700_000u32).map(|i| (i % 253) as u8).collect();
    let entry = dir
        .path()
        .join("files")
        .join(buildat_client::cache::hex(&sha256(&big)));
    let mut bytes = std::fs::read(&entry).expect("entry");
    bytes[1234] ^= 0xff;
    std::fs::write(&entry, bytes).expect("corrupt");
    let (out, requested) = run_game(dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(requested, ["game/client_data/big.bin"]);
    assert!(stderr(&out).contains("corrupt"), "{}", stderr(&out));
    assert_eq!(summary(&out), (3, 1));
    assert_eq!(std::fs::read(&entry).expect("entry"), big, "repaired");
}

#[test]
fn a_hostile_module_does_not_stop_the_others() {
    let files: Vec<(&str, Vec<u8>)> = vec![
        ("a_evil/client_lua/init.lua", b"while true do end".to_vec()),
        (
            "b_bomb/client_lua/init.lua",
            b"local s = 'x' while true do s = s .. s end".to_vec(),
        ),
        (
            "c_good/client_lua/init.lua",
            br#"buildat.send_packet("test:alive", "yes") buildat.disconnect()"#.to_vec(),
        ),
    ];
    let (address, server) = fake_server(move |mut conn| {
        serve_files(&mut conn, &files);
        let p = conn
            .recv(Duration::from_secs(30))
            .expect("the good module ran");
        assert_eq!(
            (p.name.as_str(), p.data.as_slice()),
            ("test:alive", &b"yes"[..])
        );
        conn.wait_closed(Duration::from_secs(10))
    });
    let dir = tempfile::tempdir().expect("temp");
    let out = client(&[
        "--connect",
        &address,
        "--cache",
        dir.path().to_str().expect("utf8"),
        "--lua-time-ms",
        "200",
        "--lua-memory-mb",
        "64",
    ]);
    assert!(server.join().expect("server"));
    let text = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    // Each failure's line names its file, and where the loop was.
    let line_of = |file: &str| {
        text.lines()
            .find(|line| line.contains(&format!("{file}: ")))
            .unwrap_or_default()
    };
    assert!(
        line_of("a_evil/client_lua/init.lua")
            .contains("a_evil/client_lua/init.lua:1: stopped: ran past the time limit"),
        "{text}"
    );
    assert!(
        line_of("b_bomb/client_lua/init.lua").contains("stopped: the Lua memory limit"),
        "{text}"
    );
    assert!(text.contains("scripts: 3 run, 2 Lua errors"), "{text}");
}

#[test]
fn bot_mode_and_quit_after() {
    let bot_dir = tempfile::tempdir().expect("temp");
    let bot = bot_dir.path().join("bot.lua");
    std::fs::write(
        &bot,
        r#"
        local n = 0
        buildat.set_interval(0.01, function()
            n += 1
            buildat.send_packet("test:tick", tostring(n))
            if n == 3 then buildat.disconnect() end
        end)
        "#,
    )
    .expect("write bot");
    let (address, server) = fake_server(|mut conn| {
        serve_files(&mut conn, &[]);
        let mut ticks = Vec::new();
        while let Some(p) = conn.recv(Duration::from_secs(10)) {
            ticks.push(String::from_utf8(p.data).expect("utf8"));
        }
        ticks
    });
    let out = client(&[
        "--connect",
        &address,
        "--cache",
        bot_dir.path().to_str().expect("utf8"),
        "--script",
        bot.to_str().expect("utf8"),
    ]);
    assert_eq!(server.join().expect("server"), ["1", "2", "3"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    // --quit-after against a server that never says anything.
    let (address, server) = fake_server(|mut conn| conn.wait_closed(Duration::from_secs(20)));
    let start = Instant::now();
    let out = client(&[
        "--connect",
        &address,
        "--cache",
        bot_dir.path().to_str().expect("utf8"),
        "--quit-after",
        "0.3",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(start.elapsed() < Duration::from_secs(5));
    assert!(
        server.join().expect("server"),
        "the client closed its connection"
    );
}

/// A packet's payload, by its definition (the harness's one helper).
#[allow(unused_imports)]
pub use buildat_harness::raw_client::encoded;
