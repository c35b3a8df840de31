//! The work of the flow: a capped queue of positions to look at again
//! ([`Queue`]) and one step over it ([`step`]): at most a budget of the
//! positions queued before the step, their neighbourhoods read in one
//! read per batch, the rules applied (`flow.rs`), the changes written in
//! one write per batch (each only over exactly what was read), the
//! positions a change affects queued for the next step. So a flood
//! advances one voxel a step, each step bounded in work, and the queue
//! never grows past its cap: what does not fit is dropped and counted.
//!
//! Owns: the queue, its dedup and cap, the step's batching. Does not own:
//! the rules (`flow.rs`), where voxels come from ([`World`]: the module
//! reads voxelworld, tests and the bench a map in memory).

use std::collections::{HashMap, HashSet, VecDeque};

use buildat_voxel::VoxelInstance;
use buildat_voxel::geometry::Pos;

use crate::flow::{self, Around, Cell, Kinds, Next};

/// Positions waiting, each at most once, at most `cap`.
#[derive(Debug, Clone, Default)]
pub struct Queue {
    order: VecDeque<Pos>,
    queued: HashSet<Pos>,
    cap: usize,
    /// Positions refused because the queue was full.
    pub dropped: u64,
    /// The longest the queue has been.
    pub peak: usize,
}

impl Queue {
    pub fn new(cap: usize) -> Self {
        Self {
            cap,
            ..Self::default()
        }
    }

    pub fn len(&self) -> usize {
        self.order.len()
    }

    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    pub fn cap(&self) -> usize {
        self.cap
    }

    pub fn set_cap(&mut self, cap: usize) {
        self.cap = cap;
    }

    /// Queues `pos` unless it waits already; false when the queue is full
    /// (counted in [`Queue::dropped`]).
    pub fn push(&mut self, pos: Pos) -> bool {
        if self.queued.contains(&pos) {
            return true;
        }
        if self.order.len() >= self.cap {
            self.dropped += 1;
            return false;
        }
        self.queued.insert(pos);
        self.order.push_back(pos);
        self.peak = self.peak.max(self.order.len());
        true
    }

    /// Queues every position whose rules read `pos` (after the flow
    /// changed it: `pos` itself would stay as it is).
    pub fn push_affected(&mut self, pos: Pos) {
        for around in &flow::affected(pos)[1..] {
            self.push(*around);
        }
    }

    /// Queues `pos` and every position whose rules read it (after
    /// somebody else changed it).
    pub fn push_changed(&mut self, pos: Pos) {
        for around in flow::affected(pos) {
            self.push(around);
        }
    }

    /// Queues what a change somebody made (`was` to `now` at `pos`) may
    /// set flowing: a change of or to a liquid, everything that reads it
    /// ([`Queue::push_changed`]); a dug voxel (to air), itself (a liquid
    /// beside or above fills it, and that change queues the rest); any
    /// other, nothing (in a settled world no liquid rests on, or flows
    /// into, air that a block then fills). Without `kinds` (the blocks not
    /// registered yet) every change counts as a liquid's.
    pub fn push_told(&mut self, kinds: Option<&Kinds>, pos: Pos, was: u32, now: u32) {
        let liquid = |voxel| kinds.is_none_or(|kinds| kinds.is_liquid(voxel));
        if liquid(was) || liquid(now) {
            self.push_changed(pos);
        } else if VoxelInstance(now).type_id() == buildat_voxel::AIR {
            self.push(pos);
        }
    }

    fn pop(&mut self) -> Option<Pos> {
        let pos = self.order.pop_front()?;
        self.queued.remove(&pos);
        Some(pos)
    }

    /// Every position waiting, in order (a reload's stash).
    pub fn positions(&self) -> Vec<Pos> {
        self.order.iter().copied().collect()
    }
}

/// A change the flow makes: `(pos, seen, now)`.
pub type Edit = (Pos, u32, u32);

/// Where the flow reads and writes voxels.
pub trait World {
    type Error;
    /// The voxels at `positions`, in order (`None`: not generated).
    fn get(&mut self, positions: &[Pos]) -> Result<Vec<Option<u32>>, Self::Error>;
    /// Sets each `(pos, seen, now)` only where `seen` is still there;
    /// answers which were set.
    fn edit(&mut self, edits: &[(Pos, u32, u32)]) -> Result<Vec<bool>, Self::Error>;
}

/// What one [`step`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StepReport {
    /// Positions looked at.
    pub looked: u32,
    /// Voxels changed.
    pub changed: u32,
    /// Changes refused (the voxel was changed meanwhile: its own change
    /// queues it again).
    pub refused: u32,
    /// Reads and writes made (batches).
    pub batches: u32,
}

/// One step: looks at up to `budget` of the positions queued before it, in
/// batches whose reads fit `max_reads` positions; answers what it did and
/// the changes made, as `(pos, was, now)`.
pub fn step<W: World>(
    queue: &mut Queue,
    kinds: &Kinds,
    world: &mut W,
    budget: u32,
    max_reads: usize,
) -> Result<(StepReport, Vec<Edit>), W::Error> {
    let mut report = StepReport::default();
    let mut made = Vec::new();
    let mut left = queue.len().min(budget as usize);
    let max_reads = max_reads.max(flow::neighbourhood([0; 3]).len());
    while left > 0 {
        // A batch: positions while their neighbourhoods' reads fit.
        let mut batch = Vec::new();
        let mut index: HashMap<Pos, usize> = HashMap::new();
        let mut reads = Vec::new();
        while left > 0 && reads.len() + 11 <= max_reads {
            let Some(pos) = queue.pop() else {
                left = 0;
                break;
            };
            left -= 1;
            for around in flow::neighbourhood(pos) {
                index.entry(around).or_insert_with(|| {
                    reads.push(around);
                    reads.len() - 1
                });
            }
            batch.push(pos);
        }
        if batch.is_empty() {
            break;
        }
        report.batches += 1;
        report.looked += batch.len() as u32;
        let voxels = world.get(&reads)?;
        let voxel_at = |pos: &Pos| voxels.get(index[pos]).copied().flatten();
        let mut edits = Vec::new();
        for pos in batch {
            let cells: [Cell; 11] = flow::neighbourhood(pos).map(|p| kinds.cell(voxel_at(&p)));
            let Some(seen) = voxel_at(&pos) else {
                continue;
            };
            let now = match flow::next(&Around::from_cells(cells)) {
                Next::Keep => continue,
                Next::Set(cell) => kinds.voxel(cell),
                Next::Cool => kinds.cooled,
            };
            if let Some(now) = now.filter(|now| *now != seen) {
                edits.push((pos, seen, now));
            }
        }
        if edits.is_empty() {
            continue;
        }
        let done = world.edit(&edits)?;
        for (edit, set) in edits.into_iter().zip(done) {
            if set {
                report.changed += 1;
                queue.push_affected(edit.0);
                made.push(edit);
            } else {
                report.refused += 1;
            }
        }
    }
    Ok((report, made))
}

/// A world in memory: what the tests and the bench flow through.
#[derive(Debug, Clone, Default)]
pub struct MemWorld {
    pub voxels: HashMap<Pos, u32>,
    /// What a position not in `voxels` holds (`None`: not generated).
    pub default: Option<u32>,
    /// Reads and writes made, and the positions they carried.
    pub gets: u64,
    pub edits: u64,
    pub most_read: usize,
}

impl MemWorld {
    pub fn at(&self, pos: Pos) -> Option<u32> {
        self.voxels.get(&pos).copied().or(self.default)
    }

    pub fn set(&mut self, pos: Pos, voxel: u32) {
        self.voxels.insert(pos, voxel);
    }
}

impl World for MemWorld {
    type Error = std::convert::Infallible;

    fn get(&mut self, positions: &[Pos]) -> Result<Vec<Option<u32>>, Self::Error> {
        self.gets += 1;
        self.most_read = self.most_read.max(positions.len());
        Ok(positions.iter().map(|pos| self.at(*pos)).collect())
    }

    fn edit(&mut self, edits: &[(Pos, u32, u32)]) -> Result<Vec<bool>, Self::Error> {
        self.edits += 1;
        Ok(edits
            .iter()
            .map(|(pos, seen, now)| {
                let ok = self.at(*pos) == Some(*seen);
                if ok {
                    self.set(*pos, *now);
                }
                ok
            })
            .collect())
    }
}
