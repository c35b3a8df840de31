//! Which modules one cargo run builds together.
//!
//! Cargo builds independent crates of one run in parallel, and it unifies
//! dependency features over the packages of a run: a package built alone
//! after being built with others gets its dependencies compiled again with
//! other features (and the reverse). So a module that is a member of a cargo
//! workspace is built together with its peers (the other Rust modules of
//! the module paths in that workspace): the stale ones, and every one built
//! together before (cargo finds those fresh, so it costs a check, and the
//! features stay those of the first run). The first start builds every
//! module in one run; a reload of one module selects the same packages and
//! compiles only what changed.
//!
//! Owns: finding a module's workspace and peers ([`get_workspace`],
//! [`find_peers`]) and the record of packages built together
//! ([`Together`], `<build_dir>/together-<profile>.json`). Does not own:
//! running cargo, hashing inputs or storing artifacts (`mod.rs`).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use buildat_interface::meta::{META_FILE, ModuleMeta};

/// A cargo workspace and its members.
pub(super) struct Workspace {
    /// The workspace's `Cargo.toml`.
    pub manifest: PathBuf,
    /// Canonical manifest path of each member, with its package name.
    members: HashMap<PathBuf, String>,
}

impl Workspace {
    /// The package name of the member whose folder is `dir`, if it is one.
    pub fn get_member(&self, dir: &Path) -> Option<&str> {
        let manifest = dir.join("Cargo.toml").canonicalize().ok()?;
        self.members.get(&manifest).map(String::as_str)
    }

    /// Whether a member's package is called `name`.
    pub fn has_package(&self, name: &str) -> bool {
        self.members.values().any(|package| package == name)
    }
}

/// The workspace the crate in `dir` is a member of, asked of cargo
/// (`cargo metadata --no-deps`). `None` when it is in none, or cargo
/// cannot tell (then the module is built alone, as cargo would report).
pub(super) fn get_workspace(dir: &Path) -> Option<Workspace> {
    let (root, _) = super::find_workspace(dir)?;
    let manifest = root.join("Cargo.toml");
    let stdout = super::ask_cargo(
        &[
            "metadata",
            "--no-deps",
            "--format-version",
            "1",
            "--offline",
        ],
        &manifest,
    )?;
    let members = parse_members(&stdout)?;
    let workspace = Workspace { manifest, members };
    workspace.get_member(dir)?;
    Some(workspace)
}

/// Member manifests and package names from `cargo metadata --no-deps` output.
fn parse_members(json: &[u8]) -> Option<HashMap<PathBuf, String>> {
    let metadata: serde_json::Value = serde_json::from_slice(json).ok()?;
    let members = metadata
        .get("packages")?
        .as_array()?
        .iter()
        .filter_map(|package| {
            let name = package.get("name")?.as_str()?;
            let manifest = PathBuf::from(package.get("manifest_path")?.as_str()?);
            Some((
                manifest.canonicalize().unwrap_or(manifest),
                name.to_string(),
            ))
        })
        .collect();
    Some(members)
}

/// A Rust module of the module paths that is a member of a workspace.
pub(super) struct Peer {
    pub name: String,
    pub dir: PathBuf,
    pub meta: ModuleMeta,
    pub package: String,
    /// Its canonical `Cargo.toml`, as cargo names it in its messages.
    pub manifest: PathBuf,
}

/// Every Rust module in `module_paths` that is a member of `workspace`, one
/// per package (the first found), sorted by package name. A folder whose
/// `meta.json` does not parse is left out (loading it reports the error).
pub(super) fn find_peers(module_paths: &[PathBuf], workspace: &Workspace) -> Vec<Peer> {
    let mut peers: BTreeMap<String, Peer> = BTreeMap::new();
    for path in module_paths {
        let Ok(entries) = std::fs::read_dir(path) else {
            continue;
        };
        let mut dirs: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        dirs.sort();
        for dir in dirs {
            if !dir.join(META_FILE).is_file() {
                continue;
            }
            let Some(package) = workspace.get_member(&dir) else {
                continue;
            };
            if peers.contains_key(package) {
                continue;
            }
            let Ok(parsed) = ModuleMeta::read(&dir) else {
                continue;
            };
            if parsed.meta.disable_rust {
                continue;
            }
            let Ok(manifest) = dir.join("Cargo.toml").canonicalize() else {
                continue;
            };
            let name = dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            peers.insert(
                package.to_string(),
                Peer {
                    name,
                    dir,
                    meta: parsed.meta,
                    package: package.to_string(),
                    manifest,
                },
            );
        }
    }
    peers.into_values().collect()
}

/// The packages built together so far, per workspace manifest, kept in a
/// file of the build folder. A missing or unreadable file is an empty
/// record (the next build writes it again).
#[derive(Default)]
pub(super) struct Together {
    built: BTreeMap<String, BTreeSet<String>>,
}

impl Together {
    pub fn read(path: &Path) -> Self {
        let built = std::fs::read(path)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default();
        Self { built }
    }

    /// Whether `manifest` was built together with others in `workspace`.
    pub fn contains(&self, workspace: &Path, manifest: &Path) -> bool {
        self.built
            .get(&workspace.display().to_string())
            .is_some_and(|set| set.contains(&manifest.display().to_string()))
    }

    pub fn add(&mut self, workspace: &Path, manifest: &Path) {
        self.built
            .entry(workspace.display().to_string())
            .or_default()
            .insert(manifest.display().to_string());
    }

    /// Writes the record (through a temporary file, so a reader never sees
    /// half of it).
    pub fn write(&self, path: &Path) -> std::io::Result<()> {
        let text = serde_json::to_vec_pretty(&self.built).map_err(std::io::Error::other)?;
        let temporary = path.with_extension(format!("tmp{}", std::process::id()));
        std::fs::write(&temporary, text)?;
        std::fs::rename(&temporary, path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("the server crate is in the repository")
            .to_path_buf()
    }

    #[test]
    fn the_default_modules_are_peers_and_lua_only_modules_are_not() {
        let modules = repo().join("modules");
        let workspace = get_workspace(&modules.join("voxelworld")).expect("a workspace member");
        let peers = find_peers(&[modules], &workspace);
        let names: Vec<&str> = peers.iter().map(|p| p.name.as_str()).collect();
        for name in ["__loader", "network", "voxelworld", "main"] {
            assert!(names.contains(&name), "{name} in {names:?}");
        }
        assert!(peers.iter().all(|p| !p.meta.disable_rust));
        let packages: BTreeSet<&str> = peers.iter().map(|p| p.package.as_str()).collect();
        assert_eq!(packages.len(), peers.len(), "one peer per package");
    }

    #[test]
    fn a_crate_outside_any_workspace_has_none() {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(
            dir.path().join("Cargo.toml"),
            "[package]\nname = \"alone\"\nversion = \"0.1.0\"\n",
        )
        .expect("manifest");
        assert!(get_workspace(dir.path()).is_none());
    }

    #[test]
    fn the_record_survives_a_round_trip_and_a_bad_file_is_empty() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("together-dev.json");
        let mut record = Together::default();
        record.add(
            Path::new("/w/Cargo.toml"),
            Path::new("/w/modules/a/Cargo.toml"),
        );
        record.write(&path).expect("written");
        let read = Together::read(&path);
        assert!(read.contains(
            Path::new("/w/Cargo.toml"),
            Path::new("/w/modules/a/Cargo.toml")
        ));
        assert!(!read.contains(
            Path::new("/w/Cargo.toml"),
            Path::new("/w/modules/b/Cargo.toml")
        ));
        std::fs::write(&path, b"{ not json").expect("garbage");
        assert!(!Together::read(&path).contains(
            Path::new("/w/Cargo.toml"),
            Path::new("/w/modules/a/Cargo.toml")
        ));
    }
}
