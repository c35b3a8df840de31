//! Shared by the server's benchmarks: the repository, the release build dir
//! for benchmark modules, copying module folders and building them once,
//! and starting the real server binary over a temporary module path.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use buildat_interface::meta::ModuleMeta;
use buildat_server::builder::Builder;
use buildat_server::config::ModuleProfile;

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Release builds of the modules benchmarks load (content-addressed, so
/// each is built once).
pub fn build_dir() -> PathBuf {
    repo().join("target").join("bench-modules")
}

pub fn copy_dir(from: &Path, to: &Path) {
    buildat_harness::layout::copy_dir(from, to).expect("copy a module folder");
}

/// Builds the module folder `dir` (release) unless its artifact is fresh.
pub fn prebuild(dir: &Path) {
    let meta = ModuleMeta::read(dir).expect("meta").meta;
    let name = dir
        .file_name()
        .expect("name")
        .to_string_lossy()
        .into_owned();
    Builder::new(build_dir(), ModuleProfile::Release)
        .build(&name, dir, &meta)
        .expect("build");
}

/// Builds `from` and copies it into `modules/<name>` (a module path in a
/// workspace, so the copy finds the artifact by hash).
pub fn install(modules: &Path, name: &str, from: &Path) {
    prebuild(from);
    buildat_harness::layout::write_module_workspace(modules).expect("module workspace");
    copy_dir(from, &modules.join(name));
}

/// The real server binary over a temporary module path (through
/// `buildat-harness`'s driver; logging at warn, so its address is read from
/// `/proc`). Killed on drop; what it warned about is printed then.
pub struct Server {
    process: buildat_harness::server::Server,
    pub address: String,
    _dir: tempfile::TempDir,
}

impl Server {
    /// Builds and installs `modules` (name, source folder), lets `prepare`
    /// add to the module path, and starts the server with `args` added.
    pub fn start(modules: &[(&str, PathBuf)], prepare: impl FnOnce(&Path), args: &[&str]) -> Self {
        let dir = tempfile::tempdir().expect("temp");
        let module_path = dir.path().join("modules");
        for (name, from) in modules {
            install(&module_path, name, from);
        }
        prepare(&module_path);
        let mut all: Vec<String> = Vec::new();
        if !args.contains(&"--world") {
            all.extend([
                "--world".into(),
                dir.path().join("world").display().to_string(),
            ]);
        }
        all.extend([
            "--no-default-modules".into(),
            "--modules".into(),
            module_path.display().to_string(),
            "--build-dir".into(),
            build_dir().display().to_string(),
            "--listen".into(),
            "127.0.0.1:0".into(),
            "--no-watch".into(),
            "--log-level".into(),
            "warn".into(),
        ]);
        all.extend(args.iter().map(|a| a.to_string()));
        let mut process = buildat_harness::server::Server::spawn(
            env!("CARGO_BIN_EXE_buildat-server"),
            &all,
            Stdio::piped(),
        )
        .expect("start server");
        let address = process
            .wait_listening_socket(Duration::from_secs(300))
            .unwrap_or_else(|| panic!("the server did not listen:\n{}", process.output()));
        Self {
            process,
            address,
            _dir: dir,
        }
    }

    pub fn pid(&self) -> u32 {
        self.process.pid()
    }

    pub fn rss_kib(&self) -> u64 {
        self.process.sample().map_or(0, |sample| sample.rss_kib)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let problems = self.process.problems_since(0);
        if !problems.is_empty() {
            eprintln!("the server warned:\n{}", problems.join("\n"));
        }
    }
}
