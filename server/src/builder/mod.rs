//! The module builder ("runtime-compiled Rust"): turns a module folder into a
//! loadable `.so`, running cargo only when the module's build inputs changed.
//!
//! Owns: the modules' cargo runs in a target dir it is given
//! ([`Builder::with_target_dir`]; by default `<build_dir>/target`; a server
//! started from its workspace without `--build-dir` gives the workspace's
//! own `target/`, so the dependencies the server's build compiled are
//! reused, and tests give build dirs of their own so a `cargo test` that
//! starts servers never waits on its own lock), `<build_dir>/artifacts/<hash>.so` (content-addressed: a
//! fresh artifact is reused untouched, and two folders with the same content
//! share one), and `<build_dir>/build.lock` (one build at a time across
//! processes). Does not own: loading (`core`), which modules build
//! together in one cargo run (`together.rs`: a module that is a member of a
//! cargo workspace is built with its peers, so the first start is one run
//! and a reload keeps the same dependency features), the workspace a module
//! outside the repository is given (`outside.rs`).
//!
//! Cancellation: cargo runs in a process group of its own (so a Ctrl-C on the
//! terminal reaches the server, not cargo), and [`BuildCancel::cancel`] kills
//! that whole group (cargo and its rustc children) at once; the build then
//! ends with [`BuildError::Cancelled`] and stores nothing. Once cancelled, a
//! builder builds nothing more: cancelling is how a stopping server ends its
//! builds. Cargo also gets SIGKILL should the server die without cancelling
//! (`PR_SET_PDEATHSIG`; the thread that spawns cargo waits for it, so that
//! thread never ends first).
//!
//! The build hash covers: the module's `Cargo.toml`, `build.rs`, `meta.json`
//! and everything under `src/`; the same files of every crate it depends on
//! by path, directly or through `workspace = true` (module API crates such as
//! `modules/voxelworld/api`, the interface, the formats), transitively; the
//! interface and ABI versions, the compiler version and the profile. So a
//! module is rebuilt when an API it uses changes, and only then. Dependency
//! versions from a registry (in `Cargo.lock`) are not hashed: touch the
//! module's `Cargo.toml` after changing them.

mod engine_manifest;
pub mod outside;
mod together;

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use buildat_interface::abi;
use buildat_interface::meta::ModuleMeta;
use sha2::{Digest, Sha256};

use crate::config::ModuleProfile;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    #[error("module {module}: cannot read its sources: {source}")]
    Sources {
        module: String,
        source: std::io::Error,
    },
    #[error("module {module}: cannot run cargo: {source}")]
    Spawn {
        module: String,
        source: std::io::Error,
    },
    #[error("module {module} failed to build:\n{output}")]
    Compile { module: String, output: String },
    #[error("module {module}: cargo produced no cdylib (is `crate-type = [\"cdylib\"]` set?)")]
    NoArtifact { module: String },
    #[error("module {module}: cannot store the artifact: {source}")]
    Store {
        module: String,
        source: std::io::Error,
    },
    /// The build was cancelled (the server is stopping); nothing was stored.
    #[error("module {module}: build cancelled")]
    Cancelled { module: String },
}

/// How often a build waiting for `build.lock` looks for a cancellation.
const LOCK_POLL: Duration = Duration::from_millis(100);

/// Cancels a [`Builder`]'s builds: the one running now (its cargo process
/// group is killed) and every later one. Cheap to clone.
#[derive(Clone, Default)]
pub struct BuildCancel {
    shared: Arc<CancelShared>,
}

#[derive(Default)]
struct CancelShared {
    state: Mutex<CancelState>,
    /// Notified whenever a build ends.
    ended: Condvar,
}

#[derive(Default)]
struct CancelState {
    cancelled: bool,
    /// Builds running now (waiting for the lock, or running cargo).
    active: usize,
    /// Process group ids of running cargo children (each cargo leads its own
    /// group). A pid leaves this list in the same critical section in which
    /// it is reaped, so a reused pid is never killed.
    groups: Vec<u32>,
}

impl BuildCancel {
    /// Cancels the running builds (killing their cargo process groups) and
    /// every build asked for afterwards. Returns at once.
    pub fn cancel(&self) {
        let mut state = self.lock();
        if !state.cancelled {
            state.cancelled = true;
            for &group in &state.groups {
                tracing::info!("cancelling the module build (cargo process group {group})");
                kill_group(group);
            }
        }
    }

    pub fn is_cancelled(&self) -> bool {
        self.lock().cancelled
    }

    /// Waits until no build runs (at most `timeout`); whether none does.
    pub fn wait_idle(&self, timeout: Duration) -> bool {
        let state = self.lock();
        let (state, _) = self
            .shared
            .ended
            .wait_timeout_while(state, timeout, |state| state.active > 0)
            .unwrap_or_else(|e| e.into_inner());
        state.active == 0
    }

    /// Counts a build as running until the guard is dropped.
    fn begin(&self) -> ActiveBuild<'_> {
        self.lock().active += 1;
        ActiveBuild(self)
    }

    fn lock(&self) -> MutexGuard<'_, CancelState> {
        self.shared.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A running build, for [`BuildCancel::wait_idle`].
struct ActiveBuild<'a>(&'a BuildCancel);

impl Drop for ActiveBuild<'_> {
    fn drop(&mut self) {
        self.0.lock().active -= 1;
        self.0.shared.ended.notify_all();
    }
}

/// Sends SIGKILL to the process group `group`.
fn kill_group(group: u32) {
    let Ok(group) = libc::pid_t::try_from(group) else {
        return;
    };
    // SAFETY: kill(2) takes plain integers; a negative pid names the group.
    if unsafe { libc::kill(-group, libc::SIGKILL) } != 0 {
        let error = std::io::Error::last_os_error();
        if error.raw_os_error() != Some(libc::ESRCH) {
            tracing::warn!("cannot kill the cargo process group {group}: {error}");
        }
    }
}

/// A built module library.
#[derive(Debug, Clone)]
pub struct Artifact {
    pub path: PathBuf,
    pub hash: String,
}

pub struct Builder {
    build_dir: PathBuf,
    /// Cargo's `--target-dir` for the modules' builds.
    target_dir: PathBuf,
    profile: ModuleProfile,
    cancel: BuildCancel,
    /// Where a module's peers are looked for (see `together.rs`); grows
    /// when a module path is added on a running server.
    module_paths: std::sync::RwLock<Vec<PathBuf>>,
}

/// What one cargo run left: the cdylib of each package it built (by
/// canonical manifest path), whether it succeeded, and its stderr.
struct CargoRun {
    artifacts: HashMap<PathBuf, PathBuf>,
    success: bool,
    output: String,
}

impl Builder {
    pub fn new(build_dir: PathBuf, profile: ModuleProfile) -> Self {
        Self {
            target_dir: build_dir.join("target"),
            build_dir,
            profile,
            cancel: BuildCancel::default(),
            module_paths: std::sync::RwLock::new(Vec::new()),
        }
    }

    /// Builds in `target_dir` instead of `<build_dir>/target`: the
    /// workspace's own, shared with the server's build.
    pub fn with_target_dir(mut self, target_dir: PathBuf) -> Self {
        self.target_dir = target_dir;
        self
    }

    /// Builds each module together with its peers in these module paths
    /// (one cargo run; see `together.rs`). Without, each module is built
    /// alone.
    pub fn with_module_paths(self, module_paths: Vec<PathBuf>) -> Self {
        *self.module_paths.write().unwrap_or_else(|e| e.into_inner()) = module_paths;
        self
    }

    /// Adds a module path (`modules add DIR` on a running server): its
    /// modules are peers from now on.
    pub fn add_module_path(&self, path: PathBuf) {
        let mut paths = self.module_paths.write().unwrap_or_else(|e| e.into_inner());
        if !paths.contains(&path) {
            paths.push(path);
        }
    }

    fn get_module_paths(&self) -> Vec<PathBuf> {
        self.module_paths
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The handle that cancels this builder's builds.
    pub fn canceller(&self) -> BuildCancel {
        self.cancel.clone()
    }

    /// The artifact for the module in `dir` if its inputs are unchanged
    /// since it was built; nothing is run or written.
    pub fn get_fresh(&self, dir: &Path, meta: &ModuleMeta) -> Option<Artifact> {
        let hash = self.input_hash(dir, meta).ok()?;
        let path = self.artifact_path(&hash);
        path.exists().then_some(Artifact { path, hash })
    }

    /// The module's artifact, building it first if its inputs changed.
    /// Cargo's progress and errors are logged with the module's name.
    /// After [`BuildCancel::cancel`], fails with [`BuildError::Cancelled`].
    pub fn build(&self, name: &str, dir: &Path, meta: &ModuleMeta) -> Result<Artifact, BuildError> {
        let cancelled = || BuildError::Cancelled {
            module: name.to_string(),
        };
        let _active = self.cancel.begin();
        if self.cancel.is_cancelled() {
            return Err(cancelled());
        }
        let hash = self
            .input_hash(dir, meta)
            .map_err(|source| BuildError::Sources {
                module: name.to_string(),
                source,
            })?;
        let path = self.artifact_path(&hash);
        if path.exists() {
            return Ok(Artifact { path, hash });
        }
        let store = |source| BuildError::Store {
            module: name.to_string(),
            source,
        };
        std::fs::create_dir_all(self.build_dir.join("artifacts")).map_err(store)?;
        let lock = std::fs::File::create(self.build_dir.join("build.lock")).map_err(store)?;
        let mut said = false;
        loop {
            match lock.try_lock() {
                Ok(()) => break,
                Err(std::fs::TryLockError::WouldBlock) => {}
                Err(std::fs::TryLockError::Error(error)) => return Err(store(error)),
            }
            if self.cancel.is_cancelled() {
                return Err(cancelled());
            }
            if !said {
                tracing::info!("module {name}: waiting for another build to finish (build.lock)");
                said = true;
            }
            std::thread::sleep(LOCK_POLL);
        }
        // Another process may have built the same inputs while we waited.
        if path.exists() {
            return Ok(Artifact { path, hash });
        }
        let built = match together::get_workspace(dir) {
            Some(workspace) if !self.get_module_paths().is_empty() => {
                match self.build_together(name, dir, meta, &workspace) {
                    Ok(built) => built,
                    // Cargo may refuse a run over several packages that it takes
                    // one by one (a scratch workspace of copies whose path
                    // dependencies collide in its lock file): built alone, as
                    // before, the module is never worse off.
                    Err(error @ (BuildError::Compile { .. } | BuildError::NoArtifact { .. })) => {
                        tracing::warn!(
                            "module {name}: the cargo run with its peers failed; building it alone"
                        );
                        tracing::debug!("{error}");
                        self.build_alone(name, dir, meta)?
                    }
                    Err(error) => return Err(error),
                }
            }
            _ => self.build_alone(name, dir, meta)?,
        };
        self.store(name, &built, &path)?;
        Ok(Artifact { path, hash })
    }

    /// Copies a cdylib cargo built to `path` (through a temporary file, so a
    /// half-written artifact is never taken for a fresh one).
    fn store(&self, name: &str, built: &Path, path: &Path) -> Result<(), BuildError> {
        let store = |source| BuildError::Store {
            module: name.to_string(),
            source,
        };
        let temporary = path.with_extension(format!("tmp{}", std::process::id()));
        std::fs::copy(built, &temporary).map_err(store)?;
        std::fs::rename(&temporary, path).map_err(store)
    }

    /// Builds the crate in `dir` by its own manifest; returns its cdylib.
    fn build_alone(
        &self,
        name: &str,
        dir: &Path,
        meta: &ModuleMeta,
    ) -> Result<PathBuf, BuildError> {
        let manifest = dir.join("Cargo.toml");
        let mut command = self.cargo_command(&manifest);
        if !meta.cargo_features.is_empty() {
            command.arg("--features").arg(meta.cargo_features.join(","));
        }
        tracing::info!(
            "building module {name} ({} profile)",
            self.profile.cargo_name()
        );
        let run = self.run_cargo(name, command)?;
        let wanted = manifest.canonicalize().unwrap_or(manifest);
        match run.artifacts.get(&wanted) {
            Some(built) => Ok(built.clone()),
            None if !run.success => Err(BuildError::Compile {
                module: name.to_string(),
                output: compile_errors(&run.output),
            }),
            None => Err(BuildError::NoArtifact {
                module: name.to_string(),
            }),
        }
    }

    /// Builds the member in `dir` together with its peers: the stale ones
    /// and those built together before (see `together.rs`), in one cargo
    /// run over `workspace`. Stores the peers' artifacts too, so loading
    /// them next builds nothing; returns the module's cdylib.
    fn build_together(
        &self,
        name: &str,
        dir: &Path,
        meta: &ModuleMeta,
        workspace: &together::Workspace,
    ) -> Result<PathBuf, BuildError> {
        let own_manifest = dir.join("Cargo.toml");
        let own_manifest = own_manifest.canonicalize().unwrap_or(own_manifest);
        let record_path = self
            .build_dir
            .join(format!("together-{}.json", self.profile.cargo_name()));
        let mut record = together::Together::read(&record_path);
        // (peer, where its artifact goes if it is stale)
        let mut selected: Vec<(together::Peer, Option<PathBuf>)> = Vec::new();
        for peer in together::find_peers(&self.get_module_paths(), workspace) {
            if peer.manifest == own_manifest {
                continue;
            }
            let stale = self
                .input_hash(&peer.dir, &peer.meta)
                .ok()
                .map(|hash| self.artifact_path(&hash))
                .filter(|path| !path.exists());
            if stale.is_some() || record.contains(&workspace.manifest, &peer.manifest) {
                selected.push((peer, stale));
            }
        }
        let own_package = workspace.get_member(dir).unwrap_or_default().to_string();
        let mut command = self.cargo_command(&workspace.manifest);
        command.arg("--keep-going").arg("-p").arg(&own_package);
        if workspace.has_package(outside::FEATURES_PACKAGE) {
            // The features the server's build asks (the engine's workspace:
            // `engine-features/`), or the engine's modules' run asks (an
            // outside workspace: `outside.rs`): what that compiled is reused.
            command.arg("-p").arg(outside::FEATURES_PACKAGE);
        }
        let mut features: Vec<String> = meta
            .cargo_features
            .iter()
            .map(|feature| format!("{own_package}/{feature}"))
            .collect();
        for (peer, _) in &selected {
            command.arg("-p").arg(&peer.package);
            features.extend(
                peer.meta
                    .cargo_features
                    .iter()
                    .map(|feature| format!("{}/{feature}", peer.package)),
            );
        }
        if !features.is_empty() {
            command.arg("--features").arg(features.join(","));
        }
        let stale: Vec<&str> = selected
            .iter()
            .filter(|(_, stale)| stale.is_some())
            .map(|(peer, _)| peer.name.as_str())
            .collect();
        if selected.is_empty() {
            tracing::info!(
                "building module {name} ({} profile)",
                self.profile.cargo_name()
            );
        } else {
            tracing::info!(
                "building module {name} ({} profile) in one cargo run with {} other modules of its workspace{}",
                self.profile.cargo_name(),
                selected.len(),
                if stale.is_empty() {
                    String::new()
                } else {
                    format!(
                        ", of which {} need building: {}",
                        stale.len(),
                        stale.join(", ")
                    )
                }
            );
        }
        let run = self.run_cargo(name, command)?;
        for (peer, stale) in &selected {
            match (run.artifacts.get(&peer.manifest), stale) {
                (Some(built), Some(path)) => {
                    if let Err(error) = self.store(&peer.name, built, path) {
                        tracing::warn!("{error}");
                    }
                }
                (Some(_), None) => {}
                (None, _) => tracing::warn!(
                    "module {} did not build in the same cargo run as {name}; loading it will say why",
                    peer.name
                ),
            }
        }
        let own = run.artifacts.get(&own_manifest).cloned();
        if own.is_some() {
            record.add(&workspace.manifest, &own_manifest);
        }
        for (peer, _) in &selected {
            if run.artifacts.contains_key(&peer.manifest) {
                record.add(&workspace.manifest, &peer.manifest);
            }
        }
        if let Err(error) = record.write(&record_path) {
            tracing::warn!("cannot write {}: {error}", record_path.display());
        }
        match own {
            Some(built) => Ok(built),
            None if !run.success => Err(BuildError::Compile {
                module: name.to_string(),
                output: compile_errors(&run.output),
            }),
            None => Err(BuildError::NoArtifact {
                module: name.to_string(),
            }),
        }
    }

    fn artifact_path(&self, hash: &str) -> PathBuf {
        self.build_dir.join("artifacts").join(format!("{hash}.so"))
    }

    fn input_hash(&self, dir: &Path, meta: &ModuleMeta) -> std::io::Result<String> {
        // A module outside any workspace gets the one the server supplies
        // first, so its `workspace = true` dependencies (the engine's
        // crates) are found, hashed and built (`outside.rs`).
        if let Err(error) = outside::prepare(dir, &self.target_dir, &self.get_module_paths()) {
            tracing::warn!(
                "{}: cannot write the workspace of the modules beside it: {error}",
                dir.display()
            );
        }
        let mut hasher = Sha256::new();
        for stamp in [
            abi::ABI_VERSION.to_string().as_str(),
            abi::INTERFACE_VERSION,
            abi::RUSTC_VERSION,
            self.profile.cargo_name(),
            &meta.cargo_features.join(","),
        ] {
            hasher.update(stamp.as_bytes());
            hasher.update([0]);
        }
        hasher.update(crate_hash(dir)?.as_bytes());
        for dependency in path_dependencies(dir)? {
            // Named by package name, not path, so two copies of the same
            // tree (a module path copied elsewhere) hash alike.
            hasher.update(package_name(&dependency).as_bytes());
            hasher.update([0]);
            hasher.update(crate_hash(&dependency)?.as_bytes());
        }
        let digest = hasher.finalize();
        Ok(digest[..10].iter().map(|b| format!("{b:02x}")).collect())
    }

    /// `cargo build --lib` of `manifest` into the modules' target dir, in
    /// a process group of its own that dies with the server.
    fn cargo_command(&self, manifest: &Path) -> Command {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut command = Command::new(cargo);
        command
            .arg("build")
            .arg("--lib")
            .arg("--manifest-path")
            .arg(manifest)
            .arg("--target-dir")
            .arg(&self.target_dir)
            .arg("--profile")
            .arg(self.profile.cargo_name())
            .arg("--message-format=json-render-diagnostics")
            .env_remove("CARGO_TARGET_DIR")
            .env_remove("CARGO_BUILD_TARGET_DIR")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // A group of its own, so cancelling kills rustc too, and a Ctrl-C
            // on the terminal is the server's to handle.
            .process_group(0);
        for (name, _) in std::env::vars_os() {
            if name.to_str().is_some_and(is_cargo_run_var) {
                command.env_remove(name);
            }
        }
        // SAFETY: only prctl(2), async-signal-safe, runs between fork and exec.
        unsafe {
            // Cargo dies with the server even when the server is killed
            // outright (SIGKILL, a crash) and cannot cancel it.
            command.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        command
    }

    /// Runs `command` (from [`Self::cargo_command`]), logging its progress
    /// under `name`, and collects the cdylibs it built.
    fn run_cargo(&self, name: &str, mut command: Command) -> Result<CargoRun, BuildError> {
        let started = std::time::Instant::now();
        let cancelled = || BuildError::Cancelled {
            module: name.to_string(),
        };
        let mut child = {
            // Spawned and registered in one critical section: a cancel either
            // comes first (and nothing runs) or sees the new group.
            let mut cancel = self.cancel.lock();
            if cancel.cancelled {
                return Err(cancelled());
            }
            let child = command.spawn().map_err(|source| BuildError::Spawn {
                module: name.to_string(),
                source,
            })?;
            cancel.groups.push(child.id());
            child
        };
        // Cargo's human output (progress and compiler errors) comes on stderr.
        let stderr = child.stderr.take();
        let module = name.to_string();
        let stderr_reader = std::thread::spawn(move || {
            let mut output = String::new();
            for line in stderr
                .map(BufReader::new)
                .into_iter()
                .flat_map(|r| r.lines())
            {
                let Ok(line) = line else { break };
                let trimmed = line.trim_start();
                // "Blocking": another cargo holds the target dir (the
                // workspace's, shared with a build someone started).
                if ["Compiling", "Finished", "Blocking"]
                    .iter()
                    .any(|word| trimmed.starts_with(word))
                {
                    tracing::info!("build {module}: {trimmed}");
                }
                output.push_str(&line);
                output.push('\n');
            }
            output
        });
        let mut artifacts = HashMap::new();
        if let Some(stdout) = child.stdout.take() {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some((manifest, path)) = get_cdylib(&line) {
                    artifacts.insert(manifest, path);
                }
            }
        }
        let status = self.reap(&mut child).map_err(|source| BuildError::Spawn {
            module: name.to_string(),
            source,
        })?;
        let output = stderr_reader.join().unwrap_or_default();
        if !status.success() && self.cancel.is_cancelled() {
            tracing::info!("module {name}: build cancelled");
            return Err(cancelled());
        }
        if status.success() {
            tracing::info!(
                "built module {name} in {:.1} s",
                started.elapsed().as_secs_f64()
            );
        }
        Ok(CargoRun {
            artifacts,
            success: status.success(),
            output,
        })
    }

    /// Waits for cargo to exit and forgets its process group in the same
    /// critical section as reaping it (see [`CancelState::groups`]).
    fn reap(&self, child: &mut Child) -> std::io::Result<ExitStatus> {
        let id = child.id();
        let forget = |cancel: &mut CancelState| cancel.groups.retain(|g| *g != id);
        loop {
            let mut cancel = self.cancel.lock();
            match child.try_wait() {
                Ok(Some(status)) => {
                    forget(&mut cancel);
                    return Ok(status);
                }
                Ok(None) => {}
                Err(error) => {
                    forget(&mut cancel);
                    return Err(error);
                }
            }
            drop(cancel);
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Whether `name` is one of the variables `cargo run` sets for the program
/// it runs (the server's package name, manifest dir, ...). Build scripts
/// such as ring's track some of them (`rerun-if-env-changed`), so a module
/// build that inherited them from a server started by `cargo run` would
/// compile those crates again, and once more for a server started
/// otherwise: the builder's cargo gets none of them.
fn is_cargo_run_var(name: &str) -> bool {
    name.starts_with("CARGO_PKG_")
        || matches!(
            name,
            "CARGO_MANIFEST_DIR"
                | "CARGO_MANIFEST_PATH"
                | "CARGO_MANIFEST_LINKS"
                | "CARGO_CRATE_NAME"
                | "CARGO_BIN_NAME"
                | "CARGO_PRIMARY_PACKAGE"
                | "CARGO_TARGET_TMPDIR"
                | "CARGO_RUSTC_CURRENT_DIR"
                | "OUT_DIR"
        )
}

/// The canonical manifest and `.so` named by a cargo `compiler-artifact`
/// message, if it names a cdylib.
fn get_cdylib(line: &str) -> Option<(PathBuf, PathBuf)> {
    let message: serde_json::Value = serde_json::from_str(line).ok()?;
    if message.get("reason")?.as_str()? != "compiler-artifact" {
        return None;
    }
    let from = PathBuf::from(message.get("manifest_path")?.as_str()?);
    let library = message
        .get("filenames")?
        .as_array()?
        .iter()
        .filter_map(|f| f.as_str())
        .find(|f| f.ends_with(".so"))
        .map(PathBuf::from)?;
    Some((from.canonicalize().unwrap_or(from), library))
}

/// Cargo's stderr without the progress lines, so the compiler's errors stand out.
fn compile_errors(output: &str) -> String {
    output
        .lines()
        .filter(|line| {
            let trimmed = line.trim_start();
            !(trimmed.starts_with("Compiling")
                || trimmed.starts_with("Blocking")
                || trimmed.starts_with("Updating")
                || trimmed.starts_with("Locking")
                || trimmed.starts_with("Downloaded")
                || trimmed.starts_with("Downloading"))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// When a file was last changed and its length: a change to either is a
/// change to the file.
type Stamp = (std::time::SystemTime, u64);

fn stamp(path: &Path) -> std::io::Result<Stamp> {
    stamp_of(&std::fs::metadata(path)?)
}

fn stamp_of(metadata: &std::fs::Metadata) -> std::io::Result<Stamp> {
    Ok((metadata.modified()?, metadata.len()))
}

/// Values worked out from files, by path, each with the stamps of the files
/// it came from: kept for the process, worked out again once one of those
/// files was added, removed or changed (a start asks for the engine's
/// crates and the workspace's manifest for every module; they were most of
/// the time a module took to load).
struct Stamped<V> {
    kept: Mutex<BTreeMap<PathBuf, (Vec<FileStamp>, V)>>,
}

/// A file a kept value came from, with its stamp then.
type FileStamp = (PathBuf, Stamp);

impl<V: Clone> Stamped<V> {
    const fn new() -> Self {
        Self {
            kept: Mutex::new(BTreeMap::new()),
        }
    }

    /// The value kept for `key` if `stamps` are still its files and their
    /// stamps (a file renamed keeps its stamp, not its path), else
    /// `make()`, kept. Stamps are taken before `make` reads the files,
    /// so a file changed meanwhile is newer than its kept stamp: the next
    /// call works it out again.
    fn get_or_make(
        &self,
        key: &Path,
        stamps: Vec<FileStamp>,
        make: impl FnOnce() -> std::io::Result<V>,
    ) -> std::io::Result<V> {
        let kept = || {
            self.kept
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        };
        if let Some((known, value)) = kept().get(key)
            && *known == stamps
        {
            return Ok(value.clone());
        }
        let value = make()?;
        kept().insert(key.to_path_buf(), (stamps, value.clone()));
        Ok(value)
    }
}

/// A crate's build inputs: its manifest, build script, meta.json and
/// everything under `src/`, sorted, each with its stamp (one `stat` a
/// file: a start asks this of the engine's crates for every module).
fn crate_files(dir: &Path) -> std::io::Result<Vec<FileStamp>> {
    let mut files = Vec::new();
    for name in ["Cargo.toml", "build.rs", "meta.json"] {
        let path = dir.join(name);
        if let Ok(metadata) = std::fs::metadata(&path)
            && metadata.is_file()
        {
            files.push((path, stamp_of(&metadata)?));
        }
    }
    collect_files(&dir.join("src"), &mut files)?;
    files.sort();
    Ok(files)
}

static CRATE_HASHES: Stamped<String> = Stamped::new();

/// A hash of one crate's build inputs (`crate_files`, by their paths
/// relative to `dir`), as the build hash covers them: also what a module
/// was built against, to tell later whether that crate (an API crate)
/// changed since.
pub fn crate_hash(dir: &Path) -> std::io::Result<String> {
    let files = crate_files(dir)?;
    CRATE_HASHES.get_or_make(dir, files.clone(), || {
        let mut hasher = Sha256::new();
        for (file, _) in &files {
            let relative = file.strip_prefix(dir).unwrap_or(file);
            hasher.update(relative.as_os_str().as_encoded_bytes());
            hasher.update([0]);
            hasher.update(std::fs::read(file)?);
            hasher.update([0]);
        }
        let digest = hasher.finalize();
        Ok(digest[..10].iter().map(|b| format!("{b:02x}")).collect())
    })
}

static MANIFESTS: Stamped<Arc<toml::Table>> = Stamped::new();

/// The parsed `Cargo.toml` in `dir` (shared: the workspace's is asked for
/// by every crate that names a workspace dependency).
fn read_manifest(dir: &Path) -> std::io::Result<Arc<toml::Table>> {
    let path = dir.join("Cargo.toml");
    MANIFESTS.get_or_make(&path, vec![(path.clone(), stamp(&path)?)], || {
        let text = std::fs::read_to_string(&path)?;
        let manifest = text.parse::<toml::Table>().map_err(|error| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("{}: {error}", path.display()),
            )
        })?;
        Ok(Arc::new(manifest))
    })
}

fn package_name(dir: &Path) -> String {
    read_manifest(dir)
        .ok()
        .and_then(|m| m.get("package")?.get("name")?.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// The folder of the workspace `dir` belongs to (the nearest ancestor whose
/// `Cargo.toml` has a `[workspace]`), with its manifest.
fn find_workspace(dir: &Path) -> Option<(PathBuf, Arc<toml::Table>)> {
    dir.ancestors().skip(1).find_map(|ancestor| {
        let manifest = read_manifest(ancestor).ok()?;
        manifest
            .contains_key("workspace")
            .then(|| (ancestor.to_path_buf(), manifest))
    })
}

/// Every crate the crate in `dir` depends on by path (directly, or as
/// `name.workspace = true` naming a workspace dependency with a path),
/// transitively, sorted by package name, without `dir` itself.
pub fn path_dependencies(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut found = std::collections::BTreeSet::new();
    let mut pending = vec![dir.to_path_buf()];
    let root = std::fs::canonicalize(dir)?;
    while let Some(current) = pending.pop() {
        let manifest = read_manifest(&current)?;
        let mut workspace = None;
        for section in ["dependencies", "build-dependencies"] {
            let Some(dependencies) = manifest.get(section).and_then(|d| d.as_table()) else {
                continue;
            };
            for (name, spec) in dependencies {
                let path = match spec.get("path").and_then(|p| p.as_str()) {
                    Some(path) => Some(current.join(path)),
                    None if spec.get("workspace").and_then(|w| w.as_bool()) == Some(true) => {
                        let Some((root, manifest)) = workspace
                            .get_or_insert_with(|| find_workspace(&current))
                            .as_ref()
                        else {
                            continue;
                        };
                        manifest
                            .get("workspace")
                            .and_then(|w| w.get("dependencies"))
                            .and_then(|d| d.get(name))
                            .and_then(|d| d.get("path"))
                            .and_then(|p| p.as_str())
                            .map(|p| root.join(p))
                    }
                    None => None,
                };
                let Some(path) = path.and_then(|p| std::fs::canonicalize(p).ok()) else {
                    continue;
                };
                if path != root && found.insert(path.clone()) {
                    pending.push(path);
                }
            }
        }
    }
    let mut named: Vec<(String, PathBuf)> = found
        .into_iter()
        .map(|path| (package_name(&path), path))
        .collect();
    named.sort();
    Ok(named.into_iter().map(|(_, path)| path).collect())
}

/// Every file under `dir` (none if it is not a folder), with its stamp.
/// A file's `stat` is relative to its folder's handle; a symlink is
/// followed, as a path would be.
fn collect_files(dir: &Path, files: &mut Vec<FileStamp>) -> std::io::Result<()> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::NotADirectory => return Ok(()),
        Err(error) => return Err(error),
    };
    for entry in entries {
        let entry = entry?;
        let path = entry.path();
        let metadata = if entry.file_type()?.is_symlink() {
            std::fs::metadata(&path)?
        } else {
            entry.metadata()?
        };
        if metadata.is_dir() {
            collect_files(&path, files)?;
        } else {
            files.push((path, stamp_of(&metadata)?));
        }
    }
    Ok(())
}

/// Runs cargo (the one running this build, else `cargo`) with `args` on
/// `manifest`, offline and quiet; its output, `None` if it fails to run or
/// fails (the callers then fall back to building without what it tells).
fn ask_cargo(args: &[&str], manifest: &Path) -> Option<Vec<u8>> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = std::process::Command::new(cargo)
        .args(args)
        .arg("--manifest-path")
        .arg(manifest)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    output.status.success().then_some(output.stdout)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(module: &str) -> Vec<String> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../modules")
            .join(module);
        path_dependencies(&dir)
            .expect("manifests read")
            .iter()
            .map(|d| package_name(d))
            .collect()
    }

    /// A crate's hash is kept while its files stay as they were, and
    /// follows any file changed (even to the same length), added or
    /// removed; so are manifests.
    #[test]
    fn a_kept_crate_hash_follows_every_change_to_its_files() {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path();
        std::fs::create_dir_all(root.join("src")).expect("src");
        std::fs::write(root.join("Cargo.toml"), "[package]\nname = \"a\"\n").expect("writes");
        std::fs::write(root.join("src/lib.rs"), "pub fn a() {}\n").expect("writes");
        let first = crate_hash(root).expect("hashes");
        assert_eq!(crate_hash(root).expect("hashes"), first, "kept");
        let mut last = first;
        let mut changed = |what: &str, change: &dyn Fn()| {
            // Stamps are modification times: let the clock move on.
            std::thread::sleep(std::time::Duration::from_millis(20));
            change();
            let hash = crate_hash(root).expect("hashes");
            assert_ne!(hash, last, "{what}: the hash did not change");
            last = hash;
        };
        changed("same length", &|| {
            std::fs::write(root.join("src/lib.rs"), "pub fn b() {}\n").expect("writes")
        });
        changed("added", &|| {
            std::fs::write(root.join("src/more.rs"), "").expect("writes")
        });
        changed("removed", &|| {
            std::fs::remove_file(root.join("src/more.rs")).expect("removes")
        });
        // A rename keeps the file's time and length: only its path tells.
        changed("renamed", &|| {
            std::fs::rename(root.join("src/lib.rs"), root.join("src/main.rs")).expect("renames")
        });
        assert_eq!(package_name(root), "a");
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(root.join("Cargo.toml"), "[package]\nname = \"b\"\n").expect("writes");
        assert_eq!(package_name(root), "b", "the manifest read again");
    }

    #[test]
    fn path_dependencies_follow_workspace_entries_transitively() {
        let game = names("main");
        for api in [
            "buildat-voxelworld-api",
            "buildat-network-api",
            "buildat-main-api",
            // Through its API crate: a changed packet rebuilds the module.
            "buildat-main-protocol",
            "buildat-voxelworld-protocol",
            "buildat-interface",
            "buildat-format",
            "buildat-voxel",
        ] {
            assert!(game.contains(&api.to_string()), "{api} in {game:?}");
        }
        let mut sorted = game.clone();
        sorted.sort();
        assert_eq!(game, sorted, "sorted by package name");
        let network = names("network");
        assert!(network.contains(&"buildat-network-api".to_string()));
        assert!(
            !network.contains(&"buildat-voxelworld-api".to_string()),
            "only what it uses: {network:?}"
        );
    }

    #[test]
    fn cargo_gets_none_of_the_variables_cargo_run_set_for_the_server() {
        // `cargo test` sets them for this process as `cargo run` does for
        // the server's.
        assert!(std::env::var_os("CARGO_PKG_NAME").is_some());
        let builder = Builder::new(PathBuf::from("/build"), ModuleProfile::Dev);
        let command = builder.cargo_command(Path::new("/modules/Cargo.toml"));
        let removed: Vec<&std::ffi::OsStr> = command
            .get_envs()
            .filter(|(_, value)| value.is_none())
            .map(|(name, _)| name)
            .collect();
        for name in ["CARGO_PKG_NAME", "CARGO_PKG_VERSION", "CARGO_MANIFEST_DIR"] {
            assert!(removed.contains(&name.as_ref()), "{name} in {removed:?}");
        }
        for kept in ["CARGO", "PATH", "HOME", "CC", "CARGO_HOME", "RUSTFLAGS"] {
            assert!(!is_cargo_run_var(kept), "{kept}");
        }
        assert!(is_cargo_run_var("CARGO_PKG_VERSION_MAJOR"));
        assert!(is_cargo_run_var("OUT_DIR"));
    }

    #[test]
    fn a_cancelled_builder_builds_nothing() {
        let dir = std::env::temp_dir().join(format!("builder-cancel-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("src")).expect("module dir");
        std::fs::write(dir.join("src/lib.rs"), "").expect("source");
        let builder = Builder::new(dir.join("build"), ModuleProfile::Dev);
        builder.canceller().cancel();
        let result = builder.build("gone", &dir, &ModuleMeta::default());
        assert!(
            matches!(result, Err(BuildError::Cancelled { ref module }) if module == "gone"),
            "{result:?}"
        );
        assert!(!dir.join("build").exists(), "nothing written");
        let _ = std::fs::remove_dir_all(dir);
    }
}
