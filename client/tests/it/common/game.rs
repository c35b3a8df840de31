//! The default game end to end, shared by the tests that run it: the
//! real `buildat-server` with `__loader`, `network`, `client_file`,
//! `voxelworld`, `worldgen` and `main` copied into a temporary module path
//! (`Setup`, `--set voxelworld.view_radius=2`), one server at a time
//! (`SERIAL`), `buildat-client` processes run in the background with their
//! stderr collected (`Running`), and reading what the game logs.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use super::{Server, copy_modules, prebuild, start_server};

pub const MODULES: [&str; 7] = [
    "__loader",
    "network",
    "client_file",
    "voxelworld",
    "worldgen",
    "replicate",
    "main",
];
pub const CLIENT: &str = env!("CARGO_BIN_EXE_buildat-client");

/// One server at a time: world generation is CPU-heavy on a small machine.
pub static SERIAL: Mutex<()> = Mutex::new(());

pub struct Setup {
    pub scratch: tempfile::TempDir,
    pub modules: PathBuf,
    pub world: PathBuf,
}

impl Setup {
    pub fn new() -> Self {
        prebuild();
        let scratch = tempfile::tempdir().expect("temp dir");
        let modules = scratch.path().join("modules");
        copy_modules(&MODULES, &modules);
        let world = scratch.path().join("world");
        Self {
            scratch,
            modules,
            world,
        }
    }

    pub fn start(&self, extra: &[&str]) -> (Server, String) {
        let mut args = vec!["--set", "voxelworld.view_radius=2"];
        args.extend_from_slice(extra);
        let mut server = start_server(&self.world, &self.modules, &args);
        let address = server.wait_started();
        (server, address)
    }

    pub fn cache(&self) -> PathBuf {
        self.scratch.path().join("cache")
    }

    /// Writes a bot script; its path.
    pub fn script(&self, name: &str, source: &str) -> PathBuf {
        let path = self.scratch.path().join(name);
        std::fs::write(&path, source).expect("script");
        path
    }

    pub fn command(&self, address: &str, name: &str, script: &Path, extra: &[&str]) -> Command {
        let mut command = Command::new(CLIENT);
        command
            .args(["--connect", address, "--cache"])
            .arg(self.cache())
            .args(["--name", name, "--quit-after", "120", "--script"])
            .arg(script)
            .args(extra);
        command
    }
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A client running in the background, its stderr lines collected.
pub struct Running {
    child: Child,
    lines: Receiver<String>,
    seen: Vec<String>,
}

impl Running {
    pub fn spawn(mut command: Command) -> Self {
        let mut child = command
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start buildat-client");
        let stderr = child.stderr.take().expect("stderr");
        let (send, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = send.send(line);
            }
        });
        Self {
            child,
            lines,
            seen: Vec::new(),
        }
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

    /// Whether the process has not exited yet.
    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Waits for the exit (at most `timeout`, then kills); (code, stderr).
    pub fn finish(mut self, timeout: Duration) -> (Option<i32>, String) {
        let deadline = Instant::now() + timeout;
        let code = loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                break status.code();
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        // The reader thread ends with the pipe.
        while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(2)) {
            self.seen.push(line);
        }
        (code, self.seen.join("\n"))
    }
}

/// The spawn position from the game module's "spawned at x,y,z" line.
pub fn spawn_position(stderr: &str) -> [f64; 3] {
    let line = stderr
        .lines()
        .find(|l| l.contains("spawned at "))
        .unwrap_or_else(|| panic!("never spawned:\n{stderr}"));
    let v: Vec<f64> = line
        .split("spawned at ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .expect("a position")
        .split(',')
        .map(|n| n.parse().expect("coordinate"))
        .collect();
    [v[0], v[1], v[2]]
}
