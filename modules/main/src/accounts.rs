//! Accounts, privileges and bans, kept with the world as modules' values
//! (voxelworld's `get_value` / `put_values`: spaces `main.accounts`,
//! `main.privileges`, `main.logins`, `main.bans`), so they live on the
//! world's backend (SQLite or PostgreSQL), move with `migrate` and are in
//! every backup; and how often logins may be tried.
//!
//! Owns: claiming a name with its first login, the argon2id verifier (a
//! salted PHC string; the password itself is never stored), checking a
//! login without telling whether the name exists, changing, resetting
//! (a one-time password to change at the next login) and deleting an
//! account (with its privileges and what is known of its logins, so the
//! next claim of the name inherits nothing), the address groups each
//! account logged in from (the last [`MAX_KNOWN_ADDRESSES`]), the
//! privileges granted per account, bans by name and by address with a
//! reason and an optional expiry, the values' encodings, taking in the
//! tables an older version kept in `<world>/world.sqlite`
//! ([`import_old_tables`], read and dropped through voxelworld, the one
//! module that opens that file), and [`Attempts`] (logins per address
//! group, failed logins per name, new accounts per minute). Does not own:
//! what names may hold (`names.rs`), address groups (`addresses.rs`), what
//! privileges allow (`lib.rs`, `chat.rs`), where values are stored
//! (voxelworld).

use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use argon2::Argon2;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use buildat_interface::{Host, ModuleError};
use buildat_voxelworld_api::{
    DropOldTables, GetValue, ListValues, MAX_VALUES_LISTED, OldCell, OldTable, PutValues,
    ReadOldTable, StoredValue, ValueWrite,
};
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::names::PlayerName;

/// The values' spaces.
const ACCOUNTS: &str = "main.accounts";
const PRIVILEGES: &str = "main.privileges";
const LOGINS: &str = "main.logins";
const BANS: &str = "main.bans";

/// Address groups remembered per account (the most recent).
pub const MAX_KNOWN_ADDRESSES: usize = 16;

#[derive(Debug, Error)]
#[non_exhaustive]
pub enum AccountError {
    /// The world's values could not be read or written.
    #[error("the world's values: {0}")]
    Storage(String),
    /// A stored value does not decode.
    #[error("{space}/{key} does not decode: {why}")]
    Damaged {
        space: &'static str,
        key: String,
        why: String,
    },
    #[error("hashing a password: {0}")]
    Hash(String),
    #[error("reading random bytes for a salt: {0}")]
    Random(#[from] std::io::Error),
    /// Wrong password, or a verifier that does not parse: the player is
    /// told the same either way.
    #[error("wrong name or password")]
    Refused,
}

impl From<ModuleError> for AccountError {
    fn from(error: ModuleError) -> Self {
        Self::Storage(error.to_string())
    }
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
    /// The ban's key in `main.bans`: `name:KEY` or `ip:ADDRESS` (also the
    /// `kind` column of the old table).
    fn key(self, value: &str) -> String {
        let kind = match self {
            Self::Name => "name",
            Self::Address => "ip",
        };
        format!("{kind}:{value}")
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

/// An account's value in `main.accounts` (keyed by the name's key).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct AccountValue {
    /// The name as first claimed.
    name: String,
    /// The argon2id PHC string.
    verifier: String,
    created_ms: u64,
}

/// What is known of an account's logins, in `main.logins` (keyed by the
/// name's key).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoginState {
    /// Address groups (`addresses::limit_group_of`) that logged in to it,
    /// the most recent last, at most [`MAX_KNOWN_ADDRESSES`]: the failed
    /// logins of strangers never keep them out.
    pub addresses: Vec<String>,
    /// Its password was reset by the operator: it plays without
    /// privileges until the player sets its own (`/password`).
    pub must_change: bool,
}

/// A ban's value in `main.bans`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct BanValue {
    reason: String,
    by: String,
    expires_ms: Option<u64>,
}

/// Where the accounts' values are read and written: the world's values
/// through voxelworld's calls ([`Host`]); memory in unit tests.
pub trait ValueStore: Send {
    fn get_value(&self, space: &str, key: &str) -> Result<Option<Vec<u8>>, ModuleError>;
    /// All of `writes` in one transaction, or none (see `PutValues`).
    fn put_values(&self, writes: Vec<ValueWrite>) -> Result<bool, ModuleError>;
    /// A table an older version kept in `<world>/world.sqlite`.
    fn read_old_table(&self, table: &str) -> Result<Option<OldTable>, ModuleError>;
    /// Drops those tables, in one transaction.
    fn drop_old_tables(&self, tables: &[&str]) -> Result<(), ModuleError>;
    /// Values of `space` after the key `after`, in key order (a page).
    fn list_values(
        &self,
        space: &str,
        after: Option<String>,
    ) -> Result<Vec<StoredValue>, ModuleError>;
}

impl ValueStore for Host {
    fn get_value(&self, space: &str, key: &str) -> Result<Option<Vec<u8>>, ModuleError> {
        self.call(&GetValue {
            space: space.into(),
            key: key.into(),
        })
    }

    fn put_values(&self, writes: Vec<ValueWrite>) -> Result<bool, ModuleError> {
        self.call(&PutValues { writes })
    }

    fn read_old_table(&self, table: &str) -> Result<Option<OldTable>, ModuleError> {
        self.call(&ReadOldTable {
            table: table.into(),
        })
    }

    fn drop_old_tables(&self, tables: &[&str]) -> Result<(), ModuleError> {
        self.call(&DropOldTables {
            tables: tables.iter().map(|t| t.to_string()).collect(),
        })
    }

    fn list_values(
        &self,
        space: &str,
        after: Option<String>,
    ) -> Result<Vec<StoredValue>, ModuleError> {
        self.call(&ListValues {
            space: space.into(),
            key_prefix: String::new(),
            after,
            limit: MAX_VALUES_LISTED,
        })
    }
}

fn write(space: &str, key: &str, value: Option<Vec<u8>>, only_if_absent: bool) -> ValueWrite {
    ValueWrite {
        space: space.into(),
        key: key.into(),
        value,
        only_if_absent,
    }
}

fn encoded<T: Serialize>(value: &T) -> Result<Vec<u8>, AccountError> {
    buildat_interface::encode(value).map_err(|e| AccountError::Storage(e.to_string()))
}

/// The accounts of a world.
pub struct Accounts {
    store: Box<dyn ValueStore>,
    /// Every ban, by its key in `main.bans`: read once at start and kept
    /// with the store (this module is its only writer), so checking a
    /// connection or a login costs no call to the world.
    bans: HashMap<String, BanValue>,
}

impl Accounts {
    /// The accounts in `store`, with every ban read.
    pub fn new(store: Box<dyn ValueStore>) -> Result<Self, AccountError> {
        let mut bans = HashMap::new();
        let mut after = None;
        loop {
            let page = store.list_values(BANS, after.take())?;
            let full = page.len() >= MAX_VALUES_LISTED as usize;
            for value in page {
                let ban =
                    buildat_interface::decode(&value.value).map_err(|e| AccountError::Damaged {
                        space: BANS,
                        key: value.key.clone(),
                        why: e.to_string(),
                    })?;
                after = Some(value.key.clone());
                bans.insert(value.key, ban);
            }
            if !full {
                break;
            }
        }
        Ok(Self { store, bans })
    }

    /// The value at `space`/`key`, decoded.
    fn read<T: for<'de> Deserialize<'de>>(
        &self,
        space: &'static str,
        key: &str,
    ) -> Result<Option<T>, AccountError> {
        let Some(bytes) = self.store.get_value(space, key)? else {
            return Ok(None);
        };
        buildat_interface::decode(&bytes)
            .map(Some)
            .map_err(|e| AccountError::Damaged {
                space,
                key: key.to_string(),
                why: e.to_string(),
            })
    }

    /// The account `name` (its shown name and verifier), if it exists.
    pub fn lookup(&self, name: &PlayerName) -> Result<Option<(String, String)>, AccountError> {
        Ok(self
            .read::<AccountValue>(ACCOUNTS, &name.key)?
            .map(|account| (account.name, account.verifier)))
    }

    /// Makes the account `name` with `verifier` (from [`hash_password`]),
    /// granting `defaults` and nothing else (whatever a deleted account
    /// of that name held is gone), remembering `address_group` as one it
    /// logged in from, in one transaction; `false` when the name was
    /// claimed meanwhile.
    pub fn create(
        &self,
        name: &PlayerName,
        verifier: &str,
        defaults: &BTreeSet<String>,
        address_group: &str,
    ) -> Result<bool, AccountError> {
        let account = AccountValue {
            name: name.display.clone(),
            verifier: verifier.to_string(),
            created_ms: now_ms(),
        };
        let logins = LoginState {
            addresses: vec![address_group.to_string()],
            must_change: false,
        };
        self.store
            .put_values(vec![
                write(ACCOUNTS, &name.key, Some(encoded(&account)?), true),
                write(PRIVILEGES, &name.key, Some(encoded(defaults)?), false),
                write(LOGINS, &name.key, Some(encoded(&logins)?), false),
            ])
            .map_err(AccountError::from)
    }

    /// What is known of the logins of the account `key` (nothing for
    /// none).
    pub fn login_state(&self, key: &str) -> Result<LoginState, AccountError> {
        Ok(self.read(LOGINS, key)?.unwrap_or_default())
    }

    /// Remembers that `address_group` logged in to the account `key` (the
    /// most recent last; the oldest forgotten past
    /// [`MAX_KNOWN_ADDRESSES`]).
    pub fn remember_address(&self, key: &str, address_group: &str) -> Result<(), AccountError> {
        let mut state = self.login_state(key)?;
        if state.addresses.last().is_some_and(|a| a == address_group) {
            return Ok(());
        }
        state.addresses.retain(|a| a != address_group);
        state.addresses.push(address_group.to_string());
        let excess = state.addresses.len().saturating_sub(MAX_KNOWN_ADDRESSES);
        state.addresses.drain(..excess);
        self.store
            .put_values(vec![write(LOGINS, key, Some(encoded(&state)?), false)])?;
        Ok(())
    }

    /// Sets the verifier of the account `key` (from [`hash_password`]);
    /// `must_change`: a one-time password, to change at the next login.
    /// `false` when there is no such account.
    pub fn set_verifier(
        &self,
        key: &str,
        verifier: &str,
        must_change: bool,
    ) -> Result<bool, AccountError> {
        let Some(mut account) = self.read::<AccountValue>(ACCOUNTS, key)? else {
            return Ok(false);
        };
        account.verifier = verifier.to_string();
        let mut state = self.login_state(key)?;
        state.must_change = must_change;
        self.store.put_values(vec![
            write(ACCOUNTS, key, Some(encoded(&account)?), false),
            write(LOGINS, key, Some(encoded(&state)?), false),
        ])?;
        Ok(true)
    }

    /// Deletes the account `key` with its privileges and what is known of
    /// its logins (its bans stay); its shown name if there was one.
    pub fn delete(&self, key: &str) -> Result<Option<String>, AccountError> {
        let Some(name) = self.get_name(key)? else {
            return Ok(None);
        };
        self.store.put_values(vec![
            write(ACCOUNTS, key, None, false),
            write(PRIVILEGES, key, None, false),
            write(LOGINS, key, None, false),
        ])?;
        Ok(Some(name))
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
            if !self.create(name, &verifier, defaults, "test")? {
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

    /// The verifier of the account with `key`, if there is one.
    pub fn get_verifier(&self, key: &str) -> Result<Option<String>, AccountError> {
        Ok(self
            .read::<AccountValue>(ACCOUNTS, key)?
            .map(|account| account.verifier))
    }

    /// The shown name of the account with `key`, if there is one.
    pub fn get_name(&self, key: &str) -> Result<Option<String>, AccountError> {
        Ok(self
            .read::<AccountValue>(ACCOUNTS, key)?
            .map(|account| account.name))
    }

    /// The privileges granted to the account with `key`.
    pub fn privileges(&self, key: &str) -> Result<BTreeSet<String>, AccountError> {
        Ok(self.read(PRIVILEGES, key)?.unwrap_or_default())
    }

    /// Grants (`true`) or revokes a privilege; whether that changed anything.
    pub fn set_privilege(
        &self,
        key: &str,
        privilege: &str,
        granted: bool,
    ) -> Result<bool, AccountError> {
        let mut privileges = self.privileges(key)?;
        let changed = if granted {
            privileges.insert(privilege.to_string())
        } else {
            privileges.remove(privilege)
        };
        if changed {
            self.store.put_values(vec![write(
                PRIVILEGES,
                key,
                Some(encoded(&privileges)?),
                false,
            )])?;
        }
        Ok(changed)
    }

    /// Bans `value` (replacing a ban of it there was).
    pub fn ban(
        &mut self,
        kind: BanKind,
        value: &str,
        reason: &str,
        by: &str,
        expires_ms: Option<u64>,
    ) -> Result<(), AccountError> {
        let ban = BanValue {
            reason: reason.to_string(),
            by: by.to_string(),
            expires_ms,
        };
        let key = kind.key(value);
        self.store
            .put_values(vec![write(BANS, &key, Some(encoded(&ban)?), false)])?;
        self.bans.insert(key, ban);
        Ok(())
    }

    /// Lifts a ban; whether there was one.
    pub fn unban(&mut self, kind: BanKind, value: &str) -> Result<bool, AccountError> {
        let key = kind.key(value);
        if !self.bans.contains_key(&key) {
            return Ok(false);
        }
        self.store
            .put_values(vec![write(BANS, &key, None, false)])?;
        self.bans.remove(&key);
        Ok(true)
    }

    /// The ban in force on `value`, if any (an expired one is removed).
    pub fn get_ban(&mut self, kind: BanKind, value: &str) -> Result<Option<Ban>, AccountError> {
        let Some(ban) = self.bans.get(&kind.key(value)).cloned() else {
            return Ok(None);
        };
        if ban.expires_ms.is_some_and(|ms| ms <= now_ms()) {
            self.unban(kind, value)?;
            return Ok(None);
        }
        Ok(Some(Ban {
            reason: ban.reason,
            expires_ms: ban.expires_ms,
        }))
    }
}

/// How many rows [`import_old_tables`] took in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Imported {
    pub accounts: usize,
    pub privileges: usize,
    pub bans: usize,
}

/// The old tables, in the order they are dropped.
const OLD_TABLES: [&str; 3] = ["main_accounts", "main_privileges", "main_bans"];

/// A row's text cell, or why it is not one.
fn text(table: &OldTable, row: &[OldCell], column: &str) -> Result<String, AccountError> {
    match table.get(row, column) {
        Some(OldCell::Text(text)) => Ok(text.clone()),
        other => Err(AccountError::Damaged {
            space: "world.sqlite",
            key: column.to_string(),
            why: format!("expected text, found {other:?}"),
        }),
    }
}

/// A row's integer cell (`None` for NULL or missing).
fn integer(table: &OldTable, row: &[OldCell], column: &str) -> Option<u64> {
    match table.get(row, column) {
        Some(OldCell::Integer(n)) => Some(u64::try_from(*n).unwrap_or(0)),
        _ => None,
    }
}

/// Takes in the accounts, privileges and bans an older version of this
/// module kept in tables of its own in `<world>/world.sqlite`
/// (`main_accounts`, `main_privileges`, `main_bans`, read through
/// voxelworld): writes them as the world's values (over any of the same
/// key: the old tables are what the operator had), then drops the tables.
/// `None` when there were none. Run at start, before any login: a run cut
/// short between the two steps takes them in again at the next start.
pub fn import_old_tables(store: &dyn ValueStore) -> Result<Option<Imported>, AccountError> {
    let Some(accounts) = store.read_old_table("main_accounts")? else {
        return Ok(None);
    };
    let mut writes = Vec::new();
    let mut imported = Imported::default();
    for row in &accounts.rows {
        let account = AccountValue {
            name: text(&accounts, row, "name")?,
            verifier: text(&accounts, row, "verifier")?,
            created_ms: integer(&accounts, row, "created_ms").unwrap_or(0),
        };
        let key = text(&accounts, row, "key")?;
        writes.push(write(ACCOUNTS, &key, Some(encoded(&account)?), false));
        imported.accounts += 1;
    }
    if let Some(privileges) = store.read_old_table("main_privileges")? {
        let mut granted: std::collections::BTreeMap<String, BTreeSet<String>> =
            std::collections::BTreeMap::new();
        for row in &privileges.rows {
            granted
                .entry(text(&privileges, row, "key")?)
                .or_default()
                .insert(text(&privileges, row, "privilege")?);
            imported.privileges += 1;
        }
        for (key, privileges) in granted {
            writes.push(write(PRIVILEGES, &key, Some(encoded(&privileges)?), false));
        }
    }
    if let Some(bans) = store.read_old_table("main_bans")? {
        for row in &bans.rows {
            let ban = BanValue {
                reason: text(&bans, row, "reason")?,
                by: text(&bans, row, "by")?,
                expires_ms: integer(&bans, row, "expires_ms"),
            };
            let key = format!(
                "{}:{}",
                text(&bans, row, "kind")?,
                text(&bans, row, "value")?
            );
            writes.push(write(BANS, &key, Some(encoded(&ban)?), false));
            imported.bans += 1;
        }
    }
    for batch in writes.chunks(buildat_voxelworld_api::MAX_VALUE_WRITES) {
        store.put_values(batch.to_vec())?;
    }
    store.drop_old_tables(&OLD_TABLES)?;
    Ok(Some(imported))
}

/// Logins allowed in each window: per address group, failed ones per
/// name (from addresses that never logged in to it), and new accounts
/// (from everyone together).
#[derive(Debug, Clone, Copy)]
pub struct AttemptLimits {
    pub per_address: u32,
    pub failures_per_name: u32,
    pub new_accounts: u32,
    pub window: Duration,
}

impl Default for AttemptLimits {
    fn default() -> Self {
        Self {
            per_address: 10,
            failures_per_name: 5,
            new_accounts: 20,
            window: Duration::from_secs(60),
        }
    }
}

/// Most keys [`Attempts`] remembers per kind (an address flood cannot
/// grow it).
const MAX_TRACKED: usize = 100_000;

/// Counts in fixed windows, per key.
#[derive(Debug, Default)]
struct Windows {
    counts: HashMap<String, (Instant, u32)>,
}

impl Windows {
    /// How long until `key` may go again, if it is at `limit` now.
    fn get_wait(&self, key: &str, limit: u32, window: Duration, now: Instant) -> Option<Duration> {
        let (since, count) = self.counts.get(key)?;
        let age = now.saturating_duration_since(*since);
        (age < window && *count >= limit).then(|| window.saturating_sub(age))
    }

    fn count(&mut self, key: &str, window: Duration, now: Instant) {
        if self.counts.len() >= MAX_TRACKED && !self.counts.contains_key(key) {
            self.counts
                .retain(|_, (since, _)| now.saturating_duration_since(*since) < window);
        }
        let entry = self.counts.entry(key.to_string()).or_insert((now, 0));
        if now.saturating_duration_since(entry.0) >= window {
            *entry = (now, 0);
        }
        entry.1 = entry.1.saturating_add(1);
    }
}

fn wait_message(what: &str, wait: Duration) -> String {
    format!("{what}; try again in {} s", wait.as_secs().max(1))
}

/// Login attempts counted per address group and failures per name, and
/// new accounts, in fixed windows. Checking counts nothing: the caller
/// counts once the login goes ahead ([`Attempts::count_attempt`]), so a
/// refusal (busy, limited) costs no attempt.
#[derive(Debug, Default)]
pub struct Attempts {
    limits: AttemptLimits,
    addresses: Windows,
    failures: Windows,
    created: Windows,
}

impl Attempts {
    pub fn new(limits: AttemptLimits) -> Self {
        Self {
            limits,
            ..Self::default()
        }
    }

    /// Whether `group` (`addresses::limit_group_of`) may try a login now.
    pub fn check_address(&self, group: &str, now: Instant) -> Result<(), String> {
        match self
            .addresses
            .get_wait(group, self.limits.per_address, self.limits.window, now)
        {
            Some(wait) => Err(wait_message("too many login attempts", wait)),
            None => Ok(()),
        }
    }

    /// Whether the account `name` may be tried now: failures count only
    /// from strangers, and an address group that logged in to it before
    /// (`known`) is never held back by them.
    pub fn check_name(&self, name: &str, known: bool, now: Instant) -> Result<(), String> {
        if known {
            return Ok(());
        }
        match self
            .failures
            .get_wait(name, self.limits.failures_per_name, self.limits.window, now)
        {
            Some(wait) => Err(wait_message(
                "too many failed logins to this name from new addresses",
                wait,
            )),
            None => Ok(()),
        }
    }

    /// Whether a new account may be made now (all addresses together).
    pub fn check_new_account(&self, now: Instant) -> Result<(), String> {
        match self
            .created
            .get_wait("", self.limits.new_accounts, self.limits.window, now)
        {
            Some(wait) => Err(wait_message("too many new accounts right now", wait)),
            None => Ok(()),
        }
    }

    /// Counts a login from `group` going ahead (a claim: also a new account).
    pub fn count_attempt(&mut self, group: &str, claim: bool, now: Instant) {
        self.addresses.count(group, self.limits.window, now);
        if claim {
            self.created.count("", self.limits.window, now);
        }
    }

    /// Counts a wrong password for `name` from an address group that
    /// never logged in to it.
    pub fn count_failure(&mut self, name: &str, now: Instant) {
        self.failures.count(name, self.limits.window, now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::names::check_name;
    use rusqlite::Connection;
    use rusqlite::types::ValueRef;
    use std::collections::BTreeMap;
    use std::sync::{Arc, Mutex};

    fn defaults() -> BTreeSet<String> {
        ["interact".to_string(), "shout".to_string()].into()
    }

    /// Values in memory, with `PutValues`' all-or-none rule (voxelworld's
    /// storage tests cover the real backends; the e2e tests the calls).
    /// Values by (space, key).
    type Values = BTreeMap<(String, String), Vec<u8>>;

    #[derive(Clone, Default)]
    struct MemoryValues {
        values: Arc<Mutex<Values>>,
        /// Where its old tables are (voxelworld's `old_tables.rs` in the game).
        old: Option<std::path::PathBuf>,
    }

    impl MemoryValues {
        fn old_file(&self) -> Option<Connection> {
            self.old
                .as_ref()
                .map(|path| Connection::open(path).unwrap())
        }
    }

    impl ValueStore for MemoryValues {
        fn get_value(&self, space: &str, key: &str) -> Result<Option<Vec<u8>>, ModuleError> {
            let values = self.values.lock().unwrap();
            Ok(values.get(&(space.to_string(), key.to_string())).cloned())
        }

        fn put_values(&self, writes: Vec<ValueWrite>) -> Result<bool, ModuleError> {
            let mut values = self.values.lock().unwrap();
            if writes
                .iter()
                .any(|w| w.only_if_absent && values.contains_key(&(w.space.clone(), w.key.clone())))
            {
                return Ok(false);
            }
            for w in writes {
                match w.value {
                    Some(value) => values.insert((w.space, w.key), value),
                    None => values.remove(&(w.space, w.key)),
                };
            }
            Ok(true)
        }

        fn read_old_table(&self, table: &str) -> Result<Option<OldTable>, ModuleError> {
            let Some(db) = self.old_file() else {
                return Ok(None);
            };
            let present = db
                .query_row(
                    "SELECT count(*) FROM sqlite_master WHERE name = ?1",
                    [table],
                    |r| r.get::<_, i64>(0),
                )
                .unwrap();
            if present == 0 {
                return Ok(None);
            }
            let mut statement = db.prepare(&format!("SELECT * FROM {table}")).unwrap();
            let columns: Vec<String> = statement
                .column_names()
                .iter()
                .map(|c| c.to_string())
                .collect();
            let width = columns.len();
            let rows = statement
                .query_map([], |row| {
                    Ok((0..width)
                        .map(|i| match row.get_ref(i).unwrap() {
                            ValueRef::Null => OldCell::Null,
                            ValueRef::Integer(n) => OldCell::Integer(n),
                            ValueRef::Text(t) => {
                                OldCell::Text(String::from_utf8(t.to_vec()).unwrap())
                            }
                            other => panic!("{other:?}"),
                        })
                        .collect())
                })
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            Ok(Some(OldTable { columns, rows }))
        }

        fn list_values(
            &self,
            space: &str,
            after: Option<String>,
        ) -> Result<Vec<StoredValue>, ModuleError> {
            let values = self.values.lock().unwrap();
            Ok(values
                .iter()
                .filter(|((s, k), _)| s == space && after.as_ref().is_none_or(|a| k > a))
                .map(|((space, key), value)| StoredValue {
                    space: space.clone(),
                    key: key.clone(),
                    value: value.clone(),
                })
                .collect())
        }

        fn drop_old_tables(&self, tables: &[&str]) -> Result<(), ModuleError> {
            if let Some(db) = self.old_file() {
                for table in tables {
                    db.execute_batch(&format!("DROP TABLE IF EXISTS {table}"))
                        .unwrap();
                }
            }
            Ok(())
        }
    }

    fn accounts(store: &MemoryValues) -> Accounts {
        Accounts::new(Box::new(store.clone())).unwrap()
    }

    #[test]
    fn the_first_login_claims_a_name_and_later_ones_need_its_password() {
        let store = MemoryValues::default();
        let accounts = accounts(&store);
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
        let (_, verifier) = accounts.lookup(&ann).unwrap().unwrap();
        assert!(verifier.starts_with("$argon2id$"), "{verifier}");
        let stored = store.get_value(ACCOUNTS, "ann").unwrap().unwrap();
        assert!(!String::from_utf8_lossy(&stored).contains("secret"));
        // A claim of a taken name changes nothing, its privileges included.
        accounts.set_privilege("ann", "fly", true).unwrap();
        assert!(
            !accounts
                .create(&ann, "other", &BTreeSet::new(), "x")
                .unwrap()
        );
        assert!(accounts.privileges("ann").unwrap().contains("fly"));
        assert_eq!(accounts.lookup(&ann).unwrap().unwrap().1, verifier);
    }

    #[test]
    fn privileges_and_bans_persist_and_bans_expire() {
        let store = MemoryValues::default();
        {
            let mut accounts = accounts(&store);
            assert!(accounts.set_privilege("bob", "fly", true).unwrap());
            assert!(!accounts.set_privilege("bob", "fly", true).unwrap());
            accounts
                .ban(BanKind::Address, "10.0.0.1", "griefing", "op", None)
                .unwrap();
            accounts
                .ban(BanKind::Name, "eve", "spam", "op", Some(now_ms() - 1))
                .unwrap();
        }
        let mut accounts = accounts(&store);
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
    fn an_older_versions_tables_are_taken_in_and_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("world.sqlite");
        let verifier = hash_password("secret").unwrap();
        {
            let db = Connection::open(&path).unwrap();
            db.execute_batch(
                "CREATE TABLE main_accounts (key TEXT PRIMARY KEY NOT NULL, name TEXT NOT NULL,
                     verifier TEXT NOT NULL, created_ms INTEGER NOT NULL);
                 CREATE TABLE main_privileges (key TEXT NOT NULL, privilege TEXT NOT NULL,
                     PRIMARY KEY (key, privilege));
                 CREATE TABLE main_bans (kind TEXT NOT NULL, value TEXT NOT NULL,
                     reason TEXT NOT NULL, by TEXT NOT NULL, expires_ms INTEGER,
                     PRIMARY KEY (kind, value));
                 INSERT INTO main_privileges VALUES ('ann', 'fly'), ('ann', 'interact');
                 INSERT INTO main_bans VALUES ('ip', '10.0.0.9', 'griefing', 'op', NULL),
                     ('name', 'eve', 'spam', 'op', 99999999999999);
                 CREATE TABLE section (sx INTEGER);",
            )
            .unwrap();
            db.execute(
                "INSERT INTO main_accounts VALUES ('ann', 'Ann', ?1, 5)",
                [&verifier],
            )
            .unwrap();
        }
        let store = MemoryValues {
            old: Some(path.clone()),
            ..MemoryValues::default()
        };
        let imported = import_old_tables(&store).unwrap();
        assert_eq!(
            imported,
            Some(Imported {
                accounts: 1,
                privileges: 2,
                bans: 2
            })
        );
        let mut accounts = accounts(&store);
        let ann = check_name("ann").unwrap();
        let logged_in = accounts.login(&ann, "secret", &defaults()).unwrap();
        assert_eq!(logged_in.name, "Ann");
        assert!(!logged_in.created);
        assert_eq!(
            accounts.privileges("ann").unwrap(),
            ["fly".to_string(), "interact".to_string()].into()
        );
        assert_eq!(
            accounts
                .get_ban(BanKind::Address, "10.0.0.9")
                .unwrap()
                .unwrap()
                .reason,
            "griefing"
        );
        assert!(accounts.get_ban(BanKind::Name, "eve").unwrap().is_some());
        // The old tables are gone, the world's own stay; a second start
        // finds nothing to take in.
        let db = Connection::open(&path).unwrap();
        let tables: Vec<String> = db
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(tables, ["section"]);
        assert_eq!(import_old_tables(&store).unwrap(), None);
        assert_eq!(import_old_tables(&MemoryValues::default()).unwrap(), None);
    }

    #[test]
    fn failures_limit_a_name_for_strangers_only_and_addresses_are_limited() {
        let mut attempts = Attempts::new(AttemptLimits {
            per_address: 3,
            failures_per_name: 2,
            new_accounts: 2,
            window: Duration::from_secs(60),
        });
        let now = Instant::now();
        // Successful logins do not use up the name.
        for _ in 0..5 {
            assert!(attempts.check_name("ann", false, now).is_ok());
        }
        attempts.count_failure("ann", now);
        attempts.count_failure("ann", now);
        // Strangers are held back; an address that logged in before is not.
        let refused = attempts.check_name("ann", false, now).unwrap_err();
        assert!(refused.contains("failed logins"), "{refused}");
        assert!(attempts.check_name("ann", true, now).is_ok());
        assert!(attempts.check_name("bob", false, now).is_ok());
        // The address group is used up, for any name; checking counts nothing.
        for _ in 0..3 {
            assert!(attempts.check_address("a", now).is_ok());
            attempts.count_attempt("a", false, now);
        }
        assert!(attempts.check_address("a", now).is_err());
        assert!(attempts.check_address("b", now).is_ok());
        // New accounts, from everyone together.
        attempts.count_attempt("b", true, now);
        attempts.count_attempt("c", true, now);
        let refused = attempts.check_new_account(now).unwrap_err();
        assert!(refused.contains("new accounts"), "{refused}");
        let later = now + Duration::from_secs(61);
        assert!(attempts.check_address("a", later).is_ok());
        assert!(attempts.check_name("ann", false, later).is_ok());
        assert!(attempts.check_new_account(later).is_ok());
    }

    #[test]
    fn accounts_are_reset_deleted_and_remember_their_addresses() {
        let store = MemoryValues::default();
        let accounts = accounts(&store);
        let ann = check_name("Ann").unwrap();
        accounts.login(&ann, "secret", &defaults()).unwrap();
        accounts.set_privilege("ann", "fly", true).unwrap();
        for n in 0..20 {
            accounts
                .remember_address("ann", &format!("10.0.0.{n}"))
                .unwrap();
        }
        accounts.remember_address("ann", "10.0.0.5").unwrap();
        let state = accounts.login_state("ann").unwrap();
        assert_eq!(state.addresses.len(), MAX_KNOWN_ADDRESSES);
        assert_eq!(state.addresses.last().unwrap(), "10.0.0.5");
        assert!(!state.addresses.contains(&"10.0.0.0".to_string()));
        // A reset password: the old one no longer logs in, the new one does,
        // and it is marked to change.
        let verifier = hash_password("one-time").unwrap();
        assert!(accounts.set_verifier("ann", &verifier, true).unwrap());
        assert!(accounts.login(&ann, "secret", &defaults()).is_err());
        assert!(accounts.login(&ann, "one-time", &defaults()).is_ok());
        assert!(accounts.login_state("ann").unwrap().must_change);
        assert!(!accounts.set_verifier("nobody", &verifier, false).unwrap());
        // Deleted: the next claim of the name inherits nothing.
        assert_eq!(accounts.delete("ann").unwrap(), Some("Ann".to_string()));
        assert_eq!(accounts.delete("ann").unwrap(), None);
        assert_eq!(accounts.lookup(&ann).unwrap(), None);
        assert_eq!(accounts.login_state("ann").unwrap(), LoginState::default());
        let again = accounts.login(&ann, "mine now", &defaults()).unwrap();
        assert!(again.created);
        assert_eq!(accounts.privileges("ann").unwrap(), defaults());
        assert_eq!(accounts.login_state("ann").unwrap().addresses, ["test"]);
    }

    #[test]
    fn durations_read_well() {
        assert_eq!(describe_seconds(5), "5 s");
        assert_eq!(describe_seconds(65), "1 min 5 s");
        assert_eq!(describe_seconds(3725), "1 h 2 min");
    }
}
