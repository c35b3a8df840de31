//! Players in the game: who they are (`Account`, `Player`), joining on the
//! world's spawn (told `main.motd`), their nodes made and moved once a tick, leaving, and
//! connections that never join.
//!
//! Owns: the players' table as joining and leaving change it. Does not own:
//! logins and accounts (`login.rs`, `accounts.rs`), judging moves
//! (`actions.rs`).

use super::*;

/// Who a player is: its account (or a guest's name).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Account {
    /// What others see.
    pub(crate) name: String,
    /// The account's key (`names::PlayerName::key`).
    pub(crate) key: String,
    /// Playing without an account (`main.guests`): default privileges,
    /// nothing stored.
    pub(crate) guest: bool,
}

pub(crate) struct Player {
    pub(crate) account: Account,
    /// What it may do (`accounts.rs`; kept up to date by `/grant` and
    /// `/revoke`).
    pub(crate) privileges: BTreeSet<String>,
    pub(crate) position: [f64; 3],
    pub(crate) actions: RateLimit,
    /// Chat lines and commands ([`rules::CHAT_LIMIT`]).
    pub(crate) chat: RateLimit,
    pub(crate) motion: Motion,
    /// Its dynamic node (transient, in voxelworld; `replicate` tells the
    /// clients near it), `None` until made.
    pub(crate) node: Option<u64>,
    /// Where its node was last moved to.
    pub(crate) node_position: [f64; 3],
    /// Its node was last moved with a velocity.
    pub(crate) node_moving: bool,
    /// The wielded hotbar slot of its inventory's `main` list.
    pub(crate) wield: u16,
    /// The dig under way (`digging.rs`).
    pub(crate) digging: Option<digging::Digging>,
    /// Inspect mode (`/inspect`): its digs and punches show the voxel's
    /// history instead (not kept over a reload of the game).
    pub(crate) inspecting: bool,
}

impl Player {
    pub(crate) fn new(
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
            wield: 0,
            digging: None,
            inspecting: false,
        }
    }
}

impl Game {
    /// Takes a player out of the game (it left, or is being disconnected:
    /// its account is free at once), with its node.
    pub(crate) fn remove_player(&mut self, peer: PeerId) {
        let Some(player) = self.players.remove(&peer) else {
            return;
        };
        self.news.forget(peer);
        self.pending_moves.retain(|(p, ..)| *p != peer);
        let name = &player.account.name;
        log::info!("player {name} (peer {peer}) left");
        let left = PlayerLeft {
            name: name.clone(),
            peer,
        };
        if let Err(error) = self.host.emit(&left) {
            log::warn!("telling that {name} left: {error}");
        }
        if let Some(id) = player.node
            && let Err(error) = self.host.call(&RemoveNode { id })
        {
            log::warn!("removing the node of player {name}: {error}");
        }
    }

    /// Closes connections that have not joined within the deadline.
    pub(crate) fn drop_unjoined(&mut self) {
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

    /// Where players spawn, once the world has it (it asks for the
    /// sections there to be generated meanwhile): the world's
    /// `get_spawn`, the same for every module.
    pub(crate) fn find_spawn(&mut self) -> Result<Option<[f64; 3]>, ModuleError> {
        if self.spawn.is_none() {
            self.spawn = self.host.call(&GetSpawn {})?;
        }
        Ok(self.spawn)
    }

    pub(crate) fn spawn_waiting(&mut self) -> Result<(), ModuleError> {
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
            if !self.motd.is_empty() {
                self.tell(peer, self.motd.clone());
            }
            let privileges = self.privileges_of(&account);
            if !account.guest && self.must_change_password(&account.key) {
                self.tell(
                    peer,
                    "the operator reset your password: set your own with /password OLD NEW \
                     (you have no privileges until then)",
                );
            }
            let joined = PlayerJoined {
                name: account.name.clone(),
                peer,
            };
            // Who played from where, for `rollback ADDRESS DURATION`.
            if let Some(address) = self.addresses.get(&peer) {
                let login = buildat_voxelworld_api::LogLogin {
                    time_ms: std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX)),
                    name: account.name.clone(),
                    address: address.clone(),
                };
                if let Err(error) = self.host.emit(&login) {
                    log::warn!(
                        "telling the rollback log where {} plays from: {error}",
                        login.name
                    );
                }
            }
            self.players
                .insert(peer, Player::new(account, privileges, position, node));
            self.host.emit(&joined)?;
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
    pub(crate) fn create_player_nodes<'a>(
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
    pub(crate) fn move_player_nodes(&mut self, dtime: f64) -> Result<(), ModuleError> {
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

    /// A connection closed: whatever it was doing ends.
    pub(crate) fn on_disconnected(&mut self, peer: PeerId) {
        self.unjoined.remove(&peer);
        self.joining.remove(&peer);
        self.logged_in.remove(&peer);
        self.pending_logins.remove(&peer);
        self.pending_changes.remove(&peer);
        self.addresses.remove(&peer);
        self.remove_player(peer);
    }
}
