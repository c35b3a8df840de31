--! extensions/json: a small JSON encoder and decoder, and the proof of the
--! extension mechanism. Runs trusted in an extension environment; returns
--! a table whose `safe` part (frozen by boot.lua) is all that sandboxed
--! code gets from `require("buildat/extension/json")`.
--!
--! Owns: JSON text <-> Lua values (objects are tables with string keys,
--! arrays are sequences, `json.null` stands for null). Does not own:
--! anything of the host; it keeps no state.

local json = {}

local null = table.freeze({})
json.null = null

local escapes = {
	['"'] = '\\"', ["\\"] = "\\\\", ["\b"] = "\\b", ["\f"] = "\\f",
	["\n"] = "\\n", ["\r"] = "\\r", ["\t"] = "\\t",
}

local function encode_string(s)
	return '"' .. string.gsub(s, '[%c"\\]', function(c)
		return escapes[c] or string.format("\\u%04x", string.byte(c))
	end) .. '"'
end

local function is_array(t)
	local n = 0
	for k in next, t do
		if type(k) ~= "number" or k <= 0 or k % 1 ~= 0 then
			return false
		end
		n += 1
	end
	return n == #t
end

local function encode(value, out, depth)
	if depth > 64 then
		error("json.encode: nested too deeply", 0)
	end
	local t = type(value)
	if value == nil or value == null then
		out[#out + 1] = "null"
	elseif t == "boolean" then
		out[#out + 1] = tostring(value)
	elseif t == "number" then
		if value ~= value or value == math.huge or value == -math.huge then
			error("json.encode: cannot encode " .. tostring(value), 0)
		end
		if value % 1 == 0 and math.abs(value) < 2 ^ 53 then
			out[#out + 1] = string.format("%d", value)
		else
			out[#out + 1] = string.format("%.17g", value)
		end
	elseif t == "string" then
		out[#out + 1] = encode_string(value)
	elseif t == "table" then
		if is_array(value) then
			out[#out + 1] = "["
			for i = 1, #value do
				if i > 1 then
					out[#out + 1] = ","
				end
				encode(rawget(value, i), out, depth + 1)
			end
			out[#out + 1] = "]"
		else
			local keys = {}
			for k in next, value do
				if type(k) ~= "string" then
					error("json.encode: object keys must be strings, got " .. type(k), 0)
				end
				keys[#keys + 1] = k
			end
			table.sort(keys)
			out[#out + 1] = "{"
			for i, k in ipairs(keys) do
				if i > 1 then
					out[#out + 1] = ","
				end
				out[#out + 1] = encode_string(k)
				out[#out + 1] = ":"
				encode(rawget(value, k), out, depth + 1)
			end
			out[#out + 1] = "}"
		end
	else
		error("json.encode: cannot encode a " .. t, 0)
	end
end

function json.encode(value)
	local out = {}
	encode(value, out, 0)
	return table.concat(out)
end

function json.decode(text)
	if type(text) ~= "string" then
		error("json.decode expects a string", 2)
	end
	local pos = 1
	local function fail(what)
		error(string.format("json.decode: %s at byte %d", what, pos), 0)
	end
	local function skip()
		pos = string.find(text, "[^ \t\r\n]", pos) or #text + 1
	end
	local value
	local function str()
		local parts = {}
		pos += 1
		while true do
			local c = string.sub(text, pos, pos)
			if c == "" then
				fail("unterminated string")
			elseif c == '"' then
				pos += 1
				return table.concat(parts)
			elseif c == "\\" then
				local e = string.sub(text, pos + 1, pos + 1)
				local simple = ({ b = "\b", f = "\f", n = "\n", r = "\r", t = "\t", ['"'] = '"', ["\\"] = "\\", ["/"] = "/" })[e]
				if simple then
					parts[#parts + 1] = simple
					pos += 2
				elseif e == "u" then
					local hex = string.match(text, "^%x%x%x%x", pos + 2)
					if not hex then
						fail("bad \\u escape")
					end
					parts[#parts + 1] = utf8.char(tonumber(hex, 16))
					pos += 6
				else
					fail("bad escape")
				end
			else
				local run = string.match(text, '^[^"\\]+', pos)
				parts[#parts + 1] = run
				pos += #run
			end
		end
	end
	function value(depth)
		if depth > 64 then
			fail("nested too deeply")
		end
		skip()
		local c = string.sub(text, pos, pos)
		if c == "{" then
			local t = {}
			pos += 1
			skip()
			if string.sub(text, pos, pos) == "}" then
				pos += 1
				return t
			end
			while true do
				skip()
				if string.sub(text, pos, pos) ~= '"' then
					fail("expected a key")
				end
				local k = str()
				skip()
				if string.sub(text, pos, pos) ~= ":" then
					fail("expected ':'")
				end
				pos += 1
				t[k] = value(depth + 1)
				skip()
				local d = string.sub(text, pos, pos)
				pos += 1
				if d == "}" then
					return t
				elseif d ~= "," then
					fail("expected ',' or '}'")
				end
			end
		elseif c == "[" then
			local t = {}
			pos += 1
			skip()
			if string.sub(text, pos, pos) == "]" then
				pos += 1
				return t
			end
			while true do
				t[#t + 1] = value(depth + 1)
				skip()
				local d = string.sub(text, pos, pos)
				pos += 1
				if d == "]" then
					return t
				elseif d ~= "," then
					fail("expected ',' or ']'")
				end
			end
		elseif c == '"' then
			return str()
		elseif string.sub(text, pos, pos + 3) == "true" then
			pos += 4
			return true
		elseif string.sub(text, pos, pos + 4) == "false" then
			pos += 5
			return false
		elseif string.sub(text, pos, pos + 3) == "null" then
			pos += 4
			return null
		else
			local num = string.match(text, "^-?%d+%.?%d*[eE]?[-+]?%d*", pos)
			if not num or num == "" then
				fail("unexpected character")
			end
			pos += #num
			return tonumber(num) or fail("bad number")
		end
	end
	local result = value(0)
	skip()
	if pos <= #text then
		fail("trailing characters")
	end
	return result
end

return { safe = json }
