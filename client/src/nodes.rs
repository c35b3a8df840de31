//! The nodes the server replicates to this client (`replicate:nodes`):
//! each known node's state as the server last sent it, with the server's
//! time of that state.
//!
//! Owns: applying `replicate:nodes` packets (added whole, changed by
//! delta, removed) and what Lua reads of them through `buildat.nodes`, the
//! count in the exit summary, the positions the maps mark. Bounded: a
//! server cannot make it hold more than [`MAX_KNOWN_NODES`]. No I/O.
//! Does not own: who knows what (the server's `replicate` module), the
//! callbacks (`sandbox`), drawing (the game's Lua, the maps).

use std::collections::BTreeMap;

use buildat_format::{Packet, PayloadError};
use buildat_replicate_protocol::{NodeState, NodeUpdates};
use thiserror::Error;

/// Nodes a client holds at most; more added are ignored with a warning.
pub const MAX_KNOWN_NODES: usize = 100_000;

#[derive(Debug, Error)]
#[non_exhaustive]
pub enum NodesError {
    #[error("malformed replicate:nodes: {0}")]
    Malformed(#[from] PayloadError),
}

/// A node this client knows.
#[derive(Debug, Clone, PartialEq)]
pub struct KnownNode {
    pub state: NodeState,
    /// The server's time of this state (ms since the Unix epoch).
    pub time_ms: u64,
}

/// What one packet did (ids in packet order).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Applied {
    pub added: Vec<u64>,
    pub changed: Vec<u64>,
    pub removed: Vec<u64>,
    /// What was wrong and skipped (a delta of an unknown node, too many).
    pub warnings: Vec<String>,
}

/// The replicated nodes.
#[derive(Debug, Default)]
pub struct NodeView {
    nodes: BTreeMap<u64, KnownNode>,
    packets: u64,
}

impl NodeView {
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether a packet is replication's.
    pub fn is_nodes_packet(name: &str) -> bool {
        name == NodeUpdates::NAME
    }

    /// Applies a `replicate:nodes` payload: all of it, or nothing if it
    /// does not decode.
    pub fn handle_packet(&mut self, data: &[u8]) -> Result<Applied, NodesError> {
        let updates = NodeUpdates::decode(data)?;
        self.packets += 1;
        let mut applied = Applied::default();
        let time_ms = updates.time_ms;
        for state in updates.added {
            let id = state.id;
            if self.nodes.len() >= MAX_KNOWN_NODES && !self.nodes.contains_key(&id) {
                applied.warnings.push(format!(
                    "node {id} ignored: {MAX_KNOWN_NODES} nodes known already"
                ));
                continue;
            }
            self.nodes.insert(id, KnownNode { state, time_ms });
            applied.added.push(id);
        }
        for delta in updates.changed {
            match self.nodes.get_mut(&delta.id) {
                Some(node) => {
                    node.state.apply(&delta);
                    node.time_ms = time_ms;
                    applied.changed.push(delta.id);
                }
                None => applied.warnings.push(format!(
                    "a change of node {} this client does not know",
                    delta.id
                )),
            }
        }
        for id in updates.removed {
            if self.nodes.remove(&id).is_some() {
                applied.removed.push(id);
            }
        }
        Ok(applied)
    }

    pub fn get(&self, id: u64) -> Option<&KnownNode> {
        self.nodes.get(&id)
    }

    /// Known ids, ascending.
    pub fn ids(&self) -> Vec<u64> {
        self.nodes.keys().copied().collect()
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// `replicate:nodes` packets applied.
    pub fn packets(&self) -> u64 {
        self.packets
    }

    /// Every known node's position, in voxels.
    pub fn positions(&self) -> impl Iterator<Item = [f64; 3]> + '_ {
        self.nodes.values().map(|n| n.state.position())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use buildat_replicate_protocol::NodeDelta;
    use buildat_voxelworld_protocol::DynamicNode;

    fn state(id: u64, x: f64) -> NodeState {
        NodeState::of(&DynamicNode::at_rest(
            id,
            [x, 1.0, 2.0],
            false,
            Default::default(),
        ))
    }

    fn packet(added: Vec<NodeState>, changed: Vec<NodeDelta>, removed: Vec<u64>) -> Vec<u8> {
        NodeUpdates {
            time_ms: 5,
            added,
            changed,
            removed,
        }
        .encode()
        .unwrap()
    }

    #[test]
    fn nodes_are_added_changed_and_removed() {
        let mut view = NodeView::new();
        let applied = view
            .handle_packet(&packet(vec![state(1, 0.0), state(2, 0.0)], vec![], vec![]))
            .unwrap();
        assert_eq!(applied.added, [1, 2]);
        let delta = NodeDelta::between(&state(1, 0.0), &state(1, 3.5)).unwrap();
        let unknown = NodeDelta::between(&state(9, 0.0), &state(9, 3.5)).unwrap();
        let applied = view
            .handle_packet(&packet(vec![], vec![delta, unknown], vec![2, 7]))
            .unwrap();
        assert_eq!(applied.changed, [1]);
        assert_eq!(applied.removed, [2], "an unknown id is not removed twice");
        assert_eq!(applied.warnings.len(), 1);
        assert_eq!(view.get(1).unwrap().state.position(), [3.5, 1.0, 2.0]);
        assert_eq!(view.ids(), [1]);
    }

    #[test]
    fn a_malformed_packet_changes_nothing() {
        let mut view = NodeView::new();
        let bytes = packet(vec![state(1, 0.0)], vec![], vec![]);
        assert!(view.handle_packet(&bytes[..bytes.len() - 1]).is_err());
        assert!(view.is_empty());
        assert_eq!(view.packets(), 0);
    }
}
