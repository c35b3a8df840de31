--! first_chunk.lua: a buildat-client bot (`--script
--! scripts/bots/first_chunk.lua`) that logs `first chunk held` and
--! disconnects as soon as the player holds a chunk of terrain: the moment a
--! new player can play (`scripts/bench-first-start` times it).

local log = buildat.Logger("first_chunk")

buildat.set_interval(0.05, function()
	if buildat.world.chunk_count() > 0 then
		log:info("first chunk held")
		buildat.disconnect()
	end
end)
