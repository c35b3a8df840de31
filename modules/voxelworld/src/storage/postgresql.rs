//! The PostgreSQL backend of [`WorldStorage`], and its connection pool.
//!
//! Owns: the world's tables in a PostgreSQL database named by a
//! `postgresql://` URL (`storage = "postgresql://..."` in `world.toml`, or
//! `--set voxelworld.storage=...`), their schema and schema version, the
//! fixed section size, node id reservation (one atomic `UPDATE ... RETURNING`
//! per block of ids, committed before any is handed out), saving a section
//! as one statement (one transaction: the section row upserted by position,
//! its nodes upserted by id and the nodes no longer in it deleted), a small
//! pool of connections (a broken one is dropped and a new one made at the
//! next use, so the world rides out a database restart by retrying its
//! saves), and the URL as shown in messages (its password hidden).
//! Does not own: what sections and nodes mean (`world.rs`), when saves
//! happen, TLS (connections use `NoTls`: a Unix socket or loopback).
//!
//! Schema (version 2, the same tables as SQLite's; keys compare bytewise,
//! `COLLATE "C"`, as in SQLite):
//! ```sql
//! meta(key TEXT PRIMARY KEY, value BIGINT)          -- schema_version, next_node_id
//! section_size(w, h, d)                             -- one row, fixed at creation
//! section(sx, sy, sz, save_enabled BOOLEAN, generated BOOLEAN) -- PRIMARY KEY (sx, sy, sz)
//! node(id BIGINT PRIMARY KEY, sx, sy, sz, data BYTEA)
//! quarantine(sx, sy, sz, id, data, reason)
//! module_value(space, key, data BYTEA)               -- PRIMARY KEY (space, key)
//! ```

use std::collections::HashMap;
use std::ops::Range;
use std::str::FromStr;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use buildat_voxel::geometry::{Pos, SectionSize};
use postgres::{Client, Config, NoTls, Statement};

use super::{
    ListValues, SCHEMA_VERSION, StorageCounts, StorageError, StorageSnapshot, StoredSection,
    StoredValue, ValueWrite, WorldStorage,
};

/// Connections the pool keeps open at most.
const POOL_SIZE: usize = 4;
/// How long a connection attempt may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long `get` waits for a connection when all are in use.
const CHECKOUT_TIMEOUT: Duration = Duration::from_secs(30);
/// The advisory lock held while a world's tables are made or checked, so
/// two servers opening one new database do not race.
const SCHEMA_LOCK: i64 = 0x62_7569_6c64_6174; // "buildat"

const SCHEMA: &str = "
    CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value BIGINT NOT NULL);
    CREATE TABLE IF NOT EXISTS section_size (w INTEGER NOT NULL, h INTEGER NOT NULL, d INTEGER NOT NULL);
    CREATE TABLE IF NOT EXISTS section (
        sx INTEGER NOT NULL, sy INTEGER NOT NULL, sz INTEGER NOT NULL,
        save_enabled BOOLEAN NOT NULL, generated BOOLEAN NOT NULL,
        PRIMARY KEY (sx, sy, sz));
    CREATE TABLE IF NOT EXISTS node (
        id BIGINT PRIMARY KEY, sx INTEGER NOT NULL, sy INTEGER NOT NULL,
        sz INTEGER NOT NULL, data BYTEA NOT NULL);
    CREATE INDEX IF NOT EXISTS node_by_section ON node (sx, sy, sz);
    CREATE TABLE IF NOT EXISTS quarantine (
        sx INTEGER NOT NULL, sy INTEGER NOT NULL, sz INTEGER NOT NULL,
        id BIGINT NOT NULL, data BYTEA NOT NULL, reason TEXT NOT NULL);
    CREATE TABLE IF NOT EXISTS module_value (
        space TEXT COLLATE \"C\" NOT NULL, key TEXT COLLATE \"C\" NOT NULL, data BYTEA NOT NULL,
        PRIMARY KEY (space, key));";

/// A section's row, then its nodes' rows, in one round trip (no row with
/// flags: not stored). Two plain index scans: cheaper to plan, at each
/// execution, than a join.
const LOAD: &str = "SELECT save_enabled, generated, NULL::BIGINT, NULL::BYTEA
        FROM section WHERE sx = $1 AND sy = $2 AND sz = $3
    UNION ALL
    SELECT NULL, NULL, id, data FROM node WHERE sx = $1 AND sy = $2 AND sz = $3";

/// A section saved whole in one statement, so one transaction: its row
/// upserted by position, its nodes upserted by id (a node that moved here
/// from another section moves with its row), the nodes it no longer holds
/// deleted. The sub-statements touch disjoint rows.
const SAVE: &str = "WITH s AS (
        INSERT INTO section (sx, sy, sz, save_enabled, generated) VALUES ($1, $2, $3, $4, $5)
        ON CONFLICT (sx, sy, sz) DO UPDATE
            SET save_enabled = EXCLUDED.save_enabled, generated = EXCLUDED.generated
    ), d AS (
        DELETE FROM node WHERE sx = $1 AND sy = $2 AND sz = $3 AND NOT (id = ANY($6::BIGINT[]))
    )
    INSERT INTO node (id, sx, sy, sz, data)
    SELECT n.id, $1, $2, $3, n.data FROM unnest($6::BIGINT[], $7::BYTEA[]) AS n(id, data)
    ON CONFLICT (id) DO UPDATE
        SET sx = EXCLUDED.sx, sy = EXCLUDED.sy, sz = EXCLUDED.sz, data = EXCLUDED.data";

const RESERVE: &str = "UPDATE meta SET value = value + $1 WHERE key = 'next_node_id'
    RETURNING value - $1";

const GET_VALUE: &str = "SELECT data FROM module_value WHERE space = $1 AND key = $2";

const GENERATED: &str = "SELECT generated FROM section WHERE sx = $1 AND sy = $2 AND sz = $3";

/// `url` with its password (in the user part or as a `password=`
/// parameter) replaced by `***`: what messages show.
pub fn redact_url(url: &str) -> String {
    let (head, query) = match url.split_once('?') {
        Some((head, query)) => (head, Some(query)),
        None => (url, None),
    };
    let mut out = match head.split_once("://") {
        Some((scheme, rest)) => match rest.rsplit_once('@') {
            Some((userinfo, host)) => match userinfo.split_once(':') {
                Some((user, _password)) => format!("{scheme}://{user}:***@{host}"),
                None => head.to_string(),
            },
            None => head.to_string(),
        },
        None => head.to_string(),
    };
    if let Some(query) = query {
        let params: Vec<String> = query
            .split('&')
            .map(|param| match param.split_once('=') {
                Some((key, _)) if key.eq_ignore_ascii_case("password") => format!("{key}=***"),
                _ => param.to_string(),
            })
            .collect();
        out.push('?');
        out.push_str(&params.join("&"));
    }
    out
}

/// The error with its causes (the `postgres` crate's own text is only
/// "db error" for what the server said).
pub fn message(error: &postgres::Error) -> String {
    let mut text = error.to_string();
    let mut cause = std::error::Error::source(error);
    while let Some(next) = cause {
        text.push_str(": ");
        text.push_str(&next.to_string());
        cause = next.source();
    }
    text
}

/// A connection and the statements prepared on it.
pub struct PgConnection {
    pub client: Client,
    statements: HashMap<&'static str, Statement>,
    /// It failed in a way that may have left it unusable: closed when
    /// handed back.
    broken: bool,
}

impl PgConnection {
    /// Marks the connection broken after `error` unless the server only
    /// refused a statement (an error it reports below FATAL).
    fn failed(&mut self, error: &postgres::Error) {
        let statement_only = error
            .as_db_error()
            .is_some_and(|db| !matches!(db.severity(), "FATAL" | "PANIC"));
        if !statement_only {
            self.broken = true;
        }
    }

    /// `sql` prepared on this connection (once).
    fn statement(&mut self, sql: &'static str) -> Result<Statement, postgres::Error> {
        if let Some(statement) = self.statements.get(sql) {
            return Ok(statement.clone());
        }
        let statement = self.client.prepare(sql)?;
        self.statements.insert(sql, statement.clone());
        Ok(statement)
    }
}

/// A small pool of connections to one database: at most [`POOL_SIZE`]
/// open; one that broke (closed, or an error other than a statement
/// refused) is dropped when handed back, and the next `get` connects anew.
pub struct PgPool {
    config: Config,
    /// The URL without its password.
    url: String,
    state: Mutex<PoolState>,
    returned: Condvar,
}

struct PoolState {
    idle: Vec<PgConnection>,
    /// Connections open, idle or handed out.
    open: usize,
}

impl PgPool {
    /// A pool for `url` (nothing is connected yet).
    pub fn new(url: &str) -> Result<Arc<Self>, StorageError> {
        let shown = redact_url(url);
        if !(url.starts_with("postgresql://") || url.starts_with("postgres://")) {
            return Err(StorageError::BadUrl {
                url: shown,
                reason: "expected postgresql://USER[:PASSWORD]@HOST[:PORT]/DATABASE".into(),
            });
        }
        let mut config = Config::from_str(url).map_err(|error| StorageError::BadUrl {
            url: shown.clone(),
            reason: error.to_string(),
        })?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        if config.get_user().is_none() {
            return Err(StorageError::BadUrl {
                url: shown,
                reason: "no user (postgresql://USER@HOST/DATABASE)".into(),
            });
        }
        if config.get_application_name().is_none() {
            config.application_name("buildat");
        }
        Ok(Arc::new(Self {
            config,
            url: shown,
            state: Mutex::new(PoolState {
                idle: Vec::new(),
                open: 0,
            }),
            returned: Condvar::new(),
        }))
    }

    /// The URL without its password.
    pub fn url(&self) -> &str {
        &self.url
    }

    fn error(&self, source: postgres::Error) -> StorageError {
        StorageError::Postgres {
            url: self.url.clone(),
            source,
        }
    }

    /// An idle connection, or a new one while fewer than [`POOL_SIZE`] are
    /// open, or the next one handed back.
    pub fn get(self: &Arc<Self>) -> Result<Pooled, StorageError> {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if let Some(connection) = state.idle.pop() {
                return Ok(Pooled {
                    pool: Arc::clone(self),
                    connection: Some(connection),
                });
            }
            if state.open < POOL_SIZE {
                state.open += 1;
                drop(state);
                return match self.config.connect(NoTls) {
                    Ok(client) => Ok(Pooled {
                        pool: Arc::clone(self),
                        connection: Some(PgConnection {
                            client,
                            statements: HashMap::new(),
                            broken: false,
                        }),
                    }),
                    Err(source) => {
                        self.forget_one();
                        Err(StorageError::Unreachable {
                            url: self.url.clone(),
                            source,
                        })
                    }
                };
            }
            let (next, timeout) = self
                .returned
                .wait_timeout(state, CHECKOUT_TIMEOUT)
                .unwrap_or_else(|p| p.into_inner());
            state = next;
            if timeout.timed_out() && state.idle.is_empty() && state.open >= POOL_SIZE {
                return Err(StorageError::Damaged(format!(
                    "{}: all {POOL_SIZE} connections stayed busy for {} s",
                    self.url,
                    CHECKOUT_TIMEOUT.as_secs()
                )));
            }
        }
    }

    fn forget_one(&self) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        state.open = state.open.saturating_sub(1);
        self.returned.notify_one();
    }
}

/// A connection out of the pool, handed back when dropped (or closed, if
/// it broke).
pub struct Pooled {
    pool: Arc<PgPool>,
    connection: Option<PgConnection>,
}

impl std::ops::Deref for Pooled {
    type Target = PgConnection;
    fn deref(&self) -> &PgConnection {
        self.connection.as_ref().expect("held until dropped")
    }
}

impl std::ops::DerefMut for Pooled {
    fn deref_mut(&mut self) -> &mut PgConnection {
        self.connection.as_mut().expect("held until dropped")
    }
}

impl Drop for Pooled {
    fn drop(&mut self) {
        let Some(connection) = self.connection.take() else {
            return;
        };
        if connection.broken || connection.client.is_closed() {
            drop(connection);
            self.pool.forget_one();
            return;
        }
        let mut state = self.pool.state.lock().unwrap_or_else(|p| p.into_inner());
        state.idle.push(connection);
        self.pool.returned.notify_one();
    }
}

/// The world in a PostgreSQL database.
pub struct PgStorage {
    pool: Arc<PgPool>,
    section_size: SectionSize,
}

impl PgStorage {
    /// Connects to `url` and opens its world (creating the tables, with
    /// `new_section_size`, in an empty database).
    pub fn open(url: &str, new_section_size: SectionSize) -> Result<Self, StorageError> {
        let pool = PgPool::new(url)?;
        let mut connection = pool.get()?;
        let (section_size, upgraded_from) =
            Self::prepare_schema(&mut connection.client, new_section_size).map_err(|error| {
                match error {
                    SchemaError::Postgres(source) => pool.error(source),
                    SchemaError::Storage(error) => error,
                }
            })?;
        drop(connection);
        if let Some(found) = upgraded_from {
            super::log_upgrade(pool.url(), found);
        }
        Ok(Self { pool, section_size })
    }

    /// The tables made or checked (and upgraded: the version they had),
    /// in one transaction; the world's section size.
    fn prepare_schema(
        client: &mut Client,
        new_section_size: SectionSize,
    ) -> Result<(SectionSize, Option<i64>), SchemaError> {
        let mut transaction = client.transaction()?;
        transaction.execute("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK])?;
        // Quiet the "already exists, skipping" notices of a second open.
        transaction.batch_execute("SET LOCAL client_min_messages = warning")?;
        transaction.batch_execute(SCHEMA)?;
        let version: Option<i64> = transaction
            .query_opt("SELECT value FROM meta WHERE key = 'schema_version'", &[])?
            .map(|row| row.get(0));
        let mut upgraded_from = None;
        match version {
            None => {
                transaction.execute(
                    "INSERT INTO meta (key, value) VALUES ('schema_version', $1), ('next_node_id', 1)",
                    &[&SCHEMA_VERSION],
                )?;
            }
            Some(found) => {
                if super::check_schema_version(found)? {
                    transaction.execute(
                        "UPDATE meta SET value = $1 WHERE key = 'schema_version'",
                        &[&SCHEMA_VERSION],
                    )?;
                    upgraded_from = Some(found);
                }
            }
        }
        let stored = transaction
            .query_opt("SELECT w, h, d FROM section_size", &[])?
            .map(|row| SectionSize([row.get(0), row.get(1), row.get(2)]));
        let section_size = match stored {
            Some(size) => size,
            None => {
                let [w, h, d] = new_section_size.0;
                transaction.execute(
                    "INSERT INTO section_size (w, h, d) VALUES ($1, $2, $3)",
                    &[&w, &h, &d],
                )?;
                new_section_size
            }
        };
        if section_size.0.iter().any(|s| *s <= 0) {
            return Err(StorageError::Damaged(format!("section size {:?}", section_size.0)).into());
        }
        transaction.commit()?;
        Ok((section_size, upgraded_from))
    }

    /// Runs `work` on a pooled connection, naming the database in errors.
    fn with<T>(
        &mut self,
        work: impl FnOnce(&mut PgConnection) -> Result<T, postgres::Error>,
    ) -> Result<T, StorageError> {
        let mut connection = self.pool.get()?;
        work(&mut connection).map_err(|source| {
            connection.failed(&source);
            self.pool.error(source)
        })
    }
}

/// What opening can fail with before the URL is added.
enum SchemaError {
    Postgres(postgres::Error),
    Storage(StorageError),
}

impl From<postgres::Error> for SchemaError {
    fn from(error: postgres::Error) -> Self {
        Self::Postgres(error)
    }
}

impl From<StorageError> for SchemaError {
    fn from(error: StorageError) -> Self {
        Self::Storage(error)
    }
}

impl WorldStorage for PgStorage {
    fn section_size(&self) -> SectionSize {
        self.section_size
    }

    fn location(&self) -> String {
        self.pool.url.clone()
    }

    fn load_section(&mut self, pos: Pos) -> Result<Option<StoredSection>, StorageError> {
        self.with(|c| pg_reads::load_section(c, pos))
    }

    fn save_section(&mut self, section: &StoredSection) -> Result<(), StorageError> {
        let [x, y, z] = section.pos;
        let ids: Vec<i64> = section.nodes.iter().map(|(id, _)| *id as i64).collect();
        let data: Vec<&[u8]> = section.nodes.iter().map(|(_, d)| d.as_slice()).collect();
        self.with(|c| {
            let statement = c.statement(SAVE)?;
            c.client.execute(
                &statement,
                &[
                    &x,
                    &y,
                    &z,
                    &section.save_enabled,
                    &section.generated,
                    &ids,
                    &data,
                ],
            )
        })?;
        Ok(())
    }

    fn reserve_node_ids(&mut self, count: u64) -> Result<Range<u64>, StorageError> {
        let count = i64::try_from(count)
            .map_err(|_| StorageError::Damaged(format!("reserving {count} node ids")))?;
        let start: i64 = self.with(|c| {
            let statement = c.statement(RESERVE)?;
            Ok(c.client.query_one(&statement, &[&count])?.get(0))
        })?;
        let start = start as u64;
        Ok(start..start + count as u64)
    }

    fn has_generated_section(&mut self, pos: Pos) -> Result<bool, StorageError> {
        let [x, y, z] = pos;
        self.with(|c| {
            let statement = c.statement(GENERATED)?;
            Ok(c.client
                .query_opt(&statement, &[&x, &y, &z])?
                .is_some_and(|row| row.get::<_, bool>(0)))
        })
    }

    fn quarantine_section(&mut self, pos: Pos, reason: &str) -> Result<(), StorageError> {
        let [x, y, z] = pos;
        self.with(|c| {
            let mut transaction = c.client.transaction()?;
            transaction.execute(
                "INSERT INTO quarantine (sx, sy, sz, id, data, reason)
                 SELECT sx, sy, sz, id, data, $4 FROM node WHERE sx = $1 AND sy = $2 AND sz = $3",
                &[&x, &y, &z, &reason],
            )?;
            transaction.execute(
                "DELETE FROM node WHERE sx = $1 AND sy = $2 AND sz = $3",
                &[&x, &y, &z],
            )?;
            transaction.execute(
                "DELETE FROM section WHERE sx = $1 AND sy = $2 AND sz = $3",
                &[&x, &y, &z],
            )?;
            transaction.commit()
        })
    }

    fn section_positions(&mut self) -> Result<Vec<Pos>, StorageError> {
        self.with(pg_reads::section_positions)
    }

    fn counts(&mut self) -> Result<StorageCounts, StorageError> {
        self.with(|c| {
            let row = c.client.query_one(
                "SELECT (SELECT count(*) FROM section), (SELECT count(*) FROM node),
                        (SELECT count(*) FROM module_value)",
                &[],
            )?;
            Ok(StorageCounts {
                sections: row.get::<_, i64>(0) as u64,
                nodes: row.get::<_, i64>(1) as u64,
                values: row.get::<_, i64>(2) as u64,
            })
        })
    }

    fn next_node_id(&mut self) -> Result<u64, StorageError> {
        self.with(pg_reads::next_node_id)
    }

    fn snapshot(&mut self) -> Result<Box<dyn StorageSnapshot>, StorageError> {
        let mut connection = self.pool.get()?;
        // One transaction seeing the database as of its first statement,
        // whatever commits after.
        let pinned = connection
            .client
            .batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            .and_then(|()| pg_reads::next_node_id(&mut connection).map(|_| ()));
        if let Err(source) = pinned {
            connection.failed(&source);
            connection.broken = true;
            return Err(self.pool.error(source));
        }
        Ok(Box::new(PgSnapshot {
            pool: Arc::clone(&self.pool),
            connection,
            section_size: self.section_size,
        }))
    }

    fn set_empty_section_size(&mut self, size: SectionSize) -> Result<(), StorageError> {
        let counts = self.counts()?;
        if counts != StorageCounts::default() {
            return Err(super::not_empty(&self.location(), counts));
        }
        let [w, h, d] = size.0;
        self.with(|c| {
            let mut transaction = c.client.transaction()?;
            transaction.execute("DELETE FROM section_size", &[])?;
            transaction.execute(
                "INSERT INTO section_size (w, h, d) VALUES ($1, $2, $3)",
                &[&w, &h, &d],
            )?;
            transaction.commit()
        })?;
        self.section_size = size;
        Ok(())
    }

    fn raise_next_node_id(&mut self, next: u64) -> Result<(), StorageError> {
        let next = i64::try_from(next)
            .map_err(|_| StorageError::Damaged(format!("node id {next} out of range")))?;
        self.with(|c| {
            c.client.execute(
                "UPDATE meta SET value = GREATEST(value, $1) WHERE key = 'next_node_id'",
                &[&next],
            )?;
            Ok(())
        })
    }

    fn get_value(&mut self, space: &str, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
        self.with(|c| {
            let statement = c.statement(GET_VALUE)?;
            Ok(c.client
                .query_opt(&statement, &[&space, &key])?
                .map(|row| row.get(0)))
        })
    }

    fn put_values(&mut self, writes: &[ValueWrite]) -> Result<bool, StorageError> {
        self.with(|c| {
            let mut transaction = c.client.transaction()?;
            for write in writes {
                let changed = match (&write.value, write.only_if_absent) {
                    (Some(value), true) => transaction.execute(
                        "INSERT INTO module_value (space, key, data) VALUES ($1, $2, $3)
                         ON CONFLICT (space, key) DO NOTHING",
                        &[&write.space, &write.key, value],
                    )?,
                    (Some(value), false) => transaction.execute(
                        "INSERT INTO module_value (space, key, data) VALUES ($1, $2, $3)
                         ON CONFLICT (space, key) DO UPDATE SET data = EXCLUDED.data",
                        &[&write.space, &write.key, value],
                    )?,
                    (None, _) => transaction.execute(
                        "DELETE FROM module_value WHERE space = $1 AND key = $2",
                        &[&write.space, &write.key],
                    )?,
                };
                if super::refused_claim(write, changed as usize) {
                    // Dropped uncommitted: rolled back.
                    return Ok(false);
                }
            }
            transaction.commit()?;
            Ok(true)
        })
    }

    fn list_values(&mut self, query: &ListValues) -> Result<Vec<StoredValue>, StorageError> {
        self.with(|c| pg_reads::values(c, Some(query)))
    }

    fn all_values(&mut self) -> Result<Vec<StoredValue>, StorageError> {
        self.with(|c| pg_reads::values(c, None))
    }
}

/// What the backend and its snapshots read alike.
mod pg_reads {
    use super::*;

    pub fn load_section(
        c: &mut PgConnection,
        pos: Pos,
    ) -> Result<Option<StoredSection>, postgres::Error> {
        let [x, y, z] = pos;
        let statement = c.statement(LOAD)?;
        let rows = c.client.query(&statement, &[&x, &y, &z])?;
        let mut flags = None;
        let mut nodes = Vec::with_capacity(rows.len());
        for row in &rows {
            match row.get::<_, Option<i64>>(2) {
                Some(id) => nodes.push((id as u64, row.get(3))),
                None => flags = Some((row.get(0), row.get(1))),
            }
        }
        let Some((save_enabled, generated)) = flags else {
            // Nodes without their section row: a section is written whole,
            // so this is one quarantined or never saved.
            return Ok(None);
        };
        nodes.sort_unstable_by_key(|(id, _)| *id);
        Ok(Some(StoredSection {
            pos,
            save_enabled,
            generated,
            nodes,
        }))
    }

    pub fn section_positions(c: &mut PgConnection) -> Result<Vec<Pos>, postgres::Error> {
        Ok(c.client
            .query("SELECT sx, sy, sz FROM section ORDER BY sy, sz, sx", &[])?
            .iter()
            .map(|row| [row.get(0), row.get(1), row.get(2)])
            .collect())
    }

    pub fn next_node_id(c: &mut PgConnection) -> Result<u64, postgres::Error> {
        Ok(c.client
            .query_one("SELECT value FROM meta WHERE key = 'next_node_id'", &[])?
            .get::<_, i64>(0) as u64)
    }

    /// The values `query` asks for, or every value (by space and key).
    pub fn values(
        c: &mut PgConnection,
        query: Option<&ListValues>,
    ) -> Result<Vec<StoredValue>, postgres::Error> {
        let rows = match query {
            None => c.client.query(
                "SELECT space, key, data FROM module_value ORDER BY space, key",
                &[],
            )?,
            Some(query) => {
                let limit = i64::from(query.limit.min(buildat_voxelworld_api::MAX_VALUES_LISTED));
                c.client.query(
                    "SELECT space, key, data FROM module_value
                     WHERE space = $1 AND key > $2 AND substr(key, 1, length($3)) = $3
                     ORDER BY key LIMIT $4",
                    &[
                        &query.space,
                        &query.after.as_deref().unwrap_or(""),
                        &query.key_prefix,
                        &limit,
                    ],
                )?
            }
        };
        Ok(rows
            .iter()
            .map(|row| StoredValue {
                space: row.get(0),
                key: row.get(1),
                value: row.get(2),
            })
            .collect())
    }
}

/// A repeatable-read, read-only transaction on a pooled connection of its
/// own; rolled back when dropped.
struct PgSnapshot {
    pool: Arc<PgPool>,
    connection: Pooled,
    section_size: SectionSize,
}

impl PgSnapshot {
    fn read<T>(
        &mut self,
        work: impl FnOnce(&mut PgConnection) -> Result<T, postgres::Error>,
    ) -> Result<T, StorageError> {
        work(&mut self.connection).map_err(|source| {
            self.connection.failed(&source);
            self.pool.error(source)
        })
    }
}

impl StorageSnapshot for PgSnapshot {
    fn section_size(&self) -> SectionSize {
        self.section_size
    }

    fn location(&self) -> String {
        self.pool.url.clone()
    }

    fn section_positions(&mut self) -> Result<Vec<Pos>, StorageError> {
        self.read(pg_reads::section_positions)
    }

    fn load_section(&mut self, pos: Pos) -> Result<Option<StoredSection>, StorageError> {
        self.read(|c| pg_reads::load_section(c, pos))
    }

    fn next_node_id(&mut self) -> Result<u64, StorageError> {
        self.read(pg_reads::next_node_id)
    }

    fn all_values(&mut self) -> Result<Vec<StoredValue>, StorageError> {
        self.read(|c| pg_reads::values(c, None))
    }
}

impl Drop for PgSnapshot {
    fn drop(&mut self) {
        // Back in the pool outside any transaction, or closed.
        if self.connection.client.batch_execute("ROLLBACK").is_err() {
            self.connection.broken = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_show() {
        assert_eq!(
            redact_url("postgresql://me:secret@db.example:5433/world?sslmode=disable"),
            "postgresql://me:***@db.example:5433/world?sslmode=disable"
        );
        assert_eq!(
            redact_url("postgresql://me@/world?host=/run/pg&password=secret"),
            "postgresql://me@/world?host=/run/pg&password=***"
        );
        assert_eq!(
            redact_url("postgres://me:p@ss@host/db"),
            "postgres://me:***@host/db"
        );
        assert_eq!(redact_url("postgresql://host/db"), "postgresql://host/db");
    }

    #[test]
    fn bad_urls_are_named_without_their_password() {
        let error = PgStorage::open("mysql://me:secret@host/db", SectionSize::default())
            .err()
            .expect("refused")
            .to_string();
        assert!(error.contains("mysql://me:***@host/db"), "{error}");
        assert!(!error.contains("secret"), "{error}");
        let error = PgStorage::open("postgresql://host/db", SectionSize::default())
            .err()
            .expect("no user")
            .to_string();
        assert!(error.contains("no user"), "{error}");
    }

    #[test]
    fn what_the_server_says_is_shown() {
        let Some(admin) = buildat_test_pg::test_cluster() else {
            return;
        };
        let error = PgStorage::open(
            &buildat_test_pg::with_database(&admin, "buildat_no_such_database"),
            SectionSize::default(),
        )
        .err()
        .expect("no such database")
        .to_string();
        assert!(
            error.contains("database \"buildat_no_such_database\" does not exist"),
            "{error}"
        );
    }

    #[test]
    fn a_broken_connection_is_replaced_at_the_next_use() {
        let Some(world) = crate::storage::testing::postgres_world() else {
            return;
        };
        let crate::storage::StorageLocation::Postgres(url) = &world.location else {
            unreachable!("a PostgreSQL world");
        };
        let mut storage = PgStorage::open(url, SectionSize::default()).unwrap();
        let section = StoredSection {
            pos: [4, 5, 6],
            save_enabled: true,
            generated: true,
            nodes: vec![(1, b"one".to_vec())],
        };
        storage.save_section(&section).unwrap();
        // The server ends the world's connection (as a restart would).
        let mut admin = Client::connect(url, NoTls).unwrap();
        let ended: i64 = admin
            .query_one(
                "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                 WHERE datname = current_database() AND pid <> pg_backend_pid()) AS t",
                &[],
            )
            .unwrap()
            .get(0);
        assert_eq!(ended, 1, "the world's one connection");
        // The first use may fail on the dead connection; then it is
        // dropped, and the next use connects again.
        let first = storage.load_section([4, 5, 6]);
        if let Err(error) = &first {
            assert!(error.to_string().contains(&redact_url(url)), "{error}");
        }
        assert_eq!(storage.load_section([4, 5, 6]).unwrap(), Some(section));
        assert_eq!(storage.reserve_node_ids(2).unwrap(), 1..3);
    }

    #[test]
    fn a_server_that_is_down_is_named() {
        // Port 1 on loopback: nothing listens there.
        let error = PgStorage::open(
            "postgresql://me:secret@127.0.0.1:1/world",
            SectionSize::default(),
        )
        .err()
        .expect("unreachable")
        .to_string();
        assert!(
            error.contains(
                "cannot connect to the world database postgresql://me:***@127.0.0.1:1/world"
            ),
            "{error}"
        );
        assert!(!error.contains("secret"), "{error}");
    }
}
