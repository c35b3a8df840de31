//! Reading back what the `world_probe` fixture saved: the round number each
//! of its sections holds in a world database (the world's SQLite file or
//! its PostgreSQL database), decoded from the voxels.
//!
//! Owns: the probe's layout mirrored on the reading side (sections, bit
//! places), reading a section's node rows and the database's soundness
//! from either backend, and the decoding of a section's stored chunks.
//! Does not own: writing (the fixture) or the verdicts (`crashtest`).

use std::collections::HashMap;

use anyhow::Context;
use buildat_format::decode_voxels;
use buildat_voxel::geometry;
use buildat_voxelworld_api::{StoredNode, StoredNodeKind, VAR_VOXEL_DATA};
use rusqlite::{Connection, params};

/// The fixture's sections (tests/modules/world_probe).
/// High in the sky (y 256..320), above any terrain, so a fresh world holds
/// air at every bit place.
pub const SECTIONS: [[i32; 3]; 4] = [[0, 4, 0], [1, 4, 0], [2, 4, 0], [3, 4, 0]];

/// The 32 places of a section that carry a round's bits (as the fixture).
pub fn bit_place(section: [i32; 3], bit: i32) -> [i32; 3] {
    [
        section[0] * 64 + bit,
        section[1] * 64 + 40,
        section[2] * 64 + 5,
    ]
}

/// A world database opened for reading back.
pub enum WorldDb {
    Sqlite(Connection),
    Postgres(postgres::Client),
}

impl WorldDb {
    /// The world's SQLite file.
    pub fn sqlite(path: &std::path::Path) -> anyhow::Result<Self> {
        Ok(Self::Sqlite(
            Connection::open(path).with_context(|| format!("opening {}", path.display()))?,
        ))
    }

    /// A world's PostgreSQL database.
    pub fn postgres(url: &str) -> anyhow::Result<Self> {
        Ok(Self::Postgres(
            postgres::Client::connect(url, postgres::NoTls)
                .context("connecting to the world database")?,
        ))
    }

    /// "ok" when sound: SQLite's `PRAGMA integrity_check`; in PostgreSQL
    /// (which keeps its own pages sound), no node outside a stored section.
    pub fn integrity(&mut self) -> anyhow::Result<String> {
        match self {
            Self::Sqlite(connection) => integrity(connection),
            Self::Postgres(client) => {
                let orphans: i64 = client
                    .query_one(
                        "SELECT count(*) FROM node n WHERE NOT EXISTS (SELECT 1 FROM section s
                         WHERE s.sx = n.sx AND s.sy = n.sy AND s.sz = n.sz)",
                        &[],
                    )
                    .context("counting nodes outside sections")?
                    .get(0);
                Ok(if orphans == 0 {
                    "ok".into()
                } else {
                    format!("{orphans} nodes outside sections")
                })
            }
        }
    }

    /// The data of a section's node rows.
    pub fn node_rows(&mut self, section: [i32; 3]) -> anyhow::Result<Vec<Vec<u8>>> {
        let [x, y, z] = section;
        match self {
            Self::Sqlite(connection) => {
                let mut statement = connection
                    .prepare("SELECT data FROM node WHERE sx = ?1 AND sy = ?2 AND sz = ?3")
                    .context("querying nodes")?;
                let rows = statement
                    .query_map(params![x, y, z], |r| r.get(0))?
                    .collect::<Result<_, _>>()
                    .context("reading nodes")?;
                Ok(rows)
            }
            Self::Postgres(client) => Ok(client
                .query(
                    "SELECT data FROM node WHERE sx = $1 AND sy = $2 AND sz = $3",
                    &[&x, &y, &z],
                )
                .context("reading nodes")?
                .iter()
                .map(|row| row.get(0))
                .collect()),
        }
    }

    /// The round a section holds (see [`stored_round`]).
    pub fn stored_round(&mut self, section: [i32; 3]) -> anyhow::Result<Option<u64>> {
        round_of(self.node_rows(section)?, section)
    }
}

/// `PRAGMA integrity_check`'s verdict ("ok" when sound).
pub fn integrity(connection: &Connection) -> anyhow::Result<String> {
    connection
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .context("PRAGMA integrity_check")
}

/// The round a section holds: None if its bit places hold neither stone
/// nor dirt (the probe never wrote it); an error if the section is not
/// whole or does not decode.
pub fn stored_round(connection: &Connection, section: [i32; 3]) -> anyhow::Result<Option<u64>> {
    let mut statement = connection
        .prepare("SELECT data FROM node WHERE sx = ?1 AND sy = ?2 AND sz = ?3")
        .context("querying nodes")?;
    let rows: Vec<Vec<u8>> = statement
        .query_map(params![section[0], section[1], section[2]], |r| r.get(0))?
        .collect::<Result<_, _>>()
        .context("reading nodes")?;
    round_of(rows, section)
}

/// The round a section's node rows hold (see [`stored_round`]).
fn round_of(rows: Vec<Vec<u8>>, section: [i32; 3]) -> anyhow::Result<Option<u64>> {
    let mut chunks = HashMap::new();
    for data in rows {
        let node: StoredNode = buildat_interface::decode(&data).context("a node decodes")?;
        if let StoredNodeKind::StaticChunk { chunk } = node.kind {
            let blob = node
                .vars
                .get(VAR_VOXEL_DATA)
                .context("a chunk node has voxel data")?;
            let voxels = decode_voxels(
                blob,
                |name| {
                    Some(match name {
                        "stone" => 1,
                        "dirt" => 0,
                        _ => 2,
                    })
                },
                2,
            )
            .context("a chunk's voxels decode")?
            .voxels;
            chunks.insert(chunk, voxels);
        }
    }
    anyhow::ensure!(
        chunks.len() == 8,
        "section {section:?} is not whole: {} chunk nodes",
        chunks.len()
    );
    let mut round = 0u64;
    for bit in 0..32 {
        let place = bit_place(section, bit);
        let voxels = chunks
            .get(&geometry::chunk_of_voxel(place))
            .context("the bit's chunk is stored")?;
        match voxels.get(geometry::index_in_chunk(place)) {
            Some(1) => round |= 1 << bit,
            Some(0) => {}
            _ => return Ok(None),
        }
    }
    Ok(Some(round))
}
