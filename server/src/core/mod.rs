//! The module host: loads, reloads and unloads modules, routes events and
//! calls between them, keeps tmp data across reloads, watches for stuck
//! modules, and coordinates shutdown.
//!
//! Owns: [`Core`] and the state behind it (`CoreInner`: the module table,
//! one [`slot::ModuleSlot`] per module name, the load order, the bus, the
//! wait-for graph, tmp data, the console commands modules registered),
//! shutdown (the request, waiting for it, `stop_all`), and the supervisor
//! (reaper + watchdog) and tick threads. `impl Core` and `impl CoreInner`
//! are spread over files by seam: `lifecycle` (load, unload, reload, with
//! dependencies; the module table and load order as they change) and
//! `calls` (calls to modules and to `__core`, typed calls, module console
//! commands) and `settings` (the modules' settings: `--set` over
//! `world.toml` over the declared default; the console's `set`).
//! Invariants: every call into a module runs on its own thread; a module's
//! thread is joined before its library is closed; a panicking
//! module is marked failed and unloaded while every other module keeps
//! running; events sent to a reloading module wait in its queue.
//! Does not own: finding modules and ordering them (`__loader`), building
//! (`crate::builder`), the console (`crate::console`).

mod bus;
mod calls;
pub mod commands;
mod host_table;
mod images;
mod instance;
mod lifecycle;
mod settings;
mod shared;
mod slot;
mod waits;

pub use lifecycle::Reloaded;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Condvar, Mutex, RwLock};
use std::time::{Duration, Instant};

use buildat_interface::core_api::ModuleState;
use buildat_interface::meta::MetaError;
use buildat_interface::{Event, UnloadKind, events};
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};

use crate::builder::{BuildCancel, BuildError, Builder};
use crate::config::ServerConfig;
use slot::{ModuleSlot, lock, now_ms};

/// Name used as the caller for calls made by the core and the console.
pub const CONSOLE_CALLER: &str = "__console";

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CoreError {
    #[error("no module named '{0}' in the module paths")]
    NotFound(String),
    #[error("'{0}' is not a valid module name (letters, digits, '_' and '-', at most 64)")]
    BadName(String),
    #[error("module {name} is {state:?}")]
    Busy { name: String, state: ModuleState },
    #[error(transparent)]
    Meta(#[from] MetaError),
    #[error(transparent)]
    Build(#[from] BuildError),
    /// A module that depends on the API of the module being reloaded did
    /// not build: nothing was reloaded.
    #[error(
        "cannot reload {name}: {dependent} depends on its API and does not build with it; \
         nothing was reloaded, every module keeps its old code: {source}"
    )]
    DependentBuild {
        name: String,
        dependent: String,
        source: BuildError,
    },
    #[error("module {name}: {reason}")]
    LoadFailed { name: String, reason: String },
    #[error("{0}")]
    Refused(String),
    #[error("{what}: {source}")]
    Io {
        what: String,
        source: std::io::Error,
    },
    #[error("startup failed: {0}")]
    Startup(String),
}

impl CoreError {
    /// Whether this is a build cancelled because the server is stopping
    /// (expected then, not worth an error in the log).
    pub fn is_cancelled(&self) -> bool {
        matches!(
            self,
            Self::Build(BuildError::Cancelled { .. })
                | Self::DependentBuild {
                    source: BuildError::Cancelled { .. },
                    ..
                }
        )
    }
}

pub(crate) struct CoreInner {
    pub config: ServerConfig,
    pub bus: bus::Bus,
    pub tmp_data: Mutex<HashMap<(String, String), Vec<u8>>>,
    /// Bulk bytes modules hand each other by id (`shared.rs`).
    pub shared: shared::SharedBuffers,
    waits: waits::WaitGraph,
    modules: RwLock<HashMap<String, Arc<ModuleSlot>>>,
    load_order: Mutex<Vec<String>>,
    next_load_index: AtomicU32,
    builder: Builder,
    /// Cancels the builder's builds when a shutdown is requested.
    build_cancel: BuildCancel,
    images: images::ImageStore,
    shutdown: Mutex<Option<(i32, String)>>,
    shutdown_signal: Condvar,
    stopped: AtomicBool,
    /// Set once the loader has loaded the modules of the start
    /// (`config::STARTED`, `core:started`).
    pub started: AtomicBool,
    reaper: Sender<Arc<ModuleSlot>>,
    commands: commands::CommandTable,
    /// Per module name: the crates it depends on by path and their hashes
    /// when it was last built (`lifecycle.rs`: which dependents a reload
    /// takes along).
    built_against: Mutex<HashMap<String, lifecycle::BuiltAgainst>>,
    /// The folders searched for modules: the configured ones, then those
    /// added while running (`modules add DIR`).
    module_paths: RwLock<Vec<PathBuf>>,
    /// The values of `<world>/world.toml` by dotted key, as read at start
    /// and changed by the console's `set` (`calls.rs`); `--set` wins.
    file_settings: RwLock<std::collections::BTreeMap<String, String>>,
}

/// The server's module host. Cheap to clone.
#[derive(Clone)]
pub struct Core {
    inner: Arc<CoreInner>,
}

impl Core {
    /// The shared buffers modules hold now: how many, and their bytes.
    pub fn shared_buffers(&self) -> (usize, usize) {
        self.inner.shared.totals()
    }

    /// Prepares the host (build dir, loaded-image dir, supervisor and tick
    /// threads). Loads nothing yet: see [`Core::start`].
    pub fn new(config: ServerConfig) -> Result<Self, CoreError> {
        let io = |what: &str| {
            let what = what.to_string();
            move |source| CoreError::Io { what, source }
        };
        std::fs::create_dir_all(&config.build_dir).map_err(io("cannot create the build dir"))?;
        let images = images::ImageStore::new(&config.build_dir)
            .map_err(io("cannot create the loaded-image dir"))?;
        let (reaper, reaper_rx) = crossbeam_channel::unbounded();
        let builder = Builder::new(config.build_dir.clone(), config.module_profile)
            .with_target_dir(config.cargo_target_dir.clone())
            .with_module_paths(config.module_paths.clone());
        let module_paths = RwLock::new(config.module_paths.clone());
        let settings_file = config.world_path.join(crate::world_settings::FILE_NAME);
        let file_settings = crate::world_settings::read_values(&settings_file)
            .map_err(|e| CoreError::Startup(e.to_string()))?;
        let inner = Arc::new(CoreInner {
            build_cancel: builder.canceller(),
            builder,
            config,
            bus: bus::Bus::default(),
            tmp_data: Mutex::new(HashMap::new()),
            shared: shared::SharedBuffers::default(),
            waits: waits::WaitGraph::default(),
            modules: RwLock::new(HashMap::new()),
            load_order: Mutex::new(Vec::new()),
            next_load_index: AtomicU32::new(0),
            images,
            shutdown: Mutex::new(None),
            shutdown_signal: Condvar::new(),
            stopped: AtomicBool::new(false),
            started: AtomicBool::new(false),
            reaper,
            commands: commands::CommandTable::default(),
            built_against: Mutex::new(HashMap::new()),
            module_paths,
            file_settings: RwLock::new(file_settings),
        });
        let supervisor = inner.clone();
        std::thread::Builder::new()
            .name("supervisor".into())
            .spawn(move || supervisor.supervise(reaper_rx))
            .map_err(io("cannot start the supervisor thread"))?;
        let ticker = inner.clone();
        std::thread::Builder::new()
            .name("tick".into())
            .spawn(move || ticker.tick())
            .map_err(io("cannot start the tick thread"))?;
        Ok(Self { inner })
    }

    /// The folders searched for modules.
    pub fn module_paths(&self) -> Vec<PathBuf> {
        self.inner.get_module_paths()
    }

    /// Searches `path` for modules from now on (after the others); its
    /// modules are not loaded by this (see `crate::module_paths`). Whether
    /// it was new.
    pub fn add_module_path(&self, path: PathBuf) -> bool {
        let mut paths = self
            .inner
            .module_paths
            .write()
            .unwrap_or_else(|e| e.into_inner());
        if paths.contains(&path) {
            return false;
        }
        paths.push(path.clone());
        self.inner.builder.add_module_path(path);
        true
    }

    /// Emits an event on the bus as the core; answers how many subscribers
    /// got it (one whose queue is full does not: its slot logs that).
    pub fn emit_event(&self, name: &str, payload: Vec<u8>) -> usize {
        match self.inner.bus.emit(name, payload, None) {
            Ok(count) => count,
            Err(refused) => refused.subscribers - refused.refused.len(),
        }
    }

    /// Asks the server to stop: [`Core::wait_for_shutdown`] returns, and a
    /// running module build is cancelled at once (so are later ones).
    pub fn request_shutdown(&self, status: i32, reason: String) {
        self.inner.request_shutdown(status, reason);
    }

    /// The status and reason of the shutdown request, if one was made.
    pub fn shutdown_request(&self) -> Option<(i32, String)> {
        lock(&self.inner.shutdown).clone()
    }

    /// Blocks until something asks the server to stop; returns the status and reason.
    pub fn wait_for_shutdown(&self) -> (i32, String) {
        let mut shutdown = lock(&self.inner.shutdown);
        loop {
            if let Some(request) = shutdown.clone() {
                return request;
            }
            shutdown = self
                .inner
                .shutdown_signal
                .wait(shutdown)
                .unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Cancels module builds (waiting up to a second for them to end), then
    /// unloads every module in reverse load order and stops the host's threads.
    pub fn stop_all(&self) {
        self.inner.build_cancel.cancel();
        if !self.inner.build_cancel.wait_idle(Duration::from_secs(1)) {
            tracing::warn!("stopping while a module build is still ending");
        }
        let order: Vec<String> = lock(&self.inner.load_order).iter().rev().cloned().collect();
        for name in order {
            if let Err(error) = self.inner.unload_unchecked(&name, UnloadKind::Stop) {
                tracing::error!("stopping: {error}");
            }
        }
        let leftovers: Vec<Arc<ModuleSlot>> = read_modules(&self.inner.modules)
            .values()
            .cloned()
            .collect();
        for slot in leftovers {
            self.inner.finish_thread(&slot, Duration::ZERO);
        }
        self.inner.stopped.store(true, Ordering::Release);
        self.inner.images.remove_all();
    }
}

fn read_modules(
    modules: &RwLock<HashMap<String, Arc<ModuleSlot>>>,
) -> std::sync::RwLockReadGuard<'_, HashMap<String, Arc<ModuleSlot>>> {
    modules.read().unwrap_or_else(|e| e.into_inner())
}

fn write_modules(
    modules: &RwLock<HashMap<String, Arc<ModuleSlot>>>,
) -> std::sync::RwLockWriteGuard<'_, HashMap<String, Arc<ModuleSlot>>> {
    modules.write().unwrap_or_else(|e| e.into_inner())
}

/// The payload of one of the core's own events. They are plain structs that
/// always encode; should one ever fail, it is logged and sent empty.
pub fn encode_core_event<E: Event>(event: &E) -> Vec<u8> {
    buildat_interface::encode(event).unwrap_or_else(|error| {
        tracing::error!("encoding {}: {error}", E::NAME);
        Vec::new()
    })
}

/// Milliseconds since the Unix epoch.
pub fn unix_ms() -> u64 {
    now_ms()
}

/// Module names are folder names: letters, digits, `_` and `-`.
pub fn check_module_name(name: &str) -> Result<(), CoreError> {
    let valid = !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if valid {
        Ok(())
    } else {
        Err(CoreError::BadName(name.to_string()))
    }
}

impl CoreInner {
    pub fn get_module_paths(&self) -> Vec<PathBuf> {
        self.module_paths
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub fn request_shutdown(&self, status: i32, reason: String) {
        {
            let mut shutdown = lock(&self.shutdown);
            if shutdown.is_some() {
                return;
            }
            *shutdown = Some((status, reason));
            self.shutdown_signal.notify_all();
        }
        self.build_cancel.cancel();
    }

    fn emit<E: Event>(&self, event: &E) {
        // A subscriber whose queue is full is logged by its slot.
        let _ = self.bus.emit(E::NAME, encode_core_event(event), None);
    }

    /// Reaps failed modules' threads and runs the watchdog until stopped.
    fn supervise(self: Arc<Self>, reaped: Receiver<Arc<ModuleSlot>>) {
        while !self.stopped.load(Ordering::Acquire) {
            match reaped.recv_timeout(Duration::from_millis(250)) {
                Ok(slot) => {
                    self.finish_thread(&slot, self.config.stop_timeout);
                }
                Err(RecvTimeoutError::Timeout) => self.watchdog(),
                Err(RecvTimeoutError::Disconnected) => return,
            }
        }
    }

    fn watchdog(&self) {
        let limit = self.config.watchdog_limit.as_millis() as u64;
        let slots: Vec<Arc<ModuleSlot>> = read_modules(&self.modules).values().cloned().collect();
        for slot in slots {
            let name = slot.name.as_str();
            match slot.activity.get_busy() {
                Some((what, busy_ms)) if busy_ms > limit => {
                    if !slot.activity.reported.swap(true, Ordering::AcqRel) {
                        tracing::error!(
                            "watchdog: module {name} has been stuck in '{what}' for {:.1} s",
                            busy_ms as f64 / 1000.0
                        );
                        if slot.state() == ModuleState::Loaded {
                            slot.set_state(ModuleState::Hung(what));
                        }
                    }
                }
                Some(_) => {}
                None => {
                    if slot.activity.reported.swap(false, Ordering::AcqRel) {
                        tracing::warn!("watchdog: module {name} is responsive again");
                        if matches!(slot.state(), ModuleState::Hung(_)) {
                            slot.set_state(ModuleState::Loaded);
                        }
                    }
                }
            }
        }
    }

    /// Emits `core:tick` at the configured rate until stopped.
    fn tick(self: Arc<Self>) {
        let mut last = Instant::now();
        while !self.stopped.load(Ordering::Acquire) {
            std::thread::sleep(self.config.tick_interval);
            let now = Instant::now();
            let dtime = now.duration_since(last).as_secs_f64();
            last = now;
            self.emit(&events::Tick { dtime });
        }
    }
}
