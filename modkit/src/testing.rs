//! A mod's unit tests without a server: a small world in memory answering
//! the calls the modkit makes (voxelworld's voxels, blocks, spawn, ground
//! and nodes; the core's settings declaration), on the interface's test
//! kit ([`TestHost`]).
//!
//! ```ignore
//! let world = TestWorld::new();
//! world.fill([-4, 0, -4], [4, 0, 4], "stone");
//! let mut m = world.load::<Bouncer>().unwrap();
//! world.place(&mut m, [0, 1, 0], "bouncer", Some("ann")).unwrap();
//! assert_eq!(world.voxel([0, 2, 0]).as_deref(), Some("torch"));
//! ```
//!
//! Owns: [`TestWorld`]: its voxels (air where none is set; every
//! position is generated), blocks (the stone, dirt, grass and torch of
//! the default game are there from the start), dynamic nodes, players and
//! the special-voxel events its edits cause, delivered as voxelworld would
//! (one event per round of edits, until no edit causes another), and a
//! player's punches and uses, delivered as the game would; light (full
//! sunlight where a test sets none); the `active` module's ABMs (run one
//! with [`TestWorld::run_abm`]: every match delivered, chance aside) and
//! voxel timers on a clock of its own ([`TestWorld::pass`]); the world's
//! values (`get_value`, `put_values`, `list_values`). Does not
//! own: the kit itself (`buildat_interface::testing`).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};

use buildat_active_api::{
    Abm, AbmBatch, CancelTimers, FiredTimer, GetTimers, RegisterAbm, RemoveAbm, SetTimers,
    TimersFired, abm_event, timers_event,
};
use buildat_interface::core_api::DeclareSettings;
use buildat_interface::testing::{TestHost, TestModule};
use buildat_interface::{Module, ModuleError, encode};
use buildat_main_api::{
    BlockAction, BlockActionKind, BlockActions, VAR_PEER, VAR_PLAYER, block_action_event,
};
use buildat_network_api::PeerId;
use buildat_voxel::geometry::{FACES, Pos};
use buildat_voxel::{AIR, BlockDefinition, BlockRegistry, VoxelInstance, VoxelRegistry};
use buildat_voxelworld_api::{
    CreateNode, CreateNodes, DynamicNode, EditOutcome, EditVoxel, EditVoxels, GetGround, GetLights,
    GetRegistry, GetSpawn, GetValue, GetVoxel, GetVoxels, Ground, ListNodes, ListValues,
    MemoryValues, MoveNodes, PutValues, RegisterBlock, RemoveNodes, Replace, SpecialCause,
    SpecialVoxel, SpecialVoxels, special_voxel_event,
};

use crate::{Mod, Modkit};

/// Rounds of edits causing edits a delivery follows at most.
const MAX_ROUNDS: usize = 100;

#[derive(Default)]
struct World {
    voxels: VoxelRegistry,
    blocks: BlockRegistry,
    map: HashMap<Pos, u32>,
    nodes: BTreeMap<u64, DynamicNode>,
    next_node: u64,
    spawn: Option<[f64; 3]>,
    /// Edits since the last delivery: position, before, after, by.
    pending: Vec<(Pos, u32, u32, Option<String>)>,
    edits: Vec<EditVoxel>,
    declared: Vec<DeclareSettings>,
    /// (sunlight, block light) where a test set it; full sunlight elsewhere.
    lights: HashMap<Pos, (u8, u8)>,
    abms: BTreeMap<String, Abm>,
    /// The world's values, by space and key.
    values: MemoryValues,
    /// By module and position: deadline on [`World::clock`], tag, the
    /// voxel type it is bound to.
    timers: BTreeMap<(String, Pos), (f64, String, u32)>,
    clock: f64,
}

impl World {
    fn get(&self, pos: Pos) -> u32 {
        self.map.get(&pos).copied().unwrap_or(AIR)
    }

    fn set(&mut self, pos: Pos, voxel: u32, by: Option<String>) {
        let before = self.get(pos);
        if before != voxel {
            self.map.insert(pos, voxel);
            self.pending.push((pos, before, voxel, by));
        }
    }

    fn edit(&mut self, edit: EditVoxel) -> EditOutcome {
        let current = self.get(edit.pos);
        let is_air = VoxelInstance(current).type_id() == AIR;
        let allowed = match edit.replace {
            Replace::Any => true,
            Replace::OnlyAir => is_air,
            Replace::NotAir => !is_air,
            Replace::Exactly(voxel) => current == voxel,
        };
        self.edits.push(edit.clone());
        if !allowed {
            return EditOutcome::Refused { current };
        }
        // As voxelworld: a module's own edit is told as no player's.
        let by = buildat_voxelworld_api::get_player_of(edit.by.as_deref()).map(str::to_string);
        self.set(edit.pos, edit.voxel, by);
        EditOutcome::Edited { previous: current }
    }

    fn handler(&self, voxel: u32) -> Option<&str> {
        self.voxels
            .get(VoxelInstance(voxel).type_id())
            .map(|d| d.handler_module.as_str())
            .filter(|m| !m.is_empty())
    }

    /// What `module` is told of the pending edits (voxelworld's rule).
    fn take_told(&mut self, module: &str) -> Vec<SpecialVoxel> {
        let mut told = Vec::new();
        for (pos, before, after, by) in std::mem::take(&mut self.pending) {
            if VoxelInstance(before).type_id() != VoxelInstance(after).type_id() {
                let special = |cause| SpecialVoxel {
                    pos,
                    voxel: after,
                    previous: before,
                    cause,
                    by: by.clone(),
                };
                if self.handler(before) == Some(module) {
                    told.push(special(SpecialCause::Dug));
                }
                if self.handler(after) == Some(module) {
                    told.push(special(SpecialCause::Placed));
                }
            }
            for face in FACES {
                let at = [pos[0] + face[0], pos[1] + face[1], pos[2] + face[2]];
                let voxel = self.get(at);
                if self.handler(voxel) == Some(module) {
                    told.push(SpecialVoxel {
                        pos: at,
                        voxel,
                        previous: voxel,
                        cause: SpecialCause::NeighbourChanged {
                            neighbour: pos,
                            was: before,
                            now: after,
                        },
                        by: by.clone(),
                    });
                }
            }
        }
        told
    }

    /// The block name of a voxel (`None`: not registered).
    fn block_name(&self, voxel: u32) -> Option<&str> {
        self.voxels
            .get(VoxelInstance(voxel).type_id())
            .map(|d| d.name.block_name.as_str())
    }

    /// Every voxel the ABM matches (sorted by position), chance aside.
    fn matches(&self, abm: &Abm) -> Result<Vec<(Pos, u32)>, ModuleError> {
        if let Some(group) = abm
            .nodes
            .iter()
            .chain(&abm.neighbours)
            .find(|n| n.starts_with("group:"))
        {
            return Err(ModuleError::msg(format!(
                "the test world matches block names, not groups ({group})"
            )));
        }
        let named = |voxel: u32, names: &[String]| {
            self.block_name(voxel)
                .is_some_and(|name| names.iter().any(|n| n == name))
        };
        let mut found: Vec<(Pos, u32)> = self
            .map
            .iter()
            .filter(|(_, voxel)| named(**voxel, &abm.nodes))
            .filter(|(pos, _)| {
                abm.neighbours.is_empty()
                    || FACES.iter().any(|face| {
                        let at = [pos[0] + face[0], pos[1] + face[1], pos[2] + face[2]];
                        named(self.get(at), &abm.neighbours)
                    })
            })
            .map(|(pos, voxel)| (*pos, *voxel))
            .collect();
        found.sort();
        Ok(found)
    }

    fn ground(&self, x: i32, z: i32) -> Ground {
        let solid = |voxel: u32| {
            self.voxels
                .get(VoxelInstance(voxel).type_id())
                .is_some_and(|d| d.physically_solid)
        };
        self.map
            .iter()
            .filter(|(pos, voxel)| pos[0] == x && pos[2] == z && solid(**voxel))
            .map(|(pos, _)| pos[1])
            .max()
            .map_or(Ground::NoGround, |y| Ground::Solid {
                y,
                above: self.get([x, y + 1, z]),
            })
    }

    fn create(&mut self, node: CreateNode) -> u64 {
        self.next_node += 1;
        let id = self.next_node;
        self.nodes.insert(
            id,
            DynamicNode::at_rest(id, node.position, node.save_enabled, node.vars),
        );
        id
    }
}

/// A world in memory for a mod's tests (see the [module docs](self)).
/// Cheap to clone: clones share the world.
#[derive(Clone)]
pub struct TestWorld {
    kit: TestHost,
    world: Arc<Mutex<World>>,
}

impl Default for TestWorld {
    fn default() -> Self {
        Self::new()
    }
}

fn lock(world: &Mutex<World>) -> MutexGuard<'_, World> {
    world.lock().unwrap_or_else(|p| p.into_inner())
}

impl TestWorld {
    /// A world with the default game's `stone`, `dirt`, `grass` and
    /// `torch`, no voxel set (air), spawn at `[0.5, 1.0, 0.5]`, on a kit
    /// whose module is named `test`.
    pub fn new() -> Self {
        Self::on(TestHost::new())
    }

    /// The world on `kit` (configured by the test: settings, a name).
    pub fn on(kit: TestHost) -> Self {
        let mut world = World {
            spawn: Some([0.5, 1.0, 0.5]),
            ..World::default()
        };
        for name in ["stone", "dirt", "grass", "torch"] {
            let World { voxels, blocks, .. } = &mut world;
            blocks
                .add(
                    BlockDefinition::simple(name, &format!("{name}.png")),
                    voxels,
                )
                .expect("the default blocks register");
        }
        let world = Arc::new(Mutex::new(world));
        let this = Self { kit, world };
        this.answer_calls();
        this
    }

    fn answer_calls(&self) {
        let w = || Arc::clone(&self.world);
        let world = w();
        self.kit.answer(move |declared: DeclareSettings| {
            lock(&world).declared.push(declared);
            Ok(())
        });
        let world = w();
        self.kit.answer(move |register: RegisterBlock| {
            let World { voxels, blocks, .. } = &mut *lock(&world);
            blocks
                .add(register.block, voxels)
                .map_err(|e| ModuleError::msg(e.to_string()))
        });
        let world = w();
        self.kit
            .answer(move |_: GetRegistry| Ok(lock(&world).voxels.clone()));
        let world = w();
        self.kit
            .answer(move |get: GetVoxel| Ok(Some(lock(&world).get(get.pos))));
        let world = w();
        self.kit
            .answer(move |edit: EditVoxel| Ok(lock(&world).edit(edit)));
        let world = w();
        self.kit.answer(move |edits: EditVoxels| {
            let mut world = lock(&world);
            Ok(edits.edits.into_iter().map(|e| world.edit(e)).collect())
        });
        let world = w();
        self.kit.answer(move |get: GetVoxels| {
            let world = lock(&world);
            Ok(get.positions.iter().map(|&p| Some(world.get(p))).collect())
        });
        let world = w();
        self.kit.answer(move |get: GetLights| {
            let world = lock(&world);
            Ok(get
                .positions
                .iter()
                .map(|p| Some(world.lights.get(p).copied().unwrap_or((15, 0))))
                .collect())
        });
        let world = w();
        self.kit.answer(move |register: RegisterAbm| {
            lock(&world)
                .abms
                .insert(register.abm.name.clone(), register.abm);
            Ok(())
        });
        let world = w();
        self.kit
            .answer(move |remove: RemoveAbm| Ok(lock(&world).abms.remove(&remove.name).is_some()));
        let world = w();
        self.kit.answer(move |set: SetTimers| {
            let mut world = lock(&world);
            for timer in set.timers {
                let bound = VoxelInstance(world.get(timer.pos)).type_id();
                let deadline = world.clock + timer.seconds;
                world.timers.insert(
                    (set.module.clone(), timer.pos),
                    (deadline, timer.tag, bound),
                );
            }
            Ok(())
        });
        let world = w();
        self.kit.answer(move |cancel: CancelTimers| {
            let mut world = lock(&world);
            let cancelled = cancel
                .positions
                .iter()
                .filter(|&&pos| world.timers.remove(&(cancel.module.clone(), pos)).is_some())
                .count();
            Ok(cancelled as u32)
        });
        let world = w();
        self.kit.answer(move |get: GetTimers| {
            let world = lock(&world);
            Ok(get
                .positions
                .iter()
                .map(|&pos| {
                    let (deadline, _, _) = world.timers.get(&(get.module.clone(), pos))?;
                    Some(deadline - world.clock)
                })
                .collect())
        });
        let world = w();
        self.kit
            .answer(move |get: GetValue| Ok(lock(&world).values.answer_get(&get)));
        let world = w();
        self.kit
            .answer(move |put: PutValues| Ok(lock(&world).values.answer_put(&put.writes)));
        let world = w();
        self.kit
            .answer(move |list: ListValues| Ok(lock(&world).values.answer_list(&list)));
        let world = w();
        self.kit.answer(move |_: GetSpawn| Ok(lock(&world).spawn));
        let world = w();
        self.kit
            .answer(move |get: GetGround| Ok(lock(&world).ground(get.x, get.z)));
        let world = w();
        self.kit.answer(move |create: CreateNodes| {
            let mut world = lock(&world);
            Ok(create
                .nodes
                .into_iter()
                .map(|node| Some(world.create(node)))
                .collect())
        });
        let world = w();
        self.kit.answer(move |moves: MoveNodes| {
            let mut world = lock(&world);
            let mut lost = Vec::new();
            for motion in moves.moves {
                match world.nodes.get_mut(&motion.id) {
                    Some(node) => {
                        node.position = motion.position;
                        node.orientation = motion.orientation;
                        node.velocity = motion.velocity;
                    }
                    None => lost.push(motion.id),
                }
            }
            Ok(lost)
        });
        let world = w();
        self.kit.answer(move |remove: RemoveNodes| {
            let mut world = lock(&world);
            Ok(remove
                .ids
                .into_iter()
                .filter(|id| world.nodes.remove(id).is_none())
                .collect())
        });
        let world = w();
        self.kit.answer(move |list: ListNodes| {
            let world = lock(&world);
            Ok(world
                .nodes
                .values()
                .filter(|n| list.includes(n))
                .cloned()
                .collect())
        });
    }

    /// The kit the world answers on (its records: calls, logs, commands).
    pub fn kit(&self) -> &TestHost {
        &self.kit
    }

    /// Loads the mod `M` on the kit (create, table, init, `core:start`).
    pub fn load<M: Mod>(&self) -> Result<TestModule<Modkit<M>>, ModuleError> {
        self.load_module::<Modkit<M>>()
    }

    /// Loads any module `T` on the kit (a module written on the receive
    /// table without the modkit, such as `lua`), as [`TestWorld::load`].
    pub fn load_module<T: Module>(&self) -> Result<TestModule<T>, ModuleError> {
        let mut module = self.kit.load::<T>()?;
        self.deliver(&mut module)?;
        Ok(module)
    }

    /// The voxel id of the block `name`.
    pub fn id(&self, name: &str) -> u32 {
        lock(&self.world)
            .voxels
            .get_id(name)
            .unwrap_or_else(|| panic!("the test world has no block named '{name}'"))
    }

    /// The name of the block at `pos` (`air` where none is set).
    pub fn voxel(&self, pos: Pos) -> Option<String> {
        let world = lock(&self.world);
        world
            .voxels
            .get_name(VoxelInstance(world.get(pos)).type_id())
    }

    /// Sets voxels without telling anyone (the terrain a test starts on).
    pub fn fill(&self, from: Pos, to: Pos, name: &str) {
        let voxel = self.id(name);
        let mut world = lock(&self.world);
        for x in from[0]..=to[0] {
            for y in from[1]..=to[1] {
                for z in from[2]..=to[2] {
                    world.map.insert([x, y, z], voxel);
                }
            }
        }
    }

    /// Where players spawn (`None`: not generated yet).
    pub fn set_spawn(&self, spawn: Option<[f64; 3]>) {
        lock(&self.world).spawn = spawn;
    }

    /// `by` puts the block `name` at `pos`, as a player's place through
    /// the game: the module is told what voxelworld would tell it, and
    /// what its own edits cause in turn.
    pub fn place<T: Module>(
        &self,
        module: &mut TestModule<T>,
        pos: Pos,
        name: &str,
        by: Option<&str>,
    ) -> Result<(), ModuleError> {
        let voxel = self.id(name);
        lock(&self.world).set(pos, voxel, by.map(str::to_string));
        self.deliver(module)
    }

    /// `by` digs the voxel at `pos` (air there), as [`TestWorld::place`].
    pub fn dig<T: Module>(
        &self,
        module: &mut TestModule<T>,
        pos: Pos,
        by: Option<&str>,
    ) -> Result<(), ModuleError> {
        lock(&self.world).set(pos, AIR, by.map(str::to_string));
        self.deliver(module)
    }

    /// The player `by` punches the voxel at `pos`, as a `main:punch` the
    /// game judged: the module is told (`main:block_action/<module>`) if
    /// the voxel's block is its own, then what its closures' edits cause.
    pub fn punch<T: Module>(
        &self,
        module: &mut TestModule<T>,
        pos: Pos,
        by: &str,
    ) -> Result<(), ModuleError> {
        self.act(module, pos, by, BlockActionKind::Punch)
    }

    /// The player `by` uses the voxel at `pos` (`main:use`), as
    /// [`TestWorld::punch`].
    pub fn use_block<T: Module>(
        &self,
        module: &mut TestModule<T>,
        pos: Pos,
        by: &str,
    ) -> Result<(), ModuleError> {
        self.act(module, pos, by, BlockActionKind::Use)
    }

    fn act<T: Module>(
        &self,
        module: &mut TestModule<T>,
        pos: Pos,
        by: &str,
        kind: BlockActionKind,
    ) -> Result<(), ModuleError> {
        let name = self.kit.host().module_name();
        let event = block_action_event(&name);
        let voxel = {
            let world = lock(&self.world);
            let voxel = world.get(pos);
            (world.handler(voxel) == Some(name.as_str())).then_some(voxel)
        };
        if let Some(voxel) = voxel
            && self.kit.subscriptions().contains(&event)
        {
            let action = BlockAction {
                pos,
                voxel,
                player: by.to_string(),
                item: None,
                kind,
            };
            let told = BlockActions {
                actions: vec![action],
            };
            module.emit_raw(&event, &encode(&told)?)?;
        }
        self.deliver(module)
    }

    /// Tells the module what the edits since the last delivery did to its
    /// voxels, round after round, until its handlers edit nothing more.
    pub fn deliver<T: Module>(&self, module: &mut TestModule<T>) -> Result<(), ModuleError> {
        let name = self.kit.host().module_name();
        let event = special_voxel_event(&name);
        for _ in 0..MAX_ROUNDS {
            let voxels = lock(&self.world).take_told(&name);
            if voxels.is_empty() {
                return Ok(());
            }
            if !self.kit.subscriptions().contains(&event) {
                continue;
            }
            module.emit_raw(&event, &encode(&SpecialVoxels { voxels })?)?;
        }
        Err(ModuleError::msg(format!(
            "the module's edits kept causing edits ({MAX_ROUNDS} rounds)"
        )))
    }

    /// Every edit made through voxelworld's calls (the module's), in order.
    pub fn edits(&self) -> Vec<EditVoxel> {
        lock(&self.world).edits.clone()
    }

    /// A player `name` on `peer` (a player node, as the game makes one).
    pub fn join(&self, name: &str, peer: PeerId) {
        let vars = BTreeMap::from([
            (VAR_PLAYER.to_string(), name.as_bytes().to_vec()),
            (VAR_PEER.to_string(), peer.to_le_bytes().to_vec()),
        ]);
        lock(&self.world).create(CreateNode {
            position: [0.5, 1.0, 0.5],
            save_enabled: false,
            vars,
        });
    }

    /// Every dynamic node (players' and the module's).
    pub fn nodes(&self) -> Vec<DynamicNode> {
        lock(&self.world).nodes.values().cloned().collect()
    }

    /// Forgets the node `id` (its section unloaded).
    pub fn lose_node(&self, id: u64) {
        lock(&self.world).nodes.remove(&id);
    }

    /// Sets the light (sunlight, block light; each 0..=15) from `from` to
    /// `to`; where none is set it is full sunlight, `(15, 0)`.
    pub fn set_light(&self, from: Pos, to: Pos, light: (u8, u8)) {
        let mut world = lock(&self.world);
        for x in from[0]..=to[0] {
            for y in from[1]..=to[1] {
                for z in from[2]..=to[2] {
                    world.lights.insert([x, y, z], light);
                }
            }
        }
    }

    /// The ABMs registered (with the `active` module's call), by name.
    pub fn abms(&self) -> Vec<Abm> {
        lock(&self.world).abms.values().cloned().collect()
    }

    /// Runs the registered ABM `name` once over the whole world, as the
    /// `active` module would over the voxels near players: every voxel it
    /// matches (by block name; chance aside, so a test is exact) in one
    /// batch to its module, then what the module's edits cause. How many
    /// voxels were delivered.
    pub fn run_abm<T: Module>(
        &self,
        module: &mut TestModule<T>,
        name: &str,
    ) -> Result<usize, ModuleError> {
        let (abm, voxels) = {
            let world = lock(&self.world);
            let abm =
                world.abms.get(name).cloned().ok_or_else(|| {
                    ModuleError::msg(format!("no ABM named {name} is registered"))
                })?;
            let voxels = world.matches(&abm)?;
            (abm, voxels)
        };
        let count = voxels.len();
        let event = abm_event(&abm.module);
        if !voxels.is_empty() && self.kit.subscriptions().contains(&event) {
            let batch = AbmBatch {
                name: abm.name,
                voxels,
            };
            module.emit_raw(&event, &encode(&batch)?)?;
        }
        self.deliver(module)?;
        Ok(count)
    }

    /// The module `module`'s timers: position, tag and seconds left.
    pub fn timers(&self, module: &str) -> Vec<(Pos, String, f64)> {
        let world = lock(&self.world);
        world
            .timers
            .iter()
            .filter(|((owner, _), _)| owner == module)
            .map(|((_, pos), (deadline, tag, _))| (*pos, tag.clone(), deadline - world.clock))
            .collect()
    }

    /// Lets `seconds` pass on the timers' clock: the module's timers due
    /// fire (once, in one event, with how late), those whose voxel was
    /// replaced by another type are dropped unfired; then what the
    /// module's edits cause. How many fired.
    pub fn pass<T: Module>(
        &self,
        module: &mut TestModule<T>,
        seconds: f64,
    ) -> Result<usize, ModuleError> {
        let name = self.kit.host().module_name();
        let fired = {
            let mut world = lock(&self.world);
            world.clock += seconds;
            let now = world.clock;
            let due: Vec<(String, Pos)> = world
                .timers
                .iter()
                .filter(|((owner, _), (deadline, _, _))| *owner == name && *deadline <= now)
                .map(|(key, _)| key.clone())
                .collect();
            let mut fired = Vec::new();
            for key in due {
                let Some((deadline, tag, bound)) = world.timers.remove(&key) else {
                    continue;
                };
                let voxel = world.get(key.1);
                if VoxelInstance(voxel).type_id() == bound {
                    fired.push(FiredTimer {
                        pos: key.1,
                        tag,
                        voxel,
                        late_seconds: now - deadline,
                    });
                }
            }
            fired
        };
        let count = fired.len();
        let event = timers_event(&name);
        if !fired.is_empty() && self.kit.subscriptions().contains(&event) {
            module.emit_raw(&event, &encode(&TimersFired { timers: fired })?)?;
        }
        self.deliver(module)?;
        Ok(count)
    }

    /// The world's value at `space`/`key` (what the module kept there).
    pub fn value(&self, space: &str, key: &str) -> Option<Vec<u8>> {
        let key = (space.to_string(), key.to_string());
        lock(&self.world).values.get(&key).cloned()
    }

    /// The settings declarations the module made.
    pub fn declared(&self) -> Vec<DeclareSettings> {
        lock(&self.world).declared.clone()
    }
}
