//! The module lifecycle: startup (`__loader` first, then its `load_all`),
//! loading a module (from a folder, or from the module paths by name;
//! refused while a required dependency is not loaded; built first, then its
//! instance started on its own thread), unloading (refused while loaded
//! modules depend on it, or after its dependents in reverse load order),
//! reloading (built while the old version keeps serving, then the queue
//! handed to the new instance; with it, every loaded module built against
//! an older version of a crate in its folder, its API: all built before
//! any is swapped, or none swapped), failed modules, joining a module's
//! thread and closing its library, and the module table and load order as
//! these change them (slots added and removed, load indexes, the module
//! list, the crates each module was built against).
//!
//! Does not own: finding modules and ordering a startup or a load with its
//! dependencies (`__loader`, asked through a call), building
//! (`crate::builder`), the module thread itself (`instance`), calls
//! (`calls`), shutdown and the host's threads (`mod.rs`).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use buildat_interface::core_api::{self, ModuleInfo, ModuleState};
use buildat_interface::meta::ModuleMeta;
use buildat_interface::{Call, CallError, UnloadKind, events};

use super::instance::{self, StartKind};
use super::slot::{ModuleSlot, lock, now_ms};
use super::{
    CONSOLE_CALLER, Core, CoreError, CoreInner, check_module_name, images, read_modules,
    write_modules,
};
use crate::builder::Artifact;

impl Core {
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
        self.inner.warn_unclaimed_settings();
        // Not for a headless command: `restore` takes the backup's
        // world.toml only into a world whose file is voxelworld's default.
        if !self
            .inner
            .config
            .extra
            .contains_key(buildat_interface::config::HEADLESS)
        {
            self.inner.write_setting_defaults();
        }
        let count = lock(&self.inner.load_order).len();
        tracing::info!(
            "server started: {count} modules loaded in {} ms",
            started.elapsed().as_millis()
        );
        // Before it, the network module accepts no player: one who came
        // while modules were loading would miss what they do on a connect
        // (the files announced, the bans checked).
        self.inner.started.store(true, Ordering::Release);
        self.inner.emit(&events::Started {});
        Ok(count)
    }

    /// Loads a module from `dir`, or from the module paths by name (the
    /// settings in `world.toml` read again first).
    pub fn load_module(&self, name: &str, dir: Option<&Path>) -> Result<(), CoreError> {
        self.inner.refresh_file_settings();
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

    /// Rebuilds `name` if its inputs changed, with every loaded module
    /// built against an older version of a crate in its folder (its API
    /// crate, used directly or not); builds them all before swapping any
    /// (a dependent that does not build leaves every one on its old code,
    /// with the compiler's message in the error), then swaps them in load
    /// order, each keeping its queue and the tmp data it stored. Answers
    /// which were reloaded and how long building and swapping took. The
    /// settings in `world.toml` are read again first.
    pub fn reload_module(&self, name: &str) -> Result<Reloaded, CoreError> {
        self.inner.refresh_file_settings();
        self.inner.reload(name)
    }

    pub fn list_modules(&self) -> Vec<ModuleInfo> {
        self.inner.list_modules()
    }
}

/// What a reload did: the module, the dependents reloaded with it (in
/// load order), and how long building and swapping took.
#[derive(Debug, Clone)]
pub struct Reloaded {
    pub name: String,
    pub dependents: Vec<String>,
    pub build: Duration,
    pub swap: Duration,
}

impl Reloaded {
    /// `reloaded` without the module's name, as the log says it:
    /// "reloaded with main, creatures in 12.3 s (build 11.9 s, swap 0.4 s)".
    fn describe_without_name(&self) -> String {
        let with = if self.dependents.is_empty() {
            String::new()
        } else {
            format!(" with {}", self.dependents.join(", "))
        };
        format!(
            "reloaded{with} in {} (build {}, swap {})",
            seconds(self.build + self.swap),
            seconds(self.build),
            seconds(self.swap)
        )
    }
}

/// "12.3 s", or "0.04 s" under a second.
fn seconds(duration: Duration) -> String {
    let seconds = duration.as_secs_f64();
    if seconds < 1.0 {
        format!("{seconds:.2} s")
    } else {
        format!("{seconds:.1} s")
    }
}

impl std::fmt::Display for Reloaded {
    /// "reloaded voxelworld with main, creatures in 12.3 s (build 11.9 s, swap 0.4 s)".
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let text = self.describe_without_name();
        let rest = text.strip_prefix("reloaded").unwrap_or(&text);
        write!(f, "reloaded {}{rest}", self.name)
    }
}

/// The crates a module depends on by path (canonical folders), each with
/// its hash ([`crate::builder::crate_hash`]) when the module was built.
pub(super) type BuiltAgainst = Vec<(PathBuf, String)>;

/// The crates the module in `dir` depends on by path, with their hashes
/// now (taken before building it, so a crate saved during the build counts
/// as changed later, never the reverse). Empty if its manifest cannot be read.
fn get_built_against(dir: &Path) -> BuiltAgainst {
    crate::builder::path_dependencies(dir)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|dir| {
            let hash = crate::builder::crate_hash(&dir).ok()?;
            Some((dir, hash))
        })
        .collect()
}

/// One module of a reload, built and waiting to be swapped in.
struct Swap {
    slot: Arc<ModuleSlot>,
    /// Its meta.json as built, kept once it runs.
    meta: ModuleMeta,
    /// `None` for a Lua-only module.
    artifact: Option<Artifact>,
    /// The crates it was built against, recorded once it runs.
    built_against: BuiltAgainst,
    /// Its state when the reload began (loaded, or failed for the module
    /// reloaded by name).
    previous: ModuleState,
}

impl CoreInner {
    pub fn get_slot(&self, name: &str) -> Option<Arc<ModuleSlot>> {
        read_modules(&self.modules).get(name).cloned()
    }

    /// The folder of module `name` in the module paths, first match.
    pub fn find_module(&self, name: &str) -> Option<PathBuf> {
        self.get_module_paths()
            .iter()
            .map(|path| path.join(name))
            .find(|dir| dir.join(buildat_interface::meta::META_FILE).is_file())
    }

    pub(super) fn load_module(
        self: &Arc<Self>,
        name: &str,
        dir: Option<&Path>,
    ) -> Result<(), CoreError> {
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

    /// The module's artifact (building it if needed); `None` for a Lua-only module.
    fn build(&self, slot: &ModuleSlot, meta: &ModuleMeta) -> Result<Option<Artifact>, CoreError> {
        if slot.lua_only {
            return Ok(None);
        }
        slot.set_state(ModuleState::Building);
        let built_against = get_built_against(&slot.dir);
        let artifact = self.builder.build(&slot.name, &slot.dir, meta)?;
        lock(&self.built_against).insert(slot.name.clone(), built_against);
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
            .place_unique(&artifact.path, &name)
            .map_err(|source| CoreError::Io {
                what: format!("module {name}: cannot place its library for loading"),
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
    pub(super) fn finish_thread(&self, slot: &ModuleSlot, timeout: Duration) -> bool {
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
    pub(super) fn unload_module(self: &Arc<Self>, name: &str) -> Result<(), CoreError> {
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

    pub(super) fn unload_unchecked(
        self: &Arc<Self>,
        name: &str,
        kind: UnloadKind,
    ) -> Result<(), CoreError> {
        let slot = self
            .get_slot(name)
            .ok_or_else(|| CoreError::NotFound(name.to_string()))?;
        let state = slot.state();
        let timeout = match state {
            ModuleState::Loaded | ModuleState::Failed(_) => self.config.stop_timeout,
            // Hung until the watchdog's next look; back in no handler now
            // (a long command that ended): stopped as a loaded one.
            ModuleState::Hung(_) if slot.activity.get_busy().is_none() => self.config.stop_timeout,
            ModuleState::Hung(_) => Duration::ZERO,
            state => {
                return Err(CoreError::Busy {
                    name: name.to_string(),
                    state,
                });
            }
        };
        slot.set_state(ModuleState::Unloading);
        slot.push_stop(kind);
        self.finish_thread(&slot, timeout);
        self.bus.unsubscribe_all(&slot);
        slot.drain_queue(&CallError::Failed(format!("module {name} was unloaded")));
        write_modules(&self.modules).remove(name);
        lock(&self.built_against).remove(name);
        lock(&self.load_order).retain(|n| n != name);
        self.commands.forget_module(name);
        tracing::info!("module {name} unloaded");
        self.emit(&events::ModuleUnloaded {
            name: name.to_string(),
        });
        Ok(())
    }

    /// Reloads `name` for the host's own callers (a reply of `()`).
    pub(super) fn reload_module(self: &Arc<Self>, name: &str) -> Result<(), CoreError> {
        self.reload(name).map(drop)
    }

    /// Rebuilds `name` and every loaded module built against an older
    /// version of its crates (its API), then swaps them all; see
    /// [`Core::reload_module`].
    pub(super) fn reload(self: &Arc<Self>, name: &str) -> Result<Reloaded, CoreError> {
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
        // Built while the old versions keep running: a compile error, the
        // module's or a dependent's, leaves every one of them serving.
        let built_against = get_built_against(&slot.dir);
        let artifact = if slot.lua_only {
            None
        } else {
            Some(self.builder.build(name, &slot.dir, &parsed.meta)?)
        };
        let mut group = vec![Swap {
            slot: slot.clone(),
            meta: parsed.meta,
            artifact,
            built_against,
            previous,
        }];
        for (dependent, meta) in self.get_stale_dependents(&slot)? {
            // Cargo built most of them with the module (its stale peers are
            // in the same run, see `builder/together.rs`): found by hash.
            let built_against = get_built_against(&dependent.dir);
            let artifact = self
                .builder
                .build(&dependent.name, &dependent.dir, &meta)
                .map_err(|source| CoreError::DependentBuild {
                    name: name.to_string(),
                    dependent: dependent.name.clone(),
                    source,
                })?;
            group.push(Swap {
                slot: dependent,
                meta,
                artifact: Some(artifact),
                built_against,
                previous: ModuleState::Loaded,
            });
        }
        let build = started.elapsed();
        let swapping = Instant::now();
        let result = self.swap(&mut group);
        let reloaded = Reloaded {
            name: name.to_string(),
            dependents: group
                .iter()
                .map(|swap| swap.slot.name.clone())
                .filter(|n| n != name)
                .collect(),
            build,
            swap: swapping.elapsed(),
        };
        result?;
        tracing::info!("module {name} {}", reloaded.describe_without_name());
        Ok(reloaded)
    }

    /// Loaded modules other than `owner` built against an older version
    /// of a crate in `owner`'s folder (its API crate, used directly or
    /// not): a crate they depend on by path whose hash changed since they
    /// were built. In load order. A module that has failed is left out
    /// (reloading it builds it); one that is busy (loading, reloading,
    /// hung) refuses the reload.
    fn get_stale_dependents(
        &self,
        owner: &ModuleSlot,
    ) -> Result<Vec<(Arc<ModuleSlot>, ModuleMeta)>, CoreError> {
        let Ok(owner_dir) = std::fs::canonicalize(&owner.dir) else {
            return Ok(Vec::new());
        };
        let mut slots: Vec<Arc<ModuleSlot>> =
            read_modules(&self.modules).values().cloned().collect();
        slots.sort_by_key(|slot| (lock(&slot.status).load_index, slot.name.clone()));
        let built_against = lock(&self.built_against).clone();
        let mut stale = Vec::new();
        for slot in slots {
            if slot.name == owner.name || slot.lua_only {
                continue;
            }
            let Some(crates) = built_against.get(&slot.name) else {
                continue;
            };
            let changed = crates.iter().any(|(dir, hash)| {
                dir.starts_with(&owner_dir)
                    && !crate::builder::crate_hash(dir).is_ok_and(|now| now == *hash)
            });
            if !changed {
                continue;
            }
            match slot.state() {
                ModuleState::Loaded => {
                    let meta = ModuleMeta::read(&slot.dir)
                        .map(|parsed| parsed.meta)
                        .unwrap_or_else(|_| lock(&slot.meta).clone());
                    stale.push((slot, meta));
                }
                ModuleState::Failed(_) => {}
                state => {
                    return Err(CoreError::Refused(format!(
                        "cannot reload {}: {} uses its changed API and must be reloaded with it, \
                         but it is {state:?}; nothing was reloaded",
                        owner.name, slot.name
                    )));
                }
            }
        }
        Ok(stale)
    }

    /// Swaps every module of `group` (built) to its new artifact: each is
    /// marked reloading (or none is, if one is no longer in the state it
    /// was built in), the running instances are stopped one after the
    /// other in reverse load order (a dependent's last calls still reach
    /// the old version of what it calls), then the new instances start in
    /// load order, each getting `core:continue`, the queue that waited
    /// and the tmp data its predecessor stored. One that fails to start is
    /// marked failed and the others still start; the first failure is
    /// returned.
    fn swap(self: &Arc<Self>, group: &mut [Swap]) -> Result<(), CoreError> {
        group.sort_by_key(|swap| (lock(&swap.slot.status).load_index, swap.slot.name.clone()));
        for (at, swap) in group.iter().enumerate() {
            let mut status = lock(&swap.slot.status);
            if status.state != swap.previous {
                let state = status.state.clone();
                drop(status);
                for earlier in &group[..at] {
                    earlier.slot.set_state(earlier.previous.clone());
                }
                return Err(CoreError::Busy {
                    name: swap.slot.name.clone(),
                    state,
                });
            }
            status.state = ModuleState::Reloading;
        }
        for swap in group.iter().rev() {
            let slot = &swap.slot;
            if swap.previous == ModuleState::Loaded {
                slot.push_stop(UnloadKind::Reload);
                if !self.finish_thread(slot, self.config.stop_timeout)
                    && lock(&slot.running).is_none()
                {
                    tracing::warn!("module {}: reloading over a leaked image", slot.name);
                }
            }
        }
        let mut first_error = None;
        for swap in group.iter_mut() {
            let slot = &swap.slot;
            let start = if swap.previous == ModuleState::Loaded {
                StartKind::Continue
            } else {
                lock(&self.load_order).push(slot.name.clone());
                StartKind::Start
            };
            match self.run_instance(slot, swap.artifact.as_ref(), start) {
                Ok(()) => {
                    slot.set_state(ModuleState::Loaded);
                    *lock(&slot.meta) = std::mem::take(&mut swap.meta);
                    if swap.artifact.is_some() {
                        lock(&self.built_against)
                            .insert(slot.name.clone(), std::mem::take(&mut swap.built_against));
                    }
                }
                Err(error) => {
                    tracing::error!("reloading: {error}");
                    self.mark_failed(slot, error.to_string());
                    first_error.get_or_insert(error);
                }
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    pub(super) fn list_modules(&self) -> Vec<ModuleInfo> {
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
                    queued: slot.queued() as u64,
                    times: slot.clock.times(),
                }
            })
            .collect();
        modules.sort_by(|a, b| (a.load_index, &a.name).cmp(&(b.load_index, &b.name)));
        modules
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reload_names_its_dependents_and_its_build_and_swap_times() {
        let mut reloaded = Reloaded {
            name: "voxelworld".into(),
            dependents: vec!["main".into(), "creatures".into()],
            build: Duration::from_millis(11_900),
            swap: Duration::from_millis(420),
        };
        assert_eq!(
            reloaded.to_string(),
            "reloaded voxelworld with main, creatures in 12.3 s (build 11.9 s, swap 0.42 s)"
        );
        reloaded.dependents.clear();
        reloaded.build = Duration::from_millis(30);
        assert_eq!(
            reloaded.to_string(),
            "reloaded voxelworld in 0.45 s (build 0.03 s, swap 0.42 s)"
        );
    }
}
