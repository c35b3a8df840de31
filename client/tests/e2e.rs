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

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Output, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

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

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("client/ has a parent")
        .to_path_buf()
}

fn build_dir() -> PathBuf {
    repo_root().join("target").join("test-modules")
}

fn server_binary() -> PathBuf {
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

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create dir");
    for entry in std::fs::read_dir(from).expect("read dir").flatten() {
        let path = entry.path();
        let name = entry.file_name();
        if name == "target" {
            continue;
        }
        if path.is_dir() {
            copy_dir(&path, &to.join(&name));
        } else {
            std::fs::copy(&path, to.join(&name)).expect("copy file");
        }
    }
}

/// Builds the modules from their repository folders into the shared build
/// dir (artifacts are content-addressed, so the copies reuse them).
fn prebuild() {
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
    // Modules this test does not use may fail to build while someone works
    // on them; the server start below fails clearly if one we need did.
    if !out.status.success() {
        eprintln!(
            "note: `buildat-server build` reported failures:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

fn lay_out_modules(modules: &Path) {
    let root = repo_root();
    for name in ["__loader", "network", "client_file"] {
        let from = root.join("modules").join(name);
        assert!(from.is_dir(), "{} is missing", from.display());
        copy_dir(&from, &modules.join(name));
    }
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

struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    seen: Vec<String>,
}

impl Server {
    fn start(world: &Path, modules: &Path) -> Self {
        let mut child = Command::new(server_binary())
            .arg("--world")
            .arg(world)
            .arg("--no-default-modules")
            .arg("--modules")
            .arg(modules)
            .arg("--build-dir")
            .arg(build_dir())
            .args([
                "--module-profile",
                "dev",
                "--listen",
                "127.0.0.1:0",
                "--no-watch",
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start buildat-server");
        let (send, lines) = channel();
        for stream in [
            Box::new(child.stdout.take().expect("stdout")) as Box<dyn std::io::Read + Send>,
            Box::new(child.stderr.take().expect("stderr")),
        ] {
            let send = send.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stream).lines().map_while(Result::ok) {
                    let _ = send.send(line);
                }
            });
        }
        let stdin = child.stdin.take();
        Self {
            child,
            stdin,
            lines,
            seen: Vec::new(),
        }
    }

    fn wait_for(&mut self, needle: &str, timeout: Duration) -> Option<String> {
        if let Some(line) = self.seen.iter().find(|l| l.contains(needle)) {
            return Some(line.clone());
        }
        let deadline = Instant::now() + timeout;
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            let line = self.lines.recv_timeout(left).ok()?;
            self.seen.push(line.clone());
            if line.contains(needle) {
                return Some(line);
            }
        }
        None
    }

    fn output(&mut self) -> String {
        while let Ok(line) = self.lines.try_recv() {
            self.seen.push(line);
        }
        self.seen.join("\n")
    }

    fn stop(&mut self) -> Option<i32> {
        if let Some(stdin) = self.stdin.as_mut() {
            let _ = writeln!(stdin, "stop");
            let _ = stdin.flush();
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status.code();
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
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
    let mut server = Server::start(&scratch.path().join("world"), &modules);
    let line = server
        .wait_for("listening on ", Duration::from_secs(300))
        .unwrap_or_else(|| panic!("the server did not listen:\n{}", server.output()));
    let address = line
        .rsplit("listening on ")
        .next()
        .unwrap_or_default()
        .trim()
        .to_string();
    server
        .wait_for("server started", Duration::from_secs(120))
        .unwrap_or_else(|| panic!("the server did not start:\n{}", server.output()));
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

    assert_eq!(server.stop(), Some(0), "{}", server.output());
}
