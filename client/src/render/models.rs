//! Models: glTF 2.0 binary files (`.glb`) from the modules' `client_data`,
//! drawn in the world where Lua placed them (`buildat.ui.set_model`:
//! players, creatures), textured, animated by `walk` while the model moves
//! horizontally faster than [`WALK_SPEED`] and by `idle` otherwise.
//!
//! Owns: reading a model ([`Model::parse`]: pure, bytes in and a model out,
//! every offset and count checked, errors named by [`ModelError`]; a
//! malformed file never panics), sampling its animations ([`Model::pose`]),
//! the cache of models by file (loaded lazily from the files the scene
//! holds; a model that fails draws as a box, with one warning naming the
//! file and the cause), where the window draws each model (eased like
//! boxes), and the GPU side: the pipeline (`models.wgsl`), each model's
//! texture and the frame's vertices (posed on the CPU: models are small).
//! Does not own: the models Lua set (`sandbox::ui`), the files (`Scene`),
//! the frame's render pass, camera or daylight (`gpu`).
//!
//! Conventions: glTF's (+y up, metres as voxels, the model's front facing
//! +z); a model's origin is the middle of its feet. One base colour
//! texture per model (the first a material names; others reuse it).
//! Animations: node translation, rotation and scale channels, `LINEAR` or
//! `STEP`, looped over the animation's length.
//!
//! The pipeline binds its resources at group [`MODEL_GROUP`] only, so the
//! other pipelines' groups stay bound across its draw.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use glam::{Mat4, Quat, Vec3};
use thiserror::Error;
use wgpu::util::DeviceExt;

use super::easing::EasedBoxes;
use super::pipeline;
use super::png_rgba::{self, PngError};
use crate::sandbox::UiModel;

/// The largest model file read.
pub const MAX_MODEL_BYTES: usize = 4 << 20;
/// The most nodes a model may have.
pub const MAX_NODES: usize = 256;
/// The most triangle corners a model may have (all its meshes).
pub const MAX_VERTICES: usize = 65_536;
/// The most keyframes of one animation channel.
pub const MAX_KEYFRAMES: usize = 4_096;
/// The largest texture side, in texels.
pub const MAX_TEXTURE_SIDE: u32 = 1_024;
/// Horizontal speed (voxels a second) above which a model walks.
pub const WALK_SPEED: f32 = 0.1;
/// The size of the box a model that cannot be drawn is drawn as.
pub const FALLBACK_SIZE: f32 = 0.8;
/// The bind group index of the models' resources.
pub const MODEL_GROUP: u32 = 3;
/// Floats of one posed vertex: position, normal, uv, colour, textured.
const VERTEX_FLOATS: usize = 13;

/// Why a model cannot be read.
#[derive(Debug, Error, Clone, PartialEq)]
#[non_exhaustive]
pub enum ModelError {
    #[error("the file is not among the client_data files")]
    Missing,
    #[error("{0} bytes is over the limit of {MAX_MODEL_BYTES}")]
    TooLarge(usize),
    #[error("not a binary glTF file (.glb; it starts with \"glTF\")")]
    NotGlb,
    #[error("not valid glTF 2.0: {0}")]
    Parse(String),
    #[error("buffer {0} is not the file's binary chunk (external buffers are not read)")]
    ExternalBuffer(usize),
    #[error("buffer {0} is longer than the file's binary chunk")]
    ShortBuffer(usize),
    #[error("accessor {index}: {cause}")]
    Accessor { index: usize, cause: String },
    #[error("mesh {mesh}: {cause}")]
    Mesh { mesh: usize, cause: String },
    #[error("over {MAX_NODES} nodes")]
    TooManyNodes,
    #[error("over {MAX_VERTICES} vertices")]
    TooManyVertices,
    #[error("node {0}: a cycle or a second parent in the node hierarchy")]
    Hierarchy(usize),
    #[error("node {0}: its transform is not finite")]
    Transform(usize),
    #[error("no mesh to draw")]
    NoMesh,
    #[error("animation {name:?}: {cause}")]
    Animation { name: String, cause: String },
    #[error("texture: {0}")]
    Texture(String),
    #[error("texture {0:?} is not among the client_data files")]
    MissingTexture(String),
}

/// A texture as RGBA8 rows.
pub use super::png_rgba::Rgba as Texture;

impl Texture {
    fn white() -> Self {
        Self {
            width: 1,
            height: 1,
            rgba: vec![255; 4],
        }
    }
}

/// One corner of a triangle, in its node's space.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModelVertex {
    pub position: [f32; 3],
    pub normal: [f32; 3],
    pub uv: [f32; 2],
    /// The material's base colour factor.
    pub colour: [f32; 4],
    /// 1 when the material samples the texture, 0 when it is its colour.
    pub textured: f32,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Property {
    Translation,
    Rotation,
    Scale,
}

#[derive(Debug, Clone, PartialEq)]
struct Channel {
    node: usize,
    property: Property,
    step: bool,
    times: Vec<f32>,
    values: Vec<[f32; 4]>,
}

impl Channel {
    /// The value at `t` (clamped to the first and last keyframes).
    fn sample(&self, t: f32) -> [f32; 4] {
        let after = self.times.partition_point(|&k| k <= t);
        let last = self.values.len() - 1;
        if after == 0 {
            return self.values[0];
        }
        if after > last {
            return self.values[last];
        }
        let (a, b) = (after - 1, after);
        if self.step {
            return self.values[a];
        }
        let span = self.times[b] - self.times[a];
        let f = if span > 0.0 {
            ((t - self.times[a]) / span).clamp(0.0, 1.0)
        } else {
            1.0
        };
        let (va, vb) = (self.values[a], self.values[b]);
        match self.property {
            Property::Rotation => Quat::from_array(va)
                .normalize()
                .slerp(Quat::from_array(vb).normalize(), f)
                .normalize()
                .to_array(),
            _ => std::array::from_fn(|i| va[i] + (vb[i] - va[i]) * f),
        }
    }
}

/// An animation: channels over `duration` seconds, looped.
#[derive(Debug, Clone, PartialEq)]
pub struct Animation {
    pub duration: f32,
    channels: Vec<Channel>,
}

#[derive(Debug, Clone, PartialEq)]
struct Node {
    parent: Option<usize>,
    translation: Vec3,
    rotation: Quat,
    scale: Vec3,
    vertices: Vec<ModelVertex>,
}

/// A model read from a `.glb` file.
#[derive(Debug, Clone, PartialEq)]
pub struct Model {
    nodes: Vec<Node>,
    /// Node indices, parents before their children.
    order: Vec<usize>,
    pub texture: Texture,
    pub walk: Option<Animation>,
    pub idle: Option<Animation>,
    /// The rest pose's bounds (min, max), in the model's space.
    pub bounds: (Vec3, Vec3),
}

/// Whether an accessor holds `count` elements of `data_type` ×
/// `dimensions`, all within its buffer view and the view within `blob`.
fn check_accessor(
    accessor: &gltf::Accessor<'_>,
    blob: &[u8],
    types: &[gltf::accessor::DataType],
    dimensions: gltf::accessor::Dimensions,
    max_count: usize,
) -> Result<usize, ModelError> {
    let index = accessor.index();
    let fail = |cause: &str| ModelError::Accessor {
        index,
        cause: cause.to_string(),
    };
    if accessor.sparse().is_some() {
        return Err(fail("sparse accessors are not read"));
    }
    if !types.contains(&accessor.data_type()) || accessor.dimensions() != dimensions {
        return Err(fail(&format!(
            "expected {types:?} {dimensions:?}, found {:?} {:?}",
            accessor.data_type(),
            accessor.dimensions()
        )));
    }
    let view = accessor.view().ok_or_else(|| fail("no buffer view"))?;
    let count = accessor.count();
    if count == 0 || count > max_count {
        return Err(fail(&format!("{count} elements (1 to {max_count})")));
    }
    let size = accessor.size();
    let stride = view.stride().unwrap_or(size);
    if stride < size {
        return Err(fail("its view's stride is shorter than an element"));
    }
    let end = (count - 1)
        .checked_mul(stride)
        .and_then(|v| v.checked_add(size))
        .and_then(|v| v.checked_add(accessor.offset()));
    if end.is_none_or(|end| end > view.length()) {
        return Err(fail("its elements run past its buffer view"));
    }
    let view_end = view.offset().checked_add(view.length());
    if view_end.is_none_or(|end| end > blob.len()) {
        return Err(fail("its buffer view runs past the binary chunk"));
    }
    Ok(count)
}

/// The bytes of a buffer view, checked against `blob`.
fn view_bytes<'a>(view: &gltf::buffer::View<'_>, blob: &'a [u8]) -> Option<&'a [u8]> {
    let start = view.offset();
    blob.get(start..start.checked_add(view.length())?)
}

/// The encoded bytes of image `index`: a buffer view of `blob`, or a file
/// beside the model (`file`) that `files` holds.
fn image_bytes<'f>(
    document: &gltf::Document,
    index: usize,
    blob: &[u8],
    file: &str,
    files: &dyn Fn(&str) -> Option<&'f [u8]>,
) -> Result<Vec<u8>, ModelError> {
    // Read from the JSON: the crate's `Image::source` panics on an image
    // with neither a view and MIME type nor a URI.
    let json = document
        .as_json()
        .images
        .get(index)
        .ok_or_else(|| ModelError::Texture(format!("no image {index}")))?;
    match (&json.buffer_view, &json.uri) {
        (Some(view), _) => document
            .views()
            .nth(view.value())
            .and_then(|view| view_bytes(&view, blob))
            .map(<[u8]>::to_vec)
            .ok_or_else(|| {
                ModelError::Texture(format!("image {index} runs past the binary chunk"))
            }),
        (None, Some(uri)) => {
            if uri.starts_with("data:") || uri.contains("..") || uri.contains(':') {
                return Err(ModelError::Texture(
                    "data:, scheme and parent-folder URIs are not read (embed the PNG or \
                     name a file beside the model)"
                        .into(),
                ));
            }
            let name = match folder_of(file) {
                "" => uri.to_string(),
                folder => format!("{folder}/{uri}"),
            };
            files(&name)
                .map(<[u8]>::to_vec)
                .ok_or(ModelError::MissingTexture(name))
        }
        (None, None) => Err(ModelError::Texture(format!(
            "image {index} has neither a buffer view nor a URI"
        ))),
    }
}

/// Decodes a PNG into RGBA8, refusing sides over [`MAX_TEXTURE_SIDE`].
pub fn decode_png(bytes: &[u8]) -> Result<Texture, ModelError> {
    let fits = |w, h| w <= MAX_TEXTURE_SIDE && h <= MAX_TEXTURE_SIDE;
    png_rgba::decode(bytes, fits).map_err(|e| {
        ModelError::Texture(match e {
            PngError::Size { .. } => format!("{e} (each side 1 to {MAX_TEXTURE_SIDE})"),
            e => e.to_string(),
        })
    })
}

/// The folder of a `client_data` file name (`a/client_data/models/x.glb`
/// → `a/client_data/models`).
fn folder_of(file: &str) -> &str {
    file.rsplit_once('/').map_or("", |(folder, _)| folder)
}

impl Model {
    /// Reads a `.glb` file named `file` (its `client_data` name: a texture
    /// the file names by URI is looked up beside it with `files`).
    ///
    /// The checks here cover what the `gltf` crate trusts; a panic inside
    /// it all the same (a case they missed) is caught and is an error.
    pub fn parse<'f>(
        bytes: &[u8],
        file: &str,
        files: &dyn Fn(&str) -> Option<&'f [u8]>,
    ) -> Result<Self, ModelError> {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            Self::parse_checked(bytes, file, files)
        }))
        .unwrap_or_else(|_| Err(ModelError::Parse("the glTF reader failed on it".into())))
    }

    fn parse_checked<'f>(
        bytes: &[u8],
        file: &str,
        files: &dyn Fn(&str) -> Option<&'f [u8]>,
    ) -> Result<Self, ModelError> {
        use gltf::accessor::{DataType, Dimensions};
        if bytes.len() > MAX_MODEL_BYTES {
            return Err(ModelError::TooLarge(bytes.len()));
        }
        if !bytes.starts_with(b"glTF") {
            return Err(ModelError::NotGlb);
        }
        let gltf = gltf::Gltf::from_slice(bytes).map_err(|e| ModelError::Parse(e.to_string()))?;
        let blob: &[u8] = gltf.blob.as_deref().unwrap_or(&[]);
        let document = &gltf.document;
        for buffer in document.buffers() {
            match buffer.source() {
                gltf::buffer::Source::Bin => {}
                gltf::buffer::Source::Uri(_) => {
                    return Err(ModelError::ExternalBuffer(buffer.index()));
                }
            }
            if buffer.length() > blob.len() {
                return Err(ModelError::ShortBuffer(buffer.index()));
            }
        }
        let get = |buffer: gltf::Buffer<'_>| match buffer.source() {
            gltf::buffer::Source::Bin => Some(blob),
            gltf::buffer::Source::Uri(_) => None,
        };

        // The hierarchy: one parent each, no cycles.
        let count = document.nodes().len();
        if count > MAX_NODES {
            return Err(ModelError::TooManyNodes);
        }
        let mut parent: Vec<Option<usize>> = vec![None; count];
        for node in document.nodes() {
            for child in node.children() {
                let c = child.index();
                if c == node.index() || parent.get(c).is_none_or(Option::is_some) {
                    return Err(ModelError::Hierarchy(c));
                }
                parent[c] = Some(node.index());
            }
        }
        let mut order: Vec<usize> = (0..count).filter(|&i| parent[i].is_none()).collect();
        let mut next = 0;
        while next < order.len() {
            let at = order[next];
            next += 1;
            if let Some(node) = document.nodes().nth(at) {
                order.extend(node.children().map(|c| c.index()));
            }
        }
        if order.len() != count {
            let stray = (0..count).find(|i| !order.contains(i)).unwrap_or(0);
            return Err(ModelError::Hierarchy(stray));
        }

        let mut texture: Option<(usize, Texture)> = None;
        let mut total = 0usize;
        let mut nodes = Vec::with_capacity(count);
        for node in document.nodes() {
            let (t, r, s) = node.transform().decomposed();
            if !t.iter().chain(&r).chain(&s).all(|v| v.is_finite()) {
                return Err(ModelError::Transform(node.index()));
            }
            let mut vertices = Vec::new();
            if let Some(mesh) = node.mesh() {
                let mesh_error = |cause: String| ModelError::Mesh {
                    mesh: mesh.index(),
                    cause,
                };
                for primitive in mesh.primitives() {
                    if primitive.mode() != gltf::mesh::Mode::Triangles {
                        return Err(mesh_error(format!(
                            "{:?} primitives are not drawn (triangles only)",
                            primitive.mode()
                        )));
                    }
                    let positions = primitive
                        .get(&gltf::Semantic::Positions)
                        .ok_or_else(|| mesh_error("a primitive without positions".into()))?;
                    let n = check_accessor(
                        &positions,
                        blob,
                        &[DataType::F32],
                        Dimensions::Vec3,
                        MAX_VERTICES,
                    )?;
                    if let Some(normals) = primitive.get(&gltf::Semantic::Normals) {
                        check_accessor(&normals, blob, &[DataType::F32], Dimensions::Vec3, n)?;
                    }
                    if let Some(uv) = primitive.get(&gltf::Semantic::TexCoords(0)) {
                        check_accessor(
                            &uv,
                            blob,
                            &[DataType::F32, DataType::U8, DataType::U16],
                            Dimensions::Vec2,
                            n,
                        )?;
                    }
                    if let Some(indices) = primitive.indices() {
                        check_accessor(
                            &indices,
                            blob,
                            &[DataType::U8, DataType::U16, DataType::U32],
                            Dimensions::Scalar,
                            MAX_VERTICES,
                        )?;
                    }
                    let reader = primitive.reader(get);
                    let positions: Vec<[f32; 3]> = reader
                        .read_positions()
                        .ok_or_else(|| mesh_error("unreadable positions".into()))?
                        .collect();
                    let normals: Option<Vec<[f32; 3]>> =
                        reader.read_normals().map(Iterator::collect);
                    let uvs: Option<Vec<[f32; 2]>> =
                        reader.read_tex_coords(0).map(|t| t.into_f32().collect());
                    let indices: Vec<u32> = match reader.read_indices() {
                        Some(indices) => indices.into_u32().collect(),
                        None => (0..u32::try_from(positions.len()).unwrap_or(0)).collect(),
                    };
                    if normals.as_ref().is_some_and(|v| v.len() != positions.len())
                        || uvs.as_ref().is_some_and(|v| v.len() != positions.len())
                    {
                        return Err(mesh_error("attributes of different counts".into()));
                    }
                    if !positions.iter().flatten().all(|v| v.is_finite()) {
                        return Err(mesh_error("a position is not finite".into()));
                    }
                    total = total.saturating_add(indices.len());
                    if total > MAX_VERTICES {
                        return Err(ModelError::TooManyVertices);
                    }

                    // The material: its colour and texture.
                    let pbr = primitive.material().pbr_metallic_roughness();
                    let colour = pbr.base_color_factor();
                    let mut textured = 0.0;
                    if let Some(info) = pbr.base_color_texture() {
                        if texture.is_none() {
                            let image = info.texture().source().index();
                            let bytes = image_bytes(document, image, blob, file, files)?;
                            texture = Some((image, decode_png(&bytes)?));
                        }
                        textured = 1.0;
                    }

                    for triangle in indices.chunks_exact(3) {
                        let corners = triangle.iter().map(|&i| {
                            usize::try_from(i)
                                .ok()
                                .filter(|&i| i < positions.len())
                                .ok_or_else(|| mesh_error(format!("index {i} out of range")))
                        });
                        let corners: Vec<usize> = corners.collect::<Result<_, _>>()?;
                        let p = corners.iter().map(|&i| Vec3::from(positions[i]));
                        let p: Vec<Vec3> = p.collect();
                        let flat = (p[1] - p[0]).cross(p[2] - p[0]).normalize_or(Vec3::Y);
                        for &i in &corners {
                            let normal = normals
                                .as_ref()
                                .map(|n| Vec3::from(n[i]))
                                .filter(|n| n.is_finite())
                                .map_or(flat, |n| n.normalize_or(flat));
                            vertices.push(ModelVertex {
                                position: positions[i],
                                normal: normal.to_array(),
                                uv: uvs.as_ref().map_or([0.0; 2], |u| u[i]),
                                colour,
                                textured,
                            });
                        }
                    }
                }
            }
            nodes.push(Node {
                parent: parent[node.index()],
                translation: Vec3::from(t),
                rotation: Quat::from_array(r).normalize(),
                scale: Vec3::from(s),
                vertices,
            });
        }
        if total == 0 {
            return Err(ModelError::NoMesh);
        }

        // The animations the client plays.
        let mut walk = None;
        let mut idle = None;
        for animation in document.animations() {
            let name = animation.name().unwrap_or_default();
            if name != "walk" && name != "idle" {
                continue;
            }
            let fail = |cause: String| ModelError::Animation {
                name: name.to_string(),
                cause,
            };
            let mut channels = Vec::new();
            let mut duration = 0.0f32;
            for channel in animation.channels() {
                use gltf::animation::{Interpolation, Property as P};
                let target = channel.target();
                let (property, dimensions) = match target.property() {
                    P::Translation => (Property::Translation, Dimensions::Vec3),
                    P::Rotation => (Property::Rotation, Dimensions::Vec4),
                    P::Scale => (Property::Scale, Dimensions::Vec3),
                    P::MorphTargetWeights => continue,
                };
                let sampler = channel.sampler();
                let step = match sampler.interpolation() {
                    Interpolation::Linear => false,
                    Interpolation::Step => true,
                    Interpolation::CubicSpline => {
                        return Err(fail("CUBICSPLINE keyframes are not read".into()));
                    }
                };
                let n = check_accessor(
                    &sampler.input(),
                    blob,
                    &[DataType::F32],
                    Dimensions::Scalar,
                    MAX_KEYFRAMES,
                )?;
                let m = check_accessor(
                    &sampler.output(),
                    blob,
                    &[DataType::F32],
                    dimensions,
                    MAX_KEYFRAMES,
                )?;
                if n != m {
                    return Err(fail(format!("{n} keyframe times for {m} values")));
                }
                let reader = channel.reader(get);
                let times: Vec<f32> = reader
                    .read_inputs()
                    .ok_or_else(|| fail("unreadable times".into()))?
                    .collect();
                let values: Vec<[f32; 4]> = match reader.read_outputs() {
                    Some(gltf::animation::util::ReadOutputs::Translations(v)) => {
                        v.map(|[x, y, z]| [x, y, z, 0.0]).collect()
                    }
                    Some(gltf::animation::util::ReadOutputs::Scales(v)) => {
                        v.map(|[x, y, z]| [x, y, z, 0.0]).collect()
                    }
                    Some(gltf::animation::util::ReadOutputs::Rotations(v)) => {
                        v.into_f32().collect()
                    }
                    _ => return Err(fail("unreadable values".into())),
                };
                if times.len() != values.len() || times.is_empty() {
                    return Err(fail("keyframe times and values differ in count".into()));
                }
                if !times.iter().all(|t| t.is_finite() && *t >= 0.0)
                    || times.windows(2).any(|w| w[1] < w[0])
                {
                    return Err(fail("keyframe times not finite, ascending, from 0".into()));
                }
                if !values.iter().flatten().all(|v| v.is_finite()) {
                    return Err(fail("a keyframe value is not finite".into()));
                }
                if property == Property::Rotation
                    && values.iter().any(|q| Quat::from_array(*q).length() < 1e-6)
                {
                    return Err(fail("a zero rotation".into()));
                }
                duration = duration.max(times[times.len() - 1]);
                channels.push(Channel {
                    node: target.node().index(),
                    property,
                    step,
                    times,
                    values,
                });
            }
            let animation = Some(Animation { duration, channels });
            if name == "walk" {
                walk = animation;
            } else {
                idle = animation;
            }
        }

        let mut model = Self {
            nodes,
            order,
            texture: texture.map_or_else(Texture::white, |(_, t)| t),
            walk,
            idle,
            bounds: (Vec3::ZERO, Vec3::ZERO),
        };
        let mut min = Vec3::splat(f32::MAX);
        let mut max = Vec3::splat(f32::MIN);
        model.posed(&model.pose(false, 0.0), Mat4::IDENTITY, |v| {
            min = min.min(Vec3::from(v.position));
            max = max.max(Vec3::from(v.position));
        });
        model.bounds = (min, max);
        Ok(model)
    }

    /// The animation played at a horizontal speed of `speed` voxels a
    /// second: `walk` (or `idle` if it has none) when it is above
    /// [`WALK_SPEED`], `idle` otherwise.
    pub fn animation(&self, speed: f32) -> Option<&Animation> {
        if speed > WALK_SPEED {
            self.walk.as_ref().or(self.idle.as_ref())
        } else {
            self.idle.as_ref()
        }
    }

    /// Each node's transform to the model's space, `seconds` into the
    /// animation for `walking` (`walk`) or not (`idle`): the animation
    /// loops; without one, the rest pose.
    pub fn pose(&self, walking: bool, seconds: f32) -> Vec<Mat4> {
        let mut local: Vec<(Vec3, Quat, Vec3)> = self
            .nodes
            .iter()
            .map(|n| (n.translation, n.rotation, n.scale))
            .collect();
        let speed = if walking { 1.0 } else { 0.0 };
        if let Some(animation) = self.animation(speed) {
            let t = if animation.duration > 0.0 {
                seconds.rem_euclid(animation.duration)
            } else {
                0.0
            };
            for channel in &animation.channels {
                let Some(node) = local.get_mut(channel.node) else {
                    continue;
                };
                let [x, y, z, w] = channel.sample(t);
                match channel.property {
                    Property::Translation => node.0 = Vec3::new(x, y, z),
                    Property::Rotation => node.1 = Quat::from_xyzw(x, y, z, w).normalize(),
                    Property::Scale => node.2 = Vec3::new(x, y, z),
                }
            }
        }
        let mut world = vec![Mat4::IDENTITY; self.nodes.len()];
        for &i in &self.order {
            let (t, r, s) = local[i];
            let own = Mat4::from_scale_rotation_translation(s, r, t);
            world[i] = match self.nodes[i].parent {
                Some(p) => world[p] * own,
                None => own,
            };
        }
        world
    }

    /// Calls `out` with every triangle corner placed by `pose` (from
    /// [`Self::pose`]) and then `placement`.
    pub fn posed(&self, pose: &[Mat4], placement: Mat4, mut out: impl FnMut(ModelVertex)) {
        for (node, transform) in self.nodes.iter().zip(pose) {
            let to_world = placement * *transform;
            let normals = Mat4::from_mat3(glam::Mat3::from_mat4(to_world).inverse().transpose());
            for v in &node.vertices {
                let position = to_world.transform_point3(Vec3::from(v.position));
                let normal = normals
                    .transform_vector3(Vec3::from(v.normal))
                    .normalize_or(Vec3::Y);
                out(ModelVertex {
                    position: position.to_array(),
                    normal: normal.to_array(),
                    ..*v
                });
            }
        }
    }

    /// Triangle corners of all meshes.
    pub fn vertex_count(&self) -> usize {
        self.nodes.iter().map(|n| n.vertices.len()).sum()
    }
}

/// Where a model of yaw `yaw` degrees (0 faces +x, 90 +z) standing at
/// `position` puts the model's space (whose front faces +z).
pub fn placement(position: [f32; 3], yaw: f32) -> Mat4 {
    Mat4::from_translation(Vec3::from(position)) * Mat4::from_rotation_y((90.0 - yaw).to_radians())
}

/// A model as loaded from one version of its file.
struct Loaded {
    /// The file's bytes it was read from (`None`: the file was missing).
    from: Option<Arc<[u8]>>,
    model: Result<Arc<Model>, ModelError>,
}

/// Models by file, read lazily; a failure is warned about once per file
/// and version.
#[derive(Default)]
pub struct ModelCache {
    loaded: HashMap<String, Loaded>,
    /// Warnings given (file name, cause), so each is said once.
    warned: HashSet<(String, String)>,
    /// Warnings to print (kept for tests; printed by [`Self::get`]'s
    /// caller through [`Self::take_warnings`]).
    warnings: Vec<String>,
}

impl ModelCache {
    /// The model of `file`, read from `files` if its bytes changed.
    pub fn get(
        &mut self,
        file: &str,
        files: &dyn Fn(&str) -> Option<Arc<[u8]>>,
    ) -> Result<Arc<Model>, ModelError> {
        let bytes = files(file);
        let stale = match self.loaded.get(file) {
            None => true,
            Some(loaded) => match (&loaded.from, &bytes) {
                (Some(a), Some(b)) => !Arc::ptr_eq(a, b),
                (None, None) => false,
                _ => true,
            },
        };
        if stale {
            let model = match &bytes {
                None => Err(ModelError::Missing),
                Some(bytes) => {
                    // The textures the model names by URI, as they are now.
                    let textures: HashMap<String, Arc<[u8]>> = texture_names(bytes)
                        .into_iter()
                        .filter_map(|uri| {
                            let name = match folder_of(file) {
                                "" => uri,
                                folder => format!("{folder}/{uri}"),
                            };
                            files(&name).map(|b| (name, b))
                        })
                        .collect();
                    Model::parse(bytes, file, &|name| textures.get(name).map(|b| &b[..]))
                        .map(Arc::new)
                }
            };
            if let Err(error) = &model
                && self.warned.insert((file.to_string(), error.to_string()))
            {
                self.warnings.push(format!(
                    "buildat-client: warning: model {file}: {error}; drawn as a box"
                ));
            }
            self.loaded
                .insert(file.to_string(), Loaded { from: bytes, model });
        }
        self.loaded
            .get(file)
            .map_or(Err(ModelError::Missing), |l| l.model.clone())
    }

    /// Warnings not printed yet.
    pub fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }
}

/// The image URIs a `.glb` names (to look its textures up beforehand);
/// empty when it cannot be read (parsing then says why).
fn texture_names(bytes: &[u8]) -> Vec<String> {
    if bytes.len() > MAX_MODEL_BYTES || !bytes.starts_with(b"glTF") {
        return Vec::new();
    }
    let Ok(gltf) = gltf::Gltf::from_slice(bytes) else {
        return Vec::new();
    };
    gltf.document
        .as_json()
        .images
        .iter()
        .filter(|image| image.buffer_view.is_none())
        .filter_map(|image| image.uri.clone())
        .collect()
}

/// A stable phase per model id, so a herd does not step in time.
fn phase_of(id: &str) -> f32 {
    let mut hash: u32 = 2_166_136_261;
    for byte in id.bytes() {
        hash = (hash ^ u32::from(byte)).wrapping_mul(16_777_619);
    }
    (hash % 1000) as f32 / 1000.0 * 3.0
}

/// The frame's vertices of one model file.
struct Batch {
    file: String,
    first: u32,
    count: u32,
}

/// The models' GPU side and the cache behind it.
pub struct ModelRenderer {
    cache: ModelCache,
    /// Where the window draws each model (eased toward where Lua set it).
    pub eased: EasedBoxes,
    pipeline: wgpu::RenderPipeline,
    layout: wgpu::BindGroupLayout,
    globals: wgpu::Buffer,
    sampler: wgpu::Sampler,
    /// Each file's texture, bound with the globals, and the model it is of.
    bound: HashMap<String, (Arc<Model>, wgpu::BindGroup)>,
    /// This frame's vertices (CPU), by file.
    staged: Vec<f32>,
    batches: Vec<Batch>,
    models: HashMap<String, Arc<Model>>,
    buffer: Option<wgpu::Buffer>,
}

impl ModelRenderer {
    /// The pipeline, drawing into targets of `format` with depth `depth`.
    pub fn new(
        device: &wgpu::Device,
        format: wgpu::TextureFormat,
        depth: wgpu::TextureFormat,
    ) -> Self {
        let shader = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("models.wgsl"),
            source: wgpu::ShaderSource::Wgsl(include_str!("models.wgsl").into()),
        });
        let globals = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("model globals"),
            size: 128,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("model"),
            entries: &[
                pipeline::uniform_entry(0),
                pipeline::texture_entry(1, wgpu::TextureViewDimension::D2),
                pipeline::sampler_entry(2),
            ],
        });
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("models"),
            bind_group_layouts: &[None, None, None, Some(&layout)],
            immediate_size: 0,
        });
        let sampler = pipeline::texel_sampler(device, "model texels");
        let attributes = wgpu::vertex_attr_array![
            0 => Float32x3, 1 => Float32x3, 2 => Float32x2, 3 => Float32x4, 4 => Float32
        ];
        let pipeline = pipeline::PipelineDesc {
            label: "models",
            layout: &pipeline_layout,
            shader: &shader,
            vertex_entry: "vs_model",
            fragment_entry: "fs_model",
            buffers: &[Some(wgpu::VertexBufferLayout {
                array_stride: (VERTEX_FLOATS * 4) as u64,
                step_mode: wgpu::VertexStepMode::Vertex,
                attributes: &attributes,
            })],
            topology: wgpu::PrimitiveTopology::TriangleList,
            // Exported models are not always closed or consistently
            // wound: both sides are drawn.
            cull: false,
            format,
            blend: None,
            depth_format: depth,
            depth_write: true,
            depth_compare: wgpu::CompareFunction::LessEqual,
        }
        .create(device);
        Self {
            cache: ModelCache::default(),
            eased: EasedBoxes::default(),
            pipeline,
            layout,
            globals,
            sampler,
            bound: HashMap::new(),
            staged: Vec::new(),
            batches: Vec::new(),
            models: HashMap::new(),
            buffer: None,
        }
    }

    /// Moves the drawn models toward where Lua set them, `seconds` after
    /// the last frame (the window; a screenshot draws them where they are).
    pub fn ease(&mut self, models: &BTreeMap<String, UiModel>, seconds: f64) {
        self.eased.ease(models, seconds);
    }

    /// Poses this frame's models (`seconds`: the animations' clock) from
    /// the files `files` holds; a model that cannot be read adds its box to
    /// `boxes` instead (warned about once, on stderr).
    pub fn place(
        &mut self,
        models: &BTreeMap<String, UiModel>,
        files: &dyn Fn(&str) -> Option<Arc<[u8]>>,
        seconds: f64,
        boxes: &mut Vec<super::gpu::FlatVertex>,
    ) {
        self.staged.clear();
        self.batches.clear();
        let mut by_file: BTreeMap<&str, Vec<(&String, &UiModel)>> = BTreeMap::new();
        for (id, model) in models {
            by_file
                .entry(model.file.as_str())
                .or_default()
                .push((id, model));
        }
        for (file, instances) in by_file {
            let loaded = self.cache.get(file, files);
            let first = self.staged.len() / VERTEX_FLOATS;
            for (id, instance) in instances {
                let position = self.eased.position(id, instance).map(|v| v as f32);
                let model = match &loaded {
                    Ok(model) => model,
                    Err(_) => {
                        let half = FALLBACK_SIZE / 2.0;
                        let [x, y, z] = position;
                        super::gpu::box_triangles(
                            Vec3::new(x - half, y, z - half),
                            Vec3::new(x + half, y + FALLBACK_SIZE, z + half),
                            [0.8, 0.8, 0.8],
                            boxes,
                        );
                        continue;
                    }
                };
                let [vx, _, vz] = instance.velocity;
                let walking = vx.hypot(vz) > WALK_SPEED;
                let pose = model.pose(walking, seconds as f32 + phase_of(id));
                let staged = &mut self.staged;
                model.posed(&pose, placement(position, instance.yaw), |v| {
                    staged.extend_from_slice(&v.position);
                    staged.extend_from_slice(&v.normal);
                    staged.extend_from_slice(&v.uv);
                    staged.extend_from_slice(&v.colour);
                    staged.push(v.textured);
                });
            }
            let count = self.staged.len() / VERTEX_FLOATS - first;
            if let Ok(model) = loaded
                && count > 0
            {
                self.models.insert(file.to_string(), model);
                self.batches.push(Batch {
                    file: file.to_string(),
                    first: u32::try_from(first).unwrap_or(u32::MAX),
                    count: u32::try_from(count).unwrap_or(0),
                });
            }
        }
        for warning in self.cache.take_warnings() {
            eprintln!("{warning}");
        }
    }

    /// Uploads the frame's vertices, new textures and the shared uniforms
    /// (the same as the chunks': view and projection, eye, sky, fog start
    /// and end, light direction and daylight).
    #[allow(clippy::too_many_arguments)]
    pub fn prepare(
        &mut self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        view_projection: Mat4,
        eye: Vec3,
        sky: [f32; 3],
        fog: [f32; 2],
        light: Vec3,
        sun: f32,
    ) {
        let mut uniform: Vec<f32> = view_projection.to_cols_array().to_vec();
        uniform.extend_from_slice(&[eye.x, eye.y, eye.z, 1.0]);
        uniform.extend_from_slice(&[sky[0], sky[1], sky[2], 1.0]);
        uniform.extend_from_slice(&[fog[0], fog[1], 0.0, 0.0]);
        uniform.extend_from_slice(&[light.x, light.y, light.z, sun]);
        let bytes: Vec<u8> = uniform.iter().flat_map(|f| f.to_le_bytes()).collect();
        queue.write_buffer(&self.globals, 0, &bytes);

        self.bound.retain(|file, _| self.models.contains_key(file));
        for batch in &self.batches {
            let Some(model) = self.models.get(&batch.file) else {
                continue;
            };
            if self
                .bound
                .get(&batch.file)
                .is_some_and(|(m, _)| Arc::ptr_eq(m, model))
            {
                continue;
            }
            let texture = &model.texture;
            let gpu_texture = device.create_texture_with_data(
                queue,
                &pipeline::rgba_texture("model texture", texture.width, texture.height),
                wgpu::util::TextureDataOrder::LayerMajor,
                &texture.rgba,
            );
            let view = gpu_texture.create_view(&Default::default());
            let group = pipeline::texture_bind_group(
                device,
                "model",
                &self.layout,
                Some(&self.globals),
                &view,
                &self.sampler,
            );
            self.bound
                .insert(batch.file.clone(), (model.clone(), group));
        }
        self.buffer = (!self.staged.is_empty()).then(|| {
            let bytes: Vec<u8> = self.staged.iter().flat_map(|f| f.to_le_bytes()).collect();
            device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("model vertices"),
                contents: &bytes,
                usage: wgpu::BufferUsages::VERTEX,
            })
        });
    }

    /// Draws the prepared models into `pass` (binding group
    /// [`MODEL_GROUP`] only); returns the triangles drawn.
    pub fn draw(&self, pass: &mut wgpu::RenderPass<'_>) -> usize {
        let Some(buffer) = &self.buffer else {
            return 0;
        };
        pass.set_pipeline(&self.pipeline);
        pass.set_vertex_buffer(0, buffer.slice(..));
        let mut triangles = 0;
        for batch in &self.batches {
            let Some((_, group)) = self.bound.get(&batch.file) else {
                continue;
            };
            pass.set_bind_group(MODEL_GROUP, group, &[]);
            pass.draw(batch.first..batch.first + batch.count, 0..1);
            triangles += batch.count as usize / 3;
        }
        triangles
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal .glb writer for the tests: JSON and one binary chunk.
    fn glb(json: &str, bin: &[u8]) -> Vec<u8> {
        let mut json = json.as_bytes().to_vec();
        while !json.len().is_multiple_of(4) {
            json.push(b' ');
        }
        let mut bin = bin.to_vec();
        while !bin.len().is_multiple_of(4) {
            bin.push(0);
        }
        let total = 12 + 8 + json.len() + 8 + bin.len();
        let mut out = Vec::new();
        out.extend_from_slice(b"glTF");
        out.extend_from_slice(&2u32.to_le_bytes());
        out.extend_from_slice(&(total as u32).to_le_bytes());
        out.extend_from_slice(&(json.len() as u32).to_le_bytes());
        out.extend_from_slice(b"JSON");
        out.extend_from_slice(&json);
        out.extend_from_slice(&(bin.len() as u32).to_le_bytes());
        out.extend_from_slice(b"BIN\0");
        out.extend_from_slice(&bin);
        out
    }

    fn floats(values: &[f32]) -> Vec<u8> {
        values.iter().flat_map(|f| f.to_le_bytes()).collect()
    }

    /// One triangle on a child node (a "leg" at y 1 under a root at x 2),
    /// an embedded 2×1 PNG, and `walk` turning the leg 90° about x in 1 s
    /// and `idle` lifting the root 0.5 in 2 s.
    fn sample_model() -> Vec<u8> {
        let mut bin = Vec::new();
        // 0: positions (3 × vec3), 36 bytes
        bin.extend(floats(&[0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0]));
        // 36: uvs (3 × vec2), 24 bytes
        bin.extend(floats(&[0.0, 0.0, 1.0, 0.0, 0.0, 1.0]));
        // 60: walk times (2), 8 bytes
        bin.extend(floats(&[0.0, 1.0]));
        // 68: walk rotations (2 × vec4), 32 bytes
        let s = std::f32::consts::FRAC_1_SQRT_2;
        bin.extend(floats(&[0.0, 0.0, 0.0, 1.0, s, 0.0, 0.0, s]));
        // 100: idle times, 8 bytes
        bin.extend(floats(&[0.0, 2.0]));
        // 108: idle translations (2 × vec3), 24 bytes
        bin.extend(floats(&[2.0, 0.0, 0.0, 2.0, 0.5, 0.0]));
        // 132: the PNG
        let png = png_rgba::encode(2, 1, png::ColorType::Rgb, &[255, 0, 0, 0, 0, 255]);
        let png_len = png.len();
        bin.extend(png);
        let json = format!(
            r#"{{
"asset": {{"version": "2.0"}},
"scene": 0, "scenes": [{{"nodes": [0]}}],
"nodes": [{{"name": "body", "translation": [2, 0, 0], "children": [1]}},
          {{"name": "leg", "translation": [0, 1, 0], "mesh": 0}}],
"meshes": [{{"primitives": [{{"attributes": {{"POSITION": 0, "TEXCOORD_0": 1}}, "material": 0}}]}}],
"materials": [{{"pbrMetallicRoughness": {{"baseColorTexture": {{"index": 0}}}}}}],
"textures": [{{"source": 0}}],
"images": [{{"bufferView": 6, "mimeType": "image/png"}}],
"buffers": [{{"byteLength": {len}}}],
"bufferViews": [
  {{"buffer": 0, "byteOffset": 0, "byteLength": 36}},
  {{"buffer": 0, "byteOffset": 36, "byteLength": 24}},
  {{"buffer": 0, "byteOffset": 60, "byteLength": 8}},
  {{"buffer": 0, "byteOffset": 68, "byteLength": 32}},
  {{"buffer": 0, "byteOffset": 100, "byteLength": 8}},
  {{"buffer": 0, "byteOffset": 108, "byteLength": 24}},
  {{"buffer": 0, "byteOffset": 132, "byteLength": {png_len}}}
],
"accessors": [
  {{"bufferView": 0, "componentType": 5126, "count": 3, "type": "VEC3", "min": [0,0,0], "max": [1,1,0]}},
  {{"bufferView": 1, "componentType": 5126, "count": 3, "type": "VEC2"}},
  {{"bufferView": 2, "componentType": 5126, "count": 2, "type": "SCALAR", "min": [0], "max": [1]}},
  {{"bufferView": 3, "componentType": 5126, "count": 2, "type": "VEC4"}},
  {{"bufferView": 4, "componentType": 5126, "count": 2, "type": "SCALAR", "min": [0], "max": [2]}},
  {{"bufferView": 5, "componentType": 5126, "count": 2, "type": "VEC3"}}
],
"animations": [
  {{"name": "walk", "samplers": [{{"input": 2, "output": 3}}],
    "channels": [{{"sampler": 0, "target": {{"node": 1, "path": "rotation"}}}}]}},
  {{"name": "idle", "samplers": [{{"input": 4, "output": 5}}],
    "channels": [{{"sampler": 0, "target": {{"node": 0, "path": "translation"}}}}]}}
]
}}"#,
            len = bin.len()
        );
        glb(&json, &bin)
    }

    fn no_files(_: &str) -> Option<&'static [u8]> {
        None
    }

    fn near(a: Vec3, b: Vec3) -> bool {
        (a - b).length() < 1e-4
    }

    #[test]
    fn a_model_reads_its_hierarchy_texture_and_animations() {
        let model = Model::parse(&sample_model(), "m/client_data/x.glb", &no_files)
            .expect("the sample reads");
        assert_eq!(model.vertex_count(), 3);
        assert_eq!((model.texture.width, model.texture.height), (2, 1));
        assert_eq!(&model.texture.rgba[..4], &[255, 0, 0, 255]);
        assert!(model.walk.is_some() && model.idle.is_some());
        // Rest pose: the leg's corner (0, 1, 0) is at body (2,0,0) + leg
        // (0,1,0) + (0,1,0).
        let (min, max) = model.bounds;
        assert!(near(min, Vec3::new(2.0, 1.0, 0.0)), "{min}");
        assert!(near(max, Vec3::new(3.0, 2.0, 0.0)), "{max}");
    }

    #[test]
    fn animations_are_sampled_linearly_and_chosen_by_speed() {
        let model = Model::parse(&sample_model(), "x.glb", &no_files).expect("reads");
        let corner = |pose: &[Mat4]| {
            let mut out = Vec::new();
            model.posed(pose, Mat4::IDENTITY, |v| out.push(Vec3::from(v.position)));
            out[2]
        };
        // Idle: the body rises 0.5 over 2 s; at 1 s halfway (linear).
        let idle = corner(&model.pose(false, 1.0));
        assert!(near(idle, Vec3::new(2.0, 2.25, 0.0)), "idle at 1 s: {idle}");
        // It loops: 3 s is 1 s again.
        assert!(near(corner(&model.pose(false, 3.0)), idle));
        // Walk: the leg turns 90° about +x in 1 s: (0,1,0) → (0,0,1) at the
        // end; halfway 45°. The body stays at rest (walk does not move it).
        let half = corner(&model.pose(true, 0.5));
        let s = std::f32::consts::FRAC_1_SQRT_2;
        assert!(
            near(half, Vec3::new(2.0, 1.0 + s, s)),
            "walk at 0.5 s: {half}"
        );
        let end = corner(&model.pose(true, 0.999_99));
        assert!(near(end, Vec3::new(2.0, 1.0, 1.0)), "walk at 1 s: {end}");
        // Speed chooses: slow is idle, fast walks.
        assert!(std::ptr::eq(
            model.animation(0.05).expect("idle"),
            model.idle.as_ref().expect("idle")
        ));
        assert!(std::ptr::eq(
            model.animation(2.0).expect("walk"),
            model.walk.as_ref().expect("walk")
        ));
    }

    #[test]
    fn placement_turns_the_front_to_the_yaw() {
        // The model's front (+z) faces +x at yaw 0 and +z at yaw 90.
        let front = |yaw: f32| placement([0.0; 3], yaw).transform_vector3(Vec3::Z);
        assert!(near(front(0.0), Vec3::X), "{}", front(0.0));
        assert!(near(front(90.0), Vec3::Z), "{}", front(90.0));
        assert!(near(
            placement([1.0, 2.0, 3.0], 0.0).transform_point3(Vec3::ZERO),
            Vec3::new(1.0, 2.0, 3.0)
        ));
    }

    #[test]
    fn malformed_files_are_errors_never_panics() {
        // The `gltf` crate's own validation panics on some corrupt files
        // (parse catches that); this file's code must not: panics are
        // recorded by where they happen.
        static PANICS: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(|info| {
            let at = info.location().map_or(String::new(), |l| l.to_string());
            PANICS.lock().unwrap_or_else(|e| e.into_inner()).push(at);
        }));
        let good = sample_model();
        // Every truncation.
        for end in 0..good.len() {
            let result = Model::parse(&good[..end], "x.glb", &no_files);
            assert!(result.is_err(), "truncated at {end} read as a model");
        }
        // Every byte flipped (a corrupt file reads or fails, never panics).
        for at in 0..good.len() {
            for flip in [0x01u8, 0x80, 0xff] {
                let mut bad = good.clone();
                bad[at] ^= flip;
                let _ = Model::parse(&bad, "x.glb", &no_files);
            }
        }
        let _ = std::panic::take_hook();
        std::panic::set_hook(previous);
        let panics = PANICS.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let ours: Vec<&String> = panics
            .iter()
            .filter(|at| at.contains("models.rs"))
            .collect();
        assert!(ours.is_empty(), "panics in models.rs: {ours:?}");
        assert_eq!(
            Model::parse(b"", "x.glb", &no_files),
            Err(ModelError::NotGlb)
        );
        assert_eq!(
            Model::parse(b"{\"asset\":{}}", "x.glb", &no_files),
            Err(ModelError::NotGlb)
        );
    }

    /// The sample's JSON with `from` replaced by `to`.
    fn edited(from: &str, to: &str) -> Vec<u8> {
        let good = sample_model();
        let json_len = u32::from_le_bytes([good[12], good[13], good[14], good[15]]) as usize;
        let json = std::str::from_utf8(&good[20..20 + json_len]).expect("utf-8");
        assert!(json.contains(from), "{from}");
        let bin = &good[20 + json_len + 8..];
        glb(&json.replace(from, to), bin)
    }

    #[test]
    fn each_cause_is_named() {
        let parse = |bytes: Vec<u8>| Model::parse(&bytes, "m/client_data/x.glb", &no_files);
        // An accessor past its view.
        let e = parse(edited(
            r#""count": 3, "type": "VEC3""#,
            r#""count": 4, "type": "VEC3""#,
        ));
        assert!(
            matches!(&e, Err(ModelError::Accessor { index: 0, cause }) if cause.contains("past")),
            "{e:?}"
        );
        // A view past the binary chunk.
        let e = parse(edited(
            r#""byteOffset": 0, "byteLength": 36"#,
            r#""byteOffset": 0, "byteLength": 36000"#,
        ));
        assert!(e.is_err(), "{e:?}");
        // A node its own grandparent.
        let e = parse(edited(r#""mesh": 0}"#, r#""mesh": 0, "children": [0]}"#));
        assert!(matches!(e, Err(ModelError::Hierarchy(_))), "{e:?}");
        // Wrong component type for positions.
        let e = parse(edited(
            r#""componentType": 5126, "count": 3, "type": "VEC3""#,
            r#""componentType": 5125, "count": 3, "type": "VEC3""#,
        ));
        assert!(
            matches!(
                e,
                Err(ModelError::Accessor { .. }) | Err(ModelError::Parse(_))
            ),
            "{e:?}"
        );
        // A texture by URI: looked up beside the model.
        let by_uri = edited(
            r#"{"bufferView": 6, "mimeType": "image/png"}"#,
            r#"{"uri": "skin.png"}"#,
        );
        let e = parse(by_uri.clone());
        assert_eq!(
            e,
            Err(ModelError::MissingTexture("m/client_data/skin.png".into()))
        );
        let png = png_rgba::encode(1, 1, png::ColorType::Rgba, &[1, 2, 3, 4]);
        let files = |name: &str| (name == "m/client_data/skin.png").then_some(&png[..]);
        let model = Model::parse(&by_uri, "m/client_data/x.glb", &files).expect("reads");
        assert_eq!(model.texture.rgba, vec![1, 2, 3, 4]);
        // A broken PNG.
        let files = |name: &str| (name == "m/client_data/skin.png").then_some(&b"not a png"[..]);
        let e = Model::parse(&by_uri, "m/client_data/x.glb", &files);
        assert!(matches!(e, Err(ModelError::Texture(_))), "{e:?}");
        // Cubic splines are refused by name.
        let e = parse(edited(
            r#""samplers": [{"input": 2, "output": 3}]"#,
            r#""samplers": [{"input": 2, "output": 3, "interpolation": "CUBICSPLINE"}]"#,
        ));
        assert!(
            matches!(&e, Err(ModelError::Animation { name, .. }) if name == "walk"),
            "{e:?}"
        );
    }

    /// The default game's models (scripts/models.py) read, stand on their
    /// feet at their kind's height, are textured from the PNG beside them,
    /// and move their legs when walking and a little when idle.
    #[test]
    fn the_default_models_read_and_animate() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        for (file, height) in [
            ("creatures/client_data/models/chicken.glb", 0.58),
            ("creatures/client_data/models/cow.glb", 1.4),
            ("creatures/client_data/models/sheep.glb", 1.0),
            ("main/client_data/models/player.glb", 1.8),
        ] {
            let read = |name: &str| std::fs::read(root.join("modules").join(name)).ok();
            let bytes = read(file).unwrap_or_else(|| panic!("{file} is missing"));
            let png_name = file.replace(".glb", ".png");
            let png = read(&png_name).unwrap_or_else(|| panic!("{png_name} is missing"));
            let files = |name: &str| (name == png_name).then_some(&png[..]);
            let model =
                Model::parse(&bytes, file, &files).unwrap_or_else(|e| panic!("{file}: {e}"));
            let (min, max) = model.bounds;
            assert!(min.y.abs() < 1e-3, "{file} stands on its feet: {min}");
            assert!((max.y - height).abs() < 0.03, "{file} is {} tall", max.y);
            assert_eq!(
                (model.texture.width, model.texture.height),
                (64, 64),
                "{file}"
            );
            assert!(model.walk.is_some() && model.idle.is_some(), "{file}");
            let corners = |walking: bool, t: f32| {
                let mut out = Vec::new();
                model.posed(&model.pose(walking, t), Mat4::IDENTITY, |v| {
                    out.push(Vec3::from(v.position))
                });
                out
            };
            let moved = |a: &[Vec3], b: &[Vec3]| {
                a.iter()
                    .zip(b)
                    .map(|(a, b)| a.distance(*b))
                    .fold(0.0f32, f32::max)
            };
            let rest = corners(false, 0.0);
            let stride = corners(true, model.walk.as_ref().map_or(0.0, |w| w.duration / 4.0));
            assert!(
                moved(&rest, &stride) > 0.1,
                "{file}: walking swings the legs"
            );
            let bob = moved(
                &rest,
                &corners(false, model.idle.as_ref().map_or(0.0, |w| w.duration / 2.0)),
            );
            assert!(
                bob > 0.005 && bob < 0.2,
                "{file}: idle moves a little ({bob})"
            );
        }
    }

    #[test]
    fn the_cache_reads_once_warns_once_and_rereads_a_changed_file() {
        let mut cache = ModelCache::default();
        let good: Arc<[u8]> = sample_model().into();
        let broken: Arc<[u8]> = good[..40].to_vec().into();
        let holding = |bytes: Option<Arc<[u8]>>| move |_: &str| bytes.clone();
        assert_eq!(
            cache.get("a.glb", &holding(None)).err(),
            Some(ModelError::Missing)
        );
        assert!(cache.get("a.glb", &holding(None)).is_err());
        assert_eq!(cache.take_warnings().len(), 1, "one warning per cause");
        let first = cache
            .get("a.glb", &holding(Some(good.clone())))
            .expect("reads");
        let again = cache
            .get("a.glb", &holding(Some(good.clone())))
            .expect("reads");
        assert!(Arc::ptr_eq(&first, &again), "read once");
        assert!(cache.get("a.glb", &holding(Some(broken.clone()))).is_err());
        let warnings = cache.take_warnings();
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].contains("a.glb"), "{warnings:?}");
        assert!(cache.get("a.glb", &holding(Some(good))).is_ok());
    }
}
