-- An entity circling 4 voxels around a point 2 above where it was made (the spawn).
buildat.register_entity("circler", {
	colour = {230, 180, 40}, size = {0.8, 0.8, 0.8}, keep = 1,
	on_step = function(self)
		local angle, home = self.age * 0.8, self.home
		self.object:set_pos({x = home.x + 4 * math.cos(angle), y = home.y + 2, z = home.z + 4 * math.sin(angle)})
		self.object:set_yaw(-angle)
	end,
})
