//! `backup FILE` and `restore FILE` as the module runs them: a backup
//! written from a storage snapshot on a thread of its own (watched each
//! tick, cancelled and joined before an unload), or at once headless; a
//! restore headless only, into a new world, with its `world.toml`.
//!
//! Owns: the running backup (the console's or the schedule's, which is
//! told its end). Does not own: the file's format and the copying
//! (`backup.rs`), when scheduled ones run (`backup_schedule.rs`).

use super::*;
use crate::commands::CommandError;

/// A backup writing on its own thread from a storage snapshot.
pub(crate) struct BackupRun {
    pub(crate) file: std::path::PathBuf,
    pub(crate) started: Instant,
    /// Sections written and the total, as the thread tells them.
    pub(crate) done: Arc<AtomicU64>,
    pub(crate) total: Arc<AtomicU64>,
    pub(crate) cancel: Arc<AtomicBool>,
    pub(crate) thread: std::thread::JoinHandle<Result<backup::BackupReport, backup::BackupError>>,
    pub(crate) last_report: Instant,
    /// Started by the schedule (`backup_schedule.rs`), which is told its end.
    pub(crate) scheduled: bool,
}

impl BackupRun {
    pub(crate) fn progress(&self) -> String {
        let (done, total) = (
            self.done.load(Ordering::Relaxed),
            self.total.load(Ordering::Relaxed),
        );
        format!(
            "{done}/{total} sections ({:.0}%) to {}",
            done as f64 * 100.0 / total.max(1) as f64,
            self.file.display()
        )
    }

    /// Waits for the thread and says how it ended.
    pub(crate) fn finish(self) -> String {
        let file = self.file.clone();
        let (outcome, seconds) = self.outcome();
        match outcome {
            Ok(report) => report.done_line(seconds),
            Err(why) => format!("backup to {} failed: {why}", file.display()),
        }
    }

    /// Waits for the thread: what it wrote or why it failed, and the
    /// seconds it took.
    pub(crate) fn outcome(self) -> (Result<backup::BackupReport, String>, f64) {
        let seconds = self.started.elapsed().as_secs_f64();
        let outcome = match self.thread.join() {
            Ok(Ok(report)) => Ok(report),
            Ok(Err(error)) => Err(error.to_string()),
            Err(_) => Err("its thread panicked".to_string()),
        };
        (outcome, seconds)
    }
}

/// A backup's failure, as the command tells it.
fn backup_error(error: backup::BackupError) -> CommandError {
    CommandError::Backup {
        what: "backup",
        error,
    }
}

impl VoxelWorld {
    /// `backup FILE`: saves, takes a snapshot of the storage, and writes
    /// it on a thread of its own (headless: at once, on this one).
    pub(crate) fn backup(&mut self, file: &Path) -> Result<String, CommandError> {
        self.start_backup(file, false)
    }

    /// [`Self::backup`], for the console or (`scheduled`) the schedule.
    pub(crate) fn start_backup(
        &mut self,
        file: &Path,
        scheduled: bool,
    ) -> Result<String, CommandError> {
        if let Some(run) = &self.backup_run {
            return Err(CommandError::Running {
                command: "backup",
                progress: run.progress(),
                what: "wait for it to finish",
            });
        }
        let file = file.to_path_buf();
        backup::check_new_file(&file).map_err(backup_error)?;
        let settings_path = self.host.world_path().join("world.toml");
        let settings =
            std::fs::read_to_string(&settings_path).map_err(|error| CommandError::File {
                what: "backup",
                path: settings_path.clone(),
                error,
            })?;
        self.save()?;
        // The log's edits up to now are in the backup too.
        self.flush_log();
        let mut snapshot = self
            .world
            .storage_mut()
            .snapshot()
            .map_err(|e| backup_error(e.into()))?;
        let started = Instant::now();
        if self.headless {
            let mut progress = backup::ProgressLog::new("backup");
            let report = backup::write_backup(
                snapshot.as_mut(),
                settings,
                &file,
                &AtomicBool::new(false),
                &mut |done, total| progress.tell(done, total),
            )
            .map_err(backup_error)?;
            return Ok(report.done_line(started.elapsed().as_secs_f64()));
        }
        let done = Arc::new(AtomicU64::new(0));
        let total = Arc::new(AtomicU64::new(0));
        let cancel = Arc::new(AtomicBool::new(false));
        let thread = {
            let (done, total, cancel, file) = (
                Arc::clone(&done),
                Arc::clone(&total),
                Arc::clone(&cancel),
                file.clone(),
            );
            std::thread::Builder::new()
                .name("voxelworld-backup".into())
                .spawn(move || {
                    backup::write_backup(
                        snapshot.as_mut(),
                        settings,
                        &file,
                        &cancel,
                        &mut |sections_done, sections_total| {
                            done.store(sections_done, Ordering::Relaxed);
                            total.store(sections_total, Ordering::Relaxed);
                        },
                    )
                })
                .map_err(ModuleError::from)?
        };
        self.backup_run = Some(BackupRun {
            file: file.clone(),
            started,
            done,
            total,
            cancel,
            thread,
            last_report: Instant::now(),
            scheduled,
        });
        Ok(format!(
            "backup started into {}: the world as saved now, written while the game goes on; \
             its progress is logged every second and `world` shows it",
            file.display()
        ))
    }

    /// A running backup's progress, a line a second, and its end.
    pub(crate) fn watch_backup(&mut self) {
        let Some(run) = &mut self.backup_run else {
            return;
        };
        if run.thread.is_finished() {
            if let Some(run) = self.backup_run.take() {
                if run.scheduled {
                    let file = run.file.clone();
                    let (outcome, seconds) = run.outcome();
                    self.scheduled_backup_ended(&file, outcome, seconds);
                } else {
                    log::info!("{}", run.finish());
                }
            }
            return;
        }
        if run.last_report.elapsed().as_secs_f64() >= 1.0 {
            run.last_report = Instant::now();
            log::info!("backup: {}", run.progress());
        }
    }

    /// `restore FILE`, headless, into this (new, empty) world: its
    /// sections, node id counter and section size; `world.toml` from the
    /// backup when this world's is still the default.
    pub(crate) fn restore_backup(&mut self, file: &Path) -> Result<String, CommandError> {
        if !self.headless {
            return Err(CommandError::RestoreWhileRunning);
        }
        let restore_error = |error| CommandError::Backup {
            what: "restore",
            error,
        };
        let mut backup = backup::BackupFile::open(file).map_err(restore_error)?;
        let started = Instant::now();
        log::info!(
            "restore: {} sections from {} (taken from {}) into {}",
            backup.meta().sections.len(),
            file.display(),
            backup.meta().source,
            self.world.storage_mut().location()
        );
        let mut progress = backup::ProgressLog::new("restore");
        let report = backup::restore(&mut backup, self.world.storage_mut(), &mut |done, total| {
            progress.tell(done, total)
        })
        .map_err(restore_error)?;
        let settings = self.restore_settings(&backup.meta().settings)?;
        Ok(format!(
            "restore done in {:.1} s: {} written and counted back; {settings}",
            started.elapsed().as_secs_f64(),
            report.describe(),
        ))
    }

    /// Writes `world.toml` from the backup's copy over this world's
    /// default one: the world's own fields only (name, seed, section
    /// size), parsed as TOML, and `storage` where this restore wrote
    /// (`world_toml::restored_world_toml`: a backup cannot redirect the
    /// world); keeps one the operator wrote.
    pub(crate) fn restore_settings(&self, backed_up: &str) -> Result<String, CommandError> {
        let path = self.host.world_path().join("world.toml");
        let current = std::fs::read_to_string(&path).unwrap_or_default();
        if current != DEFAULT_WORLD_TOML {
            return Ok(format!("{} kept as it was", path.display()));
        }
        let (text, why) = world_toml::restored_world_toml(backed_up, &self.storage_setting);
        files::rewrite_private(&path, text.as_bytes()).map_err(|error| CommandError::File {
            what: "restore",
            path: path.clone(),
            error,
        })?;
        Ok(match why {
            None => format!(
                "{} written from the backup (name, seed, section size)",
                path.display()
            ),
            Some(why) => format!("{} written: {why}", path.display()),
        })
    }
}
