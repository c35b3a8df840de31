//! The host primitives `client_lua/boot.lua` builds the `buildat` API from,
//! each with its Rust side: outgoing packets (`send_packet`, drained by
//! [`Runtime::take_outgoing`]), packet subscriptions (`sub_packet`,
//! `unsub_packet`, delivered by [`Runtime::dispatch_packet`]), timers
//! (`set_timer`, `clear_timer`, run by [`Runtime::run_due_timers`]), exit
//! hooks (`on_exit`, run by [`Runtime::run_exit_hooks`]), `disconnect`,
//! logging, transferred files (`read_file`, given with
//! [`Runtime::set_file`]), compiling source text (`load`), the client's
//! Lua extensions, and `buildat.world`'s read-only view of the session's
//! [`WorldView`]; and the limits on what Lua may hold through them.
//!
//! Does not own: the VM, its limits or how a call into Lua is contained
//! (`vm`), the whitelist and how boot.lua wraps these primitives
//! (`client_lua/boot.lua`), the world view itself (`crate::world`).

use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use mlua::{Function, Lua, Table, Value};

use super::{FailureKind, Level, Runtime, ScriptError, Shared};
use crate::lua_sources;
use crate::world::WorldView;
use buildat_luau::{describe, load_text, lua_error};

/// Packets Lua may queue between two flushes, in bytes.
pub const MAX_OUTBOX_BYTES: usize = 64 << 20;
/// Packet subscriptions Lua may hold at once.
pub const MAX_SUBSCRIPTIONS: usize = 10_000;
/// Timers the scripts of one VM may hold at once.
pub const MAX_TIMERS: usize = 10_000;
/// Exit hooks a bot may register.
pub const MAX_EXIT_HOOKS: usize = 1_000;

/// A function subscribed to a packet by the file `owner`.
pub(super) struct Subscription {
    owner: Rc<str>,
    packet: String,
    func: Function,
}

/// A bot's exit hook.
pub(super) struct ExitHook {
    owner: Rc<str>,
    func: Function,
}

/// A timer set by the file `owner`.
pub(super) struct Timer {
    id: u64,
    owner: Rc<str>,
    due: Instant,
    every: Option<Duration>,
    func: Function,
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

impl Runtime {
    /// The primitives boot.lua gets (never handed to sandboxed code as a
    /// table; some functions are exposed one by one).
    pub(super) fn host_table(
        lua: &Lua,
        shared: &Rc<Shared>,
        client_name: &str,
    ) -> mlua::Result<Table> {
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
                    s.log.log(level, &name, &message.to_string_lossy());
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
        Self::node_functions(lua, shared, &host)?;
        Self::ui_functions(lua, shared, &host)?;

        host.raw_set("client_name", client_name)?;
        // The most detailed level logged, as a position in boot.lua's
        // LEVELS (error 1 .. debug 5): the loggers of levels past it do
        // nothing, not even build their message.
        host.raw_set("log_levels", shared.log.max() as u8 + 1)?;
        host.set_readonly(true);
        Ok(host)
    }

    /// `buildat.world`'s primitives over the session's [`WorldView`]:
    /// `world_get_voxel(x, y, z)`, `world_chunk_count()`, `world_block_names()`,
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
            "world_block_names",
            lua.create_function(move |_, ()| Ok(world(&s)?.block_names()))?,
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
        let data = match self.vm.lua().create_string(data) {
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
}
