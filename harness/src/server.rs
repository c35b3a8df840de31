//! The real `buildat-server` binary under test, the one driver shared by
//! the harness, the server's and the client's tests and the benchmarks:
//! started with any arguments (or, for the harness, on a free port with a
//! temporary world), driven through its console, watched through its log,
//! sampled through `/proc`, stopped, signalled or killed (always on drop).
//!
//! Owns: the server child process, its console pipe and every line it
//! logged (also written to a log file if asked, `server.log` in the
//! harness's run folder). Does not own: what a test makes of the lines.

use std::ffi::{OsStr, OsString};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use crate::layout::Layout;
use crate::proc_stats::{self, Sample};

/// Settings turning the network module's per-address connection limits
/// off, for runs whose many clients all come from 127.0.0.1 (load and
/// fault runs, tests with hundreds of connections).
pub const ONE_ADDRESS_CROWD: [&str; 2] = [
    "network.max_connections_per_ip=0",
    "network.connects_per_ip_per_second=0",
];

/// How a server is started.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    pub world: PathBuf,
    /// Extra module folders after the repository's `modules/`.
    pub extra_module_paths: Vec<PathBuf>,
    /// `--set KEY=VALUE` settings. `main.creative=true` (endless blocks,
    /// instant digs: what the load, crash and fault runs' bots that place
    /// arbitrary blocks need) comes first, so `main.creative=false` here
    /// plays survival.
    pub settings: Vec<String>,
    pub tick_ms: u64,
    pub watchdog_ms: Option<u64>,
    /// `--slow-handler-ms`: log handlers that run at least this long.
    pub slow_handler_ms: Option<u64>,
    /// Where the server's log is copied.
    pub log_file: PathBuf,
}

/// A running `buildat-server` child: every line it writes (stdout and
/// stderr) is collected in `seen` (and copied to a log file if it has one);
/// killed on drop.
pub struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    /// Every line so far.
    pub seen: Vec<String>,
    /// `wait_for` looks at lines from here on (moved by `send`).
    cursor: usize,
    log: Option<std::fs::File>,
    /// Where it listens, once known (`start`, `wait_started`,
    /// `listen_address`).
    pub address: String,
}

impl Server {
    /// Starts `binary` (a `buildat-server`) with `args` and the given
    /// stdin (`Stdio::piped()` for a console), collecting its output lines.
    /// Waits for nothing.
    pub fn spawn<S: AsRef<OsStr>>(
        binary: impl AsRef<Path>,
        args: impl IntoIterator<Item = S>,
        stdin: Stdio,
    ) -> anyhow::Result<Self> {
        let binary = binary.as_ref();
        let mut child = Command::new(binary)
            .args(args)
            .stdin(stdin)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("starting {}", binary.display()))?;
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
        let stdin = child.stdin.take();
        Ok(Self {
            child,
            stdin,
            lines,
            seen: Vec::new(),
            cursor: 0,
            log: None,
            address: String::new(),
        })
    }

    /// Copies every line from now on to `path`.
    pub fn log_to(&mut self, path: &Path) -> anyhow::Result<()> {
        let mut log =
            std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
        for line in &self.seen {
            let _ = writeln!(log, "{line}");
        }
        self.log = Some(log);
        Ok(())
    }

    /// Starts the server and waits until it listens and every module started.
    pub fn start(layout: &Layout, options: &ServerOptions) -> anyhow::Result<Self> {
        let args = Self::start_args(layout, options);
        let mut server = Self::spawn(&layout.server_bin, &args, Stdio::piped())?;
        server.log_to(&options.log_file)?;
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
        server.address = listened_address(&listening);
        server
            .wait_for("server started", Duration::from_secs(300))
            .with_context(|| server.failure("the server never finished starting"))?;
        Ok(server)
    }

    /// The command line [`Server::start`] runs the server with (a headless
    /// command such as `pregen` may follow it).
    pub fn start_args(layout: &Layout, options: &ServerOptions) -> Vec<OsString> {
        let mut args: Vec<OsString> = vec![
            "--world".into(),
            options.world.clone().into(),
            "--no-default-modules".into(),
            "--modules".into(),
            layout.repo.join("modules").into(),
        ];
        for path in &options.extra_module_paths {
            args.extend(["--modules".into(), path.clone().into()]);
        }
        args.extend([
            "--build-dir".into(),
            layout.build_dir.clone().into(),
            "--module-profile".into(),
            layout.module_profile.into(),
            "--listen".into(),
            "127.0.0.1:0".into(),
            "--no-watch".into(),
            "--tick-ms".into(),
            options.tick_ms.to_string().into(),
        ]);
        if let Some(ms) = options.watchdog_ms {
            args.extend(["--watchdog-ms".into(), ms.to_string().into()]);
        }
        if let Some(ms) = options.slow_handler_ms {
            args.extend(["--slow-handler-ms".into(), ms.to_string().into()]);
        }
        // Before the options' settings: a later `--set` of the same key wins.
        args.extend(["--set".into(), "main.creative=true".into()]);
        for setting in &options.settings {
            args.extend(["--set".into(), setting.into()]);
        }
        args
    }

    /// Waits for the network module's "listening on ADDRESS" line (up to
    /// 5 minutes: the first start may build modules); the address. Panics
    /// with the output if it never comes: for tests.
    pub fn listen_address(&mut self) -> String {
        let line = self
            .wait_for_from(0, "listening on ", Duration::from_secs(300))
            .unwrap_or_else(|| panic!("the server did not listen:\n{}", self.output()));
        self.address = listened_address(&line);
        self.address.clone()
    }

    /// Where the web module serves its page, from its "web page at
    /// http://ADDRESS/" line (waiting up to 60 s for it).
    pub fn web_address(&mut self) -> anyhow::Result<String> {
        const SAID: &str = "web page at http://";
        let line = self
            .wait_for_from(0, SAID, Duration::from_secs(60))
            .context("the web module never said where its page is")?;
        let after = line
            .split_once(SAID)
            .map(|(_, rest)| rest)
            .unwrap_or_default();
        Ok(after.split('/').next().unwrap_or_default().to_string())
    }

    /// `listen_address`, then waits for "server started"; the address.
    /// Panics with the output if either never comes: for tests.
    pub fn wait_started(&mut self) -> String {
        let address = self.listen_address();
        self.wait_for_from(0, "server started", Duration::from_secs(120))
            .unwrap_or_else(|| panic!("the server did not start:\n{}", self.output()));
        address
    }

    /// Waits until the server has a listening TCP socket, read from
    /// `/proc` (for a server that logs nothing at its log level); its
    /// address on 127.0.0.1.
    pub fn wait_listening_socket(&mut self, timeout: Duration) -> Option<String> {
        let deadline = Instant::now() + timeout;
        loop {
            self.pump();
            if let Some(port) = proc_stats::listening_port(self.pid()) {
                self.address = format!("127.0.0.1:{port}");
                return Some(self.address.clone());
            }
            if Instant::now() > deadline || !self.is_running() {
                return None;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
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
        if let Some(log) = &mut self.log {
            let _ = writeln!(log, "{line}");
        }
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
        self.wait_for_line(from, |line| line.contains(needle), timeout)
    }

    /// Waits for a line, from the `from`-th on, that `wanted` accepts.
    pub fn wait_for_line(
        &mut self,
        from: usize,
        wanted: impl Fn(&str) -> bool,
        timeout: Duration,
    ) -> Option<String> {
        // Lines are taken one at a time up to the match, not all that are
        // waiting: `output` then holds what came up to it, no more.
        if let Some(line) = self.seen.get(from..)?.iter().find(|l| wanted(l)) {
            return Some(line.clone());
        }
        let deadline = Instant::now() + timeout;
        while let Some(line) = self.next_line(deadline) {
            if wanted(&line) {
                return Some(line);
            }
        }
        None
    }

    /// Waits for a line containing `needle`, among the lines since the
    /// last `send` (all of them before any); returns it.
    pub fn wait_for(&mut self, needle: &str, timeout: Duration) -> Option<String> {
        self.wait_for_from(self.cursor, needle, timeout)
    }

    /// `wait_for` for tests: the line, or a panic naming what was awaited
    /// and showing the server's output.
    pub fn expect_line(&mut self, needle: &str, timeout: Duration) -> String {
        match self.wait_for(needle, timeout) {
            Some(line) => line,
            None => panic!(
                "no line with {needle:?} within {timeout:?}; output:\n{}",
                self.output()
            ),
        }
    }

    /// `stop` on the console, for tests: panics unless the server exits
    /// with status 0 within 30 s.
    pub fn stop_cleanly(&mut self) {
        self.send("stop");
        let status = self.wait_exit(Duration::from_secs(30));
        assert_eq!(status, Some(0), "stop; output:\n{}", self.output());
    }

    /// Writes a console line; later `wait_for`s look only at newer output.
    /// Panics if the console is not piped or is closed: for tests (`command`
    /// is the checked form).
    pub fn send(&mut self, line: &str) {
        self.pump();
        self.cursor = self.seen.len();
        let stdin = self.stdin.as_mut().expect("the console is piped");
        writeln!(stdin, "{line}").expect("write to the console");
        stdin.flush().expect("flush the console");
    }

    /// The lines taken so far (by `wait_for`, `wait_exit`, `pump`, ...),
    /// one per line. It does not take what is waiting: a test asserting
    /// that something was not logged looks at what it waited for, not at
    /// what the server logged since (`pump` first to include that).
    pub fn output(&self) -> String {
        self.seen.join("\n")
    }

    /// Sends `signal` (a name such as `INT` or `TERM`) with kill(1).
    pub fn signal(&self, signal: &str) -> anyhow::Result<()> {
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.child.id().to_string())
            .status()
            .context("running kill")?;
        if !status.success() {
            bail!("kill -{signal} {} failed: {status}", self.child.id());
        }
        Ok(())
    }

    /// Runs a console command and waits for its answer: the first new line
    /// that starts with one of `answers` (an `error:` line fails). Answers
    /// are bare lines; a log line that merely contains an answer's words
    /// (`[creatures] creatures: area ready`) is not one.
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
                if answers.iter().any(|a| line.starts_with(a)) {
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

    /// `stop` on the console; the exit code (or None if it did not exit;
    /// -1 if killed by a signal).
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

    /// Waits for exit, collecting the remaining output; the exit code (-1
    /// if killed by a signal), or None if it still runs after `timeout`.
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

/// Lines of the server's output shown when a test fails while it runs.
const LAST_WORDS: usize = 80;

impl Drop for Server {
    fn drop(&mut self) {
        if self.is_running() {
            self.kill();
        }
        if std::thread::panicking() {
            // A test failed: what the server said last, for the reader.
            self.pump();
            let from = self.seen.len().saturating_sub(LAST_WORDS);
            eprintln!("--- the server's last {} lines ---", self.seen.len() - from);
            for line in &self.seen[from..] {
                eprintln!("{line}");
            }
        }
    }
}

/// The address in a "listening on ADDRESS" line.
fn listened_address(line: &str) -> String {
    line.rsplit("listening on ")
        .next()
        .unwrap_or_default()
        .trim()
        .to_string()
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A console whose module logs a line holding the answer's words before
    /// the answer itself, as `creatures` does when its area is ready.
    #[test]
    fn a_command_takes_the_answer_not_a_log_line_with_its_words() {
        let script = "read command; \
            echo \"2026-12-05T17:35:23Z  INFO [creatures] creatures: area ready\" >&2; \
            sleep 0.2; echo \"creatures: 3 ($command)\"; read done";
        let mut server = Server::spawn("sh", ["-c", script], Stdio::piped()).expect("sh");
        let answer = server
            .command("creatures", &["creatures: "], Duration::from_secs(10))
            .expect("an answer");
        assert_eq!(answer, "creatures: 3 (creatures)");
    }

    /// The driven servers play creative unless the options say otherwise
    /// later on the line (the server takes the last `--set` of a key).
    #[test]
    fn servers_play_creative_unless_a_setting_says_survival() {
        let layout = Layout {
            repo: PathBuf::from("/repo"),
            server_bin: PathBuf::from("server"),
            client_bin: PathBuf::from("client"),
            build_dir: PathBuf::from("/build"),
            module_profile: "dev",
            scratch: tempfile::tempdir().expect("a temp dir"),
        };
        let mut options = ServerOptions {
            world: PathBuf::from("/world"),
            extra_module_paths: Vec::new(),
            settings: Vec::new(),
            tick_ms: 50,
            watchdog_ms: None,
            slow_handler_ms: None,
            log_file: PathBuf::from("/log"),
        };
        let sets = |options: &ServerOptions| -> Vec<String> {
            let args = Server::start_args(&layout, options);
            args.windows(2)
                .filter(|pair| pair[0] == "--set")
                .map(|pair| pair[1].to_string_lossy().into_owned())
                .collect()
        };
        assert_eq!(sets(&options), ["main.creative=true"]);
        options.settings.push("main.creative=false".into());
        assert_eq!(
            sets(&options).last().map(String::as_str),
            Some("main.creative=false")
        );
    }
}
