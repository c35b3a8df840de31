//! The record stream: typed entries (strings, integers, floats, byte strings)
//! with a 3-bit tag in the low bits of a head varint, and *records* — runs of
//! entries wrapped in a marker that carries a class, the byte span of the body
//! and, for placed records, a position and a visibility range.
//!
//! Owns: the entry and marker encodings, [`RecordWriter`], and
//! [`RecordReader`], which serves only the classes of a chosen [`Pass`] and
//! skips every other record in O(1) (one cursor move, none of its entries
//! decoded); it can also skip to the end of the record being served, report
//! the offset of that record's marker, and seek back to a remembered marker.
//! Also owns the standalone stream layout: magic [`RECORD_STREAM_MAGIC`], the
//! string table, then entries to the end of the buffer.
//!
//! Does not own: what the classes mean or what a record's entries are (see
//! [`crate::section`] for the one layout built on this), or I/O.

use thiserror::Error;

use crate::magic::{MagicError, check_magic};
use crate::reader::{ReadError, Reader};
use crate::strings::{StringTable, StringTableBuilder};
use crate::writer::{Writer, put_varint, zigzag_encode};

/// Magic and version of a standalone record stream: `"BRS"` then version 1.
pub const RECORD_STREAM_MAGIC: [u8; 4] = *b"BRS\x01";

/// Number of low head bits holding the tag.
pub const TAG_BITS: u32 = 3;
/// Mask of the tag bits.
pub const TAG_MASK: u64 = 0x7;
/// String entry: `head >> 3` is the string-table index.
pub const TAG_STR: u64 = 0;
/// Unsigned integer entry: a varint follows.
pub const TAG_UINT: u64 = 1;
/// Signed integer entry: a zig-zag varint follows.
pub const TAG_INT: u64 = 2;
/// `f32` entry: 4 bytes little-endian follow.
pub const TAG_F32: u64 = 3;
/// `f64` entry: 8 bytes little-endian follow.
pub const TAG_F64: u64 = 4;
/// Byte-string entry: `head >> 3` is the length, the bytes follow.
pub const TAG_BYTES: u64 = 5;
/// Record marker: `head >> 3` holds the flags; class, span, placement follow.
pub const TAG_RECORD: u64 = 6;

/// Marker flag: the marker carries a [`Placement`].
pub const FLAG_PLACED: u64 = 1;
/// Highest record class (classes are bits of a [`Pass`] mask).
pub const MAX_CLASS: u32 = 63;

/// Where a placed record is and how far it can be seen from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Placement {
    /// Position, in whatever unit the layout on top defines.
    pub position: [f32; 3],
    /// Visibility range in the same unit; negative means unlimited.
    pub range: f32,
}

impl Placement {
    /// Squared distance from `point` to the position.
    pub fn distance_sq(&self, point: [f32; 3]) -> f32 {
        let dx = self.position[0] - point[0];
        let dy = self.position[1] - point[1];
        let dz = self.position[2] - point[2];
        dx * dx + dy * dy + dz * dz
    }

    /// True if the record is visible from `point`: unlimited range, or within it.
    pub fn visible_from(&self, point: [f32; 3]) -> bool {
        self.range < 0.0 || self.distance_sq(point) <= self.range * self.range
    }
}

/// A record marker as read.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RecordHeader {
    /// The record's class (`0..=MAX_CLASS`).
    pub class: u32,
    /// Byte offset of the marker (what [`RecordReader::seek_record`] takes).
    pub offset: usize,
    /// Byte offset of the first body byte.
    pub body_start: usize,
    /// Byte offset one past the last body byte.
    pub body_end: usize,
    /// Position and range, for placed records.
    pub placement: Option<Placement>,
}

/// One entry as served by [`RecordReader::next_entry`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Entry<'a> {
    /// An interned string (a view into the input buffer).
    Str(&'a str),
    /// An unsigned integer.
    UInt(u64),
    /// A signed integer.
    Int(i64),
    /// An `f32`.
    F32(f32),
    /// An `f64`.
    F64(f64),
    /// A byte string (a view into the input buffer).
    Bytes(&'a [u8]),
    /// The start of a record; its body's entries follow.
    Record(RecordHeader),
}

/// The set of record classes a reader serves. Entries outside records are
/// always served.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Pass {
    mask: u64,
}

impl Pass {
    /// Every class.
    pub const ALL: Pass = Pass { mask: u64::MAX };
    /// No class (only entries outside records are served).
    pub const NONE: Pass = Pass { mask: 0 };

    /// Only `class` (a class over [`MAX_CLASS`] gives an empty pass).
    pub const fn only(class: u32) -> Pass {
        Pass::NONE.with(class)
    }

    /// This pass plus `class` (ignored if over [`MAX_CLASS`]).
    pub const fn with(self, class: u32) -> Pass {
        if class > MAX_CLASS {
            self
        } else {
            Pass {
                mask: self.mask | (1u64 << class),
            }
        }
    }

    /// A pass from a bit mask (bit `c` set = class `c` served).
    pub const fn from_mask(mask: u64) -> Pass {
        Pass { mask }
    }

    /// The bit mask.
    pub const fn mask(self) -> u64 {
        self.mask
    }

    /// True if `class` is served.
    #[inline]
    pub const fn contains(self, class: u32) -> bool {
        class <= MAX_CLASS && (self.mask >> class) & 1 == 1
    }
}

/// Errors reading or writing a record stream.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum RecordError {
    /// A primitive read failed (truncation, bad varint, bad UTF-8, …).
    #[error(transparent)]
    Read(#[from] ReadError),
    /// The stream's magic or version is not [`RECORD_STREAM_MAGIC`].
    #[error(transparent)]
    Magic(#[from] MagicError),
    /// Tag 7 (reserved).
    #[error("unknown entry tag {tag} at offset {offset}")]
    UnknownTag { tag: u64, offset: usize },
    /// A string entry whose index is not in the table.
    #[error("string index {index} at offset {offset} is out of range (table has {len})")]
    BadStringIndex {
        index: u64,
        offset: usize,
        len: usize,
    },
    /// A tag that carries nothing in its head, with head bits set.
    #[error("tag {tag} at offset {offset} has non-zero head payload {payload}")]
    NonZeroHeadPayload {
        tag: u64,
        payload: u64,
        offset: usize,
    },
    /// A marker with unknown flag bits.
    #[error("record marker at offset {offset} has unknown flags {flags:#x}")]
    UnknownFlags { flags: u64, offset: usize },
    /// A class over [`MAX_CLASS`].
    #[error("record class {class} at offset {offset} is over the maximum {MAX_CLASS}")]
    ClassOutOfRange { class: u64, offset: usize },
    /// A marker inside a record body (records do not nest).
    #[error("record marker at offset {offset} inside the record at offset {outer}")]
    NestedRecord { offset: usize, outer: usize },
    /// An entry that runs past the end of its record's body.
    #[error("entry at offset {offset} runs past the end of its record at offset {end}")]
    CrossesRecordEnd { offset: usize, end: usize },
    /// [`RecordReader::seek_record`] to an offset that holds no marker.
    #[error("offset {offset} does not hold a record marker")]
    NotARecord { offset: usize },
    /// [`RecordReader::seek_record`] to an offset outside the entry section.
    #[error("offset {offset} is outside the entries ({start}..{end})")]
    OffsetOutOfRange {
        offset: usize,
        start: usize,
        end: usize,
    },
    /// Writer: class over [`MAX_CLASS`].
    #[error("record class {0} is over the maximum {MAX_CLASS}")]
    WriteClassOutOfRange(u32),
    /// Writer: [`RecordWriter::begin_record`] while a record is open.
    #[error("a record is already open (records do not nest)")]
    RecordAlreadyOpen,
    /// Writer: [`RecordWriter::end_record`] with no open record.
    #[error("no record is open")]
    NoOpenRecord,
    /// Writer: [`RecordWriter::finish`] with a record still open.
    #[error("a record is still open at finish")]
    UnfinishedRecord,
    /// Writer: more than `u32::MAX` distinct strings.
    #[error("string table is full")]
    TooManyStrings,
}

#[derive(Debug, Clone)]
struct OpenRecord {
    class: u32,
    placement: Option<Placement>,
}

/// Builds a record stream.
///
/// Entries go to the top level or, between [`RecordWriter::begin_record`] and
/// [`RecordWriter::end_record`], into the open record's body (buffered, because
/// the marker carries the body's byte span).
#[derive(Debug, Clone, Default)]
pub struct RecordWriter {
    strings: StringTableBuilder,
    entries: Vec<u8>,
    body: Vec<u8>,
    open: Option<OpenRecord>,
}

impl RecordWriter {
    /// An empty stream.
    pub fn new() -> Self {
        Self::default()
    }

    fn out(&mut self) -> &mut Vec<u8> {
        if self.open.is_some() {
            &mut self.body
        } else {
            &mut self.entries
        }
    }

    /// Appends an interned string entry.
    pub fn str(&mut self, s: &str) -> Result<(), RecordError> {
        let i = self
            .strings
            .intern(s)
            .map_err(|_| RecordError::TooManyStrings)?;
        put_varint(self.out(), (u64::from(i) << TAG_BITS) | TAG_STR);
        Ok(())
    }

    /// Appends an unsigned integer entry.
    pub fn uint(&mut self, v: u64) {
        let out = self.out();
        out.push(TAG_UINT as u8);
        put_varint(out, v);
    }

    /// Appends a signed integer entry.
    pub fn int(&mut self, v: i64) {
        let out = self.out();
        out.push(TAG_INT as u8);
        put_varint(out, zigzag_encode(v));
    }

    /// Appends an `f32` entry.
    pub fn f32(&mut self, v: f32) {
        let out = self.out();
        out.push(TAG_F32 as u8);
        out.extend_from_slice(&v.to_le_bytes());
    }

    /// Appends an `f64` entry.
    pub fn f64(&mut self, v: f64) {
        let out = self.out();
        out.push(TAG_F64 as u8);
        out.extend_from_slice(&v.to_le_bytes());
    }

    /// Appends a byte-string entry.
    pub fn bytes(&mut self, b: &[u8]) {
        let out = self.out();
        put_varint(out, ((b.len() as u64) << TAG_BITS) | TAG_BYTES);
        out.extend_from_slice(b);
    }

    /// Opens a record of `class`; entries until [`RecordWriter::end_record`]
    /// form its body.
    pub fn begin_record(
        &mut self,
        class: u32,
        placement: Option<Placement>,
    ) -> Result<(), RecordError> {
        if class > MAX_CLASS {
            return Err(RecordError::WriteClassOutOfRange(class));
        }
        if self.open.is_some() {
            return Err(RecordError::RecordAlreadyOpen);
        }
        self.body.clear();
        self.open = Some(OpenRecord { class, placement });
        Ok(())
    }

    /// Closes the open record, writing its marker and body.
    pub fn end_record(&mut self) -> Result<(), RecordError> {
        let rec = self.open.take().ok_or(RecordError::NoOpenRecord)?;
        let flags = if rec.placement.is_some() {
            FLAG_PLACED
        } else {
            0
        };
        let e = &mut self.entries;
        put_varint(e, (flags << TAG_BITS) | TAG_RECORD);
        put_varint(e, u64::from(rec.class));
        put_varint(e, self.body.len() as u64);
        if let Some(p) = rec.placement {
            for v in [p.position[0], p.position[1], p.position[2], p.range] {
                e.extend_from_slice(&v.to_le_bytes());
            }
        }
        e.extend_from_slice(&self.body);
        self.body.clear();
        Ok(())
    }

    /// Bytes of entries written so far (top level, closed records included).
    pub fn entries_len(&self) -> usize {
        self.entries.len()
    }

    /// Appends the string table and the entries (no magic): the body layout
    /// that formats embedding a record stream use.
    pub fn finish_into(self, w: &mut Writer) -> Result<(), RecordError> {
        if self.open.is_some() {
            return Err(RecordError::UnfinishedRecord);
        }
        self.strings.write_to(w);
        w.raw(&self.entries);
        Ok(())
    }

    /// The standalone stream: [`RECORD_STREAM_MAGIC`], string table, entries.
    pub fn finish(self) -> Result<Vec<u8>, RecordError> {
        let mut w = Writer::with_capacity(self.entries.len() + 64);
        w.raw(&RECORD_STREAM_MAGIC);
        self.finish_into(&mut w)?;
        Ok(w.into_vec())
    }
}

/// Reads a record stream, serving the records of a [`Pass`].
///
/// [`RecordReader::next_entry`] serves entries in order: top-level entries always,
/// records only if their class is in the pass (a record is served as
/// [`Entry::Record`] followed by its body's entries); a record outside the pass
/// is skipped by moving the cursor past its span, without decoding it. On any
/// error the reader parks at the end: later calls return `Ok(None)`.
#[derive(Debug, Clone)]
pub struct RecordReader<'a> {
    buf: &'a [u8],
    strings: StringTable<'a>,
    entries_start: usize,
    pos: usize,
    pass: Pass,
    current: Option<RecordHeader>,
}

impl<'a> RecordReader<'a> {
    /// Opens a standalone stream (checks [`RECORD_STREAM_MAGIC`]).
    pub fn open(buf: &'a [u8]) -> Result<Self, RecordError> {
        check_magic(buf, RECORD_STREAM_MAGIC, "record stream")?;
        Self::open_at(buf, RECORD_STREAM_MAGIC.len())
    }

    /// Opens a stream body (string table, then entries to the end of `buf`)
    /// that starts at `offset`. Offsets reported later are into `buf`.
    pub fn open_at(buf: &'a [u8], offset: usize) -> Result<Self, RecordError> {
        let mut r = Reader::at(buf, offset)?;
        let strings = StringTable::read(&mut r)?;
        let entries_start = r.position();
        Ok(Self {
            buf,
            strings,
            entries_start,
            pos: entries_start,
            pass: Pass::ALL,
            current: None,
        })
    }

    /// The stream's string table.
    pub fn strings(&self) -> &StringTable<'a> {
        &self.strings
    }

    /// Serves only the classes in `pass` from now on.
    pub fn set_pass(&mut self, pass: Pass) {
        self.pass = pass;
    }

    /// The current pass.
    pub fn pass(&self) -> Pass {
        self.pass
    }

    /// Back to the first entry (pass unchanged).
    pub fn rewind(&mut self) {
        self.pos = self.entries_start;
        self.current = None;
    }

    /// Byte offset of the cursor.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Fraction of the entry section consumed, `0.0..=1.0`, for loading bars.
    pub fn progress(&self) -> f64 {
        let total = self.buf.len().saturating_sub(self.entries_start);
        if total == 0 {
            1.0
        } else {
            self.pos.saturating_sub(self.entries_start) as f64 / total as f64
        }
    }

    /// The record being served, if the cursor is inside one.
    pub fn current_record(&self) -> Option<&RecordHeader> {
        self.current.as_ref()
    }

    /// Offset of the marker of the record being served (to seek back to later).
    pub fn record_offset(&self) -> Option<usize> {
        self.current.map(|c| c.offset)
    }

    /// Moves the cursor past the end of the record being served (O(1)). A no-op
    /// outside a record.
    pub fn skip_to_record_end(&mut self) {
        if let Some(c) = self.current.take() {
            self.pos = c.body_end;
        }
    }

    /// Repositions at the marker at `offset` and enters that record, whatever
    /// the pass: the next [`RecordReader::next_in_record`] (or
    /// [`RecordReader::next_entry`]) serves its first body entry.
    pub fn seek_record(&mut self, offset: usize) -> Result<RecordHeader, RecordError> {
        if offset < self.entries_start || offset >= self.buf.len() {
            return Err(RecordError::OffsetOutOfRange {
                offset,
                start: self.entries_start,
                end: self.buf.len(),
            });
        }
        let mut r = Reader::at(self.buf, offset)?;
        let head = r.varint()?;
        if head & TAG_MASK != TAG_RECORD {
            return Err(RecordError::NotARecord { offset });
        }
        let h = Self::read_marker(&mut r, head, offset)?;
        self.current = Some(h);
        self.pos = h.body_start;
        Ok(h)
    }

    fn park(&mut self) {
        self.pos = self.buf.len();
        self.current = None;
    }

    /// Reads the rest of a marker whose head has been read.
    fn read_marker(
        r: &mut Reader<'a>,
        head: u64,
        offset: usize,
    ) -> Result<RecordHeader, RecordError> {
        let (class, placed, body_start, body_end) = Self::read_marker_span(r, head, offset)?;
        let placement = if placed {
            let p = r.array::<16>()?;
            let f = |i: usize| {
                let mut b = [0u8; 4];
                if let Some(s) = p.get(i * 4..i * 4 + 4) {
                    b.copy_from_slice(s);
                }
                f32::from_le_bytes(b)
            };
            Some(Placement {
                position: [f(0), f(1), f(2)],
                range: f(3),
            })
        } else {
            None
        };
        Ok(RecordHeader {
            class,
            offset,
            body_start,
            body_end,
            placement,
        })
    }

    /// Reads a marker's class and span (leaving the cursor before the
    /// placement, if any): `(class, placed, body_start, body_end)`, the body
    /// checked to lie within the buffer.
    #[inline]
    fn read_marker_span(
        r: &mut Reader<'a>,
        head: u64,
        offset: usize,
    ) -> Result<(u32, bool, usize, usize), RecordError> {
        let flags = head >> TAG_BITS;
        if flags & !FLAG_PLACED != 0 {
            return Err(RecordError::UnknownFlags { flags, offset });
        }
        let class = r.varint()?;
        if class > u64::from(MAX_CLASS) {
            return Err(RecordError::ClassOutOfRange { class, offset });
        }
        let span = r.varint()?;
        let placed = flags & FLAG_PLACED != 0;
        let body_start = r.position() + if placed { 16 } else { 0 };
        let remaining = r.len().saturating_sub(body_start);
        if span > remaining as u64 {
            return Err(RecordError::Read(ReadError::Truncated {
                offset: body_start,
                needed: span,
                remaining,
            }));
        }
        Ok((class as u32, placed, body_start, body_start + span as usize))
    }

    /// The next entry served by the pass, or `None` at the end of the stream.
    pub fn next_entry(&mut self) -> Result<Option<Entry<'a>>, RecordError> {
        match self.next_inner() {
            Ok(e) => Ok(e),
            Err(e) => {
                self.park();
                Err(e)
            }
        }
    }

    /// The next entry of the record being served, or `None` when its body is
    /// exhausted (the cursor then leaves the record) or outside a record.
    pub fn next_in_record(&mut self) -> Result<Option<Entry<'a>>, RecordError> {
        match self.current {
            Some(c) if self.pos < c.body_end => self.next_entry(),
            Some(_) => {
                self.current = None;
                Ok(None)
            }
            None => Ok(None),
        }
    }

    /// Skips to the next record served by the pass and returns its header,
    /// leaving the cursor at its first body entry. Top-level entries on the
    /// way are read and dropped; the rest of a record being served is skipped.
    pub fn next_record(&mut self) -> Result<Option<RecordHeader>, RecordError> {
        self.skip_to_record_end();
        loop {
            match self.next_entry()? {
                None => return Ok(None),
                Some(Entry::Record(h)) => return Ok(Some(h)),
                Some(_) => {}
            }
        }
    }

    fn next_inner(&mut self) -> Result<Option<Entry<'a>>, RecordError> {
        loop {
            if let Some(c) = self.current
                && self.pos >= c.body_end
            {
                self.current = None;
            }
            if self.pos >= self.buf.len() {
                return Ok(None);
            }
            let limit = self.current.map_or(self.buf.len(), |c| c.body_end);
            let window = self.buf.get(..limit).unwrap_or(self.buf);
            let offset = self.pos;
            let mut r = Reader::at(window, offset)?;
            let head = r.varint().map_err(|e| self.crossing(e, offset))?;
            let tag = head & TAG_MASK;
            let payload = head >> TAG_BITS;
            if payload != 0 && matches!(tag, TAG_UINT | TAG_INT | TAG_F32 | TAG_F64) {
                return Err(RecordError::NonZeroHeadPayload {
                    tag,
                    payload,
                    offset,
                });
            }
            let entry = match tag {
                TAG_STR => match self.strings.get(payload) {
                    Some(s) => Entry::Str(s),
                    None => {
                        return Err(RecordError::BadStringIndex {
                            index: payload,
                            offset,
                            len: self.strings.len(),
                        });
                    }
                },
                TAG_UINT => Entry::UInt(r.varint().map_err(|e| self.crossing(e, offset))?),
                TAG_INT => Entry::Int(r.zigzag_i64().map_err(|e| self.crossing(e, offset))?),
                TAG_F32 => Entry::F32(r.f32_le().map_err(|e| self.crossing(e, offset))?),
                TAG_F64 => Entry::F64(r.f64_le().map_err(|e| self.crossing(e, offset))?),
                TAG_BYTES => {
                    Entry::Bytes(r.take_u64(payload).map_err(|e| self.crossing(e, offset))?)
                }
                TAG_RECORD => {
                    if let Some(c) = self.current {
                        return Err(RecordError::NestedRecord {
                            offset,
                            outer: c.offset,
                        });
                    }
                    let mut probe = r.clone();
                    let (class, _, _, body_end) = Self::read_marker_span(&mut probe, head, offset)?;
                    if !self.pass.contains(class) {
                        // O(1) skip: nothing of the body (or placement) is read.
                        self.pos = body_end;
                        continue;
                    }
                    let h = Self::read_marker(&mut r, head, offset)?;
                    self.current = Some(h);
                    self.pos = h.body_start;
                    return Ok(Some(Entry::Record(h)));
                }
                _ => return Err(RecordError::UnknownTag { tag, offset }),
            };
            self.pos = r.position();
            return Ok(Some(entry));
        }
    }

    /// Maps a truncation inside a record body to [`RecordError::CrossesRecordEnd`].
    fn crossing(&self, e: ReadError, offset: usize) -> RecordError {
        match (self.current, &e) {
            (Some(c), ReadError::Truncated { .. }) if c.body_end < self.buf.len() => {
                RecordError::CrossesRecordEnd {
                    offset,
                    end: c.body_end,
                }
            }
            _ => RecordError::Read(e),
        }
    }
}
