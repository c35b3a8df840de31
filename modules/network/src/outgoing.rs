//! A peer's outgoing queue: the frames not yet written to its socket, in
//! order, as encoded bytes and the shared bodies of `send_shared` packets.
//!
//! Owns: [`Outgoing`]: appending a packet (its definition on first use,
//! frame header and head encoded here; a big shared body kept as a
//! reference, not copied), writing what the socket takes with vectored
//! writes straight from the bytes and the shared buffers, and flattening
//! everything into bytes (for TLS, which seals plaintext it holds, and
//! for a reload's stash). Does not own: the socket, TLS records, or when
//! to write (`peer.rs`).
//!
//! Invariants: bytes leave in the order they were queued; [`Outgoing::len`]
//! is every byte not yet written; a shared body is given back (dropped)
//! once its last byte is written or the queue is flattened or dropped.

use std::collections::VecDeque;
use std::io::IoSlice;

use buildat_format::{PacketTypeError, SenderPacketTypes};
use buildat_interface::SharedBytes;

/// A shared body shorter than this is copied into the bytes: a separate
/// slice in the write costs more than copying a few kilobytes.
const COPY_BELOW: usize = 16 * 1024;
/// At most this many slices in one vectored write.
const MAX_SLICES: usize = 64;
/// An encoded-bytes buffer bigger than this is not kept for reuse.
const KEPT_CAPACITY: usize = 256 * 1024;

enum Chunk {
    Bytes(Vec<u8>),
    Shared(SharedBytes),
}

impl Chunk {
    fn as_slice(&self) -> &[u8] {
        match self {
            Self::Bytes(bytes) => bytes,
            Self::Shared(bytes) => bytes,
        }
    }
}

/// The frames queued for one peer and not yet written.
#[derive(Default)]
pub(crate) struct Outgoing {
    chunks: VecDeque<Chunk>,
    /// Bytes of the front chunk already written.
    front_written: usize,
    /// Bytes not yet written, over every chunk.
    len: usize,
    /// An emptied bytes buffer kept for the next frames.
    spare: Vec<u8>,
}

impl Outgoing {
    /// A queue holding `bytes` (a parked peer's unsent output).
    pub fn from_bytes(bytes: Vec<u8>) -> Self {
        let mut outgoing = Self::default();
        if !bytes.is_empty() {
            outgoing.len = bytes.len();
            outgoing.chunks.push_back(Chunk::Bytes(bytes));
        }
        outgoing
    }

    /// Bytes not yet written.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The bytes buffer at the back, to encode into.
    fn tail(&mut self) -> &mut Vec<u8> {
        if !matches!(self.chunks.back(), Some(Chunk::Bytes(_))) {
            self.chunks
                .push_back(Chunk::Bytes(std::mem::take(&mut self.spare)));
        }
        match self.chunks.back_mut() {
            Some(Chunk::Bytes(bytes)) => bytes,
            // Pushed just above.
            _ => &mut self.spare,
        }
    }

    /// Queues the packet `name` whose payload is `head` then `body`,
    /// preceded by its definition on first use; nothing is queued on an
    /// error.
    pub fn push_packet(
        &mut self,
        types: &mut SenderPacketTypes,
        name: &str,
        head: &[u8],
        body: Option<SharedBytes>,
    ) -> Result<(), PacketTypeError> {
        let body_len = body.as_ref().map_or(0, |b| b.len());
        let tail = self.tail();
        let before = tail.len();
        types.encode_packet_head(name, head, head.len() + body_len, tail)?;
        let framed = tail.len() - before;
        match body {
            Some(body) if body.len() >= COPY_BELOW => self.chunks.push_back(Chunk::Shared(body)),
            Some(body) => tail.extend_from_slice(&body),
            None => {}
        }
        self.len += framed + body_len;
        Ok(())
    }

    /// Up to [`MAX_SLICES`] slices of what is unsent, in order.
    pub fn slices(&self) -> Vec<IoSlice<'_>> {
        self.chunks_unsent()
            .filter(|unsent| !unsent.is_empty())
            .take(MAX_SLICES)
            .map(IoSlice::new)
            .collect()
    }

    /// `count` bytes were written: drops what is done.
    pub fn advance(&mut self, mut count: usize) {
        self.len -= count.min(self.len);
        while count > 0 {
            let Some(front) = self.chunks.front() else {
                return;
            };
            let left = front.as_slice().len() - self.front_written;
            if count < left {
                self.front_written += count;
                break;
            }
            count -= left;
            self.front_written = 0;
            if let Some(Chunk::Bytes(mut bytes)) = self.chunks.pop_front()
                && bytes.capacity() <= KEPT_CAPACITY
            {
                bytes.clear();
                self.spare = bytes;
            }
        }
        // The front buffer is also the one frames are appended to: drop
        // what was written of it rather than let it grow without end.
        if self.chunks.len() == 1
            && self.front_written > 1 << 20
            && let Some(Chunk::Bytes(bytes)) = self.chunks.front_mut()
        {
            bytes.drain(..self.front_written);
            self.front_written = 0;
        }
    }

    /// Everything unsent as one buffer (copying the shared bodies), the
    /// queue left empty.
    pub fn take_bytes(&mut self) -> Vec<u8> {
        if self.chunks.len() == 1
            && self.front_written == 0
            && let Some(Chunk::Bytes(bytes)) = self.chunks.pop_front()
        {
            self.len = 0;
            return bytes;
        }
        let mut bytes = Vec::with_capacity(self.len);
        for slice in self.chunks_unsent() {
            bytes.extend_from_slice(slice);
        }
        self.chunks.clear();
        self.front_written = 0;
        self.len = 0;
        bytes
    }

    /// A buffer from [`Outgoing::take_bytes`] back once its bytes were
    /// used (sealed), to encode the next frames into.
    pub fn recycle(&mut self, mut bytes: Vec<u8>) {
        if bytes.capacity() <= KEPT_CAPACITY {
            bytes.clear();
            self.spare = bytes;
        }
    }

    fn chunks_unsent(&self) -> impl Iterator<Item = &[u8]> {
        self.chunks.iter().enumerate().map(|(index, chunk)| {
            let start = if index == 0 { self.front_written } else { 0 };
            chunk.as_slice().get(start..).unwrap_or_default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use buildat_format::{FrameDecoder, Received, ReceiverPacketTypes};

    /// Every packet in `bytes`, as (name, payload).
    fn packets(bytes: &[u8]) -> Vec<(String, Vec<u8>)> {
        let mut decoder = FrameDecoder::new(1 << 24);
        decoder.push(bytes);
        let mut types = ReceiverPacketTypes::default();
        let mut seen = Vec::new();
        while let Some(frame) = decoder.try_next_frame().expect("valid") {
            if let Received::Packet { name, data, .. } =
                types.receive(frame.ty, &frame.data).expect("known")
            {
                seen.push((name.to_string(), data.to_vec()));
            }
        }
        seen
    }

    /// Writes `out` in steps of the given sizes (what a socket might take),
    /// then the rest.
    fn write_in_steps(out: &mut Outgoing, steps: &[usize]) -> Vec<u8> {
        let mut wire = Vec::new();
        for &step in steps.iter().chain(std::iter::repeat(&usize::MAX)) {
            if out.is_empty() {
                break;
            }
            let mut taken = 0;
            for slice in out.slices() {
                let part = &slice[..slice.len().min(step - taken)];
                wire.extend_from_slice(part);
                taken += part.len();
                if taken == step {
                    break;
                }
            }
            out.advance(taken);
        }
        wire
    }

    fn queue(out: &mut Outgoing, types: &mut SenderPacketTypes, from: u8, to: u8) {
        for i in from..to {
            let payload = vec![i; usize::from(i) * 10];
            out.push_packet(types, "test:small", &payload, None)
                .expect("encodes");
        }
    }

    #[test]
    fn written_in_any_steps_the_frames_arrive_in_order() {
        let mut out = Outgoing::default();
        let mut types = SenderPacketTypes::default();
        queue(&mut out, &mut types, 0, 10);
        let queued = out.len();
        let wire = write_in_steps(&mut out, &[1, 7, 2, 100, 3]);
        assert_eq!(wire.len(), queued);
        assert!(out.is_empty() && out.slices().is_empty());
        let seen = packets(&wire);
        let expected: Vec<(String, Vec<u8>)> = (0..10u8)
            .map(|i| ("test:small".to_string(), vec![i; usize::from(i) * 10]))
            .collect();
        assert_eq!(seen, expected);
    }

    #[test]
    fn a_queue_taken_halfway_holds_exactly_what_was_not_written() {
        let mut types = SenderPacketTypes::default();
        let mut out = Outgoing::default();
        queue(&mut out, &mut types, 0, 6);
        let mut wire = write_in_steps(&mut out, &[5, 11]);
        // Parked here: the rest crosses a reload as bytes.
        let rest = out.take_bytes();
        assert!(out.is_empty());
        let mut again = Outgoing::from_bytes(rest.clone());
        assert_eq!(again.len(), rest.len());
        queue(&mut again, &mut types, 6, 9);
        wire.extend(write_in_steps(&mut again, &[4]));
        assert_eq!(packets(&wire).len(), 9, "nothing lost or repeated");
    }

    #[test]
    fn a_packet_that_cannot_be_framed_queues_nothing() {
        let mut types = SenderPacketTypes::default();
        let mut out = Outgoing::default();
        assert!(
            out.push_packet(&mut types, "", b"x", None).is_err(),
            "an empty name"
        );
        assert!(out.is_empty() && out.take_bytes().is_empty());
    }
}
