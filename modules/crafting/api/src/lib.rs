//! `buildat-crafting-api`: the `crafting` module's public API: recipes
//! ([`Recipe`], [`RecipeShape`]), what a grid makes ([`match_grid`], pure)
//! and the calls ([`RegisterRecipes`], [`SetRecipes`], [`MatchGrid`],
//! [`GetRecipes`]).
//!
//! Owns: the meaning of a recipe (shaped ones match anywhere in the grid,
//! trimmed to their bounding box, not mirrored; shapeless ones in any
//! order; `group:x` ingredients; replacements) and its checks.
//! Does not own: the recipes registered (the `crafting` module), taking a
//! grid's ingredients (one `inventory` transaction), items (`items`).

use buildat_items_api::{ItemError, ItemRegistry, ItemStack};
use serde::{Deserialize, Serialize};

/// The crafting module's name.
pub const MODULE: &str = "crafting";
/// A grid is at most this many columns and rows.
pub const MAX_GRID_SIDE: u8 = 3;
/// An ingredient naming a group: `group:wood` (or several, all needed:
/// `group:wood,flammable`).
pub const GROUP_PREFIX: &str = "group:";

/// Where the ingredients go.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum RecipeShape {
    /// `width` columns, rows of `items` ("" empty, a name, or
    /// "group:wood"); its length a multiple of `width`.
    Shaped { width: u8, items: Vec<String> },
    /// Any order; each entry a name or "group:x".
    Shapeless { items: Vec<String> },
}

/// A recipe.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Recipe {
    pub output: ItemStack,
    pub shape: RecipeShape,
    /// (ingredient, what stays in its slot instead): an empty bucket for a
    /// full one. The ingredient is an item name, or an ingredient of the
    /// recipe as written (`group:x`).
    pub replacements: Vec<(String, ItemStack)>,
}

impl Recipe {
    /// A shaped recipe making `count` of `output`: rows of `width` entries.
    pub fn shaped(output: &str, count: u16, width: u8, items: &[&str]) -> Self {
        Self {
            output: ItemStack::new(output, count),
            shape: RecipeShape::Shaped {
                width,
                items: items.iter().map(|s| s.to_string()).collect(),
            },
            replacements: Vec::new(),
        }
    }

    /// A shapeless recipe making `count` of `output`.
    pub fn shapeless(output: &str, count: u16, items: &[&str]) -> Self {
        Self {
            output: ItemStack::new(output, count),
            shape: RecipeShape::Shapeless {
                items: items.iter().map(|s| s.to_string()).collect(),
            },
            replacements: Vec::new(),
        }
    }

    /// The same recipe leaving `stays` where `ingredient` was taken.
    pub fn with_replacement(mut self, ingredient: &str, stays: ItemStack) -> Self {
        self.replacements.push((ingredient.to_string(), stays));
        self
    }

    /// Every ingredient as written (names and `group:x`), empties left out.
    pub fn ingredients(&self) -> impl Iterator<Item = &str> {
        let items = match &self.shape {
            RecipeShape::Shaped { items, .. } | RecipeShape::Shapeless { items } => items,
        };
        items.iter().map(String::as_str).filter(|s| !s.is_empty())
    }

    /// Checks a recipe against the registry: the output a known item within
    /// its stack size; a shape of 1 to 9 ingredients within a 3×3 grid;
    /// ingredients known items or groups; replacements known stacks.
    pub fn check(&self, items: &ItemRegistry) -> Result<(), RecipeError> {
        items
            .check_stack(&self.output)
            .map_err(|error| RecipeError::Output {
                output: self.output.name.clone(),
                error,
            })?;
        let bad = |why: String| {
            Err(RecipeError::Bad {
                output: self.output.name.clone(),
                why,
            })
        };
        let side = usize::from(MAX_GRID_SIDE);
        match &self.shape {
            RecipeShape::Shaped { width, items } => {
                let width = usize::from(*width);
                if width == 0 || width > side {
                    return bad(format!("a shaped recipe is 1 to {side} wide"));
                }
                if items.len() % width != 0 || items.len() / width > side {
                    return bad(format!(
                        "a shaped recipe's {} entries are not rows of {width}, at most {side}",
                        items.len()
                    ));
                }
            }
            RecipeShape::Shapeless { items } => {
                if items.len() > side * side || items.iter().any(String::is_empty) {
                    return bad(format!(
                        "a shapeless recipe has 1 to {} ingredients",
                        side * side
                    ));
                }
            }
        }
        if self.ingredients().next().is_none() {
            return bad("a recipe has at least one ingredient".into());
        }
        for ingredient in self.ingredients() {
            match ingredient.strip_prefix(GROUP_PREFIX) {
                Some(groups) => {
                    if groups.split(',').any(str::is_empty) {
                        return bad(format!("ingredient {ingredient:?} names no group"));
                    }
                }
                None => {
                    if items.get(ingredient).is_none() {
                        return bad(format!("ingredient {ingredient} is not a known item"));
                    }
                }
            }
        }
        for (ingredient, stays) in &self.replacements {
            if !self.ingredients().any(|i| i == ingredient) && items.get(ingredient).is_none() {
                return bad(format!(
                    "replacement for {ingredient}, which is not an ingredient"
                ));
            }
            items
                .check_stack(stays)
                .map_err(|error| RecipeError::Output {
                    output: self.output.name.clone(),
                    error,
                })?;
        }
        Ok(())
    }
}

/// Why a recipe was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RecipeError {
    #[error("recipe for {output}: {error}")]
    Output { output: String, error: ItemError },
    #[error("recipe for {output}: {why}")]
    Bad { output: String, why: String },
}

/// The result of a grid: what it makes and what is left in each slot after
/// taking it once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CraftMatch {
    pub output: ItemStack,
    /// Per grid slot (same length as the grid): how many to take (0 or 1).
    pub take: Vec<u16>,
    /// Per grid slot: what is put there after taking (a replacement), if
    /// anything. When the slot still holds items after the take, the
    /// replacement goes elsewhere (the inventory decides where).
    pub leave: Vec<Option<ItemStack>>,
}

/// Whether `stack` is the ingredient `ingredient` (a name or `group:x`).
pub fn ingredient_matches(ingredient: &str, stack: &ItemStack, items: &ItemRegistry) -> bool {
    match ingredient.strip_prefix(GROUP_PREFIX) {
        Some(groups) => groups.split(',').all(|g| items.in_group(&stack.name, g)),
        None => stack.name == ingredient,
    }
}

/// The bounding box of the cells where `full` holds, in a `width` wide
/// row-major grid of `len` cells: (first column, first row, columns, rows).
fn bounding_box(len: usize, width: usize, full: impl Fn(usize) -> bool) -> Option<[usize; 4]> {
    let cells: Vec<(usize, usize)> = (0..len)
        .filter(|i| full(*i))
        .map(|i| (i % width, i / width))
        .collect();
    let x0 = cells.iter().map(|c| c.0).min()?;
    let x1 = cells.iter().map(|c| c.0).max()?;
    let y0 = cells.iter().map(|c| c.1).min()?;
    let y1 = cells.iter().map(|c| c.1).max()?;
    Some([x0, y0, x1 - x0 + 1, y1 - y0 + 1])
}

/// For a shaped recipe: per grid slot the ingredient it matched, or `None`
/// when the grid is not this recipe.
fn match_shaped<'r>(
    width: usize,
    recipe: &'r [String],
    items: &ItemRegistry,
    grid: &[Option<ItemStack>],
    grid_width: usize,
) -> Option<Vec<Option<&'r str>>> {
    if width == 0 || !recipe.len().is_multiple_of(width) {
        return None;
    }
    let [rx, ry, rw, rh] = bounding_box(recipe.len(), width, |i| !recipe[i].is_empty())?;
    let [gx, gy, gw, gh] = bounding_box(grid.len(), grid_width, |i| grid[i].is_some())?;
    if (rw, rh) != (gw, gh) {
        return None;
    }
    let mut matched = vec![None; grid.len()];
    for dy in 0..rh {
        for dx in 0..rw {
            let ingredient = recipe[(ry + dy) * width + rx + dx].as_str();
            let slot = (gy + dy) * grid_width + gx + dx;
            match (&grid[slot], ingredient.is_empty()) {
                (None, true) => {}
                (Some(stack), false) if ingredient_matches(ingredient, stack, items) => {
                    matched[slot] = Some(ingredient);
                }
                _ => return None,
            }
        }
    }
    Some(matched)
}

/// For a shapeless recipe: per grid slot the ingredient it matched (every
/// full slot one ingredient, every ingredient one slot), or `None`.
fn match_shapeless<'r>(
    recipe: &'r [String],
    items: &ItemRegistry,
    grid: &[Option<ItemStack>],
) -> Option<Vec<Option<&'r str>>> {
    let full: Vec<usize> = (0..grid.len()).filter(|i| grid[*i].is_some()).collect();
    if full.len() != recipe.len() || full.is_empty() {
        return None;
    }
    // Ingredient i goes to full[assign[i]]: a small backtracking matcher (at
    // most 9 × 9), as groups can make a greedy choice fail.
    fn assign(
        i: usize,
        recipe: &[String],
        items: &ItemRegistry,
        grid: &[Option<ItemStack>],
        full: &[usize],
        used: &mut Vec<bool>,
        chosen: &mut Vec<usize>,
    ) -> bool {
        if i == recipe.len() {
            return true;
        }
        for (k, slot) in full.iter().enumerate() {
            let fits = !used[k]
                && grid[*slot]
                    .as_ref()
                    .is_some_and(|stack| ingredient_matches(&recipe[i], stack, items));
            if fits {
                used[k] = true;
                chosen.push(*slot);
                if assign(i + 1, recipe, items, grid, full, used, chosen) {
                    return true;
                }
                chosen.pop();
                used[k] = false;
            }
        }
        false
    }
    let mut used = vec![false; full.len()];
    let mut chosen = Vec::new();
    if !assign(0, recipe, items, grid, &full, &mut used, &mut chosen) {
        return None;
    }
    let mut matched = vec![None; grid.len()];
    for (ingredient, slot) in recipe.iter().zip(chosen) {
        matched[slot] = Some(ingredient.as_str());
    }
    Some(matched)
}

/// Pure: the first matching recipe for `grid` (`width` columns, row-major);
/// shaped recipes match anywhere in the grid (trimmed to their bounding
/// box, not mirrored); groups resolved through `items`. `None`: no recipe,
/// an empty grid, or a grid that is not whole rows of `width`.
pub fn match_grid(
    recipes: &[Recipe],
    items: &ItemRegistry,
    grid: &[Option<ItemStack>],
    width: u8,
) -> Option<CraftMatch> {
    let grid_width = usize::from(width);
    if grid_width == 0 || grid.is_empty() || !grid.len().is_multiple_of(grid_width) {
        return None;
    }
    recipes.iter().find_map(|recipe| {
        let matched = match &recipe.shape {
            RecipeShape::Shaped {
                width,
                items: cells,
            } => match_shaped(usize::from(*width), cells, items, grid, grid_width),
            RecipeShape::Shapeless { items: cells } => match_shapeless(cells, items, grid),
        }?;
        let take = matched.iter().map(|m| u16::from(m.is_some())).collect();
        let leave = matched
            .iter()
            .zip(grid)
            .map(|(ingredient, slot)| {
                let (ingredient, stack) = (ingredient.as_ref()?, slot.as_ref()?);
                recipe
                    .replacements
                    .iter()
                    .find(|(key, _)| key == ingredient || *key == stack.name)
                    .map(|(_, stays)| stays.clone())
            })
            .collect();
        Some(CraftMatch {
            output: recipe.output.clone(),
            take,
            leave,
        })
    })
}

/// Call `register_recipes`: adds recipes (after those registered before:
/// the first match wins). Each is checked ([`Recipe::check`]); one bad
/// recipe refuses the call, naming why, and none is added.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RegisterRecipes {
    pub recipes: Vec<Recipe>,
}

/// Call `set_recipes`: the recipes of `owner` (a name the caller chooses,
/// as `lua` for the Lua mods) become exactly `recipes`, replacing every
/// recipe set under that owner before: what a module registering on
/// behalf of others calls again after each change, so a changed recipe
/// replaces its old version instead of being added beside it. They take
/// the place of the owner's earlier recipes in the order (the first time:
/// after every recipe registered before); an empty list removes them.
/// Checked as [`RegisterRecipes`]: one bad recipe refuses the call, naming
/// why, and nothing changes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SetRecipes {
    pub owner: String,
    pub recipes: Vec<Recipe>,
}

/// Call `match_grid`: [`match_grid`] over the registered recipes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MatchGrid {
    pub grid: Vec<Option<ItemStack>>,
    pub width: u8,
}

/// Call `get_recipes`: every registered recipe, in order.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GetRecipes {}

buildat_interface::calls! {
    module MODULE;
    RegisterRecipes = "register_recipes" -> ();
    SetRecipes = "set_recipes" -> ();
    MatchGrid = "match_grid" -> Option<CraftMatch>;
    GetRecipes = "get_recipes" -> Vec<Recipe>;
}

#[cfg(test)]
mod tests {
    use buildat_items_api::ItemDef;

    use super::*;

    fn registry() -> ItemRegistry {
        let mut items = ItemRegistry::default();
        for def in [
            ItemDef::block("wood").with_groups(&[("wood", 1)]),
            ItemDef::block("pine_wood").with_groups(&[("wood", 1)]),
            ItemDef::block("planks").with_groups(&[("wood", 1), ("planks", 1)]),
            ItemDef::block("cobblestone"),
            ItemDef::craft("stick", "Stick", "stick.png"),
            ItemDef::craft("bucket_water", "Water bucket", "b.png"),
            ItemDef::craft("bucket", "Bucket", "b.png"),
            ItemDef::craft("dough", "Dough", "d.png"),
            ItemDef::craft("flour", "Flour", "f.png"),
            ItemDef::block("chest"),
        ] {
            items.items.insert(def.name.clone(), def);
        }
        items
    }

    fn s(name: &str) -> Option<ItemStack> {
        Some(ItemStack::new(name, 5))
    }

    fn pick() -> Recipe {
        Recipe::shaped(
            "cobblestone",
            1,
            3,
            &[
                "planks", "planks", "planks", "", "stick", "", "", "stick", "",
            ],
        )
    }

    #[test]
    fn a_shaped_recipe_matches_anywhere_in_the_grid() {
        let sticks = Recipe::shaped("stick", 4, 1, &["group:wood", "group:wood"]);
        let recipes = [sticks];
        let items = registry();
        // Top left of a 3×3, bottom right, and in a 2×2.
        let mut grid = vec![None; 9];
        grid[0] = s("planks");
        grid[3] = s("wood");
        let found = match_grid(&recipes, &items, &grid, 3).unwrap();
        assert_eq!(found.output, ItemStack::new("stick", 4));
        assert_eq!(found.take, vec![1, 0, 0, 1, 0, 0, 0, 0, 0]);
        assert!(found.leave.iter().all(Option::is_none));
        let mut grid = vec![None; 9];
        grid[5] = s("planks");
        grid[8] = s("planks");
        assert!(match_grid(&recipes, &items, &grid, 3).is_some());
        let grid = vec![None, s("planks"), None, s("pine_wood")];
        assert_eq!(
            match_grid(&recipes, &items, &grid, 2).unwrap().take,
            vec![0, 1, 0, 1]
        );
        // Side by side is another shape; one more item is no match.
        let grid = vec![s("planks"), s("planks"), None, None];
        assert!(match_grid(&recipes, &items, &grid, 2).is_none());
        let grid = vec![s("planks"), s("planks"), s("planks"), None];
        assert!(match_grid(&recipes, &items, &grid, 2).is_none());
    }

    #[test]
    fn a_shaped_recipe_keeps_its_holes_and_is_not_mirrored() {
        let items = registry();
        let recipes = [pick()];
        let mut grid = vec![
            s("planks"),
            s("planks"),
            s("planks"),
            None,
            s("stick"),
            None,
        ];
        grid.extend([None, s("stick"), None]);
        let found = match_grid(&recipes, &items, &grid, 3).unwrap();
        assert_eq!(found.take, vec![1, 1, 1, 0, 1, 0, 0, 1, 0]);
        // A stick moved off the handle's column is no pickaxe.
        grid[7] = None;
        grid[6] = s("stick");
        assert!(match_grid(&recipes, &items, &grid, 3).is_none());
        // Too big for a 2×2.
        let grid = vec![s("planks"), s("planks"), None, s("stick")];
        assert!(match_grid(&recipes, &items, &grid, 2).is_none());
        // An L is not its mirror.
        let ell = [Recipe::shaped(
            "chest",
            1,
            2,
            &["planks", "", "planks", "planks"],
        )];
        let grid = vec![s("planks"), None, s("planks"), s("planks")];
        assert!(match_grid(&ell, &items, &grid, 2).is_some());
        let mirrored = vec![None, s("planks"), s("planks"), s("planks")];
        assert!(match_grid(&ell, &items, &mirrored, 2).is_none());
    }

    #[test]
    fn a_shapeless_recipe_matches_in_any_order_with_groups() {
        let items = registry();
        let recipes = [Recipe::shapeless(
            "dough",
            1,
            &["group:wood", "planks", "flour"],
        )];
        // A greedy matcher would give the planks to group:wood and fail.
        let grid = vec![s("flour"), None, s("planks"), s("planks")];
        let found = match_grid(&recipes, &items, &grid, 2).unwrap();
        assert_eq!(found.take, vec![1, 0, 1, 1]);
        let grid = vec![s("planks"), s("flour"), None, s("wood")];
        assert!(match_grid(&recipes, &items, &grid, 2).is_some());
        let grid = vec![s("flour"), s("flour"), None, s("wood")];
        assert!(match_grid(&recipes, &items, &grid, 2).is_none());
        let grid = vec![s("flour"), None, s("planks"), None];
        assert!(match_grid(&recipes, &items, &grid, 2).is_none());
    }

    #[test]
    fn replacements_stay_in_their_slots() {
        let items = registry();
        let recipes = [Recipe::shapeless("dough", 1, &["flour", "bucket_water"])
            .with_replacement("bucket_water", ItemStack::new("bucket", 1))];
        let grid = vec![s("bucket_water"), None, None, s("flour")];
        let found = match_grid(&recipes, &items, &grid, 2).unwrap();
        assert_eq!(found.leave[0], Some(ItemStack::new("bucket", 1)));
        assert_eq!(found.leave[3], None);
    }

    #[test]
    fn nothing_matches_an_empty_ragged_or_unknown_grid() {
        let items = registry();
        let recipes = [pick(), Recipe::shapeless("planks", 4, &["wood"])];
        assert!(match_grid(&recipes, &items, &vec![None; 9], 3).is_none());
        assert!(match_grid(&recipes, &items, &[s("wood"), None, None], 2).is_none());
        assert!(match_grid(&recipes, &items, &[s("wood")], 0).is_none());
        assert!(match_grid(&recipes, &items, &[s("cobblestone"), None, None, None], 2).is_none());
        assert!(match_grid(&[], &items, &[s("wood")], 1).is_none());
        let found = match_grid(&recipes, &items, &[None, None, None, s("wood")], 2).unwrap();
        assert_eq!(found.output, ItemStack::new("planks", 4));
    }

    #[test]
    fn the_first_matching_recipe_wins() {
        let items = registry();
        let recipes = [
            Recipe::shapeless("stick", 1, &["planks"]),
            Recipe::shapeless("chest", 1, &["group:wood"]),
        ];
        let grid = vec![s("planks")];
        assert_eq!(
            match_grid(&recipes, &items, &grid, 1).unwrap().output.name,
            "stick"
        );
        let grid = vec![s("wood")];
        assert_eq!(
            match_grid(&recipes, &items, &grid, 1).unwrap().output.name,
            "chest"
        );
    }

    #[test]
    fn recipes_are_checked_against_the_registry() {
        let items = registry();
        assert!(pick().check(&items).is_ok());
        assert!(
            Recipe::shapeless("planks", 4, &["group:wood"])
                .check(&items)
                .is_ok()
        );
        assert!(
            Recipe::shapeless("nothing", 1, &["wood"])
                .check(&items)
                .is_err()
        );
        assert!(
            Recipe::shapeless("planks", 4, &["nothing"])
                .check(&items)
                .is_err()
        );
        assert!(
            Recipe::shapeless("planks", 0, &["wood"])
                .check(&items)
                .is_err()
        );
        assert!(
            Recipe::shapeless("planks", 100, &["wood"])
                .check(&items)
                .is_err()
        );
        assert!(Recipe::shapeless("planks", 1, &[]).check(&items).is_err());
        assert!(
            Recipe::shapeless("planks", 1, &["group:"])
                .check(&items)
                .is_err()
        );
        assert!(
            Recipe::shaped("planks", 1, 2, &["wood", "wood", "wood"])
                .check(&items)
                .is_err()
        );
        assert!(
            Recipe::shaped("planks", 1, 4, &["wood"; 4])
                .check(&items)
                .is_err()
        );
        assert!(
            Recipe::shaped("planks", 1, 1, &["wood"; 4])
                .check(&items)
                .is_err()
        );
        assert!(
            Recipe::shaped("planks", 1, 2, &["", "", "", ""])
                .check(&items)
                .is_err()
        );
        let bad_replacement = Recipe::shapeless("dough", 1, &["flour"])
            .with_replacement("flour", ItemStack::new("nothing", 1));
        assert!(bad_replacement.check(&items).is_err());
        let not_an_ingredient = Recipe::shapeless("dough", 1, &["flour"])
            .with_replacement("group:x", ItemStack::new("bucket", 1));
        assert!(not_an_ingredient.check(&items).is_err());
    }
}
