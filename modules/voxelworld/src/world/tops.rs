//! The top voxel of each column of a region, for maps
//! (`buildat_voxelworld_api::ColumnTops`).
//!
//! Owns: reading the voxels of loaded sections and of stored ones without
//! loading them (a stored section is read and decoded for the call, then
//! dropped, so a map never evicts what players stand in, never generates
//! anything and never keeps a decoded chunk). Does not own: colours or
//! pictures (the map's module draws them from the voxel ids).

use std::collections::{BTreeMap, HashMap};

use buildat_voxel::geometry::{CHUNK_SIZE, Pos};
use buildat_voxel::{AIR, VoxelInstance};
use buildat_voxelworld_api::{
    ColumnTops, MAX_COLUMN_HEIGHT, MAX_COLUMNS, StoredNode, StoredNodeKind, Tops, VAR_VOXEL_DATA,
};

use super::{World, WorldError, decode_blob};

/// A stored section's chunk blobs by chunk, `None` when storage has no
/// generated version of it.
type StoredChunks = Option<BTreeMap<Pos, (u64, Vec<u8>)>>;

/// A column of the answer: its index, and its x and z in its chunk.
type ColumnAt = (usize, usize, usize);

impl World {
    /// Answers [`ColumnTops`]: see its definition.
    pub fn column_tops(&mut self, request: &ColumnTops) -> Result<Tops, WorldError> {
        let columns = u64::from(request.width) * u64::from(request.depth);
        if columns > u64::from(MAX_COLUMNS)
            || request.step == 0
            || request.step > 1024
            || request.y_top < request.y_bottom
            || i64::from(request.y_top) - i64::from(request.y_bottom)
                >= i64::from(MAX_COLUMN_HEIGHT)
        {
            return Err(WorldError::BadRequest(format!(
                "column_tops: at most {MAX_COLUMNS} columns, a step of 1 to 1024 and \
                 {MAX_COLUMN_HEIGHT} voxels from y_top down to y_bottom"
            )));
        }
        let width = request.width as usize;
        let count = columns as usize;
        let mut tops = Tops {
            voxels: vec![AIR; count],
            heights: vec![i32::MIN; count],
            missing: 0,
        };
        let step = i64::from(request.step);
        let size = i64::from(CHUNK_SIZE);
        // The columns of each chunk column: (index in the answer, x and z
        // in the chunk).
        let mut by_chunk: BTreeMap<(i32, i32), Vec<ColumnAt>> = BTreeMap::new();
        for j in 0..request.depth as usize {
            for i in 0..width {
                let x = i64::from(request.x) + i as i64 * step;
                let z = i64::from(request.z) + j as i64 * step;
                let (Ok(x), Ok(z)) = (i32::try_from(x), i32::try_from(z)) else {
                    continue;
                };
                let chunk = (x.div_euclid(CHUNK_SIZE), z.div_euclid(CHUNK_SIZE));
                by_chunk.entry(chunk).or_default().push((
                    j * width + i,
                    x.rem_euclid(CHUNK_SIZE) as usize,
                    z.rem_euclid(CHUNK_SIZE) as usize,
                ));
            }
        }
        let top_chunk = request.y_top.div_euclid(CHUNK_SIZE);
        let bottom_chunk = request.y_bottom.div_euclid(CHUNK_SIZE);
        let mut stored: HashMap<Pos, StoredChunks> = HashMap::new();
        let mut missing = vec![false; count];
        for ((cx, cz), mut left) in by_chunk {
            for cy in (bottom_chunk..=top_chunk).rev() {
                if left.is_empty() {
                    break;
                }
                let chunk = [cx, cy, cz];
                let base = i64::from(cy) * size;
                // The voxels of this chunk in the range, top first.
                let high = (i64::from(request.y_top) - base).min(size - 1) as usize;
                let low = (i64::from(request.y_bottom) - base).max(0) as usize;
                let found = self.with_chunk_voxels(chunk, &mut stored, |voxels| {
                    let side = CHUNK_SIZE as usize;
                    left.retain(|&(index, x, z)| {
                        for y in (low..=high).rev() {
                            let voxel = voxels
                                .get(x + side * (y + side * z))
                                .copied()
                                .unwrap_or(AIR);
                            if VoxelInstance(voxel).type_id() != AIR {
                                if let Some(slot) = tops.voxels.get_mut(index) {
                                    *slot = voxel;
                                }
                                if let Some(slot) = tops.heights.get_mut(index) {
                                    *slot = cy * CHUNK_SIZE + y as i32;
                                }
                                return false;
                            }
                        }
                        true
                    });
                })?;
                if !found {
                    // Not generated: what is below may be under terrain
                    // still to come, so these columns are not known.
                    for &(index, _, _) in &left {
                        if let Some(slot) = missing.get_mut(index) {
                            *slot = true;
                        }
                    }
                    left.clear();
                }
            }
        }
        tops.missing = missing
            .iter()
            .zip(&tops.heights)
            .filter(|(missing, height)| **missing && **height == i32::MIN)
            .count() as u32;
        Ok(tops)
    }

    /// Runs `scan` over a chunk's voxels from memory, or from storage when
    /// its section is not loaded; answers false when neither has it
    /// generated.
    fn with_chunk_voxels(
        &mut self,
        chunk: Pos,
        stored: &mut HashMap<Pos, StoredChunks>,
        scan: impl FnOnce(&[u32]),
    ) -> Result<bool, WorldError> {
        let section_pos = self.section_size.section_of_chunk(chunk);
        if let Some(section) = self.sections.get(&section_pos) {
            if !section.generated {
                return Ok(false);
            }
            let Some(found) = section.chunks.get(&chunk) else {
                return Ok(false);
            };
            if let Some(voxels) = &found.voxels {
                scan(voxels);
                return Ok(true);
            }
            if let Some(voxels) = self.light_decoded.peek(chunk) {
                scan(voxels);
                return Ok(true);
            }
            let blob = found.blob.as_deref().unwrap_or_default();
            let voxels = decode_blob(&self.voxels, &mut self.unknown_names, found.node_id, blob)?;
            scan(&voxels);
            return Ok(true);
        }
        if let std::collections::hash_map::Entry::Vacant(entry) = stored.entry(section_pos) {
            entry.insert(self.read_stored_chunks(section_pos)?);
        }
        let Some((id, blob)) = stored
            .get(&section_pos)
            .and_then(|chunks| chunks.as_ref())
            .and_then(|chunks| chunks.get(&chunk))
        else {
            return Ok(false);
        };
        // A damaged chunk is left to the load that quarantines it.
        let Ok(voxels) = decode_blob(&self.voxels, &mut self.unknown_names, *id, blob) else {
            return Ok(false);
        };
        scan(&voxels);
        Ok(true)
    }

    /// A stored section's chunk blobs, without loading the section.
    fn read_stored_chunks(&mut self, pos: Pos) -> Result<StoredChunks, WorldError> {
        let Some(section) = self.storage.load_section(pos)? else {
            return Ok(None);
        };
        if !section.generated {
            return Ok(None);
        }
        let mut chunks = BTreeMap::new();
        for (id, data) in section.nodes {
            let Ok(node) = buildat_interface::decode::<StoredNode>(&data) else {
                continue;
            };
            if let StoredNodeKind::StaticChunk { chunk } = node.kind {
                let mut vars = node.vars;
                let blob = vars.remove(VAR_VOXEL_DATA).unwrap_or_default();
                chunks.insert(chunk, (id, blob));
            }
        }
        Ok(Some(chunks))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::world::tests::{generate, open};

    fn region(x: i32, width: u32) -> ColumnTops {
        ColumnTops {
            x,
            z: 0,
            width,
            depth: 64,
            step: 1,
            y_top: 63,
            y_bottom: -10,
        }
    }

    #[test]
    fn tops_come_from_memory_and_from_storage_without_loading() {
        let dir = tempfile::tempdir().unwrap();
        let (stone, from_memory) = {
            let mut world = open(dir.path());
            let stone = world.voxels.get_id("stone").unwrap();
            // Chunks half full: voxels with z < 16 (in each chunk) are stone.
            generate(&mut world, [0, 0, 0], "stone");
            world.set_section_save_enabled([0, 0, 0], true).unwrap();
            world.set_voxel([5, 63, 5], AIR).unwrap();
            world.commit();
            world.save_all().unwrap();
            (stone, world.column_tops(&region(0, 96)).unwrap())
        };
        let at =
            |tops: &Tops, x: usize, z: usize| (tops.voxels[z * 96 + x], tops.heights[z * 96 + x]);
        assert_eq!(at(&from_memory, 0, 0), (stone, 63));
        assert_eq!(at(&from_memory, 5, 5), (stone, 62), "the edit shows");
        assert_eq!(at(&from_memory, 0, 20), (AIR, i32::MIN), "all air");
        assert_eq!(at(&from_memory, 70, 0), (AIR, i32::MIN), "not generated");
        // x 64 to 95 is not generated; nor are the chunks under the
        // columns of air (y below 0).
        assert_eq!(from_memory.missing, 32 * 64 + 64 * 32);

        let mut world = open(dir.path());
        let from_storage = world.column_tops(&region(0, 96)).unwrap();
        assert_eq!(from_storage, from_memory);
        assert_eq!(world.loaded_sections(), 0, "nothing was loaded");
    }

    #[test]
    fn steps_sample_columns_and_big_requests_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut world = open(dir.path());
        generate(&mut world, [0, 0, 0], "stone");
        let tops = world
            .column_tops(&ColumnTops {
                x: 0,
                z: 0,
                width: 4,
                depth: 4,
                step: 16,
                y_top: 63,
                y_bottom: 0,
            })
            .unwrap();
        // z = 0 and 32 are stone (z < 16 in their chunk), 16 and 48 air.
        assert_eq!(tops.heights[0], 63);
        assert_eq!(tops.heights[4], i32::MIN);
        assert_eq!(tops.heights[8], 63);
        assert!(world.column_tops(&region(0, 1024)).is_err());
        let mut tall = region(0, 8);
        tall.y_top = 5000;
        assert!(world.column_tops(&tall).is_err());
        // A chunk above not generated: the column is not known (terrain
        // may come there).
        let mut higher = region(0, 8);
        higher.y_top = 100;
        let tops = world.column_tops(&higher).unwrap();
        assert_eq!(tops.heights[0], i32::MIN);
        assert_eq!(tops.missing, 8 * 64);
    }
}
