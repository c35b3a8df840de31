//! The `crafting` module: the recipes every module registers
//! (`register_recipes`, checked against the item registry; `set_recipes`
//! replacing an owner's whole set, as the `lua` module does after a mod's
//! reload), what a grid makes (`match_grid`: the first matching recipe,
//! pure matching in `buildat-crafting-api`) and the list (`get_recipes`).
//!
//! Owns: the recipes, in registration order, with the owner that set them
//! (`set_recipes`), and its copy of the item registry (refreshed on
//! `items:changed` and before every registration).
//! Does not own: what a recipe means (`buildat-crafting-api`), taking a
//! grid's ingredients (`inventory`, in one transaction), items (`items`).

use buildat_crafting_api::{
    CraftMatch, GetRecipes, MAX_GRID_SIDE, MatchGrid, Recipe, RegisterRecipes, SetRecipes,
    match_grid,
};
use buildat_interface::events;
use buildat_interface::{Host, Module, ModuleError, Receive, Stash, export_module, log};
use buildat_items_api::{GetItems, ItemRegistry, ItemsChanged};
use serde::{Deserialize, Serialize};

/// What crosses a reload: the recipes and their owners.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Kept {
    recipes: Vec<Recipe>,
    owners: Vec<Option<String>>,
}
impl Stash for Kept {
    const LAYOUT: u32 = 2;
}

pub struct Crafting {
    host: Host,
    recipes: Vec<Recipe>,
    /// Per recipe (same index): the owner that set it (`set_recipes`),
    /// `None` for `register_recipes`.
    owners: Vec<Option<String>>,
    items: ItemRegistry,
}

impl Crafting {
    fn refresh_items(&mut self) -> Result<(), ModuleError> {
        self.items = self.host.call(&GetItems {})?;
        Ok(())
    }

    /// Checks every recipe first: one bad recipe refuses the call. A recipe
    /// registered before (equal in every part) is not added twice, so a
    /// module registering again after its reload changes nothing.
    fn register(&mut self, request: RegisterRecipes) -> Result<(), ModuleError> {
        self.check(&request.recipes)?;
        for recipe in request.recipes {
            if !self.recipes.contains(&recipe) {
                self.recipes.push(recipe);
                self.owners.push(None);
            }
        }
        Ok(())
    }

    /// Refreshes the item registry and checks every recipe against it.
    fn check(&mut self, recipes: &[Recipe]) -> Result<(), ModuleError> {
        self.refresh_items()?;
        for recipe in recipes {
            recipe
                .check(&self.items)
                .map_err(|error| ModuleError::msg(error.to_string()))?;
        }
        Ok(())
    }

    /// `set_recipes`: checks every recipe first, then puts the set where
    /// the owner's earlier recipes were (the first of them), or last.
    fn set(&mut self, request: SetRecipes) -> Result<(), ModuleError> {
        self.check(&request.recipes)?;
        let owner = Some(request.owner);
        let at = self.owners.iter().position(|o| *o == owner);
        let (mut recipes, mut owners) = (Vec::new(), Vec::new());
        for (recipe, was) in self.recipes.drain(..).zip(self.owners.drain(..)) {
            if was != owner {
                recipes.push(recipe);
                owners.push(was);
            }
        }
        let at = at.unwrap_or(recipes.len());
        let count = request.recipes.len();
        recipes.splice(at..at, request.recipes);
        owners.splice(at..at, std::iter::repeat_n(owner, count));
        self.recipes = recipes;
        self.owners = owners;
        Ok(())
    }

    fn match_grid(&self, request: &MatchGrid) -> Result<Option<CraftMatch>, ModuleError> {
        let side = usize::from(MAX_GRID_SIDE);
        if request.width == 0 || request.width > MAX_GRID_SIDE || request.grid.len() > side * side {
            return Err(ModuleError::msg(format!(
                "a crafting grid is 1 to {side} wide with at most {} slots, not {} wide with {}",
                side * side,
                request.width,
                request.grid.len()
            )));
        }
        Ok(match_grid(
            &self.recipes,
            &self.items,
            &request.grid,
            request.width,
        ))
    }
}

impl Module for Crafting {
    fn create(host: Host) -> Result<Self, ModuleError> {
        Ok(Self {
            host,
            recipes: Vec::new(),
            owners: Vec::new(),
            items: ItemRegistry::default(),
        })
    }

    fn receive(table: &mut Receive<Self>) {
        table
            .event(|crafting, _: events::Start| crafting.refresh_items())
            .event(|crafting, _: events::Continue| crafting.refresh_items())
            .event(|crafting, changed: ItemsChanged| {
                if changed.version != crafting.items.version
                    && let Err(error) = crafting.refresh_items()
                {
                    log::warn!("reading the item registry: {error}");
                }
                Ok(())
            })
            .call(|crafting, request: RegisterRecipes| crafting.register(request))
            .call(|crafting, request: SetRecipes| crafting.set(request))
            .call(|crafting, request: MatchGrid| crafting.match_grid(&request))
            .call(|crafting, _: GetRecipes| Ok(crafting.recipes.clone()))
            .stash(
                |crafting: &mut Crafting| Kept {
                    recipes: std::mem::take(&mut crafting.recipes),
                    owners: std::mem::take(&mut crafting.owners),
                },
                |crafting, mut kept: Kept| {
                    kept.owners.resize(kept.recipes.len(), None);
                    crafting.recipes = kept.recipes;
                    crafting.owners = kept.owners;
                    Ok(())
                },
            );
    }
}

export_module!(Crafting);

#[cfg(test)]
mod tests;
