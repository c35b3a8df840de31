//! `creatures`: animals that wander the terrain, written as a modder
//! would, on the world's dynamic nodes (docs/modding.md, "A creature").
//!
//! Owns: the creatures (one dynamic node each), their kinds (`kinds.rs`:
//! `chicken` transient; `cow` and `sheep` persistent, saved with the world
//! and back after a restart), spawning them on the surface, how they move
//! (`wander.rs`: walk a while along a heading at 2–3.5 voxels a second,
//! stop, turn, turn around at a wall or a drop deeper than
//! [`physics::MAX_DROP`], head back when out of their area; `physics.rs`:
//! gravity, landing, no walking into solid voxels, stepping up one;
//! `crowd.rs`: pushed out of each other and out of players' way), the
//! voxels they know (`solidity.rs`), and the console command `creatures`
//! (counts per kind, how many moved in the last second, stand on the
//! ground, wait for voxels not generated, are still to be placed).
//! By feature: `spawning.rs` (the area made ready, adopting, the herds'
//! counts, placing), `sleeping.rs` (players, the simulation distance,
//! sleep), `moving.rs` (a tick's steps), `count.rs` (persistent ones made).
//! Does not own: the nodes themselves or their storage (`voxelworld`),
//! telling clients about them (the `replicate` module), drawing them.
//!
//! Settings: `creatures.count` (transient creatures kept alive, default
//! 16), `creatures.persistent` (persistent creatures made once in a world,
//! default 8; raising it later makes the difference, never more),
//! `creatures.radius` (voxels around the origin in x and z where they
//! spawn and stay, default 24), `creatures.active_radius` (the simulation
//! distance: a creature further than this from every player, in x and z,
//! rounded up to 32-voxel cells, stands still and costs nothing but a
//! look-up a tick; default 128, above replication's radius so nobody sees
//! one stand; a transient one alone so for [`SLEEP_AFTER`] falls asleep:
//! its node is removed, this module keeps it, and it is made a node again
//! where it stood when a player comes near; a herd with no player near its
//! area is placed when one comes; 0 simulates every creature, always,
//! and places every herd at once), and for measuring, a second,
//! transient herd far away: `creatures.far_count` (default 0) creatures
//! within `creatures.radius` of x = `creatures.far_distance` (default
//! 2048), z = 0 (on the ground, or on the sea floor where that is sea);
//! `creatures.seed` (default 0: from the clock, so each start differs)
//! seeds where they are placed and how they wander, so two measuring runs
//! can place and move the same herd. `creatures.rest_at_night` (default
//! true): with the `daytime` module (an optional dependency), nobody walks
//! from dusk to dawn (`daytime:night_changed`; at start `GetTime`); they
//! still fall and make way.
//!
//! A creature's node carries the variables (see `kinds.rs`):
//! - `creature`: its kind's name, UTF-8 (`chicken`, `cow`, `sheep`);
//! - `colour`: 3 bytes, red, green, blue;
//! - `size`: width (x), height (y), depth (z) in voxels, each a
//!   little-endian `f32`; the node's position is the middle of its feet;
//! - `model`: its model, a file of this module's `client_data`
//!   (`creatures/client_data/models/<kind>.glb`, UTF-8).
//!
//! Its orientation is a turn about +y by its heading (unturned faces +z),
//! its velocity what it walks and falls, in voxels a second.
//!
//! Where the players are is read once a second (`ListNodes { with_var:
//! VAR_PLAYER }`, the game's player nodes). Each tick: every creature
//! near a player thinks and steps with the voxels the cache
//! knows; for those that could not, the voxels their step may read and
//! the cache lacks are fetched in one or a few `GetVoxels` calls and they
//! step again; all that moved go in one `MoveNodes` call (and the
//! creatures placed, falling asleep or waking go in one `CreateNodes` or
//! `RemoveNodes` each, never a call per creature). A creature
//! standing on the ground asks nothing (it checks its ground every 1.6 s);
//! one needing a voxel of a section not generated waits (and the section
//! is asked for). Persistent creatures are found again with
//! `ListNodes { with_var: "creature" }` at start and every 5 s (their
//! sections load later); how many were ever made is kept in the world's
//! storage (`count.rs`), so neither a restart nor a restored backup makes
//! them again. `reload
//! creatures` carries every creature's state over; unloading the module
//! removes the transient ones.

pub mod count;
pub mod crowd;
pub mod kinds;
mod moving;
pub mod physics;
mod sleeping;
pub mod solidity;
mod spawning;
pub mod wander;

use std::collections::{HashMap, HashSet};
use std::time::Instant;

use buildat_daytime_api::{GetTime, NightChanged};
use buildat_interface::{
    Host, Module, ModuleError, Receive, Stash, UnloadKind, config, events, export_module, log,
    settings::Settings,
};
use buildat_main_api::VAR_PLAYER;
use buildat_voxel::geometry::{self, Pos, SectionSize};
use buildat_voxel::{AIR, VoxelInstance, VoxelRegistry};
use buildat_voxelworld_api::{
    CreateNodes, GetRegistry, GetSizes, GetVoxels, ListNodes, LoadOrGenerateSection,
    MAX_VOXELS_PER_CALL, MoveNodes, NodeMotion, NodeVolumeUpdated, RemoveNodes,
};
use serde::{Deserialize, Serialize};

use kinds::{KINDS, VAR_CREATURE};
use physics::{MAX_DROP, State};
use solidity::{Solidity, TypeSolidity};
use wander::{Brain, Rng};

/// Seconds between two looks for creatures loaded with their sections.
const ADOPT_INTERVAL: f64 = 5.0;
/// Longest tick simulated at once, seconds (a stalled server does not
/// throw creatures through the ground).
const MAX_DT: f64 = 0.25;
/// A creature standing still checks its ground once in this many ticks.
const IDLE_CHECK_TICKS: u64 = 16;
/// Most `GetVoxels` calls a tick; what is left waits for the next one.
const MAX_FETCH_CALLS: usize = 4;
/// Most creatures placed a tick, and columns tried for them.
const SPAWNS_PER_TICK: usize = 64;
/// Most transient creatures removed a tick when there are too many.
const REMOVALS_PER_TICK: usize = 16;
/// Seconds before a section not generated is asked for again.
const GENERATION_RETRY: f64 = 2.0;
/// Sections (y) searched for the surface, as the game's spawn does.
const SURFACE_SECTIONS_Y: [i32; 3] = [1, 0, -1];
/// Seconds between two reads of where the players are.
const PLAYERS_INTERVAL: f64 = 1.0;
/// Voxels along a side of the cells (x, z) that are active near players.
const ACTIVE_CELL: f64 = 32.0;
/// Seconds a transient creature stands with no player near before it
/// falls asleep (its node removed, its state kept here).
const SLEEP_AFTER: f64 = 10.0;
/// Most sleeping creatures woken (a node made for each) a second.
const WAKES_PER_SECOND: usize = 512;
/// One creature: its node and its mind.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Creature {
    id: u64,
    /// Index in [`KINDS`].
    kind: usize,
    state: State,
    brain: Brain,
    /// The second (of [`Counters::second`]) it last moved in.
    moved_in: u64,
    /// It needed a voxel not known at its last step.
    waiting: bool,
    /// Seconds it has stood with no player near (it falls asleep after
    /// [`SLEEP_AFTER`]).
    alone_for: f64,
}

impl Creature {
    fn new(id: u64, kind: usize, position: [f64; 3], rng: &mut Rng) -> Self {
        Self {
            id,
            kind,
            state: State::at(position),
            brain: Brain::new(rng),
            moved_in: u64::MAX,
            waiting: false,
            alone_for: 0.0,
        }
    }
}

/// A creature to place.
#[derive(Debug, Clone, Copy)]
struct Spawn {
    kind: usize,
    /// In the far herd.
    far: bool,
}

/// Where the herds live: the main one around the origin, the far one (if
/// any) around x = `far_distance`, z = 0.
#[derive(Debug, Clone, Copy)]
struct Herds {
    far_count: usize,
    far_distance: f64,
}

impl Herds {
    /// Whether a creature at `position` belongs to the far herd.
    fn is_far(self, position: [f64; 3]) -> bool {
        self.far_count > 0 && position[0] > self.far_distance / 2.0
    }

    /// The middle (x, z) of a herd.
    fn centre(self, far: bool) -> [f64; 2] {
        if far {
            [self.far_distance, 0.0]
        } else {
            [0.0, 0.0]
        }
    }
}

/// How many moved, per second.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Counters {
    /// Seconds since the module started (the current one).
    second: u64,
    /// Into the current second.
    elapsed: f64,
    moved_this_second: usize,
    moved_last_second: usize,
    ticks: u64,
}

/// What crosses a reload: every creature as it is, so none is lost, made
/// twice or set back.
#[derive(Serialize, Deserialize)]
struct Kept {
    /// Each creature, its kind by name (a kind this version lacks is
    /// dropped from the table; its node stays).
    creatures: Vec<(String, Creature)>,
    /// The sleeping ones (no node), the same way.
    asleep: Vec<(String, Creature)>,
    spawns: Vec<String>,
    rng: Rng,
    counters: Counters,
    prepared: bool,
    persistent_created: u32,
}
impl Stash for Kept {
    const LAYOUT: u32 = 2;
}

struct Creatures {
    host: Host,
    /// `creatures.count`.
    count: usize,
    /// `creatures.persistent`.
    persistent: u32,
    /// `creatures.radius`.
    radius: f64,
    /// `creatures.active_radius` (0: every creature is active).
    active_radius: f64,
    /// `creatures.far_count` and `creatures.far_distance`.
    herds: Herds,
    /// The (x, z) cells where creatures are simulated (`None`: all).
    active: Option<HashSet<[i32; 2]>>,
    /// Seconds since the players were last looked for.
    since_players: f64,
    /// Where the players were when last looked for (creatures step out of
    /// their way).
    players: Vec<[f64; 3]>,
    /// Creatures that stood still last tick because no player was near.
    dormant: usize,
    /// Creatures that overlapped others last tick deeper than
    /// [`crowd::CROWDED_DEPTH`].
    crowded: usize,
    /// A headless command run: nothing spawns or moves.
    headless: bool,
    creatures: Vec<Creature>,
    /// Transient creatures asleep: no player came near for
    /// [`SLEEP_AFTER`], so they have no node and cost nothing until one
    /// does (they wake where they stood).
    asleep: Vec<Creature>,
    ids: HashSet<u64>,
    spawns: Vec<Spawn>,
    rng: Rng,
    solidity: Solidity,
    types: TypeSolidity,
    section_size: SectionSize,
    /// The spawn area's sections are generated (and their creatures found).
    prepared: bool,
    /// The previous version's creatures came back (a reload).
    resumed: bool,
    /// Persistent creatures made in this world (kept in the world's
    /// storage: `count.rs`).
    persistent_created: u32,
    /// Sections asked for, and when.
    asked: HashMap<Pos, Instant>,
    since_adopt: f64,
    /// Seconds until placing may be tried again after columns failed.
    spawn_backoff: f64,
    counters: Counters,
    /// `creatures.rest_at_night`.
    rest_at_night: bool,
    /// Night (`daytime:night_changed`) and `rest_at_night`: nobody walks.
    resting: bool,
}

impl Creatures {
    fn refresh_registry(&mut self) -> Result<(), ModuleError> {
        let mut registry: VoxelRegistry = self.host.call(&GetRegistry {})?;
        registry.reindex();
        self.types = TypeSolidity::new(&registry);
        Ok(())
    }

    /// Whether each voxel is solid (`None`: not generated), in as few
    /// calls as the positions need.
    fn fetch(&mut self, positions: &[Pos]) -> Result<Vec<Option<bool>>, ModuleError> {
        let mut voxels = Vec::with_capacity(positions.len());
        for batch in positions.chunks(MAX_VOXELS_PER_CALL) {
            voxels.extend(self.host.call(&GetVoxels {
                positions: batch.to_vec(),
            })?);
        }
        if voxels
            .iter()
            .flatten()
            .any(|&voxel| self.types.solid(voxel).is_none())
        {
            self.refresh_registry()?;
        }
        // A type still unknown is taken as solid: nothing walks into it.
        Ok(voxels
            .into_iter()
            .map(|voxel| voxel.map(|v| self.types.solid(v).unwrap_or(true)))
            .collect())
    }

    /// Asks for a section not generated (once in [`GENERATION_RETRY`]);
    /// whether it is generated.
    fn ask_section(&mut self, section: Pos) -> Result<bool, ModuleError> {
        if self
            .asked
            .get(&section)
            .is_some_and(|at| at.elapsed().as_secs_f64() < GENERATION_RETRY)
        {
            return Ok(false);
        }
        let status = self.host.call(&LoadOrGenerateSection { section })?;
        if status.generated {
            self.asked.remove(&section);
        } else {
            self.asked.insert(section, Instant::now());
        }
        Ok(status.generated)
    }

    fn section_of(&self, voxel: Pos) -> Pos {
        self.section_size
            .section_of_chunk(geometry::chunk_of_voxel(voxel))
    }

    fn tick(&mut self, dtime: f64) -> Result<(), ModuleError> {
        let counters = &mut self.counters;
        counters.ticks += 1;
        counters.elapsed += dtime.max(0.0);
        if counters.elapsed >= 1.0 {
            counters.second += 1;
            counters.moved_last_second = std::mem::take(&mut counters.moved_this_second);
            counters.elapsed = (counters.elapsed - 1.0).min(1.0);
        }
        if self.headless {
            return Ok(());
        }
        let dt = dtime.clamp(0.0, MAX_DT);
        self.find_players(dtime)?;
        if !self.prepared {
            self.prepare()?;
        } else {
            self.since_adopt += dtime.max(0.0);
            if self.since_adopt >= ADOPT_INTERVAL {
                self.since_adopt = 0.0;
                self.adopt()?;
            }
            self.keep_population()?;
            self.spawn_some(dt)?;
        }
        self.simulate(dt)
    }

    /// Removes these creatures' nodes in one call (`why` for the log of
    /// one that was gone already).
    fn remove_nodes(&mut self, ids: &[u64], why: &str) {
        match self.host.call(&RemoveNodes { ids: ids.to_vec() }) {
            Ok(gone) if !gone.is_empty() => {
                log::debug!("creatures {why}: {} had no node any more", gone.len());
            }
            Ok(_) => {}
            Err(error) => log::debug!("creatures {why}: {error}"),
        }
    }

    /// At `core:start` and `core:continue` (after the stash came back, if
    /// any): the world's sizes and voxels, and when nothing came back, the
    /// count of persistent creatures made and the creatures in the world.
    fn start(&mut self) -> Result<(), ModuleError> {
        self.resting = self.rest_at_night && self.night_now();
        let sizes = self.host.call(&GetSizes {})?;
        self.section_size = SectionSize(sizes.section_size);
        self.refresh_registry()?;
        if self.resumed {
            log::info!("creatures: resumed with {}", self.creatures.len());
        } else if !self.headless {
            let world = self.host.world_path();
            self.persistent_created = match count::read_count(&mut self.host, &world) {
                Ok(created) => created,
                Err(error) => {
                    // Better none made than made twice.
                    log::error!("{error}; no persistent creatures are made");
                    u32::MAX
                }
            };
            self.adopt()?;
        }
        Ok(())
    }

    /// Whether it is night by the `daytime` module (day when it does not
    /// run).
    fn night_now(&self) -> bool {
        match self.host.call(&GetTime {}) {
            Ok(now) => now.night,
            Err(error) => {
                log::debug!("creatures: no time of day ({error}); always day");
                false
            }
        }
    }

    /// Dusk or dawn: they rest or walk again.
    fn night_changed(&mut self, night: bool) {
        self.resting = self.rest_at_night && night;
        if self.rest_at_night {
            log::info!(
                "creatures {} ({} of them)",
                if night { "rest for the night" } else { "wake" },
                self.creatures.len()
            );
        }
    }

    /// The `creatures` command's answer.
    fn report(&self) -> String {
        let mut per_kind = vec![0usize; KINDS.len()];
        for creature in &self.creatures {
            per_kind[creature.kind] += 1;
        }
        let kinds: Vec<String> = KINDS
            .iter()
            .zip(per_kind)
            .map(|(kind, n)| format!("{} {n}", kind.name))
            .collect();
        let waiting = self.creatures.iter().filter(|c| c.waiting).count();
        let grounded = self.creatures.iter().filter(|c| c.state.on_ground).count();
        format!(
            "creatures: {} ({}), {} moved in the last second, {grounded} on the ground, \
             {waiting} waiting, {} to place, {} standing with no player near, {} crowded, \
             {} asleep (no player near for {SLEEP_AFTER} s: no node){}",
            self.creatures.len(),
            kinds.join(", "),
            self.counters.moved_last_second,
            self.spawns.len(),
            self.dormant,
            self.crowded,
            self.asleep.len(),
            if self.resting {
                "; resting for the night"
            } else {
                ""
            }
        )
    }

    fn stash(&mut self) -> Kept {
        Kept {
            creatures: self
                .creatures
                .iter()
                .map(|c| (KINDS[c.kind].name.to_string(), c.clone()))
                .collect(),
            asleep: self
                .asleep
                .iter()
                .map(|c| (KINDS[c.kind].name.to_string(), c.clone()))
                .collect(),
            // The far herd's are queued again from its count.
            spawns: self
                .spawns
                .iter()
                .filter(|s| !s.far)
                .map(|s| KINDS[s.kind].name.to_string())
                .collect(),
            rng: self.rng.clone(),
            counters: self.counters.clone(),
            prepared: self.prepared,
            persistent_created: self.persistent_created,
        }
    }

    fn restore(&mut self, kept: Kept) {
        self.resumed = true;
        let index = |name: &str| KINDS.iter().position(|k| k.name == name);
        for (name, mut creature) in kept.creatures {
            if let Some(kind) = index(&name) {
                creature.kind = kind;
                self.ids.insert(creature.id);
                self.creatures.push(creature);
            }
        }
        for (name, mut creature) in kept.asleep {
            if let Some(kind) = index(&name) {
                creature.kind = kind;
                self.asleep.push(creature);
            }
        }
        self.spawns = kept
            .spawns
            .iter()
            .filter_map(|name| index(name).map(|kind| Spawn { kind, far: false }))
            .collect();
        self.rng = kept.rng;
        self.counters = kept.counters;
        self.prepared = kept.prepared;
        self.persistent_created = kept.persistent_created;
    }
}

/// A setting's value, or an error naming it when it is not within
/// `low..=high`.
fn check_within(name: &'static str, value: f64, low: f64, high: f64) -> Result<(), SettingError> {
    if value.is_finite() && (low..=high).contains(&value) {
        Ok(())
    } else {
        Err(SettingError::OutOfRange {
            name,
            value,
            low,
            high,
        })
    }
}

/// A setting of the creatures' that is of its type but not usable.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SettingError {
    #[error("setting {name}: {value} is not within {low}..={high}")]
    OutOfRange {
        name: &'static str,
        value: f64,
        low: f64,
        high: f64,
    },
}

impl From<SettingError> for ModuleError {
    fn from(error: SettingError) -> Self {
        ModuleError::msg(error.to_string())
    }
}

buildat_interface::settings! {
    /// What operators set (`--set creatures.KEY=VALUE`).
    pub(crate) struct CreaturesSettings in "creatures" {
        /// Transient creatures kept alive around the origin.
        count: usize = 16,
        /// Persistent creatures made once in a world (raising it later makes the difference).
        persistent: u32 = 8,
        /// Voxels around the origin in x and z where they spawn and stay.
        radius: f64 = 24.0,
        /// The simulation distance from every player, in voxels (0: every creature, always).
        active_radius: f64 = 128.0,
        /// Transient creatures of a second herd far away, for measuring.
        far_count: usize = 0,
        /// Where the far herd lives: x, in voxels.
        far_distance: f64 = 2048.0,
        /// Seeds where they are placed and how they wander (0: from the clock).
        seed: u64 = 0,
        /// Creatures stand still at night (when the daytime module runs).
        rest_at_night: bool = true,
    }
}

/// `creatures`: the herd's report.
#[derive(clap::Parser)]
#[command(
    name = "creatures",
    about = "how many creatures of each kind, how many moved in the last second"
)]
struct ReportCommand {}

impl Module for Creatures {
    fn create(host: Host) -> Result<Self, ModuleError> {
        let set = CreaturesSettings::read(&host)?;
        let seed = match set.seed {
            0 => std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64),
            seed => seed,
        };
        let radius = set.radius;
        check_within("creatures.radius", radius, 1.0, 512.0)?;
        let active_radius = set.active_radius;
        check_within("creatures.active_radius", active_radius, 0.0, 4096.0)?;
        let far_distance = set.far_distance;
        check_within("creatures.far_distance", far_distance, 2.0 * radius, 1.0e6)?;
        Ok(Self {
            count: set.count,
            persistent: set.persistent,
            radius,
            active_radius,
            herds: Herds {
                far_count: set.far_count,
                far_distance,
            },
            active: None,
            since_players: 0.0,
            players: Vec::new(),
            crowded: 0,
            dormant: 0,
            headless: host.get_config(config::HEADLESS).as_deref() == Some("1"),
            host,
            creatures: Vec::new(),
            asleep: Vec::new(),
            ids: HashSet::new(),
            spawns: Vec::new(),
            rng: Rng::new(seed),
            solidity: Solidity::default(),
            types: TypeSolidity::default(),
            section_size: SectionSize::default(),
            prepared: false,
            persistent_created: 0,
            resumed: false,
            asked: HashMap::new(),
            since_adopt: 0.0,
            spawn_backoff: 0.0,
            counters: Counters::default(),
            rest_at_night: set.rest_at_night,
            resting: false,
        })
    }

    fn receive(table: &mut Receive<Self>) {
        table
            .event(|creatures, _: events::Start| creatures.start())
            .event(|creatures, _: events::Continue| creatures.start())
            .event(|creatures, tick: events::Tick| creatures.tick(tick.dtime))
            .event(|creatures, changed: NightChanged| {
                creatures.night_changed(changed.night);
                Ok(())
            })
            .event(|creatures, updated: NodeVolumeUpdated| {
                creatures.solidity.forget_chunk(updated.chunk);
                Ok(())
            })
            .settings::<CreaturesSettings>()
            .command(Some("server"), |creatures, _, _: ReportCommand| {
                Ok(creatures.report())
            })
            .stash(Creatures::stash, |creatures, kept: Kept| {
                creatures.restore(kept);
                Ok(())
            });
    }

    fn unload(&mut self, kind: UnloadKind) -> Result<(), ModuleError> {
        match kind {
            // The table stashes every creature.
            UnloadKind::Reload => {}
            // Unloaded for good: the transient creatures go with it (they
            // are never saved; at a stop they simply are not written).
            UnloadKind::ForGood => {
                let transient: Vec<u64> = self
                    .creatures
                    .iter()
                    .filter(|c| !KINDS[c.kind].persistent)
                    .map(|c| c.id)
                    .collect();
                self.remove_nodes(&transient, "unloaded");
            }
            _ => {}
        }
        Ok(())
    }
}

export_module!(Creatures);
#[cfg(test)]
mod tests {
    use super::*;

    use buildat_interface::testing::TestHost;
    use buildat_modkit::testing::TestWorld;
    use std::collections::BTreeMap;
    use std::sync::{Arc, Mutex};

    type Values = buildat_voxelworld_api::MemoryValues;

    /// A kit for creatures (`config` on top of a small herd: radius 3,
    /// every creature active, seed 7) over the modkit's world in memory
    /// (stone up to y = 0), the world's values in a map.
    fn herd_kit(
        dir: &std::path::Path,
        config: &[(&str, &str)],
    ) -> (TestHost, TestWorld, Arc<Mutex<Values>>) {
        use buildat_voxelworld_api::{GetValue, PutValues, SectionStatus, Sizes};

        let mut kit = TestHost::new()
            .config("creatures.radius", "3")
            .config("creatures.active_radius", "0")
            .config("creatures.seed", "7")
            .world_path(dir);
        for (key, value) in config {
            kit = kit.config(key, value);
        }
        let world = TestWorld::on(kit.clone());
        world.fill([-8, -4, -8], [8, 0, 8], "stone");
        kit.answer(|_: GetSizes| {
            Ok(Sizes {
                chunk_size: geometry::CHUNK_SIZE,
                section_size: [1, 1, 1],
            })
        });
        kit.answer(|_: LoadOrGenerateSection| {
            Ok(SectionStatus {
                generated: true,
                save_enabled: true,
            })
        });
        let read = world.clone();
        kit.answer(move |get: GetVoxels| {
            Ok(get
                .positions
                .iter()
                .map(|p| read.voxel(*p).map(|name| read.id(&name)))
                .collect())
        });
        let values: Arc<Mutex<Values>> = Arc::default();
        let kept = values.clone();
        kit.answer(move |get: GetValue| Ok(kept.lock().unwrap().answer_get(&get)));
        let kept = values.clone();
        kit.answer(move |put: PutValues| Ok(kept.lock().unwrap().answer_put(&put.writes)));
        (kit, world, values)
    }

    fn tick(m: &mut buildat_interface::testing::TestModule<Creatures>, n: usize) {
        for _ in 0..n {
            m.emit(&events::Tick { dtime: 0.1 }).expect("ticks");
        }
    }

    /// Creatures on the test kit over the modkit's world in memory (stone
    /// up to y = 0), with the world's values in a map: the herd placed on
    /// the ground, its count in the values and nowhere else, every
    /// creature kept across a reload, and the persistent one not made
    /// again by a restart.
    #[test]
    fn the_herd_is_placed_counted_in_the_worlds_values_and_kept_across_a_reload() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (kit, world, values) = herd_kit(
            dir.path(),
            &[("creatures.count", "2"), ("creatures.persistent", "1")],
        );
        let herd = |world: &TestWorld| {
            let nodes = world.nodes();
            let persistent = nodes.iter().filter(|n| n.save_enabled).count();
            (nodes.len(), persistent)
        };

        let mut creatures = kit.load::<Creatures>().expect("loads");
        tick(&mut creatures, 5);
        assert_eq!(herd(&world), (3, 1), "two chickens and a cow or sheep");
        assert!(
            world.nodes().iter().all(|n| n.position[1] >= 1.0),
            "on the stone"
        );
        let count = (count::SPACE.to_string(), count::KEY.to_string());
        assert_eq!(
            values.lock().unwrap().get(&count).map(Vec::as_slice),
            Some(&b"1"[..])
        );
        assert!(
            std::fs::read_dir(dir.path())
                .expect("list")
                .next()
                .is_none(),
            "nothing beside the world's storage"
        );
        assert!(
            kit.commands().iter().any(|c| c.name == "creatures"),
            "the report command"
        );
        assert!(
            world
                .declared()
                .iter()
                .flat_map(|d| &d.settings)
                .any(|s| s.key == "creatures.active_radius"),
            "its settings declared"
        );
        let report = creatures.command("creatures", &[], None).expect("reports");
        assert!(report.starts_with("creatures: 3 ("), "{report}");

        let mut creatures = creatures.reload::<Creatures>().expect("reloads");
        assert_eq!(creatures.module().creatures.len(), 3, "all carried over");
        tick(&mut creatures, 5);
        assert_eq!(herd(&world), (3, 1), "none made again");

        // A restart: the transient ones go, the persistent one is found
        // and not made again (its count is in the world's values).
        creatures.unload(UnloadKind::ForGood).expect("unloads");
        assert_eq!(herd(&world), (1, 1));
        let mut creatures = kit.load::<Creatures>().expect("loads again");
        tick(&mut creatures, 5);
        assert_eq!(herd(&world), (3, 1));
    }

    /// Where every creature stands, by node id, in x and z.
    fn places(world: &TestWorld) -> BTreeMap<u64, [f64; 2]> {
        world
            .nodes()
            .iter()
            .map(|n| (n.id, [n.position[0], n.position[2]]))
            .collect()
    }

    /// The daytime module's dusk (`daytime:night_changed`): the herd stands
    /// still until dawn, then walks again; with the time of day read at
    /// start, a herd loaded at night rests at once; `rest_at_night` false
    /// keeps them walking.
    #[test]
    fn creatures_rest_at_night_and_walk_again_at_dawn() {
        use buildat_daytime_api::{GetTime, NightChanged, TimeOfDay};

        let dir = tempfile::tempdir().expect("temp dir");
        let (kit, world, _) = herd_kit(
            dir.path(),
            &[("creatures.count", "6"), ("creatures.persistent", "0")],
        );
        let mut creatures = kit.load::<Creatures>().expect("loads");
        tick(&mut creatures, 40);
        assert_eq!(world.nodes().len(), 6);
        let before = places(&world);
        tick(&mut creatures, 40);
        assert_ne!(places(&world), before, "by day they walk");

        creatures
            .emit(&NightChanged { night: true })
            .expect("night");
        tick(&mut creatures, 20); // They stop (and land) first.
        let resting = places(&world);
        tick(&mut creatures, 80);
        assert_eq!(places(&world), resting, "at night nobody walks");
        let report = creatures.command("creatures", &[], None).expect("reports");
        assert!(report.ends_with("; resting for the night"), "{report}");

        creatures
            .emit(&NightChanged { night: false })
            .expect("dawn");
        tick(&mut creatures, 80);
        assert_ne!(places(&world), resting, "at dawn they walk again");
        creatures.unload(UnloadKind::ForGood).expect("unloads");

        // Loaded at night: resting from the start.
        kit.answer(|_: GetTime| {
            Ok(TimeOfDay {
                time: 0.0,
                day: 0,
                day_seconds: 1200.0,
                night: true,
            })
        });
        let creatures = kit.load::<Creatures>().expect("loads at night");
        assert!(creatures.module().resting);
        drop(creatures);
        let (kit, _world, _) = herd_kit(dir.path(), &[("creatures.rest_at_night", "false")]);
        kit.answer(|_: GetTime| {
            Ok(TimeOfDay {
                time: 0.0,
                day: 0,
                day_seconds: 1200.0,
                night: true,
            })
        });
        let mut creatures = kit.load::<Creatures>().expect("loads");
        creatures
            .emit(&NightChanged { night: true })
            .expect("night");
        assert!(!creatures.module().resting, "rest_at_night off");
    }

    #[test]
    fn a_creature_belongs_to_the_herd_whose_side_it_is_on() {
        let herds = Herds {
            far_count: 10,
            far_distance: 2048.0,
        };
        assert!(!herds.is_far([20.0, 0.0, 0.0]));
        assert!(herds.is_far([2000.0, 0.0, 30.0]));
        assert_eq!(
            [herds.centre(false), herds.centre(true)],
            [[0.0, 0.0], [2048.0, 0.0]]
        );
        let single = Herds {
            far_count: 0,
            ..herds
        };
        assert!(!single.is_far([2000.0, 0.0, 30.0]), "no far herd");
    }

    /// A cow saved by an earlier version (no `model` var) is given its
    /// kind's model as it is adopted; one naming it already is left alone.
    #[test]
    fn an_adopted_creature_without_a_model_is_given_its_kinds() {
        use buildat_voxelworld_api::{DynamicNode, SetNodeVar};

        let dir = tempfile::tempdir().expect("temp dir");
        let (kit, _world, _values) = herd_kit(
            dir.path(),
            &[("creatures.count", "0"), ("creatures.persistent", "0")],
        );
        let cow = &KINDS[1];
        let mut old_vars = cow.vars();
        old_vars.remove(kinds::VAR_MODEL);
        let nodes = [
            DynamicNode::at_rest(41, [0.5, 1.0, 0.5], true, old_vars),
            DynamicNode::at_rest(42, [2.5, 1.0, 0.5], true, cow.vars()),
        ];
        kit.answer(move |list: ListNodes| {
            Ok(nodes.iter().filter(|n| list.includes(n)).cloned().collect())
        });
        let calls: Arc<Mutex<Vec<SetNodeVar>>> = Arc::default();
        let kept = calls.clone();
        kit.answer(move |call: SetNodeVar| {
            kept.lock().unwrap().push(call);
            Ok(())
        });
        let mut creatures = kit.load::<Creatures>().expect("loads");
        tick(&mut creatures, 3);
        assert_eq!(
            *calls.lock().unwrap(),
            [SetNodeVar {
                id: 41,
                name: "model".to_string(),
                value: b"creatures/client_data/models/cow.glb".to_vec(),
            }]
        );
    }

    #[test]
    fn settings_out_of_range_are_named() {
        assert!(check_within("creatures.radius", 24.0, 1.0, 512.0).is_ok());
        let error = check_within("creatures.radius", f64::NAN, 1.0, 512.0).unwrap_err();
        assert!(error.to_string().contains("creatures.radius"), "{error}");
        assert!(check_within("creatures.active_radius", -1.0, 0.0, 4096.0).is_err());
    }
}
