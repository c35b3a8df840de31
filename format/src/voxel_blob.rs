//! The voxel data blob: an array of `VoxelInstance` values (`u32`: low 21 bits
//! type id, next 8 bits free for games, top 3 reserved) stored by voxel *name*,
//! so changing a registry (ids renumbered, blocks added) never invalidates old
//! saves.
//!
//! Layout: a format byte ([`VOXEL_BLOB_V1`]), the voxel count and the
//! uncompressed body length as varints, then the body as one zlib stream
//! (level 6). The body holds a string table of voxel names, a palette of the
//! distinct full `u32` values as (name index, upper 11 bits), and the voxels as
//! runs: one varint per run, `((run_length - 1) << bits) | palette_index`,
//! where `bits` is the bit width of `palette_len - 1`. Decoding inflates into
//! a buffer of exactly the declared length, bounded by [`DecodeLimits`] (a zip
//! bomb is an error, not an allocation), and maps names through the caller's
//! registry; an unknown name is reported and replaced by a placeholder id.
//!
//! Owns: the blob layout, [`encode_voxels`], [`decode_voxels`] and their limits
//! and errors.
//!
//! Does not own: voxel names' structure (the caller serialises its `VoxelName`
//! into the opaque string), the registry, the voxel index order inside a chunk
//! (the caller's), or I/O.

use std::collections::HashMap;

use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};
use thiserror::Error;

use crate::reader::{ReadError, Reader};
use crate::strings::{StringTable, StringTableBuilder};
use crate::writer::{Writer, put_varint};

/// Format byte of version 1 (palette + runs + zlib-6).
pub const VOXEL_BLOB_V1: u8 = 0x01;
/// Bits of the type id in a `VoxelInstance`.
pub const TYPE_ID_BITS: u32 = 21;
/// Mask of the type id in a `VoxelInstance`.
pub const TYPE_ID_MASK: u32 = (1 << TYPE_ID_BITS) - 1;
/// Largest value of the upper 11 bits.
pub const MAX_HIGH_BITS: u32 = u32::MAX >> TYPE_ID_BITS;
/// Most voxels one blob can hold (encoder and decoder).
pub const MAX_VOXELS: usize = 1 << 24;
/// Largest uncompressed body (encoder and decoder).
pub const MAX_BODY_BYTES: usize = 64 << 20;
/// zlib compression level of the body.
pub const ZLIB_LEVEL: u32 = 6;

/// Bounds a decoder applies before allocating.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodeLimits {
    /// Most voxels accepted (clamped to [`MAX_VOXELS`]).
    pub max_voxels: usize,
    /// Largest uncompressed body accepted (clamped to [`MAX_BODY_BYTES`]).
    pub max_body_bytes: usize,
}

impl Default for DecodeLimits {
    /// 4 Mi voxels (128³) and a 16 MiB body.
    fn default() -> Self {
        Self {
            max_voxels: 1 << 22,
            max_body_bytes: 16 << 20,
        }
    }
}

/// The result of decoding a blob.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DecodedVoxels {
    /// The voxels, names mapped to the current registry's type ids, upper 11
    /// bits preserved.
    pub voxels: Vec<u32>,
    /// Distinct names the registry did not know (their voxels hold the
    /// placeholder type id), in palette order.
    pub unknown_names: Vec<String>,
}

/// Errors encoding or decoding a voxel blob.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum VoxelBlobError {
    #[error(transparent)]
    Read(#[from] ReadError),
    /// Zero bytes.
    #[error("empty voxel blob")]
    Empty,
    /// A first byte that names no known format (or another version).
    #[error("unknown voxel blob format {0:#04x} (supported: {VOXEL_BLOB_V1:#04x})")]
    UnknownFormat(u8),
    /// More voxels than the limit.
    #[error("{count} voxels exceed the limit of {max}")]
    TooManyVoxels { count: u64, max: usize },
    /// A declared body over the limit.
    #[error("declared body of {len} bytes exceeds the limit of {max}")]
    BodyTooLarge { len: u64, max: usize },
    /// A declared body longer than the zlib stream could inflate to (deflate
    /// expands at most 1032:1).
    #[error("declared body of {len} bytes cannot come from {compressed} compressed bytes")]
    BodyImplausible { len: u64, compressed: usize },
    /// The zlib stream is corrupt or truncated.
    #[error("zlib stream: {0}")]
    Inflate(String),
    /// The zlib stream inflates to another length than declared.
    #[error("body inflates to {actual} bytes, {declared} declared")]
    BodyLengthMismatch { declared: usize, actual: usize },
    /// Bytes after the zlib stream.
    #[error("{0} bytes after the zlib stream")]
    TrailingBytes(usize),
    /// Bytes after the last run in the body.
    #[error("{0} bytes after the last run")]
    TrailingBody(usize),
    /// A palette with too many entries, or none for a non-empty blob.
    #[error("palette of {len} entries for {count} voxels")]
    BadPaletteLen { len: u64, count: usize },
    /// A palette name index outside the string table.
    #[error("palette entry {entry} names string {index}, table has {len}")]
    BadStringIndex {
        entry: usize,
        index: u64,
        len: usize,
    },
    /// Upper bits over 11 bits.
    #[error("palette entry {entry} has upper bits {value:#x} over 11 bits")]
    HighBitsOutOfRange { entry: usize, value: u64 },
    /// A run's palette index outside the palette.
    #[error("run at voxel {at} uses palette index {index}, palette has {len}")]
    BadPaletteIndex { at: usize, index: u64, len: usize },
    /// Runs that add up to more voxels than declared.
    #[error("run of {run} at voxel {at} passes the declared {count} voxels")]
    RunOverflow { at: usize, run: u64, count: usize },
    /// Encoder: a type id with no name in the registry.
    #[error("voxel type id {0} has no name")]
    UnnamedType(u32),
    /// Decoder: the registry returned an id over 21 bits.
    #[error("registry maps {name:?} to {id}, over 21 bits")]
    TypeIdOutOfRange { name: String, id: u32 },
    /// Decoder: a placeholder id over 21 bits.
    #[error("placeholder type id {0} is over 21 bits")]
    PlaceholderOutOfRange(u32),
    /// Encoder: zlib failed (should not happen).
    #[error("zlib compression: {0}")]
    Deflate(String),
}

/// Bit width of palette indices for a palette of `len` entries.
#[inline]
fn index_bits(len: usize) -> u32 {
    if len <= 1 {
        0
    } else {
        usize::BITS - (len - 1).leading_zeros()
    }
}

/// Encodes `voxels`; `name_of(type_id)` gives the voxel name of each distinct
/// type id (called once per id). A type id without a name is an error.
pub fn encode_voxels<N, F>(voxels: &[u32], mut name_of: F) -> Result<Vec<u8>, VoxelBlobError>
where
    N: AsRef<str>,
    F: FnMut(u32) -> Option<N>,
{
    if voxels.len() > MAX_VOXELS {
        return Err(VoxelBlobError::TooManyVoxels {
            count: voxels.len() as u64,
            max: MAX_VOXELS,
        });
    }
    // Runs of equal values, each mapped to a palette index.
    let mut palette: Vec<u32> = Vec::new();
    let mut lookup: HashMap<u32, u32> = HashMap::new();
    let mut runs: Vec<(u32, u32)> = Vec::new();
    let mut last_value = 0u32;
    let mut last_index = u32::MAX;
    let mut i = 0usize;
    while let Some(&v) = voxels.get(i) {
        let mut j = i + 1;
        while voxels.get(j) == Some(&v) {
            j += 1;
        }
        let index = if last_index != u32::MAX && v == last_value {
            last_index
        } else {
            let found = if palette.len() <= 16 {
                palette.iter().position(|&p| p == v).map(|p| p as u32)
            } else {
                lookup.get(&v).copied()
            };
            let index = match found {
                Some(p) => p,
                None => {
                    let p = palette.len() as u32;
                    palette.push(v);
                    lookup.insert(v, p);
                    p
                }
            };
            last_value = v;
            last_index = index;
            index
        };
        runs.push((index, (j - i) as u32));
        i = j;
    }

    // Body: names, palette, runs.
    let mut names = StringTableBuilder::new();
    let mut name_index: HashMap<u32, u32> = HashMap::new();
    let mut pal_bytes = Vec::with_capacity(palette.len() * 3 + 8);
    put_varint(&mut pal_bytes, palette.len() as u64);
    for &v in &palette {
        let id = v & TYPE_ID_MASK;
        let ni = match name_index.get(&id) {
            Some(&n) => n,
            None => {
                let name = name_of(id).ok_or(VoxelBlobError::UnnamedType(id))?;
                let n = names
                    .intern(name.as_ref())
                    .map_err(|_| VoxelBlobError::UnnamedType(id))?;
                name_index.insert(id, n);
                n
            }
        };
        put_varint(&mut pal_bytes, u64::from(ni));
        put_varint(&mut pal_bytes, u64::from(v >> TYPE_ID_BITS));
    }
    let mut body = Writer::with_capacity(runs.len() * 2 + pal_bytes.len() + 64);
    names.write_to(&mut body);
    body.raw(&pal_bytes);
    let bits = index_bits(palette.len());
    let out = body.as_mut_vec();
    for &(index, len) in &runs {
        put_varint(out, (u64::from(len - 1) << bits) | u64::from(index));
    }
    let body = body.into_vec();
    if body.len() > MAX_BODY_BYTES {
        return Err(VoxelBlobError::BodyTooLarge {
            len: body.len() as u64,
            max: MAX_BODY_BYTES,
        });
    }

    let mut out = Vec::with_capacity(body.len() / 2 + 64);
    out.push(VOXEL_BLOB_V1);
    put_varint(&mut out, voxels.len() as u64);
    put_varint(&mut out, body.len() as u64);
    deflate_into(&body, &mut out)?;
    Ok(out)
}

/// Appends the zlib (level 6) stream of `input` to `out`.
pub(crate) fn deflate_into(input: &[u8], out: &mut Vec<u8>) -> Result<(), VoxelBlobError> {
    let mut c = Compress::new(Compression::new(ZLIB_LEVEL), true);
    out.reserve(input.len() / 2 + 64);
    loop {
        let consumed = usize::try_from(c.total_in()).unwrap_or(usize::MAX);
        let rest = input.get(consumed..).unwrap_or(&[]);
        let status = c
            .compress_vec(rest, out, FlushCompress::Finish)
            .map_err(|e| VoxelBlobError::Deflate(e.to_string()))?;
        if status == Status::StreamEnd {
            return Ok(());
        }
        out.reserve(out.capacity().max(256));
    }
}

/// Inflates a zlib stream that must be exactly `input` and produce exactly
/// `expected` bytes. Allocates at most `expected + 1` bytes.
pub(crate) fn inflate_exact(input: &[u8], expected: usize) -> Result<Vec<u8>, VoxelBlobError> {
    let mut out = Vec::with_capacity(expected.saturating_add(1));
    let mut d = Decompress::new(true);
    let status = d
        .decompress_vec(input, &mut out, FlushDecompress::Finish)
        .map_err(|e| VoxelBlobError::Inflate(e.to_string()))?;
    if out.len() > expected {
        return Err(VoxelBlobError::BodyLengthMismatch {
            declared: expected,
            actual: out.len(),
        });
    }
    if status != Status::StreamEnd {
        return Err(VoxelBlobError::Inflate(
            "truncated or unterminated stream".into(),
        ));
    }
    if out.len() != expected {
        return Err(VoxelBlobError::BodyLengthMismatch {
            declared: expected,
            actual: out.len(),
        });
    }
    let used = usize::try_from(d.total_in()).unwrap_or(usize::MAX);
    if used != input.len() {
        return Err(VoxelBlobError::TrailingBytes(
            input.len().saturating_sub(used),
        ));
    }
    Ok(out)
}

/// The voxel count a blob declares, read from its header only.
pub fn peek_voxel_count(bytes: &[u8]) -> Result<u64, VoxelBlobError> {
    let mut r = Reader::new(bytes);
    let format = r.u8().map_err(|_| VoxelBlobError::Empty)?;
    if format != VOXEL_BLOB_V1 {
        return Err(VoxelBlobError::UnknownFormat(format));
    }
    Ok(r.varint()?)
}

/// Decodes a blob with [`DecodeLimits::default`]. `id_of(name)` maps a voxel
/// name to the current registry's type id (called once per distinct name);
/// an unknown name gets `placeholder` and is listed in
/// [`DecodedVoxels::unknown_names`].
pub fn decode_voxels<F>(
    bytes: &[u8],
    id_of: F,
    placeholder: u32,
) -> Result<DecodedVoxels, VoxelBlobError>
where
    F: FnMut(&str) -> Option<u32>,
{
    decode_voxels_with_limits(bytes, id_of, placeholder, &DecodeLimits::default())
}

/// [`decode_voxels`] with explicit limits.
pub fn decode_voxels_with_limits<F>(
    bytes: &[u8],
    mut id_of: F,
    placeholder: u32,
    limits: &DecodeLimits,
) -> Result<DecodedVoxels, VoxelBlobError>
where
    F: FnMut(&str) -> Option<u32>,
{
    if placeholder > TYPE_ID_MASK {
        return Err(VoxelBlobError::PlaceholderOutOfRange(placeholder));
    }
    let max_voxels = limits.max_voxels.min(MAX_VOXELS);
    let max_body = limits.max_body_bytes.min(MAX_BODY_BYTES);
    let mut r = Reader::new(bytes);
    let format = r.u8().map_err(|_| VoxelBlobError::Empty)?;
    if format != VOXEL_BLOB_V1 {
        return Err(VoxelBlobError::UnknownFormat(format));
    }
    let count = r.varint()?;
    if count > max_voxels as u64 {
        return Err(VoxelBlobError::TooManyVoxels {
            count,
            max: max_voxels,
        });
    }
    let count = count as usize;
    let body_len = r.varint()?;
    if body_len > max_body as u64 {
        return Err(VoxelBlobError::BodyTooLarge {
            len: body_len,
            max: max_body,
        });
    }
    let compressed = r.rest();
    // Deflate cannot expand more than 1032:1; refuse to allocate for a
    // declared length the stream cannot possibly produce.
    let possible = (compressed.len() as u64).saturating_mul(1032);
    if body_len > possible {
        return Err(VoxelBlobError::BodyImplausible {
            len: body_len,
            compressed: compressed.len(),
        });
    }
    let body = inflate_exact(compressed, body_len as usize)?;

    let mut r = Reader::new(&body);
    let names = StringTable::read(&mut r)?;
    let pal_len = r.varint()?;
    if pal_len > count as u64 || (count > 0 && pal_len == 0) {
        return Err(VoxelBlobError::BadPaletteLen {
            len: pal_len,
            count,
        });
    }
    let pal_len = pal_len as usize;
    let mut mapped: Vec<Option<u32>> = vec![None; names.len()];
    let mut unknown_names = Vec::new();
    let mut palette = Vec::with_capacity(pal_len.min(r.remaining()));
    for entry in 0..pal_len {
        let index = r.varint()?;
        let high = r.varint()?;
        let Some(name) = names.get(index) else {
            return Err(VoxelBlobError::BadStringIndex {
                entry,
                index,
                len: names.len(),
            });
        };
        if high > u64::from(MAX_HIGH_BITS) {
            return Err(VoxelBlobError::HighBitsOutOfRange { entry, value: high });
        }
        let slot = mapped.get_mut(index as usize);
        let id = match slot {
            Some(Some(id)) => *id,
            Some(slot) => {
                let id = match id_of(name) {
                    Some(id) if id > TYPE_ID_MASK => {
                        return Err(VoxelBlobError::TypeIdOutOfRange {
                            name: name.to_owned(),
                            id,
                        });
                    }
                    Some(id) => id,
                    None => {
                        unknown_names.push(name.to_owned());
                        placeholder
                    }
                };
                *slot = Some(id);
                id
            }
            None => placeholder,
        };
        palette.push(id | ((high as u32) << TYPE_ID_BITS));
    }

    let bits = index_bits(pal_len);
    let index_mask = (1u64 << bits) - 1;
    let mut voxels: Vec<u32> = Vec::with_capacity(count);
    while voxels.len() < count {
        let at = voxels.len();
        let v = r.varint()?;
        let index = v & index_mask;
        // run_length - 1 is stored; compare before adding (v may be u64::MAX).
        let run_minus_1 = v >> bits;
        let Some(&value) = palette.get(index as usize) else {
            return Err(VoxelBlobError::BadPaletteIndex {
                at,
                index,
                len: pal_len,
            });
        };
        let left = (count - at) as u64;
        if run_minus_1 >= left {
            return Err(VoxelBlobError::RunOverflow {
                at,
                run: run_minus_1.saturating_add(1),
                count,
            });
        }
        voxels.resize(at + run_minus_1 as usize + 1, value);
    }
    if !r.is_at_end() {
        return Err(VoxelBlobError::TrailingBody(r.remaining()));
    }
    Ok(DecodedVoxels {
        voxels,
        unknown_names,
    })
}
