//! The real `buildat-server` binary under test: started on a free port
//! with a temporary world, driven through its console, watched through its
//! log, sampled through `/proc`, stopped or killed.
//!
//! Owns: the server child process, its console pipe and every line it
//! logged (also written to `server.log` in the run's folder). Does not own:
//! what a test makes of the lines.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use crate::layout::Layout;
use crate::proc_stats::{self, Sample};

/// How a server is started.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    pub world: PathBuf,
    /// Extra module folders after the repository's `modules/`.
    pub extra_module_paths: Vec<PathBuf>,
    /// `--set KEY=VALUE` settings.
    pub settings: Vec<String>,
    pub tick_ms: u64,
    pub watchdog_ms: Option<u64>,
    /// Where the server's log is copied.
    pub log_file: PathBuf,
}

pub struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    /// Every line so far.
    pub seen: Vec<String>,
    log: std::fs::File,
    pub address: String,
}

impl Server {
    /// Starts the server and waits until it listens and every module started.
    pub fn start(layout: &Layout, options: &ServerOptions) -> anyhow::Result<Self> {
        let mut command = Command::new(&layout.server_bin);
        command
            .arg("--world")
            .arg(&options.world)
            .arg("--no-default-modules")
            .arg("--modules")
            .arg(layout.repo.join("modules"));
        for path in &options.extra_module_paths {
            command.arg("--modules").arg(path);
        }
        command
            .arg("--build-dir")
            .arg(&layout.build_dir)
            .arg("--module-profile")
            .arg(layout.module_profile)
            .arg("--listen")
            .arg("127.0.0.1:0")
            .arg("--no-watch")
            .arg("--tick-ms")
            .arg(options.tick_ms.to_string());
        if let Some(ms) = options.watchdog_ms {
            command.arg("--watchdog-ms").arg(ms.to_string());
        }
        for setting in &options.settings {
            command.arg("--set").arg(setting);
        }
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("starting {}", layout.server_bin.display()))?;
        let (send, lines) = channel();
        let stdout = child.stdout.take().context("server stdout")?;
        let stderr = child.stderr.take().context("server stderr")?;
        let send_err = send.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = send.send(line);
            }
        });
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = send_err.send(line);
            }
        });
        let log = std::fs::File::create(&options.log_file)
            .with_context(|| format!("creating {}", options.log_file.display()))?;
        let stdin = child.stdin.take();
        let mut server = Self {
            child,
            stdin,
            lines,
            seen: Vec::new(),
            log,
            address: String::new(),
        };
        // Building the modules may take minutes on a fresh machine: show
        // which module is being built meanwhile.
        let deadline = Instant::now() + Duration::from_secs(900);
        let listening = loop {
            let Some(line) = server.next_line(deadline) else {
                anyhow::bail!(server.failure("the server never listened"));
            };
            if let Some(progress) = build_progress(&line) {
                println!("server: {progress}");
            }
            if line.contains("listening on ") {
                break line;
            }
        };
        server.address = listening
            .rsplit("listening on ")
            .next()
            .unwrap_or_default()
            .trim()
            .to_string();
        server
            .wait_for("server started", Duration::from_secs(300))
            .with_context(|| server.failure("the server never finished starting"))?;
        Ok(server)
    }

    /// The next line, waiting until `deadline` (None: time-out or the end).
    fn next_line(&mut self, deadline: Instant) -> Option<String> {
        let left = deadline.checked_duration_since(Instant::now())?;
        let line = self.lines.recv_timeout(left).ok()?;
        self.take_line(line.clone());
        Some(line)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn sample(&self) -> Option<Sample> {
        proc_stats::sample(self.pid())
    }

    fn take_line(&mut self, line: String) {
        let _ = writeln!(self.log, "{line}");
        self.seen.push(line);
    }

    /// Takes every line logged so far.
    pub fn pump(&mut self) {
        while let Ok(line) = self.lines.try_recv() {
            self.take_line(line);
        }
    }

    /// Waits for a line, from the `from`-th on, containing `needle`.
    pub fn wait_for_from(
        &mut self,
        from: usize,
        needle: &str,
        timeout: Duration,
    ) -> Option<String> {
        self.pump();
        if let Some(line) = self.seen.get(from..)?.iter().find(|l| l.contains(needle)) {
            return Some(line.clone());
        }
        let deadline = Instant::now() + timeout;
        while let Some(line) = self.next_line(deadline) {
            if line.contains(needle) {
                return Some(line);
            }
        }
        None
    }

    /// Waits for any line containing `needle`.
    pub fn wait_for(&mut self, needle: &str, timeout: Duration) -> Option<String> {
        self.wait_for_from(0, needle, timeout)
    }

    /// Runs a console command and waits for its answer: the first new line
    /// containing one of `answers` (an `error:` line fails).
    pub fn command(
        &mut self,
        command: &str,
        answers: &[&str],
        timeout: Duration,
    ) -> anyhow::Result<String> {
        self.pump();
        let from = self.seen.len();
        let stdin = self.stdin.as_mut().context("console closed")?;
        writeln!(stdin, "{command}").context("writing to the console")?;
        stdin.flush().context("writing to the console")?;
        let deadline = Instant::now() + timeout;
        let mut checked = from;
        loop {
            self.pump();
            for line in &self.seen[checked..] {
                if answers.iter().any(|a| line.contains(a)) {
                    return Ok(line.clone());
                }
                if line.starts_with("error: ") {
                    bail!("console `{command}`: {line}");
                }
            }
            checked = self.seen.len();
            if Instant::now() > deadline {
                bail!("console `{command}`: no answer in {timeout:?}");
            }
            if !self.is_running() {
                bail!("console `{command}`: the server exited");
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// `stop` on the console; the exit status (or None if it did not exit).
    pub fn stop(&mut self, timeout: Duration) -> Option<i32> {
        if let Some(stdin) = self.stdin.as_mut() {
            let _ = writeln!(stdin, "stop");
            let _ = stdin.flush();
        }
        self.wait_exit(timeout)
    }

    /// kill -9, then reap.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        std::thread::sleep(Duration::from_millis(50));
        self.pump();
    }

    pub fn wait_exit(&mut self, timeout: Duration) -> Option<i32> {
        let deadline = Instant::now() + timeout;
        loop {
            self.pump();
            if let Ok(Some(status)) = self.child.try_wait() {
                std::thread::sleep(Duration::from_millis(50));
                self.pump();
                return Some(status.code().unwrap_or(-1));
            }
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Lines from the `from`-th on that contain `needle`.
    pub fn lines_with(&self, from: usize, needle: &str) -> Vec<String> {
        self.seen
            .get(from..)
            .unwrap_or_default()
            .iter()
            .filter(|l| l.contains(needle))
            .cloned()
            .collect()
    }

    /// An error text ending with the log's last lines.
    pub fn failure(&mut self, what: &str) -> String {
        self.pump();
        let tail = self.seen.len().saturating_sub(30);
        format!(
            "{what}; last server lines:\n{}",
            self.seen[tail..].join("\n")
        )
    }

    /// Lines that look like a problem (ERROR and WARN level).
    pub fn problems_since(&self, from: usize) -> Vec<String> {
        self.seen
            .get(from..)
            .unwrap_or_default()
            .iter()
            .filter(|l| l.contains(" ERROR ") || l.contains(" WARN "))
            .cloned()
            .collect()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if self.is_running() {
            self.kill();
        }
    }
}

/// The text of a server log line about building a module, if it is one.
fn build_progress(line: &str) -> Option<&str> {
    (line.contains("building module ") || line.contains("built module "))
        .then(|| line.split(" INFO ").nth(1).unwrap_or(line).trim())
}

/// Runs `buildat-server ... build` over `module_path` (builds what changed),
/// showing which module is being built.
pub fn build_modules(layout: &Layout, module_path: &Path) -> anyhow::Result<()> {
    let mut child = Command::new(&layout.server_bin)
        .arg("--no-default-modules")
        .arg("--modules")
        .arg(module_path)
        .arg("--build-dir")
        .arg(&layout.build_dir)
        .arg("--module-profile")
        .arg(layout.module_profile)
        .arg("--world")
        .arg(layout.scratch.path().join("build-world"))
        .arg("build")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .context("running buildat-server build")?;
    let mut output = Vec::new();
    if let Some(stderr) = child.stderr.take() {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(progress) = build_progress(&line) {
                println!("server: {progress}");
            }
            output.push(line);
        }
    }
    let status = child.wait().context("waiting for buildat-server build")?;
    if !status.success() {
        bail!(
            "building the modules in {} failed:\n{}",
            module_path.display(),
            output.join("\n")
        );
    }
    Ok(())
}
