//! Where things are: the repository, the server and client binaries (beside
//! the harness's own), the module build folder, and the run's scratch
//! folder (worlds, client caches, copies of the test fixture modules, logs).
//!
//! Owns: finding and checking those paths, and laying out fixture copies.
//! Does not own: starting anything (`server`, `fleet`).

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

/// The server's own code for a workspace manifest beside the engine's
/// (`buildat_server::builder`, which builds modules outside the
/// repository with it): one definition, included rather than linked, since
/// the harness does not depend on the server's library.
#[path = "../../server/src/builder/engine_manifest.rs"]
mod engine_manifest;

pub struct Layout {
    pub repo: PathBuf,
    pub server_bin: PathBuf,
    pub client_bin: PathBuf,
    pub build_dir: PathBuf,
    /// `dev` or `release`, as `--module-profile` takes it.
    pub module_profile: &'static str,
    pub scratch: tempfile::TempDir,
}

/// The options every test shares.
#[derive(Debug, Clone, clap::Args)]
pub struct CommonOptions {
    /// Folder holding buildat-server and buildat-client (default: the one
    /// holding this program, i.e. the same cargo profile).
    #[arg(long, value_name = "DIR", global = true)]
    pub bin_dir: Option<PathBuf>,
    /// Cargo profile modules are built with (default: release for a release
    /// harness, dev for a debug one).
    #[arg(long, value_name = "PROFILE", global = true)]
    pub module_profile: Option<String>,
    /// Where modules are built (default: target/harness-modules; CI passes
    /// the tests' target/test-modules to reuse their dev builds).
    #[arg(long, value_name = "DIR", global = true)]
    pub build_dir: Option<PathBuf>,
    /// Keep the run's scratch folder (worlds, logs) and print where it is.
    #[arg(long, global = true)]
    pub keep: bool,
}

impl Layout {
    pub fn new(options: &CommonOptions) -> anyhow::Result<Self> {
        let repo = repo_root();
        let bin_dir = match &options.bin_dir {
            Some(dir) => dir.clone(),
            None => std::env::current_exe()
                .context("finding this program")?
                .parent()
                .context("this program's folder")?
                .to_path_buf(),
        };
        let server_bin = bin_dir.join("buildat-server");
        let client_bin = bin_dir.join("buildat-client");
        for bin in [&server_bin, &client_bin] {
            if !bin.is_file() {
                bail!(
                    "{} is missing: build it first (the scripts/ wrappers run \
                     `cargo build -p buildat-server -p buildat-client -p buildat-harness`)",
                    bin.display()
                );
            }
        }
        let module_profile = match options.module_profile.as_deref() {
            Some("dev") => "dev",
            Some("release") => "release",
            Some(other) => bail!("--module-profile {other}: expected dev or release"),
            None if cfg!(debug_assertions) => "dev",
            None => "release",
        };
        let scratch = tempfile::Builder::new()
            .prefix("buildat-harness-")
            .tempdir()
            .context("creating the scratch folder")?;
        let build_dir = match &options.build_dir {
            Some(dir) => std::path::absolute(dir).context("the build folder")?,
            None => repo.join("target").join("harness-modules"),
        };
        let layout = Self {
            build_dir,
            repo,
            server_bin,
            client_bin,
            module_profile,
            scratch,
        };
        if options.keep {
            println!("scratch folder (kept): {}", layout.scratch.path().display());
        }
        Ok(layout)
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.scratch.path().join(name)
    }

    /// Builds the test fixtures where they are (so their copies find fresh
    /// artifacts by content hash) and copies `fixture` under each of
    /// `names` into the scratch module folder, which it returns.
    pub fn add_fixtures(&self, fixture: &str, names: &[&str]) -> anyhow::Result<PathBuf> {
        let fixtures = self.repo.join("tests").join("modules");
        crate::server::build_modules(self, &fixtures)?;
        let modules = self.path("modules");
        write_module_workspace(&modules)?;
        for name in names {
            copy_dir(&fixtures.join(fixture), &modules.join(name))?;
        }
        Ok(modules)
    }
}

/// The repository's root folder (the harness lives in it).
pub fn repo_root() -> PathBuf {
    let harness = Path::new(env!("CARGO_MANIFEST_DIR"));
    harness.parent().unwrap_or(harness).to_path_buf()
}

/// The module build folder every test of a `cargo test` run shares
/// (artifacts are content-addressed).
pub fn test_build_dir() -> PathBuf {
    repo_root().join("target").join("test-modules")
}

/// Makes the folder holding the module path `modules` a cargo workspace
/// for copies of modules: the repository's workspace manifest with only
/// its members under `modules/` (`modules/*`, `modules/*/api`,
/// `modules/*/protocol`, ...) and absolute paths to the host's crates, its
/// lock file, and a copy of every module's library crates
/// (`modules/<name>/api`, `modules/<name>/protocol`,
/// `modules/worldgen/terrain`), and of the crates over those (`modkit`).
/// Copies then resolve their path
/// dependencies (API and protocol crates, the interface) as the originals do, so they
/// hash alike and find the originals' artifacts, and a copy that changes
/// can be built.
pub fn write_module_workspace(modules: &Path) -> anyhow::Result<()> {
    let root = modules
        .parent()
        .context("a module path has a parent folder")?;
    std::fs::create_dir_all(modules).with_context(|| format!("creating {}", modules.display()))?;
    let repo = repo_root();
    let above = crates_over_module_apis(&repo)?;
    // The repository's members under `modules/`; module API crates are
    // copied with their modules, and so are the crates over them (the
    // modkit): the host's crates stay where they are.
    let manifest = engine_manifest::engine_workspace_manifest(
        &repo,
        |members| {
            members
                .into_iter()
                .filter(|member| member.starts_with("modules/"))
                .chain(above.iter().cloned())
                .collect()
        },
        &|path| {
            (path.starts_with("modules/") || above.iter().any(|a| a == path))
                .then(|| path.to_string())
        },
    )
    .context("the repository's Cargo.toml")?;
    for path in &above {
        copy_dir(&repo.join(path), &root.join(path))?;
    }
    let written = root.join("Cargo.toml");
    std::fs::write(&written, manifest.to_string())
        .with_context(|| format!("writing {}", written.display()))?;
    // Every module's API crate, as in the repository, so a copy of a module
    // that uses another's API resolves it even when that module is not
    // copied (a folder without a meta.json is no module).
    // The same for a module's other library crates (worldgen's `terrain`).
    // The member glob `modules/*` meets every such folder, so each also
    // gets its module's own crate whole (its benches and tests too: cargo
    // checks every target of every member), but not its `meta.json`, so the
    // server never loads it: a folder holding only `api/` would be a member
    // without a manifest, and cargo refuses the whole workspace.
    for entry in std::fs::read_dir(repo.join("modules")).context("reading modules/")? {
        let module = entry?.path();
        let Some(module_name) = module.file_name() else {
            continue;
        };
        let copy = modules.join(module_name);
        let mut copied_a_library = false;
        for crate_dir in
            std::fs::read_dir(&module).with_context(|| format!("reading {}", module.display()))?
        {
            let crate_dir = crate_dir?.path();
            if crate_dir.join("Cargo.toml").is_file()
                && let Some(crate_name) = crate_dir.file_name()
            {
                copy_dir(&crate_dir, &copy.join(crate_name))?;
                copied_a_library = true;
            }
        }
        if copied_a_library
            && module.join("Cargo.toml").is_file()
            && !copy.join("meta.json").exists()
        {
            copy_dir(&module, &copy)?;
            std::fs::remove_file(copy.join("meta.json"))
                .or_else(|e| match e.kind() {
                    std::io::ErrorKind::NotFound => Ok(()),
                    _ => Err(e),
                })
                .with_context(|| format!("leaving {} no module", copy.display()))?;
        }
    }
    std::fs::copy(repo.join("Cargo.lock"), root.join("Cargo.lock"))
        .context("copying Cargo.lock")?;
    Ok(())
}

/// The repository's crates outside `modules/` that modules use and that
/// use a module's API crate themselves (`modkit`), as paths in the
/// repository: copied with the modules, or a copy of a module using one
/// would meet the original API crate beside the copied one ("package
/// collision in the lockfile").
fn crates_over_module_apis(repo: &Path) -> anyhow::Result<Vec<String>> {
    let text = std::fs::read_to_string(repo.join("Cargo.toml")).context("reading Cargo.toml")?;
    let manifest: toml::Table = text.parse().context("parsing Cargo.toml")?;
    let paths: Vec<(String, String)> = manifest
        .get("workspace")
        .and_then(|w| w.get("dependencies"))
        .and_then(|d| d.as_table())
        .into_iter()
        .flatten()
        .filter_map(|(name, spec)| Some((name.clone(), spec.get("path")?.as_str()?.to_string())))
        .collect();
    let module_crates: Vec<&str> = paths
        .iter()
        .filter(|(_, path)| path.starts_with("modules/"))
        .map(|(name, _)| name.as_str())
        .collect();
    let mut above = Vec::new();
    for (_, path) in paths.iter().filter(|(_, p)| !p.starts_with("modules/")) {
        let Ok(text) = std::fs::read_to_string(repo.join(path).join("Cargo.toml")) else {
            continue;
        };
        let Ok(crate_manifest) = text.parse::<toml::Table>() else {
            continue;
        };
        let uses_module_api = crate_manifest
            .get("dependencies")
            .and_then(|d| d.as_table())
            .is_some_and(|d| d.keys().any(|k| module_crates.contains(&k.as_str())));
        if uses_module_api {
            above.push(path.clone());
        }
    }
    Ok(above)
}

/// Turns the module copy in `dir` (a copy of a fixture whose package fields
/// are its own) into a workspace of its own, with the interface by absolute
/// path and the repository's lock file, so it builds wherever it is: for
/// tests and benchmarks that edit a module's source.
pub fn make_standalone(dir: &Path) -> anyhow::Result<()> {
    let manifest = dir.join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest)
        .with_context(|| format!("reading {}", manifest.display()))?;
    let interface = repo_root().join("interface");
    let text = text.replace(
        "buildat-interface.workspace = true",
        &format!(
            "buildat-interface = {{ path = \"{}\" }}",
            interface.display()
        ),
    ) + "\n[workspace]\n";
    std::fs::write(&manifest, text).with_context(|| format!("writing {}", manifest.display()))?;
    std::fs::copy(repo_root().join("Cargo.lock"), dir.join("Cargo.lock"))
        .context("copying Cargo.lock")?;
    Ok(())
}

/// Copies a module folder (without any `target/`).
pub fn copy_dir(from: &Path, to: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(to).with_context(|| format!("creating {}", to.display()))?;
    for entry in std::fs::read_dir(from).with_context(|| format!("reading {}", from.display()))? {
        let entry = entry?;
        let path = entry.path();
        let name = entry.file_name();
        if name == "target" {
            continue;
        }
        if path.is_dir() {
            copy_dir(&path, &to.join(&name))?;
        } else {
            std::fs::copy(&path, to.join(&name))
                .with_context(|| format!("copying {}", path.display()))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scratch workspace into which no module was copied yet resolves:
    /// the folders holding a module's library crates are members with a
    /// manifest (once `modules/crafting` held only `api/`, and every build
    /// in a scratch failed on it).
    #[test]
    fn a_scratch_workspace_without_module_copies_resolves() {
        let scratch = tempfile::tempdir().expect("a temp dir");
        let modules = scratch.path().join("modules");
        write_module_workspace(&modules).expect("a scratch workspace");
        // Each such folder holds its module's crate whole (a manifest
        // whose bench is missing fails every build in the workspace), but
        // is no module.
        for name in ["crafting", "replicate"] {
            let copy = modules.join(name);
            assert!(!copy.join("meta.json").exists(), "{name} is no module");
            let original = repo_root().join("modules").join(name);
            for entry in std::fs::read_dir(&original).expect("the module") {
                let file = entry.expect("an entry").file_name();
                if file != "meta.json" {
                    assert!(copy.join(&file).exists(), "{name}/{file:?} copied");
                }
            }
        }
        let output = std::process::Command::new(std::env::var("CARGO").unwrap_or("cargo".into()))
            .args([
                "tree",
                "--offline",
                "--depth",
                "0",
                "--edges",
                "normal,build,dev",
            ])
            .arg("--manifest-path")
            .arg(scratch.path().join("Cargo.toml"))
            .output()
            .expect("cargo metadata runs");
        assert!(
            output.status.success(),
            "cargo metadata on the scratch workspace: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }

    /// Every module copied into a scratch workspace resolves there: no
    /// module depends (even for its tests) on a repository crate that pulls
    /// the repository's module API crates in beside the copies, which cargo
    /// refuses ("package collision in the lockfile") — found here in
    /// seconds, not by a server test that reloads a copied module.
    #[test]
    fn every_module_copied_into_a_scratch_workspace_resolves() {
        let scratch = tempfile::tempdir().expect("a temp dir");
        let modules = scratch.path().join("modules");
        write_module_workspace(&modules).expect("a scratch workspace");
        for entry in std::fs::read_dir(repo_root().join("modules")).expect("modules/") {
            let module = entry.expect("a modules/ entry").path();
            if module.join("meta.json").is_file()
                && let Some(name) = module.file_name()
            {
                copy_dir(&module, &modules.join(name)).expect("a module copy");
            }
        }
        let output = std::process::Command::new(std::env::var("CARGO").unwrap_or("cargo".into()))
            // `tree` resolves for this platform only, like a build.
            .args(["tree", "--edges", "normal,build,dev", "--depth", "1"])
            .arg("--manifest-path")
            .arg(scratch.path().join("Cargo.toml"))
            .output()
            .expect("cargo tree runs");
        assert!(
            output.status.success(),
            "cargo tree on the scratch workspace: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
}
