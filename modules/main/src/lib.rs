//! `main`: a small default game, so a new world does something.
//!
//! Owns: players (join with a name, spawn on the terrain surface at the
//! origin, move), digging and placing voxels with validation (`rules.rs`:
//! move distance, reach, known voxel names, placing into air only, action
//! rate), sharing moves and edits once per tick with the players near them
//! (`main:moves`, `main:edits`, setting `main.news_radius` in voxels, default
//! 128; the chunk itself goes through the world stream), saving edited
//! sections (they become save-enabled), and telling `voxelworld` where each
//! player is so the world streams around it. Its `client_lua/` is what
//! clients run.
//! Does not own: the world or its stream (`voxelworld`), sockets (`network`).

pub mod rules;

use std::collections::BTreeMap;
use std::time::Instant;

use buildat_interface::client_file::FilesTransmitted;
use buildat_interface::network::{self, ClientDisconnected, PacketReceived, PeerId};
use buildat_interface::voxelworld::{
    self as world, SectionStatus, SetSaveEnabled, SetVoxel, Sizes, Viewer,
};
use buildat_interface::{
    Event, Host, Module, ModuleError, UnloadKind, encode, events, export_module, log,
};
use buildat_voxel::geometry::{self, Pos, SectionSize};
use buildat_voxel::{AIR, VoxelRegistry};
use rules::RateLimit;

/// Sections (y) searched for the surface at the spawn column.
const SPAWN_SECTIONS_Y: [i32; 3] = [1, 0, -1];

struct Player {
    name: String,
    position: [f64; 3],
    actions: RateLimit,
}

struct Game {
    host: Host,
    players: BTreeMap<PeerId, Player>,
    /// Names of peers waiting for the spawn area to be generated.
    joining: BTreeMap<PeerId, String>,
    registry: VoxelRegistry,
    section_size: SectionSize,
    spawn: Option<[f64; 3]>,
    packet_events: BTreeMap<String, &'static str>,
    /// News for the players near it at the next tick: the latest position
    /// of each player that moved, and the edits in the order they were made.
    news: rules::News,
    /// How far news travels, in voxels (x and z).
    news_radius: f64,
}

impl Game {
    fn send(&self, peer: PeerId, name: &str, data: Vec<u8>) {
        let packets = vec![network::OutgoingPacket {
            name: name.to_string(),
            data,
        }];
        self.send_batches(vec![network::SendBatch { peer, packets }]);
    }

    /// Queues packets to peers without waiting on the network module (an
    /// event, not a call: the game's thread never waits to send).
    fn send_batches(&self, batches: Vec<network::SendBatch>) {
        if let Err(error) = network::queue(&self.host, batches) {
            log::debug!("sending: {error}");
        }
    }

    /// Sends a packet to every connected peer in one call (players ignore
    /// news about themselves).
    fn broadcast(&self, name: &str, data: Vec<u8>) {
        if let Err(error) = network::broadcast(&self.host, name, data) {
            log::debug!("broadcasting {name}: {error}");
        }
    }

    /// Tells a player its action was refused (it stays connected).
    fn refuse(&self, peer: PeerId, reason: &str) -> Result<(), ModuleError> {
        self.send(peer, "main:refused", reason.as_bytes().to_vec());
        Ok(())
    }

    fn refresh_registry(&mut self) -> Result<(), ModuleError> {
        let mut registry: VoxelRegistry =
            self.host
                .call_typed(world::MODULE, world::GET_REGISTRY, &())?;
        registry.reindex();
        self.registry = registry;
        Ok(())
    }

    fn get_voxel(&self, pos: Pos) -> Result<Option<u32>, ModuleError> {
        self.host.call_typed(world::MODULE, world::GET_VOXEL, &pos)
    }

    /// The spawn point once the sections around the origin are generated:
    /// on the first solid voxel from the top at x = 0, z = 0.
    fn find_spawn(&mut self) -> Result<Option<[f64; 3]>, ModuleError> {
        if let Some(spawn) = self.spawn {
            return Ok(Some(spawn));
        }
        for sy in SPAWN_SECTIONS_Y {
            let status: SectionStatus = self.host.call_typed(
                world::MODULE,
                world::LOAD_OR_GENERATE_SECTION,
                &[0, sy, 0],
            )?;
            if !status.generated {
                return Ok(None);
            }
        }
        self.refresh_registry()?;
        let [_, h, _] = self.section_size.0;
        let top = (SPAWN_SECTIONS_Y[0] + 1) * h * geometry::CHUNK_SIZE - 1;
        let bottom = SPAWN_SECTIONS_Y[2] * h * geometry::CHUNK_SIZE;
        for y in (bottom..=top).rev() {
            let Some(voxel) = self.get_voxel([0, y, 0])? else {
                return Ok(None);
            };
            let solid = self
                .registry
                .get(buildat_voxel::VoxelInstance(voxel).type_id())
                .is_some_and(|d| d.physically_solid);
            if solid {
                let spawn = [0.5, f64::from(y + 1), 0.5];
                self.spawn = Some(spawn);
                return Ok(Some(spawn));
            }
        }
        let spawn = [0.5, f64::from(top), 0.5];
        self.spawn = Some(spawn);
        Ok(Some(spawn))
    }

    fn spawn_waiting(&mut self) -> Result<(), ModuleError> {
        if self.joining.is_empty() {
            return Ok(());
        }
        let Some(position) = self.find_spawn()? else {
            return Ok(());
        };
        for (peer, name) in std::mem::take(&mut self.joining) {
            log::info!("player {name} (peer {peer}) joined at {position:?}");
            // Its spawn and everyone already here, in one call.
            let mut packets = vec![network::OutgoingPacket {
                name: "main:spawn".into(),
                data: rules::encode_spawn(peer, position),
            }];
            packets.extend(
                self.players
                    .iter()
                    .map(|(other, player)| network::OutgoingPacket {
                        name: "main:player".into(),
                        data: rules::encode_player(*other, player.position, &player.name),
                    }),
            );
            self.send_batches(vec![network::SendBatch { peer, packets }]);
            self.broadcast("main:player", rules::encode_player(peer, position, &name));
            self.players.insert(
                peer,
                Player {
                    name,
                    position,
                    actions: RateLimit::default(),
                },
            );
            let _: () = self.host.call_typed(
                world::MODULE,
                world::SET_VIEWER,
                &Viewer { peer, position },
            )?;
        }
        Ok(())
    }

    fn on_move(&mut self, peer: PeerId, data: &[u8]) -> Result<(), ModuleError> {
        let position = match rules::parse_position(data) {
            Ok(position) => position,
            Err(reason) => return self.refuse(peer, &reason),
        };
        let Some(player) = self.players.get_mut(&peer) else {
            return self.refuse(peer, "join first");
        };
        if rules::distance(player.position, position) > rules::MAX_MOVE {
            let reason = format!("moved more than {} voxels at once", rules::MAX_MOVE);
            return self.refuse(peer, &reason);
        }
        player.position = position;
        self.news.moved(peer, position);
        // An event, not a call: moving never waits for the world.
        self.host.emit(&Viewer { peer, position })?;
        Ok(())
    }

    /// Checks that `peer` may act on `voxel` now; the reason if not.
    fn check_action(&mut self, peer: PeerId, voxel: Pos) -> Result<(), String> {
        let player = self.players.get_mut(&peer).ok_or("join first")?;
        if !rules::in_reach(player.position, voxel) {
            return Err(format!("{voxel:?} is out of reach"));
        }
        if !player.actions.allow(Instant::now()) {
            return Err(format!(
                "more than {} actions a second",
                rules::MAX_ACTIONS_PER_SECOND
            ));
        }
        Ok(())
    }

    /// Sets a voxel, makes its section saved from now on, and shares it.
    fn edit(&mut self, peer: PeerId, voxel: Pos, id: u32, name: &str) -> Result<(), ModuleError> {
        let _: () = self.host.call_typed(
            world::MODULE,
            world::SET_VOXEL,
            &SetVoxel {
                pos: voxel,
                voxel: id,
            },
        )?;
        let section = self
            .section_size
            .section_of_chunk(geometry::chunk_of_voxel(voxel));
        let _: () = self.host.call_typed(
            world::MODULE,
            world::SET_SECTION_SAVE_ENABLED,
            &SetSaveEnabled {
                section,
                enabled: true,
            },
        )?;
        let _: u32 = self.host.call_typed(world::MODULE, world::COMMIT, &())?;
        self.news.edit(peer, voxel, name);
        Ok(())
    }

    /// Sends the news gathered since the last tick: each player gets one
    /// packet of the moves and one of the edits near it
    /// (`main.news_radius`). A packet per move or edit per player, or all
    /// news to everyone, would grow with the square of the player count.
    fn send_news(&mut self) {
        if self.news.is_empty() {
            return;
        }
        let players: Vec<(PeerId, [f64; 3])> = self
            .players
            .iter()
            .map(|(peer, player)| (*peer, player.position))
            .collect();
        let batches = self
            .news
            .share(&players, self.news_radius)
            .into_iter()
            .map(|(peer, (moves, edits))| {
                let packets = [("main:moves", moves), ("main:edits", edits)]
                    .into_iter()
                    .filter_map(|(name, data)| {
                        Some(network::OutgoingPacket {
                            name: name.into(),
                            data: data?,
                        })
                    })
                    .collect();
                network::SendBatch { peer, packets }
            })
            .collect();
        self.send_batches(batches);
    }

    fn on_dig(&mut self, peer: PeerId, data: &[u8]) -> Result<(), ModuleError> {
        let voxel = match rules::parse_voxel(data) {
            Ok((voxel, [])) => voxel,
            Ok(_) => return self.refuse(peer, "main:dig is 12 bytes"),
            Err(reason) => return self.refuse(peer, &reason),
        };
        if let Err(reason) = self.check_action(peer, voxel) {
            return self.refuse(peer, &reason);
        }
        match self.get_voxel(voxel)? {
            None => self.refuse(peer, "that part of the world is not generated yet"),
            Some(current) if buildat_voxel::VoxelInstance(current).type_id() == AIR => {
                self.refuse(peer, "nothing to dig there")
            }
            Some(_) => self.edit(peer, voxel, AIR, buildat_voxel::AIR_NAME),
        }
    }

    fn on_place(&mut self, peer: PeerId, data: &[u8]) -> Result<(), ModuleError> {
        let (voxel, name) = match rules::parse_voxel(data) {
            Ok((voxel, name)) => (voxel, String::from_utf8_lossy(name).into_owned()),
            Err(reason) => return self.refuse(peer, &reason),
        };
        if let Err(reason) = self.check_action(peer, voxel) {
            return self.refuse(peer, &reason);
        }
        if self.registry.get_id(&name).is_none() {
            self.refresh_registry()?;
        }
        let Some(id) = self.registry.get_id(&name).filter(|id| *id != AIR) else {
            return self.refuse(peer, &format!("unknown voxel {name:?}"));
        };
        match self.get_voxel(voxel)? {
            Some(current) if buildat_voxel::VoxelInstance(current).type_id() == AIR => {
                self.edit(peer, voxel, id, &name)
            }
            Some(_) => self.refuse(peer, "that place is not empty"),
            None => self.refuse(peer, "that part of the world is not generated yet"),
        }
    }
}

impl Game {
    fn stash(&self) -> Stash {
        Stash {
            players: self
                .players
                .iter()
                .map(|(peer, p)| (*peer, p.name.clone(), p.position))
                .collect(),
            joining: self.joining.clone(),
            spawn: self.spawn,
            news: self.news.clone(),
        }
    }
}

impl Module for Game {
    fn create(host: Host) -> Result<Self, ModuleError> {
        let packet_events = [
            "main:join",
            "main:move",
            "main:dig",
            "main:place",
            "main:ping",
        ]
        .into_iter()
        .map(|name| (network::packet_received_event(name), name))
        .collect();
        Ok(Self {
            host,
            players: BTreeMap::new(),
            joining: BTreeMap::new(),
            registry: VoxelRegistry::default(),
            section_size: SectionSize::default(),
            spawn: None,
            packet_events,
            news: rules::News::default(),
            news_radius: host.get_setting("main.news_radius", 128.0)?,
        })
    }

    fn init(&mut self) -> Result<(), ModuleError> {
        for name in self.packet_events.keys() {
            self.host.sub_event(name)?;
        }
        self.host.sub_event(ClientDisconnected::NAME)?;
        self.host.sub_event(FilesTransmitted::NAME)?;
        self.host.sub_event(events::Tick::NAME)?;
        Ok(())
    }

    fn event(&mut self, name: &str, payload: &[u8]) -> Result<(), ModuleError> {
        match name {
            events::Start::NAME | events::Continue::NAME => {
                let sizes: Sizes = self.host.call_typed(world::MODULE, world::GET_SIZES, &())?;
                self.section_size = SectionSize(sizes.section_size);
                self.refresh_registry()?;
                if let Some(bytes) = self.host.tmp_restore_data(TMP_DATA) {
                    let stash: Stash = buildat_interface::decode(&bytes)?;
                    self.spawn = stash.spawn;
                    self.joining = stash.joining;
                    self.news = stash.news;
                    for (peer, name, position) in stash.players {
                        let actions = RateLimit::default();
                        self.players.insert(
                            peer,
                            Player {
                                name,
                                position,
                                actions,
                            },
                        );
                    }
                    log::info!("resumed with {} players", self.players.len());
                }
            }
            events::Tick::NAME => {
                self.spawn_waiting()?;
                self.send_news();
            }
            ClientDisconnected::NAME => {
                let gone: ClientDisconnected = buildat_interface::decode(payload)?;
                self.joining.remove(&gone.peer);
                if let Some(player) = self.players.remove(&gone.peer) {
                    self.news.forget(gone.peer);
                    log::info!("player {} (peer {}) left", player.name, gone.peer);
                    self.broadcast("main:player_left", gone.peer.to_le_bytes().to_vec());
                }
            }
            FilesTransmitted::NAME => {}
            _ => {
                let Some(packet_name) = self.packet_events.get(name).copied() else {
                    return Ok(());
                };
                let packet: PacketReceived = buildat_interface::decode(payload)?;
                let peer = packet.peer;
                match packet_name {
                    "main:join" => match rules::parse_name(&packet.data) {
                        Ok(player_name) if !self.players.contains_key(&peer) => {
                            self.joining.insert(peer, player_name);
                            self.spawn_waiting()?;
                        }
                        Ok(_) => self.refuse(peer, "already joined")?,
                        Err(reason) => self.refuse(peer, &reason)?,
                    },
                    "main:move" => self.on_move(peer, &packet.data)?,
                    "main:dig" => self.on_dig(peer, &packet.data)?,
                    "main:place" => self.on_place(peer, &packet.data)?,
                    "main:ping" => {
                        let mut data = packet.data;
                        data.truncate(64);
                        self.send(peer, "main:pong", data);
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }

    fn unload(&mut self, kind: UnloadKind) -> Result<(), ModuleError> {
        if kind == UnloadKind::Reload {
            self.host.tmp_store_data(TMP_DATA, &encode(&self.stash()))?;
        }
        Ok(())
    }
}

/// What crosses a reload of the game: every player, so nobody is dropped.
#[derive(serde::Serialize, serde::Deserialize)]
struct Stash {
    players: Vec<(PeerId, String, [f64; 3])>,
    joining: BTreeMap<PeerId, String>,
    spawn: Option<[f64; 3]>,
    /// News not sent yet: it goes out at the next version's first tick.
    news: rules::News,
}

const TMP_DATA: &str = "main";

export_module!(Game);
