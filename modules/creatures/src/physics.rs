//! A creature's body in the voxel grid: gravity, landing, walking with
//! collision against solid voxels, stepping up one voxel, and how far the
//! ground drops ahead (so the wandering can turn at a cliff).
//!
//! Owns: [`step`], [`ground_drop`] and the voxels each may read
//! ([`needed`]). Pure: the world is a function from a voxel to whether it
//! is solid (`None`: not known, its section not generated or not fetched),
//! and a step that would read an unknown voxel moves nothing and answers
//! `None`. Does not own: where the voxels come from (`lib.rs` fetches them
//! in batches), deciding where to walk (`wander.rs`).
//!
//! A body is an upright box: `half_width` around its position in x and z,
//! `height` up from it; the position is the middle of its feet. Voxel
//! `[i, j, k]` fills `[i, i + 1) × [j, j + 1) × [k, k + 1)`.

use buildat_voxel::geometry::Pos;

/// Voxels a second per second, downwards.
pub const GRAVITY: f64 = 20.0;
/// Fastest fall, voxels a second.
pub const TERMINAL_SPEED: f64 = 30.0;
/// Most a body moves along one axis between two collision checks.
const SUBSTEP: f64 = 0.25;
/// Deepest drop (air voxels under the feet ahead) a creature walks into.
pub const MAX_DROP: i32 = 3;
/// How far ahead of its edge a creature looks for a drop.
pub const LOOKAHEAD: f64 = 0.5;

/// A creature's shape.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Body {
    /// Half the width in x and in z, below 0.5 (the box spans at most two
    /// voxels across).
    pub half_width: f64,
    /// Height above the feet.
    pub height: f64,
}

/// Where a body is and how it moves.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct State {
    /// The middle of the feet.
    pub position: [f64; 3],
    /// Voxels a second.
    pub velocity: [f64; 3],
    /// Standing on a solid voxel.
    pub on_ground: bool,
}

impl State {
    /// At `position`, still, not known to stand on anything yet.
    pub fn at(position: [f64; 3]) -> Self {
        Self {
            position,
            velocity: [0.0; 3],
            on_ground: false,
        }
    }
}

/// What a [`step`] did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Outcome {
    pub state: State,
    /// A wall it could not step over stopped it along x or z.
    pub blocked: bool,
}

/// An inclusive box of voxels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VoxelBox {
    pub min: Pos,
    pub max: Pos,
}

impl VoxelBox {
    /// Every voxel in it, x fastest.
    pub fn voxels(self) -> impl Iterator<Item = Pos> {
        let VoxelBox { min, max } = self;
        (min[2]..=max[2]).flat_map(move |z| {
            (min[1]..=max[1]).flat_map(move |y| (min[0]..=max[0]).map(move |x| [x, y, z]))
        })
    }
}

/// The voxels overlapping `[low, high)` along one axis.
fn span(low: f64, high: f64) -> (i32, i32) {
    (low.floor() as i32, high.ceil() as i32 - 1)
}

/// Whether the body at `position` overlaps a solid voxel; `None` if it
/// overlaps a voxel not known.
fn collides(
    body: &Body,
    position: [f64; 3],
    solid: &mut impl FnMut(Pos) -> Option<bool>,
) -> Option<bool> {
    let [x, y, z] = position;
    let w = body.half_width;
    let (x0, x1) = span(x - w, x + w);
    let (y0, y1) = span(y, y + body.height);
    let (z0, z1) = span(z - w, z + w);
    let mut hit = false;
    for vz in z0..=z1 {
        for vy in y0..=y1 {
            for vx in x0..=x1 {
                // Every voxel is read, so an unknown one is never hidden
                // behind a solid one (the step must not depend on order).
                hit |= solid([vx, vy, vz])?;
            }
        }
    }
    Some(hit)
}

/// Whether a solid voxel is right under the feet.
fn grounded(
    body: &Body,
    position: [f64; 3],
    solid: &mut impl FnMut(Pos) -> Option<bool>,
) -> Option<bool> {
    let [x, y, z] = position;
    let feet = Body {
        half_width: body.half_width,
        height: 0.05,
    };
    collides(&feet, [x, y - 0.05, z], solid)
}

/// Moves a body `dt` seconds: gravity, then `walk` (voxels a second along
/// x and z) with collisions, stepping up one voxel onto a block when on the
/// ground and there is room, then falling or landing. A body found inside
/// a solid voxel (one placed on it) is lifted one voxel if there is room.
/// At most one voxel up per step. `None`: a voxel it needed is unknown
/// (nothing moved; wait).
pub fn step(
    body: &Body,
    state: &State,
    walk: [f64; 2],
    dt: f64,
    mut solid: impl FnMut(Pos) -> Option<bool>,
) -> Option<Outcome> {
    let dt = dt.max(0.0);
    let mut position = state.position;
    let mut vy = state.velocity[1];
    let mut on_ground = state.on_ground;
    let mut blocked = false;
    let mut climbed = false;
    let mut moved_axis = [walk[0] != 0.0, walk[1] != 0.0];

    if collides(body, position, &mut solid)? {
        let lifted = [position[0], position[1].floor() + 1.0, position[2]];
        if !collides(body, lifted, &mut solid)? {
            position = lifted;
            climbed = true;
            vy = 0.0;
        }
    }

    let fall = (vy.abs() + GRAVITY * dt).min(TERMINAL_SPEED) * dt;
    let travel = walk[0].abs().max(walk[1].abs()) * dt;
    let substeps = (fall.max(travel) / SUBSTEP).ceil().clamp(1.0, 1000.0) as u32;
    let h = dt / f64::from(substeps);
    for _ in 0..substeps {
        vy = (vy - GRAVITY * h).max(-TERMINAL_SPEED);
        for (axis, index) in [(0usize, 0usize), (2, 1)] {
            if !moved_axis[index] {
                continue;
            }
            let mut next = position;
            let delta = walk[index] * h;
            next[axis] += delta;
            if !collides(body, next, &mut solid)? {
                position = next;
                continue;
            }
            // Up to the face of the voxel it ran into.
            let w = body.half_width;
            let mut contact = position;
            contact[axis] = if delta > 0.0 {
                (next[axis] + w).ceil() - 1.0 - w
            } else {
                (next[axis] - w).floor() + 1.0 + w
            };
            let between = (contact[axis] - position[axis]) * delta.signum() >= 0.0;
            if between && !collides(body, contact, &mut solid)? {
                position = contact;
            }
            let up = [next[0], position[1].floor() + 1.0, next[2]];
            let headroom = [position[0], up[1], position[2]];
            if on_ground
                && !climbed
                && !collides(body, headroom, &mut solid)?
                && !collides(body, up, &mut solid)?
            {
                position = up;
                climbed = true;
                vy = 0.0;
            } else {
                blocked = true;
                moved_axis[index] = false;
            }
        }
        let mut next = position;
        next[1] += vy * h;
        if collides(body, next, &mut solid)? {
            if vy < 0.0 {
                // Moving down, only the layer the feet enter can be new:
                // land on it (never higher than it was, if already stuck).
                position[1] = position[1].min(next[1].floor() + 1.0);
                on_ground = true;
            }
            vy = 0.0;
        } else {
            position = next;
            on_ground = false;
        }
    }
    if vy <= 0.0 && grounded(body, position, &mut solid)? {
        on_ground = true;
        vy = 0.0;
    } else {
        on_ground = false;
    }
    let walk_velocity = |index: usize| {
        if moved_axis[index] { walk[index] } else { 0.0 }
    };
    Some(Outcome {
        state: State {
            position,
            velocity: [walk_velocity(0), vy, walk_velocity(1)],
            on_ground,
        },
        blocked,
    })
}

/// The column a body walking along `direction` (any length but zero) steps
/// into next: just past its edge.
fn column_ahead(body: &Body, position: [f64; 3], direction: [f64; 2]) -> Option<[i32; 2]> {
    let length = direction[0].hypot(direction[1]);
    if length < 1e-9 || !length.is_finite() {
        return None;
    }
    let reach = body.half_width + LOOKAHEAD;
    Some([
        (position[0] + direction[0] / length * reach).floor() as i32,
        (position[2] + direction[1] / length * reach).floor() as i32,
    ])
}

/// How many voxels the ground drops in the column ahead of a body standing
/// at `position` and walking along `direction`: 0 when the voxel under the
/// feet there is solid (or the column is a wall or a step, which [`step`]
/// handles), `MAX_DROP + 1` when nothing solid is within `MAX_DROP + 1`
/// voxels down. `Some(0)` when not walking; `None` if a voxel is unknown.
pub fn ground_drop(
    body: &Body,
    position: [f64; 3],
    direction: [f64; 2],
    mut solid: impl FnMut(Pos) -> Option<bool>,
) -> Option<i32> {
    let Some([x, z]) = column_ahead(body, position, direction) else {
        return Some(0);
    };
    let feet = position[1].floor() as i32;
    if solid([x, feet, z])? {
        return Some(0);
    }
    for drop in 0..=MAX_DROP {
        if solid([x, feet - 1 - drop, z])? {
            return Some(drop);
        }
    }
    Some(MAX_DROP + 1)
}

/// Every voxel a [`step`] with these arguments may read (the box swept
/// by the body: down by its fall and the layer under it, up by a lift or a
/// step of one voxel), and those a [`ground_drop`] at the same position
/// along `walk` may read (the column ahead, when walking). A step with a
/// smaller `walk` (or none) reads no other voxels.
pub fn needed(body: &Body, state: &State, walk: [f64; 2], dt: f64) -> (VoxelBox, Option<VoxelBox>) {
    let dt = dt.max(0.0);
    let [x, y, z] = state.position;
    let w = body.half_width;
    let dx = walk[0].abs() * dt;
    let dz = walk[1].abs() * dt;
    let vy = state.velocity[1];
    let fall = (vy.abs() + GRAVITY * dt).min(TERMINAL_SPEED) * dt;
    let rise = vy.max(0.0) * dt;
    let (x0, x1) = span(x - w - dx, x + w + dx);
    let (z0, z1) = span(z - w - dz, z + w + dz);
    let y0 = (y - fall - 0.05).floor() as i32;
    let y1 = (y + 1.0 + body.height + rise).ceil() as i32 - 1;
    let motion = VoxelBox {
        min: [x0, y0, z0],
        max: [x1, y1, z1],
    };
    let feet = y.floor() as i32;
    let ahead = column_ahead(body, state.position, walk).map(|[ax, az]| VoxelBox {
        min: [ax, feet - 1 - MAX_DROP, az],
        max: [ax, feet, az],
    });
    (motion, ahead)
}

/// A turn about +y by `yaw` radians as a unit quaternion (x, y, z, w): a
/// node never turned faces +z, one turned by `yaw` faces
/// `(sin yaw, 0, cos yaw)`.
pub fn yaw_quaternion(yaw: f64) -> [f32; 4] {
    let half = yaw / 2.0;
    [0.0, half.sin() as f32, 0.0, half.cos() as f32]
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    const HEN: Body = Body {
        half_width: 0.2,
        height: 0.6,
    };
    const COW: Body = Body {
        half_width: 0.45,
        height: 1.4,
    };
    const DT: f64 = 0.1;

    /// Flat ground: every voxel with y < 0 solid, plus `blocks`.
    fn world(blocks: &[Pos]) -> impl Fn(Pos) -> Option<bool> + '_ {
        move |p: Pos| Some(p[1] < 0 || blocks.contains(&p))
    }

    /// Runs `ticks` steps, checking every read is inside [`needed`].
    fn run(
        body: &Body,
        mut state: State,
        walk: [f64; 2],
        ticks: usize,
        solid: impl Fn(Pos) -> Option<bool>,
    ) -> (State, bool) {
        let mut blocked = false;
        for _ in 0..ticks {
            let (motion, ahead) = needed(body, &state, walk, DT);
            let allowed: HashSet<Pos> = motion
                .voxels()
                .chain(ahead.into_iter().flat_map(VoxelBox::voxels))
                .collect();
            let read = |p: Pos| {
                assert!(allowed.contains(&p), "{p:?} read outside needed()");
                solid(p)
            };
            ground_drop(body, state.position, walk, read).expect("known ahead");
            let outcome = step(body, &state, walk, DT, read).expect("every voxel known");
            blocked |= outcome.blocked;
            state = outcome.state;
        }
        (state, blocked)
    }

    #[test]
    fn a_creature_falls_to_the_ground_and_stays_there() {
        let start = State::at([0.5, 10.0, 0.5]);
        let (state, _) = run(&HEN, start, [0.0, 0.0], 30, world(&[]));
        assert_eq!(state.position, [0.5, 0.0, 0.5]);
        assert!(state.on_ground);
        assert_eq!(state.velocity, [0.0; 3]);
        let (again, _) = run(&HEN, state, [0.0, 0.0], 10, world(&[]));
        assert_eq!(again, state, "resting stays put");
    }

    #[test]
    fn a_fast_fall_does_not_pass_through_a_thin_floor() {
        let floor: Vec<Pos> = (-1..=1)
            .flat_map(|x| (-1..=1).map(move |z| [x, 20, z]))
            .collect();
        let mut start = State::at([0.5, 60.0, 0.5]);
        start.velocity[1] = -TERMINAL_SPEED;
        let (state, _) = run(&HEN, start, [0.0, 0.0], 40, world(&floor));
        assert_eq!(state.position[1], 21.0);
        assert!(state.on_ground);
    }

    #[test]
    fn a_creature_does_not_walk_through_a_wall() {
        // A wall two voxels high at x = 3.
        let wall: Vec<Pos> = (-2..=2).flat_map(|z| [[3, 0, z], [3, 1, z]]).collect();
        let start = State {
            position: [0.5, 0.0, 0.5],
            velocity: [0.0; 3],
            on_ground: true,
        };
        let (state, blocked) = run(&COW, start, [3.0, 0.0], 30, world(&wall));
        assert!(blocked);
        assert!(
            (state.position[0] - (3.0 - COW.half_width)).abs() < 1e-9,
            "against the wall: {:?}",
            state.position
        );
        assert_eq!(state.position[1], 0.0);
        assert_eq!(state.velocity[0], 0.0, "stopped along x");
    }

    #[test]
    fn a_creature_steps_up_one_voxel() {
        let block: Vec<Pos> = (-2..=2)
            .flat_map(|z| (3..=9).map(move |x| [x, 0, z]))
            .collect();
        let start = State {
            position: [0.5, 0.0, 0.5],
            velocity: [0.0; 3],
            on_ground: true,
        };
        let (state, blocked) = run(&HEN, start, [3.0, 0.0], 20, world(&block));
        assert!(!blocked);
        assert_eq!(state.position[1], 1.0, "on top: {:?}", state.position);
        assert!(state.position[0] > 4.0);
        assert!(state.on_ground);
    }

    #[test]
    fn a_creature_walks_off_a_ledge_and_lands() {
        // Standing on a platform at y = 2 that ends at x = 2.
        let platform: Vec<Pos> = (-3..2)
            .flat_map(|x| (-2..=2).flat_map(move |z| (0..2).map(move |y| [x, y, z])))
            .collect();
        let start = State {
            position: [0.5, 2.0, 0.5],
            velocity: [0.0; 3],
            on_ground: true,
        };
        let (state, _) = run(&HEN, start, [3.0, 0.0], 20, world(&platform));
        assert_eq!(state.position[1], 0.0);
        assert!(state.on_ground);
    }

    #[test]
    fn a_step_in_the_air_needs_ground_under_the_feet() {
        let block = [[1, 0, 0]];
        // Falling past the block's side: no step up in mid-air.
        let start = State::at([0.5, 0.5, 0.5]);
        let outcome = step(&HEN, &start, [5.0, 0.0], DT, world(&block)).unwrap();
        assert!(outcome.blocked);
        assert!(outcome.state.position[0] <= 1.0 - HEN.half_width + 1e-9);
    }

    #[test]
    fn a_step_up_needs_headroom() {
        // The block to climb, and a ceiling one voxel above the hen.
        let blocks = [[1, 0, 0], [0, 1, 0], [-1, 1, 0]];
        let start = State {
            position: [0.5, 0.0, 0.5],
            velocity: [0.0; 3],
            on_ground: true,
        };
        let (state, blocked) = run(&HEN, start, [3.0, 0.0], 10, world(&blocks));
        assert!(blocked);
        assert_eq!(state.position[1], 0.0);
    }

    #[test]
    fn an_unknown_voxel_moves_nothing() {
        let start = State::at([0.5, 5.0, 0.5]);
        let unknown = |p: Pos| if p[1] < 3 { None } else { Some(false) };
        assert_eq!(step(&HEN, &start, [1.0, 0.0], 1.0, unknown), None);
    }

    #[test]
    fn a_body_inside_a_placed_voxel_is_lifted_onto_it() {
        let block = [[0, 0, 0]];
        let start = State {
            position: [0.5, 0.0, 0.5],
            velocity: [0.0; 3],
            on_ground: true,
        };
        let outcome = step(&HEN, &start, [0.0, 0.0], DT, world(&block)).unwrap();
        assert_eq!(outcome.state.position, [0.5, 1.0, 0.5]);
        assert!(outcome.state.on_ground);
    }

    #[test]
    fn the_drop_ahead_is_measured_to_the_next_solid_voxel() {
        let at = [0.5, 0.0, 0.5];
        let east = [1.0, 0.0];
        assert_eq!(ground_drop(&HEN, at, east, world(&[])), Some(0));
        // A pit two deep at x = 1.
        let pit = |p: Pos| Some(!(p[0] == 1 && (-2..0).contains(&p[1])) && p[1] < 0);
        assert_eq!(ground_drop(&HEN, at, east, pit), Some(2));
        // A cliff: nothing under x >= 1.
        let cliff = |p: Pos| Some(p[0] < 1 && p[1] < 0);
        assert_eq!(ground_drop(&HEN, at, east, cliff), Some(MAX_DROP + 1));
        assert_eq!(ground_drop(&HEN, at, [0.0, 0.0], cliff), Some(0));
        // Westwards the ground goes on.
        assert_eq!(ground_drop(&HEN, at, [-1.0, 0.0], cliff), Some(0));
    }

    #[test]
    fn the_yaw_quaternion_turns_plus_z_to_the_heading() {
        let [x, y, z, w] = yaw_quaternion(std::f64::consts::FRAC_PI_2).map(f64::from);
        assert!(x.abs() < 1e-6 && z.abs() < 1e-6);
        assert!((x * x + y * y + z * z + w * w - 1.0).abs() < 1e-6);
        // Rotating (0, 0, 1) by q: for a turn about y, x' = 2 w y.
        assert!((2.0 * w * y - 1.0).abs() < 1e-6, "faces +x");
        assert_eq!(yaw_quaternion(0.0), [0.0, 0.0, 0.0, 1.0]);
    }
}
