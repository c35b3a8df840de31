--! health/client_lua/init.lua: the health module's client side. The server
--! ships it to every client and runs it; bot scripts and the game's screens
--! get the same instance with `require("buildat/module/health")`.
--!
--! Owns: the protocol glue of the `health:*` packets (docs/protocol.md,
--! "health"): the hp and breath the server last sent (`health:state`),
--! hurts (`health:hurt`), death (`health:died`) and asking to respawn
--! (`health:respawn`). In a graphical client: the health bar
--! (`buildat.ui.set_health`), an overlay line with the breath while it is
--! short, on death "you died: press R to respawn" (R bound).
--! Does not own: any rule (the server decides every hp).
--!
--! Interface returned: hp() -> n | nil (before the first state),
--! max_hp(), breath() -> n | nil, max_breath(), dead() -> bool,
--! on_change(fn(hp, breath)) (called at once when a state is known),
--! on_hurt(fn(amount, cause)), on_died(fn(cause)), respawn() (sends
--! `health:respawn`; the server ignores it while alive), hurts() -> n
--! (hurts received), deaths() -> n.

local log = buildat.Logger("health")

local M = {}

local TEXT_ID = 50
local hp, max_hp, breath, max_breath = nil, 20, nil, 10
local dead = false
local hurts, deaths = 0, 0
local change_fns, hurt_fns, died_fns = {}, {}, {}

local function call_all(fns, ...)
	for _, fn in ipairs(fns) do
		local ok, err = pcall(fn, ...)
		if not ok then
			log:error("callback failed: " .. tostring(err))
		end
	end
end

local function graphical()
	local ui = buildat.ui
	return ui ~= nil and ui.graphical ~= nil and ui.graphical()
end

local function draw()
	if not graphical() or hp == nil then
		return
	end
	local ui = buildat.ui
	local text = nil
	if dead then
		text = "you died: press R to respawn"
	elseif breath ~= nil and breath < max_breath then
		-- One bubble per breath (shown under water).
		text = string.format("breath %d/%d %s", breath, max_breath, string.rep("o", breath))
	end
	ui.set_text(TEXT_ID, text)
	ui.set_health(hp, max_hp)
end

buildat.sub_packet("health:state", function(data)
	local ok, new_hp, new_max, new_breath, new_max_breath = pcall(string.unpack, "<I2I2I2I2", data)
	if not ok or #data ~= 8 then
		log:error("malformed health:state")
		return
	end
	hp, max_hp, breath, max_breath = new_hp, new_max, new_breath, new_max_breath
	if hp > 0 then
		dead = false
	end
	draw()
	call_all(change_fns, hp, breath)
end)

buildat.sub_packet("health:hurt", function(data)
	local ok, amount, cause = pcall(string.unpack, "<I2s2", data)
	if not ok then
		log:error("malformed health:hurt")
		return
	end
	hurts = hurts + 1
	log:info("hurt " .. amount .. " (" .. cause .. ")")
	call_all(hurt_fns, amount, cause)
end)

buildat.sub_packet("health:died", function(data)
	local ok, cause = pcall(string.unpack, "<s2", data)
	if not ok then
		log:error("malformed health:died")
		return
	end
	dead = true
	deaths = deaths + 1
	log:info("died (" .. cause .. ")")
	draw()
	call_all(died_fns, cause)
end)

function M.hp()
	return hp
end

function M.max_hp()
	return max_hp
end

function M.breath()
	return breath
end

function M.max_breath()
	return max_breath
end

function M.dead()
	return dead
end

function M.hurts()
	return hurts
end

function M.deaths()
	return deaths
end

function M.on_change(fn)
	table.insert(change_fns, fn)
	if hp ~= nil then
		local ok, err = pcall(fn, hp, breath)
		if not ok then
			log:error("on_change callback failed: " .. tostring(err))
		end
	end
end

function M.on_hurt(fn)
	table.insert(hurt_fns, fn)
end

function M.on_died(fn)
	table.insert(died_fns, fn)
end

function M.respawn()
	buildat.send_packet("health:respawn", "")
end

if graphical() and buildat.ui.bind ~= nil then
	pcall(buildat.ui.bind, "R", function(pressed)
		if pressed and dead then
			M.respawn()
		end
	end)
end

return M
