//! What players do, judged at the tick: moves (the world border, speed,
//! collisions, flying)
//! and digs, places, punches and uses (reach, sight; creative edits in one
//! world call, survival ones in one inventory transaction call:
//! `digging.rs`; the punches and uses told to their blocks' handler
//! modules, those of nodes to every module as `main:node_actions`).
//!
//! Owns: the moves and actions waiting for the tick and their judging.
//! Does not own: the rules themselves (`rules.rs`, pure), the world's
//! edits (voxelworld), the tick's steps (`tick.rs`).

use super::*;

/// Moves waiting for the next tick at most (the network's input budgets
/// keep far below it; past it a move is refused).
pub(crate) const MAX_PENDING_MOVES: usize = 100_000;

/// Actions waiting for the next tick at most.
pub(crate) const MAX_PENDING_ACTIONS: usize = 100_000;

/// A dig, place, punch or use waiting for the next tick.
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) struct PendingAction {
    pub(crate) peer: PeerId,
    pub(crate) voxel: Pos,
    pub(crate) act: Act,
}

/// What an action does to its voxel.
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) enum Act {
    /// Sets it to `id` (air to dig), named `name`, if `replace` allows.
    Edit {
        id: u32,
        name: String,
        replace: Replace,
    },
    /// Punches or uses it: its block's handler module is told.
    Block(BlockActionKind),
}

/// How much faster a player with `fast` may move.
pub(crate) const FAST: f64 = 4.0;

impl Game {
    /// The voxels at `positions` (`None`: not generated), in as few calls
    /// to the world as the call's limit allows (none for no position); the
    /// registry is fetched again when one of their types is not in it.
    pub(crate) fn voxels_at(&mut self, positions: &[Pos]) -> Result<Vec<Option<u32>>, ModuleError> {
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
        Ok(voxels)
    }

    /// Whether each voxel is physically solid (`None`: not generated);
    /// repeats looked up once ([`Self::voxels_at`]).
    pub(crate) fn solidity(
        &mut self,
        mut positions: Vec<Pos>,
    ) -> Result<HashMap<Pos, Option<bool>>, ModuleError> {
        positions.sort_unstable();
        positions.dedup();
        let voxels = self.voxels_at(&positions)?;
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
    pub(crate) fn correct(
        &self,
        peer: PeerId,
        position: [f64; 3],
        reason: &str,
    ) -> Result<(), ModuleError> {
        self.refuse(peer, reason)?;
        self.send(peer, &Correct { position });
        Ok(())
    }

    /// Takes a move to judge at the next tick, with every other move of
    /// the tick, in one lookup of the world: the game never waits on the
    /// world for a move (the world may be busy lighting new terrain, and
    /// pings and everyone else's packets would wait behind it).
    pub(crate) fn on_move(&mut self, peer: PeerId, packet: Move) -> Result<(), ModuleError> {
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
    pub(crate) fn judge_moves(&mut self) -> Result<(), ModuleError> {
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
            } else if let Err(reason) = rules::check_border(self.border, from, to) {
                Err(reason)
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

    /// Whether `peer` may act now: joined, holding `interact`, within the
    /// action rate (counted here), with fewer than the most actions
    /// `queued` on the server; else it is told why not and `false`.
    pub(crate) fn admit_action(
        &mut self,
        peer: PeerId,
        queued: usize,
    ) -> Result<bool, ModuleError> {
        let Some(player) = self.players.get_mut(&peer) else {
            self.refuse(peer, "join first")?;
            return Ok(false);
        };
        if !player.privileges.contains("interact") {
            self.refuse(
                peer,
                "you may not dig, place, punch or use here (no 'interact' privilege)",
            )?;
            return Ok(false);
        }
        if !player.actions.allow(Instant::now()) {
            let reason = format!(
                "more than {} actions a second",
                rules::MAX_ACTIONS_PER_SECOND
            );
            self.refuse(peer, &reason)?;
            return Ok(false);
        }
        if queued >= MAX_PENDING_ACTIONS {
            self.refuse(peer, "too many actions at once on this server; try again")?;
            return Ok(false);
        }
        Ok(true)
    }

    /// Takes a dig, place, punch or use to judge at the next tick with the
    /// tick's others (reach, sight and the edits themselves in one lookup
    /// and one call to the world). The action rate is counted when it
    /// comes.
    pub(crate) fn queue_action(&mut self, action: PendingAction) -> Result<(), ModuleError> {
        let peer = action.peer;
        if !self.admit_action(peer, self.pending_actions.len())? {
            return Ok(());
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
    /// Then the punches and uses that passed, on the voxels as the edits
    /// left them, are told to their blocks' handler modules
    /// ([`Self::tell_block_actions`]).
    pub(crate) fn judge_actions(&mut self) -> Result<(), ModuleError> {
        self.judge_dig_starts()?;
        self.judge_node_actions()?;
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
        let mut edits = Vec::with_capacity(allowed.len());
        let mut txs = Vec::new();
        let mut blocks = Vec::new();
        for action in allowed {
            let (peer, voxel) = (action.peer, action.voxel);
            match action.act {
                Act::Edit { id, name, replace } => {
                    let creative = self.players.get(&peer).is_some_and(|p| self.is_creative(p));
                    if creative {
                        edits.push((peer, voxel, id, name, replace));
                        continue;
                    }
                    let tx = if id == AIR {
                        self.dig_transaction(peer, voxel)
                    } else {
                        self.place_transaction(peer, voxel, id, &name)
                    };
                    match tx {
                        Ok(tx) => txs.push((peer, voxel, name, tx)),
                        Err(reason) => self.refuse(peer, &reason)?,
                    }
                }
                Act::Block(kind) => blocks.push((peer, voxel, kind)),
            }
        }
        self.edit_voxels(edits)?;
        self.transact_edits(txs)?;
        self.tell_block_actions(blocks)
    }

    /// The digs and places that passed, in one `EditVoxels` call.
    fn edit_voxels(
        &mut self,
        allowed: Vec<(PeerId, Pos, u32, String, Replace)>,
    ) -> Result<(), ModuleError> {
        if allowed.is_empty() {
            return Ok(());
        }
        let edits = allowed
            .iter()
            .map(|(peer, pos, id, _, replace)| EditVoxel {
                pos: *pos,
                voxel: *id,
                replace: *replace,
                save: true,
                // Handler modules are told who dug or placed.
                by: self.players.get(peer).map(|p| p.account.name.clone()),
            })
            .collect();
        let outcomes = self.host.call(&EditVoxels { edits })?;
        for ((peer, pos, _, name, replace), outcome) in allowed.into_iter().zip(outcomes) {
            match outcome {
                EditOutcome::Edited { .. } => self.news.edit(peer, pos, &name),
                EditOutcome::NotGenerated => {
                    self.refuse(peer, "that part of the world is not generated yet")?
                }
                EditOutcome::Refused { .. } if replace == Replace::OnlyAir => {
                    self.refuse(peer, "that place is not empty")?
                }
                EditOutcome::Refused { .. } => self.refuse(peer, "nothing to dig there")?,
            }
        }
        Ok(())
    }

    /// The punches and uses that passed: their voxels in one lookup, then
    /// one `main:block_action/<module>` event for each handler module of
    /// their blocks, in the order they came. A voxel whose block has no
    /// handler module is nobody's business.
    fn tell_block_actions(
        &mut self,
        allowed: Vec<(PeerId, Pos, BlockActionKind)>,
    ) -> Result<(), ModuleError> {
        if allowed.is_empty() {
            return Ok(());
        }
        let positions: Vec<Pos> = allowed.iter().map(|(_, pos, _)| *pos).collect();
        let voxels = self.voxels_at(&positions)?;
        let wielded = self.wielded(
            allowed
                .iter()
                .filter_map(|(peer, ..)| self.players.get(peer))
                .map(|p| (p.account.name.clone(), p.wield))
                .collect::<Vec<_>>(),
        );
        let mut told: BTreeMap<String, Vec<BlockAction>> = BTreeMap::new();
        let mut all = Vec::new();
        for ((peer, pos, kind), voxel) in allowed.into_iter().zip(voxels) {
            let Some(voxel) = voxel else {
                self.refuse(peer, "that part of the world is not generated yet")?;
                continue;
            };
            let Some(player) = self.players.get(&peer) else {
                continue;
            };
            let handler = self
                .registry
                .get(buildat_voxel::VoxelInstance(voxel).type_id())
                .map(|d| d.handler_module.as_str())
                .filter(|module| !module.is_empty());
            let action = BlockAction {
                pos,
                voxel,
                player: player.account.name.clone(),
                item: wielded.get(&player.account.name).cloned().flatten(),
                kind,
            };
            if let Some(module) = handler {
                told.entry(module.to_string())
                    .or_default()
                    .push(action.clone());
            }
            all.push(action);
        }
        for (module, actions) in told {
            let payload = buildat_interface::encode(&BlockActions { actions })?;
            self.host
                .emit_event(&block_action_event(&module), &payload)?;
        }
        if !all.is_empty() {
            self.host.emit(&VoxelActions { actions: all })?;
        }
        Ok(())
    }

    /// `main:punch_node` and `main:use_node`: judged at the tick (the
    /// node within reach), then told to every module as
    /// `main:node_actions`. Counted against the action rate.
    pub(crate) fn on_node_action(
        &mut self,
        peer: PeerId,
        node: u64,
        kind: BlockActionKind,
    ) -> Result<(), ModuleError> {
        if !self.admit_action(peer, self.pending_node_actions.len())? {
            return Ok(());
        }
        self.pending_node_actions.push((peer, node, kind));
        Ok(())
    }

    /// The tick's node punches and uses: each node looked up (a node gone
    /// or out of reach is refused), the wielded stacks, then one
    /// `main:node_actions` event with those that passed, in order.
    fn judge_node_actions(&mut self) -> Result<(), ModuleError> {
        let pending = std::mem::take(&mut self.pending_node_actions);
        if pending.is_empty() {
            return Ok(());
        }
        let mut passed = Vec::with_capacity(pending.len());
        for (peer, node, kind) in pending {
            let Some(player) = self.players.get(&peer) else {
                continue;
            };
            let (name, position, wield) =
                (player.account.name.clone(), player.position, player.wield);
            let Some(found) = self.host.call(&GetNode { id: node })? else {
                self.refuse(peer, &format!("no node {node}"))?;
                continue;
            };
            if rules::distance(rules::eyes(position), found.position) > rules::REACH {
                self.refuse(peer, &format!("node {node} is out of reach"))?;
                continue;
            }
            passed.push((name, wield, node, kind));
        }
        if passed.is_empty() {
            return Ok(());
        }
        let wielded = self.wielded(
            passed
                .iter()
                .map(|(name, wield, ..)| (name.clone(), *wield))
                .collect::<Vec<_>>(),
        );
        let actions = passed
            .into_iter()
            .map(|(player, _, node, kind)| NodeAction {
                node,
                item: wielded.get(&player).cloned().flatten(),
                player,
                kind,
            })
            .collect();
        self.host.emit(&NodeActions { actions })
    }

    pub(crate) fn on_dig(&mut self, peer: PeerId, packet: Dig) -> Result<(), ModuleError> {
        if self.inspected(peer, packet.voxel) {
            return Ok(());
        }
        self.queue_action(PendingAction {
            peer,
            voxel: packet.voxel,
            act: Act::Edit {
                id: AIR,
                name: buildat_voxel::AIR_NAME.to_string(),
                replace: Replace::NotAir,
            },
        })
    }

    /// `main:punch` and `main:use`: judged as a dig is, then told to the
    /// voxel's handler module.
    pub(crate) fn on_block_action(
        &mut self,
        peer: PeerId,
        voxel: Pos,
        kind: BlockActionKind,
    ) -> Result<(), ModuleError> {
        if kind == BlockActionKind::Punch && self.inspected(peer, voxel) {
            return Ok(());
        }
        self.queue_action(PendingAction {
            peer,
            voxel,
            act: Act::Block(kind),
        })
    }

    pub(crate) fn on_place(&mut self, peer: PeerId, packet: Place) -> Result<(), ModuleError> {
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
            act: Act::Edit {
                id,
                name,
                replace: Replace::OnlyAir,
            },
        })
    }
}
