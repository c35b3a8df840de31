//! Survival digging and placing: the wielded hotbar slot, digs that take
//! time (`main:dig_start` answered with `main:dig_time`, from the voxel's
//! block item groups and the wielded tool: `buildat-items-api`'s
//! `dig_params_with`), the rules a dig completes by (time passed, same
//! wielded slot, reach and sight as every action), and the digs and places
//! of a tick sent to the `inventory` module as one `TransactMany`: each a
//! transaction with its world edit (a dig gives its drops, the overflow on
//! the ground at the voxel's centre, and wears the tool; a place takes one
//! from the wielded slot). Creative players (the `creative` privilege, or
//! `main.creative` for everyone) keep endless blocks and instant digs.
//!
//! Owns: the wield index, digs in progress, the cached item registry,
//! making the transactions. Does not own: item stacks (`inventory` holds
//! every one; main's wield is just an index), dig times and drops
//! (`buildat-items-api`), reach and sight (`rules.rs`, `actions.rs`).

use std::hash::{BuildHasher, Hasher};

use buildat_inventory_api::{
    Change, GetInventory, GetSlots, Overflow, Owner, SlotRef, TransactMany, Transaction, TxOutcome,
};
use buildat_items_api::{GetItems, ItemRegistry, ItemStack};
use buildat_main_api::{DigStart, DigTime, HOTBAR_SLOTS, Wield};

use super::*;

/// A dig completes this much before its time at the earliest (seconds: a
/// client's clock and the network's jitter).
pub(crate) const DIG_SLACK: f32 = 0.15;

/// The player inventory's list whose first [`HOTBAR_SLOTS`] slots can be
/// wielded.
pub(crate) const MAIN_LIST: &str = "main";

/// A dig under way: what was there, how long it takes, with what.
#[derive(Debug, Clone)]
pub(crate) struct Digging {
    pub(crate) voxel: Pos,
    /// The voxel seen when it started (the dig replaces exactly it).
    pub(crate) seen: u32,
    pub(crate) at: Instant,
    pub(crate) seconds: f32,
    /// The wielded slot when it started.
    pub(crate) wield: u16,
    /// The tool whose caps dig it (the slot must still hold it; its wear
    /// is added) and how much wear.
    pub(crate) tool: Option<(String, u16)>,
    /// The block item dug (its drops).
    pub(crate) block: String,
}

/// A random roll for drops.
fn roll() -> u64 {
    std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish()
}

impl Game {
    /// Whether the player plays with endless blocks and instant digs: the
    /// `creative` privilege, `main.creative`, or a game without the
    /// `items` and `inventory` modules.
    pub(crate) fn is_creative(&self, player: &Player) -> bool {
        self.creative || !self.survival || player.privileges.contains("creative")
    }

    /// Whether the `items` and `inventory` modules answer (the game's
    /// optional dependencies, loaded before it when present).
    pub(crate) fn survival_possible(&mut self) -> bool {
        let probe = GetInventory {
            owner: Owner::Module {
                module: "main".into(),
                key: "probe".into(),
            },
        };
        let answered = self.host.call(&GetItems {}).and_then(|items| {
            self.host.call(&probe)?;
            Ok(items)
        });
        match answered {
            Ok(items) => {
                self.items = Some(items);
                true
            }
            Err(error) => {
                log::info!("everyone plays creative: no items and inventory modules ({error})");
                false
            }
        }
    }

    /// The item registry, fetched when not cached (dropped on
    /// `items:changed`).
    pub(crate) fn items(&mut self) -> Result<&ItemRegistry, ModuleError> {
        if self.items.is_none() {
            self.items = Some(self.host.call(&GetItems {})?);
        }
        Ok(self.items.get_or_insert_default())
    }

    /// `main:wield`: the hotbar slot the player holds; a dig under way
    /// stops.
    pub(crate) fn on_wield(&mut self, peer: PeerId, wield: Wield) -> Result<(), ModuleError> {
        if wield.index >= HOTBAR_SLOTS {
            let reason = format!("the hotbar has slots 0 to {}", HOTBAR_SLOTS - 1);
            return self.refuse(peer, &reason);
        }
        let Some(player) = self.players.get_mut(&peer) else {
            return self.refuse(peer, "join first");
        };
        player.wield = wield.index;
        player.digging = None;
        Ok(())
    }

    /// `main:dig_start`: judged at the tick with the others of the tick.
    pub(crate) fn on_dig_start(
        &mut self,
        peer: PeerId,
        start: DigStart,
    ) -> Result<(), ModuleError> {
        if !self.admit_action(peer, self.pending_dig_starts.len())? {
            return Ok(());
        }
        // Inspect mode: the history told at the start, and no dig time
        // (the client's timed dig waits for one, so it does not dig).
        if self.inspected(peer, start.voxel) {
            return Ok(());
        }
        self.pending_dig_starts.push((peer, start.voxel));
        Ok(())
    }

    /// The wielded stack of each player named (`None`: an empty slot, or
    /// no inventory), all in one `get_slots` call; none without the
    /// `inventory` module.
    pub(crate) fn wielded(
        &self,
        players: impl IntoIterator<Item = (String, u16)>,
    ) -> BTreeMap<String, Option<ItemStack>> {
        let mut wanted: BTreeMap<String, u16> = BTreeMap::new();
        for (name, wield) in players {
            wanted.entry(name).or_insert(wield);
        }
        if !self.survival || wanted.is_empty() {
            return BTreeMap::new(); // no inventory module to ask
        }
        let slots = wanted
            .iter()
            .map(|(name, wield)| SlotRef {
                owner: Owner::Player(name.clone()),
                list: MAIN_LIST.into(),
                index: *wield,
            })
            .collect();
        match self.host.call(&GetSlots { slots }) {
            Ok(stacks) => wanted.into_keys().zip(stacks).collect(),
            Err(error) => {
                log::debug!("the wielded stacks: {error}");
                BTreeMap::new()
            }
        }
    }

    /// Judges the tick's dig starts: reach, the voxels in one lookup, the
    /// wielded stacks, and answers each with `main:dig_time` (negative and
    /// a `main:refused` when it cannot be dug with what is wielded).
    pub(crate) fn judge_dig_starts(&mut self) -> Result<(), ModuleError> {
        let starts = std::mem::take(&mut self.pending_dig_starts);
        if starts.is_empty() {
            return Ok(());
        }
        let now = Instant::now();
        let mut reached = Vec::with_capacity(starts.len());
        for (peer, voxel) in starts {
            let Some(player) = self.players.get(&peer) else {
                continue;
            };
            if !rules::in_reach(player.position, voxel) {
                self.refuse(peer, &format!("{voxel:?} is out of reach"))?;
                self.send(
                    peer,
                    &DigTime {
                        voxel,
                        seconds: -1.0,
                    },
                );
                continue;
            }
            reached.push((peer, voxel));
        }
        let positions: Vec<Pos> = reached.iter().map(|(_, voxel)| *voxel).collect();
        let voxels = self.voxels_at(&positions)?;
        let survivors: Vec<(String, u16)> = reached
            .iter()
            .filter_map(|(peer, _)| self.players.get(peer))
            .filter(|p| !self.is_creative(p))
            .map(|p| (p.account.name.clone(), p.wield))
            .collect();
        let wielded = self.wielded(survivors);
        for ((peer, voxel), seen) in reached.into_iter().zip(voxels) {
            let judged = self.judge_dig_start(peer, voxel, seen, &wielded, now);
            let seconds = match judged {
                Ok(seconds) => seconds,
                Err(reason) => {
                    self.refuse(peer, &reason)?;
                    -1.0
                }
            };
            self.send(peer, &DigTime { voxel, seconds });
        }
        Ok(())
    }

    /// One dig start: how long it takes (recorded on the player), or why
    /// it cannot be dug.
    fn judge_dig_start(
        &mut self,
        peer: PeerId,
        voxel: Pos,
        seen: Option<u32>,
        wielded: &BTreeMap<String, Option<ItemStack>>,
        now: Instant,
    ) -> Result<f32, String> {
        let Some(seen) = seen else {
            return Err("that part of the world is not generated yet".into());
        };
        let Some(player) = self.players.get(&peer) else {
            return Err("join first".into());
        };
        let creative = self.is_creative(player);
        let wield = player.wield;
        let stack = wielded.get(&player.account.name).cloned().flatten();
        let block_name = self
            .registry
            .get(buildat_voxel::VoxelInstance(seen).type_id())
            .map(|d| d.name.block_name.clone())
            .filter(|_| seen != AIR)
            .ok_or_else(|| "nothing to dig there".to_string())?;
        let (seconds, tool, block) = if creative {
            (0.0, None, block_name.clone())
        } else {
            let items = self.items().map_err(|e| e.to_string())?;
            let block = items
                .get_block(&block_name)
                .map(|def| def.name.clone())
                .ok_or_else(|| format!("{block_name} is not an item: it cannot be dug"))?;
            let tool_name = stack
                .as_ref()
                .filter(|s| items.tool_caps(&s.name).is_some())
                .map(|s| s.name.clone());
            let Some(params) = items.dig_params(&block_name, tool_name.as_deref()) else {
                let with = stack.as_ref().map_or("the hand", |s| s.name.as_str());
                return Err(format!("{block_name} cannot be dug with {with}"));
            };
            // The tool counts (and wears) only when its own caps dug it,
            // else the hand did. Its wear change, even of 0, makes the
            // completion check that the slot still holds it.
            let groups = items.get(&block).map(|def| def.groups.clone());
            let tool = tool_name
                .filter(|name| {
                    let caps = items.tool_caps(name);
                    caps.zip(groups.as_ref())
                        .and_then(|(caps, groups)| buildat_items_api::dig_params(groups, caps))
                        .is_some()
                })
                .map(|name| (name, params.wear));
            (params.seconds, tool, block)
        };
        if let Some(player) = self.players.get_mut(&peer) {
            player.digging = Some(Digging {
                voxel,
                seen,
                at: now,
                seconds,
                wield,
                tool,
                block,
            });
        }
        Ok(seconds)
    }

    /// A survival dig that passed reach and sight: its transaction, or why
    /// not (no dig of it under way, too early, another slot wielded).
    pub(crate) fn dig_transaction(
        &mut self,
        peer: PeerId,
        voxel: Pos,
    ) -> Result<Transaction, String> {
        let Some(player) = self.players.get_mut(&peer) else {
            return Err("join first".into());
        };
        let name = player.account.name.clone();
        let wield = player.wield;
        let Some(digging) = player.digging.take() else {
            return Err(format!("start digging {voxel:?} first (main:dig_start)"));
        };
        if digging.voxel != voxel {
            return Err(format!(
                "digging {:?}, not {voxel:?}: start digging it first",
                digging.voxel
            ));
        }
        let elapsed = digging.at.elapsed().as_secs_f32();
        if elapsed < digging.seconds - DIG_SLACK {
            return Err(format!(
                "{voxel:?} takes {:.2} s to dig, not {elapsed:.2} s",
                digging.seconds
            ));
        }
        if digging.wield != wield {
            return Err("another slot is wielded than when digging started".into());
        }
        let slot = SlotRef {
            owner: Owner::Player(name.clone()),
            list: MAIN_LIST.into(),
            index: wield,
        };
        let centre = std::array::from_fn(|i| f64::from(voxel[i]) + 0.5);
        let items = self.items().map_err(|e| e.to_string())?;
        let drops = items
            .get(&digging.block)
            .map(|def| buildat_items_api::roll_drops(def, roll()))
            .unwrap_or_default();
        let mut changes: Vec<Change> = drops
            .into_iter()
            .map(|stack| Change::Give {
                owner: Owner::Player(name.clone()),
                list: MAIN_LIST.into(),
                stack,
                overflow: Overflow::DropAt(centre),
            })
            .collect();
        if let Some((tool, amount)) = digging.tool {
            changes.push(Change::Wear {
                slot,
                name: tool,
                amount,
            });
        }
        Ok(Transaction {
            changes,
            edit: Some(EditVoxel {
                pos: voxel,
                voxel: AIR,
                replace: Replace::Exactly(digging.seen),
                save: true,
                by: Some(name.clone()),
            }),
            by: Some(name),
        })
    }

    /// A survival place: one of the block's item taken from the wielded
    /// slot with the edit.
    pub(crate) fn place_transaction(
        &mut self,
        peer: PeerId,
        voxel: Pos,
        id: u32,
        voxel_name: &str,
    ) -> Result<Transaction, String> {
        let Some(player) = self.players.get(&peer) else {
            return Err("join first".into());
        };
        let name = player.account.name.clone();
        let wield = player.wield;
        let items = self.items().map_err(|e| e.to_string())?;
        let block = voxel_name.split_once('@').map_or(voxel_name, |(b, _)| b);
        let item = items
            .get_block(block)
            .map(|def| def.name.clone())
            .unwrap_or_else(|| block.to_string());
        Ok(Transaction {
            changes: vec![Change::Take {
                slot: SlotRef {
                    owner: Owner::Player(name.clone()),
                    list: MAIN_LIST.into(),
                    index: wield,
                },
                name: item,
                count: 1,
            }],
            edit: Some(EditVoxel {
                pos: voxel,
                voxel: id,
                replace: Replace::OnlyAir,
                save: true,
                by: Some(name.clone()),
            }),
            by: Some(name),
        })
    }

    /// The survival digs and places of a tick: one `TransactMany` (each
    /// stored with its edit before the answer); each done is news, each
    /// refused is told why.
    pub(crate) fn transact_edits(
        &mut self,
        txs: Vec<(PeerId, Pos, String, Transaction)>,
    ) -> Result<(), ModuleError> {
        if txs.is_empty() {
            return Ok(());
        }
        let outcomes = self.host.call(&TransactMany {
            txs: txs.iter().map(|(.., tx)| tx.clone()).collect(),
        })?;
        for ((peer, pos, name, _), outcome) in txs.into_iter().zip(outcomes) {
            match outcome {
                TxOutcome::Done => self.news.edit(peer, pos, &name),
                TxOutcome::Refused(reason) => self.refuse(peer, &reason)?,
            }
        }
        Ok(())
    }
}
