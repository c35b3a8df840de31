//! A batch of transactions from staging to memory: each applied to copies
//! (`tx.rs`), the applied ones stored in ONE storage transaction
//! (`PutValues`, or voxelworld `EditTogether` when one carries a world
//! edit: one group per transaction, its edit and its owners' new values),
//! and only then memory changed, the peers told and the askers answered.
//!
//! Owns: the order of that flow. A storage failure leaves memory as it
//! was (nothing was changed before the write), so every asker hears of
//! the failure and no item is made or lost; a group voxelworld refused
//! leaves its owners as the last applied group wrote them (a later group
//! sharing a key with a refused one is refused too, so the applied groups
//! writing a key are a prefix of those writing it).
//! Does not own: the rules of a change (`tx.rs`).

use std::collections::BTreeMap;

use buildat_interface::{ModuleError, log};
use buildat_inventory_api::{
    Change, EditVoxel, Inventory, ItemStack, LIST_MAIN, MAX_TRANSACTIONS_PER_WRITE, Owner, SlotRef,
    Transaction, TxOutcome,
};
use buildat_voxelworld_api::{
    EditGroup, EditTogether, ItemLogged, LogItems, PutValues, ValueWrite,
};

use crate::store::{self, DropPlace, Stored};
use crate::{Inventories, tx};

/// One transaction to run: the API's, plus stacks a player drops whole.
pub(crate) struct Job {
    pub tx: Transaction,
    /// Stacks put on the ground as new drops (a player's `Drop`).
    pub drops: Vec<(ItemStack, [f64; 3])>,
    /// Slots as the job was judged on: when one holds something else by
    /// the time the job applies (an earlier job of the batch changed it),
    /// the job is refused (a stack's wear or metadata never swaps
    /// unseen).
    pub expect: Vec<(SlotRef, Option<ItemStack>)>,
}

impl From<Transaction> for Job {
    fn from(tx: Transaction) -> Self {
        Self {
            tx,
            drops: Vec::new(),
            expect: Vec::new(),
        }
    }
}

/// A transaction that applied to the copies, waiting for the store.
struct Staged {
    job: usize,
    edit: Option<EditVoxel>,
    /// Its owners' states after it (and the staged ones before it).
    writes: Vec<(Owner, Option<Stored>)>,
    /// Its slots' changes, for the rollback log.
    moved: Vec<Moved>,
}

/// One slot's change: the inventory and list (`player:ann main`), the
/// slot, the item and how many came in (negative: went out).
pub(crate) type Moved = (String, u16, String, i32);

/// The slots' changes from `before` to `after` of `owner`'s inventory.
pub(crate) fn moved(
    owner: &Owner,
    before: Option<&Inventory>,
    after: Option<&Inventory>,
) -> Vec<Moved> {
    let empty = BTreeMap::new();
    let was = before.map_or(&empty, |i| &i.lists);
    let now = after.map_or(&empty, |i| &i.lists);
    let mut out = Vec::new();
    for name in was
        .keys()
        .chain(now.keys().filter(|k| !was.contains_key(*k)))
    {
        let slots = |lists: &BTreeMap<String, Vec<Option<ItemStack>>>| {
            lists.get(name).cloned().unwrap_or_default()
        };
        let (old, new) = (slots(was), slots(now));
        let where_ = format!("{} {name}", owner.key());
        for index in 0..old.len().max(new.len()) {
            let slot = u16::try_from(index).unwrap_or(u16::MAX);
            let (a, b) = (
                old.get(index).cloned().flatten(),
                new.get(index).cloned().flatten(),
            );
            match (a, b) {
                (Some(a), Some(b)) if a.name == b.name => {
                    let delta = i32::from(b.count) - i32::from(a.count);
                    if delta != 0 {
                        out.push((where_.clone(), slot, a.name, delta));
                    }
                }
                (a, b) => {
                    if let Some(a) = a {
                        out.push((where_.clone(), slot, a.name, -i32::from(a.count)));
                    }
                    if let Some(b) = b {
                        out.push((where_.clone(), slot, b.name, i32::from(b.count)));
                    }
                }
            }
        }
    }
    out
}

impl Inventories {
    /// Runs `jobs` as one batch; answers each one's outcome in order. An
    /// error only when the module itself fails (a corrupt stored value).
    pub(crate) fn transact(&mut self, mut jobs: Vec<Job>) -> Result<Vec<TxOutcome>, ModuleError> {
        let mut outcomes = Vec::with_capacity(jobs.len());
        while jobs.len() > MAX_TRANSACTIONS_PER_WRITE {
            let rest = jobs.split_off(MAX_TRANSACTIONS_PER_WRITE);
            outcomes.extend(self.transact_one_write(jobs)?);
            jobs = rest;
        }
        outcomes.extend(self.transact_one_write(jobs)?);
        Ok(outcomes)
    }

    /// [`Self::transact`] for a batch stored in one write.
    fn transact_one_write(&mut self, jobs: Vec<Job>) -> Result<Vec<TxOutcome>, ModuleError> {
        let mut outcomes: Vec<TxOutcome> = Vec::with_capacity(jobs.len());
        // An item registered since the last `items:changed` we heard of.
        let unknown = jobs
            .iter()
            .flat_map(|j| &j.tx.changes)
            .any(|change| match change {
                Change::Put { stack, .. }
                | Change::Give { stack, .. }
                | Change::Drop { stack, .. } => self.items.get(&stack.name).is_none(),
                _ => false,
            });
        if unknown {
            self.refresh_items()?;
        }
        // Every owner the batch reads, loaded first.
        for job in &jobs {
            for change in &job.tx.changes {
                if let Some(owner) = tx::owner_of(change) {
                    self.load(owner)?;
                }
            }
            if let Some(edit) = &job.tx.edit {
                self.load(&Owner::Voxel(edit.pos))?;
            }
        }
        let mut staged_state: BTreeMap<Owner, Option<Stored>> = BTreeMap::new();
        let mut staged: Vec<Staged> = Vec::new();
        let now = now_seconds();
        for (index, job) in jobs.iter().enumerate() {
            match self.stage(job, &staged_state, now) {
                Ok(writes) => {
                    let mut moves = Vec::new();
                    for (owner, stored) in &writes {
                        let before = match staged_state.get(owner) {
                            Some(state) => state.clone(),
                            None => self.held.get(owner).cloned(),
                        };
                        moves.extend(moved(
                            owner,
                            before.as_ref().map(|s| &s.inventory),
                            stored.as_ref().map(|s| &s.inventory),
                        ));
                        staged_state.insert(owner.clone(), stored.clone());
                    }
                    staged.push(Staged {
                        job: index,
                        edit: job.tx.edit.clone(),
                        writes,
                        moved: moves,
                    });
                    outcomes.push(TxOutcome::Done);
                }
                Err(reason) => {
                    log::debug!("a transaction for {:?} refused: {reason}", job.tx.by);
                    outcomes.push(TxOutcome::Refused(reason));
                }
            }
        }
        if staged.is_empty() {
            return Ok(outcomes);
        }
        let stored = if staged.iter().any(|s| s.edit.is_some()) {
            self.store_together(&staged)
        } else {
            self.store_values(&staged_state).map(|()| {
                let all = staged_state.clone().into_iter().collect::<Vec<_>>();
                (vec![true; staged.len()], all)
            })
        };
        let (applied, finals) = match stored {
            Ok(done) => done,
            Err(error) => {
                // Nothing changed in memory: everyone hears of the failure.
                log::warn!("storing inventories failed, nothing applied: {error}");
                for s in &staged {
                    outcomes[s.job] = TxOutcome::Refused(format!("not stored: {error}"));
                }
                return Ok(outcomes);
            }
        };
        for (s, ok) in staged.iter().zip(&applied) {
            if !ok {
                outcomes[s.job] = TxOutcome::Refused(
                    "the world edit was refused (the voxel changed, or is not loaded)".into(),
                );
            }
        }
        self.log_moved(&jobs, &staged, &applied);
        let owners: Vec<Owner> = finals.iter().map(|(owner, _)| owner.clone()).collect();
        let before: Vec<(Owner, Option<Stored>)> = owners
            .iter()
            .map(|owner| (owner.clone(), self.held.get(owner).cloned()))
            .collect();
        self.remember(finals.clone());
        self.drops_changed(&before, &finals)?;
        self.tell_changed(&owners);
        Ok(outcomes)
    }

    /// Tells voxelworld's rollback log the slots the applied transactions
    /// changed (who, which inventory, what item, how many); a failure
    /// to tell is logged, not the transactions'.
    fn log_moved(&self, jobs: &[Job], staged: &[Staged], applied: &[bool]) {
        let time_ms = now_millis();
        let changes: Vec<ItemLogged> = staged
            .iter()
            .zip(applied)
            .filter(|(_, ok)| **ok)
            .flat_map(|(s, _)| {
                let by = jobs
                    .get(s.job)
                    .and_then(|j| j.tx.by.clone())
                    .unwrap_or_else(|| "(unnamed)".to_string());
                s.moved
                    .iter()
                    .map(move |(inventory, slot, item, count)| ItemLogged {
                        time_ms,
                        by: by.clone(),
                        inventory: inventory.clone(),
                        slot: *slot,
                        item: item.clone(),
                        count: *count,
                    })
            })
            .collect();
        if changes.is_empty() {
            return;
        }
        if let Err(error) = self.host.emit(&LogItems { changes }) {
            log::warn!("the rollback log was not told of inventory changes: {error}");
        }
    }

    /// Applies one job to copies of what it touches; its owners' new
    /// states, or why not.
    fn stage(
        &mut self,
        job: &Job,
        staged: &BTreeMap<Owner, Option<Stored>>,
        now: u64,
    ) -> Result<Vec<(Owner, Option<Stored>)>, String> {
        let current = |owner: &Owner| -> Option<Stored> {
            match staged.get(owner) {
                Some(state) => state.clone(),
                None => self.held.get(owner).cloned(),
            }
        };
        for (slot, expected) in &job.expect {
            let there = current(&slot.owner).and_then(|s| {
                s.inventory
                    .lists
                    .get(&slot.list)
                    .and_then(|l| l.get(usize::from(slot.index)).cloned())
            });
            if there.as_ref() != Some(expected) {
                return Err(format!("slot {} changed meanwhile", slot.index));
            }
        }
        let applied = tx::apply(
            &job.tx.changes,
            &|owner: &Owner| current(owner).map(|s| s.inventory),
            &self.items,
        )?;
        if !applied.destroyed.is_empty() {
            log::info!(
                "a transaction for {:?} destroyed what did not fit: {:?}",
                job.tx.by,
                applied.destroyed
            );
        }
        let mut writes: Vec<(Owner, Option<Stored>)> = Vec::new();
        for (owner, inventory) in applied.inventories {
            let drop = current(&owner).and_then(|s| s.drop);
            // An emptied drop is gone.
            if drop.is_some() && tx::is_empty(&inventory) {
                writes.push((owner, None));
            } else {
                writes.push((owner, Some(Stored { inventory, drop })));
            }
        }
        if let Some(edit) = &job.tx.edit {
            let voxel = Owner::Voxel(edit.pos);
            let state = writes
                .iter()
                .find(|(owner, _)| *owner == voxel)
                .map(|(_, state)| state.clone())
                .unwrap_or_else(|| current(&voxel));
            if let Some(state) = state {
                if !tx::is_empty(&state.inventory) {
                    return Err(format!("{} holds items", tx::show(&voxel)));
                }
                // Its empty inventory goes with the voxel.
                writes.retain(|(owner, _)| *owner != voxel);
                writes.push((voxel, None));
            }
        }
        for (stack, position) in applied.drops.iter().chain(&job.drops) {
            // Onto a drop of the same item lying within a voxel, when it fits.
            let lying = |owner: &Owner| {
                writes
                    .iter()
                    .rev()
                    .find(|(o, _)| o == owner)
                    .map(|(_, s)| s.clone())
                    .unwrap_or_else(|| current(owner))
            };
            let max = self.items.stack_max(&stack.name);
            let lying_drops = self
                .held
                .keys()
                .filter(|o| matches!(o, Owner::Drop(_)))
                .cloned();
            let merge = lying_drops
                .chain(writes.iter().map(|(o, _)| o.clone()))
                .collect::<Vec<_>>()
                .into_iter()
                .find_map(|owner| {
                    let mut there = lying(&owner)?;
                    let place = there.drop?;
                    if distance(place.position, *position) > crate::drops::MERGE_DISTANCE {
                        return None;
                    }
                    let slot = there
                        .inventory
                        .lists
                        .get_mut(LIST_MAIN)?
                        .get_mut(0)?
                        .as_mut()?;
                    if !slot.stacks_with(stack)
                        || u32::from(slot.count) + u32::from(stack.count) > u32::from(max)
                    {
                        return None;
                    }
                    slot.count += stack.count;
                    Some((owner, there))
                });
            if let Some((owner, merged)) = merge {
                writes.retain(|(o, _)| *o != owner);
                writes.push((owner, Some(merged)));
                continue;
            }
            let stored = Stored {
                inventory: Inventory {
                    lists: [(LIST_MAIN.to_string(), vec![Some(stack.clone())])]
                        .into_iter()
                        .collect(),
                },
                drop: Some(DropPlace {
                    position: *position,
                    since: now,
                }),
            };
            writes.push((self.drops.new_owner(), Some(stored)));
        }
        Ok(writes)
    }

    /// Stores the batch's final states in one `PutValues`.
    fn store_values(&self, state: &BTreeMap<Owner, Option<Stored>>) -> Result<(), ModuleError> {
        let writes = state
            .iter()
            .map(|(owner, stored)| store::write(owner, stored.as_ref()))
            .collect::<Result<Vec<ValueWrite>, _>>()?;
        if self.host.call(&PutValues { writes })? {
            Ok(())
        } else {
            Err(ModuleError::msg("the values were not written"))
        }
    }

    /// Stores the batch in one `EditTogether`, a group per transaction;
    /// answers which applied and every touched owner's final state.
    #[allow(clippy::type_complexity)]
    fn store_together(
        &self,
        staged: &[Staged],
    ) -> Result<(Vec<bool>, Vec<(Owner, Option<Stored>)>), ModuleError> {
        let groups = staged
            .iter()
            .map(|s| {
                Ok(EditGroup {
                    edits: s.edit.iter().cloned().collect(),
                    writes: s
                        .writes
                        .iter()
                        .map(|(owner, stored)| store::write(owner, stored.as_ref()))
                        .collect::<Result<Vec<_>, ModuleError>>()?,
                })
            })
            .collect::<Result<Vec<_>, ModuleError>>()?;
        let applied = self.host.call(&EditTogether { groups })?;
        if applied.len() != staged.len() {
            return Err(ModuleError::msg(format!(
                "EditTogether answered {} groups of {}",
                applied.len(),
                staged.len()
            )));
        }
        // Each owner ends as the last applied group wrote it.
        let mut finals: BTreeMap<Owner, Option<Stored>> = BTreeMap::new();
        for (s, ok) in staged.iter().zip(&applied) {
            if *ok {
                for (owner, stored) in &s.writes {
                    finals.insert(owner.clone(), stored.clone());
                }
            }
        }
        Ok((applied, finals.into_iter().collect()))
    }
}

/// The distance between two points.
pub(crate) fn distance(a: [f64; 3], b: [f64; 3]) -> f64 {
    a.iter()
        .zip(&b)
        .map(|(a, b)| (a - b) * (a - b))
        .sum::<f64>()
        .sqrt()
}

/// Milliseconds since the Unix epoch.
pub(crate) fn now_millis() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Seconds since the Unix epoch.
pub(crate) fn now_seconds() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
