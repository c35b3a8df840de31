//! The survival content, pure: the blocks, items, tools, the terrain's dig
//! groups and drops, and the recipes, as values a test can check.
//!
//! Owns: the numbers (dig times, uses, levels, counts) and the recipes.
//! Does not own: registering them (`lib.rs`), what groups and caps mean
//! (`buildat-items-api`), how a grid is matched (`buildat-crafting-api`).
//!
//! Groups: trunks (`wood`) are in `tree`, planks in `wood` (recipes take
//! `group:wood`: planks, not trunks, so no recipe skips the planks step);
//! cobblestones are in `stone`.

use buildat_crafting_api::Recipe;
use buildat_items_api::{DropRule, GroupCap, ItemDef, ItemStack, ToolCaps};
use buildat_modkit::voxel::BlockDefinition;

/// This module's name, its items' `module`.
pub const MODULE: &str = "survival";

/// The planks block (no behaviour: registered without a handler).
pub fn planks_block() -> BlockDefinition {
    BlockDefinition::simple("planks", "planks.png")
}

/// Textures per face: +x, -x, +y, -y, +z, -z.
fn faces(block: &mut BlockDefinition, textures: [&str; 6]) {
    block.textures = textures.map(str::to_string);
}

/// Glass: solid, clear (light crosses it undimmed); its texture
/// (`glass.png`, the default game's, drawn by `scripts/textures.py`) is
/// see-through, so clients draw it blended.
pub fn glass_block() -> BlockDefinition {
    let mut glass = BlockDefinition::simple("glass", "glass.png");
    glass.light_absorption = 0;
    glass
}

/// The chest: an inventory (`main`, 32 slots) made when it is placed.
pub fn chest_block() -> BlockDefinition {
    let mut chest = BlockDefinition::simple("chest", "chest_side.png");
    let (side, top) = ("chest_side.png", "chest_top.png");
    faces(&mut chest, [side, side, top, top, "chest_front.png", side]);
    chest
}

/// The crafting table: a 3×3 grid (`craft`, 9 slots) made when placed.
pub fn crafting_table_block() -> BlockDefinition {
    let mut table = BlockDefinition::simple("crafting_table", "crafting_table_side.png");
    let side = "crafting_table_side.png";
    let top = "crafting_table_top.png";
    faces(&mut table, [side, side, top, "planks.png", side, side]);
    table
}

/// The saplings: each with the leaves that drop it (the tree it grows
/// into is `living.rs`'s).
pub const SAPLINGS: [(&str, &str); 2] = [("sapling", "leaves"), ("pine_sapling", "pine_leaves")];

/// A sapling's block: no collision, clear; grows into the worldgen's tree
/// when its voxel timer fires (`living.rs`).
pub fn sapling_block(name: &str) -> BlockDefinition {
    let mut sapling = BlockDefinition::simple(name, &format!("{name}.png"));
    sapling.physically_solid = false;
    sapling.light_absorption = 0;
    sapling
}

/// The bed: using it makes it the player's respawn point (`lib.rs`).
pub fn bed_block() -> BlockDefinition {
    let mut bed = BlockDefinition::simple("bed", "bed_side.png");
    let side = "bed_side.png";
    faces(
        &mut bed,
        [side, side, "bed_top.png", "planks.png", side, side],
    );
    bed
}

/// Leaves drop a sapling once in this many digs (besides themselves).
pub const SAPLING_RARITY: u32 = 20;

/// Slots of a chest's `main` list.
pub const CHEST_SLOTS: u16 = 32;
/// Slots of a crafting table's `craft` list (3×3).
pub const TABLE_SLOTS: u16 = 9;

/// A block's item refined: its dig groups and what it drops.
fn block(name: &str, groups: &[(&str, i32)], drops: Vec<DropRule>) -> ItemDef {
    let mut def = ItemDef::block(name).with_groups(groups).with_drops(drops);
    def.module = MODULE.into();
    def
}

/// A sapling's item: its block, dug by hand at once, drawn as itself.
fn sapling_item(name: &str) -> ItemDef {
    let mut def = block(
        name,
        &[("snappy", 3), ("oddly_breakable_by_hand", 3)],
        vec![],
    );
    def.texture = format!("{name}.png");
    def
}

/// Leaves: they give themselves, and once in [`SAPLING_RARITY`] digs
/// their sapling too.
fn leaves_item(leaves: &str, sapling: &str) -> ItemDef {
    block(
        leaves,
        &[("snappy", 3), ("leaves", 1)],
        vec![
            DropRule::always(leaves, 1),
            DropRule {
                items: vec![ItemStack::new(sapling, 1)],
                rarity: SAPLING_RARITY,
            },
        ],
    )
}

fn craft(name: &str, description: &str) -> ItemDef {
    let mut def = ItemDef::craft(name, description, &format!("{name}.png"));
    def.module = MODULE.into();
    def
}

/// Each tool material: its name, description word, and the caps of its
/// pickaxe, axe and shovel (times for ratings 1, 2, 3; negative: cannot),
/// uses and level.
struct Material {
    name: &'static str,
    word: &'static str,
    pick: [f32; 3],
    axe: [f32; 3],
    shovel: [f32; 3],
    uses: u32,
    max_level: i32,
}

const MATERIALS: [Material; 3] = [
    Material {
        name: "wood",
        word: "Wooden",
        pick: [-1.0, -1.0, 1.5],
        axe: [-1.0, 2.0, 1.2],
        shovel: [-1.0, 1.6, 0.5],
        uses: 10,
        max_level: 0,
    },
    Material {
        name: "stone",
        word: "Stone",
        pick: [-1.0, 1.6, 0.8],
        axe: [-1.0, 1.4, 0.8],
        shovel: [-1.0, 1.2, 0.4],
        uses: 20,
        max_level: 1,
    },
    Material {
        name: "iron",
        word: "Iron",
        pick: [4.0, 1.2, 0.5],
        axe: [2.5, 1.0, 0.5],
        shovel: [1.5, 0.9, 0.3],
        uses: 40,
        max_level: 2,
    },
];

/// The ingredient each material's tools are made of.
fn material_ingredient(material: &str) -> &'static str {
    match material {
        "wood" => "group:wood",
        "stone" => "group:stone",
        _ => "iron_lump",
    }
}

fn tools() -> Vec<ItemDef> {
    let mut out = Vec::new();
    for m in &MATERIALS {
        for (tool, word, group, times) in [
            ("pick", "pickaxe", "cracky", m.pick),
            ("axe", "axe", "choppy", m.axe),
            ("shovel", "shovel", "crumbly", m.shovel),
        ] {
            let name = format!("{tool}_{}", m.name);
            let caps = ToolCaps::default().with(group, GroupCap::new(&times, m.uses, m.max_level));
            let description = format!("{} {word}", m.word);
            let mut def = ItemDef::tool(&name, &description, &format!("{name}.png"), caps);
            def.module = MODULE.into();
            out.push(def);
        }
    }
    out
}

/// Every item definition survival registers: its own blocks' and the
/// terrain's (groups and drops; a block that is not registered in this
/// world is left out by the caller), the craft items and the tools.
pub fn items() -> Vec<ItemDef> {
    let mut defs = vec![
        // The terrain (modules/worldgen/terrain): what digs it and what it gives.
        block(
            "stone",
            &[("cracky", 3)],
            vec![DropRule::always("cobblestone", 1)],
        ),
        block("cobblestone", &[("cracky", 3), ("stone", 1)], vec![]),
        block("mossy_cobblestone", &[("cracky", 3), ("stone", 1)], vec![]),
        block(
            "coal_ore",
            &[("cracky", 3)],
            vec![DropRule::always("coal_lump", 1)],
        ),
        block(
            "iron_ore",
            &[("cracky", 2), ("level", 1)],
            vec![DropRule::always("iron_lump", 1)],
        ),
        block("gold_ore", &[("cracky", 2), ("level", 2)], vec![]),
        block("dirt", &[("crumbly", 3)], vec![]),
        block(
            "grass",
            &[("crumbly", 3)],
            vec![DropRule::always("dirt", 1)],
        ),
        block("sand", &[("crumbly", 3)], vec![]),
        block("gravel", &[("crumbly", 2)], vec![]),
        block("snow", &[("crumbly", 3)], vec![]),
        block("ice", &[("cracky", 3)], vec![]),
        block("sandstone", &[("cracky", 3)], vec![]),
        block("wood", &[("choppy", 2), ("tree", 1)], vec![]),
        leaves_item("leaves", "sapling"),
        leaves_item("pine_leaves", "pine_sapling"),
        block("cactus", &[("choppy", 3)], vec![]),
        // The default game's own block.
        block("torch", &[("oddly_breakable_by_hand", 3)], vec![]),
        // This module's blocks.
        block("planks", &[("choppy", 3), ("wood", 1)], vec![]),
        block("chest", &[("choppy", 2)], vec![]),
        block("crafting_table", &[("choppy", 2)], vec![]),
        sapling_item("sapling"),
        sapling_item("pine_sapling"),
        block("bed", &[("choppy", 2)], vec![]),
        block(
            "glass",
            &[("cracky", 3), ("oddly_breakable_by_hand", 3)],
            vec![],
        ),
        craft("stick", "Stick"),
        craft("coal_lump", "Coal lump"),
        craft("iron_lump", "Iron lump"),
    ];
    defs.extend(tools());
    defs
}

/// Every recipe.
pub fn recipes() -> Vec<Recipe> {
    let mut out = vec![
        Recipe::shapeless("planks", 4, &["group:tree"]),
        Recipe::shaped("stick", 4, 1, &["group:wood", "group:wood"]),
        Recipe::shaped("torch", 4, 1, &["coal_lump", "stick"]),
        Recipe::shaped("crafting_table", 1, 2, &["group:wood"; 4]),
        // No furnace: sand fused with a lump of coal.
        Recipe::shapeless("glass", 1, &["sand", "coal_lump"]),
        // A mattress of leaves on a frame of planks.
        Recipe::shaped(
            "bed",
            1,
            3,
            &[
                "group:leaves",
                "group:leaves",
                "group:leaves",
                "group:wood",
                "group:wood",
                "group:wood",
            ],
        ),
        Recipe::shaped(
            "chest",
            1,
            3,
            &[
                "group:wood",
                "group:wood",
                "group:wood",
                "group:wood",
                "",
                "group:wood",
                "group:wood",
                "group:wood",
                "group:wood",
            ],
        ),
    ];
    for m in &MATERIALS {
        let x = material_ingredient(m.name);
        let s = "stick";
        let name = |tool: &str| format!("{tool}_{}", m.name);
        out.push(Recipe::shaped(
            &name("pick"),
            1,
            3,
            &[x, x, x, "", s, "", "", s, ""],
        ));
        out.push(Recipe::shaped(&name("axe"), 1, 2, &[x, x, x, s, "", s]));
        out.push(Recipe::shaped(&name("shovel"), 1, 1, &[x, s, s]));
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use buildat_crafting_api::match_grid;
    use buildat_items_api::{ItemRegistry, ItemStack, roll_drops};

    use super::*;

    /// The registry a world with the default terrain, the game's torch and
    /// this module's blocks has: a block item each (as the items module
    /// makes them), then this module's definitions over them.
    fn registry() -> ItemRegistry {
        let mut registry = ItemRegistry::default();
        let blocks = buildat_worldgen_terrain::PALETTE
            .iter()
            .copied()
            .filter(|name| *name != "air")
            .chain([
                "torch",
                "planks",
                "chest",
                "crafting_table",
                "sapling",
                "pine_sapling",
                "bed",
                "glass",
            ]);
        for name in blocks {
            registry.items.insert(name.into(), ItemDef::block(name));
        }
        for def in items() {
            registry.items.insert(def.name.clone(), def);
        }
        registry
    }

    fn seconds(registry: &ItemRegistry, voxel: &str, tool: Option<&str>) -> Option<f32> {
        registry.dig_params(voxel, tool).map(|p| p.seconds)
    }

    fn one(name: &str) -> Option<ItemStack> {
        Some(ItemStack::new(name, 1))
    }

    fn craft(registry: &ItemRegistry, grid: &[Option<ItemStack>], width: u8) -> ItemStack {
        match_grid(&recipes(), registry, grid, width)
            .expect("a recipe matches")
            .output
    }

    #[test]
    fn every_definition_and_recipe_is_valid_and_names_known_items() {
        let registry = registry();
        for def in items() {
            def.check().unwrap();
        }
        for recipe in recipes() {
            recipe.check(&registry).unwrap();
            for ingredient in recipe.ingredients() {
                if let Some(group) = ingredient.strip_prefix("group:") {
                    assert!(
                        registry
                            .items
                            .keys()
                            .any(|name| registry.in_group(name, group)),
                        "no item is in group {group}"
                    );
                }
            }
        }
    }

    #[test]
    fn glass_ice_and_leaves_let_light_through_and_glass_is_made_of_sand() {
        use buildat_modkit::voxel::light::OPAQUE;
        use buildat_worldgen_terrain::{ICE, LEAVES, PINE_LEAVES, light_absorption};
        let glass = glass_block();
        assert_eq!(glass.light_absorption, 0);
        assert!(glass.physically_solid);
        for id in [ICE, LEAVES, PINE_LEAVES] {
            assert!(light_absorption(id) < OPAQUE, "{id}");
        }
        let registry = registry();
        assert_eq!(
            craft(&registry, &[one("sand"), None, None, one("coal_lump")], 2),
            ItemStack::new("glass", 1)
        );
        assert!(seconds(&registry, "glass", None).is_some(), "dug by hand");
    }

    #[test]
    fn every_solid_terrain_voxel_can_be_dug_and_gives_a_known_item() {
        let registry = registry();
        let pick = Some("pick_iron");
        for name in buildat_worldgen_terrain::PALETTE {
            if name == "air" || name == "water" {
                continue;
            }
            let def = registry.get_block(name).unwrap();
            let by_hand = seconds(&registry, name, None);
            assert!(
                by_hand.is_some() || seconds(&registry, name, pick).is_some(),
                "{name} cannot be dug"
            );
            for stack in roll_drops(def, 1) {
                assert!(
                    registry.get(&stack.name).is_some(),
                    "{name} drops {stack:?}"
                );
            }
        }
    }

    #[test]
    fn the_survival_loop_can_be_played_from_bare_hands() {
        let registry = registry();
        // Wood by hand, slowly; it gives itself.
        let wood = seconds(&registry, "wood", None).unwrap();
        assert!((2.0..=4.0).contains(&wood), "{wood}");
        let trunk = roll_drops(registry.get_block("wood").unwrap(), 5);
        assert_eq!(trunk, vec![ItemStack::new("wood", 1)]);
        // Planks in the player's 2×2 grid.
        assert_eq!(
            craft(&registry, &[None, None, None, one("wood")], 2),
            ItemStack::new("planks", 4)
        );
        // Sticks: two planks one above the other.
        assert_eq!(
            craft(&registry, &[one("planks"), None, one("planks"), None], 2),
            ItemStack::new("stick", 4)
        );
        // Trunks are not planks: no shortcut to sticks.
        assert!(
            match_grid(
                &recipes(),
                &registry,
                &[one("wood"), None, one("wood"), None],
                2
            )
            .is_none()
        );
        // A crafting table from four planks, then a wooden pickaxe on it.
        assert_eq!(
            craft(&registry, &vec![one("planks"); 4], 2),
            ItemStack::new("crafting_table", 1)
        );
        let pick = |m: &str| {
            vec![
                one(m),
                one(m),
                one(m),
                None,
                one("stick"),
                None,
                None,
                one("stick"),
                None,
            ]
        };
        assert_eq!(
            craft(&registry, &pick("planks"), 3),
            ItemStack::new("pick_wood", 1)
        );
        // Stone: not by hand; with the wooden pickaxe in about 1.5 s, giving cobblestone.
        assert_eq!(seconds(&registry, "stone", None), None);
        let with_wood = seconds(&registry, "stone", Some("pick_wood")).unwrap();
        assert!((1.2..=1.8).contains(&with_wood), "{with_wood}");
        let cobble = roll_drops(registry.get_block("stone").unwrap(), 9);
        assert_eq!(cobble, vec![ItemStack::new("cobblestone", 1)]);
        assert!(
            registry
                .dig_params("stone", Some("pick_wood"))
                .unwrap()
                .wear
                > 0
        );
        // A stone pickaxe digs stone faster, and iron ore, which wood cannot.
        assert_eq!(
            craft(&registry, &pick("cobblestone"), 3),
            ItemStack::new("pick_stone", 1)
        );
        let with_stone = seconds(&registry, "stone", Some("pick_stone")).unwrap();
        assert!(
            with_stone < with_wood && (0.6..=1.0).contains(&with_stone),
            "{with_stone}"
        );
        assert_eq!(seconds(&registry, "iron_ore", Some("pick_wood")), None);
        assert!(seconds(&registry, "iron_ore", Some("pick_stone")).is_some());
        let lump = roll_drops(registry.get_block("iron_ore").unwrap(), 3);
        assert_eq!(lump, vec![ItemStack::new("iron_lump", 1)]);
        assert_eq!(
            craft(&registry, &pick("iron_lump"), 3),
            ItemStack::new("pick_iron", 1)
        );
        // Torches from coal and a stick; dirt by hand; grass gives dirt.
        assert_eq!(
            craft(&registry, &[one("coal_lump"), None, one("stick"), None], 2),
            ItemStack::new("torch", 4)
        );
        assert!(seconds(&registry, "dirt", None).is_some());
        let grass = roll_drops(registry.get_block("grass").unwrap(), 0);
        assert_eq!(grass, vec![ItemStack::new("dirt", 1)]);
    }

    #[test]
    fn better_tools_dig_faster_and_last_longer() {
        let registry = registry();
        for (voxel, tool) in [("stone", "pick"), ("wood", "axe"), ("dirt", "shovel")] {
            let times: Vec<f32> = ["wood", "stone", "iron"]
                .iter()
                .map(|m| seconds(&registry, voxel, Some(&format!("{tool}_{m}"))).unwrap())
                .collect();
            assert!(times.windows(2).all(|w| w[1] < w[0]), "{voxel}: {times:?}");
            if let Some(hand) = seconds(&registry, voxel, None) {
                assert!(times[0] < hand, "{voxel}: a wooden {tool} beats the hand");
            }
        }
        let wear = |tool: &str| registry.dig_params("stone", Some(tool)).unwrap().wear;
        assert!(wear("pick_iron") < wear("pick_stone") && wear("pick_stone") < wear("pick_wood"));
    }

    #[test]
    fn every_texture_named_is_drawn() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("client_data/textures");
        let blocks = [
            planks_block(),
            chest_block(),
            crafting_table_block(),
            sapling_block("sapling"),
            sapling_block("pine_sapling"),
            bed_block(),
        ];
        let names = blocks
            .iter()
            .flat_map(|b| b.textures.clone())
            .chain(items().into_iter().map(|def| def.texture))
            .filter(|texture| !texture.is_empty());
        for texture in names {
            let bytes =
                std::fs::read(dir.join(&texture)).unwrap_or_else(|e| panic!("{texture}: {e}"));
            assert!(bytes.starts_with(b"\x89PNG"), "{texture}");
        }
    }

    #[test]
    fn leaves_give_themselves_and_a_sapling_now_and_then_and_a_bed_is_made_of_them() {
        let registry = registry();
        let leaves = registry.get_block("leaves").unwrap();
        let rolls: Vec<Vec<ItemStack>> = (0..2000).map(|roll| roll_drops(leaves, roll)).collect();
        assert!(
            rolls
                .iter()
                .all(|d| d.contains(&ItemStack::new("leaves", 1)))
        );
        let saplings = rolls
            .iter()
            .filter(|d| d.contains(&ItemStack::new("sapling", 1)))
            .count();
        // 1 in 20: about 100 of 2000.
        assert!((50..=160).contains(&saplings), "{saplings} saplings");
        assert!(seconds(&registry, "sapling", None).is_some(), "by hand");
        for (sapling, leaves) in SAPLINGS {
            let def = registry.get_block(leaves).unwrap();
            let any =
                (0..200).any(|roll| roll_drops(def, roll).contains(&ItemStack::new(sapling, 1)));
            assert!(any, "{leaves} drop {sapling}");
            assert!(!sapling_block(sapling).physically_solid);
            assert_eq!(sapling_block(sapling).light_absorption, 0);
        }
        let grid = [
            one("leaves"),
            one("leaves"),
            one("leaves"),
            one("planks"),
            one("planks"),
            one("planks"),
            None,
            None,
            None,
        ];
        assert_eq!(craft(&registry, &grid, 3), ItemStack::new("bed", 1));
    }

    #[test]
    fn every_recipe_output_is_distinct_by_grid() {
        // No two recipes claim the same shape of the same ingredients.
        let mut seen = BTreeSet::new();
        for recipe in recipes() {
            assert!(seen.insert(format!("{:?}", recipe.shape)), "{recipe:?}");
        }
    }
}
