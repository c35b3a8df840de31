//! `buildat-harness inflate --world DIR --bytes N`: makes a stopped
//! world's SQLite database at least N bytes of node data by copying its
//! stored sections, shifted along x past what is there, with new node ids:
//! a world as big as a long-played one in minutes, for the backup and
//! storage figures (docs/RELIABILITY.md), without hours of generation.
//!
//! Owns: the copy (static chunk nodes re-encoded at their new chunk, new
//! ids from the world's counter, one transaction per copy of the world,
//! progress each copy). Does not own: the world's schema (voxelworld's
//! `storage.rs`; this reads and writes its tables as they are) or dynamic
//! nodes (not copied: a copy holds terrain only).

use std::path::PathBuf;

use anyhow::Context;
use buildat_voxelworld_api::{StoredNode, StoredNodeKind};
use rusqlite::{Connection, params};

#[derive(Debug, Clone, clap::Args)]
pub struct InflateOptions {
    /// The world directory (its server stopped; SQLite storage).
    #[arg(long)]
    pub world: PathBuf,
    /// Node data to reach, in bytes (e.g. 1000000000).
    #[arg(long)]
    pub bytes: u64,
}

type Section = (i32, i32, i32, bool, bool);

pub fn run(options: &InflateOptions) -> anyhow::Result<bool> {
    let path = options.world.join("world.sqlite");
    let mut db = Connection::open(&path).with_context(|| format!("opening {}", path.display()))?;
    let [width, ..]: [i32; 3] = db
        .query_row("SELECT w, h, d FROM section_size", [], |r| {
            Ok([r.get(0)?, r.get(1)?, r.get(2)?])
        })
        .context("the world's section size")?;
    let sections: Vec<Section> = db
        .prepare("SELECT sx, sy, sz, save_enabled, generated FROM section")?
        .query_map([], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })?
        .collect::<Result<_, _>>()?;
    let (Some(min_x), Some(max_x)) = (
        sections.iter().map(|s| s.0).min(),
        sections.iter().map(|s| s.0).max(),
    ) else {
        anyhow::bail!("{}: no section to copy (pregen first)", path.display());
    };
    let chunks: Vec<(i32, i32, i32, StoredNode)> = db
        .prepare("SELECT sx, sy, sz, data FROM node")?
        .query_map([], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get::<_, Vec<u8>>(3)?))
        })?
        .filter_map(|row| {
            let (x, y, z, data) = row.ok()?;
            let node: StoredNode = buildat_interface::decode(&data).ok()?;
            matches!(node.kind, StoredNodeKind::StaticChunk { .. }).then_some((x, y, z, node))
        })
        .collect();
    let mut total: u64 =
        db.query_row("SELECT coalesce(sum(length(data)), 0) FROM node", [], |r| {
            r.get::<_, i64>(0)
        })? as u64;
    // Copy k (from 1) sits k spans along x, a gap of one section between.
    let span = max_x - min_x + 2;
    let mut copies = 0;
    while total < options.bytes {
        let shift = span * (copies + 1);
        let transaction = db.transaction()?;
        let mut next_id: i64 = transaction.query_row(
            "SELECT value FROM meta WHERE key = 'next_node_id'",
            [],
            |r| r.get(0),
        )?;
        {
            let mut add_section = transaction.prepare(
                "INSERT OR REPLACE INTO section (sx, sy, sz, save_enabled, generated) VALUES (?1, ?2, ?3, ?4, ?5)",
            )?;
            for (x, y, z, save_enabled, generated) in &sections {
                add_section.execute(params![x + shift, y, z, save_enabled, generated])?;
            }
            let mut add_node = transaction
                .prepare("INSERT INTO node (id, sx, sy, sz, data) VALUES (?1, ?2, ?3, ?4, ?5)")?;
            for (x, y, z, node) in &chunks {
                let mut node = node.clone();
                if let StoredNodeKind::StaticChunk { chunk } = &mut node.kind {
                    chunk[0] += shift * width;
                }
                let data = buildat_interface::encode(&node)?;
                add_node.execute(params![next_id, x + shift, y, z, data])?;
                next_id += 1;
                total += data.len() as u64;
            }
        }
        transaction.execute(
            "UPDATE meta SET value = ?1 WHERE key = 'next_node_id'",
            params![next_id],
        )?;
        transaction.commit()?;
        copies += 1;
        println!(
            "inflate: {copies} copies, {:.0} of {:.0} MB of node data",
            total as f64 / 1e6,
            options.bytes as f64 / 1e6
        );
    }
    let sections: i64 = db.query_row("SELECT count(*) FROM section", [], |r| r.get(0))?;
    println!(
        "inflate: {} holds {sections} sections, {:.0} MB of node data",
        path.display(),
        total as f64 / 1e6
    );
    Ok(true)
}
