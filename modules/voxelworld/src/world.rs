//! The world in memory: loaded sections with their static chunk nodes and
//! dynamic nodes, the registries, dirty tracking, save rules and the
//! loaded-section budget.
//!
//! Owns: sections in memory and their translation to and from storage
//! records (voxels stored by name through `buildat-format`'s voxel blob).
//! Invariants: only save-enabled sections (or sections holding a
//! save-enabled node) are written; every other section is regenerated when
//! next needed; a section is written whole in one storage transaction; node
//! ids come from durably reserved blocks and are never reused; evicting a
//! section saves it first when it must be saved, and a section whose save
//! fails stays in memory, dirty, over the budget if need be, until storage
//! works again (an edit is never dropped because the disk is full); a
//! stored section that does not decode is reported, quarantined and
//! generated again, instead of failing every load that touches it.
//! Light (`buildat_voxel::light`) is derived, never stored: a chunk's light
//! is computed the first time it is asked for (streaming) from the loaded
//! chunks around it, and kept with the chunk; chunks whose voxels change
//! (edits, generation, loading) are gathered and [`World::relight`] (once a
//! tick) recomputes the kept light of every chunk they can reach: their 26
//! neighbours, and below them, as far down as the sunlight coming down
//! changed, the chunks under it and their neighbours.
//! By feature: loading, saving, eviction and reload in
//! `world/persistence.rs`; light in `world/lighting.rs`; dynamic nodes in
//! `world/nodes.rs`; the columns' tops for maps in `world/tops.rs`; edits
//! stored together with modules' values in `world/together.rs`.
//! Does not own: the database (`storage.rs`) or generation (a generator
//! module answers `voxelworld:generation_request`).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ops::Range;
use std::sync::Arc;
use std::time::Instant;

use buildat_format::{decode_voxels, encode_voxels};
use buildat_interface::log;
use buildat_voxel::geometry::{self, CHUNK_VOLUME, Pos, SectionSize};
use buildat_voxel::light::LightTable;
use buildat_voxel::{AIR, BlockDefinition, BlockRegistry, RegistryError, UNKNOWN, VoxelRegistry};
use buildat_voxelworld_api::{
    ChunkData, DynamicNode, SpecialVoxel, StoredNode, StoredNodeKind, VAR_MOD_VERSION,
    VAR_REGISTRY_NAME, VAR_VOXEL_DATA,
};

use crate::special::{self, Handlers, Pending};
use crate::storage::{StorageError, StoredSection, WorldStorage};

mod find;
mod lighting;
mod nodes;
mod persistence;
mod together;
mod tops;

pub use find::keeps;
pub use lighting::{LIGHT_THREADS, LightCounts};
pub use together::{Together, replace_allows};

/// Node ids reserved from storage at a time.
const ID_BLOCK: u64 = 1024;
const REGISTRY_NAME: &str = "main";
const BLOB_VERSION: &str = "1";

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WorldError {
    #[error(transparent)]
    Storage(#[from] StorageError),
    #[error(transparent)]
    Registry(#[from] RegistryError),
    #[error("section {0:?} is not generated yet")]
    NotGenerated(Pos),
    #[error("voxel type {0} is not registered")]
    UnknownVoxel(u32),
    #[error("no node {0}")]
    NoNode(u64),
    #[error("node {id} cannot be attached to {parent}: it would carry itself")]
    NodeCycle { id: u64, parent: u64 },
    #[error("chunk {chunk:?} is not part of section {section:?}")]
    WrongSection { chunk: Pos, section: Pos },
    #[error("stored node {id} does not decode: {why}")]
    BadNode { id: u64, why: String },
    #[error(transparent)]
    Payload(#[from] buildat_interface::PayloadError),
    #[error("encoding light: {0}")]
    Light(String),
    #[error("{0}")]
    BadRequest(String),
    #[error("get_voxels of {0} positions: at most {max}", max = buildat_voxelworld_api::MAX_VOXELS_PER_CALL)]
    TooManyPositions(usize),
    #[error("viewer {0}: position out of the world")]
    ViewerOutOfWorld(u64),
    /// Storage found a key claimed in an `edit_together` taken, though it
    /// was free when checked (another writer): nothing was applied.
    #[error(
        "edit_together: a value claimed (only_if_absent) was taken meanwhile by another writer: \
         nothing applied"
    )]
    ClaimedMeanwhile,
}

impl From<WorldError> for buildat_interface::ModuleError {
    /// At the module's edge: the caller gets the world's message.
    fn from(error: WorldError) -> Self {
        buildat_interface::ModuleError::msg(error.to_string())
    }
}

/// A static chunk node. At least one of `voxels` and `blob` is present:
/// chunks from storage or a generator keep only their blob until something
/// reads a voxel (streaming and saving reuse the blob as it is), and an edit
/// drops the blob.
struct Chunk {
    node_id: u64,
    voxels: Option<Vec<u32>>,
    blob: Option<Vec<u8>>,
    /// Its light, once asked for (derived, never stored).
    light: Option<ChunkLight>,
    /// Which of its columns full sunlight came down into when last looked
    /// at (x + 32·z), so a change above is followed down only as far as it
    /// changes what comes down.
    sun_in: Option<Vec<bool>>,
    /// The [`World::drop_unread_decoded`] round in which its voxels were
    /// last read or written.
    read_round: u64,
    /// The type ids it holds (sorted; a superset after edits), once a
    /// `find_voxels` scanned it whole: kept when its decoded voxels are
    /// dropped, so a later scan for types it lacks skips it undecoded.
    types: Option<Vec<u32>>,
}

impl Chunk {
    fn empty(node_id: u64) -> Self {
        Self {
            node_id,
            voxels: Some(vec![AIR; CHUNK_VOLUME]),
            blob: None,
            light: None,
            sun_in: None,
            read_round: 0,
            types: None,
        }
    }

    fn from_blob(node_id: u64, blob: Vec<u8>) -> Result<Self, WorldError> {
        let count = buildat_format::voxel_blob::peek_voxel_count(&blob).map_err(|e| {
            WorldError::BadNode {
                id: node_id,
                why: e.to_string(),
            }
        })?;
        if count != CHUNK_VOLUME as u64 {
            return Err(WorldError::BadNode {
                id: node_id,
                why: format!("{count} voxels, expected {CHUNK_VOLUME}"),
            });
        }
        Ok(Self {
            node_id,
            voxels: None,
            blob: Some(blob),
            light: None,
            sun_in: None,
            read_round: 0,
            types: None,
        })
    }
}

/// A chunk blob's voxels mapped through `registry`; unknown names become
/// [`UNKNOWN`] and are added to `unknown`.
fn decode_blob(
    registry: &VoxelRegistry,
    unknown: &mut BTreeSet<String>,
    id: u64,
    blob: &[u8],
) -> Result<Vec<u32>, WorldError> {
    let decoded = decode_voxels(blob, |name| registry.get_id(name), UNKNOWN).map_err(|e| {
        WorldError::BadNode {
            id,
            why: e.to_string(),
        }
    })?;
    if decoded.voxels.len() != CHUNK_VOLUME {
        return Err(WorldError::BadNode {
            id,
            why: format!("{} voxels, expected {CHUNK_VOLUME}", decoded.voxels.len()),
        });
    }
    unknown.extend(decoded.unknown_names);
    Ok(decoded.voxels)
}

struct Section {
    chunks: BTreeMap<Pos, Chunk>,
    dynamic: BTreeMap<u64, DynamicNode>,
    save_enabled: bool,
    generated: bool,
    dirty: bool,
    last_used: u64,
    /// Storage may hold a version of it: a change is written even once it
    /// no longer must be saved (a persistent node that left it must not
    /// stay in its stored copy).
    stored: bool,
}

impl Section {
    fn must_save(&self) -> bool {
        self.save_enabled || self.dynamic.values().any(|n| n.save_enabled)
    }

    /// Whether a dirty section is written.
    fn needs_write(&self) -> bool {
        self.dirty && (self.must_save() || self.stored)
    }

    /// Holds a node that exists only in memory: never evicted.
    fn holds_transient_nodes(&self) -> bool {
        self.dynamic.values().any(|n| !n.save_enabled)
    }
}

/// A chunk's light bytes (`buildat_voxel::light`), shared with the stream.
pub type ChunkLight = Arc<Vec<u8>>;

/// A chunk changed since the last commit.
#[derive(Debug, Clone, PartialEq)]
pub struct Committed {
    pub node_id: u64,
    pub chunk: Pos,
    /// The single voxels set, in order (index in the chunk, voxel); None if
    /// too many to list.
    pub voxels: Option<Vec<(u16, u32)>>,
}

/// What loading a section found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loaded {
    /// Its voxels are there (from memory, storage or generation).
    Ready,
    /// It was just created empty; ask a generator for its voxels.
    NeedsGeneration,
    /// It was created before and is still waiting for a generator.
    Generating,
}

pub struct World {
    storage: Box<dyn WorldStorage>,
    section_size: SectionSize,
    pub voxels: VoxelRegistry,
    pub blocks: BlockRegistry,
    sections: HashMap<Pos, Section>,
    budget: usize,
    clock: u64,
    ids: Range<u64>,
    /// Chunks changed since the last commit.
    changed: BTreeSet<Pos>,
    /// The single voxels set since the last commit, per chunk, in order
    /// (index in the chunk, voxel); None once there were too many.
    voxel_changes: HashMap<Pos, Option<Vec<(u16, u32)>>>,
    /// Stored voxel names not in the registry (reported once each).
    pub unknown_names: BTreeSet<String>,
    /// Chunks whose voxels changed (set, generated, loaded) since the last
    /// [`World::relight`].
    light_dirty: BTreeSet<Pos>,
    /// Chunks whose kept light a change can reach and that are not yet
    /// relit (a relight out of time leaves them for the next).
    light_stale: BTreeSet<Pos>,
    /// Single voxels set since the last [`World::relight`]: their light
    /// is updated in place when it can be, else their chunks are relit.
    light_edits: Vec<Pos>,
    /// Relights done in place, and chunks lit whole, since the start.
    pub light_counts: LightCounts,
    /// Rounds of [`World::drop_unread_decoded`] so far.
    decoded_round: u64,
    /// Each voxel type's light, rebuilt when the registry grows.
    light_table: LightTable,
    /// The registry's length when `light_table` was built.
    light_table_len: usize,
    /// Blob-only chunks decoded for lighting.
    light_decoded: lighting::DecodedForLight,
    /// The section each loaded dynamic node is in.
    node_sections: HashMap<u64, Pos>,
    /// The loaded nodes attached to each node.
    node_children: HashMap<u64, BTreeSet<u64>>,
    /// Dynamic nodes created or changed (variables, parent) since the last
    /// [`World::take_node_changes`], those only moved, and those removed.
    nodes_changed: BTreeSet<u64>,
    nodes_moved: BTreeSet<u64>,
    nodes_removed: BTreeSet<u64>,
    /// The voxel types with a handler module, rebuilt when the registry
    /// grows.
    handlers: Handlers,
    /// The voxels set since the last commit, for their handlers and
    /// `voxelworld:voxels_changed`.
    special: Pending,
    /// Sections that came into memory (`true`) or left it since the last
    /// [`World::take_section_events`] (`world/find.rs`).
    section_events: BTreeMap<Pos, bool>,
    /// Every voxel change for the rollback log, until it is written
    /// (`rollback.rs`; records nothing while the log is off).
    pub log: crate::rollback::Recorder,
}

impl World {
    /// The storage under the world (migration reads it whole; what is in
    /// memory and not saved is not in it).
    pub fn storage_mut(&mut self) -> &mut dyn WorldStorage {
        self.storage.as_mut()
    }

    pub fn new(storage: Box<dyn WorldStorage>, budget: usize) -> Self {
        Self {
            section_size: storage.section_size(),
            storage,
            voxels: VoxelRegistry::default(),
            blocks: BlockRegistry::default(),
            sections: HashMap::new(),
            budget: budget.max(1),
            clock: 0,
            ids: 0..0,
            changed: BTreeSet::new(),
            voxel_changes: HashMap::new(),
            unknown_names: BTreeSet::new(),
            light_dirty: BTreeSet::new(),
            light_stale: BTreeSet::new(),
            light_edits: Vec::new(),
            light_counts: LightCounts::default(),
            decoded_round: 0,
            light_table: LightTable::default(),
            light_table_len: 0,
            light_decoded: Default::default(),
            node_sections: HashMap::new(),
            node_children: HashMap::new(),
            nodes_changed: BTreeSet::new(),
            nodes_moved: BTreeSet::new(),
            nodes_removed: BTreeSet::new(),
            handlers: Handlers::default(),
            special: Pending::default(),
            section_events: BTreeMap::new(),
            log: crate::rollback::Recorder::default(),
        }
    }

    pub fn section_size(&self) -> SectionSize {
        self.section_size
    }

    pub fn loaded_sections(&self) -> usize {
        self.sections.len()
    }

    pub fn register_block(&mut self, block: BlockDefinition) -> Result<Vec<u32>, WorldError> {
        Ok(self.blocks.add(block, &mut self.voxels)?)
    }

    fn next_id(&mut self) -> Result<u64, WorldError> {
        if self.ids.is_empty() {
            self.ids = self.storage.reserve_node_ids(ID_BLOCK)?;
        }
        let id = self.ids.start;
        self.ids.start += 1;
        Ok(id)
    }

    /// The decoded voxels of a chunk of a loaded, generated section
    /// (decoding its blob on first use).
    fn voxels_of(&mut self, chunk_pos: Pos) -> Result<Option<&mut Vec<u32>>, WorldError> {
        let section_pos = self.section_size.section_of_chunk(chunk_pos);
        let World {
            sections,
            voxels: registry,
            unknown_names,
            decoded_round,
            ..
        } = self;
        let Some(chunk) = sections
            .get_mut(&section_pos)
            .filter(|s| s.generated)
            .and_then(|s| s.chunks.get_mut(&chunk_pos))
        else {
            return Ok(None);
        };
        if chunk.voxels.is_none() {
            let blob = chunk.blob.as_deref().unwrap_or_default();
            chunk.voxels = Some(decode_blob(registry, unknown_names, chunk.node_id, blob)?);
        }
        chunk.read_round = *decoded_round;
        Ok(chunk.voxels.as_mut())
    }

    /// Drops the decoded voxels of chunks not read since the round before
    /// last and still held as their blob (an edited chunk has no blob and
    /// keeps them): called every few seconds, it keeps decoded only what
    /// is in use, so chunks read once (a creature spawned, a far section
    /// looked at) go back to their compressed size, and so do those
    /// decoded for lighting alone. Answers how many.
    pub fn drop_unread_decoded(&mut self) -> usize {
        self.decoded_round += 1;
        let stale = self.decoded_round.saturating_sub(2);
        let mut dropped = self.light_decoded.drop_used_before(stale);
        for section in self.sections.values_mut() {
            for chunk in section.chunks.values_mut() {
                if chunk.voxels.is_some() && chunk.blob.is_some() && chunk.read_round < stale {
                    chunk.voxels = None;
                    dropped += 1;
                }
            }
        }
        dropped
    }

    /// The generated section holding `voxel` (loaded from storage if
    /// needed) and the voxel's chunk position.
    fn generated_section(&mut self, voxel: Pos) -> Result<(&mut Section, Pos), WorldError> {
        let chunk_pos = geometry::chunk_of_voxel(voxel);
        let section_pos = self.section_size.section_of_chunk(chunk_pos);
        self.load_section(section_pos)?;
        match self.sections.get_mut(&section_pos) {
            Some(section) if section.generated => Ok((section, chunk_pos)),
            _ => Err(WorldError::NotGenerated(section_pos)),
        }
    }

    /// The voxel at `pos`, loading its section from storage if needed;
    /// `None` if the section is not generated yet.
    pub fn get_voxel(&mut self, pos: Pos) -> Result<Option<u32>, WorldError> {
        match self.generated_section(pos) {
            Ok(_) => Ok(self
                .voxels_of(geometry::chunk_of_voxel(pos))?
                .and_then(|voxels| voxels.get(geometry::index_in_chunk(pos)).copied())),
            Err(WorldError::NotGenerated(_)) => Ok(None),
            Err(error) => Err(error),
        }
    }

    pub fn set_voxel(&mut self, pos: Pos, voxel: u32) -> Result<(), WorldError> {
        self.set_voxel_by(pos, voxel, None)
    }

    /// [`World::set_voxel`] for the player `by` (handler modules are told).
    pub fn set_voxel_by(
        &mut self,
        pos: Pos,
        voxel: u32,
        by: Option<&str>,
    ) -> Result<(), WorldError> {
        let type_id = buildat_voxel::VoxelInstance(voxel).type_id();
        if self.voxels.get(type_id).is_none() {
            return Err(WorldError::UnknownVoxel(type_id));
        }
        let (_, chunk_pos) = self.generated_section(pos)?;
        let section_pos = self.section_size.section_of_chunk(chunk_pos);
        let voxels = self
            .voxels_of(chunk_pos)?
            .ok_or(WorldError::NotGenerated(section_pos))?;
        let index = geometry::index_in_chunk(pos);
        let previous = match voxels.get_mut(index) {
            Some(slot) if *slot != voxel => Some(std::mem::replace(slot, voxel)),
            _ => None,
        };
        let changed = previous.is_some();
        if changed
            && let Some(types) = self
                .sections
                .get_mut(&section_pos)
                .and_then(|s| s.chunks.get_mut(&chunk_pos))
                .and_then(|c| c.types.as_mut())
        {
            let type_id = buildat_voxel::VoxelInstance(voxel).type_id();
            if let Err(at) = types.binary_search(&type_id) {
                types.insert(at, type_id);
            }
        }
        self.handlers.refresh(&self.voxels);
        if let Some(previous) = previous {
            // A module's own edit is logged under its name; handlers
            // hear of no player.
            let player = buildat_voxelworld_api::get_player_of(by);
            self.special.record(pos, previous, voxel, player);
            self.log.record(pos, previous, voxel, by);
        }
        if changed {
            let entry = self
                .voxel_changes
                .entry(chunk_pos)
                .or_insert_with(|| Some(Vec::new()));
            if let Some(list) = entry {
                match u16::try_from(index) {
                    Ok(index) if list.len() < buildat_voxelworld_api::stream::MAX_VOXEL_UPDATES => {
                        list.push((index, voxel));
                    }
                    _ => *entry = None,
                }
            }
        }
        if changed {
            if let Some(section) = self.sections.get_mut(&section_pos) {
                section.dirty = true;
                if let Some(chunk) = section.chunks.get_mut(&chunk_pos) {
                    chunk.blob = None;
                }
            }
            self.changed.insert(chunk_pos);
            self.light_edits.push(pos);
        }
        Ok(())
    }

    /// Chunks changed since the last commit, with their node ids and the
    /// single voxels set in them.
    pub fn commit(&mut self) -> Vec<Committed> {
        let changed = std::mem::take(&mut self.changed);
        let mut voxel_changes = std::mem::take(&mut self.voxel_changes);
        changed
            .into_iter()
            .filter_map(|chunk| {
                let section = self
                    .sections
                    .get(&self.section_size.section_of_chunk(chunk))?;
                Some(Committed {
                    node_id: section.chunks.get(&chunk)?.node_id,
                    chunk,
                    voxels: voxel_changes.remove(&chunk).flatten(),
                })
            })
            .collect()
    }

    /// What each handler module is told of the voxels set since the last
    /// call (see [`special::notifications`]; neighbours not in memory are
    /// not told), and how many changes were past the bound and not told.
    pub fn take_special(&mut self) -> (BTreeMap<String, Vec<SpecialVoxel>>, usize) {
        let (told, _, dropped) = self.take_changes();
        (told, dropped)
    }

    /// [`World::take_special`], with the changes themselves (for
    /// `voxelworld:voxels_changed`).
    pub fn take_changes(
        &mut self,
    ) -> (
        BTreeMap<String, Vec<SpecialVoxel>>,
        Vec<special::Change>,
        usize,
    ) {
        let (changes, dropped) = self.special.take();
        if changes.is_empty() {
            return (BTreeMap::new(), changes, dropped);
        }
        let handlers = std::mem::take(&mut self.handlers);
        let told = special::notifications(&changes, &handlers, |pos| self.loaded_voxel(pos));
        self.handlers = handlers;
        (told, changes, dropped)
    }

    /// A voxel of a chunk in memory, without loading or generating
    /// anything (`None` otherwise, or if its chunk does not decode).
    fn loaded_voxel(&mut self, pos: Pos) -> Option<u32> {
        let voxels = self.voxels_of(geometry::chunk_of_voxel(pos)).ok()??;
        voxels.get(geometry::index_in_chunk(pos)).copied()
    }

    /// Fills a section with a generator's chunks; answers the updated chunks.
    pub fn apply_generated(
        &mut self,
        pos: Pos,
        chunks: Vec<(Pos, Vec<u8>)>,
    ) -> Result<Vec<(u64, Pos)>, WorldError> {
        self.load_section(pos)?;
        let mut decoded = Vec::with_capacity(chunks.len());
        for (chunk_pos, blob) in chunks {
            if self.section_size.section_of_chunk(chunk_pos) != pos {
                return Err(WorldError::WrongSection {
                    chunk: chunk_pos,
                    section: pos,
                });
            }
            let node_id = self
                .sections
                .get(&pos)
                .and_then(|s| s.chunks.get(&chunk_pos))
                .map_or(0, |c| c.node_id);
            decoded.push((chunk_pos, Chunk::from_blob(node_id, blob)?));
        }
        let Some(section) = self.sections.get_mut(&pos) else {
            return Err(WorldError::NotGenerated(pos));
        };
        if section.generated {
            // A late or repeated answer must not overwrite edits.
            return Ok(Vec::new());
        }
        let mut updated = Vec::new();
        for (chunk_pos, generated) in decoded {
            if let Some(chunk) = section.chunks.get_mut(&chunk_pos) {
                chunk.voxels = generated.voxels;
                chunk.blob = generated.blob;
                chunk.light = None;
                chunk.types = None;
                updated.push((chunk.node_id, chunk_pos));
                self.light_dirty.insert(chunk_pos);
                self.light_decoded.remove(chunk_pos);
            }
        }
        section.generated = true;
        section.dirty = true;
        self.note_section(pos, true);
        Ok(updated)
    }

    /// Returns `(generated, save_enabled)` of a loaded section.
    pub fn section_status(&self, pos: Pos) -> Option<(bool, bool)> {
        self.sections
            .get(&pos)
            .map(|s| (s.generated, s.must_save()))
    }

    pub fn set_section_save_enabled(&mut self, pos: Pos, enabled: bool) -> Result<(), WorldError> {
        self.load_section(pos)?;
        if let Some(section) = self.sections.get_mut(&pos)
            && section.save_enabled != enabled
        {
            section.save_enabled = enabled;
            section.dirty = true;
        }
        Ok(())
    }

    /// A chunk's voxel blob (voxels by name), if its section is generated.
    pub fn get_chunk(&mut self, chunk: Pos) -> Result<Option<ChunkData>, WorldError> {
        let section_pos = self.section_size.section_of_chunk(chunk);
        if self.load_section(section_pos)? != Loaded::Ready {
            return Ok(None);
        }
        let Some(found) = self
            .sections
            .get(&section_pos)
            .and_then(|s| s.chunks.get(&chunk))
        else {
            return Ok(None);
        };
        Ok(Some(ChunkData {
            node_id: found.node_id,
            blob: self.chunk_blob(found),
        }))
    }

    /// The raw voxels of a loaded, generated chunk (for tests and tools).
    pub fn get_chunk_voxels(&mut self, chunk: Pos) -> Result<Option<Vec<u32>>, WorldError> {
        let section_pos = self.section_size.section_of_chunk(chunk);
        if self.load_section(section_pos)? != Loaded::Ready {
            return Ok(None);
        }
        Ok(self.voxels_of(chunk)?.cloned())
    }

    /// The chunk, if its section is in memory and generated.
    fn generated_chunk(&self, chunk: Pos) -> Option<&Chunk> {
        self.sections
            .get(&self.section_size.section_of_chunk(chunk))
            .filter(|s| s.generated)
            .and_then(|s| s.chunks.get(&chunk))
    }

    fn generated_chunk_mut(&mut self, chunk: Pos) -> Option<&mut Chunk> {
        self.sections
            .get_mut(&self.section_size.section_of_chunk(chunk))
            .filter(|s| s.generated)
            .and_then(|s| s.chunks.get_mut(&chunk))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::*;
    use crate::storage::SqliteStorage;

    /// Switches of [`FaultyStorage`].
    #[derive(Clone, Default)]
    pub(crate) struct Faults {
        /// Writes fail (a full or read-only disk).
        pub writes: Arc<AtomicBool>,
        /// Reads fail (an unreadable disk).
        pub reads: Arc<AtomicBool>,
    }

    /// SQLite storage whose writes or reads fail while its switches are
    /// set: storage faults, injected.
    pub(crate) struct FaultyStorage {
        pub inner: SqliteStorage,
        pub faults: Faults,
    }

    impl WorldStorage for FaultyStorage {
        fn section_size(&self) -> SectionSize {
            self.inner.section_size()
        }
        fn load_section(&mut self, pos: Pos) -> Result<Option<StoredSection>, StorageError> {
            if self.faults.reads.load(Ordering::Relaxed) {
                return Err(StorageError::Damaged("injected: unreadable".into()));
            }
            self.inner.load_section(pos)
        }
        fn save_section(&mut self, section: &StoredSection) -> Result<(), StorageError> {
            if self.faults.writes.load(Ordering::Relaxed) {
                return Err(StorageError::Damaged("injected: disk full".into()));
            }
            self.inner.save_section(section)
        }
        fn reserve_node_ids(&mut self, count: u64) -> Result<Range<u64>, StorageError> {
            self.inner.reserve_node_ids(count)
        }
        fn has_generated_section(&mut self, pos: Pos) -> Result<bool, StorageError> {
            self.inner.has_generated_section(pos)
        }
        fn quarantine_section(&mut self, pos: Pos, reason: &str) -> Result<(), StorageError> {
            self.inner.quarantine_section(pos, reason)
        }
        fn location(&self) -> String {
            self.inner.location()
        }
        fn section_positions(&mut self) -> Result<Vec<Pos>, StorageError> {
            self.inner.section_positions()
        }
        fn counts(&mut self) -> Result<crate::storage::StorageCounts, StorageError> {
            self.inner.counts()
        }
        fn next_node_id(&mut self) -> Result<u64, StorageError> {
            self.inner.next_node_id()
        }
        fn raise_next_node_id(&mut self, next: u64) -> Result<(), StorageError> {
            self.inner.raise_next_node_id(next)
        }
        fn snapshot(&mut self) -> Result<Box<dyn crate::storage::StorageSnapshot>, StorageError> {
            if self.faults.reads.load(Ordering::Relaxed) {
                return Err(StorageError::Damaged("injected: unreadable".into()));
            }
            self.inner.snapshot()
        }
        fn set_empty_section_size(&mut self, size: SectionSize) -> Result<(), StorageError> {
            self.inner.set_empty_section_size(size)
        }
        fn get_value(&mut self, space: &str, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
            self.inner.get_value(space, key)
        }
        fn put_values(
            &mut self,
            writes: &[crate::storage::ValueWrite],
        ) -> Result<bool, StorageError> {
            if self.faults.writes.load(Ordering::Relaxed) {
                return Err(StorageError::Damaged("injected: disk full".into()));
            }
            self.inner.put_values(writes)
        }
        fn save_together(
            &mut self,
            sections: &[StoredSection],
            writes: &[crate::storage::ValueWrite],
        ) -> Result<bool, StorageError> {
            if self.faults.writes.load(Ordering::Relaxed) {
                return Err(StorageError::Damaged("injected: disk full".into()));
            }
            self.inner.save_together(sections, writes)
        }
        fn list_values(
            &mut self,
            query: &crate::storage::ListValues,
        ) -> Result<Vec<crate::storage::StoredValue>, StorageError> {
            self.inner.list_values(query)
        }
        fn all_values(&mut self) -> Result<Vec<crate::storage::StoredValue>, StorageError> {
            self.inner.all_values()
        }
    }

    /// A world over [`FaultyStorage`] with room for `budget` sections, and
    /// the switches that make its storage fail.
    pub(crate) fn faulty(dir: &std::path::Path, budget: usize) -> (World, Faults) {
        let faults = Faults::default();
        let inner = SqliteStorage::open(&dir.join("world.sqlite"), SectionSize::default()).unwrap();
        let storage = FaultyStorage {
            inner,
            faults: faults.clone(),
        };
        let mut world = World::new(Box::new(storage), budget);
        world
            .register_block(BlockDefinition::simple("stone", "stone.png"))
            .unwrap();
        (world, faults)
    }

    /// A world in `dir` with stone (the first block) and dirt registered.
    pub(crate) fn open(dir: &std::path::Path) -> World {
        let storage =
            SqliteStorage::open(&dir.join("world.sqlite"), SectionSize::default()).unwrap();
        world_on(Box::new(storage))
    }

    /// A world on `storage` with stone (the first block) and dirt registered.
    pub(crate) fn world_on(storage: Box<dyn WorldStorage>) -> World {
        let mut world = World::new(storage, 64);
        world
            .register_block(BlockDefinition::simple("stone", "stone.png"))
            .unwrap();
        world
            .register_block(BlockDefinition::simple("dirt", "dirt.png"))
            .unwrap();
        world
    }

    /// Generates a section the way a generator module would: blobs by name.
    pub(crate) fn generate(world: &mut World, pos: Pos, fill: &str) {
        generate_where(world, pos, fill, lower_half);
    }

    /// The voxels of a chunk's lower half (z < 16), by index.
    fn lower_half(index: usize) -> bool {
        index < CHUNK_VOLUME / 2
    }

    /// Generates a section whose chunks hold `fill` at each voxel index
    /// where `solid`, else air.
    pub(crate) fn generate_where(
        world: &mut World,
        pos: Pos,
        fill: &str,
        solid: impl Fn(usize) -> bool,
    ) {
        assert_eq!(world.load_section(pos).unwrap(), Loaded::NeedsGeneration);
        generate_loaded_where(world, pos, fill, solid);
    }

    /// Generates a section already loaded and waiting for generation: the
    /// lower half of each chunk (z < 16) `fill`, the rest air.
    pub(crate) fn generate_loaded(world: &mut World, pos: Pos, fill: &str) {
        generate_loaded_where(world, pos, fill, lower_half);
    }

    fn generate_loaded_where(
        world: &mut World,
        pos: Pos,
        fill: &str,
        solid: impl Fn(usize) -> bool,
    ) {
        let chunks = world
            .section_size()
            .chunks_of_section(pos)
            .into_iter()
            .map(|chunk| {
                let voxels: Vec<u32> = (0..CHUNK_VOLUME).map(|i| u32::from(solid(i))).collect();
                let blob =
                    encode_voxels(&voxels, |id| Some(if id == 0 { "air" } else { fill })).unwrap();
                (chunk, blob)
            })
            .collect();
        world.apply_generated(pos, chunks).unwrap();
    }

    #[test]
    fn a_commit_lists_the_single_voxels_set_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let mut world = open(dir.path());
        let stone = world.voxels.get_id("stone").unwrap();
        generate(&mut world, [0, 0, 0], "stone");
        world.set_voxel([1, 2, 3], AIR).unwrap();
        world.set_voxel([1, 2, 3], stone).unwrap();
        world.set_voxel([1, 2, 3], stone).unwrap(); // no change: not listed
        world.set_voxel([40, 2, 3], AIR).unwrap();
        let mut committed = world.commit();
        committed.sort_by_key(|c| c.chunk);
        let index = |p| geometry::index_in_chunk(p) as u16;
        assert_eq!(committed.len(), 2);
        assert_eq!(committed[0].chunk, [0, 0, 0]);
        assert_eq!(
            committed[0].voxels,
            Some(vec![(index([1, 2, 3]), AIR), (index([1, 2, 3]), stone)])
        );
        assert_eq!(committed[1].voxels, Some(vec![(index([40, 2, 3]), AIR)]));
        assert!(world.commit().is_empty(), "taken once");
        // Too many changes in one chunk: the whole chunk instead.
        for i in 0..=buildat_voxelworld_api::stream::MAX_VOXEL_UPDATES as i32 {
            world
                .set_voxel([i % 32, i / 32 % 32, 5 + i / 1024], AIR)
                .unwrap();
        }
        let committed = world.commit();
        assert_eq!(committed.len(), 1);
        assert_eq!(committed[0].voxels, None);
    }

    /// A module's own edit (`by_module`) is logged under the module's
    /// name; the voxel's handler is told of no player.
    #[test]
    fn a_modules_own_edit_is_logged_by_its_name_and_told_as_no_players() {
        let dir = tempfile::tempdir().unwrap();
        let mut world = open(dir.path());
        world.log.enabled = true;
        generate(&mut world, [0, 0, 0], "stone");
        let mut torch = BlockDefinition::simple("torch", "torch.png");
        torch.handler_module = "main".into();
        let torch = world.register_block(torch).unwrap()[0];
        world
            .set_voxel_by(
                [1, 1, 1],
                AIR,
                buildat_voxelworld_api::by_module("liquid").as_deref(),
            )
            .unwrap();
        world.set_voxel_by([1, 1, 1], torch, Some("ann")).unwrap();
        let (told, _) = world.take_special();
        assert_eq!(told["main"][0].by.as_deref(), Some("ann"));
        world
            .set_voxel_by(
                [1, 1, 1],
                AIR,
                buildat_voxelworld_api::by_module("main").as_deref(),
            )
            .unwrap();
        let logged: Vec<String> = world
            .log
            .take(usize::MAX)
            .into_iter()
            .map(|e| e.by)
            .collect();
        assert_eq!(logged, ["liquid (module)", "ann", "main (module)"]);
        let (told, _) = world.take_special();
        assert_eq!(told["main"].len(), 1, "{told:?}");
        assert_eq!(told["main"][0].by, None, "the torch's removal: no player");
    }

    #[test]
    fn edits_tell_handler_modules_and_generation_does_not() {
        use buildat_voxelworld_api::{SpecialCause, SpecialVoxel};
        let dir = tempfile::tempdir().unwrap();
        let mut world = open(dir.path());
        let stone = world.voxels.get_id("stone").unwrap();
        generate(&mut world, [0, 0, 0], "stone");
        world.set_voxel([1, 2, 3], AIR).unwrap();
        assert_eq!(
            world.take_special(),
            (BTreeMap::new(), 0),
            "no handler registered: nothing recorded"
        );
        let mut torch = BlockDefinition::simple("torch", "torch.png");
        torch.handler_module = "main".into();
        let torch = world.register_block(torch).unwrap()[0];
        // Generated after the handler exists: still nothing.
        generate(&mut world, [1, 0, 0], "stone");
        assert!(world.take_special().0.is_empty());
        let (ground, at) = ([4, 4, 4], [4, 5, 4]);
        world.set_voxel(at, AIR).unwrap();
        world.set_voxel_by(at, torch, Some("ann")).unwrap();
        let (told, dropped) = world.take_special();
        assert_eq!(dropped, 0);
        assert_eq!(
            told["main"],
            vec![SpecialVoxel {
                pos: at,
                voxel: torch,
                previous: stone,
                cause: SpecialCause::Placed,
                by: Some("ann".into()),
            }],
            "the handler is told who placed it"
        );
        assert!(world.take_special().0.is_empty(), "taken once");
        world.set_voxel(ground, AIR).unwrap();
        let (told, _) = world.take_special();
        assert_eq!(
            told["main"],
            vec![SpecialVoxel {
                pos: at,
                voxel: torch,
                previous: torch,
                cause: SpecialCause::NeighbourChanged {
                    neighbour: ground,
                    was: stone,
                    now: AIR
                },
                by: None,
            }]
        );
        // A neighbour across a chunk border, and one in a section that is
        // not in memory (not told, not loaded).
        world.set_voxel([31, 5, 4], torch).unwrap();
        world.set_voxel([32, 5, 4], AIR).unwrap();
        let (told, _) = world.take_special();
        let causes: Vec<_> = told["main"].iter().map(|s| (s.pos, s.cause)).collect();
        assert_eq!(causes.len(), 2, "{causes:?}");
        assert_eq!(causes[0], ([31, 5, 4], SpecialCause::Placed));
        assert!(matches!(
            causes[1],
            (
                [31, 5, 4],
                SpecialCause::NeighbourChanged {
                    neighbour: [32, 5, 4],
                    ..
                }
            )
        ));
        let sections = world.loaded_sections();
        world.set_voxel([0, 0, 0], torch).unwrap();
        world.take_special();
        assert_eq!(
            world.loaded_sections(),
            sections,
            "no section loaded to tell"
        );
    }

    /// A deadline no test reaches.
    pub(crate) fn far() -> Instant {
        Instant::now() + std::time::Duration::from_secs(3600)
    }

    #[test]
    fn chunks_read_once_go_back_to_their_blob_and_edited_ones_stay_decoded() {
        let dir = tempfile::tempdir().unwrap();
        let mut world = open(dir.path());
        let stone = world.voxels.get_id("stone").unwrap();
        generate(&mut world, [0, 0, 0], "stone");
        let decoded =
            |world: &World, chunk: Pos| world.generated_chunk(chunk).unwrap().voxels.is_some();
        assert_eq!(world.get_voxel([1, 1, 1]).unwrap(), Some(stone));
        world.set_voxel([40, 1, 1], AIR).unwrap();
        assert!(decoded(&world, [0, 0, 0]) && decoded(&world, [1, 0, 0]));
        world.drop_unread_decoded();
        assert!(decoded(&world, [0, 0, 0]), "read in the last round: kept");
        world.drop_unread_decoded();
        world.drop_unread_decoded();
        assert!(
            !decoded(&world, [0, 0, 0]),
            "unread for two rounds: dropped"
        );
        assert!(decoded(&world, [1, 0, 0]), "edited, no blob: kept");
        assert_eq!(
            world.get_voxel([1, 1, 1]).unwrap(),
            Some(stone),
            "read again"
        );
        assert_eq!(world.get_voxel([40, 1, 1]).unwrap(), Some(AIR));
    }

    /// Turned a quarter round about z.
    pub(crate) const QUARTER_TURN: [f32; 4] = [
        0.0,
        0.0,
        std::f32::consts::FRAC_1_SQRT_2,
        std::f32::consts::FRAC_1_SQRT_2,
    ];
}
