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
//! can place and move the same herd.
//!
//! A creature's node carries the variables (see `kinds.rs`):
//! - `creature`: its kind's name, UTF-8 (`chicken`, `cow`, `sheep`);
//! - `colour`: 3 bytes, red, green, blue;
//! - `size`: width (x), height (y), depth (z) in voxels, each a
//!   little-endian `f32`; the node's position is the middle of its feet.
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
pub mod physics;
pub mod solidity;
pub mod wander;

use std::collections::{HashMap, HashSet};
use std::time::Instant;

use buildat_interface::core_api::{RegisterCommand, RunCommand};
use buildat_interface::{
    Event, Host, Module, ModuleError, Stash, UnloadKind, config, decode, events, export_module, log,
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

/// The (x, z) cell a position is in, for the simulation distance.
fn active_cell(position: [f64; 3]) -> [i32; 2] {
    // `as` saturates: an absurd position lands in an edge cell.
    [position[0], position[2]].map(|p| (p / ACTIVE_CELL).floor() as i32)
}

/// The cells within `radius` voxels (rounded up to cells) of each player.
fn active_cells(players: &[[f64; 3]], radius: f64) -> HashSet<[i32; 2]> {
    let r = (radius / ACTIVE_CELL).ceil() as i32;
    let mut cells = HashSet::new();
    for &player in players {
        let [cx, cz] = active_cell(player);
        for dz in -r..=r {
            for dx in -r..=r {
                cells.insert([cx.saturating_add(dx), cz.saturating_add(dz)]);
            }
        }
    }
    cells
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
    /// Persistent creatures made in this world (kept in the world's
    /// storage: `count.rs`).
    persistent_created: u32,
    /// Sections asked for, and when.
    asked: HashMap<Pos, Instant>,
    since_adopt: f64,
    /// Seconds until placing may be tried again after columns failed.
    spawn_backoff: f64,
    counters: Counters,
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

    /// The sections the main herd's spawning searches, made ready before
    /// anything spawns (so the persistent creatures stored there are found
    /// first): every column within the radius of the origin, in
    /// [`SURFACE_SECTIONS_Y`] (the main herd's middle is the origin). The
    /// far herd's are read (and generated)
    /// when a player comes near it and its creatures are placed.
    fn area_sections(&self) -> Vec<Pos> {
        let r = self.radius.ceil() as i32;
        let low = self.section_of([-r, 0, -r]);
        let high = self.section_of([r, 0, r]);
        let mut sections = Vec::new();
        for sy in SURFACE_SECTIONS_Y {
            for sz in low[2]..=high[2] {
                for sx in low[0]..=high[0] {
                    sections.push([sx, sy, sz]);
                }
            }
        }
        sections
    }

    /// Loads or asks for the spawn area's sections; once all are there,
    /// finds the creatures they hold and may start spawning.
    fn prepare(&mut self) -> Result<(), ModuleError> {
        let mut ready = true;
        for section in self.area_sections() {
            ready &= self.ask_section(section)?;
        }
        if ready {
            self.prepared = true;
            self.adopt()?;
            log::info!(
                "creatures: area ready, {} creatures found",
                self.creatures.len()
            );
        }
        Ok(())
    }

    /// Takes in the loaded creature nodes not in the table yet (persistent
    /// ones whose section loaded, any left by a version that failed), and
    /// forgets those no longer loaded.
    fn adopt(&mut self) -> Result<(), ModuleError> {
        let nodes = self.host.call(&ListNodes {
            with_var: Some(VAR_CREATURE.to_string()),
        })?;
        let loaded: HashSet<u64> = nodes.iter().map(|n| n.id).collect();
        self.creatures.retain(|c| loaded.contains(&c.id));
        self.ids.retain(|id| loaded.contains(id));
        let mut adopted = 0;
        for node in nodes {
            if self.ids.contains(&node.id) {
                continue;
            }
            let Some(kind) = kinds::kind_of(&node.vars) else {
                continue;
            };
            self.ids.insert(node.id);
            self.creatures
                .push(Creature::new(node.id, kind, node.position, &mut self.rng));
            adopted += 1;
        }
        if adopted > 0 {
            log::info!("creatures: found {adopted} creatures in the world");
        }
        Ok(())
    }

    /// Queues spawns up to the settings, removes transient creatures past
    /// `creatures.count`.
    fn keep_population(&mut self) -> Result<(), ModuleError> {
        let transient: Vec<usize> = kinds::transient().collect();
        let persistent: Vec<usize> = kinds::persistent().collect();
        let herds = self.herds;
        for (far, wanted) in [(false, self.count), (true, herds.far_count)] {
            let in_herd =
                |c: &&Creature| !KINDS[c.kind].persistent && herds.is_far(c.state.position) == far;
            let sleeping = self.asleep.iter().filter(in_herd).count();
            let alive = self.creatures.iter().filter(in_herd).count() + sleeping;
            let queued = self
                .spawns
                .iter()
                .filter(|s| !KINDS[s.kind].persistent && s.far == far)
                .count();
            for i in alive + queued..wanted {
                self.spawns.push(Spawn {
                    kind: transient[i % transient.len()],
                    far,
                });
            }
            if alive > wanted {
                // The sleeping ones first: they have no node to remove.
                let mut extra_sleeping = (alive - wanted).min(sleeping);
                self.asleep.retain(|c| {
                    let drop = extra_sleeping > 0 && in_herd(&c);
                    extra_sleeping -= usize::from(drop);
                    !drop
                });
                let alive = self.creatures.iter().filter(in_herd).count();
                let wanted = wanted.saturating_sub(self.asleep.iter().filter(in_herd).count());
                if alive <= wanted {
                    continue;
                }
                let extra: Vec<u64> = self
                    .creatures
                    .iter()
                    .filter(in_herd)
                    .take((alive - wanted).min(REMOVALS_PER_TICK))
                    .map(|c| c.id)
                    .collect();
                self.remove_nodes(&extra, "past creatures.count");
                let extra: HashSet<u64> = extra.into_iter().collect();
                self.creatures.retain(|c| !extra.contains(&c.id));
                self.ids.retain(|id| !extra.contains(id));
            }
        }
        let queued = self
            .spawns
            .iter()
            .filter(|s| KINDS[s.kind].persistent)
            .count() as u32;
        for i in self.persistent_created.saturating_add(queued)..self.persistent {
            self.spawns.push(Spawn {
                kind: persistent[i as usize % persistent.len()],
                far: false,
            });
        }
        Ok(())
    }

    fn forget(&mut self, id: u64) {
        self.ids.remove(&id);
        self.creatures.retain(|c| c.id != id);
    }

    /// Places up to [`SPAWNS_PER_TICK`] queued creatures on the surface of
    /// random columns of their herd's area (one `GetVoxels` for all the
    /// columns).
    fn spawn_some(&mut self, dt: f64) -> Result<(), ModuleError> {
        self.spawn_backoff -= dt;
        if self.spawns.is_empty() || self.spawn_backoff > 0.0 {
            return Ok(());
        }
        // A herd with no player near is placed when one comes: placing
        // reads (and so generates) its ground, and it would only sleep.
        let near = [false, true].map(|far| self.herd_has_player_near(far));
        let (mut ready, waiting): (Vec<Spawn>, Vec<Spawn>) = self
            .spawns
            .drain(..)
            .partition(|s| near[usize::from(s.far)]);
        self.spawns = waiting;
        if ready.is_empty() {
            return Ok(());
        }
        let [_, h, _] = self.section_size.0;
        let top = (SURFACE_SECTIONS_Y[0] + 1) * h * geometry::CHUNK_SIZE - 1;
        let bottom = SURFACE_SECTIONS_Y[2] * h * geometry::CHUNK_SIZE;
        let tries = ready.len().min(SPAWNS_PER_TICK);
        let batch = ready.split_off(ready.len() - tries);
        self.spawns.extend(ready);
        let mut columns: Vec<[i32; 2]> = Vec::with_capacity(tries);
        for spawn in &batch {
            // Uniform in the disc.
            let [cx, cz] = self.herds.centre(spawn.far);
            let r = self.radius * self.rng.unit().sqrt();
            let a = self.rng.range(0.0, std::f64::consts::TAU);
            columns.push([
                (cx + r * a.sin()).floor() as i32,
                (cz + r * a.cos()).floor() as i32,
            ]);
        }
        let positions: Vec<Pos> = columns
            .iter()
            .flat_map(|&[x, z]| (bottom..=top).rev().map(move |y| [x, y, z]))
            .collect();
        let mut voxels = Vec::with_capacity(positions.len());
        for batch in positions.chunks(MAX_VOXELS_PER_CALL) {
            voxels.extend(self.host.call(&GetVoxels {
                positions: batch.to_vec(),
            })?);
        }
        let height = (top - bottom + 1) as usize;
        let mut unplaced = Vec::new();
        let mut placing = Vec::new();
        for ((column, [x, z]), spawn) in voxels.chunks(height).zip(columns).zip(batch) {
            // The far herd is for measuring: it stands on the sea floor
            // too, wherever its area happens to be in this world.
            match self.surface(column, top, spawn.far)? {
                Some(surface) => placing.push((
                    spawn,
                    [f64::from(x) + 0.5, f64::from(surface), f64::from(z) + 0.5],
                )),
                None => unplaced.push(spawn),
            }
        }
        // One call for the tick's creatures.
        let nodes = placing
            .iter()
            .map(|(spawn, position)| KINDS[spawn.kind].node_at(*position))
            .collect();
        let ids = if placing.is_empty() {
            Vec::new()
        } else {
            self.host.call(&CreateNodes { nodes })?
        };
        let mut placed = 0;
        let mut persistent_made = false;
        for ((spawn, position), id) in placing.into_iter().zip(ids) {
            let Some(id) = id else {
                unplaced.push(spawn);
                continue;
            };
            if KINDS[spawn.kind].persistent {
                self.persistent_created = self.persistent_created.saturating_add(1);
                persistent_made = true;
            }
            let mut creature = Creature::new(id, spawn.kind, position, &mut self.rng);
            creature.state.on_ground = true;
            self.ids.insert(id);
            self.creatures.push(creature);
            placed += 1;
        }
        if persistent_made
            && let Err(error) = count::write_count(&mut self.host, self.persistent_created)
        {
            log::error!("creatures: recording the persistent creatures made: {error}");
        }
        // Tried again after the others waiting.
        self.spawns.splice(0..0, unplaced);
        if placed == 0 {
            // Water everywhere tried, or not generated: try other columns
            // in a second (while some are placed, the rest try again at
            // once on other columns).
            self.spawn_backoff = 1.0;
        }
        Ok(())
    }

    /// The y to stand at on a column read from `top` down: above its
    /// highest solid voxel, if air is there (or water, if `wet` is
    /// allowed) and the column is generated and does not reach the top.
    fn surface(
        &mut self,
        column: &[Option<u32>],
        top: i32,
        wet: bool,
    ) -> Result<Option<i32>, ModuleError> {
        let mut above = None;
        for (depth, voxel) in column.iter().enumerate() {
            let Some(voxel) = *voxel else {
                return Ok(None);
            };
            let solid = match self.types.solid(voxel) {
                Some(solid) => solid,
                None => {
                    self.refresh_registry()?;
                    self.types.solid(voxel).unwrap_or(true)
                }
            };
            if solid {
                let open = above.is_some_and(|v| wet || VoxelInstance(v).type_id() == AIR);
                return Ok(open.then(|| top - depth as i32 + 1));
            }
            above = Some(voxel);
        }
        Ok(None)
    }

    /// One tick of every creature: think, step with the voxels known, fetch
    /// those the creatures that could not step need (one or a few
    /// `GetVoxels`), step those again, and tell the world of all that moved
    /// in one call.
    fn simulate(&mut self, dt: f64) -> Result<(), ModuleError> {
        let ticks = self.counters.ticks;
        let second = self.counters.second;
        let herds = self.herds;
        let mut moves = Vec::new();
        let mut moved = 0;
        let mut retry = Vec::new();
        self.dormant = 0;
        let active = &self.active;
        let is_dormant = |creature: &Creature| {
            active.as_ref().is_some_and(|cells| {
                creature.state.on_ground && !cells.contains(&active_cell(creature.state.position))
            })
        };
        let pushes = self.crowd_pushes(&is_dormant);
        self.crowded = pushes.iter().filter(|p| crowd::is_crowded(**p)).count();
        for (index, creature) in self.creatures.iter_mut().enumerate() {
            if is_dormant(creature) {
                // No player near: it stands (told once, so nobody
                // extrapolates a walk it no longer makes).
                self.dormant += 1;
                if creature.state.velocity != [0.0; 3] {
                    creature.state.velocity = [0.0; 3];
                    moves.push(NodeMotion {
                        id: creature.id,
                        position: creature.state.position,
                        orientation: physics::yaw_quaternion(creature.brain.heading),
                        velocity: [0.0; 3],
                    });
                }
                continue;
            }
            let kind = &KINDS[creature.kind];
            let [x, _, z] = creature.state.position;
            let centre = herds.centre(herds.is_far(creature.state.position));
            let home = ((x - centre[0]).hypot(z - centre[1]) > self.radius)
                .then(|| wander::heading_towards([x, z], centre));
            creature.brain.think(dt, home, &mut self.rng);
            let mut walk = crowd::steer(creature.brain.walk(kind.speed), pushes[index]);
            let still = walk == [0.0, 0.0]
                && creature.state.on_ground
                && creature.state.velocity == [0.0; 3];
            if still
                && !ticks
                    .wrapping_add(creature.id)
                    .is_multiple_of(IDLE_CHECK_TICKS)
            {
                continue;
            }
            let mut read = self.solidity.reader();
            match advance(creature, &mut walk, dt, &mut read, &mut self.rng) {
                Some(motion) => {
                    moved += count_move(creature, &motion, second);
                    moves.extend(motion);
                }
                None => retry.push((index, walk)),
            }
        }
        if !retry.is_empty() {
            self.fetch_needed(&retry, dt)?;
            for (index, mut walk) in retry {
                let creature = &mut self.creatures[index];
                let mut read = self.solidity.reader();
                match advance(creature, &mut walk, dt, &mut read, &mut self.rng) {
                    Some(motion) => {
                        moved += count_move(creature, &motion, second);
                        moves.extend(motion);
                    }
                    None => creature.waiting = true,
                }
            }
        }
        self.counters.moved_this_second += moved;
        if !moves.is_empty() {
            // Gone: removed by someone, or their section left memory (a
            // persistent one is found again when it loads).
            for id in self.host.call(&MoveNodes { moves })? {
                self.forget(id);
            }
        }
        Ok(())
    }

    /// Each creature's push out of the others and out of the players' way
    /// (`[0, 0]` for a dormant one, which is left out).
    fn crowd_pushes(&self, is_dormant: &dyn Fn(&Creature) -> bool) -> Vec<[f64; 2]> {
        let mut awake = Vec::new();
        let mut bodies = Vec::new();
        for (index, creature) in self.creatures.iter().enumerate() {
            if !is_dormant(creature) {
                let body = &KINDS[creature.kind].body;
                awake.push(index);
                bodies.push(crowd::Occupant {
                    position: creature.state.position,
                    half_width: body.half_width,
                    height: body.height,
                });
            }
        }
        let mut pushes = vec![[0.0; 2]; self.creatures.len()];
        for (index, push) in awake.into_iter().zip(crowd::pushes(&bodies, &self.players)) {
            pushes[index] = push;
        }
        pushes
    }

    /// Fetches the voxels the creatures planned in `plans` may read and the
    /// cache does not know (at most [`MAX_FETCH_CALLS`] calls), and asks
    /// for the sections of those not generated.
    fn fetch_needed(&mut self, plans: &[(usize, [f64; 2])], dt: f64) -> Result<(), ModuleError> {
        let mut missing = HashSet::new();
        for &(index, walk) in plans {
            let creature = &self.creatures[index];
            let body = &KINDS[creature.kind].body;
            let (motion, ahead) = physics::needed(body, &creature.state, walk, dt);
            let mut known = self.solidity.reader();
            for pos in motion
                .voxels()
                .chain(ahead.into_iter().flat_map(|b| b.voxels()))
            {
                if known(pos).is_none() {
                    missing.insert(pos);
                }
            }
        }
        let mut missing: Vec<Pos> = missing.into_iter().collect();
        missing.truncate(MAX_FETCH_CALLS * MAX_VOXELS_PER_CALL);
        let solid = self.fetch(&missing)?;
        let mut absent = HashSet::new();
        for (pos, solid) in missing.into_iter().zip(solid) {
            match solid {
                Some(solid) => self.solidity.insert(pos, solid),
                None => {
                    absent.insert(self.section_of(pos));
                }
            }
        }
        for section in absent {
            self.ask_section(section)?;
        }
        Ok(())
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

    /// Reads where the players are once in [`PLAYERS_INTERVAL`], for the
    /// simulation distance.
    fn find_players(&mut self, dtime: f64) -> Result<(), ModuleError> {
        if self.active_radius <= 0.0 {
            return Ok(());
        }
        self.since_players += dtime.max(0.0);
        if self.active.is_some() && self.since_players < PLAYERS_INTERVAL {
            return Ok(());
        }
        self.since_players = 0.0;
        let players = self.host.call(&ListNodes {
            with_var: Some(VAR_PLAYER.to_string()),
        })?;
        let positions: Vec<[f64; 3]> = players.iter().map(|n| n.position).collect();
        let interval = if self.active.is_some() {
            PLAYERS_INTERVAL
        } else {
            0.0
        };
        self.active = Some(active_cells(&positions, self.active_radius));
        self.players = positions;
        self.sleep_and_wake(interval)
    }

    /// Whether any cell of a herd's area is near a player (always, when
    /// every creature is simulated).
    fn herd_has_player_near(&self, far: bool) -> bool {
        let Some(cells) = &self.active else {
            return self.active_radius <= 0.0;
        };
        let [cx, cz] = self.herds.centre(far);
        let low = active_cell([cx - self.radius, 0.0, cz - self.radius]);
        let high = active_cell([cx + self.radius, 0.0, cz + self.radius]);
        cells
            .iter()
            .any(|c| (low[0]..=high[0]).contains(&c[0]) && (low[1]..=high[1]).contains(&c[1]))
    }

    /// Transient creatures alone for [`SLEEP_AFTER`] fall asleep (their
    /// node removed); sleeping ones with a player near again wake (a node
    /// made where they stood), at most [`WAKES_PER_SECOND`] at a time.
    fn sleep_and_wake(&mut self, interval: f64) -> Result<(), ModuleError> {
        let Some(cells) = &self.active else {
            return Ok(());
        };
        let (sleepers, waking) =
            who_sleeps_and_wakes(&mut self.creatures, &mut self.asleep, cells, interval);
        if !sleepers.is_empty() {
            // One call for all of them (a herd falls asleep together).
            self.remove_nodes(&sleepers, "falling asleep");
            let sleepers: HashSet<u64> = sleepers.into_iter().collect();
            let (falling, awake) = std::mem::take(&mut self.creatures)
                .into_iter()
                .partition(|c| sleepers.contains(&c.id));
            self.creatures = awake;
            for mut creature in falling {
                self.ids.remove(&creature.id);
                creature.state.velocity = [0.0; 3];
                self.asleep.push(creature);
            }
        }
        if waking.is_empty() {
            return Ok(());
        }
        let nodes = waking
            .iter()
            .map(|creature| KINDS[creature.kind].node_at(creature.state.position))
            .collect();
        let ids = match self.host.call(&CreateNodes { nodes }) {
            Ok(ids) => ids,
            Err(error) => {
                // The world is away (a reload): they sleep on and wake
                // the next second.
                self.asleep.extend(waking);
                return Err(error);
            }
        };
        let ids = ids.into_iter().chain(std::iter::repeat(None));
        for (mut creature, id) in waking.into_iter().zip(ids) {
            match id {
                Some(id) => {
                    creature.id = id;
                    creature.alone_for = 0.0;
                    self.ids.insert(id);
                    self.creatures.push(creature);
                }
                // Its place could not be loaded: it sleeps on, and is
                // tried again the next second.
                None => self.asleep.push(creature),
            }
        }
        Ok(())
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
             {} asleep (no player near for {SLEEP_AFTER} s: no node)",
            self.creatures.len(),
            kinds.join(", "),
            self.counters.moved_last_second,
            self.spawns.len(),
            self.dormant,
            self.crowded,
            self.asleep.len()
        )
    }

    fn stash(&self) -> Kept {
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

/// Counts each creature's time alone (on the ground, no player near) one
/// `interval` on; answers the transient ones alone for [`SLEEP_AFTER`]
/// (to put to sleep) and takes out of `asleep` those with a player near
/// again (to wake), at most [`WAKES_PER_SECOND`].
fn who_sleeps_and_wakes(
    creatures: &mut [Creature],
    asleep: &mut Vec<Creature>,
    cells: &HashSet<[i32; 2]>,
    interval: f64,
) -> (Vec<u64>, Vec<Creature>) {
    let mut sleepers = Vec::new();
    for creature in creatures {
        let alone =
            creature.state.on_ground && !cells.contains(&active_cell(creature.state.position));
        creature.alone_for = if alone {
            creature.alone_for + interval
        } else {
            0.0
        };
        if alone && !KINDS[creature.kind].persistent && creature.alone_for >= SLEEP_AFTER {
            sleepers.push(creature.id);
        }
    }
    let mut waking = Vec::new();
    let mut index = 0;
    while index < asleep.len() && waking.len() < WAKES_PER_SECOND {
        if cells.contains(&active_cell(asleep[index].state.position)) {
            waking.push(asleep.swap_remove(index));
        } else {
            index += 1;
        }
    }
    (sleepers, waking)
}

/// One creature's step with the voxels `read` knows: the drop ahead (a
/// deep one turns it around and it stands this tick), the body's step (a
/// wall turns it around). Its move, if it moved; `None` if a voxel it
/// needs is not known (nothing changed but `walk`, to try again with).
fn advance(
    creature: &mut Creature,
    walk: &mut [f64; 2],
    dt: f64,
    read: &mut impl FnMut(Pos) -> Option<bool>,
    rng: &mut Rng,
) -> Option<Option<NodeMotion>> {
    let body = &KINDS[creature.kind].body;
    if *walk != [0.0, 0.0] && creature.state.on_ground {
        let drop = physics::ground_drop(body, creature.state.position, *walk, &mut *read)?;
        if drop > MAX_DROP {
            creature.brain.turn_around(rng);
            *walk = [0.0, 0.0];
        }
    }
    let outcome = physics::step(body, &creature.state, *walk, dt, &mut *read)?;
    creature.waiting = false;
    if outcome.blocked {
        creature.brain.turn_around(rng);
    }
    if outcome.state == creature.state {
        return Some(None);
    }
    creature.state = outcome.state;
    Some(Some(NodeMotion {
        id: creature.id,
        position: creature.state.position,
        orientation: physics::yaw_quaternion(creature.brain.heading),
        velocity: creature.state.velocity.map(|v| v as f32),
    }))
}

/// 1 the first time a creature moves in this second (for the count of
/// creatures that moved in the last second), else 0.
fn count_move(creature: &mut Creature, motion: &Option<NodeMotion>, second: u64) -> usize {
    if motion.is_some() && creature.moved_in != second {
        creature.moved_in = second;
        1
    } else {
        0
    }
}

/// A setting's value, or an error naming it when it is not within
/// `low..=high`.
fn check_within(name: &str, value: f64, low: f64, high: f64) -> Result<(), ModuleError> {
    if value.is_finite() && (low..=high).contains(&value) {
        Ok(())
    } else {
        Err(ModuleError::msg(format!(
            "setting {name}: {value} is not within {low}..={high}"
        )))
    }
}

impl Module for Creatures {
    fn create(host: Host) -> Result<Self, ModuleError> {
        let seed = match host.get_setting("creatures.seed", 0u64)? {
            0 => std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64),
            seed => seed,
        };
        let radius: f64 = host.get_setting("creatures.radius", 24.0)?;
        check_within("creatures.radius", radius, 1.0, 512.0)?;
        let active_radius: f64 = host.get_setting("creatures.active_radius", 128.0)?;
        check_within("creatures.active_radius", active_radius, 0.0, 4096.0)?;
        let far_distance: f64 = host.get_setting("creatures.far_distance", 2048.0)?;
        check_within("creatures.far_distance", far_distance, 2.0 * radius, 1.0e6)?;
        Ok(Self {
            count: host.get_setting("creatures.count", 16)?,
            persistent: host.get_setting("creatures.persistent", 8)?,
            radius,
            active_radius,
            herds: Herds {
                far_count: host.get_setting("creatures.far_count", 0)?,
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
            asked: HashMap::new(),
            since_adopt: 0.0,
            spawn_backoff: 0.0,
            counters: Counters::default(),
        })
    }

    fn init(&mut self) -> Result<(), ModuleError> {
        self.host.sub_event(events::Tick::NAME)?;
        self.host.sub_event(NodeVolumeUpdated::NAME)?;
        Ok(())
    }

    fn event(&mut self, name: &str, payload: &[u8]) -> Result<(), ModuleError> {
        match name {
            events::Start::NAME | events::Continue::NAME => {
                self.host.call(&RegisterCommand {
                    name: "creatures".into(),
                    usage: String::new(),
                    help: "how many creatures of each kind, how many moved in the last second"
                        .into(),
                    privilege: Some("server".into()),
                })?;
                let sizes = self.host.call(&GetSizes {})?;
                self.section_size = SectionSize(sizes.section_size);
                self.refresh_registry()?;
                if let Some(kept) = self.host.take_stash::<Kept>()? {
                    self.restore(kept);
                    log::info!("creatures: resumed with {}", self.creatures.len());
                } else if !self.headless {
                    let world = self.host.world_path();
                    self.persistent_created = match count::read_count(&mut self.host, &world) {
                        Ok(created) => created,
                        Err(error) => {
                            // Better none made than made twice.
                            log::error!("creatures: {error}; no persistent creatures are made");
                            u32::MAX
                        }
                    };
                    self.adopt()?;
                }
            }
            events::Tick::NAME => {
                let tick: events::Tick = decode(payload)?;
                self.tick(tick.dtime)?;
            }
            NodeVolumeUpdated::NAME => {
                let updated: NodeVolumeUpdated = decode(payload)?;
                self.solidity.forget_chunk(updated.chunk);
            }
            _ => {}
        }
        Ok(())
    }

    fn call(&mut self, function: &str, payload: &[u8]) -> Result<Vec<u8>, ModuleError> {
        buildat_interface::answer_calls!(function, payload, {
            RunCommand => |_| Ok(self.report()),
        })
    }

    fn unload(&mut self, kind: UnloadKind) -> Result<(), ModuleError> {
        match kind {
            UnloadKind::Reload => self.host.store_stash(&self.stash())?,
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

    #[test]
    fn creatures_near_a_player_are_active_and_far_ones_are_not() {
        let cells = active_cells(&[[10.0, 5.0, -10.0]], 100.0);
        // 100 voxels round up to 4 cells each way: 9 × 9 cells.
        assert_eq!(cells.len(), 81);
        assert!(
            cells.contains(&active_cell([10.0, 90.0, -10.0])),
            "y is ignored"
        );
        assert!(cells.contains(&active_cell([100.0, 0.0, -100.0])));
        assert!(cells.contains(&active_cell([-128.0, 0.0, 0.0])));
        assert!(!cells.contains(&active_cell([-129.0, 0.0, 0.0])));
        assert!(!cells.contains(&active_cell([300.0, 0.0, 0.0])));
        assert!(active_cells(&[], 100.0).is_empty(), "no player: all stand");
        // Absurd positions stay in edge cells instead of overflowing.
        let edge = active_cells(&[[f64::MAX, 0.0, f64::MIN]], 64.0);
        assert!(edge.contains(&[i32::MAX, i32::MIN]));
    }

    #[test]
    fn a_transient_creature_alone_falls_asleep_and_wakes_when_a_player_comes() {
        let mut rng = Rng::new(7);
        let chicken = KINDS.iter().position(|k| !k.persistent).unwrap();
        let cow = KINDS.iter().position(|k| k.persistent).unwrap();
        let far = [5000.5, 10.0, 0.5];
        let mut creatures = vec![
            Creature::new(1, chicken, far, &mut rng),
            Creature::new(2, cow, far, &mut rng),
            Creature::new(3, chicken, [0.5, 10.0, 0.5], &mut rng),
        ];
        for creature in &mut creatures {
            creature.state.on_ground = true;
        }
        let mut asleep = Vec::new();
        let near_origin = active_cells(&[[0.0, 10.0, 0.0]], 64.0);
        let mut slept = Vec::new();
        let mut seconds = 0.0;
        while slept.is_empty() {
            let (sleepers, waking) =
                who_sleeps_and_wakes(&mut creatures, &mut asleep, &near_origin, 1.0);
            assert!(waking.is_empty());
            slept = sleepers;
            seconds += 1.0;
            assert!(seconds <= SLEEP_AFTER + 1.0);
        }
        assert_eq!(
            slept,
            vec![1],
            "the far chicken; never a cow, never one near"
        );
        assert_eq!(creatures[2].alone_for, 0.0);
        // Asleep where it stood; a player comes near it: it wakes.
        asleep.push(creatures.remove(0));
        let (_, waking) = who_sleeps_and_wakes(&mut creatures, &mut asleep, &near_origin, 1.0);
        assert!(waking.is_empty() && asleep.len() == 1);
        let near_it = active_cells(&[far], 64.0);
        let (_, waking) = who_sleeps_and_wakes(&mut creatures, &mut asleep, &near_it, 1.0);
        assert_eq!(waking.len(), 1);
        assert_eq!(waking[0].state.position, far);
        assert!(asleep.is_empty());
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

    /// The herd's bodies, for [`crowd::pushes`].
    fn bodies(herd: &[Creature]) -> Vec<crowd::Occupant> {
        herd.iter()
            .map(|c| crowd::Occupant {
                position: c.state.position,
                half_width: KINDS[c.kind].body.half_width,
                height: KINDS[c.kind].body.height,
            })
            .collect()
    }

    #[test]
    fn a_herd_standing_on_one_point_steps_apart_on_flat_ground() {
        let mut rng = Rng::new(7);
        let chicken = KINDS
            .iter()
            .position(|k| k.name == "chicken")
            .expect("chickens");
        let mut herd: Vec<Creature> = (0..20)
            .map(|id| Creature::new(id, chicken, [0.5, 10.0, 0.5], &mut rng))
            .collect();
        let mut flat = |voxel: Pos| Some(voxel[1] < 10);
        let crowded = |herd: &[Creature]| {
            crowd::pushes(&bodies(herd), &[])
                .into_iter()
                .filter(|p| crowd::is_crowded(*p))
                .count()
        };
        assert_eq!(crowded(&herd), 20, "all in one point");
        // Two seconds of ticks, standing (no walk of their own): only the
        // pushes move them, through the same physics step as a walk.
        for _ in 0..20 {
            let pushes = crowd::pushes(&bodies(&herd), &[]);
            for (creature, push) in herd.iter_mut().zip(pushes) {
                let mut walk = crowd::steer([0.0; 2], push);
                advance(creature, &mut walk, 0.1, &mut flat, &mut rng).expect("flat ground");
            }
        }
        assert_eq!(crowded(&herd), 0, "spread out");
        assert!(
            herd.iter().all(|c| c.state.position[1] == 10.0),
            "on the ground"
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
