//! Chunk meshing: a chunk's voxels (with a one-voxel border from its
//! neighbours) into triangles, hidden faces culled, coplanar faces of the
//! same texture and light merged greedily, each vertex carrying its
//! ambient occlusion (0 = fully occluded corner, 3 = open) and the light
//! of the voxel in front of its face (the server's sunlight and block
//! light; full sun where a chunk's light has not come).
//!
//! Owns: the padded voxel volume, what is drawn (the [`MeshTable`]: each
//! type id's kind and texture layer per face), the greedy mesher and the
//! naive one-quad-per-visible-face mesher the benchmark compares it with,
//! and the worker thread meshing off the render thread. Does not own: GPU
//! buffers (`render::gpu`), textures (`render::atlas`), which chunks are
//! held (`world`).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

use buildat_voxel::geometry::{CHUNK_SIZE, CHUNK_VOLUME, Pos, chunk_origin};
use buildat_voxel::light::FULL_SUN;
use buildat_voxel::{AIR, MAX_TYPE_ID};
use crossbeam_channel::{Receiver, Sender};

const SIZE: usize = CHUNK_SIZE as usize;
/// The padded volume's side: the chunk plus one voxel of each neighbour.
const PADDED: usize = SIZE + 2;

/// How a voxel type is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Not drawn, hides nothing.
    Empty,
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
#[derive(Debug, Clone, Default)]
pub struct MeshTable {
    entries: Vec<(Kind, [u32; 6])>,
}

impl MeshTable {
    pub fn new(entries: Vec<(Kind, [u32; 6])>) -> Self {
        Self { entries }
    }

    pub fn kind(&self, voxel: u32) -> Kind {
        let id = voxel & MAX_TYPE_ID;
        if id == AIR {
            return Kind::Empty;
        }
        self.entries
            .get(id as usize)
            .map_or(Kind::Opaque, |(kind, _)| *kind)
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
        let at = |i: usize| -> Pos {
            let offset = [i % 3, i / 3 % 3, i / 9].map(|o| o as i32 - 1);
            std::array::from_fn(|a| chunk[a] + offset[a])
        };
        Self {
            neighbours: std::array::from_fn(|i| held.get(&at(i)).cloned()),
            lights: std::array::from_fn(|i| lights.get(&at(i)).cloned()),
        }
    }

    /// The padded volume of kinds, values and light, `PADDED`³, x fastest.
    fn padded(&self, table: &MeshTable) -> (Vec<Kind>, Vec<u32>, Vec<u8>) {
        let mut kinds = vec![Kind::Opaque; PADDED * PADDED * PADDED];
        let mut values = vec![AIR; PADDED * PADDED * PADDED];
        let mut light = vec![FULL_SUN; PADDED * PADDED * PADDED];
        for pz in 0..PADDED {
            for py in 0..PADDED {
                for px in 0..PADDED {
                    let [cx, cy, cz] = [px, py, pz].map(chunk_step);
                    let Some(Some(chunk)) = self.neighbours.get(cx + 3 * cy + 9 * cz) else {
                        continue;
                    };
                    let [lx, ly, lz] = [px, py, pz].map(|p| (p + SIZE - 1) % SIZE);
                    let index = lx + SIZE * (ly + SIZE * lz);
                    let value = chunk.get(index).copied().unwrap_or(AIR);
                    let at = px + PADDED * (py + PADDED * pz);
                    kinds[at] = table.kind(value);
                    values[at] = value;
                    if let Some(Some(lit)) = self.lights.get(cx + 3 * cy + 9 * cz) {
                        light[at] = lit.get(index).copied().unwrap_or(FULL_SUN);
                    }
                }
            }
        }
        (kinds, values, light)
    }
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

/// Unit normals of the six faces, in `VoxelDefinition::textures` order.
const NORMALS: [[i32; 3]; 6] = buildat_voxel::geometry::FACES;

/// Whether a face of `voxel` is drawn against `neighbour`.
fn face_visible(voxel: Kind, neighbour: Kind) -> bool {
    match voxel {
        Kind::Empty => false,
        Kind::Opaque => neighbour != Kind::Opaque,
        Kind::Cutout | Kind::Blended | Kind::Liquid => neighbour == Kind::Empty,
    }
}

/// What must match for two faces to merge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FaceKey {
    kind: Kind,
    layer: u32,
    ao: [u8; 4],
    /// The light byte of the voxel in front of the face.
    light: u8,
}

/// The padded volume and how to read it.
struct Volume {
    kinds: Vec<Kind>,
    values: Vec<u32>,
    light: Vec<u8>,
}

impl Volume {
    /// The chunk and its neighbours' borders, padded, as the meshers read them.
    fn gather(neighbourhood: &Neighbourhood, table: &MeshTable) -> Self {
        let (kinds, values, light) = neighbourhood.padded(table);
        Self {
            kinds,
            values,
            light,
        }
    }

    fn at(p: [i32; 3]) -> usize {
        let [x, y, z] = p.map(|c| (c + 1) as usize);
        x + PADDED * (y + PADDED * z)
    }

    fn kind(&self, p: [i32; 3]) -> Kind {
        self.kinds.get(Self::at(p)).copied().unwrap_or(Kind::Opaque)
    }

    fn value(&self, p: [i32; 3]) -> u32 {
        self.values.get(Self::at(p)).copied().unwrap_or(AIR)
    }

    fn light(&self, p: [i32; 3]) -> u8 {
        self.light.get(Self::at(p)).copied().unwrap_or(FULL_SUN)
    }

    fn opaque(&self, p: [i32; 3]) -> bool {
        self.kind(p) == Kind::Opaque
    }

    /// The face of the voxel at `p` facing `face`, if drawn.
    fn face(&self, table: &MeshTable, p: [i32; 3], face: usize) -> Option<FaceKey> {
        let n = NORMALS[face];
        let front = add(p, n);
        if !face_visible(self.kind(p), self.kind(front)) {
            return None;
        }
        let (u, v) = face_axes(face);
        let corners = [(-1, -1), (1, -1), (1, 1), (-1, 1)];
        let ao = corners.map(|(du, dv)| {
            let side1 = self.opaque(add(front, scale(u, du)));
            let side2 = self.opaque(add(front, scale(v, dv)));
            let corner = self.opaque(add(add(front, scale(u, du)), scale(v, dv)));
            vertex_ao(side1, side2, corner)
        });
        Some(FaceKey {
            kind: self.kind(p),
            layer: table.layer(self.value(p), face),
            ao,
            light: self.light(front),
        })
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

fn add(a: [i32; 3], b: [i32; 3]) -> [i32; 3] {
    [a[0] + b[0], a[1] + b[1], a[2] + b[2]]
}

fn scale(a: [i32; 3], s: i32) -> [i32; 3] {
    a.map(|c| c * s)
}

fn unit(axis: usize) -> [i32; 3] {
    std::array::from_fn(|i| i32::from(i == axis))
}

/// The two in-plane axes of a face, as unit vectors, ordered so that
/// (u, v, normal) is right-handed for positive faces.
fn face_axes(face: usize) -> ([i32; 3], [i32; 3]) {
    let d = face / 2;
    (unit((d + 1) % 3), unit((d + 2) % 3))
}

/// Appends one quad: `at` is the voxel (chunk-relative) whose face it
/// starts at, `w`×`h` voxels along u and v.
fn push_quad(mesh: &mut ChunkMesh, face: usize, at: [i32; 3], size: [i32; 2], key: FaceKey) {
    let d = face / 2;
    let positive = face.is_multiple_of(2);
    let (u, v) = face_axes(face);
    let mut corner = at;
    if positive {
        corner[d] += 1;
    }
    let [w, h] = size;
    let offsets = [(0, 0), (w, 0), (w, h), (0, h)];
    let sun = u32::from(key.light >> 4) * 4;
    let block = u32::from(key.light & 15) * 4;
    let vertices: [Vertex; 4] = std::array::from_fn(|i| {
        let (du, dv) = offsets[i];
        let p = add(add(corner, scale(u, du)), scale(v, dv));
        Vertex::pack(
            p.map(|c| c as u32),
            face,
            u32::from(key.ao[i]),
            false,
            key.layer,
            sun,
            block,
        )
    });
    // Split along the diagonal whose ends are lighter, so AO interpolates
    // without a visible seam; wind counter-clockwise seen from outside.
    let flip =
        u32::from(key.ao[0]) + u32::from(key.ao[2]) < u32::from(key.ao[1]) + u32::from(key.ao[3]);
    let order: [usize; 4] = match (flip, positive) {
        (false, true) => [0, 1, 2, 3],
        (false, false) => [0, 3, 2, 1],
        (true, true) => [1, 2, 3, 0],
        (true, false) => [1, 0, 3, 2],
    };
    let list = match key.kind {
        Kind::Cutout => &mut mesh.cutout,
        Kind::Blended | Kind::Liquid => &mut mesh.blended,
        Kind::Empty | Kind::Opaque => &mut mesh.solid,
    };
    list.extend(order.map(|i| vertices[i]));
}

/// Meshes one chunk: hidden faces culled, equal coplanar faces merged.
pub fn mesh_chunk(neighbourhood: &Neighbourhood, table: &MeshTable) -> ChunkMesh {
    let volume = Volume::gather(neighbourhood, table);
    let mut mesh = ChunkMesh::default();
    let n = CHUNK_SIZE;
    let mut mask: Vec<Option<FaceKey>> = vec![None; SIZE * SIZE];
    for face in 0..6 {
        let d = face / 2;
        let (u, v) = face_axes(face);
        let (ua, va) = ((d + 1) % 3, (d + 2) % 3);
        for slice in 0..n {
            for j in 0..n {
                for i in 0..n {
                    let p = add(add(scale(unit(d), slice), scale(u, i)), scale(v, j));
                    mask[i as usize + SIZE * j as usize] = volume.face(table, p, face);
                }
            }
            // Greedy: grow each face along u, then the row along v.
            for j in 0..SIZE {
                let mut i = 0;
                while i < SIZE {
                    let Some(key) = mask[i + SIZE * j] else {
                        i += 1;
                        continue;
                    };
                    let mut w = 1;
                    while i + w < SIZE && mask[i + w + SIZE * j] == Some(key) {
                        w += 1;
                    }
                    let mut h = 1;
                    'grow: while j + h < SIZE {
                        for k in 0..w {
                            if mask[i + k + SIZE * (j + h)] != Some(key) {
                                break 'grow;
                            }
                        }
                        h += 1;
                    }
                    for row in 0..h {
                        for k in 0..w {
                            mask[i + k + SIZE * (j + row)] = None;
                        }
                    }
                    let mut at = [0; 3];
                    at[d] = slice;
                    at[ua] = i as i32;
                    at[va] = j as i32;
                    push_quad(&mut mesh, face, at, [w as i32, h as i32], key);
                    i += w;
                }
            }
        }
    }
    mesh
}

/// The baseline: one quad per visible face, nothing merged (hidden faces
/// are still culled and AO still computed, so only the merging differs).
pub fn mesh_chunk_naive(neighbourhood: &Neighbourhood, table: &MeshTable) -> ChunkMesh {
    let volume = Volume::gather(neighbourhood, table);
    let mut mesh = ChunkMesh::default();
    for z in 0..CHUNK_SIZE {
        for y in 0..CHUNK_SIZE {
            for x in 0..CHUNK_SIZE {
                for face in 0..6 {
                    if let Some(key) = volume.face(table, [x, y, z], face) {
                        push_quad(&mut mesh, face, [x, y, z], [1, 1], key);
                    }
                }
            }
        }
    }
    mesh
}

/// A chunk to mesh; `generation` tells a result from a stale one.
pub struct MeshJob {
    pub chunk: Pos,
    pub generation: u64,
    pub neighbourhood: Neighbourhood,
    pub table: Arc<MeshTable>,
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
                    let mesh = mesh_chunk(&job.neighbourhood, &job.table);
                    let done = MeshDone {
                        chunk: job.chunk,
                        generation: job.generation,
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

    const STONE: u32 = 2;

    fn table() -> MeshTable {
        MeshTable::new(vec![
            (Kind::Empty, [0; 6]),
            (Kind::Opaque, [1; 6]),
            (Kind::Opaque, [2, 2, 3, 4, 2, 2]),
        ])
    }

    /// The chunk at the origin holding `solid` voxels; its neighbours air.
    fn world(solid: &[[i32; 3]]) -> Neighbourhood {
        let mut held = HashMap::new();
        for z in -1..=1 {
            for y in -1..=1 {
                for x in -1..=1 {
                    let chunk = [x, y, z];
                    held.insert(
                        chunk,
                        chunk_from_fn(chunk, |p| if solid.contains(&p) { STONE } else { AIR }),
                    );
                }
            }
        }
        Neighbourhood::gather([0, 0, 0], &held)
    }

    #[test]
    fn a_lone_voxel_has_six_open_faces() {
        let mesh = mesh_chunk(&world(&[[5, 5, 5]]), &table());
        assert_eq!(mesh.quads(), 6);
        assert!(mesh.vertices().all(|v| v.ao() == 3));
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

    #[test]
    fn faces_carry_the_light_in_front_of_them_and_merge_only_alike() {
        let solid: Vec<[i32; 3]> = (0..4).map(|x| [x, 5, 5]).collect();
        let mut neighbourhood = world(&solid);
        let full = mesh_chunk(&neighbourhood, &table());
        assert!(
            full.vertices()
                .all(|v| v.sun_sum() == 60 && v.block_sum() == 0),
            "no light: full sun"
        );
        // Above the row of voxels: a torch's light fading along +x.
        let mut light = vec![0u8; CHUNK_VOLUME];
        for x in 0..4 {
            light[x + SIZE * (6 + SIZE * 5)] = 14 - x as u8;
        }
        neighbourhood.lights[13] = Some(light.into());
        let mesh = mesh_chunk(&neighbourhood, &table());
        let tops: Vec<u32> = mesh
            .vertices()
            .filter(|v| v.face() == 2)
            .map(|v| v.block_sum() / 4)
            .collect();
        assert_eq!(tops.len(), 4 * 4, "a top quad per light level");
        for level in 11..=14 {
            assert_eq!(tops.iter().filter(|&&l| l == level).count(), 4);
        }
        assert!(mesh.quads() > full.quads());
    }

    #[test]
    fn quads_wind_counter_clockwise_seen_from_outside() {
        let mesh = mesh_chunk(&world(&[[5, 5, 5]]), &table());
        for quad in mesh.solid.chunks(4) {
            for tri in [[0, 1, 2], [0, 2, 3]] {
                let [a, b, c] = tri.map(|i| glam::Vec3::from(quad[i].position()));
                let normal = (b - a).cross(c - a).normalize();
                let face = quad[0].face();
                let expected = glam::Vec3::from(NORMALS[face].map(|c| c as f32));
                assert!(normal.dot(expected) > 0.99, "face {face}: {normal}");
            }
        }
    }
}
