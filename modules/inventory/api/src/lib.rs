//! `buildat-inventory-api`: the `inventory` module's public API: its calls
//! (inventories by owner, transactions, the census) and, re-exported from
//! `buildat-inventory-protocol`, its packets and types (`docs/protocol.md`
//! §11).
//!
//! Owns: the module's calls and what they answer. Does not own: the
//! packets' layouts (`buildat-inventory-protocol`), items' definitions
//! (`buildat-items-api`) or the rules of a transaction (`modules/inventory`).
//!
//! **Architecture Invariant**: items are created, destroyed or moved only
//! inside one [`Transaction`], applied and stored whole or not at all
//! before anyone is answered.

use std::collections::BTreeMap;

pub use buildat_inventory_protocol::*;
pub use buildat_voxelworld_api::EditVoxel;

use serde::{Deserialize, Serialize};

/// The inventory module's name, for its calls.
pub const MODULE: &str = "inventory";
/// The space of the world's values inventories are stored in (key:
/// [`Owner::key`]).
pub const VALUE_SPACE: &str = "inventory";

/// Call: makes `owner`'s inventory, or adds the lists it lacks and grows
/// the short ones (never shrinks one: no item is dropped). Stored before
/// the answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreateInventory {
    pub owner: Owner,
    /// (list name, slots).
    pub lists: Vec<(String, u16)>,
}

/// Call: an owner's inventory, `None` when it has none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GetInventory {
    pub owner: Owner,
}

/// An inventory: its lists by name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Inventory {
    pub lists: BTreeMap<String, Slots>,
}

/// Call: the stacks in several slots at once (a tick's wielded items):
/// `None` for an empty slot, or one whose owner, list or index does not
/// exist. One call instead of a [`GetInventory`] per player.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GetSlots {
    pub slots: Vec<SlotRef>,
}

/// Call: removes an owner's inventory when it is empty; answers whether it
/// is gone (false when it holds items: nothing is lost).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoveInventory {
    pub owner: Owner,
}

/// One change of a [`Transaction`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Change {
    /// The slot must hold at least `count` of `name`; they are taken.
    Take {
        slot: SlotRef,
        name: String,
        count: u16,
    },
    /// Into an empty slot or one stacking with it with room for all; else
    /// the transaction fails.
    Put { slot: SlotRef, stack: ItemStack },
    /// Anywhere in the list (stacking first, then empty slots); what does
    /// not fit goes by `overflow`.
    Give {
        owner: Owner,
        list: String,
        stack: ItemStack,
        overflow: Overflow,
    },
    /// Adds wear to the tool in the slot (must be `name`); at `WEAR_MAX` it
    /// breaks (the slot is emptied).
    Wear {
        slot: SlotRef,
        name: String,
        amount: u16,
    },
    /// Drops `stack` on the ground at `at` (a drop, in the same
    /// transaction; split into stacks of its item's stack size): with a
    /// [`Change::Take`] of the same items, moves them out of an inventory
    /// (what a player leaves where it died).
    Drop { stack: ItemStack, at: [f64; 3] },
}

/// What becomes of what a [`Change::Give`] cannot fit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum Overflow {
    /// The transaction fails.
    Refuse,
    /// Dropped on the ground there (a drop, in the same transaction).
    DropAt([f64; 3]),
    /// Gone.
    Destroy,
}

/// Changes applied and stored whole or not at all.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Transaction {
    pub changes: Vec<Change>,
    /// A world edit that belongs to it (a dig, a place): stored with it in
    /// one voxelworld `EditTogether` group; the transaction fails when the
    /// edit is refused. A dig of a voxel that has a non-empty inventory
    /// fails; of one with an empty inventory removes it in the same group.
    pub edit: Option<EditVoxel>,
    /// Who it is for (a player's name), for the log.
    pub by: Option<String>,
}

/// What became of a [`Transaction`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum TxOutcome {
    /// Applied and stored.
    Done,
    /// Nothing changed, for this reason.
    Refused(String),
}

/// Most transactions stored in one write (so a write stays within the
/// world's bound on values written at once).
pub const MAX_TRANSACTIONS_PER_WRITE: usize = 200;

/// Call: one transaction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Transact {
    pub tx: Transaction,
}

/// Call: several transactions (a tick's digs and places), each whole or
/// not at all, stored in one storage transaction (a batch of more than
/// [`MAX_TRANSACTIONS_PER_WRITE`] in several, in order); answers each
/// outcome in order. When a write fails, the transactions it held are
/// answered `Refused("not stored: ...")` and nothing of them applies.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TransactMany {
    pub txs: Vec<Transaction>,
}

/// Call: every item in every inventory (players', voxels', modules',
/// drops), counted by name, read from storage.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Census {}

buildat_interface::calls! {
    module MODULE;
    CreateInventory = "create_inventory" -> ();
    GetInventory = "get_inventory" -> Option<Inventory>;
    GetSlots = "get_slots" -> Vec<Option<ItemStack>>;
    RemoveInventory = "remove_inventory" -> bool;
    Transact = "transact" -> TxOutcome;
    TransactMany = "transact_many" -> Vec<TxOutcome>;
    Census = "census" -> BTreeMap<String, u64>;
}
