//! `buildat-interface`: the one crate Buildat modules link against.
//!
//! Owns the contract between the server and its modules: the C ABI
//! ([`abi`]), the safe [`Module`] trait and [`Host`] handle with the
//! [`export_module!`] macro ([`module`]), payload encoding ([`payload`]),
//! typed calls ([`call`]) and events ([`events`]), the table of what a
//! module receives ([`receive`]), an in-process host for module tests
//! ([`testing`]), typed settings ([`settings`]), the reload stash
//! ([`stash`]), the core's own events and calls ([`core_api`]),
//! configuration keys ([`config`]), `meta.json` ([`meta`]) and rate-limited
//! logging of what outsiders cause ([`log_limit`]).
//!
//! Does not own any server behaviour (no threads, no loading, no I/O beyond
//! reading `meta.json`), nor any module's API: each shared module publishes
//! its API as a crate of its own (`modules/<name>/api`), versioned on its own,
//! so changing one never changes this crate's version stamp and a reload can
//! pick it up.

pub mod abi;
pub mod call;
pub mod config;
pub mod core_api;
pub mod events;
pub mod log_limit;
pub mod meta;
pub mod module;
pub mod payload;
pub mod receive;
pub mod settings;
pub mod shared;
pub mod stash;
pub mod testing;

pub use call::Call;
pub use clap;
pub use events::Event;
pub use log;
pub use module::{CallError, Host, HostError, Module, ModuleError, UnloadKind};
pub use payload::{PayloadError, decode, encode};
pub use receive::Receive;
pub use shared::SharedBytes;
pub use stash::{Stash, StashError};
