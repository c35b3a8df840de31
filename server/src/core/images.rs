//! Library images: a unique path per load of a module's artifact, and the
//! check after `dlclose` that the old image really left the process.
//!
//! The dynamic linker takes a file it has mapped already (same device and
//! inode) for the library it holds, statics and all. So an artifact no image
//! of this process maps is linked under a new name (a hard link: no bytes
//! copied, and the artifact is never written in place: the builder renames
//! new ones over); one still mapped (a reload of unchanged code whose old
//! image did not leave) is copied, so the load maps new code.
//!
//! Only images placed here are loaded, so an artifact never placed in this
//! process (every one on a first start) cannot be mapped by it: it is
//! linked without reading `/proc/self/maps`.
//!
//! Owns: `<build_dir>/loaded/<pid>-<n>/` (one per module host in this
//! process), which holds its links and copies and is removed on exit; stale
//! folders of dead processes are removed on start.
//! Does not own: building artifacts (`builder.rs`) or loading them
//! (`instance.rs`).

use std::collections::BTreeSet;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

/// The artifacts (device, inode) any store of this process placed: only
/// those can be mapped by one of its images.
static PLACED: Mutex<BTreeSet<(u64, u64)>> = Mutex::new(BTreeSet::new());

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

    /// `artifact` under a path no earlier load used: a hard link when no
    /// image of this process maps it, else (or where linking fails) a copy.
    pub fn place_unique(&self, artifact: &Path, module: &str) -> std::io::Result<PathBuf> {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let path = self.dir.join(format!("{module}-{n}.so"));
        let file = std::fs::metadata(artifact)?;
        let placed_before = !PLACED
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert((file.dev(), file.ino()));
        let mapped = placed_before && is_file_mapped(file.dev(), file.ino());
        if mapped || std::fs::hard_link(artifact, &path).is_err() {
            std::fs::copy(artifact, &path)?;
        }
        Ok(path)
    }

    /// Removes this process's copies (at exit).
    pub fn remove_all(&self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Whether `image` is still mapped into this process.
pub(crate) fn is_mapped(image: &Path) -> bool {
    let needle = image.to_string_lossy();
    any_mapping(false, |line| line.contains(needle.as_ref()))
}

/// Whether the file of device `dev` and inode `ino` is mapped into this
/// process, under any name. Unreadable maps count as mapped (a copy is
/// always safe).
fn is_file_mapped(dev: u64, ino: u64) -> bool {
    // glibc's major/minor split of a dev_t, as the kernel prints it in maps.
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    let device = format!("{major:02x}:{minor:02x}");
    let inode = ino.to_string();
    any_mapping(true, |line| {
        // address perms offset dev inode [path]
        let mut fields = line.split_ascii_whitespace().skip(3);
        fields.next() == Some(device.as_str()) && fields.next() == Some(inode.as_str())
    })
}

/// Whether a line of `/proc/self/maps` is `matching`; `unreadable` when the
/// maps cannot be read.
fn any_mapping(unreadable: bool, matching: impl Fn(&str) -> bool) -> bool {
    match std::fs::read_to_string("/proc/self/maps") {
        Ok(maps) => maps.lines().any(matching),
        Err(_) => unreadable,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A library this process maps (its own executable) is found by device
    /// and inode; a file that is only on disk is not.
    #[test]
    fn a_mapped_file_is_found_by_device_and_inode() {
        let exe = std::fs::metadata("/proc/self/exe").expect("own executable");
        assert!(is_file_mapped(exe.dev(), exe.ino()));
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("not-mapped.so");
        std::fs::write(&path, b"bytes").expect("writes");
        let file = std::fs::metadata(&path).expect("metadata");
        assert!(!is_file_mapped(file.dev(), file.ino()));
    }

    /// A load of an artifact no image maps links it (same inode, no bytes
    /// copied), under a new path each time; one mapped is copied.
    #[test]
    fn an_artifact_is_linked_unless_an_image_of_it_is_mapped() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = ImageStore::new(dir.path()).expect("store");
        let artifact = dir.path().join("artifact.so");
        std::fs::write(&artifact, b"library").expect("writes");
        let first = store.place_unique(&artifact, "m").expect("placed");
        let ino = |p: &Path| std::fs::metadata(p).expect("metadata").ino();
        assert_eq!(ino(&first), ino(&artifact), "linked, not copied");
        let second = store.place_unique(&artifact, "m").expect("placed");
        assert_ne!(first, second);
        assert_eq!(ino(&second), ino(&artifact), "still not mapped: linked");

        // Mapped, as the dynamic linker maps a library: copied.
        let file = std::fs::File::open(&artifact).expect("opens");
        // SAFETY: a fresh private read-only mapping of a 7-byte file,
        // unmapped below; nothing reads through it.
        let mapping = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                7,
                libc::PROT_READ,
                libc::MAP_PRIVATE,
                std::os::fd::AsRawFd::as_raw_fd(&file),
                0,
            )
        };
        assert_ne!(mapping, libc::MAP_FAILED, "maps");
        let third = store.place_unique(&artifact, "m").expect("placed");
        // SAFETY: the mapping made above, of that length.
        unsafe { libc::munmap(mapping, 7) };
        assert_ne!(ino(&third), ino(&artifact), "mapped: copied");
        assert_eq!(std::fs::read(&third).expect("reads"), b"library");
    }
}
