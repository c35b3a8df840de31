//! What tests and benches of Lua mods start from: modkit's test world
//! whose module list names the Lua mods to run, and a mod folder in a temp
//! dir.
//!
//! Owns: [`world_with`], [`TempMod`], [`examples`]. Does not own: the test
//! world (`buildat_modkit::testing`).

use std::path::{Path, PathBuf};

use buildat_interface::core_api::{ListModules, ModuleInfo, ModuleState};
use buildat_interface::testing::TestHost;
use buildat_modkit::testing::TestWorld;

/// The folder of the example Lua mods.
pub fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/lua_mods")
}

/// A test world whose module list holds `mods` (name, folder), on a kit named
/// `lua` with `config`.
pub fn world_with(mods: &[(&str, PathBuf)], config: &[(&str, &str)]) -> TestWorld {
    let mut kit = TestHost::new().name("lua");
    for (key, value) in config {
        kit = kit.config(key, value);
    }
    let infos: Vec<ModuleInfo> = mods
        .iter()
        .enumerate()
        .map(|(index, (name, dir))| ModuleInfo {
            name: name.to_string(),
            path: dir.display().to_string(),
            state: ModuleState::Loaded,
            build_hash: String::new(),
            loaded_at_unix_ms: 0,
            load_index: index as u32,
            queued: 0,
            times: Default::default(),
        })
        .collect();
    kit.answer(move |_: ListModules| Ok(infos.clone()));
    TestWorld::on(kit)
}

/// A mod folder in a temp dir with `init.lua` holding `source`.
pub struct TempMod {
    pub dir: PathBuf,
}

impl TempMod {
    pub fn new(name: &str, source: &str) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "buildat-lua-test-{}-{name}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("server_lua")).expect("temp dir");
        let made = Self { dir };
        made.write(source);
        made
    }

    pub fn write(&self, source: &str) {
        std::fs::write(self.dir.join("server_lua/init.lua"), source).expect("write init.lua");
    }
}

impl Drop for TempMod {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
