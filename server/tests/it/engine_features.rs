//! The engine's features package (`engine-features/`): the server's build
//! (`cargo build -p buildat-server`) and the server's cargo run over its
//! default modules (`server/src/builder`, which selects that package too)
//! ask the same features of every crate they share, so a first start
//! compiles each of those crates once. Asked of cargo itself (`cargo
//! tree`), over the repository's real workspace.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

/// Each package (`name vX.Y.Z`) of the build selecting `packages`, with
/// every feature set cargo resolves for it (a crate compiled for the host
/// and for the target can differ).
fn resolved_features(root: &Path, packages: &[String]) -> BTreeMap<String, BTreeSet<String>> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    command
        .current_dir(root)
        .args(["tree", "--locked", "--offline", "-e", "normal,build"])
        .args(["--prefix", "none", "--format", "{p}|{f}"]);
    for package in packages {
        command.arg("-p").arg(package);
    }
    let output = command.output().expect("cargo runs");
    assert!(
        output.status.success(),
        "cargo tree: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let mut found: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let Some((package, features)) = line.trim_end_matches(" (*)").split_once('|') else {
            continue;
        };
        // "name v1.2.3 (/path)" for a path crate: the name and version.
        let package = package.split(" (").next().unwrap_or(package).to_string();
        found
            .entry(package)
            .or_default()
            .insert(features.to_string());
    }
    found
}

#[test]
fn the_servers_build_and_its_modules_build_ask_the_same_features_of_what_they_share() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut modules = vec!["buildat-engine-features".to_string()];
    for entry in std::fs::read_dir(root.join("modules")).expect("modules/") {
        let dir = entry.expect("entry").path();
        if !dir.join("meta.json").is_file() || !dir.join("Cargo.toml").is_file() {
            continue;
        }
        let manifest: toml::Table = std::fs::read_to_string(dir.join("Cargo.toml"))
            .expect("manifest")
            .parse()
            .expect("a manifest");
        let name = manifest["package"]["name"].as_str().expect("a name");
        modules.push(name.to_string());
    }
    assert!(modules.len() > 10, "the default modules: {modules:?}");
    let server = resolved_features(&root, &["buildat-server".to_string()]);
    let modules = resolved_features(&root, &modules);
    let differing: Vec<String> = server
        .iter()
        .filter_map(|(package, features)| {
            let theirs = modules.get(package)?;
            (theirs != features).then(|| {
                format!("{package}: the server's build {features:?}, the modules' {theirs:?}")
            })
        })
        .collect();
    assert!(
        differing.is_empty(),
        "compiled twice on a first start; list these in engine-features/Cargo.toml with \
         both builds' features:\n{}",
        differing.join("\n")
    );
    assert!(
        server.contains_key("buildat-engine-features v0.1.0"),
        "the server's build selects the features package: {:?}",
        server.keys().collect::<Vec<_>>()
    );
}
