//! Light blob: a chunk's per-voxel light bytes, compressed for the wire
//! (docs/formats.md §9).
//!
//! Layout: `u8 format` (`01`), `varint count`, then a zlib stream (level 6)
//! of exactly `count` bytes, one per voxel, ending the blob. The bytes are
//! opaque here (buildat-voxel's light: sunlight in the high nibble, block
//! light in the low one). Decoding checks the count against the caller's
//! limit and against what the compressed bytes can inflate to before
//! allocating, so a small blob never claims a big allocation.
//!
//! Owns: the encoding only. Does not own: what the bytes mean, or when
//! light is sent.

use thiserror::Error;

use crate::reader::{ReadError, Reader};
use crate::voxel_blob::{VoxelBlobError, deflate_into, inflate_exact};
use crate::writer::put_varint;

/// Format byte of version 1 (count + zlib-6 of the raw bytes).
pub const LIGHT_BLOB_V1: u8 = 0x01;
/// Most light bytes a blob may hold (encoder and decoder).
pub const MAX_LIGHT_BYTES: usize = 1 << 24;

/// Errors encoding or decoding a light blob.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum LightBlobError {
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error("empty light blob")]
    Empty,
    #[error("unknown light blob format {0:#04x} (supported: {LIGHT_BLOB_V1:#04x})")]
    UnknownFormat(u8),
    /// More bytes than the caller's limit (or [`MAX_LIGHT_BYTES`]).
    #[error("{count} light bytes exceed the limit of {max}")]
    TooMany { count: u64, max: usize },
    /// A count the compressed bytes cannot inflate to (deflate expands at
    /// most 1032:1).
    #[error("{count} light bytes cannot come from {compressed} compressed bytes")]
    Implausible { count: u64, compressed: usize },
    /// The zlib stream is corrupt, truncated, of another length than
    /// declared, or followed by bytes.
    #[error("{0}")]
    Stream(String),
}

impl From<VoxelBlobError> for LightBlobError {
    fn from(error: VoxelBlobError) -> Self {
        Self::Stream(error.to_string())
    }
}

/// Encodes light bytes (at most [`MAX_LIGHT_BYTES`]).
pub fn encode_light(light: &[u8]) -> Result<Vec<u8>, LightBlobError> {
    if light.len() > MAX_LIGHT_BYTES {
        return Err(LightBlobError::TooMany {
            count: light.len() as u64,
            max: MAX_LIGHT_BYTES,
        });
    }
    let mut out = vec![LIGHT_BLOB_V1];
    put_varint(&mut out, light.len() as u64);
    deflate_into(light, &mut out)?;
    Ok(out)
}

/// The count a blob declares, from its header only.
pub fn peek_light_count(bytes: &[u8]) -> Result<u64, LightBlobError> {
    let mut r = Reader::new(bytes);
    let format = r.u8().map_err(|_| LightBlobError::Empty)?;
    if format != LIGHT_BLOB_V1 {
        return Err(LightBlobError::UnknownFormat(format));
    }
    Ok(r.varint()?)
}

/// Decodes a blob of at most `max` light bytes.
pub fn decode_light(bytes: &[u8], max: usize) -> Result<Vec<u8>, LightBlobError> {
    let max = max.min(MAX_LIGHT_BYTES);
    let mut r = Reader::new(bytes);
    let format = r.u8().map_err(|_| LightBlobError::Empty)?;
    if format != LIGHT_BLOB_V1 {
        return Err(LightBlobError::UnknownFormat(format));
    }
    let count = r.varint()?;
    if count > max as u64 {
        return Err(LightBlobError::TooMany { count, max });
    }
    let compressed = r.remaining();
    if count > (compressed as u64).saturating_mul(1032) {
        return Err(LightBlobError::Implausible { count, compressed });
    }
    let stream = r.take(compressed)?;
    Ok(inflate_exact(stream, count as usize)?)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn light_round_trips_and_a_chunk_of_sky_is_small() {
        let mut light = vec![0xf0u8; 32 * 32 * 32];
        light[100] = 0x3e;
        let blob = encode_light(&light).unwrap();
        assert!(blob.len() < 200, "{} bytes", blob.len());
        assert_eq!(peek_light_count(&blob), Ok(32768));
        assert_eq!(decode_light(&blob, 32768).unwrap(), light);
        assert_eq!(decode_light(&encode_light(&[]).unwrap(), 0), Ok(vec![]));
    }

    #[test]
    fn bad_blobs_are_errors() {
        let blob = encode_light(&[7; 1000]).unwrap();
        assert_eq!(
            decode_light(&blob, 999),
            Err(LightBlobError::TooMany {
                count: 1000,
                max: 999
            })
        );
        assert_eq!(decode_light(&[], 10), Err(LightBlobError::Empty));
        assert_eq!(
            decode_light(&[2, 0], 10),
            Err(LightBlobError::UnknownFormat(2))
        );
        for cut in 1..blob.len() {
            assert!(decode_light(&blob[..cut], 1000).is_err(), "cut at {cut}");
        }
        let mut trailing = blob.clone();
        trailing.push(0);
        assert!(decode_light(&trailing, 1000).is_err());
        // A huge count from a few bytes is refused before allocating.
        assert!(matches!(
            decode_light(&[1, 0xff, 0xff, 0xff, 0x07, 0x78], usize::MAX),
            Err(LightBlobError::Implausible { .. })
        ));
    }
}
