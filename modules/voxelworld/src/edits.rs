//! Edits: blocks registered, voxels set and committed (each edit checked
//! against the voxel there, one commit for a call's edits), the chunks
//! changed announced (`voxelworld:node_volume_updated`) and queued for
//! their holders, and handler modules told (`voxelworld:special/<module>`),
//! everyone every change (`voxelworld:voxels_changed`).
//!
//! Owns: the one-call edit (`edit_voxel`, `edit_voxels`), and edits
//! stored with values (`edit_together`: its bounds, its commit). Does not
//! own: the voxels themselves (`world.rs`; which `edit_together` groups
//! apply and their transaction: `world/together.rs`), what handlers are
//! told (`special.rs`).

use super::*;

impl VoxelWorld {
    pub(crate) fn register_block(
        &mut self,
        request: RegisterBlock,
    ) -> Result<Vec<u32>, ModuleError> {
        let known = self.world.voxels.len();
        let ids = self
            .world
            .register_block(request.block)
            .map_err(ModuleError::from)?;
        if self.world.voxels.len() != known {
            self.registry_packet = None;
            self.streamer.registry_changed();
        }
        Ok(ids)
    }

    /// Announces changed chunks (with the single voxels set in them, if
    /// known) and queues them for their viewers; returns those viewers.
    pub(crate) fn announce(&mut self, updated: &[Committed]) -> Result<Vec<PeerId>, ModuleError> {
        let mut holders = BTreeSet::new();
        for committed in updated {
            self.streamer.voxels_changed(
                committed.chunk,
                committed.voxels.as_deref(),
                &mut holders,
            );
            self.host.emit(&NodeVolumeUpdated {
                node_id: committed.node_id,
                chunk: committed.chunk,
            })?;
        }
        Ok(holders.into_iter().collect())
    }

    /// Announces the chunks changed since the last commit and streams them
    /// to their holders once the current call has answered.
    pub(crate) fn commit(&mut self) -> Result<u32, ModuleError> {
        let updated = self.world.commit();
        let holders = self.announce(&updated)?;
        if !holders.is_empty() {
            if self.changed_holders.is_empty() {
                self.host.emit(&StreamChanges {})?;
            }
            self.changed_holders.extend(holders);
        }
        self.tell_special()?;
        Ok(updated.len() as u32)
    }

    /// Tells each handler module what the commit did to its voxels and
    /// their neighbours: one `voxelworld:special/<module>` event each; and
    /// everyone every change, in one `voxelworld:voxels_changed`.
    pub(crate) fn tell_special(&mut self) -> Result<(), ModuleError> {
        let (told, changes, dropped) = self.world.take_changes();
        if !changes.is_empty() || dropped > 0 {
            self.host.emit(&VoxelsChanged {
                changes: changes
                    .into_iter()
                    .map(|c| VoxelChange {
                        pos: c.pos,
                        was: c.before,
                        now: c.after,
                        by: c.by,
                    })
                    .collect(),
                untold: u32::try_from(dropped).unwrap_or(u32::MAX),
            })?;
        }
        if dropped > 0
            && let Some(suppressed) = self.special_log.allow((), Instant::now())
        {
            log::warn!(
                "a commit changed more than {} voxels: their handler modules were not told of \
                 the last {dropped}{}",
                special::MAX_SPECIAL_CHANGES,
                suppressed_note(suppressed)
            );
        }
        for (module, voxels) in told {
            let payload = buildat_interface::encode(&SpecialVoxels { voxels })?;
            self.host.emit_event(
                &buildat_voxelworld_api::special_voxel_event(&module),
                &payload,
            )?;
        }
        Ok(())
    }

    /// One edit: check, set, mark for saving, commit.
    pub(crate) fn edit_voxel(&mut self, edit: EditVoxel) -> Result<EditOutcome, ModuleError> {
        self.edit_voxels(vec![edit])?
            .pop()
            .ok_or_else(|| ModuleError::msg("an edit went unanswered"))
    }

    /// Edits in turn (each checked against the voxels the ones before it
    /// set), then one commit for all of them: a chunk that several edits
    /// changed is announced, and its change queued for each of its
    /// holders, once, not once per edit (with a thousand players holding
    /// the chunks a tick's digs and places change, that was most of the
    /// world's time). An error stops the edits, but those made before it
    /// are still committed. A commit covers at most
    /// [`special::MAX_SPECIAL_CHANGES`] edits, so handler modules are told
    /// of every one.
    pub(crate) fn edit_voxels(
        &mut self,
        edits: Vec<EditVoxel>,
    ) -> Result<Vec<EditOutcome>, ModuleError> {
        let mut outcomes = Vec::with_capacity(edits.len());
        let mut failed = None;
        for edit in edits {
            if !outcomes.is_empty() && outcomes.len() % special::MAX_SPECIAL_CHANGES == 0 {
                self.commit()?;
            }
            match self.set_checked(edit) {
                Ok(outcome) => outcomes.push(outcome),
                Err(error) => {
                    failed = Some(error);
                    break;
                }
            }
        }
        self.commit()?;
        match failed {
            Some(error) => Err(error),
            None => Ok(outcomes),
        }
    }

    /// Groups of edits and value writes, each all or nothing, every
    /// applied group stored in one transaction before the answer
    /// (`world/together.rs`); then one commit, as for
    /// [`VoxelWorld::edit_voxels`], also when storage failed (the voxels
    /// put back leave nothing to tell).
    pub(crate) fn edit_together(
        &mut self,
        request: EditTogether,
    ) -> Result<Vec<bool>, ModuleError> {
        let edits: usize = request.groups.iter().map(|g| g.edits.len()).sum();
        if edits > MAX_VOXELS_PER_CALL {
            return Err(WorldError::BadRequest(format!(
                "edit_together of {edits} edits: at most {MAX_VOXELS_PER_CALL}"
            ))
            .into());
        }
        let writes: usize = request.groups.iter().map(|g| g.writes.len()).sum();
        if writes > MAX_VALUE_WRITES {
            return Err(WorldError::BadRequest(format!(
                "edit_together of {writes} value writes: at most {MAX_VALUE_WRITES}"
            ))
            .into());
        }
        for group in &request.groups {
            values::check_value_writes(&group.writes)?;
        }
        let outcome = self.world.edit_together(&request.groups);
        if let Ok(together) = &outcome {
            self.sections_saved += u64::from(together.sections_written);
        }
        self.commit()?;
        Ok(outcome.map_err(ModuleError::from)?.applied)
    }

    /// One edit's check and set, marked for saving; not committed.
    pub(crate) fn set_checked(&mut self, edit: EditVoxel) -> Result<EditOutcome, ModuleError> {
        let Some(current) = self.world.get_voxel(edit.pos).map_err(ModuleError::from)? else {
            return Ok(EditOutcome::NotGenerated);
        };
        if !world::replace_allows(edit.replace, current) {
            return Ok(EditOutcome::Refused { current });
        }
        self.world
            .set_voxel_by(edit.pos, edit.voxel, edit.by.as_deref())
            .map_err(ModuleError::from)?;
        if edit.save {
            let section = self
                .world
                .section_size()
                .section_of_chunk(buildat_voxel::geometry::chunk_of_voxel(edit.pos));
            self.world
                .set_section_save_enabled(section, true)
                .map_err(ModuleError::from)?;
        }
        Ok(EditOutcome::Edited { previous: current })
    }
}

/// The calls of this feature, in the module's receive table.
pub(crate) fn receive(table: &mut Receive<VoxelWorld>) {
    table
        .call(|world, request: RegisterBlock| world.register_block(request))
        .call(|world, request: GetVoxel| {
            world
                .world
                .get_voxel(request.pos)
                .map_err(ModuleError::from)
        })
        .call(|world, request: GetVoxels| {
            if request.positions.len() > buildat_voxelworld_api::MAX_VOXELS_PER_CALL {
                return Err(WorldError::TooManyPositions(request.positions.len()).into());
            }
            request
                .positions
                .iter()
                .map(|pos| world.world.get_voxel(*pos))
                .collect::<Result<Vec<_>, _>>()
                .map_err(ModuleError::from)
        })
        .call(|world, request: SetVoxel| {
            world
                .world
                .set_voxel(request.pos, request.voxel)
                .map_err(ModuleError::from)
        })
        .call(|world, _: Commit| world.commit())
        .call(|world, edit: EditVoxel| world.edit_voxel(edit))
        .call(|world, request: EditVoxels| world.edit_voxels(request.edits))
        .call(|world, request: EditTogether| world.edit_together(request));
}

#[cfg(test)]
mod tests {
    use super::*;
    use buildat_interface::testing::{TestHost, TestModule};
    use buildat_network_api::Disconnect;
    use buildat_network_api::receive::testing::{DeliverPackets, disconnected, sent};
    use buildat_voxel::BlockDefinition;
    use buildat_voxel::geometry::SectionSize;
    use buildat_voxelworld_api::stream::{Chunk, Registry, VoxelUpdates};
    use buildat_voxelworld_api::{ApplyGenerated, ChunkData, EditGroup, GetVoxel, Replace};

    /// A section of air, as a generator hands it over.
    fn air(section: Pos) -> ApplyGenerated {
        let chunks = SectionSize::default()
            .chunks_of_section(section)
            .into_iter()
            .map(|chunk| {
                let voxels = vec![buildat_voxel::AIR; CHUNK_SIZE.pow(3) as usize];
                let blob = buildat_format::encode_voxels(&voxels, |_| Some("air")).expect("air");
                (chunk, ChunkData { node_id: 0, blob })
            })
            .collect();
        ApplyGenerated {
            section: GeneratedSection { section, chunks },
        }
    }

    /// A reload on the kit: the table stashes the world, so an edit in a
    /// section never written to storage is still there, and the viewer
    /// still holds its chunks (the change streams to it, no registry again).
    #[test]
    fn a_reload_carries_the_sections_in_memory_and_the_viewers() {
        let dir = tempfile::tempdir().expect("temp dir");
        let kit = TestHost::new().world_path(dir.path());
        let (mut world, stone) = stone_world_with_a_viewer(&kit);
        let unsaved = EditVoxel {
            save: false,
            ..edit([1, 2, 3], stone, Replace::Any)
        };
        world.call(&unsaved).expect("edited");
        let mut world = world.reload::<VoxelWorld>().expect("reloads");
        assert_eq!(
            world.call(&GetVoxel { pos: [1, 2, 3] }).expect("read"),
            Some(stone),
            "carried in memory, not read from storage"
        );
        kit.clear();
        world
            .call(&edit([2, 2, 3], stone, Replace::OnlyAir))
            .expect("edited");
        assert_eq!(sent::<VoxelUpdates>(&kit).len(), 1, "still held by 7");
        assert!(sent::<Registry>(&kit).is_empty(), "not sent again");
    }

    /// The world on `kit` with `stone` registered, the section at the
    /// origin generated (air), and peer 7 viewing it.
    fn stone_world_with_a_viewer(kit: &TestHost) -> (TestModule<VoxelWorld>, u32) {
        let mut world = kit.load::<VoxelWorld>().expect("loads");
        let stone = world
            .call(&RegisterBlock {
                block: BlockDefinition::simple("stone", "stone.png"),
            })
            .expect("registers")[0];
        world.call(&air([0, 0, 0])).expect("applied");
        world
            .emit(&Viewer {
                peer: 7,
                position: [1.5, 2.5, 3.5],
            })
            .expect("moved");
        (world, stone)
    }

    fn edit(pos: Pos, voxel: u32, replace: Replace) -> EditVoxel {
        EditVoxel {
            pos,
            voxel,
            replace,
            save: true,
            by: Some("ann".into()),
        }
    }

    /// `edit_together` through the module: the groups that apply are set
    /// and stored with their values before the answer (no section left for
    /// the periodic save, counted as saved), committed once (one update
    /// streamed to the chunk's holder), and handler modules are told who
    /// made them; a call past the bounds or with a bad value is refused
    /// before anything is applied.
    #[test]
    fn edit_together_is_stored_before_the_answer_and_committed_once() {
        let dir = tempfile::tempdir().expect("temp dir");
        let kit = TestHost::new().world_path(dir.path());
        let (mut world, stone) = stone_world_with_a_viewer(&kit);
        let mut chest = BlockDefinition::simple("chest", "chest.png");
        chest.handler_module = "survival".into();
        let chest = world
            .call(&RegisterBlock { block: chest })
            .expect("registers")[0];
        kit.clear();
        let write = |key: &str, value: &[u8]| ValueWrite {
            space: "inventory".into(),
            key: key.into(),
            value: Some(value.to_vec()),
            only_if_absent: false,
        };
        let unsaved = EditVoxel {
            save: false,
            ..edit([1, 2, 3], chest, Replace::OnlyAir)
        };
        let applied = world
            .call(&EditTogether {
                groups: vec![
                    EditGroup {
                        edits: vec![unsaved],
                        writes: vec![write("voxel:1,2,3", b"empty chest")],
                    },
                    EditGroup {
                        edits: vec![
                            edit([2, 2, 3], stone, Replace::OnlyAir),
                            edit([1, 2, 3], stone, Replace::OnlyAir),
                        ],
                        writes: vec![write("player:bob", b"one stone less")],
                    },
                ],
            })
            .expect("edited");
        assert_eq!(applied, vec![true, false]);
        assert_eq!(
            world.call(&GetVoxel { pos: [2, 2, 3] }).expect("read"),
            Some(buildat_voxel::AIR),
            "the refused group's edit that held is not made"
        );
        let get = |world: &mut TestModule<VoxelWorld>, key: &str| {
            world
                .call(&GetValue {
                    space: "inventory".into(),
                    key: key.into(),
                })
                .expect("read")
        };
        assert_eq!(
            get(&mut world, "voxel:1,2,3"),
            Some(b"empty chest".to_vec())
        );
        assert_eq!(get(&mut world, "player:bob"), None);
        let stats = world.call(&GetStats {}).expect("stats");
        assert_eq!(stats.unsaved_sections, 0, "written with the values");
        assert_eq!(stats.sections_saved, 1);
        assert_eq!(
            sent::<VoxelUpdates>(&kit).len(),
            1,
            "one commit, one update"
        );
        let told = kit.emitted_named::<SpecialVoxels>("voxelworld:special/survival");
        assert_eq!(told.len(), 1, "{told:?}");
        assert_eq!(told[0].voxels[0].pos, [1, 2, 3]);
        assert_eq!(told[0].voxels[0].by.as_deref(), Some("ann"));

        let too_many = EditTogether {
            groups: vec![EditGroup {
                edits: vec![
                    edit([5, 5, 5], stone, Replace::Any);
                    buildat_voxelworld_api::MAX_VOXELS_PER_CALL + 1
                ],
                writes: Vec::new(),
            }],
        };
        let error = world.call(&too_many).expect_err("too many edits");
        assert!(error.to_string().contains("at most"), "{error}");
        let bad_key = EditTogether {
            groups: vec![EditGroup {
                edits: vec![edit([5, 5, 5], stone, Replace::Any)],
                writes: vec![write("", b"no space")],
            }],
        };
        world.call(&bad_key).expect_err("a bad key");
        assert_eq!(
            world.call(&GetVoxel { pos: [5, 5, 5] }).expect("read"),
            Some(buildat_voxel::AIR),
            "refused before anything was applied"
        );
    }

    /// voxelworld's glue on the test kit: a viewer is streamed the
    /// registry and its chunks; a call's edits are each checked against
    /// the voxel there, committed together, announced, and streamed to
    /// the chunk's holder as single voxels on its own event; a malformed ack
    /// drops its peer.
    #[test]
    fn edits_are_checked_committed_announced_and_streamed_to_the_chunks_holder() {
        let dir = tempfile::tempdir().expect("temp dir");
        let kit = TestHost::new().world_path(dir.path());
        kit.answer(|_: Disconnect| Ok(()));
        let (mut world, stone) = stone_world_with_a_viewer(&kit);
        assert_eq!(sent::<Registry>(&kit).len(), 1);
        assert!(
            sent::<Chunk>(&kit)
                .iter()
                .any(|(peer, c)| *peer == 7 && c.chunk == [0, 0, 0]),
            "the chunk it stands in"
        );

        let outcomes = world
            .call(&EditVoxels {
                edits: vec![
                    edit([1, 2, 3], stone, Replace::OnlyAir),
                    edit([1, 2, 3], stone, Replace::OnlyAir),
                    edit([200, 2, 3], stone, Replace::Any),
                ],
            })
            .expect("edited");
        assert_eq!(
            outcomes,
            vec![
                EditOutcome::Edited {
                    previous: buildat_voxel::AIR
                },
                EditOutcome::Refused { current: stone },
                EditOutcome::NotGenerated,
            ]
        );
        assert_eq!(
            world.call(&GetVoxel { pos: [1, 2, 3] }).expect("read"),
            Some(stone)
        );
        assert!(
            kit.emitted::<NodeVolumeUpdated>()
                .iter()
                .any(|u| u.chunk == [0, 0, 0]),
            "announced"
        );
        // Streamed on its own event, after the call answered (the kit
        // delivers it after the call).
        let updates = sent::<VoxelUpdates>(&kit);
        assert_eq!(updates.len(), 1, "one commit, one update");
        assert_eq!(updates[0].0, 7);
        assert_eq!(updates[0].1.chunk, [0, 0, 0]);

        world
            .packet_bytes(7, buildat_voxelworld_api::stream::Ack::NAME, &[0xff])
            .expect("refused in one place");
        let dropped = disconnected(&kit);
        assert_eq!(dropped.len(), 1);
        assert_eq!(dropped[0].0, 7);
        assert!(dropped[0].1.contains("malformed"), "{dropped:?}");
    }
}
