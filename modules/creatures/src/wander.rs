//! Where a creature wants to go: walk a while along a heading, sometimes
//! stop, turn a little between walks, turn around at a wall or a cliff,
//! and head back when it strays beyond its area.
//!
//! Owns: [`Brain`] (a creature's heading, whether it walks and for how long
//! still) and the module's small random number generator ([`Rng`]). Pure:
//! no world, no clock (time comes in as `dt`). Does not own: moving the
//! body (`physics.rs`), the creatures' kinds and speeds (`kinds.rs`).

use std::f64::consts::{PI, TAU};

use serde::{Deserialize, Serialize};

/// A small, fast random number generator (xorshift64*); plenty for
/// wandering, and its state fits in the reload stash.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        // Never zero (xorshift stays at zero).
        Self(seed ^ 0x9e37_79b9_7f4a_7c15 | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in `[low, high)`.
    pub fn range(&mut self, low: f64, high: f64) -> f64 {
        low + (high - low) * self.unit()
    }
}

/// Chance that a creature walks (rather than stands) after each pause or walk.
const WALK_CHANCE: f64 = 0.65;
/// Seconds a walk lasts.
const WALK_TIME: (f64, f64) = (2.0, 6.0);
/// Seconds a pause lasts.
const STAND_TIME: (f64, f64) = (1.0, 4.0);
/// Most a heading changes between two walks, radians.
const TURN: f64 = PI / 2.0;

/// A creature's intent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Brain {
    /// Radians about +y; walking along `(sin, cos)` in x and z.
    pub heading: f64,
    pub walking: bool,
    /// Seconds left of this walk or pause.
    pub timer: f64,
}

impl Brain {
    /// Standing a moment, facing a random way.
    pub fn new(rng: &mut Rng) -> Self {
        Self {
            heading: rng.range(0.0, TAU),
            walking: false,
            timer: rng.range(0.0, STAND_TIME.1),
        }
    }

    /// Lets `dt` seconds pass; when the walk or pause is over, picks the
    /// next: a walk turned a little from the last heading (towards `home`,
    /// a heading, when the creature is out of its area), or a pause.
    pub fn think(&mut self, dt: f64, home: Option<f64>, rng: &mut Rng) {
        self.timer -= dt;
        if let Some(home) = home {
            // Out of its area: no idling, no walking further away.
            let off = (self.heading - home).rem_euclid(TAU);
            if !self.walking || off.min(TAU - off) > PI / 2.0 {
                self.timer = self.timer.min(0.0);
            }
        }
        if self.timer > 0.0 {
            return;
        }
        if home.is_some() || rng.unit() < WALK_CHANCE {
            self.walking = true;
            self.timer = rng.range(WALK_TIME.0, WALK_TIME.1);
            let base = home.unwrap_or(self.heading);
            let turn = if home.is_some() { TURN / 3.0 } else { TURN };
            self.heading = (base + rng.range(-turn, turn)).rem_euclid(TAU);
        } else {
            self.walking = false;
            self.timer = rng.range(STAND_TIME.0, STAND_TIME.1);
        }
    }

    /// A wall it cannot climb or a drop too deep is ahead: face roughly
    /// the other way and walk on.
    pub fn turn_around(&mut self, rng: &mut Rng) {
        self.heading = (self.heading + PI + rng.range(-PI / 4.0, PI / 4.0)).rem_euclid(TAU);
        self.walking = true;
        self.timer = self.timer.max(rng.range(1.0, WALK_TIME.0));
    }

    /// The velocity it wants along x and z at `speed` voxels a second.
    pub fn walk(&self, speed: f64) -> [f64; 2] {
        if self.walking {
            [speed * self.heading.sin(), speed * self.heading.cos()]
        } else {
            [0.0, 0.0]
        }
    }
}

/// The heading from `from` to `to` (x and z), in the convention of
/// [`Brain::heading`].
pub fn heading_towards(from: [f64; 2], to: [f64; 2]) -> f64 {
    (to[0] - from[0]).atan2(to[1] - from[1]).rem_euclid(TAU)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_creature_walks_and_stands_in_turn() {
        let mut rng = Rng::new(7);
        let mut brain = Brain::new(&mut rng);
        let (mut walked, mut stood, mut changes) = (0, 0, 0);
        let mut last = brain.walking;
        for _ in 0..2000 {
            brain.think(0.1, None, &mut rng);
            if brain.walking {
                walked += 1;
            } else {
                stood += 1;
            }
            if brain.walking != last {
                changes += 1;
                last = brain.walking;
            }
        }
        assert!(
            walked > 600 && stood > 300,
            "walked {walked}, stood {stood}"
        );
        assert!(changes > 10, "{changes} changes");
    }

    #[test]
    fn a_walk_goes_along_the_heading_at_the_speed() {
        let brain = Brain {
            heading: PI / 2.0,
            walking: true,
            timer: 1.0,
        };
        let [x, z] = brain.walk(3.0);
        assert!((x - 3.0).abs() < 1e-9 && z.abs() < 1e-9);
        let standing = Brain {
            walking: false,
            ..brain
        };
        assert_eq!(standing.walk(3.0), [0.0, 0.0]);
    }

    #[test]
    fn turning_around_faces_roughly_the_other_way() {
        let mut rng = Rng::new(1);
        for _ in 0..100 {
            let mut brain = Brain {
                heading: 0.5,
                walking: true,
                timer: 3.0,
            };
            brain.turn_around(&mut rng);
            let away = (brain.heading - 0.5 - PI).rem_euclid(TAU);
            let away = away.min(TAU - away);
            assert!(away <= PI / 4.0 + 1e-9, "{}", brain.heading);
            assert!(brain.walking);
        }
    }

    #[test]
    fn a_creature_out_of_its_area_walks_home() {
        let mut rng = Rng::new(3);
        let home = heading_towards([50.0, 0.0], [0.0, 0.0]);
        assert!((home - 3.0 * PI / 2.0).abs() < 1e-9, "{home}");
        let mut brain = Brain {
            heading: 0.0,
            walking: false,
            timer: 5.0,
        };
        brain.think(0.1, Some(home), &mut rng);
        assert!(brain.walking);
        assert!((brain.heading - home).abs() <= TURN / 3.0 + 1e-9);
        assert!(brain.walk(2.0)[0] < -1.0, "towards -x");
    }

    #[test]
    fn the_random_numbers_stay_in_range() {
        let mut rng = Rng::new(0);
        for _ in 0..10_000 {
            let u = rng.unit();
            assert!((0.0..1.0).contains(&u));
        }
    }
}
