-- /hello: answers "TEXT #N", TEXT a setting (--set hello.text=hi), N counted in mod storage.
local text = buildat.setting("text", "hello", "What /hello answers, before the count")
local storage = buildat.get_mod_storage()
buildat.register_chatcommand("hello", {
	description = "Greets you", privs = {interact = true},
	func = function()
		storage:set_int("count", storage:get_int("count") + 1)
		return true, text .. " #" .. storage:get_int("count")
	end,
})
