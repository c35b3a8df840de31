//! `buildat-items-protocol`: item stacks and the `items:defs` packet
//! (docs/protocol.md §12), shared by the `items` module (through
//! `buildat-items-api`, which re-exports it), the `inventory` module's
//! protocol, the client and tests. Depends only on `buildat-format`, serde
//! and thiserror: the client links no module ABI.
//!
//! Owns: [`ItemStack`] and its bounds ([`ItemStack::check`]), the item
//! name rule ([`check_item_name`]), the wire layout of a stack
//! ([`put_stack`], [`take_stack`]: raw little-endian, read by Lua with
//! `string.unpack("<s2I2I2I2")`), [`ItemError`] and [`ItemDefs`].
//! Does not own: item definitions and the registry (`buildat-items-api`),
//! what an inventory accepts (`inventory`).

use std::collections::BTreeMap;

use buildat_format::payload::{Packet, PayloadError};
use serde::{Deserialize, Serialize};

/// Longest item name, in bytes (`[a-z0-9_:]+`).
pub const MAX_ITEM_NAME: usize = 64;
/// The bytes of a stack's metadata, keys and values together, at most.
pub const MAX_STACK_META_BYTES: usize = 1024;
/// A tool's wear reaching this breaks it.
pub const WEAR_MAX: u16 = 65535;
/// Stack size of an item that does not say, and of an unknown item.
pub const DEFAULT_STACK_MAX: u16 = 99;
/// Longest item description, in bytes.
pub const MAX_DESCRIPTION: usize = 256;
/// Longest texture file name of an item, in bytes.
pub const MAX_TEXTURE_NAME: usize = 128;

/// What is wrong with an item stack or an item definition.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ItemError {
    #[error("item name {name:?}: {why}")]
    BadName { name: String, why: String },
    #[error("a stack of {name} holds at least 1 item")]
    ZeroCount { name: String },
    #[error("a stack of {name} has {bytes} bytes of metadata, more than {MAX_STACK_META_BYTES}")]
    MetaTooLarge { name: String, bytes: usize },
    #[error("item {name}: {why}")]
    BadDef { name: String, why: String },
    #[error("item {name} places voxel {voxel:?}, which is not registered")]
    UnknownVoxel { name: String, voxel: String },
    #[error("unknown item {name}")]
    Unknown { name: String },
}

/// Checks an item name: 1 to [`MAX_ITEM_NAME`] bytes of lowercase ASCII
/// letters, digits, `_` and `:`.
pub fn check_item_name(name: &str) -> Result<(), ItemError> {
    let why = if name.is_empty() {
        "an item name is not empty"
    } else if name.len() > MAX_ITEM_NAME {
        "an item name is at most 64 bytes"
    } else if !name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b':')
    {
        "an item name holds only a-z, 0-9, '_' and ':'"
    } else {
        return Ok(());
    };
    Err(ItemError::BadName {
        name: name.chars().take(MAX_ITEM_NAME + 8).collect(),
        why: why.into(),
    })
}

/// A stack of items: what an inventory slot holds.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ItemStack {
    pub name: String,
    /// At least 1 in a slot.
    pub count: u16,
    /// Tools: 0 new .. [`WEAR_MAX`] broken.
    pub wear: u16,
    /// A small bounded metadata ([`MAX_STACK_META_BYTES`]).
    pub meta: BTreeMap<String, String>,
}

impl ItemStack {
    /// `count` of `name`, new, without metadata.
    pub fn new(name: impl Into<String>, count: u16) -> Self {
        Self {
            name: name.into(),
            count,
            wear: 0,
            meta: BTreeMap::new(),
        }
    }

    /// Checks the name, a count of at least 1 and the metadata's bound.
    pub fn check(&self) -> Result<(), ItemError> {
        check_item_name(&self.name)?;
        if self.count == 0 {
            return Err(ItemError::ZeroCount {
                name: self.name.clone(),
            });
        }
        let bytes = self.meta_bytes();
        if bytes > MAX_STACK_META_BYTES {
            return Err(ItemError::MetaTooLarge {
                name: self.name.clone(),
                bytes,
            });
        }
        Ok(())
    }

    /// The bytes of its metadata, keys and values.
    pub fn meta_bytes(&self) -> usize {
        self.meta.iter().map(|(k, v)| k.len() + v.len()).sum()
    }

    /// Whether `other` can be stacked onto this one (same name, wear and
    /// metadata; the counts and the stack size are the caller's).
    pub fn stacks_with(&self, other: &ItemStack) -> bool {
        self.name == other.name && self.wear == other.wear && self.meta == other.meta
    }

    /// The same stack with `count` items.
    pub fn with_count(&self, count: u16) -> Self {
        Self {
            count,
            ..self.clone()
        }
    }
}

/// Writes a `u16` length and the bytes of `text` (Lua's `s2`); longer text
/// is an error.
pub fn put_text(out: &mut Vec<u8>, text: &str, what: &str) -> Result<(), PayloadError> {
    let len = u16::try_from(text.len())
        .map_err(|_| PayloadError::Encode(format!("{what} is longer than 65535 bytes")))?;
    out.extend(len.to_le_bytes());
    out.extend(text.as_bytes());
    Ok(())
}

/// Reads what [`put_text`] wrote off the front of `bytes`.
pub fn take_text(bytes: &mut &[u8], what: &str) -> Result<String, PayloadError> {
    let len = usize::from(take_u16(bytes, what)?);
    let (text, rest) = bytes
        .split_at_checked(len)
        .ok_or_else(|| PayloadError::Decode(format!("{what}: {len} bytes expected")))?;
    *bytes = rest;
    String::from_utf8(text.to_vec())
        .map_err(|_| PayloadError::Decode(format!("{what} is not UTF-8")))
}

/// Reads a little-endian `u16` off the front of `bytes`.
pub fn take_u16(bytes: &mut &[u8], what: &str) -> Result<u16, PayloadError> {
    let (head, rest) = bytes
        .split_first_chunk::<2>()
        .ok_or_else(|| PayloadError::Decode(format!("{what}: 2 more bytes expected")))?;
    *bytes = rest;
    Ok(u16::from_le_bytes(*head))
}

fn take_u8(bytes: &mut &[u8], what: &str) -> Result<u8, PayloadError> {
    let (head, rest) = bytes
        .split_first()
        .ok_or_else(|| PayloadError::Decode(format!("{what}: 1 more byte expected")))?;
    *bytes = rest;
    Ok(*head)
}

/// Writes a stack: `s2` name, `u16` count, `u16` wear, `u16` number of
/// metadata entries, then each entry's `s2` key and `s2` value (Lua:
/// `string.unpack("<s2I2I2I2", data, pos)`, then the pairs).
pub fn put_stack(out: &mut Vec<u8>, stack: &ItemStack) -> Result<(), PayloadError> {
    put_text(out, &stack.name, "an item name")?;
    out.extend(stack.count.to_le_bytes());
    out.extend(stack.wear.to_le_bytes());
    let entries = u16::try_from(stack.meta.len())
        .map_err(|_| PayloadError::Encode("more than 65535 metadata entries".into()))?;
    out.extend(entries.to_le_bytes());
    for (key, value) in &stack.meta {
        put_text(out, key, "a metadata key")?;
        put_text(out, value, "a metadata value")?;
    }
    Ok(())
}

/// Reads what [`put_stack`] wrote off the front of `bytes`, refusing
/// metadata past [`MAX_STACK_META_BYTES`] (the stack is not otherwise
/// checked: see [`ItemStack::check`]).
pub fn take_stack(bytes: &mut &[u8]) -> Result<ItemStack, PayloadError> {
    let name = take_text(bytes, "an item name")?;
    let count = take_u16(bytes, "a count")?;
    let wear = take_u16(bytes, "a wear")?;
    let entries = take_u16(bytes, "a metadata count")?;
    let mut meta = BTreeMap::new();
    let mut size = 0;
    for _ in 0..entries {
        let key = take_text(bytes, "a metadata key")?;
        let value = take_text(bytes, "a metadata value")?;
        size += key.len() + value.len();
        if size > MAX_STACK_META_BYTES {
            return Err(PayloadError::Decode(format!(
                "a stack's metadata is more than {MAX_STACK_META_BYTES} bytes"
            )));
        }
        meta.insert(key, value);
    }
    Ok(ItemStack {
        name,
        count,
        wear,
        meta,
    })
}

/// What an item is, on the wire (`items:defs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum WireKind {
    /// Places a voxel.
    Block = 0,
    /// A tool (stack of 1, wears).
    Tool = 1,
    /// Anything else.
    Craft = 2,
}

impl WireKind {
    fn from_byte(byte: u8) -> Result<Self, PayloadError> {
        match byte {
            0 => Ok(Self::Block),
            1 => Ok(Self::Tool),
            2 => Ok(Self::Craft),
            other => Err(PayloadError::Decode(format!(
                "item kind {other} is not 0, 1 or 2"
            ))),
        }
    }
}

/// One item as a client sees it: enough for an icon and a tooltip.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireItem {
    pub name: String,
    pub description: String,
    /// A `client_data` file of some module; "" for a block (drawn from its
    /// voxel's textures).
    pub texture: String,
    pub stack_max: u16,
    pub kind: WireKind,
    /// The voxel a block item places; "" for other kinds.
    pub voxel: String,
}

/// S→C `items:defs`: every item definition, sent after login and again
/// whenever the registry changes. Layout: `u64` registry version, then per
/// item until the end: `s2` name, `s2` description, `s2` texture, `u16`
/// stack_max, `u8` kind (0 block, 1 tool, 2 craft), `s2` voxel (Lua:
/// `string.unpack("<s2s2s2I2Bs2", data, pos)`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ItemDefs {
    pub version: u64,
    pub items: Vec<WireItem>,
}

impl Packet for ItemDefs {
    const NAME: &'static str = "items:defs";

    fn encode(&self) -> Result<Vec<u8>, PayloadError> {
        let mut out = Vec::with_capacity(8 + self.items.len() * 48);
        out.extend(self.version.to_le_bytes());
        for item in &self.items {
            put_text(&mut out, &item.name, "an item name")?;
            put_text(&mut out, &item.description, "a description")?;
            put_text(&mut out, &item.texture, "a texture")?;
            out.extend(item.stack_max.to_le_bytes());
            out.push(item.kind as u8);
            put_text(&mut out, &item.voxel, "a voxel name")?;
        }
        Ok(out)
    }

    fn decode(bytes: &[u8]) -> Result<Self, PayloadError> {
        let (version, mut rest) = bytes
            .split_first_chunk::<8>()
            .ok_or_else(|| PayloadError::Decode("a version: 8 bytes expected".into()))?;
        let version = u64::from_le_bytes(*version);
        let mut items = Vec::new();
        while !rest.is_empty() {
            let name = take_text(&mut rest, "an item name")?;
            let description = take_text(&mut rest, "a description")?;
            let texture = take_text(&mut rest, "a texture")?;
            let stack_max = take_u16(&mut rest, "a stack size")?;
            let kind = WireKind::from_byte(take_u8(&mut rest, "a kind")?)?;
            let voxel = take_text(&mut rest, "a voxel name")?;
            items.push(WireItem {
                name,
                description,
                texture,
                stack_max,
                kind,
                voxel,
            });
        }
        Ok(Self { version, items })
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn names_are_lowercase_ascii_digits_underscores_and_colons() {
        assert!(check_item_name("pick_wood").is_ok());
        assert!(check_item_name("mod:thing_2").is_ok());
        assert!(check_item_name("").is_err());
        assert!(check_item_name("Stone").is_err());
        assert!(check_item_name("a b").is_err());
        assert!(check_item_name(&"a".repeat(64)).is_ok());
        assert!(check_item_name(&"a".repeat(65)).is_err());
    }

    #[test]
    fn a_stack_checks_its_name_count_and_metadata() {
        let mut stack = ItemStack::new("stone", 1);
        assert!(stack.check().is_ok());
        stack.count = 0;
        assert!(matches!(stack.check(), Err(ItemError::ZeroCount { .. })));
        stack.count = 5;
        stack.meta.insert("k".into(), "v".repeat(1023));
        assert!(stack.check().is_ok());
        stack.meta.insert("l".into(), String::new());
        assert!(matches!(
            stack.check(),
            Err(ItemError::MetaTooLarge { bytes: 1025, .. })
        ));
        assert!(ItemStack::new("Bad!", 1).check().is_err());
    }

    #[test]
    fn stacks_with_the_same_name_wear_and_metadata_only() {
        let a = ItemStack::new("stone", 3);
        assert!(a.stacks_with(&ItemStack::new("stone", 90)));
        assert!(!a.stacks_with(&ItemStack::new("dirt", 3)));
        let mut worn = a.clone();
        worn.wear = 1;
        assert!(!a.stacks_with(&worn));
        let mut labelled = a.clone();
        labelled.meta.insert("label".into(), "x".into());
        assert!(!a.stacks_with(&labelled));
        assert_eq!(a.with_count(7).count, 7);
    }

    #[test]
    fn defs_layout_matches_the_protocol_page_and_round_trips() {
        let defs = ItemDefs {
            version: 3,
            items: vec![
                WireItem {
                    name: "stone".into(),
                    description: "Stone".into(),
                    texture: String::new(),
                    stack_max: 99,
                    kind: WireKind::Block,
                    voxel: "stone".into(),
                },
                WireItem {
                    name: "pick_wood".into(),
                    description: "Wooden pickaxe".into(),
                    texture: "pick_wood.png".into(),
                    stack_max: 1,
                    kind: WireKind::Tool,
                    voxel: String::new(),
                },
            ],
        };
        let bytes = defs.encode().unwrap();
        assert_eq!(bytes[..8], 3u64.to_le_bytes());
        assert_eq!(bytes[8..10], 5u16.to_le_bytes());
        assert_eq!(&bytes[10..15], b"stone");
        // name, description "Stone", texture "" then stack_max and kind.
        let at = 15 + 2 + 5 + 2;
        assert_eq!(bytes[at..at + 2], 99u16.to_le_bytes());
        assert_eq!(bytes[at + 2], 0);
        assert_eq!(ItemDefs::decode(&bytes).unwrap(), defs);
        assert!(ItemDefs::decode(&bytes[..bytes.len() - 1]).is_err());
        assert!(ItemDefs::decode(&[0; 7]).is_err());
        let mut bad_kind = bytes.clone();
        bad_kind[at + 2] = 9;
        assert!(ItemDefs::decode(&bad_kind).is_err());
        assert_eq!(ItemDefs::NAME, "items:defs");
    }

    #[test]
    fn a_stack_round_trips_on_the_wire() {
        let mut stack = ItemStack::new("pick_stone", 1);
        stack.wear = 1234;
        stack.meta.insert("owner".into(), "ann".into());
        let mut out = Vec::new();
        put_stack(&mut out, &stack).unwrap();
        assert_eq!(out[..2], 10u16.to_le_bytes());
        assert_eq!(out[12..14], 1u16.to_le_bytes());
        assert_eq!(out[14..16], 1234u16.to_le_bytes());
        assert_eq!(out[16..18], 1u16.to_le_bytes());
        let mut read = out.as_slice();
        assert_eq!(take_stack(&mut read).unwrap(), stack);
        assert!(read.is_empty());
        let mut short = &out[..out.len() - 1];
        assert!(take_stack(&mut short).is_err());
    }

    #[test]
    fn oversized_metadata_does_not_decode() {
        let mut stack = ItemStack::new("x", 1);
        stack.meta.insert("k".into(), "v".repeat(2000));
        let mut out = Vec::new();
        put_stack(&mut out, &stack).unwrap();
        assert!(take_stack(&mut out.as_slice()).is_err());
    }

    proptest! {
        #[test]
        fn any_bytes_decode_without_panicking(data in proptest::collection::vec(any::<u8>(), 0..200)) {
            if let Ok(defs) = ItemDefs::decode(&data) {
                let once = defs.encode().unwrap();
                prop_assert_eq!(ItemDefs::decode(&once).unwrap(), defs);
            }
            let mut read = data.as_slice();
            if let Ok(stack) = take_stack(&mut read) {
                let mut out = Vec::new();
                put_stack(&mut out, &stack).unwrap();
                prop_assert_eq!(take_stack(&mut out.as_slice()).unwrap(), stack);
            }
        }
    }
}
