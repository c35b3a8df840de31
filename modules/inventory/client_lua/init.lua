--! inventory/client_lua/init.lua: the inventory module's client side. The
--! server ships it to every client and runs it; bot scripts and the game's
--! screens get the same instance with `require("buildat/module/inventory")`.
--!
--! Owns: the protocol glue of the `inventory:*` packets (docs/protocol.md
--! §11): the lists the server last sent (`inventory:lists`), craft
--! previews (`inventory:preview`), asking for actions (`inventory:act`)
--! and calling back with their answers (`inventory:answer`); at -v each
--! list as it came (`lists of OWNER LIST: 1=NAME*COUNT ...`). The server
--! decides every move: nothing here changes a list until the server says so.
--! Does not own: drawing (the game's Lua binds `buildat.ui`'s slot grids).
--!
--! Interface returned (owners: "me", "voxel:X,Y,Z"; slots 1-based):
--! list(owner, list) -> { [1..n] = { name, count, wear } or false } | nil,
--! lists(owner) -> { list names, sorted } (empty when none came),
--! on_change(fn(owner, list)), on_preview(fn(owner)) (after each
--! inventory:preview), move(from, to, count, [fn(ok, reason)]) with
--! from/to = { owner, list, index }, drop(from, count, [fn]),
--! craft(grid_owner, to, [fn]), preview(grid_owner) -> { name, count } | nil,
--! open(x, y, z, [fn]) / close(x, y, z), count(name) -> n (in my main list),
--! find(name) -> index | nil, name() -> my account name (after my lists came).

local log = buildat.Logger("inventory")

local M = {}

local OWNER_PLAYER, OWNER_VOXEL, OWNER_MODULE, OWNER_DROP = 0, 1, 2, 3
local ACT_MOVE, ACT_DROP, ACT_CRAFT, ACT_OPEN, ACT_CLOSE = 0, 1, 2, 3, 4
local MAX_PENDING = 1000

-- inventories[owner_key][list] = slots; previews[owner_key] = stack or nil
local inventories, previews = {}, {}
local my_name = nil
local change_fns, preview_fns = {}, {}
local pending, pending_count, seq = {}, 0, 0

local function call_all(fns, ...)
	for _, fn in ipairs(fns) do
		local ok, err = pcall(fn, ...)
		if not ok then
			log:error("callback failed: " .. tostring(err))
		end
	end
end

-- Reads an owner at `at`; its key as the interface names it, and the next
-- offset.
local function read_owner(data, at)
	local kind
	kind, at = string.unpack("<B", data, at)
	if kind == OWNER_PLAYER then
		local name
		name, at = string.unpack("<s1", data, at)
		if my_name == nil then
			-- The server sends a player only its own inventory.
			my_name = name
		end
		if name == my_name then
			return "me", at
		end
		return "player:" .. name, at
	elseif kind == OWNER_VOXEL then
		local x, y, z
		x, y, z, at = string.unpack("<i4i4i4", data, at)
		return string.format("voxel:%d,%d,%d", x, y, z), at
	elseif kind == OWNER_MODULE then
		local module, key
		module, key, at = string.unpack("<s1s1", data, at)
		return "module:" .. module .. ":" .. key, at
	elseif kind == OWNER_DROP then
		local id
		id, at = string.unpack("<I8", data, at)
		return "drop:" .. tostring(id), at
	end
	error("unknown owner kind " .. tostring(kind))
end

-- Reads an optional stack (u8 flag, then s2 name, count, wear, meta).
local function read_stack(data, at)
	local flag
	flag, at = string.unpack("<B", data, at)
	if flag == 0 then
		return false, at
	end
	local name, count, wear, entries
	name, count, wear, entries, at = string.unpack("<s2I2I2I2", data, at)
	local meta = {}
	for _ = 1, entries do
		local key, value
		key, value, at = string.unpack("<s2s2", data, at)
		meta[key] = value
	end
	return { name = name, count = count, wear = wear, meta = meta }, at
end

-- A list in one line: its filled slots as INDEX=NAME*COUNT.
local function describe(list)
	local filled = {}
	for i, stack in ipairs(list) do
		if stack then
			table.insert(filled, i .. "=" .. stack.name .. "*" .. stack.count)
		end
	end
	if #filled == 0 then
		return "empty"
	end
	return table.concat(filled, " ")
end

local function pack_owner(owner)
	if owner == "me" then
		assert(my_name ~= nil, "my inventory has not come yet")
		return string.pack("<Bs1", OWNER_PLAYER, my_name)
	end
	local x, y, z = string.match(owner, "^voxel:(%-?%d+),(%-?%d+),(%-?%d+)$")
	if x ~= nil then
		return string.pack("<Bi4i4i4", OWNER_VOXEL, tonumber(x), tonumber(y), tonumber(z))
	end
	local player = string.match(owner, "^player:(.+)$")
	if player ~= nil then
		return string.pack("<Bs1", OWNER_PLAYER, player)
	end
	error("unknown owner " .. tostring(owner))
end

local function pack_slot(slot)
	assert(type(slot) == "table", "a slot is { owner, list, index }")
	return pack_owner(slot.owner) .. string.pack("<s1I2", slot.list, slot.index - 1)
end

-- Sends an action; `fn(ok, reason)` runs with the server's answer.
local function act(kind, body, fn)
	seq = (seq + 1) % 0x100000000
	if fn ~= nil then
		if pending[seq] == nil then
			pending_count += 1
		end
		pending[seq] = fn
		if pending_count > MAX_PENDING then
			pending, pending_count = { [seq] = fn }, 1
		end
	end
	buildat.send_packet("inventory:act", string.pack("<I4B", seq, kind) .. body)
	return seq
end

buildat.sub_packet("inventory:lists", function(data)
	local ok, err = pcall(function()
		local owner, at = read_owner(data, 1)
		local count
		count, at = string.unpack("<B", data, at)
		local lists = {}
		for _ = 1, count do
			local name, slots
			name, slots, at = string.unpack("<s1I2", data, at)
			local list = {}
			for i = 1, slots do
				list[i], at = read_stack(data, at)
			end
			lists[name] = list
		end
		inventories[owner] = lists
		for name, list in pairs(lists) do
			log:verbose("lists of " .. owner .. " " .. name .. ": " .. describe(list))
			call_all(change_fns, owner, name)
		end
	end)
	if not ok then
		log:error("a bad inventory:lists: " .. tostring(err))
	end
end)

buildat.sub_packet("inventory:preview", function(data)
	local ok, err = pcall(function()
		local owner, at = read_owner(data, 1)
		local stack = read_stack(data, at)
		previews[owner] = stack or nil
		call_all(preview_fns, owner)
	end)
	if not ok then
		log:error("a bad inventory:preview: " .. tostring(err))
	end
end)

buildat.sub_packet("inventory:answer", function(data)
	local n, ok = string.unpack("<I4B", data)
	local reason = string.sub(data, 6)
	local fn = pending[n]
	if ok == 0 then
		-- Whoever asked with a callback hears why; else it is logged.
		if fn == nil then
			log:info("refused: " .. reason)
		else
			log:verbose("refused: " .. reason)
		end
	end
	if fn ~= nil then
		pending[n] = nil
		pending_count -= 1
		local done, err = pcall(fn, ok == 1, reason)
		if not done then
			log:error("callback failed: " .. tostring(err))
		end
	end
end)

function M.name()
	return my_name
end

function M.list(owner, list)
	local lists = inventories[owner]
	if lists == nil then
		return nil
	end
	return lists[list]
end

function M.lists(owner)
	local names = {}
	for name in pairs(inventories[owner] or {}) do
		table.insert(names, name)
	end
	table.sort(names)
	return names
end

function M.on_change(fn)
	table.insert(change_fns, fn)
end

function M.on_preview(fn)
	table.insert(preview_fns, fn)
end

function M.move(from, to, count, fn)
	return act(ACT_MOVE, pack_slot(from) .. pack_slot(to) .. string.pack("<I2", count), fn)
end

function M.drop(from, count, fn)
	return act(ACT_DROP, pack_slot(from) .. string.pack("<I2", count), fn)
end

function M.craft(grid_owner, to, fn)
	return act(ACT_CRAFT, pack_owner(grid_owner) .. pack_slot(to), fn)
end

function M.preview(grid_owner)
	local stack = previews[grid_owner]
	if stack == nil then
		return nil
	end
	return { name = stack.name, count = stack.count }
end

function M.open(x, y, z, fn)
	return act(ACT_OPEN, string.pack("<i4i4i4", x, y, z), fn)
end

function M.close(x, y, z)
	inventories[string.format("voxel:%d,%d,%d", x, y, z)] = nil
	return act(ACT_CLOSE, string.pack("<i4i4i4", x, y, z), nil)
end

function M.count(name)
	local n = 0
	for _, stack in ipairs(M.list("me", "main") or {}) do
		if stack and stack.name == name then
			n += stack.count
		end
	end
	return n
end

function M.find(name)
	for i, stack in ipairs(M.list("me", "main") or {}) do
		if stack and stack.name == name then
			return i
		end
	end
	return nil
end

return M
