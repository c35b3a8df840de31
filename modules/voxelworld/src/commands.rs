//! The console's commands: `pregen`, `migrate`, `backup`, `restore` and
//! `world`, registered at start (and headless, `buildat-server --world DIR
//! pregen ...`), parsed and run.
//!
//! Owns: their names, usage, help and answers, and `migrate`'s run. Does
//! not own: a backup's run (`backup_run.rs`), a pregen's (`generating.rs`).

use super::*;

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

    pub(crate) fn run_command(&mut self, command: RunCommand) -> Result<String, ModuleError> {
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
                ModuleError::msg(format!(
                    "{message}; usage: migrate --to sqlite|sqlite:PATH|postgresql://USER@HOST/DB"
                ))
            })?;
            return self.migrate(&to);
        }
        if command.name != "pregen" {
            return Err(ModuleError::msg(format!("no command '{}'", command.name)));
        }
        let usage = "usage: pregen --radius N [--height H] | pregen stop";
        let asked = pregen::parse_command(&command.args)
            .map_err(|message| ModuleError::msg(format!("{message}; {usage}")))?;
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
            return Err(ModuleError::msg(format!(
                "a pregen is running ({}); `pregen stop` ends it",
                run.progress()
            )));
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
    pub(crate) fn migrate(&mut self, to: &str) -> Result<String, ModuleError> {
        let location = StorageLocation::parse(to, &self.host.world_path())
            .map_err(|e| ModuleError::msg(e.to_string()))?;
        self.save()?;
        let mut destination = location
            .open(self.world.section_size(), 0)
            .map_err(|e| ModuleError::msg(e.to_string()))?;
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
        })
        .map_err(|e| ModuleError::msg(format!("migrate: {e}")))?;
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
