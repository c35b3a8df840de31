//! A virtual X display for the window tests: `Xvfb` on a free display
//! (killed on drop), and `xdotool` against it (keys, typing, the mouse,
//! finding the client's window). `available` says whether both programs
//! are installed (the tests fail without them on CI, `CI` set, and are
//! skipped elsewhere, saying so).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Whether `program` runs (`program -version` or `--version`).
pub fn installed(program: &str) -> bool {
    ["-version", "--version"].iter().any(|flag| {
        Command::new(program)
            .arg(flag)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok()
    })
}

/// Whether Xvfb and xdotool are installed; when not, panics on CI and
/// else prints why the test is skipped and returns false.
pub fn available() -> bool {
    let missing: Vec<&str> = ["Xvfb", "xdotool"]
        .into_iter()
        .filter(|p| !installed(p))
        .collect();
    if missing.is_empty() {
        return true;
    }
    let message = format!(
        "{missing:?} not installed: the window tests need them (Debian: apt-get install xvfb \
         xdotool; .ci/run installs them)"
    );
    assert!(std::env::var_os("CI").is_none(), "{message}");
    eprintln!("skipped: {message}");
    false
}

/// An Xvfb server on a free display, killed on drop.
pub struct Xvfb {
    child: std::process::Child,
    pub display: String,
}

impl Xvfb {
    pub fn start() -> Self {
        use std::io::Read;
        let mut child = Command::new("Xvfb")
            .args([
                "-displayfd",
                "1",
                "-screen",
                "0",
                "1024x768x24",
                "-nolisten",
                "tcp",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start Xvfb");
        let mut stdout = child.stdout.take().expect("Xvfb stdout");
        let mut number = String::new();
        let mut byte = [0u8; 1];
        while stdout.read(&mut byte).unwrap_or(0) == 1 && byte[0] != b'\n' {
            number.push(char::from(byte[0]));
        }
        assert!(!number.trim().is_empty(), "Xvfb did not report its display");
        Self {
            child,
            display: format!(":{}", number.trim()),
        }
    }

    /// Runs xdotool on this display; panics when it fails.
    pub fn xdotool(&self, args: &[&str]) {
        let status = Command::new("xdotool")
            .args(args)
            .env("DISPLAY", &self.display)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("run xdotool");
        assert!(status.success(), "xdotool {args:?} failed");
    }

    /// The id of the first window whose name contains `name`, waiting for
    /// it at most `timeout`.
    pub fn window(&self, name: &str, timeout: Duration) -> Option<String> {
        let deadline = Instant::now() + timeout;
        loop {
            let out = Command::new("xdotool")
                .args(["search", "--name", name])
                .env("DISPLAY", &self.display)
                .stderr(Stdio::null())
                .output()
                .expect("run xdotool");
            let text = String::from_utf8_lossy(&out.stdout);
            if let Some(id) = text.split_whitespace().next() {
                return Some(id.to_string());
            }
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for Xvfb {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
