//! Calls: from a module or the console to a module (queued for the target's
//! thread and waited for, with a timeout or not; refused for failed, stuck
//! and Lua-only modules, and for cycles, through the wait-for graph), the
//! typed form ([`Core::call_typed`]), calls addressed to the `__core`
//! pseudo-module (load, unload, reload, list modules, register a console
//! command, declare and list settings: answered in `settings`), and
//! running a module's console command.
//!
//! Does not own: what a load, unload or reload does (`lifecycle`), the
//! command table (`commands`), serving a call on the module's thread
//! (`instance`), the wait-for graph itself (`waits`).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use buildat_interface::core_api::{self, ModuleState};
use buildat_interface::{Call, CallError, ModuleError};

use super::slot::{CallReply, FULL_QUEUE_WAIT, Message};
use super::{CONSOLE_CALLER, Core, CoreError, CoreInner, commands};

impl Core {
    /// Calls a module function as the console.
    pub fn call(&self, module: &str, function: &str, payload: &[u8]) -> Result<Vec<u8>, CallError> {
        self.inner.call(CONSOLE_CALLER, module, function, payload)
    }

    /// Like [`Core::call`] with another timeout (`None`: as long as it takes).
    pub fn call_with_timeout(
        &self,
        module: &str,
        function: &str,
        payload: &[u8],
        timeout: Option<Duration>,
    ) -> Result<Vec<u8>, CallError> {
        self.inner
            .call_with_timeout(CONSOLE_CALLER, module, function, payload, timeout)
    }

    /// Makes the call `args` defines, as the console, waiting as long as
    /// `timeout` (`None`: as long as it takes).
    pub fn call_typed<C: Call>(
        &self,
        args: &C,
        timeout: Option<Duration>,
    ) -> Result<C::Reply, CallError> {
        let payload =
            buildat_interface::encode(args).map_err(|e| CallError::Invalid(e.to_string()))?;
        let reply = self.call_with_timeout(C::MODULE, C::FUNCTION, &payload, timeout)?;
        buildat_interface::decode(&reply).map_err(|e| CallError::Invalid(e.to_string()))
    }

    /// The console commands modules registered, by name.
    pub fn module_commands(&self) -> Vec<(String, commands::ModuleCommand)> {
        self.inner.commands.list()
    }

    /// Runs a module's console command (no timeout: the operator asked and
    /// waits); `None` if no module registered `name`.
    pub fn run_module_command(
        &self,
        name: &str,
        args: Vec<String>,
    ) -> Option<Result<String, CallError>> {
        self.inner
            .run_module_command(CONSOLE_CALLER, name, args, None, None)
    }
}

/// A thread's reply channel, made once and reused by every call the
/// thread makes (a thread waits for one call at a time), so a call costs
/// no channel of its own. Answers carry their call's number.
struct Replies {
    to: crossbeam_channel::Sender<(u64, Result<Vec<u8>, CallError>)>,
    from: crossbeam_channel::Receiver<(u64, Result<Vec<u8>, CallError>)>,
    next: std::cell::Cell<u64>,
}

impl Replies {
    fn new() -> Self {
        let (to, from) = crossbeam_channel::unbounded();
        Self {
            to,
            from,
            next: std::cell::Cell::new(0),
        }
    }
}

thread_local! {
    static REPLIES: Replies = Replies::new();
}

impl CoreInner {
    /// Runs the command `name` on the module that registered it, for
    /// `caller` (waiting as long as `timeout`); `None` if nobody did.
    fn run_module_command(
        self: &Arc<Self>,
        caller: &str,
        name: &str,
        args: Vec<String>,
        by: Option<String>,
        timeout: Option<Duration>,
    ) -> Option<Result<String, CallError>> {
        let command = self.commands.get(name)?;
        let request = core_api::RunCommand {
            name: name.to_string(),
            args,
            by,
        };
        Some((|| {
            let payload = buildat_interface::encode(&request)
                .map_err(|e| CallError::Invalid(e.to_string()))?;
            let reply = self.call_with_timeout(
                caller,
                &command.module,
                core_api::RunCommand::FUNCTION,
                &payload,
                timeout,
            )?;
            buildat_interface::decode(&reply).map_err(|e| CallError::Invalid(e.to_string()))
        })())
    }

    pub fn call(
        self: &Arc<Self>,
        caller: &str,
        target: &str,
        function: &str,
        payload: &[u8],
    ) -> Result<Vec<u8>, CallError> {
        self.call_with_timeout(
            caller,
            target,
            function,
            payload,
            Some(self.config.call_timeout),
        )
    }

    /// Runs `function` on `target`'s thread and waits for the answer
    /// (`timeout: None` waits as long as it takes).
    pub(super) fn call_with_timeout(
        self: &Arc<Self>,
        caller: &str,
        target: &str,
        function: &str,
        payload: &[u8],
        timeout: Option<Duration>,
    ) -> Result<Vec<u8>, CallError> {
        if target == core_api::CORE {
            return self.core_call(caller, function, payload);
        }
        let slot = self
            .get_slot(target)
            .ok_or_else(|| CallError::NotFound(format!("no module named '{target}' is loaded")))?;
        match slot.state() {
            ModuleState::Failed(reason) => {
                return Err(CallError::Failed(format!(
                    "module {target} failed: {reason}"
                )));
            }
            ModuleState::Hung(what) => {
                return Err(CallError::Failed(format!(
                    "module {target} is stuck in {what}"
                )));
            }
            _ if slot.lua_only => {
                return Err(CallError::NotFound(format!(
                    "module {target} has no server code (disable_rust)"
                )));
            }
            _ => {}
        }
        let _wait = self.waits.begin(caller, target).map_err(CallError::Cycle)?;
        let send_and_wait = |replies: &Replies| {
            let call = replies.next.get();
            replies.next.set(call.wrapping_add(1));
            slot.push(
                Message::Call {
                    function: function.to_string(),
                    payload: payload.to_vec(),
                    reply: CallReply {
                        call,
                        to: replies.to.clone(),
                    },
                    queued_at: Instant::now(),
                },
                timeout.map_or(FULL_QUEUE_WAIT, |t| t.min(FULL_QUEUE_WAIT)),
            )
            .map_err(|full| CallError::Failed(full.to_string()))?;
            let deadline = timeout.map(|timeout| Instant::now() + timeout);
            loop {
                let received = match deadline {
                    Some(deadline) => replies.from.recv_deadline(deadline).map_err(|_| {
                        CallError::Timeout(format!(
                            "module {target} did not answer '{function}' within {} s",
                            timeout.unwrap_or_default().as_secs_f64()
                        ))
                    })?,
                    // The sender lives in `replies`: never disconnected here.
                    None => replies.from.recv().map_err(|_| {
                        CallError::Failed(format!("module {target} stopped before answering"))
                    })?,
                };
                match received {
                    (answered, answer) if answered == call => break answer,
                    // The late answer of a call this thread gave up on.
                    _ => continue,
                }
            }
        };
        // A thread whose thread-locals are being destroyed calls with a
        // channel of its own.
        REPLIES
            .try_with(|replies| send_and_wait(replies))
            .unwrap_or_else(|_| send_and_wait(&Replies::new()))
    }

    /// Calls addressed to `__core`.
    fn core_call(
        self: &Arc<Self>,
        caller: &str,
        function: &str,
        payload: &[u8],
    ) -> Result<Vec<u8>, CallError> {
        use buildat_interface::call::answer;
        use core_api::{
            CommandInfo, DeclareSettings, ListCommands, ListModules, ListSettings, LoadModule,
            RegisterCommand, ReloadModule, RunModuleCommand, UnloadModule,
        };
        let failed = |e: CoreError| ModuleError::msg(e.to_string());
        let check_not_caller = |name: &str| -> Result<(), ModuleError> {
            if name == caller {
                return Err(ModuleError::Call(CallError::Invalid(format!(
                    "module {caller} cannot {function} itself from its own thread"
                ))));
            }
            Ok(())
        };
        let result = if function == LoadModule::FUNCTION {
            answer(payload, |request: LoadModule| {
                self.load_module(&request.name, Some(Path::new(&request.path)))
                    .map_err(failed)
            })
        } else if function == UnloadModule::FUNCTION {
            answer(payload, |request: UnloadModule| {
                check_not_caller(&request.name)?;
                self.unload_module(&request.name).map_err(failed)
            })
        } else if function == ReloadModule::FUNCTION {
            answer(payload, |request: ReloadModule| {
                check_not_caller(&request.name)?;
                self.reload_module(&request.name).map_err(failed)
            })
        } else if function == ListModules::FUNCTION {
            answer(payload, |_: ListModules| Ok(self.list_modules()))
        } else if function == RegisterCommand::FUNCTION {
            answer(payload, |request: RegisterCommand| {
                self.commands
                    .check_register(caller, request)
                    .map_err(ModuleError::Message)
            })
        } else if function == ListCommands::FUNCTION {
            answer(payload, |_: ListCommands| {
                Ok(self
                    .commands
                    .list()
                    .into_iter()
                    .map(|(name, command)| CommandInfo {
                        name,
                        module: command.module,
                        usage: command.usage,
                        help: command.help,
                        privilege: command.privilege,
                    })
                    .collect::<Vec<_>>())
            })
        } else if function == DeclareSettings::FUNCTION {
            answer(payload, |request: DeclareSettings| {
                self.declare_settings(caller, request)
            })
        } else if function == ListSettings::FUNCTION {
            answer(payload, |_: ListSettings| Ok(self.list_settings()))
        } else if function == RunModuleCommand::FUNCTION {
            answer(payload, |request: RunModuleCommand| {
                if self
                    .commands
                    .get(&request.name)
                    .is_some_and(|c| c.module == caller)
                {
                    return Err(ModuleError::Call(CallError::Invalid(format!(
                        "'{}' is {caller}'s own command: it runs it itself",
                        request.name
                    ))));
                }
                let timeout = Some(self.config.call_timeout);
                self.run_module_command(caller, &request.name, request.args, request.by, timeout)
                    .unwrap_or_else(|| {
                        Err(CallError::NotFound(format!(
                            "no command named '{}'",
                            request.name
                        )))
                    })
                    .map_err(ModuleError::Call)
            })
        } else {
            Err(ModuleError::UnknownFunction(function.to_string()))
        };
        result.map_err(|error| match error {
            ModuleError::Call(call) => call,
            ModuleError::UnknownFunction(name) => {
                CallError::NotFound(format!("the core has no function '{name}'"))
            }
            ModuleError::Payload(error) => CallError::Invalid(error.to_string()),
            other => CallError::Failed(other.to_string()),
        })
    }
}
