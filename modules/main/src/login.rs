//! Who may play: admitting a connection (its address, in its one form,
//! not banned), logging in (`main:login`: a name claimed by its first
//! login, a password checked against its argon2id verifier on the login
//! workers (`verify.rs`, so the game's thread never waits for it; answered
//! when done), in this order: attempts per address group, logins being
//! checked per address group (`main.pending_logins_per_address`), a
//! banned name, failed logins per name from strangers (an address group
//! that logged in to the account before is never held back), new accounts
//! per minute, and only then "busy" past `main.max_pending_logins`, so one
//! source cannot fill the queue; a name already playing refused so the
//! first player stays; a name not on `main.whitelist` refused first, before
//! anything else is looked at or made), `/password`'s work and answer, joining
//! (`main:join`: as the account logged in, or as a guest where
//! `main.guests` allows it: `auto` for loopback peers), and what each
//! player may do (its privileges, none while a reset password waits to be
//! changed, the movement rules they lift, the module API's privilege
//! calls).
//!
//! Owns: those decisions and what a refused client is told. Does not own:
//! the database (`accounts.rs`), names (`names.rs`), address groups
//! (`addresses.rs`), the commands that change privileges, passwords and
//! bans (`chat.rs`).

use std::collections::BTreeSet;
use std::net::IpAddr;
use std::time::Instant;

use buildat_interface::{ModuleError, log};
use buildat_main_api::{DefinePrivilege, LoggedIn, Login, MAX_PASSWORD_BYTES, PeerId};
use buildat_network_api::{self as network, ClientConnected};

use crate::accounts::BanKind;
use crate::verify::{Done, Job, Outcome, Work};
use crate::{Account, Game, Player, addresses, names, rules};

/// What a login is told when too many wait for their password check.
const BUSY: &str = "the server is busy checking other logins; try again in a moment";

/// A login waiting for its password work (`verify.rs`).
pub(crate) struct PendingLogin {
    ticket: u64,
    name: names::PlayerName,
    /// The account's shown name and the verifier being checked; `None`:
    /// the name is free (a claim).
    account: Option<(String, String)>,
    address: String,
    /// Its `addresses::limit_group_of`.
    group: String,
    /// That group logged in to the account before.
    known: bool,
    /// A `main:join` that came before the answer: joined once logged in.
    join: Option<String>,
}

/// A `/password` waiting for its work (`verify.rs`).
pub(crate) struct PendingChange {
    ticket: u64,
    key: String,
    /// The verifier the old password is checked against.
    verifier: String,
}

/// Whether a peer at `ip` plays as a guest without logging in, under
/// `main.guests` (`setting`): `true`, `false`, or `auto`: a loopback
/// peer only (the machine's own user; anyone else needs an account).
pub(crate) fn check_guests(setting: &str, ip: Option<IpAddr>) -> Result<bool, String> {
    match setting {
        "true" => Ok(true),
        "false" => Ok(false),
        "auto" => Ok(ip.is_some_and(buildat_network_api::address::is_loopback)),
        other => Err(format!("main.guests is true, false or auto, not {other:?}")),
    }
}

/// The account keys `main.whitelist` names (`setting`: names separated by
/// commas; empty: nobody is held back), or why a name in it is not one.
pub(crate) fn parse_whitelist(setting: &str) -> Result<BTreeSet<String>, String> {
    setting
        .split(',')
        .map(str::trim)
        .filter(|name| !name.is_empty())
        .map(|name| {
            names::check_name(name)
                .map(|name| name.key)
                .map_err(|reason| format!("main.whitelist: {name:?}: {reason}"))
        })
        .collect()
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

    /// Why `name` may not play here, if it may not (`main.whitelist`).
    pub(crate) fn check_whitelist(&self, name: &names::PlayerName) -> Result<(), String> {
        if self.whitelist.is_empty() || self.whitelist.contains(&name.key) {
            return Ok(());
        }
        Err(format!(
            "{} is not on this server's whitelist",
            name.display
        ))
    }

    /// Whether `peer` may play as a guest (`main.guests`, checked at start).
    fn guests_allowed(&self, peer: PeerId) -> bool {
        let ip = self
            .addresses
            .get(&peer)
            .and_then(|a| addresses::peer_ip(a));
        check_guests(&self.guests, ip).unwrap_or(false)
    }

    /// A new connection: refused at once if its address is banned.
    pub(crate) fn on_connected(&mut self, connected: ClientConnected) {
        let peer = connected.peer;
        let ip = addresses::peer_ip(&connected.address)
            .map_or(connected.address.clone(), |ip| ip.to_string());
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
        // Before any limit, lookup or password work: nothing is made for it.
        if let Err(reason) = self.check_whitelist(&name) {
            log::info!("login as {} refused: {reason}", name.display);
            return self.reject(peer, &reason);
        }
        if login.password.is_empty() || login.password.len() > MAX_PASSWORD_BYTES {
            return self.reject(
                peer,
                &format!("a password is 1 to {MAX_PASSWORD_BYTES} bytes"),
            );
        }
        let address = self.addresses.get(&peer).cloned().unwrap_or_default();
        let group = addresses::limit_group_of(&address);
        let now = Instant::now();
        let refused = |reason: &str| {
            log::info!("login as {} from {address} refused: {reason}", name.display);
        };
        // The per-address limits come first, "busy" last: one source is
        // refused by its own limits before it can fill the queue, and a
        // refusal counts as no attempt.
        if let Err(reason) = self.attempts.check_address(&group, now) {
            refused(&reason);
            return self.reject(peer, &reason);
        }
        let checking = self
            .pending_logins
            .values()
            .filter(|p| p.group == group)
            .count();
        if checking >= self.pending_per_address {
            let reason =
                "too many logins from your address are being checked; try again in a moment";
            refused(reason);
            return self.reject(peer, reason);
        }
        match self.accounts.get_ban(BanKind::Name, &name.key) {
            Ok(Some(ban)) => return self.reject(peer, &ban.message()),
            Ok(None) => {}
            Err(error) => {
                log::error!("checking the bans of {}: {error}", name.display);
                return self.reject(peer, "the server cannot check logins now; try later");
            }
        }
        let looked_up = self.accounts.lookup(&name).and_then(|account| {
            let known = match &account {
                Some(_) => self
                    .accounts
                    .login_state(&name.key)?
                    .addresses
                    .contains(&group),
                None => false,
            };
            Ok((account, known))
        });
        let (account, known) = match looked_up {
            Ok(found) => found,
            Err(error) => {
                log::error!("looking up {}: {error}", name.display);
                return self.reject(peer, "the server cannot check logins now; try later");
            }
        };
        let limit = match &account {
            Some(_) => self.attempts.check_name(&name.key, known, now),
            None => self.attempts.check_new_account(now),
        };
        if let Err(reason) = limit {
            refused(&reason);
            return self.reject(peer, &reason);
        }
        // A stranger's login waits for the one being checked (its failure
        // counts before the next); one from a known address goes ahead.
        if !known && self.pending_logins.values().any(|p| p.name.key == name.key) {
            return self.reject(peer, &format!("{} is logging in already", name.display));
        }
        if self.workers.is_full() {
            refused("busy");
            return self.reject(peer, BUSY);
        }
        let work = match &account {
            Some((_, verifier)) => Work::Verify {
                verifier: verifier.clone(),
                password: login.password,
            },
            None => Work::Hash {
                password: login.password,
            },
        };
        self.next_ticket += 1;
        let ticket = self.next_ticket;
        if self.workers.submit(Job { peer, ticket, work }).is_err() {
            return self.reject(peer, BUSY);
        }
        self.attempts.count_attempt(&group, account.is_none(), now);
        self.pending_logins.insert(
            peer,
            PendingLogin {
                ticket,
                name,
                account,
                address,
                group,
                known,
                join: None,
            },
        );
    }

    /// `/password OLD NEW` from `peer`, playing as the account `key`: the
    /// work goes to the login workers; the player is told when it is done.
    pub(crate) fn start_password_change(
        &mut self,
        peer: PeerId,
        key: &str,
        old: String,
        new: String,
    ) -> Result<String, String> {
        if new.is_empty() || new.len() > MAX_PASSWORD_BYTES {
            return Err(format!("a password is 1 to {MAX_PASSWORD_BYTES} bytes"));
        }
        if self.pending_changes.contains_key(&peer) {
            return Err("your last /password is being checked".into());
        }
        let verifier = match self.accounts.get_verifier(key) {
            Ok(Some(verifier)) => verifier,
            Ok(None) => return Err("you play as a guest: there is no password to change".into()),
            Err(error) => {
                log::error!("looking up {key}: {error}");
                return Err("the server cannot change passwords now; try later".into());
            }
        };
        if self.workers.is_full() {
            return Err(BUSY.into());
        }
        self.next_ticket += 1;
        let ticket = self.next_ticket;
        let work = Work::Change {
            verifier: verifier.clone(),
            old,
            new,
        };
        self.workers
            .submit(Job { peer, ticket, work })
            .map_err(|_| BUSY.to_string())?;
        self.pending_changes.insert(
            peer,
            PendingChange {
                ticket,
                key: key.to_string(),
                verifier,
            },
        );
        Ok("checking your old password...".into())
    }

    /// A `/password` whose work is done: the new verifier stored if the
    /// old password matched and nobody changed the account meanwhile.
    fn finish_change(&mut self, done: Done) {
        let peer = done.peer;
        let Some(pending) = self
            .pending_changes
            .remove(&peer)
            .filter(|p| p.ticket == done.ticket)
        else {
            return;
        };
        let Outcome::Changed(outcome) = done.outcome else {
            return;
        };
        let answer = match outcome {
            Ok(None) => "wrong password: yours is unchanged".to_string(),
            Ok(Some(verifier)) => match self.accounts.get_verifier(&pending.key) {
                Ok(Some(current)) if current == pending.verifier => {
                    match self.accounts.set_verifier(&pending.key, &verifier, false) {
                        Ok(_) => {
                            log::info!("the account {} changed its password", pending.key);
                            self.refresh_privileges(&pending.key);
                            "your password is changed".to_string()
                        }
                        Err(error) => {
                            log::error!("changing the password of {}: {error}", pending.key);
                            "the server cannot change passwords now; try later".to_string()
                        }
                    }
                }
                Ok(_) => "your account changed meanwhile: your password is unchanged".into(),
                Err(error) => {
                    log::error!("looking up {}: {error}", pending.key);
                    "the server cannot change passwords now; try later".to_string()
                }
            },
            Err(error) => {
                log::error!("hashing a new password of {}: {error}", pending.key);
                "the server cannot change passwords now; try later".to_string()
            }
        };
        self.tell(peer, answer);
    }

    /// Answers the logins whose password work is done (`verify.rs`).
    pub(crate) fn on_logins_checked(&mut self) {
        for done in self.workers.take_done() {
            self.finish_work(done);
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
            self.finish_work(done);
        }
        for (peer, pending) in std::mem::take(&mut self.pending_logins) {
            log::warn!("the login of {} was not checked", pending.name.display);
            self.reject(peer, BUSY);
        }
    }

    /// Password work done: a login's or a `/password`'s.
    fn finish_work(&mut self, done: Done) {
        if matches!(done.outcome, Outcome::Changed(_)) {
            self.finish_change(done);
        } else {
            self.finish_login(done);
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
            account,
            address,
            group,
            known,
            join,
            ..
        } = pending;
        let (display, created) = match (done.outcome, account) {
            (Outcome::Verified(true), Some((display, verifier))) => {
                // Reset, changed or deleted while it was checked: the
                // password checked is no longer the account's.
                match self.accounts.get_verifier(&name.key) {
                    Ok(Some(current)) if current == verifier => {}
                    Ok(_) => return self.reject(peer, "wrong name or password"),
                    Err(error) => {
                        log::error!("looking up {}: {error}", name.display);
                        return self.reject(peer, "the server cannot check logins now; try later");
                    }
                }
                if let Err(error) = self.accounts.remember_address(&name.key, &group) {
                    log::error!("remembering where {} logged in from: {error}", name.display);
                }
                (display, false)
            }
            (Outcome::Verified(_), _) => {
                log::info!(
                    "peer {peer} ({address}): wrong password for {}",
                    name.display
                );
                if !known {
                    self.attempts.count_failure(&name.key, Instant::now());
                }
                return self.reject(peer, "wrong name or password");
            }
            (Outcome::Changed(_), _) => return,
            (Outcome::Hashed(Ok(verifier)), _) => {
                match self
                    .accounts
                    .create(&name, &verifier, &self.default_privileges, &group)
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
            if !self.guests_allowed(peer) {
                self.reject(peer, LOG_IN_FIRST);
                return Ok(());
            }
            let name = match names::check_name(name) {
                Ok(name) => name,
                Err(reason) => return self.refuse(peer, &reason),
            };
            if let Err(reason) = self.check_whitelist(&name) {
                self.reject(peer, &reason);
                return Ok(());
            }
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

    /// What an account may do: a guest the defaults, an account whose
    /// password was reset nothing until its player sets its own, others
    /// what the database holds.
    pub(crate) fn privileges_of(&self, account: &Account) -> BTreeSet<String> {
        if account.guest {
            return self.default_privileges.clone();
        }
        let held = self.accounts.login_state(&account.key).and_then(|state| {
            if state.must_change {
                Ok(BTreeSet::new())
            } else {
                self.accounts.privileges(&account.key)
            }
        });
        held.unwrap_or_else(|error| {
            log::error!("reading the privileges of {}: {error}", account.name);
            BTreeSet::new()
        })
    }

    /// Whether the account `key` must set its own password first (a reset
    /// one-time password).
    pub(crate) fn must_change_password(&self, key: &str) -> bool {
        self.accounts
            .login_state(key)
            .is_ok_and(|state| state.must_change)
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
        if self.must_change_password(&name.key) {
            return false;
        }
        self.accounts
            .privileges(&name.key)
            .is_ok_and(|set| set.contains(privilege))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_allows_guests_from_loopback_peers_only() {
        let ip = |a: &str| a.parse::<IpAddr>().ok();
        for loopback in ["127.0.0.1", "127.0.0.2", "::1", "::ffff:127.0.0.1"] {
            assert_eq!(check_guests("auto", ip(loopback)), Ok(true), "{loopback}");
        }
        for stranger in ["192.0.2.2", "fd00::2", "::ffff:192.0.2.2"] {
            assert_eq!(check_guests("auto", ip(stranger)), Ok(false), "{stranger}");
        }
        assert_eq!(check_guests("auto", None), Ok(false));
        assert_eq!(check_guests("true", ip("192.0.2.2")), Ok(true));
        assert_eq!(check_guests("false", ip("127.0.0.1")), Ok(false));
        assert!(check_guests("yes", None).is_err());
    }

    #[test]
    fn the_whitelist_holds_account_keys_and_refuses_what_is_no_name() {
        assert!(parse_whitelist("").expect("empty").is_empty());
        assert!(parse_whitelist(" , ").expect("blank").is_empty());
        let keys = parse_whitelist("Ann, BOB ,carol").expect("names");
        assert_eq!(
            keys.into_iter().collect::<Vec<_>>(),
            ["ann", "bob", "carol"]
        );
        let error = parse_whitelist("ann,10.0.0.1").expect_err("an address");
        assert!(error.starts_with("main.whitelist: \"10.0.0.1\""), "{error}");
    }
}
