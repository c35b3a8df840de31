//! The Lua runtime: one Luau VM per client, in which every file the server
//! sends runs sandboxed, and the client's own `client_lua/` runs trusted.
//!
//! Owns: the VM and its setup (libraries, globals removed, `sandbox(true)`
//! so every library table and the string metatable are read-only), the
//! limits (a memory limit for the whole VM and a time limit per entry from
//! Rust into Lua, enforced by an interrupt that keeps failing until control
//! is back in Rust, so `pcall` cannot swallow it), the host primitives that
//! `client_lua/boot.lua` builds the `buildat` API from (outgoing packets,
//! packet subscriptions, timers, exit hooks, logging, transferred files,
//! compiling source text, the read-only view of the session's
//! [`WorldView`] behind `buildat.world`), and dispatching packets, timers
//! and exit hooks to Lua with each call contained.
//!
//! Does not own: the whitelist and the per-file environments (that is
//! `client_lua/boot.lua`, run through [`crate::lua_sources`]), the network
//! and the file transfer (`app`, `session`), the world stream itself
//! (`world`; `app` feeds it).
//!
//! Sandbox facts this relies on (each has a test in `tests/sandbox.rs`):
//! - Luau calls the interrupt at every loop back-edge and call, in every
//!   coroutine, and inside pattern matching; it has no `__gc` for tables.
//! - A chunk loaded with an environment marked "safeenv" takes pre-resolved
//!   imports (`math.floor`, `debug`, ...) from the *loading thread's*
//!   globals, not from its environment. So the real globals are never
//!   "safeenv" (imports resolve at run time from the file's own
//!   environment), and the dangerous functions are removed from the VM
//!   altogether, not only from the whitelist.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use std::time::{Duration, Instant};

use mlua::chunk::ChunkMode;
use mlua::{Function, Lua, LuaOptions, MultiValue, StdLib, Table, Value, VmState};
use thiserror::Error;

use crate::lua_sources;
use crate::world::WorldView;

/// Default memory limit of the whole VM.
pub const DEFAULT_MEMORY_LIMIT: usize = 256 << 20;
/// Default time one call from Rust into Lua may take.
pub const DEFAULT_TIME_LIMIT: Duration = Duration::from_secs(1);
/// Packets Lua may queue between two flushes, in bytes.
pub const MAX_OUTBOX_BYTES: usize = 64 << 20;
/// Packet subscriptions Lua may hold at once.
pub const MAX_SUBSCRIPTIONS: usize = 10_000;
/// Timers the scripts of one VM may hold at once.
pub const MAX_TIMERS: usize = 10_000;
/// Exit hooks a bot may register.
pub const MAX_EXIT_HOOKS: usize = 1_000;

/// Globals removed from the VM before anything runs: not reachable by any
/// code, sandboxed or not.
const REMOVED_GLOBALS: &[&str] = &[
    "getfenv",
    "setfenv",
    "loadstring",
    "require",
    "newproxy",
    "gcinfo",
    "debug",
];

/// Log levels of `buildat.Logger` (and of the client's own messages).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Error,
    Warning,
    Info,
    Verbose,
    Debug,
}

impl Level {
    /// Parses a level name as Lua uses it.
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "error" => Self::Error,
            "warning" => Self::Warning,
            "info" => Self::Info,
            "verbose" => Self::Verbose,
            "debug" => Self::Debug,
            _ => return None,
        })
    }

    /// The level's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Error => "error",
            Self::Warning => "warning",
            Self::Info => "info",
            Self::Verbose => "verbose",
            Self::Debug => "debug",
        }
    }
}

/// Where log lines go: (level, logger name, message).
pub type LogSink = Rc<dyn Fn(Level, &str, &str)>;

/// A sink printing lines up to `max` to stderr as `LEVEL name: message`.
pub fn stderr_sink(max: Level) -> LogSink {
    Rc::new(move |level, name, message| {
        if level <= max {
            eprintln!("{:<7} {name}: {message}", level.as_str());
        }
    })
}

/// Like [`stderr_sink`], each line starting with `prefix` (a bot's name
/// when one process runs many).
pub fn prefixed_stderr_sink(max: Level, prefix: String) -> LogSink {
    Rc::new(move |level, name, message| {
        if level <= max {
            eprintln!("{prefix}{:<7} {name}: {message}", level.as_str());
        }
    })
}

/// How a runtime is set up.
#[derive(Clone)]
pub struct Options {
    /// Memory limit of the whole VM, in bytes.
    pub memory_limit: usize,
    /// Time limit of one call from Rust into Lua.
    pub time_limit: Duration,
    /// `buildat.client_name`.
    pub client_name: String,
    /// Where `buildat.Logger` and `print` write.
    pub log: LogSink,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            memory_limit: DEFAULT_MEMORY_LIMIT,
            time_limit: DEFAULT_TIME_LIMIT,
            client_name: String::new(),
            log: stderr_sink(Level::Info),
        }
    }
}

/// The runtime could not start (a bug or an impossible limit, never a
/// script's fault).
#[derive(Debug, Error)]
#[error("cannot start the Lua runtime: {0}")]
pub struct SetupError(#[from] mlua::Error);

/// Why a script was stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// It raised an error (or a call it made failed).
    Error,
    /// It ran past the time limit.
    TimeLimit,
    /// The VM's memory limit was reached.
    MemoryLimit,
}

/// A contained failure of Lua code: logged, never fatal to the client.
#[derive(Debug, Clone, Error)]
#[error("{file}: {message}")]
pub struct ScriptError {
    /// The file the failing code belongs to.
    pub file: String,
    pub kind: FailureKind,
    /// What happened, without the stack traceback.
    pub message: String,
}

struct Budget {
    armed: Cell<bool>,
    exceeded: Cell<bool>,
    ticks: Cell<u32>,
    deadline: Cell<Instant>,
}

struct Subscription {
    owner: Rc<str>,
    packet: String,
    func: Function,
}

struct ExitHook {
    owner: Rc<str>,
    func: Function,
}

struct Timer {
    id: u64,
    owner: Rc<str>,
    due: Instant,
    every: Option<Duration>,
    func: Function,
}

struct Shared {
    time_limit: Duration,
    memory_limit: usize,
    budget: Budget,
    files: RefCell<HashMap<String, Rc<[u8]>>>,
    outbox: RefCell<Vec<(String, Vec<u8>)>>,
    outbox_bytes: Cell<usize>,
    subs: RefCell<Vec<Subscription>>,
    timers: RefCell<Vec<Timer>>,
    next_timer: Cell<u64>,
    /// The timer running now (id, owner): it is out of `timers` meanwhile.
    running_timer: RefCell<Option<(u64, Rc<str>)>>,
    running_timer_cleared: Cell<bool>,
    disconnect: Cell<bool>,
    exit_hooks: RefCell<Vec<ExitHook>>,
    world: RefCell<WorldView>,
    log: LogSink,
}

/// The client's Lua VM.
pub struct Runtime {
    lua: Lua,
    shared: Rc<Shared>,
    host: Table,
    ext_env: Table,
    runtime: Table,
    run_script_fn: Function,
    forget_file_fn: Function,
    sandbox_env_fn: Function,
    run_trusted_fn: Function,
}

fn lua_error(message: impl Into<String>) -> mlua::Error {
    mlua::Error::runtime(message.into())
}

/// Checks a packet name Lua wants to send or subscribe to.
fn check_packet_name(name: &str) -> mlua::Result<()> {
    if name.is_empty() || name.len() > buildat_format::packet::DEFAULT_MAX_NAME_LEN {
        return Err(lua_error(format!(
            "packet names are 1 to {} bytes long",
            buildat_format::packet::DEFAULT_MAX_NAME_LEN
        )));
    }
    if name.starts_with("core:") {
        return Err(lua_error(format!(
            "{name}: core packets belong to the client itself"
        )));
    }
    Ok(())
}

fn packet_bytes(value: &Value) -> mlua::Result<Vec<u8>> {
    match value {
        Value::String(s) => Ok(s.as_bytes().to_vec()),
        Value::Buffer(b) => Ok(b.to_vec()),
        Value::Nil => Ok(Vec::new()),
        other => Err(lua_error(format!(
            "packet data must be a string or a buffer, not a {}",
            other.type_name()
        ))),
    }
}

/// The message of an error, without the stack traceback.
fn describe(error: &mlua::Error) -> String {
    match error {
        mlua::Error::CallbackError { cause, .. } => describe(cause),
        mlua::Error::WithContext { cause, context } => format!("{context}: {}", describe(cause)),
        mlua::Error::RuntimeError(message) => message
            .split("\nstack traceback:")
            .next()
            .unwrap_or(message)
            .to_string(),
        mlua::Error::SyntaxError { message, .. } => message.clone(),
        mlua::Error::MemoryError(message) => message.clone(),
        other => other.to_string(),
    }
}

fn is_memory_error(error: &mlua::Error) -> bool {
    match error {
        mlua::Error::MemoryError(_) => true,
        mlua::Error::CallbackError { cause, .. } | mlua::Error::WithContext { cause, .. } => {
            is_memory_error(cause)
        }
        mlua::Error::RuntimeError(message) => message.contains("not enough memory"),
        _ => false,
    }
}

/// Compiles source text (never bytecode) with `env` as its environment.
fn load_text(
    lua: &Lua,
    source: &[u8],
    chunk_name: &str,
    env: Table,
    sandboxed: bool,
) -> mlua::Result<Function> {
    if sandboxed {
        // Fast paths for builtins. Safe because the loading thread's
        // globals are never "safeenv" (see the module doc).
        env.set_safeenv(true);
    }
    lua.load(source)
        .set_name(format!("={chunk_name}"))
        .set_mode(ChunkMode::Text)
        .set_environment(env)
        .into_function()
}

impl Runtime {
    /// A fresh VM with `client_lua/boot.lua` run.
    pub fn new(options: Options) -> Result<Self, SetupError> {
        let libs = StdLib::COROUTINE
            | StdLib::TABLE
            | StdLib::OS
            | StdLib::STRING
            | StdLib::UTF8
            | StdLib::BIT
            | StdLib::MATH
            | StdLib::BUFFER
            | StdLib::VECTOR;
        let lua = Lua::new_with(libs, LuaOptions::default())?;
        let globals = lua.globals();
        for name in REMOVED_GLOBALS {
            globals.raw_set(*name, Value::Nil)?;
        }
        lua.set_memory_limit(options.memory_limit)?;
        lua.sandbox(true)?;
        // After sandbox(true) the main thread's globals are a proxy whose
        // __index is the frozen real globals. Neither may be "safeenv".
        let proxy = lua.globals();
        proxy.set_safeenv(false);
        let real: Table = proxy
            .metatable()
            .ok_or_else(|| lua_error("sandboxed globals have no metatable"))?
            .raw_get("__index")?;
        real.set_safeenv(false);

        let shared = Rc::new(Shared {
            time_limit: options.time_limit,
            memory_limit: options.memory_limit,
            budget: Budget {
                armed: Cell::new(false),
                exceeded: Cell::new(false),
                ticks: Cell::new(0),
                deadline: Cell::new(Instant::now()),
            },
            files: RefCell::new(HashMap::new()),
            outbox: RefCell::new(Vec::new()),
            outbox_bytes: Cell::new(0),
            subs: RefCell::new(Vec::new()),
            timers: RefCell::new(Vec::new()),
            next_timer: Cell::new(1),
            running_timer: RefCell::new(None),
            running_timer_cleared: Cell::new(false),
            disconnect: Cell::new(false),
            exit_hooks: RefCell::new(Vec::new()),
            world: RefCell::new(WorldView::new()),
            log: options.log.clone(),
        });

        let budget_shared = shared.clone();
        let limit_ms = options.time_limit.as_millis();
        lua.set_interrupt(move |_| {
            let budget = &budget_shared.budget;
            if !budget.armed.get() {
                return Ok(VmState::Continue);
            }
            if !budget.exceeded.get() {
                let ticks = budget.ticks.get().wrapping_add(1);
                budget.ticks.set(ticks);
                if !ticks.is_multiple_of(256) || Instant::now() < budget.deadline.get() {
                    return Ok(VmState::Continue);
                }
                budget.exceeded.set(true);
            }
            // Every later interrupt fails too, until Rust has control back.
            Err(lua_error(format!(
                "stopped: ran past the time limit of {limit_ms} ms"
            )))
        });

        let host = Self::host_table(&lua, &shared, &options.client_name)?;
        let ext_env = lua.create_table()?;
        let ext_meta = lua.create_table()?;
        ext_meta.raw_set("__index", real)?;
        ext_env.set_metatable(Some(ext_meta))?;
        let runtime: Table = load_text(
            &lua,
            lua_sources::BOOT.as_bytes(),
            "client_lua/boot.lua",
            ext_env.clone(),
            false,
        )?
        .call(host.clone())?;
        Ok(Self {
            run_script_fn: runtime.get("run_script")?,
            forget_file_fn: runtime.get("forget_file")?,
            sandbox_env_fn: runtime.get("sandbox_env")?,
            run_trusted_fn: runtime.get("run_trusted")?,
            lua,
            shared,
            host,
            ext_env,
            runtime,
        })
    }

    /// The primitives boot.lua gets (never handed to sandboxed code as a
    /// table; some functions are exposed one by one).
    fn host_table(lua: &Lua, shared: &Rc<Shared>, client_name: &str) -> mlua::Result<Table> {
        let host = lua.create_table()?;

        let s = shared.clone();
        host.raw_set(
            "send_packet",
            lua.create_function(move |_, (name, data): (String, Value)| {
                check_packet_name(&name)?;
                let data = packet_bytes(&data)?;
                let queued = s.outbox_bytes.get() + data.len() + name.len();
                if queued > MAX_OUTBOX_BYTES {
                    return Err(lua_error(format!(
                        "send_packet: over {MAX_OUTBOX_BYTES} bytes queued; wait for the next tick"
                    )));
                }
                s.outbox_bytes.set(queued);
                s.outbox.borrow_mut().push((name, data));
                Ok(())
            })?,
        )?;

        let s = shared.clone();
        host.raw_set(
            "sub_packet",
            lua.create_function(move |_, (owner, name, func): (String, String, Function)| {
                check_packet_name(&name)?;
                let mut subs = s.subs.borrow_mut();
                if subs.len() >= MAX_SUBSCRIPTIONS {
                    return Err(lua_error(format!(
                        "sub_packet: over {MAX_SUBSCRIPTIONS} subscriptions"
                    )));
                }
                subs.push(Subscription {
                    owner: owner.into(),
                    packet: name,
                    func,
                });
                Ok(())
            })?,
        )?;

        let s = shared.clone();
        host.raw_set(
            "unsub_packet",
            lua.create_function(move |_, func: Function| {
                let target = func.to_pointer();
                s.subs
                    .borrow_mut()
                    .retain(|sub| sub.func.to_pointer() != target);
                Ok(())
            })?,
        )?;

        let s = shared.clone();
        host.raw_set(
            "log",
            lua.create_function(
                move |_, (level, name, message): (String, String, mlua::LuaString)| {
                    let level = Level::parse(&level).unwrap_or(Level::Info);
                    (s.log)(level, &name, &message.to_string_lossy());
                    Ok(())
                },
            )?,
        )?;

        let s = shared.clone();
        host.raw_set(
            "disconnect",
            lua.create_function(move |_, ()| {
                s.disconnect.set(true);
                Ok(())
            })?,
        )?;

        let s = shared.clone();
        host.raw_set(
            "read_file",
            lua.create_function(move |lua, name: String| {
                let content = s.files.borrow().get(&name).cloned();
                content.map(|c| lua.create_string(&*c)).transpose()
            })?,
        )?;

        host.raw_set(
            "load",
            lua.create_function(
                |lua, (source, name, env, sandboxed): (mlua::LuaString, String, Table, Option<bool>)| {
                    load_text(
                        lua,
                        &source.as_bytes(),
                        &name,
                        env,
                        sandboxed.unwrap_or(true),
                    )
                },
            )?,
        )?;

        host.raw_set(
            "extension_source",
            lua.create_function(|_, name: String| Ok(lua_sources::extension(&name)))?,
        )?;

        let s = shared.clone();
        host.raw_set(
            "set_timer",
            lua.create_function(
                move |_, (owner, seconds, func, repeat): (String, f64, Function, bool)| {
                    if !seconds.is_finite() || seconds < 0.0 {
                        return Err(lua_error(
                            "timers take a finite, non-negative number of seconds",
                        ));
                    }
                    let delay = Duration::from_secs_f64(seconds.min(1e9));
                    let mut timers = s.timers.borrow_mut();
                    if timers.len() >= MAX_TIMERS {
                        return Err(lua_error(format!("over {MAX_TIMERS} timers")));
                    }
                    let id = s.next_timer.get();
                    s.next_timer.set(id + 1);
                    timers.push(Timer {
                        id,
                        owner: owner.into(),
                        due: Instant::now() + delay,
                        // An interval of 0 would spin: at least 1 ms.
                        every: repeat.then(|| delay.max(Duration::from_millis(1))),
                        func,
                    });
                    Ok(id)
                },
            )?,
        )?;

        // Only the timer's owner (the file that set it) may clear it.
        let s = shared.clone();
        host.raw_set(
            "clear_timer",
            lua.create_function(move |_, (owner, id): (String, u64)| {
                s.timers
                    .borrow_mut()
                    .retain(|t| t.id != id || *t.owner != *owner);
                let running = s
                    .running_timer
                    .borrow()
                    .as_ref()
                    .is_some_and(|(rid, rowner)| *rid == id && **rowner == *owner);
                if running {
                    s.running_timer_cleared.set(true);
                }
                Ok(())
            })?,
        )?;

        let s = shared.clone();
        host.raw_set(
            "on_exit",
            lua.create_function(move |_, (owner, func): (String, Function)| {
                let mut hooks = s.exit_hooks.borrow_mut();
                if hooks.len() >= MAX_EXIT_HOOKS {
                    return Err(lua_error(format!("over {MAX_EXIT_HOOKS} exit hooks")));
                }
                hooks.push(ExitHook {
                    owner: owner.into(),
                    func,
                });
                Ok(())
            })?,
        )?;

        Self::world_functions(lua, shared, &host)?;

        host.raw_set("client_name", client_name)?;
        host.set_readonly(true);
        Ok(host)
    }

    /// `buildat.world`'s primitives over the session's [`WorldView`]:
    /// `world_get_voxel(x, y, z)`, `world_chunk_count()`,
    /// `world_chunks_received()`, `world_set_acking(on)`,
    /// `world_set_focus(x, y, z)`. Read-only but for acking and the focus.
    fn world_functions(lua: &Lua, shared: &Rc<Shared>, host: &Table) -> mlua::Result<()> {
        fn coordinate(v: f64) -> mlua::Result<i32> {
            if v.is_finite() && v.abs() < 2e9 {
                Ok(v.floor() as i32)
            } else {
                Err(lua_error(format!(
                    "world coordinates are finite numbers within ±2e9, not {v}"
                )))
            }
        }
        fn world(shared: &Shared) -> mlua::Result<std::cell::Ref<'_, WorldView>> {
            shared
                .world
                .try_borrow()
                .map_err(|_| lua_error("the world view is busy"))
        }
        fn world_mut(shared: &Shared) -> mlua::Result<std::cell::RefMut<'_, WorldView>> {
            shared
                .world
                .try_borrow_mut()
                .map_err(|_| lua_error("the world view is busy"))
        }

        let s = shared.clone();
        host.raw_set(
            "world_get_voxel",
            lua.create_function(move |_, (x, y, z): (f64, f64, f64)| {
                let pos = [coordinate(x)?, coordinate(y)?, coordinate(z)?];
                Ok(world_mut(&s)?.voxel_name(pos))
            })?,
        )?;
        let s = shared.clone();
        host.raw_set(
            "world_chunk_count",
            lua.create_function(move |_, ()| Ok(world(&s)?.chunk_count()))?,
        )?;
        let s = shared.clone();
        host.raw_set(
            "world_chunks_received",
            lua.create_function(move |_, ()| Ok(world(&s)?.stats().chunk_packets))?,
        )?;
        let s = shared.clone();
        host.raw_set(
            "world_set_acking",
            lua.create_function(move |_, on: Value| match on {
                Value::Boolean(on) => {
                    world_mut(&s)?.set_acking(on);
                    Ok(())
                }
                other => Err(lua_error(format!(
                    "set_acking expects true or false, not a {}",
                    other.type_name()
                ))),
            })?,
        )?;
        let s = shared.clone();
        host.raw_set(
            "world_set_focus",
            lua.create_function(move |_, (x, y, z): (f64, f64, f64)| {
                if world_mut(&s)?.set_focus([x, y, z]) {
                    Ok(())
                } else {
                    Err(lua_error("set_focus takes finite numbers"))
                }
            })?,
        )?;
        Ok(())
    }

    /// Runs `f` as one entry from Rust into Lua: under a fresh time budget
    /// (unless already inside one), errors turned into a [`ScriptError`]
    /// of `file`, memory reclaimed afterwards when the VM is over half its
    /// limit.
    fn enter<R>(
        &self,
        file: &str,
        context: Option<&str>,
        f: impl FnOnce() -> mlua::Result<R>,
    ) -> Result<R, ScriptError> {
        let budget = &self.shared.budget;
        let outer = !budget.armed.get();
        if outer {
            budget.exceeded.set(false);
            budget.ticks.set(0);
            budget.deadline.set(Instant::now() + self.shared.time_limit);
            budget.armed.set(true);
        }
        let result = f();
        let exceeded = budget.exceeded.get();
        if outer {
            budget.armed.set(false);
            budget.exceeded.set(false);
            if self.lua.used_memory() > self.shared.memory_limit / 2 {
                let _ = self.lua.gc_collect();
            }
        }
        result.map_err(|error| {
            let kind = if exceeded {
                FailureKind::TimeLimit
            } else if is_memory_error(&error) {
                FailureKind::MemoryLimit
            } else {
                FailureKind::Error
            };
            let mut message = match kind {
                FailureKind::TimeLimit => format!(
                    "stopped: ran past the time limit of {} ms",
                    self.shared.time_limit.as_millis()
                ),
                FailureKind::MemoryLimit => format!(
                    "stopped: the Lua memory limit of {} bytes was reached ({})",
                    self.shared.memory_limit,
                    describe(&error)
                ),
                FailureKind::Error => describe(&error),
            };
            if let Some(context) = context {
                message = format!("{context}: {message}");
            }
            ScriptError {
                file: file.to_string(),
                kind,
                message,
            }
        })
    }

    /// Makes a transferred file available to `core:run_script`,
    /// `run_script_file` and `require` (replacing an older version).
    pub fn set_file(&self, name: &str, content: &[u8]) {
        self.shared
            .files
            .borrow_mut()
            .insert(name.to_string(), content.into());
        let _ = self.forget_file_fn.call::<()>(name);
    }

    /// Withdraws a file.
    pub fn remove_file(&self, name: &str) {
        self.shared.files.borrow_mut().remove(name);
        let _ = self.forget_file_fn.call::<()>(name);
    }

    /// Whether `name` was given with [`Runtime::set_file`].
    pub fn has_file(&self, name: &str) -> bool {
        self.shared.files.borrow().contains_key(name)
    }

    /// `core:run_script`: runs a transferred file sandboxed, in a fresh
    /// environment. A module's `init.lua` that already ran (through
    /// `require`) is not run again.
    pub fn run_script(&self, name: &str) -> Result<(), ScriptError> {
        self.enter(name, None, || self.run_script_fn.call::<()>(name))
    }

    /// Bot mode: runs a trusted local file (the same API plus timers).
    pub fn run_trusted(&self, name: &str, source: &[u8]) -> Result<(), ScriptError> {
        let source = self.lua.create_string(source).map_err(|e| ScriptError {
            file: name.to_string(),
            kind: FailureKind::MemoryLimit,
            message: describe(&e),
        })?;
        self.enter(name, None, || {
            self.run_trusted_fn.call::<()>((source, name))
        })
    }

    /// Runs `source` as a sandboxed file named `name` and returns what it
    /// returns (for tests and audits; the values leave the sandbox).
    pub fn eval_sandboxed(&self, name: &str, source: &str) -> Result<Vec<Value>, ScriptError> {
        self.enter(name, None, || {
            let env: Table = self.sandbox_env_fn.call(name)?;
            let f = load_text(&self.lua, source.as_bytes(), name, env, true)?;
            Ok(f.call::<MultiValue>(())?.into_vec())
        })
    }

    /// A fresh sandboxed environment, as a file named `name` would get.
    pub fn sandbox_env(&self, name: &str) -> Result<Table, ScriptError> {
        self.enter(name, None, || self.sandbox_env_fn.call(name))
    }

    /// Delivers a game packet to every subscribed function, each call
    /// contained and under its own time budget. Returns the failures.
    pub fn dispatch_packet(&self, name: &str, data: &[u8]) -> Vec<ScriptError> {
        let handlers: Vec<(Rc<str>, Function)> = self
            .shared
            .subs
            .borrow()
            .iter()
            .filter(|s| s.packet == name)
            .map(|s| (s.owner.clone(), s.func.clone()))
            .collect();
        if handlers.is_empty() {
            return Vec::new();
        }
        let context = format!("handler of packet {name}");
        let data = match self.lua.create_string(data) {
            Ok(data) => data,
            Err(error) => {
                return vec![ScriptError {
                    file: "<client>".into(),
                    kind: FailureKind::MemoryLimit,
                    message: format!("cannot pass packet {name} to Lua: {}", describe(&error)),
                }];
            }
        };
        handlers
            .into_iter()
            .filter_map(|(owner, func)| {
                self.enter(&owner, Some(&context), || func.call::<()>(data.clone()))
                    .err()
            })
            .collect()
    }

    /// When the next timer is due.
    pub fn next_timer(&self) -> Option<Instant> {
        self.shared.timers.borrow().iter().map(|t| t.due).min()
    }

    /// Runs the timers due at `now` (each once per call, a repeating one
    /// rescheduled from `now`). Returns the failures.
    pub fn run_due_timers(&self, now: Instant) -> Vec<ScriptError> {
        let mut errors = Vec::new();
        let due: Vec<u64> = {
            let mut timers = self.shared.timers.borrow_mut();
            timers.sort_by_key(|t| t.due);
            timers
                .iter()
                .filter(|t| t.due <= now)
                .map(|t| t.id)
                .collect()
        };
        for id in due {
            let timer = {
                let mut timers = self.shared.timers.borrow_mut();
                let Some(index) = timers.iter().position(|t| t.id == id) else {
                    continue; // cleared by an earlier timer
                };
                timers.remove(index)
            };
            *self.shared.running_timer.borrow_mut() = Some((id, timer.owner.clone()));
            self.shared.running_timer_cleared.set(false);
            if let Err(error) =
                self.enter(&timer.owner, Some("timer"), || timer.func.call::<()>(()))
            {
                errors.push(error);
            }
            *self.shared.running_timer.borrow_mut() = None;
            if let Some(every) = timer.every
                && !self.shared.running_timer_cleared.get()
            {
                self.shared.timers.borrow_mut().push(Timer {
                    due: now + every,
                    ..timer
                });
            }
        }
        errors
    }

    /// Runs the exit hooks bot scripts registered (`buildat.on_exit`), each
    /// once, contained and under its own time budget. Returns the failures.
    pub fn run_exit_hooks(&self) -> Vec<ScriptError> {
        let hooks = std::mem::take(&mut *self.shared.exit_hooks.borrow_mut());
        hooks
            .into_iter()
            .filter_map(|hook| {
                self.enter(&hook.owner, Some("exit hook"), || hook.func.call::<()>(()))
                    .err()
            })
            .collect()
    }

    /// The session's world view (`app` feeds it the stream packets; Lua
    /// reads it through `buildat.world`). Never borrowed across a call
    /// into Lua.
    pub fn world(&self) -> &RefCell<WorldView> {
        &self.shared.world
    }

    /// Takes the packets Lua queued with `buildat.send_packet`.
    pub fn take_outgoing(&self) -> Vec<(String, Vec<u8>)> {
        self.shared.outbox_bytes.set(0);
        std::mem::take(&mut *self.shared.outbox.borrow_mut())
    }

    /// Whether Lua called `buildat.disconnect()`.
    pub fn disconnect_requested(&self) -> bool {
        self.shared.disconnect.get()
    }

    /// Current subscriptions (packet name, owning file).
    pub fn subscriptions(&self) -> Vec<(String, String)> {
        self.shared
            .subs
            .borrow()
            .iter()
            .map(|s| (s.packet.clone(), s.owner.to_string()))
            .collect()
    }

    /// Bytes the VM uses.
    pub fn used_memory(&self) -> usize {
        self.lua.used_memory()
    }

    /// The VM (for benchmarks and tests).
    pub fn lua(&self) -> &Lua {
        &self.lua
    }

    /// The host's own values that sandboxed code must never reach, named
    /// (for the escape audit in `tests/sandbox.rs`).
    pub fn host_values(&self) -> Result<Vec<(String, Value)>, SetupError> {
        let mut out = vec![
            (
                "host primitives".to_string(),
                Value::Table(self.host.clone()),
            ),
            (
                "extension environment".into(),
                Value::Table(self.ext_env.clone()),
            ),
            (
                "boot runtime table".into(),
                Value::Table(self.runtime.clone()),
            ),
            ("globals".into(), Value::Table(self.lua.globals())),
        ];
        if let Some(meta) = self.lua.globals().metatable() {
            out.push(("globals metatable".into(), Value::Table(meta.clone())));
            out.push(("real globals".into(), meta.raw_get("__index")?));
        }
        // Host primitives that are not exposed one by one.
        for name in [
            "sub_packet",
            "log",
            "read_file",
            "load",
            "extension_source",
            "set_timer",
            "clear_timer",
            "on_exit",
        ] {
            out.push((format!("host.{name}"), self.host.raw_get(name)?));
        }
        for (name, value) in self.runtime.pairs::<String, Value>().flatten() {
            out.push((format!("runtime.{name}"), value));
        }
        let registry: Table = self.runtime.raw_get("registry")?;
        for (name, value) in registry.pairs::<String, Value>().flatten() {
            out.push((format!("registry.{name}"), value.clone()));
            if let Value::Table(t) = value {
                for (key, entry) in t.pairs::<Value, Value>().flatten() {
                    out.push((format!("registry.{name}[{key:?}]"), entry));
                }
            }
        }
        Ok(out)
    }
}
