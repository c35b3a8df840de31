//! The two container kinds the client needs: a [`FileBundle`] (many small named
//! files sent together on first connect) and a [`FileCache`] segment (files
//! kept by content hash). Each has its own magic, so one is never read as the
//! other.
//!
//! Owns: the two metadata schemas, their magics and validity tokens, and the
//! convenience encoders/lookups on top of [`crate::container`].
//!
//! Does not own: hashing (the caller computes each file's content hash and
//! passes it in; nothing here verifies it), the container layout, or I/O.

use serde::{Deserialize, Serialize};

use crate::container::{Container, ContainerError, ContainerKind, PayloadPacker, PayloadRef};

/// A content hash (SHA-256 by convention; opaque here).
pub type ContentHash = [u8; 32];

/// One named file in a bundle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BundleEntry {
    /// Registered file name, e.g. `"voxelworld/init.lua"`.
    pub name: String,
    /// Content hash of the file's bytes.
    pub hash: ContentHash,
    /// Where the bytes are.
    pub payload: PayloadRef,
}

/// Metadata of a file bundle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct FileBundle {
    pub entries: Vec<BundleEntry>,
}

impl ContainerKind for FileBundle {
    const MAGIC: [u8; 4] = *b"BFBN";
    const VALIDITY_TOKEN: u32 = 1;
}

/// One file of a cache segment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheEntry {
    /// Content hash of the bytes (the cache key).
    pub hash: ContentHash,
    /// Where the bytes are.
    pub payload: PayloadRef,
}

/// Metadata of a file cache segment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct FileCache {
    pub entries: Vec<CacheEntry>,
}

impl ContainerKind for FileCache {
    const MAGIC: [u8; 4] = *b"BFCS";
    const VALIDITY_TOKEN: u32 = 1;
}

/// Encodes named files (name, content hash, bytes) as a bundle whose blobs'
/// payload sections stay within `ceiling` bytes (one file larger than that
/// gets a blob of its own).
pub fn encode_bundle<'f, I>(files: I, ceiling: usize) -> Result<Vec<Vec<u8>>, ContainerError>
where
    I: IntoIterator<Item = (&'f str, ContentHash, &'f [u8])>,
{
    let mut packer = PayloadPacker::new(ceiling);
    let mut meta = FileBundle::default();
    for (name, hash, bytes) in files {
        let payload = packer.add(bytes)?;
        meta.entries.push(BundleEntry {
            name: name.to_owned(),
            hash,
            payload,
        });
    }
    packer.finish(&meta)
}

/// Encodes files by content hash as a cache segment.
pub fn encode_cache<'f, I>(files: I, ceiling: usize) -> Result<Vec<Vec<u8>>, ContainerError>
where
    I: IntoIterator<Item = (ContentHash, &'f [u8])>,
{
    let mut packer = PayloadPacker::new(ceiling);
    let mut meta = FileCache::default();
    for (hash, bytes) in files {
        let payload = packer.add(bytes)?;
        meta.entries.push(CacheEntry { hash, payload });
    }
    packer.finish(&meta)
}

impl<'a> Container<'a, FileBundle> {
    /// The entry and bytes of the file called `name`.
    pub fn file(&self, name: &str) -> Result<Option<(&BundleEntry, &'a [u8])>, ContainerError> {
        match self.meta().entries.iter().find(|e| e.name == name) {
            Some(e) => Ok(Some((e, self.payload(&e.payload)?))),
            None => Ok(None),
        }
    }
}

impl<'a> Container<'a, FileCache> {
    /// The bytes stored under `hash`.
    pub fn by_hash(&self, hash: &ContentHash) -> Result<Option<&'a [u8]>, ContainerError> {
        match self.meta().entries.iter().find(|e| &e.hash == hash) {
            Some(e) => Ok(Some(self.payload(&e.payload)?)),
            None => Ok(None),
        }
    }
}
