//! The real `buildat-server` for the client's end-to-end tests: finding the
//! binary (next to the test executable: `target/<profile>/buildat-server`,
//! which `cargo test --workspace` builds), building the repository's
//! modules once into a shared build dir (artifacts are content-addressed,
//! so copies laid out per test reuse them), copying module folders, and a
//! running server fed commands on stdin with its log lines collected.
//! Shared by `tests/e2e.rs` and `tests/world_e2e.rs`.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

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

pub struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    seen: Vec<String>,
}

impl Server {
    /// Starts a server on `world` with the modules in `modules`, listening
    /// on a free loopback port, plus `extra` arguments.
    pub fn start(world: &Path, modules: &Path, extra: &[&str]) -> Self {
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
            .args(extra)
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

    /// Waits for the server to listen and start; its address.
    pub fn wait_started(&mut self) -> String {
        let line = self
            .wait_for("listening on ", Duration::from_secs(300))
            .unwrap_or_else(|| panic!("the server did not listen:\n{}", self.output()));
        let address = line
            .rsplit("listening on ")
            .next()
            .unwrap_or_default()
            .trim()
            .to_string();
        self.wait_for("server started", Duration::from_secs(120))
            .unwrap_or_else(|| panic!("the server did not start:\n{}", self.output()));
        address
    }

    pub fn wait_for(&mut self, needle: &str, timeout: Duration) -> Option<String> {
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

    pub fn output(&mut self) -> String {
        while let Ok(line) = self.lines.try_recv() {
            self.seen.push(line);
        }
        self.seen.join("\n")
    }

    /// `stop` on stdin; the exit code, or None if it did not stop in 30 s.
    pub fn stop(&mut self) -> Option<i32> {
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
