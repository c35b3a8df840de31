//! Who is blocked waiting on whom, so a call that would close a cycle
//! (A -> B -> A, or A and B calling each other at once) fails at once with
//! the chain instead of deadlocking.
//!
//! Owns: the wait-for graph. Invariant: an edge exists exactly while a call
//! from caller to target is outstanding (the guard removes it). Does not own:
//! delivering calls.

use std::collections::HashMap;
use std::sync::Mutex;

use super::slot::lock;

#[derive(Default)]
pub(crate) struct WaitGraph {
    /// caller -> targets it is waiting on (several when a module calls from
    /// more than one of its threads).
    edges: Mutex<HashMap<String, Vec<String>>>,
}

/// Removes its edge when dropped.
pub(crate) struct WaitGuard<'a> {
    graph: &'a WaitGraph,
    caller: String,
    target: String,
}

impl WaitGraph {
    /// Records that `caller` waits on `target`, or returns the cycle this
    /// would close, written as "a -> b -> a".
    pub fn begin<'a>(&'a self, caller: &str, target: &str) -> Result<WaitGuard<'a>, String> {
        let mut edges = lock(&self.edges);
        if let Some(path) = find_path(&edges, target, caller) {
            let mut chain = vec![caller.to_string()];
            chain.extend(path);
            return Err(chain.join(" -> "));
        }
        edges
            .entry(caller.to_string())
            .or_default()
            .push(target.to_string());
        Ok(WaitGuard {
            graph: self,
            caller: caller.to_string(),
            target: target.to_string(),
        })
    }
}

impl Drop for WaitGuard<'_> {
    fn drop(&mut self) {
        let mut edges = lock(&self.graph.edges);
        if let Some(targets) = edges.get_mut(&self.caller) {
            if let Some(index) = targets.iter().position(|t| *t == self.target) {
                targets.swap_remove(index);
            }
            if targets.is_empty() {
                edges.remove(&self.caller);
            }
        }
    }
}

/// A path of waits from `from` to `to` (both included), if any.
fn find_path(edges: &HashMap<String, Vec<String>>, from: &str, to: &str) -> Option<Vec<String>> {
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
        for next in edges.get(&last).into_iter().flatten() {
            let mut longer = path.clone();
            longer.push(next.clone());
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
        assert!(lock(&graph.edges).is_empty());
    }
}
