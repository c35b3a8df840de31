//! The `items` module: one registry of items for every module and client.
//! A block item for every block of voxelworld's registry (asked at start,
//! again every `items.voxel_poll_seconds` and whenever a registration names
//! a voxel it does not know), refined and extended by `register_items`
//! (tools, craft items, groups, drops); `get_items` answers the whole
//! registry; `items:changed` tells modules it changed; `items:defs` tells
//! every joined player (after `main:player_joined`, and to all again on a
//! change).
//!
//! Owns: the registry and its version, who has been sent the definitions.
//! Does not own: what a definition means (`buildat-items-api`), stacks in
//! inventories (`inventory`), digging (`main`). The pure part is
//! `registry.rs`.

mod registry;

use std::collections::{BTreeMap, BTreeSet};

use buildat_interface::events::{self, Tick};
use buildat_interface::{Host, Module, ModuleError, Receive, Stash, export_module, log};
use buildat_items_api::{GetItems, ItemDef, ItemRegistry, ItemsChanged, RegisterItems};
use buildat_network_api::{self as network, ClientDisconnected, Multicast, OutgoingPacket, PeerId};
use buildat_voxelworld_api::GetRegistry;
use serde::{Deserialize, Serialize};

buildat_interface::settings! {
    /// What operators set (`--set items.KEY=VALUE`).
    pub(crate) struct ItemsSettings in "items" {
        /// Seconds between looks at voxelworld's registry for new blocks (0: only at start and on registrations).
        voxel_poll_seconds: f64 = 2.0,
    }
}

/// `main:player_joined` / `main:player_left` as this module reads them (by
/// name: items loads before main and does not build against it).
#[derive(Debug, Clone, Serialize, Deserialize)]
struct PlayerEvent {
    name: String,
    peer: PeerId,
}
const PLAYER_JOINED: &str = "main:player_joined";
const PLAYER_LEFT: &str = "main:player_left";

/// What crosses a reload: the registrations, the players told, the version.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Kept {
    registered: BTreeMap<String, ItemDef>,
    peers: BTreeSet<PeerId>,
    version: u64,
}
impl Stash for Kept {
    const LAYOUT: u32 = 1;
}

pub struct Items {
    host: Host,
    settings: ItemsSettings,
    /// The block names of voxelworld's registry that have an item.
    blocks: BTreeSet<String>,
    /// The voxel registry's length when last read.
    voxels_seen: usize,
    /// What modules registered, by name.
    registered: BTreeMap<String, ItemDef>,
    registry: ItemRegistry,
    /// Joined players: they get `items:defs`.
    peers: BTreeSet<PeerId>,
    since_poll: f64,
}

impl Items {
    fn start(&mut self) -> Result<(), ModuleError> {
        self.settings = buildat_interface::settings::Settings::read(&self.host)?;
        self.refresh_voxels(true)
    }

    /// Reads voxelworld's registry; rebuilds (and tells) when its blocks
    /// changed, or always when `force`.
    fn refresh_voxels(&mut self, force: bool) -> Result<(), ModuleError> {
        let voxels = self.host.call(&GetRegistry {})?;
        if voxels.len() != self.voxels_seen || force {
            self.voxels_seen = voxels.len();
            let (blocks, skipped) = registry::blocks_of(&voxels);
            for name in skipped {
                log::warn!("block {name:?} gets no item: its name is not a valid item name");
            }
            if blocks != self.blocks || force {
                self.blocks = blocks;
                self.rebuild()?;
            }
        }
        Ok(())
    }

    /// Builds the registry anew under the next version, tells modules and
    /// every joined player.
    fn rebuild(&mut self) -> Result<(), ModuleError> {
        self.registry = ItemRegistry {
            version: self.registry.version + 1,
            items: registry::build(&self.blocks, &self.registered),
        };
        self.host.emit(&ItemsChanged {
            version: self.registry.version,
        })?;
        let peers: Vec<PeerId> = self.peers.iter().copied().collect();
        self.send_defs(peers)
    }

    fn send_defs(&self, peers: Vec<PeerId>) -> Result<(), ModuleError> {
        if peers.is_empty() {
            return Ok(());
        }
        let packet = OutgoingPacket::new(&self.registry.defs_packet())?;
        network::queue_multicasts(&self.host, vec![Multicast { peers, packet }])
    }

    fn register(&mut self, request: RegisterItems) -> Result<(), ModuleError> {
        let unknown_voxel = request
            .items
            .iter()
            .filter_map(ItemDef::voxel)
            .any(|voxel| !self.blocks.contains(voxel));
        if unknown_voxel {
            self.refresh_voxels(false)?;
        }
        registry::check_registration(&request.items, &self.blocks)
            .map_err(|error| ModuleError::msg(error.to_string()))?;
        for def in request.items {
            self.registered.insert(def.name.clone(), def);
        }
        self.rebuild()
    }

    fn tick(&mut self, dtime: f64) -> Result<(), ModuleError> {
        let every = self.settings.voxel_poll_seconds;
        if every <= 0.0 {
            return Ok(());
        }
        self.since_poll += dtime;
        if self.since_poll >= every {
            self.since_poll = 0.0;
            if let Err(error) = self.refresh_voxels(false) {
                log::warn!("reading voxelworld's registry: {error}");
            }
        }
        Ok(())
    }

    fn joined(&mut self, peer: PeerId) -> Result<(), ModuleError> {
        self.peers.insert(peer);
        self.send_defs(vec![peer])
    }

    fn restore(&mut self, kept: Kept) {
        self.registered = kept.registered;
        self.peers = kept.peers;
        self.registry.version = kept.version;
    }

    fn keep(&mut self) -> Kept {
        Kept {
            registered: std::mem::take(&mut self.registered),
            peers: std::mem::take(&mut self.peers),
            version: self.registry.version,
        }
    }
}

impl Module for Items {
    fn create(host: Host) -> Result<Self, ModuleError> {
        Ok(Self {
            host,
            settings: ItemsSettings::default(),
            blocks: BTreeSet::new(),
            voxels_seen: 0,
            registered: BTreeMap::new(),
            registry: ItemRegistry::default(),
            peers: BTreeSet::new(),
            since_poll: 0.0,
        })
    }

    fn receive(table: &mut Receive<Self>) {
        table
            .settings::<ItemsSettings>()
            .event(|items, _: events::Start| items.start())
            .event(|items, _: events::Continue| items.start())
            .event(|items, tick: Tick| items.tick(tick.dtime))
            .event_named(PLAYER_JOINED, |items, joined: PlayerEvent| {
                log::debug!("sending the item definitions to {}", joined.name);
                items.joined(joined.peer)
            })
            .event_named(PLAYER_LEFT, |items, left: PlayerEvent| {
                log::debug!("{} left", left.name);
                items.peers.remove(&left.peer);
                Ok(())
            })
            .event(|items, gone: ClientDisconnected| {
                items.peers.remove(&gone.peer);
                Ok(())
            })
            .call(|items, request: RegisterItems| items.register(request))
            .call(|items, _: GetItems| Ok(items.registry.clone()))
            .stash(Items::keep, |items, kept: Kept| {
                items.restore(kept);
                Ok(())
            });
    }
}

export_module!(Items);

#[cfg(test)]
mod tests;
