//! Sections asked of the generator: which, how near a player wants each,
//! and when to ask again, ask sooner, or cancel.
//!
//! Owns: the bookkeeping of `voxelworld:generation_request` and
//! `voxelworld:generation_cancel` (what to emit; `lib.rs` emits it). A
//! section a player wants carries its distance (squared, in chunks, to the
//! nearest player wanting it) and is cancelled once no player wants it; a
//! section a call waits on has no distance, goes first (distance 0) and is
//! never cancelled. Invariant: a section is in the book from its first
//! request until it is generated (`done`) or cancelled. Does not own: the
//! generator's queue, what players want (`stream.rs` says), or generating.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use buildat_voxel::geometry::Pos;

/// How long before a section requested of the generator is asked again (in
/// case the generator was down or reloaded and dropped its queue).
pub const RETRY: Duration = Duration::from_secs(10);

#[derive(Debug, Clone, Copy)]
struct Asked {
    at: Instant,
    /// `None`: a call waits on it.
    distance: Option<u32>,
}

/// What a review of the book against what players want found.
#[derive(Debug, Default, PartialEq)]
pub struct Review {
    /// Nobody wants these any more: cancel them.
    pub cancel: Vec<Pos>,
    /// A player is nearer than when they were asked for: ask again.
    pub nearer: Vec<(Pos, u32)>,
}

#[derive(Debug, Default)]
pub struct GenerationBook {
    asked: HashMap<Pos, Asked>,
    /// Sections cancelled since the module's instance started.
    pub cancelled: u64,
}

impl GenerationBook {
    /// A section is wanted (`distance` from a player, or `None` for a
    /// call): the distance to request it with now, or `None` when the
    /// request already made still stands.
    pub fn ask(&mut self, section: Pos, distance: Option<u32>, now: Instant) -> Option<u32> {
        let merged = match self.asked.get(&section) {
            None => distance,
            Some(asked) => {
                let merged = match (asked.distance, distance) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    _ => None,
                };
                let stale = now.duration_since(asked.at) >= RETRY;
                if !stale && merged == asked.distance {
                    return None;
                }
                merged
            }
        };
        self.asked.insert(
            section,
            Asked {
                at: now,
                distance: merged,
            },
        );
        Some(merged.unwrap_or(0))
    }

    /// The section was generated (or stored by someone else).
    pub fn done(&mut self, section: &Pos) {
        self.asked.remove(section);
    }

    /// Whether any section asked for by players is waiting (a review can
    /// find something to do).
    pub fn has_player_requests(&self) -> bool {
        self.asked.values().any(|a| a.distance.is_some())
    }

    /// Compares the sections players asked for with what they want now
    /// (section → the smallest distance of a player wanting it): those
    /// nobody wants leave the book (to cancel), those wanted nearer are
    /// asked for again with the new distance.
    pub fn review(&mut self, wanted: &HashMap<Pos, u32>, now: Instant) -> Review {
        let mut review = Review::default();
        self.asked.retain(|section, asked| {
            let Some(distance) = asked.distance else {
                return true;
            };
            match wanted.get(section) {
                None => {
                    review.cancel.push(*section);
                    false
                }
                Some(&nearer) if nearer < distance => {
                    *asked = Asked {
                        at: now,
                        distance: Some(nearer),
                    };
                    review.nearer.push((*section, nearer));
                    true
                }
                Some(_) => true,
            }
        });
        review.cancel.sort_unstable();
        review.nearer.sort_unstable();
        self.cancelled += review.cancel.len() as u64;
        review
    }

    pub fn len(&self) -> usize {
        self.asked.len()
    }

    pub fn is_empty(&self) -> bool {
        self.asked.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_section_is_asked_once_then_again_when_nearer_or_stale() {
        let mut book = GenerationBook::default();
        let now = Instant::now();
        assert_eq!(book.ask([1, 0, 0], Some(9), now), Some(9));
        assert_eq!(book.ask([1, 0, 0], Some(9), now), None, "asked already");
        assert_eq!(book.ask([1, 0, 0], Some(12), now), None, "farther");
        assert_eq!(book.ask([1, 0, 0], Some(4), now), Some(4), "nearer");
        assert_eq!(book.ask([1, 0, 0], Some(4), now + RETRY), Some(4), "stale");
        assert_eq!(book.ask([1, 0, 0], None, now), Some(0), "a call waits");
        assert_eq!(book.ask([1, 0, 0], Some(1), now), None, "a call goes first");
        book.done(&[1, 0, 0]);
        assert!(book.is_empty());
        assert_eq!(book.ask([1, 0, 0], Some(16), now), Some(16));
    }

    #[test]
    fn a_review_cancels_what_nobody_wants_and_brings_nearer_forward() {
        let mut book = GenerationBook::default();
        let now = Instant::now();
        book.ask([0, 0, 0], Some(9), now);
        book.ask([1, 0, 0], Some(9), now);
        book.ask([2, 0, 0], Some(9), now);
        book.ask([3, 0, 0], None, now);
        assert!(book.has_player_requests());
        let wanted = HashMap::from([([0, 0, 0], 9), ([1, 0, 0], 1)]);
        let review = book.review(&wanted, now);
        assert_eq!(
            review,
            Review {
                cancel: vec![[2, 0, 0]],
                nearer: vec![([1, 0, 0], 1)],
            }
        );
        assert_eq!(book.len(), 3, "a call's request is never cancelled");
        assert_eq!(book.ask([1, 0, 0], Some(1), now), None, "the review asked");
        assert_eq!(
            book.ask([2, 0, 0], Some(9), now),
            Some(9),
            "cancelled, asked anew"
        );
        let nobody = book.review(&HashMap::new(), now);
        assert_eq!(nobody.cancel, vec![[0, 0, 0], [1, 0, 0], [2, 0, 0]]);
        assert!(!book.has_player_requests());
        assert_eq!(book.len(), 1);
        assert_eq!(book.cancelled, 4);
    }
}
