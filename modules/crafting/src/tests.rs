//! The module on the test kit: registrations checked against the item
//! registry the items module answers, grids matched, a reload.

use std::sync::{Arc, Mutex};

use buildat_crafting_api::{GetRecipes, MatchGrid, Recipe, RegisterRecipes, SetRecipes};
use buildat_interface::testing::{TestHost, TestModule};
use buildat_items_api::{GetItems, ItemDef, ItemRegistry, ItemStack, ItemsChanged};

use super::Crafting;

/// An items module that can grow.
fn items_answer(kit: &TestHost, defs: Vec<ItemDef>) -> Arc<Mutex<ItemRegistry>> {
    let mut registry = ItemRegistry {
        version: 1,
        ..ItemRegistry::default()
    };
    for def in defs {
        registry.items.insert(def.name.clone(), def);
    }
    let shared = Arc::new(Mutex::new(registry));
    let answer = Arc::clone(&shared);
    kit.answer::<GetItems>(move |_| Ok(answer.lock().unwrap().clone()));
    shared
}

fn load() -> (TestModule<Crafting>, Arc<Mutex<ItemRegistry>>) {
    let kit = TestHost::new().name("crafting");
    let items = items_answer(
        &kit,
        vec![
            ItemDef::block("wood").with_groups(&[("wood", 1)]),
            ItemDef::block("planks").with_groups(&[("wood", 1)]),
            ItemDef::craft("stick", "Stick", "stick.png"),
        ],
    );
    (kit.load::<Crafting>().unwrap(), items)
}

fn planks() -> Recipe {
    Recipe::shapeless("planks", 4, &["wood"])
}

fn sticks() -> Recipe {
    Recipe::shaped("stick", 4, 1, &["group:wood", "group:wood"])
}

#[test]
fn registered_recipes_make_what_a_grid_holds() {
    let (mut crafting, _) = load();
    crafting
        .call(&RegisterRecipes {
            recipes: vec![planks(), sticks()],
        })
        .unwrap();
    let grid = vec![None, Some(ItemStack::new("wood", 3)), None, None];
    let found = crafting
        .call(&MatchGrid { grid, width: 2 })
        .unwrap()
        .unwrap();
    assert_eq!(found.output, ItemStack::new("planks", 4));
    assert_eq!(found.take, vec![0, 1, 0, 0]);
    let mut grid = vec![None; 9];
    grid[4] = Some(ItemStack::new("planks", 1));
    grid[7] = Some(ItemStack::new("planks", 1));
    let found = crafting
        .call(&MatchGrid { grid, width: 3 })
        .unwrap()
        .unwrap();
    assert_eq!(found.output, ItemStack::new("stick", 4));
    let grid = vec![Some(ItemStack::new("stick", 1))];
    assert_eq!(crafting.call(&MatchGrid { grid, width: 1 }).unwrap(), None);
    assert_eq!(
        crafting.call(&GetRecipes {}).unwrap(),
        vec![planks(), sticks()]
    );
}

#[test]
fn a_bad_recipe_refuses_the_whole_call() {
    let (mut crafting, _) = load();
    let error = crafting
        .call(&RegisterRecipes {
            recipes: vec![planks(), Recipe::shapeless("gold", 1, &["wood"])],
        })
        .unwrap_err();
    assert!(error.to_string().contains("gold"), "{error}");
    assert!(crafting.call(&GetRecipes {}).unwrap().is_empty());
    let error = crafting
        .call(&RegisterRecipes {
            recipes: vec![Recipe::shapeless("planks", 1, &["marble"])],
        })
        .unwrap_err();
    assert!(error.to_string().contains("marble"), "{error}");
}

#[test]
fn items_registered_just_before_are_known_to_a_registration() {
    let (mut crafting, items) = load();
    items.lock().unwrap().items.insert(
        "torch".into(),
        ItemDef::craft("torch", "Torch", "torch.png"),
    );
    crafting
        .call(&RegisterRecipes {
            recipes: vec![Recipe::shapeless("torch", 4, &["stick"])],
        })
        .unwrap();
    assert_eq!(crafting.call(&GetRecipes {}).unwrap().len(), 1);
}

#[test]
fn groups_follow_the_item_registry_as_it_changes() {
    let (mut crafting, items) = load();
    crafting
        .call(&RegisterRecipes {
            recipes: vec![sticks()],
        })
        .unwrap();
    let grid = vec![
        Some(ItemStack::new("pine", 1)),
        Some(ItemStack::new("pine", 1)),
    ];
    let ask = MatchGrid {
        grid: grid.clone(),
        width: 1,
    };
    assert_eq!(crafting.call(&ask).unwrap(), None);
    {
        let mut items = items.lock().unwrap();
        items.version = 2;
        items.items.insert(
            "pine".into(),
            ItemDef::craft("pine", "Pine", "pine.png").with_groups(&[("wood", 1)]),
        );
    }
    crafting.emit(&ItemsChanged { version: 2 }).unwrap();
    assert!(crafting.call(&ask).unwrap().is_some());
}

#[test]
fn grids_out_of_bounds_are_refused() {
    let (mut crafting, _) = load();
    let too_wide = MatchGrid {
        grid: vec![None; 4],
        width: 4,
    };
    assert!(crafting.call(&too_wide).is_err());
    let too_many = MatchGrid {
        grid: vec![None; 12],
        width: 3,
    };
    assert!(crafting.call(&too_many).is_err());
    let zero = MatchGrid {
        grid: vec![],
        width: 0,
    };
    assert!(crafting.call(&zero).is_err());
}

#[test]
fn recipes_survive_a_reload_and_are_not_doubled_by_registering_again() {
    let (mut crafting, _) = load();
    let register = RegisterRecipes {
        recipes: vec![planks(), sticks()],
    };
    crafting.call(&register).unwrap();
    let mut crafting = crafting.reload::<Crafting>().unwrap();
    assert_eq!(crafting.call(&GetRecipes {}).unwrap().len(), 2);
    crafting.call(&register).unwrap();
    assert_eq!(crafting.call(&GetRecipes {}).unwrap().len(), 2);
}

fn set(owner: &str, recipes: Vec<Recipe>) -> SetRecipes {
    SetRecipes {
        owner: owner.into(),
        recipes,
    }
}

#[test]
fn setting_an_owners_recipes_again_replaces_them_in_place() {
    let (mut crafting, _) = load();
    let torch = Recipe::shapeless("stick", 1, &["planks"]);
    crafting
        .call(&RegisterRecipes {
            recipes: vec![planks()],
        })
        .unwrap();
    crafting.call(&set("lua", vec![sticks()])).unwrap();
    crafting
        .call(&RegisterRecipes {
            recipes: vec![torch.clone()],
        })
        .unwrap();
    // The same set again (a reload that changed nothing): one copy.
    crafting.call(&set("lua", vec![sticks()])).unwrap();
    assert_eq!(
        crafting.call(&GetRecipes {}).unwrap(),
        vec![planks(), sticks(), torch.clone()]
    );
    // A changed set replaces the old one where it was, another owner's stays.
    let more = Recipe::shaped("stick", 8, 1, &["planks", "planks"]);
    crafting.call(&set("other", vec![planks()])).unwrap();
    crafting
        .call(&set("lua", vec![more.clone(), sticks()]))
        .unwrap();
    assert_eq!(
        crafting.call(&GetRecipes {}).unwrap(),
        vec![planks(), more, sticks(), torch.clone(), planks()]
    );
    // The set survives a reload with its owner; empty removes it.
    let mut crafting = crafting.reload::<Crafting>().unwrap();
    crafting.call(&set("lua", vec![])).unwrap();
    assert_eq!(
        crafting.call(&GetRecipes {}).unwrap(),
        vec![planks(), torch, planks()]
    );
}

#[test]
fn a_bad_recipe_refuses_a_whole_set_and_keeps_the_old_one() {
    let (mut crafting, _) = load();
    crafting.call(&set("lua", vec![sticks()])).unwrap();
    let error = crafting
        .call(&set(
            "lua",
            vec![planks(), Recipe::shapeless("gold", 1, &["wood"])],
        ))
        .unwrap_err();
    assert!(error.to_string().contains("gold"), "{error}");
    assert_eq!(crafting.call(&GetRecipes {}).unwrap(), vec![sticks()]);
}
