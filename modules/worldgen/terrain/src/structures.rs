//! Structures that grow on the terrain and cross chunk and section borders:
//! trees, pines and cacti, and ruined watchtowers; a tree's or a pine's
//! voxels alone ([`tree_voxels`], [`pine_voxels`]) for what grows one later
//! (a sapling).
//!
//! Owns: where structures stand and what voxels they are. A structure is
//! found from a grid of cells (one candidate per cell, at a hashed spot,
//! kept or not by the biome of its column), so whether it exists and how it
//! looks depend only on the seed and the cell, never on which chunks were
//! generated before: a chunk generated alone holds exactly the voxels it
//! holds when generated beside its neighbours. Does not own: the terrain
//! under them (`lib.rs`, `column.rs`).

use crate::column::{Biome, column};
use crate::noise::hash;
use crate::{AIR, CACTUS, COBBLESTONE, LEAVES, MOSSY_COBBLESTONE, PINE_LEAVES, WOOD};
use buildat_voxel::geometry::Pos;

/// How a structure's voxel is written over what is there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Write {
    /// Always (walls, the air inside a tower).
    Replace,
    /// Only where there is air (leaves, trunks).
    IntoAir,
}

/// A structure kind with its placement grid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Broad-leaved tree: grassland (sparse) and warm forest.
    Tree,
    /// Narrow conifer: cool forest.
    Pine,
    /// Desert cactus.
    Cactus,
    /// A ruined cobblestone watchtower, 9 × 9 and up to 16 high, on land.
    Tower,
}

impl Kind {
    /// Side of the placement cell in voxels (one candidate per cell).
    fn cell(self) -> i32 {
        match self {
            Kind::Tree | Kind::Pine | Kind::Cactus => 7,
            Kind::Tower => 160,
        }
    }

    /// How far the structure reaches from its anchor on x and z.
    fn reach(self) -> i32 {
        match self {
            Kind::Tree => 2,
            Kind::Pine => 2,
            Kind::Cactus => 0,
            Kind::Tower => 4,
        }
    }

    /// How far above its anchor and below it (foundations) it reaches.
    fn vertical(self) -> (i32, i32) {
        match self {
            Kind::Tree => (0, 8),
            Kind::Pine => (0, 10),
            Kind::Cactus => (0, 4),
            Kind::Tower => (-12, 17),
        }
    }

    fn salt(self) -> u64 {
        match self {
            Kind::Tree | Kind::Pine | Kind::Cactus => 0x40,
            Kind::Tower => 0x41,
        }
    }
}

/// One placed structure: its kind, the voxel its base stands on (the first
/// air voxel above the ground at its anchor column) and its variation bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placement {
    pub kind: Kind,
    pub base: Pos,
    pub variant: u64,
}

/// Every structure that may write a voxel inside the box from `min`
/// (inclusive) to `max` (exclusive), in the one order every chunk applies
/// them: towers first, then plants, each by cell.
pub fn placements_touching(seed: u64, min: Pos, max: Pos) -> Vec<Placement> {
    let mut found = Vec::new();
    for grid in [Kind::Tower, Kind::Tree] {
        let (cell, reach) = (grid.cell(), grid.reach().max(Kind::Pine.reach()));
        let cells = |low: i32, high: i32| {
            (low - reach).div_euclid(cell)..=(high - 1 + reach).div_euclid(cell)
        };
        for cz in cells(min[2], max[2]) {
            for cx in cells(min[0], max[0]) {
                let Some(placement) = placement_in_cell(seed, grid, cx, cz) else {
                    continue;
                };
                let (below, above) = placement.kind.vertical();
                let reach = placement.kind.reach();
                let [x, y, z] = placement.base;
                let touches = x + reach >= min[0]
                    && x - reach < max[0]
                    && z + reach >= min[2]
                    && z - reach < max[2]
                    && y + above >= min[1]
                    && y + below < max[1];
                if touches {
                    found.push(placement);
                }
            }
        }
    }
    found
}

/// The structure of grid `grid` in cell (`cx`, `cz`), if one stands there.
fn placement_in_cell(seed: u64, grid: Kind, cx: i32, cz: i32) -> Option<Placement> {
    let h = hash(seed ^ grid.salt(), cx, 0, cz);
    let cell = grid.cell();
    let margin = grid.reach();
    let span = (cell - 2 * margin).max(1) as u64;
    let x = cx * cell + margin + (h % span) as i32;
    let z = cz * cell + margin + ((h >> 16) % span) as i32;
    let chance = ((h >> 32) % 1000) as u32;
    let variant = h >> 40;
    let ground = column(seed, x, z);
    if ground.is_under_water() {
        return None;
    }
    let kind = match grid {
        Kind::Tower => {
            let allowed = matches!(
                ground.biome,
                Biome::Grassland | Biome::Forest | Biome::Desert
            );
            (allowed && chance < 450).then_some(Kind::Tower)?
        }
        _ => match ground.biome {
            Biome::Forest if ground.temperature < 0.42 => (chance < 700).then_some(Kind::Pine)?,
            Biome::Forest => (chance < 700).then_some(Kind::Tree)?,
            Biome::Grassland => (chance < 70).then_some(Kind::Tree)?,
            Biome::Desert => (chance < 120).then_some(Kind::Cactus)?,
            _ => return None,
        },
    };
    let base_y = if kind == Kind::Tower {
        // Stands on the highest ground under its footprint; its foundation
        // fills down to the lowest.
        let mut top = i32::MIN;
        for dz in -4..=4 {
            for dx in -4..=4 {
                top = top.max(column(seed, x + dx, z + dz).height);
            }
        }
        top + 1
    } else {
        ground.height + 1
    };
    Some(Placement {
        kind,
        base: [x, base_y, z],
        variant,
    })
}

/// Writes `placement`'s voxels through `put(position, voxel, how)`.
pub fn stamp(placement: &Placement, put: &mut impl FnMut(Pos, u32, Write)) {
    let [x, y, z] = placement.base;
    let v = placement.variant;
    match placement.kind {
        Kind::Tree => {
            let trunk = 4 + (v % 3) as i32;
            for dy in 0..trunk {
                put([x, y + dy, z], WOOD, Write::IntoAir);
            }
            let top = y + trunk;
            for dy in -2..=1i32 {
                let radius: i32 = if dy == 1 { 1 } else { 2 };
                for dz in -radius..=radius {
                    for dx in -radius..=radius {
                        let corner = dx.abs() == radius && dz.abs() == radius;
                        // Corners are ragged, chosen per voxel from the variant.
                        if corner && (hash(v, dx, dy, dz) & 1 == 0 || dy == 1) {
                            continue;
                        }
                        put([x + dx, top + dy, z + dz], LEAVES, Write::IntoAir);
                    }
                }
            }
            put([x, top + 2, z], LEAVES, Write::IntoAir);
        }
        Kind::Pine => {
            let trunk = 7 + (v % 3) as i32;
            for dy in 0..trunk {
                put([x, y + dy, z], WOOD, Write::IntoAir);
            }
            // A cone of rings, widest low, narrowing to a tip above the trunk.
            for dy in 2..=trunk + 1 {
                let radius: i32 = match trunk + 1 - dy {
                    0 => 0,
                    from_top if from_top % 2 == 1 => 1,
                    _ => 2,
                };
                for dz in -radius..=radius {
                    for dx in -radius..=radius {
                        if dx.abs() + dz.abs() <= radius + 1 {
                            put([x + dx, y + dy, z + dz], PINE_LEAVES, Write::IntoAir);
                        }
                    }
                }
            }
        }
        Kind::Cactus => {
            for dy in 0..2 + (v % 3) as i32 {
                put([x, y + dy, z], CACTUS, Write::IntoAir);
            }
        }
        Kind::Tower => stamp_tower(placement, put),
    }
}

/// The voxels of the broad-leaved tree the generator stamps standing on
/// `base` (the voxel above the ground: its trunk's lowest) with variation
/// bits `variant`, as block names: the trunk from the base up first, then
/// the leaves. The same voxels [`stamp`] writes for a [`Kind::Tree`] (both
/// only into air), so a sapling (the `survival` module) grows into the
/// worldgen's tree.
pub fn tree_voxels(base: Pos, variant: u64) -> Vec<(Pos, &'static str)> {
    plant_voxels(Kind::Tree, base, variant)
}

/// The voxels of the pine the generator stamps on `base`, as
/// [`tree_voxels`] (trunk first, then its `pine_leaves`).
pub fn pine_voxels(base: Pos, variant: u64) -> Vec<(Pos, &'static str)> {
    plant_voxels(Kind::Pine, base, variant)
}

fn plant_voxels(kind: Kind, base: Pos, variant: u64) -> Vec<(Pos, &'static str)> {
    let placement = Placement {
        kind,
        base,
        variant,
    };
    let mut voxels = Vec::new();
    stamp(&placement, &mut |pos, voxel, _| {
        voxels.push((pos, crate::PALETTE[voxel as usize]));
    });
    voxels
}

/// A hollow 9 × 9 tower of cobblestone on a solid foundation, with a door,
/// two floors, battlements, and a ruined top: its height and the stones
/// that have fallen vary by variant.
fn stamp_tower(placement: &Placement, put: &mut impl FnMut(Pos, u32, Write)) {
    let [x, y, z] = placement.base;
    let v = placement.variant;
    let height = 11 + (v % 4) as i32;
    let door_side = (v >> 4) % 4;
    let stone = |dx: i32, dy: i32, dz: i32| {
        if hash(v, dx, dy, dz).is_multiple_of(5) {
            MOSSY_COBBLESTONE
        } else {
            COBBLESTONE
        }
    };
    // Foundation down to the lowest ground of the footprint (at most 12).
    for dy in -12..0 {
        for dz in -4..=4 {
            for dx in -4..=4 {
                put([x + dx, y + dy, z + dz], stone(dx, dy, dz), Write::IntoAir);
            }
        }
    }
    for dy in 0..=height + 1 {
        for dz in -4..=4i32 {
            for dx in -4..=4i32 {
                let wall = dx.abs() == 4 || dz.abs() == 4;
                let floor = dy == 0 || dy == 6;
                let door = dy > 0
                    && dy < 4
                    && match door_side {
                        0 => dz == -4 && dx.abs() <= 1,
                        1 => dz == 4 && dx.abs() <= 1,
                        2 => dx == -4 && dz.abs() <= 1,
                        _ => dx == 4 && dz.abs() <= 1,
                    };
                // Battlements: every other stone of the wall's top row.
                let battlement = dy == height + 1;
                // Ruin: the top rows lose stones, more the higher.
                let fallen = dy > height - 3 && hash(v ^ 7, dx, dy, dz).is_multiple_of(4);
                let ladder_hole = dy == 6 && dx == 2 && dz == 2;
                let voxel = if battlement {
                    if wall && (dx + dz) % 2 == 0 && !fallen {
                        stone(dx, dy, dz)
                    } else {
                        AIR
                    }
                } else if (wall && !door && !fallen) || (floor && !wall && !ladder_hole) {
                    stone(dx, dy, dz)
                } else {
                    AIR
                };
                put([x + dx, y + dy, z + dz], voxel, Write::Replace);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_is_placed_somewhere() {
        let mut kinds = std::collections::HashSet::new();
        for step in 0..6 {
            let min = [-3000 + step * 1000, -64, -3000];
            let max = [min[0] + 1000, 160, 3000];
            for placement in placements_touching(1, min, max) {
                kinds.insert(format!("{:?}", placement.kind));
            }
        }
        for kind in ["Tree", "Pine", "Cactus", "Tower"] {
            assert!(kinds.contains(kind), "no {kind} in {kinds:?}");
        }
    }

    #[test]
    fn a_tree_is_its_trunk_from_the_base_up_then_leaves_as_stamped() {
        for variant in [0u64, 1, 2, 0xdead_beef] {
            let base = [10, 20, -30];
            let tree = tree_voxels(base, variant);
            let trunk = 4 + (variant % 3) as i32;
            let wood: Vec<Pos> = tree
                .iter()
                .filter(|(_, name)| *name == "wood")
                .map(|(pos, _)| *pos)
                .collect();
            let expected: Vec<Pos> = (0..trunk).map(|dy| [10, 20 + dy, -30]).collect();
            assert_eq!(wood, expected, "the trunk first, from the base up");
            assert_eq!(
                tree[..wood.len()].iter().map(|v| v.0).collect::<Vec<_>>(),
                wood
            );
            assert!(tree[wood.len()..].iter().all(|(_, name)| *name == "leaves"));
            assert!(tree.len() > 40, "a crown of leaves: {}", tree.len());
            // What the generator stamps for the same placement.
            let mut stamped = Vec::new();
            let placement = Placement {
                kind: Kind::Tree,
                base,
                variant,
            };
            stamp(&placement, &mut |pos, voxel, write| {
                assert_eq!(write, Write::IntoAir);
                stamped.push((pos, crate::PALETTE[voxel as usize]));
            });
            assert_eq!(tree, stamped);
        }
        assert_ne!(
            tree_voxels([0; 3], 0),
            tree_voxels([0; 3], 1),
            "variants differ"
        );
    }

    #[test]
    fn a_pine_is_its_trunk_then_pine_leaves_as_stamped() {
        let base = [3, 4, 5];
        let pine = pine_voxels(base, 7);
        let trunk = 7 + (7 % 3) as usize;
        assert!(pine[..trunk].iter().all(|(_, name)| *name == "wood"));
        assert_eq!(pine[0].0, base);
        assert!(pine[trunk..].iter().all(|(_, name)| *name == "pine_leaves"));
        let mut stamped = Vec::new();
        let placement = Placement {
            kind: Kind::Pine,
            base,
            variant: 7,
        };
        stamp(&placement, &mut |pos, voxel, _| {
            stamped.push((pos, crate::PALETTE[voxel as usize]));
        });
        assert_eq!(pine, stamped);
    }

    #[test]
    fn a_structure_stays_within_its_declared_reach() {
        for kind in [Kind::Tree, Kind::Pine, Kind::Cactus, Kind::Tower] {
            for variant in 0..64u64 {
                let placement = Placement {
                    kind,
                    base: [0, 0, 0],
                    variant: variant.wrapping_mul(0x9e37_79b9),
                };
                let (below, above) = kind.vertical();
                stamp(&placement, &mut |[x, y, z], _, _| {
                    assert!(
                        x.abs() <= kind.reach() && z.abs() <= kind.reach(),
                        "{kind:?} {x} {z}"
                    );
                    assert!((below..=above).contains(&y), "{kind:?} y {y}");
                });
            }
        }
    }
}
