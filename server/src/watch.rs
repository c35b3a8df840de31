//! Module file watching: a change to a loaded module's server code
//! (`src/`, `Cargo.toml`, `build.rs`, `meta.json`, or those of a library
//! crate in its folder such as `api/`) rebuilds and reloads it after a
//! quiet second, with the modules built against its changed API; a change
//! under `client_lua/` or `client_data/` emits `core:module_modified` for
//! the file service. A module folder that
//! appears in a module path (moved or copied in, or given its `meta.json`
//! later) is loaded with what it needs once its files stopped changing; a
//! loaded module whose folder (or `meta.json`) disappears is unloaded after
//! the modules depending on it. A module path added on a running server
//! (`modules add DIR`) is watched from then on.
//!
//! Owns: the inotify watch over the module paths, the debounce, and telling
//! new and removed module folders from edits. Does not own: loading,
//! reloading, unloading and dependency resolution (`crate::core`, which asks
//! `__loader` to resolve) or serving client files (a module).

use std::collections::{BTreeSet, HashMap};
use std::path::{Component, Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use buildat_interface::core_api::ModuleState;
use buildat_interface::meta::META_FILE;
use buildat_interface::{Event, events};
use notify::event::ModifyKind;
use notify::{EventKind, RecursiveMode, Watcher};

use crate::core::{Core, check_module_name};

/// How long a module's files must stay unchanged before acting.
const QUIET: Duration = Duration::from_secs(1);

/// What a changed path means.
#[derive(Debug, PartialEq, Eq)]
enum Change {
    /// Server code or build inputs: rebuild and reload.
    Source,
    /// A client file, as its path inside the module folder.
    ClientFile(String),
    /// The module folder itself (created, moved, removed).
    Folder,
}

/// Which module a path belongs to and what changed, or `None` to ignore it.
fn classify(module_paths: &[PathBuf], path: &Path) -> Option<(String, Change)> {
    let relative = module_paths
        .iter()
        .find_map(|root| path.strip_prefix(root).ok())?;
    let mut parts = relative.components().filter_map(|c| match c {
        Component::Normal(part) => part.to_str(),
        _ => None,
    });
    let module = parts.next()?.to_string();
    check_module_name(&module).ok()?;
    let rest: Vec<&str> = parts.collect();
    let Some(file) = rest.last() else {
        return Some((module, Change::Folder));
    };
    if file.starts_with('.')
        || file.ends_with('~')
        || file.ends_with(".swp")
        || file.ends_with(".tmp")
    {
        return None;
    }
    match rest.first().copied()? {
        "client_lua" | "client_data" if rest.len() > 1 => {
            Some((module, Change::ClientFile(rest.join("/"))))
        }
        "src" => Some((module, Change::Source)),
        "meta.json" | "Cargo.toml" | "build.rs" if rest.len() == 1 => {
            Some((module, Change::Source))
        }
        // A library crate of the module (its API crate, `api/`): the module
        // is reloaded, and those built against the crate with it.
        library
            if library != "target"
                && (rest.get(1) == Some(&"src")
                    || (rest.len() == 2 && matches!(rest[1], "Cargo.toml" | "build.rs"))) =>
        {
            Some((module, Change::Source))
        }
        _ => None,
    }
}

/// Whether an event can make a module folder appear: the folder or its
/// `meta.json` created or moved in.
fn appears(kind: &EventKind, change: &Change, path: &Path) -> bool {
    let folder_or_meta = match change {
        Change::Folder => true,
        Change::Source => path.file_name().is_some_and(|n| n == META_FILE),
        Change::ClientFile(_) => false,
    };
    folder_or_meta
        && matches!(
            kind,
            EventKind::Create(_) | EventKind::Modify(ModifyKind::Name(_))
        )
        && path.exists()
}

#[derive(Default)]
struct Pending {
    last_change: Option<Instant>,
    /// The last change as Unix milliseconds, to compare with load times.
    last_change_unix_ms: u64,
    source: bool,
    client_files: BTreeSet<String>,
    /// The folder or its `meta.json` appeared: load it if it is not loaded.
    appeared: bool,
    /// A new folder's files as last seen; it loads once they stay the same
    /// for a quiet period (events for files copied into a new subfolder
    /// before inotify watched it are never seen).
    settled: Option<Vec<FileStamp>>,
}

/// A file of a module folder: its path, size and modification time.
type FileStamp = (PathBuf, u64, Option<SystemTime>);

/// Every file under `dir` (but `target/`), sorted.
fn stamp_files(dir: &Path) -> Vec<FileStamp> {
    fn walk(dir: &Path, files: &mut Vec<FileStamp>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(metadata) = entry.metadata() else {
                continue;
            };
            if metadata.is_dir() {
                if entry.file_name() != "target" {
                    walk(&path, files);
                }
            } else {
                files.push((path, metadata.len(), metadata.modified().ok()));
            }
        }
    }
    let mut files = Vec::new();
    walk(dir, &mut files);
    files.sort();
    files
}

/// What a module's folder and the module table say about it now.
enum Situation {
    /// Not loaded; its folder (with `meta.json`) appeared.
    New(PathBuf),
    /// Loaded (or failed), but its folder or `meta.json` is gone.
    Removed,
    /// Known to the core, its folder in place, or neither.
    Other,
}

fn situation(core: &Core, module_paths: &[PathBuf], name: &str, changed: &Pending) -> Situation {
    match core.list_modules().into_iter().find(|m| m.name == name) {
        Some(module) if !Path::new(&module.path).join(META_FILE).is_file() => Situation::Removed,
        Some(_) => Situation::Other,
        None if changed.appeared => module_paths
            .iter()
            .map(|path| path.join(name))
            .find(|dir| dir.join(META_FILE).is_file())
            .map_or(Situation::Other, Situation::New),
        None => Situation::Other,
    }
}

/// Starts watching `module_paths` on a thread of its own for as long as the
/// process runs.
pub fn spawn(core: Core, module_paths: Vec<PathBuf>) -> notify::Result<()> {
    let (send, changes) = crossbeam_channel::unbounded();
    let mut watcher = notify::recommended_watcher(move |event| {
        let _ = send.send(event);
    })?;
    for path in &module_paths {
        watcher.watch(path, RecursiveMode::Recursive)?;
    }
    tracing::info!("watching module folders for changes (--no-watch turns this off)");
    std::thread::Builder::new()
        .name("watch".into())
        .spawn(move || {
            let mut watcher = watcher;
            let mut module_paths = module_paths;
            let mut pending: HashMap<String, Pending> = HashMap::new();
            loop {
                watch_added_paths(&core, &mut watcher, &mut module_paths);
                match changes.recv_timeout(Duration::from_millis(200)) {
                    Ok(Ok(event)) => {
                        if matches!(event.kind, EventKind::Access(_)) {
                            continue;
                        }
                        for path in &event.paths {
                            let Some((module, change)) = classify(&module_paths, path) else {
                                continue;
                            };
                            let entry = pending.entry(module).or_default();
                            entry.last_change = Some(Instant::now());
                            entry.last_change_unix_ms = crate::core::unix_ms();
                            entry.appeared |= appears(&event.kind, &change, path);
                            match change {
                                Change::Source => entry.source = true,
                                Change::ClientFile(file) => {
                                    entry.client_files.insert(file);
                                }
                                Change::Folder => {}
                            }
                        }
                    }
                    Ok(Err(error)) => tracing::warn!("file watch: {error}"),
                    Err(crossbeam_channel::RecvTimeoutError::Timeout) => {}
                    Err(crossbeam_channel::RecvTimeoutError::Disconnected) => return,
                }
                let quiet: Vec<String> = pending
                    .iter()
                    .filter(|(_, p)| p.last_change.is_some_and(|t| t.elapsed() >= QUIET))
                    .map(|(name, _)| name.clone())
                    .collect();
                for name in quiet {
                    let Some(mut changed) = pending.remove(&name) else {
                        continue;
                    };
                    match situation(&core, &module_paths, &name, &changed) {
                        Situation::New(dir) => {
                            let files = stamp_files(&dir);
                            if changed.settled.as_ref() == Some(&files) {
                                load_new(&core, &name, &dir);
                            } else {
                                changed.settled = Some(files);
                                changed.last_change = Some(Instant::now());
                                pending.insert(name, changed);
                            }
                        }
                        Situation::Removed => unload_removed(&core, &name),
                        Situation::Other => act(&core, &name, changed),
                    }
                }
            }
        })
        .map_err(|e| notify::Error::generic(&e.to_string()))?;
    Ok(())
}

/// Watches the module paths added since the last look (`modules add DIR`).
fn watch_added_paths(
    core: &Core,
    watcher: &mut notify::RecommendedWatcher,
    module_paths: &mut Vec<PathBuf>,
) {
    for path in core.module_paths() {
        if module_paths.contains(&path) {
            continue;
        }
        match watcher.watch(&path, RecursiveMode::Recursive) {
            Ok(()) => tracing::info!("watching the module path {}", path.display()),
            Err(error) => {
                tracing::warn!("cannot watch the module path {}: {error}", path.display())
            }
        }
        module_paths.push(path);
    }
}

/// Logs a failure, as an error unless the server is stopping.
fn report(core: &Core, error: &crate::core::CoreError) {
    if error.is_cancelled() || core.shutdown_request().is_some() {
        tracing::info!("{error}");
    } else {
        tracing::error!("{error}");
    }
}

/// A new module folder: load it after what it needs.
fn load_new(core: &Core, name: &str, dir: &Path) {
    tracing::info!(
        "new module folder {}: loading {name} with what it needs",
        dir.display()
    );
    match core.load_with_dependencies(name) {
        Ok(loaded) if loaded.is_empty() => tracing::info!("module {name} was loaded already"),
        Ok(loaded) => tracing::info!("new module {name}: loaded {}", loaded.join(", ")),
        Err(error) => report(core, &error),
    }
}

/// A loaded module's folder is gone: unload it after its dependents.
fn unload_removed(core: &Core, name: &str) {
    tracing::info!("the folder of module {name} was removed: unloading it and its dependents");
    match core.unload_with_dependents(name) {
        Ok(unloaded) => tracing::info!("removed module {name}: unloaded {}", unloaded.join(", ")),
        Err(error) => report(core, &error),
    }
}

fn act(core: &Core, name: &str, changed: Pending) {
    let module = core.list_modules().into_iter().find(|m| m.name == name);
    // A folder that appeared and was loaded since (by `load` on the
    // console, say) is current: no reload on top.
    let current = changed.appeared
        && module
            .as_ref()
            .is_some_and(|m| m.loaded_at_unix_ms > changed.last_change_unix_ms);
    let loaded = module.map(|m| m.state);
    for file in changed.client_files {
        let event = events::ModuleModified {
            name: name.to_string(),
            path: file,
        };
        core.emit_event(
            events::ModuleModified::NAME,
            crate::core::encode_core_event(&event),
        );
    }
    if !changed.source || current {
        return;
    }
    match loaded {
        Some(ModuleState::Loaded | ModuleState::Failed(_)) => {
            tracing::info!("module {name} changed on disk: rebuilding and reloading");
            if let Err(error) = core.reload_module(name) {
                report(core, &error);
            }
        }
        Some(state) => {
            tracing::info!("module {name} changed on disk while {state:?}; not reloading")
        }
        None => {
            tracing::info!("module {name} changed on disk but is not loaded (type 'load {name}')")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_sources_client_files_and_noise() {
        let roots = [PathBuf::from("/srv/modules")];
        let at = |p: &str| classify(&roots, Path::new(p));
        assert_eq!(
            at("/srv/modules/net/src/lib.rs"),
            Some(("net".into(), Change::Source))
        );
        assert_eq!(
            at("/srv/modules/net/meta.json"),
            Some(("net".into(), Change::Source))
        );
        assert_eq!(
            at("/srv/modules/net/client_lua/init.lua"),
            Some((
                "net".into(),
                Change::ClientFile("client_lua/init.lua".into())
            ))
        );
        assert_eq!(
            at("/srv/modules/net/api/src/lib.rs"),
            Some(("net".into(), Change::Source)),
            "an API crate's change reloads its module"
        );
        assert_eq!(
            at("/srv/modules/net/api/Cargo.toml"),
            Some(("net".into(), Change::Source))
        );
        assert_eq!(at("/srv/modules/net/api/README.md"), None);
        assert_eq!(at("/srv/modules/net/target/debug/src/x"), None);
        assert_eq!(at("/srv/modules/net/src/.lib.rs.swp"), None);
        assert_eq!(at("/srv/modules/net/target/debug/x"), None);
        assert_eq!(at("/srv/modules/net"), Some(("net".into(), Change::Folder)));
        assert_eq!(at("/srv/modules/.hidden"), None);
        assert_eq!(at("/srv/modules/bad name/meta.json"), None);
        assert_eq!(at("/elsewhere/net/src/lib.rs"), None);
    }
}
