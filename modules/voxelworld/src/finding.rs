//! Finding voxels and light for modules acting on the world over time:
//! the calls `find_voxels` and `get_lights`, and the events
//! `voxelworld:sections_loaded` / `voxelworld:sections_unloaded` (emitted
//! once a tick for what came into or left memory since the last).
//!
//! Owns: the glue. Does not own: the scan, the light or the record of
//! sections (`world/find.rs`).

use super::*;
use buildat_voxelworld_api::{FindVoxels, GetLights, SectionsLoaded, SectionsUnloaded};

impl VoxelWorld {
    /// Emits the sections that came into or left memory since the last
    /// call, if any did.
    pub(crate) fn tell_sections(&mut self) -> Result<(), ModuleError> {
        let (loaded, unloaded) = self.world.take_section_events();
        if !unloaded.is_empty() {
            self.host.emit(&SectionsUnloaded { sections: unloaded })?;
        }
        if !loaded.is_empty() {
            self.host.emit(&SectionsLoaded { sections: loaded })?;
        }
        Ok(())
    }
}

/// The calls of this feature, in the module's receive table.
pub(crate) fn receive(table: &mut Receive<VoxelWorld>) {
    table
        .call(|world, request: FindVoxels| {
            world.world.find_voxels(&request).map_err(ModuleError::from)
        })
        .call(|world, request: GetLights| {
            if request.positions.len() > MAX_VOXELS_PER_CALL {
                return Err(WorldError::TooManyPositions(request.positions.len()).into());
            }
            world
                .world
                .lights(&request.positions)
                .map_err(ModuleError::from)
        });
}

#[cfg(test)]
mod tests {
    use super::*;
    use buildat_interface::testing::TestHost;
    use buildat_voxel::BlockDefinition;
    use buildat_voxelworld_api::{ChunkData, EditVoxel, Replace, VoxelChange, VoxelsChanged};

    /// A section of stone where z < 16 in each chunk, as a generator hands it over.
    fn half_stone(section: Pos) -> ApplyGenerated {
        let chunks = SectionSize::default()
            .chunks_of_section(section)
            .into_iter()
            .map(|chunk| {
                let mut voxels = vec![buildat_voxel::AIR; CHUNK_SIZE.pow(3) as usize];
                voxels[..(CHUNK_SIZE.pow(3) / 2) as usize].fill(2);
                let blob = buildat_format::encode_voxels(&voxels, |id| {
                    Some(if id == 0 { "air" } else { "stone" })
                })
                .expect("encodes");
                (chunk, ChunkData { node_id: 0, blob })
            })
            .collect();
        ApplyGenerated {
            section: GeneratedSection { section, chunks },
        }
    }

    /// Through the module: generation tells `sections_loaded` on the next
    /// tick (not `voxels_changed`); an edit tells `voxels_changed` with who
    /// made it, once per commit; `find_voxels` and `get_lights` answer.
    #[test]
    fn the_module_tells_changes_and_sections_and_finds_voxels() {
        let dir = tempfile::tempdir().expect("temp dir");
        let kit = TestHost::new().world_path(dir.path());
        let mut world = kit.load::<VoxelWorld>().expect("loads");
        let stone = world
            .call(&RegisterBlock {
                block: BlockDefinition::simple("stone", "stone.png"),
            })
            .expect("registers")[0];
        assert_eq!(stone, 2, "the id half_stone writes");
        world.call(&half_stone([0, 0, 0])).expect("applied");
        assert!(kit.emitted::<SectionsLoaded>().is_empty(), "on the tick");
        world.emit(&events::Tick { dtime: 0.05 }).expect("ticks");
        assert_eq!(
            kit.emitted::<SectionsLoaded>(),
            vec![SectionsLoaded {
                sections: vec![[0, 0, 0]]
            }]
        );
        assert!(kit.emitted::<VoxelsChanged>().is_empty(), "not generation");

        let edit = |pos: Pos, voxel: u32| EditVoxel {
            pos,
            voxel,
            replace: Replace::Any,
            save: true,
            by: Some("ann".into()),
        };
        world
            .call(&EditVoxels {
                edits: vec![
                    edit([1, 1, 20], stone),
                    edit([1, 1, 1], buildat_voxel::AIR),
                    edit([1, 1, 20], buildat_voxel::AIR),
                ],
            })
            .expect("edited");
        assert_eq!(
            kit.emitted::<VoxelsChanged>(),
            vec![VoxelsChanged {
                changes: vec![VoxelChange {
                    pos: [1, 1, 1],
                    was: stone,
                    now: buildat_voxel::AIR,
                    by: Some("ann".into()),
                }],
                untold: 0,
            }],
            "one event; a voxel set back is not told"
        );
        world
            .call(&SetVoxel {
                pos: [2, 2, 20],
                voxel: stone,
            })
            .expect("set");
        world.call(&Commit {}).expect("committed");
        let told = kit.emitted::<VoxelsChanged>();
        assert_eq!(told.len(), 2);
        assert_eq!(told[1].changes[0].by, None);

        let found = world
            .call(&FindVoxels {
                chunks: vec![[0, 0, 0], [5, 5, 5]],
                types: vec![stone],
                neighbours: vec![buildat_voxel::AIR],
                chance: 1,
                seed: 0,
                limit: u32::MAX,
            })
            .expect("found");
        assert_eq!(found.missing, vec![[5, 5, 5]]);
        assert!(found.found.contains(&([2, 2, 20], stone)));
        assert!(found.found.contains(&([1, 1, 0], stone)), "beside the hole");
        assert!(!found.found.contains(&([3, 3, 3], stone)), "buried");

        let lights = world
            .call(&GetLights {
                positions: vec![[0, 60, 20], [900, 0, 0]],
            })
            .expect("lit");
        assert_eq!(lights, vec![Some((15, 0)), None]);
        assert!(
            world
                .call(&GetLights {
                    positions: vec![[0, 0, 0]; MAX_VOXELS_PER_CALL + 1]
                })
                .is_err()
        );
    }
}
