-- Items and an ABM: seeds (crafted from grass, or given by /seeds) and grass growing on bare dirt.
buildat.register_craftitem("seed", {description = "Seed", inventory_image = "seed.png", stack_max = 99})
buildat.register_craft({type = "shapeless", output = "seed 2", recipe = {"grass"}})

-- Dirt with air above it grows grass, now and then.
buildat.register_abm({
	label = "grass grows", nodenames = {"dirt"}, neighbors = {"air"}, interval = 2, chance = 2,
	action = function(pos)
		if buildat.get_node({x = pos.x, y = pos.y + 1, z = pos.z}).name == "air" then
			buildat.set_node(pos, {name = "grass"})
		end
	end,
})

buildat.register_chatcommand("seeds", {
	params = "[COUNT]", description = "Gives you seeds (3 unless COUNT)", privs = {interact = true},
	func = function(name, param)
		if name == nil then
			return false, "only a player can take seeds"
		end
		local given = buildat.give_item(name, "seed", tonumber(param) or 3)
		return true, "gave " .. name .. " " .. given .. " seeds"
	end,
})
