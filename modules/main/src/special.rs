//! The default game's special voxels: what its own blocks do when the
//! world changes around them, told by `voxelworld` as
//! `voxelworld:special/main` (its blocks name `main` as their
//! `handler_module`).
//!
//! Owns: the torch's rule (a torch needs a physically solid voxel below or
//! beside it; when it is placed without one, or the last one goes, it drops:
//! it is removed, with an `EditVoxel` that replaces only that very torch).
//! Does not own: which voxels changed (voxelworld tells, once per commit),
//! players, or sharing edits with them (the world stream sends the removed
//! torch to whoever holds its chunk).

use std::collections::BTreeSet;
use std::sync::LazyLock;

use buildat_interface::{ModuleError, log};
use buildat_voxel::geometry::Pos;
use buildat_voxel::{AIR, VoxelInstance};
use buildat_voxelworld_api::{
    EditOutcome, EditVoxel, MAX_VOXELS_PER_CALL, Replace, SpecialCause, SpecialVoxel,
    SpecialVoxels, special_voxel_event,
};

use crate::Game;

/// The handler module the game's special blocks name.
pub const HANDLER: &str = "main";

/// The event the game's special voxels are told through.
pub static EVENT: LazyLock<String> = LazyLock::new(|| special_voxel_event(HANDLER));

/// Blocks that need a solid voxel below or beside them.
const NEEDS_SUPPORT: &[&str] = &["torch"];

/// Where a voxel at `pos` may be held from: below it and its four sides
/// (not above: nothing hangs).
pub fn supports(pos: Pos) -> [Pos; 5] {
    let [x, y, z] = pos;
    [
        [x, y.saturating_sub(1), z],
        [x.saturating_add(1), y, z],
        [x.saturating_sub(1), y, z],
        [x, y, z.saturating_add(1)],
        [x, y, z.saturating_sub(1)],
    ]
}

/// Whether what happened may have taken a voxel's support away: it was
/// placed (with or without support), or a voxel it may stand on or lean
/// against became one that is not solid (`solid`: whether a voxel is).
pub fn may_fall(special: &SpecialVoxel, solid: impl Fn(u32) -> bool) -> bool {
    match special.cause {
        SpecialCause::Placed => true,
        SpecialCause::Dug => false,
        SpecialCause::NeighbourChanged { neighbour, now, .. } => {
            supports(special.pos).contains(&neighbour) && !solid(now)
        }
    }
}

/// Whether a voxel at `pos` is held, `solid` saying whether the voxel at a
/// position is solid (`None`: not generated, which holds it: nothing drops
/// for a world not there yet).
pub fn is_held(pos: Pos, solid: impl Fn(Pos) -> Option<bool>) -> bool {
    supports(pos)
        .iter()
        .any(|support| solid(*support).unwrap_or(true))
}

impl Game {
    /// `voxelworld:special/main`: drops the torches that lost their support.
    pub(crate) fn on_special_voxels(&mut self, told: SpecialVoxels) -> Result<(), ModuleError> {
        let mut candidates = Vec::new();
        let mut seen = BTreeSet::new();
        for special in told.voxels {
            let type_id = VoxelInstance(special.voxel).type_id();
            if self.registry.get(type_id).is_none() {
                self.refresh_registry()?;
            }
            let needs_support = self
                .registry
                .get(type_id)
                .is_some_and(|d| NEEDS_SUPPORT.contains(&d.name.block_name.as_str()));
            let registry = &self.registry;
            let solid = |voxel: u32| {
                registry
                    .get(VoxelInstance(voxel).type_id())
                    .is_some_and(|d| d.physically_solid)
            };
            if needs_support && may_fall(&special, solid) && seen.insert(special.pos) {
                candidates.push((special.pos, special.voxel));
            }
        }
        // One look at the world per batch of candidates.
        for batch in candidates.chunks(MAX_VOXELS_PER_CALL / 5) {
            let positions = batch.iter().flat_map(|(pos, _)| supports(*pos)).collect();
            let solid = self.solidity(positions)?;
            for &(pos, voxel) in batch {
                if is_held(pos, |p| solid.get(&p).copied().flatten()) {
                    continue;
                }
                let outcome = self.host.call(&EditVoxel {
                    pos,
                    voxel: AIR,
                    replace: Replace::Exactly(voxel),
                    save: true,
                    by: buildat_voxelworld_api::by_module("main"),
                })?;
                match outcome {
                    EditOutcome::Edited { .. } => log::debug!("a torch at {pos:?} dropped"),
                    // Somebody changed it meanwhile: theirs stays.
                    EditOutcome::Refused { .. } | EditOutcome::NotGenerated => {}
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STONE: u32 = 2;
    const TORCH: u32 = 3;

    fn solid(voxel: u32) -> bool {
        voxel == STONE
    }

    fn told(cause: SpecialCause) -> SpecialVoxel {
        SpecialVoxel {
            pos: [0, 10, 0],
            voxel: TORCH,
            previous: TORCH,
            cause,
            by: None,
        }
    }

    #[test]
    fn a_torch_looks_again_when_placed_or_when_what_holds_it_goes() {
        let changed = |neighbour, now| {
            told(SpecialCause::NeighbourChanged {
                neighbour,
                was: STONE,
                now,
            })
        };
        assert!(may_fall(&told(SpecialCause::Placed), solid));
        assert!(!may_fall(&told(SpecialCause::Dug), solid), "gone already");
        assert!(may_fall(&changed([0, 9, 0], AIR), solid), "dug below");
        assert!(may_fall(&changed([1, 10, 0], AIR), solid), "dug beside");
        assert!(
            !may_fall(&changed([0, 11, 0], AIR), solid),
            "above holds nothing"
        );
        assert!(!may_fall(&changed([0, 9, 0], STONE), solid), "still solid");
    }

    #[test]
    fn a_torch_is_held_by_a_solid_voxel_below_or_beside_it() {
        let at = [0, 10, 0];
        let only = |held: Pos| move |p: Pos| Some(p == held);
        assert!(is_held(at, only([0, 9, 0])));
        assert!(is_held(at, only([0, 10, -1])));
        assert!(!is_held(at, only([0, 11, 0])), "not from above");
        assert!(!is_held(at, |_| Some(false)));
        assert!(is_held(at, |_| None), "a world not generated holds it");
    }
}
