//! What a module receives, declared in one table: events, calls, console
//! and chat commands and its reload stash, each by its typed definition.
//!
//! A module fills its [`Receive`] table in [`crate::Module::receive`]; the
//! glue then subscribes every event in it, decodes what arrives and calls
//! the handler, refuses a payload that does not decode (in one place, with
//! the event's or call's name), answers `run_command` for the commands,
//! registers them with the core on `core:start` and `core:continue`, and
//! carries the stash over a reload. So what a module subscribes to and
//! what it handles cannot drift apart.
//!
//! Owns: the table, its dispatch ([`Dispatch`], shared by the glue and the
//! test kit). Does not own: packets (an extension in `buildat-network-api`
//! over [`Receive::event_named`]), delivery (the host), the module's state.

use std::collections::BTreeMap;

use clap::Parser;
use serde::de::DeserializeOwned;

use crate::core_api::{ApplySettings, RegisterCommand, RunCommand};
use crate::events::{Continue, Event, Start};
use crate::module::{Host, Module, ModuleError, UnloadKind};
use crate::stash::Stash;
use crate::{Call, payload};

type EventFn<M> = Box<dyn FnMut(&mut M, &[u8]) -> Result<(), ModuleError>>;
type CallFn<M> = Box<dyn FnMut(&mut M, &[u8]) -> Result<Vec<u8>, ModuleError>>;
type CommandFn<M> = Box<dyn FnMut(&mut M, Option<&str>, &[String]) -> Result<String, ModuleError>>;

/// Tells the core what a settings struct declares.
type DeclareFn = fn(&Host) -> Result<(), ModuleError>;
type SaveFn<M> = Box<dyn FnMut(&mut M) -> Result<Vec<u8>, ModuleError>>;
/// Reads a settings struct again and applies it (`apply_settings`).
type ApplyFn<M> = Box<dyn FnMut(&mut M, &Host, &[String]) -> Result<String, ModuleError>>;

/// What carries a module's state over its own reload.
struct StashHooks<M> {
    save: SaveFn<M>,
    restore: EventFn<M>,
}

/// One command: what the core is told, and what runs it.
struct Command<M> {
    register: RegisterCommand,
    run: CommandFn<M>,
}

/// A module's table of what it receives (see the [module docs](self)).
pub struct Receive<M> {
    host: Host,
    events: BTreeMap<String, EventFn<M>>,
    calls: BTreeMap<&'static str, CallFn<M>>,
    commands: BTreeMap<String, Command<M>>,
    stash: Option<StashHooks<M>>,
    /// Each settings struct's declaration to the core (`declare_settings`).
    settings: Vec<DeclareFn>,
    /// What applies each namespace's live settings, by namespace.
    live: BTreeMap<&'static str, ApplyFn<M>>,
}

/// Panics on a second handler for one name: a module's table is its own
/// code, and the panic (during load, caught by the glue) names the name.
fn check_new<V>(map: &BTreeMap<impl Ord + std::borrow::Borrow<str>, V>, what: &str, name: &str) {
    assert!(
        !map.contains_key(name),
        "the receive table has two handlers for {what} '{name}'"
    );
}

impl<M: 'static> Receive<M> {
    /// An empty table for an instance using `host`.
    pub fn new(host: Host) -> Self {
        Self {
            host,
            events: BTreeMap::new(),
            calls: BTreeMap::new(),
            commands: BTreeMap::new(),
            stash: None,
            settings: Vec::new(),
            live: BTreeMap::new(),
        }
    }

    /// The instance's host, for handlers that need it.
    pub fn host(&self) -> Host {
        self.host
    }

    /// Handles the event `E` defines. `core:start` and `core:continue` come
    /// without subscribing; every other event is subscribed after `init`.
    pub fn event<E: Event>(
        &mut self,
        mut handler: impl FnMut(&mut M, E) -> Result<(), ModuleError> + 'static,
    ) -> &mut Self {
        self.event_named(E::NAME, move |module, event: E| handler(module, event))
    }

    /// Handles events named `name` (known at run time), decoded as `T`.
    pub fn event_named<T: DeserializeOwned>(
        &mut self,
        name: impl Into<String>,
        mut handler: impl FnMut(&mut M, T) -> Result<(), ModuleError> + 'static,
    ) -> &mut Self {
        let name = name.into();
        let what = name.clone();
        self.event_raw(name, move |module, bytes| {
            let value = payload::decode(bytes).map_err(|error| ModuleError::Malformed {
                what: format!("event {what}"),
                error,
            })?;
            handler(module, value)
        })
    }

    /// Handles events named `name` with their payload undecoded.
    pub fn event_raw(
        &mut self,
        name: impl Into<String>,
        handler: impl FnMut(&mut M, &[u8]) -> Result<(), ModuleError> + 'static,
    ) -> &mut Self {
        let name = name.into();
        check_new(&self.events, "event", &name);
        self.events.insert(name, Box::new(handler));
        self
    }

    /// Answers the call `C` defines, with `answer_calls!`'s guarantees: the
    /// argument decoded (an error naming the call if it does not), the
    /// reply encoded.
    pub fn call<C: Call>(
        &mut self,
        mut handler: impl FnMut(&mut M, C) -> Result<C::Reply, ModuleError> + 'static,
    ) -> &mut Self {
        check_new(&self.calls, "call", C::FUNCTION);
        self.calls.insert(
            C::FUNCTION,
            Box::new(move |module, bytes| {
                let args: C = payload::decode(bytes).map_err(|error| ModuleError::Malformed {
                    what: format!("call {}", C::FUNCTION),
                    error,
                })?;
                Ok(payload::encode(&handler(module, args)?)?)
            }),
        );
        self
    }

    /// A console command whose arguments `A` parses (`#[derive(Parser)]`
    /// with `#[command(name = "...", about = "...")]`: its name, usage and
    /// help come from there). With `privilege`, players holding it may run
    /// it in chat as `/NAME ...` too. The handler gets who ran it (a
    /// player's name, `None` on the console) and answers the reply; words
    /// that do not parse are answered with clap's message and usage.
    pub fn command<A: Parser + 'static>(
        &mut self,
        privilege: Option<&str>,
        mut handler: impl FnMut(&mut M, Option<&str>, A) -> Result<String, ModuleError> + 'static,
    ) -> &mut Self {
        let definition = A::command();
        let name = definition.get_name().to_string();
        check_new(&self.commands, "command", &name);
        let register = RegisterCommand {
            name: name.clone(),
            usage: usage_of(&definition),
            help: definition
                .get_about()
                .map(|about| about.to_string())
                .unwrap_or_default(),
            privilege: privilege.map(str::to_string),
        };
        let run: CommandFn<M> = Box::new(move |module, by, words| {
            let parsed = A::try_parse_from(
                std::iter::once(name.as_str()).chain(words.iter().map(String::as_str)),
            );
            match parsed {
                Ok(args) => handler(module, by, args),
                Err(error) if !error.use_stderr() => Ok(error.render().to_string()),
                Err(error) => Err(ModuleError::Usage(error.render().to_string())),
            }
        });
        self.commands
            .insert(register.name.clone(), Command { register, run });
        self
    }

    /// Carries `S` over a reload: `save` makes it when the module unloads
    /// for a reload, `restore` gets it on the next version's
    /// `core:continue` (before that version's own `core:continue` handler).
    /// A stash of another layout is logged and dropped: the new version
    /// starts fresh.
    pub fn stash<S: Stash + 'static>(
        &mut self,
        mut save: impl FnMut(&mut M) -> S + 'static,
        mut restore: impl FnMut(&mut M, S) -> Result<(), ModuleError> + 'static,
    ) -> &mut Self {
        assert!(self.stash.is_none(), "the receive table has two stashes");
        self.stash = Some(StashHooks {
            save: Box::new(move |module| Ok(crate::stash::encode_stash(&save(module))?)),
            restore: Box::new(move |module, bytes| {
                restore(module, crate::stash::decode_stash::<S>(bytes)?)
            }),
        });
        self
    }

    /// Declares the settings `S` to the core on `core:start` and
    /// `core:continue` (`buildat-server settings` lists them); the module
    /// reads them with [`crate::settings::Settings::read`], so a change is
    /// read at its next reload (none is declared live: for those, see
    /// [`Self::live_settings`]).
    pub fn settings<S: crate::settings::Settings>(&mut self) -> &mut Self {
        self.settings.push(S::declare_read_at_start);
        self
    }

    /// Declares the settings `S` as [`Self::settings`] does, those marked
    /// `#[live]` live: when the console's `set` changes one, the core calls
    /// `apply_settings` ([`ApplySettings`]) and `apply` gets `S` read again
    /// with the keys changed, on the module's thread. Its reply tells the
    /// operator what it did; an error (also a value `S` does not read)
    /// means the module keeps what it had, and the core puts the file
    /// back.
    pub fn live_settings<S: crate::settings::Settings + 'static>(
        &mut self,
        mut apply: impl FnMut(&mut M, S, &[String]) -> Result<String, ModuleError> + 'static,
    ) -> &mut Self {
        check_new(&self.live, "live settings", S::NAMESPACE);
        self.settings.push(S::declare);
        self.live.insert(
            S::NAMESPACE,
            Box::new(move |module, host, keys| apply(module, S::read(host)?, keys)),
        );
        self
    }

    /// The names of the events the table handles, for subscribing.
    pub fn event_names(&self) -> impl Iterator<Item = &str> {
        self.events.keys().map(String::as_str)
    }

    /// The commands the table registers with the core.
    pub fn commands(&self) -> impl Iterator<Item = &RegisterCommand> {
        self.commands.values().map(|command| &command.register)
    }
}

/// The arguments part of a command's usage (`<NAME> [--radius N]`:
/// clap's usage without "Usage: " and the name), as the core lists it.
pub fn usage_of(definition: &clap::Command) -> String {
    let usage = definition.clone().render_usage().to_string();
    let usage = usage.trim().trim_start_matches("Usage:").trim();
    usage
        .strip_prefix(definition.get_name())
        .unwrap_or(usage)
        .trim()
        .to_string()
}

/// A module and its table: what the glue and the test kit drive, one
/// message at a time on the module's thread.
pub struct Dispatch<M> {
    module: M,
    table: Receive<M>,
}

impl<M: Module> Dispatch<M> {
    /// `Module::create`, then its table.
    pub fn create(host: Host) -> Result<Self, ModuleError> {
        let module = M::create(host)?;
        let mut table = Receive::new(host);
        M::receive(&mut table);
        Ok(Self { module, table })
    }

    pub fn module(&self) -> &M {
        &self.module
    }

    pub fn module_mut(&mut self) -> &mut M {
        &mut self.module
    }

    /// `Module::init`, then a subscription to every event in the table.
    pub fn init(&mut self) -> Result<(), ModuleError> {
        self.module.init()?;
        for name in self.table.events.keys() {
            if name != Start::NAME && name != Continue::NAME {
                self.table.host.sub_event(name)?;
            }
        }
        Ok(())
    }

    /// One event: the table's handler or `Module::event`. On `core:start`
    /// and `core:continue`, the stash comes back first and the commands
    /// and the settings are declared after.
    pub fn event(&mut self, name: &str, payload: &[u8]) -> Result<(), ModuleError> {
        let starting = name == Start::NAME || name == Continue::NAME;
        if name == Continue::NAME {
            self.restore_stash()?;
        }
        match self.table.events.get_mut(name) {
            Some(handler) => handler(&mut self.module, payload)?,
            None => self.module.event(name, payload)?,
        }
        if starting {
            for declare in &self.table.settings {
                declare(&self.table.host)?;
            }
            for command in self.table.commands.values() {
                self.table.host.call(&command.register)?;
            }
        }
        Ok(())
    }

    /// One call: the table's handler, its commands (`run_command`), or
    /// `Module::call`.
    pub fn call(&mut self, function: &str, payload: &[u8]) -> Result<Vec<u8>, ModuleError> {
        if let Some(handler) = self.table.calls.get_mut(function) {
            return handler(&mut self.module, payload);
        }
        if function == ApplySettings::FUNCTION && !self.table.live.is_empty() {
            let request: ApplySettings =
                payload::decode(payload).map_err(|error| ModuleError::Malformed {
                    what: format!("call {function}"),
                    error,
                })?;
            let Some(apply) = self.table.live.get_mut(request.namespace.as_str()) else {
                return Err(ModuleError::Message(format!(
                    "the settings of {} are not applied live: they are read at the next reload",
                    request.namespace
                )));
            };
            let reply = apply(&mut self.module, &self.table.host, &request.keys)?;
            return Ok(payload::encode(&reply)?);
        }
        if function == RunCommand::FUNCTION && !self.table.commands.is_empty() {
            let run: RunCommand =
                payload::decode(payload).map_err(|error| ModuleError::Malformed {
                    what: format!("call {function}"),
                    error,
                })?;
            if let Some(command) = self.table.commands.get_mut(&run.name) {
                let reply = (command.run)(&mut self.module, run.by.as_deref(), &run.args)?;
                return Ok(payload::encode(&reply)?);
            }
        }
        self.module.call(function, payload)
    }

    /// `Module::unload`, then (for a reload) the table's stash.
    pub fn unload(&mut self, kind: UnloadKind) -> Result<(), ModuleError> {
        self.module.unload(kind)?;
        if kind == UnloadKind::Reload
            && let Some(stash) = &mut self.table.stash
        {
            let bytes = (stash.save)(&mut self.module)?;
            self.table
                .host
                .tmp_store_data(crate::stash::STASH_NAME, &bytes)?;
        }
        Ok(())
    }

    fn restore_stash(&mut self) -> Result<(), ModuleError> {
        let Some(stash) = &mut self.table.stash else {
            return Ok(());
        };
        let Some(bytes) = self.table.host.tmp_restore_data(crate::stash::STASH_NAME) else {
            return Ok(());
        };
        match (stash.restore)(&mut self.module, &bytes) {
            Err(ModuleError::Stash(error)) => {
                self.table.host.log(
                    log::Level::Warn,
                    &format!("starting without the previous version's state: {error}"),
                );
                Ok(())
            }
            other => other,
        }
    }
}
