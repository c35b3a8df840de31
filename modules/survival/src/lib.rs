//! The `survival` module: the default game's survival content, written with
//! the modkit. On start it registers the planks block (the chest and the
//! crafting table are its modkit blocks), the item definitions (groups and
//! drops for the terrain's voxels, sticks, lumps, tools: `items`
//! `register_items`) and the recipes (`crafting` `register_recipes`); a
//! placed chest or crafting table gets its inventory (`inventory`
//! `create_inventory`). The content itself is `content.rs`; the living
//! world's rules (grass spreading and dying, saplings growing into trees,
//! beds) are `living.rs`, on the `active` and `health` modules when they
//! are loaded.
//!
//! Owns: registering the content, the placed blocks' inventories being
//! made, the living world's rules. Does not own: digging and placing
//! (`main`), inventories and removing a dug chest's (`inventory`), what
//! the content means (`items`, `crafting`), when active voxels act
//! (`active`), health and respawning (`health`).

pub mod content;
pub mod living;

use std::collections::BTreeSet;

use buildat_crafting_api::RegisterRecipes;
use buildat_inventory_api::{CreateInventory, LIST_CRAFT, LIST_MAIN, Owner};
use buildat_items_api::{GetItems, RegisterItems};
use buildat_modkit::prelude::*;
use buildat_modkit::voxelworld_api::{GetRegistry, RegisterBlock};

/// The mod keeps no state of its own: the inventories are the inventory
/// module's, the content is registered again on every start.
#[derive(Default, Serialize, Deserialize)]
pub struct Survival {}

/// Registers the planks and glass, the items whose blocks this world has, then the
/// recipes the item registry can make (the rest logged and left out: a
/// world with another generator may lack trunks or ores).
fn register_content(ctx: &mut Ctx) -> Result<(), ModuleError> {
    let host = ctx.host();
    for block in [content::planks_block(), content::glass_block()] {
        host.call(&RegisterBlock { block })?;
    }
    let voxels = host.call(&GetRegistry {})?;
    let blocks: BTreeSet<String> = voxels
        .definitions()
        .iter()
        .map(|def| def.name.block_name.clone())
        .collect();
    let (items, absent): (Vec<_>, Vec<_>) = content::items()
        .into_iter()
        .partition(|def| def.voxel().is_none_or(|voxel| blocks.contains(voxel)));
    for def in &absent {
        log::info!(
            "survival: no block {} in this world: its item is left out",
            def.name
        );
    }
    host.call(&RegisterItems { items })?;
    let registry = host.call(&GetItems {})?;
    let (recipes, unmakeable): (Vec<_>, Vec<_>) = content::recipes()
        .into_iter()
        .partition(|recipe| recipe.check(&registry).is_ok());
    for recipe in &unmakeable {
        if let Err(error) = recipe.check(&registry) {
            log::warn!("survival: recipe left out: {error}");
        }
    }
    host.call(&RegisterRecipes { recipes })
}

/// Makes the inventory of a placed chest or crafting table (adding the
/// list if a previous one at that place had none; never dropping items).
fn create_inventory(ctx: &mut Ctx, pos: Pos, list: &str, slots: u16) -> Result<(), ModuleError> {
    ctx.host().call(&CreateInventory {
        owner: Owner::Voxel(pos),
        lists: vec![(list.to_string(), slots)],
    })
}

impl Mod for Survival {
    fn setup(m: &mut Setup<Self>) {
        m.block(content::chest_block())
            .on_place(|_, ctx, pos| create_inventory(ctx, pos, LIST_MAIN, content::CHEST_SLOTS));
        m.block(content::crafting_table_block())
            .on_place(|_, ctx, pos| create_inventory(ctx, pos, LIST_CRAFT, content::TABLE_SLOTS));
        for (sapling, _) in content::SAPLINGS {
            m.block(content::sapling_block(sapling))
                .on_place(|_, ctx, pos| living::plant(ctx, pos));
        }
        m.block(content::bed_block())
            .on_use(|_, ctx, pos| living::sleep(ctx, pos))
            .on_dig(|_, ctx, pos| living::unmake_bed(ctx, pos));
        m.settings::<living::LivingSettings>();
        m.on_start(|_, ctx| register_content(ctx));
        m.on_start(|_, ctx| living::register_abms(ctx));
        m.on_abm(living::GRASS_SPREAD, |_, ctx, found| {
            living::spread_grass(ctx, found)
        });
        m.on_abm(living::GRASS_DIE, |_, ctx, found| {
            living::kill_grass(ctx, found)
        });
        m.on_timer(living::GROW, |_, ctx, timer| {
            living::grow(ctx, timer.pos, timer.voxel)
        });
    }
}

export_mod!(Survival);

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use buildat_crafting_api::Recipe;
    use buildat_items_api::{ItemDef, ItemRegistry};
    use buildat_modkit::testing::TestWorld;

    use super::*;

    /// A world with the items and crafting modules' calls answered: the
    /// items registered kept, the recipes registered kept.
    struct World {
        world: TestWorld,
        items: Arc<Mutex<ItemRegistry>>,
        recipes: Arc<Mutex<Vec<Recipe>>>,
    }

    fn world(blocks: &[&str]) -> World {
        let world = TestWorld::new();
        // As the generator would: its blocks registered before this module starts.
        for name in blocks {
            let block = BlockDefinition::simple(name, &format!("{name}.png"));
            world.kit().host().call(&RegisterBlock { block }).unwrap();
        }
        let items = Arc::new(Mutex::new(ItemRegistry::default()));
        let recipes = Arc::new(Mutex::new(Vec::new()));
        let kept = Arc::clone(&items);
        world.kit().answer(move |register: RegisterItems| {
            let mut items = kept.lock().unwrap();
            for def in register.items {
                items.items.insert(def.name.clone(), def);
            }
            Ok(())
        });
        let kept = Arc::clone(&items);
        world
            .kit()
            .answer(move |_: GetItems| Ok(kept.lock().unwrap().clone()));
        let kept = Arc::clone(&recipes);
        world.kit().answer(move |register: RegisterRecipes| {
            kept.lock().unwrap().extend(register.recipes);
            Ok(())
        });
        world.kit().answer(|_: CreateInventory| Ok(()));
        World {
            world,
            items,
            recipes,
        }
    }

    #[test]
    fn the_content_is_registered_on_start_for_the_blocks_this_world_has() {
        let w = world(&["wood", "coal_ore", "cobblestone", "sand"]);
        let _m = w.world.load::<Survival>().unwrap();
        let items = w.items.lock().unwrap().clone();
        // Its blocks and the terrain's it found; not those the world lacks.
        for name in [
            "planks",
            "glass",
            "chest",
            "crafting_table",
            "wood",
            "coal_ore",
            "stone",
        ] {
            assert!(items.get(name).is_some(), "{name}");
        }
        assert!(items.get("iron_ore").is_none());
        assert!(items.get("pick_wood").unwrap().tool_caps().is_some());
        assert_eq!(items.get("planks").unwrap().group("wood"), 1);
        let recipes = w.recipes.lock().unwrap();
        assert!(recipes.iter().any(|r| r.output.name == "pick_wood"));
        assert!(recipes.iter().any(|r| r.output.name == "torch"));
        assert!(recipes.iter().any(|r| r.output.name == "pick_iron"));
        assert!(recipes.iter().any(|r| r.output.name == "glass"));
        let all = content::recipes().len();
        assert_eq!(recipes.len(), all, "every recipe's items are known here");
    }

    #[test]
    fn recipes_of_unknown_items_are_left_out() {
        let w = world(&["wood"]);
        // A registry that never learns of the lumps: torches and iron tools cannot be made.
        w.world.kit().answer(|_: GetItems| {
            let mut registry = ItemRegistry::default();
            for def in content::items() {
                if !def.name.contains("lump") {
                    registry.items.insert(def.name.clone(), def);
                }
            }
            registry.items.insert("wood".into(), ItemDef::block("wood"));
            Ok(registry)
        });
        let _m = w.world.load::<Survival>().unwrap();
        let recipes = w.recipes.lock().unwrap();
        assert!(recipes.iter().all(|r| r.output.name != "torch"));
        assert!(recipes.iter().all(|r| r.output.name != "pick_iron"));
        assert!(recipes.iter().any(|r| r.output.name == "pick_stone"));
    }

    #[test]
    fn a_placed_chest_or_table_gets_its_inventory() {
        let w = world(&["wood"]);
        let mut m = w.world.load::<Survival>().unwrap();
        w.world
            .place(&mut m, [1, 2, 3], "chest", Some("ann"))
            .unwrap();
        w.world
            .place(&mut m, [4, 5, 6], "crafting_table", Some("ann"))
            .unwrap();
        w.world
            .place(&mut m, [7, 8, 9], "planks", Some("ann"))
            .unwrap();
        let made = w.world.kit().calls::<CreateInventory>();
        assert_eq!(
            made,
            vec![
                CreateInventory {
                    owner: Owner::Voxel([1, 2, 3]),
                    lists: vec![("main".into(), 32)],
                },
                CreateInventory {
                    owner: Owner::Voxel([4, 5, 6]),
                    lists: vec![("craft".into(), 9)],
                },
            ]
        );
    }
}
