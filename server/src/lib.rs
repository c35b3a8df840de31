//! `buildat-server` as a library: the module host and its parts, used by the
//! binary (`main.rs`), the benchmarks and the tests.
//!
//! Owns: [`core`] (module host, event bus, calls, watchdog), [`builder`]
//! (cargo builds of modules), [`console`], [`watch`] (module file
//! watching), [`module_paths`] (a module path added while running),
//! [`scaffold`] (`new-module`),
//! [`config`], the `settings` listing ([`settings`]) and the settings file
//! `world.toml` ([`world_settings`]). Does not own any
//! game behaviour: that lives in modules.

pub mod builder;
pub mod config;
pub mod console;
pub mod core;
pub mod module_paths;
pub mod scaffold;
pub mod settings;
pub mod watch;
pub mod world_settings;
