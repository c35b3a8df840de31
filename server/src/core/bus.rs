//! The event bus: who subscribes to which event name, and fan-out to their
//! queues.
//!
//! Owns: the subscription map. Invariants: an event is queued once per
//! subscribing slot; delivery order per subscriber is emission order (one
//! FIFO queue per slot). Does not own: running handlers (the module threads
//! filter and deliver) or the queues themselves (`slot.rs`).

use std::sync::Arc;
use std::time::Instant;

use dashmap::DashMap;

use super::slot::{EventMsg, Message, ModuleSlot};

#[derive(Default)]
pub(crate) struct Bus {
    subs: DashMap<String, Vec<Arc<ModuleSlot>>>,
}

impl Bus {
    /// Queues the event to every subscriber; returns how many.
    pub fn emit(&self, name: &str, payload: Vec<u8>) -> usize {
        let Some(subscribers) = self.subs.get(name) else {
            return 0;
        };
        let event = Arc::new(EventMsg {
            name: name.to_string(),
            payload,
            queued_at: Instant::now(),
        });
        for slot in subscribers.iter() {
            // The receiver lives in the slot, so sending cannot fail.
            let _ = slot.queue_tx.send(Message::Event(event.clone()));
        }
        subscribers.len()
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
