//! The registry's contents, pure: the automatic block items of the voxel
//! registry's blocks, with the definitions modules registered laid over
//! them, and the checks a registration passes.
//!
//! Owns: which blocks get an item, how a registration refines a block item,
//! what a registration may not do. Does not own: asking voxelworld, telling
//! anyone (`lib.rs`).

use std::collections::{BTreeMap, BTreeSet};

use buildat_items_api::{ItemDef, ItemError, ItemKind, check_item_name, describe};
use buildat_voxelworld_api::VoxelRegistry;

/// The block names of a voxel registry that get an item: every block but
/// `air` and `unknown` whose name is a valid item name (the rest are
/// answered in the second list, to be logged).
pub(crate) fn blocks_of(voxels: &VoxelRegistry) -> (BTreeSet<String>, Vec<String>) {
    let mut blocks = BTreeSet::new();
    let mut skipped = Vec::new();
    for def in voxels.definitions() {
        let name = &def.name.block_name;
        if name == buildat_voxel::AIR_NAME || name == buildat_voxel::UNKNOWN_NAME {
            continue;
        }
        if check_item_name(name).is_ok() {
            blocks.insert(name.clone());
        } else if !skipped.contains(name) {
            skipped.push(name.clone());
        }
    }
    (blocks, skipped)
}

/// The items: a block item for each of `blocks`, then every registered
/// definition (a block's own name refines its item; a refinement without a
/// description keeps the block's).
pub(crate) fn build(
    blocks: &BTreeSet<String>,
    registered: &BTreeMap<String, ItemDef>,
) -> BTreeMap<String, ItemDef> {
    let mut items: BTreeMap<String, ItemDef> = blocks
        .iter()
        .map(|block| (block.clone(), ItemDef::block(block)))
        .collect();
    for (name, def) in registered {
        let mut def = def.clone();
        if def.description.is_empty()
            && let ItemKind::Block { voxel } = &def.kind
        {
            def.description = describe(voxel);
        }
        items.insert(name.clone(), def);
    }
    items
}

/// Checks a registration: each definition's bounds, a block item's voxel a
/// registered block, and no other kind of item under a block's name.
pub(crate) fn check_registration(
    defs: &[ItemDef],
    blocks: &BTreeSet<String>,
) -> Result<(), ItemError> {
    for def in defs {
        def.check()?;
        match &def.kind {
            ItemKind::Block { voxel } => {
                if !blocks.contains(voxel) {
                    return Err(ItemError::UnknownVoxel {
                        name: def.name.clone(),
                        voxel: voxel.clone(),
                    });
                }
                if blocks.contains(&def.name) && def.name != *voxel {
                    return Err(ItemError::BadDef {
                        name: def.name.clone(),
                        why: format!(
                            "block {} has its own item; this one places {voxel}",
                            def.name
                        ),
                    });
                }
            }
            _ if blocks.contains(&def.name) => {
                return Err(ItemError::BadDef {
                    name: def.name.clone(),
                    why: "the item of a block is a block item".into(),
                });
            }
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use buildat_items_api::{DropRule, GroupCap, ItemStack, ToolCaps};
    use buildat_voxel::{BlockDefinition, BlockRegistry};

    use super::*;

    fn voxels(blocks: &[&str]) -> VoxelRegistry {
        let mut voxels = VoxelRegistry::default();
        let mut registry = BlockRegistry::default();
        for name in blocks {
            let mut block = BlockDefinition::simple(name, "t.png");
            block.rotatable = *name == "stairs";
            registry.add(block, &mut voxels).unwrap();
        }
        voxels
    }

    #[test]
    fn every_block_but_air_and_unknown_gets_one_item() {
        let (blocks, skipped) = blocks_of(&voxels(&["stone", "stairs", "Odd Name"]));
        assert_eq!(
            blocks.into_iter().collect::<Vec<_>>(),
            vec!["stairs".to_string(), "stone".into()]
        );
        assert_eq!(skipped, vec!["Odd Name".to_string()]);
    }

    #[test]
    fn registered_definitions_refine_block_items_and_add_others() {
        let (blocks, _) = blocks_of(&voxels(&["stone", "dirt"]));
        let mut registered = BTreeMap::new();
        let mut stone = ItemDef::block("stone")
            .with_groups(&[("cracky", 3)])
            .with_drops(vec![DropRule::always("cobblestone", 1)]);
        stone.description = String::new();
        stone.module = "survival".into();
        registered.insert("stone".to_string(), stone);
        let caps = ToolCaps::default().with("cracky", GroupCap::new(&[-1.0, -1.0, 1.5], 10, 0));
        registered.insert(
            "pick_wood".to_string(),
            ItemDef::tool("pick_wood", "Wooden pickaxe", "pick_wood.png", caps),
        );
        let items = build(&blocks, &registered);
        assert_eq!(items.len(), 3);
        assert_eq!(items["stone"].group("cracky"), 3);
        assert_eq!(items["stone"].description, "Stone");
        assert_eq!(items["stone"].module, "survival");
        assert_eq!(items["dirt"].module, "items");
        assert!(items["pick_wood"].tool_caps().is_some());
        assert_eq!(
            buildat_items_api::roll_drops(&items["stone"], 1),
            vec![ItemStack::new("cobblestone", 1)]
        );
    }

    #[test]
    fn a_registration_is_refused_with_why() {
        let (blocks, _) = blocks_of(&voxels(&["stone"]));
        let ok = [
            ItemDef::block("stone"),
            ItemDef::craft("stick", "Stick", "stick.png"),
        ];
        assert!(check_registration(&ok, &blocks).is_ok());
        let unknown = [ItemDef::block("marble")];
        assert!(matches!(
            check_registration(&unknown, &blocks),
            Err(ItemError::UnknownVoxel { .. })
        ));
        let craft_over_block = [ItemDef::craft("stone", "Stone", "s.png")];
        assert!(check_registration(&craft_over_block, &blocks).is_err());
        let mut other_voxel = ItemDef::block("stone");
        other_voxel.name = "stone".into();
        other_voxel.kind = ItemKind::Block {
            voxel: "air".into(),
        };
        assert!(check_registration(&[other_voxel], &blocks).is_err());
        let bad = [ItemDef::craft("Bad", "", "")];
        assert!(matches!(
            check_registration(&bad, &blocks),
            Err(ItemError::BadName { .. })
        ));
    }
}
