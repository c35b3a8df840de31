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
pub const LOAD_MODULE: &str = "load_module";
/// `unload_module`: `core:unload`, stop, unload.
pub const UNLOAD_MODULE: &str = "unload_module";
/// `reload_module`: rebuild if changed, then unload and load keeping queued events.
pub const RELOAD_MODULE: &str = "reload_module";
/// `list_modules`: every known module and its state.
pub const LIST_MODULES: &str = "list_modules";
/// `loader:load_all`, answered by `__loader`: load every module found.
pub const LOADER_LOAD_ALL: &str = "load_all";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadModule {
    pub name: String,
    /// The module's folder.
    pub path: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModuleName {
    pub name: String,
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
}
