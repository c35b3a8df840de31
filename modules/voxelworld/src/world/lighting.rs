//! Light kept with the chunks: computed when a chunk is first asked for
//! (a batch lit at once on this thread and [`LIGHT_THREADS`]` - 1`
//! helpers, the inputs gathered here and each chunk's voxels copied out
//! once per batch; a section whose chunks mostly want light is lit whole,
//! in one box, [`light::light_region`]), and relit once a tick for what
//! changed
//! ([`World::relight`]): single edits updated in place on staged copies of
//! the chunks they reach, the rest (and the chunk of an edit whose change
//! reaches one at the edge of what is loaded or waiting to be relit) relit
//! whole, in slices.
//!
//! Owns: the light caches (decoded voxels, sunlight masks), staging and
//! the counts of how light was kept up to date. Does not own: the light
//! rules (`buildat_voxel::light`, `relight`) or when light is sent
//! (`stream.rs`).

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::Arc;
use std::time::Instant;

use buildat_voxel::VoxelLight;
use buildat_voxel::geometry::{self, Pos};
use buildat_voxel::light::{self, LightTable};
use buildat_voxel::relight::{LitWorld, relight_in_place};

use buildat_interface::log;

use super::{ChunkLight, Loaded, World, WorldError, decode_blob};

/// Chunks kept only as their blob that lighting keeps decoded at a time
/// (128 KiB each).
const LIGHT_DECODE_CACHE: usize = 128;
/// Threads lighting chunks at once (the world's thread and helpers for
/// the length of one batch).
pub const LIGHT_THREADS: usize = 2;
/// Chunks of voxels a [`LightMemo`] keeps at most (128 KiB each).
const LIGHT_MEMO_LIMIT: usize = 128;
/// What one relight, or one batch of chunks lit, remembers about the
/// chunks around those it lights.
#[derive(Default)]
struct LightMemo {
    /// Whether full sunlight comes down into each column of a chunk.
    sun_in: HashMap<Pos, Arc<Vec<bool>>>,
    /// A chunk's voxels (`None`: not in memory).
    voxels: HashMap<Pos, Option<Arc<[u32]>>>,
}

/// Blob-only chunks decoded for lighting: the last [`LIGHT_DECODE_CACHE`]
/// kept (oldest first in `order`), each with the
/// [`World::drop_unread_decoded`] round it was last used in, so an idle
/// world holds none of them.
#[derive(Default)]
pub(super) struct DecodedForLight {
    chunks: HashMap<Pos, DecodedChunk>,
    /// Each chunk with the count of keeps when it was kept: an entry whose
    /// chunk was removed, or kept again since, is stale and skipped.
    order: VecDeque<(Pos, u64)>,
    /// Chunks kept so far.
    kept: u64,
}

struct DecodedChunk {
    voxels: Arc<[u32]>,
    /// The round it was last used in.
    used: u64,
    /// Its entry in `order`.
    kept: u64,
}

impl DecodedForLight {
    /// A chunk's decoded voxels, marked used in `round`.
    fn get(&mut self, chunk: Pos, round: u64) -> Option<Arc<[u32]>> {
        let found = self.chunks.get_mut(&chunk)?;
        found.used = round;
        Some(found.voxels.clone())
    }

    /// A chunk's decoded voxels, not marked used.
    pub(super) fn peek(&self, chunk: Pos) -> Option<&[u32]> {
        self.chunks.get(&chunk).map(|found| &found.voxels[..])
    }

    /// Keeps a chunk's voxels, used in `round`; the oldest kept go past
    /// the limit.
    fn insert(&mut self, chunk: Pos, voxels: Arc<[u32]>, round: u64) {
        while self.chunks.len() >= LIGHT_DECODE_CACHE || self.order.len() >= 2 * LIGHT_DECODE_CACHE
        {
            let Some((old, kept)) = self.order.pop_front() else {
                break;
            };
            if self
                .chunks
                .get(&old)
                .is_some_and(|found| found.kept == kept)
            {
                self.chunks.remove(&old);
            }
        }
        self.kept += 1;
        let kept = self.kept;
        self.chunks.insert(
            chunk,
            DecodedChunk {
                voxels,
                used: round,
                kept,
            },
        );
        self.order.push_back((chunk, kept));
    }

    /// A chunk's voxels changed or were loaded again: its decoding is stale.
    pub(super) fn remove(&mut self, chunk: Pos) {
        self.chunks.remove(&chunk);
    }

    /// Drops the chunks last used before round `stale`; answers how many.
    pub(super) fn drop_used_before(&mut self, stale: u64) -> usize {
        let before = self.chunks.len();
        self.chunks.retain(|_, found| found.used >= stale);
        let chunks = &self.chunks;
        self.order
            .retain(|(chunk, kept)| chunks.get(chunk).is_some_and(|found| found.kept == *kept));
        before - self.chunks.len()
    }
}

/// A region's chunks and those around it, and the sunlight masks of the
/// row above, as [`light::Region`] borrows them.
type RegionInput = (Vec<Option<Arc<[u32]>>>, Vec<Option<Arc<Vec<bool>>>>);
/// Chunks of a section that must want light for the whole section to be
/// lit at once (lighting a section of 8 costs about what 3 chunks lit
/// alone do).
const SECTION_AT_ONCE: usize = 4;
/// Most voxels an update of light in place visits per channel before the
/// chunks are relit whole instead.
const IN_PLACE_LIMIT: usize = 200_000;
/// How light was brought up to date since the world was opened.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LightCounts {
    /// Edits whose light was updated in place.
    pub in_place: u64,
    /// Chunks lit whole by a relight.
    pub whole: u64,
}

/// A chunk staged for an update of light in place.
struct StagedChunk {
    voxels: Arc<[u32]>,
    light: Vec<u8>,
    changed: bool,
}

/// The world as an update in place sees it: the chunks it touched,
/// staged (`None`: it may not touch that chunk), kept only if it
/// finishes.
struct StagedLight<'w> {
    world: &'w mut World,
    chunks: HashMap<Pos, Option<StagedChunk>>,
}

impl LitWorld for StagedLight<'_> {
    fn get(&mut self, voxel: Pos) -> Option<(VoxelLight, u8)> {
        let chunk = geometry::chunk_of_voxel(voxel);
        if !self.chunks.contains_key(&chunk) {
            let staged = self.world.stage_light(chunk);
            self.chunks.insert(chunk, staged);
        }
        let staged = self.chunks.get(&chunk)?.as_ref()?;
        let index = geometry::index_in_chunk(voxel);
        let props = self.world.light_table.get(*staged.voxels.get(index)?);
        Some((props, *staged.light.get(index)?))
    }

    fn set(&mut self, voxel: Pos, light: u8) {
        let chunk = geometry::chunk_of_voxel(voxel);
        if let Some(Some(staged)) = self.chunks.get_mut(&chunk)
            && let Some(slot) = staged.light.get_mut(geometry::index_in_chunk(voxel))
            && *slot != light
        {
            *slot = light;
            staged.changed = true;
        }
    }
}

impl World {
    /// The light table, rebuilt if the registry grew since it was built.
    pub(super) fn refresh_light_table(&mut self) {
        if self.light_table_len == self.voxels.len() && !self.voxels.is_empty() {
            return;
        }
        self.light_table = LightTable::new(&self.voxels);
        self.light_table_len = self.voxels.len();
    }

    /// A chunk's voxels for lighting (`None` if not in memory), without
    /// keeping a chunk decoded that is kept as its blob: those are decoded
    /// into a small cache of the last [`LIGHT_DECODE_CACHE`], so lighting
    /// every streamed chunk does not decode every chunk in memory for good.
    fn light_voxels(&mut self, chunk: Pos) -> Result<Option<Arc<[u32]>>, WorldError> {
        let Some(found) = self.generated_chunk(chunk) else {
            return Ok(None);
        };
        if let Some(voxels) = &found.voxels {
            return Ok(Some(Arc::from(voxels.as_slice())));
        }
        if let Some(hit) = self.light_decoded.get(chunk, self.decoded_round) {
            return Ok(Some(hit));
        }
        let Some(found) = self.generated_chunk(chunk) else {
            return Ok(None);
        };
        let (node_id, blob) = (found.node_id, found.blob.clone().unwrap_or_default());
        let voxels: Arc<[u32]> =
            decode_blob(&self.voxels, &mut self.unknown_names, node_id, &blob)?.into();
        self.light_decoded
            .insert(chunk, voxels.clone(), self.decoded_round);
        Ok(Some(voxels))
    }

    /// A chunk's voxels changed: its cached decoding for light is stale.
    pub(super) fn forget_light_voxels(&mut self, chunk: Pos) {
        self.light_decoded.remove(chunk);
    }

    /// [`World::light_voxels`] remembered for one relight or one batch of
    /// chunks lit (the voxels cannot change meanwhile: the world's thread
    /// is the caller's), so a chunk's voxels are copied out once, not once
    /// for each neighbour lit.
    fn memo_voxels(
        &mut self,
        chunk: Pos,
        memo: &mut LightMemo,
    ) -> Result<Option<Arc<[u32]>>, WorldError> {
        if let Some(voxels) = memo.voxels.get(&chunk) {
            return Ok(voxels.clone());
        }
        let voxels = self.light_voxels(chunk)?;
        if memo.voxels.len() >= LIGHT_MEMO_LIMIT {
            memo.voxels.clear();
        }
        memo.voxels.insert(chunk, voxels.clone());
        Ok(voxels)
    }

    /// Which columns full sunlight comes down into the top of `chunk` (x +
    /// 32·z): all of them when the chunk above is not in memory (open sky
    /// above the loaded world), else what leaves the chunk above's bottom.
    /// Computed up the column, remembered in `memo` for one relight.
    fn sun_in(&mut self, chunk: Pos, memo: &mut LightMemo) -> Result<Arc<Vec<bool>>, WorldError> {
        // Up to the first chunk not in memory or already known.
        let mut chain = Vec::new();
        let mut at = chunk;
        let mut known = loop {
            if let Some(mask) = memo.sun_in.get(&at) {
                break mask.clone();
            }
            let above = [at[0], at[1] + 1, at[2]];
            if self.generated_chunk(above).is_none() {
                break Arc::new(vec![true; light::COLUMNS]);
            }
            chain.push(at);
            at = above;
        };
        if chain.is_empty() {
            memo.sun_in.insert(chunk, known.clone());
        }
        // Back down: each chunk's sunlight is what leaves the one above.
        for &below in chain.iter().rev() {
            let above = [below[0], below[1] + 1, below[2]];
            let voxels = self
                .memo_voxels(above, memo)?
                .unwrap_or_else(|| Arc::from([]));
            known = Arc::new(light::sun_exits(&voxels, &self.light_table, Some(&known)));
            memo.sun_in.insert(below, known.clone());
        }
        Ok(known)
    }

    /// Computes a chunk's light from what is in memory around it, keeps
    /// it, and answers it (`None` if the chunk is not in memory).
    fn compute_light(
        &mut self,
        chunk: Pos,
        memo: &mut LightMemo,
    ) -> Result<Option<ChunkLight>, WorldError> {
        let lit = self.light_chunks(&[chunk], memo)?;
        let answer = lit
            .iter()
            .find(|(c, _)| *c == chunk)
            .map(|(_, l)| l.clone());
        self.keep_light(lit, &[chunk], None);
        Ok(answer)
    }

    /// The regions to light for `chunks`: a chunk's whole section when all
    /// of it is generated and at least [`SECTION_AT_ONCE`] of its chunks
    /// want light (asked for now, never lit, or stale), else the chunk
    /// alone. Chunks not in memory are left out.
    fn light_regions(&self, chunks: &[Pos]) -> Vec<(Pos, [i32; 3])> {
        let size = self.section_size;
        let mut regions = Vec::new();
        let mut sections = BTreeSet::new();
        for &chunk in chunks {
            if self.generated_chunk(chunk).is_none() {
                continue;
            }
            let section = size.section_of_chunk(chunk);
            if sections.contains(&section) {
                continue;
            }
            let members = size.chunks_of_section(section);
            let whole = members.iter().all(|&c| self.generated_chunk(c).is_some());
            let wanting = members
                .iter()
                .filter(|&&c| {
                    chunks.contains(&c)
                        || self.light_stale.contains(&c)
                        || self
                            .generated_chunk(c)
                            .is_some_and(|found| found.light.is_none())
                })
                .count();
            if whole && wanting >= SECTION_AT_ONCE {
                sections.insert(section);
                let first = std::array::from_fn(|a| section[a] * size.0[a]);
                regions.push((first, size.0));
            } else {
                regions.push((chunk, [1, 1, 1]));
            }
        }
        regions
    }

    /// What lighting the region of `size` chunks from `first` reads: its
    /// chunks and one around (x fastest), and the sunlight masks of the
    /// row above them.
    fn region_input(
        &mut self,
        first: Pos,
        size: [i32; 3],
        memo: &mut LightMemo,
    ) -> Result<RegionInput, WorldError> {
        let grid = size.map(|n| n + 2);
        let at = |g: [i32; 3]| std::array::from_fn(|a| first[a] + g[a] - 1);
        let mut voxels = Vec::with_capacity((grid[0] * grid[1] * grid[2]) as usize);
        for gz in 0..grid[2] {
            for gy in 0..grid[1] {
                for gx in 0..grid[0] {
                    voxels.push(self.memo_voxels(at([gx, gy, gz]), memo)?);
                }
            }
        }
        let mut masks = Vec::with_capacity((grid[0] * grid[2]) as usize);
        for gz in 0..grid[2] {
            for gx in 0..grid[0] {
                let above = at([gx, grid[1] - 1, gz]);
                let mut mask = None;
                if self.generated_chunk(above).is_some() {
                    let sun_in = self.sun_in(above, memo)?;
                    if let Some(found) = self.generated_chunk_mut(above) {
                        found.sun_in = Some(sun_in.as_ref().clone());
                    }
                    mask = Some(sun_in);
                }
                masks.push(mask);
            }
        }
        Ok((voxels, masks))
    }

    /// Computes the light of `chunks` from what is in memory around them,
    /// keeps it and answers it, with that of the other chunks of any
    /// section lit whole with them ([`World::light_regions`]); chunks not
    /// in memory are left out. The inputs are gathered here; the light
    /// itself is computed on up to [`LIGHT_THREADS`] threads at once (this
    /// one included).
    fn light_chunks(
        &mut self,
        chunks: &[Pos],
        memo: &mut LightMemo,
    ) -> Result<Vec<(Pos, ChunkLight)>, WorldError> {
        self.refresh_light_table();
        let regions = self.light_regions(chunks);
        let mut inputs = Vec::with_capacity(regions.len());
        for &(first, size) in &regions {
            inputs.push((first, size, self.region_input(first, size, memo)?));
        }
        let table = &self.light_table;
        let light_one = |(first, size, (voxels, masks)): &(Pos, [i32; 3], RegionInput)| {
            let region = light::Region {
                size: size.map(|n| n.max(0) as usize),
                chunks: voxels.iter().map(|v| v.as_deref()).collect(),
                sun_in: masks
                    .iter()
                    .map(|m| m.as_ref().map(|m| m.as_slice()))
                    .collect(),
            };
            let mut out = Vec::new();
            let mut index = 0;
            let lit = light::light_region(&region, table);
            for z in 0..size[2] {
                for y in 0..size[1] {
                    for x in 0..size[0] {
                        if let Some(light) = lit.get(index) {
                            let chunk = [first[0] + x, first[1] + y, first[2] + z];
                            out.push((chunk, Arc::new(light.clone())));
                        }
                        index += 1;
                    }
                }
            }
            out
        };
        let per_thread = inputs.len().div_ceil(LIGHT_THREADS).max(1);
        let lit: Vec<(Pos, ChunkLight)> = std::thread::scope(|scope| {
            let mut parts = inputs.chunks(per_thread);
            let own = parts.next().unwrap_or_default();
            let others: Vec<_> = parts
                .map(|part| {
                    scope.spawn(move || part.iter().flat_map(light_one).collect::<Vec<_>>())
                })
                .collect();
            let mut lit: Vec<(Pos, ChunkLight)> = own.iter().flat_map(light_one).collect();
            for other in others {
                match other.join() {
                    Ok(part) => lit.extend(part),
                    Err(panic) => std::panic::resume_unwind(panic),
                }
            }
            lit
        });
        Ok(lit)
    }

    /// Keeps the light [`World::light_chunks`] computed for the chunks
    /// `asked` and for those of their sections not lit before, and for
    /// those stale (no longer stale then) if `relit` is given; answers in
    /// `relit` those whose kept light changed. A chunk already lit and not
    /// stale keeps its light (it is the same), and one stale is relit by
    /// [`World::relight`], which tells its holders.
    fn keep_light(
        &mut self,
        lit: Vec<(Pos, ChunkLight)>,
        asked: &[Pos],
        mut relit: Option<&mut BTreeMap<Pos, ChunkLight>>,
    ) {
        for (chunk, light) in lit {
            let stale = self.light_stale.contains(&chunk);
            let Some(found) = self.generated_chunk_mut(chunk) else {
                continue;
            };
            let keep = match (&found.light, relit.as_deref_mut()) {
                (None, _) => true,
                (Some(old), Some(relit)) if asked.contains(&chunk) || stale => {
                    if *old != light {
                        relit.insert(chunk, light.clone());
                    }
                    true
                }
                (Some(_), _) => asked.contains(&chunk) && !stale,
            };
            if keep {
                found.light = Some(light);
                if relit.is_some() {
                    self.light_stale.remove(&chunk);
                }
            }
        }
    }

    /// Lights those of `chunks` whose light is not computed yet, together
    /// (several threads at once), so a pump sending them finds it ready.
    pub fn prelight(&mut self, chunks: &[Pos]) -> Result<(), WorldError> {
        let missing: Vec<Pos> = chunks
            .iter()
            .copied()
            .filter(|&chunk| {
                self.generated_chunk(chunk)
                    .is_some_and(|found| found.light.is_none())
            })
            .collect();
        if missing.len() > 1 {
            let lit = self.light_chunks(&missing, &mut LightMemo::default())?;
            self.keep_light(lit, &missing, None);
        }
        Ok(())
    }

    /// Lights `chunks` for good and keeps their light; answers how many
    /// were lit (headless pregen's `--light`).
    ///
    /// The caller promises that every chunk whose voxels can reach their
    /// light (the chunks around each, and every chunk above those) is
    /// generated and will not change before the process ends, and that no
    /// chunk around or below them was lit before they were generated (pregen
    /// lights a chunk of its run only once its run's chunks around and above
    /// it are generated, and a headless run lights nothing else). Then
    /// nothing they reach needs lighting again, so they leave the chunks
    /// waiting for [`World::relight`]: without that, the first tick after
    /// the run would light the whole region a second time.
    pub fn light_settled(&mut self, chunks: &[Pos]) -> Result<u64, WorldError> {
        let lit = self.light_chunks(chunks, &mut LightMemo::default())?;
        let count = lit.len() as u64;
        self.keep_light(lit, chunks, None);
        for chunk in chunks {
            self.light_dirty.remove(chunk);
        }
        Ok(count)
    }

    /// A chunk's light (one byte per voxel, `buildat_voxel::light`),
    /// computed on first use; `None` if its section is not generated. Light
    /// kept while changes wait for the next [`World::relight`] is answered
    /// as it is.
    pub fn chunk_light(&mut self, chunk: Pos) -> Result<Option<ChunkLight>, WorldError> {
        let section_pos = self.section_size.section_of_chunk(chunk);
        if self.load_section(section_pos)? != Loaded::Ready {
            return Ok(None);
        }
        if let Some(lit) = self.generated_chunk(chunk).and_then(|c| c.light.clone()) {
            return Ok(Some(lit));
        }
        self.compute_light(chunk, &mut LightMemo::default())
    }

    /// Recomputes the kept light of every chunk the voxels changed since
    /// the last call can reach; answers the chunks whose light changed,
    /// with their new light. Once a tick: the changes of a tick are lit
    /// together, across chunk borders. Relighting stops at `deadline`
    /// (after at least one chunk); [`World::light_pending`] then says more
    /// is to do, and the next call goes on where this one stopped.
    pub fn relight(&mut self, deadline: Instant) -> Result<Vec<(Pos, ChunkLight)>, WorldError> {
        if !self.light_pending() {
            return Ok(Vec::new());
        }
        self.refresh_light_table();
        let mut relit: BTreeMap<Pos, ChunkLight> =
            self.relight_edits_in_place().into_iter().collect();
        let mut dirty: Vec<Pos> = std::mem::take(&mut self.light_dirty).into_iter().collect();
        // Top first: a change above is followed down through those below.
        dirty.sort_by_key(|c| (std::cmp::Reverse(c[1]), c[0], c[2]));
        let mut memo = LightMemo::default();
        let around = |c: Pos, dy: std::ops::RangeInclusive<i32>| {
            let mut out = Vec::new();
            for z in -1..=1 {
                for y in dy.clone() {
                    for x in -1..=1 {
                        out.push([c[0] + x, c[1] + y, c[2] + z]);
                    }
                }
            }
            out
        };
        for changed in dirty {
            self.light_stale.extend(around(changed, -1..=1));
            // Down the column while the sunlight coming down changes.
            let mut below = [changed[0], changed[1] - 1, changed[2]];
            while self.generated_chunk(below).is_some() {
                let sun_in = self.sun_in(below, &mut memo)?;
                let Some(found) = self.generated_chunk_mut(below) else {
                    break;
                };
                if found.sun_in.as_deref() == Some(sun_in.as_slice()) {
                    break;
                }
                found.sun_in = Some(sun_in.as_ref().clone());
                self.light_stale.extend(around(below, -1..=-1));
                below[1] -= 1;
            }
        }
        let mut computed_any = false;
        loop {
            if computed_any && Instant::now() >= deadline {
                break;
            }
            // The next few stale chunks that have light, lit together
            // (with their sections where most of one is stale).
            let mut batch = Vec::with_capacity(LIGHT_THREADS);
            while batch.len() < LIGHT_THREADS {
                let Some(chunk) = self.light_stale.first().copied() else {
                    break;
                };
                // Never asked for: computed when it is.
                if self
                    .generated_chunk(chunk)
                    .is_some_and(|c| c.light.is_some())
                {
                    batch.push(chunk);
                }
                self.light_stale.remove(&chunk);
            }
            if batch.is_empty() {
                break;
            }
            computed_any = true;
            match self.light_chunks(&batch, &mut memo) {
                Ok(lit) => {
                    self.light_counts.whole += lit.len() as u64;
                    self.keep_light(lit, &batch, Some(&mut relit));
                }
                Err(error) => {
                    // Relit by a later call: nothing is dropped.
                    self.light_stale.extend(batch);
                    return Err(error);
                }
            }
        }
        Ok(relit.into_iter().collect())
    }

    /// Updates the light around the voxels set since the last relight in
    /// place (`buildat_voxel::relight`), touching only the voxels whose
    /// light they can change; answers the chunks whose light changed. An
    /// edit in a chunk not lit yet has its chunk relit whole instead. The
    /// edits are updated together; when the change of one of them reaches
    /// a chunk that cannot be updated in place ([`World::stage_light`]:
    /// one waiting to be relit whole, or at the edge of what is loaded),
    /// they are updated again a chunk's edits at a time, and only the
    /// chunks whose edits fail are relit whole (before, one such edit sent
    /// every edit of the tick, and the 26 chunks around each, to be relit
    /// whole).
    fn relight_edits_in_place(&mut self) -> Vec<(Pos, ChunkLight)> {
        let edits: BTreeSet<Pos> = std::mem::take(&mut self.light_edits).into_iter().collect();
        if edits.is_empty() {
            return Vec::new();
        }
        let (in_place, whole): (Vec<Pos>, Vec<Pos>) = edits.into_iter().partition(|&voxel| {
            self.generated_chunk(geometry::chunk_of_voxel(voxel))
                .is_some_and(|c| c.light.is_some())
        });
        self.light_dirty
            .extend(whole.iter().map(|&v| geometry::chunk_of_voxel(v)));
        if in_place.is_empty() {
            return Vec::new();
        }
        if let Some(relit) = self.update_in_place(&in_place) {
            return relit;
        }
        let mut by_chunk: BTreeMap<Pos, Vec<Pos>> = BTreeMap::new();
        for voxel in in_place {
            by_chunk
                .entry(geometry::chunk_of_voxel(voxel))
                .or_default()
                .push(voxel);
        }
        if by_chunk.len() == 1 {
            // The one chunk's edits just failed together: not tried again.
            self.light_dirty.extend(by_chunk.into_keys());
            return Vec::new();
        }
        // In turn: each stages the light the ones before it left.
        let mut relit = BTreeMap::new();
        for (chunk, edits) in by_chunk {
            match self.update_in_place(&edits) {
                Some(updated) => relit.extend(updated),
                None => {
                    self.light_dirty.insert(chunk);
                }
            }
        }
        relit.into_iter().collect()
    }

    /// One update in place of `edits` together, kept if it completes:
    /// the chunks whose light changed, with their new light; `None` (and
    /// nothing changed) if it reaches a chunk that cannot be updated in
    /// place or too many voxels.
    fn update_in_place(&mut self, edits: &[Pos]) -> Option<Vec<(Pos, ChunkLight)>> {
        let mut staged = StagedLight {
            world: self,
            chunks: HashMap::new(),
        };
        let outcome = relight_in_place(&mut staged, edits, IN_PLACE_LIMIT);
        let chunks = staged.chunks;
        if let Err(error) = outcome {
            log::debug!("light: {error}, for {} edits", edits.len());
            return None;
        }
        self.light_counts.in_place += edits.len() as u64;
        let mut relit = Vec::new();
        for (pos, chunk) in chunks {
            let Some(StagedChunk {
                light,
                changed: true,
                ..
            }) = chunk
            else {
                continue;
            };
            let light: ChunkLight = Arc::new(light);
            if let Some(found) = self.generated_chunk_mut(pos) {
                found.light = Some(light.clone());
            }
            relit.push((pos, light));
        }
        Some(relit)
    }

    /// A chunk's voxels and a copy of its light for an update in place;
    /// `None` if its light cannot be updated in place: not lit, waiting to
    /// be relit whole, or a neighbour is not generated (its light is then
    /// lit by the rules at the edge of the world, open sky above and rock
    /// beside, which an update in place does not follow).
    fn stage_light(&mut self, chunk: Pos) -> Option<StagedChunk> {
        if self.light_dirty.contains(&chunk) || self.light_stale.contains(&chunk) {
            return None;
        }
        let light = self.generated_chunk(chunk)?.light.clone()?;
        for i in 0..27i32 {
            let offset = [i % 3, i / 3 % 3, i / 9].map(|o| o - 1);
            let near = [0, 1, 2].map(|a| chunk[a] + offset[a]);
            self.generated_chunk(near)?;
        }
        let voxels = self.light_voxels(chunk).ok()??;
        Some(StagedChunk {
            voxels,
            light: light.to_vec(),
            changed: false,
        })
    }

    /// Whether the last [`World::relight`] ran out of time (or changes
    /// came since): call it again.
    pub fn light_pending(&self) -> bool {
        !self.light_dirty.is_empty() || !self.light_stale.is_empty() || !self.light_edits.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::world::tests::{far, generate, generate_where, open};
    use buildat_voxel::{AIR, BlockDefinition};

    /// Relights in one call.
    fn relight_at_once(world: &mut World) -> Vec<(Pos, ChunkLight)> {
        let relit = world.relight(far()).unwrap();
        assert!(!world.light_pending());
        relit
    }

    #[test]
    fn chunks_decoded_for_light_alone_are_dropped_once_unused() {
        let dir = tempfile::tempdir().unwrap();
        let mut world = open(dir.path());
        generate(&mut world, [0, 0, 0], "stone");
        generate(&mut world, [0, 1, 0], "stone");
        relight_at_once(&mut world);
        let held = |world: &World| world.light_decoded.chunks.len();
        assert!(held(&world) > 0, "relit from blobs: decoded for light");
        let used = *world.light_decoded.chunks.keys().next().unwrap();
        world.drop_unread_decoded();
        world.drop_unread_decoded();
        assert!(world.light_voxels(used).unwrap().is_some());
        let dropped = world.drop_unread_decoded();
        assert_eq!(held(&world), 1, "only the one used in the last round");
        assert!(dropped > 0);
        assert_eq!(world.light_decoded.order.len(), 1);
        world.drop_unread_decoded();
        world.drop_unread_decoded();
        assert_eq!(held(&world), 0, "unused for two rounds: dropped");
        assert!(world.light_decoded.order.is_empty());
        // A kept, B kept, A changed and kept again: past the limit, B is
        // the oldest kept and goes, not A (its first entry is stale).
        let voxels: Arc<[u32]> = Arc::from(vec![0; 4]);
        let (a, b) = ([0, 0, 0], [1, 0, 0]);
        let mut cache = DecodedForLight::default();
        cache.insert(a, voxels.clone(), 0);
        cache.insert(b, voxels.clone(), 0);
        cache.remove(a);
        cache.insert(a, voxels.clone(), 0);
        for x in 2..LIGHT_DECODE_CACHE as i32 {
            cache.insert([x, 0, 0], voxels.clone(), 0);
        }
        assert_eq!(cache.chunks.len(), LIGHT_DECODE_CACHE);
        cache.insert([-1, 0, 0], voxels, 0);
        assert_eq!(cache.chunks.len(), LIGHT_DECODE_CACHE);
        assert!(cache.peek(b).is_none(), "the oldest kept went");
        assert!(cache.peek(a).is_some(), "kept again later: stays");
        assert!(
            world.chunk_light([0, 0, 0]).unwrap().is_some(),
            "the light itself is kept"
        );
    }

    /// Relights in calls always out of time: one chunk each, the last
    /// light of each chunk kept.
    fn relight_in_slices(world: &mut World) -> Vec<(Pos, ChunkLight)> {
        let mut relit = BTreeMap::new();
        for calls in 1.. {
            let some = world.relight(Instant::now()).unwrap();
            // The first call also brings what it updates in place.
            assert!(
                calls == 1 || some.len() <= 1,
                "out of time, one chunk a call"
            );
            relit.extend(some);
            if !world.light_pending() {
                break;
            }
            assert!(calls < 1000, "every call makes progress");
        }
        relit.into_iter().collect()
    }

    #[test]
    fn light_is_computed_when_asked_and_relit_once_for_a_batch_of_edits() {
        light_follows_edits(relight_at_once);
    }

    #[test]
    fn light_relit_in_slices_ends_as_light_relit_at_once() {
        light_follows_edits(relight_in_slices);
    }

    /// A world with a torch block (block light 14, clear); the torch's and
    /// stone's type ids.
    fn open_with_torch(dir: &std::path::Path) -> (World, u32, u32) {
        let mut world = open(dir);
        let mut torch = BlockDefinition::simple("torch", "torch.png");
        torch.physically_solid = false;
        torch.light_source = 14;
        torch.light_absorption = 0;
        let torch = world.register_block(torch).unwrap()[0];
        let stone = world.voxels.get_id("stone").unwrap();
        (world, torch, stone)
    }

    fn light_follows_edits(relight: fn(&mut World) -> Vec<(Pos, ChunkLight)>) {
        let dir = tempfile::tempdir().unwrap();
        let (mut world, torch, stone) = open_with_torch(dir.path());
        // Each chunk: stone where z < 16 (its first half), air above it.
        generate(&mut world, [0, 0, 0], "stone");
        let light_at = |world: &mut World, p: Pos| {
            let light = world
                .chunk_light(geometry::chunk_of_voxel(p))
                .unwrap()
                .unwrap();
            light[geometry::index_in_chunk(p)]
        };
        let open = [5, 5, 20];
        assert_eq!(light_at(&mut world, open), light::FULL_SUN, "open sky");
        assert_eq!(light_at(&mut world, [5, 5, 10]), 0, "inside the stone");
        assert!(
            world
                .generated_chunk([1, 1, 1])
                .is_some_and(|c| c.voxels.is_none()),
            "lighting keeps no chunk decoded for good"
        );
        assert!(relight(&mut world).is_empty(), "nothing changed yet");
        // Two edits in one batch: a roof high above, a torch below.
        world.set_voxel([5, 60, 20], stone).unwrap();
        world.set_voxel([5, 5, 17], torch).unwrap();
        let relit = relight(&mut world);
        let chunks: BTreeSet<Pos> = relit.iter().map(|(c, _)| *c).collect();
        assert!(chunks.contains(&[0, 0, 0]), "{chunks:?}");
        let lit = light_at(&mut world, open);
        assert_eq!(light::sun(lit), 14, "shaded by the roof, lit from beside");
        assert_eq!(light::block(light_at(&mut world, [5, 5, 17])), 14);
        assert_eq!(light::block(light_at(&mut world, [6, 5, 17])), 13);
        // Across the border into the chunk beside it.
        world.set_voxel([31, 5, 17], torch).unwrap();
        relight(&mut world);
        assert_eq!(light::block(light_at(&mut world, [33, 5, 17])), 12);
        // Removing the roof lets the sun back down.
        world.set_voxel([5, 60, 20], AIR).unwrap();
        relight(&mut world);
        assert_eq!(light::sun(light_at(&mut world, open)), 15);
    }

    /// A region generated in pregen's order (from the centre out, batches
    /// of 3 sections) under a stone roof over its middle column, lit
    /// batch by batch either as pregen does (each chunk once settled) or
    /// each batch as it comes; answers what a full relight then changes.
    fn pregen_then_relight(settled: bool) -> Vec<(Pos, ChunkLight)> {
        use crate::pregen::{PregenRun, Unlit, region};
        let dir = tempfile::tempdir().unwrap();
        let mut world = open(dir.path());
        let half = (geometry::CHUNK_SIZE as usize).pow(3) / 2;
        let mut run = PregenRun::new(region(1, 1), 0, 3);
        let mut unlit = Unlit::new(world.section_size(), 1, run.remaining());
        while let Some(batch) = run.next_batch() {
            unlit.generating(&batch);
            for &section in &batch {
                let roof = section == [0, 1, 0];
                generate_where(&mut world, section, "stone", |i| roof || i < half);
            }
            let chunks = if settled {
                unlit.take_settled(run.is_finished())
            } else {
                batch
                    .iter()
                    .flat_map(|&s| world.section_size().chunks_of_section(s))
                    .collect()
            };
            world.light_settled(&chunks).unwrap();
        }
        if settled {
            assert!(!world.light_pending(), "nothing left to relight");
        }
        let every: Vec<Pos> = region(1, 1)
            .into_iter()
            .flat_map(|s| world.section_size().chunks_of_section(s))
            .collect();
        assert!(
            every
                .iter()
                .all(|&c| world.generated_chunk(c).unwrap().light.is_some())
        );
        world.light_dirty.extend(every);
        relight_at_once(&mut world)
    }

    /// Pregen's light is final: a full relight after it changes nothing.
    /// Lit as each batch comes instead, the shade under the roof changes
    /// once the sections around arrive (so the check can see a difference).
    #[test]
    fn light_settled_in_pregen_order_is_what_a_full_relight_gives() {
        let relit = pregen_then_relight(true);
        assert!(
            relit.is_empty(),
            "changed: {:?}",
            relit.iter().map(|r| r.0).collect::<Vec<_>>()
        );
        assert!(!pregen_then_relight(false).is_empty());
    }

    /// Sections -1..=1 each way (chunks -2..=3) generated: chunks 0..=1
    /// have every neighbour, so their light can be updated in place.
    fn generate_around_origin(world: &mut World) {
        for z in -1..=1 {
            for y in -1..=1 {
                for x in -1..=1 {
                    generate(world, [x, y, z], "stone");
                }
            }
        }
    }

    /// The light kept for `chunk` is what lighting it whole gives.
    fn assert_kept_is_whole(world: &mut World, chunk: Pos, when: &str) {
        let kept = world.generated_chunk(chunk).unwrap().light.clone().unwrap();
        let whole = world
            .compute_light(chunk, &mut LightMemo::default())
            .unwrap()
            .unwrap();
        assert!(kept == whole, "{when}: chunk {chunk:?}");
    }

    #[test]
    fn a_section_lit_at_once_gives_each_chunk_the_light_it_gets_alone() {
        let dir = tempfile::tempdir().unwrap();
        let (mut world, torch, _) = open_with_torch(dir.path());
        generate_around_origin(&mut world);
        world.set_voxel([40, 20, 40], torch).unwrap();
        world.set_voxel([31, 31, 31], torch).unwrap();
        world.relight(far()).unwrap();
        // The first chunk asked of an unlit section lights all of it.
        world.chunk_light([0, 0, 0]).unwrap().unwrap();
        let section = world.section_size.chunks_of_section([0, 0, 0]);
        let together: Vec<ChunkLight> = section
            .iter()
            .map(|&c| {
                world
                    .generated_chunk(c)
                    .unwrap()
                    .light
                    .clone()
                    .expect("lit with it")
            })
            .collect();
        // Each again alone: the others lit, so only it is.
        for (&chunk, together) in section.iter().zip(&together) {
            world.generated_chunk_mut(chunk).unwrap().light = None;
            let alone = world.chunk_light(chunk).unwrap().unwrap();
            assert!(alone == *together, "chunk {chunk:?}");
        }
        assert!(
            together
                .iter()
                .any(|l| l.iter().any(|&b| light::block(b) > 0)),
            "the torches light the section"
        );
    }

    /// One edit whose update in place cannot complete (its chunk waits to
    /// be relit whole) costs only its own chunk: an edit of the same tick
    /// elsewhere is still updated in place, and both end lit as computed
    /// whole.
    #[test]
    fn an_edit_that_cannot_be_updated_in_place_leaves_the_others_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let (mut world, torch, _) = open_with_torch(dir.path());
        generate_around_origin(&mut world);
        let (waiting, elsewhere) = ([0, 0, 0], [1, 1, 1]);
        for chunk in [waiting, elsewhere] {
            world.chunk_light(chunk).unwrap().unwrap();
        }
        // What generating left to relight, relit: the world at rest.
        world.relight(far()).unwrap();
        let at_rest = world.light_counts;
        // In the stone half of each chunk (z < 16): no sky above them.
        world.set_voxel([16, 16, 8], torch).unwrap();
        world.set_voxel([48, 48, 40], torch).unwrap();
        // As when the last tick's relight stopped at its deadline.
        world.light_stale.insert(waiting);
        world.relight(far()).unwrap();
        assert!(!world.light_pending());
        assert_eq!(
            world.light_counts.in_place - at_rest.in_place,
            1,
            "the edit elsewhere, in place: {:?}",
            world.light_counts
        );
        for chunk in [waiting, elsewhere] {
            assert_kept_is_whole(&mut world, chunk, "after the relight");
        }
        let lit = |chunk: Pos| {
            let light = world.generated_chunk(chunk).unwrap().light.clone().unwrap();
            light[geometry::index_in_chunk([16, 16, 8])]
        };
        assert!(lit(waiting) > 0, "the torch in the waiting chunk shines");
    }

    #[test]
    fn light_updated_in_place_is_the_light_computed_whole() {
        let dir = tempfile::tempdir().unwrap();
        let (mut world, torch, stone) = open_with_torch(dir.path());
        generate_around_origin(&mut world);
        let lit: Vec<Pos> = (0..8).map(|i| [i & 1, i >> 1 & 1, i >> 2 & 1]).collect();
        for &chunk in &lit {
            world.chunk_light(chunk).unwrap().unwrap();
        }
        let mut seed = 0x2545_F491_4F6C_DD1Du64;
        let mut next = |n: i32| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as i32
        };
        for round in 0..12 {
            for _ in 0..1 + next(3) {
                let voxel = [4 + next(56), 4 + next(56), 4 + next(56)];
                let kind = [AIR, stone, torch][next(3) as usize];
                world.set_voxel(voxel, kind).unwrap();
            }
            world.relight(far()).unwrap();
            for &chunk in &lit {
                assert_kept_is_whole(&mut world, chunk, &format!("round {round}"));
            }
        }
        assert!(
            world.light_counts.in_place > 0,
            "some updates in place: {:?}",
            world.light_counts
        );
    }
}
