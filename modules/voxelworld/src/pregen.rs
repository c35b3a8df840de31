//! `pregen`: generating and saving a region ahead of time.
//!
//! Owns: one run's
//! plan and progress ([`PregenRun`]: the sections still missing, in batches,
//! with a progress line at most every second). Headless
//! (`buildat-server pregen ...`) and through the `Pregen` call a run goes to
//! the end at once; on a running server's console it goes in slices of at
//! most [`PREGEN_SLICE`] of the world's thread per tick, so players keep
//! playing, and `pregen stop` ends it (what it generated stays saved).
//!
//! Does not own: generating (the generator module, one call per batch),
//! applying and saving sections (`lib.rs` with `world.rs`).

use std::collections::{BTreeSet, HashSet, VecDeque};
use std::time::{Duration, Instant};

use buildat_interface::log;
use buildat_voxelworld_api::PregenReport;

use buildat_voxel::geometry::{Pos, SectionSize};

/// The world's thread a running server's pregen may take per tick (ticks
/// are 100 ms apart by default: a quarter of it).
pub const PREGEN_SLICE: Duration = Duration::from_millis(25);

/// Sections per generator call: small on a running server, so a slice ends
/// close to its deadline; larger headless, where nothing else waits.
pub const LIVE_BATCH: usize = 2;
pub const HEADLESS_BATCH: usize = 8;

/// Every section of the region, x and z within `radius` of the origin and y
/// within `height`, in rings from the centre out (so a stopped run has
/// generated the middle), a column of sections at a time (bottom up: the
/// generator works a column's ground out once for the sections of it that
/// come together).
pub fn region(radius: i32, height: i32) -> Vec<Pos> {
    let mut sections = Vec::new();
    for ring in 0..=radius {
        for z in -ring..=ring {
            for x in -ring..=ring {
                if x.abs() == ring || z.abs() == ring {
                    sections.extend((-height..=height).map(|y| [x, y, z]));
                }
            }
        }
    }
    sections
}

/// One run: what is left, what was done, and when progress was last said.
pub struct PregenRun {
    missing: VecDeque<Pos>,
    total: usize,
    batch: usize,
    pub report: PregenReport,
    started: Instant,
    last_report: Instant,
}

impl PregenRun {
    /// A run over `missing`, `already_present` sections being stored already.
    pub fn new(missing: Vec<Pos>, already_present: u64, batch: usize) -> Self {
        let total = missing.len();
        log::info!("pregen: {total} sections to generate, {already_present} already present");
        Self {
            missing: missing.into(),
            total,
            batch: batch.max(1),
            report: PregenReport {
                generated: 0,
                already_present,
            },
            started: Instant::now(),
            last_report: Instant::now(),
        }
    }

    /// The sections not handed out yet.
    pub fn remaining(&self) -> impl Iterator<Item = Pos> + '_ {
        self.missing.iter().copied()
    }

    /// The next sections to generate, or `None` when every one was asked.
    pub fn next_batch(&mut self) -> Option<Vec<Pos>> {
        let count = self.batch.min(self.missing.len());
        (count > 0).then(|| self.missing.drain(..count).collect())
    }

    /// Counts `generated` more sections; says the progress at most every
    /// second.
    pub fn generated(&mut self, generated: u64) {
        self.report.generated += generated;
        if self.last_report.elapsed().as_secs_f64() >= 1.0 {
            self.last_report = Instant::now();
            log::info!("pregen: {}", self.progress());
        }
    }

    /// Sections the run set out to generate.
    pub fn total(&self) -> usize {
        self.total
    }

    pub fn is_finished(&self) -> bool {
        self.missing.is_empty()
    }

    /// `N/M sections (P%)`.
    pub fn progress(&self) -> String {
        format!(
            "{}/{} sections ({:.0}%)",
            self.report.generated,
            self.total,
            self.report.generated as f64 * 100.0 / self.total.max(1) as f64
        )
    }

    /// Logs the end of the run.
    pub fn finish(&self) {
        log::info!(
            "pregen: generated {} sections in {:.1} s",
            self.report.generated,
            self.started.elapsed().as_secs_f64()
        );
    }
}

/// Chunks lit in one call by a headless run with light: 16 sections of
/// 2 × 2 × 2 chunks (their voxels and those around are held meanwhile, about
/// 30 MB).
pub const LIGHT_GROUP: usize = 128;

/// The chunks of a headless run with light that wait for their light: a
/// chunk is settled (its light final for what the run makes) once no section
/// the run has still to generate holds a chunk around it, or above one of
/// those (sunlight comes down from any height).
pub struct Unlit {
    section_size: SectionSize,
    /// Sections the run has not generated yet.
    to_come: HashSet<Pos>,
    /// The highest chunk row of the region: nothing above it comes.
    top_chunk: i32,
    waiting: BTreeSet<Pos>,
}

impl Unlit {
    /// For a run of a region `height` sections above and below the middle
    /// that will generate `to_come`.
    pub fn new(section_size: SectionSize, height: i32, to_come: impl Iterator<Item = Pos>) -> Self {
        Self {
            section_size,
            to_come: to_come.collect(),
            top_chunk: (height + 1) * section_size.0[1] - 1,
            waiting: BTreeSet::new(),
        }
    }

    /// `batch` is being generated: its chunks wait for light, and its
    /// sections no longer hold others back.
    pub fn generating(&mut self, batch: &[Pos]) {
        for section in batch {
            self.to_come.remove(section);
            self.waiting
                .extend(self.section_size.chunks_of_section(*section));
        }
    }

    /// The waiting chunks of every section whose chunks are all settled now
    /// (all of them once `last`), taken out. Whole sections: a section is
    /// lit at once, and a chunk lit before its section's others are settled
    /// would be lit again with them.
    pub fn take_settled(&mut self, last: bool) -> Vec<Pos> {
        let sections: BTreeSet<Pos> = self
            .waiting
            .iter()
            .map(|&chunk| self.section_size.section_of_chunk(chunk))
            .collect();
        let settled: Vec<Pos> = sections
            .into_iter()
            .map(|section| self.section_size.chunks_of_section(section))
            .filter(|chunks| last || chunks.iter().all(|&chunk| self.is_settled(chunk)))
            .flatten()
            .filter(|chunk| self.waiting.contains(chunk))
            .collect();
        for chunk in &settled {
            self.waiting.remove(chunk);
        }
        settled
    }

    fn is_settled(&self, chunk: Pos) -> bool {
        let [x, y, z] = chunk;
        (-1..=1).all(|dz| {
            (-1..=1).all(|dx| {
                (y - 1..=self.top_chunk.max(y + 1)).all(|cy| {
                    let section = self.section_size.section_of_chunk([x + dx, cy, z + dz]);
                    !self.to_come.contains(&section)
                })
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// In a run from the centre out, a chunk is settled only once every
    /// section around and above it is generated; the last batch settles
    /// the rest.
    #[test]
    fn a_chunk_is_settled_once_the_sections_around_and_above_it_are_generated() {
        let size = SectionSize::default();
        let mut run = PregenRun::new(region(1, 1), 0, 3);
        let mut unlit = Unlit::new(size, 1, run.remaining());
        let mut settled_when = std::collections::BTreeMap::new();
        let mut generated = HashSet::new();
        let mut step = 0;
        while let Some(batch) = run.next_batch() {
            unlit.generating(&batch);
            generated.extend(batch.iter().copied());
            for chunk in unlit.take_settled(run.is_finished()) {
                settled_when.insert(chunk, step);
                if run.is_finished() {
                    continue;
                }
                // Every section of the region holding a chunk around it,
                // or above one of those, is there.
                for s in region(1, 1) {
                    let reaches = size.chunks_of_section(s).iter().any(|c| {
                        (c[0] - chunk[0]).abs() <= 1
                            && (c[2] - chunk[2]).abs() <= 1
                            && c[1] >= chunk[1] - 1
                    });
                    if reaches {
                        assert!(generated.contains(&s), "{chunk:?} settled before {s:?}");
                    }
                }
            }
            step += 1;
        }
        assert_eq!(settled_when.len(), 3 * 3 * 3 * 8, "every chunk once");
        // The middle column settles before the end: not all left to the last.
        assert!(
            settled_when.values().any(|&at| at + 1 < step),
            "{settled_when:?}"
        );
    }

    #[test]
    fn the_region_is_every_section_once_from_the_centre_out() {
        let sections = region(2, 1);
        assert_eq!(sections.len(), 5 * 5 * 3);
        let unique: std::collections::BTreeSet<Pos> = sections.iter().copied().collect();
        assert_eq!(unique.len(), sections.len());
        let ring = |p: &Pos| p[0].abs().max(p[2].abs());
        assert!(sections.windows(2).all(|w| ring(&w[0]) <= ring(&w[1])));
        assert_eq!(sections[0], [0, -1, 0]);
    }

    #[test]
    fn a_run_hands_out_batches_until_done() {
        let mut run = PregenRun::new(region(1, 0), 0, 4);
        let mut asked = 0;
        while let Some(batch) = run.next_batch() {
            assert!(batch.len() <= 4);
            asked += batch.len();
            run.generated(batch.len() as u64);
        }
        assert_eq!(asked, 9);
        assert!(run.is_finished());
        assert_eq!(run.report.generated, 9);
        assert_eq!(run.progress(), "9/9 sections (100%)");
    }
}
