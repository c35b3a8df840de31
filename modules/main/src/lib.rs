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
//! = true to skip the checks for everyone), digging and
//! placing voxels with validation (`interact`; `rules.rs`: reach from the server's
//! position with line of sight, known voxel names, neither air nor
//! `unknown` placed, placing into air only, action rate), a deadline to
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
//! below or beside it: `special.rs`). Its `client_lua/` is what clients
//! run. It times its ticks (`get_tick_stats`, `buildat-main-api`).
//! Does not own: the world or its stream (`voxelworld`), sockets (`network`).

pub mod accounts;
pub mod addresses;
pub mod chat;
pub mod login;
pub mod names;
pub mod rules;
pub mod special;
pub mod verify;

#[cfg(test)]
mod glue_tests;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::{Duration, Instant};

use accounts::{Accounts, AttemptLimits, Attempts};
use buildat_format::Packet;
use buildat_interface::core_api::RunCommand;
use buildat_interface::{
    Event, Host, Module, ModuleError, Receive, UnloadKind, events, export_module, log,
};
use buildat_main_api::{
    BUILT_IN_PRIVILEGES, Chat, Correct, DefinePrivilege, Dig, GetPrivileges, GetTickStats,
    GrantPrivilege, HasPrivilege, Join, Login, Move, Ping, Place, Pong, Refused, RevokePrivilege,
    Spawn, TickStats, VAR_PEER, VAR_PLAYER,
};
use buildat_network_api::{
    self as network, ClientConnected, ClientDisconnected, Multicast, OutgoingPacket, PeerId,
    ReceivePackets, SendBatch,
};
use buildat_voxel::geometry::{self, Pos, SectionSize};
use buildat_voxel::{AIR, UNKNOWN, VoxelRegistry};
use buildat_voxelworld_api::{
    BlockDefinition, CreateNode, CreateNodes, EditOutcome, EditVoxel, EditVoxels, GetRegistry,
    GetSizes, GetVoxel, GetVoxels, IDENTITY, LoadOrGenerateSection, MAX_VOXELS_PER_CALL, MoveNodes,
    NodeMotion, RegisterBlock, RemoveNode, Replace, SpecialVoxels, Viewer, Viewers,
};
use chat::Caller;
use rules::{Motion, RateLimit};

/// The game's own blocks (the terrain's are the generator's).
fn game_blocks() -> Vec<BlockDefinition> {
    let mut torch = BlockDefinition::simple("torch", "torch.png");
    torch.physically_solid = false;
    torch.light_source = 14;
    torch.light_absorption = 0;
    torch.handler_module = special::HANDLER.into();
    vec![torch]
}

/// Moves waiting for the next tick at most (the network's input budgets
/// keep far below it; past it a move is refused).
const MAX_PENDING_MOVES: usize = 100_000;

/// Digs and places waiting for the next tick at most.
const MAX_PENDING_ACTIONS: usize = 100_000;

/// A dig or a place waiting for the next tick.
#[derive(serde::Serialize, serde::Deserialize)]
struct PendingAction {
    peer: PeerId,
    voxel: Pos,
    /// The voxel to set (air to dig) and its name.
    id: u32,
    name: String,
    replace: Replace,
}

/// How much faster a player with `fast` may move.
const FAST: f64 = 4.0;

/// Sections (y) searched for the surface at the spawn column.
const SPAWN_SECTIONS_Y: [i32; 3] = [1, 0, -1];

/// Who a player is: its account (or a guest's name).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct Account {
    /// What others see.
    name: String,
    /// The account's key (`names::PlayerName::key`).
    key: String,
    /// Playing without an account (`main.guests`): default privileges,
    /// nothing stored.
    guest: bool,
}

struct Player {
    account: Account,
    /// What it may do (`accounts.rs`; kept up to date by `/grant` and
    /// `/revoke`).
    privileges: BTreeSet<String>,
    position: [f64; 3],
    actions: RateLimit,
    /// Chat lines and commands ([`rules::CHAT_LIMIT`]).
    chat: RateLimit,
    motion: Motion,
    /// Its dynamic node (transient, in voxelworld; `replicate` tells the
    /// clients near it), `None` until made.
    node: Option<u64>,
    /// Where its node was last moved to.
    node_position: [f64; 3],
    /// Its node was last moved with a velocity.
    node_moving: bool,
}

impl Player {
    fn new(
        account: Account,
        privileges: BTreeSet<String>,
        position: [f64; 3],
        node: Option<u64>,
    ) -> Self {
        let (limit, window) = rules::CHAT_LIMIT;
        Self {
            account,
            privileges,
            position,
            actions: RateLimit::default(),
            chat: RateLimit::new(limit, window),
            motion: Motion::new(Instant::now()),
            node,
            node_position: position,
            node_moving: false,
        }
    }
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
    /// Digs and places received since the last tick, in order
    /// ([`Game::judge_actions`]).
    pending_actions: Vec<PendingAction>,
    /// How long a connection may take to join (`main.join_timeout_s`).
    join_timeout: Duration,
    /// How long the ticks took (`get_tick_stats`).
    tick_stats: TickStats,
    /// The tick whose steps are under way, if one is.
    tick: Option<TickInProgress>,
    /// Time of ticks that came while one was under way, for the next.
    owed_dtime: f64,
}

/// A tick's steps, each its own run of the handler: pings and packets
/// that come during a step are handled before the next one, so they wait
/// for one step (and the world's calls in it), not the whole tick.
/// `main` emits each step to itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
enum TickStep {
    /// Digs and places: their sight and the edits (two calls to the world).
    Actions,
    /// The players' nodes moved, the edits shared, late joiners dropped.
    Share,
}

impl Event for TickStep {
    const NAME: &'static str = "main:tick_step";
}

/// What the steps of a tick carry from one to the next.
#[derive(Debug, Clone, Copy)]
struct TickInProgress {
    /// Seconds since the tick before.
    dtime: f64,
    /// Time spent in the steps so far (the tick's duration counts only
    /// this, not the packets handled between them).
    busy: Duration,
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

    fn get_voxel(&self, pos: Pos) -> Result<Option<u32>, ModuleError> {
        self.host.call(&GetVoxel { pos })
    }

    /// Whether each voxel is physically solid (`None`: not generated);
    /// repeats looked up once, in as few calls to the world as the call's
    /// limit allows (none for no voxel).
    fn solidity(
        &mut self,
        mut positions: Vec<Pos>,
    ) -> Result<HashMap<Pos, Option<bool>>, ModuleError> {
        positions.sort_unstable();
        positions.dedup();
        if positions.is_empty() {
            return Ok(HashMap::new());
        }
        let mut voxels = Vec::with_capacity(positions.len());
        for batch in positions.chunks(MAX_VOXELS_PER_CALL) {
            voxels.extend(self.host.call(&GetVoxels {
                positions: batch.to_vec(),
            })?);
        }
        let known = |registry: &VoxelRegistry, id: u32| {
            registry
                .get(buildat_voxel::VoxelInstance(id).type_id())
                .is_some()
        };
        if voxels
            .iter()
            .flatten()
            .any(|id| !known(&self.registry, *id))
        {
            self.refresh_registry()?;
        }
        Ok(positions
            .into_iter()
            .zip(voxels)
            .map(|(pos, voxel)| {
                let solid = voxel.map(|id| {
                    self.registry
                        .get(buildat_voxel::VoxelInstance(id).type_id())
                        .is_some_and(|d| d.physically_solid)
                });
                (pos, solid)
            })
            .collect())
    }

    /// Refuses a move: says why and puts the player back where the server
    /// last accepted it.
    fn correct(&self, peer: PeerId, position: [f64; 3], reason: &str) -> Result<(), ModuleError> {
        self.refuse(peer, reason)?;
        self.send(peer, &Correct { position });
        Ok(())
    }

    /// Takes a player out of the game (it left, or is being disconnected:
    /// its account is free at once), with its node.
    fn remove_player(&mut self, peer: PeerId) {
        let Some(player) = self.players.remove(&peer) else {
            return;
        };
        self.news.forget(peer);
        self.pending_moves.retain(|(p, ..)| *p != peer);
        let name = &player.account.name;
        log::info!("player {name} (peer {peer}) left");
        if let Some(id) = player.node
            && let Err(error) = self.host.call(&RemoveNode { id })
        {
            log::warn!("removing the node of player {name}: {error}");
        }
    }

    /// Closes connections that have not joined within the deadline.
    fn drop_unjoined(&mut self) {
        let now = Instant::now();
        let late: Vec<PeerId> = self
            .unjoined
            .iter()
            .filter(|(_, since)| now.saturating_duration_since(**since) >= self.join_timeout)
            .map(|(peer, _)| *peer)
            .collect();
        for peer in late {
            self.unjoined.remove(&peer);
            let reason = format!(
                "did not join within {} s of connecting",
                self.join_timeout.as_secs()
            );
            self.reject(peer, &reason);
        }
    }

    /// The spawn point once the sections around the origin are generated:
    /// on the first solid voxel from the top at x = 0, z = 0.
    fn find_spawn(&mut self) -> Result<Option<[f64; 3]>, ModuleError> {
        if let Some(spawn) = self.spawn {
            return Ok(Some(spawn));
        }
        for sy in SPAWN_SECTIONS_Y {
            let status = self.host.call(&LoadOrGenerateSection {
                section: [0, sy, 0],
            })?;
            if !status.generated {
                return Ok(None);
            }
        }
        self.refresh_registry()?;
        let [_, h, _] = self.section_size.0;
        let top = (SPAWN_SECTIONS_Y[0] + 1) * h * geometry::CHUNK_SIZE - 1;
        let bottom = SPAWN_SECTIONS_Y[2] * h * geometry::CHUNK_SIZE;
        for y in (bottom..=top).rev() {
            let Some(voxel) = self.get_voxel([0, y, 0])? else {
                return Ok(None);
            };
            let solid = self
                .registry
                .get(buildat_voxel::VoxelInstance(voxel).type_id())
                .is_some_and(|d| d.physically_solid);
            if solid {
                let spawn = [0.5, f64::from(y + 1), 0.5];
                self.spawn = Some(spawn);
                return Ok(Some(spawn));
            }
        }
        let spawn = [0.5, f64::from(top), 0.5];
        self.spawn = Some(spawn);
        Ok(Some(spawn))
    }

    fn spawn_waiting(&mut self) -> Result<(), ModuleError> {
        if self.joining.is_empty() {
            return Ok(());
        }
        let Some(position) = self.find_spawn()? else {
            return Ok(());
        };
        let joining = std::mem::take(&mut self.joining);
        // The others see each joiner as a node (through `replicate`), it
        // sees them the same way: no news of everyone to everyone. One call
        // for all of a tick's joiners.
        let nodes = self.create_player_nodes(
            joining
                .iter()
                .map(|(peer, account)| (*peer, account.name.as_str(), position)),
        );
        for ((peer, account), node) in joining.into_iter().zip(nodes) {
            let guest = if account.guest { " as a guest" } else { "" };
            log::info!(
                "player {} (peer {peer}) joined{guest} at {position:?}",
                account.name
            );
            self.send(peer, &Spawn { peer, position });
            let privileges = self.privileges_of(&account);
            if !account.guest && self.must_change_password(&account.key) {
                self.tell(
                    peer,
                    "the operator reset your password: set your own with /password OLD NEW \
                     (you have no privileges until then)",
                );
            }
            self.players
                .insert(peer, Player::new(account, privileges, position, node));
            // An event, not a call: a joiner's first chunks are lit and
            // encoded on the world's thread while the game goes on (a
            // hundred joins at once would otherwise hold the game for each
            // one's first slice of streaming).
            self.host.emit(&Viewer { peer, position })?;
        }
        Ok(())
    }

    /// Makes players' nodes in one call: transient (never written), named
    /// by the player's name and peer; each `None` (logged) if the world
    /// refuses.
    fn create_player_nodes<'a>(
        &self,
        players: impl Iterator<Item = (PeerId, &'a str, [f64; 3])>,
    ) -> Vec<Option<u64>> {
        let nodes: Vec<CreateNode> = players
            .map(|(peer, name, position)| CreateNode {
                position,
                save_enabled: false,
                vars: BTreeMap::from([
                    (VAR_PLAYER.to_string(), name.as_bytes().to_vec()),
                    (VAR_PEER.to_string(), peer.to_le_bytes().to_vec()),
                ]),
            })
            .collect();
        let count = nodes.len();
        match self.host.call(&CreateNodes { nodes }) {
            Ok(ids) => {
                if ids.iter().any(Option::is_none) {
                    log::debug!("the world made no node for some players (tried again next tick)");
                }
                ids
            }
            Err(error) => {
                log::debug!("no nodes for {count} players (tried again next tick): {error}");
                vec![None; count]
            }
        }
    }

    /// Moves the nodes of the players that moved since the last tick, in
    /// one call; a node the world lost (an unload of voxelworld) is made
    /// again.
    fn move_player_nodes(&mut self, dtime: f64) -> Result<(), ModuleError> {
        let moved = self.news.take_moves();
        let mut moves = Vec::with_capacity(moved.len());
        for (peer, position) in moved {
            let Some(player) = self.players.get_mut(&peer) else {
                continue;
            };
            let Some(id) = player.node else {
                continue;
            };
            let dt = dtime.max(0.001);
            let velocity =
                std::array::from_fn(|i| ((position[i] - player.node_position[i]) / dt) as f32);
            player.node_position = position;
            moves.push(NodeMotion {
                id,
                position,
                orientation: IDENTITY,
                velocity,
            });
        }
        // A player that stopped: its velocity goes to zero once, so
        // clients interpolating stop it too.
        let moved_ids: BTreeSet<u64> = moves.iter().map(|m| m.id).collect();
        for player in self.players.values_mut() {
            let Some(id) = player.node else {
                continue;
            };
            if moved_ids.contains(&id) {
                player.node_moving = true;
            } else if std::mem::take(&mut player.node_moving) {
                moves.push(NodeMotion {
                    id,
                    position: player.node_position,
                    orientation: IDENTITY,
                    velocity: [0.0; 3],
                });
            }
        }
        let lost: BTreeSet<u64> = if moves.is_empty() {
            BTreeSet::new()
        } else {
            self.host.call(&MoveNodes { moves })?.into_iter().collect()
        };
        // Nodes the world lost (an unload of voxelworld) or never made are
        // made (again).
        let orphans: Vec<(PeerId, String, [f64; 3])> = self
            .players
            .iter()
            .filter(|(_, p)| p.node.is_none_or(|id| lost.contains(&id)))
            .map(|(peer, p)| (*peer, p.account.name.clone(), p.position))
            .collect();
        if orphans.is_empty() {
            return Ok(());
        }
        let nodes = self.create_player_nodes(
            orphans
                .iter()
                .map(|(peer, name, position)| (*peer, name.as_str(), *position)),
        );
        for ((peer, _, _), node) in orphans.iter().zip(nodes) {
            if let Some(player) = self.players.get_mut(peer) {
                player.node = node;
            }
        }
        Ok(())
    }

    /// Takes a move to judge at the next tick, with every other move of
    /// the tick, in one lookup of the world: the game never waits on the
    /// world for a move (the world may be busy lighting new terrain, and
    /// pings and everyone else's packets would wait behind it).
    fn on_move(&mut self, peer: PeerId, packet: Move) -> Result<(), ModuleError> {
        let position = packet.position;
        if let Err(reason) = rules::check_position(position) {
            return self.refuse(peer, &reason);
        }
        if !self.players.contains_key(&peer) {
            return self.refuse(peer, "join first");
        }
        if self.pending_moves.len() >= MAX_PENDING_MOVES {
            return self.refuse(peer, "too many moves at once on this server; move again");
        }
        self.pending_moves.push((peer, position, Instant::now()));
        Ok(())
    }

    /// Judges the moves received since the last tick, in order: each from
    /// where the one before it went, all their voxels in one lookup. A
    /// refused move is corrected and the player's later moves of the tick
    /// are dropped (they start from where the correction takes it back
    /// from). Each player that moved tells the world once.
    fn judge_moves(&mut self) -> Result<(), ModuleError> {
        let moves = std::mem::take(&mut self.pending_moves);
        if moves.is_empty() {
            return Ok(());
        }
        let mut chain: HashMap<PeerId, [f64; 3]> = HashMap::new();
        let mut planned = Vec::with_capacity(moves.len());
        for (peer, to, at) in moves {
            let Some(player) = self.players.get(&peer) else {
                continue; // left meanwhile
            };
            let from = chain.get(&peer).copied().unwrap_or(player.position);
            chain.insert(peer, to);
            let checks = self.move_checks(player);
            let voxels = ((checks.collide || checks.gravity)
                && rules::distance(from, to) <= rules::MAX_MOVE)
                .then(|| rules::move_voxels(from, to));
            planned.push((peer, from, to, at, voxels));
        }
        let solid = self.solidity(
            planned
                .iter()
                .filter_map(|(.., voxels)| voxels.as_ref())
                .flat_map(rules::MoveVoxels::all)
                .collect(),
        )?;
        let lookup = |v: Pos| solid.get(&v).copied().flatten();
        let mut refused: BTreeSet<PeerId> = BTreeSet::new();
        let mut moved: BTreeMap<PeerId, [f64; 3]> = BTreeMap::new();
        for (peer, from, to, at, voxels) in planned {
            if refused.contains(&peer) {
                continue;
            }
            let Some(player) = self.players.get(&peer) else {
                continue;
            };
            let checks = self.move_checks(player);
            let speed = if player.privileges.contains("fast") {
                self.max_speed * FAST
            } else {
                self.max_speed
            };
            let Some(player) = self.players.get_mut(&peer) else {
                continue;
            };
            let judged = if rules::distance(from, to) > rules::MAX_MOVE {
                Err(format!(
                    "moved more than {} voxels at once",
                    rules::MAX_MOVE
                ))
            } else if let Some(voxels) = &voxels {
                rules::judge_move(from, to, voxels, checks, lookup)
                    .and_then(|()| player.motion.spend(from, to, speed, at))
            } else {
                Ok(())
            };
            match judged {
                Ok(()) => {
                    player.position = to;
                    self.news.moved(peer, to);
                    moved.insert(peer, to);
                }
                Err(reason) => {
                    refused.insert(peer);
                    self.correct(peer, from, &reason)?;
                }
            }
        }
        // An event, not a call: moving never waits for the world. One for
        // everyone: the world's next call waits behind one event.
        if !moved.is_empty() {
            let viewers = moved
                .into_iter()
                .map(|(peer, position)| Viewer { peer, position })
                .collect();
            self.host.emit(&Viewers { viewers })?;
        }
        Ok(())
    }

    /// Takes a dig or a place to judge at the next tick with the tick's
    /// others (reach, sight and the edits themselves in one lookup and one
    /// call to the world). The action rate is counted when it comes.
    fn queue_action(&mut self, action: PendingAction) -> Result<(), ModuleError> {
        let peer = action.peer;
        let Some(player) = self.players.get_mut(&peer) else {
            return self.refuse(peer, "join first");
        };
        if !player.privileges.contains("interact") {
            return self.refuse(
                peer,
                "you may not dig or place here (no 'interact' privilege)",
            );
        }
        if !player.actions.allow(Instant::now()) {
            let reason = format!(
                "more than {} actions a second",
                rules::MAX_ACTIONS_PER_SECOND
            );
            return self.refuse(peer, &reason);
        }
        if self.pending_actions.len() >= MAX_PENDING_ACTIONS {
            return self.refuse(peer, "too many actions at once on this server; try again");
        }
        self.pending_actions.push(action);
        Ok(())
    }

    /// Judges the actions received since the last tick, in order: reach
    /// and line of sight from the server's position of each player (after
    /// the tick's moves), the sight of all of them in one lookup, then
    /// every edit that passed in one `EditVoxels` call (the world checks
    /// and sets each in turn, saves its section from then on and streams
    /// the change); each edit done goes to the news of the players near it.
    fn judge_actions(&mut self) -> Result<(), ModuleError> {
        let actions = std::mem::take(&mut self.pending_actions);
        if actions.is_empty() {
            return Ok(());
        }
        let mut sighted = Vec::with_capacity(actions.len());
        for action in actions {
            let Some(player) = self.players.get(&action.peer) else {
                continue; // left meanwhile
            };
            if !rules::in_reach(player.position, action.voxel) {
                let reason = format!("{:?} is out of reach", action.voxel);
                self.refuse(action.peer, &reason)?;
                continue;
            }
            let rays = rules::sight_voxels(rules::eyes(player.position), action.voxel);
            sighted.push((action, rays));
        }
        let solid = self.solidity(
            sighted
                .iter()
                .flat_map(|(_, rays)| rays.iter().flatten().copied())
                .collect(),
        )?;
        let mut allowed = Vec::with_capacity(sighted.len());
        for (action, rays) in sighted {
            if rules::visible(&rays, |v| solid.get(&v).copied().flatten()) {
                allowed.push(action);
            } else {
                let reason = format!("{:?} is out of sight", action.voxel);
                self.refuse(action.peer, &reason)?;
            }
        }
        if allowed.is_empty() {
            return Ok(());
        }
        let edits = allowed
            .iter()
            .map(|a| EditVoxel {
                pos: a.voxel,
                voxel: a.id,
                replace: a.replace,
                save: true,
                by: None,
            })
            .collect();
        let outcomes = self.host.call(&EditVoxels { edits })?;
        for (action, outcome) in allowed.into_iter().zip(outcomes) {
            let peer = action.peer;
            match outcome {
                EditOutcome::Edited { .. } => self.news.edit(peer, action.voxel, &action.name),
                EditOutcome::NotGenerated => {
                    self.refuse(peer, "that part of the world is not generated yet")?
                }
                EditOutcome::Refused { .. } if action.replace == Replace::OnlyAir => {
                    self.refuse(peer, "that place is not empty")?
                }
                EditOutcome::Refused { .. } => self.refuse(peer, "nothing to dig there")?,
            }
        }
        Ok(())
    }

    /// Starts a tick with its first step (joins and moves); the rest
    /// follow as [`TickStep`]s. A `core:tick` that comes while a tick is
    /// under way (the world slow to answer) is folded into the next.
    fn start_tick(&mut self, dtime: f64) -> Result<(), ModuleError> {
        if self.tick.is_some() {
            self.owed_dtime += dtime;
            return Ok(());
        }
        let started = Instant::now();
        let dtime = dtime + std::mem::take(&mut self.owed_dtime);
        self.tick = Some(TickInProgress {
            dtime,
            busy: Duration::ZERO,
        });
        let done = self.spawn_waiting().and_then(|()| self.judge_moves());
        self.end_step(started, Some(TickStep::Actions))?;
        done
    }

    /// Runs one step of the tick under way; nothing if none is (a step
    /// that reached a reloaded instance: what it would have done waits,
    /// stashed, for the next tick).
    fn tick_step(&mut self, step: TickStep) -> Result<(), ModuleError> {
        let Some(tick) = self.tick else {
            return Ok(());
        };
        let started = Instant::now();
        let (done, next) = match step {
            TickStep::Actions => (self.judge_actions(), Some(TickStep::Share)),
            TickStep::Share => {
                let done = self.move_player_nodes(tick.dtime);
                self.send_edits();
                self.drop_unjoined();
                (done, None)
            }
        };
        self.end_step(started, next)?;
        done
    }

    /// Counts a step's time and queues the next step, or ends the tick
    /// (counted in `get_tick_stats`). A step that failed still passes the
    /// tick on, so one error never stops the game's ticks.
    fn end_step(&mut self, started: Instant, next: Option<TickStep>) -> Result<(), ModuleError> {
        let Some(tick) = self.tick.as_mut() else {
            return Ok(());
        };
        tick.busy += started.elapsed();
        match next {
            Some(step) => {
                if let Err(error) = self.host.emit(&step) {
                    self.tick = None;
                    return Err(error);
                }
            }
            None => {
                let busy = tick.busy;
                self.tick = None;
                self.tick_stats.observe(busy.as_secs_f64());
            }
        }
        Ok(())
    }

    /// Sends the edits gathered since the last tick: each player gets one
    /// `main:edits` of those near it (`main.news_radius`). A packet per
    /// edit per player, or all edits to everyone, would grow with the
    /// square of the player count. Players that get the same edits (all
    /// of them, on a crowded server) share one encoded packet.
    fn send_edits(&mut self) {
        let players: Vec<(PeerId, [f64; 3])> = self
            .players
            .iter()
            .map(|(peer, player)| (*peer, player.position))
            .collect();
        let multicasts = self
            .news
            .share_edits(&players, self.news_radius)
            .into_iter()
            .filter_map(|share| match OutgoingPacket::new(&share.edits) {
                Ok(packet) => Some(Multicast {
                    peers: share.peers,
                    packet,
                }),
                Err(error) => {
                    log::error!("encoding edits for {} peers: {error}", share.peers.len());
                    None
                }
            })
            .collect();
        if let Err(error) = network::queue_multicasts(&self.host, multicasts) {
            log::debug!("sending edits: {error}");
        }
    }

    fn on_dig(&mut self, peer: PeerId, packet: Dig) -> Result<(), ModuleError> {
        self.queue_action(PendingAction {
            peer,
            voxel: packet.voxel,
            id: AIR,
            name: buildat_voxel::AIR_NAME.to_string(),
            replace: Replace::NotAir,
        })
    }

    fn on_place(&mut self, peer: PeerId, packet: Place) -> Result<(), ModuleError> {
        let name = packet.name;
        if name.len() > rules::MAX_VOXEL_NAME {
            return self.refuse(peer, "a voxel name that long is never registered");
        }
        if self.registry.get_id(&name).is_none() {
            self.refresh_registry()?;
        }
        // Neither air (that is digging) nor `unknown` (what a voxel whose
        // type is gone loads as) can be placed.
        let placeable = |id: &u32| *id != AIR && *id != UNKNOWN;
        let Some(id) = self.registry.get_id(&name).filter(placeable) else {
            return self.refuse(peer, &format!("{name:?} cannot be placed"));
        };
        self.queue_action(PendingAction {
            peer,
            voxel: packet.voxel,
            id,
            name,
            replace: Replace::OnlyAir,
        })
    }
}

impl Game {
    fn stash(&mut self) -> GameStash {
        let now = Instant::now();
        GameStash {
            pending_moves: std::mem::take(&mut self.pending_moves)
                .into_iter()
                .map(|(peer, to, at)| (peer, to, now.duration_since(at).as_secs_f64()))
                .collect(),
            pending_actions: std::mem::take(&mut self.pending_actions),
            players: self
                .players
                .iter()
                .map(|(peer, p)| StashedPlayer {
                    peer: *peer,
                    account: p.account.clone(),
                    position: p.position,
                    node: p.node,
                })
                .collect(),
            joining: self.joining.clone(),
            spawn: self.spawn,
            news: self.news.clone(),
            unjoined: self.unjoined.keys().copied().collect(),
            logged_in: self.logged_in.clone(),
            addresses: self.addresses.clone(),
            privileges: self.privileges.clone(),
        }
    }
}

impl Module for Game {
    fn create(host: Host) -> Result<Self, ModuleError> {
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
        let defaults: String =
            host.get_setting("main.default_privileges", "interact,shout".to_string())?;
        // Whoever claimed the name first (a guest too) got every
        // privilege: the operator makes an admin of an account instead.
        let admin: String = host.get_setting("main.admin", String::new())?;
        if !admin.is_empty() {
            return Err(ModuleError::msg(format!(
                "main.admin is no longer read: it gave every privilege to whoever claimed the \
                 name {admin:?} first. Remove it from world.toml (or --set), let that player log \
                 in once with a password, then run `admin {admin}` on the console (or \
                 `buildat-server --world DIR admin {admin}`, or `grant {admin} all`)"
            )));
        }
        let guests: String = host.get_setting("main.guests", "auto".to_string())?;
        login::check_guests(&guests, None).map_err(ModuleError::msg)?;
        let attempt_limits = AttemptLimits {
            per_address: host.get_setting("main.logins_per_address_per_minute", 10u32)?,
            failures_per_name: host.get_setting("main.logins_per_name_per_minute", 5u32)?,
            new_accounts: host.get_setting("main.new_accounts_per_minute", 20u32)?,
            window: Duration::from_secs(60),
        };
        let max_pending_logins = host.get_setting("main.max_pending_logins", 16usize)?;
        let workers = verify::Workers::start(
            verify::waker(host),
            host.get_setting("main.login_threads", 2usize)?,
            max_pending_logins,
        )
        .map_err(|e| ModuleError::msg(format!("starting the login workers: {e}")))?;
        Ok(Self {
            host,
            pending_logins: BTreeMap::new(),
            pending_changes: BTreeMap::new(),
            pending_per_address: host.get_setting(
                "main.pending_logins_per_address",
                (max_pending_logins / 4).max(1),
            )?,
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
            news_radius: host.get_setting("main.news_radius", 128.0)?,
            max_speed: host.get_setting("main.max_speed", rules::DEFAULT_MAX_SPEED)?,
            free_movement: host.get_setting("main.free_movement", false)?,
            unjoined: BTreeMap::new(),
            pending_moves: Vec::new(),
            pending_actions: Vec::new(),
            join_timeout: Duration::from_secs_f64(host.get_setting("main.join_timeout_s", 120.0)?),
            tick_stats: TickStats::default(),
            tick: None,
            owed_dtime: 0.0,
        })
    }

    fn receive(table: &mut Receive<Self>) {
        table
            .event(|game, _: events::Start| game.start(None))
            .event(|game, _: events::Continue| game.start(game.host.take_stash::<GameStash>()?))
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
            .packet(|game, peer, ping: Ping| {
                let mut data = ping.data;
                data.truncate(64);
                game.send(peer, &Pong { data });
                Ok(())
            })
            .call(|game, _: GetTickStats| Ok(game.tick_stats.clone()))
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
        for block in game_blocks() {
            self.host.call(&RegisterBlock { block })?;
        }
        self.refresh_registry()?;
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
            self.players.insert(
                p.peer,
                Player::new(p.account, privileges, p.position, p.node),
            );
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
        log::info!("resumed with {} players", self.players.len());
        Ok(())
    }

    /// A connection closed: whatever it was doing ends.
    fn on_disconnected(&mut self, peer: PeerId) {
        self.unjoined.remove(&peer);
        self.joining.remove(&peer);
        self.logged_in.remove(&peer);
        self.pending_logins.remove(&peer);
        self.pending_changes.remove(&peer);
        self.addresses.remove(&peer);
        self.remove_player(peer);
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

/// What crosses a reload of the game: every player, so nobody is dropped.
#[derive(serde::Serialize, serde::Deserialize)]
struct GameStash {
    players: Vec<StashedPlayer>,
    joining: BTreeMap<PeerId, Account>,
    spawn: Option<[f64; 3]>,
    /// News not sent yet: it goes out at the next version's first tick.
    news: rules::News,
    /// Connections that have not joined yet (their deadline starts again).
    unjoined: Vec<PeerId>,
    logged_in: BTreeMap<PeerId, Account>,
    addresses: BTreeMap<PeerId, String>,
    /// Privileges defined (modules define theirs again when they load).
    privileges: BTreeMap<String, String>,
    /// Moves received and not judged yet, with how long ago each came (in
    /// seconds), judged at the next version's first tick.
    pending_moves: Vec<(PeerId, [f64; 3], f64)>,
    /// Digs and places received and not judged yet.
    pending_actions: Vec<PendingAction>,
}

impl buildat_interface::Stash for GameStash {
    // 2: `unjoined`; 3: players' nodes; 4: accounts; 5: pending moves and
    // actions.
    const LAYOUT: u32 = 5;
}

#[derive(serde::Serialize, serde::Deserialize)]
struct StashedPlayer {
    peer: PeerId,
    account: Account,
    position: [f64; 3],
    node: Option<u64>,
}

export_module!(Game);
