//! `buildat-server inspect FILE [--section X,Y,Z | --verify]`: what a
//! world backup holds, read from its index (and one section's record), with
//! no world, no module and no server; `--verify` reads it whole.
//!
//! Owns: reading a backup's head and index from the file, listing its
//! sections with their sizes, counting modules' values by space (never
//! showing them: they hold password verifiers), and listing one section's
//! nodes from their markers and bodies; verifying a whole backup (every
//! record read and decoded, its section and node count as the index says,
//! every value read, every block of the rollback log read and its packed
//! blob decoded, no bytes missing or left over). Does not own: the backup's layout
//! (`buildat_format::backup`, docs/formats.md §10) or what nodes mean
//! (voxelworld writes and restores backups).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use anyhow::{Context, bail};
use buildat_format::backup::{
    BackupReader, BackupSection, BackupValue, check_backup_payload, decode_log_record,
};
use buildat_format::rollback_blob;
use buildat_format::section::{NodeKind, SectionReader};

type Backup = BackupReader<BufReader<File>>;

fn open(path: &Path) -> anyhow::Result<Backup> {
    let file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    BackupReader::open(BufReader::new(file))
        .with_context(|| format!("{} is not a world backup (or is cut short)", path.display()))
}

/// `X,Y,Z` section coordinates.
pub fn parse_section(text: &str) -> Result<[i32; 3], String> {
    let parts: Vec<&str> = text.split(',').map(str::trim).collect();
    let [x, y, z] = parts.as_slice() else {
        return Err(format!("'{text}': expected X,Y,Z"));
    };
    let number = |p: &str| p.parse::<i32>().map_err(|e| format!("'{p}': {e}"));
    Ok([number(x)?, number(y)?, number(z)?])
}

/// The listing `inspect` prints.
pub fn inspect(path: &Path, section: Option<[i32; 3]>) -> anyhow::Result<String> {
    let mut backup = open(path)?;
    let meta = backup.meta().clone();
    let [w, h, d] = meta.section_size;
    let [cx, cy, cz] = meta.chunk_size;
    let nodes: u64 = meta.sections.iter().map(|s| u64::from(s.nodes)).sum();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut out = format!(
        "world backup {}: taken {} (unix time {}) from {}\n\
         sections of {w}x{h}x{d} chunks of {cx}x{cy}x{cz} voxels; next node id {}\n\
         {} sections, {nodes} nodes, {:.1} MB of section records, values and log\n\
         {}\n\
         {} blocks of the rollback log\n",
        path.display(),
        ago(now.saturating_sub(meta.taken_unix_s)),
        meta.taken_unix_s,
        meta.source,
        meta.next_node_id,
        meta.sections.len(),
        backup.payload_len() as f64 / 1e6,
        describe_values(&meta.values),
        meta.log
            .iter()
            .map(|run| u64::from(run.blocks))
            .sum::<u64>(),
    );
    if let Some(pos) = section {
        let Some(entry) = meta.sections.iter().find(|s| s.pos == pos).cloned() else {
            bail!("{}: no section {pos:?} in this backup", path.display());
        };
        out.push_str(&describe_section(&mut backup, &entry)?);
        return Ok(out);
    }
    out.push_str("section                    nodes        bytes  flags\n");
    for entry in &meta.sections {
        let fits = check_backup_payload(entry, backup.payload_len()).is_ok();
        out.push_str(&format!(
            "{:<24} {:>7} {:>12}  {}{}{}\n",
            format!("{:?}", entry.pos),
            entry.nodes,
            entry.payload.len,
            if entry.generated { "generated" } else { "-" },
            if entry.save_enabled { " saved" } else { "" },
            if fits {
                ""
            } else {
                " PAST THE END OF THE FILE"
            },
        ));
    }
    Ok(out)
}

/// `3 module values: main.accounts 2, main.bans 1`.
fn describe_values(values: &[BackupValue]) -> String {
    let mut spaces: BTreeMap<&str, u64> = BTreeMap::new();
    for value in values {
        *spaces.entry(value.space.as_str()).or_default() += 1;
    }
    let spaces: Vec<String> = spaces
        .iter()
        .map(|(space, count)| format!("{space} {count}"))
        .collect();
    if spaces.is_empty() {
        return "0 module values".into();
    }
    format!("{} module values: {}", values.len(), spaces.join(", "))
}

/// One section's nodes, from its record alone.
fn describe_section(backup: &mut Backup, entry: &BackupSection) -> anyhow::Result<String> {
    let record = backup
        .record(entry)
        .with_context(|| format!("section {:?}: its record", entry.pos))?;
    let reader = SectionReader::open(&record)
        .with_context(|| format!("section {:?}: its record does not decode", entry.pos))?;
    let mut out = format!(
        "section {:?}: {} nodes, {} bytes\nid                    kind     position (voxels)                 variables\n",
        entry.pos, entry.nodes, entry.payload.len
    );
    for marker in reader.index()? {
        let node = reader.read_node(marker.offset)?;
        let kind = match node.kind {
            NodeKind::StaticChunk { .. } => "chunk",
            NodeKind::Dynamic { .. } => "dynamic",
        };
        let [x, y, z] = marker.placement.position;
        let vars: Vec<String> = node
            .vars
            .iter()
            .map(|(name, value)| format!("{name} ({} B)", value.len()))
            .collect();
        out.push_str(&format!(
            "{:<21} {kind:<8} {:<33} {}\n",
            node.id,
            format!("({x:.1}, {y:.1}, {z:.1})"),
            vars.join(", ")
        ));
    }
    Ok(out)
}

/// At most this many problems are listed by `--verify` (then how many more).
const MAX_PROBLEMS_SHOWN: usize = 20;

/// `inspect FILE --verify`: the backup read whole. Every section's record
/// is read and decoded (each node), and must be of the section and hold
/// the nodes the index says; every module value is read; the records and
/// values must fill the file to its end. The summary, or an error naming
/// each thing wrong (the command then exits non-zero).
pub fn verify(path: &Path) -> anyhow::Result<String> {
    let mut backup = open(path)?;
    let meta = backup.meta().clone();
    let mut problems = Vec::new();
    let (mut nodes, mut end) = (0u64, 0u64);
    let mut seen = std::collections::HashSet::new();
    for entry in &meta.sections {
        let pos = entry.pos;
        end = end.max(entry.payload.offset.saturating_add(entry.payload.len));
        if !seen.insert(pos) {
            problems.push(format!("section {pos:?}: listed twice in the index"));
        }
        let record = match backup.record(entry) {
            Ok(record) => record,
            Err(error) => {
                problems.push(format!(
                    "section {pos:?}: its record cannot be read: {error}"
                ));
                continue;
            }
        };
        let reader = match SectionReader::open(&record) {
            Ok(reader) => reader,
            Err(error) => {
                problems.push(format!(
                    "section {pos:?}: its record does not decode: {error}"
                ));
                continue;
            }
        };
        if reader.section() != pos {
            problems.push(format!(
                "section {pos:?}: its record is of section {:?}",
                reader.section()
            ));
        }
        if reader.chunk_size() != meta.chunk_size {
            problems.push(format!(
                "section {pos:?}: its record's chunks are {:?} voxels, the backup's {:?}",
                reader.chunk_size(),
                meta.chunk_size
            ));
        }
        match reader.all_nodes() {
            Ok(found) if found.len() as u64 == u64::from(entry.nodes) => {
                nodes += found.len() as u64;
            }
            Ok(found) => problems.push(format!(
                "section {pos:?}: the index says {} nodes, its record holds {}",
                entry.nodes,
                found.len()
            )),
            Err(error) => {
                problems.push(format!("section {pos:?}: a node does not decode: {error}"))
            }
        }
    }
    for (n, value) in meta.values.iter().enumerate() {
        end = end.max(value.payload.offset.saturating_add(value.payload.len));
        // Named by space and place, never by key or bytes (password verifiers).
        if let Err(error) = backup.read_payload(&value.payload) {
            problems.push(format!(
                "module value {} (of {}): cannot be read: {error}",
                n + 1,
                value.space
            ));
        }
    }
    let mut log_blocks = 0u64;
    for (n, run) in meta.log.iter().enumerate() {
        end = end.max(run.payload.offset.saturating_add(run.payload.len));
        let run_name = format!("rollback log run {}", n + 1);
        let record = match backup.read_payload(&run.payload) {
            Ok(record) => record,
            Err(error) => {
                problems.push(format!("{run_name}: cannot be read: {error}"));
                continue;
            }
        };
        let blocks = match decode_log_record(&record, run.blocks) {
            Ok(blocks) => blocks,
            Err(error) => {
                problems.push(format!("{run_name}: does not decode: {error}"));
                continue;
            }
        };
        for (b, block) in blocks.iter().enumerate() {
            if let Err(why) = check_log_blob(&block.data) {
                problems.push(format!(
                    "{run_name}, block {} (area {:?}, {} to {} ms): its blob does not decode: {why}",
                    b + 1,
                    block.area,
                    block.t0,
                    block.t1
                ));
            }
        }
        log_blocks += blocks.len() as u64;
    }
    let payload_len = backup.payload_len();
    if payload_len > end {
        problems.push(format!(
            "{} bytes after the last record or value (the index does not cover them)",
            payload_len - end
        ));
    }
    if !problems.is_empty() {
        let more = problems.len().saturating_sub(MAX_PROBLEMS_SHOWN);
        problems.truncate(MAX_PROBLEMS_SHOWN);
        let mut text = problems.join("\n  ");
        if more > 0 {
            text.push_str(&format!("\n  and {more} more"));
        }
        bail!(
            "{} is not a whole backup: {} sections, {} module values, {} runs of the rollback \
             log in its index;\n  {text}",
            path.display(),
            meta.sections.len(),
            meta.values.len(),
            meta.log.len()
        );
    }
    Ok(format!(
        "{} verified: {} sections ({nodes} nodes), {} module values and {log_blocks} blocks of \
         the rollback log read whole; every record decodes, is of its section and holds the \
         nodes the index says; every log block decodes; {:.1} MB\n",
        path.display(),
        meta.sections.len(),
        meta.values.len(),
        (backup.payload_len() as f64) / 1e6
    ))
}

/// A block of the rollback log decodes: one of voxel changes, or (its
/// first byte says) of inventory changes or logins.
fn check_log_blob(data: &[u8]) -> Result<(), rollback_blob::RollbackBlobError> {
    if data.first() == Some(&rollback_blob::ITEMS_VERSION) {
        rollback_blob::decode_items(data).map(|_| ())
    } else {
        rollback_blob::decode(data).map(|_| ())
    }
}

fn ago(seconds: u64) -> String {
    match seconds {
        0..120 => format!("{seconds} s ago"),
        120..7200 => format!("{} min ago", seconds / 60),
        7200..172_800 => format!("{} h ago", seconds / 3600),
        _ => format!("{} days ago", seconds / 86_400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use buildat_format::backup::WorldBackup;

    #[test]
    fn sections_are_read_as_three_numbers() {
        assert_eq!(parse_section("1,-2, 3"), Ok([1, -2, 3]));
        assert!(parse_section("1,2").is_err());
        assert!(parse_section("1,x,3").is_err());
    }

    /// A backup of two sections (two nodes, one node) and one value.
    fn sample_backup(meta_edit: impl FnOnce(&mut WorldBackup)) -> Vec<u8> {
        use buildat_format::container::PayloadRef;
        use buildat_format::section::{Node, NodeOptions, SectionWriter};
        let mut payloads = Vec::new();
        let mut sections = Vec::new();
        for (pos, count) in [([0, 0, 0], 2u32), ([1, 0, -1], 1)] {
            let mut writer = SectionWriter::new(pos, [32; 3]).unwrap();
            for id in 0..u64::from(count) {
                let node = Node {
                    id: id + 1,
                    kind: NodeKind::StaticChunk {
                        chunk: [id as i32, 0, 0],
                    },
                    vars: [("buildat_voxel_data".to_string(), vec![1, 2, 3])].into(),
                };
                writer.add_node(&node, NodeOptions::default()).unwrap();
            }
            let record = writer.finish().unwrap();
            sections.push(BackupSection {
                pos,
                save_enabled: true,
                generated: true,
                nodes: count,
                payload: PayloadRef {
                    blob: 0,
                    offset: payloads.len() as u64,
                    len: record.len() as u64,
                },
            });
            payloads.extend_from_slice(&record);
        }
        let values = vec![BackupValue {
            space: "main.accounts".into(),
            key: "bob-secret".into(),
            payload: PayloadRef {
                blob: 0,
                offset: payloads.len() as u64,
                len: 8,
            },
        }];
        payloads.extend_from_slice(b"verifier");
        let mut meta = WorldBackup {
            section_size: [2, 2, 2],
            chunk_size: [32; 3],
            next_node_id: 4,
            sections,
            values,
            ..WorldBackup::default()
        };
        meta_edit(&mut meta);
        let mut file = buildat_format::backup::backup_head(&meta).unwrap();
        file.extend_from_slice(&payloads);
        file
    }

    #[test]
    fn verify_reads_a_backup_whole_and_names_what_is_wrong() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("one.backup");
        let whole = sample_backup(|_| {});
        std::fs::write(&path, &whole).unwrap();
        let summary = verify(&path).unwrap();
        assert!(
            summary.contains(
                "verified: 2 sections (3 nodes), 1 module values and 0 blocks of the rollback log"
            ),
            "{summary}"
        );
        let wrong = |bytes: &[u8]| {
            std::fs::write(&path, bytes).unwrap();
            format!("{:#}", verify(&path).unwrap_err())
        };
        // The index's count differs from the record's.
        let error = wrong(&sample_backup(|meta| meta.sections[1].nodes = 5));
        assert!(
            error.contains("section [1, 0, -1]: the index says 5 nodes, its record holds 1"),
            "{error}"
        );
        // A record of another section.
        let error = wrong(&sample_backup(|meta| meta.sections[0].pos = [9, 9, 9]));
        assert!(
            error.contains("its record is of section [0, 0, 0]"),
            "{error}"
        );
        // Cut short: the value (and then records) cannot be read.
        let error = wrong(&whole[..whole.len() - 4]);
        assert!(
            error.contains("module value 1 (of main.accounts)"),
            "{error}"
        );
        assert!(!error.contains("bob-secret"), "keys are not shown: {error}");
        // A record's bytes damaged: its section is named.
        let mut damaged = whole.clone();
        let record_start = whole.len() - 8 - sample_record_lens().iter().sum::<usize>();
        for byte in &mut damaged[record_start..record_start + 16] {
            *byte ^= 0xff;
        }
        let error = wrong(&damaged);
        assert!(error.contains("section [0, 0, 0]: its record"), "{error}");
        // Bytes no entry covers.
        let mut longer = whole.clone();
        longer.extend_from_slice(b"junk");
        let error = wrong(&longer);
        assert!(error.contains("4 bytes after the last record"), "{error}");
        // Listing alone does not read the records: it passes the damaged one.
        std::fs::write(&path, &damaged).unwrap();
        assert!(inspect(&path, None).is_ok());
    }

    /// The sample's record lengths, from its index.
    fn sample_record_lens() -> Vec<usize> {
        let mut lens = Vec::new();
        sample_backup(|meta| {
            lens = meta
                .sections
                .iter()
                .map(|s| s.payload.len as usize)
                .collect();
        });
        lens
    }

    /// A backup whose log holds a good block and one damaged: the damaged
    /// one is named (its run, its place, its area), not a panic; the
    /// good one alone verifies.
    #[test]
    fn verify_decodes_every_block_of_the_rollback_log() {
        use buildat_format::backup::{BackupLogRun, LogRecordBlock, encode_log_record};
        use buildat_format::container::PayloadRef;
        use buildat_format::rollback_blob::{LoggedChange, LoggedVoxel, RollbackBlob};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.backup");
        let voxel = |type_index| LoggedVoxel {
            type_index,
            bits: 0,
        };
        let good = LogRecordBlock {
            t0: 1_800_000_000_000,
            t1: 1_800_000_000_000,
            area: [0, 0, 0],
            data: rollback_blob::encode(&RollbackBlob {
                actors: vec!["griefer".into()],
                types: vec!["air".into(), "stone".into()],
                changes: vec![LoggedChange {
                    time_ms: 1_800_000_000_000,
                    pos: [1, 2, 3],
                    before: voxel(1),
                    after: voxel(0),
                    actor: 0,
                }],
            }),
        };
        let mut damaged = good.clone();
        damaged.area = [4, 0, -1];
        // A layout no code reads.
        damaged.data[0] = 0x77;
        let with_log = |blocks: &[LogRecordBlock]| {
            let record = encode_log_record(blocks);
            // After the sample's records and its value's 8 bytes.
            let payloads_len = sample_record_lens().iter().sum::<usize>() as u64 + 8;
            let mut file = sample_backup(|meta| {
                meta.log = vec![BackupLogRun {
                    blocks: blocks.len() as u32,
                    payload: PayloadRef {
                        blob: 0,
                        offset: payloads_len,
                        len: record.len() as u64,
                    },
                }];
            });
            file.extend_from_slice(&record);
            file
        };
        std::fs::write(&path, with_log(std::slice::from_ref(&good))).unwrap();
        let summary = verify(&path).unwrap();
        assert!(
            summary.contains("1 blocks of the rollback log"),
            "{summary}"
        );
        assert!(
            inspect(&path, None)
                .unwrap()
                .contains("1 blocks of the rollback log")
        );
        std::fs::write(&path, with_log(&[good, damaged])).unwrap();
        let error = format!("{:#}", verify(&path).unwrap_err());
        assert!(
            error.contains("rollback log run 1, block 2 (area [4, 0, -1]")
                && error.contains("its blob does not decode"),
            "{error}"
        );
    }

    #[test]
    fn a_file_that_is_no_backup_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("not.backup");
        std::fs::write(&path, b"hello, this is text").unwrap();
        let error = format!("{:#}", inspect(&path, None).unwrap_err());
        assert!(error.contains("is not a world backup"), "{error}");
        std::fs::write(&path, b"BWBK").unwrap();
        assert!(inspect(&path, None).is_err());
    }
}
