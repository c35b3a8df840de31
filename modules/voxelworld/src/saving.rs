//! When the world is written: a save asked for (and counted), what the
//! operator is told while saves fail (`durability.rs`), and the save at a
//! stop with its retries and recovery file.
//!
//! Owns: those calls' outcomes. Does not own: what a save writes
//! (`world/persistence.rs`).

use super::*;

impl VoxelWorld {
    /// The periodic save, a slice a tick once `voxelworld.save_interval_s`
    /// passed: a big save never holds up the calls and events behind it
    /// for long. What fails is kept dirty and retried at the next interval;
    /// the stream goes on serving meanwhile.
    pub(crate) fn save_slice(&mut self, dtime: f64) {
        self.since_save += dtime;
        if self.since_save < self.save_interval {
            return;
        }
        match self.world.save_some(Instant::now() + SAVE_SLICE) {
            Ok((saved, done)) => {
                self.sections_saved += u64::from(saved);
                if done {
                    self.saves += 1;
                }
                self.saved(Ok(()));
                if saved > 0 {
                    log::debug!("saved {saved} sections");
                }
                if done {
                    self.since_save = 0.0;
                }
            }
            Err(error) => {
                self.saved(Err(&error));
                self.since_save = 0.0;
            }
        }
    }

    pub(crate) fn save(&mut self) -> Result<u32, ModuleError> {
        let saved = self.world.save_all();
        if let Ok(count) = &saved {
            self.saves += 1;
            self.sections_saved += u64::from(*count);
        }
        self.saved(saved.as_ref().map(|_| ()));
        let saved = saved.map_err(ModuleError::from)?;
        if saved > 0 {
            log::debug!("saved {saved} sections");
        }
        Ok(saved)
    }

    /// Tells the operator when saving starts or stops failing (a warning a
    /// minute while it fails), without failing what called.
    pub(crate) fn saved(&mut self, outcome: Result<(), &WorldError>) {
        let now = Instant::now();
        match outcome {
            Ok(()) => {
                if let Some(line) = self.health.succeeded(now) {
                    log::warn!("{line}");
                }
            }
            Err(error) => {
                self.save_errors += 1;
                if let Some(line) = self.health.failed(error, self.world.unsaved_count(), now) {
                    log::error!("{line}");
                }
            }
        }
    }

    /// At stop: saves, retrying a few times; what storage still refuses
    /// goes to a recovery file (named in the log) taken back at the next
    /// start.
    pub(crate) fn save_at_stop(&mut self) {
        const ATTEMPTS: u32 = 3;
        for attempt in 1..=ATTEMPTS {
            match self.save() {
                Ok(saved) => {
                    log::info!("world saved ({saved} sections written)");
                    return;
                }
                Err(error) => {
                    log::error!(
                        "saving the world at stop, attempt {attempt} of {ATTEMPTS}: {error}"
                    );
                    if attempt < ATTEMPTS {
                        std::thread::sleep(std::time::Duration::from_secs(1));
                    }
                }
            }
        }
        match durability::write_recovery(&self.host.world_path(), &self.world) {
            Ok(Some(path)) => log::error!(
                "{} unsaved sections written to the recovery file {}; the next start takes them back",
                self.world.unsaved_count(),
                path.display()
            ),
            Ok(None) => {}
            Err(error) => log::error!(
                "cannot write a recovery file either ({error}): {} sections with changes are lost",
                self.world.unsaved_count()
            ),
        }
    }
}

/// The calls of this feature, in the module's receive table.
pub(crate) fn receive(table: &mut Receive<VoxelWorld>) {
    table.call(|world, _: Save| world.save());
}
