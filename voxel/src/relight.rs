//! Light updated in place after voxels change: only the voxels whose light
//! the change can alter are visited, instead of lighting whole chunks
//! again ([`crate::light::light_chunk`]).
//!
//! Owns: the update ([`relight_in_place`]): for each channel (sunlight,
//! block light) the light that may have come through a changed voxel is
//! taken away, following the voxels that could have got it from there
//! (a neighbour darker than the one it is reached from, or full sunlight
//! straight below full sunlight), then the light around what was taken
//! away, and each light source in it, spreads back in under the same rules
//! as [`crate::light`]. The result is exactly what lighting everything
//! again gives, as long as every voxel the update reaches is one the
//! world lets it read ([`LitWorld::get`]); when it reaches one it may not
//! (not loaded, or lit by another rule at the edge of the loaded world),
//! or grows past its limit, it stops and says so, and the caller lights
//! whole chunks instead. Pure: the world is behind a trait, nothing is
//! stored here.
//! Does not own: where light is kept or which voxels may be read (the
//! caller: `voxelworld` stages the chunks it touches and keeps them only
//! if the update finished).

use std::collections::VecDeque;

use crate::VoxelLight;
use crate::geometry::Pos;
use crate::light::{MAX_LIGHT, OPAQUE, block, pack, sun};

/// The lit world an update reads and writes, by world voxel position.
pub trait LitWorld {
    /// A voxel's light properties (as it is now) and its light byte;
    /// `None` where the update may not go.
    fn get(&mut self, voxel: Pos) -> Option<(VoxelLight, u8)>;
    /// Sets a voxel's light byte (only called on voxels `get` answered).
    fn set(&mut self, voxel: Pos, light: u8);
}

/// Why an update stopped (the caller then lights whole chunks).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RelightError {
    #[error("the light change reaches voxel {0:?}, which cannot be updated in place")]
    OutOfReach(Pos),
    #[error("the light change reaches more than {0} voxels")]
    TooLarge(usize),
}

/// The six neighbours: offset and whether it is the one below.
const NEIGHBOURS: [(Pos, bool); 6] = [
    ([-1, 0, 0], false),
    ([1, 0, 0], false),
    ([0, -1, 0], true),
    ([0, 1, 0], false),
    ([0, 0, -1], false),
    ([0, 0, 1], false),
];

fn offset(p: Pos, d: Pos) -> Pos {
    [
        p[0].saturating_add(d[0]),
        p[1].saturating_add(d[1]),
        p[2].saturating_add(d[2]),
    ]
}

/// One channel of the light byte.
#[derive(Clone, Copy)]
struct Channel {
    sunlight: bool,
}

impl Channel {
    fn of(self, light: u8) -> u8 {
        if self.sunlight {
            sun(light)
        } else {
            block(light)
        }
    }

    fn with(self, light: u8, level: u8) -> u8 {
        if self.sunlight {
            pack(level, block(light))
        } else {
            pack(sun(light), level)
        }
    }

    /// The level a step from `level` into a voxel absorbing `absorption`
    /// leaves (`down`: the step goes straight down).
    fn step(self, level: u8, absorption: u8, down: bool) -> u8 {
        if absorption >= OPAQUE {
            return 0;
        }
        let cost = if self.sunlight && down && level == MAX_LIGHT {
            absorption
        } else {
            absorption + 1
        };
        level.saturating_sub(cost)
    }
}

/// Counts the voxels an update visits, up to its limit.
struct Budget {
    left: usize,
    limit: usize,
}

impl Budget {
    fn spend(&mut self) -> Result<(), RelightError> {
        self.left = self
            .left
            .checked_sub(1)
            .ok_or(RelightError::TooLarge(self.limit))?;
        Ok(())
    }
}

fn read(world: &mut impl LitWorld, voxel: Pos) -> Result<(VoxelLight, u8), RelightError> {
    world.get(voxel).ok_or(RelightError::OutOfReach(voxel))
}

/// Updates the light around `changed` (voxels whose type changed since the
/// light was computed), visiting at most `limit` voxels per channel.
/// Answers how many voxels were visited. On an error, some light may have
/// been set already: the caller drops what it staged.
pub fn relight_in_place(
    world: &mut impl LitWorld,
    changed: &[Pos],
    limit: usize,
) -> Result<usize, RelightError> {
    let mut visited = 0;
    for sunlight in [true, false] {
        let mut budget = Budget { left: limit, limit };
        relight_channel(world, changed, Channel { sunlight }, &mut budget)?;
        visited += limit - budget.left;
    }
    Ok(visited)
}

fn relight_channel(
    world: &mut impl LitWorld,
    changed: &[Pos],
    channel: Channel,
    budget: &mut Budget,
) -> Result<(), RelightError> {
    // Take away what may have come through the changed voxels.
    let mut removal: VecDeque<(Pos, u8)> = VecDeque::new();
    let mut sources: Vec<Pos> = Vec::new();
    for &voxel in changed {
        let (props, light) = read(world, voxel)?;
        world.set(voxel, channel.with(light, 0));
        removal.push_back((voxel, channel.of(light)));
        if props.source > 0 {
            sources.push(voxel);
        }
    }
    let mut refill: VecDeque<Pos> = VecDeque::new();
    while let Some((voxel, level)) = removal.pop_front() {
        budget.spend()?;
        for (d, down) in NEIGHBOURS {
            let next = offset(voxel, d);
            let (props, light) = read(world, next)?;
            let near = channel.of(light);
            if near == 0 {
                continue;
            }
            let from_here = near < level
                || (channel.sunlight && down && level == MAX_LIGHT && near == MAX_LIGHT);
            if from_here {
                world.set(next, channel.with(light, 0));
                removal.push_back((next, near));
                if props.source > 0 {
                    sources.push(next);
                }
            } else {
                refill.push_back(next);
            }
        }
    }
    // Sources shine again (block light only: sunlight comes from above).
    if !channel.sunlight {
        for voxel in sources {
            let (props, light) = read(world, voxel)?;
            let level = props.source.min(MAX_LIGHT);
            if level > channel.of(light) {
                world.set(voxel, channel.with(light, level));
                refill.push_back(voxel);
            }
        }
    }
    // Spread back in from what is left around it.
    while let Some(voxel) = refill.pop_front() {
        budget.spend()?;
        let (_, light) = read(world, voxel)?;
        let level = channel.of(light);
        if level == 0 {
            continue;
        }
        for (d, down) in NEIGHBOURS {
            let next = offset(voxel, d);
            let (props, near) = read(world, next)?;
            let lit = channel.step(level, props.absorption, down);
            if lit > channel.of(near) {
                world.set(next, channel.with(near, lit));
                refill.push_back(next);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::light::light_box;

    /// A box world lit by [`light_box`] with open sky over every column;
    /// the update may read everything but the outer layer of voxels (the
    /// box's edge, where the box's own rules apply).
    struct BoxWorld {
        size: [usize; 3],
        props: Vec<VoxelLight>,
        light: Vec<u8>,
    }

    impl BoxWorld {
        fn index(&self, p: Pos) -> Option<usize> {
            let [sx, sy, sz] = self.size.map(|s| s as i32);
            let inside = (1..sx - 1).contains(&p[0])
                && (1..sy - 1).contains(&p[1])
                && (1..sz - 1).contains(&p[2]);
            inside.then(|| (p[0] + sx * (p[1] + sy * p[2])) as usize)
        }

        fn lit(size: [usize; 3], props: &[VoxelLight]) -> Vec<u8> {
            light_box(size, props, &vec![true; size[0] * size[2]]).unwrap()
        }
    }

    impl LitWorld for BoxWorld {
        fn get(&mut self, voxel: Pos) -> Option<(VoxelLight, u8)> {
            let i = self.index(voxel)?;
            Some((self.props[i], self.light[i]))
        }

        fn set(&mut self, voxel: Pos, light: u8) {
            if let Some(i) = self.index(voxel) {
                self.light[i] = light;
            }
        }
    }

    const AIR: VoxelLight = VoxelLight {
        source: 0,
        absorption: 0,
    };
    const STONE: VoxelLight = VoxelLight {
        source: 0,
        absorption: OPAQUE,
    };
    const WATER: VoxelLight = VoxelLight {
        source: 0,
        absorption: 1,
    };
    const TORCH: VoxelLight = VoxelLight {
        source: 14,
        absorption: 0,
    };
    const GLOWSTONE: VoxelLight = VoxelLight {
        source: 15,
        absorption: OPAQUE,
    };

    /// A small deterministic generator for the test worlds.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }

        fn voxel(&mut self) -> VoxelLight {
            match self.below(20) {
                0 => TORCH,
                1 => GLOWSTONE,
                2 | 3 => WATER,
                4..=9 => STONE,
                _ => AIR,
            }
        }
    }

    /// Terrain: stone up to a height per column, some caves, water,
    /// torches; then edits, each checked against lighting it all again.
    #[test]
    fn updating_in_place_gives_what_lighting_it_all_again_gives() {
        let size = [40usize, 48, 40];
        let mut verified = 0;
        for seed in 1..=6u64 {
            let mut rng = Rng(seed * 0x9E37_79B9_7F4A_7C15);
            let [sx, sy, sz] = size;
            let mut props = vec![AIR; sx * sy * sz];
            for z in 0..sz {
                for x in 0..sx {
                    let height = 16 + (x / 5 + z / 7 + seed as usize) % 12;
                    for y in 0..height {
                        props[x + sx * (y + sy * z)] = if rng.below(9) == 0 {
                            rng.voxel()
                        } else {
                            STONE
                        };
                    }
                }
            }
            let light = BoxWorld::lit(size, &props);
            let mut world = BoxWorld { size, props, light };
            for round in 0..40 {
                // One to three edits at once, inside the readable part.
                let count = 1 + rng.below(3);
                let changed: Vec<Pos> = (0..count)
                    .map(|_| {
                        [
                            3 + rng.below(sx - 6) as i32,
                            3 + rng.below(sy - 6) as i32,
                            3 + rng.below(sz - 6) as i32,
                        ]
                    })
                    .collect();
                for &p in &changed {
                    let i = world.index(p).unwrap();
                    world.props[i] = rng.voxel();
                }
                let expected = BoxWorld::lit(size, &world.props);
                match relight_in_place(&mut world, &changed, usize::MAX) {
                    Ok(_) => {
                        verified += 1;
                        for (i, (&got, &want)) in world.light.iter().zip(&expected).enumerate() {
                            let p = [i % sx, i / sx % sy, i / (sx * sy)];
                            assert_eq!(
                                (sun(got), block(got)),
                                (sun(want), block(want)),
                                "seed {seed} round {round}: voxel {p:?} after {changed:?}"
                            );
                        }
                    }
                    // Reached the edge (a deep sunlit shaft, light near the
                    // box's side): lit whole, as the caller would.
                    Err(RelightError::OutOfReach(_)) => world.light = expected,
                    Err(error) => panic!("{error}"),
                }
            }
        }
        assert!(
            verified >= 120,
            "only {verified} of 240 updates stayed inside"
        );
    }

    #[test]
    fn digging_a_roof_lets_the_sun_down_the_shaft_and_a_stone_puts_it_out() {
        let size = [40usize, 20, 40];
        let [sx, sy, _] = size;
        let at = |x: usize, y: usize, z: usize| x + sx * (y + sy * z);
        let mut props = vec![AIR; size.iter().product()];
        // A roof at y = 15 over everything, air below down to a floor.
        for z in 0..size[2] {
            for x in 0..sx {
                props[at(x, 15, z)] = STONE;
                props[at(x, 1, z)] = STONE;
            }
        }
        let light = BoxWorld::lit(size, &props);
        let mut world = BoxWorld { size, props, light };
        assert_eq!(sun(world.light[at(20, 5, 20)]), 0, "dark under the roof");
        world.props[at(20, 15, 20)] = AIR;
        relight_in_place(&mut world, &[[20, 15, 20]], usize::MAX).unwrap();
        assert_eq!(
            sun(world.light[at(20, 5, 20)]),
            MAX_LIGHT,
            "sun down the hole"
        );
        assert_eq!(
            sun(world.light[at(21, 5, 20)]),
            MAX_LIGHT - 1,
            "and beside it"
        );
        assert_eq!(world.light, BoxWorld::lit(size, &world.props));
        world.props[at(20, 10, 20)] = STONE;
        relight_in_place(&mut world, &[[20, 10, 20]], usize::MAX).unwrap();
        assert_eq!(world.light, BoxWorld::lit(size, &world.props));
        assert!(sun(world.light[at(20, 9, 20)]) < MAX_LIGHT, "shaded below");
    }

    #[test]
    fn an_update_stops_at_what_it_may_not_read_and_at_its_limit() {
        let size = [12usize, 12, 12];
        let props = vec![AIR; size.iter().product()];
        let light = BoxWorld::lit(size, &props);
        let mut world = BoxWorld { size, props, light };
        // Open sky everywhere: a stone's shadow reaches the box's edge.
        world.props[5 + 12 * (8 + 12 * 5)] = STONE;
        assert!(matches!(
            relight_in_place(&mut world, &[[5, 8, 5]], usize::MAX),
            Err(RelightError::OutOfReach(_))
        ));
        assert_eq!(
            relight_in_place(&mut world, &[[5, 8, 5]], 3),
            Err(RelightError::TooLarge(3))
        );
        assert!(matches!(
            relight_in_place(&mut world, &[[0, 0, 0]], usize::MAX),
            Err(RelightError::OutOfReach([0, 0, 0]))
        ));
    }
}
