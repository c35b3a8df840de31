//! The console's commands: `pregen`, `migrate`, `backup` (and `backup
//! status`), `restore` and
//! `world`, registered at start (and headless, `buildat-server --world DIR
//! pregen ...`), parsed and run.
//!
//! Owns: their names, usage, help and answers, and `migrate`'s run. Does
//! not own: a backup's run (`backup_run.rs`), a pregen's (`generating.rs`).

use super::*;

/// Why a console command of the world's is refused or fails.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CommandError {
    /// Words that parse but do not make a command.
    #[error("{0}")]
    Usage(String),
    /// Another run of the command is on (its progress).
    #[error("a {command} is running ({progress}); {what}")]
    Running {
        command: &'static str,
        progress: String,
        what: &'static str,
    },
    #[error(
        "restore builds a new world while no server runs on it: buildat-server restore FILE --world NEWDIR"
    )]
    RestoreWhileRunning,
    #[error("{what}: {error}")]
    Backup {
        what: &'static str,
        #[source]
        error: backup::BackupError,
    },
    #[error("{what}: {path}: {error}")]
    File {
        what: &'static str,
        path: PathBuf,
        #[source]
        error: std::io::Error,
    },
    #[error(transparent)]
    Storage(#[from] storage::StorageError),
    #[error("migrate: {0}")]
    Migrate(#[from] migrate::MigrateError),
    /// What the command asked of the world or of another module.
    #[error(transparent)]
    World(#[from] ModuleError),
}

impl From<CommandError> for ModuleError {
    fn from(error: CommandError) -> Self {
        match error {
            CommandError::World(error) => error,
            error => ModuleError::msg(error.to_string()),
        }
    }
}

/// `pregen`: generate and save a region ahead of time.
#[derive(clap::Parser)]
#[command(
    name = "pregen",
    about = "generate and save the sections within N of the origin (y within H, default 1); \
             on a running server in the background, a slice each tick; `pregen stop` ends it",
    override_usage = "pregen --radius N [--height H] | stop",
    args_conflicts_with_subcommands = true
)]
struct PregenArgs {
    #[command(subcommand)]
    stop: Option<PregenStop>,
    /// Sections within N of the origin in x and z (at most 1024).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(0..=1024))]
    radius: Option<u32>,
    /// Sections within H of the origin in y (at most 1024).
    #[arg(long, value_name = "H", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(0..=1024))]
    height: u32,
    /// Also light every chunk as its section is generated, as Luanti does
    /// (headless only; light is never stored, so this only measures it).
    #[arg(long)]
    light: bool,
}

#[derive(clap::Subcommand)]
enum PregenStop {
    /// End the running pregen (what it generated stays saved).
    Stop,
}

/// `migrate --to LOCATION`.
#[derive(clap::Parser)]
#[command(
    name = "migrate",
    about = "copy the world into another, empty storage and verify the copy"
)]
struct MigrateArgs {
    /// sqlite, sqlite:PATH or postgresql://USER@HOST/DB.
    #[arg(long, value_name = "sqlite|sqlite:PATH|postgresql://USER@HOST/DB")]
    to: String,
}

/// `backup FILE | status`.
#[derive(clap::Parser)]
#[command(
    name = "backup",
    about = "write the world as saved now into FILE (one file, docs/formats.md §10) while \
             players play; its progress is logged every second; `backup status`: the \
             schedule (backup.every) and how the last scheduled one ended",
    override_usage = "backup FILE | status",
    args_conflicts_with_subcommands = true
)]
struct BackupArgs {
    #[command(subcommand)]
    status: Option<BackupStatusArg>,
    /// The file to write (one named `status`: `./status`).
    file: Option<PathBuf>,
}

#[derive(clap::Subcommand)]
enum BackupStatusArg {
    /// The schedule and how the last scheduled backup ended.
    Status,
}

/// `restore FILE`, or `restore` (the last rollback undone).
#[derive(clap::Parser)]
#[command(
    name = "restore",
    about = "restore FILE: a backup, headless only, into a new world: buildat-server restore FILE \
             --world NEWDIR; restore (no FILE): undoes the last `rollback confirm`",
    override_usage = "restore [FILE]"
)]
struct RestoreArgs {
    /// The backup (none: undo the last `rollback confirm`).
    file: Option<PathBuf>,
}

/// `world`.
#[derive(clap::Parser)]
#[command(
    name = "world",
    about = "sections in memory, changes not saved yet, how light was kept up to date"
)]
struct WorldArgs {}

/// The world's console commands (also headless: `buildat-server --world
/// DIR pregen --radius N`), in the module's receive table.
pub(crate) fn receive(table: &mut Receive<VoxelWorld>) {
    table
        .command(None, |world, _, asked: PregenArgs| {
            Ok(world.pregen_command(asked)?)
        })
        .command(None, |world, _, asked: MigrateArgs| {
            Ok(world.migrate(&asked.to)?)
        })
        .command(None, |world, _, asked: BackupArgs| {
            match (asked.status, asked.file) {
                (Some(BackupStatusArg::Status), _) => {
                    Ok(backup_schedule::describe(&world.backup_status()))
                }
                (None, Some(file)) => Ok(world.backup(&file)?),
                (None, None) => Err(ModuleError::from(CommandError::Usage(
                    "backup: a FILE is required; usage: backup FILE | backup status".into(),
                ))),
            }
        })
        .command(Some("server"), |world, _, asked: RestoreArgs| {
            match asked.file {
                Some(file) => Ok(world.restore_backup(&file)?),
                None => world.restore_rollback(),
            }
        })
        .command(
            Some("server"),
            |world, _, _: WorldArgs| Ok(world.describe()),
        );
}

impl VoxelWorld {
    /// The `world` command's answer.
    pub(crate) fn describe(&self) -> String {
        let light = self.world.light_counts;
        let mut running = match &self.pregen_run {
            Some(run) => format!("; pregen running: {}", run.progress()),
            None => String::new(),
        };
        if let Some(run) = &self.backup_run {
            running.push_str(&format!("; backup running: {}", run.progress()));
        }
        format!(
            "world: {} sections in memory, {} with unsaved changes; light: {} edits updated \
             in place, {} chunks lit whole, {}; generation: {} sections asked, {} cancelled \
             (nobody wanted them any more){running}",
            self.world.loaded_sections(),
            self.world.unsaved_count(),
            light.in_place,
            light.whole,
            if self.world.light_pending() {
                "more to light"
            } else {
                "up to date"
            },
            self.generation.len(),
            self.generation.cancelled
        )
    }

    /// `pregen`: a run started (headless: to its end), or stopped.
    fn pregen_command(&mut self, asked: PregenArgs) -> Result<String, CommandError> {
        if asked.stop.is_some() {
            return Ok(match self.pregen_run.take() {
                Some(run) => format!(
                    "pregen stopped at {}; what it generated is saved",
                    run.progress()
                ),
                None => "no pregen is running".into(),
            });
        }
        let Some(radius) = asked.radius else {
            return Err(CommandError::Usage(
                "pregen: --radius is required; usage: pregen --radius N [--height H] | pregen stop"
                    .into(),
            ));
        };
        if let Some(run) = &self.pregen_run {
            return Err(CommandError::Running {
                command: "pregen",
                progress: run.progress(),
                what: "`pregen stop` ends it",
            });
        }
        let (radius, height) = (radius as i32, asked.height as i32);
        if self.headless {
            let (report, lit) = self.pregen(radius, height, asked.light)?;
            let mut answer = format!(
                "pregen done: {} sections generated, {} already present",
                report.generated, report.already_present
            );
            if let Some((chunks, seconds)) = lit {
                answer.push_str(&format!("; lit {chunks} chunks in {seconds:.2} s"));
            }
            return Ok(answer);
        }
        if asked.light {
            return Err(CommandError::Usage(
                "pregen: --light only headless (`buildat-server --world DIR pregen --radius N --light`)"
                    .into(),
            ));
        }
        let run = self.plan_pregen(radius, height, pregen::LIVE_BATCH)?;
        if run.is_finished() {
            return Ok(format!(
                "pregen: nothing to do, {} sections already present",
                run.report.already_present
            ));
        }
        let answer = format!(
            "pregen started: {} sections to generate, {} already present; it runs between \
             ticks, its progress is logged every second, `pregen stop` ends it",
            run.total(),
            run.report.already_present
        );
        self.pregen_run = Some(run);
        Ok(answer)
    }

    /// Copies the world, saved first, into the empty storage at `to`, with
    /// a progress line a second, and checks the counts on both sides.
    pub(crate) fn migrate(&mut self, to: &str) -> Result<String, CommandError> {
        let location = StorageLocation::parse(to, &self.host.world_path())?;
        self.save()?;
        let mut destination = location.open(self.world.section_size(), 0)?;
        let source = self.world.storage_mut();
        log::info!(
            "migrate: copying {} to {}",
            source.location(),
            destination.location()
        );
        let started = Instant::now();
        let mut progress = backup::ProgressLog::new("migrate");
        let report = migrate::migrate(source, destination.as_mut(), |done, total| {
            progress.tell(done, total)
        })?;
        Ok(format!(
            "migrate done in {:.1} s: {} sections, {} nodes and {} values copied, and {} blocks \
             of the rollback log; source {}; destination {}: they match. To use it, set \
             storage = \"{}\" under [world] in world.toml (or --set voxelworld.storage=...)",
            started.elapsed().as_secs_f64(),
            report.sections,
            report.nodes,
            report.values,
            report.log_blocks,
            report.source.describe(),
            report.destination.describe(),
            storage::postgresql::redact_url(to)
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use buildat_interface::testing::TestHost;

    /// The world's commands on the kit: registered at start by their clap
    /// definitions (its settings declared), words that do not parse
    /// answered with the usage, and refusals by kind.
    #[test]
    fn commands_are_registered_and_refused_by_kind() {
        let dir = tempfile::tempdir().expect("temp dir");
        let kit = TestHost::new().world_path(dir.path());
        let mut world = kit.load::<VoxelWorld>().expect("loads");
        let names: Vec<String> = kit.commands().into_iter().map(|c| c.name).collect();
        for name in ["pregen", "migrate", "backup", "restore", "world"] {
            assert!(names.iter().any(|n| n == name), "{name} in {names:?}");
        }
        let declared = kit.calls::<buildat_interface::core_api::DeclareSettings>();
        let keys: Vec<&str> = declared
            .iter()
            .flat_map(|d| d.settings.iter().map(|s| s.key.as_str()))
            .collect();
        for key in [
            "voxelworld.view_radius",
            "voxelworld.storage",
            "voxelworld.generator",
        ] {
            assert!(keys.contains(&key), "{key} declared: {keys:?}");
        }
        let usage = |error: ModuleError| match error {
            ModuleError::Usage(message) => message,
            other => panic!("not a usage error: {other}"),
        };
        let pregen = kit
            .commands()
            .into_iter()
            .find(|c| c.name == "pregen")
            .expect("pregen");
        assert_eq!(pregen.usage, "--radius N [--height H] | stop");
        let message = usage(
            world
                .command("pregen", &["--radius"], None)
                .expect_err("no number"),
        );
        assert!(message.contains("--radius <N>"), "{message}");
        let message = usage(
            world
                .command("pregen", &["--radius", "5000"], None)
                .expect_err("too far"),
        );
        assert!(message.contains("5000"), "{message}");
        assert!(usage(world.command("migrate", &[], None).expect_err("no --to")).contains("--to"));
        assert_eq!(
            world.command("pregen", &["stop"], None).expect("answers"),
            "no pregen is running"
        );
        let light = world
            .command("pregen", &["--radius", "1", "--light"], None)
            .expect_err("only headless");
        assert!(light.to_string().contains("only headless"), "{light}");
        let module = world.module_mut();
        assert!(matches!(
            module.pregen_command(PregenArgs {
                stop: None,
                radius: None,
                height: 1,
                light: false,
            }),
            Err(CommandError::Usage(_))
        ));

        assert!(matches!(
            module.restore_backup(Path::new("x.backup")),
            Err(CommandError::RestoreWhileRunning)
        ));
        let error = world
            .command("restore", &["x.backup"], None)
            .expect_err("not on a running server");
        assert!(
            error
                .to_string()
                .contains("buildat-server restore FILE --world NEWDIR"),
            "{error}"
        );
        assert!(
            world
                .command("world", &[], Some("admin"))
                .expect("answers")
                .starts_with("world: ")
        );
    }
}
