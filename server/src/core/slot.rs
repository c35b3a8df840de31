//! One module's place in the host: its queue, subscriptions, state, running
//! thread and activity (for the watchdog).
//!
//! Owns: [`ModuleSlot`] and the [`Message`]s queued to a module. The queue
//! belongs to the slot, not to a loaded instance, so events sent while a
//! module reloads wait in it and reach the next instance in order.
//! Does not own: what runs on the thread (`instance.rs`).

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use buildat_interface::core_api::{ModuleState, QUEUE_WAIT_BOUNDS_S, QueueTimes};
use buildat_interface::meta::ModuleMeta;
use buildat_interface::{CallError, UnloadKind};
use crossbeam_channel::{Receiver, Sender};

/// An event as queued to subscribers (shared, not copied, per subscriber).
#[derive(Debug)]
pub(crate) struct EventMsg {
    pub name: String,
    pub payload: Vec<u8>,
    /// When it was emitted (each subscriber's wait counts from here).
    pub queued_at: Instant,
}

/// Where a call's answer goes: the calling thread's reply channel (one per
/// thread, reused: see `calls.rs`), with the call's number, so an answer
/// that comes after its caller gave up is told from the next call's.
pub(crate) struct CallReply {
    pub call: u64,
    pub to: Sender<(u64, Result<Vec<u8>, CallError>)>,
}

impl CallReply {
    /// Answers the call (a caller that is gone is no error).
    pub fn send(&self, answer: Result<Vec<u8>, CallError>) {
        let _ = self.to.send((self.call, answer));
    }
}

pub(crate) enum Message {
    Event(Arc<EventMsg>),
    Call {
        function: String,
        payload: Vec<u8>,
        reply: CallReply,
        queued_at: Instant,
    },
    /// Stop the running instance after everything queued before this; what
    /// is queued after it waits for the next instance (on a reload).
    Stop(UnloadKind),
}

/// What the running instance's thread hands back when joined.
pub(crate) struct Running {
    pub thread: JoinHandle<Option<libloading::os::unix::Library>>,
    /// Receives once when the thread is about to return.
    pub done: Receiver<()>,
    /// The unique copy of the library this instance runs.
    pub image: PathBuf,
}

/// Mutable facts about a slot, read by `modules` and `list_modules`.
#[derive(Debug, Clone)]
pub(crate) struct SlotStatus {
    pub state: ModuleState,
    pub build_hash: String,
    pub loaded_at_unix_ms: u64,
    pub load_index: u32,
}

pub(crate) struct ModuleSlot {
    pub name: String,
    pub dir: PathBuf,
    pub lua_only: bool,
    /// The module's meta.json as of its latest load or reload.
    pub meta: Mutex<ModuleMeta>,
    pub queue_tx: Sender<Message>,
    pub queue_rx: Receiver<Message>,
    /// Names this module's current instance receives (delivery filter).
    pub subs: RwLock<HashSet<String>>,
    pub status: Mutex<SlotStatus>,
    pub running: Mutex<Option<Running>>,
    pub activity: Activity,
    pub clock: QueueClock,
}

impl ModuleSlot {
    pub fn new(name: &str, dir: PathBuf, meta: ModuleMeta) -> Self {
        let (queue_tx, queue_rx) = crossbeam_channel::unbounded();
        Self {
            name: name.to_string(),
            dir,
            lua_only: meta.disable_rust,
            meta: Mutex::new(meta),
            queue_tx,
            queue_rx,
            subs: RwLock::new(HashSet::new()),
            status: Mutex::new(SlotStatus {
                state: ModuleState::Loading,
                build_hash: String::new(),
                loaded_at_unix_ms: 0,
                load_index: 0,
            }),
            running: Mutex::new(None),
            activity: Activity::default(),
            clock: QueueClock::default(),
        }
    }

    pub fn state(&self) -> ModuleState {
        lock(&self.status).state.clone()
    }

    pub fn set_state(&self, state: ModuleState) {
        lock(&self.status).state = state;
    }

    pub fn is_subscribed(&self, name: &str) -> bool {
        self.subs
            .read()
            .map(|subs| subs.contains(name))
            .unwrap_or(false)
    }

    /// Answers every queued call with `error` and drops queued events.
    pub fn drain_queue(&self, error: &CallError) {
        while let Ok(message) = self.queue_rx.try_recv() {
            if let Message::Call { reply, .. } = message {
                reply.send(Err(error.clone()));
            }
        }
    }
}

/// Counts behind [`QueueTimes`], kept with atomics by the module's thread
/// and read by anyone.
#[derive(Default)]
pub(crate) struct QueueClock {
    wait_buckets: [AtomicU64; QUEUE_WAIT_BOUNDS_S.len() + 1],
    wait_micros: AtomicU64,
    handled: AtomicU64,
    busy_micros: AtomicU64,
}

impl QueueClock {
    /// One message that waited `wait` and was handled in `busy`.
    pub fn record(&self, wait: Duration, busy: Duration) {
        let seconds = wait.as_secs_f64();
        let bucket = QUEUE_WAIT_BOUNDS_S
            .iter()
            .position(|bound| seconds <= *bound)
            .unwrap_or(QUEUE_WAIT_BOUNDS_S.len());
        self.wait_buckets[bucket].fetch_add(1, Ordering::Relaxed);
        let micros = |d: Duration| u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        self.wait_micros.fetch_add(micros(wait), Ordering::Relaxed);
        self.handled.fetch_add(1, Ordering::Relaxed);
        self.busy_micros.fetch_add(micros(busy), Ordering::Relaxed);
    }

    pub fn times(&self) -> QueueTimes {
        QueueTimes {
            wait_buckets: self
                .wait_buckets
                .iter()
                .map(|b| b.load(Ordering::Relaxed))
                .collect(),
            wait_seconds: self.wait_micros.load(Ordering::Relaxed) as f64 / 1e6,
            handled: self.handled.load(Ordering::Relaxed),
            busy_seconds: self.busy_micros.load(Ordering::Relaxed) as f64 / 1e6,
        }
    }
}

/// What a module's thread is doing, for the watchdog.
#[derive(Default)]
pub(crate) struct Activity {
    /// Milliseconds since the epoch when the current handler started; 0 when idle.
    busy_since_ms: AtomicU64,
    /// Set while the module waits in a host call (not its own code).
    waiting: AtomicU64,
    /// Set once the watchdog has reported the current handler.
    pub reported: AtomicBool,
    what: Mutex<String>,
}

impl Activity {
    pub fn enter(&self, what: &str) {
        {
            let mut current = lock(&self.what);
            current.clear();
            current.push_str(what);
        }
        self.busy_since_ms.store(now_ms(), Ordering::Release);
    }

    pub fn leave(&self) {
        self.busy_since_ms.store(0, Ordering::Release);
    }

    pub fn begin_wait(&self) {
        self.waiting.fetch_add(1, Ordering::AcqRel);
    }

    pub fn end_wait(&self) {
        self.waiting.fetch_sub(1, Ordering::AcqRel);
    }

    /// `(handler description, milliseconds in it)` when the module is busy in
    /// its own code (not waiting on the host).
    pub fn get_busy(&self) -> Option<(String, u64)> {
        let since = self.busy_since_ms.load(Ordering::Acquire);
        if since == 0 || self.waiting.load(Ordering::Acquire) > 0 {
            return None;
        }
        Some((lock(&self.what).clone(), now_ms().saturating_sub(since)))
    }
}

pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(1)
}

/// Locks a mutex, recovering the data if a panicking thread poisoned it (host
/// code does not panic while holding these locks; module panics are caught
/// before they reach them).
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}
