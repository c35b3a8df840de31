//! One module's place in the host: its queue, subscriptions, state, running
//! thread, activity (for the watchdog) and declared settings.
//!
//! Owns: [`ModuleSlot`] and the [`Message`]s queued to a module. The queue
//! belongs to the slot, not to a loaded instance, so events sent while a
//! module reloads wait in it and reach the next instance in order. The
//! queue is bounded in bytes ([`MAX_QUEUE_BYTES`]): a message that would
//! take it past the bound waits for room a little ([`FULL_QUEUE_WAIT`]),
//! then is refused with [`QueueFull`], which its sender is told (an
//! emitter gets an error status, a caller a `CallError`) and the server
//! logs with the module's name. What is queued is never dropped or
//! reordered. Does not own: what runs on the thread (`instance.rs`).

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use buildat_interface::core_api::{ModuleState, QUEUE_WAIT_BOUNDS_S, QueueTimes};
use buildat_interface::meta::ModuleMeta;
use buildat_interface::settings::SettingInfo;
use buildat_interface::{CallError, UnloadKind};
use crossbeam_channel::{Receiver, Sender};

/// Bytes a module's queue may hold (names and payloads, plus
/// [`MESSAGE_OVERHEAD`] each): a flood of events to a module that
/// cannot keep up costs the server this much at most, not all its memory.
pub(crate) const MAX_QUEUE_BYTES: u64 = 64 << 20;
/// What one queued message is counted as besides its name and payload
/// (the message itself, the channel's slot, the event's `Arc`).
const MESSAGE_OVERHEAD: u64 = 128;
/// How long a module's emit or call waits for room in a full queue before
/// it is refused: long enough to ride out a burst, short enough that a
/// stuck module does not stall the others for long.
pub(crate) const FULL_QUEUE_WAIT: Duration = Duration::from_millis(500);

/// A message refused because the module's queue stayed full.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "module {module}'s queue is full ({queued} bytes waiting, at most {bound}): {what} refused"
)]
pub(crate) struct QueueFull {
    pub module: String,
    pub queued: u64,
    pub bound: u64,
    /// `event 'NAME'` or `call 'NAME'`.
    pub what: String,
}

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

impl EventMsg {
    fn bytes(&self) -> u64 {
        (self.name.len() + self.payload.len()) as u64 + MESSAGE_OVERHEAD
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

impl Message {
    /// What the message counts for against [`MAX_QUEUE_BYTES`].
    fn bytes(&self) -> u64 {
        match self {
            Self::Event(event) => event.bytes(),
            Self::Call {
                function, payload, ..
            } => (function.len() + payload.len()) as u64 + MESSAGE_OVERHEAD,
            Self::Stop(_) => 0,
        }
    }

    fn describe(&self) -> String {
        match self {
            Self::Event(event) => format!("event '{}'", event.name),
            Self::Call { function, .. } => format!("call '{function}'"),
            Self::Stop(_) => "stop".into(),
        }
    }
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
    queue_tx: Sender<Message>,
    queue_rx: Receiver<Message>,
    /// Bytes queued now ([`Message::bytes`]), and the bound.
    queued_bytes: AtomicU64,
    max_queue_bytes: u64,
    /// Messages refused since the last warning, and when it was logged.
    refused: AtomicU64,
    refusal_logged_ms: AtomicU64,
    /// Names this module's current instance receives (delivery filter).
    pub subs: RwLock<HashSet<String>>,
    pub status: Mutex<SlotStatus>,
    pub running: Mutex<Option<Running>>,
    pub activity: Activity,
    pub clock: QueueClock,
    /// The settings the module declared (`declare_settings`), by
    /// namespace; they go with the slot when the module unloads.
    pub settings: Mutex<BTreeMap<String, Vec<SettingInfo>>>,
}

impl ModuleSlot {
    pub fn new(name: &str, dir: PathBuf, meta: ModuleMeta) -> Self {
        Self::with_queue_bound(name, dir, meta, MAX_QUEUE_BYTES)
    }

    /// A slot whose queue holds at most `max_queue_bytes`.
    pub fn with_queue_bound(
        name: &str,
        dir: PathBuf,
        meta: ModuleMeta,
        max_queue_bytes: u64,
    ) -> Self {
        let (queue_tx, queue_rx) = crossbeam_channel::unbounded();
        Self {
            name: name.to_string(),
            dir,
            lua_only: meta.disable_rust,
            meta: Mutex::new(meta),
            queue_tx,
            queue_rx,
            queued_bytes: AtomicU64::new(0),
            max_queue_bytes,
            refused: AtomicU64::new(0),
            refusal_logged_ms: AtomicU64::new(0),
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
            settings: Mutex::new(BTreeMap::new()),
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

    /// Queues `message` after everything queued before it. If that would
    /// take the queue past its bound, waits up to `wait` for the module to
    /// make room, then refuses it (logged with the module's name, at most
    /// once a second with the count since). A queue holding nothing takes
    /// any one message, however big. A stop is never refused.
    pub fn push(&self, mut message: Message, wait: Duration) -> Result<(), QueueFull> {
        let deadline = Instant::now() + wait;
        loop {
            match self.try_push(message) {
                Ok(()) => return Ok(()),
                Err((refused, queued)) if Instant::now() >= deadline => {
                    let full = QueueFull {
                        module: self.name.clone(),
                        queued,
                        bound: self.max_queue_bytes,
                        what: refused.describe(),
                    };
                    self.log_refusal(&full);
                    return Err(full);
                }
                // Rare (the module is far behind): polled, so the hot path
                // (`recv`) needs no lock or wake-up.
                Err((refused, _)) => {
                    message = refused;
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
        }
    }

    /// Queues `message` if it fits now; otherwise gives it back with the
    /// bytes queued, neither waiting nor logging (the bus tries every
    /// subscriber this way first, then waits only for the full ones).
    pub fn try_push(&self, message: Message) -> Result<(), (Message, u64)> {
        let size = message.bytes();
        let reserved =
            self.queued_bytes
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |queued| {
                    (queued == 0
                        || size == 0
                        || queued.saturating_add(size) <= self.max_queue_bytes)
                        .then(|| queued.saturating_add(size))
                });
        match reserved {
            Ok(_) => {
                // The receiver lives in the slot, so sending cannot fail.
                let _ = self.queue_tx.send(message);
                Ok(())
            }
            Err(queued) => Err((message, queued)),
        }
    }

    fn log_refusal(&self, full: &QueueFull) {
        let refused = self.refused.fetch_add(1, Ordering::AcqRel) + 1;
        let now = now_ms();
        let last = self.refusal_logged_ms.load(Ordering::Acquire);
        if now.saturating_sub(last) >= 1000
            && self
                .refusal_logged_ms
                .compare_exchange(last, now, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        {
            self.refused.fetch_sub(refused, Ordering::AcqRel);
            tracing::warn!("{full} ({refused} refused since the last such warning)");
        }
    }

    /// Queues a stop (never refused: it carries nothing).
    pub fn push_stop(&self, kind: UnloadKind) {
        let _ = self.push(Message::Stop(kind), Duration::ZERO);
    }

    /// The next message, waiting for one; `None` never happens while the
    /// slot lives (it holds the sender).
    pub fn recv(&self) -> Option<Message> {
        let message = self.queue_rx.recv().ok()?;
        self.queued_bytes
            .fetch_sub(message.bytes(), Ordering::AcqRel);
        Some(message)
    }

    fn try_recv(&self) -> Option<Message> {
        let message = self.queue_rx.try_recv().ok()?;
        self.queued_bytes
            .fetch_sub(message.bytes(), Ordering::AcqRel);
        Some(message)
    }

    /// Messages waiting.
    pub fn queued(&self) -> usize {
        self.queue_rx.len()
    }

    /// Bytes waiting, as counted against the bound.
    #[cfg(test)]
    pub fn queued_bytes(&self) -> u64 {
        self.queued_bytes.load(Ordering::Acquire)
    }

    /// Answers every queued call with `error` and drops queued events.
    pub fn drain_queue(&self, error: &CallError) {
        while let Some(message) = self.try_recv() {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::bus::Bus;

    fn slot(name: &str, bound: u64) -> Arc<ModuleSlot> {
        Arc::new(ModuleSlot::with_queue_bound(
            name,
            PathBuf::from(name),
            ModuleMeta::default(),
            bound,
        ))
    }

    fn event(n: u32) -> Message {
        Message::Event(Arc::new(EventMsg {
            name: "test:flood".into(),
            payload: [n.to_le_bytes().to_vec(), vec![0; 996]].concat(),
            queued_at: Instant::now(),
        }))
    }

    fn number(message: &Message) -> u32 {
        match message {
            Message::Event(event) => u32::from_le_bytes([
                event.payload[0],
                event.payload[1],
                event.payload[2],
                event.payload[3],
            ]),
            _ => u32::MAX,
        }
    }

    #[test]
    fn a_full_queue_refuses_what_is_over_its_bound_and_keeps_the_rest_in_order() {
        let slot = slot("slow", 100_000);
        let mut accepted = 0u32;
        let full = loop {
            match slot.push(event(accepted), Duration::ZERO) {
                Ok(()) => accepted += 1,
                Err(full) => break full,
            }
            assert!(accepted < 1000, "the queue never filled");
        };
        // Each is 1,000 bytes of payload, 10 of name and 128 of overhead.
        assert_eq!(accepted, 87);
        assert!(slot.queued_bytes() <= 100_000, "{}", slot.queued_bytes());
        assert_eq!(full.module, "slow");
        let text = full.to_string();
        assert!(
            text.contains("module slow's queue is full") && text.contains("event 'test:flood'"),
            "{text}"
        );
        // A call is refused alike, with the reason its caller will read.
        let (to, _from) = crossbeam_channel::unbounded();
        let call = Message::Call {
            function: "get".into(),
            payload: vec![0; 1000],
            reply: CallReply { call: 1, to },
            queued_at: Instant::now(),
        };
        let refused = slot.push(call, Duration::ZERO).expect_err("full");
        assert!(
            refused.to_string().contains("call 'get' refused"),
            "{refused}"
        );
        // A stop always gets in (an unload is never refused).
        slot.push_stop(UnloadKind::Reload);
        // A message waits for room a little: the module takes one meanwhile.
        let taker = {
            let slot = slot.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(50));
                slot.recv().map(|m| number(&m))
            })
        };
        slot.push(event(accepted), Duration::from_secs(5))
            .expect("room was made");
        assert_eq!(taker.join().expect("taker"), Some(0));
        // Everything queued arrives, in order, nothing refused among it.
        let mut seen = Vec::new();
        while let Some(message) = slot.try_recv() {
            seen.push(number(&message));
        }
        let mut expected: Vec<u32> = (1..accepted).collect();
        expected.push(u32::MAX); // the stop
        expected.push(accepted);
        assert_eq!(seen, expected);
        assert_eq!(slot.queued_bytes(), 0);
        // An empty queue takes one message bigger than its bound.
        let big = Message::Event(Arc::new(EventMsg {
            name: "test:big".into(),
            payload: vec![0; 200_000],
            queued_at: Instant::now(),
        }));
        slot.push(big, Duration::ZERO).expect("an empty queue");
    }

    #[test]
    fn an_event_reaches_the_subscribers_with_room_and_names_the_full_one() {
        let bus = Bus::default();
        let (slow, quick) = (slot("slow", 10_000), slot("quick", 10_000));
        bus.subscribe("test:flood", &slow);
        bus.subscribe("test:flood", &quick);
        let mut delivered = 0;
        let refused = loop {
            match bus.emit("test:flood", vec![0; 1000], None) {
                Ok(count) => {
                    assert_eq!(count, 2);
                    delivered += 1;
                }
                Err(refused) => break refused,
            }
            // The quick module keeps up.
            while quick.try_recv().is_some() {}
        };
        assert_eq!(delivered, 8);
        assert_eq!(refused.subscribers, 2);
        assert_eq!(refused.refused.len(), 1);
        assert_eq!(refused.refused[0].module, "slow");
        assert_eq!(quick.queued(), 1, "the quick one got the refused event");
        assert_eq!(slow.queued(), 8);
        // Emitted by the slow module itself, it does not wait for its own
        // queue (only it could empty it).
        let started = Instant::now();
        assert!(bus.emit("test:flood", vec![0; 1000], Some(&*slow)).is_err());
        assert!(started.elapsed() < FULL_QUEUE_WAIT);
    }
}
