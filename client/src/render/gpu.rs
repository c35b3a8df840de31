//! The GPU side: the wgpu instance (Vulkan only), device and queue, the
//! pipelines (chunks; flat colour in the world for boxes and the target's
//! outline; flat colour on the screen for the overlay), the atlas as a
//! texture array, each chunk's vertex and index buffers, and drawing one
//! frame into a texture view (a window's surface or an offscreen texture),
//! skipping chunks outside the view frustum; and reading a texture back.
//!
//! Owns: every GPU resource. Does not own: meshing (`mesh`), what the
//! overlay shows (`overlay`), the camera's placement (`camera`, `player`),
//! windows and surfaces (`window`).

use std::collections::HashMap;

use buildat_voxel::geometry::{CHUNK_SIZE, Pos, chunk_origin};
use glam::Vec3;
use wgpu::util::DeviceExt;

use super::RenderError;
use super::atlas::{Atlas, TILE};
use super::camera::{Camera, Frustum};
use super::mesh::{ChunkMesh, Vertex};
use crate::sandbox::Daylight;

/// The offscreen target's format (also preferred for windows).
pub const COLOUR_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Rgba8UnormSrgb;
const DEPTH_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Depth32Float;
/// Bytes of one chunk vertex on the GPU.
const VERTEX_BYTES: usize = 7 * 4;
/// Bytes of one flat vertex.
const FLAT_BYTES: usize = 7 * 4;
/// The light's direction (from the sun, slanted so faces differ).
const LIGHT: [f32; 3] = [-0.45, -0.8, -0.35];

/// A vertex of flat-coloured geometry: world or screen (NDC) position.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FlatVertex {
    pub position: [f32; 3],
    pub colour: [f32; 4],
}

// TEMPORARY (helper M, issue 47): unpacks the mesher's packed 8-byte
// vertices into the old 28-byte layout until G rewrites this for them.
fn vertex_bytes(chunk: Pos, vertices: &[Vertex]) -> Vec<u8> {
    let origin = chunk_origin(chunk).map(|c| c as f32);
    let mut out = Vec::with_capacity(vertices.len() * VERTEX_BYTES);
    for v in vertices {
        let p = v.position();
        let [x, y, z] = [0, 1, 2].map(|a| origin[a] + p[a]);
        let uv = match v.face() / 2 {
            0 => [z, -y],
            1 => [x, z],
            _ => [x, -y],
        };
        for f in [x, y, z].iter().chain(&uv) {
            out.extend_from_slice(&f.to_le_bytes());
        }
        out.extend_from_slice(&v.layer().to_le_bytes());
        let light = ((v.sun_sum() / 4) << 4) | (v.block_sum() / 4);
        let face_ao = v.face() as u32 | (v.ao() << 3) | (light << 5);
        out.extend_from_slice(&face_ao.to_le_bytes());
    }
    out
}

fn flat_bytes(vertices: &[FlatVertex]) -> Vec<u8> {
    let mut out = Vec::with_capacity(vertices.len() * FLAT_BYTES);
    for v in vertices {
        for f in v.position.iter().chain(&v.colour) {
            out.extend_from_slice(&f.to_le_bytes());
        }
    }
    out
}

fn index_bytes(indices: &[u32]) -> Vec<u8> {
    indices.iter().flat_map(|i| i.to_le_bytes()).collect()
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

struct GpuChunk {
    vertices: wgpu::Buffer,
    indices: wgpu::Buffer,
    count: u32,
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
}

/// Counters of the last frame.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FrameStats {
    pub chunks_drawn: usize,
    pub chunks_culled: usize,
    pub triangles: usize,
}

pub struct Renderer {
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
    format: wgpu::TextureFormat,
    globals: wgpu::Buffer,
    bind_layout: wgpu::BindGroupLayout,
    bind_group: Option<wgpu::BindGroup>,
    sampler: wgpu::Sampler,
    chunk_pipeline: wgpu::RenderPipeline,
    world_triangles: wgpu::RenderPipeline,
    world_lines: wgpu::RenderPipeline,
    screen_triangles: wgpu::RenderPipeline,
    chunks: HashMap<Pos, GpuChunk>,
    depth: Option<(u32, u32, wgpu::TextureView)>,
    atlas_version: u64,
    /// The UI's textured quads (`ui_gpu`: the frontends set them, `draw`
    /// draws them last).
    pub ui: super::ui_gpu::UiLayer,
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
            size: 128,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let bind_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("globals and atlas"),
            entries: &[
                wgpu::BindGroupLayoutEntry {
                    binding: 0,
                    visibility: wgpu::ShaderStages::VERTEX_FRAGMENT,
                    ty: wgpu::BindingType::Buffer {
                        ty: wgpu::BufferBindingType::Uniform,
                        has_dynamic_offset: false,
                        min_binding_size: None,
                    },
                    count: None,
                },
                wgpu::BindGroupLayoutEntry {
                    binding: 1,
                    visibility: wgpu::ShaderStages::FRAGMENT,
                    ty: wgpu::BindingType::Texture {
                        sample_type: wgpu::TextureSampleType::Float { filterable: true },
                        view_dimension: wgpu::TextureViewDimension::D2Array,
                        multisampled: false,
                    },
                    count: None,
                },
                wgpu::BindGroupLayoutEntry {
                    binding: 2,
                    visibility: wgpu::ShaderStages::FRAGMENT,
                    ty: wgpu::BindingType::Sampler(wgpu::SamplerBindingType::Filtering),
                    count: None,
                },
            ],
        });
        let layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("layout"),
            bind_group_layouts: &[Some(&bind_layout)],
            immediate_size: 0,
        });
        let sampler = device.create_sampler(&wgpu::SamplerDescriptor {
            label: Some("tiles"),
            address_mode_u: wgpu::AddressMode::Repeat,
            address_mode_v: wgpu::AddressMode::Repeat,
            mag_filter: wgpu::FilterMode::Nearest,
            min_filter: wgpu::FilterMode::Nearest,
            ..Default::default()
        });
        let chunk_attributes =
            wgpu::vertex_attr_array![0 => Float32x3, 1 => Float32x2, 2 => Uint32, 3 => Uint32];
        let flat_attributes = wgpu::vertex_attr_array![0 => Float32x3, 1 => Float32x4];
        let pipeline = |label: &str,
                        vertex_entry: &str,
                        fragment_entry: &str,
                        attributes: &[wgpu::VertexAttribute],
                        stride: usize,
                        topology: wgpu::PrimitiveTopology,
                        depth: bool,
                        cull: bool| {
            device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
                label: Some(label),
                layout: Some(&layout),
                vertex: wgpu::VertexState {
                    module: &shader,
                    entry_point: Some(vertex_entry),
                    compilation_options: Default::default(),
                    buffers: &[Some(wgpu::VertexBufferLayout {
                        array_stride: stride as u64,
                        step_mode: wgpu::VertexStepMode::Vertex,
                        attributes,
                    })],
                },
                primitive: wgpu::PrimitiveState {
                    topology,
                    front_face: wgpu::FrontFace::Ccw,
                    cull_mode: cull.then_some(wgpu::Face::Back),
                    ..Default::default()
                },
                depth_stencil: Some(wgpu::DepthStencilState {
                    format: DEPTH_FORMAT,
                    depth_write_enabled: Some(depth),
                    depth_compare: Some(if depth {
                        wgpu::CompareFunction::LessEqual
                    } else {
                        wgpu::CompareFunction::Always
                    }),
                    stencil: Default::default(),
                    bias: Default::default(),
                }),
                multisample: Default::default(),
                fragment: Some(wgpu::FragmentState {
                    module: &shader,
                    entry_point: Some(fragment_entry),
                    compilation_options: Default::default(),
                    targets: &[Some(wgpu::ColorTargetState {
                        format,
                        blend: Some(wgpu::BlendState::ALPHA_BLENDING),
                        write_mask: wgpu::ColorWrites::ALL,
                    })],
                }),
                multiview_mask: None,
                cache: None,
            })
        };
        use wgpu::PrimitiveTopology::{LineList, TriangleList};
        let chunk_pipeline = pipeline(
            "chunks",
            "vs_chunk",
            "fs_chunk",
            &chunk_attributes,
            VERTEX_BYTES,
            TriangleList,
            true,
            true,
        );
        let world_triangles = pipeline(
            "boxes",
            "vs_world_flat",
            "fs_flat",
            &flat_attributes,
            FLAT_BYTES,
            TriangleList,
            true,
            true,
        );
        let world_lines = pipeline(
            "outline",
            "vs_world_flat",
            "fs_flat",
            &flat_attributes,
            FLAT_BYTES,
            LineList,
            true,
            false,
        );
        let screen_triangles = pipeline(
            "overlay",
            "vs_screen_flat",
            "fs_flat",
            &flat_attributes,
            FLAT_BYTES,
            TriangleList,
            false,
            false,
        );
        let ui = super::ui_gpu::UiLayer::new(&device, &queue, format);
        Self {
            device,
            queue,
            format,
            globals,
            bind_layout,
            bind_group: None,
            sampler,
            chunk_pipeline,
            world_triangles,
            world_lines,
            screen_triangles,
            chunks: HashMap::new(),
            depth: None,
            atlas_version: 0,
            ui,
        }
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
        let layers = u32::try_from(atlas.layers.len()).unwrap_or(1).max(1);
        let size = wgpu::Extent3d {
            width: TILE,
            height: TILE,
            depth_or_array_layers: layers,
        };
        let texture = self.device.create_texture(&wgpu::TextureDescriptor {
            label: Some("atlas"),
            size,
            mip_level_count: 1,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format: wgpu::TextureFormat::Rgba8UnormSrgb,
            usage: wgpu::TextureUsages::TEXTURE_BINDING | wgpu::TextureUsages::COPY_DST,
            view_formats: &[],
        });
        let data: Vec<u8> = atlas.layers.concat();
        self.queue.write_texture(
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
        self.bind_group = Some(self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("globals and atlas"),
            layout: &self.bind_layout,
            entries: &[
                wgpu::BindGroupEntry {
                    binding: 0,
                    resource: self.globals.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 1,
                    resource: wgpu::BindingResource::TextureView(&view),
                },
                wgpu::BindGroupEntry {
                    binding: 2,
                    resource: wgpu::BindingResource::Sampler(&self.sampler),
                },
            ],
        }));
    }

    /// Replaces a chunk's buffers (`None` or an empty mesh drops them).
    pub fn set_chunk(&mut self, chunk: Pos, mesh: Option<&ChunkMesh>) {
        let Some(mesh) = mesh.filter(|m| !m.is_empty()) else {
            self.chunks.remove(&chunk);
            return;
        };
        let all: Vec<Vertex> = mesh.vertices().copied().collect();
        let quad_indices: Vec<u32> = (0..all.len() as u32 / 4)
            .flat_map(|q| [0, 1, 2, 0, 2, 3].map(|i| 4 * q + i))
            .collect();
        let vertices = self
            .device
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("chunk vertices"),
                contents: &vertex_bytes(chunk, &all),
                usage: wgpu::BufferUsages::VERTEX,
            });
        let indices = self
            .device
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("chunk indices"),
                contents: &index_bytes(&quad_indices),
                usage: wgpu::BufferUsages::INDEX,
            });
        self.chunks.insert(
            chunk,
            GpuChunk {
                vertices,
                indices,
                count: u32::try_from(quad_indices.len()).unwrap_or(u32::MAX),
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
        let mut uniform: Vec<f32> = view_projection.to_cols_array().to_vec();
        uniform.extend_from_slice(&[camera.eye.x, camera.eye.y, camera.eye.z, 1.0]);
        uniform.extend_from_slice(&[sky[0], sky[1], sky[2], 1.0]);
        uniform.extend_from_slice(&[view_radius * 0.6, view_radius, 0.0, 0.0]);
        uniform.extend_from_slice(&[light.x, light.y, light.z, sun]);
        let bytes: Vec<u8> = uniform.iter().flat_map(|f| f.to_le_bytes()).collect();
        self.queue.write_buffer(&self.globals, 0, &bytes);

        let depth = self.depth_view(width, height);
        let frustum = Frustum::new(view_projection);
        let mut stats = FrameStats::default();
        let flat_buffer = |label: &str, vertices: &[FlatVertex]| {
            (!vertices.is_empty()).then(|| {
                (
                    self.device
                        .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                            label: Some(label),
                            contents: &flat_bytes(vertices),
                            usage: wgpu::BufferUsages::VERTEX,
                        }),
                    u32::try_from(vertices.len()).unwrap_or(0),
                )
            })
        };
        let boxes = flat_buffer("boxes", &extras.world_triangles);
        let lines = flat_buffer("outline", &extras.world_lines);
        let overlay = flat_buffer("overlay", &extras.screen_triangles);

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
                            r: f64::from(sky[0]),
                            g: f64::from(sky[1]),
                            b: f64::from(sky[2]),
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
            if let Some(bind_group) = &self.bind_group {
                pass.set_bind_group(0, bind_group, &[]);
                pass.set_pipeline(&self.chunk_pipeline);
                let size = CHUNK_SIZE as f32;
                for (chunk, gpu) in &self.chunks {
                    let min = Vec3::from(chunk_origin(*chunk).map(|c| c as f32));
                    if !frustum.intersects_box(min, min + Vec3::splat(size)) {
                        stats.chunks_culled += 1;
                        continue;
                    }
                    stats.chunks_drawn += 1;
                    stats.triangles += gpu.count as usize / 3;
                    pass.set_vertex_buffer(0, gpu.vertices.slice(..));
                    pass.set_index_buffer(gpu.indices.slice(..), wgpu::IndexFormat::Uint32);
                    pass.draw_indexed(0..gpu.count, 0, 0..1);
                }
                for (pipeline, buffer) in [
                    (&self.world_triangles, &boxes),
                    (&self.world_lines, &lines),
                    (&self.screen_triangles, &overlay),
                ] {
                    if let Some((buffer, count)) = buffer {
                        pass.set_pipeline(pipeline);
                        pass.set_vertex_buffer(0, buffer.slice(..));
                        pass.draw(0..*count, 0..1);
                    }
                }
                // ---- Hook (W): the UI (icons, images) is drawn here, last.
                self.ui.draw(&mut pass);
            }
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
    device.create_texture(&wgpu::TextureDescriptor {
        label: Some(label),
        size: wgpu::Extent3d {
            width,
            height,
            depth_or_array_layers: 1,
        },
        mip_level_count: 1,
        sample_count: 1,
        dimension: wgpu::TextureDimension::D2,
        format,
        usage,
        view_formats: &[],
    })
}
