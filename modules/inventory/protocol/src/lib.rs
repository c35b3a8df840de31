//! `buildat-inventory-protocol`: the inventory module's packets
//! (`docs/protocol.md` §11) and the types they carry ([`Owner`],
//! [`SlotRef`], [`Slots`]), shared by the `inventory` module (through
//! `buildat-inventory-api`, which re-exports them), the client, tests and
//! bots. Depends only on `buildat-format` and `buildat-items-protocol` (the item
//! stack and its layout):
//! the client links no module ABI. The module's client Lua reads and writes
//! the same layouts with `string.pack`.
//!
//! Owns: the layouts of the `inventory:*` packets (raw little-endian, not
//! bincode), read with bounds checks, and their size limits. Does not own:
//! what the server accepts (ownership, reach, stack sizes: `modules/inventory`)
//! or the module's calls (`buildat-inventory-api`).

mod wire;

use buildat_format::payload::{Packet, PayloadError};
use serde::{Deserialize, Serialize};

pub use buildat_items_protocol::ItemStack;
use buildat_items_protocol::{put_stack, take_stack};
use wire::{Fields, put_str8};

/// A voxel position.
pub type VoxelPos = [i32; 3];

/// Who holds an inventory.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Owner {
    /// A player, by account name.
    Player(String),
    /// A voxel: a chest, a crafting table.
    Voxel(VoxelPos),
    /// A module's own inventory, by the module's name and its key.
    Module { module: String, key: String },
    /// A dropped stack on the ground (one list `main` of one slot).
    Drop(u64),
}

impl Owner {
    /// The key the owner's inventory is stored under (space `inventory`):
    /// `player:NAME`, `voxel:X,Y,Z`, `module:M:K`, `drop:ID`.
    pub fn key(&self) -> String {
        match self {
            Owner::Player(name) => format!("player:{name}"),
            Owner::Voxel([x, y, z]) => format!("voxel:{x},{y},{z}"),
            Owner::Module { module, key } => format!("module:{module}:{key}"),
            Owner::Drop(id) => format!("drop:{id}"),
        }
    }

    /// The owner of a storage key written by [`Owner::key`].
    pub fn from_key(key: &str) -> Option<Owner> {
        let (kind, rest) = key.split_once(':')?;
        match kind {
            "player" if !rest.is_empty() => Some(Owner::Player(rest.to_string())),
            "voxel" => {
                let mut parts = rest.split(',').map(|p| p.parse::<i32>().ok());
                let pos = [parts.next()??, parts.next()??, parts.next()??];
                parts.next().is_none().then_some(Owner::Voxel(pos))
            }
            "module" => {
                let (module, key) = rest.split_once(':')?;
                Some(Owner::Module {
                    module: module.to_string(),
                    key: key.to_string(),
                })
            }
            "drop" => rest.parse().ok().map(Owner::Drop),
            _ => None,
        }
    }
}

/// One slot of one list of one owner's inventory (`index` from 0).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct SlotRef {
    pub owner: Owner,
    pub list: String,
    pub index: u16,
}

/// A list's slots, in order: `None` is an empty slot.
pub type Slots = Vec<Option<ItemStack>>;

/// The player's main list (its first [`HOTBAR_SLOTS`] are the hotbar).
pub const LIST_MAIN: &str = "main";
/// A crafting grid's list (2×2 for a player, 3×3 for a crafting table).
pub const LIST_CRAFT: &str = "craft";
/// Slots of a player's `main` list.
pub const PLAYER_MAIN_SLOTS: u16 = 32;
/// Slots of a player's `craft` list (2×2).
pub const PLAYER_CRAFT_SLOTS: u16 = 4;
/// The hotbar: the first slots of `main`.
pub const HOTBAR_SLOTS: u16 = 8;
/// Most lists an inventory has, as sent.
pub const MAX_LISTS: usize = 16;
/// Most slots a list has.
pub const MAX_SLOTS: usize = 1024;
/// Longest list name, in bytes.
pub const MAX_LIST_NAME: usize = 64;
/// Longest reason an answer carries, in bytes.
pub const MAX_REASON: usize = 1000;

/// What a client asks of the server (`inventory:act`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// `count` from `from` to `to`: into an empty slot, onto the same item
    /// (up to its stack size), or swapped with another item when `count`
    /// is the whole stack.
    Move {
        from: SlotRef,
        to: SlotRef,
        count: u16,
    },
    /// `count` from `from` onto the ground before the player.
    Drop { from: SlotRef, count: u16 },
    /// Takes the result of the grid of `grid` (its `craft` list) once into
    /// `to`.
    Craft { grid: Owner, to: SlotRef },
    /// Opens a voxel's inventory (within reach): the server sends its lists
    /// and then every change.
    Open { voxel: VoxelPos },
    /// Stops hearing of a voxel's inventory.
    Close { voxel: VoxelPos },
}

/// C→S `inventory:act`: an action, numbered by the client; the server
/// answers every one with an [`Answer`] of the same `seq`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Act {
    pub seq: u32,
    pub action: Action,
}

/// S→C `inventory:answer`: what became of the [`Act`] numbered `seq`,
/// sent after its result was stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub seq: u32,
    pub ok: bool,
    /// Why not (empty when `ok`).
    pub reason: String,
}

/// S→C `inventory:lists`: an inventory whole, as the server holds it: to
/// its player on join, on `Open`, and after every change to one the peer
/// holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lists {
    pub owner: Owner,
    pub lists: Vec<(String, Slots)>,
}

/// S→C `inventory:preview`: what the `craft` grid of `owner` makes, if
/// anything (after every change to it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Preview {
    pub owner: Owner,
    pub output: Option<ItemStack>,
}

const ACTION_MOVE: u8 = 0;
const ACTION_DROP: u8 = 1;
const ACTION_CRAFT: u8 = 2;
const ACTION_OPEN: u8 = 3;
const ACTION_CLOSE: u8 = 4;

const OWNER_PLAYER: u8 = 0;
const OWNER_VOXEL: u8 = 1;
const OWNER_MODULE: u8 = 2;
const OWNER_DROP: u8 = 3;

fn put_voxel(out: &mut Vec<u8>, voxel: VoxelPos) {
    for value in voxel {
        out.extend(value.to_le_bytes());
    }
}

/// Writes an owner: `u8` kind, then its fields.
pub fn put_owner(out: &mut Vec<u8>, owner: &Owner) -> Result<(), PayloadError> {
    match owner {
        Owner::Player(name) => {
            out.push(OWNER_PLAYER);
            put_str8(out, name, "a player's name")?;
        }
        Owner::Voxel(pos) => {
            out.push(OWNER_VOXEL);
            put_voxel(out, *pos);
        }
        Owner::Module { module, key } => {
            out.push(OWNER_MODULE);
            put_str8(out, module, "a module's name")?;
            put_str8(out, key, "a module's key")?;
        }
        Owner::Drop(id) => {
            out.push(OWNER_DROP);
            out.extend(id.to_le_bytes());
        }
    }
    Ok(())
}

fn read_owner(fields: &mut Fields<'_>) -> Result<Owner, PayloadError> {
    match fields.u8("an owner's kind")? {
        OWNER_PLAYER => Ok(Owner::Player(fields.str8("a player's name")?)),
        OWNER_VOXEL => Ok(Owner::Voxel(fields.voxel()?)),
        OWNER_MODULE => Ok(Owner::Module {
            module: fields.str8("a module's name")?,
            key: fields.str8("a module's key")?,
        }),
        OWNER_DROP => Ok(Owner::Drop(fields.u64("a drop's id")?)),
        other => Err(PayloadError::Decode(format!("unknown owner kind {other}"))),
    }
}

fn put_slot_ref(out: &mut Vec<u8>, slot: &SlotRef) -> Result<(), PayloadError> {
    put_owner(out, &slot.owner)?;
    put_str8(out, &slot.list, "a list's name")?;
    out.extend(slot.index.to_le_bytes());
    Ok(())
}

fn read_slot_ref(fields: &mut Fields<'_>) -> Result<SlotRef, PayloadError> {
    Ok(SlotRef {
        owner: read_owner(fields)?,
        list: fields.str8("a list's name")?,
        index: fields.u16("a slot index")?,
    })
}

/// Writes an optional stack: `u8` 0 (none) or 1 and the stack.
fn put_maybe_stack(out: &mut Vec<u8>, stack: Option<&ItemStack>) -> Result<(), PayloadError> {
    match stack {
        None => out.push(0),
        Some(stack) => {
            out.push(1);
            put_stack(out, stack)?;
        }
    }
    Ok(())
}

fn read_maybe_stack(fields: &mut Fields<'_>) -> Result<Option<ItemStack>, PayloadError> {
    match fields.u8("a slot's flag")? {
        0 => Ok(None),
        1 => Ok(Some(take_stack(&mut fields.0)?)),
        other => Err(PayloadError::Decode(format!("a slot's flag is {other}"))),
    }
}

impl Packet for Act {
    const NAME: &'static str = "inventory:act";

    fn encode(&self) -> Result<Vec<u8>, PayloadError> {
        let mut out = Vec::with_capacity(64);
        out.extend(self.seq.to_le_bytes());
        match &self.action {
            Action::Move { from, to, count } => {
                out.push(ACTION_MOVE);
                put_slot_ref(&mut out, from)?;
                put_slot_ref(&mut out, to)?;
                out.extend(count.to_le_bytes());
            }
            Action::Drop { from, count } => {
                out.push(ACTION_DROP);
                put_slot_ref(&mut out, from)?;
                out.extend(count.to_le_bytes());
            }
            Action::Craft { grid, to } => {
                out.push(ACTION_CRAFT);
                put_owner(&mut out, grid)?;
                put_slot_ref(&mut out, to)?;
            }
            Action::Open { voxel } => {
                out.push(ACTION_OPEN);
                put_voxel(&mut out, *voxel);
            }
            Action::Close { voxel } => {
                out.push(ACTION_CLOSE);
                put_voxel(&mut out, *voxel);
            }
        }
        Ok(out)
    }

    fn decode(bytes: &[u8]) -> Result<Self, PayloadError> {
        let mut fields = Fields(bytes);
        let seq = fields.u32("a sequence number")?;
        let action = match fields.u8("an action")? {
            ACTION_MOVE => Action::Move {
                from: read_slot_ref(&mut fields)?,
                to: read_slot_ref(&mut fields)?,
                count: fields.u16("a count")?,
            },
            ACTION_DROP => Action::Drop {
                from: read_slot_ref(&mut fields)?,
                count: fields.u16("a count")?,
            },
            ACTION_CRAFT => Action::Craft {
                grid: read_owner(&mut fields)?,
                to: read_slot_ref(&mut fields)?,
            },
            ACTION_OPEN => Action::Open {
                voxel: fields.voxel()?,
            },
            ACTION_CLOSE => Action::Close {
                voxel: fields.voxel()?,
            },
            other => return Err(PayloadError::Decode(format!("unknown action {other}"))),
        };
        fields.end()?;
        Ok(Self { seq, action })
    }
}

impl Packet for Answer {
    const NAME: &'static str = "inventory:answer";

    fn encode(&self) -> Result<Vec<u8>, PayloadError> {
        let mut out = Vec::with_capacity(5 + self.reason.len());
        out.extend(self.seq.to_le_bytes());
        out.push(u8::from(self.ok));
        out.extend(self.reason.as_bytes());
        Ok(out)
    }

    fn decode(bytes: &[u8]) -> Result<Self, PayloadError> {
        let mut fields = Fields(bytes);
        let seq = fields.u32("a sequence number")?;
        let ok = match fields.u8("ok")? {
            0 => false,
            1 => true,
            other => return Err(PayloadError::Decode(format!("ok is {other}"))),
        };
        let reason = fields.rest_text("the reason")?;
        Ok(Self { seq, ok, reason })
    }
}

impl Packet for Lists {
    const NAME: &'static str = "inventory:lists";

    fn encode(&self) -> Result<Vec<u8>, PayloadError> {
        let mut out = Vec::with_capacity(256);
        put_owner(&mut out, &self.owner)?;
        let lists = u8::try_from(self.lists.len())
            .ok()
            .filter(|n| usize::from(*n) <= MAX_LISTS)
            .ok_or_else(|| PayloadError::Encode(format!("more than {MAX_LISTS} lists")))?;
        out.push(lists);
        for (name, slots) in &self.lists {
            put_str8(&mut out, name, "a list's name")?;
            let count = u16::try_from(slots.len())
                .ok()
                .filter(|n| usize::from(*n) <= MAX_SLOTS)
                .ok_or_else(|| PayloadError::Encode(format!("more than {MAX_SLOTS} slots")))?;
            out.extend(count.to_le_bytes());
            for slot in slots {
                put_maybe_stack(&mut out, slot.as_ref())?;
            }
        }
        Ok(out)
    }

    fn decode(bytes: &[u8]) -> Result<Self, PayloadError> {
        let mut fields = Fields(bytes);
        let owner = read_owner(&mut fields)?;
        let count = usize::from(fields.u8("a list count")?);
        if count > MAX_LISTS {
            return Err(PayloadError::Decode(format!("{count} lists")));
        }
        let mut lists = Vec::with_capacity(count);
        for _ in 0..count {
            let name = fields.str8("a list's name")?;
            let slots = usize::from(fields.u16("a slot count")?);
            if slots > MAX_SLOTS {
                return Err(PayloadError::Decode(format!("{slots} slots")));
            }
            let mut list = Vec::with_capacity(slots.min(bytes.len()));
            for _ in 0..slots {
                list.push(read_maybe_stack(&mut fields)?);
            }
            lists.push((name, list));
        }
        fields.end()?;
        Ok(Self { owner, lists })
    }
}

impl Packet for Preview {
    const NAME: &'static str = "inventory:preview";

    fn encode(&self) -> Result<Vec<u8>, PayloadError> {
        let mut out = Vec::with_capacity(32);
        put_owner(&mut out, &self.owner)?;
        put_maybe_stack(&mut out, self.output.as_ref())?;
        Ok(out)
    }

    fn decode(bytes: &[u8]) -> Result<Self, PayloadError> {
        let mut fields = Fields(bytes);
        let owner = read_owner(&mut fields)?;
        let output = read_maybe_stack(&mut fields)?;
        fields.end()?;
        Ok(Self { owner, output })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// What decodes encodes to bytes that decode to the same value.
    fn idempotent<P: Packet + PartialEq + std::fmt::Debug>(data: &[u8]) {
        if let Ok(packet) = P::decode(data) {
            let once = packet.encode().unwrap();
            assert_eq!(P::decode(&once).unwrap(), packet, "{}", P::NAME);
        }
    }

    proptest! {
        #[test]
        fn any_bytes_decode_without_panicking(data in proptest::collection::vec(any::<u8>(), 0..200)) {
            idempotent::<Act>(&data);
            idempotent::<Answer>(&data);
            idempotent::<Lists>(&data);
            idempotent::<Preview>(&data);
        }
    }

    fn round_trip<P: Packet + PartialEq + std::fmt::Debug>(packet: P) -> Vec<u8> {
        let bytes = packet.encode().unwrap();
        assert_eq!(P::decode(&bytes).unwrap(), packet);
        bytes
    }

    fn me(list: &str, index: u16) -> SlotRef {
        SlotRef {
            owner: Owner::Player("ann".into()),
            list: list.into(),
            index,
        }
    }

    #[test]
    fn every_action_round_trips() {
        let actions = [
            Action::Move {
                from: me("main", 3),
                to: SlotRef {
                    owner: Owner::Voxel([1, -2, 3]),
                    list: "main".into(),
                    index: 31,
                },
                count: 7,
            },
            Action::Drop {
                from: me("main", 0),
                count: 99,
            },
            Action::Craft {
                grid: Owner::Voxel([4, 5, -6]),
                to: me("main", 2),
            },
            Action::Open { voxel: [1, 2, 3] },
            Action::Close { voxel: [-1, 0, 9] },
        ];
        for (seq, action) in actions.into_iter().enumerate() {
            round_trip(Act {
                seq: seq as u32,
                action,
            });
        }
    }

    #[test]
    fn layouts_match_the_protocol_page() {
        // inventory:act Move: seq, kind 0, owner player "ann", list "main", index, ...
        let bytes = round_trip(Act {
            seq: 5,
            action: Action::Move {
                from: me("main", 3),
                to: me("craft", 1),
                count: 2,
            },
        });
        let mut expected = vec![5, 0, 0, 0, 0];
        expected.extend([0, 3, b'a', b'n', b'n', 4, b'm', b'a', b'i', b'n', 3, 0]);
        expected.extend([0, 3, b'a', b'n', b'n', 5]);
        expected.extend(b"craft");
        expected.extend([1, 0, 2, 0]);
        assert_eq!(bytes, expected);

        let bytes = round_trip(Answer {
            seq: 9,
            ok: false,
            reason: "full".into(),
        });
        assert_eq!(bytes, [9, 0, 0, 0, 0, b'f', b'u', b'l', b'l']);

        let mut stack = ItemStack::new("pick", 1);
        stack.wear = 300;
        stack.meta.insert("k".into(), "vv".into());
        let bytes = round_trip(Lists {
            owner: Owner::Drop(7),
            lists: vec![("main".into(), vec![None, Some(stack.clone())])],
        });
        let mut expected = vec![3, 7, 0, 0, 0, 0, 0, 0, 0, 1, 4];
        expected.extend(b"main");
        expected.extend([2, 0, 0, 1, 4, 0]);
        expected.extend(b"pick");
        expected.extend([1, 0, 44, 1, 1, 0, 1, 0, b'k', 2, 0, b'v', b'v']);
        assert_eq!(bytes, expected);

        let bytes = round_trip(Preview {
            owner: Owner::Module {
                module: "m".into(),
                key: "k".into(),
            },
            output: None,
        });
        assert_eq!(bytes, [2, 1, b'm', 1, b'k', 0]);
        round_trip(Preview {
            owner: Owner::Voxel([0, 1, 2]),
            output: Some(stack),
        });
    }

    #[test]
    fn malformed_payloads_are_refused() {
        // Unknown action, unknown owner kind, trailing bytes, a slot flag of 2.
        assert!(Act::decode(&[0, 0, 0, 0, 9]).is_err());
        assert!(Act::decode(&[0, 0, 0, 0, 3, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 1]).is_err());
        assert!(Preview::decode(&[9]).is_err());
        assert!(Preview::decode(&[3, 0, 0, 0, 0, 0, 0, 0, 0, 2]).is_err());
        assert!(Answer::decode(&[0, 0, 0, 0, 2]).is_err());
        // A list claiming more slots than it has bytes for.
        assert!(Lists::decode(&[3, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, b'm', 0xff, 0x03]).is_err());
    }

    #[test]
    fn owner_keys_read_back() {
        for owner in [
            Owner::Player("ann".into()),
            Owner::Voxel([-1, 20, 300]),
            Owner::Module {
                module: "shop".into(),
                key: "a:b".into(),
            },
            Owner::Drop(42),
        ] {
            assert_eq!(Owner::from_key(&owner.key()), Some(owner));
        }
        assert_eq!(Owner::from_key("voxel:1,2"), None);
        assert_eq!(Owner::from_key("nobody:1"), None);
    }
}
