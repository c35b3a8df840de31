//! What a mod declares in [`crate::Mod::setup`]: commands, blocks, kinds
//! of entity, settings, and closures for start, each tick and any event.
//!
//! Owns: [`Setup`] and its builders ([`BlockSetup`], [`EntitySetup`]), and
//! splitting the declarations into the parts the receive table's handlers
//! own ([`Parts`]); what runs on `core:start` and `core:continue`
//! ([`StartPlan`]: settings declared, commands and blocks registered).
//! Does not own: when the parts run (`lib.rs`, the table).

use std::collections::HashMap;

use buildat_active_api::FiredTimer;
use buildat_interface::clap;
use buildat_interface::core_api::RegisterCommand;
use buildat_interface::events::Event;
use buildat_interface::settings::Settings;
use buildat_interface::{Host, ModuleError};
use buildat_voxel::geometry::Pos;
use buildat_voxel::{BlockDefinition, VoxelInstance};
use buildat_voxelworld_api::RegisterBlock;
use serde::de::DeserializeOwned;

use crate::{Ctx, Entity, Mod, Modkit};

pub(crate) type CommandFn<M> =
    Box<dyn FnMut(&mut M, &mut Ctx, &[String]) -> Result<String, ModuleError>>;
pub(crate) type VoxelFn<M> = Box<dyn FnMut(&mut M, &mut Ctx, Pos) -> Result<(), ModuleError>>;
pub(crate) type StepFn<M> =
    Box<dyn FnMut(&mut M, &mut Ctx, &mut Entity, f64) -> Result<(), ModuleError>>;
pub(crate) type PlaceFn<M> =
    Box<dyn FnMut(&mut M, &mut Ctx) -> Result<Option<[f64; 3]>, ModuleError>>;
pub(crate) type TickFn<M> = Box<dyn FnMut(&mut M, &mut Ctx, f64) -> Result<(), ModuleError>>;
/// An event's closure on its payload's bytes (decoded inside: a payload
/// that does not decode is [`ModuleError::Malformed`]).
pub(crate) type EventFn<M> = Box<dyn FnMut(&mut M, &mut Ctx, &[u8]) -> Result<(), ModuleError>>;
/// An ABM's closure on one batch of the voxels it found.
pub(crate) type AbmFn<M> =
    Box<dyn FnMut(&mut M, &mut Ctx, &[(Pos, u32)]) -> Result<(), ModuleError>>;
/// A timer tag's closure on one fired timer.
pub(crate) type TimerFn<M> =
    Box<dyn FnMut(&mut M, &mut Ctx, FiredTimer) -> Result<(), ModuleError>>;
type StartFn<M> = Box<dyn FnMut(&mut M, &mut Ctx) -> Result<(), ModuleError>>;
type DeclareFn = fn(&Host) -> Result<(), ModuleError>;

/// A chat or console command.
pub(crate) struct Command<M> {
    pub register: RegisterCommand,
    pub run: CommandFn<M>,
}

/// A block and what it does.
pub(crate) struct Block<M> {
    pub definition: BlockDefinition,
    pub on_place: Option<VoxelFn<M>>,
    pub on_dig: Option<VoxelFn<M>>,
    pub on_touch: Option<VoxelFn<M>>,
    pub on_punch: Option<VoxelFn<M>>,
    pub on_use: Option<VoxelFn<M>>,
}

/// What happened to one of a block's voxels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Happened {
    Placed,
    Dug,
    /// A neighbour changed.
    Touched,
    Punched,
    Used,
}

impl Happened {
    pub fn word(self) -> &'static str {
        match self {
            Self::Placed => "placed",
            Self::Dug => "dug",
            Self::Touched => "touched",
            Self::Punched => "punched",
            Self::Used => "used",
        }
    }
}

impl<M> Block<M> {
    /// Whether a punch or a use of it runs a closure.
    pub fn takes_actions(&self) -> bool {
        self.on_punch.is_some() || self.on_use.is_some()
    }

    /// Where the closure for what happened goes.
    fn slot(&mut self, happened: Happened) -> &mut Option<VoxelFn<M>> {
        match happened {
            Happened::Placed => &mut self.on_place,
            Happened::Dug => &mut self.on_dig,
            Happened::Touched => &mut self.on_touch,
            Happened::Punched => &mut self.on_punch,
            Happened::Used => &mut self.on_use,
        }
    }

    /// The closure for what happened, if it has one.
    pub fn closure(&mut self, happened: Happened) -> Option<&mut VoxelFn<M>> {
        self.slot(happened).as_mut()
    }
}

/// A kind of entity.
pub(crate) struct Kind<M> {
    pub name: String,
    pub step: StepFn<M>,
    /// How many the modkit keeps in the world.
    pub keep: usize,
    /// Where a new one goes (`None`: the world's spawn point).
    pub place: Option<PlaceFn<M>>,
    pub colour: [u8; 3],
    pub size: [f32; 3],
}

/// What a mod declares (see [`crate::Mod::setup`]).
pub struct Setup<M> {
    commands: Vec<Command<M>>,
    blocks: Vec<Block<M>>,
    kinds: Vec<Kind<M>>,
    ticks: Vec<TickFn<M>>,
    starts: Vec<StartFn<M>>,
    declares: Vec<DeclareFn>,
    events: Vec<(String, EventFn<M>)>,
    abms: HashMap<String, AbmFn<M>>,
    timers: HashMap<String, TimerFn<M>>,
}

impl<M: Mod> Setup<M> {
    pub(crate) fn new() -> Self {
        Self {
            commands: Vec::new(),
            blocks: Vec::new(),
            kinds: Vec::new(),
            ticks: Vec::new(),
            events: Vec::new(),
            abms: HashMap::new(),
            timers: HashMap::new(),
            starts: Vec::new(),
            declares: Vec::new(),
        }
    }

    /// A command `name` for the console, and with `privilege` for players
    /// holding it in chat as `/name ...` too. `run` gets the words after
    /// the name and answers the reply; [`Ctx::player`] says who ran it
    /// (`None`: the console).
    pub fn command(
        &mut self,
        name: &str,
        help: &str,
        privilege: Option<&str>,
        run: impl FnMut(&mut M, &mut Ctx, &[String]) -> Result<String, ModuleError> + 'static,
    ) -> &mut Self {
        assert!(
            self.commands.iter().all(|c| c.register.name != name),
            "the mod declares the command '{name}' twice"
        );
        self.commands.push(Command {
            register: RegisterCommand {
                name: name.to_string(),
                usage: String::new(),
                help: help.to_string(),
                privilege: privilege.map(str::to_string),
            },
            run: Box::new(run),
        });
        self
    }

    /// A command whose arguments `A` parses (`#[derive(clap::Parser)]` with
    /// `#[command(name = "...", about = "...")]`: its name, usage and help
    /// come from there); otherwise as [`Setup::command`]. Words that do not
    /// parse are answered with clap's message and usage.
    pub fn command_args<A: clap::Parser + 'static>(
        &mut self,
        privilege: Option<&str>,
        mut run: impl FnMut(&mut M, &mut Ctx, A) -> Result<String, ModuleError> + 'static,
    ) -> &mut Self {
        let definition = A::command();
        let name = definition.get_name().to_string();
        let help = definition
            .get_about()
            .map(|about| about.to_string())
            .unwrap_or_default();
        let usage = buildat_interface::receive::usage_of(&definition);
        let word = name.clone();
        self.command(&name, &help, privilege, move |m, ctx, words| {
            let parsed = A::try_parse_from(
                std::iter::once(word.as_str()).chain(words.iter().map(String::as_str)),
            );
            match parsed {
                Ok(args) => run(m, ctx, args),
                Err(error) if !error.use_stderr() => Ok(error.render().to_string()),
                Err(error) => Err(ModuleError::Usage(error.render().to_string())),
            }
        });
        if let Some(command) = self.commands.last_mut() {
            command.register.usage = usage;
        }
        self
    }

    /// A block, registered with the world on start with this module as its
    /// handler; its `on_place`, `on_dig` and `on_touch` closures run when
    /// one of its voxels is placed, dug, or a neighbour of one changes, its
    /// `on_punch` and `on_use` when a player punches or uses one.
    pub fn block(&mut self, definition: BlockDefinition) -> BlockSetup<'_, M> {
        assert!(
            self.blocks
                .iter()
                .all(|b| b.definition.name != definition.name),
            "the mod declares the block '{}' twice",
            definition.name
        );
        self.blocks.push(Block {
            definition,
            on_place: None,
            on_dig: None,
            on_touch: None,
            on_punch: None,
            on_use: None,
        });
        let block = self.blocks.last_mut().expect("just pushed");
        BlockSetup { block }
    }

    /// A kind of entity: `step` moves each one every tick (set
    /// [`Entity::position`]; its age and the seconds since the last tick
    /// are given). The modkit keeps one in the world (see
    /// [`EntitySetup::keep`]), made at the world's spawn point unless
    /// [`EntitySetup::place`] says where.
    pub fn entity<R>(
        &mut self,
        name: &str,
        mut step: impl FnMut(&mut M, &mut Ctx, &mut Entity, f64) -> Result<R, ModuleError> + 'static,
    ) -> EntitySetup<'_, M> {
        assert!(
            self.kinds.iter().all(|k| k.name != name),
            "the mod declares the entity '{name}' twice"
        );
        self.kinds.push(Kind {
            name: name.to_string(),
            step: Box::new(move |m, ctx, entity, dtime| step(m, ctx, entity, dtime).map(drop)),
            keep: 1,
            place: None,
            colour: [200, 60, 60],
            size: [0.6, 0.6, 0.6],
        });
        let kind = self.kinds.last_mut().expect("just pushed");
        EntitySetup { kind }
    }

    /// Declares the settings `S` (`settings!`): checked on start (a value
    /// that does not parse fails the load, naming it) and listed by
    /// `buildat-server settings`; read them with [`Ctx::settings`].
    pub fn settings<S: Settings>(&mut self) -> &mut Self {
        self.declares.push(|host| {
            S::read(host)?;
            S::declare(host)
        });
        self
    }

    /// Runs on every start (`core:start`, and `core:continue` after a
    /// reload), after the commands and blocks are registered.
    pub fn on_start<R>(
        &mut self,
        mut run: impl FnMut(&mut M, &mut Ctx) -> Result<R, ModuleError> + 'static,
    ) -> &mut Self {
        self.starts
            .push(Box::new(move |m, ctx| run(m, ctx).map(drop)));
        self
    }

    /// Runs every tick with the seconds since the last one.
    pub fn on_tick<R>(
        &mut self,
        mut run: impl FnMut(&mut M, &mut Ctx, f64) -> Result<R, ModuleError> + 'static,
    ) -> &mut Self {
        self.ticks
            .push(Box::new(move |m, ctx, dtime| run(m, ctx, dtime).map(drop)));
        self
    }

    /// Runs on every event `E` (`E::NAME`, subscribed for the mod), with
    /// the event decoded. An event the modkit itself handles for the mod
    /// (`core:start`, `core:continue`, `core:tick` when it has entities or
    /// `on_tick`, its blocks' and active voxels' events) cannot be taken
    /// twice: the load fails naming it.
    pub fn on_event<E: Event, R>(
        &mut self,
        run: impl FnMut(&mut M, &mut Ctx, E) -> Result<R, ModuleError> + 'static,
    ) -> &mut Self {
        self.on_event_named(E::NAME, run)
    }

    /// Runs on every event named `name` (known at run time: another
    /// module's `NAME/<module>` events), its payload decoded as `T`; as
    /// [`Setup::on_event`].
    pub fn on_event_named<T: DeserializeOwned, R>(
        &mut self,
        name: &str,
        mut run: impl FnMut(&mut M, &mut Ctx, T) -> Result<R, ModuleError> + 'static,
    ) -> &mut Self {
        let what = format!("event {name}");
        self.on_event_raw(name, move |m, ctx, bytes| {
            let value =
                buildat_interface::decode(bytes).map_err(|error| ModuleError::Malformed {
                    what: what.clone(),
                    error,
                })?;
            run(m, ctx, value).map(drop)
        })
    }

    /// Runs on every event named `name` with its payload undecoded; as
    /// [`Setup::on_event`].
    pub fn on_event_raw<R>(
        &mut self,
        name: &str,
        mut run: impl FnMut(&mut M, &mut Ctx, &[u8]) -> Result<R, ModuleError> + 'static,
    ) -> &mut Self {
        assert!(
            self.events.iter().all(|(taken, _)| taken != name),
            "the mod takes the event '{name}' twice"
        );
        self.events.push((
            name.to_string(),
            Box::new(move |m, ctx, bytes| run(m, ctx, bytes).map(drop)),
        ));
        self
    }

    /// Runs on each batch of the voxels the ABM `name` found (the `active`
    /// module's `active:abm/<module>`: position and voxel, game bits
    /// included). Register the ABM itself with [`Ctx::register_abm`] (in
    /// [`Setup::on_start`], where settings can tune it). Each batch is what
    /// one tick found: handle it with one `GetVoxels` or `EditVoxels`
    /// where there are many.
    pub fn on_abm<R>(
        &mut self,
        name: &str,
        mut run: impl FnMut(&mut M, &mut Ctx, &[(Pos, u32)]) -> Result<R, ModuleError> + 'static,
    ) -> &mut Self {
        assert!(
            !self.abms.contains_key(name),
            "the mod handles the ABM '{name}' twice"
        );
        self.abms.insert(
            name.to_string(),
            Box::new(move |m, ctx, voxels| run(m, ctx, voxels).map(drop)),
        );
        self
    }

    /// Runs for each of the mod's voxel timers tagged `tag` that fires
    /// (set with [`Ctx::set_timer`]; `active:timers/<module>`): its
    /// position, the voxel there (the type it was set on) and how late it
    /// fired.
    pub fn on_timer<R>(
        &mut self,
        tag: &str,
        mut run: impl FnMut(&mut M, &mut Ctx, FiredTimer) -> Result<R, ModuleError> + 'static,
    ) -> &mut Self {
        assert!(
            !self.timers.contains_key(tag),
            "the mod handles the timer tag '{tag}' twice"
        );
        self.timers.insert(
            tag.to_string(),
            Box::new(move |m, ctx, timer| run(m, ctx, timer).map(drop)),
        );
        self
    }

    /// The declarations split for the handlers that own them.
    pub(crate) fn into_parts(self, module: &str) -> Parts<M> {
        let start = StartPlan {
            declares: self.declares,
            commands: self.commands.iter().map(|c| c.register.clone()).collect(),
            blocks: self
                .blocks
                .iter()
                .map(|b| BlockDefinition {
                    handler_module: module.to_string(),
                    ..b.definition.clone()
                })
                .collect(),
            starts: self.starts,
        };
        Parts {
            start,
            commands: self
                .commands
                .into_iter()
                .map(|c| (c.register.name.clone(), c))
                .collect(),
            blocks: self.blocks,
            kinds: self.kinds,
            ticks: self.ticks,
            events: self.events,
            abms: self.abms,
            timers: self.timers,
        }
    }
}

/// A block being declared: what it does.
pub struct BlockSetup<'a, M> {
    block: &'a mut Block<M>,
}

impl<M> BlockSetup<'_, M> {
    /// When one of its voxels is placed (at the given position). Each
    /// closure answers a `Result` of anything (what `ctx` answered, say):
    /// an error is logged, a value dropped.
    pub fn on_place<R>(self, run: impl VoxelClosure<M, R>) -> Self {
        self.set(Happened::Placed, run)
    }

    /// When one of its voxels is dug or replaced.
    pub fn on_dig<R>(self, run: impl VoxelClosure<M, R>) -> Self {
        self.set(Happened::Dug, run)
    }

    /// When a voxel beside one of its voxels (one of the six faces)
    /// changes: somebody touched it.
    pub fn on_touch<R>(self, run: impl VoxelClosure<M, R>) -> Self {
        self.set(Happened::Touched, run)
    }

    /// When a player punches one of its voxels (`main:punch`, judged by
    /// the game for reach and sight; [`Ctx::player`] says who).
    pub fn on_punch<R>(self, run: impl VoxelClosure<M, R>) -> Self {
        self.set(Happened::Punched, run)
    }

    /// When a player uses one of its voxels (`main:use`), as
    /// [`BlockSetup::on_punch`].
    pub fn on_use<R>(self, run: impl VoxelClosure<M, R>) -> Self {
        self.set(Happened::Used, run)
    }

    fn set<R>(self, happened: Happened, mut run: impl VoxelClosure<M, R>) -> Self {
        *self.block.slot(happened) = Some(Box::new(move |m, ctx, pos| run(m, ctx, pos).map(drop)));
        self
    }
}

/// A block's closure: the mod's state, the context, the voxel's position.
pub trait VoxelClosure<M, R>:
    FnMut(&mut M, &mut Ctx, Pos) -> Result<R, ModuleError> + 'static
{
}

impl<M, R, F> VoxelClosure<M, R> for F where
    F: FnMut(&mut M, &mut Ctx, Pos) -> Result<R, ModuleError> + 'static
{
}

/// A kind of entity being declared.
pub struct EntitySetup<'a, M> {
    kind: &'a mut Kind<M>,
}

impl<M> EntitySetup<'_, M> {
    /// How many the modkit keeps in the world (default 1): one missing
    /// (never made yet, or lost with its section) is made again.
    pub fn keep(self, count: usize) -> Self {
        self.kind.keep = count;
        self
    }

    /// Where a new one goes (`Ok(None)`: not yet, asked again in a second;
    /// the world's ground may not be generated).
    pub fn place(
        self,
        run: impl FnMut(&mut M, &mut Ctx) -> Result<Option<[f64; 3]>, ModuleError> + 'static,
    ) -> Self {
        self.kind.place = Some(Box::new(run));
        self
    }

    /// How clients draw it: a box of `size` voxels (width, height, depth;
    /// its position is the middle of its bottom) in `colour`.
    pub fn looks(self, colour: [u8; 3], size: [f32; 3]) -> Self {
        self.kind.colour = colour;
        self.kind.size = size;
        self
    }
}

/// The declarations, each part owned by the handler that uses it.
pub(crate) struct Parts<M> {
    pub start: StartPlan<M>,
    pub commands: HashMap<String, Command<M>>,
    pub blocks: Vec<Block<M>>,
    pub kinds: Vec<Kind<M>>,
    pub ticks: Vec<TickFn<M>>,
    pub events: Vec<(String, EventFn<M>)>,
    pub abms: HashMap<String, AbmFn<M>>,
    pub timers: HashMap<String, TimerFn<M>>,
}

/// What runs on `core:start` and on `core:continue`.
pub(crate) struct StartPlan<M> {
    declares: Vec<DeclareFn>,
    commands: Vec<RegisterCommand>,
    /// With this module as their handler.
    blocks: Vec<BlockDefinition>,
    starts: Vec<StartFn<M>>,
}

impl<M: Mod> StartPlan<M> {
    pub fn run(&mut self, kit: &mut Modkit<M>) -> Result<(), ModuleError> {
        let host = kit.ctx.host();
        for declare in &self.declares {
            declare(&host)?;
        }
        for command in &self.commands {
            host.call(command)?;
        }
        kit.block_ids.clear();
        for (index, block) in self.blocks.iter().enumerate() {
            let ids = host
                .call(&RegisterBlock {
                    block: block.clone(),
                })
                .map_err(|e| ModuleError::msg(format!("registering block {}: {e}", block.name)))?;
            for id in ids {
                kit.block_ids.insert(VoxelInstance(id).type_id(), index);
            }
        }
        if !self.blocks.is_empty() {
            kit.ctx.forget_registry();
        }
        for start in &mut self.starts {
            start(&mut kit.state, &mut kit.ctx)?;
        }
        Ok(())
    }
}
