//! The rules of a player's body, pure: falls, breath under a liquid, lava,
//! the void, regeneration, and what a hurt does to hp (death at 0).
//!
//! Owns: [`Body`] (hp, breath, death, the fall and clock state) and
//! [`Rules`] (the settings it follows). Does not own: where the player is
//! and what is around it (the module reads that from main and the world
//! and hands it in as a [`Sample`]), events, packets, storage.

use buildat_health_api::{Cause, MAX_BREATH, MAX_HP};

/// A move longer than this in one step is a teleport, not a fall.
pub const TELEPORT_DISTANCE: f64 = 16.0;

/// Slack on sums of tick lengths (ten ticks of 0.1 s are a second).
const EPSILON: f64 = 1e-6;

/// The settings the rules follow (`health.*`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rules {
    /// A fall of up to this many voxels costs nothing.
    pub fall_safe: f64,
    /// Hp per voxel fallen past `fall_safe` (rounded down).
    pub fall_damage: f64,
    /// Seconds per breath lost under a liquid (and regained out of it).
    pub breath_seconds: f64,
    /// Hp per second out of breath.
    pub drown_damage: f64,
    /// Hp per second in lava.
    pub lava_damage: f64,
    /// The feet below this y: [`Cause::Void`] takes [`MAX_HP`] at once.
    pub void_y: f64,
    /// Seconds per hp regained while breath is full (0: never).
    pub regen_seconds: f64,
}

impl Default for Rules {
    fn default() -> Self {
        Self {
            fall_safe: 3.0,
            fall_damage: 1.0,
            breath_seconds: 1.0,
            drown_damage: 1.0,
            lava_damage: 4.0,
            void_y: -128.0,
            regen_seconds: 5.0,
        }
    }
}

/// Where a player is and what is around it, at one tick.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    /// The feet.
    pub position: [f64; 3],
    /// The feet rest on a solid voxel.
    pub grounded: bool,
    /// The voxel at the eyes is a liquid.
    pub eyes_in_liquid: bool,
    /// The feet or the eyes are in a liquid (a fall into water is no fall).
    pub in_liquid: bool,
    /// The feet or the eyes are in lava.
    pub in_lava: bool,
}

impl Sample {
    /// A sample in the open air (tests, and a world that does not answer).
    pub fn air(position: [f64; 3], grounded: bool) -> Self {
        Self {
            position,
            grounded,
            eyes_in_liquid: false,
            in_liquid: false,
            in_lava: false,
        }
    }
}

/// One player's body.
#[derive(Debug, Clone, PartialEq)]
pub struct Body {
    pub hp: u16,
    pub breath: u16,
    pub dead: bool,
    /// The highest feet since the last landing (`None`: not sampled yet).
    top: Option<f64>,
    /// The last sample's position.
    last: Option<[f64; 3]>,
    /// Seconds towards the next breath lost or regained.
    breath_clock: f64,
    /// Hp owed for drowning and lava, fractions kept.
    drown_owed: f64,
    lava_owed: f64,
    /// Seconds towards the next hp regained.
    regen_clock: f64,
}

impl Default for Body {
    fn default() -> Self {
        Self::new(MAX_HP, MAX_BREATH, false)
    }
}

impl Body {
    /// A body with this health (bounded to the maxima; 0 hp is dead).
    pub fn new(hp: u16, breath: u16, dead: bool) -> Self {
        let hp = hp.min(MAX_HP);
        Self {
            hp: if dead { 0 } else { hp },
            breath: breath.min(MAX_BREATH),
            dead: dead || hp == 0,
            top: None,
            last: None,
            breath_clock: 0.0,
            drown_owed: 0.0,
            lava_owed: 0.0,
            regen_clock: 0.0,
        }
    }

    /// Forgets where it was: the next sample starts afresh (a respawn, a
    /// teleport by this module).
    pub fn forget_position(&mut self) {
        self.top = None;
        self.last = None;
    }

    /// Takes `amount` hp (not below 0; at 0 it is dead). Answers the hp
    /// taken, 0 when already dead.
    pub fn hurt(&mut self, amount: u16) -> u16 {
        if self.dead {
            return 0;
        }
        let taken = amount.min(self.hp);
        self.hp -= taken;
        if self.hp == 0 {
            self.dead = true;
        }
        taken
    }

    /// Gives `amount` hp up to [`MAX_HP`] to a living body; answers what
    /// it gained.
    pub fn heal(&mut self, amount: u16) -> u16 {
        if self.dead {
            return 0;
        }
        let gained = amount.min(MAX_HP - self.hp.min(MAX_HP));
        self.hp += gained;
        gained
    }

    /// Comes back to life with full hp and breath, its position forgotten.
    pub fn revive(&mut self) {
        *self = Self::default();
    }

    /// One tick of `dt` seconds at `sample`: answers the hurts the rules
    /// deal, in order (not yet taken: the caller takes each with
    /// [`Body::hurt`], which may kill). Breath and regeneration change
    /// here. A dead body is not sampled.
    pub fn step(&mut self, sample: &Sample, dt: f64, rules: &Rules) -> Vec<(u16, Cause)> {
        let mut hurts = Vec::new();
        if self.dead {
            return hurts;
        }
        let dt = if dt.is_finite() {
            dt.clamp(0.0, 5.0)
        } else {
            0.0
        };
        let [_, y, _] = sample.position;
        // The void first: nothing else matters down there.
        if y < rules.void_y {
            hurts.push((MAX_HP, Cause::Void));
            self.last = Some(sample.position);
            return hurts;
        }
        // Falls.
        let teleported = self
            .last
            .is_some_and(|last| distance(last, sample.position) > TELEPORT_DISTANCE);
        match self.top {
            _ if teleported || sample.in_liquid => self.top = Some(y),
            None => self.top = Some(y),
            Some(top) if sample.grounded => {
                let fall = top - y;
                let damage = ((fall - rules.fall_safe) * rules.fall_damage).floor();
                if damage >= 1.0 {
                    hurts.push((damage.min(f64::from(u16::MAX)) as u16, Cause::Fall));
                }
                self.top = Some(y);
            }
            Some(top) => self.top = Some(top.max(y)),
        }
        self.last = Some(sample.position);
        // Breath.
        let breath_seconds = rules.breath_seconds.max(0.01);
        if sample.eyes_in_liquid {
            if self.breath > 0 {
                self.breath_clock += dt;
                while self.breath_clock + EPSILON >= breath_seconds && self.breath > 0 {
                    self.breath_clock -= breath_seconds;
                    self.breath -= 1;
                }
            }
            if self.breath == 0 {
                self.breath_clock = 0.0;
                self.drown_owed += dt * rules.drown_damage;
                let whole = (self.drown_owed + EPSILON).floor();
                if whole >= 1.0 {
                    self.drown_owed -= whole;
                    hurts.push((whole.min(f64::from(u16::MAX)) as u16, Cause::Drown));
                }
            }
        } else {
            self.drown_owed = 0.0;
            if self.breath < MAX_BREATH {
                self.breath_clock += dt;
                while self.breath_clock + EPSILON >= breath_seconds && self.breath < MAX_BREATH {
                    self.breath_clock -= breath_seconds;
                    self.breath += 1;
                }
            } else {
                self.breath_clock = 0.0;
            }
        }
        // Lava.
        if sample.in_lava {
            self.lava_owed += dt * rules.lava_damage;
            let whole = (self.lava_owed + EPSILON).floor();
            if whole >= 1.0 {
                self.lava_owed -= whole;
                hurts.push((whole.min(f64::from(u16::MAX)) as u16, Cause::Lava));
            }
        } else {
            self.lava_owed = 0.0;
        }
        // Regeneration, while breath is full.
        if rules.regen_seconds > 0.0 && self.breath == MAX_BREATH && self.hp < MAX_HP {
            self.regen_clock += dt;
            if self.regen_clock + EPSILON >= rules.regen_seconds {
                self.regen_clock -= rules.regen_seconds;
                self.heal(1);
            }
        } else {
            self.regen_clock = 0.0;
        }
        hurts
    }
}

fn distance(a: [f64; 3], b: [f64; 3]) -> f64 {
    ((a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2) + (a[2] - b[2]).powi(2)).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_regen() -> Rules {
        Rules {
            regen_seconds: 0.0,
            ..Rules::default()
        }
    }

    /// Steps `body` through feet heights (x and z 0), grounded where told;
    /// answers every hurt.
    fn walk(body: &mut Body, steps: &[(f64, bool)]) -> Vec<(u16, Cause)> {
        steps
            .iter()
            .flat_map(|(y, grounded)| {
                body.step(&Sample::air([0.5, *y, 0.5], *grounded), 0.05, &no_regen())
            })
            .collect()
    }

    #[test]
    fn a_fall_past_three_voxels_costs_one_hp_a_voxel_on_landing() {
        let mut body = Body::default();
        // Ten voxels down, a voxel a tick, landing on the ground at 0.
        let mut steps = vec![(10.0, true)];
        steps.extend((1..10).map(|i| (10.0 - f64::from(i), false)));
        steps.push((0.0, true));
        steps.push((0.0, true));
        assert_eq!(walk(&mut body, &steps), vec![(7, Cause::Fall)]);
        // A jump's height counts: up 1.2 from 0, then down 4.2 to -3.
        let steps = [(0.6, false), (1.2, false), (-1.0, false), (-3.0, true)];
        assert_eq!(walk(&mut body, &steps), vec![(1, Cause::Fall)]);
    }

    #[test]
    fn safe_falls_and_stairs_cost_nothing() {
        let mut body = Body::default();
        // Three voxels: safe.
        assert!(walk(&mut body, &[(3.0, true), (2.0, false), (0.0, true)]).is_empty());
        // Twenty stairs down, the feet on each step: twenty landings of 1.
        let stairs: Vec<(f64, bool)> = (0..=20).map(|i| (-f64::from(i), true)).collect();
        assert!(walk(&mut body, &stairs).is_empty());
        // Samples repeating mid-air (moves slower than ticks) are one fall.
        let hover = [
            (20.0, true),
            (18.0, false),
            (18.0, false),
            (15.0, false),
            (15.0, false),
            (14.0, true),
        ];
        assert_eq!(walk(&mut body, &hover), vec![(3, Cause::Fall)]);
    }

    #[test]
    fn a_teleport_is_not_a_fall() {
        let mut body = Body::default();
        // Up 40 in one step and down 40 in one step: teleports.
        assert!(walk(&mut body, &[(0.0, true), (40.0, true), (0.0, true)]).is_empty());
        // Teleported up into the air, then a real fall of 5 from there.
        let steps = [
            (0.0, true),
            (30.0, false),
            (28.0, false),
            (26.0, false),
            (25.0, true),
        ];
        assert_eq!(walk(&mut body, &steps), vec![(2, Cause::Fall)]);
        // A respawn forgets where it was: no fall from the old top.
        walk(&mut body, &[(10.0, false)]);
        body.forget_position();
        assert!(walk(&mut body, &[(0.0, true)]).is_empty());
    }

    #[test]
    fn a_fall_into_water_is_no_fall() {
        let mut body = Body::default();
        walk(&mut body, &[(20.0, true), (10.0, false)]);
        let mut water = Sample::air([0.5, 2.0, 0.5], false);
        water.in_liquid = true;
        assert!(body.step(&water, 0.05, &no_regen()).is_empty());
        assert!(walk(&mut body, &[(1.0, true)]).is_empty());
    }

    #[test]
    fn drowning_takes_breath_each_second_then_an_hp_a_second() {
        let rules = no_regen();
        let mut body = Body::default();
        let mut under = Sample::air([0.0, 0.0, 0.0], true);
        under.eyes_in_liquid = true;
        under.in_liquid = true;
        let mut timeline = Vec::new();
        // 15 seconds under water, ticks of 0.1 s.
        for tick in 1..=150 {
            let hurts = body.step(&under, 0.1, &rules);
            for (amount, cause) in hurts {
                assert_eq!(cause, Cause::Drown);
                body.hurt(amount);
            }
            if tick % 10 == 0 {
                timeline.push((body.breath, body.hp));
            }
        }
        // Breath 10 lasts ten seconds; then one hp a second.
        assert_eq!(timeline[0], (9, 20));
        assert_eq!(timeline[8], (1, 20));
        assert_eq!(timeline[9].0, 0);
        assert_eq!(timeline[14], (0, 15), "{timeline:?}");
        // Out of the water breath comes back, a breath a second.
        let air = Sample::air([0.0, 0.0, 0.0], true);
        for _ in 0..35 {
            assert!(body.step(&air, 0.1, &rules).is_empty());
        }
        assert_eq!(body.breath, 3);
        for _ in 0..100 {
            body.step(&air, 0.1, &rules);
        }
        assert_eq!((body.breath, body.hp), (MAX_BREATH, 15), "no regen");
    }

    #[test]
    fn lava_burns_four_hp_a_second_and_the_void_kills() {
        let mut body = Body::default();
        let mut lava = Sample::air([0.0, 0.0, 0.0], true);
        lava.in_lava = true;
        lava.in_liquid = true;
        let burnt: u16 = (0..20)
            .flat_map(|_| body.step(&lava, 0.05, &no_regen()))
            .map(|(amount, cause)| {
                assert_eq!(cause, Cause::Lava);
                amount
            })
            .sum();
        assert_eq!(burnt, 4);
        let mut body = Body::default();
        let hurts = body.step(&Sample::air([0.0, -129.0, 0.0], false), 0.05, &no_regen());
        assert_eq!(hurts, vec![(MAX_HP, Cause::Void)]);
        assert_eq!(body.hurt(MAX_HP), MAX_HP);
        assert!(body.dead);
        assert!(
            body.step(&Sample::air([0.0, -200.0, 0.0], false), 0.05, &no_regen())
                .is_empty()
        );
    }

    #[test]
    fn hurts_kill_at_zero_and_heals_stop_at_the_maximum() {
        let mut body = Body::default();
        assert_eq!(body.hurt(5), 5);
        assert_eq!(body.heal(100), 5);
        assert_eq!(body.hp, MAX_HP);
        assert_eq!(body.hurt(50), MAX_HP);
        assert!(body.dead);
        assert_eq!(body.hurt(1), 0, "the dead are not hurt");
        assert_eq!(body.heal(1), 0, "nor healed");
        body.revive();
        assert_eq!(
            (body.hp, body.breath, body.dead),
            (MAX_HP, MAX_BREATH, false)
        );
        let loaded = Body::new(0, 3, false);
        assert!(loaded.dead, "0 hp is dead");
        assert_eq!(Body::new(99, 99, false).hp, MAX_HP);
    }

    #[test]
    fn regeneration_gives_an_hp_every_five_seconds_with_full_breath() {
        let rules = Rules::default();
        let mut body = Body::default();
        body.hurt(4);
        let air = Sample::air([0.0, 0.0, 0.0], true);
        for _ in 0..49 {
            body.step(&air, 0.1, &rules);
        }
        assert_eq!(body.hp, 16);
        body.step(&air, 0.1, &rules);
        assert_eq!(body.hp, 17);
        let off = Rules {
            regen_seconds: 0.0,
            ..rules
        };
        for _ in 0..200 {
            body.step(&air, 0.1, &off);
        }
        assert_eq!(body.hp, 17);
    }
}
