//! `main`: a small default game, so a new world does something.
//!
//! Owns: players (log in to an account or join as a guest: `login.rs`,
//! `accounts.rs`, `names.rs`, `addresses.rs`; spawn on the terrain surface at the
//! origin, move), their privileges and chat (`chat.rs`: commands, also on
//! the console), where each player is (the server decides: a move too far,
//! too fast over time, through a solid voxel or up into the air is answered
//! with `main:correct` back to the last accepted position unless the
//! player's `fast`, `noclip` or `fly` lifts that rule; setting
//! `main.max_speed` in voxels a second, default 6.75, and `main.free_movement`
//! = true to skip the checks for everyone), digging, placing, punching
//! and using voxels with validation (`interact`; `rules.rs`: reach from the server's
//! position with line of sight, known voxel names, neither air nor
//! `unknown` placed, placing into air only, action rate; `actions.rs`: a
//! punch or use is told to the block's handler module as
//! `main:block_action/<module>`), a deadline to
//! join (`main.join_timeout_s`, default 120: a connection that has not
//! joined by then is closed), each player as a transient dynamic node
//! (vars `player`: the name, `peer`: the peer id, 8 bytes little-endian;
//! moved once a tick in one `MoveNodes` call; the `replicate` module shows
//! it to the players near it), sharing edits once per tick with the
//! players near them (`main:edits`, setting `main.news_radius` in voxels,
//! default 128; the chunk itself goes through the world stream), saving edited
//! sections (they become save-enabled), and telling `voxelworld` where each
//! player is so the world streams around it, and the game's own blocks
//! (a `torch`: no collision, clear, block light 14, placeable from the
//! hotbar like every registered block; it drops without a solid voxel
//! below or beside it: `special.rs`). Survival by default (`digging.rs`):
//! digs take the wielded tool's time and give their drops into the
//! player's inventory, places take from the wielded stack, each one
//! transaction of the `inventory` module with its edit; the `creative`
//! privilege (or `main.creative` for everyone) keeps endless blocks and
//! instant digs. Other modules ask `get_players` and hear
//! `main:player_joined`/`main:player_left` and `main:node_actions`
//! (punches and uses of nodes, with the wielded item). Its `client_lua/`
//! is what clients run. It times its ticks (`get_tick_stats`,
//! `buildat-main-api`, with the last minute's p50 and p99, also in
//! `/status`). Operators' basics: `main.whitelist` (the only names that
//! may play), `main.motd` (told each joiner) and the world border
//! (voxelworld's `get_border`: no move past it).
//! Does not own: the world or its stream (`voxelworld`), sockets (`network`).

pub mod accounts;
mod actions;
pub mod addresses;
pub mod chat;
mod digging;
pub mod login;
pub mod names;
mod players;
pub mod rules;
pub mod special;
mod stash;
mod tick;
pub mod verify;

#[cfg(test)]
mod glue_tests;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::{Duration, Instant};

use accounts::{Accounts, AttemptLimits, Attempts};
use actions::PendingAction;
use buildat_format::Packet;
use buildat_interface::core_api::RunCommand;
use buildat_interface::settings::Settings;
use buildat_interface::{
    Event, Host, Module, ModuleError, Receive, UnloadKind, events, export_module, log,
};
use buildat_items_api::{ItemRegistry, ItemsChanged};
use buildat_main_api::{
    BUILT_IN_PRIVILEGES, BlockAction, BlockActionKind, BlockActions, Chat, Correct,
    DefinePrivilege, Dig, DigStart, GetPlayers, GetPrivileges, GetTickStats, GrantPrivilege,
    HasPrivilege, Join, Login, Move, NodeAction, NodeActions, Ping, Place, PlayerJoined,
    PlayerLeft, PlayerState, Pong, Punch, PunchNode, Refused, RevokePrivilege, Spawn, Teleport,
    TickStats, Use, UseNode, VAR_PEER, VAR_PLAYER, VoxelActions, Wield, block_action_event,
};
use buildat_network_api::{
    self as network, ClientConnected, ClientDisconnected, Multicast, OutgoingPacket, PeerId,
    ReceivePackets, SendBatch,
};
use buildat_voxel::geometry::{Pos, SectionSize};
use buildat_voxel::{AIR, UNKNOWN, VoxelRegistry};
use buildat_voxelworld_api::{
    BlockDefinition, Border, BorderChanged, CreateNode, CreateNodes, EditOutcome, EditVoxel,
    EditVoxels, GetBorder, GetNode, GetRegistry, GetSizes, GetSpawn, GetVoxels, IDENTITY,
    MAX_VOXELS_PER_CALL, MoveNodes, NodeMotion, RegisterBlock, RemoveNode, Replace, SpecialVoxels,
    Viewer, Viewers,
};
use chat::Caller;
use players::{Account, Player};
use rules::{Motion, RateLimit};
use stash::GameStash;
use tick::{TickInProgress, TickStep};

buildat_interface::settings! {
    /// The game's settings (`--set main.KEY=VALUE`).
    struct MainSettings in "main" {
        /// Privileges a new account (and a guest) gets, separated by commas.
        default_privileges: String = "interact,shout".to_string(),
        /// Whether joining without a login plays as a guest: true, false, or auto (only from loopback).
        guests: String = "auto".to_string(),
        /// Logins one address group may try a minute.
        logins_per_address_per_minute: u32 = 10,
        /// Failed logins a minute one account name takes from addresses that never logged in to it.
        logins_per_name_per_minute: u32 = 5,
        /// Accounts made a minute, all addresses together.
        new_accounts_per_minute: u32 = 20,
        /// Logins whose password is being checked at once.
        max_pending_logins: usize = 16,
        /// Threads checking passwords.
        login_threads: usize = 2,
        /// Logins of one address group checked at once (empty: a quarter of max_pending_logins).
        pending_logins_per_address: Option<usize> = None,
        /// How far edits and moves are told to players, in voxels.
        news_radius: f64 = 128.0,
        /// Top speed in voxels a second (moves faster are corrected).
        max_speed: f64 = rules::DEFAULT_MAX_SPEED,
        /// Skip the movement checks for everyone.
        free_movement: bool = false,
        /// Seconds a connection may take to join before it is closed.
        join_timeout_s: f64 = 120.0,
        /// Every player plays as if it held `creative`: endless blocks, instant digging, no inventory.
        creative: bool = false,
        /// The only names that may play, separated by commas (empty: everyone); a `set` disconnects the players not on the new list.
        #[live]
        whitelist: String = String::new(),
        /// A chat line each player is told on joining (empty: none).
        #[live]
        motd: String = String::new(),
        /// Retired, must stay empty: it gave every privilege to whoever claimed the name first; make an admin with the console's `admin NAME`.
        admin: String = String::new(),
    }
}

/// `main.motd` trimmed, refused as a chat line would be.
fn check_motd(motd: &str) -> Result<String, ModuleError> {
    let motd = motd.trim().to_string();
    if !motd.is_empty() {
        chat::check_chat_text(&motd)
            .map_err(|reason| ModuleError::msg(format!("main.motd: {reason}")))?;
    }
    Ok(motd)
}

/// The game's own blocks (the terrain's are the generator's).
fn game_blocks() -> Vec<BlockDefinition> {
    let mut torch = BlockDefinition::simple("torch", "torch.png");
    torch.physically_solid = false;
    torch.light_source = 14;
    torch.light_absorption = 0;
    torch.handler_module = special::HANDLER.into();
    vec![torch]
}

struct Game {
    host: Host,
    players: BTreeMap<PeerId, Player>,
    /// Peers waiting for the spawn area to be generated.
    joining: BTreeMap<PeerId, Account>,
    /// The world's accounts, privileges and bans.
    accounts: Accounts,
    /// Login attempts per address and per name.
    attempts: Attempts,
    /// Each connected peer's IP address (for bans).
    addresses: BTreeMap<PeerId, String>,
    /// Peers that logged in and have not joined yet.
    logged_in: BTreeMap<PeerId, Account>,
    /// Logins waiting for their password work, and the workers doing it.
    pending_logins: BTreeMap<PeerId, login::PendingLogin>,
    /// `/password`s waiting for theirs.
    pending_changes: BTreeMap<PeerId, login::PendingChange>,
    /// Logins from one address group checked at once at most
    /// (`main.pending_logins_per_address`).
    pending_per_address: usize,
    workers: verify::Workers,
    next_ticket: u64,
    /// Every privilege defined, with what it allows.
    privileges: BTreeMap<String, String>,
    /// What a new account (and a guest) gets (`main.default_privileges`).
    default_privileges: BTreeSet<String>,
    /// Whether `main:join` without a login plays as a guest
    /// (`main.guests`: `auto` allows it for loopback peers).
    guests: String,
    /// Running a command headless (`buildat-server admin NAME`): a refused
    /// command is an error.
    headless: bool,
    /// When this instance started (`/status`).
    started: Instant,
    registry: VoxelRegistry,
    section_size: SectionSize,
    spawn: Option<[f64; 3]>,
    /// News for the players near it at the next tick: the latest position
    /// of each player that moved, and the edits in the order they were made.
    news: rules::News,
    /// How far news travels, in voxels (x and z).
    news_radius: f64,
    /// Top speed in voxels a second (`main.max_speed`).
    max_speed: f64,
    /// Moves are not checked against the world (`main.free_movement`).
    free_movement: bool,
    /// Peers connected and not yet playing, with when they connected.
    unjoined: BTreeMap<PeerId, Instant>,
    /// Moves received since the last tick, in order, with when each came
    /// (judged together at the tick: [`Game::judge_moves`]).
    pending_moves: Vec<(PeerId, [f64; 3], Instant)>,
    /// Digs, places, punches and uses received since the last tick, in
    /// order ([`Game::judge_actions`]).
    pending_actions: Vec<PendingAction>,
    /// How long a connection may take to join (`main.join_timeout_s`).
    join_timeout: Duration,
    /// How long the ticks took (`get_tick_stats`).
    tick_stats: TickStats,
    /// The tick whose steps are under way, if one is.
    tick: Option<TickInProgress>,
    /// Time of ticks that came while one was under way, for the next.
    owed_dtime: f64,
    /// Everyone plays creative (`main.creative`).
    creative: bool,
    /// The names' keys that may play (`main.whitelist`; empty: everyone).
    whitelist: BTreeSet<String>,
    /// Told each player on joining (`main.motd`; empty: nothing).
    motd: String,
    /// The world border (voxelworld's `get_border`, asked at start): no
    /// player moves past it.
    border: Option<Border>,
    /// The last minute's ticks (`get_tick_stats`, `/status`).
    tick_window: tick::TickWindow,
    /// The `items` and `inventory` modules answered when the game started:
    /// without them everyone plays creative (there is nothing to take from).
    survival: bool,
    /// The item registry (`items`), fetched when needed and dropped on
    /// `items:changed`.
    items: Option<ItemRegistry>,
    /// Dig starts received since the last tick, in order.
    pending_dig_starts: Vec<(PeerId, Pos)>,
    /// Node punches and uses received since the last tick, in order.
    pending_node_actions: Vec<(PeerId, u64, BlockActionKind)>,
}

impl Game {
    /// Queues a packet to a peer without waiting (see [`Self::send_batches`]).
    fn send<P: Packet>(&self, peer: PeerId, packet: &P) {
        if let Err(error) = network::queue_packet(&self.host, peer, packet) {
            log::debug!("sending {}: {error}", P::NAME);
        }
    }

    /// Queues packets to peers without waiting on the network module (an
    /// event, not a call: the game's thread never waits to send).
    fn send_batches(&self, batches: Vec<SendBatch>) {
        if let Err(error) = network::queue(&self.host, batches) {
            log::debug!("sending: {error}");
        }
    }

    /// Tells a player its action was refused (it stays connected).
    fn refuse(&self, peer: PeerId, reason: &str) -> Result<(), ModuleError> {
        self.send(
            peer,
            &Refused {
                reason: reason.to_string(),
            },
        );
        Ok(())
    }

    fn refresh_registry(&mut self) -> Result<(), ModuleError> {
        let mut registry = self.host.call(&GetRegistry {})?;
        registry.reindex();
        self.registry = registry;
        Ok(())
    }
}

impl Game {
    /// The console's `set` of a live setting (`main.motd`,
    /// `main.whitelist`): both checked before either is taken; a player
    /// (or a connection logging in or joining) whose name is not on a new
    /// whitelist is disconnected, told why.
    fn apply_settings(&mut self, settings: MainSettings) -> Result<String, ModuleError> {
        let whitelist = login::parse_whitelist(&settings.whitelist).map_err(ModuleError::msg)?;
        self.motd = check_motd(&settings.motd)?;
        self.whitelist = whitelist;
        if self.whitelist.is_empty() {
            return Ok(String::new());
        }
        let off: Vec<(PeerId, String)> = self
            .players
            .iter()
            .map(|(peer, player)| (peer, &player.account))
            .chain(self.joining.iter().chain(self.logged_in.iter()))
            .filter(|(_, account)| !self.whitelist.contains(&account.key))
            .map(|(peer, account)| (*peer, account.name.clone()))
            .collect();
        for (peer, name) in &off {
            self.logged_in.remove(peer);
            self.joining.remove(peer);
            self.reject(*peer, &format!("{name} is not on this server's whitelist"));
            self.remove_player(*peer);
        }
        if off.is_empty() {
            return Ok(String::new());
        }
        let names: Vec<&str> = off.iter().map(|(_, name)| name.as_str()).collect();
        Ok(format!(
            "disconnected {} not on the new whitelist: {}",
            off.len(),
            names.join(", ")
        ))
    }
}

impl Module for Game {
    fn create(host: Host) -> Result<Self, ModuleError> {
        let settings = MainSettings::read(&host)?;
        let whitelist = login::parse_whitelist(&settings.whitelist).map_err(ModuleError::msg)?;
        let motd = check_motd(&settings.motd)?;
        let world = host.world_path();
        std::fs::create_dir_all(&world)
            .map_err(|e| ModuleError::msg(format!("creating {}: {e}", world.display())))?;
        // Accounts an older version kept in tables of its own.
        match accounts::import_old_tables(&host) {
            Ok(Some(imported)) => log::info!(
                "took in {} accounts, {} privileges and {} bans from the main_* tables of \
                 world.sqlite (they are the world's values now, on its storage; the tables \
                 are dropped)",
                imported.accounts,
                imported.privileges,
                imported.bans,
            ),
            Ok(None) => {}
            Err(error) => {
                return Err(ModuleError::msg(format!(
                    "taking in the accounts of world.sqlite's main_* tables: {error}"
                )));
            }
        }
        let accounts = Accounts::new(Box::new(host))
            .map_err(|e| ModuleError::msg(format!("reading the bans: {e}")))?;
        let defaults = settings.default_privileges;
        // Whoever claimed the name first (a guest too) got every
        // privilege: the operator makes an admin of an account instead.
        let admin = settings.admin;
        if !admin.is_empty() {
            return Err(ModuleError::msg(format!(
                "main.admin is no longer read: it gave every privilege to whoever claimed the \
                 name {admin:?} first. Remove it from world.toml (or --set), let that player log \
                 in once with a password, then run `admin {admin}` on the console (or \
                 `buildat-server --world DIR admin {admin}`, or `grant {admin} all`)"
            )));
        }
        let guests = settings.guests;
        login::check_guests(&guests, None).map_err(ModuleError::msg)?;
        let attempt_limits = AttemptLimits {
            per_address: settings.logins_per_address_per_minute,
            failures_per_name: settings.logins_per_name_per_minute,
            new_accounts: settings.new_accounts_per_minute,
            window: Duration::from_secs(60),
        };
        let max_pending_logins = settings.max_pending_logins;
        let workers = verify::Workers::start(
            verify::waker(host),
            settings.login_threads,
            max_pending_logins,
        )
        .map_err(|e| ModuleError::msg(format!("starting the login workers: {e}")))?;
        Ok(Self {
            host,
            pending_logins: BTreeMap::new(),
            pending_changes: BTreeMap::new(),
            pending_per_address: settings
                .pending_logins_per_address
                .unwrap_or((max_pending_logins / 4).max(1)),
            workers,
            next_ticket: 0,
            players: BTreeMap::new(),
            joining: BTreeMap::new(),
            accounts,
            attempts: Attempts::new(attempt_limits),
            addresses: BTreeMap::new(),
            logged_in: BTreeMap::new(),
            privileges: BUILT_IN_PRIVILEGES
                .iter()
                .map(|(name, description)| (name.to_string(), description.to_string()))
                .collect(),
            default_privileges: defaults
                .split(',')
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .map(String::from)
                .collect(),
            guests,
            headless: host
                .get_config(buildat_interface::config::HEADLESS)
                .as_deref()
                == Some("1"),
            started: Instant::now(),
            registry: VoxelRegistry::default(),
            section_size: SectionSize::default(),
            spawn: None,
            news: rules::News::default(),
            news_radius: settings.news_radius,
            max_speed: settings.max_speed,
            free_movement: settings.free_movement,
            unjoined: BTreeMap::new(),
            pending_moves: Vec::new(),
            pending_actions: Vec::new(),
            join_timeout: Duration::try_from_secs_f64(settings.join_timeout_s)
                .map_err(|e| ModuleError::msg(format!("setting main.join_timeout_s: {e}")))?,
            tick_stats: TickStats::default(),
            tick: None,
            owed_dtime: 0.0,
            creative: settings.creative,
            whitelist,
            motd,
            border: None,
            tick_window: tick::TickWindow::default(),
            survival: false,
            items: None,
            pending_dig_starts: Vec::new(),
            pending_node_actions: Vec::new(),
        })
    }

    fn receive(table: &mut Receive<Self>) {
        table
            .event(|game, _: events::Start| game.start(None))
            .event(|game, _: events::Continue| {
                // A stash the previous version laid out otherwise is left:
                // the game starts without it rather than not at all.
                let stash = game.host.take_stash::<GameStash>().unwrap_or_else(|error| {
                    log::warn!("{error}");
                    None
                });
                game.start(stash)
            })
            .event(|game, tick: events::Tick| game.start_tick(tick.dtime))
            .event(|game, step: TickStep| game.tick_step(step))
            .event(|game, connected: ClientConnected| {
                game.on_connected(connected);
                Ok(())
            })
            .event(|game, gone: ClientDisconnected| {
                game.on_disconnected(gone.peer);
                Ok(())
            })
            .event_raw(verify::CHECKED_EVENT, |game, _| {
                game.on_logins_checked();
                Ok(())
            })
            .event_named(special::EVENT.clone(), |game, told: SpecialVoxels| {
                game.on_special_voxels(told)
            })
            .packet(|game, peer, join: Join| game.on_join(peer, &join.name))
            .packet(|game, peer, login: Login| {
                game.on_login(peer, login);
                Ok(())
            })
            .packet(|game, peer, chat: Chat| game.on_chat(peer, &chat.text))
            .packet(|game, peer, moved: Move| game.on_move(peer, moved))
            .packet(|game, peer, dig: Dig| game.on_dig(peer, dig))
            .packet(|game, peer, place: Place| game.on_place(peer, place))
            .packet(|game, peer, punch: Punch| {
                game.on_block_action(peer, punch.voxel, BlockActionKind::Punch)
            })
            .packet(|game, peer, used: Use| {
                game.on_block_action(peer, used.voxel, BlockActionKind::Use)
            })
            .packet(|game, peer, start: DigStart| game.on_dig_start(peer, start))
            .packet(|game, peer, wield: Wield| game.on_wield(peer, wield))
            .packet(|game, peer, punch: PunchNode| {
                game.on_node_action(peer, punch.node, BlockActionKind::Punch)
            })
            .packet(|game, peer, used: UseNode| {
                game.on_node_action(peer, used.node, BlockActionKind::Use)
            })
            .event(|game, _: ItemsChanged| {
                game.items = None;
                Ok(())
            })
            .packet(|game, peer, ping: Ping| {
                let mut data = ping.data;
                data.truncate(64);
                game.send(peer, &Pong { data });
                Ok(())
            })
            .live_settings(|game, settings: MainSettings, _| game.apply_settings(settings))
            .event(|game, changed: BorderChanged| {
                game.border = changed.border;
                Ok(())
            })
            .call(|game, _: GetTickStats| Ok(game.tick_stats()))
            .call(|game, _: GetPlayers| Ok(game.player_states()))
            .call(|game, teleport: Teleport| {
                game.teleport_player(&teleport.player, teleport.position)
                    .map_err(ModuleError::msg)
            })
            // On the console a refusal is an answer; headless, a failure
            // (the process exits non-zero).
            .call(|game, command: RunCommand| {
                match game.run_command(Caller::Console, &command.name, &command.args) {
                    Ok(answer) => Ok(answer),
                    Err(error) if game.headless => Err(ModuleError::msg(error)),
                    Err(error) => Ok(error),
                }
            })
            .call(|game, define: DefinePrivilege| game.define_privilege(define))
            .call(|game, ask: HasPrivilege| Ok(game.has_privilege(&ask.player, &ask.privilege)))
            .call(|game, ask: GetPrivileges| Ok(game.privileges_of_name(&ask.player)))
            .call(|game, grant: GrantPrivilege| {
                game.run_command(Caller::Console, "grant", &[grant.player, grant.privilege])
                    .map(drop)
                    .map_err(ModuleError::msg)
            })
            .call(|game, revoke: RevokePrivilege| {
                game.run_command(
                    Caller::Console,
                    "revoke",
                    &[revoke.player, revoke.privilege],
                )
                .map(drop)
                .map_err(ModuleError::msg)
            });
    }

    fn unload(&mut self, kind: UnloadKind) -> Result<(), ModuleError> {
        // Every pending login is answered and no worker outlives this
        // version's code (a reload then hands over who logged in).
        self.finish_pending_logins();
        if kind == UnloadKind::Reload {
            let stash = self.stash();
            self.host.store_stash(&stash)?;
        }
        Ok(())
    }
}

impl Game {
    /// `core:start` and `core:continue` (with what the previous version
    /// stashed): the world's sizes, the game's blocks and commands.
    fn start(&mut self, stash: Option<GameStash>) -> Result<(), ModuleError> {
        let sizes = self.host.call(&GetSizes {})?;
        self.section_size = SectionSize(sizes.section_size);
        self.border = self.host.call(&GetBorder {})?;
        for block in game_blocks() {
            self.host.call(&RegisterBlock { block })?;
        }
        self.refresh_registry()?;
        self.survival = self.survival_possible();
        chat::register_commands(&self.host)?;
        let Some(stash) = stash else {
            return Ok(());
        };
        self.spawn = stash.spawn;
        self.joining = stash.joining;
        self.news = stash.news;
        self.logged_in = stash.logged_in;
        self.addresses = stash.addresses;
        self.privileges.extend(stash.privileges);
        for p in stash.players {
            let privileges = self.privileges_of(&p.account);
            let mut player = Player::new(p.account, privileges, p.position, p.node);
            player.wield = p.wield;
            self.players.insert(p.peer, player);
        }
        // Connections waiting to join get a new deadline.
        let now = Instant::now();
        self.unjoined = stash.unjoined.into_iter().map(|p| (p, now)).collect();
        self.pending_moves = stash
            .pending_moves
            .into_iter()
            .map(|(peer, to, age)| {
                let age = Duration::try_from_secs_f64(age).unwrap_or_default();
                (peer, to, now.checked_sub(age).unwrap_or(now))
            })
            .collect();
        self.pending_actions = stash.pending_actions;
        self.pending_dig_starts = stash.pending_dig_starts;
        self.pending_node_actions = stash.pending_node_actions;
        log::info!("resumed with {} players", self.players.len());
        Ok(())
    }

    /// `get_players`: everyone in the game.
    fn player_states(&self) -> Vec<PlayerState> {
        self.players
            .iter()
            .map(|(peer, p)| PlayerState {
                name: p.account.name.clone(),
                peer: *peer,
                position: p.position,
                wield: p.wield,
            })
            .collect()
    }

    /// The privileges of the account named `player`, `None` if there is
    /// no such account.
    fn privileges_of_name(&self, player: &str) -> Option<Vec<String>> {
        let name = names::check_name(player).ok()?;
        self.accounts.get_name(&name.key).ok().flatten()?;
        let set = self.accounts.privileges(&name.key).ok()?;
        Some(set.into_iter().collect())
    }
}

export_module!(Game);
