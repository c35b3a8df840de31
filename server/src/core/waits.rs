//! Who is blocked waiting on whom, so a call that would close a cycle
//! (A -> B -> A, or A and B calling each other at once) fails at once with
//! the chain instead of deadlocking.
//!
//! Owns: the wait-for graph. Invariant: an edge exists exactly while a call
//! from caller to target is outstanding (the guard removes it). Does not own:
//! delivering calls.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::slot::lock;

#[derive(Default)]
pub(crate) struct WaitGraph {
    inner: Mutex<Graph>,
}

/// Edges as a flat list of (caller, target), with the names interned, so
/// a call that closes no cycle allocates nothing once both names are known
/// (a call is on every tick's path; the list is as long as the calls in
/// flight).
#[derive(Default)]
struct Graph {
    names: HashMap<String, Arc<str>>,
    edges: Vec<(Arc<str>, Arc<str>)>,
}

impl Graph {
    fn intern(&mut self, name: &str) -> Arc<str> {
        if let Some(interned) = self.names.get(name) {
            return interned.clone();
        }
        let interned: Arc<str> = Arc::from(name);
        self.names.insert(name.to_string(), interned.clone());
        interned
    }
}

/// Removes its edge when dropped.
pub(crate) struct WaitGuard<'a> {
    graph: &'a WaitGraph,
    caller: Arc<str>,
    target: Arc<str>,
}

impl WaitGraph {
    /// Records that `caller` waits on `target`, or returns the cycle this
    /// would close, written as "a -> b -> a".
    pub fn begin<'a>(&'a self, caller: &str, target: &str) -> Result<WaitGuard<'a>, String> {
        let mut graph = lock(&self.inner);
        if let Some(path) = find_path(&graph.edges, target, caller) {
            let mut chain = vec![caller.to_string()];
            chain.extend(path);
            return Err(chain.join(" -> "));
        }
        let (caller, target) = (graph.intern(caller), graph.intern(target));
        graph.edges.push((caller.clone(), target.clone()));
        Ok(WaitGuard {
            graph: self,
            caller,
            target,
        })
    }
}

impl Drop for WaitGuard<'_> {
    fn drop(&mut self) {
        let mut graph = lock(&self.graph.inner);
        if let Some(index) = graph
            .edges
            .iter()
            .position(|(c, t)| Arc::ptr_eq(c, &self.caller) && Arc::ptr_eq(t, &self.target))
        {
            graph.edges.swap_remove(index);
        }
    }
}

/// A path of waits from `from` to `to` (both included), if any. Nothing is
/// allocated when `from` waits on nobody (the usual case).
fn find_path(edges: &[(Arc<str>, Arc<str>)], from: &str, to: &str) -> Option<Vec<String>> {
    if from != to && !edges.iter().any(|(caller, _)| &**caller == from) {
        return None;
    }
    let mut stack = vec![vec![from.to_string()]];
    let mut seen = std::collections::HashSet::new();
    while let Some(path) = stack.pop() {
        let last = path.last()?.clone();
        if last == to {
            return Some(path);
        }
        if !seen.insert(last.clone()) {
            continue;
        }
        for (_, next) in edges.iter().filter(|(caller, _)| **caller == *last) {
            let mut longer = path.clone();
            longer.push(next.to_string());
            stack.push(longer);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn self_call_is_a_cycle() {
        let graph = WaitGraph::default();
        assert_eq!(graph.begin("a", "a").err().as_deref(), Some("a -> a"));
    }

    #[test]
    fn nested_cycle_is_named_and_edges_clear() {
        let graph = WaitGraph::default();
        let ab = graph.begin("a", "b").expect("a waits on b");
        let bc = graph.begin("b", "c").expect("b waits on c");
        assert_eq!(
            graph.begin("c", "a").err().as_deref(),
            Some("c -> a -> b -> c")
        );
        drop(bc);
        let ca = graph
            .begin("c", "a")
            .expect("no cycle once b stopped waiting");
        drop(ca);
        drop(ab);
        assert!(lock(&graph.inner).edges.is_empty());
    }
}
