//! The living world's rules of the survival game, on the `active` module
//! (through the modkit): grass spreading to lit dirt beside it and dying
//! under a block (two ABMs), a sapling growing into the worldgen's tree
//! when its voxel timer fires, a bed a player makes its respawn point
//! (the `health` module's `set_respawn`) until it is dug (its sleepers
//! kept in the world's values, space `survival.beds`).
//!
//! Owns: the rules and their settings (`survival.*`). Does not own: when
//! voxels are found or timers fire, nor the budget (`active`), the tree's
//! shape (`buildat-worldgen-terrain`'s `tree_voxels`), respawning
//! (`health`).

use std::collections::HashMap;

use buildat_health_api::SetRespawn;
use buildat_modkit::active_api::MIN_INTERVAL_SECONDS;
use buildat_modkit::interface::CallError;
use buildat_modkit::prelude::*;
use buildat_modkit::voxel::{AIR, VoxelInstance, light};
use buildat_modkit::voxelworld_api::{
    EditOutcome, EditVoxel, EditVoxels, GetLights, GetValue, GetVoxels, ListValues,
    MAX_VALUES_LISTED, MAX_VOXELS_PER_CALL, PutValues, Replace, ValueWrite,
};

settings! {
    /// The survival game's living world.
    pub struct LivingSettings in "survival" {
        /// Seconds between two rounds of the grass ABMs over the voxels
        /// near players (spreading and dying; 0.1 at least).
        pub grass_seconds: f64 = 6.0,
        /// Each dirt voxel beside grass (each grass voxel under a block) in
        /// a round turns with chance 1 in this.
        pub grass_chance: u32 = 20,
        /// Seconds a planted sapling takes to grow into a tree (and waits
        /// again when it has no room).
        pub sapling_seconds: f64 = 300.0,
    }
}

/// The ABM turning dirt beside grass into grass.
pub const GRASS_SPREAD: &str = "survival:grass_spread";
/// The ABM turning grass under a block into dirt.
pub const GRASS_DIE: &str = "survival:grass_die";
/// The sapling's timer tag.
pub const GROW: &str = "grow";
/// The light (sunlight or block light) above dirt that grass spreads to.
pub const GRASS_LIGHT: u8 = 9;

/// Registers the grass ABMs with the settings' interval and chance.
pub fn register_abms(ctx: &mut Ctx) -> Result<(), ModuleError> {
    let settings = ctx.settings::<LivingSettings>()?;
    // A shorter interval than active takes is its shortest, not a failed start.
    let every = settings.grass_seconds.max(MIN_INTERVAL_SECONDS);
    let chance = settings.grass_chance;
    ctx.register_abm(GRASS_SPREAD, &["dirt"], &["grass", "air"], every, chance)?;
    ctx.register_abm(GRASS_DIE, &["grass"], &[], every, chance)?;
    Ok(())
}

fn above([x, y, z]: Pos) -> Pos {
    [x, y + 1, z]
}

/// Whether the voxel `above` a grass voxel smothers it: a block light does
/// not cross (opaque), or a liquid. Air, torches, saplings and leaves let
/// it live. `known` remembers each type's answer for a batch.
fn smothers(
    ctx: &mut Ctx,
    known: &mut HashMap<u32, bool>,
    above: u32,
) -> Result<bool, ModuleError> {
    let type_id = VoxelInstance(above).type_id();
    if type_id == AIR {
        return Ok(false);
    }
    if let Some(&answer) = known.get(&type_id) {
        return Ok(answer);
    }
    let definition = ctx.voxel_definition(above)?;
    let answer = definition.light_absorption >= light::OPAQUE
        || buildat_liquid_api::is_liquid(&definition.name.block_name);
    known.insert(type_id, answer);
    Ok(answer)
}

/// One `EditVoxels` of the voxels found into `name` (each only if it is
/// still what was found), saved; how many changed.
fn turn(ctx: &mut Ctx, voxels: &[(Pos, u32)], name: &str) -> Result<usize, ModuleError> {
    if voxels.is_empty() {
        return Ok(0);
    }
    let voxel = ctx.voxel_id(name)?;
    let edits = voxels
        .iter()
        .map(|&(pos, was)| EditVoxel {
            pos,
            voxel,
            replace: Replace::Exactly(was),
            save: true,
            by: buildat_modkit::voxelworld_api::by_module("survival"),
        })
        .collect();
    let outcomes = ctx.host().call(&EditVoxels { edits })?;
    Ok(outcomes
        .iter()
        .filter(|o| matches!(o, EditOutcome::Edited { .. }))
        .count())
}

/// The 26 voxels around `pos` (faces, edges, corners).
fn around([x, y, z]: Pos) -> impl Iterator<Item = Pos> {
    (-1..=1).flat_map(move |dx| {
        (-1..=1).flat_map(move |dy| {
            (-1..=1)
                .filter(move |&dz| (dx, dy, dz) != (0, 0, 0))
                .map(move |dz| [x + dx, y + dy, z + dz])
        })
    })
}

/// `survival:grass_spread`: each dirt voxel found (beside grass or air)
/// whose voxel above does not smother grass and has light of at least
/// [`GRASS_LIGHT`], with grass among the 26 voxels around it (diagonals
/// too, as Luanti: dirt placed on grass turns even when the grass under it
/// died first), turns to grass. Per batch (of at most
/// [`MAX_VOXELS_PER_CALL`]): one `GetVoxels` and one `GetLights` above,
/// `GetVoxels` around the lit ones, one `EditVoxels`.
pub fn spread_grass(ctx: &mut Ctx, found: &[(Pos, u32)]) -> Result<usize, ModuleError> {
    let (mut changed, mut known) = (0, HashMap::new());
    let grass = VoxelInstance(ctx.voxel_id("grass")?).type_id();
    for batch in found.chunks(MAX_VOXELS_PER_CALL) {
        let positions: Vec<Pos> = batch.iter().map(|&(pos, _)| above(pos)).collect();
        let host = ctx.host();
        let voxels = host.call(&GetVoxels {
            positions: positions.clone(),
        })?;
        let lights = host.call(&GetLights { positions })?;
        let mut lit = Vec::new();
        for ((found, voxel), light) in batch.iter().zip(voxels).zip(lights) {
            let (Some(voxel), Some((sun, block))) = (voxel, light) else {
                continue;
            };
            if sun.max(block) >= GRASS_LIGHT && !smothers(ctx, &mut known, voxel)? {
                lit.push(*found);
            }
        }
        let mut spreading = Vec::new();
        for part in lit.chunks(MAX_VOXELS_PER_CALL / 26) {
            let positions = part.iter().flat_map(|&(pos, _)| around(pos)).collect();
            let voxels = host.call(&GetVoxels { positions })?;
            for (found, near) in part.iter().zip(voxels.chunks(26)) {
                let is_grass =
                    |v: &Option<u32>| v.is_some_and(|v| VoxelInstance(v).type_id() == grass);
                if near.iter().any(is_grass) {
                    spreading.push(*found);
                }
            }
        }
        changed += turn(ctx, &spreading, "grass")?;
    }
    Ok(changed)
}

/// `survival:grass_die`: each grass voxel found under a voxel that
/// smothers it turns to dirt.
pub fn kill_grass(ctx: &mut Ctx, found: &[(Pos, u32)]) -> Result<usize, ModuleError> {
    let (mut changed, mut known) = (0, HashMap::new());
    for batch in found.chunks(MAX_VOXELS_PER_CALL) {
        let positions: Vec<Pos> = batch.iter().map(|&(pos, _)| above(pos)).collect();
        let voxels = ctx.host().call(&GetVoxels { positions })?;
        let mut covered = Vec::new();
        for (found, voxel) in batch.iter().zip(voxels) {
            if let Some(voxel) = voxel
                && smothers(ctx, &mut known, voxel)?
            {
                covered.push(*found);
            }
        }
        changed += turn(ctx, &covered, "dirt")?;
    }
    Ok(changed)
}

/// A planted sapling waits `survival.sapling_seconds` to grow.
pub fn plant(ctx: &mut Ctx, pos: Pos) -> Result<bool, ModuleError> {
    let seconds = ctx.settings::<LivingSettings>()?.sapling_seconds;
    ctx.set_timer(pos, seconds, GROW)
}

/// The tree the sapling `sapling` (a block name of
/// [`crate::content::SAPLINGS`]) at `pos` grows into: the worldgen's (a
/// pine of a `pine_sapling`), its variant from the position (the same
/// sapling always makes the same tree); `None` for another block.
pub fn tree_at(sapling: &str, pos: Pos) -> Option<Vec<(Pos, &'static str)>> {
    let [x, y, z] = pos;
    let variant = buildat_worldgen_terrain::noise::hash(0x5a91_1e55, x, y, z);
    match sapling {
        "sapling" => Some(buildat_worldgen_terrain::tree_voxels(pos, variant)),
        "pine_sapling" => Some(buildat_worldgen_terrain::pine_voxels(pos, variant)),
        _ => None,
    }
}

/// The sapling `sapling` at `pos` grows (its timer fired): when its trunk
/// has room (air above it where the trunk goes), the worldgen's tree
/// replaces it, the trunk and leaves only into air; otherwise it waits
/// another `survival.sapling_seconds`. Whether it grew.
pub fn grow(ctx: &mut Ctx, pos: Pos, sapling: u32) -> Result<bool, ModuleError> {
    let name = ctx.voxel_name(sapling)?;
    let Some(tree) = tree_at(&name, pos) else {
        return Err(ModuleError::msg(format!("{name} is not a sapling")));
    };
    let trunk: Vec<Pos> = tree
        .iter()
        .filter(|(at, name)| *name == "wood" && *at != pos)
        .map(|(at, _)| *at)
        .collect();
    let voxels = ctx.host().call(&GetVoxels { positions: trunk })?;
    let room = voxels
        .iter()
        .all(|v| v.is_some_and(|v| VoxelInstance(v).type_id() == AIR));
    if !room {
        plant(ctx, pos)?;
        return Ok(false);
    }
    let mut ids = HashMap::new();
    let mut edits = Vec::with_capacity(tree.len());
    for (at, block) in tree {
        let voxel = match ids.get(block) {
            Some(&id) => id,
            None => *ids.entry(block).or_insert(ctx.voxel_id(block)?),
        };
        edits.push(EditVoxel {
            pos: at,
            voxel,
            replace: if at == pos {
                Replace::Exactly(sapling)
            } else {
                Replace::OnlyAir
            },
            save: true,
            by: buildat_modkit::voxelworld_api::by_module("survival"),
        });
    }
    let outcomes = ctx.host().call(&EditVoxels { edits })?;
    Ok(matches!(outcomes.first(), Some(EditOutcome::Edited { .. })))
}

/// The space of the world's values the beds are kept in: `player/NAME`
/// holds the position (`x,y,z`) of the bed NAME last used, `at/x,y,z/NAME`
/// marks it, so a dug bed finds its sleepers.
pub const BED_SPACE: &str = "survival.beds";

fn bed_key([x, y, z]: Pos) -> String {
    format!("{x},{y},{z}")
}

fn write(key: String, value: Option<Vec<u8>>) -> ValueWrite {
    ValueWrite {
        space: BED_SPACE.to_string(),
        key,
        value,
        only_if_absent: false,
    }
}

/// Sets `player`'s respawn point (`None`: the spawn point again); whether
/// the `health` module took it (`false`: not loaded, nobody dies).
fn set_respawn(
    ctx: &mut Ctx,
    player: &str,
    position: Option<[f64; 3]>,
) -> Result<bool, ModuleError> {
    let set = SetRespawn {
        player: player.to_string(),
        position,
    };
    match ctx.host().call(&set) {
        Ok(()) => Ok(true),
        Err(ModuleError::Call(CallError::NotFound(_))) => Ok(false),
        Err(error) => Err(error),
    }
}

/// A player used the bed at `pos`: it becomes their respawn point (on top
/// of it), told in chat, and is kept (the player's previous bed forgets
/// them). Without the `health` module nobody dies, so there is nothing to
/// set: they are told so.
pub fn sleep(ctx: &mut Ctx, pos: Pos) -> Result<(), ModuleError> {
    let Some(player) = ctx.player().map(str::to_string) else {
        return Ok(());
    };
    let [x, y, z] = pos;
    let position = [f64::from(x) + 0.5, f64::from(y) + 1.0, f64::from(z) + 0.5];
    if !set_respawn(ctx, &player, Some(position))? {
        ctx.tell(&player, "Nobody dies in this world: no need")?;
        return Ok(());
    }
    let host = ctx.host();
    let here = bed_key(pos);
    let player_key = format!("player/{player}");
    let previous = host.call(&GetValue {
        space: BED_SPACE.to_string(),
        key: player_key.clone(),
    })?;
    let mut writes = Vec::new();
    if let Some(previous) = previous.and_then(|p| String::from_utf8(p).ok())
        && previous != here
    {
        writes.push(write(format!("at/{previous}/{player}"), None));
    }
    writes.push(write(player_key, Some(here.clone().into_bytes())));
    writes.push(write(format!("at/{here}/{player}"), Some(b"bed".to_vec())));
    host.call(&PutValues { writes })?;
    ctx.tell(&player, "Respawn point set: you will wake up at this bed")?;
    Ok(())
}

/// The bed at `pos` was dug (or replaced): whoever slept in it last
/// respawns at the spawn point again, told in chat; how many.
pub fn unmake_bed(ctx: &mut Ctx, pos: Pos) -> Result<usize, ModuleError> {
    let host = ctx.host();
    let here = bed_key(pos);
    let prefix = format!("at/{here}/");
    let marks = host.call(&ListValues {
        space: BED_SPACE.to_string(),
        key_prefix: prefix.clone(),
        after: None,
        limit: MAX_VALUES_LISTED,
    })?;
    let sleepers: Vec<String> = marks
        .iter()
        .filter_map(|mark| mark.key.strip_prefix(&prefix).map(str::to_string))
        .collect();
    if sleepers.is_empty() {
        return Ok(0);
    }
    let mut writes = Vec::new();
    for player in &sleepers {
        set_respawn(ctx, player, None)?;
        writes.push(write(format!("at/{here}/{player}"), None));
        writes.push(write(format!("player/{player}"), None));
    }
    host.call(&PutValues { writes })?;
    for player in &sleepers {
        ctx.tell(
            player,
            "Your bed is gone: you will wake up at the spawn point",
        )?;
    }
    Ok(sleepers.len())
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use buildat_crafting_api::RegisterRecipes;
    use buildat_items_api::{GetItems, ItemRegistry, RegisterItems};
    use buildat_modkit::Modkit;
    use buildat_modkit::interface::testing::{TestHost, TestModule};
    use buildat_modkit::main_api::ChatLine;
    use buildat_modkit::network_api::receive::testing::sent;
    use buildat_modkit::testing::TestWorld;
    use buildat_modkit::voxelworld_api::RegisterBlock;

    use super::*;
    use crate::Survival;

    /// A world with the terrain's wood, leaves (dimming light) and water
    /// (clear, not solid), the items and crafting calls answered, and the
    /// living settings fast: rounds of 1 s, every voxel, saplings in 30 s.
    fn world() -> (TestWorld, TestModule<Modkit<Survival>>) {
        let kit = TestHost::new()
            .config("survival.grass_seconds", "1")
            .config("survival.grass_chance", "1")
            .config("survival.sapling_seconds", "30");
        let world = TestWorld::on(kit);
        let mut leaves = BlockDefinition::simple("leaves", "leaves.png");
        leaves.light_absorption = 1;
        let mut water = BlockDefinition::simple("water", "water.png");
        water.light_absorption = 1;
        water.physically_solid = false;
        let mut pine_leaves = leaves.clone();
        pine_leaves.name = "pine_leaves".into();
        let wood = BlockDefinition::simple("wood", "wood.png");
        for block in [wood, leaves, pine_leaves, water] {
            world.kit().host().call(&RegisterBlock { block }).unwrap();
        }
        world.kit().answer(|_: RegisterItems| Ok(()));
        world
            .kit()
            .answer(|_: GetItems| Ok(ItemRegistry::default()));
        world.kit().answer(|_: RegisterRecipes| Ok(()));
        let m = world.load::<Survival>().unwrap();
        (world, m)
    }

    fn names(world: &TestWorld, positions: &[Pos]) -> Vec<String> {
        positions
            .iter()
            .map(|&p| world.voxel(p).unwrap_or_default())
            .collect()
    }

    #[test]
    fn the_grass_abms_are_registered_with_the_settings() {
        let (world, _m) = world();
        let abms = world.abms();
        let spread = abms.iter().find(|a| a.name == GRASS_SPREAD).unwrap();
        assert_eq!(spread.nodes, ["dirt"]);
        assert_eq!(spread.neighbours, ["grass", "air"]);
        assert_eq!((spread.interval_seconds, spread.chance), (1.0, 1));
        let die = abms.iter().find(|a| a.name == GRASS_DIE).unwrap();
        assert_eq!(die.nodes, ["grass"]);
        assert!(die.neighbours.is_empty());
        assert_eq!(spread.module, "test", "this module is told");
        // Too short an interval is active's shortest.
        let kit = TestHost::new().config("survival.grass_seconds", "0");
        let world = TestWorld::on(kit);
        world.kit().answer(|_: RegisterItems| Ok(()));
        world
            .kit()
            .answer(|_: GetItems| Ok(ItemRegistry::default()));
        world.kit().answer(|_: RegisterRecipes| Ok(()));
        let _m = world.load::<Survival>().unwrap();
        assert!(world.abms().iter().all(|a| a.interval_seconds == 0.1));
    }

    #[test]
    fn grass_spreads_to_lit_dirt_beside_it_not_in_the_dark_nor_under_a_block() {
        let (world, mut m) = world();
        world.fill([0, 0, 0], [0, 0, 0], "grass");
        let (lit, dark, covered, far) = ([1, 0, 0], [-1, 0, 0], [0, 0, 1], [5, 0, 5]);
        let under_sapling = [0, 0, -1];
        for pos in [lit, dark, covered, far, under_sapling] {
            world.fill(pos, pos, "dirt");
        }
        world.set_light(above(dark), above(dark), (8, 0));
        world.fill(above(covered), above(covered), "stone");
        world.fill(above(under_sapling), above(under_sapling), "sapling");
        assert_eq!(
            world.run_abm(&mut m, GRASS_SPREAD).unwrap(),
            5,
            "beside grass or air"
        );
        assert_eq!(
            names(&world, &[lit, dark, covered, far, under_sapling]),
            ["grass", "dirt", "dirt", "dirt", "grass"],
            "not far from grass"
        );
        // A torch's light is as good as the sun's.
        world.set_light(above(dark), above(dark), (0, 12));
        world.run_abm(&mut m, GRASS_SPREAD).unwrap();
        assert_eq!(world.voxel(dark).as_deref(), Some("grass"));
        assert_eq!(world.voxel(covered).as_deref(), Some("dirt"));
    }

    #[test]
    fn dirt_placed_on_grass_turns_even_when_the_grass_under_it_died_first() {
        let (world, mut m) = world();
        world.fill([-2, 0, -2], [2, 0, 2], "grass");
        let placed = [0, 1, 0];
        world.place(&mut m, placed, "dirt", Some("ann")).unwrap();
        world.run_abm(&mut m, GRASS_DIE).unwrap();
        assert_eq!(world.voxel([0, 0, 0]).as_deref(), Some("dirt"), "covered");
        // Only diagonal grass is left beside it.
        assert_eq!(
            world.run_abm(&mut m, GRASS_SPREAD).unwrap(),
            2,
            "and the dead one"
        );
        assert_eq!(world.voxel(placed).as_deref(), Some("grass"));
        assert_eq!(
            world.voxel([0, 0, 0]).as_deref(),
            Some("dirt"),
            "covered by the new grass"
        );
    }

    #[test]
    fn grass_under_a_block_or_water_dies_not_under_air_leaves_or_a_sapling() {
        let (world, mut m) = world();
        world.fill([0, 0, 0], [4, 0, 0], "grass");
        for (x, name) in [(0, "stone"), (1, "water"), (2, "leaves"), (3, "sapling")] {
            world.fill([x, 1, 0], [x, 1, 0], name);
        }
        assert_eq!(world.run_abm(&mut m, GRASS_DIE).unwrap(), 5);
        let row: Vec<Pos> = (0..5).map(|x| [x, 0, 0]).collect();
        assert_eq!(
            names(&world, &row),
            ["dirt", "dirt", "grass", "grass", "grass"]
        );
        let edits = world.edits();
        assert!(
            edits
                .iter()
                .all(|e| matches!(e.replace, Replace::Exactly(_)) && e.save),
            "only what was found, saved"
        );
    }

    #[test]
    fn a_planted_sapling_grows_into_the_worldgens_tree_when_its_timer_fires() {
        let (world, mut m) = world();
        world.fill([-4, 0, -4], [4, 0, 4], "grass");
        let base = [0, 1, 0];
        world.place(&mut m, base, "sapling", Some("ann")).unwrap();
        assert_eq!(world.timers("test"), [(base, GROW.to_string(), 30.0)]);
        assert_eq!(world.pass(&mut m, 29.0).unwrap(), 0);
        assert_eq!(world.voxel(base).as_deref(), Some("sapling"));
        assert_eq!(world.pass(&mut m, 2.0).unwrap(), 1);
        let tree = tree_at("sapling", base).unwrap();
        assert!(tree.len() > 40);
        // Each voxel the first the tree writes there (only into air: the
        // trunk before the leaves around it).
        let mut first = std::collections::HashMap::new();
        for (pos, name) in &tree {
            first.entry(*pos).or_insert(*name);
        }
        for (pos, name) in first {
            assert_eq!(world.voxel(pos).as_deref(), Some(name), "{pos:?}");
        }
        assert_eq!(world.voxel(base).as_deref(), Some("wood"));
        assert!(world.timers("test").is_empty(), "grown: no timer left");
        // The same sapling always makes the same tree, other places others.
        assert_eq!(tree_at("sapling", base).unwrap(), tree);
        let other = |x| tree_at("sapling", [x, 1, 0]).unwrap().len();
        assert!((0..20).any(|x| other(x) != tree.len()));
    }

    #[test]
    fn a_pine_sapling_grows_into_the_worldgens_pine() {
        let (world, mut m) = world();
        world.fill([-4, 0, -4], [4, 0, 4], "dirt");
        let base = [1, 1, 1];
        world
            .place(&mut m, base, "pine_sapling", Some("ann"))
            .unwrap();
        assert_eq!(world.pass(&mut m, 31.0).unwrap(), 1);
        let pine = tree_at("pine_sapling", base).unwrap();
        assert!(pine.iter().any(|(_, name)| *name == "pine_leaves"));
        let mut first = std::collections::HashMap::new();
        for (pos, name) in &pine {
            first.entry(*pos).or_insert(*name);
        }
        for (pos, name) in first {
            assert_eq!(world.voxel(pos).as_deref(), Some(name), "{pos:?}");
        }
        assert!(tree_at("stone", base).is_none());
    }

    #[test]
    fn a_sapling_without_room_waits_and_grows_once_there_is_room() {
        let (world, mut m) = world();
        world.fill([-4, 0, -4], [4, 0, 4], "grass");
        let base = [0, 1, 0];
        world.place(&mut m, base, "sapling", None).unwrap();
        // A block where the trunk goes; another where a leaf goes.
        world.fill([0, 3, 0], [0, 3, 0], "stone");
        let leaf = tree_at("sapling", base)
            .unwrap()
            .into_iter()
            .find(|(_, name)| *name == "leaves")
            .unwrap()
            .0;
        world.fill(leaf, leaf, "dirt");
        assert_eq!(world.pass(&mut m, 31.0).unwrap(), 1);
        assert_eq!(world.voxel(base).as_deref(), Some("sapling"));
        assert_eq!(
            world.voxel([0, 2, 0]).as_deref(),
            Some("air"),
            "nothing grew"
        );
        assert_eq!(world.timers("test"), [(base, GROW.to_string(), 30.0)]);
        world.fill([0, 3, 0], [0, 3, 0], "air");
        assert_eq!(world.pass(&mut m, 31.0).unwrap(), 1);
        assert_eq!(world.voxel(base).as_deref(), Some("wood"));
        assert_eq!(world.voxel([0, 3, 0]).as_deref(), Some("wood"));
        assert_eq!(
            world.voxel(leaf).as_deref(),
            Some("dirt"),
            "leaves only into air"
        );
    }

    #[test]
    fn a_dug_bed_sends_its_last_sleepers_back_to_the_spawn_point() {
        let (world, mut m) = world();
        let set = Arc::new(Mutex::new(Vec::new()));
        let kept = Arc::clone(&set);
        world.kit().answer(move |call: SetRespawn| {
            kept.lock().unwrap().push((call.player, call.position));
            Ok(())
        });
        world.join("ann", 7);
        world.join("bob", 8);
        let (first, second) = ([2, 1, 2], [6, 1, 2]);
        world.place(&mut m, first, "bed", Some("ann")).unwrap();
        world.place(&mut m, second, "bed", Some("ann")).unwrap();
        world.use_block(&mut m, first, "ann").unwrap();
        world.use_block(&mut m, first, "bob").unwrap();
        // Ann moves on to the second bed: the first forgets her.
        world.use_block(&mut m, second, "ann").unwrap();
        assert_eq!(
            world.value(BED_SPACE, "player/ann").as_deref(),
            Some(&b"6,1,2"[..])
        );
        assert!(world.value(BED_SPACE, "at/2,1,2/ann").is_none());
        set.lock().unwrap().clear();

        world.dig(&mut m, first, Some("ann")).unwrap();
        assert_eq!(*set.lock().unwrap(), [("bob".to_string(), None)]);
        assert!(world.value(BED_SPACE, "player/bob").is_none());
        assert!(world.value(BED_SPACE, "at/2,1,2/bob").is_none());
        assert!(
            world.value(BED_SPACE, "player/ann").is_some(),
            "her bed stands"
        );
        let told: Vec<(u64, String)> = sent::<ChatLine>(world.kit())
            .into_iter()
            .map(|(peer, line)| (peer, line.text))
            .filter(|(_, text)| text.contains("bed is gone"))
            .collect();
        assert_eq!(told.len(), 1);
        assert_eq!(told[0].0, 8, "bob is told");

        // A bed nobody slept in: nothing to undo.
        world.dig(&mut m, second, None).unwrap();
        assert_eq!(set.lock().unwrap().len(), 2, "ann's bed: ann");
        world.place(&mut m, first, "bed", None).unwrap();
        world.dig(&mut m, first, None).unwrap();
        assert_eq!(set.lock().unwrap().len(), 2);
    }

    #[test]
    fn using_a_bed_makes_it_the_players_respawn_point() {
        let (world, mut m) = world();
        world.join("ann", 7);
        world.place(&mut m, [2, 1, 2], "bed", Some("ann")).unwrap();
        // Without the health module: told there is no need.
        world.use_block(&mut m, [2, 1, 2], "ann").unwrap();
        let set = Arc::new(Mutex::new(Vec::new()));
        let kept = Arc::clone(&set);
        world.kit().answer(move |call: SetRespawn| {
            kept.lock().unwrap().push(call);
            Ok(())
        });
        world.use_block(&mut m, [2, 1, 2], "ann").unwrap();
        assert_eq!(
            *set.lock().unwrap(),
            [SetRespawn {
                player: "ann".into(),
                position: Some([2.5, 2.0, 2.5]),
            }]
        );
        let told: Vec<String> = sent::<ChatLine>(world.kit())
            .into_iter()
            .map(|(_, line)| line.text)
            .collect();
        assert_eq!(told.len(), 2, "{told:?}");
        assert!(told[0].contains("Nobody dies"), "{told:?}");
        assert!(told[1].contains("Respawn point set"), "{told:?}");
    }
}
