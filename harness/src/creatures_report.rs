//! The console's `creatures` answer, parsed: what the server's creatures
//! tests and the fault test's node census read.
//!
//! Owns: [`CreaturesReport`] and its parser. Does not own: asking for it
//! (`server.rs`) or what a test expects of it.

use std::collections::BTreeMap;

/// The `creatures` command's answer.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct CreaturesReport {
    pub total: usize,
    pub kinds: BTreeMap<String, usize>,
    pub moved: usize,
    pub on_ground: usize,
    pub to_place: usize,
    /// Creatures overlapping another body last tick.
    pub crowded: usize,
    /// Transient creatures asleep (no player near: no node).
    pub asleep: usize,
}

impl CreaturesReport {
    /// Creatures of the kind `name`.
    pub fn kind(&self, name: &str) -> usize {
        self.kinds.get(name).copied().unwrap_or(0)
    }

    /// Creatures with a node (those not asleep).
    pub fn with_node(&self) -> usize {
        self.total.saturating_sub(self.asleep)
    }

    /// Parses `creatures: 7 (chicken 4, cow 2, sheep 1), 5 moved in the
    /// last second, 6 on the ground, 0 waiting, 0 to place, 0 standing
    /// with no player near, 2 crowded, 0 asleep (...)`, anywhere in `line`.
    pub fn parse(line: &str) -> Option<Self> {
        let rest = line.split("creatures: ").nth(1)?;
        let (total, rest) = rest.split_once(" (")?;
        let (kinds, rest) = rest.split_once("), ")?;
        let (moved, rest) = rest.split_once(" moved in the last second, ")?;
        let mut parts = rest.split(", ");
        let on_ground = parts.next()?.strip_suffix(" on the ground")?;
        let to_place = parts.nth(1)?.strip_suffix(" to place")?;
        let crowded = parts.nth(1)?.strip_suffix(" crowded")?;
        let asleep = parts.next()?.split(' ').next()?;
        let mut report = Self {
            total: total.trim().parse().ok()?,
            moved: moved.trim().parse().ok()?,
            on_ground: on_ground.trim().parse().ok()?,
            to_place: to_place.trim().parse().ok()?,
            crowded: crowded.trim().parse().ok()?,
            asleep: asleep.trim().parse().ok()?,
            ..Self::default()
        };
        for kind in kinds.split(", ") {
            let (name, count) = kind.split_once(' ')?;
            report.kinds.insert(name.to_string(), count.parse().ok()?);
        }
        Some(report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_answer_is_read_field_by_field() {
        let line = "INFO [creatures] creatures: 7 (chicken 4, cow 2, sheep 1), 5 moved in the \
                    last second, 6 on the ground, 0 waiting, 1 to place, 0 standing with no \
                    player near, 2 crowded, 3 asleep (no player near for 10 s: no node)";
        let report = CreaturesReport::parse(line).unwrap();
        assert_eq!(
            (
                report.total,
                report.moved,
                report.on_ground,
                report.to_place
            ),
            (7, 5, 6, 1)
        );
        assert_eq!(
            (report.crowded, report.asleep, report.with_node()),
            (2, 3, 4)
        );
        assert_eq!((report.kind("cow"), report.kind("wolf")), (2, 0));
        assert!(CreaturesReport::parse("creatures: seven").is_none());
    }
}
