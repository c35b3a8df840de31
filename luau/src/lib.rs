//! The Luau VM and its limits: the libraries it opens, the globals removed
//! from it, `sandbox(true)` (so every library table and the string
//! metatable are read-only) and the "safeenv" marks, the memory limit of
//! the whole VM, and the time budget per entry from Rust into Lua, enforced
//! by an interrupt that keeps failing until control is back in Rust, so
//! `pcall` cannot swallow it. Also one contained entry into Lua
//! ([`Vm::enter`]: errors turned into a [`Failure`] of the right
//! [`FailureKind`], with where Lua was when a limit stopped it), and
//! compiling source text, never bytecode ([`load_text`]).
//!
//! Owns: [`Vm`], [`Limits`], [`Failure`], [`FailureKind`], [`load_text`],
//! [`describe`], [`lua_error`].
//!
//! Does not own: what runs in the VM, its environments and host functions
//! (the client's `sandbox` and its `client_lua/boot.lua`; the server's
//! `lua` module), what a caller does with a failure.
//!
//! Sandbox facts this relies on (each has a test here or in the client's
//! `tests/it/sandbox.rs`):
//! - Luau calls the interrupt at every loop back-edge and call, in every
//!   coroutine, and inside pattern matching; it has no `__gc` for tables.
//! - A chunk loaded with an environment marked "safeenv" takes pre-resolved
//!   imports (`math.floor`, `debug`, ...) from the *loading thread's*
//!   globals, not from its environment. So the real globals are never
//!   "safeenv" (imports resolve at run time from the file's own
//!   environment), and the dangerous functions are removed from the VM
//!   altogether, not only from a whitelist.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::rc::Rc;
use std::time::{Duration, Instant};

use mlua::chunk::ChunkMode;
use mlua::{Function, Lua, LuaOptions, StdLib, Table, Value, VmState};

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

/// The interrupt looks at the clock once in this many calls.
const CLOCK_EVERY: u32 = 256;
/// How deep the interrupt looks for a Lua line (a C function such as
/// `string.find` may be on top).
const LOCATION_DEPTH: usize = 8;

/// The limits of one VM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Memory limit of the whole VM, in bytes.
    pub memory_bytes: usize,
    /// Time one entry from Rust into Lua may take.
    pub time_per_entry: Duration,
}

/// Why Lua code was stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// It raised an error (or a call it made failed).
    Error,
    /// It ran past the time limit.
    TimeLimit,
    /// The VM's memory limit was reached.
    MemoryLimit,
}

/// A contained failure of one entry into Lua.
#[derive(Debug, Clone)]
pub struct Failure {
    pub kind: FailureKind,
    /// One line: for `Error`, Luau's "file:line: message" (no traceback);
    /// for `TimeLimit` "stopped: ran past the time limit of N ms"; for
    /// `MemoryLimit` "stopped: the Lua memory limit of N bytes was reached".
    pub message: String,
    /// Where Lua was ("file:line") when a limit stopped it; for
    /// `MemoryLimit` the last place the interrupt saw the memory used above
    /// 3/4 of the limit. None for `Error` (its message has the place).
    pub location: Option<String>,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.location {
            Some(location) => write!(f, "{location}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for Failure {}

/// The time budget of the current entry, and what the interrupt saw.
struct Budget {
    limits: Limits,
    armed: Cell<bool>,
    exceeded: Cell<bool>,
    ticks: Cell<u32>,
    deadline: Cell<Instant>,
    /// The entry's budget ends at an extra deadline, not at `time_per_entry`.
    by_deadline: Cell<bool>,
    /// The entry's budget in milliseconds (for the message).
    budget_ms: Cell<u128>,
    /// Where Lua was when the time ran out.
    time_location: RefCell<Option<String>>,
    /// The last place seen with the memory used above 3/4 of the limit.
    memory_location: RefCell<Option<String>>,
    /// The memory used at the last look (a place is recorded when it grew).
    last_memory: Cell<usize>,
}

/// The interrupt's fast path. Luau calls the interrupt at every call and
/// loop back-edge; through mlua's trampoline (which may raise the Lua
/// error) each costs about 0.1 µs, a third of a small entity step. So the
/// VM's interrupt is a C function that counts the ticks of the entered
/// VM's budget itself and calls mlua's trampoline (and so
/// [`Budget::interrupt`]) only on the ticks where it looks at the memory
/// or the clock, or when the time is up, or for a VM it does not know
/// (not the one entered last on this thread).
mod fast_interrupt {
    use std::cell::Cell;
    use std::ffi::c_int;
    use std::sync::OnceLock;

    use mlua::{Lua, ffi};

    use super::{Budget, CLOCK_EVERY};

    type Interrupt = unsafe extern "C-unwind" fn(*mut ffi::lua_State, c_int);

    /// A VM's main state (compared, never dereferenced here).
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub(super) struct MainState(*mut ffi::lua_State);

    /// mlua's trampoline: one function for every VM (it finds the VM's
    /// closure through the state).
    static SLOW: OnceLock<Interrupt> = OnceLock::new();

    thread_local! {
        /// The VM entered last on this thread and its budget (null: none).
        static ENTERED: Cell<(*mut ffi::lua_State, *const Budget)> =
            const { Cell::new((std::ptr::null_mut(), std::ptr::null())) };
    }

    /// Puts the fast path before mlua's trampoline (already set by
    /// `set_interrupt`); answers the VM's main state.
    pub(super) fn install(lua: &Lua) -> mlua::Result<MainState> {
        let mut main = MainState(std::ptr::null_mut());
        // SAFETY: the callbacks are the VM's global ones; reading and
        // setting its interrupt from the VM's own thread, with no Lua
        // running, is what `set_interrupt` does too.
        unsafe {
            lua.exec_raw::<()>((), |state| {
                let callbacks = ffi::lua_callbacks(state);
                if let Some(slow) = (*callbacks).interrupt
                    && !std::ptr::fn_addr_eq(slow, fast as Interrupt)
                {
                    let _ = SLOW.set(slow);
                    (*callbacks).interrupt = Some(fast);
                }
                main = MainState(ffi::lua_mainthread(state));
            })?;
        }
        Ok(main)
    }

    /// The VM `main` with `budget` is entered: the fast path counts for it
    /// until [`leave`]; answers what was entered before.
    pub(super) fn enter(main: MainState, budget: &Budget) -> (*mut ffi::lua_State, *const Budget) {
        ENTERED.replace((main.0, budget as *const Budget))
    }

    pub(super) fn leave(previous: (*mut ffi::lua_State, *const Budget)) {
        ENTERED.set(previous);
    }

    unsafe extern "C-unwind" fn fast(state: *mut ffi::lua_State, gc: c_int) {
        if gc >= 0 {
            // mlua ignores GC interrupts too.
            return;
        }
        let (main, budget) = ENTERED.get();
        // SAFETY: `budget` is set by `enter` from a live `&Budget` and put
        // back by `leave` before that borrow ends, on this thread.
        if !budget.is_null() && unsafe { ffi::lua_mainthread(state) } == main {
            let budget = unsafe { &*budget };
            if !budget.armed.get() {
                return;
            }
            if !budget.exceeded.get() {
                let ticks = budget.ticks.get().wrapping_add(1);
                // SAFETY: `state` is the running state Luau gave.
                let used_kb = unsafe { ffi::lua_gc(state, ffi::LUA_GCCOUNT, 0) }.max(0) as usize;
                let high = used_kb * 1024 > budget.limits.memory_bytes / 4 * 3;
                if !high && !ticks.is_multiple_of(CLOCK_EVERY) {
                    budget.ticks.set(ticks);
                    return;
                }
                // The slow path counts this tick itself.
            }
        }
        if let Some(slow) = SLOW.get() {
            // SAFETY: mlua's trampoline, read from a VM's callbacks by
            // `install`, called as Luau would.
            unsafe { slow(state, gc) }
        }
    }
}

impl Budget {
    fn interrupt(&self, lua: &Lua) -> mlua::Result<VmState> {
        if !self.armed.get() {
            return Ok(VmState::Continue);
        }
        if !self.exceeded.get() {
            let ticks = self.ticks.get().wrapping_add(1);
            self.ticks.set(ticks);
            // The fast path comes here at every call while the memory is
            // high, so a bomb of a few big pieces is placed too.
            let used = lua.used_memory();
            if used > self.limits.memory_bytes / 4 * 3 && used > self.last_memory.get() {
                *self.memory_location.borrow_mut() = location(lua);
            }
            self.last_memory.set(used);
            if !ticks.is_multiple_of(CLOCK_EVERY) || Instant::now() < self.deadline.get() {
                return Ok(VmState::Continue);
            }
            self.exceeded.set(true);
            *self.time_location.borrow_mut() = location(lua);
        }
        // Every later interrupt fails too, until Rust has control back.
        Err(lua_error(self.time_message()))
    }

    fn time_message(&self) -> String {
        if self.by_deadline.get() {
            format!(
                "stopped: ran past the time limit of {} ms (the time left of its deadline)",
                self.budget_ms.get()
            )
        } else {
            format!(
                "stopped: ran past the time limit of {} ms",
                self.budget_ms.get()
            )
        }
    }
}

/// "file:line" of the innermost Lua function running, if any (a binding
/// names its caller with it).
pub fn location(lua: &Lua) -> Option<String> {
    (0..LOCATION_DEPTH).find_map(|level| {
        lua.inspect_stack(level, |debug| {
            let line = debug.current_line()?;
            let source = debug.source();
            let file = source.short_src.as_deref().unwrap_or("?").to_string();
            Some(format!("{file}:{line}"))
        })
        .flatten()
    })
}

/// One Luau VM with its limits.
pub struct Vm {
    lua: Lua,
    real_globals: Table,
    budget: Rc<Budget>,
    /// The VM's main state (what the interrupt's fast path knows it by).
    main: fast_interrupt::MainState,
}

impl Vm {
    /// A VM with the coroutine, table, os, string, utf8, bit32, math,
    /// buffer and vector libraries, `REMOVED_GLOBALS` gone,
    /// `sandbox(true)`, neither the globals nor the real globals
    /// "safeenv", the memory limit set and the interrupt installed.
    pub fn new(limits: Limits) -> Result<Vm, mlua::Error> {
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
        lua.set_memory_limit(limits.memory_bytes)?;
        lua.sandbox(true)?;
        // After sandbox(true) the main thread's globals are a proxy whose
        // __index is the frozen real globals. Neither may be "safeenv".
        let proxy = lua.globals();
        proxy.set_safeenv(false);
        let real_globals: Table = proxy
            .metatable()
            .ok_or_else(|| lua_error("sandboxed globals have no metatable"))?
            .raw_get("__index")?;
        real_globals.set_safeenv(false);

        let budget = Rc::new(Budget {
            limits,
            armed: Cell::new(false),
            exceeded: Cell::new(false),
            ticks: Cell::new(0),
            deadline: Cell::new(Instant::now()),
            by_deadline: Cell::new(false),
            budget_ms: Cell::new(limits.time_per_entry.as_millis()),
            time_location: RefCell::new(None),
            memory_location: RefCell::new(None),
            last_memory: Cell::new(0),
        });
        let interrupt_budget = budget.clone();
        lua.set_interrupt(move |lua| interrupt_budget.interrupt(lua));
        let main = fast_interrupt::install(&lua)?;
        Ok(Vm {
            lua,
            real_globals,
            budget,
            main,
        })
    }

    /// The VM.
    pub fn lua(&self) -> &Lua {
        &self.lua
    }

    /// The frozen real globals (to be the `__index` of a script's
    /// environment).
    pub fn real_globals(&self) -> Table {
        self.real_globals.clone()
    }

    /// The VM's limits.
    pub fn limits(&self) -> Limits {
        self.budget.limits
    }

    /// Bytes the VM uses.
    pub fn used_memory(&self) -> usize {
        self.lua.used_memory()
    }

    /// Runs `f` as one entry from Rust into Lua: under a fresh time budget
    /// ending at the sooner of now + `time_per_entry` and `deadline`
    /// (nested entries share the outer budget), errors turned into a
    /// [`Failure`], memory reclaimed afterwards when the VM is over half
    /// its limit or the entry failed (a script stopped mid-bomb, by either
    /// limit, leaves its garbage behind).
    pub fn enter<R>(
        &self,
        deadline: Option<Instant>,
        f: impl FnOnce() -> mlua::Result<R>,
    ) -> Result<R, Failure> {
        let budget = &*self.budget;
        let outer = !budget.armed.get();
        if outer {
            let now = Instant::now();
            let own = now + budget.limits.time_per_entry;
            let (end, by_deadline) = match deadline {
                Some(deadline) if deadline < own => (deadline, true),
                _ => (own, false),
            };
            budget.exceeded.set(false);
            budget.ticks.set(0);
            budget.deadline.set(end);
            budget.by_deadline.set(by_deadline);
            budget.budget_ms.set(if by_deadline {
                end.saturating_duration_since(now).as_millis()
            } else {
                budget.limits.time_per_entry.as_millis()
            });
            budget.time_location.replace(None);
            budget.memory_location.replace(None);
            budget.last_memory.set(0);
            budget.armed.set(true);
        }
        let entered = outer.then(|| fast_interrupt::enter(self.main, budget));
        let result = f();
        if let Some(previous) = entered {
            fast_interrupt::leave(previous);
        }
        let exceeded = budget.exceeded.get();
        if outer {
            budget.armed.set(false);
            budget.exceeded.set(false);
            if result.is_err() || self.lua.used_memory() > budget.limits.memory_bytes / 2 {
                let _ = self.lua.gc_collect();
            }
        }
        result.map_err(|error| {
            if exceeded {
                Failure {
                    kind: FailureKind::TimeLimit,
                    message: budget.time_message(),
                    location: budget.time_location.borrow().clone(),
                }
            } else if is_memory_error(&error) {
                Failure {
                    kind: FailureKind::MemoryLimit,
                    message: format!(
                        "stopped: the Lua memory limit of {} bytes was reached",
                        budget.limits.memory_bytes
                    ),
                    location: budget.memory_location.borrow().clone(),
                }
            } else {
                Failure {
                    kind: FailureKind::Error,
                    message: describe(&error),
                    location: None,
                }
            }
        })
    }
}

/// A Lua runtime error with `message`.
pub fn lua_error(message: impl Into<String>) -> mlua::Error {
    mlua::Error::runtime(message.into())
}

/// The message of an error, without the stack traceback.
pub fn describe(error: &mlua::Error) -> String {
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

/// Compiles source text (never bytecode) named `chunk_name` (as errors
/// show it), with `env` as its environment; `sandboxed` marks `env`
/// "safeenv" (fast paths for builtins: safe because the loading thread's
/// globals never are, see the crate doc).
pub fn load_text(
    lua: &Lua,
    source: &[u8],
    chunk_name: &str,
    env: Table,
    sandboxed: bool,
) -> mlua::Result<Function> {
    if sandboxed {
        env.set_safeenv(true);
    }
    lua.load(source)
        .set_name(format!("={chunk_name}"))
        .set_mode(ChunkMode::Text)
        .set_environment(env)
        .into_function()
}

#[cfg(test)]
mod tests;
