//! What the server's tests share: builds the fixture modules once per run
//! into a shared build dir, lays out temporary module paths with copies of
//! them, starts a module host in-process or the real server binary (through
//! `buildat-harness`'s driver), and captures logs. The wire client is
//! `buildat_harness::raw_client::RawClient`.
#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use buildat_format::Packet;
use buildat_harness::raw_client::RawClient;
use buildat_interface::meta::ModuleMeta;
use buildat_main_api::{Join, Ping, Pong, Spawn};
use buildat_server::builder::Builder;
use buildat_server::config::{ModuleProfile, ServerConfig};
use buildat_server::core::Core;

pub use buildat_harness::layout::repo_root;

pub use buildat_harness::layout::test_build_dir as build_dir;

pub fn loader_source() -> PathBuf {
    repo_root().join("modules").join("__loader")
}

pub fn fixture(name: &str) -> PathBuf {
    repo_root().join("tests").join("modules").join(name)
}

/// Builds the in-tree module at `dir` unless its artifact is fresh.
pub fn prebuild(dir: &Path) {
    let name = dir
        .file_name()
        .expect("named")
        .to_string_lossy()
        .into_owned();
    let meta = ModuleMeta::read(dir).expect("fixture meta.json").meta;
    Builder::new(build_dir(), ModuleProfile::Dev)
        .build(&name, dir, &meta)
        .unwrap_or_else(|e| panic!("building fixture {name}: {e}"));
}

/// Builds `__loader` and the `probe` fixture once per test process.
pub fn prebuild_common() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        prebuild(&loader_source());
        prebuild(&fixture("probe"));
    });
}

pub fn copy_dir(from: &Path, to: &Path) {
    buildat_harness::layout::copy_dir(from, to).expect("copy a module folder");
}

/// A temporary module path and world.
pub struct Scratch {
    pub dir: tempfile::TempDir,
}

impl Scratch {
    /// A module path holding a copy of `__loader`.
    pub fn new() -> Self {
        prebuild_common();
        let scratch = Self {
            dir: tempfile::tempdir().expect("temp dir"),
        };
        buildat_harness::layout::write_module_workspace(&scratch.modules())
            .expect("a workspace for the module copies");
        copy_dir(&loader_source(), &scratch.modules().join("__loader"));
        scratch
    }

    pub fn modules(&self) -> PathBuf {
        self.dir.path().join("modules")
    }

    pub fn world(&self) -> PathBuf {
        self.dir.path().join("world")
    }

    /// Adds copies of `network` and the `net_probe` fixture.
    pub fn add_network(&self) {
        static ONCE: OnceLock<()> = OnceLock::new();
        ONCE.get_or_init(|| {
            prebuild(&repo_root().join("modules").join("network"));
            prebuild(&fixture("net_probe"));
        });
        copy_dir(
            &repo_root().join("modules").join("network"),
            &self.modules().join("network"),
        );
        self.add_fixture("net_probe", "net_probe");
    }

    /// Adds copies of `network`, `net_probe` and `client_file`.
    pub fn add_client_file(&self) {
        static ONCE: OnceLock<()> = OnceLock::new();
        ONCE.get_or_init(|| prebuild(&repo_root().join("modules").join("client_file")));
        self.add_network();
        copy_dir(
            &repo_root().join("modules").join("client_file"),
            &self.modules().join("client_file"),
        );
    }

    /// Adds copies of `voxelworld` and `worldgen` (and the `world_probe`
    /// fixture when `probe`).
    pub fn add_world(&self, probe: bool) {
        static ONCE: OnceLock<()> = OnceLock::new();
        ONCE.get_or_init(|| {
            prebuild(&repo_root().join("modules").join("voxelworld"));
            prebuild(&repo_root().join("modules").join("worldgen"));
            prebuild(&fixture("world_probe"));
        });
        for module in ["voxelworld", "worldgen"] {
            copy_dir(
                &repo_root().join("modules").join(module),
                &self.modules().join(module),
            );
        }
        if probe {
            self.add_fixture("world_probe", "world_probe");
        }
    }

    /// Adds everything the default game needs: network, client_file,
    /// voxelworld, worldgen, replicate and main.
    pub fn add_game(&self) {
        static ONCE: OnceLock<()> = OnceLock::new();
        ONCE.get_or_init(|| {
            prebuild(&repo_root().join("modules").join("main"));
            prebuild(&repo_root().join("modules").join("replicate"));
        });
        self.add_client_file();
        self.add_world(false);
        for module in ["main", "replicate"] {
            copy_dir(
                &repo_root().join("modules").join(module),
                &self.modules().join(module),
            );
        }
    }

    /// Adds the default game ([`Scratch::add_game`]) with its survival
    /// modules: items, crafting, inventory and survival.
    pub fn add_survival_game(&self) {
        const SURVIVAL: [&str; 4] = ["items", "crafting", "inventory", "survival"];
        static ONCE: OnceLock<()> = OnceLock::new();
        ONCE.get_or_init(|| {
            for module in SURVIVAL {
                prebuild(&repo_root().join("modules").join(module));
            }
        });
        self.add_game();
        for module in SURVIVAL {
            copy_dir(
                &repo_root().join("modules").join(module),
                &self.modules().join(module),
            );
        }
    }

    /// Adds copies of the in-tree `modules/<name>` folders named (built
    /// once per test process each): what a test of a new module adds on
    /// top of [`Scratch::add_game`].
    pub fn add_modules(&self, names: &[&str]) {
        static BUILT: Mutex<Vec<String>> = Mutex::new(Vec::new());
        for name in names {
            let dir = repo_root().join("modules").join(name);
            {
                let mut built = BUILT.lock().expect("not poisoned");
                if !built.iter().any(|b| b == name) {
                    prebuild(&dir);
                    built.push(name.to_string());
                }
            }
            copy_dir(&dir, &self.modules().join(name));
        }
    }

    /// The survival game ([`Scratch::add_survival_game`]) with the living
    /// world's modules: active voxels, liquids, health and the time of day.
    pub fn add_living_world(&self) {
        self.add_survival_game();
        self.add_modules(&["active", "liquid", "health", "daytime"]);
    }

    /// Adds a copy of the `creatures` module (and what it needs: voxelworld
    /// and worldgen).
    pub fn add_creatures(&self) {
        static ONCE: OnceLock<()> = OnceLock::new();
        ONCE.get_or_init(|| prebuild(&repo_root().join("modules").join("creatures")));
        self.add_world(false);
        copy_dir(
            &repo_root().join("modules").join("creatures"),
            &self.modules().join("creatures"),
        );
    }

    /// Adds a copy of the `web` module (what it needs: the game, added by
    /// [`Self::add_game`]).
    pub fn add_web(&self) {
        static ONCE: OnceLock<()> = OnceLock::new();
        ONCE.get_or_init(|| prebuild(&repo_root().join("modules").join("web")));
        copy_dir(
            &repo_root().join("modules").join("web"),
            &self.modules().join("web"),
        );
    }

    /// Adds a copy of the `probe` fixture named `name`; returns its folder.
    pub fn add_probe(&self, name: &str) -> PathBuf {
        self.add_fixture("probe", name)
    }

    pub fn add_fixture(&self, fixture_name: &str, name: &str) -> PathBuf {
        let to = self.modules().join(name);
        copy_dir(&fixture(fixture_name), &to);
        to
    }

    /// A copy of `probe` that builds on its own, as a workspace of its own
    /// (for tests that edit its source).
    pub fn add_editable_probe(&self, name: &str) -> PathBuf {
        let dir = self.add_probe(name);
        buildat_harness::layout::make_standalone(&dir).expect("a standalone probe");
        dir
    }

    /// Adds a module folder with only a meta.json.
    pub fn add_meta_only(&self, name: &str, meta_json: &str) -> PathBuf {
        let dir = self.modules().join(name);
        std::fs::create_dir_all(&dir).expect("module dir");
        std::fs::write(dir.join("meta.json"), meta_json).expect("meta.json");
        dir
    }

    pub fn config(&self) -> ServerConfig {
        let mut config = ServerConfig::new(self.world(), vec![self.modules()], build_dir());
        config.module_profile = ModuleProfile::Dev;
        config.call_timeout = Duration::from_secs(20);
        config.stop_timeout = Duration::from_secs(10);
        config
    }

    /// An in-process module host over this module path.
    pub fn core(&self, settings: &[(&str, &str)]) -> Core {
        self.core_with(|config| {
            for (key, value) in settings {
                config.extra.insert(key.to_string(), value.to_string());
            }
        })
    }

    pub fn core_with(&self, adjust: impl FnOnce(&mut ServerConfig)) -> Core {
        capture_logs();
        let mut config = self.config();
        adjust(&mut config);
        Core::new(config).expect("core")
    }

    /// Arguments for the server binary over this module path.
    pub fn server_args(&self) -> Vec<String> {
        vec![
            "--world".into(),
            self.world().display().to_string(),
            "--no-default-modules".into(),
            "--modules".into(),
            self.modules().display().to_string(),
            "--build-dir".into(),
            build_dir().display().to_string(),
            "--module-profile".into(),
            "dev".into(),
        ]
    }
}

/// Everything logged in this test process (all tests share it: search for
/// strings unique to your test, such as its module names).
static LOGS: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();

#[derive(Clone)]
struct LogWriter(Arc<Mutex<Vec<u8>>>);

impl Write for LogWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

pub fn capture_logs() {
    LOGS.get_or_init(|| {
        let buffer = Arc::new(Mutex::new(Vec::new()));
        let writer = LogWriter(buffer.clone());
        let _ = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .with_env_filter("info")
            .try_init();
        buffer
    });
}

pub fn logs() -> String {
    LOGS.get()
        .map(|b| String::from_utf8_lossy(&b.lock().unwrap_or_else(|e| e.into_inner())).into_owned())
        .unwrap_or_default()
}

/// Polls `f` until it returns `Some` or `timeout` passes.
pub fn wait_until<T>(timeout: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(value) = f() {
            return Some(value);
        }
        if Instant::now() > deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub use buildat_harness::server::Server;

/// The real server over this scratch's module path with `settings`
/// (`KEY=VALUE`), listening on a free loopback port, its console piped;
/// waits until it has started. Its address.
pub fn start_game(scratch: &Scratch, settings: &[&str]) -> (Server, String) {
    let mut args = scratch.server_args();
    for setting in settings {
        args.extend(["--set".to_string(), setting.to_string()]);
    }
    args.extend(["--listen", "127.0.0.1:0", "--no-watch"].map(String::from));
    let mut server = start_server(&args, Stdio::piped());
    let address = server.listen_address();
    server.expect_line("server started", Duration::from_secs(120));
    (server, address)
}

/// The real server binary with `args` (its output collected line by line;
/// killed on drop).
pub fn start_server(args: &[String], stdin: Stdio) -> Server {
    Server::spawn(env!("CARGO_BIN_EXE_buildat-server"), args, stdin).expect("start buildat-server")
}

/// A player joined to the game at `address` (its spawn received).
pub fn join(address: &str, name: &str) -> RawClient {
    let mut client = RawClient::connect(address).expect("connect");
    client
        .send_packet(&Join {
            name: name.to_string(),
        })
        .expect("join");
    loop {
        let packet = client
            .recv(Duration::from_secs(60))
            .expect("connected")
            .expect("spawned within 60 s");
        if packet.name == Spawn::NAME {
            return client;
        }
    }
}

/// Pings until the pong comes back: the connection is alive and served.
pub fn ping(client: &mut RawClient, data: &[u8]) {
    client
        .send_packet(&Ping {
            data: data.to_vec(),
        })
        .expect("the connection is open");
    loop {
        let packet = client
            .recv(Duration::from_secs(30))
            .expect("still connected")
            .expect("a pong within 30 s");
        if packet.name == Pong::NAME {
            assert_eq!(Pong::decode(&packet.data).expect("pong").data, data);
            return;
        }
    }
}

/// The game with a view radius of one chunk (unless `settings` set one):
/// what the account and TLS tests need, quick to stream.
pub fn start_small_game(scratch: &Scratch, settings: &[&str]) -> (Server, String) {
    let mut all = settings.to_vec();
    if !settings
        .iter()
        .any(|s| s.starts_with("voxelworld.view_radius="))
    {
        all.push("voxelworld.view_radius=1");
    }
    start_game(scratch, &all)
}

/// The real client, built beside the server (`cargo test --workspace`
/// builds it; `cargo build -p buildat-client` alone does too).
pub fn client_binary() -> PathBuf {
    let path = Path::new(env!("CARGO_BIN_EXE_buildat-server")).with_file_name("buildat-client");
    assert!(
        path.is_file(),
        "{} is missing: cargo build -p buildat-client",
        path.display()
    );
    path
}

/// Every line a child writes (stdout and stderr), as they come.
pub fn lines_of(child: &mut std::process::Child) -> std::sync::mpsc::Receiver<String> {
    use std::io::BufRead;
    let (send, lines) = std::sync::mpsc::channel();
    let out = child.stdout.take().expect("piped stdout");
    let err = child.stderr.take().expect("piped stderr");
    let to = send.clone();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            let _ = to.send(line);
        }
    });
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(err).lines().map_while(Result::ok) {
            let _ = send.send(line);
        }
    });
    lines
}

/// A finished process's stderr then stdout.
pub fn output_text(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned() + &String::from_utf8_lossy(&output.stdout)
}

/// `buildat-server WORDS... --world DIR ...` headless, to its exit: the
/// exit status and the output.
pub fn run_headless(scratch: &Scratch, words: &[String]) -> (Option<i32>, String) {
    let mut args = words.to_vec();
    args.extend(scratch.server_args());
    let mut server = start_server(&args, Stdio::null());
    let status = server.wait_exit(Duration::from_secs(300));
    (status, server.output())
}

/// Sends a console line and waits for a line holding `answer`.
pub fn console(server: &mut buildat_harness::server::Server, line: &str, answer: &str) -> String {
    server.pump();
    let from = server.seen.len();
    server.send(line);
    server
        .wait_for_from(from, answer, Duration::from_secs(60))
        .unwrap_or_else(|| panic!("'{line}' answers '{answer}':\n{}", server.output()))
}

/// `args` with the value after `--world` replaced by `world`.
pub fn with_world(mut args: Vec<String>, world: &std::path::Path) -> Vec<String> {
    let at = args.iter().position(|a| a == "--world").expect("--world");
    args[at + 1] = world.display().to_string();
    args
}

/// `buildat-server ARGS...` to its exit (status 0), its output.
pub fn run_headless_args(args: &[String]) -> String {
    let mut server = start_server(args, Stdio::null());
    let status = server.wait_exit(Duration::from_secs(60));
    assert_eq!(status, Some(0), "{}", server.output());
    server.output()
}
