//! The real `buildat-server` binary: options anywhere on the line, startup,
//! the console on a pipe, stop, signals, end of input, and startup failures
//! that name their cause.

mod common;

use std::process::Stdio;
use std::time::Duration;

use common::{Scratch, ServerProcess};

const START: Duration = Duration::from_secs(120);

#[test]
fn global_options_are_accepted_after_the_subcommand() {
    let scratch = Scratch::new();
    scratch.add_meta_only("lua_only", r#"{"disable_rust": true}"#);
    let mut args = vec!["build".to_string()];
    args.extend(scratch.server_args());
    let mut server = ServerProcess::start(&args, Stdio::null());
    assert_eq!(server.wait_exit(START), Some(0), "{}", server.output());
    let output = server.output();
    assert!(output.contains("module __loader: artifact"), "{output}");
    assert!(!output.contains("unexpected argument"), "{output}");
}

#[test]
fn console_lists_modules_reloads_and_stops_with_status_zero() {
    let scratch = Scratch::new();
    scratch.add_probe("cli_probe");
    let mut server = ServerProcess::start(&scratch.server_args(), Stdio::piped());
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
    let mut server = ServerProcess::start(&scratch.server_args(), Stdio::null());
    server
        .wait_for("server started", START)
        .unwrap_or_else(|| panic!("{}", server.output()));
    server
        .wait_for("console: end of input", Duration::from_secs(10))
        .expect("end of input noticed");
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        server.child.try_wait().expect("wait").is_none(),
        "still running after end of input"
    );
    server.signal("TERM");
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
    let mut server = ServerProcess::start(&scratch.server_args(), Stdio::piped());
    server
        .wait_for("server started", START)
        .unwrap_or_else(|| panic!("{}", server.output()));
    server.signal("INT");
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
    let mut server = ServerProcess::start(&scratch.server_args(), Stdio::piped());
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
    common::prebuild(&common::fixture("bad_abi"));
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
    let mut server = ServerProcess::start(&scratch.server_args(), Stdio::piped());
    server
        .wait_for("server started: 4 modules loaded", START)
        .unwrap_or_else(|| panic!("{}", server.output()));
    let output = server.output();
    assert!(
        output.contains("load order: zeta, alpha, omega"),
        "{output}"
    );
    assert!(
        output.contains("unknown field \"colour\" (ignored)"),
        "{output}"
    );
    server.send("stop");
    assert_eq!(server.wait_exit(Duration::from_secs(30)), Some(0));
}

#[test]
fn unload_refuses_while_dependents_are_loaded() {
    let scratch = Scratch::new();
    scratch.add_probe("base");
    scratch.add_meta_only(
        "user",
        r#"{"disable_rust": true, "dependencies": [{"module": "base"}]}"#,
    );
    let mut server = ServerProcess::start(&scratch.server_args(), Stdio::piped());
    server
        .wait_for("server started", START)
        .unwrap_or_else(|| panic!("{}", server.output()));
    server.send("unload base");
    server
        .wait_for(
            "cannot unload base: loaded modules depend on it: user",
            Duration::from_secs(10),
        )
        .unwrap_or_else(|| panic!("{}", server.output()));
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
    server
        .wait_for(
            "cannot load user: it needs base, which is not loaded",
            Duration::from_secs(10),
        )
        .unwrap_or_else(|| panic!("{}", server.output()));
    server.send("stop");
    assert_eq!(server.wait_exit(Duration::from_secs(30)), Some(0));
}

#[test]
fn saving_files_reloads_the_module_and_announces_client_files() {
    let scratch = Scratch::new();
    let dir = scratch.add_editable_probe("watched");
    std::fs::create_dir_all(dir.join("client_lua")).expect("client_lua");
    let mut server = ServerProcess::start(&scratch.server_args(), Stdio::piped());
    server
        .wait_for("watching module folders", START)
        .unwrap_or_else(|| panic!("{}", server.output()));
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
    server.send("stop");
    assert_eq!(server.wait_exit(Duration::from_secs(30)), Some(0));
}

/// Processes (pid, command line) whose command line contains `needle`.
fn processes_mentioning(needle: &str) -> Vec<(u32, String)> {
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
        let Ok(raw) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let line = String::from_utf8_lossy(&raw).replace('\0', " ");
        if line.contains(needle) {
            found.push((pid, line));
        }
    }
    found
}

/// Starts the server over the repository's modules with an empty build dir,
/// so its first start compiles; returns while cargo's rustc runs (or after a
/// minute of cargo waiting on its locks).
fn start_first_build(build: &tempfile::TempDir) -> ServerProcess {
    let args: Vec<String> = [
        "--world".to_string(),
        build.path().join("world").display().to_string(),
        "--no-default-modules".into(),
        "--modules".into(),
        common::repo_root().join("modules").display().to_string(),
        "--build-dir".into(),
        build.path().display().to_string(),
        "--module-profile".into(),
        "dev".into(),
        "--listen".into(),
        "127.0.0.1:0".into(),
    ]
    .into();
    let mut server = ServerProcess::start(&args, Stdio::piped());
    server
        .wait_for("building module", START)
        .unwrap_or_else(|| panic!("no build started:\n{}", server.output()));
    let target = build.path().join("target").display().to_string();
    common::wait_until(Duration::from_secs(60), || {
        processes_mentioning(&target)
            .iter()
            .any(|(_, line)| line.contains("rustc"))
            .then_some(())
    });
    std::thread::sleep(Duration::from_millis(500));
    server
}

/// Asserts a quick clean exit and that no cargo or rustc of `build` is left.
fn assert_stopped_during_build(
    server: &mut ServerProcess,
    build: &tempfile::TempDir,
    asked: std::time::Instant,
) {
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
    let target = build.path().join("target").display().to_string();
    let left = common::wait_until(Duration::from_secs(2), || {
        processes_mentioning(&target).is_empty().then_some(())
    });
    assert!(
        left.is_some(),
        "build processes left running: {:?}",
        processes_mentioning(&target)
    );
}

#[test]
fn stop_on_the_console_ends_a_first_start_build_within_two_seconds() {
    let build = tempfile::tempdir().expect("temp dir");
    let mut server = start_first_build(&build);
    let asked = std::time::Instant::now();
    server.send("stop");
    assert_stopped_during_build(&mut server, &build, asked);
}

#[test]
fn sigterm_ends_a_first_start_build_within_two_seconds() {
    let build = tempfile::tempdir().expect("temp dir");
    let mut server = start_first_build(&build);
    let asked = std::time::Instant::now();
    server.signal("TERM");
    assert_stopped_during_build(&mut server, &build, asked);
    assert!(server.output().contains("received SIGTERM"));
}
