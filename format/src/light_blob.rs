//! Light blob: a chunk's per-voxel light bytes, compressed for the wire
//! (docs/formats.md §9).
//!
//! Layout: `u8 format`, `varint count`, then the `count` bytes, one per
//! voxel, compressed, ending the blob: format `02` (written) a zstd frame
//! (level [`ZSTD_LEVEL`]), format `01` (still read) a zlib stream (level
//! 6). zstd won on light in both bytes and CPU (`compress_bench`,
//! docs/RELIABILITY.md: 17 % fewer bytes, half the CPU to compress and to
//! decompress). The bytes are opaque here (buildat-voxel's light: sunlight
//! in the high nibble, block light in the low one). Decoding checks the
//! count against the caller's limit and against what the compressed bytes
//! can expand to before allocating, so a small blob never claims a big
//! allocation. The zstd contexts are kept per thread.
//!
//! Owns: the encoding only. Does not own: what the bytes mean, or when
//! light is sent.

use std::cell::RefCell;

use thiserror::Error;

use crate::reader::{ReadError, Reader};
use crate::voxel_blob::{VoxelBlobError, deflate_into, inflate_exact};
use crate::writer::put_varint;

/// Format byte of version 1 (count + zlib-6 of the raw bytes), still read.
pub const LIGHT_BLOB_V1: u8 = 0x01;
/// Format byte of version 2 (count + a zstd frame of the raw bytes).
pub const LIGHT_BLOB_V2: u8 = 0x02;
/// The zstd level light is written with.
pub const ZSTD_LEVEL: i32 = 9;
/// Most bytes one compressed byte of a zstd frame can stand for (an RLE
/// block: a 3-byte header for up to 128 KiB), rounded up.
const ZSTD_MAX_RATIO: u64 = 1 << 16;
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
    #[error(
        "unknown light blob format {0:#04x} (supported: {LIGHT_BLOB_V1:#04x}, {LIGHT_BLOB_V2:#04x})"
    )]
    UnknownFormat(u8),
    /// More bytes than the caller's limit (or [`MAX_LIGHT_BYTES`]).
    #[error("{count} light bytes exceed the limit of {max}")]
    TooMany { count: u64, max: usize },
    /// A count the compressed bytes cannot expand to (deflate expands at
    /// most 1032:1, zstd at most about 43,700:1).
    #[error("{count} light bytes cannot come from {compressed} compressed bytes")]
    Implausible { count: u64, compressed: usize },
    /// The zlib stream or zstd frame is corrupt, truncated, of another
    /// length than declared, or followed by bytes.
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
    let mut out = head(LIGHT_BLOB_V2, light)?;
    let frame = ZSTD.with(|zstd| match zstd.try_borrow_mut() {
        Ok(mut zstd) => zstd.compress(light),
        Err(_) => Zstd::new().and_then(|mut zstd| zstd.compress(light)),
    })?;
    out.extend_from_slice(&frame);
    Ok(out)
}

/// Encodes light bytes as format 1 (zlib), as blobs were before zstd.
pub fn encode_light_v1(light: &[u8]) -> Result<Vec<u8>, LightBlobError> {
    let mut out = head(LIGHT_BLOB_V1, light)?;
    deflate_into(light, &mut out)?;
    Ok(out)
}

/// A blob's format byte and count, for at most [`MAX_LIGHT_BYTES`].
fn head(format: u8, light: &[u8]) -> Result<Vec<u8>, LightBlobError> {
    if light.len() > MAX_LIGHT_BYTES {
        return Err(LightBlobError::TooMany {
            count: light.len() as u64,
            max: MAX_LIGHT_BYTES,
        });
    }
    let mut out = vec![format];
    put_varint(&mut out, light.len() as u64);
    Ok(out)
}

thread_local! {
    static ZSTD: RefCell<Zstd> = RefCell::new(Zstd::new().unwrap_or_default());
}

/// A thread's zstd contexts, made once (a context costs more than a
/// chunk's light to compress); `None` where one could not be made, and
/// then made for each call.
#[derive(Default)]
struct Zstd {
    compress: Option<zstd::bulk::Compressor<'static>>,
    decompress: Option<zstd::bulk::Decompressor<'static>>,
}

impl Zstd {
    fn new() -> Result<Self, LightBlobError> {
        Ok(Self {
            compress: Some(zstd::bulk::Compressor::new(ZSTD_LEVEL).map_err(stream)?),
            decompress: Some(zstd::bulk::Decompressor::new().map_err(stream)?),
        })
    }

    fn compress(&mut self, light: &[u8]) -> Result<Vec<u8>, LightBlobError> {
        match &mut self.compress {
            Some(compress) => compress.compress(light).map_err(stream),
            None => zstd::bulk::compress(light, ZSTD_LEVEL).map_err(stream),
        }
    }

    /// Exactly `count` bytes from exactly one frame.
    fn decompress(&mut self, frame: &[u8], count: usize) -> Result<Vec<u8>, LightBlobError> {
        let out = match &mut self.decompress {
            Some(decompress) => decompress.decompress(frame, count),
            None => zstd::bulk::decompress(frame, count),
        }
        .map_err(stream)?;
        if out.len() != count {
            return Err(LightBlobError::Stream(format!(
                "the zstd frame holds {} bytes, {count} declared",
                out.len()
            )));
        }
        Ok(out)
    }
}

fn stream(error: std::io::Error) -> LightBlobError {
    LightBlobError::Stream(format!("zstd: {error}"))
}

/// The count a blob declares, from its header only.
pub fn peek_light_count(bytes: &[u8]) -> Result<u64, LightBlobError> {
    let mut r = Reader::new(bytes);
    let format = r.u8().map_err(|_| LightBlobError::Empty)?;
    if format != LIGHT_BLOB_V1 && format != LIGHT_BLOB_V2 {
        return Err(LightBlobError::UnknownFormat(format));
    }
    Ok(r.varint()?)
}

/// Decodes a blob of at most `max` light bytes.
pub fn decode_light(bytes: &[u8], max: usize) -> Result<Vec<u8>, LightBlobError> {
    let max = max.min(MAX_LIGHT_BYTES);
    let mut r = Reader::new(bytes);
    let format = r.u8().map_err(|_| LightBlobError::Empty)?;
    let ratio = match format {
        LIGHT_BLOB_V1 => 1032,
        LIGHT_BLOB_V2 => ZSTD_MAX_RATIO,
        _ => return Err(LightBlobError::UnknownFormat(format)),
    };
    let count = r.varint()?;
    if count > max as u64 {
        return Err(LightBlobError::TooMany { count, max });
    }
    let compressed = r.remaining();
    if count > (compressed as u64).saturating_mul(ratio) {
        return Err(LightBlobError::Implausible { count, compressed });
    }
    let body = r.take(compressed)?;
    let count = count as usize;
    if format == LIGHT_BLOB_V1 {
        return Ok(inflate_exact(body, count)?);
    }
    ZSTD.with(|zstd| match zstd.try_borrow_mut() {
        Ok(mut zstd) => zstd.decompress(body, count),
        Err(_) => Zstd::default().decompress(body, count),
    })
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
            decode_light(&[3, 0], 10),
            Err(LightBlobError::UnknownFormat(3))
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
        assert!(matches!(
            decode_light(&[2, 0xff, 0xff, 0xff, 0x07, 0x28], usize::MAX),
            Err(LightBlobError::Implausible { .. })
        ));
        // A frame of other bytes than declared, or two frames.
        let short = encode_light(&[7; 999]).unwrap();
        let mut lying = vec![LIGHT_BLOB_V2];
        put_varint(&mut lying, 1000);
        lying.extend_from_slice(&short[3..]);
        assert!(matches!(
            decode_light(&lying, 1000),
            Err(LightBlobError::Stream(_))
        ));
        let mut twice = blob.clone();
        twice.extend_from_slice(&blob[3..]);
        assert!(decode_light(&twice, 1000).is_err());
    }

    #[test]
    fn old_zlib_blobs_are_still_read_and_new_ones_are_smaller() {
        let mut light = vec![0u8; 32 * 32 * 32];
        for (i, l) in light.iter_mut().enumerate() {
            // Sunlight falling off under a surface, a torch's diamond.
            let (x, y, z) = (i % 32, i / 32 % 32, i / 1024);
            *l = ((y.saturating_sub(x / 3 + z / 5) as u8).min(15) << 4)
                | (14u8.saturating_sub(((x as i32 - 9).abs() + (z as i32 - 20).abs()) as u8));
        }
        let old = encode_light_v1(&light).unwrap();
        assert_eq!(old[0], LIGHT_BLOB_V1);
        assert_eq!(decode_light(&old, light.len()).unwrap(), light);
        let new = encode_light(&light).unwrap();
        assert_eq!(new[0], LIGHT_BLOB_V2);
        assert_eq!(decode_light(&new, light.len()).unwrap(), light);
        assert!(new.len() < old.len(), "{} against {}", new.len(), old.len());
    }
}
