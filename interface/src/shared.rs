//! Bulk bytes handed between modules by reference: [`SharedBytes`].
//!
//! Owns: the module side of the host's shared buffers (the ABI's
//! `share_bytes`, `acquire_bytes`, `release_bytes`): a value holding one
//! reference to a host-owned buffer, or a range of it, that reads as a
//! `&[u8]`, and its serde form (the buffer's id and the range), so a typed
//! call can carry megabytes as a few bytes. Does not own: the buffers
//! (the host allocates, counts and frees them), or deciding what is bulk
//! (the APIs that use it: `buildat-network-api`'s `SendShared`).
//!
//! Rules a module author relies on:
//! - Made once with [`crate::Host::share_bytes`] (one copy into the host),
//!   then any number of modules read the same bytes: decoding a call's
//!   argument takes a reference for the callee, dropping the value gives
//!   it back. The memory is the host's, so it outlives a reload of the
//!   module that made it.
//! - A call carries it safely: the caller's value lives until the call
//!   returns, so the callee's reference is taken first. An event does
//!   not: the emitter's reference may be gone before a subscriber decodes,
//!   and then decoding fails with "no longer exists" (never other bytes:
//!   ids are not reused).
//! - Only a module can decode one (the server and tools have no host to
//!   ask); elsewhere decoding is an error.

use std::fmt;
use std::ops::Range;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::module::{Host, HostError, library_host};

/// One reference to a host-owned byte buffer, or to a range of it.
pub struct SharedBytes {
    host: Host,
    id: u64,
    /// The buffer's first byte; valid while this value lives.
    address: *const u8,
    range: Range<usize>,
}

// SAFETY: the bytes are never written after the buffer is made, and the
// host functions behind `Drop` are thread-safe.
unsafe impl Send for SharedBytes {}
// SAFETY: as above; `&SharedBytes` only reads.
unsafe impl Sync for SharedBytes {}

impl SharedBytes {
    /// # Safety
    /// The caller hands over one reference of this instance's to the
    /// buffer `id`, whose `len` bytes start at `address`.
    pub(crate) unsafe fn from_reference(
        host: Host,
        id: u64,
        address: *const u8,
        len: usize,
    ) -> Self {
        Self {
            host,
            id,
            address,
            range: 0..len,
        }
    }

    pub fn len(&self) -> usize {
        self.range.len()
    }

    pub fn is_empty(&self) -> bool {
        self.range.is_empty()
    }

    pub fn as_slice(&self) -> &[u8] {
        if self.range.is_empty() {
            return &[];
        }
        // SAFETY: the host keeps the buffer, never written again, while
        // this value's reference lives; the range was checked against its
        // length when the value was made.
        unsafe { std::slice::from_raw_parts(self.address.add(self.range.start), self.range.len()) }
    }

    /// `range` of these bytes (relative to them) as a value of its own,
    /// holding its own reference; `None` past the end.
    pub fn get(&self, range: Range<usize>) -> Option<Result<SharedBytes, HostError>> {
        if range.start > range.end || range.end > self.len() {
            return None;
        }
        let start = self.range.start + range.start;
        let end = self.range.start + range.end;
        Some(self.host.acquire_bytes(self.id).map(|_| SharedBytes {
            host: self.host,
            id: self.id,
            address: self.address,
            range: start..end,
        }))
    }
}

impl std::ops::Deref for SharedBytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl Drop for SharedBytes {
    fn drop(&mut self) {
        if let Err(error) = self.host.release_bytes(self.id) {
            log::error!("giving back shared buffer {}: {error}", self.id);
        }
    }
}

impl fmt::Debug for SharedBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "SharedBytes {{ id: {}, range: {:?} }}",
            self.id, self.range
        )
    }
}

impl PartialEq for SharedBytes {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

/// The serde form: the buffer's id and the range, in bytes.
#[derive(Serialize, Deserialize)]
struct Wire {
    id: u64,
    start: u64,
    end: u64,
}

impl Serialize for SharedBytes {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        Wire {
            id: self.id,
            start: self.range.start as u64,
            end: self.range.end as u64,
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for SharedBytes {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let wire = Wire::deserialize(deserializer)?;
        let host = library_host().ok_or_else(|| {
            D::Error::custom("shared bytes can be read only inside a module (no host here)")
        })?;
        let (address, len) = host
            .acquire_bytes(wire.id)
            .map_err(|_| D::Error::custom(format!("shared buffer {} no longer exists", wire.id)))?;
        // SAFETY: the host just handed this instance a reference to `len`
        // bytes at `address`; the value owns it, and dropping it (below, on
        // a bad range) gives it back.
        let whole = unsafe { SharedBytes::from_reference(host, wire.id, address, len) };
        let (start, end) = (wire.start as usize, wire.end as usize);
        if wire.start > wire.end || end > len {
            return Err(D::Error::custom(format!(
                "shared buffer {}: range {}..{} outside its {len} bytes",
                wire.id, wire.start, wire.end
            )));
        }
        let mut value = whole;
        value.range = start..end;
        Ok(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outside_a_module_decoding_is_an_error_not_a_read() {
        let bytes = crate::encode(&Wire {
            id: 1,
            start: 0,
            end: 10,
        })
        .expect("encodes");
        let error = crate::decode::<SharedBytes>(&bytes).expect_err("no host here");
        assert!(
            error.to_string().contains("only inside a module"),
            "{error}"
        );
    }
}
