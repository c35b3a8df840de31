//! `buildat-server inspect FILE [--section X,Y,Z]`: what a world backup
//! holds, read from its index (and one section's record), with no world,
//! no module and no server.
//!
//! Owns: reading a backup's head and index from the file, listing its
//! sections with their sizes, counting modules' values by space (never
//! showing them: they hold password verifiers), and listing one section's
//! nodes from their markers and bodies. Does not own: the backup's layout
//! (`buildat_format::backup`, docs/formats.md §10) or what nodes mean
//! (voxelworld writes and restores backups).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use anyhow::{Context, bail};
use buildat_format::backup::{BackupReader, BackupSection, BackupValue, check_backup_payload};
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
         {} sections, {nodes} nodes, {:.1} MB of section records and values\n\
         {}\n",
        path.display(),
        ago(now.saturating_sub(meta.taken_unix_s)),
        meta.taken_unix_s,
        meta.source,
        meta.next_node_id,
        meta.sections.len(),
        backup.payload_len() as f64 / 1e6,
        describe_values(&meta.values),
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

    #[test]
    fn sections_are_read_as_three_numbers() {
        assert_eq!(parse_section("1,-2, 3"), Ok([1, -2, 3]));
        assert!(parse_section("1,2").is_err());
        assert!(parse_section("1,x,3").is_err());
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
