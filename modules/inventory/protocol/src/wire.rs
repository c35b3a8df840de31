//! Little-endian fields read off the front of a payload, with bounds
//! checks, and the `u8`-length-prefixed strings the packets use (`s1` in Lua's
//! `string.pack`).
//!
//! Owns: reading and writing fields. Does not own: any packet's layout.

use buildat_format::payload::PayloadError;

use crate::VoxelPos;

/// Reads fixed-size little-endian fields off the front of a payload.
pub(crate) struct Fields<'a>(pub(crate) &'a [u8]);

impl<'a> Fields<'a> {
    fn take<const N: usize>(&mut self, what: &str) -> Result<[u8; N], PayloadError> {
        let (head, rest) = self
            .0
            .split_first_chunk::<N>()
            .ok_or_else(|| PayloadError::Decode(format!("{what}: {N} more bytes expected")))?;
        self.0 = rest;
        Ok(*head)
    }

    pub(crate) fn u8(&mut self, what: &str) -> Result<u8, PayloadError> {
        self.take::<1>(what).map(|[b]| b)
    }

    pub(crate) fn u16(&mut self, what: &str) -> Result<u16, PayloadError> {
        self.take::<2>(what).map(u16::from_le_bytes)
    }

    pub(crate) fn u32(&mut self, what: &str) -> Result<u32, PayloadError> {
        self.take::<4>(what).map(u32::from_le_bytes)
    }

    pub(crate) fn u64(&mut self, what: &str) -> Result<u64, PayloadError> {
        self.take::<8>(what).map(u64::from_le_bytes)
    }

    pub(crate) fn voxel(&mut self) -> Result<VoxelPos, PayloadError> {
        let mut voxel = [0; 3];
        for value in &mut voxel {
            *value = i32::from_le_bytes(self.take::<4>("a voxel position")?);
        }
        Ok(voxel)
    }

    fn bytes(&mut self, len: usize, what: &str) -> Result<String, PayloadError> {
        let (head, rest) = self
            .0
            .split_at_checked(len)
            .ok_or_else(|| PayloadError::Decode(format!("{what}: {len} bytes expected")))?;
        self.0 = rest;
        String::from_utf8(head.to_vec())
            .map_err(|_| PayloadError::Decode(format!("{what} is not UTF-8")))
    }

    /// A string after its `u8` length.
    pub(crate) fn str8(&mut self, what: &str) -> Result<String, PayloadError> {
        let len = self.u8(what)?;
        self.bytes(usize::from(len), what)
    }

    /// The rest of the payload as text.
    pub(crate) fn rest_text(&mut self, what: &str) -> Result<String, PayloadError> {
        let len = self.0.len();
        self.bytes(len, what)
    }

    pub(crate) fn end(&self) -> Result<(), PayloadError> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(PayloadError::TrailingBytes(self.0.len()))
        }
    }
}

/// Writes `text` after its `u8` length.
pub(crate) fn put_str8(out: &mut Vec<u8>, text: &str, what: &str) -> Result<(), PayloadError> {
    let len = u8::try_from(text.len())
        .map_err(|_| PayloadError::Encode(format!("{what} is longer than 255 bytes")))?;
    out.push(len);
    out.extend(text.as_bytes());
    Ok(())
}
