//! Who may play: admitting a connection (its address not banned), logging
//! in (`main:login`: a name claimed by its first login, a password checked
//! against its argon2id verifier on the login workers (`verify.rs`, so the
//! game's thread never waits for it; answered when done, "busy" past
//! `main.max_pending_logins`), attempts limited per address and per
//! name, a banned name refused, a name already playing refused so the
//! first player stays), joining (`main:join`: as the account logged in, or
//! as a guest where `main.guests` allows it), and what each player may do
//! (its privileges, the movement rules they lift, the module API's
//! privilege calls).
//!
//! Owns: those decisions and what a refused client is told. Does not own:
//! the database (`accounts.rs`), names (`names.rs`), the commands that
//! change privileges and bans (`chat.rs`).

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::time::Instant;

use buildat_interface::{ModuleError, log};
use buildat_main_api::{DefinePrivilege, LoggedIn, Login, MAX_PASSWORD_BYTES, PeerId};
use buildat_network_api::{self as network, ClientConnected};

use crate::accounts::BanKind;
use crate::verify::{Done, Job, Outcome, Work};
use crate::{Account, Game, Player, names, rules};

/// What a login is told when too many wait for their password check.
const BUSY: &str = "the server is busy checking other logins; try again in a moment";

/// A login waiting for its password work (`verify.rs`).
pub(crate) struct PendingLogin {
    ticket: u64,
    name: names::PlayerName,
    /// The account's shown name; `None`: the name is free (a claim).
    display: Option<String>,
    address: String,
    /// A `main:join` that came before the answer: joined once logged in.
    join: Option<String>,
}

/// What a client that must log in is told.
const LOG_IN_FIRST: &str = "this server needs a password: run buildat-client with --password-file FILE \
     (or BUILDAT_PASSWORD); the first login claims the name";

impl Game {
    /// Closes a connection, telling it why.
    pub(crate) fn reject(&self, peer: PeerId, reason: &str) {
        log::info!("peer {peer}: {reason}; disconnecting it");
        if let Err(error) = self.host.call(&network::Disconnect {
            peer,
            reason: reason.to_string(),
        }) {
            log::debug!("disconnecting peer {peer}: {error}");
        }
    }

    /// Whether guests may play: `main.guests` is `true`, or `auto` (the
    /// default) and the game port is a loopback address.
    pub(crate) fn check_guests(&self) -> Result<bool, ModuleError> {
        match self.guests.as_str() {
            "true" => Ok(true),
            "false" => Ok(false),
            "auto" => Ok(self
                .host
                .call(&network::ListenAddress {})
                .ok()
                .and_then(|address| address.parse::<SocketAddr>().ok())
                .is_some_and(|address| address.ip().is_loopback())),
            other => Err(ModuleError::msg(format!(
                "main.guests is true, false or auto, not {other:?}"
            ))),
        }
    }

    /// A new connection: refused at once if its address is banned.
    pub(crate) fn on_connected(&mut self, connected: ClientConnected) {
        let peer = connected.peer;
        let ip = connected
            .address
            .parse::<SocketAddr>()
            .map_or(connected.address.clone(), |a| a.ip().to_string());
        self.unjoined.insert(peer, Instant::now());
        match self.accounts.get_ban(BanKind::Address, &ip) {
            Ok(Some(ban)) => self.reject(peer, &ban.message()),
            Ok(None) => {}
            Err(error) => log::error!("checking the bans of {ip}: {error}"),
        }
        self.addresses.insert(peer, ip);
    }

    /// Whether the account `key` is playing or about to.
    fn is_playing(&self, key: &str) -> bool {
        self.players.values().any(|p| p.account.key == key)
            || self.joining.values().any(|a| a.key == key)
            || self.logged_in.values().any(|a| a.key == key)
    }

    /// `main:login`: on success the peer is told `main:logged_in`; on
    /// failure it is disconnected with the reason.
    pub(crate) fn on_login(&mut self, peer: PeerId, login: Login) {
        if self.logged_in.contains_key(&peer)
            || self.joining.contains_key(&peer)
            || self.players.contains_key(&peer)
        {
            return self.reject(peer, "logged in already");
        }
        if self.pending_logins.contains_key(&peer) {
            return self.reject(peer, "logging in already");
        }
        let name = match names::check_name(&login.name) {
            Ok(name) => name,
            Err(reason) => return self.reject(peer, &reason),
        };
        if login.password.is_empty() || login.password.len() > MAX_PASSWORD_BYTES {
            return self.reject(
                peer,
                &format!("a password is 1 to {MAX_PASSWORD_BYTES} bytes"),
            );
        }
        let address = self.addresses.get(&peer).cloned().unwrap_or_default();
        // Past the cap of pending password work: refused before any, and
        // without counting as an attempt.
        if self.workers.is_full() {
            log::info!("login as {} from {address} refused: busy", name.display);
            return self.reject(peer, BUSY);
        }
        if let Err(reason) = self
            .attempts
            .check_attempt(&address, &name.key, Instant::now())
        {
            log::info!("login as {} from {address} refused: {reason}", name.display);
            return self.reject(peer, &reason);
        }
        match self.accounts.get_ban(BanKind::Name, &name.key) {
            Ok(Some(ban)) => return self.reject(peer, &ban.message()),
            Ok(None) => {}
            Err(error) => {
                log::error!("checking the bans of {}: {error}", name.display);
                return self.reject(peer, "the server cannot check logins now; try later");
            }
        }
        if self.pending_logins.values().any(|p| p.name.key == name.key) {
            return self.reject(peer, &format!("{} is logging in already", name.display));
        }
        let (display, work) = match self.accounts.lookup(&name) {
            Ok(Some((display, verifier))) => (
                Some(display),
                Work::Verify {
                    verifier,
                    password: login.password,
                },
            ),
            Ok(None) => (
                None,
                Work::Hash {
                    password: login.password,
                },
            ),
            Err(error) => {
                log::error!("looking up {}: {error}", name.display);
                return self.reject(peer, "the server cannot check logins now; try later");
            }
        };
        self.next_ticket += 1;
        let ticket = self.next_ticket;
        if self.workers.submit(Job { peer, ticket, work }).is_err() {
            return self.reject(peer, BUSY);
        }
        self.pending_logins.insert(
            peer,
            PendingLogin {
                ticket,
                name,
                display,
                address,
                join: None,
            },
        );
    }

    /// Answers the logins whose password work is done (`verify.rs`).
    pub(crate) fn on_logins_checked(&mut self) {
        for done in self.workers.take_done() {
            self.finish_login(done);
        }
    }

    /// Answers every pending login, waiting for the workers to finish
    /// (before an unload: no worker outlives this version).
    pub(crate) fn finish_pending_logins(&mut self) {
        let results = self.workers.finish();
        if !results.is_empty() {
            log::info!(
                "answering {} logins checked before the unload",
                results.len()
            );
        }
        for done in results {
            self.finish_login(done);
        }
        for (peer, pending) in std::mem::take(&mut self.pending_logins) {
            log::warn!("the login of {} was not checked", pending.name.display);
            self.reject(peer, BUSY);
        }
    }

    /// A login whose password work is done: the peer is told
    /// `main:logged_in`, or disconnected with the reason.
    fn finish_login(&mut self, done: Done) {
        let peer = done.peer;
        // A peer that left (or a result of an earlier login) is forgotten.
        let Some(pending) = self
            .pending_logins
            .remove(&peer)
            .filter(|p| p.ticket == done.ticket)
        else {
            return;
        };
        let PendingLogin {
            name,
            display,
            address,
            join,
            ..
        } = pending;
        let (display, created) = match (done.outcome, display) {
            (Outcome::Verified(true), Some(display)) => (display, false),
            (Outcome::Verified(_), _) => {
                log::info!(
                    "peer {peer} ({address}): wrong password for {}",
                    name.display
                );
                return self.reject(peer, "wrong name or password");
            }
            (Outcome::Hashed(Ok(verifier)), _) => {
                match self
                    .accounts
                    .create(&name, &verifier, &self.default_privileges)
                {
                    Ok(true) => (name.display.clone(), true),
                    Ok(false) => {
                        return self.reject(
                            peer,
                            &format!("{} was claimed a moment ago; log in again", name.display),
                        );
                    }
                    Err(error) => {
                        log::error!("making the account {}: {error}", name.display);
                        return self.reject(peer, "the server cannot check logins now; try later");
                    }
                }
            }
            (Outcome::Hashed(Err(error)), _) => {
                log::error!("hashing the password of {}: {error}", name.display);
                return self.reject(peer, "the server cannot check logins now; try later");
            }
        };
        if self.is_playing(&name.key) {
            return self.reject(peer, &format!("{display} is playing already"));
        }
        if created {
            log::info!("peer {peer} ({address}) claimed the name {display}");
        } else {
            log::info!("peer {peer} ({address}) logged in as {display}");
        }
        self.send(
            peer,
            &LoggedIn {
                name: display.clone(),
            },
        );
        self.logged_in.insert(
            peer,
            Account {
                name: display,
                key: name.key,
                guest: false,
            },
        );
        if let Some(join) = join
            && let Err(error) = self.on_join(peer, &join)
        {
            log::error!("peer {peer} joining after its login: {error}");
        }
    }

    /// `main:join`: plays as the account logged in (the name sent is not
    /// used then), or as a guest if the server allows guests.
    pub(crate) fn on_join(&mut self, peer: PeerId, name: &str) -> Result<(), ModuleError> {
        if self.players.contains_key(&peer) || self.joining.contains_key(&peer) {
            return self.refuse(peer, "already joined");
        }
        // Its login is being checked: it joins (as the account) once it is.
        if let Some(pending) = self.pending_logins.get_mut(&peer) {
            pending.join = Some(name.to_string());
            return Ok(());
        }
        let account = if let Some(account) = self.logged_in.remove(&peer) {
            account
        } else {
            if !self.guests_allowed {
                self.reject(peer, LOG_IN_FIRST);
                return Ok(());
            }
            let name = match names::check_name(name) {
                Ok(name) => name,
                Err(reason) => return self.refuse(peer, &reason),
            };
            match self.accounts.get_name(&name.key) {
                Ok(None) => {}
                Ok(Some(_)) => {
                    self.reject(
                        peer,
                        &format!("{} has an account: log in with its password", name.display),
                    );
                    return Ok(());
                }
                Err(error) => {
                    log::error!("looking up {}: {error}", name.display);
                    return self.refuse(peer, "the server cannot check names now");
                }
            }
            if self.is_playing(&name.key) {
                self.reject(peer, &format!("{} is playing already", name.display));
                return Ok(());
            }
            if let Ok(Some(ban)) = self.accounts.get_ban(BanKind::Name, &name.key) {
                self.reject(peer, &ban.message());
                return Ok(());
            }
            Account {
                name: name.display,
                key: name.key,
                guest: true,
            }
        };
        self.unjoined.remove(&peer);
        // Spawned by the next tick with every other joiner of that tick:
        // one call to the world for all of them, not one per login (a
        // crowd logging in while the world is busy would hold the game,
        // and every ping behind it, for each one's call).
        self.joining.insert(peer, account);
        Ok(())
    }

    /// What an account may do: a guest the defaults, `main.admin` every
    /// privilege, others what the database holds.
    pub(crate) fn privileges_of(&self, account: &Account) -> BTreeSet<String> {
        if self.admin.as_deref() == Some(account.key.as_str()) {
            return self.privileges.keys().cloned().collect();
        }
        if account.guest {
            return self.default_privileges.clone();
        }
        self.accounts
            .privileges(&account.key)
            .unwrap_or_else(|error| {
                log::error!("reading the privileges of {}: {error}", account.name);
                BTreeSet::new()
            })
    }

    /// Reads again the privileges of the players of account `key`.
    pub(crate) fn refresh_privileges(&mut self, key: &str) {
        let peers: Vec<PeerId> = self
            .players
            .iter()
            .filter(|(_, p)| p.account.key == key)
            .map(|(peer, _)| *peer)
            .collect();
        for peer in peers {
            let Some(account) = self.players.get(&peer).map(|p| p.account.clone()) else {
                continue;
            };
            let privileges = self.privileges_of(&account);
            if let Some(player) = self.players.get_mut(&peer) {
                player.privileges = privileges;
            }
        }
    }

    /// The movement rules that hold for a player (`main.free_movement`
    /// lifts them all).
    pub(crate) fn move_checks(&self, player: &Player) -> rules::MoveChecks {
        if self.free_movement {
            return rules::MoveChecks {
                collide: false,
                gravity: false,
            };
        }
        rules::MoveChecks {
            collide: !player.privileges.contains("noclip"),
            gravity: !player.privileges.contains("fly"),
        }
    }

    /// `define_privilege`.
    pub(crate) fn define_privilege(&mut self, define: DefinePrivilege) -> Result<(), ModuleError> {
        let valid = !define.name.is_empty()
            && define.name.len() <= 32
            && define
                .name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if !valid || define.name == "all" {
            return Err(ModuleError::msg(format!(
                "privilege name {:?}: 1 to 32 lowercase letters, digits or '_' (not 'all')",
                define.name
            )));
        }
        self.privileges.insert(define.name, define.description);
        Ok(())
    }

    /// `has_privilege`: a player playing, or an account.
    pub(crate) fn has_privilege(&self, player: &str, privilege: &str) -> bool {
        let Ok(name) = names::check_name(player) else {
            return false;
        };
        if let Some(player) = self.players.values().find(|p| p.account.key == name.key) {
            return player.privileges.contains(privilege);
        }
        if self.admin.as_deref() == Some(name.key.as_str()) {
            return self.privileges.contains_key(privilege);
        }
        self.accounts
            .privileges(&name.key)
            .is_ok_and(|set| set.contains(privilege))
    }
}
