//! `buildat-client`: the command line, exit codes, the closing summary and
//! maps, `--bots N` (N sessions on N threads, each with its own Lua
//! runtime and world view), and choosing the frontend: a window (the
//! default with a display and nothing asking for a headless run), an
//! offscreen screenshot (`--screenshot`), or none. Everything else is in
//! the library (`buildat_client`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use buildat_client::app::{self, AppError, Config, Outcome, Summary};
use buildat_client::frontend;
use buildat_client::render::camera::Camera;
use buildat_client::render::{offscreen, window};
use buildat_client::sandbox::{self, Level};
use buildat_client::settings::ClientSettings;
use buildat_client::terminal::escape;
use buildat_client::tls as app_tls;
use buildat_client::world;
use clap::Parser;

const EXIT_OK: u8 = 0;
const EXIT_OTHER: u8 = 1;
const EXIT_USAGE: u8 = 2;
const EXIT_UNREACHABLE: u8 = 3;
const EXIT_PROTOCOL: u8 = 4;
const EXIT_DISCONNECTED: u8 = 5;
const EXIT_KEY_CHANGED: u8 = 6;

#[derive(Parser)]
#[command(
    name = "buildat-client",
    version,
    about = "Buildat's headless client and bot: downloads the server's client files \
             (cached by content hash) and runs their Lua sandboxed",
    after_help = "Exit codes:
  0  normal end: --quit-after elapsed or a script called buildat.disconnect()
  1  other failure (cache folder not writable, Lua runtime could not start)
  2  usage error (bad arguments, unreadable --script file)
  3  the server could not be reached (refused, unreachable, unknown host)
  4  protocol error (malformed packet, file content not matching its hash)
  5  disconnected by the server (its reason is printed) or connection lost
  6  the server's key is not the one pinned (see --accept-new-key)

With --bots N the exit code is the highest of the sessions' codes.

A password never crosses the network in plaintext: any address but
loopback speaks TLS (HOST:PORT as well as tls://HOST:PORT) and the login
is sent only after the handshake and the key pin check; plaintext to such
an address needs --insecure-plaintext and is refused with a password.

At exit a summary goes to stderr (with --bots, each line starts with the
session's name instead of buildat-client):
  files: N announced, M requested, B bytes received; scripts: S run, E Lua errors
  world: held N chunks, received M chunk packets (U updates), first chunk (x,y,z)
  session ended, exit code C"
)]
struct Cli {
    /// Server address, HOST:PORT or tls://HOST:PORT. Any address but
    /// loopback speaks TLS either way, its key pinned; loopback speaks
    /// plaintext unless tls:// or --tls.
    #[arg(long, value_name = "HOST:PORT")]
    connect: String,
    /// Speak TLS even to a loopback address (its key is not pinned). Any
    /// other address speaks TLS without it: the first connection keeps the
    /// key's fingerprint in the known-hosts file, later ones refuse
    /// another key. There is never a fallback to plaintext.
    #[arg(long, conflicts_with = "insecure_plaintext")]
    tls: bool,
    /// Speak plaintext to an address that is not loopback, where anyone on
    /// the path reads and can change what is said. Refused with a password.
    #[arg(long)]
    insecure_plaintext: bool,
    /// The known-hosts file of pinned server keys (default:
    /// $BUILDAT_KNOWN_HOSTS, else $XDG_CONFIG_HOME/buildat/known_hosts or
    /// ~/.config/buildat/known_hosts).
    #[arg(long, value_name = "FILE")]
    known_hosts: Option<PathBuf>,
    /// Accept a server key that differs from the one pinned, and pin it
    /// instead (only when you know the server changed its certificate).
    #[arg(long)]
    accept_new_key: bool,
    /// Cache folder (default: $XDG_CACHE_HOME/buildat or ~/.cache/buildat).
    #[arg(long, value_name = "DIR")]
    cache: Option<PathBuf>,
    /// Keep the cache under this many MiB, dropping the files used longest
    /// ago (never those of this session); 0: no limit.
    #[arg(long, value_name = "MIB", default_value_t = buildat_client::cache::DEFAULT_MAX_CACHE_BYTES >> 20)]
    cache_max_mib: u64,
    /// Bot mode: a trusted local Lua file run once every file is present,
    /// with the buildat API plus set_timeout / set_interval / clear_timer.
    #[arg(long, value_name = "FILE.lua")]
    script: Option<PathBuf>,
    /// This client's name (buildat.client_name in Lua); default
    /// buildat-client, or bot with --bots.
    #[arg(long)]
    name: Option<String>,
    /// Log in to the account --name with the password in FILE (its first
    /// line); the first login claims the name. BUILDAT_PASSWORD does the
    /// same. With --bots each bot logs in to its own account NAME-i.
    #[arg(long, value_name = "FILE")]
    password_file: Option<PathBuf>,
    /// Run N sessions in this process (one thread each, each with its own
    /// Lua runtime and world view), named NAME-1 .. NAME-N.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=10_000))]
    bots: Option<u32>,
    /// At exit, print a top-down ASCII map of the held world around the
    /// focus (the player) to stdout.
    #[arg(long)]
    ascii_map: bool,
    /// At exit, write the same slice as a PNG, one pixel per voxel column
    /// (with --bots: FILE-NAME-i.png per session).
    #[arg(long, value_name = "FILE.png")]
    map: Option<PathBuf>,
    /// Half-width of the maps in voxels.
    #[arg(long, default_value_t = world::DEFAULT_MAP_RADIUS, value_name = "VOXELS",
          value_parser = clap::value_parser!(i32).range(0..=i64::from(world::MAX_MAP_RADIUS)))]
    map_radius: i32,
    /// Disconnect and exit 0 after this many seconds.
    #[arg(long, value_name = "SECONDS")]
    quit_after: Option<f64>,
    /// Memory limit of the Lua VM, in MiB.
    #[arg(long, default_value_t = 256, value_name = "MIB")]
    lua_memory_mb: usize,
    /// Time limit of one call into Lua (a script run, a packet handler, a
    /// timer), in milliseconds.
    #[arg(long, default_value_t = 1000, value_name = "MS")]
    lua_time_ms: u64,
    /// Render one frame offscreen (no window or display needed) once the
    /// view radius has arrived (or --quit-after runs out), write it here as
    /// a PNG, and exit.
    #[arg(long, value_name = "FILE.png", conflicts_with_all = ["bots", "window"])]
    screenshot: Option<PathBuf>,
    /// Size of the screenshot or the window, in pixels.
    #[arg(long, value_name = "WxH", default_value = "1280x720", value_parser = parse_size)]
    size: (u32, u32),
    /// The screenshot's camera: eye position, yaw and pitch in degrees (yaw
    /// 0 looks along +x, 90 along +z); default: the player's eyes at spawn,
    /// looking at the horizon along +x.
    #[arg(long, value_name = "X,Y,Z,YAW,PITCH", value_parser = parse_camera, allow_hyphen_values = true)]
    camera: Option<Camera>,
    /// Chunks drawn in full detail (leaves with holes, ambient occlusion,
    /// smooth light) around the eye; farther ones are drawn simpler, with
    /// far fewer triangles. Default: the settings file's `detail_radius`
    /// in a window, else 1.
    #[arg(long, value_name = "CHUNKS", value_parser = clap::value_parser!(u32).range(1..=32))]
    detail_radius: Option<u32>,
    /// Chunks farther than this are drawn at half resolution (2×2×2 voxels
    /// as one), and one chunk farther at a quarter (4×4×4). Default: the
    /// settings file's `coarse_radius` in a window, else 2.
    #[arg(long, value_name = "CHUNKS", value_parser = clap::value_parser!(u32).range(1..=32))]
    coarse_radius: Option<u32>,
    /// Draw the screenshot with the overlay (crosshair, text, hotbar).
    #[arg(long, requires = "screenshot")]
    overlay: bool,
    /// Open a window (the default when a display is set and no --script,
    /// --bots, --screenshot, --quit-after or map asks for a headless run).
    #[arg(long, conflicts_with_all = ["bots", "headless"])]
    window: bool,
    /// No window, even with a display.
    #[arg(long)]
    headless: bool,
    /// Play as a guest: the window asks for no name and password. Without
    /// a password (--password-file, BUILDAT_PASSWORD) the window otherwise
    /// asks first (not in a timed run: --quit-after).
    #[arg(long)]
    guest: bool,
    /// More output: -v shows verbose log lines, -vv debug ones.
    #[arg(short, long, action = clap::ArgAction::Count)]
    verbose: u8,
    /// Only errors and warnings.
    #[arg(short, long, conflicts_with = "verbose")]
    quiet: bool,
}

/// `WxH` → (W, H), each 1 to 8192.
fn parse_size(text: &str) -> Result<(u32, u32), String> {
    let (w, h) = text
        .split_once(['x', 'X'])
        .ok_or_else(|| format!("{text:?}: expected WIDTHxHEIGHT, e.g. 1280x720"))?;
    let side = |s: &str| {
        s.trim()
            .parse::<u32>()
            .ok()
            .filter(|v| (1..=8192).contains(v))
            .ok_or_else(|| format!("{text:?}: each side is 1 to 8192 pixels"))
    };
    Ok((side(w)?, side(h)?))
}

/// `X,Y,Z,YAW,PITCH` → a camera.
fn parse_camera(text: &str) -> Result<Camera, String> {
    let values: Vec<f32> = text
        .split(',')
        .map(|v| v.trim().parse::<f32>().map_err(|e| format!("{v:?}: {e}")))
        .collect::<Result<_, _>>()?;
    match values[..] {
        [x, y, z, yaw, pitch] if values.iter().all(|v| v.is_finite()) => Ok(Camera {
            eye: glam::Vec3::new(x, y, z),
            yaw,
            pitch: pitch.clamp(-89.9, 89.9),
            fov: buildat_client::render::camera::FOV_DEGREES,
        }),
        _ => Err(format!(
            "{text:?}: expected five finite numbers X,Y,Z,YAW,PITCH"
        )),
    }
}

/// Which frontend draws the session.
enum Frontend {
    None,
    /// The window, and where its login prompt's answer comes (the session
    /// waits for it before connecting).
    Window(
        window::WindowOptions,
        Option<crossbeam_channel::Receiver<window::LoginChoice>>,
    ),
    Screenshot(offscreen::ShotOptions),
}

/// The frontend the command line asks for.
fn frontend_from(cli: &Cli, settings: &Settings) -> Frontend {
    let deadline = settings.quit_after.map(|d| std::time::Instant::now() + d);
    if let Some(path) = &cli.screenshot {
        return Frontend::Screenshot(offscreen::ShotOptions {
            path: path.clone(),
            size: cli.size,
            camera: cli.camera,
            deadline,
            overlay: cli.overlay,
            detail_radius: cli
                .detail_radius
                .unwrap_or(buildat_client::settings::DEFAULT_DETAIL_RADIUS),
            coarse_radius: cli
                .coarse_radius
                .unwrap_or(buildat_client::settings::DEFAULT_COARSE_RADIUS),
        });
    }
    let display = ["DISPLAY", "WAYLAND_DISPLAY"]
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|d| !d.is_empty()));
    let headless_run = cli.headless
        || cli.script.is_some()
        || cli.bots.is_some()
        || cli.quit_after.is_some()
        || cli.ascii_map
        || cli.map.is_some();
    if cli.window || (display && !headless_run) {
        let settings_path = buildat_client::settings::default_path();
        let (mut user_settings, warning) = settings_path
            .as_deref()
            .map(ClientSettings::load)
            .unwrap_or_default();
        if let Some(radius) = cli.detail_radius {
            user_settings.detail_radius = radius;
        }
        if let Some(radius) = cli.coarse_radius {
            user_settings.coarse_radius = radius;
        }
        if let Some(warning) = warning {
            eprintln!("buildat-client: warning: {warning}");
        }
        // No password: the window asks for one (or a guest's name) first.
        let (login, answer) =
            if settings.password.is_none() && !cli.guest && cli.quit_after.is_none() {
                let (reply, answer) = crossbeam_channel::bounded(1);
                let request = window::LoginRequest {
                    server: cli.connect.clone(),
                    name: cli.name.clone().unwrap_or_default(),
                    reply,
                };
                (Some(request), Some(answer))
            } else {
                (None, None)
            };
        Frontend::Window(
            window::WindowOptions {
                size: cli.size,
                deadline,
                verbose: cli.verbose > 0,
                settings: user_settings,
                settings_path,
                login,
            },
            answer,
        )
    } else {
        Frontend::None
    }
}

/// (resident, peak resident) KiB of this process, from /proc (Linux).
fn process_memory_kib() -> Option<(u64, u64)> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))?
            .split_whitespace()
            .nth(1)?
            .parse::<u64>()
            .ok()
    };
    Some((field("VmRSS:")?, field("VmHWM:")?))
}

fn default_cache_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir).join("buildat"));
    }
    let home = std::env::var_os("HOME").filter(|d| !d.is_empty())?;
    Some(PathBuf::from(home).join(".cache").join("buildat"))
}

/// Everything a session needs but its name and log sink (which is not
/// `Send`): shared by the `--bots` threads.
#[derive(Clone)]
struct Settings {
    address: String,
    cache_dir: PathBuf,
    cache_max_bytes: u64,
    script: Option<(String, Vec<u8>)>,
    quit_after: Option<Duration>,
    memory_limit: usize,
    time_limit: Duration,
    ascii_map: bool,
    map_png: Option<PathBuf>,
    map_radius: i32,
    level: Level,
    /// The password each session logs in with (`--password-file`,
    /// `BUILDAT_PASSWORD`).
    password: Option<String>,
    /// `tls://` or `--tls`.
    force_tls: bool,
    insecure_plaintext: bool,
    /// The known-hosts file and `--accept-new-key` (`None`: no file could
    /// be named; a server that is not loopback is then refused).
    pins: Option<app_tls::TlsOptions>,
}

impl Settings {
    /// The session named `name`; `prefix` starts its log lines.
    fn config(&self, name: &str, prefix: &str, bots: bool) -> Config {
        let log = if prefix.is_empty() {
            sandbox::stderr_sink(self.level)
        } else {
            sandbox::prefixed_stderr_sink(self.level, prefix.to_string())
        };
        let mut config = Config::new(&self.address, self.cache_dir.clone(), name, log);
        config.cache_max_bytes = self.cache_max_bytes;
        config.script = self.script.clone();
        config.quit_after = self.quit_after;
        config.memory_limit = self.memory_limit;
        config.time_limit = self.time_limit;
        config.ascii_map = self.ascii_map;
        config.map_png = self.map_png.as_deref().map(|p| {
            if bots {
                per_session_path(p, name)
            } else {
                p.to_path_buf()
            }
        });
        config.map_radius = self.map_radius;
        config.password = self.password.clone();
        config.force_tls = self.force_tls;
        config.insecure_plaintext = self.insecure_plaintext;
        config.pins = self.pins.clone();
        config
    }
}

/// `dir/map.png` → `dir/map-NAME.png`.
fn per_session_path(path: &Path, name: &str) -> PathBuf {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let file = match path.extension() {
        Some(ext) => format!("{stem}-{name}.{}", ext.to_string_lossy()),
        None => format!("{stem}-{name}"),
    };
    path.with_file_name(file)
}

/// Settings from the command line, or a usage error.
fn settings_from(cli: &Cli, level: Level) -> anyhow::Result<Settings> {
    let cache_dir = match &cli.cache {
        Some(dir) => dir.clone(),
        None => default_cache_dir()
            .context("no cache folder: set XDG_CACHE_HOME or HOME, or pass --cache DIR")?,
    };
    let script = match &cli.script {
        Some(path) => {
            let source = std::fs::read(path)
                .with_context(|| format!("cannot read --script {}", path.display()))?;
            Some((path.display().to_string(), source))
        }
        None => None,
    };
    let quit_after = match cli.quit_after {
        Some(s) if s.is_finite() && s >= 0.0 => Some(Duration::from_secs_f64(s.min(1e9))),
        Some(s) => anyhow::bail!("--quit-after {s}: expected a number of seconds >= 0"),
        None => None,
    };
    if cli.lua_memory_mb == 0 || cli.lua_time_ms == 0 {
        anyhow::bail!("--lua-memory-mb and --lua-time-ms must be above 0");
    }
    if let Some(name) = &cli.name
        && name.is_empty()
    {
        anyhow::bail!("--name must not be empty");
    }
    let password = match &cli.password_file {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read --password-file {}", path.display()))?;
            Some(text.lines().next().unwrap_or_default().to_string())
        }
        None => std::env::var("BUILDAT_PASSWORD").ok(),
    };
    if password.as_deref().is_some_and(str::is_empty) {
        anyhow::bail!("the password (--password-file or BUILDAT_PASSWORD) is empty");
    }
    let (address, force_tls) = buildat_client::transport::split_scheme(&cli.connect);
    let force_tls = force_tls || cli.tls;
    // Refused before connecting: a password never goes out in plaintext
    // off loopback.
    buildat_client::transport::Security {
        force_tls,
        insecure_plaintext: cli.insecure_plaintext,
        has_password: password.is_some(),
    }
    .check()?;
    if cli.insecure_plaintext && cli.accept_new_key {
        anyhow::bail!("--accept-new-key goes with TLS, not --insecure-plaintext");
    }
    let pins = cli
        .known_hosts
        .clone()
        .or_else(buildat_client::known_hosts::default_path)
        .map(|known_hosts| app_tls::TlsOptions {
            known_hosts,
            accept_new_key: cli.accept_new_key,
        });
    Ok(Settings {
        password,
        force_tls,
        insecure_plaintext: cli.insecure_plaintext,
        pins,
        address: address.to_string(),
        cache_dir,
        cache_max_bytes: cli.cache_max_mib.saturating_mul(1 << 20),
        script,
        quit_after,
        memory_limit: cli.lua_memory_mb.saturating_mul(1 << 20),
        time_limit: Duration::from_millis(cli.lua_time_ms),
        ascii_map: cli.ascii_map,
        map_png: cli.map.clone(),
        map_radius: cli.map_radius,
        level,
    })
}

/// Runs one session to its end, prints its summary (each line starting
/// with `label`) and map, and returns its exit code.
fn run_session(settings: &Settings, name: &str, label: &str, bots: bool) -> u8 {
    let prefix = if bots {
        format!("{name}: ")
    } else {
        String::new()
    };
    let config = settings.config(name, &prefix, bots);
    let (result, summary) = app::run(config);
    report_session(settings.level, name, label, bots, result, &summary)
}

/// Keeps freed heap memory in the process instead of handing it back to
/// the kernel at once (glibc trims from 128 KiB by default): mesa's
/// lavapipe allocates and frees its vertex buffers every frame, and each
/// page handed back and faulted in again took about 9% of the window's
/// CPU (perf; docs/client.md, "Frames"). Only where frames are drawn; the
/// bots' processes keep the defaults.
fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt sets two of glibc's allocator parameters under its
    // own lock; nothing else is touched.
    unsafe {
        libc::mallopt(libc::M_TRIM_THRESHOLD, 512 << 20);
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
    }
}

/// Runs the session on its own thread while `frontend` draws it on this
/// one (a window's event loop must own the main thread); the session ends
/// when the frontend does, and the other way round.
fn run_with_frontend(settings: &Settings, name: &str, mut frontend: Frontend) -> u8 {
    keep_freed_memory();
    let (session_link, frontend_link) = frontend::link();
    let mut session_settings = settings.clone();
    let mut session_name = name.to_string();
    let login = match &mut frontend {
        Frontend::Window(_, answer) => answer.take(),
        _ => None,
    };
    let session = std::thread::Builder::new()
        .name("session".into())
        // Lua's C stack limit assumes a main-thread-sized stack.
        .stack_size(8 << 20)
        .spawn(move || {
            if let Some(answer) = login {
                // The window's login prompt first.
                let Ok(choice) = answer.recv() else {
                    eprintln!("buildat-client: the window closed before logging in");
                    return EXIT_OK;
                };
                let security = buildat_client::transport::Security {
                    force_tls: session_settings.force_tls,
                    insecure_plaintext: session_settings.insecure_plaintext,
                    has_password: choice.password.is_some(),
                };
                if let Err(error) = security.check() {
                    eprintln!("buildat-client: {error}");
                    return EXIT_USAGE;
                }
                session_name = choice.name;
                session_settings.password = choice.password;
            }
            let mut config = session_settings.config(&session_name, "", false);
            config.frontend = Some(session_link);
            let (result, summary) = app::run(config);
            report_session(
                session_settings.level,
                &session_name,
                "buildat-client",
                false,
                result,
                &summary,
            )
        });
    let session = match session {
        Ok(handle) => handle,
        Err(error) => {
            eprintln!("buildat-client: cannot start the session thread: {error}");
            return EXIT_OTHER;
        }
    };
    let drawn = match frontend {
        Frontend::Screenshot(options) => offscreen::run(frontend_link, &options).map(|shot| {
            let c = shot.camera;
            eprintln!(
                "buildat-client: screenshot written to {} ({}x{}; camera {:.1},{:.1},{:.1} \
                 yaw {:.0} pitch {:.0}; {} chunks held, {} drawn, {} culled, {} hidden, \
                 {} triangles; \
                 {:.1} ms per frame{})",
                options.path.display(),
                options.size.0,
                options.size.1,
                c.eye.x,
                c.eye.y,
                c.eye.z,
                c.yaw,
                c.pitch,
                shot.chunks_held,
                shot.frame.chunks_drawn,
                shot.frame.chunks_culled,
                shot.frame.chunks_occluded,
                shot.frame.triangles,
                shot.frame_time.as_secs_f64() * 1e3,
                if shot.settled {
                    ""
                } else {
                    "; taken before the world settled"
                }
            );
        }),
        Frontend::Window(options, _) => window::run(frontend_link, options).map(|report| {
            let cpu = report
                .cpu_ms_per_frame
                .map_or_else(|| "unknown".to_string(), |ms| format!("{ms:.1} ms"));
            let [next, second, later] = report.edit_latency;
            eprintln!(
                "buildat-client: window: {} frames in {:.1} s; frame time median {:.1} ms, \
                 p99 {:.1} ms; CPU per frame {cpu} (whole process); edits drawn: {next} in \
                 the frame that received them, {second} in the next, {later} later",
                report.frames, report.seconds, report.frame_ms_median, report.frame_ms_p99,
            );
        }),
        Frontend::None => Ok(()),
    };
    let code = session.join().unwrap_or_else(|_| {
        eprintln!("buildat-client: the session's thread panicked");
        EXIT_OTHER
    });
    match drawn {
        Ok(()) => code,
        Err(error) => {
            eprintln!("buildat-client: {error}");
            code.max(EXIT_OTHER)
        }
    }
}

/// Prints a finished session's summary and map; returns its exit code.
fn report_session(
    level: Level,
    name: &str,
    label: &str,
    bots: bool,
    result: Result<Outcome, AppError>,
    summary: &Summary,
) -> u8 {
    let s = &summary.stats;
    eprintln!(
        "{label}: files: {} announced, {} requested, {} bytes received; \
         scripts: {} run, {} Lua errors",
        s.announced, s.requested, s.bytes_received, summary.scripts_run, summary.lua_errors
    );
    eprintln!("{label}: {}", summary.world.summary_line());
    eprintln!("{label}: nodes: {} known", summary.nodes_known);
    if level >= Level::Verbose {
        let ms = |d: Option<Duration>| {
            d.map_or_else(
                || "-".to_string(),
                |d| format!("{:.1} ms", d.as_secs_f64() * 1e3),
            )
        };
        let rss = process_memory_kib().map_or_else(
            || "unknown".to_string(),
            |(now, peak)| format!("{now} KiB (peak {peak} KiB)"),
        );
        eprintln!(
            "{label}: files complete after {}, first script done after {}; \
             Lua memory {} KiB, process memory {rss}",
            ms(summary.files_complete_after),
            ms(summary.first_script_after),
            summary.lua_memory / 1024
        );
    }
    if let Some(map) = &summary.ascii_map {
        let mut out = std::io::stdout().lock();
        let _ = if bots {
            write!(out, "{name}: {map}")
        } else {
            write!(out, "{map}")
        };
        let _ = out.flush();
    }
    match &summary.map_png {
        Some(Ok(path)) => eprintln!("{label}: map written to {}", path.display()),
        Some(Err(error)) => eprintln!("{label}: {error}"),
        None => {}
    }
    let code = match result {
        Ok(Outcome::QuitAfter) => EXIT_OK,
        Ok(Outcome::FrontendClosed) => EXIT_OK,
        Ok(Outcome::DisconnectRequested) => {
            eprintln!("{label}: disconnected (buildat.disconnect())");
            EXIT_OK
        }
        Ok(Outcome::DisconnectedByServer { reason }) => {
            eprintln!("{label}: disconnected by the server: {}", escape(&reason));
            EXIT_DISCONNECTED
        }
        Err(error) => {
            eprintln!("{label}: {}", escape(&error.to_string()));
            match error {
                AppError::Resolve { .. } | AppError::Connect { .. } => EXIT_UNREACHABLE,
                AppError::Protocol(_) | AppError::NotTls { .. } | AppError::Tls { .. } => {
                    EXIT_PROTOCOL
                }
                AppError::Insecure(_) => EXIT_USAGE,
                AppError::KeyChanged { .. } => EXIT_KEY_CHANGED,
                AppError::ConnectionLost(_) | AppError::Refused { .. } => EXIT_DISCONNECTED,
                _ => EXIT_OTHER,
            }
        }
    };
    // The last line of every session, for harnesses counting how sessions end.
    eprintln!("{label}: session ended, exit code {code}");
    code
}

/// `--bots N`: N sessions on N threads; the highest exit code wins.
fn run_bots(settings: &Settings, base: &str, count: u32) -> u8 {
    let mut threads = Vec::new();
    let mut worst = EXIT_OK;
    for i in 1..=count {
        let name = format!("{base}-{i}");
        let settings = settings.clone();
        let thread_name = name.clone();
        let spawned = std::thread::Builder::new()
            .name(thread_name)
            // Lua's C stack limit assumes a main-thread-sized stack.
            .stack_size(8 << 20)
            .spawn(move || run_session(&settings, &name, &name, true));
        match spawned {
            Ok(handle) => threads.push((format!("{base}-{i}"), handle)),
            Err(error) => {
                eprintln!("{base}-{i}: cannot start a thread: {error}");
                worst = worst.max(EXIT_OTHER);
            }
        }
    }
    for (name, handle) in threads {
        let code = handle.join().unwrap_or_else(|_| {
            eprintln!("{name}: the session's thread panicked");
            EXIT_OTHER
        });
        worst = worst.max(code);
    }
    worst
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            let _ = error.print();
            return ExitCode::from(if error.use_stderr() {
                EXIT_USAGE
            } else {
                EXIT_OK
            });
        }
    };
    let level = match (cli.quiet, cli.verbose) {
        (true, _) => Level::Warning,
        (false, 0) => Level::Info,
        (false, 1) => Level::Verbose,
        _ => Level::Debug,
    };
    let settings = match settings_from(&cli, level) {
        Ok(settings) => settings,
        Err(error) => {
            eprintln!("buildat-client: {error:#}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let name = cli.name.as_deref().unwrap_or("buildat-client");
    let code = match (cli.bots, frontend_from(&cli, &settings)) {
        (Some(count), _) => run_bots(&settings, cli.name.as_deref().unwrap_or("bot"), count),
        (None, Frontend::None) => run_session(&settings, name, "buildat-client", false),
        (None, frontend) => run_with_frontend(&settings, name, frontend),
    };
    ExitCode::from(code)
}
