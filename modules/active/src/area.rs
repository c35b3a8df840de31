//! The active area: the chunks within `active.radius_chunks` (Chebyshev)
//! of any player's chunk. Players are read from their nodes (`main` makes
//! one per player, var `player`): adopted with one `ListNodes` at start,
//! then followed through `voxelworld:nodes_changed`, so nothing is asked
//! of `main` each tick.
//!
//! Owns: each player's chunk and the area: every chunk with the number
//! of players near it, so a move into another chunk changes two cubes,
//! not the whole area. Does not own: the
//! players (`main`).
//! Each chunk counts the players near it, so a move into another chunk
//! changes the two cubes, not the whole area.

use std::collections::HashMap;

use buildat_main_api::VAR_PLAYER;
use buildat_voxel::geometry::{CHUNK_SIZE, Pos};
use buildat_voxelworld_api::{DynamicNode, NodesChanged};

/// Most chunks in the area (a cap against a radius set too large with many
/// players: past it the players' chunks nearest the first are kept).
pub const MAX_AREA_CHUNKS: usize = 1 << 20;

/// The players' chunks and the area around them.
#[derive(Debug, Default)]
pub struct Area {
    /// Each player node's chunk.
    players: HashMap<u64, Pos>,
    radius: i32,
    /// The chunks of the area, each with the number of players it is
    /// near: a player moving to another chunk changes two cubes, not the
    /// whole area (500 players cross chunk borders every tick).
    chunks: HashMap<Pos, u32>,
    /// Chunks not added for the cap.
    pub capped: u64,
}

/// The chunk holding a position in voxels.
pub fn chunk_of(position: [f64; 3]) -> Pos {
    position.map(|v| (v.floor() as i64).div_euclid(i64::from(CHUNK_SIZE)) as i32)
}

impl Area {
    pub fn new(radius: i32) -> Self {
        Self {
            radius: radius.max(0),
            ..Self::default()
        }
    }

    /// A node seen whole: a player's if it has the var.
    pub fn adopt(&mut self, node: &DynamicNode) {
        if node.vars.contains_key(VAR_PLAYER) {
            self.place(node.id, node.position);
        }
    }

    /// Adds (`+1`) or removes (`-1`) a player's cube around `centre`.
    fn count(&mut self, centre: Pos, add: bool) {
        let r = self.radius;
        for x in -r..=r {
            for y in -r..=r {
                for z in -r..=r {
                    let chunk = [centre[0] + x, centre[1] + y, centre[2] + z];
                    if add {
                        if let Some(n) = self.chunks.get_mut(&chunk) {
                            *n += 1;
                        } else if self.chunks.len() < MAX_AREA_CHUNKS {
                            self.chunks.insert(chunk, 1);
                        } else {
                            self.capped += 1;
                        }
                    } else if let Some(n) = self.chunks.get_mut(&chunk) {
                        *n -= 1;
                        if *n == 0 {
                            self.chunks.remove(&chunk);
                        }
                    }
                }
            }
        }
    }

    fn place(&mut self, id: u64, position: [f64; 3]) {
        let chunk = chunk_of(position);
        match self.players.insert(id, chunk) {
            Some(old) if old == chunk => {}
            Some(old) => {
                self.count(old, false);
                self.count(chunk, true);
            }
            None => self.count(chunk, true),
        }
    }

    /// What a `voxelworld:nodes_changed` tells.
    pub fn apply(&mut self, changed: &NodesChanged) {
        for node in &changed.changed {
            self.adopt(node);
        }
        for motion in &changed.moved {
            if self.players.contains_key(&motion.id) {
                self.place(motion.id, motion.position);
            }
        }
        for id in &changed.removed {
            if let Some(chunk) = self.players.remove(id) {
                self.count(chunk, false);
            }
        }
    }

    /// Players known.
    pub fn players(&self) -> usize {
        self.players.len()
    }

    /// The area's chunks (in no order).
    pub fn chunks(&self) -> impl Iterator<Item = &Pos> + Clone {
        self.chunks.keys()
    }

    pub fn len(&self) -> usize {
        self.chunks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.chunks.is_empty()
    }

    pub fn contains(&self, chunk: &Pos) -> bool {
        self.chunks.contains_key(chunk)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use buildat_voxelworld_api::{IDENTITY, NodeMotion};
    use std::collections::BTreeMap;

    fn player(id: u64, position: [f64; 3]) -> DynamicNode {
        DynamicNode {
            id,
            position,
            orientation: IDENTITY,
            velocity: [0.0; 3],
            parent: None,
            save_enabled: false,
            vars: BTreeMap::from([(VAR_PLAYER.to_string(), b"ann".to_vec())]),
        }
    }

    /// The area is the cube of chunks around each player, follows moves
    /// into another chunk, and empties when the player leaves; other nodes
    /// do not count.
    #[test]
    fn the_area_follows_the_players() {
        let mut area = Area::new(1);
        assert!(area.is_empty());
        let mut other = player(2, [500.0, 0.0, 0.0]);
        other.vars.clear();
        area.apply(&NodesChanged {
            changed: vec![player(1, [1.0, 1.0, -1.0]), other],
            ..NodesChanged::default()
        });
        assert_eq!(area.len(), 27);
        assert!(area.contains(&[-1, -1, -2]));
        assert!(!area.contains(&[2, 0, 0]));
        area.apply(&NodesChanged {
            moved: vec![NodeMotion {
                id: 1,
                position: [40.0, 1.0, -1.0],
                orientation: IDENTITY,
                velocity: [0.0; 3],
            }],
            ..NodesChanged::default()
        });
        assert!(area.contains(&[2, 0, -1]));
        assert!(!area.contains(&[-1, 0, -1]));
        area.apply(&NodesChanged {
            removed: vec![1],
            ..NodesChanged::default()
        });
        assert!(area.is_empty());
        // Two players side by side share chunks: one leaving keeps those.
        area.apply(&NodesChanged {
            changed: vec![player(1, [1.0, 1.0, 1.0]), player(3, [33.0, 1.0, 1.0])],
            ..NodesChanged::default()
        });
        assert_eq!(area.len(), 36);
        area.apply(&NodesChanged {
            removed: vec![3],
            ..NodesChanged::default()
        });
        assert_eq!(area.len(), 27);
        assert!(area.contains(&[1, 1, 1]));
        assert_eq!(chunk_of([-0.5, 31.9, 32.0]), [-1, 0, 1]);
    }
}
