//! One tick of the awake creatures: think, steer out of each other's and
//! the players' way (`crowd.rs`), step with the voxels known
//! (`physics.rs`), fetch what those that could not step need in a few
//! `GetVoxels` and step them again, then every move in one `MoveNodes`.
//!
//! Owns: the tick's steps and the count of creatures that moved. Does not
//! own: the walk (`wander.rs`), the body (`physics.rs`), the voxels known
//! (`solidity.rs`).

use super::*;
use crate::sleeping::active_cell;

impl Creatures {
    /// One tick of every creature: think, step with the voxels known, fetch
    /// those the creatures that could not step need (one or a few
    /// `GetVoxels`), step those again, and tell the world of all that moved
    /// in one call.
    pub(crate) fn simulate(&mut self, dt: f64) -> Result<(), ModuleError> {
        let ticks = self.counters.ticks;
        let second = self.counters.second;
        let herds = self.herds;
        let resting = self.resting;
        let mut moves = Vec::new();
        let mut moved = 0;
        let mut retry = Vec::new();
        self.dormant = 0;
        let active = &self.active;
        let is_dormant = |creature: &Creature| {
            active.as_ref().is_some_and(|cells| {
                creature.state.on_ground && !cells.contains(&active_cell(creature.state.position))
            })
        };
        let pushes = self.crowd_pushes(&is_dormant);
        self.crowded = pushes.iter().filter(|p| crowd::is_crowded(**p)).count();
        for (index, creature) in self.creatures.iter_mut().enumerate() {
            if is_dormant(creature) {
                // No player near: it stands (told once, so nobody
                // extrapolates a walk it no longer makes).
                self.dormant += 1;
                if creature.state.velocity != [0.0; 3] {
                    creature.state.velocity = [0.0; 3];
                    moves.push(NodeMotion {
                        id: creature.id,
                        position: creature.state.position,
                        orientation: physics::yaw_quaternion(creature.brain.heading),
                        velocity: [0.0; 3],
                    });
                }
                continue;
            }
            let kind = &KINDS[creature.kind];
            let [x, _, z] = creature.state.position;
            let centre = herds.centre(herds.is_far(creature.state.position));
            let home = ((x - centre[0]).hypot(z - centre[1]) > self.radius)
                .then(|| wander::heading_towards([x, z], centre));
            creature.brain.think(dt, home, &mut self.rng);
            // At night they rest: no walk, but they still fall and make way.
            let planned = if resting {
                [0.0, 0.0]
            } else {
                creature.brain.walk(kind.speed)
            };
            let mut walk = crowd::steer(planned, pushes[index]);
            let still = walk == [0.0, 0.0]
                && creature.state.on_ground
                && creature.state.velocity == [0.0; 3];
            if still
                && !ticks
                    .wrapping_add(creature.id)
                    .is_multiple_of(IDLE_CHECK_TICKS)
            {
                continue;
            }
            let mut read = self.solidity.reader();
            match advance(creature, &mut walk, dt, &mut read, &mut self.rng) {
                Some(motion) => {
                    moved += count_move(creature, &motion, second);
                    moves.extend(motion);
                }
                None => retry.push((index, walk)),
            }
        }
        if !retry.is_empty() {
            self.fetch_needed(&retry, dt)?;
            for (index, mut walk) in retry {
                let creature = &mut self.creatures[index];
                let mut read = self.solidity.reader();
                match advance(creature, &mut walk, dt, &mut read, &mut self.rng) {
                    Some(motion) => {
                        moved += count_move(creature, &motion, second);
                        moves.extend(motion);
                    }
                    None => creature.waiting = true,
                }
            }
        }
        self.counters.moved_this_second += moved;
        if !moves.is_empty() {
            // Gone: removed by someone, or their section left memory (a
            // persistent one is found again when it loads).
            for id in self.host.call(&MoveNodes { moves })? {
                self.forget(id);
            }
        }
        Ok(())
    }

    /// Each creature's push out of the others and out of the players' way
    /// (`[0, 0]` for a dormant one, which is left out).
    pub(crate) fn crowd_pushes(&self, is_dormant: &dyn Fn(&Creature) -> bool) -> Vec<[f64; 2]> {
        let mut awake = Vec::new();
        let mut bodies = Vec::new();
        for (index, creature) in self.creatures.iter().enumerate() {
            if !is_dormant(creature) {
                let body = &KINDS[creature.kind].body;
                awake.push(index);
                bodies.push(crowd::Occupant {
                    position: creature.state.position,
                    half_width: body.half_width,
                    height: body.height,
                });
            }
        }
        let mut pushes = vec![[0.0; 2]; self.creatures.len()];
        for (index, push) in awake.into_iter().zip(crowd::pushes(&bodies, &self.players)) {
            pushes[index] = push;
        }
        pushes
    }

    /// Fetches the voxels the creatures planned in `plans` may read and the
    /// cache does not know (at most [`MAX_FETCH_CALLS`] calls), and asks
    /// for the sections of those not generated.
    pub(crate) fn fetch_needed(
        &mut self,
        plans: &[(usize, [f64; 2])],
        dt: f64,
    ) -> Result<(), ModuleError> {
        let mut missing = HashSet::new();
        for &(index, walk) in plans {
            let creature = &self.creatures[index];
            let body = &KINDS[creature.kind].body;
            let (motion, ahead) = physics::needed(body, &creature.state, walk, dt);
            let mut known = self.solidity.reader();
            for pos in motion
                .voxels()
                .chain(ahead.into_iter().flat_map(|b| b.voxels()))
            {
                if known(pos).is_none() {
                    missing.insert(pos);
                }
            }
        }
        let mut missing: Vec<Pos> = missing.into_iter().collect();
        missing.truncate(MAX_FETCH_CALLS * MAX_VOXELS_PER_CALL);
        let solid = self.fetch(&missing)?;
        let mut absent = HashSet::new();
        for (pos, solid) in missing.into_iter().zip(solid) {
            match solid {
                Some(solid) => self.solidity.insert(pos, solid),
                None => {
                    absent.insert(self.section_of(pos));
                }
            }
        }
        for section in absent {
            self.ask_section(section)?;
        }
        Ok(())
    }
}

/// One creature's step with the voxels `read` knows: the drop ahead (a
/// deep one turns it around and it stands this tick), the body's step (a
/// wall turns it around). Its move, if it moved; `None` if a voxel it
/// needs is not known (nothing changed but `walk`, to try again with).
pub(crate) fn advance(
    creature: &mut Creature,
    walk: &mut [f64; 2],
    dt: f64,
    read: &mut impl FnMut(Pos) -> Option<bool>,
    rng: &mut Rng,
) -> Option<Option<NodeMotion>> {
    let body = &KINDS[creature.kind].body;
    if *walk != [0.0, 0.0] && creature.state.on_ground {
        let drop = physics::ground_drop(body, creature.state.position, *walk, &mut *read)?;
        if drop > MAX_DROP {
            creature.brain.turn_around(rng);
            *walk = [0.0, 0.0];
        }
    }
    let outcome = physics::step(body, &creature.state, *walk, dt, &mut *read)?;
    creature.waiting = false;
    if outcome.blocked {
        creature.brain.turn_around(rng);
    }
    if outcome.state == creature.state {
        return Some(None);
    }
    creature.state = outcome.state;
    Some(Some(NodeMotion {
        id: creature.id,
        position: creature.state.position,
        orientation: physics::yaw_quaternion(creature.brain.heading),
        velocity: creature.state.velocity.map(|v| v as f32),
    }))
}

/// 1 the first time a creature moves in this second (for the count of
/// creatures that moved in the last second), else 0.
pub(crate) fn count_move(
    creature: &mut Creature,
    motion: &Option<NodeMotion>,
    second: u64,
) -> usize {
    if motion.is_some() && creature.moved_in != second {
        creature.moved_in = second;
        1
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The herd's bodies, for [`crowd::pushes`].
    fn bodies(herd: &[Creature]) -> Vec<crowd::Occupant> {
        herd.iter()
            .map(|c| crowd::Occupant {
                position: c.state.position,
                half_width: KINDS[c.kind].body.half_width,
                height: KINDS[c.kind].body.height,
            })
            .collect()
    }

    #[test]
    fn a_herd_standing_on_one_point_steps_apart_on_flat_ground() {
        let mut rng = Rng::new(7);
        let chicken = KINDS
            .iter()
            .position(|k| k.name == "chicken")
            .expect("chickens");
        let mut herd: Vec<Creature> = (0..20)
            .map(|id| Creature::new(id, chicken, [0.5, 10.0, 0.5], &mut rng))
            .collect();
        let mut flat = |voxel: Pos| Some(voxel[1] < 10);
        let crowded = |herd: &[Creature]| {
            crowd::pushes(&bodies(herd), &[])
                .into_iter()
                .filter(|p| crowd::is_crowded(*p))
                .count()
        };
        assert_eq!(crowded(&herd), 20, "all in one point");
        // Two seconds of ticks, standing (no walk of their own): only the
        // pushes move them, through the same physics step as a walk.
        for _ in 0..20 {
            let pushes = crowd::pushes(&bodies(&herd), &[]);
            for (creature, push) in herd.iter_mut().zip(pushes) {
                let mut walk = crowd::steer([0.0; 2], push);
                advance(creature, &mut walk, 0.1, &mut flat, &mut rng).expect("flat ground");
            }
        }
        assert_eq!(crowded(&herd), 0, "spread out");
        assert!(
            herd.iter().all(|c| c.state.position[1] == 10.0),
            "on the ground"
        );
    }
}
