--! living.lua: a buildat-client bot (`--script scripts/bots/living.lua`)
--! that proves the living world (issue 46) against a real server running
--! the default game with `active`, `liquid`, `health` and `daytime`:
--!
--! 1. places dirt on lit grass and sees the grass spread onto it (the
--!    survival module's active-voxel rule; fast with
--!    `survival.grass_seconds=1`, `survival.grass_chance=1`);
--! 2. finds a lake's bank (water with air above, beside dirt, sand or
--!    grass at the water's level with air above it), digs two voxels of
--!    it and watches the water flow into them and stop;
--! 3. takes a source with a bucket (`bucket` becomes `bucket_water`);
--! 4. sees the time of day move (two `daytime:time` packets), then prints
--!    `living: waiting for night` (its runner types `time 23:00` on the
--!    server's console) and sees night fall;
--! 5. falls 12 voxels and takes fall damage, falls 30 and dies, asks to
--!    respawn and is back at full health.
--!
--! It needs `teleport`, `fly` and `fast` (the runner's
--! `main.default_privileges`) and, from the console, a `bucket` and dirt
--! (`give living bucket`, `give living dirt 4`, typed when it prints
--! `living: spawned`). It exits 0 only when all of it worked
--! (`living: done`); a failure prints `living: FAILED: why` and leaves
--! through a malformed packet (the server drops it: exit 5), as a script
--! has no exit code of its own.

local main = require("buildat/module/main")
local inv = require("buildat/module/inventory")
local health = require("buildat/module/health")
local daytime = require("buildat/module/daytime")
local log = buildat.Logger("living")

local ME = "me"
local co = nil
local failed = false

local function fail(why)
	if failed then
		return
	end
	failed = true
	log:error("FAILED: " .. tostring(why))
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

local function is_water(name)
	return name == "water" or name == "water_flowing"
end

local function fmt(x, y, z)
	return string.format("%d,%d,%d", x, y, z)
end

local function teleport(x, y, z)
	main.chat(string.format("/tp %.2f %.2f %.2f", x, y, z))
	wait_until("the teleport to " .. fmt(x, y, z), function()
		local px, py, pz = main.position()
		return px ~= nil and math.abs(px - x) < 0.1 and math.abs(py - y) < 0.1 and math.abs(pz - z) < 0.1
	end, 10)
	sleep(0.3)
end

local function world_settled()
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
end

-- The y of the highest solid-looking voxel of column x, z within 40 of
-- `around` (nil when the column is not held or all air).
local function ground(x, z, around)
	for y = around + 40, around - 40, -1 do
		local name = voxel(x, y, z)
		if name ~= nil and name ~= "air" and not is_water(name) then
			return y, name
		end
	end
	return nil
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

-- Puts the stack of `name` into a hotbar slot and wields it.
local function wield(name)
	local index = inv.find(name)
	if index == nil then
		error("nothing to wield for " .. name, 0)
	end
	if index > 8 then
		local free = empty_main_slot(1, 8)
		if free == nil then
			error("no free hotbar slot for " .. name, 0)
		end
		local ok = nil
		inv.move({ owner = ME, list = "main", index = index }, { owner = ME, list = "main", index = free },
			inv.list(ME, "main")[index].count, function(done)
				ok = done
			end)
		wait_until("moving " .. name .. " to the hotbar", function()
			return ok ~= nil
		end, 10)
		index = free
	end
	main.wield(index - 1)
	sleep(0.3)
end

-- A timed dig by hand or with what is wielded; errors when it cannot.
local function dig(x, y, z)
	local done, ok_dig = false, false
	main.dig_timed(x, y, z, function(ok)
		done, ok_dig = true, ok
	end)
	wait_until("digging " .. fmt(x, y, z), function()
		return done
	end, 20)
	if not ok_dig then
		error("could not dig " .. fmt(x, y, z) .. " (" .. tostring(voxel(x, y, z)) .. ")", 0)
	end
	wait_until("the dug voxel to go", function()
		return voxel(x, y, z) ~= nil and voxel(x, y, z) ~= "dirt" and voxel(x, y, z) ~= "sand"
			and voxel(x, y, z) ~= "grass"
	end, 10)
end

-- 1. Grass spreading onto placed dirt.
local function grass(sx, sy, sz)
	for r = 1, 12 do
		for dx = -r, r do
			for dz = -r, r do
				local x, z = sx + dx, sz + dz
				local g, name = ground(x, z, sy)
				if name == "grass" and voxel(x, g + 1, z) == "air" and voxel(x, g + 2, z) == "air"
					and voxel(x, g + 3, z) == "air" then
					wield("dirt")
					main.place(x, g + 1, z, "dirt")
					-- The voxel was air: dirt, or grass already spread onto
					-- it (a test's grass spreads every second, and a busy
					-- machine can look only after both), proves the place.
					wait_until("my dirt at " .. fmt(x, g + 1, z), function()
						local now = voxel(x, g + 1, z)
						return now == "dirt" or now == "grass"
					end, 10)
					log:info("placed dirt on grass at " .. fmt(x, g + 1, z))
					wait_until("grass on my dirt", function()
						return voxel(x, g + 1, z) == "grass"
					end, 90)
					log:info("grass spread onto the dirt I placed at " .. fmt(x, g + 1, z))
					return
				end
			end
		end
	end
	error("no lit grass near spawn", 0)
end

-- A bank: water at (x, w, z) with air above, and beside it (x + dx, w,
-- z + dz) a diggable voxel with air above.
local DIGGABLE = { dirt = true, sand = true, grass = true }

local function find_bank(cx, cy, cz, radius)
	local looked = 0
	for r = 0, radius do
		for dx = -r, r do
			for dz = -r, r do
				if math.max(math.abs(dx), math.abs(dz)) == r then
					local x, z = cx + dx, cz + dz
					for y = cy + 20, cy - 60, -1 do
						local name = voxel(x, y, z)
						if name == "water" and voxel(x, y + 1, z) == "air" then
							for _, side in ipairs({ { 1, 0 }, { -1, 0 }, { 0, 1 }, { 0, -1 } }) do
								local bx, bz = x + side[1], z + side[2]
								if DIGGABLE[voxel(bx, y, bz) or ""] and voxel(bx, y + 1, bz) == "air"
									and voxel(bx, y + 2, bz) == "air" then
									return x, y, z, side[1], side[2]
								end
							end
							break
						elseif name ~= nil and name ~= "air" then
							break
						end
					end
					looked += 1
					if looked % 300 == 0 then
						sleep(0)
					end
				end
			end
		end
	end
	return nil
end

-- Every voxel within 3 of (x, y, z) on its level and one below, as text.
local function snapshot(x, y, z)
	local parts = {}
	for dx = -3, 3 do
		for dz = -3, 3 do
			for dy = -1, 0 do
				table.insert(parts, tostring(voxel(x + dx, y + dy, z + dz)))
			end
		end
	end
	return table.concat(parts, ",")
end

-- 2 and 3. A lake's bank, the flow, a bucket. Looks around the spawn,
-- then teleports on a square spiral (96 voxels a step) until it holds one.
local function lake(sx, sy, sz)
	local wx, wy, wz, dx, dz
	local spots = { { 0, 0 } }
	for ring = 1, 2 do
		for i = -ring, ring do
			for j = -ring, ring do
				if math.max(math.abs(i), math.abs(j)) == ring then
					table.insert(spots, { i * 96, j * 96 })
				end
			end
		end
	end
	for _, spot in ipairs(spots) do
		local cx, cz = sx + spot[1], sz + spot[2]
		if spot[1] ~= 0 or spot[2] ~= 0 then
			teleport(cx + 0.5, sy + 30, cz + 0.5)
			world_settled()
		end
		wx, wy, wz, dx, dz = find_bank(cx, sy, cz, 70)
		if wx ~= nil then
			break
		end
		log:info("no lake's bank held around " .. fmt(cx, sy, cz))
	end
	if wx == nil then
		error("found no lake's bank", 0)
	end
	local bx, bz = wx + dx, wz + dz
	local fx, fz = bx + dx, bz + dz
	log:info("a lake's bank at " .. fmt(bx, wy, bz) .. " beside water at " .. fmt(wx, wy, wz))
	-- Dig one more beyond it when that too is diggable under air: the
	-- water then flows two voxels out.
	local two = DIGGABLE[voxel(fx, wy, fz) or ""] and voxel(fx, wy + 1, fz) == "air"
	local stand_x, stand_z = fx + dx, fz + dz
	if not two then
		stand_x, stand_z = fx, fz
	end
	local g = ground(stand_x, stand_z, wy) or wy
	teleport(stand_x + 0.5, g + 1, stand_z + 0.5)
	if two then
		dig(fx, wy, fz)
	end
	dig(bx, wy, bz)
	log:info("dug the bank at " .. fmt(bx, wy, bz) .. (two and (" and " .. fmt(fx, wy, fz)) or ""))
	wait_until("water flowing into the dug bank", function()
		return is_water(voxel(bx, wy, bz)) and (not two or is_water(voxel(fx, wy, fz)) or is_water(voxel(fx, wy - 1, fz)))
	end, 30)
	log:info("the water flowed out: " .. tostring(voxel(bx, wy, bz)) .. " at " .. fmt(bx, wy, bz)
		.. (two and (", " .. tostring(voxel(fx, wy, fz)) .. " at " .. fmt(fx, wy, fz)) or ""))
	local last, still = snapshot(bx, wy, bz), 0
	wait_until("the water to stop", function()
		local now = snapshot(bx, wy, bz)
		if now == last then
			still += 1
		else
			last, still = now, 0
		end
		return still >= 30
	end, 60)
	log:info("the water stopped")

	-- A bucket: take a source of the lake.
	wield("bucket")
	local taken = nil
	for r = 1, 3 do
		local x, z = wx - dx * (r - 1), wz - dz * (r - 1)
		if voxel(x, wy, z) == "water" then
			main.use(x, wy, z)
			local ok = pcall(wait_until, "a bucket of water", function()
				return inv.count("bucket_water") >= 1
			end, 10)
			if ok then
				taken = fmt(x, wy, z)
				break
			end
		end
	end
	if taken == nil then
		error("the bucket took no source", 0)
	end
	log:info("took a source with a bucket at " .. taken)
end

-- 4. The time of day: the times the server told (`daytime:time`), from
-- the start.
local told_times = {}
daytime.on_change(function(t)
	table.insert(told_times, t)
end)

local function time_of_day()
	wait_until("the time of day to move (two different times told)", function()
		for _, t in ipairs(told_times) do
			if t ~= told_times[1] then
				return true
			end
		end
		return false
	end, 40)
	log:info(string.format("the time of day moved: told %.4f then %.4f, now %s", told_times[1],
		told_times[#told_times], daytime.clock()))
	-- Night from the console's `time`: a time told after asking.
	local asked_at = #told_times
	log:info("waiting for night")
	wait_until("night told after asking", function()
		return #told_times > asked_at and daytime.night()
	end, 60)
	log:info("night fell: " .. daytime.clock())
end

-- A column with nothing in the way from its ground to 34 above it.
local function open_column(sx, sy, sz)
	for r = 0, 12 do
		for dx = -r, r do
			for dz = -r, r do
				local x, z = sx + dx, sz + dz
				local g, name = ground(x, z, sy)
				if g ~= nil and name ~= "leaves" and name ~= "pine_leaves" then
					local clear = true
					for y = g + 1, g + 34 do
						if voxel(x, y, z) ~= "air" then
							clear = false
							break
						end
					end
					if clear then
						return x, g, z
					end
				end
			end
		end
	end
	error("no open column near " .. fmt(sx, sy, sz), 0)
end

-- Falls from `height` above the ground of column x, z, a voxel every
-- 0.05 s (the server lets anyone fall).
local function fall(x, g, z, height)
	teleport(x + 0.5, g + 1 + height, z + 0.5)
	sleep(0.5)
	for y = g + height, g + 1, -1 do
		main.move(x + 0.5, y, z + 0.5)
		sleep(0.05)
	end
	sleep(0.5)
end

-- 5. Falls, death and respawn.
local function falls(sx, sy, sz)
	local hurt = {}
	local died = nil
	health.on_hurt(function(amount, cause)
		table.insert(hurt, { amount = amount, cause = cause })
	end)
	health.on_died(function(cause)
		died = cause
	end)
	wait_until("my health", function()
		return health.hp() ~= nil
	end, 20)
	local x, g, z = open_column(sx, sy, sz)
	local before = health.hp()
	fall(x, g, z, 12)
	wait_until("fall damage", function()
		for _, h in ipairs(hurt) do
			if h.cause == "fall" then
				return true
			end
		end
		return false
	end, 10)
	log:info("took fall damage: " .. before .. " -> " .. health.hp() .. " hp")
	fall(x, g, z, 34)
	wait_until("death", function()
		return died ~= nil and health.dead()
	end, 10)
	log:info("died (" .. tostring(died) .. ") at " .. fmt(x, g + 1, z))
	sleep(0.5)
	health.respawn()
	wait_until("respawning", function()
		return not health.dead() and health.hp() == 20
	end, 20)
	local px, py, pz = main.position()
	log:info(string.format("respawned at %.1f,%.1f,%.1f with %d hp", px, py, pz, health.hp()))
end

local function play()
	wait_until("spawning and my inventory", function()
		return main.position() ~= nil and inv.list(ME, "main") ~= nil
	end, 120)
	local sx, sy, sz = main.position()
	sx, sy, sz = math.floor(sx), math.floor(sy), math.floor(sz)
	log:info("spawned at " .. fmt(sx, sy, sz))
	world_settled()
	wait_until("a bucket and dirt from the console", function()
		return inv.count("bucket") >= 1 and inv.count("dirt") >= 1
	end, 60)
	grass(sx, sy, sz)
	lake(sx, sy, sz)
	teleport(sx + 0.5, sy + 0.5, sz + 0.5)
	time_of_day()
	falls(sx, sy, sz)
	log:info("done")
	buildat.disconnect()
end

co = coroutine.create(play)
buildat.set_timeout(0.5, function()
	resume()
end)
