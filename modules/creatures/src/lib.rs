//! `creatures`: animals that wander the terrain, written as a modder
//! would, on the world's dynamic nodes (docs/modding.md, "A creature").
//!
//! Owns: the creatures (one dynamic node each), their kinds (`kinds.rs`:
//! `chicken` transient; `cow` and `sheep` persistent, saved with the world
//! and back after a restart), spawning them on the surface, how they move
//! (`wander.rs`: walk a while along a heading at 2–3.5 voxels a second,
//! stop, turn, turn around at a wall or a drop deeper than
//! [`physics::MAX_DROP`], head back when out of their area; `physics.rs`:
//! gravity, landing, no walking into solid voxels, stepping up one), the
//! voxels they know (`solidity.rs`), and the console command `creatures`
//! (counts per kind, how many moved in the last second, stand on the
//! ground, wait for voxels not generated, are still to be placed).
//! Does not own: the nodes themselves or their storage (`voxelworld`),
//! telling clients about them (the `replicate` module), drawing them.
//!
//! Settings: `creatures.count` (transient creatures kept alive, default
//! 16), `creatures.persistent` (persistent creatures made once in a world,
//! default 8; raising it later makes the difference, never more), and
//! `creatures.radius` (voxels around the origin in x and z where they
//! spawn and stay, default 24).
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
//! Each tick: every creature thinks and steps with the voxels the cache
//! knows; for those that could not, the voxels their step may read and
//! the cache lacks are fetched in one or a few `GetVoxels` calls and they
//! step again; all that moved go in one `MoveNodes` call. A creature
//! standing on the ground asks nothing (it checks its ground every 1.6 s);
//! one needing a voxel of a section not generated waits (and the section
//! is asked for). Persistent creatures are found again with
//! `ListNodes { with_var: "creature" }` at start and every 5 s (their
//! sections load later); how many were ever made is in
//! `<world>/creatures.txt`, so a restart never makes them again. `reload
//! creatures` carries every creature's state over; unloading the module
//! removes the transient ones.

pub mod kinds;
pub mod physics;
pub mod solidity;
pub mod wander;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

use buildat_interface::core_api::{RegisterCommand, RunCommand};
use buildat_interface::{
    Event, Host, Module, ModuleError, Stash, UnloadKind, config, decode, events, export_module, log,
};
use buildat_voxel::geometry::{self, Pos, SectionSize};
use buildat_voxel::{AIR, VoxelInstance, VoxelRegistry};
use buildat_voxelworld_api::{
    CreateNode, GetRegistry, GetSizes, GetVoxels, ListNodes, LoadOrGenerateSection,
    MAX_VOXELS_PER_CALL, MoveNodes, NodeMotion, NodeVolumeUpdated, RemoveNode,
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
const SPAWNS_PER_TICK: usize = 16;
/// Most transient creatures removed a tick when there are too many.
const REMOVALS_PER_TICK: usize = 16;
/// Seconds before a section not generated is asked for again.
const GENERATION_RETRY: f64 = 2.0;
/// Sections (y) searched for the surface, as the game's spawn does.
const SURFACE_SECTIONS_Y: [i32; 3] = [1, 0, -1];
/// The file in the world folder counting the persistent creatures made.
const MARKER_FILE: &str = "creatures.txt";
const MARKER_KEY: &str = "persistent_created";

/// Why the count of persistent creatures made could not be read.
#[derive(Debug, thiserror::Error)]
pub enum MarkerError {
    #[error("reading {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: no line '{MARKER_KEY} = N'")]
    Malformed { path: PathBuf },
}

/// How many persistent creatures were ever made in the world whose folder
/// is `world` (0 when the file is not there).
pub fn read_marker(world: &Path) -> Result<u32, MarkerError> {
    let path = world.join(MARKER_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(source) => return Err(MarkerError::Read { path, source }),
    };
    text.lines()
        .filter_map(|line| line.split_once('='))
        .find(|(key, _)| key.trim() == MARKER_KEY)
        .and_then(|(_, value)| value.trim().parse().ok())
        .ok_or(MarkerError::Malformed { path })
}

/// Records `created` (written aside and renamed: the file is either the
/// old or the new count).
pub fn write_marker(world: &Path, created: u32) -> std::io::Result<()> {
    let path = world.join(MARKER_FILE);
    let aside = world.join(format!("{MARKER_FILE}.new"));
    let text = format!(
        "# The creatures module: how many persistent creatures it has made in this world\n\
         # (it never makes them again; remove this file to have them made once more).\n\
         {MARKER_KEY} = {created}\n"
    );
    std::fs::write(&aside, text)?;
    std::fs::rename(aside, path)
}

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
        }
    }
}

/// A creature to place.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
struct Spawn {
    kind: usize,
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
    spawns: Vec<String>,
    rng: Rng,
    counters: Counters,
    prepared: bool,
    persistent_created: u32,
}
impl Stash for Kept {
    const LAYOUT: u32 = 1;
}

struct Creatures {
    host: Host,
    /// `creatures.count`.
    count: usize,
    /// `creatures.persistent`.
    persistent: u32,
    /// `creatures.radius`.
    radius: f64,
    /// A headless command run: nothing spawns or moves.
    headless: bool,
    creatures: Vec<Creature>,
    ids: HashSet<u64>,
    spawns: Vec<Spawn>,
    rng: Rng,
    solidity: Solidity,
    types: TypeSolidity,
    section_size: SectionSize,
    /// The spawn area's sections are generated (and their creatures found).
    prepared: bool,
    /// Persistent creatures made in this world (the marker file's count).
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

    /// The sections spawning searches: every column within the radius, in
    /// [`SURFACE_SECTIONS_Y`].
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
        let alive = self
            .creatures
            .iter()
            .filter(|c| !KINDS[c.kind].persistent)
            .count();
        let queued = self
            .spawns
            .iter()
            .filter(|s| !KINDS[s.kind].persistent)
            .count();
        for i in alive + queued..self.count {
            self.spawns.push(Spawn {
                kind: transient[i % transient.len()],
            });
        }
        if alive > self.count {
            let extra: Vec<u64> = self
                .creatures
                .iter()
                .filter(|c| !KINDS[c.kind].persistent)
                .take((alive - self.count).min(REMOVALS_PER_TICK))
                .map(|c| c.id)
                .collect();
            for id in extra {
                if let Err(error) = self.host.call(&RemoveNode { id }) {
                    log::debug!("removing creature {id}: {error}");
                }
                self.forget(id);
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
            });
        }
        Ok(())
    }

    fn forget(&mut self, id: u64) {
        self.ids.remove(&id);
        self.creatures.retain(|c| c.id != id);
    }

    /// Places up to [`SPAWNS_PER_TICK`] queued creatures on the surface of
    /// random columns of the area (one `GetVoxels` for all the columns).
    fn spawn_some(&mut self, dt: f64) -> Result<(), ModuleError> {
        self.spawn_backoff -= dt;
        if self.spawns.is_empty() || self.spawn_backoff > 0.0 {
            return Ok(());
        }
        let [_, h, _] = self.section_size.0;
        let top = (SURFACE_SECTIONS_Y[0] + 1) * h * geometry::CHUNK_SIZE - 1;
        let bottom = SURFACE_SECTIONS_Y[2] * h * geometry::CHUNK_SIZE;
        let tries = self.spawns.len().min(SPAWNS_PER_TICK);
        let columns: Vec<[i32; 2]> = (0..tries)
            .map(|_| {
                // Uniform in the disc.
                let r = self.radius * self.rng.unit().sqrt();
                let a = self.rng.range(0.0, std::f64::consts::TAU);
                [(r * a.sin()).floor() as i32, (r * a.cos()).floor() as i32]
            })
            .collect();
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
        let mut placed = 0;
        for (column, [x, z]) in voxels.chunks(height).zip(columns) {
            let Some(surface) = self.surface(column, top)? else {
                continue;
            };
            let Some(spawn) = self.spawns.pop() else {
                break;
            };
            let kind = &KINDS[spawn.kind];
            let position = [f64::from(x) + 0.5, f64::from(surface), f64::from(z) + 0.5];
            let id = self.host.call(&CreateNode {
                position,
                save_enabled: kind.persistent,
                vars: kind.vars(),
            })?;
            if kind.persistent {
                self.persistent_created = self.persistent_created.saturating_add(1);
                if let Err(error) = write_marker(&self.host.world_path(), self.persistent_created) {
                    log::error!("creatures: recording the persistent creatures made: {error}");
                }
            }
            let mut creature = Creature::new(id, spawn.kind, position, &mut self.rng);
            creature.state.on_ground = true;
            self.ids.insert(id);
            self.creatures.push(creature);
            placed += 1;
        }
        if placed < tries {
            // Water, or not generated: try other columns in a second.
            self.spawn_backoff = 1.0;
        }
        Ok(())
    }

    /// The y to stand at on a column read from `top` down: above its
    /// highest solid voxel, if air is there (not water) and the column is
    /// generated and does not reach the top.
    fn surface(&mut self, column: &[Option<u32>], top: i32) -> Result<Option<i32>, ModuleError> {
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
                let air = above.is_some_and(|v| VoxelInstance(v).type_id() == AIR);
                return Ok(air.then(|| top - depth as i32 + 1));
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
        let mut moves = Vec::new();
        let mut moved = 0;
        let mut retry = Vec::new();
        for (index, creature) in self.creatures.iter_mut().enumerate() {
            let kind = &KINDS[creature.kind];
            let [x, _, z] = creature.state.position;
            let home =
                (x.hypot(z) > self.radius).then(|| wander::heading_towards([x, z], [0.0, 0.0]));
            creature.brain.think(dt, home, &mut self.rng);
            let mut walk = creature.brain.walk(kind.speed);
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
             {waiting} waiting, {} to place",
            self.creatures.len(),
            kinds.join(", "),
            self.counters.moved_last_second,
            self.spawns.len()
        )
    }

    fn stash(&self) -> Kept {
        Kept {
            creatures: self
                .creatures
                .iter()
                .map(|c| (KINDS[c.kind].name.to_string(), c.clone()))
                .collect(),
            spawns: self
                .spawns
                .iter()
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
        self.spawns = kept
            .spawns
            .iter()
            .filter_map(|name| index(name).map(|kind| Spawn { kind }))
            .collect();
        self.rng = kept.rng;
        self.counters = kept.counters;
        self.prepared = kept.prepared;
        self.persistent_created = kept.persistent_created;
    }
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

impl Module for Creatures {
    fn create(host: Host) -> Result<Self, ModuleError> {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let radius: f64 = host.get_setting("creatures.radius", 24.0)?;
        if !(radius.is_finite() && (1.0..=512.0).contains(&radius)) {
            return Err(ModuleError::msg(format!(
                "setting creatures.radius: {radius} is not within 1..=512"
            )));
        }
        Ok(Self {
            count: host.get_setting("creatures.count", 16)?,
            persistent: host.get_setting("creatures.persistent", 8)?,
            radius,
            headless: host.get_config(config::HEADLESS).as_deref() == Some("1"),
            host,
            creatures: Vec::new(),
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
                })?;
                let sizes = self.host.call(&GetSizes {})?;
                self.section_size = SectionSize(sizes.section_size);
                self.refresh_registry()?;
                if let Some(kept) = self.host.take_stash::<Kept>()? {
                    self.restore(kept);
                    log::info!("creatures: resumed with {}", self.creatures.len());
                } else if !self.headless {
                    self.persistent_created = match read_marker(&self.host.world_path()) {
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
                for creature in &self.creatures {
                    if !KINDS[creature.kind].persistent
                        && let Err(error) = self.host.call(&RemoveNode { id: creature.id })
                    {
                        log::debug!("removing creature {}: {error}", creature.id);
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }
}

export_module!(Creatures);
