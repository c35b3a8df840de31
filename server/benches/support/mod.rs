//! Shared by the server's benchmarks: the repository, the release build dir
//! for benchmark modules, copying module folders and building them once.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

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
    std::fs::create_dir_all(to).expect("dir");
    for entry in std::fs::read_dir(from).expect("read").flatten() {
        let path = entry.path();
        if entry.file_name() == "target" {
            continue;
        }
        if path.is_dir() {
            copy_dir(&path, &to.join(entry.file_name()));
        } else {
            std::fs::copy(&path, to.join(entry.file_name())).expect("copy");
        }
    }
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

/// Builds `from` and copies it into `modules/<name>`.
pub fn install(modules: &Path, name: &str, from: &Path) {
    prebuild(from);
    copy_dir(from, &modules.join(name));
}
