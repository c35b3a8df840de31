//! The game's rules, pure: what a player may do, and the news gathered per
//! tick.
//!
//! Owns: validation limits (move distance, the world border, speed over time, gravity,
//! collision of the player's box with solid voxels, reach with line of
//! sight, action rate) and [`News`]. The movement and sight rules name the voxels they
//! need ([`move_voxels`], [`sight_voxels`]) and judge from their solidity
//! ([`judge_move`], [`visible`]), so the game asks the world once per
//! action. Does not own: the packets' layouts (`buildat-main-api`), the
//! world or the network (`lib.rs`).

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::time::{Duration, Instant};

use buildat_main_api::{Edit, Edits};
use buildat_voxel::geometry::Pos;
use buildat_voxelworld_api::Border;

/// Longest move accepted in one `main:move`, in voxels.
pub const MAX_MOVE: f64 = 16.0;
/// Farthest voxel a player may dig or place, from its position.
pub const REACH: f64 = 8.0;
/// Actions (digs and places) accepted per second.
pub const MAX_ACTIONS_PER_SECOND: usize = 20;
/// Longest voxel name a place may carry (longer is never registered).
pub const MAX_VOXEL_NAME: usize = 256;
/// Height of a player's body, feet to the top of the head, in voxels (the
/// client's box: `client/src/render/player.rs` `HEIGHT`).
pub const BODY_HEIGHT: f64 = 1.8;
/// Width of a player's body on x and z, centred on the position (the
/// client's box: `WIDTH` there).
pub const BODY_WIDTH: f64 = 0.6;
/// How far the box may sink into a voxel's face and not be in it: a
/// client touching a wall stands a hair off it; rounding is forgiven.
const BODY_SLACK: f64 = 1e-3;
/// Height of the eyes above the feet.
pub const EYE_HEIGHT: f64 = 1.6;
/// Highest the feet may be above the ground below them at the end of a
/// move that does not go down (a jump or a step up); higher is flying.
pub const JUMP_HEIGHT: f64 = 3.5;
/// How fast the default client walks, in voxels a second
/// (`client/src/render/player.rs` `WALK_SPEED`; it has no sprint). Its
/// jump (8 voxels a second up, gravity 24) rises 1.33 voxels.
pub const CLIENT_WALK_SPEED: f64 = 4.5;
/// Default top speed, in voxels a second (setting `main.max_speed`): 1.5×
/// the client's walk, so a player walking and jumping at every landing,
/// on the flat or up stairs (5.5–5.8 voxels a second of path), is never
/// corrected, and a cheat gains at most half again.
pub const DEFAULT_MAX_SPEED: f64 = 1.5 * CLIENT_WALK_SPEED;

/// Why a move from `from` to `to` crosses the world border (`voxelworld.border`),
/// if it does: it ends beyond the border and farther out than it started
/// (a player beyond it already, put there before the border was set, may
/// come back). Every player is held to it, whatever its privileges.
pub fn check_border(border: Option<Border>, from: [f64; 3], to: [f64; 3]) -> Result<(), String> {
    let Some(border) = border else {
        return Ok(());
    };
    let out = border.beyond(to);
    if out > 0.0 && out > border.beyond(from) {
        return Err(format!(
            "the world ends here: its border is {} blocks from 0,0 on x and z",
            border.blocks
        ));
    }
    Ok(())
}

/// Why a position is not in the world, if it is not.
pub fn check_position(position: [f64; 3]) -> Result<(), String> {
    if position.iter().any(|p| !p.is_finite() || p.abs() > 1e7) {
        return Err("the position is out of the world".into());
    }
    Ok(())
}

/// Moves and edits waiting for the next tick: the moves go to the
/// players' nodes (`replicate` tells clients), the edits as `main:edits`
/// (docs/protocol.md §10).
#[derive(Debug, Default, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct News {
    /// The latest position of each player that moved.
    moves: BTreeMap<u64, [f64; 3]>,
    /// Edits in order: who, which voxel, the new voxel's name.
    edits: Vec<(u64, [i32; 3], String)>,
}

/// Whether `b` is within `radius` of `a` on the ground (x and z).
fn near(a: [f64; 3], b: [f64; 3], radius: f64) -> bool {
    let (dx, dz) = (a[0] - b[0], a[2] - b[2]);
    dx * dx + dz * dz <= radius * radius
}

impl News {
    pub fn moved(&mut self, peer: u64, position: [f64; 3]) {
        self.moves.insert(peer, position);
    }

    pub fn edit(&mut self, peer: u64, voxel: [i32; 3], name: &str) {
        self.edits.push((peer, voxel, name.to_string()));
    }

    /// Forgets a player's pending move (it left).
    pub fn forget(&mut self, peer: u64) {
        self.moves.remove(&peer);
    }

    /// Takes the latest position of each player that moved.
    pub fn take_moves(&mut self) -> BTreeMap<u64, [f64; 3]> {
        std::mem::take(&mut self.moves)
    }

    /// Takes the edits and shares them out: each of `players` (peer,
    /// position) gets the edits within `radius` voxels of it (x and z;
    /// infinite: everything). Players that get the same edits are one
    /// share (so the packet is made once for all of them, however many
    /// stand in one place); players with no news are left out. Shares
    /// come in the order of their first player, each's peers in the order
    /// given.
    pub fn share_edits(&mut self, players: &[(u64, [f64; 3])], radius: f64) -> Vec<EditShare> {
        let edits = std::mem::take(&mut self.edits);
        if edits.is_empty() {
            return Vec::new();
        }
        let centres: Vec<[f64; 3]> = edits
            .iter()
            .map(|(_, voxel, _)| voxel.map(|v| f64::from(v) + 0.5))
            .collect();
        // Which edits each player gets, as their indices: the key of its
        // share.
        let mut share_of: HashMap<Vec<usize>, usize> = HashMap::new();
        let mut shares: Vec<(Vec<usize>, Vec<u64>)> = Vec::new();
        for (peer, position) in players {
            let near_edits: Vec<usize> = (0..edits.len())
                .filter(|i| near(*position, centres[*i], radius))
                .collect();
            if near_edits.is_empty() {
                continue;
            }
            match share_of.get(&near_edits) {
                Some(&share) => shares[share].1.push(*peer),
                None => {
                    share_of.insert(near_edits.clone(), shares.len());
                    shares.push((near_edits, vec![*peer]));
                }
            }
        }
        shares
            .into_iter()
            .map(|(indices, peers)| EditShare {
                peers,
                edits: Edits {
                    edits: indices
                        .into_iter()
                        .map(|i| {
                            let (peer, voxel, name) = &edits[i];
                            Edit {
                                peer: *peer,
                                voxel: *voxel,
                                name: name.clone(),
                            }
                        })
                        .collect(),
                },
            })
            .collect()
    }
}

/// Edits that go alike to several players ([`News::share_edits`]).
#[derive(Debug, Clone, PartialEq)]
pub struct EditShare {
    pub peers: Vec<u64>,
    pub edits: Edits,
}

/// A player's movement allowance: distance earned at the top speed over
/// time, at most [`MAX_MOVE`] saved up, so many small moves go no faster
/// than one big one. Falling is free (gravity does it).
#[derive(Debug, Clone)]
pub struct Motion {
    credit: f64,
    earned: Instant,
}

impl Motion {
    pub fn new(now: Instant) -> Self {
        Self {
            credit: MAX_MOVE,
            earned: now,
        }
    }

    /// The distance a move from `from` to `to` costs: its length, with
    /// going down free (gravity does it).
    fn cost(from: [f64; 3], to: [f64; 3]) -> f64 {
        let (dx, dz) = (to[0] - from[0], to[2] - from[2]);
        let up = (to[1] - from[1]).max(0.0);
        (dx * dx + dz * dz + up * up).sqrt()
    }

    /// Spends the move's cost if the allowance covers it at `max_speed`
    /// voxels a second; why not otherwise (nothing is spent).
    pub fn spend(
        &mut self,
        from: [f64; 3],
        to: [f64; 3],
        max_speed: f64,
        now: Instant,
    ) -> Result<(), String> {
        let elapsed = now.saturating_duration_since(self.earned).as_secs_f64();
        self.credit = (self.credit + elapsed * max_speed).min(MAX_MOVE);
        self.earned = now;
        let cost = Self::cost(from, to);
        if cost > self.credit {
            return Err(format!("moved faster than {max_speed} voxels a second"));
        }
        self.credit -= cost;
        Ok(())
    }
}

fn voxel_at(position: [f64; 3]) -> Pos {
    position.map(|p| p.floor() as i32)
}

/// The columns (x, z) the body's box stands in with its feet at
/// `position`: one to four.
fn footprint(position: [f64; 3]) -> impl Iterator<Item = (i32, i32)> {
    let half = BODY_WIDTH / 2.0 - BODY_SLACK;
    let span = |c: f64| (c - half).floor() as i32..=(c + half).floor() as i32;
    let zs = span(position[2]);
    span(position[0]).flat_map(move |x| zs.clone().map(move |z| (x, z)))
}

/// The voxels a body (its box, [`BODY_WIDTH`] × [`BODY_HEIGHT`]) with its
/// feet at `position` is in.
fn body_at(position: [f64; 3], out: &mut BTreeSet<Pos>) {
    let bottom = (position[1] + BODY_SLACK).floor() as i32;
    let top = (position[1] + BODY_HEIGHT - BODY_SLACK).floor() as i32;
    for (x, z) in footprint(position) {
        for y in bottom..=top {
            out.insert([x, y, z]);
        }
    }
}

/// The voxels a move needs checked: the body's box along the way (at the
/// higher of the two heights: a step up is taken first, a step down last)
/// and at the end, and the ground below the end under the whole box.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MoveVoxels {
    pub path: BTreeSet<Pos>,
    pub ground: Vec<Pos>,
}

impl MoveVoxels {
    /// Every position, for one lookup.
    pub fn all(&self) -> Vec<Pos> {
        self.path.iter().chain(&self.ground).copied().collect()
    }
}

/// What [`judge_move`] needs to know of `from` → `to`.
pub fn move_voxels(from: [f64; 3], to: [f64; 3]) -> MoveVoxels {
    let mut path = BTreeSet::new();
    let top = from[1].max(to[1]);
    let steps = (distance(from, to) * 4.0).ceil().max(1.0) as usize;
    for i in 0..=steps {
        let t = i as f64 / steps as f64;
        let at = [
            from[0] + (to[0] - from[0]) * t,
            top,
            from[2] + (to[2] - from[2]) * t,
        ];
        body_at(at, &mut path);
    }
    body_at(to, &mut path);
    let y = (to[1] + BODY_SLACK).floor() as i32;
    let ground = footprint(to)
        .flat_map(|(x, z)| (1..=JUMP_HEIGHT.ceil() as i32 + 1).map(move |below| [x, y - below, z]))
        .collect();
    MoveVoxels { path, ground }
}

/// Whether `from` → `to` is a walk: no solid voxel in the way, and the
/// feet near the ground at the end unless the move goes down. `solid`
/// answers `None` for voxels the world has not generated: they block
/// nothing and hold a player up (a player at the edge of the generated
/// world is not refused for it).
pub fn judge_move(
    from: [f64; 3],
    to: [f64; 3],
    voxels: &MoveVoxels,
    checks: MoveChecks,
    solid: impl Fn(Pos) -> Option<bool>,
) -> Result<(), String> {
    if checks.collide
        && let Some(blocked) = voxels.path.iter().find(|v| solid(**v) == Some(true))
    {
        return Err(format!(
            "the way is blocked by a solid voxel at {blocked:?}"
        ));
    }
    if !checks.gravity || to[1] < from[1] {
        return Ok(());
    }
    let feet = to[1];
    let supported = voxels.ground.iter().any(|v| {
        let top = f64::from(v[1]) + 1.0;
        feet - top <= JUMP_HEIGHT && solid(*v) != Some(false)
    });
    if supported {
        Ok(())
    } else {
        Err(format!(
            "nothing to stand on within {JUMP_HEIGHT} voxels below (no flying)"
        ))
    }
}

/// Which movement rules hold for a player (its privileges lift them:
/// `noclip` collisions, `fly` gravity).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MoveChecks {
    pub collide: bool,
    pub gravity: bool,
}

impl MoveChecks {
    /// Every rule.
    pub const ALL: Self = Self {
        collide: true,
        gravity: true,
    };
}

/// The eyes of a player standing at `position`.
pub fn eyes(position: [f64; 3]) -> [f64; 3] {
    [position[0], position[1] + EYE_HEIGHT, position[2]]
}

/// The voxels a ray from `from` to `to` passes through, in order, without
/// the one `to` is in (a 3D DDA: every voxel the segment touches).
fn ray_voxels(from: [f64; 3], to: [f64; 3], out: &mut Vec<Pos>) {
    let end = voxel_at(to);
    let mut voxel = voxel_at(from);
    let direction = [to[0] - from[0], to[1] - from[1], to[2] - from[2]];
    let mut step = [0i32; 3];
    let mut t_max = [f64::INFINITY; 3];
    let mut t_delta = [f64::INFINITY; 3];
    for axis in 0..3 {
        let d = direction[axis];
        if d > 0.0 {
            step[axis] = 1;
            t_max[axis] = (f64::from(voxel[axis]) + 1.0 - from[axis]) / d;
            t_delta[axis] = 1.0 / d;
        } else if d < 0.0 {
            step[axis] = -1;
            t_max[axis] = (f64::from(voxel[axis]) - from[axis]) / d;
            t_delta[axis] = -1.0 / d;
        }
    }
    // A segment within reach crosses few voxels; the bound guards the loop.
    for _ in 0..256 {
        if voxel == end {
            return;
        }
        out.push(voxel);
        let axis = if t_max[0] <= t_max[1] && t_max[0] <= t_max[2] {
            0
        } else if t_max[1] <= t_max[2] {
            1
        } else {
            2
        };
        if t_max[axis] > 1.0 {
            return;
        }
        voxel[axis] += step[axis];
        t_max[axis] += t_delta[axis];
    }
}

/// Rays from the eyes to the target voxel: to its centre and to the centre
/// of each face, slightly inside it. The target is seen if any ray is
/// clear, so an edge in the way of the centre does not hide a face.
pub fn sight_voxels(eyes: [f64; 3], target: Pos) -> Vec<Vec<Pos>> {
    let centre = target.map(|v| f64::from(v) + 0.5);
    let mut points = vec![centre];
    for axis in 0..3 {
        for side in [-0.45, 0.45] {
            let mut point = centre;
            point[axis] += side;
            points.push(point);
        }
    }
    points
        .into_iter()
        .map(|point| {
            let mut voxels = Vec::new();
            ray_voxels(eyes, point, &mut voxels);
            voxels
        })
        .collect()
}

/// Whether any of the rays is clear of solid voxels (not generated counts
/// as clear).
pub fn visible(rays: &[Vec<Pos>], solid: impl Fn(Pos) -> Option<bool>) -> bool {
    rays.iter()
        .any(|ray| ray.iter().all(|v| solid(*v) != Some(true)))
}

pub fn distance(a: [f64; 3], b: [f64; 3]) -> f64 {
    ((a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2) + (a[2] - b[2]).powi(2)).sqrt()
}

/// Whether a voxel is within reach of a player standing at `position`
/// (measured from the eyes, 1.6 above the feet, to the voxel's centre).
pub fn in_reach(position: [f64; 3], voxel: [i32; 3]) -> bool {
    let centre = voxel.map(|v| f64::from(v) + 0.5);
    distance(eyes(position), centre) <= REACH
}

/// A sliding window of a player's actions (digs and places: one second,
/// [`MAX_ACTIONS_PER_SECOND`]; chat lines: [`CHAT_LIMIT`]).
pub struct RateLimit {
    recent: VecDeque<Instant>,
    limit: usize,
    window: Duration,
}

impl Default for RateLimit {
    fn default() -> Self {
        Self::new(MAX_ACTIONS_PER_SECOND, Duration::from_secs(1))
    }
}

/// Chat lines (and commands) a player may send: this many in this long.
pub const CHAT_LIMIT: (usize, Duration) = (5, Duration::from_secs(5));

impl RateLimit {
    /// At most `limit` in any `window`.
    pub fn new(limit: usize, window: Duration) -> Self {
        Self {
            recent: VecDeque::new(),
            limit,
            window,
        }
    }

    /// Records an action now; false if it is over the limit.
    pub fn allow(&mut self, now: Instant) -> bool {
        while self
            .recent
            .front()
            .is_some_and(|t| now.saturating_duration_since(*t) >= self.window)
        {
            self.recent.pop_front();
        }
        if self.recent.len() >= self.limit {
            return false;
        }
        self.recent.push_back(now);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn news_keeps_the_latest_move_and_every_edit_in_order() {
        let mut news = News::default();
        assert!(news.share_edits(&[(1, [0.0; 3])], f64::INFINITY).is_empty());
        news.moved(7, [1.0, 2.0, 3.0]);
        news.moved(5, [0.0, 0.0, 0.0]);
        news.moved(7, [4.0, 5.0, 6.0]);
        news.moved(9, [1.0, 1.0, 1.0]);
        news.forget(9);
        news.edit(7, [1, -2, 3], "stone");
        news.edit(5, [0, 0, 0], "air");
        assert_eq!(
            news.take_moves().into_iter().collect::<Vec<_>>(),
            [(5, [0.0, 0.0, 0.0]), (7, [4.0, 5.0, 6.0])]
        );
        let shares = news.share_edits(&[(5, [0.0; 3]), (7, [4.0, 5.0, 6.0])], f64::INFINITY);
        assert_eq!(shares.len(), 1, "everyone gets everything, in one share");
        assert_eq!(shares[0].peers, [5, 7]);
        assert_eq!(
            shares[0]
                .edits
                .edits
                .iter()
                .map(|e| (e.peer, e.voxel, e.name.as_str()))
                .collect::<Vec<_>>(),
            [(7, [1, -2, 3], "stone"), (5, [0, 0, 0], "air")]
        );
        assert!(news.take_moves().is_empty(), "taken once");
        assert!(news.share_edits(&[(5, [0.0; 3])], f64::INFINITY).is_empty());
    }

    #[test]
    fn edits_reach_only_players_near_them() {
        let mut news = News::default();
        news.edit(1, [12, 0, 12], "stone");
        let players = [
            (1, [10.0, 0.0, 10.0]),
            (3, [-100.0, 5.0, 90.0]), // over 64 away: nothing
            (4, [70.0, 90.0, 20.0]),  // within 64 on the ground
        ];
        let shares = news.share_edits(&players, 64.0);
        assert_eq!(shares.len(), 1);
        assert_eq!(shares[0].peers, [1, 4]);
        assert_eq!(shares[0].edits.edits.len(), 1);
    }

    #[test]
    fn players_with_the_same_news_share_one_packet() {
        let mut news = News::default();
        news.edit(1, [0, 0, 0], "stone");
        news.edit(2, [1000, 0, 0], "air");
        news.edit(3, [2, 0, 2], "dirt");
        let players = [
            (10, [1.0, 0.0, 1.0]),    // near the first and the third
            (11, [1000.0, 0.0, 5.0]), // near the second
            (12, [-3.0, 9.0, 0.0]),   // near the first and the third
            (13, [500.0, 0.0, 0.0]),  // near none
            (14, [1003.0, 0.0, 0.0]), // near the second
        ];
        let shares = news.share_edits(&players, 64.0);
        let seen: Vec<(Vec<u64>, Vec<[i32; 3]>)> = shares
            .iter()
            .map(|s| {
                (
                    s.peers.clone(),
                    s.edits.edits.iter().map(|e| e.voxel).collect(),
                )
            })
            .collect();
        assert_eq!(
            seen,
            [
                (vec![10, 12], vec![[0, 0, 0], [2, 0, 2]]),
                (vec![11, 14], vec![[1000, 0, 0]]),
            ]
        );
    }

    #[test]
    fn the_border_stops_moves_out_and_lets_those_beyond_come_back() {
        let border = Border::of_setting(20);
        assert!(check_border(None, [0.0; 3], [1e6, 0.0, 0.0]).is_ok());
        assert!(check_border(border, [16.5, 9.0, 0.5], [20.0, 9.0, -20.0]).is_ok());
        let error = check_border(border, [16.5, 9.0, 0.5], [20.5, 9.0, 0.5]).expect_err("out");
        assert!(error.contains("20 blocks from 0,0"), "{error}");
        assert!(check_border(border, [0.5, 9.0, -19.0], [0.5, 9.0, -21.0]).is_err());
        // Beyond already: back in, or along it, but not farther out.
        assert!(check_border(border, [30.0, 9.0, 0.0], [25.0, 9.0, 0.0]).is_ok());
        assert!(check_border(border, [30.0, 9.0, 0.0], [30.0, 9.0, 5.0]).is_ok());
        assert!(check_border(border, [30.0, 9.0, 0.0], [31.0, 9.0, 0.0]).is_err());
    }

    #[test]
    fn positions_are_checked() {
        assert!(check_position([1.5, -2.0, 3.25]).is_ok());
        assert!(check_position([f64::NAN, 0.0, 0.0]).is_err());
        assert!(check_position([0.0, 1e8, 0.0]).is_err());
    }

    /// A world of stone below y = 10 and a wall at x = 5 (from y = 10 to 13).
    fn world(v: Pos) -> Option<bool> {
        Some(v[1] < 10 || (v[0] == 5 && v[1] < 14))
    }

    fn check(from: [f64; 3], to: [f64; 3]) -> Result<(), String> {
        judge_move(from, to, &move_voxels(from, to), MoveChecks::ALL, world)
    }

    #[test]
    fn moves_walk_and_fall_but_never_pass_walls_or_fly() {
        let ground = [0.5, 10.0, 0.5];
        assert_eq!(check(ground, [3.5, 10.0, 0.5]), Ok(()), "a walk");
        assert_eq!(check(ground, [0.5, 11.5, 0.5]), Ok(()), "a jump");
        assert_eq!(check([0.5, 30.0, 0.5], [2.5, 25.0, 0.5]), Ok(()), "a fall");
        let through = check(ground, [7.5, 10.0, 0.5]).expect_err("through the wall");
        assert!(through.contains("blocked"), "{through}");
        let into = check(ground, [5.5, 10.0, 0.5]).expect_err("into the wall");
        assert!(into.contains("blocked"), "{into}");
        let up = check(ground, [0.5, 20.0, 0.5]).expect_err("flying up");
        assert!(up.contains("no flying"), "{up}");
        let hover = check([0.5, 20.0, 0.5], [1.5, 20.0, 0.5]).expect_err("hovering");
        assert!(hover.contains("no flying"), "{hover}");
        // Many small steps through the wall are each refused.
        let mut at = ground;
        let mut refused = 0;
        for _ in 0..40 {
            let next = [at[0] + 0.25, at[1], at[2]];
            match check(at, next) {
                Ok(()) => at = next,
                Err(_) => refused += 1,
            }
        }
        assert!(at[0] < 5.0 && refused > 0, "stopped at the wall: {at:?}");
        // Not generated: neither blocks nor drops the player.
        let unknown = |_: Pos| None;
        let far = [100.5, 50.0, 0.5];
        assert_eq!(
            judge_move(
                far,
                [101.5, 50.0, 0.5],
                &move_voxels(far, [101.5, 50.0, 0.5]),
                MoveChecks::ALL,
                unknown
            ),
            Ok(())
        );
    }

    #[test]
    fn fly_and_noclip_lift_their_rules_only() {
        let ground = [0.5, 10.0, 0.5];
        let judge =
            |to: [f64; 3], checks| judge_move(ground, to, &move_voxels(ground, to), checks, world);
        let fly = MoveChecks {
            collide: true,
            gravity: false,
        };
        let noclip = MoveChecks {
            collide: false,
            gravity: true,
        };
        assert_eq!(judge([0.5, 20.0, 0.5], fly), Ok(()));
        assert!(judge([7.5, 10.0, 0.5], fly).is_err());
        assert_eq!(judge([7.5, 10.0, 0.5], noclip), Ok(()));
        assert!(judge([0.5, 20.0, 0.5], noclip).is_err());
    }

    #[test]
    fn speed_is_measured_over_time() {
        let start = Instant::now();
        let mut motion = Motion::new(start);
        let mut at = [0.0, 10.0, 0.0];
        // Sixteen 1-voxel moves at once use up the saved allowance...
        for _ in 0..16 {
            let next = [at[0] + 1.0, at[1], at[2]];
            motion
                .spend(at, next, 10.0, start)
                .expect("within the allowance");
            at = next;
        }
        // ...and a seventeenth is refused until time earns more.
        let next = [at[0] + 1.0, at[1], at[2]];
        assert!(motion.spend(at, next, 10.0, start).is_err());
        let later = start + Duration::from_millis(200);
        motion
            .spend(at, next, 10.0, later)
            .expect("2 voxels earned");
        // Falling is free.
        motion
            .spend(next, [next[0], 0.0, next[2]], 10.0, later)
            .expect("a fall");
    }

    #[test]
    fn the_body_is_its_box_not_one_column() {
        let ground = [4.5, 10.0, 0.5];
        // The box's edge (x + 0.3) in the wall at x = 5, the centre not:
        // one column (x = 4) would let it through.
        let edge = check(ground, [4.75, 10.0, 0.5]).expect_err("the edge in the wall");
        assert!(
            edge.contains("blocked by a solid voxel at [5, 10, 0]"),
            "{edge}"
        );
        let up_to_it = [5.0 - BODY_WIDTH / 2.0 - 1e-7, 10.0, 0.5];
        assert_eq!(
            check(ground, up_to_it),
            Ok(()),
            "touching, as the client stops"
        );
        // A head under a ledge: the box at the side of a column reaching
        // over it (x = 6 is free below y = 11, solid at y = 11).
        let ledge = |v: Pos| Some(v[1] < 10 || (v[0] == 6 && v[1] == 11));
        let from = [5.5, 10.0, 3.5];
        let to = [5.75, 10.0, 3.5];
        assert!(judge_move(from, to, &move_voxels(from, to), MoveChecks::ALL, ledge).is_err());
        // Standing on the edge of a cliff (the centre over the drop, the
        // box on the ground at x < 5) holds the player up for a jump.
        let cliff = |v: Pos| Some(v[0] < 5 && v[1] < 10);
        let edge = [5.2, 10.0, 0.5];
        let jump = [5.2, 11.2, 0.5];
        assert_eq!(
            judge_move(edge, jump, &move_voxels(edge, jump), MoveChecks::ALL, cliff),
            Ok(()),
            "the box stands on the cliff's edge"
        );
        let beyond = [5.4, 11.2, 0.5];
        assert!(
            judge_move(
                edge,
                beyond,
                &move_voxels(edge, beyond),
                MoveChecks::ALL,
                cliff
            )
            .is_err()
        );
    }

    /// The default client's movement (`client/src/render/player.rs`):
    /// walking at its speed along x, jumping at every landing, over ground
    /// that rises one voxel every `stair` voxels (`None`: flat), its
    /// position sent every frame for `seconds`. Answers the moves refused.
    fn walk_like_the_client(speed: f64, stair: Option<f64>, seconds: f64) -> usize {
        const GRAVITY: f64 = 24.0;
        const JUMP_SPEED: f64 = 8.0;
        let start = Instant::now();
        let mut motion = Motion::new(start);
        let ground = |x: f64| stair.map_or(0.0, |s| (x / s).floor());
        let (mut x, mut y, mut vy) = (0.0, 0.0, 0.0);
        let mut accepted = [x, y, 0.5];
        let mut refused = 0;
        let dt = 1.0 / 60.0;
        for frame in 1..=(seconds / dt) as u32 {
            if y <= ground(x) {
                vy = JUMP_SPEED;
            }
            vy -= GRAVITY * dt;
            y = (y + vy * dt).max(ground(x));
            x += speed * dt;
            let at = start + Duration::from_secs_f64(f64::from(frame) * dt);
            match motion.spend(accepted, [x, y, 0.5], DEFAULT_MAX_SPEED, at) {
                Ok(()) => accepted = [x, y, 0.5],
                // Corrected: the client is put back where it was accepted.
                Err(_) => {
                    refused += 1;
                    (x, y) = (accepted[0], accepted[1]);
                }
            }
        }
        refused
    }

    #[test]
    fn the_default_speed_lets_the_client_walk_and_jump_but_not_half_again_faster() {
        const { assert!(DEFAULT_MAX_SPEED <= 1.5 * CLIENT_WALK_SPEED) };
        assert_eq!(walk_like_the_client(CLIENT_WALK_SPEED, None, 60.0), 0);
        // Up stairs, jumping at every landing (the steepest the client
        // climbs without stopping: 1.33 voxels of jump, 2.25 of walk).
        for stair in [2.25, 3.0] {
            assert_eq!(
                walk_like_the_client(CLIENT_WALK_SPEED, Some(stair), 60.0),
                0
            );
        }
        assert!(walk_like_the_client(1.6 * CLIENT_WALK_SPEED, None, 60.0) > 0);
        // A straight run at 1.6× is refused once the saved allowance is spent.
        let start = Instant::now();
        let mut motion = Motion::new(start);
        let mut at = [0.0, 10.0, 0.0];
        let step = 1.6 * CLIENT_WALK_SPEED * 0.05;
        let refused = (1..=1200).find(|i| {
            let next = [at[0] + step, at[1], at[2]];
            let now = start + Duration::from_millis(50 * i);
            let ok = motion.spend(at, next, DEFAULT_MAX_SPEED, now).is_ok();
            at = next;
            !ok
        });
        assert!(refused.is_some(), "a minute at 1.6× was never refused");
    }

    #[test]
    fn sight_is_blocked_by_solid_voxels_only() {
        let solid = |v: Pos| Some(v == [2, 11, 0]);
        let eyes = eyes([0.5, 10.0, 0.5]);
        assert!(visible(&sight_voxels(eyes, [1, 11, 0]), solid));
        assert!(!visible(&sight_voxels(eyes, [3, 11, 0]), solid), "behind");
        assert!(visible(&sight_voxels(eyes, [3, 11, 0]), |_| None));
        for ray in sight_voxels(eyes, [3, 11, 0]) {
            assert!(
                !ray.contains(&[3, 11, 0]),
                "the target is not in its own way"
            );
            assert_eq!(ray.first(), Some(&[0, 11, 0]), "starts at the eyes");
        }
    }

    #[test]
    fn reach_and_rate_are_enforced() {
        assert!(in_reach([0.5, 10.0, 0.5], [0, 9, 0]));
        assert!(!in_reach([0.5, 10.0, 0.5], [0, 9, 20]));
        let mut limit = RateLimit::default();
        let now = Instant::now();
        for _ in 0..MAX_ACTIONS_PER_SECOND {
            assert!(limit.allow(now));
        }
        assert!(!limit.allow(now));
        assert!(limit.allow(now + Duration::from_millis(1001)));
    }
}
