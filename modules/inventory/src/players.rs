//! Where the players are, from their nodes (`main` makes one per player,
//! vars `player` and `peer`): adopted with one `ListNodes` at start, then
//! followed through `voxelworld:nodes_changed`. Read from events, not by
//! calling `main` (which calls this module during its tick: two modules
//! calling each other at once is a cycle the host refuses).
//!
//! Owns: the positions. Does not own: the players (`main`).

use std::collections::HashMap;

use buildat_interface::log;
use buildat_main_api::{VAR_PEER, VAR_PLAYER};
use buildat_network_api::PeerId;
use buildat_voxelworld_api::{DynamicNode, ListNodes, NodesChanged};

use crate::Inventories;

/// A player's node as last seen.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PlayerNode {
    pub name: String,
    pub peer: PeerId,
    /// The feet.
    pub position: [f64; 3],
}

/// The players' nodes by node id.
#[derive(Debug, Default)]
pub(crate) struct PlayerNodes {
    nodes: HashMap<u64, PlayerNode>,
}

impl PlayerNodes {
    fn adopt(&mut self, node: &DynamicNode) {
        let Some(name) = node
            .vars
            .get(VAR_PLAYER)
            .and_then(|v| String::from_utf8(v.clone()).ok())
        else {
            return;
        };
        let peer = node
            .vars
            .get(VAR_PEER)
            .and_then(|v| <[u8; 8]>::try_from(v.as_slice()).ok())
            .map_or(0, u64::from_le_bytes);
        self.nodes.insert(
            node.id,
            PlayerNode {
                name,
                peer,
                position: node.position,
            },
        );
    }

    pub(crate) fn apply(&mut self, changed: &NodesChanged) {
        for node in &changed.changed {
            self.adopt(node);
        }
        for motion in &changed.moved {
            if let Some(player) = self.nodes.get_mut(&motion.id) {
                player.position = motion.position;
            }
        }
        for id in &changed.removed {
            self.nodes.remove(id);
        }
    }

    /// The player playing on `peer`.
    pub(crate) fn get_peer(&self, peer: PeerId) -> Option<&PlayerNode> {
        self.nodes.values().find(|p| p.peer == peer)
    }

    pub(crate) fn all(&self) -> impl Iterator<Item = &PlayerNode> {
        self.nodes.values()
    }
}

impl Inventories {
    /// The player nodes there are now (at start and after a reload).
    pub(crate) fn adopt_players(&mut self) {
        match self.host.call(&ListNodes {
            with_var: Some(VAR_PLAYER.to_string()),
        }) {
            Ok(nodes) => {
                for node in &nodes {
                    self.players.adopt(node);
                }
            }
            Err(error) => log::debug!("listing the player nodes: {error}"),
        }
    }
}
