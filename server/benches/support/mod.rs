//! Shared by the server's benchmarks: the repository, the release build dir
//! for benchmark modules, copying module folders and building them once,
//! and starting the real server binary over a temporary module path.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

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

/// The real server binary over a temporary module path.
pub struct Server {
    pub child: Child,
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
        let modules = module_path;
        let default_world = dir.path().join("world").display().to_string();
        let world: &[&str] = if args.contains(&"--world") {
            &[]
        } else {
            &["--world", &default_world]
        };
        let child = Command::new(env!("CARGO_BIN_EXE_buildat-server"))
            .args(world)
            .args([
                "--no-default-modules",
                "--modules",
                &modules.display().to_string(),
            ])
            .args(["--build-dir", &build_dir().display().to_string()])
            .args([
                "--listen",
                "127.0.0.1:0",
                "--no-watch",
                "--log-level",
                "warn",
            ])
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start server");
        let address = wait_for_address(&child);
        Self {
            child,
            address,
            _dir: dir,
        }
    }

    pub fn rss_kib(&self) -> u64 {
        std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default()
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    }
}

/// The server's listening port, from its open sockets (it logs nothing at warn).
pub fn wait_for_address(child: &Child) -> String {
    let deadline = Instant::now() + Duration::from_secs(300);
    while Instant::now() < deadline {
        let inodes: Vec<String> = std::fs::read_dir(format!("/proc/{}/fd", child.id()))
            .map(|entries| {
                entries
                    .flatten()
                    .filter_map(|e| std::fs::read_link(e.path()).ok())
                    .filter_map(|l| {
                        l.to_string_lossy()
                            .strip_prefix("socket:[")
                            .map(|s| s.trim_end_matches(']').to_string())
                    })
                    .collect()
            })
            .unwrap_or_default();
        let tcp = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
        for line in tcp.lines().skip(1) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            // local_address st ... inode; state 0A = LISTEN
            if fields.len() > 9 && fields[3] == "0A" && inodes.iter().any(|i| i == fields[9]) {
                let port = u16::from_str_radix(fields[1].rsplit(':').next().unwrap_or("0"), 16)
                    .unwrap_or(0);
                return format!("127.0.0.1:{port}");
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("the server did not listen");
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
