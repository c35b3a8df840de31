//! What the client's tests share: the synthetic world data (`world_data`),
//! and for the end-to-end tests the real `buildat-server`: finding the
//! binary (next to the test executable: `target/<profile>/buildat-server`,
//! which `cargo test --workspace` builds), building the repository's
//! modules once into a shared build dir (artifacts are content-addressed,
//! so copies laid out per test reuse them), copying module folders, and
//! starting it through `buildat-harness`'s driver; a virtual X display
//! and xdotool for the window tests (`xvfb`); the game's client Lua in a
//! runtime without a server (`lua`). The fake server is
//! `buildat_harness::fake_server`.
#![allow(dead_code)]

pub mod game;
pub mod lua;
pub mod world_data;
pub mod xvfb;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub use buildat_harness::layout::repo_root;

pub use buildat_harness::layout::test_build_dir as build_dir;

pub fn server_binary() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps/<test>");
    let server = profile_dir.join("buildat-server");
    assert!(
        server.is_file(),
        "{} is missing: run `cargo test --workspace` (or `cargo build -p buildat-server` \
         with the same target dir) first",
        server.display()
    );
    server
}

pub fn copy_dir(from: &Path, to: &Path) {
    buildat_harness::layout::copy_dir(from, to).expect("copy a module folder");
}

/// Copies `modules/<name>` of the repository for each name into `to`.
pub fn copy_modules(names: &[&str], to: &Path) {
    buildat_harness::layout::write_module_workspace(to).expect("a workspace for the copies");
    for name in names {
        let from = repo_root().join("modules").join(name);
        assert!(from.is_dir(), "{} is missing", from.display());
        copy_dir(&from, &to.join(name));
    }
}

/// Builds the modules from their repository folders into the shared build
/// dir.
pub fn prebuild() {
    let root = repo_root();
    let out = Command::new(server_binary())
        .args(["--no-default-modules", "--modules"])
        .arg(root.join("modules"))
        .arg("--modules")
        .arg(root.join("tests").join("modules"))
        .arg("--build-dir")
        .arg(build_dir())
        .args(["--module-profile", "dev", "build"])
        .output()
        .expect("run buildat-server build");
    // Modules a test does not use may fail to build while someone works on
    // them; the server start fails clearly if one it needs did.
    if !out.status.success() {
        eprintln!(
            "note: `buildat-server build` reported failures:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

pub use buildat_harness::server::Server;

/// Starts the real server on `world` with the modules in `modules`,
/// listening on a free loopback port, plus `extra` arguments (through
/// `buildat-harness`'s driver: console piped, output collected, killed on
/// drop). `Server::wait_started` gives its address.
pub fn start_server(world: &Path, modules: &Path, extra: &[&str]) -> Server {
    let mut args: Vec<OsString> = vec![
        "--world".into(),
        world.into(),
        "--no-default-modules".into(),
        "--modules".into(),
        modules.into(),
        "--build-dir".into(),
        build_dir().into(),
    ];
    args.extend(
        [
            "--module-profile",
            "dev",
            "--listen",
            "127.0.0.1:0",
            "--no-watch",
        ]
        .into_iter()
        .chain(extra.iter().copied())
        .map(OsString::from),
    );
    Server::spawn(server_binary(), &args, Stdio::piped()).expect("start buildat-server")
}
