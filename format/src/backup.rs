//! The world backup: one file in the blob container (§6 of docs/formats.md)
//! whose metadata is an index of sections and whose payloads are section
//! records (§5), so a reader finds one section (or a region) from the index
//! and decodes only its bytes.
//!
//! Owns: the [`WorldBackup`] metadata kind (magic `BWBK`, validity token 2;
//! token 1, before modules' values, is still read), [`BackupSection`] (one
//! index entry), [`BackupValue`] (a module's value: its bytes are a payload
//! too), [`backup_head`] (blob 0's header and
//! metadata, written in front of payloads laid out earlier) and
//! [`decode_backup_head`] / [`check_backup_payload`] (reading the index from
//! the head alone and checking an entry against the payload bytes there are).
//!
//! Also [`BackupReader`]: the index and one section's record read through
//! a `Read + Seek` the caller opened, every length checked against the
//! bytes there are (the world module's restore and the server's `inspect`
//! read alike).
//!
//! Does not own: what a section's nodes mean (the world module maps its
//! stored nodes to section records), where sections come from, or opening
//! and writing files.

use std::io::{Read, Seek, SeekFrom};

use serde::{Deserialize, Serialize};

use crate::container::{ContainerError, ContainerKind, HEADER_LEN, PayloadRef, read_header};

/// One section in a backup.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackupSection {
    /// Section coordinates.
    pub pos: [i32; 3],
    /// Saved by the world (not a scratch section).
    pub save_enabled: bool,
    /// Its terrain was generated.
    pub generated: bool,
    /// How many nodes its record holds.
    pub nodes: u32,
    /// Its section record (§5).
    pub payload: PayloadRef,
}

/// One module's value in a backup (the world's `module_value` rows: a
/// game's accounts and bans); its bytes are the payload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackupValue {
    pub space: String,
    pub key: String,
    pub payload: PayloadRef,
}

/// Metadata of a world backup.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct WorldBackup {
    /// Chunks per section edge, as the world stores them.
    pub section_size: [i32; 3],
    /// Voxels per chunk edge.
    pub chunk_size: [u32; 3],
    /// The first node id the world would hand out next (a restored world
    /// never reuses an id the original handed out).
    pub next_node_id: u64,
    /// The world's settings file (`world.toml`) as it was.
    pub settings: String,
    /// Where the world was stored (a path or a URL without its password).
    pub source: String,
    /// When the snapshot was taken, seconds since the Unix epoch.
    pub taken_unix_s: u64,
    /// Every section, in the order their payloads follow.
    pub sections: Vec<BackupSection>,
    /// Every module's value, by space and key; their payloads follow the
    /// sections'.
    pub values: Vec<BackupValue>,
}

impl ContainerKind for WorldBackup {
    const MAGIC: [u8; 4] = *b"BWBK";
    const VALIDITY_TOKEN: u32 = 2;
}

/// The first backup layout (validity token 1: no modules' values), read
/// as a [`WorldBackup`] with none; never written.
#[derive(Debug, Serialize, Deserialize)]
struct WorldBackupV1 {
    section_size: [i32; 3],
    chunk_size: [u32; 3],
    next_node_id: u64,
    settings: String,
    source: String,
    taken_unix_s: u64,
    sections: Vec<BackupSection>,
}

impl ContainerKind for WorldBackupV1 {
    const MAGIC: [u8; 4] = *b"BWBK";
    const VALIDITY_TOKEN: u32 = 1;
}

impl From<WorldBackupV1> for WorldBackup {
    fn from(v1: WorldBackupV1) -> Self {
        Self {
            section_size: v1.section_size,
            chunk_size: v1.chunk_size,
            next_node_id: v1.next_node_id,
            settings: v1.settings,
            source: v1.source,
            taken_unix_s: v1.taken_unix_s,
            sections: v1.sections,
            values: Vec::new(),
        }
    }
}

/// Whether a header is a backup's of the first layout (checks the magic,
/// and that the token is one this code reads).
fn is_first_layout(header: &crate::container::ContainerHeader) -> Result<bool, ContainerError> {
    if header.validity_token == WorldBackupV1::VALIDITY_TOKEN {
        crate::container::check_kind::<WorldBackupV1>(header)?;
        return Ok(true);
    }
    crate::container::check_kind::<WorldBackup>(header)?;
    Ok(false)
}

/// Blob 0's header and metadata: a backup file is these bytes followed by
/// the payload section the index addresses (all in blob 0).
pub fn backup_head(meta: &WorldBackup) -> Result<Vec<u8>, ContainerError> {
    crate::container::primary_head(meta)
}

/// How many bytes the head (header and metadata) takes, from the file's
/// first [`HEADER_LEN`] bytes; checks the magic and validity token.
pub fn backup_head_len(first: &[u8]) -> Result<u64, ContainerError> {
    let header = read_header(first)?;
    is_first_layout(&header)?;
    if header.meta_len > crate::container::MAX_META_LEN as u64 {
        return Err(ContainerError::MetaTooLarge {
            len: header.meta_len,
        });
    }
    Ok(HEADER_LEN as u64 + header.meta_len)
}

/// The index, from the head's bytes (as many as [`backup_head_len`] said;
/// more are ignored).
pub fn decode_backup_head(head: &[u8]) -> Result<WorldBackup, ContainerError> {
    if is_first_layout(&read_header(head)?)? {
        let (meta, _payloads) = crate::container::decode_primary::<WorldBackupV1>(head)?;
        return Ok(meta.into());
    }
    let (meta, _payloads) = crate::container::decode_primary::<WorldBackup>(head)?;
    Ok(meta)
}

/// Checks that `section`'s payload lies within a payload section of
/// `payload_len` bytes in blob 0; returns its offset from that section's
/// start.
pub fn check_backup_payload(
    section: &BackupSection,
    payload_len: u64,
) -> Result<u64, ContainerError> {
    check_payload_ref(&section.payload, payload_len)
}

/// Checks that a payload (a section's record or a value's bytes) lies
/// within a payload section of `payload_len` bytes in blob 0; returns its
/// offset from that section's start.
pub fn check_payload_ref(r: &PayloadRef, payload_len: u64) -> Result<u64, ContainerError> {
    if r.blob != 0 {
        return Err(ContainerError::MissingBlob {
            blob: r.blob,
            count: 1,
        });
    }
    match r.offset.checked_add(r.len) {
        Some(end) if end <= payload_len => Ok(r.offset),
        _ => Err(ContainerError::PayloadOutOfBounds {
            blob: r.blob,
            offset: r.offset,
            len: r.len,
            section_len: usize::try_from(payload_len).unwrap_or(usize::MAX),
        }),
    }
}

/// Errors reading a backup through [`BackupReader`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BackupReadError {
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Container(#[from] ContainerError),
}

/// A backup's index, read from its head alone, and its section records
/// read one at a time by their index entries.
#[derive(Debug)]
pub struct BackupReader<R> {
    source: R,
    meta: WorldBackup,
    payload_start: u64,
    payload_len: u64,
}

impl<R: Read + Seek> BackupReader<R> {
    /// Reads and checks the head (magic, token, metadata within the file).
    pub fn open(mut source: R) -> Result<Self, BackupReadError> {
        let size = source.seek(SeekFrom::End(0))?;
        source.seek(SeekFrom::Start(0))?;
        let mut first = Vec::with_capacity(HEADER_LEN);
        (&mut source)
            .take(HEADER_LEN as u64)
            .read_to_end(&mut first)?;
        let head_len = backup_head_len(&first)?;
        if head_len > size {
            return Err(ContainerError::MetaTruncated {
                meta_len: head_len - HEADER_LEN as u64,
                available: usize::try_from(size.saturating_sub(HEADER_LEN as u64))
                    .unwrap_or(usize::MAX),
            }
            .into());
        }
        // At most the format's metadata limit past the header (checked).
        let mut head = Vec::new();
        source.seek(SeekFrom::Start(0))?;
        (&mut source).take(head_len).read_to_end(&mut head)?;
        let meta = decode_backup_head(&head)?;
        Ok(Self {
            source,
            meta,
            payload_start: head_len,
            payload_len: size - head_len,
        })
    }

    pub fn meta(&self) -> &WorldBackup {
        &self.meta
    }

    /// The bytes of section records the file holds after its head.
    pub fn payload_len(&self) -> u64 {
        self.payload_len
    }

    /// The section record `entry` addresses, checked against the file
    /// (so never bigger than what is there).
    pub fn record(&mut self, entry: &BackupSection) -> Result<Vec<u8>, BackupReadError> {
        self.read_payload(&entry.payload)
    }

    /// The bytes `r` addresses (a section's record, a value), checked
    /// against the file.
    pub fn read_payload(&mut self, r: &PayloadRef) -> Result<Vec<u8>, BackupReadError> {
        let offset = check_payload_ref(r, self.payload_len)?;
        self.source
            .seek(SeekFrom::Start(self.payload_start + offset))?;
        let mut bytes = Vec::new();
        (&mut self.source).take(r.len).read_to_end(&mut bytes)?;
        if bytes.len() as u64 != r.len {
            return Err(std::io::Error::from(std::io::ErrorKind::UnexpectedEof).into());
        }
        Ok(bytes)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn sample() -> WorldBackup {
        WorldBackup {
            section_size: [2, 2, 2],
            chunk_size: [32, 32, 32],
            next_node_id: 77,
            settings: "[world]\nseed = 1\n".into(),
            source: "world.sqlite".into(),
            taken_unix_s: 1_800_000_000,
            sections: vec![BackupSection {
                pos: [1, -2, 3],
                save_enabled: true,
                generated: true,
                nodes: 2,
                payload: PayloadRef {
                    blob: 0,
                    offset: 0,
                    len: 5,
                },
            }],
            values: vec![BackupValue {
                space: "main.accounts".into(),
                key: "ann".into(),
                payload: PayloadRef {
                    blob: 0,
                    offset: 5,
                    len: 0,
                },
            }],
        }
    }

    #[test]
    fn a_first_layout_head_reads_with_no_values() {
        let meta = sample();
        let v1 = WorldBackupV1 {
            section_size: meta.section_size,
            chunk_size: meta.chunk_size,
            next_node_id: meta.next_node_id,
            settings: meta.settings.clone(),
            source: meta.source.clone(),
            taken_unix_s: meta.taken_unix_s,
            sections: meta.sections.clone(),
        };
        let file = crate::container::primary_head(&v1).unwrap();
        assert_eq!(&file[4..8], &1u32.to_le_bytes());
        assert_eq!(backup_head_len(&file).unwrap(), file.len() as u64);
        let read = decode_backup_head(&file).unwrap();
        assert_eq!(read.sections, meta.sections);
        assert!(read.values.is_empty());
        // A token neither layout has is refused, naming the current one.
        let mut unknown = file.clone();
        unknown[4] = 3;
        assert_eq!(
            decode_backup_head(&unknown).unwrap_err(),
            ContainerError::ValidityToken {
                expected: 2,
                found: 3
            }
        );
    }

    #[test]
    fn a_head_decodes_to_its_index() {
        let meta = sample();
        let mut file = backup_head(&meta).unwrap();
        let head_len = backup_head_len(&file).unwrap();
        assert_eq!(head_len, file.len() as u64);
        file.extend_from_slice(b"abcde");
        assert_eq!(decode_backup_head(&file).unwrap(), meta);
        assert_eq!(check_backup_payload(&meta.sections[0], 5), Ok(0));
        assert!(check_backup_payload(&meta.sections[0], 4).is_err());
    }

    #[test]
    fn every_truncation_of_a_head_is_an_error() {
        let file = backup_head(&sample()).unwrap();
        for cut in 0..file.len() {
            let prefix = &file[..cut];
            assert!(
                backup_head_len(prefix).is_err() || decode_backup_head(prefix).is_err(),
                "a head cut at {cut} decoded"
            );
        }
    }

    #[test]
    fn a_reader_finds_each_record_and_refuses_a_cut_file() {
        let mut meta = sample();
        meta.sections[0].payload.len = 5;
        let mut file = backup_head(&meta).unwrap();
        file.extend_from_slice(b"abcde");
        let mut reader = BackupReader::open(std::io::Cursor::new(file.clone())).unwrap();
        assert_eq!(reader.meta(), &meta);
        assert_eq!(reader.payload_len(), 5);
        assert_eq!(reader.record(&meta.sections[0]).unwrap(), b"abcde");
        for cut in 0..file.len() {
            let opened = BackupReader::open(std::io::Cursor::new(file[..cut].to_vec()));
            let outcome = opened.and_then(|mut r| r.record(&meta.sections[0]));
            assert!(outcome.is_err(), "a file cut at {cut} read");
        }
    }

    #[test]
    fn another_kind_is_refused() {
        let mut file = backup_head(&sample()).unwrap();
        file[0] = b'X';
        assert!(matches!(
            backup_head_len(&file),
            Err(ContainerError::WrongMagic { .. })
        ));
    }

    #[test]
    fn a_payload_past_the_end_or_in_another_blob_is_refused() {
        let mut section = sample().sections.remove(0);
        section.payload.offset = u64::MAX;
        assert!(check_backup_payload(&section, 10).is_err());
        section.payload.offset = 0;
        section.payload.blob = 1;
        assert!(check_backup_payload(&section, 10).is_err());
    }
}
