//! Drops: stacks lying on the ground, each an owner `Drop(id)` with one
//! list `main` of one slot, stored like every inventory (so a census
//! counts them and they survive a restart).
//!
//! Owns: numbering new drops. Does not own: how a drop comes to be (a
//! transaction's overflow or a player's `Drop`: `commit.rs`).

use buildat_interface::ModuleError;
use buildat_inventory_api::Owner;

use crate::Inventories;
use crate::store::{self, Stored};

pub(crate) struct Drops {
    /// The next drop's id.
    next: u64,
    /// Seconds a drop lies (0: forever).
    #[allow(dead_code)]
    seconds: f64,
}

impl Drops {
    pub(crate) fn new(seconds: f64) -> Result<Self, ModuleError> {
        if !(seconds >= 0.0 && seconds.is_finite()) {
            return Err(ModuleError::msg(format!(
                "inventory.drop_seconds must be 0 or more, not {seconds}"
            )));
        }
        Ok(Self { next: 1, seconds })
    }

    /// A new drop's owner (ids are never reused while the module runs).
    pub(crate) fn new_owner(&mut self) -> Owner {
        let id = self.next;
        self.next += 1;
        Owner::Drop(id)
    }
}

impl Inventories {
    /// At start: the stored drops, numbering after them.
    pub(crate) fn drops_start(&mut self) -> Result<(), ModuleError> {
        for (owner, stored) in store::list(&self.host, "drop:")? {
            if let Owner::Drop(id) = owner {
                self.drops.next = self.drops.next.max(id + 1);
                self.held.insert(owner, stored);
            }
        }
        Ok(())
    }

    /// After a batch: drops made, changed or gone.
    pub(crate) fn drops_changed(
        &mut self,
        _before: &[(Owner, Option<Stored>)],
        _after: &[(Owner, Option<Stored>)],
    ) -> Result<(), ModuleError> {
        Ok(())
    }

    pub(crate) fn tick(&mut self, _dtime: f64) -> Result<(), ModuleError> {
        Ok(())
    }
}
