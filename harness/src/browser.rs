//! A real headless browser: Debian's `chromium` driven over the DevTools
//! protocol through a pipe (`--remote-debugging-pipe`: commands on fd 3,
//! answers on fd 4, each a JSON message ended by a NUL byte). The web
//! module's end-to-end test, `loadtest --browsers` and `mapbench` use it.
//!
//! Owns: starting chromium, sending commands, evaluating script in the
//! page, screenshots. Does not own: what a page should show (the callers
//! check that), installing chromium (`scripts/install-browser-deps`).

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::{Value, json};

/// One chromium process with one page attached; killed on drop.
pub struct Browser {
    child: Child,
    commands: std::io::PipeWriter,
    answers: Receiver<Value>,
    next_id: u64,
    /// The attached page's session ("" until attached: browser commands).
    session: String,
    _profile: tempfile::TempDir,
}

impl Browser {
    /// The chromium command on this machine, if there is one.
    pub fn binary() -> Option<&'static str> {
        ["chromium", "chromium-browser"].into_iter().find(|name| {
            Command::new(name)
                .arg("--version")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        })
    }

    /// Starts `binary` headless with a fresh profile and a blank page of
    /// `width` × `height` CSS pixels.
    pub fn launch(binary: &str, width: u32, height: u32) -> anyhow::Result<Self> {
        Self::start(binary, width, height, false)
    }

    /// [`Self::launch`] with every chromium thread under the idle
    /// scheduling policy (`chrt --idle 0`; chromium raises its own nice
    /// values, so `nice` does not hold it back): a browser sharing the
    /// machine with the server it measures takes only the CPU nothing
    /// else wants, as if it ran elsewhere.
    pub fn launch_idle(binary: &str, width: u32, height: u32) -> anyhow::Result<Self> {
        Self::start(binary, width, height, true)
    }

    fn start(binary: &str, width: u32, height: u32, idle: bool) -> anyhow::Result<Self> {
        use std::os::fd::AsRawFd;
        use std::os::unix::process::CommandExt;
        let profile = tempfile::tempdir().context("a browser profile folder")?;
        let (child_reads, commands) = std::io::pipe().context("a pipe")?;
        let (answers_in, child_writes) = std::io::pipe().context("a pipe")?;
        let (read_fd, write_fd) = (child_reads.as_raw_fd(), child_writes.as_raw_fd());
        let mut command = if idle {
            let mut chrt = Command::new("chrt");
            chrt.args(["--idle", "0", binary]);
            chrt
        } else {
            Command::new(binary)
        };
        command
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--hide-scrollbars",
                "--mute-audio",
                "--remote-debugging-pipe",
                &format!("--window-size={width},{height}"),
                &format!("--user-data-dir={}", profile.path().display()),
                "about:blank",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // SAFETY: only async-signal-safe calls (fcntl, dup2) between fork
        // and exec: the pipe ends go to fds 3 and 4, through fds above 10
        // in case an end already is 3 or 4.
        unsafe {
            command.pre_exec(move || {
                let reads = libc::fcntl(read_fd, libc::F_DUPFD, 10);
                let writes = libc::fcntl(write_fd, libc::F_DUPFD, 10);
                if reads < 0 || writes < 0 || libc::dup2(reads, 3) < 0 || libc::dup2(writes, 4) < 0
                {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = command
            .spawn()
            .with_context(|| format!("starting {binary}"))?;
        drop(child_reads);
        drop(child_writes);
        let (send, answers) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(answers_in);
            let mut message = Vec::new();
            while reader.read_until(0, &mut message).is_ok_and(|n| n > 0) {
                if message.last() == Some(&0) {
                    message.pop();
                }
                if let Ok(value) = serde_json::from_slice(&message)
                    && send.send(value).is_err()
                {
                    return;
                }
                message.clear();
            }
        });
        let mut browser = Self {
            child,
            commands,
            answers,
            next_id: 1,
            session: String::new(),
            _profile: profile,
        };
        let target = browser.command("Target.createTarget", json!({"url": "about:blank"}))?;
        let target = target["targetId"]
            .as_str()
            .context("chromium made no page")?
            .to_string();
        let attached = browser.command(
            "Target.attachToTarget",
            json!({"targetId": target, "flatten": true}),
        )?;
        browser.session = attached["sessionId"]
            .as_str()
            .context("chromium attached no session")?
            .to_string();
        browser.command(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false}),
        )?;
        browser.command("Page.enable", json!({}))?;
        Ok(browser)
    }

    /// Sends a command (to the page once attached) and answers its result.
    pub fn command(&mut self, method: &str, params: Value) -> anyhow::Result<Value> {
        let id = self.next_id;
        self.next_id += 1;
        let mut message = json!({"id": id, "method": method, "params": params});
        if !self.session.is_empty() {
            message["sessionId"] = Value::String(self.session.clone());
        }
        let mut bytes = serde_json::to_vec(&message).context("encoding a command")?;
        bytes.push(0);
        self.commands
            .write_all(&bytes)
            .with_context(|| format!("chromium takes no more commands ({method})"))?;
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let answer = deadline
                .checked_duration_since(Instant::now())
                .and_then(|left| self.answers.recv_timeout(left).ok())
                .with_context(|| format!("chromium did not answer {method}"))?;
            if answer["id"] == id {
                if let Some(error) = answer.get("error") {
                    bail!("{method}: {error}");
                }
                return Ok(answer["result"].clone());
            }
        }
    }

    /// The value of `expression` evaluated in the page (promises awaited).
    pub fn evaluate(&mut self, expression: &str) -> anyhow::Result<Value> {
        let result = self.command(
            "Runtime.evaluate",
            json!({"expression": expression, "returnByValue": true, "awaitPromise": true}),
        )?;
        if let Some(exception) = result.get("exceptionDetails") {
            bail!("{expression}: {exception}");
        }
        Ok(result["result"]["value"].clone())
    }

    /// Starts opening `url` (waits for nothing but the navigation).
    pub fn navigate(&mut self, url: &str) -> anyhow::Result<()> {
        self.command("Page.navigate", json!({"url": url}))?;
        Ok(())
    }

    /// Opens `url` and waits (30 s at most) until the page has loaded.
    pub fn open(&mut self, url: &str) -> anyhow::Result<()> {
        self.navigate(url)?;
        let deadline = Instant::now() + Duration::from_secs(30);
        while self.evaluate("document.readyState")? != "complete" {
            if Instant::now() > deadline {
                bail!("{url} did not load in 30 s");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }

    /// Waits until `expression` is true in the page; how long it took, or
    /// None after `timeout`.
    pub fn wait_true(
        &mut self,
        expression: &str,
        timeout: Duration,
    ) -> anyhow::Result<Option<Duration>> {
        let started = Instant::now();
        loop {
            if self.evaluate(expression)? == true {
                return Ok(Some(started.elapsed()));
            }
            if started.elapsed() > timeout {
                return Ok(None);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The page as a PNG.
    pub fn screenshot(&mut self) -> anyhow::Result<Vec<u8>> {
        let shot = self.command("Page.captureScreenshot", json!({"format": "png"}))?;
        base64_decode(shot["data"].as_str().context("a screenshot without data")?)
            .context("a screenshot that is not base64")
    }

    /// The chromium process's id (for its CPU and memory).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Its processes: chromium's own and every descendant (zygotes,
    /// renderers, the GPU and network services).
    pub fn processes(&self) -> Vec<u32> {
        process_tree(self.pid())
    }

    /// User + system CPU seconds of all its processes so far.
    pub fn cpu_seconds(&self) -> f64 {
        self.processes()
            .into_iter()
            .filter_map(crate::proc_stats::sample)
            .map(|s| s.cpu_seconds)
            .sum()
    }

    /// Its processes' threads by scheduling policy: those under the idle
    /// policy (`SCHED_IDLE`) and the others.
    pub fn thread_policies(&self) -> ThreadPolicies {
        let mut policies = ThreadPolicies::default();
        for pid in self.processes() {
            let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
                continue;
            };
            for task in tasks.flatten() {
                let Some(policy) = std::fs::read_to_string(task.path().join("stat"))
                    .ok()
                    .and_then(|stat| stat_field(&stat, 41))
                else {
                    continue;
                };
                if policy == SCHED_IDLE {
                    policies.idle += 1;
                } else {
                    policies.other += 1;
                }
            }
        }
        policies
    }
}

/// `SCHED_IDLE` in a thread's `/proc/.../stat` (field 41, its policy).
const SCHED_IDLE: u64 = 5;

/// Threads counted by scheduling policy.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ThreadPolicies {
    pub idle: usize,
    pub other: usize,
}

/// Field `n` (1-based, as `man 5 proc` numbers them) of a `/proc/.../stat`
/// line, as a number; the command name (field 2, in parentheses) may hold
/// spaces.
fn stat_field(stat: &str, n: usize) -> Option<u64> {
    let after_name = stat.rsplit_once(')')?.1;
    after_name
        .split_whitespace()
        .nth(n.checked_sub(3)?)?
        .parse()
        .ok()
}

/// `root` and every process descending from it.
pub fn process_tree(root: u32) -> Vec<u32> {
    let mut children: std::collections::HashMap<u32, Vec<u32>> = Default::default();
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for entry in entries.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            let parent = std::fs::read_to_string(entry.path().join("stat"))
                .ok()
                .and_then(|stat| stat_field(&stat, 4));
            if let Some(parent) = parent.and_then(|p| u32::try_from(p).ok()) {
                children.entry(parent).or_default().push(pid);
            }
        }
    }
    let mut tree = vec![root];
    let mut next = 0;
    while let Some(pid) = tree.get(next).copied() {
        tree.extend(children.get(&pid).into_iter().flatten());
        next += 1;
    }
    tree
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Standard base64 (padding optional); None on a character outside it.
pub fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let value = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let bytes: Vec<u8> = text.bytes().filter(|b| *b != b'=').collect();
    let mut out = Vec::with_capacity(bytes.len() * 3 / 4);
    for group in bytes.chunks(4) {
        let mut word = 0u32;
        for (i, b) in group.iter().enumerate() {
            word |= value(*b)? << (18 - 6 * i);
        }
        let produced = group.len().saturating_sub(1);
        out.extend_from_slice(&word.to_be_bytes()[1..1 + produced]);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_count_past_a_name_with_spaces() {
        let stat = "42 (a (b) c) S 7 42 42 0 -1 4194560 1 2 3 4 150 25";
        assert_eq!(stat_field(stat, 1), None, "the pid is before the name");
        assert_eq!(stat_field(stat, 4), Some(7));
        assert_eq!(stat_field(stat, 14), Some(150));
        assert_eq!(stat_field(stat, 15), Some(25));
        assert_eq!(stat_field(stat, 41), None);
    }

    #[test]
    fn a_process_tree_holds_its_children() {
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .expect("sleep");
        let tree = process_tree(std::process::id());
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(tree.first(), Some(&std::process::id()));
        assert!(tree.contains(&child.id()), "{tree:?}");
    }

    #[test]
    fn base64_decodes() {
        assert_eq!(base64_decode("aGVsbG8="), Some(b"hello".to_vec()));
        assert_eq!(base64_decode("aGk="), Some(b"hi".to_vec()));
        assert_eq!(base64_decode("YWJj"), Some(b"abc".to_vec()));
        assert_eq!(base64_decode("a*=="), None);
    }
}
