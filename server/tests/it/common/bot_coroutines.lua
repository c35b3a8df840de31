-- What the tests' Lua bots share: a coroutine that can sleep and wait,
-- and a failure that makes the bot leave through a malformed packet (the
-- client exits 5). Needs a `log` (a buildat.Logger) in scope.
local co = nil
local failed = false

local function fail(why)
	if failed then
		return
	end
	failed = true
	log:error("FAILED: " .. tostring(why))
	buildat.send_packet("main:place", "\255")
end

local function resume(...)
	if co == nil or coroutine.status(co) ~= "suspended" then
		return
	end
	local ok, err = coroutine.resume(co, ...)
	if not ok then
		fail(err)
	end
end

local function sleep(seconds)
	buildat.set_timeout(seconds, function()
		resume()
	end)
	coroutine.yield()
end

-- Runs start(cb) and waits for cb's arguments (nil, "timeout" after 30 s).
local function await(start)
	local fired = false
	local timer = nil
	start(function(...)
		if fired then
			return
		end
		fired = true
		if timer then
			buildat.clear_timer(timer)
		end
		resume(...)
	end)
	if not fired then
		timer = buildat.set_timeout(30, function()
			if not fired then
				fired = true
				resume(nil, "timeout")
			end
		end)
	end
	return coroutine.yield()
end

local function wait_until(what, pred, timeout)
	local deadline = os.clock() + (timeout or 30)
	while not pred() do
		if os.clock() > deadline then
			error("timed out waiting for " .. what, 0)
		end
		sleep(0.1)
	end
end
