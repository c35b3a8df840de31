--! walker.lua: a buildat-client bot (`--script scripts/bots/walker.lua`)
--! that walks a square around its spawn point, forever: one step every
--! 0.5 s, each step at most 3 voxels (6 a second: under the server's
--! default `main.max_speed`, 6.75), feet kept on the highest voxel the
--! client holds under it. Logs each lap. Uses the default game's client
--! module (`require("buildat/module/main")`) and the client's world view.

local main = require("buildat/module/main")
local log = buildat.Logger("walker")

local HALF_SIDE = 8 -- the square's corners are this far from the spawn point
local STEP = 3 -- longest step, in voxels
local EVERY = 0.5 -- seconds between steps

-- The feet height on the column (x, z): one above the highest held
-- non-air voxel within a few voxels of `near`, or nil.
local function ground(x, z, near)
	for y = math.floor(near) + 6, math.floor(near) - 10, -1 do
		local name = buildat.world.get_voxel(x, y, z)
		if name == nil then
			return nil
		end
		if name ~= "air" then
			return y + 1
		end
	end
	return nil
end

local started = false
main.on_spawn(function(_, sx, sy, sz)
	if started then
		return
	end
	started = true
	local corners = {
		{ sx - HALF_SIDE, sz - HALF_SIDE },
		{ sx + HALF_SIDE, sz - HALF_SIDE },
		{ sx + HALF_SIDE, sz + HALF_SIDE },
		{ sx - HALF_SIDE, sz + HALF_SIDE },
	}
	local next_corner, laps, steps = 1, 0, 0
	log:info(string.format("walking a %d-voxel square around %.1f,%.1f,%.1f", 2 * HALF_SIDE, sx, sy, sz))
	buildat.set_interval(EVERY, function()
		local px, py, pz = main.position()
		local tx, tz = corners[next_corner][1], corners[next_corner][2]
		local dx, dz = tx - px, tz - pz
		local dist = math.sqrt(dx * dx + dz * dz)
		if dist < 0.01 then
			next_corner = next_corner % 4 + 1
			if next_corner == 1 then
				laps += 1
				log:info(string.format("lap %d done (%d steps)", laps, steps))
			end
			return
		end
		local h = math.min(STEP, dist)
		local nx, nz = px + dx / dist * h, pz + dz / dist * h
		local ny = ground(math.floor(nx), math.floor(nz), py) or py
		-- Keep the whole step (climb included) within STEP voxels.
		local dy = math.clamp(ny - py, -(STEP - 1), STEP - 1)
		local hmax = math.sqrt(STEP * STEP - dy * dy)
		if h > hmax then
			h = hmax
			nx, nz = px + dx / dist * h, pz + dz / dist * h
		end
		main.move(nx, py + dy, nz)
		steps += 1
	end)
end)
