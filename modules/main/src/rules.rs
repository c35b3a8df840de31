//! The game's rules and packet parsing, pure: what a player may do and how
//! the raw `main:*` packets read and write (docs/protocol.md §10).
//!
//! Owns: parsing with bounds checks, validation limits (move distance, reach,
//! action rate, names). Does not own: the world or the network (`lib.rs`).

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

/// Longest move accepted in one `main:move`, in voxels.
pub const MAX_MOVE: f64 = 16.0;
/// Farthest voxel a player may dig or place, from its position.
pub const REACH: f64 = 8.0;
/// Actions (digs and places) accepted per second.
pub const MAX_ACTIONS_PER_SECOND: usize = 20;
/// Longest player name in bytes.
pub const MAX_NAME: usize = 32;

pub fn parse_name(data: &[u8]) -> Result<String, String> {
    let name = std::str::from_utf8(data).map_err(|_| "the name is not UTF-8".to_string())?;
    let name = name.trim();
    if name.is_empty() || name.len() > MAX_NAME || name.chars().any(char::is_control) {
        return Err(format!("a name is 1 to {MAX_NAME} bytes of printable text"));
    }
    Ok(name.to_string())
}

pub fn parse_position(data: &[u8]) -> Result<[f64; 3], String> {
    let bytes: &[u8; 24] = data
        .try_into()
        .map_err(|_| "a position is 24 bytes".to_string())?;
    let mut position = [0.0; 3];
    for (i, value) in position.iter_mut().enumerate() {
        let mut field = [0u8; 8];
        field.copy_from_slice(&bytes[i * 8..i * 8 + 8]);
        *value = f64::from_le_bytes(field);
    }
    if position.iter().any(|p| !p.is_finite() || p.abs() > 1e7) {
        return Err("the position is out of the world".into());
    }
    Ok(position)
}

/// A voxel position, then the rest of the data (for `main:place`'s name).
pub fn parse_voxel(data: &[u8]) -> Result<([i32; 3], &[u8]), String> {
    let (head, rest) = data
        .split_at_checked(12)
        .ok_or("a voxel position is 12 bytes")?;
    let mut voxel = [0; 3];
    for (i, value) in voxel.iter_mut().enumerate() {
        let mut field = [0u8; 4];
        field.copy_from_slice(&head[i * 4..i * 4 + 4]);
        *value = i32::from_le_bytes(field);
    }
    Ok((voxel, rest))
}

pub fn encode_spawn(peer: u64, position: [f64; 3]) -> Vec<u8> {
    let mut out = peer.to_le_bytes().to_vec();
    for p in position {
        out.extend(p.to_le_bytes());
    }
    out
}

pub fn encode_player(peer: u64, position: [f64; 3], name: &str) -> Vec<u8> {
    let mut out = encode_spawn(peer, position);
    out.extend(name.as_bytes());
    out
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

/// One player's share of the news: `main:moves` and `main:edits` data.
pub type Share = (Option<Vec<u8>>, Option<Vec<u8>>);

fn encode_edit(out: &mut Vec<u8>, peer: u64, voxel: [i32; 3], name: &str) {
    out.extend(peer.to_le_bytes());
    for v in voxel {
        out.extend(v.to_le_bytes());
    }
    // A name over 65535 bytes (never a registered voxel) is cut.
    let name = name
        .as_bytes()
        .get(..usize::from(u16::MAX))
        .unwrap_or(name.as_bytes());
    out.extend((name.len() as u16).to_le_bytes());
    out.extend(name);
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

    pub fn is_empty(&self) -> bool {
        self.moves.is_empty() && self.edits.is_empty()
    }

    /// Takes the news and shares it out: each of `players` (peer,
    /// position) gets the moves and the edits within `radius` voxels of it
    /// (x and z; infinite: everything). Players with no news are left out.
    pub fn share(&mut self, players: &[(u64, [f64; 3])], radius: f64) -> Vec<(u64, Share)> {
        let news = std::mem::take(self);
        let moves: Vec<(u64, [f64; 3], Vec<u8>)> = news
            .moves
            .into_iter()
            .map(|(peer, position)| (peer, position, encode_spawn(peer, position)))
            .collect();
        let edits: Vec<([f64; 3], Vec<u8>)> = news
            .edits
            .iter()
            .map(|(peer, voxel, name)| {
                let mut entry = Vec::new();
                encode_edit(&mut entry, *peer, *voxel, name);
                (voxel.map(|v| f64::from(v) + 0.5), entry)
            })
            .collect();
        let mut shares = Vec::new();
        for (peer, position) in players {
            let gather = |entries: &mut dyn Iterator<Item = (&[f64; 3], &Vec<u8>)>| {
                let mut out = Vec::new();
                for (at, entry) in entries {
                    if near(*position, *at, radius) {
                        out.extend(entry);
                    }
                }
                (!out.is_empty()).then_some(out)
            };
            let share = (
                gather(&mut moves.iter().map(|(_, at, entry)| (at, entry))),
                gather(&mut edits.iter().map(|(at, entry)| (at, entry))),
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
        let moves = moves.expect("moves");
        assert_eq!(moves.len(), 2 * 32);
        assert_eq!(&moves[..32], &encode_spawn(5, [0.0, 0.0, 0.0])[..]);
        assert_eq!(&moves[32..], &encode_spawn(7, [4.0, 5.0, 6.0])[..]);
        let edits = edits.expect("edits");
        let mut first = 7u64.to_le_bytes().to_vec();
        for v in [1i32, -2, 3] {
            first.extend(v.to_le_bytes());
        }
        first.extend(5u16.to_le_bytes());
        first.extend(b"stone");
        assert_eq!(&edits[..first.len()], &first[..]);
        assert_eq!(edits.len(), first.len() + 20 + 2 + 3);
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
            assert_eq!(moves.as_ref().map(Vec::len), Some(32));
            assert_eq!(edits.as_ref().map(Vec::len), Some(20 + 2 + 5));
        }
        assert_eq!(
            shares[&5].0.as_deref(),
            Some(&encode_spawn(2, [1000.0, 0.0, -1000.0])[..])
        );
        assert_eq!(shares[&5].1, None);
    }

    #[test]
    fn packets_parse_with_bounds_checks() {
        assert_eq!(parse_name(b" alice "), Ok("alice".into()));
        assert!(parse_name(b"").is_err());
        assert!(parse_name(&[0xff]).is_err());
        assert!(parse_name(&[b'a'; 33]).is_err());
        assert!(parse_name(b"a\nb").is_err());
        let mut data = Vec::new();
        for p in [1.5f64, -2.0, 3.25] {
            data.extend(p.to_le_bytes());
        }
        assert_eq!(parse_position(&data), Ok([1.5, -2.0, 3.25]));
        assert!(parse_position(&data[..23]).is_err());
        let mut nan = data.clone();
        nan[..8].copy_from_slice(&f64::NAN.to_le_bytes());
        assert!(parse_position(&nan).is_err());
        let mut voxel = Vec::new();
        for v in [1i32, -2, 3] {
            voxel.extend(v.to_le_bytes());
        }
        voxel.extend(b"stone");
        assert_eq!(parse_voxel(&voxel), Ok(([1, -2, 3], &b"stone"[..])));
        assert!(parse_voxel(&voxel[..11]).is_err());
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
