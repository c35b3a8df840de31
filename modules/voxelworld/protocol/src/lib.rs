//! `buildat-voxelworld-protocol`: the world stream's packets and the
//! dynamic node record, depending only on `buildat-format` and
//! `buildat-voxel`, so the client links no module ABI;
//! `buildat-voxelworld-api` re-exports them.
//!
//! Owns: [`stream`] (`voxelworld:registry`, `voxelworld:chunk`,
//! `voxelworld:voxels`, `voxelworld:light`, `voxelworld:unload_chunk`,
//! `voxelworld:ack`) and [`node`] (a dynamic node and its motion, which
//! `replicate` tells clients). Does not own: the world or its calls and
//! events (the `voxelworld` module, `buildat-voxelworld-api`) or voxel
//! types (`buildat-voxel`).

pub mod node;
pub mod stream;

pub use node::{DynamicNode, IDENTITY, NodeMotion};
