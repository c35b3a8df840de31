//! Active block modifiers: the registered ABMs, their names resolved to
//! voxel types, and each one's round over the active area (the chunks
//! left of it, taken a slice per tick within the budget by `lib.rs`).
//!
//! Owns: resolution ([`resolve`]: a block name is every voxel type of
//! that block; `group:X` every block whose item is in group X), the
//! rounds (a round starts when the last one is done and its interval has
//! passed: the active area as it is then), the seeds of the chance draw.
//! Does not own: the scan (voxelworld's `find_voxels`), the area
//! (`area.rs`).

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use buildat_active_api::{Abm, MIN_INTERVAL_SECONDS};
use buildat_items_api::{ItemKind, ItemRegistry};
use buildat_voxel::VoxelRegistry;
use buildat_voxel::geometry::Pos;

/// The voxel types of `names` (block names, `group:X`): sorted, unique.
pub fn resolve(names: &[String], voxels: &VoxelRegistry, items: &ItemRegistry) -> Vec<u32> {
    let mut blocks: BTreeSet<&str> = BTreeSet::new();
    for name in names {
        match name.strip_prefix("group:") {
            Some(group) => {
                for item in items.items.values() {
                    if let ItemKind::Block { voxel } = &item.kind
                        && item.group(group) > 0
                    {
                        blocks.insert(voxel.split_once('@').map_or(voxel.as_str(), |(b, _)| b));
                    }
                }
            }
            None => {
                blocks.insert(name);
            }
        }
    }
    voxels
        .definitions()
        .iter()
        .filter(|d| blocks.contains(d.name.block_name.as_str()))
        .map(|d| d.id)
        .collect()
}

/// Checks an ABM's fields.
pub fn check(abm: &Abm) -> Result<(), String> {
    if abm.name.is_empty() || abm.module.is_empty() {
        return Err("an ABM needs a name and a module".into());
    }
    if !abm.interval_seconds.is_finite() || abm.interval_seconds < MIN_INTERVAL_SECONDS {
        return Err(format!(
            "ABM {}: interval_seconds must be at least {MIN_INTERVAL_SECONDS}, not {}",
            abm.name, abm.interval_seconds
        ));
    }
    if abm.nodes.is_empty() {
        return Err(format!("ABM {}: nodes is empty", abm.name));
    }
    Ok(())
}

/// One ABM and its round.
#[derive(Debug)]
pub struct AbmState {
    pub abm: Abm,
    pub types: Vec<u32>,
    pub neighbours: Vec<u32>,
    /// Chunks left of the current round.
    pub queue: VecDeque<Pos>,
    /// The module clock (seconds) at which the next round may start.
    pub next_round: f64,
    /// Rounds started (the chance's seed changes each round).
    pub round: u64,
    /// Voxels found this tick, delivered at its end.
    pub found: Vec<(Pos, u32)>,
}

impl AbmState {
    /// The seed of this round's draw.
    pub fn seed(&self) -> u64 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for byte in self.abm.name.bytes() {
            h = (h ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
        h ^ self.round.wrapping_mul(0x9E37_79B9_7F4A_7C15)
    }
}

/// The registered ABMs by name.
#[derive(Debug, Default)]
pub struct Abms {
    pub by_name: BTreeMap<String, AbmState>,
}

impl Abms {
    /// Registers (or replaces) an ABM; its first round starts at once.
    pub fn register(&mut self, abm: Abm, voxels: &VoxelRegistry, items: &ItemRegistry) {
        let state = AbmState {
            types: resolve(&abm.nodes, voxels, items),
            neighbours: resolve(&abm.neighbours, voxels, items),
            abm,
            queue: VecDeque::new(),
            next_round: 0.0,
            round: 0,
            found: Vec::new(),
        };
        self.by_name.insert(state.abm.name.clone(), state);
    }

    pub fn remove(&mut self, name: &str) -> bool {
        self.by_name.remove(name).is_some()
    }

    /// Resolves every ABM's names again (the registries changed).
    pub fn resolve_all(&mut self, voxels: &VoxelRegistry, items: &ItemRegistry) {
        for state in self.by_name.values_mut() {
            state.types = resolve(&state.abm.nodes, voxels, items);
            state.neighbours = resolve(&state.abm.neighbours, voxels, items);
        }
    }

    /// Starts the rounds that are due at `clock` over `area`.
    pub fn start_rounds<'a>(&mut self, clock: f64, area: impl Iterator<Item = &'a Pos> + Clone) {
        for state in self.by_name.values_mut() {
            if state.queue.is_empty() && clock >= state.next_round {
                state.queue = area.clone().copied().collect();
                state.next_round = clock + state.abm.interval_seconds;
                state.round += 1;
            }
        }
    }

    /// Chunks left of the current rounds.
    pub fn backlog(&self) -> usize {
        self.by_name.values().map(|s| s.queue.len()).sum()
    }

    pub fn len(&self) -> usize {
        self.by_name.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use buildat_items_api::ItemDef;
    use buildat_voxel::{BlockDefinition, BlockRegistry};

    /// Block names resolve to all their voxel types, groups through the
    /// items' groups; unknown names to nothing.
    #[test]
    fn names_and_groups_resolve_to_voxel_types() {
        let mut voxels = VoxelRegistry::default();
        let mut blocks = BlockRegistry::default();
        let dirt = blocks
            .add(BlockDefinition::simple("dirt", "dirt.png"), &mut voxels)
            .unwrap();
        let grass = blocks
            .add(BlockDefinition::simple("grass", "grass.png"), &mut voxels)
            .unwrap();
        let mut items = ItemRegistry::default();
        items.items.insert(
            "grass".into(),
            ItemDef::block("grass").with_groups(&[("soil", 1)]),
        );
        items.items.insert(
            "dirt".into(),
            ItemDef::block("dirt").with_groups(&[("soil", 0)]),
        );
        assert_eq!(resolve(&["dirt".into()], &voxels, &items), dirt);
        assert_eq!(resolve(&["group:soil".into()], &voxels, &items), grass);
        assert!(resolve(&["lava".into()], &voxels, &items).is_empty());
    }

    /// A round takes the area when due and not before the last is done.
    #[test]
    fn rounds_start_on_their_interval() {
        let mut abms = Abms::default();
        let abm = Abm {
            name: "m:a".into(),
            module: "m".into(),
            nodes: vec!["dirt".into()],
            neighbours: vec![],
            interval_seconds: 1.0,
            chance: 1,
        };
        assert!(check(&abm).is_ok());
        assert!(
            check(&Abm {
                interval_seconds: 0.0,
                ..abm.clone()
            })
            .is_err()
        );
        abms.register(abm, &VoxelRegistry::default(), &ItemRegistry::default());
        let area: BTreeSet<Pos> = [[0, 0, 0], [1, 0, 0]].into();
        abms.start_rounds(0.0, area.iter());
        assert_eq!(abms.backlog(), 2);
        let seed = abms.by_name["m:a"].seed();
        abms.by_name.get_mut("m:a").unwrap().queue.clear();
        abms.start_rounds(0.5, area.iter());
        assert_eq!(abms.backlog(), 0, "not yet");
        abms.start_rounds(1.0, area.iter());
        assert_eq!(abms.backlog(), 2);
        assert_ne!(abms.by_name["m:a"].seed(), seed, "a new draw each round");
    }
}
