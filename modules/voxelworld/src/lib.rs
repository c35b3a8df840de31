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
//! told in one `voxelworld:special/<module>` event.
//! Light is derived from the voxels (`buildat_voxel::light`): computed when
//! a chunk is first streamed, relit once a tick for everything changed in
//! it, streamed after each chunk and when it changes, never stored.
//! Streaming (`stream.rs`): each player gets the registry, then the chunks
//! around where the game says it is (`voxelworld:viewer_moved`,
//! `voxelworld:viewers_moved`) nearest first, each followed by its light,
//! and the changes to the chunks it holds.
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
pub mod durability;
pub mod files;
pub mod generation;
pub mod ground;
pub mod migrate;
pub mod old_tables;
pub mod pregen;
pub mod special;
pub mod storage;
pub mod stream;
pub mod world;
pub mod world_toml;

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use buildat_format::Packet;
use buildat_interface::core_api::{RegisterCommand, RunCommand};
use buildat_interface::log_limit::{LogLimiter, suppressed_note};
use buildat_interface::{
    Event, Host, Module, ModuleError, UnloadKind, config, decode, events, export_module, log,
};
use buildat_network_api::{
    self as network, ClientDisconnected, Multicast, OutgoingPacket, PacketReceived, PeerId,
    SendBatch, SendBatches,
};
use buildat_voxel::geometry::{CHUNK_SIZE, Pos, SectionSize};
use buildat_voxelworld_api::stream::{Ack, Registry};
use buildat_voxelworld_api::{
    ApplyGenerated, ColumnTops, Commit, CreateNode, CreateNodes, EditOutcome, EditVoxel,
    EditVoxels, Generate, GeneratedSection, GenerationCancel, GenerationRequest, GetNode,
    GetRegistry, GetSizes, GetVoxel, GetVoxels, GetWorldConfig, ListNodes, LoadOrGenerateSection,
    MoveNodes, NodeVolumeUpdated, NodesChanged, Pregen, PregenReport, RegisterBlock, RemoveNode,
    RemoveNodes, Replace, Save, SectionStatus, SetNodeParent, SetNodeVar, SetSectionSaveEnabled,
    SetVoxel, Sizes, SpecialVoxels, Viewer, Viewers, WorldConfig, WorldStats,
};
use buildat_voxelworld_api::{
    DropOldTables, GetGround, GetSpawn, GetStats, GetValue, Ground, ListValues, MAX_VALUE_BYTES,
    MAX_VALUE_WRITES, PutValues, ReadOldTable, ValueWrite, check_value_key, check_value_space,
};
use durability::{SaveHealth, StashedSection};
use pregen::{PregenCommand, PregenRun};
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
}

impl buildat_interface::Stash for WorldStash {
    /// 2: voxel definitions carry their light; viewers their light updates.
    /// 3: viewers' queued changes carry their chunk and order.
    const LAYOUT: u32 = 3;
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
    ack_event: String,
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
    /// Lines about what a peer sent, a few per peer per 10 s.
    peer_log: LogLimiter<PeerId>,
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
    /// The `storage` setting this run opened (`--set` over `world.toml`).
    storage_setting: String,
}

/// A backup writing on its own thread from a storage snapshot.
struct BackupRun {
    file: std::path::PathBuf,
    started: Instant,
    /// Sections written and the total, as the thread tells them.
    done: Arc<AtomicU64>,
    total: Arc<AtomicU64>,
    cancel: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<Result<backup::BackupReport, backup::BackupError>>,
    last_report: Instant,
}

impl BackupRun {
    fn progress(&self) -> String {
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
    fn finish(self) -> String {
        let seconds = self.started.elapsed().as_secs_f64();
        match self.thread.join() {
            Ok(Ok(report)) => report.done_line(seconds),
            Ok(Err(error)) => format!("backup to {} failed: {error}", self.file.display()),
            Err(_) => format!(
                "backup to {} failed: its thread panicked",
                self.file.display()
            ),
        }
    }
}

/// Whether `voxel` is physically solid (a type the registry lacks is not).
fn world_solid(voxels: &buildat_voxel::VoxelRegistry, voxel: u32) -> bool {
    voxels
        .get(buildat_voxel::VoxelInstance(voxel).type_id())
        .is_some_and(|d| d.physically_solid)
}

fn world_error(error: WorldError) -> ModuleError {
    ModuleError::msg(error.to_string())
}

impl VoxelWorld {
    /// Announces changed chunks (with the single voxels set in them, if
    /// known) and queues them for their viewers; returns those viewers.
    fn announce(&mut self, updated: &[Committed]) -> Result<Vec<PeerId>, ModuleError> {
        let mut holders = BTreeSet::new();
        for committed in updated {
            self.streamer.voxels_changed(
                committed.chunk,
                committed.voxels.as_deref(),
                &mut holders,
            );
            self.host.emit(&NodeVolumeUpdated {
                node_id: committed.node_id,
                chunk: committed.chunk,
            })?;
        }
        Ok(holders.into_iter().collect())
    }

    /// Relights what changed since the last tick (edits, generated and
    /// loaded chunks, all at once; a slice of it when it is much) and
    /// queues the changed light for the chunks' holders (the tick's pump
    /// sends it).
    fn relight(&mut self) {
        let relit = match self.world.relight(Instant::now() + WORK_SLICE) {
            Ok(relit) => relit,
            Err(error) => {
                if let Some(suppressed) = self.stream_log.allow((), Instant::now()) {
                    log::error!("relighting: {error}{}", suppressed_note(suppressed));
                }
                return;
            }
        };
        let mut holders = BTreeSet::new();
        for (chunk, light) in relit {
            match stream::encode_light_packet(chunk, &light) {
                Ok(packet) => {
                    self.streamer
                        .light_changed(chunk, std::sync::Arc::new(packet), &mut holders)
                }
                Err(error) => log::debug!("light of chunk {chunk:?}: {error}"),
            }
        }
    }

    /// Sends each viewer what its budget allows and asks for the sections
    /// it waits on; relighting left for later is done later too.
    fn pump(&mut self) -> Result<(), ModuleError> {
        if self.world.light_pending() {
            self.more_work_later()?;
        }
        self.pump_viewers(None)
    }

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

    /// Asks for a [`MoreWork`] (unless one is on its way).
    fn more_work_later(&mut self) -> Result<(), ModuleError> {
        if !self.more_work_pending {
            self.more_work_pending = true;
            self.host.emit(&MoreWork {})?;
        }
        Ok(())
    }

    /// [`Self::pump`] for `only` those viewers, or every viewer.
    fn pump_viewers(&mut self, only: Option<&[PeerId]>) -> Result<(), ModuleError> {
        if self.streamer.viewer_count() == 0 {
            return Ok(());
        }
        let registry = match &mut self.registry_packet {
            Some(registry) => registry,
            None => self.registry_packet.insert(
                Registry {
                    voxels: self.world.voxels.clone(),
                }
                .encode()?,
            ),
        };
        let deadline = Instant::now() + WORK_SLICE;
        let outbox = self
            .streamer
            .pump(&mut self.world, registry, only, deadline);
        if outbox.unfinished {
            self.more_work_later()?;
        }
        if let Some(error) = &outbox.failure
            && let Some(suppressed) = self.stream_log.allow((), Instant::now())
        {
            log::error!(
                "streaming: {error}; the chunks it concerns are sent once they can be read{}",
                suppressed_note(suppressed)
            );
        }
        for (section, distance) in outbox.generate {
            self.request_generation(section, Some(distance))?;
        }
        // Two events, so every peer gets the registry and the changes
        // before the chunks (the network queues an event's batches, then its
        // multicasts): an update after a chunk sent whole with it, or with a
        // newer change, would set a voxel back.
        let batches = |packets: Vec<(PeerId, Vec<OutgoingPacket>)>| {
            packets
                .into_iter()
                .map(|(peer, packets)| SendBatch { peer, packets })
                .collect()
        };
        let multicasts = |alike: Vec<stream::Alike>| {
            alike
                .into_iter()
                .map(|alike| Multicast {
                    peers: alike.peers,
                    packet: OutgoingPacket::named(alike.name, Arc::unwrap_or_clone(alike.data)),
                })
                .collect()
        };
        self.send(SendBatches {
            batches: batches(outbox.first),
            multicasts: multicasts(outbox.alike),
        });
        // The chunks sent whole: each once for all the peers it goes to.
        self.send(SendBatches {
            batches: Vec::new(),
            multicasts: multicasts(outbox.packets),
        });
        Ok(())
    }

    /// Queues packets to peers without waiting on the network module.
    fn send(&self, sends: SendBatches) {
        if let Err(error) = network::queue_sends(&self.host, sends) {
            log::debug!("streaming: {error}");
        }
    }

    fn set_viewer(&mut self, viewer: Viewer) -> Result<(), ModuleError> {
        self.set_viewers(vec![viewer])
    }

    /// Moves each viewer (one whose position is out of the world is
    /// refused, the others still move), then streams to all of them in
    /// one pump.
    fn set_viewers(&mut self, viewers: Vec<Viewer>) -> Result<(), ModuleError> {
        let mut moved = Vec::with_capacity(viewers.len());
        let mut refused = None;
        for viewer in viewers {
            if viewer
                .position
                .iter()
                .any(|p| !p.is_finite() || p.abs() > 1e8)
            {
                refused = Some(ModuleError::msg("viewer position out of the world"));
                continue;
            }
            let packets = self.streamer.set_viewer(viewer.peer, viewer.position);
            self.send_packets(viewer.peer, packets);
            moved.push(viewer.peer);
        }
        if !moved.is_empty() {
            self.pump_viewers(Some(&moved))?;
        }
        refused.map_or(Ok(()), Err)
    }

    fn send_packets(&self, peer: PeerId, packets: Vec<OutgoingPacket>) {
        if !packets.is_empty() {
            self.send(SendBatches {
                batches: vec![SendBatch { peer, packets }],
                multicasts: Vec::new(),
            });
        }
    }

    fn save(&mut self) -> Result<u32, ModuleError> {
        let saved = self.world.save_all();
        if let Ok(count) = &saved {
            self.saves += 1;
            self.sections_saved += u64::from(*count);
        }
        self.saved(saved.as_ref().map(|_| ()));
        let saved = saved.map_err(world_error)?;
        if saved > 0 {
            log::debug!("saved {saved} sections");
        }
        Ok(saved)
    }

    /// Tells the operator when saving starts or stops failing (a warning a
    /// minute while it fails), without failing what called.
    fn saved(&mut self, outcome: Result<(), &WorldError>) {
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
    fn save_at_stop(&mut self) {
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

    /// Asks the generator for a section, once (again after a while, or
    /// when a player comes nearer). `distance`: from the player who wants
    /// it; `None` when a call waits on it.
    fn request_generation(
        &mut self,
        section: Pos,
        distance: Option<u32>,
    ) -> Result<(), ModuleError> {
        if let Some(distance) = self.generation.ask(section, distance, Instant::now()) {
            self.host.emit(&GenerationRequest { section, distance })?;
        }
        Ok(())
    }

    /// Cancels the generation of sections no player wants any more and
    /// brings forward those a player came nearer to.
    fn review_generation(&mut self) -> Result<(), ModuleError> {
        if !self.generation.has_player_requests() {
            return Ok(());
        }
        let wanted = self.streamer.wanted_sections(self.world.section_size());
        let review = self.generation.review(&wanted, Instant::now());
        for (section, distance) in review.nearer {
            self.host.emit(&GenerationRequest { section, distance })?;
        }
        if !review.cancel.is_empty() {
            log::debug!(
                "{} sections nobody wants any more: generation cancelled",
                review.cancel.len()
            );
            self.host.emit(&GenerationCancel {
                sections: review.cancel,
            })?;
        }
        Ok(())
    }

    /// The ground of the column at `x`, `z` (`ground.rs`), its band's
    /// sections loaded, or asked of the generator when not generated.
    fn ground(&mut self, x: i32, z: i32) -> Result<Ground, ModuleError> {
        let size = self.world.section_size();
        for section in ground::band_sections(size, x, z) {
            if self.world.load_section(section).map_err(world_error)? != Loaded::Ready {
                self.request_generation(section, None)?;
                return Ok(Ground::NotGenerated);
            }
        }
        let (top, bottom) = ground::band(size);
        let column = (bottom..=top)
            .rev()
            .map(|y| self.world.get_voxel([x, y, z]))
            .collect::<Result<Vec<_>, _>>()
            .map_err(world_error)?;
        ground::ground_in(
            top,
            bottom,
            |y| Ok::<_, ModuleError>(column.get((top - y) as usize).copied().flatten()),
            |voxel| world_solid(&self.world.voxels, voxel),
        )
    }

    fn load_or_generate(&mut self, section: Pos) -> Result<SectionStatus, ModuleError> {
        let loaded = self.world.load_section(section).map_err(world_error)?;
        if loaded != Loaded::Ready {
            self.request_generation(section, None)?;
        }
        let (generated, save_enabled) =
            self.world.section_status(section).unwrap_or((false, false));
        Ok(SectionStatus {
            generated,
            save_enabled,
        })
    }

    /// A run over every section with x and z within `radius` of the origin
    /// and y within `height` that is not stored yet.
    fn plan_pregen(
        &mut self,
        radius: i32,
        height: i32,
        batch: usize,
    ) -> Result<PregenRun, ModuleError> {
        let mut missing = Vec::new();
        let mut already_present = 0;
        for section in pregen::region(radius, height) {
            if self.world.is_stored(section).map_err(world_error)? {
                already_present += 1;
            } else {
                missing.push(section);
            }
        }
        Ok(PregenRun::new(missing, already_present, batch))
    }

    /// Generates and saves every section of the region not stored yet, at
    /// once (headless, and the `Pregen` call).
    fn pregen(&mut self, radius: i32, height: i32) -> Result<PregenReport, ModuleError> {
        let mut run = self.plan_pregen(radius, height, pregen::HEADLESS_BATCH)?;
        while let Some(batch) = run.next_batch() {
            let generated = self.generate_and_save(batch)?;
            run.generated(generated);
        }
        run.finish();
        Ok(run.report)
    }

    /// The running server's pregen, until `deadline`: batches while time is
    /// left. A failure ends the run (logged; what it saved stays).
    fn pregen_slice(&mut self, deadline: Instant) {
        let Some(mut run) = self.pregen_run.take() else {
            return;
        };
        while Instant::now() < deadline {
            let Some(batch) = run.next_batch() else {
                break;
            };
            match self.generate_and_save(batch) {
                Ok(generated) => run.generated(generated),
                Err(error) => {
                    log::error!("pregen stopped at {}: {error}", run.progress());
                    return;
                }
            }
        }
        if run.is_finished() {
            run.finish();
        } else {
            self.pregen_run = Some(run);
        }
    }

    /// Asks the generator for `sections`, applies and saves them (each
    /// section in its own transaction: an interrupted run keeps what it
    /// finished, and a rerun skips it). Returns how many were generated.
    fn generate_and_save(&mut self, sections: Vec<Pos>) -> Result<u64, ModuleError> {
        let generated = self
            .host
            .call_module(&self.generator, &Generate { sections })?;
        let mut count = 0;
        for section in generated {
            let chunks = section
                .chunks
                .into_iter()
                .map(|(pos, data)| (pos, data.blob))
                .collect();
            self.world
                .apply_generated(section.section, chunks)
                .map_err(world_error)?;
            self.world
                .set_section_save_enabled(section.section, true)
                .map_err(world_error)?;
            count += 1;
        }
        self.save()?;
        Ok(count)
    }

    /// Copies the world, saved first, into the empty storage at `to`, with
    /// a progress line a second, and checks the counts on both sides.
    fn migrate(&mut self, to: &str) -> Result<String, ModuleError> {
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

    /// `backup FILE`: saves, takes a snapshot of the storage, and writes
    /// it on a thread of its own (headless: at once, on this one).
    fn backup(&mut self, args: &[String]) -> Result<String, ModuleError> {
        let [file] = args else {
            return Err(ModuleError::msg("usage: backup FILE"));
        };
        if let Some(run) = &self.backup_run {
            return Err(ModuleError::msg(format!(
                "a backup is running ({}); wait for it to finish",
                run.progress()
            )));
        }
        let file = std::path::PathBuf::from(file);
        backup::check_new_file(&file).map_err(|e| ModuleError::msg(format!("backup: {e}")))?;
        let settings_path = self.host.world_path().join("world.toml");
        let settings = std::fs::read_to_string(&settings_path)
            .map_err(|e| ModuleError::msg(format!("backup: {}: {e}", settings_path.display())))?;
        self.save()?;
        let mut snapshot = self
            .world
            .storage_mut()
            .snapshot()
            .map_err(|e| ModuleError::msg(format!("backup: {e}")))?;
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
            .map_err(|e| ModuleError::msg(format!("backup: {e}")))?;
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
                })?
        };
        self.backup_run = Some(BackupRun {
            file: file.clone(),
            started,
            done,
            total,
            cancel,
            thread,
            last_report: Instant::now(),
        });
        Ok(format!(
            "backup started into {}: the world as saved now, written while the game goes on; \
             its progress is logged every second and `world` shows it",
            file.display()
        ))
    }

    /// A running backup's progress, a line a second, and its end.
    fn watch_backup(&mut self) {
        let Some(run) = &mut self.backup_run else {
            return;
        };
        if run.thread.is_finished() {
            if let Some(run) = self.backup_run.take() {
                log::info!("{}", run.finish());
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
    fn restore_backup(&mut self, args: &[String]) -> Result<String, ModuleError> {
        let [file] = args else {
            return Err(ModuleError::msg(
                "usage: restore FILE (headless: buildat-server restore FILE --world NEWDIR)",
            ));
        };
        if !self.headless {
            return Err(ModuleError::msg(
                "restore builds a new world while no server runs on it: \
                 buildat-server restore FILE --world NEWDIR",
            ));
        }
        let restore_error = |e: backup::BackupError| ModuleError::msg(format!("restore: {e}"));
        let mut backup = backup::BackupFile::open(Path::new(file)).map_err(restore_error)?;
        let started = Instant::now();
        log::info!(
            "restore: {} sections from {} (taken from {}) into {}",
            backup.meta().sections.len(),
            file,
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

    /// `<world>/world.sqlite`, where modules kept tables of their own
    /// before modules' values (`old_tables.rs`).
    fn old_tables_path(&self) -> PathBuf {
        self.host.world_path().join("world.sqlite")
    }

    /// Writes `world.toml` from the backup's copy over this world's
    /// default one: the world's own fields only (name, seed, section
    /// size), parsed as TOML, and `storage` where this restore wrote
    /// (`world_toml::restored_world_toml`: a backup cannot redirect the
    /// world); keeps one the operator wrote.
    fn restore_settings(&self, backed_up: &str) -> Result<String, ModuleError> {
        let path = self.host.world_path().join("world.toml");
        let current = std::fs::read_to_string(&path).unwrap_or_default();
        if current != DEFAULT_WORLD_TOML {
            return Ok(format!("{} kept as it was", path.display()));
        }
        let (text, why) = world_toml::restored_world_toml(backed_up, &self.storage_setting);
        files::rewrite_private(&path, text.as_bytes())
            .map_err(|e| ModuleError::msg(format!("restore: {}: {e}", path.display())))?;
        Ok(match why {
            None => format!(
                "{} written from the backup (name, seed, section size)",
                path.display()
            ),
            Some(why) => format!("{} written: {why}", path.display()),
        })
    }

    /// Offers `pregen` on the console (and headless:
    /// `buildat-server --world DIR pregen --radius N`), and `world`.
    fn register_commands(&self) -> Result<(), ModuleError> {
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
    fn describe(&self) -> String {
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

    fn run_command(&mut self, command: RunCommand) -> Result<String, ModuleError> {
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

    fn register_block(&mut self, request: RegisterBlock) -> Result<Vec<u32>, ModuleError> {
        let known = self.world.voxels.len();
        let ids = self
            .world
            .register_block(request.block)
            .map_err(world_error)?;
        if self.world.voxels.len() != known {
            self.registry_packet = None;
            self.streamer.registry_changed();
        }
        Ok(ids)
    }

    /// Announces the chunks changed since the last commit and streams them
    /// to their holders once the current call has answered.
    fn commit(&mut self) -> Result<u32, ModuleError> {
        let updated = self.world.commit();
        let holders = self.announce(&updated)?;
        if !holders.is_empty() {
            if self.changed_holders.is_empty() {
                self.host.emit(&StreamChanges {})?;
            }
            self.changed_holders.extend(holders);
        }
        self.tell_special()?;
        Ok(updated.len() as u32)
    }

    /// Tells each handler module what the commit did to its voxels and
    /// their neighbours: one `voxelworld:special/<module>` event each.
    fn tell_special(&mut self) -> Result<(), ModuleError> {
        let (told, dropped) = self.world.take_special();
        if dropped > 0
            && let Some(suppressed) = self.special_log.allow((), Instant::now())
        {
            log::warn!(
                "a commit changed more than {} voxels: their handler modules were not told of \
                 the last {dropped}{}",
                special::MAX_SPECIAL_CHANGES,
                suppressed_note(suppressed)
            );
        }
        for (module, voxels) in told {
            let payload = buildat_interface::encode(&SpecialVoxels { voxels })?;
            self.host.emit_event(
                &buildat_voxelworld_api::special_voxel_event(&module),
                &payload,
            )?;
        }
        Ok(())
    }

    /// One edit: check, set, mark for saving, commit.
    fn edit_voxel(&mut self, edit: EditVoxel) -> Result<EditOutcome, ModuleError> {
        self.edit_voxels(vec![edit])?
            .pop()
            .ok_or_else(|| ModuleError::msg("an edit went unanswered"))
    }

    /// Edits in turn (each checked against the voxels the ones before it
    /// set), then one commit for all of them: a chunk that several edits
    /// changed is announced, and its change queued for each of its
    /// holders, once, not once per edit (with a thousand players holding
    /// the chunks a tick's digs and places change, that was most of the
    /// world's time). An error stops the edits, but those made before it
    /// are still committed. A commit covers at most
    /// [`special::MAX_SPECIAL_CHANGES`] edits, so handler modules are told
    /// of every one.
    fn edit_voxels(&mut self, edits: Vec<EditVoxel>) -> Result<Vec<EditOutcome>, ModuleError> {
        let mut outcomes = Vec::with_capacity(edits.len());
        let mut failed = None;
        for edit in edits {
            if !outcomes.is_empty() && outcomes.len() % special::MAX_SPECIAL_CHANGES == 0 {
                self.commit()?;
            }
            match self.set_checked(edit) {
                Ok(outcome) => outcomes.push(outcome),
                Err(error) => {
                    failed = Some(error);
                    break;
                }
            }
        }
        self.commit()?;
        match failed {
            Some(error) => Err(error),
            None => Ok(outcomes),
        }
    }

    /// One edit's check and set, marked for saving; not committed.
    fn set_checked(&mut self, edit: EditVoxel) -> Result<EditOutcome, ModuleError> {
        let Some(current) = self.world.get_voxel(edit.pos).map_err(world_error)? else {
            return Ok(EditOutcome::NotGenerated);
        };
        let is_air = buildat_voxel::VoxelInstance(current).type_id() == buildat_voxel::AIR;
        let allowed = match edit.replace {
            Replace::Any => true,
            Replace::OnlyAir => is_air,
            Replace::NotAir => !is_air,
            Replace::Exactly(voxel) => current == voxel,
        };
        if !allowed {
            return Ok(EditOutcome::Refused { current });
        }
        self.world
            .set_voxel_by(edit.pos, edit.voxel, edit.by.as_deref())
            .map_err(world_error)?;
        if edit.save {
            let section = self
                .world
                .section_size()
                .section_of_chunk(buildat_voxel::geometry::chunk_of_voxel(edit.pos));
            self.world
                .set_section_save_enabled(section, true)
                .map_err(world_error)?;
        }
        Ok(EditOutcome::Edited { previous: current })
    }

    /// A generator's answer: store it and stream it.
    fn apply_generated(&mut self, generated: GeneratedSection) -> Result<(), ModuleError> {
        let chunks = generated
            .chunks
            .into_iter()
            .map(|(pos, data)| (pos, data.blob))
            .collect();
        let updated = self
            .world
            .apply_generated(generated.section, chunks)
            .map_err(world_error)?;
        self.generation.done(&generated.section);
        let updated: Vec<Committed> = updated
            .into_iter()
            .map(|(node_id, chunk)| Committed {
                node_id,
                chunk,
                voxels: None,
            })
            .collect();
        self.announce(&updated)?;
        self.pump()
    }

    fn stash(&mut self) -> Result<WorldStash, ModuleError> {
        if let Err(error) = self.save() {
            // The next version gets them in memory (dirty) and retries.
            log::warn!(
                "reload: cannot save ({error}); {} unsaved sections go to the next version in memory",
                self.world.unsaved_count()
            );
        }
        Ok(WorldStash {
            viewers: self.streamer.take_viewers(),
            voxels: self.world.voxels.clone(),
            blocks: self.world.blocks.clone(),
            sections: self
                .world
                .export_sections()
                .map_err(world_error)?
                .into_iter()
                .map(|(stored, dirty)| StashedSection::from_stored(stored, dirty))
                .collect(),
        })
    }

    fn restore(&mut self, stash: WorldStash) -> Result<(), ModuleError> {
        self.streamer.restore_viewers(stash.viewers);
        self.world.voxels = stash.voxels;
        self.world.voxels.reindex();
        self.world.blocks = stash.blocks;
        for section in stash.sections {
            let dirty = section.dirty;
            self.world
                .import_section(section.into_stored(), dirty)
                .map_err(world_error)?;
        }
        Ok(())
    }
}

impl Module for VoxelWorld {
    fn create(host: Host) -> Result<Self, ModuleError> {
        let world_path = host.world_path();
        files::create_private_dir(&world_path).map_err(|e| {
            ModuleError::msg(format!(
                "cannot create the world directory {}: {e}",
                world_path.display()
            ))
        })?;
        let ReadConfig { config, storage } = read_world_config(&world_path)?;
        let section_size = SectionSize(config.section_size);
        // `--set voxelworld.storage=...` for one run wins over world.toml.
        let setting = host.get_config("voxelworld.storage").unwrap_or(storage);
        let location = StorageLocation::parse(&setting, &world_path)
            .map_err(|e| ModuleError::msg(e.to_string()))?;
        let max_bytes = host.get_setting("voxelworld.max_database_bytes", 0u64)?;
        if max_bytes > 0 && matches!(location, StorageLocation::Postgres(_)) {
            log::warn!("voxelworld.max_database_bytes caps SQLite files only: ignored");
        }
        let storage = location.open(section_size, max_bytes).map_err(|e| {
            ModuleError::msg(match &location {
                // SQLite's errors do not name the file; PostgreSQL's name the URL.
                StorageLocation::Sqlite(path) => format!("{}: {e}", path.display()),
                StorageLocation::Postgres(_) => e.to_string(),
            })
        })?;
        log::info!("world storage: {}", location.shown());
        let budget = host.get_setting("voxelworld.max_loaded_sections", 4096usize)?;
        let radius = host.get_setting("voxelworld.view_radius", 3i32)?;
        let stream_budget = host.get_setting("voxelworld.stream_budget", 128u32)?;
        Ok(Self {
            host,
            world: World::new(storage, budget),
            streamer: stream::Streamer::new(radius, stream_budget),
            registry_packet: None,
            changed_holders: BTreeSet::new(),
            more_work_pending: false,
            ack_event: network::received::<Ack>(),
            generation: generation::GenerationBook::default(),
            since_generation_review: 0.0,
            save_interval: host.get_setting("voxelworld.save_interval_s", 5.0)?,
            since_save: 0.0,
            since_drop_decoded: 0.0,
            generator: host
                .get_config("voxelworld.generator")
                .unwrap_or_else(|| "worldgen".to_string()),
            config,
            health: SaveHealth::default(),
            peer_log: LogLimiter::new(5, std::time::Duration::from_secs(10)),
            stream_log: LogLimiter::new(3, std::time::Duration::from_secs(60)),
            special_log: LogLimiter::new(3, std::time::Duration::from_secs(60)),
            saves: 0,
            sections_saved: 0,
            save_errors: 0,
            pregen_run: None,
            headless: host.get_config(config::HEADLESS).as_deref() == Some("1"),
            backup_run: None,
            storage_setting: setting,
        })
    }

    fn init(&mut self) -> Result<(), ModuleError> {
        self.host.sub_event(events::Tick::NAME)?;
        self.host.sub_event(ClientDisconnected::NAME)?;
        self.host.sub_event(&self.ack_event)?;
        self.host.sub_event(Viewer::NAME)?;
        self.host.sub_event(Viewers::NAME)?;
        self.host.sub_event(StreamChanges::NAME)?;
        self.host.sub_event(MoreWork::NAME)?;
        Ok(())
    }

    fn event(&mut self, name: &str, payload: &[u8]) -> Result<(), ModuleError> {
        match name {
            events::Start::NAME => {
                self.register_commands()?;
                durability::take_back_recovery(&self.host.world_path(), &mut self.world);
                let [w, h, d] = self.world.section_size().0;
                log::info!("world open: sections of {w}x{h}x{d} chunks of {CHUNK_SIZE}^3 voxels");
            }
            events::Continue::NAME => {
                self.register_commands()?;
                if let Some(stash) = self.host.take_stash::<WorldStash>()? {
                    self.restore(stash)?;
                    log::info!(
                        "resumed with {} sections loaded",
                        self.world.loaded_sections()
                    );
                }
            }
            events::Tick::NAME => {
                let tick: events::Tick = decode(payload)?;
                self.since_save += tick.dtime;
                if self.since_save >= self.save_interval {
                    // A slice per tick: a big save never holds up the
                    // calls and events behind it for long.
                    let deadline = Instant::now() + SAVE_SLICE;
                    match self.world.save_some(deadline) {
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
                        // Kept dirty and retried at the next interval; the
                        // stream below goes on serving meanwhile.
                        Err(error) => {
                            self.saved(Err(&error));
                            self.since_save = 0.0;
                        }
                    }
                }
                if self.pregen_run.is_some() {
                    self.pregen_slice(Instant::now() + pregen::PREGEN_SLICE);
                }
                self.watch_backup();
                self.since_drop_decoded += tick.dtime;
                if self.since_drop_decoded >= DROP_DECODED_INTERVAL {
                    self.since_drop_decoded = 0.0;
                    let dropped = self.world.drop_unread_decoded();
                    if dropped > 0 {
                        log::debug!("{dropped} chunks nobody read went back to their blob");
                    }
                }
                self.relight();
                self.pump()?;
                self.since_generation_review += tick.dtime;
                if self.since_generation_review >= GENERATION_REVIEW_INTERVAL {
                    self.since_generation_review = 0.0;
                    self.review_generation()?;
                }
                self.tell_node_changes()?;
            }
            ClientDisconnected::NAME => {
                let gone: ClientDisconnected = decode(payload)?;
                self.streamer.remove_viewer(gone.peer);
                self.peer_log.forget(&gone.peer);
            }
            Viewer::NAME => self.set_viewer(decode(payload)?)?,
            Viewers::NAME => self.set_viewers(decode::<Viewers>(payload)?.viewers)?,
            MoreWork::NAME => {
                self.more_work_pending = false;
                self.relight();
                self.pump()?;
            }
            StreamChanges::NAME => {
                let holders: Vec<PeerId> = std::mem::take(&mut self.changed_holders)
                    .into_iter()
                    .collect();
                self.pump_viewers(Some(&holders))?;
            }
            _ if name == self.ack_event => {
                let packet: PacketReceived = decode(payload)?;
                match packet.packet::<Ack>() {
                    Ok(ack) => {
                        self.streamer.ack(packet.peer, ack.chunks);
                        self.pump_viewers(Some(&[packet.peer]))?;
                    }
                    Err(error) => {
                        if let Some(suppressed) = self.peer_log.allow(packet.peer, Instant::now()) {
                            log::warn!(
                                "peer {}: malformed {}: {error}{}",
                                packet.peer,
                                Ack::NAME,
                                suppressed_note(suppressed)
                            );
                        }
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn call(&mut self, function: &str, payload: &[u8]) -> Result<Vec<u8>, ModuleError> {
        buildat_interface::answer_calls!(function, payload, {
            RegisterBlock => |request: RegisterBlock| self.register_block(request),
            GetRegistry => |_| Ok(self.world.voxels.clone()),
            GetWorldConfig => |_| {
                Ok(WorldConfig {
                    section_size: self.world.section_size().0,
                    ..self.config.clone()
                })
            },
            GetSizes => |_| {
                Ok(Sizes {
                    chunk_size: CHUNK_SIZE,
                    section_size: self.world.section_size().0,
                })
            },
            GetVoxel => |request: GetVoxel| self.world.get_voxel(request.pos).map_err(world_error),
            GetVoxels => |request: GetVoxels| {
                if request.positions.len() > buildat_voxelworld_api::MAX_VOXELS_PER_CALL {
                    return Err(ModuleError::msg(format!(
                        "get_voxels of {} positions: at most {}",
                        request.positions.len(),
                        buildat_voxelworld_api::MAX_VOXELS_PER_CALL
                    )));
                }
                request
                    .positions
                    .iter()
                    .map(|pos| self.world.get_voxel(*pos))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(world_error)
            },
            SetVoxel => |request: SetVoxel| {
                self.world
                    .set_voxel(request.pos, request.voxel)
                    .map_err(world_error)
            },
            Commit => |_| self.commit(),
            EditVoxel => |edit| self.edit_voxel(edit),
            EditVoxels => |request: EditVoxels| self.edit_voxels(request.edits),
            LoadOrGenerateSection => |request: LoadOrGenerateSection| {
                self.load_or_generate(request.section)
            },
            SetSectionSaveEnabled => |request: SetSectionSaveEnabled| {
                self.world
                    .set_section_save_enabled(request.section, request.enabled)
                    .map_err(world_error)
            },
            ApplyGenerated => |request: ApplyGenerated| self.apply_generated(request.section),
            CreateNode => |request: CreateNode| {
                self.world
                    .create_node(request.position, request.save_enabled, request.vars)
                    .map_err(world_error)
            },
            CreateNodes => |request: CreateNodes| {
                let mut ids = Vec::with_capacity(request.nodes.len());
                for node in request.nodes {
                    ids.push(
                        match self.world.create_node(node.position, node.save_enabled, node.vars) {
                            Ok(id) => Some(id),
                            Err(error) => {
                                log::debug!("create_nodes: a node at {:?}: {error}", node.position);
                                None
                            }
                        },
                    );
                }
                Ok(ids)
            },
            GetNode => |request: GetNode| Ok(self.world.get_node(request.id)),
            ListNodes => |request: ListNodes| Ok(self.world.list_nodes(request.with_var.as_deref())),
            RemoveNode => |request: RemoveNode| self.world.remove_node(request.id).map_err(world_error),
            RemoveNodes => |request: RemoveNodes| {
                let mut absent = Vec::new();
                for id in request.ids {
                    match self.world.remove_node(id) {
                        Ok(()) => {}
                        Err(WorldError::NoNode(id)) => absent.push(id),
                        Err(error) => return Err(world_error(error)),
                    }
                }
                Ok(absent)
            },
            SetNodeVar => |request: SetNodeVar| {
                self.world
                    .set_node_var(request.id, request.name, request.value)
                    .map_err(world_error)
            },
            MoveNodes => |request: MoveNodes| {
                self.world.move_nodes(request.moves).map_err(world_error)
            },
            SetNodeParent => |request: SetNodeParent| {
                self.world
                    .set_node_parent(request.id, request.parent)
                    .map_err(world_error)
            },
            Save => |_| self.save(),
            ColumnTops => |request: ColumnTops| {
                self.world.column_tops(&request).map_err(world_error)
            },
            GetGround => |request: GetGround| self.ground(request.x, request.z),
            GetSpawn => |_| {
                let ground = self.ground(0, 0)?;
                Ok(ground::spawn_on(ground, ground::band(self.world.section_size()).0))
            },
            GetStats => |_| {
                Ok(WorldStats {
                    loaded_sections: self.world.loaded_sections() as u64,
                    unsaved_sections: self.world.unsaved_count() as u64,
                    viewers: self.streamer.viewer_count() as u64,
                    chunks_streamed: self.streamer.chunks_streamed,
                    saves: self.saves,
                    sections_saved: self.sections_saved,
                    save_errors: self.save_errors,
                })
            },
            Pregen => |region: Pregen| {
                self.pregen(
                    region.radius.min(1024) as i32,
                    region.height.min(1024) as i32,
                )
            },
            GetValue => |request: GetValue| {
                check_value_key(&request.space, &request.key).map_err(ModuleError::msg)?;
                self.world
                    .storage_mut()
                    .get_value(&request.space, &request.key)
                    .map_err(value_error)
            },
            PutValues => |request: PutValues| {
                check_value_writes(&request.writes)?;
                self.world
                    .storage_mut()
                    .put_values(&request.writes)
                    .map_err(value_error)
            },
            ListValues => |request: ListValues| {
                check_value_space(&request.space).map_err(ModuleError::msg)?;
                self.world
                    .storage_mut()
                    .list_values(&request)
                    .map_err(value_error)
            },
            ReadOldTable => |request: ReadOldTable| {
                old_tables::read_old_table(&self.old_tables_path(), &request.table)
                    .map_err(ModuleError::msg)
            },
            DropOldTables => |request: DropOldTables| {
                old_tables::drop_old_tables(&self.old_tables_path(), &request.tables)
                    .map_err(ModuleError::msg)
            },
            RunCommand => |command: RunCommand| self.run_command(command),
        })
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
        if kind == UnloadKind::Reload {
            let stash = self.stash()?;
            self.host.store_stash(&stash)?;
        } else {
            self.save_at_stop();
        }
        Ok(())
    }
}

/// Checks a [`PutValues`] call's writes against the limits of
/// `buildat_voxelworld_api` before storage sees them.
fn check_value_writes(writes: &[ValueWrite]) -> Result<(), ModuleError> {
    if writes.len() > MAX_VALUE_WRITES {
        return Err(ModuleError::msg(format!(
            "put_values of {} writes: at most {MAX_VALUE_WRITES}",
            writes.len()
        )));
    }
    for write in writes {
        check_value_key(&write.space, &write.key).map_err(ModuleError::msg)?;
        if let Some(value) = &write.value
            && value.len() > MAX_VALUE_BYTES
        {
            return Err(ModuleError::msg(format!(
                "the value {}/{} is {} bytes: at most {MAX_VALUE_BYTES}",
                write.space,
                write.key,
                value.len()
            )));
        }
    }
    Ok(())
}

fn value_error(error: storage::StorageError) -> ModuleError {
    ModuleError::msg(format!("modules' values: {error}"))
}

export_module!(VoxelWorld);
