//! The console's commands: `pregen`, `migrate`, `backup`, `restore` and
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
    /// Words that do not parse, with the command's usage.
    #[error("{0}")]
    Usage(String),
    #[error("no command '{0}'")]
    Unknown(String),
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

impl VoxelWorld {
    /// Offers `pregen` on the console (and headless:
    /// `buildat-server --world DIR pregen --radius N`), and `world`.
    pub(crate) fn register_commands(&self) -> Result<(), ModuleError> {
        self.host.call(&RegisterCommand {
            name: "pregen".into(),
            usage: "--radius N [--height H] | stop".into(),
            help: "generate and save the sections within N of the origin (y within H, default 1); \
                   on a running server in the background, a slice each tick; `pregen stop` ends it"
                .into(),
            privilege: None,
        })?;
        self.host.call(&RegisterCommand {
            name: "migrate".into(),
            usage: "--to sqlite|sqlite:PATH|postgresql://USER@HOST/DB".into(),
            help: "copy the world into another, empty storage and verify the copy".into(),
            privilege: None,
        })?;
        self.host.call(&RegisterCommand {
            name: "backup".into(),
            usage: "FILE".into(),
            help: "write the world as saved now into FILE (one file, docs/formats.md §10) while \
                   players play; its progress is logged every second"
                .into(),
            privilege: None,
        })?;
        self.host.call(&RegisterCommand {
            name: "restore".into(),
            usage: "FILE".into(),
            help: "headless only, into a new world: buildat-server restore FILE --world NEWDIR"
                .into(),
            privilege: None,
        })?;
        self.host.call(&RegisterCommand {
            name: "world".into(),
            usage: String::new(),
            help: "sections in memory, changes not saved yet, how light was kept up to date".into(),
            privilege: Some("server".into()),
        })
    }

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

    pub(crate) fn run_command(&mut self, command: RunCommand) -> Result<String, CommandError> {
        if command.name == "world" {
            return Ok(self.describe());
        }
        if command.name == "backup" {
            return self.backup(&command.args);
        }
        if command.name == "restore" {
            return self.restore_backup(&command.args);
        }
        if command.name == "migrate" {
            let to = migrate::parse_args(&command.args).map_err(|message| {
                CommandError::Usage(format!(
                    "{message}; usage: migrate --to sqlite|sqlite:PATH|postgresql://USER@HOST/DB"
                ))
            })?;
            return self.migrate(&to);
        }
        if command.name != "pregen" {
            return Err(CommandError::Unknown(command.name));
        }
        let usage = "usage: pregen --radius N [--height H] | pregen stop";
        let asked = pregen::parse_command(&command.args)
            .map_err(|message| CommandError::Usage(format!("{message}; {usage}")))?;
        let region = match asked {
            PregenCommand::Stop => {
                return Ok(match self.pregen_run.take() {
                    Some(run) => format!(
                        "pregen stopped at {}; what it generated is saved",
                        run.progress()
                    ),
                    None => "no pregen is running".into(),
                });
            }
            PregenCommand::Start(region) => region,
        };
        if let Some(run) = &self.pregen_run {
            return Err(CommandError::Running {
                command: "pregen",
                progress: run.progress(),
                what: "`pregen stop` ends it",
            });
        }
        let (radius, height) = (region.radius as i32, region.height as i32);
        if self.headless {
            let report = self.pregen(radius, height)?;
            return Ok(format!(
                "pregen done: {} sections generated, {} already present",
                report.generated, report.already_present
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
            "migrate done in {:.1} s: {} sections, {} nodes and {} values copied; source {}; \
             destination {}: they match. To use it, set \
             storage = \"{}\" under [world] in world.toml (or --set voxelworld.storage=...)",
            started.elapsed().as_secs_f64(),
            report.sections,
            report.nodes,
            report.values,
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

    /// The world's commands on the kit: registered at start (its settings
    /// declared), and refused
    /// by kind (usage, another run going on, no server to restore into).
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
        let run = |world: &mut VoxelWorld, name: &str, args: &[&str]| {
            world.run_command(RunCommand {
                name: name.into(),
                args: args.iter().map(|a| a.to_string()).collect(),
                by: None,
            })
        };
        let world = world.module_mut();
        assert!(matches!(
            run(world, "pregen", &["--radius"]),
            Err(CommandError::Usage(message)) if message.contains("--radius needs a number")
        ));
        assert!(matches!(
            run(world, "migrate", &[]),
            Err(CommandError::Usage(_))
        ));
        assert!(matches!(
            run(world, "restore", &["x.backup"]),
            Err(CommandError::RestoreWhileRunning)
        ));
        assert!(matches!(
            run(world, "teleport", &[]),
            Err(CommandError::Unknown(name)) if name == "teleport"
        ));
        assert!(
            run(world, "world", &[])
                .expect("answers")
                .starts_with("world: ")
        );
    }
}
