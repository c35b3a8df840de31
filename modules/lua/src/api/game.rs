//! The bindings of the game over its native modules: items
//! (`register_craftitem`, `register_tool`), recipes (`register_craft`),
//! privileges (`register_privilege`, `check_player_privs`,
//! `get_player_privs`), a player's main list (`give_item`, `take_item`,
//! `get_inventory`), health (`get_hp`, `damage`, `heal`), mod storage
//! (`get_mod_storage`, `storage.rs`) and settings (`setting`); and
//! [`apply`], which registers what every running mod declared.
//!
//! Owns: checking each function's arguments (errors name the function and
//! the field), Luanti's forms turned into the native types (`"seed 4"`, the
//! rows of a shaped recipe, `times = {[1] = 1.0}`), what a call to an
//! optional module that is not loaded says, and registering all mods'
//! items, recipes (one set, owner [`RECIPE_OWNER`], so a reload replaces
//! them), privileges and settings at once. Does not own: the rules (items,
//! crafting, inventory, health and main check every call), when `apply`
//! runs (`mods.rs`/`lib.rs`), the world's bindings (`world.rs`).

use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use buildat_crafting_api::{GROUP_PREFIX, MAX_GRID_SIDE, Recipe, RecipeShape, SetRecipes};
use buildat_health_api::{Cause, Damage, GetHealth, Heal};
use buildat_interface::core_api::DeclareSettings;
use buildat_interface::settings::SettingInfo;
use buildat_interface::{Call, CallError, ModuleError, log};
use buildat_inventory_api::{
    Change, GetInventory, LIST_MAIN, Overflow, Owner, SlotRef, Transact, Transaction, TxOutcome,
};
use buildat_items_api::{
    GetItems, GroupCap, ItemDef, ItemRegistry, ItemStack, RegisterItems, ToolCaps, check_item_name,
    describe,
};
use buildat_luau::{describe as describe_error, lua_error};
use buildat_main_api::{DefinePrivilege, GetPrivileges, HasPrivilege};
use buildat_voxelworld_api::GetRegistry;
use mlua::{Lua, Table, Value, Variadic};

use super::{bind, field, mod_data, registering};
use crate::mods::{ModData, Registrations, Shared};

/// The owner every Lua mod's recipes are set under (`crafting`'s
/// `set_recipes`): all mods' recipes are one set, replaced whole.
pub(crate) const RECIPE_OWNER: &str = "lua";
/// The highest dig rating a tool's `times` may name.
const MAX_RATING: i64 = 10;
/// A privilege name: 1 to this many bytes (`main`'s rule).
const MAX_PRIVILEGE: usize = 32;
/// A setting's key (after the mod's name): 1 to this many bytes.
const MAX_SETTING_KEY: usize = 64;

pub(crate) fn install(lua: &Lua, buildat: &Table, _data: Rc<ModData>) -> mlua::Result<()> {
    buildat.raw_set(
        "register_craftitem",
        bind(lua, "register_craftitem", register_craftitem)?,
    )?;
    buildat.raw_set("register_tool", bind(lua, "register_tool", register_tool)?)?;
    buildat.raw_set(
        "register_craft",
        bind(lua, "register_craft", register_craft)?,
    )?;
    buildat.raw_set(
        "register_privilege",
        bind(lua, "register_privilege", register_privilege)?,
    )?;
    buildat.raw_set(
        "check_player_privs",
        bind(lua, "check_player_privs", check_player_privs)?,
    )?;
    buildat.raw_set(
        "get_player_privs",
        bind(lua, "get_player_privs", get_player_privs)?,
    )?;
    buildat.raw_set("give_item", bind(lua, "give_item", give_item)?)?;
    buildat.raw_set("take_item", bind(lua, "take_item", take_item)?)?;
    buildat.raw_set("get_inventory", bind(lua, "get_inventory", get_inventory)?)?;
    buildat.raw_set("get_hp", bind(lua, "get_hp", get_hp)?)?;
    buildat.raw_set("damage", bind(lua, "damage", damage)?)?;
    buildat.raw_set("heal", bind(lua, "heal", heal)?)?;
    buildat.raw_set(
        "get_mod_storage",
        bind(lua, "get_mod_storage", |lua, ()| {
            crate::storage::get_mod_storage(lua)
        })?,
    )?;
    buildat.raw_set("setting", bind(lua, "setting", setting)?)?;
    Ok(())
}

/// Makes a call to a native module for `function`: "no M module is
/// loaded" when it is not, else its error after the function's name.
fn call<C: Call>(data: &ModData, function: &str, args: &C) -> mlua::Result<C::Reply> {
    data.shared.host.call(args).map_err(|error| match error {
        ModuleError::Call(CallError::NotFound(_)) => {
            lua_error(format!("{function}: no {} module is loaded", C::MODULE))
        }
        other => lua_error(format!("{function}: {other}")),
    })
}

/// An item name as Luanti writes it (a leading `:` is dropped), checked.
fn item_name(function: &str, name: &str) -> mlua::Result<String> {
    let name = name.strip_prefix(':').unwrap_or(name);
    check_item_name(name).map_err(|e| lua_error(format!("{function}: {e}")))?;
    Ok(name.to_string())
}

/// A count of 1 to 65535 (`None`: 1).
fn count_arg(function: &str, what: &str, count: Option<i64>) -> mlua::Result<u16> {
    let count = count.unwrap_or(1);
    u16::try_from(count)
        .ok()
        .filter(|c| *c >= 1)
        .ok_or_else(|| lua_error(format!("{function}: {what} is 1 to 65535, not {count}")))
}

/// An amount of 0 to 65535.
fn amount_arg(function: &str, amount: i64) -> mlua::Result<u16> {
    u16::try_from(amount).map_err(|_| {
        lua_error(format!(
            "{function}: the amount is 0 to 65535, not {amount}"
        ))
    })
}

/// `groups = {NAME = RATING}`.
fn groups(def: &Table, function: &str) -> mlua::Result<BTreeMap<String, i32>> {
    let table: Option<Table> = field(def, function, "groups")?;
    let mut groups = BTreeMap::new();
    if let Some(table) = table {
        for pair in table.pairs::<String, i32>() {
            let (group, rating) = pair.map_err(|e| {
                lua_error(format!(
                    "{function}: groups is a table {{NAME = RATING}}: {}",
                    describe_error(&e)
                ))
            })?;
            groups.insert(group, rating);
        }
    }
    Ok(groups)
}

/// The description, texture and groups every item definition has.
fn item_def(
    def: &Table,
    function: &str,
    name: &str,
    mut item: ItemDef,
    data: &ModData,
) -> mlua::Result<ItemDef> {
    item.description =
        field::<Option<String>>(def, function, "description")?.unwrap_or_else(|| describe(name));
    item.texture = field::<Option<String>>(def, function, "inventory_image")?
        .unwrap_or_else(|| format!("{}.png", name.replace(':', "_")));
    item.groups = groups(def, function)?;
    item.module = data.name.clone();
    Ok(item)
}

/// Records an item the mod defines (once per name).
fn record_item(data: &ModData, function: &str, item: ItemDef) -> mlua::Result<()> {
    item.check()
        .map_err(|e| lua_error(format!("{function}: {e}")))?;
    let mut reg = data.reg.borrow_mut();
    if reg.items.iter().any(|i| i.name == item.name) {
        return Err(lua_error(format!(
            "{function}: the mod defines item '{}' twice",
            item.name
        )));
    }
    reg.items.push(item);
    Ok(())
}

fn register_craftitem(lua: &Lua, (name, def): (String, Option<Table>)) -> mlua::Result<()> {
    const F: &str = "register_craftitem";
    let data = registering(lua, F)?;
    let name = item_name(F, &name)?;
    let def = def.map_or_else(|| lua.create_table(), Ok)?;
    let mut item = item_def(&def, F, &name, ItemDef::craft(&name, "", ""), &data)?;
    if let Some(stack_max) = field::<Option<i64>>(&def, F, "stack_max")? {
        item.stack_max = u16::try_from(stack_max)
            .ok()
            .filter(|s| *s >= 1)
            .ok_or_else(|| lua_error(format!("{F}: stack_max is 1 to 65535, not {stack_max}")))?;
    }
    record_item(&data, F, item)
}

/// `tool_capabilities = {groupcaps = {GROUP = {times = {[RATING] =
/// SECONDS}, uses = N, maxlevel = L}}}` (Luanti's; other fields ignored).
fn tool_caps(def: &Table, function: &str) -> mlua::Result<ToolCaps> {
    let mut caps = ToolCaps::default();
    let Some(tool) = field::<Option<Table>>(def, function, "tool_capabilities")? else {
        return Ok(caps);
    };
    let Some(groupcaps) = field::<Option<Table>>(&tool, function, "groupcaps")? else {
        return Ok(caps);
    };
    for pair in groupcaps.pairs::<String, Table>() {
        let (group, cap) = pair.map_err(|e| {
            lua_error(format!(
                "{function}: groupcaps is a table {{GROUP = {{times = ..., uses = N, maxlevel = L}}}}: {}",
                describe_error(&e)
            ))
        })?;
        let what = format!("groupcaps.{group}");
        let times: Table = cap
            .raw_get::<Option<Table>>("times")
            .ok()
            .flatten()
            .ok_or_else(|| {
                lua_error(format!(
                    "{function}: {what}.times is a table {{[RATING] = SECONDS}}"
                ))
            })?;
        let mut by_rating = BTreeMap::new();
        for pair in times.pairs::<i64, f64>() {
            let (rating, seconds) = pair.map_err(|e| {
                lua_error(format!(
                    "{function}: {what}.times is a table {{[RATING] = SECONDS}}: {}",
                    describe_error(&e)
                ))
            })?;
            if !(1..=MAX_RATING).contains(&rating) || !seconds.is_finite() {
                return Err(lua_error(format!(
                    "{function}: {what}.times: rating {rating} = {seconds}: ratings are 1 to \
                     {MAX_RATING}, times finite seconds"
                )));
            }
            by_rating.insert(rating, seconds as f32);
        }
        let last = by_rating.keys().next_back().copied().unwrap_or(0);
        let times: Vec<f32> = (1..=last)
            .map(|rating| by_rating.get(&rating).copied().unwrap_or(-1.0))
            .collect();
        let uses = field::<Option<i64>>(&cap, function, "uses")?.unwrap_or(20);
        let uses = u32::try_from(uses)
            .map_err(|_| lua_error(format!("{function}: {what}.uses is 0 or more, not {uses}")))?;
        let max_level = field::<Option<i32>>(&cap, function, "maxlevel")?.unwrap_or(1);
        caps = caps.with(&group, GroupCap::new(&times, uses, max_level));
    }
    Ok(caps)
}

fn register_tool(lua: &Lua, (name, def): (String, Option<Table>)) -> mlua::Result<()> {
    const F: &str = "register_tool";
    let data = registering(lua, F)?;
    let name = item_name(F, &name)?;
    let def = def.map_or_else(|| lua.create_table(), Ok)?;
    let caps = tool_caps(&def, F)?;
    let item = item_def(&def, F, &name, ItemDef::tool(&name, "", "", caps), &data)?;
    record_item(&data, F, item)
}

/// `"NAME"` or `"NAME COUNT"`.
fn parse_stack(function: &str, what: &str, text: &str) -> mlua::Result<ItemStack> {
    let bad = || lua_error(format!("{function}: {what} '{text}' is not 'NAME [COUNT]'"));
    let mut words = text.split_whitespace();
    let name = words.next().ok_or_else(bad)?;
    let count = match words.next() {
        None => 1,
        Some(count) => count
            .parse::<u16>()
            .ok()
            .filter(|c| *c >= 1)
            .ok_or_else(bad)?,
    };
    if words.next().is_some() {
        return Err(bad());
    }
    Ok(ItemStack::new(item_name(function, name)?, count))
}

/// An ingredient: "" (shaped recipes' holes), an item name, or
/// `group:a[,b]`.
fn ingredient(function: &str, value: Value, empty_ok: bool) -> mlua::Result<String> {
    let Value::String(text) = value else {
        return Err(lua_error(format!(
            "{function}: an ingredient is an item name or \"group:NAME\", not {}",
            value.type_name()
        )));
    };
    let text = text.to_str()?.to_string();
    if text.is_empty() {
        if empty_ok {
            return Ok(text);
        }
        return Err(lua_error(format!(
            "{function}: a shapeless recipe's ingredient is not \"\""
        )));
    }
    match text.strip_prefix(GROUP_PREFIX) {
        Some(groups) => {
            if groups.split(',').any(str::is_empty) {
                return Err(lua_error(format!(
                    "{function}: ingredient '{text}' names no group"
                )));
            }
            Ok(text)
        }
        None => item_name(function, &text),
    }
}

/// The values of a Lua list, in order.
fn list(table: &Table) -> mlua::Result<Vec<Value>> {
    (1..=table.raw_len())
        .map(|i| table.raw_get::<Value>(i))
        .collect()
}

/// `recipe = {{"a", "b"}, {"", "c"}}`: rows of up to 3.
fn shaped(function: &str, recipe: &Table) -> mlua::Result<RecipeShape> {
    let side = usize::from(MAX_GRID_SIDE);
    let form = || {
        lua_error(format!(
            "{function}: a shaped recipe is 1 to {side} rows of 1 to {side} names: \
             recipe = {{{{\"a\", \"b\"}}, {{\"\", \"c\"}}}}"
        ))
    };
    let rows = list(recipe)?;
    if rows.is_empty() || rows.len() > side {
        return Err(form());
    }
    let mut grid: Vec<Vec<String>> = Vec::new();
    for row in rows {
        let Value::Table(row) = row else {
            return Err(form());
        };
        let cells = list(&row)?;
        if cells.is_empty() || cells.len() > side {
            return Err(form());
        }
        grid.push(
            cells
                .into_iter()
                .map(|cell| ingredient(function, cell, true))
                .collect::<mlua::Result<_>>()?,
        );
    }
    let width = grid.iter().map(Vec::len).max().unwrap_or(1);
    let items: Vec<String> = grid
        .into_iter()
        .flat_map(|mut row| {
            row.resize(width, String::new());
            row
        })
        .collect();
    if items.iter().all(String::is_empty) {
        return Err(lua_error(format!(
            "{function}: the recipe has no ingredient"
        )));
    }
    Ok(RecipeShape::Shaped {
        width: u8::try_from(width).unwrap_or(MAX_GRID_SIDE),
        items,
    })
}

/// `recipe = {"a", "group:b"}`: 1 to 9 ingredients.
fn shapeless(function: &str, recipe: &Table) -> mlua::Result<RecipeShape> {
    let most = usize::from(MAX_GRID_SIDE) * usize::from(MAX_GRID_SIDE);
    let values = list(recipe)?;
    if values.is_empty() || values.len() > most {
        return Err(lua_error(format!(
            "{function}: a shapeless recipe is a list of 1 to {most} ingredients, not {}",
            values.len()
        )));
    }
    let items = values
        .into_iter()
        .map(|value| ingredient(function, value, false))
        .collect::<mlua::Result<_>>()?;
    Ok(RecipeShape::Shapeless { items })
}

fn register_craft(lua: &Lua, def: Table) -> mlua::Result<()> {
    const F: &str = "register_craft";
    let data = registering(lua, F)?;
    let output: Option<String> = field(&def, F, "output")?;
    let output =
        output.ok_or_else(|| lua_error(format!("{F}: output is missing ('NAME [COUNT]')")))?;
    let output = parse_stack(F, "output", &output)?;
    let kind: Option<String> = field(&def, F, "type")?;
    let kind = kind.unwrap_or_else(|| "shaped".to_string());
    if kind != "shaped" && kind != "shapeless" {
        return Err(lua_error(format!(
            "{F}: type '{kind}' is not supported (shaped or shapeless)"
        )));
    }
    let recipe: Option<Table> = field(&def, F, "recipe")?;
    let recipe = recipe.ok_or_else(|| lua_error(format!("{F}: recipe is missing")))?;
    let shape = if kind == "shaped" {
        shaped(F, &recipe)?
    } else {
        shapeless(F, &recipe)?
    };
    let mut replacements = Vec::new();
    if let Some(pairs) = field::<Option<Table>>(&def, F, "replacements")? {
        for pair in list(&pairs)? {
            let form = || {
                lua_error(format!(
                    "{F}: replacements is a list of {{INGREDIENT, \"NAME [COUNT]\"}}"
                ))
            };
            let Value::Table(pair) = pair else {
                return Err(form());
            };
            let (Value::String(from), Value::String(stays)) =
                (pair.raw_get::<Value>(1)?, pair.raw_get::<Value>(2)?)
            else {
                return Err(form());
            };
            let from = ingredient(F, Value::String(from), false)?;
            let stays = parse_stack(F, "replacement", &stays.to_str()?)?;
            replacements.push((from, stays));
        }
    }
    data.reg.borrow_mut().recipes.push(Recipe {
        output,
        shape,
        replacements,
    });
    Ok(())
}

/// A privilege name by `main`'s rule.
fn check_privilege(function: &str, name: &str) -> mlua::Result<()> {
    let valid = !name.is_empty()
        && name.len() <= MAX_PRIVILEGE
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        && name != "all";
    if !valid {
        return Err(lua_error(format!(
            "{function}: privilege name '{name}' is not 1 to {MAX_PRIVILEGE} lowercase letters, \
             digits or '_' (nor 'all')"
        )));
    }
    Ok(())
}

fn register_privilege(lua: &Lua, (name, def): (String, Value)) -> mlua::Result<()> {
    const F: &str = "register_privilege";
    let data = registering(lua, F)?;
    check_privilege(F, &name)?;
    let description = match def {
        Value::Nil => String::new(),
        Value::String(text) => text.to_str()?.to_string(),
        Value::Table(def) => field::<Option<String>>(&def, F, "description")?.unwrap_or_default(),
        other => {
            return Err(lua_error(format!(
                "{F}: the definition is a table {{description = ...}}, not {}",
                other.type_name()
            )));
        }
    };
    let mut reg = data.reg.borrow_mut();
    reg.privileges.retain(|(known, _)| *known != name);
    reg.privileges.push((name, description));
    Ok(())
}

/// The privileges asked for: a table `{NAME = true}` (or a list of
/// names), or names as arguments.
fn wanted_privileges(function: &str, args: Variadic<Value>) -> mlua::Result<BTreeSet<String>> {
    let mut wanted = BTreeSet::new();
    let bad = |value: &Value| {
        lua_error(format!(
            "{function}: privileges are a table {{NAME = true}} or names, not {}",
            value.type_name()
        ))
    };
    for arg in args {
        match &arg {
            Value::String(name) => {
                wanted.insert(name.to_str()?.to_string());
            }
            Value::Table(table) => {
                for pair in table.pairs::<Value, Value>() {
                    let (key, value) = pair?;
                    match (&key, &value) {
                        (Value::String(name), value) if value.as_boolean() != Some(false) => {
                            wanted.insert(name.to_str()?.to_string());
                        }
                        (Value::String(_), _) => {}
                        (Value::Integer(_) | Value::Number(_), Value::String(name)) => {
                            wanted.insert(name.to_str()?.to_string());
                        }
                        _ => return Err(bad(&key)),
                    }
                }
            }
            other => return Err(bad(other)),
        }
    }
    Ok(wanted)
}

/// `check_player_privs(name, {interact = true})`: `true`, or `false` and
/// the list of the missing ones.
fn check_player_privs(
    lua: &Lua,
    (player, privs): (String, Variadic<Value>),
) -> mlua::Result<(bool, Option<Table>)> {
    const F: &str = "check_player_privs";
    let data = mod_data(lua)?;
    let mut missing = Vec::new();
    for privilege in wanted_privileges(F, privs)? {
        let holds = call(
            &data,
            F,
            &HasPrivilege {
                player: player.clone(),
                privilege: privilege.clone(),
            },
        )?;
        if !holds {
            missing.push(privilege);
        }
    }
    if missing.is_empty() {
        return Ok((true, None));
    }
    Ok((false, Some(lua.create_sequence_from(missing)?)))
}

/// `get_player_privs(name)`: `{NAME = true}` of an account's privileges
/// (empty for an unknown name, as Luanti).
fn get_player_privs(lua: &Lua, player: String) -> mlua::Result<Table> {
    const F: &str = "get_player_privs";
    let data = mod_data(lua)?;
    let privileges = call(&data, F, &GetPrivileges { player })?.unwrap_or_default();
    let table = lua.create_table()?;
    for privilege in privileges {
        table.raw_set(privilege, true)?;
    }
    Ok(table)
}

/// `give_item(name, item, count)`: into the player's main list, all or
/// nothing; answers the count given, or 0 and why not.
fn give_item(
    lua: &Lua,
    (player, item, count): (String, String, Option<i64>),
) -> mlua::Result<(u16, Option<String>)> {
    const F: &str = "give_item";
    let data = mod_data(lua)?;
    let name = item_name(F, &item)?;
    let count = count_arg(F, "the count", count)?;
    let tx = Transaction {
        changes: vec![Change::Give {
            owner: Owner::Player(player.clone()),
            list: LIST_MAIN.to_string(),
            stack: ItemStack::new(name, count),
            overflow: Overflow::Refuse,
        }],
        edit: None,
        // The rollback log names the mod that gave it.
        by: buildat_voxelworld_api::by_module(&data.name),
    };
    Ok(match call(&data, F, &Transact { tx })? {
        TxOutcome::Done => (count, None),
        TxOutcome::Refused(why) => (0, Some(why)),
    })
}

/// `take_item(name, item, count)`: up to `count` of `item` from the
/// player's main list; answers the count taken (0 and why when none).
fn take_item(
    lua: &Lua,
    (player, item, count): (String, String, Option<i64>),
) -> mlua::Result<(u16, Option<String>)> {
    const F: &str = "take_item";
    let data = mod_data(lua)?;
    let name = item_name(F, &item)?;
    let count = count_arg(F, "the count", count)?;
    let owner = Owner::Player(player.clone());
    let Some(inventory) = call(
        &data,
        F,
        &GetInventory {
            owner: owner.clone(),
        },
    )?
    else {
        return Ok((0, Some(format!("{player} has no inventory"))));
    };
    let mut changes = Vec::new();
    let mut left = count;
    let slots = inventory
        .lists
        .get(LIST_MAIN)
        .map_or(&[][..], Vec::as_slice);
    for (index, slot) in slots.iter().enumerate() {
        let Some(stack) = slot.as_ref().filter(|s| s.name == name) else {
            continue;
        };
        if left == 0 {
            break;
        }
        let take = stack.count.min(left);
        left -= take;
        changes.push(Change::Take {
            slot: SlotRef {
                owner: owner.clone(),
                list: LIST_MAIN.to_string(),
                index: u16::try_from(index).unwrap_or(u16::MAX),
            },
            name: name.clone(),
            count: take,
        });
    }
    if changes.is_empty() {
        return Ok((0, Some(format!("{player} has no {name}"))));
    }
    let tx = Transaction {
        changes,
        edit: None,
        // The rollback log names the mod that took it.
        by: buildat_voxelworld_api::by_module(&data.name),
    };
    Ok(match call(&data, F, &Transact { tx })? {
        TxOutcome::Done => (count - left, None),
        TxOutcome::Refused(why) => (0, Some(why)),
    })
}

/// `get_inventory(name)`: the player's main list, a slot `{name=,
/// count=, wear=}` or `false` when empty; `nil` when it has none.
fn get_inventory(lua: &Lua, player: String) -> mlua::Result<Option<Table>> {
    const F: &str = "get_inventory";
    let data = mod_data(lua)?;
    let Some(inventory) = call(
        &data,
        F,
        &GetInventory {
            owner: Owner::Player(player),
        },
    )?
    else {
        return Ok(None);
    };
    let slots = inventory
        .lists
        .get(LIST_MAIN)
        .map_or(&[][..], Vec::as_slice);
    let table = lua.create_table_with_capacity(slots.len(), 0)?;
    for (index, slot) in slots.iter().enumerate() {
        let value = match slot {
            None => Value::Boolean(false),
            Some(stack) => {
                let entry = lua.create_table_with_capacity(0, 3)?;
                entry.raw_set("name", stack.name.as_str())?;
                entry.raw_set("count", stack.count)?;
                if stack.wear > 0 {
                    entry.raw_set("wear", stack.wear)?;
                }
                Value::Table(entry)
            }
        };
        table.raw_set(index + 1, value)?;
    }
    Ok(Some(table))
}

/// `get_hp(name)`: its hit points, `nil` when not in the game.
fn get_hp(lua: &Lua, player: String) -> mlua::Result<Option<u16>> {
    let data = mod_data(lua)?;
    Ok(call(&data, "get_hp", &GetHealth { player })?.map(|health| health.hp))
}

/// `damage(name, amount, reason)`: its hp after, `nil` when not in the
/// game or dead. The cause is the mod's name (`MOD:REASON` with a reason).
fn damage(
    lua: &Lua,
    (player, amount, reason): (String, i64, Option<String>),
) -> mlua::Result<Option<u16>> {
    const F: &str = "damage";
    let data = mod_data(lua)?;
    let amount = amount_arg(F, amount)?;
    let cause = match reason {
        Some(reason) => format!("{}:{reason}", data.name),
        None => data.name.clone(),
    };
    call(
        &data,
        F,
        &Damage {
            player,
            amount,
            cause: Cause::Module(cause),
        },
    )
}

/// `heal(name, amount)`: its hp after, `nil` when not in the game or dead.
fn heal(lua: &Lua, (player, amount): (String, i64)) -> mlua::Result<Option<u16>> {
    const F: &str = "heal";
    let data = mod_data(lua)?;
    let amount = amount_arg(F, amount)?;
    call(&data, F, &Heal { player, amount })
}

/// `setting(key, default, help)`: the value of `--set MOD.KEY=VALUE`, or
/// the default; of the default's type (a string, number or boolean).
/// Declared (for `buildat-server settings`) when called while loading.
fn setting(
    lua: &Lua,
    (key, default, help): (String, Value, Option<String>),
) -> mlua::Result<Value> {
    const F: &str = "setting";
    let data = mod_data(lua)?;
    let valid = !key.is_empty()
        && key.len() <= MAX_SETTING_KEY
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.' || b == b'-');
    if !valid {
        return Err(lua_error(format!(
            "{F}: key '{key}' is not 1 to {MAX_SETTING_KEY} letters, digits, '_', '-' or '.'"
        )));
    }
    let full = format!("{}.{key}", data.name);
    let (type_name, shown) = match &default {
        Value::String(text) => ("string", text.to_str()?.to_string()),
        Value::Integer(n) => ("number", n.to_string()),
        Value::Number(n) => ("number", n.to_string()),
        Value::Boolean(b) => ("bool", b.to_string()),
        other => {
            return Err(lua_error(format!(
                "{F}: the default is a string, number or boolean, not {}",
                other.type_name()
            )));
        }
    };
    if data.loading.get() {
        let mut reg = data.reg.borrow_mut();
        reg.settings.retain(|s| s.key != full);
        reg.settings.push(SettingInfo {
            key: full.clone(),
            type_name: type_name.to_string(),
            default: shown,
            help: help.unwrap_or_default(),
            live: false,
        });
    }
    let Some(set) = data.shared.host.get_config(&full) else {
        return Ok(default);
    };
    let not = |what: &str| lua_error(format!("{F}: {full} is set to '{set}', not {what}"));
    Ok(match default {
        Value::String(_) => Value::String(lua.create_string(&set)?),
        Value::Boolean(_) => match set.trim() {
            "true" | "1" | "yes" | "on" => Value::Boolean(true),
            "false" | "0" | "no" | "off" => Value::Boolean(false),
            _ => return Err(not("true or false")),
        },
        _ => match set.trim().parse::<f64>() {
            Ok(n) if n.is_finite() => Value::Number(n),
            _ => return Err(not("a number")),
        },
    })
}

/// Logs a problem of registering for the Lua mods, once per apply.
fn warn(shared: &Shared, message: &str) {
    shared.host.log(log::Level::Warn, message);
}

/// Registers what every running mod declared (`all`, in load order) with
/// the native modules, idempotently: the items (the mods' craft items and
/// tools, and a block item per node so it can be crafted and dug), one
/// set of recipes under [`RECIPE_OWNER`] (replacing the set before: a
/// reloaded mod's recipes replace its old ones, a mod gone takes its own
/// with it), the privileges and each mod's settings (namespace: the mod's
/// name). What a native module refuses is logged and left out, the rest is
/// registered; an optional module that is not loaded is passed over (with
/// a warning when a mod needs it). Errors: a call that failed for another
/// reason (the first; the other steps still run).
pub(crate) fn apply(shared: &Shared, all: &[&Registrations]) -> Result<(), ModuleError> {
    let mut first_error = None;
    let mut keep = |result: Result<(), ModuleError>| {
        if let Err(error) = result
            && first_error.is_none()
        {
            first_error = Some(error);
        }
    };
    keep(apply_items(shared, all));
    keep(apply_recipes(shared, all));
    keep(apply_privileges(shared, all));
    keep(apply_settings(shared, all));
    first_error.map_or(Ok(()), Err)
}

fn not_loaded(error: &ModuleError) -> bool {
    matches!(error, ModuleError::Call(CallError::NotFound(_)))
}

/// The items of all mods: the block items of their nodes (those the voxel
/// registry has), then their own; one call, or one per item when the
/// whole is refused (naming what was left out).
fn apply_items(shared: &Shared, all: &[&Registrations]) -> Result<(), ModuleError> {
    let mut items: Vec<ItemDef> = Vec::new();
    let nodes: Vec<&str> = all
        .iter()
        .flat_map(|reg| reg.nodes.iter().map(|node| node.definition.name.as_str()))
        .collect();
    if !nodes.is_empty() {
        let voxels = shared.host.call(&GetRegistry {})?;
        let blocks: BTreeSet<&str> = voxels
            .definitions()
            .iter()
            .map(|def| def.name.block_name.as_str())
            .collect();
        for reg in all {
            for node in &reg.nodes {
                let name = node.definition.name.as_str();
                if !blocks.contains(name) || check_item_name(name).is_err() {
                    continue;
                }
                let mut item = ItemDef::block(name);
                if !node.description.is_empty() {
                    item.description = node.description.clone();
                }
                item.groups = node.groups.clone();
                item.module = node.definition.handler_module.clone();
                items.push(item);
            }
        }
    }
    let mut owners: BTreeMap<&str, &str> = BTreeMap::new();
    for reg in all {
        for item in &reg.items {
            if let Some(other) = owners.insert(&item.name, &item.module)
                && other != item.module
            {
                warn(
                    shared,
                    &format!(
                        "lua mods {other} and {} both define item {}: {}'s is used",
                        item.module, item.name, item.module
                    ),
                );
            }
            items.retain(|known| known.name != item.name);
            items.push(item.clone());
        }
    }
    if items.is_empty() {
        return Ok(());
    }
    match shared.host.call(&RegisterItems {
        items: items.clone(),
    }) {
        Ok(()) => Ok(()),
        Err(error) if not_loaded(&error) => {
            warn(
                shared,
                "lua mods define items, but no items module is loaded: they are left out",
            );
            Ok(())
        }
        Err(_) => {
            for item in items {
                let name = item.name.clone();
                let module = item.module.clone();
                if let Err(error) = shared.host.call(&RegisterItems { items: vec![item] }) {
                    warn(
                        shared,
                        &format!("lua mod {module}: item {name} left out: {error}"),
                    );
                }
            }
            Ok(())
        }
    }
}

/// The recipes of all mods, each checked against the item registry (the
/// bad ones logged and left out), set as one set.
fn apply_recipes(shared: &Shared, all: &[&Registrations]) -> Result<(), ModuleError> {
    let recipes: Vec<&Recipe> = all.iter().flat_map(|reg| reg.recipes.iter()).collect();
    let registry = if recipes.is_empty() {
        ItemRegistry::default()
    } else {
        match shared.host.call(&GetItems {}) {
            Ok(registry) => registry,
            Err(error) if not_loaded(&error) => {
                warn(
                    shared,
                    "lua mods register recipes, but no items module is loaded: they are left out",
                );
                ItemRegistry::default()
            }
            Err(error) => return Err(error),
        }
    };
    let mut good = Vec::new();
    for recipe in recipes {
        match recipe.check(&registry) {
            Ok(()) => good.push(recipe.clone()),
            Err(error) => warn(shared, &format!("lua mods: recipe left out: {error}")),
        }
    }
    let wanted = !good.is_empty();
    match shared.host.call(&SetRecipes {
        owner: RECIPE_OWNER.to_string(),
        recipes: good,
    }) {
        Err(error) if not_loaded(&error) => {
            if wanted {
                warn(
                    shared,
                    "lua mods register recipes, but no crafting module is loaded: they are left out",
                );
            }
            Ok(())
        }
        other => other,
    }
}

/// Every mod's privileges (defining one again only sets its description);
/// one refused is logged, the others still defined.
fn apply_privileges(shared: &Shared, all: &[&Registrations]) -> Result<(), ModuleError> {
    for reg in all {
        for (name, description) in &reg.privileges {
            let defined = shared.host.call(&DefinePrivilege {
                name: name.clone(),
                description: description.clone(),
            });
            match defined {
                Err(error) if not_loaded(&error) => return Err(error),
                Err(error) => warn(
                    shared,
                    &format!("lua mods: privilege {name} left out: {error}"),
                ),
                Ok(()) => {}
            }
        }
    }
    Ok(())
}

/// Every mod's settings, declared under the mod's name.
fn apply_settings(shared: &Shared, all: &[&Registrations]) -> Result<(), ModuleError> {
    let mut by_namespace: BTreeMap<String, Vec<SettingInfo>> = BTreeMap::new();
    for reg in all {
        for setting in &reg.settings {
            let namespace = setting
                .key
                .split_once('.')
                .map_or(setting.key.as_str(), |(namespace, _)| namespace);
            by_namespace
                .entry(namespace.to_string())
                .or_default()
                .push(setting.clone());
        }
    }
    for (namespace, settings) in by_namespace {
        shared.host.call(&DeclareSettings {
            namespace,
            settings,
        })?;
    }
    Ok(())
}

#[cfg(test)]
#[path = "../tests_game.rs"]
pub(crate) mod tests;
