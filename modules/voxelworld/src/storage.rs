//! World storage: the trait the world talks to, and its SQLite backend.
//!
//! Owns: the database file (`<world>/world.sqlite`, WAL), its schema and
//! schema version, the fixed section size, node id reservation, and saving a
//! section in one transaction (a crash leaves it either old or new).
//! Does not own: what node data means (`world.rs`); another backend (e.g.
//! PostgreSQL) implements [`WorldStorage`] without touching the module.
//!
//! Schema (version 1):
//! ```sql
//! meta(key TEXT PRIMARY KEY, value INTEGER)     -- schema_version, next_node_id
//! section_size(w, h, d)                           -- one row, fixed at creation
//! section(sx, sy, sz, save_enabled, generated)    -- PRIMARY KEY (sx, sy, sz)
//! node(id INTEGER PRIMARY KEY, sx, sy, sz, data BLOB)
//! ```

use std::ops::Range;
use std::path::Path;

use buildat_voxel::geometry::{Pos, SectionSize};
use rusqlite::{Connection, OptionalExtension, params};

/// The schema this code writes.
pub const SCHEMA_VERSION: i64 = 1;

#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    #[error("world database: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error(
        "world database schema version {found} is newer than this server's ({SCHEMA_VERSION}): use a newer server or another world"
    )]
    NewerSchema { found: i64 },
    #[error("world database is damaged: {0}")]
    Damaged(String),
}

/// A section as stored: flags and its nodes' (id, data).
#[derive(Debug, Clone, PartialEq)]
pub struct StoredSection {
    pub pos: Pos,
    pub save_enabled: bool,
    pub generated: bool,
    pub nodes: Vec<(u64, Vec<u8>)>,
}

pub trait WorldStorage: Send {
    /// The world's section size (fixed when the world was created).
    fn section_size(&self) -> SectionSize;
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
}

pub struct SqliteStorage {
    connection: Connection,
    section_size: SectionSize,
}

impl SqliteStorage {
    /// Opens (or creates, with `new_section_size`) the database at `path`.
    pub fn open(path: &Path, new_section_size: SectionSize) -> Result<Self, StorageError> {
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
                 id INTEGER NOT NULL, data BLOB NOT NULL, reason TEXT NOT NULL);",
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
            Some(found) if found > SCHEMA_VERSION => {
                return Err(StorageError::NewerSchema { found });
            }
            Some(found) if found < SCHEMA_VERSION => {
                // No older schema exists yet; migrations go here, in order.
                return Err(StorageError::Damaged(format!(
                    "unknown old schema version {found}"
                )));
            }
            Some(_) => {}
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

    fn load_section(&mut self, pos: Pos) -> Result<Option<StoredSection>, StorageError> {
        let [x, y, z] = pos;
        let flags: Option<(bool, bool)> = self
            .connection
            .query_row(
                "SELECT save_enabled, generated FROM section WHERE sx = ?1 AND sy = ?2 AND sz = ?3",
                params![x, y, z],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
        let Some((save_enabled, generated)) = flags else {
            return Ok(None);
        };
        let mut statement = self.connection.prepare_cached(
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

    fn save_section(&mut self, section: &StoredSection) -> Result<(), StorageError> {
        let [x, y, z] = section.pos;
        let transaction = self.connection.transaction()?;
        transaction.execute(
            "INSERT OR REPLACE INTO section (sx, sy, sz, save_enabled, generated) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![x, y, z, section.save_enabled, section.generated],
        )?;
        transaction.execute(
            "DELETE FROM node WHERE sx = ?1 AND sy = ?2 AND sz = ?3",
            params![x, y, z],
        )?;
        {
            let mut insert = transaction.prepare_cached(
                "INSERT OR REPLACE INTO node (id, sx, sy, sz, data) VALUES (?1, ?2, ?3, ?4, ?5)",
            )?;
            for (id, data) in &section.nodes {
                insert.execute(params![*id as i64, x, y, z, data])?;
            }
        }
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_round_trip_and_replace_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("world.sqlite");
        let mut storage = SqliteStorage::open(&path, SectionSize::default()).unwrap();
        let section = StoredSection {
            pos: [1, -2, 3],
            save_enabled: true,
            generated: true,
            nodes: vec![(5, b"five".to_vec()), (6, b"six".to_vec())],
        };
        storage.save_section(&section).unwrap();
        assert_eq!(
            storage.load_section([1, -2, 3]).unwrap(),
            Some(section.clone())
        );
        let smaller = StoredSection {
            nodes: vec![(6, b"six again".to_vec())],
            ..section
        };
        storage.save_section(&smaller).unwrap();
        assert_eq!(storage.load_section([1, -2, 3]).unwrap(), Some(smaller));
        assert_eq!(storage.load_section([0, 0, 0]).unwrap(), None);
        assert_eq!(storage.integrity_check().unwrap(), "ok");
    }

    #[test]
    fn node_ids_are_never_reused_across_reopen_and_size_is_fixed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("world.sqlite");
        let first = {
            let mut storage = SqliteStorage::open(&path, SectionSize([4, 2, 4])).unwrap();
            storage.reserve_node_ids(10).unwrap()
        };
        let mut reopened = SqliteStorage::open(&path, SectionSize([2, 2, 2])).unwrap();
        assert_eq!(
            reopened.section_size(),
            SectionSize([4, 2, 4]),
            "the stored size wins"
        );
        let second = reopened.reserve_node_ids(10).unwrap();
        assert!(second.start >= first.end, "{first:?} then {second:?}");
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

    #[test]
    fn a_newer_schema_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("world.sqlite");
        drop(SqliteStorage::open(&path, SectionSize::default()).unwrap());
        let connection = Connection::open(&path).unwrap();
        connection
            .execute(
                "UPDATE meta SET value = 99 WHERE key = 'schema_version'",
                [],
            )
            .unwrap();
        drop(connection);
        let error = SqliteStorage::open(&path, SectionSize::default())
            .err()
            .unwrap()
            .to_string();
        assert!(error.contains("schema version 99 is newer"), "{error}");
    }
}
