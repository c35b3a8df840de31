//! The game's commands, each one clap definition: the type of its
//! arguments, and from the same `#[command(name, about)]` and argument docs
//! its usage and help (`/help`, the console's `help`, the answer to words
//! that do not parse); beside it, the privilege a player needs, where it
//! runs and what it does.
//!
//! Owns: each command's arguments and body. Does not own: the dispatch
//! (where and by whom a command may run, parsing: `chat.rs`), storing
//! accounts (`accounts.rs`).

use buildat_interface::clap::{self, Parser};

use super::{
    Caller, GameCommand, RunsOn, account_error, ban_target, check_chat_text, join, usage_error,
};
use crate::Game;
use crate::names::check_name;

/// Who hears it, and what.
#[derive(Parser)]
#[command(name = "msg", about = "say TEXT to NAME only")]
pub(super) struct Msg {
    /// The player who hears it.
    name: String,
    /// What to say.
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
    text: Vec<String>,
}

impl GameCommand for Msg {
    const PRIVILEGE: Option<&'static str> = Some("shout");
    const RUNS_ON: RunsOn = RunsOn::Both;

    fn run(self, game: &mut Game, caller: Caller) -> Result<String, String> {
        let text = self.text.join(" ");
        let text = check_chat_text(&text)?;
        let target = game.find_player(&self.name)?;
        let by = game.caller_name(caller);
        let to_name = game.caller_name(Caller::Player(target));
        game.tell(target, format!("[{by} → you] {text}"));
        Ok(format!("[you → {to_name}] {text}"))
    }
}

#[derive(Parser)]
#[command(name = "me", about = "say what you do (* NAME TEXT)")]
pub(super) struct Me {
    /// What you do.
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
    text: Vec<String>,
}

impl GameCommand for Me {
    const PRIVILEGE: Option<&'static str> = Some("shout");
    const RUNS_ON: RunsOn = RunsOn::Chat;

    fn run(self, game: &mut Game, caller: Caller) -> Result<String, String> {
        let text = self.text.join(" ");
        let text = check_chat_text(&text)?;
        let by = game.caller_name(caller);
        game.tell_all(&format!("* {by} {text}"));
        Ok(String::new())
    }
}

#[derive(Parser)]
#[command(name = "say", about = "say TEXT to everyone as the server")]
pub(super) struct Say {
    /// What to say.
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
    text: Vec<String>,
}

impl GameCommand for Say {
    const PRIVILEGE: Option<&'static str> = Some("server");
    const RUNS_ON: RunsOn = RunsOn::Both;

    fn run(self, game: &mut Game, _: Caller) -> Result<String, String> {
        let text = self.text.join(" ");
        let text = check_chat_text(&text)?;
        game.tell_all(&format!("[server] {text}"));
        Ok(String::new())
    }
}

#[derive(Parser)]
#[command(name = "kick", about = "disconnect a player, telling it why")]
pub(super) struct Kick {
    /// The player to disconnect.
    name: String,
    /// Why (the player is told).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    reason: Vec<String>,
}

impl GameCommand for Kick {
    const PRIVILEGE: Option<&'static str> = Some("kick");
    const RUNS_ON: RunsOn = RunsOn::Both;

    fn run(self, game: &mut Game, caller: Caller) -> Result<String, String> {
        let target = game.find_player(&self.name)?;
        let by = game.caller_name(caller);
        let reason = if self.reason.is_empty() {
            format!("kicked by {by}")
        } else {
            format!("kicked by {by}: {}", self.reason.join(" "))
        };
        game.reject(target, &reason);
        Ok(format!("{} was kicked", self.name))
    }
}

#[derive(Parser)]
#[command(
    name = "ban",
    about = "ban a name or an address (DURATION like 30m, 12h, 7d; none: for ever) and \
             disconnect who is on it",
    override_usage = "ban <NAME|IP> [DURATION] [REASON]..."
)]
pub(super) struct Ban {
    /// An account's name or an IP address.
    #[arg(value_name = "NAME|IP")]
    target: String,
    /// How long (30m, 12h, 7d; none: for ever), then why.
    #[arg(
        value_name = "DURATION REASON",
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    rest: Vec<String>,
}

impl GameCommand for Ban {
    const PRIVILEGE: Option<&'static str> = Some("ban");
    const RUNS_ON: RunsOn = RunsOn::Both;

    fn run(self, game: &mut Game, caller: Caller) -> Result<String, String> {
        let by = game.caller_name(caller);
        game.ban(&by, &self.target, &self.rest)
    }
}

#[derive(Parser)]
#[command(name = "unban", about = "lift a ban")]
pub(super) struct Unban {
    /// The name or address banned.
    #[arg(value_name = "NAME|IP")]
    target: String,
}

impl GameCommand for Unban {
    const PRIVILEGE: Option<&'static str> = Some("ban");
    const RUNS_ON: RunsOn = RunsOn::Both;

    fn run(self, game: &mut Game, _: Caller) -> Result<String, String> {
        let what = &self.target;
        let (kind, value) = ban_target(what)?;
        match game.accounts.unban(kind, &value) {
            Ok(true) => Ok(format!("{what} is no longer banned")),
            Ok(false) => Err(format!("{what} was not banned")),
            Err(error) => Err(account_error(error)),
        }
    }
}

#[derive(Parser)]
#[command(name = "grant", about = "give an account a privilege")]
pub(super) struct Grant {
    /// The account's name.
    name: String,
    /// The privilege, or `all` for every one defined.
    #[arg(value_name = "PRIVILEGE|all")]
    privilege: String,
}

impl GameCommand for Grant {
    const PRIVILEGE: Option<&'static str> = Some("privs");
    const RUNS_ON: RunsOn = RunsOn::Both;

    fn run(self, game: &mut Game, caller: Caller) -> Result<String, String> {
        let by = game.caller_name(caller);
        game.set_privilege(&by, &self.name, &self.privilege, true)
    }
}

#[derive(Parser)]
#[command(name = "revoke", about = "take a privilege from an account")]
pub(super) struct Revoke {
    /// The account's name.
    name: String,
    /// The privilege, or `all` for every one.
    #[arg(value_name = "PRIVILEGE|all")]
    privilege: String,
}

impl GameCommand for Revoke {
    const PRIVILEGE: Option<&'static str> = Some("privs");
    const RUNS_ON: RunsOn = RunsOn::Both;

    fn run(self, game: &mut Game, caller: Caller) -> Result<String, String> {
        let by = game.caller_name(caller);
        game.set_privilege(&by, &self.name, &self.privilege, false)
    }
}

#[derive(Parser)]
#[command(
    name = "privs",
    about = "an account's privileges (yours without NAME), and every privilege defined"
)]
pub(super) struct Privs {
    /// The account's name (yours without it).
    name: Option<String>,
}

impl GameCommand for Privs {
    const PRIVILEGE: Option<&'static str> = None;
    const RUNS_ON: RunsOn = RunsOn::Both;

    fn run(self, game: &mut Game, caller: Caller) -> Result<String, String> {
        if let Some(who) = self.name {
            let key = check_name(&who)?.key;
            let privileges = game.account_privileges(&key)?;
            return Ok(format!("{who}: {}", join(&privileges)));
        }
        match caller {
            Caller::Console => Ok(game.privileges_defined()),
            Caller::Player(peer) => {
                let mine = game
                    .players
                    .get(&peer)
                    .map(|p| join(&p.privileges))
                    .unwrap_or_default();
                Ok(format!("yours: {mine}\n{}", game.privileges_defined()))
            }
        }
    }
}

#[derive(Parser)]
#[command(
    name = "admin",
    about = "give an existing account every privilege defined (the operator's act; never a guest)"
)]
pub(super) struct Admin {
    /// The account's name.
    name: String,
}

impl GameCommand for Admin {
    const PRIVILEGE: Option<&'static str> = Some("privs");
    const RUNS_ON: RunsOn = RunsOn::Console;

    fn run(self, game: &mut Game, caller: Caller) -> Result<String, String> {
        let by = game.caller_name(caller);
        game.make_admin(&by, &self.name)
    }
}

#[derive(Parser)]
#[command(
    name = "password",
    about = "change your password (no spaces in either)"
)]
pub(super) struct Password {
    /// Your password now.
    #[arg(allow_hyphen_values = true)]
    old: String,
    /// The one you want.
    #[arg(allow_hyphen_values = true)]
    new: String,
}

impl GameCommand for Password {
    const PRIVILEGE: Option<&'static str> = None;
    const RUNS_ON: RunsOn = RunsOn::Chat;

    fn run(self, game: &mut Game, caller: Caller) -> Result<String, String> {
        let Caller::Player(peer) = caller else {
            return Err("password is a player's command (/password in chat)".into());
        };
        let account = game
            .players
            .get(&peer)
            .map(|p| p.account.clone())
            .ok_or("join first")?;
        if account.guest {
            return Err("you play as a guest: there is no password to change".into());
        }
        game.start_password_change(peer, &account.key, self.old, self.new)
    }
}

#[derive(Parser)]
#[command(
    name = "resetpassword",
    about = "give an account a new one-time password, shown to you; its player sets its own \
             with /password"
)]
pub(super) struct ResetPassword {
    /// The account's name.
    name: String,
}

impl GameCommand for ResetPassword {
    const PRIVILEGE: Option<&'static str> = Some("privs");
    const RUNS_ON: RunsOn = RunsOn::Both;

    fn run(self, game: &mut Game, caller: Caller) -> Result<String, String> {
        let by = game.caller_name(caller);
        game.reset_password(&by, &self.name)
    }
}

#[derive(Parser)]
#[command(
    name = "deleteaccount",
    about = "delete an account with its privileges; whoever claims the name next inherits nothing"
)]
pub(super) struct DeleteAccount {
    /// The account's name.
    name: String,
}

impl GameCommand for DeleteAccount {
    const PRIVILEGE: Option<&'static str> = Some("privs");
    const RUNS_ON: RunsOn = RunsOn::Both;

    fn run(self, game: &mut Game, caller: Caller) -> Result<String, String> {
        let by = game.caller_name(caller);
        game.delete_account(&by, &self.name)
    }
}

#[derive(Parser)]
#[command(
    name = "tp",
    about = "move a player (you without NAME) to a position or to another player",
    override_usage = "tp [NAME] <X> <Y> <Z> | [NAME] <TO_NAME>"
)]
pub(super) struct Tp {
    /// Who moves (you without it), then where: X Y Z, or another player's name.
    #[arg(
        value_name = "WHERE",
        required = true,
        num_args = 1..=4,
        allow_negative_numbers = true
    )]
    words: Vec<String>,
}

impl GameCommand for Tp {
    const PRIVILEGE: Option<&'static str> = Some("teleport");
    const RUNS_ON: RunsOn = RunsOn::Both;

    fn run(self, game: &mut Game, caller: Caller) -> Result<String, String> {
        game.teleport(caller, &self.words).unwrap_or_else(|| {
            Err(usage_error::<Self>(
                "give X Y Z as numbers, or the name of a player to go to",
            ))
        })
    }
}

#[derive(Parser)]
#[command(
    name = "status",
    about = "who is playing, for how long the server has run, the game's tick time"
)]
pub(super) struct Status {}

impl GameCommand for Status {
    const PRIVILEGE: Option<&'static str> = None;
    const RUNS_ON: RunsOn = RunsOn::Both;

    fn run(self, game: &mut Game, caller: Caller) -> Result<String, String> {
        Ok(game.status(caller))
    }
}

#[derive(Parser)]
#[command(name = "help", about = "the commands you may run")]
pub(super) struct Help {}

impl GameCommand for Help {
    const PRIVILEGE: Option<&'static str> = None;
    const RUNS_ON: RunsOn = RunsOn::Chat;

    fn run(self, game: &mut Game, caller: Caller) -> Result<String, String> {
        Ok(game.help(caller))
    }
}

/// Every command, in the order `/help` lists them.
pub(super) fn all() -> Vec<super::Defined> {
    use super::defined;
    vec![
        defined::<Msg>(),
        defined::<Me>(),
        defined::<Say>(),
        defined::<Kick>(),
        defined::<Ban>(),
        defined::<Unban>(),
        defined::<Grant>(),
        defined::<Revoke>(),
        defined::<Privs>(),
        defined::<Admin>(),
        defined::<Password>(),
        defined::<ResetPassword>(),
        defined::<DeleteAccount>(),
        defined::<Tp>(),
        defined::<Status>(),
        defined::<Help>(),
    ]
}
