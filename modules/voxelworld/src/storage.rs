//! World storage: the trait the world talks to, choosing a backend, and the
//! SQLite backend.
//!
//! Owns: [`WorldStorage`] (what every backend keeps alike: the fixed section
//! size, node ids reserved durably and never reused, a section saved whole
//! in one transaction, upserts keyed by section position, a schema version
//! refused when newer than the code), [`StorageLocation`] (the `storage`
//! setting: `sqlite`, `sqlite:PATH` or a `postgresql://` URL, and opening
//! it), and the SQLite backend: the database file (`<world>/world.sqlite`,
//! WAL; made 0600 before SQLite opens it, its `-wal` and `-shm` follow),
//! its schema and schema version, and saving a section in one
//! transaction (a crash leaves it either old or new). Also modules' values
//! kept with the world ([`StoredValue`]: accounts, bans), written in one
//! transaction per call, or in one transaction with the sections an edit
//! touched ([`WorldStorage::save_together`]).
//! Does not own: what node data means (`world.rs`); the PostgreSQL backend
//! (`storage/postgresql.rs`); copying a world between backends (`migrate.rs`).
//!
//! Schema (version 2; version 1 had no `module_value`, and is upgraded by
//! adding it):
//! ```sql
//! meta(key TEXT PRIMARY KEY, value INTEGER)     -- schema_version, next_node_id
//! section_size(w, h, d)                           -- one row, fixed at creation
//! section(sx, sy, sz, save_enabled, generated)    -- PRIMARY KEY (sx, sy, sz)
//! node(id INTEGER PRIMARY KEY, sx, sy, sz, data BLOB)
//! module_value(space, key, data BLOB)             -- PRIMARY KEY (space, key)
//! rollback_block(t0, t1, ax, ay, az, data BLOB)   -- the rollback log (`rollback.rs`),
//!                                                 -- made when missing, no version bump
//! ```

pub mod postgresql;

use std::ops::Range;
use std::path::{Path, PathBuf};

use buildat_voxel::geometry::{Pos, SectionSize};
pub use buildat_voxelworld_api::{ListValues, StoredValue, ValueWrite};
use rusqlite::{Connection, OptionalExtension, params};

/// The schema this code writes.
pub const SCHEMA_VERSION: i64 = 2;
/// The oldest schema this code upgrades (1: before modules' values).
const OLDEST_SCHEMA_VERSION: i64 = 1;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StorageError {
    #[error("world database: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// A PostgreSQL query failed; `url` is shown without its password.
    #[error("world database {url}: {}", postgresql::message(source))]
    Postgres {
        url: String,
        source: ::postgres::Error,
    },
    /// No connection could be made; `url` is shown without its password.
    #[error(
        "cannot connect to the world database {url}: {} (is PostgreSQL running there, and is the URL right?)",
        postgresql::message(source)
    )]
    Unreachable {
        url: String,
        source: ::postgres::Error,
    },
    /// The `storage` setting names nothing this code can open.
    #[error("world storage {url}: {reason}")]
    BadUrl { url: String, reason: String },
    #[error(
        "world database schema version {found} is newer than this server's ({SCHEMA_VERSION}): use a newer server or another world"
    )]
    NewerSchema { found: i64 },
    #[error("world database is damaged: {0}")]
    Damaged(String),
    /// A storage (a test's wrapper) that keeps no rollback log.
    #[error("this world storage keeps no rollback log")]
    NoLog,
}

/// A block of the rollback log as stored: the edits of one area
/// ([`crate::rollback::AREA`] voxels a side, `area` its index) from `t0` to
/// `t1` (milliseconds since the Unix epoch), packed (`rollback.rs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogBlock {
    pub t0: i64,
    pub t1: i64,
    pub area: [i32; 3],
    pub data: Vec<u8>,
}

/// A section as stored: flags and its nodes' (id, data).
#[derive(Debug, Clone, PartialEq)]
pub struct StoredSection {
    pub pos: Pos,
    pub save_enabled: bool,
    pub generated: bool,
    pub nodes: Vec<(u64, Vec<u8>)>,
}

/// How much a storage holds (migration's verification).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StorageCounts {
    pub sections: u64,
    pub nodes: u64,
    /// Modules' values.
    pub values: u64,
}

pub trait WorldStorage: Send {
    /// The world's section size (fixed when the world was created).
    fn section_size(&self) -> SectionSize;
    /// Where it is, for messages (a URL without its password, or a path).
    fn location(&self) -> String;
    fn load_section(&mut self, pos: Pos) -> Result<Option<StoredSection>, StorageError>;
    /// Replaces the section and all its nodes, in one transaction.
    fn save_section(&mut self, section: &StoredSection) -> Result<(), StorageError>;
    /// Reserves `count` node ids, durably, before any is handed out: ids are
    /// never reused in the world's lifetime, crashes included.
    fn reserve_node_ids(&mut self, count: u64) -> Result<Range<u64>, StorageError>;
    fn has_generated_section(&mut self, pos: Pos) -> Result<bool, StorageError>;
    /// Moves a section that does not decode out of the world (its nodes
    /// into the `quarantine` table, with why), in one transaction: it is
    /// generated again, and the damaged rows are kept for the operator.
    fn quarantine_section(&mut self, pos: Pos, reason: &str) -> Result<(), StorageError>;
    /// Every stored section's position (migration).
    fn section_positions(&mut self) -> Result<Vec<Pos>, StorageError>;
    /// How many sections and nodes are stored.
    fn counts(&mut self) -> Result<StorageCounts, StorageError>;
    /// The first id the next reservation hands out.
    fn next_node_id(&mut self) -> Result<u64, StorageError>;
    /// Makes the next reservation start at `next` or later, durably (a
    /// migrated world never hands out an id its source did).
    fn raise_next_node_id(&mut self, next: u64) -> Result<(), StorageError>;
    /// A read-only view of the world as stored at this moment, on a
    /// connection of its own, for another thread to read while this one
    /// goes on writing (a backup).
    fn snapshot(&mut self) -> Result<Box<dyn StorageSnapshot>, StorageError>;
    /// Sets the section size of a storage that holds no section yet (a
    /// world restored from a backup takes the backup's size).
    fn set_empty_section_size(&mut self, size: SectionSize) -> Result<(), StorageError>;
    /// A module's value, if there is one.
    fn get_value(&mut self, space: &str, key: &str) -> Result<Option<Vec<u8>>, StorageError>;
    /// Applies `writes` in one transaction: all, or none when a write
    /// `only_if_absent` finds its key taken; whether they were applied.
    fn put_values(&mut self, writes: &[ValueWrite]) -> Result<bool, StorageError>;
    /// Writes `sections` (each whole, as [`WorldStorage::save_section`])
    /// and applies `writes` (as [`WorldStorage::put_values`]) in ONE
    /// transaction, durably before it returns: all of it, or nothing when
    /// a write `only_if_absent` finds its key taken (`Ok(false)`) or
    /// anything fails (the error). What `EditTogether` stores: a world
    /// edit and the values that go with it, together or not at all.
    fn save_together(
        &mut self,
        sections: &[StoredSection],
        writes: &[ValueWrite],
    ) -> Result<bool, StorageError>;
    /// Values of one space by key prefix, in bytewise key order (paged by
    /// `after`, at most `limit`).
    fn list_values(&mut self, query: &ListValues) -> Result<Vec<StoredValue>, StorageError>;
    /// Every module's value (migration).
    fn all_values(&mut self) -> Result<Vec<StoredValue>, StorageError>;
    /// Appends blocks of the rollback log, in one transaction.
    fn append_log(&mut self, _blocks: &[LogBlock]) -> Result<(), StorageError> {
        Err(StorageError::NoLog)
    }
    /// The rollback log's blocks that end at `since` or later, of the
    /// areas from `areas[0]` to `areas[1]` (inclusive), oldest first.
    fn read_log(
        &mut self,
        _since: i64,
        _areas: [[i32; 3]; 2],
    ) -> Result<Vec<LogBlock>, StorageError> {
        Err(StorageError::NoLog)
    }
    /// Deletes the rollback log's blocks that ended before `before`
    /// (whole blocks); how many.
    fn prune_log(&mut self, _before: i64) -> Result<u64, StorageError> {
        Err(StorageError::NoLog)
    }
    /// Deletes the rollback log's oldest blocks (by end) until their
    /// blobs hold at most `max_bytes` together; how many.
    fn prune_log_to(&mut self, _max_bytes: u64) -> Result<u64, StorageError> {
        Err(StorageError::NoLog)
    }
    /// The rollback log's blocks in storage order, `skip` blocks in, at
    /// most `limit` (a migration copies the log page by page).
    fn log_page(&mut self, _skip: u64, _limit: usize) -> Result<Vec<LogBlock>, StorageError> {
        Err(StorageError::NoLog)
    }
}

/// How many of the rollback log's blocks a copy (backup, restore,
/// migrate) reads or writes at once.
pub const LOG_PAGE: usize = 256;

/// Every page of the rollback log `page` reads (`page(skip, limit)`, as
/// [`WorldStorage::log_page`]), handed to `each` in order; a storage
/// that keeps no log has none. How many blocks there were.
pub fn each_log_page<E: From<StorageError>>(
    mut page: impl FnMut(u64, usize) -> Result<Vec<LogBlock>, StorageError>,
    mut each: impl FnMut(Vec<LogBlock>) -> Result<(), E>,
) -> Result<u64, E> {
    let mut read = 0u64;
    loop {
        let blocks = match page(read, LOG_PAGE) {
            Err(StorageError::NoLog) => return Ok(read),
            other => other?,
        };
        let last = blocks.len() < LOG_PAGE;
        read += blocks.len() as u64;
        if !blocks.is_empty() {
            each(blocks)?;
        }
        if last {
            return Ok(read);
        }
    }
}

/// The rollback log's blocks past the newest `max_bytes` of blobs (SQLite
/// and PostgreSQL alike; `ID` is the row's id column).
macro_rules! prune_to_sql {
    ($id:literal, $param:literal) => {
        concat!(
            "DELETE FROM rollback_block WHERE ",
            $id,
            " IN (SELECT ",
            $id,
            " FROM (SELECT ",
            $id,
            ", SUM(length(data)) OVER (ORDER BY t1 DESC, t0 DESC ROWS BETWEEN UNBOUNDED PRECEDING \
             AND CURRENT ROW) AS kept FROM rollback_block) AS newest WHERE kept > ",
            $param,
            ")"
        )
    };
}
pub(crate) use prune_to_sql;

/// The world as stored when [`WorldStorage::snapshot`] was called: later
/// saves are not seen. Dropping it ends the read.
pub trait StorageSnapshot: Send {
    fn section_size(&self) -> SectionSize;
    /// Where it is, for messages.
    fn location(&self) -> String;
    /// Every stored section's position, in storage order.
    fn section_positions(&mut self) -> Result<Vec<Pos>, StorageError>;
    fn load_section(&mut self, pos: Pos) -> Result<Option<StoredSection>, StorageError>;
    /// The first id the next reservation would have handed out.
    fn next_node_id(&mut self) -> Result<u64, StorageError>;
    /// Every module's value, by space and key.
    fn all_values(&mut self) -> Result<Vec<StoredValue>, StorageError>;
    /// The rollback log's blocks in storage order, `skip` blocks in, at
    /// most `limit` (a backup reads the log page by page).
    fn log_page(&mut self, skip: u64, limit: usize) -> Result<Vec<LogBlock>, StorageError>;
}

/// The error a non-empty storage gives [`WorldStorage::set_empty_section_size`].
fn not_empty(location: &str, counts: StorageCounts) -> StorageError {
    StorageError::Damaged(format!(
        "{location} already holds {}: its section size stays",
        counts.describe()
    ))
}

impl StorageCounts {
    /// `3 sections, 40 nodes and 2 values`.
    pub fn describe(&self) -> String {
        format!(
            "{} sections, {} nodes and {} values",
            self.sections, self.nodes, self.values
        )
    }
}

/// Whether a write of [`WorldStorage::put_values`] that changed `changed`
/// rows claimed a key that was taken (so the whole call is undone).
fn refused_claim(write: &ValueWrite, changed: usize) -> bool {
    write.only_if_absent && write.value.is_some() && changed == 0
}

/// Tells the operator a world's tables were upgraded (an older server
/// refuses the world from now on).
fn log_upgrade(location: &str, found: i64) {
    buildat_interface::log::info!(
        "{location}: world database upgraded from schema version {found} to {SCHEMA_VERSION} \
         (modules' values: table module_value); servers older than this one refuse it now"
    );
}

/// The `schema_version` found in a world's `meta` table against this code:
/// `Ok(true)` when it is older and upgraded by creating what is missing
/// (the schema's `CREATE ... IF NOT EXISTS` did) and writing the new
/// version.
fn check_schema_version(found: i64) -> Result<bool, StorageError> {
    match found {
        SCHEMA_VERSION => Ok(false),
        found if found > SCHEMA_VERSION => Err(StorageError::NewerSchema { found }),
        found if found >= OLDEST_SCHEMA_VERSION => Ok(true),
        found => Err(StorageError::Damaged(format!(
            "unknown old schema version {found}"
        ))),
    }
}

/// Where a world is stored: the `storage` setting (`[world] storage` in
/// `world.toml`, or `--set voxelworld.storage=...`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StorageLocation {
    /// A SQLite file (`sqlite`: `<world>/world.sqlite`; `sqlite:PATH`,
    /// relative to the world directory).
    Sqlite(PathBuf),
    /// A PostgreSQL database (`postgresql://USER[:PASSWORD]@HOST[:PORT]/DB`,
    /// also `?host=/socket/dir`; `passfile=` and `sslrootcert=` relative
    /// to the world directory).
    Postgres(String),
}

impl StorageLocation {
    /// Reads the setting; empty means `sqlite`.
    pub fn parse(text: &str, world_path: &Path) -> Result<Self, StorageError> {
        let text = text.trim();
        if text.is_empty() || text == "sqlite" {
            return Ok(Self::Sqlite(world_path.join("world.sqlite")));
        }
        if let Some(path) = text.strip_prefix("sqlite:") {
            if path.is_empty() {
                return Ok(Self::Sqlite(world_path.join("world.sqlite")));
            }
            return Ok(Self::Sqlite(world_path.join(path)));
        }
        if text.starts_with("postgresql://") || text.starts_with("postgres://") {
            return Ok(Self::Postgres(postgresql::resolve_files(text, world_path)));
        }
        Err(StorageError::BadUrl {
            url: postgresql::redact_url(text),
            reason: "expected sqlite, sqlite:PATH or postgresql://USER@HOST/DATABASE".into(),
        })
    }

    /// For messages: the path, or the URL without its password.
    pub fn shown(&self) -> String {
        match self {
            Self::Sqlite(path) => path.display().to_string(),
            Self::Postgres(url) => postgresql::redact_url(url),
        }
    }

    /// Opens (or creates, with `new_section_size`) the world there;
    /// `sqlite_max_bytes` caps a SQLite file (0: no cap).
    pub fn open(
        &self,
        new_section_size: SectionSize,
        sqlite_max_bytes: u64,
    ) -> Result<Box<dyn WorldStorage>, StorageError> {
        match self {
            Self::Sqlite(path) => {
                let storage = SqliteStorage::open(path, new_section_size)?;
                storage.limit_size(sqlite_max_bytes)?;
                Ok(Box::new(storage))
            }
            Self::Postgres(url) => Ok(Box::new(postgresql::PgStorage::open(
                url,
                new_section_size,
            )?)),
        }
    }
}

/// Makes a new database file at `path` with mode 0600 before SQLite
/// opens it (SQLite gives its `-wal` and `-shm` the database's mode), or
/// takes group and other access away from one an older server made (and
/// its `-wal` and `-shm`).
fn prepare_private_file(path: &Path) -> Result<(), StorageError> {
    let private_error = |file: &Path, e: std::io::Error| {
        StorageError::Damaged(format!("{}: cannot make it private: {e}", file.display()))
    };
    match crate::files::create_new_private(path) {
        Ok(_) => return Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        // A directory SQLite will name in its own error, or no parent.
        Err(_) => return Ok(()),
    }
    for suffix in ["", "-wal", "-shm"] {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        let file = PathBuf::from(name);
        crate::files::tighten_logged(&file).map_err(|e| private_error(&file, e))?;
    }
    Ok(())
}

pub struct SqliteStorage {
    connection: Connection,
    section_size: SectionSize,
    path: PathBuf,
}

impl SqliteStorage {
    /// Opens (or creates, with `new_section_size`) the database at `path`.
    pub fn open(path: &Path, new_section_size: SectionSize) -> Result<Self, StorageError> {
        prepare_private_file(path)?;
        let connection = Connection::open(path)?;
        connection.pragma_update(None, "journal_mode", "WAL")?;
        connection.pragma_update(None, "synchronous", "NORMAL")?;
        connection.busy_timeout(std::time::Duration::from_secs(5))?;
        connection.execute_batch(
            "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
             CREATE TABLE IF NOT EXISTS section_size (w INTEGER NOT NULL, h INTEGER NOT NULL, d INTEGER NOT NULL);
             CREATE TABLE IF NOT EXISTS section (
                 sx INTEGER NOT NULL, sy INTEGER NOT NULL, sz INTEGER NOT NULL,
                 save_enabled INTEGER NOT NULL, generated INTEGER NOT NULL,
                 PRIMARY KEY (sx, sy, sz)) WITHOUT ROWID;
             CREATE TABLE IF NOT EXISTS node (
                 id INTEGER PRIMARY KEY, sx INTEGER NOT NULL, sy INTEGER NOT NULL,
                 sz INTEGER NOT NULL, data BLOB NOT NULL);
             CREATE INDEX IF NOT EXISTS node_by_section ON node (sx, sy, sz);
             CREATE TABLE IF NOT EXISTS quarantine (
                 sx INTEGER NOT NULL, sy INTEGER NOT NULL, sz INTEGER NOT NULL,
                 id INTEGER NOT NULL, data BLOB NOT NULL, reason TEXT NOT NULL);
             CREATE TABLE IF NOT EXISTS module_value (
                 space TEXT NOT NULL, key TEXT NOT NULL, data BLOB NOT NULL,
                 PRIMARY KEY (space, key)) WITHOUT ROWID;
             CREATE TABLE IF NOT EXISTS rollback_block (
                 t0 INTEGER NOT NULL, t1 INTEGER NOT NULL, ax INTEGER NOT NULL,
                 ay INTEGER NOT NULL, az INTEGER NOT NULL, data BLOB NOT NULL);
             CREATE INDEX IF NOT EXISTS rollback_block_by_end ON rollback_block (t1);",
        )?;
        let version: Option<i64> = connection
            .query_row(
                "SELECT value FROM meta WHERE key = 'schema_version'",
                [],
                |r| r.get(0),
            )
            .optional()?;
        match version {
            None => {
                connection.execute(
                    "INSERT INTO meta (key, value) VALUES ('schema_version', ?1), ('next_node_id', 1)",
                    params![SCHEMA_VERSION],
                )?;
            }
            Some(found) => {
                if check_schema_version(found)? {
                    connection.execute(
                        "UPDATE meta SET value = ?1 WHERE key = 'schema_version'",
                        params![SCHEMA_VERSION],
                    )?;
                    log_upgrade(&path.display().to_string(), found);
                }
            }
        }
        let stored: Option<[i32; 3]> = connection
            .query_row("SELECT w, h, d FROM section_size", [], |r| {
                Ok([r.get(0)?, r.get(1)?, r.get(2)?])
            })
            .optional()?;
        let section_size = match stored {
            Some(size) => SectionSize(size),
            None => {
                let [w, h, d] = new_section_size.0;
                connection.execute(
                    "INSERT INTO section_size (w, h, d) VALUES (?1, ?2, ?3)",
                    params![w, h, d],
                )?;
                new_section_size
            }
        };
        if section_size.0.iter().any(|s| *s <= 0) {
            return Err(StorageError::Damaged(format!(
                "section size {:?}",
                section_size.0
            )));
        }
        Ok(Self {
            connection,
            section_size,
            path: path.to_path_buf(),
        })
    }

    /// Caps the database at about `bytes` (0: no cap; never below its size
    /// now): past it writes fail as on a full disk, and the world keeps
    /// what it could not write (an operator's quota, and how the tests
    /// fill a disk).
    pub fn limit_size(&self, bytes: u64) -> Result<(), StorageError> {
        if bytes == 0 {
            return Ok(());
        }
        let page: i64 = self
            .connection
            .query_row("PRAGMA page_size", [], |r| r.get(0))?;
        let pages = i64::try_from(bytes).unwrap_or(i64::MAX) / page.max(1);
        self.connection.query_row(
            &format!("PRAGMA max_page_count = {}", pages.max(1)),
            [],
            |_| Ok(()),
        )?;
        Ok(())
    }

    /// `PRAGMA integrity_check`'s verdict ("ok" when healthy).
    pub fn integrity_check(&self) -> Result<String, StorageError> {
        Ok(self
            .connection
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))?)
    }
}

impl WorldStorage for SqliteStorage {
    fn section_size(&self) -> SectionSize {
        self.section_size
    }

    fn location(&self) -> String {
        self.path.display().to_string()
    }

    fn section_positions(&mut self) -> Result<Vec<Pos>, StorageError> {
        sqlite_reads::section_positions(&self.connection)
    }

    fn counts(&mut self) -> Result<StorageCounts, StorageError> {
        Ok(self.connection.query_row(
            "SELECT (SELECT count(*) FROM section), (SELECT count(*) FROM node),
                    (SELECT count(*) FROM module_value)",
            [],
            |r| {
                Ok(StorageCounts {
                    sections: r.get::<_, i64>(0)? as u64,
                    nodes: r.get::<_, i64>(1)? as u64,
                    values: r.get::<_, i64>(2)? as u64,
                })
            },
        )?)
    }

    fn next_node_id(&mut self) -> Result<u64, StorageError> {
        sqlite_reads::next_node_id(&self.connection)
    }

    fn raise_next_node_id(&mut self, next: u64) -> Result<(), StorageError> {
        let next = i64::try_from(next)
            .map_err(|_| StorageError::Damaged(format!("node id {next} out of range")))?;
        self.connection.execute(
            "UPDATE meta SET value = MAX(value, ?1) WHERE key = 'next_node_id'",
            params![next],
        )?;
        Ok(())
    }

    fn load_section(&mut self, pos: Pos) -> Result<Option<StoredSection>, StorageError> {
        sqlite_reads::load_section(&self.connection, pos)
    }

    fn save_section(&mut self, section: &StoredSection) -> Result<(), StorageError> {
        let transaction = self.connection.transaction()?;
        sqlite_writes::section(&transaction, section)?;
        transaction.commit()?;
        Ok(())
    }

    fn quarantine_section(&mut self, pos: Pos, reason: &str) -> Result<(), StorageError> {
        let [x, y, z] = pos;
        let transaction = self.connection.transaction()?;
        transaction.execute(
            "INSERT INTO quarantine (sx, sy, sz, id, data, reason)
             SELECT sx, sy, sz, id, data, ?4 FROM node WHERE sx = ?1 AND sy = ?2 AND sz = ?3",
            params![x, y, z, reason],
        )?;
        transaction.execute(
            "DELETE FROM node WHERE sx = ?1 AND sy = ?2 AND sz = ?3",
            params![x, y, z],
        )?;
        transaction.execute(
            "DELETE FROM section WHERE sx = ?1 AND sy = ?2 AND sz = ?3",
            params![x, y, z],
        )?;
        transaction.commit()?;
        Ok(())
    }

    fn reserve_node_ids(&mut self, count: u64) -> Result<Range<u64>, StorageError> {
        let transaction = self.connection.transaction()?;
        let next: i64 = transaction.query_row(
            "SELECT value FROM meta WHERE key = 'next_node_id'",
            [],
            |r| r.get(0),
        )?;
        let start = next as u64;
        transaction.execute(
            "UPDATE meta SET value = ?1 WHERE key = 'next_node_id'",
            params![(start + count) as i64],
        )?;
        transaction.commit()?;
        Ok(start..start + count)
    }

    fn snapshot(&mut self) -> Result<Box<dyn StorageSnapshot>, StorageError> {
        let connection = Connection::open_with_flags(
            &self.path,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        connection.busy_timeout(std::time::Duration::from_secs(5))?;
        // WAL: a read transaction sees the database as of its first read,
        // whatever commits after.
        connection.execute_batch("BEGIN DEFERRED")?;
        sqlite_reads::next_node_id(&connection)?;
        Ok(Box::new(SqliteSnapshot {
            connection,
            section_size: self.section_size,
            path: self.path.clone(),
        }))
    }

    fn set_empty_section_size(&mut self, size: SectionSize) -> Result<(), StorageError> {
        let counts = self.counts()?;
        if counts != StorageCounts::default() {
            return Err(not_empty(&self.location(), counts));
        }
        let [w, h, d] = size.0;
        let transaction = self.connection.transaction()?;
        transaction.execute("DELETE FROM section_size", [])?;
        transaction.execute(
            "INSERT INTO section_size (w, h, d) VALUES (?1, ?2, ?3)",
            params![w, h, d],
        )?;
        transaction.commit()?;
        self.section_size = size;
        Ok(())
    }

    fn has_generated_section(&mut self, pos: Pos) -> Result<bool, StorageError> {
        let [x, y, z] = pos;
        let generated: Option<bool> = self
            .connection
            .query_row(
                "SELECT generated FROM section WHERE sx = ?1 AND sy = ?2 AND sz = ?3",
                params![x, y, z],
                |r| r.get(0),
            )
            .optional()?;
        Ok(generated.unwrap_or(false))
    }

    fn get_value(&mut self, space: &str, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
        Ok(self
            .connection
            .prepare_cached("SELECT data FROM module_value WHERE space = ?1 AND key = ?2")?
            .query_row(params![space, key], |r| r.get(0))
            .optional()?)
    }

    fn put_values(&mut self, writes: &[ValueWrite]) -> Result<bool, StorageError> {
        self.save_together(&[], writes)
    }

    fn save_together(
        &mut self,
        sections: &[StoredSection],
        writes: &[ValueWrite],
    ) -> Result<bool, StorageError> {
        let transaction = self.connection.transaction()?;
        for section in sections {
            sqlite_writes::section(&transaction, section)?;
        }
        if !sqlite_writes::values(&transaction, writes)? {
            // Dropped uncommitted: rolled back.
            return Ok(false);
        }
        transaction.commit()?;
        Ok(true)
    }

    fn list_values(&mut self, query: &ListValues) -> Result<Vec<StoredValue>, StorageError> {
        sqlite_reads::values(&self.connection, Some(query))
    }

    fn all_values(&mut self) -> Result<Vec<StoredValue>, StorageError> {
        sqlite_reads::values(&self.connection, None)
    }

    fn append_log(&mut self, blocks: &[LogBlock]) -> Result<(), StorageError> {
        let transaction = self.connection.transaction()?;
        {
            let mut insert = transaction.prepare_cached(
                "INSERT INTO rollback_block (t0, t1, ax, ay, az, data) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?;
            for b in blocks {
                let [ax, ay, az] = b.area;
                insert.execute(params![b.t0, b.t1, ax, ay, az, b.data])?;
            }
        }
        transaction.commit()?;
        Ok(())
    }

    fn read_log(
        &mut self,
        since: i64,
        areas: [[i32; 3]; 2],
    ) -> Result<Vec<LogBlock>, StorageError> {
        let [[x0, y0, z0], [x1, y1, z1]] = areas;
        let mut select = self.connection.prepare_cached(
            "SELECT t0, t1, ax, ay, az, data FROM rollback_block WHERE t1 >= ?1
             AND ax BETWEEN ?2 AND ?3 AND ay BETWEEN ?4 AND ?5 AND az BETWEEN ?6 AND ?7
             ORDER BY t0",
        )?;
        let rows = select.query_map(params![since, x0, x1, y0, y1, z0, z1], |r| {
            Ok(LogBlock {
                t0: r.get(0)?,
                t1: r.get(1)?,
                area: [r.get(2)?, r.get(3)?, r.get(4)?],
                data: r.get(5)?,
            })
        })?;
        Ok(rows.collect::<Result<Vec<_>, _>>()?)
    }

    fn prune_log(&mut self, before: i64) -> Result<u64, StorageError> {
        let deleted = self
            .connection
            .execute("DELETE FROM rollback_block WHERE t1 < ?1", params![before])?;
        Ok(deleted as u64)
    }

    fn prune_log_to(&mut self, max_bytes: u64) -> Result<u64, StorageError> {
        let max = i64::try_from(max_bytes).unwrap_or(i64::MAX);
        let deleted = self
            .connection
            .execute(prune_to_sql!("rowid", "?1"), params![max])?;
        Ok(deleted as u64)
    }

    fn log_page(&mut self, skip: u64, limit: usize) -> Result<Vec<LogBlock>, StorageError> {
        sqlite_reads::log_page(&self.connection, skip, limit)
    }
}

/// The SQLite backend's writes, inside a transaction the caller commits.
mod sqlite_writes {
    use super::*;

    /// Replaces the section's row and all its nodes.
    pub fn section(
        transaction: &rusqlite::Transaction<'_>,
        section: &StoredSection,
    ) -> Result<(), StorageError> {
        let [x, y, z] = section.pos;
        transaction
            .prepare_cached(
                "INSERT OR REPLACE INTO section (sx, sy, sz, save_enabled, generated) \
                 VALUES (?1, ?2, ?3, ?4, ?5)",
            )?
            .execute(params![x, y, z, section.save_enabled, section.generated])?;
        transaction
            .prepare_cached("DELETE FROM node WHERE sx = ?1 AND sy = ?2 AND sz = ?3")?
            .execute(params![x, y, z])?;
        let mut insert = transaction.prepare_cached(
            "INSERT OR REPLACE INTO node (id, sx, sy, sz, data) VALUES (?1, ?2, ?3, ?4, ?5)",
        )?;
        for (id, data) in &section.nodes {
            insert.execute(params![*id as i64, x, y, z, data])?;
        }
        Ok(())
    }

    /// Applies the writes in order; false (stopped there) when a claim
    /// finds its key taken, and the caller drops the transaction.
    pub fn values(
        transaction: &rusqlite::Transaction<'_>,
        writes: &[ValueWrite],
    ) -> Result<bool, StorageError> {
        for write in writes {
            let changed = match (&write.value, write.only_if_absent) {
                (Some(value), true) => transaction
                    .prepare_cached(
                        "INSERT OR IGNORE INTO module_value (space, key, data) VALUES (?1, ?2, ?3)",
                    )?
                    .execute(params![write.space, write.key, value])?,
                (Some(value), false) => transaction
                    .prepare_cached(
                        "INSERT OR REPLACE INTO module_value (space, key, data) \
                         VALUES (?1, ?2, ?3)",
                    )?
                    .execute(params![write.space, write.key, value])?,
                (None, _) => transaction
                    .prepare_cached("DELETE FROM module_value WHERE space = ?1 AND key = ?2")?
                    .execute(params![write.space, write.key])?,
            };
            if refused_claim(write, changed) {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

/// What the SQLite backend and its snapshots read alike.
mod sqlite_reads {
    use super::*;

    pub fn section_positions(connection: &Connection) -> Result<Vec<Pos>, StorageError> {
        let mut statement =
            connection.prepare_cached("SELECT sx, sy, sz FROM section ORDER BY sy, sz, sx")?;
        let positions = statement
            .query_map([], |r| Ok([r.get(0)?, r.get(1)?, r.get(2)?]))?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(positions)
    }

    pub fn load_section(
        connection: &Connection,
        pos: Pos,
    ) -> Result<Option<StoredSection>, StorageError> {
        let [x, y, z] = pos;
        let flags: Option<(bool, bool)> = connection
            .query_row(
                "SELECT save_enabled, generated FROM section WHERE sx = ?1 AND sy = ?2 AND sz = ?3",
                params![x, y, z],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
        let Some((save_enabled, generated)) = flags else {
            return Ok(None);
        };
        let mut statement = connection.prepare_cached(
            "SELECT id, data FROM node WHERE sx = ?1 AND sy = ?2 AND sz = ?3 ORDER BY id",
        )?;
        let nodes = statement
            .query_map(params![x, y, z], |r| {
                Ok((r.get::<_, i64>(0)? as u64, r.get(1)?))
            })?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Some(StoredSection {
            pos,
            save_enabled,
            generated,
            nodes,
        }))
    }

    /// The rollback log's blocks by row, `skip` in, at most `limit`.
    pub fn log_page(
        connection: &Connection,
        skip: u64,
        limit: usize,
    ) -> Result<Vec<LogBlock>, StorageError> {
        let mut select = connection.prepare_cached(
            "SELECT t0, t1, ax, ay, az, data FROM rollback_block ORDER BY rowid LIMIT ?1 OFFSET ?2",
        )?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let skip = i64::try_from(skip).unwrap_or(i64::MAX);
        let rows = select.query_map(params![limit, skip], |r| {
            Ok(LogBlock {
                t0: r.get(0)?,
                t1: r.get(1)?,
                area: [r.get(2)?, r.get(3)?, r.get(4)?],
                data: r.get(5)?,
            })
        })?;
        Ok(rows.collect::<Result<Vec<_>, _>>()?)
    }

    pub fn next_node_id(connection: &Connection) -> Result<u64, StorageError> {
        Ok(connection.query_row(
            "SELECT value FROM meta WHERE key = 'next_node_id'",
            [],
            |r| r.get::<_, i64>(0),
        )? as u64)
    }

    /// The values `query` asks for, or every value (by space and key).
    /// Keys compare bytewise (SQLite's default collation).
    pub fn values(
        connection: &Connection,
        query: Option<&ListValues>,
    ) -> Result<Vec<StoredValue>, StorageError> {
        let row = |r: &rusqlite::Row<'_>| {
            Ok(StoredValue {
                space: r.get(0)?,
                key: r.get(1)?,
                value: r.get(2)?,
            })
        };
        let Some(query) = query else {
            let mut statement = connection
                .prepare_cached("SELECT space, key, data FROM module_value ORDER BY space, key")?;
            return Ok(statement.query_map([], row)?.collect::<Result<_, _>>()?);
        };
        let mut statement = connection.prepare_cached(
            "SELECT space, key, data FROM module_value
             WHERE space = ?1 AND key > ?2 AND substr(key, 1, length(?3)) = ?3
             ORDER BY key LIMIT ?4",
        )?;
        let limit = query.limit.min(buildat_voxelworld_api::MAX_VALUES_LISTED);
        let rows = statement.query_map(
            params![
                query.space,
                query.after.as_deref().unwrap_or(""),
                query.key_prefix,
                limit
            ],
            row,
        )?;
        Ok(rows.collect::<Result<_, _>>()?)
    }
}

/// A read transaction on a connection of its own (WAL lets the world's
/// connection go on committing meanwhile).
struct SqliteSnapshot {
    connection: Connection,
    section_size: SectionSize,
    path: PathBuf,
}

impl StorageSnapshot for SqliteSnapshot {
    fn section_size(&self) -> SectionSize {
        self.section_size
    }

    fn location(&self) -> String {
        self.path.display().to_string()
    }

    fn section_positions(&mut self) -> Result<Vec<Pos>, StorageError> {
        sqlite_reads::section_positions(&self.connection)
    }

    fn load_section(&mut self, pos: Pos) -> Result<Option<StoredSection>, StorageError> {
        sqlite_reads::load_section(&self.connection, pos)
    }

    fn next_node_id(&mut self) -> Result<u64, StorageError> {
        sqlite_reads::next_node_id(&self.connection)
    }

    fn all_values(&mut self) -> Result<Vec<StoredValue>, StorageError> {
        sqlite_reads::values(&self.connection, None)
    }

    fn log_page(&mut self, skip: u64, limit: usize) -> Result<Vec<LogBlock>, StorageError> {
        sqlite_reads::log_page(&self.connection, skip, limit)
    }
}

/// Test worlds on every backend: the same test bodies run against SQLite
/// and, when `BUILDAT_TEST_PG` names a cluster (`scripts/pg-cluster`),
/// PostgreSQL. Without it a run skips PostgreSQL loudly; under CI
/// (`CI=true`) its absence is a failure.
#[cfg(test)]
pub(crate) mod testing {
    use super::*;
    use buildat_test_pg::TestDatabase;

    /// Blocks of the rollback log (their bytes opaque here), of voxels'
    /// areas and of inventories', numbered `range`.
    pub fn log_blocks(range: std::ops::Range<i64>) -> Vec<LogBlock> {
        range
            .map(|i| LogBlock {
                t0: 1_800_000_000_000 + i * 10_000,
                t1: 1_800_000_000_000 + i * 10_000 + 9_999,
                area: if i % 7 == 0 {
                    crate::rollback::ITEMS_AREA
                } else {
                    [i as i32 % 5, -1, i as i32]
                },
                data: vec![i as u8; (i % 40) as usize],
            })
            .collect()
    }

    /// Every block of the log `storage` holds.
    pub fn whole_log(storage: &mut dyn WorldStorage) -> Vec<LogBlock> {
        storage
            .read_log(i64::MIN, [[i32::MIN; 3], [i32::MAX; 3]])
            .unwrap()
    }

    /// A fresh, empty world on one backend; opened as often as wanted (each
    /// open sees what the last wrote); a PostgreSQL one is dropped with it.
    pub struct TestWorld {
        pub backend: &'static str,
        pub location: StorageLocation,
        _dir: tempfile::TempDir,
        /// Dropped (database and all) with the world.
        _database: Option<TestDatabase>,
    }

    impl TestWorld {
        pub fn open(&self, size: SectionSize) -> Box<dyn WorldStorage> {
            self.location
                .open(size, 0)
                .unwrap_or_else(|e| panic!("{}: {e}", self.backend))
        }

        /// Sets the stored schema version behind the backend's back.
        pub fn set_schema_version(&self, version: i64) {
            self.run_sql(&format!(
                "UPDATE meta SET value = {version} WHERE key = 'schema_version'"
            ));
        }

        /// The schema version the world's `meta` table holds.
        pub fn stored_schema_version(&self) -> i64 {
            let sql = "SELECT value FROM meta WHERE key = 'schema_version'";
            match &self.location {
                StorageLocation::Sqlite(path) => Connection::open(path)
                    .unwrap()
                    .query_row(sql, [], |r| r.get(0))
                    .unwrap(),
                StorageLocation::Postgres(url) => {
                    ::postgres::Client::connect(url, ::postgres::NoTls)
                        .unwrap()
                        .query_one(sql, &[])
                        .unwrap()
                        .get(0)
                }
            }
        }

        /// Runs `sql` (plain SQL both backends take) behind the backend's back.
        pub fn run_sql(&self, sql: &str) {
            match &self.location {
                StorageLocation::Sqlite(path) => {
                    Connection::open(path).unwrap().execute_batch(sql).unwrap();
                }
                StorageLocation::Postgres(url) => {
                    let mut client = ::postgres::Client::connect(url, ::postgres::NoTls).unwrap();
                    client.batch_execute(sql).unwrap();
                }
            }
        }
    }

    pub fn sqlite_world() -> TestWorld {
        let dir = tempfile::tempdir().unwrap();
        TestWorld {
            backend: "sqlite",
            location: StorageLocation::Sqlite(dir.path().join("world.sqlite")),
            _dir: dir,
            _database: None,
        }
    }

    /// A fresh database on the test cluster, or `None` when there is none
    /// (`buildat_test_pg::test_cluster`: a loud skip, a failure in CI).
    pub fn postgres_world() -> Option<TestWorld> {
        let database = TestDatabase::on_test_cluster("buildat_test")?;
        Some(TestWorld {
            backend: "postgresql",
            location: StorageLocation::Postgres(database.url.clone()),
            _dir: tempfile::tempdir().unwrap(),
            _database: Some(database),
        })
    }

    /// A fresh world on each backend available.
    pub fn each_backend() -> Vec<TestWorld> {
        let mut worlds = vec![sqlite_world()];
        worlds.extend(postgres_world());
        worlds
    }
}

#[cfg(test)]
mod tests {
    use super::testing::each_backend;
    use super::*;

    #[test]
    fn sections_round_trip_and_replace_whole() {
        for world in each_backend() {
            let backend = world.backend;
            let mut storage = world.open(SectionSize::default());
            let section = StoredSection {
                pos: [1, -2, 3],
                save_enabled: true,
                generated: true,
                nodes: vec![(5, b"five".to_vec()), (6, b"six".to_vec())],
            };
            storage.save_section(&section).unwrap();
            assert_eq!(
                storage.load_section([1, -2, 3]).unwrap(),
                Some(section.clone()),
                "{backend}"
            );
            let smaller = StoredSection {
                nodes: vec![(6, b"six again".to_vec())],
                ..section
            };
            storage.save_section(&smaller).unwrap();
            assert_eq!(
                storage.load_section([1, -2, 3]).unwrap(),
                Some(smaller),
                "{backend}"
            );
            assert_eq!(storage.load_section([0, 0, 0]).unwrap(), None, "{backend}");
            let empty = StoredSection {
                pos: [0, 0, 0],
                save_enabled: false,
                generated: false,
                nodes: Vec::new(),
            };
            storage.save_section(&empty).unwrap();
            assert_eq!(
                storage.load_section([0, 0, 0]).unwrap(),
                Some(empty),
                "{backend}: a section without nodes"
            );
            assert!(!storage.has_generated_section([0, 0, 0]).unwrap());
            assert!(storage.has_generated_section([1, -2, 3]).unwrap());
            assert!(!storage.has_generated_section([9, 9, 9]).unwrap());
            assert_eq!(
                storage.counts().unwrap(),
                StorageCounts {
                    sections: 2,
                    nodes: 1,
                    values: 0
                },
                "{backend}"
            );
            assert_eq!(
                storage.section_positions().unwrap(),
                vec![[1, -2, 3], [0, 0, 0]],
                "{backend}"
            );
        }
    }

    #[test]
    fn a_node_saved_in_another_section_moves_there() {
        for world in each_backend() {
            let backend = world.backend;
            let mut storage = world.open(SectionSize::default());
            let mut a = StoredSection {
                pos: [0, 0, 0],
                save_enabled: true,
                generated: true,
                nodes: vec![(1, b"a".to_vec()), (2, b"walker".to_vec())],
            };
            storage.save_section(&a).unwrap();
            let b = StoredSection {
                pos: [1, 0, 0],
                save_enabled: true,
                generated: true,
                nodes: vec![(2, b"walker moved".to_vec()), (3, b"b".to_vec())],
            };
            storage.save_section(&b).unwrap();
            a.nodes.truncate(1);
            assert_eq!(
                storage.load_section([0, 0, 0]).unwrap(),
                Some(a),
                "{backend}"
            );
            assert_eq!(
                storage.load_section([1, 0, 0]).unwrap(),
                Some(b),
                "{backend}"
            );
            assert_eq!(storage.counts().unwrap().nodes, 3, "{backend}");
        }
    }

    #[test]
    fn node_ids_are_never_reused_across_reopen_and_size_is_fixed() {
        for world in each_backend() {
            let backend = world.backend;
            let first = world
                .open(SectionSize([4, 2, 4]))
                .reserve_node_ids(10)
                .unwrap();
            assert_eq!(first, 1..11, "{backend}");
            let mut reopened = world.open(SectionSize([2, 2, 2]));
            assert_eq!(
                reopened.section_size(),
                SectionSize([4, 2, 4]),
                "{backend}: the stored size wins"
            );
            let second = reopened.reserve_node_ids(10).unwrap();
            assert!(
                second.start >= first.end,
                "{backend}: {first:?} then {second:?}"
            );
            assert_eq!(reopened.next_node_id().unwrap(), second.end, "{backend}");
            reopened.raise_next_node_id(100).unwrap();
            reopened.raise_next_node_id(50).unwrap();
            assert_eq!(reopened.reserve_node_ids(1).unwrap(), 100..101, "{backend}");
        }
    }

    #[test]
    fn quarantine_moves_a_section_out_of_the_world() {
        for world in each_backend() {
            let backend = world.backend;
            let mut storage = world.open(SectionSize::default());
            storage
                .save_section(&StoredSection {
                    pos: [2, 2, 2],
                    save_enabled: true,
                    generated: true,
                    nodes: vec![(7, b"garbage".to_vec())],
                })
                .unwrap();
            storage
                .quarantine_section([2, 2, 2], "does not decode")
                .unwrap();
            assert_eq!(storage.load_section([2, 2, 2]).unwrap(), None, "{backend}");
            assert_eq!(
                storage.counts().unwrap(),
                StorageCounts::default(),
                "{backend}"
            );
        }
    }

    #[test]
    fn a_newer_schema_is_refused() {
        for world in each_backend() {
            drop(world.open(SectionSize::default()));
            world.set_schema_version(99);
            let error = world
                .location
                .open(SectionSize::default(), 0)
                .err()
                .unwrap()
                .to_string();
            assert!(
                error.contains("schema version 99 is newer"),
                "{}: {error}",
                world.backend
            );
        }
    }

    fn write(space: &str, key: &str, value: Option<&[u8]>, only_if_absent: bool) -> ValueWrite {
        ValueWrite {
            space: space.into(),
            key: key.into(),
            value: value.map(<[u8]>::to_vec),
            only_if_absent,
        }
    }

    fn listed(storage: &mut dyn WorldStorage, prefix: &str, after: Option<&str>) -> Vec<String> {
        storage
            .list_values(&ListValues {
                space: "game.things".into(),
                key_prefix: prefix.into(),
                after: after.map(str::to_string),
                limit: 2,
            })
            .unwrap()
            .into_iter()
            .map(|v| v.key)
            .collect()
    }

    #[test]
    fn module_values_are_written_all_or_none_and_listed_in_key_order() {
        for world in each_backend() {
            let backend = world.backend;
            let mut storage = world.open(SectionSize::default());
            assert!(
                storage
                    .put_values(&[
                        write("game.things", "b:2", Some(b"two"), false),
                        write("game.things", "a:1", Some(b"one"), true),
                        write("game.things", "b:10", Some(b"ten"), false),
                        write("game.things", "b:3", Some(b""), false),
                        write("game.other", "b:9", Some(b"elsewhere"), false),
                    ])
                    .unwrap()
            );
            // A claim of a taken key undoes the whole call.
            assert!(
                !storage
                    .put_values(&[
                        write("game.things", "c:1", Some(b"new"), false),
                        write("game.things", "a:1", Some(b"again"), true),
                    ])
                    .unwrap(),
                "{backend}"
            );
            assert_eq!(storage.get_value("game.things", "c:1").unwrap(), None);
            assert_eq!(
                storage.get_value("game.things", "a:1").unwrap(),
                Some(b"one".to_vec()),
                "{backend}"
            );
            assert_eq!(
                storage.get_value("game.things", "b:3").unwrap(),
                Some(Vec::new())
            );
            // Bytewise order, paged, by prefix, one space only.
            assert_eq!(listed(storage.as_mut(), "b:", None), ["b:10", "b:2"]);
            assert_eq!(
                listed(storage.as_mut(), "b:", Some("b:2")),
                ["b:3"],
                "{backend}"
            );
            assert_eq!(listed(storage.as_mut(), "", None), ["a:1", "b:10"]);
            assert!(
                storage
                    .put_values(&[write("game.things", "b:2", None, false)])
                    .unwrap()
            );
            assert_eq!(storage.get_value("game.things", "b:2").unwrap(), None);
            assert_eq!(storage.counts().unwrap().values, 4, "{backend}");
            let all = storage.all_values().unwrap();
            assert_eq!(all.len(), 4);
            assert_eq!(all[0].space, "game.other");
            // Durable: another open sees them.
            drop(storage);
            let mut again = world.open(SectionSize::default());
            assert_eq!(again.all_values().unwrap(), all, "{backend}");
        }
    }

    #[test]
    fn a_version_1_world_is_upgraded_to_hold_values() {
        for world in each_backend() {
            let backend = world.backend;
            let mut storage = world.open(SectionSize::default());
            storage
                .save_section(&StoredSection {
                    pos: [0, 0, 0],
                    save_enabled: true,
                    generated: true,
                    nodes: vec![(1, b"one".to_vec())],
                })
                .unwrap();
            drop(storage);
            // What a version 1 world looked like.
            world.run_sql("DROP TABLE module_value");
            world.set_schema_version(1);
            let mut storage = world.open(SectionSize::default());
            assert!(
                storage
                    .put_values(&[write("main.accounts", "ann", Some(b"a"), true)])
                    .unwrap(),
                "{backend}"
            );
            assert_eq!(storage.counts().unwrap().sections, 1);
            drop(storage);
            assert_eq!(
                world.stored_schema_version(),
                2,
                "{backend}: upgraded in place"
            );
            assert_eq!(
                world
                    .open(SectionSize::default())
                    .get_value("main.accounts", "ann")
                    .unwrap(),
                Some(b"a".to_vec()),
                "{backend}"
            );
        }
    }

    #[test]
    fn the_storage_setting_names_a_backend() {
        let world = Path::new("/w");
        assert_eq!(
            StorageLocation::parse("", world).unwrap(),
            StorageLocation::Sqlite("/w/world.sqlite".into())
        );
        assert_eq!(
            StorageLocation::parse("sqlite", world).unwrap(),
            StorageLocation::Sqlite("/w/world.sqlite".into())
        );
        assert_eq!(
            StorageLocation::parse("sqlite:other.sqlite", world).unwrap(),
            StorageLocation::Sqlite("/w/other.sqlite".into())
        );
        assert_eq!(
            StorageLocation::parse("sqlite:/x/y.sqlite", world).unwrap(),
            StorageLocation::Sqlite("/x/y.sqlite".into())
        );
        let url = "postgresql://me:pw@127.0.0.1/w";
        let location = StorageLocation::parse(url, world).unwrap();
        assert_eq!(location, StorageLocation::Postgres(url.into()));
        assert_eq!(location.shown(), "postgresql://me:***@127.0.0.1/w");
        let error = StorageLocation::parse("mysql://me:pw@h/w", world)
            .unwrap_err()
            .to_string();
        assert!(error.contains("mysql://me:***@h/w"), "{error}");
    }

    #[test]
    fn the_sqlite_database_and_its_wal_are_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("world.sqlite");
        let with = |suffix: &str| dir.path().join(format!("world.sqlite{suffix}"));
        let mut storage = SqliteStorage::open(&path, SectionSize::default()).unwrap();
        storage
            .save_section(&StoredSection {
                pos: [0, 0, 0],
                save_enabled: true,
                generated: true,
                nodes: vec![(1, vec![1; 100])],
            })
            .unwrap();
        for suffix in ["", "-wal", "-shm"] {
            assert_eq!(
                crate::files::get_mode(&with(suffix)),
                Some(0o600),
                "{suffix}"
            );
        }
        drop(storage);
        // One an older server left readable is tightened, WAL and all.
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::set_permissions(with(suffix), std::fs::Permissions::from_mode(0o644));
        }
        let storage = SqliteStorage::open(&path, SectionSize::default()).unwrap();
        for suffix in ["", "-wal", "-shm"] {
            if let Some(mode) = crate::files::get_mode(&with(suffix)) {
                assert_eq!(mode, 0o600, "{suffix}");
            }
        }
        drop(storage);
    }

    #[test]
    fn sqlite_integrity_holds_after_saves() {
        let dir = tempfile::tempdir().unwrap();
        let mut storage =
            SqliteStorage::open(&dir.path().join("world.sqlite"), SectionSize::default()).unwrap();
        storage
            .save_section(&StoredSection {
                pos: [1, 2, 3],
                save_enabled: true,
                generated: true,
                nodes: vec![(1, vec![1; 100])],
            })
            .unwrap();
        assert_eq!(storage.integrity_check().unwrap(), "ok");
    }

    #[test]
    fn a_capped_database_refuses_writes_like_a_full_disk() {
        let dir = tempfile::tempdir().unwrap();
        let mut storage =
            SqliteStorage::open(&dir.path().join("w.sqlite"), SectionSize::default()).unwrap();
        storage.limit_size(1).unwrap();
        let big = StoredSection {
            pos: [0, 0, 0],
            save_enabled: true,
            generated: true,
            nodes: vec![(1, vec![7; 1 << 20])],
        };
        let error = storage.save_section(&big).expect_err("over the cap");
        assert!(error.to_string().contains("full"), "{error}");
        assert_eq!(
            storage.load_section([0, 0, 0]).unwrap(),
            None,
            "nothing half-written"
        );
    }
}
