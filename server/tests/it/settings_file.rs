//! `<world>/world.toml` as the modules' settings file, on the real binary
//! with the network module: a value in `[network]` is honoured (a second
//! connection from one address refused) and listed with its source; a
//! mistyped key is warned about with the nearest real name; the first
//! start adds the commented defaults keeping the operator's lines; the
//! console's `set` is checked, kept in the file with its comments and read
//! by the next `reload`; a bad value stops the start naming the key; and
//! in-process, `--set` wins over the file, which wins over the default.
//! With the game: a live setting's `set` is applied at once (`main.motd`
//! told the next joiner, `main.whitelist` disconnecting who is not on it,
//! the world border, backups and the rollback log), a refused one leaves
//! the file as it was, the others wait for a reload; and a key a module
//! reads that no module declares is warned about (none in the default
//! game, `probe_panic` of the probe fixture).

use std::process::Stdio;
use std::time::Duration;

use buildat_format::Packet;
use buildat_harness::raw_client::RawClient;
use buildat_network_api::DisconnectPacket;
use buildat_test_net_probe_api::Echo;

use crate::common::{self, Scratch, run_headless};

const WORLD_TOML: &str = "\
# My world's notes.
[world]
name = \"Settings test\"

[network]
# One connection an address, for this test.
max_connections_per_ip = 1
connects_per_ip_per_second = 0
max_conections = 5

[netwrok]
max_frame_size = 1
";

fn write_world_toml(scratch: &Scratch, text: &str) -> std::path::PathBuf {
    std::fs::create_dir_all(scratch.world()).expect("world dir");
    let path = scratch.world().join("world.toml");
    std::fs::write(&path, text).expect("world.toml");
    path
}

/// An echo comes back: the connection is served.
fn echoed(client: &mut RawClient) {
    client.queue_packet(&Echo::seq(7)).expect("queue");
    client.flush().expect("send");
    let packet = client
        .recv(Duration::from_secs(30))
        .expect("connected")
        .expect("an echo within 30 s");
    assert_eq!(packet.name, Echo::NAME);
}

/// Why the server closed `client`.
fn refused(client: &mut RawClient) -> String {
    let packets = client
        .wait_closed(Duration::from_secs(10))
        .expect("refused and closed");
    packets
        .iter()
        .find(|p| p.name == DisconnectPacket::NAME)
        .and_then(|p| DisconnectPacket::decode(&p.data).ok())
        .expect("a reason is sent")
        .reason
}

#[test]
fn world_toml_settings_are_honoured_listed_and_set_from_the_console() {
    let scratch = Scratch::new();
    scratch.add_network();
    let path = write_world_toml(&scratch, WORLD_TOML);

    // `settings`: the file's value and its source; the typo named.
    let (status, output) = run_headless(&scratch, &["settings".to_string()]);
    assert_eq!(status, Some(0), "{output}");
    let row = |key: &str| -> Vec<String> {
        output
            .lines()
            .find(|line| line.split_whitespace().next() == Some(key))
            .unwrap_or_else(|| panic!("no row for {key}:\n{output}"))
            .split_whitespace()
            .map(String::from)
            .collect()
    };
    assert_eq!(
        row("network.max_connections_per_ip")[1..5],
        ["usize", "16", "1", "world.toml"],
        "{output}"
    );
    assert_eq!(
        row("network.max_frame_size")[1..5],
        ["u32", "16777216", "16777216", "default"],
        "{output}"
    );
    assert!(
        output.contains(
            "network.max_conections is not a setting of network; did you mean \
             network.max_connections? (set in world.toml"
        ),
        "the typo is warned about with the real name:\n{output}"
    );
    assert!(
        output.contains(
            "netwrok.max_frame_size is not a setting of any loaded module; did you mean \
             network.max_frame_size? (set in world.toml"
        ),
        "a misspelt table too:\n{output}"
    );
    assert!(
        !output.contains("world.name is not"),
        "[world] is voxelworld's own:\n{output}"
    );
    assert_eq!(
        std::fs::read_to_string(&path).expect("world.toml"),
        WORLD_TOML,
        "a headless command leaves the file as it is (restore needs voxelworld's default)"
    );

    // The real server honours it: a second connection is refused.
    let mut args = scratch.server_args();
    args.extend(["--listen", "127.0.0.1:0", "--no-watch"].map(String::from));
    let mut server = common::start_server(&args, Stdio::piped());
    let address = server.listen_address();
    server.expect_line("server started", Duration::from_secs(60));
    let mut first = RawClient::connect(&address).expect("connect");
    echoed(&mut first);
    let mut second = RawClient::connect(&address).expect("connect");
    let reason = refused(&mut second);
    assert!(reason.contains("too many connections"), "{reason}");

    // The first start (not the headless `settings`) added every setting,
    // commented under its help, and kept the operator's lines.
    let text = std::fs::read_to_string(&path).expect("world.toml");
    for kept in [
        "# My world's notes.\n[world]\nname = \"Settings test\"\n\n[network]\n",
        "# One connection an address, for this test.\nmax_connections_per_ip = 1\n\
         connects_per_ip_per_second = 0\nmax_conections = 5\n",
        "[netwrok]\nmax_frame_size = 1\n",
    ] {
        assert!(text.contains(kept), "{kept:?} kept as it was:\n{text}");
    }
    assert!(
        text.contains("# Largest frame a peer may send, in bytes.\n# max_frame_size = 16777216\n"),
        "{text}"
    );
    assert!(
        !text.contains("# max_connections_per_ip ="),
        "set: not added:\n{text}"
    );

    // `set`: checked against the declaration, kept in the file with its
    // comments, read by the next reload.
    let answer = common::console(&mut server, "set network.max_frame_size lots", "error");
    assert!(
        answer.contains("network.max_frame_size") && answer.contains("'lots' is not a valid u32"),
        "{answer}"
    );
    let answer = common::console(
        &mut server,
        "set network.max_conections 3",
        "did you mean network.max_connections",
    );
    assert!(answer.contains("error"), "{answer}");
    common::console(
        &mut server,
        "set network.max_frame_size 65536",
        "at the next reload of network",
    );
    common::console(
        &mut server,
        "set network.max_connections_per_ip 3",
        "at the next reload of network",
    );
    let text = std::fs::read_to_string(&path).expect("world.toml");
    assert!(
        text.contains("# One connection an address, for this test.\nmax_connections_per_ip = 3\n"),
        "the value replaced, its comment kept:\n{text}"
    );
    assert!(text.contains("max_frame_size = 65536\n"), "{text}");
    assert!(
        !text.contains("# max_frame_size ="),
        "the commented line replaced:\n{text}"
    );
    assert!(text.starts_with("# My world's notes.\n[world]\nname = \"Settings test\"\n"));
    assert!(
        text.contains("\nmax_conections = 5\n"),
        "the rest kept:\n{text}"
    );
    common::console(&mut server, "reload network", "reloaded");
    let mut more: Vec<RawClient> = (0..2)
        .map(|_| RawClient::connect(&address).expect("connect"))
        .collect();
    for client in &mut more {
        echoed(client);
    }
    server.send("stop");
    assert_eq!(server.wait_exit(Duration::from_secs(30)), Some(0));
}

#[test]
fn a_bad_value_in_world_toml_stops_the_start_naming_the_key() {
    let scratch = Scratch::new();
    scratch.add_network();
    write_world_toml(&scratch, "[network]\nmax_frame_size = \"lots\"\n");
    let mut args = scratch.server_args();
    args.extend(["--listen", "127.0.0.1:0", "--no-watch"].map(String::from));
    let mut server = common::start_server(&args, Stdio::null());
    let status = server.wait_exit(Duration::from_secs(120));
    let output = server.output();
    assert!(
        matches!(status, Some(code) if code != 0),
        "{status:?}\n{output}"
    );
    assert!(
        output.contains("setting network.max_frame_size: 'lots' is not a valid u32"),
        "{output}"
    );
    assert!(output.contains("the server did not start"), "{output}");
}

#[test]
fn set_wins_over_the_file_which_wins_over_the_default() {
    use buildat_interface::config::HEADLESS;
    use buildat_interface::core_api::{ListSettings, SettingSource};

    let scratch = Scratch::new();
    scratch.add_network();
    write_world_toml(
        &scratch,
        "[network]\nmax_name_len = 5\nmax_frame_size = 1000\n",
    );
    let core = scratch.core(&[(HEADLESS, "1"), ("network.max_name_len", "9")]);
    core.start().expect("the modules load");
    let listed = core.call_typed(&ListSettings {}, None).expect("list");
    let setting = |key: &str| {
        listed
            .iter()
            .flat_map(|m| &m.settings)
            .find(|s| s.info.key == key)
            .map(|s| (s.value.clone(), s.source))
            .unwrap_or_else(|| panic!("{key} is declared"))
    };
    assert_eq!(
        setting("network.max_name_len"),
        (Some("9".into()), SettingSource::Set)
    );
    assert_eq!(
        setting("network.max_frame_size"),
        (Some("1000".into()), SettingSource::File)
    );
    assert_eq!(
        setting("network.idle_timeout_ms"),
        (None, SettingSource::Default)
    );
    core.stop_all();
}

/// The next chat line `client` is told holding `text`.
fn told(client: &mut RawClient, text: &str) -> String {
    use buildat_main_api::ChatLine;
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let left = deadline
            .checked_duration_since(std::time::Instant::now())
            .unwrap_or_else(|| panic!("not told {text:?} within 60 s"));
        let Some(packet) = client.recv(left).expect("still connected") else {
            continue;
        };
        if packet.name == ChatLine::NAME {
            let line = ChatLine::decode(&packet.data).expect("a chat line").text;
            if line.contains(text) {
                return line;
            }
        }
    }
}

/// The APPLIED cell of a `settings` row (KEY TYPE DEFAULT VALUE SOURCE
/// APPLIED HELP...): the word after the SOURCE (a value may hold spaces).
fn applied_of(row: &str) -> String {
    let words: Vec<&str> = row.split_whitespace().collect();
    words
        .iter()
        .position(|w| ["--set", "world.toml", "default"].contains(w))
        .and_then(|at| words.get(at + 1))
        .unwrap_or(&"")
        .to_string()
}

#[test]
fn live_settings_are_applied_at_once_and_the_others_at_the_next_reload() {
    let scratch = Scratch::new();
    scratch.add_game();
    let (mut server, address) = common::start_small_game(&scratch, &["main.motd=Old news"]);
    let path = scratch.world().join("world.toml");

    // The running server's listing says which are live.
    let row = common::console(&mut server, "settings", "main.motd ");
    assert_eq!(applied_of(&row), "live", "{row}");
    let row = common::console(&mut server, "settings", "main.news_radius ");
    assert_eq!(applied_of(&row), "reload", "{row}");

    // `--set` wins for this run: kept in the file, not applied.
    common::console(
        &mut server,
        "set main.motd Not now",
        "--set main.motd=Old news still wins",
    );

    // A live one: applied before `set` answers; the next joiner is told it.
    let mut bob = common::join(&address, "bob");
    common::console(
        &mut server,
        "set main.whitelist ann,cid",
        "main.whitelist = \"ann,cid\" is in",
    );
    let answer = server
        .wait_for_from(0, "applied now by main", Duration::from_secs(30))
        .unwrap_or_else(|| panic!("applied:\n{}", server.output()));
    assert!(
        answer.contains("disconnected 1 not on the new whitelist: bob"),
        "{answer}"
    );
    let packets = bob
        .wait_closed(Duration::from_secs(30))
        .expect("bob is disconnected");
    let reason = packets
        .iter()
        .find(|p| p.name == DisconnectPacket::NAME)
        .and_then(|p| DisconnectPacket::decode(&p.data).ok())
        .expect("told why")
        .reason;
    assert_eq!(reason, "bob is not on this server's whitelist");
    let mut ann = common::join(&address, "ann");
    assert_eq!(told(&mut ann, "Old news"), "Old news", "--set still wins");

    // Not live: in the file, read at the next reload.
    common::console(
        &mut server,
        "set main.news_radius 64",
        "main reads it at the next reload of main",
    );

    // The world's: border, backups, rollback log, each applied now.
    let answer = common::console(&mut server, "set voxelworld.border 200", "voxelworld");
    assert!(
        answer.contains("applied now by voxelworld: the world border is 200 blocks"),
        "{answer}"
    );
    let answer = common::console(&mut server, "set backup.every 6h", "backup.every");
    assert!(
        answer.contains("applied now by voxelworld: the next backup in 6h"),
        "{answer}"
    );
    let answer = common::console(
        &mut server,
        "set rollback.enabled false",
        "rollback.enabled",
    );
    assert!(
        answer.contains("applied now by voxelworld: the rollback log is off"),
        "{answer}"
    );

    // Refused by the module: it keeps its value, and the file is put back.
    let before = std::fs::read_to_string(&path).expect("world.toml");
    let answer = common::console(&mut server, "set backup.keep 0", "backup.keep");
    assert!(
        answer.starts_with("error:") && answer.contains("did not apply it and keeps the value"),
        "{answer}"
    );
    assert!(answer.contains("is as it was"), "{answer}");
    assert_eq!(std::fs::read_to_string(&path).expect("world.toml"), before);
    let row = common::console(&mut server, "settings", "backup.keep ");
    assert_eq!(row.split_whitespace().nth(3), Some("7"), "{row}");

    server.send("stop");
    assert_eq!(server.wait_exit(Duration::from_secs(60)), Some(0));
    let output = server.output();
    assert!(
        !output.contains("which no loaded module declares"),
        "the game reads only declared settings:\n{output}"
    );
    let text = std::fs::read_to_string(&path).expect("world.toml");
    assert!(text.contains("whitelist = \"ann,cid\""), "{text}");
    assert!(text.contains("border = 200"), "{text}");
}

#[test]
fn a_live_motd_is_told_to_the_next_joiner_without_a_reload() {
    let scratch = Scratch::new();
    scratch.add_game();
    let (mut server, address) = common::start_small_game(&scratch, &[]);
    let answer = common::console(&mut server, "set main.motd Fresh news", "main.motd");
    assert!(answer.contains("applied now by main"), "{answer}");
    let mut ann = common::join(&address, "ann");
    assert_eq!(told(&mut ann, "Fresh news"), "Fresh news");
    server.send("stop");
    assert_eq!(server.wait_exit(Duration::from_secs(60)), Some(0));
    assert!(
        !server.output().contains("reloaded"),
        "no reload:\n{}",
        server.output()
    );
}

#[test]
fn the_default_game_reads_only_declared_settings_and_lists_each_with_its_help() {
    let scratch = Scratch::new();
    let args: Vec<String> = [
        "settings",
        "--world",
        &scratch.world().display().to_string(),
        "--build-dir",
        &common::build_dir().display().to_string(),
        "--module-profile",
        "dev",
    ]
    .map(String::from)
    .to_vec();
    let mut server = common::start_server(&args, Stdio::null());
    let status = server.wait_exit(Duration::from_secs(900));
    let output = server.output();
    assert_eq!(status, Some(0), "{output}");
    assert!(
        !output.contains("which no loaded module declares"),
        "every module reads only declared settings:\n{output}"
    );
    // (key, APPLIED, help)
    let rows: Vec<(&str, String, String)> = output
        .lines()
        .filter_map(|line| {
            let key = line.split_whitespace().next()?;
            let applied = applied_of(line);
            if !key.contains('.') || !["live", "reload"].contains(&applied.as_str()) {
                return None;
            }
            let help = line
                .split_once(&format!(" {applied} "))
                .map(|(_, help)| help.trim().to_string())
                .unwrap_or_default();
            Some((key, applied, help))
        })
        .collect();
    assert!(rows.len() > 50, "every module's settings:\n{output}");
    for (key, _, help) in &rows {
        assert!(!help.is_empty(), "{key} has its help:\n{output}");
    }
    let applied = |key: &str| {
        rows.iter()
            .find(|row| row.0 == key)
            .map(|row| row.1.as_str())
            .unwrap_or_else(|| panic!("{key} is listed:\n{output}"))
    };
    for live in [
        "main.motd",
        "main.whitelist",
        "voxelworld.border",
        "backup.every",
        "backup.keep",
        "backup.dir",
        "rollback.enabled",
        "rollback.keep_days",
        "rollback.max_mb",
    ] {
        assert_eq!(applied(live), "live", "{live}");
    }
    assert_eq!(
        applied("main.admin"),
        "reload",
        "the retired key is declared"
    );
    assert_eq!(applied("network.max_frame_size"), "reload");
}

#[test]
fn a_key_read_that_no_module_declares_is_warned_about() {
    let scratch = Scratch::new();
    scratch.add_probe("probe_a");
    scratch.add_world(true);
    let (status, output) = run_headless(
        &scratch,
        &[
            "settings".to_string(),
            "--set".to_string(),
            "world_probe.idle=1".to_string(),
        ],
    );
    assert_eq!(status, Some(0), "{output}");
    assert!(
        output.contains(
            "module probe_a read the setting probe_panic, which no loaded module declares"
        ),
        "{output}"
    );
    assert!(
        !output.contains("read the setting world_probe.idle"),
        "world_probe declares its setting:\n{output}"
    );
    assert!(
        !output.contains("read the setting headless"),
        "the core's own keys are not settings:\n{output}"
    );
}
