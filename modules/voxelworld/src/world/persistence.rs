//! The world and its storage: loading a section (from memory, storage,
//! or created empty for the generator), translating it to and from a
//! storage record (voxels by name through `buildat-format`'s voxel blob),
//! the loaded-section budget (eviction saves first what must be saved),
//! saving (a section at a time, each in one transaction; in slices or
//! all), and carrying sections across a reload.
//!
//! Owns: what is written and when (only save-enabled sections, or those
//! holding a save-enabled node; a section whose save fails stays in
//! memory, dirty, over the budget if need be). Does not own: the storage
//! backends (`storage.rs`).

use super::*;

impl World {
    /// Makes sure the section is in memory: from memory, storage, or created
    /// empty (then it needs generation).
    pub fn load_section(&mut self, pos: Pos) -> Result<Loaded, WorldError> {
        self.clock += 1;
        if let Some(section) = self.sections.get_mut(&pos) {
            section.last_used = self.clock;
            return Ok(if section.generated {
                Loaded::Ready
            } else {
                Loaded::Generating
            });
        }
        self.evict_to_fit()?;
        let stored = self.storage.load_section(pos)?;
        let decoded = match stored {
            Some(stored) => {
                let generated = stored.generated;
                match self.decode_section(stored) {
                    Ok(section) => Some((section, generated)),
                    Err(error) => {
                        let reason = error.to_string();
                        log::error!(
                            "section {pos:?} is damaged ({reason}): moved to the quarantine table \
                             of the world's database and generated again"
                        );
                        self.storage.quarantine_section(pos, &reason)?;
                        None
                    }
                }
            }
            None => None,
        };
        if let Some((section, true)) = &decoded {
            self.light_dirty.extend(section.chunks.keys().copied());
            self.note_section(pos, true);
        }
        for chunk in self.section_size.chunks_of_section(pos) {
            self.forget_light_voxels(chunk);
        }
        let (mut section, loaded) = match decoded {
            Some((section, true)) => (section, Loaded::Ready),
            Some((section, false)) => (section, Loaded::NeedsGeneration),
            None => {
                let section = Section {
                    chunks: BTreeMap::new(),
                    dynamic: BTreeMap::new(),
                    save_enabled: false,
                    generated: false,
                    dirty: false,
                    last_used: self.clock,
                    stored: false,
                };
                (section, Loaded::NeedsGeneration)
            }
        };
        // A section saved before generation (it held a save-enabled node)
        // keeps its nodes; its chunks start empty until generated.
        let missing: Vec<Pos> = self
            .section_size
            .chunks_of_section(pos)
            .into_iter()
            .filter(|chunk| !section.chunks.contains_key(chunk))
            .collect();
        for chunk in missing {
            let node_id = self.next_id()?;
            section.chunks.insert(chunk, Chunk::empty(node_id));
        }
        self.sections.insert(
            pos,
            Section {
                last_used: self.clock,
                ..section
            },
        );
        self.index_nodes(pos);
        Ok(loaded)
    }

    pub(super) fn decode_section(&mut self, stored: StoredSection) -> Result<Section, WorldError> {
        let mut section = Section {
            chunks: BTreeMap::new(),
            dynamic: BTreeMap::new(),
            save_enabled: stored.save_enabled,
            generated: stored.generated,
            dirty: false,
            last_used: self.clock,
            stored: true,
        };
        for (id, data) in stored.nodes {
            let node: StoredNode =
                buildat_interface::decode(&data).map_err(|e| WorldError::BadNode {
                    id,
                    why: e.to_string(),
                })?;
            match node.kind {
                StoredNodeKind::StaticChunk { chunk } => {
                    let mut vars = node.vars;
                    let blob = vars.remove(VAR_VOXEL_DATA).unwrap_or_default();
                    section.chunks.insert(chunk, Chunk::from_blob(id, blob)?);
                }
                StoredNodeKind::Dynamic { position } => {
                    let node = DynamicNode::at_rest(id, position, node.save_enabled, node.vars);
                    section.dynamic.insert(id, node);
                }
                StoredNodeKind::Moving {
                    position,
                    orientation,
                    velocity,
                    parent,
                } => {
                    let node = DynamicNode {
                        orientation,
                        velocity,
                        parent,
                        ..DynamicNode::at_rest(id, position, node.save_enabled, node.vars)
                    };
                    section.dynamic.insert(id, node);
                }
            }
        }
        Ok(section)
    }

    pub(super) fn encode_chunk(&self, voxels: &[u32]) -> Vec<u8> {
        let registry = &self.voxels;
        encode_voxels(voxels, |id| {
            registry.get_name(id).or_else(|| registry.get_name(UNKNOWN))
        })
        .unwrap_or_default()
    }

    /// The chunk's blob: the one it came with while unchanged, else encoded now.
    pub(super) fn chunk_blob(&self, chunk: &Chunk) -> Vec<u8> {
        match (&chunk.blob, &chunk.voxels) {
            (Some(blob), _) => blob.clone(),
            (None, Some(voxels)) => self.encode_chunk(voxels),
            (None, None) => self.encode_chunk(&[AIR; CHUNK_VOLUME]),
        }
    }

    /// The section as a storage record; `for_storage` leaves out the nodes
    /// that are never written (a reload's stash keeps them).
    pub(super) fn encode_section(
        &self,
        pos: Pos,
        section: &Section,
        for_storage: bool,
    ) -> Result<StoredSection, WorldError> {
        let mut nodes = Vec::new();
        for (chunk_pos, chunk) in &section.chunks {
            let vars = BTreeMap::from([
                (VAR_VOXEL_DATA.to_string(), self.chunk_blob(chunk)),
                (
                    VAR_REGISTRY_NAME.to_string(),
                    REGISTRY_NAME.as_bytes().to_vec(),
                ),
                (
                    VAR_MOD_VERSION.to_string(),
                    BLOB_VERSION.as_bytes().to_vec(),
                ),
            ]);
            let node = StoredNode {
                kind: StoredNodeKind::StaticChunk { chunk: *chunk_pos },
                save_enabled: section.save_enabled,
                vars,
            };
            nodes.push((chunk.node_id, buildat_interface::encode(&node)?));
        }
        for node in section.dynamic.values() {
            if for_storage && !node.save_enabled {
                continue;
            }
            let stored = StoredNode {
                kind: StoredNodeKind::Moving {
                    position: node.position,
                    orientation: node.orientation,
                    velocity: node.velocity,
                    parent: node.parent,
                },
                save_enabled: node.save_enabled,
                vars: node.vars.clone(),
            };
            nodes.push((node.id, buildat_interface::encode(&stored)?));
        }
        Ok(StoredSection {
            pos,
            save_enabled: section.save_enabled,
            generated: section.generated,
            nodes,
        })
    }

    /// Evicts least recently used sections until one more fits, saving
    /// those that must be saved first.
    pub(super) fn evict_to_fit(&mut self) -> Result<(), WorldError> {
        if self.sections.len() < self.budget {
            return Ok(());
        }
        let mut oldest: Vec<(u64, Pos)> = self
            .sections
            .iter()
            .filter(|(_, s)| s.generated && !s.holds_transient_nodes())
            .map(|(pos, s)| (s.last_used, *pos))
            .collect();
        oldest.sort_unstable();
        for (_, pos) in oldest {
            if self.sections.len() < self.budget {
                break;
            }
            // One that cannot be written now stays, over the budget.
            if self.save_section(pos).is_ok()
                && let Some(section) = self.sections.remove(&pos)
            {
                self.unindex_nodes(&section);
                self.note_section(pos, false);
            }
        }
        Ok(())
    }

    /// Sections holding changes storage has not taken yet.
    pub fn unsaved_count(&self) -> usize {
        self.sections.values().filter(|s| s.needs_write()).count()
    }

    /// The sections holding changes storage has not taken yet, as storage
    /// records (for a recovery file when storage fails at stop).
    pub fn unsaved_sections(&self) -> Result<Vec<StoredSection>, WorldError> {
        self.sections
            .iter()
            .filter(|(_, s)| s.needs_write())
            .map(|(pos, section)| self.encode_section(*pos, section, true))
            .collect()
    }

    /// Writes a storage record as it is (a recovered section: voxels by
    /// name, so no registry is needed), unless the section is loaded.
    pub fn write_stored(&mut self, stored: &StoredSection) -> Result<(), WorldError> {
        if self.sections.contains_key(&stored.pos) {
            return Ok(());
        }
        Ok(self.storage.save_section(stored)?)
    }

    /// Writes one section if it is dirty and must be saved; true if written.
    pub(super) fn save_section(&mut self, pos: Pos) -> Result<bool, WorldError> {
        let Some(section) = self.sections.get(&pos) else {
            return Ok(false);
        };
        if !section.needs_write() {
            return Ok(false);
        }
        let stored = self.encode_section(pos, section, true)?;
        self.storage.save_section(&stored)?;
        if let Some(section) = self.sections.get_mut(&pos) {
            section.dirty = false;
            section.stored = true;
        }
        Ok(true)
    }

    /// Writes dirty sections that must be saved until `deadline` (at least
    /// one); answers how many, and whether none is left.
    pub fn save_some(&mut self, deadline: Instant) -> Result<(u32, bool), WorldError> {
        let positions: Vec<Pos> = self
            .sections
            .iter()
            .filter(|(_, s)| s.needs_write())
            .map(|(pos, _)| *pos)
            .collect();
        let mut saved = 0;
        for pos in &positions {
            if saved > 0 && Instant::now() >= deadline {
                return Ok((saved, false));
            }
            if self.save_section(*pos)? {
                saved += 1;
            }
        }
        Ok((saved, true))
    }

    /// Writes every dirty section that must be saved; answers how many.
    pub fn save_all(&mut self) -> Result<u32, WorldError> {
        let positions: Vec<Pos> = self.sections.keys().copied().collect();
        let mut saved = 0;
        for pos in positions {
            if self.save_section(pos)? {
                saved += 1;
            }
        }
        Ok(saved)
    }

    /// Every loaded generated section as a storage record with its dirty
    /// flag (to carry the world across a reload of the module).
    pub fn export_sections(&self) -> Result<Vec<(StoredSection, bool)>, WorldError> {
        self.sections
            .iter()
            .filter(|(_, s)| s.generated)
            .map(|(pos, section)| Ok((self.encode_section(*pos, section, false)?, section.dirty)))
            .collect()
    }

    /// Puts a section exported by [`World::export_sections`] back in memory.
    pub fn import_section(&mut self, stored: StoredSection, dirty: bool) -> Result<(), WorldError> {
        let pos = stored.pos;
        let mut section = self.decode_section(stored)?;
        section.dirty = dirty;
        if section.generated {
            self.light_dirty.extend(section.chunks.keys().copied());
        }
        for chunk in section.chunks.keys() {
            self.light_decoded.remove(*chunk);
        }
        if let Some(old) = self.sections.insert(pos, section) {
            self.unindex_nodes(&old);
        }
        self.index_nodes(pos);
        Ok(())
    }

    /// Whether storage holds a generated section at `pos`.
    pub fn is_stored(&mut self, pos: Pos) -> Result<bool, WorldError> {
        Ok(self.storage.has_generated_section(pos)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::SqliteStorage;
    use crate::world::tests::*;
    use std::sync::atomic::Ordering;

    /// The same world on each backend: voxels, a persistent node and its
    /// id, saved, reopened from storage alone.
    #[test]
    fn a_saved_world_reopens_whole_on_every_backend() {
        for backend in crate::storage::testing::each_backend() {
            let name = backend.backend;
            let reopen = || world_on(backend.open(SectionSize::default()));
            let mut world = reopen();
            generate(&mut world, [0, 0, 0], "stone");
            generate(&mut world, [1, 0, 0], "stone");
            world.set_section_save_enabled([0, 0, 0], true).unwrap();
            world.set_section_save_enabled([1, 0, 0], true).unwrap();
            let dirt = world.voxels.get_id("dirt").unwrap();
            world.set_voxel([3, 60, 5], dirt).unwrap();
            let vars = BTreeMap::from([("kind".to_string(), b"cow".to_vec())]);
            let id = world.create_node([5.0, 50.0, 5.0], true, vars).unwrap();
            assert_eq!(world.save_all().unwrap(), 2, "{name}");
            drop(world);
            let mut world = reopen();
            assert_eq!(
                world.load_section([0, 0, 0]).unwrap(),
                Loaded::Ready,
                "{name}"
            );
            assert_eq!(world.get_voxel([3, 60, 5]).unwrap(), Some(dirt), "{name}");
            let node = world.get_node(id).expect("the node is back");
            assert_eq!(node.vars.get("kind").map(Vec::as_slice), Some(&b"cow"[..]));
            let fresh = world
                .create_node([6.0, 50.0, 6.0], true, BTreeMap::new())
                .unwrap();
            assert!(
                fresh > id,
                "{name}: ids are not reused ({fresh} after {id})"
            );
        }
    }

    #[test]
    fn a_damaged_section_is_quarantined_and_generated_again() {
        let dir = tempfile::tempdir().unwrap();
        {
            let mut world = open(dir.path());
            for x in 0..2 {
                generate(&mut world, [x, 0, 0], "stone");
                world.set_section_save_enabled([x, 0, 0], true).unwrap();
            }
            assert_eq!(world.save_all().unwrap(), 2);
        }
        let raw = rusqlite::Connection::open(dir.path().join("world.sqlite")).unwrap();
        raw.execute("UPDATE node SET data = x'ff00ff' WHERE sx = 0", [])
            .unwrap();
        let mut world = open(dir.path());
        assert_eq!(
            world.load_section([0, 0, 0]).unwrap(),
            Loaded::NeedsGeneration,
            "the damaged one is generated again"
        );
        assert_eq!(world.load_section([1, 0, 0]).unwrap(), Loaded::Ready);
        generate_loaded(&mut world, [0, 0, 0], "stone");
        assert!(world.get_voxel([1, 1, 1]).unwrap().is_some());
        let quarantined: i64 = raw
            .query_row("SELECT count(*) FROM quarantine WHERE sx = 0", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert!(quarantined > 0, "the damaged rows are kept aside");
    }

    #[test]
    fn edits_outlive_a_failing_disk() {
        let dir = tempfile::tempdir().unwrap();
        let (mut world, faults) = faulty(dir.path(), 2);
        faults.writes.store(true, Ordering::Relaxed);
        for x in 0..2 {
            generate(&mut world, [x, 0, 0], "stone");
            world.set_section_save_enabled([x, 0, 0], true).unwrap();
        }
        let stone = world.voxels.get_id("stone").unwrap();
        world.set_voxel([1, 2, 3], stone).unwrap();
        assert!(world.save_some(Instant::now()).is_err(), "the disk is full");
        assert!(world.save_all().is_err());
        assert_eq!(world.unsaved_count(), 2, "kept, still dirty");
        // Loading more than the budget keeps what cannot be written.
        generate(&mut world, [5, 0, 0], "stone");
        assert_eq!(
            world.loaded_sections(),
            3,
            "over the budget, nothing dropped"
        );
        assert_eq!(world.unsaved_sections().unwrap().len(), 2);
        // The disk comes back: everything is written, and evicted after.
        faults.writes.store(false, Ordering::Relaxed);
        assert_eq!(world.save_all().unwrap(), 2);
        assert_eq!(world.unsaved_count(), 0);
        drop(world);
        let mut world = open(dir.path());
        assert_eq!(world.load_section([0, 0, 0]).unwrap(), Loaded::Ready);
        assert_eq!(world.get_voxel([1, 2, 3]).unwrap(), Some(stone));
    }

    #[test]
    fn voxels_round_trip_through_save_and_load() {
        let dir = tempfile::tempdir().unwrap();
        let stone;
        {
            let mut world = open(dir.path());
            stone = world.voxels.get_id("stone").unwrap();
            generate(&mut world, [0, 0, 0], "stone");
            world.set_section_save_enabled([0, 0, 0], true).unwrap();
            world.set_voxel([5, 40, 7], AIR).unwrap();
            world
                .set_voxel([63, 63, 63], buildat_voxel::VoxelInstance::new(stone, 9).0)
                .unwrap();
            assert_eq!(world.commit().len(), 2);
            assert_eq!(world.save_all().unwrap(), 1);
        }
        let mut world = open(dir.path());
        assert_eq!(
            world.load_section([0, 0, 0]).unwrap(),
            Loaded::Ready,
            "saved sections come back"
        );
        assert_eq!(world.get_voxel([5, 40, 7]).unwrap(), Some(AIR));
        assert_eq!(world.get_voxel([0, 0, 0]).unwrap(), Some(stone));
        assert_eq!(world.get_voxel([0, 31, 31]).unwrap(), Some(AIR));
        let with_bits = world.get_voxel([63, 63, 63]).unwrap().unwrap();
        assert_eq!(buildat_voxel::VoxelInstance(with_bits).game_bits(), 9);
    }

    #[test]
    fn a_save_in_slices_writes_every_dirty_section_in_the_end() {
        let dir = tempfile::tempdir().unwrap();
        let mut world = open(dir.path());
        for x in 0..3 {
            generate(&mut world, [x, 0, 0], "stone");
            world.set_section_save_enabled([x, 0, 0], true).unwrap();
        }
        // A deadline already past still writes one section per call.
        let past = Instant::now();
        assert_eq!(world.save_some(past).unwrap(), (1, false));
        assert_eq!(world.save_some(past).unwrap(), (1, false));
        assert_eq!(world.save_some(past).unwrap(), (1, true));
        assert_eq!(world.save_some(past).unwrap(), (0, true), "nothing left");
        assert_eq!(world.save_all().unwrap(), 0);
    }

    #[test]
    fn registry_changes_still_load_old_saves_by_name() {
        let dir = tempfile::tempdir().unwrap();
        {
            let mut world = open(dir.path());
            generate(&mut world, [1, 0, 0], "dirt");
            world.set_section_save_enabled([1, 0, 0], true).unwrap();
            world.save_all().unwrap();
        }
        // A new server run registers blocks in another order, with another
        // definition of dirt, and without stone.
        let storage =
            SqliteStorage::open(&dir.path().join("world.sqlite"), SectionSize::default()).unwrap();
        let mut world = World::new(Box::new(storage), 64);
        world
            .register_block(BlockDefinition::simple("glass", "glass.png"))
            .unwrap();
        world
            .register_block(BlockDefinition::simple("sand", "sand.png"))
            .unwrap();
        let mut dirt = BlockDefinition::simple("dirt", "mud.png");
        dirt.physically_solid = false;
        let dirt_id = world.register_block(dirt).unwrap()[0];
        assert_ne!(dirt_id, 3, "ids were shuffled");
        assert_eq!(
            world.get_voxel([64, 0, 0]).unwrap(),
            Some(dirt_id),
            "dirt is still dirt"
        );
        assert!(world.unknown_names.is_empty());
    }

    #[test]
    fn unknown_names_become_the_placeholder_and_are_reported() {
        let dir = tempfile::tempdir().unwrap();
        {
            let mut world = open(dir.path());
            generate(&mut world, [0, 0, 0], "stone");
            world.set_section_save_enabled([0, 0, 0], true).unwrap();
            world.save_all().unwrap();
        }
        let storage =
            SqliteStorage::open(&dir.path().join("world.sqlite"), SectionSize::default()).unwrap();
        let mut world = World::new(Box::new(storage), 64);
        assert_eq!(world.get_voxel([0, 0, 0]).unwrap(), Some(UNKNOWN));
        assert!(world.unknown_names.contains("stone"));
    }

    #[test]
    fn save_disabled_sections_are_not_written_and_come_back_for_generation() {
        let dir = tempfile::tempdir().unwrap();
        {
            let mut world = open(dir.path());
            generate(&mut world, [0, 0, 0], "stone");
            world.set_voxel([1, 1, 1], AIR).unwrap();
            assert_eq!(
                world.save_all().unwrap(),
                0,
                "save-disabled: nothing written"
            );
            // A save-enabled dynamic node makes its section saved.
            generate(&mut world, [2, 0, 0], "stone");
            world
                .create_node([134.0, 1.0, 1.0], true, BTreeMap::new())
                .unwrap();
            assert_eq!(world.save_all().unwrap(), 1);
        }
        let mut world = open(dir.path());
        assert_eq!(
            world.load_section([0, 0, 0]).unwrap(),
            Loaded::NeedsGeneration
        );
        assert_eq!(world.load_section([2, 0, 0]).unwrap(), Loaded::Ready);
    }

    #[test]
    fn node_ids_are_never_reused_across_restarts() {
        let dir = tempfile::tempdir().unwrap();
        let mut seen = BTreeSet::new();
        for _ in 0..3 {
            let mut world = open(dir.path());
            generate(&mut world, [0, 0, 0], "stone");
            for _ in 0..5 {
                let id = world
                    .create_node([1.0, 1.0, 1.0], false, BTreeMap::new())
                    .unwrap();
                assert!(seen.insert(id), "id {id} reused");
            }
        }
    }

    #[test]
    fn eviction_saves_what_must_be_saved() {
        let dir = tempfile::tempdir().unwrap();
        let storage =
            SqliteStorage::open(&dir.path().join("world.sqlite"), SectionSize::default()).unwrap();
        let mut world = World::new(Box::new(storage), 2);
        world
            .register_block(BlockDefinition::simple("stone", "stone.png"))
            .unwrap();
        generate(&mut world, [0, 0, 0], "stone");
        world.set_section_save_enabled([0, 0, 0], true).unwrap();
        generate(&mut world, [1, 0, 0], "stone");
        generate(&mut world, [2, 0, 0], "stone");
        assert!(world.loaded_sections() <= 2);
        assert!(
            world.is_stored([0, 0, 0]).unwrap(),
            "evicted save-enabled section was written"
        );
        assert!(!world.is_stored([1, 0, 0]).unwrap());
    }
}
