//! Library images: a unique copy of a module's artifact per load (so a reload
//! maps new code even though the dynamic linker caches by file), and the
//! check after `dlclose` that the old image really left the process.
//!
//! Owns: `<build_dir>/loaded/<pid>-<n>/` (one per module host in this
//! process), which holds its copies and is removed on exit; stale folders of
//! dead processes are removed on start.
//! Does not own: building artifacts (`builder.rs`) or loading them
//! (`instance.rs`).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Numbers the stores of this process, so two module hosts in one process
/// (tests, benchmarks) never write over each other's mapped images.
static NEXT_STORE: AtomicU64 = AtomicU64::new(1);

pub(crate) struct ImageStore {
    dir: PathBuf,
    next: AtomicU64,
}

impl ImageStore {
    pub fn new(build_dir: &Path) -> std::io::Result<Self> {
        let root = build_dir.join("loaded");
        std::fs::create_dir_all(&root)?;
        if let Ok(entries) = std::fs::read_dir(&root) {
            for entry in entries.flatten() {
                let folder = entry.file_name().to_string_lossy().into_owned();
                let pid = folder.split('-').next().and_then(|p| p.parse::<u32>().ok());
                let alive = pid.is_some_and(|pid| Path::new(&format!("/proc/{pid}")).exists());
                if !alive {
                    let _ = std::fs::remove_dir_all(entry.path());
                }
            }
        }
        let store = NEXT_STORE.fetch_add(1, Ordering::Relaxed);
        let dir = root.join(format!("{}-{store}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        Ok(Self {
            dir,
            next: AtomicU64::new(1),
        })
    }

    /// Copies `artifact` to a path no earlier load used.
    pub fn copy_unique(&self, artifact: &Path, module: &str) -> std::io::Result<PathBuf> {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let path = self.dir.join(format!("{module}-{n}.so"));
        std::fs::copy(artifact, &path)?;
        Ok(path)
    }

    /// Removes this process's copies (at exit).
    pub fn remove_all(&self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Whether `image` is still mapped into this process.
pub(crate) fn is_mapped(image: &Path) -> bool {
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else {
        return false;
    };
    let needle = image.to_string_lossy();
    maps.lines().any(|line| line.contains(needle.as_ref()))
}
