//! The `liquid` module: water (and lava) that flows. Sources are
//! worldgen's `water` (and this module's `lava`); flowing voxels are this
//! module's `water_flowing` / `lava_flowing`, their level in the game bits.
//! Flow starts only from changes (`voxelworld:voxels_changed`): a change
//! of or to a liquid queues the voxel and every voxel whose rules read it,
//! a dug voxel itself; generated lakes stay still until a bank is dug.
//! Every `liquid.step_seconds` one step looks at up to
//! `liquid.updates_per_tick` of the positions queued before it
//! (`queue.rs`, rules in `flow.rs`), reading with one `GetVoxels` and
//! writing with one `EditVoxels` per batch (each edit `Replace::Exactly`
//! what was read, saved); voxelworld relights and streams the edits. The
//! queue is capped (`liquid.max_queue`), what does not fit dropped and
//! counted. Buckets (`bucket.rs`): items registered with `items`, a recipe
//! with `crafting`, their use told by main's `main:voxel_actions`.
//! Stats: the `get_liquid_stats` call and the console command `liquid`;
//! `liquid flood X Z SOURCES` places sources for a bench (`flood.rs`).
//!
//! Owns: the liquid blocks' registration (and `water` where no worldgen
//! made it), the flow queue and its stats, the buckets. Does not own: the
//! world (`voxelworld`), judging a player's use (`main`), inventories
//! (`inventory`), item and recipe registries (`items`, `crafting`).

mod bucket;
pub mod flood;
pub mod flow;
pub mod queue;

use std::collections::HashMap;

use buildat_interface::events::{self, ModuleLoaded, Tick};
use buildat_interface::{Host, Module, ModuleError, Receive, Stash, export_module, log};
use buildat_liquid_api::{GetLiquidStats, LAVA, LAVA_FLOWING, LiquidStats, WATER, WATER_FLOWING};
use buildat_main_api::VoxelActions;
use buildat_voxel::geometry::Pos;
use buildat_voxel::light;
use buildat_voxelworld_api::{
    BlockDefinition, EditOutcome, EditVoxel, EditVoxels, GetGround, GetRegistry, GetVoxels,
    MAX_VOXELS_PER_CALL, RegisterBlock, Replace, VoxelsChanged,
};
use serde::{Deserialize, Serialize};

use crate::flow::Kinds;
use crate::queue::{Queue, World};

buildat_interface::settings! {
    /// What operators set (`--set liquid.KEY=VALUE`).
    pub(crate) struct LiquidSettings in "liquid" {
        /// Whether liquids flow (false: changes are still queued, capped, but nothing moves).
        enabled: bool = true,
        /// Most queued positions one step looks at (its work: about 11 voxels read each).
        updates_per_tick: u32 = 1024,
        /// Seconds between two steps; a flood advances one voxel a step (0: every tick).
        step_seconds: f64 = 0.25,
        /// Most positions waiting to be looked at; more are dropped and counted.
        max_queue: u32 = 100_000,
        /// Whether lava, lava_flowing and the lava bucket are registered.
        lava: bool = true,
    }
}

/// What crosses a reload: the queue and the counters.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Kept {
    queue: Vec<Pos>,
    updated_total: u64,
    changed_total: u64,
    dropped: u64,
    peak: u64,
}
impl Stash for Kept {
    const LAYOUT: u32 = 1;
}

pub struct Liquids {
    host: Host,
    settings: LiquidSettings,
    /// The liquids' voxel ids, once registered.
    kinds: Option<Kinds>,
    queue: Queue,
    /// The flow's own edits of the last step: their `voxels_changed` echo
    /// queues nothing (the step queued what they affect).
    echoes: HashMap<Pos, u32>,
    since_step: f64,
    updated_last_tick: u32,
    updated_total: u64,
    changed_total: u64,
    buckets: bucket::Buckets,
}

/// Voxelworld through the host: one `GetVoxels` and one `EditVoxels` per
/// batch.
struct HostWorld(Host);

impl World for HostWorld {
    type Error = ModuleError;

    fn get(&mut self, positions: &[Pos]) -> Result<Vec<Option<u32>>, ModuleError> {
        self.0.call(&GetVoxels {
            positions: positions.to_vec(),
        })
    }

    fn edit(&mut self, edits: &[(Pos, u32, u32)]) -> Result<Vec<bool>, ModuleError> {
        let outcomes = self.0.call(&EditVoxels {
            edits: edits
                .iter()
                .map(|(pos, seen, now)| EditVoxel {
                    pos: *pos,
                    voxel: *now,
                    replace: Replace::Exactly(*seen),
                    save: true,
                    by: buildat_voxelworld_api::by_module("liquid"),
                })
                .collect(),
        })?;
        Ok(outcomes
            .into_iter()
            .map(|outcome| matches!(outcome, EditOutcome::Edited { .. }))
            .collect())
    }
}

/// A liquid block: not solid, dimming light like water.
fn liquid_block(name: &str, light_source: u8, light_absorption: u8) -> BlockDefinition {
    let mut block = BlockDefinition::simple(name, &format!("{name}.png"));
    block.physically_solid = false;
    block.light_source = light_source;
    block.light_absorption = light_absorption;
    block
}

/// `liquid`: the flow's stats; `liquid flood X Z SOURCES`: a bench's flood.
#[derive(clap::Parser)]
#[command(
    name = "liquid",
    about = "how the liquids keep up: queued positions, work per step, dropped",
    args_conflicts_with_subcommands = true
)]
struct LiquidCommand {
    #[command(subcommand)]
    flood: Option<FloodCommand>,
}

#[derive(clap::Subcommand)]
enum FloodCommand {
    /// Place SOURCES water sources on the ground in a square grid around X Z (a bench's flood)
    Flood {
        #[arg(allow_negative_numbers = true)]
        x: i32,
        #[arg(allow_negative_numbers = true)]
        z: i32,
        #[arg(value_parser = clap::value_parser!(u32).range(1..=i64::from(flood::MOST_SOURCES)))]
        sources: u32,
        /// Voxels between two sources (16: their flows over flat ground do not meet)
        #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=256))]
        spacing: u32,
    },
}

impl Liquids {
    fn start(&mut self) -> Result<(), ModuleError> {
        self.settings = buildat_interface::settings::Settings::read(&self.host)?;
        check_settings(&self.settings)?;
        self.queue.set_cap(self.settings.max_queue as usize);
        self.register_blocks()?;
        self.buckets.lava = self.settings.lava;
        self.buckets.register(&self.host);
        Ok(())
    }

    /// Registers `water_flowing` (and `water` where no generator did, and
    /// the lava blocks), then reads their ids.
    fn register_blocks(&mut self) -> Result<(), ModuleError> {
        let mut registry = self.host.call(&GetRegistry {})?;
        // The name index does not cross the wire.
        registry.reindex();
        let mut blocks = vec![liquid_block(WATER_FLOWING, 0, 1)];
        if registry.get_id(WATER).is_none() {
            blocks.push(liquid_block(WATER, 0, 1));
        }
        if self.settings.lava {
            blocks.push(liquid_block(LAVA, 13, light::OPAQUE));
            blocks.push(liquid_block(LAVA_FLOWING, 12, light::OPAQUE));
        }
        for block in blocks {
            self.host.call(&RegisterBlock { block })?;
        }
        let mut registry = self.host.call(&GetRegistry {})?;
        registry.reindex();
        let id = |name: &str| {
            registry
                .get_id(name)
                .ok_or_else(|| ModuleError::msg(format!("block {name} is not registered")))
        };
        let lava = if self.settings.lava {
            Some((id(LAVA)?, id(LAVA_FLOWING)?))
        } else {
            None
        };
        self.kinds = Some(Kinds {
            water: id(WATER)?,
            water_flowing: id(WATER_FLOWING)?,
            lava,
            cooled: registry.get_id("stone"),
        });
        Ok(())
    }

    /// Queues every voxel a change may set flowing (the echoes of the
    /// flow's own edits excepted; [`Queue::push_told`]).
    fn changed(&mut self, changed: VoxelsChanged) {
        for change in changed.changes {
            if self.echoes.get(&change.pos) == Some(&change.now) {
                self.echoes.remove(&change.pos);
                continue;
            }
            self.queue
                .push_told(self.kinds.as_ref(), change.pos, change.was, change.now);
        }
        if changed.untold > 0 {
            log::warn!(
                "{} voxel changes of one commit were not told: liquids there may not flow",
                changed.untold
            );
        }
    }

    fn tick(&mut self, dtime: f64) -> Result<(), ModuleError> {
        self.since_step += dtime;
        if !self.settings.enabled || self.since_step < self.settings.step_seconds {
            return Ok(());
        }
        self.since_step = 0.0;
        self.echoes.clear();
        let Some(kinds) = self.kinds else {
            return Ok(());
        };
        if self.queue.is_empty() {
            self.updated_last_tick = 0;
            return Ok(());
        }
        let (report, made) = queue::step(
            &mut self.queue,
            &kinds,
            &mut HostWorld(self.host),
            self.settings.updates_per_tick,
            MAX_VOXELS_PER_CALL,
        )?;
        self.updated_last_tick = report.looked;
        self.updated_total += u64::from(report.looked);
        self.changed_total += u64::from(report.changed);
        self.echoes
            .extend(made.into_iter().map(|(pos, _, now)| (pos, now)));
        Ok(())
    }

    /// `liquid flood X Z SOURCES`: sources on the ground of a grid's
    /// columns (`get_ground` each, which loads or asks for its sections),
    /// placed on air in one `EditVoxels`; the flow follows from
    /// voxelworld's `voxels_changed` as for any change.
    fn flood(&mut self, x: i32, z: i32, sources: u32, spacing: u32) -> Result<String, ModuleError> {
        let Some(kinds) = self.kinds else {
            return Ok("liquid flood: the liquids are not registered yet".into());
        };
        let mut edits = Vec::new();
        for column in flood::grid(x, z, sources, spacing) {
            let ground = self.host.call(&GetGround {
                x: column.0,
                z: column.1,
            })?;
            edits.extend(flood::source_on(column, ground, kinds.water));
        }
        let tried = edits.len();
        let outcomes = self.host.call(&EditVoxels { edits })?;
        let placed = outcomes
            .iter()
            .filter(|o| matches!(o, EditOutcome::Edited { .. }))
            .count();
        Ok(format!(
            "liquid flood: {placed} sources placed around {x},{z}, {spacing} apart \
             ({} columns without known ground or not air on it, {} refused)",
            sources as usize - tried,
            tried - placed
        ))
    }

    fn stats(&self) -> LiquidStats {
        LiquidStats {
            queued: self.queue.len() as u64,
            updated_last_tick: self.updated_last_tick,
            budget_per_tick: self.settings.updates_per_tick,
            updated_total: self.updated_total,
            dropped: self.queue.dropped,
            changed_total: self.changed_total,
            queue_peak: self.queue.peak as u64,
            max_queue: self.queue.cap() as u64,
        }
    }

    fn keep(&mut self) -> Kept {
        Kept {
            queue: self.queue.positions(),
            updated_total: self.updated_total,
            changed_total: self.changed_total,
            dropped: self.queue.dropped,
            peak: self.queue.peak as u64,
        }
    }

    fn restore(&mut self, kept: Kept) {
        for pos in kept.queue {
            self.queue.push(pos);
        }
        self.updated_total = kept.updated_total;
        self.changed_total = kept.changed_total;
        self.queue.dropped += kept.dropped;
        self.queue.peak = self.queue.peak.max(kept.peak as usize);
    }
}

/// The stats as the console shows them.
pub fn stats_line(stats: &LiquidStats) -> String {
    format!(
        "liquid: {} queued (peak {}, cap {}), {} looked at last step (budget {}), {} in all, {} voxels changed, {} dropped",
        stats.queued,
        stats.queue_peak,
        stats.max_queue,
        stats.updated_last_tick,
        stats.budget_per_tick,
        stats.updated_total,
        stats.changed_total,
        stats.dropped
    )
}

fn check_settings(settings: &LiquidSettings) -> Result<(), ModuleError> {
    if settings.updates_per_tick == 0 {
        return Err(ModuleError::msg(
            "liquid.updates_per_tick must be at least 1",
        ));
    }
    if settings.max_queue == 0 {
        return Err(ModuleError::msg("liquid.max_queue must be at least 1"));
    }
    if !(0.0..=60.0).contains(&settings.step_seconds) {
        return Err(ModuleError::msg(format!(
            "liquid.step_seconds must be 0 to 60, not {}",
            settings.step_seconds
        )));
    }
    Ok(())
}

impl Module for Liquids {
    fn create(host: Host) -> Result<Self, ModuleError> {
        let settings = LiquidSettings::default();
        Ok(Self {
            host,
            queue: Queue::new(settings.max_queue as usize),
            settings,
            kinds: None,
            echoes: HashMap::new(),
            since_step: 0.0,
            updated_last_tick: 0,
            updated_total: 0,
            changed_total: 0,
            buckets: bucket::Buckets::default(),
        })
    }

    fn receive(table: &mut Receive<Self>) {
        table
            .settings::<LiquidSettings>()
            .event(|liquids, _: events::Start| liquids.start())
            .event(|liquids, _: events::Continue| liquids.start())
            .event(|liquids, tick: Tick| liquids.tick(tick.dtime))
            .event(|liquids, changed: VoxelsChanged| {
                liquids.changed(changed);
                Ok(())
            })
            .event(|liquids, actions: VoxelActions| {
                let Some(kinds) = liquids.kinds else {
                    return Ok(());
                };
                liquids.buckets.used(&liquids.host, &kinds, actions.actions)
            })
            .event(|liquids, _: buildat_items_api::ItemsChanged| {
                liquids.buckets.items_changed(&liquids.host);
                Ok(())
            })
            .event(|liquids, loaded: ModuleLoaded| {
                liquids.buckets.module_loaded(&liquids.host, &loaded.name);
                Ok(())
            })
            .call(|liquids, _: GetLiquidStats| Ok(liquids.stats()))
            .command(None, |liquids, _, command: LiquidCommand| {
                match command.flood {
                    None => Ok(stats_line(&liquids.stats())),
                    Some(FloodCommand::Flood {
                        x,
                        z,
                        sources,
                        spacing,
                    }) => liquids.flood(x, z, sources, spacing),
                }
            })
            .stash(Liquids::keep, |liquids, kept: Kept| {
                liquids.restore(kept);
                Ok(())
            });
    }
}

export_module!(Liquids);

#[cfg(test)]
mod tests;
