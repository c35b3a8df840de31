--! pinger.lua: a buildat-client bot (`--script scripts/bots/pinger.lua`)
--! that measures round trips of `main:ping` / `main:pong` (the server echoes
--! them) every 0.1 s, and at exit prints how many came back and their p50,
--! p99 and max in milliseconds. Uses the default game's client module
--! (`require("buildat/module/main")`).

local main = require("buildat/module/main")
local log = buildat.Logger("pinger")

local EVERY = 0.1 -- seconds between pings

local sent = 0
local rtts = {} -- milliseconds

local function record(rtt)
	rtts[#rtts + 1] = rtt * 1000
end

buildat.set_interval(EVERY, function()
	sent += 1
	main.ping(record)
end)

-- Nearest-rank percentile of a sorted list.
local function percentile(sorted, p)
	local i = math.clamp(math.ceil(p / 100 * #sorted), 1, #sorted)
	return sorted[i]
end

buildat.on_exit(function()
	if #rtts == 0 then
		log:info(string.format("ping: 0 round trips (%d sent)", sent))
		return
	end
	local sorted = table.clone(rtts)
	table.sort(sorted)
	log:info(string.format(
		"ping: %d round trips (%d sent), p50 %.2f ms, p99 %.2f ms, max %.2f ms",
		#sorted, sent, percentile(sorted, 50), percentile(sorted, 99), sorted[#sorted]
	))
end)
