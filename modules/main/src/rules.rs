//! The game's rules, pure: what a player may do, and the news gathered per
//! tick.
//!
//! Owns: validation limits (move distance, reach, action rate, names) and
//! [`News`]. Does not own: the packets' layouts (`buildat-main-api`), the
//! world or the network (`lib.rs`).

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

use buildat_main_api::{Edit, Edits, Moves};

/// Longest move accepted in one `main:move`, in voxels.
pub const MAX_MOVE: f64 = 16.0;
/// Farthest voxel a player may dig or place, from its position.
pub const REACH: f64 = 8.0;
/// Actions (digs and places) accepted per second.
pub const MAX_ACTIONS_PER_SECOND: usize = 20;
/// Longest player name in bytes.
pub const MAX_NAME: usize = 32;

/// The name a player joins under, trimmed; why not if it is not acceptable.
pub fn check_name(name: &str) -> Result<String, String> {
    let name = name.trim();
    if name.is_empty() || name.len() > MAX_NAME || name.chars().any(char::is_control) {
        return Err(format!("a name is 1 to {MAX_NAME} bytes of printable text"));
    }
    Ok(name.to_string())
}

/// Why a position is not in the world, if it is not.
pub fn check_position(position: [f64; 3]) -> Result<(), String> {
    if position.iter().any(|p| !p.is_finite() || p.abs() > 1e7) {
        return Err("the position is out of the world".into());
    }
    Ok(())
}

/// Moves and edits waiting for the next tick's `main:moves` and
/// `main:edits` (docs/protocol.md §10).
#[derive(Debug, Default, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct News {
    /// The latest position of each player that moved.
    moves: BTreeMap<u64, [f64; 3]>,
    /// Edits in order: who, which voxel, the new voxel's name.
    edits: Vec<(u64, [i32; 3], String)>,
}

/// One player's share of the news.
pub type Share = (Option<Moves>, Option<Edits>);

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

    pub fn is_empty(&self) -> bool {
        self.moves.is_empty() && self.edits.is_empty()
    }

    /// Takes the news and shares it out: each of `players` (peer,
    /// position) gets the moves and the edits within `radius` voxels of it
    /// (x and z; infinite: everything). Players with no news are left out.
    pub fn share(&mut self, players: &[(u64, [f64; 3])], radius: f64) -> Vec<(u64, Share)> {
        let news = std::mem::take(self);
        let mut shares = Vec::new();
        for (peer, position) in players {
            let moves: Vec<(u64, [f64; 3])> = news
                .moves
                .iter()
                .filter(|(_, at)| near(*position, **at, radius))
                .map(|(peer, at)| (*peer, *at))
                .collect();
            let edits: Vec<Edit> = news
                .edits
                .iter()
                .filter(|(_, voxel, _)| near(*position, voxel.map(|v| f64::from(v) + 0.5), radius))
                .map(|(peer, voxel, name)| Edit {
                    peer: *peer,
                    voxel: *voxel,
                    name: name.clone(),
                })
                .collect();
            let share = (
                (!moves.is_empty()).then_some(Moves { moves }),
                (!edits.is_empty()).then_some(Edits { edits }),
            );
            if share.0.is_some() || share.1.is_some() {
                shares.push((*peer, share));
            }
        }
        shares
    }
}

pub fn distance(a: [f64; 3], b: [f64; 3]) -> f64 {
    ((a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2) + (a[2] - b[2]).powi(2)).sqrt()
}

/// Whether a voxel is within reach of a player standing at `position`
/// (measured from the eyes, 1.6 above the feet, to the voxel's centre).
pub fn in_reach(position: [f64; 3], voxel: [i32; 3]) -> bool {
    let eyes = [position[0], position[1] + 1.6, position[2]];
    let centre = voxel.map(|v| f64::from(v) + 0.5);
    distance(eyes, centre) <= REACH
}

/// Sliding one-second window of a player's actions.
#[derive(Default)]
pub struct RateLimit {
    recent: VecDeque<Instant>,
}

impl RateLimit {
    /// Records an action now; false if it is over the limit.
    pub fn allow(&mut self, now: Instant) -> bool {
        while self
            .recent
            .front()
            .is_some_and(|t| now.duration_since(*t) >= Duration::from_secs(1))
        {
            self.recent.pop_front();
        }
        if self.recent.len() >= MAX_ACTIONS_PER_SECOND {
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
        assert!(news.share(&[(1, [0.0; 3])], f64::INFINITY).is_empty());
        news.moved(7, [1.0, 2.0, 3.0]);
        news.moved(5, [0.0, 0.0, 0.0]);
        news.moved(7, [4.0, 5.0, 6.0]);
        news.moved(9, [1.0, 1.0, 1.0]);
        news.forget(9);
        news.edit(7, [1, -2, 3], "stone");
        news.edit(5, [0, 0, 0], "air");
        let shares = news.share(&[(5, [0.0; 3]), (7, [4.0, 5.0, 6.0])], f64::INFINITY);
        assert_eq!(shares.len(), 2, "everyone gets everything");
        let (moves, edits) = shares[0].1.clone();
        assert_eq!(
            moves.expect("moves").moves,
            [(5, [0.0, 0.0, 0.0]), (7, [4.0, 5.0, 6.0])]
        );
        let edits = edits.expect("edits").edits;
        assert_eq!(
            edits
                .iter()
                .map(|e| (e.peer, e.voxel, e.name.as_str()))
                .collect::<Vec<_>>(),
            [(7, [1, -2, 3], "stone"), (5, [0, 0, 0], "air")]
        );
        assert!(news.is_empty(), "taken once");
    }

    #[test]
    fn news_reaches_only_players_near_it() {
        let mut news = News::default();
        news.moved(1, [10.0, 0.0, 10.0]);
        news.edit(1, [12, 0, 12], "stone");
        news.moved(2, [1000.0, 0.0, -1000.0]);
        let players = [
            (1, [10.0, 0.0, 10.0]),
            (3, [-100.0, 5.0, 90.0]), // over 64 away: nothing
            (4, [70.0, 90.0, 20.0]),  // within 64 on the ground: both
            (5, [1010.0, 0.0, -990.0]),
        ];
        let shares: BTreeMap<u64, Share> = news.share(&players, 64.0).into_iter().collect();
        assert_eq!(shares.keys().copied().collect::<Vec<_>>(), [1, 4, 5]);
        for near in [1, 4] {
            let (moves, edits) = &shares[&near];
            assert_eq!(moves.as_ref().map(|m| m.moves.len()), Some(1));
            assert_eq!(edits.as_ref().map(|e| e.edits.len()), Some(1));
        }
        assert_eq!(
            shares[&5].0,
            Some(Moves {
                moves: vec![(2, [1000.0, 0.0, -1000.0])]
            })
        );
        assert_eq!(shares[&5].1, None);
    }

    #[test]
    fn names_and_positions_are_checked() {
        assert_eq!(check_name(" alice "), Ok("alice".into()));
        assert!(check_name("").is_err());
        assert!(check_name(&"a".repeat(33)).is_err());
        assert!(check_name("a\nb").is_err());
        assert!(check_position([1.5, -2.0, 3.25]).is_ok());
        assert!(check_position([f64::NAN, 0.0, 0.0]).is_err());
        assert!(check_position([0.0, 1e8, 0.0]).is_err());
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
