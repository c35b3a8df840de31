//! The client's `inventory:act`: each action judged (the player's own
//! inventory; a voxel's within `inventory.reach` of the player's node;
//! never another player's, a module's or a drop's), made one transaction,
//! stored, and only then answered with `inventory:answer` (the new lists
//! went out first, to every peer holding them).
//!
//! Owns: what each action means in changes. Does not own: the rules of a
//! change (`tx.rs`) or storing (`commit.rs`).

use buildat_interface::ModuleError;
use buildat_inventory_api::{
    Act, Action, Answer, Change, ItemStack, LIST_CRAFT, LIST_MAIN, Overflow, Owner, SlotRef,
    Transaction, TxOutcome, VoxelPos,
};
use buildat_network_api::{OutgoingPacket, PeerId, SendBatch};

use crate::commit::Job;
use crate::players::PlayerNode;
use crate::{Inventories, tx};

impl Inventories {
    /// An action: judged now, refused or done at once when it needs no
    /// transaction, else queued for the tick's batch (one storage write
    /// for every player's actions of a tick). A second action of a peer
    /// with one queued runs the queue first, so a player's actions are
    /// judged on the results of its earlier ones.
    pub(crate) fn on_act(&mut self, peer: PeerId, act: Act) -> Result<(), ModuleError> {
        if self.pending.iter().any(|(p, _, _)| *p == peer) {
            self.flush_acts()?;
        }
        match self.judge(peer, act.action) {
            Ok(Some(job)) => self.pending.push((peer, act.seq, job)),
            Ok(None) => self.answer(peer, act.seq, TxOutcome::Done),
            Err(reason) => self.answer(peer, act.seq, TxOutcome::Refused(reason)),
        }
        Ok(())
    }

    /// Runs the queued actions as one batch and answers them, in order.
    pub(crate) fn flush_acts(&mut self) -> Result<(), ModuleError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let pending = std::mem::take(&mut self.pending);
        let mut askers = Vec::with_capacity(pending.len());
        let mut jobs = Vec::with_capacity(pending.len());
        for (peer, seq, job) in pending {
            askers.push((peer, seq));
            jobs.push(job);
        }
        let outcomes = self.transact(jobs)?;
        // One send for every answer, after the lists.
        let batches = askers
            .into_iter()
            .zip(outcomes)
            .filter_map(|((peer, seq), outcome)| {
                let packet = OutgoingPacket::new(&answer_of(seq, outcome)).ok()?;
                Some(SendBatch {
                    peer,
                    packets: vec![packet],
                })
            })
            .collect();
        if let Err(error) = buildat_network_api::queue(&self.host, batches) {
            buildat_interface::log::debug!("sending answers: {error}");
        }
        Ok(())
    }

    fn answer(&self, peer: PeerId, seq: u32, outcome: TxOutcome) {
        self.send(peer, &answer_of(seq, outcome));
    }

    /// Where the player of `peer` is (its node, as `main` last moved it).
    fn player_state(&self, peer: PeerId) -> Result<PlayerNode, String> {
        self.players
            .get_peer(peer)
            .cloned()
            .ok_or_else(|| "where you are is not known yet".to_string())
    }

    /// Whether the player of `peer` may use `owner`'s inventory.
    fn check_access(&self, peer: PeerId, name: &str, owner: &Owner) -> Result<(), String> {
        match owner {
            Owner::Player(player) if player == name => Ok(()),
            Owner::Player(_) => Err("that is another player's inventory".into()),
            Owner::Module { .. } => Err("a module's inventory is not yours to change".into()),
            Owner::Drop(_) => Err("a drop is picked up by walking over it".into()),
            Owner::Voxel(pos) => self.check_reach(peer, *pos),
        }
    }

    fn check_reach(&self, peer: PeerId, pos: VoxelPos) -> Result<(), String> {
        let player = self.player_state(peer)?;
        let eye = [
            player.position[0],
            player.position[1] + 1.6,
            player.position[2],
        ];
        let centre = pos.map(|c| f64::from(c) + 0.5);
        let distance = eye
            .iter()
            .zip(&centre)
            .map(|(a, b)| (a - b) * (a - b))
            .sum::<f64>()
            .sqrt();
        if distance > self.reach {
            return Err(format!(
                "({}, {}, {}) is out of reach ({distance:.1} voxels, at most {})",
                pos[0], pos[1], pos[2], self.reach
            ));
        }
        Ok(())
    }

    /// The stack in a slot, if any (loading its owner).
    fn stack_at(&mut self, slot: &SlotRef) -> Result<Option<ItemStack>, String> {
        let stored = self
            .load(&slot.owner)
            .map_err(|e| e.to_string())?
            .ok_or_else(|| format!("{} has no inventory", tx::show(&slot.owner)))?;
        let list = stored
            .inventory
            .lists
            .get(&slot.list)
            .ok_or_else(|| format!("there is no list {}", slot.list))?;
        list.get(usize::from(slot.index))
            .cloned()
            .ok_or_else(|| format!("list {} has no slot {}", slot.list, slot.index))
    }

    /// An action as a job to run (`None`: done without one), or why not.
    fn judge(&mut self, peer: PeerId, action: Action) -> Result<Option<Job>, String> {
        let name = self
            .peers
            .get(&peer)
            .map(|p| p.name.clone())
            .ok_or_else(|| "you are not in the game".to_string())?;
        let by = Some(name.clone());
        match action {
            Action::Move { from, to, count } => {
                self.check_access(peer, &name, &from.owner)?;
                self.check_access(peer, &name, &to.owner)?;
                let changes = self.move_changes(&from, &to, count)?;
                let expect = vec![
                    (from.clone(), self.stack_at(&from)?),
                    (to.clone(), self.stack_at(&to)?),
                ];
                Ok(Some(Job {
                    expect,
                    ..Job::from(Transaction {
                        changes,
                        edit: None,
                        by,
                    })
                }))
            }
            Action::Drop { from, count } => {
                self.check_access(peer, &name, &from.owner)?;
                let stack = self
                    .stack_at(&from)?
                    .ok_or_else(|| format!("slot {} is empty", from.index))?;
                if count == 0 || count > stack.count {
                    return Err(format!(
                        "slot {} holds {} {}",
                        from.index, stack.count, stack.name
                    ));
                }
                let player = self.player_state(peer)?;
                let at = [
                    player.position[0],
                    player.position[1] + 0.5,
                    player.position[2],
                ];
                let changes = vec![Change::Take {
                    slot: from.clone(),
                    name: stack.name.clone(),
                    count,
                }];
                Ok(Some(Job {
                    tx: Transaction {
                        changes,
                        edit: None,
                        by,
                    },
                    drops: vec![(stack.with_count(count), at)],
                    expect: vec![(from, Some(stack))],
                }))
            }
            Action::Craft { grid, to } => {
                self.check_access(peer, &name, &grid)?;
                self.check_access(peer, &name, &to.owner)?;
                let (changes, expect) = self.craft_changes(&grid, &to, &name)?;
                Ok(Some(Job {
                    expect,
                    ..Job::from(Transaction {
                        changes,
                        edit: None,
                        by,
                    })
                }))
            }
            Action::Open { voxel } => {
                self.check_reach(peer, voxel)?;
                let owner = Owner::Voxel(voxel);
                if self.load(&owner).map_err(|e| e.to_string())?.is_none() {
                    return Err(format!("{} has no inventory", tx::show(&owner)));
                }
                if let Some(p) = self.peers.get_mut(&peer) {
                    p.open.insert(voxel);
                }
                self.send_inventory(peer, &owner);
                Ok(None)
            }
            Action::Close { voxel } => {
                if let Some(p) = self.peers.get_mut(&peer) {
                    p.open.remove(&voxel);
                }
                Ok(None)
            }
        }
    }

    /// A move: into an empty slot, onto the same item up to its stack
    /// size, or a swap with another item when the whole stack moves.
    fn move_changes(
        &mut self,
        from: &SlotRef,
        to: &SlotRef,
        count: u16,
    ) -> Result<Vec<Change>, String> {
        if from == to {
            return Err("a slot moves nothing onto itself".into());
        }
        let moving = self
            .stack_at(from)?
            .ok_or_else(|| format!("slot {} is empty", from.index))?;
        if count == 0 || count > moving.count {
            return Err(format!(
                "slot {} holds {} {}, not {count}",
                from.index, moving.count, moving.name
            ));
        }
        let take = |slot: &SlotRef, stack: &ItemStack, count| Change::Take {
            slot: slot.clone(),
            name: stack.name.clone(),
            count,
        };
        match self.stack_at(to)? {
            None => Ok(vec![
                take(from, &moving, count),
                Change::Put {
                    slot: to.clone(),
                    stack: moving.with_count(count),
                },
            ]),
            Some(there) if there.stacks_with(&moving) => {
                let room = self
                    .items
                    .stack_max(&moving.name)
                    .saturating_sub(there.count);
                let moved = count.min(room);
                if moved == 0 {
                    return Err(format!("slot {} is full", to.index));
                }
                Ok(vec![
                    take(from, &moving, moved),
                    Change::Put {
                        slot: to.clone(),
                        stack: moving.with_count(moved),
                    },
                ])
            }
            Some(there) if count == moving.count => Ok(vec![
                take(from, &moving, moving.count),
                take(to, &there, there.count),
                Change::Put {
                    slot: to.clone(),
                    stack: moving,
                },
                Change::Put {
                    slot: from.clone(),
                    stack: there,
                },
            ]),
            Some(there) => Err(format!(
                "slot {} holds {}: only the whole stack swaps",
                to.index, there.name
            )),
        }
    }

    /// Taking a craft grid's result once: its ingredients taken, the
    /// replacements left (in the slot when it emptied, else given to the
    /// crafter's main list), the output put into `to`.
    #[allow(clippy::type_complexity)]
    fn craft_changes(
        &mut self,
        grid: &Owner,
        to: &SlotRef,
        crafter: &str,
    ) -> Result<(Vec<Change>, Vec<(SlotRef, Option<ItemStack>)>), String> {
        let slots = self
            .load(grid)
            .map_err(|e| e.to_string())?
            .and_then(|s| s.inventory.lists.get(LIST_CRAFT).cloned())
            .ok_or_else(|| format!("{} has no craft grid", tx::show(grid)))?;
        let found = self
            .match_grid(&slots)
            .ok_or_else(|| "the grid makes nothing".to_string())?;
        if found.take.len() != slots.len() || found.leave.len() != slots.len() {
            return Err("crafting answered for another grid".into());
        }
        let mut changes = Vec::new();
        let mut later = Vec::new();
        let mut expect = Vec::new();
        for (index, ((held, take), leave)) in
            slots.iter().zip(&found.take).zip(&found.leave).enumerate()
        {
            let slot = SlotRef {
                owner: grid.clone(),
                list: LIST_CRAFT.into(),
                index: u16::try_from(index).map_err(|_| "a grid too large".to_string())?,
            };
            expect.push((slot.clone(), held.clone()));
            if *take > 0 {
                let stack = held
                    .as_ref()
                    .ok_or_else(|| "crafting took from an empty slot".to_string())?;
                changes.push(Change::Take {
                    slot: slot.clone(),
                    name: stack.name.clone(),
                    count: *take,
                });
                if let Some(replacement) = leave {
                    if stack.count == *take {
                        later.push(Change::Put {
                            slot,
                            stack: replacement.clone(),
                        });
                    } else {
                        later.push(Change::Give {
                            owner: Owner::Player(crafter.to_string()),
                            list: LIST_MAIN.into(),
                            stack: replacement.clone(),
                            overflow: Overflow::Refuse,
                        });
                    }
                }
            }
        }
        changes.extend(later);
        changes.push(Change::Put {
            slot: to.clone(),
            stack: found.output,
        });
        Ok((changes, expect))
    }
}

/// The answer telling an outcome.
fn answer_of(seq: u32, outcome: TxOutcome) -> Answer {
    let (ok, reason) = match outcome {
        TxOutcome::Done => (true, String::new()),
        TxOutcome::Refused(reason) => (false, reason),
    };
    Answer { seq, ok, reason }
}
