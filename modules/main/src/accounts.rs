//! Accounts, privileges and bans, kept in the world's database
//! (`<world>/world.sqlite`, tables `main_accounts`, `main_privileges`,
//! `main_bans`; voxelworld's tables are its own), and how often logins may
//! be tried.
//!
//! Owns: claiming a name with its first login, the argon2id verifier (a
//! salted PHC string; the password itself is never stored), checking a
//! login without telling whether the name exists, the privileges granted
//! per account, bans by name and by address with a reason and an optional
//! expiry, and [`Attempts`] (logins tried per address and per name). Does
//! not own: what names may hold (`names.rs`), what privileges allow
//! (`lib.rs`, `chat.rs`).

use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use argon2::Argon2;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use rusqlite::{Connection, OptionalExtension, params};
use thiserror::Error;

use crate::names::PlayerName;

#[derive(Debug, Error)]
#[non_exhaustive]
pub enum AccountError {
    #[error("the accounts database: {0}")]
    Database(#[from] rusqlite::Error),
    #[error("hashing a password: {0}")]
    Hash(String),
    #[error("reading random bytes for a salt: {0}")]
    Random(#[from] std::io::Error),
    /// Wrong password, or a verifier that does not parse: the player is
    /// told the same either way.
    #[error("wrong name or password")]
    Refused,
}

/// What a login that passed did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoggedIn {
    /// The account's name as first claimed (what others see).
    pub name: String,
    /// The name was free: this login made the account.
    pub created: bool,
}

/// A ban in force.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ban {
    pub reason: String,
    /// Milliseconds since the Unix epoch when it ends; `None`: never.
    pub expires_ms: Option<u64>,
}

impl Ban {
    /// What a banned player is told.
    pub fn message(&self) -> String {
        let until = match self.expires_ms {
            Some(ms) => {
                let left = ms.saturating_sub(now_ms()) / 1000;
                format!(" (for {} more)", describe_seconds(left))
            }
            None => String::new(),
        };
        format!("banned from this server: {}{until}", self.reason)
    }
}

/// `3725` as `1 h 2 min 5 s`.
pub fn describe_seconds(seconds: u64) -> String {
    let (h, m, s) = (seconds / 3600, seconds / 60 % 60, seconds % 60);
    match (h, m) {
        (0, 0) => format!("{s} s"),
        (0, _) => format!("{m} min {s} s"),
        _ => format!("{h} h {m} min"),
    }
}

/// What a ban is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BanKind {
    /// An account, by its key (`names::PlayerName::key`).
    Name,
    /// An IP address (without the port).
    Address,
}

impl BanKind {
    fn column(self) -> &'static str {
        match self {
            Self::Name => "name",
            Self::Address => "ip",
        }
    }
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// A new salted argon2id verifier of `password` (argon2id, 19 MiB, 2
/// passes, 1 lane: OWASP's minimum). Slow on purpose: run off the game's
/// thread (`verify.rs`).
pub fn hash_password(password: &str) -> Result<String, AccountError> {
    let mut salt = [0u8; 16];
    std::io::Read::read_exact(&mut std::fs::File::open("/dev/urandom")?, &mut salt)?;
    let salt = SaltString::encode_b64(&salt).map_err(|e| AccountError::Hash(e.to_string()))?;
    Ok(Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map_err(|e| AccountError::Hash(e.to_string()))?
        .to_string())
}

/// Whether `password` matches `verifier` (a verifier that does not parse
/// matches nothing). As slow as [`hash_password`].
pub fn verify_password(verifier: &str, password: &str) -> bool {
    PasswordHash::new(verifier).is_ok_and(|parsed| {
        Argon2::default()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok()
    })
}

/// The accounts of a world.
pub struct Accounts {
    db: Connection,
}

impl Accounts {
    /// Opens (creating them if needed) the tables in `path`.
    pub fn open(path: &Path) -> Result<Self, AccountError> {
        let db = Connection::open(path)?;
        db.busy_timeout(Duration::from_secs(5))?;
        db.pragma_update(None, "journal_mode", "WAL")?;
        db.execute_batch(
            "CREATE TABLE IF NOT EXISTS main_accounts (
                 key TEXT PRIMARY KEY NOT NULL,
                 name TEXT NOT NULL,
                 verifier TEXT NOT NULL,
                 created_ms INTEGER NOT NULL
             );
             CREATE TABLE IF NOT EXISTS main_privileges (
                 key TEXT NOT NULL,
                 privilege TEXT NOT NULL,
                 PRIMARY KEY (key, privilege)
             );
             CREATE TABLE IF NOT EXISTS main_bans (
                 kind TEXT NOT NULL,
                 value TEXT NOT NULL,
                 reason TEXT NOT NULL,
                 by TEXT NOT NULL,
                 expires_ms INTEGER,
                 PRIMARY KEY (kind, value)
             );",
        )?;
        Ok(Self { db })
    }

    /// The account `name` (its shown name and verifier), if it exists.
    pub fn lookup(&self, name: &PlayerName) -> Result<Option<(String, String)>, AccountError> {
        Ok(self
            .db
            .query_row(
                "SELECT name, verifier FROM main_accounts WHERE key = ?1",
                params![name.key],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .optional()?)
    }

    /// Makes the account `name` with `verifier` (from [`hash_password`]),
    /// granting `defaults`; `false` when the name was claimed meanwhile.
    pub fn create(
        &self,
        name: &PlayerName,
        verifier: &str,
        defaults: &BTreeSet<String>,
    ) -> Result<bool, AccountError> {
        let tx = self.db.unchecked_transaction()?;
        let inserted = tx.execute(
            "INSERT OR IGNORE INTO main_accounts (key, name, verifier, created_ms) \
             VALUES (?1, ?2, ?3, ?4)",
            params![name.key, name.display, verifier, now_ms() as i64],
        )?;
        if inserted == 0 {
            return Ok(false);
        }
        for privilege in defaults {
            tx.execute(
                "INSERT OR IGNORE INTO main_privileges (key, privilege) VALUES (?1, ?2)",
                params![name.key, privilege],
            )?;
        }
        tx.commit()?;
        Ok(true)
    }

    /// Logs in to `name` with `password` on this thread (the game does
    /// the slow part on its workers: `verify.rs`); claims the name
    /// (granting `defaults`) when no account has it. A wrong password is
    /// [`AccountError::Refused`], and costs as much time as a right one.
    #[cfg(test)]
    pub fn login(
        &self,
        name: &PlayerName,
        password: &str,
        defaults: &BTreeSet<String>,
    ) -> Result<LoggedIn, AccountError> {
        let Some((display, verifier)) = self.lookup(name)? else {
            let verifier = hash_password(password)?;
            if !self.create(name, &verifier, defaults)? {
                return Err(AccountError::Refused);
            }
            return Ok(LoggedIn {
                name: name.display.clone(),
                created: true,
            });
        };
        if !verify_password(&verifier, password) {
            return Err(AccountError::Refused);
        }
        Ok(LoggedIn {
            name: display,
            created: false,
        })
    }

    /// The shown name of the account with `key`, if there is one.
    pub fn get_name(&self, key: &str) -> Result<Option<String>, AccountError> {
        Ok(self
            .db
            .query_row(
                "SELECT name FROM main_accounts WHERE key = ?1",
                params![key],
                |row| row.get(0),
            )
            .optional()?)
    }

    /// The privileges granted to the account with `key`.
    pub fn privileges(&self, key: &str) -> Result<BTreeSet<String>, AccountError> {
        let mut statement = self
            .db
            .prepare_cached("SELECT privilege FROM main_privileges WHERE key = ?1")?;
        let rows = statement.query_map(params![key], |row| row.get(0))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Grants (`true`) or revokes a privilege; whether that changed anything.
    pub fn set_privilege(
        &self,
        key: &str,
        privilege: &str,
        granted: bool,
    ) -> Result<bool, AccountError> {
        let changed = if granted {
            self.db.execute(
                "INSERT OR IGNORE INTO main_privileges (key, privilege) VALUES (?1, ?2)",
                params![key, privilege],
            )?
        } else {
            self.db.execute(
                "DELETE FROM main_privileges WHERE key = ?1 AND privilege = ?2",
                params![key, privilege],
            )?
        };
        Ok(changed > 0)
    }

    /// Bans `value` (replacing a ban of it there was).
    pub fn ban(
        &self,
        kind: BanKind,
        value: &str,
        reason: &str,
        by: &str,
        expires_ms: Option<u64>,
    ) -> Result<(), AccountError> {
        self.db.execute(
            "INSERT OR REPLACE INTO main_bans (kind, value, reason, by, expires_ms)
             VALUES (?1, ?2, ?3, ?4, ?5)",
            params![
                kind.column(),
                value,
                reason,
                by,
                expires_ms.map(|ms| ms as i64)
            ],
        )?;
        Ok(())
    }

    /// Lifts a ban; whether there was one.
    pub fn unban(&self, kind: BanKind, value: &str) -> Result<bool, AccountError> {
        Ok(self.db.execute(
            "DELETE FROM main_bans WHERE kind = ?1 AND value = ?2",
            params![kind.column(), value],
        )? > 0)
    }

    /// The ban in force on `value`, if any (an expired one is removed).
    pub fn get_ban(&self, kind: BanKind, value: &str) -> Result<Option<Ban>, AccountError> {
        let ban: Option<(String, Option<i64>)> = self
            .db
            .query_row(
                "SELECT reason, expires_ms FROM main_bans WHERE kind = ?1 AND value = ?2",
                params![kind.column(), value],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .optional()?;
        let Some((reason, expires)) = ban else {
            return Ok(None);
        };
        let expires_ms = expires.map(|ms| u64::try_from(ms).unwrap_or(0));
        if expires_ms.is_some_and(|ms| ms <= now_ms()) {
            self.unban(kind, value)?;
            return Ok(None);
        }
        Ok(Some(Ban { reason, expires_ms }))
    }
}

/// Login attempts allowed per address and per name in each window.
#[derive(Debug, Clone, Copy)]
pub struct AttemptLimits {
    pub per_address: u32,
    pub per_name: u32,
    pub window: Duration,
}

impl Default for AttemptLimits {
    fn default() -> Self {
        Self {
            per_address: 10,
            per_name: 5,
            window: Duration::from_secs(60),
        }
    }
}

/// Most keys [`Attempts`] remembers (an address flood cannot grow it).
const MAX_TRACKED: usize = 100_000;

/// Login attempts counted per address and per name, in fixed windows.
#[derive(Debug, Default)]
pub struct Attempts {
    limits: AttemptLimits,
    counts: HashMap<(bool, String), (Instant, u32)>,
}

impl Attempts {
    pub fn new(limits: AttemptLimits) -> Self {
        Self {
            limits,
            counts: HashMap::new(),
        }
    }

    /// Counts an attempt from `address` at `name`; why not if either is
    /// over its limit (nothing is counted then).
    pub fn check_attempt(&mut self, address: &str, name: &str, now: Instant) -> Result<(), String> {
        let window = self.limits.window;
        if self.counts.len() >= MAX_TRACKED {
            self.counts
                .retain(|_, (since, _)| now.saturating_duration_since(*since) < window);
        }
        let keys = [
            ((true, address.to_string()), self.limits.per_address),
            ((false, name.to_string()), self.limits.per_name),
        ];
        for (key, limit) in &keys {
            if let Some((since, count)) = self.counts.get(key)
                && now.saturating_duration_since(*since) < window
                && *count >= *limit
            {
                let wait = window.saturating_sub(now.saturating_duration_since(*since));
                return Err(format!(
                    "too many login attempts; try again in {} s",
                    wait.as_secs().max(1)
                ));
            }
        }
        for (key, _) in keys {
            let entry = self.counts.entry(key).or_insert((now, 0));
            if now.saturating_duration_since(entry.0) >= window {
                *entry = (now, 0);
            }
            entry.1 += 1;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::names::check_name;

    fn defaults() -> BTreeSet<String> {
        ["interact".to_string(), "shout".to_string()].into()
    }

    #[test]
    fn the_first_login_claims_a_name_and_later_ones_need_its_password() {
        let dir = tempfile::tempdir().unwrap();
        let accounts = Accounts::open(&dir.path().join("world.sqlite")).unwrap();
        let ann = check_name("Ann").unwrap();
        let first = accounts.login(&ann, "secret", &defaults()).unwrap();
        assert!(first.created);
        let again = accounts
            .login(&check_name("ANN").unwrap(), "secret", &defaults())
            .unwrap();
        assert_eq!(again.name, "Ann");
        assert!(!again.created);
        assert!(matches!(
            accounts.login(&ann, "guess", &defaults()),
            Err(AccountError::Refused)
        ));
        assert_eq!(accounts.privileges("ann").unwrap(), defaults());
        // Only a verifier is kept.
        let verifier: String = accounts
            .db
            .query_row("SELECT verifier FROM main_accounts", [], |r| r.get(0))
            .unwrap();
        assert!(verifier.starts_with("$argon2id$"), "{verifier}");
        assert!(!verifier.contains("secret"));
    }

    #[test]
    fn privileges_and_bans_persist_and_bans_expire() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("world.sqlite");
        {
            let accounts = Accounts::open(&path).unwrap();
            assert!(accounts.set_privilege("bob", "fly", true).unwrap());
            assert!(!accounts.set_privilege("bob", "fly", true).unwrap());
            accounts
                .ban(BanKind::Address, "10.0.0.1", "griefing", "op", None)
                .unwrap();
            accounts
                .ban(BanKind::Name, "eve", "spam", "op", Some(now_ms() - 1))
                .unwrap();
        }
        let accounts = Accounts::open(&path).unwrap();
        assert!(accounts.privileges("bob").unwrap().contains("fly"));
        let ban = accounts
            .get_ban(BanKind::Address, "10.0.0.1")
            .unwrap()
            .unwrap();
        assert_eq!(ban.reason, "griefing");
        assert!(ban.message().contains("griefing"));
        assert_eq!(accounts.get_ban(BanKind::Name, "eve").unwrap(), None);
        assert!(accounts.unban(BanKind::Address, "10.0.0.1").unwrap());
        assert_eq!(
            accounts.get_ban(BanKind::Address, "10.0.0.1").unwrap(),
            None
        );
        assert!(accounts.set_privilege("bob", "fly", false).unwrap());
    }

    #[test]
    fn attempts_are_limited_per_address_and_per_name() {
        let mut attempts = Attempts::new(AttemptLimits {
            per_address: 3,
            per_name: 2,
            window: Duration::from_secs(60),
        });
        let now = Instant::now();
        assert!(attempts.check_attempt("a", "ann", now).is_ok());
        assert!(attempts.check_attempt("b", "ann", now).is_ok());
        // The name is used up, from any address.
        assert!(attempts.check_attempt("c", "ann", now).is_err());
        assert!(attempts.check_attempt("a", "bob", now).is_ok());
        assert!(attempts.check_attempt("a", "cat", now).is_ok());
        // The address is used up, for any name.
        assert!(attempts.check_attempt("a", "dan", now).is_err());
        let later = now + Duration::from_secs(61);
        assert!(attempts.check_attempt("a", "ann", later).is_ok());
    }

    #[test]
    fn durations_read_well() {
        assert_eq!(describe_seconds(5), "5 s");
        assert_eq!(describe_seconds(65), "1 min 5 s");
        assert_eq!(describe_seconds(3725), "1 h 2 min");
    }
}
