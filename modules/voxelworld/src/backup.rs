//! Online backups of the world: `backup FILE` (on the console, while
//! players play, from a storage snapshot on a thread of its own; headless,
//! `buildat-server --world DIR backup FILE`, at once) and `restore FILE`
//! (headless, into a new world: `buildat-server restore FILE --world DIR`).
//!
//! A backup is one file in the format crate's container (`WorldBackup`:
//! header, an index of sections and modules' values in the metadata, then
//! one section record per section and each value's bytes, docs/formats.md
//! §5 and §10), so a reader finds a section from the index and decodes only
//! its record.
//!
//! Owns: mapping a stored section to a section record and back, byte for
//! byte (each node's record carries the node's kind, position and
//! variables, and in `buildat:stored` the rest of its stored form; a node
//! whose stored bytes would not come back the same is kept whole in
//! `buildat:raw`), writing the file (payloads to `FILE.payload.partial`,
//! then head and payloads to `FILE.partial`, synced, then linked to `FILE`:
//! a backup cut short never leaves a file under its name; every file made
//! new, mode 0600, never through a symlink, never over an existing file:
//! `files.rs`), reading it, and restoring
//! (into an empty storage, taking the backup's section size and node id
//! counter, then counting what was written). Modules' values (accounts,
//! bans) and the rollback log's blocks (as they are stored, in runs of
//! [`crate::storage::LOG_PAGE`]: the format's log records) come from the
//! same snapshot as the sections; a backup from before the log restores
//! with an empty one.
//! Does not own: the snapshot (each backend's `WorldStorage::snapshot`),
//! the container layout (`buildat_format::backup`), when a backup runs or
//! how its progress is told (`lib.rs`).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufReader, BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use buildat_format::SectionError;
use buildat_format::backup::{
    BackupLogRun, BackupReadError, BackupReader, BackupSection, BackupValue, LogRecordBlock,
    LogRecordError, WorldBackup, backup_head, decode_log_record, encode_log_record,
};
use buildat_format::container::{ContainerError, PayloadRef};
use buildat_format::section::{Node, NodeKind, NodeOptions, SectionReader, SectionWriter};
use buildat_voxel::geometry::{CHUNK_SIZE, Pos, SectionSize};
use buildat_voxelworld_api::{StoredNode, StoredNodeKind};

use crate::storage::{
    LogBlock, StorageCounts, StorageError, StorageSnapshot, StoredSection, StoredValue, ValueWrite,
    WorldStorage,
};

/// A node's stored form without its variables (kind, save flag).
pub const VAR_STORED: &str = "buildat:stored";
/// A node's stored bytes, kept whole (they do not decode, or would not
/// encode back the same).
pub const VAR_RAW: &str = "buildat:raw";

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BackupError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Storage(#[from] StorageError),
    #[error("{}: {source}", path.display())]
    Container {
        path: PathBuf,
        source: ContainerError,
    },
    #[error("{}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: BackupReadError,
    },
    #[error("section {pos:?}: {source}")]
    Section { pos: Pos, source: SectionError },
    #[error("section {pos:?}: node {id}: {why}")]
    Node { pos: Pos, id: u64, why: String },
    #[error("section {pos:?}: the index says {expected} nodes, its record holds {found}")]
    NodeCount {
        pos: Pos,
        expected: u32,
        found: usize,
    },
    #[error("{} exists: remove it or name another file", path.display())]
    Exists { path: PathBuf },
    #[error(
        "{destination} already holds {}: restore into a new world (buildat-server restore FILE --world NEWDIR)",
        counts.describe()
    )]
    NotEmpty {
        destination: String,
        counts: StorageCounts,
    },
    #[error("the backup's chunks are {found:?} voxels, this server's {expected:?}")]
    ChunkSize { found: [u32; 3], expected: [u32; 3] },
    #[error(
        "verification failed: the backup holds {}, the restored world {}",
        expected.describe(),
        found.describe()
    )]
    Mismatch {
        expected: StorageCounts,
        found: StorageCounts,
    },
    #[error("the rollback log's run {run}: {source}")]
    Log { run: usize, source: LogRecordError },
    #[error("cancelled")]
    Cancelled,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> BackupError + '_ {
    move |source| BackupError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn chunk_size() -> [u32; 3] {
    [CHUNK_SIZE as u32; 3]
}

/// A stored section as a section record (§5), every node byte for byte.
pub fn section_record(section: &StoredSection) -> Result<Vec<u8>, BackupError> {
    let pos = section.pos;
    let section_error = |source| BackupError::Section { pos, source };
    let mut writer = SectionWriter::new(pos, chunk_size()).map_err(section_error)?;
    for (id, data) in &section.nodes {
        let node = record_node(pos, *id, data)?;
        writer
            .add_node(&node, NodeOptions::default())
            .map_err(section_error)?;
    }
    writer.finish().map_err(section_error)
}

/// One stored node as a record node: kind and position for the markers,
/// its variables, and the rest of its stored form in [`VAR_STORED`]; or
/// the stored bytes whole in [`VAR_RAW`] when they would not come back
/// the same.
fn record_node(pos: Pos, id: u64, data: &[u8]) -> Result<Node, BackupError> {
    let encode_error = |e: buildat_interface::PayloadError| BackupError::Node {
        pos,
        id,
        why: e.to_string(),
    };
    if let Ok(stored) = buildat_interface::decode::<StoredNode>(data) {
        let kind = match stored.kind {
            StoredNodeKind::StaticChunk { chunk } => NodeKind::StaticChunk { chunk },
            StoredNodeKind::Dynamic { position } | StoredNodeKind::Moving { position, .. } => {
                NodeKind::Dynamic { position }
            }
        };
        let mut vars = stored.vars;
        let shell = StoredNode {
            kind: stored.kind,
            save_enabled: stored.save_enabled,
            vars: BTreeMap::new(),
        };
        let reserved = vars.contains_key(VAR_STORED) || vars.contains_key(VAR_RAW);
        if !reserved {
            vars.insert(
                VAR_STORED.to_string(),
                buildat_interface::encode(&shell).map_err(encode_error)?,
            );
            let node = Node { id, kind, vars };
            if stored_node(pos, &node)?.as_slice() == data {
                return Ok(node);
            }
        }
    }
    // Somewhere in the section: the section's first voxel.
    let origin = pos.map(|p| f64::from(p) * f64::from(CHUNK_SIZE));
    Ok(Node {
        id,
        kind: NodeKind::Dynamic { position: origin },
        vars: BTreeMap::from([(VAR_RAW.to_string(), data.to_vec())]),
    })
}

/// A record node's stored bytes.
fn stored_node(pos: Pos, node: &Node) -> Result<Vec<u8>, BackupError> {
    let id = node.id;
    let node_error = |why: String| BackupError::Node { pos, id, why };
    if let Some(raw) = node.vars.get(VAR_RAW) {
        return Ok(raw.clone());
    }
    let shell = node
        .vars
        .get(VAR_STORED)
        .ok_or_else(|| node_error(format!("neither {VAR_STORED} nor {VAR_RAW}")))?;
    let mut stored: StoredNode =
        buildat_interface::decode(shell).map_err(|e| node_error(e.to_string()))?;
    stored.vars = node
        .vars
        .iter()
        .filter(|(name, _)| name.as_str() != VAR_STORED)
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect();
    buildat_interface::encode(&stored).map_err(|e| node_error(e.to_string()))
}

/// A section record back as the stored section `entry` indexes.
pub fn stored_section(entry: &BackupSection, record: &[u8]) -> Result<StoredSection, BackupError> {
    let pos = entry.pos;
    let section_error = |source| BackupError::Section { pos, source };
    let reader = SectionReader::open(record).map_err(section_error)?;
    if reader.section() != pos {
        return Err(BackupError::Node {
            pos,
            id: 0,
            why: format!("the record is of section {:?}", reader.section()),
        });
    }
    let nodes = reader.all_nodes().map_err(section_error)?;
    if nodes.len() != entry.nodes as usize {
        return Err(BackupError::NodeCount {
            pos,
            expected: entry.nodes,
            found: nodes.len(),
        });
    }
    let nodes = nodes
        .iter()
        .map(|(_, node)| Ok((node.id, stored_node(pos, node)?)))
        .collect::<Result<Vec<_>, BackupError>>()?;
    Ok(StoredSection {
        pos,
        save_enabled: entry.save_enabled,
        generated: entry.generated,
        nodes,
    })
}

/// What a finished backup wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackupReport {
    pub file: PathBuf,
    pub sections: u64,
    pub nodes: u64,
    pub values: u64,
    /// The rollback log's blocks.
    pub log_blocks: u64,
    pub bytes: u64,
}

impl BackupReport {
    /// The line that ends a backup, `seconds` after it started.
    pub fn done_line(&self, seconds: f64) -> String {
        format!(
            "backup done in {seconds:.1} s: {} sections, {} nodes, {} values, {} log blocks, {:.1} MB in {}",
            self.sections,
            self.nodes,
            self.values,
            self.log_blocks,
            self.bytes as f64 / 1e6,
            self.file.display()
        )
    }
}

/// `path` with `suffix` appended to its file name.
fn beside(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Refuses a backup over an existing file (or symlink, even a dangling
/// one) before any work.
pub fn check_new_file(file: &Path) -> Result<(), BackupError> {
    if std::fs::symlink_metadata(file).is_ok() {
        return Err(BackupError::Exists {
            path: file.to_path_buf(),
        });
    }
    Ok(())
}

/// Writes the world as `snapshot` sees it to `file` (which must not
/// exist), with `settings` (its `world.toml`), telling `progress`
/// (sections done, total) after each section; stops with
/// [`BackupError::Cancelled`] when `cancel` is set, leaving nothing.
pub fn write_backup(
    snapshot: &mut dyn StorageSnapshot,
    settings: String,
    file: &Path,
    cancel: &AtomicBool,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<BackupReport, BackupError> {
    check_new_file(file)?;
    let payload_path = beside(file, ".payload.partial");
    let partial_path = beside(file, ".partial");
    // Created here, so removed here; never a file found there.
    let payloads = create_part(&payload_path)?;
    let out = match create_part(&partial_path) {
        Ok(out) => out,
        Err(error) => {
            let _ = std::fs::remove_file(&payload_path);
            return Err(error);
        }
    };
    let result = write_parts(
        snapshot,
        settings,
        file,
        (payloads, &payload_path),
        (out, &partial_path),
        cancel,
        progress,
    );
    let _ = std::fs::remove_file(&payload_path);
    if result.is_err() {
        let _ = std::fs::remove_file(&partial_path);
    }
    result
}

/// A part of a backup being written: a new file, mode 0600, never a
/// symlink followed nor a file there replaced.
fn create_part(path: &Path) -> Result<File, BackupError> {
    crate::files::create_new_private(path).map_err(|source| {
        if source.kind() == std::io::ErrorKind::AlreadyExists {
            BackupError::Exists {
                path: path.to_path_buf(),
            }
        } else {
            io(path)(source)
        }
    })
}

fn write_parts(
    snapshot: &mut dyn StorageSnapshot,
    settings: String,
    file: &Path,
    (payloads, payload_path): (File, &Path),
    (mut out, partial_path): (File, &Path),
    cancel: &AtomicBool,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<BackupReport, BackupError> {
    let next_node_id = snapshot.next_node_id()?;
    let positions = snapshot.section_positions()?;
    let total = positions.len() as u64;
    let mut payloads = BufWriter::new(payloads);
    let mut sections = Vec::with_capacity(positions.len());
    let (mut offset, mut nodes) = (0u64, 0u64);
    for pos in positions {
        if cancel.load(Ordering::Relaxed) {
            return Err(BackupError::Cancelled);
        }
        // A section quarantined after the snapshot is still in it.
        let Some(section) = snapshot.load_section(pos)? else {
            continue;
        };
        let record = section_record(&section)?;
        payloads.write_all(&record).map_err(io(payload_path))?;
        sections.push(BackupSection {
            pos,
            save_enabled: section.save_enabled,
            generated: section.generated,
            nodes: u32::try_from(section.nodes.len()).map_err(|_| BackupError::Node {
                pos,
                id: 0,
                why: "more than 2^32 nodes".into(),
            })?,
            payload: PayloadRef {
                blob: 0,
                offset,
                len: record.len() as u64,
            },
        });
        offset += record.len() as u64;
        nodes += section.nodes.len() as u64;
        progress(sections.len() as u64, total);
    }
    let mut values = Vec::new();
    for StoredValue { space, key, value } in snapshot.all_values()? {
        payloads.write_all(&value).map_err(io(payload_path))?;
        values.push(BackupValue {
            space,
            key,
            payload: PayloadRef {
                blob: 0,
                offset,
                len: value.len() as u64,
            },
        });
        offset += value.len() as u64;
    }
    let mut log = Vec::new();
    let log_blocks = crate::storage::each_log_page(
        |skip, limit| snapshot.log_page(skip, limit),
        |blocks| {
            if cancel.load(Ordering::Relaxed) {
                return Err(BackupError::Cancelled);
            }
            // At most a page of blocks.
            let count = u32::try_from(blocks.len()).unwrap_or(u32::MAX);
            let record =
                encode_log_record(&blocks.into_iter().map(record_block).collect::<Vec<_>>());
            payloads.write_all(&record).map_err(io(payload_path))?;
            log.push(BackupLogRun {
                blocks: count,
                payload: PayloadRef {
                    blob: 0,
                    offset,
                    len: record.len() as u64,
                },
            });
            offset += record.len() as u64;
            Ok(())
        },
    )?;
    let mut payloads = payloads
        .into_inner()
        .map_err(|e| io(payload_path)(e.into_error()))?;
    let meta = WorldBackup {
        section_size: snapshot.section_size().0,
        chunk_size: chunk_size(),
        next_node_id,
        settings,
        source: snapshot.location(),
        taken_unix_s: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        sections,
        values,
        log,
    };
    let head = backup_head(&meta).map_err(|source| BackupError::Container {
        path: file.to_path_buf(),
        source,
    })?;
    out.write_all(&head).map_err(io(partial_path))?;
    payloads
        .seek(SeekFrom::Start(0))
        .map_err(io(payload_path))?;
    std::io::copy(&mut payloads, &mut out).map_err(io(partial_path))?;
    out.sync_all().map_err(io(partial_path))?;
    drop(out);
    // Never over a file made there meanwhile.
    crate::files::place_new(partial_path, file).map_err(|source| {
        if source.kind() == std::io::ErrorKind::AlreadyExists {
            BackupError::Exists {
                path: file.to_path_buf(),
            }
        } else {
            io(file)(source)
        }
    })?;
    if let Some(parent) = file.parent().filter(|p| !p.as_os_str().is_empty())
        && let Ok(dir) = File::open(parent)
    {
        let _ = dir.sync_all();
    }
    Ok(BackupReport {
        file: file.to_path_buf(),
        sections: meta.sections.len() as u64,
        nodes,
        values: meta.values.len() as u64,
        log_blocks,
        bytes: head.len() as u64 + offset,
    })
}

/// A stored block of the rollback log as the format's log record holds it.
fn record_block(block: LogBlock) -> LogRecordBlock {
    LogRecordBlock {
        t0: block.t0,
        t1: block.t1,
        area: block.area,
        data: block.data,
    }
}

/// A log record's block as the storage keeps it.
fn stored_block(block: LogRecordBlock) -> LogBlock {
    LogBlock {
        t0: block.t0,
        t1: block.t1,
        area: block.area,
        data: block.data,
    }
}

/// A backup file opened for reading (`buildat_format::backup::BackupReader`
/// over the file): its index read, its sections read one at a time.
pub struct BackupFile {
    path: PathBuf,
    reader: BackupReader<BufReader<File>>,
}

impl BackupFile {
    pub fn open(path: &Path) -> Result<Self, BackupError> {
        let file = File::open(path).map_err(io(path))?;
        let reader =
            BackupReader::open(BufReader::new(file)).map_err(|source| BackupError::Read {
                path: path.to_path_buf(),
                source,
            })?;
        Ok(Self {
            path: path.to_path_buf(),
            reader,
        })
    }

    pub fn meta(&self) -> &WorldBackup {
        self.reader.meta()
    }

    /// The stored section `entry` indexes.
    pub fn section(&mut self, entry: &BackupSection) -> Result<StoredSection, BackupError> {
        let record = self
            .reader
            .record(entry)
            .map_err(|source| BackupError::Read {
                path: self.path.clone(),
                source,
            })?;
        stored_section(entry, &record)
    }

    /// The rollback log's blocks of run number `run` (of the index's
    /// `log`), every length checked.
    pub fn log_run(&mut self, run: usize) -> Result<Vec<LogBlock>, BackupError> {
        let Some(entry) = self.reader.meta().log.get(run).cloned() else {
            return Ok(Vec::new());
        };
        let record =
            self.reader
                .read_payload(&entry.payload)
                .map_err(|source| BackupError::Read {
                    path: self.path.clone(),
                    source,
                })?;
        let blocks = decode_log_record(&record, entry.blocks)
            .map_err(|source| BackupError::Log { run, source })?;
        Ok(blocks.into_iter().map(stored_block).collect())
    }

    /// The module's value `entry` indexes.
    pub fn value(&mut self, entry: &BackupValue) -> Result<StoredValue, BackupError> {
        let value =
            self.reader
                .read_payload(&entry.payload)
                .map_err(|source| BackupError::Read {
                    path: self.path.clone(),
                    source,
                })?;
        Ok(StoredValue {
            space: entry.space.clone(),
            key: entry.key.clone(),
            value,
        })
    }
}

/// What a restore wrote: the storage's counts after it, and the rollback
/// log's blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Restored {
    pub counts: StorageCounts,
    pub log_blocks: u64,
}

impl Restored {
    /// `3 sections, 40 nodes and 2 values, 7 log blocks`.
    pub fn describe(&self) -> String {
        format!("{}, {} log blocks", self.counts.describe(), self.log_blocks)
    }
}

/// Writes every section of `backup` into the empty `storage` (taking the
/// backup's section size and node id counter first), telling `progress`
/// (sections done, total) after each, then every module's value and the
/// rollback log's blocks (a run to a transaction); then counts what the
/// storage holds and answers it (what was written).
pub fn restore(
    backup: &mut BackupFile,
    storage: &mut dyn WorldStorage,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Restored, BackupError> {
    let already = storage.counts()?;
    if already != StorageCounts::default() {
        return Err(BackupError::NotEmpty {
            destination: storage.location(),
            counts: already,
        });
    }
    let meta = backup.meta().clone();
    if meta.chunk_size != chunk_size() {
        return Err(BackupError::ChunkSize {
            found: meta.chunk_size,
            expected: chunk_size(),
        });
    }
    let size = SectionSize(meta.section_size);
    if storage.section_size() != size {
        storage.set_empty_section_size(size)?;
    }
    storage.raise_next_node_id(meta.next_node_id)?;
    let total = meta.sections.len() as u64;
    let mut expected = StorageCounts::default();
    for entry in &meta.sections {
        let section = backup.section(entry)?;
        storage.save_section(&section)?;
        expected.sections += 1;
        expected.nodes += section.nodes.len() as u64;
        progress(expected.sections, total);
    }
    for batch in meta.values.chunks(buildat_voxelworld_api::MAX_VALUE_WRITES) {
        let mut writes = Vec::with_capacity(batch.len());
        for entry in batch {
            let StoredValue { space, key, value } = backup.value(entry)?;
            writes.push(ValueWrite {
                space,
                key,
                value: Some(value),
                only_if_absent: false,
            });
        }
        storage.put_values(&writes)?;
        expected.values += writes.len() as u64;
    }
    let mut log_blocks = 0;
    for run in 0..meta.log.len() {
        let blocks = backup.log_run(run)?;
        storage.append_log(&blocks)?;
        log_blocks += blocks.len() as u64;
    }
    let found = storage.counts()?;
    if found != expected {
        return Err(BackupError::Mismatch { expected, found });
    }
    Ok(Restored {
        counts: found,
        log_blocks,
    })
}

/// Logs "`what`: done/total sections (percent)" at most once a second
/// (backup and restore headless, and `migrate`).
pub struct ProgressLog {
    what: &'static str,
    last: Instant,
}

impl ProgressLog {
    pub fn new(what: &'static str) -> Self {
        Self {
            what,
            last: Instant::now(),
        }
    }

    pub fn tell(&mut self, done: u64, total: u64) {
        if self.last.elapsed().as_secs_f64() >= 1.0 {
            self.last = Instant::now();
            buildat_interface::log::info!(
                "{}: {done}/{total} sections ({:.0}%)",
                self.what,
                done as f64 * 100.0 / total.max(1) as f64
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::testing::{each_backend, log_blocks, sqlite_world, whole_log};

    fn encoded(node: &StoredNode) -> Vec<u8> {
        buildat_interface::encode(node).unwrap()
    }

    fn sample_section() -> StoredSection {
        let chunk = StoredNode {
            kind: StoredNodeKind::StaticChunk { chunk: [2, -4, 6] },
            save_enabled: true,
            vars: BTreeMap::from([("buildat_voxel_data".to_string(), vec![1, 2, 3])]),
        };
        let moving = StoredNode {
            kind: StoredNodeKind::Moving {
                position: [70.5, -120.25, 200.0],
                orientation: [0.0, 0.0, 0.0, 1.0],
                velocity: [1.0, 0.0, -1.0],
                parent: Some(7),
            },
            save_enabled: false,
            vars: BTreeMap::from([("creature".to_string(), b"sheep".to_vec())]),
        };
        StoredSection {
            pos: [1, -2, 3],
            save_enabled: true,
            generated: true,
            nodes: vec![
                (7, encoded(&chunk)),
                (1 << 40, encoded(&moving)),
                (9, b"not a stored node".to_vec()),
            ],
        }
    }

    fn entry_for(section: &StoredSection, record: &[u8]) -> BackupSection {
        BackupSection {
            pos: section.pos,
            save_enabled: section.save_enabled,
            generated: section.generated,
            nodes: section.nodes.len() as u32,
            payload: PayloadRef {
                blob: 0,
                offset: 0,
                len: record.len() as u64,
            },
        }
    }

    #[test]
    fn a_section_comes_back_byte_for_byte_and_its_markers_place_its_nodes() {
        let section = sample_section();
        let record = section_record(&section).unwrap();
        let entry = entry_for(&section, &record);
        assert_eq!(stored_section(&entry, &record).unwrap(), section);
        let reader = SectionReader::open(&record).unwrap();
        let index = reader.index().unwrap();
        assert_eq!(index.len(), 3);
        // The chunk's centre, the creature's position: found without
        // decoding a node.
        assert_eq!(index[0].placement.position, [80.0, -112.0, 208.0]);
        assert_eq!(index[1].placement.position, [70.5, -120.25, 200.0]);
    }

    #[test]
    fn a_truncated_or_altered_record_is_an_error() {
        let section = sample_section();
        let record = section_record(&section).unwrap();
        let entry = entry_for(&section, &record);
        for cut in 0..record.len() {
            assert!(
                stored_section(&entry, &record[..cut]).is_err(),
                "cut at {cut}"
            );
        }
        let mut other = entry.clone();
        other.nodes = 2;
        assert!(matches!(
            stored_section(&other, &record),
            Err(BackupError::NodeCount { .. })
        ));
        other = entry;
        other.pos = [0, 0, 0];
        assert!(stored_section(&other, &record).is_err());
    }

    fn fill(storage: &mut dyn WorldStorage) {
        storage.reserve_node_ids(500).unwrap();
        let mut section = sample_section();
        for x in 0..6 {
            section.pos = [x, 0, -x];
            // Ids are the world's: each section's nodes their own.
            for (id, _) in &mut section.nodes {
                *id += 10;
            }
            storage.save_section(&section).unwrap();
        }
        let account = |key: &str, value: &[u8]| ValueWrite {
            space: "main.accounts".into(),
            key: key.into(),
            value: Some(value.to_vec()),
            only_if_absent: false,
        };
        assert!(
            storage
                .put_values(&[account("ann", b"verifier"), account("bob", b"")])
                .unwrap()
        );
        storage.append_log(&log_blocks(0..600)).unwrap();
    }

    #[test]
    fn a_backup_restores_to_the_same_world_and_sees_nothing_saved_after_it() {
        for (from, to) in each_backend().into_iter().zip(each_backend()) {
            let backend = from.backend;
            let dir = tempfile::tempdir().unwrap();
            let mut original = from.open(SectionSize([2, 3, 4]));
            fill(original.as_mut());
            let mut snapshot = original.snapshot().unwrap();
            // Saved after the snapshot: not in the backup.
            let mut later = sample_section();
            later.pos = [40, 40, 40];
            later.nodes.truncate(0);
            original.save_section(&later).unwrap();
            original.reserve_node_ids(100).unwrap();
            original.append_log(&log_blocks(600..601)).unwrap();
            original
                .put_values(&[ValueWrite {
                    space: "main.accounts".into(),
                    key: "late".into(),
                    value: Some(b"after".to_vec()),
                    only_if_absent: true,
                }])
                .unwrap();
            let file = dir.path().join("world.backup");
            let mut told = Vec::new();
            let report = write_backup(
                snapshot.as_mut(),
                "[world]\nseed = 5\n".into(),
                &file,
                &AtomicBool::new(false),
                &mut |done, total| told.push((done, total)),
            )
            .unwrap();
            drop(snapshot);
            assert_eq!(
                (
                    report.sections,
                    report.nodes,
                    report.values,
                    report.log_blocks
                ),
                (6, 18, 2, 600),
                "{backend}"
            );
            assert!(report.done_line(1.0).contains("600 log blocks"));
            assert_eq!(told.last(), Some(&(6, 6)));
            assert_eq!(report.bytes, std::fs::metadata(&file).unwrap().len());
            assert!(!beside(&file, ".partial").exists());
            assert!(!beside(&file, ".payload.partial").exists());

            let mut backup = BackupFile::open(&file).unwrap();
            assert_eq!(backup.meta().next_node_id, 501, "{backend}");
            assert_eq!(backup.meta().settings, "[world]\nseed = 5\n");
            let mut restored = to.open(SectionSize::default());
            let done = restore(&mut backup, restored.as_mut(), &mut |_, _| {}).unwrap();
            let counts = done.counts;
            assert_eq!((counts.sections, counts.nodes, counts.values), (6, 18, 2));
            // The log as it was at the snapshot: its blocks, not the later one.
            assert_eq!(done.log_blocks, 600, "{backend}");
            assert!(done.describe().contains("600 log blocks"));
            let mut expected = log_blocks(0..600);
            expected.sort_by_key(|b| b.t0);
            assert_eq!(whole_log(restored.as_mut()), expected, "{backend}");
            assert_eq!(
                restored.get_value("main.accounts", "ann").unwrap(),
                Some(b"verifier".to_vec()),
                "{backend}"
            );
            assert_eq!(restored.get_value("main.accounts", "late").unwrap(), None);
            assert_eq!(restored.section_size(), SectionSize([2, 3, 4]), "{backend}");
            assert_eq!(
                to.open(SectionSize::default()).section_size(),
                SectionSize([2, 3, 4])
            );
            assert_eq!(restored.next_node_id().unwrap(), 501, "{backend}");
            for x in 0..6 {
                let pos = [x, 0, -x];
                assert_eq!(
                    restored.load_section(pos).unwrap(),
                    original.load_section(pos).unwrap(),
                    "{backend}"
                );
            }
            assert_eq!(restored.load_section([40, 40, 40]).unwrap(), None);
            // Not twice into one world, not over an existing file.
            let mut backup = BackupFile::open(&file).unwrap();
            assert!(matches!(
                restore(&mut backup, restored.as_mut(), &mut |_, _| {}),
                Err(BackupError::NotEmpty { .. })
            ));
            let mut snapshot = original.snapshot().unwrap();
            assert!(matches!(
                write_backup(
                    snapshot.as_mut(),
                    String::new(),
                    &file,
                    &AtomicBool::new(false),
                    &mut |_, _| {}
                ),
                Err(BackupError::Exists { .. })
            ));
        }
    }

    #[test]
    fn a_backup_is_private_and_never_written_over_a_file_or_through_a_symlink() {
        let dir = tempfile::tempdir().unwrap();
        let test_world = sqlite_world();
        let mut world = test_world.open(SectionSize::default());
        fill(world.as_mut());
        let mut backup = |file: &Path| {
            let mut snapshot = world.snapshot().unwrap();
            write_backup(
                snapshot.as_mut(),
                String::new(),
                file,
                &AtomicBool::new(false),
                &mut |_, _| {},
            )
        };
        let theirs = dir.path().join("theirs");
        std::fs::write(&theirs, b"someone else's").unwrap();
        let link = dir.path().join("link.backup");
        std::os::unix::fs::symlink(&theirs, &link).unwrap();
        let dangling = dir.path().join("dangling.backup");
        let nowhere = dir.path().join("nowhere");
        std::os::unix::fs::symlink(&nowhere, &dangling).unwrap();
        // A symlink planted where the parts are written.
        let planted = dir.path().join("planted.backup");
        std::os::unix::fs::symlink(&theirs, beside(&planted, ".partial")).unwrap();
        let payload_planted = dir.path().join("payload.backup");
        std::os::unix::fs::symlink(&nowhere, beside(&payload_planted, ".payload.partial")).unwrap();
        for file in [&theirs, &link, &dangling, &planted, &payload_planted] {
            let error = backup(file).expect_err("refused");
            assert!(matches!(error, BackupError::Exists { .. }), "{error}");
        }
        assert_eq!(std::fs::read(&theirs).unwrap(), b"someone else's");
        assert!(!nowhere.exists());
        assert!(std::fs::symlink_metadata(beside(&planted, ".partial")).is_ok());
        assert!(!planted.exists() && !payload_planted.exists());
        let fresh = dir.path().join("fresh.backup");
        backup(&fresh).unwrap();
        assert_eq!(crate::files::get_mode(&fresh), Some(0o600));
    }

    #[test]
    fn a_cancelled_backup_leaves_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let test_world = sqlite_world();
        let mut world = test_world.open(SectionSize::default());
        fill(world.as_mut());
        let file = dir.path().join("cut.backup");
        let mut snapshot = world.snapshot().unwrap();
        let result = write_backup(
            snapshot.as_mut(),
            String::new(),
            &file,
            &AtomicBool::new(true),
            &mut |_, _| {},
        );
        assert!(matches!(result, Err(BackupError::Cancelled)));
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.contains("backup"))
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }

    #[test]
    fn a_truncated_backup_file_is_an_error_not_a_panic() {
        let dir = tempfile::tempdir().unwrap();
        let test_world = sqlite_world();
        let mut world = test_world.open(SectionSize::default());
        fill(world.as_mut());
        let file = dir.path().join("whole.backup");
        let mut snapshot = world.snapshot().unwrap();
        write_backup(
            snapshot.as_mut(),
            String::new(),
            &file,
            &AtomicBool::new(false),
            &mut |_, _| {},
        )
        .unwrap();
        let bytes = std::fs::read(&file).unwrap();
        let cut_file = dir.path().join("cut.backup");
        for cut in (0..bytes.len()).step_by(97) {
            std::fs::write(&cut_file, &bytes[..cut]).unwrap();
            let outcome = BackupFile::open(&cut_file).and_then(|mut backup| {
                let entries = backup.meta().sections.clone();
                for entry in &entries {
                    backup.section(entry)?;
                }
                for run in 0..backup.meta().log.len() {
                    backup.log_run(run)?;
                }
                Ok(())
            });
            assert!(outcome.is_err(), "cut at {cut} of {}", bytes.len());
        }
    }
}

#[cfg(test)]
mod log_tests {
    use super::*;
    use crate::storage::testing::sqlite_world;
    use buildat_voxel::geometry::SectionSize;

    /// A backup whose log record is damaged: reading or restoring it is
    /// an error naming the log's run, not a panic.
    #[test]
    fn a_damaged_log_run_is_an_error_not_a_panic() {
        let dir = tempfile::tempdir().unwrap();
        let test_world = sqlite_world();
        let mut world = test_world.open(SectionSize::default());
        world
            .append_log(&[LogBlock {
                t0: 5,
                t1: 6,
                area: [1, 2, 3],
                data: b"blob".to_vec(),
            }])
            .unwrap();
        let file = dir.path().join("log.backup");
        let mut snapshot = world.snapshot().unwrap();
        let report = write_backup(
            snapshot.as_mut(),
            String::new(),
            &file,
            &AtomicBool::new(false),
            &mut |_, _| {},
        )
        .unwrap();
        assert_eq!(report.log_blocks, 1);
        // The log record ends the file: t0 t1 x y z (a byte each), the
        // blob's length (4), its bytes. A length past the end:
        let mut bytes = std::fs::read(&file).unwrap();
        let length_at = bytes.len() - 5;
        assert_eq!(bytes[length_at], 4);
        bytes[length_at] = 0x7f;
        let damaged = dir.path().join("damaged.backup");
        std::fs::write(&damaged, &bytes).unwrap();
        let mut backup = BackupFile::open(&damaged).unwrap();
        let error = backup.log_run(0).unwrap_err();
        assert!(matches!(error, BackupError::Log { run: 0, .. }), "{error}");
        let restored_world = sqlite_world();
        let mut restored = restored_world.open(SectionSize::default());
        let error = restore(&mut backup, restored.as_mut(), &mut |_, _| {}).unwrap_err();
        assert!(error.to_string().contains("rollback log"), "{error}");
    }
}
