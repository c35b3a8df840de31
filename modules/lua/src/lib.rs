//! The `lua` module: server-side mods in Lua. Every module folder with
//! `server_lua/init.lua` (usually a `disable_rust` module depending on
//! `lua`) runs in its own sandboxed Luau VM, with the `buildat` table
//! (Luanti's names, `api`) over the native modules' typed calls. A saved
//! file loads its mod again in place within a tick: registrations
//! replaced, storage kept, entities kept (or rebuilt); a broken save
//! leaves the old version running and logs the Lua error with file and
//! line. A mod that errors, loops or eats memory past its limits
//! (`lua.*` settings) is stopped and named; the rest goes on.
//!
//! Owns: the mods in load order, registering what they declared with the
//! native modules as this module (blocks with `lua` as their handler,
//! commands, ABMs) and dispatching back to the mod that owns each, the
//! `after` jobs, stepping entities and telling voxelworld in one
//! `MoveNodes` a tick, the stash (entities across a reload of this
//! module). Does not own: the VM and its limits (`buildat-luau`), a mod's
//! VM and files (`mods.rs`), the bindings (`api`), items, recipes,
//! privileges and settings of mods (`api::game::apply`).

pub(crate) mod api;
pub(crate) mod entities;
pub(crate) mod mods;
pub(crate) mod storage;
pub mod testing;
#[cfg(test)]
mod tests;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::Instant;

use buildat_active_api::{AbmBatch, abm_event};
use buildat_interface::core_api::{ListModules, RegisterCommand, RunCommand};
use buildat_interface::events::{Continue, ModuleLoaded, ModuleUnloaded, Start, Tick};
use buildat_interface::settings::Settings;
use buildat_interface::stash::Stash;
use buildat_interface::{Host, Module, ModuleError, Receive, UnloadKind, export_module, log};
use buildat_main_api::{
    BlockActionKind, BlockActions, HasPrivilege, PlayerJoined, PlayerLeft, block_action_event,
};
use buildat_voxel::VoxelInstance;
use buildat_voxelworld_api::{
    MoveNodes, RegisterBlock, RemoveNodes, SpecialCause, SpecialVoxels, special_voxel_event,
};
use mlua::{Function, MultiValue, Value};
use serde::{Deserialize, Serialize};

use entities::LiveEntity;
use mods::{LuaMod, OnReload, Registrations, Shared};

buildat_interface::settings! {
    /// The limits of Lua mods (`--set lua.KEY=VALUE`).
    pub struct LuaSettings in "lua" {
        /// Memory of one mod's Lua VM, in MiB.
        pub memory_mb: u64 = 64,
        /// Milliseconds one call into a mod may run (a callback, a step, a command).
        pub call_ms: u64 = 50,
        /// Milliseconds a mod's Lua may run in one tick, all its calls together.
        #[live]
        pub tick_ms: u64 = 100,
        /// Errors a mod may raise in 10 seconds before it is stopped.
        #[live]
        pub max_errors: u32 = 20,
    }
}

/// Seconds between two looks for a place for the entities missing.
const SPAWN_RETRY: f64 = 1.0;

/// The module: every Lua mod.
pub struct LuaHost {
    shared: Rc<Shared>,
    /// In the order they loaded.
    mods: Vec<LuaMod>,
    /// Voxel type id → the mod and the index of its node.
    blocks: HashMap<u32, (String, usize)>,
    /// Command name → the mod that registered it.
    commands: HashMap<String, String>,
    /// Commands registered with the core by this module instance.
    registered: HashSet<String>,
    spawn_wait: f64,
    /// Entities of the previous instance, until their mods load.
    stashed: Vec<StashedEntity>,
    /// ABM batches not done yet, each run on over the next ticks as its
    /// mod's time allows, until its ABM's next batch replaces it.
    pending_abms: Vec<PendingAbm>,
    /// The state of the shuffle of ABM batches (xorshift64, never 0).
    shuffle: u64,
}

/// What is left of an ABM's batch: its voxels and their names, in the
/// (shuffled) order they run.
struct PendingAbm {
    name: String,
    voxels: std::collections::VecDeque<(buildat_voxel::geometry::Pos, Option<String>)>,
}

/// An entity carried across a reload of this module.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct StashedEntity {
    id: u64,
    mod_name: String,
    kind: String,
    home: [f64; 3],
    position: [f64; 3],
    yaw: f32,
    age: f64,
    staticdata: String,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Stashed {
    entities: Vec<StashedEntity>,
}

impl Stash for Stashed {
    const LAYOUT: u32 = 1;
}

impl Module for LuaHost {
    fn create(host: Host) -> Result<Self, ModuleError> {
        let settings = LuaSettings::read(&host)?;
        Ok(Self {
            shared: Rc::new(Shared::new(host, settings)),
            mods: Vec::new(),
            blocks: HashMap::new(),
            commands: HashMap::new(),
            registered: HashSet::new(),
            spawn_wait: 0.0,
            pending_abms: Vec::new(),
            shuffle: shuffle_seed(),
            stashed: Vec::new(),
        })
    }

    fn receive(table: &mut Receive<Self>) {
        let module = table.host().module_name();
        table
            .live_settings(|lua: &mut Self, settings: LuaSettings, _| {
                let mut held = lua.shared.settings.borrow_mut();
                held.tick_ms = settings.tick_ms;
                held.max_errors = settings.max_errors;
                Ok(format!(
                    "every mod's Lua may run {} ms a tick and raise {} errors in 10 s",
                    held.tick_ms, held.max_errors
                ))
            })
            .event(|lua: &mut Self, _: Start| {
                lua.discover();
                Ok(())
            })
            .event(|lua: &mut Self, _: Continue| {
                lua.discover();
                lua.restore_entities();
                Ok(())
            })
            .stash(Self::save, |lua, stashed: Stashed| {
                lua.stashed = stashed.entities;
                Ok(())
            })
            .event(|lua: &mut Self, loaded: ModuleLoaded| {
                if loaded.name == buildat_active_api::MODULE {
                    lua.register_abms_again();
                }
                lua.module_loaded(&loaded.name);
                Ok(())
            })
            .event(|lua: &mut Self, gone: ModuleUnloaded| {
                lua.remove_mod(&gone.name);
                Ok(())
            })
            .event(|lua: &mut Self, tick: Tick| {
                lua.tick(tick.dtime);
                Ok(())
            })
            .event(|lua: &mut Self, joined: PlayerJoined| {
                lua.on_player(&joined.name, true);
                Ok(())
            })
            .event(|lua: &mut Self, left: PlayerLeft| {
                lua.on_player(&left.name, false);
                Ok(())
            })
            .call(|lua: &mut Self, run: RunCommand| lua.run_command(run))
            .event_named(special_voxel_event(&module), |lua: &mut Self, told| {
                lua.on_special(told);
                Ok(())
            })
            .event_named(block_action_event(&module), |lua: &mut Self, told| {
                lua.on_block_actions(told);
                Ok(())
            })
            .event_named(abm_event(&module), |lua: &mut Self, batch| {
                lua.on_abm(batch);
                Ok(())
            });
    }

    fn unload(&mut self, kind: UnloadKind) -> Result<(), ModuleError> {
        if matches!(kind, UnloadKind::ForGood | UnloadKind::AfterFailure) {
            let ids: Vec<u64> = self.shared.entities.take().values().map(|e| e.id).collect();
            self.remove_nodes(ids);
        }
        Ok(())
    }
}

export_module!(LuaHost);

impl LuaHost {
    fn log(&self, level: log::Level, message: &str) {
        self.shared.host.log(level, message);
    }

    fn find(&mut self, name: &str) -> Option<&mut LuaMod> {
        self.mods.iter_mut().find(|m| m.name() == name)
    }

    /// Every loaded module that is a Lua mod and not running yet.
    fn discover(&mut self) {
        let modules = match self.shared.host.call(&ListModules {}) {
            Ok(modules) => modules,
            Err(error) => {
                self.log(log::Level::Error, &format!("listing the modules: {error}"));
                return;
            }
        };
        let mut modules: Vec<_> = modules
            .into_iter()
            .filter(|m| mods::is_lua_mod(Path::new(&m.path)))
            .collect();
        modules.sort_by_key(|m| m.load_index);
        for module in modules {
            if self.find(&module.name).is_none() {
                self.load(&module.name, &PathBuf::from(&module.path));
            }
        }
    }

    /// A module loaded (or reloaded): its mod runs (again).
    fn module_loaded(&mut self, name: &str) {
        let modules = self.shared.host.call(&ListModules {}).unwrap_or_default();
        let Some(module) = modules.into_iter().find(|m| m.name == name) else {
            return;
        };
        let dir = PathBuf::from(&module.path);
        if mods::is_lua_mod(&dir) {
            self.load(name, &dir);
        }
    }

    /// Loads the mod `name` (again): its new version replaces the old one
    /// only if its `init.lua` ran.
    fn load(&mut self, name: &str, dir: &Path) {
        let started = Instant::now();
        let again = self.find(name).is_some();
        match LuaMod::load(&self.shared, name, dir) {
            Ok(loaded) => {
                let what = summary(&loaded.data.reg.borrow());
                self.install(loaded);
                let verb = if again { "reloaded" } else { "loaded" };
                let ms = started.elapsed().as_secs_f64() * 1000.0;
                self.log(
                    log::Level::Info,
                    &format!("lua mod {name} {verb} in {ms:.1} ms ({what})"),
                );
            }
            Err(error) if error.torn => {}
            Err(error) => {
                let message = if again {
                    format!(
                        "lua mod {name}: {}; the previous version keeps running",
                        error.message
                    )
                } else {
                    format!("lua mod {name} did not load: {}", error.message)
                };
                self.log(log::Level::Error, &message);
                if let Some(running) = self.find(name) {
                    running.remember_broken(mods::stamps_of(dir));
                }
            }
        }
    }

    /// Puts a freshly loaded mod in place of its old version (or after the
    /// others) and registers what it declared.
    fn install(&mut self, mut new: LuaMod) {
        let name = new.name().to_string();
        let mut old = self
            .mods
            .iter()
            .position(|m| m.name() == name)
            .map(|at| self.mods.remove(at));
        let current = Rc::as_ptr(&new.data);
        self.shared
            .jobs
            .borrow_mut()
            .retain(|job| job.mod_name != name || std::ptr::eq(job.owner.as_ptr(), current));
        // Its entities: kept (handed over) or rebuilt.
        let mine: Vec<LiveEntity> = self
            .shared
            .entities
            .borrow()
            .values()
            .filter(|e| e.mod_name == name)
            .cloned()
            .collect();
        let mut gone = Vec::new();
        for entity in mine {
            let keep = new
                .data
                .reg
                .borrow()
                .entities
                .iter()
                .any(|d| d.name == entity.kind && d.on_reload == OnReload::Keep);
            let staticdata = match (&mut old, keep) {
                (Some(old), true) => old
                    .run(
                        || format!("get_staticdata of {}", entity.kind),
                        |lua| entities::staticdata(lua, entity.slot),
                    )
                    .unwrap_or_default(),
                _ => String::new(),
            };
            let data = Rc::clone(&new.data);
            let activated = keep
                && new
                    .run(
                        || format!("on_activate of {}", entity.kind),
                        |lua| {
                            let reg = data.reg.borrow();
                            match reg.entities.iter().find(|d| d.name == entity.kind) {
                                Some(def) => {
                                    entities::activate(lua, &entity, def, &staticdata).map(|_| true)
                                }
                                None => Ok(false),
                            }
                        },
                    )
                    .unwrap_or(false);
            if !activated {
                self.shared.entities.borrow_mut().remove(&entity.slot);
                gone.push(entity.id);
            }
        }
        self.remove_nodes(gone);
        // Its ABMs that are no more.
        if let Some(old) = &old {
            let new_abms: HashSet<String> = new
                .data
                .reg
                .borrow()
                .abms
                .iter()
                .map(|a| a.abm.name.clone())
                .collect();
            for abm in &old.data.reg.borrow().abms {
                if !new_abms.contains(&abm.abm.name) {
                    let _ = self.shared.ctx.borrow_mut().remove_abm(&abm.abm.name);
                }
            }
        }
        match new.data.reg.borrow_mut().published.take() {
            Some(table) => {
                self.shared
                    .published
                    .borrow_mut()
                    .insert(name.clone(), (Rc::clone(&new.vm), table));
            }
            None => {
                self.shared.published.borrow_mut().remove(&name);
            }
        }
        new.new_tick();
        self.mods.push(new);
        drop(old);
        self.register(&name);
    }

    /// Registers a mod's blocks, commands and ABMs with the native modules,
    /// and every mod's items, recipes, privileges and settings.
    fn register(&mut self, name: &str) {
        let Some(index) = self.mods.iter().position(|m| m.name() == name) else {
            return;
        };
        let data = Rc::clone(&self.mods[index].data);
        let reg = data.reg.borrow();
        let host = self.shared.host;
        let mut problems = Vec::new();
        self.blocks.retain(|_, (owner, _)| owner != name);
        for (at, node) in reg.nodes.iter().enumerate() {
            let block = buildat_voxel::BlockDefinition {
                handler_module: host.module_name(),
                ..node.definition.clone()
            };
            match host.call(&RegisterBlock { block }) {
                Ok(ids) => {
                    for id in ids {
                        self.blocks
                            .insert(VoxelInstance(id).type_id(), (name.to_string(), at));
                    }
                }
                Err(error) => problems.push(format!(
                    "registering the node {}: {error}",
                    node.definition.name
                )),
            }
        }
        if !reg.nodes.is_empty() {
            self.shared.ctx.borrow_mut().forget_registry();
        }
        self.commands.retain(|_, owner| owner != name);
        for command in &reg.commands {
            if let Some(owner) = self.commands.get(&command.name) {
                problems.push(format!("/{} is the mod {owner}'s already", command.name));
                continue;
            }
            self.commands.insert(command.name.clone(), name.to_string());
            if self.registered.contains(&command.name) {
                continue;
            }
            let register = RegisterCommand {
                name: command.name.clone(),
                usage: command.params.clone(),
                help: if command.description.is_empty() {
                    format!("(Lua mod {name})")
                } else {
                    format!("{} (Lua mod {name})", command.description)
                },
                privilege: command.privileges.first().cloned(),
            };
            match host.call(&register) {
                Ok(()) => {
                    self.registered.insert(command.name.clone());
                }
                Err(error) => problems.push(format!("registering /{}: {error}", command.name)),
            }
        }
        for abm in &reg.abms {
            let a = &abm.abm;
            let nodes: Vec<&str> = a.nodes.iter().map(String::as_str).collect();
            let neighbours: Vec<&str> = a.neighbours.iter().map(String::as_str).collect();
            let registered = self.shared.ctx.borrow_mut().register_abm(
                &a.name,
                &nodes,
                &neighbours,
                a.interval_seconds,
                a.chance,
            );
            if let Err(error) = registered {
                problems.push(format!("registering the ABM {}: {error}", a.name));
            }
        }
        drop(reg);
        self.apply_game(&mut problems);
        for problem in problems {
            self.log(log::Level::Warn, &format!("lua mod {name}: {problem}"));
        }
    }

    /// Every running mod's items, recipes, privileges and settings.
    fn apply_game(&self, problems: &mut Vec<String>) {
        let all: Vec<_> = self.mods.iter().map(|m| m.data.reg.borrow()).collect();
        let all: Vec<&Registrations> = all.iter().map(|r| &**r).collect();
        if let Err(error) = api::game::apply(&self.shared, &all) {
            problems.push(error.to_string());
        }
    }

    fn register_abms_again(&mut self) {
        let names: Vec<String> = self.mods.iter().map(|m| m.name().to_string()).collect();
        for name in names {
            self.register(&name);
        }
    }

    /// A module unloaded for good: its mod goes, with its entities, jobs,
    /// commands, ABMs, items and recipes.
    fn remove_mod(&mut self, name: &str) {
        let Some(at) = self.mods.iter().position(|m| m.name() == name) else {
            return;
        };
        let gone = self.mods.remove(at);
        self.shared
            .jobs
            .borrow_mut()
            .retain(|job| job.mod_name != name);
        self.shared.published.borrow_mut().remove(name);
        let mut ids = Vec::new();
        self.shared.entities.borrow_mut().retain(|_, e| {
            if e.mod_name == name {
                ids.push(e.id);
            }
            e.mod_name != name
        });
        self.remove_nodes(ids);
        self.commands.retain(|_, owner| owner != name);
        self.blocks.retain(|_, (owner, _)| owner != name);
        for abm in &gone.data.reg.borrow().abms {
            let _ = self.shared.ctx.borrow_mut().remove_abm(&abm.abm.name);
        }
        drop(gone);
        let mut problems = Vec::new();
        self.apply_game(&mut problems);
        for problem in problems {
            self.log(log::Level::Warn, &problem);
        }
        self.log(log::Level::Info, &format!("lua mod {name} unloaded"));
    }

    fn remove_nodes(&self, ids: Vec<u64>) {
        if ids.is_empty() {
            return;
        }
        if let Err(error) = self.shared.host.call(&RemoveNodes { ids }) {
            self.log(log::Level::Warn, &format!("removing entities: {error}"));
        }
    }

    fn tick(&mut self, dtime: f64) {
        let shared = Rc::clone(&self.shared);
        shared.clock.set(shared.clock.get() + dtime);
        for m in &mut self.mods {
            m.new_tick();
        }
        self.run_pending_abms();
        self.reload_changed();
        self.run_jobs();
        for m in &mut self.mods {
            let steps = m.data.reg.borrow().globalsteps.clone();
            for step in steps {
                let _ = m.run(|| "a globalstep".to_string(), |_| step.call::<()>(dtime));
            }
        }
        self.spawn_wait -= dtime;
        if self.spawn_wait <= 0.0 {
            self.spawn_wait = SPAWN_RETRY;
            self.spawn_missing();
        }
        self.step_entities(dtime);
    }

    /// Mods whose files were saved load again.
    fn reload_changed(&mut self) {
        let changed: Vec<(String, PathBuf)> = self
            .mods
            .iter()
            .filter(|m| m.changed_files().is_some())
            .map(|m| (m.name().to_string(), m.data.dir.clone()))
            .collect();
        for (name, dir) in changed {
            self.load(&name, &dir);
        }
    }

    fn run_jobs(&mut self) {
        let now = self.shared.clock.get();
        let due: Vec<_> = {
            let mut jobs = self.shared.jobs.borrow_mut();
            let (due, later) = std::mem::take(&mut *jobs)
                .into_iter()
                .partition(|job| job.due <= now);
            *jobs = later;
            due
        };
        for job in due {
            if job.cancelled.get() || job.owner.strong_count() == 0 {
                continue;
            }
            if let Some(m) = self.find(&job.mod_name) {
                let args: MultiValue = job.args.into_iter().collect();
                let _ = m.run(
                    || "an after() job".to_string(),
                    |_| job.run.call::<()>(args),
                );
            }
        }
    }

    /// Makes the entities each kind keeps and lacks.
    fn spawn_missing(&mut self) {
        let shared = Rc::clone(&self.shared);
        let mut gone = Vec::new();
        for m in &mut self.mods {
            if m.status != mods::Status::Running {
                continue;
            }
            let wanted: Vec<(String, usize, Option<Function>)> = m
                .data
                .reg
                .borrow()
                .entities
                .iter()
                .filter(|d| d.keep > 0)
                .map(|d| (d.name.clone(), d.keep, d.place.clone()))
                .collect();
            for (kind, keep, place) in wanted {
                let alive = shared
                    .entities
                    .borrow()
                    .values()
                    .filter(|e| e.mod_name == m.name() && e.kind == kind)
                    .count();
                let mut places = Vec::new();
                for _ in alive..keep {
                    let at = match &place {
                        Some(place) => m
                            .run(
                                || format!("place of {kind}"),
                                |lua| match place.call::<Value>(())? {
                                    Value::Nil => Ok(None),
                                    at => api::fpos_from_lua(lua, &at).map(Some),
                                },
                            )
                            .ok()
                            .flatten(),
                        None => shared.ctx.borrow_mut().spawn_point().ok().flatten(),
                    };
                    match at {
                        Some(at) => places.push(at),
                        None => break,
                    }
                }
                if places.is_empty() {
                    continue;
                }
                let data = Rc::clone(&m.data);
                let made = {
                    let reg = data.reg.borrow();
                    let Some(def) = reg.entities.iter().find(|d| d.name == kind) else {
                        continue;
                    };
                    let made: Vec<_> = places.iter().map(|&at| (def, at)).collect();
                    entities::create(&shared, m.name(), &made)
                };
                let made = match made {
                    Ok(made) => made,
                    Err(error) => {
                        shared
                            .host
                            .log(log::Level::Warn, &format!("making {kind}: {error}"));
                        continue;
                    }
                };
                for entity in made.into_iter().flatten() {
                    let activated = m.run(
                        || format!("on_activate of {kind}"),
                        |lua| {
                            let reg = data.reg.borrow();
                            match reg.entities.iter().find(|d| d.name == kind) {
                                Some(def) => entities::activate(lua, &entity, def, "").map(drop),
                                None => Ok(()),
                            }
                        },
                    );
                    if activated.is_ok() {
                        shared.entities.borrow_mut().insert(entity.slot, entity);
                    } else {
                        gone.push(entity.id);
                    }
                }
            }
        }
        self.remove_nodes(gone);
    }

    /// Every mod's entities stepped (one entry into each mod's VM), then
    /// one `MoveNodes` for those that moved and one `RemoveNodes` for
    /// those removed.
    fn step_entities(&mut self, dtime: f64) {
        let shared = Rc::clone(&self.shared);
        let with_entities: HashSet<String> = {
            let mut entities = shared.entities.borrow_mut();
            for entity in entities.values_mut() {
                entity.age += dtime;
            }
            entities.values().map(|e| e.mod_name.clone()).collect()
        };
        let mut moved = Vec::new();
        for m in self
            .mods
            .iter_mut()
            .filter(|m| with_entities.contains(m.name()))
        {
            if let Ok(stepped) = m.run(
                || "its entities' on_step".to_string(),
                |lua| entities::step(lua, dtime),
            ) {
                moved.extend(stepped.moved);
                m.errors("on_step", stepped.errors);
            }
        }
        let mut moves = Vec::new();
        let mut removed = Vec::new();
        {
            let mut entities = shared.entities.borrow_mut();
            for step in moved {
                let Some(entity) = entities.get_mut(&step.slot) else {
                    continue;
                };
                if step.removed {
                    removed.push(entity.id);
                    entities.remove(&step.slot);
                    continue;
                }
                moves.push(buildat_modkit::motion(
                    entity.id,
                    entity.position,
                    step.position,
                    step.yaw,
                    dtime,
                ));
                (entity.position, entity.yaw) = (step.position, step.yaw);
            }
        }
        if !moves.is_empty() {
            match shared.host.call(&MoveNodes { moves }) {
                Ok(lost) if !lost.is_empty() => self.forget_entities(&lost),
                Ok(_) => {}
                Err(error) => self.log(log::Level::Warn, &format!("moving entities: {error}")),
            }
        }
        self.remove_nodes(removed);
    }

    /// Entities whose nodes the world lost (their section unloaded): gone
    /// here and in their mods' VMs (kept kinds are made again).
    fn forget_entities(&mut self, ids: &[u64]) {
        let lost: Vec<LiveEntity> = {
            let mut entities = self.shared.entities.borrow_mut();
            let lost: Vec<u32> = entities
                .values()
                .filter(|e| ids.contains(&e.id))
                .map(|e| e.slot)
                .collect();
            lost.iter()
                .filter_map(|slot| entities.remove(slot))
                .collect()
        };
        for entity in lost {
            if let Some(m) = self.find(&entity.mod_name) {
                let _ = m.run(
                    || "forgetting a lost entity".to_string(),
                    |lua| entities::forget(lua, entity.slot),
                );
            }
        }
    }

    /// Every mod's `register_on_joinplayer` (or `..._leaveplayer`) callbacks.
    fn on_player(&mut self, name: &str, joined: bool) {
        for m in &mut self.mods {
            let callbacks = {
                let reg = m.data.reg.borrow();
                if joined {
                    reg.on_join.clone()
                } else {
                    reg.on_leave.clone()
                }
            };
            for callback in callbacks {
                let what = if joined {
                    "on_joinplayer"
                } else {
                    "on_leaveplayer"
                };
                let _ = m.run(|| what.to_string(), |_| callback.call::<()>(name));
            }
        }
    }

    fn run_command(&mut self, run: RunCommand) -> Result<String, ModuleError> {
        let Some(owner) = self.commands.get(&run.name).cloned() else {
            return Err(ModuleError::UnknownFunction(format!(
                "run_command {} (no Lua mod has it now)",
                run.name
            )));
        };
        let host = self.shared.host;
        let Some(m) = self.find(&owner) else {
            return Err(ModuleError::msg(format!("the lua mod {owner} is gone")));
        };
        let Some((func, privileges)) = m
            .data
            .reg
            .borrow()
            .commands
            .iter()
            .find(|c| c.name == run.name)
            .map(|c| (c.func.clone(), c.privileges.clone()))
        else {
            return Err(ModuleError::msg(format!("/{} is gone", run.name)));
        };
        if let Some(player) = &run.by {
            for privilege in privileges.iter().skip(1) {
                let has = host.call(&HasPrivilege {
                    player: player.clone(),
                    privilege: privilege.clone(),
                })?;
                if !has {
                    return Err(ModuleError::msg(format!(
                        "/{} needs the privilege {privilege}",
                        run.name
                    )));
                }
            }
        }
        let param = run.args.join(" ");
        let name = run.name.clone();
        let answer = m
            .run(
                || format!("/{name}"),
                |_| func.call::<MultiValue>((run.by, param)),
            )
            .map_err(ModuleError::msg)?;
        let mut values = answer.into_iter();
        match (values.next(), values.next()) {
            (Some(Value::Boolean(false)), text) => Err(ModuleError::msg(text_of(text))),
            (Some(Value::Boolean(true)), text) => Ok(text_of(text)),
            (first, _) => Ok(text_of(first)),
        }
    }

    fn on_special(&mut self, told: SpecialVoxels) {
        for special in told.voxels {
            let (voxel, which) = match special.cause {
                SpecialCause::Dug => (special.previous, Hook::Dig),
                SpecialCause::Placed => (special.voxel, Hook::Place),
                SpecialCause::NeighbourChanged { .. } => (special.voxel, Hook::Touch),
            };
            self.run_block(voxel, special.pos, special.by, which);
        }
    }

    fn on_block_actions(&mut self, told: BlockActions) {
        for action in told.actions {
            let which = match action.kind {
                BlockActionKind::Punch => Hook::Punch,
                BlockActionKind::Use => Hook::Use,
            };
            self.run_block(action.voxel, action.pos, Some(action.player), which);
        }
    }

    /// Runs the hook of the node of `voxel` at `pos`, with the player.
    fn run_block(&mut self, voxel: u32, pos: [i32; 3], player: Option<String>, which: Hook) {
        let Some((owner, at)) = self.blocks.get(&VoxelInstance(voxel).type_id()).cloned() else {
            return;
        };
        let Some(m) = self.find(&owner) else {
            return;
        };
        let hook = m.data.reg.borrow().nodes.get(at).and_then(|node| {
            let hook = match which {
                Hook::Place => &node.on_place,
                Hook::Dig => &node.on_dig,
                Hook::Touch => &node.on_touch,
                Hook::Punch => &node.on_punch,
                Hook::Use => &node.on_use,
            };
            hook.clone()
                .map(|hook| (hook, node.definition.name.clone()))
        });
        let Some((hook, node)) = hook else {
            return;
        };
        let _ = m.run(
            || format!("{} of {node} at {pos:?}", which.word()),
            |lua| hook.call::<()>((api::pos_to_lua(lua, pos)?, player)),
        );
    }

    /// An ABM's batch: shuffled (so a batch larger than the mod's time
    /// does not leave the same voxels out every time), replacing what was
    /// left of the ABM's previous batch, then run as far as the mod's time
    /// goes this tick and on over the next ticks.
    fn on_abm(&mut self, batch: AbmBatch) {
        let mut voxels: Vec<(buildat_voxel::geometry::Pos, Option<String>)> = {
            let mut ctx = self.shared.ctx.borrow_mut();
            batch
                .voxels
                .iter()
                .map(|&(pos, voxel)| (pos, ctx.voxel_name(voxel).ok()))
                .collect()
        };
        for i in (1..voxels.len()).rev() {
            self.shuffle ^= self.shuffle << 13;
            self.shuffle ^= self.shuffle >> 7;
            self.shuffle ^= self.shuffle << 17;
            voxels.swap(i, (self.shuffle % (i as u64 + 1)) as usize);
        }
        self.pending_abms.retain(|p| p.name != batch.name);
        self.pending_abms.push(PendingAbm {
            name: batch.name,
            voxels: voxels.into(),
        });
        self.run_pending_abms();
    }

    /// Runs the ABMs' pending voxels, one entry a voxel (a batch may hold
    /// thousands, and each action's calls cross to other modules), each
    /// mod as far as its time this tick goes; the rest waits for the next
    /// tick. A batch whose mod or ABM is gone, or whose mod is stopped, is
    /// dropped.
    fn run_pending_abms(&mut self) {
        let mut pending = std::mem::take(&mut self.pending_abms);
        pending.retain_mut(|batch| self.run_abm(batch));
        // Batches that came while these ran (none: actions do not send
        // batches) go after them.
        pending.append(&mut self.pending_abms);
        self.pending_abms = pending;
    }

    /// Runs `batch` while its mod has time; whether some of it is left.
    fn run_abm(&mut self, batch: &mut PendingAbm) -> bool {
        let Some(owner) = batch.name.split('/').next().map(str::to_string) else {
            return false;
        };
        let Some(m) = self.find(&owner) else {
            return false;
        };
        let Some(action) = m
            .data
            .reg
            .borrow()
            .abms
            .iter()
            .find(|a| a.abm.name == batch.name)
            .map(|a| a.action.clone())
        else {
            return false;
        };
        let label = batch.name.as_str();
        while let Some((pos, name)) = batch.voxels.front().cloned() {
            if m.status != mods::Status::Running {
                return false;
            }
            if !m.has_time_for_a_call() {
                return true;
            }
            batch.voxels.pop_front();
            let _ = m.run(
                || format!("the ABM {label} at {pos:?}"),
                |lua| {
                    let node = lua.create_table()?;
                    node.raw_set("name", name)?;
                    action.call::<()>((api::pos_to_lua(lua, pos)?, node))
                },
            );
        }
        false
    }

    /// The stash: every entity, with what its `get_staticdata` answers.
    fn save(&mut self) -> Stashed {
        let list: Vec<LiveEntity> = self.shared.entities.take().into_values().collect();
        let mut stashed = Vec::new();
        for entity in list {
            let staticdata = match self.find(&entity.mod_name) {
                Some(m) => m
                    .run(
                        || format!("get_staticdata of {}", entity.kind),
                        |lua| entities::staticdata(lua, entity.slot),
                    )
                    .unwrap_or_default(),
                None => String::new(),
            };
            stashed.push(StashedEntity {
                id: entity.id,
                mod_name: entity.mod_name,
                kind: entity.kind,
                home: entity.home,
                position: entity.position,
                yaw: entity.yaw,
                age: entity.age,
                staticdata,
            });
        }
        Stashed { entities: stashed }
    }

    /// The previous instance's entities, handed to their mods (those of a
    /// mod or kind gone are removed).
    fn restore_entities(&mut self) {
        let mut gone = Vec::new();
        for stashed in std::mem::take(&mut self.stashed) {
            let entity = LiveEntity {
                slot: self.shared.new_slot(),
                id: stashed.id,
                mod_name: stashed.mod_name,
                kind: stashed.kind,
                home: stashed.home,
                position: stashed.position,
                yaw: stashed.yaw,
                age: stashed.age,
            };
            let Some(m) = self.find(&entity.mod_name) else {
                gone.push(entity.id);
                continue;
            };
            let data = Rc::clone(&m.data);
            let activated = m.run(
                || format!("on_activate of {}", entity.kind),
                |lua| {
                    let reg = data.reg.borrow();
                    match reg.entities.iter().find(|d| d.name == entity.kind) {
                        Some(def) => {
                            entities::activate(lua, &entity, def, &stashed.staticdata).map(|_| true)
                        }
                        None => Ok(false),
                    }
                },
            );
            if activated == Ok(true) {
                self.shared
                    .entities
                    .borrow_mut()
                    .insert(entity.slot, entity);
            } else {
                gone.push(entity.id);
            }
        }
        self.remove_nodes(gone);
    }
}

/// What a command's second answer (or only one) says.
fn text_of(value: Option<Value>) -> String {
    match value {
        Some(Value::String(text)) => text.to_string_lossy(),
        Some(Value::Nil) | None => String::new(),
        Some(other) => format!("{other:?}"),
    }
}

/// The node hooks.
#[derive(Debug, Clone, Copy)]
enum Hook {
    Place,
    Dig,
    Touch,
    Punch,
    Use,
}

impl Hook {
    fn word(self) -> &'static str {
        match self {
            Hook::Place => "on_place",
            Hook::Dig => "on_dig",
            Hook::Touch => "on_touch",
            Hook::Punch => "on_punch",
            Hook::Use => "on_use",
        }
    }
}

/// "2 commands, 1 node, ..." of what a mod registered.
fn summary(reg: &Registrations) -> String {
    let parts = [
        (reg.commands.len(), "command"),
        (reg.nodes.len(), "node"),
        (reg.items.len(), "item"),
        (reg.recipes.len(), "recipe"),
        (reg.abms.len(), "ABM"),
        (reg.entities.len(), "entity kind"),
    ];
    let said: Vec<String> = parts
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{n} {what}{}", if *n == 1 { "" } else { "s" }))
        .collect();
    if said.is_empty() {
        "nothing registered".to_string()
    } else {
        said.join(", ")
    }
}

/// A seed for the shuffle of ABM batches: the clock's nanoseconds, never 0.
fn shuffle_seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    nanos | 1
}
