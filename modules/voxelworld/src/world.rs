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
//! Does not own: the database (`storage.rs`) or generation (a generator
//! module answers `voxelworld:generation_request`).

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
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

mod lighting;
mod nodes;
mod tops;

pub use lighting::{LIGHT_THREADS, LightCounts};

/// Node ids reserved from storage at a time.
const ID_BLOCK: u64 = 1024;
const REGISTRY_NAME: &str = "main";
const BLOB_VERSION: &str = "1";

#[derive(Debug, thiserror::Error)]
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
    /// Blob-only chunks decoded for lighting, the last
    /// [`LIGHT_DECODE_CACHE`] (oldest first in `light_decoded_order`).
    light_decoded: HashMap<Pos, Arc<[u32]>>,
    light_decoded_order: VecDeque<Pos>,
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
    /// The voxels set since the last commit, for their handlers (recorded
    /// only while some type has one).
    special: Pending,
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
            light_decoded: HashMap::new(),
            light_decoded_order: VecDeque::new(),
            node_sections: HashMap::new(),
            node_children: HashMap::new(),
            nodes_changed: BTreeSet::new(),
            nodes_moved: BTreeSet::new(),
            nodes_removed: BTreeSet::new(),
            handlers: Handlers::default(),
            special: Pending::default(),
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

    fn decode_section(&mut self, stored: StoredSection) -> Result<Section, WorldError> {
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
    /// looked at) go back to their compressed size. Answers how many.
    pub fn drop_unread_decoded(&mut self) -> usize {
        self.decoded_round += 1;
        let stale = self.decoded_round.saturating_sub(2);
        let mut dropped = 0;
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

    fn encode_chunk(&self, voxels: &[u32]) -> Vec<u8> {
        let registry = &self.voxels;
        encode_voxels(voxels, |id| {
            registry.get_name(id).or_else(|| registry.get_name(UNKNOWN))
        })
        .unwrap_or_default()
    }

    /// The chunk's blob: the one it came with while unchanged, else encoded now.
    fn chunk_blob(&self, chunk: &Chunk) -> Vec<u8> {
        match (&chunk.blob, &chunk.voxels) {
            (Some(blob), _) => blob.clone(),
            (None, Some(voxels)) => self.encode_chunk(voxels),
            (None, None) => self.encode_chunk(&[AIR; CHUNK_VOLUME]),
        }
    }

    /// The section as a storage record; `for_storage` leaves out the nodes
    /// that are never written (a reload's stash keeps them).
    fn encode_section(
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
    fn evict_to_fit(&mut self) -> Result<(), WorldError> {
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
    fn save_section(&mut self, pos: Pos) -> Result<bool, WorldError> {
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
        self.handlers.refresh(&self.voxels);
        if let Some(previous) = previous
            && !self.handlers.is_empty()
        {
            self.special.record(pos, previous, voxel, by);
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
        let (changes, dropped) = self.special.take();
        if changes.is_empty() {
            return (BTreeMap::new(), dropped);
        }
        let handlers = std::mem::take(&mut self.handlers);
        let told = special::notifications(&changes, &handlers, |pos| self.loaded_voxel(pos));
        self.handlers = handlers;
        (told, dropped)
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
                updated.push((chunk.node_id, chunk_pos));
                self.light_dirty.insert(chunk_pos);
                self.light_decoded.remove(&chunk_pos);
            }
        }
        section.generated = true;
        section.dirty = true;
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
            self.light_decoded.remove(chunk);
        }
        if let Some(old) = self.sections.insert(pos, section) {
            self.unindex_nodes(&old);
        }
        self.index_nodes(pos);
        Ok(())
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

    /// Whether storage holds a generated section at `pos`.
    pub fn is_stored(&mut self, pos: Pos) -> Result<bool, WorldError> {
        Ok(self.storage.has_generated_section(pos)?)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::*;
    use crate::storage::SqliteStorage;
    use buildat_voxelworld_api::NodesChanged;

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
        assert_eq!(world.load_section(pos).unwrap(), Loaded::NeedsGeneration);
        generate_loaded(world, pos, fill);
    }

    /// Generates a section already loaded and waiting for generation.
    fn generate_loaded(world: &mut World, pos: Pos, fill: &str) {
        let chunks = world
            .section_size()
            .chunks_of_section(pos)
            .into_iter()
            .map(|chunk| {
                let mut voxels = vec![0u32; CHUNK_VOLUME];
                voxels[..CHUNK_VOLUME / 2].fill(1);
                let blob =
                    encode_voxels(&voxels, |id| Some(if id == 0 { "air" } else { fill })).unwrap();
                (chunk, blob)
            })
            .collect();
        world.apply_generated(pos, chunks).unwrap();
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
    const QUARTER_TURN: [f32; 4] = [
        0.0,
        0.0,
        std::f32::consts::FRAC_1_SQRT_2,
        std::f32::consts::FRAC_1_SQRT_2,
    ];

    /// A move of node `id` to `position`, turned a quarter round and going
    /// along x.
    fn motion(id: u64, position: [f64; 3]) -> buildat_voxelworld_api::NodeMotion {
        buildat_voxelworld_api::NodeMotion {
            id,
            position,
            orientation: QUARTER_TURN,
            velocity: [1.0, 0.0, 0.0],
        }
    }

    /// The loaded sections holding node `id`.
    fn sections_holding(world: &World, id: u64) -> Vec<Pos> {
        let mut found: Vec<Pos> = world
            .sections
            .iter()
            .filter(|(_, s)| s.dynamic.contains_key(&id))
            .map(|(pos, _)| *pos)
            .collect();
        found.sort_unstable();
        found
    }

    #[test]
    fn a_node_moves_into_the_next_section_and_is_saved_there_only() {
        let dir = tempfile::tempdir().unwrap();
        let next_x = f64::from(SectionSize::default().0[0] * geometry::CHUNK_SIZE);
        let id = {
            let mut world = open(dir.path());
            generate(&mut world, [0, 0, 0], "stone");
            generate(&mut world, [1, 0, 0], "stone");
            let vars = BTreeMap::from([("kind".to_string(), b"cow".to_vec())]);
            let id = world.create_node([1.5, 40.5, 1.5], true, vars).unwrap();
            world.save_all().unwrap();
            let missing = world
                .move_nodes(vec![motion(id, [next_x + 1.5, 40.5, 1.5])])
                .unwrap();
            assert!(missing.is_empty());
            assert_eq!(sections_holding(&world, id), [[1, 0, 0]]);
            let changes = world.take_node_changes();
            assert_eq!(changes.changed.len(), 1, "created and moved: told once");
            assert!(changes.moved.is_empty(), "told whole");
            assert!(changes.removed.is_empty());
            assert_eq!(
                world.take_node_changes(),
                NodesChanged::default(),
                "told once"
            );
            world
                .move_nodes(vec![motion(id, [next_x + 1.5, 40.5, 1.5])])
                .unwrap();
            let changes = world.take_node_changes();
            assert!(changes.changed.is_empty());
            assert_eq!(
                changes.moved,
                [motion(id, [next_x + 1.5, 40.5, 1.5])],
                "a move is told as one"
            );
            world.save_all().unwrap();
            id
        };
        // Its first section was rewritten without it: one copy, where it is.
        let mut world = open(dir.path());
        world.load_section([0, 0, 0]).unwrap();
        world.load_section([1, 0, 0]).unwrap();
        assert_eq!(sections_holding(&world, id), [[1, 0, 0]]);
        let node = world.get_node(id).expect("back after a restart");
        let appeared = world.take_node_changes().changed;
        assert_eq!(
            appeared,
            std::slice::from_ref(&node),
            "a node loaded from storage is told"
        );
        assert_eq!(world.list_nodes(Some("kind")), std::slice::from_ref(&node));
        assert!(world.list_nodes(Some("colour")).is_empty());
        assert_eq!(node.position, [next_x + 1.5, 40.5, 1.5]);
        assert_eq!(node.orientation, QUARTER_TURN);
        assert_eq!(node.velocity, [1.0, 0.0, 0.0]);
        assert_eq!(node.vars.get("kind").map(Vec::as_slice), Some(&b"cow"[..]));
        assert_eq!(
            world.move_nodes(vec![motion(id + 1000, [0.0; 3])]).unwrap(),
            [id + 1000],
            "an unknown node is answered, not an error"
        );
    }

    #[test]
    fn a_transient_node_is_never_written_nor_evicted() {
        let dir = tempfile::tempdir().unwrap();
        let id = {
            let (mut world, _) = faulty(dir.path(), 2);
            generate(&mut world, [0, 0, 0], "stone");
            world.set_section_save_enabled([0, 0, 0], true).unwrap();
            let id = world
                .create_node([1.5, 40.5, 1.5], false, BTreeMap::new())
                .unwrap();
            for x in 1..5 {
                generate(&mut world, [x, 0, 0], "stone");
            }
            assert!(
                world.get_node(id).is_some(),
                "its section stays loaded over the budget of 2"
            );
            world.save_all().unwrap();
            id
        };
        let mut world = open(dir.path());
        world.load_section([0, 0, 0]).unwrap();
        assert!(world.get_node(id).is_none(), "never written");
        assert!(sections_holding(&world, id).is_empty());
    }

    #[test]
    fn a_persistent_node_leaving_memory_with_its_section_is_told_as_removed() {
        let dir = tempfile::tempdir().unwrap();
        let (mut world, _) = faulty(dir.path(), 2);
        generate(&mut world, [0, 0, 0], "stone");
        let id = world
            .create_node([1.5, 40.5, 1.5], true, BTreeMap::new())
            .unwrap();
        world.take_node_changes();
        for x in 1..5 {
            generate(&mut world, [x, 0, 0], "stone");
        }
        assert!(world.get_node(id).is_none(), "evicted with its section");
        assert_eq!(
            world.take_node_changes(),
            NodesChanged {
                removed: vec![id],
                ..NodesChanged::default()
            }
        );
        world.load_section([0, 0, 0]).unwrap();
        let NodesChanged {
            changed: appeared,
            removed,
            ..
        } = world.take_node_changes();
        assert_eq!(appeared.iter().map(|n| n.id).collect::<Vec<_>>(), [id]);
        assert!(removed.is_empty(), "back again: not removed any more");
    }

    #[test]
    fn attached_nodes_move_with_their_parent_and_no_node_carries_itself() {
        let dir = tempfile::tempdir().unwrap();
        let mut world = open(dir.path());
        generate(&mut world, [0, 0, 0], "stone");
        let cart = world
            .create_node([1.0, 40.0, 1.0], true, BTreeMap::new())
            .unwrap();
        let rider = world
            .create_node([1.0, 41.0, 1.0], true, BTreeMap::new())
            .unwrap();
        let hat = world
            .create_node([1.0, 42.0, 1.0], false, BTreeMap::new())
            .unwrap();
        world.set_node_parent(rider, Some(cart)).unwrap();
        world.set_node_parent(hat, Some(rider)).unwrap();
        world
            .move_nodes(vec![motion(cart, [3.0, 40.0, 1.5])])
            .unwrap();
        let at = |world: &World, id| world.get_node(id).unwrap().position;
        assert_eq!(at(&world, rider), [3.0, 41.0, 1.5]);
        assert_eq!(
            at(&world, hat),
            [3.0, 42.0, 1.5],
            "and what is attached to it"
        );
        for (id, parent) in [(cart, hat), (cart, rider), (rider, rider)] {
            assert!(
                matches!(
                    world.set_node_parent(id, Some(parent)),
                    Err(WorldError::NodeCycle { .. })
                ),
                "{id} on {parent}"
            );
        }
        // The rider gets off: the cart moves on without it.
        world.set_node_parent(rider, None).unwrap();
        world
            .move_nodes(vec![motion(cart, [5.0, 40.0, 1.5])])
            .unwrap();
        assert_eq!(at(&world, rider), [3.0, 41.0, 1.5]);
        world.take_node_changes();
        // Removing a node detaches what was on it.
        world.remove_node(rider).unwrap();
        assert_eq!(world.get_node(hat).unwrap().parent, None);
        let NodesChanged {
            changed, removed, ..
        } = world.take_node_changes();
        assert_eq!(removed, [rider]);
        assert_eq!(
            changed.iter().map(|n| n.id).collect::<Vec<_>>(),
            [hat],
            "the hat was detached"
        );
        // Attachments survive a restart (the cart's rider is gone).
        world.set_node_parent(hat, Some(cart)).unwrap();
        world.save_all().unwrap();
        drop(world);
        let mut world = open(dir.path());
        world.load_section([0, 0, 0]).unwrap();
        assert!(world.get_node(hat).is_none(), "transient");
        world
            .move_nodes(vec![motion(cart, [6.0, 40.0, 1.5])])
            .unwrap();
        assert_eq!(at(&world, cart), [6.0, 40.0, 1.5]);
    }

    #[test]
    fn a_node_stored_before_nodes_moved_still_loads() {
        let dir = tempfile::tempdir().unwrap();
        let mut world = open(dir.path());
        let old = StoredNode {
            kind: StoredNodeKind::Dynamic {
                position: [1.0, 2.0, 3.0],
            },
            save_enabled: true,
            vars: BTreeMap::new(),
        };
        world
            .write_stored(&StoredSection {
                pos: [0, 0, 0],
                save_enabled: false,
                generated: false,
                nodes: vec![(77, buildat_interface::encode(&old).unwrap())],
            })
            .unwrap();
        world.load_section([0, 0, 0]).unwrap();
        let node = world.get_node(77).expect("loaded");
        assert_eq!(node.position, [1.0, 2.0, 3.0]);
        assert_eq!(node.orientation, buildat_voxelworld_api::IDENTITY);
        assert_eq!(node.parent, None);
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
