//! The world backup: one file in the blob container (§6 of docs/formats.md)
//! whose metadata is an index of sections and whose payloads are section
//! records (§5), so a reader finds one section (or a region) from the index
//! and decodes only its bytes.
//!
//! Owns: the [`WorldBackup`] metadata kind (magic `BWBK`, validity token 3;
//! token 1, before modules' values, and 2, before the rollback log, are
//! still read), [`BackupLogRun`] and its payload, a log record of
//! rollback-log blocks ([`encode_log_record`], [`decode_log_record`]:
//! every length checked), [`BackupSection`] (one
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
    /// The rollback log's blocks, in runs; their payloads (log records)
    /// follow the values'.
    pub log: Vec<BackupLogRun>,
}

impl ContainerKind for WorldBackup {
    const MAGIC: [u8; 4] = *b"BWBK";
    const VALIDITY_TOKEN: u32 = 3;
}

/// A run of the rollback log's blocks in a backup: its payload is a log
/// record ([`encode_log_record`]) of `blocks` blocks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackupLogRun {
    pub blocks: u32,
    pub payload: PayloadRef,
}

/// One block of the rollback log (the world's `rollback_block` row): its
/// area, the span of time it covers (ms since the Unix epoch) and its
/// packed bytes (`crate::rollback_blob`), carried as they are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogRecordBlock {
    pub t0: i64,
    pub t1: i64,
    pub area: [i32; 3],
    pub data: Vec<u8>,
}

/// Why a log record does not decode.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LogRecordError {
    #[error("log record: {0}")]
    Read(#[from] crate::reader::ReadError),
    #[error("log record: {found} bytes after its {blocks} blocks")]
    Trailing { blocks: u32, found: usize },
}

/// The fewest bytes a block takes in a log record (five one-byte
/// varints and an empty blob's length).
const MIN_LOG_BLOCK_BYTES: usize = 6;

/// A log record: per block t0, t1, the area's x, y and z (zig-zag
/// varints), then the blob (varint length, bytes).
pub fn encode_log_record(blocks: &[LogRecordBlock]) -> Vec<u8> {
    use crate::writer::{put_varint, zigzag_encode};
    let mut out = Vec::with_capacity(blocks.iter().map(|b| b.data.len() + 16).sum());
    for block in blocks {
        put_varint(&mut out, zigzag_encode(block.t0));
        put_varint(&mut out, zigzag_encode(block.t1));
        for c in block.area {
            put_varint(&mut out, zigzag_encode(i64::from(c)));
        }
        put_varint(&mut out, block.data.len() as u64);
        out.extend_from_slice(&block.data);
    }
    out
}

/// A log record of `blocks` blocks back, every length checked against
/// the bytes there are; nothing may follow the last block.
pub fn decode_log_record(
    record: &[u8],
    blocks: u32,
) -> Result<Vec<LogRecordBlock>, LogRecordError> {
    let mut reader = crate::reader::Reader::new(record);
    // Never more room than the bytes could hold.
    let mut out = Vec::with_capacity((blocks as usize).min(record.len() / MIN_LOG_BLOCK_BYTES));
    for _ in 0..blocks {
        let t0 = reader.zigzag_i64()?;
        let t1 = reader.zigzag_i64()?;
        let area = [
            reader.zigzag_i32()?,
            reader.zigzag_i32()?,
            reader.zigzag_i32()?,
        ];
        let data = reader.bytes()?.to_vec();
        out.push(LogRecordBlock { t0, t1, area, data });
    }
    if reader.remaining() != 0 {
        return Err(LogRecordError::Trailing {
            blocks,
            found: reader.remaining(),
        });
    }
    Ok(out)
}

/// The second backup layout (validity token 2: no rollback log), read as
/// a [`WorldBackup`] with an empty log; never written.
#[derive(Debug, Serialize, Deserialize)]
struct WorldBackupV2 {
    section_size: [i32; 3],
    chunk_size: [u32; 3],
    next_node_id: u64,
    settings: String,
    source: String,
    taken_unix_s: u64,
    sections: Vec<BackupSection>,
    values: Vec<BackupValue>,
}

impl ContainerKind for WorldBackupV2 {
    const MAGIC: [u8; 4] = *b"BWBK";
    const VALIDITY_TOKEN: u32 = 2;
}

impl From<WorldBackupV2> for WorldBackup {
    fn from(v2: WorldBackupV2) -> Self {
        Self {
            section_size: v2.section_size,
            chunk_size: v2.chunk_size,
            next_node_id: v2.next_node_id,
            settings: v2.settings,
            source: v2.source,
            taken_unix_s: v2.taken_unix_s,
            sections: v2.sections,
            values: v2.values,
            log: Vec::new(),
        }
    }
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
            log: Vec::new(),
        }
    }
}

/// Which layout a backup's header is of (its validity token: 1, 2 or 3);
/// checks the magic, and that the token is one this code reads.
fn layout(header: &crate::container::ContainerHeader) -> Result<u32, ContainerError> {
    match header.validity_token {
        WorldBackupV1::VALIDITY_TOKEN => crate::container::check_kind::<WorldBackupV1>(header)?,
        WorldBackupV2::VALIDITY_TOKEN => crate::container::check_kind::<WorldBackupV2>(header)?,
        _ => crate::container::check_kind::<WorldBackup>(header)?,
    }
    Ok(header.validity_token)
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
    layout(&header)?;
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
    match layout(&read_header(head)?)? {
        WorldBackupV1::VALIDITY_TOKEN => {
            let (meta, _payloads) = crate::container::decode_primary::<WorldBackupV1>(head)?;
            Ok(meta.into())
        }
        WorldBackupV2::VALIDITY_TOKEN => {
            let (meta, _payloads) = crate::container::decode_primary::<WorldBackupV2>(head)?;
            Ok(meta.into())
        }
        _ => {
            let (meta, _payloads) = crate::container::decode_primary::<WorldBackup>(head)?;
            Ok(meta)
        }
    }
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
            log: vec![BackupLogRun {
                blocks: 0,
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
        assert!(read.log.is_empty());
        // A token no layout has is refused, naming the current one.
        let mut unknown = file.clone();
        unknown[4] = 4;
        assert_eq!(
            decode_backup_head(&unknown).unwrap_err(),
            ContainerError::ValidityToken {
                expected: 3,
                found: 4
            }
        );
    }

    #[test]
    fn a_second_layout_head_reads_with_an_empty_log() {
        let meta = sample();
        let v2 = WorldBackupV2 {
            section_size: meta.section_size,
            chunk_size: meta.chunk_size,
            next_node_id: meta.next_node_id,
            settings: meta.settings.clone(),
            source: meta.source.clone(),
            taken_unix_s: meta.taken_unix_s,
            sections: meta.sections.clone(),
            values: meta.values.clone(),
        };
        let file = crate::container::primary_head(&v2).unwrap();
        assert_eq!(&file[4..8], &2u32.to_le_bytes());
        assert_eq!(backup_head_len(&file).unwrap(), file.len() as u64);
        let read = decode_backup_head(&file).unwrap();
        assert_eq!(read.values, meta.values);
        assert!(read.log.is_empty());
    }

    #[test]
    fn a_log_record_round_trips_and_a_damaged_one_is_an_error() {
        let blocks = vec![
            LogRecordBlock {
                t0: 1_800_000_000_000,
                t1: 1_800_000_010_000,
                area: [-3, 0, i32::MAX],
                data: b"packed".to_vec(),
            },
            LogRecordBlock {
                t0: -5,
                t1: i64::MAX,
                area: [i32::MIN; 3],
                data: Vec::new(),
            },
        ];
        let record = encode_log_record(&blocks);
        assert_eq!(decode_log_record(&record, 2).unwrap(), blocks);
        for cut in 0..record.len() {
            assert!(
                decode_log_record(&record[..cut], 2).is_err(),
                "cut at {cut}"
            );
        }
        assert!(matches!(
            decode_log_record(&record, 1),
            Err(LogRecordError::Trailing { blocks: 1, .. })
        ));
        assert!(decode_log_record(&record, 3).is_err());
        // A count far past the bytes: an error, not an allocation.
        assert!(decode_log_record(&record, u32::MAX).is_err());
        assert_eq!(decode_log_record(&[], 0).unwrap(), Vec::new());
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
