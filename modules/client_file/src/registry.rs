//! The file registry: name → (content hash, bytes, owner), name rules, and
//! reading a module's `client_lua/` and `client_data/` folders.
//!
//! Owns: which names exist and what they hold. Invariants: only names
//! registered here can ever be served; a request never reaches the disk;
//! symbolic links under a module's client folders are refused (a link to
//! `/etc` or a world file must not be shipped to every client); a refusal
//! never repeats a name over the limit.
//! Does not own: clients or transfers (`lib.rs`, `pump.rs`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use buildat_client_file_api::ContentHash;
use buildat_interface::{SharedBytes, log};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Longest file name accepted, in bytes.
pub const MAX_NAME_LEN: usize = 256;
/// The folders of a module whose files go to clients.
pub const CLIENT_DIRS: [&str; 2] = ["client_lua", "client_data"];

/// A file's bytes: as read, or moved into a host buffer the first time
/// they are sent ([`Registry::share`]), after which every transfer hands the
/// network module references to them instead of copies. Kept across a
/// reload as the bytes themselves (a shared buffer's references end with
/// the instance), shared again on the next transfer.
#[derive(Debug, Clone)]
pub enum Content {
    Local(Arc<[u8]>),
    Shared(Arc<SharedBytes>),
}

impl std::ops::Deref for Content {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Self::Local(bytes) => bytes,
            Self::Shared(bytes) => bytes,
        }
    }
}

impl Serialize for Content {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_bytes(self)
    }
}

impl<'de> Deserialize<'de> for Content {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let bytes: serde_bytes::ByteBuf = Deserialize::deserialize(deserializer)?;
        Ok(Self::Local(bytes.into_vec().into()))
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FileEntry {
    pub hash: ContentHash,
    pub content: Content,
    /// The module whose folder the file came from, if any.
    pub owner: Option<String>,
}

pub fn hash(content: &[u8]) -> ContentHash {
    Sha256::digest(content).into()
}

/// A file name clients may see: relative, `/`-separated, no `.` or `..`
/// parts, no backslash or NUL, at most [`MAX_NAME_LEN`] bytes.
pub fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > MAX_NAME_LEN {
        return Err(format!(
            "invalid file name of {} bytes: must be 1 to {MAX_NAME_LEN} bytes",
            name.len()
        ));
    }
    let refuse = |why: &str| Err(format!("invalid file name {name:?}: {why}"));
    if name.contains('\\') || name.contains('\0') {
        return refuse("no backslash or NUL");
    }
    if name.starts_with('/') {
        return refuse("must be relative");
    }
    if name
        .split('/')
        .any(|part| part.is_empty() || part == "." || part == "..")
    {
        return refuse("no empty, '.' or '..' parts");
    }
    Ok(())
}

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Registry {
    files: BTreeMap<String, FileEntry>,
}

/// What a change did to a name.
#[derive(Debug, PartialEq, Eq)]
pub enum Change {
    Added,
    Changed,
    Unchanged,
}

impl Registry {
    pub fn get(&self, name: &str) -> Option<&FileEntry> {
        self.files.get(name)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&String, &FileEntry)> {
        self.files.iter()
    }

    pub fn len(&self) -> usize {
        self.files.len()
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    pub fn insert(
        &mut self,
        name: &str,
        content: Vec<u8>,
        owner: Option<&str>,
    ) -> Result<Change, String> {
        check_name(name)?;
        let entry = FileEntry {
            hash: hash(&content),
            content: Content::Local(content.into()),
            owner: owner.map(str::to_string),
        };
        let change = match self.files.get(name) {
            None => Change::Added,
            Some(old) if old.hash == entry.hash => Change::Unchanged,
            Some(_) => Change::Changed,
        };
        self.files.insert(name.to_string(), entry);
        Ok(change)
    }

    /// `name`'s bytes in a host buffer, moved there by `share` the first
    /// time (the registry's own copy is dropped then); `None` if no such
    /// file.
    pub fn share<E>(
        &mut self,
        name: &str,
        share: impl FnOnce(&[u8]) -> Result<SharedBytes, E>,
    ) -> Option<Result<Arc<SharedBytes>, E>> {
        let entry = self.files.get_mut(name)?;
        Some(match &entry.content {
            Content::Shared(bytes) => Ok(bytes.clone()),
            Content::Local(bytes) => share(bytes).map(|shared| {
                let shared = Arc::new(shared);
                entry.content = Content::Shared(shared.clone());
                shared
            }),
        })
    }

    pub fn remove(&mut self, name: &str) -> Option<FileEntry> {
        self.files.remove(name)
    }

    /// Removes every file `owner` registered; returns their names.
    pub fn remove_owned_by(&mut self, owner: &str) -> Vec<String> {
        let names: Vec<String> = self
            .files
            .iter()
            .filter(|(_, entry)| entry.owner.as_deref() == Some(owner))
            .map(|(name, _)| name.clone())
            .collect();
        for name in &names {
            self.files.remove(name);
        }
        names
    }
}

/// Every file under `module_dir/client_lua` and `module_dir/client_data`, as
/// (`<module>/<folder>/<relative path>`, path on disk), sorted by name.
pub fn module_files(module: &str, module_dir: &Path) -> Vec<(String, PathBuf)> {
    let mut found = Vec::new();
    for folder in CLIENT_DIRS {
        walk(
            &module_dir.join(folder),
            &format!("{module}/{folder}"),
            &mut found,
        );
    }
    found.sort();
    found
}

fn walk(dir: &Path, prefix: &str, found: &mut Vec<(String, PathBuf)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Some(file_name) = entry.file_name().to_str().map(str::to_string) else {
            continue;
        };
        if file_name.starts_with('.') {
            continue;
        }
        let name = format!("{prefix}/{file_name}");
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_symlink() {
            log::warn!(
                "{}: a symbolic link; not shipped to clients (copy the file instead)",
                path.display()
            );
        } else if kind.is_dir() {
            walk(&path, &name, found);
        } else if kind.is_file() {
            found.push((name, path));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_outside_the_registry_shape_are_refused() {
        for bad in [
            "../x",
            "/etc/passwd",
            "a\\b",
            "a/../b",
            "a//b",
            "./a",
            "",
            "a\0b",
            "a/.",
        ] {
            assert!(check_name(bad).is_err(), "{bad:?} must be refused");
        }
        let long = "x".repeat(60 * 1024);
        let refused = check_name(&long).expect_err("too long");
        assert!(
            !refused.contains("xxx"),
            "the name is not echoed: {refused}"
        );
        for good in [
            "main/client_lua/init.lua",
            "main/client_data/textures/stone.png",
        ] {
            assert!(check_name(good).is_ok(), "{good:?}");
        }
    }

    #[test]
    fn insert_reports_changes_and_owner_removal() {
        let mut registry = Registry::default();
        assert_eq!(
            registry.insert("m/client_lua/a.lua", b"1".to_vec(), Some("m")),
            Ok(Change::Added)
        );
        assert_eq!(
            registry.insert("m/client_lua/a.lua", b"1".to_vec(), Some("m")),
            Ok(Change::Unchanged)
        );
        assert_eq!(
            registry.insert("m/client_lua/a.lua", b"2".to_vec(), Some("m")),
            Ok(Change::Changed)
        );
        registry.insert("other/x", b"3".to_vec(), None).unwrap();
        assert_eq!(
            registry.remove_owned_by("m"),
            vec!["m/client_lua/a.lua".to_string()]
        );
        assert_eq!(registry.len(), 1);
        assert_eq!(registry.get("other/x").unwrap().hash, hash(b"3"));
    }

    #[test]
    fn module_files_are_named_by_module_and_folder() {
        let dir = std::env::temp_dir().join(format!("client-file-scan-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("client_lua/sub")).unwrap();
        std::fs::create_dir_all(dir.join("client_data")).unwrap();
        std::fs::create_dir_all(dir.join("src")).unwrap();
        std::fs::write(dir.join("client_lua/init.lua"), "x").unwrap();
        std::fs::write(dir.join("client_lua/sub/more.lua"), "y").unwrap();
        std::fs::write(dir.join("client_lua/.hidden.swp"), "z").unwrap();
        std::fs::write(dir.join("client_data/stone.png"), "p").unwrap();
        std::fs::write(dir.join("src/lib.rs"), "secret").unwrap();
        std::os::unix::fs::symlink(dir.join("src/lib.rs"), dir.join("client_data/link.png"))
            .unwrap();
        std::os::unix::fs::symlink(dir.join("src"), dir.join("client_lua/src")).unwrap();
        let names: Vec<String> = module_files("m", &dir)
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        assert_eq!(
            names,
            [
                "m/client_data/stone.png",
                "m/client_lua/init.lua",
                "m/client_lua/sub/more.lua"
            ]
        );
        let _ = std::fs::remove_dir_all(dir);
    }
}
