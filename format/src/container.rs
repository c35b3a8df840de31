//! The blob container: one blob holding a fixed 16-byte header `[magic 4]
//! [validity token 4][meta_len u64 LE]`, `meta_len` bytes of bincode
//! metadata, then a payload section whose byte ranges the metadata addresses
//! as [`PayloadRef`]s (offset and length from the section's start; `blob`
//! must be 0).
//!
//! Owns: the header, the [`ContainerKind`] trait that binds a magic and a
//! validity token to a metadata type (so a file of one kind can never be
//! parsed as another), the bincode configuration ([`bincode_config`]: bincode
//! 2 `config::standard()` — little-endian, variable-length integers — with a
//! decode limit of [`MAX_META_LEN`]), encoding the head ([`primary_head`]:
//! header and metadata, which the writer follows with the payload section it
//! lays out itself), and parsing caller-supplied bytes ([`read_header`],
//! [`check_kind`], [`decode_primary`]).
//!
//! Does not own: I/O or residency — the caller reads and writes the file and
//! hands over byte slices — nor any particular metadata schema or payload
//! check (the one kind is [`crate::backup::WorldBackup`]).

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

/// Where a payload lives: `len` bytes from `offset`, counted from the start
/// of the payload section. `blob` is kept in the encoding and must be 0 (a
/// container is one blob); a reader refuses any other value.
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
#[non_exhaustive]
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
    /// `meta_len` past the end of the bytes given.
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
    /// A payload in a blob other than 0 (a container is one blob, so
    /// `count` is 1).
    #[error("payload in blob {blob}, only {count} blobs given")]
    MissingBlob { blob: u32, count: usize },
    /// A payload range outside the payload section.
    #[error("payload {offset}+{len} outside blob {blob}'s {section_len}-byte payload section")]
    PayloadOutOfBounds {
        blob: u32,
        offset: u64,
        len: u64,
        section_len: usize,
    },
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
    check_kind::<M>(&h)?;
    Ok(h)
}

/// Checks that `h` carries `M`'s magic and validity token.
pub fn check_kind<M: ContainerKind>(h: &ContainerHeader) -> Result<(), ContainerError> {
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
    Ok(())
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

/// The container's head (header and metadata), for a writer that lays out
/// the payload section itself (streaming it to a file after these bytes).
pub fn primary_head<M: ContainerKind>(meta: &M) -> Result<Vec<u8>, ContainerError> {
    let meta_bytes = encode_meta(meta)?;
    let mut head = Vec::with_capacity(HEADER_LEN + meta_bytes.len());
    head.extend_from_slice(&header_bytes::<M>(meta_bytes.len() as u64));
    head.extend_from_slice(&meta_bytes);
    Ok(head)
}

fn encode_meta<M: ContainerKind>(meta: &M) -> Result<Vec<u8>, ContainerError> {
    let meta_bytes = bincode::serde::encode_to_vec(meta, bincode_config())
        .map_err(|e| ContainerError::Encode(e.to_string()))?;
    if meta_bytes.len() > MAX_META_LEN {
        return Err(ContainerError::MetaTooLarge {
            len: meta_bytes.len() as u64,
        });
    }
    Ok(meta_bytes)
}

/// Decodes a container: its metadata and its payload section (everything
/// after the metadata).
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
