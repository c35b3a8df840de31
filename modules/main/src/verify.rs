//! Password work off the game's thread: argon2id hashing (a name claimed),
//! verification (a login) and both (`/password`: the old one checked, the
//! new one hashed) on a few worker threads, so a login costs
//! the game's tick nothing. A finished job wakes the game with the event
//! [`CHECKED_EVENT`]; the game then takes the results ([`Workers::take_done`])
//! and answers the logins (`login.rs`).
//!
//! Owns: the worker threads (`main.login_threads`, default 2), the queue
//! and its cap (`main.max_pending_logins`, default 16: past it a login is
//! refused as "busy" before any work), and stopping: [`Workers::finish`]
//! (on every unload, and on drop) lets the threads finish what is queued,
//! joins them and hands back every result, so no thread runs this
//! module's code once it is unloaded, and every pending login is answered
//! (by this version, before a reload hands over). Does not own: the
//! database or what a result means (`accounts.rs`, `login.rs`).

use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use buildat_interface::{Host, log};

/// Wakes the game (its own [`CHECKED_EVENT`]) from a worker.
pub fn waker(host: Host) -> impl Fn() + Send + Clone + 'static {
    move || {
        if let Err(error) = host.emit_event(CHECKED_EVENT, &[]) {
            log::debug!("waking the game after a login check: {error}");
        }
    }
}
use buildat_main_api::PeerId;

use crate::accounts::{hash_password, verify_password};

/// The event a worker emits when it has finished a job (no payload).
pub const CHECKED_EVENT: &str = "main:login_checked";

/// The slow part of a login.
pub enum Work {
    /// Does the password match this verifier?
    Verify { verifier: String, password: String },
    /// A verifier for a new account's password.
    Hash { password: String },
    /// A verifier for `new` if `old` matches `verifier` (`/password`).
    Change {
        verifier: String,
        old: String,
        new: String,
    },
}

pub struct Job {
    pub peer: PeerId,
    /// Tells a result from one of an earlier login of the same peer.
    pub ticket: u64,
    pub work: Work,
}

pub enum Outcome {
    Verified(bool),
    Hashed(Result<String, String>),
    /// The new verifier; `Ok(None)`: the old password did not match.
    Changed(Result<Option<String>, String>),
}

pub struct Done {
    pub peer: PeerId,
    pub ticket: u64,
    pub outcome: Outcome,
}

/// Full: the login is refused as busy.
#[derive(Debug)]
pub struct Busy;

pub struct Workers {
    jobs: Option<SyncSender<Job>>,
    done: Receiver<Done>,
    threads: Vec<JoinHandle<()>>,
    /// Jobs submitted and not taken back yet.
    pending: usize,
    cap: usize,
}

fn work(job: Job) -> Done {
    let outcome = match job.work {
        Work::Verify { verifier, password } => {
            Outcome::Verified(verify_password(&verifier, &password))
        }
        Work::Hash { password } => {
            Outcome::Hashed(hash_password(&password).map_err(|e| e.to_string()))
        }
        Work::Change { verifier, old, new } => {
            Outcome::Changed(if verify_password(&verifier, &old) {
                hash_password(&new).map(Some).map_err(|e| e.to_string())
            } else {
                Ok(None)
            })
        }
    };
    Done {
        peer: job.peer,
        ticket: job.ticket,
        outcome,
    }
}

impl Workers {
    /// Starts `threads` workers (at least one) taking at most `cap` jobs
    /// at once (at least one); they call `wake` when one is done.
    pub fn start(
        wake: impl Fn() + Send + Clone + 'static,
        threads: usize,
        cap: usize,
    ) -> std::io::Result<Self> {
        let cap = cap.max(1);
        let (jobs, queue) = sync_channel::<Job>(cap);
        let (finished, done) = sync_channel::<Done>(cap);
        let queue = Arc::new(Mutex::new(queue));
        let mut handles = Vec::new();
        for index in 0..threads.max(1) {
            let queue = queue.clone();
            let finished = finished.clone();
            let wake = wake.clone();
            let handle = std::thread::Builder::new()
                .name(format!("main-login-{index}"))
                .spawn(move || {
                    loop {
                        // The lock is held while waiting only: one idle
                        // worker waits on the queue, the others on it.
                        let job = queue.lock().unwrap_or_else(|e| e.into_inner()).recv();
                        let Ok(job) = job else {
                            return;
                        };
                        if finished.send(work(job)).is_err() {
                            return;
                        }
                        wake();
                    }
                });
            match handle {
                Ok(handle) => handles.push(handle),
                Err(error) => {
                    let mut started = Self {
                        jobs: Some(jobs),
                        done,
                        threads: handles,
                        pending: 0,
                        cap,
                    };
                    started.finish();
                    return Err(error);
                }
            }
        }
        Ok(Self {
            jobs: Some(jobs),
            done,
            threads: handles,
            pending: 0,
            cap,
        })
    }

    /// Whether a job would be refused now.
    pub fn is_full(&self) -> bool {
        self.pending >= self.cap || self.jobs.is_none()
    }

    /// Queues a job, unless `cap` jobs are pending already.
    pub fn submit(&mut self, job: Job) -> Result<(), Busy> {
        if self.is_full() {
            return Err(Busy);
        }
        let jobs = self.jobs.as_ref().ok_or(Busy)?;
        // Never blocks: at most `cap` jobs are pending, queued or running.
        jobs.try_send(job).map_err(|_| Busy)?;
        self.pending += 1;
        Ok(())
    }

    /// The results ready now.
    pub fn take_done(&mut self) -> Vec<Done> {
        let mut results = Vec::new();
        // Empty or disconnected (every worker gone): nothing more now.
        while let Ok(done) = self.done.try_recv() {
            results.push(done);
        }
        self.pending = self.pending.saturating_sub(results.len());
        results
    }

    /// Takes no more jobs, lets the workers finish those queued, joins
    /// them, and answers every result not taken yet.
    pub fn finish(&mut self) -> Vec<Done> {
        self.jobs = None;
        let mut results = Vec::new();
        for handle in std::mem::take(&mut self.threads) {
            // A worker may wait for room in the results: take them as it goes.
            while !handle.is_finished() {
                results.extend(self.take_done());
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            if handle.join().is_err() {
                log::error!("a login worker panicked");
            }
        }
        results.extend(self.take_done());
        results
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        // Never leave a thread running this library's code past its unload.
        let _ = self.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_run_and_the_cap_refuses_the_rest() {
        let verifier = hash_password("secret").expect("hashes");
        let mut workers = Workers::start(|| {}, 2, 3).expect("starts");
        for (ticket, password) in ["secret", "guess", "secret"].into_iter().enumerate() {
            let job = Job {
                peer: 1,
                ticket: ticket as u64,
                work: Work::Verify {
                    verifier: verifier.clone(),
                    password: password.into(),
                },
            };
            workers.submit(job).expect("room");
        }
        let busy = Job {
            peer: 2,
            ticket: 9,
            work: Work::Hash {
                password: "x".into(),
            },
        };
        assert!(workers.submit(busy).is_err(), "over the cap");
        let mut results = workers.finish();
        results.sort_by_key(|d| d.ticket);
        let verified: Vec<bool> = results
            .iter()
            .map(|d| matches!(d.outcome, Outcome::Verified(true)))
            .collect();
        assert_eq!(verified, [true, false, true]);
        assert!(workers.is_full(), "finished: takes nothing more");
    }
}
