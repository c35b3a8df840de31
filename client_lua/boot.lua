--! boot.lua: the client runtime's boot code. Runs once per client, NOT
--! sandboxed, in the extension environment (the full Luau globals), with
--! `host` (the Rust primitives) as its argument; returns the `runtime`
--! table the Rust side calls.
--!
--! Owns: the whitelist of globals a sandboxed file sees, building a fresh
--! environment per file (with its own `buildat` API table, `require` and
--! `print`), running a transferred file, `require("buildat/module/<name>")`
--! (runs `<name>/client_lua/init.lua` once, returns its value) and
--! `require("buildat/extension/<name>")` (sandboxed code gets only the
--! extension's frozen `safe` table), the pure-Lua API helpers (`dump`,
--! `bytes`, `Logger`), the `buildat.world` table and each file's
--! `buildat.ui`. Does not own: the time
--! and memory limits, the packet subscriptions, timers and exit hooks, the
--! world view, file storage or compiling (all in Rust,
--! `client/src/sandbox/`, `client/src/world/`).
--!
--! Rule for this file: nothing reachable from a sandboxed environment may
--! lead back here. Sandboxed code only ever receives frozen tables, plain
--! values, and closures whose upvalues it cannot read (no `debug`, no
--! `getfenv` in the sandbox).

local host = ...

local G = _G -- the real, frozen globals (libraries are read-only after `Lua::sandbox`)

-- What a sandboxed file may see. Everything else (getfenv, setfenv, debug,
-- loadstring, newproxy, gcinfo, the filesystem require, io and os.execute,
-- which Luau does not have anyway) is absent.
local SAFE_GLOBALS = {
	"assert", "error", "getmetatable", "ipairs", "next", "pairs", "pcall",
	"rawequal", "rawget", "rawlen", "rawset", "select", "setmetatable",
	"tonumber", "tostring", "type", "typeof", "unpack", "xpcall",
	"collectgarbage", -- only "count" works in sandbox mode
	"_VERSION",
	"bit32", "buffer", "coroutine", "math", "string", "table", "utf8", "vector",
}

-- `os` is rebuilt with only these.
local safe_os = {}
for _, k in ipairs({ "clock", "date", "difftime", "time" }) do
	safe_os[k] = G.os[k]
end
table.freeze(safe_os)

local function deep_freeze(t, seen)
	seen = seen or {}
	if type(t) ~= "table" or seen[t] then
		return t
	end
	seen[t] = true
	for _, v in next, t do
		deep_freeze(v, seen)
	end
	if not table.isfrozen(t) then
		table.freeze(t)
	end
	return t
end

---------------------------------------------------------------------------
-- API helpers (pure Lua, shared by every environment; all frozen)
---------------------------------------------------------------------------

local MAX_DUMP = 64 * 1024

-- A readable one-line picture of a value: tables by their raw contents
-- (no metamethods run), keys sorted, cycles and depth cut short.
local function dump(value)
	local out, size = {}, 0
	local function put(s)
		size += #s
		if size <= MAX_DUMP then
			out[#out + 1] = s
		end
	end
	local function scalar(v)
		local t = type(v)
		if t == "string" then
			return string.format("%q", v)
		elseif t == "number" or t == "boolean" or t == "nil" then
			return tostring(v)
		end
		return "<" .. typeof(v) .. ">"
	end
	local seen = {}
	local function walk(v, depth)
		if type(v) ~= "table" then
			put(scalar(v))
			return
		end
		if seen[v] then
			put("<cycle>")
			return
		end
		if depth > 8 then
			put("{...}")
			return
		end
		seen[v] = true
		local keys = {}
		for k in next, v do
			keys[#keys + 1] = k
			if #keys > 1000 then
				break
			end
		end
		table.sort(keys, function(a, b)
			local ta, tb = type(a), type(b)
			if ta ~= tb then
				return ta < tb
			end
			if ta == "number" or ta == "string" then
				return a < b
			end
			return false
		end)
		put("{")
		local n = rawlen(v)
		for i, k in ipairs(keys) do
			if i > 1 then
				put(", ")
			end
			if type(k) == "number" and k >= 1 and k <= n and k % 1 == 0 then
				-- the sequence part: values only
			elseif type(k) == "string" and string.match(k, "^[%a_][%w_]*$") then
				put(k)
			else
				put("[")
				put(scalar(k))
				put("]")
			end
			if not (type(k) == "number" and k >= 1 and k <= n and k % 1 == 0) then
				put(" = ")
			end
			walk(rawget(v, k), depth + 1)
		end
		put("}")
		seen[v] = nil
	end
	walk(value, 0)
	local s = table.concat(out)
	if size > MAX_DUMP then
		s ..= "...(cut)"
	end
	return s
end

-- The bytes of a string as a table of numbers (Buildat's buildat.bytes).
local function bytes(s)
	if type(s) ~= "string" then
		error("buildat.bytes expects a string, got " .. typeof(s), 2)
	end
	local t = table.create(#s)
	for i = 1, #s, 4096 do
		local chunk = { string.byte(s, i, math.min(i + 4095, #s)) }
		table.move(chunk, 1, #chunk, i, t)
	end
	return t
end

local function message_of(logger, ...)
	local n = select("#", ...)
	local parts = table.create(n)
	local args = { ... }
	local first = 1
	if logger ~= nil and args[1] == logger then -- called as log:info(...)
		first = 2
	end
	for i = first, n do
		parts[#parts + 1] = tostring(args[i])
	end
	return table.concat(parts, " ")
end

local LEVELS = { "error", "warning", "info", "verbose", "debug" }
-- Level name -> whether this client logs it (host.log_levels: how many of
-- LEVELS, from the first, it keeps).
local LOGGED = {}
for i, level in ipairs(LEVELS) do
	LOGGED[level] = i <= host.log_levels
end

-- buildat.world: the session's world view (kept natively by the client from
-- the voxelworld stream). Read-only but for acking and the focus. One frozen
-- table shared by every environment.
local world = table.freeze({
	get_voxel = host.world_get_voxel, -- (x, y, z) -> voxel name, or nil when its chunk is not held
	chunk_count = host.world_chunk_count, -- () -> chunks held
	block_names = host.world_block_names, -- () -> { block names of the registry but air and unknown }
	chunks_received = host.world_chunks_received, -- () -> voxelworld:chunk packets received
	set_acking = host.world_set_acking, -- (bool): pause / resume voxelworld:ack
	set_focus = host.world_set_focus, -- (x, y, z): the player position for the maps
})

-- buildat.nodes: the dynamic nodes the server replicates to this client
-- (players, creatures, ...: docs/client.md, "Nodes API"). Read-only; the
-- callbacks belong to the file that set them.
local function nodes_for(file)
	return table.freeze({
		get = host.nodes_get, -- (id) -> { id, x, y, z, vx, vy, vz, qx, qy, qz, qw, parent, time_ms, vars = { name = bytes } } | nil
		ids = host.nodes_ids, -- () -> { id, ... } ascending
		count = host.nodes_count, -- () -> nodes known
		each = function() -- for id, node in buildat.nodes.each() do ... end
			local ids, i = host.nodes_ids(), 0
			return function()
				while true do
					i += 1
					local id = ids[i]
					if id == nil then
						return nil
					end
					local node = host.nodes_get(id)
					if node ~= nil then
						return id, node
					end
				end
			end
		end,
		on_added = function(fn) -- fn(id), after the node is known
			host.nodes_sub(file, "added", fn)
		end,
		on_changed = function(fn) -- fn(id), after its state changed
			host.nodes_sub(file, "changed", fn)
		end,
		on_removed = function(fn) -- fn(id), once it is forgotten
			host.nodes_sub(file, "removed", fn)
		end,
	})
end

-- buildat.ui: what the game puts on the screen and the controls it defines
-- (docs/client.md, "UI API"). Made per file (bindings and handlers belong
-- to the file that set them, for error messages).
local function ui_for(file)
	return table.freeze({
		graphical = host.ui_graphical, -- () -> whether a frontend draws this session
		set_text = host.ui_set_text, -- (id, text | nil): a line of the overlay
		bind = function(key, what) -- (key, action name | fn(pressed) | nil)
			host.ui_bind(file, key, what)
		end,
		on_click = function(fn) -- fn(button, target | nil)
			host.ui_on_click(file, fn)
		end,
		on_move = function(fn) -- fn(x, y, z): the player moved (feet)
			host.ui_on_move(file, fn)
		end,
		set_hotbar = host.ui_set_hotbar, -- ({ block names })
		select = host.ui_select, -- (slot): 1-based, wraps
		selected = host.ui_selected, -- () -> slot, name (nil, nil when empty)
		set_box = host.ui_set_box, -- (id, x, y, z, width, height [, r, g, b])
		remove_box = host.ui_remove_box, -- (id)
		set_model = host.ui_set_model, -- (id, file, x, y, z [, yaw [, vx, vy, vz]]): a model (docs/client.md "Models")
		remove_model = host.ui_remove_model, -- (id)
		set_position = host.ui_set_position, -- (x, y, z): move the player (feet)
		set_daylight = host.ui_set_daylight, -- (sun, r, g, b): sunlight factor and sky colour, 0..1
		-- Game screens (docs/client.md "Game screens"):
		define_items = host.ui_define_items, -- ({ [name] = { description, texture, voxel } })
		open_screen = function(id, screen) -- (id, { title, columns, rows, widgets, on_close })
			host.ui_open_screen(file, id, screen)
		end,
		close_screen = host.ui_close_screen, -- (id)
		update_slots = host.ui_update_slots, -- (grid id, slots): everywhere it is drawn
		set_hotbar_slots = host.ui_set_hotbar_slots, -- (slots | nil): the hotbar as item slots
		set_health = host.ui_set_health, -- (points, max) | (nil): hearts above the hotbar
		open_chat = host.ui_open_chat, -- ([prefix]): the chat line takes typed text
		add_chat_line = host.ui_add_chat_line, -- (text)
		on_chat = function(fn) -- fn(text): the chat line was submitted
			host.ui_on_chat(file, fn)
		end,
	})
end

local function Logger(name)
	if type(name) ~= "string" then
		error("buildat.Logger expects a name string, got " .. typeof(name), 2)
	end
	local logger = {}
	for _, level in ipairs(LEVELS) do
		if LOGGED[level] then
			logger[level] = function(...)
				host.log(level, name, message_of(logger, ...))
			end
		else
			logger[level] = function() end
		end
	end
	-- log:enabled(level): whether that level is logged, so a message
	-- built in a hot path is built only then.
	logger.enabled = function(self, level)
		local wanted = if self == logger then level else self
		local logged = LOGGED[wanted]
		if logged == nil then
			error("log:enabled: no level named " .. tostring(wanted), 2)
		end
		return logged
	end
	return table.freeze(logger)
end

---------------------------------------------------------------------------
-- Running files, modules and extensions
---------------------------------------------------------------------------

local modules = {} -- module name -> { loading = bool, value = any }
local extensions = {} -- extension name -> the table its init.lua returned

local new_env -- forward

local function run_file(file, trusted)
	if type(file) ~= "string" then
		error("expected a file name, got " .. typeof(file), 0)
	end
	local source = host.read_file(file)
	if source == nil then
		error("no transferred file named " .. string.format("%q", file), 0)
	end
	local fn = host.load(source, file, new_env(file, trusted))
	return fn()
end

local function load_module(name)
	local entry = modules[name]
	if entry then
		if entry.loading then
			error("require: module " .. name .. " is still loading (a require cycle)", 3)
		end
		return entry.value
	end
	entry = { loading = true }
	modules[name] = entry
	local ok, value = pcall(run_file, name .. "/client_lua/init.lua", false)
	if not ok then
		modules[name] = nil
		error(value, 0)
	end
	if value == nil then
		value = true
	end
	entry.loading = false
	entry.value = value
	return value
end

local function load_extension(name)
	local ext = extensions[name]
	if ext then
		return ext
	end
	local source = host.extension_source(name)
	if source == nil then
		error("require: no extension named " .. string.format("%q", name), 3)
	end
	-- Extensions are trusted: they run in an extension environment.
	local env = setmetatable({}, { __index = G })
	ext = host.load(source, "extension/" .. name, env, false)()
	if type(ext) ~= "table" or type(ext.safe) ~= "table" then
		error("extension " .. name .. " did not return a table with a `safe` table", 3)
	end
	deep_freeze(ext.safe)
	extensions[name] = ext
	return ext
end

local function make_require(trusted)
	return function(path)
		if type(path) ~= "string" then
			error("require expects a string like \"buildat/module/NAME\", got " .. typeof(path), 2)
		end
		local name = string.match(path, "^buildat/module/([^/]+)$")
		if name then
			return load_module(name)
		end
		name = string.match(path, "^buildat/extension/([%w_]+)$")
		if name then
			local ext = load_extension(name)
			if trusted then
				return ext
			end
			return ext.safe
		end
		error("require: cannot load " .. string.format("%q", path)
			.. " (only buildat/module/<name> and buildat/extension/<name> exist)", 2)
	end
end

function new_env(file, trusted)
	local env = {}
	for _, k in ipairs(SAFE_GLOBALS) do
		env[k] = G[k]
	end
	env.os = safe_os
	env._G = env
	env.require = make_require(trusted)
	env.print = function(...)
		if not LOGGED.info then
			return
		end
		host.log("info", file, message_of(nil, ...))
	end
	local api = {
		send_packet = host.send_packet,
		sub_packet = function(name, fn)
			host.sub_packet(file, name, fn)
		end,
		unsub_packet = host.unsub_packet,
		Logger = Logger,
		dump = dump,
		bytes = bytes,
		run_script_file = function(name)
			return run_file(name, false)
		end,
		disconnect = host.disconnect,
		client_name = host.client_name,
		world = world,
		nodes = nodes_for(file),
		ui = ui_for(file),
		-- Timers belong to the file that set them: only it can clear them.
		set_timeout = function(seconds, fn)
			return host.set_timer(file, seconds, fn, false)
		end,
		set_interval = function(seconds, fn)
			return host.set_timer(file, seconds, fn, true)
		end,
		clear_timer = function(id)
			host.clear_timer(file, id)
		end,
	}
	if trusted then
		api.on_exit = function(fn)
			host.on_exit(file, fn)
		end
	end
	env.buildat = table.freeze(api)
	return env
end

---------------------------------------------------------------------------
-- What Rust calls
---------------------------------------------------------------------------

local runtime = {}

-- The runtime's own state, for the escape audit (Rust only).
runtime.registry = { modules = modules, extensions = extensions }

-- core:run_script. A module's init.lua that already ran through require
-- is not run twice.
function runtime.run_script(file)
	local module = string.match(file, "^([^/]+)/client_lua/init%.lua$")
	if module then
		if modules[module] == nil then
			load_module(module)
		end
		return
	end
	run_file(file, false)
end

-- The file changed or was withdrawn: a module whose init.lua it is loads
-- afresh on its next run or require.
function runtime.forget_file(file)
	local module = string.match(file, "^([^/]+)/client_lua/init%.lua$")
	if module and modules[module] and not modules[module].loading then
		modules[module] = nil
	end
end

-- A fresh sandboxed environment (for tests and audits).
function runtime.sandbox_env(file)
	return new_env(file, false)
end

-- Bot mode: a trusted local file with the same API plus timers. It gets the
-- sandbox whitelist too (it needs nothing more), and extensions' full tables.
function runtime.run_trusted(source, name)
	local fn = host.load(source, name, new_env(name, true))
	return fn()
end

return runtime
