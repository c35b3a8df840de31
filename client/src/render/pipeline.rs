//! Pieces of wgpu set-up the renderers share (`gpu`, `models`, `ui_gpu`):
//! bind group layout entries,
//! an RGBA texture and its bind group, the texel sampler and a render
//! pipeline of one vertex and one fragment entry into one colour target
//! with depth.
//!
//! Owns: those descriptors. Does not own: any buffer, texture or draw
//! call (each renderer its own).

/// A uniform buffer seen by both shader stages.
pub fn uniform_entry(binding: u32) -> wgpu::BindGroupLayoutEntry {
    wgpu::BindGroupLayoutEntry {
        binding,
        visibility: wgpu::ShaderStages::VERTEX_FRAGMENT,
        ty: wgpu::BindingType::Buffer {
            ty: wgpu::BufferBindingType::Uniform,
            has_dynamic_offset: false,
            min_binding_size: None,
        },
        count: None,
    }
}

/// A filterable colour texture sampled by the fragment stage.
pub fn texture_entry(
    binding: u32,
    view_dimension: wgpu::TextureViewDimension,
) -> wgpu::BindGroupLayoutEntry {
    wgpu::BindGroupLayoutEntry {
        binding,
        visibility: wgpu::ShaderStages::FRAGMENT,
        ty: wgpu::BindingType::Texture {
            sample_type: wgpu::TextureSampleType::Float { filterable: true },
            view_dimension,
            multisampled: false,
        },
        count: None,
    }
}

/// A filtering sampler used by the fragment stage.
pub fn sampler_entry(binding: u32) -> wgpu::BindGroupLayoutEntry {
    wgpu::BindGroupLayoutEntry {
        binding,
        visibility: wgpu::ShaderStages::FRAGMENT,
        ty: wgpu::BindingType::Sampler(wgpu::SamplerBindingType::Filtering),
        count: None,
    }
}

/// Texels drawn sharp (nearest) and repeated: voxel and model textures.
pub fn texel_sampler(device: &wgpu::Device, label: &str) -> wgpu::Sampler {
    device.create_sampler(&wgpu::SamplerDescriptor {
        label: Some(label),
        address_mode_u: wgpu::AddressMode::Repeat,
        address_mode_v: wgpu::AddressMode::Repeat,
        mag_filter: wgpu::FilterMode::Nearest,
        min_filter: wgpu::FilterMode::Nearest,
        ..Default::default()
    })
}

/// An sRGB RGBA8 2D texture of `width` × `height` texels that shaders
/// sample and the queue writes.
pub fn rgba_texture(label: &str, width: u32, height: u32) -> wgpu::TextureDescriptor<'_> {
    texture_2d(
        label,
        (width, height),
        wgpu::TextureFormat::Rgba8UnormSrgb,
        wgpu::TextureUsages::TEXTURE_BINDING | wgpu::TextureUsages::COPY_DST,
    )
}

/// A single-sample 2D texture of one mip level.
pub fn texture_2d(
    label: &str,
    (width, height): (u32, u32),
    format: wgpu::TextureFormat,
    usage: wgpu::TextureUsages,
) -> wgpu::TextureDescriptor<'_> {
    wgpu::TextureDescriptor {
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
    }
}

/// A bind group of `uniform` (binding 0, when given), then `view` and
/// `sampler` (the next two bindings): the layouts made of
/// [`uniform_entry`], [`texture_entry`], [`sampler_entry`].
pub fn texture_bind_group(
    device: &wgpu::Device,
    label: &str,
    layout: &wgpu::BindGroupLayout,
    uniform: Option<&wgpu::Buffer>,
    view: &wgpu::TextureView,
    sampler: &wgpu::Sampler,
) -> wgpu::BindGroup {
    let mut entries: Vec<wgpu::BindGroupEntry<'_>> = uniform
        .map(|buffer| wgpu::BindGroupEntry {
            binding: 0,
            resource: buffer.as_entire_binding(),
        })
        .into_iter()
        .collect();
    let first = entries.len() as u32;
    entries.push(wgpu::BindGroupEntry {
        binding: first,
        resource: wgpu::BindingResource::TextureView(view),
    });
    entries.push(wgpu::BindGroupEntry {
        binding: first + 1,
        resource: wgpu::BindingResource::Sampler(sampler),
    });
    device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some(label),
        layout,
        entries: &entries,
    })
}

/// A render pipeline: `vertex_entry` and `fragment_entry` of `shader`,
/// counter-clockwise triangles (or lines) front, into one target of
/// `format` with a depth buffer of `depth_format`.
pub struct PipelineDesc<'a> {
    pub label: &'a str,
    pub layout: &'a wgpu::PipelineLayout,
    pub shader: &'a wgpu::ShaderModule,
    pub vertex_entry: &'a str,
    pub fragment_entry: &'a str,
    pub buffers: &'a [Option<wgpu::VertexBufferLayout<'a>>],
    pub topology: wgpu::PrimitiveTopology,
    /// Back faces culled; else both sides drawn.
    pub cull: bool,
    pub format: wgpu::TextureFormat,
    pub blend: Option<wgpu::BlendState>,
    pub depth_format: wgpu::TextureFormat,
    pub depth_write: bool,
    pub depth_compare: wgpu::CompareFunction,
}

impl PipelineDesc<'_> {
    pub fn create(&self, device: &wgpu::Device) -> wgpu::RenderPipeline {
        device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
            label: Some(self.label),
            layout: Some(self.layout),
            vertex: wgpu::VertexState {
                module: self.shader,
                entry_point: Some(self.vertex_entry),
                compilation_options: Default::default(),
                buffers: self.buffers,
            },
            primitive: wgpu::PrimitiveState {
                topology: self.topology,
                front_face: wgpu::FrontFace::Ccw,
                cull_mode: self.cull.then_some(wgpu::Face::Back),
                ..Default::default()
            },
            depth_stencil: Some(wgpu::DepthStencilState {
                format: self.depth_format,
                depth_write_enabled: Some(self.depth_write),
                depth_compare: Some(self.depth_compare),
                stencil: Default::default(),
                bias: Default::default(),
            }),
            multisample: Default::default(),
            fragment: Some(wgpu::FragmentState {
                module: self.shader,
                entry_point: Some(self.fragment_entry),
                compilation_options: Default::default(),
                targets: &[Some(wgpu::ColorTargetState {
                    format: self.format,
                    blend: self.blend,
                    write_mask: wgpu::ColorWrites::ALL,
                })],
            }),
            multiview_mask: None,
            cache: None,
        })
    }
}
