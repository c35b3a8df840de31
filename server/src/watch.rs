//! Module file watching: a change to a loaded module's server code
//! (`src/`, `Cargo.toml`, `build.rs`, `meta.json`) rebuilds and reloads it
//! after a quiet second; a change under `client_lua/` or `client_data/`
//! emits `core:module_modified` for the file service.
//!
//! Owns: the inotify watch over the module paths and the debounce. Does not
//! own: reloading (`crate::core`) or serving client files (a module).

use std::collections::{BTreeSet, HashMap};
use std::path::{Component, Path, PathBuf};
use std::time::{Duration, Instant};

use buildat_interface::core_api::ModuleState;
use buildat_interface::{Event, events};
use notify::{EventKind, RecursiveMode, Watcher};

use crate::core::Core;

/// How long a module's files must stay unchanged before acting.
const QUIET: Duration = Duration::from_secs(1);

/// What a changed path means.
#[derive(Debug, PartialEq, Eq)]
enum Change {
    /// Server code or build inputs: rebuild and reload.
    Source,
    /// A client file, as its path inside the module folder.
    ClientFile(String),
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
    let rest: Vec<&str> = parts.collect();
    let file = rest.last()?;
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
        _ => None,
    }
}

#[derive(Default)]
struct Pending {
    last_change: Option<Instant>,
    source: bool,
    client_files: BTreeSet<String>,
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
            let _watcher = watcher;
            let mut pending: HashMap<String, Pending> = HashMap::new();
            loop {
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
                            match change {
                                Change::Source => entry.source = true,
                                Change::ClientFile(file) => {
                                    entry.client_files.insert(file);
                                }
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
                    if let Some(changed) = pending.remove(&name) {
                        act(&core, &name, changed);
                    }
                }
            }
        })
        .map_err(|e| notify::Error::generic(&e.to_string()))?;
    Ok(())
}

fn act(core: &Core, name: &str, changed: Pending) {
    let loaded = core
        .list_modules()
        .into_iter()
        .find(|m| m.name == name)
        .map(|m| m.state);
    for file in changed.client_files {
        let event = events::ModuleModified {
            name: name.to_string(),
            path: file,
        };
        core.emit_event(
            events::ModuleModified::NAME,
            buildat_interface::encode(&event),
        );
    }
    if !changed.source {
        return;
    }
    match loaded {
        Some(ModuleState::Loaded | ModuleState::Failed(_)) => {
            tracing::info!("module {name} changed on disk: rebuilding and reloading");
            match core.reload_module(name) {
                Ok(()) => {}
                Err(error) if error.is_cancelled() => tracing::info!("{error}"),
                Err(error) => tracing::error!("{error}"),
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
        assert_eq!(at("/srv/modules/net/src/.lib.rs.swp"), None);
        assert_eq!(at("/srv/modules/net/target/debug/x"), None);
        assert_eq!(at("/srv/modules/net"), None);
        assert_eq!(at("/elsewhere/net/src/lib.rs"), None);
    }
}
