//! Writing the primitive encodings that [`crate::reader`] reads: LEB128
//! varints, zig-zag signed integers, little-endian fixed-width numbers,
//! length-prefixed byte strings and UTF-8 strings.
//!
//! Owns: [`Writer`] and the free encoding helpers. Writing into a `Vec<u8>`
//! cannot fail, so nothing here returns an error.
//!
//! Does not own: any format's layout, or I/O.

/// Encodes `n` zig-zag (`0 → 0, -1 → 1, 1 → 2, -2 → 3, …`).
#[inline]
pub const fn zigzag_encode(n: i64) -> u64 {
    ((n << 1) ^ (n >> 63)) as u64
}

/// Number of bytes the varint encoding of `v` takes (1..=10).
#[inline]
pub const fn varint_len(v: u64) -> usize {
    let bits = 64 - (v | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

/// Appends the LEB128 varint encoding of `v` to `out`.
#[inline]
pub fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// An append-only byte buffer with the primitive encoders.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Writer {
    buf: Vec<u8>,
}

impl Writer {
    /// An empty writer.
    pub const fn new() -> Self {
        Self { buf: Vec::new() }
    }

    /// An empty writer with room for `n` bytes.
    pub fn with_capacity(n: usize) -> Self {
        Self {
            buf: Vec::with_capacity(n),
        }
    }

    /// A writer appending to an existing buffer.
    pub const fn from_vec(buf: Vec<u8>) -> Self {
        Self { buf }
    }

    /// Bytes written so far.
    pub const fn len(&self) -> usize {
        self.buf.len()
    }

    /// True when nothing has been written.
    pub const fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// The bytes written so far.
    pub fn as_slice(&self) -> &[u8] {
        &self.buf
    }

    /// The underlying buffer, for appending by other means.
    pub const fn as_mut_vec(&mut self) -> &mut Vec<u8> {
        &mut self.buf
    }

    /// The finished buffer.
    pub fn into_vec(self) -> Vec<u8> {
        self.buf
    }

    /// Raw bytes, no length prefix.
    pub fn raw(&mut self, b: &[u8]) {
        self.buf.extend_from_slice(b);
    }

    /// One byte.
    pub fn u8(&mut self, v: u8) {
        self.buf.push(v);
    }

    /// `u16` little-endian.
    pub fn u16_le(&mut self, v: u16) {
        self.raw(&v.to_le_bytes());
    }

    /// `u32` little-endian.
    pub fn u32_le(&mut self, v: u32) {
        self.raw(&v.to_le_bytes());
    }

    /// `u64` little-endian.
    pub fn u64_le(&mut self, v: u64) {
        self.raw(&v.to_le_bytes());
    }

    /// `f32` little-endian.
    pub fn f32_le(&mut self, v: f32) {
        self.raw(&v.to_le_bytes());
    }

    /// `f64` little-endian.
    pub fn f64_le(&mut self, v: f64) {
        self.raw(&v.to_le_bytes());
    }

    /// LEB128 varint.
    pub fn varint(&mut self, v: u64) {
        put_varint(&mut self.buf, v);
    }

    /// Zig-zag varint.
    pub fn zigzag(&mut self, v: i64) {
        put_varint(&mut self.buf, zigzag_encode(v));
    }

    /// Varint length, then the bytes.
    pub fn bytes(&mut self, b: &[u8]) {
        self.varint(b.len() as u64);
        self.raw(b);
    }

    /// Varint length, then the UTF-8 bytes.
    pub fn str(&mut self, s: &str) {
        self.bytes(s.as_bytes());
    }
}
