//! Modules outside the engine's repository. A module folder anywhere names
//! the engine's crates as the engine's own modules do
//! (`buildat-interface.workspace = true`), with no path into any checkout;
//! the server supplies the paths: it makes the module path holding the
//! module a cargo workspace of its own, writing there
//! - `Cargo.toml`: its module crates as members; the engine's
//!   `[workspace.package]`, `[workspace.dependencies]` (the engine's crates
//!   by absolute path, unless the folder holds a copy) and `[profile.*]`
//!   (`engine_manifest.rs`), with the engine's crates compiled with the
//!   settings they have in the engine's workspace and no override for a
//!   package not in the build (cargo would warn);
//! - `.engine-features/`, when the server builds modules of the engine's
//!   workspace too: a package the builder selects in this workspace's cargo
//!   runs, depending on what those modules use from a registry with their
//!   features, so those compile to the artifacts the engine's run made
//!   (see [`FEATURES_PACKAGE`]): an outside module's first build compiles
//!   itself and the engine's own crates it uses, no registry crate;
//! - `Cargo.lock`, when missing: a copy of the engine's, so the versions
//!   are the engine's (cargo keeps what the members use), and the engine's
//!   own lock file gets no line;
//! - `.cargo/config.toml`: cargo's target dir is the server's
//!   (`<build>/target`), so a modder's `cargo test` in a module folder reuses
//!   what the server built, and the reverse.
//!
//! The first line of each marks it as the server's ([`MARK`]); a folder
//! whose `Cargo.toml` is someone else's is left alone (its modules build in
//! that workspace), and so is a module that is a member of a workspace
//! already (the engine's own) or is a workspace of its own (`[workspace]`
//! in its manifest). The files are rewritten only when their text changes
//! (a module folder came or went).
//!
//! Owns: deciding whether a module needs this and writing those files.
//! Does not own: building (`mod.rs`; the written workspace is then built
//! like any other, its modules together, into the shared target dir).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::engine_manifest::engine_workspace_manifest;

/// The first line of every file written here: how a later run knows its own.
pub const MARK: &str = "# Written by buildat-server";

/// The engine's repository (the server's crate is in it): where its crates
/// and lock file are.
pub fn engine_root() -> PathBuf {
    let server = Path::new(env!("CARGO_MANIFEST_DIR"));
    server.parent().unwrap_or(server).to_path_buf()
}

/// The package every outside workspace has when the server also builds
/// modules of the engine's workspace: it depends on what they depend on
/// from a registry, with the features they ask for, and on what the
/// engine's own package of that name does (`engine-features/`, which the
/// server's build and the engine's modules' run select), so a cargo run
/// selecting it unifies dependency features as the engine's run does.
/// (Not on the modules themselves: cargo hashes a path package by its path
/// relative to the workspace root, so the engine's crates compile to other
/// artifacts here anyway, and the modules would compile again.)
pub const FEATURES_PACKAGE: &str = "buildat-engine-features";
const FEATURES_DIR: &str = ".engine-features";
/// Where the engine's own [`FEATURES_PACKAGE`] is, in its repository.
const ENGINE_FEATURES_DIR: &str = "engine-features";

/// Makes the module path holding the module in `dir` its cargo workspace
/// (see the module docs) if the module needs one: it uses `workspace =
/// true` and no workspace has it as a member. `target_dir` is the server's
/// cargo target dir, `module_paths` its module paths (the engine's modules
/// in them set the features, see [`FEATURES_PACKAGE`]). Whether the folder
/// is such a workspace now.
pub fn prepare(dir: &Path, target_dir: &Path, module_paths: &[PathBuf]) -> std::io::Result<bool> {
    let Ok(manifest) = super::read_manifest(dir) else {
        return Ok(false);
    };
    if manifest.contains_key("workspace") || !inherits(&manifest) {
        return Ok(false);
    }
    let Some(root) = dir.parent() else {
        return Ok(false);
    };
    let root_manifest = root.join("Cargo.toml");
    if root_manifest.exists() {
        if !is_ours(&root_manifest) {
            return Ok(false);
        }
    } else if is_claimed(dir) {
        return Ok(false);
    }
    write_workspace(root, target_dir, module_paths)?;
    Ok(true)
}

/// Writes the workspace files of the module path `root` (see the module docs).
pub fn write_workspace(
    root: &Path,
    target_dir: &Path,
    module_paths: &[PathBuf],
) -> std::io::Result<()> {
    let engine = engine_root();
    let (mut members, local_crates) = find_crates(root)?;
    let engine_modules = find_engine_modules(module_paths);
    let features = write_features_package(root, &engine_modules)?;
    if features.is_some() {
        members.push(FEATURES_DIR.to_string());
    }
    let local = |path: &str| {
        // `modules/<module>/<crate>` in the engine: a copy here is used.
        let relative = path.strip_prefix("modules/")?;
        local_crates
            .iter()
            .any(|c| c == relative)
            .then(|| relative.to_string())
    };
    let mut manifest = engine_workspace_manifest(&engine, |_| members.clone(), &local)?;
    let lock = root.join("Cargo.lock");
    if !lock.exists() {
        std::fs::copy(engine.join("Cargo.lock"), &lock)?;
    }
    write_config(root, target_dir)?;
    // What the manifest is made of: when unchanged, it is written already.
    let mut hasher = Sha256::new();
    hasher.update(toml::to_string(&manifest).map_err(std::io::Error::other)?);
    for member in &members {
        hasher.update(member.as_bytes());
        hasher.update(std::fs::read(root.join(member).join("Cargo.toml")).unwrap_or_default());
    }
    hasher.update(features.unwrap_or_default());
    let inputs: String = hasher.finalize()[..10]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let inputs_line = format!("# inputs {inputs}\n");
    let path = root.join("Cargo.toml");
    if std::fs::read_to_string(&path).is_ok_and(|text| text.contains(&inputs_line)) {
        return Ok(());
    }
    keep_member_settings(&mut manifest, &[]);
    let text = |manifest: &toml::Table, inputs_line: &str| -> std::io::Result<String> {
        Ok(format!(
            "{MARK} for the modules in this folder: the engine's crates ({}), dependency\n\
             # versions and build settings. Rewritten when module folders come and go; do not edit.\n\
             {inputs_line}\n{}",
            engine.display(),
            toml::to_string(manifest).map_err(std::io::Error::other)?
        ))
    };
    write_if_changed(&path, &text(&manifest, "")?)?;
    // Cargo warns about a profile's package that is not in the build: the
    // engine's overrides are for the engine's dependencies, most of which
    // these modules do not use.
    match resolved_packages(&path) {
        Some(packages) => {
            prune_profile_packages(&mut manifest, &packages);
            write_if_changed(&path, &text(&manifest, &inputs_line)?)
        }
        None => Ok(()),
    }
}

/// `<root>/.cargo/config.toml`, unless someone else's is there.
fn write_config(root: &Path, target_dir: &Path) -> std::io::Result<()> {
    let config = root.join(".cargo").join("config.toml");
    if config.exists() && !is_ours(&config) {
        return Ok(());
    }
    std::fs::create_dir_all(root.join(".cargo"))?;
    let target = toml::Value::from(target_dir.display().to_string());
    write_if_changed(
        &config,
        &format!(
            "{MARK}: cargo builds these modules where the server does, so each reuses\n\
             # what the other built.\n[build]\ntarget-dir = {target}\n"
        ),
    )
}

/// A profile's `package."*"` applies to the packages that are not members
/// of the workspace. The engine's own crates are members of the engine's,
/// but not here, where they are used from the engine: each gets the
/// profile's own values for what `"*"` sets (an override of its own, if
/// the engine has one, stays), so it compiles with the engine's settings
/// to the same artifact, which cargo reuses in the shared target dir
/// instead of building it again.
fn keep_member_settings(manifest: &mut toml::Table, engine_modules: &[String]) {
    let mut engine_crates: Vec<String> = manifest
        .get("workspace")
        .and_then(|w| w.get("dependencies"))
        .and_then(|d| d.as_table())
        .into_iter()
        .flatten()
        .filter(|(_, spec)| {
            spec.get("path")
                .and_then(|p| p.as_str())
                .is_some_and(|p| Path::new(p).is_absolute())
        })
        .map(|(name, _)| name.clone())
        .collect();
    engine_crates.extend_from_slice(engine_modules);
    let Some(profiles) = manifest.get_mut("profile").and_then(|p| p.as_table_mut()) else {
        return;
    };
    for (profile_name, profile) in profiles.iter_mut() {
        let Some(profile) = profile.as_table_mut() else {
            continue;
        };
        let Some(all) = profile
            .get("package")
            .and_then(|p| p.get("*"))
            .and_then(|p| p.as_table())
            .cloned()
        else {
            continue;
        };
        let mut member = toml::Table::new();
        for key in all.keys() {
            let value = match (profile.get(key), key.as_str(), profile_name.as_str()) {
                (Some(value), _, _) => value.clone(),
                (None, "opt-level", "dev" | "test") => 0.into(),
                (None, "opt-level", "release" | "bench") => 3.into(),
                _ => continue,
            };
            member.insert(key.clone(), value);
        }
        let Some(packages) = profile.get_mut("package").and_then(|p| p.as_table_mut()) else {
            continue;
        };
        for name in &engine_crates {
            packages
                .entry(name.clone())
                .or_insert_with(|| toml::Value::Table(member.clone()));
        }
    }
}

/// Drops every profile's package override naming none of `packages`.
fn prune_profile_packages(manifest: &mut toml::Table, packages: &BTreeSet<String>) {
    let Some(profiles) = manifest.get_mut("profile").and_then(|p| p.as_table_mut()) else {
        return;
    };
    for (_, profile) in profiles.iter_mut() {
        if let Some(overrides) = profile.get_mut("package").and_then(|p| p.as_table_mut()) {
            overrides.retain(|name, _| name == "*" || packages.contains(name));
        }
    }
}

/// The names of the packages in the build of the workspace `manifest` for
/// this platform (`cargo tree`, offline, as a build resolves); `None` if
/// cargo cannot tell.
fn resolved_packages(manifest: &Path) -> Option<BTreeSet<String>> {
    let stdout = super::ask_cargo(
        &[
            "tree",
            "--offline",
            "--edges",
            "normal,build,dev",
            "--prefix",
            "none",
            "--format",
            "{p}",
        ],
        manifest,
    )?;
    let names = String::from_utf8_lossy(&stdout)
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| !name.starts_with('['))
        .map(str::to_string)
        .collect();
    Some(names)
}

/// The Rust modules of `module_paths` that are members of the engine's
/// workspace: package name, folder and cargo features (`meta.json`), as
/// the engine's cargo run builds them.
fn find_engine_modules(module_paths: &[PathBuf]) -> Vec<(String, PathBuf, Vec<String>)> {
    let engine = engine_root()
        .canonicalize()
        .unwrap_or_else(|_| engine_root());
    let mut found = BTreeSet::new();
    for path in module_paths {
        for dir in sorted_dirs(path).unwrap_or_default() {
            let Ok(parsed) = buildat_interface::meta::ModuleMeta::read(&dir) else {
                continue;
            };
            let Ok(manifest) = super::read_manifest(&dir) else {
                continue;
            };
            let Some(package) = manifest
                .get("package")
                .and_then(|p| p.get("name"))
                .and_then(|n| n.as_str())
            else {
                continue;
            };
            let Ok(canonical) = dir.canonicalize() else {
                continue;
            };
            if parsed.meta.disable_rust || claimed_by(&canonical).is_none_or(|root| root != engine)
            {
                continue;
            }
            found.insert((package.to_string(), canonical, parsed.meta.cargo_features));
        }
    }
    found.into_iter().collect()
}

/// Writes `<root>/.engine-features/` (see [`FEATURES_PACKAGE`]) depending
/// on `engine_modules`, or removes it when there are none; its manifest's
/// text if written.
fn write_features_package(
    root: &Path,
    engine_modules: &[(String, PathBuf, Vec<String>)],
) -> std::io::Result<Option<String>> {
    let dir = root.join(FEATURES_DIR);
    let sections = engine_dependencies(engine_modules);
    if sections.values().all(BTreeMap::is_empty) {
        if dir.join("Cargo.toml").is_file() && is_ours(&dir.join("Cargo.toml")) {
            std::fs::remove_dir_all(&dir)?;
        }
        return Ok(None);
    }
    let mut manifest: toml::Table = toml::toml! {
        [package]
        name = "buildat-engine-features"
        version = "0.0.0"
        edition = "2024"
        publish = false

        [lib]
        path = "lib.rs"
    };
    for (section, dependencies) in sections {
        let mut table = toml::Table::new();
        for (name, wanted) in dependencies {
            let mut spec = toml::Table::new();
            if let Some(package) = wanted.package {
                spec.insert("package".into(), package.into());
            }
            spec.insert("version".into(), wanted.version.into());
            if !wanted.default_features {
                spec.insert("default-features".into(), false.into());
            }
            if !wanted.features.is_empty() {
                let features: Vec<String> = wanted.features.into_iter().collect();
                spec.insert("features".into(), features.into());
            }
            table.insert(name, spec.into());
        }
        manifest.insert(section.to_string(), table.into());
    }
    let text = format!(
        "{MARK}: the dependencies of the engine's modules the server builds, with\n\
         # the features they ask for, so a cargo run over this folder's modules with this\n\
         # package resolves features as the engine's run does and reuses what it compiled.\n\
         # Do not edit.\n\n{}",
        toml::to_string(&manifest).map_err(std::io::Error::other)?
    );
    std::fs::create_dir_all(&dir)?;
    write_if_changed(&dir.join("lib.rs"), "")?;
    write_if_changed(&dir.join("Cargo.toml"), &text)?;
    Ok(Some(text))
}

/// One dependency as the engine's crates ask for it, merged over them.
#[derive(Default)]
struct Wanted {
    /// The crate's name when the dependency's key is another (`syn2 = {
    /// package = "syn" }`, two versions of one crate side by side).
    package: Option<String>,
    version: String,
    default_features: bool,
    features: BTreeSet<String>,
}

/// The dependencies from a registry of the engine's modules, of every
/// crate of the engine they depend on by path and of the engine's features
/// package, per section (`dependencies`, `build-dependencies`), each with
/// the features any of them asks for: what decides the features of the
/// engine's run.
fn engine_dependencies(
    engine_modules: &[(String, PathBuf, Vec<String>)],
) -> BTreeMap<&'static str, BTreeMap<String, Wanted>> {
    let engine = super::read_manifest(&engine_root()).unwrap_or_default();
    let inherited = engine
        .get("workspace")
        .and_then(|w| w.get("dependencies"))
        .and_then(|d| d.as_table())
        .cloned()
        .unwrap_or_default();
    let mut crates = BTreeSet::new();
    if !engine_modules.is_empty() {
        crates.insert(engine_root().join(ENGINE_FEATURES_DIR));
    }
    for (_, dir, _) in engine_modules {
        crates.insert(dir.clone());
        crates.extend(super::path_dependencies(dir).unwrap_or_default());
    }
    let mut sections: BTreeMap<&'static str, BTreeMap<String, Wanted>> = BTreeMap::new();
    for dir in crates {
        let Ok(manifest) = super::read_manifest(&dir) else {
            continue;
        };
        for section in ["dependencies", "build-dependencies"] {
            let Some(dependencies) = manifest.get(section).and_then(|d| d.as_table()) else {
                continue;
            };
            for (name, spec) in dependencies {
                let base = match spec.get("workspace").and_then(|w| w.as_bool()) {
                    Some(true) => inherited.get(name).cloned(),
                    _ => Some(spec.clone()),
                };
                let Some(base) = base else { continue };
                let field = |key: &str| base.get(key).or_else(|| spec.get(key));
                if field("path").is_some() {
                    continue;
                }
                let package = field("package")
                    .and_then(|p| p.as_str())
                    .map(str::to_string);
                let version = match (&base, field("version")) {
                    (toml::Value::String(version), _) => version.clone(),
                    (_, Some(toml::Value::String(version))) => version.clone(),
                    _ => continue,
                };
                let wanted = sections
                    .entry(section)
                    .or_default()
                    .entry(name.clone())
                    .or_insert_with(|| Wanted {
                        package,
                        version,
                        ..Wanted::default()
                    });
                wanted.default_features |= base
                    .get("default-features")
                    .and_then(|d| d.as_bool())
                    .unwrap_or(true);
                for features in [base.get("features"), spec.get("features")] {
                    wanted.features.extend(
                        features
                            .and_then(|f| f.as_array())
                            .into_iter()
                            .flatten()
                            .filter_map(|f| f.as_str().map(str::to_string)),
                    );
                }
            }
        }
    }
    sections
}

/// The crates under `root` that belong in its workspace, relative to it:
/// each folder's `Cargo.toml` and those of its subfolders (a module's API
/// crate), but none that is a workspace itself; and the subfolder crates
/// alone (`<module>/<crate>`). Sorted.
fn find_crates(root: &Path) -> std::io::Result<(Vec<String>, Vec<String>)> {
    let is_member =
        |dir: &Path| super::read_manifest(dir).is_ok_and(|m| !m.contains_key("workspace"));
    let (mut members, mut local) = (Vec::new(), Vec::new());
    for folder in sorted_dirs(root)? {
        let Some(name) = folder.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if name.starts_with('.') || name == "target" {
            continue;
        }
        if is_member(&folder) {
            members.push(name.to_string());
        }
        for sub in sorted_dirs(&folder).unwrap_or_default() {
            let Some(sub_name) = sub.file_name().and_then(|n| n.to_str()) else {
                continue;
            };
            if sub_name != "target" && sub_name != "src" && is_member(&sub) {
                members.push(format!("{name}/{sub_name}"));
                local.push(format!("{name}/{sub_name}"));
            }
        }
    }
    Ok((members, local))
}

fn sorted_dirs(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(dir)?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    Ok(dirs)
}

/// Whether a manifest (or a table of one) takes anything from its
/// workspace (`x.workspace = true`).
fn inherits(table: &toml::Table) -> bool {
    table.iter().any(|(key, value)| {
        (key == "workspace" && value.as_bool() == Some(true))
            || value.as_table().is_some_and(inherits)
    })
}

fn is_ours(path: &Path) -> bool {
    std::fs::read_to_string(path).is_ok_and(|text| text.starts_with(MARK))
}

/// Whether the nearest workspace above `dir` (as cargo looks for it) has
/// `dir` among its members: a member written out or matched by a pattern
/// whose parts are names or `*`.
fn is_claimed(dir: &Path) -> bool {
    claimed_by(dir).is_some()
}

/// The root of the nearest workspace above `dir` if it has `dir` as a
/// member (see [`is_claimed`]).
fn claimed_by(dir: &Path) -> Option<PathBuf> {
    for ancestor in dir.ancestors().skip(1) {
        let Ok(manifest) = super::read_manifest(ancestor) else {
            continue;
        };
        let Some(workspace) = manifest.get("workspace") else {
            continue;
        };
        let Ok(relative) = dir.strip_prefix(ancestor) else {
            return None;
        };
        let relative: Vec<&str> = relative.iter().filter_map(|p| p.to_str()).collect();
        let matches = |key: &str| {
            workspace
                .get(key)
                .and_then(|m| m.as_array())
                .into_iter()
                .flatten()
                .filter_map(|m| m.as_str())
                .any(|pattern| matches_pattern(pattern, &relative))
        };
        return (matches("members") && !matches("exclude")).then(|| ancestor.to_path_buf());
    }
    None
}

fn matches_pattern(pattern: &str, parts: &[&str]) -> bool {
    let pattern: Vec<&str> = pattern.split('/').filter(|p| !p.is_empty()).collect();
    pattern.len() == parts.len()
        && pattern
            .iter()
            .zip(parts)
            .all(|(want, part)| *want == "*" || want == part)
}

/// Writes `text` to `path` unless it holds it already (through a temporary
/// file, so a reader never sees half of it).
fn write_if_changed(path: &Path, text: &str) -> std::io::Result<()> {
    if std::fs::read_to_string(path).is_ok_and(|old| old == text) {
        return Ok(());
    }
    let temporary = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&temporary, text)?;
    std::fs::rename(&temporary, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_table(path: &Path) -> toml::Table {
        let text = std::fs::read_to_string(path).expect("a TOML file");
        text.parse().expect("valid TOML")
    }

    fn module(root: &Path, name: &str, manifest: &str) {
        std::fs::create_dir_all(root.join(name).join("src")).expect("module dir");
        std::fs::write(root.join(name).join("Cargo.toml"), manifest).expect("manifest");
        std::fs::write(root.join(name).join("src/lib.rs"), "").expect("source");
        std::fs::write(root.join(name).join("meta.json"), "{}").expect("meta");
    }

    const INHERITING: &str = "[package]\nname = \"m\"\nversion = \"0.1.0\"\n\
        edition.workspace = true\n[dependencies]\nbuildat-interface.workspace = true\n";

    #[test]
    fn an_outside_module_gets_the_engines_crates_and_lock_and_is_left_alone_otherwise() {
        let scratch = tempfile::tempdir().expect("temp dir");
        let root = scratch.path().join("mods");
        module(&root, "hello", INHERITING);
        module(&root, "alone", "[package]\nname = \"alone\"\n[workspace]\n");
        let target = scratch.path().join("build/target");
        assert!(prepare(&root.join("hello"), &target, &[]).expect("written"));
        let manifest = read_table(&root.join("Cargo.toml"));
        let workspace = &manifest["workspace"];
        assert_eq!(
            workspace["members"].as_array().expect("members"),
            &vec![toml::Value::from("hello")],
            "a crate that is a workspace itself is no member"
        );
        let interface = workspace["dependencies"]["buildat-interface"]["path"]
            .as_str()
            .expect("a path");
        assert_eq!(Path::new(interface), engine_root().join("interface"));
        let dev = &manifest["profile"]["dev"]["package"];
        assert_eq!(
            dev["buildat-interface"]["opt-level"].as_integer(),
            Some(0),
            "the engine's crates compile as they do in the engine: {dev}"
        );
        assert_eq!(dev["*"]["opt-level"].as_integer(), Some(1), "{dev}");
        assert!(
            dev.get("argon2").is_none(),
            "no override for a package not in the build: {dev}"
        );
        let written = std::fs::metadata(root.join("Cargo.toml"))
            .and_then(|m| m.modified())
            .expect("a time");
        assert!(prepare(&root.join("hello"), &target, &[]).expect("again"));
        assert_eq!(
            std::fs::metadata(root.join("Cargo.toml"))
                .and_then(|m| m.modified())
                .expect("a time"),
            written,
            "unchanged inputs, no new write"
        );
        // Seeded from the engine's, kept to what the module uses: the
        // engine's versions.
        let packages = |path: &Path| -> BTreeSet<(String, String)> {
            read_table(path)["package"]
                .as_array()
                .expect("packages")
                .iter()
                .map(|p| (p["name"].to_string(), p["version"].to_string()))
                .collect()
        };
        let ours = packages(&root.join("Cargo.lock"));
        assert!(ours.iter().any(|(name, _)| name == "\"serde\""), "{ours:?}");
        let engines = packages(&engine_root().join("Cargo.lock"));
        let extra: Vec<_> = ours
            .difference(&engines)
            .filter(|(name, _)| name != "\"m\"")
            .collect();
        assert!(extra.is_empty(), "versions not the engine's: {extra:?}");
        let config = std::fs::read_to_string(root.join(".cargo/config.toml")).expect("config");
        assert!(config.contains(&target.display().to_string()), "{config}");
        assert!(!prepare(&root.join("alone"), &target, &[]).expect("nothing"));
        assert!(!root.join(FEATURES_DIR).exists());
        // With the engine's modules among the server's module paths, a cargo
        // run over these unifies features as the engine's run does.
        let engine_modules = [engine_root().join("modules")];
        assert!(prepare(&root.join("hello"), &target, &engine_modules).expect("written"));
        assert!(root.join(FEATURES_DIR).join("Cargo.toml").is_file());
        let features = read_table(&root.join(FEATURES_DIR).join("Cargo.toml"));
        let dependencies = features["dependencies"].as_table().expect("dependencies");
        assert!(
            dependencies.get("tokio").is_some() && dependencies.get("serde").is_some(),
            "what the engine's modules use from a registry: {features}"
        );
        assert!(
            !dependencies.keys().any(|name| name.starts_with("buildat-")),
            "not the engine's own crates: {features}"
        );
        // And what the engine's features package asks, renamed as there.
        let host = features["build-dependencies"]
            .as_table()
            .expect("build-dependencies");
        assert_eq!(
            host.get("syn2").and_then(|s| s.get("package")),
            Some(&toml::Value::from("syn")),
            "the engine's features package's: {features}"
        );
        // A folder whose manifest is someone else's is theirs.
        let theirs = scratch.path().join("theirs");
        module(&theirs, "hello", INHERITING);
        std::fs::write(
            theirs.join("Cargo.toml"),
            "[workspace]\nmembers = [\"*\"]\n",
        )
        .expect("their manifest");
        assert!(!prepare(&theirs.join("hello"), &target, &[]).expect("left alone"));
        assert!(!theirs.join("Cargo.lock").exists());
    }

    #[test]
    fn the_engines_own_modules_are_members_of_its_workspace() {
        let modules = engine_root().join("modules");
        assert!(is_claimed(&modules.join("main")));
        assert!(is_claimed(&modules.join("main/api")));
        assert!(!is_claimed(&engine_root().join("world/modules/hello")));
        assert!(!prepare(&modules.join("main"), Path::new("/nowhere"), &[]).expect("nothing"));
    }
}
