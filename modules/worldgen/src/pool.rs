//! The generation workers: sections asked for by `voxelworld` are generated
//! here, several at once, and handed back with its `apply_generated`.
//!
//! Owns: the request queue (nearest first: the smallest distance the
//! request carries, then first asked; a section asked again while queued is
//! queued once, at the smaller distance; a cancelled one leaves it) and the
//! worker threads, stopped and joined by [`GenerationPool::stop`] (queued
//! requests are dropped then: voxelworld asks again for what it did not
//! get). A section that fails to generate (does not encode, or its
//! generation panics) is logged with its name and not handed over; the
//! worker goes on. Does not own: the terrain (`buildat-worldgen-terrain`) or what
//! voxelworld does with it.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;

use buildat_interface::{Host, log};
use buildat_voxel::geometry::{Pos, SectionSize};
use buildat_voxelworld_api::ApplyGenerated;

/// The sections waiting for a worker: section → (distance, order asked).
#[derive(Default)]
struct Queue {
    sections: HashMap<Pos, (u32, u64)>,
    asked: u64,
    stopping: bool,
}

impl Queue {
    fn request(&mut self, section: Pos, distance: u32) {
        self.asked += 1;
        let asked = self.asked;
        self.sections
            .entry(section)
            .and_modify(|queued| queued.0 = queued.0.min(distance))
            .or_insert((distance, asked));
    }

    /// The nearest section, first asked among the nearest.
    fn take_nearest(&mut self) -> Option<Pos> {
        let (&section, _) = self.sections.iter().min_by_key(|(_, queued)| **queued)?;
        self.sections.remove(&section);
        Some(section)
    }
}

#[derive(Default)]
struct Shared {
    queue: Mutex<Queue>,
    wake: Condvar,
}

pub struct GenerationPool {
    shared: Arc<Shared>,
    workers: Vec<JoinHandle<()>>,
}

impl GenerationPool {
    pub fn start(host: Host, seed: u64, section_size: SectionSize, count: usize) -> Self {
        let shared = Arc::new(Shared::default());
        let workers = (0..count.max(1))
            .map(|_| {
                let shared = shared.clone();
                std::thread::spawn(move || work(&shared, host, seed, section_size))
            })
            .collect();
        Self { shared, workers }
    }

    fn queue(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.shared
            .queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues `section` at `distance`, or moves it nearer if queued.
    pub fn request(&self, section: Pos, distance: u32) {
        self.queue().request(section, distance);
        self.shared.wake.notify_one();
    }

    /// Drops `sections` from the queue (one being generated is finished).
    pub fn cancel(&self, sections: &[Pos]) {
        let mut queue = self.queue();
        for section in sections {
            queue.sections.remove(section);
        }
    }

    /// Drops what is queued, lets each worker finish its section, joins them.
    pub fn stop(self) {
        {
            let mut queue = self.queue();
            queue.stopping = true;
            queue.sections.clear();
        }
        self.shared.wake.notify_all();
        for worker in self.workers {
            if worker.join().is_err() {
                log::error!("a generation worker panicked");
            }
        }
    }
}

fn work(shared: &Shared, host: Host, seed: u64, section_size: SectionSize) {
    // The columns of the last section's x and z, for the next one there.
    let mut columns = None;
    loop {
        let section = {
            let mut queue = shared.queue.lock().unwrap_or_else(PoisonError::into_inner);
            loop {
                if queue.stopping {
                    return;
                }
                if let Some(section) = queue.take_nearest() {
                    break section;
                }
                queue = shared
                    .wake
                    .wait(queue)
                    .unwrap_or_else(PoisonError::into_inner);
            }
        };
        // A section that fails is not handed over (nor an empty one in its
        // place): voxelworld asks again for what it did not get.
        match crate::generate_section_in(&mut columns, seed, section_size, section) {
            Ok(generated) => {
                if let Err(error) = host.call(&ApplyGenerated { section: generated }) {
                    log::warn!("handing section {section:?} to voxelworld: {error}");
                }
            }
            Err(error) => log::error!("{error}; not handed to voxelworld"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nearest_goes_first_then_the_first_asked_and_cancelled_ones_never() {
        let mut queue = Queue::default();
        queue.request([5, 0, 0], 25);
        queue.request([1, 0, 0], 4);
        queue.request([2, 0, 0], 4);
        queue.request([9, 0, 0], 81);
        queue.request([5, 0, 0], 1); // a player came nearer
        queue.request([2, 0, 0], 9); // farther: stays at 4
        queue.sections.remove(&[9, 0, 0]); // as `cancel` does
        let order: Vec<Pos> = std::iter::from_fn(|| queue.take_nearest()).collect();
        assert_eq!(order, vec![[5, 0, 0], [1, 0, 0], [2, 0, 0]]);
    }
}
