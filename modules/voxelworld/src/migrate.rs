//! Copying a world from one storage to another (SQLite to PostgreSQL and
//! back): the `migrate --to LOCATION` console command, also run headless
//! (`buildat-server --world DIR migrate --to postgresql://...`).
//!
//! Owns: the copy (section by section, each written in one transaction of
//! the destination, so an interrupted run leaves whole sections; then
//! modules' values, a thousand to a transaction; then the rollback log's
//! blocks as stored, a page of [`crate::storage::LOG_PAGE`] to a
//! transaction, counted on both sides), the node
//! id counter carried over before any node (the destination never hands out
//! an id the source did), the checks before (same section size, an empty
//! destination, not the source itself) and the verification after (sections
//! nodes and values counted on both sides).
//! Does not own: the backends (`storage.rs`, `storage/postgresql.rs`), saving
//! what is in memory first (`lib.rs`), or the quarantine table (damaged
//! sections set aside stay in the source).

use crate::storage::{StorageCounts, StorageError, ValueWrite, WorldStorage};

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MigrateError {
    #[error(transparent)]
    Storage(#[from] StorageError),
    #[error("{destination} is the world's own storage")]
    SameStorage { destination: String },
    #[error(
        "{destination} already holds {}: migrate into an empty database",
        counts.describe()
    )]
    NotEmpty {
        destination: String,
        counts: StorageCounts,
    },
    #[error(
        "{destination} was made with sections of {destination_size:?} chunks, the world's are {source_size:?}"
    )]
    SectionSize {
        destination: String,
        source_size: [i32; 3],
        destination_size: [i32; 3],
    },
    #[error(
        "verification failed: the source holds {}, the destination {}",
        from.describe(),
        to.describe()
    )]
    Mismatch {
        from: StorageCounts,
        to: StorageCounts,
    },
    #[error(
        "verification failed: {copied} blocks of the rollback log copied, the destination holds {found}"
    )]
    LogMismatch { copied: u64, found: u64 },
}

/// What a migration copied, and the counts that verified it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MigrateReport {
    pub sections: u64,
    pub nodes: u64,
    pub values: u64,
    /// The rollback log's blocks.
    pub log_blocks: u64,
    pub source: StorageCounts,
    pub destination: StorageCounts,
}

/// Copies every section of `source` into the empty `destination`, telling
/// `progress` (sections done, total) after each; verifies the counts.
pub fn migrate(
    source: &mut dyn WorldStorage,
    destination: &mut dyn WorldStorage,
    mut progress: impl FnMut(u64, u64),
) -> Result<MigrateReport, MigrateError> {
    let shown = destination.location();
    if shown == source.location() {
        return Err(MigrateError::SameStorage { destination: shown });
    }
    if destination.section_size() != source.section_size() {
        return Err(MigrateError::SectionSize {
            destination: shown,
            source_size: source.section_size().0,
            destination_size: destination.section_size().0,
        });
    }
    let already = destination.counts()?;
    if already != StorageCounts::default() {
        return Err(MigrateError::NotEmpty {
            destination: shown,
            counts: already,
        });
    }
    destination.raise_next_node_id(source.next_node_id()?)?;
    let positions = source.section_positions()?;
    let total = positions.len() as u64;
    let (mut sections, mut nodes) = (0, 0);
    for pos in positions {
        // A section quarantined meanwhile is gone: nothing to copy.
        if let Some(section) = source.load_section(pos)? {
            destination.save_section(&section)?;
            sections += 1;
            nodes += section.nodes.len() as u64;
        }
        progress(sections, total);
    }
    let writes: Vec<ValueWrite> = source
        .all_values()?
        .into_iter()
        .map(|value| ValueWrite {
            space: value.space,
            key: value.key,
            value: Some(value.value),
            only_if_absent: false,
        })
        .collect();
    for batch in writes.chunks(buildat_voxelworld_api::MAX_VALUE_WRITES) {
        destination.put_values(batch)?;
    }
    let values = writes.len() as u64;
    let log_blocks = crate::storage::each_log_page(
        |skip, limit| source.log_page(skip, limit),
        |blocks| destination.append_log(&blocks).map_err(MigrateError::from),
    )?;
    let found = crate::storage::each_log_page(
        |skip, limit| destination.log_page(skip, limit),
        |_| Ok::<(), MigrateError>(()),
    )?;
    if found != log_blocks {
        return Err(MigrateError::LogMismatch {
            copied: log_blocks,
            found,
        });
    }
    let source_counts = source.counts()?;
    let destination_counts = destination.counts()?;
    let copied = StorageCounts {
        sections,
        nodes,
        values,
    };
    if source_counts != destination_counts || destination_counts != copied {
        return Err(MigrateError::Mismatch {
            from: source_counts,
            to: destination_counts,
        });
    }
    Ok(MigrateReport {
        sections,
        nodes,
        values,
        log_blocks,
        source: source_counts,
        destination: destination_counts,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::StoredSection;
    use crate::storage::testing::{each_backend, log_blocks, sqlite_world, whole_log};
    use buildat_voxel::geometry::SectionSize;

    fn fill(storage: &mut dyn WorldStorage) {
        let ids = storage.reserve_node_ids(1000).unwrap();
        for i in 0..20 {
            storage
                .save_section(&StoredSection {
                    pos: [i % 5, i / 5 - 2, -i],
                    save_enabled: i % 3 != 0,
                    generated: true,
                    nodes: (0..(i as u64 % 4))
                        .map(|n| {
                            (
                                ids.start + i as u64 * 10 + n,
                                vec![i as u8; 100 + n as usize],
                            )
                        })
                        .collect(),
                })
                .unwrap();
        }
        let values: Vec<ValueWrite> = (0..1500)
            .map(|i| ValueWrite {
                space: "main.accounts".into(),
                key: format!("player{i}"),
                value: Some(vec![i as u8; i % 7]),
                only_if_absent: true,
            })
            .collect();
        for batch in values.chunks(1000) {
            assert!(storage.put_values(batch).unwrap());
        }
        storage.append_log(&log_blocks(0..600)).unwrap();
    }

    #[test]
    fn a_world_goes_there_and_back_whole() {
        for middle in each_backend() {
            let backend = middle.backend;
            let size = SectionSize([2, 1, 2]);
            let origin = sqlite_world();
            let mut source = origin.open(size);
            fill(source.as_mut());
            let mut there = middle.open(size);
            let mut seen = Vec::new();
            let report = migrate(source.as_mut(), there.as_mut(), |done, total| {
                seen.push((done, total))
            })
            .unwrap();
            assert_eq!(report.sections, 20, "{backend}");
            assert_eq!(
                report.nodes,
                (0..20).map(|i| i % 4).sum::<u64>(),
                "{backend}"
            );
            assert_eq!(report.values, 1500, "{backend}");
            assert_eq!(report.log_blocks, 600, "{backend}");
            assert_eq!(whole_log(there.as_mut()), log_blocks(0..600), "{backend}");
            assert_eq!(report.source, report.destination);
            assert_eq!(seen.last(), Some(&(20, 20)));
            assert_eq!(
                there.next_node_id().unwrap(),
                1001,
                "{backend}: ids carried"
            );

            let back_world = sqlite_world();
            let mut back = back_world.open(size);
            migrate(there.as_mut(), back.as_mut(), |_, _| {}).unwrap();
            for pos in source.section_positions().unwrap() {
                assert_eq!(
                    back.load_section(pos).unwrap(),
                    source.load_section(pos).unwrap(),
                    "{backend}: {pos:?}"
                );
            }
            assert_eq!(back.all_values().unwrap(), source.all_values().unwrap());
            assert_eq!(
                whole_log(back.as_mut()),
                log_blocks(0..600),
                "{backend}: the log"
            );
            assert!(back.reserve_node_ids(1).unwrap().start >= 1001);

            let error = migrate(source.as_mut(), there.as_mut(), |_, _| {})
                .unwrap_err()
                .to_string();
            assert!(
                error.contains("already holds 20 sections, 30 nodes and 1500 values"),
                "{error}"
            );
        }
    }

    #[test]
    fn another_section_size_or_itself_is_refused() {
        for other in each_backend() {
            let origin = sqlite_world();
            let mut source = origin.open(SectionSize([2, 2, 2]));
            let mut destination = other.open(SectionSize([4, 4, 4]));
            let error = migrate(source.as_mut(), destination.as_mut(), |_, _| {})
                .unwrap_err()
                .to_string();
            assert!(error.contains("sections of [4, 4, 4]"), "{error}");
            let mut again = origin.open(SectionSize([2, 2, 2]));
            let error = migrate(source.as_mut(), again.as_mut(), |_, _| {})
                .unwrap_err()
                .to_string();
            assert!(error.contains("the world's own storage"), "{error}");
        }
    }
}
