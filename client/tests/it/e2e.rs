//! End to end against the real server: `buildat-server` with `__loader`,
//! `network`, `client_file`, the `net_probe` fixture (echoes `test:echo`)
//! and a Lua-only module written here; `buildat-client` connects, receives
//! the files, runs the module's `client_lua/init.lua` sandboxed, which
//! sends `test:echo` and disconnects when the echo comes back. Then again
//! with a warm cache (nothing requested), then with a corrupted cache entry
//! (only it requested).
//!
//! The server binary is looked up next to this test's executable
//! (`target/<profile>/buildat-server`): `cargo test --workspace` builds it.

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use crate::common::{Server, copy_dir, copy_modules, prebuild, repo_root, start_server};
use sha2::{Digest, Sha256};

const LUA_MODULE: &str = "e2e_lua";

const INIT_LUA: &str = r#"
local log = buildat.Logger("e2e_lua")
buildat.sub_packet("test:echo", function(data)
    log:info("echo came back: " .. data)
    buildat.disconnect()
end)
log:info("sending ping, " .. #buildat.bytes(buildat.run_script_file("e2e_lua/client_lua/data.lua")) .. " bytes of data")
buildat.send_packet("test:echo", "ping from lua")
"#;

/// A second Lua file (run through run_script_file), big enough to need
/// several `core:file_content` pieces.
fn data_lua() -> String {
    let mut s = String::from("return \"");
    for i in 0..300_000 {
        s.push(char::from(b'a' + (i % 26) as u8));
    }
    s.push_str("\"\n");
    s
}

fn lay_out_modules(modules: &Path) {
    let root = repo_root();
    copy_modules(&["__loader", "network", "client_file"], modules);
    copy_dir(
        &root.join("tests").join("modules").join("net_probe"),
        &modules.join("net_probe"),
    );
    let lua = modules.join(LUA_MODULE);
    std::fs::create_dir_all(lua.join("client_lua")).expect("lua module");
    std::fs::write(lua.join("meta.json"), r#"{"disable_rust": true}"#).expect("meta");
    std::fs::write(lua.join("client_lua").join("init.lua"), INIT_LUA).expect("init.lua");
    std::fs::write(lua.join("client_lua").join("data.lua"), data_lua()).expect("data.lua");
}

fn run_client(address: &str, cache: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_buildat-client"))
        .args(["--connect", address, "--cache"])
        .arg(cache)
        .args(["--quit-after", "60", "-v", "--name", "e2e"])
        .output()
        .expect("run buildat-client")
}

/// (announced, requested) from the client's closing summary.
fn summary(text: &str) -> (u64, u64) {
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

fn check_run(out: &Output, server: &mut Server, what: &str) -> (u64, u64) {
    let text = String::from_utf8_lossy(&out.stderr).into_owned();
    eprintln!("--- client, {what}:\n{text}");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{what}: client failed:\n{text}\n--- server:\n{}",
        server.output()
    );
    assert!(
        text.contains("echo came back: ping from lua"),
        "{what}: the module's Lua ran and the server module answered:\n{text}"
    );
    assert!(text.contains("300000 bytes of data"), "{what}:\n{text}");
    assert!(
        text.contains("disconnected (buildat.disconnect())"),
        "{what}"
    );
    summary(&text)
}

#[test]
fn client_runs_a_modules_lua_against_the_real_server() {
    prebuild();
    let scratch = tempfile::tempdir().expect("temp dir");
    let modules = scratch.path().join("modules");
    lay_out_modules(&modules);
    let mut server = start_server(&scratch.path().join("world"), &modules, &[]);
    let address = server.wait_started();
    let cache = scratch.path().join("cache");

    // Cold cache: every file is transferred.
    let (announced, requested) = check_run(&run_client(&address, &cache), &mut server, "cold");
    assert!(announced >= 2, "init.lua and data.lua are announced");
    assert_eq!(requested, announced, "a cold cache requests everything");
    server
        .wait_for("net_probe saw peer", Duration::from_secs(10))
        .expect("the server module saw the client");

    // Warm cache: nothing is transferred.
    let (again, requested) = check_run(&run_client(&address, &cache), &mut server, "warm");
    assert_eq!(again, announced);
    assert_eq!(requested, 0, "a warm cache requests nothing");

    // A corrupted entry is detected and refetched, and only it.
    let hash: [u8; 32] = Sha256::digest(data_lua().as_bytes()).into();
    let entry = cache.join("files").join(buildat_client::cache::hex(&hash));
    std::fs::write(&entry, b"return 'tampered'").expect("corrupt the cache");
    let out = run_client(&address, &cache);
    let (_, requested) = check_run(&out, &mut server, "corrupted");
    assert_eq!(requested, 1);
    assert!(String::from_utf8_lossy(&out.stderr).contains("corrupt"));
    assert_eq!(
        std::fs::read_to_string(&entry).expect("entry"),
        data_lua(),
        "the entry is repaired"
    );

    assert_eq!(
        server.stop(Duration::from_secs(30)),
        Some(0),
        "{}",
        server.output()
    );
}
