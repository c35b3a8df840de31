//! One connected peer: a tokio task that reads frames, turns packets into
//! `network:packet_received/<name>` events (within the peer's input budget:
//! a token bucket charged for every frame, definitions included; when it is
//! empty the socket is not read, so TCP pushes back on that sender alone),
//! and writes queued packets in batches (with many peers connected, held
//! until the peer's own slot in every `network.write_delay_ms`, so a tick's
//! leave together and the peers' writes do not all come at once).
//!
//! Owns: a peer's socket, its packet reader (half-read input and the
//! client's packet-type table, bounded in count), its packet-type table for
//! sending and its unsent output. Invariants: bad input (framing or
//! definition errors, too many definitions, an incomplete packet held open
//! or arriving slower than the minimum rate, nothing said within the
//! handshake timeout, an outgoing queue over the limit) ends only this
//! peer, with a logged reason; a park request hands everything back intact
//! (for a reload) after applying every command queued before it.
//! Does not own: accepting connections or the peer table (`lib.rs`).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use buildat_format::Packet;
use buildat_format::{PacketReader, ReadItem, SenderPacketTypes};
use buildat_interface::{SharedBytes, encode, log};
use buildat_network_api::{
    self as network, ClientDisconnected, DisconnectPacket, PacketReceived, PeerId,
};
use serde::{Deserialize, Serialize};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot};

use crate::outgoing::Outgoing;
use crate::tls::{self, Opened, Session};
use crate::{Counters, Settings, Shared};

/// Encoded bytes gathered from queued sends before writing them.
const WRITE_BATCH: usize = 1 << 20;
/// Output this big is written at once, whatever `network.write_delay_ms`
/// says: the delay saves a write per small packet, not for bulk data.
const WRITE_AT_ONCE: usize = 16 * 1024;

/// A packet's payload as queued for a peer.
pub(crate) enum Payload {
    /// Encoded whole (one buffer for every peer of a broadcast).
    Whole(Arc<Vec<u8>>),
    /// A head, then a body shared by reference: copied once, when framed.
    Parts {
        head: Vec<u8>,
        body: Option<SharedBytes>,
    },
}

impl Payload {
    pub fn len(&self) -> usize {
        match self {
            Self::Whole(data) => data.len(),
            Self::Parts { head, body } => head.len() + body.as_ref().map_or(0, |b| b.len()),
        }
    }
}

/// Packets to one peer handed over as one command, in order: every name
/// and payload back to back in one buffer, so a tick's packets to a peer
/// cost its task one wake-up and the module two allocations, not two per
/// packet.
#[derive(Default)]
pub(crate) struct Batch {
    bytes: Vec<u8>,
    /// Each packet's (name length, payload length), in order.
    lengths: Vec<(usize, usize)>,
    /// What the packets add to the peer's backlog ([`Backlog::cost`]).
    cost: usize,
}

impl Batch {
    pub fn push(&mut self, name: &str, data: &[u8]) {
        self.bytes.reserve(name.len() + data.len());
        self.bytes.extend_from_slice(name.as_bytes());
        self.bytes.extend_from_slice(data);
        self.lengths.push((name.len(), data.len()));
        self.cost += Backlog::cost(data.len());
    }

    /// Adds `other`'s packets after these.
    pub fn append(&mut self, other: &Batch) {
        self.bytes.extend_from_slice(&other.bytes);
        self.lengths.extend_from_slice(&other.lengths);
        self.cost += other.cost;
    }

    pub fn is_empty(&self) -> bool {
        self.lengths.is_empty()
    }

    pub fn cost(&self) -> usize {
        self.cost
    }

    /// The packets as (name, payload), in order.
    pub fn packets(&self) -> impl Iterator<Item = (&str, &[u8])> {
        let mut rest = self.bytes.as_slice();
        self.lengths.iter().map(move |&(name_len, data_len)| {
            let (name, after) = rest.split_at(name_len.min(rest.len()));
            let (data, after) = after.split_at(data_len.min(after.len()));
            rest = after;
            // Pushed from a `&str`: always valid.
            (std::str::from_utf8(name).unwrap_or_default(), data)
        })
    }
}

/// What the module thread asks of a peer task.
pub(crate) enum Command {
    Send {
        name: Arc<str>,
        data: Payload,
    },
    /// Several packets, in order (see [`Batch`]).
    Batch(Batch),
    Disconnect(String),
    /// Stop and hand back the socket and state (for a reload).
    Park(oneshot::Sender<Parked>),
}

impl Command {
    /// What the command adds to the peer's backlog until its task takes it.
    pub fn cost(&self) -> usize {
        match self {
            Self::Send { data, .. } => Backlog::cost(data.len()),
            Self::Batch(batch) => batch.cost(),
            Self::Disconnect(_) | Self::Park(_) => 0,
        }
    }
}

/// Everything about a peer but its socket; crosses a reload in tmp data.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct PeerState {
    pub id: PeerId,
    pub address: String,
    pub reader: PacketReader,
    pub types: SenderPacketTypes,
    /// Encoded frames not yet written to the socket.
    pub outgoing: Vec<u8>,
    /// Has sent a whole packet: the handshake timeout no longer applies.
    pub heard: bool,
    /// The TLS session's record layer, on a TLS port (`tls.rs`); its
    /// keys cross a reload with the rest.
    pub tls: Option<Session>,
}

impl PeerState {
    pub fn new(id: PeerId, address: String, settings: &Settings) -> Self {
        Self {
            id,
            address,
            reader: PacketReader::with_limits(
                settings.max_frame_size,
                settings.max_name_len,
                settings.max_packet_types,
            ),
            types: SenderPacketTypes::with_max_name_len(settings.max_name_len),
            outgoing: Vec::new(),
            heard: false,
            tls: None,
        }
    }

    /// Received bytes not yet a whole packet (or a whole TLS record).
    pub fn buffered_len(&self) -> usize {
        self.reader.buffered_len() + self.tls.as_ref().map_or(0, Session::buffered_len)
    }

    /// Bytes to write: frames not yet sealed or written (`out`, the
    /// running task's queue), plus sealed records not yet written.
    pub fn unsent(&self, out: &Outgoing) -> usize {
        out.len() + self.tls.as_ref().map_or(0, |tls| tls.unsent().len())
    }
}

/// When an incomplete packet is too slow: no new byte for `idle` since the
/// last ones (`progress`), or, once `idle` has passed since its first
/// bytes (`started`), fewer than `min_rate` bytes a second on average: a
/// frame dripped a byte every few seconds is not held open for hours.
fn partial_deadline(
    started: Instant,
    progress: Instant,
    buffered: usize,
    idle: Duration,
    min_rate: u32,
) -> Instant {
    let idle_deadline = progress + idle;
    if min_rate == 0 {
        return idle_deadline;
    }
    let earned = Duration::from_secs_f64(buffered as f64 / f64::from(min_rate));
    idle_deadline.min(started + idle + earned)
}

/// Bytes waiting to reach a peer: sends not yet taken by its task, plus
/// encoded bytes the socket has not taken. Read by `send`'s answer so
/// senders of bulk data (file transfers) can pace themselves.
#[derive(Default)]
pub(crate) struct Backlog {
    /// Added by the module thread per send, removed by the task as it takes it.
    in_channel: AtomicUsize,
    /// Stored by the task after each write.
    unsent: AtomicUsize,
}

impl Backlog {
    /// Bytes a send of `data_len` bytes adds (frame header included).
    pub fn cost(data_len: usize) -> usize {
        data_len + buildat_format::packet::FRAME_HEADER_LEN
    }

    /// A command costing `cost` ([`Command::cost`]) was handed to the task.
    pub fn add(&self, cost: usize) {
        self.in_channel.fetch_add(cost, Ordering::AcqRel);
    }

    /// The task took a command costing `cost` off its channel.
    fn take(&self, cost: usize) {
        let _ = self
            .in_channel
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |v| {
                Some(v.saturating_sub(cost))
            });
    }

    pub fn total(&self) -> usize {
        self.in_channel.load(Ordering::Acquire) + self.unsent.load(Ordering::Acquire)
    }
}

/// A token bucket of packets: `rate` a second, at most `burst` saved up;
/// and a pause (while the modules are behind) that holds every token.
pub(crate) struct InputBudget {
    rate: f64,
    burst: f64,
    tokens: f64,
    refilled: Instant,
    held_until: Option<Instant>,
}

/// How long a peer waits before looking again whether the modules caught up.
const BEHIND_PAUSE: Duration = Duration::from_millis(10);

impl InputBudget {
    pub fn new(rate: u32, burst: u32) -> Self {
        let burst = f64::from(burst.max(1));
        Self {
            rate: f64::from(rate),
            burst,
            tokens: burst,
            refilled: Instant::now(),
            held_until: None,
        }
    }

    /// No packet is delivered before `until`.
    pub fn hold(&mut self, until: Instant) {
        self.held_until = Some(until);
    }

    fn unlimited(&self) -> bool {
        self.rate <= 0.0
    }

    /// Applies a new rate and burst (the fair share changes as peers come
    /// and go); tokens saved up beyond the new burst are dropped.
    pub fn set_limits(&mut self, (rate, burst): (u32, u32)) {
        self.rate = f64::from(rate);
        self.burst = f64::from(burst.max(1));
        self.tokens = self.tokens.min(self.burst);
    }

    fn refill(&mut self, now: Instant) {
        let elapsed = now.saturating_duration_since(self.refilled).as_secs_f64();
        self.tokens = (self.tokens + elapsed * self.rate).min(self.burst);
        self.refilled = now;
    }

    /// Whether a packet may be delivered now.
    pub fn has_token(&mut self, now: Instant) -> bool {
        match self.held_until {
            Some(until) if now < until => return false,
            Some(_) => self.held_until = None,
            None => {}
        }
        if self.unlimited() {
            return true;
        }
        if self.tokens < 1.0 {
            self.refill(now);
        }
        self.tokens >= 1.0
    }

    /// Spends a token on a delivered packet.
    pub fn spend(&mut self) {
        if !self.unlimited() {
            self.tokens -= 1.0;
        }
    }

    /// When the next token will be there, if there is none now.
    pub fn exhausted_until(&self) -> Option<Instant> {
        if let Some(until) = self.held_until {
            return Some(until);
        }
        if self.unlimited() || self.tokens >= 1.0 {
            return None;
        }
        let wait = (1.0 - self.tokens) / self.rate;
        Some(self.refilled + Duration::from_secs_f64(wait))
    }
}

/// Bytes read from a socket at a time: what a peer past its budget can make
/// the server hold, besides one partial frame.
const READ_BYTES: usize = 4 * 1024;

/// A peer's input budget (rate, burst) when `peers` are connected: its own
/// (`per_peer`, `burst`), but never more than an equal share of `total`,
/// so a few hundred flooding peers together deliver no more than `total`
/// packets a second to the modules every player shares. Once the share is
/// what limits, bursts are of half a second of it: a few hundred peers
/// spending saved-up bursts at once would otherwise queue seconds of work
/// ahead of everyone (measured: a bystander's worst ping in the 200-peer
/// flood went from 53–65 ms with bursts of two seconds to 7–9 ms). 0
/// turns a limit off.
pub(crate) fn fair_budget(per_peer: u32, burst: u32, total: u32, peers: usize) -> (u32, u32) {
    if total == 0 || per_peer == 0 {
        return (per_peer, burst);
    }
    let peers = u32::try_from(peers.max(1)).unwrap_or(u32::MAX);
    let share = (total / peers).max(1);
    if share >= per_peer {
        return (per_peer, burst);
    }
    (share, burst.min((share / 2).max(1)))
}

/// A stopped peer, as handed back by a park request.
pub(crate) struct Parked {
    pub state: PeerState,
    pub stream: TcpStream,
}

enum Exit {
    Parked(oneshot::Sender<Parked>),
    Closed(String),
}

/// Serves the peer until it disconnects or is parked.
pub(crate) async fn serve(
    shared: Arc<Shared>,
    stream: TcpStream,
    mut state: PeerState,
    mut commands: mpsc::UnboundedReceiver<Command>,
    backlog: Arc<Backlog>,
    first: Vec<u8>,
) {
    match run(&shared, &stream, &mut state, &mut commands, &backlog, first).await {
        Exit::Parked(reply) => {
            let _ = reply.send(Parked { state, stream });
        }
        Exit::Closed(reason) => {
            shared.remove_peer(state.id);
            log::info!(
                "peer {} ({}) disconnected: {reason}",
                state.id,
                state.address
            );
            let _ = shared.host.emit(&ClientDisconnected {
                peer: state.id,
                reason,
            });
        }
    }
}

async fn run(
    shared: &Shared,
    stream: &TcpStream,
    state: &mut PeerState,
    commands: &mut mpsc::UnboundedReceiver<Command>,
    backlog: &Backlog,
    first: Vec<u8>,
) -> Exit {
    let settings = &shared.settings;
    // What is queued for the socket; `state.outgoing` only while parked.
    let out = &mut Outgoing::from_bytes(std::mem::take(&mut state.outgoing));
    // When the first and the latest bytes of a still incomplete frame arrived.
    let mut partial: Option<(Instant, Instant)> = None;
    let mut budget = InputBudget::new(settings.max_packets_per_second, settings.packet_burst);
    let handshake_deadline = Instant::now() + settings.handshake_timeout;
    // Records that came with the end of the TLS handshake wait in the
    // session, and bytes read before the peer started (after a PROXY
    // header, or a loopback peer's plaintext on a TLS port) in `first`:
    // taken now, not at the next read.
    if state.tls.is_some() || !first.is_empty() {
        Counters::add(&shared.counters.bytes_in, first.len() as u64);
        match take_input(state, &first) {
            Ok(None) => {}
            Ok(Some(reason)) => return Exit::Closed(reason),
            Err((goodbye, reason)) => {
                say_goodbye(&shared.counters.bytes_out, stream, state, out, &goodbye).await;
                return Exit::Closed(reason);
            }
        }
    }
    if let Err(reason) = deliver_packets(shared, state, &mut budget) {
        return refuse_input(shared, stream, state, out, reason).await;
    }
    partial = track_partial(partial, state, false);
    // When output held back is due to be written (`network.write_delay_ms`:
    // with many peers connected, output waits that long from its first
    // packet, so a tick's packets from several modules leave in one write,
    // not one each); `None` while nothing is held.
    let mut write_at: Option<Instant> = None;
    loop {
        if write_at.is_some_and(|at| at <= Instant::now()) || out.len() >= WRITE_AT_ONCE {
            write_at = None;
        }
        if write_at.is_none()
            && let Err(reason) = flush(&shared.counters.bytes_out, stream, state, out)
        {
            return Exit::Closed(reason);
        }
        let queued = state.unsent(out);
        backlog.unsent.store(queued, Ordering::Release);
        if queued > settings.max_queue_bytes {
            return Exit::Closed(format!(
                "not reading: {queued} bytes queued for it (limit {})",
                settings.max_queue_bytes
            ));
        }
        let want_write = queued > 0 && write_at.is_none();
        // Out of budget: whole packets wait in the reader and the socket is
        // not read; the idle timeout (for incomplete packets) is off meanwhile.
        let throttled_until = budget.exhausted_until();
        let deadline = partial
            .filter(|_| throttled_until.is_none())
            .map(|(started, progress)| {
                partial_deadline(
                    started,
                    progress,
                    state.buffered_len(),
                    settings.idle_timeout,
                    settings.min_bytes_per_second,
                )
            });
        let handshake = (!state.heard).then_some(handshake_deadline);
        let far = Instant::now() + Duration::from_secs(86_400);
        tokio::select! {
            biased;
            command = commands.recv() => {
                let Some(mut command) = command else {
                    return Exit::Closed("the network module is stopping".into());
                };
                if state.unsent(out) == 0 {
                    let peers = shared.peer_count.load(Ordering::Relaxed);
                    let now = Instant::now();
                    write_at = write_hold(
                        settings.write_delay,
                        settings.write_delay_peers,
                        peers,
                        state.id,
                        now.saturating_duration_since(shared.epoch),
                    )
                    .map(|hold| now + hold);
                }
                loop {
                    let cost = command.cost();
                    match command {
                        Command::Send { name, data } => {
                            let queued = match data {
                                Payload::Whole(data) => out.push_packet(&mut state.types, &name, &data, None),
                                Payload::Parts { head, body } => out.push_packet(&mut state.types, &name, &head, body),
                            };
                            count_queued(shared, state.id, &name, queued);
                            backlog.unsent.store(state.unsent(out), Ordering::Release);
                            backlog.take(cost);
                        }
                        Command::Batch(batch) => {
                            for (name, data) in batch.packets() {
                                let queued = out.push_packet(&mut state.types, name, data, None);
                                count_queued(shared, state.id, name, queued);
                            }
                            backlog.unsent.store(state.unsent(out), Ordering::Release);
                            backlog.take(cost);
                        }
                        Command::Disconnect(reason) => {
                            say_goodbye(&shared.counters.bytes_out, stream, state, out, &reason).await;
                            return Exit::Closed(reason);
                        }
                        Command::Park(reply) => {
                            state.outgoing = out.take_bytes();
                            return Exit::Parked(reply);
                        }
                    }
                    // Batch what is already queued into one write, but go
                    // write once a batch is big: a sender that keeps the
                    // channel full must not grow the buffer unseen.
                    if out.len() >= WRITE_BATCH {
                        break;
                    }
                    match commands.try_recv() {
                        Ok(next) => command = next,
                        Err(_) => break,
                    }
                }
            }
            // Bytes are read only while nothing whole waits: a peer past its
            // budget keeps its flood in its own socket (TCP pushes back on
            // it), not in the server's memory.
            ready = stream.readable(), if throttled_until.is_none() && !state.reader.has_whole_frame() => {
                if let Err(error) = ready {
                    return Exit::Closed(format!("read error: {error}"));
                }
                let mut buffer = [0u8; READ_BYTES];
                match stream.try_read(&mut buffer) {
                    Ok(0) => return Exit::Closed("connection closed by the client".into()),
                    Ok(read) => {
                        Counters::add(&shared.counters.bytes_in, read as u64);
                        let input = buffer.get(..read).unwrap_or_default();
                        let closing = match take_input(state, input) {
                            Ok(closing) => closing,
                            Err((goodbye, reason)) => {
                                say_goodbye(&shared.counters.bytes_out, stream, state, out, &goodbye).await;
                                return Exit::Closed(reason);
                            }
                        };
                        let delivered = match deliver_packets(shared, state, &mut budget) {
                            Ok(delivered) => delivered,
                            Err(reason) => return refuse_input(shared, stream, state, out, reason).await,
                        };
                        if let Some(reason) = closing {
                            return Exit::Closed(reason);
                        }
                        partial = track_partial(partial, state, delivered > 0);
                    }
                    Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {}
                    Err(error) => return Exit::Closed(format!("read error: {error}")),
                }
            }
            ready = stream.writable(), if want_write => {
                if let Err(error) = ready {
                    return Exit::Closed(format!("write error: {error}"));
                }
            }
            _ = tokio::time::sleep_until(write_at.unwrap_or(far).into()), if write_at.is_some() => {}
            _ = tokio::time::sleep_until(throttled_until.unwrap_or(far).into()), if throttled_until.is_some() => {
                if let Err(reason) = deliver_packets(shared, state, &mut budget) {
                    return refuse_input(shared, stream, state, out, reason).await;
                }
                // The wait was ours, not the peer's: its frame starts afresh.
                partial = track_partial(None, state, true);
            }
            _ = tokio::time::sleep_until(deadline.unwrap_or(far).into()), if deadline.is_some() => {
                let (started, progress) = partial.unwrap_or((Instant::now(), Instant::now()));
                return Exit::Closed(if progress + settings.idle_timeout <= Instant::now() {
                    format!(
                        "an incomplete packet was held open for {} s",
                        settings.idle_timeout.as_secs_f64()
                    )
                } else {
                    format!(
                        "an incomplete packet arrived slower than {} bytes a second ({} bytes in {:.1} s)",
                        settings.min_bytes_per_second,
                        state.buffered_len(),
                        started.elapsed().as_secs_f64()
                    )
                });
            }
            _ = tokio::time::sleep_until(handshake.unwrap_or(far).into()), if handshake.is_some() => {
                return Exit::Closed(format!(
                    "sent no whole packet within {} s of connecting",
                    settings.handshake_timeout.as_secs_f64()
                ));
            }
        }
    }
}

/// How long output that starts `since_epoch` after the network's epoch is
/// held with `peers` connected: not at all below
/// `network.write_delay_peers` (with few peers the writes cost little and a
/// pong leaves at once), else until the peer's next write slot. Slots come
/// every `network.write_delay_ms`, each peer's at its own phase (spread by
/// its id), so a tick's output, which reaches every peer at once, leaves as
/// a stream of writes over the delay rather than as one burst of a thousand
/// writes when a common hold ends. Output held less than the delay still
/// leaves in one write per slot, as much as a full hold gathers.
fn write_hold(
    delay: Duration,
    from_peers: usize,
    peers: usize,
    peer: PeerId,
    since_epoch: Duration,
) -> Option<Duration> {
    let period = delay.as_nanos();
    if peers < from_peers || period == 0 {
        return None;
    }
    // Fibonacci hashing: consecutive ids land far apart in the period.
    let spread = u128::from(peer.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let phase = (spread * period) >> 64;
    let wait = (phase + period - since_epoch.as_nanos() % period) % period;
    Some(Duration::from_nanos(
        u64::try_from(wait).unwrap_or(u64::MAX),
    ))
}

/// Counts a packet queued for the socket, or logs why it could not be.
fn count_queued(
    shared: &Shared,
    peer: PeerId,
    name: &str,
    queued: Result<(), buildat_format::PacketTypeError>,
) {
    match queued {
        Ok(()) => Counters::add(&shared.counters.packets_out, 1),
        Err(error) => log::warn!("peer {peer}: cannot send packet {name}: {error}"),
    }
}

/// The incomplete frame's (first bytes, latest bytes) after a read:
/// `restart` when whole frames were taken off (what is left is a new frame).
fn track_partial(
    partial: Option<(Instant, Instant)>,
    state: &PeerState,
    restart: bool,
) -> Option<(Instant, Instant)> {
    if state.buffered_len() == 0 {
        return None;
    }
    let now = Instant::now();
    match partial {
        Some((started, _)) if !restart => Some((started, now)),
        _ => Some((now, now)),
    }
}

/// Takes bytes read from the socket: opened first on a TLS session, and
/// on a plaintext port a TLS ClientHello is told apart from a first
/// packet. Answers why to close after delivering what came (the client
/// ended its TLS session), or what to tell the client and log when closing
/// at once.
fn take_input(state: &mut PeerState, input: &[u8]) -> Result<Option<String>, (String, String)> {
    let Some(session) = &mut state.tls else {
        if !state.heard && state.reader.buffered_len() == 0 && tls::looks_like_tls(input) {
            return Err((
                tls::SPEAKS_PLAINTEXT.to_string(),
                "sent a TLS ClientHello to a plaintext port; told so".into(),
            ));
        }
        state.reader.push(input);
        return Ok(None);
    };
    let mut plain = Vec::new();
    let opened = session.open(input, &mut plain).map_err(|e| {
        let reason = format!("TLS: {e}");
        (reason.clone(), reason)
    });
    state.reader.push(&plain);
    match opened? {
        Opened::Data => Ok(None),
        Opened::Closed(reason) => Ok(Some(reason)),
    }
}

/// Emits an event for every whole packet received so far, as long as the
/// budget lasts (the rest stays in the reader); every frame, definitions
/// included, costs a token. Answers how many frames were taken.
fn deliver_packets(
    shared: &Shared,
    state: &mut PeerState,
    budget: &mut InputBudget,
) -> Result<usize, String> {
    let now = Instant::now();
    let mut taken = 0;
    budget.set_limits(shared.fair_budget());
    loop {
        if !budget.has_token(now) {
            return Ok(taken);
        }
        if state.reader.has_whole_frame() && shared.modules_behind() {
            budget.hold(now + BEHIND_PAUSE);
            return Ok(taken);
        }
        match state.reader.next_item() {
            Ok(Some(item)) => {
                budget.spend();
                taken += 1;
                state.heard = true;
                let ReadItem::Packet(packet) = item else {
                    continue;
                };
                Counters::add(&shared.counters.packets_in, 1);
                let event = network::packet_received_event(&packet.name);
                let received = PacketReceived {
                    peer: state.id,
                    data: packet.data,
                };
                if let Ok(payload) = encode(&received) {
                    let _ = shared.host.emit_event(&event, &payload);
                }
            }
            Ok(None) => return Ok(taken),
            Err(error) => return Err(format!("protocol error: {error}")),
        }
    }
}

/// Writes what the socket takes without blocking: the queued frames
/// straight from their bytes and shared buffers (or, on TLS, sealed first).
fn flush(
    bytes_out: &AtomicU64,
    stream: &TcpStream,
    state: &mut PeerState,
    out: &mut Outgoing,
) -> Result<(), String> {
    if let Some(tls) = &mut state.tls {
        // Everything queued is sealed into records now, then out.
        if !out.is_empty() {
            let plain = out.take_bytes();
            tls.seal(&plain).map_err(|e| format!("TLS: {e}"))?;
            out.recycle(plain);
        }
        while !tls.unsent().is_empty() {
            match stream.try_write(tls.unsent()) {
                Ok(0) => return Err("the connection stopped taking data".into()),
                Ok(count) => {
                    tls.wrote(count);
                    Counters::add(bytes_out, count as u64);
                }
                Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(error) => return Err(format!("write error: {error}")),
            }
        }
        return Ok(());
    }
    while !out.is_empty() {
        match stream.try_write_vectored(&out.slices()) {
            Ok(0) => return Err("the connection stopped taking data".into()),
            Ok(count) => {
                out.advance(count);
                Counters::add(bytes_out, count as u64);
            }
            Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => break,
            Err(error) => return Err(format!("write error: {error}")),
        }
    }
    Ok(())
}

/// Ends a connection whose input broke the protocol, telling the peer why.
async fn refuse_input(
    shared: &Shared,
    stream: &TcpStream,
    state: &mut PeerState,
    out: &mut Outgoing,
    reason: String,
) -> Exit {
    say_goodbye(&shared.counters.bytes_out, stream, state, out, &reason).await;
    Exit::Closed(reason)
}

/// Queues `core:disconnect` with the reason and gives the output a second to leave.
async fn say_goodbye(
    bytes_out: &AtomicU64,
    stream: &TcpStream,
    state: &mut PeerState,
    out: &mut Outgoing,
    reason: &str,
) {
    let goodbye = DisconnectPacket {
        reason: reason.to_string(),
    };
    if let Ok(data) = goodbye.encode() {
        let _ = out.push_packet(&mut state.types, DisconnectPacket::NAME, &data, None);
    }
    if state.tls.is_some() {
        let _ = flush(bytes_out, stream, state, out);
        if let Some(tls) = &mut state.tls {
            let _ = tls.seal_close_notify();
        }
    }
    let deadline = Instant::now() + Duration::from_secs(1);
    while state.unsent(out) > 0 && Instant::now() < deadline {
        if flush(bytes_out, stream, state, out).is_err() {
            return;
        }
        let _ = tokio::time::timeout(Duration::from_millis(100), stream.writable()).await;
    }
    if state.unsent(out) == 0 {
        linger_for_the_reader(stream).await;
    }
}

/// How long a goodbye waits for the peer to close after it, and how much of
/// the peer's input it throws away meanwhile.
const GOODBYE_LINGER: Duration = Duration::from_millis(500);
const GOODBYE_DISCARD_BYTES: usize = 64 * 1024;

/// Ends our side with a FIN and reads (and drops) what the peer still sends
/// until it closes too, briefly. Closing a socket with the peer's bytes
/// unread sends a reset instead, and a reset makes the peer's kernel drop
/// what it had received but not yet read: the goodbye itself.
async fn linger_for_the_reader(stream: &TcpStream) {
    if socket2::SockRef::from(stream)
        .shutdown(std::net::Shutdown::Write)
        .is_err()
    {
        return;
    }
    let deadline = tokio::time::Instant::now() + GOODBYE_LINGER;
    let mut discarded = 0;
    let mut buffer = [0u8; 4096];
    while discarded < GOODBYE_DISCARD_BYTES {
        match tokio::time::timeout_at(deadline, stream.readable()).await {
            Ok(Ok(())) => {}
            Ok(Err(_)) | Err(_) => return,
        }
        match stream.try_read(&mut buffer) {
            Ok(0) => return,
            Ok(read) => discarded += read,
            Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(_) => return,
        }
    }
}

/// Tells a connection the server cannot take it, then closes it.
pub(crate) async fn refuse(stream: TcpStream, reason: String) {
    // Each refusal in flight holds its socket and a few KiB for up to
    // 1.5 s (the goodbye, then the linger): past `REFUSALS_IN_FLIGHT` at
    // once (a connection flood) the rest are closed unanswered, so a flood
    // costs the server a bounded amount, not a few KiB per connection.
    let Some(_slot) = RefusalSlot::take() else {
        return;
    };
    let mut state = PeerState {
        id: 0,
        address: String::new(),
        reader: PacketReader::new(0, 0),
        types: SenderPacketTypes::with_max_name_len(DisconnectPacket::NAME.len()),
        outgoing: Vec::new(),
        heard: false,
        tls: None,
    };
    let mut out = Outgoing::default();
    // A refusal's goodbye is not counted as traffic.
    let uncounted = AtomicU64::new(0);
    say_goodbye(&uncounted, &stream, &mut state, &mut out, &reason).await;
}

/// At most this many refused connections are told why at once.
const REFUSALS_IN_FLIGHT: usize = 64;

static REFUSALS: AtomicUsize = AtomicUsize::new(0);

/// One of the [`REFUSALS_IN_FLIGHT`] places, given back on drop.
struct RefusalSlot;

impl RefusalSlot {
    fn take() -> Option<Self> {
        REFUSALS
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < REFUSALS_IN_FLIGHT).then_some(n + 1)
            })
            .ok()
            .map(|_| RefusalSlot)
    }
}

impl Drop for RefusalSlot {
    fn drop(&mut self) {
        REFUSALS.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_in_flight_are_bounded_and_given_back() {
        let slots: Vec<RefusalSlot> = std::iter::from_fn(RefusalSlot::take).collect();
        assert!(slots.len() <= REFUSALS_IN_FLIGHT);
        assert!(
            RefusalSlot::take().is_none(),
            "one past the bound is refused"
        );
        drop(slots);
        assert!(
            RefusalSlot::take().is_some(),
            "dropped slots are given back"
        );
    }

    #[test]
    fn a_batch_gives_back_its_packets_in_order() {
        let mut batch = Batch::default();
        assert!(batch.is_empty());
        batch.push("main:a", b"first");
        batch.push("main:empty", b"");
        batch.push("x", &[0, 1, 2]);
        let packets: Vec<(&str, &[u8])> = batch.packets().collect();
        assert_eq!(
            packets,
            [
                ("main:a", &b"first"[..]),
                ("main:empty", &b""[..]),
                ("x", &[0, 1, 2][..])
            ]
        );
        assert_eq!(
            batch.cost(),
            Backlog::cost(5) + Backlog::cost(0) + Backlog::cost(3)
        );
        assert_eq!(Command::Batch(batch).cost(), 8 + 3 * Backlog::cost(0));
    }

    #[test]
    fn output_is_held_only_with_many_peers() {
        let delay = Duration::from_millis(10);
        let now = Duration::from_millis(1234);
        assert_eq!(
            write_hold(delay, 200, 199, 1, now),
            None,
            "few peers: at once"
        );
        assert!(write_hold(delay, 200, 200, 1, now).is_some());
        assert_eq!(
            write_hold(Duration::ZERO, 200, 5000, 1, now),
            None,
            "no delay: at once"
        );
    }

    #[test]
    fn each_peer_writes_at_its_own_phase_of_the_delay() {
        let delay = Duration::from_millis(10);
        let due = |peer: PeerId, since: Duration| {
            since + write_hold(delay, 1, 1, peer, since).expect("held")
        };
        let mut phases = Vec::new();
        for peer in 1..=1000 {
            let since = Duration::from_micros(5_000_123);
            let hold = write_hold(delay, 1, 1, peer, since).expect("held");
            assert!(hold < delay, "peer {peer} held {hold:?}");
            // Output that starts at its slot leaves at once; just after,
            // at the next slot, a period later.
            let slot = due(peer, since);
            assert_eq!(due(peer, slot), slot);
            assert_eq!(due(peer, slot + Duration::from_nanos(1)), slot + delay);
            phases.push(slot.as_nanos() % delay.as_nanos());
        }
        // A thousand peers' slots cover the period evenly: every tenth of
        // it holds between 80 and 120 of them, not one burst.
        let mut tenths = [0u32; 10];
        for phase in phases {
            tenths[(phase * 10 / delay.as_nanos()) as usize] += 1;
        }
        assert!(tenths.iter().all(|n| (80..=120).contains(n)), "{tenths:?}");
    }

    #[test]
    fn a_hold_stops_delivery_until_it_ends() {
        let mut budget = InputBudget::new(0, 10);
        let now = Instant::now();
        assert!(budget.has_token(now), "unlimited");
        let until = now + Duration::from_millis(10);
        budget.hold(until);
        assert!(!budget.has_token(now));
        assert_eq!(budget.exhausted_until(), Some(until));
        assert!(budget.has_token(until), "over once the hold ends");
        assert_eq!(budget.exhausted_until(), None);
    }

    #[test]
    fn the_budget_allows_its_burst_then_its_rate() {
        let mut budget = InputBudget::new(100, 10);
        let start = budget.refilled;
        for _ in 0..10 {
            assert!(budget.has_token(start));
            budget.spend();
        }
        assert!(!budget.has_token(start));
        let until = budget.exhausted_until().expect("exhausted");
        assert!(until > start && until <= start + Duration::from_millis(11));
        // 50 ms later: 5 packets' worth, never more than the burst.
        assert!(budget.has_token(start + Duration::from_millis(50)));
        let mut delivered = 0;
        while budget.has_token(start + Duration::from_millis(50)) {
            budget.spend();
            delivered += 1;
        }
        assert_eq!(delivered, 5);
        assert!(budget.has_token(start + Duration::from_secs(60)));
        assert!(budget.tokens <= 10.0);
    }

    #[test]
    fn a_dripped_frame_is_dropped_soon_after_the_idle_timeout() {
        let start = Instant::now();
        let idle = Duration::from_secs(10);
        // A byte every 5 s: never idle for 10 s, but 20 bytes in 100 s.
        let drip = partial_deadline(start, start + Duration::from_secs(100), 20, idle, 4096);
        assert!(
            drip < start + idle + Duration::from_secs(1),
            "{:?}",
            drip - start
        );
        // 1 MiB in 50 s keeps up with 4 KiB a second: the idle rule decides.
        let now = start + Duration::from_secs(50);
        assert_eq!(
            partial_deadline(start, now, 1 << 20, idle, 4096),
            now + idle
        );
        // No minimum rate: only the idle timeout.
        assert_eq!(partial_deadline(start, now, 20, idle, 0), now + idle);
    }

    #[test]
    fn many_peers_share_the_total() {
        assert_eq!(fair_budget(2000, 4000, 50_000, 1), (2000, 4000));
        assert_eq!(
            fair_budget(2000, 4000, 50_000, 25),
            (2000, 4000),
            "room for all"
        );
        assert_eq!(fair_budget(2000, 4000, 50_000, 500), (100, 50));
        assert_eq!(fair_budget(2000, 4000, 50_000, 1_000_000), (1, 1));
        assert_eq!(fair_budget(2000, 4000, 0, 500), (2000, 4000), "no total");
        assert_eq!(fair_budget(0, 0, 50_000, 500), (0, 0), "no budget at all");
        let mut budget = InputBudget::new(2000, 4000);
        budget.set_limits(fair_budget(2000, 4000, 50_000, 500));
        let now = budget.refilled;
        let mut delivered = 0;
        while budget.has_token(now) {
            budget.spend();
            delivered += 1;
        }
        assert_eq!(delivered, 50, "the saved-up burst shrinks with the share");
    }

    #[test]
    fn a_zero_rate_is_unlimited() {
        let now = Instant::now();
        let mut budget = InputBudget::new(0, 0);
        for _ in 0..100_000 {
            assert!(budget.has_token(now));
            budget.spend();
        }
        assert_eq!(budget.exhausted_until(), None);
    }
}
