--! main/client_lua/init.lua: the default game's client side. The server
--! ships it to every client and runs it with core:run_script; bot scripts
--! and other modules get the same instance with
--! `require("buildat/module/main")`.
--!
--! Owns: the protocol glue of the `main:*` packets (docs/protocol.md §10:
--! join, spawn, move, dig, timed digs (dig_start/dig_time), wield, place,
--! punch, use, node punches and uses, batched edits, ping/pong,
--! refusals, chat, corrections of refused moves), what this player knows (its peer id and
--! position, edits seen; the other players are nodes the server replicates,
--! read from `buildat.nodes`), telling the client's world view where the player
--! is (`buildat.world.set_focus`), a summary line every few seconds, and
--! in a graphical client the controls (`buildat.ui`: movement keys,
--! digging (a left click starts a dig, which completes after its time
--! unless another click or a wield comes first), placing, punching (F
--! held) and using (E held, or the middle button) with the mouse, the
--! hotbar (in survival the inventory's first 8 slots as item slots;
--! else the registry's blocks; number keys and the wheel wield slots
--! 1-8), the chat (T, or / for a command; every chat line shown), the
--! inventory screens (I: the player's; a used chest's or crafting
--! table's; each drag and craft asked of the server, a grid changed only
--! by its lists),
--! other players and every other node (creatures, ...) as boxes, a help
--! line).
--! Does not own: the world itself (the client keeps the voxelworld stream
--! natively: `buildat.world`), or what a bot does (scripts/bots/).
--!
--! Interface returned: position() -> x, y, z (nil before spawning),
--! peer() -> id, move(x, y, z), dig(x, y, z), place(x, y, z, name),
--! punch(x, y, z), use(x, y, z),
--! dig_start(x, y, z, [fn(seconds)]) (seconds < 0: cannot be dug with the
--! wielded item), on_dig_time(fn(x, y, z, seconds)),
--! dig_timed(x, y, z, [fn(ok, seconds)]) (starts, waits the time, digs),
--! wield(i) (hotbar slot 0..7), wielded() -> i,
--! punch_node(id), use_node(id),
--! ping([fn(rtt_seconds, seq)]) -> seq, edits_seen() -> n,
--! players() -> { [peer] = { name, x, y, z, node } } (others only),
--! on_spawn(fn(peer, x, y, z)) (called at once when already spawned),
--! on_edit(fn(who, x, y, z, name)), on_refused(fn(reason)),
--! chat(text) (a line starting with / is a command), on_chat(fn(line))
--! (each main:chat_line, also printed).

local log = buildat.Logger("main")
-- Whether verbose lines are logged (fixed for the session): the hot ones
-- are built only then.
local VERBOSE = log:enabled("verbose")

local SUMMARY_EVERY = 5 -- seconds
local MAX_PENDING_PINGS = 1000

local M = {}

local me = { peer = nil, x = nil, y = nil, z = nil }
local edits = 0
local spawn_fns, edit_fns, refused_fns, chat_fns = {}, {}, {}, {}
local dig_time_fns = {}
-- Callbacks of dig starts waiting for their main:dig_time, by voxel.
local dig_waiting = {}
-- The wielded hotbar slot (0-based, as the server counts).
local wield_index = 0
-- Bumped by every dig start and wield: a timed dig completes only if
-- nothing came between.
local dig_generation = 0
local pings, ping_seq, pending = {}, 0, 0

local function call_all(fns, ...)
	for _, fn in ipairs(fns) do
		local ok, err = pcall(fn, ...)
		if not ok then
			log:error("callback failed: " .. tostring(err))
		end
	end
end

-- The join name: buildat.client_name, else "player"; at most 32 bytes, cut
-- on a character boundary.
local function join_name()
	local name = buildat.client_name
	if type(name) ~= "string" or not string.find(name, "%S") then
		name = "player"
	end
	while #name > 32 do
		local last = utf8.offset(name, -1)
		if last == nil or last <= 1 then
			name = string.sub(name, 1, 32)
			break
		end
		name = string.sub(name, 1, last - 1)
	end
	return name
end

local function set_position(x, y, z)
	me.x, me.y, me.z = x, y, z
	buildat.world.set_focus(x, y, z)
end

local ui = buildat.ui
local graphical = ui.graphical()

local function fmt(v)
	return string.format("%.1f", v)
end

-- A node's player name and peer id (vars `player`, `peer`: 8 bytes,
-- little-endian), or nil when it is not a player.
local function player_of(node)
	local name, peer = node.vars.player, node.vars.peer
	if name == nil or peer == nil or #peer ~= 8 then
		return nil
	end
	return name, string.unpack("<I8", peer)
end

-- Models (docs/client.md "Models"): the players' own, and a creature's
-- when its node names one (var `model`, a client_data file).
local PLAYER_MODEL = "main/client_data/models/player.glb"
-- The last facing drawn per node id (degrees), kept while it stands still.
local facing = {}

-- Places node `id`'s model: facing its orientation (a turn about +y, the
-- unturned node facing +z), or where it walks when it is unturned
-- (players), animated by its velocity.
local function show_model(id, node, file)
	local qx, qy, qz, qw = node.qx or 0, node.qy or 0, node.qz or 0, node.qw or 1
	local vx, vz = node.vx or 0, node.vz or 0
	local yaw = facing[id] or 90
	if qx ~= 0 or qy ~= 0 or qz ~= 0 then
		-- Where the turn takes +z.
		local fx = 2 * (qx * qz + qw * qy)
		local fz = 1 - 2 * (qx * qx + qy * qy)
		yaw = math.deg(math.atan2(fz, fx))
	elseif vx * vx + vz * vz > 0.01 then
		yaw = math.deg(math.atan2(vz, vx))
	end
	facing[id] = yaw
	ui.set_model("node:" .. id, file, node.x, node.y, node.z, yaw, vx, node.vy or 0, vz)
end

-- Every other node as a model (players; creatures naming one) or a box:
-- the rest by their vars `size` (3 little-endian floats: width, height,
-- depth) and `colour` (3 bytes), when they have them.
local function show_node(id)
	if not graphical then
		return
	end
	local node = buildat.nodes.get(id)
	if node == nil then
		return
	end
	local name, peer = player_of(node)
	if name ~= nil then
		if peer ~= me.peer then
			show_model(id, node, PLAYER_MODEL)
		end
		return
	end
	local model = node.vars.model
	if model ~= nil and #model > 0 and #model <= 256 then
		show_model(id, node, model)
		return
	end
	local w, h = 0.8, 0.8
	local size = node.vars.size
	if size ~= nil and #size == 12 then
		w, h = string.unpack("<ff", size)
	end
	local r, g, b = 0.8, 0.8, 0.8
	local colour = node.vars.colour
	if colour ~= nil and #colour == 3 then
		r, g, b = string.byte(colour, 1, 3)
		r, g, b = r / 255, g / 255, b / 255
	end
	ui.set_box("node:" .. id, node.x, node.y, node.z, w, h, r, g, b)
end

-- Players seen, by node id: { name, peer } (to say who left).
local seen_players = {}

buildat.nodes.on_added(function(id)
	local node = buildat.nodes.get(id)
	local name, peer = nil, nil
	if node ~= nil then
		name, peer = player_of(node)
	end
	if name ~= nil and peer ~= me.peer then
		seen_players[id] = { name = name, peer = peer }
		if VERBOSE then -- not formatted for nothing
			log:verbose("player " .. name .. " (peer " .. peer .. ") is at "
				.. fmt(node.x) .. "," .. fmt(node.y) .. "," .. fmt(node.z))
		end
	end
	show_node(id)
end)
-- Only a drawn client follows each change (a bot would pay a call per
-- node per tick for nothing).
if graphical then
	buildat.nodes.on_changed(show_node)
end
buildat.nodes.on_removed(function(id)
	local p = seen_players[id]
	if p ~= nil then
		seen_players[id] = nil
		log:verbose("player " .. p.name .. " (peer " .. p.peer .. ") left")
	end
	if graphical then
		ui.remove_box("node:" .. id)
		ui.remove_model("node:" .. id)
		facing[id] = nil
	end
end)

-- The other players known, as { [peer] = { name, x, y, z, node } }.
local function other_players()
	local found = {}
	for id, node in buildat.nodes.each() do
		local name, peer = player_of(node)
		if name ~= nil and peer ~= me.peer then
			found[peer] = { name = name, x = node.x, y = node.y, z = node.z, node = id }
		end
	end
	return found
end

local function count_of(t)
	local n = 0
	for _ in pairs(t) do
		n += 1
	end
	return n
end

buildat.sub_packet("main:spawn", function(data)
	if #data < 32 then
		log:warning("main:spawn of " .. #data .. " bytes ignored")
		return
	end
	local peer, x, y, z = string.unpack("<I8ddd", data)
	me.peer = peer
	set_position(x, y, z)
	ui.set_position(x, y, z)
	log:info("spawned at " .. fmt(x) .. "," .. fmt(y) .. "," .. fmt(z) .. " as peer " .. peer)
	call_all(spawn_fns, peer, x, y, z)
end)

-- Every edit since the last tick, in order: entries of [<I8i4i4i4s2].
buildat.sub_packet("main:edits", function(data)
	local at = 1
	while at + 21 <= #data do
		local ok, who, x, y, z, name, next_at = pcall(string.unpack, "<I8i4i4i4s2", data, at)
		if not ok then
			log:warning("main:edits: malformed entry at byte " .. at)
			return
		end
		at = next_at
		edits += 1
		-- Every player's edits come here: formatted only when logged.
		if VERBOSE then
			log:verbose("edit by peer " .. who .. ": " .. x .. "," .. y .. "," .. z .. " is now " .. name)
		end
		call_all(edit_fns, who, x, y, z, name)
	end
end)

-- A refused move: the server puts this player back where it last accepted
-- it (docs/protocol.md §10).
buildat.sub_packet("main:correct", function(data)
	if #data < 24 then
		return
	end
	local x, y, z = string.unpack("<ddd", data)
	log:verbose("corrected to " .. fmt(x) .. "," .. fmt(y) .. "," .. fmt(z))
	set_position(x, y, z)
end)

local function voxel_key(x, y, z)
	return math.floor(x) .. "," .. math.floor(y) .. "," .. math.floor(z)
end

-- How long digging a voxel takes with the wielded item: [<i4i4i4f].
buildat.sub_packet("main:dig_time", function(data)
	if #data < 16 then
		log:warning("main:dig_time of " .. #data .. " bytes ignored")
		return
	end
	local x, y, z, seconds = string.unpack("<i4i4i4f", data)
	local key = voxel_key(x, y, z)
	local waiting = dig_waiting[key]
	dig_waiting[key] = nil
	if VERBOSE then
		log:verbose("digging " .. key .. " takes " .. string.format("%.2f", seconds) .. " s")
	end
	if waiting ~= nil then
		call_all(waiting, seconds)
	end
	call_all(dig_time_fns, x, y, z, seconds)
end)

buildat.sub_packet("main:refused", function(data)
	log:warning("refused: " .. data)
	call_all(refused_fns, data)
end)

-- A chat line (someone's message, a command's answer): printed, shown in
-- the chat (a headless client draws nothing) and passed to the on_chat
-- callbacks.
buildat.sub_packet("main:chat_line", function(data)
	log:info("chat: " .. data)
	ui.add_chat_line(data)
	call_all(chat_fns, data)
end)

buildat.sub_packet("main:pong", function(data)
	if #data < 4 then
		return
	end
	local seq = string.unpack("<I4", data)
	local p = pings[seq]
	if p == nil then
		return
	end
	pings[seq] = nil
	pending -= 1
	if p.fn then
		local ok, err = pcall(p.fn, os.clock() - p.sent, seq)
		if not ok then
			log:error("ping callback failed: " .. tostring(err))
		end
	end
end)

local function voxel_args(x, y, z)
	return string.pack("<i4i4i4", math.floor(x), math.floor(y), math.floor(z))
end

function M.position()
	return me.x, me.y, me.z
end

function M.peer()
	return me.peer
end

function M.move(x, y, z)
	buildat.send_packet("main:move", string.pack("<ddd", x, y, z))
	set_position(x, y, z)
end

function M.dig(x, y, z)
	buildat.send_packet("main:dig", voxel_args(x, y, z))
end

function M.place(x, y, z, name)
	buildat.send_packet("main:place", voxel_args(x, y, z) .. name)
end

-- Starts digging a voxel with the wielded item; fn(seconds) when the
-- server says how long it takes (negative: it cannot be dug so).
function M.dig_start(x, y, z, fn)
	dig_generation += 1
	if fn ~= nil then
		local key = voxel_key(x, y, z)
		dig_waiting[key] = dig_waiting[key] or {}
		table.insert(dig_waiting[key], fn)
	end
	buildat.send_packet("main:dig_start", voxel_args(x, y, z))
end

function M.on_dig_time(fn)
	table.insert(dig_time_fns, fn)
end

-- Starts a dig, waits its time and completes it; fn(ok, seconds): ok false
-- when it cannot be dug with the wielded item or something (another dig
-- start, a wield) came between. Whether the voxel went is told by
-- on_edit (or on_refused).
function M.dig_timed(x, y, z, fn)
	M.dig_start(x, y, z, function(seconds)
		local generation = dig_generation
		if seconds < 0 then
			if fn then
				fn(false, seconds)
			end
			return
		end
		buildat.set_timeout(seconds + 0.05, function()
			local ok = generation == dig_generation
			if ok then
				M.dig(x, y, z)
			end
			if fn then
				fn(ok, seconds)
			end
		end)
	end)
end

-- Wields hotbar slot i (0..7) of the inventory's main list.
function M.wield(i)
	i = math.floor(i)
	dig_generation += 1
	wield_index = i
	buildat.send_packet("main:wield", string.pack("<I2", i))
end

function M.wielded()
	return wield_index
end

-- Punching and using a node (a creature, a drop): every module hears of it.
function M.punch_node(id)
	buildat.send_packet("main:punch_node", string.pack("<I8", id))
end

function M.use_node(id)
	buildat.send_packet("main:use_node", string.pack("<I8", id))
end

-- Punching and using a voxel: the server tells its block's module.
function M.punch(x, y, z)
	buildat.send_packet("main:punch", voxel_args(x, y, z))
end

function M.use(x, y, z)
	buildat.send_packet("main:use", voxel_args(x, y, z))
end

-- Sends a main:ping; fn(rtt_seconds, seq) runs when its pong comes back.
function M.ping(fn)
	ping_seq = (ping_seq + 1) % 0x100000000
	if pings[ping_seq] == nil then
		pending += 1
	end
	pings[ping_seq] = { sent = os.clock(), fn = fn }
	if pending > MAX_PENDING_PINGS then
		-- Forget unanswered pings rather than grow without bound.
		pings, pending = { [ping_seq] = pings[ping_seq] }, 1
	end
	buildat.send_packet("main:ping", string.pack("<I4", ping_seq))
	return ping_seq
end

function M.edits_seen()
	return edits
end

function M.players()
	return other_players()
end

function M.on_spawn(fn)
	table.insert(spawn_fns, fn)
	if me.peer ~= nil then
		local ok, err = pcall(fn, me.peer, me.x, me.y, me.z)
		if not ok then
			log:error("callback failed: " .. tostring(err))
		end
	end
end

function M.on_edit(fn)
	table.insert(edit_fns, fn)
end

function M.on_refused(fn)
	table.insert(refused_fns, fn)
end

-- Says text in chat (a line starting with / is a command).
function M.chat(text)
	buildat.send_packet("main:chat", text)
end

function M.on_chat(fn)
	table.insert(chat_fns, fn)
end

-- The summary line: players counts everyone known, this player included.
function M.summary()
	local position = "unknown"
	if me.x ~= nil then
		position = fmt(me.x) .. "," .. fmt(me.y) .. "," .. fmt(me.z)
	end
	local players = count_of(other_players()) + (me.peer ~= nil and 1 or 0)
	return "position " .. position .. "; chunks held " .. buildat.world.chunk_count()
		.. "; edits seen " .. edits .. "; players " .. players
end

-- The controls, when a frontend draws this client. The client moves the
-- player (keys bound to actions) and reports where it went; the rest is
-- the game's.
if graphical then
	-- The inventory and items modules' Lua, when the server runs them
	-- (survival).
	local function optional(name, field)
		local ok, m = pcall(require, "buildat/module/" .. name)
		if not ok or type(m) ~= "table" or m[field] == nil then
			return nil
		end
		return m
	end
	local inv = optional("inventory", "list")
	local items = optional("items", "get")
	for key, action in pairs({ W = "forward", S = "back", A = "left", D = "right", Space = "jump" }) do
		ui.bind(key, action)
	end
	for slot = 1, 9 do
		ui.bind(tostring(slot), function(pressed)
			if pressed then
				ui.select(slot)
				if slot <= 8 then
					M.wield(slot - 1)
				end
			end
		end)
	end
	local function scroll(by)
		return function(pressed)
			local slot = ui.selected()
			if pressed and slot ~= nil then
				ui.select(slot + by)
				local now = ui.selected()
				if now ~= nil and now <= 8 then
					M.wield(now - 1)
				end
			end
		end
	end
	ui.bind("WheelUp", scroll(-1))
	ui.bind("WheelDown", scroll(1))
	-- A key tells no target: F and E, held, make a left click punch or use.
	local held = {}
	for _, key in ipairs({ "E", "F" }) do
		ui.bind(key, function(pressed)
			held[key] = pressed
		end)
	end

	-- The chat: T opens the line, / opens it starting with "/" (a
	-- command); a line typed is said (main:chat), every main:chat_line is
	-- shown (above, in its handler).
	ui.bind("T", function(pressed)
		if pressed then
			ui.open_chat()
		end
	end)
	ui.bind("Slash", function(pressed)
		if pressed then
			ui.open_chat("/")
		end
	end)
	ui.on_chat(function(text)
		if string.find(text, "%S") then
			M.chat(text)
		end
	end)

	-- The inventory screens (survival): I opens the player's own (its
	-- main list, 4 x 8, the first row the hotbar, beside its 2 x 2 craft
	-- grid and what that makes); using a voxel with an inventory (a
	-- chest, a crafting table) opens that voxel's above the player's main
	-- list. The grids show only what the server sent: a drag asks the
	-- server (inv.move, inv.craft) and the grid changes when its
	-- inventory:lists comes (update_slots).
	--
	-- Grid ids: OWNER .. "/" .. LIST (OWNER "me" or "voxel:X,Y,Z"), a craft
	-- result OWNER .. "/=>", and "hotbar" (the first 8 of me/main).
	local RESULT = "=>"
	local screens = {} -- screen id -> { grids = { grid ids }, owner = voxel owner or nil }
	local grids = {} -- grid id -> { owner, list, result = bool, screens = n }

	-- A list as a grid's slots (1-based, false for empty).
	local function shown(list, first, last)
		local out = {}
		for i = first or 1, last or #list do
			local stack = list[i]
			if stack then
				table.insert(out, { name = stack.name, count = stack.count, wear = stack.wear })
			else
				table.insert(out, false)
			end
		end
		return out
	end

	local function preview_slots(owner)
		local stack = inv.preview(owner)
		if stack == nil then
			return { false }
		end
		return { { name = stack.name, count = stack.count, wear = 0 } }
	end

	local function slots_of(grid_id)
		local grid = grids[grid_id]
		if grid.result then
			return preview_slots(grid.owner)
		end
		return shown(inv.list(grid.owner, grid.list) or {})
	end

	-- Where a moved-to or crafted-into slot is in the server's terms.
	local function slot_ref(grid_id, index)
		if grid_id == "hotbar" then
			return { owner = "me", list = "main", index = index }
		end
		local grid = grids[grid_id]
		if grid == nil or grid.result then
			return nil
		end
		return { owner = grid.owner, list = grid.list, index = index }
	end

	local function describe(ref)
		return ref.owner .. " " .. ref.list .. " " .. ref.index
	end

	-- The first slot of my main list that takes a craft's result: the
	-- same item with room, else an empty one.
	local function craft_target(owner)
		local result = inv.preview(owner)
		local main = inv.list("me", "main") or {}
		if result ~= nil then
			local def = items and items.get(result.name)
			local max = def and def.stack_max or 99
			for i, stack in ipairs(main) do
				if stack and stack.name == result.name and stack.wear == 0
					and next(stack.meta or {}) == nil and stack.count + result.count <= max then
					return { owner = "me", list = "main", index = i }
				end
			end
		end
		for i, stack in ipairs(main) do
			if not stack then
				return { owner = "me", list = "main", index = i }
			end
		end
		return nil
	end

	local function answered(what)
		return function(ok, reason)
			if ok then
				log:verbose(what .. ": done")
			else
				log:info(what .. ": refused: " .. tostring(reason))
			end
		end
	end

	local function craft(owner, to)
		if to == nil then
			log:info("craft: no room in the inventory")
			return
		end
		inv.craft(owner, to, answered("craft " .. owner .. " into " .. describe(to)))
	end

	-- A stack dragged onto a slot: a move, or a craft when it came from a
	-- result.
	local function on_move(from_id, from_index, to_id, to_index, count)
		local to = slot_ref(to_id, to_index)
		if to == nil then
			return
		end
		local from_grid = grids[from_id]
		if from_grid ~= nil and from_grid.result then
			craft(from_grid.owner, to)
			return
		end
		local from = slot_ref(from_id, from_index)
		if from == nil then
			return
		end
		if count == nil then
			local stack = (inv.list(from.owner, from.list) or {})[from.index]
			if not stack then
				return
			end
			count = stack.count
		end
		local what = "move " .. describe(from) .. " -> " .. describe(to) .. " (" .. count .. ")"
		inv.move(from, to, count, answered(what))
	end

	-- Adds a list's grid (and, for a craft list, its result) to `widgets`
	-- at row y; the rows it takes.
	local function add_grid(widgets, screen_grids, owner, list, x, y)
		local slots = inv.list(owner, list) or {}
		local columns = 8
		if list == "craft" then
			columns = math.max(1, math.floor(math.sqrt(#slots) + 0.5))
		end
		local id = owner .. "/" .. list
		grids[id] = grids[id] or { owner = owner, list = list }
		table.insert(screen_grids, id)
		table.insert(widgets, {
			kind = "slots", id = id, x = x, y = y, columns = columns,
			slots = shown(slots), on_move = on_move,
		})
		local rows = math.max(1, math.ceil(#slots / columns))
		if list == "craft" then
			local result = owner .. "/" .. RESULT
			grids[result] = grids[result] or { owner = owner, list = list, result = true }
			table.insert(screen_grids, result)
			table.insert(widgets, { kind = "label", x = x + columns + 0.25, y = y + (rows - 1) / 2, text = "->" })
			table.insert(widgets, {
				kind = "slots", id = result, x = x + columns + 1, y = y + (rows - 1) / 2, columns = 1,
				slots = preview_slots(owner), on_move = on_move,
				on_click = function()
					craft(owner, craft_target(owner))
				end,
			})
			return rows, columns + 2
		end
		return rows, columns
	end

	local function forget_screen(id)
		local screen = screens[id]
		if screen == nil then
			return
		end
		screens[id] = nil
		if screen.voxel ~= nil then
			local v = screen.voxel
			inv.close(v[1], v[2], v[3])
		end
		log:verbose("screen " .. id .. " closed")
	end

	local function close_screen(id)
		if screens[id] ~= nil then
			ui.close_screen(id)
			forget_screen(id)
		end
	end

	local function show_screen(id, title, widgets, screen_grids, columns, rows, voxel)
		screens[id] = { grids = screen_grids, voxel = voxel }
		ui.open_screen(id, {
			title = title, columns = columns, rows = rows, widgets = widgets,
			on_close = function()
				forget_screen(id)
			end,
		})
		log:verbose("screen " .. id .. " opened")
	end

	-- The player's own screen: main beside craft.
	local function open_inventory()
		if inv.list("me", "main") == nil then
			return
		end
		local widgets, screen_grids = {}, {}
		local rows = add_grid(widgets, screen_grids, "me", "main", 0, 0)
		local craft_rows, craft_columns = 0, 0
		if inv.list("me", "craft") ~= nil then
			craft_rows, craft_columns = add_grid(widgets, screen_grids, "me", "craft", 9, 0)
		end
		show_screen("inventory", "Inventory", widgets, screen_grids,
			9 + craft_columns, math.max(rows, craft_rows))
	end

	-- A voxel's screen, once the server let the player open it: each of
	-- its lists, then the player's main list below.
	local function open_voxel(x, y, z)
		local owner = string.format("voxel:%d,%d,%d", x, y, z)
		local name = buildat.world.get_voxel(x, y, z) or "inventory"
		inv.open(x, y, z, function(ok)
			if not ok then
				return
			end
			for id in pairs(screens) do
				close_screen(id)
			end
			local widgets, screen_grids = {}, {}
			local row, width = 0, 8
			for _, list in ipairs(inv.lists(owner)) do
				local rows, columns = add_grid(widgets, screen_grids, owner, list, 0, row)
				row += rows + 0.5
				width = math.max(width, columns)
			end
			local rows = add_grid(widgets, screen_grids, "me", "main", 0, row)
			show_screen(owner, (string.gsub(name, "_", " ")), widgets, screen_grids, width,
				row + rows, { x, y, z })
		end)
	end

	if inv ~= nil then
		ui.bind("I", function(pressed)
			if not pressed then
				return
			end
			-- I closes whatever inventory screen is open, else opens the
			-- player's.
			if next(screens) ~= nil then
				for id in pairs(screens) do
					close_screen(id)
				end
			else
				open_inventory()
			end
		end)
		-- Every list change and preview reaches the grids showing it.
		local function refresh(owner, list)
			for _, id in ipairs({ owner .. "/" .. list, owner .. "/" .. RESULT }) do
				if grids[id] ~= nil then
					for _, screen in pairs(screens) do
						if table.find(screen.grids, id) then
							ui.update_slots(id, slots_of(id))
							break
						end
					end
				end
			end
		end
		inv.on_change(refresh)
		inv.on_preview(function(owner)
			refresh(owner, RESULT)
		end)
	end

	ui.on_click(function(button, target)
		if target == nil then
			return
		end
		if button == "middle" or (button == "left" and held.E) then
			M.use(target.x, target.y, target.z)
			if inv ~= nil then
				open_voxel(target.x, target.y, target.z)
			end
		elseif button == "left" and held.F then
			M.punch(target.x, target.y, target.z)
		elseif button == "left" then
			-- Creative digs answer 0 s: the dig follows at once.
			M.dig_timed(target.x, target.y, target.z)
		elseif button == "right" then
			local _, name = ui.selected()
			-- In survival the wielded stack is what is placed.
			if inv ~= nil then
				local slots = inv.list("me", "main")
				local stack = slots and slots[wield_index + 1]
				if stack then
					name = stack.name
				end
			end
			local b = target.before
			if name ~= nil then
				M.place(b.x, b.y, b.z, name)
			end
		end
	end)
	ui.on_move(function(x, y, z)
		M.move(x, y, z)
	end)
	-- The hotbar: in survival the first 8 slots of the inventory's main
	-- list (item slots with icons and counts) once it holds anything; else
	-- the registry's blocks, once the registry arrives (the client has
	-- taken it in before subscribers see it): creative, or a game without
	-- items.
	local hotbar_from_inventory = false
	local function show_inventory_hotbar()
		local slots = inv and inv.list("me", "main")
		if slots == nil then
			return
		end
		local any = false
		for i = 1, 8 do
			if slots[i] then
				any = true
			end
		end
		if any or hotbar_from_inventory then
			hotbar_from_inventory = true
			ui.set_hotbar_slots(shown(slots, 1, 8))
		end
	end
	if inv ~= nil then
		inv.on_change(function(owner, list)
			if owner == "me" and list == "main" then
				show_inventory_hotbar()
			end
		end)
	end
	buildat.sub_packet("voxelworld:registry", function()
		if not hotbar_from_inventory then
			ui.set_hotbar(buildat.world.block_names())
		end
	end)
	ui.set_text("1 help", "WASD move  SPACE jump  LMB dig (wait)  F+LMB punch  E+LMB/MMB use  RMB place  1-9/WHEEL block  "
		.. "T chat  / command  I inventory  ESC mouse")
	buildat.set_interval(1, function()
		ui.set_text("2 players", "players " .. (count_of(other_players()) + (me.peer ~= nil and 1 or 0)))
	end)
end

buildat.set_interval(SUMMARY_EVERY, function()
	log:info(M.summary())
end)

buildat.send_packet("main:join", join_name())

return M
