//! The Lua runtime: one Luau VM per client, in which every file the server
//! sends runs sandboxed, and the client's own `client_lua/` runs trusted.
//!
//! Owns: [`Runtime`] and what callers see of it: its options, log sinks and
//! errors, the state the host primitives share (`Shared`: files, outbox, subscriptions, timers, exit hooks,
//! the session's [`WorldView`] and replicated nodes, the UI), running scripts (`core:run_script`, bot
//! files, evaluations for tests), and the audit list of the host's own
//! values. The rest is split by seam:
//! - `vm`: the runtime set up on a `buildat_luau` VM, and one contained
//!   entry from Rust into Lua (a failure as a [`ScriptError`]).
//! - `api`: the host primitives `client_lua/boot.lua` builds the
//!   `buildat` API from, and their Rust side (draining the outbox,
//!   delivering packets, running timers and exit hooks, transferred files).
//! - `ui`: `buildat.ui`'s primitives, the [`UiState`] a frontend draws and
//!   the key, click and move handlers the session calls.
//! - `nodes`: `buildat.nodes`' primitives over the replicated nodes and
//!   their added / changed / removed callbacks.
//!
//! Does not own: the VM and its limits (libraries, globals removed, the
//! sandbox set-up, the memory limit, the time budget and its interrupt,
//! compiling source text: `buildat_luau`), the whitelist and the per-file environments (that is
//! `client_lua/boot.lua`, run through [`crate::lua_sources`]), the network
//! and the file transfer (`app`, `session`), the world stream itself
//! (`world`; `app` feeds it).

mod api;
mod nodes;
mod ui;
mod vm;

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use std::time::Duration;

use mlua::{Function, Lua, MultiValue, Table, Value};
use thiserror::Error;

use crate::terminal::escape;
use crate::world::WorldView;

pub use api::{MAX_EXIT_HOOKS, MAX_OUTBOX_BYTES, MAX_SUBSCRIPTIONS, MAX_TIMERS};
use buildat_luau::{Vm, describe, load_text};
pub use ui::{
    Action, CHAT_LINES, ChatLine, Daylight, ItemDef, MAX_TEXT_BYTES, MAX_UI_ENTRIES, Screen, Slots,
    Stack, UiBox, UiModel, UiState, Widget, WidgetKind,
};

pub use buildat_luau::FailureKind;

/// Default memory limit of the whole VM.
pub const DEFAULT_MEMORY_LIMIT: usize = 256 << 20;
/// Default time one call from Rust into Lua may take.
pub const DEFAULT_TIME_LIMIT: Duration = Duration::from_secs(1);

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

/// Where log lines go: (level, logger name, message), and the most detailed
/// level kept. Lua asks it before building a message: a disabled level's
/// `log:verbose(...)` costs a call and no string (a bot sees every player's
/// edits, and formatted each one for nothing).
#[derive(Clone)]
pub struct LogSink {
    max: Level,
    write: Rc<WriteLine>,
}

/// Writes one line: (level, logger name, message).
type WriteLine = dyn Fn(Level, &str, &str);

impl LogSink {
    /// A sink keeping the lines up to `max` and handing them to `write`.
    pub fn new(max: Level, write: impl Fn(Level, &str, &str) + 'static) -> Self {
        Self {
            max,
            write: Rc::new(write),
        }
    }

    /// The most detailed level this sink keeps.
    pub fn max(&self) -> Level {
        self.max
    }

    /// Writes one line, if its level is kept.
    pub fn log(&self, level: Level, name: &str, message: &str) {
        if level <= self.max {
            (self.write)(level, name, message);
        }
    }
}

/// A sink printing lines up to `max` to stderr as `LEVEL name: message`
/// (name and message are the server's Lua's: escaped).
pub fn stderr_sink(max: Level) -> LogSink {
    prefixed_stderr_sink(max, String::new())
}

/// Like [`stderr_sink`], each line starting with `prefix` (a bot's name
/// when one process runs many).
pub fn prefixed_stderr_sink(max: Level, prefix: String) -> LogSink {
    LogSink::new(max, move |level, name, message| {
        eprintln!(
            "{prefix}{:<7} {}: {}",
            level.as_str(),
            escape(name),
            escape(message)
        );
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

/// A contained failure of Lua code: logged, never fatal to the client.
#[derive(Debug, Clone, Error)]
#[error("{file}: {message}")]
pub struct ScriptError {
    /// The file the failing code belongs to.
    pub file: String,
    pub kind: FailureKind,
    /// What happened, without the stack traceback (where Lua was first,
    /// when a limit stopped it).
    pub message: String,
}

/// What the host primitives and [`Runtime`] share.
struct Shared {
    files: RefCell<HashMap<String, Rc<[u8]>>>,
    outbox: RefCell<Vec<(String, Vec<u8>)>>,
    outbox_bytes: Cell<usize>,
    subs: RefCell<Vec<api::Subscription>>,
    timers: RefCell<Vec<api::Timer>>,
    next_timer: Cell<u64>,
    /// The timer running now (id, owner): it is out of `timers` meanwhile.
    running_timer: RefCell<Option<(u64, Rc<str>)>>,
    running_timer_cleared: Cell<bool>,
    disconnect: Cell<bool>,
    exit_hooks: RefCell<Vec<api::ExitHook>>,
    world: RefCell<WorldView>,
    nodes: RefCell<crate::nodes::NodeView>,
    node_subs: RefCell<Vec<nodes::NodeSub>>,
    ui: RefCell<ui::Ui>,
    log: LogSink,
}

/// The client's Lua VM.
pub struct Runtime {
    vm: Vm,
    shared: Rc<Shared>,
    host: Table,
    ext_env: Table,
    runtime: Table,
    run_script_fn: Function,
    forget_file_fn: Function,
    sandbox_env_fn: Function,
    run_trusted_fn: Function,
}

impl Runtime {
    /// `core:run_script`: runs a transferred file sandboxed, in a fresh
    /// environment. A module's `init.lua` that already ran (through
    /// `require`) is not run again.
    pub fn run_script(&self, name: &str) -> Result<(), ScriptError> {
        self.enter(name, None, || self.run_script_fn.call::<()>(name))
    }

    /// Bot mode: runs a trusted local file (the same API plus timers).
    pub fn run_trusted(&self, name: &str, source: &[u8]) -> Result<(), ScriptError> {
        let source = self
            .vm
            .lua()
            .create_string(source)
            .map_err(|e| ScriptError {
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
            let f = load_text(self.vm.lua(), source.as_bytes(), name, env, true)?;
            Ok(f.call::<MultiValue>(())?.into_vec())
        })
    }

    /// A fresh sandboxed environment, as a file named `name` would get.
    pub fn sandbox_env(&self, name: &str) -> Result<Table, ScriptError> {
        self.enter(name, None, || self.sandbox_env_fn.call(name))
    }

    /// Bytes the VM uses.
    pub fn used_memory(&self) -> usize {
        self.vm.lua().used_memory()
    }

    /// The VM (for benchmarks and tests).
    pub fn lua(&self) -> &Lua {
        self.vm.lua()
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
            ("globals".into(), Value::Table(self.vm.lua().globals())),
        ];
        if let Some(meta) = self.vm.lua().globals().metatable() {
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
            "nodes_sub",
            // The UI's, which take the calling file (boot.lua wraps them).
            "ui_bind",
            "ui_on_click",
            "ui_on_move",
            "ui_open_screen",
            "ui_on_chat",
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
