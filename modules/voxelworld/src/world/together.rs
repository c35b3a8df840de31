//! Edits stored together with modules' values (`EditTogether`): groups of
//! voxel edits and value writes, each applied whole or not at all, and
//! every applied group's sections (written now, whole) and values in ONE
//! storage transaction before the answer. What an inventory uses so that
//! a dig's drop and the voxel's removal are stored together or not at all.
//!
//! Owns: which groups apply (each edit checked against the voxels as the
//! group's earlier edits and the earlier applied groups leave them, each
//! claim against the values as they leave them, no key shared with a group
//! that did not apply), the sections an applied group touched made
//! save-enabled and written (then no longer dirty for the periodic save),
//! and, when storage refuses the transaction, the voxels and flags put back
//! in memory. Does not own: the call's bounds and its commit, events and
//! streaming (`edits.rs`), the transaction itself
//! ([`WorldStorage::save_together`]).

use super::*;
use buildat_voxelworld_api::{EditGroup, Replace, ValueWrite};

/// Whether `replace` lets an edit replace `current`.
pub fn replace_allows(replace: Replace, current: u32) -> bool {
    let is_air = buildat_voxel::VoxelInstance(current).type_id() == AIR;
    match replace {
        Replace::Any => true,
        Replace::OnlyAir => is_air,
        Replace::NotAir => !is_air,
        Replace::Exactly(voxel) => current == voxel,
    }
}

/// What [`World::edit_together`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Together {
    /// Per group, whether it applied.
    pub applied: Vec<bool>,
    /// Sections written in the transaction.
    pub sections_written: u32,
}

/// A value's key.
type Key<'a> = (&'a str, &'a str);

fn key_of(write: &ValueWrite) -> Key<'_> {
    (write.space.as_str(), write.key.as_str())
}

/// The voxels and values as the applied groups leave them, and the keys
/// of the groups that did not apply.
#[derive(Default)]
struct Decided<'a> {
    voxels: HashMap<Pos, u32>,
    /// Whether the key holds a value.
    values: HashMap<Key<'a>, bool>,
    refused_keys: BTreeSet<Key<'a>>,
}

impl World {
    /// Applies the groups that can apply (see the module's doc) and stores
    /// them in one transaction; on a storage error (or a claim taken by
    /// another writer meanwhile) nothing is applied and the error is
    /// returned. Not committed: the caller commits once (also after an
    /// error: the voxels put back leave no net change to tell).
    pub fn edit_together(&mut self, groups: &[EditGroup]) -> Result<Together, WorldError> {
        for edit in groups.iter().flat_map(|g| &g.edits) {
            let type_id = buildat_voxel::VoxelInstance(edit.voxel).type_id();
            if self.voxels.get(type_id).is_none() {
                return Err(WorldError::UnknownVoxel(type_id));
            }
        }
        let mut decided = Decided::default();
        let mut applied = Vec::with_capacity(groups.len());
        for group in groups {
            let applies = self.group_applies(group, &decided)?;
            if applies {
                for edit in &group.edits {
                    decided.voxels.insert(edit.pos, edit.voxel);
                }
                for write in &group.writes {
                    decided.values.insert(key_of(write), write.value.is_some());
                }
            } else {
                decided.refused_keys.extend(group.writes.iter().map(key_of));
            }
            applied.push(applies);
        }
        let chosen: Vec<&EditGroup> = groups
            .iter()
            .zip(&applied)
            .filter_map(|(group, applies)| applies.then_some(group))
            .collect();
        let touched: BTreeSet<Pos> = chosen
            .iter()
            .flat_map(|g| &g.edits)
            .map(|edit| {
                self.section_size
                    .section_of_chunk(geometry::chunk_of_voxel(edit.pos))
            })
            .collect();
        // Checking loaded every section; one dropped again to make room
        // for another would be loaded (and others dropped) while applying.
        if let Some(missing) = touched
            .iter()
            .find(|pos| !self.sections.get(*pos).is_some_and(|s| s.generated))
        {
            return Err(WorldError::BadRequest(format!(
                "edit_together touches more sections than memory holds (section {missing:?} \
                 was dropped again; voxelworld.max_loaded_sections): nothing applied"
            )));
        }
        let writes: Vec<ValueWrite> = chosen
            .iter()
            .flat_map(|g| g.writes.iter().cloned())
            .collect();
        if touched.is_empty() && writes.is_empty() {
            return Ok(Together {
                applied,
                sections_written: 0,
            });
        }
        let mut undo = Undo::default();
        let stored = self
            .apply(&chosen, &touched, &mut undo)
            .and_then(|()| self.store(&touched, &writes));
        match stored {
            Ok(()) => {
                for pos in &touched {
                    if let Some(section) = self.sections.get_mut(pos) {
                        section.dirty = false;
                        section.stored = true;
                    }
                }
                Ok(Together {
                    applied,
                    sections_written: touched.len() as u32,
                })
            }
            Err(error) => {
                self.put_back(undo);
                Err(error)
            }
        }
    }

    /// Whether a group applies on top of the groups decided before it.
    fn group_applies<'a>(
        &mut self,
        group: &'a EditGroup,
        decided: &Decided<'a>,
    ) -> Result<bool, WorldError> {
        if group
            .writes
            .iter()
            .any(|w| decided.refused_keys.contains(&key_of(w)))
        {
            return Ok(false);
        }
        let mut voxels: HashMap<Pos, u32> = HashMap::new();
        for edit in &group.edits {
            let current = match voxels
                .get(&edit.pos)
                .or_else(|| decided.voxels.get(&edit.pos))
            {
                Some(voxel) => Some(*voxel),
                None => self.get_voxel(edit.pos)?,
            };
            let Some(current) = current else {
                return Ok(false);
            };
            if !replace_allows(edit.replace, current) {
                return Ok(false);
            }
            voxels.insert(edit.pos, edit.voxel);
        }
        let mut values: HashMap<Key<'a>, bool> = HashMap::new();
        for write in &group.writes {
            let key = key_of(write);
            if write.only_if_absent && write.value.is_some() {
                let taken = match values.get(&key).or_else(|| decided.values.get(&key)) {
                    Some(present) => *present,
                    None => self.storage.get_value(key.0, key.1)?.is_some(),
                };
                if taken {
                    return Ok(false);
                }
            }
            values.insert(key, write.value.is_some());
        }
        Ok(true)
    }

    /// Sets the chosen groups' voxels (their sections are in memory) and
    /// makes their sections save-enabled, noting how to undo it.
    fn apply(
        &mut self,
        chosen: &[&EditGroup],
        touched: &BTreeSet<Pos>,
        undo: &mut Undo,
    ) -> Result<(), WorldError> {
        for pos in touched {
            if let Some(section) = self.sections.get_mut(pos)
                && !section.save_enabled
            {
                section.save_enabled = true;
                section.dirty = true;
                undo.save_enabled.push(*pos);
            }
        }
        for edit in chosen.iter().flat_map(|g| &g.edits) {
            let section = self
                .section_size
                .section_of_chunk(geometry::chunk_of_voxel(edit.pos));
            let previous = self
                .get_voxel(edit.pos)?
                .ok_or(WorldError::NotGenerated(section))?;
            self.set_voxel_by(edit.pos, edit.voxel, edit.by.as_deref())?;
            undo.voxels.push((edit.pos, previous, edit.by.clone()));
        }
        Ok(())
    }

    /// The touched sections as they are now and the writes, in one
    /// storage transaction.
    fn store(&mut self, touched: &BTreeSet<Pos>, writes: &[ValueWrite]) -> Result<(), WorldError> {
        let mut sections = Vec::with_capacity(touched.len());
        for pos in touched {
            if let Some(section) = self.sections.get(pos) {
                sections.push(self.encode_section(*pos, section, true)?);
            }
        }
        if self.storage.save_together(&sections, writes)? {
            Ok(())
        } else {
            Err(WorldError::ClaimedMeanwhile)
        }
    }

    /// Puts back what [`World::apply`] changed, last first.
    fn put_back(&mut self, undo: Undo) {
        for (pos, previous, by) in undo.voxels.into_iter().rev() {
            if let Err(error) = self.set_voxel_by(pos, previous, by.as_deref()) {
                log::error!("edit_together: putting back the voxel at {pos:?}: {error}");
            }
        }
        for pos in undo.save_enabled {
            if let Some(section) = self.sections.get_mut(&pos) {
                section.save_enabled = false;
            }
        }
    }
}

/// How to put back what applying changed.
#[derive(Default)]
struct Undo {
    /// (where, what was there, the edit's player), in the order set.
    voxels: Vec<(Pos, u32, Option<String>)>,
    /// Sections made save-enabled.
    save_enabled: Vec<Pos>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::testing::each_backend;
    use crate::world::tests::{generate, world_on};
    use buildat_voxelworld_api::EditVoxel;

    fn edit(pos: Pos, voxel: u32, replace: Replace) -> EditVoxel {
        EditVoxel {
            pos,
            voxel,
            replace,
            save: false,
            by: Some("ann".into()),
        }
    }

    fn put(key: &str, value: &[u8]) -> ValueWrite {
        ValueWrite {
            space: "inventory".into(),
            key: key.into(),
            value: Some(value.to_vec()),
            only_if_absent: false,
        }
    }

    fn claim(key: &str, value: &[u8]) -> ValueWrite {
        ValueWrite {
            only_if_absent: true,
            ..put(key, value)
        }
    }

    fn group(edits: Vec<EditVoxel>, writes: Vec<ValueWrite>) -> EditGroup {
        EditGroup { edits, writes }
    }

    fn value(world: &mut World, key: &str) -> Option<Vec<u8>> {
        world.storage_mut().get_value("inventory", key).unwrap()
    }

    /// Groups in order, each whole or not at all: a refused edit leaves its
    /// group's values unwritten and its other voxels unchanged; a group
    /// sharing a key with a refused one is refused; checks see the earlier
    /// applied groups; a claim of a taken key refuses its group. What
    /// applied is stored before the answer: a storage opened afresh on the
    /// same world, with no save in between, has the voxels and the values.
    #[test]
    fn groups_apply_whole_in_order_and_are_stored_together_on_every_backend() {
        for backend in each_backend() {
            let name = backend.backend;
            let mut world = world_on(backend.open(SectionSize::default()));
            generate(&mut world, [0, 0, 0], "stone");
            generate(&mut world, [1, 0, 0], "stone");
            let stone = world.voxels.get_id("stone").unwrap();
            let dirt = world.voxels.get_id("dirt").unwrap();
            assert!(
                world
                    .storage_mut()
                    .put_values(&[put("claimed", b"x")])
                    .unwrap()
            );
            let groups = vec![
                // A dig and its drop.
                group(
                    vec![edit([1, 1, 1], AIR, Replace::Exactly(stone))],
                    vec![put("player:ann", b"cobble 1")],
                ),
                // The same dig again: refused; its drop unwritten, its
                // first edit (which held) not made.
                group(
                    vec![
                        edit([2, 2, 2], dirt, Replace::Any),
                        edit([1, 1, 1], AIR, Replace::Exactly(stone)),
                    ],
                    vec![put("player:bob", b"cobble 1")],
                ),
                // Computed on top of the refused group (bob's key): refused.
                group(
                    vec![edit([3, 3, 3], AIR, Replace::NotAir)],
                    vec![put("player:bob", b"cobble 2")],
                ),
                // A place where the first group dug: checked as it left it.
                group(
                    vec![edit([1, 1, 1], dirt, Replace::OnlyAir)],
                    vec![put("player:ann", b"")],
                ),
                // A claim of a taken key.
                group(
                    vec![edit([4, 4, 4], AIR, Replace::Any)],
                    vec![claim("claimed", b"y")],
                ),
                // Nothing generated there.
                group(
                    vec![edit([9000, 0, 0], AIR, Replace::Any)],
                    vec![put("player:cid", b"z")],
                ),
                // A claim of a free key, an edit in another section.
                group(
                    vec![edit([70, 1, 1], AIR, Replace::NotAir)],
                    vec![claim("fresh", b"f")],
                ),
            ];
            let together = world.edit_together(&groups).unwrap();
            assert_eq!(
                together.applied,
                [true, false, false, true, false, false, true],
                "{name}"
            );
            assert_eq!(together.sections_written, 2, "{name}");
            assert_eq!(world.get_voxel([1, 1, 1]).unwrap(), Some(dirt));
            for unchanged in [[2, 2, 2], [3, 3, 3], [4, 4, 4]] {
                assert_eq!(world.get_voxel(unchanged).unwrap(), Some(stone), "{name}");
            }
            assert_eq!(
                world.unsaved_count(),
                0,
                "{name}: written now, nothing left for the periodic save"
            );
            assert_eq!(world.commit().len(), 2, "{name}: one commit, two chunks");
            drop(world);

            let mut again = world_on(backend.open(SectionSize::default()));
            assert_eq!(again.load_section([0, 0, 0]).unwrap(), Loaded::Ready);
            assert_eq!(again.get_voxel([1, 1, 1]).unwrap(), Some(dirt), "{name}");
            assert_eq!(again.get_voxel([2, 2, 2]).unwrap(), Some(stone), "{name}");
            assert_eq!(again.get_voxel([70, 1, 1]).unwrap(), Some(AIR), "{name}");
            assert_eq!(value(&mut again, "player:ann"), Some(Vec::new()), "{name}");
            assert_eq!(value(&mut again, "player:bob"), None, "{name}");
            assert_eq!(value(&mut again, "player:cid"), None, "{name}");
            assert_eq!(value(&mut again, "claimed"), Some(b"x".to_vec()));
            assert_eq!(value(&mut again, "fresh"), Some(b"f".to_vec()), "{name}");
        }
    }

    /// When storage refuses the transaction nothing is applied: in memory
    /// the voxels and the sections' save flags are put back, the call
    /// fails with storage's error, and storage holds neither the section
    /// written in the same transaction nor the value.
    #[test]
    fn a_storage_failure_applies_nothing_on_every_backend() {
        for backend in each_backend() {
            let name = backend.backend;
            let mut world = world_on(backend.open(SectionSize::default()));
            generate(&mut world, [0, 0, 0], "stone");
            generate(&mut world, [1, 0, 0], "stone");
            let stone = world.voxels.get_id("stone").unwrap();
            world.set_section_save_enabled([0, 0, 0], true).unwrap();
            assert_eq!(world.save_all().unwrap(), 1);
            // The values' table gone: the value write fails after the
            // sections were written in the same transaction.
            backend.run_sql("DROP TABLE module_value");
            let error = world
                .edit_together(&[group(
                    vec![
                        edit([1, 1, 1], AIR, Replace::NotAir),
                        edit([70, 1, 1], AIR, Replace::NotAir),
                    ],
                    vec![put("player:ann", b"cobble 2")],
                )])
                .expect_err("storage fails");
            assert!(
                error.to_string().contains("module_value"),
                "{name}: {error}"
            );
            assert_eq!(world.get_voxel([1, 1, 1]).unwrap(), Some(stone), "{name}");
            assert_eq!(world.get_voxel([70, 1, 1]).unwrap(), Some(stone), "{name}");
            assert_eq!(
                world.section_status([1, 0, 0]),
                Some((true, false)),
                "{name}: save-disabled again"
            );
            let (told, _) = world.take_special();
            assert!(told.is_empty(), "{name}: nothing to tell");
            drop(world);
            backend.run_sql(
                "CREATE TABLE module_value (space TEXT NOT NULL, key TEXT NOT NULL, \
                 data BYTEA NOT NULL, PRIMARY KEY (space, key))",
            );
            let mut again = world_on(backend.open(SectionSize::default()));
            assert_eq!(again.load_section([0, 0, 0]).unwrap(), Loaded::Ready);
            assert_eq!(
                again.get_voxel([1, 1, 1]).unwrap(),
                Some(stone),
                "{name}: the section's write was rolled back"
            );
            assert!(!again.is_stored([1, 0, 0]).unwrap(), "{name}");
            assert_eq!(value(&mut again, "player:ann"), None, "{name}");
        }
    }
}
