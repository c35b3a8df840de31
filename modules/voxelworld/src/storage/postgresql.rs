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
//! saves), sections and values written in one transaction
//! (`save_together`), and the URL as shown in messages (its password
//! hidden).
//! Also how a connection is made: the password from a file rather than
//! the URL (`passfile=PATH` in the URL, else `PGPASSFILE`, else
//! `~/.pgpass`, in libpq's format and with its rule that a file others
//! can read is ignored; a relative path is the world directory's), and
//! TLS (rustls, the server's certificate checked against the system's
//! roots or `sslrootcert=PATH`) to every server that is not local (a Unix
//! socket or a loopback address): plaintext there only with
//! `sslmode=disable`, said aloud in a warning.
//! Does not own: what sections and nodes mean (`world.rs`), when saves
//! happen.
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

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use buildat_voxel::geometry::{Pos, SectionSize};
use postgres::config::{Host, SslMode};
use postgres::{Client, Config, NoTls, Statement};
use tokio_postgres_rustls::MakeRustlsConnect;

use super::{
    ListValues, LogBlock, SCHEMA_VERSION, StorageCounts, StorageError, StorageSnapshot,
    StoredSection, StoredValue, ValueWrite, WorldStorage,
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
        PRIMARY KEY (space, key));
    CREATE TABLE IF NOT EXISTS rollback_block (
        t0 BIGINT NOT NULL, t1 BIGINT NOT NULL, ax INTEGER NOT NULL,
        ay INTEGER NOT NULL, az INTEGER NOT NULL, data BYTEA NOT NULL);
    CREATE INDEX IF NOT EXISTS rollback_block_by_end ON rollback_block (t1);";

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

/// Whether connections to a database speak TLS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsChoice {
    /// A Unix socket or a loopback address: plaintext (unless
    /// `sslmode=require` over loopback).
    Local,
    /// Another machine (or `sslmode=require`): TLS, the certificate
    /// checked, or no connection.
    Tls,
    /// Another machine in plaintext: `sslmode=disable`, asked for.
    PlaintextAskedFor,
}

/// Whether a connection to `config`'s hosts speaks TLS, with the URL's
/// `sslmode` (`None`: not given). Local: every host a Unix socket or a
/// loopback name or address (and every `hostaddr` loopback). A local
/// server speaks plaintext unless `sslmode=require` (or `verify-*`) over
/// TCP; any other speaks TLS, `prefer` taken as `require` (an attacker on
/// the path would otherwise answer "no TLS"), unless `sslmode=disable`.
pub fn get_tls_choice(config: &Config, sslmode: Option<&str>) -> TlsChoice {
    let unix_only = !config.get_hosts().is_empty()
        && config.get_hostaddrs().is_empty()
        && config
            .get_hosts()
            .iter()
            .all(|h| !matches!(h, Host::Tcp(_)));
    let local = config.get_hosts().iter().all(|host| match host {
        Host::Tcp(name) => is_loopback_name(name),
        Host::Unix(_) => true,
    }) && config
        .get_hostaddrs()
        .iter()
        .all(|addr| addr.to_canonical().is_loopback());
    match sslmode {
        Some("disable") if !local => TlsChoice::PlaintextAskedFor,
        Some("disable") => TlsChoice::Local,
        // PostgreSQL speaks no TLS on a Unix socket.
        _ if unix_only => TlsChoice::Local,
        None | Some("prefer") if local => TlsChoice::Local,
        _ => TlsChoice::Tls,
    }
}

/// `localhost` or a loopback address (a name under `.localhost` is not
/// trusted to resolve to loopback everywhere).
fn is_loopback_name(name: &str) -> bool {
    let name = name.trim_start_matches('[').trim_end_matches(']');
    if name.eq_ignore_ascii_case("localhost") {
        return true;
    }
    name.parse::<IpAddr>()
        .is_ok_and(|addr| addr.to_canonical().is_loopback())
}

/// A `postgresql://` URL taken apart: the driver's config, and what the
/// driver does not read itself.
struct ParsedUrl {
    config: Config,
    sslmode: Option<String>,
    sslrootcert: Option<PathBuf>,
    passfile: Option<PathBuf>,
}

/// `%XX` escapes decoded (a URL's parameter value).
fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(hex) = text.get(i + 1..i + 3)
            && let Ok(byte) = u8::from_str_radix(hex, 16)
        {
            out.push(byte);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn parse_url(url: &str, shown: &str) -> Result<ParsedUrl, StorageError> {
    let (head, query) = match url.split_once('?') {
        Some((head, query)) => (head, query),
        None => (url, ""),
    };
    let (mut sslmode, mut sslrootcert, mut passfile) = (None, None, None);
    let mut kept = Vec::new();
    for param in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = param.split_once('=').unwrap_or((param, ""));
        match key {
            "passfile" => passfile = Some(PathBuf::from(percent_decoded(value))),
            "sslrootcert" => sslrootcert = Some(PathBuf::from(percent_decoded(value))),
            "sslmode" => {
                let mode = percent_decoded(value);
                // The certificate is always checked: libpq's verify modes
                // are the driver's require.
                let driver = match mode.as_str() {
                    "verify-ca" | "verify-full" => "require",
                    other => other,
                };
                kept.push(format!("sslmode={driver}"));
                sslmode = Some(mode);
            }
            _ => kept.push(param.to_string()),
        }
    }
    let rebuilt = if kept.is_empty() {
        head.to_string()
    } else {
        format!("{head}?{}", kept.join("&"))
    };
    let config = Config::from_str(&rebuilt).map_err(|error| StorageError::BadUrl {
        url: shown.to_string(),
        reason: error.to_string(),
    })?;
    Ok(ParsedUrl {
        config,
        sslmode,
        sslrootcert,
        passfile,
    })
}

/// `url` with a relative `passfile=` or `sslrootcert=` made relative to
/// `world` (the directory of the world whose setting it is).
pub fn resolve_files(url: &str, world: &Path) -> String {
    let Some((head, query)) = url.split_once('?') else {
        return url.to_string();
    };
    let params: Vec<String> = query
        .split('&')
        .map(|param| match param.split_once('=') {
            Some((key @ ("passfile" | "sslrootcert"), value))
                if !value.is_empty() && Path::new(&percent_decoded(value)).is_relative() =>
            {
                let path = world.join(percent_decoded(value));
                let text = path.display().to_string();
                format!("{key}={}", text.replace('%', "%25").replace('&', "%26"))
            }
            _ => param.to_string(),
        })
        .collect();
    format!("{head}?{}", params.join("&"))
}

/// The password file to read: `passfile=` in the URL, else
/// `PGPASSFILE`, else `~/.pgpass` (libpq's order).
fn password_file(named: Option<&Path>) -> Option<PathBuf> {
    if let Some(path) = named {
        return Some(path.to_path_buf());
    }
    if let Some(path) = std::env::var_os("PGPASSFILE").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(path));
    }
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(|home| PathBuf::from(home).join(".pgpass"))
}

/// One field of a password file's line, `\:` and `\\` unescaped; the
/// rest of the line.
fn pgpass_field(line: &str) -> (String, Option<&str>) {
    let mut field = String::new();
    let mut chars = line.char_indices();
    while let Some((at, c)) = chars.next() {
        match c {
            '\\' => {
                if let Some((_, next)) = chars.next() {
                    field.push(next);
                }
            }
            ':' => return (field, Some(&line[at + 1..])),
            c => field.push(c),
        }
    }
    (field, None)
}

/// The password for `host`, `port`, `database`, `user` in a password
/// file's `text` (`HOST:PORT:DATABASE:USER:PASSWORD` lines, `*` matching
/// anything in the first four, the first match wins).
pub fn get_pgpass_password(
    text: &str,
    host: &str,
    port: u16,
    database: &str,
    user: &str,
) -> Option<String> {
    let port = port.to_string();
    for line in text.lines() {
        let line = line.trim_end_matches('\r');
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let mut rest = Some(line);
        let mut fields = Vec::with_capacity(5);
        while let Some(remaining) = rest {
            if fields.len() == 4 {
                // The password is the rest, unescaped.
                let mut password = String::new();
                let mut chars = remaining.chars();
                while let Some(c) = chars.next() {
                    if c == '\\' {
                        if let Some(next) = chars.next() {
                            password.push(next);
                        }
                    } else {
                        password.push(c);
                    }
                }
                fields.push(password);
                break;
            }
            let (field, next) = pgpass_field(remaining);
            fields.push(field);
            rest = next;
        }
        let [h, p, d, u, password] = fields.as_slice() else {
            continue;
        };
        let matches = |pattern: &str, value: &str| pattern == "*" || pattern == value;
        if matches(h, host) && matches(p, &port) && matches(d, database) && matches(u, user) {
            return Some(password.clone());
        }
    }
    None
}

/// The password a password file holds for `config`'s first host (a
/// Unix socket in the default directory is `localhost`, as for libpq);
/// `None` when there is no file or no line for it. A file that group or
/// others can read is ignored with a warning, as libpq does.
fn password_from_file(config: &Config, named: Option<&Path>) -> Option<String> {
    let path = password_file(named)?;
    let metadata = std::fs::metadata(&path).ok()?;
    {
        use std::os::unix::fs::PermissionsExt;
        if metadata.permissions().mode() & 0o077 != 0 {
            buildat_interface::log::warn!(
                "password file {} is readable by other users: ignored (chmod 600 it)",
                path.display()
            );
            return None;
        }
    }
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(error) => {
            buildat_interface::log::warn!("password file {}: {error}", path.display());
            return None;
        }
    };
    let host = match (config.get_hosts().first(), config.get_hostaddrs().first()) {
        (Some(Host::Tcp(name)), _) => name.clone(),
        (Some(Host::Unix(dir)), _) => {
            let dir = dir.display().to_string();
            if ["/run/postgresql", "/var/run/postgresql", "/tmp"].contains(&dir.as_str()) {
                "localhost".to_string()
            } else {
                dir
            }
        }
        (None, Some(addr)) => addr.to_string(),
        (None, None) => "localhost".to_string(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let user = config.get_user()?;
    let database = config.get_dbname().unwrap_or(user);
    get_pgpass_password(&text, &host, port, database, user)
}

/// The rustls connector for TLS to a database: the system's trusted
/// roots, or those in `sslrootcert`.
fn tls_connector(
    sslrootcert: Option<&Path>,
    shown: &str,
) -> Result<MakeRustlsConnect, StorageError> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let bad = |reason: String| StorageError::BadUrl {
        url: shown.to_string(),
        reason,
    };
    let mut roots = rustls::RootCertStore::empty();
    match sslrootcert {
        Some(path) => {
            let certs = CertificateDer::pem_file_iter(path)
                .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
                .map_err(|e| bad(format!("sslrootcert {}: {e}", path.display())))?;
            let (added, _) = roots.add_parsable_certificates(certs);
            if added == 0 {
                return Err(bad(format!(
                    "sslrootcert {}: no certificate in it",
                    path.display()
                )));
            }
        }
        None => {
            let found = rustls_native_certs::load_native_certs();
            roots.add_parsable_certificates(found.certs);
            if roots.is_empty() {
                return Err(bad(
                    "TLS to a server that is not local needs trusted roots, and this system has \
                     none: name the server's CA with sslrootcert=PATH"
                        .into(),
                ));
            }
        }
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| bad(format!("TLS: {e}")))?
    .with_root_certificates(roots)
    .with_no_client_auth();
    Ok(MakeRustlsConnect::new(config))
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
    /// `None`: plaintext (a local server, or `sslmode=disable`).
    tls: Option<MakeRustlsConnect>,
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
        let ParsedUrl {
            mut config,
            sslmode,
            sslrootcert,
            passfile,
        } = parse_url(url, &shown)?;
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
        if config.get_password().is_none()
            && let Some(password) = password_from_file(&config, passfile.as_deref())
        {
            config.password(password);
        }
        let tls = match get_tls_choice(&config, sslmode.as_deref()) {
            TlsChoice::Local => {
                config.ssl_mode(SslMode::Disable);
                None
            }
            TlsChoice::PlaintextAskedFor => {
                buildat_interface::log::warn!(
                    "{shown}: plaintext to a server that is not local (sslmode=disable): \
                     anyone on the path reads the password and the world"
                );
                config.ssl_mode(SslMode::Disable);
                None
            }
            TlsChoice::Tls => {
                config.ssl_mode(SslMode::Require);
                Some(tls_connector(sslrootcert.as_deref(), &shown)?)
            }
        };
        Ok(Arc::new(Self {
            config,
            tls,
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

    /// Whether its connections speak TLS.
    pub fn uses_tls(&self) -> bool {
        self.tls.is_some()
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
                let connected = match &self.tls {
                    Some(tls) => self.config.connect(tls.clone()),
                    None => self.config.connect(NoTls),
                };
                return match connected {
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
        self.with(|c| {
            let statement = c.statement(SAVE)?;
            save_row(&mut c.client, &statement, section)
        })?;
        Ok(())
    }

    fn save_together(
        &mut self,
        sections: &[StoredSection],
        writes: &[ValueWrite],
    ) -> Result<bool, StorageError> {
        self.with(|c| {
            let save = c.statement(SAVE)?;
            let statements = [
                c.statement(CLAIM_VALUE)?,
                c.statement(PUT_VALUE)?,
                c.statement(DELETE_VALUE)?,
            ];
            let mut transaction = c.client.transaction()?;
            for section in sections {
                save_row(&mut transaction, &save, section)?;
            }
            if !apply_writes(&mut transaction, &statements, writes)? {
                // Dropped uncommitted: rolled back.
                return Ok(false);
            }
            transaction.commit()?;
            Ok(true)
        })
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
        self.save_together(&[], writes)
    }

    fn list_values(&mut self, query: &ListValues) -> Result<Vec<StoredValue>, StorageError> {
        self.with(|c| pg_reads::values(c, Some(query)))
    }

    fn all_values(&mut self) -> Result<Vec<StoredValue>, StorageError> {
        self.with(|c| pg_reads::values(c, None))
    }

    fn append_log(&mut self, blocks: &[LogBlock]) -> Result<(), StorageError> {
        self.with(|c| {
            let mut transaction = c.client.transaction()?;
            let insert = transaction.prepare(
                "INSERT INTO rollback_block (t0, t1, ax, ay, az, data) VALUES ($1, $2, $3, $4, $5, $6)",
            )?;
            for b in blocks {
                let [ax, ay, az] = b.area;
                transaction.execute(&insert, &[&b.t0, &b.t1, &ax, &ay, &az, &b.data])?;
            }
            transaction.commit()
        })
    }

    fn read_log(
        &mut self,
        since: i64,
        areas: [[i32; 3]; 2],
    ) -> Result<Vec<LogBlock>, StorageError> {
        let [[x0, y0, z0], [x1, y1, z1]] = areas;
        self.with(|c| {
            let rows = c.client.query(
                "SELECT t0, t1, ax, ay, az, data FROM rollback_block WHERE t1 >= $1
                 AND ax BETWEEN $2 AND $3 AND ay BETWEEN $4 AND $5 AND az BETWEEN $6 AND $7
                 ORDER BY t0",
                &[&since, &x0, &x1, &y0, &y1, &z0, &z1],
            )?;
            Ok(rows.into_iter().map(log_block_of_row).collect())
        })
    }

    fn prune_log(&mut self, before: i64) -> Result<u64, StorageError> {
        self.with(|c| {
            c.client
                .execute("DELETE FROM rollback_block WHERE t1 < $1", &[&before])
        })
    }

    fn prune_log_to(&mut self, max_bytes: u64) -> Result<u64, StorageError> {
        let max = i64::try_from(max_bytes).unwrap_or(i64::MAX);
        self.with(|c| {
            c.client
                .execute(super::prune_to_sql!("ctid", "$1"), &[&max])
        })
    }

    fn log_page(&mut self, skip: u64, limit: usize) -> Result<Vec<LogBlock>, StorageError> {
        self.with(|c| pg_reads::log_page(c, skip, limit))
    }
}

/// A value claimed: written only where the key holds nothing.
const CLAIM_VALUE: &str = "INSERT INTO module_value (space, key, data) VALUES ($1, $2, $3)
    ON CONFLICT (space, key) DO NOTHING";
const PUT_VALUE: &str = "INSERT INTO module_value (space, key, data) VALUES ($1, $2, $3)
    ON CONFLICT (space, key) DO UPDATE SET data = EXCLUDED.data";
const DELETE_VALUE: &str = "DELETE FROM module_value WHERE space = $1 AND key = $2";

/// Applies value writes in order inside `transaction` (`statements`: the
/// connection's [`CLAIM_VALUE`], [`PUT_VALUE`] and [`DELETE_VALUE`]);
/// false (stopped there) when a claim finds its key taken, and the caller
/// drops the transaction.
fn apply_writes(
    transaction: &mut postgres::Transaction<'_>,
    statements: &[Statement; 3],
    writes: &[ValueWrite],
) -> Result<bool, postgres::Error> {
    let [claim, put, delete] = statements;
    for write in writes {
        let changed = match (&write.value, write.only_if_absent) {
            (Some(value), true) => {
                transaction.execute(claim, &[&write.space, &write.key, value])?
            }
            (Some(value), false) => transaction.execute(put, &[&write.space, &write.key, value])?,
            (None, _) => transaction.execute(delete, &[&write.space, &write.key])?,
        };
        if super::refused_claim(write, changed as usize) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// What the backend and its snapshots read alike.
mod pg_reads {
    use super::*;

    /// The rollback log's blocks by their place in the table (stable
    /// within a snapshot's transaction), `skip` in, at most `limit`.
    pub fn log_page(
        c: &mut PgConnection,
        skip: u64,
        limit: usize,
    ) -> Result<Vec<LogBlock>, postgres::Error> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let skip = i64::try_from(skip).unwrap_or(i64::MAX);
        let rows = c.client.query(
            "SELECT t0, t1, ax, ay, az, data FROM rollback_block ORDER BY ctid LIMIT $1 OFFSET $2",
            &[&limit, &skip],
        )?;
        Ok(rows.into_iter().map(log_block_of_row).collect())
    }

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

    fn log_page(&mut self, skip: u64, limit: usize) -> Result<Vec<LogBlock>, StorageError> {
        self.read(|c| pg_reads::log_page(c, skip, limit))
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

/// Runs the `SAVE` statement for one section (its row and its nodes) on a
/// connection or inside a transaction.
fn save_row(
    client: &mut impl postgres::GenericClient,
    save: &Statement,
    section: &StoredSection,
) -> Result<u64, postgres::Error> {
    let [x, y, z] = section.pos;
    let ids: Vec<i64> = section.nodes.iter().map(|(id, _)| *id as i64).collect();
    let data: Vec<&[u8]> = section.nodes.iter().map(|(_, d)| d.as_slice()).collect();
    client.execute(
        save,
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
}

/// A `rollback_block` row read as `t0, t1, ax, ay, az, data`.
fn log_block_of_row(row: postgres::Row) -> LogBlock {
    LogBlock {
        t0: row.get(0),
        t1: row.get(1),
        area: [row.get(2), row.get(3), row.get(4)],
        data: row.get(5),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::StorageCounts;

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

    fn choice(url: &str) -> TlsChoice {
        let parsed = parse_url(url, url).unwrap();
        get_tls_choice(&parsed.config, parsed.sslmode.as_deref())
    }

    #[test]
    fn tls_is_spoken_to_every_server_that_is_not_local() {
        for local in [
            "postgresql://me@/w?host=/run/postgresql",
            "postgresql://me@localhost/w",
            "postgresql://me@127.0.0.1:5433/w",
            "postgresql://me@127.9.9.9/w",
            "postgresql://me@[::1]/w",
            "postgresql://me@/w?host=/run/postgresql&sslmode=require",
            "postgresql://me@localhost/w?sslmode=prefer",
            "postgresql://me@/w?host=/run/postgresql&sslmode=disable",
        ] {
            assert_eq!(choice(local), TlsChoice::Local, "{local}");
        }
        for remote in [
            "postgresql://me@db.example/w",
            "postgresql://me:pw@10.0.0.5/w",
            "postgresql://me@[2001:db8::1]/w",
            "postgresql://me@db.example/w?sslmode=prefer",
            "postgresql://me@db.example/w?sslmode=verify-full",
            "postgresql://me@localhost/w?sslmode=require",
            // A loopback address under a name that is not: TLS.
            "postgresql://me@db.example/w?hostaddr=127.0.0.1",
            "postgresql://me@localhost,db.example/w",
            "postgresql://me@db.localhost/w",
        ] {
            assert_eq!(choice(remote), TlsChoice::Tls, "{remote}");
        }
        assert_eq!(
            choice("postgresql://me@db.example/w?sslmode=disable"),
            TlsChoice::PlaintextAskedFor
        );
        let pool = PgPool::new("postgresql://me@db.example/w").unwrap();
        assert!(pool.uses_tls());
        assert_eq!(pool.config.get_ssl_mode(), SslMode::Require);
        assert!(
            !PgPool::new("postgresql://me@127.0.0.1/w")
                .unwrap()
                .uses_tls()
        );
    }

    #[test]
    fn a_server_that_is_not_local_never_reads_the_password_in_plaintext() {
        use std::io::{Read, Write};
        // A server on loopback under a name that is not local, answering
        // "no TLS" to the client's request for it (as an attacker on the
        // path would).
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            let mut request = [0u8; 8];
            stream.read_exact(&mut request).unwrap();
            stream.write_all(b"N").unwrap();
            let mut rest = Vec::new();
            let _ = stream.read_to_end(&mut rest);
            (request, rest)
        });
        let error = PgStorage::open(
            &format!("postgresql://me:secret@db.example:{port}/w?hostaddr=127.0.0.1"),
            SectionSize::default(),
        )
        .err()
        .expect("refused without TLS")
        .to_string();
        let (request, rest) = server.join().unwrap();
        // SSLRequest: length 8, code 80877103; then nothing.
        assert_eq!(request, [0, 0, 0, 8, 4, 210, 22, 47]);
        assert!(rest.is_empty(), "sent after the refusal: {rest:?}");
        assert!(!error.contains("secret"), "{error}");
        assert!(error.contains("TLS"), "{error}");
    }

    #[test]
    fn password_file_lines_match_as_libpq_reads_them() {
        let text = "# comment\n\
                    other:5432:w:me:wrong\n\
                    db.example:5433:w:me:not this port\n\
                    db.example:*:w:me:pa\\:ss\\\\word:x\n\
                    *:*:*:*:fallback\n";
        assert_eq!(
            get_pgpass_password(text, "db.example", 5432, "w", "me").as_deref(),
            Some("pa:ss\\word:x")
        );
        assert_eq!(
            get_pgpass_password(text, "elsewhere", 1, "d", "u").as_deref(),
            Some("fallback")
        );
        assert_eq!(
            get_pgpass_password("h\\:x:1:d:u:p\n", "h:x", 1, "d", "u").as_deref(),
            Some("p")
        );
        assert_eq!(get_pgpass_password("a:b:c\n", "a", 1, "c", "u"), None);
    }

    #[test]
    fn the_password_comes_from_a_file_not_the_url() {
        use std::os::unix::fs::PermissionsExt;
        let Some(world) = crate::storage::testing::postgres_world() else {
            return;
        };
        let crate::storage::StorageLocation::Postgres(url) = &world.location else {
            unreachable!("a PostgreSQL world");
        };
        let dir = tempfile::tempdir().unwrap();
        let parsed = parse_url(url, url).unwrap();
        let Some(Host::Unix(socket)) = parsed.config.get_hosts().first() else {
            panic!("the test cluster is on a Unix socket: {url}");
        };
        let user = parsed.config.get_user().unwrap();
        let database = parsed.config.get_dbname().unwrap();
        let port = parsed.config.get_ports().first().copied().unwrap_or(5432);
        let passfile = dir.path().join("pgpass");
        std::fs::write(
            &passfile,
            format!(
                "{}:{port}:{database}:{user}:from the file\n",
                socket.display().to_string().replace(':', "\\:")
            ),
        )
        .unwrap();
        std::fs::set_permissions(&passfile, std::fs::Permissions::from_mode(0o600)).unwrap();
        // Relative to the world directory.
        let setting = format!("{url}&passfile=pgpass");
        let location = crate::storage::StorageLocation::parse(&setting, dir.path()).unwrap();
        let crate::storage::StorageLocation::Postgres(resolved) = &location else {
            unreachable!("a PostgreSQL location");
        };
        let pool = PgPool::new(resolved).unwrap();
        assert_eq!(pool.config.get_password(), Some(&b"from the file"[..]));
        assert!(!pool.url().contains("from the file"), "{}", pool.url());
        assert!(!location.shown().contains("from the file"));
        // It connects (the test cluster trusts; a server asking would get
        // this password).
        let mut storage = location.open(SectionSize::default(), 0).unwrap();
        assert_eq!(storage.counts().unwrap(), StorageCounts::default());
        // A password in the URL wins; a file others can read is ignored.
        let pool = PgPool::new(&format!("{resolved}&password=url")).unwrap();
        assert_eq!(pool.config.get_password(), Some(&b"url"[..]));
        std::fs::set_permissions(&passfile, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(PgPool::new(resolved).unwrap().config.get_password(), None);
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
