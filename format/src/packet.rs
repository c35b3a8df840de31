//! Packet framing (DESIGN §4), sans-IO: every packet is `[type u16 LE]
//! [size u32 LE][size bytes of data]`. Type 0 is `core:define_packet_type`,
//! whose data is `[type u16 LE][name_len u32 LE][name bytes]`; types 1..=99 are
//! reserved; each direction's sender numbers packet names from 100 upward on
//! first use and sends the definition before the first packet of that type.
//!
//! Owns: [`FrameDecoder`] (push bytes, pull whole frames; the size field is
//! checked against a maximum before anything is allocated for it),
//! [`FrameEncoder`] and [`encode_frame`] (append frames to one buffer, so
//! several packets leave in one write), and the per-direction packet type
//! tables [`SenderPacketTypes`] and [`ReceiverPacketTypes`] (serde-serialisable
//! so they survive a hot reload).
//!
//! Does not own: sockets, timeouts (the caller times a partial frame using
//! [`FrameDecoder::buffered_len`]), payload encodings (bincode, by convention,
//! is the caller's), or which packets exist.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// Bytes of a frame header (type + size).
pub const FRAME_HEADER_LEN: usize = 6;
/// The packet type of `core:define_packet_type`.
pub const DEFINE_PACKET_TYPE: u16 = 0;
/// The name of packet type 0.
pub const DEFINE_PACKET_TYPE_NAME: &str = "core:define_packet_type";
/// First reserved type number.
pub const FIRST_RESERVED_TYPE: u16 = 1;
/// Last reserved type number.
pub const LAST_RESERVED_TYPE: u16 = 99;
/// First number a sender assigns.
pub const FIRST_ASSIGNED_TYPE: u16 = 100;
/// Default maximum frame data size (16 MiB).
pub const DEFAULT_MAX_FRAME_SIZE: u32 = 16 << 20;
/// Default maximum packet name length in bytes.
pub const DEFAULT_MAX_NAME_LEN: usize = 256;
/// Bytes of a definition's fixed part (type + name_len).
pub const DEFINITION_HEADER_LEN: usize = 6;
/// Default maximum of packet types one receiver accepts definitions of (so a
/// peer's table costs at most this many names of the maximum length).
pub const DEFAULT_MAX_PACKET_TYPES: usize = 1024;

/// One whole frame.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Frame {
    /// Packet type number.
    pub ty: u16,
    /// Packet data.
    pub data: Vec<u8>,
}

/// Framing errors. After one, the stream cannot be resynchronised.
#[derive(Debug, Clone, PartialEq, Eq, Error, Serialize, Deserialize)]
pub enum FrameError {
    /// A size field over the decoder's maximum (checked before allocating).
    #[error("frame of type {ty} declares {size} bytes, over the maximum of {max}")]
    TooLarge { ty: u16, size: u32, max: u32 },
    /// Encoder: data longer than a `u32` size field can say.
    #[error("frame data of {len} bytes does not fit the u32 size field")]
    DataTooLong { len: usize },
}

/// Splits a byte stream into frames.
///
/// Push received bytes with [`FrameDecoder::push`], then call
/// [`FrameDecoder::try_next_frame`] until it returns `Ok(None)` (incomplete
/// input). After an error every later call returns the same error. The whole
/// decoder is serde-serialisable, so the unread bytes survive a hot reload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FrameDecoder {
    buf: Vec<u8>,
    start: usize,
    max_frame_size: u32,
    failed: Option<FrameError>,
}

impl Default for FrameDecoder {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_FRAME_SIZE)
    }
}

/// What a [`FrameDecoder`]'s buffer keeps between frames once it is empty.
pub const KEPT_CAPACITY: usize = 16 * 1024;

impl FrameDecoder {
    /// A decoder refusing frames whose data exceeds `max_frame_size` bytes.
    pub fn new(max_frame_size: u32) -> Self {
        Self {
            buf: Vec::new(),
            start: 0,
            max_frame_size,
            failed: None,
        }
    }

    /// The maximum frame data size.
    pub fn max_frame_size(&self) -> u32 {
        self.max_frame_size
    }

    /// Queues received bytes. Consumed bytes are dropped here; once all
    /// were consumed, a buffer grown past [`KEPT_CAPACITY`] (by one big
    /// frame) is given back, so a connection holds no more than it needs.
    pub fn push(&mut self, bytes: &[u8]) {
        if self.start > 0 && self.start >= self.buf.len() {
            self.buf.clear();
            self.start = 0;
            if self.buf.capacity() > KEPT_CAPACITY {
                self.buf.shrink_to(KEPT_CAPACITY.max(bytes.len()));
            }
        } else if self.start > 0 && (self.start >= self.buf.len() / 2 || self.start >= 64 * 1024) {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        self.buf.extend_from_slice(bytes);
    }

    fn pending(&self) -> &[u8] {
        self.buf.get(self.start..).unwrap_or(&[])
    }

    /// Bytes queued and not yet returned as frames: after
    /// [`FrameDecoder::try_next_frame`] returned `Ok(None)`, the bytes of the
    /// partially received frame (0 if none). A server times out a peer whose
    /// value stays above 0 for too long.
    pub fn buffered_len(&self) -> usize {
        self.buf.len().saturating_sub(self.start)
    }

    /// Whether a whole frame is queued (the next `try_next_frame` returns
    /// one, or an error). A receiver that paces its sender reads no more
    /// bytes while one waits.
    pub fn has_whole_frame(&self) -> bool {
        let pending = self.pending();
        parse_header(pending).is_some_and(|(_, size)| {
            usize::try_from(size)
                .ok()
                .and_then(|size| size.checked_add(FRAME_HEADER_LEN))
                .is_some_and(|whole| pending.len() >= whole)
        })
    }

    /// The header of the partial frame, once all 6 header bytes arrived.
    pub fn pending_header(&self) -> Option<(u16, u32)> {
        parse_header(self.pending())
    }

    /// The next whole frame, `Ok(None)` if more bytes are needed.
    pub fn try_next_frame(&mut self) -> Result<Option<Frame>, FrameError> {
        Ok(self.next_frame_ref()?.map(|(ty, data)| Frame {
            ty,
            data: data.to_vec(),
        }))
    }

    /// Like [`FrameDecoder::try_next_frame`], lending the data instead of
    /// copying it.
    pub fn next_frame_ref(&mut self) -> Result<Option<(u16, &[u8])>, FrameError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let Some((ty, size)) = parse_header(self.pending()) else {
            return Ok(None);
        };
        if size > self.max_frame_size {
            let e = FrameError::TooLarge {
                ty,
                size,
                max: self.max_frame_size,
            };
            self.failed = Some(e.clone());
            return Err(e);
        }
        let data_start = self.start + FRAME_HEADER_LEN;
        let data_end = data_start + size as usize;
        if data_end > self.buf.len() {
            return Ok(None);
        }
        // Consumed bytes are dropped lazily, by the next push.
        self.start = data_end;
        Ok(Some((
            ty,
            self.buf.get(data_start..data_end).unwrap_or(&[]),
        )))
    }

    /// The queued bytes (for handing a connection to another owner).
    pub fn into_buffered(self) -> Vec<u8> {
        let mut buf = self.buf;
        buf.drain(..self.start.min(buf.len()));
        buf
    }
}

fn parse_header(b: &[u8]) -> Option<(u16, u32)> {
    let h = b.first_chunk::<FRAME_HEADER_LEN>()?;
    let ty = u16::from_le_bytes([h[0], h[1]]);
    let size = u32::from_le_bytes([h[2], h[3], h[4], h[5]]);
    Some((ty, size))
}

/// Appends one frame to `out`.
pub fn encode_frame(out: &mut Vec<u8>, ty: u16, data: &[u8]) -> Result<(), FrameError> {
    out.reserve(FRAME_HEADER_LEN + data.len());
    encode_frame_header(out, ty, data.len())?;
    out.extend_from_slice(data);
    Ok(())
}

/// Appends the header of a frame of `len` bytes; its data follows.
fn encode_frame_header(out: &mut Vec<u8>, ty: u16, len: usize) -> Result<(), FrameError> {
    let size = u32::try_from(len).map_err(|_| FrameError::DataTooLong { len })?;
    out.extend_from_slice(&ty.to_le_bytes());
    out.extend_from_slice(&size.to_le_bytes());
    Ok(())
}

/// The data of a `core:define_packet_type` packet.
pub fn encode_definition(ty: u16, name: &str) -> Result<Vec<u8>, FrameError> {
    let len = u32::try_from(name.len()).map_err(|_| FrameError::DataTooLong { len: name.len() })?;
    let mut d = Vec::with_capacity(DEFINITION_HEADER_LEN + name.len());
    d.extend_from_slice(&ty.to_le_bytes());
    d.extend_from_slice(&len.to_le_bytes());
    d.extend_from_slice(name.as_bytes());
    Ok(d)
}

/// Appends frames to one buffer, to be written in one go.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FrameEncoder {
    buf: Vec<u8>,
    frames: usize,
}

impl FrameEncoder {
    /// An empty batch.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends a frame.
    pub fn push(&mut self, ty: u16, data: &[u8]) -> Result<(), FrameError> {
        encode_frame(&mut self.buf, ty, data)?;
        self.frames += 1;
        Ok(())
    }

    /// Bytes batched.
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// True when nothing is batched.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// Frames batched.
    pub fn frame_count(&self) -> usize {
        self.frames
    }

    /// The batched bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf
    }

    /// The underlying buffer (for [`SenderPacketTypes::encode_packet`]).
    pub fn buffer_mut(&mut self) -> &mut Vec<u8> {
        &mut self.buf
    }

    /// Takes the batched bytes, leaving the batch empty.
    pub fn take(&mut self) -> Vec<u8> {
        self.frames = 0;
        std::mem::take(&mut self.buf)
    }
}

/// Packet type table errors.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PacketTypeError {
    /// A definition of type 0.
    #[error("packet type 0 cannot be redefined")]
    DefineZero,
    /// A definition of a reserved number (1..=99).
    #[error("packet type {0} is reserved (1..=99)")]
    Reserved(u16),
    /// A type already defined with another name.
    #[error("packet type {ty} is already {existing:?}, redefined as {new:?}")]
    Conflict {
        ty: u16,
        existing: String,
        new: String,
    },
    /// A name already bound to another type.
    #[error("packet name {name:?} is already type {existing}, redefined as {new}")]
    NameTaken {
        name: String,
        existing: u16,
        new: u16,
    },
    /// A name that is not UTF-8.
    #[error("definition of packet type {0} has a name that is not UTF-8")]
    InvalidUtf8(u16),
    /// A name over the maximum length.
    #[error("packet name of {len} bytes exceeds the maximum of {max}")]
    NameTooLong { len: u64, max: usize },
    /// An empty name.
    #[error("empty packet name")]
    EmptyName,
    /// The reserved name `core:define_packet_type` on another type.
    #[error("the name {DEFINE_PACKET_TYPE_NAME:?} belongs to type 0")]
    ReservedName,
    /// Definition data of the wrong shape.
    #[error("malformed packet type definition ({len} bytes): {reason}")]
    MalformedDefinition { len: usize, reason: &'static str },
    /// A packet of a type never defined.
    #[error("packet type {0} is not defined")]
    Undefined(u16),
    /// Receiver: a new definition past the table's maximum number of types.
    #[error("more than {max} packet types defined")]
    TooManyTypes { max: usize },
    /// Sender: every number up to 65535 is used.
    #[error("no packet type numbers left")]
    Exhausted,
    /// Sender: a framing error (data too long).
    #[error(transparent)]
    Frame(#[from] FrameError),
}

fn check_name(name: &str, max: usize) -> Result<(), PacketTypeError> {
    if name.is_empty() {
        return Err(PacketTypeError::EmptyName);
    }
    if name.len() > max {
        return Err(PacketTypeError::NameTooLong {
            len: name.len() as u64,
            max,
        });
    }
    if name == DEFINE_PACKET_TYPE_NAME {
        return Err(PacketTypeError::ReservedName);
    }
    Ok(())
}

/// The sending side's table: name → number, assigned from 100 on first use.
/// Looked up for every packet sent, so hashed with foldhash: the names are
/// the sender's own, never an attacker's, so SipHash's flood resistance
/// buys nothing here (it was a few percent of a loaded server's time).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SenderPacketTypes {
    by_name: HashMap<String, u16, foldhash::fast::RandomState>,
    next: u32,
    max_name_len: usize,
}

impl Default for SenderPacketTypes {
    fn default() -> Self {
        Self::new()
    }
}

impl SenderPacketTypes {
    /// An empty table (names up to [`DEFAULT_MAX_NAME_LEN`] bytes).
    pub fn new() -> Self {
        Self::with_max_name_len(DEFAULT_MAX_NAME_LEN)
    }

    /// An empty table accepting names up to `max` bytes.
    pub fn with_max_name_len(max: usize) -> Self {
        Self {
            by_name: HashMap::default(),
            next: u32::from(FIRST_ASSIGNED_TYPE),
            max_name_len: max,
        }
    }

    /// The number of `name`, if already assigned.
    pub fn get(&self, name: &str) -> Option<u16> {
        self.by_name.get(name).copied()
    }

    /// Number of names assigned.
    pub fn len(&self) -> usize {
        self.by_name.len()
    }

    /// True if nothing was assigned.
    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    /// All (name, number) pairs, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, u16)> {
        self.by_name.iter().map(|(n, &t)| (n.as_str(), t))
    }

    /// The number of `name`; on first use it is assigned and its definition
    /// frame is appended to `out`.
    pub fn type_for(&mut self, name: &str, out: &mut Vec<u8>) -> Result<u16, PacketTypeError> {
        if let Some(&t) = self.by_name.get(name) {
            return Ok(t);
        }
        check_name(name, self.max_name_len)?;
        let ty = u16::try_from(self.next).map_err(|_| PacketTypeError::Exhausted)?;
        let def = encode_definition(ty, name)?;
        encode_frame(out, DEFINE_PACKET_TYPE, &def)?;
        self.next += 1;
        self.by_name.insert(name.to_owned(), ty);
        Ok(ty)
    }

    /// Appends the packet `name` with `data` to `out`, preceded by its
    /// definition on first use. Returns its number.
    pub fn encode_packet(
        &mut self,
        name: &str,
        data: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<u16, PacketTypeError> {
        self.encode_packet_head(name, data, data.len(), out)
    }

    /// Appends the start of the packet `name` whose payload is `len` bytes,
    /// of which `head` is the first ones (its definition first on first
    /// use, then the frame header and `head`); the caller sends the other
    /// `len - head.len()` bytes right after. Nothing is written on an error.
    pub fn encode_packet_head(
        &mut self,
        name: &str,
        head: &[u8],
        len: usize,
        out: &mut Vec<u8>,
    ) -> Result<u16, PacketTypeError> {
        if u32::try_from(len).is_err() || head.len() > len {
            return Err(FrameError::DataTooLong { len }.into());
        }
        let ty = self.type_for(name, out)?;
        encode_frame_header(out, ty, len)?;
        out.extend_from_slice(head);
        Ok(ty)
    }
}

/// What [`ReceiverPacketTypes::receive`] made of a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Received<'a> {
    /// A definition (new, or a repeat of an existing one).
    Definition { ty: u16, name: &'a str },
    /// A packet of a defined type.
    Packet {
        ty: u16,
        name: &'a str,
        data: &'a [u8],
    },
}

/// The receiving side's table: number → name, filled by definitions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReceiverPacketTypes {
    by_type: HashMap<u16, String>,
    by_name: HashMap<String, u16>,
    max_name_len: usize,
    max_types: usize,
}

impl Default for ReceiverPacketTypes {
    fn default() -> Self {
        Self::new()
    }
}

impl ReceiverPacketTypes {
    /// An empty table (names up to [`DEFAULT_MAX_NAME_LEN`] bytes).
    pub fn new() -> Self {
        Self::with_max_name_len(DEFAULT_MAX_NAME_LEN)
    }

    /// An empty table accepting names up to `max` bytes (and up to
    /// [`DEFAULT_MAX_PACKET_TYPES`] types).
    pub fn with_max_name_len(max: usize) -> Self {
        Self::with_limits(max, DEFAULT_MAX_PACKET_TYPES)
    }

    /// An empty table accepting names up to `max_name_len` bytes and at most
    /// `max_types` definitions: what a peer can make it hold is bounded.
    pub fn with_limits(max_name_len: usize, max_types: usize) -> Self {
        Self {
            by_type: HashMap::new(),
            by_name: HashMap::new(),
            max_name_len,
            max_types,
        }
    }

    /// Number of types defined.
    pub fn len(&self) -> usize {
        self.by_type.len()
    }

    /// True if nothing was defined.
    pub fn is_empty(&self) -> bool {
        self.by_type.is_empty()
    }

    /// The name of `ty` (0 is `core:define_packet_type`).
    pub fn name_of(&self, ty: u16) -> Result<&str, PacketTypeError> {
        if ty == DEFINE_PACKET_TYPE {
            return Ok(DEFINE_PACKET_TYPE_NAME);
        }
        self.by_type
            .get(&ty)
            .map(String::as_str)
            .ok_or(PacketTypeError::Undefined(ty))
    }

    /// The number `name` was defined as.
    pub fn type_of(&self, name: &str) -> Option<u16> {
        self.by_name.get(name).copied()
    }

    /// Accepts the data of a `core:define_packet_type` packet. A repeat of an
    /// existing definition is accepted; any conflict is an error.
    pub fn accept_definition(&mut self, data: &[u8]) -> Result<(u16, &str), PacketTypeError> {
        let malformed = |reason| PacketTypeError::MalformedDefinition {
            len: data.len(),
            reason,
        };
        let Some((head, name_bytes)) = data.split_first_chunk::<DEFINITION_HEADER_LEN>() else {
            return Err(malformed("shorter than 6 bytes"));
        };
        let ty = u16::from_le_bytes([head[0], head[1]]);
        let name_len = u32::from_le_bytes([head[2], head[3], head[4], head[5]]);
        if u64::from(name_len) > self.max_name_len as u64 {
            return Err(PacketTypeError::NameTooLong {
                len: u64::from(name_len),
                max: self.max_name_len,
            });
        }
        if name_len as usize != name_bytes.len() {
            return Err(malformed("name_len does not match the remaining bytes"));
        }
        if ty == DEFINE_PACKET_TYPE {
            return Err(PacketTypeError::DefineZero);
        }
        if (FIRST_RESERVED_TYPE..=LAST_RESERVED_TYPE).contains(&ty) {
            return Err(PacketTypeError::Reserved(ty));
        }
        let name = std::str::from_utf8(name_bytes).map_err(|_| PacketTypeError::InvalidUtf8(ty))?;
        check_name(name, self.max_name_len)?;
        if let Some(existing) = self.by_type.get(&ty) {
            if existing != name {
                return Err(PacketTypeError::Conflict {
                    ty,
                    existing: existing.clone(),
                    new: name.to_owned(),
                });
            }
        } else {
            if let Some(&existing) = self.by_name.get(name) {
                return Err(PacketTypeError::NameTaken {
                    name: name.to_owned(),
                    existing,
                    new: ty,
                });
            }
            if self.by_type.len() >= self.max_types {
                return Err(PacketTypeError::TooManyTypes {
                    max: self.max_types,
                });
            }
            self.by_type.insert(ty, name.to_owned());
            self.by_name.insert(name.to_owned(), ty);
        }
        Ok((ty, self.name_of(ty)?))
    }

    /// Classifies a frame: a definition is accepted into the table, a packet
    /// is resolved to its name.
    pub fn receive<'a>(
        &'a mut self,
        ty: u16,
        data: &'a [u8],
    ) -> Result<Received<'a>, PacketTypeError> {
        if ty == DEFINE_PACKET_TYPE {
            let (ty, name) = self.accept_definition(data)?;
            return Ok(Received::Definition { ty, name });
        }
        let name = self.name_of(ty)?;
        Ok(Received::Packet { ty, name, data })
    }
}

/// A received packet of a defined type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawPacket {
    /// Its number on this connection.
    pub ty: u16,
    /// Its name, e.g. `core:run_script`.
    pub name: String,
    /// Its data.
    pub data: Vec<u8>,
}

/// What [`PacketReader::next_item`] took off the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadItem {
    /// A definition, accepted into the table (new or a repeat).
    Definition,
    /// A packet of a defined type.
    Packet(RawPacket),
}

/// Any error of the receiving side. The connection cannot continue after one.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PacketReadError {
    #[error(transparent)]
    Frame(#[from] FrameError),
    #[error(transparent)]
    Type(#[from] PacketTypeError),
}

/// The receiving side of one connection: a [`FrameDecoder`] plus a
/// [`ReceiverPacketTypes`]; definitions are consumed, packets come out named.
/// Serde-serialisable, to carry across a hot reload.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct PacketReader {
    frames: FrameDecoder,
    types: ReceiverPacketTypes,
}

impl PacketReader {
    /// A reader with the given frame size and name length limits.
    pub fn new(max_frame_size: u32, max_name_len: usize) -> Self {
        Self::with_limits(max_frame_size, max_name_len, DEFAULT_MAX_PACKET_TYPES)
    }

    /// A reader with the given frame size, name length and type count limits.
    pub fn with_limits(max_frame_size: u32, max_name_len: usize, max_types: usize) -> Self {
        Self {
            frames: FrameDecoder::new(max_frame_size),
            types: ReceiverPacketTypes::with_limits(max_name_len, max_types),
        }
    }

    /// Queues received bytes.
    pub fn push(&mut self, bytes: &[u8]) {
        self.frames.push(bytes);
    }

    /// The next packet, `Ok(None)` if more bytes are needed. Definitions on
    /// the way are accepted into the table.
    pub fn try_next_packet(&mut self) -> Result<Option<RawPacket>, PacketReadError> {
        loop {
            match self.next_item()? {
                None => return Ok(None),
                Some(ReadItem::Definition) => {}
                Some(ReadItem::Packet(packet)) => return Ok(Some(packet)),
            }
        }
    }

    /// The next frame, definition or packet, `Ok(None)` if more bytes are
    /// needed: a receiver that charges every frame to its sender (an input
    /// budget) sees the definitions too.
    pub fn next_item(&mut self) -> Result<Option<ReadItem>, PacketReadError> {
        let Some((ty, data)) = self.frames.next_frame_ref()? else {
            return Ok(None);
        };
        Ok(Some(match self.types.receive(ty, data)? {
            Received::Definition { .. } => ReadItem::Definition,
            Received::Packet { ty, name, data } => ReadItem::Packet(RawPacket {
                ty,
                name: name.to_owned(),
                data: data.to_vec(),
            }),
        }))
    }

    /// Bytes of a partially received frame (see [`FrameDecoder::buffered_len`]).
    pub fn buffered_len(&self) -> usize {
        self.frames.buffered_len()
    }

    /// Whether a whole frame is queued (see [`FrameDecoder::has_whole_frame`]).
    pub fn has_whole_frame(&self) -> bool {
        self.frames.has_whole_frame()
    }

    /// The frame decoder.
    pub fn frames(&self) -> &FrameDecoder {
        &self.frames
    }

    /// The packet type table.
    pub fn types(&self) -> &ReceiverPacketTypes {
        &self.types
    }
}

/// The sending side of one connection: a [`SenderPacketTypes`] plus a batch
/// of outgoing bytes. Serde-serialisable, to carry across a hot reload.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct PacketWriter {
    types: SenderPacketTypes,
    out: Vec<u8>,
}

impl PacketWriter {
    /// A writer accepting packet names up to `max_name_len` bytes.
    pub fn new(max_name_len: usize) -> Self {
        Self {
            types: SenderPacketTypes::with_max_name_len(max_name_len),
            out: Vec::new(),
        }
    }

    /// Batches the packet `name` (after its definition on first use).
    pub fn write(&mut self, name: &str, data: &[u8]) -> Result<u16, PacketTypeError> {
        self.types.encode_packet(name, data, &mut self.out)
    }

    /// Bytes batched and not yet taken.
    pub fn pending(&self) -> &[u8] {
        &self.out
    }

    /// Takes the batched bytes.
    pub fn take(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.out)
    }

    /// The packet type table.
    pub fn types(&self) -> &SenderPacketTypes {
        &self.types
    }
}

#[cfg(test)]
#[allow(clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn a_whole_frame_is_seen_only_once_all_its_bytes_arrived() {
        let mut bytes = Vec::new();
        encode_frame(&mut bytes, 100, b"hello").expect("encodes");
        let mut decoder = FrameDecoder::new(1024);
        assert!(!decoder.has_whole_frame(), "nothing yet");
        for (i, byte) in bytes.iter().enumerate() {
            assert!(!decoder.has_whole_frame(), "{i} of {} bytes", bytes.len());
            decoder.push(&[*byte]);
        }
        assert!(decoder.has_whole_frame());
        let frame = decoder.try_next_frame().expect("valid").expect("whole");
        assert_eq!(frame.data, b"hello");
        assert!(!decoder.has_whole_frame(), "taken");
        // A header declaring more than fits in memory is never whole.
        decoder.push(&[1, 0, 0xff, 0xff, 0xff, 0xff]);
        assert!(!decoder.has_whole_frame());
    }

    #[test]
    fn the_buffer_of_one_big_frame_is_given_back_once_it_was_read() {
        let mut bytes = Vec::new();
        encode_frame(&mut bytes, 100, &vec![7u8; 1 << 20]).expect("encodes");
        let mut decoder = FrameDecoder::new(2 << 20);
        decoder.push(&bytes);
        let frame = decoder.try_next_frame().expect("valid").expect("whole");
        assert_eq!(frame.data.len(), 1 << 20);
        let mut small = Vec::new();
        encode_frame(&mut small, 100, b"next").expect("encodes");
        decoder.push(&small);
        assert!(
            decoder.buf.capacity() <= KEPT_CAPACITY,
            "{}",
            decoder.buf.capacity()
        );
        let frame = decoder.try_next_frame().expect("valid").expect("whole");
        assert_eq!(frame.data, b"next");
    }

    #[test]
    fn a_packet_head_then_its_rest_is_the_same_frame_as_whole() {
        let (mut whole, mut parted) = (Vec::new(), Vec::new());
        let mut types = SenderPacketTypes::default();
        let mut types_parted = SenderPacketTypes::default();
        types
            .encode_packet("core:file_content", b"headbody", &mut whole)
            .expect("encodes");
        types_parted
            .encode_packet_head("core:file_content", b"head", 8, &mut parted)
            .expect("encodes");
        parted.extend_from_slice(b"body");
        assert_eq!(whole, parted, "the definition, then one frame");
    }
}
