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
use buildat_voxelworld_api::{DynamicNode, NodeMotion, NodesChanged};

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

    /// Every loaded dynamic node, or those having the variable `with_var`.
    pub fn list_nodes(&self, with_var: Option<&str>) -> Vec<DynamicNode> {
        self.node_sections
            .keys()
            .filter_map(|id| self.node(*id))
            .filter(|node| with_var.is_none_or(|var| node.vars.contains_key(var)))
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
