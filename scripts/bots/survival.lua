--! survival.lua: a buildat-client bot (`--script scripts/bots/survival.lua`)
--! that plays the default game's survival loop (issue 45) against a real
--! server and proves it:
--!
--! 1. finds a tree in the chunks it holds (`buildat.world`) and goes next
--!    to it (`/tp`: it needs `teleport`, and `fly` helps);
--! 2. punches wood by hand (timed digs: `main:dig_start`, `main:dig_time`,
--!    `main:dig`), three pieces;
--! 3. crafts planks and sticks in its own 2×2 grid, a crafting table,
--!    places it, and crafts a wooden pickaxe on its 3×3 grid;
--! 4. digs down to stone and mines three with the pickaxe, printing the
--!    hand's time (stone cannot be dug by hand: the server answers a
--!    negative time) and the pickaxe's (the server's and the measured one);
--! 5. crafts a stone pickaxe at the table;
--! 6. places blocks from its inventory, the count going down;
--! 7. prints its inventory and waits for the server to restart (the
--!    connection then ends: exit 5, the loop is only half proven).
--!
--! Run again after the restart under the same name, it finds its inventory
--! again (a stone pickaxe among it), prints it and exits 0: the only way it
--! exits 0. A failure prints `survival: FAILED: why` and leaves through a
--! malformed packet (the server drops it: exit 5), as a script has no exit
--! code of its own. Item names are read from the crafting previews, not
--! assumed. Uses the game's client modules `main` and `inventory`.

local main = require("buildat/module/main")
local inv = require("buildat/module/inventory")
local log = buildat.Logger("survival")

local WOOD = "wood"
local STONE = "stone"
local ME = "me"

local co = nil
local failed = false

local function fail(why)
	if failed then
		return
	end
	failed = true
	log:error("FAILED: " .. tostring(why))
	-- No exit code for scripts: a malformed packet makes the server drop
	-- this client, which then exits 5.
	buildat.send_packet("main:place", "\255")
end

local function resume(...)
	if co == nil or coroutine.status(co) ~= "suspended" then
		return
	end
	local ok, err = coroutine.resume(co, ...)
	if not ok then
		fail(err)
	end
end

local function sleep(seconds)
	buildat.set_timeout(seconds, function()
		resume()
	end)
	coroutine.yield()
end

-- Runs start(cb) and waits for cb's arguments (nil, "timeout" after
-- `timeout` seconds).
local function await(start, timeout)
	local fired = false
	local timer = nil
	start(function(...)
		if fired then
			return
		end
		fired = true
		if timer then
			buildat.clear_timer(timer)
		end
		resume(...)
	end)
	if not fired then
		timer = buildat.set_timeout(timeout or 30, function()
			if not fired then
				fired = true
				resume(nil, "timeout")
			end
		end)
	end
	return coroutine.yield()
end

local function wait_until(what, pred, timeout)
	local deadline = os.clock() + (timeout or 30)
	while not pred() do
		if os.clock() > deadline then
			error("timed out waiting for " .. what, 0)
		end
		sleep(0.1)
	end
end

local function voxel(x, y, z)
	return buildat.world.get_voxel(x, y, z)
end

local function count(name)
	return inv.count(name)
end

-- Every stack of my main list, "name×count" sorted, for the log.
local function inventory_line()
	local totals = {}
	for _, stack in ipairs(inv.list(ME, "main") or {}) do
		if stack then
			totals[stack.name] = (totals[stack.name] or 0) + stack.count
		end
	end
	local parts = {}
	for name, n in pairs(totals) do
		table.insert(parts, name .. "x" .. n)
	end
	table.sort(parts)
	return table.concat(parts, ",")
end

local function empty_main_slot(from, to)
	local slots = inv.list(ME, "main") or {}
	for i = from or 1, to or #slots do
		if slots[i] == false then
			return i
		end
	end
	return nil
end

local function slot_ref(owner, list, index)
	return { owner = owner, list = list, index = index }
end

local function move(from, to, n)
	local ok, reason = await(function(cb)
		inv.move(from, to, n, cb)
	end)
	if not ok then
		error("moving " .. n .. " from " .. from.list .. " " .. from.index .. " to " .. to.owner
			.. " " .. to.list .. " " .. to.index .. ": " .. tostring(reason), 0)
	end
end

-- Moves n of `name` from my main list into slot `index` of `owner`'s `list`.
local function put(name, n, owner, list, index)
	local from = inv.find(name)
	if from == nil then
		error("no " .. name .. " to put into " .. list, 0)
	end
	move(slot_ref(ME, "main", from), slot_ref(owner, list, index), n)
end

-- Crafts `times` on `grid` into my main list; the output's name.
local function craft(grid, times, what)
	-- The preview of the grid as it is now, not as it was a move ago.
	sleep(0.5)
	wait_until("a preview of " .. what, function()
		return inv.preview(grid) ~= nil
	end, 10)
	local name = inv.preview(grid).name
	for _ = 1, times do
		local to = inv.find(name) or empty_main_slot(9)
		if to == nil then
			error("no room for " .. name, 0)
		end
		local before = count(name)
		local ok, reason = await(function(cb)
			inv.craft(grid, slot_ref(ME, "main", to), cb)
		end)
		if not ok then
			error("crafting " .. what .. ": " .. tostring(reason), 0)
		end
		wait_until(name .. " in my inventory", function()
			return count(name) > before
		end, 10)
	end
	log:info("crafted " .. what .. " (" .. name .. "): now " .. count(name))
	return name
end

-- Puts the stack of `name` into a hotbar slot and wields it (nil: an
-- empty hotbar slot, the hand).
local function wield(name)
	local index
	if name == nil then
		index = empty_main_slot(1, 8)
	else
		index = inv.find(name)
		if index ~= nil and index > 8 then
			local free = empty_main_slot(1, 8)
			if free == nil then
				error("no free hotbar slot for " .. name, 0)
			end
			move(slot_ref(ME, "main", index), slot_ref(ME, "main", free), inv.list(ME, "main")[index].count)
			index = free
		end
	end
	if index == nil then
		error("nothing to wield for " .. tostring(name), 0)
	end
	main.wield(index - 1)
	sleep(0.2)
end

-- A timed dig: the server's seconds (nil when it cannot be dug with what
-- is wielded) and the measured seconds from start to the voxel gone.
local function dig(x, y, z)
	local started = os.clock()
	local seconds = await(function(cb)
		main.dig_start(x, y, z, cb)
	end, 10)
	if seconds == nil then
		error("no main:dig_time for " .. x .. "," .. y .. "," .. z, 0)
	end
	if seconds < 0 then
		return nil
	end
	sleep(seconds + 0.05)
	main.dig(x, y, z)
	wait_until("the dug voxel to go", function()
		return voxel(x, y, z) == "air"
	end, 10)
	return seconds, os.clock() - started
end

local function place(x, y, z, name)
	main.place(x, y, z, name)
	wait_until(name .. " placed at " .. x .. "," .. y .. "," .. z, function()
		return voxel(x, y, z) == name
	end, 10)
end

local function teleport(x, y, z)
	main.chat(string.format("/tp %.2f %.2f %.2f", x, y, z))
	wait_until("the teleport", function()
		local px, py, pz = main.position()
		return px ~= nil and math.abs(px - x) < 0.1 and math.abs(py - y) < 0.1 and math.abs(pz - z) < 0.1
	end, 10)
	sleep(0.3)
end

-- The lowest wood voxel of a trunk with room to stand beside it: x, y, z
-- and the side (dx, dz); nil when none is held within `radius` columns.
local function find_tree(cx, cy, cz, radius)
	local looked = 0
	for r = 0, radius do
		for dx = -r, r do
			for dz = -r, r do
				if math.max(math.abs(dx), math.abs(dz)) == r then
					local x, z = cx + dx, cz + dz
					for y = cy + 24, cy - 24, -1 do
						local name = voxel(x, y, z)
						if name == WOOD then
							local bottom = y
							while voxel(x, bottom - 1, z) == WOOD do
								bottom -= 1
							end
							for _, side in ipairs({ { 1, 0 }, { -1, 0 }, { 0, 1 }, { 0, -1 } }) do
								local sx, sz = x + side[1], z + side[2]
								if voxel(sx, bottom, sz) == "air" and voxel(sx, bottom + 1, sz) == "air"
									and voxel(x, bottom + 1, z) == WOOD and voxel(x, bottom + 2, z) == WOOD then
									return x, bottom, z, side[1], side[2]
								end
							end
							break
						elseif name ~= nil and name ~= "air" and name ~= "leaves" and name ~= "pine_leaves" then
							break
						end
					end
					looked += 1
					if looked % 400 == 0 then
						sleep(0)
					end
				end
			end
		end
	end
	return nil
end

local function phase_two()
	local line = inventory_line()
	log:info("inventory: " .. line)
	local has_stone_pick = false
	for _, stack in ipairs(inv.list(ME, "main") or {}) do
		if stack and string.find(stack.name, "pick") and string.find(stack.name, "stone") then
			has_stone_pick = true
		end
	end
	if not has_stone_pick then
		error("my inventory after the restart holds no stone pickaxe: " .. line, 0)
	end
	log:info("found my inventory again after a restart")
	log:info("done")
	buildat.disconnect()
end

local function play()
	wait_until("spawning and my inventory", function()
		return main.position() ~= nil and inv.list(ME, "main") ~= nil
	end, 120)
	if inventory_line() ~= "" then
		return phase_two()
	end
	local sx, sy, sz = main.position()
	sx, sy, sz = math.floor(sx), math.floor(sy), math.floor(sz)
	log:info("spawned at " .. sx .. "," .. sy .. "," .. sz .. " with an empty inventory")

	-- 1. A tree.
	local tx, ty, tz, dx, dz
	for attempt = 0, 5 do
		local cx = sx + attempt * 96
		if attempt > 0 then
			teleport(cx + 0.5, sy + 20, sz + 0.5)
		end
		local last, still = -1, 0
		wait_until("the world around me", function()
			local n = buildat.world.chunk_count()
			if n == last then
				still += 1
			else
				last, still = n, 0
			end
			return n >= 8 and still >= 15
		end, 120)
		tx, ty, tz, dx, dz = find_tree(cx, sy, sz, 60)
		if tx ~= nil then
			break
		end
		log:info("no tree near " .. cx .. "," .. sz .. "; looking further")
	end
	if tx == nil then
		error("found no tree", 0)
	end
	log:info("a tree at " .. tx .. "," .. ty .. "," .. tz)
	teleport(tx + dx + 0.5, ty, tz + dz + 0.5)

	-- 2. Wood by hand: the two lowest from beside the trunk, then one from
	-- inside it, looking up.
	wield(nil)
	local wood_seconds, wood_measured = nil, nil
	for i, at in ipairs({ { tx, ty, tz }, { tx, ty + 1, tz }, { tx, ty + 2, tz } }) do
		if i == 3 then
			main.move(tx + 0.5, ty, tz + 0.5)
			sleep(0.3)
		end
		local before = count(WOOD)
		local seconds, measured = dig(at[1], at[2], at[3])
		if seconds == nil then
			error("wood cannot be dug by hand", 0)
		end
		wood_seconds, wood_measured = seconds, measured
		wait_until("wood in my inventory", function()
			return count(WOOD) > before
		end, 10)
	end
	log:info(string.format("punched 3 wood by hand (%.2f s each, measured %.2f s)", wood_seconds, wood_measured))

	-- 3. Planks, sticks and a crafting table in my 2x2 grid.
	put(WOOD, 3, ME, "craft", 1)
	local planks = craft(ME, 3, "planks")
	put(planks, 1, ME, "craft", 1)
	put(planks, 1, ME, "craft", 3)
	local sticks = craft(ME, 1, "sticks")
	for i = 1, 4 do
		put(planks, 1, ME, "craft", i)
	end
	local table_name = craft(ME, 1, "a crafting table")
	-- The table where I stood beside the trunk.
	local bx, by, bz = tx + dx, ty, tz + dz
	wield(table_name)
	local tables = count(table_name)
	place(bx, by, bz, table_name)
	wait_until("the table out of my inventory", function()
		return count(table_name) == tables - 1
	end, 10)
	local grid = string.format("voxel:%d,%d,%d", bx, by, bz)
	local ok, reason = await(function(cb)
		inv.open(bx, by, bz, cb)
	end)
	if not ok then
		error("opening the crafting table: " .. tostring(reason), 0)
	end
	wait_until("the table's grid", function()
		return inv.list(grid, "craft") ~= nil
	end, 10)
	-- A pickaxe: three across the top, a stick below the middle, twice.
	local function pickaxe(material, what)
		for i = 1, 3 do
			put(material, 1, grid, "craft", i)
		end
		put(sticks, 1, grid, "craft", 5)
		put(sticks, 1, grid, "craft", 8)
		return craft(grid, 1, what)
	end
	local wood_pick = pickaxe(planks, "a wooden pickaxe")

	-- 4. Down to stone, then stone: by hand (the server says how long) and
	-- with the pickaxe.
	wield(wood_pick)
	local fy = ty
	for _ = 1, 16 do
		local below = voxel(tx, fy - 1, tz)
		if below == STONE then
			break
		end
		if below == nil then
			error("the voxel below me is not held", 0)
		end
		if below ~= "air" and dig(tx, fy - 1, tz) == nil then
			error(below .. " below me cannot be dug", 0)
		end
		fy -= 1
		main.move(tx + 0.5, fy, tz + 0.5)
		sleep(0.3)
	end
	if voxel(tx, fy - 1, tz) ~= STONE then
		error("no stone below the tree", 0)
	end
	wield(nil)
	local hand = await(function(cb)
		main.dig_start(tx, fy - 1, tz, cb)
	end, 10)
	if hand == nil then
		error("no dig time for stone by hand", 0)
	end
	local hand_text = hand < 0 and "cannot be dug (the server answers " .. hand .. ")"
		or string.format("%.2f s", hand)
	log:info("stone by hand: " .. hand_text)
	wield(wood_pick)
	local mined, cobble = 0, nil
	for _ = 1, 3 do
		local before = inventory_line()
		local seconds, measured = dig(tx, fy - 1, tz)
		if seconds == nil then
			error("stone cannot be dug with " .. wood_pick, 0)
		end
		if hand >= 0 and seconds >= hand then
			error(string.format("the pickaxe (%.2f s) is not faster than the hand (%.2f s)", seconds, hand), 0)
		end
		log:info(string.format("stone with %s: %.2f s (measured %.2f s)", wood_pick, seconds, measured))
		wait_until("the stone's drop", function()
			return inventory_line() ~= before
		end, 10)
		if cobble == nil then
			-- The drop: the item of which I hold more now.
			for _, stack in ipairs(inv.list(ME, "main") or {}) do
				if stack and stack.name ~= wood_pick and not string.find(before, stack.name .. "x", 1, true) then
					cobble = stack.name
				end
			end
		end
		mined += 1
		fy -= 1
		main.move(tx + 0.5, fy, tz + 0.5)
		sleep(0.3)
		if voxel(tx, fy - 1, tz) ~= STONE then
			break
		end
	end
	if cobble == nil or count(cobble) < 3 then
		error("mined " .. mined .. " stone but hold " .. inventory_line(), 0)
	end
	log:info("mined " .. mined .. " stone into " .. count(cobble) .. " " .. cobble)

	-- 5. A stone pickaxe at the table.
	teleport(tx + 0.5, ty, tz + 0.5)
	local stone_pick = pickaxe(cobble, "a stone pickaxe")

	-- 6. Placing from my inventory: planks, beside and above me.
	wield(planks)
	local placed = 0
	for _, at in ipairs({ { bx, by + 1, bz }, { tx, ty + 2, tz }, { tx - dx, ty, tz - dz }, { tx - dx, ty + 1, tz - dz } }) do
		if placed < 2 and voxel(at[1], at[2], at[3]) == "air" then
			local before = count(planks)
			place(at[1], at[2], at[3], planks)
			wait_until("the count going down", function()
				return count(planks) == before - 1
			end, 10)
			log:info("placed " .. planks .. " from my inventory: " .. before .. " -> " .. count(planks))
			placed += 1
		end
	end
	if placed < 2 then
		error("found no place for planks", 0)
	end

	log:info(stone_pick .. " crafted")
	log:info("inventory: " .. inventory_line())
	log:info("waiting for a server restart")
end

co = coroutine.create(function()
	local ok, err = pcall(play)
	if not ok then
		fail(err)
	end
end)
main.on_spawn(function()
	buildat.set_timeout(0.5, function()
		resume()
	end)
end)
