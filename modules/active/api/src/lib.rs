//! `buildat-active-api`: the `active` module's public API: active block
//! modifiers ([`Abm`]: "every N seconds, for the loaded voxels of these
//! names or groups near players, with chance 1/k, with these neighbours",
//! delivered in batches as [`AbmBatch`] on `active:abm/<module>`) and
//! voxel timers ([`VoxelTimer`]: bound to the voxel at their position,
//! kept with its section, fired as [`TimersFired`] on
//! `active:timers/<module>`, late ones once), with their calls and the
//! module's stats ([`ActiveStats`]).
//!
//! Owns: the calls' and events' types and names. Does not own: the
//! active area, the budget, where timers are kept (the `active` module) or
//! the voxels (`voxelworld`).

use buildat_voxel::geometry::Pos;
use serde::{Deserialize, Serialize};

/// The active module's name.
pub const MODULE: &str = "active";

/// An active block modifier: the voxels it matches in the active area (the
/// chunks near players) are delivered to `module` every
/// `interval_seconds`, each with chance 1/`chance`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Abm {
    /// Unique, by convention "module:what"; registering the same name again replaces it.
    pub name: String,
    /// The module told of the voxels found: event `active:abm/<module>`.
    pub module: String,
    /// Block names ("dirt") or item groups ("group:soil", from the items registry when loaded);
    /// a block name matches all its voxel types (segments, rotations).
    pub nodes: Vec<String>,
    /// Same form; empty: no condition; else at least one face neighbour must be one of these.
    pub neighbours: Vec<String>,
    /// Seconds between two rounds over the active area (>= 0.1).
    pub interval_seconds: f64,
    /// Each matching voxel is delivered with chance 1/chance (0 or 1: every one).
    pub chance: u32,
}

/// Shortest [`Abm::interval_seconds`].
pub const MIN_INTERVAL_SECONDS: f64 = 0.1;

/// Call: register (or replace, by name) an ABM.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RegisterAbm {
    pub abm: Abm,
}

/// Call: remove an ABM; answers whether there was one of that name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RemoveAbm {
    pub name: String,
}

/// A timer on one voxel: it fires `seconds` from now (wall clock), unless
/// the voxel there is replaced by another type first (then it is dropped).
/// One timer per module and position: setting another replaces it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VoxelTimer {
    pub pos: Pos,
    pub seconds: f64,
    /// The module's own word for what to do ("grow").
    pub tag: String,
}

/// Call: set timers of `module` (whose section must be in memory: a timer
/// on a voxel not in memory is not set).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SetTimers {
    pub module: String,
    pub timers: Vec<VoxelTimer>,
}

/// Most timers one [`SetTimers`] sets.
pub const MAX_TIMERS_PER_CALL: usize = 4096;

/// Call: cancel `module`'s timers at these positions; answers how many
/// there were.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CancelTimers {
    pub module: String,
    pub positions: Vec<Pos>,
}

/// Call: the seconds left of `module`'s timers at these positions (`None`:
/// no timer there, or its section is not in memory; negative: late).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GetTimers {
    pub module: String,
    pub positions: Vec<Pos>,
}

/// Call: the module's counters.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GetActiveStats {}

/// What the active module did and has left to do.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ActiveStats {
    /// ABMs registered.
    pub abms: u32,
    /// Chunks in the active area (near players).
    pub active_chunks: u32,
    /// Chunks left of the ABMs' current rounds (what did not fit yet).
    pub backlog_chunks: u32,
    /// The budget per tick.
    pub budget_micros: u64,
    /// Time the last tick spent scanning.
    pub last_tick_micros: u64,
    /// The 99th percentile of the recent ticks' time.
    pub p99_tick_micros: u64,
    /// Ticks that went over the budget (a chunk's scan is not cut short).
    pub ticks_over_budget: u64,
    /// Voxels delivered to ABMs' modules since the start.
    pub voxels_delivered: u64,
    /// Timers in memory (those of sections in memory).
    pub timers_loaded: u64,
    /// Timers fired since the start.
    pub timers_fired: u64,
}

/// The event an ABM's module is told its voxels on: `active:abm/<module>`
/// (payload [`AbmBatch`]).
pub fn abm_event(module: &str) -> String {
    format!("active:abm/{module}")
}

/// Voxels an ABM found (position and voxel, with game bits), in one batch
/// per ABM and tick.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AbmBatch {
    /// The ABM's name.
    pub name: String,
    pub voxels: Vec<(Pos, u32)>,
}

/// The event a module's timers fire on: `active:timers/<module>` (payload
/// [`TimersFired`]).
pub fn timers_event(module: &str) -> String {
    format!("active:timers/{module}")
}

/// Timers that fired (each once), in one event per module and tick.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimersFired {
    pub timers: Vec<FiredTimer>,
}

/// One fired timer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FiredTimer {
    pub pos: Pos,
    pub tag: String,
    /// The voxel there now (the type the timer was bound to).
    pub voxel: u32,
    /// How long after its deadline it fired (a section loaded after its
    /// timer's deadline: the time it was away).
    pub late_seconds: f64,
}

buildat_interface::calls! {
    module MODULE;
    RegisterAbm = "register_abm" -> ();
    RemoveAbm = "remove_abm" -> bool;
    SetTimers = "set_timers" -> ();
    CancelTimers = "cancel_timers" -> u32;
    GetTimers = "get_timers" -> Vec<Option<f64>>;
    GetActiveStats = "get_active_stats" -> ActiveStats;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_names_carry_the_module() {
        assert_eq!(abm_event("survival"), "active:abm/survival");
        assert_eq!(timers_event("survival"), "active:timers/survival");
    }
}
