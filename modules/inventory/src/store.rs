//! How an inventory is kept in the world's values: space `inventory`, key
//! [`Owner::key`], value a version byte then bincode of [`Stored`].
//!
//! Owns: the stored layout, reading it back, the census from storage.
//! Does not own: when values are written (`commit.rs`).

use std::collections::BTreeMap;

use buildat_interface::{Host, ModuleError};
use buildat_inventory_api::{Inventory, Owner, VALUE_SPACE};
use buildat_voxelworld_api::{GetValue, ListValues, MAX_VALUES_LISTED, ValueWrite};
use serde::{Deserialize, Serialize};

/// The layout's version, the value's first byte.
const VERSION: u8 = 1;

/// Where a dropped stack lies and since when.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DropPlace {
    pub position: [f64; 3],
    /// Seconds since the Unix epoch when it was dropped.
    pub since: u64,
}

/// One owner's inventory as stored (and held in memory).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Stored {
    pub inventory: Inventory,
    /// For a drop: where it lies.
    pub drop: Option<DropPlace>,
}

pub fn encode(stored: &Stored) -> Result<Vec<u8>, ModuleError> {
    let mut bytes = vec![VERSION];
    bytes.extend(buildat_interface::encode(stored)?);
    Ok(bytes)
}

pub fn decode(owner: &Owner, bytes: &[u8]) -> Result<Stored, ModuleError> {
    match bytes.split_first() {
        Some((&VERSION, rest)) => buildat_interface::decode(rest).map_err(|e| {
            ModuleError::msg(format!(
                "the stored inventory of {} is corrupt: {e}",
                owner.key()
            ))
        }),
        Some((version, _)) => Err(ModuleError::msg(format!(
            "the stored inventory of {} has layout {version}, this version reads {VERSION}",
            owner.key()
        ))),
        None => Err(ModuleError::msg(format!(
            "the stored inventory of {} is empty",
            owner.key()
        ))),
    }
}

/// The write storing `stored` for `owner` (`None`: removing it).
pub fn write(owner: &Owner, stored: Option<&Stored>) -> Result<ValueWrite, ModuleError> {
    Ok(ValueWrite {
        space: VALUE_SPACE.to_string(),
        key: owner.key(),
        value: stored.map(encode).transpose()?,
        only_if_absent: false,
    })
}

/// An owner's stored inventory, if it has one.
pub fn load(host: &Host, owner: &Owner) -> Result<Option<Stored>, ModuleError> {
    let value = host.call(&GetValue {
        space: VALUE_SPACE.to_string(),
        key: owner.key(),
    })?;
    value.map(|bytes| decode(owner, &bytes)).transpose()
}

/// Every stored inventory whose key starts with `prefix`, in key order.
pub fn list(host: &Host, prefix: &str) -> Result<Vec<(Owner, Stored)>, ModuleError> {
    let mut out = Vec::new();
    let mut after = None;
    loop {
        let page = host.call(&ListValues {
            space: VALUE_SPACE.to_string(),
            key_prefix: prefix.to_string(),
            after: after.clone(),
            limit: MAX_VALUES_LISTED,
        })?;
        let full = page.len() >= MAX_VALUES_LISTED as usize;
        for value in page {
            after = Some(value.key.clone());
            let Some(owner) = Owner::from_key(&value.key) else {
                buildat_interface::log::warn!("an inventory under an unknown key: {}", value.key);
                continue;
            };
            out.push((owner.clone(), decode(&owner, &value.value)?));
        }
        if !full {
            return Ok(out);
        }
    }
}

/// Every item of every stored inventory, by name.
pub fn census(host: &Host) -> Result<BTreeMap<String, u64>, ModuleError> {
    let mut counts = BTreeMap::new();
    for (_, stored) in list(host, "")? {
        for stack in stored.inventory.lists.values().flatten().flatten() {
            *counts.entry(stack.name.clone()).or_insert(0) += u64::from(stack.count);
        }
    }
    Ok(counts)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use buildat_inventory_api::ItemStack;

    use super::*;

    #[test]
    fn a_stored_inventory_reads_back_and_a_bad_one_is_an_error() {
        let owner = Owner::Drop(3);
        let stored = Stored {
            inventory: Inventory {
                lists: [("main".to_string(), vec![Some(ItemStack::new("coal", 2))])]
                    .into_iter()
                    .collect(),
            },
            drop: Some(DropPlace {
                position: [1.0, 2.0, 3.0],
                since: 99,
            }),
        };
        let bytes = encode(&stored).unwrap();
        assert_eq!(bytes[0], VERSION);
        assert_eq!(decode(&owner, &bytes).unwrap(), stored);
        assert!(decode(&owner, &[]).is_err());
        assert!(decode(&owner, &[9, 0]).is_err());
        assert!(decode(&owner, &[VERSION, 0xff, 0xff]).is_err());
    }
}
