//! `active`: modules acting on the world over time without scanning it:
//! active block modifiers (ABMs: "every N seconds, the loaded voxels of
//! these names or groups near players, with chance 1/k, with these
//! neighbours", delivered in batches on `active:abm/<module>`) and voxel
//! timers (bound to the voxel at their position, kept with its section,
//! fired on `active:timers/<module>`, late ones once).
//!
//! Owns: the ABMs and their rounds (`abms.rs`), the active area
//! (`area.rs`: chunks near players, from their nodes), the per-tick
//! budget (`active.budget_ms`: the time of the tick's `find_voxels` calls;
//! what does not fit waits, counted as backlog), the timers of the
//! sections in memory and their storage in world values (`timers.rs`),
//! the calls of `buildat-active-api`, the console command `active`.
//! Does not own: the voxels or the scan (voxelworld's `find_voxels`,
//! `get_voxels`), what a batch or a timer does (the module told).
//!
//! Settings: `active.enabled` (default true; false: no ABM rounds, timers
//! still kept and fired), `active.budget_ms` (default 3),
//! `active.radius_chunks` (default 2).

mod abms;
mod area;
mod timers;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

use buildat_active_api::{
    Abm, AbmBatch, ActiveStats, CancelTimers, FiredTimer, GetActiveStats, GetTimers,
    MAX_TIMERS_PER_CALL, RegisterAbm, RemoveAbm, SetTimers, TimersFired, abm_event, timers_event,
};
use buildat_interface::log_limit::{LogLimiter, suppressed_note};
use buildat_interface::settings::Settings;
use buildat_interface::stash::Stash;
use buildat_interface::{Host, Module, ModuleError, Receive, events, export_module, log};
use buildat_items_api::{GetItems, ItemRegistry, ItemsChanged};
use buildat_main_api::VAR_PLAYER;
use buildat_voxel::geometry::{Pos, SectionSize};
use buildat_voxel::{VoxelInstance, VoxelRegistry};
use buildat_voxelworld_api::{
    FindVoxels, GetRegistry, GetSizes, GetVoxels, ListNodes, ListValues, MAX_FIND_CHUNKS,
    MAX_VALUE_WRITES, MAX_VALUES_LISTED, NodesChanged, PutValues, SectionsLoaded, SectionsUnloaded,
    ValueWrite, VoxelsChanged,
};
use serde::{Deserialize, Serialize};

use abms::Abms;
use area::Area;
use timers::{Timer, Timers};

buildat_interface::settings! {
    /// What operators set (`--set active.KEY=VALUE`).
    pub(crate) struct ActiveSettings in "active" {
        /// Whether ABMs run (timers are kept and fired either way).
        enabled: bool = true,
        /// Milliseconds a tick may spend finding ABMs' voxels.
        budget_ms: f64 = 3.0,
        /// Chunks around each player's chunk that are active.
        radius_chunks: i32 = 2,
    }
}

/// `active`: the counters.
#[derive(clap::Parser)]
#[command(
    name = "active",
    about = "active voxels: ABMs, the active area, the backlog, the budget and the timers"
)]
struct ActiveCommand {}

/// Most voxels of one ABM delivered in one tick (one batch).
const MAX_BATCH: usize = 65536;
/// Most timers fired in one tick (the rest the next).
const MAX_FIRE_PER_TICK: usize = 4096;
/// Seconds between two reads of the voxel and item registries while ABMs
/// exist (a block registered later resolves).
const REGISTRY_REFRESH: f64 = 5.0;
/// Ticks kept for the p99.
const TICK_WINDOW: usize = 1024;
/// The estimated scan time of a chunk before any was measured.
const INITIAL_PER_CHUNK: Duration = Duration::from_millis(1);
/// Most chunks one `find_voxels` of a slice asks for.
const MOST_CHUNKS_PER_CALL: usize = 64;

/// What crosses a reload: the ABMs and which sections' timers are in
/// memory (read back from the values), the counters.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Kept {
    abms: Vec<Abm>,
    sections: Vec<Pos>,
    voxels_delivered: u64,
    timers_fired: u64,
    ticks_over_budget: u64,
}

impl Stash for Kept {
    const LAYOUT: u32 = 1;
}

pub(crate) struct Active {
    host: Host,
    enabled: bool,
    budget: Duration,
    area: Area,
    abms: Abms,
    timers: Timers,
    voxels: VoxelRegistry,
    items: ItemRegistry,
    /// Seconds since the module started.
    clock: f64,
    since_registry: f64,
    /// Where the next slice starts among the ABMs (fairness).
    cursor: usize,
    /// Estimated time to scan one chunk, for sizing calls.
    per_chunk: Duration,
    /// The recent ticks' scan time, microseconds.
    tick_times: VecDeque<u64>,
    last_tick_micros: u64,
    ticks_over_budget: u64,
    voxels_delivered: u64,
    timers_fired: u64,
    /// Failed calls to voxelworld, a few a minute.
    errors: LogLimiter<()>,
}

impl Module for Active {
    fn create(host: Host) -> Result<Self, ModuleError> {
        let set = ActiveSettings::read(&host)?;
        if !(0.0..=1000.0).contains(&set.budget_ms) {
            return Err(ModuleError::msg(format!(
                "active.budget_ms must be 0 to 1000, not {}",
                set.budget_ms
            )));
        }
        if !(0..=16).contains(&set.radius_chunks) {
            return Err(ModuleError::msg(format!(
                "active.radius_chunks must be 0 to 16, not {}",
                set.radius_chunks
            )));
        }
        Ok(Self {
            host,
            enabled: set.enabled,
            budget: Duration::from_secs_f64(set.budget_ms / 1000.0),
            area: Area::new(set.radius_chunks),
            abms: Abms::default(),
            timers: Timers::new(SectionSize::default()),
            voxels: VoxelRegistry::default(),
            items: ItemRegistry::default(),
            clock: 0.0,
            since_registry: 0.0,
            cursor: 0,
            // Pessimistic until measured: a chunk scans in ~35 us in a
            // release build, ~1 ms in a debug one.
            per_chunk: INITIAL_PER_CHUNK,
            tick_times: VecDeque::new(),
            last_tick_micros: 0,
            ticks_over_budget: 0,
            voxels_delivered: 0,
            timers_fired: 0,
            errors: LogLimiter::new(3, Duration::from_secs(60)),
        })
    }

    fn receive(table: &mut Receive<Self>) {
        table
            .settings::<ActiveSettings>()
            .event(|a, _: events::Start| a.start())
            .event(|a, _: events::Continue| a.start())
            .event(|a, tick: events::Tick| a.tick(tick.dtime))
            .event(|a, changed: NodesChanged| {
                a.area.apply(&changed);
                Ok(())
            })
            .event(|a, _: ItemsChanged| {
                a.refresh_registries();
                Ok(())
            })
            .event(|a, changed: VoxelsChanged| a.voxels_changed(&changed))
            .event(|a, loaded: SectionsLoaded| a.sections_loaded(&loaded.sections))
            .event(|a, unloaded: SectionsUnloaded| a.sections_unloaded(&unloaded.sections))
            .call(|a, register: RegisterAbm| a.register_abm(register.abm))
            .call(|a, remove: RemoveAbm| Ok(a.abms.remove(&remove.name)))
            .call(|a, set: SetTimers| a.set_timers(set))
            .call(|a, cancel: CancelTimers| a.cancel_timers(cancel))
            .call(|a, get: GetTimers| Ok(a.get_timers(&get)))
            .call(|a, _: GetActiveStats| Ok(a.stats()))
            .command(None, |a, _, _: ActiveCommand| Ok(a.report()))
            .stash(Active::keep, Active::restore);
    }
}

impl Active {
    /// `core:start` / `core:continue`: the section size, the players
    /// there are, the registries.
    fn start(&mut self) -> Result<(), ModuleError> {
        let sizes = self.host.call(&GetSizes {})?;
        if self.timers.section_size().0 != sizes.section_size {
            self.timers = Timers::new(SectionSize(sizes.section_size));
        }
        match self.host.call(&ListNodes {
            with_var: Some(VAR_PLAYER.to_string()),
        }) {
            Ok(nodes) => nodes.iter().for_each(|node| self.area.adopt(node)),
            Err(error) => log::debug!("listing the player nodes: {error}"),
        }
        self.refresh_registries();
        self.adopt_area_sections();
        Ok(())
    }

    /// Reads the timers of the sections around the players that are in
    /// memory already (loaded before this module started, or while it was
    /// away): their `sections_loaded` was not heard.
    fn adopt_area_sections(&mut self) {
        let size = self.timers.section_size();
        let mut sections: Vec<Pos> = self
            .area
            .chunks()
            .map(|chunk| size.section_of_chunk(*chunk))
            .filter(|section| !self.timers.is_loaded(*section))
            .collect();
        sections.sort_unstable();
        sections.dedup();
        for part in sections.chunks(buildat_voxelworld_api::MAX_VOXELS_PER_CALL) {
            let origins: Vec<Pos> = part
                .iter()
                .map(|s| {
                    let chunk = std::array::from_fn(|i| s[i] * size.0[i]);
                    buildat_voxel::geometry::chunk_origin(chunk)
                })
                .collect();
            let there = match self.host.call(&GetVoxels { positions: origins }) {
                Ok(there) => there,
                Err(error) => {
                    log::debug!("looking at the sections around the players: {error}");
                    return;
                }
            };
            let present: Vec<Pos> = part
                .iter()
                .zip(there)
                .filter(|(_, voxel)| voxel.is_some())
                .map(|(section, _)| *section)
                .collect();
            if let Err(error) = self.sections_loaded(&present) {
                log::debug!("reading the timers around the players: {error}");
            }
        }
    }

    fn keep(&mut self) -> Kept {
        if let Err(error) = self.write_timers() {
            log::warn!("reload: timers not written ({error}); the last changes are lost");
        }
        Kept {
            abms: self.abms.by_name.values().map(|s| s.abm.clone()).collect(),
            sections: self.timers.sections().copied().collect(),
            voxels_delivered: self.voxels_delivered,
            timers_fired: self.timers_fired,
            ticks_over_budget: self.ticks_over_budget,
        }
    }

    fn restore(&mut self, kept: Kept) -> Result<(), ModuleError> {
        self.voxels_delivered = kept.voxels_delivered;
        self.timers_fired = kept.timers_fired;
        self.ticks_over_budget = kept.ticks_over_budget;
        // The section size comes at start: read it now.
        let sizes = self.host.call(&GetSizes {})?;
        self.timers = Timers::new(SectionSize(sizes.section_size));
        self.refresh_registries();
        for abm in kept.abms {
            self.abms.register(abm, &self.voxels, &self.items);
        }
        self.sections_loaded(&kept.sections)
    }

    /// Reads the voxel registry and the items' (when `items` runs) and
    /// resolves the ABMs' names again.
    fn refresh_registries(&mut self) {
        self.since_registry = 0.0;
        match self.host.call(&GetRegistry {}) {
            Ok(voxels) => self.voxels = voxels,
            Err(error) => log::debug!("reading the voxel registry: {error}"),
        }
        match self.host.call(&GetItems {}) {
            Ok(items) => self.items = items,
            Err(error) => log::debug!("reading the item registry (groups unknown): {error}"),
        }
        self.abms.resolve_all(&self.voxels, &self.items);
    }

    fn register_abm(&mut self, abm: Abm) -> Result<(), ModuleError> {
        abms::check(&abm).map_err(ModuleError::msg)?;
        self.refresh_registries();
        let name = abm.name.clone();
        self.abms.register(abm, &self.voxels, &self.items);
        if self.abms.by_name[&name].types.is_empty() {
            log::info!("ABM {name}: no voxel type matches its nodes yet");
        }
        Ok(())
    }

    fn warn(&mut self, what: &str, error: &ModuleError) {
        if let Some(suppressed) = self.errors.allow((), Instant::now()) {
            log::warn!("{what}: {error}{}", suppressed_note(suppressed));
        }
    }

    /// A tick: registries refreshed now and then, a slice of the ABMs'
    /// rounds within the budget, the timers due fired, the timers changed
    /// written.
    fn tick(&mut self, dtime: f64) -> Result<(), ModuleError> {
        self.clock += dtime;
        self.since_registry += dtime;
        if !self.abms.is_empty() && self.since_registry >= REGISTRY_REFRESH {
            self.refresh_registries();
        }
        if self.enabled {
            self.scan()?;
        }
        self.fire_timers()?;
        if let Err(error) = self.write_timers() {
            self.warn("writing timers (retried next tick)", &error);
        }
        Ok(())
    }

    /// The ABMs' slice of this tick: rounds started when due, chunks taken
    /// from their queues in turn until the budget is spent (one call at
    /// least), each ABM's finds delivered in one batch.
    fn scan(&mut self) -> Result<(), ModuleError> {
        let Active {
            abms, area, clock, ..
        } = self;
        if !area.is_empty() {
            abms.start_rounds(*clock, area.chunks());
        }
        let names: Vec<String> = self
            .abms
            .by_name
            .iter()
            .filter(|(_, s)| !s.queue.is_empty())
            .map(|(name, _)| name.clone())
            .collect();
        let mut spent = Duration::ZERO;
        if !names.is_empty() {
            spent = self.slice(&names);
        }
        let micros = spent.as_micros() as u64;
        self.last_tick_micros = micros;
        if self.tick_times.len() >= TICK_WINDOW {
            self.tick_times.pop_front();
        }
        self.tick_times.push_back(micros);
        if spent > self.budget {
            self.ticks_over_budget += 1;
        }
        for state in self.abms.by_name.values_mut() {
            if state.found.is_empty() {
                continue;
            }
            let batch = AbmBatch {
                name: state.abm.name.clone(),
                voxels: std::mem::take(&mut state.found),
            };
            self.voxels_delivered += batch.voxels.len() as u64;
            let payload = buildat_interface::encode(&batch)?;
            self.host
                .emit_event(&abm_event(&state.abm.module), &payload)?;
        }
        Ok(())
    }

    /// Takes chunks of the ABMs named in turn until the budget is spent;
    /// answers the time spent in `find_voxels`.
    fn slice(&mut self, names: &[String]) -> Duration {
        let mut spent = Duration::ZERO;
        let mut calls = 0usize;
        let mut idle = 0;
        while idle < names.len() && (calls == 0 || spent < self.budget) {
            let name = &names[self.cursor % names.len()];
            self.cursor = self.cursor.wrapping_add(1);
            let left = self.budget.saturating_sub(spent);
            let want = (left.as_nanos() / self.per_chunk.as_nanos().max(1)) as usize;
            let want = want.clamp(1, MOST_CHUNKS_PER_CALL.min(MAX_FIND_CHUNKS));
            let Some(state) = self.abms.by_name.get_mut(name) else {
                idle += 1;
                continue;
            };
            let room = MAX_BATCH.saturating_sub(state.found.len());
            if state.queue.is_empty() || room == 0 {
                idle += 1;
                continue;
            }
            idle = 0;
            let mut chunks = Vec::with_capacity(want);
            while chunks.len() < want {
                let Some(chunk) = state.queue.pop_front() else {
                    break;
                };
                if self.area.contains(&chunk) {
                    chunks.push(chunk);
                }
            }
            if chunks.is_empty() || state.types.is_empty() {
                continue;
            }
            let request = FindVoxels {
                chunks,
                types: state.types.clone(),
                neighbours: state.neighbours.clone(),
                chance: state.abm.chance,
                seed: state.seed(),
                limit: room as u32,
            };
            let answer = self.host.call(&request);
            calls += 1;
            let found = match answer {
                Ok(found) => found,
                Err(error) => {
                    self.warn("finding voxels", &error);
                    break;
                }
            };
            // The world's own time on the call: the work budgeted, not
            // the wait behind others' calls on a busy world.
            let took = Duration::from_micros(found.micros);
            spent += took;
            let looked = request.chunks.len() - found.missing.len();
            if looked > 0 {
                // An estimate of one chunk's scan: up at once when slower
                // (so the next call does not overshoot again), down slowly.
                let one = took / looked as u32;
                self.per_chunk = if one > self.per_chunk {
                    one
                } else {
                    (self.per_chunk * 3 + one) / 4
                };
            }
            let Some(state) = self.abms.by_name.get_mut(name) else {
                continue;
            };
            if found.found.len() >= room {
                // Stopped inside a chunk: the ones after it wait.
                let present: Vec<Pos> = request
                    .chunks
                    .iter()
                    .filter(|c| !found.missing.contains(c))
                    .copied()
                    .collect();
                for chunk in present.iter().skip(found.scanned as usize + 1).rev() {
                    state.queue.push_front(*chunk);
                }
            }
            state.found.extend(found.found);
        }
        spent
    }

    fn fire_timers(&mut self) -> Result<(), ModuleError> {
        if self.timers.is_empty() {
            return Ok(());
        }
        let now = timers::now_ms();
        let due = self.timers.due(now, MAX_FIRE_PER_TICK);
        if due.is_empty() {
            return Ok(());
        }
        let positions: Vec<Pos> = due.iter().map(|(pos, _)| *pos).collect();
        let voxels = match self.host.call(&GetVoxels { positions }) {
            Ok(voxels) => voxels,
            Err(error) => {
                self.warn("reading the voxels of due timers", &error);
                return Ok(());
            }
        };
        let mut fired: BTreeMap<String, Vec<FiredTimer>> = BTreeMap::new();
        for ((pos, module), voxel) in due.into_iter().zip(voxels) {
            let Some(timer) = self.timers.remove(&module, pos) else {
                continue;
            };
            let Some(voxel) = voxel else {
                continue;
            };
            if VoxelInstance(voxel).type_id() != timer.voxel_type {
                continue;
            }
            fired.entry(module).or_default().push(FiredTimer {
                pos,
                tag: timer.tag,
                voxel,
                late_seconds: (now - timer.deadline_ms).max(0) as f64 / 1000.0,
            });
        }
        for (module, timers) in fired {
            self.timers_fired += timers.len() as u64;
            let payload = buildat_interface::encode(&TimersFired { timers })?;
            self.host.emit_event(&timers_event(&module), &payload)?;
        }
        Ok(())
    }

    /// Writes the chunks whose timers changed (removing emptied ones).
    fn write_timers(&mut self) -> Result<(), ModuleError> {
        let dirty = self.timers.take_dirty();
        if dirty.is_empty() {
            return Ok(());
        }
        let size = self.timers.section_size();
        let mut writes = Vec::with_capacity(dirty.len());
        for (chunk, timers) in &dirty {
            writes.push(ValueWrite {
                space: timers::SPACE.to_string(),
                key: timers::chunk_key(size, *chunk),
                value: if timers.is_empty() {
                    None
                } else {
                    Some(timers::encode_chunk(timers)?)
                },
                only_if_absent: false,
            });
        }
        for part in writes.chunks(MAX_VALUE_WRITES) {
            let written = self.host.call(&PutValues {
                writes: part.to_vec(),
            });
            if !matches!(written, Ok(true)) {
                self.timers.mark_dirty(dirty.iter().map(|(c, _)| *c));
                return match written {
                    Err(error) => Err(error),
                    _ => Err(ModuleError::msg("the timers were not written")),
                };
            }
        }
        Ok(())
    }

    /// Reads a section's stored timers into memory (once).
    fn load_section(&mut self, section: Pos) -> Result<(), ModuleError> {
        if self.timers.is_loaded(section) {
            return Ok(());
        }
        let prefix = timers::section_prefix(section);
        let mut chunks = Vec::new();
        let mut after = None;
        loop {
            let page = self.host.call(&ListValues {
                space: timers::SPACE.to_string(),
                key_prefix: prefix.clone(),
                after: after.clone(),
                limit: MAX_VALUES_LISTED,
            })?;
            let full = page.len() as u32 >= MAX_VALUES_LISTED;
            for value in page {
                let chunk = value.key[prefix.len()..]
                    .split(',')
                    .map(|n| n.parse::<i32>().ok())
                    .collect::<Option<Vec<i32>>>()
                    .and_then(|v| <[i32; 3]>::try_from(v).ok());
                match (chunk, timers::decode_chunk(&value.value)) {
                    (Some(chunk), Some(timers)) => chunks.push((chunk, timers)),
                    _ => log::warn!(
                        "timers stored at {} do not read: left as they are",
                        value.key
                    ),
                }
                after = Some(value.key);
            }
            if !full {
                break;
            }
        }
        self.timers.load_section(section, chunks);
        Ok(())
    }

    fn sections_loaded(&mut self, sections: &[Pos]) -> Result<(), ModuleError> {
        for section in sections {
            if let Err(error) = self.load_section(*section) {
                self.warn(
                    &format!("reading the timers of section {section:?}"),
                    &error,
                );
            }
        }
        Ok(())
    }

    fn sections_unloaded(&mut self, sections: &[Pos]) -> Result<(), ModuleError> {
        if let Err(error) = self.write_timers() {
            // Kept in memory, dirty: written when storage works again.
            self.warn("writing timers before their sections leave", &error);
            return Ok(());
        }
        for section in sections {
            self.timers.unload_section(*section);
        }
        Ok(())
    }

    fn voxels_changed(&mut self, changed: &VoxelsChanged) -> Result<(), ModuleError> {
        if self.timers.is_empty() {
            return Ok(());
        }
        for change in &changed.changes {
            let now = VoxelInstance(change.now).type_id();
            if VoxelInstance(change.was).type_id() != now {
                self.timers.voxel_changed(change.pos, now);
            }
        }
        Ok(())
    }

    fn set_timers(&mut self, set: SetTimers) -> Result<(), ModuleError> {
        if set.timers.len() > MAX_TIMERS_PER_CALL {
            return Err(ModuleError::msg(format!(
                "set_timers of {} timers: at most {MAX_TIMERS_PER_CALL}",
                set.timers.len()
            )));
        }
        if set.module.is_empty() {
            return Err(ModuleError::msg("set_timers needs a module"));
        }
        let positions: Vec<Pos> = set.timers.iter().map(|t| t.pos).collect();
        let voxels = self.host.call(&GetVoxels { positions })?;
        let now = timers::now_ms();
        let mut failed = None;
        for (timer, voxel) in set.timers.into_iter().zip(voxels) {
            let Some(voxel) = voxel else {
                continue;
            };
            let deadline = match timers::deadline(now, timer.seconds) {
                Ok(deadline) => deadline,
                Err(error) => {
                    failed = Some(ModuleError::msg(error.to_string()));
                    break;
                }
            };
            self.load_section(self.timers.section_of(timer.pos))?;
            let set = self.timers.set(
                &set.module,
                timer.pos,
                Timer {
                    deadline_ms: deadline,
                    tag: timer.tag,
                    voxel_type: VoxelInstance(voxel).type_id(),
                },
            );
            if let Err(error) = set {
                failed = Some(ModuleError::msg(error.to_string()));
                break;
            }
        }
        self.write_timers()?;
        match failed {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }

    fn cancel_timers(&mut self, cancel: CancelTimers) -> Result<u32, ModuleError> {
        let mut cancelled = 0;
        for pos in cancel.positions {
            if self.timers.remove(&cancel.module, pos).is_some() {
                cancelled += 1;
            }
        }
        self.write_timers()?;
        Ok(cancelled)
    }

    fn get_timers(&self, get: &GetTimers) -> Vec<Option<f64>> {
        let now = timers::now_ms();
        get.positions
            .iter()
            .map(|pos| {
                self.timers
                    .get(&get.module, *pos)
                    .map(|t| (t.deadline_ms - now) as f64 / 1000.0)
            })
            .collect()
    }

    fn stats(&mut self) -> ActiveStats {
        let mut times: Vec<u64> = self.tick_times.iter().copied().collect();
        times.sort_unstable();
        let p99 = if times.is_empty() {
            0
        } else {
            times[(times.len() * 99 / 100).min(times.len() - 1)]
        };
        ActiveStats {
            abms: self.abms.len() as u32,
            active_chunks: self.area.len() as u32,
            backlog_chunks: self.abms.backlog() as u32,
            budget_micros: self.budget.as_micros() as u64,
            last_tick_micros: self.last_tick_micros,
            p99_tick_micros: p99,
            ticks_over_budget: self.ticks_over_budget,
            voxels_delivered: self.voxels_delivered,
            timers_loaded: self.timers.len() as u64,
            timers_fired: self.timers_fired,
        }
    }

    /// The console's `active`.
    fn report(&mut self) -> String {
        let s = self.stats();
        format!(
            "active: {} abms{}, {} active chunks ({} players), backlog {} chunks, tick {} us \
             (p99 {} us, budget {} us, {} ticks over), {} voxels delivered, timers {} loaded \
             {} fired",
            s.abms,
            if self.enabled { "" } else { " (off)" },
            s.active_chunks,
            self.area.players(),
            s.backlog_chunks,
            s.last_tick_micros,
            s.p99_tick_micros,
            s.budget_micros,
            s.ticks_over_budget,
            s.voxels_delivered,
            s.timers_loaded,
            s.timers_fired
        )
    }
}

export_module!(Active);
