//! The server's settings, as resolved from the command line.
//!
//! Owns: [`ServerConfig`] and its defaults. Does not own: parsing the command
//! line (`main.rs`) or the world's own config (`world.toml`, read by the world
//! modules).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// How modules are compiled by the module builder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModuleProfile {
    Release,
    Dev,
}

impl ModuleProfile {
    /// The cargo profile name.
    pub fn cargo_name(self) -> &'static str {
        match self {
            Self::Release => "release",
            Self::Dev => "dev",
        }
    }
}

#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// The world directory (absolute).
    pub world_path: PathBuf,
    /// Folders scanned for modules, in search order (absolute).
    pub module_paths: Vec<PathBuf>,
    /// Where the module builder keeps artifacts and loaded copies
    /// (absolute). Must differ from the workspace's own target.
    pub build_dir: PathBuf,
    /// Cargo's target dir for building modules (absolute): by default
    /// `<build_dir>/target`; the server's CLI gives the workspace's own
    /// `target/` when no build dir is given, so the modules reuse what the
    /// server's own build compiled.
    pub cargo_target_dir: PathBuf,
    pub module_profile: ModuleProfile,
    /// Handed to the network module.
    pub listen: String,
    pub log_level: String,
    /// Interval of `core:tick`.
    pub tick_interval: Duration,
    /// How long a call waits for its answer.
    pub call_timeout: Duration,
    /// How long a module may stay in one handler before the watchdog reports it.
    pub watchdog_limit: Duration,
    /// A handler that runs at least this long is logged, with its module,
    /// event or call and its time in the queue; `None`: none is.
    pub slow_handler_limit: Option<Duration>,
    /// How long loading (constructor, init, `core:start`) may take.
    pub init_timeout: Duration,
    /// How long a module may take to stop (`core:unload`) before it is abandoned.
    pub stop_timeout: Duration,
    /// Extra `--set KEY=VALUE` values handed to modules through `get_config`.
    pub extra: BTreeMap<String, String>,
    /// Has the process's allocator return to the system what the calling
    /// thread and the allocator's delayed purges hold freed (the binary
    /// gives mimalloc's); each module's thread calls it as a message comes,
    /// at most once every `allocator_collect_interval`. `None`: never.
    pub allocator_collect: Option<fn()>,
    /// How often a thread calls `allocator_collect` at most (2 s).
    pub allocator_collect_interval: Duration,
}

impl ServerConfig {
    /// Defaults for everything but the paths.
    pub fn new(world_path: PathBuf, module_paths: Vec<PathBuf>, build_dir: PathBuf) -> Self {
        Self {
            world_path,
            module_paths,
            cargo_target_dir: build_dir.join("target"),
            build_dir,
            module_profile: ModuleProfile::Release,
            listen: "0.0.0.0:20000".to_string(),
            log_level: "info".to_string(),
            tick_interval: Duration::from_millis(100),
            call_timeout: Duration::from_secs(30),
            watchdog_limit: Duration::from_secs(10),
            slow_handler_limit: None,
            init_timeout: Duration::from_secs(60),
            stop_timeout: Duration::from_secs(10),
            extra: BTreeMap::new(),
            allocator_collect: None,
            allocator_collect_interval: Duration::from_secs(2),
        }
    }
}
