//! `health`: players' hit points and breath; falls, drowning, lava and the
//! void hurt, full breath regenerates; death drops the inventory where it
//! happened and the player respawns, when it asks, at its bed or the
//! world's spawn.
//!
//! Owns: each player in the game's [`Body`] (`rules.rs`: the rules,
//! pure), sampled every `core:tick` from main's `get_players` and one
//! voxelworld `get_voxels` of the voxels under the feet, at the feet and
//! at the eyes of every living player; the calls and events of
//! `buildat-health-api`; the packets of `buildat-health-protocol` (state on
//! join and change, hurts, death; a dead player's `health:respawn`);
//! storage in the world's values (space `health`: `hp/NAME` = hp, breath,
//! dead; `respawn/NAME` = the bed), written at most once a second per
//! change, when a player leaves and when the module unloads; the commands
//! `/kill [NAME]`, `/heal NAME [N]` and the console's `health NAME`.
//! Does not own: where players are or teleporting them (`main`), the
//! inventory and drops (`inventory`: one transaction takes every slot and
//! drops each stack), liquids (`liquid`; their names from
//! `buildat-liquid-api`), voxels (`voxelworld`).
//!
//! Work per tick: one `get_players`, one `get_voxels` per 1365 living
//! players (3 voxels each), one `put_values` a second of the players whose
//! health changed: bounded by the players in the game.

mod rules;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashMap};

use buildat_format::Packet;
use buildat_health_api::{
    Cause, Damage, Damaged, Died, GetHealth, GetHealthStats, Heal, Health, HealthState,
    HealthStats, Hurt, MAX_BREATH, MAX_HP, RespawnRequest, Respawned, SetRespawn, VALUE_SPACE,
    YouDied,
};
use buildat_interface::settings::Settings;
use buildat_interface::{
    Host, Module, ModuleError, Receive, UnloadKind, events, export_module, log,
};
use buildat_inventory_api::{
    Change, GetInventory, Owner, SlotRef, Transact, Transaction, TxOutcome,
};
use buildat_liquid_api::{LAVA, LAVA_FLOWING, LIQUIDS};
use buildat_main_api::{GetPlayers, PlayerJoined, PlayerLeft, Teleport, VAR_PLAYER};
use buildat_network_api::{self as network, PeerId, ReceivePackets};
use buildat_voxelworld_api::{
    GetRegistry, GetSpawn, GetValue, GetVoxels, ListNodes, MAX_VOXELS_PER_CALL, NodesChanged,
    PutValues, ValueWrite,
};
use serde::{Deserialize, Serialize};

pub use rules::{Body, Rules, Sample};

/// The liquids that burn (of `buildat-liquid-api`'s [`LIQUIDS`], whose
/// every block at the eyes takes breath).
pub const LAVAS: [&str; 2] = [LAVA, LAVA_FLOWING];
/// Height of the eyes above the feet (main's `EYE_HEIGHT`).
const EYE_HEIGHT: f64 = 1.6;
/// The feet this far above a solid voxel's top still stand on it.
const GROUND_SLACK: f64 = 0.2;
/// Seconds between writes of changed health.
const SAVE_SECONDS: f64 = 1.0;

buildat_interface::settings! {
    /// The health settings (`--set health.KEY=VALUE`).
    pub(crate) struct HealthSettings in "health" {
        /// false: nobody is hurt by the world (calls still work).
        enabled: bool = true,
        /// Voxels a player may fall without harm.
        fall_safe: f64 = 3.0,
        /// Hp per voxel fallen past fall_safe.
        fall_damage: f64 = 1.0,
        /// Seconds per breath lost under a liquid (and regained out of it).
        breath_seconds: f64 = 1.0,
        /// Hp per second in lava.
        lava_damage: f64 = 4.0,
        /// Below this y the void kills.
        void_y: f64 = -128.0,
        /// Seconds per hp regained while breath is full (0: never).
        regen_seconds: f64 = 5.0,
        /// Whether a dead player's inventory is dropped where it died.
        drop_on_death: bool = true,
    }
}

/// `/kill`: kills yourself; `kill NAME` on the console kills another.
#[derive(clap::Parser)]
#[command(
    name = "kill",
    about = "kill yourself (in chat), or a player (on the console)"
)]
struct KillCommand {
    /// The player (default: yourself).
    player: Option<String>,
}

/// `/heal NAME [N]`: gives a player hp (default: full).
#[derive(clap::Parser)]
#[command(name = "heal", about = "give a player hp (default: to full)")]
struct HealCommand {
    /// The player's account name.
    player: String,
    /// Hp to give (default: all it lacks).
    amount: Option<u16>,
}

/// `health [NAME]`: a player's health, or the module's counts (console).
#[derive(clap::Parser)]
#[command(
    name = "health",
    about = "show a player's hp, breath and respawn point, or without NAME the counts"
)]
struct HealthCommand {
    /// The player's account name.
    player: Option<String>,
}

/// What is kept of a player in the world's values (`hp/NAME`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
struct Stored {
    hp: u16,
    breath: u16,
    dead: bool,
}

/// A player in the game.
#[derive(Debug)]
struct Player {
    peer: PeerId,
    body: Body,
    /// The feet, as main last moved the player's node; `None` until its
    /// node is seen (not sampled before).
    position: Option<[f64; 3]>,
    /// Changed since last stored.
    dirty: bool,
}

/// What a voxel type is to a body.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Kind {
    solid: bool,
    liquid: bool,
    lava: bool,
}

pub struct HealthModule {
    host: Host,
    enabled: bool,
    drop_on_death: bool,
    rules: Rules,
    players: BTreeMap<String, Player>,
    peers: HashMap<PeerId, String>,
    /// The players' dynamic nodes (main's, with the var `player`) by node
    /// id: where the bodies are comes from `voxelworld:nodes_changed`, not
    /// from calls to main each tick (main may be inside a call to this
    /// module, a chat command, and waiting on main here would be a cycle).
    node_names: HashMap<u64, String>,
    /// Voxel type ids (game bits masked) to what they are.
    kinds: HashMap<u32, Kind>,
    /// Seconds since the registry was read (read again on an unknown id,
    /// at most every few seconds).
    registry_age: f64,
    save_clock: f64,
    damaged_total: u64,
    deaths_total: u64,
}

impl Module for HealthModule {
    fn create(host: Host) -> Result<Self, ModuleError> {
        let settings = HealthSettings::read(&host)?;
        let check = |ok: bool, what: &str| {
            if ok {
                Ok(())
            } else {
                Err(ModuleError::msg(format!("health.{what}")))
            }
        };
        check(
            settings.fall_safe.is_finite() && settings.fall_safe >= 0.0,
            "fall_safe must be 0 or more voxels",
        )?;
        check(
            settings.fall_damage.is_finite() && settings.fall_damage >= 0.0,
            "fall_damage must be 0 or more hp a voxel",
        )?;
        check(
            settings.breath_seconds.is_finite() && settings.breath_seconds >= 0.05,
            "breath_seconds must be 0.05 or more",
        )?;
        check(
            settings.lava_damage.is_finite() && settings.lava_damage >= 0.0,
            "lava_damage must be 0 or more hp a second",
        )?;
        check(settings.void_y.is_finite(), "void_y must be a number")?;
        check(
            settings.regen_seconds.is_finite() && settings.regen_seconds >= 0.0,
            "regen_seconds must be 0 (off) or more",
        )?;
        Ok(Self {
            host,
            enabled: settings.enabled,
            drop_on_death: settings.drop_on_death,
            rules: Rules {
                fall_safe: settings.fall_safe,
                fall_damage: settings.fall_damage,
                breath_seconds: settings.breath_seconds,
                drown_damage: 1.0,
                lava_damage: settings.lava_damage,
                void_y: settings.void_y,
                regen_seconds: settings.regen_seconds,
            },
            players: BTreeMap::new(),
            peers: HashMap::new(),
            node_names: HashMap::new(),
            kinds: HashMap::new(),
            registry_age: f64::INFINITY,
            save_clock: 0.0,
            damaged_total: 0,
            deaths_total: 0,
        })
    }

    fn receive(table: &mut Receive<Self>) {
        table
            .event(|h, _: events::Start| h.start())
            .event(|h, _: events::Continue| h.start())
            .event(|h, tick: events::Tick| h.tick(tick.dtime))
            .event(|h, joined: PlayerJoined| h.on_joined(joined.name, joined.peer))
            .event(|h, changed: NodesChanged| {
                h.nodes_changed(&changed);
                Ok(())
            })
            .event(|h, left: PlayerLeft| h.on_left(&left.name, left.peer))
            .packet(|h, peer, _: RespawnRequest| h.on_respawn_request(peer))
            .settings::<HealthSettings>()
            .call(|h, damage: Damage| Ok(h.damage(&damage.player, damage.amount, damage.cause)))
            .call(|h, heal: Heal| Ok(h.heal(&heal.player, heal.amount)))
            .call(|h, get: GetHealth| {
                Ok(h.players.get(&get.player).map(|p| Health {
                    hp: p.body.hp,
                    breath: p.body.breath,
                    dead: p.body.dead,
                }))
            })
            .call(|h, set: SetRespawn| h.set_respawn(&set.player, set.position))
            .call(|h, _: GetHealthStats| Ok(h.stats()))
            .command(Some(""), |h, by, kill: KillCommand| {
                h.kill_command(by, kill)
            })
            .command(Some("server"), |h, _, heal: HealCommand| {
                h.heal_command(heal)
            })
            .command(None, |h, _, show: HealthCommand| match show.player {
                Some(name) => h.health_report(&name),
                None => {
                    let stats = h.stats();
                    Ok(format!(
                        "health: {} players in the game, {} dead; {} hurts and {} deaths since loaded",
                        stats.players, stats.dead, stats.damaged_total, stats.deaths_total
                    ))
                }
            });
    }

    fn unload(&mut self, _kind: UnloadKind) -> Result<(), ModuleError> {
        for player in self.players.values_mut() {
            player.dirty = true;
        }
        self.save_dirty()
    }
}

impl HealthModule {
    /// Adopts the players already in the game (a reload, a late load).
    fn start(&mut self) -> Result<(), ModuleError> {
        self.refresh_registry();
        let players = match self.host.call(&GetPlayers {}) {
            Ok(players) => players,
            Err(error) => {
                log::debug!("asking main for the players: {error}");
                return Ok(());
            }
        };
        for state in players {
            if !self.players.contains_key(&state.name) {
                self.on_joined(state.name.clone(), state.peer)?;
            }
            if let Some(player) = self.players.get_mut(&state.name) {
                player.position = Some(state.position);
            }
        }
        // The players' nodes, whose moves say where they are from now on.
        match self.host.call(&ListNodes {
            with_var: Some(VAR_PLAYER.to_string()),
        }) {
            Ok(nodes) => self.nodes_changed(&NodesChanged {
                changed: nodes,
                ..NodesChanged::default()
            }),
            Err(error) => log::debug!("listing the players' nodes: {error}"),
        }
        Ok(())
    }

    /// Where the players' nodes went: their bodies' positions.
    fn nodes_changed(&mut self, changed: &NodesChanged) {
        for node in &changed.changed {
            let Some(name) = node
                .vars
                .get(VAR_PLAYER)
                .and_then(|v| String::from_utf8(v.clone()).ok())
            else {
                continue;
            };
            if let Some(player) = self.players.get_mut(&name) {
                player.position = Some(node.position);
            }
            self.node_names.insert(node.id, name);
        }
        for motion in &changed.moved {
            if let Some(player) = self
                .node_names
                .get(&motion.id)
                .and_then(|name| self.players.get_mut(name))
            {
                player.position = Some(motion.position);
            }
        }
        for id in &changed.removed {
            self.node_names.remove(id);
        }
    }

    fn refresh_registry(&mut self) {
        self.registry_age = 0.0;
        match self.host.call(&GetRegistry {}) {
            Ok(registry) => {
                self.kinds = registry
                    .definitions()
                    .iter()
                    .map(|def| {
                        let block = def.name.block_name.as_str();
                        let kind = Kind {
                            solid: def.physically_solid,
                            liquid: LIQUIDS.contains(&block),
                            lava: LAVAS.contains(&block),
                        };
                        (def.id, kind)
                    })
                    .collect();
            }
            Err(error) => log::debug!("reading the voxel registry: {error}"),
        }
    }

    /// What the voxel `id` is (air for an unknown one, the registry read
    /// again at most every 5 s).
    fn kind(&mut self, id: Option<u32>) -> Kind {
        let Some(id) = id else {
            return Kind::default();
        };
        let type_id = buildat_voxel::VoxelInstance(id).type_id();
        if let Some(kind) = self.kinds.get(&type_id) {
            return *kind;
        }
        if self.registry_age > 5.0 {
            self.refresh_registry();
        }
        self.kinds.get(&type_id).copied().unwrap_or_default()
    }

    fn on_joined(&mut self, name: String, peer: PeerId) -> Result<(), ModuleError> {
        self.peers.insert(peer, name.clone());
        let dead = if let Some(player) = self.players.get_mut(&name) {
            // Joined again before its old session left: the same body.
            player.peer = peer;
            player.body.forget_position();
            player.body.dead
        } else {
            let stored = self.load(&name)?;
            let body = match stored {
                Some(s) => Body::new(s.hp, s.breath, s.dead),
                None => Body::default(),
            };
            let dead = body.dead;
            self.players.insert(
                name.clone(),
                Player {
                    peer,
                    body,
                    position: None,
                    dirty: stored.is_none(),
                },
            );
            dead
        };
        self.send_state(&name);
        if dead {
            self.send(
                peer,
                &YouDied {
                    cause: String::new(),
                },
            );
        }
        Ok(())
    }

    fn on_left(&mut self, name: &str, peer: PeerId) -> Result<(), ModuleError> {
        self.peers.remove(&peer);
        let Some(player) = self.players.get(name) else {
            return Ok(());
        };
        if player.peer != peer {
            return Ok(());
        }
        let result = self.save(&[name.to_string()]);
        self.players.remove(name);
        result
    }

    fn load(&self, name: &str) -> Result<Option<Stored>, ModuleError> {
        let value = self.host.call(&GetValue {
            space: VALUE_SPACE.to_string(),
            key: format!("hp/{name}"),
        })?;
        Ok(value.and_then(
            |bytes| match buildat_format::payload::decode::<Stored>(&bytes) {
                Ok(stored) => Some(stored),
                Err(error) => {
                    log::warn!("the stored health of {name} does not read ({error}): full health");
                    None
                }
            },
        ))
    }

    fn respawn_point(&self, name: &str) -> Result<Option<[f64; 3]>, ModuleError> {
        let value = self.host.call(&GetValue {
            space: VALUE_SPACE.to_string(),
            key: format!("respawn/{name}"),
        })?;
        Ok(value.and_then(|bytes| buildat_format::payload::decode::<[f64; 3]>(&bytes).ok()))
    }

    /// Stores the health of `names` (those in the game) in one write.
    fn save(&mut self, names: &[String]) -> Result<(), ModuleError> {
        let mut writes = Vec::new();
        for name in names {
            let Some(player) = self.players.get(name) else {
                continue;
            };
            let stored = Stored {
                hp: player.body.hp,
                breath: player.body.breath,
                dead: player.body.dead,
            };
            writes.push(ValueWrite {
                space: VALUE_SPACE.to_string(),
                key: format!("hp/{name}"),
                value: Some(buildat_format::payload::encode(&stored)?),
                only_if_absent: false,
            });
        }
        if writes.is_empty() {
            return Ok(());
        }
        if !self.host.call(&PutValues { writes })? {
            return Err(ModuleError::msg("health was not stored"));
        }
        for name in names {
            if let Some(player) = self.players.get_mut(name) {
                player.dirty = false;
            }
        }
        Ok(())
    }

    fn save_dirty(&mut self) -> Result<(), ModuleError> {
        let dirty: Vec<String> = self
            .players
            .iter()
            .filter(|(_, p)| p.dirty)
            .map(|(name, _)| name.clone())
            .collect();
        for part in dirty.chunks(buildat_voxelworld_api::MAX_VALUE_WRITES) {
            self.save(part)?;
        }
        Ok(())
    }

    fn send<P: Packet>(&self, peer: PeerId, packet: &P) {
        if let Err(error) = network::queue_packet(&self.host, peer, packet) {
            log::debug!("sending {}: {error}", P::NAME);
        }
    }

    fn send_state(&self, name: &str) {
        if let Some(player) = self.players.get(name) {
            self.send(
                player.peer,
                &HealthState {
                    hp: player.body.hp,
                    max_hp: MAX_HP,
                    breath: player.body.breath,
                    max_breath: MAX_BREATH,
                },
            );
        }
    }

    fn tick(&mut self, dtime: f64) -> Result<(), ModuleError> {
        self.registry_age += dtime;
        self.save_clock += dtime;
        if self.save_clock >= SAVE_SECONDS {
            self.save_clock = 0.0;
            if let Err(error) = self.save_dirty() {
                log::warn!("storing health: {error}");
            }
        }
        if !self.enabled || self.players.is_empty() {
            return Ok(());
        }
        let living: Vec<(String, [f64; 3])> = self
            .players
            .iter()
            .filter(|(_, p)| !p.body.dead)
            .filter_map(|(name, p)| Some((name.clone(), p.position?)))
            .collect();
        // Under the feet, at the feet, at the eyes, of each.
        let positions: Vec<[i32; 3]> = living
            .iter()
            .flat_map(|(_, [x, y, z])| {
                let (vx, vz) = (x.floor() as i32, z.floor() as i32);
                let feet = (y + 1e-3).floor() as i32;
                [
                    [vx, feet - 1, vz],
                    [vx, feet, vz],
                    [vx, (y + EYE_HEIGHT).floor() as i32, vz],
                ]
            })
            .collect();
        let mut voxels: Vec<Option<u32>> = Vec::with_capacity(positions.len());
        for part in positions.chunks(MAX_VOXELS_PER_CALL - MAX_VOXELS_PER_CALL % 3) {
            match self.host.call(&GetVoxels {
                positions: part.to_vec(),
            }) {
                Ok(found) if found.len() == part.len() => voxels.extend(found),
                Ok(_) | Err(_) => voxels.extend(std::iter::repeat_n(None, part.len())),
            }
        }
        for (index, (name, position)) in living.into_iter().enumerate() {
            let at = |i: usize| voxels.get(index * 3 + i).copied().flatten();
            let (below, feet, eyes) = (self.kind(at(0)), self.kind(at(1)), self.kind(at(2)));
            let top_of_below = ((position[1] + 1e-3).floor()) - position[1];
            let sample = Sample {
                position,
                grounded: below.solid && top_of_below.abs() < GROUND_SLACK,
                eyes_in_liquid: eyes.liquid,
                in_liquid: feet.liquid || eyes.liquid,
                in_lava: feet.lava || eyes.lava,
            };
            let rules = self.rules;
            let Some(player) = self.players.get_mut(&name) else {
                continue;
            };
            let before = (player.body.hp, player.body.breath);
            let hurts = player.body.step(&sample, dtime, &rules);
            if (player.body.hp, player.body.breath) != before {
                player.dirty = true;
                self.send_state(&name);
            }
            for (amount, cause) in hurts {
                self.damage(&name, amount, cause);
            }
        }
        Ok(())
    }

    /// Takes hp (the `damage` call, the rules, `/kill`): events, packets,
    /// death. Answers the hp after; `None` when not in the game or dead.
    fn damage(&mut self, name: &str, amount: u16, cause: Cause) -> Option<u16> {
        let player = self.players.get_mut(name)?;
        if player.body.dead {
            return None;
        }
        let taken = player.body.hurt(amount);
        let hp = player.body.hp;
        let (peer, position, dead) = (
            player.peer,
            player.position.unwrap_or_default(),
            player.body.dead,
        );
        if taken == 0 {
            return Some(hp);
        }
        player.dirty = true;
        self.damaged_total += 1;
        self.send(
            peer,
            &Hurt {
                amount: taken,
                cause: cause.text().to_string(),
            },
        );
        self.send_state(name);
        self.emit(&Damaged {
            player: name.to_string(),
            amount: taken,
            cause: cause.clone(),
            hp,
        });
        if dead {
            self.die(name, peer, position, cause);
        }
        Some(hp)
    }

    fn emit<E: buildat_interface::Event>(&self, event: &E) {
        if let Err(error) = self.host.emit(event) {
            log::debug!("emitting {}: {error}", E::NAME);
        }
    }

    fn die(&mut self, name: &str, peer: PeerId, position: [f64; 3], cause: Cause) {
        self.deaths_total += 1;
        log::info!("{name} died ({}) at {position:?}", cause.text());
        if self.drop_on_death {
            self.drop_inventory(name, position);
        }
        self.send(
            peer,
            &YouDied {
                cause: cause.text().to_string(),
            },
        );
        if let Err(error) = self.save(&[name.to_string()]) {
            log::warn!("storing the death of {name}: {error}");
        }
        self.emit(&Died {
            player: name.to_string(),
            cause,
            position,
        });
    }

    /// Every stack of the player's inventory onto the ground at
    /// `position`, in one transaction.
    fn drop_inventory(&self, name: &str, position: [f64; 3]) {
        let owner = Owner::Player(name.to_string());
        let inventory = match self.host.call(&GetInventory {
            owner: owner.clone(),
        }) {
            Ok(Some(inventory)) => inventory,
            Ok(None) => return,
            Err(error) => {
                log::debug!("reading the inventory of {name}: {error}");
                return;
            }
        };
        let at = [position[0], position[1] + 0.5, position[2]];
        let mut changes = Vec::new();
        for (list, slots) in &inventory.lists {
            for (index, stack) in slots.iter().enumerate() {
                let (Some(stack), Ok(index)) = (stack, u16::try_from(index)) else {
                    continue;
                };
                changes.push(Change::Take {
                    slot: SlotRef {
                        owner: owner.clone(),
                        list: list.clone(),
                        index,
                    },
                    name: stack.name.clone(),
                    count: stack.count,
                });
                changes.push(Change::Drop {
                    stack: stack.clone(),
                    at,
                });
            }
        }
        if changes.is_empty() {
            return;
        }
        match self.host.call(&Transact {
            tx: Transaction {
                changes,
                edit: None,
                by: Some(name.to_string()),
            },
        }) {
            Ok(TxOutcome::Done) => {}
            Ok(TxOutcome::Refused(why)) => {
                log::warn!("the inventory of {name} was not dropped: {why}")
            }
            Err(error) => log::warn!("the inventory of {name} was not dropped: {error}"),
        }
    }

    fn heal(&mut self, name: &str, amount: u16) -> Option<u16> {
        let player = self.players.get_mut(name)?;
        if player.body.dead {
            return None;
        }
        if player.body.heal(amount) > 0 {
            player.dirty = true;
            let hp = player.body.hp;
            self.send_state(name);
            return Some(hp);
        }
        Some(player.body.hp)
    }

    fn on_respawn_request(&mut self, peer: PeerId) -> Result<(), ModuleError> {
        let Some(name) = self.peers.get(&peer).cloned() else {
            return Ok(());
        };
        if !self.players.get(&name).is_some_and(|p| p.body.dead) {
            return Ok(());
        }
        self.respawn(&name)
    }

    /// A dead player comes back: full health at its bed or the spawn.
    fn respawn(&mut self, name: &str) -> Result<(), ModuleError> {
        let bed = self.respawn_point(name)?;
        let position = match bed {
            Some(bed) => Some(bed),
            None => self.host.call(&GetSpawn {}).unwrap_or_else(|error| {
                log::warn!("asking for the spawn point: {error}");
                None
            }),
        };
        let Some(player) = self.players.get_mut(name) else {
            return Ok(());
        };
        player.body.revive();
        player.dirty = true;
        let mut at = player.position.unwrap_or_default();
        if let Some(position) = position {
            match self.host.call(&Teleport {
                player: name.to_string(),
                position,
            }) {
                Ok(()) => at = position,
                Err(error) => log::warn!("respawning {name} at {position:?}: {error}"),
            }
        }
        if let Some(player) = self.players.get_mut(name) {
            player.position = Some(at);
        }
        self.save(&[name.to_string()])?;
        self.send_state(name);
        self.emit(&Respawned {
            player: name.to_string(),
            position: at,
        });
        Ok(())
    }

    fn set_respawn(&mut self, name: &str, position: Option<[f64; 3]>) -> Result<(), ModuleError> {
        if let Some(position) = position
            && position.iter().any(|c| !c.is_finite() || c.abs() > 1e7)
        {
            return Err(ModuleError::msg(format!(
                "a respawn point is in the world, not {position:?}"
            )));
        }
        let value = match position {
            Some(position) => Some(buildat_format::payload::encode(&position)?),
            None => None,
        };
        if !self.host.call(&PutValues {
            writes: vec![ValueWrite {
                space: VALUE_SPACE.to_string(),
                key: format!("respawn/{name}"),
                value,
                only_if_absent: false,
            }],
        })? {
            return Err(ModuleError::msg("the respawn point was not stored"));
        }
        Ok(())
    }

    fn stats(&self) -> HealthStats {
        HealthStats {
            players: u32::try_from(self.players.len()).unwrap_or(u32::MAX),
            dead: u32::try_from(self.players.values().filter(|p| p.body.dead).count())
                .unwrap_or(u32::MAX),
            damaged_total: self.damaged_total,
            deaths_total: self.deaths_total,
        }
    }

    fn kill_command(&mut self, by: Option<&str>, kill: KillCommand) -> Result<String, ModuleError> {
        let target = match (&kill.player, by) {
            (Some(name), _) => name.clone(),
            (None, Some(by)) => by.to_string(),
            (None, None) => {
                return Err(ModuleError::Usage(
                    "kill NAME (the console is not a player)".into(),
                ));
            }
        };
        // A chat command runs inside main's call: asking main about the
        // caller's privileges from here would be a call cycle, so another
        // player is killed from the console only.
        if let Some(by) = by
            && by != target
        {
            return Err(ModuleError::msg(
                "kill another player from the server's console ('kill NAME')",
            ));
        }
        match self.damage(&target, MAX_HP, Cause::Command) {
            Some(_) => Ok(format!("{target} is dead")),
            None if self.players.contains_key(&target) => Ok(format!("{target} is dead already")),
            None => Err(ModuleError::msg(format!("{target} is not in the game"))),
        }
    }

    fn heal_command(&mut self, heal: HealCommand) -> Result<String, ModuleError> {
        let amount = heal.amount.unwrap_or(MAX_HP);
        match self.heal(&heal.player, amount) {
            Some(hp) => Ok(format!("{} has {hp} hp", heal.player)),
            None if self.players.contains_key(&heal.player) => Err(ModuleError::msg(format!(
                "{} is dead: the dead respawn, they are not healed",
                heal.player
            ))),
            None => Err(ModuleError::msg(format!(
                "{} is not in the game",
                heal.player
            ))),
        }
    }

    fn health_report(&mut self, name: &str) -> Result<String, ModuleError> {
        let bed = self.respawn_point(name)?;
        let respawn = match bed {
            Some([x, y, z]) => format!("respawn at ({x:.1}, {y:.1}, {z:.1})"),
            None => "respawn at the spawn point".to_string(),
        };
        if let Some(player) = self.players.get(name) {
            let body = &player.body;
            return Ok(format!(
                "{name}: hp {}/{MAX_HP}, breath {}/{MAX_BREATH}{}, {respawn}",
                body.hp,
                body.breath,
                if body.dead { ", dead" } else { "" }
            ));
        }
        match self.load(name)? {
            Some(stored) => Ok(format!(
                "{name} (not in the game): hp {}/{MAX_HP}{}, {respawn}",
                stored.hp,
                if stored.dead { ", dead" } else { "" }
            )),
            None => Ok(format!("{name}: never hurt, {respawn}")),
        }
    }
}

export_module!(HealthModule);
