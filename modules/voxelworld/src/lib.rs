//! `voxelworld`: the world players stand in.
//!
//! Owns: the world (`world.rs`: registries, loaded sections, chunks, nodes,
//! save rules) over its storage (`storage.rs`: `<world>/world.sqlite` by
//! default, or a PostgreSQL database, `storage/postgresql.rs`), the
//! events `voxelworld:generation_request` and `voxelworld:node_volume_updated`,
//! the calls defined in `buildat-voxelworld-api` (`api/`; `column_tops`
//! for maps reads stored sections without loading them: `world/tops.rs`),
//! periodic saving,
//! saving on unload and stop (when storage fails: edits stay in memory and
//! are retried while the stream goes on serving, one warning a minute, a
//! reload carries them, and `stop` retries, then writes them to a recovery
//! file taken back at the next start: `durability.rs`), and `pregen` (generating and saving a region
//! through the generator module's `generate` call, each section once; on a
//! running server in slices between ticks: `pregen.rs`), and
//! `migrate --to LOCATION` (copying the world into another, empty storage:
//! `migrate.rs`), and modules' values kept with the world (`get_value`,
//! `put_values`, `list_values`: a game's accounts and bans, on the world's
//! backend, moved by `migrate`, in every backup; each `put_values` is one
//! storage transaction, done before the call answers; tables modules kept
//! in `world.sqlite` before values are read and dropped for them through
//! this module's SQLite: `old_tables.rs`).
//! Special voxels (`special.rs`): after each commit of edits, the module
//! named as a changed voxel's or its face neighbour's `handler_module` is
//! told in one `voxelworld:special/<module>` event, and every module of
//! every change in one `voxelworld:voxels_changed`.
//! Modules acting on the world over time (`finding.rs`, `world/find.rs`):
//! `find_voxels` scans chunks in memory for voxel types (neighbours,
//! seeded chance), `get_lights` reads light, and sections that came into
//! or left memory are told once a tick (`voxelworld:sections_loaded`,
//! `voxelworld:sections_unloaded`).
//! Light is derived from the voxels (`buildat_voxel::light`): computed when
//! a chunk is first streamed, relit once a tick for everything changed in
//! it, streamed after each chunk and when it changes, never stored.
//! Streaming (`stream.rs`): each player gets the registry, then the chunks
//! around where the game says it is (`voxelworld:viewer_moved`,
//! `voxelworld:viewers_moved`) nearest first, each followed by its light,
//! and the changes to the chunks it holds.
//! The module's glue, by feature: `viewers.rs` (pumping the stream),
//! `edits.rs` (edits and commits), `generating.rs` (the generator and
//! `pregen`), `saving.rs`, `commands.rs` (the console), `backup_run.rs`,
//! `backup_schedule.rs` (backups on a schedule: `backup.every`,
//! `backup.keep`, `backup.dir`, a settings namespace of its own),
//! `values.rs`, `ground.rs` (`get_ground`, `get_spawn`), `rollback.rs`
//! (the rollback log: every voxel change with who, when, before and after,
//! written in packed blocks; `inspect`, `rollback`, `restore`; settings
//! `rollback.enabled`, `rollback.keep_days`).
//! Does not own: terrain (a generator module, `worldgen` by default) or
//! where players are and what they may do (the game module).
//!
//! Settings (`--set KEY=VALUE`): `voxelworld.max_loaded_sections` (default
//! 4096), `voxelworld.save_interval_s` (default 5), `voxelworld.generator`
//! (default `worldgen`), `voxelworld.view_radius` (chunks streamed around a
//! player, default 3), `voxelworld.stream_budget` (chunks in flight without
//! an ack, default 128), `voxelworld.max_database_bytes` (a cap on
//! `world.sqlite`, default 0: none; past it saves fail as on a full disk),
//! `voxelworld.storage` (where the world is stored for this run, over
//! `world.toml`'s `storage`).
//! It owns `<world>/world.toml` (`[world]`: `name`,
//! `seed`, `section_size = [w, h, d]` in chunks, default [2, 2, 2], used when
//! the world is created; afterwards the stored size wins; `storage`:
//! `sqlite` (the default, `<world>/world.sqlite`), `sqlite:PATH` or
//! `postgresql://USER[:PASSWORD]@HOST[:PORT]/DB`): it writes the
//! default into a new world and is its only parser (`get_world_config`;
//! `world_toml.rs`, which also writes the one a restore makes from a
//! backup's). The world's files are private to the server's user
//! (`files.rs`).

pub mod backup;
mod backup_run;
pub mod backup_schedule;
mod commands;
pub mod durability;
mod edits;
pub mod files;
mod finding;
mod generating;
pub mod generation;
pub mod ground;
pub mod migrate;
mod nodes;
pub mod old_tables;
pub mod pregen;
pub mod rollback;
mod saving;
pub mod special;
pub mod storage;
pub mod stream;
mod values;
mod viewers;
pub mod world;
pub mod world_toml;

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use backup_run::BackupRun;
use buildat_format::Packet;
use buildat_interface::Receive;
use buildat_interface::log_limit::{LogLimiter, suppressed_note};
use buildat_interface::{
    Event, Host, Module, ModuleError, UnloadKind, config, events, export_module, log,
    settings::Settings,
};
use buildat_network_api::ReceivePackets;
use buildat_network_api::{
    self as network, ClientDisconnected, Multicast, OutgoingPacket, PeerId, SendBatch, SendBatches,
};
use buildat_voxel::geometry::{CHUNK_SIZE, Pos, SectionSize};
use buildat_voxelworld_api::stream::{Ack, Registry};
use buildat_voxelworld_api::{
    ApplyGenerated, Border, BorderChanged, Commit, CreateNode, CreateNodes, EditOutcome,
    EditTogether, EditVoxel, EditVoxels, Generate, GeneratedSection, GenerationCancel,
    GenerationRequest, GetNode, GetRegistry, GetSizes, GetVoxel, GetVoxels, GetWorldConfig,
    ListNodes, LoadOrGenerateSection, MAX_VOXELS_PER_CALL, MoveNodes, NodeVolumeUpdated,
    NodesChanged, Pregen, PregenReport, RegisterBlock, RemoveNode, RemoveNodes, Save,
    SectionStatus, SetNodeParent, SetNodeVar, SetSectionSaveEnabled, SetVoxel, Sizes,
    SpecialVoxels, Viewer, Viewers, VoxelChange, VoxelsChanged, WorldConfig, WorldStats,
};
use buildat_voxelworld_api::{
    DropOldTables, GetStats, GetValue, ListValues, MAX_VALUE_BYTES, MAX_VALUE_WRITES, PutValues,
    ReadOldTable, ValueWrite, check_value_key, check_value_space,
};
use durability::{SaveHealth, StashedSection};
use pregen::PregenRun;
use serde::{Deserialize, Serialize};
use storage::StorageLocation;
use world::{Committed, Loaded, World, WorldError};
use world_toml::{DEFAULT_WORLD_TOML, ReadConfig, read_world_config};

/// Streams the chunks changed by calls, after the calls have answered: an
/// event voxelworld emits to itself, so an edit's caller never waits on
/// streaming.
#[derive(Debug, Default, Serialize, Deserialize)]
struct StreamChanges {}
impl Event for StreamChanges {
    const NAME: &'static str = "voxelworld:stream_changes";
}
/// Relights and streams what the last slice ran out of time for, after the
/// calls and events that were waiting: an event voxelworld emits to itself.
#[derive(Debug, Default, Serialize, Deserialize)]
struct MoreWork {}
impl Event for MoreWork {
    const NAME: &'static str = "voxelworld:more_work";
}
/// How long one relight, or one pump, may light and encode chunks before
/// the module's thread goes back to the calls and events waiting on it
/// (a game module's movement checks call the world).
const WORK_SLICE: std::time::Duration = std::time::Duration::from_millis(3);
/// Seconds between two comparisons of the sections asked of the generator
/// with what players want (cancelling what nobody wants any more).
const GENERATION_REVIEW_INTERVAL: f64 = 0.5;
/// How long one tick may spend on the periodic save before going on.
const SAVE_SLICE: std::time::Duration = std::time::Duration::from_millis(15);
/// Seconds between two drops of the decoded voxels of chunks nobody read
/// (a chunk is kept decoded for two to three of these after its last read).
const DROP_DECODED_INTERVAL: f64 = 15.0;

/// What crosses a reload: registries and every loaded section.
#[derive(Serialize, Deserialize)]
struct WorldStash {
    voxels: buildat_voxel::VoxelRegistry,
    blocks: buildat_voxel::BlockRegistry,
    sections: Vec<StashedSection>,
    /// Who is streamed what, so players keep their world across the reload.
    viewers: HashMap<PeerId, stream::ViewerState>,
    /// The rollback log's previews and the rollbacks `restore` can undo.
    rollback: rollback::RollbackStash,
}

impl buildat_interface::Stash for WorldStash {
    /// 2: voxel definitions carry their light; viewers their light updates.
    /// 3: viewers' queued changes carry their chunk and order.
    /// 4: the rollback log's previews and undoable rollbacks.
    const LAYOUT: u32 = 4;
}

struct VoxelWorld {
    host: Host,
    world: World,
    streamer: stream::Streamer,
    /// The encoded `voxelworld:registry` packet, rebuilt when blocks register.
    registry_packet: Option<Vec<u8>>,
    /// Viewers holding chunks that calls changed, streamed on
    /// [`StreamChanges`].
    changed_holders: BTreeSet<PeerId>,
    /// A [`MoreWork`] is on its way (one at a time).
    more_work_pending: bool,
    /// Sections asked of the generator (`generation.rs`).
    generation: generation::GenerationBook,
    /// Seconds since the sections asked of the generator were last
    /// compared with what players want.
    since_generation_review: f64,
    save_interval: f64,
    /// Seconds since the last periodic save finished.
    since_save: f64,
    /// Seconds since decoded voxels nobody read were last dropped.
    since_drop_decoded: f64,
    generator: String,
    /// `world.toml` as read at creation (the section size in it may differ
    /// from the stored one, which wins).
    config: WorldConfig,
    /// Whether saves fail, for one warning a minute rather than a tick.
    health: SaveHealth,
    /// Streaming errors (storage that cannot be read), a few a minute.
    stream_log: LogLimiter<()>,
    /// Commits with more changed voxels than handlers are told of, a few a
    /// minute.
    special_log: LogLimiter<()>,
    /// Saves finished, sections written and failed saves, for `get_stats`.
    saves: u64,
    sections_saved: u64,
    save_errors: u64,
    /// The console's `pregen` on a running server, a slice each tick.
    pregen_run: Option<PregenRun>,
    /// Run headless (`buildat-server pregen ...`): nothing else waits.
    headless: bool,
    /// The console's `backup` on a running server, on a thread of its own.
    backup_run: Option<BackupRun>,
    /// Backups on a schedule (`backup.*`) and how the last one ended.
    backups: backup_schedule::BackupSchedule,
    /// The `storage` setting this run opened (`--set` over `world.toml`).
    storage_setting: String,
    /// `voxelworld.border`: sections beyond it are never generated.
    border: Option<Border>,
    /// The rollback log's timers, previews and rollbacks done (`rollback.rs`).
    rollback: rollback::RollbackState,
}

impl VoxelWorld {
    /// Emits `voxelworld:nodes_changed` with what changed since the last
    /// tick, if anything did.
    fn tell_node_changes(&mut self) -> Result<(), ModuleError> {
        let changes = self.world.take_node_changes();
        if changes == NodesChanged::default() {
            return Ok(());
        }
        self.host.emit(&changes)?;
        Ok(())
    }

    /// `core:start`: the console's commands, recovery files taken back.
    fn start(&mut self) -> Result<(), ModuleError> {
        durability::take_back_recovery(&self.host.world_path(), &mut self.world);
        let [w, h, d] = self.world.section_size().0;
        log::info!("world open: sections of {w}x{h}x{d} chunks of {CHUNK_SIZE}^3 voxels");
        self.prune_log(rollback::now_ms());
        Ok(())
    }

    /// `core:continue`, after the table gave back what the previous
    /// version carried over.
    fn resume(&mut self) -> Result<(), ModuleError> {
        log::info!(
            "resumed with {} sections loaded",
            self.world.loaded_sections()
        );
        Ok(())
    }

    /// A tick: a slice of the periodic save, of a pregen, a backup
    /// watched, decoded voxels nobody read dropped, relight, pump, the
    /// generator's requests reviewed, the nodes' changes told.
    fn tick(&mut self, dtime: f64) -> Result<(), ModuleError> {
        self.save_slice(dtime);
        if self.pregen_run.is_some() {
            self.pregen_slice(Instant::now() + pregen::PREGEN_SLICE);
        }
        self.watch_backup();
        self.tick_backup_schedule();
        self.tick_rollback(dtime);
        self.since_drop_decoded += dtime;
        if self.since_drop_decoded >= DROP_DECODED_INTERVAL {
            self.since_drop_decoded = 0.0;
            let dropped = self.world.drop_unread_decoded();
            if dropped > 0 {
                log::debug!("{dropped} chunks nobody read went back to their blob");
            }
        }
        self.relight();
        self.pump()?;
        self.since_generation_review += dtime;
        if self.since_generation_review >= GENERATION_REVIEW_INTERVAL {
            self.since_generation_review = 0.0;
            self.review_generation()?;
        }
        self.tell_sections()?;
        self.tell_node_changes()
    }

    /// What the next version gets: saved first (what cannot be saved goes
    /// along in memory, dirty).
    fn stash(&mut self) -> WorldStash {
        if let Err(error) = self.save() {
            // The next version gets them in memory (dirty) and retries.
            log::warn!(
                "reload: cannot save ({error}); {} unsaved sections go to the next version in memory",
                self.world.unsaved_count()
            );
        }
        let sections = self.world.export_sections().unwrap_or_else(|error| {
            // Encoding what is in memory: not seen to fail. The next version
            // loads what was saved.
            log::error!(
                "reload: the sections in memory cannot be carried over ({error}); {} unsaved \
                 sections are lost",
                self.world.unsaved_count()
            );
            Vec::new()
        });
        WorldStash {
            rollback: self.rollback.stash(),
            viewers: self.streamer.take_viewers(),
            voxels: self.world.voxels.clone(),
            blocks: self.world.blocks.clone(),
            sections: sections
                .into_iter()
                .map(|(stored, dirty)| StashedSection::from_stored(stored, dirty))
                .collect(),
        }
    }

    fn restore(&mut self, stash: WorldStash) -> Result<(), ModuleError> {
        self.streamer.restore_viewers(stash.viewers);
        self.rollback.restore(stash.rollback);
        self.world.voxels = stash.voxels;
        self.world.voxels.reindex();
        self.world.blocks = stash.blocks;
        for section in stash.sections {
            let dirty = section.dirty;
            self.world
                .import_section(section.into_stored(), dirty)
                .map_err(ModuleError::from)?;
        }
        Ok(())
    }
}

buildat_interface::settings! {
    /// What operators set (`--set voxelworld.KEY=VALUE`).
    pub(crate) struct WorldSettings in "voxelworld" {
        /// Sections kept in memory (the least used past it are saved and dropped).
        max_loaded_sections: usize = 4096,
        /// Seconds between periodic saves.
        save_interval_s: f64 = 5.0,
        /// The module answering `generate` and `voxelworld:generation_request`.
        generator: String = "worldgen".to_string(),
        /// Chunks streamed around a player.
        view_radius: i32 = 3,
        /// Chunks in flight to a player without an ack.
        stream_budget: u32 = 128,
        /// A cap on the SQLite file, in bytes (0: none; past it saves fail as on a full disk).
        max_database_bytes: u64 = 0,
        /// Where the world is stored for this run, over world.toml's `storage`.
        storage: Option<String> = None,
        /// The world border, in blocks from 0,0 on x and z: nothing beyond it is generated and players stop at it (0: none).
        #[live]
        border: u32 = 0,
    }
}

/// Why the world cannot be opened.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    #[error("cannot create the world directory {path}: {error}")]
    Directory {
        path: PathBuf,
        #[source]
        error: std::io::Error,
    },
    #[error(transparent)]
    Location(storage::StorageError),
    /// SQLite's errors do not name the file: this names it.
    #[error("{path}: {error}")]
    Sqlite {
        path: PathBuf,
        #[source]
        error: storage::StorageError,
    },
    /// PostgreSQL's name the URL (without its password).
    #[error(transparent)]
    Postgres(storage::StorageError),
}

impl From<OpenError> for ModuleError {
    fn from(error: OpenError) -> Self {
        ModuleError::msg(error.to_string())
    }
}

impl VoxelWorld {
    /// The console's `set voxelworld.border`: the new border holds for
    /// generation and pregen from now on (sections generated beyond it
    /// stay), and `voxelworld:border_changed` tells the game.
    fn apply_border(&mut self, blocks: u32) -> Result<String, ModuleError> {
        self.border = Border::of_setting(blocks);
        self.host.emit(&BorderChanged {
            border: self.border,
        })?;
        Ok(match self.border {
            Some(border) => format!("the world border is {} blocks from 0,0", border.blocks),
            None => "the world has no border".to_string(),
        })
    }
}

impl Module for VoxelWorld {
    fn create(host: Host) -> Result<Self, ModuleError> {
        let world_path = host.world_path();
        files::create_private_dir(&world_path).map_err(|error| OpenError::Directory {
            path: world_path.clone(),
            error,
        })?;
        let set = WorldSettings::read(&host)?;
        let ReadConfig { config, storage } = read_world_config(&world_path)?;
        let section_size = SectionSize(config.section_size);
        // `--set voxelworld.storage=...` for one run wins over world.toml.
        let setting = set.storage.unwrap_or(storage);
        let location =
            StorageLocation::parse(&setting, &world_path).map_err(OpenError::Location)?;
        let max_bytes = set.max_database_bytes;
        if max_bytes > 0 && matches!(location, StorageLocation::Postgres(_)) {
            log::warn!("voxelworld.max_database_bytes caps SQLite files only: ignored");
        }
        let storage = location
            .open(section_size, max_bytes)
            .map_err(|error| match &location {
                StorageLocation::Sqlite(path) => OpenError::Sqlite {
                    path: path.clone(),
                    error,
                },
                StorageLocation::Postgres(_) => OpenError::Postgres(error),
            })?;
        log::info!("world storage: {}", location.shown());
        let budget = set.max_loaded_sections;
        let radius = set.view_radius;
        let stream_budget = set.stream_budget;
        let headless = host.get_config(config::HEADLESS).as_deref() == Some("1");
        let rollback = rollback::RollbackState::new(&rollback::RollbackSettings::read(&host)?);
        let backups = backup_schedule::BackupSchedule::new(
            backup_schedule::BackupSettings::read(&host)?,
            &world_path,
            headless,
        )?;
        Ok(Self {
            host,
            world: {
                let mut world = World::new(storage, budget);
                world.log.enabled = rollback.enabled;
                world
            },
            streamer: stream::Streamer::new(radius, stream_budget),
            registry_packet: None,
            changed_holders: BTreeSet::new(),
            more_work_pending: false,
            generation: generation::GenerationBook::default(),
            since_generation_review: 0.0,
            save_interval: set.save_interval_s,
            since_save: 0.0,
            since_drop_decoded: 0.0,
            generator: set.generator,
            config,
            health: SaveHealth::default(),
            stream_log: LogLimiter::new(3, std::time::Duration::from_secs(60)),
            special_log: LogLimiter::new(3, std::time::Duration::from_secs(60)),
            saves: 0,
            sections_saved: 0,
            save_errors: 0,
            pregen_run: None,
            headless,
            backup_run: None,
            backups,
            storage_setting: setting,
            border: Border::of_setting(set.border),
            rollback,
        })
    }

    fn receive(table: &mut Receive<Self>) {
        table
            .live_settings(|world, set: WorldSettings, _| world.apply_border(set.border))
            .live_settings(|world, set: backup_schedule::BackupSettings, _| {
                let path = world.host.world_path();
                world.backups.apply(set, &path, world.headless)
            })
            .live_settings(|world, set: rollback::RollbackSettings, _| {
                Ok(world.apply_rollback_settings(set))
            })
            .stash(VoxelWorld::stash, VoxelWorld::restore)
            .event(|world, _: events::Start| world.start())
            .event(|world, _: events::Continue| world.resume())
            .event(|world, tick: events::Tick| world.tick(tick.dtime))
            .event(|world, gone: ClientDisconnected| {
                world.streamer.remove_viewer(gone.peer);
                Ok(())
            })
            .event(|world, _: MoreWork| {
                world.more_work_pending = false;
                world.relight();
                world.pump()
            })
            .event(|world, _: StreamChanges| {
                let holders: Vec<PeerId> = std::mem::take(&mut world.changed_holders)
                    .into_iter()
                    .collect();
                world.pump_viewers(Some(&holders))
            })
            .call(|world, _: GetRegistry| Ok(world.world.voxels.clone()))
            .call(|world, _: GetWorldConfig| {
                Ok(WorldConfig {
                    section_size: world.world.section_size().0,
                    ..world.config.clone()
                })
            })
            .call(|world, _: GetSizes| {
                Ok(Sizes {
                    chunk_size: CHUNK_SIZE,
                    section_size: world.world.section_size().0,
                })
            })
            .call(|world, _: buildat_voxelworld_api::GetBackupStatus| Ok(world.backup_status()))
            .call(|world, _: GetStats| {
                Ok(WorldStats {
                    loaded_sections: world.world.loaded_sections() as u64,
                    unsaved_sections: world.world.unsaved_count() as u64,
                    viewers: world.streamer.viewer_count() as u64,
                    chunks_streamed: world.streamer.chunks_streamed,
                    saves: world.saves,
                    sections_saved: world.sections_saved,
                    save_errors: world.save_errors,
                })
            });
        commands::receive(table);
        viewers::receive(table);
        edits::receive(table);
        generating::receive(table);
        nodes::receive(table);
        saving::receive(table);
        values::receive(table);
        ground::receive(table);
        finding::receive(table);
        rollback::receive(table);
    }

    fn unload(&mut self, kind: UnloadKind) -> Result<(), ModuleError> {
        // Its thread runs this library's code: it ends before the library goes.
        if let Some(run) = self.backup_run.take() {
            run.cancel.store(true, Ordering::Relaxed);
            log::warn!(
                "backup cancelled by the unload at {}; no file was left, run it again",
                run.progress()
            );
            run.finish();
        }
        if let Some(run) = &self.pregen_run {
            log::warn!(
                "pregen stopped by the unload at {}; what it generated is saved, run it again to finish",
                run.progress()
            );
        }
        self.flush_log();
        // For a reload, the table stashes the world after this.
        if kind != UnloadKind::Reload {
            self.save_at_stop();
        }
        Ok(())
    }
}

export_module!(VoxelWorld);
