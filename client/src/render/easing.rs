//! Where the window draws the boxes and models Lua set (other players,
//! creatures):
//! eased toward the latest position rather than jumping to it, so a node
//! the server tells of a few times a second (far nodes' changes come every
//! 2nd or 4th tick, docs/protocol.md) glides between its updates.
//!
//! Owns: each box's (or model's) drawn position and how it follows its
//! target. Does not own: the boxes and models themselves (`sandbox::ui`)
//! or drawing (`gpu`, `models`). The
//! offscreen screenshot does not ease: it draws where Lua set each box.
//!
//! Invariants: a drawn position exists only for a box Lua holds; a box
//! further than [`SNAP_VOXELS`] from where it is drawn (a teleport, a
//! respawn, a new box) is drawn where it is at once.

use std::collections::{BTreeMap, HashMap};

use crate::sandbox::{UiBox, UiModel};

/// Something Lua places in the world by its bottom centre.
pub trait Placed {
    fn target(&self) -> [f64; 3];
}

impl Placed for UiBox {
    fn target(&self) -> [f64; 3] {
        self.position
    }
}

impl Placed for UiModel {
    fn target(&self) -> [f64; 3] {
        self.position
    }
}

/// The time constant of the easing: a box covers 63 % of the way to its
/// target in this long, 98 % in four times it.
pub const EASE_SECONDS: f64 = 0.08;
/// A box this far from where it is drawn jumps there.
pub const SNAP_VOXELS: f64 = 8.0;

/// The drawn position of each box, by the box's id.
#[derive(Debug, Default)]
pub struct EasedBoxes {
    drawn: HashMap<String, [f64; 3]>,
}

impl EasedBoxes {
    /// Moves every drawn box toward its target, `seconds` after the last
    /// frame; forgets the boxes Lua removed.
    pub fn ease<T: Placed>(&mut self, boxes: &BTreeMap<String, T>, seconds: f64) {
        self.drawn.retain(|id, _| boxes.contains_key(id));
        let share = 1.0 - (-seconds.max(0.0) / EASE_SECONDS).exp();
        for (id, target) in boxes {
            let target = target.target();
            // A new box is drawn where it is (its id copied once, not
            // every frame).
            let Some(drawn) = self.drawn.get_mut(id) else {
                self.drawn.insert(id.clone(), target);
                continue;
            };
            let distance_sq: f64 = (0..3).map(|i| (target[i] - drawn[i]).powi(2)).sum();
            if distance_sq > SNAP_VOXELS * SNAP_VOXELS {
                *drawn = target;
            } else {
                for i in 0..3 {
                    drawn[i] += (target[i] - drawn[i]) * share;
                }
            }
        }
    }

    /// Where to draw the box `id` (where Lua set it, if never eased).
    pub fn position<T: Placed>(&self, id: &str, target: &T) -> [f64; 3] {
        self.drawn.get(id).copied().unwrap_or(target.target())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(x: f64) -> UiBox {
        UiBox {
            position: [x, 10.0, 0.0],
            size: [0.8, 0.8],
            colour: [1.0; 3],
        }
    }

    #[test]
    fn a_box_glides_to_its_target_and_jumps_when_far() {
        let mut eased = EasedBoxes::default();
        let mut boxes = BTreeMap::from([("node:1".to_string(), at(0.0))]);
        eased.ease(&boxes, 0.016);
        assert_eq!(eased.position("node:1", &boxes["node:1"]), [0.0, 10.0, 0.0]);
        // Told it moved a voxel: one frame later it is part of the way.
        boxes.insert("node:1".into(), at(1.0));
        eased.ease(&boxes, 0.016);
        let x = eased.position("node:1", &boxes["node:1"])[0];
        assert!(x > 0.1 && x < 0.3, "after one frame: {x}");
        // Within four time constants it is nearly there, never past it.
        let mut frames = 0;
        while frames * 16 < 400 {
            eased.ease(&boxes, 0.016);
            frames += 1;
        }
        let x = eased.position("node:1", &boxes["node:1"])[0];
        assert!(x > 0.98 && x <= 1.0, "after 0.4 s: {x}");
        // A teleport is drawn at once.
        boxes.insert("node:1".into(), at(50.0));
        eased.ease(&boxes, 0.016);
        assert_eq!(eased.position("node:1", &boxes["node:1"])[0], 50.0);
        // Removed, then set again elsewhere: drawn where it is.
        boxes.clear();
        eased.ease(&boxes, 0.016);
        boxes.insert("node:1".into(), at(3.0));
        assert_eq!(eased.position("node:1", &boxes["node:1"])[0], 3.0);
    }
}
