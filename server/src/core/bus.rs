//! The event bus: who subscribes to which event name, and fan-out to their
//! queues.
//!
//! Owns: the subscription map. Invariants: an event is queued once per
//! subscribing slot; delivery order per subscriber is emission order (one
//! FIFO queue per slot). A subscriber whose queue stays full (its bound in
//! bytes, `slot.rs`) does not get the event: the emitter is told which
//! ([`EmitRefused`]) and the server logs it; the others get it. Does not
//! own: running handlers (the module threads filter and deliver) or the
//! queues themselves (`slot.rs`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use dashmap::DashMap;

use super::slot::{EventMsg, FULL_QUEUE_WAIT, Message, ModuleSlot, QueueFull};

/// An event some subscribers did not get: their queues stayed full.
#[derive(Debug, thiserror::Error)]
#[error("{} of {subscribers} subscribers refused the event: {}", refused.len(), list(refused))]
pub(crate) struct EmitRefused {
    pub subscribers: usize,
    pub refused: Vec<QueueFull>,
}

fn list(refused: &[QueueFull]) -> String {
    refused
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

#[derive(Default)]
pub(crate) struct Bus {
    subs: DashMap<String, Vec<Arc<ModuleSlot>>>,
}

impl Bus {
    /// Queues the event to every subscriber; returns how many. `from` is
    /// the emitting module: it waits up to [`FULL_QUEUE_WAIT`] in all for
    /// room in full queues (never for its own, which only it could
    /// empty); the core (`None`) does not wait.
    pub fn emit(
        &self,
        name: &str,
        payload: Vec<u8>,
        from: Option<&ModuleSlot>,
    ) -> Result<usize, EmitRefused> {
        // Every subscriber first without waiting, under the map's read
        // lock; only the full ones are kept (no copy of the list per event)
        // and waited for after the lock is let go.
        let mut full = Vec::new();
        let (subscribers, event) = {
            let Some(subscribers) = self.subs.get(name) else {
                return Ok(0);
            };
            let event = Arc::new(EventMsg {
                name: name.to_string(),
                payload,
                queued_at: Instant::now(),
            });
            for slot in subscribers.iter() {
                if slot.try_push(Message::Event(event.clone())).is_err() {
                    full.push(slot.clone());
                }
            }
            (subscribers.len(), event)
        };
        let deadline = from.map(|_| Instant::now() + FULL_QUEUE_WAIT);
        let mut refused = Vec::new();
        for slot in &full {
            let wait = match deadline {
                Some(_) if from.is_some_and(|f| std::ptr::eq(f, &**slot)) => Duration::ZERO,
                Some(deadline) => deadline.saturating_duration_since(Instant::now()),
                None => Duration::ZERO,
            };
            if let Err(queue_full) = slot.push(Message::Event(event.clone()), wait) {
                refused.push(queue_full);
            }
        }
        if refused.is_empty() {
            Ok(subscribers)
        } else {
            Err(EmitRefused {
                subscribers,
                refused,
            })
        }
    }

    pub fn subscribe(&self, name: &str, slot: &Arc<ModuleSlot>) {
        let mut subscribers = self.subs.entry(name.to_string()).or_default();
        if !subscribers.iter().any(|s| Arc::ptr_eq(s, slot)) {
            subscribers.push(slot.clone());
        }
    }

    pub fn unsubscribe(&self, name: &str, slot: &Arc<ModuleSlot>) {
        if let Some(mut subscribers) = self.subs.get_mut(name) {
            subscribers.retain(|s| !Arc::ptr_eq(s, slot));
        }
        self.subs
            .remove_if(name, |_, subscribers| subscribers.is_empty());
    }

    /// Removes every subscription of `slot`.
    pub fn unsubscribe_all(&self, slot: &Arc<ModuleSlot>) {
        let names: Vec<String> = match slot.subs.read() {
            Ok(subs) => subs.iter().cloned().collect(),
            Err(_) => Vec::new(),
        };
        for name in names {
            self.unsubscribe(&name, slot);
        }
        if let Ok(mut subs) = slot.subs.write() {
            subs.clear();
        }
    }
}
