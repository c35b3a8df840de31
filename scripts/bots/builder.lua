--! builder.lua: a buildat-client bot (`--script scripts/bots/builder.lua`)
--! that digs the top voxel of a column next to its spawn point (one of a
--! 7 × 7 square around it, chosen by its peer id) and places a block back,
--! over and over: dig (for as long as the server says digging takes),
--! wait for the edit (or a refusal), place, wait, pause, again. In survival
--! it places what digging gave it (grass gives dirt), from the hotbar slot
--! that holds it; in creative (`main.creative`, or a game without the
--! inventory module) `stone`. At most 4 actions a second, well under the
--! server's 20. Prints its counts at exit. Uses the default game's client
--! module (`require("buildat/module/main")`), the inventory's when the
--! server runs it, and the client's world view.

local main = require("buildat/module/main")
local log = buildat.Logger("builder")
local has_inv, inv = pcall(require, "buildat/module/inventory")
if not has_inv or type(inv) ~= "table" or inv.list == nil then
	inv = nil
end

local TICK = 0.25 -- seconds between two looks at the state
local PAUSE = 1.0 -- seconds between two dig + place rounds
local EDIT_TIMEOUT = 3.0 -- give up waiting for an edit after this long

local digs, places, confirmed, refused = 0, 0, 0, 0
local target = nil -- {x, y, z}
local state, since = "find", os.clock()
local waiting_for = nil -- "air" or "stone" at the target

main.on_edit(function(_, x, y, z, name)
	if target and x == target[1] and y == target[2] and z == target[3] and name == waiting_for then
		confirmed += 1
		waiting_for = nil
	end
end)

main.on_refused(function()
	refused += 1
	waiting_for = nil
end)

-- The highest held non-air voxel of the column (x, z) near height `near`.
local function top(x, z, near)
	for y = math.floor(near) + 8, math.floor(near) - 16, -1 do
		local name = buildat.world.get_voxel(x, y, z)
		if name ~= nil and name ~= "air" then
			return y
		end
	end
	return nil
end

-- What to place: in survival the first block in the hotbar (wielded), in
-- creative stone.
local function block_to_place()
	local slots = inv and inv.list("me", "main")
	if slots ~= nil then
		for i = 1, 8 do
			local stack = slots[i]
			if stack and buildat.world.block_names ~= nil then
				for _, block in ipairs(buildat.world.block_names()) do
					if block == stack.name then
						if main.wielded() ~= i - 1 then
							main.wield(i - 1)
						end
						return stack.name
					end
				end
			end
		end
	end
	return "stone"
end

local function set_state(s)
	state, since = s, os.clock()
end

main.on_spawn(function(_, sx, sy, sz)
	if target ~= nil then
		return
	end
	-- Bots spawning at the same place spread over a 7 × 7 square (by peer
	-- id), within reach (8 voxels from the eyes).
	local peer = main.peer() or 0
	local x = math.floor(sx) + peer % 7 - 3
	local z = math.floor(sz) + (peer // 7) % 7 - 3
	buildat.set_interval(TICK, function()
		local now = os.clock()
		if state == "find" then
			local y = top(x, z, sy)
			if y ~= nil then
				target = { x, y, z }
				log:info(string.format("working on %d,%d,%d (%s)", x, y, z, buildat.world.get_voxel(x, y, z)))
				set_state("dig")
			end
		elseif state == "dig" then
			main.dig_timed(target[1], target[2], target[3])
			digs += 1
			waiting_for = "air"
			set_state("dug")
		elseif state == "dug" then
			if waiting_for == nil or now - since > EDIT_TIMEOUT + 3 then
				local name = block_to_place()
				main.place(target[1], target[2], target[3], name)
				places += 1
				waiting_for = name
				set_state("placed")
			end
		elseif state == "placed" then
			if (waiting_for == nil and now - since >= PAUSE) or now - since > EDIT_TIMEOUT then
				set_state("dig")
			end
		end
	end)
end)

buildat.on_exit(function()
	log:info(string.format("builder: %d digs, %d places, %d edits confirmed, %d refused", digs, places, confirmed, refused))
end)
