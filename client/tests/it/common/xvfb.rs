//! A virtual X display for the window tests: `Xvfb` on a free display
//! (killed on drop), and `xdotool` against it (keys, typing, the mouse,
//! finding the client's window). `available` says whether both programs
//! are installed (the tests fail without them on CI, `CI` set, and are
//! skipped elsewhere, saying so). And the window client on it: its
//! command, and the places of its screens' grids and widgets as it logs
//! them at -v, where the mouse clicks and drags; and what the display
//! shows (Xvfb's framebuffer, an XWD file).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::Server;
use super::game::{CLIENT, SERIAL, Setup};

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
    /// Where Xvfb keeps its framebuffer (`Xvfb_screen0`).
    framebuffer: tempfile::TempDir,
}

impl Xvfb {
    pub fn start() -> Self {
        use std::io::Read;
        let framebuffer = tempfile::tempdir().expect("a framebuffer dir");
        let mut child = Command::new("Xvfb")
            .args([
                "-displayfd",
                "1",
                "-screen",
                "0",
                "1024x768x24",
                "-nolisten",
                "tcp",
                "-fbdir",
            ])
            .arg(framebuffer.path())
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
            framebuffer,
        }
    }

    /// The screen as it is shown: width, height and RGB pixels, row by
    /// row, read from Xvfb's framebuffer (an XWD file of 32-bit pixels).
    pub fn screen(&self) -> (usize, usize, Vec<[u8; 3]>) {
        let bytes = std::fs::read(self.framebuffer.path().join("Xvfb_screen0"))
            .expect("Xvfb's framebuffer");
        let field = |i: usize| {
            let at = i * 4;
            u32::from_be_bytes(bytes[at..at + 4].try_into().expect("4 bytes")) as usize
        };
        // XWD's header: its size (0), byte order (7), bits per pixel (11),
        // bytes per line (12), colours (19), width and height (4, 5).
        let (header, width, height) = (field(0), field(4), field(5));
        let (lsb_first, bits, line, colours) = (field(7) == 0, field(11), field(12), field(19));
        assert_eq!(bits, 32, "32-bit pixels");
        let start = header + colours * 12;
        let mut pixels = Vec::with_capacity(width * height);
        for y in 0..height {
            for x in 0..width {
                let p = &bytes[start + y * line + x * 4..][..4];
                pixels.push(if lsb_first {
                    [p[2], p[1], p[0]]
                } else {
                    [p[1], p[2], p[3]]
                });
            }
        }
        (width, height, pixels)
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

impl Xvfb {
    /// A window client of `setup` (640×480) on this display, connecting
    /// to `address`, with `args` added.
    pub fn client(&self, setup: &Setup, address: &str, args: &[&str]) -> Command {
        let mut command = Command::new(CLIENT);
        command
            .args(["--connect", address, "--cache"])
            .arg(setup.cache())
            .args(["--window", "--size", "640x480"])
            .args(args)
            .env("DISPLAY", &self.display);
        command
    }

    /// Moves the mouse to a pixel of `window` and clicks the left button.
    pub fn click_at(&self, window: &str, (x, y): &(String, String)) {
        self.xdotool(&["mousemove", "--window", window, x, y]);
        std::thread::sleep(Duration::from_millis(300));
        self.xdotool(&["click", "1"]);
    }
}

/// This test's turn (one game at a time): held until the test ends.
pub type Turn = std::sync::MutexGuard<'static, ()>;

/// What a window test runs against, once it is its turn: the game `setup`
/// makes, its server and address, and a display; `None` (the test
/// returns) where Xvfb or xdotool is missing. Bound in this order, they
/// are dropped in the reverse: the display first, the turn last.
pub fn window_game(setup: impl FnOnce() -> Setup) -> Option<(Turn, Setup, Server, String, Xvfb)> {
    if !available() {
        return None;
    }
    let turn = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let setup = setup();
    let (server, address) = setup.start(&[]);
    Some((turn, setup, server, address, Xvfb::start()))
}

/// A slots grid's layout as the window logs it at -v:
/// `ui: screen SCREEN grid GRID at X,Y cell C` (window pixels).
pub fn grid_layout(line: &str) -> (f64, f64, f64) {
    let rest = line.split(" at ").nth(1).expect("at X,Y");
    let mut words = rest.split_whitespace();
    let xy = words.next().expect("X,Y");
    let (x, y) = xy.split_once(',').expect("X,Y");
    assert_eq!(words.next(), Some("cell"), "{line}");
    let cell = words.next().expect("cell size");
    (
        x.parse().expect("x"),
        y.parse().expect("y"),
        cell.parse().expect("cell"),
    )
}

/// The window pixel (as xdotool's arguments) of the centre of the slot at
/// `column`, `row` of a grid laid out at `(x, y, cell)`.
pub fn slot_centre((x, y, cell): (f64, f64, f64), column: f64, row: f64) -> (String, String) {
    (
        format!("{}", (x + (column + 0.5) * cell).round()),
        format!("{}", (y + (row + 0.5) * cell).round()),
    )
}

/// The centre (as xdotool's arguments) of a button or field as the window
/// logs it at -v: `ui: screen SCREEN button|field ID at X,Y size W,H`.
pub fn widget_centre(line: &str) -> (String, String) {
    let rest = line.split(" at ").nth(1).expect("at X,Y");
    let mut words = rest.split_whitespace();
    let (x, y) = words.next().expect("X,Y").split_once(',').expect("X,Y");
    assert_eq!(words.next(), Some("size"), "{line}");
    let (w, h) = words.next().expect("W,H").split_once(',').expect("W,H");
    let number = |s: &str| s.parse::<f64>().expect("a number");
    (
        format!("{}", (number(x) + number(w) / 2.0).round()),
        format!("{}", (number(y) + number(h) / 2.0).round()),
    )
}

impl Drop for Xvfb {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
