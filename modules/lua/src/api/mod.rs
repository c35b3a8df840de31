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

use buildat_luau::{Vm, describe, load_text, lua_error};
use buildat_voxel::geometry::Pos;
use mlua::{Lua, MultiValue, Table, Value};

use crate::mods::ModData;

/// The registry key of the mod's environment (for `include`).
const ENV_KEY: &str = "buildat.env";

/// The environment a mod's files run in: the sandbox's globals, and
/// `buildat` (= `core`). Sets the VM's [`ModData`].
pub(crate) fn environment(lua: &Lua, vm: &Vm, data: Rc<ModData>) -> mlua::Result<Table> {
    lua.set_app_data(Rc::clone(&data));
    crate::entities::install(lua, vm.real_globals())?;
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

/// The strings the hot bindings index tables with, made once per VM (a
/// key given as `&str` is hashed and interned again on every use).
pub(crate) struct Keys {
    pub x: mlua::LuaString,
    pub y: mlua::LuaString,
    pub z: mlua::LuaString,
}

/// The VM's [`Keys`].
pub(crate) fn keys(lua: &Lua) -> mlua::Result<Rc<Keys>> {
    if let Some(keys) = lua.app_data_ref::<Rc<Keys>>() {
        return Ok(Rc::clone(&keys));
    }
    let keys = Rc::new(Keys {
        x: lua.create_string("x")?,
        y: lua.create_string("y")?,
        z: lua.create_string("z")?,
    });
    lua.set_app_data(Rc::clone(&keys));
    Ok(keys)
}

fn coordinate(table: &Table, key: &mlua::LuaString, axis: &str) -> mlua::Result<f64> {
    match table.raw_get::<Value>(key)? {
        Value::Integer(n) => Ok(n as f64),
        Value::Number(n) if n.is_finite() => Ok(n),
        other => Err(lua_error(format!(
            "a position's {axis} is {}, not a number",
            other.type_name()
        ))),
    }
}

/// A position `{x=, y=, z=}` (or a Luau `vector`), as exact numbers.
pub(crate) fn fpos_from_lua(lua: &Lua, value: &Value) -> mlua::Result<[f64; 3]> {
    match value {
        Value::Table(table) => {
            let keys = keys(lua)?;
            Ok([
                coordinate(table, &keys.x, "x")?,
                coordinate(table, &keys.y, "y")?,
                coordinate(table, &keys.z, "z")?,
            ])
        }
        Value::Vector(v) if [v.x(), v.y(), v.z()].iter().all(|c| c.is_finite()) => {
            Ok([v.x() as f64, v.y() as f64, v.z() as f64])
        }
        _ => Err(lua_error(format!(
            "a position is a table {{x=, y=, z=}}, not {}",
            value.type_name()
        ))),
    }
}

/// A voxel's position `{x=, y=, z=}` (numbers rounded down).
pub(crate) fn pos_from_lua(lua: &Lua, value: &Value) -> mlua::Result<Pos> {
    let [x, y, z] = fpos_from_lua(lua, value)?;
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
    fpos_to_lua(lua, [x as f64, y as f64, z as f64])
}

/// `{x=, y=, z=}` of a point (whole numbers as integers).
pub(crate) fn fpos_to_lua(lua: &Lua, position: [f64; 3]) -> mlua::Result<Table> {
    let keys = keys(lua)?;
    let table = lua.create_table_with_capacity(0, 3)?;
    for (key, v) in [&keys.x, &keys.y, &keys.z].into_iter().zip(position) {
        table.raw_set(key, v)?;
    }
    Ok(table)
}

/// A binding's error as a modder reads it: "file:line: message" of the
/// Lua line that called it (Luau adds no place to a host function's
/// error); a memory error is left as it is.
pub(crate) fn located(lua: &Lua, error: mlua::Error) -> mlua::Error {
    if matches!(error, mlua::Error::MemoryError(_)) {
        return error;
    }
    match buildat_luau::location(lua) {
        Some(at) => lua_error(format!("{at}: {}", describe(&error))),
        None => error,
    }
}

/// The host function `name`: its arguments converted (an error names the
/// function), its errors [`located`].
pub(crate) fn bind<A, R>(
    lua: &Lua,
    name: &'static str,
    f: impl Fn(&Lua, A) -> mlua::Result<R> + 'static,
) -> mlua::Result<mlua::Function>
where
    A: mlua::FromLuaMulti,
    R: mlua::IntoLuaMulti,
{
    lua.create_function(move |lua, args: MultiValue| {
        let args = A::from_lua_multi(args, lua).map_err(|e| {
            located(
                lua,
                lua_error(format!("{name}: bad arguments: {}", describe(&e))),
            )
        })?;
        f(lua, args).map_err(|e| located(lua, e))
    })
}

/// A field of a definition table, converted, with an error naming it.
pub(crate) fn field<T: mlua::FromLua>(def: &Table, function: &str, key: &str) -> mlua::Result<T> {
    def.raw_get::<T>(key)
        .map_err(|e| lua_error(format!("{function}: field '{key}': {}", describe(&e))))
}

/// A native module's error as a Lua error, naming the function.
pub(crate) fn call_failed(function: &str, error: impl std::fmt::Display) -> mlua::Error {
    lua_error(format!("{function}: {error}"))
}
