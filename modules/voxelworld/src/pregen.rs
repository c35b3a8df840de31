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

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use buildat_interface::log;
use buildat_voxelworld_api::PregenReport;

use buildat_voxel::geometry::Pos;

/// The world's thread a running server's pregen may take per tick (ticks
/// are 100 ms apart by default: a quarter of it).
pub const PREGEN_SLICE: Duration = Duration::from_millis(25);

/// Sections per generator call: small on a running server, so a slice ends
/// close to its deadline; larger headless, where nothing else waits.
pub const LIVE_BATCH: usize = 2;
pub const HEADLESS_BATCH: usize = 8;

/// Every section of the region, x and z within `radius` of the origin and y
/// within `height`, in rings from the centre out (so a stopped run has
/// generated the middle).
pub fn region(radius: i32, height: i32) -> Vec<Pos> {
    let mut sections = Vec::new();
    for ring in 0..=radius {
        for y in -height..=height {
            for z in -ring..=ring {
                for x in -ring..=ring {
                    if x.abs() == ring || z.abs() == ring {
                        sections.push([x, y, z]);
                    }
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

#[cfg(test)]
mod tests {
    use super::*;

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
