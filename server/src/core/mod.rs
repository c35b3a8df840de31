//! The module host: loads, reloads and unloads modules, routes events and
//! calls between them, keeps tmp data across reloads, watches for stuck
//! modules, and coordinates shutdown.
//!
//! Owns: the module table (one [`slot::ModuleSlot`] per module name), the load
//! order, the bus, the wait-for graph, tmp data, and the supervisor (reaper +
//! watchdog) and tick threads. Invariants: every call into a module runs on
//! its own thread; a module's thread is joined before its library is closed;
//! a panicking module is marked failed and unloaded while every other module
//! keeps running; events sent to a reloading module wait in its queue.
//! Does not own: finding modules and ordering them (`__loader`), building
//! (`crate::builder`), the console (`crate::console`).

mod bus;
pub mod commands;
mod host_table;
mod images;
mod instance;
mod slot;
mod waits;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Condvar, Mutex, RwLock};
use std::time::{Duration, Instant};

use buildat_interface::core_api::{self, ModuleInfo, ModuleState};
use buildat_interface::meta::{MetaError, ModuleMeta};
use buildat_interface::{Call, CallError, Event, ModuleError, UnloadKind, events};
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};

use crate::builder::{Artifact, BuildCancel, BuildError, Builder};
use crate::config::ServerConfig;
use instance::StartKind;
use slot::{Message, ModuleSlot, lock, now_ms};

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
        matches!(self, Self::Build(BuildError::Cancelled { .. }))
    }
}

pub(crate) struct CoreInner {
    pub config: ServerConfig,
    pub bus: bus::Bus,
    pub tmp_data: Mutex<HashMap<(String, String), Vec<u8>>>,
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
    reaper: Sender<Arc<ModuleSlot>>,
    commands: commands::CommandTable,
}

/// The server's module host. Cheap to clone.
#[derive(Clone)]
pub struct Core {
    inner: Arc<CoreInner>,
}

impl Core {
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
        let builder = Builder::new(config.build_dir.clone(), config.module_profile);
        let inner = Arc::new(CoreInner {
            build_cancel: builder.canceller(),
            builder,
            config,
            bus: bus::Bus::default(),
            tmp_data: Mutex::new(HashMap::new()),
            waits: waits::WaitGraph::default(),
            modules: RwLock::new(HashMap::new()),
            load_order: Mutex::new(Vec::new()),
            next_load_index: AtomicU32::new(0),
            images,
            shutdown: Mutex::new(None),
            shutdown_signal: Condvar::new(),
            stopped: AtomicBool::new(false),
            reaper,
            commands: commands::CommandTable::default(),
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

    /// Loads `__loader` and asks it to load every other module. Returns the
    /// number of modules loaded.
    pub fn start(&self) -> Result<usize, CoreError> {
        let started = Instant::now();
        let loader = self
            .inner
            .find_module(core_api::LOADER)
            .ok_or_else(|| CoreError::NotFound(core_api::LOADER.to_string()))?;
        self.inner.load_module(core_api::LOADER, Some(&loader))?;
        self.inner
            .call_with_timeout(
                CONSOLE_CALLER,
                core_api::LOADER,
                core_api::LoadAll::FUNCTION,
                &buildat_interface::encode(&core_api::LoadAll {})
                    .map_err(|e| CoreError::Startup(e.to_string()))?,
                None,
            )
            .map_err(|e| CoreError::Startup(e.message().to_string()))?;
        let count = lock(&self.inner.load_order).len();
        tracing::info!(
            "server started: {count} modules loaded in {} ms",
            started.elapsed().as_millis()
        );
        Ok(count)
    }

    /// Loads a module from `dir`, or from the module paths by name.
    pub fn load_module(&self, name: &str, dir: Option<&Path>) -> Result<(), CoreError> {
        self.inner.load_module(name, dir)
    }

    pub fn unload_module(&self, name: &str) -> Result<(), CoreError> {
        self.inner.unload_module(name)
    }

    /// Asks `__loader` to load `name` from the module paths after whatever
    /// it needs that is not loaded yet (dependencies, and modules naming it
    /// as a reverse dependency), resolved as at startup. Returns the modules
    /// loaded, in order (empty when `name` was loaded already).
    pub fn load_with_dependencies(&self, name: &str) -> Result<Vec<String>, CoreError> {
        check_module_name(name)?;
        let request = core_api::LoadWithDependencies {
            name: name.to_string(),
        };
        self.call_typed(&request, None)
            .map_err(|e| CoreError::LoadFailed {
                name: name.to_string(),
                reason: e.message().to_string(),
            })
    }

    /// Unloads `name` after every loaded module depending on it (directly or
    /// not), in reverse load order. Returns the modules unloaded, in order.
    pub fn unload_with_dependents(&self, name: &str) -> Result<Vec<String>, CoreError> {
        self.inner.unload_with_dependents(name)
    }

    pub fn reload_module(&self, name: &str) -> Result<(), CoreError> {
        self.inner.reload_module(name)
    }

    pub fn list_modules(&self) -> Vec<ModuleInfo> {
        self.inner.list_modules()
    }

    /// The folders searched for modules.
    pub fn module_paths(&self) -> Vec<PathBuf> {
        self.inner.config.module_paths.clone()
    }

    /// Emits an event on the bus as the core.
    pub fn emit_event(&self, name: &str, payload: Vec<u8>) -> usize {
        self.inner.bus.emit(name, payload)
    }

    /// Calls a module function as the console.
    pub fn call(&self, module: &str, function: &str, payload: &[u8]) -> Result<Vec<u8>, CallError> {
        self.inner.call(CONSOLE_CALLER, module, function, payload)
    }

    /// Like [`Core::call`] with another timeout (`None`: as long as it takes).
    pub fn call_with_timeout(
        &self,
        module: &str,
        function: &str,
        payload: &[u8],
        timeout: Option<Duration>,
    ) -> Result<Vec<u8>, CallError> {
        self.inner
            .call_with_timeout(CONSOLE_CALLER, module, function, payload, timeout)
    }

    /// Makes the call `args` defines, as the console, waiting as long as
    /// `timeout` (`None`: as long as it takes).
    pub fn call_typed<C: Call>(
        &self,
        args: &C,
        timeout: Option<Duration>,
    ) -> Result<C::Reply, CallError> {
        let payload =
            buildat_interface::encode(args).map_err(|e| CallError::Invalid(e.to_string()))?;
        let reply = self.call_with_timeout(C::MODULE, C::FUNCTION, &payload, timeout)?;
        buildat_interface::decode(&reply).map_err(|e| CallError::Invalid(e.to_string()))
    }

    /// The console commands modules registered, by name.
    pub fn module_commands(&self) -> Vec<(String, commands::ModuleCommand)> {
        self.inner.commands.list()
    }

    /// Runs a module's console command (no timeout: the operator asked and
    /// waits); `None` if no module registered `name`.
    pub fn run_module_command(
        &self,
        name: &str,
        args: Vec<String>,
    ) -> Option<Result<String, CallError>> {
        let command = self.inner.commands.get(name)?;
        let request = core_api::RunCommand {
            name: name.to_string(),
            args,
        };
        Some((|| {
            let payload = buildat_interface::encode(&request)
                .map_err(|e| CallError::Invalid(e.to_string()))?;
            let reply = self.call_with_timeout(
                &command.module,
                core_api::RunCommand::FUNCTION,
                &payload,
                None,
            )?;
            buildat_interface::decode(&reply).map_err(|e| CallError::Invalid(e.to_string()))
        })())
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
    pub fn get_slot(&self, name: &str) -> Option<Arc<ModuleSlot>> {
        read_modules(&self.modules).get(name).cloned()
    }

    /// The folder of module `name` in the module paths, first match.
    pub fn find_module(&self, name: &str) -> Option<PathBuf> {
        self.config
            .module_paths
            .iter()
            .map(|path| path.join(name))
            .find(|dir| dir.join(buildat_interface::meta::META_FILE).is_file())
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

    pub fn call(
        self: &Arc<Self>,
        caller: &str,
        target: &str,
        function: &str,
        payload: &[u8],
    ) -> Result<Vec<u8>, CallError> {
        self.call_with_timeout(
            caller,
            target,
            function,
            payload,
            Some(self.config.call_timeout),
        )
    }

    /// Runs `function` on `target`'s thread and waits for the answer
    /// (`timeout: None` waits as long as it takes).
    fn call_with_timeout(
        self: &Arc<Self>,
        caller: &str,
        target: &str,
        function: &str,
        payload: &[u8],
        timeout: Option<Duration>,
    ) -> Result<Vec<u8>, CallError> {
        if target == core_api::CORE {
            return self.core_call(caller, function, payload);
        }
        let slot = self
            .get_slot(target)
            .ok_or_else(|| CallError::NotFound(format!("no module named '{target}' is loaded")))?;
        match slot.state() {
            ModuleState::Failed(reason) => {
                return Err(CallError::Failed(format!(
                    "module {target} failed: {reason}"
                )));
            }
            ModuleState::Hung(what) => {
                return Err(CallError::Failed(format!(
                    "module {target} is stuck in {what}"
                )));
            }
            _ if slot.lua_only => {
                return Err(CallError::NotFound(format!(
                    "module {target} has no server code (disable_rust)"
                )));
            }
            _ => {}
        }
        let _wait = self.waits.begin(caller, target).map_err(CallError::Cycle)?;
        let (reply, answer) = crossbeam_channel::bounded(1);
        slot.queue_tx
            .send(Message::Call {
                function: function.to_string(),
                payload: payload.to_vec(),
                reply,
            })
            .map_err(|_| CallError::Failed(format!("module {target} is gone")))?;
        match timeout {
            Some(timeout) => answer.recv_timeout(timeout).map_err(|_| {
                CallError::Timeout(format!(
                    "module {target} did not answer '{function}' within {} s",
                    timeout.as_secs_f64()
                ))
            })?,
            None => answer.recv().map_err(|_| {
                CallError::Failed(format!("module {target} stopped before answering"))
            })?,
        }
    }

    /// Calls addressed to `__core`.
    fn core_call(
        self: &Arc<Self>,
        caller: &str,
        function: &str,
        payload: &[u8],
    ) -> Result<Vec<u8>, CallError> {
        use buildat_interface::call::answer;
        use core_api::{ListModules, LoadModule, RegisterCommand, ReloadModule, UnloadModule};
        let failed = |e: CoreError| ModuleError::msg(e.to_string());
        let check_not_caller = |name: &str| -> Result<(), ModuleError> {
            if name == caller {
                return Err(ModuleError::Call(CallError::Invalid(format!(
                    "module {caller} cannot {function} itself from its own thread"
                ))));
            }
            Ok(())
        };
        let result = if function == LoadModule::FUNCTION {
            answer(payload, |request: LoadModule| {
                self.load_module(&request.name, Some(Path::new(&request.path)))
                    .map_err(failed)
            })
        } else if function == UnloadModule::FUNCTION {
            answer(payload, |request: UnloadModule| {
                check_not_caller(&request.name)?;
                self.unload_module(&request.name).map_err(failed)
            })
        } else if function == ReloadModule::FUNCTION {
            answer(payload, |request: ReloadModule| {
                check_not_caller(&request.name)?;
                self.reload_module(&request.name).map_err(failed)
            })
        } else if function == ListModules::FUNCTION {
            answer(payload, |_: ListModules| Ok(self.list_modules()))
        } else if function == RegisterCommand::FUNCTION {
            answer(payload, |request: RegisterCommand| {
                self.commands
                    .check_register(caller, request)
                    .map_err(ModuleError::Message)
            })
        } else {
            Err(ModuleError::UnknownFunction(function.to_string()))
        };
        result.map_err(|error| match error {
            ModuleError::Call(call) => call,
            ModuleError::UnknownFunction(name) => {
                CallError::NotFound(format!("the core has no function '{name}'"))
            }
            ModuleError::Payload(error) => CallError::Invalid(error.to_string()),
            other => CallError::Failed(other.to_string()),
        })
    }

    fn load_module(self: &Arc<Self>, name: &str, dir: Option<&Path>) -> Result<(), CoreError> {
        check_module_name(name)?;
        let dir = match dir {
            Some(dir) => dir.to_path_buf(),
            None => self
                .find_module(name)
                .ok_or_else(|| CoreError::NotFound(name.to_string()))?,
        };
        let parsed = ModuleMeta::read(&dir)?;
        for warning in &parsed.warnings {
            tracing::warn!("{warning}");
        }
        let missing = self.get_missing_dependencies(&parsed.meta);
        if !missing.is_empty() {
            return Err(CoreError::Refused(format!(
                "cannot load {name}: it needs {}, which is not loaded (load it first)",
                missing.join(", ")
            )));
        }
        let slot = {
            let mut modules = write_modules(&self.modules);
            if let Some(existing) = modules.get(name) {
                let state = existing.state();
                if !matches!(state, ModuleState::Failed(_)) {
                    return Err(CoreError::Busy {
                        name: name.to_string(),
                        state,
                    });
                }
            }
            let slot = Arc::new(ModuleSlot::new(name, dir, parsed.meta.clone()));
            modules.insert(name.to_string(), slot.clone());
            slot
        };
        let started = Instant::now();
        let result = self
            .build(&slot, &parsed.meta)
            .and_then(|artifact| self.run_instance(&slot, artifact.as_ref(), StartKind::Start));
        match result {
            Ok(()) => {
                {
                    let mut status = lock(&slot.status);
                    status.state = ModuleState::Loaded;
                    status.load_index = self.next_load_index.fetch_add(1, Ordering::Relaxed);
                }
                lock(&self.load_order).push(name.to_string());
                tracing::info!(
                    "module {name} loaded in {} ms",
                    started.elapsed().as_millis()
                );
                self.emit(&events::ModuleLoaded {
                    name: name.to_string(),
                });
                Ok(())
            }
            Err(error) => {
                self.mark_failed(&slot, error.to_string());
                Err(error)
            }
        }
    }

    fn emit<E: Event>(&self, event: &E) {
        self.bus.emit(E::NAME, encode_core_event(event));
    }

    /// The module's artifact (building it if needed); `None` for a Lua-only module.
    fn build(&self, slot: &ModuleSlot, meta: &ModuleMeta) -> Result<Option<Artifact>, CoreError> {
        if slot.lua_only {
            return Ok(None);
        }
        slot.set_state(ModuleState::Building);
        let artifact = self.builder.build(&slot.name, &slot.dir, meta)?;
        slot.set_state(ModuleState::Loading);
        Ok(Some(artifact))
    }

    /// Starts an instance of `artifact` on a new thread and waits until it has
    /// run its constructor, init and start event.
    fn run_instance(
        self: &Arc<Self>,
        slot: &Arc<ModuleSlot>,
        artifact: Option<&Artifact>,
        start: StartKind,
    ) -> Result<(), CoreError> {
        let name = slot.name.clone();
        let Some(artifact) = artifact else {
            lock(&slot.status).loaded_at_unix_ms = now_ms();
            return Ok(());
        };
        let image = self
            .images
            .copy_unique(&artifact.path, &name)
            .map_err(|source| CoreError::Io {
                what: format!("module {name}: cannot copy its library"),
                source,
            })?;
        let (ready, ready_rx) = crossbeam_channel::bounded(1);
        let running = instance::spawn(instance::ThreadArgs {
            core: self.clone(),
            slot: slot.clone(),
            image,
            start,
            ready,
        })
        .map_err(|source| CoreError::Io {
            what: format!("module {name}: cannot start its thread"),
            source,
        })?;
        *lock(&slot.running) = Some(running);
        match ready_rx.recv_timeout(self.config.init_timeout) {
            Ok(Ok(())) => {
                let mut status = lock(&slot.status);
                status.loaded_at_unix_ms = now_ms();
                status.build_hash = artifact.hash.clone();
                Ok(())
            }
            Ok(Err(reason)) => {
                self.finish_thread(slot, self.config.stop_timeout);
                Err(CoreError::LoadFailed { name, reason })
            }
            Err(_) => {
                let reason = format!(
                    "did not finish loading within {} s",
                    self.config.init_timeout.as_secs_f64()
                );
                slot.set_state(ModuleState::Hung("loading".into()));
                self.finish_thread(slot, Duration::ZERO);
                Err(CoreError::LoadFailed { name, reason })
            }
        }
    }

    fn mark_failed(&self, slot: &Arc<ModuleSlot>, reason: String) {
        self.bus.unsubscribe_all(slot);
        slot.drain_queue(&CallError::Failed(format!(
            "module {} failed: {reason}",
            slot.name
        )));
        slot.set_state(ModuleState::Failed(reason));
        lock(&self.load_order).retain(|n| *n != slot.name);
    }

    /// Called on a module's thread when it panicked while serving: the module
    /// is marked failed, its queue answered, and the supervisor reaps its thread.
    pub(crate) fn module_failed(&self, slot: &Arc<ModuleSlot>, reason: String) {
        let name = &slot.name;
        tracing::error!("module {name} failed and is unloaded: {reason}");
        self.mark_failed(slot, reason);
        let _ = self.reaper.send(slot.clone());
    }

    /// Waits for the slot's thread to end, joins it, closes its library and
    /// checks that the image left the process. A thread that does not end
    /// within `timeout` is abandoned: its library stays mapped.
    fn finish_thread(&self, slot: &ModuleSlot, timeout: Duration) -> bool {
        let Some(running) = lock(&slot.running).take() else {
            return true;
        };
        let name = slot.name.as_str();
        if running.done.recv_timeout(timeout).is_err() {
            tracing::error!(
                "module {name} did not stop within {} s; abandoning it (its library stays mapped)",
                timeout.as_secs_f64()
            );
            return false;
        }
        let library = match running.thread.join() {
            Ok(library) => library,
            Err(_) => {
                tracing::error!("module {name}: its host thread panicked");
                None
            }
        };
        if let Some(library) = library
            && let Err(error) = library.close()
        {
            tracing::warn!("module {name}: dlclose failed: {error}");
        }
        if images::is_mapped(&running.image) {
            tracing::warn!(
                "module {name}: old image {} is still mapped after unload (leaked)",
                running.image.display()
            );
            false
        } else {
            let _ = std::fs::remove_file(&running.image);
            true
        }
    }

    /// Required dependencies of `meta` that are not loaded.
    fn get_missing_dependencies(&self, meta: &ModuleMeta) -> Vec<String> {
        let modules = read_modules(&self.modules);
        meta.dependencies
            .iter()
            .filter(|d| !d.optional && d.module != core_api::LOADER)
            .filter(|d| {
                modules
                    .get(&d.module)
                    .is_none_or(|slot| matches!(slot.state(), ModuleState::Failed(_)))
            })
            .map(|d| d.module.clone())
            .collect()
    }

    /// Loaded modules that depend on `name` (directly, or through `name`'s
    /// reverse dependencies).
    fn get_dependents(&self, name: &str) -> Vec<String> {
        let modules = read_modules(&self.modules);
        let alive = |slot: &ModuleSlot| !matches!(slot.state(), ModuleState::Failed(_));
        let mut dependents: Vec<String> = modules
            .values()
            .filter(|slot| slot.name != name && alive(slot))
            .filter(|slot| {
                lock(&slot.meta)
                    .dependencies
                    .iter()
                    .any(|d| d.module == name)
            })
            .map(|slot| slot.name.clone())
            .collect();
        if let Some(slot) = modules.get(name) {
            for reverse in &lock(&slot.meta).reverse_dependencies {
                if modules.get(&reverse.module).is_some_and(|s| alive(s)) {
                    dependents.push(reverse.module.clone());
                }
            }
        }
        dependents.sort();
        dependents.dedup();
        dependents
    }

    /// Unloads `name` unless loaded modules depend on it.
    fn unload_module(self: &Arc<Self>, name: &str) -> Result<(), CoreError> {
        let dependents = self.get_dependents(name);
        if !dependents.is_empty() {
            return Err(CoreError::Refused(format!(
                "cannot unload {name}: loaded modules depend on it: {}",
                dependents.join(", ")
            )));
        }
        self.unload_unchecked(name, UnloadKind::ForGood)
    }

    fn unload_with_dependents(self: &Arc<Self>, name: &str) -> Result<Vec<String>, CoreError> {
        let mut dependents = std::collections::BTreeSet::new();
        let mut todo = vec![name.to_string()];
        while let Some(next) = todo.pop() {
            for dependent in self.get_dependents(&next) {
                if dependent != name && dependents.insert(dependent.clone()) {
                    todo.push(dependent);
                }
            }
        }
        let load_order = lock(&self.load_order).clone();
        let mut order: Vec<String> = load_order
            .iter()
            .rev()
            .filter(|n| dependents.contains(*n))
            .cloned()
            .collect();
        // Alive but not in the load order (still loading): last, by name.
        order.extend(dependents.into_iter().filter(|n| !load_order.contains(n)));
        order.push(name.to_string());
        for module in &order {
            self.unload_module(module)?;
        }
        Ok(order)
    }

    fn unload_unchecked(self: &Arc<Self>, name: &str, kind: UnloadKind) -> Result<(), CoreError> {
        let slot = self
            .get_slot(name)
            .ok_or_else(|| CoreError::NotFound(name.to_string()))?;
        let state = slot.state();
        let timeout = match state {
            ModuleState::Loaded | ModuleState::Failed(_) => self.config.stop_timeout,
            ModuleState::Hung(_) => Duration::ZERO,
            state => {
                return Err(CoreError::Busy {
                    name: name.to_string(),
                    state,
                });
            }
        };
        slot.set_state(ModuleState::Unloading);
        let _ = slot.queue_tx.send(Message::Stop(kind));
        self.finish_thread(&slot, timeout);
        self.bus.unsubscribe_all(&slot);
        slot.drain_queue(&CallError::Failed(format!("module {name} was unloaded")));
        write_modules(&self.modules).remove(name);
        lock(&self.load_order).retain(|n| n != name);
        self.commands.forget_module(name);
        tracing::info!("module {name} unloaded");
        self.emit(&events::ModuleUnloaded {
            name: name.to_string(),
        });
        Ok(())
    }

    fn reload_module(self: &Arc<Self>, name: &str) -> Result<(), CoreError> {
        let slot = self
            .get_slot(name)
            .ok_or_else(|| CoreError::NotFound(name.to_string()))?;
        let previous = slot.state();
        if !matches!(previous, ModuleState::Loaded | ModuleState::Failed(_)) {
            return Err(CoreError::Busy {
                name: name.to_string(),
                state: previous,
            });
        }
        let parsed = ModuleMeta::read(&slot.dir)?;
        if parsed.meta.disable_rust != slot.lua_only {
            return Err(CoreError::Refused(format!(
                "module {name}: disable_rust changed; unload and load it instead"
            )));
        }
        let started = Instant::now();
        // Build while the old version keeps running: a compile error leaves it serving.
        let artifact = if slot.lua_only {
            None
        } else {
            Some(self.builder.build(name, &slot.dir, &parsed.meta)?)
        };
        slot.set_state(ModuleState::Reloading);
        let start = if previous == ModuleState::Loaded {
            let _ = slot.queue_tx.send(Message::Stop(UnloadKind::Reload));
            if !self.finish_thread(&slot, self.config.stop_timeout) && lock(&slot.running).is_none()
            {
                tracing::warn!("module {name}: reloading over a leaked image");
            }
            StartKind::Continue
        } else {
            lock(&self.load_order).push(name.to_string());
            StartKind::Start
        };
        match self.run_instance(&slot, artifact.as_ref(), start) {
            Ok(()) => {
                slot.set_state(ModuleState::Loaded);
                *lock(&slot.meta) = parsed.meta;
                tracing::info!(
                    "module {name} reloaded in {} ms",
                    started.elapsed().as_millis()
                );
                Ok(())
            }
            Err(error) => {
                self.mark_failed(&slot, error.to_string());
                Err(error)
            }
        }
    }

    fn list_modules(&self) -> Vec<ModuleInfo> {
        let mut modules: Vec<ModuleInfo> = read_modules(&self.modules)
            .values()
            .map(|slot| {
                let status = lock(&slot.status).clone();
                ModuleInfo {
                    name: slot.name.clone(),
                    path: slot.dir.display().to_string(),
                    state: status.state,
                    build_hash: status.build_hash,
                    loaded_at_unix_ms: status.loaded_at_unix_ms,
                    load_index: status.load_index,
                }
            })
            .collect();
        modules.sort_by(|a, b| (a.load_index, &a.name).cmp(&(b.load_index, &b.name)));
        modules
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
