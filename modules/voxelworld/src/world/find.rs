//! Finding voxels and reading light in the chunks in memory, for modules
//! acting on the world over time (`find_voxels`, `get_lights`), and the
//! sections that came into or left memory (`voxelworld:sections_loaded`,
//! `voxelworld:sections_unloaded`).
//!
//! Owns: the scan of a chunk's voxels for some types (a table of wanted
//! type ids, face neighbours read in the chunk or, at its border, in the
//! neighbour chunk if it is in memory), the seeded chance ([`keeps`]), and
//! the record of sections loaded and unloaded since they were last taken
//! (one net entry per section). Does not own: loading anything (nothing
//! here loads or generates a section) or emitting events (`finding.rs`).

use super::*;
use buildat_voxel::VoxelInstance;
use buildat_voxelworld_api::{FindVoxels, FoundVoxels, MAX_FIND_CHUNKS};

/// Whether the voxel at `pos` is kept by a draw with chance 1/`chance`
/// seeded by `seed`: the same seed and position always draw the same.
pub fn keeps(seed: u64, pos: Pos, chance: u32) -> bool {
    if chance <= 1 {
        return true;
    }
    let mut h = seed
        ^ (pos[0] as u32 as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ (pos[1] as u32 as u64).wrapping_mul(0xC2B2_AE3D_27D4_EB4F)
        ^ (pos[2] as u32 as u64).wrapping_mul(0x1656_67B1_9E37_79F9);
    // splitmix64's finaliser.
    h = (h ^ (h >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    h = (h ^ (h >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    h ^= h >> 31;
    h.is_multiple_of(u64::from(chance))
}

/// Type ids as a table indexed by id.
fn type_table(types: &[u32]) -> Vec<bool> {
    let len = types
        .iter()
        .map(|t| VoxelInstance(*t).type_id() as usize + 1)
        .max()
        .unwrap_or(0);
    let mut table = vec![false; len];
    for t in types {
        table[VoxelInstance(*t).type_id() as usize] = true;
    }
    table
}

fn in_table(table: &[bool], voxel: u32) -> bool {
    table
        .get(VoxelInstance(voxel).type_id() as usize)
        .copied()
        .unwrap_or(false)
}

/// The type ids among `voxels`, sorted.
fn palette_of(voxels: &[u32]) -> Vec<u32> {
    let mut types: Vec<u32> = Vec::new();
    let mut last = None;
    for &voxel in voxels {
        let type_id = VoxelInstance(voxel).type_id();
        if last == Some(type_id) {
            continue;
        }
        last = Some(type_id);
        if let Err(at) = types.binary_search(&type_id) {
            types.insert(at, type_id);
        }
    }
    types
}

const SIZE: usize = geometry::CHUNK_SIZE as usize;

impl World {
    /// Answers a [`FindVoxels`] from the chunks in memory (see its doc).
    pub fn find_voxels(&mut self, request: &FindVoxels) -> Result<FoundVoxels, WorldError> {
        if request.chunks.len() > MAX_FIND_CHUNKS {
            return Err(WorldError::BadRequest(format!(
                "find_voxels of {} chunks: at most {MAX_FIND_CHUNKS}",
                request.chunks.len()
            )));
        }
        let started = std::time::Instant::now();
        let types = type_table(&request.types);
        let neighbours = type_table(&request.neighbours);
        let limit = request.limit as usize;
        let mut answer = FoundVoxels::default();
        if types.is_empty() {
            // Nothing can match: every chunk in memory is scanned at once.
            for chunk in &request.chunks {
                if self.generated_chunk(*chunk).is_some() {
                    answer.scanned += 1;
                } else {
                    answer.missing.push(*chunk);
                }
            }
            return Ok(answer);
        }
        let mut border = Vec::new();
        for &chunk in &request.chunks {
            if answer.found.len() >= limit {
                break;
            }
            let holds_one = self
                .chunk_types(chunk)
                .map(|held| held.iter().any(|t| in_table(&types, *t)));
            if holds_one == Some(false) {
                answer.scanned += 1;
                answer.skipped += 1;
                continue;
            }
            // A chunk held only as its blob is decoded for the scan and
            // dropped again after it: rounds over every chunk near the
            // players must not keep them all decoded (128 KiB each).
            let was_decoded = self.chunk_decoded(chunk);
            let Some(voxels) = self.voxels_of(chunk)? else {
                answer.missing.push(chunk);
                continue;
            };
            let palette = holds_one.is_none().then(|| palette_of(voxels));
            let origin = geometry::chunk_origin(chunk);
            border.clear();
            let mut stopped = false;
            for (index, &voxel) in voxels.iter().enumerate() {
                if !in_table(&types, voxel) {
                    continue;
                }
                let (x, y, z) = (index % SIZE, (index / SIZE) % SIZE, index / (SIZE * SIZE));
                let pos = [
                    origin[0] + x as i32,
                    origin[1] + y as i32,
                    origin[2] + z as i32,
                ];
                if !keeps(request.seed, pos, request.chance) {
                    continue;
                }
                if !neighbours.is_empty() {
                    let inside = (1..SIZE - 1).contains(&x)
                        && (1..SIZE - 1).contains(&y)
                        && (1..SIZE - 1).contains(&z);
                    if !inside {
                        border.push((pos, voxel));
                        continue;
                    }
                    let row = SIZE;
                    let layer = SIZE * SIZE;
                    let around = [
                        index + 1,
                        index - 1,
                        index + row,
                        index - row,
                        index + layer,
                        index - layer,
                    ];
                    if !around.iter().any(|&i| in_table(&neighbours, voxels[i])) {
                        continue;
                    }
                }
                answer.found.push((pos, voxel));
                if answer.found.len() >= limit {
                    stopped = true;
                    break;
                }
            }
            if !stopped {
                for &(pos, voxel) in &border {
                    let next_to = geometry::FACES.iter().any(|face| {
                        let at = [pos[0] + face[0], pos[1] + face[1], pos[2] + face[2]];
                        self.loaded_voxel(at)
                            .is_some_and(|v| in_table(&neighbours, v))
                    });
                    if !next_to {
                        continue;
                    }
                    answer.found.push((pos, voxel));
                    if answer.found.len() >= limit {
                        stopped = true;
                        break;
                    }
                }
            }
            if !stopped {
                answer.scanned += 1;
            }
            if let Some(palette) = palette {
                self.set_chunk_types(chunk, palette);
            }
            if !was_decoded {
                self.drop_decoded(chunk);
            }
        }
        answer.micros = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
        Ok(answer)
    }

    /// The type ids a generated chunk in memory is known to hold.
    fn chunk_types(&self, chunk: Pos) -> Option<&Vec<u32>> {
        self.sections
            .get(&self.section_size.section_of_chunk(chunk))
            .filter(|s| s.generated)?
            .chunks
            .get(&chunk)?
            .types
            .as_ref()
    }

    /// Whether a chunk in memory holds its voxels decoded.
    fn chunk_decoded(&self, chunk: Pos) -> bool {
        self.sections
            .get(&self.section_size.section_of_chunk(chunk))
            .and_then(|s| s.chunks.get(&chunk))
            .is_some_and(|c| c.voxels.is_some())
    }

    /// Drops a chunk's decoded voxels when its blob still holds them.
    fn drop_decoded(&mut self, chunk: Pos) {
        let section = self.section_size.section_of_chunk(chunk);
        if let Some(held) = self
            .sections
            .get_mut(&section)
            .and_then(|s| s.chunks.get_mut(&chunk))
            && held.blob.is_some()
        {
            held.voxels = None;
        }
    }

    fn set_chunk_types(&mut self, chunk: Pos, types: Vec<u32>) {
        let section = self.section_size.section_of_chunk(chunk);
        if let Some(held) = self
            .sections
            .get_mut(&section)
            .and_then(|s| s.chunks.get_mut(&chunk))
        {
            held.types = Some(types);
        }
    }

    /// The light at each position, `(sunlight, block light)`; `None` where
    /// its chunk is not in memory. Light not yet computed is computed.
    pub fn lights(&mut self, positions: &[Pos]) -> Result<Vec<Option<(u8, u8)>>, WorldError> {
        let mut lit: HashMap<Pos, Option<ChunkLight>> = HashMap::new();
        let mut answer = Vec::with_capacity(positions.len());
        for &pos in positions {
            let chunk = geometry::chunk_of_voxel(pos);
            let light = match lit.get(&chunk) {
                Some(light) => light.clone(),
                None => {
                    let light = if self.generated_chunk(chunk).is_some() {
                        self.chunk_light(chunk)?
                    } else {
                        None
                    };
                    lit.insert(chunk, light.clone());
                    light
                }
            };
            answer.push(light.and_then(|l| {
                l.get(geometry::index_in_chunk(pos)).map(|byte| {
                    (
                        buildat_voxel::light::sun(*byte),
                        buildat_voxel::light::block(*byte),
                    )
                })
            }));
        }
        Ok(answer)
    }

    /// A section came into memory with its voxels (`true`) or left it.
    pub(super) fn note_section(&mut self, pos: Pos, loaded: bool) {
        self.section_events.insert(pos, loaded);
    }

    /// The sections that came into memory and those that left it since the
    /// last call, by where each ended (one left and loaded again is only
    /// loaded; one loaded and left again only left).
    pub fn take_section_events(&mut self) -> (Vec<Pos>, Vec<Pos>) {
        let mut loaded = Vec::new();
        let mut unloaded = Vec::new();
        for (pos, is_loaded) in std::mem::take(&mut self.section_events) {
            if is_loaded {
                loaded.push(pos);
            } else {
                unloaded.push(pos);
            }
        }
        (loaded, unloaded)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{generate, open};
    use super::*;

    fn find(types: Vec<u32>, neighbours: Vec<u32>, chance: u32, chunks: Vec<Pos>) -> FindVoxels {
        FindVoxels {
            chunks,
            types,
            neighbours,
            chance,
            seed: 7,
            limit: u32::MAX,
        }
    }

    /// A chunk scanned whole is known by the types it holds: a later scan
    /// for types it lacks skips it without decoding its voxels (also once
    /// its decoded voxels were dropped), and an edit putting a type there
    /// makes it scanned again.
    #[test]
    fn a_chunk_without_the_types_asked_is_skipped_until_one_is_put_there() {
        let dir = tempfile::tempdir().unwrap();
        let mut world = open(dir.path());
        let dirt = world.voxels.get_id("dirt").unwrap();
        generate(&mut world, [0, 0, 0], "stone");
        let first = world
            .find_voxels(&find(vec![dirt], vec![], 1, vec![[0, 0, 0]]))
            .unwrap();
        assert_eq!((first.scanned, first.skipped), (1, 0), "scanned once");
        assert!(first.found.is_empty());
        assert!(
            !world.chunk_decoded([0, 0, 0]),
            "held as its blob, it is not kept decoded after the scan"
        );
        // Its decoded voxels are dropped (not read for two rounds).
        for _ in 0..3 {
            world.drop_unread_decoded();
        }
        let again = world
            .find_voxels(&find(vec![dirt], vec![], 1, vec![[0, 0, 0]]))
            .unwrap();
        assert_eq!((again.scanned, again.skipped), (1, 1), "skipped");
        assert!(!world.chunk_decoded([0, 0, 0]), "a skip decodes nothing");
        world.set_voxel([3, 4, 5], dirt).unwrap();
        let after_edit = world
            .find_voxels(&find(vec![dirt], vec![], 1, vec![[0, 0, 0]]))
            .unwrap();
        assert_eq!(after_edit.skipped, 0, "the edit put dirt there");
        assert_eq!(after_edit.found, vec![([3, 4, 5], dirt)]);
    }

    /// The voxels of the types asked are found in the chunks in memory,
    /// game bits kept; chunks not in memory are answered missing; the
    /// neighbour condition reads across chunk borders; the chance keeps
    /// about 1/k, the same ones for the same seed; the limit stops it.
    #[test]
    fn find_voxels_scans_the_chunks_in_memory() {
        let dir = tempfile::tempdir().unwrap();
        let mut world = open(dir.path());
        let stone = world.voxels.get_id("stone").unwrap();
        let dirt = world.voxels.get_id("dirt").unwrap();
        generate(&mut world, [0, 0, 0], "stone");
        world.take_section_events();
        // Air everywhere but three voxels of dirt; one with game bits.
        for chunk in world.section_size().chunks_of_section([0, 0, 0]) {
            let o = geometry::chunk_origin(chunk);
            for x in 0..32 {
                for y in 0..32 {
                    for z in 0..32 {
                        world
                            .set_voxel([o[0] + x, o[1] + y, o[2] + z], AIR)
                            .unwrap();
                    }
                }
            }
        }
        let bits = VoxelInstance::new(dirt, 3).0;
        world.set_voxel([5, 5, 5], bits).unwrap();
        world.set_voxel([31, 5, 5], dirt).unwrap();
        world.set_voxel([32, 5, 5], stone).unwrap();
        world.set_voxel([10, 10, 10], dirt).unwrap();
        world.set_voxel([10, 11, 10], stone).unwrap();

        let found = world
            .find_voxels(&find(vec![dirt], vec![], 1, vec![[0, 0, 0], [9, 9, 9]]))
            .unwrap();
        assert_eq!(
            found.found,
            vec![([5, 5, 5], bits), ([31, 5, 5], dirt), ([10, 10, 10], dirt)]
        );
        assert_eq!(found.missing, vec![[9, 9, 9]]);
        assert_eq!(found.scanned, 1);

        let beside_stone = world
            .find_voxels(&find(vec![dirt], vec![stone], 1, vec![[0, 0, 0]]))
            .unwrap();
        assert_eq!(
            beside_stone.found,
            vec![([10, 10, 10], dirt), ([31, 5, 5], dirt)],
            "the one at the border sees stone in the next chunk"
        );

        let limited = world
            .find_voxels(&FindVoxels {
                limit: 1,
                ..find(vec![dirt], vec![], 1, vec![[0, 0, 0], [1, 0, 0]])
            })
            .unwrap();
        assert_eq!(limited.found.len(), 1);
        assert_eq!(limited.scanned, 0, "stopped inside the first chunk");

        // Chance: of a chunk half stone, about 1/10 are kept.
        generate(&mut world, [0, 1, 0], "stone");
        let all = world
            .find_voxels(&find(vec![stone], vec![], 1, vec![[0, 2, 0]]))
            .unwrap()
            .found
            .len();
        assert_eq!(all, CHUNK_VOLUME / 2);
        let tenth = world
            .find_voxels(&find(vec![stone], vec![], 10, vec![[0, 2, 0]]))
            .unwrap();
        let share = tenth.found.len() as f64 / all as f64;
        assert!((0.08..0.12).contains(&share), "{share}");
        let again = world
            .find_voxels(&find(vec![stone], vec![], 10, vec![[0, 2, 0]]))
            .unwrap();
        assert_eq!(tenth.found, again.found, "the same seed draws the same");

        let too_many = find(vec![stone], vec![], 1, vec![[0, 0, 0]; MAX_FIND_CHUNKS + 1]);
        assert!(world.find_voxels(&too_many).is_err());
    }

    /// Lights of chunks in memory are answered (sunlight over open air),
    /// `None` elsewhere, and nothing is loaded for it.
    #[test]
    fn lights_are_read_in_memory_only() {
        let dir = tempfile::tempdir().unwrap();
        let mut world = open(dir.path());
        generate(&mut world, [0, 0, 0], "stone");
        // The half z >= 16 of each chunk is air: open to the sky.
        let lights = world
            .lights(&[[3, 62, 20], [3, 0, 3], [500, 0, 0]])
            .unwrap();
        assert_eq!(lights[0], Some((15, 0)));
        assert_eq!(lights[1], Some((0, 0)), "inside stone");
        assert_eq!(lights[2], None);
        assert_eq!(world.loaded_sections(), 1);
    }

    /// Sections loaded by generation or from storage are recorded, those
    /// evicted too, each once by where it ended.
    #[test]
    fn sections_loaded_and_unloaded_are_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let mut world = open(dir.path());
        generate(&mut world, [0, 0, 0], "stone");
        world.set_section_save_enabled([0, 0, 0], true).unwrap();
        assert_eq!(world.take_section_events(), (vec![[0, 0, 0]], vec![]));
        assert_eq!(world.take_section_events(), (vec![], vec![]), "taken once");
        world.budget = 1;
        generate(&mut world, [1, 0, 0], "stone");
        assert_eq!(
            world.take_section_events(),
            (vec![[1, 0, 0]], vec![[0, 0, 0]])
        );
        // Loaded back from storage (and [1, 0, 0], not saved, leaves).
        assert_eq!(world.load_section([0, 0, 0]).unwrap(), Loaded::Ready);
        assert_eq!(
            world.take_section_events(),
            (vec![[0, 0, 0]], vec![[1, 0, 0]])
        );
    }
}
