//! Chunk meshing: a chunk's voxels (with a one-voxel border from its
//! neighbours) into quads of packed 8-byte vertices, by binary greedy
//! meshing: which voxels are opaque and of which see-through type is kept
//! as rows of bits along each axis, so a row of 32 faces is culled in a
//! few bit operations (a face shows unless the voxel in front is opaque or,
//! for a cutout, blended or liquid voxel, of its own type); each visible
//! face gets per-corner ambient occlusion (0 = fully occluded .. 3 = open)
//! and smooth light (the sum of the light of the 4 voxels in front around
//! the corner: the server's sunlight and block light, full sun where a
//! chunk's light has not come); faces whose 4 corners are alike merge
//! greedily with equal neighbours (same layer, kind, AO, light), the others
//! stay one quad each. A liquid's top (its voxel above not the same type)
//! is lowered by [`LIQUID_DROP`]. Quads go to the solid, cutout (leaves)
//! or blended (water, ice, glass) list by their type's [`Kind`].
//!
//! Owns: the packed [`Vertex`], what is drawn (the [`MeshTable`]: each type
//! id's kind and texture layer per face), the mesher and the naive
//! one-quad-per-visible-face mesher the benchmark compares it with, the
//! less detailed meshing of distant chunks (the far table,
//! [`MeshTable::far`]; lower-resolution copies, [`halve_voxels`]), and
//! the worker thread meshing off the render thread. Does not own: GPU
//! buffers and sorting blended quads (`render::gpu`), textures and which
//! kind a type is (`render::atlas`), which chunks are held (`world`),
//! which detail a chunk gets (the scene, `render`).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

use buildat_voxel::geometry::{CHUNK_SIZE, CHUNK_VOLUME, Pos, chunk_origin};
use buildat_voxel::light::FULL_SUN;
use buildat_voxel::{AIR, MAX_TYPE_ID};
use crossbeam_channel::{Receiver, Sender};

use super::occlusion::Occluder;

const SIZE: usize = CHUNK_SIZE as usize;
/// The padded volume's side: the chunk plus one voxel of each neighbour.
const PADDED: usize = SIZE + 2;

/// How a voxel type is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Not drawn, hides nothing.
    Empty = 0,
    /// Drawn; hides its neighbours' faces.
    Opaque,
    /// Drawn alpha-tested (leaves); hides only faces of its own type.
    Cutout,
    /// Drawn blended (ice, glass); hides only faces of its own type.
    Blended,
    /// Drawn blended with its top lowered (water); hides only faces of its
    /// own type.
    Liquid,
}

/// Per type id: its kind and texture layer per face (+x, -x, +y, -y, +z,
/// -z, as `VoxelDefinition::textures`).
#[derive(Debug, Clone)]
pub struct MeshTable {
    entries: Vec<(Kind, [u32; 6])>,
    /// Each id's kind, dense (air's Empty), for the mesher's inner loop.
    kinds: Vec<Kind>,
    /// Corners get ambient occlusion and smooth light; else each face is
    /// lit flat by the voxel in front of it ([`Self::far`]).
    smooth: bool,
}

impl Default for MeshTable {
    fn default() -> Self {
        Self::new(Vec::new())
    }
}

impl MeshTable {
    pub fn new(entries: Vec<(Kind, [u32; 6])>) -> Self {
        let mut kinds: Vec<Kind> = entries
            .iter()
            .enumerate()
            .map(|(id, (kind, _))| if id as u32 == AIR { Kind::Empty } else { *kind })
            .collect();
        if kinds.is_empty() {
            kinds.push(Kind::Empty);
        }
        Self {
            entries,
            kinds,
            smooth: true,
        }
    }

    /// The table far chunks are meshed with: cutout types (leaves) drawn
    /// opaque, so a canopy is its outside only, merged like stone (the
    /// atlas fills their holes' colour), and flat corners (no ambient
    /// occlusion or smooth light), so equal neighbouring faces merge. Far
    /// away both are a few pixels, and each costs triangles: on a CPU
    /// rasteriser the frame's time follows them.
    pub fn far(&self) -> Self {
        let entries = self.entries.iter().map(|&(kind, layers)| match kind {
            Kind::Cutout => (Kind::Opaque, layers),
            _ => (kind, layers),
        });
        Self {
            smooth: false,
            ..Self::new(entries.collect())
        }
    }

    pub fn kind(&self, voxel: u32) -> Kind {
        let id = voxel & MAX_TYPE_ID;
        if id == AIR {
            return Kind::Empty;
        }
        self.kinds.get(id as usize).copied().unwrap_or(Kind::Opaque)
    }

    fn layer(&self, voxel: u32, face: usize) -> u32 {
        self.entries
            .get((voxel & MAX_TYPE_ID) as usize)
            .and_then(|(_, layers)| layers.get(face).copied())
            .unwrap_or(0)
    }
}

/// How far a liquid's top surface sits below the full block, in voxels.
pub const LIQUID_DROP: f32 = 0.125;

/// One packed vertex, 8 bytes, chunk-relative. 4 per quad, triangles
/// (0,1,2) (0,2,3), counter-clockwise seen from outside (the face's normal
/// side).
///
/// `a`: x bits 0-5 (0..=32), y bits 6-11, z bits 12-17, face bits 18-20
/// (0..6: +x -x +y -y +z -z), ambient occlusion bits 21-22 (0 = fully
/// occluded corner .. 3 = open), bit 23 `lowered` (the vertex's y is
/// `y - LIQUID_DROP`). `b`: texture layer bits 0-15, sunlight bits 16-21 =
/// the sum of the 4 light levels (0..=60) around the vertex in front of the
/// face (smooth light), block light bits 22-27 likewise.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Vertex {
    pub a: u32,
    pub b: u32,
}

/// Bytes of one [`Vertex`] on the GPU.
pub const VERTEX_BYTES: usize = std::mem::size_of::<Vertex>();

impl Vertex {
    /// Packs a vertex; each field is masked to its bits.
    #[allow(clippy::too_many_arguments)]
    pub fn pack(
        position: [u32; 3],
        face: usize,
        ao: u32,
        lowered: bool,
        layer: u32,
        sun_sum: u32,
        block_sum: u32,
    ) -> Self {
        let [x, y, z] = position.map(|c| c & 63);
        Self {
            a: x | y << 6
                | z << 12
                | (face as u32 & 7) << 18
                | (ao & 3) << 21
                | u32::from(lowered) << 23,
            b: (layer & 0xffff) | (sun_sum & 63) << 16 | (block_sum & 63) << 22,
        }
    }

    /// The corner's integer position in the chunk (0..=32 each).
    pub fn corner(&self) -> [u32; 3] {
        [self.a & 63, (self.a >> 6) & 63, (self.a >> 12) & 63]
    }

    /// The position in the chunk, a lowered vertex `LIQUID_DROP` down.
    pub fn position(&self) -> [f32; 3] {
        let [x, y, z] = self.corner().map(|c| c as f32);
        let drop = if self.lowered() { LIQUID_DROP } else { 0.0 };
        [x, y - drop, z]
    }

    pub fn face(&self) -> usize {
        ((self.a >> 18) & 7) as usize
    }

    pub fn ao(&self) -> u32 {
        (self.a >> 21) & 3
    }

    pub fn lowered(&self) -> bool {
        (self.a >> 23) & 1 == 1
    }

    pub fn layer(&self) -> u32 {
        self.b & 0xffff
    }

    /// The sum of the 4 sunlight levels around the vertex (0..=60).
    pub fn sun_sum(&self) -> u32 {
        (self.b >> 16) & 63
    }

    /// The sum of the 4 block light levels around the vertex (0..=60).
    pub fn block_sum(&self) -> u32 {
        (self.b >> 22) & 63
    }

    /// The vertex as the GPU reads it, little-endian.
    pub fn to_bytes(&self) -> [u8; 8] {
        let mut out = [0; 8];
        out[..4].copy_from_slice(&self.a.to_le_bytes());
        out[4..].copy_from_slice(&self.b.to_le_bytes());
        out
    }
}

/// A chunk's quads, 4 vertices each, by how they are drawn.
#[derive(Debug, Clone, Default)]
pub struct ChunkMesh {
    /// Opaque quads (depth write, no blending).
    pub solid: Vec<Vertex>,
    /// Alpha-tested quads (leaves): drawn like solid, fragments with alpha
    /// < 0.5 discarded, both faces visible (no back-face culling).
    pub cutout: Vec<Vertex>,
    /// Blended quads (water, ice, glass): drawn after all solid and cutout
    /// chunks, no depth write, back to front (quad i is vertices 4i..4i+4;
    /// its centre is the mean of its 4 positions).
    pub blended: Vec<Vertex>,
    /// The opaque boxes at its bottom, as drawn (occlusion culling).
    pub occluder: Occluder,
}

impl ChunkMesh {
    pub fn quads(&self) -> usize {
        (self.solid.len() + self.cutout.len() + self.blended.len()) / 4
    }

    pub fn triangles(&self) -> usize {
        self.quads() * 2
    }

    pub fn is_empty(&self) -> bool {
        self.quads() == 0
    }

    /// Every vertex, solid then cutout then blended.
    pub fn vertices(&self) -> impl Iterator<Item = &Vertex> {
        self.solid.iter().chain(&self.cutout).chain(&self.blended)
    }

    /// Bytes of all its vertices.
    pub fn vertex_bytes(&self) -> usize {
        (self.solid.len() + self.cutout.len() + self.blended.len()) * VERTEX_BYTES
    }
}

/// Voxel values of one chunk (x fastest, then y, then z), shared between
/// the world's copy and mesh jobs.
pub type ChunkVoxels = Arc<[u32]>;

/// Light bytes of one chunk (as [`ChunkVoxels`]), from the stream.
pub type ChunkLight = Arc<[u8]>;

/// A chunk and its 26 neighbours, for meshing: `neighbours[i]` is the chunk
/// at offset `(i % 3 - 1, i / 3 % 3 - 1, i / 9 - 1)`; index 13 is the
/// chunk itself. A neighbour not held counts as opaque (no faces are drawn
/// towards what is not known yet). `lights` likewise; a chunk whose light
/// is not known is in full sun.
pub struct Neighbourhood {
    pub neighbours: [Option<ChunkVoxels>; 27],
    pub lights: [Option<ChunkLight>; 27],
}

impl Neighbourhood {
    /// Gathers `chunk`'s neighbourhood from held chunks, all in full sun.
    pub fn gather(chunk: Pos, held: &HashMap<Pos, ChunkVoxels>) -> Self {
        Self::gather_lit(chunk, held, &HashMap::new())
    }

    /// Gathers `chunk`'s neighbourhood from held chunks and their light.
    pub fn gather_lit(
        chunk: Pos,
        held: &HashMap<Pos, ChunkVoxels>,
        lights: &HashMap<Pos, ChunkLight>,
    ) -> Self {
        Self {
            neighbours: std::array::from_fn(|i| held.get(&neighbour_at(chunk, i)).cloned()),
            lights: std::array::from_fn(|i| lights.get(&neighbour_at(chunk, i)).cloned()),
        }
    }
}

/// The chunk at [`Neighbourhood`] index `i` (0..27) around `chunk`.
pub fn neighbour_at(chunk: Pos, i: usize) -> Pos {
    [
        chunk[0] + (i % 3) as i32 - 1,
        chunk[1] + (i / 3 % 3) as i32 - 1,
        chunk[2] + (i / 9) as i32 - 1,
    ]
}

/// Which of the three chunks along an axis a padded coordinate falls in.
fn chunk_step(p: usize) -> usize {
    if p == 0 {
        0
    } else if p <= SIZE {
        1
    } else {
        2
    }
}

/// Steps between padded positions along x, y and z.
const STRIDE: [usize; 3] = [1, PADDED, PADDED * PADDED];
const PADDED_VOLUME: usize = PADDED * PADDED * PADDED;
/// The chunk's bits of a padded mask row (bits 1..=SIZE).
const INNER: u64 = ((1u64 << SIZE) - 1) << 1;

/// One bit per padded voxel, as rows of bits along each axis: the row
/// along `axis` holding padded position `p` is
/// `p[(axis + 2) % 3] + PADDED * p[(axis + 1) % 3]` and its bit `p[axis]`.
/// So for faces along axis `d`, whose in-plane axes are u = `(d + 1) % 3`
/// and v = `(d + 2) % 3`, the row along u at slice `s` (on d) and row `r`
/// (on v) is `masks[u][s + PADDED * r]`: a face's row and the row in front
/// of it are one index apart.
struct Masks([Vec<u64>; 3]);

impl Masks {
    fn new() -> Self {
        Self(std::array::from_fn(|_| vec![0; PADDED * PADDED]))
    }

    /// Fills the rows along y and z from the rows along x: each plane of
    /// them is a bit matrix the other's is the transpose of.
    fn transpose_from_x(&mut self) {
        const FULL: u64 = (1 << PADDED) - 1;
        let [x, y, z] = &mut self.0;
        let mut m = [0u64; 64];
        // A plane all clear or all set (sky, rock) is its own transpose.
        let uniform = |m: &[u64; 64]| {
            let (any, all) = m[..PADDED]
                .iter()
                .fold((0, FULL), |(any, all), &row| (any | row, all & row));
            if any == 0 {
                Some(0)
            } else if all == FULL {
                Some(FULL)
            } else {
                None
            }
        };
        for pz in 0..PADDED {
            for (py, row) in m.iter_mut().take(PADDED).enumerate() {
                *row = x[pz + PADDED * py];
            }
            match uniform(&m) {
                Some(rows) => m[..PADDED].fill(rows),
                None => transpose64(&mut m),
            }
            for (px, row) in m.iter_mut().take(PADDED).enumerate() {
                y[px + PADDED * pz] = *row;
                *row = 0;
            }
        }
        for py in 0..PADDED {
            m[..PADDED].copy_from_slice(&x[PADDED * py..PADDED * (py + 1)]);
            match uniform(&m) {
                Some(rows) => m[..PADDED].fill(rows),
                None => transpose64(&mut m),
            }
            for (px, row) in m.iter_mut().take(PADDED).enumerate() {
                z[py + PADDED * px] = *row;
                *row = 0;
            }
        }
    }
}

/// Transposes a 64 × 64 bit matrix in place (row i's bit j becomes row
/// j's bit i), by swapping ever smaller blocks.
fn transpose64(m: &mut [u64; 64]) {
    let mut j = 32;
    let mut mask: u64 = 0x0000_0000_ffff_ffff;
    while j != 0 {
        let mut k = 0;
        while k < 64 {
            let t = ((m[k] >> j) ^ m[k + j]) & mask;
            m[k] ^= t << j;
            m[k + j] ^= t;
            k = (k + j + 1) & !j;
        }
        j >>= 1;
        mask ^= mask << j;
    }
}

/// A type that is drawn but does not hide other types' faces (cutout,
/// blended, liquid): its voxels' masks, since it hides its own faces.
struct Class {
    id: u32,
    /// A liquid (its top lowered where nothing of it is above).
    liquid: bool,
    masks: Masks,
}

/// What the mesher reads of the chunk and one voxel of each neighbour
/// (the padded volume, `PADDED`³, x fastest): which voxels are opaque and
/// of which see-through type, as rows of bits, and the light. Voxel values
/// are read from the chunks themselves, for the visible faces only. Kept
/// per thread and reused.
struct Volume {
    /// Light bytes (sunlight in the high nibble).
    light: Vec<u8>,
    /// Opaque voxels.
    opaque: Masks,
    /// The see-through drawn types present; the first `classes` are in use.
    class_masks: Vec<Class>,
    classes: usize,
    /// A slice's faces that may merge, one row of bits per v, and their
    /// [`Face::merge_key`]s.
    rows: [u32; SIZE],
    keys: Vec<u64>,
}

/// The index of `id`'s class among the first `used`, added if new.
fn class_of(classes: &mut Vec<Class>, used: &mut usize, id: u32, liquid: bool) -> usize {
    if let Some(i) = classes[..*used].iter().position(|c| c.id == id) {
        return i;
    }
    if *used == classes.len() {
        classes.push(Class {
            id,
            liquid,
            masks: Masks::new(),
        });
    }
    let i = *used;
    classes[i].id = id;
    classes[i].liquid = liquid;
    *used += 1;
    i
}

/// The value at chunk position `p` (each coordinate 0..=SIZE: SIZE is the
/// next chunk's first), if its chunk is held.
fn value_at(neighbourhood: &Neighbourhood, p: [usize; 3]) -> Option<u32> {
    let [cx, cy, cz] = p.map(|c| usize::from(c >= SIZE) + 1);
    let [x, y, z] = p.map(|c| c % SIZE);
    neighbourhood.neighbours[cx + 3 * cy + 9 * cz]
        .as_deref()
        .and_then(|v| v.get(x + SIZE * (y + SIZE * z)))
        .copied()
}

/// What one corner of a face carries, packed: ambient occlusion bits 0-1,
/// lowered bit 2, the sum of the 4 sunlight levels around it (0..=60) bits
/// 3-8, of the block light bits 9-14. One word, so corners compare at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Corner(u32);

impl Corner {
    fn new(ao: u32, sun: u32, block: u32) -> Self {
        Self((ao & 3) | (sun & 63) << 3 | (block & 63) << 9)
    }

    fn ao(self) -> u32 {
        self.0 & 3
    }

    fn lowered(self) -> bool {
        self.0 & 4 != 0
    }

    fn sun(self) -> u32 {
        (self.0 >> 3) & 63
    }

    fn block(self) -> u32 {
        (self.0 >> 9) & 63
    }
}

/// What a face is drawn with.
#[derive(Debug, Clone, Copy)]
struct Face {
    kind: Kind,
    layer: u32,
    corners: [Corner; 4],
}

impl Face {
    /// The key of a face whose corners are all alike (it may merge with
    /// faces of the same key), or `None`.
    fn merge_key(&self) -> Option<u64> {
        let [a, b, c, d] = self.corners;
        if a != b || a != c || a != d {
            return None;
        }
        Some(u64::from(self.layer) | (self.kind as u64) << 32 | u64::from(a.0) << 36)
    }

    fn from_key(key: u64) -> Self {
        let kind = match (key >> 32) & 15 {
            k if k == Kind::Cutout as u64 => Kind::Cutout,
            k if k == Kind::Blended as u64 => Kind::Blended,
            k if k == Kind::Liquid as u64 => Kind::Liquid,
            _ => Kind::Opaque,
        };
        Self {
            kind,
            layer: (key & 0xffff_ffff) as u32,
            corners: [Corner((key >> 36) as u32); 4],
        }
    }
}

impl Volume {
    fn new() -> Self {
        Self {
            light: vec![FULL_SUN; PADDED_VOLUME],
            opaque: Masks::new(),
            class_masks: Vec::new(),
            classes: 0,
            rows: [0; SIZE],
            keys: vec![0; SIZE * SIZE],
        }
    }

    /// Reads the chunk and its neighbours' borders. A neighbour not held
    /// (or not a whole chunk) is opaque; light not known is full sun.
    fn gather(&mut self, neighbourhood: &Neighbourhood, table: &MeshTable) {
        for class in &mut self.class_masks[..self.classes] {
            class.masks.0[0].fill(0);
        }
        self.classes = 0;
        // Along x: the -x neighbour's last voxel, the chunk's row, the +x
        // neighbour's first: (chunk step, first padded x, first source x, length).
        const SEGMENTS: [(usize, usize, usize, usize); 3] =
            [(0, 0, SIZE - 1, 1), (1, 1, 0, SIZE), (2, PADDED - 1, 0, 1)];
        let kind_of = &table.kinds[..];
        let light = &mut self.light[..];
        let x_rows = &mut self.opaque.0[0][..];
        for pz in 0..PADDED {
            let (cz, lz) = (chunk_step(pz), (pz + SIZE - 1) % SIZE);
            for py in 0..PADDED {
                let (cy, ly) = (chunk_step(py), (py + SIZE - 1) % SIZE);
                let row = STRIDE[1] * py + STRIDE[2] * pz;
                let source_row = SIZE * (ly + SIZE * lz);
                let mut x_bits = 0u64;
                for (cx, first, source, len) in SEGMENTS {
                    let i = cx + 3 * cy + 9 * cz;
                    let at = row + first..row + first + len;
                    let from = source_row + source..source_row + source + len;
                    match neighbourhood.lights[i]
                        .as_deref()
                        .and_then(|l| l.get(from.clone()))
                    {
                        Some(lit) => light[at.clone()].copy_from_slice(lit),
                        None => light[at].fill(FULL_SUN),
                    }
                    let Some(values) = neighbourhood.neighbours[i]
                        .as_deref()
                        .and_then(|v| v.get(from))
                    else {
                        x_bits |= ((1u64 << len) - 1) << first;
                        continue;
                    };
                    let kind = |value: u32| {
                        kind_of
                            .get((value & MAX_TYPE_ID) as usize)
                            .copied()
                            .unwrap_or(Kind::Opaque)
                    };
                    let (mut opaque, mut clear) = (0u64, 0u64);
                    let first_value = values[0];
                    if values
                        .iter()
                        .fold(0, |differ, &v| differ | (v ^ first_value))
                        == 0
                    {
                        // A row of one value (air above ground, stone below,
                        // layers of dirt): one lookup.
                        let all = (1u64 << len) - 1;
                        match kind(first_value) {
                            Kind::Empty => {}
                            Kind::Opaque => opaque = all,
                            _ => clear = all,
                        }
                    } else {
                        // Branch-free: terrain mixes kinds unpredictably.
                        for (k, &value) in values.iter().enumerate() {
                            let kind = kind(value);
                            opaque |= u64::from(kind == Kind::Opaque) << k;
                            clear |= u64::from(kind as u8 > Kind::Opaque as u8) << k;
                        }
                    }
                    x_bits |= opaque << first;
                    while clear != 0 {
                        let k = clear.trailing_zeros() as usize;
                        clear &= clear - 1;
                        let class = class_of(
                            &mut self.class_masks,
                            &mut self.classes,
                            values[k] & MAX_TYPE_ID,
                            kind(values[k]) == Kind::Liquid,
                        );
                        self.class_masks[class].masks.0[0][pz + PADDED * py] |= 1 << (first + k);
                    }
                }
                x_rows[pz + PADDED * py] = x_bits;
            }
        }
        self.opaque.transpose_from_x();
        for class in &mut self.class_masks[..self.classes] {
            class.masks.transpose_from_x();
        }
    }

    /// The visible faces of the row along u at padded slice `s` (on the
    /// face's axis) and padded row `r` (on v), bit i for chunk position i.
    #[inline]
    fn visible(&self, face: usize, s: usize, r: usize) -> u32 {
        let d = face / 2;
        let u = (d + 1) % 3;
        let here = s + PADDED * r;
        let front = if face.is_multiple_of(2) {
            here + 1
        } else {
            here - 1
        };
        let front_opaque = self.opaque.0[u][front];
        let mut bits = self.opaque.0[u][here] & !front_opaque;
        for class in &self.class_masks[..self.classes] {
            let rows = &class.masks.0[u];
            bits |= rows[here] & !(front_opaque | rows[front]);
            if class.liquid && d != 1 {
                // A liquid's side towards the same liquid whose top is
                // lowered (none of it above) while this one's is not (some
                // above): drawn, or the lowered top would leave a slit
                // beside it (where levels step, as between details).
                let above = |row: usize| {
                    if d == 0 {
                        rows[row] >> 1
                    } else {
                        rows[row + PADDED]
                    }
                };
                bits |= rows[here] & above(here) & rows[front] & !above(front);
            }
        }
        ((bits & INNER) >> 1) as u32
    }

    /// The face facing `face` of the voxel of value `value` at chunk
    /// position `at` (slice on the face's axis, u, v): its corners' ambient
    /// occlusion (from opaque voxels beside the one in front), smooth light
    /// (the light of the 4 voxels in front around the corner, an opaque one
    /// counting as the mean of the others), and whether it sits on a
    /// liquid's lowered top (`open_above`: the voxel above is not the same
    /// type).
    fn face(
        &self,
        table: &MeshTable,
        value: u32,
        open_above: impl Fn() -> bool,
        at: [usize; 3],
        face: usize,
    ) -> Face {
        let [s, i, r] = at;
        let d = face / 2;
        let positive = face.is_multiple_of(2);
        let (u, v) = ((d + 1) % 3, (d + 2) % 3);
        let (su, sv) = (STRIDE[u], STRIDE[v]);
        // The padded slice in front, and the 3×3 voxels there around the
        // face: bit du of `near[dv]` (du, dv in 0..3) is whether the one at
        // (i - 1 + du, r - 1 + dv) is opaque.
        let front_s = if positive { s + 2 } else { s };
        let rows = &self.opaque.0[u];
        let near = [
            (rows[front_s + PADDED * r] >> i) & 7,
            (rows[front_s + PADDED * (r + 1)] >> i) & 7,
            (rows[front_s + PADDED * (r + 2)] >> i) & 7,
        ];
        let opaque = |du: usize, dv: usize| (near[dv] >> du) & 1 == 1;
        let front = STRIDE[d] * front_s + su * (i + 1) + sv * (r + 1);
        let light = |du: usize, dv: usize| self.light[front + su * du + sv * dv - su - sv];
        let id = value & MAX_TYPE_ID;
        let kind = table.kind(id);
        let lowered_top = kind == Kind::Liquid && open_above();
        // Whether corner k (0..4: -u-v, +u-v, +u+v, -u+v) is at the voxel's top.
        let top = |k: usize| {
            if d == 1 {
                positive
            } else if u == 1 {
                k == 1 || k == 2
            } else {
                k >= 2
            }
        };
        let centre = light(1, 1);
        let mut corners =
            [Corner::new(3, u32::from(centre >> 4) * 4, u32::from(centre & 15) * 4); 4];
        let even = !table.smooth
            || (near[0] | near[1] | near[2]) == 0 && {
                let row = |dv: usize| {
                    let at = front + sv * dv - sv - su;
                    (self.light[at] ^ centre)
                        | (self.light[at + su] ^ centre)
                        | (self.light[at + 2 * su] ^ centre)
                };
                (row(0) | row(1) | row(2)) == 0
            };
        if !even {
            for (k, corner) in corners.iter_mut().enumerate() {
                // The corner's offsets along u and v in the 3×3 (0 or 2).
                let (du, dv) = [(0, 0), (2, 0), (2, 2), (0, 2)][k];
                let (side1, side2, diagonal) = (opaque(du, 1), opaque(1, dv), opaque(du, dv));
                let ao = u32::from(vertex_ao(side1, side2, diagonal));
                // The one in front is never opaque (the face would be
                // hidden); the diagonal is cut off when both sides are.
                let mut count = 1;
                let (mut sun, mut block) = (u32::from(centre >> 4), u32::from(centre & 15));
                for (open, (lu, lv)) in [
                    (!side1, (du, 1)),
                    (!side2, (1, dv)),
                    (!(diagonal || side1 && side2), (du, dv)),
                ] {
                    if open {
                        let l = light(lu, lv);
                        count += 1;
                        sun += u32::from(l >> 4);
                        block += u32::from(l & 15);
                    }
                }
                *corner = Corner::new(ao, four_of(sun, count), four_of(block, count));
            }
        }
        if lowered_top {
            for (k, corner) in corners.iter_mut().enumerate() {
                corner.0 |= u32::from(top(k)) << 2;
            }
        }
        Face {
            kind,
            layer: table.layer(id, face),
            corners,
        }
    }

    /// Meshes the gathered chunk; `merge` false: one quad per face.
    fn mesh(&mut self, neighbourhood: &Neighbourhood, table: &MeshTable, merge: bool) -> ChunkMesh {
        let mut mesh = ChunkMesh::default();
        let Some(values) = neighbourhood.neighbours[13]
            .as_deref()
            .filter(|v| v.len() == CHUNK_VOLUME)
        else {
            return mesh;
        };
        for face in 0..6 {
            let d = face / 2;
            let (u, v) = ((d + 1) % 3, (d + 2) % 3);
            for s in 0..SIZE {
                let mut any = false;
                for r in 0..SIZE {
                    let mut bits = self.visible(face, s + 1, r + 1);
                    self.rows[r] = 0;
                    while bits != 0 {
                        let i = bits.trailing_zeros() as usize;
                        bits &= bits - 1;
                        let mut p = [0; 3];
                        (p[d], p[u], p[v]) = (s, i, r);
                        let value = values[p[0] + SIZE * (p[1] + SIZE * p[2])];
                        let open_above = || {
                            let above = value_at(neighbourhood, [p[0], p[1] + 1, p[2]]);
                            above.is_none_or(|a| a & MAX_TYPE_ID != value & MAX_TYPE_ID)
                        };
                        let drawn = self.face(table, value, open_above, [s, i, r], face);
                        match drawn.merge_key().filter(|_| merge) {
                            Some(key) => {
                                self.rows[r] |= 1 << i;
                                self.keys[r * SIZE + i] = key;
                                any = true;
                            }
                            None => push_quad(&mut mesh, face, [s, i, r], [1, 1], &drawn),
                        }
                    }
                }
                if any {
                    self.merge_slice(&mut mesh, face, s);
                }
            }
        }
        mesh
    }

    /// Greedy merging of a slice's mergeable faces: each run along u as
    /// long as the key holds, then grown along v while the rows above hold
    /// the same run.
    fn merge_slice(&mut self, mesh: &mut ChunkMesh, face: usize, s: usize) {
        for r in 0..SIZE {
            while self.rows[r] != 0 {
                let i = self.rows[r].trailing_zeros() as usize;
                let key = self.keys[r * SIZE + i];
                let run = (!(self.rows[r] >> i)).trailing_zeros() as usize;
                let mut w = 1;
                while w < run && self.keys[r * SIZE + i + w] == key {
                    w += 1;
                }
                let span = (((1u64 << w) - 1) << i) as u32;
                self.rows[r] &= !span;
                let mut h = 1;
                while r + h < SIZE
                    && self.rows[r + h] & span == span
                    && self.keys[(r + h) * SIZE + i..(r + h) * SIZE + i + w]
                        .iter()
                        .all(|&k| k == key)
                {
                    self.rows[r + h] &= !span;
                    h += 1;
                }
                push_quad(mesh, face, [s, i, r], [w, h], &Face::from_key(key));
            }
        }
    }
}

thread_local! {
    static VOLUME: std::cell::RefCell<Option<Volume>> = const { std::cell::RefCell::new(None) };
}

/// Runs `f` on this thread's volume, gathered from `neighbourhood`.
fn with_volume<T>(
    neighbourhood: &Neighbourhood,
    table: &MeshTable,
    f: impl FnOnce(&mut Volume, &Neighbourhood) -> T,
) -> T {
    VOLUME.with(|cell| {
        let mut slot = cell.borrow_mut();
        let volume = slot.get_or_insert_with(Volume::new);
        volume.gather(neighbourhood, table);
        f(volume, neighbourhood)
    })
}

/// Whether the chunk is not held or all of one type that is not drawn
/// (air): no face can be drawn, nothing need be read around it.
fn nothing_drawn(neighbourhood: &Neighbourhood, table: &MeshTable) -> bool {
    let Some(values) = neighbourhood.neighbours[13].as_deref() else {
        return true;
    };
    let Some(&first) = values.first() else {
        return true;
    };
    table.kind(first) == Kind::Empty && values.iter().all(|&v| v == first)
}

/// The sum of 4 light levels when `count` of them (1..=4) summed to
/// `total`: the missing ones count as the mean of the others, rounded.
#[inline]
fn four_of(total: u32, count: u32) -> u32 {
    match count {
        1 => total * 4,
        2 => total * 2,
        3 => (total * 4 + 1) / 3,
        _ => total,
    }
}

/// Ambient occlusion of a face corner from its two side neighbours and the
/// diagonal one: 0 (both sides) to 3 (nothing).
pub fn vertex_ao(side1: bool, side2: bool, corner: bool) -> u8 {
    if side1 && side2 {
        0
    } else {
        3 - u8::from(side1) - u8::from(side2) - u8::from(corner)
    }
}

/// Appends one quad to its kind's list: `at` is (slice on the face's axis,
/// u, v) of the voxel it starts at in the chunk, `size` voxels along u and
/// v. Wound counter-clockwise seen from outside, its first vertex chosen so
/// that the triangles' shared diagonal joins the lighter corners (AO then
/// interpolates without a visible seam).
fn push_quad(mesh: &mut ChunkMesh, face: usize, at: [usize; 3], size: [usize; 2], drawn: &Face) {
    let d = face / 2;
    let positive = face.is_multiple_of(2);
    let (u, v) = ((d + 1) % 3, (d + 2) % 3);
    let [s, i, r] = at;
    let [w, h] = size;
    let offsets = [(0, 0), (w, 0), (w, h), (0, h)];
    let mut vertices = [Vertex::default(); 4];
    for (k, vertex) in vertices.iter_mut().enumerate() {
        let mut p = [0u32; 3];
        p[d] = (s + usize::from(positive)) as u32;
        p[u] = (i + offsets[k].0) as u32;
        p[v] = (r + offsets[k].1) as u32;
        let c = drawn.corners[k];
        *vertex = Vertex::pack(
            p,
            face,
            c.ao(),
            c.lowered(),
            drawn.layer,
            c.sun(),
            c.block(),
        );
    }
    let c = &drawn.corners;
    let light = |k: usize| c[k].sun().max(c[k].block());
    let flip =
        (c[0].ao() + c[2].ao(), light(0) + light(2)) < (c[1].ao() + c[3].ao(), light(1) + light(3));
    let order: [usize; 4] = match (flip, positive) {
        (false, true) => [0, 1, 2, 3],
        (false, false) => [0, 3, 2, 1],
        (true, true) => [1, 2, 3, 0],
        (true, false) => [1, 0, 3, 2],
    };
    let list = match drawn.kind {
        Kind::Cutout => &mut mesh.cutout,
        Kind::Blended | Kind::Liquid => &mut mesh.blended,
        Kind::Empty | Kind::Opaque => &mut mesh.solid,
    };
    list.extend_from_slice(&[
        vertices[order[0]],
        vertices[order[1]],
        vertices[order[2]],
        vertices[order[3]],
    ]);
}

/// Meshes one chunk by binary greedy meshing: visible faces found a row
/// of bits at a time, faces whose corners are all alike merged with equal
/// neighbours (same layer, kind, AO, light and lowering), the others drawn
/// one quad each.
pub fn mesh_chunk(neighbourhood: &Neighbourhood, table: &MeshTable) -> ChunkMesh {
    if nothing_drawn(neighbourhood, table) {
        return ChunkMesh::default();
    }
    let mut mesh = with_volume(neighbourhood, table, |volume, n| {
        volume.mesh(n, table, true)
    });
    if let Some(values) = neighbourhood.neighbours[13].as_deref() {
        mesh.occluder = Occluder::of(values, |v| table.kind(v) == Kind::Opaque);
    }
    mesh
}

/// The baseline: one quad per visible face, nothing merged (the same
/// culling, AO and light, so only the merging differs).
pub fn mesh_chunk_naive(neighbourhood: &Neighbourhood, table: &MeshTable) -> ChunkMesh {
    if nothing_drawn(neighbourhood, table) {
        return ChunkMesh::default();
    }
    with_volume(neighbourhood, table, |volume, n| {
        volume.mesh(n, table, false)
    })
}

/// The side of a cube of `len` values that is a chunk at some
/// resolution (32, 16, 8, ... voxels a side).
fn cube_side(len: usize) -> Option<usize> {
    let mut side = SIZE;
    while side > 0 {
        if side * side * side == len {
            return Some(side);
        }
        side /= 2;
    }
    None
}

/// The index in a cube of `side` of each voxel of its 2×2×2 block `b` (the
/// block's index in the cube at half resolution), the upper layer first.
fn block_voxels(b: usize, side: usize) -> impl Iterator<Item = usize> {
    let half = side / 2;
    let [x, y, z] = [b % half, b / half % half, b / (half * half)].map(|c| c * 2);
    (0..8).map(move |i| {
        let (dx, dy, dz) = (i & 1, 1 - ((i >> 1) & 1), i >> 2);
        (x + dx) + side * ((y + dy) + side * (z + dz))
    })
}

/// A chunk's voxels at half the resolution they have (32³ to 16³, 16³ to
/// 8³; x fastest): each aligned 2×2×2 block one value, the commonest drawn
/// one (on a tie the upper layer's) when at least half of the block is
/// drawn or one of its four columns is (so a tree's trunk stays, two
/// blocks wide), else air. Blocks align with the chunk's borders, so
/// neighbours at the same resolution match. `None` unless `voxels` is a
/// chunk at some resolution.
pub fn halve_voxels(voxels: &[u32]) -> Option<Arc<[u32]>> {
    let side = cube_side(voxels.len()).filter(|side| *side >= 2)?;
    let half = side / 2;
    let blocks = (0..half * half * half).map(|b| {
        let mut block = [AIR; 8];
        for (v, i) in block.iter_mut().zip(block_voxels(b, side)) {
            *v = voxels[i];
        }
        let is_drawn = |v: &u32| v & MAX_TYPE_ID != AIR;
        let drawn = block.iter().filter(|v| is_drawn(v));
        // Columns: the upper voxel i and the lower i + 2 (`block_voxels`).
        let column = [0, 1, 4, 5]
            .iter()
            .any(|&i| is_drawn(&block[i]) && is_drawn(&block[i + 2]));
        if drawn.clone().count() < 4 && !column {
            return AIR;
        }
        let (mut best, mut best_count) = (AIR, 0);
        for v in drawn {
            let count = block.iter().filter(|w| *w == v).count();
            if count > best_count {
                (best, best_count) = (*v, count);
            }
        }
        best
    });
    Some(blocks.collect())
}

/// A chunk's light at half the resolution it has, as [`halve_voxels`]:
/// each block the brightest sunlight and block light in it (a coarse face
/// may stand where a voxel was drawn, whose own light is dark).
pub fn halve_light(light: &[u8]) -> Option<Arc<[u8]>> {
    let side = cube_side(light.len()).filter(|side| *side >= 2)?;
    let half = side / 2;
    let blocks = (0..half * half * half).map(|b| {
        let (sun, block) = block_voxels(b, side).fold((0, 0), |(sun, block), i| {
            ((light[i] >> 4).max(sun), (light[i] & 15).max(block))
        });
        (sun << 4) | block
    });
    Some(blocks.collect())
}

/// A chunk at 1/`scale` resolution ([`halve_voxels`], [`halve_light`],
/// once for 2, twice for 4) at full size, each value over its block;
/// `None` unless `values` is a chunk at that resolution.
pub fn expand<T: Copy>(values: &[T], scale: usize) -> Option<Arc<[T]>> {
    let side = SIZE.checked_div(scale).filter(|side| *side > 0)?;
    if values.len() != side * side * side {
        return None;
    }
    let at = |i: usize| {
        let [x, y, z] = [i % SIZE, i / SIZE % SIZE, i / (SIZE * SIZE)].map(|c| c / scale);
        values[x + side * (y + side * z)]
    };
    Some((0..CHUNK_VOLUME).map(at).collect())
}

/// A chunk to mesh; `generation` tells a result from a stale one.
pub struct MeshJob {
    pub chunk: Pos,
    pub generation: u64,
    /// The neighbourhood; a chunk whose scale in `scales` is above 1 holds
    /// its voxels and light at that fraction of the resolution, made whole
    /// by the mesher's thread.
    pub neighbourhood: Neighbourhood,
    pub scales: [u8; 27],
    pub table: Arc<MeshTable>,
}

impl MeshJob {
    /// The neighbourhood with its lower-resolution chunks at full size.
    fn whole_neighbourhood(mut self) -> (Neighbourhood, Arc<MeshTable>) {
        for (i, scale) in self.scales.into_iter().enumerate() {
            if scale > 1 {
                let scale = usize::from(scale);
                let n = &mut self.neighbourhood;
                n.neighbours[i] = n.neighbours[i].as_deref().and_then(|v| expand(v, scale));
                n.lights[i] = n.lights[i].as_deref().and_then(|l| expand(l, scale));
            }
        }
        (self.neighbourhood, self.table)
    }
}

/// A finished mesh.
pub struct MeshDone {
    pub chunk: Pos,
    pub generation: u64,
    pub mesh: ChunkMesh,
}

/// The meshing thread: jobs in, meshes out, never on the render thread.
/// Dropping it closes the job channel and joins the thread.
pub struct Mesher {
    jobs: Option<Sender<MeshJob>>,
    /// Set on drop: the thread leaves the jobs still queued.
    stop: Arc<AtomicBool>,
    done: Receiver<MeshDone>,
    thread: Option<JoinHandle<()>>,
}

impl Mesher {
    pub fn start() -> std::io::Result<Self> {
        let (jobs, job_rx) = crossbeam_channel::unbounded::<MeshJob>();
        let (done_tx, done) = crossbeam_channel::unbounded();
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let thread = std::thread::Builder::new()
            .name("mesher".into())
            .spawn(move || {
                for job in job_rx {
                    if stopped.load(Ordering::Relaxed) {
                        return;
                    }
                    let (chunk, generation) = (job.chunk, job.generation);
                    let (neighbourhood, table) = job.whole_neighbourhood();
                    let mesh = mesh_chunk(&neighbourhood, &table);
                    let done = MeshDone {
                        chunk,
                        generation,
                        mesh,
                    };
                    if done_tx.send(done).is_err() {
                        return;
                    }
                }
            })?;
        Ok(Self {
            jobs: Some(jobs),
            stop,
            done,
            thread: Some(thread),
        })
    }

    pub fn submit(&self, job: MeshJob) {
        if let Some(jobs) = &self.jobs {
            // Fails only once the thread is gone; nothing is meshed then.
            let _ = jobs.send(job);
        }
    }

    /// Meshes finished so far, without waiting.
    pub fn finished(&self) -> Vec<MeshDone> {
        self.done.try_iter().collect()
    }

    /// Waits up to `timeout` for the next mesh.
    pub fn wait(&self, timeout: std::time::Duration) -> Option<MeshDone> {
        self.done.recv_timeout(timeout).ok()
    }
}

impl Drop for Mesher {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.jobs = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A chunk's values from a function of its voxel position, for tests and
/// the benchmark.
pub fn chunk_from_fn(chunk: Pos, f: impl Fn([i32; 3]) -> u32) -> ChunkVoxels {
    let origin = chunk_origin(chunk);
    let mut values = Vec::with_capacity(CHUNK_VOLUME);
    for z in 0..CHUNK_SIZE {
        for y in 0..CHUNK_SIZE {
            for x in 0..CHUNK_SIZE {
                values.push(f([origin[0] + x, origin[1] + y, origin[2] + z]));
            }
        }
    }
    values.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Unit normals of the six faces, in `VoxelDefinition::textures` order.
    const NORMALS: [[i32; 3]; 6] = buildat_voxel::geometry::FACES;
    const STONE: u32 = 2;
    const WATER: u32 = 3;
    const LEAVES: u32 = 4;
    const GLASS: u32 = 5;

    fn table() -> MeshTable {
        MeshTable::new(vec![
            (Kind::Empty, [0; 6]),
            (Kind::Opaque, [1; 6]),
            (Kind::Opaque, [2, 2, 3, 4, 2, 2]),
            (Kind::Liquid, [5; 6]),
            (Kind::Cutout, [6; 6]),
            (Kind::Blended, [7; 6]),
        ])
    }

    /// The chunk at the origin and its neighbours from `f` of the position.
    fn world_of(f: impl Fn([i32; 3]) -> u32) -> Neighbourhood {
        let mut held = HashMap::new();
        for z in -1..=1 {
            for y in -1..=1 {
                for x in -1..=1 {
                    let chunk = [x, y, z];
                    held.insert(chunk, chunk_from_fn(chunk, &f));
                }
            }
        }
        Neighbourhood::gather([0, 0, 0], &held)
    }

    /// The chunk at the origin holding `solid` voxels; its neighbours air.
    fn world(solid: &[[i32; 3]]) -> Neighbourhood {
        world_of(|p| if solid.contains(&p) { STONE } else { AIR })
    }

    fn quads(list: &[Vertex]) -> impl Iterator<Item = &[Vertex]> {
        list.chunks_exact(4)
    }

    #[test]
    fn a_vertex_packs_into_8_bytes_and_unpacks_to_what_was_packed() {
        assert_eq!(std::mem::size_of::<Vertex>(), 8);
        assert_eq!(VERTEX_BYTES, 8);
        for (position, face, ao, lowered, layer, sun, block) in [
            ([32, 0, 17], 5, 3, true, 0xffff, 60, 0),
            ([0, 32, 32], 0, 0, false, 0, 0, 60),
            ([5, 31, 1], 3, 2, true, 1234, 37, 41),
        ] {
            let v = Vertex::pack(position, face, ao, lowered, layer, sun, block);
            assert_eq!(v.corner(), position);
            assert_eq!(v.face(), face);
            assert_eq!(v.ao(), ao);
            assert_eq!(v.lowered(), lowered);
            assert_eq!(v.layer(), layer);
            assert_eq!(v.sun_sum(), sun);
            assert_eq!(v.block_sum(), block);
            let drop = if lowered { LIQUID_DROP } else { 0.0 };
            let [x, y, z] = position.map(|c| c as f32);
            assert_eq!(v.position(), [x, y - drop, z]);
            let bytes = v.to_bytes();
            assert_eq!(u32::from_le_bytes(bytes[..4].try_into().unwrap()), v.a);
            assert_eq!(u32::from_le_bytes(bytes[4..].try_into().unwrap()), v.b);
        }
        // Each field keeps to its bits: all ones in one leave the others 0.
        let v = Vertex::pack([63, 0, 0], 0, 0, false, 0, 63, 0);
        assert_eq!(
            (v.corner(), v.face(), v.block_sum(), v.layer()),
            ([63, 0, 0], 0, 0, 0)
        );
    }

    #[test]
    fn the_rows_along_y_and_z_hold_the_same_voxels_as_the_rows_along_x() {
        let mut masks = Masks::new();
        let mut seed = 0x1234_5678_u64;
        for py in 0..PADDED {
            for pz in 0..PADDED {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                // Planes of every kind: empty (z < 4), full (z > 30), mixed.
                let full = (1u64 << PADDED) - 1;
                masks.0[0][pz + PADDED * py] = match pz {
                    0..4 => 0,
                    31.. => full,
                    _ if py == 7 => full,
                    _ => seed & full,
                };
            }
        }
        masks.transpose_from_x();
        for px in 0..PADDED {
            for py in 0..PADDED {
                for pz in 0..PADDED {
                    let bit = (masks.0[0][pz + PADDED * py] >> px) & 1;
                    assert_eq!(
                        (masks.0[1][px + PADDED * pz] >> py) & 1,
                        bit,
                        "y row {px} {py} {pz}"
                    );
                    assert_eq!(
                        (masks.0[2][py + PADDED * px] >> pz) & 1,
                        bit,
                        "z row {px} {py} {pz}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_lone_voxel_has_six_open_faces() {
        let mesh = mesh_chunk(&world(&[[5, 5, 5]]), &table());
        assert_eq!(mesh.quads(), 6);
        assert_eq!(mesh.solid.len(), 24);
        assert!(mesh.vertices().all(|v| v.ao() == 3));
        assert!(
            mesh.vertices()
                .all(|v| v.sun_sum() == 60 && v.block_sum() == 0),
            "no light: full sun"
        );
        let layers: Vec<u32> = (0..6)
            .map(|f| {
                mesh.vertices()
                    .find(|v| v.face() == f)
                    .map_or(99, Vertex::layer)
            })
            .collect();
        assert_eq!(layers, [2, 2, 3, 4, 2, 2]);
    }

    #[test]
    fn faces_between_two_voxels_are_culled_and_the_rest_merged() {
        let neighbourhood = world(&[[5, 5, 5], [6, 5, 5]]);
        let naive = mesh_chunk_naive(&neighbourhood, &table());
        assert_eq!(naive.quads(), 10, "12 faces less the 2 touching");
        let greedy = mesh_chunk(&neighbourhood, &table());
        assert_eq!(greedy.quads(), 6, "each long side merged into one quad");
    }

    #[test]
    fn a_buried_voxel_draws_nothing_and_a_full_chunk_only_its_outside() {
        let mut solid = Vec::new();
        for z in 4..7 {
            for y in 4..7 {
                for x in 4..7 {
                    solid.push([x, y, z]);
                }
            }
        }
        let naive = mesh_chunk_naive(&world(&solid), &table());
        assert_eq!(naive.quads(), 6 * 9, "a 3×3×3 cube shows 9 faces a side");
        let greedy = mesh_chunk(&world(&solid), &table());
        assert!(
            greedy.quads() >= 6 && greedy.quads() < naive.quads(),
            "{}",
            greedy.quads()
        );
    }

    #[test]
    fn faces_towards_chunks_not_held_are_not_drawn() {
        let held = HashMap::from([([0, 0, 0], chunk_from_fn([0, 0, 0], |_| STONE))]);
        let mesh = mesh_chunk(&Neighbourhood::gather([0, 0, 0], &held), &table());
        assert_eq!(mesh.quads(), 0);
    }

    #[test]
    fn ambient_occlusion_darkens_corners_against_a_wall() {
        assert_eq!(vertex_ao(false, false, false), 3);
        assert_eq!(vertex_ao(true, false, false), 2);
        assert_eq!(vertex_ao(false, false, true), 2);
        assert_eq!(vertex_ao(true, false, true), 1);
        assert_eq!(vertex_ao(true, true, false), 0);
        // A floor voxel with a wall voxel on top of its +x neighbour: the
        // floor's top face is darker at its +x edge only.
        let mesh = mesh_chunk_naive(&world(&[[5, 5, 5], [6, 6, 5]]), &table());
        let top: Vec<&Vertex> = mesh
            .vertices()
            .filter(|v| v.face() == 2 && v.position()[1] == 6.0 && v.position()[0] <= 6.0)
            .collect();
        assert_eq!(top.len(), 4);
        for v in top {
            let expected = if v.position()[0] == 6.0 { 2 } else { 3 };
            assert_eq!(v.ao(), expected, "{v:?}");
        }
    }

    /// Light bytes of the chunk at the origin: `f` of the chunk position.
    fn light_of(f: impl Fn([usize; 3]) -> u8) -> ChunkLight {
        let mut light = vec![0u8; CHUNK_VOLUME];
        for (i, l) in light.iter_mut().enumerate() {
            *l = f([i % SIZE, i / SIZE % SIZE, i / (SIZE * SIZE)]);
        }
        light.into()
    }

    /// The top face's vertex of `mesh` at corner `at`.
    fn top_corner(mesh: &ChunkMesh, at: [u32; 3]) -> Vertex {
        *mesh
            .vertices()
            .find(|v| v.face() == 2 && v.corner() == at)
            .unwrap_or_else(|| panic!("no top vertex at {at:?}: {mesh:?}"))
    }

    #[test]
    fn a_corner_carries_the_sum_of_the_light_of_the_four_voxels_in_front_around_it() {
        // A floor voxel at (5, 5, 5); above it, around its top face, block
        // light 12 (in front), 8 (+x), 4 (+z), 0 (+x+z), and sunlight 15
        // only in front.
        let levels = |p: [usize; 3]| -> u8 {
            match p {
                [5, 6, 5] => 0xf0 | 12,
                [6, 6, 5] => 8,
                [5, 6, 6] => 4,
                _ => 0,
            }
        };
        let mut neighbourhood = world(&[[5, 5, 5]]);
        neighbourhood.lights[13] = Some(light_of(levels));
        let mesh = mesh_chunk(&neighbourhood, &table());
        let sums = |v: Vertex| (v.block_sum(), v.sun_sum());
        assert_eq!(sums(top_corner(&mesh, [6, 6, 6])), (12 + 8 + 4, 15));
        assert_eq!(sums(top_corner(&mesh, [6, 6, 5])), (12 + 8, 15));
        assert_eq!(sums(top_corner(&mesh, [5, 6, 6])), (12 + 4, 15));
        assert_eq!(sums(top_corner(&mesh, [5, 6, 5])), (12, 15));
        // An opaque voxel on the diagonal (+x+z) counts as the mean of the
        // three others, and darkens the corner.
        let mut neighbourhood = world(&[[5, 5, 5], [6, 6, 6]]);
        neighbourhood.lights[13] = Some(light_of(levels));
        let mesh = mesh_chunk(&neighbourhood, &table());
        let corner = top_corner(&mesh, [6, 6, 6]);
        assert_eq!(sums(corner), ((12 + 8 + 4) * 4 / 3, 20));
        assert_eq!(corner.ao(), 2);
        assert_eq!(sums(top_corner(&mesh, [5, 6, 5])), (12, 15));
    }

    #[test]
    fn faces_merge_only_when_their_corners_are_alike() {
        let solid: Vec<[i32; 3]> = (0..8).map(|x| [x, 5, 5]).collect();
        let mut neighbourhood = world(&solid);
        let top = |mesh: &ChunkMesh| mesh.vertices().filter(|v| v.face() == 2).count() / 4;
        assert_eq!(
            top(&mesh_chunk(&neighbourhood, &table())),
            1,
            "all alike: one quad"
        );
        // Full sun above, block light 10 over x = 6: the faces whose
        // corners see it differ (x = 5, 6, 7), the rest still merge.
        neighbourhood.lights[13] =
            Some(light_of(|p| if p == [6, 6, 5] { 0xf0 | 10 } else { 0xf0 }));
        let mesh = mesh_chunk(&neighbourhood, &table());
        assert_eq!(top(&mesh), 4, "x 0..5 merged, then one quad each");
        for quad in quads(&mesh.solid).filter(|q| q[0].face() == 2) {
            let xs: Vec<u32> = quad.iter().map(|v| v.corner()[0]).collect();
            let (min, max) = (xs.iter().min().unwrap(), xs.iter().max().unwrap());
            if max - min > 1 {
                assert_eq!((*min, *max), (0, 5));
                assert!(quad.iter().all(|v| v.block_sum() == 0 && v.sun_sum() == 60));
            }
        }
    }

    /// Where the level steps down, the higher water's side beside the
    /// lower one's lowered top is drawn (its whole height), so no slit
    /// opens between them; the lower one's side towards it is not.
    #[test]
    fn a_liquid_step_closes_the_slit_beside_a_lowered_top() {
        let water = [[5, 5, 5], [5, 6, 5], [6, 5, 5]];
        let mesh = mesh_chunk(
            &world_of(|p| if water.contains(&p) { WATER } else { AIR }),
            &table(),
        );
        let side = |face: usize, x: u32, y: u32| {
            quads(&mesh.blended).any(|q| {
                q[0].face() == face
                    && q.iter().all(|v| v.corner()[0] == x)
                    && q.iter().any(|v| v.corner()[1] == y)
                    && q.iter().all(|v| (y..=y + 1).contains(&v.corner()[1]))
            })
        };
        assert!(side(0, 6, 5), "the column's +x side at y = 5: {mesh:?}");
        assert!(
            quads(&mesh.blended)
                .filter(|q| q[0].face() == 0 && q[0].corner()[0] == 6)
                .all(|q| q.iter().all(|v| !v.lowered() || v.corner()[1] == 7))
        );
        assert!(!side(1, 6, 5), "the lower one's -x side stays culled");
        // A flat pond: no side between its voxels.
        let pond = mesh_chunk(
            &world_of(|p| {
                if p[1] == 5 && (4..8).contains(&p[0]) && p[2] == 5 {
                    WATER
                } else {
                    AIR
                }
            }),
            &table(),
        );
        assert!(
            quads(&pond.blended).all(|q| {
                let x = q[0].corner()[0];
                !(q[0].face() < 2 && (5..8).contains(&x))
            }),
            "{pond:?}"
        );
    }

    #[test]
    fn a_liquid_top_is_lowered_but_not_under_the_same_liquid() {
        let water = [[5, 5, 5], [5, 6, 5]];
        let mesh = mesh_chunk(
            &world_of(|p| if water.contains(&p) { WATER } else { AIR }),
            &table(),
        );
        assert!(mesh.solid.is_empty() && mesh.cutout.is_empty());
        assert_eq!(mesh.quads(), 4 * 2 + 2, "4 sides × 2 voxels, top, bottom");
        let tops: Vec<&Vertex> = mesh.blended.iter().filter(|v| v.face() == 2).collect();
        assert_eq!(tops.len(), 4, "no top face between the two water voxels");
        assert!(
            tops.iter()
                .all(|v| v.lowered() && v.position()[1] == 7.0 - LIQUID_DROP)
        );
        for v in &mesh.blended {
            // Only what reaches the upper voxel's top is lowered: the lower
            // voxel's sides end under water, at y = 6, at full height.
            assert_eq!(v.lowered(), v.corner()[1] == 7, "{v:?}");
        }
        // Under a stone the top is hidden; beside stone the side is too.
        let mesh = mesh_chunk(
            &world_of(|p| match p {
                [5, 5, 5] => WATER,
                [5, 6, 5] | [6, 5, 5] => STONE,
                _ => AIR,
            }),
            &table(),
        );
        assert_eq!(quads(&mesh.blended).count(), 4);
        assert!(quads(&mesh.blended).all(|q| q[0].face() != 2 && q[0].face() != 0));
    }

    /// The far table: leaves are opaque (the stone's face towards them is
    /// hidden, theirs go to the solid list) and corners are flat, so a
    /// floor beside a wall merges into one quad where full detail splits
    /// it by its ambient occlusion.
    #[test]
    fn far_chunks_draw_leaves_opaque_and_corners_flat_with_fewer_quads() {
        let trees = world_of(|p| match p {
            [5, 5, 5] => STONE,
            [6, 5, 5] | [7, 5, 5] => LEAVES,
            _ => AIR,
        });
        let far = mesh_chunk(&trees, &table().far());
        assert!(far.cutout.is_empty(), "{far:?}");
        // The stone's 5 faces (not the one against the leaves) and the two
        // leaves' 5 (merged; not the one against the stone).
        assert_eq!(quads(&far.solid).count(), 5 + 5, "{far:?}");
        assert!(quads(&far.solid).all(|q| q[0].face() != 0 || q[0].layer() == 6));
        let full = mesh_chunk(&trees, &table());
        assert_eq!(quads(&full.cutout).count(), 5);

        let floor_and_wall = world_of(|p| {
            let floor = p[1] == 4 && (0..8).contains(&p[0]) && (0..8).contains(&p[2]);
            let wall = p[1] == 5 && p[0] == 7 && (0..8).contains(&p[2]);
            if floor || wall { STONE } else { AIR }
        });
        let top_quads = |mesh: &ChunkMesh| quads(&mesh.solid).filter(|q| q[0].face() == 2).count();
        let full = mesh_chunk(&floor_and_wall, &table());
        let far = mesh_chunk(&floor_and_wall, &table().far());
        assert!(top_quads(&full) > 2, "the wall's foot is darker: {full:?}");
        assert_eq!(top_quads(&far), 2, "the floor and the wall's top");
        assert!(far.vertices().all(|v| v.ao() == 3));
        assert!(far.triangles() < full.triangles());
    }

    #[test]
    fn leaves_hide_neither_their_neighbours_nor_are_hidden_by_other_leaves_faces_between_them() {
        let mesh = mesh_chunk_naive(
            &world_of(|p| match p {
                [5, 5, 5] => STONE,
                [6, 5, 5] | [7, 5, 5] => LEAVES,
                _ => AIR,
            }),
            &table(),
        );
        assert_eq!(
            quads(&mesh.solid).count(),
            6,
            "the stone's face towards the leaves is drawn"
        );
        assert!(quads(&mesh.solid).any(|q| q[0].face() == 0));
        // 12 faces of two leaves, less the 2 between them and the one
        // against the stone.
        assert_eq!(quads(&mesh.cutout).count(), 9);
        assert!(mesh.blended.is_empty());
        assert!(quads(&mesh.cutout).all(|q| q[0].layer() == 6));
        let greedy = mesh_chunk(
            &world_of(|p| {
                if p == [6, 5, 5] || p == [7, 5, 5] {
                    LEAVES
                } else {
                    AIR
                }
            }),
            &table(),
        );
        assert_eq!(
            quads(&greedy.cutout).count(),
            6,
            "two leaves merge like a block"
        );
    }

    #[test]
    fn glass_hides_glass_but_not_water_or_stone() {
        let two = world_of(|p| {
            if p == [5, 5, 5] || p == [6, 5, 5] {
                GLASS
            } else {
                AIR
            }
        });
        assert_eq!(mesh_chunk_naive(&two, &table()).blended.len() / 4, 10);
        let mesh = mesh_chunk(&two, &table());
        assert_eq!((mesh.quads(), mesh.blended.len() / 4), (6, 6));
        let mixed = mesh_chunk_naive(
            &world_of(|p| match p {
                [5, 5, 5] => GLASS,
                [6, 5, 5] => WATER,
                [4, 5, 5] => STONE,
                _ => AIR,
            }),
            &table(),
        );
        // Glass and water both draw their faces between them; the stone
        // draws its face towards the glass, the glass not towards the stone.
        assert_eq!(quads(&mixed.blended).count(), 5 + 6);
        assert_eq!(quads(&mixed.solid).count(), 6);
    }

    /// A deterministic jumble of stone, water, leaves and glass, with light
    /// varying from voxel to voxel.
    fn jumble() -> Neighbourhood {
        let hash = |p: [i32; 3]| -> u32 {
            let mut h = (p[0] as u32).wrapping_mul(0x9e37_79b9)
                ^ (p[1] as u32).wrapping_mul(0x85eb_ca6b)
                ^ (p[2] as u32).wrapping_mul(0xc2b2_ae35);
            h ^= h >> 15;
            h = h.wrapping_mul(0x2c1b_3c6d);
            h ^ (h >> 12)
        };
        let mut neighbourhood = world_of(|p| {
            let ground = 10 + (p[0] + p[2]).rem_euclid(7);
            match hash(p) % 16 {
                _ if p[1] < ground - 3 => STONE,
                0..=5 if p[1] < ground => STONE,
                6 if p[1] < ground => GLASS,
                7 => LEAVES,
                8 if p[1] < ground + 4 => WATER,
                _ if p[1] < 6 => WATER,
                _ => AIR,
            }
        });
        neighbourhood.lights[13] = Some(light_of(|p| {
            let h = hash(p.map(|c| c as i32 + 1000));
            if h % 5 == 0 {
                (h % 256) as u8
            } else {
                0xf0 | (p[1] / 3) as u8
            }
        }));
        neighbourhood
    }

    #[test]
    fn the_merged_mesh_covers_exactly_the_naive_faces_with_their_corners() {
        let neighbourhood = jumble();
        let naive = mesh_chunk_naive(&neighbourhood, &table());
        let greedy = mesh_chunk(&neighbourhood, &table());
        assert!(naive.quads() > 1000, "{}", naive.quads());
        assert!(greedy.quads() < naive.quads());
        for list in [&naive.solid, &naive.cutout, &naive.blended] {
            assert!(!list.is_empty());
        }
        // Each naive face by its list, face and corners, vertices sorted.
        let key = |q: &[Vertex]| {
            let mut vs: Vec<(u32, u32)> = q.iter().map(|v| (v.a, v.b)).collect();
            vs.sort_unstable();
            vs
        };
        let mut faces: HashMap<(usize, Vec<(u32, u32)>), usize> = HashMap::new();
        for (l, list) in [&naive.solid, &naive.cutout, &naive.blended]
            .into_iter()
            .enumerate()
        {
            for q in quads(list) {
                *faces.entry((l, key(q))).or_default() += 1;
            }
        }
        for (l, list) in [&greedy.solid, &greedy.cutout, &greedy.blended]
            .into_iter()
            .enumerate()
        {
            for q in quads(list) {
                let lo = [0, 1, 2].map(|a| q.iter().map(|v| v.corner()[a]).min().unwrap_or(0));
                let hi = [0, 1, 2].map(|a| q.iter().map(|v| v.corner()[a]).max().unwrap_or(0));
                let face = q[0].face();
                let d = face / 2;
                let (u, v) = ((d + 1) % 3, (d + 2) % 3);
                let units = (hi[u] - lo[u]) * (hi[v] - lo[v]);
                if units > 1 {
                    assert!(
                        q.iter().all(|x| x.b == q[0].b && x.a >> 18 == q[0].a >> 18),
                        "merged corners differ: {q:?}"
                    );
                }
                for j in lo[v]..hi[v] {
                    for i in lo[u]..hi[u] {
                        let unit: Vec<Vertex> = [(0, 0), (1, 0), (1, 1), (0, 1)]
                            .iter()
                            .map(|&(du, dv)| {
                                let mut p = lo;
                                p[u] = i + du;
                                p[v] = j + dv;
                                let like = if units > 1 {
                                    q[0]
                                } else {
                                    *q.iter().find(|x| x.corner() == p).expect("a corner")
                                };
                                Vertex {
                                    a: like.a & !0x3ffff | p[0] | p[1] << 6 | p[2] << 12,
                                    b: like.b,
                                }
                            })
                            .collect();
                        let k = (l, key(&unit));
                        let left = faces.get_mut(&k).unwrap_or_else(|| {
                            panic!("list {l}: {unit:?} of {q:?} is no naive face")
                        });
                        *left -= 1;
                        if *left == 0 {
                            faces.remove(&k);
                        }
                    }
                }
            }
        }
        assert!(faces.is_empty(), "naive faces not covered: {}", faces.len());
    }

    #[test]
    fn quads_wind_counter_clockwise_seen_from_outside() {
        for mesh in [
            mesh_chunk(&world(&[[5, 5, 5]]), &table()),
            mesh_chunk(&jumble(), &table()),
        ] {
            for list in [&mesh.solid, &mesh.cutout, &mesh.blended] {
                for quad in quads(list) {
                    for tri in [[0, 1, 2], [0, 2, 3]] {
                        let [a, b, c] = tri.map(|i| glam::Vec3::from(quad[i].position()));
                        let normal = (b - a).cross(c - a).normalize();
                        let face = quad[0].face();
                        let expected = glam::Vec3::from(NORMALS[face].map(|c| c as f32));
                        assert!(
                            normal.dot(expected) > 0.99,
                            "face {face}: {normal} {quad:?}"
                        );
                    }
                }
            }
        }
    }
}
