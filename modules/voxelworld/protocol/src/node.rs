//! A dynamic node as the world holds it: what voxelworld's node calls and
//! events carry, and what `replicate` quantises for clients
//! (`buildat-replicate-protocol`'s `NodeState::of`).
//!
//! Owns: [`DynamicNode`], [`NodeMotion`], [`IDENTITY`]. Does not own: the
//! nodes themselves or their calls (`voxelworld`, `buildat-voxelworld-api`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// A dynamic node: anything that moves (a player, a creature, an item).
/// Persistent (`save_enabled`) ones are saved with the section they are in
/// and move between sections as they move; the others are never written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DynamicNode {
    pub id: u64,
    /// World position (an attached node's too).
    pub position: [f64; 3],
    /// Unit quaternion (x, y, z, w).
    pub orientation: [f32; 4],
    /// Voxels a second.
    pub velocity: [f32; 3],
    /// The node it is attached to: it moves with it, keeping its offset.
    pub parent: Option<u64>,
    pub save_enabled: bool,
    pub vars: BTreeMap<String, Vec<u8>>,
}

/// The orientation of a node that was never turned.
pub const IDENTITY: [f32; 4] = [0.0, 0.0, 0.0, 1.0];

impl DynamicNode {
    /// A node at `position`, never turned, still, attached to nothing.
    pub fn at_rest(
        id: u64,
        position: [f64; 3],
        save_enabled: bool,
        vars: BTreeMap<String, Vec<u8>>,
    ) -> Self {
        Self {
            id,
            position,
            orientation: IDENTITY,
            velocity: [0.0; 3],
            parent: None,
            save_enabled,
            vars,
        }
    }
}

/// Where a dynamic node goes and how it moves (voxelworld's `MoveNodes`
/// call, replicate's `NodeState::set_motion`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeMotion {
    pub id: u64,
    pub position: [f64; 3],
    /// Unit quaternion (x, y, z, w).
    pub orientation: [f32; 4],
    /// Voxels a second.
    pub velocity: [f32; 3],
}
