//! The dynamic nodes' calls: created, read, listed, moved, attached and
//! removed (one at a time or a batch in one call), answered from
//! `world/nodes.rs`.
//!
//! Owns: how each call answers (a batch's node that cannot be made is
//! `None`, a removed id not there is listed). Does not own: the nodes
//! (`world/nodes.rs`).

use super::*;

/// The nodes' calls, in the module's receive table.
pub(crate) fn receive(table: &mut Receive<VoxelWorld>) {
    table
        .call(|world, request: CreateNode| {
            world
                .world
                .create_node(request.position, request.save_enabled, request.vars)
                .map_err(ModuleError::from)
        })
        .call(|world, request: CreateNodes| {
            let mut ids = Vec::with_capacity(request.nodes.len());
            for node in request.nodes {
                ids.push(
                    match world
                        .world
                        .create_node(node.position, node.save_enabled, node.vars)
                    {
                        Ok(id) => Some(id),
                        Err(error) => {
                            log::debug!("create_nodes: a node at {:?}: {error}", node.position);
                            None
                        }
                    },
                );
            }
            Ok(ids)
        })
        .call(|world, request: GetNode| Ok(world.world.get_node(request.id)))
        .call(|world, request: ListNodes| Ok(world.world.list_nodes(&request)))
        .call(|world, request: RemoveNode| {
            world
                .world
                .remove_node(request.id)
                .map_err(ModuleError::from)
        })
        .call(|world, request: RemoveNodes| {
            let mut absent = Vec::new();
            for id in request.ids {
                match world.world.remove_node(id) {
                    Ok(()) => {}
                    Err(WorldError::NoNode(id)) => absent.push(id),
                    Err(error) => return Err(ModuleError::from(error)),
                }
            }
            Ok(absent)
        })
        .call(|world, request: SetNodeVar| {
            world
                .world
                .set_node_var(request.id, request.name, request.value)
                .map_err(ModuleError::from)
        })
        .call(|world, request: MoveNodes| {
            world
                .world
                .move_nodes(request.moves)
                .map_err(ModuleError::from)
        })
        .call(|world, request: SetNodeParent| {
            world
                .world
                .set_node_parent(request.id, request.parent)
                .map_err(ModuleError::from)
        });
}
