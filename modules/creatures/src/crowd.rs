//! Creatures keeping apart: from each other and from players.
//!
//! Owns: [`pushes`], the horizontal push that moves each creature out of the
//! bodies overlapping it, as entities push each other in Minecraft: soft,
//! in proportion to the overlap, so a herd spreads out over a few ticks
//! instead of standing inside itself, and a creature steps aside from a
//! player rather than through them. Players are pushed by nothing here (the
//! game moves them). Pure: bodies in, pushes out, a grid of one-voxel cells
//! so the cost follows the creatures, not their pairs (players are in
//! a grid of their own: a creature looks at the players in its nine cells,
//! not at every player).
//!
//! [`steer`] takes out of a walk the part that heads into the bodies
//! pushing it (a creature slides along another as along a wall) and adds
//! the push.
//!
//! Does not own: moving (the walk goes through `physics::step`, so a push
//! never moves anyone into a wall), where the players are (`lib.rs` reads
//! them).

use std::collections::HashMap;

/// An upright body: the middle of its feet, its half width (x and z, below
/// 0.5) and its height.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Occupant {
    pub position: [f64; 3],
    pub half_width: f64,
    pub height: f64,
}

/// A player's body, as the game's rules see it.
pub const PLAYER: (f64, f64) = (0.3, 1.8);

/// Voxels a second a creature is pushed at when it fully overlaps another.
pub const PUSH_SPEED: f64 = 8.0;

/// How deep an overlap (a fraction of the two half widths) makes a
/// creature count as crowded in the `creatures` report.
pub const CROWDED_DEPTH: f64 = 0.25;

/// A creature's walk among others: the part of `walk` that heads into the
/// bodies pushing it is taken away (it slides along them as along a wall),
/// and the push is added.
pub fn steer(walk: [f64; 2], push: [f64; 2]) -> [f64; 2] {
    let strength = push[0].hypot(push[1]);
    if strength == 0.0 {
        return walk;
    }
    let away = [push[0] / strength, push[1] / strength];
    let along = walk[0] * away[0] + walk[1] * away[1];
    let kept = if along < 0.0 {
        [walk[0] - along * away[0], walk[1] - along * away[1]]
    } else {
        walk
    };
    [kept[0] + push[0], kept[1] + push[1]]
}

/// Whether a creature pushed by `push` overlaps others deeper than
/// [`CROWDED_DEPTH`].
pub fn is_crowded(push: [f64; 2]) -> bool {
    push[0].hypot(push[1]) > CROWDED_DEPTH * PUSH_SPEED
}

/// For each of `creatures`, the push (x, z) in voxels a second away from
/// the other creatures and the `players` it overlaps; `[0, 0]` when it
/// overlaps nobody. Two bodies overlap when their circles (radius: half
/// width) do and their heights meet. Two at the very same point are pushed
/// apart along a direction that depends on their order.
pub fn pushes(creatures: &[Occupant], players: &[[f64; 3]]) -> Vec<[f64; 2]> {
    let creature_grid = grid(creatures.iter().map(|body| body.position));
    let player_grid = grid(players.iter().copied());
    let mut out = vec![[0.0; 2]; creatures.len()];
    for (index, body) in creatures.iter().enumerate() {
        let mut push = [0.0; 2];
        for other in near(&creature_grid, body.position) {
            if other != index {
                let apart = push_from(body, &creatures[other], index, other);
                push = [push[0] + apart[0], push[1] + apart[1]];
            }
        }
        for player in near(&player_grid, body.position) {
            let apart = push_from(body, &player_body(players[player]), index, usize::MAX);
            push = [push[0] + apart[0], push[1] + apart[1]];
        }
        out[index] = [push[0] * PUSH_SPEED, push[1] * PUSH_SPEED];
    }
    out
}

/// A player's body standing at `position`.
fn player_body(position: [f64; 3]) -> Occupant {
    Occupant {
        position,
        half_width: PLAYER.0,
        height: PLAYER.1,
    }
}

/// The one-voxel cell (x, z) a position is in.
fn cell(position: [f64; 3]) -> (i64, i64) {
    (position[0].floor() as i64, position[2].floor() as i64)
}

/// The indices of `positions` by the cell they are in.
fn grid(positions: impl Iterator<Item = [f64; 3]>) -> HashMap<(i64, i64), Vec<usize>> {
    let mut grid: HashMap<(i64, i64), Vec<usize>> = HashMap::new();
    for (index, position) in positions.enumerate() {
        grid.entry(cell(position)).or_default().push(index);
    }
    grid
}

/// The indices in `grid` of the cell of `position` and its eight
/// neighbours: every body that can reach one at `position` (two half
/// widths are below one voxel).
fn near(grid: &HashMap<(i64, i64), Vec<usize>>, position: [f64; 3]) -> impl Iterator<Item = usize> {
    let (cx, cz) = cell(position);
    (-1..=1)
        .flat_map(move |dx| (-1..=1).map(move |dz| (cx + dx, cz + dz)))
        .flat_map(|key| grid.get(&key).into_iter().flatten().copied())
}

/// The push on `body` away from `other`: the direction from `other` to it,
/// scaled by how deep they overlap (1 when their centres meet).
fn push_from(body: &Occupant, other: &Occupant, index: usize, other_index: usize) -> [f64; 2] {
    let (a, b) = (body.position, other.position);
    let heights_meet = a[1] < b[1] + other.height && b[1] < a[1] + body.height;
    let reach = body.half_width + other.half_width;
    let (dx, dz) = (a[0] - b[0], a[2] - b[2]);
    let distance = dx.hypot(dz);
    if !heights_meet || distance >= reach {
        return [0.0; 2];
    }
    let depth = 1.0 - distance / reach;
    if distance > 1e-6 {
        return [dx / distance * depth, dz / distance * depth];
    }
    // Exactly on top of each other: opposite ways, by their order.
    let angle = (index.min(other_index) as f64) * 2.399_963;
    let sign = if index < other_index { 1.0 } else { -1.0 };
    [angle.cos() * sign * depth, angle.sin() * sign * depth]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chicken(x: f64, z: f64) -> Occupant {
        Occupant {
            position: [x, 10.0, z],
            half_width: 0.2,
            height: 0.6,
        }
    }

    #[test]
    fn bodies_apart_are_not_pushed() {
        let pushes = pushes(&[chicken(0.0, 0.0), chicken(0.5, 0.0)], &[]);
        assert_eq!(pushes, vec![[0.0; 2]; 2]);
    }

    #[test]
    fn overlapping_bodies_are_pushed_apart_equally() {
        let pushes = pushes(&[chicken(0.0, 0.0), chicken(0.2, 0.0)], &[]);
        assert!(pushes[0][0] < 0.0 && pushes[1][0] > 0.0, "{pushes:?}");
        assert!((pushes[0][0] + pushes[1][0]).abs() < 1e-9);
        assert_eq!(pushes[0][1], 0.0);
    }

    #[test]
    fn bodies_at_one_point_go_opposite_ways() {
        let pushes = pushes(&[chicken(3.5, 3.5), chicken(3.5, 3.5)], &[]);
        assert!(pushes[0] != [0.0; 2]);
        assert!((pushes[0][0] + pushes[1][0]).abs() < 1e-9);
        assert!((pushes[0][1] + pushes[1][1]).abs() < 1e-9);
    }

    #[test]
    fn bodies_at_other_heights_pass() {
        let mut above = chicken(0.1, 0.0);
        above.position[1] += 1.0;
        assert_eq!(pushes(&[chicken(0.0, 0.0), above], &[]), vec![[0.0; 2]; 2]);
    }

    #[test]
    fn a_creature_steps_aside_from_a_player_across_a_cell_border() {
        let pushes = pushes(&[chicken(0.95, 0.0)], &[[1.1, 10.0, 0.0]]);
        assert!(pushes[0][0] < 0.0, "{pushes:?}");
    }

    #[test]
    fn the_grids_find_every_push_a_look_at_every_pair_finds() {
        // A tight crowd of creatures and players, every pair looked at.
        let mut seed = 7_u64;
        let mut next = move || {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            (seed >> 11) as f64 / (1_u64 << 53) as f64
        };
        let creatures: Vec<Occupant> = (0..300)
            .map(|i| Occupant {
                position: [next() * 12.0 - 6.0, 10.0 + next(), next() * 12.0 - 6.0],
                half_width: [0.2, 0.45, 0.35][i % 3],
                height: 1.0,
            })
            .collect();
        let players: Vec<[f64; 3]> = (0..60)
            .map(|_| [next() * 12.0 - 6.0, 10.0, next() * 12.0 - 6.0])
            .collect();
        let every_pair: Vec<[f64; 2]> = creatures
            .iter()
            .enumerate()
            .map(|(index, body)| {
                let mut push = [0.0; 2];
                for (other, them) in creatures.iter().enumerate() {
                    if other != index {
                        let apart = push_from(body, them, index, other);
                        push = [push[0] + apart[0], push[1] + apart[1]];
                    }
                }
                for &position in &players {
                    let apart = push_from(body, &player_body(position), index, usize::MAX);
                    push = [push[0] + apart[0], push[1] + apart[1]];
                }
                [push[0] * PUSH_SPEED, push[1] * PUSH_SPEED]
            })
            .collect();
        let found = pushes(&creatures, &players);
        assert!(found.iter().filter(|p| **p != [0.0; 2]).count() > 100);
        for (index, (a, b)) in found.iter().zip(&every_pair).enumerate() {
            assert!(
                (a[0] - b[0]).abs() < 1e-9 && (a[1] - b[1]).abs() < 1e-9,
                "creature {index}: {a:?} against {b:?}"
            );
        }
    }

    #[test]
    fn a_walk_into_a_neighbour_slides_along_it() {
        // Pushed towards -x by a neighbour on its +x side, walking +x and +z:
        // the +x part goes, the +z part stays, the push is added.
        let walk = steer([2.0, 1.0], [-0.5, 0.0]);
        assert!(
            (walk[0] + 0.5).abs() < 1e-9 && (walk[1] - 1.0).abs() < 1e-9,
            "{walk:?}"
        );
        // Walking away already: kept whole.
        assert_eq!(steer([-2.0, 0.0], [-0.5, 0.0]), [-2.5, 0.0]);
        assert_eq!(steer([1.0, 1.0], [0.0, 0.0]), [1.0, 1.0]);
        assert!(is_crowded([-0.5 * PUSH_SPEED, 0.0]));
        assert!(!is_crowded([-0.1 * PUSH_SPEED, 0.0]));
    }

    #[test]
    fn a_herd_on_one_point_spreads_out_and_stops() {
        let mut herd: Vec<Occupant> = (0..20).map(|_| chicken(0.5, 0.5)).collect();
        for _ in 0..400 {
            let pushes = pushes(&herd, &[]);
            for (body, push) in herd.iter_mut().zip(pushes) {
                body.position[0] += push[0] * 0.05;
                body.position[2] += push[1] * 0.05;
            }
        }
        let mut worst: f64 = f64::MAX;
        for (i, a) in herd.iter().enumerate() {
            for b in &herd[i + 1..] {
                let d = (a.position[0] - b.position[0]).hypot(a.position[2] - b.position[2]);
                worst = worst.min(d);
            }
        }
        // Overlaps shrink to a sliver (soft pushes settle just short of 0.4).
        assert!(worst > 0.3, "closest pair {worst}");
    }
}
