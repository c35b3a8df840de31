//! The generation workers: sections asked for by `voxelworld` are generated
//! here, several at once, and handed back with its `apply_generated`.
//!
//! Owns: the request queue (first asked, first generated; a section asked
//! again while queued is queued once) and the worker threads, stopped and
//! joined by [`GenerationPool::stop`] (queued requests are dropped then:
//! voxelworld asks again for what it did not get). Does not own: the
//! terrain (`buildat-worldgen-terrain`) or what voxelworld does with it.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;

use buildat_interface::{Host, log};
use buildat_voxel::geometry::{Pos, SectionSize};
use buildat_voxelworld_api::ApplyGenerated;

#[derive(Default)]
struct Queue {
    sections: VecDeque<Pos>,
    stopping: bool,
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

    /// Queues `section` unless it is queued already.
    pub fn request(&self, section: Pos) {
        let mut queue = self
            .shared
            .queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if !queue.sections.contains(&section) {
            queue.sections.push_back(section);
            self.shared.wake.notify_one();
        }
    }

    /// Drops what is queued, lets each worker finish its section, joins them.
    pub fn stop(self) {
        {
            let mut queue = self
                .shared
                .queue
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
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
    loop {
        let section = {
            let mut queue = shared.queue.lock().unwrap_or_else(PoisonError::into_inner);
            loop {
                if queue.stopping {
                    return;
                }
                if let Some(section) = queue.sections.pop_front() {
                    break section;
                }
                queue = shared
                    .wake
                    .wait(queue)
                    .unwrap_or_else(PoisonError::into_inner);
            }
        };
        let generated = crate::generate_section(seed, section_size, section);
        if let Err(error) = host.call(&ApplyGenerated { section: generated }) {
            log::warn!("handing section {section:?} to voxelworld: {error}");
        }
    }
}
