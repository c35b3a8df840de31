//! `buildat-replicate-protocol`: the `replicate:nodes` packet, depending
//! only on `buildat-format` and `buildat-voxelworld-protocol`, so the
//! client links no module ABI; `buildat-replicate-api` re-exports it.
//!
//! Owns: [`NodeUpdates`] (nodes a client starts knowing with their whole
//! state, deltas of the nodes it knows, nodes it stops knowing, a server
//! timestamp), the quantisation of a node's state ([`NodeState`]), deltas
//! between two states and applying them ([`NodeDelta`]), writing the
//! packet from pieces encoded once for every peer ([`write_updates`]) and
//! which variables are replicated ([`is_replicated_var`]). Does not own:
//! the nodes (`voxelworld`), who knows what (the `replicate` module) or the
//! module's calls (`buildat-replicate-api`).

use buildat_format::payload::{self, PayloadError};
use buildat_voxelworld_protocol::{DynamicNode, NodeMotion};
use serde::{Deserialize, Serialize};

/// Positions travel in steps of 1/64 voxel (1.6 cm at a voxel a metre).
pub const POSITION_STEPS: f64 = 64.0;
/// Velocities travel in steps of 1/256 voxel a second.
pub const VELOCITY_STEPS: f32 = 256.0;
/// Each quaternion component travels as a signed 16-bit fraction.
pub const ORIENTATION_STEPS: f32 = 32767.0;

/// Variables whose names start with this stay on the server.
pub const PRIVATE_VAR_PREFIX: &str = "_";
/// A variable longer than this stays on the server (vars are for what a
/// client draws, not bulk data: that is the file transfer's).
pub const MAX_REPLICATED_VAR_BYTES: usize = 1024;

/// Whether a node variable is sent to clients.
pub fn is_replicated_var(name: &str, value: &[u8]) -> bool {
    !name.starts_with(PRIVATE_VAR_PREFIX) && value.len() <= MAX_REPLICATED_VAR_BYTES
}

/// A node variable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeVar {
    pub name: String,
    #[serde(with = "serde_bytes")]
    pub value: Vec<u8>,
}

/// A node's state as clients get it: quantised, variables sorted by name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeState {
    pub id: u64,
    /// Voxels × [`POSITION_STEPS`].
    pub position: [i64; 3],
    /// Quaternion (x, y, z, w) × [`ORIENTATION_STEPS`].
    pub orientation: [i16; 4],
    /// Voxels a second × [`VELOCITY_STEPS`].
    pub velocity: [i32; 3],
    pub parent: Option<u64>,
    pub vars: Vec<NodeVar>,
}

fn quantise_f64(value: f64, steps: f64) -> i64 {
    // `as` saturates and maps NaN to 0.
    (value * steps).round() as i64
}

fn quantise_f32(value: f32, steps: f32) -> i32 {
    (value * steps).round() as i32
}

impl NodeState {
    /// The state clients get of `node` (its replicated variables only).
    pub fn of(node: &DynamicNode) -> Self {
        let mut state = Self {
            id: node.id,
            position: [0; 3],
            orientation: [0; 4],
            velocity: [0; 3],
            parent: node.parent,
            vars: node
                .vars
                .iter()
                .filter(|(name, value)| is_replicated_var(name, value))
                .map(|(name, value)| NodeVar {
                    name: name.clone(),
                    value: value.clone(),
                })
                .collect(),
        };
        state.set_motion(&NodeMotion {
            id: node.id,
            position: node.position,
            orientation: node.orientation,
            velocity: node.velocity,
        });
        state
    }

    /// Becomes `new` (the same node's later state), copying the variables
    /// only when they differ: a node that only moved costs no allocation.
    pub fn catch_up(&mut self, new: &NodeState) {
        // Every field named: a new one cannot be forgotten here.
        let NodeState {
            id,
            position,
            orientation,
            velocity,
            parent,
            vars,
        } = new;
        self.id = *id;
        self.position = *position;
        self.orientation = *orientation;
        self.velocity = *velocity;
        self.parent = *parent;
        if self.vars != *vars {
            self.vars.clone_from(vars);
        }
    }

    /// Takes a move of the node (quantised; no allocation).
    pub fn set_motion(&mut self, motion: &NodeMotion) {
        self.position = motion.position.map(|p| quantise_f64(p, POSITION_STEPS));
        self.orientation = motion
            .orientation
            .map(|c| quantise_f32(c.clamp(-1.0, 1.0), ORIENTATION_STEPS) as i16);
        self.velocity = motion.velocity.map(|v| quantise_f32(v, VELOCITY_STEPS));
    }

    /// The position in voxels.
    pub fn position(&self) -> [f64; 3] {
        self.position.map(|p| p as f64 / POSITION_STEPS)
    }

    /// The orientation as a quaternion (x, y, z, w).
    pub fn orientation(&self) -> [f32; 4] {
        self.orientation.map(|c| f32::from(c) / ORIENTATION_STEPS)
    }

    /// The velocity in voxels a second.
    pub fn velocity(&self) -> [f32; 3] {
        self.velocity.map(|v| v as f32 / VELOCITY_STEPS)
    }

    /// A variable's value.
    pub fn var(&self, name: &str) -> Option<&[u8]> {
        self.vars
            .binary_search_by(|v| v.name.as_str().cmp(name))
            .ok()
            .and_then(|i| self.vars.get(i))
            .map(|v| v.value.as_slice())
    }

    /// Applies a delta made by [`NodeDelta::between`] from this state.
    pub fn apply(&mut self, delta: &NodeDelta) {
        if let Some(moved) = delta.position {
            for (p, d) in self.position.iter_mut().zip(moved) {
                *p = p.wrapping_add(d);
            }
        }
        if let Some(orientation) = delta.orientation {
            self.orientation = orientation;
        }
        if let Some(velocity) = delta.velocity {
            self.velocity = velocity;
        }
        if let Some(parent) = delta.parent {
            self.parent = parent;
        }
        for change in &delta.vars {
            let found = self
                .vars
                .binary_search_by(|v| v.name.as_str().cmp(&change.name));
            match (found, &change.value) {
                (Ok(i), Some(value)) => {
                    if let Some(var) = self.vars.get_mut(i) {
                        var.value.clone_from(value);
                    }
                }
                (Ok(i), None) => {
                    self.vars.remove(i);
                }
                (Err(i), Some(value)) => self.vars.insert(
                    i,
                    NodeVar {
                        name: change.name.clone(),
                        value: value.to_vec(),
                    },
                ),
                (Err(_), None) => {}
            }
        }
    }
}

/// A variable set (`Some`) or removed (`None`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VarChange {
    pub name: String,
    pub value: Option<serde_bytes::ByteBuf>,
}

/// What changed in a known node since the previous packet: the position
/// as a difference (a few bytes for a walking node), the rest whole and
/// only when it changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeDelta {
    pub id: u64,
    pub position: Option<[i64; 3]>,
    pub orientation: Option<[i16; 4]>,
    pub velocity: Option<[i32; 3]>,
    pub parent: Option<Option<u64>>,
    pub vars: Vec<VarChange>,
}

impl NodeDelta {
    /// What turns `old` into `new` (the same node); `None` when they are
    /// equal.
    pub fn between(old: &NodeState, new: &NodeState) -> Option<Self> {
        if old == new {
            return None;
        }
        let mut vars = Vec::new();
        let (mut a, mut b) = (old.vars.iter().peekable(), new.vars.iter().peekable());
        loop {
            match (a.peek(), b.peek()) {
                (None, None) => break,
                (Some(x), Some(y)) if x.name == y.name => {
                    if x.value != y.value {
                        vars.push(VarChange {
                            name: y.name.clone(),
                            value: Some(serde_bytes::ByteBuf::from(y.value.clone())),
                        });
                    }
                    a.next();
                    b.next();
                }
                (Some(x), Some(y)) if x.name < y.name => {
                    vars.push(VarChange {
                        name: x.name.clone(),
                        value: None,
                    });
                    a.next();
                }
                (Some(x), None) => {
                    vars.push(VarChange {
                        name: x.name.clone(),
                        value: None,
                    });
                    a.next();
                }
                (_, Some(y)) => {
                    vars.push(VarChange {
                        name: y.name.clone(),
                        value: Some(serde_bytes::ByteBuf::from(y.value.clone())),
                    });
                    b.next();
                }
            }
        }
        let position = (old.position != new.position).then(|| {
            let mut moved = [0i64; 3];
            for ((d, n), o) in moved.iter_mut().zip(new.position).zip(old.position) {
                *d = n.wrapping_sub(o);
            }
            moved
        });
        Some(Self {
            id: new.id,
            position,
            orientation: (old.orientation != new.orientation).then_some(new.orientation),
            velocity: (old.velocity != new.velocity).then_some(new.velocity),
            parent: (old.parent != new.parent).then_some(new.parent),
            vars,
        })
    }
}

/// `replicate:nodes`: what one client learns in one tick. A client applies
/// `added` (a known id: its state is replaced), then `changed` (deltas
/// from the state it holds), then `removed`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeUpdates {
    /// When the server sent it: milliseconds since the Unix epoch (for
    /// interpolating between packets).
    pub time_ms: u64,
    pub added: Vec<NodeState>,
    pub changed: Vec<NodeDelta>,
    pub removed: Vec<u64>,
}

buildat_format::bincode_packet! {
    NodeUpdates = "replicate:nodes";
}

/// Encodes one [`NodeState`] or [`NodeDelta`] for [`write_updates`].
pub fn encode_piece<T: Serialize>(piece: &T) -> Result<Vec<u8>, PayloadError> {
    payload::encode(piece)
}

/// Writes a [`NodeUpdates`] payload from states and deltas each encoded
/// once ([`encode_piece`]) and shared by every peer they go to: the bytes
/// equal `NodeUpdates { time_ms, added, changed, removed }.encode()`.
pub fn write_updates(
    time_ms: u64,
    added: &[&[u8]],
    changed: &[&[u8]],
    removed: &[u64],
) -> Result<Vec<u8>, PayloadError> {
    let pieces: usize = added.iter().chain(changed).map(|p| p.len()).sum();
    let mut out = Vec::with_capacity(pieces + 16 + removed.len() * 3);
    out.extend(payload::encode(&time_ms)?);
    for list in [added, changed] {
        out.extend(payload::encode(&(list.len() as u64))?);
        for piece in list {
            out.extend_from_slice(piece);
        }
    }
    out.extend(payload::encode(removed)?);
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use buildat_format::Packet;
    use std::collections::BTreeMap;

    fn node(id: u64, position: [f64; 3], vars: &[(&str, &[u8])]) -> DynamicNode {
        let vars = vars
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_vec()))
            .collect::<BTreeMap<_, _>>();
        DynamicNode::at_rest(id, position, false, vars)
    }

    #[test]
    fn a_state_keeps_a_sixty_fourth_of_a_voxel_and_only_public_vars() {
        let n = node(
            7,
            [1.0 / 128.0 + 10.0, -3.3, 1e300],
            &[("kind", b"cow"), ("_secret", b"x"), ("big", &[0; 2000])],
        );
        let state = NodeState::of(&n);
        let back = state.position();
        assert!((back[0] - n.position[0]).abs() <= 0.5 / POSITION_STEPS);
        assert!((back[1] - n.position[1]).abs() <= 0.5 / POSITION_STEPS);
        assert_eq!(state.position[2], i64::MAX, "saturates, never wraps");
        assert_eq!(state.var("kind"), Some(&b"cow"[..]));
        assert_eq!(state.var("_secret"), None);
        assert_eq!(state.var("big"), None);
        assert_eq!(state.orientation(), [0.0, 0.0, 0.0, 1.0]);
    }

    #[test]
    fn catching_up_gives_the_later_state_moved_or_changed() {
        let old = NodeState::of(&node(1, [0.0, 5.0, 0.0], &[("a", b"1"), ("b", b"2")]));
        let mut moved = node(1, [0.25, 5.0, -0.5], &[("a", b"1"), ("b", b"2")]);
        moved.velocity = [4.0, 0.0, -8.0];
        moved.parent = Some(9);
        let moved = NodeState::of(&moved);
        let mut sent = old.clone();
        sent.catch_up(&moved);
        assert_eq!(sent, moved);
        let changed = NodeState::of(&node(1, [0.25, 5.0, -0.5], &[("b", b"3"), ("c", b"4")]));
        sent.catch_up(&changed);
        assert_eq!(sent, changed);
    }

    #[test]
    fn a_delta_turns_one_state_into_the_next() {
        let old = NodeState::of(&node(1, [0.0, 5.0, 0.0], &[("a", b"1"), ("b", b"2")]));
        let mut moved = node(1, [0.25, 5.0, -0.5], &[("b", b"3"), ("c", b"4")]);
        moved.velocity = [4.0, 0.0, -8.0];
        moved.parent = Some(9);
        let new = NodeState::of(&moved);
        let delta = NodeDelta::between(&old, &new).unwrap();
        assert_eq!(delta.position, Some([16, 0, -32]));
        assert_eq!(delta.orientation, None);
        let mut applied = old.clone();
        applied.apply(&delta);
        assert_eq!(applied, new);
        assert_eq!(NodeDelta::between(&new, &new), None);
        // A walking node's delta is a few bytes; its whole state is many.
        let step = node(1, [0.25, 5.0, -0.3], &[("b", b"3"), ("c", b"4")]);
        let small = NodeDelta::between(&NodeState::of(&step), &{
            let mut s = NodeState::of(&step);
            s.position[0] += 13;
            s
        })
        .unwrap();
        assert!(
            encode_piece(&small).unwrap().len() <= 10,
            "id, three small differences and four empty fields"
        );
    }

    #[test]
    fn written_updates_decode_as_the_packet() {
        let a = NodeState::of(&node(3, [1.0, 2.0, 3.0], &[("kind", b"cow")]));
        let mut b = a.clone();
        b.position[1] += 40;
        let delta = NodeDelta::between(&a, &b).unwrap();
        let packet = NodeUpdates {
            time_ms: 1_700_000_000_123,
            added: vec![a.clone(), b.clone()],
            changed: vec![delta.clone()],
            removed: vec![4, 5000],
        };
        let bytes = write_updates(
            packet.time_ms,
            &[&encode_piece(&a).unwrap(), &encode_piece(&b).unwrap()],
            &[&encode_piece(&delta).unwrap()],
            &packet.removed,
        )
        .unwrap();
        assert_eq!(bytes, packet.encode().unwrap());
        assert_eq!(NodeUpdates::decode(&bytes).unwrap(), packet);
        for cut in 0..bytes.len() {
            assert!(NodeUpdates::decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
    }
}
