//! A module API changes while players play: with a client connected, a
//! call is added to voxelworld's API crate (`modules/voxelworld/api`) and
//! answered by voxelworld, a new module using it is dropped in, `reload
//! voxelworld` rebuilds voxelworld (its API changed; the ABI-stamped
//! interface did not, so the host accepts it), `load` builds the new module,
//! the call works and the client stays connected. A module that does not
//! use the changed API (network) reloads without a rebuild.
//!
//! The modules are copies in the test's scratch workspace (the game's module
//! folders with their API crates, pointing at the repository's interface,
//! format and voxel crates), so editing them touches nothing in the repo.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

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

#[test]
fn an_api_change_reloads_without_dropping_players() {
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
    let network_before = build_hash(&mut server, "network");
    let world_before = build_hash(&mut server, "voxelworld");

    append_after(
        &modules.join("voxelworld/api/src/lib.rs"),
        "pub const MODULE: &str = \"voxelworld\";",
        NEW_CALL,
    );
    append_after(
        &modules.join("voxelworld/src/lib.rs"),
        "Save => |_| self.save(),",
        "\n            buildat_voxelworld_api::CountLoadedSections => |_| Ok(self.world.loaded_sections() as u64),",
    );
    add_section_counter(&modules);

    // A module that does not use the changed API keeps its build.
    server.send("reload network");
    server
        .wait_for("reloaded network", Duration::from_secs(120))
        .unwrap_or_else(|| panic!("reload network:\n{}", server.output()));
    assert_eq!(build_hash(&mut server, "network"), network_before);

    server.send("reload voxelworld");
    server
        .wait_for("reloaded voxelworld", Duration::from_secs(600))
        .unwrap_or_else(|| panic!("reload voxelworld:\n{}", server.output()));
    assert_ne!(
        build_hash(&mut server, "voxelworld"),
        world_before,
        "its API changed, so voxelworld was rebuilt"
    );
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

    ping(&mut client, b"after");
    assert!(
        !server.output().contains("disconnected"),
        "{}",
        server.output()
    );
    server.stop_cleanly();
}
