//! The engine's workspace manifest, made usable from another folder: what
//! a cargo workspace of modules outside the repository (`outside.rs`) and
//! the tests' scratch workspaces of module copies
//! (`buildat_harness::layout::write_module_workspace`, which includes this
//! file by path) both write, so a module resolves the engine's crates and
//! dependency versions wherever it is.
//!
//! Owns: turning the repository's `Cargo.toml` into a workspace manifest
//! for another root: its `[workspace.package]`, `[workspace.dependencies]`
//! and `[profile.*]` kept (so a member's `x.workspace = true` and the
//! builds' settings are the engine's), its members replaced, path
//! dependencies made absolute unless the caller has a local copy. Does not
//! own: writing files or deciding when (the callers). Only `std` and
//! `toml`, so the harness can include it.

use std::path::Path;

/// The engine's root manifest for a workspace rooted elsewhere, its
/// members those `members` makes of the engine's. A `[workspace.dependencies]` entry with a path (relative to
/// the engine's root, as written there) becomes `local(path)` when that is
/// `Some` (a path relative to the new root: a copy beside the members),
/// else the absolute path into the engine.
pub fn engine_workspace_manifest(
    engine: &Path,
    members: impl FnOnce(Vec<String>) -> Vec<String>,
    local: &dyn Fn(&str) -> Option<String>,
) -> std::io::Result<toml::Table> {
    let path = engine.join("Cargo.toml");
    let text = std::fs::read_to_string(&path)?;
    let invalid = |what: String| std::io::Error::new(std::io::ErrorKind::InvalidData, what);
    let mut manifest: toml::Table = text
        .parse()
        .map_err(|error| invalid(format!("{}: {error}", path.display())))?;
    let workspace = manifest
        .get_mut("workspace")
        .and_then(|w| w.as_table_mut())
        .ok_or_else(|| invalid(format!("{}: no [workspace]", path.display())))?;
    let engine_members = workspace
        .get("members")
        .and_then(|m| m.as_array())
        .into_iter()
        .flatten()
        .filter_map(|m| m.as_str().map(str::to_string))
        .collect();
    workspace.insert(
        "members".into(),
        toml::Value::Array(
            members(engine_members)
                .into_iter()
                .map(toml::Value::from)
                .collect(),
        ),
    );
    workspace.remove("exclude");
    workspace.remove("default-members");
    if let Some(dependencies) = workspace
        .get_mut("dependencies")
        .and_then(|d| d.as_table_mut())
    {
        for (_, spec) in dependencies.iter_mut() {
            let Some(table) = spec.as_table_mut() else {
                continue;
            };
            let Some(path) = table.get("path").and_then(|p| p.as_str()) else {
                continue;
            };
            let path = local(path).unwrap_or_else(|| engine.join(path).display().to_string());
            table.insert("path".into(), path.into());
        }
    }
    Ok(manifest)
}
