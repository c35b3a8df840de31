--! loadbot.lua: the reliability harness's bot (`scripts/loadtest`,
--! `scripts/faulttest`; runs as `buildat-client --bots N --script
--! scripts/bots/loadbot.lua`). It plays like a restless player: first it
--! travels from the spawn point to a home of its own (on a spiral around
--! the spawn, by peer id, up to ~360 voxels out for 500 bots, as players
--! spread over a world), then walks a square around that home (one step a
--! second), digs the ground beside it and places stone back (one action
--! every 1.5 s, each bot at its own phase, as players who joined
--! together do not act in step; in a survival game digs take their time,
--! what was dug is placed back from the hotbar, and each dig also moves a
--! stack within the inventory), and pings the server twice a second throughout. Every REPORT_EVERY seconds it logs one
--! `loadbot report` line with the window's counts and a histogram of its
--! ping round trips, which the harness merges across bots; at exit one
--! `loadbot final` line with the pings still in flight.
--!
--! Histogram buckets (`hist=B:COUNT,...`): B < 100 is [B/10, (B+1)/10) ms,
--! 100 <= B < 1090 is [B-90, B-89) ms, B >= 1090 is [(B-1080)*100,
--! (B-1079)*100) ms. A ping unanswered after LOST_AFTER seconds counts as
--! lost (and as late if its pong comes after all).

local main = require("buildat/module/main")
local has_inv, inv = pcall(require, "buildat/module/inventory")
if not has_inv or type(inv) ~= "table" or inv.list == nil then
	inv = nil
end
local log = buildat.Logger("loadbot")
-- With the `health` module a bot that dies (a fall on its way home) asks
-- to respawn a second later and plays on (counted as `deaths`).
local has_health, health = pcall(require, "buildat/module/health")
if not has_health or type(health) ~= "table" or health.on_died == nil then
	health = nil
end

local REPORT_EVERY = 5 -- seconds
local PING_EVERY = 0.5
local MOVE_EVERY = 1.0
local ACT_EVERY = 1.5
local LOST_AFTER = 10 -- seconds without a pong
local HALF_SIDE = 6 -- walk a square this far around the home
local STEP = 3 -- voxels per step at most around the home
local TRAVEL_STEP = 12 -- voxels per step on the way home (the server allows 16)
local SPREAD = 16 -- home distance from the spawn: SPREAD * sqrt(peer) voxels

-- Counts of the current window.
local w = { sent = 0, answered = 0, lost = 0, late = 0, moves = 0, digs = 0, places = 0, edits = 0, refused = 0, deaths = 0 }
local hist = {} -- bucket -> count, this window
local outstanding = {} -- ping seq -> os.clock() when sent
local expired = {} -- seq -> true once counted as lost

local function bucket(ms)
	if ms < 10 then
		return math.floor(ms * 10)
	elseif ms < 1000 then
		return 90 + math.floor(ms)
	end
	return 1080 + math.floor(ms / 100)
end

local function on_pong(rtt, seq)
	if outstanding[seq] ~= nil then
		outstanding[seq] = nil
		w.answered += 1
		local b = bucket(rtt * 1000)
		hist[b] = (hist[b] or 0) + 1
	elseif expired[seq] then
		expired[seq] = nil
		w.late += 1
	end
end

local function expire(now)
	for seq, sent in pairs(outstanding) do
		if now - sent > LOST_AFTER then
			outstanding[seq] = nil
			expired[seq] = true
			w.lost += 1
		end
	end
end

local function in_flight()
	local n = 0
	for _ in pairs(outstanding) do
		n += 1
	end
	return n
end

local function report(kind)
	local parts = {}
	for b, c in pairs(hist) do
		parts[#parts + 1] = b .. ":" .. c
	end
	log:info(string.format(
		"loadbot %s sent=%d answered=%d lost=%d late=%d moves=%d digs=%d places=%d edits=%d refused=%d deaths=%d chunks=%d inflight=%d hist=%s",
		kind, w.sent, w.answered, w.lost, w.late, w.moves, w.digs, w.places, w.edits, w.refused, w.deaths,
		buildat.world.chunk_count(), in_flight(), table.concat(parts, ",")
	))
	for k in pairs(w) do
		w[k] = 0
	end
	hist = {}
end

main.on_edit(function()
	w.edits += 1
end)

main.on_refused(function()
	w.refused += 1
end)

-- The highest held non-air voxel of the column (x, z) near height `near`.
local function top(x, z, near)
	for y = math.floor(near) + 6, math.floor(near) - 10, -1 do
		local name = buildat.world.get_voxel(x, y, z)
		if name == nil then
			return nil
		end
		if name ~= "air" then
			return y
		end
	end
	return nil
end

local started = false
if health ~= nil then
	health.on_died(function()
		w.deaths += 1
		buildat.set_timeout(1, function()
			health.respawn()
		end)
	end)
end

main.on_spawn(function(_, sx, sy, sz)
	if started then
		return
	end
	started = true
	log:info(string.format("loadbot spawned at %.1f,%.1f,%.1f", sx, sy, sz))
	buildat.set_interval(PING_EVERY, function()
		local seq = main.ping(on_pong)
		outstanding[seq] = os.clock()
		w.sent += 1
	end)
	buildat.set_interval(REPORT_EVERY, function()
		expire(os.clock())
		report("report")
	end)

	-- Home on a sunflower spiral: evenly spread, nearer homes for lower ids.
	local peer = main.peer() or 0
	local angle = peer * 2.39996
	local reach = SPREAD * math.sqrt(peer)
	local hx, hz = sx + reach * math.cos(angle), sz + reach * math.sin(angle)
	local corners = {
		{ hx, hz },
		{ hx - HALF_SIDE, hz - HALF_SIDE },
		{ hx + HALF_SIDE, hz - HALF_SIDE },
		{ hx + HALF_SIDE, hz + HALF_SIDE },
		{ hx - HALF_SIDE, hz + HALF_SIDE },
	}
	local corner, step = 1, TRAVEL_STEP
	buildat.set_interval(MOVE_EVERY, function()
		local px, py, pz = main.position()
		local tx, tz = corners[corner][1], corners[corner][2]
		local dx, dz = tx - px, tz - pz
		local dist = math.sqrt(dx * dx + dz * dz)
		if dist < 0.01 then
			-- Home reached: from now on, round the square at walking pace.
			corner = (corner - 1) % 4 + 2
			step = STEP
			return
		end
		local h = math.min(step, dist)
		local nx, nz = px + dx / dist * h, pz + dz / dist * h
		local ground = top(math.floor(nx), math.floor(nz), py)
		local ny = ground and ground + 1 or py
		local dy = math.clamp(ny - py, -(STEP - 1), STEP - 1)
		main.move(nx, py + dy, nz)
		w.moves += 1
	end)

	-- Dig the top voxel of the column beside the player, then place a
	-- block there on the next turn. Creative (the first dig's time is 0):
	-- instant digs and stone. Survival: digs take the server's time, and
	-- what digging gave is placed back from the hotbar, after a move of a
	-- stack within the inventory (item traffic: a transaction each turn).
	local dug = nil
	local survival = nil -- unknown until the first dig's time comes
	local function survival_block()
		local slots = inv and inv.list("me", "main")
		if slots == nil then
			return nil
		end
		for i = 1, 8 do
			local stack = slots[i]
			if stack then
				if main.wielded() ~= i - 1 then
					main.wield(i - 1)
				end
				return stack.name
			end
		end
		return nil
	end
	local function shuffle_a_stack()
		local slots = inv and inv.list("me", "main")
		if slots == nil then
			return
		end
		for i = 1, 8 do
			if slots[i] then
				-- To the next hotbar slot, where the place still finds it.
				local to = i % 8 + 1
				inv.move({ owner = "me", list = "main", index = i }, { owner = "me", list = "main", index = to }, slots[i].count)
				return
			end
		end
	end
	local function act()
		local px, py, pz = main.position()
		if dug ~= nil then
			local name = "stone"
			if survival then
				name = survival_block()
			end
			if name ~= nil then
				main.place(dug[1], dug[2], dug[3], name)
				w.places += 1
			end
			dug = nil
			return
		end
		local x, z = math.floor(px) + 1, math.floor(pz)
		local y = top(x, z, py)
		if y == nil then
			return
		end
		w.digs += 1
		dug = { x, y, z }
		if survival == false then
			main.dig(x, y, z)
			return
		end
		if survival then
			shuffle_a_stack()
		end
		main.dig_start(x, y, z, function(seconds)
			if survival == nil then
				survival = seconds > 0
			end
			if seconds >= 0 then
				buildat.set_timeout(seconds + 0.05, function()
					main.dig(x, y, z)
				end)
			end
		end)
	end
	-- Players who joined together do not act in step: each bot starts its
	-- actions at its own phase (spread evenly by peer id).
	buildat.set_timeout(ACT_EVERY * ((peer * 0.618034) % 1), function()
		buildat.set_interval(ACT_EVERY, act)
	end)
end)

buildat.on_exit(function()
	expire(os.clock())
	report("final")
end)
