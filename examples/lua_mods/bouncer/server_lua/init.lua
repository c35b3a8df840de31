-- A block that puts a torch on itself when placed, counts touches, says who used it and when dug.
local storage = buildat.get_mod_storage() -- its touches, kept across reloads
buildat.register_node("lua_bouncer", {
	description = "Bouncer", tiles = {"lua_bouncer.png"},
	on_place = function(pos) buildat.set_node({x = pos.x, y = pos.y + 1, z = pos.z}, {name = "torch"}) end,
	on_dig = function(pos) buildat.chat_send_all(("the bouncer at %d,%d,%d is gone"):format(pos.x, pos.y, pos.z)) end,
	on_touch = function(pos)
		storage:set_int("touches", storage:get_int("touches") + 1)
		buildat.log("info", ("lua_bouncer %d,%d,%d touched (%d)"):format(pos.x, pos.y, pos.z, storage:get_int("touches")))
	end,
	on_use = function(pos, player) buildat.chat_send_all((player or "?") .. " bounces (" .. storage:get_int("touches") .. ")") end,
})
