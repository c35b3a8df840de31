//! Special voxels: which handler modules to tell what, for the voxels a
//! commit of edits changed.
//!
//! Owns: the table of voxel types that name a `handler_module` (rebuilt
//! when the registry grows), the changes recorded since the last commit
//! (one per position: what was there before the commit and what is there
//! now; at most [`MAX_SPECIAL_CHANGES`], the rest counted and not told),
//! and the pure rule turning changes into [`SpecialVoxel`]s per module
//! ([`notifications`]): the old voxel's handler is told `Dug`, the new
//! one's `Placed` (both only when the type changed), and the handler of
//! each of the six face neighbours `NeighbourChanged`. The same changes
//! are told to everyone as `voxelworld:voxels_changed` (`edits.rs`).
//! Does not own: reading the world (the caller passes a lookup of voxels
//! in memory) or emitting the events (`lib.rs`).

use std::collections::{BTreeMap, HashMap};

use buildat_voxel::geometry::{FACES, Pos};
use buildat_voxel::{VoxelInstance, VoxelRegistry};
pub use buildat_voxelworld_api::MAX_SPECIAL_CHANGES;
use buildat_voxelworld_api::{SpecialCause, SpecialVoxel};

/// A voxel changed by the edits of one commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub pos: Pos,
    /// What was there before the commit's first edit of it.
    pub before: u32,
    /// What is there now.
    pub after: u32,
    /// The player whose edit set it last (`EditVoxel::by`).
    pub by: Option<String>,
}

/// The voxel types whose definition names a handler module.
#[derive(Debug, Default)]
pub struct Handlers {
    by_type: HashMap<u32, String>,
    /// The registry's length when `by_type` was built.
    registry_len: usize,
}

impl Handlers {
    /// Rebuilds the table if the registry grew since it was built (types
    /// are only ever added).
    pub fn refresh(&mut self, registry: &VoxelRegistry) {
        if self.registry_len == registry.len() {
            return;
        }
        self.by_type = registry
            .definitions()
            .iter()
            .filter(|d| !d.handler_module.is_empty())
            .map(|d| (d.id, d.handler_module.clone()))
            .collect();
        self.registry_len = registry.len();
    }

    pub fn is_empty(&self) -> bool {
        self.by_type.is_empty()
    }

    /// The handler module of a voxel's type, if it has one.
    pub fn of(&self, voxel: u32) -> Option<&str> {
        self.by_type
            .get(&VoxelInstance(voxel).type_id())
            .map(String::as_str)
    }
}

/// The changes since the last commit, one per position, in the order each
/// position was first changed.
#[derive(Debug, Default)]
pub struct Pending {
    changes: Vec<Change>,
    index: HashMap<Pos, usize>,
    /// Changes not recorded for want of room.
    dropped: usize,
}

impl Pending {
    /// `pos` changed from `before` to `after` (by the player `by`).
    pub fn record(&mut self, pos: Pos, before: u32, after: u32, by: Option<&str>) {
        if let Some(&at) = self.index.get(&pos) {
            self.changes[at].after = after;
            self.changes[at].by = by.map(str::to_string);
            return;
        }
        if self.changes.len() >= MAX_SPECIAL_CHANGES {
            self.dropped += 1;
            return;
        }
        self.index.insert(pos, self.changes.len());
        self.changes.push(Change {
            pos,
            before,
            after,
            by: by.map(str::to_string),
        });
    }

    /// The changes recorded (those ending where they started left out),
    /// and how many more were not; empties it.
    pub fn take(&mut self) -> (Vec<Change>, usize) {
        self.index.clear();
        let mut changes = std::mem::take(&mut self.changes);
        changes.retain(|c| c.before != c.after);
        (changes, std::mem::take(&mut self.dropped))
    }
}

/// What each handler module is told about `changes` (in the order of the
/// changes; modules by name). `voxel_at` reads a voxel as it is after the
/// changes (`None`: not in memory, not told).
pub fn notifications(
    changes: &[Change],
    handlers: &Handlers,
    mut voxel_at: impl FnMut(Pos) -> Option<u32>,
) -> BTreeMap<String, Vec<SpecialVoxel>> {
    let mut told: BTreeMap<String, Vec<SpecialVoxel>> = BTreeMap::new();
    if handlers.is_empty() {
        return told;
    }
    let before: HashMap<Pos, u32> = changes.iter().map(|c| (c.pos, c.before)).collect();
    let mut tell = |module: &str, special: SpecialVoxel| match told.get_mut(module) {
        Some(list) => list.push(special),
        None => {
            told.insert(module.to_string(), vec![special]);
        }
    };
    for change in changes {
        let retyped =
            VoxelInstance(change.before).type_id() != VoxelInstance(change.after).type_id();
        let special = |cause| SpecialVoxel {
            pos: change.pos,
            voxel: change.after,
            previous: change.before,
            cause,
            by: change.by.clone(),
        };
        if retyped {
            if let Some(module) = handlers.of(change.before) {
                tell(module, special(SpecialCause::Dug));
            }
            if let Some(module) = handlers.of(change.after) {
                tell(module, special(SpecialCause::Placed));
            }
        }
        for face in FACES {
            let Some(pos) = offset(change.pos, face) else {
                continue;
            };
            let Some(voxel) = voxel_at(pos) else {
                continue;
            };
            let Some(module) = handlers.of(voxel) else {
                continue;
            };
            tell(
                module,
                SpecialVoxel {
                    pos,
                    voxel,
                    previous: before.get(&pos).copied().unwrap_or(voxel),
                    cause: SpecialCause::NeighbourChanged {
                        neighbour: change.pos,
                        was: change.before,
                        now: change.after,
                    },
                    by: change.by.clone(),
                },
            );
        }
    }
    told
}

/// `pos + by`, unless it leaves the coordinate range.
fn offset(pos: Pos, by: Pos) -> Option<Pos> {
    Some([
        pos[0].checked_add(by[0])?,
        pos[1].checked_add(by[1])?,
        pos[2].checked_add(by[2])?,
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use buildat_voxel::{AIR, BlockDefinition, BlockRegistry};

    /// A registry with `stone` (no handler), `torch` (handled by `main`)
    /// and `lamp` (handled by `lights`); their ids.
    fn registry() -> (VoxelRegistry, u32, u32, u32) {
        let mut voxels = VoxelRegistry::default();
        let mut blocks = BlockRegistry::default();
        let stone = blocks
            .add(BlockDefinition::simple("stone", "stone.png"), &mut voxels)
            .unwrap()[0];
        let mut torch = BlockDefinition::simple("torch", "torch.png");
        torch.handler_module = "main".into();
        let torch = blocks.add(torch, &mut voxels).unwrap()[0];
        let mut lamp = BlockDefinition::simple("lamp", "lamp.png");
        lamp.handler_module = "lights".into();
        let lamp = blocks.add(lamp, &mut voxels).unwrap()[0];
        (voxels, stone, torch, lamp)
    }

    fn handlers(voxels: &VoxelRegistry) -> Handlers {
        let mut handlers = Handlers::default();
        handlers.refresh(voxels);
        handlers
    }

    fn world(voxels: &[(Pos, u32)]) -> impl FnMut(Pos) -> Option<u32> + '_ {
        |pos| {
            voxels
                .iter()
                .find(|(p, _)| *p == pos)
                .map(|(_, v)| *v)
                .or(Some(AIR))
        }
    }

    #[test]
    fn placing_and_digging_tell_the_voxels_handler() {
        let (voxels, stone, torch, _) = registry();
        let handlers = handlers(&voxels);
        let at = [5, 6, 7];
        let placed = [Change {
            pos: at,
            before: AIR,
            after: torch,
            by: None,
        }];
        let told = notifications(&placed, &handlers, world(&[(at, torch)]));
        assert_eq!(told.len(), 1);
        assert_eq!(
            told["main"],
            vec![SpecialVoxel {
                pos: at,
                voxel: torch,
                previous: AIR,
                cause: SpecialCause::Placed,
                by: None,
            }]
        );
        // Replaced by stone: the torch's handler hears it was dug; stone
        // has no handler.
        let replaced = [Change {
            pos: at,
            before: torch,
            after: stone,
            by: None,
        }];
        let told = notifications(&replaced, &handlers, world(&[(at, stone)]));
        assert_eq!(
            told["main"],
            vec![SpecialVoxel {
                pos: at,
                voxel: stone,
                previous: torch,
                cause: SpecialCause::Dug,
                by: None,
            }]
        );
        // Game bits alone: no Placed nor Dug.
        let bits = VoxelInstance::new(torch, 3).0;
        let retouched = [Change {
            pos: at,
            before: torch,
            after: bits,
            by: None,
        }];
        assert!(notifications(&retouched, &handlers, world(&[(at, bits)])).is_empty());
    }

    #[test]
    fn a_change_tells_the_handlers_of_its_six_neighbours() {
        let (voxels, stone, torch, lamp) = registry();
        let handlers = handlers(&voxels);
        let below = [0, 10, 0];
        let torch_at = [0, 11, 0];
        let lamp_at = [1, 10, 0];
        let far_torch = [2, 10, 0];
        let around = [(torch_at, torch), (lamp_at, lamp), (far_torch, torch)];
        let dug = [Change {
            pos: below,
            before: stone,
            after: AIR,
            by: None,
        }];
        let told = notifications(&dug, &handlers, world(&around));
        let cause = SpecialCause::NeighbourChanged {
            neighbour: below,
            was: stone,
            now: AIR,
        };
        assert_eq!(
            told["main"],
            vec![SpecialVoxel {
                pos: torch_at,
                voxel: torch,
                previous: torch,
                cause,
                by: None,
            }],
            "the torch above; not the one two voxels away"
        );
        assert_eq!(
            told["lights"],
            vec![SpecialVoxel {
                pos: lamp_at,
                voxel: lamp,
                previous: lamp,
                cause,
                by: None,
            }]
        );
    }

    #[test]
    fn changes_in_one_commit_are_told_from_before_it_to_after_it() {
        let (voxels, stone, torch, _) = registry();
        let handlers = handlers(&voxels);
        let mut pending = Pending::default();
        let a = [0, 0, 0];
        let b = [0, 1, 0];
        // A torch placed and taken away again within the commit: nothing.
        pending.record(a, AIR, torch, None);
        pending.record(a, torch, AIR, None);
        // A torch on stone, both placed in the commit.
        pending.record(b, AIR, stone, None);
        pending.record(b, stone, torch, None);
        pending.record(a, AIR, stone, None);
        let (changes, dropped) = pending.take();
        assert_eq!(dropped, 0);
        assert_eq!(
            changes,
            vec![
                Change {
                    pos: a,
                    before: AIR,
                    after: stone,
                    by: None,
                },
                Change {
                    pos: b,
                    before: AIR,
                    after: torch,
                    by: None,
                }
            ],
            "one per position, in the order first changed"
        );
        let told = notifications(&changes, &handlers, world(&[(a, stone), (b, torch)]));
        // The torch hears of its stone below (placed before it in the
        // changes) and of its own placing.
        assert_eq!(
            told["main"],
            vec![
                SpecialVoxel {
                    pos: b,
                    voxel: torch,
                    previous: AIR,
                    cause: SpecialCause::NeighbourChanged {
                        neighbour: a,
                        was: AIR,
                        now: stone
                    },
                    by: None,
                },
                SpecialVoxel {
                    pos: b,
                    voxel: torch,
                    previous: AIR,
                    cause: SpecialCause::Placed,
                    by: None,
                },
            ]
        );
        assert_eq!(pending.take(), (Vec::new(), 0), "taken once");
    }

    #[test]
    fn the_work_of_one_commit_is_bounded_and_nothing_without_handlers() {
        let mut pending = Pending::default();
        for x in 0..MAX_SPECIAL_CHANGES as i32 + 10 {
            pending.record([x, 0, 0], AIR, 5, None);
        }
        let (changes, dropped) = pending.take();
        assert_eq!(changes.len(), MAX_SPECIAL_CHANGES);
        assert_eq!(dropped, 10);
        // No handler anywhere: the world is not even read.
        let mut plain = VoxelRegistry::default();
        BlockRegistry::default()
            .add(BlockDefinition::simple("stone", "stone.png"), &mut plain)
            .unwrap();
        let handlers = handlers(&plain);
        assert!(handlers.is_empty());
        let told = notifications(&changes, &handlers, |_| panic!("read"));
        assert!(told.is_empty());
        // Edges of the coordinate range are not wrapped around.
        let (voxels, _, torch, _) = registry();
        let edge = [i32::MAX, i32::MIN, 0];
        let change = [Change {
            pos: edge,
            before: AIR,
            after: torch,
            by: None,
        }];
        let told = notifications(&change, &super::Handlers::default(), |_| None);
        assert!(told.is_empty());
        let told = notifications(&change, &self::handlers(&voxels), |_| Some(torch));
        assert_eq!(
            told["main"].len(),
            1 + 4,
            "placed, and 4 neighbours in range"
        );
    }
}
