//! `inventory`: named lists of item slots owned by players, voxels (a
//! chest, a crafting table), modules and drops, changed only by
//! transactions applied and stored whole or not at all before anyone is
//! answered (the anti-duplication rule, docs/ARCHITECTURE.md).
//!
//! Owns: the inventories in memory, keyed by owner (`held`: loaded from
//! the world's values on first use, a player's when it joins; memory is
//! authoritative while loaded and always equal to what is stored),
//! transactions (`tx.rs`: the rules of a change; `commit.rs`: staging a
//! batch, storing it with `PutValues` or, when a transaction carries a
//! world edit, with voxelworld `EditTogether`, then memory and the
//! peers), the storage layout (`store.rs`), the client's actions
//! (`actions.rs`: `inventory:act` judged for ownership and reach, answered
//! after the store), drops on the ground (`drops.rs`), the calls of
//! `buildat-inventory-api` and the console commands `census` and `give`.
//! Where players are comes from their nodes (`players.rs`); a dead player
//! (`health:died` until `health:respawned`) picks up no drop. Does not own:
//! item definitions (`items`), recipes (`crafting`), the players (`main`),
//! the storage (`voxelworld`).
//!
//! Settings: `inventory.reach` (voxels from a player to a voxel whose
//! inventory it uses, default 6), `inventory.drop_seconds` (how long a
//! drop lies before it is gone, default 300, 0 = never).

mod actions;
mod commit;
mod drops;
mod players;
mod store;
mod tx;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use buildat_crafting_api::{CraftMatch, MatchGrid};
use buildat_format::Packet;
use buildat_health_api::{Died, Respawned};
use buildat_interface::settings::Settings;
use buildat_interface::stash::Stash;
use buildat_interface::{
    Host, Module, ModuleError, Receive, UnloadKind, events, export_module, log,
};
use buildat_inventory_api::{
    Act, Census, Change, CreateInventory, GetInventory, GetSlots, Inventory, ItemStack, LIST_CRAFT,
    LIST_MAIN, Lists, MAX_LIST_NAME, MAX_LISTS, MAX_SLOTS, Overflow, Owner, PLAYER_CRAFT_SLOTS,
    PLAYER_MAIN_SLOTS, Preview, RemoveInventory, SlotRef, Transact, TransactMany, Transaction,
    TxOutcome, VoxelPos,
};
use buildat_items_api::{GetItems, ItemRegistry, ItemsChanged};
use buildat_main_api::{PlayerJoined, PlayerLeft};
use buildat_network_api::{self as network, OutgoingPacket, PeerId, ReceivePackets, SendBatch};
use buildat_voxelworld_api::NodesChanged;
use serde::{Deserialize, Serialize};

use store::Stored;

buildat_interface::settings! {
    /// The inventories' settings (`--set inventory.KEY=VALUE`).
    pub(crate) struct InventorySettings in "inventory" {
        /// Voxels from a player to a voxel whose inventory it may use.
        reach: f64 = 6.0,
        /// Seconds a drop lies on the ground before it is gone (0: never).
        drop_seconds: f64 = 300.0,
    }
}

/// `census`: every item in every inventory, drop and chest, from storage.
#[derive(clap::Parser)]
#[command(
    name = "census",
    about = "count every item in every inventory, drop and chest (read from storage)"
)]
struct CensusCommand {}

/// `give NAME ITEM [COUNT]`: the operator gives a player items.
#[derive(clap::Parser)]
#[command(name = "give", about = "give a player items (into its main list)")]
struct GiveCommand {
    /// The player's account name.
    player: String,
    /// The item's name.
    item: String,
    /// How many (default 1).
    count: Option<u16>,
}

/// A peer playing: its account and the voxels whose inventory it opened.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Peer {
    name: String,
    open: BTreeSet<VoxelPos>,
}

/// What a reload carries over: who plays (the inventories themselves are
/// stored).
#[derive(Debug, Default, Serialize, Deserialize)]
struct Kept {
    peers: BTreeMap<PeerId, Peer>,
}

impl Stash for Kept {
    const LAYOUT: u32 = 1;
}

pub(crate) struct Inventories {
    host: Host,
    items: ItemRegistry,
    /// Inventories in memory, as stored.
    held: HashMap<Owner, Stored>,
    /// Owners known to have no inventory.
    absent: HashSet<Owner>,
    peers: BTreeMap<PeerId, Peer>,
    reach: f64,
    drops: drops::Drops,
    /// Where the players are (their nodes).
    players: players::PlayerNodes,
    /// Actions judged since the last tick: (peer, seq, job).
    pending: Vec<(PeerId, u32, commit::Job)>,
    /// Players dead (`health:died`, until `health:respawned`): a body
    /// picks nothing up, so what it dropped stays where it died.
    dead: HashSet<String>,
}

impl Module for Inventories {
    fn create(host: Host) -> Result<Self, ModuleError> {
        let settings = InventorySettings::read(&host)?;
        if !(0.0..=1000.0).contains(&settings.reach) {
            return Err(ModuleError::msg(format!(
                "inventory.reach must be 0 to 1000 voxels, not {}",
                settings.reach
            )));
        }
        Ok(Self {
            host,
            items: ItemRegistry::default(),
            held: HashMap::new(),
            absent: HashSet::new(),
            peers: BTreeMap::new(),
            reach: settings.reach,
            drops: drops::Drops::new(settings.drop_seconds)?,
            players: players::PlayerNodes::default(),
            pending: Vec::new(),
            dead: HashSet::new(),
        })
    }

    fn receive(table: &mut Receive<Self>) {
        table
            .event(|inv, _: events::Start| inv.start())
            .event(|inv, _: events::Continue| inv.start())
            .event(|inv, tick: events::Tick| inv.tick(tick.dtime))
            .event(|inv, _: ItemsChanged| inv.refresh_items())
            .event(|inv, changed: NodesChanged| {
                inv.players.apply(&changed);
                Ok(())
            })
            .event(|inv, died: Died| {
                // Bounded: forgetting the dead only lets a body pick up.
                if inv.dead.len() > 100_000 {
                    inv.dead.clear();
                }
                inv.dead.insert(died.player);
                Ok(())
            })
            .event(|inv, back: Respawned| {
                inv.dead.remove(&back.player);
                Ok(())
            })
            .event(|inv, joined: PlayerJoined| inv.on_joined(joined))
            .event(|inv, left: PlayerLeft| {
                inv.on_left(left);
                Ok(())
            })
            .packet(|inv, peer, act: Act| inv.on_act(peer, act))
            .settings::<InventorySettings>()
            .call(|inv, create: CreateInventory| inv.create_inventory(create))
            .call(|inv, get: GetInventory| {
                Ok(inv.load(&get.owner)?.map(|stored| stored.inventory.clone()))
            })
            .call(|inv, get: GetSlots| inv.get_slots(get.slots))
            .call(|inv, remove: RemoveInventory| inv.remove_inventory(&remove.owner))
            .call(|inv, one: Transact| {
                let mut outcomes = inv.transact(vec![one.tx.into()])?;
                Ok(outcomes
                    .pop()
                    .unwrap_or(TxOutcome::Refused("nothing done".into())))
            })
            .call(|inv, many: TransactMany| {
                inv.transact(many.txs.into_iter().map(Into::into).collect())
            })
            .call(|inv, _: Census| store::census(&inv.host))
            .command(None, |inv, _, _: CensusCommand| inv.census_report())
            .command(Some("give"), |inv, by, give: GiveCommand| {
                inv.give(give, by)
            })
            .stash(
                |inv| Kept {
                    peers: inv.peers.clone(),
                },
                |inv, kept: Kept| {
                    inv.peers = kept.peers;
                    Ok(())
                },
            );
    }

    fn unload(&mut self, _kind: UnloadKind) -> Result<(), ModuleError> {
        // Every queued action is stored and answered by this version.
        self.flush_acts()
    }
}

impl Inventories {
    fn start(&mut self) -> Result<(), ModuleError> {
        self.refresh_items()?;
        self.adopt_players();
        self.drops_start()
    }

    fn refresh_items(&mut self) -> Result<(), ModuleError> {
        match self.host.call(&GetItems {}) {
            Ok(items) => self.items = items,
            Err(error) => log::warn!("reading the item registry: {error}; every item is unknown"),
        }
        Ok(())
    }

    /// An owner's inventory, loaded from storage on first use.
    fn load(&mut self, owner: &Owner) -> Result<Option<&Stored>, ModuleError> {
        if !self.held.contains_key(owner) && !self.absent.contains(owner) {
            match store::load(&self.host, owner)? {
                Some(stored) => {
                    self.held.insert(owner.clone(), stored);
                }
                None => {
                    // Bounded: forgetting absence costs one read later.
                    if self.absent.len() > 100_000 {
                        self.absent.clear();
                    }
                    self.absent.insert(owner.clone());
                }
            }
        }
        Ok(self.held.get(owner))
    }

    /// Writes `stored` values with `PutValues` (durably), then memory.
    fn store_now(&mut self, writes: Vec<(Owner, Option<Stored>)>) -> Result<(), ModuleError> {
        let values = writes
            .iter()
            .map(|(owner, stored)| store::write(owner, stored.as_ref()))
            .collect::<Result<Vec<_>, _>>()?;
        if !self
            .host
            .call(&buildat_voxelworld_api::PutValues { writes: values })?
        {
            return Err(ModuleError::msg("the inventories were not stored"));
        }
        let owners: Vec<Owner> = writes.iter().map(|(owner, _)| owner.clone()).collect();
        self.remember(writes);
        self.tell_changed(&owners);
        Ok(())
    }

    /// Puts stored states into memory.
    fn remember(&mut self, writes: Vec<(Owner, Option<Stored>)>) {
        for (owner, stored) in writes {
            match stored {
                Some(stored) => {
                    self.absent.remove(&owner);
                    self.held.insert(owner, stored);
                }
                None => {
                    self.held.remove(&owner);
                    self.absent.insert(owner);
                }
            }
        }
    }

    fn create_inventory(&mut self, create: CreateInventory) -> Result<(), ModuleError> {
        if create.lists.len() > MAX_LISTS {
            return Err(ModuleError::msg(format!(
                "an inventory has at most {MAX_LISTS} lists"
            )));
        }
        for (name, slots) in &create.lists {
            if name.is_empty() || name.len() > MAX_LIST_NAME {
                return Err(ModuleError::msg(format!(
                    "a list's name is 1 to {MAX_LIST_NAME} bytes, not {name:?}"
                )));
            }
            if usize::from(*slots) > MAX_SLOTS {
                return Err(ModuleError::msg(format!(
                    "a list has at most {MAX_SLOTS} slots, not {slots}"
                )));
            }
        }
        let mut stored = self.load(&create.owner)?.cloned().unwrap_or_default();
        let before = stored.clone();
        let known = self.held.contains_key(&create.owner);
        for (name, slots) in create.lists {
            let list = stored.inventory.lists.entry(name).or_default();
            if list.len() < usize::from(slots) {
                list.resize(usize::from(slots), None);
            }
        }
        if stored.inventory.lists.len() > MAX_LISTS {
            return Err(ModuleError::msg(format!(
                "an inventory has at most {MAX_LISTS} lists"
            )));
        }
        if known && stored == before {
            return Ok(());
        }
        self.store_now(vec![(create.owner, Some(stored))])
    }

    fn get_slots(&mut self, slots: Vec<SlotRef>) -> Result<Vec<Option<ItemStack>>, ModuleError> {
        let mut out = Vec::with_capacity(slots.len());
        for slot in slots {
            let stack = self.load(&slot.owner)?.and_then(|stored| {
                stored
                    .inventory
                    .lists
                    .get(&slot.list)
                    .and_then(|list| list.get(usize::from(slot.index)).cloned().flatten())
            });
            out.push(stack);
        }
        Ok(out)
    }

    fn remove_inventory(&mut self, owner: &Owner) -> Result<bool, ModuleError> {
        let Some(stored) = self.load(owner)? else {
            return Ok(true);
        };
        if !tx::is_empty(&stored.inventory) {
            return Ok(false);
        }
        self.store_now(vec![(owner.clone(), None)])?;
        Ok(true)
    }

    /// A player joined: its inventory (made on the first join), sent.
    fn on_joined(&mut self, joined: PlayerJoined) -> Result<(), ModuleError> {
        self.peers.insert(
            joined.peer,
            Peer {
                name: joined.name.clone(),
                open: BTreeSet::new(),
            },
        );
        let owner = Owner::Player(joined.name);
        self.create_inventory(CreateInventory {
            owner: owner.clone(),
            lists: vec![
                (LIST_MAIN.to_string(), PLAYER_MAIN_SLOTS),
                (LIST_CRAFT.to_string(), PLAYER_CRAFT_SLOTS),
            ],
        })?;
        self.send_inventory(joined.peer, &owner);
        Ok(())
    }

    fn on_left(&mut self, left: PlayerLeft) {
        self.peers.remove(&left.peer);
        let owner = Owner::Player(left.name.clone());
        if !self.peers.values().any(|p| p.name == left.name) {
            // Memory equals storage: it is read again on the next join.
            self.held.remove(&owner);
        }
    }

    fn send<P: Packet>(&self, peer: PeerId, packet: &P) {
        if let Err(error) = network::queue_packet(&self.host, peer, packet) {
            log::debug!("sending {}: {error}", P::NAME);
        }
    }

    /// The packets telling `owner`'s inventory: its lists, and its craft
    /// preview when it has a craft grid.
    fn inventory_packets(&self, owner: &Owner) -> Vec<OutgoingPacket> {
        let inventory = self.held.get(owner).map(|s| &s.inventory);
        let lists = Lists {
            owner: owner.clone(),
            lists: inventory.map(lists_of).unwrap_or_default(),
        };
        let mut packets = Vec::with_capacity(2);
        match OutgoingPacket::new(&lists) {
            Ok(packet) => packets.push(packet),
            Err(error) => log::warn!("the lists of {}: {error}", owner.key()),
        }
        if let Some(grid) = inventory.and_then(|inv| inv.lists.get(LIST_CRAFT)) {
            let preview = Preview {
                owner: owner.clone(),
                output: self.match_grid(grid).map(|m| m.output),
            };
            match OutgoingPacket::new(&preview) {
                Ok(packet) => packets.push(packet),
                Err(error) => log::warn!("the preview of {}: {error}", owner.key()),
            }
        }
        packets
    }

    fn queue(&self, batches: Vec<SendBatch>) {
        if batches.is_empty() {
            return;
        }
        if let Err(error) = network::queue(&self.host, batches) {
            log::debug!("sending: {error}");
        }
    }

    /// Sends `owner`'s inventory (and its craft preview) to `peer`.
    fn send_inventory(&self, peer: PeerId, owner: &Owner) {
        self.queue(vec![SendBatch {
            peer,
            packets: self.inventory_packets(owner),
        }]);
    }

    /// Tells the holders of each changed inventory (its player; the peers
    /// that opened the voxel) its new lists, in one send.
    fn tell_changed(&self, owners: &[Owner]) {
        let mut by_name: HashMap<&str, Vec<PeerId>> = HashMap::new();
        let mut by_voxel: HashMap<VoxelPos, Vec<PeerId>> = HashMap::new();
        for (id, peer) in &self.peers {
            by_name.entry(peer.name.as_str()).or_default().push(*id);
            for pos in &peer.open {
                by_voxel.entry(*pos).or_default().push(*id);
            }
        }
        let mut batches: BTreeMap<PeerId, Vec<OutgoingPacket>> = BTreeMap::new();
        let mut told = BTreeSet::new();
        for owner in owners {
            if !told.insert(owner) {
                continue;
            }
            let holders = match owner {
                Owner::Player(name) => by_name.get(name.as_str()),
                Owner::Voxel(pos) => by_voxel.get(pos),
                _ => None,
            };
            let Some(holders) = holders else {
                continue;
            };
            let packets = self.inventory_packets(owner);
            for peer in holders {
                batches
                    .entry(*peer)
                    .or_default()
                    .extend(packets.iter().cloned());
            }
        }
        self.queue(
            batches
                .into_iter()
                .map(|(peer, packets)| SendBatch { peer, packets })
                .collect(),
        );
    }

    /// What a craft grid makes (crafting's `MatchGrid`); `None` when
    /// nothing, or when crafting does not answer.
    fn match_grid(&self, grid: &[Option<ItemStack>]) -> Option<CraftMatch> {
        let width = grid_width(grid.len())?;
        if grid.iter().all(Option::is_none) {
            return None;
        }
        match self.host.call(&MatchGrid {
            grid: grid.to_vec(),
            width,
        }) {
            Ok(found) => found,
            Err(error) => {
                log::debug!("matching a craft grid: {error}");
                None
            }
        }
    }

    fn census_report(&mut self) -> Result<String, ModuleError> {
        let counts = store::census(&self.host)?;
        let total: u64 = counts.values().sum();
        let mut out = String::new();
        for (name, count) in &counts {
            out.push_str(&format!("{name} {count}\n"));
        }
        out.push_str(&format!("total {total}"));
        Ok(out)
    }

    /// `give`, by the operator `by` (`None`: the console), who the
    /// rollback log names.
    fn give(&mut self, give: GiveCommand, by: Option<&str>) -> Result<String, ModuleError> {
        let count = give.count.unwrap_or(1);
        let owner = Owner::Player(give.player.clone());
        if self.load(&owner)?.is_none() {
            self.create_inventory(CreateInventory {
                owner: owner.clone(),
                lists: vec![
                    (LIST_MAIN.to_string(), PLAYER_MAIN_SLOTS),
                    (LIST_CRAFT.to_string(), PLAYER_CRAFT_SLOTS),
                ],
            })?;
        }
        let tx = Transaction {
            changes: vec![Change::Give {
                owner,
                list: LIST_MAIN.to_string(),
                stack: ItemStack::new(give.item.clone(), count),
                overflow: Overflow::Refuse,
            }],
            edit: None,
            by: Some(by.unwrap_or("console").to_string()),
        };
        match self.transact(vec![tx.into()])?.pop() {
            Some(TxOutcome::Done) => Ok(format!("gave {count} {} to {}", give.item, give.player)),
            Some(TxOutcome::Refused(why)) => Err(ModuleError::msg(format!(
                "not given to {}: {why}",
                give.player
            ))),
            None => Err(ModuleError::msg("not given")),
        }
    }
}

/// The width of a square craft grid of `slots` slots.
fn grid_width(slots: usize) -> Option<u8> {
    (1u8..=8).find(|w| usize::from(*w) * usize::from(*w) == slots)
}

/// An inventory's lists, as the packets carry them.
pub(crate) fn lists_of(inventory: &Inventory) -> Vec<(String, buildat_inventory_api::Slots)> {
    inventory
        .lists
        .iter()
        .map(|(name, slots)| (name.clone(), slots.clone()))
        .collect()
}

export_module!(Inventories);
