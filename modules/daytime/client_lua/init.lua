--! daytime/client_lua/init.lua: the time of day this client knows, from
--! the server's `daytime:time` (docs/protocol.md, "Time of day"), advanced
--! locally between two packets, and the sky and sunlight that follow it
--! (`buildat.ui.set_daylight`, when the client has it). Bot scripts and
--! other modules get the same instance with
--! `require("buildat/module/daytime")`.
--!
--! Owns: decoding `daytime:time`, the local clock, the daylight curve (full
--! sun from 7:00 to 18:00, a little light from 20:00 to 5:00, a warm sky
--! between). Does not own: the clock (the server's `daytime` module).
--!
--! Interface returned: time() -> 0..1 (0 midnight, 0.5 noon; nil before
--! the first daytime:time); clock() -> "HH:MM" (nil before); night() ->
--! bool (nil before); day_seconds() -> real seconds a day lasts (0:
--! stopped); daylight(t) -> sun, r, g, b of the time t (default: now);
--! on_change(fn(time)) (each daytime:time the server sends; called at once
--! when the time is already known).

local log = buildat.Logger("daytime")

local M = {}

-- Night: before 6:00 or from 19:00 (buildat-daytime-api's DAWN and DUSK).
local DAWN, DUSK = 0.25, 19 / 24
-- The sunlight factor at night: a little light.
local NIGHT_SUN = 0.15
-- Sky colours (linear RGB): the day's is the client's own default sky.
local DAY_SKY = { 0.45, 0.66, 0.92 }
local NIGHT_SKY = { 0.01, 0.015, 0.045 }
local DUSK_TINT = { 0.35, 0.12, -0.1 }

local base_time, base_clock, day_length = nil, nil, 0
local change_fns = {}

local function now()
	if base_time == nil then
		return nil
	end
	if day_length <= 0 then
		return base_time
	end
	local t = base_time + (os.clock() - base_clock) / day_length
	return t - math.floor(t)
end

-- 0 at night, 1 by day, linear through 5:00-7:00 and 18:00-20:00.
local function day_share(t)
	local hour = t * 24
	if hour < 5 or hour >= 20 then
		return 0
	elseif hour < 7 then
		return (hour - 5) / 2
	elseif hour < 18 then
		return 1
	else
		return (20 - hour) / 2
	end
end

function M.daylight(t)
	t = t or now() or 0.5
	local k = day_share(t)
	local sun = NIGHT_SUN + (1 - NIGHT_SUN) * k
	local warm = 4 * k * (1 - k)
	local sky = {}
	for i = 1, 3 do
		local c = NIGHT_SKY[i] + (DAY_SKY[i] - NIGHT_SKY[i]) * k + DUSK_TINT[i] * warm
		sky[i] = math.clamp(c, 0, 1)
	end
	return sun, sky[1], sky[2], sky[3]
end

local shown = nil
local function show()
	local set = buildat.ui and buildat.ui.set_daylight
	local t = now()
	if set == nil or t == nil then
		return
	end
	local sun, r, g, b = M.daylight(t)
	local key = string.format("%.3f %.3f %.3f %.3f", sun, r, g, b)
	if key ~= shown then
		shown = key
		set(sun, r, g, b)
	end
end

function M.time()
	return now()
end

function M.clock()
	local t = now()
	if t == nil then
		return nil
	end
	local minutes = math.floor(t * 1440) % 1440
	return string.format("%02d:%02d", minutes // 60, minutes % 60)
end

function M.night()
	local t = now()
	if t == nil then
		return nil
	end
	return t < DAWN or t >= DUSK
end

function M.day_seconds()
	return day_length
end

function M.on_change(fn)
	table.insert(change_fns, fn)
	local t = now()
	if t ~= nil then
		fn(t)
	end
end

buildat.sub_packet("daytime:time", function(data)
	local ok, time, seconds = pcall(string.unpack, "<ff", data)
	if not ok or #data ~= 8 or time ~= time or time < 0 or time >= 1 or seconds ~= seconds or seconds < 0 then
		log:warning("a malformed daytime:time packet (" .. #data .. " bytes) is ignored")
		return
	end
	base_time, base_clock, day_length = time, os.clock(), seconds
	show()
	for _, fn in ipairs(change_fns) do
		local called, err = pcall(fn, time)
		if not called then
			log:error("on_change: " .. tostring(err))
		end
	end
end)

-- The sky moves on between two packets.
buildat.set_interval(1, show)

return M
