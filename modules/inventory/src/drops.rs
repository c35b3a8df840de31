//! Drops: stacks lying on the ground, each an owner `Drop(id)` with one
//! list `main` of one slot, stored like every inventory (a census counts
//! them, a restart finds them), and shown as a transient dynamic node
//! (vars `drop`: the id, 8 bytes little-endian; `item`: the name; `count`:
//! 2 bytes little-endian) made again after a restart or a reload. A
//! player within [`PICKUP_DISTANCE`] picks one up (as much as fits, one
//! transaction: the drop's take and the player's give); a new drop
//! merges into one of the same item within [`MERGE_DISTANCE`]
//! (`commit.rs`); after `inventory.drop_seconds` a drop is gone (a
//! transaction taking it whole: only then does the census change).
//!
//! Owns: numbering drops, their nodes, pickup and expiry. Does not own:
//! how a drop comes to be (a transaction's overflow, a player's `Drop`:
//! `commit.rs`).

use std::collections::BTreeMap;

use buildat_interface::{ModuleError, log};
use buildat_inventory_api::{Change, LIST_MAIN, Overflow, Owner, SlotRef, Transaction};
use buildat_voxelworld_api::{CreateNode, CreateNodes, ListNodes, RemoveNodes, SetNodeVar};

use crate::Inventories;
use crate::commit::{Job, distance, now_seconds};
use crate::store::{self, Stored};

/// A player's feet within this many voxels of a drop pick it up.
pub const PICKUP_DISTANCE: f64 = 1.5;
/// A new drop merges into a drop of the same item this near.
pub const MERGE_DISTANCE: f64 = 1.0;
/// Seconds before a drop can be picked up (so a player's own drop does
/// not come straight back).
pub const PICKUP_DELAY: u64 = 2;
/// The node variable holding a drop's id.
pub const VAR_DROP: &str = "drop";
/// The node variable holding a drop's item name.
pub const VAR_ITEM: &str = "item";
/// The node variable holding a drop's count.
pub const VAR_COUNT: &str = "count";

pub(crate) struct Drops {
    /// The next drop's id.
    next: u64,
    /// Seconds a drop lies (0: forever).
    seconds: f64,
    /// Each drop's node, once made.
    nodes: BTreeMap<u64, u64>,
    /// Seconds since expiry and missing nodes were last looked at.
    since_check: f64,
}

impl Drops {
    pub(crate) fn new(seconds: f64) -> Result<Self, ModuleError> {
        if !(seconds >= 0.0 && seconds.is_finite()) {
            return Err(ModuleError::msg(format!(
                "inventory.drop_seconds must be 0 or more, not {seconds}"
            )));
        }
        Ok(Self {
            next: 1,
            seconds,
            nodes: BTreeMap::new(),
            since_check: 0.0,
        })
    }

    /// A new drop's owner (ids are never reused while the module runs).
    pub(crate) fn new_owner(&mut self) -> Owner {
        let id = self.next;
        self.next += 1;
        Owner::Drop(id)
    }
}

fn node_vars(id: u64, stored: &Stored) -> BTreeMap<String, Vec<u8>> {
    let stack = stored
        .inventory
        .lists
        .get(LIST_MAIN)
        .and_then(|l| l.first().cloned().flatten());
    let (name, count) = stack.map_or((String::new(), 0), |s| (s.name, s.count));
    BTreeMap::from([
        (VAR_DROP.to_string(), id.to_le_bytes().to_vec()),
        (VAR_ITEM.to_string(), name.into_bytes()),
        (VAR_COUNT.to_string(), count.to_le_bytes().to_vec()),
    ])
}

impl Inventories {
    /// At start (and after a reload): the stored drops in memory, their
    /// nodes adopted or made, numbering after them.
    pub(crate) fn drops_start(&mut self) -> Result<(), ModuleError> {
        for (owner, stored) in store::list(&self.host, "drop:")? {
            if let Owner::Drop(id) = owner {
                self.drops.next = self.drops.next.max(id + 1);
                self.held.insert(owner, stored);
            }
        }
        // Nodes a previous instance made: kept for the drops still lying.
        let mut stale = Vec::new();
        match self.host.call(&ListNodes {
            with_var: Some(VAR_DROP.to_string()),
        }) {
            Ok(nodes) => {
                for node in nodes {
                    let id = node
                        .vars
                        .get(VAR_DROP)
                        .and_then(|v| <[u8; 8]>::try_from(v.as_slice()).ok())
                        .map(u64::from_le_bytes);
                    match id {
                        Some(id)
                            if self.held.contains_key(&Owner::Drop(id))
                                && !self.drops.nodes.contains_key(&id) =>
                        {
                            self.drops.nodes.insert(id, node.id);
                        }
                        _ => stale.push(node.id),
                    }
                }
            }
            Err(error) => log::debug!("listing drop nodes: {error}"),
        }
        if !stale.is_empty()
            && let Err(error) = self.host.call(&RemoveNodes { ids: stale })
        {
            log::debug!("removing stale drop nodes: {error}");
        }
        self.make_missing_nodes();
        Ok(())
    }

    /// Makes a node for every lying drop that has none.
    fn make_missing_nodes(&mut self) {
        let missing: Vec<(u64, Stored)> = self
            .held
            .iter()
            .filter_map(|(owner, stored)| match owner {
                Owner::Drop(id) if !self.drops.nodes.contains_key(id) => {
                    Some((*id, stored.clone()))
                }
                _ => None,
            })
            .collect();
        if missing.is_empty() {
            return;
        }
        let nodes = missing
            .iter()
            .map(|(id, stored)| CreateNode {
                position: stored.drop.map_or([0.0; 3], |d| d.position),
                save_enabled: false,
                vars: node_vars(*id, stored),
            })
            .collect();
        match self.host.call(&CreateNodes { nodes }) {
            Ok(made) => {
                for ((id, _), node) in missing.iter().zip(made) {
                    if let Some(node) = node {
                        self.drops.nodes.insert(*id, node);
                    }
                }
            }
            Err(error) => log::debug!("making drop nodes: {error}"),
        }
    }

    /// After a batch: nodes for drops made, counts of drops changed, nodes
    /// of drops gone removed.
    pub(crate) fn drops_changed(
        &mut self,
        before: &[(Owner, Option<Stored>)],
        after: &[(Owner, Option<Stored>)],
    ) -> Result<(), ModuleError> {
        let mut gone = Vec::new();
        for (owner, stored) in after {
            let Owner::Drop(id) = owner else {
                continue;
            };
            match (stored, self.drops.nodes.get(id)) {
                (None, Some(node)) => {
                    gone.push(*node);
                    self.drops.nodes.remove(id);
                }
                (Some(stored), Some(node)) => {
                    let was = before
                        .iter()
                        .find(|(o, _)| o == owner)
                        .and_then(|(_, s)| s.as_ref());
                    if was != Some(stored) {
                        let vars = node_vars(*id, stored);
                        for name in [VAR_ITEM, VAR_COUNT] {
                            if let Some(value) = vars.get(name)
                                && let Err(error) = self.host.call(&SetNodeVar {
                                    id: *node,
                                    name: name.to_string(),
                                    value: value.clone(),
                                })
                            {
                                log::debug!("updating drop node {node}: {error}");
                            }
                        }
                    }
                }
                _ => {}
            }
        }
        if !gone.is_empty()
            && let Err(error) = self.host.call(&RemoveNodes { ids: gone })
        {
            log::debug!("removing drop nodes: {error}");
        }
        self.make_missing_nodes();
        Ok(())
    }

    /// Every tick: the players' queued actions, pickups; once a second,
    /// expiry and missing nodes.
    pub(crate) fn tick(&mut self, dtime: f64) -> Result<(), ModuleError> {
        self.flush_acts()?;
        if !self.held.keys().any(|o| matches!(o, Owner::Drop(_))) {
            return Ok(());
        }
        self.pick_up()?;
        self.drops.since_check += dtime;
        if self.drops.since_check >= 1.0 {
            self.drops.since_check = 0.0;
            self.expire()?;
            self.make_missing_nodes();
        }
        Ok(())
    }

    /// The lying drops: owner, stack, position, since.
    fn lying(&self) -> Vec<(Owner, buildat_inventory_api::ItemStack, [f64; 3], u64)> {
        self.held
            .iter()
            .filter_map(|(owner, stored)| {
                let Owner::Drop(_) = owner else {
                    return None;
                };
                let place = stored.drop?;
                let stack = stored.inventory.lists.get(LIST_MAIN)?.first()?.clone()?;
                Some((owner.clone(), stack, place.position, place.since))
            })
            .collect()
    }

    /// Players walking over drops take what fits, a transaction each.
    fn pick_up(&mut self) -> Result<(), ModuleError> {
        if self.peers.is_empty() {
            return Ok(());
        }
        let players: Vec<_> = self.players.all().cloned().collect();
        let now = now_seconds();
        let mut jobs = Vec::new();
        for (owner, stack, position, since) in self.lying() {
            if now < since + PICKUP_DELAY {
                continue;
            }
            let Some(player) = players.iter().find(|p| {
                distance(p.position, position) <= PICKUP_DISTANCE && !self.dead.contains(&p.name)
            }) else {
                continue;
            };
            let taker = Owner::Player(player.name.clone());
            let room = self.room_for(&taker, &stack)?;
            let count = stack.count.min(room);
            if count == 0 {
                continue;
            }
            jobs.push(Job::from(Transaction {
                changes: vec![
                    Change::Take {
                        slot: SlotRef {
                            owner,
                            list: LIST_MAIN.to_string(),
                            index: 0,
                        },
                        name: stack.name.clone(),
                        count,
                    },
                    Change::Give {
                        owner: taker,
                        list: LIST_MAIN.to_string(),
                        stack: stack.with_count(count),
                        overflow: Overflow::Refuse,
                    },
                ],
                edit: None,
                by: Some(player.name.clone()),
            }));
        }
        if !jobs.is_empty() {
            self.transact(jobs)?;
        }
        Ok(())
    }

    /// How many of `stack` fit into `owner`'s main list.
    fn room_for(
        &mut self,
        owner: &Owner,
        stack: &buildat_inventory_api::ItemStack,
    ) -> Result<u16, ModuleError> {
        let max = self.items.stack_max(&stack.name);
        let Some(stored) = self.load(owner)? else {
            return Ok(0);
        };
        let room: u32 = stored
            .inventory
            .lists
            .get(LIST_MAIN)
            .map(|slots| {
                slots
                    .iter()
                    .map(|slot| match slot {
                        None => u32::from(max),
                        Some(s) if s.stacks_with(stack) => u32::from(max.saturating_sub(s.count)),
                        Some(_) => 0,
                    })
                    .sum()
            })
            .unwrap_or(0);
        Ok(u16::try_from(room).unwrap_or(u16::MAX))
    }

    /// Drops lying longer than `inventory.drop_seconds` are gone.
    fn expire(&mut self) -> Result<(), ModuleError> {
        if self.drops.seconds <= 0.0 {
            return Ok(());
        }
        let now = now_seconds() as f64;
        let jobs: Vec<Job> = self
            .lying()
            .into_iter()
            .filter(|(_, _, _, since)| now - *since as f64 >= self.drops.seconds)
            .map(|(owner, stack, _, _)| {
                Job::from(Transaction {
                    changes: vec![Change::Take {
                        slot: SlotRef {
                            owner,
                            list: LIST_MAIN.to_string(),
                            index: 0,
                        },
                        name: stack.name,
                        count: stack.count,
                    }],
                    edit: None,
                    by: buildat_voxelworld_api::by_module("inventory"),
                })
            })
            .collect();
        if !jobs.is_empty() {
            log::info!(
                "{} drops lay {} s and are gone",
                jobs.len(),
                self.drops.seconds
            );
            self.transact(jobs)?;
        }
        Ok(())
    }
}
