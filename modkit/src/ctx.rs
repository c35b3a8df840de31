//! What a mod's closures may do besides changing its state: the world's
//! voxels by block name, where the spawn and the ground are, chat to a
//! player or to everyone, the mod's settings, its ABMs and voxel timers
//! (the `active` module's), and who caused what is being handled.
//!
//! Owns: [`Ctx`] and its cache of the voxel registry (fetched when a name
//! or id is not in it). Does not own: the world (`voxelworld`'s calls),
//! the players (`main`'s player nodes, read with `ListNodes`), sending
//! (the `network` module, through `network:send_batches`), finding voxels
//! and keeping timers (`active`).

use buildat_active_api::{
    Abm, CancelTimers, GetTimers, RegisterAbm, RemoveAbm, SetTimers, VoxelTimer,
};
use buildat_interface::settings::Settings;
use buildat_interface::{Call, CallError, Host, ModuleError};
use buildat_main_api::{ChatLine, VAR_PEER, VAR_PLAYER};
use buildat_network_api::{OutgoingPacket, PeerId, SendBatch};
use buildat_voxel::geometry::Pos;
use buildat_voxel::{VoxelDefinition, VoxelInstance, VoxelRegistry};
use buildat_voxelworld_api::{
    EditOutcome, EditVoxel, GetGround, GetRegistry, GetSpawn, GetVoxel, Ground, ListNodes, Replace,
};

/// The context a mod's closures run in (see the [module docs](self)).
pub struct Ctx {
    host: Host,
    /// Who caused what is being handled (see [`Ctx::player`]).
    pub(crate) player: Option<String>,
    registry: Option<VoxelRegistry>,
    /// The ABMs the mod registered, by name: registered again when the
    /// `active` module is loaded after them (it may come later, or fresh).
    abms: Vec<Abm>,
}

impl Ctx {
    /// A context on `host` (what a module built on the receive table
    /// without the modkit, such as `lua`, uses for the same helpers).
    pub fn new(host: Host) -> Self {
        Self {
            host,
            player: None,
            registry: None,
            abms: Vec::new(),
        }
    }

    /// The module's host, for everything else (typed calls, events).
    pub fn host(&self) -> Host {
        self.host
    }

    /// The module's name (its folder's).
    pub fn module_name(&self) -> String {
        self.host.module_name()
    }

    /// The player who ran the command, or whose dig, place, punch or use
    /// is being handled; `None` for the console, the world or another
    /// module.
    pub fn player(&self) -> Option<&str> {
        self.player.as_deref()
    }

    /// The mod's settings `S` (declared with [`crate::Setup::settings`]).
    pub fn settings<S: Settings>(&self) -> Result<S, ModuleError> {
        Ok(S::read(&self.host)?)
    }

    /// Forgets the cached voxel registry (blocks were registered).
    pub fn forget_registry(&mut self) {
        self.registry = None;
    }

    fn registry(&mut self, refresh: bool) -> Result<&VoxelRegistry, ModuleError> {
        if refresh || self.registry.is_none() {
            let mut registry = self.host.call(&GetRegistry {})?;
            registry.reindex();
            self.registry = Some(registry);
        }
        Ok(self.registry.get_or_insert_default())
    }

    /// The voxel (type id) of the block `name` (`stone`, `torch`, or a
    /// segment's or rotation's canonical name); an error if the world has
    /// no such block.
    pub fn voxel_id(&mut self, name: &str) -> Result<u32, ModuleError> {
        if let Some(id) = self.registry(false)?.get_id(name) {
            return Ok(id);
        }
        self.registry(true)?
            .get_id(name)
            .ok_or_else(|| ModuleError::msg(format!("the world has no block named '{name}'")))
    }

    /// The name of a voxel's type (its game bits aside).
    pub fn voxel_name(&mut self, voxel: u32) -> Result<String, ModuleError> {
        let type_id = VoxelInstance(voxel).type_id();
        if let Some(name) = self.registry(false)?.get_name(type_id) {
            return Ok(name);
        }
        self.registry(true)?
            .get_name(type_id)
            .ok_or_else(|| ModuleError::msg(format!("the world has no voxel type {type_id}")))
    }

    /// The definition of a voxel's type (its game bits aside): solid,
    /// light, handler.
    pub fn voxel_definition(&mut self, voxel: u32) -> Result<VoxelDefinition, ModuleError> {
        let type_id = VoxelInstance(voxel).type_id();
        if let Some(definition) = self.registry(false)?.get(type_id) {
            return Ok(definition.clone());
        }
        self.registry(true)?
            .get(type_id)
            .cloned()
            .ok_or_else(|| ModuleError::msg(format!("the world has no voxel type {type_id}")))
    }

    /// The name of the voxel at `pos`; `None` where the world is not
    /// generated yet.
    pub fn get_voxel(&mut self, pos: Pos) -> Result<Option<String>, ModuleError> {
        match self.host.call(&GetVoxel { pos })? {
            Some(voxel) => self.voxel_name(voxel).map(Some),
            None => Ok(None),
        }
    }

    /// Sets the voxel at `pos` to the block `name` (saved with the world);
    /// whether it was set (`false`: its section is not generated yet).
    pub fn set_voxel(&mut self, pos: Pos, name: &str) -> Result<bool, ModuleError> {
        self.edit(pos, name, Replace::Any)
    }

    /// Puts the block `name` at `pos` only where there is air; whether it
    /// was put.
    pub fn place_voxel(&mut self, pos: Pos, name: &str) -> Result<bool, ModuleError> {
        self.edit(pos, name, Replace::OnlyAir)
    }

    fn edit(&mut self, pos: Pos, name: &str, replace: Replace) -> Result<bool, ModuleError> {
        let voxel = self.voxel_id(name)?;
        let outcome = self.host.call(&EditVoxel {
            pos,
            voxel,
            replace,
            save: true,
            by: buildat_voxelworld_api::by_module(&self.module_name()),
        })?;
        Ok(matches!(outcome, EditOutcome::Edited { .. }))
    }

    /// Where players spawn (on the ground at x = 0, z = 0); `None` while
    /// the world there is not generated yet (ask again in a moment).
    pub fn spawn_point(&mut self) -> Result<Option<[f64; 3]>, ModuleError> {
        self.host.call(&GetSpawn {})
    }

    /// The height of the ground (its highest solid voxel) at `x`, `z`:
    /// stand at `y + 1`. `None` while it is not generated (asked for: ask
    /// again in a moment) or where the column has no ground.
    pub fn ground_at(&mut self, x: i32, z: i32) -> Result<Option<i32>, ModuleError> {
        Ok(match self.host.call(&GetGround { x, z })? {
            Ground::Solid { y, .. } => Some(y),
            Ground::NoGround | Ground::NotGenerated => None,
        })
    }

    /// The players in the game: name and peer.
    pub fn players(&mut self) -> Result<Vec<(String, PeerId)>, ModuleError> {
        let nodes = self.host.call(&ListNodes {
            with_var: Some(VAR_PLAYER.to_string()),
        })?;
        Ok(nodes
            .into_iter()
            .filter_map(|node| {
                let name = String::from_utf8(node.vars.get(VAR_PLAYER)?.clone()).ok()?;
                let peer =
                    PeerId::from_le_bytes(node.vars.get(VAR_PEER)?.as_slice().try_into().ok()?);
                Some((name, peer))
            })
            .collect())
    }

    /// Tells the player `name` a line in chat; whether they are playing.
    pub fn tell(&mut self, name: &str, text: &str) -> Result<bool, ModuleError> {
        let peers: Vec<PeerId> = self
            .players()?
            .into_iter()
            .filter(|(player, _)| player.eq_ignore_ascii_case(name))
            .map(|(_, peer)| peer)
            .collect();
        self.send_chat(&peers, text)?;
        Ok(!peers.is_empty())
    }

    /// Tells every player a line in chat; how many.
    pub fn announce(&mut self, text: &str) -> Result<usize, ModuleError> {
        let peers: Vec<PeerId> = self.players()?.into_iter().map(|(_, peer)| peer).collect();
        self.send_chat(&peers, text)?;
        Ok(peers.len())
    }

    fn send_chat(&self, peers: &[PeerId], text: &str) -> Result<(), ModuleError> {
        let packet = OutgoingPacket::new(&ChatLine {
            text: text.to_string(),
        })?;
        let batches = peers
            .iter()
            .map(|&peer| SendBatch {
                peer,
                packets: vec![packet.clone()],
            })
            .collect();
        buildat_network_api::queue(&self.host, batches)
    }

    /// Makes `call` to the `active` module: `None` when it is not loaded
    /// (a world without active voxels; the mod goes on without them).
    fn call_active<C: Call>(&self, call: &C) -> Result<Option<C::Reply>, ModuleError> {
        match self.host.call(call) {
            Ok(reply) => Ok(Some(reply)),
            Err(ModuleError::Call(CallError::NotFound(_))) => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// Registers (or replaces) the ABM `name` of this module: every
    /// `interval_seconds`, the loaded voxels of the blocks (or
    /// `group:NAME`s) `nodes` near players, with a face neighbour in
    /// `neighbours` (empty: any), each with chance 1/`chance`, are handed
    /// in batches to the [`crate::Setup::on_abm`] closure of `name`.
    /// Whether it was registered (`false`: no `active` module loaded).
    pub fn register_abm(
        &mut self,
        name: &str,
        nodes: &[&str],
        neighbours: &[&str],
        interval_seconds: f64,
        chance: u32,
    ) -> Result<bool, ModuleError> {
        let names = |list: &[&str]| list.iter().map(|n| n.to_string()).collect();
        let abm = Abm {
            name: name.to_string(),
            module: self.module_name(),
            nodes: names(nodes),
            neighbours: names(neighbours),
            interval_seconds,
            chance,
        };
        self.abms.retain(|kept| kept.name != abm.name);
        self.abms.push(abm.clone());
        let registered = self.call_active(&RegisterAbm { abm })?.is_some();
        if !registered {
            self.host.log(
                buildat_interface::log::Level::Info,
                &format!("no active module: the ABM {name} is not registered"),
            );
        }
        Ok(registered)
    }

    /// Registers the mod's ABMs again (the `active` module was loaded).
    pub(crate) fn register_abms_again(&mut self) -> Result<(), ModuleError> {
        for abm in self.abms.clone() {
            self.call_active(&RegisterAbm { abm })?;
        }
        Ok(())
    }

    /// Removes this module's ABM `name`; whether there was one.
    pub fn remove_abm(&mut self, name: &str) -> Result<bool, ModuleError> {
        self.abms.retain(|kept| kept.name != name);
        let name = name.to_string();
        Ok(self.call_active(&RemoveAbm { name })?.unwrap_or(false))
    }

    /// Sets a timer on the voxel at `pos`: in `seconds` the
    /// [`crate::Setup::on_timer`] closure of `tag` runs, unless the voxel
    /// is replaced by another type first. It is kept with its section (an
    /// unloaded one fires when loaded again, late); one per position, a
    /// new one replaces it. Whether the `active` module took it (`false`:
    /// not loaded).
    pub fn set_timer(&mut self, pos: Pos, seconds: f64, tag: &str) -> Result<bool, ModuleError> {
        let timers = vec![VoxelTimer {
            pos,
            seconds,
            tag: tag.to_string(),
        }];
        let module = self.module_name();
        Ok(self.call_active(&SetTimers { module, timers })?.is_some())
    }

    /// Cancels this module's timers at `positions`; how many there were.
    pub fn cancel_timers(&mut self, positions: &[Pos]) -> Result<u32, ModuleError> {
        let module = self.module_name();
        let positions = positions.to_vec();
        Ok(self
            .call_active(&CancelTimers { module, positions })?
            .unwrap_or(0))
    }

    /// Seconds left of this module's timer at `pos` (`None`: none there,
    /// or its section is not in memory; negative: late).
    pub fn timer_left(&mut self, pos: Pos) -> Result<Option<f64>, ModuleError> {
        let module = self.module_name();
        let positions = vec![pos];
        let left = self.call_active(&GetTimers { module, positions })?;
        Ok(left.and_then(|left| left.into_iter().next().flatten()))
    }
}
