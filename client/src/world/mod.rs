//! The client's view of the world: what the server streamed to this session
//! (`voxelworld:registry`, `voxelworld:chunk`, `voxelworld:unload_chunk`,
//! docs/protocol.md §9), kept natively so Lua, the closing summary and the
//! maps can read it.
//!
//! Owns: decoding the stream packets (bincode payloads from
//! `buildat_voxel::stream`, chunk blobs through `buildat_format`'s voxel
//! blob decoder, names mapped through the received registry), the held
//! chunks (kept as the blob that came until a voxel of them is read, since
//! most held chunks are never read; then compact: one value for a uniform
//! chunk, a byte per voxel plus a palette for up to 256 distinct values,
//! else the raw values), single-voxel updates (`voxelworld:voxels`), each
//! held chunk's light (`voxelworld:light`, kept as its blob until read,
//! replaced whole when it changes, dropped with the chunk), the ack
//! bookkeeping (how many processed chunks are still unacknowledged, and
//! whether acking is paused), the counters of the summary line, voxel
//! reads, and the focus (the player position the game's Lua sets). Does
//! not own: the maps (`map`: the top-down slice of the held chunks and its
//! ASCII and PNG drawings), sockets or when acks go out (`app` asks
//! [`WorldView::take_ack`] once per read-loop iteration), the Lua API
//! (`sandbox`), or which chunks the server sends.

mod map;

use std::collections::{BTreeSet, HashMap};

use buildat_format::light_blob::peek_light_count;
use buildat_format::voxel_blob::peek_voxel_count;
use buildat_format::{LightBlobError, Packet, PayloadError, decode_light};
use buildat_format::{VoxelBlobError, decode_voxels};
use buildat_voxel::geometry::{self, CHUNK_VOLUME, Pos};
use buildat_voxel::{AIR, MAX_TYPE_ID, UNKNOWN, UNKNOWN_NAME, VoxelRegistry};
use buildat_voxelworld_protocol::stream::{Ack, Chunk, Light, Registry, UnloadChunk, VoxelUpdates};
use thiserror::Error;

pub use map::{
    ASCII_LEGEND, BlockKind, Column, DEFAULT_MAP_RADIUS, MAX_MAP_RADIUS, MapError,
    PNG_PIXELS_PER_COLUMN, TopView, write_rgb_png,
};

/// Decodes a stream packet, naming it in the error.
fn decode_stream<P: Packet>(data: &[u8]) -> Result<P, WorldError> {
    P::decode(data).map_err(|source| WorldError::Payload {
        packet: P::NAME,
        source,
    })
}

/// A stream packet the world view could not use. The packet still counts as
/// received (and is acknowledged, so the server's budget does not leak).
#[derive(Debug, Error)]
pub enum WorldError {
    #[error("{packet}: {source}")]
    Payload {
        packet: &'static str,
        source: PayloadError,
    },
    #[error("chunk ({},{},{}): {source}", chunk[0], chunk[1], chunk[2])]
    Blob { chunk: Pos, source: VoxelBlobError },
    #[error(
        "chunk ({},{},{}): {count} voxels, a chunk has {CHUNK_VOLUME}",
        chunk[0],
        chunk[1],
        chunk[2]
    )]
    WrongSize { chunk: Pos, count: usize },
    #[error(
        "chunk ({},{},{}): voxel index {index} is past its {CHUNK_VOLUME} voxels",
        chunk[0],
        chunk[1],
        chunk[2]
    )]
    BadIndex { chunk: Pos, index: usize },
    #[error("light of chunk ({},{},{}): {source}", chunk[0], chunk[1], chunk[2])]
    Light { chunk: Pos, source: LightBlobError },
}

/// What a packet was, for the caller's logging.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Handled {
    /// Not a world stream packet (`voxelworld:ack` from a server included).
    NotWorld,
    /// A registry with this many voxel types.
    Registry { types: usize },
    /// A chunk; `update` when it replaced a held one.
    Chunk { chunk: Pos, update: bool },
    /// An unload; `held` when the chunk was held.
    Unload { chunk: Pos, held: bool },
    /// Single voxels of a chunk; `held` when the chunk was held (else they
    /// were dropped).
    Voxels {
        chunk: Pos,
        count: usize,
        held: bool,
    },
    /// A chunk's light; `held` when the chunk was held (else it was
    /// dropped).
    Light { chunk: Pos, held: bool },
}

/// The counters of the closing summary line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorldStats {
    /// Chunks held now.
    pub held: usize,
    /// `voxelworld:chunk` packets received (malformed ones included).
    pub chunk_packets: u64,
    /// Chunk packets for a chunk already held (the server resending a
    /// changed chunk).
    pub updates: u64,
    /// `voxelworld:unload_chunk` packets received.
    pub unloads: u64,
    /// `voxelworld:voxels` packets received (single voxels of held chunks).
    pub voxel_updates: u64,
    /// `voxelworld:light` packets received (a chunk's light, new or
    /// changed).
    pub lights: u64,
    /// Stream packets that could not be used.
    pub malformed: u64,
    /// `voxelworld:registry` packets received.
    pub registries: u64,
    /// Chunks acknowledged so far.
    pub acked: u64,
    /// The first chunk received.
    pub first_chunk: Option<Pos>,
}

impl WorldStats {
    /// `world: held N chunks, received M chunk packets (U updates), first
    /// chunk (x,y,z)`, then `; K unloaded` and `; E malformed` when not 0.
    pub fn summary_line(&self) -> String {
        let first = self
            .first_chunk
            .map_or_else(|| "none".to_string(), |[x, y, z]| format!("({x},{y},{z})"));
        let mut line = format!(
            "world: held {} chunks, received {} chunk packets ({} updates), first chunk {first}",
            self.held, self.chunk_packets, self.updates
        );
        if self.voxel_updates > 0 {
            line.push_str(&format!("; {} voxel updates", self.voxel_updates));
        }
        if self.unloads > 0 {
            line.push_str(&format!("; {} unloaded", self.unloads));
        }
        if self.malformed > 0 {
            line.push_str(&format!("; {} malformed", self.malformed));
        }
        line
    }
}

/// A held chunk: the blob it came as (its header checked), decoded the
/// first time one of its voxels is read or changed.
#[derive(Debug, Clone)]
enum Held {
    Blob(Box<[u8]>),
    Voxels(Voxels),
}

/// A chunk's voxels, stored compactly.
#[derive(Debug, Clone)]
enum Voxels {
    /// Every voxel the same.
    Uniform(u32),
    /// Up to 256 distinct values: a palette and one byte per voxel.
    Small {
        palette: Vec<u32>,
        indices: Box<[u8]>,
    },
    /// The raw values.
    Full(Box<[u32]>),
}

impl Voxels {
    fn from_values(values: Vec<u32>) -> Self {
        let Some(&first) = values.first() else {
            return Self::Uniform(AIR);
        };
        if values.iter().all(|&v| v == first) {
            return Self::Uniform(first);
        }
        let mut palette: Vec<u32> = Vec::new();
        let mut indices = Vec::with_capacity(values.len());
        let mut last: Option<(u32, u8)> = None;
        for &v in &values {
            let index = match last {
                Some((value, index)) if value == v => index,
                _ => {
                    let found = palette.iter().position(|&p| p == v);
                    let index = match found {
                        Some(i) => i,
                        None if palette.len() < 256 => {
                            palette.push(v);
                            palette.len() - 1
                        }
                        None => break,
                    };
                    let index = u8::try_from(index).unwrap_or(u8::MAX);
                    last = Some((v, index));
                    index
                }
            };
            indices.push(index);
        }
        if indices.len() < values.len() {
            // Over 256 distinct values.
            return Self::Full(values.into_boxed_slice());
        }
        Self::Small {
            palette,
            indices: indices.into_boxed_slice(),
        }
    }

    fn get(&self, index: usize) -> u32 {
        match self {
            Self::Uniform(v) => *v,
            Self::Small { palette, indices } => indices
                .get(index)
                .and_then(|&i| palette.get(usize::from(i)))
                .copied()
                .unwrap_or(AIR),
            Self::Full(values) => values.get(index).copied().unwrap_or(AIR),
        }
    }

    /// Every voxel, in index order.
    fn values(&self) -> Vec<u32> {
        (0..CHUNK_VOLUME).map(|i| self.get(i)).collect()
    }

    /// Sets one voxel (an index past the chunk is ignored), staying compact.
    fn set(&mut self, index: usize, value: u32) {
        if index >= CHUNK_VOLUME || self.get(index) == value {
            return;
        }
        if let Self::Small { palette, indices } = self {
            let slot = match palette.iter().position(|&p| p == value) {
                Some(slot) => Some(slot),
                None if palette.len() < 256 => {
                    palette.push(value);
                    Some(palette.len() - 1)
                }
                None => None,
            };
            if let (Some(slot), Some(at)) = (slot, indices.get_mut(index)) {
                *at = u8::try_from(slot).unwrap_or(u8::MAX);
                return;
            }
        }
        if let Self::Full(values) = self {
            if let Some(at) = values.get_mut(index) {
                *at = value;
            }
            return;
        }
        let mut values = self.values();
        if let Some(at) = values.get_mut(index) {
            *at = value;
        }
        *self = Self::from_values(values);
    }

    fn is_air(&self) -> bool {
        matches!(self, Self::Uniform(v) if v & MAX_TYPE_ID == AIR)
    }

    /// Rewrites every type id through `map` (game bits kept).
    fn remap(&mut self, map: &dyn Fn(u32) -> u32) {
        let apply = |v: &mut u32| *v = (*v & !MAX_TYPE_ID) | (map(*v & MAX_TYPE_ID) & MAX_TYPE_ID);
        match self {
            Self::Uniform(v) => apply(v),
            Self::Small { palette, .. } => palette.iter_mut().for_each(apply),
            Self::Full(values) => values.iter_mut().for_each(apply),
        }
    }
}

/// A held chunk's light: the blob it came as (its header checked), decoded
/// the first time it is read.
#[derive(Debug, Clone)]
enum HeldLight {
    Blob(Box<[u8]>),
    Bytes(std::sync::Arc<[u8]>),
}

/// One session's world.
#[derive(Debug)]
pub struct WorldView {
    registry: VoxelRegistry,
    chunks: HashMap<Pos, Held>,
    lights: HashMap<Pos, HeldLight>,
    /// Chunk column (x, z) → the chunk ys held in it.
    columns: HashMap<[i32; 2], BTreeSet<i32>>,
    stats: WorldStats,
    acking: bool,
    unacked: u32,
    focus: Option<[f64; 3]>,
    /// Voxel names seen in chunks that the registry lacks.
    unknown_names: BTreeSet<String>,
    warnings: Vec<String>,
}

impl Default for WorldView {
    fn default() -> Self {
        Self::new()
    }
}

impl WorldView {
    pub fn new() -> Self {
        Self {
            registry: VoxelRegistry::default(),
            chunks: HashMap::new(),
            lights: HashMap::new(),
            columns: HashMap::new(),
            stats: WorldStats::default(),
            acking: true,
            unacked: 0,
            focus: None,
            unknown_names: BTreeSet::new(),
            warnings: Vec::new(),
        }
    }

    /// Whether `name` is a stream packet this view handles.
    pub fn is_world_packet(name: &str) -> bool {
        matches!(
            name,
            Registry::NAME | Chunk::NAME | UnloadChunk::NAME | VoxelUpdates::NAME | Light::NAME
        )
    }

    /// Handles one packet. Not a stream packet: `Ok(Handled::NotWorld)`,
    /// nothing changed. A malformed one is counted (and a chunk packet
    /// still acknowledged) before the error is returned.
    pub fn handle_packet(&mut self, name: &str, data: &[u8]) -> Result<Handled, WorldError> {
        let result = match name {
            Registry::NAME => self.handle_registry(data),
            Chunk::NAME => {
                self.stats.chunk_packets += 1;
                self.unacked = self.unacked.saturating_add(1);
                self.handle_chunk(data)
            }
            UnloadChunk::NAME => {
                self.stats.unloads += 1;
                self.handle_unload(data)
            }
            VoxelUpdates::NAME => {
                self.stats.voxel_updates += 1;
                self.handle_voxels(data)
            }
            Light::NAME => {
                self.stats.lights += 1;
                self.handle_light(data)
            }
            _ => return Ok(Handled::NotWorld),
        };
        if result.is_err() {
            self.stats.malformed += 1;
        }
        result
    }

    fn handle_registry(&mut self, data: &[u8]) -> Result<Handled, WorldError> {
        let mut registry = decode_stream::<Registry>(data)?.voxels;
        registry.reindex();
        self.stats.registries += 1;
        if !self.chunks.is_empty() {
            // Held chunks keep their voxels: map their ids by name.
            let old = std::mem::take(&mut self.registry);
            let map = |id: u32| {
                old.get_name(id)
                    .and_then(|name| registry.get_id(&name))
                    .unwrap_or(UNKNOWN)
            };
            // Blobs are by name: they decode with the new registry.
            for held in self.chunks.values_mut() {
                if let Held::Voxels(voxels) = held {
                    voxels.remap(&map);
                }
            }
        }
        let types = registry.len();
        self.registry = registry;
        Ok(Handled::Registry { types })
    }

    fn handle_chunk(&mut self, data: &[u8]) -> Result<Handled, WorldError> {
        let packet = decode_stream::<Chunk>(data)?;
        let chunk = packet.chunk;
        // Only the header now; the voxels when first read.
        let count =
            peek_voxel_count(&packet.blob).map_err(|source| WorldError::Blob { chunk, source })?;
        if count != CHUNK_VOLUME as u64 {
            return Err(WorldError::WrongSize {
                chunk,
                count: usize::try_from(count).unwrap_or(usize::MAX),
            });
        }
        if self.stats.first_chunk.is_none() {
            self.stats.first_chunk = Some(chunk);
        }
        let update = self
            .chunks
            .insert(chunk, Held::Blob(packet.blob.into_boxed_slice()))
            .is_some();
        if update {
            self.stats.updates += 1;
        } else {
            self.columns
                .entry([chunk[0], chunk[2]])
                .or_default()
                .insert(chunk[1]);
        }
        Ok(Handled::Chunk { chunk, update })
    }

    /// A held chunk's voxels, decoding its blob on first use. A blob that
    /// does not decode (its header was fine) is counted as malformed,
    /// warned about, and reads as `unknown`.
    fn voxels_of(&mut self, chunk: Pos) -> Option<&mut Voxels> {
        let held = self.chunks.get_mut(&chunk)?;
        if let Held::Blob(blob) = held {
            let registry = &self.registry;
            let voxels = match decode_voxels(blob, |name| registry.get_id(name), UNKNOWN) {
                Ok(decoded) if decoded.voxels.len() == CHUNK_VOLUME => {
                    for name in decoded.unknown_names {
                        if self.unknown_names.insert(name.clone()) {
                            self.warnings.push(format!(
                                "chunk ({},{},{}) holds voxel {name:?}, which the registry lacks \
                                 (shown as {UNKNOWN_NAME})",
                                chunk[0], chunk[1], chunk[2]
                            ));
                        }
                    }
                    Voxels::from_values(decoded.voxels)
                }
                outcome => {
                    let why = match outcome {
                        Err(error) => error.to_string(),
                        Ok(decoded) => format!("{} voxels", decoded.voxels.len()),
                    };
                    self.stats.malformed += 1;
                    self.warnings.push(format!(
                        "chunk ({},{},{}) does not decode ({why}); shown as {UNKNOWN_NAME}",
                        chunk[0], chunk[1], chunk[2]
                    ));
                    Voxels::Uniform(UNKNOWN)
                }
            };
            *held = Held::Voxels(voxels);
        }
        match held {
            Held::Voxels(voxels) => Some(voxels),
            Held::Blob(_) => None,
        }
    }

    fn handle_voxels(&mut self, data: &[u8]) -> Result<Handled, WorldError> {
        let updates = decode_stream::<VoxelUpdates>(data)?;
        let chunk = updates.chunk;
        let count = updates.changes.len();
        if let Some(&(index, _)) = updates
            .changes
            .iter()
            .find(|(index, _)| usize::from(*index) >= CHUNK_VOLUME)
        {
            return Err(WorldError::BadIndex {
                chunk,
                index: usize::from(index),
            });
        }
        let Some(voxels) = self.voxels_of(chunk) else {
            return Ok(Handled::Voxels {
                chunk,
                count,
                held: false,
            });
        };
        for (index, value) in updates.changes {
            voxels.set(usize::from(index), value);
        }
        Ok(Handled::Voxels {
            chunk,
            count,
            held: true,
        })
    }

    fn handle_light(&mut self, data: &[u8]) -> Result<Handled, WorldError> {
        let packet = decode_stream::<Light>(data)?;
        let chunk = packet.chunk;
        // Only the header now; the bytes when first read.
        let count = peek_light_count(&packet.light)
            .map_err(|source| WorldError::Light { chunk, source })?;
        if count != CHUNK_VOLUME as u64 {
            return Err(WorldError::WrongSize {
                chunk,
                count: usize::try_from(count).unwrap_or(usize::MAX),
            });
        }
        let held = self.chunks.contains_key(&chunk);
        if held {
            self.lights
                .insert(chunk, HeldLight::Blob(packet.light.into_boxed_slice()));
        }
        Ok(Handled::Light { chunk, held })
    }

    /// A held chunk's light bytes (sunlight in the high nibble, block light
    /// in the low one; `buildat_voxel::light`), decoding its blob on first
    /// use; `None` when the chunk is not held or its light has not come. A
    /// blob that does not decode is counted as malformed, warned about, and
    /// reads as full sunlight.
    pub fn chunk_light(&mut self, chunk: Pos) -> Option<std::sync::Arc<[u8]>> {
        let held = self.lights.get_mut(&chunk)?;
        if let HeldLight::Blob(blob) = held {
            let bytes = match decode_light(blob, CHUNK_VOLUME) {
                Ok(bytes) if bytes.len() == CHUNK_VOLUME => bytes,
                outcome => {
                    let why = match outcome {
                        Err(error) => error.to_string(),
                        Ok(bytes) => format!("{} bytes", bytes.len()),
                    };
                    self.stats.malformed += 1;
                    self.warnings.push(format!(
                        "light of chunk ({},{},{}) does not decode ({why}); shown in full sun",
                        chunk[0], chunk[1], chunk[2]
                    ));
                    vec![buildat_voxel::light::FULL_SUN; CHUNK_VOLUME]
                }
            };
            *held = HeldLight::Bytes(bytes.into());
        }
        match held {
            HeldLight::Bytes(bytes) => Some(bytes.clone()),
            HeldLight::Blob(_) => None,
        }
    }

    /// The light byte at a world position, or `None` when its chunk's
    /// light is not held.
    pub fn light(&mut self, pos: Pos) -> Option<u8> {
        self.chunk_light(geometry::chunk_of_voxel(pos))?
            .get(geometry::index_in_chunk(pos))
            .copied()
    }

    fn handle_unload(&mut self, data: &[u8]) -> Result<Handled, WorldError> {
        let chunk = decode_stream::<UnloadChunk>(data)?.chunk;
        self.lights.remove(&chunk);
        let held = self.chunks.remove(&chunk).is_some();
        if held {
            let key = [chunk[0], chunk[2]];
            if let Some(ys) = self.columns.get_mut(&key) {
                ys.remove(&chunk[1]);
                if ys.is_empty() {
                    self.columns.remove(&key);
                }
            }
        }
        Ok(Handled::Unload { chunk, held })
    }

    /// Messages worth a warning since the last call (unknown voxel names).
    pub fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }

    /// The number of chunks to acknowledge now, if acking is on and any
    /// were processed since the last ack (they are then counted as acked).
    pub fn take_ack(&mut self) -> Option<u32> {
        if !self.acking || self.unacked == 0 {
            return None;
        }
        let n = std::mem::take(&mut self.unacked);
        self.stats.acked += u64::from(n);
        Some(n)
    }

    /// [`WorldView::take_ack`] as a `voxelworld:ack` packet.
    pub fn take_ack_packet(&mut self) -> Option<Ack> {
        self.take_ack().map(|chunks| Ack { chunks })
    }

    /// Pauses or resumes acking. On resume, everything processed meanwhile
    /// is acknowledged by the next [`WorldView::take_ack`].
    pub fn set_acking(&mut self, on: bool) {
        self.acking = on;
    }

    pub fn acking(&self) -> bool {
        self.acking
    }

    /// Chunks processed and not acknowledged yet.
    pub fn unacked(&self) -> u32 {
        self.unacked
    }

    /// The player position used for the maps. Non-finite values are
    /// refused.
    pub fn set_focus(&mut self, focus: [f64; 3]) -> bool {
        if focus.iter().all(|v| v.is_finite()) {
            self.focus = Some(focus);
            true
        } else {
            false
        }
    }

    pub fn focus(&self) -> Option<[f64; 3]> {
        self.focus
    }

    /// The counters, with the number of chunks held now.
    pub fn stats(&self) -> WorldStats {
        WorldStats {
            held: self.chunks.len(),
            ..self.stats.clone()
        }
    }

    pub fn chunk_count(&self) -> usize {
        self.chunks.len()
    }

    pub fn holds(&self, chunk: Pos) -> bool {
        self.chunks.contains_key(&chunk)
    }

    /// The held chunks, in no order.
    pub fn held_chunks(&self) -> Vec<Pos> {
        self.chunks.keys().copied().collect()
    }

    /// The registry's block names, in id order, each once, without `air`
    /// and `unknown`: what a player can place.
    pub fn block_names(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for definition in self.registry.definitions() {
            let name = &definition.name.block_name;
            if definition.id > UNKNOWN && !names.contains(name) {
                names.push(name.clone());
            }
        }
        names
    }

    pub fn registry(&self) -> &VoxelRegistry {
        &self.registry
    }

    /// The voxel at a world position (type id and game bits), or `None`
    /// when its chunk is not held.
    pub fn voxel(&mut self, pos: Pos) -> Option<u32> {
        self.voxels_of(geometry::chunk_of_voxel(pos))
            .map(|v| v.get(geometry::index_in_chunk(pos)))
    }

    /// Every voxel value of a held chunk (x fastest), decoding it if
    /// needed: what a renderer meshes.
    pub fn chunk_values(&mut self, chunk: Pos) -> Option<Vec<u32>> {
        self.voxels_of(chunk).map(|v| v.values())
    }

    /// The voxel's canonical name (`air`, `stone`, ...), or `None` when its
    /// chunk is not held.
    pub fn voxel_name(&mut self, pos: Pos) -> Option<String> {
        let id = self.voxel(pos)? & MAX_TYPE_ID;
        Some(
            self.registry
                .get_name(id)
                .unwrap_or_else(|| UNKNOWN_NAME.to_string()),
        )
    }
}
