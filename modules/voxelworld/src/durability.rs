//! No silent data loss when the disk fails: the warning an operator sees
//! while saves fail, and the recovery file written at stop when storage
//! still refuses the edits, taken back at the next start.
//!
//! Owns: [`SaveHealth`] (one clear warning repeated every
//! [`WARN_EVERY`], not one per tick, and a line when saving works again)
//! and the recovery files `<world>/recovery-<ms>.bin` (mode 0600; the unsaved
//! sections as storage records, voxels by name). Does not own: when to
//! save (`lib.rs`) or sections (`world.rs`).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use buildat_interface::{decode, encode, log};
use buildat_voxel::geometry::Pos;
use serde::{Deserialize, Serialize};

use crate::storage::StoredSection;
use crate::world::{World, WorldError};

/// How often the "cannot save" warning repeats while saves fail.
pub const WARN_EVERY: Duration = Duration::from_secs(60);

/// Whether saves are failing, and when the operator was last told.
#[derive(Debug, Default)]
pub struct SaveHealth {
    failing_since: Option<Instant>,
    warned: Option<Instant>,
}

impl SaveHealth {
    /// A save failed with `error`, `unsaved` sections waiting: the warning
    /// to log now, if one is due.
    pub fn failed(&mut self, error: &WorldError, unsaved: usize, now: Instant) -> Option<String> {
        let since = *self.failing_since.get_or_insert(now);
        if self
            .warned
            .is_some_and(|warned| now.saturating_duration_since(warned) < WARN_EVERY)
        {
            return None;
        }
        self.warned = Some(now);
        Some(format!(
            "cannot save the world for {:.0} s: {error}; {unsaved} sections with changes are \
             kept in memory and retried (this warning repeats every {} s until a save works)",
            now.saturating_duration_since(since).as_secs_f64(),
            WARN_EVERY.as_secs()
        ))
    }

    /// A save worked: the line to log, if saves had been failing.
    pub fn succeeded(&mut self, now: Instant) -> Option<String> {
        let since = self.failing_since.take()?;
        self.warned = None;
        Some(format!(
            "saving the world works again after {:.0} s of failures",
            now.saturating_duration_since(since).as_secs_f64()
        ))
    }
}

/// A section in a recovery file (and in the reload stash): a storage
/// record that crosses bytes.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StashedSection {
    pub pos: Pos,
    pub save_enabled: bool,
    pub dirty: bool,
    pub nodes: Vec<(u64, Vec<u8>)>,
}

impl StashedSection {
    pub fn from_stored(stored: StoredSection, dirty: bool) -> Self {
        Self {
            pos: stored.pos,
            save_enabled: stored.save_enabled,
            dirty,
            nodes: stored.nodes,
        }
    }

    pub fn into_stored(self) -> StoredSection {
        StoredSection {
            pos: self.pos,
            save_enabled: self.save_enabled,
            generated: true,
            nodes: self.nodes,
        }
    }
}

const RECOVERY_PREFIX: &str = "recovery-";
const RECOVERY_SUFFIX: &str = ".bin";

/// Writes the world's unsaved sections to a new recovery file in `dir`;
/// its path, or `None` when nothing was unsaved.
pub fn write_recovery(dir: &Path, world: &World) -> Result<Option<PathBuf>, String> {
    let sections: Vec<StashedSection> = world
        .unsaved_sections()
        .map_err(|e| e.to_string())?
        .into_iter()
        .map(|stored| StashedSection::from_stored(stored, true))
        .collect();
    if sections.is_empty() {
        return Ok(None);
    }
    let millis = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let path = dir.join(format!("{RECOVERY_PREFIX}{millis}{RECOVERY_SUFFIX}"));
    let bytes = encode(&sections).map_err(|e| e.to_string())?;
    let temporary = path.with_extension("tmp");
    crate::files::rewrite_private(&temporary, &bytes)
        .and_then(|()| std::fs::rename(&temporary, &path))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(Some(path))
}

/// Writes every recovery file's sections in `dir` to storage, oldest file
/// first (a later one holds later edits), and removes each file once all
/// of it is stored; answers how many sections came back. A file that
/// cannot be read or stored is kept and reported.
pub fn take_back_recovery(dir: &Path, world: &mut World) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| {
            path.file_name()
                .and_then(|name| name.to_str())
                .is_some_and(|name| {
                    name.starts_with(RECOVERY_PREFIX) && name.ends_with(RECOVERY_SUFFIX)
                })
        })
        .collect();
    files.sort();
    let mut recovered = 0;
    for path in files {
        let sections = std::fs::read(&path)
            .map_err(|e| e.to_string())
            .and_then(|bytes| decode::<Vec<StashedSection>>(&bytes).map_err(|e| e.to_string()));
        let stored = sections.and_then(|sections| {
            let count = sections.len();
            for section in sections {
                world
                    .write_stored(&section.into_stored())
                    .map_err(|e| e.to_string())?;
            }
            Ok(count)
        });
        match stored {
            Ok(count) => {
                recovered += count;
                log::warn!("took back {count} unsaved sections from {}", path.display());
                if let Err(error) = std::fs::remove_file(&path) {
                    log::warn!("cannot remove {}: {error}", path.display());
                }
            }
            Err(error) => log::error!(
                "cannot take back the recovery file {}: {error}; it is kept for the next start",
                path.display()
            ),
        }
    }
    recovered
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;

    use super::*;
    use crate::world::Loaded;
    use crate::world::tests::{faulty, generate};

    #[test]
    fn the_warning_repeats_once_a_minute_not_once_a_tick() {
        let mut health = SaveHealth::default();
        let now = Instant::now();
        let error = WorldError::NotGenerated([0, 0, 0]);
        assert!(health.succeeded(now).is_none(), "nothing to report");
        let first = health.failed(&error, 3, now).expect("told at once");
        assert!(first.contains("3 sections"), "{first}");
        for tick in 1..600 {
            let at = now + Duration::from_millis(100 * tick);
            assert!(health.failed(&error, 3, at).is_none(), "tick {tick}");
        }
        assert!(health.failed(&error, 3, now + WARN_EVERY).is_some());
        let back = health.succeeded(now + WARN_EVERY).expect("told");
        assert!(back.contains("works again"), "{back}");
    }

    #[test]
    fn edits_refused_at_stop_come_back_at_the_next_start() {
        let dir = tempfile::tempdir().unwrap();
        let (mut world, faults) = faulty(dir.path(), 64);
        generate(&mut world, [0, 0, 0], "stone");
        world.set_section_save_enabled([0, 0, 0], true).unwrap();
        let stone = world.voxels.get_id("stone").unwrap();
        world.set_voxel([3, 2, 1], stone).unwrap();
        faults.writes.store(true, Ordering::Relaxed);
        assert!(world.save_all().is_err());
        let path = write_recovery(dir.path(), &world)
            .unwrap()
            .expect("a recovery file");
        assert_eq!(crate::files::get_mode(&path), Some(0o600), "private");
        drop(world);

        // The next start: storage still fails, so the file stays.
        let (mut world, faults) = faulty(dir.path(), 64);
        faults.writes.store(true, Ordering::Relaxed);
        assert_eq!(take_back_recovery(dir.path(), &mut world), 0);
        assert!(path.exists(), "kept while storage fails");
        faults.writes.store(false, Ordering::Relaxed);
        assert_eq!(take_back_recovery(dir.path(), &mut world), 1);
        assert!(!path.exists(), "removed once taken back");
        assert_eq!(world.load_section([0, 0, 0]).unwrap(), Loaded::Ready);
        assert_eq!(world.get_voxel([3, 2, 1]).unwrap(), Some(stone));
        assert!(write_recovery(dir.path(), &world).unwrap().is_none());
    }
}
