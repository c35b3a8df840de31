//! The bindings of the world, chat and what a mod registers with the
//! world: `register_chatcommand`, `register_node`, `register_abm`,
//! `register_entity`, `add_entity`, `after`, `get_node`, `set_node`,
//! `get_spawn`, `chat_send_player`, `chat_send_all`,
//! `get_connected_players`, `log`, `get_current_modname`, `include`,
//! `publish`, `get_mod`, `register_globalstep`, `register_on_joinplayer`,
//! `register_on_leaveplayer`, `get_player_pos`, `set_player_pos`,
//! `get_timeofday`, `set_timeofday` and `find_nodes_in_area`.
//!
//! Owns: checking each function's arguments (errors name the function and
//! the field) and turning them into [`Registrations`] or calls through
//! modkit's `Ctx` (voxelworld's `GetVoxel`/`EditVoxel`, chat packets), so
//! the native modules' checks apply. Does not own: registering what was
//! recorded (`lib.rs`), items and the rest of the game (`game.rs`).
//!
//! [`Registrations`]: crate::mods::Registrations

use std::cell::Cell;
use std::collections::HashMap;
use std::rc::Rc;

use buildat_active_api::{Abm, MIN_INTERVAL_SECONDS};
use buildat_daytime_api::{GetTime, SetTime};
use buildat_interface::{CallError, ModuleError, log};
use buildat_luau::lua_error;
use buildat_main_api::{GetPlayers, Teleport};
use buildat_voxel::{BlockDefinition, VoxelInstance, light};
use buildat_voxelworld_api::{GetVoxels, MAX_VOXELS_PER_CALL};
use mlua::{Function, Lua, MultiValue, Table, Value, Variadic};

use super::{
    bind, call_failed, field, fpos_from_lua, fpos_to_lua, include, mod_data, pos_from_lua,
    pos_to_lua, registering,
};
use crate::mods::{AbmDef, ChatCommand, EntityDef, Job, NodeDef, OnReload};

/// How deep a value copied between two mods' VMs may nest.
const MAX_COPY_DEPTH: usize = 16;

pub(crate) fn install(lua: &Lua, buildat: &Table) -> mlua::Result<()> {
    buildat.raw_set(
        "register_chatcommand",
        bind(lua, "register_chatcommand", register_chatcommand)?,
    )?;
    buildat.raw_set("register_node", bind(lua, "register_node", register_node)?)?;
    buildat.raw_set("register_abm", bind(lua, "register_abm", register_abm)?)?;
    buildat.raw_set(
        "register_entity",
        bind(lua, "register_entity", register_entity)?,
    )?;
    buildat.raw_set("add_entity", bind(lua, "add_entity", add_entity)?)?;
    buildat.raw_set("after", bind(lua, "after", after)?)?;
    buildat.raw_set("get_node", bind(lua, "get_node", get_node)?)?;
    buildat.raw_set("set_node", bind(lua, "set_node", set_node)?)?;
    buildat.raw_set("get_spawn", bind(lua, "get_spawn", get_spawn)?)?;
    buildat.raw_set(
        "chat_send_player",
        bind(lua, "chat_send_player", chat_send_player)?,
    )?;
    buildat.raw_set("chat_send_all", bind(lua, "chat_send_all", chat_send_all)?)?;
    buildat.raw_set(
        "get_connected_players",
        bind(lua, "get_connected_players", get_connected_players)?,
    )?;
    buildat.raw_set("log", bind(lua, "log", log_line)?)?;
    buildat.raw_set(
        "get_current_modname",
        bind(lua, "get_current_modname", |lua, ()| {
            Ok(mod_data(lua)?.name.clone())
        })?,
    )?;
    buildat.raw_set("include", bind(lua, "include", include)?)?;
    buildat.raw_set(
        "get_player_pos",
        bind(lua, "get_player_pos", get_player_pos)?,
    )?;
    buildat.raw_set(
        "set_player_pos",
        bind(lua, "set_player_pos", set_player_pos)?,
    )?;
    buildat.raw_set("get_timeofday", bind(lua, "get_timeofday", get_timeofday)?)?;
    buildat.raw_set("set_timeofday", bind(lua, "set_timeofday", set_timeofday)?)?;
    buildat.raw_set(
        "find_nodes_in_area",
        bind(lua, "find_nodes_in_area", find_nodes_in_area)?,
    )?;
    buildat.raw_set(
        "register_globalstep",
        bind(lua, "register_globalstep", |lua, f: Function| {
            registering(lua, "register_globalstep")?
                .reg
                .borrow_mut()
                .globalsteps
                .push(f);
            Ok(())
        })?,
    )?;
    buildat.raw_set(
        "register_on_joinplayer",
        bind(lua, "register_on_joinplayer", |lua, f: Function| {
            registering(lua, "register_on_joinplayer")?
                .reg
                .borrow_mut()
                .on_join
                .push(f);
            Ok(())
        })?,
    )?;
    buildat.raw_set(
        "register_on_leaveplayer",
        bind(lua, "register_on_leaveplayer", |lua, f: Function| {
            registering(lua, "register_on_leaveplayer")?
                .reg
                .borrow_mut()
                .on_leave
                .push(f);
            Ok(())
        })?,
    )?;
    buildat.raw_set("publish", bind(lua, "publish", publish)?)?;
    buildat.raw_set("get_mod", bind(lua, "get_mod", get_mod)?)?;
    Ok(())
}

fn register_chatcommand(lua: &Lua, (name, def): (String, Table)) -> mlua::Result<()> {
    const F: &str = "register_chatcommand";
    let data = registering(lua, F)?;
    let func: Function = field(&def, F, "func")?;
    let privs: Option<Table> = field(&def, F, "privs")?;
    let mut privileges = Vec::new();
    if let Some(privs) = privs {
        for pair in privs.pairs::<String, bool>() {
            let (privilege, wanted) =
                pair.map_err(|e| lua_error(format!("{F}: privs is a table {{NAME = true}}: {e}")))?;
            if wanted {
                privileges.push(privilege);
            }
        }
    }
    privileges.sort();
    let mut reg = data.reg.borrow_mut();
    if reg.commands.iter().any(|c| c.name == name) {
        return Err(lua_error(format!("{F}: the mod registers /{name} twice")));
    }
    reg.commands.push(ChatCommand {
        params: field::<Option<String>>(&def, F, "params")?.unwrap_or_default(),
        description: field::<Option<String>>(&def, F, "description")?.unwrap_or_default(),
        name,
        privileges,
        func,
    });
    Ok(())
}

fn register_node(lua: &Lua, (name, def): (String, Table)) -> mlua::Result<()> {
    const F: &str = "register_node";
    let data = registering(lua, F)?;
    let tiles: Option<Vec<String>> = field(&def, F, "tiles")?;
    let tiles = tiles.unwrap_or_else(|| vec![format!("{name}.png")]);
    let textures: [String; 6] = match tiles.as_slice() {
        [one] => std::array::from_fn(|_| one.clone()),
        six if six.len() == 6 => std::array::from_fn(|i| six[i].clone()),
        other => {
            return Err(lua_error(format!(
                "{F}: tiles has {} textures; give 1 or 6 (+y, -y, +x, -x, +z, -z)",
                other.len()
            )));
        }
    };
    let light_source: Option<u8> = field(&def, F, "light_source")?;
    let light_source = light_source.unwrap_or(0);
    if light_source > 15 {
        return Err(lua_error(format!(
            "{F}: light_source is 0..15, not {light_source}"
        )));
    }
    let clear: Option<bool> = field(&def, F, "sunlight_propagates")?;
    let walkable: Option<bool> = field(&def, F, "walkable")?;
    let definition = BlockDefinition {
        textures,
        physically_solid: walkable.unwrap_or(true),
        light_source,
        light_absorption: if clear.unwrap_or(false) {
            0
        } else {
            light::OPAQUE
        },
        ..BlockDefinition::simple(&name, "")
    };
    let groups: Option<std::collections::BTreeMap<String, i32>> = field(&def, F, "groups")?;
    let description: Option<String> = field(&def, F, "description")?;
    let node = NodeDef {
        definition,
        description: description.unwrap_or_else(|| name.clone()),
        // Without groups a block could be dug by nothing.
        groups: groups.unwrap_or_else(|| [("oddly_breakable_by_hand".to_string(), 3)].into()),
        on_place: field(&def, F, "on_place")?,
        on_dig: field(&def, F, "on_dig")?,
        on_touch: field(&def, F, "on_touch")?,
        on_punch: field(&def, F, "on_punch")?,
        on_use: field(&def, F, "on_use")?,
    };
    let mut reg = data.reg.borrow_mut();
    if reg.nodes.iter().any(|n| n.definition.name == name) {
        return Err(lua_error(format!("{F}: the mod registers '{name}' twice")));
    }
    reg.nodes.push(node);
    Ok(())
}

fn register_abm(lua: &Lua, def: Table) -> mlua::Result<()> {
    const F: &str = "register_abm";
    let data = registering(lua, F)?;
    let nodes: Vec<String> = field(&def, F, "nodenames")?;
    if nodes.is_empty() {
        return Err(lua_error(format!("{F}: nodenames is empty")));
    }
    let neighbours: Option<Vec<String>> = field(&def, F, "neighbors")?;
    let interval: Option<f64> = field(&def, F, "interval")?;
    let interval = interval.unwrap_or(1.0);
    if !interval.is_finite() || interval < MIN_INTERVAL_SECONDS {
        return Err(lua_error(format!(
            "{F}: interval is at least {MIN_INTERVAL_SECONDS} seconds, not {interval}"
        )));
    }
    let chance: Option<u32> = field(&def, F, "chance")?;
    let action: Function = field(&def, F, "action")?;
    let mut reg = data.reg.borrow_mut();
    let label: Option<String> = field(&def, F, "label")?;
    let label = label.unwrap_or_else(|| format!("abm{}", reg.abms.len() + 1));
    let name = format!("{}/{label}", data.name);
    if reg.abms.iter().any(|a| a.abm.name == name) {
        return Err(lua_error(format!(
            "{F}: the mod registers the ABM '{label}' twice"
        )));
    }
    reg.abms.push(AbmDef {
        abm: Abm {
            name,
            module: data.shared.host.module_name(),
            nodes,
            neighbours: neighbours.unwrap_or_default(),
            interval_seconds: interval,
            chance: chance.unwrap_or(1).max(1),
        },
        action,
    });
    Ok(())
}

fn register_entity(lua: &Lua, (name, def): (String, Table)) -> mlua::Result<()> {
    const F: &str = "register_entity";
    let data = registering(lua, F)?;
    let colour: Option<[u8; 3]> = field(&def, F, "colour")?;
    let size: Option<[f32; 3]> = field(&def, F, "size")?;
    let on_reload = match field::<Option<String>>(&def, F, "on_reload")?.as_deref() {
        None | Some("keep") => OnReload::Keep,
        Some("rebuild") => OnReload::Rebuild,
        Some(other) => {
            return Err(lua_error(format!(
                "{F}: on_reload is \"keep\" or \"rebuild\", not \"{other}\""
            )));
        }
    };
    let keep: Option<usize> = field(&def, F, "keep")?;
    for hook in ["on_activate", "on_step", "get_staticdata"] {
        field::<Option<Function>>(&def, F, hook)?;
    }
    let entity = EntityDef {
        name: name.clone(),
        colour: colour.unwrap_or([200, 60, 60]),
        size: size.unwrap_or([0.6, 0.6, 0.6]),
        model: field(&def, F, "model")?,
        keep: keep.unwrap_or(0).min(1000),
        place: field(&def, F, "place")?,
        on_reload,
        table: def,
    };
    let mut reg = data.reg.borrow_mut();
    if reg.entities.iter().any(|e| e.name == name) {
        return Err(lua_error(format!("{F}: the mod registers '{name}' twice")));
    }
    reg.entities.push(entity);
    Ok(())
}

/// `add_entity(pos, name)`: makes one now (its `self`, or nil where the
/// world is not loaded).
fn add_entity(lua: &Lua, (pos, name): (Value, String)) -> mlua::Result<Value> {
    const F: &str = "add_entity";
    let data = mod_data(lua)?;
    let at = fpos_from_lua(lua, &pos)?;
    let reg = data.reg.borrow();
    let Some(def) = reg.entities.iter().find(|e| e.name == name) else {
        return Err(lua_error(format!("{F}: the mod has no entity '{name}'")));
    };
    let made = crate::entities::create(&data.shared, &data.name, &[(def, at)])
        .map_err(|e| call_failed(F, e))?;
    let Some(Some(entity)) = made.into_iter().next() else {
        return Ok(Value::Nil);
    };
    let this = crate::entities::activate(lua, &entity, def, "")?;
    data.shared
        .entities
        .borrow_mut()
        .insert(entity.slot, entity);
    Ok(Value::Table(this))
}

/// `after(seconds, func, ...)`: a job, cancelled with `job:cancel()`.
fn after(lua: &Lua, (seconds, run, args): (f64, Function, Variadic<Value>)) -> mlua::Result<Table> {
    let data = mod_data(lua)?;
    if !seconds.is_finite() || seconds < 0.0 {
        return Err(lua_error(format!(
            "after: {seconds} is not a number of seconds"
        )));
    }
    let shared = &data.shared;
    let cancelled = Rc::new(Cell::new(false));
    shared.jobs.borrow_mut().push(Job {
        mod_name: data.name.clone(),
        owner: Rc::downgrade(&data),
        due: shared.clock.get() + seconds,
        run,
        args: args.into_iter().collect(),
        cancelled: Rc::clone(&cancelled),
    });
    let job = lua.create_table()?;
    job.raw_set(
        "cancel",
        lua.create_function(move |_, _: MultiValue| {
            cancelled.set(true);
            Ok(())
        })?,
    )?;
    Ok(job)
}

fn get_node(lua: &Lua, pos: Value) -> mlua::Result<Table> {
    let data = mod_data(lua)?;
    let pos = pos_from_lua(lua, &pos)?;
    let name = data
        .shared
        .ctx
        .borrow_mut()
        .get_voxel(pos)
        .map_err(|e| call_failed("get_node", e))?;
    let node = lua.create_table()?;
    node.raw_set("name", name.unwrap_or_else(|| "ignore".to_string()))?;
    Ok(node)
}

fn set_node(lua: &Lua, (pos, node): (Value, Table)) -> mlua::Result<bool> {
    let data = mod_data(lua)?;
    let pos = pos_from_lua(lua, &pos)?;
    let name: String = field(&node, "set_node", "name")?;
    data.shared
        .ctx
        .borrow_mut()
        .set_voxel(pos, &name)
        .map_err(|e| call_failed("set_node", e))
}

fn get_spawn(lua: &Lua, (): ()) -> mlua::Result<Value> {
    let data = mod_data(lua)?;
    let spawn = data
        .shared
        .ctx
        .borrow_mut()
        .spawn_point()
        .map_err(|e| call_failed("get_spawn", e))?;
    match spawn {
        Some(at) => Ok(Value::Table(fpos_to_lua(lua, at)?)),
        None => Ok(Value::Nil),
    }
}

fn chat_send_player(lua: &Lua, (name, text): (String, String)) -> mlua::Result<bool> {
    let data = mod_data(lua)?;
    let told = data.shared.ctx.borrow_mut().tell(&name, &text);
    told.map_err(|e| call_failed("chat_send_player", e))
}

fn chat_send_all(lua: &Lua, text: String) -> mlua::Result<usize> {
    let data = mod_data(lua)?;
    let told = data.shared.ctx.borrow_mut().announce(&text);
    told.map_err(|e| call_failed("chat_send_all", e))
}

fn get_connected_players(lua: &Lua, (): ()) -> mlua::Result<Vec<String>> {
    let data = mod_data(lua)?;
    let players = data.shared.ctx.borrow_mut().players();
    let players = players.map_err(|e| call_failed("get_connected_players", e))?;
    Ok(players.into_iter().map(|(name, _)| name).collect())
}

fn log_line(lua: &Lua, (level, text): (String, Option<String>)) -> mlua::Result<()> {
    let data = mod_data(lua)?;
    // `log(text)` logs at info, as Luanti's.
    let (level, text) = match text {
        None => (log::Level::Info, level),
        Some(text) => {
            let level = match level.as_str() {
                "error" => log::Level::Error,
                "warning" | "warn" => log::Level::Warn,
                "action" | "info" => log::Level::Info,
                "verbose" | "debug" => log::Level::Debug,
                other => {
                    return Err(lua_error(format!(
                        "log: the level is error, warning, action, info or verbose, not '{other}'"
                    )));
                }
            };
            (level, text)
        }
    };
    data.shared
        .host
        .log(level, &format!("[{}] {text}", data.name));
    Ok(())
}

/// Where the player `name` stands (nil: not playing).
fn get_player_pos(lua: &Lua, name: String) -> mlua::Result<Value> {
    let data = mod_data(lua)?;
    let players = data
        .shared
        .host
        .call(&GetPlayers {})
        .map_err(|e| call_failed("get_player_pos", e))?;
    match players
        .into_iter()
        .find(|p| p.name.eq_ignore_ascii_case(&name))
    {
        Some(player) => Ok(Value::Table(fpos_to_lua(lua, player.position)?)),
        None => Ok(Value::Nil),
    }
}

/// Moves the player `name` (main's teleport, with its checks).
fn set_player_pos(lua: &Lua, (name, pos): (String, Value)) -> mlua::Result<()> {
    let data = mod_data(lua)?;
    let position = fpos_from_lua(lua, &pos)?;
    data.shared
        .host
        .call(&Teleport {
            player: name,
            position,
        })
        .map_err(|e| call_failed("set_player_pos", e))
}

/// The time of day, 0..1 (0 midnight, 0.5 noon); nil without a
/// `daytime` module.
fn get_timeofday(lua: &Lua, (): ()) -> mlua::Result<Option<f64>> {
    let data = mod_data(lua)?;
    match data.shared.host.call(&GetTime {}) {
        Ok(time) => Ok(Some(time.time)),
        Err(ModuleError::Call(CallError::NotFound(_))) => Ok(None),
        Err(error) => Err(call_failed("get_timeofday", error)),
    }
}

fn set_timeofday(lua: &Lua, time: f64) -> mlua::Result<()> {
    let data = mod_data(lua)?;
    data.shared
        .host
        .call(&SetTime { time })
        .map_err(|e| call_failed("set_timeofday", e))
}

/// Most voxels `find_nodes_in_area` looks at in one call.
const MAX_FIND_VOXELS: usize = 8 * MAX_VOXELS_PER_CALL;

/// The positions in the box `minp`..`maxp` (both included) whose block is
/// one of `names` (a name or a list), in x, y, z order; at most
/// [`MAX_FIND_VOXELS`] voxels looked at.
fn find_nodes_in_area(
    lua: &Lua,
    (minp, maxp, names): (Value, Value, Value),
) -> mlua::Result<Vec<Table>> {
    const F: &str = "find_nodes_in_area";
    let data = mod_data(lua)?;
    let (a, b) = (pos_from_lua(lua, &minp)?, pos_from_lua(lua, &maxp)?);
    let low: [i32; 3] = std::array::from_fn(|i| a[i].min(b[i]));
    let high: [i32; 3] = std::array::from_fn(|i| a[i].max(b[i]));
    let volume = (0..3).try_fold(1usize, |volume, i| {
        volume.checked_mul((i64::from(high[i]) - i64::from(low[i]) + 1) as usize)
    });
    if volume.is_none_or(|v| v > MAX_FIND_VOXELS) {
        return Err(lua_error(format!(
            "{F}: the box holds more than {MAX_FIND_VOXELS} voxels; look in smaller boxes"
        )));
    }
    let names: Vec<String> = match names {
        Value::String(name) => vec![name.to_str()?.to_string()],
        Value::Table(list) => list
            .sequence_values::<String>()
            .collect::<mlua::Result<_>>()?,
        other => {
            return Err(lua_error(format!(
                "{F}: the names are a name or a list of names, not {}",
                other.type_name()
            )));
        }
    };
    let mut positions = Vec::new();
    for x in low[0]..=high[0] {
        for y in low[1]..=high[1] {
            for z in low[2]..=high[2] {
                positions.push([x, y, z]);
            }
        }
    }
    let mut found = Vec::new();
    let mut ctx = data.shared.ctx.borrow_mut();
    let mut wanted: HashMap<u32, bool> = HashMap::new();
    for chunk in positions.chunks(MAX_VOXELS_PER_CALL) {
        let voxels = data
            .shared
            .host
            .call(&GetVoxels {
                positions: chunk.to_vec(),
            })
            .map_err(|e| call_failed(F, e))?;
        for (pos, voxel) in chunk.iter().zip(voxels) {
            let Some(voxel) = voxel else {
                continue;
            };
            let type_id = VoxelInstance(voxel).type_id();
            let is_wanted = match wanted.get(&type_id) {
                Some(&is) => is,
                None => {
                    let name = ctx.voxel_name(voxel).unwrap_or_default();
                    let is = names.contains(&name);
                    wanted.insert(type_id, is);
                    is
                }
            };
            if is_wanted {
                found.push(*pos);
            }
        }
    }
    drop(ctx);
    found.into_iter().map(|pos| pos_to_lua(lua, pos)).collect()
}

fn publish(lua: &Lua, table: Table) -> mlua::Result<()> {
    let data = registering(lua, "publish")?;
    data.reg.borrow_mut().published = Some(table);
    Ok(())
}

/// `get_mod(name)`: what the mod `name` published, as a table whose
/// functions run in that mod's VM with copied arguments and results (nil
/// if it published nothing or is not loaded).
fn get_mod(lua: &Lua, name: String) -> mlua::Result<Value> {
    let data = mod_data(lua)?;
    if !data.shared.published.borrow().contains_key(&name) {
        return Ok(Value::Nil);
    }
    let shared = Rc::clone(&data.shared);
    let proxy = lua.create_table()?;
    let meta = lua.create_table()?;
    let index = lua.create_function(move |lua, (_, key): (Value, Value)| {
        let Some((vm, table)) = shared.published.borrow().get(&name).cloned() else {
            return Err(lua_error(format!("the mod {name} is not loaded any more")));
        };
        let Value::String(key) = key else {
            return Ok(Value::Nil);
        };
        let key = key.to_str()?.to_string();
        let value: Value = table.raw_get(key.as_str())?;
        match value {
            Value::Function(function) => {
                let owner = name.clone();
                let call = lua.create_function(move |lua, args: MultiValue| {
                    let theirs = vm.lua();
                    let args = args
                        .into_iter()
                        .map(|v| copy_value(&v, theirs, 0))
                        .collect::<mlua::Result<MultiValue>>()?;
                    let results = vm
                        .enter(None, || function.call::<MultiValue>(args))
                        .map_err(|f| lua_error(format!("{owner}.{key}: {f}")))?;
                    results
                        .iter()
                        .map(|v| copy_value(v, lua, 0))
                        .collect::<mlua::Result<MultiValue>>()
                })?;
                Ok(Value::Function(call))
            }
            other => copy_value(&other, lua, 0),
        }
    })?;
    meta.raw_set("__index", index)?;
    proxy.set_metatable(Some(meta))?;
    Ok(Value::Table(proxy))
}

/// A value copied into another VM: nil, booleans, numbers, strings and
/// tables of them (functions and userdata do not cross).
fn copy_value(value: &Value, to: &Lua, depth: usize) -> mlua::Result<Value> {
    Ok(match value {
        Value::Nil => Value::Nil,
        Value::Boolean(b) => Value::Boolean(*b),
        Value::Integer(n) => Value::Integer(*n),
        Value::Number(n) => Value::Number(*n),
        Value::String(s) => Value::String(to.create_string(s.as_bytes())?),
        Value::Table(table) => {
            if depth >= MAX_COPY_DEPTH {
                return Err(lua_error(format!(
                    "a table passed to another mod nests deeper than {MAX_COPY_DEPTH}"
                )));
            }
            let copy = to.create_table()?;
            for pair in table.pairs::<Value, Value>() {
                let (k, v) = pair?;
                copy.raw_set(
                    copy_value(&k, to, depth + 1)?,
                    copy_value(&v, to, depth + 1)?,
                )?;
            }
            Value::Table(copy)
        }
        other => {
            return Err(lua_error(format!(
                "a {} cannot be passed to another mod",
                other.type_name()
            )));
        }
    })
}
