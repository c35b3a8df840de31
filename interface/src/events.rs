//! Typed event payloads and the names of the core's events.
//!
//! Owns: the [`Event`] trait (a name plus a serde payload) and the core's
//! events. Does not own: delivery (the server's bus) or other modules' events
//! (each module defines its own in its crate or in a shared one).

use serde::{Deserialize, Serialize, de::DeserializeOwned};

/// A typed event: its bus name and its bincode payload.
pub trait Event: Serialize + DeserializeOwned {
    const NAME: &'static str;
}

/// Delivered to a module once after its `init` on a fresh load.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Start {}
impl Event for Start {
    const NAME: &'static str = "core:start";
}

/// Delivered to a module once after its `init` on a reload, instead of
/// `core:start`: restore what `core:unload` stashed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Continue {}
impl Event for Continue {
    const NAME: &'static str = "core:continue";
}

/// The server has started: every module the loader loads at start is
/// loaded. Emitted once; a module loaded later reads
/// [`crate::config::STARTED`] instead. The network module accepts players
/// from then on, so every module sees each player connect.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Started {}
impl Event for Started {
    const NAME: &'static str = "core:started";
}

/// Emitted at the server's tick rate to subscribers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Tick {
    /// Seconds since the previous tick.
    pub dtime: f64,
}
impl Event for Tick {
    const NAME: &'static str = "core:tick";
}

/// A module finished loading (after its `init`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModuleLoaded {
    pub name: String,
}
impl Event for ModuleLoaded {
    const NAME: &'static str = "core:module_loaded";
}

/// A module was unloaded (not emitted for the unload half of a reload).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModuleUnloaded {
    pub name: String,
}
impl Event for ModuleUnloaded {
    const NAME: &'static str = "core:module_unloaded";
}

/// A file of a module changed on disk outside its server code (client files).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModuleModified {
    pub name: String,
    pub path: String,
}
impl Event for ModuleModified {
    const NAME: &'static str = "core:module_modified";
}
