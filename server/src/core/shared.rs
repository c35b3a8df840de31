//! Shared byte buffers: bulk data (a file's content, say) that modules hand
//! each other by id instead of copying it into every call.
//!
//! Owns: [`SharedBuffers`], the host's table of live buffers (each a boxed
//! slice the host allocated, with its reference count), and [`Holdings`],
//! what one module instance holds of them. Does not own: the host
//! functions that reach them (`host_table.rs`) or the module side's
//! `SharedBytes` (`buildat_interface::shared`).
//!
//! Invariants:
//! - A buffer is never written after it is made and never moves while it
//!   lives, so the address handed out stays valid while its holder keeps a
//!   reference.
//! - Ids are never reused within a server run: a stale id (a buffer whose
//!   last reference is gone) is refused, never another buffer's bytes.
//! - A reference belongs to one instance; an instance can give back only
//!   what it holds, and what it still holds when it ends (unloaded,
//!   reloaded, failed) is given back for it, so a module that forgets a
//!   buffer or panics leaks nothing.
//! - Lock order: an instance's holdings, then the table.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use super::slot::lock;

struct Buffer {
    bytes: Box<[u8]>,
    references: u64,
}

/// Every live shared buffer of the server run.
#[derive(Default)]
pub(crate) struct SharedBuffers {
    next_id: AtomicU64,
    live: Mutex<HashMap<u64, Buffer>>,
}

/// What one module instance holds: references by buffer id.
#[derive(Default)]
pub(crate) struct Holdings {
    held: Mutex<HashMap<u64, u64>>,
}

/// Why a shared buffer request was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SharedRefusal {
    /// No live buffer has this id (it never existed or its last reference
    /// is gone).
    NotFound,
    /// The instance gave back a reference it does not hold.
    NotHeld,
}

impl SharedBuffers {
    /// Copies `data` into a new buffer held once by `holder`: its id and
    /// the address of its first byte.
    pub fn share(&self, holder: &Holdings, data: &[u8]) -> (u64, *const u8) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        let bytes: Box<[u8]> = data.into();
        let address = bytes.as_ptr();
        let mut held = lock(&holder.held);
        lock(&self.live).insert(
            id,
            Buffer {
                bytes,
                references: 1,
            },
        );
        held.insert(id, 1);
        (id, address)
    }

    /// One more reference to `id` for `holder`: the buffer's address and
    /// length.
    pub fn acquire(&self, holder: &Holdings, id: u64) -> Result<(*const u8, usize), SharedRefusal> {
        let mut held = lock(&holder.held);
        let mut live = lock(&self.live);
        let buffer = live.get_mut(&id).ok_or(SharedRefusal::NotFound)?;
        buffer.references += 1;
        *held.entry(id).or_default() += 1;
        Ok((buffer.bytes.as_ptr(), buffer.bytes.len()))
    }

    /// Gives back one of `holder`'s references to `id`; the buffer is freed
    /// with its last reference.
    pub fn release(&self, holder: &Holdings, id: u64) -> Result<(), SharedRefusal> {
        let mut held = lock(&holder.held);
        let count = held.get_mut(&id).ok_or(SharedRefusal::NotHeld)?;
        *count -= 1;
        if *count == 0 {
            held.remove(&id);
        }
        self.drop_references(id, 1);
        Ok(())
    }

    /// Gives back everything `holder` still holds (its instance ended).
    pub fn release_all(&self, holder: &Holdings) -> u64 {
        let held = std::mem::take(&mut *lock(&holder.held));
        let mut given_back = 0;
        for (id, count) in held {
            self.drop_references(id, count);
            given_back += count;
        }
        given_back
    }

    fn drop_references(&self, id: u64, count: u64) {
        let mut live = lock(&self.live);
        if let Some(buffer) = live.get_mut(&id) {
            buffer.references = buffer.references.saturating_sub(count);
            if buffer.references == 0 {
                live.remove(&id);
            }
        }
    }

    /// Live buffers and their bytes, for the operator.
    pub fn totals(&self) -> (usize, usize) {
        let live = lock(&self.live);
        (live.len(), live.values().map(|b| b.bytes.len()).sum())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes_at(address: *const u8, len: usize) -> Vec<u8> {
        // SAFETY: the tests read only buffers they still hold a reference to.
        unsafe { std::slice::from_raw_parts(address, len) }.to_vec()
    }

    #[test]
    fn a_buffer_lives_while_anyone_holds_it() {
        let buffers = SharedBuffers::default();
        let (sender, receiver) = (Holdings::default(), Holdings::default());
        let (id, address) = buffers.share(&sender, b"file content");
        let (seen, len) = buffers.acquire(&receiver, id).expect("live");
        assert_eq!(seen, address, "the same bytes, not a copy");
        assert_eq!(bytes_at(seen, len), b"file content");
        buffers.release(&sender, id).expect("held");
        assert_eq!(buffers.totals(), (1, 12), "the receiver still holds it");
        assert_eq!(bytes_at(seen, len), b"file content");
        buffers.release(&receiver, id).expect("held");
        assert_eq!(buffers.totals(), (0, 0));
        assert_eq!(buffers.acquire(&receiver, id), Err(SharedRefusal::NotFound));
    }

    #[test]
    fn an_instance_gives_back_only_what_it_holds() {
        let buffers = SharedBuffers::default();
        let (owner, other) = (Holdings::default(), Holdings::default());
        let (id, _) = buffers.share(&owner, b"x");
        assert_eq!(buffers.release(&other, id), Err(SharedRefusal::NotHeld));
        assert_eq!(buffers.release(&owner, 99), Err(SharedRefusal::NotHeld));
        assert_eq!(buffers.totals(), (1, 1));
        buffers.release(&owner, id).expect("held");
        assert_eq!(buffers.release(&owner, id), Err(SharedRefusal::NotHeld));
    }

    #[test]
    fn what_an_ended_instance_held_is_given_back_and_ids_are_not_reused() {
        let buffers = SharedBuffers::default();
        let (ended, survivor) = (Holdings::default(), Holdings::default());
        let (kept, _) = buffers.share(&ended, b"kept");
        let (lost, _) = buffers.share(&ended, b"lost");
        buffers.acquire(&ended, kept).expect("live");
        buffers.acquire(&survivor, kept).expect("live");
        assert_eq!(buffers.release_all(&ended), 3);
        assert_eq!(buffers.totals(), (1, 4), "only what the survivor holds");
        assert_eq!(
            buffers.acquire(&survivor, lost),
            Err(SharedRefusal::NotFound)
        );
        let (next, _) = buffers.share(&survivor, b"new");
        assert!(next > lost, "ids are never reused");
        assert_eq!(buffers.release_all(&survivor), 2);
        assert_eq!(buffers.totals(), (0, 0));
    }
}
