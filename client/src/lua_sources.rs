//! The client runtime's own Lua (the top-level `client_lua/` folder),
//! embedded in the binary so it runs from any directory.
//!
//! Owns: the list of embedded files. Does not own: what they do (see the
//! files themselves) or how they run (`sandbox`).

/// `client_lua/boot.lua`: sandbox glue, module and extension require, API
/// helpers. Runs unsandboxed once per runtime.
pub const BOOT: &str = include_str!("../../client_lua/boot.lua");

/// Extensions, by name: `client_lua/extensions/<name>/init.lua`.
pub const EXTENSIONS: &[(&str, &str)] = &[(
    "json",
    include_str!("../../client_lua/extensions/json/init.lua"),
)];

/// The source of extension `name`.
pub fn extension(name: &str) -> Option<&'static str> {
    EXTENSIONS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, source)| *source)
}
