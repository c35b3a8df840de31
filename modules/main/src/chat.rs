//! Chat and commands: `main:chat` lines to everyone (with `shout`), and the
//! commands (`/msg`, `/me`, `/kick`, `/ban`, `/unban`, `/grant`,
//! `/revoke`, `/privs`, `/password`, `/resetpassword`, `/deleteaccount`,
//! `/tp`, `/status`, `/help`, and the console's `admin`), each checked
//! against the caller's privileges. Each command's arguments are one clap
//! definition (`chat/commands.rs`), which gives its usage and help too;
//! words that do not parse are answered with clap's message. The same
//! commands run on the server console (registered with the core's command
//! table, where other modules' commands are too: a player's `/NAME` that
//! is not the game's runs the module command `NAME` if its `privilege`
//! allows).
//!
//! Owns: parsing a chat line, the one dispatch of the game's commands
//! (from chat and the console: where each may run, its privilege, its
//! words parsed), who hears what. Does not own: each command's arguments
//! and body (`chat/commands.rs`), storing accounts, privileges and bans
//! (`accounts.rs`), the chat packets' layouts (`buildat-main-api`).

mod commands;

use std::collections::BTreeSet;
use std::net::IpAddr;
use std::sync::LazyLock;
use std::time::{Duration, Instant};

use buildat_interface::clap::{self, CommandFactory, Parser};
use buildat_interface::core_api::{ListCommands, RegisterCommand, RunModuleCommand};
use buildat_interface::receive::usage_of;
use buildat_interface::{Host, ModuleError, log};
use buildat_main_api::{ChatLine, Correct, MAX_CHAT_BYTES, PeerId};
use buildat_network_api as network;
use buildat_voxelworld_api::Viewer;

use crate::accounts::{AccountError, BanKind, describe_seconds, hash_password, now_ms};
use crate::names::check_name;
use crate::{Game, rules};

/// Who runs a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Caller {
    /// The operator: every privilege.
    Console,
    Player(PeerId),
}

/// Where a command may run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunsOn {
    /// The server console only (and the core's `run_command`).
    Console,
    /// Chat only (`/NAME`).
    Chat,
    Both,
}

impl RunsOn {
    fn console(self) -> bool {
        self != Self::Chat
    }

    fn chat(self) -> bool {
        self != Self::Console
    }
}

/// One of the game's commands: `Self` is its arguments, which clap parses
/// from the words after its name; the `#[command(name, about)]` and the
/// arguments' docs give its usage and help.
trait GameCommand: Parser {
    /// What a player needs to run it; `None`: anyone.
    const PRIVILEGE: Option<&'static str>;
    const RUNS_ON: RunsOn;

    /// Runs it for `caller`: the answer, or why it was not done.
    fn run(self, game: &mut Game, caller: Caller) -> Result<String, String>;
}

/// A command as the dispatch, `/help` and the core see it.
pub struct Defined {
    pub name: String,
    /// Its arguments (`<NAME> [REASON]...`), from its definition.
    pub usage: String,
    pub help: String,
    pub privilege: Option<&'static str>,
    pub runs_on: RunsOn,
    run: fn(&mut Game, Caller, &[String]) -> Result<String, String>,
}

fn defined<C: GameCommand>() -> Defined {
    let definition = C::command();
    Defined {
        name: definition.get_name().to_string(),
        usage: usage_of(&definition),
        help: definition
            .get_about()
            .map(ToString::to_string)
            .unwrap_or_default(),
        privilege: C::PRIVILEGE,
        runs_on: C::RUNS_ON,
        run: run_parsed::<C>,
    }
}

/// The game's commands, as `/help` lists them.
pub static COMMANDS: LazyLock<Vec<Defined>> = LazyLock::new(commands::all);

/// Clap's message, plain (no colour) and short enough for chat: no blank
/// lines, no "For more information" line, the usage as `usage: /NAME ...`.
fn plain(error: &clap::Error) -> String {
    error
        .render()
        .to_string()
        .lines()
        .map(str::trim_end)
        .filter(|line| !line.is_empty() && !line.starts_with("For more information"))
        .map(|line| match line.strip_prefix("Usage: ") {
            Some(usage) => format!("usage: /{usage}"),
            None => line.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `C`'s definition, never coloured (chat shows no ANSI).
fn definition_of<C: CommandFactory>() -> clap::Command {
    C::command().color(clap::ColorChoice::Never)
}

/// A refusal of `C`'s words that clap's parsing let through, with its usage.
fn usage_error<C: CommandFactory>(message: &str) -> String {
    plain(&definition_of::<C>().error(clap::error::ErrorKind::InvalidValue, message))
}

/// Parses `words` as `C`'s arguments and runs it; words that do not parse
/// are answered with clap's message (`--help`: its help, as an answer).
fn run_parsed<C: GameCommand>(
    game: &mut Game,
    caller: Caller,
    words: &[String],
) -> Result<String, String> {
    let mut definition = definition_of::<C>();
    let name = definition.get_name().to_string();
    let parsed = definition
        .try_get_matches_from_mut(
            std::iter::once(name.as_str()).chain(words.iter().map(String::as_str)),
        )
        .and_then(|matches| C::from_arg_matches(&matches))
        .map_err(|error| error.format(&mut definition));
    match parsed {
        Ok(args) => args.run(game, caller),
        Err(error) if !error.use_stderr() => Ok(plain(&error)),
        Err(error) => Err(plain(&error)),
    }
}

/// Registers the game's console commands with the core, their usage and
/// help from their definitions.
pub fn register_commands(host: &Host) -> Result<(), ModuleError> {
    for command in COMMANDS.iter().filter(|c| c.runs_on.console()) {
        host.call(&RegisterCommand {
            name: command.name.clone(),
            usage: command.usage.clone(),
            help: command.help.clone(),
            privilege: Some(command.privilege.unwrap_or_default().into()),
        })?;
    }
    Ok(())
}

/// `30m` as a duration (`s`, `m`, `h`, `d`).
pub fn parse_duration(word: &str) -> Option<Duration> {
    let unit = word.chars().last()?;
    let number: u64 = word.get(..word.len() - unit.len_utf8())?.parse().ok()?;
    let seconds = match unit {
        's' => 1,
        'm' => 60,
        'h' => 3600,
        'd' => 86_400,
        _ => return None,
    };
    Some(Duration::from_secs(number.checked_mul(seconds)?))
}

/// Why a chat line cannot be sent as it is.
pub fn check_chat_text(text: &str) -> Result<&str, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err("nothing to say".into());
    }
    if text.len() > MAX_CHAT_BYTES {
        return Err(format!("a chat line is at most {MAX_CHAT_BYTES} bytes"));
    }
    if text.chars().any(char::is_control) {
        return Err("a chat line may not hold control characters".into());
    }
    Ok(text)
}

fn account_error(error: AccountError) -> String {
    log::error!("{error}");
    format!("the accounts database failed: {error}")
}

impl Game {
    /// Whether `caller` holds `privilege` (the console holds every one).
    pub(crate) fn may(&self, caller: Caller, privilege: &str) -> bool {
        match caller {
            Caller::Console => true,
            Caller::Player(peer) => self
                .players
                .get(&peer)
                .is_some_and(|p| p.privileges.contains(privilege)),
        }
    }

    fn caller_name(&self, caller: Caller) -> String {
        match caller {
            Caller::Console => "the server".into(),
            Caller::Player(peer) => self
                .players
                .get(&peer)
                .map_or_else(|| format!("peer {peer}"), |p| p.account.name.clone()),
        }
    }

    /// Tells one player a line.
    pub(crate) fn tell(&self, peer: PeerId, text: impl Into<String>) {
        self.send(peer, &ChatLine { text: text.into() });
    }

    /// Tells every player a line.
    fn tell_all(&self, text: &str) {
        let batches = self
            .players
            .keys()
            .filter_map(|peer| {
                let packet = network::OutgoingPacket::new(&ChatLine {
                    text: text.to_string(),
                })
                .ok()?;
                Some(network::SendBatch {
                    peer: *peer,
                    packets: vec![packet],
                })
            })
            .collect();
        self.send_batches(batches);
    }

    /// The peer playing under the name `name` (any case or width).
    fn find_player(&self, name: &str) -> Result<PeerId, String> {
        let key = check_name(name)?.key;
        self.players
            .iter()
            .find(|(_, p)| p.account.key == key)
            .map(|(peer, _)| *peer)
            .ok_or_else(|| format!("nobody called {name} is playing"))
    }

    /// A chat line from a player: a command if it starts with `/`, else
    /// said to everyone.
    pub(crate) fn on_chat(&mut self, peer: PeerId, text: &str) -> Result<(), ModuleError> {
        let Some(player) = self.players.get_mut(&peer) else {
            return self.refuse(peer, "join first");
        };
        if !player.chat.allow(Instant::now()) {
            let (limit, window) = rules::CHAT_LIMIT;
            self.tell(
                peer,
                format!("slow down: at most {limit} lines in {} s", window.as_secs()),
            );
            return Ok(());
        }
        let text = match check_chat_text(text) {
            Ok(text) => text,
            Err(reason) => {
                self.tell(peer, reason);
                return Ok(());
            }
        };
        if let Some(command) = text.strip_prefix('/') {
            let mut words = command.split_whitespace().map(String::from);
            let name = words.next().unwrap_or_default();
            let args: Vec<String> = words.collect();
            if name == "inspect" && (args.is_empty() || args == ["off"]) {
                let reply = self.inspect_mode(peer, args.is_empty());
                self.tell(peer, reply.unwrap_or_else(|error| error));
                return Ok(());
            }
            let reply = self.run_command(Caller::Player(peer), &name, &args);
            let reply = reply.unwrap_or_else(|error| error);
            if !reply.is_empty() {
                self.tell(peer, reply);
            }
            return Ok(());
        }
        if !self.may(Caller::Player(peer), "shout") {
            self.tell(peer, "you may not chat here (no 'shout' privilege)");
            return Ok(());
        }
        let line = format!("<{}> {text}", self.caller_name(Caller::Player(peer)));
        log::info!("chat: {line}");
        self.tell_all(&line);
        Ok(())
    }

    /// `/inspect` (toggles) or `/inspect off` in chat: inspect mode, where
    /// the player's digs and punches show the voxel's history (voxelworld's
    /// `inspect X Y Z`, with its privilege) instead of digging.
    fn inspect_mode(&mut self, peer: PeerId, toggle: bool) -> Result<String, String> {
        // The privilege voxelworld's `inspect` declares.
        let privilege = self
            .host
            .call(&ListCommands {})
            .map_err(|e| e.to_string())?
            .into_iter()
            .find(|c| c.name == "inspect" && c.module != self.host.module_name())
            .and_then(|c| c.privilege)
            .ok_or("no /inspect here (the world's rollback log is not loaded)")?;
        if !privilege.is_empty() && !self.may(Caller::Player(peer), &privilege) {
            return Err(format!("/inspect needs the '{privilege}' privilege"));
        }
        let player = self.players.get_mut(&peer).ok_or("join first")?;
        player.inspecting = toggle && !player.inspecting;
        Ok(if player.inspecting {
            "inspect mode on: dig or punch a voxel to see its history (it is not dug); \
             /inspect off ends it (so does a reload of the game)"
                .into()
        } else {
            "inspect mode off: digs dig again".into()
        })
    }

    /// In inspect mode, a dig or punch of `voxel`: the voxel's history told
    /// to the player instead; whether it was (the action then goes no
    /// further).
    pub(crate) fn inspected(&mut self, peer: PeerId, voxel: [i32; 3]) -> bool {
        if !self.players.get(&peer).is_some_and(|p| p.inspecting) {
            return false;
        }
        let args = voxel.map(|c| c.to_string()).to_vec();
        let reply = self.run_module_command(Caller::Player(peer), "inspect", &args);
        self.tell(peer, reply.unwrap_or_else(|error| error));
        true
    }

    /// Runs the command `name`, the game's or another module's; its
    /// answer, or why it was not run.
    pub(crate) fn run_command(
        &mut self,
        caller: Caller,
        name: &str,
        args: &[String],
    ) -> Result<String, String> {
        let Some(command) = COMMANDS.iter().find(|c| c.name == name) else {
            return self.run_module_command(caller, name, args);
        };
        let allowed_here = match caller {
            Caller::Console => command.runs_on.console(),
            Caller::Player(_) => command.runs_on.chat(),
        };
        if !allowed_here {
            return Err(match caller {
                Caller::Console => format!("{name} is a player's command (/{name} in chat)"),
                Caller::Player(_) => format!("{name} is a console command only"),
            });
        }
        if let Some(privilege) = command.privilege
            && !self.may(caller, privilege)
        {
            return Err(format!("/{name} needs the '{privilege}' privilege"));
        }
        (command.run)(self, caller, args)
    }

    /// Another module's command (the core's table), if the caller holds
    /// its privilege.
    pub(crate) fn run_module_command(
        &mut self,
        caller: Caller,
        name: &str,
        args: &[String],
    ) -> Result<String, String> {
        let commands = self
            .host
            .call(&ListCommands {})
            .map_err(|e| e.to_string())?;
        let unknown = || format!("no command /{name}; /help lists them");
        let command = commands
            .into_iter()
            .find(|c| c.name == name && c.module != self.host.module_name())
            .ok_or_else(unknown)?;
        let Some(privilege) = command.privilege else {
            return Err(format!("{name} is a console command only"));
        };
        if !privilege.is_empty() && !self.may(caller, &privilege) {
            return Err(format!("/{name} needs the '{privilege}' privilege"));
        }
        let by = match caller {
            Caller::Console => None,
            Caller::Player(_) => Some(self.caller_name(caller)),
        };
        self.host
            .call(&RunModuleCommand {
                name: name.to_string(),
                args: args.to_vec(),
                by,
            })
            .map_err(|e| format!("/{name}: {e}"))
    }

    fn ban(&mut self, by: &str, what: &str, args: &[String]) -> Result<String, String> {
        let (kind, value) = ban_target(what)?;
        let (duration, reason_words) = match args.split_first() {
            Some((first, rest)) if parse_duration(first).is_some() => (parse_duration(first), rest),
            _ => (None, args),
        };
        let reason = if reason_words.is_empty() {
            format!("banned by {by}")
        } else {
            reason_words.join(" ")
        };
        let expires_ms = duration
            .map(|d| now_ms().saturating_add(u64::try_from(d.as_millis()).unwrap_or(u64::MAX)));
        self.accounts
            .ban(kind, &value, &reason, by, expires_ms)
            .map_err(account_error)?;
        let ban = crate::accounts::Ban { reason, expires_ms };
        let message = ban.message();
        let banned: Vec<PeerId> = match kind {
            BanKind::Name => self
                .players
                .iter()
                .filter(|(_, p)| p.account.key == value)
                .map(|(peer, _)| *peer)
                .collect(),
            BanKind::Address => self
                .addresses
                .iter()
                .filter(|(_, address)| **address == value)
                .map(|(peer, _)| *peer)
                .collect(),
        };
        for peer in &banned {
            self.reject(*peer, &message);
        }
        let how_long = duration.map_or_else(
            || "for ever".to_string(),
            |d| format!("for {}", describe_seconds(d.as_secs())),
        );
        log::info!("{by} banned {what} {how_long}: {}", ban.reason);
        Ok(format!(
            "{what} is banned {how_long}; {} disconnected",
            banned.len()
        ))
    }

    /// `admin NAME`: every privilege to an existing account.
    fn make_admin(&mut self, by: &str, who: &str) -> Result<String, String> {
        let key = check_name(who)?.key;
        if self
            .accounts
            .get_name(&key)
            .map_err(account_error)?
            .is_none()
        {
            return Err(format!(
                "no account is called {who}: its player logs in once with a password \
                 (a guest has no account), then run admin {who} again"
            ));
        }
        self.set_privilege(by, who, "all", true)
    }

    /// The key and shown name of the account `who` names; an error when
    /// the name is malformed or no account holds it.
    fn check_account(&self, who: &str) -> Result<(String, String), String> {
        let key = check_name(who)?.key;
        let name = self
            .accounts
            .get_name(&key)
            .map_err(account_error)?
            .ok_or_else(|| format!("no account is called {who}"))?;
        Ok((key, name))
    }

    /// Closes the connections of the account `key` (playing, joining or
    /// logged in), telling them `reason`; how many.
    fn disconnect_account(&mut self, key: &str, reason: &str) -> usize {
        let peers: Vec<PeerId> = self
            .players
            .iter()
            .filter(|(_, p)| !p.account.guest && p.account.key == key)
            .map(|(peer, _)| *peer)
            .chain(
                self.joining
                    .iter()
                    .chain(self.logged_in.iter())
                    .filter(|(_, a)| !a.guest && a.key == key)
                    .map(|(peer, _)| *peer),
            )
            .collect();
        for peer in &peers {
            self.logged_in.remove(peer);
            self.joining.remove(peer);
            self.reject(*peer, reason);
            // Its account is free now, not when the network says it left.
            self.remove_player(*peer);
        }
        peers.len()
    }

    /// `resetpassword NAME`: a new one-time password, in the answer only
    /// (never logged); the account has no privileges until its player sets
    /// its own, and whoever plays it now is disconnected.
    fn reset_password(&mut self, by: &str, who: &str) -> Result<String, String> {
        let (key, name) = self.check_account(who)?;
        let password = one_time_password().map_err(|e| format!("reading random bytes: {e}"))?;
        // Hashed here, not on the login workers: an operator's act, rare.
        let verifier = hash_password(&password).map_err(account_error)?;
        if !self
            .accounts
            .set_verifier(&key, &verifier, true)
            .map_err(account_error)?
        {
            return Err(format!("no account is called {who}"));
        }
        self.disconnect_account(&key, &format!("{by} reset your password"));
        log::info!("{by} reset the password of {name}");
        Ok(format!(
            "the password of {name} is now {password} (one-time: its player logs in with it and \
             sets its own with /password {password} NEW; no privileges until then)"
        ))
    }

    /// `deleteaccount NAME`: the account, its privileges and its known
    /// addresses gone; whoever plays it is disconnected.
    fn delete_account(&mut self, by: &str, who: &str) -> Result<String, String> {
        let key = check_name(who)?.key;
        let name = self
            .accounts
            .delete(&key)
            .map_err(account_error)?
            .ok_or_else(|| format!("no account is called {who}"))?;
        let dropped = self.disconnect_account(&key, &format!("{by} deleted your account"));
        log::info!("{by} deleted the account {name}");
        Ok(format!(
            "deleted the account {name} with its privileges; {dropped} disconnected"
        ))
    }

    fn set_privilege(
        &mut self,
        by: &str,
        who: &str,
        privilege: &str,
        granted: bool,
    ) -> Result<String, String> {
        let (key, name) = self.check_account(who)?;
        let privileges: Vec<String> = if privilege == "all" {
            self.privileges.keys().cloned().collect()
        } else if self.privileges.contains_key(privilege) {
            vec![privilege.to_string()]
        } else {
            return Err(format!("no privilege '{privilege}'; /privs lists them"));
        };
        for privilege in &privileges {
            self.accounts
                .set_privilege(&key, privilege, granted)
                .map_err(account_error)?;
        }
        self.refresh_privileges(&key);
        let list = privileges.join(", ");
        let (verb, word) = if granted {
            ("granted", "to")
        } else {
            ("revoked", "from")
        };
        for (peer, player) in &self.players {
            if player.account.key == key {
                self.tell(*peer, format!("{by} {verb} {list}"));
            }
        }
        log::info!("{by} {verb} {list} {word} {name}");
        Ok(format!("{verb} {list} {word} {name}"))
    }

    /// An account's privileges (a guest playing has the defaults).
    fn account_privileges(&self, key: &str) -> Result<BTreeSet<String>, String> {
        if let Some(player) = self.players.values().find(|p| p.account.key == key) {
            return Ok(player.privileges.clone());
        }
        if self
            .accounts
            .get_name(key)
            .map_err(account_error)?
            .is_none()
        {
            return Err("no such account".into());
        }
        self.accounts.privileges(key).map_err(account_error)
    }

    fn privileges_defined(&self) -> String {
        let all: Vec<String> = self
            .privileges
            .iter()
            .map(|(name, description)| format!("{name} ({description})"))
            .collect();
        format!("privileges: {}", all.join(", "))
    }

    /// `/tp`: `None` for arguments that are not a teleport.
    fn teleport(&mut self, caller: Caller, args: &[String]) -> Option<Result<String, String>> {
        let coordinates = |words: &[String]| -> Option<[f64; 3]> {
            let [x, y, z] = words else { return None };
            Some([x.parse().ok()?, y.parse().ok()?, z.parse().ok()?])
        };
        let me = match caller {
            Caller::Player(peer) => Ok(peer),
            Caller::Console => Err("name the player to move".to_string()),
        };
        let (who, to) = match args {
            [_, _, _] => (me, coordinates(args).map(Ok)?),
            [who, _, _, _] => (self.find_player(who), coordinates(&args[1..]).map(Ok)?),
            [other] => (me, self.player_position(other)),
            [who, other] => (self.find_player(who), self.player_position(other)),
            _ => return None,
        };
        Some((|| -> Result<String, String> {
            let peer = who?;
            let to = to?;
            let name = self.move_player(peer, to)?;
            Ok(format!("{name} is at {to:?}"))
        })())
    }

    /// Moves a player to `to` (its feet), as `/tp` and the `teleport` call
    /// do: the client is corrected, the world streams around the new
    /// place, the movement allowance starts again. Answers its name.
    pub(crate) fn move_player(&mut self, peer: PeerId, to: [f64; 3]) -> Result<String, String> {
        rules::check_position(to)?;
        let player = self.players.get_mut(&peer).ok_or("that player left")?;
        rules::check_border(self.border, player.position, to)?;
        player.position = to;
        player.motion = rules::Motion::new(Instant::now());
        let name = player.account.name.clone();
        self.pending_moves.retain(|(p, ..)| *p != peer);
        self.news.moved(peer, to);
        self.send(peer, &Correct { position: to });
        if let Err(error) = self.host.emit(&Viewer { peer, position: to }) {
            log::debug!("telling the world where {name} went: {error}");
        }
        Ok(name)
    }

    /// The `teleport` call: [`Game::move_player`] by account name.
    pub(crate) fn teleport_player(&mut self, name: &str, to: [f64; 3]) -> Result<(), String> {
        let peer = self.find_player(name)?;
        self.move_player(peer, to).map(|_| ())
    }

    fn player_position(&self, name: &str) -> Result<[f64; 3], String> {
        let peer = self.find_player(name)?;
        self.players
            .get(&peer)
            .map(|p| p.position)
            .ok_or_else(|| "that player left".into())
    }

    fn status(&self, caller: Caller) -> String {
        let addresses = self.may(caller, "server");
        let players: Vec<String> = self
            .players
            .iter()
            .map(|(peer, p)| {
                let mut notes = Vec::new();
                if let Some(address) = self.addresses.get(peer).filter(|_| addresses) {
                    notes.push(address.clone());
                }
                if p.account.guest {
                    notes.push("guest".to_string());
                }
                if notes.is_empty() {
                    p.account.name.clone()
                } else {
                    format!("{} ({})", p.account.name, notes.join(", "))
                }
            })
            .collect();
        let ticks = match self.tick_window.minute(Instant::now()) {
            Some(minute) => format!(
                "tick p50 {:.2} ms, p99 {:.2} ms over the last minute ({} ticks)",
                minute.p50 * 1000.0,
                minute.p99 * 1000.0,
                minute.count
            ),
            None => "no tick in the last minute".to_string(),
        };
        format!(
            "up {}; {ticks}; {} playing: {}",
            describe_seconds(self.started.elapsed().as_secs()),
            players.len(),
            players.join(", ")
        )
    }

    fn help(&self, caller: Caller) -> String {
        let mut lines: Vec<String> = COMMANDS
            .iter()
            .filter(|c| c.runs_on.chat())
            .filter(|c| c.privilege.is_none_or(|p| self.may(caller, p)))
            .map(|c| {
                let usage = format!("/{} {}", c.name, c.usage);
                format!("{} — {}", usage.trim_end(), c.help)
            })
            .collect();
        if let Ok(commands) = self.host.call(&ListCommands {}) {
            let own = self.host.module_name();
            lines.extend(
                commands
                    .into_iter()
                    .filter(|c| c.module != own)
                    .filter(|c| {
                        c.privilege
                            .as_ref()
                            .is_some_and(|p| p.is_empty() || self.may(caller, p))
                    })
                    .map(|c| format!("/{} {} — {} ({})", c.name, c.usage, c.help, c.module)),
            );
        }
        lines.join("\n")
    }
}

/// What `/ban` and `/unban` name: an address (in its one form:
/// `::ffff:1.2.3.4` is `1.2.3.4`) or an account's key. No name reads as
/// an address nor holds a space (`names.rs`), so the first word is one or
/// the other, never both.
fn ban_target(what: &str) -> Result<(BanKind, String), String> {
    if let Ok(address) = what.parse::<IpAddr>() {
        return Ok((BanKind::Address, address.to_canonical().to_string()));
    }
    Ok((BanKind::Name, check_name(what)?.key))
}

/// 16 letters and digits (about 82 bits), none of them easily confused.
fn one_time_password() -> std::io::Result<String> {
    const ALPHABET: &[u8] = b"abcdefghjkmnpqrstuvwxyz23456789";
    let mut bytes = [0u8; 16];
    std::io::Read::read_exact(&mut std::fs::File::open("/dev/urandom")?, &mut bytes)?;
    Ok(bytes
        .iter()
        .map(|b| char::from(ALPHABET[usize::from(*b) % ALPHABET.len()]))
        .collect())
}

fn join(set: &BTreeSet<String>) -> String {
    if set.is_empty() {
        return "none".into();
    }
    set.iter().cloned().collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_chat_lines_are_checked() {
        assert_eq!(parse_duration("30m"), Some(Duration::from_secs(1800)));
        assert_eq!(parse_duration("2d"), Some(Duration::from_secs(172_800)));
        assert_eq!(parse_duration("griefing"), None);
        assert_eq!(parse_duration("5"), None);
        assert_eq!(parse_duration("99999999999999999999d"), None);
        assert_eq!(check_chat_text("  hello "), Ok("hello"));
        assert!(check_chat_text("").is_err());
        assert!(check_chat_text("a\u{7}b").is_err());
        assert!(check_chat_text(&"x".repeat(MAX_CHAT_BYTES + 1)).is_err());
        assert_eq!(
            ban_target("10.0.0.1").unwrap(),
            (BanKind::Address, "10.0.0.1".into())
        );
        assert_eq!(ban_target("Eve").unwrap(), (BanKind::Name, "eve".into()));
        // A mapped address is its IPv4 form; an IPv6 address is one form.
        assert_eq!(
            ban_target("::ffff:10.0.0.1").unwrap(),
            (BanKind::Address, "10.0.0.1".into())
        );
        assert_eq!(
            ban_target("FD00:0::2").unwrap(),
            (BanKind::Address, "fd00::2".into())
        );
    }

    #[test]
    fn one_time_passwords_differ() {
        let a = one_time_password().unwrap();
        assert_eq!(a.len(), 16);
        assert_ne!(a, one_time_password().unwrap());
    }

    #[test]
    fn every_command_has_a_distinct_name() {
        let names: BTreeSet<&str> = COMMANDS.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names.len(), COMMANDS.len());
    }
}
