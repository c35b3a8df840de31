//! Lua mods' entities: voxelworld's transient nodes that a mod's
//! `on_step` moves. Each has its `self` in the mod's VM (its definition's
//! fields through `__index`, `name`, `home`, `age`, `object`); the Rust
//! side keeps what the host needs (node id, kind, where clients were told
//! it is).
//!
//! A tick's steps cross from Rust into Lua once per mod, not once per
//! entity: [`PRELUDE`] (trusted Lua, in every mod's VM) steps every entity
//! of the mod under `pcall` and writes those that moved into one
//! `buffer`, which Rust reads as a whole ([`step`]). `self.object`'s
//! methods are Lua too, so a step runs without leaving the VM.
//!
//! Owns: [`LiveEntity`], the prelude, making a node for an entity
//! ([`create`]), making its `self` and running `on_activate`
//! ([`activate`]), a step of all a mod's entities ([`step`]), removing one
//! from its VM ([`forget`]), `get_staticdata` ([`staticdata`]). Does not
//! own: when steps run and what is done with moves (`lib.rs`, one
//! `MoveNodes` a tick), the nodes (`voxelworld`), drawing (the client's
//! game draws a node's `colour`/`size` box or its `model`).

use std::collections::BTreeMap;

use buildat_interface::ModuleError;
use buildat_luau::load_text;
use buildat_modkit::{VAR_COLOUR, VAR_ENTITY, VAR_SIZE};
use buildat_voxelworld_api::{CreateNode, CreateNodes};
use mlua::{Lua, Table};

use crate::api::fpos_to_lua;
use crate::mods::{EntityDef, Shared};

/// Node variable: the glTF model the client draws the entity with.
pub const VAR_MODEL: &str = "model";

/// The registry key of the prelude's functions in a mod's VM.
const PRELUDE_KEY: &str = "buildat.entities";

/// Bytes of one moved entity in the buffer a step answers: slot (u32),
/// removed (u32), x, y, z (f64), yaw (f32), padding.
const RECORD: usize = 40;

/// The entities' side in each mod's VM: `add`, `forget`, `step`,
/// `staticdata`, and `self.object`'s methods.
const PRELUDE: &str = r#"
local live, by_slot = {}, {}
local object = {}
object.__index = object
-- Checks inline, not in a helper: each Lua call costs a VM interrupt.
function object:get_pos() return {x = self.x, y = self.y, z = self.z} end
function object:set_pos(p)
	local kind = type(p)
	if kind ~= "table" and kind ~= "vector" then
		error("set_pos: a position is a table {x=, y=, z=}, not " .. kind, 2)
	end
	local x, y, z = p.x, p.y, p.z
	if type(x) ~= "number" or type(y) ~= "number" or type(z) ~= "number"
		or not (x > -1e9 and x < 1e9 and y > -1e9 and y < 1e9 and z > -1e9 and z < 1e9) then
		error("set_pos: the position's x, y and z are numbers in the world", 2)
	end
	self.x, self.y, self.z = x, y, z
end
function object:get_yaw() return self.yaw end
function object:set_yaw(yaw)
	if type(yaw) ~= "number" or not (yaw > -1e9 and yaw < 1e9) then error("set_yaw: the yaw is a number of radians", 2) end
	self.yaw = yaw
end
function object:remove() self.removed = true end

local entities = {}
function entities.add(slot, def, name, home, x, y, z, yaw, age, staticdata)
	local o = setmetatable({slot = slot, x = x, y = y, z = z, yaw = yaw, sx = x, sy = y, sz = z, syaw = yaw}, object)
	local self = setmetatable({name = name, home = home, age = age, object = o}, {__index = def})
	live[#live + 1] = self
	by_slot[slot] = self
	local on_activate = def.on_activate
	if on_activate then on_activate(self, staticdata) end
	return self
end
function entities.forget(slot)
	local self = by_slot[slot]
	if not self then return end
	by_slot[slot] = nil
	for i = 1, #live do
		if live[i] == self then
			live[i] = live[#live]
			live[#live] = nil
			return
		end
	end
end
function entities.staticdata(slot)
	local self = by_slot[slot]
	local get = self and self.get_staticdata
	if not get then return "" end
	return tostring(get(self) or "")
end
function entities.step(dtime)
	local out, n, errors, gone = nil, 0, nil, nil
	for i = 1, #live do
		local self = live[i]
		self.age += dtime
		local on_step = self.on_step
		if on_step then
			local ok, err = pcall(on_step, self, dtime)
			if not ok then
				errors = errors or {}
				errors[#errors + 1] = self.name .. ": " .. tostring(err)
			end
		end
		local o = self.object
		local x, y, z, yaw = o.x, o.y, o.z, o.yaw
		if o.removed or x ~= o.sx or y ~= o.sy or z ~= o.sz or yaw ~= o.syaw then
			out = out or buffer.create(#live * 40)
			local at = n * 40
			buffer.writeu32(out, at, o.slot)
			buffer.writeu32(out, at + 4, o.removed and 1 or 0)
			buffer.writef64(out, at + 8, x)
			buffer.writef64(out, at + 16, y)
			buffer.writef64(out, at + 24, z)
			buffer.writef32(out, at + 32, yaw)
			o.sx, o.sy, o.sz, o.syaw = x, y, z, yaw
			n += 1
			if o.removed then
				gone = gone or {}
				gone[#gone + 1] = o.slot
			end
		end
	end
	if gone then
		for _, slot in gone do entities.forget(slot) end
	end
	return out, n, errors
end
return entities
"#;

/// One entity of a mod, as the host keeps it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LiveEntity {
    /// Its key in its mod's VM.
    pub slot: u32,
    /// Its node's id.
    pub id: u64,
    pub mod_name: String,
    pub kind: String,
    pub home: [f64; 3],
    /// Where and how turned clients were last told it is.
    pub position: [f64; 3],
    pub yaw: f32,
    pub age: f64,
}

/// One entity's move out of a step.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Moved {
    pub slot: u32,
    pub removed: bool,
    pub position: [f64; 3],
    pub yaw: f32,
}

/// What a step of all a mod's entities did.
#[derive(Debug, Default)]
pub(crate) struct Stepped {
    pub moved: Vec<Moved>,
    /// The steps that failed: "KIND: FILE:LINE: message".
    pub errors: Vec<String>,
}

/// Runs the prelude in a mod's VM (its environment's set-up).
pub(crate) fn install(lua: &Lua, globals: Table) -> mlua::Result<()> {
    let functions: Table =
        load_text(lua, PRELUDE.as_bytes(), "=entities", globals, false)?.call(())?;
    lua.set_named_registry_value(PRELUDE_KEY, functions)
}

fn prelude(lua: &Lua, function: &str) -> mlua::Result<mlua::Function> {
    let functions: Table = lua.named_registry_value(PRELUDE_KEY)?;
    functions.raw_get(function)
}

/// The node variables clients draw a kind with.
fn vars(def: &EntityDef) -> BTreeMap<String, Vec<u8>> {
    let mut vars = BTreeMap::from([
        (VAR_ENTITY.to_string(), def.name.as_bytes().to_vec()),
        (VAR_COLOUR.to_string(), def.colour.to_vec()),
        (
            VAR_SIZE.to_string(),
            def.size.iter().flat_map(|v| v.to_le_bytes()).collect(),
        ),
    ]);
    if let Some(model) = &def.model {
        vars.insert(VAR_MODEL.to_string(), model.as_bytes().to_vec());
    }
    vars
}

/// Makes nodes for entities of the kinds at the places given, in one call;
/// the entities made (not activated yet), in order (`None`: not made, the
/// world there is not loaded).
pub(crate) fn create(
    shared: &Shared,
    mod_name: &str,
    made: &[(&EntityDef, [f64; 3])],
) -> Result<Vec<Option<LiveEntity>>, ModuleError> {
    if made.is_empty() {
        return Ok(Vec::new());
    }
    let nodes = made
        .iter()
        .map(|(def, at)| CreateNode {
            position: *at,
            save_enabled: false,
            vars: vars(def),
        })
        .collect();
    let ids = shared.host.call(&CreateNodes { nodes })?;
    Ok(made
        .iter()
        .zip(ids)
        .map(|((def, at), id)| {
            id.map(|id| LiveEntity {
                slot: shared.new_slot(),
                id,
                mod_name: mod_name.to_string(),
                kind: def.name.clone(),
                home: *at,
                position: *at,
                yaw: 0.0,
                age: 0.0,
            })
        })
        .collect())
}

/// Makes the entity's `self` in its mod's VM and runs `on_activate(self,
/// staticdata)`; answers `self`.
pub(crate) fn activate(
    lua: &Lua,
    entity: &LiveEntity,
    def: &EntityDef,
    staticdata: &str,
) -> mlua::Result<Table> {
    let [x, y, z] = entity.position;
    prelude(lua, "add")?.call((
        entity.slot,
        &def.table,
        def.name.as_str(),
        fpos_to_lua(lua, entity.home)?,
        x,
        y,
        z,
        entity.yaw,
        entity.age,
        staticdata,
    ))
}

/// Forgets the entity in its mod's VM (it is no more).
pub(crate) fn forget(lua: &Lua, slot: u32) -> mlua::Result<()> {
    prelude(lua, "forget")?.call(slot)
}

/// What the entity's `get_staticdata(self)` answers ("" without one).
pub(crate) fn staticdata(lua: &Lua, slot: u32) -> mlua::Result<String> {
    prelude(lua, "staticdata")?.call(slot)
}

/// Steps every entity of the mod whose VM this is (`on_step(self, dtime)`
/// each, under `pcall`): those that moved or were removed, and the steps
/// that failed.
pub(crate) fn step(lua: &Lua, dtime: f64) -> mlua::Result<Stepped> {
    let (moves, count, errors): (Option<mlua::Buffer>, usize, Option<Vec<String>>) =
        prelude(lua, "step")?.call(dtime)?;
    let mut stepped = Stepped {
        moved: Vec::with_capacity(count),
        errors: errors.unwrap_or_default(),
    };
    if let Some(moves) = moves {
        let bytes = moves.to_vec();
        for record in bytes.chunks_exact(RECORD).take(count) {
            let u32_at = |at: usize| {
                u32::from_le_bytes([record[at], record[at + 1], record[at + 2], record[at + 3]])
            };
            let f64_at = |at: usize| {
                let mut raw = [0; 8];
                raw.copy_from_slice(&record[at..at + 8]);
                f64::from_le_bytes(raw)
            };
            stepped.moved.push(Moved {
                slot: u32_at(0),
                removed: u32_at(4) != 0,
                position: [f64_at(8), f64_at(16), f64_at(24)],
                yaw: f32::from_bits(u32_at(32)),
            });
        }
    }
    Ok(stepped)
}
