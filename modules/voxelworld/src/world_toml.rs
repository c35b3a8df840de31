//! `<world>/world.toml`: reading it, writing the default into a new world,
//! and the one a restore writes from a backup.
//!
//! Owns: the file's fields (`[world]`: `name`, `seed`, `section_size`,
//! `storage`), its mode (0600, like the world's other secrets: a
//! PostgreSQL URL may hold a password), and what a restore takes from a
//! backup's copy: the world's own fields only (name, seed, section size),
//! parsed as TOML and written into the default file, never where the world
//! is stored (a backup cannot redirect a world).
//! Does not own: what the storage setting means (`storage.rs`), when a
//! restore runs (`lib.rs`).

use std::path::Path;

use buildat_interface::{ModuleError, log};
use buildat_voxel::geometry::SectionSize;
use buildat_voxelworld_api::WorldConfig;
use serde::Deserialize;

/// The default `world.toml`, written into a new world directory.
pub const DEFAULT_WORLD_TOML: &str = include_str!("../world.toml");

#[derive(Debug, Default, Deserialize)]
struct WorldToml {
    #[serde(default)]
    world: WorldSection,
}

#[derive(Debug, Default, Deserialize)]
struct WorldSection {
    #[serde(default)]
    name: String,
    #[serde(default)]
    seed: u64,
    section_size: Option<[i32; 3]>,
    /// Where the world is stored (`sqlite`, `sqlite:PATH`, `postgresql://`).
    #[serde(default)]
    storage: String,
}

/// `world.toml` as read: what other modules are told, and where the world
/// is stored.
pub struct ReadConfig {
    pub config: WorldConfig,
    pub storage: String,
}

fn check_section_size(size: Option<[i32; 3]>) -> Result<SectionSize, String> {
    let size = size.map(SectionSize).unwrap_or_default();
    if size.0.iter().any(|s| !(1..=64).contains(s)) {
        return Err("section_size must be 1 to 64 chunks on each side".into());
    }
    Ok(size)
}

/// Reads `<world>/world.toml`, writing the default first (mode 0600) in a
/// new world, and taking group and other access away from one that had
/// it. The only parser of the file.
pub fn read_world_config(world_path: &Path) -> Result<ReadConfig, ModuleError> {
    let path = world_path.join("world.toml");
    if std::fs::symlink_metadata(&path).is_err() {
        match crate::files::write_new_private(&path, DEFAULT_WORLD_TOML.as_bytes()) {
            Ok(()) => log::info!("new world: wrote {}", path.display()),
            // Another process wrote it just now: read theirs.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => {
                return Err(ModuleError::msg(format!(
                    "cannot write {}: {e}",
                    path.display()
                )));
            }
        }
    }
    crate::files::tighten_logged(&path).map_err(|e| {
        ModuleError::msg(format!("{}: cannot make it private: {e}", path.display()))
    })?;
    let text = std::fs::read_to_string(&path)
        .map_err(|e| ModuleError::msg(format!("cannot read {}: {e}", path.display())))?;
    let parsed: WorldToml =
        toml::from_str(&text).map_err(|e| ModuleError::msg(format!("{}: {e}", path.display())))?;
    let size = check_section_size(parsed.world.section_size)
        .map_err(|e| ModuleError::msg(format!("{}: {e}", path.display())))?;
    Ok(ReadConfig {
        config: WorldConfig {
            name: parsed.world.name,
            seed: parsed.world.seed,
            section_size: size.0,
        },
        storage: parsed.world.storage,
    })
}

/// The `world.toml` a restore writes: the default file with the world's
/// own fields (name, seed, section size) taken from `backed_up` (the
/// backup's copy, parsed as TOML), and `storage` set to `storage_setting`
/// (where this restore wrote; empty: the default). Nothing else of the
/// backup's copy is kept: not its storage in any spelling. When the copy
/// does not parse, the default, and why.
pub fn restored_world_toml(backed_up: &str, storage_setting: &str) -> (String, Option<String>) {
    let (world, why) = match toml::from_str::<WorldToml>(backed_up) {
        Ok(parsed) => match check_section_size(parsed.world.section_size) {
            Ok(_) => (Some(parsed.world), None),
            Err(e) => (
                Some(WorldSection {
                    section_size: None,
                    ..parsed.world
                }),
                Some(format!("the backup's world.toml: {e}")),
            ),
        },
        Err(e) => (
            None,
            Some(format!("the backup's world.toml does not parse: {e}")),
        ),
    };
    let mut text = String::with_capacity(DEFAULT_WORLD_TOML.len() + 64);
    for line in DEFAULT_WORLD_TOML.lines() {
        match &world {
            Some(world) if line.starts_with("name = ") => {
                text.push_str(&format!(
                    "name = {}",
                    toml::Value::String(world.name.clone())
                ));
            }
            Some(world) if line.starts_with("seed = ") => {
                text.push_str(&format!("seed = {}", world.seed));
            }
            Some(WorldSection {
                section_size: Some([w, h, d]),
                ..
            }) if line.starts_with("# section_size = ") => {
                text.push_str(&format!("section_size = [{w}, {h}, {d}]"));
            }
            _ => text.push_str(line),
        }
        text.push('\n');
    }
    let storage = storage_setting.trim();
    if !storage.is_empty() {
        text.push_str(&format!(
            "storage = {}\n",
            toml::Value::String(storage.into())
        ));
    }
    (text, why)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored_at(text: &str, world: &Path) -> crate::storage::StorageLocation {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("world.toml"), text).unwrap();
        let read = read_world_config(dir.path()).unwrap();
        crate::storage::StorageLocation::parse(&read.storage, world).unwrap()
    }

    #[test]
    fn a_backup_cannot_redirect_the_world_it_restores() {
        let world = Path::new("/worlds/restored");
        let own = crate::storage::StorageLocation::Sqlite(world.join("world.sqlite"));
        let crafted = [
            "[world]\nname = \"Crafted\"\nseed = 7\n\"storage\" = \"sqlite:/elsewhere/w.sqlite\"\n",
            "world.name = \"Crafted\"\nworld.seed = 7\nworld.storage = \"sqlite:/elsewhere/w.sqlite\"\n",
            "[world]\nname = \"Crafted\"\nseed = 7\nstorage = \"sqlite:/elsewhere/w.sqlite\"\n",
            "[world]\nname = \"Crafted\"\nseed = 7\nstorage = 'postgresql://evil@attacker.example/w'\n",
            "[world]\nname = \"Crafted\"\nseed = 7\n  storage=\"sqlite:../../elsewhere.sqlite\"\n",
        ];
        for backed_up in crafted {
            // As the backup says, it would store elsewhere.
            assert_ne!(stored_at(backed_up, world), own, "{backed_up}");
            let (text, why) = restored_world_toml(backed_up, "");
            assert_eq!(why, None, "{backed_up}");
            assert_eq!(stored_at(&text, world), own, "{backed_up}:\n{text}");
            let parsed: WorldToml = toml::from_str(&text).unwrap();
            assert_eq!(
                (parsed.world.name.as_str(), parsed.world.seed),
                ("Crafted", 7)
            );
        }
    }

    #[test]
    fn a_restore_keeps_the_worlds_own_fields_and_this_runs_storage() {
        let (text, why) = restored_world_toml(
            "[world]\nname = \"Q\\\"uote\\nd\"\nseed = 9007199254740993\nsection_size = [4, 1, 4]\n",
            "postgresql://me@/w?host=/run/postgresql",
        );
        assert_eq!(why, None);
        let parsed: WorldToml = toml::from_str(&text).unwrap();
        assert_eq!(parsed.world.name, "Q\"uote\nd");
        assert_eq!(parsed.world.seed, 9_007_199_254_740_993);
        assert_eq!(parsed.world.section_size, Some([4, 1, 4]));
        assert_eq!(
            parsed.world.storage,
            "postgresql://me@/w?host=/run/postgresql"
        );
        // The default's own values give the default back.
        let (text, _) = restored_world_toml(DEFAULT_WORLD_TOML, "");
        assert_eq!(text, DEFAULT_WORLD_TOML);
        // A copy that does not parse gives the default, and says why.
        let (text, why) = restored_world_toml("[world\nstorage = 1", "");
        assert_eq!(text, DEFAULT_WORLD_TOML);
        assert!(why.unwrap().contains("does not parse"));
    }

    #[test]
    fn a_new_world_toml_is_private_and_an_old_one_is_tightened() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        read_world_config(dir.path()).unwrap();
        let path = dir.path().join("world.toml");
        assert_eq!(crate::files::get_mode(&path), Some(0o600));
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        read_world_config(dir.path()).unwrap();
        assert_eq!(crate::files::get_mode(&path), Some(0o600));
    }
}
