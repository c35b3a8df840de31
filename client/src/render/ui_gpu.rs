//! The UI's textured 2D quads on the GPU: one RGBA texture of
//! [`CELL`]-pixel cells (cell 0 white, for flat colour; the others item
//! icons and `client_data` images, filled on first use), one vertex list
//! per frame (position in normalised device coordinates, texture
//! coordinate, colour multiplied in), drawn last in the frame's pass with
//! alpha blending, in list order (so a count drawn after an icon is on top).
//!
//! Owns: the UI texture and its cells, the UI pipeline and its shader.
//! Does not own: what is drawn where (`overlay`), the pictures in the
//! cells (`icons`), the frame's pass (`gpu`).

use std::collections::HashMap;

use super::pipeline;

/// Texels along each side of a cell.
pub const CELL: u32 = 64;
/// Texels along each side of the UI texture.
const SIDE: u32 = 1024;
const CELLS_PER_ROW: u32 = SIDE / CELL;
/// Bytes of one [`UiVertex`].
const VERTEX_BYTES: u64 = 8 * 4;

const SHADER: &str = r"
struct VsOut {
    @builtin(position) position: vec4<f32>,
    @location(0) uv: vec2<f32>,
    @location(1) colour: vec4<f32>,
};

@group(0) @binding(0) var ui_texture: texture_2d<f32>;
@group(0) @binding(1) var ui_sampler: sampler;

@vertex
fn vs_ui(@location(0) position: vec2<f32>, @location(1) uv: vec2<f32>,
         @location(2) colour: vec4<f32>) -> VsOut {
    var out: VsOut;
    out.position = vec4<f32>(position, 0.0, 1.0);
    out.uv = uv;
    out.colour = colour;
    return out;
}

@fragment
fn fs_ui(in: VsOut) -> @location(0) vec4<f32> {
    return textureSample(ui_texture, ui_sampler, in.uv) * in.colour;
}
";

/// A corner of a UI quad.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UiVertex {
    /// Normalised device coordinates.
    pub position: [f32; 2],
    /// Texture coordinates in the UI texture (0..1).
    pub uv: [f32; 2],
    /// Multiplied with the texel (linear).
    pub colour: [f32; 4],
}

/// Where a picture is in the UI texture: u0, v0, u1, v1.
pub type UvRect = [f32; 4];

/// The texture coordinates of white (cell 0's middle): flat colour.
pub const WHITE: [f32; 2] = [
    CELL as f32 * 0.5 / SIDE as f32,
    CELL as f32 * 0.5 / SIDE as f32,
];

/// The UI's texture, pipeline and this frame's quads.
pub struct UiLayer {
    texture: wgpu::Texture,
    bind_group: wgpu::BindGroup,
    pipeline: wgpu::RenderPipeline,
    buffer: Option<(wgpu::Buffer, u64)>,
    vertices: u32,
    /// Picture key → cell.
    cells: HashMap<String, u32>,
    /// Keys that had no picture (not asked again until [`Self::clear`]).
    missing: HashMap<String, ()>,
    next_cell: u32,
    /// The version of what the pictures were made from (the atlas's).
    version: u64,
}

impl UiLayer {
    pub fn new(device: &wgpu::Device, queue: &wgpu::Queue, format: wgpu::TextureFormat) -> Self {
        let texture = device.create_texture(&pipeline::rgba_texture("ui", SIDE, SIDE));
        let view = texture.create_view(&Default::default());
        let sampler = device.create_sampler(&wgpu::SamplerDescriptor {
            label: Some("ui"),
            mag_filter: wgpu::FilterMode::Nearest,
            min_filter: wgpu::FilterMode::Linear,
            ..Default::default()
        });
        let bind_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("ui"),
            entries: &[
                pipeline::texture_entry(0, wgpu::TextureViewDimension::D2),
                pipeline::sampler_entry(1),
            ],
        });
        let bind_group =
            pipeline::texture_bind_group(device, "ui", &bind_layout, None, &view, &sampler);
        let layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("ui"),
            bind_group_layouts: &[Some(&bind_layout)],
            immediate_size: 0,
        });
        let shader = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("ui"),
            source: wgpu::ShaderSource::Wgsl(SHADER.into()),
        });
        let attributes = wgpu::vertex_attr_array![0 => Float32x2, 1 => Float32x2, 2 => Float32x4];
        let pipeline = pipeline::PipelineDesc {
            label: "ui",
            layout: &layout,
            shader: &shader,
            vertex_entry: "vs_ui",
            fragment_entry: "fs_ui",
            buffers: &[Some(wgpu::VertexBufferLayout {
                array_stride: VERTEX_BYTES,
                step_mode: wgpu::VertexStepMode::Vertex,
                attributes: &attributes,
            })],
            topology: wgpu::PrimitiveTopology::TriangleList,
            cull: false,
            format,
            blend: Some(wgpu::BlendState::ALPHA_BLENDING),
            depth_format: wgpu::TextureFormat::Depth32Float,
            depth_write: false,
            depth_compare: wgpu::CompareFunction::Always,
        }
        .create(device);
        let layer = Self {
            texture,
            bind_group,
            pipeline,
            buffer: None,
            vertices: 0,
            cells: HashMap::new(),
            missing: HashMap::new(),
            next_cell: 1,
            version: 0,
        };
        layer.write_cell(queue, 0, &vec![255; (CELL * CELL * 4) as usize]);
        layer
    }

    fn write_cell(&self, queue: &wgpu::Queue, cell: u32, rgba: &[u8]) {
        queue.write_texture(
            wgpu::TexelCopyTextureInfo {
                texture: &self.texture,
                mip_level: 0,
                origin: wgpu::Origin3d {
                    x: (cell % CELLS_PER_ROW) * CELL,
                    y: (cell / CELLS_PER_ROW) * CELL,
                    z: 0,
                },
                aspect: wgpu::TextureAspect::All,
            },
            rgba,
            wgpu::TexelCopyBufferLayout {
                offset: 0,
                bytes_per_row: Some(CELL * 4),
                rows_per_image: Some(CELL),
            },
            wgpu::Extent3d {
                width: CELL,
                height: CELL,
                depth_or_array_layers: 1,
            },
        );
    }

    fn uv(cell: u32) -> UvRect {
        let side = SIDE as f32;
        // Half a texel in, so linear filtering never reads the neighbour.
        let x = ((cell % CELLS_PER_ROW) * CELL) as f32 + 0.5;
        let y = ((cell / CELLS_PER_ROW) * CELL) as f32 + 0.5;
        let size = CELL as f32 - 1.0;
        [x / side, y / side, (x + size) / side, (y + size) / side]
    }

    /// Forgets every picture when `version` (what they are made from)
    /// changed.
    pub fn set_version(&mut self, version: u64) {
        if version != self.version {
            self.version = version;
            self.cells.clear();
            self.missing.clear();
            self.next_cell = 1;
        }
    }

    /// The picture `key`, made by `make` (`CELL`² RGBA) the first time;
    /// `None` when it has none or the texture is full.
    pub fn picture(
        &mut self,
        queue: &wgpu::Queue,
        key: &str,
        make: impl FnOnce() -> Option<Vec<u8>>,
    ) -> Option<UvRect> {
        if let Some(&cell) = self.cells.get(key) {
            return Some(Self::uv(cell));
        }
        if self.missing.contains_key(key) || self.next_cell >= CELLS_PER_ROW * CELLS_PER_ROW {
            return None;
        }
        let Some(rgba) = make().filter(|p| p.len() == (CELL * CELL * 4) as usize) else {
            self.missing.insert(key.to_string(), ());
            return None;
        };
        let cell = self.next_cell;
        self.next_cell += 1;
        self.write_cell(queue, cell, &rgba);
        self.cells.insert(key.to_string(), cell);
        Some(Self::uv(cell))
    }

    /// This frame's quads (triangle list), drawn by [`Self::draw`].
    pub fn set_vertices(
        &mut self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        vertices: &[UiVertex],
    ) {
        self.vertices = u32::try_from(vertices.len()).unwrap_or(0);
        if vertices.is_empty() {
            return;
        }
        let mut bytes = Vec::with_capacity(vertices.len() * VERTEX_BYTES as usize);
        for v in vertices {
            for f in v.position.iter().chain(&v.uv).chain(&v.colour) {
                bytes.extend_from_slice(&f.to_le_bytes());
            }
        }
        let size = bytes.len() as u64;
        if self
            .buffer
            .as_ref()
            .is_none_or(|(_, capacity)| *capacity < size)
        {
            let capacity = size.next_power_of_two().max(64 * 1024);
            let buffer = device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("ui vertices"),
                size: capacity,
                usage: wgpu::BufferUsages::VERTEX | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            self.buffer = Some((buffer, capacity));
        }
        if let Some((buffer, _)) = &self.buffer {
            queue.write_buffer(buffer, 0, &bytes);
        }
    }

    /// Draws this frame's quads (the last thing in the pass).
    pub fn draw(&self, pass: &mut wgpu::RenderPass<'_>) {
        let Some((buffer, _)) = &self.buffer else {
            return;
        };
        if self.vertices == 0 {
            return;
        }
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, &self.bind_group, &[]);
        pass.set_vertex_buffer(0, buffer.slice(..));
        pass.draw(0..self.vertices, 0..1);
    }
}
