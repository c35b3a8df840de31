//! The blob container: a fixed 16-byte header `[magic 4][validity token 4]
//! [meta_len u64 LE]`, `meta_len` bytes of bincode metadata, then a payload
//! section whose byte ranges the metadata addresses as (blob index, offset,
//! length). Payloads past a size ceiling overflow into further blobs, each
//! with the same header and no metadata.
//!
//! Owns: the header, the [`ContainerKind`] trait that binds a magic and a
//! validity token to a metadata type (so a file of one kind can never be
//! parsed as another), the bincode configuration ([`bincode_config`]: bincode
//! 2 `config::standard()` — little-endian, variable-length integers — with a
//! decode limit of [`MAX_META_LEN`]), [`PayloadPacker`] (payload placement and
//! overflow), encoding, and parsing of caller-supplied blob bytes.
//!
//! Does not own: I/O or residency — the caller reads and writes blob files and
//! hands over byte slices, so the client and the server each use their own
//! byte source — nor any particular metadata schema (see [`crate::bundle`]).

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// Header size: magic (4) + validity token (4) + `meta_len` (8).
pub const HEADER_LEN: usize = 16;
/// Largest metadata accepted and written.
pub const MAX_META_LEN: usize = 16 << 20;

/// The bincode configuration of container metadata: `standard()` (little
/// endian, varint integers) with a decode limit of [`MAX_META_LEN`] bytes.
pub const fn bincode_config() -> bincode::config::Configuration<
    bincode::config::LittleEndian,
    bincode::config::Varint,
    bincode::config::Limit<MAX_META_LEN>,
> {
    bincode::config::standard().with_limit::<MAX_META_LEN>()
}

/// A metadata type, bound to the magic and validity token its files carry.
pub trait ContainerKind: Serialize + DeserializeOwned {
    /// The four bytes every blob of this kind starts with; unique per kind.
    const MAGIC: [u8; 4];
    /// The value a writer stamps and a reader must match exactly; its meaning
    /// is the kind's (typically the metadata layout version).
    const VALIDITY_TOKEN: u32;
}

/// Where a payload lives: blob `blob`, `len` bytes from `offset`, offsets
/// counted from the start of that blob's payload section.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub struct PayloadRef {
    pub blob: u32,
    pub offset: u64,
    pub len: u64,
}

/// A parsed header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContainerHeader {
    pub magic: [u8; 4],
    pub validity_token: u32,
    pub meta_len: u64,
}

/// Errors encoding or parsing a container.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ContainerError {
    /// Shorter than the 16-byte header.
    #[error("{len} bytes is shorter than the {HEADER_LEN}-byte container header")]
    Truncated { len: usize },
    /// Another kind's (or no) magic.
    #[error("magic {found:02x?} is not {expected:02x?}")]
    WrongMagic { expected: [u8; 4], found: [u8; 4] },
    /// The right kind with another validity token: regenerate it.
    #[error("validity token {found:#x} is not the expected {expected:#x}")]
    ValidityToken { expected: u32, found: u32 },
    /// `meta_len` over [`MAX_META_LEN`].
    #[error("metadata of {len} bytes exceeds the limit of {MAX_META_LEN}")]
    MetaTooLarge { len: u64 },
    /// `meta_len` past the end of blob 0.
    #[error("metadata of {meta_len} bytes but only {available} follow the header")]
    MetaTruncated { meta_len: u64, available: usize },
    /// bincode could not decode the metadata.
    #[error("metadata: {0}")]
    Meta(String),
    /// The metadata decoded from fewer bytes than `meta_len`.
    #[error("metadata decoded from {used} of its {meta_len} bytes")]
    MetaTrailing { meta_len: u64, used: usize },
    /// bincode could not encode the metadata.
    #[error("encoding metadata: {0}")]
    Encode(String),
    /// An overflow blob (index ≥ 1) with metadata.
    #[error("overflow blob {blob} declares {meta_len} bytes of metadata")]
    OverflowHasMeta { blob: usize, meta_len: u64 },
    /// No blobs were given.
    #[error("no blobs given")]
    NoBlobs,
    /// A payload in a blob that was not given.
    #[error("payload in blob {blob}, only {count} blobs given")]
    MissingBlob { blob: u32, count: usize },
    /// A payload range outside its blob's payload section.
    #[error("payload {offset}+{len} outside blob {blob}'s {section_len}-byte payload section")]
    PayloadOutOfBounds {
        blob: u32,
        offset: u64,
        len: u64,
        section_len: usize,
    },
    /// More than `u32::MAX` blobs.
    #[error("too many blobs")]
    TooManyBlobs,
}

/// Reads the 16-byte header without judging it.
pub fn read_header(bytes: &[u8]) -> Result<ContainerHeader, ContainerError> {
    let Some(h) = bytes.first_chunk::<HEADER_LEN>() else {
        return Err(ContainerError::Truncated { len: bytes.len() });
    };
    let (magic, rest) = h.split_at(4);
    let (token, len) = rest.split_at(4);
    let mut m = [0u8; 4];
    m.copy_from_slice(magic);
    let mut t = [0u8; 4];
    t.copy_from_slice(token);
    let mut l = [0u8; 8];
    l.copy_from_slice(len);
    Ok(ContainerHeader {
        magic: m,
        validity_token: u32::from_le_bytes(t),
        meta_len: u64::from_le_bytes(l),
    })
}

fn checked_header<M: ContainerKind>(bytes: &[u8]) -> Result<ContainerHeader, ContainerError> {
    let h = read_header(bytes)?;
    if h.magic != M::MAGIC {
        return Err(ContainerError::WrongMagic {
            expected: M::MAGIC,
            found: h.magic,
        });
    }
    if h.validity_token != M::VALIDITY_TOKEN {
        return Err(ContainerError::ValidityToken {
            expected: M::VALIDITY_TOKEN,
            found: h.validity_token,
        });
    }
    Ok(h)
}

fn header_bytes<M: ContainerKind>(meta_len: u64) -> [u8; HEADER_LEN] {
    let mut h = [0u8; HEADER_LEN];
    let (magic, rest) = h.split_at_mut(4);
    let (token, len) = rest.split_at_mut(4);
    magic.copy_from_slice(&M::MAGIC);
    token.copy_from_slice(&M::VALIDITY_TOKEN.to_le_bytes());
    len.copy_from_slice(&meta_len.to_le_bytes());
    h
}

/// Decodes blob 0: its metadata and its payload section.
pub fn decode_primary<M: ContainerKind>(blob0: &[u8]) -> Result<(M, &[u8]), ContainerError> {
    let h = checked_header::<M>(blob0)?;
    if h.meta_len > MAX_META_LEN as u64 {
        return Err(ContainerError::MetaTooLarge { len: h.meta_len });
    }
    let after = blob0.get(HEADER_LEN..).unwrap_or(&[]);
    let meta_len = h.meta_len as usize;
    let (Some(meta_bytes), Some(section)) = (after.get(..meta_len), after.get(meta_len..)) else {
        return Err(ContainerError::MetaTruncated {
            meta_len: h.meta_len,
            available: after.len(),
        });
    };
    let (meta, used): (M, usize) = bincode::serde::decode_from_slice(meta_bytes, bincode_config())
        .map_err(|e| ContainerError::Meta(e.to_string()))?;
    if used != meta_len {
        return Err(ContainerError::MetaTrailing {
            meta_len: h.meta_len,
            used,
        });
    }
    Ok((meta, section))
}

/// The payload section of overflow blob `index` (≥ 1), which must carry the
/// kind's header and no metadata.
pub fn overflow_section<M: ContainerKind>(
    blob: &[u8],
    index: usize,
) -> Result<&[u8], ContainerError> {
    let h = checked_header::<M>(blob)?;
    if h.meta_len != 0 {
        return Err(ContainerError::OverflowHasMeta {
            blob: index,
            meta_len: h.meta_len,
        });
    }
    Ok(blob.get(HEADER_LEN..).unwrap_or(&[]))
}

/// The bytes `r` addresses inside `section` (the payload section of blob
/// `r.blob`).
pub fn payload_in<'a>(section: &'a [u8], r: &PayloadRef) -> Result<&'a [u8], ContainerError> {
    let oob = || ContainerError::PayloadOutOfBounds {
        blob: r.blob,
        offset: r.offset,
        len: r.len,
        section_len: section.len(),
    };
    let start = usize::try_from(r.offset).map_err(|_| oob())?;
    let len = usize::try_from(r.len).map_err(|_| oob())?;
    let end = start.checked_add(len).ok_or_else(oob)?;
    section.get(start..end).ok_or_else(oob)
}

/// A parsed container: metadata plus the payload section of every blob.
#[derive(Debug, Clone)]
pub struct Container<'a, M> {
    meta: M,
    sections: Vec<&'a [u8]>,
}

impl<'a, M: ContainerKind> Container<'a, M> {
    /// Parses every blob (blob 0 first). Each must carry `M`'s magic and
    /// validity token; only blob 0 may carry metadata.
    pub fn open<B: AsRef<[u8]>>(blobs: &'a [B]) -> Result<Self, ContainerError> {
        let mut it = blobs.iter();
        let first = it.next().ok_or(ContainerError::NoBlobs)?;
        let (meta, s0) = decode_primary::<M>(first.as_ref())?;
        let mut sections = Vec::with_capacity(blobs.len());
        sections.push(s0);
        for (i, b) in it.enumerate() {
            sections.push(overflow_section::<M>(b.as_ref(), i + 1)?);
        }
        Ok(Self { meta, sections })
    }

    /// The metadata.
    pub fn meta(&self) -> &M {
        &self.meta
    }

    /// The metadata, by value.
    pub fn into_meta(self) -> M {
        self.meta
    }

    /// Number of blobs.
    pub fn blob_count(&self) -> usize {
        self.sections.len()
    }

    /// The bytes `r` addresses.
    pub fn payload(&self, r: &PayloadRef) -> Result<&'a [u8], ContainerError> {
        let section = self
            .sections
            .get(r.blob as usize)
            .ok_or(ContainerError::MissingBlob {
                blob: r.blob,
                count: self.sections.len(),
            })?;
        payload_in(section, r)
    }
}

/// Places payloads into blobs: each goes to the current blob unless that would
/// take a non-empty blob's payload section past the ceiling, in which case a
/// new blob is started (a payload larger than the ceiling gets a blob of its
/// own).
#[derive(Debug, Clone)]
pub struct PayloadPacker {
    ceiling: usize,
    blobs: Vec<Vec<u8>>,
}

impl PayloadPacker {
    /// A packer whose blobs' payload sections stay within `ceiling` bytes.
    pub fn new(ceiling: usize) -> Self {
        Self {
            ceiling,
            blobs: vec![Vec::new()],
        }
    }

    /// Adds a payload and returns its address.
    pub fn add(&mut self, bytes: &[u8]) -> Result<PayloadRef, ContainerError> {
        let cur_len = self.blobs.last().map_or(0, Vec::len);
        if cur_len > 0 && cur_len.saturating_add(bytes.len()) > self.ceiling {
            if self.blobs.len() > u32::MAX as usize {
                return Err(ContainerError::TooManyBlobs);
            }
            self.blobs.push(Vec::new());
        }
        let blob = u32::try_from(self.blobs.len() - 1).map_err(|_| ContainerError::TooManyBlobs)?;
        let Some(cur) = self.blobs.last_mut() else {
            return Err(ContainerError::NoBlobs);
        };
        let offset = cur.len() as u64;
        cur.extend_from_slice(bytes);
        Ok(PayloadRef {
            blob,
            offset,
            len: bytes.len() as u64,
        })
    }

    /// Number of blobs so far.
    pub fn blob_count(&self) -> usize {
        self.blobs.len()
    }

    /// Encodes the blobs: blob 0 with `meta`, the rest header-only.
    pub fn finish<M: ContainerKind>(self, meta: &M) -> Result<Vec<Vec<u8>>, ContainerError> {
        let meta_bytes = bincode::serde::encode_to_vec(meta, bincode_config())
            .map_err(|e| ContainerError::Encode(e.to_string()))?;
        if meta_bytes.len() > MAX_META_LEN {
            return Err(ContainerError::MetaTooLarge {
                len: meta_bytes.len() as u64,
            });
        }
        let mut out = Vec::with_capacity(self.blobs.len());
        for (i, payload) in self.blobs.into_iter().enumerate() {
            let meta_part: &[u8] = if i == 0 { &meta_bytes } else { &[] };
            let mut blob = Vec::with_capacity(HEADER_LEN + meta_part.len() + payload.len());
            blob.extend_from_slice(&header_bytes::<M>(meta_part.len() as u64));
            blob.extend_from_slice(meta_part);
            blob.extend_from_slice(&payload);
            out.push(blob);
        }
        Ok(out)
    }
}
