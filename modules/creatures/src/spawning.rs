//! Spawning: the spawn area made ready (its sections loaded or asked
//! for) before anything is placed, the creatures already in the world
//! adopted (at start and every 5 s; one saved by an earlier version is
//! given its kind's `model` var), the herds kept at their counts
//! (queued spawns, transient creatures past the count removed), and the
//! queued ones placed on the surface of random columns of their herd's
//! area, a batch a tick in one `GetVoxels` and one `CreateNodes`.
//!
//! Owns: the spawn queue and the surface rule (above the highest solid
//! voxel, in air, or in water for the far herd). Does not own: how they
//! move (`moving.rs`), sleeping (`sleeping.rs`), the count of persistent
//! creatures made (`count.rs`).

use super::*;

use buildat_voxelworld_api::SetNodeVar;

impl Creatures {
    /// The sections the main herd's spawning searches, made ready before
    /// anything spawns (so the persistent creatures stored there are found
    /// first): every column within the radius of the origin, in
    /// [`SURFACE_SECTIONS_Y`] (the main herd's middle is the origin). The
    /// far herd's are read (and generated)
    /// when a player comes near it and its creatures are placed.
    pub(crate) fn area_sections(&self) -> Vec<Pos> {
        let r = self.radius.ceil() as i32;
        let low = self.section_of([-r, 0, -r]);
        let high = self.section_of([r, 0, r]);
        let mut sections = Vec::new();
        for sy in SURFACE_SECTIONS_Y {
            for sz in low[2]..=high[2] {
                for sx in low[0]..=high[0] {
                    sections.push([sx, sy, sz]);
                }
            }
        }
        sections
    }

    /// Loads or asks for the spawn area's sections; once all are there,
    /// finds the creatures they hold and may start spawning.
    pub(crate) fn prepare(&mut self) -> Result<(), ModuleError> {
        let mut ready = true;
        for section in self.area_sections() {
            ready &= self.ask_section(section)?;
        }
        if ready {
            self.prepared = true;
            self.adopt()?;
            log::info!(
                "creatures: area ready, {} creatures found",
                self.creatures.len()
            );
        }
        Ok(())
    }

    /// Takes in the loaded creature nodes not in the table yet (persistent
    /// ones whose section loaded, any left by a version that failed), and
    /// forgets those no longer loaded.
    pub(crate) fn adopt(&mut self) -> Result<(), ModuleError> {
        let nodes = self.host.call(&ListNodes {
            with_var: Some(VAR_CREATURE.to_string()),
        })?;
        let loaded: HashSet<u64> = nodes.iter().map(|n| n.id).collect();
        self.creatures.retain(|c| loaded.contains(&c.id));
        self.ids.retain(|id| loaded.contains(id));
        let mut adopted = 0;
        for node in nodes {
            if self.ids.contains(&node.id) {
                continue;
            }
            let Some(kind) = kinds::kind_of(&node.vars) else {
                continue;
            };
            // A node saved by an earlier version names no model (or an
            // old one): it names its kind's now, once, as it is adopted.
            let model = KINDS[kind].model();
            if node.vars.get(kinds::VAR_MODEL).map(Vec::as_slice) != Some(model.as_bytes()) {
                let set = SetNodeVar {
                    id: node.id,
                    name: kinds::VAR_MODEL.to_string(),
                    value: model.into_bytes(),
                };
                if let Err(error) = self.host.call(&set) {
                    log::debug!("creatures: node {} keeps its old model: {error}", node.id);
                }
            }
            self.ids.insert(node.id);
            self.creatures
                .push(Creature::new(node.id, kind, node.position, &mut self.rng));
            adopted += 1;
        }
        if adopted > 0 {
            log::info!("creatures: found {adopted} creatures in the world");
        }
        Ok(())
    }

    /// Queues spawns up to the settings, removes transient creatures past
    /// `creatures.count`.
    pub(crate) fn keep_population(&mut self) -> Result<(), ModuleError> {
        let transient: Vec<usize> = kinds::transient().collect();
        let persistent: Vec<usize> = kinds::persistent().collect();
        let herds = self.herds;
        for (far, wanted) in [(false, self.count), (true, herds.far_count)] {
            let in_herd =
                |c: &&Creature| !KINDS[c.kind].persistent && herds.is_far(c.state.position) == far;
            let sleeping = self.asleep.iter().filter(in_herd).count();
            let alive = self.creatures.iter().filter(in_herd).count() + sleeping;
            let queued = self
                .spawns
                .iter()
                .filter(|s| !KINDS[s.kind].persistent && s.far == far)
                .count();
            for i in alive + queued..wanted {
                self.spawns.push(Spawn {
                    kind: transient[i % transient.len()],
                    far,
                });
            }
            if alive > wanted {
                // The sleeping ones first: they have no node to remove.
                let mut extra_sleeping = (alive - wanted).min(sleeping);
                self.asleep.retain(|c| {
                    let drop = extra_sleeping > 0 && in_herd(&c);
                    extra_sleeping -= usize::from(drop);
                    !drop
                });
                let alive = self.creatures.iter().filter(in_herd).count();
                let wanted = wanted.saturating_sub(self.asleep.iter().filter(in_herd).count());
                if alive <= wanted {
                    continue;
                }
                let extra: Vec<u64> = self
                    .creatures
                    .iter()
                    .filter(in_herd)
                    .take((alive - wanted).min(REMOVALS_PER_TICK))
                    .map(|c| c.id)
                    .collect();
                self.remove_nodes(&extra, "past creatures.count");
                let extra: HashSet<u64> = extra.into_iter().collect();
                self.creatures.retain(|c| !extra.contains(&c.id));
                self.ids.retain(|id| !extra.contains(id));
            }
        }
        let queued = self
            .spawns
            .iter()
            .filter(|s| KINDS[s.kind].persistent)
            .count() as u32;
        for i in self.persistent_created.saturating_add(queued)..self.persistent {
            self.spawns.push(Spawn {
                kind: persistent[i as usize % persistent.len()],
                far: false,
            });
        }
        Ok(())
    }

    pub(crate) fn forget(&mut self, id: u64) {
        self.ids.remove(&id);
        self.creatures.retain(|c| c.id != id);
    }

    /// Places up to [`SPAWNS_PER_TICK`] queued creatures on the surface of
    /// random columns of their herd's area (one `GetVoxels` for all the
    /// columns).
    pub(crate) fn spawn_some(&mut self, dt: f64) -> Result<(), ModuleError> {
        self.spawn_backoff -= dt;
        if self.spawns.is_empty() || self.spawn_backoff > 0.0 {
            return Ok(());
        }
        // A herd with no player near is placed when one comes: placing
        // reads (and so generates) its ground, and it would only sleep.
        let near = [false, true].map(|far| self.herd_has_player_near(far));
        let (mut ready, waiting): (Vec<Spawn>, Vec<Spawn>) = self
            .spawns
            .drain(..)
            .partition(|s| near[usize::from(s.far)]);
        self.spawns = waiting;
        if ready.is_empty() {
            return Ok(());
        }
        let [_, h, _] = self.section_size.0;
        let top = (SURFACE_SECTIONS_Y[0] + 1) * h * geometry::CHUNK_SIZE - 1;
        let bottom = SURFACE_SECTIONS_Y[2] * h * geometry::CHUNK_SIZE;
        let tries = ready.len().min(SPAWNS_PER_TICK);
        let batch = ready.split_off(ready.len() - tries);
        self.spawns.extend(ready);
        let mut columns: Vec<[i32; 2]> = Vec::with_capacity(tries);
        for spawn in &batch {
            // Uniform in the disc.
            let [cx, cz] = self.herds.centre(spawn.far);
            let r = self.radius * self.rng.unit().sqrt();
            let a = self.rng.range(0.0, std::f64::consts::TAU);
            columns.push([
                (cx + r * a.sin()).floor() as i32,
                (cz + r * a.cos()).floor() as i32,
            ]);
        }
        let positions: Vec<Pos> = columns
            .iter()
            .flat_map(|&[x, z]| (bottom..=top).rev().map(move |y| [x, y, z]))
            .collect();
        let mut voxels = Vec::with_capacity(positions.len());
        for batch in positions.chunks(MAX_VOXELS_PER_CALL) {
            voxels.extend(self.host.call(&GetVoxels {
                positions: batch.to_vec(),
            })?);
        }
        let height = (top - bottom + 1) as usize;
        let mut unplaced = Vec::new();
        let mut placing = Vec::new();
        for ((column, [x, z]), spawn) in voxels.chunks(height).zip(columns).zip(batch) {
            // The far herd is for measuring: it stands on the sea floor
            // too, wherever its area happens to be in this world.
            match self.surface(column, top, spawn.far)? {
                Some(surface) => placing.push((
                    spawn,
                    [f64::from(x) + 0.5, f64::from(surface), f64::from(z) + 0.5],
                )),
                None => unplaced.push(spawn),
            }
        }
        // One call for the tick's creatures.
        let nodes = placing
            .iter()
            .map(|(spawn, position)| KINDS[spawn.kind].node_at(*position))
            .collect();
        let ids = if placing.is_empty() {
            Vec::new()
        } else {
            self.host.call(&CreateNodes { nodes })?
        };
        let mut placed = 0;
        let mut persistent_made = false;
        for ((spawn, position), id) in placing.into_iter().zip(ids) {
            let Some(id) = id else {
                unplaced.push(spawn);
                continue;
            };
            if KINDS[spawn.kind].persistent {
                self.persistent_created = self.persistent_created.saturating_add(1);
                persistent_made = true;
            }
            let mut creature = Creature::new(id, spawn.kind, position, &mut self.rng);
            creature.state.on_ground = true;
            self.ids.insert(id);
            self.creatures.push(creature);
            placed += 1;
        }
        if persistent_made
            && let Err(error) = count::write_count(&mut self.host, self.persistent_created)
        {
            log::error!("creatures: recording the persistent creatures made: {error}");
        }
        // Tried again after the others waiting.
        self.spawns.splice(0..0, unplaced);
        if placed == 0 {
            // Water everywhere tried, or not generated: try other columns
            // in a second (while some are placed, the rest try again at
            // once on other columns).
            self.spawn_backoff = 1.0;
        }
        Ok(())
    }

    /// The y to stand at on a column read from `top` down: above its
    /// highest solid voxel, if air is there (or water, if `wet` is
    /// allowed) and the column is generated and does not reach the top.
    pub(crate) fn surface(
        &mut self,
        column: &[Option<u32>],
        top: i32,
        wet: bool,
    ) -> Result<Option<i32>, ModuleError> {
        let mut above = None;
        for (depth, voxel) in column.iter().enumerate() {
            let Some(voxel) = *voxel else {
                return Ok(None);
            };
            let solid = match self.types.solid(voxel) {
                Some(solid) => solid,
                None => {
                    self.refresh_registry()?;
                    self.types.solid(voxel).unwrap_or(true)
                }
            };
            if solid {
                let open = above.is_some_and(|v| wet || VoxelInstance(v).type_id() == AIR);
                return Ok(open.then(|| top - depth as i32 + 1));
            }
            above = Some(voxel);
        }
        Ok(None)
    }
}
