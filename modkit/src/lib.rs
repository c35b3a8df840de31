//! `buildat-modkit`: a module in a few lines. A modder declares chat and
//! console commands, blocks with behaviour (placed, dug, touched, punched,
//! used), kinds of entity, any event (`on_event`) and active voxels (ABMs
//! and voxel timers of the `active` module) in one `setup`, each with a
//! closure; the modkit turns that into the module's
//! receive table ([`buildat_interface::Receive`]): the subscriptions, the
//! registrations on `core:start` and `core:continue`, the dispatch.
//!
//! ```ignore
//! use buildat_modkit::prelude::*;
//!
//! #[derive(Default, Serialize, Deserialize)]
//! struct Hello { count: u64 }
//!
//! impl Mod for Hello {
//!     fn setup(m: &mut Setup<Self>) {
//!         m.command("hello", "Greets you", Some("interact"), |hello, _ctx, _args| {
//!             hello.count += 1;
//!             Ok(format!("hello #{}", hello.count))
//!         });
//!     }
//! }
//!
//! export_mod!(Hello);
//! ```
//!
//! The mod's own type is its state: it starts as `Default`, and a reload
//! carries it over (bincode, checked against the type's name and
//! [`Mod::VERSION`]: a state of another layout is dropped with a warning
//! and the new version starts fresh). Entities the modkit spawned are
//! carried over too.
//!
//! Owns: [`Mod`], [`Modkit`] (the [`Module`] a mod is loaded as),
//! [`export_mod!`], the setup ([`Setup`], `setup.rs`), what handlers may do
//! ([`Ctx`], `ctx.rs`), entities (`entity.rs`), the kept state
//! (`state.rs`) and a fake world for tests ([`testing`]). Does not own:
//! the table and its dispatch (`buildat_interface::receive`), the world
//! (`voxelworld`), chat (`main` routes `/NAME` to a command).

mod ctx;
mod entity;
mod setup;
mod state;
pub mod testing;

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::time::{Duration, Instant};

use buildat_active_api::{AbmBatch, TimersFired, abm_event, timers_event};
use buildat_interface::core_api::RunCommand;
use buildat_interface::events::{Continue, Event, ModuleLoaded, Start, Tick};
use buildat_interface::log_limit::{LogLimiter, suppressed_note};
use buildat_interface::{Host, Module, ModuleError, Receive, UnloadKind, log};
use buildat_main_api::{BlockActionKind, BlockActions, block_action_event};
use buildat_voxel::VoxelInstance;
use buildat_voxel::geometry::Pos;
use buildat_voxelworld_api::{SpecialCause, SpecialVoxels, special_voxel_event};
use serde::Serialize;
use serde::de::DeserializeOwned;
use setup::Happened;

pub use buildat_active_api as active_api;
pub use buildat_interface as interface;
pub use buildat_main_api as main_api;
pub use buildat_network_api as network_api;
pub use buildat_voxel as voxel;
pub use buildat_voxelworld_api as voxelworld_api;
pub use serde;

pub use ctx::Ctx;
pub use entity::{Entity, VAR_COLOUR, VAR_ENTITY, VAR_SIZE, motion, turn};
pub use setup::{BlockSetup, EntitySetup, Setup, VoxelClosure};

/// What a modder writes most modules with.
pub mod prelude {
    pub use crate::{Ctx, Entity, Mod, Modkit, Setup, export_mod};
    pub use buildat_active_api::FiredTimer;
    pub use buildat_interface::clap;
    pub use buildat_interface::settings::Settings;
    pub use buildat_interface::{ModuleError, log, settings};
    pub use buildat_voxel::BlockDefinition;
    pub use buildat_voxel::geometry::Pos;
    pub use serde::{Deserialize, Serialize};
}

/// A mod: its state (this type) and what it declares ([`Mod::setup`]).
pub trait Mod: Default + Serialize + DeserializeOwned + 'static {
    /// The state's layout version: bump it when a change of the type would
    /// misread the previous version's state (a reload then starts fresh,
    /// with a warning, instead of misreading it).
    const VERSION: u32 = 1;

    /// Declares the mod's commands, blocks, entities and settings.
    fn setup(m: &mut Setup<Self>);
}

/// A [`Mod`] loaded as a module: its state, its handlers' context, the
/// entities it keeps. What [`export_mod!`] exports.
pub struct Modkit<M: Mod> {
    state: M,
    ctx: Ctx,
    /// Voxel type id → index of its block in the setup (filled on start).
    block_ids: HashMap<u32, usize>,
    entities: Vec<Entity>,
    /// Seconds until entities missing are looked for a place again.
    spawn_wait: f64,
    /// A closure failing every tick is logged a few times a minute.
    failures: LogLimiter<String>,
}

impl<M: Mod> Modkit<M> {
    /// The mod's state.
    pub fn state(&self) -> &M {
        &self.state
    }

    pub fn state_mut(&mut self) -> &mut M {
        &mut self.state
    }

    /// The entities it keeps now.
    pub fn entities(&self) -> &[Entity] {
        &self.entities
    }
}

/// Exports a [`Mod`] as this library's module: `export_mod!(Hello);`.
#[macro_export]
macro_rules! export_mod {
    ($mod:ty) => {
        $crate::interface::export_module!($crate::Modkit<$mod>);
    };
}

impl<M: Mod> Module for Modkit<M> {
    fn create(host: Host) -> Result<Self, ModuleError> {
        Ok(Self {
            state: M::default(),
            ctx: Ctx::new(host),
            block_ids: HashMap::new(),
            entities: Vec::new(),
            spawn_wait: 0.0,
            failures: LogLimiter::new(3, Duration::from_secs(60)),
        })
    }

    fn receive(table: &mut Receive<Self>) {
        let module = table.host().module_name();
        let mut setup = Setup::new();
        M::setup(&mut setup);
        let setup::Parts {
            start,
            commands,
            blocks,
            kinds,
            ticks,
            events,
            abms,
            timers,
        } = setup.into_parts(&module);
        let start = Rc::new(RefCell::new(start));
        let on_continue = Rc::clone(&start);
        table
            .event(move |kit: &mut Self, _: Start| start.borrow_mut().run(kit))
            .event(move |kit: &mut Self, _: Continue| on_continue.borrow_mut().run(kit))
            .stash(state::save, state::restore);
        if !commands.is_empty() {
            let mut commands = commands;
            table.call(move |kit: &mut Self, run: RunCommand| {
                let Some(command) = commands.get_mut(&run.name) else {
                    return Err(ModuleError::UnknownFunction(format!(
                        "run_command {}",
                        run.name
                    )));
                };
                kit.ctx.player = run.by;
                let reply = (command.run)(&mut kit.state, &mut kit.ctx, &run.args);
                kit.ctx.player = None;
                reply
            });
        }
        if !blocks.is_empty() {
            let takes_actions = blocks.iter().any(setup::Block::takes_actions);
            let blocks = Rc::new(RefCell::new(blocks));
            let acted_on = Rc::clone(&blocks);
            table.event_named(
                special_voxel_event(&module),
                move |kit: &mut Self, told: SpecialVoxels| {
                    kit.on_special(&mut blocks.borrow_mut(), told);
                    Ok(())
                },
            );
            if takes_actions {
                table.event_named(
                    block_action_event(&module),
                    move |kit: &mut Self, told: BlockActions| {
                        kit.on_block_actions(&mut acted_on.borrow_mut(), told);
                        Ok(())
                    },
                );
            }
        }
        let mut events = events;
        if !abms.is_empty() {
            // The ABMs again when `active` is loaded after the mod (then
            // the mod's own closure on the event, if it has one).
            let at = events
                .iter()
                .position(|(name, _)| name == ModuleLoaded::NAME);
            let mut own = at.map(|at| events.remove(at).1);
            table.event_raw(ModuleLoaded::NAME, move |kit: &mut Self, bytes| {
                let loaded: ModuleLoaded =
                    buildat_interface::decode(bytes).map_err(|error| ModuleError::Malformed {
                        what: format!("event {}", ModuleLoaded::NAME),
                        error,
                    })?;
                if loaded.name == buildat_active_api::MODULE
                    && let Err(error) = kit.ctx.register_abms_again()
                {
                    kit.failed("registering the ABMs again", &error);
                }
                if let Some(run) = &mut own
                    && let Err(error) = run(&mut kit.state, &mut kit.ctx, bytes)
                {
                    kit.failed(&format!("on_event {}", ModuleLoaded::NAME), &error);
                }
                Ok(())
            });
        }
        for (name, mut run) in events {
            let what = format!("on_event {name}");
            table.event_raw(name, move |kit: &mut Self, bytes| {
                match run(&mut kit.state, &mut kit.ctx, bytes) {
                    Err(error @ ModuleError::Malformed { .. }) => return Err(error),
                    Err(error) => kit.failed(&what, &error),
                    Ok(()) => {}
                }
                Ok(())
            });
        }
        if !abms.is_empty() {
            let mut abms = abms;
            table.event_named(
                abm_event(&module),
                move |kit: &mut Self, batch: AbmBatch| {
                    if let Some(run) = abms.get_mut(&batch.name)
                        && let Err(error) = run(&mut kit.state, &mut kit.ctx, &batch.voxels)
                    {
                        kit.failed(&format!("on_abm {}", batch.name), &error);
                    }
                    Ok(())
                },
            );
        }
        if !timers.is_empty() {
            let mut timers = timers;
            table.event_named(
                timers_event(&module),
                move |kit: &mut Self, fired: TimersFired| {
                    for timer in fired.timers {
                        let what = format!("on_timer {} at {:?}", timer.tag, timer.pos);
                        let result = match timers.get_mut(&timer.tag) {
                            Some(run) => run(&mut kit.state, &mut kit.ctx, timer),
                            None => Err(ModuleError::msg("no closure for this tag")),
                        };
                        if let Err(error) = result {
                            kit.failed(&what, &error);
                        }
                    }
                    Ok(())
                },
            );
        }
        if !kinds.is_empty() || !ticks.is_empty() {
            let (mut kinds, mut ticks) = (kinds, ticks);
            table.event(move |kit: &mut Self, tick: Tick| {
                for on_tick in &mut ticks {
                    if let Err(error) = on_tick(&mut kit.state, &mut kit.ctx, tick.dtime) {
                        kit.failed("on_tick", &error);
                    }
                }
                entity::tick(kit, &mut kinds, tick.dtime)
            });
        }
    }

    fn unload(&mut self, kind: UnloadKind) -> Result<(), ModuleError> {
        if matches!(kind, UnloadKind::ForGood | UnloadKind::AfterFailure) {
            entity::remove_all(self);
        }
        Ok(())
    }
}

impl<M: Mod> Modkit<M> {
    /// Logs a closure's error (`what` failed), a few times a minute for
    /// each `what`'s first word (one failing every tick does not flood the
    /// log).
    pub(crate) fn failed(&mut self, what: &str, error: &ModuleError) {
        let key = what.split(' ').next().unwrap_or_default().to_string();
        if let Some(suppressed) = self.failures.allow(key, Instant::now()) {
            self.ctx.host().log(
                log::Level::Warn,
                &format!("{what}: {error}{}", suppressed_note(suppressed)),
            );
        }
    }

    /// `voxelworld:special/<module>`: each voxel's block's closure, with
    /// the player who made the edit.
    fn on_special(&mut self, blocks: &mut [setup::Block<M>], told: SpecialVoxels) {
        for special in told.voxels {
            let (of, happened) = match special.cause {
                SpecialCause::Dug => (special.previous, Happened::Dug),
                SpecialCause::Placed => (special.voxel, Happened::Placed),
                SpecialCause::NeighbourChanged { .. } => (special.voxel, Happened::Touched),
            };
            self.run_block(blocks, of, special.pos, special.by, happened);
        }
    }

    /// `main:block_action/<module>`: each punch's or use's closure, with
    /// the player.
    fn on_block_actions(&mut self, blocks: &mut [setup::Block<M>], told: BlockActions) {
        for action in told.actions {
            let happened = match action.kind {
                BlockActionKind::Punch => Happened::Punched,
                BlockActionKind::Use => Happened::Used,
            };
            self.run_block(
                blocks,
                action.voxel,
                action.pos,
                Some(action.player),
                happened,
            );
        }
    }

    /// Runs the closure of the block of `voxel` at `pos` for what
    /// happened, with `player` in the context, if it has one. Its error is
    /// logged; the others still run.
    fn run_block(
        &mut self,
        blocks: &mut [setup::Block<M>],
        voxel: u32,
        pos: Pos,
        player: Option<String>,
        happened: Happened,
    ) {
        let Some(block) = self
            .block_ids
            .get(&VoxelInstance(voxel).type_id())
            .and_then(|&index| blocks.get_mut(index))
        else {
            return;
        };
        let name = block.definition.name.clone();
        let Some(handler) = block.closure(happened) else {
            return;
        };
        self.ctx.player = player;
        if let Err(error) = handler(&mut self.state, &mut self.ctx, pos) {
            self.failed(&format!("{name} {} at {pos:?}", happened.word()), &error);
        }
        self.ctx.player = None;
    }
}

#[cfg(test)]
mod tests;
