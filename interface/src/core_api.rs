//! Calls the core answers under the pseudo-module name [`CORE`], with their
//! bincode request and response types. Used by `__loader` and tools.
//!
//! Owns: the function names and payload types. Does not own: their
//! implementation (the server's module host).

use serde::{Deserialize, Serialize};

/// Module name that addresses the core itself in `Host::call`.
pub const CORE: &str = "__core";
/// The first module the core loads; it loads all the others.
pub const LOADER: &str = "__loader";

/// `load_module`: build if needed, load, init, deliver `core:start`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadModule {
    pub name: String,
    /// The module's folder.
    pub path: String,
}

/// `unload_module`: `core:unload`, stop, unload (dependents first).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UnloadModule {
    pub name: String,
}

/// `reload_module`: rebuild if changed, then unload and load keeping queued
/// events.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReloadModule {
    pub name: String,
}

/// `list_modules`: every known module and its state.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ListModules {}

crate::calls! {
    module CORE;
    LoadModule = "load_module" -> ();
    UnloadModule = "unload_module" -> ();
    ReloadModule = "reload_module" -> ();
    ListModules = "list_modules" -> Vec<ModuleInfo>;
}

/// `register_command`: the calling module offers a console command. The
/// operator's `NAME ARGS...` line (or `buildat-server NAME ARGS...` run
/// headless) reaches the module as [`RunCommand`]; `help` lists it with
/// its module. A module registers its commands on `core:start` and
/// `core:continue`; they go when it unloads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RegisterCommand {
    /// One word: letters, digits, `_` and `-`.
    pub name: String,
    /// The arguments, e.g. `--radius N [--height H]`.
    pub usage: String,
    /// One line saying what the command does.
    pub help: String,
    /// `Some(privilege)`: players holding it may run the command in chat
    /// too (`/NAME ARGS...`, the game checks the privilege); `None`: the
    /// console only.
    pub privilege: Option<String>,
}

/// `list_commands`: every command modules registered.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ListCommands {}

/// One registered command, as [`ListCommands`] answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommandInfo {
    pub name: String,
    /// The module that registered it.
    pub module: String,
    pub usage: String,
    pub help: String,
    /// See [`RegisterCommand::privilege`].
    pub privilege: Option<String>,
}

/// `run_module_command`: runs a command another module registered, as
/// [`RunCommand`] with `by` (a game running a player's chat command after
/// checking the privilege); answers the command's reply. Refused for the
/// caller's own commands (it runs those itself).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunModuleCommand {
    pub name: String,
    pub args: Vec<String>,
    pub by: Option<String>,
}

crate::calls! {
    module CORE;
    RegisterCommand = "register_command" -> ();
    ListCommands = "list_commands" -> Vec<CommandInfo>;
    RunModuleCommand = "run_module_command" -> String;
}

/// `declare_settings`: the calling module's settings under `namespace`
/// ([`crate::settings::Settings::declare`], on `core:start` and
/// `core:continue`), replacing what it declared before under it; kept
/// until the module unloads. The core warns about `--set` keys and
/// `world.toml` keys in the namespace that none declares (with the nearest
/// declared name) and refuses a value set for one that is not of its type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeclareSettings {
    pub namespace: String,
    pub settings: Vec<crate::settings::SettingInfo>,
}

/// `list_settings`: every loaded module's declared settings, in load order,
/// with their current values.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ListSettings {}

/// One module's settings, as [`ListSettings`] answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModuleSettings {
    pub module: String,
    pub settings: Vec<CurrentSetting>,
}

/// A declared setting and its value now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CurrentSetting {
    pub info: crate::settings::SettingInfo,
    /// The value set (`--set KEY=VALUE`, else `world.toml`); `None`:
    /// unset, the default holds.
    pub value: Option<String>,
    /// Where `value` came from.
    pub source: SettingSource,
}

/// Where a setting's value comes from, strongest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SettingSource {
    /// `--set KEY=VALUE`, for one run.
    Set,
    /// The module's table in `<world>/world.toml`.
    File,
    /// Neither: the declared default.
    Default,
}

impl SettingSource {
    /// As `buildat-server settings` shows it.
    pub fn label(self) -> &'static str {
        match self {
            Self::Set => "--set",
            Self::File => "world.toml",
            Self::Default => "default",
        }
    }
}

crate::calls! {
    module CORE;
    DeclareSettings = "declare_settings" -> ();
    ListSettings = "list_settings" -> Vec<ModuleSettings>;
}

/// Answered by a module for settings it declared live (`#[live]` in
/// [`crate::settings!`], [`crate::Receive::live_settings`]): the console's
/// `set` changed `keys` of `namespace` (kept in `world.toml` already); the
/// module reads its settings again and applies them now. The reply says
/// what applying did (may be empty); an error (a value it cannot take)
/// leaves the module on the values it had, and the core puts the file
/// back. Addressed to the declaring module (the core does this).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApplySettings {
    pub namespace: String,
    /// `namespace.field` of each setting changed.
    pub keys: Vec<String>,
}

impl crate::Call for ApplySettings {
    /// No fixed module: the core calls the module that declared them.
    const MODULE: &'static str = "";
    const FUNCTION: &'static str = "apply_settings";
    type Reply = String;
}

/// Answered by a module for each command it registered: run it with the
/// words after its name; the reply is what the console prints. Addressed to
/// the registering module with `Host::call_module` (the core does this).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunCommand {
    pub name: String,
    pub args: Vec<String>,
    /// Who ran it: a player's name from chat, `None` from the console.
    pub by: Option<String>,
}

impl crate::Call for RunCommand {
    /// No fixed module: the core calls the module that registered the command.
    const MODULE: &'static str = "";
    const FUNCTION: &'static str = "run_command";
    type Reply = String;
}

/// `load_all`, answered by `__loader`: load every module found, in
/// dependency order.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LoadAll {}

/// `load_with_dependencies`, answered by `__loader`: load a module after
/// whatever it needs that is not loaded yet (dependencies, and modules
/// naming it as a reverse dependency); answers the modules loaded, in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadWithDependencies {
    pub name: String,
}

crate::calls! {
    module LOADER;
    LoadAll = "load_all" -> ();
    LoadWithDependencies = "load_with_dependencies" -> Vec<String>;
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ModuleState {
    Building,
    Loading,
    Loaded,
    Reloading,
    Unloading,
    /// Stopped after an error or panic; the reason is kept.
    Failed(String),
    /// Stuck in a handler past the watchdog limit; abandoned if unloaded.
    Hung(String),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModuleInfo {
    pub name: String,
    pub path: String,
    pub state: ModuleState,
    /// Hash of the module's build inputs, empty for Lua-only modules.
    pub build_hash: String,
    /// Milliseconds since the Unix epoch when the current instance loaded.
    pub loaded_at_unix_ms: u64,
    /// Position in load order (0 = first).
    pub load_index: u32,
    /// Messages (events and calls) waiting in its queue.
    pub queued: u64,
    /// How long its messages waited and its handlers ran.
    pub times: QueueTimes,
}

/// Upper bounds (seconds) of [`QueueTimes::wait_buckets`] but the last,
/// which counts the longer waits.
pub const QUEUE_WAIT_BOUNDS_S: [f64; 9] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0];

/// A module's messages since the server started (the queue belongs to the
/// module's place in the host, so the counts go on across reloads): how
/// long each waited in the queue before the module's thread took it, and
/// how long the module's handlers ran. A message's wait is what a module
/// busy with something else adds to the latency of everything sent to it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct QueueTimes {
    /// Messages by wait: `wait_buckets[i]` waited at most
    /// `QUEUE_WAIT_BOUNDS_S[i]` and more than the bound before it; the
    /// last, longer than every bound.
    pub wait_buckets: Vec<u64>,
    /// The waits added up.
    pub wait_seconds: f64,
    /// Events and calls handled.
    pub handled: u64,
    /// Time in its handlers (calls it made to others included).
    pub busy_seconds: f64,
}

impl QueueTimes {
    /// The bound under which `percent` of the waits fell (`f64::INFINITY`
    /// past the last bound); None before any message.
    pub fn get_wait_percentile_s(&self, percent: f64) -> Option<f64> {
        let total: u64 = self.wait_buckets.iter().sum();
        if total == 0 {
            return None;
        }
        let wanted = (total as f64 * percent / 100.0).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (i, count) in self.wait_buckets.iter().enumerate() {
            seen += count;
            if seen >= wanted {
                return Some(QUEUE_WAIT_BOUNDS_S.get(i).copied().unwrap_or(f64::INFINITY));
            }
        }
        Some(f64::INFINITY)
    }

    /// [`Self::get_wait_percentile_s`] for people: `≤ 25 ms`, `> 1 s`, or
    /// `-` before any message.
    pub fn wait_percentile_text(&self, percent: f64) -> String {
        match self.get_wait_percentile_s(percent) {
            None => "-".to_string(),
            Some(bound) if bound.is_infinite() => {
                let last = QUEUE_WAIT_BOUNDS_S[QUEUE_WAIT_BOUNDS_S.len() - 1];
                format!("> {last} s")
            }
            Some(bound) => format!("≤ {} ms", bound * 1000.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wait_percentiles_are_bucket_bounds() {
        let mut times = QueueTimes {
            wait_buckets: vec![0; QUEUE_WAIT_BOUNDS_S.len() + 1],
            ..QueueTimes::default()
        };
        assert_eq!(times.get_wait_percentile_s(99.0), None);
        times.wait_buckets[0] = 98;
        times.wait_buckets[4] = 1;
        times.wait_buckets[QUEUE_WAIT_BOUNDS_S.len()] = 1;
        assert_eq!(times.get_wait_percentile_s(50.0), Some(0.001));
        assert_eq!(times.get_wait_percentile_s(99.0), Some(0.025));
        assert_eq!(times.get_wait_percentile_s(100.0), Some(f64::INFINITY));
        assert_eq!(times.wait_percentile_text(99.0), "≤ 25 ms");
        assert_eq!(times.wait_percentile_text(100.0), "> 1 s");
        assert_eq!(QueueTimes::default().wait_percentile_text(99.0), "-");
    }
}
