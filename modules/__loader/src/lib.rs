//! `__loader`: the first module, the only one the core loads by itself.
//!
//! Owns: finding every module folder (a folder holding `meta.json`) in the
//! module paths, resolving `dependencies` and `reverse_dependencies` into a
//! load order, and asking the core to load them in that order, with errors
//! that name the file, the module and the chain. Does not own: building or
//! loading (the core does both when asked).
//!
//! Also answers `load_with_dependencies` (the server's file watcher asks it
//! when a module folder appears): that module and what it needs that is not
//! loaded yet, in the same order the first start would use.
//!
//! Rules: a required dependency must be present; an optional one that is
//! present loads first; a reverse dependency R of module M makes R depend on
//! M (M loads first); a cycle is an error shown as a cycle; two folders of
//! the same name in two paths are an error naming both. Ties are broken by
//! name, so the order is deterministic.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use buildat_interface::core_api::{
    self, ListModules, LoadAll, LoadModule, LoadWithDependencies, ModuleState,
};
use buildat_interface::meta::{META_FILE, MetaError, ModuleMeta};
use buildat_interface::{Host, Module, ModuleError, Receive, config, export_module, log};

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoaderError {
    #[error(transparent)]
    Meta(#[from] MetaError),
    #[error("cannot read module path {path}: {source}")]
    ReadPath {
        path: String,
        source: std::io::Error,
    },
    #[error("module {name} is in two module paths: {first} and {second}")]
    Duplicate {
        name: String,
        first: String,
        second: String,
    },
    #[error("{name} is missing ({})", chain.iter().map(|c| format!("required by {c}")).collect::<Vec<_>>().join(", "))]
    Missing { name: String, chain: Vec<String> },
    #[error("{name} is missing (reverse dependency of {of})")]
    MissingReverse { name: String, of: String },
    #[error("dependency cycle: {}", .0.join(" -> "))]
    Cycle(Vec<String>),
    #[error("no module named '{0}' in the module paths")]
    NotFound(String),
}

/// A module folder found in the module paths.
#[derive(Debug, Clone)]
pub struct FoundModule {
    pub name: String,
    pub dir: PathBuf,
    pub meta: ModuleMeta,
}

/// Every module folder in `paths` (skipping `__loader`), with meta.json
/// warnings.
pub fn scan(paths: &[PathBuf]) -> Result<(Vec<FoundModule>, Vec<String>), LoaderError> {
    let mut found: BTreeMap<String, FoundModule> = BTreeMap::new();
    let mut warnings = Vec::new();
    for path in paths {
        let entries = std::fs::read_dir(path).map_err(|source| LoaderError::ReadPath {
            path: path.display().to_string(),
            source,
        })?;
        let mut dirs: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        dirs.sort();
        for dir in dirs.into_iter().filter(|d| d.join(META_FILE).is_file()) {
            let name = dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            if name == core_api::LOADER {
                continue;
            }
            if !is_valid_name(&name) {
                warnings.push(format!(
                    "{}: skipped: a module folder's name may hold only letters, digits, '_' and '-'",
                    dir.display()
                ));
                continue;
            }
            let parsed = ModuleMeta::read(&dir)?;
            warnings.extend(parsed.warnings);
            if let Some(first) = found.get(&name) {
                return Err(LoaderError::Duplicate {
                    name,
                    first: first.dir.display().to_string(),
                    second: dir.display().to_string(),
                });
            }
            found.insert(
                name.clone(),
                FoundModule {
                    name,
                    dir,
                    meta: parsed.meta,
                },
            );
        }
    }
    Ok((found.into_values().collect(), warnings))
}

fn is_valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The load order of `modules`: each after everything it depends on.
pub fn resolve_order(modules: &[FoundModule]) -> Result<Vec<String>, LoaderError> {
    resolve_order_with(modules, &BTreeSet::new())
}

/// Like [`resolve_order`], where a dependency or reverse dependency on a
/// module of `elsewhere` (loaded already, or not part of this load) is
/// satisfied without ordering anything.
fn resolve_order_with(
    modules: &[FoundModule],
    elsewhere: &BTreeSet<&str>,
) -> Result<Vec<String>, LoaderError> {
    let present: BTreeSet<&str> = modules.iter().map(|m| m.name.as_str()).collect();
    // needs[m] = modules that must load before m.
    let mut needs: BTreeMap<&str, BTreeSet<&str>> = present
        .iter()
        .map(|name| (*name, BTreeSet::new()))
        .collect();
    for module in modules {
        for dependency in &module.meta.dependencies {
            let wanted = dependency.module.as_str();
            if wanted == core_api::LOADER {
                continue;
            }
            if present.contains(wanted) {
                needs.entry(&module.name).or_default().insert(wanted);
            } else if !dependency.optional && !elsewhere.contains(wanted) {
                return Err(LoaderError::Missing {
                    name: wanted.to_string(),
                    chain: requirer_chain(modules, &module.name),
                });
            }
        }
        for reverse in &module.meta.reverse_dependencies {
            let dependent = reverse.module.as_str();
            if present.contains(dependent) {
                needs.entry(dependent).or_default().insert(&module.name);
            } else if !reverse.optional && !elsewhere.contains(dependent) {
                return Err(LoaderError::MissingReverse {
                    name: dependent.to_string(),
                    of: module.name.clone(),
                });
            }
        }
    }
    let mut order = Vec::new();
    let mut done = BTreeSet::new();
    for name in &present {
        let mut path = Vec::new();
        visit(name, &needs, &mut path, &mut done, &mut order)?;
    }
    Ok(order)
}

/// What loading `name` takes, in order: `name` and everything it needs
/// (its dependencies, and the modules naming it as a reverse dependency,
/// transitively) that is not in `loaded`. Empty when `name` is loaded.
pub fn order_for(
    found: &[FoundModule],
    name: &str,
    loaded: &BTreeSet<String>,
) -> Result<Vec<String>, LoaderError> {
    if loaded.contains(name) {
        return Ok(Vec::new());
    }
    let by_name: BTreeMap<&str, &FoundModule> =
        found.iter().map(|m| (m.name.as_str(), m)).collect();
    if !by_name.contains_key(name) {
        return Err(LoaderError::NotFound(name.to_string()));
    }
    let mut wanted: BTreeSet<&str> = BTreeSet::new();
    let mut todo = vec![name];
    while let Some(next) = todo.pop() {
        if loaded.contains(next) || !wanted.insert(next) {
            continue;
        }
        let Some(module) = by_name.get(next) else {
            // Missing: resolving the subset below names it and the chain.
            wanted.remove(next);
            continue;
        };
        todo.extend(module.meta.dependencies.iter().map(|d| d.module.as_str()));
        todo.extend(
            found
                .iter()
                .filter(|m| m.meta.reverse_dependencies.iter().any(|r| r.module == next))
                .map(|m| m.name.as_str()),
        );
    }
    let subset: Vec<FoundModule> = found
        .iter()
        .filter(|m| wanted.contains(m.name.as_str()))
        .cloned()
        .collect();
    let elsewhere: BTreeSet<&str> = loaded
        .iter()
        .map(String::as_str)
        .chain(by_name.keys().copied())
        .filter(|n| !wanted.contains(n))
        .collect();
    resolve_order_with(&subset, &elsewhere)
}

/// Depth-first: everything `name` needs goes into `order` before it.
fn visit<'a>(
    name: &'a str,
    needs: &BTreeMap<&'a str, BTreeSet<&'a str>>,
    path: &mut Vec<&'a str>,
    done: &mut BTreeSet<&'a str>,
    order: &mut Vec<String>,
) -> Result<(), LoaderError> {
    if done.contains(name) {
        return Ok(());
    }
    if let Some(start) = path.iter().position(|n| *n == name) {
        let mut cycle: Vec<String> = path[start..].iter().map(|n| n.to_string()).collect();
        cycle.push(name.to_string());
        return Err(LoaderError::Cycle(cycle));
    }
    path.push(name);
    for needed in needs.get(name).into_iter().flatten() {
        visit(needed, needs, path, done, order)?;
    }
    path.pop();
    done.insert(name);
    order.push(name.to_string());
    Ok(())
}

/// `from`, then a module requiring it, then one requiring that, and so on.
fn requirer_chain(modules: &[FoundModule], from: &str) -> Vec<String> {
    let mut chain = vec![from.to_string()];
    let mut current = from.to_string();
    while let Some(requirer) = modules.iter().find(|m| {
        !chain.contains(&m.name) && m.meta.dependencies.iter().any(|d| d.module == current)
    }) {
        chain.push(requirer.name.clone());
        current = requirer.name.clone();
    }
    chain
}

struct Loader {
    host: Host,
}

impl Loader {
    /// Every module folder in the configured module paths (warnings logged).
    fn scan(&self) -> Result<Vec<FoundModule>, ModuleError> {
        let paths: Vec<PathBuf> = self
            .host
            .get_config(config::MODULE_PATHS)
            .unwrap_or_default()
            .lines()
            .map(PathBuf::from)
            .collect();
        let (found, warnings) = scan(&paths).map_err(|e| ModuleError::msg(e.to_string()))?;
        for warning in warnings {
            log::warn!("{warning}");
        }
        Ok(found)
    }

    fn load_all(&self) -> Result<(), ModuleError> {
        let found = self.scan()?;
        let order = resolve_order(&found).map_err(|e| ModuleError::msg(e.to_string()))?;
        log::info!("load order: {}", order.join(", "));
        self.load(&found, &order)
    }

    /// `load_with_dependencies`: returns the modules it loaded, in order.
    fn load_with_dependencies(&self, name: &str) -> Result<Vec<String>, ModuleError> {
        let found = self.scan()?;
        let modules = self
            .host
            .call(&ListModules {})
            .map_err(|e| ModuleError::msg(format!("listing the modules: {e}")))?;
        let loaded: BTreeSet<String> = modules
            .into_iter()
            .filter(|m| !matches!(m.state, ModuleState::Failed(_)))
            .map(|m| m.name)
            .collect();
        let order = order_for(&found, name, &loaded)
            .map_err(|e| ModuleError::msg(format!("cannot load {name}: {e}")))?;
        if !order.is_empty() {
            log::info!("load order for {name}: {}", order.join(", "));
        }
        self.load(&found, &order)?;
        Ok(order)
    }

    /// Asks the core to load `order`, each from its folder in `found`.
    fn load(&self, found: &[FoundModule], order: &[String]) -> Result<(), ModuleError> {
        for name in order {
            let dir = found
                .iter()
                .find(|m| &m.name == name)
                .map(|m| m.dir.as_path())
                .unwrap_or(Path::new(""));
            let request = LoadModule {
                name: name.clone(),
                path: dir.display().to_string(),
            };
            self.host
                .call(&request)
                .map_err(|e| ModuleError::msg(format!("loading {name}: {e}")))?;
        }
        Ok(())
    }
}

impl Module for Loader {
    fn create(host: Host) -> Result<Self, ModuleError> {
        Ok(Self { host })
    }

    fn receive(table: &mut Receive<Self>) {
        table.call(|loader, _: LoadAll| loader.load_all()).call(
            |loader, request: LoadWithDependencies| loader.load_with_dependencies(&request.name),
        );
    }
}

export_module!(Loader);

#[cfg(test)]
mod tests {
    use super::*;
    use buildat_interface::meta::Dependency;

    fn module(name: &str, deps: &[(&str, bool)], reverse: &[(&str, bool)]) -> FoundModule {
        let to_deps = |list: &[(&str, bool)]| {
            list.iter()
                .map(|(module, optional)| Dependency {
                    module: module.to_string(),
                    optional: *optional,
                })
                .collect()
        };
        FoundModule {
            name: name.to_string(),
            dir: PathBuf::from(name),
            meta: ModuleMeta {
                dependencies: to_deps(deps),
                reverse_dependencies: to_deps(reverse),
                ..ModuleMeta::default()
            },
        }
    }

    /// A module path holding `modules` (name, meta.json), removed on drop.
    struct Folder(PathBuf);

    impl Folder {
        fn new(modules: &[(&str, &str)]) -> Self {
            let dir = std::env::temp_dir().join(format!(
                "buildat-loader-test-{}-{:?}",
                std::process::id(),
                std::thread::current().id()
            ));
            for (name, meta) in modules {
                std::fs::create_dir_all(dir.join(name)).unwrap();
                std::fs::write(dir.join(name).join(META_FILE), meta).unwrap();
            }
            Self(dir)
        }
    }

    impl Drop for Folder {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn its_calls_ask_the_core_to_load_in_order_through_the_table() {
        use buildat_interface::testing::TestHost;
        let folder = Folder::new(&[
            ("game", r#"{"dependencies": [{"module": "net"}]}"#),
            ("net", "{}"),
            ("__loader", "{}"),
        ]);
        let kit = TestHost::new().config(config::MODULE_PATHS, &folder.0.display().to_string());
        kit.answer(|_: LoadModule| Ok(()));
        kit.answer(|_: ListModules| {
            Ok(vec![core_api::ModuleInfo {
                name: "net".into(),
                path: String::new(),
                state: ModuleState::Loaded,
                build_hash: String::new(),
                loaded_at_unix_ms: 0,
                load_index: 0,
                queued: 0,
                times: Default::default(),
            }])
        });
        let mut loader = kit.load::<Loader>().unwrap();
        loader.call(&LoadAll {}).unwrap();
        let loaded = |kit: &TestHost| -> Vec<String> {
            kit.calls::<LoadModule>()
                .into_iter()
                .map(|l| l.name)
                .collect()
        };
        assert_eq!(loaded(&kit), ["net", "game"]);
        assert_eq!(
            kit.calls::<LoadModule>()[0].path,
            folder.0.join("net").display().to_string()
        );
        kit.clear();
        let order = loader
            .call(&LoadWithDependencies {
                name: "game".into(),
            })
            .unwrap();
        assert_eq!(order, ["game"], "net is loaded already");
        assert_eq!(loaded(&kit), ["game"]);
    }

    #[test]
    fn dependencies_load_first() {
        let modules = [
            module("main", &[("client_file", false), ("network", false)], &[]),
            module("client_file", &[("network", false)], &[]),
            module("network", &[], &[]),
        ];
        assert_eq!(
            resolve_order(&modules).unwrap(),
            ["network", "client_file", "main"]
        );
    }

    #[test]
    fn optional_dependency_orders_only_when_present() {
        let with = [module("a", &[("z", true)], &[]), module("z", &[], &[])];
        assert_eq!(resolve_order(&with).unwrap(), ["z", "a"]);
        let without = [module("a", &[("z", true)], &[])];
        assert_eq!(resolve_order(&without).unwrap(), ["a"]);
    }

    #[test]
    fn reverse_dependency_makes_the_target_wait() {
        let modules = [module("a", &[], &[]), module("z", &[], &[("a", false)])];
        assert_eq!(resolve_order(&modules).unwrap(), ["z", "a"]);
        let optional_absent = [module("z", &[], &[("gone", true)])];
        assert_eq!(resolve_order(&optional_absent).unwrap(), ["z"]);
        let required_absent = [module("z", &[], &[("gone", false)])];
        assert_eq!(
            resolve_order(&required_absent).unwrap_err().to_string(),
            "gone is missing (reverse dependency of z)"
        );
    }

    #[test]
    fn missing_dependency_names_the_chain() {
        let modules = [
            module("main", &[("client_file", false)], &[]),
            module("client_file", &[("network", false)], &[]),
        ];
        assert_eq!(
            resolve_order(&modules).unwrap_err().to_string(),
            "network is missing (required by client_file, required by main)"
        );
    }

    #[test]
    fn cycle_is_shown_as_a_cycle() {
        let modules = [
            module("a", &[("b", false)], &[]),
            module("b", &[("c", false)], &[]),
            module("c", &[("a", false)], &[]),
        ];
        assert_eq!(
            resolve_order(&modules).unwrap_err().to_string(),
            "dependency cycle: a -> b -> c -> a"
        );
    }

    fn names(list: &[&str]) -> BTreeSet<String> {
        list.iter().map(|n| n.to_string()).collect()
    }

    #[test]
    fn order_for_loads_what_is_missing_first_and_skips_what_is_loaded() {
        let found = [
            module("network", &[], &[]),
            module("client_file", &[("network", false)], &[]),
            module("base", &[("client_file", false)], &[]),
            module("extra", &[("base", false), ("maybe", true)], &[]),
            module("early", &[], &[("extra", false)]),
            module("unrelated", &[("gone", false)], &[]),
        ];
        let loaded = names(&["network", "client_file"]);
        assert_eq!(
            order_for(&found, "extra", &loaded).unwrap(),
            ["base", "early", "extra"]
        );
        assert_eq!(
            order_for(&found, "base", &loaded).unwrap(),
            ["base"],
            "a reverse dependency on a module not being loaded is left alone"
        );
        assert!(
            order_for(&found, "network", &loaded).unwrap().is_empty(),
            "already loaded"
        );
        assert_eq!(
            order_for(&found, "unrelated", &loaded)
                .unwrap_err()
                .to_string(),
            "gone is missing (required by unrelated)"
        );
        assert_eq!(
            order_for(&found, "nowhere", &loaded)
                .unwrap_err()
                .to_string(),
            "no module named 'nowhere' in the module paths"
        );
    }

    #[test]
    fn duplicate_names_in_two_paths_name_both() {
        let first = std::env::temp_dir().join(format!("loader-dup-a-{}", std::process::id()));
        let second = std::env::temp_dir().join(format!("loader-dup-b-{}", std::process::id()));
        for root in [&first, &second] {
            std::fs::create_dir_all(root.join("same")).unwrap();
            std::fs::write(root.join("same/meta.json"), "{}").unwrap();
        }
        let error = scan(&[first.clone(), second.clone()])
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with("module same is in two module paths:"),
            "{error}"
        );
        assert!(
            error.contains(&first.join("same").display().to_string()),
            "{error}"
        );
        assert!(
            error.contains(&second.join("same").display().to_string()),
            "{error}"
        );
        let _ = std::fs::remove_dir_all(first);
        let _ = std::fs::remove_dir_all(second);
    }
}
