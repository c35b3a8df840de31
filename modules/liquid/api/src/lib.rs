//! `buildat-liquid-api`: the `liquid` module's public API: the liquid block
//! names ([`LIQUIDS`]: what a drowning check looks for), how a flowing
//! voxel's level is stored ([`level_of`]) and the stats call
//! ([`GetLiquidStats`]).
//!
//! Owns: the names and the level encoding every module agrees on. Does not
//! own: the flow rules or the queue (`modules/liquid`), the blocks'
//! definitions (registered by `liquid`; the `water` source by `worldgen`).

use buildat_voxel::VoxelInstance;
use serde::{Deserialize, Serialize};

/// The liquid module's name.
pub const MODULE: &str = "liquid";
/// The water source: worldgen's block (registered by `liquid` when a world
/// has no worldgen).
pub const WATER: &str = "water";
/// Flowing water, its level in the game bits (registered by `liquid`).
pub const WATER_FLOWING: &str = "water_flowing";
/// The lava source (registered by `liquid`).
pub const LAVA: &str = "lava";
/// Flowing lava, its level in the game bits (registered by `liquid`).
pub const LAVA_FLOWING: &str = "lava_flowing";
/// Every liquid block name (drowning checks these).
pub const LIQUIDS: [&str; 4] = [WATER, WATER_FLOWING, LAVA, LAVA_FLOWING];
/// A flowing voxel's level is its game bits: 1..=7 (7 beside its source,
/// and under a fall).
pub const MAX_LEVEL: u8 = 7;

/// Whether a block name (a voxel's canonical name before any `@`) is a
/// liquid.
pub fn is_liquid(block_name: &str) -> bool {
    let block = block_name
        .split_once('@')
        .map_or(block_name, |(block, _)| block);
    LIQUIDS.contains(&block)
}

/// The level of a flowing voxel (its game bits, 1..=[`MAX_LEVEL`] when it
/// is a flowing liquid; a source's are 0).
pub fn level_of(voxel: u32) -> u8 {
    VoxelInstance(voxel).game_bits()
}

/// Call `get_liquid_stats`: how the flow keeps up.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GetLiquidStats {}

/// The answer to [`GetLiquidStats`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LiquidStats {
    /// Positions waiting to be looked at again.
    pub queued: u64,
    /// Positions looked at in the last step.
    pub updated_last_tick: u32,
    /// Most positions one step looks at (`liquid.updates_per_tick`).
    pub budget_per_tick: u32,
    /// Positions looked at since the module started.
    pub updated_total: u64,
    /// Positions that did not fit in the queue (`liquid.max_queue`): never
    /// looked at for that change.
    pub dropped: u64,
    /// Voxels the flow changed since the module started.
    #[serde(default)]
    pub changed_total: u64,
    /// The longest the queue has been.
    #[serde(default)]
    pub queue_peak: u64,
    /// The queue's cap (`liquid.max_queue`).
    #[serde(default)]
    pub max_queue: u64,
}

buildat_interface::calls! {
    module MODULE;
    GetLiquidStats = "get_liquid_stats" -> LiquidStats;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn liquids_are_known_by_block_name_and_levels_are_game_bits() {
        assert!(is_liquid("water"));
        assert!(is_liquid("lava_flowing"));
        assert!(is_liquid("water_flowing@0,0,0/0,0"));
        assert!(!is_liquid("stone"));
        assert!(!is_liquid("waterfall"));
        assert_eq!(level_of(VoxelInstance::new(42, 5).0), 5);
        assert_eq!(level_of(VoxelInstance::new(42, 0).0), 0);
    }
}
