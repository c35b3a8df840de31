//! The real `buildat-server` binary: options anywhere on the line, startup,
//! the console on a pipe, stop, signals (also during a first start's
//! builds), end of input, startup failures that name their cause, and the
//! watcher (saved files, module folders dropped in and removed).

use std::process::Stdio;
use std::time::Duration;

use crate::common::{Scratch, Server, start_server};
use buildat_client_file_api::{AnnounceFile, FileContent, RemoveFilePacket, RequestFile};
use buildat_format::{Packet, RawPacket};
use buildat_harness::raw_client::RawClient;

const START: Duration = Duration::from_secs(120);

#[test]
fn global_options_are_accepted_after_the_subcommand() {
    let scratch = Scratch::new();
    scratch.add_meta_only("lua_only", r#"{"disable_rust": true}"#);
    let mut args = vec!["build".to_string()];
    args.extend(scratch.server_args());
    let mut server = start_server(&args, Stdio::null());
    assert_eq!(server.wait_exit(START), Some(0), "{}", server.output());
    let output = server.output();
    assert!(output.contains("module __loader: artifact"), "{output}");
    assert!(!output.contains("unexpected argument"), "{output}");
}

#[test]
fn console_lists_modules_reloads_and_stops_with_status_zero() {
    let scratch = Scratch::new();
    scratch.add_probe("cli_probe");
    let mut server = start_server(&scratch.server_args(), Stdio::piped());
    server
        .wait_for("server started: 2 modules loaded", START)
        .unwrap_or_else(|| panic!("server did not start:\n{}", server.output()));
    server.send("modules");
    let line = server
        .wait_for("cli_probe", Duration::from_secs(10))
        .expect("modules lists the probe");
    assert!(line.contains("loaded"), "{line}");
    server.send("reload cli_probe");
    server
        .wait_for("reloaded cli_probe", Duration::from_secs(30))
        .unwrap_or_else(|| panic!("reload answered:\n{}", server.output()));
    // The probe subscribes to probe:panic (a string payload naming the
    // module to panic); another name leaves it be.
    server.send("emit probe:panic somebody_else");
    server
        .wait_for(
            "emitted probe:panic to 1 subscribers",
            Duration::from_secs(10),
        )
        .unwrap_or_else(|| panic!("emit answered:\n{}", server.output()));
    server.send("emit core:start");
    server
        .wait_for(
            "core events are emitted by the core only",
            Duration::from_secs(10),
        )
        .expect("core events refused");
    server.send("frobnicate");
    server
        .wait_for("unknown command 'frobnicate'", Duration::from_secs(10))
        .expect("unknown command");
    server.send("stop");
    assert_eq!(
        server.wait_exit(Duration::from_secs(30)),
        Some(0),
        "{}",
        server.output()
    );
    let output = server.output();
    let unloaded_probe = output
        .find("module cli_probe unloaded")
        .expect("probe unloaded");
    let unloaded_loader = output
        .find("module __loader unloaded")
        .expect("loader unloaded");
    assert!(
        unloaded_probe < unloaded_loader,
        "reverse load order:\n{output}"
    );
    assert!(output.contains("stopped cleanly"), "{output}");
}

#[test]
fn end_of_input_keeps_running_and_sigterm_stops_cleanly() {
    let scratch = Scratch::new();
    scratch.add_probe("eof_probe");
    let mut server = start_server(&scratch.server_args(), Stdio::null());
    server.expect_line("server started", START);
    server
        .wait_for("console: end of input", Duration::from_secs(10))
        .expect("end of input noticed");
    std::thread::sleep(Duration::from_millis(300));
    assert!(server.is_running(), "still running after end of input");
    server.signal("TERM").expect("signal");
    assert_eq!(
        server.wait_exit(Duration::from_secs(30)),
        Some(0),
        "{}",
        server.output()
    );
    assert!(server.output().contains("stopping: received SIGTERM"));
}

#[test]
fn sigint_stops_cleanly() {
    let scratch = Scratch::new();
    let mut server = start_server(&scratch.server_args(), Stdio::piped());
    server.expect_line("server started", START);
    server.signal("INT").expect("signal");
    assert_eq!(
        server.wait_exit(Duration::from_secs(30)),
        Some(0),
        "{}",
        server.output()
    );
    assert!(server.output().contains("stopping: received SIGINT"));
}

/// Starts a server that must fail; returns its output.
fn failed_startup(scratch: &Scratch) -> String {
    let mut server = start_server(&scratch.server_args(), Stdio::piped());
    let status = server.wait_exit(START);
    let output = server.output();
    assert!(
        matches!(status, Some(code) if code != 0),
        "exit {status:?}:\n{output}"
    );
    assert!(output.contains("the server did not start"), "{output}");
    assert!(!output.contains("panicked at"), "no panic:\n{output}");
    output
}

#[test]
fn startup_refuses_a_library_of_another_abi() {
    crate::common::prebuild(&crate::common::fixture("bad_abi"));
    let scratch = Scratch::new();
    scratch.add_fixture("bad_abi", "bad_abi");
    let output = failed_startup(&scratch);
    assert!(
        output.contains("module bad_abi was built for module ABI version 999"),
        "{output}"
    );
}

#[test]
fn invalid_meta_json_names_file_line_and_column() {
    let scratch = Scratch::new();
    let dir = scratch.add_meta_only("broken", "{\n  \"dependencies\": [,]\n}");
    let output = failed_startup(&scratch);
    let expected = format!("{}:2:", dir.join("meta.json").display());
    assert!(
        output.contains(&expected),
        "wanted {expected} in:\n{output}"
    );
}

#[test]
fn missing_dependency_names_the_chain() {
    let scratch = Scratch::new();
    scratch.add_meta_only(
        "main",
        r#"{"dependencies": [{"module": "client_file"}], "disable_rust": true}"#,
    );
    scratch.add_meta_only(
        "client_file",
        r#"{"dependencies": [{"module": "network"}], "disable_rust": true}"#,
    );
    let output = failed_startup(&scratch);
    assert!(
        output.contains("network is missing (required by client_file, required by main)"),
        "{output}"
    );
}

#[test]
fn dependency_cycle_is_shown_as_a_cycle() {
    let scratch = Scratch::new();
    scratch.add_meta_only(
        "a",
        r#"{"dependencies": [{"module": "b"}], "disable_rust": true}"#,
    );
    scratch.add_meta_only(
        "b",
        r#"{"dependencies": [{"module": "c"}], "disable_rust": true}"#,
    );
    scratch.add_meta_only(
        "c",
        r#"{"dependencies": [{"module": "a"}], "disable_rust": true}"#,
    );
    let output = failed_startup(&scratch);
    assert!(
        output.contains("dependency cycle: a -> b -> c -> a"),
        "{output}"
    );
}

#[test]
fn lua_only_modules_load_in_dependency_order_without_building() {
    let scratch = Scratch::new();
    scratch.add_meta_only(
        "zeta",
        r#"{"disable_rust": true, "reverse_dependencies": [{"module": "alpha"}]}"#,
    );
    scratch.add_meta_only(
        "alpha",
        r#"{"disable_rust": true, "dependencies": [{"module": "maybe", "optional": true}]}"#,
    );
    scratch.add_meta_only("omega", r#"{"disable_rust": true, "colour": "blue"}"#);
    let mut server = start_server(&scratch.server_args(), Stdio::piped());
    server.expect_line("server started: 4 modules loaded", START);
    let output = server.output();
    assert!(
        output.contains("load order: zeta, alpha, omega"),
        "{output}"
    );
    assert!(
        output.contains("unknown field \"colour\" (ignored)"),
        "{output}"
    );
    server.stop_cleanly();
}

#[test]
fn unload_refuses_while_dependents_are_loaded() {
    let scratch = Scratch::new();
    scratch.add_probe("base");
    scratch.add_meta_only(
        "user",
        r#"{"disable_rust": true, "dependencies": [{"module": "base"}]}"#,
    );
    let mut server = start_server(&scratch.server_args(), Stdio::piped());
    server.expect_line("server started", START);
    server.send("unload base");
    server.expect_line(
        "cannot unload base: loaded modules depend on it: user",
        Duration::from_secs(10),
    );
    server.send("unload user");
    server
        .wait_for("unloaded user", Duration::from_secs(10))
        .expect("user unloads");
    server.send("load user");
    server
        .wait_for("loaded user", Duration::from_secs(10))
        .expect("user loads again");
    server.send("unload user");
    server
        .wait_for("unloaded user", Duration::from_secs(10))
        .expect("user unloads");
    server.send("unload base");
    server
        .wait_for("unloaded base", Duration::from_secs(10))
        .expect("base unloads");
    server.send("load user");
    server.expect_line(
        "cannot load user: it needs base, which is not loaded",
        Duration::from_secs(10),
    );
    server.stop_cleanly();
}

#[test]
fn saving_files_reloads_the_module_and_announces_client_files() {
    let scratch = Scratch::new();
    let dir = scratch.add_editable_probe("watched");
    std::fs::create_dir_all(dir.join("client_lua")).expect("client_lua");
    let mut server = start_server(&scratch.server_args(), Stdio::piped());
    server.expect_line("watching module folders", START);
    std::fs::write(dir.join("client_lua/init.lua"), "print('hello')\n").expect("write lua");
    server
        .wait_for(
            "probe watched saw watched modified: client_lua/init.lua",
            Duration::from_secs(20),
        )
        .unwrap_or_else(|| panic!("client file change not announced:\n{}", server.output()));
    let source = dir.join("src/lib.rs");
    let text = std::fs::read_to_string(&source).expect("source");
    std::fs::write(&source, text.replace("\"probe-1\"", "\"probe-watched\"")).expect("edit");
    server
        .wait_for("module watched reloaded", START)
        .unwrap_or_else(|| panic!("no reload after saving:\n{}", server.output()));
    server.stop_cleanly();
}

/// Live (not zombie) processes: pid, process group and command line.
fn processes() -> Vec<(u32, u32, String)> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return found;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let (Ok(stat), Ok(cmdline)) = (
            std::fs::read_to_string(entry.path().join("stat")),
            std::fs::read(entry.path().join("cmdline")),
        ) else {
            continue;
        };
        // "pid (comm) state ppid pgrp ...": comm may hold anything but ')'.
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .map(|(_, rest)| rest.split_whitespace().collect())
            .unwrap_or_default();
        let (Some(state), Some(group)) = (fields.first(), fields.get(2)) else {
            continue;
        };
        let Ok(group) = group.parse() else {
            continue;
        };
        if *state != "Z" {
            let line = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            found.push((pid, group, line));
        }
    }
    found
}

/// Waits (up to a minute) for a cargo naming `needle` on its command line
/// to run a rustc in its process group; returns that group, or `None` when
/// cargo never got that far (waiting on its locks).
fn wait_for_rustc(needle: &std::path::Path) -> Option<u32> {
    let needle = needle.display().to_string();
    let group = crate::common::wait_until(Duration::from_secs(60), || {
        let all = processes();
        let cargo = all
            .iter()
            .find(|(pid, group, line)| {
                pid == group && line.contains("cargo") && line.contains(&needle)
            })?
            .0;
        all.iter()
            .any(|(_, group, line)| *group == cargo && line.contains("rustc"))
            .then_some(cargo)
    });
    std::thread::sleep(Duration::from_millis(500));
    group
}

/// Starts the server over the repository's modules with an empty build dir,
/// so its first start compiles; returns while cargo's rustc runs (or after a
/// minute of cargo waiting on its locks).
fn start_first_build(build: &tempfile::TempDir) -> (Server, Option<u32>) {
    let args: Vec<String> = [
        "--world".to_string(),
        build.path().join("world").display().to_string(),
        "--no-default-modules".into(),
        "--modules".into(),
        crate::common::repo_root()
            .join("modules")
            .display()
            .to_string(),
        "--build-dir".into(),
        build.path().display().to_string(),
        "--module-profile".into(),
        "dev".into(),
        "--listen".into(),
        "127.0.0.1:0".into(),
    ]
    .into();
    let mut server = start_server(&args, Stdio::piped());
    server
        .wait_for("building module", START)
        .unwrap_or_else(|| panic!("no build started:\n{}", server.output()));
    let group = wait_for_rustc(&build.path().join("target"));
    (server, group)
}

/// Asserts a quick clean exit, a cancelled build, and that nothing of the
/// cargo process group `group` is left.
fn assert_stopped_during_build(server: &mut Server, group: Option<u32>, asked: std::time::Instant) {
    let status = server.wait_exit(Duration::from_secs(30));
    let took = asked.elapsed();
    let output = server.output();
    assert_eq!(status, Some(0), "{output}");
    assert!(
        took < Duration::from_millis(2500),
        "stopping took {took:?}:\n{output}"
    );
    assert!(output.contains("build cancelled"), "{output}");
    assert!(output.contains("stopped cleanly"), "{output}");
    assert!(
        !output.contains("ERROR"),
        "nothing logged as an error:\n{output}"
    );
    let group = group.expect("cargo ran rustc before the stop");
    let left = || -> Vec<(u32, u32, String)> {
        processes()
            .into_iter()
            .filter(|(_, g, _)| *g == group)
            .collect()
    };
    let gone =
        crate::common::wait_until(Duration::from_secs(2), || left().is_empty().then_some(()));
    assert!(gone.is_some(), "build processes left running: {:?}", left());
}

#[test]
fn stop_on_the_console_ends_a_first_start_build_within_two_seconds() {
    let build = tempfile::tempdir().expect("temp dir");
    let (mut server, group) = start_first_build(&build);
    let asked = std::time::Instant::now();
    server.send("stop");
    assert_stopped_during_build(&mut server, group, asked);
}

#[test]
fn sigterm_ends_a_first_start_build_within_two_seconds() {
    let build = tempfile::tempdir().expect("temp dir");
    let (mut server, group) = start_first_build(&build);
    let asked = std::time::Instant::now();
    server.signal("TERM").expect("signal");
    assert_stopped_during_build(&mut server, group, asked);
    assert!(server.output().contains("received SIGTERM"));
}

#[test]
fn stop_on_the_console_ends_a_reload_build_within_two_seconds() {
    let scratch = Scratch::new();
    let dir = scratch.add_editable_probe("slow_reload");
    let mut args = scratch.server_args();
    args.push("--no-watch".into());
    let mut server = start_server(&args, Stdio::piped());
    server.expect_line("server started", START);
    // A constant that takes rustc minutes to evaluate: the build is still
    // running whenever `stop` comes.
    let source = dir.join("src/lib.rs");
    let mut text = std::fs::read_to_string(&source).expect("source");
    text.push_str(
        "\n#[allow(long_running_const_eval)]\nconst _: u64 = {\n    let mut i = 0u64;\n    \
         let mut x = 0u64;\n    while i < 4_000_000_000 {\n        x = x.wrapping_mul(31).wrapping_add(i);\n        \
         i += 1;\n    }\n    x\n};\n",
    );
    std::fs::write(&source, text).expect("edit");
    server.send("reload slow_reload");
    server
        .wait_for("building module slow_reload", START)
        .unwrap_or_else(|| panic!("no build:\n{}", server.output()));
    let group = wait_for_rustc(&dir);
    let asked = std::time::Instant::now();
    server.send("stop");
    assert_stopped_during_build(&mut server, group, asked);
}

/// A Lua-only module folder at `dir` with a `client_lua/init.lua`.
fn write_lua_module(dir: &std::path::Path, dependencies: &[&str]) {
    let dependencies: Vec<String> = dependencies
        .iter()
        .map(|d| format!(r#"{{"module": "{d}"}}"#))
        .collect();
    std::fs::create_dir_all(dir.join("client_lua")).expect("module dir");
    std::fs::write(
        dir.join("client_lua/init.lua"),
        format!("print('{} runs')\n", dir.display()),
    )
    .expect("init.lua");
    std::fs::write(
        dir.join("meta.json"),
        format!(
            r#"{{"disable_rust": true, "dependencies": [{}]}}"#,
            dependencies.join(", ")
        ),
    )
    .expect("meta.json");
}

/// The next packet of type `P` that `accept` takes, skipping others.
fn next_packet<P: Packet>(
    client: &mut RawClient,
    timeout: Duration,
    mut accept: impl FnMut(&P) -> bool,
) -> Option<P> {
    let deadline = std::time::Instant::now() + timeout;
    while let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) {
        let packet: RawPacket = client.recv(left).expect("connected")?;
        if packet.name == P::NAME
            && let Ok(packet) = P::decode(&packet.data)
            && accept(&packet)
        {
            return Some(packet);
        }
    }
    None
}

fn announced(client: &mut RawClient, file: &str) -> Option<AnnounceFile> {
    next_packet(client, Duration::from_secs(60), |a: &AnnounceFile| {
        a.name == file
    })
}

#[test]
fn a_module_folder_dropped_in_loads_with_its_dependencies_and_removed_unloads() {
    let scratch = Scratch::new();
    scratch.add_client_file();
    write_lua_module(&scratch.modules().join("lua_base"), &["client_file"]);
    let mut args = scratch.server_args();
    args.extend(["--listen", "127.0.0.1:0"].map(String::from));
    let mut server = start_server(&args, Stdio::piped());
    let address = server.listen_address();
    server.expect_line("watching module folders", START);
    let mut client = RawClient::connect(&address).expect("connect");
    let mut cache = std::collections::HashMap::new();
    let first = client.sync_files(&mut cache, Duration::from_millis(700));
    assert!(first.announced.contains_key("lua_base/client_lua/init.lua"));

    // A dependency present in the module path but not loaded loads first.
    server.send("unload lua_base");
    server.expect_line("unloaded lua_base", Duration::from_secs(10));
    let staging = scratch.dir.path().join("staging");
    write_lua_module(&staging.join("lua_new"), &["lua_base", "client_file"]);
    crate::common::copy_dir(&staging.join("lua_new"), &scratch.modules().join("lua_new"));
    server
        .wait_for("new module lua_new: loaded lua_base, lua_new", START)
        .unwrap_or_else(|| panic!("the new folder was not loaded:\n{}", server.output()));
    let announce = announced(&mut client, "lua_new/client_lua/init.lua")
        .unwrap_or_else(|| panic!("not announced:\n{}", server.output()));
    let request = RequestFile {
        name: announce.name.clone(),
        hash: announce.hash,
    };
    client.send_packet(&request).expect("request");
    let content = next_packet(&mut client, Duration::from_secs(20), |c: &FileContent| {
        c.name == announce.name
    })
    .unwrap_or_else(|| panic!("no content:\n{}", server.output()));
    assert_eq!(
        content.data,
        std::fs::read(scratch.modules().join("lua_new/client_lua/init.lua")).expect("read")
    );
    server.send("modules");
    let line = server
        .wait_for("lua_new ", Duration::from_secs(10))
        .expect("listed");
    assert!(line.contains("loaded"), "{line}");

    // A folder that gets its meta.json only later counts from then on.
    let late = scratch.modules().join("lua_late");
    std::fs::create_dir_all(late.join("client_lua")).expect("late dir");
    std::thread::sleep(Duration::from_millis(2500));
    assert!(
        !server.output().contains("new module lua_late"),
        "loaded without a meta.json:\n{}",
        server.output()
    );
    write_lua_module(&late, &[]);
    server
        .wait_for("new module lua_late: loaded lua_late", START)
        .unwrap_or_else(|| panic!("the late meta.json was missed:\n{}", server.output()));

    // Removing a folder unloads its module, after the ones depending on it.
    std::fs::remove_dir_all(scratch.modules().join("lua_base")).expect("remove");
    server
        .wait_for("removed module lua_base: unloaded lua_new, lua_base", START)
        .unwrap_or_else(|| panic!("not unloaded:\n{}", server.output()));
    next_packet(
        &mut client,
        Duration::from_secs(20),
        |r: &RemoveFilePacket| r.name == "lua_new/client_lua/init.lua",
    )
    .unwrap_or_else(|| panic!("not withdrawn:\n{}", server.output()));
    server.stop_cleanly();
    assert!(!server.output().contains("ERROR"), "{}", server.output());
}
