//! Bounds-checked reading of the primitive encodings every format in this crate
//! is built from: LEB128 varints, zig-zag signed integers, little-endian
//! fixed-width numbers, length-prefixed byte strings and UTF-8 strings.
//!
//! Owns: [`Reader`], the primitive decodings, and [`ReadError`] (truncation,
//! overflow, bad UTF-8, limits). Every length is checked against what remains
//! *before* anything is sliced or allocated, and any failed read parks the
//! cursor at the end of the buffer, so a truncated input decodes to an error and
//! then to nothing, never past the buffer.
//!
//! Does not own: any format's layout (see the other modules), writing (see
//! [`crate::writer`]), or I/O of any kind.

use thiserror::Error;

/// Why a primitive read failed. Offsets are byte offsets into the buffer the
/// [`Reader`] was created over.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ReadError {
    /// The input ends before the value does.
    #[error("truncated input: {needed} bytes needed at offset {offset}, {remaining} remain")]
    Truncated {
        offset: usize,
        needed: u64,
        remaining: usize,
    },
    /// A varint with more than 64 bits of value (or more than 10 bytes).
    #[error("varint at offset {offset} overflows 64 bits")]
    VarintOverflow { offset: usize },
    /// A varint with redundant trailing zero groups (e.g. `80 00` for 0). Only
    /// the minimal encoding is accepted, so every value has exactly one encoding.
    #[error("varint at offset {offset} is not minimally encoded")]
    VarintNotMinimal { offset: usize },
    /// A decoded integer does not fit the type the format asks for.
    #[error("value {value} at offset {offset} does not fit in {target}")]
    OutOfRange {
        offset: usize,
        value: u64,
        target: &'static str,
    },
    /// A length prefix over a caller-given limit.
    #[error("length {len} at offset {offset} exceeds the limit of {max}")]
    TooLong { offset: usize, len: u64, max: u64 },
    /// A string that is not valid UTF-8.
    #[error("invalid UTF-8 in string at offset {offset}")]
    InvalidUtf8 { offset: usize },
    /// A seek outside the buffer.
    #[error("seek to {target} outside the {len}-byte buffer")]
    SeekOutOfBounds { target: usize, len: usize },
}

/// Decodes a zig-zag encoded value (`0 → 0, 1 → -1, 2 → 1, 3 → -2, …`).
#[inline]
pub const fn zigzag_decode(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// A cursor over a byte slice that never reads past its end.
///
/// Every method either returns the value and advances, or returns a
/// [`ReadError`] and parks the cursor at the end (so later reads fail with
/// `Truncated` too, and [`Reader::is_at_end`] is true). [`Reader::seek`] is the
/// exception: a failed seek leaves the cursor where it was.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// A reader at offset 0 of `buf`.
    pub const fn new(buf: &'a [u8]) -> Self {
        Self { buf, pos: 0 }
    }

    /// A reader at `pos` of `buf`; an out-of-range `pos` is an error.
    pub fn at(buf: &'a [u8], pos: usize) -> Result<Self, ReadError> {
        let mut r = Self::new(buf);
        r.seek(pos)?;
        Ok(r)
    }

    /// The whole underlying buffer.
    pub const fn buffer(&self) -> &'a [u8] {
        self.buf
    }

    /// Current byte offset.
    pub const fn position(&self) -> usize {
        self.pos
    }

    /// Total length of the buffer.
    pub const fn len(&self) -> usize {
        self.buf.len()
    }

    /// True for an empty buffer.
    pub const fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// Bytes left after the cursor.
    pub const fn remaining(&self) -> usize {
        self.buf.len().saturating_sub(self.pos)
    }

    /// True when no byte is left.
    pub const fn is_at_end(&self) -> bool {
        self.pos >= self.buf.len()
    }

    /// Fraction of the buffer consumed, `0.0..=1.0` (an empty buffer is 1.0),
    /// for loading bars.
    pub fn progress(&self) -> f64 {
        if self.buf.is_empty() {
            1.0
        } else {
            self.pos as f64 / self.buf.len() as f64
        }
    }

    /// Moves the cursor to `pos` (`0..=len`). Out of range is an error and
    /// leaves the cursor unchanged.
    pub fn seek(&mut self, pos: usize) -> Result<(), ReadError> {
        if pos > self.buf.len() {
            return Err(ReadError::SeekOutOfBounds {
                target: pos,
                len: self.buf.len(),
            });
        }
        self.pos = pos;
        Ok(())
    }

    /// Moves the cursor to the end.
    pub fn park(&mut self) {
        self.pos = self.buf.len();
    }

    /// Parks and returns `err` (helper for callers that detect a format error
    /// mid-read and want the same parking behaviour).
    pub fn fail<E>(&mut self, err: E) -> E {
        self.park();
        err
    }

    fn truncated(&mut self, offset: usize, needed: u64) -> ReadError {
        let remaining = self.buf.len().saturating_sub(offset);
        self.park();
        ReadError::Truncated {
            offset,
            needed,
            remaining,
        }
    }

    /// The next `n` bytes as a view into the buffer.
    #[inline]
    pub fn take(&mut self, n: usize) -> Result<&'a [u8], ReadError> {
        let start = self.pos;
        match start
            .checked_add(n)
            .and_then(|end| self.buf.get(start..end))
        {
            Some(s) => {
                self.pos = start + n;
                Ok(s)
            }
            None => Err(self.truncated(start, n as u64)),
        }
    }

    /// Like [`Reader::take`] with a `u64` length (as decoded from a varint).
    pub fn take_u64(&mut self, n: u64) -> Result<&'a [u8], ReadError> {
        match usize::try_from(n) {
            Ok(n) => self.take(n),
            Err(_) => {
                let offset = self.pos;
                Err(self.truncated(offset, n))
            }
        }
    }

    /// Skips `n` bytes.
    pub fn skip(&mut self, n: usize) -> Result<(), ReadError> {
        self.take(n).map(|_| ())
    }

    /// Everything after the cursor; the cursor moves to the end.
    pub fn rest(&mut self) -> &'a [u8] {
        let s = self.buf.get(self.pos..).unwrap_or(&[]);
        self.park();
        s
    }

    /// The next `N` bytes as an array.
    #[inline]
    pub fn array<const N: usize>(&mut self) -> Result<[u8; N], ReadError> {
        let s = self.take(N)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }

    /// One byte.
    #[inline]
    pub fn u8(&mut self) -> Result<u8, ReadError> {
        match self.buf.get(self.pos) {
            Some(&b) => {
                self.pos += 1;
                Ok(b)
            }
            None => {
                let offset = self.pos;
                Err(self.truncated(offset, 1))
            }
        }
    }

    /// `u16` little-endian.
    pub fn u16_le(&mut self) -> Result<u16, ReadError> {
        self.array().map(u16::from_le_bytes)
    }

    /// `u32` little-endian.
    pub fn u32_le(&mut self) -> Result<u32, ReadError> {
        self.array().map(u32::from_le_bytes)
    }

    /// `u64` little-endian.
    pub fn u64_le(&mut self) -> Result<u64, ReadError> {
        self.array().map(u64::from_le_bytes)
    }

    /// IEEE-754 `f32` little-endian.
    pub fn f32_le(&mut self) -> Result<f32, ReadError> {
        self.array().map(f32::from_le_bytes)
    }

    /// IEEE-754 `f64` little-endian.
    pub fn f64_le(&mut self) -> Result<f64, ReadError> {
        self.array().map(f64::from_le_bytes)
    }

    /// Unsigned LEB128 varint, at most 10 bytes, minimal encoding only.
    #[inline]
    pub fn varint(&mut self) -> Result<u64, ReadError> {
        let start = self.pos;
        // Fast path: one byte.
        if let Some(&b) = self.buf.get(start)
            && b < 0x80
        {
            self.pos = start + 1;
            return Ok(u64::from(b));
        }
        let mut result: u64 = 0;
        let mut shift: u32 = 0;
        let mut i = start;
        loop {
            let Some(&b) = self.buf.get(i) else {
                let needed = (i - start + 1) as u64;
                return Err(self.truncated(start, needed));
            };
            i += 1;
            if shift == 63 && b > 1 {
                self.park();
                return Err(ReadError::VarintOverflow { offset: start });
            }
            result |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                if b == 0 && i - start > 1 {
                    self.park();
                    return Err(ReadError::VarintNotMinimal { offset: start });
                }
                self.pos = i;
                return Ok(result);
            }
            shift += 7;
        }
    }

    /// A varint that must fit in `u32`.
    pub fn varint_u32(&mut self) -> Result<u32, ReadError> {
        let offset = self.pos;
        let v = self.varint()?;
        u32::try_from(v).map_err(|_| {
            self.fail(ReadError::OutOfRange {
                offset,
                value: v,
                target: "u32",
            })
        })
    }

    /// A varint that must fit in `usize`.
    pub fn varint_usize(&mut self) -> Result<usize, ReadError> {
        let offset = self.pos;
        let v = self.varint()?;
        usize::try_from(v).map_err(|_| {
            self.fail(ReadError::OutOfRange {
                offset,
                value: v,
                target: "usize",
            })
        })
    }

    /// A varint length that must be at most `max`.
    pub fn varint_len(&mut self, max: usize) -> Result<usize, ReadError> {
        let offset = self.pos;
        let v = self.varint()?;
        if v > max as u64 {
            return Err(self.fail(ReadError::TooLong {
                offset,
                len: v,
                max: max as u64,
            }));
        }
        Ok(v as usize)
    }

    /// Zig-zag varint as `i64`.
    pub fn zigzag_i64(&mut self) -> Result<i64, ReadError> {
        self.varint().map(zigzag_decode)
    }

    /// Zig-zag varint that must fit in `i32`.
    pub fn zigzag_i32(&mut self) -> Result<i32, ReadError> {
        let offset = self.pos;
        let raw = self.varint()?;
        i32::try_from(zigzag_decode(raw)).map_err(|_| {
            self.fail(ReadError::OutOfRange {
                offset,
                value: raw,
                target: "i32 (zig-zag)",
            })
        })
    }

    /// A varint length followed by that many bytes (checked against what
    /// remains before slicing).
    pub fn bytes(&mut self) -> Result<&'a [u8], ReadError> {
        let n = self.varint()?;
        self.take_u64(n)
    }

    /// Like [`Reader::bytes`] with a maximum length.
    pub fn bytes_max(&mut self, max: usize) -> Result<&'a [u8], ReadError> {
        let n = self.varint_len(max)?;
        self.take(n)
    }

    /// A varint length followed by that many bytes of UTF-8, served as a view.
    pub fn str(&mut self) -> Result<&'a str, ReadError> {
        let offset = self.pos;
        let b = self.bytes()?;
        std::str::from_utf8(b).map_err(|_| self.fail(ReadError::InvalidUtf8 { offset }))
    }
}
