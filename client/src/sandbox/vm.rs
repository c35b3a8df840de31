//! The Luau VM and its limits: the libraries it opens, the globals removed
//! from it, `sandbox(true)` (so every library table and the string
//! metatable are read-only) and the "safeenv" marks, the memory limit of
//! the whole VM, and the time limit per entry from Rust into Lua, enforced
//! by an interrupt that keeps failing until control is back in Rust, so
//! `pcall` cannot swallow it. Also [`Runtime::new`] (the VM set up, then
//! `client_lua/boot.lua` run over the host primitives), one contained entry
//! into Lua (errors turned into a [`ScriptError`] of the right
//! [`FailureKind`]), and compiling source text (never bytecode).
//!
//! Does not own: the host primitives and what Rust does with what they
//! record (`api`), the public types and running scripts (`sandbox`'s
//! `mod.rs`).
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
use std::time::Instant;

use mlua::chunk::ChunkMode;
use mlua::{Function, Lua, LuaOptions, StdLib, Table, Value, VmState};

use super::{FailureKind, Options, Runtime, ScriptError, SetupError, Shared};
use crate::lua_sources;
use crate::world::WorldView;

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

/// The time budget of the current entry from Rust into Lua.
pub(super) struct Budget {
    armed: Cell<bool>,
    exceeded: Cell<bool>,
    ticks: Cell<u32>,
    deadline: Cell<Instant>,
}

pub(super) fn lua_error(message: impl Into<String>) -> mlua::Error {
    mlua::Error::runtime(message.into())
}

/// The message of an error, without the stack traceback.
pub(super) fn describe(error: &mlua::Error) -> String {
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
pub(super) fn load_text(
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
            nodes: RefCell::default(),
            node_subs: RefCell::default(),
            ui: RefCell::default(),
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

    /// Runs `f` as one entry from Rust into Lua: under a fresh time budget
    /// (unless already inside one), errors turned into a [`ScriptError`]
    /// of `file`, memory reclaimed afterwards when the VM is over half its
    /// limit or the entry failed (a script stopped mid-bomb, by either
    /// limit, leaves its garbage behind).
    pub(super) fn enter<R>(
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
            if result.is_err() || self.lua.used_memory() > self.shared.memory_limit / 2 {
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
}
