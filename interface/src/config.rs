//! Keys understood by [`crate::Host::get_config`].
//!
//! Owns: the key names. Does not own: the values (the server sets them from
//! its command line and world).

/// This module's name (its folder's name).
pub const MODULE_NAME: &str = "module_name";
/// This module's folder, absolute.
pub const MODULE_PATH: &str = "module_path";
/// The world directory, absolute.
pub const WORLD_PATH: &str = "world_path";
/// Every module path, separated by newlines, in search order.
pub const MODULE_PATHS: &str = "module_paths";
/// The address the network module listens on (`--listen`).
pub const LISTEN: &str = "listen";
/// `1` when the server runs one command headless (`buildat-server NAME
/// ARGS...`) and exits: modules that serve players do not listen.
pub const HEADLESS: &str = "headless";
/// The server's log level (`error`, `warn`, `info`, `debug`, `trace`).
pub const LOG_LEVEL: &str = "log_level";
/// `0` while the server starts (the loader loading the modules of its
/// start, building them on a first start), `1` once it has started (the
/// moment of [`crate::events::Started`]). A host that does not know the key
/// (a test kit) answers nothing: take that as started.
pub const STARTED: &str = "started";

/// Every key above: the core's own, not a module's setting (a module reads
/// them without declaring them).
pub const CORE_KEYS: &[&str] = &[
    MODULE_NAME,
    MODULE_PATH,
    WORLD_PATH,
    MODULE_PATHS,
    LISTEN,
    HEADLESS,
    LOG_LEVEL,
    STARTED,
];
