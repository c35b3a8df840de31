//! `voxelworld`: the world players stand in.
//!
//! Owns: the world (`world.rs`: registries, loaded sections, chunks, nodes,
//! save rules) over its storage (`storage.rs`: `<world>/world.sqlite`), the
//! events `voxelworld:generation_request` and `voxelworld:node_volume_updated`,
//! the calls listed in `buildat_interface::voxelworld`, periodic saving,
//! saving on unload and stop, and `pregen` (generating and saving a region
//! through the generator module's `generate` call, each section once).
//! Does not own: terrain (a generator module, `worldgen` by default) or
//! sending chunks to players (a game or streaming module).
//!
//! Settings (`--set KEY=VALUE`): `voxelworld.max_loaded_sections` (default
//! 4096), `voxelworld.save_interval_s` (default 5), `voxelworld.generator`
//! (default `worldgen`), `voxelworld.view_radius` (chunks streamed around a
//! player, default 3), `voxelworld.stream_budget` (chunks in flight without
//! an ack, default 128). World config (`<world>/world.toml`, `[world]`):
//! `section_size = [w, h, d]` in chunks (default [2, 2, 2]), used when the
//! world is created; afterwards the stored size wins.

pub mod storage;
pub mod stream;
pub mod world;

use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::time::Instant;

use buildat_interface::network::{self, ClientDisconnected, PacketReceived, PeerId, SendBatch};
use buildat_interface::voxelworld::{
    self as api, BlockDefinition, GeneratedSection, GenerationRequest, NewNode, NodeVolumeUpdated,
    PregenReport, SectionStatus, SetNodeVar, SetSaveEnabled, SetVoxel, Sizes, Viewer,
};
use buildat_interface::{
    Event, Host, Module, ModuleError, UnloadKind, decode, encode, events, export_module, log,
};
use buildat_voxel::geometry::{CHUNK_SIZE, Pos, SectionSize};
use serde::{Deserialize, Serialize};
use storage::{SqliteStorage, StoredSection};
use world::{Committed, Loaded, World, WorldError};

const TMP_DATA: &str = "voxelworld";
/// How long before a section requested of the generator is asked again.
const GENERATION_RETRY: std::time::Duration = std::time::Duration::from_secs(10);
/// How long one tick may spend on the periodic save before going on.
const SAVE_SLICE: std::time::Duration = std::time::Duration::from_millis(15);

#[derive(Debug, Default, Deserialize)]
struct WorldToml {
    #[serde(default)]
    world: WorldSection,
}

#[derive(Debug, Default, Deserialize)]
struct WorldSection {
    section_size: Option<[i32; 3]>,
}

/// The section size a new world gets, from `world.toml`.
fn configured_section_size(world_path: &Path) -> Result<SectionSize, ModuleError> {
    let path = world_path.join("world.toml");
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Ok(SectionSize::default());
    };
    let parsed: WorldToml =
        toml::from_str(&text).map_err(|e| ModuleError::msg(format!("{}: {e}", path.display())))?;
    let size = parsed
        .world
        .section_size
        .map(SectionSize)
        .unwrap_or_default();
    if size.0.iter().any(|s| !(1..=64).contains(s)) {
        return Err(ModuleError::msg(format!(
            "{}: section_size must be 1 to 64 chunks on each side",
            path.display()
        )));
    }
    Ok(size)
}

/// A loaded section carried across a reload.
#[derive(Serialize, Deserialize)]
struct StashedSection {
    pos: Pos,
    save_enabled: bool,
    dirty: bool,
    nodes: Vec<(u64, Vec<u8>)>,
}

/// What crosses a reload: registries and every loaded section.
#[derive(Serialize, Deserialize)]
struct Stash {
    voxels: buildat_voxel::VoxelRegistry,
    blocks: buildat_voxel::BlockRegistry,
    sections: Vec<StashedSection>,
    /// Who is streamed what, so players keep their world across the reload.
    viewers: HashMap<PeerId, stream::Viewer>,
}

struct VoxelWorld {
    host: Host,
    world: World,
    streamer: stream::Streamer,
    /// The encoded `voxelworld:registry` packet, rebuilt when blocks register.
    registry_packet: Option<Vec<u8>>,
    ack_event: String,
    /// Sections asked of the generator, and when (asked again after a while
    /// in case the generator was down).
    requested: HashMap<Pos, Instant>,
    save_interval: f64,
    /// Seconds since the last periodic save finished.
    since_save: f64,
    generator: String,
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

    /// Sends each viewer what its budget allows and asks for the sections
    /// it waits on.
    fn pump(&mut self) -> Result<(), ModuleError> {
        self.pump_viewers(None)
    }

    /// [`Self::pump`] for `only` those viewers, or every viewer.
    fn pump_viewers(&mut self, only: Option<&[PeerId]>) -> Result<(), ModuleError> {
        if self.streamer.viewer_count() == 0 {
            return Ok(());
        }
        let registry = self.registry_packet.get_or_insert_with(|| {
            buildat_voxel::stream::encode(&buildat_voxel::stream::Registry {
                voxels: self.world.voxels.clone(),
            })
        });
        let outbox = self
            .streamer
            .pump(&mut self.world, registry, only)
            .map_err(world_error)?;
        for section in outbox.generate {
            self.request_generation(section)?;
        }
        let batches = outbox
            .packets
            .into_iter()
            .map(|(peer, packets)| SendBatch { peer, packets })
            .collect();
        self.send_batches(batches);
        Ok(())
    }

    /// Queues packets to peers without waiting on the network module.
    fn send_batches(&self, batches: Vec<SendBatch>) {
        if let Err(error) = network::queue(&self.host, batches) {
            log::debug!("streaming: {error}");
        }
    }

    fn set_viewer(&mut self, viewer: Viewer) -> Result<(), ModuleError> {
        if viewer
            .position
            .iter()
            .any(|p| !p.is_finite() || p.abs() > 1e8)
        {
            return Err(ModuleError::msg("viewer position out of the world"));
        }
        let packets = self.streamer.set_viewer(viewer.peer, viewer.position);
        self.send_packets(viewer.peer, packets);
        self.pump_viewers(Some(&[viewer.peer]))
    }

    fn send_packets(&self, peer: PeerId, packets: Vec<network::OutgoingPacket>) {
        if !packets.is_empty() {
            self.send_batches(vec![SendBatch { peer, packets }]);
        }
    }

    fn save(&mut self) -> Result<u32, ModuleError> {
        let saved = self.world.save_all().map_err(world_error)?;
        if saved > 0 {
            log::debug!("saved {saved} sections");
        }
        Ok(saved)
    }

    /// Asks the generator for a section, once (again after a while).
    fn request_generation(&mut self, section: Pos) -> Result<(), ModuleError> {
        let now = Instant::now();
        if self
            .requested
            .get(&section)
            .is_some_and(|asked| now.duration_since(*asked) < GENERATION_RETRY)
        {
            return Ok(());
        }
        self.requested.insert(section, now);
        self.host.emit(&GenerationRequest { section })?;
        Ok(())
    }

    fn load_or_generate(&mut self, section: Pos) -> Result<SectionStatus, ModuleError> {
        let loaded = self.world.load_section(section).map_err(world_error)?;
        if loaded != Loaded::Ready {
            self.request_generation(section)?;
        }
        let (generated, save_enabled) =
            self.world.section_status(section).unwrap_or((false, false));
        Ok(SectionStatus {
            generated,
            save_enabled,
        })
    }

    /// Generates and saves every section with x and z within `radius` of the
    /// origin and y within `height`, skipping those already stored.
    fn pregen(&mut self, radius: i32, height: i32) -> Result<PregenReport, ModuleError> {
        let mut report = PregenReport::default();
        let mut missing = Vec::new();
        for y in -height..=height {
            for z in -radius..=radius {
                for x in -radius..=radius {
                    if self.world.is_stored([x, y, z]).map_err(world_error)? {
                        report.already_present += 1;
                    } else {
                        missing.push([x, y, z]);
                    }
                }
            }
        }
        let total = missing.len();
        log::info!(
            "pregen: {total} sections to generate, {} already present",
            report.already_present
        );
        let started = Instant::now();
        let mut last_report = Instant::now();
        for batch in missing.chunks(8) {
            let generated: Vec<GeneratedSection> =
                self.host
                    .call_typed(&self.generator, api::GENERATOR_GENERATE, &batch.to_vec())?;
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
                report.generated += 1;
            }
            // Each section is written in its own transaction: an interrupted
            // run keeps what it finished, and a rerun skips it.
            self.save()?;
            if last_report.elapsed().as_secs_f64() >= 1.0 {
                last_report = Instant::now();
                log::info!(
                    "pregen: {}/{total} sections ({:.0}%)",
                    report.generated,
                    report.generated as f64 * 100.0 / total.max(1) as f64
                );
            }
        }
        log::info!(
            "pregen: generated {} sections in {:.1} s",
            report.generated,
            started.elapsed().as_secs_f64()
        );
        Ok(report)
    }

    fn stash(&mut self) -> Result<Stash, ModuleError> {
        self.save()?;
        Ok(Stash {
            viewers: self.streamer.take_viewers(),
            voxels: self.world.voxels.clone(),
            blocks: self.world.blocks.clone(),
            sections: self
                .world
                .export_sections()
                .into_iter()
                .map(|(stored, dirty)| StashedSection {
                    pos: stored.pos,
                    save_enabled: stored.save_enabled,
                    dirty,
                    nodes: stored.nodes,
                })
                .collect(),
        })
    }

    fn restore(&mut self, stash: Stash) -> Result<(), ModuleError> {
        self.streamer.restore_viewers(stash.viewers);
        self.world.voxels = stash.voxels;
        self.world.voxels.reindex();
        self.world.blocks = stash.blocks;
        for section in stash.sections {
            let stored = StoredSection {
                pos: section.pos,
                save_enabled: section.save_enabled,
                generated: true,
                nodes: section.nodes,
            };
            self.world
                .import_section(stored, section.dirty)
                .map_err(world_error)?;
        }
        Ok(())
    }
}

impl Module for VoxelWorld {
    fn create(host: Host) -> Result<Self, ModuleError> {
        let world_path = host.world_path();
        std::fs::create_dir_all(&world_path)?;
        let section_size = configured_section_size(&world_path)?;
        let path = world_path.join("world.sqlite");
        let storage = SqliteStorage::open(&path, section_size)
            .map_err(|e| ModuleError::msg(format!("{}: {e}", path.display())))?;
        let budget = host.get_setting("voxelworld.max_loaded_sections", 4096usize)?;
        let radius = host.get_setting("voxelworld.view_radius", 3i32)?;
        let stream_budget = host.get_setting("voxelworld.stream_budget", 128u32)?;
        Ok(Self {
            host,
            world: World::new(Box::new(storage), budget),
            streamer: stream::Streamer::new(radius, stream_budget),
            registry_packet: None,
            ack_event: network::packet_received_event(buildat_voxel::stream::ACK),
            requested: HashMap::new(),
            save_interval: host.get_setting("voxelworld.save_interval_s", 5.0)?,
            since_save: 0.0,
            generator: host
                .get_config("voxelworld.generator")
                .unwrap_or_else(|| "worldgen".to_string()),
        })
    }

    fn init(&mut self) -> Result<(), ModuleError> {
        self.host.sub_event(events::Tick::NAME)?;
        self.host.sub_event(ClientDisconnected::NAME)?;
        self.host.sub_event(&self.ack_event)?;
        self.host.sub_event(Viewer::NAME)?;
        Ok(())
    }

    fn event(&mut self, name: &str, payload: &[u8]) -> Result<(), ModuleError> {
        match name {
            events::Start::NAME => {
                let [w, h, d] = self.world.section_size().0;
                log::info!("world open: sections of {w}x{h}x{d} chunks of {CHUNK_SIZE}^3 voxels");
            }
            events::Continue::NAME => {
                if let Some(bytes) = self.host.tmp_restore_data(TMP_DATA) {
                    self.restore(decode(&bytes)?)?;
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
                    let (saved, done) = self.world.save_some(deadline).map_err(world_error)?;
                    if saved > 0 {
                        log::debug!("saved {saved} sections");
                    }
                    if done {
                        self.since_save = 0.0;
                    }
                }
                self.pump()?;
            }
            ClientDisconnected::NAME => {
                let gone: ClientDisconnected = decode(payload)?;
                self.streamer.remove_viewer(gone.peer);
            }
            Viewer::NAME => self.set_viewer(decode(payload)?)?,
            _ if name == self.ack_event => {
                let packet: PacketReceived = decode(payload)?;
                match buildat_voxel::stream::decode::<buildat_voxel::stream::Ack>(&packet.data) {
                    Ok(ack) => {
                        self.streamer.ack(packet.peer, ack.chunks);
                        self.pump_viewers(Some(&[packet.peer]))?;
                    }
                    Err(error) => log::warn!("peer {}: {error}", packet.peer),
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn call(&mut self, function: &str, payload: &[u8]) -> Result<Vec<u8>, ModuleError> {
        Ok(match function {
            api::REGISTER_BLOCK => {
                let block: BlockDefinition = decode(payload)?;
                let known = self.world.voxels.len();
                let ids = self.world.register_block(block).map_err(world_error)?;
                if self.world.voxels.len() != known {
                    self.registry_packet = None;
                    self.streamer.registry_changed();
                }
                encode(&ids)
            }
            api::SET_VIEWER => {
                self.set_viewer(decode(payload)?)?;
                encode(&())
            }
            api::REMOVE_VIEWER => {
                self.streamer.remove_viewer(decode(payload)?);
                encode(&())
            }
            api::GET_REGISTRY => encode(&self.world.voxels),
            api::GET_SIZES => encode(&Sizes {
                chunk_size: CHUNK_SIZE,
                section_size: self.world.section_size().0,
            }),
            api::GET_VOXEL => {
                let pos: Pos = decode(payload)?;
                encode(&self.world.get_voxel(pos).map_err(world_error)?)
            }
            api::SET_VOXEL => {
                let request: SetVoxel = decode(payload)?;
                self.world
                    .set_voxel(request.pos, request.voxel)
                    .map_err(world_error)?;
                encode(&())
            }
            api::COMMIT => {
                let updated = self.world.commit();
                let holders = self.announce(&updated)?;
                // Changed chunks go out now, right behind the game's news.
                self.pump_viewers(Some(&holders))?;
                encode(&(updated.len() as u32))
            }
            api::LOAD_OR_GENERATE_SECTION => encode(&self.load_or_generate(decode(payload)?)?),
            api::SET_SECTION_SAVE_ENABLED => {
                let request: SetSaveEnabled = decode(payload)?;
                self.world
                    .set_section_save_enabled(request.section, request.enabled)
                    .map_err(world_error)?;
                encode(&())
            }
            api::APPLY_GENERATED => {
                let generated: GeneratedSection = decode(payload)?;
                let chunks = generated
                    .chunks
                    .into_iter()
                    .map(|(pos, data)| (pos, data.blob))
                    .collect();
                let updated = self
                    .world
                    .apply_generated(generated.section, chunks)
                    .map_err(world_error)?;
                self.requested.remove(&generated.section);
                let updated: Vec<Committed> = updated
                    .into_iter()
                    .map(|(node_id, chunk)| Committed {
                        node_id,
                        chunk,
                        voxels: None,
                    })
                    .collect();
                self.announce(&updated)?;
                self.pump()?;
                encode(&())
            }
            api::GET_CHUNK => {
                let chunk: Pos = decode(payload)?;
                encode(&self.world.get_chunk(chunk).map_err(world_error)?)
            }
            api::CREATE_NODE => {
                let request: NewNode = decode(payload)?;
                encode(
                    &self
                        .world
                        .create_node(request.position, request.save_enabled, request.vars)
                        .map_err(world_error)?,
                )
            }
            api::GET_NODE => encode(&self.world.get_node(decode(payload)?)),
            api::REMOVE_NODE => {
                self.world
                    .remove_node(decode(payload)?)
                    .map_err(world_error)?;
                encode(&())
            }
            api::SET_NODE_VAR => {
                let request: SetNodeVar = decode(payload)?;
                self.world
                    .set_node_var(request.id, request.name, request.value)
                    .map_err(world_error)?;
                encode(&())
            }
            api::SAVE => encode(&self.save()?),
            api::PREGEN => {
                let region: api::Pregen = decode(payload)?;
                encode(&self.pregen(
                    region.radius.min(1024) as i32,
                    region.height.min(1024) as i32,
                )?)
            }
            other => return Err(ModuleError::UnknownFunction(other.to_string())),
        })
    }

    fn unload(&mut self, kind: UnloadKind) -> Result<(), ModuleError> {
        if kind == UnloadKind::Reload {
            let stash = self.stash()?;
            self.host.tmp_store_data(TMP_DATA, &encode(&stash))?;
        } else {
            let saved = self.save()?;
            log::info!("world saved ({saved} sections written)");
        }
        Ok(())
    }
}

export_module!(VoxelWorld);
