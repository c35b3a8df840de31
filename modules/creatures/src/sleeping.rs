//! The simulation distance and sleep: where the players are (read once a
//! second), the 32-voxel cells near them where creatures are simulated,
//! and transient creatures alone for [`SLEEP_AFTER`] falling asleep (their
//! node removed, kept here) and waking where they stood when a player
//! comes near (at most [`WAKES_PER_SECOND`] a second).
//!
//! Owns: the active cells and who sleeps and wakes. Does not own: the
//! nodes (`voxelworld`), how creatures move (`moving.rs`).

use super::*;

impl Creatures {
    /// Reads where the players are once in [`PLAYERS_INTERVAL`], for the
    /// simulation distance.
    pub(crate) fn find_players(&mut self, dtime: f64) -> Result<(), ModuleError> {
        if self.active_radius <= 0.0 {
            return Ok(());
        }
        self.since_players += dtime.max(0.0);
        if self.active.is_some() && self.since_players < PLAYERS_INTERVAL {
            return Ok(());
        }
        self.since_players = 0.0;
        let players = self.host.call(&ListNodes {
            with_var: Some(VAR_PLAYER.to_string()),
        })?;
        let positions: Vec<[f64; 3]> = players.iter().map(|n| n.position).collect();
        let interval = if self.active.is_some() {
            PLAYERS_INTERVAL
        } else {
            0.0
        };
        self.active = Some(active_cells(&positions, self.active_radius));
        self.players = positions;
        self.sleep_and_wake(interval)
    }

    /// Whether any cell of a herd's area is near a player (always, when
    /// every creature is simulated).
    pub(crate) fn herd_has_player_near(&self, far: bool) -> bool {
        let Some(cells) = &self.active else {
            return self.active_radius <= 0.0;
        };
        let [cx, cz] = self.herds.centre(far);
        let low = active_cell([cx - self.radius, 0.0, cz - self.radius]);
        let high = active_cell([cx + self.radius, 0.0, cz + self.radius]);
        cells
            .iter()
            .any(|c| (low[0]..=high[0]).contains(&c[0]) && (low[1]..=high[1]).contains(&c[1]))
    }

    /// Transient creatures alone for [`SLEEP_AFTER`] fall asleep (their
    /// node removed); sleeping ones with a player near again wake (a node
    /// made where they stood), at most [`WAKES_PER_SECOND`] at a time.
    pub(crate) fn sleep_and_wake(&mut self, interval: f64) -> Result<(), ModuleError> {
        let Some(cells) = &self.active else {
            return Ok(());
        };
        let (sleepers, waking) =
            who_sleeps_and_wakes(&mut self.creatures, &mut self.asleep, cells, interval);
        if !sleepers.is_empty() {
            // One call for all of them (a herd falls asleep together).
            self.remove_nodes(&sleepers, "falling asleep");
            let sleepers: HashSet<u64> = sleepers.into_iter().collect();
            let (falling, awake) = std::mem::take(&mut self.creatures)
                .into_iter()
                .partition(|c| sleepers.contains(&c.id));
            self.creatures = awake;
            for mut creature in falling {
                self.ids.remove(&creature.id);
                creature.state.velocity = [0.0; 3];
                self.asleep.push(creature);
            }
        }
        if waking.is_empty() {
            return Ok(());
        }
        let nodes = waking
            .iter()
            .map(|creature| KINDS[creature.kind].node_at(creature.state.position))
            .collect();
        let ids = match self.host.call(&CreateNodes { nodes }) {
            Ok(ids) => ids,
            Err(error) => {
                // The world is away (a reload): they sleep on and wake
                // the next second.
                self.asleep.extend(waking);
                return Err(error);
            }
        };
        let ids = ids.into_iter().chain(std::iter::repeat(None));
        for (mut creature, id) in waking.into_iter().zip(ids) {
            match id {
                Some(id) => {
                    creature.id = id;
                    creature.alone_for = 0.0;
                    self.ids.insert(id);
                    self.creatures.push(creature);
                }
                // Its place could not be loaded: it sleeps on, and is
                // tried again the next second.
                None => self.asleep.push(creature),
            }
        }
        Ok(())
    }
}

/// The (x, z) cell a position is in, for the simulation distance.
pub(crate) fn active_cell(position: [f64; 3]) -> [i32; 2] {
    // `as` saturates: an absurd position lands in an edge cell.
    [position[0], position[2]].map(|p| (p / ACTIVE_CELL).floor() as i32)
}

/// The cells within `radius` voxels (rounded up to cells) of each player.
pub(crate) fn active_cells(players: &[[f64; 3]], radius: f64) -> HashSet<[i32; 2]> {
    let r = (radius / ACTIVE_CELL).ceil() as i32;
    let mut cells = HashSet::new();
    for &player in players {
        let [cx, cz] = active_cell(player);
        for dz in -r..=r {
            for dx in -r..=r {
                cells.insert([cx.saturating_add(dx), cz.saturating_add(dz)]);
            }
        }
    }
    cells
}

/// Counts each creature's time alone (on the ground, no player near) one
/// `interval` on; answers the transient ones alone for [`SLEEP_AFTER`]
/// (to put to sleep) and takes out of `asleep` those with a player near
/// again (to wake), at most [`WAKES_PER_SECOND`].
pub(crate) fn who_sleeps_and_wakes(
    creatures: &mut [Creature],
    asleep: &mut Vec<Creature>,
    cells: &HashSet<[i32; 2]>,
    interval: f64,
) -> (Vec<u64>, Vec<Creature>) {
    let mut sleepers = Vec::new();
    for creature in creatures {
        let alone =
            creature.state.on_ground && !cells.contains(&active_cell(creature.state.position));
        creature.alone_for = if alone {
            creature.alone_for + interval
        } else {
            0.0
        };
        if alone && !KINDS[creature.kind].persistent && creature.alone_for >= SLEEP_AFTER {
            sleepers.push(creature.id);
        }
    }
    let mut waking = Vec::new();
    let mut index = 0;
    while index < asleep.len() && waking.len() < WAKES_PER_SECOND {
        if cells.contains(&active_cell(asleep[index].state.position)) {
            waking.push(asleep.swap_remove(index));
        } else {
            index += 1;
        }
    }
    (sleepers, waking)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn creatures_near_a_player_are_active_and_far_ones_are_not() {
        let cells = active_cells(&[[10.0, 5.0, -10.0]], 100.0);
        // 100 voxels round up to 4 cells each way: 9 × 9 cells.
        assert_eq!(cells.len(), 81);
        assert!(
            cells.contains(&active_cell([10.0, 90.0, -10.0])),
            "y is ignored"
        );
        assert!(cells.contains(&active_cell([100.0, 0.0, -100.0])));
        assert!(cells.contains(&active_cell([-128.0, 0.0, 0.0])));
        assert!(!cells.contains(&active_cell([-129.0, 0.0, 0.0])));
        assert!(!cells.contains(&active_cell([300.0, 0.0, 0.0])));
        assert!(active_cells(&[], 100.0).is_empty(), "no player: all stand");
        // Absurd positions stay in edge cells instead of overflowing.
        let edge = active_cells(&[[f64::MAX, 0.0, f64::MIN]], 64.0);
        assert!(edge.contains(&[i32::MAX, i32::MIN]));
    }

    #[test]
    fn a_transient_creature_alone_falls_asleep_and_wakes_when_a_player_comes() {
        let mut rng = Rng::new(7);
        let chicken = KINDS.iter().position(|k| !k.persistent).unwrap();
        let cow = KINDS.iter().position(|k| k.persistent).unwrap();
        let far = [5000.5, 10.0, 0.5];
        let mut creatures = vec![
            Creature::new(1, chicken, far, &mut rng),
            Creature::new(2, cow, far, &mut rng),
            Creature::new(3, chicken, [0.5, 10.0, 0.5], &mut rng),
        ];
        for creature in &mut creatures {
            creature.state.on_ground = true;
        }
        let mut asleep = Vec::new();
        let near_origin = active_cells(&[[0.0, 10.0, 0.0]], 64.0);
        let mut slept = Vec::new();
        let mut seconds = 0.0;
        while slept.is_empty() {
            let (sleepers, waking) =
                who_sleeps_and_wakes(&mut creatures, &mut asleep, &near_origin, 1.0);
            assert!(waking.is_empty());
            slept = sleepers;
            seconds += 1.0;
            assert!(seconds <= SLEEP_AFTER + 1.0);
        }
        assert_eq!(
            slept,
            vec![1],
            "the far chicken; never a cow, never one near"
        );
        assert_eq!(creatures[2].alone_for, 0.0);
        // Asleep where it stood; a player comes near it: it wakes.
        asleep.push(creatures.remove(0));
        let (_, waking) = who_sleeps_and_wakes(&mut creatures, &mut asleep, &near_origin, 1.0);
        assert!(waking.is_empty() && asleep.len() == 1);
        let near_it = active_cells(&[far], 64.0);
        let (_, waking) = who_sleeps_and_wakes(&mut creatures, &mut asleep, &near_it, 1.0);
        assert_eq!(waking.len(), 1);
        assert_eq!(waking[0].state.position, far);
        assert!(asleep.is_empty());
    }
}
