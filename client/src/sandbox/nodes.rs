//! `buildat.nodes`' primitives over the session's [`NodeView`] (the nodes
//! the server replicates), and the added / changed / removed callbacks
//! Lua registers, run by [`Runtime::dispatch_nodes`].
//!
//! Owns: `nodes_get(id)` (a fresh table of the node's state, or nil),
//! `nodes_ids()`, `nodes_count()`, `nodes_sub(file, kind, fn)`, and the
//! limit on callbacks. Does not own: applying packets (`crate::nodes`),
//! the Lua wrappers (`client_lua/boot.lua`).

use std::cell::RefCell;
use std::rc::Rc;

use mlua::{Function, Lua, Table};

use super::api::MAX_SUBSCRIPTIONS;
use super::{Runtime, ScriptError, Shared};
use crate::nodes::{Applied, NodeView};
use buildat_luau::lua_error;

/// What a node callback is called for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum NodeEvent {
    Added,
    Changed,
    Removed,
}

impl NodeEvent {
    fn parse(kind: &str) -> Option<Self> {
        match kind {
            "added" => Some(Self::Added),
            "changed" => Some(Self::Changed),
            "removed" => Some(Self::Removed),
            _ => None,
        }
    }
}

/// A callback registered with `buildat.nodes.on_<event>`.
pub(super) struct NodeSub {
    owner: Rc<str>,
    event: NodeEvent,
    func: Function,
}

fn view(shared: &Shared) -> mlua::Result<std::cell::Ref<'_, NodeView>> {
    shared
        .nodes
        .try_borrow()
        .map_err(|_| lua_error("the node view is busy"))
}

/// A node's state as a fresh Lua table.
fn node_table(lua: &Lua, nodes: &NodeView, id: u64) -> mlua::Result<Option<Table>> {
    let Some(node) = nodes.get(id) else {
        return Ok(None);
    };
    let state = &node.state;
    let t = lua.create_table()?;
    t.raw_set("id", id)?;
    let [x, y, z] = state.position();
    t.raw_set("x", x)?;
    t.raw_set("y", y)?;
    t.raw_set("z", z)?;
    let [vx, vy, vz] = state.velocity();
    t.raw_set("vx", vx)?;
    t.raw_set("vy", vy)?;
    t.raw_set("vz", vz)?;
    let [qx, qy, qz, qw] = state.orientation();
    t.raw_set("qx", qx)?;
    t.raw_set("qy", qy)?;
    t.raw_set("qz", qz)?;
    t.raw_set("qw", qw)?;
    if let Some(parent) = state.parent {
        t.raw_set("parent", parent)?;
    }
    t.raw_set("time_ms", node.time_ms)?;
    let vars = lua.create_table()?;
    for var in &state.vars {
        vars.raw_set(var.name.as_str(), lua.create_string(&var.value)?)?;
    }
    t.raw_set("vars", vars)?;
    Ok(Some(t))
}

impl Runtime {
    pub(super) fn node_functions(lua: &Lua, shared: &Rc<Shared>, host: &Table) -> mlua::Result<()> {
        let s = shared.clone();
        host.raw_set(
            "nodes_get",
            lua.create_function(move |lua, id: u64| node_table(lua, &*view(&s)?, id))?,
        )?;
        let s = shared.clone();
        host.raw_set(
            "nodes_ids",
            lua.create_function(move |_, ()| Ok(view(&s)?.ids()))?,
        )?;
        let s = shared.clone();
        host.raw_set(
            "nodes_count",
            lua.create_function(move |_, ()| Ok(view(&s)?.len()))?,
        )?;
        let s = shared.clone();
        host.raw_set(
            "nodes_sub",
            lua.create_function(move |_, (owner, kind, func): (String, String, Function)| {
                let event = NodeEvent::parse(&kind).ok_or_else(|| {
                    lua_error(format!("no node event {kind:?} (added, changed, removed)"))
                })?;
                let mut subs = s.node_subs.borrow_mut();
                if subs.len() >= MAX_SUBSCRIPTIONS {
                    return Err(lua_error(format!(
                        "over {MAX_SUBSCRIPTIONS} node callbacks"
                    )));
                }
                subs.push(NodeSub {
                    owner: owner.into(),
                    event,
                    func,
                });
                Ok(())
            })?,
        )?;
        Ok(())
    }

    /// The session's replicated nodes (`app` applies the packets; Lua
    /// reads them through `buildat.nodes`). Never borrowed across a call
    /// into Lua.
    pub fn nodes(&self) -> &RefCell<NodeView> {
        &self.shared.nodes
    }

    /// Runs the callbacks of what a packet did: added, then changed, then
    /// removed, each with the node's id, each call contained and under its
    /// own time budget. Returns the failures.
    pub fn dispatch_nodes(&self, applied: &Applied) -> Vec<ScriptError> {
        let mut errors = Vec::new();
        for (event, ids) in [
            (NodeEvent::Added, &applied.added),
            (NodeEvent::Changed, &applied.changed),
            (NodeEvent::Removed, &applied.removed),
        ] {
            if ids.is_empty() {
                continue;
            }
            let handlers: Vec<(Rc<str>, Function)> = self
                .shared
                .node_subs
                .borrow()
                .iter()
                .filter(|s| s.event == event)
                .map(|s| (s.owner.clone(), s.func.clone()))
                .collect();
            let context = format!("node {event:?} callback");
            for (owner, func) in handlers {
                for id in ids {
                    if let Err(error) = self.enter(&owner, Some(&context), || func.call::<()>(*id))
                    {
                        errors.push(error);
                        // One failure per callback per packet is enough.
                        break;
                    }
                }
            }
        }
        errors
    }
}
