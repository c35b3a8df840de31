//! The renderer: draws the session's world view with wgpu (Vulkan: real
//! GPUs and mesa's lavapipe), in a window (`window`) or offscreen into a
//! PNG (`offscreen`). The session (network, Lua, world view) runs on its
//! own thread and talks to the renderer through [`crate::frontend`];
//! headless sessions and bots never reach this module.
//!
//! Owns: the [`Scene`] both modes share: the frontend's copy of the held
//! chunks' voxels and light (a chunk is remeshed with its face neighbours
//! when its light changes), the registry and `client_data` files, the atlas built
//! from them, meshing through the worker thread (a chunk is remeshed when
//! it changes, with the neighbours an edit at its border touches), the
//! latest UI state, the view radius estimated from what is held, what
//! the eye is in (under water: the renderer's blue fog), and which chunks
//! it may see through open space (`visibility`, kept per chunk here).
//! - `mesh`: the chunk mesher and its worker thread.
//! - `atlas`: textures into layers, per-type layers per face.
//! - `camera`: matrices and the frustum.
//! - `easing`: where the window draws the boxes between their updates.
//! - `models`: glTF models (players, creatures): reading, animating, drawing.
//! - `player`: client-side movement, collision and the crosshair's ray.
//! - `gpu`: the device, pipelines, buffers and one frame's drawing.
//! - `pipeline`: wgpu set-up the renderers share (layout entries, pipelines).
//! - `png_rgba`: PNG files into RGBA8 texels.
//! - `visibility`: cave culling (chunks sealed off from the eye).
//! - `overlay`: the 2D layer: crosshair, text, hotbar.
//! - `offscreen`, `window`: the two frontends.
//!
//! Does not own: the session, Lua, or the wire (`app`, `sandbox`).

pub mod atlas;
pub mod camera;
pub mod easing;
pub mod gpu;
pub mod icons;
pub mod mesh;
pub mod models;
pub mod occlusion;
pub mod offscreen;
pub mod overlay;
pub mod pipeline;
pub mod player;
pub mod png_rgba;
pub mod ui_gpu;
pub mod visibility;
pub mod window;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use buildat_voxel::geometry::{CHUNK_SIZE, CHUNK_VOLUME, Pos, chunk_of_voxel, index_in_chunk};
use buildat_voxel::{MAX_TYPE_ID, VoxelRegistry};
use thiserror::Error;

use crate::frontend::{FrontendLink, ToFrontend};
use crate::sandbox::UiState;
use atlas::Atlas;
use mesh::{ChunkLight, ChunkMesh, ChunkVoxels, Kind, MeshJob, Mesher, Neighbourhood};

/// Mesh jobs in flight at once: the rest wait as dirty chunks, so a burst
/// of arrivals is meshed once each, nearest first, with its neighbours
/// as they are by then.
const MAX_IN_FLIGHT: usize = 2;

/// Chunks whose [`visibility::Connectivity`] is filled per frame at most
/// (the rest count as open until their turn).
const MAX_FILLS_PER_FRAME: usize = 32;

/// How much detail a chunk is meshed with, by its distance from the eye
/// (`Scene::detail_radius`, `Scene::coarse_radius`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Detail {
    /// Leaves with holes, ambient occlusion, smooth light.
    Full,
    /// The atlas's far table: leaves opaque, corners flat.
    Far,
    /// The far table over the chunk at half resolution.
    Coarse,
    /// The far table over the chunk at a quarter of its resolution.
    Quarter,
}

/// Chunks more than this many chunks past the coarse radius are meshed at
/// a quarter of their resolution ([`Detail::Quarter`]).
const QUARTER_PAST_COARSE: u32 = 1;

impl Detail {
    /// The fraction of the resolution the chunk is meshed at (1: whole).
    fn scale(self) -> u8 {
        match self {
            Self::Full | Self::Far => 1,
            Self::Coarse => 2,
            Self::Quarter => 4,
        }
    }
}

/// Sky colour (linear RGB), also the fog's.
pub const SKY: [f32; 3] = [0.45, 0.66, 0.92];

/// What can stop the renderer.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum RenderError {
    #[error("no GPU adapter (install a Vulkan driver, e.g. Debian's mesa-vulkan-drivers): {0}")]
    NoAdapter(String),
    #[error("cannot open the GPU device: {0}")]
    Device(String),
    #[error("cannot start the mesher thread: {0}")]
    Thread(std::io::Error),
    #[error("cannot read the frame back: {0}")]
    Readback(String),
    #[error("cannot write the screenshot: {0}")]
    Screenshot(#[from] crate::world::MapError),
    #[error(
        "no screenshot written: nothing of the world arrived before {0} (the session's own \
         error, if any, says why)"
    )]
    NothingArrived(&'static str),
    #[error("window: {0}")]
    Window(String),
}

/// The frontend's copy of the world, and its meshes in the making.
pub struct Scene {
    registry: Option<VoxelRegistry>,
    files: HashMap<String, Arc<[u8]>>,
    chunks: HashMap<Pos, ChunkVoxels>,
    lights: HashMap<Pos, ChunkLight>,
    atlas: Option<Atlas>,
    /// Bumped each time the atlas is rebuilt (the GPU copy follows it).
    pub atlas_version: u64,
    mesher: Mesher,
    generation: u64,
    /// The generation last submitted per chunk; a result of another is
    /// stale.
    pending: HashMap<Pos, u64>,
    /// Chunks to mesh, not submitted yet.
    dirty: HashSet<Pos>,
    /// Jobs submitted and not returned.
    in_flight: usize,
    /// Chunks whose mesh is an edit's (submitted first and waited for, so
    /// an edit shows within a frame or two).
    urgent: HashSet<Pos>,
    /// Held chunks that are all air (never meshed).
    empty: HashSet<Pos>,
    /// Where the camera is, for meshing the nearest chunks first.
    pub focus: Option<Pos>,
    /// Chunks up to this far from the focus are meshed in full detail,
    /// farther ones with the atlas's far table ([`mesh::MeshTable::far`]).
    pub detail_radius: u32,
    /// Chunks farther than this from the focus are meshed coarse
    /// ([`Detail::Coarse`]), and from [`QUARTER_PAST_COARSE`] chunks
    /// farther at a quarter of their resolution; at least `detail_radius`.
    pub coarse_radius: u32,
    /// Each chunk's detail in its latest mesh job (absent: not meshed).
    details: HashMap<Pos, Detail>,
    /// Lower-resolution copies of held chunks and their light by chunk
    /// and scale (2: [`mesh::halve_voxels`], an eighth of a chunk's
    /// bytes; 4: that halved again), made when a job needs them.
    reduced: HashMap<(Pos, u8), Arc<[u32]>>,
    reduced_lights: HashMap<(Pos, u8), Arc<[u8]>>,
    /// The focus and radii the held chunks' detail was last checked
    /// against.
    detail_checked: Option<(Option<Pos>, u32, u32)>,
    /// Meshes ready to upload (`None`: the chunk is gone).
    ready: Vec<(Pos, Option<ChunkMesh>)>,
    pub ui: UiState,
    /// Where the window draws the boxes (eased toward `ui.boxes`).
    pub eased_boxes: easing::EasedBoxes,
    /// The session ended.
    pub ended: bool,
    /// When the last chunk arrived.
    pub last_chunk_at: Option<Instant>,
    /// Chunks received (new or changed).
    pub chunks_received: u64,
    /// The frame being prepared (the window counts them).
    pub frame: u64,
    /// Edited chunks by the frame that received their update, until their
    /// new mesh is handed out.
    edit_received_at: HashMap<Pos, u64>,
    /// Edits drawn, by frames from the one that received the update to the
    /// one that draws it: 1, 2, more.
    pub edit_latency: [u64; 3],
    /// Which faces each held chunk's open space joins (filled lazily).
    connectivity: HashMap<Pos, visibility::Connectivity>,
    /// Bumped whenever a chunk or the atlas changes.
    world_version: u64,
    /// The last [`Self::reachable_chunks`]: from which chunk, at which
    /// world version.
    reach_cache: Option<(Pos, u64, Arc<HashSet<Pos>>)>,
}

impl Scene {
    /// The triangles of the boxes Lua set (`buildat.ui.set_box`: players,
    /// creatures, any node the game draws), for a frame of either frontend.
    /// Each where the window eased it ([`Self::ease_boxes`]), or where
    /// Lua set it.
    pub fn box_triangles(&self, out: &mut Vec<gpu::FlatVertex>) {
        for (id, b) in &self.ui.boxes {
            let [x, y, z] = self.eased_boxes.position(id, b).map(|v| v as f32);
            let [w, h] = b.size;
            gpu::box_triangles(
                glam::Vec3::new(x - w / 2.0, y, z - w / 2.0),
                glam::Vec3::new(x + w / 2.0, y + h, z + w / 2.0),
                b.colour,
                out,
            );
        }
    }

    /// Moves the drawn boxes toward where Lua set them, `seconds` after
    /// the last frame (the window; a screenshot draws them where they are).
    pub fn ease_boxes(&mut self, seconds: f64) {
        self.eased_boxes.ease(&self.ui.boxes, seconds);
    }

    pub fn new() -> Result<Self, RenderError> {
        Ok(Self {
            registry: None,
            files: HashMap::new(),
            chunks: HashMap::new(),
            lights: HashMap::new(),
            atlas: None,
            atlas_version: 0,
            mesher: Mesher::start().map_err(RenderError::Thread)?,
            generation: 0,
            pending: HashMap::new(),
            dirty: HashSet::new(),
            in_flight: 0,
            urgent: HashSet::new(),
            empty: HashSet::new(),
            focus: None,
            detail_radius: crate::settings::DEFAULT_DETAIL_RADIUS,
            coarse_radius: crate::settings::DEFAULT_COARSE_RADIUS,
            details: HashMap::new(),
            reduced: HashMap::new(),
            reduced_lights: HashMap::new(),
            detail_checked: None,
            ready: Vec::new(),
            ui: UiState::default(),
            eased_boxes: easing::EasedBoxes::default(),
            ended: false,
            last_chunk_at: None,
            chunks_received: 0,
            frame: 0,
            edit_received_at: HashMap::new(),
            edit_latency: [0; 3],
            connectivity: HashMap::new(),
            world_version: 0,
            reach_cache: None,
        })
    }

    /// A `client_data` file the session received (models read theirs).
    /// Every `client_data` file received, by full name.
    pub fn files(&self) -> &HashMap<String, Arc<[u8]>> {
        &self.files
    }

    pub fn file(&self, name: &str) -> Option<Arc<[u8]>> {
        self.files.get(name).cloned()
    }

    pub fn atlas(&self) -> Option<&Atlas> {
        self.atlas.as_ref()
    }

    /// A block's colour for the hotbar, from the atlas.
    pub fn swatch(&self, block: &str) -> Option<[u8; 3]> {
        self.atlas.as_ref()?.swatches.get(block).copied()
    }

    pub fn chunk_count(&self) -> usize {
        self.chunks.len()
    }

    /// Everything the session sent since the last call; then meshes what
    /// changed.
    pub fn receive(&mut self, link: &FrontendLink) {
        let mut remesh: HashSet<Pos> = HashSet::new();
        let mut rebuild_atlas = false;
        loop {
            let message = match link.from_session.try_recv() {
                Ok(message) => message,
                Err(crossbeam_channel::TryRecvError::Empty) => break,
                Err(crossbeam_channel::TryRecvError::Disconnected) => {
                    self.ended = true;
                    break;
                }
            };
            match message {
                ToFrontend::Registry(registry) => {
                    self.registry = Some(registry);
                    rebuild_atlas = true;
                }
                ToFrontend::File { name, content } => {
                    self.files.insert(name, content);
                    rebuild_atlas = self.registry.is_some();
                }
                ToFrontend::Chunk { chunk, voxels } => {
                    self.chunks_received += 1;
                    self.connectivity.remove(&chunk);
                    forget_reduced(&mut self.reduced, chunk);
                    self.world_version += 1;
                    self.last_chunk_at = Some(Instant::now());
                    let voxels: ChunkVoxels = voxels;
                    if voxels.iter().all(|v| v & MAX_TYPE_ID == buildat_voxel::AIR) {
                        self.empty.insert(chunk);
                    } else {
                        self.empty.remove(&chunk);
                    }
                    match self.chunks.insert(chunk, voxels.clone()) {
                        Some(old) => {
                            self.edit_received_at.entry(chunk).or_insert(self.frame);
                            let touched = touched_neighbours(chunk, &old, &voxels);
                            self.urgent.insert(chunk);
                            self.urgent.extend(touched.iter().copied());
                            remesh.insert(chunk);
                            remesh.extend(touched);
                        }
                        None => {
                            remesh.insert(chunk);
                            remesh.extend(face_neighbours(chunk));
                        }
                    }
                }
                ToFrontend::Light { chunk, light } => {
                    forget_reduced(&mut self.reduced_lights, chunk);
                    if self.lights.insert(chunk, light).is_some() {
                        // Relit (an edit): shown as soon as the edit is.
                        self.urgent.insert(chunk);
                    }
                    remesh.insert(chunk);
                    // Their faces towards this chunk read its light.
                    remesh.extend(face_neighbours(chunk));
                }
                ToFrontend::Unload { chunk } => {
                    self.chunks.remove(&chunk);
                    self.connectivity.remove(&chunk);
                    self.world_version += 1;
                    self.edit_received_at.remove(&chunk);
                    self.lights.remove(&chunk);
                    self.empty.remove(&chunk);
                    self.dirty.remove(&chunk);
                    self.pending.remove(&chunk);
                    self.details.remove(&chunk);
                    forget_reduced(&mut self.reduced, chunk);
                    forget_reduced(&mut self.reduced_lights, chunk);
                    self.ready.push((chunk, None));
                    remesh.extend(face_neighbours(chunk));
                }
                ToFrontend::Ui(ui) => self.ui = ui,
                ToFrontend::Ended => self.ended = true,
            }
        }
        if rebuild_atlas && let Some(registry) = &self.registry {
            self.atlas = Some(Atlas::build(registry, &self.files));
            self.atlas_version += 1;
            self.connectivity.clear();
            self.world_version += 1;
            remesh.extend(self.chunks.keys().copied());
        }
        for chunk in remesh {
            if self.empty.contains(&chunk) {
                // All air draws nothing, whatever its neighbours.
                if self.pending.remove(&chunk).is_some() || self.dirty.remove(&chunk) {
                    self.urgent.remove(&chunk);
                }
                self.ready.push((chunk, None));
            } else if self.chunks.contains_key(&chunk) {
                self.dirty.insert(chunk);
            }
        }
        let (dirty, pending) = (&self.dirty, &self.pending);
        self.urgent
            .retain(|c| dirty.contains(c) || pending.contains_key(c));
        self.submit_dirty();
    }

    /// Submits dirty chunks while fewer than [`MAX_IN_FLIGHT`] jobs run:
    /// edited ones first, then the nearest to the focus.
    fn submit_dirty(&mut self) {
        if self.atlas.is_none() {
            return; // everything is meshed once the atlas exists
        }
        self.check_detail();
        while self.in_flight < MAX_IN_FLIGHT && !self.dirty.is_empty() {
            let focus = self.focus.unwrap_or_default();
            let urgent = &self.urgent;
            let next = self.dirty.iter().copied().min_by_key(|c| {
                let distance: i64 = (0..3).map(|i| i64::from(c[i] - focus[i]).pow(2)).sum();
                (!urgent.contains(c), distance)
            });
            let Some(chunk) = next else { break };
            self.dirty.remove(&chunk);
            self.submit(chunk);
        }
    }

    /// The detail to mesh `chunk` with, its latest mesh being of detail
    /// `now` (`None`: never meshed): full within `detail_radius` chunks of
    /// the focus, far within `coarse_radius`, coarse within
    /// [`QUARTER_PAST_COARSE`] more, at a quarter resolution beyond. A
    /// chunk is as far as its nearest point from the middle of the focus
    /// chunk, so the 26 chunks around the focus are within one chunk. A
    /// chunk already meshed stays as it is within one chunk past a radius
    /// (so a player walking along a boundary does not remesh it back and
    /// forth).
    fn detail_for(&self, chunk: Pos, now: Option<Detail>) -> Detail {
        let Some(focus) = self.focus else {
            return Detail::Full;
        };
        // In half chunks, from the focus's middle to the chunk's nearest
        // point.
        let distance: i64 = (0..3)
            .map(|i| {
                (2 * (i64::from(chunk[i]) - i64::from(focus[i])).abs() - 1)
                    .max(0)
                    .pow(2)
            })
            .sum();
        let far = self.coarse_radius.max(self.detail_radius);
        let level = |slack: u32| {
            let within = |radius: u32| distance <= (2 * i64::from(radius + slack)).pow(2);
            if within(self.detail_radius) {
                Detail::Full
            } else if within(far) {
                Detail::Far
            } else if within(far + QUARTER_PAST_COARSE) {
                Detail::Coarse
            } else {
                Detail::Quarter
            }
        };
        match now {
            Some(now) => now.clamp(level(1), level(0)),
            None => level(0),
        }
    }

    /// The detail `chunk` is drawn with, or will be when first meshed.
    fn drawn_detail(&self, chunk: Pos) -> Detail {
        self.details
            .get(&chunk)
            .copied()
            .unwrap_or_else(|| self.detail_for(chunk, None))
    }

    /// Once the focus has moved to another chunk (or a radius changed):
    /// marks dirty the held chunks whose detail changes.
    fn check_detail(&mut self) {
        let now = Some((self.focus, self.detail_radius, self.coarse_radius));
        if self.detail_checked == now {
            return;
        }
        self.detail_checked = now;
        let changed: Vec<Pos> = self
            .chunks
            .keys()
            .filter(|c| !self.empty.contains(*c))
            .filter(|c| {
                self.details
                    .get(*c)
                    .is_some_and(|now| self.detail_for(**c, Some(*now)) != *now)
            })
            .copied()
            .collect();
        self.dirty.extend(changed);
    }

    /// `chunk`'s neighbourhood as each chunk is drawn, and the scale of
    /// each (1: whole): `chunk` itself at `scale`, and its face neighbours
    /// at their detail's, so a face at a border between two details is
    /// culled against what the other side draws (no crack where one side
    /// is lower). Edge and corner neighbours, which only shade corners,
    /// stay whole.
    fn neighbourhood(&mut self, chunk: Pos, scale: u8) -> (Neighbourhood, [u8; 27]) {
        const FACES: [usize; 6] = [4, 10, 12, 14, 16, 22];
        let mut neighbourhood = Neighbourhood::gather_lit(chunk, &self.chunks, &self.lights);
        let mut scales = [1; 27];
        for i in FACES.into_iter().chain([13]) {
            let at = mesh::neighbour_at(chunk, i);
            let drawn_at = if i == 13 {
                scale
            } else {
                self.drawn_detail(at).scale()
            };
            if drawn_at == 1 {
                continue;
            }
            let whole = self.chunks.get(&at);
            let Some(voxels) = reduced(&mut self.reduced, at, drawn_at, whole, mesh::halve_voxels)
            else {
                continue;
            };
            neighbourhood.neighbours[i] = Some(voxels);
            let whole = self.lights.get(&at);
            neighbourhood.lights[i] = reduced(
                &mut self.reduced_lights,
                at,
                drawn_at,
                whole,
                mesh::halve_light,
            );
            scales[i] = drawn_at;
        }
        (neighbourhood, scales)
    }

    fn submit(&mut self, chunk: Pos) {
        let Some((table, far_table)) = self
            .atlas
            .as_ref()
            .map(|a| (a.table.clone(), a.far_table.clone()))
        else {
            return;
        };
        let was = self.details.get(&chunk).copied();
        let detail = self.detail_for(chunk, was);
        if was.is_some_and(|was| was != detail) {
            // Their faces towards this chunk are culled against it as drawn.
            let neighbours = face_neighbours(chunk);
            self.dirty.extend(
                neighbours
                    .into_iter()
                    .filter(|n| self.details.contains_key(n) && !self.empty.contains(n)),
            );
        }
        self.details.insert(chunk, detail);
        let (neighbourhood, scales) = self.neighbourhood(chunk, detail.scale());
        self.in_flight += 1;
        self.generation += 1;
        self.pending.insert(chunk, self.generation);
        self.mesher.submit(MeshJob {
            chunk,
            generation: self.generation,
            neighbourhood,
            scales,
            table: if detail == Detail::Full {
                table
            } else {
                far_table
            },
        });
    }

    /// Collects finished meshes; waits up to `edit_wait` for edited chunks'
    /// meshes, so an edit reaches the screen in the next frame.
    pub fn collect(&mut self, edit_wait: Duration) {
        let until = Instant::now() + edit_wait;
        loop {
            for done in self.mesher.finished() {
                self.accept(done);
            }
            self.submit_dirty();
            if self.urgent.is_empty() || Instant::now() >= until {
                break;
            }
            if let Some(done) = self
                .mesher
                .wait(until.saturating_duration_since(Instant::now()))
            {
                self.accept(done);
            }
        }
    }

    fn accept(&mut self, done: mesh::MeshDone) {
        self.in_flight = self.in_flight.saturating_sub(1);
        if self.pending.get(&done.chunk) == Some(&done.generation) {
            self.pending.remove(&done.chunk);
            self.urgent.remove(&done.chunk);
            self.ready.push((done.chunk, Some(done.mesh)));
        }
    }

    /// Meshes to upload (`None`: drop the chunk's); they are drawn in the
    /// frame `self.frame`.
    pub fn take_ready(&mut self) -> Vec<(Pos, Option<ChunkMesh>)> {
        let ready = std::mem::take(&mut self.ready);
        for (chunk, _) in &ready {
            if let Some(received) = self.edit_received_at.remove(chunk) {
                let frames = self.frame.saturating_sub(received) + 1;
                let bucket = usize::try_from(frames - 1).unwrap_or(usize::MAX).min(2);
                self.edit_latency[bucket] += 1;
            }
        }
        ready
    }

    /// Whether every held chunk's latest mesh is done.
    pub fn meshing_idle(&self) -> bool {
        self.pending.is_empty() && self.dirty.is_empty()
    }

    /// A held voxel's value; `None` when its chunk is not held.
    fn voxel(&self, voxel: Pos) -> Option<u32> {
        let chunk = self.chunks.get(&chunk_of_voxel(voxel))?;
        chunk.get(index_in_chunk(voxel)).copied()
    }

    /// Whether a voxel blocks movement (anything drawn but a liquid:
    /// leaves, glass and ice too); `None` when its chunk is not held.
    pub fn solid(&self, voxel: Pos) -> Option<bool> {
        let value = self.voxel(voxel)?;
        Some(match &self.atlas {
            Some(atlas) => !matches!(atlas.table.kind(value), Kind::Empty | Kind::Liquid),
            None => value & MAX_TYPE_ID != buildat_voxel::AIR,
        })
    }

    /// Whether chunks behind nearer opaque terrain may be left undrawn
    /// seen from `eye` (`FrameExtras::occlusion`): not from inside an
    /// opaque voxel, whose faces the eye sees through, nor before the atlas.
    pub fn occludes_from(&self, eye: glam::Vec3) -> bool {
        let Some(atlas) = &self.atlas else {
            return false;
        };
        let voxel = eye.floor().as_ivec3().to_array();
        self.voxel(voxel)
            .is_none_or(|value| atlas.table.kind(value) != Kind::Opaque)
    }

    /// The held chunks `eye` may see through open space (cave culling,
    /// [`visibility::reachable`]); `None` (draw all) before the atlas or
    /// when the eye is outside the held chunks.
    pub fn reachable_chunks(&mut self, eye: glam::Vec3) -> Option<Arc<HashSet<Pos>>> {
        let atlas = self.atlas.as_ref()?;
        let start = chunk_of_voxel(eye.floor().as_ivec3().to_array());
        if let Some((from, version, set)) = &self.reach_cache
            && (*from, *version) == (start, self.world_version)
        {
            return Some(set.clone());
        }
        let mut bounds: Option<(Pos, Pos)> = None;
        for chunk in self.chunks.keys() {
            let (min, max) = bounds.get_or_insert((*chunk, *chunk));
            for a in 0..3 {
                min[a] = min[a].min(chunk[a]);
                max[a] = max[a].max(chunk[a]);
            }
        }
        let (min, max) = bounds?;
        if (0..3).any(|a| start[a] < min[a] || start[a] > max[a]) {
            return None;
        }
        // A screenshot (no window frame counted yet) fills every chunk's
        // at once; the window a few per frame.
        let budget = if self.frame == 0 {
            usize::MAX
        } else {
            MAX_FILLS_PER_FRAME
        };
        let mut filled = 0;
        let mut complete = true;
        for (chunk, voxels) in &self.chunks {
            if self.connectivity.contains_key(chunk) {
                continue;
            }
            if filled == budget {
                complete = false;
                break;
            }
            filled += 1;
            let joins = if self.empty.contains(chunk) {
                visibility::Connectivity::ALL
            } else {
                visibility::Connectivity::of(voxels, |v| atlas.table.kind(v) != Kind::Opaque)
            };
            self.connectivity.insert(*chunk, joins);
        }
        let connectivity = &self.connectivity;
        let set = Arc::new(visibility::reachable(start, (min, max), |c| {
            connectivity.get(&c).copied()
        }));
        if complete {
            self.reach_cache = Some((start, self.world_version, set.clone()));
        }
        Some(set)
    }

    /// Whether `eye` is inside a liquid: its voxel is one, below the
    /// lowered surface when the voxel above is not.
    pub fn underwater(&self, eye: glam::Vec3) -> bool {
        let Some(atlas) = &self.atlas else {
            return false;
        };
        let here = eye.floor().as_ivec3().to_array();
        let liquid = |p: Pos| {
            self.voxel(p)
                .is_some_and(|v| atlas.table.kind(v) == Kind::Liquid)
        };
        if !liquid(here) {
            return false;
        }
        let above = [here[0], here[1] + 1, here[2]];
        liquid(above) || eye.y - eye.y.floor() < 1.0 - mesh::LIQUID_DROP
    }

    /// The highest non-empty voxel's top in the column at (x, z), among
    /// held chunks.
    pub fn surface(&self, x: i32, z: i32) -> Option<i32> {
        let mut best: Option<i32> = None;
        for (chunk, voxels) in &self.chunks {
            if chunk[0] != x.div_euclid(CHUNK_SIZE) || chunk[2] != z.div_euclid(CHUNK_SIZE) {
                continue;
            }
            for ly in (0..CHUNK_SIZE).rev() {
                let y = chunk[1] * CHUNK_SIZE + ly;
                if best.is_some_and(|b| b > y) {
                    break;
                }
                let value = voxels
                    .get(index_in_chunk([x, y, z]))
                    .copied()
                    .unwrap_or_default();
                if value & MAX_TYPE_ID != buildat_voxel::AIR {
                    best = Some(y + 1);
                    break;
                }
            }
        }
        best
    }

    /// The view radius in voxels: the farthest held chunk's horizontal
    /// distance from `around`'s chunk (at least one chunk).
    pub fn view_radius(&self, around: [f32; 3]) -> f32 {
        let here = chunk_of_voxel(around.map(|v| v.floor() as i32));
        let chunks = self
            .chunks
            .keys()
            .map(|c| (c[0] - here[0]).abs().max((c[2] - here[2]).abs()))
            .max()
            .unwrap_or(1)
            .max(1);
        chunks as f32 * CHUNK_SIZE as f32
    }
}

/// `at`'s copy at 1/`scale` resolution (a power of two) of `whole`, kept
/// in `cache`; each scale is made from the one above it.
fn reduced<T>(
    cache: &mut HashMap<(Pos, u8), Arc<[T]>>,
    at: Pos,
    scale: u8,
    whole: Option<&Arc<[T]>>,
    halve: fn(&[T]) -> Option<Arc<[T]>>,
) -> Option<Arc<[T]>> {
    if scale <= 1 {
        return whole.cloned();
    }
    if let Some(kept) = cache.get(&(at, scale)) {
        return Some(kept.clone());
    }
    let above = reduced(cache, at, scale / 2, whole, halve)?;
    let made = halve(&above)?;
    cache.insert((at, scale), made.clone());
    Some(made)
}

/// Drops `chunk`'s lower-resolution copies.
fn forget_reduced<T>(cache: &mut HashMap<(Pos, u8), Arc<[T]>>, chunk: Pos) {
    for detail in [Detail::Coarse, Detail::Quarter] {
        cache.remove(&(chunk, detail.scale()));
    }
}

/// The six chunks sharing a face with `chunk`.
fn face_neighbours(chunk: Pos) -> Vec<Pos> {
    let mut out = Vec::with_capacity(6);
    for axis in 0..3 {
        for step in [-1, 1] {
            let mut n = chunk;
            n[axis] += step;
            out.push(n);
        }
    }
    out
}

/// The neighbours an edit of `chunk` changes the mesh of: those beside a
/// changed voxel on the chunk's border (their faces and ambient occlusion
/// read it), edges and corners included.
fn touched_neighbours(chunk: Pos, old: &[u32], new: &[u32]) -> HashSet<Pos> {
    let mut out = HashSet::new();
    let size = CHUNK_SIZE as usize;
    let last = CHUNK_SIZE - 1;
    for index in 0..CHUNK_VOLUME {
        if old.get(index) == new.get(index) {
            continue;
        }
        let local = [index % size, index / size % size, index / (size * size)].map(|c| c as i32);
        let steps = local.map(|c| {
            if c == 0 {
                [-1, 0]
            } else if c == last {
                [0, 1]
            } else {
                [0, 0]
            }
        });
        for dx in steps[0] {
            for dy in steps[1] {
                for dz in steps[2] {
                    if [dx, dy, dz] != [0, 0, 0] {
                        out.insert([chunk[0] + dx, chunk[1] + dy, chunk[2] + dz]);
                    }
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const AIR_VALUE: u32 = buildat_voxel::AIR;

    /// Chunks within the detail radius are meshed in full, then far up to
    /// the coarse radius, then coarse, by their nearest point's distance
    /// from the middle of the focus chunk; once meshed, within one chunk
    /// past a radius as they were. The eye entering another chunk marks
    /// dirty only the meshed chunks whose detail changes.
    #[test]
    fn chunks_are_meshed_with_less_detail_by_distance_and_remeshed_as_the_eye_moves() {
        let mut scene = Scene::new().expect("scene");
        scene.detail_radius = 2;
        scene.coarse_radius = 4;
        scene.focus = Some([0, 0, 0]);
        let new = |scene: &Scene, chunk| scene.detail_for(chunk, None);
        // 1.5 chunks away; the corner chunks around the focus 0.87.
        assert_eq!(new(&scene, [2, 0, 0]), Detail::Full);
        assert_eq!(new(&scene, [1, 1, 1]), Detail::Full);
        assert_eq!(new(&scene, [-1, -1, 1]), Detail::Full);
        // 2.12 and 2.5 away: far when new, full if they were.
        assert_eq!(new(&scene, [2, 2, 0]), Detail::Far);
        assert_eq!(new(&scene, [3, 0, 0]), Detail::Far);
        let was = |chunk, now| scene.detail_for(chunk, Some(now));
        assert_eq!(was([2, 0, 0], Detail::Far), Detail::Full);
        assert_eq!(was([3, 0, 0], Detail::Full), Detail::Full, "as it was");
        assert_eq!(was([3, 0, 0], Detail::Far), Detail::Far, "as it was");
        assert_eq!(was([4, 0, 0], Detail::Full), Detail::Far, "3.5 away");
        assert_eq!(new(&scene, [5, 0, 0]), Detail::Coarse, "4.5 away");
        assert_eq!(was([5, 0, 0], Detail::Far), Detail::Far, "as it was");
        assert_eq!(was([5, 0, 0], Detail::Coarse), Detail::Coarse);
        assert_eq!(was([6, 0, 0], Detail::Full), Detail::Coarse, "5.5 away");
        // A chunk past the coarse radius and one more: a quarter.
        assert_eq!(new(&scene, [6, 0, 0]), Detail::Quarter, "5.5 away");
        assert_eq!(was([6, 0, 0], Detail::Quarter), Detail::Quarter);
        assert_eq!(was([7, 0, 0], Detail::Coarse), Detail::Quarter, "6.5 away");
        assert_eq!(new(&scene, [3, 3, 3]), Detail::Coarse, "4.33 away");
        assert_eq!(was([3, 3, 3], Detail::Full), Detail::Far);
        let stone: ChunkVoxels = vec![1; CHUNK_VOLUME].into();
        for x in 0..8 {
            scene.chunks.insert([x, 0, 0], stone.clone());
            let detail = new(&scene, [x, 0, 0]);
            scene.details.insert([x, 0, 0], detail);
        }
        // 0..=2 full, 3 and 4 far, 5 coarse, 6 and 7 a quarter.
        scene.check_detail();
        assert!(scene.dirty.is_empty(), "{:?}", scene.dirty);
        scene.focus = Some([2, 0, 0]);
        scene.check_detail();
        // 3 and 4 now full; 5 (2.5 away) and 6 (3.5) far; 7 (4.5) coarse.
        let moved = HashSet::from([[3, 0, 0], [4, 0, 0], [5, 0, 0], [6, 0, 0], [7, 0, 0]]);
        assert_eq!(scene.dirty, moved);
        scene.dirty.clear();
        scene.check_detail();
        assert!(scene.dirty.is_empty(), "checked once per focus");
        scene.detail_radius = 6;
        scene.check_detail();
        let all_but_full = HashSet::from([[3, 0, 0], [4, 0, 0], [5, 0, 0], [6, 0, 0], [7, 0, 0]]);
        assert_eq!(scene.dirty, all_but_full);
    }

    /// A coarse chunk is meshed from its half-resolution copy, and a
    /// neighbour's faces towards it are culled against that copy: a step
    /// down at the border is closed by one side or the other.
    #[test]
    fn coarse_chunks_are_meshed_at_half_resolution_and_their_neighbours_see_them_so() {
        let mut voxels = vec![AIR_VALUE; CHUNK_VOLUME];
        // One voxel of stone alone at (1, 1, 1): a quarter-filled block
        // is air at half resolution.
        voxels[1 + 32 * (1 + 32)] = 1;
        let coarse = mesh::halve_voxels(&voxels).expect("a chunk");
        assert!(coarse.iter().all(|v| *v == AIR_VALUE));
        // Two stacked (a trunk): a column of the block, drawn.
        let mut trunk = vec![AIR_VALUE; CHUNK_VOLUME];
        trunk[3 + 32 * (2 + 32 * 3)] = 7;
        trunk[3 + 32 * (3 + 32 * 3)] = 7;
        let coarse_trunk = mesh::halve_voxels(&trunk).expect("a chunk");
        assert_eq!(coarse_trunk[1 + 16 * (1 + 16)], 7);
        assert_eq!(coarse_trunk.iter().filter(|v| **v != AIR_VALUE).count(), 1);
        // Five of a block's eight: the commonest, over the whole block.
        for (x, y, z) in [(0, 0, 0), (1, 0, 0), (0, 1, 0), (1, 1, 0), (0, 0, 1)] {
            voxels[x + 32 * (y + 32 * z)] = if y == 1 { 2 } else { 1 };
        }
        let coarse = mesh::halve_voxels(&voxels).expect("a chunk");
        assert_eq!(coarse.len(), CHUNK_VOLUME / 8);
        assert_eq!(coarse[0], 1, "stone 4, the other 2: stone");
        assert!(coarse[1..].iter().all(|v| *v == AIR_VALUE));
        let whole = mesh::expand(&coarse, 2).expect("a half chunk");
        let block: Vec<u32> = [(0, 0, 0), (1, 1, 1), (1, 0, 1), (2, 0, 0)]
            .iter()
            .map(|(x, y, z)| whole[x + 32 * (y + 32 * z)])
            .collect();
        assert_eq!(block, vec![1, 1, 1, AIR_VALUE], "over the whole block");
        let mut light = vec![0u8; CHUNK_VOLUME];
        light[1 + 32 * (1 + 32)] = 0xf3;
        light[0] = 0x27;
        let coarse_light = mesh::halve_light(&light).expect("a chunk");
        assert_eq!(coarse_light[0], 0xf7, "brightest of each kind");

        let mut scene = Scene::new().expect("scene");
        scene.detail_radius = 1;
        scene.coarse_radius = 1;
        scene.focus = Some([0, 0, 0]);
        scene.chunks.insert([3, 0, 0], voxels.clone().into());
        scene.chunks.insert([2, 0, 0], voxels.into());
        scene.details.insert([3, 0, 0], Detail::Coarse);
        let (n, scales) = scene.neighbourhood([2, 0, 0], 1);
        assert_eq!(scales.iter().filter(|s| **s != 1).count(), 1);
        assert_eq!(scales[14], 2, "the coarse neighbour at +x");
        let own = n.neighbours[13].as_deref().expect("held");
        let beside = n.neighbours[14].as_deref().and_then(|v| mesh::expand(v, 2));
        let beside = beside.expect("held, at half resolution");
        // (0, 1, 1): air in full, stone in its coarse block.
        let at = 32 * (1 + 32);
        assert_eq!(own[at], AIR_VALUE, "its own voxels in full");
        assert_eq!(beside[at], 1, "the coarse one's as drawn");

        // A quarter: the half copy halved again, 4×4×4 voxels a value.
        // Stone in layers 0..3, one voxel of type 5 in layer 3.
        let mut ground = vec![AIR_VALUE; CHUNK_VOLUME];
        for (i, voxel) in ground.iter_mut().enumerate() {
            if i / 32 % 32 < 4 {
                *voxel = 1;
            }
        }
        ground[32 * 3] = 5;
        scene.chunks.insert([3, 0, 0], ground.into());
        forget_reduced(&mut scene.reduced, [3, 0, 0]);
        scene.details.insert([3, 0, 0], Detail::Quarter);
        let (n, scales) = scene.neighbourhood([2, 0, 0], 1);
        assert_eq!(scales[14], 4, "the neighbour at a quarter");
        let quarter = n.neighbours[14].as_deref().expect("held");
        assert_eq!(quarter.len(), CHUNK_VOLUME / 64);
        let whole = mesh::expand(quarter, 4).expect("a quarter chunk");
        assert_eq!(whole[32 * 3], 1, "layers 0..4: the commonest, stone");
        assert_eq!(whole[32 * 4], AIR_VALUE, "layers 4..8: air");
        assert!(mesh::expand(quarter, 2).is_none(), "not a half chunk");
    }
}
