--! items/client_lua/init.lua: the item definitions this client knows, from
--! the server's `items:defs` (docs/protocol.md §12), for icons and
--! tooltips. Bot scripts and other modules get the same instance with
--! `require("buildat/module/items")`.
--!
--! Owns: decoding `items:defs` and keeping the latest; handing them to the
--! client's UI (`buildat.ui.define_items`, when the client has it).
--! Does not own: inventories (`buildat/module/inventory`) or what an item
--! does (the server decides).
--!
--! Interface returned: get(name) -> { name, description, texture,
--! stack_max, kind ("block" | "tool" | "craft"), voxel (a block's voxel
--! name, else nil) } or nil; all() -> { [name] = def }; version() -> n
--! (nil before the first items:defs); on_change(fn(version)) (called at
--! once when definitions are already known).

local log = buildat.Logger("items")

local KINDS = { [0] = "block", [1] = "tool", [2] = "craft" }

local M = {}

local defs, version, change_fns = {}, nil, {}

local function copy(def)
	if def == nil then
		return nil
	end
	local out = {}
	for k, v in pairs(def) do
		out[k] = v
	end
	return out
end

-- Decodes an items:defs payload: u64 version, then per item
-- s2 name, s2 description, s2 texture, u16 stack_max, u8 kind, s2 voxel.
local function decode(data)
	local at
	local new_version
	new_version, at = string.unpack("<I8", data)
	local new = {}
	while at <= #data do
		local name, description, texture, stack_max, kind, voxel
		name, description, texture, stack_max, kind, voxel, at =
			string.unpack("<s2s2s2I2Bs2", data, at)
		new[name] = {
			name = name,
			description = description,
			texture = texture,
			stack_max = stack_max,
			kind = KINDS[kind] or "craft",
			voxel = voxel ~= "" and voxel or nil,
		}
	end
	return new_version, new
end

buildat.sub_packet("items:defs", function(data)
	local ok, new_version, new = pcall(decode, data)
	if not ok then
		log:error("malformed items:defs: " .. tostring(new_version))
		return
	end
	defs, version = new, new_version
	local ui = buildat.ui
	if ui ~= nil and ui.define_items ~= nil then
		local shown = {}
		for name, def in pairs(defs) do
			shown[name] = { description = def.description, texture = def.texture, voxel = def.voxel }
		end
		local drawn, err = pcall(ui.define_items, shown)
		if not drawn then
			log:warning("ui.define_items: " .. tostring(err))
		end
	end
	for _, fn in ipairs(change_fns) do
		local called, err = pcall(fn, version)
		if not called then
			log:error("on_change callback failed: " .. tostring(err))
		end
	end
end)

function M.get(name)
	return copy(defs[name])
end

function M.all()
	local out = {}
	for name, def in pairs(defs) do
		out[name] = copy(def)
	end
	return out
end

function M.version()
	return version
end

function M.on_change(fn)
	table.insert(change_fns, fn)
	if version ~= nil then
		local called, err = pcall(fn, version)
		if not called then
			log:error("on_change callback failed: " .. tostring(err))
		end
	end
end

return M
