//! `buildat-server new-module NAME`: writes a module that builds, loads and
//! has a passing test, from the templates in `server/templates/module/`
//! (built into the binary): `meta.json`, `Cargo.toml`, `src/lib.rs` (a
//! chat command named after the module, counting greetings across
//! reloads), `tests/NAME.rs` (that command on the test kit) and
//! `client_lua/init.lua`; with `--lua`, a server-side Lua mod:
//! `meta.json` (no Rust, needs the `lua` module), `server_lua/init.lua`
//! (the same command in Lua, its count in mod storage) and
//! `client_lua/init.lua`; with `--lua-only`, `meta.json` (no server code)
//! and `client_lua/init.lua`.
//!
//! Owns: the templates and writing them. Does not own: where the engine's
//! crates come from (`crate::builder::outside`: the module names them as
//! `workspace = true`, and the module path gets the workspace the server
//! supplies) or loading (a running server loads a folder that appears in
//! one of its module paths, `crate::watch`).

use std::path::{Path, PathBuf};

use crate::core::check_module_name;

const CARGO_TOML: &str = include_str!("../templates/module/Cargo.toml.in");
const LIB_RS: &str = include_str!("../templates/module/lib.rs.in");
const TEST_RS: &str = include_str!("../templates/module/test.rs.in");
const INIT_LUA: &str = include_str!("../templates/module/init.lua.in");
const META_JSON: &str = include_str!("../templates/module/meta.json");
const META_LUA_ONLY_JSON: &str = include_str!("../templates/module/meta-lua-only.json");
const SERVER_INIT_LUA: &str = include_str!("../templates/module/server-init.lua.in");
const META_LUA_MOD_JSON: &str = include_str!("../templates/module/meta-lua-mod.json");

/// What kind of module `new-module` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModuleKind {
    /// Server code in Rust (a cdylib the server builds), and client Lua.
    Rust,
    /// Server code in Lua (run by the `lua` module), and client Lua.
    LuaMod,
    /// Client Lua only, no server code.
    ClientOnly,
}

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ScaffoldError {
    #[error(
        "'{0}' cannot name a module: letters, digits, '_' and '-', at most 64, not starting with '__'"
    )]
    BadName(String),
    #[error("{0} exists already; pick another name or remove it")]
    Exists(PathBuf),
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The files of a new module `name`, as paths inside its folder and their text.
pub fn module_files(name: &str, kind: ModuleKind) -> Result<Vec<(PathBuf, String)>, ScaffoldError> {
    if check_module_name(name).is_err() || name.starts_with("__") {
        return Err(ScaffoldError::BadName(name.to_string()));
    }
    let package = format!("buildat-module-{name}");
    let fill = |template: &str| {
        template
            .replace("{{name}}", name)
            .replace("{{package}}", &package)
            .replace("{{crate}}", &package.replace('-', "_"))
    };
    let mut files = vec![(PathBuf::from("client_lua/init.lua"), fill(INIT_LUA))];
    // The meta.json last: a folder is a module once it has its meta.json,
    // so a server watching never sees one without its other files.
    match kind {
        ModuleKind::ClientOnly => {
            files.push((PathBuf::from("meta.json"), META_LUA_ONLY_JSON.to_string()));
        }
        ModuleKind::LuaMod => files.extend([
            (PathBuf::from("server_lua/init.lua"), fill(SERVER_INIT_LUA)),
            (PathBuf::from("meta.json"), META_LUA_MOD_JSON.to_string()),
        ]),
        ModuleKind::Rust => files.extend([
            (PathBuf::from("Cargo.toml"), fill(CARGO_TOML)),
            (PathBuf::from("src/lib.rs"), fill(LIB_RS)),
            (PathBuf::from(format!("tests/{name}.rs")), fill(TEST_RS)),
            (PathBuf::from("meta.json"), META_JSON.to_string()),
        ]),
    }
    Ok(files)
}

/// Writes module `name` into the module path `modules` (created if
/// missing); returns its folder and the files written, in order.
pub fn write_module(
    modules: &Path,
    name: &str,
    kind: ModuleKind,
) -> Result<(PathBuf, Vec<PathBuf>), ScaffoldError> {
    let files = module_files(name, kind)?;
    let dir = modules.join(name);
    if dir.exists() {
        return Err(ScaffoldError::Exists(dir));
    }
    let mut written = Vec::new();
    for (relative, text) in files {
        let path = dir.join(&relative);
        let write = || -> std::io::Result<()> {
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(&path, text)
        };
        write().map_err(|source| ScaffoldError::Write {
            path: path.clone(),
            source,
        })?;
        written.push(relative);
    }
    Ok((dir, written))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked_and_templates_filled() {
        for bad in ["", "a b", "__loader", "x/y", "../up"] {
            assert!(
                matches!(
                    module_files(bad, ModuleKind::Rust),
                    Err(ScaffoldError::BadName(_))
                ),
                "{bad:?}"
            );
        }
        let files = module_files("my-mod", ModuleKind::Rust).expect("files");
        let names: Vec<String> = files.iter().map(|(p, _)| p.display().to_string()).collect();
        assert_eq!(
            names,
            [
                "client_lua/init.lua",
                "Cargo.toml",
                "src/lib.rs",
                "tests/my-mod.rs",
                "meta.json"
            ]
        );
        let text: String = files.iter().map(|(_, t)| t.as_str()).collect();
        assert!(!text.contains("{{"), "every placeholder filled");
        assert!(text.contains("name = \"buildat-module-my-mod\""));
        assert!(text.contains("use buildat_module_my_mod::Greeter;"));
        let lua_mod = module_files("garden", ModuleKind::LuaMod).expect("files");
        assert_eq!(lua_mod.len(), 3);
        let meta = &lua_mod.last().expect("meta.json").1;
        let meta: serde_json::Value = serde_json::from_str(meta).expect("json");
        assert_eq!(meta["disable_rust"], true);
        assert_eq!(meta["dependencies"][0]["module"], "lua");
        let init = &lua_mod[1].1;
        assert!(init.contains("register_chatcommand(\"garden\""), "{init}");
        let lua_only = module_files("plain", ModuleKind::ClientOnly).expect("files");
        assert_eq!(lua_only.len(), 2);
        assert!(lua_only.iter().any(|(p, t)| p == Path::new("meta.json")
            && serde_json::from_str::<serde_json::Value>(t).expect("json")["disable_rust"]
                == true));
    }

    #[test]
    fn an_existing_folder_is_never_overwritten() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (module, written) =
            write_module(dir.path(), "hello", ModuleKind::ClientOnly).expect("written");
        assert_eq!(written.len(), 2);
        assert!(module.join("client_lua/init.lua").is_file());
        assert!(matches!(
            write_module(dir.path(), "hello", ModuleKind::Rust),
            Err(ScaffoldError::Exists(_))
        ));
        assert!(!module.join("Cargo.toml").exists());
    }
}
