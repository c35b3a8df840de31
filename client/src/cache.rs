//! The client's file cache: file contents stored by their SHA-256, under
//! `<cache dir>/files/<64 hex digits>`.
//!
//! Owns: hashing ([`sha256`], [`hex`]), the cache layout, verified reads (an
//! entry whose bytes do not hash to its name is deleted and reported as
//! [`Lookup::Corrupt`], so the caller fetches it again) and atomic writes (a
//! temporary file in the same folder, then a rename: a crash leaves either
//! no entry or a whole one). Does not own: which files a server announced
//! or the protocol (`session`), nor eviction (the cache only grows; delete
//! the folder to empty it).

use std::io::Write;
use std::path::{Path, PathBuf};

use buildat_client_file_api::ContentHash;
use sha2::{Digest, Sha256};
use thiserror::Error;

/// SHA-256 of `bytes`.
pub fn sha256(bytes: &[u8]) -> ContentHash {
    Sha256::digest(bytes).into()
}

/// Lower-case hex of a hash (64 characters).
pub fn hex(hash: &ContentHash) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(64);
    for byte in hash {
        let _ = write!(out, "{byte:02x}");
    }
    out
}

/// Cache I/O errors (a missing or corrupt entry is not an error: see
/// [`Lookup`]).
#[derive(Debug, Error)]
pub enum CacheError {
    #[error("cannot create the cache folder {path}: {source}")]
    CreateDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot read cache entry {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write cache entry {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("refusing to cache content whose SHA-256 is {actual}, not the expected {expected}")]
    HashMismatch { expected: String, actual: String },
}

/// The result of looking a hash up.
#[derive(Debug, PartialEq, Eq)]
pub enum Lookup {
    /// The entry exists and its bytes hash to its name.
    Hit(Vec<u8>),
    /// No entry.
    Miss,
    /// The entry existed but its bytes did not match; it was deleted.
    Corrupt,
}

/// A folder of content-addressed files.
#[derive(Debug, Clone)]
pub struct Cache {
    files: PathBuf,
}

impl Cache {
    /// Opens (creating if needed) the cache under `dir`.
    pub fn open(dir: &Path) -> Result<Self, CacheError> {
        let files = dir.join("files");
        std::fs::create_dir_all(&files).map_err(|source| CacheError::CreateDir {
            path: files.clone(),
            source,
        })?;
        Ok(Self { files })
    }

    /// The folder holding the entries.
    pub fn files_dir(&self) -> &Path {
        &self.files
    }

    /// Where the entry of `hash` lives.
    pub fn path_of(&self, hash: &ContentHash) -> PathBuf {
        self.files.join(hex(hash))
    }

    /// Reads and verifies the entry of `hash`. A corrupt entry is deleted.
    pub fn load(&self, hash: &ContentHash) -> Result<Lookup, CacheError> {
        let path = self.path_of(hash);
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Lookup::Miss),
            Err(source) => return Err(CacheError::Read { path, source }),
        };
        if sha256(&bytes) == *hash {
            return Ok(Lookup::Hit(bytes));
        }
        // Deleting may fail (e.g. a read-only cache); the next store
        // replaces it atomically anyway.
        let _ = std::fs::remove_file(&path);
        Ok(Lookup::Corrupt)
    }

    /// Stores `bytes`, which must hash to `hash`; an existing valid entry
    /// is kept. Atomic: a temporary file in the same folder, then a rename.
    pub fn store(&self, hash: &ContentHash, bytes: &[u8]) -> Result<(), CacheError> {
        let actual = sha256(bytes);
        if actual != *hash {
            return Err(CacheError::HashMismatch {
                expected: hex(hash),
                actual: hex(&actual),
            });
        }
        let path = self.path_of(hash);
        if let Ok(Lookup::Hit(_)) = self.load(hash) {
            return Ok(());
        }
        let write_error = |source| CacheError::Write {
            path: path.clone(),
            source,
        };
        let mut temp = tempfile::Builder::new()
            .prefix(".partial-")
            .tempfile_in(&self.files)
            .map_err(write_error)?;
        temp.write_all(bytes).map_err(write_error)?;
        temp.as_file().sync_all().map_err(write_error)?;
        temp.persist(&path).map_err(|e| write_error(e.error))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_and_hash_of_known_input() {
        assert_eq!(
            hex(&sha256(b"abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn store_then_load_round_trips() {
        let dir = tempfile::tempdir().expect("temp dir");
        let cache = Cache::open(dir.path()).expect("open");
        let hash = sha256(b"hello");
        assert_eq!(cache.load(&hash).expect("load"), Lookup::Miss);
        cache.store(&hash, b"hello").expect("store");
        assert_eq!(
            cache.load(&hash).expect("load"),
            Lookup::Hit(b"hello".to_vec())
        );
        assert!(cache.path_of(&hash).ends_with(hex(&hash)));
        // No temporary files are left behind.
        let names: Vec<_> = std::fs::read_dir(cache.files_dir())
            .expect("list")
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(names, [std::ffi::OsString::from(hex(&hash))]);
        // Storing again keeps the entry.
        cache.store(&hash, b"hello").expect("store again");
        assert_eq!(
            cache.load(&hash).expect("load"),
            Lookup::Hit(b"hello".to_vec())
        );
    }

    #[test]
    fn store_refuses_content_that_does_not_match_the_hash() {
        let dir = tempfile::tempdir().expect("temp dir");
        let cache = Cache::open(dir.path()).expect("open");
        let hash = sha256(b"hello");
        assert!(matches!(
            cache.store(&hash, b"jello"),
            Err(CacheError::HashMismatch { .. })
        ));
        assert_eq!(cache.load(&hash).expect("load"), Lookup::Miss);
    }

    #[test]
    fn a_corrupt_entry_is_detected_and_deleted() {
        let dir = tempfile::tempdir().expect("temp dir");
        let cache = Cache::open(dir.path()).expect("open");
        let hash = sha256(b"precious");
        cache.store(&hash, b"precious").expect("store");
        std::fs::write(cache.path_of(&hash), b"prexious").expect("corrupt");
        assert_eq!(cache.load(&hash).expect("load"), Lookup::Corrupt);
        assert!(!cache.path_of(&hash).exists(), "the bad entry is deleted");
        assert_eq!(cache.load(&hash).expect("load"), Lookup::Miss);
        // A truncated entry too.
        cache.store(&hash, b"precious").expect("store");
        std::fs::write(cache.path_of(&hash), b"").expect("truncate");
        assert_eq!(cache.load(&hash).expect("load"), Lookup::Corrupt);
        // And a fresh store repairs it.
        cache.store(&hash, b"precious").expect("store");
        assert_eq!(
            cache.load(&hash).expect("load"),
            Lookup::Hit(b"precious".to_vec())
        );
    }
}
