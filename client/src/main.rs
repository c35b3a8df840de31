//! `buildat-client`: the command line, exit codes and the closing summary.
//! Everything else is in the library (`buildat_client`).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use buildat_client::app::{self, AppError, Config, Outcome};
use buildat_client::sandbox::{self, Level};
use clap::Parser;

const EXIT_OK: u8 = 0;
const EXIT_OTHER: u8 = 1;
const EXIT_USAGE: u8 = 2;
const EXIT_UNREACHABLE: u8 = 3;
const EXIT_PROTOCOL: u8 = 4;
const EXIT_DISCONNECTED: u8 = 5;

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

At exit a summary goes to stderr:
  files: N announced, M requested, B bytes received; scripts: S run, E Lua errors"
)]
struct Cli {
    /// Server address, HOST:PORT.
    #[arg(long, value_name = "HOST:PORT")]
    connect: String,
    /// Cache folder (default: $XDG_CACHE_HOME/buildat or ~/.cache/buildat).
    #[arg(long, value_name = "DIR")]
    cache: Option<PathBuf>,
    /// Bot mode: a trusted local Lua file run once every file is present,
    /// with the buildat API plus set_timeout / set_interval / clear_timer.
    #[arg(long, value_name = "FILE.lua")]
    script: Option<PathBuf>,
    /// This client's name (buildat.client_name in Lua).
    #[arg(long, default_value = "buildat-client")]
    name: String,
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
    /// More output: -v shows verbose log lines, -vv debug ones.
    #[arg(short, long, action = clap::ArgAction::Count)]
    verbose: u8,
    /// Only errors and warnings.
    #[arg(short, long, conflicts_with = "verbose")]
    quiet: bool,
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

/// Settings from the command line, or a usage error.
fn config_from(cli: &Cli, level: Level) -> anyhow::Result<Config> {
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
    Ok(Config {
        address: cli.connect.clone(),
        cache_dir,
        script,
        name: cli.name.clone(),
        quit_after,
        memory_limit: cli.lua_memory_mb.saturating_mul(1 << 20),
        time_limit: Duration::from_millis(cli.lua_time_ms),
        connect_timeout: Duration::from_secs(10),
        log: sandbox::stderr_sink(level),
    })
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
    let config = match config_from(&cli, level) {
        Ok(config) => config,
        Err(error) => {
            eprintln!("buildat-client: {error:#}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let (result, summary) = app::run(config);
    let s = summary.stats;
    eprintln!(
        "buildat-client: files: {} announced, {} requested, {} bytes received; \
         scripts: {} run, {} Lua errors",
        s.announced, s.requested, s.bytes_received, summary.scripts_run, summary.lua_errors
    );
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
            "buildat-client: files complete after {}, first script done after {}; \
             Lua memory {} KiB, process memory {rss}",
            ms(summary.files_complete_after),
            ms(summary.first_script_after),
            summary.lua_memory / 1024
        );
    }
    let code = match result {
        Ok(Outcome::QuitAfter) => EXIT_OK,
        Ok(Outcome::DisconnectRequested) => {
            eprintln!("buildat-client: disconnected (buildat.disconnect())");
            EXIT_OK
        }
        Ok(Outcome::DisconnectedByServer { reason }) => {
            eprintln!("buildat-client: disconnected by the server: {reason}");
            EXIT_DISCONNECTED
        }
        Err(error) => {
            eprintln!("buildat-client: {error}");
            match error {
                AppError::Resolve { .. } | AppError::Connect { .. } => EXIT_UNREACHABLE,
                AppError::Protocol(_) => EXIT_PROTOCOL,
                AppError::ConnectionLost(_) => EXIT_DISCONNECTED,
                AppError::Cache(_) | AppError::Runtime(_) => EXIT_OTHER,
            }
        }
    };
    ExitCode::from(code)
}
