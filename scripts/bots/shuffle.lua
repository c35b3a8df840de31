--! shuffle.lua: the census test's bot (`scripts/census`; runs as
--! `buildat-client --bots N --script scripts/bots/shuffle.lua`). It keeps
--! items moving the way players do: stacks moved, split, merged and swapped
--! between its `main` list and its 2×2 `craft` grid, single items dropped
--! on the ground and picked up again by stepping over them, one action in
--! flight at a time, as fast as the server answers. Every TALLY_EVERY
--! seconds it logs `shuffle tally acts=N ok=N refused=N drops=N` (the
--! window's counts), which the harness sums across bots.
--! Owns: nothing but its own play. Does not own: judging (the server's).

local main = require("buildat/module/main")
local inv = require("buildat/module/inventory")
local log = buildat.Logger("shuffle")

local ACT_EVERY = 0.05
local STEP_EVERY = 1.0
local TALLY_EVERY = 0.5
local ANSWER_WITHIN = 5.0 -- seconds before an unanswered act is given up

local w = { acts = 0, ok = 0, refused = 0, drops = 0 }
local waiting_since = nil
local home = nil
local step = 0

local function filled(list)
	local slots = inv.list("me", list) or {}
	local found = {}
	for i, slot in ipairs(slots) do
		if slot then
			table.insert(found, { list = list, index = i, count = slot.count })
		end
	end
	return found, #slots
end

local function answered(ok)
	waiting_since = nil
	if ok then
		w.ok += 1
	else
		w.refused += 1
	end
end

local function act()
	if waiting_since ~= nil then
		if os.clock() - waiting_since < ANSWER_WITHIN then
			return
		end
		waiting_since = nil
	end
	local full_main, main_size = filled("main")
	local full_craft, craft_size = filled("craft")
	local from_all = {}
	for _, s in ipairs(full_main) do
		table.insert(from_all, s)
	end
	for _, s in ipairs(full_craft) do
		table.insert(from_all, s)
	end
	if #from_all == 0 or main_size == 0 then
		return
	end
	local from = from_all[math.random(#from_all)]
	local source = { owner = "me", list = from.list, index = from.index }
	w.acts += 1
	waiting_since = os.clock()
	if math.random() < 0.1 then
		w.drops += 1
		inv.drop(source, 1, answered)
		return
	end
	local to
	if craft_size > 0 and math.random() < 0.3 then
		to = { owner = "me", list = "craft", index = math.random(craft_size) }
	else
		to = { owner = "me", list = "main", index = math.random(main_size) }
	end
	inv.move(source, to, math.random(from.count), answered)
end

-- Steps back and forth over where drops land, so they are picked up.
local function walk()
	if home == nil then
		return
	end
	step = (step + 1) % 4
	local dx = ({ 0, 1, 0, -1 })[step + 1]
	local dz = ({ 1, 0, -1, 0 })[step + 1]
	main.move(home.x + dx, home.y, home.z + dz)
end

main.on_spawn(function(_, x, y, z)
	home = { x = x, y = y, z = z }
	log:info(string.format("shuffle spawned at %.1f,%.1f,%.1f", x, y, z))
end)

buildat.set_interval(ACT_EVERY, act)
buildat.set_interval(STEP_EVERY, walk)
buildat.set_interval(TALLY_EVERY, function()
	log:info(string.format("shuffle tally acts=%d ok=%d refused=%d drops=%d", w.acts, w.ok, w.refused, w.drops))
	w = { acts = 0, ok = 0, refused = 0, drops = 0 }
end)
