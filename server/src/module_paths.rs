//! Adding a module path to a running server (`modules add DIR` on the
//! console): the folder is searched for modules from then on, the modules
//! in it are loaded (each after what it needs, as `__loader` orders them),
//! and the watcher watches it (`watch.rs`), so a module folder dropped into
//! it later loads too.
//!
//! Owns: checking the folder (it exists, is a folder, holds no module whose
//! name another module path has) and reporting what was loaded. Does not
//! own: loading (`crate::core`, asking `__loader`), building (a module
//! outside the engine's repository gets its workspace from
//! `crate::builder::outside`).

use std::path::{Path, PathBuf};

use buildat_interface::meta::META_FILE;

use crate::core::{Core, check_module_name};

/// Why a folder cannot be added.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AddPathError {
    #[error("{0}: no such folder")]
    Missing(PathBuf),
    #[error("{0}: not a folder")]
    NotAFolder(PathBuf),
    #[error(
        "{} is a module folder (it holds {META_FILE}): add the folder holding it, {}",
        .0.display(),
        .0.parent().unwrap_or(.0).display()
    )]
    ModuleFolder(PathBuf),
    #[error("{path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "module {name} is in {} and in the module path {}: rename one folder (module names are unique)",
        new.display(),
        existing.display()
    )]
    Duplicate {
        name: String,
        new: PathBuf,
        existing: PathBuf,
    },
}

/// The names of the module folders in `dir` (those holding `meta.json`
/// with a valid name), sorted.
pub fn module_folders(dir: &Path) -> Result<Vec<String>, AddPathError> {
    let entries = std::fs::read_dir(dir).map_err(|source| AddPathError::Read {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut names: Vec<String> = entries
        .flatten()
        .filter(|entry| entry.path().join(META_FILE).is_file())
        .filter_map(|entry| entry.file_name().to_str().map(str::to_string))
        .filter(|name| check_module_name(name).is_ok())
        .collect();
    names.sort();
    Ok(names)
}

/// `modules add DIR`: adds `dir` to the module paths and loads its
/// modules; the answer for the console, saying what was loaded and what
/// failed. A folder that is a module path already is loaded again only
/// where its modules are not loaded.
pub fn add(core: &Core, dir: &Path) -> Result<String, AddPathError> {
    let path = std::path::absolute(dir).map_err(|source| AddPathError::Read {
        path: dir.to_path_buf(),
        source,
    })?;
    if !path.exists() {
        return Err(AddPathError::Missing(path));
    }
    if !path.is_dir() {
        return Err(AddPathError::NotAFolder(path));
    }
    if path.join(META_FILE).is_file() {
        return Err(AddPathError::ModuleFolder(path));
    }
    let canonical = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    let existing = core.module_paths();
    let known = existing
        .iter()
        .find(|other| canonical(other) == canonical(&path))
        .cloned();
    let names = module_folders(&path)?;
    if known.is_none() {
        for name in &names {
            if let Some(other) = existing
                .iter()
                .find(|other| other.join(name).join(META_FILE).is_file())
            {
                return Err(AddPathError::Duplicate {
                    name: name.clone(),
                    new: path.join(name),
                    existing: other.clone(),
                });
            }
        }
        core.add_module_path(path.clone());
    }
    let mut answer = match &known {
        Some(known) => format!("{} is a module path already", known.display()),
        None => format!("added the module path {}", path.display()),
    };
    if names.is_empty() {
        answer.push_str(&format!(
            "; no module in it yet (no folder in it holds a {META_FILE}): \
             a module folder put there loads when it appears"
        ));
    }
    let (mut loaded, mut errors) = (Vec::new(), String::new());
    for name in &names {
        match core.load_with_dependencies(name) {
            Ok(names) => loaded.extend(names),
            Err(error) => errors.push_str(&format!("\nerror: {error}")),
        }
    }
    if !loaded.is_empty() {
        answer.push_str(&format!("; loaded {}", loaded.join(", ")));
    }
    Ok(answer + &errors)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_folders_are_those_with_meta_json_and_a_valid_name() {
        let dir = tempfile::tempdir().expect("temp dir");
        for (name, meta) in [
            ("b", true),
            ("a", true),
            ("notes", false),
            ("bad name", true),
        ] {
            std::fs::create_dir_all(dir.path().join(name)).expect("folder");
            if meta {
                std::fs::write(dir.path().join(name).join(META_FILE), "{}").expect("meta");
            }
        }
        assert_eq!(module_folders(dir.path()).expect("read"), ["a", "b"]);
        assert!(matches!(
            module_folders(&dir.path().join("nowhere")),
            Err(AddPathError::Read { .. })
        ));
    }
}
