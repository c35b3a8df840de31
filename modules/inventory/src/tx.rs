//! Applying one transaction's changes to copies of the inventories it
//! touches: every rule of a change (slots, names, counts, stack sizes,
//! wear), all or nothing. Pure: no storage, no host.
//!
//! Owns: the rules of [`Change`]s. Does not own: where inventories come
//! from or go to (`store.rs`, `commit.rs`), who may ask (`actions.rs`).

use std::collections::BTreeMap;

use buildat_inventory_api::{Change, Inventory, ItemStack, Overflow, Owner, SlotRef};
use buildat_items_api::{ItemRegistry, WEAR_MAX};

/// What one transaction did, when it applied: the new state of every
/// inventory it touched, the stacks to drop on the ground, those
/// destroyed.
#[derive(Debug, Default)]
pub struct Applied {
    pub inventories: BTreeMap<Owner, Inventory>,
    pub drops: Vec<(ItemStack, [f64; 3])>,
    pub destroyed: Vec<ItemStack>,
}

/// The owner a change reads and writes; `None` for a drop (no inventory).
pub fn owner_of(change: &Change) -> Option<&Owner> {
    match change {
        Change::Take { slot, .. } | Change::Put { slot, .. } | Change::Wear { slot, .. } => {
            Some(&slot.owner)
        }
        Change::Give { owner, .. } => Some(owner),
        Change::Drop { .. } => None,
    }
}

/// Applies `changes` in order to copies of the inventories (`current`
/// gives an owner's inventory as it is before the transaction, `None`
/// when it has none); every change must hold, else nothing applies and
/// the answer says why. `extra_drops` are stacks the transaction drops
/// whole (a player's `Drop`), after its changes.
pub fn apply(
    changes: &[Change],
    current: &dyn Fn(&Owner) -> Option<Inventory>,
    items: &ItemRegistry,
) -> Result<Applied, String> {
    let mut applied = Applied::default();
    for change in changes {
        let Some(owner) = owner_of(change) else {
            if let Change::Drop { stack, at } = change {
                drop_whole(stack, *at, items, &mut applied.drops)?;
            }
            continue;
        };
        if !applied.inventories.contains_key(owner) {
            let inventory =
                current(owner).ok_or_else(|| format!("{} has no inventory", show(owner)))?;
            applied.inventories.insert(owner.clone(), inventory);
        }
        let inventory = applied
            .inventories
            .get_mut(owner)
            .ok_or_else(|| "internal: an inventory vanished".to_string())?;
        apply_one(
            change,
            inventory,
            items,
            &mut applied.drops,
            &mut applied.destroyed,
        )?;
    }
    Ok(applied)
}

/// A [`Change::Drop`]: a known item, a finite place, split into stacks of
/// its stack size.
fn drop_whole(
    stack: &ItemStack,
    at: [f64; 3],
    items: &ItemRegistry,
    drops: &mut Vec<(ItemStack, [f64; 3])>,
) -> Result<(), String> {
    let max = check_item(stack, items)?;
    if at.iter().any(|c| !c.is_finite()) {
        return Err(format!("a drop of {} at a place not finite", stack.name));
    }
    let mut left = stack.count;
    while left > 0 {
        let part = left.min(max);
        drops.push((stack.with_count(part), at));
        left -= part;
    }
    Ok(())
}

/// How an owner is named in a reason.
pub fn show(owner: &Owner) -> String {
    match owner {
        Owner::Player(name) => format!("player {name}"),
        Owner::Voxel([x, y, z]) => format!("the voxel at ({x}, {y}, {z})"),
        Owner::Module { module, key } => format!("module {module}'s {key}"),
        Owner::Drop(id) => format!("drop {id}"),
    }
}

fn slot_mut<'a>(
    inventory: &'a mut Inventory,
    slot: &SlotRef,
) -> Result<&'a mut Option<ItemStack>, String> {
    let list = inventory
        .lists
        .get_mut(&slot.list)
        .ok_or_else(|| format!("{} has no list {}", show(&slot.owner), slot.list))?;
    let len = list.len();
    list.get_mut(usize::from(slot.index)).ok_or_else(|| {
        format!(
            "list {} of {} has {len} slots, not a slot {}",
            slot.list,
            show(&slot.owner),
            slot.index
        )
    })
}

/// Checks a stack against the registry: a valid stack of a known item.
fn check_item(stack: &ItemStack, items: &ItemRegistry) -> Result<u16, String> {
    stack.check().map_err(|e| e.to_string())?;
    if items.get(&stack.name).is_none() {
        return Err(format!("unknown item {}", stack.name));
    }
    Ok(items.stack_max(&stack.name).max(1))
}

fn apply_one(
    change: &Change,
    inventory: &mut Inventory,
    items: &ItemRegistry,
    drops: &mut Vec<(ItemStack, [f64; 3])>,
    destroyed: &mut Vec<ItemStack>,
) -> Result<(), String> {
    match change {
        Change::Take { slot, name, count } => {
            if *count == 0 {
                return Err("taking 0 items".into());
            }
            let held = slot_mut(inventory, slot)?;
            match held {
                Some(stack) if stack.name == *name && stack.count >= *count => {
                    stack.count -= count;
                    if stack.count == 0 {
                        *held = None;
                    }
                    Ok(())
                }
                Some(stack) if stack.name == *name => Err(format!(
                    "slot {} holds {} {name}, not {count}",
                    slot.index, stack.count
                )),
                Some(stack) => Err(format!(
                    "slot {} holds {}, not {name}",
                    slot.index, stack.name
                )),
                None => Err(format!("slot {} is empty", slot.index)),
            }
        }
        Change::Put { slot, stack } => {
            let max = check_item(stack, items)?;
            let held = slot_mut(inventory, slot)?;
            match held {
                None if stack.count <= max => {
                    *held = Some(stack.clone());
                    Ok(())
                }
                None => Err(format!("a stack of {} holds at most {max}", stack.name)),
                Some(there) if there.stacks_with(stack) => {
                    let total = u32::from(there.count) + u32::from(stack.count);
                    if total > u32::from(max) {
                        return Err(format!(
                            "slot {} has room for {} more {}",
                            slot.index,
                            max.saturating_sub(there.count),
                            stack.name
                        ));
                    }
                    there.count += stack.count;
                    Ok(())
                }
                Some(there) => Err(format!(
                    "slot {} holds {}, not {}",
                    slot.index, there.name, stack.name
                )),
            }
        }
        Change::Give {
            owner,
            list,
            stack,
            overflow,
        } => {
            let max = check_item(stack, items)?;
            let slots = inventory
                .lists
                .get_mut(list)
                .ok_or_else(|| format!("{} has no list {list}", show(owner)))?;
            let mut left = stack.count;
            for there in slots.iter_mut().flatten() {
                if left == 0 {
                    break;
                }
                if there.stacks_with(stack) && there.count < max {
                    let moved = left.min(max - there.count);
                    there.count += moved;
                    left -= moved;
                }
            }
            for slot in slots.iter_mut() {
                if left == 0 {
                    break;
                }
                if slot.is_none() {
                    let moved = left.min(max);
                    *slot = Some(stack.with_count(moved));
                    left -= moved;
                }
            }
            if left > 0 {
                match overflow {
                    Overflow::Refuse => {
                        return Err(format!(
                            "no room for {left} {} in {}'s {list}",
                            stack.name,
                            show(owner)
                        ));
                    }
                    Overflow::DropAt(position) => {
                        while left > 0 {
                            let part = left.min(max);
                            drops.push((stack.with_count(part), *position));
                            left -= part;
                        }
                    }
                    Overflow::Destroy => destroyed.push(stack.with_count(left)),
                }
            }
            Ok(())
        }
        Change::Drop { stack, at } => drop_whole(stack, *at, items, drops),
        Change::Wear { slot, name, amount } => {
            let held = slot_mut(inventory, slot)?;
            match held {
                Some(stack) if stack.name == *name => {
                    let wear = u32::from(stack.wear) + u32::from(*amount);
                    if wear >= u32::from(WEAR_MAX) {
                        // Worn out: the tool breaks.
                        *held = None;
                    } else {
                        stack.wear = wear as u16;
                    }
                    Ok(())
                }
                Some(stack) => Err(format!(
                    "slot {} holds {}, not {name}",
                    slot.index, stack.name
                )),
                None => Err(format!("slot {} is empty, not {name}", slot.index)),
            }
        }
    }
}

/// Whether an inventory holds no item.
pub fn is_empty(inventory: &Inventory) -> bool {
    inventory.lists.values().flatten().all(Option::is_none)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use buildat_items_api::{GroupCap, ItemDef, ToolCaps};

    use super::*;

    pub fn items() -> ItemRegistry {
        let defs = [
            ItemDef::craft("stick", "Stick", "stick.png"),
            ItemDef::craft("coal", "Coal", "coal.png"),
            ItemDef::tool(
                "pick",
                "Pick",
                "pick.png",
                ToolCaps::default().with("cracky", GroupCap::new(&[1.0], 10, 0)),
            ),
        ];
        let mut items: BTreeMap<String, ItemDef> =
            defs.into_iter().map(|d| (d.name.clone(), d)).collect();
        if let Some(stick) = items.get_mut("stick") {
            stick.stack_max = 10;
        }
        ItemRegistry { version: 1, items }
    }

    fn ann() -> Owner {
        Owner::Player("ann".into())
    }

    fn slot(index: u16) -> SlotRef {
        SlotRef {
            owner: ann(),
            list: "main".into(),
            index,
        }
    }

    fn inventory(slots: Vec<Option<ItemStack>>) -> Inventory {
        Inventory {
            lists: [("main".to_string(), slots)].into_iter().collect(),
        }
    }

    fn run(changes: &[Change], start: &Inventory) -> Result<Inventory, String> {
        let start = start.clone();
        let applied = apply(
            changes,
            &|owner: &Owner| (*owner == ann()).then(|| start.clone()),
            &items(),
        )?;
        Ok(applied.inventories[&ann()].clone())
    }

    #[test]
    fn a_take_needs_the_item_and_the_count() {
        let start = inventory(vec![Some(ItemStack::new("stick", 5)), None]);
        let after = run(
            &[Change::Take {
                slot: slot(0),
                name: "stick".into(),
                count: 5,
            }],
            &start,
        )
        .unwrap();
        assert_eq!(after.lists["main"][0], None);
        for (name, count, index) in [
            ("stick", 6, 0),
            ("coal", 1, 0),
            ("stick", 1, 1),
            ("stick", 1, 9),
        ] {
            let refused = run(
                &[Change::Take {
                    slot: slot(index),
                    name: name.into(),
                    count,
                }],
                &start,
            );
            assert!(refused.is_err(), "{name} {count} {index}");
        }
    }

    #[test]
    fn a_put_keeps_to_the_stack_size_and_the_same_item() {
        let start = inventory(vec![Some(ItemStack::new("stick", 8)), None]);
        let put = |index, stack: ItemStack| {
            run(
                &[Change::Put {
                    slot: slot(index),
                    stack,
                }],
                &start,
            )
        };
        assert_eq!(
            put(0, ItemStack::new("stick", 2)).unwrap().lists["main"][0],
            Some(ItemStack::new("stick", 10))
        );
        assert!(put(0, ItemStack::new("stick", 3)).is_err(), "past 10");
        assert!(put(0, ItemStack::new("coal", 1)).is_err(), "another item");
        assert!(
            put(1, ItemStack::new("stick", 11)).is_err(),
            "past 10 alone"
        );
        assert!(
            put(1, ItemStack::new("nothing", 1)).is_err(),
            "unknown item"
        );
        assert!(put(1, ItemStack::new("coal", 0)).is_err(), "no item");
    }

    #[test]
    fn a_give_stacks_first_then_fills_empty_slots_and_overflows_as_told() {
        let start = inventory(vec![None, Some(ItemStack::new("stick", 7)), None]);
        let give = |count, overflow| {
            let start = start.clone();
            apply(
                &[Change::Give {
                    owner: ann(),
                    list: "main".into(),
                    stack: ItemStack::new("stick", count),
                    overflow,
                }],
                &|_: &Owner| Some(start.clone()),
                &items(),
            )
        };
        let applied = give(15, Overflow::Refuse).unwrap();
        let main = &applied.inventories[&ann()].lists["main"];
        assert_eq!(main[1], Some(ItemStack::new("stick", 10)));
        assert_eq!(main[0], Some(ItemStack::new("stick", 10)));
        assert_eq!(main[2], Some(ItemStack::new("stick", 2)));
        assert!(give(24, Overflow::Refuse).is_err());
        let applied = give(30, Overflow::DropAt([1.0, 2.0, 3.0])).unwrap();
        let dropped: u16 = applied.drops.iter().map(|(s, _)| s.count).sum();
        assert_eq!(dropped, 7);
        assert!(applied.drops.iter().all(|(s, _)| s.count <= 10));
        let applied = give(30, Overflow::Destroy).unwrap();
        assert_eq!(applied.destroyed, vec![ItemStack::new("stick", 7)]);
    }

    #[test]
    fn wear_adds_up_and_breaks_the_tool() {
        let start = inventory(vec![Some(ItemStack::new("pick", 1))]);
        let wear = |amount, start: &Inventory| {
            run(
                &[Change::Wear {
                    slot: slot(0),
                    name: "pick".into(),
                    amount,
                }],
                start,
            )
        };
        let worn = wear(40_000, &start).unwrap();
        assert_eq!(worn.lists["main"][0].as_ref().unwrap().wear, 40_000);
        let broken = wear(30_000, &worn).unwrap();
        assert_eq!(broken.lists["main"][0], None, "the tool broke");
        let empty = inventory(vec![Some(ItemStack::new("coal", 1))]);
        assert!(wear(1, &empty).is_err(), "only the tool named wears");
    }

    #[test]
    fn a_drop_moves_taken_items_to_the_ground_in_stacks() {
        let start = inventory(vec![Some(ItemStack::new("stick", 10)), None]);
        let at = [1.5, 2.0, -3.5];
        let applied = apply(
            &[
                Change::Take {
                    slot: slot(0),
                    name: "stick".into(),
                    count: 10,
                },
                Change::Drop {
                    stack: ItemStack::new("stick", 10),
                    at,
                },
                Change::Drop {
                    stack: ItemStack::new("coal", 150),
                    at,
                },
            ],
            &|_: &Owner| Some(start.clone()),
            &items(),
        )
        .unwrap();
        assert_eq!(applied.inventories[&ann()].lists["main"][0], None);
        let dropped: Vec<(String, u16)> = applied
            .drops
            .iter()
            .map(|(s, place)| {
                assert_eq!(*place, at);
                (s.name.clone(), s.count)
            })
            .collect();
        assert_eq!(
            dropped,
            vec![
                ("stick".to_string(), 10),
                ("coal".to_string(), 99),
                ("coal".to_string(), 51)
            ]
        );
        let drop_only = |stack: ItemStack, at: [f64; 3]| {
            apply(&[Change::Drop { stack, at }], &|_: &Owner| None, &items())
        };
        assert!(drop_only(ItemStack::new("nothing", 1), at).is_err());
        assert!(drop_only(ItemStack::new("coal", 0), at).is_err());
        assert!(drop_only(ItemStack::new("coal", 1), [f64::NAN, 0.0, 0.0]).is_err());
        assert_eq!(
            drop_only(ItemStack::new("coal", 1), at)
                .unwrap()
                .drops
                .len(),
            1
        );
    }

    #[test]
    fn a_failing_change_leaves_nothing_applied() {
        let start = inventory(vec![Some(ItemStack::new("stick", 5)), None]);
        let changes = [
            Change::Take {
                slot: slot(0),
                name: "stick".into(),
                count: 5,
            },
            Change::Put {
                slot: slot(1),
                stack: ItemStack::new("stick", 5),
            },
            // Fails: the stick moved away.
            Change::Take {
                slot: slot(0),
                name: "stick".into(),
                count: 1,
            },
        ];
        assert!(run(&changes, &start).is_err());
        // The changes before it applied only to the copy.
        assert_eq!(start.lists["main"][0], Some(ItemStack::new("stick", 5)));
        let unknown = apply(
            &[Change::Give {
                owner: Owner::Voxel([0, 0, 0]),
                list: "main".into(),
                stack: ItemStack::new("coal", 1),
                overflow: Overflow::Refuse,
            }],
            &|_: &Owner| None,
            &items(),
        );
        assert!(unknown.unwrap_err().contains("has no inventory"));
    }
}
