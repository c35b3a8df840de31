//! The client's file cache: file contents stored by their SHA-256, under
//! `<cache dir>/files/<64 hex digits>`.
//!
//! Owns: hashing ([`sha256`], [`hex`]), the cache layout, verified reads (an
//! entry whose bytes do not hash to its name is deleted and reported as
//! [`Lookup::Corrupt`], so the caller fetches it again) and atomic writes (a
//! temporary file in the same folder, then a rename: a crash leaves either
//! no entry or a whole one), and its size: over [`Cache::max_bytes`] (by
//! default [`DEFAULT_MAX_CACHE_BYTES`]) the entries used longest ago are
//! deleted (use is the file's modification time, set on every hit), never
//! one this process stored or read, so a session's own files stay. Does not
//! own: which files a server announced or the protocol (`session`).

use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use buildat_client_file_protocol::ContentHash;
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

/// What the cache may hold before it evicts: 2 GiB.
pub const DEFAULT_MAX_CACHE_BYTES: u64 = 2 << 30;

/// Eviction stops at this share of the limit, so it is not done again at
/// the next store.
const EVICT_TO_PERCENT: u64 = 90;

/// Temporary files older than this are left over from a crash (younger
/// ones may be another client's store in progress).
const STALE_PARTIAL: Duration = Duration::from_secs(3600);

/// A folder of content-addressed files.
#[derive(Debug, Clone)]
pub struct Cache {
    files: PathBuf,
    max_bytes: u64,
    usage: Arc<Mutex<Usage>>,
}

/// What this process knows of the folder's use.
#[derive(Debug, Default)]
struct Usage {
    /// Entries this process stored or read: never evicted by it.
    used: HashSet<ContentHash>,
    /// Bytes in the folder as last counted, plus what was stored since;
    /// `None` before the first count.
    bytes: Option<u64>,
    /// The folder is counted again (and evicted from) only once `bytes`
    /// passes the limit and this: a session whose own files keep the cache
    /// over its limit does not list the folder at every store.
    count_again_at: u64,
}

/// One entry, as listed for eviction.
struct Entry {
    path: PathBuf,
    size: u64,
    last_used: SystemTime,
}

impl Cache {
    /// Opens (creating if needed) the cache under `dir`.
    pub fn open(dir: &Path) -> Result<Self, CacheError> {
        let files = dir.join("files");
        std::fs::create_dir_all(&files).map_err(|source| CacheError::CreateDir {
            path: files.clone(),
            source,
        })?;
        Ok(Self {
            files,
            max_bytes: DEFAULT_MAX_CACHE_BYTES,
            usage: Arc::default(),
        })
    }

    /// Keeps the cache under `max` bytes (0: no limit).
    pub fn with_max_bytes(mut self, max: u64) -> Self {
        self.max_bytes = max;
        self
    }

    /// The limit the cache is kept under (0: none).
    pub fn max_bytes(&self) -> u64 {
        self.max_bytes
    }

    fn usage(&self) -> std::sync::MutexGuard<'_, Usage> {
        self.usage.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn mark_used(&self, hash: &ContentHash) {
        self.usage().used.insert(*hash);
    }

    /// Counts an entry of `size` bytes just stored; lists the folder (and
    /// evicts) the first time, and when the count goes over the limit.
    fn count_stored(&self, size: u64) {
        if self.max_bytes == 0 {
            return;
        }
        let count_now = {
            let mut usage = self.usage();
            match usage.bytes {
                None => true,
                Some(bytes) => {
                    let bytes = bytes.saturating_add(size);
                    usage.bytes = Some(bytes);
                    bytes > self.max_bytes && bytes >= usage.count_again_at
                }
            }
        };
        if count_now {
            self.evict();
        }
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
            self.mark_used(hash);
            // Its last use, for eviction; a read-only cache just stays as it is.
            if let Ok(file) = std::fs::File::options().append(true).open(&path) {
                let _ = file.set_modified(SystemTime::now());
            }
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
        self.mark_used(hash);
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
        self.count_stored(bytes.len() as u64);
        Ok(())
    }

    /// Every entry (and temporary file left over from a crash) with its
    /// size and last use; what cannot be read is skipped.
    fn entries(&self) -> (Vec<Entry>, Vec<PathBuf>) {
        let mut entries = Vec::new();
        let mut stale = Vec::new();
        let Ok(listing) = std::fs::read_dir(&self.files) else {
            return (entries, stale);
        };
        let now = SystemTime::now();
        for item in listing.flatten() {
            let Ok(meta) = item.metadata() else { continue };
            let last_used = meta.modified().unwrap_or(now);
            let name = item.file_name();
            let name = name.to_string_lossy();
            if name.starts_with(".partial-") {
                if now.duration_since(last_used).unwrap_or_default() > STALE_PARTIAL {
                    stale.push(item.path());
                }
            } else if meta.is_file() && name.len() == 64 {
                entries.push(Entry {
                    path: item.path(),
                    size: meta.len(),
                    last_used,
                });
            }
        }
        (entries, stale)
    }

    /// Deletes the entries used longest ago while the cache is over its
    /// limit, down to 90 % of it, sparing what this process used. Answers
    /// the bytes deleted. Failures (another client deleted it first, a
    /// read-only folder) leave the entry: the cache is only bigger.
    pub fn evict(&self) -> u64 {
        if self.max_bytes == 0 {
            return 0;
        }
        let (mut entries, stale) = self.entries();
        for path in stale {
            let _ = std::fs::remove_file(path);
        }
        let mut total: u64 = entries.iter().map(|e| e.size).sum();
        let mut deleted = 0;
        if total > self.max_bytes {
            let target = self.max_bytes / 100 * EVICT_TO_PERCENT;
            let used: HashSet<String> = self.usage().used.iter().map(hex).collect();
            entries.sort_by_key(|e| e.last_used);
            for entry in entries {
                if total <= target {
                    break;
                }
                let spared = entry
                    .path
                    .file_name()
                    .is_some_and(|n| used.contains(n.to_string_lossy().as_ref()));
                if !spared && std::fs::remove_file(&entry.path).is_ok() {
                    total -= entry.size;
                    deleted += entry.size;
                }
            }
        }
        let mut usage = self.usage();
        usage.bytes = Some(total);
        usage.count_again_at = total.saturating_add(self.max_bytes / 10);
        deleted
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

    /// Stores `content` with a last use of `age_s` seconds ago, as another
    /// process did (so not one this cache spares).
    fn stored_earlier(dir: &Path, content: &[u8], age_s: u64) -> ContentHash {
        let earlier = Cache::open(dir).expect("open").with_max_bytes(0);
        let hash = sha256(content);
        earlier.store(&hash, content).expect("store");
        let file = std::fs::File::options()
            .append(true)
            .open(earlier.path_of(&hash))
            .expect("entry");
        file.set_modified(SystemTime::now() - Duration::from_secs(age_s))
            .expect("age it");
        hash
    }

    #[test]
    fn over_its_limit_the_cache_drops_what_was_used_longest_ago() {
        let dir = tempfile::tempdir().expect("temp dir");
        let oldest = stored_earlier(dir.path(), &[1; 400], 300);
        let old = stored_earlier(dir.path(), &[2; 400], 200);
        let recent = stored_earlier(dir.path(), &[3; 400], 100);
        let cache = Cache::open(dir.path()).expect("open").with_max_bytes(1000);
        // Reading `oldest` makes it the most recently used, and this
        // session's: it stays.
        assert!(matches!(cache.load(&oldest), Ok(Lookup::Hit(_))));
        let new = sha256(&[4; 400]);
        cache.store(&new, &[4; 400]).expect("store");
        let present = |h: &ContentHash| cache.path_of(h).exists();
        assert!(present(&new), "what was just stored stays");
        assert!(present(&oldest), "what this session read stays");
        assert!(!present(&old), "the entry used longest ago went");
        assert!(!present(&recent), "down to 90 % of the limit: 800 bytes");
        let total: u64 = std::fs::read_dir(cache.files_dir())
            .expect("list")
            .flatten()
            .map(|e| e.metadata().expect("meta").len())
            .sum();
        assert!(total <= 1000, "{total} bytes");
    }

    #[test]
    fn a_session_s_own_files_outlive_a_limit_too_small_for_them() {
        let dir = tempfile::tempdir().expect("temp dir");
        let cache = Cache::open(dir.path()).expect("open").with_max_bytes(100);
        let hashes: Vec<ContentHash> = (0..3u8)
            .map(|i| {
                let content = [i; 80];
                let hash = sha256(&content);
                cache.store(&hash, &content).expect("store");
                hash
            })
            .collect();
        for hash in &hashes {
            assert!(matches!(cache.load(hash), Ok(Lookup::Hit(_))));
        }
        // The next session may evict them.
        let next = Cache::open(dir.path()).expect("open").with_max_bytes(100);
        next.store(&sha256(b"x"), b"x").expect("store");
        assert!(next.evict() == 0, "nothing left over the limit");
        let left = hashes.iter().filter(|h| next.path_of(h).exists()).count();
        assert!(left <= 1, "{left} of the old entries left");
    }

    #[test]
    fn a_temporary_file_left_by_a_crash_is_removed_later() {
        let dir = tempfile::tempdir().expect("temp dir");
        let cache = Cache::open(dir.path())
            .expect("open")
            .with_max_bytes(1 << 20);
        let leftover = cache.files_dir().join(".partial-crashed");
        let fresh = cache.files_dir().join(".partial-in-progress");
        for path in [&leftover, &fresh] {
            std::fs::write(path, b"half").expect("write");
        }
        std::fs::File::options()
            .append(true)
            .open(&leftover)
            .expect("open")
            .set_modified(SystemTime::now() - STALE_PARTIAL * 2)
            .expect("age it");
        cache.store(&sha256(b"y"), b"y").expect("store");
        assert!(!leftover.exists(), "an old temporary file goes");
        assert!(fresh.exists(), "another client's store in progress stays");
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
