//! `buildat-interface`: the one crate Buildat modules link against.
//!
//! Owns the contract between the server and its modules: the C ABI
//! ([`abi`]), the safe [`Module`] trait and [`Host`] handle with the
//! [`export_module!`] macro ([`module`]), payload encoding ([`payload`]),
//! the core's events ([`events`]) and calls ([`core_api`]), configuration keys
//! ([`config`]), `meta.json` ([`meta`]) and the APIs of the modules every
//! player-facing module uses ([`network`], [`client_file`], [`voxelworld`]). Does not own any server
//! behaviour: no threads, no loading, no I/O beyond reading `meta.json`.

pub mod abi;
pub mod client_file;
pub mod config;
pub mod core_api;
pub mod events;
pub mod meta;
pub mod module;
pub mod network;
pub mod payload;
pub mod voxelworld;

pub use events::Event;
pub use log;
pub use module::{CallError, Host, HostError, Module, ModuleError, UnloadKind};
pub use payload::{DecodeError, decode, encode};
