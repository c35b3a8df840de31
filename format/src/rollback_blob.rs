//! A block of the rollback log: voxel changes (when, where, from what to
//! what, by whom) packed in columns of varints and compressed, with the
//! block's own tables of actor names and voxel type names (so ids that
//! change between runs do not matter).
//!
//! Owns: the layout, [`encode`] and [`decode`] (pure, every length and
//! index checked; fuzzed by `fuzz/fuzz_targets/rollback_blob.rs`). Does
//! not own: which changes are logged and where blocks are kept (the
//! world module), what a voxel's game bits mean.
//!
//! Layout: [`VERSION`], then zlib of: the first change's time (zigzag
//! varint, ms), the actor names, the type names (each a varint count, then
//! varint length + UTF-8 bytes a name), the count of changes, then seven
//! columns of one varint per change: time delta, x, y and z deltas (all
//! zigzag), the voxel before, the voxel after, the actor index. A voxel is
//! `bits × types + type index` (one byte for a plain voxel of a block with
//! few types).

use std::io::{Read, Write};

use crate::reader::{ReadError, Reader, zigzag_decode};
use crate::writer::{put_varint, zigzag_encode};

/// The layout this code writes and reads.
pub const VERSION: u8 = 2;

/// Most bytes a block may unpack to.
pub const MAX_PLAIN_BYTES: usize = 256 << 20;

/// A voxel as the log keeps it: its type (an index into the block's type
/// names) and its game bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LoggedVoxel {
    pub type_index: u32,
    pub bits: u32,
}

/// One change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoggedChange {
    /// Milliseconds since the Unix epoch.
    pub time_ms: i64,
    pub pos: [i32; 3],
    pub before: LoggedVoxel,
    pub after: LoggedVoxel,
    /// An index into the block's actor names.
    pub actor: u32,
}

/// A block: its names and its changes, in the order made.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RollbackBlob {
    pub actors: Vec<String>,
    pub types: Vec<String>,
    pub changes: Vec<LoggedChange>,
}

/// Why a block does not decode.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RollbackBlobError {
    #[error("layout {found:?}, this code reads {VERSION}")]
    Version { found: Option<u8> },
    #[error("zlib: {0}")]
    Zlib(String),
    #[error("unpacks to more than {MAX_PLAIN_BYTES} bytes")]
    TooLarge,
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error("{0}")]
    Invalid(String),
}

fn put_names(out: &mut Vec<u8>, names: &[String]) {
    put_varint(out, names.len() as u64);
    for name in names {
        put_varint(out, name.len() as u64);
        out.extend_from_slice(name.as_bytes());
    }
}

fn read_names(reader: &mut Reader<'_>) -> Result<Vec<String>, RollbackBlobError> {
    let count = reader.varint_len(reader.remaining())?;
    let mut names = Vec::with_capacity(count.min(4096));
    for _ in 0..count {
        names.push(reader.str()?.to_string());
    }
    Ok(names)
}

/// A voxel's varint code in a block with `types` type names.
fn voxel_code(voxel: LoggedVoxel, types: u64) -> u64 {
    u64::from(voxel.bits) * types.max(1) + u64::from(voxel.type_index)
}

fn voxel_of(code: u64, types: u64) -> Result<LoggedVoxel, RollbackBlobError> {
    if types == 0 {
        return Err(RollbackBlobError::Invalid(
            "a voxel in a block with no type names".into(),
        ));
    }
    let bits = u32::try_from(code / types)
        .map_err(|_| RollbackBlobError::Invalid(format!("voxel code {code} out of range")))?;
    Ok(LoggedVoxel {
        // Below `types`, which came from a count of names in memory.
        type_index: (code % types) as u32,
        bits,
    })
}

/// Packs a block. Its changes' indices must be within its names (checked
/// by [`decode`], not here).
pub fn encode(blob: &RollbackBlob) -> Vec<u8> {
    let types = blob.types.len() as u64;
    let mut columns: [Vec<u8>; 7] = Default::default();
    let [c_dt, c_x, c_y, c_z, c_before, c_after, c_actor] = &mut columns;
    let first = blob.changes.first().map_or(0, |c| c.time_ms);
    let (mut time, mut pos) = (first, [0i32; 3]);
    for change in &blob.changes {
        put_varint(c_dt, zigzag_encode(change.time_ms.wrapping_sub(time)));
        time = change.time_ms;
        for ((column, now), was) in [&mut *c_x, &mut *c_y, &mut *c_z]
            .into_iter()
            .zip(change.pos)
            .zip(pos)
        {
            put_varint(column, zigzag_encode(i64::from(now) - i64::from(was)));
        }
        pos = change.pos;
        put_varint(c_before, voxel_code(change.before, types));
        put_varint(c_after, voxel_code(change.after, types));
        put_varint(c_actor, u64::from(change.actor));
    }
    let mut plain = Vec::new();
    put_varint(&mut plain, zigzag_encode(first));
    put_names(&mut plain, &blob.actors);
    put_names(&mut plain, &blob.types);
    put_varint(&mut plain, blob.changes.len() as u64);
    for column in &columns {
        plain.extend_from_slice(column);
    }
    pack(VERSION, &plain)
}

/// A block back: every name, index and coordinate checked.
pub fn decode(data: &[u8]) -> Result<RollbackBlob, RollbackBlobError> {
    let plain = unpack(data, VERSION)?;
    let mut reader = Reader::new(&plain);
    let first = zigzag_decode(reader.varint()?);
    let actors = read_names(&mut reader)?;
    let types = read_names(&mut reader)?;
    // Each change takes at least seven bytes.
    let (count, columns) = read_columns::<7>(&mut reader)?;
    let type_count = types.len() as u64;
    let coordinate = |c: i64| {
        i32::try_from(c)
            .map_err(|_| RollbackBlobError::Invalid(format!("coordinate {c} out of range")))
    };
    let [dts, xs, ys, zs, befores, afters, actor_column] = &columns;
    let (mut time, mut pos) = (first, [0i64; 3]);
    let mut changes = Vec::with_capacity(count);
    let rows = dts
        .iter()
        .zip(xs)
        .zip(ys)
        .zip(zs)
        .zip(befores)
        .zip(afters)
        .zip(actor_column);
    for ((((((&dt, &x), &y), &z), &before), &after), &actor) in rows {
        time = time.wrapping_add(zigzag_decode(dt));
        for (p, delta) in pos.iter_mut().zip([x, y, z]) {
            *p = p.wrapping_add(zigzag_decode(delta));
        }
        let actor = u32::try_from(actor)
            .ok()
            .filter(|&a| (a as usize) < actors.len())
            .ok_or_else(|| RollbackBlobError::Invalid(format!("actor {actor} not in the block")))?;
        let [x, y, z] = pos;
        changes.push(LoggedChange {
            time_ms: time,
            pos: [coordinate(x)?, coordinate(y)?, coordinate(z)?],
            before: voxel_of(before, type_count)?,
            after: voxel_of(after, type_count)?,
            actor,
        });
    }
    Ok(RollbackBlob {
        actors,
        types,
        changes,
    })
}

/// The layout of a block of inventory changes ([`encode_items`]): its
/// first byte, never a voxel block's.
pub const ITEMS_VERSION: u8 = 0x49;

/// One slot's change in an inventory transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoggedItem {
    /// Milliseconds since the Unix epoch.
    pub time_ms: i64,
    /// Indices into the block's actor, inventory and item names.
    pub actor: u32,
    pub inventory: u32,
    pub slot: u16,
    pub item: u32,
    /// How many came into the slot (negative: went out).
    pub count: i32,
}

/// A block of inventory changes: its names and its changes, in the order
/// made.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ItemsBlob {
    pub actors: Vec<String>,
    pub inventories: Vec<String>,
    pub items: Vec<String>,
    pub changes: Vec<LoggedItem>,
}

fn pack(version: u8, plain: &[u8]) -> Vec<u8> {
    let mut out = vec![version];
    let mut encoder = flate2::write::ZlibEncoder::new(&mut out, flate2::Compression::default());
    // Writing into a Vec does not fail.
    let _ = encoder.write_all(plain);
    let _ = encoder.finish();
    out
}

/// The count of changes, then `N` varint columns of that many values each
/// (a change takes at least `N` bytes: the count is bounded by what is
/// left), and nothing after them.
fn read_columns<const N: usize>(
    reader: &mut Reader<'_>,
) -> Result<(usize, [Vec<u64>; N]), RollbackBlobError> {
    let count = reader.varint_len(reader.remaining() / N)?;
    let mut columns: [Vec<u64>; N] = std::array::from_fn(|_| Vec::with_capacity(count));
    for column in &mut columns {
        for _ in 0..count {
            column.push(reader.varint()?);
        }
    }
    if reader.remaining() != 0 {
        return Err(RollbackBlobError::Invalid(format!(
            "{} bytes after the last column",
            reader.remaining()
        )));
    }
    Ok((count, columns))
}

fn unpack(data: &[u8], version: u8) -> Result<Vec<u8>, RollbackBlobError> {
    let packed = match data.split_first() {
        Some((&found, packed)) if found == version => packed,
        _ => {
            return Err(RollbackBlobError::Version {
                found: data.first().copied(),
            });
        }
    };
    let mut plain = Vec::new();
    flate2::read::ZlibDecoder::new(packed)
        .take(MAX_PLAIN_BYTES as u64 + 1)
        .read_to_end(&mut plain)
        .map_err(|e| RollbackBlobError::Zlib(e.to_string()))?;
    if plain.len() > MAX_PLAIN_BYTES {
        return Err(RollbackBlobError::TooLarge);
    }
    Ok(plain)
}

/// Packs a block of inventory changes ([`ITEMS_VERSION`], then zlib of:
/// the first change's time, the actor, inventory and item names, the count
/// of changes, then six varint columns: time delta and count (zigzag),
/// actor, inventory, slot and item).
pub fn encode_items(blob: &ItemsBlob) -> Vec<u8> {
    let mut columns: [Vec<u8>; 6] = Default::default();
    let [c_dt, c_actor, c_inventory, c_slot, c_item, c_count] = &mut columns;
    let first = blob.changes.first().map_or(0, |c| c.time_ms);
    let mut time = first;
    for change in &blob.changes {
        put_varint(c_dt, zigzag_encode(change.time_ms.wrapping_sub(time)));
        time = change.time_ms;
        put_varint(c_actor, u64::from(change.actor));
        put_varint(c_inventory, u64::from(change.inventory));
        put_varint(c_slot, u64::from(change.slot));
        put_varint(c_item, u64::from(change.item));
        put_varint(c_count, zigzag_encode(i64::from(change.count)));
    }
    let mut plain = Vec::new();
    put_varint(&mut plain, zigzag_encode(first));
    put_names(&mut plain, &blob.actors);
    put_names(&mut plain, &blob.inventories);
    put_names(&mut plain, &blob.items);
    put_varint(&mut plain, blob.changes.len() as u64);
    for column in &columns {
        plain.extend_from_slice(column);
    }
    pack(ITEMS_VERSION, &plain)
}

/// A block of inventory changes back: every name index checked.
pub fn decode_items(data: &[u8]) -> Result<ItemsBlob, RollbackBlobError> {
    let plain = unpack(data, ITEMS_VERSION)?;
    let mut reader = Reader::new(&plain);
    let first = zigzag_decode(reader.varint()?);
    let actors = read_names(&mut reader)?;
    let inventories = read_names(&mut reader)?;
    let items = read_names(&mut reader)?;
    // Each change takes at least six bytes.
    let (count, columns) = read_columns::<6>(&mut reader)?;
    let index = |value: u64, names: &[String], what: &str| {
        u32::try_from(value)
            .ok()
            .filter(|&i| (i as usize) < names.len())
            .ok_or_else(|| RollbackBlobError::Invalid(format!("{what} {value} not in the block")))
    };
    let [
        dts,
        actor_column,
        inventory_column,
        slots,
        item_column,
        counts,
    ] = &columns;
    let mut time = first;
    let mut changes = Vec::with_capacity(count);
    for i in 0..count {
        let at = |column: &Vec<u64>| column.get(i).copied().unwrap_or(0);
        time = time.wrapping_add(zigzag_decode(at(dts)));
        let slot = u16::try_from(at(slots))
            .map_err(|_| RollbackBlobError::Invalid(format!("slot {} out of range", at(slots))))?;
        let delta = zigzag_decode(at(counts));
        changes.push(LoggedItem {
            time_ms: time,
            actor: index(at(actor_column), &actors, "actor")?,
            inventory: index(at(inventory_column), &inventories, "inventory")?,
            slot,
            item: index(at(item_column), &items, "item")?,
            count: i32::try_from(delta)
                .map_err(|_| RollbackBlobError::Invalid(format!("count {delta} out of range")))?,
        });
    }
    Ok(ItemsBlob {
        actors,
        inventories,
        items,
        changes,
    })
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn blob() -> RollbackBlob {
        let voxel = |type_index, bits| LoggedVoxel { type_index, bits };
        RollbackBlob {
            actors: vec!["ann".into(), "(unnamed)".into()],
            types: vec!["air".into(), "stone".into(), "torch".into()],
            changes: vec![
                LoggedChange {
                    time_ms: 1_765_000_000_000,
                    pos: [-5, 12, 300],
                    before: voxel(1, 0),
                    after: voxel(0, 0),
                    actor: 0,
                },
                LoggedChange {
                    time_ms: 1_765_000_000_050,
                    pos: [i32::MIN, i32::MAX, 0],
                    before: voxel(0, 0),
                    after: voxel(2, u32::MAX),
                    actor: 1,
                },
            ],
        }
    }

    #[test]
    fn a_block_round_trips_to_its_edges() {
        let blob = blob();
        assert_eq!(decode(&encode(&blob)).expect("decodes"), blob);
        let empty = RollbackBlob::default();
        assert_eq!(decode(&encode(&empty)).expect("decodes"), empty);
    }

    #[test]
    fn every_cut_or_damage_is_an_error_never_a_panic() {
        let bytes = encode(&blob());
        for end in 0..bytes.len() {
            assert!(decode(&bytes[..end]).is_err(), "cut at {end}");
        }
        assert!(matches!(
            decode(&[1, 2, 3]),
            Err(RollbackBlobError::Version { found: Some(1) })
        ));
        // An actor index past the names, packed by hand.
        let mut bad = blob();
        bad.changes[0].actor = 9;
        assert!(matches!(
            decode(&encode(&bad)),
            Err(RollbackBlobError::Invalid(_))
        ));
        let mut bad = blob();
        bad.types.clear();
        assert!(decode(&encode(&bad)).is_err(), "a voxel with no types");
    }

    /// Inventory changes round trip; every cut, a name index past the
    /// names and a voxel block's layout are errors.
    #[test]
    fn a_block_of_inventory_changes_round_trips_and_checks_its_indices() {
        let item = |time_ms, actor, slot, count| LoggedItem {
            time_ms,
            actor,
            inventory: 1,
            slot,
            item: 0,
            count,
        };
        let blob = ItemsBlob {
            actors: vec!["ann".into(), "inventory (module)".into()],
            inventories: vec!["player:ann main".into(), "drop:7 main".into()],
            items: vec!["dirt".into()],
            changes: vec![
                item(1_765_000_000_000, 0, 3, -5),
                item(1_765_000_000_000, 1, u16::MAX, i32::MAX),
                item(1_764_000_000_000, 0, 0, i32::MIN),
            ],
        };
        let bytes = encode_items(&blob);
        assert_eq!(decode_items(&bytes).expect("decodes"), blob);
        assert_eq!(
            decode_items(&encode_items(&ItemsBlob::default())).expect("decodes"),
            ItemsBlob::default()
        );
        for end in 0..bytes.len() {
            assert!(decode_items(&bytes[..end]).is_err(), "cut at {end}");
        }
        let mut bad = blob.clone();
        bad.changes[0].item = 1;
        assert!(
            decode_items(&encode_items(&bad)).is_err(),
            "item past the names"
        );
        assert!(decode_items(&encode(&RollbackBlob::default())).is_err());
        assert!(decode(&bytes).is_err(), "not a voxel block");
    }
}
