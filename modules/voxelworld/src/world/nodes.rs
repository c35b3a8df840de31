//! Dynamic nodes in the world: creating, finding (an index by id), moving
//! them (attached nodes with their parent, each into the section its
//! position is in), their variables and parents, and the changes gathered
//! for `voxelworld:nodes_changed`.
//!
//! Owns: the node index and the change lists of [`World`]. Invariants: a
//! loaded node is in exactly one loaded section, the one the index names;
//! a node moves to the section of its new position when that section can
//! be loaded (it stays where it is otherwise, and moves on its next move);
//! an attached node keeps its offset from its parent, and no node carries
//! itself. Does not own: sections, saving and eviction (`world.rs`), who
//! sees which node (the `replicate` module).

use std::collections::BTreeMap;

use buildat_voxel::geometry::{self, Pos};
use buildat_voxelworld_api::{DynamicNode, ListNodes, NodeMotion, NodesChanged};

use super::{Section, World, WorldError};

impl World {
    fn section_of_position(&self, position: [f64; 3]) -> Pos {
        let voxel = position.map(|p| p.floor() as i32);
        self.section_size
            .section_of_chunk(geometry::chunk_of_voxel(voxel))
    }

    /// Puts the nodes of the loaded section at `pos` in the index; they
    /// are told as changed (a node loaded from storage appears).
    pub(super) fn index_nodes(&mut self, pos: Pos) {
        if let Some(section) = self.sections.get(&pos) {
            for (id, node) in &section.dynamic {
                self.node_sections.insert(*id, pos);
                self.nodes_changed.insert(*id);
                self.nodes_moved.remove(id);
                self.nodes_removed.remove(id);
                if let Some(parent) = node.parent {
                    self.node_children.entry(parent).or_default().insert(*id);
                }
            }
        }
    }

    /// Takes the nodes of a section leaving memory out of the index; they
    /// are told as removed (an evicted node disappears until loaded again).
    pub(super) fn unindex_nodes(&mut self, section: &Section) {
        for (id, node) in &section.dynamic {
            self.node_sections.remove(id);
            self.nodes_changed.remove(id);
            self.nodes_moved.remove(id);
            self.nodes_removed.insert(*id);
            if let Some(parent) = node.parent {
                self.unlink_child(parent, *id);
            }
        }
    }

    fn unlink_child(&mut self, parent: u64, child: u64) {
        if let Some(children) = self.node_children.get_mut(&parent) {
            children.remove(&child);
            if children.is_empty() {
                self.node_children.remove(&parent);
            }
        }
    }

    pub fn create_node(
        &mut self,
        position: [f64; 3],
        save_enabled: bool,
        vars: BTreeMap<String, Vec<u8>>,
    ) -> Result<u64, WorldError> {
        let pos = self.section_of_position(position);
        self.load_section(pos)?;
        let id = self.next_id()?;
        let section = self
            .sections
            .get_mut(&pos)
            .ok_or(WorldError::NotGenerated(pos))?;
        section
            .dynamic
            .insert(id, DynamicNode::at_rest(id, position, save_enabled, vars));
        section.dirty |= save_enabled;
        self.node_sections.insert(id, pos);
        self.nodes_changed.insert(id);
        Ok(id)
    }

    /// The node and its section's dirty flag (to set when the node is
    /// persistent).
    fn node_mut(&mut self, id: u64) -> Option<(&mut DynamicNode, &mut bool)> {
        let pos = self.node_sections.get(&id)?;
        let section = self.sections.get_mut(pos)?;
        let node = section.dynamic.get_mut(&id)?;
        Some((node, &mut section.dirty))
    }

    fn node(&self, id: u64) -> Option<&DynamicNode> {
        let pos = self.node_sections.get(&id)?;
        self.sections.get(pos)?.dynamic.get(&id)
    }

    pub fn get_node(&self, id: u64) -> Option<DynamicNode> {
        self.node(id).cloned()
    }

    /// The loaded dynamic nodes `request` asks for.
    pub fn list_nodes(&self, request: &ListNodes) -> Vec<DynamicNode> {
        self.node_sections
            .keys()
            .filter_map(|id| self.node(*id))
            .filter(|node| request.includes(node))
            .cloned()
            .collect()
    }

    pub fn remove_node(&mut self, id: u64) -> Result<(), WorldError> {
        let pos = self
            .node_sections
            .remove(&id)
            .ok_or(WorldError::NoNode(id))?;
        if let Some(section) = self.sections.get_mut(&pos)
            && let Some(node) = section.dynamic.remove(&id)
        {
            section.dirty |= node.save_enabled;
            if let Some(parent) = node.parent {
                self.unlink_child(parent, id);
            }
        }
        // Its children stay where they are, detached.
        for child in self.children_of(id) {
            if let Some((node, dirty)) = self.node_mut(child) {
                node.parent = None;
                *dirty |= node.save_enabled;
                self.nodes_changed.insert(child);
            }
        }
        self.node_children.remove(&id);
        self.nodes_changed.remove(&id);
        self.nodes_moved.remove(&id);
        self.nodes_removed.insert(id);
        Ok(())
    }

    pub fn set_node_var(
        &mut self,
        id: u64,
        name: String,
        value: Vec<u8>,
    ) -> Result<(), WorldError> {
        let (node, dirty) = self.node_mut(id).ok_or(WorldError::NoNode(id))?;
        node.vars.insert(name, value);
        *dirty |= node.save_enabled;
        self.nodes_changed.insert(id);
        Ok(())
    }

    /// The loaded nodes attached to `id`.
    fn children_of(&self, id: u64) -> Vec<u64> {
        self.node_children
            .get(&id)
            .map(|children| children.iter().copied().collect())
            .unwrap_or_default()
    }

    /// Attaches `id` to `parent` (None: detaches it, where it is).
    pub fn set_node_parent(&mut self, id: u64, parent: Option<u64>) -> Result<(), WorldError> {
        if self.node(id).is_none() {
            return Err(WorldError::NoNode(id));
        }
        if let Some(parent) = parent {
            // Up from the parent: meeting `id` would make a cycle.
            let mut up = Some(parent);
            let mut steps = 0;
            while let Some(ancestor) = up {
                if ancestor == id || steps > self.node_sections.len() {
                    return Err(WorldError::NodeCycle { id, parent });
                }
                up = self
                    .node(ancestor)
                    .ok_or(WorldError::NoNode(ancestor))?
                    .parent;
                steps += 1;
            }
        }
        let (node, dirty) = self.node_mut(id).ok_or(WorldError::NoNode(id))?;
        let before = std::mem::replace(&mut node.parent, parent);
        *dirty |= node.save_enabled;
        if let Some(before) = before {
            self.unlink_child(before, id);
        }
        if let Some(parent) = parent {
            self.node_children.entry(parent).or_default().insert(id);
        }
        self.nodes_changed.insert(id);
        Ok(())
    }

    /// Moves each node (and what is attached to it, by the same offset);
    /// answers the ids not found.
    pub fn move_nodes(&mut self, moves: Vec<NodeMotion>) -> Result<Vec<u64>, WorldError> {
        let mut missing = Vec::new();
        let mut moved = Vec::new();
        for motion in moves {
            let Some((node, dirty)) = self.node_mut(motion.id) else {
                missing.push(motion.id);
                continue;
            };
            let offset = [0, 1, 2].map(|i| motion.position[i] - node.position[i]);
            node.position = motion.position;
            node.orientation = motion.orientation;
            node.velocity = motion.velocity;
            *dirty |= node.save_enabled;
            self.nodes_moved.insert(motion.id);
            moved.push(motion.id);
            // Attached nodes, and theirs, by the same offset.
            let mut carried = self.children_of(motion.id);
            let mut seen = 0;
            while let Some(child) = carried.pop() {
                seen += 1;
                if seen > self.node_sections.len() {
                    break; // a cycle (refused when attaching): never loop
                }
                if let Some((node, dirty)) = self.node_mut(child) {
                    for (axis, delta) in node.position.iter_mut().zip(offset) {
                        *axis += delta;
                    }
                    *dirty |= node.save_enabled;
                    self.nodes_moved.insert(child);
                    moved.push(child);
                    carried.extend(self.children_of(child));
                }
            }
        }
        for id in moved {
            self.rehome_node(id)?;
        }
        Ok(missing)
    }

    /// Moves a node into the section of its position, if that is another
    /// one and it can be loaded.
    fn rehome_node(&mut self, id: u64) -> Result<(), WorldError> {
        let Some(&from) = self.node_sections.get(&id) else {
            return Ok(());
        };
        let Some(position) = self.node(id).map(|n| n.position) else {
            return Ok(());
        };
        let to = self.section_of_position(position);
        if to == from {
            return Ok(());
        }
        // Its own section is the newest used: loading the next one never
        // evicts it from under the node.
        self.clock += 1;
        if let Some(section) = self.sections.get_mut(&from) {
            section.last_used = self.clock;
        }
        self.load_section(to)?;
        let Some(node) = self
            .sections
            .get_mut(&from)
            .and_then(|s| s.dynamic.remove(&id))
        else {
            return Ok(());
        };
        if let Some(section) = self.sections.get_mut(&from) {
            section.dirty |= node.save_enabled;
        }
        let Some(section) = self.sections.get_mut(&to) else {
            // Not loadable after all: back where it was.
            if let Some(section) = self.sections.get_mut(&from) {
                section.dynamic.insert(id, node);
            }
            return Ok(());
        };
        section.dirty |= node.save_enabled;
        section.dynamic.insert(id, node);
        self.node_sections.insert(id, to);
        Ok(())
    }

    /// The nodes created or changed (whole), those only moved (their
    /// motion), and those removed, since the last call; each node once.
    pub fn take_node_changes(&mut self) -> NodesChanged {
        let changed_ids = std::mem::take(&mut self.nodes_changed);
        let moved = std::mem::take(&mut self.nodes_moved)
            .into_iter()
            .filter(|id| !changed_ids.contains(id))
            .filter_map(|id| {
                self.node(id).map(|n| NodeMotion {
                    id,
                    position: n.position,
                    orientation: n.orientation,
                    velocity: n.velocity,
                })
            })
            .collect();
        let changed = changed_ids
            .into_iter()
            .filter_map(|id| self.get_node(id))
            .collect();
        let removed = std::mem::take(&mut self.nodes_removed)
            .into_iter()
            .collect();
        NodesChanged {
            changed,
            moved,
            removed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::StoredSection;
    use crate::world::tests::*;
    use buildat_voxel::geometry::SectionSize;
    use buildat_voxelworld_api::{NodesChanged, StoredNode, StoredNodeKind};

    /// A move of node `id` to `position`, turned a quarter round and going
    /// along x.
    fn motion(id: u64, position: [f64; 3]) -> buildat_voxelworld_api::NodeMotion {
        buildat_voxelworld_api::NodeMotion {
            id,
            position,
            orientation: QUARTER_TURN,
            velocity: [1.0, 0.0, 0.0],
        }
    }

    /// The loaded sections holding node `id`.
    fn sections_holding(world: &World, id: u64) -> Vec<Pos> {
        let mut found: Vec<Pos> = world
            .sections
            .iter()
            .filter(|(_, s)| s.dynamic.contains_key(&id))
            .map(|(pos, _)| *pos)
            .collect();
        found.sort_unstable();
        found
    }

    #[test]
    fn a_node_moves_into_the_next_section_and_is_saved_there_only() {
        let dir = tempfile::tempdir().unwrap();
        let next_x = f64::from(SectionSize::default().0[0] * geometry::CHUNK_SIZE);
        let id = {
            let mut world = open(dir.path());
            generate(&mut world, [0, 0, 0], "stone");
            generate(&mut world, [1, 0, 0], "stone");
            let vars = BTreeMap::from([("kind".to_string(), b"cow".to_vec())]);
            let id = world.create_node([1.5, 40.5, 1.5], true, vars).unwrap();
            world.save_all().unwrap();
            let missing = world
                .move_nodes(vec![motion(id, [next_x + 1.5, 40.5, 1.5])])
                .unwrap();
            assert!(missing.is_empty());
            assert_eq!(sections_holding(&world, id), [[1, 0, 0]]);
            let changes = world.take_node_changes();
            assert_eq!(changes.changed.len(), 1, "created and moved: told once");
            assert!(changes.moved.is_empty(), "told whole");
            assert!(changes.removed.is_empty());
            assert_eq!(
                world.take_node_changes(),
                NodesChanged::default(),
                "told once"
            );
            world
                .move_nodes(vec![motion(id, [next_x + 1.5, 40.5, 1.5])])
                .unwrap();
            let changes = world.take_node_changes();
            assert!(changes.changed.is_empty());
            assert_eq!(
                changes.moved,
                [motion(id, [next_x + 1.5, 40.5, 1.5])],
                "a move is told as one"
            );
            world.save_all().unwrap();
            id
        };
        // Its first section was rewritten without it: one copy, where it is.
        let mut world = open(dir.path());
        world.load_section([0, 0, 0]).unwrap();
        world.load_section([1, 0, 0]).unwrap();
        assert_eq!(sections_holding(&world, id), [[1, 0, 0]]);
        let node = world.get_node(id).expect("back after a restart");
        let appeared = world.take_node_changes().changed;
        assert_eq!(
            appeared,
            std::slice::from_ref(&node),
            "a node loaded from storage is told"
        );
        assert_eq!(
            world.list_nodes(&ListNodes {
                with_var: Some("kind".into())
            }),
            std::slice::from_ref(&node)
        );
        assert!(
            world
                .list_nodes(&ListNodes {
                    with_var: Some("colour".into())
                })
                .is_empty()
        );
        assert_eq!(node.position, [next_x + 1.5, 40.5, 1.5]);
        assert_eq!(node.orientation, QUARTER_TURN);
        assert_eq!(node.velocity, [1.0, 0.0, 0.0]);
        assert_eq!(node.vars.get("kind").map(Vec::as_slice), Some(&b"cow"[..]));
        assert_eq!(
            world.move_nodes(vec![motion(id + 1000, [0.0; 3])]).unwrap(),
            [id + 1000],
            "an unknown node is answered, not an error"
        );
    }

    #[test]
    fn a_transient_node_is_never_written_nor_evicted() {
        let dir = tempfile::tempdir().unwrap();
        let id = {
            let (mut world, _) = faulty(dir.path(), 2);
            generate(&mut world, [0, 0, 0], "stone");
            world.set_section_save_enabled([0, 0, 0], true).unwrap();
            let id = world
                .create_node([1.5, 40.5, 1.5], false, BTreeMap::new())
                .unwrap();
            for x in 1..5 {
                generate(&mut world, [x, 0, 0], "stone");
            }
            assert!(
                world.get_node(id).is_some(),
                "its section stays loaded over the budget of 2"
            );
            world.save_all().unwrap();
            id
        };
        let mut world = open(dir.path());
        world.load_section([0, 0, 0]).unwrap();
        assert!(world.get_node(id).is_none(), "never written");
        assert!(sections_holding(&world, id).is_empty());
    }

    #[test]
    fn a_persistent_node_leaving_memory_with_its_section_is_told_as_removed() {
        let dir = tempfile::tempdir().unwrap();
        let (mut world, _) = faulty(dir.path(), 2);
        generate(&mut world, [0, 0, 0], "stone");
        let id = world
            .create_node([1.5, 40.5, 1.5], true, BTreeMap::new())
            .unwrap();
        world.take_node_changes();
        for x in 1..5 {
            generate(&mut world, [x, 0, 0], "stone");
        }
        assert!(world.get_node(id).is_none(), "evicted with its section");
        assert_eq!(
            world.take_node_changes(),
            NodesChanged {
                removed: vec![id],
                ..NodesChanged::default()
            }
        );
        world.load_section([0, 0, 0]).unwrap();
        let NodesChanged {
            changed: appeared,
            removed,
            ..
        } = world.take_node_changes();
        assert_eq!(appeared.iter().map(|n| n.id).collect::<Vec<_>>(), [id]);
        assert!(removed.is_empty(), "back again: not removed any more");
    }

    #[test]
    fn attached_nodes_move_with_their_parent_and_no_node_carries_itself() {
        let dir = tempfile::tempdir().unwrap();
        let mut world = open(dir.path());
        generate(&mut world, [0, 0, 0], "stone");
        let cart = world
            .create_node([1.0, 40.0, 1.0], true, BTreeMap::new())
            .unwrap();
        let rider = world
            .create_node([1.0, 41.0, 1.0], true, BTreeMap::new())
            .unwrap();
        let hat = world
            .create_node([1.0, 42.0, 1.0], false, BTreeMap::new())
            .unwrap();
        world.set_node_parent(rider, Some(cart)).unwrap();
        world.set_node_parent(hat, Some(rider)).unwrap();
        world
            .move_nodes(vec![motion(cart, [3.0, 40.0, 1.5])])
            .unwrap();
        let at = |world: &World, id| world.get_node(id).unwrap().position;
        assert_eq!(at(&world, rider), [3.0, 41.0, 1.5]);
        assert_eq!(
            at(&world, hat),
            [3.0, 42.0, 1.5],
            "and what is attached to it"
        );
        for (id, parent) in [(cart, hat), (cart, rider), (rider, rider)] {
            assert!(
                matches!(
                    world.set_node_parent(id, Some(parent)),
                    Err(WorldError::NodeCycle { .. })
                ),
                "{id} on {parent}"
            );
        }
        // The rider gets off: the cart moves on without it.
        world.set_node_parent(rider, None).unwrap();
        world
            .move_nodes(vec![motion(cart, [5.0, 40.0, 1.5])])
            .unwrap();
        assert_eq!(at(&world, rider), [3.0, 41.0, 1.5]);
        world.take_node_changes();
        // Removing a node detaches what was on it.
        world.remove_node(rider).unwrap();
        assert_eq!(world.get_node(hat).unwrap().parent, None);
        let NodesChanged {
            changed, removed, ..
        } = world.take_node_changes();
        assert_eq!(removed, [rider]);
        assert_eq!(
            changed.iter().map(|n| n.id).collect::<Vec<_>>(),
            [hat],
            "the hat was detached"
        );
        // Attachments survive a restart (the cart's rider is gone).
        world.set_node_parent(hat, Some(cart)).unwrap();
        world.save_all().unwrap();
        drop(world);
        let mut world = open(dir.path());
        world.load_section([0, 0, 0]).unwrap();
        assert!(world.get_node(hat).is_none(), "transient");
        world
            .move_nodes(vec![motion(cart, [6.0, 40.0, 1.5])])
            .unwrap();
        assert_eq!(at(&world, cart), [6.0, 40.0, 1.5]);
    }

    #[test]
    fn a_node_stored_before_nodes_moved_still_loads() {
        let dir = tempfile::tempdir().unwrap();
        let mut world = open(dir.path());
        let old = StoredNode {
            kind: StoredNodeKind::Dynamic {
                position: [1.0, 2.0, 3.0],
            },
            save_enabled: true,
            vars: BTreeMap::new(),
        };
        world
            .write_stored(&StoredSection {
                pos: [0, 0, 0],
                save_enabled: false,
                generated: false,
                nodes: vec![(77, buildat_interface::encode(&old).unwrap())],
            })
            .unwrap();
        world.load_section([0, 0, 0]).unwrap();
        let node = world.get_node(77).expect("loaded");
        assert_eq!(node.position, [1.0, 2.0, 3.0]);
        assert_eq!(node.orientation, buildat_voxelworld_api::IDENTITY);
        assert_eq!(node.parent, None);
    }
}
