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
//! else the raw values), single-voxel updates (`voxelworld:voxels`), the ack
//! bookkeeping (how many processed chunks are still unacknowledged, and
//! whether acking is paused), the counters of the summary line, the focus
//! (the player position the game's Lua sets), and the top-down slice that
//! the ASCII map and the PNG map draw. Does not own: sockets or when acks go
//! out (`app` asks [`WorldView::take_ack`] once per read-loop iteration),
//! the Lua API (`sandbox`), or which chunks the server sends.

use std::collections::{BTreeSet, HashMap};
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use buildat_format::voxel_blob::peek_voxel_count;
use buildat_format::{Packet, PayloadError};
use buildat_format::{VoxelBlobError, decode_voxels};
use buildat_voxel::geometry::{self, CHUNK_SIZE, CHUNK_VOLUME, Pos};
use buildat_voxel::{AIR, MAX_TYPE_ID, UNKNOWN, UNKNOWN_NAME, VoxelRegistry};
use buildat_voxelworld_api::stream::{Ack, Chunk, Registry, UnloadChunk, VoxelUpdates};
use thiserror::Error;

/// Pixels along each side of one voxel column in the PNG map.
pub const PNG_PIXELS_PER_COLUMN: u32 = 8;
/// Default half-width of the maps, in voxels (a 49 × 49 slice).
pub const DEFAULT_MAP_RADIUS: i32 = 24;
/// Largest map half-width accepted.
pub const MAX_MAP_RADIUS: i32 = 1024;

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
}

/// Writing a PNG map failed.
#[derive(Debug, Error)]
pub enum MapError {
    #[error("cannot write {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot encode {path} as PNG: {source}")]
    Png {
        path: PathBuf,
        source: png::EncodingError,
    },
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

/// What the maps draw for a block, by its block name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockKind {
    Stone,
    Grass,
    Dirt,
    Sand,
    Water,
    Ore,
    Other,
}

impl BlockKind {
    /// The kind of a block name (`coal_ore`, `iron_ore`, `ore`... are ores).
    pub fn of(block_name: &str) -> Self {
        match block_name {
            "stone" => Self::Stone,
            "grass" => Self::Grass,
            "dirt" => Self::Dirt,
            "sand" => Self::Sand,
            "water" => Self::Water,
            n if n == "ore" || n.ends_with("_ore") || n.starts_with("ore_") => Self::Ore,
            _ => Self::Other,
        }
    }

    /// Its character on the ASCII map.
    pub fn symbol(self) -> char {
        match self {
            Self::Stone => '#',
            Self::Grass => '"',
            Self::Dirt => '%',
            Self::Sand => '.',
            Self::Water => '~',
            Self::Ore => '*',
            Self::Other => '?',
        }
    }

    /// Its colour on the PNG map.
    pub fn colour(self) -> [u8; 3] {
        match self {
            Self::Stone => [128, 128, 128],
            Self::Grass => [70, 160, 50],
            Self::Dirt => [130, 90, 55],
            Self::Sand => [225, 210, 150],
            Self::Water => [40, 90, 210],
            Self::Ore => [230, 140, 30],
            Self::Other => [200, 40, 200],
        }
    }
}

/// The legend line of the ASCII map.
pub const ASCII_LEGEND: &str = "# stone  \" grass  % dirt  . sand  ~ water  * ore  ? other  \
                                (blank) nothing held  @ focus";

/// One voxel column of a top-down slice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Column {
    /// No chunk of this column is held.
    NotHeld,
    /// Held chunks, but only air in them.
    Air,
    /// The highest held non-air voxel.
    Top { kind: BlockKind, y: i32 },
}

/// A top-down slice of the held world around a centre.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopView {
    /// The centre voxel (the focus).
    pub center: Pos,
    /// Columns from `center - radius` to `center + radius` on x and z.
    pub radius: i32,
    /// Row by row (z ascending), each row x ascending.
    pub columns: Vec<Column>,
    /// Whether the centre is the focus Lua set (else the first chunk's
    /// middle, or the origin).
    pub focus_set: bool,
}

impl TopView {
    fn side(&self) -> usize {
        usize::try_from(2 * self.radius + 1).unwrap_or(1)
    }

    /// The column at offset (dx, dz) from the centre.
    pub fn at(&self, dx: i32, dz: i32) -> Column {
        let side = self.side();
        let (Ok(x), Ok(z)) = (
            usize::try_from(dx + self.radius),
            usize::try_from(dz + self.radius),
        ) else {
            return Column::NotHeld;
        };
        if x >= side || z >= side {
            return Column::NotHeld;
        }
        self.columns
            .get(z * side + x)
            .copied()
            .unwrap_or(Column::NotHeld)
    }

    /// The ASCII map: a header, the legend, then the slice in a frame,
    /// x growing rightward and z downward, the centre marked `@`.
    pub fn ascii(&self) -> String {
        let [cx, cy, cz] = self.center;
        let r = self.radius;
        let side = self.side();
        let mut out = format!(
            "map: top-down, highest held voxel per column; {} ({cx},{cy},{cz}) is @; \
             x {}..{} left to right, z {}..{} top to bottom\n",
            if self.focus_set {
                "focus"
            } else {
                "no focus set, centre"
            },
            cx - r,
            cx + r,
            cz - r,
            cz + r
        );
        out.push_str(&format!("legend: {ASCII_LEGEND}\n"));
        let border = format!("+{}+\n", "-".repeat(side));
        out.push_str(&border);
        for dz in -r..=r {
            out.push('|');
            for dx in -r..=r {
                out.push(if dx == 0 && dz == 0 {
                    '@'
                } else {
                    match self.at(dx, dz) {
                        Column::NotHeld | Column::Air => ' ',
                        Column::Top { kind, .. } => kind.symbol(),
                    }
                });
            }
            out.push_str("|\n");
        }
        out.push_str(&border);
        out
    }

    /// The slice as RGB pixels (one per column): the block's colour, darker
    /// below the centre's height and lighter above (a relief: 12 voxels
    /// down is 55 %, 12 up 115 %); black where nothing is
    /// held, dark blue where only air is; the centre red.
    pub fn rgb(&self) -> Vec<u8> {
        let r = self.radius;
        let mut data = Vec::with_capacity(self.side() * self.side() * 3);
        for dz in -r..=r {
            for dx in -r..=r {
                let pixel = if dx == 0 && dz == 0 {
                    [255, 0, 0]
                } else {
                    match self.at(dx, dz) {
                        Column::NotHeld => [0, 0, 0],
                        Column::Air => [15, 15, 45],
                        Column::Top { kind, y } => {
                            let rel = f64::from(y.saturating_sub(self.center[1]))
                                .clamp(-12.0, 12.0)
                                / 12.0;
                            let factor = 0.85 + 0.3 * rel;
                            kind.colour()
                                .map(|c| (f64::from(c) * factor).clamp(0.0, 255.0) as u8)
                        }
                    }
                };
                data.extend_from_slice(&pixel);
            }
        }
        data
    }

    /// Writes the slice as a PNG ([`PNG_PIXELS_PER_COLUMN`] pixels square per
    /// column, so a person can read it), atomically.
    pub fn write_png(&self, path: &Path) -> Result<(), MapError> {
        let io = |source| MapError::Io {
            path: path.to_path_buf(),
            source,
        };
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let mut temp = tempfile::Builder::new()
            .prefix(".map-")
            .tempfile_in(dir)
            .map_err(io)?;
        let columns = self.side();
        let scale = PNG_PIXELS_PER_COLUMN as usize;
        let side = u32::try_from(columns * scale).unwrap_or(1);
        let rgb = self.rgb();
        let mut pixels = Vec::with_capacity(rgb.len() * scale * scale);
        for row in rgb.chunks(columns * 3) {
            let mut wide = Vec::with_capacity(row.len() * scale);
            for pixel in row.chunks(3) {
                for _ in 0..scale {
                    wide.extend_from_slice(pixel);
                }
            }
            for _ in 0..scale {
                pixels.extend_from_slice(&wide);
            }
        }
        {
            let mut encoder = png::Encoder::new(BufWriter::new(temp.as_file_mut()), side, side);
            encoder.set_color(png::ColorType::Rgb);
            encoder.set_depth(png::BitDepth::Eight);
            let png = |source| MapError::Png {
                path: path.to_path_buf(),
                source,
            };
            let mut writer = encoder.write_header().map_err(png)?;
            writer.write_image_data(&pixels).map_err(png)?;
            writer.finish().map_err(png)?;
        }
        temp.persist(path).map_err(|e| io(e.error))?;
        Ok(())
    }
}

/// One session's world.
#[derive(Debug)]
pub struct WorldView {
    registry: VoxelRegistry,
    chunks: HashMap<Pos, Held>,
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
            Registry::NAME | Chunk::NAME | UnloadChunk::NAME | VoxelUpdates::NAME
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

    fn handle_unload(&mut self, data: &[u8]) -> Result<Handled, WorldError> {
        let chunk = decode_stream::<UnloadChunk>(data)?.chunk;
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

    pub fn registry(&self) -> &VoxelRegistry {
        &self.registry
    }

    /// The voxel at a world position (type id and game bits), or `None`
    /// when its chunk is not held.
    pub fn voxel(&mut self, pos: Pos) -> Option<u32> {
        self.voxels_of(geometry::chunk_of_voxel(pos))
            .map(|v| v.get(geometry::index_in_chunk(pos)))
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

    /// The map centre: the focus, else the first chunk's middle, else the
    /// origin; and whether it is the focus.
    pub fn map_center(&self) -> (Pos, bool) {
        if let Some(f) = self.focus {
            return (f.map(|v| v.floor().clamp(-2e9, 2e9) as i32), true);
        }
        let center = self.stats.first_chunk.map_or([0; 3], |c| {
            geometry::chunk_origin(c).map(|v| v.saturating_add(CHUNK_SIZE / 2))
        });
        (center, false)
    }

    /// The top-down slice of `radius` voxels around the map centre.
    pub fn top_view(&mut self, radius: i32) -> TopView {
        let radius = radius.clamp(0, MAX_MAP_RADIUS);
        let (center, focus_set) = self.map_center();
        let mut columns = Vec::new();
        for dz in -radius..=radius {
            for dx in -radius..=radius {
                columns
                    .push(self.column(center[0].saturating_add(dx), center[2].saturating_add(dz)));
            }
        }
        TopView {
            center,
            radius,
            columns,
            focus_set,
        }
    }

    /// The highest held non-air voxel of the voxel column (x, z).
    fn column(&mut self, x: i32, z: i32) -> Column {
        let key = [x.div_euclid(CHUNK_SIZE), z.div_euclid(CHUNK_SIZE)];
        let Some(ys) = self.columns.get(&key) else {
            return Column::NotHeld;
        };
        let ys: Vec<i32> = ys.iter().copied().collect();
        let size = CHUNK_SIZE as usize;
        let (lx, lz) = (
            x.rem_euclid(CHUNK_SIZE) as usize,
            z.rem_euclid(CHUNK_SIZE) as usize,
        );
        for &cy in ys.iter().rev() {
            let Some(voxels) = self.voxels_of([key[0], cy, key[1]]) else {
                continue;
            };
            let voxels: &Voxels = voxels;
            if voxels.is_air() {
                continue;
            }
            for ly in (0..size).rev() {
                let id = voxels.get(lx + size * (ly + size * lz)) & MAX_TYPE_ID;
                if id == AIR {
                    continue;
                }
                let kind = self
                    .registry
                    .get(id)
                    .map_or(BlockKind::Other, |d| BlockKind::of(&d.name.block_name));
                let y = cy.saturating_mul(CHUNK_SIZE).saturating_add(ly as i32);
                return Column::Top { kind, y };
            }
        }
        Column::Air
    }
}
