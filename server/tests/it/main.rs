//! The server's integration tests, one binary (one link) for all: the module
//! host in-process with real module libraries (`core`), and the real
//! `buildat-server` binary over real sockets (`cli`, `network`,
//! `client_file`, `world`, `game`, `inventory`, `items`, `accounts`, `tls`, `forwarded`, `creatures`,
//! `api_reload`, `web`, `settings`, `settings_file`, `scaffold`, `examples`, `survival`,
//! `lua_mods`, `backup_schedule`, `rollback`), and the repository's own build
//! (`engine_features`). `common` is
//! what they share; the server driver and the wire client are
//! `buildat-harness`'s.

mod accounts;
mod active;
mod api_reload;
mod backup_schedule;
mod cli;
mod client_file;
mod common;
mod core;
mod creatures;
mod daytime;
mod engine_features;
mod examples;
mod forwarded;
mod game;
mod health;
mod inventory;
mod items;
mod liquid;
mod living;
mod lua_mods;
mod network;
mod operator_basics;
mod rollback;
mod scaffold;
mod settings;
mod settings_file;
mod survival;
mod tls;
mod web;
mod world;
