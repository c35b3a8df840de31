//! The Lua mods: finding them (module folders with `server_lua/init.lua`),
//! running each in its own Luau VM, noticing a saved file and loading the
//! mod again in place, stopping one past its limits, and what every binding
//! reaches ([`Shared`], [`ModData`], [`Registrations`]).
//!
//! Owns: [`LuaMod`] (a mod's VM, its files' stamps, whether it runs, its
//! errors), one entry into a mod's Lua with the limits applied
//! ([`LuaMod::run`]), loading a mod's `init.lua` into a fresh VM
//! ([`LuaMod::load`]). Does not own: registering what a mod declared with
//! the native modules (`lib.rs`, and `api::game::apply`), the bindings
//! (`api`), entities (`entities.rs`).
//!
//! Invariants:
//! - A mod's `init.lua` runs in a fresh VM; only when it succeeds does the
//!   new VM replace the old one (a broken save leaves the old running).
//! - A mod past its memory or time limit, or with more than
//!   `lua.max_errors` errors in 10 s, is stopped and named once with the
//!   file and line; only a saved file runs it again.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::{Duration, Instant, SystemTime};

use buildat_interface::settings::SettingInfo;
use buildat_interface::{Host, log};
use buildat_luau::{Failure, FailureKind, Limits, Vm};
use buildat_modkit::Ctx;
use buildat_voxel::BlockDefinition;
use mlua::{Function, Lua, Table};

use crate::LuaSettings;
use crate::entities::LiveEntity;

/// The folder of a mod's server code, in its module folder.
pub const SERVER_LUA: &str = "server_lua";
/// The file a mod starts from, in [`SERVER_LUA`].
pub const INIT_FILE: &str = "init.lua";
/// How long a mod's errors are counted for `lua.max_errors`.
const ERROR_WINDOW: Duration = Duration::from_secs(10);
/// How many files a mod's `server_lua/` may hold (what is polled).
const MAX_FILES: usize = 256;

/// What every binding reaches: one per module instance, shared by all the
/// mods' VMs (all on the module's thread).
pub(crate) struct Shared {
    pub host: Host,
    /// Voxel names and ids, chat, players, ABMs.
    pub ctx: RefCell<Ctx>,
    /// `lua.*`: `tick_ms` and `max_errors` are live (read at each use),
    /// `memory_mb` and `call_ms` apply to each mod's next VM.
    pub settings: RefCell<LuaSettings>,
    /// Every mod's entities, by slot.
    pub entities: RefCell<BTreeMap<u32, LiveEntity>>,
    /// The slot the next entity gets.
    pub next_slot: Cell<u32>,
    /// `buildat.after` jobs, every mod's.
    pub jobs: RefCell<Vec<Job>>,
    /// Seconds of game time since the module started (what jobs wait on).
    pub clock: Cell<f64>,
    /// What each mod published (`buildat.publish`): its VM and its table.
    pub published: RefCell<HashMap<String, (Rc<Vm>, Table)>>,
}

impl Shared {
    pub fn new(host: Host, settings: LuaSettings) -> Self {
        Self {
            host,
            ctx: RefCell::new(Ctx::new(host)),
            settings: RefCell::new(settings),
            entities: RefCell::default(),
            next_slot: Cell::new(1),
            jobs: RefCell::default(),
            clock: Cell::new(0.0),
            published: RefCell::default(),
        }
    }

    /// A slot for a new entity.
    pub fn new_slot(&self) -> u32 {
        let slot = self.next_slot.get();
        self.next_slot.set(slot.wrapping_add(1));
        slot
    }
}

/// A `buildat.after` job.
pub(crate) struct Job {
    pub mod_name: String,
    /// The version of the mod that made it (a reload drops the old
    /// version's jobs, not those the new one's `init.lua` made).
    pub owner: std::rc::Weak<ModData>,
    pub due: f64,
    pub run: Function,
    pub args: Vec<mlua::Value>,
    pub cancelled: Rc<Cell<bool>>,
}

/// One mod's VM's data (`lua.app_data_ref::<Rc<ModData>>()`, see
/// `api::mod_data`).
pub(crate) struct ModData {
    /// The mod's module name (its folder's).
    pub name: String,
    /// Its module folder.
    pub dir: PathBuf,
    pub shared: Rc<Shared>,
    pub reg: RefCell<Registrations>,
    /// True while its `init.lua` runs: the only time it may register.
    pub loading: Cell<bool>,
}

/// What a mod declared while its `init.lua` ran.
#[derive(Default)]
pub(crate) struct Registrations {
    pub commands: Vec<ChatCommand>,
    pub nodes: Vec<NodeDef>,
    pub abms: Vec<AbmDef>,
    pub entities: Vec<EntityDef>,
    /// `register_globalstep`: run every tick with the seconds since the last.
    pub globalsteps: Vec<Function>,
    /// `register_on_joinplayer`: run with a player's name when they join.
    pub on_join: Vec<Function>,
    /// `register_on_leaveplayer`: run with a player's name when they leave.
    pub on_leave: Vec<Function>,
    /// What the mod offers other mods (`buildat.publish`).
    pub published: Option<Table>,
    pub items: Vec<buildat_items_api::ItemDef>,
    pub recipes: Vec<buildat_crafting_api::Recipe>,
    /// Name and description.
    pub privileges: Vec<(String, String)>,
    pub settings: Vec<SettingInfo>,
}

/// `buildat.register_chatcommand`.
pub(crate) struct ChatCommand {
    pub name: String,
    pub params: String,
    pub description: String,
    /// Every privilege it needs (the first is the one chat checks; the
    /// others are checked before it runs).
    pub privileges: Vec<String>,
    pub func: Function,
}

/// `buildat.register_node`.
pub(crate) struct NodeDef {
    pub definition: BlockDefinition,
    /// What its item is called for people.
    pub description: String,
    /// Its item's groups (how it is dug): Luanti's `groups = {crumbly = 3}`.
    pub groups: std::collections::BTreeMap<String, i32>,
    pub on_place: Option<Function>,
    pub on_dig: Option<Function>,
    pub on_touch: Option<Function>,
    pub on_punch: Option<Function>,
    pub on_use: Option<Function>,
}

/// `buildat.register_abm`: the ABM as the `active` module gets it (named
/// `MOD/LABEL`) and its action.
pub(crate) struct AbmDef {
    pub abm: buildat_active_api::Abm,
    pub action: Function,
}

/// What to do with a kind's entities when its mod is saved again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OnReload {
    /// They stay where they are; `get_staticdata` of the old version is
    /// handed to `on_activate` of the new.
    Keep,
    /// They are removed, and made again as `keep` says.
    Rebuild,
}

/// `buildat.register_entity`.
pub(crate) struct EntityDef {
    pub name: String,
    /// The definition as the mod gave it (`self`'s `__index`: its
    /// `on_activate`, `on_step` and `get_staticdata` are called from there).
    pub table: Table,
    pub colour: [u8; 3],
    pub size: [f32; 3],
    pub model: Option<String>,
    /// How many the host keeps in the world.
    pub keep: usize,
    pub place: Option<Function>,
    pub on_reload: OnReload,
}

/// Whether a mod runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Status {
    Running,
    /// Past a limit: why, with file and line.
    Stopped(String),
}

/// A file's stamp: what a save changes.
type Stamp = (PathBuf, SystemTime, u64);

/// One Lua mod.
pub(crate) struct LuaMod {
    pub data: Rc<ModData>,
    pub vm: Rc<Vm>,
    pub status: Status,
    /// The stamps of its `server_lua/` files when it was loaded.
    stamps: Vec<Stamp>,
    /// A broken version's stamps: not tried again until they change.
    failed_stamps: Option<Vec<Stamp>>,
    errors: VecDeque<Instant>,
    /// Time its Lua ran this tick.
    tick_used: Duration,
}

/// The stamps of the `.lua` files under `dir/server_lua`, sorted.
pub(crate) fn stamps_of(dir: &Path) -> Vec<Stamp> {
    let mut stamps = Vec::new();
    let mut folders = vec![dir.join(SERVER_LUA)];
    while let Some(folder) = folders.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(meta) = entry.metadata() else {
                continue;
            };
            if meta.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|e| e == "lua") && stamps.len() < MAX_FILES {
                let modified = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
                stamps.push((path, modified, meta.len()));
            }
        }
    }
    stamps.sort();
    stamps
}

/// How long an empty file waits before it is taken as empty: an editor
/// that truncates a file and then writes it may be polled in between.
const EMPTY_SETTLE: Duration = Duration::from_millis(500);

/// Whether one of the files is empty and was saved a moment ago (so may
/// be a save caught between its truncation and its write).
fn being_written(stamps: &[Stamp], now: SystemTime) -> bool {
    stamps.iter().any(|(_, modified, len)| {
        *len == 0
            && now
                .duration_since(*modified)
                .is_ok_and(|age| age < EMPTY_SETTLE)
    })
}

/// Whether a module folder holds a Lua mod.
pub(crate) fn is_lua_mod(dir: &Path) -> bool {
    dir.join(SERVER_LUA).join(INIT_FILE).is_file()
}

/// Why a mod could not be loaded.
pub(crate) struct LoadError {
    pub message: String,
    /// The files changed while they were read: try again, say nothing.
    pub torn: bool,
}

impl LuaMod {
    /// Loads the mod `name` from `dir`: a fresh VM runs `init.lua`. The
    /// registrations it made are in the answer's `data.reg`.
    pub fn load(shared: &Rc<Shared>, name: &str, dir: &Path) -> Result<Self, LoadError> {
        let before = stamps_of(dir);
        let fail = |message: String| {
            let torn = stamps_of(dir) != before;
            LoadError { message, torn }
        };
        let settings = shared.settings.borrow().clone();
        let vm = Vm::new(Limits {
            memory_bytes: settings.memory_mb.saturating_mul(1 << 20) as usize,
            time_per_entry: Duration::from_millis(settings.call_ms.max(1)),
        })
        .map_err(|e| fail(format!("cannot make its Lua VM: {e}")))?;
        let data = Rc::new(ModData {
            name: name.to_string(),
            dir: dir.to_path_buf(),
            shared: Rc::clone(shared),
            reg: RefCell::new(Registrations::default()),
            loading: Cell::new(true),
        });
        let init = dir.join(SERVER_LUA).join(INIT_FILE);
        let source = std::fs::read(&init)
            .map_err(|e| fail(format!("cannot read {}: {e}", init.display())))?;
        let ran = vm.enter(None, || {
            let env = crate::api::environment(vm.lua(), &vm, Rc::clone(&data))?;
            crate::api::run_file(vm.lua(), &source, &chunk_name(name, INIT_FILE), env)
        });
        data.loading.set(false);
        if let Err(failure) = ran {
            return Err(fail(failure.to_string()));
        }
        Ok(Self {
            data,
            vm: Rc::new(vm),
            status: Status::Running,
            stamps: before,
            failed_stamps: None,
            errors: VecDeque::new(),
            tick_used: Duration::ZERO,
        })
    }

    pub fn name(&self) -> &str {
        &self.data.name
    }

    /// Whether its files changed since it was loaded (and since the last
    /// broken version was tried): the stamps now, if so.
    pub fn changed_files(&self) -> Option<Vec<Stamp>> {
        let now = stamps_of(&self.data.dir);
        let changed = now != self.stamps && self.failed_stamps.as_ref() != Some(&now);
        (changed && !being_written(&now, SystemTime::now())).then_some(now)
    }

    /// A save that did not load: not tried again until it changes.
    pub fn remember_broken(&mut self, stamps: Vec<Stamp>) {
        self.failed_stamps = Some(stamps);
    }

    /// Whether one whole call (`lua.call_ms`) still fits in the mod's time
    /// this tick (`lua.tick_ms`).
    pub fn has_time_for_a_call(&self) -> bool {
        let settings = self.data.shared.settings.borrow();
        let tick = Duration::from_millis(settings.tick_ms.max(1));
        self.tick_used + Duration::from_millis(settings.call_ms).min(tick) <= tick
    }

    /// A new tick: its time budget starts again.
    pub fn new_tick(&mut self) {
        self.tick_used = Duration::ZERO;
    }

    /// One entry into the mod's Lua (`what` names it in messages): refused
    /// when the mod is stopped; its time counts against the mod's tick; a
    /// limit stops the mod, an error is logged and counted. The error is
    /// the message to show.
    pub fn run<R>(
        &mut self,
        what: impl FnOnce() -> String,
        f: impl FnOnce(&Lua) -> mlua::Result<R>,
    ) -> Result<R, String> {
        if let Status::Stopped(why) = &self.status {
            return Err(format!("the lua mod {} is stopped: {why}", self.name()));
        }
        let shared = &self.data.shared;
        let tick_budget = Duration::from_millis(shared.settings.borrow().tick_ms.max(1));
        let left = tick_budget.saturating_sub(self.tick_used);
        let started = Instant::now();
        let result = self.vm.enter(Some(started + left), || f(self.vm.lua()));
        self.tick_used += started.elapsed();
        result.map_err(|failure| {
            let what = what();
            self.failed(&what, &failure);
            format!("{failure} (in {what})")
        })
    }

    /// Errors caught inside an entry (the entity steps, each under
    /// `pcall`), as [`LuaMod::run`] takes one.
    pub fn errors(&mut self, what: &str, messages: Vec<String>) {
        for message in messages {
            if self.status != Status::Running {
                return;
            }
            let kind = if message.contains("not enough memory") {
                FailureKind::MemoryLimit
            } else {
                FailureKind::Error
            };
            let failure = Failure {
                kind,
                message,
                location: None,
            };
            self.failed(what, &failure);
        }
    }

    /// A failure of one entry: stops the mod past a limit or too many
    /// errors, else logs it (a few a minute).
    fn failed(&mut self, what: &str, failure: &Failure) {
        let host = self.data.shared.host;
        if failure.kind != FailureKind::Error {
            self.stop(&format!("{failure} (in {what})"));
            return;
        }
        let now = Instant::now();
        self.errors.push_back(now);
        while self
            .errors
            .front()
            .is_some_and(|&at| now.duration_since(at) > ERROR_WINDOW)
        {
            self.errors.pop_front();
        }
        let max = self.data.shared.settings.borrow().max_errors as usize;
        if self.errors.len() > max {
            self.stop(&format!(
                "{failure} (in {what}; {} errors in {} s)",
                self.errors.len(),
                ERROR_WINDOW.as_secs()
            ));
        } else if self.errors.len() <= 3 {
            host.log(
                log::Level::Warn,
                &format!("lua mod {}: {failure} (in {what})", self.name()),
            );
        }
    }

    /// Stops the mod, saying why once.
    pub fn stop(&mut self, why: &str) {
        self.data.shared.host.log(
            log::Level::Warn,
            &format!(
                "lua mod {} stopped: {why}; save one of its files to run it again",
                self.name()
            ),
        );
        self.status = Status::Stopped(why.to_string());
    }
}

/// The name Lua's messages give a mod's file: `MOD/server_lua/FILE`.
pub(crate) fn chunk_name(mod_name: &str, file: &str) -> String {
    format!("{mod_name}/{SERVER_LUA}/{file}")
}
