//! The GPU side: the wgpu instance (Vulkan only), device and queue, the
//! pipelines (chunks: solid, alpha-tested cutout and blended; flat colour
//! in the world for boxes and the target's outline; flat colour on the
//! screen for the overlay), the atlas as a texture array, each chunk's
//! packed vertices in one buffer, one shared quad index buffer, and drawing
//! one frame into a texture view (a window's surface or an offscreen
//! texture); and reading a texture back.
//!
//! A frame: chunks outside the view frustum, sealed off (cave culling) or
//! hidden behind nearer opaque terrain (`occlusion`) are skipped; solid
//! quads are drawn front to back (near chunks first, so the depth test
//! rejects what they hide before it is shaded) and only those in planes
//! the eye is beyond (a chunk's solid quads are grouped by face and plane
//! at upload, [`SolidPlanes`]); then the cutout
//! quads; then (hook) models; then boxes and the outline; then the blended
//! quads without depth writes, chunks back to front and each chunk's quads
//! back to front (re-sorted when the eye enters another voxel); then the
//! overlay. Under water (`FrameExtras::underwater`) the fog is short and
//! blue and every world colour is tinted.
//!
//! Owns: every GPU resource, the draw order, the transparent sort. Does
//! not own: meshing (`mesh`), what the overlay shows (`overlay`), the
//! camera's placement (`camera`, `player`), windows and surfaces
//! (`window`), whether the eye is in water (`Scene::underwater`).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use buildat_voxel::geometry::{CHUNK_SIZE, Pos, chunk_origin};
use glam::Vec3;
use wgpu::util::DeviceExt;

use super::RenderError;
use super::atlas::{Atlas, TILE};
use super::camera::{Camera, Frustum};
use super::mesh::{ChunkMesh, VERTEX_BYTES, Vertex};
use super::occlusion::DepthMap;
use super::pipeline::{self, PipelineDesc};
use crate::sandbox::Daylight;

/// The offscreen target's format (also preferred for windows).
pub const COLOUR_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Rgba8UnormSrgb;
const DEPTH_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Depth32Float;
/// Cells across the occlusion depth map (its height follows the aspect).
const OCCLUSION_WIDTH: usize = 160;
/// Bytes of one flat vertex.
const FLAT_BYTES: usize = 7 * 4;
/// Bytes of one chunk's instance data (its origin).
const INSTANCE_BYTES: u64 = 16;
/// Bytes of the globals uniform.
const GLOBALS_BYTES: u64 = 256;
/// The light's direction (from the sun, slanted so faces differ).
const LIGHT: [f32; 3] = [-0.45, -0.8, -0.35];
/// Under water: the fog's colour in full daylight (linear RGB), where it
/// starts and ends (voxels from the eye), and the tint of every colour.
pub const WATER_FOG: [f32; 3] = [0.03, 0.16, 0.38];
const WATER_FOG_RANGE: [f32; 2] = [0.0, 14.0];
const WATER_TINT: [f32; 3] = [0.45, 0.62, 1.0];

/// A vertex of flat-coloured geometry: world or screen (NDC) position.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FlatVertex {
    pub position: [f32; 3],
    pub colour: [f32; 4],
}

fn vertex_bytes<'a>(vertices: impl Iterator<Item = &'a Vertex>) -> Vec<u8> {
    let mut out = Vec::new();
    for v in vertices {
        out.extend_from_slice(&v.to_bytes());
    }
    out
}

fn flat_bytes(vertices: &[FlatVertex], out: &mut Vec<u8>) {
    for v in vertices {
        for f in v.position.iter().chain(&v.colour) {
            out.extend_from_slice(&f.to_le_bytes());
        }
    }
}

fn index_bytes(indices: impl Iterator<Item = u32>) -> Vec<u8> {
    indices.flat_map(|i| i.to_le_bytes()).collect()
}

/// The 6 indices of quad `q` (vertices 4q..4q+4): (0,1,2) (0,2,3).
fn quad_indices(q: u32) -> [u32; 6] {
    let v = q * 4;
    [v, v + 1, v + 2, v, v + 2, v + 3]
}

/// A Vulkan-only instance.
pub fn instance() -> wgpu::Instance {
    let mut descriptor = wgpu::InstanceDescriptor::new_without_display_handle();
    descriptor.backends = wgpu::Backends::VULKAN;
    wgpu::Instance::new(descriptor)
}

/// The adapter (a compatible one when drawing to `surface`), its device
/// and queue.
pub fn open_device(
    instance: &wgpu::Instance,
    surface: Option<&wgpu::Surface<'_>>,
) -> Result<(wgpu::Adapter, wgpu::Device, wgpu::Queue), RenderError> {
    let adapter = pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions {
        power_preference: wgpu::PowerPreference::HighPerformance,
        force_fallback_adapter: false,
        compatible_surface: surface,
        apply_limit_buckets: false,
    }))
    .map_err(|e| RenderError::NoAdapter(e.to_string()))?;
    let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        label: Some("buildat"),
        required_features: wgpu::Features::empty(),
        required_limits: wgpu::Limits::downlevel_defaults().using_resolution(adapter.limits()),
        experimental_features: wgpu::ExperimentalFeatures::disabled(),
        memory_hints: wgpu::MemoryHints::Performance,
        trace: wgpu::Trace::Off,
    }))
    .map_err(|e| RenderError::Device(e.to_string()))?;
    Ok((adapter, device, queue))
}

/// A chunk's blended quads: their centres and the index buffer holding
/// them back to front as last sorted.
struct BlendedQuads {
    /// The first blended quad in the chunk's vertex buffer.
    first: u32,
    /// Centres, chunk-relative.
    centres: Vec<Vec3>,
    indices: wgpu::Buffer,
    /// The eye's voxel (chunk-relative) the order was sorted for.
    sorted_for: Option<[i32; 3]>,
}

struct GpuChunk {
    origin: Vec3,
    /// Solid quads grouped by face, then cutout, then blended: 4 packed
    /// vertices each.
    vertices: wgpu::Buffer,
    /// Where the solid quads of each face and plane are.
    planes: SolidPlanes,
    /// Quads `planes.end()..cutout_end` are cutout.
    cutout_end: u32,
    /// Its opaque boxes (chunk-relative), drawn into the frame's depth map.
    occluders: Vec<(Vec3, Vec3)>,
    /// The box its quads lie in (chunk-relative), tested against the
    /// depth map.
    bounds: (Vec3, Vec3),
    blended: Option<BlendedQuads>,
}

/// What one frame draws besides the chunks.
#[derive(Debug, Clone, Default)]
pub struct FrameExtras {
    /// Triangles in the world (boxes).
    pub world_triangles: Vec<FlatVertex>,
    /// Lines in the world (the target's outline).
    pub world_lines: Vec<FlatVertex>,
    /// Triangles on the screen, in NDC (the overlay).
    pub screen_triangles: Vec<FlatVertex>,
    /// The time of day's light (`buildat.ui.set_daylight`); `None`: full
    /// sun under [`super::SKY`].
    pub daylight: Option<Daylight>,
    /// The eye is in a liquid (`Scene::underwater`): short blue fog, blue
    /// tint.
    pub underwater: bool,
    /// The chunks the eye may see through open space
    /// (`Scene::reachable_chunks`); `None`: all.
    pub reachable: Option<Arc<HashSet<Pos>>>,
    /// Chunks hidden behind nearer opaque terrain are not drawn (off when
    /// the eye is inside an opaque voxel, whose faces it sees through:
    /// `Scene::occludes_from`).
    pub occlusion: bool,
}

/// Counters of the last frame.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FrameStats {
    pub chunks_drawn: usize,
    /// Outside the frustum, or wholly in the fog.
    pub chunks_culled: usize,
    /// Sealed off from the eye (cave culling).
    pub chunks_sealed: usize,
    /// Hidden behind nearer opaque terrain (occlusion culling).
    pub chunks_occluded: usize,
    /// Triangles submitted (faces turned away from the eye are not).
    pub triangles: usize,
    /// Draw calls of chunks.
    pub draws: usize,
}

/// The blended quads' order, back to front from `eye` (all in the same
/// space): the farthest centre first, ties in list order.
pub fn back_to_front(centres: &[Vec3], eye: Vec3) -> Vec<u32> {
    let mut order: Vec<u32> = (0..centres.len() as u32).collect();
    let distance = |q: &u32| centres[*q as usize].distance_squared(eye);
    order.sort_by(|a, b| distance(b).total_cmp(&distance(a)));
    order
}

/// The centre of each quad (4 vertices) of `vertices`.
pub fn quad_centres(vertices: &[Vertex]) -> Vec<Vec3> {
    vertices
        .chunks_exact(4)
        .map(|quad| quad.iter().map(|v| Vec3::from(v.position())).sum::<Vec3>() / 4.0)
        .collect()
}

/// Planes a face can lie in within a chunk: 0..=CHUNK_SIZE along its axis.
const PLANES: usize = CHUNK_SIZE as usize + 1;

/// The draw order of a solid quad within its face's group (0..PLANES): its
/// plane's coordinate along the face's normal, farthest along the normal
/// first (+y: the highest plane has rank 0).
fn plane_rank(v: &Vertex) -> usize {
    let face = v.face().min(5);
    let c = (v.corner()[face / 2] as usize).min(PLANES - 1);
    if face.is_multiple_of(2) {
        PLANES - 1 - c
    } else {
        c
    }
}

/// Where a chunk's solid quads lie: grouped by face, each face's quads by
/// [`plane_rank`]. `starts[f][r]` is the first quad of face `f` whose rank
/// is at least `r` (`starts[f][PLANES]`: the end of face `f`'s quads).
#[derive(Debug, Clone, PartialEq, Eq)]
struct SolidPlanes {
    starts: [[u32; PLANES + 1]; 6],
}

impl SolidPlanes {
    /// Of quads already grouped by face and sorted by rank (`(face, rank)`
    /// of each, in order).
    fn of(quads: impl IntoIterator<Item = (usize, usize)>) -> Self {
        let mut counts = [[0u32; PLANES]; 6];
        for (face, rank) in quads {
            counts[face.min(5)][rank.min(PLANES - 1)] += 1;
        }
        let mut starts = [[0u32; PLANES + 1]; 6];
        let mut at = 0;
        for (face, ranks) in counts.iter().enumerate() {
            for (rank, count) in ranks.iter().enumerate() {
                starts[face][rank] = at;
                at += count;
            }
            starts[face][PLANES] = at;
        }
        Self { starts }
    }

    /// All solid quads.
    fn end(&self) -> u32 {
        self.starts[5][PLANES]
    }

    /// The quads of `face` that face `eye` (chunk-relative): a quad is
    /// seen only from beyond its plane along its normal, so the planes the
    /// eye is beyond are a run of ranks to the end of the face's quads.
    fn facing(&self, face: usize, eye: Vec3) -> std::ops::Range<u32> {
        let along = eye[face / 2];
        // Quads of rank above `past` are in planes the eye is beyond.
        let past = if face.is_multiple_of(2) {
            (PLANES - 1) as f32 - along
        } else {
            along
        };
        let first = (past.floor() + 1.0).clamp(0.0, PLANES as f32) as usize;
        self.starts[face][first]..self.starts[face][PLANES]
    }
}

/// The globals and an atlas of `layers` (RGBA tiles) as the chunks'
/// bind group.
fn atlas_bind_group(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    layout: &wgpu::BindGroupLayout,
    globals: &wgpu::Buffer,
    sampler: &wgpu::Sampler,
    layers: &[Vec<u8>],
) -> wgpu::BindGroup {
    let count = u32::try_from(layers.len()).unwrap_or(1).max(1);
    let size = wgpu::Extent3d {
        width: TILE,
        height: TILE,
        depth_or_array_layers: count,
    };
    let texture = device.create_texture(&wgpu::TextureDescriptor {
        size,
        ..pipeline::rgba_texture("atlas", TILE, TILE)
    });
    let mut data: Vec<u8> = layers.concat();
    data.resize((TILE * TILE * 4 * count) as usize, 0);
    queue.write_texture(
        wgpu::TexelCopyTextureInfo {
            texture: &texture,
            mip_level: 0,
            origin: wgpu::Origin3d::ZERO,
            aspect: wgpu::TextureAspect::All,
        },
        &data,
        wgpu::TexelCopyBufferLayout {
            offset: 0,
            bytes_per_row: Some(TILE * 4),
            rows_per_image: Some(TILE),
        },
        size,
    );
    let view = texture.create_view(&wgpu::TextureViewDescriptor {
        dimension: Some(wgpu::TextureViewDimension::D2Array),
        ..Default::default()
    });
    pipeline::texture_bind_group(
        device,
        "globals and atlas",
        layout,
        Some(globals),
        &view,
        sampler,
    )
}

/// The box a mesh's quads lie in (chunk-relative; a lowered liquid top
/// counts at its voxel's top).
fn mesh_bounds(mesh: &ChunkMesh) -> (Vec3, Vec3) {
    let corners = mesh.solid.iter().chain(&mesh.cutout).chain(&mesh.blended);
    corners.fold(
        (Vec3::splat(CHUNK_SIZE as f32), Vec3::ZERO),
        |(min, max), v| {
            let c = Vec3::from(v.corner().map(|c| c as f32));
            (min.min(c), max.max(c))
        },
    )
}

/// Whether the box `min`..`max` lies wholly beyond the fog's end from `eye`
/// (`fog`: start, end, 1 for distances in 3D else horizontal), so it would
/// be drawn in the fog's colour alone.
fn in_fog(min: Vec3, max: Vec3, eye: Vec3, fog: [f32; 3]) -> bool {
    let mut nearest = eye.clamp(min, max) - eye;
    if fog[2] < 0.5 {
        nearest.y = 0.0;
    }
    nearest.length() > fog[1] + 0.5
}

/// The sun's diffuse light on each face (+x -x +y -y +z -z), as the
/// shader's `face_light`: 0.5 + 0.5 × the cosine towards the light.
fn face_light(light: Vec3) -> [f32; 8] {
    let mut out = [0.0; 8];
    for (face, normal) in buildat_voxel::geometry::FACES.iter().enumerate() {
        let normal = Vec3::from(normal.map(|c| c as f32));
        out[face] = 0.5 + 0.5 * normal.dot(-light).max(0.0);
    }
    out
}

/// A growable GPU buffer written with `queue.write_buffer`.
struct Growing {
    buffer: wgpu::Buffer,
    capacity: u64,
    label: &'static str,
    usage: wgpu::BufferUsages,
}

impl Growing {
    fn new(device: &wgpu::Device, label: &'static str, usage: wgpu::BufferUsages) -> Self {
        let capacity = 4096;
        Self {
            buffer: Self::create(device, label, usage, capacity),
            capacity,
            label,
            usage,
        }
    }

    fn create(
        device: &wgpu::Device,
        label: &str,
        usage: wgpu::BufferUsages,
        size: u64,
    ) -> wgpu::Buffer {
        device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size,
            usage: usage | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        })
    }

    /// Writes `bytes` at the start, growing the buffer first if needed.
    fn write(&mut self, device: &wgpu::Device, queue: &wgpu::Queue, bytes: &[u8]) {
        let needed = bytes.len() as u64;
        if needed > self.capacity {
            self.capacity = needed.next_power_of_two();
            self.buffer = Self::create(device, self.label, self.usage, self.capacity);
        }
        if !bytes.is_empty() {
            queue.write_buffer(&self.buffer, 0, bytes);
        }
    }
}

pub struct Renderer {
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
    format: wgpu::TextureFormat,
    globals: wgpu::Buffer,
    bind_layout: wgpu::BindGroupLayout,
    /// The globals and the atlas (one blank tile until the game's atlas
    /// comes, so the overlay and the window's own screens, such as the
    /// login prompt, are drawn before the world is).
    bind_group: wgpu::BindGroup,
    sampler: wgpu::Sampler,
    solid_pipeline: wgpu::RenderPipeline,
    cutout_pipeline: wgpu::RenderPipeline,
    blended_pipeline: wgpu::RenderPipeline,
    world_triangles: wgpu::RenderPipeline,
    world_lines: wgpu::RenderPipeline,
    screen_triangles: wgpu::RenderPipeline,
    chunks: HashMap<Pos, GpuChunk>,
    /// (0,1,2, 0,2,3) + 4k for every quad k below `quad_capacity`.
    quad_indices: wgpu::Buffer,
    quad_capacity: u32,
    /// The origins of the chunks drawn this frame, one per instance.
    instances: Growing,
    /// This frame's flat vertices: boxes, outline, overlay.
    flat: Growing,
    depth: Option<(u32, u32, wgpu::TextureView)>,
    atlas_version: u64,
    /// Models in the world (`models`: the frontends place them, then
    /// `draw` prepares and draws them after the opaque terrain).
    pub models: super::models::ModelRenderer,
    /// The UI's textured quads (`ui_gpu`: the frontends set them, `draw`
    /// draws them last).
    pub ui: super::ui_gpu::UiLayer,
}

/// How a pipeline treats depth, culling and blending.
struct PipelineKind<'a> {
    label: &'a str,
    vertex_entry: &'a str,
    fragment_entry: &'a str,
    buffers: &'a [Option<wgpu::VertexBufferLayout<'a>>],
    topology: wgpu::PrimitiveTopology,
    depth_write: bool,
    depth_test: bool,
    cull: bool,
    blend: Option<wgpu::BlendState>,
}

impl Renderer {
    /// Pipelines for targets of `format`.
    pub fn new(device: wgpu::Device, queue: wgpu::Queue, format: wgpu::TextureFormat) -> Self {
        let shader = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("shaders.wgsl"),
            source: wgpu::ShaderSource::Wgsl(include_str!("shaders.wgsl").into()),
        });
        let globals = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("globals"),
            size: GLOBALS_BYTES,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let bind_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("globals and atlas"),
            entries: &[
                pipeline::uniform_entry(0),
                pipeline::texture_entry(1, wgpu::TextureViewDimension::D2Array),
                pipeline::sampler_entry(2),
            ],
        });
        let layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("layout"),
            bind_group_layouts: &[Some(&bind_layout)],
            immediate_size: 0,
        });
        let sampler = pipeline::texel_sampler(&device, "tiles");
        let chunk_attributes = wgpu::vertex_attr_array![0 => Uint32x2];
        let instance_attributes = wgpu::vertex_attr_array![1 => Float32x4];
        let chunk_buffers = [
            Some(wgpu::VertexBufferLayout {
                array_stride: VERTEX_BYTES as u64,
                step_mode: wgpu::VertexStepMode::Vertex,
                attributes: &chunk_attributes,
            }),
            Some(wgpu::VertexBufferLayout {
                array_stride: INSTANCE_BYTES,
                step_mode: wgpu::VertexStepMode::Instance,
                attributes: &instance_attributes,
            }),
        ];
        let flat_attributes = wgpu::vertex_attr_array![0 => Float32x3, 1 => Float32x4];
        let flat_buffers = [Some(wgpu::VertexBufferLayout {
            array_stride: FLAT_BYTES as u64,
            step_mode: wgpu::VertexStepMode::Vertex,
            attributes: &flat_attributes,
        })];
        let pipeline = |kind: PipelineKind<'_>| {
            PipelineDesc {
                label: kind.label,
                layout: &layout,
                shader: &shader,
                vertex_entry: kind.vertex_entry,
                fragment_entry: kind.fragment_entry,
                buffers: kind.buffers,
                topology: kind.topology,
                cull: kind.cull,
                format,
                blend: kind.blend,
                depth_format: DEPTH_FORMAT,
                depth_write: kind.depth_write,
                depth_compare: if kind.depth_test {
                    wgpu::CompareFunction::LessEqual
                } else {
                    wgpu::CompareFunction::Always
                },
            }
            .create(&device)
        };
        use wgpu::PrimitiveTopology::{LineList, TriangleList};
        let alpha = Some(wgpu::BlendState::ALPHA_BLENDING);
        let chunk = |label, fragment_entry, depth_write, cull, blend| PipelineKind {
            label,
            vertex_entry: "vs_chunk",
            fragment_entry,
            buffers: &chunk_buffers,
            topology: TriangleList,
            depth_write,
            depth_test: true,
            cull,
            blend,
        };
        let flat = |label, vertex_entry, topology, depth: bool, cull| PipelineKind {
            label,
            vertex_entry,
            fragment_entry: "fs_flat",
            buffers: &flat_buffers,
            topology,
            depth_write: depth,
            depth_test: depth,
            cull,
            blend: alpha,
        };
        // Solid: no blending (cheaper, and the colour needs no read).
        let solid_pipeline = pipeline(chunk("solid chunks", "fs_chunk", true, true, None));
        let cutout_pipeline = pipeline(chunk("cutout chunks", "fs_cutout", true, false, None));
        // Blended: both sides (water seen from below), tested against the
        // opaque depth, not written (what is behind another blended quad
        // still shows through it).
        let blended_pipeline = pipeline(chunk("blended chunks", "fs_blended", false, false, alpha));
        let world_triangles = pipeline(flat("boxes", "vs_world_flat", TriangleList, true, true));
        let world_lines = pipeline(flat("outline", "vs_world_flat", LineList, true, false));
        let screen_triangles = pipeline(flat(
            "overlay",
            "vs_screen_flat",
            TriangleList,
            false,
            false,
        ));
        let quad_capacity = 1024;
        let quad_indices = Self::quad_index_buffer(&device, quad_capacity);
        let instances = Growing::new(&device, "chunk origins", wgpu::BufferUsages::VERTEX);
        let flat = Growing::new(&device, "flat vertices", wgpu::BufferUsages::VERTEX);
        let models = super::models::ModelRenderer::new(&device, format, DEPTH_FORMAT);
        let ui = super::ui_gpu::UiLayer::new(&device, &queue, format);
        let blank = vec![0; (TILE * TILE * 4) as usize];
        let bind_group =
            atlas_bind_group(&device, &queue, &bind_layout, &globals, &sampler, &[blank]);
        Self {
            device,
            queue,
            format,
            globals,
            bind_layout,
            bind_group,
            sampler,
            solid_pipeline,
            cutout_pipeline,
            blended_pipeline,
            world_triangles,
            world_lines,
            screen_triangles,
            chunks: HashMap::new(),
            quad_indices,
            quad_capacity,
            instances,
            flat,
            depth: None,
            atlas_version: 0,
            models,
            ui,
        }
    }

    fn quad_index_buffer(device: &wgpu::Device, quads: u32) -> wgpu::Buffer {
        device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("quad indices"),
            contents: &index_bytes((0..quads).flat_map(quad_indices)),
            usage: wgpu::BufferUsages::INDEX,
        })
    }

    pub fn format(&self) -> wgpu::TextureFormat {
        self.format
    }

    pub fn chunk_count(&self) -> usize {
        self.chunks.len()
    }

    /// Uploads the atlas if `version` is newer than the one held.
    pub fn set_atlas(&mut self, atlas: &Atlas, version: u64) {
        if version == self.atlas_version {
            return;
        }
        self.atlas_version = version;
        self.bind_group = atlas_bind_group(
            &self.device,
            &self.queue,
            &self.bind_layout,
            &self.globals,
            &self.sampler,
            &atlas.layers,
        );
    }

    /// Replaces a chunk's buffers (`None` or an empty mesh drops them).
    pub fn set_chunk(&mut self, chunk: Pos, mesh: Option<&ChunkMesh>) {
        let Some(mesh) = mesh.filter(|m| !m.is_empty()) else {
            self.chunks.remove(&chunk);
            return;
        };
        // Solid quads grouped by face, each face's quads near to far for
        // any eye that sees them: a face is seen from its normal's side, so
        // the planes farthest along the normal come first (+y: the highest
        // first); the depth test then rejects what they hide before it is
        // shaded. (A stable sort: the mesher's order within a plane is kept.)
        let mut solid: Vec<((usize, usize), &[Vertex])> = mesh
            .solid
            .chunks_exact(4)
            .map(|q| ((q[0].face().min(5), plane_rank(&q[0])), q))
            .collect();
        solid.sort_by_key(|(key, _)| *key);
        let planes = SolidPlanes::of(solid.iter().map(|(key, _)| *key));
        let grouped = solid.into_iter().flat_map(|(_, quad)| quad);
        let solid_quads = planes.end();
        let cutout_end = solid_quads + (mesh.cutout.len() / 4) as u32;
        let blended_quads = (mesh.blended.len() / 4) as u32;
        let bytes = vertex_bytes(grouped.chain(mesh.cutout.iter()).chain(mesh.blended.iter()));
        let vertices = self
            .device
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("chunk vertices"),
                contents: &bytes,
                usage: wgpu::BufferUsages::VERTEX,
            });
        let largest = solid_quads.max(cutout_end - solid_quads);
        if largest > self.quad_capacity {
            self.quad_capacity = largest.next_power_of_two();
            self.quad_indices = Self::quad_index_buffer(&self.device, self.quad_capacity);
        }
        let blended = (blended_quads > 0).then(|| BlendedQuads {
            first: cutout_end,
            centres: quad_centres(&mesh.blended),
            indices: self
                .device
                .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                    label: Some("blended indices"),
                    contents: &index_bytes((0..blended_quads).flat_map(quad_indices)),
                    usage: wgpu::BufferUsages::INDEX | wgpu::BufferUsages::COPY_DST,
                }),
            sorted_for: None,
        });
        self.chunks.insert(
            chunk,
            GpuChunk {
                origin: Vec3::from(chunk_origin(chunk).map(|c| c as f32)),
                vertices,
                planes,
                cutout_end,
                occluders: mesh.occluder.boxes(),
                bounds: mesh_bounds(mesh),
                blended,
            },
        );
    }

    fn depth_view(&mut self, width: u32, height: u32) -> wgpu::TextureView {
        if let Some((w, h, view)) = &self.depth
            && (*w, *h) == (width, height)
        {
            return view.clone();
        }
        let texture = render_target(
            &self.device,
            "depth",
            (width, height),
            DEPTH_FORMAT,
            wgpu::TextureUsages::RENDER_ATTACHMENT,
        );
        let view = texture.create_view(&Default::default());
        self.depth = Some((width, height, view.clone()));
        view
    }

    /// Draws one frame into `target` (`width`×`height`): the sky, the
    /// chunks in the frustum with fog at `view_radius`, then `extras`.
    pub fn draw(
        &mut self,
        target: &wgpu::TextureView,
        (width, height): (u32, u32),
        camera: &Camera,
        view_radius: f32,
        extras: &FrameExtras,
    ) -> FrameStats {
        let aspect = width as f32 / height.max(1) as f32;
        // Far enough for the radius's corners.
        let view_projection = camera.view_projection(aspect, view_radius * 1.5 + 64.0);
        let (sun, sky) = extras
            .daylight
            .map_or((1.0, super::SKY), |d| (d.sun, d.sky));
        let light = Vec3::from(LIGHT).normalize();
        let (clear, fog, fog_colour, tint) = if extras.underwater {
            let dim = sun.clamp(0.15, 1.0);
            let water = WATER_FOG.map(|c| c * dim);
            (
                water,
                [WATER_FOG_RANGE[0], WATER_FOG_RANGE[1], 1.0],
                water,
                WATER_TINT,
            )
        } else {
            (sky, [view_radius * 0.6, view_radius, 0.0], sky, [1.0; 3])
        };
        let mut uniform: Vec<f32> = view_projection.to_cols_array().to_vec();
        uniform.extend_from_slice(&[camera.eye.x, camera.eye.y, camera.eye.z, 1.0]);
        uniform.extend_from_slice(&[sky[0], sky[1], sky[2], 1.0]);
        uniform.extend_from_slice(&[fog[0], fog[1], fog[2], 0.0]);
        uniform.extend_from_slice(&[light.x, light.y, light.z, sun]);
        uniform.extend_from_slice(&[fog_colour[0], fog_colour[1], fog_colour[2], 1.0]);
        uniform.extend_from_slice(&[tint[0], tint[1], tint[2], 1.0]);
        uniform.extend_from_slice(&face_light(light));
        let bytes: Vec<u8> = uniform.iter().flat_map(|f| f.to_le_bytes()).collect();
        self.queue.write_buffer(&self.globals, 0, &bytes);
        self.models.prepare(
            &self.device,
            &self.queue,
            view_projection,
            camera.eye,
            fog_colour,
            [fog[0], fog[1]],
            light,
            sun,
        );

        let depth = self.depth_view(width, height);
        let frustum = Frustum::new(view_projection);
        let mut stats = FrameStats::default();

        // The chunks in view, near to far, each with its instance slot.
        let eye = camera.eye;
        let half = Vec3::splat(CHUNK_SIZE as f32 / 2.0);
        let mut visible: Vec<(f32, Pos)> = Vec::with_capacity(self.chunks.len());
        for (chunk, gpu) in &self.chunks {
            let min = gpu.origin;
            let max = min + Vec3::splat(CHUNK_SIZE as f32);
            if !frustum.intersects_box(min, max) || in_fog(min, max, eye, fog) {
                stats.chunks_culled += 1;
                continue;
            }
            if extras
                .reachable
                .as_ref()
                .is_some_and(|r| !r.contains(chunk))
            {
                stats.chunks_sealed += 1;
                continue;
            }
            visible.push(((min + half).distance_squared(eye), *chunk));
        }
        visible.sort_by(|a, b| a.0.total_cmp(&b.0));
        // Occlusion: the chunks' opaque boxes into a small depth map, near
        // to far, then the chunks wholly behind it are dropped.
        if extras.occlusion {
            let map_height = (OCCLUSION_WIDTH as f32 / aspect).round().max(1.0) as usize;
            let mut depth_map = DepthMap::new(view_projection, eye, OCCLUSION_WIDTH, map_height);
            for (_, chunk) in &visible {
                if let Some(gpu) = self.chunks.get(chunk) {
                    for (min, max) in &gpu.occluders {
                        depth_map.draw_box(gpu.origin + *min, gpu.origin + *max);
                    }
                }
            }
            let before = visible.len();
            visible.retain(|(_, chunk)| {
                self.chunks.get(chunk).is_none_or(|gpu| {
                    let (min, max) = gpu.bounds;
                    !depth_map.hides(gpu.origin + min, gpu.origin + max)
                })
            });
            stats.chunks_occluded = before - visible.len();
        }
        stats.chunks_drawn = visible.len();
        let mut origins = Vec::with_capacity(visible.len() * INSTANCE_BYTES as usize);
        for (_, chunk) in &visible {
            let origin = self.chunks.get(chunk).map_or(Vec3::ZERO, |g| g.origin);
            for f in [origin.x, origin.y, origin.z, 1.0] {
                origins.extend_from_slice(&f.to_le_bytes());
            }
        }
        self.instances.write(&self.device, &self.queue, &origins);

        // Blended quads re-sorted where the eye entered another voxel.
        let eye_voxel = eye.floor().as_ivec3();
        for (_, chunk) in &visible {
            let Some(gpu) = self.chunks.get_mut(chunk) else {
                continue;
            };
            let Some(blended) = &mut gpu.blended else {
                continue;
            };
            let here = (eye_voxel - gpu.origin.as_ivec3()).to_array();
            if blended.sorted_for == Some(here) {
                continue;
            }
            blended.sorted_for = Some(here);
            let order = back_to_front(&blended.centres, eye - gpu.origin);
            let bytes = index_bytes(order.into_iter().flat_map(quad_indices));
            self.queue.write_buffer(&blended.indices, 0, &bytes);
        }

        // The flat vertices, one buffer: boxes, outline, overlay.
        let mut flat = Vec::new();
        let mut ranges = Vec::with_capacity(3);
        for vertices in [
            &extras.world_triangles,
            &extras.world_lines,
            &extras.screen_triangles,
        ] {
            let first = (flat.len() / FLAT_BYTES) as u32;
            flat_bytes(vertices, &mut flat);
            ranges.push(first..(flat.len() / FLAT_BYTES) as u32);
        }
        self.flat.write(&self.device, &self.queue, &flat);

        let mut encoder = self
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("frame"),
            });
        {
            let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
                label: Some("frame"),
                color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                    view: target,
                    depth_slice: None,
                    resolve_target: None,
                    ops: wgpu::Operations {
                        load: wgpu::LoadOp::Clear(wgpu::Color {
                            r: f64::from(clear[0]),
                            g: f64::from(clear[1]),
                            b: f64::from(clear[2]),
                            a: 1.0,
                        }),
                        store: wgpu::StoreOp::Store,
                    },
                })],
                depth_stencil_attachment: Some(wgpu::RenderPassDepthStencilAttachment {
                    view: &depth,
                    depth_ops: Some(wgpu::Operations {
                        load: wgpu::LoadOp::Clear(1.0),
                        store: wgpu::StoreOp::Store,
                    }),
                    stencil_ops: None,
                }),
                timestamp_writes: None,
                occlusion_query_set: None,
                multiview_mask: None,
            });
            pass.set_bind_group(0, &self.bind_group, &[]);
            pass.set_index_buffer(self.quad_indices.slice(..), wgpu::IndexFormat::Uint32);
            pass.set_vertex_buffer(1, self.instances.buffer.slice(..));
            // Solid, near to far, only the faces turned to the eye.
            pass.set_pipeline(&self.solid_pipeline);
            for (slot, (_, chunk)) in visible.iter().enumerate() {
                let Some(gpu) = self.chunks.get(chunk) else {
                    continue;
                };
                // Each face's quads in planes the eye is beyond; runs
                // that meet are drawn together.
                let eye_in_chunk = eye - gpu.origin;
                let mut bound = false;
                let mut runs: Vec<std::ops::Range<u32>> = Vec::with_capacity(6);
                for face in 0..6 {
                    let range = gpu.planes.facing(face, eye_in_chunk);
                    if range.is_empty() {
                        continue;
                    }
                    match runs.last_mut() {
                        Some(last) if last.end == range.start => last.end = range.end,
                        _ => runs.push(range),
                    }
                }
                for run in runs {
                    if !bound {
                        pass.set_vertex_buffer(0, gpu.vertices.slice(..));
                        bound = true;
                    }
                    let slot = slot as u32;
                    pass.draw_indexed(run.start * 6..run.end * 6, 0, slot..slot + 1);
                    stats.draws += 1;
                    stats.triangles += run.len() * 2;
                }
            }
            // Cutout (leaves), both sides.
            pass.set_pipeline(&self.cutout_pipeline);
            for (slot, (_, chunk)) in visible.iter().enumerate() {
                let Some(gpu) = self.chunks.get(chunk) else {
                    continue;
                };
                let quads = gpu.cutout_end - gpu.planes.end();
                if quads == 0 {
                    continue;
                }
                pass.set_vertex_buffer(0, gpu.vertices.slice(..));
                let base = (gpu.planes.end() * 4) as i32;
                let slot = slot as u32;
                pass.draw_indexed(0..quads * 6, base, slot..slot + 1);
                stats.draws += 1;
                stats.triangles += quads as usize * 2;
            }
            // ---- Hook (E): models are drawn here, after the opaque
            // terrain and before anything blended. They set their own
            // pipeline and bind groups; the flat draws below set theirs.
            let model_triangles = self.models.draw(&mut pass);
            stats.triangles += model_triangles;
            stats.draws += usize::from(model_triangles > 0);

            // Boxes and the outline.
            pass.set_vertex_buffer(0, self.flat.buffer.slice(..));
            for (pipeline, range) in [
                (&self.world_triangles, &ranges[0]),
                (&self.world_lines, &ranges[1]),
            ] {
                if !range.is_empty() {
                    pass.set_pipeline(pipeline);
                    pass.draw(range.clone(), 0..1);
                }
            }
            // Blended, far to near, each chunk's quads far to near.
            pass.set_bind_group(0, &self.bind_group, &[]);
            pass.set_pipeline(&self.blended_pipeline);
            pass.set_vertex_buffer(1, self.instances.buffer.slice(..));
            for (slot, (_, chunk)) in visible.iter().enumerate().rev() {
                let Some(gpu) = self.chunks.get(chunk) else {
                    continue;
                };
                let Some(blended) = &gpu.blended else {
                    continue;
                };
                let quads = blended.centres.len() as u32;
                pass.set_vertex_buffer(0, gpu.vertices.slice(..));
                pass.set_index_buffer(blended.indices.slice(..), wgpu::IndexFormat::Uint32);
                let base = (blended.first * 4) as i32;
                let slot = slot as u32;
                pass.draw_indexed(0..quads * 6, base, slot..slot + 1);
                stats.draws += 1;
                stats.triangles += quads as usize * 2;
            }
            // The overlay, on top of everything.
            if !ranges[2].is_empty() {
                pass.set_pipeline(&self.screen_triangles);
                pass.set_vertex_buffer(0, self.flat.buffer.slice(..));
                pass.draw(ranges[2].clone(), 0..1);
            }
            // ---- Hook (W): the UI (icons, images) is drawn here, last.
            self.ui.draw(&mut pass);
        }
        self.queue.submit([encoder.finish()]);
        stats
    }

    /// Reads an RGBA8 texture back as RGB rows, top to bottom.
    pub fn read_rgb(&self, texture: &wgpu::Texture) -> Result<Vec<u8>, RenderError> {
        let (width, height) = (texture.width(), texture.height());
        let row = width * 4;
        let padded_row =
            row.div_ceil(wgpu::COPY_BYTES_PER_ROW_ALIGNMENT) * wgpu::COPY_BYTES_PER_ROW_ALIGNMENT;
        let buffer = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("readback"),
            size: u64::from(padded_row) * u64::from(height),
            usage: wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::MAP_READ,
            mapped_at_creation: false,
        });
        let mut encoder = self
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("readback"),
            });
        encoder.copy_texture_to_buffer(
            texture.as_image_copy(),
            wgpu::TexelCopyBufferInfo {
                buffer: &buffer,
                layout: wgpu::TexelCopyBufferLayout {
                    offset: 0,
                    bytes_per_row: Some(padded_row),
                    rows_per_image: Some(height),
                },
            },
            texture.size(),
        );
        self.queue.submit([encoder.finish()]);
        let slice = buffer.slice(..);
        let (sender, receiver) = std::sync::mpsc::channel();
        slice.map_async(wgpu::MapMode::Read, move |result| {
            let _ = sender.send(result);
        });
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| RenderError::Readback(e.to_string()))?;
        receiver
            .recv()
            .map_err(|e| RenderError::Readback(e.to_string()))?
            .map_err(|e| RenderError::Readback(e.to_string()))?;
        let mapped = slice
            .get_mapped_range()
            .map_err(|e| RenderError::Readback(format!("{e:?}")))?;
        let mut rgb = Vec::with_capacity((width * height * 3) as usize);
        for y in 0..height as usize {
            let start = y * padded_row as usize;
            let line = mapped
                .get(start..start + row as usize)
                .ok_or_else(|| RenderError::Readback("short buffer".into()))?;
            for pixel in line.chunks_exact(4) {
                rgb.extend_from_slice(&pixel[..3]);
            }
        }
        Ok(rgb)
    }
}

/// The 12 edges of a box as line vertices.
pub fn box_lines(min: Vec3, max: Vec3, colour: [f32; 4], out: &mut Vec<FlatVertex>) {
    let corner = |i: usize| {
        Vec3::new(
            if i & 1 == 0 { min.x } else { max.x },
            if i & 2 == 0 { min.y } else { max.y },
            if i & 4 == 0 { min.z } else { max.z },
        )
    };
    for a in 0..8usize {
        for bit in [1, 2, 4] {
            if a & bit == 0 {
                for p in [corner(a), corner(a | bit)] {
                    out.push(FlatVertex {
                        position: p.to_array(),
                        colour,
                    });
                }
            }
        }
    }
}

/// A solid box as triangles, counter-clockwise from outside, each face
/// shaded a little differently so its shape reads.
pub fn box_triangles(min: Vec3, max: Vec3, colour: [f32; 3], out: &mut Vec<FlatVertex>) {
    let faces: [([usize; 4], f32); 6] = [
        ([1, 3, 7, 5], 0.8),  // +x
        ([0, 4, 6, 2], 0.7),  // -x
        ([2, 6, 7, 3], 1.0),  // +y
        ([0, 1, 5, 4], 0.5),  // -y
        ([4, 5, 7, 6], 0.9),  // +z
        ([0, 2, 3, 1], 0.75), // -z
    ];
    let corner = |i: usize| {
        [
            if i & 1 == 0 { min.x } else { max.x },
            if i & 2 == 0 { min.y } else { max.y },
            if i & 4 == 0 { min.z } else { max.z },
        ]
    };
    for (quad, shade) in faces {
        let colour = [colour[0] * shade, colour[1] * shade, colour[2] * shade, 1.0];
        for i in [0, 1, 2, 0, 2, 3] {
            out.push(FlatVertex {
                position: corner(quad[i]),
                colour,
            });
        }
    }
}

/// A single-sample 2D texture of `size` to render into.
pub fn render_target(
    device: &wgpu::Device,
    label: &str,
    (width, height): (u32, u32),
    format: wgpu::TextureFormat,
    usage: wgpu::TextureUsages,
) -> wgpu::Texture {
    device.create_texture(&pipeline::texture_2d(label, (width, height), format, usage))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blended_quads_are_drawn_farthest_first() {
        let centres = [
            Vec3::new(1.0, 0.0, 0.0),
            Vec3::new(5.0, 0.0, 0.0),
            Vec3::new(3.0, 0.0, 0.0),
            Vec3::new(-4.0, 0.0, 0.0),
        ];
        assert_eq!(back_to_front(&centres, Vec3::ZERO), vec![1, 3, 2, 0]);
        // From the other side the order turns round.
        assert_eq!(
            back_to_front(&centres, Vec3::new(6.0, 0.0, 0.0)),
            vec![3, 0, 2, 1]
        );
        assert!(back_to_front(&[], Vec3::ZERO).is_empty());
    }

    #[test]
    fn a_quads_centre_is_the_mean_of_its_corners() {
        let quad = |x0: u32, y: u32, lowered: bool| {
            [[x0, y, 0], [x0 + 2, y, 0], [x0 + 2, y, 1], [x0, y, 1]]
                .map(|p| Vertex::pack(p, 2, 3, lowered, 0, 60, 0))
        };
        let mut vertices = quad(0, 4, false).to_vec();
        vertices.extend(quad(10, 4, true));
        let centres = quad_centres(&vertices);
        assert_eq!(centres.len(), 2);
        assert_eq!(centres[0], Vec3::new(1.0, 4.0, 0.5));
        assert_eq!(centres[1], Vec3::new(11.0, 3.875, 0.5));
    }

    #[test]
    fn only_quads_in_planes_the_eye_is_beyond_are_drawn() {
        // Face, rank: two +x quads at x = 32 and x = 5 (ranks 0 and 27),
        // three +y quads at y = 9, 5 and 3, one -y quad at y = 4.
        let quads = [(0, 0), (0, 27), (2, 23), (2, 27), (2, 29), (3, 4)];
        let planes = SolidPlanes::of(quads);
        assert_eq!(planes.end(), 6);
        let eye = |x: f32, y: f32| Vec3::new(x, y, 16.0);
        // +x faces are seen from beyond their plane: at x = 10 only the
        // one at x = 5; from beyond the chunk both; from x = 5 neither
        // (edge on) and from before the chunk none.
        assert_eq!(planes.facing(0, eye(10.0, 0.0)), 1..2);
        assert_eq!(planes.facing(0, eye(40.0, 0.0)), 0..2);
        assert_eq!(planes.facing(0, eye(5.0, 0.0)), 2..2);
        assert_eq!(planes.facing(0, eye(-3.0, 0.0)), 2..2);
        // +y at y = 6: the quads at 5 and 3, not the one at 9.
        assert_eq!(planes.facing(2, eye(0.0, 6.0)), 3..5);
        // -y (seen from below) at y = 3.5: the quad at 4.
        assert_eq!(planes.facing(3, eye(0.0, 3.5)), 5..6);
        assert_eq!(planes.facing(3, eye(0.0, 4.5)), 6..6);
        // Faces with no quads: empty wherever the eye is.
        assert!(planes.facing(1, eye(-10.0, 0.0)).is_empty());
        assert!(planes.facing(4, eye(0.0, 0.0)).is_empty());
    }

    #[test]
    fn solid_quads_are_ranked_nearest_plane_first() {
        let at = |y: u32, face: usize| Vertex::pack([0, y, 0], face, 3, false, 0, 60, 0);
        let mut up = [at(3, 2), at(9, 2), at(5, 2)];
        up.sort_by_key(plane_rank);
        assert_eq!(up.map(|v| v.corner()[1]), [9, 5, 3], "+y: highest first");
        assert_eq!(plane_rank(&at(9, 2)), 23);
        let mut down = [at(3, 3), at(9, 3), at(5, 3)];
        down.sort_by_key(plane_rank);
        assert_eq!(down.map(|v| v.corner()[1]), [3, 5, 9], "-y: lowest first");
        assert_eq!(plane_rank(&at(9, 3)), 9);
    }

    #[test]
    fn the_shader_fetches_tiles_of_the_atlas_size() {
        let line = format!("const TILE: f32 = {TILE}.0;");
        assert!(include_str!("shaders.wgsl").contains(&line), "{line}");
    }

    #[test]
    fn chunks_wholly_in_the_fog_are_skipped() {
        let (min, max) = (Vec3::new(64.0, -32.0, 0.0), Vec3::new(96.0, 0.0, 32.0));
        let eye = Vec3::new(0.0, 100.0, 16.0);
        // Horizontally 64 away: inside a fog ending at 70, not at 60.
        assert!(!in_fog(min, max, eye, [40.0, 70.0, 0.0]));
        assert!(in_fog(min, max, eye, [30.0, 60.0, 0.0]));
        // In 3D (under water) the height counts too.
        assert!(in_fog(min, max, eye, [40.0, 70.0, 1.0]));
    }
}
