//! A module API changes while players play. With a client connected and
//! pinging all along, a call is added to voxelworld's API crate
//! (`modules/voxelworld/api`) and answered by voxelworld; `reload
//! voxelworld` rebuilds voxelworld and reloads with it every loaded module
//! built against that API (worldgen, main, replicate), in one go, every
//! ping answered in order; a new module using the call is then loaded. A
//! module that does not use the changed API (network) reloads alone,
//! without a rebuild. And with the `probe` fixture and a module built
//! against its API crate: an API change the dependent does not compile
//! with leaves both on their old code, the compiler's message in the
//! console's reply; once the dependent is mended, `reload probe` reloads
//! both.
//!
//! The modules are copies in the test's scratch workspace (the game's module
//! folders with their API crates, pointing at the repository's interface,
//! format and voxel crates), so editing them touches nothing in the repo.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use buildat_format::Packet;
use buildat_harness::raw_client::RawClient;
use buildat_main_api::{Ping, Pong};

use crate::common::{Scratch, join, ping, start_server};

fn append_after(path: &Path, anchor: &str, addition: &str) {
    let text = std::fs::read_to_string(path).expect("read source");
    let at = text
        .find(anchor)
        .unwrap_or_else(|| panic!("{anchor:?} in {}", path.display()))
        + anchor.len();
    let text = format!("{}{addition}{}", &text[..at], &text[at..]);
    std::fs::write(path, text).expect("write source");
}

const NEW_CALL: &str = r#"

/// Call (added while the server runs): how many sections are loaded.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CountLoadedSections {}

buildat_interface::calls! {
    module MODULE;
    CountLoadedSections = "count_loaded_sections" -> u64;
}
"#;

const NEW_MODULE: &str = r#"
//! A module written against a call its API did not have when the server started.
use buildat_interface::{Event, Host, Module, ModuleError, events, export_module, log};
use buildat_voxelworld_api::CountLoadedSections;

struct SectionCounter {
    host: Host,
}

impl Module for SectionCounter {
    fn create(host: Host) -> Result<Self, ModuleError> {
        Ok(Self { host })
    }

    fn event(&mut self, name: &str, _payload: &[u8]) -> Result<(), ModuleError> {
        if name == events::Start::NAME {
            let count = self.host.call(&CountLoadedSections {})?;
            log::info!("section_counter: voxelworld holds {count} sections");
        }
        Ok(())
    }
}

export_module!(SectionCounter);
"#;

fn add_section_counter(modules: &Path) {
    let dir = modules.join("section_counter");
    std::fs::create_dir_all(dir.join("src")).expect("module dir");
    std::fs::write(
        dir.join("meta.json"),
        r#"{ "dependencies": [{ "module": "voxelworld" }] }"#,
    )
    .expect("meta.json");
    std::fs::write(
        dir.join("Cargo.toml"),
        r#"[package]
name = "section-counter"
version = "0.1.0"
edition.workspace = true

[lib]
crate-type = ["cdylib"]

[dependencies]
buildat-interface.workspace = true
buildat-voxelworld-api.workspace = true
"#,
    )
    .expect("Cargo.toml");
    std::fs::write(dir.join("src/lib.rs"), NEW_MODULE).expect("lib.rs");
}

/// The build hash `modules` shows for `module`.
fn build_hash(server: &mut buildat_harness::server::Server, module: &str) -> String {
    server.send("modules");
    let line = server
        .wait_for(&format!("{module:<20} "), Duration::from_secs(10))
        .unwrap_or_else(|| panic!("modules lists {module}:\n{}", server.output()));
    line.split_whitespace()
        .nth(2)
        .unwrap_or_else(|| panic!("a build hash in {line:?}"))
        .to_string()
}

/// Sends `reload MODULE` and, until the console answers, pings the game
/// five times a second, reading everything the server sends (so the
/// client is a player who keeps playing, not one whose socket fills up).
/// Returns the answer and the pongs' data, in the order they came.
fn reload_while_pinging(
    server: &mut buildat_harness::server::Server,
    client: &mut RawClient,
    module: &str,
) -> (String, Vec<String>, u32) {
    server.send(&format!("reload {module}"));
    let from = server.seen.len();
    let deadline = Instant::now() + Duration::from_secs(900);
    let mut sent = 0u32;
    let mut pongs = Vec::new();
    loop {
        assert!(
            Instant::now() < deadline,
            "reload {module} within 900 s:\n{}",
            server.output()
        );
        client
            .send_packet(&Ping {
                data: format!("during {sent}").into_bytes(),
            })
            .unwrap_or_else(|e| panic!("still connected after {sent} pings: {e}"));
        sent += 1;
        let until = Instant::now() + Duration::from_millis(200);
        while let Some(left) = until.checked_duration_since(Instant::now()) {
            match client.recv(left) {
                Ok(Some(packet)) if packet.name == Pong::NAME => {
                    let pong = Pong::decode(&packet.data).expect("a pong");
                    pongs.push(String::from_utf8_lossy(&pong.data).into_owned());
                }
                Ok(Some(_)) => {}
                Ok(None) => break,
                Err(e) => panic!(
                    "disconnected during the reload ({sent} pings sent): {e}\n{}",
                    server.output()
                ),
            }
        }
        let answer = server.wait_for_line(
            from,
            |line| line.starts_with("error:") || line.starts_with(&format!("reloaded {module}")),
            Duration::from_millis(1),
        );
        if let Some(answer) = answer {
            return (answer, pongs, sent);
        }
    }
}

/// Pings once more and reads until that pong: every pong, in order.
fn drain_pongs(client: &mut RawClient, mut pongs: Vec<String>) -> Vec<String> {
    client
        .send_packet(&Ping {
            data: b"after".to_vec(),
        })
        .expect("still connected after the reload");
    while pongs.last().map(String::as_str) != Some("after") {
        let packet = client
            .recv(Duration::from_secs(60))
            .expect("still connected after the reload")
            .expect("the last pong within 60 s");
        if packet.name == Pong::NAME {
            let pong = Pong::decode(&packet.data).expect("a pong");
            pongs.push(String::from_utf8_lossy(&pong.data).into_owned());
        }
    }
    pongs
}

/// "in 12.3 s (build 11.9 s, swap 0.4 s)" from a reload's answer: the
/// total, build and swap seconds.
fn reload_times(answer: &str) -> (f64, f64, f64) {
    let numbers: Vec<f64> = answer
        .rsplit(" in ")
        .next()
        .unwrap_or_default()
        .split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .filter_map(|word| word.parse().ok())
        .collect();
    match numbers[..] {
        [total, build, swap] => (total, build, swap),
        _ => panic!("build and swap times in {answer:?}"),
    }
}

#[test]
fn an_api_change_reloads_its_dependents_together_without_dropping_players() {
    let scratch = Scratch::new();
    // Builds the game's modules where they are, so the copies (same
    // content) find them by hash instead of building again.
    scratch.add_game();
    let modules = scratch.modules();
    let mut args = scratch.server_args();
    args.extend(["--listen", "127.0.0.1:0", "--no-watch"].map(String::from));
    let mut server = start_server(&args, Stdio::piped());
    let address = server.listen_address();
    server.expect_line("server started", Duration::from_secs(300));
    let mut client = join(&address, "stays");
    ping(&mut client, b"before");
    let before: Vec<(&str, String)> = [
        "network",
        "client_file",
        "voxelworld",
        "worldgen",
        "main",
        "replicate",
    ]
    .into_iter()
    .map(|module| (module, build_hash(&mut server, module)))
    .collect();

    append_after(
        &modules.join("voxelworld/api/src/lib.rs"),
        "pub const MODULE: &str = \"voxelworld\";",
        NEW_CALL,
    );
    append_after(
        &modules.join("voxelworld/src/lib.rs"),
        "fn receive(table: &mut Receive<Self>) {\n        table",
        "\n            .call(|world, _: buildat_voxelworld_api::CountLoadedSections| {\n                Ok(world.world.loaded_sections() as u64)\n            })",
    );
    add_section_counter(&modules);

    // A module that does not use the changed API keeps its build, alone.
    server.send("reload network");
    let answer = server
        .wait_for("reloaded network", Duration::from_secs(120))
        .unwrap_or_else(|| panic!("reload network:\n{}", server.output()));
    assert!(
        answer.starts_with("reloaded network in "),
        "nothing reloaded with network: {answer}"
    );
    assert_eq!(build_hash(&mut server, "network"), before[0].1);

    let (answer, pongs, sent) = reload_while_pinging(&mut server, &mut client, "voxelworld");
    let with: Vec<&str> = answer
        .strip_prefix("reloaded voxelworld with ")
        .and_then(|rest| rest.split(" in ").next())
        .map(|list| list.split(", ").collect())
        .unwrap_or_else(|| {
            panic!(
                "reloaded with its dependents: {answer}\n{}",
                server.output()
            )
        });
    let mut sorted = with.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        ["main", "replicate", "worldgen"],
        "the loaded modules built against voxelworld's API: {answer}"
    );
    let at = |module: &str| with.iter().position(|m| *m == module);
    assert!(at("worldgen") < at("main"), "in load order: {answer}");
    let (total, build, swap) = reload_times(&answer);
    eprintln!("api_reload: {answer}; {sent} pings sent meanwhile");
    assert!(
        build > 0.0 && (build + swap - total).abs() < 0.15,
        "{answer}"
    );
    for (module, hash) in &before {
        let now = build_hash(&mut server, module);
        if ["network", "client_file"].contains(module) {
            assert_eq!(&now, hash, "{module} does not use voxelworld's API");
        } else {
            assert_ne!(&now, hash, "{module} was rebuilt against the new API");
        }
    }
    // Every ping sent while the modules were rebuilt and swapped came back,
    // once and in order: no packet was lost.
    let pongs = drain_pongs(&mut client, pongs);
    let expected: Vec<String> = (0..sent)
        .map(|n| format!("during {n}"))
        .chain(["after".to_string()])
        .collect();
    assert_eq!(pongs, expected, "{sent} pings during the reload");

    server.send("load section_counter");
    let line = server
        .wait_for(
            "section_counter: voxelworld holds",
            Duration::from_secs(600),
        )
        .unwrap_or_else(|| panic!("load section_counter:\n{}", server.output()));
    let count: u64 = line
        .rsplit("holds ")
        .next()
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("a count in {line:?}"));
    assert!(count > 0, "the spawn area is loaded: {line}");
    server.expect_line("loaded section_counter", Duration::from_secs(30));

    ping(&mut client, b"last");
    assert!(
        !server.output().contains("disconnected"),
        "{}",
        server.output()
    );
    server.stop_cleanly();
}

/// A module built against the `probe` fixture's API crate, so a dependent
/// of `probe`; it logs `CODE` and a `Stats` it builds field by field.
const PROBE_USER: &str = r#"
//! Built against the probe's API crate: a dependent of `probe`.
use buildat_interface::{Event, Host, Module, ModuleError, events, export_module, log};
use buildat_test_probe_api::Stats;

struct ProbeUser;

impl Module for ProbeUser {
    fn create(_host: Host) -> Result<Self, ModuleError> {
        Ok(Self)
    }

    fn event(&mut self, name: &str, _payload: &[u8]) -> Result<(), ModuleError> {
        if name == events::Start::NAME || name == events::Continue::NAME {
            let stats = Stats { count: 1, in_order: true, next_expected: 2, duplicates_or_gaps: 0 };
            log::info!("probe_user CODE runs after {name}: {}", stats.count);
        }
        Ok(())
    }
}

export_module!(ProbeUser);
"#;

fn add_probe_user(modules: &Path, code: &str) {
    let dir = modules.join("probe_user");
    std::fs::create_dir_all(dir.join("src")).expect("module dir");
    std::fs::write(
        dir.join("meta.json"),
        r#"{ "dependencies": [{ "module": "probe" }] }"#,
    )
    .expect("meta.json");
    std::fs::write(
        dir.join("Cargo.toml"),
        r#"[package]
name = "probe-user"
version = "0.1.0"
edition = "2024"

[lib]
crate-type = ["cdylib"]

[dependencies]
buildat-interface.workspace = true
buildat-test-probe-api = { path = "../probe/api" }
"#,
    )
    .expect("Cargo.toml");
    std::fs::write(dir.join("src/lib.rs"), PROBE_USER.replace("CODE", code)).expect("lib.rs");
}

/// Names the scratch workspace's members one by one: every crate under
/// `modules/` (module folders and their library crates). Its globs
/// (`modules/*`, `modules/*/protocol`) would match the folders holding only
/// the API crates of modules not copied here, or nothing, and cargo loads
/// neither; building a new module (not found by hash) runs cargo there.
fn name_members(modules: &Path) {
    let mut members = Vec::new();
    let crates = |dir: &Path| -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .expect("a folder")
            .flatten()
            .filter(|entry| entry.path().is_dir())
            .map(|entry| entry.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    for module in crates(modules) {
        if modules.join(&module).join("Cargo.toml").is_file() {
            members.push(format!("modules/{module}"));
        }
        for library in crates(&modules.join(&module)) {
            if modules
                .join(&module)
                .join(&library)
                .join("Cargo.toml")
                .is_file()
            {
                members.push(format!("modules/{module}/{library}"));
            }
        }
    }
    let path = modules.parent().expect("a scratch root").join("Cargo.toml");
    let mut manifest: toml::Table = std::fs::read_to_string(&path)
        .expect("the scratch manifest")
        .parse()
        .expect("a manifest");
    let workspace = manifest
        .get_mut("workspace")
        .and_then(|w| w.as_table_mut())
        .expect("a [workspace]");
    workspace.insert(
        "members".into(),
        toml::Value::Array(members.into_iter().map(toml::Value::from).collect()),
    );
    std::fs::write(&path, manifest.to_string()).expect("write the scratch manifest");
}

#[test]
fn a_dependent_that_does_not_build_with_a_changed_api_keeps_every_module_on_its_old_code() {
    let scratch = Scratch::new();
    scratch.add_probe("probe");
    let modules = scratch.modules();
    add_probe_user(&modules, "user-1");
    name_members(&modules);
    let mut args = scratch.server_args();
    args.push("--no-watch".into());
    let mut server = start_server(&args, Stdio::piped());
    server.expect_line("server started", Duration::from_secs(300));
    server.expect_line(
        "probe_user user-1 runs after core:start",
        Duration::from_secs(30),
    );
    let probe_before = build_hash(&mut server, "probe");
    let user_before = build_hash(&mut server, "probe_user");

    // The API gains a field the dependent does not set.
    append_after(
        &modules.join("probe/api/src/lib.rs"),
        "pub duplicates_or_gaps: u64,",
        "\n    pub reloads: u64,",
    );
    server.send("reload probe");
    let answer = server
        .wait_for("cannot reload probe", Duration::from_secs(600))
        .unwrap_or_else(|| panic!("reload probe refused:\n{}", server.output()));
    assert!(
        answer.starts_with("error: cannot reload probe: probe_user depends on its API"),
        "{answer}"
    );
    let message = server
        .wait_for("missing field `reloads`", Duration::from_secs(10))
        .unwrap_or_else(|| panic!("the compiler's message in the reply:\n{}", server.output()));
    eprintln!("api_reload: {answer}\n{message}");
    assert_eq!(build_hash(&mut server, "probe"), probe_before, "probe kept");
    assert_eq!(
        build_hash(&mut server, "probe_user"),
        user_before,
        "probe_user kept"
    );
    server.send("modules");
    for module in ["probe ", "probe_user "] {
        let line = server
            .wait_for(module, Duration::from_secs(10))
            .unwrap_or_else(|| panic!("{module} listed:\n{}", server.output()));
        assert!(line.contains(" loaded "), "{line}");
    }

    // Mended, the dependent reloads with the module whose API it uses.
    add_probe_user(&modules, "user-2");
    append_after(
        &modules.join("probe_user/src/lib.rs"),
        "duplicates_or_gaps: 0",
        ", reloads: 0",
    );
    server.send("reload probe");
    let answer = server
        .wait_for("reloaded probe", Duration::from_secs(600))
        .unwrap_or_else(|| panic!("reload probe:\n{}", server.output()));
    assert!(
        answer.starts_with("reloaded probe with probe_user in "),
        "{answer}\n{}",
        server.output()
    );
    reload_times(&answer);
    eprintln!("api_reload: {answer}");
    server.expect_line(
        "probe_user user-2 runs after core:continue",
        Duration::from_secs(30),
    );
    assert_ne!(build_hash(&mut server, "probe"), probe_before);
    assert_ne!(build_hash(&mut server, "probe_user"), user_before);
    server.stop_cleanly();
}

#[test]
fn saving_an_api_crate_reloads_its_module_with_the_modules_built_against_it() {
    let scratch = Scratch::new();
    scratch.add_probe("probe");
    let modules = scratch.modules();
    add_probe_user(&modules, "user-1");
    name_members(&modules);
    // File watching on (no --no-watch).
    let mut server = start_server(&scratch.server_args(), Stdio::piped());
    server.expect_line("server started", Duration::from_secs(300));
    server.expect_line("watching module folders", Duration::from_secs(30));
    server.expect_line(
        "probe_user user-1 runs after core:start",
        Duration::from_secs(30),
    );
    let user_before = build_hash(&mut server, "probe_user");

    // Only the API crate changes (an addition the dependent compiles with).
    append_after(
        &modules.join("probe/api/src/lib.rs"),
        "pub const SEQ_EVENT: &str = \"probe:seq\";",
        "\n/// Added while the server runs.\npub const ADDED: u32 = 1;\n",
    );
    let line = server
        .wait_for("module probe reloaded", Duration::from_secs(300))
        .unwrap_or_else(|| panic!("the saved API reloads probe:\n{}", server.output()));
    assert!(
        line.contains("module probe reloaded with probe_user in "),
        "{line}"
    );
    server.expect_line(
        "probe_user user-1 runs after core:continue",
        Duration::from_secs(30),
    );
    assert_ne!(
        build_hash(&mut server, "probe_user"),
        user_before,
        "probe_user was rebuilt against the new API"
    );
    server.stop_cleanly();
}
