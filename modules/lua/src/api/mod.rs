//! The Lua API of server mods: the `buildat` table (also `core`, Luanti's
//! name) in each mod's environment, and the conversions every binding
//! shares (positions, the mod's data).
//!
//! Owns: a mod's environment ([`environment`]), running one of its files
//! ([`run_file`]), [`mod_data`], [`registering`] and the position
//! conversions. Does not own: the bindings (`world.rs`: the world, chat,
//! blocks, commands, ABMs, entities, jobs; `game.rs`: items, recipes,
//! inventories, health, privileges, storage, settings), what is done with
//! the registrations (`lib.rs`).

pub(crate) mod game;
pub(crate) mod world;

use std::rc::Rc;

use buildat_luau::{Vm, load_text, lua_error};
use buildat_voxel::geometry::Pos;
use mlua::{Lua, MultiValue, Table, Value};

use crate::mods::ModData;

/// The registry key of the mod's environment (for `include`).
const ENV_KEY: &str = "buildat.env";

/// The environment a mod's files run in: the sandbox's globals, and
/// `buildat` (= `core`). Sets the VM's [`ModData`].
pub(crate) fn environment(lua: &Lua, vm: &Vm, data: Rc<ModData>) -> mlua::Result<Table> {
    lua.set_app_data(Rc::clone(&data));
    let env = lua.create_table()?;
    let meta = lua.create_table()?;
    meta.raw_set("__index", vm.real_globals())?;
    env.set_metatable(Some(meta))?;
    let buildat = lua.create_table()?;
    world::install(lua, &buildat)?;
    game::install(lua, &buildat, data)?;
    env.raw_set("buildat", &buildat)?;
    env.raw_set("core", buildat)?;
    lua.set_named_registry_value(ENV_KEY, &env)?;
    Ok(env)
}

/// Runs a file's text (`chunk` names it in messages) in `env`; answers
/// what it returns.
pub(crate) fn run_file(
    lua: &Lua,
    source: &[u8],
    chunk: &str,
    env: Table,
) -> mlua::Result<MultiValue> {
    load_text(lua, source, chunk, env, true)?.call(())
}

/// The mod whose VM this is.
pub(crate) fn mod_data(lua: &Lua) -> mlua::Result<Rc<ModData>> {
    lua.app_data_ref::<Rc<ModData>>()
        .map(|data| Rc::clone(&data))
        .ok_or_else(|| lua_error("this Lua VM belongs to no mod"))
}

/// The mod, for `buildat.FUNCTION`, which may only run while the mod's
/// `init.lua` does.
pub(crate) fn registering(lua: &Lua, function: &str) -> mlua::Result<Rc<ModData>> {
    let data = mod_data(lua)?;
    if !data.loading.get() {
        return Err(lua_error(format!(
            "{function} may only be called while the mod loads (in init.lua)"
        )));
    }
    Ok(data)
}

/// `buildat.include(FILE)`: runs `server_lua/FILE` of the same mod in its
/// environment.
pub(crate) fn include(lua: &Lua, file: String) -> mlua::Result<MultiValue> {
    let data = mod_data(lua)?;
    let bad = file.is_empty()
        || file.starts_with('/')
        || file.contains('\\')
        || file.split('/').any(|part| part == ".." || part.is_empty());
    if bad || !file.ends_with(".lua") {
        return Err(lua_error(format!(
            "include: '{file}' is not a .lua file of the mod's server_lua/ folder"
        )));
    }
    let path = data.dir.join(crate::mods::SERVER_LUA).join(&file);
    let source = std::fs::read(&path)
        .map_err(|e| lua_error(format!("include: cannot read {}: {e}", path.display())))?;
    let env: Table = lua.named_registry_value(ENV_KEY)?;
    run_file(
        lua,
        &source,
        &crate::mods::chunk_name(&data.name, &file),
        env,
    )
}

fn coordinate(table: &Table, axis: &str) -> mlua::Result<f64> {
    match table.raw_get::<Value>(axis)? {
        Value::Integer(n) => Ok(n as f64),
        Value::Number(n) if n.is_finite() => Ok(n),
        other => Err(lua_error(format!(
            "a position's {axis} is {}, not a number",
            other.type_name()
        ))),
    }
}

/// A position `{x=, y=, z=}`, as exact numbers.
pub(crate) fn fpos_from_lua(value: &Value) -> mlua::Result<[f64; 3]> {
    let Value::Table(table) = value else {
        return Err(lua_error(format!(
            "a position is a table {{x=, y=, z=}}, not {}",
            value.type_name()
        )));
    };
    Ok([
        coordinate(table, "x")?,
        coordinate(table, "y")?,
        coordinate(table, "z")?,
    ])
}

/// A voxel's position `{x=, y=, z=}` (numbers rounded down).
pub(crate) fn pos_from_lua(value: &Value) -> mlua::Result<Pos> {
    let [x, y, z] = fpos_from_lua(value)?;
    let voxel = |v: f64| {
        let v = v.floor();
        if v.abs() > 1e9 {
            Err(lua_error(format!("the coordinate {v} is out of the world")))
        } else {
            Ok(v as i32)
        }
    };
    Ok([voxel(x)?, voxel(y)?, voxel(z)?])
}

/// `{x=, y=, z=}` of a voxel.
pub(crate) fn pos_to_lua(lua: &Lua, [x, y, z]: Pos) -> mlua::Result<Table> {
    let table = lua.create_table_with_capacity(0, 3)?;
    table.raw_set("x", x)?;
    table.raw_set("y", y)?;
    table.raw_set("z", z)?;
    Ok(table)
}

/// `{x=, y=, z=}` of a point.
pub(crate) fn fpos_to_lua(lua: &Lua, [x, y, z]: [f64; 3]) -> mlua::Result<Table> {
    let table = lua.create_table_with_capacity(0, 3)?;
    table.raw_set("x", x)?;
    table.raw_set("y", y)?;
    table.raw_set("z", z)?;
    Ok(table)
}

/// A native module's error as a Lua error, naming the function.
pub(crate) fn call_failed(function: &str, error: impl std::fmt::Display) -> mlua::Error {
    lua_error(format!("{function}: {error}"))
}
