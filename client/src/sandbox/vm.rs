//! [`Runtime::new`]: the VM set up (by `buildat_luau`: libraries, globals
//! removed, the sandbox, the memory limit, the time budget and its
//! interrupt), then `client_lua/boot.lua` run over the host primitives; and
//! one contained entry into Lua (a [`buildat_luau::Failure`] turned into a
//! [`ScriptError`] of the file it belongs to).
//!
//! Does not own: the VM and its limits (`buildat_luau`), the host
//! primitives and what Rust does with what they record (`api`), the public
//! types and running scripts (`sandbox`'s `mod.rs`).

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;

use buildat_luau::{Limits, Vm, load_text};
use mlua::Table;

use super::{Options, Runtime, ScriptError, SetupError, Shared};
use crate::lua_sources;
use crate::world::WorldView;

impl Runtime {
    /// A fresh VM with `client_lua/boot.lua` run.
    pub fn new(options: Options) -> Result<Self, SetupError> {
        let vm = Vm::new(Limits {
            memory_bytes: options.memory_limit,
            time_per_entry: options.time_limit,
        })?;
        let lua = vm.lua();
        let real = vm.real_globals();

        let shared = Rc::new(Shared {
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

        let host = Self::host_table(lua, &shared, &options.client_name)?;
        let ext_env = lua.create_table()?;
        let ext_meta = lua.create_table()?;
        ext_meta.raw_set("__index", real)?;
        ext_env.set_metatable(Some(ext_meta))?;
        let runtime: Table = load_text(
            lua,
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
            vm,
            shared,
            host,
            ext_env,
            runtime,
        })
    }

    /// Runs `f` as one entry from Rust into Lua ([`Vm::enter`]: a fresh
    /// time budget unless already inside one), a failure turned into a
    /// [`ScriptError`] of `file`, its message prefixed by `context`.
    pub(super) fn enter<R>(
        &self,
        file: &str,
        context: Option<&str>,
        f: impl FnOnce() -> mlua::Result<R>,
    ) -> Result<R, ScriptError> {
        self.vm.enter(None, f).map_err(|failure| {
            let message = match context {
                Some(context) => format!("{context}: {failure}"),
                None => failure.to_string(),
            };
            ScriptError {
                file: file.to_string(),
                kind: failure.kind,
                message,
            }
        })
    }
}
