//! The `voxelworld` module's events, calls and stored node record (its
//! public API), used by games, generators, streaming and tools.
//!
//! Owns: names and payload types. Does not own: the world itself (the
//! `voxelworld` module) or voxel types (`buildat-voxel`).

use std::collections::BTreeMap;

use buildat_voxel::geometry::Pos;
use serde::{Deserialize, Serialize};

use crate::Event;

pub use buildat_voxel::{BlockDefinition, VoxelDefinition, VoxelRegistry};

/// The voxelworld module's name, for `Host::call`.
pub const MODULE: &str = "voxelworld";

/// A section needs its voxels: a generator answers with `apply_generated`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GenerationRequest {
    pub section: Pos,
}
impl Event for GenerationRequest {
    const NAME: &'static str = "voxelworld:generation_request";
}

/// A chunk's voxels changed (committed edits or generation).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeVolumeUpdated {
    pub node_id: u64,
    pub chunk: Pos,
}
impl Event for NodeVolumeUpdated {
    const NAME: &'static str = "voxelworld:node_volume_updated";
}

/// `register_block(BlockDefinition) -> Vec<u32>`: the voxel ids it uses.
pub const REGISTER_BLOCK: &str = "register_block";
/// `get_registry() -> VoxelRegistry`.
pub const GET_REGISTRY: &str = "get_registry";
/// `get_sizes() -> Sizes`.
pub const GET_SIZES: &str = "get_sizes";
/// `get_voxel(Pos) -> Option<u32>`: `None` where the section is not generated.
pub const GET_VOXEL: &str = "get_voxel";
/// `set_voxel(SetVoxel)`: takes effect at once; `commit` announces it.
pub const SET_VOXEL: &str = "set_voxel";
/// `commit() -> u32`: emits `node_volume_updated` for every chunk changed
/// since the last commit; answers how many.
pub const COMMIT: &str = "commit";
/// `load_or_generate_section(Pos) -> SectionStatus`.
pub const LOAD_OR_GENERATE_SECTION: &str = "load_or_generate_section";
/// `set_section_save_enabled(SetSaveEnabled)`.
pub const SET_SECTION_SAVE_ENABLED: &str = "set_section_save_enabled";
/// `apply_generated(GeneratedSection)`: a generator's answer.
pub const APPLY_GENERATED: &str = "apply_generated";
/// `get_chunk(Pos) -> Option<ChunkData>`: a chunk's voxel blob (voxels by name).
pub const GET_CHUNK: &str = "get_chunk";
/// `create_node(NewNode) -> u64`: a dynamic node; its id is never reused.
pub const CREATE_NODE: &str = "create_node";
/// `get_node(u64) -> Option<DynamicNode>`.
pub const GET_NODE: &str = "get_node";
/// `remove_node(u64)`.
pub const REMOVE_NODE: &str = "remove_node";
/// `set_node_var(SetNodeVar)`.
pub const SET_NODE_VAR: &str = "set_node_var";
/// `save() -> u32`: writes every changed save-enabled section now.
pub const SAVE: &str = "save";
/// `pregen(Pregen) -> PregenReport`.
pub const PREGEN: &str = "pregen";
/// `set_viewer(Viewer)`: stream the world around `position` to `peer`
/// (registry first, then chunks nearest first; see `buildat_voxel::stream`).
pub const SET_VIEWER: &str = "set_viewer";
/// `remove_viewer(PeerId)`: stop streaming to a peer.
pub const REMOVE_VIEWER: &str = "remove_viewer";
/// A generator's call, answered by `worldgen`: `generate(Vec<Pos>) -> Vec<GeneratedSection>`.
pub const GENERATOR_GENERATE: &str = "generate";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sizes {
    /// Voxels along each side of a chunk.
    pub chunk_size: i32,
    /// Chunks along each side of a section.
    pub section_size: [i32; 3],
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Viewer {
    pub peer: crate::network::PeerId,
    pub position: [f64; 3],
}

/// The same as the `set_viewer` call, as an event: a game emits it on every
/// move without waiting for the world.
impl Event for Viewer {
    const NAME: &'static str = "voxelworld:viewer_moved";
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SetVoxel {
    pub pos: Pos,
    pub voxel: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SectionStatus {
    pub generated: bool,
    pub save_enabled: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SetSaveEnabled {
    pub section: Pos,
    pub enabled: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GeneratedSection {
    pub section: Pos,
    /// Each chunk's voxel blob (`buildat_format::encode_voxels`, voxels by name).
    pub chunks: Vec<(Pos, ChunkData)>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChunkData {
    pub node_id: u64,
    #[serde(with = "serde_bytes")]
    pub blob: Vec<u8>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewNode {
    pub position: [f64; 3],
    pub save_enabled: bool,
    pub vars: BTreeMap<String, Vec<u8>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DynamicNode {
    pub id: u64,
    pub position: [f64; 3],
    pub save_enabled: bool,
    pub vars: BTreeMap<String, Vec<u8>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SetNodeVar {
    pub id: u64,
    pub name: String,
    pub value: Vec<u8>,
}

/// The region `pregen` fills, in sections around the origin.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pregen {
    /// x and z from -radius to radius.
    pub radius: u32,
    /// y from -height to height.
    pub height: u32,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PregenReport {
    pub generated: u64,
    pub already_present: u64,
}

/// Variable of a static chunk node holding its voxel blob.
pub const VAR_VOXEL_DATA: &str = "buildat_voxel_data";
/// Variable naming the registry the blob's names belong to ("main").
pub const VAR_REGISTRY_NAME: &str = "buildat_voxel_registry_name";
/// Variable holding the blob format's version.
pub const VAR_MOD_VERSION: &str = "buildat_voxel_mod_version";

/// What a `node` row's `data` column holds (bincode).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredNode {
    pub kind: StoredNodeKind,
    pub save_enabled: bool,
    pub vars: BTreeMap<String, Vec<u8>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum StoredNodeKind {
    StaticChunk { chunk: Pos },
    Dynamic { position: [f64; 3] },
}
