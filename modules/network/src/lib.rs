//! `network`: the TCP packet service every player talks through.
//!
//! Owns: the listening socket, the peer table (ids never reused within a
//! server run), one tokio task per peer (`peer.rs`), the events
//! `network:client_connected`, `network:client_disconnected` and
//! `network:packet_received/<name>`, the fire-and-forget event
//! `network:send_batches`, and the calls `send`, `broadcast`,
//! `send_batch`, `send_shared` (bodies framed from shared buffers, not
//! copied into the call), `list_peers`, `disconnect`, `get_backlog`, `listen_address`,
//! `get_stats` (traffic counters, carried across a reload), TLS on the game
//! port (`tls.rs`: a connection becomes a peer once its TLS session is up).
//! On `reload network` the
//! listener and every peer's socket, half-read input, unsent output,
//! packet-type tables and TLS session (keys and sequence numbers) are
//! handed to the next version as raw fds plus state in tmp data, so clients
//! see no disconnect and nothing lost (a connection still in its TLS
//! handshake is closed: it was no peer yet, and its client may retry).
//! It binds at its start but accepts from `core:started` on (a player who
//! comes while the server starts, or builds its modules, waits in the
//! listen backlog): every module that greets a connecting player is loaded
//! by then.
//! Does not own: the framing codec (`buildat-format`) or what packets mean.
//!
//! TLS settings: `network.tls` (`auto`, the default: TLS unless the port is
//! on a loopback address; `on`; `off`), `network.tls_cert` and
//! `network.tls_key` (PEM files, relative to the world folder; by default
//! `<world>/tls/cert.pem` and `key.pem`, made self-signed on the first
//! start). The key's fingerprint, which clients pin, is logged at start.
//! On a TLS port a loopback peer that speaks plaintext is served
//! plaintext; any other is told the port speaks TLS and closed.
//!
//! Forwarders: `network.proxy_protocol` (default false): every connection
//! starts with a PROXY protocol v2 header, whose address is the peer's for
//! everything (`forwarded.rs`); one without it is closed, logged. Off, no
//! header is looked for or trusted.
//!
//! Settings: [`NetworkSettings`] declares every `network.*` key with its
//! type, default and help (`buildat-server settings` lists them). A
//! flooding peer slows only itself: past its packet budget its socket is
//! not read until the budget refills (packet-type definitions count
//! against it like packets), and each peer's budget is at most an equal
//! share of `network.max_packets_per_second_total`, so a few hundred
//! flooding peers cannot bury the game's thread. With at least
//! `network.write_delay_peers` connected, a tick's packets from several
//! modules leave in one write (output of 16 KiB or more is written at
//! once). A LAN party behind one address raises
//! `network.max_connections_per_ip` (one address's 64 players cost 15-20
//! MiB). Peers are also capped below the descriptor limit
//! (`admission.rs`), so "server full" comes long before `EMFILE`.

mod admission;
mod forwarded;
mod outgoing;
mod peer;
mod tls;

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::os::fd::{FromRawFd, IntoRawFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use admission::Admission;
use buildat_interface::core_api::{ListModules, ModuleState};
use buildat_interface::log_limit::{LogLimiter, suppressed_note};
use buildat_interface::settings::Settings as _;
use buildat_interface::{
    Event, Host, Module, ModuleError, Receive, Stash, UnloadKind, config, events, export_module,
    log,
};
use buildat_network_api::{
    self as network, Broadcast, ClientConnected, ClientDisconnected, Disconnect, GetBacklog,
    GetStats, ListPeers, ListenAddress, NetworkStats, PacketView, PeerId, PeerInfo, SendBatch,
    SendPacket, SendShared,
};
use peer::{Backlog, Batch, Command, Parked, Payload, PeerState};
use serde::{Deserialize, Serialize};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::{mpsc, oneshot};

const STOP_WAIT: Duration = Duration::from_secs(5);

pub(crate) struct Settings {
    pub max_frame_size: u32,
    pub max_name_len: usize,
    pub max_connections: usize,
    pub max_queue_bytes: usize,
    pub idle_timeout: Duration,
    /// Packets a peer may deliver per second (0: unlimited).
    pub max_packets_per_second: u32,
    pub packet_burst: u32,
    /// Packets all peers together may deliver per second (0: unlimited).
    pub max_packets_per_second_total: u32,
    pub max_packet_types: usize,
    /// Slowest an incomplete packet may arrive, after the idle timeout.
    pub min_bytes_per_second: u32,
    pub handshake_timeout: Duration,
    /// How long a peer's task holds small output before writing it, so
    /// what a tick's modules send it at moments apart leaves in one write
    /// (`network.write_delay_ms`; zero: at once)...
    pub write_delay: Duration,
    /// ... once at least this many peers are connected
    /// (`network.write_delay_peers`).
    pub write_delay_peers: usize,
    pub admission: admission::Limits,
    /// Reading from peers pauses while a module has more messages than
    /// this waiting (0: never).
    pub max_queued_events: u64,
    /// `network.tls`: `auto`, `on` or `off`.
    pub tls: String,
    /// `network.tls_cert` and `network.tls_key` (relative to the world).
    pub tls_cert: Option<String>,
    pub tls_key: Option<String>,
    /// `network.proxy_protocol`: every connection starts with a PROXY
    /// protocol v2 header naming the peer's address (`forwarded.rs`).
    pub proxy_protocol: bool,
}

buildat_interface::settings! {
    /// What operators set (`--set network.KEY=VALUE`); read into
    /// [`Settings`].
    pub(crate) struct NetworkSettings in "network" {
        /// Largest frame a peer may send, in bytes.
        max_frame_size: u32 = 16 << 20,
        /// Longest packet name, in bytes.
        max_name_len: usize = 256,
        /// Peers at once (lowered to fit the descriptor limit).
        max_connections: usize = 10_000,
        /// Unsent bytes a peer may have queued before it is dropped as not reading.
        max_queue_bytes: usize = 32 << 20,
        /// How long an incomplete packet may sit without progress, in ms.
        idle_timeout_ms: u64 = 10_000,
        /// Packets a second one peer may deliver (0: unlimited); past it its socket waits.
        max_packets_per_second: u32 = 2000,
        /// Packets one peer may deliver in a burst.
        packet_burst: u32 = 4000,
        /// Packets a second all peers together may deliver (0: unlimited).
        max_packets_per_second_total: u32 = 10_000,
        /// Packet-type definitions one peer may make.
        max_packet_types: usize = 512,
        /// Slowest an incomplete packet may arrive after the idle timeout, in bytes a second.
        min_bytes_per_second: u32 = 4096,
        /// A peer that sends no whole packet this long after connecting is closed, in ms.
        handshake_timeout_ms: u64 = 10_000,
        /// How long a peer's small output waits to leave in one write, in ms (0: at once).
        write_delay_ms: u64 = 10,
        /// Peers connected from which output waits `write_delay_ms`
        /// (below, the holds saved no CPU: measured at 500 players).
        write_delay_peers: usize = 800,
        /// Reading from peers pauses while a module has more messages waiting (0: never).
        max_queued_events: u64 = 10_000,
        /// TLS on the game port: auto (TLS unless on a loopback address), on or off.
        tls: String = "auto".to_string(),
        /// TLS certificate (PEM) relative to the world; unset: tls/cert.pem, made self-signed.
        tls_cert: Option<String> = None,
        /// TLS key (PEM) relative to the world; unset: tls/key.pem.
        tls_key: Option<String> = None,
        /// Every connection starts with a PROXY protocol v2 header naming the peer's address.
        proxy_protocol: bool = false,
        /// Connections one address may hold at once (0: unlimited).
        max_connections_per_ip: usize = 16,
        /// New connections a second from one address (0: unlimited).
        connects_per_ip_per_second: f64 = 10.0,
        /// New connections one address may make in a burst.
        connect_burst: f64 = 16.0,
    }
}

impl Settings {
    fn from_host(host: &Host) -> Result<Self, ModuleError> {
        Ok(Self::from(NetworkSettings::read(host)?))
    }
}

impl From<NetworkSettings> for Settings {
    fn from(set: NetworkSettings) -> Self {
        Self {
            max_frame_size: set.max_frame_size,
            max_name_len: set.max_name_len,
            max_connections: set.max_connections,
            max_queue_bytes: set.max_queue_bytes,
            idle_timeout: Duration::from_millis(set.idle_timeout_ms),
            max_packets_per_second: set.max_packets_per_second,
            packet_burst: set.packet_burst,
            max_packets_per_second_total: set.max_packets_per_second_total,
            max_packet_types: set.max_packet_types,
            min_bytes_per_second: set.min_bytes_per_second,
            handshake_timeout: Duration::from_millis(set.handshake_timeout_ms),
            write_delay: Duration::from_millis(set.write_delay_ms),
            write_delay_peers: set.write_delay_peers,
            max_queued_events: set.max_queued_events,
            tls: set.tls,
            tls_cert: set.tls_cert,
            tls_key: set.tls_key,
            proxy_protocol: set.proxy_protocol,
            admission: admission::Limits {
                per_ip: set.max_connections_per_ip,
                connects_per_second: set.connects_per_ip_per_second,
                connect_burst: set.connect_burst,
            },
        }
    }
}

/// A map by peer. Peer ids are the server's own counter, not chosen by
/// anyone outside, so there is no flood to resist: the fast hash.
type PeerMap<V> = HashMap<PeerId, V, foldhash::fast::RandomState>;

struct PeerHandle {
    address: String,
    ip: Option<IpAddr>,
    commands: mpsc::UnboundedSender<Command>,
    backlog: Arc<Backlog>,
}

/// What the module thread and the tokio tasks share.
pub(crate) struct Shared {
    pub host: Host,
    pub settings: Settings,
    peers: Mutex<PeerMap<PeerHandle>>,
    /// `peers`' length, read by every peer task for its fair share.
    pub peer_count: AtomicUsize,
    /// Where every peer's write slots are counted from (`peer::write_hold`).
    pub epoch: Instant,
    next_peer: AtomicU64,
    /// Connections and connect rates per address.
    admission: Mutex<Admission>,
    /// Most peers at once: `network.max_connections`, lowered to fit the
    /// descriptor limit.
    peer_cap: usize,
    /// Refusals and accept errors are logged a few a second, not one per
    /// connection of a flood.
    refusal_log: Mutex<LogLimiter<()>>,
    /// The modules' queues, as last looked at.
    queues: QueueWatch,
    /// Traffic counted for `get_stats`.
    pub counters: Counters,
    /// The TLS configuration when the port speaks TLS (set once it listens).
    tls: std::sync::OnceLock<Arc<rustls::ServerConfig>>,
    /// Connections in their TLS handshake (counted against the peer cap).
    handshaking: AtomicUsize,
    /// Set (under the peer table's lock) when the peers are parked or
    /// closed: a handshake finishing after that makes no new peer.
    closing: AtomicBool,
    /// Whether the accept loop takes connections: not while the server
    /// starts (`config::STARTED` is `0` until `core:started`), so a player
    /// who comes early waits in the listen backlog instead of connecting
    /// before the modules that greet players (files, bans) are loaded.
    accepting: tokio::sync::watch::Sender<bool>,
}

/// Traffic counters, bumped by the peer tasks without a lock.
#[derive(Default)]
pub(crate) struct Counters {
    pub connections: AtomicU64,
    pub packets_in: AtomicU64,
    pub bytes_in: AtomicU64,
    pub packets_out: AtomicU64,
    pub bytes_out: AtomicU64,
}

/// The tmp data name the counters cross a reload under (apart from the
/// sockets' stash, so its layout does not change).
const COUNTERS_TMP: &str = "counters";

impl Counters {
    pub fn add(counter: &AtomicU64, amount: u64) {
        counter.fetch_add(amount, Ordering::Relaxed);
    }

    fn all(&self) -> [&AtomicU64; 5] {
        [
            &self.connections,
            &self.packets_in,
            &self.bytes_in,
            &self.packets_out,
            &self.bytes_out,
        ]
    }

    fn to_bytes(&self) -> Vec<u8> {
        self.all()
            .iter()
            .flat_map(|c| c.load(Ordering::Relaxed).to_le_bytes())
            .collect()
    }

    /// Adds counts a previous version kept (ignored unless well formed).
    fn restore(&self, bytes: &[u8]) {
        if bytes.len() != 40 {
            return;
        }
        for (counter, value) in self.all().iter().zip(bytes.chunks_exact(8)) {
            let mut word = [0u8; 8];
            word.copy_from_slice(value);
            counter.fetch_add(u64::from_le_bytes(word), Ordering::Relaxed);
        }
    }
}

/// How often the modules' queues are looked at (a core call), in µs.
const QUEUE_CHECK_US: u64 = 10_000;

/// Whether some module has more messages waiting than
/// `network.max_queued_events`, as of `checked_us`. Read for every packet
/// without a lock; one peer task at a time asks the core again.
struct QueueWatch {
    since: Instant,
    /// µs after `since` of the last look; `u64::MAX` before the first.
    checked_us: AtomicU64,
    behind: AtomicBool,
    log: Mutex<LogLimiter<()>>,
}

impl QueueWatch {
    fn new() -> Self {
        Self {
            since: Instant::now(),
            checked_us: AtomicU64::new(u64::MAX),
            behind: AtomicBool::new(false),
            log: Mutex::new(LogLimiter::new(1, Duration::from_secs(10))),
        }
    }
}

impl Shared {
    fn peers(&self) -> MutexGuard<'_, PeerMap<PeerHandle>> {
        self.peers.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn admission(&self) -> MutexGuard<'_, Admission> {
        self.admission.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// This peer's input budget now (see [`peer::fair_budget`]).
    pub fn fair_budget(&self) -> (u32, u32) {
        let settings = &self.settings;
        peer::fair_budget(
            settings.max_packets_per_second,
            settings.packet_burst,
            settings.max_packets_per_second_total,
            self.peer_count.load(Ordering::Relaxed),
        )
    }

    pub fn remove_peer(&self, peer: PeerId) {
        let removed = {
            let mut peers = self.peers();
            let removed = peers.remove(&peer);
            self.peer_count.store(peers.len(), Ordering::Relaxed);
            removed
        };
        if let Some(ip) = removed.and_then(|handle| handle.ip) {
            self.admission().release(ip);
        }
    }

    /// A peer dropped outside its task (a reload it did not survive): the
    /// same disconnect event as any other, so no module keeps a ghost.
    fn peer_lost(&self, peer: PeerId, reason: String) {
        log::warn!("peer {peer} disconnected: {reason}");
        let _ = self.host.emit(&ClientDisconnected { peer, reason });
    }

    /// Whether a loaded module is behind: more messages wait in its queue than
    /// `network.max_queued_events`. Peers are then not read (TCP pushes
    /// back on every sender) until it catches up, so no flood grows the
    /// server's queues without bound. Looked at every [`QUEUE_CHECK`] at
    /// most; when the core cannot be asked, nobody is behind.
    pub fn modules_behind(&self) -> bool {
        let max = self.settings.max_queued_events;
        if max == 0 {
            return false;
        }
        let watch = &self.queues;
        let now_us = u64::try_from(watch.since.elapsed().as_micros()).unwrap_or(u64::MAX - 1);
        let checked = watch.checked_us.load(Ordering::Acquire);
        let fresh = checked != u64::MAX && now_us.saturating_sub(checked) < QUEUE_CHECK_US;
        // Fresh, or another task is asking the core right now.
        if fresh
            || watch
                .checked_us
                .compare_exchange(checked, now_us, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
        {
            return watch.behind.load(Ordering::Acquire);
        }
        let longest = self.host.call(&ListModules {}).ok().and_then(|modules| {
            // A hung or failed module is the watchdog's to report:
            // holding every player back would not help it.
            modules
                .into_iter()
                .filter(|m| m.state == ModuleState::Loaded)
                .max_by_key(|m| m.queued)
        });
        let behind = longest.as_ref().is_some_and(|m| m.queued > max);
        let was_behind = watch.behind.swap(behind, Ordering::AcqRel);
        if behind
            && !was_behind
            && let Some(module) = longest
            && let Some(suppressed) = watch
                .log
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .allow((), Instant::now())
        {
            log::warn!(
                "module {} has {} messages waiting (network.max_queued_events {max}): \
                 not reading from peers until it catches up{}",
                module.name,
                module.queued,
                suppressed_note(suppressed)
            );
        }
        behind
    }

    /// Logs a refusal or accept failure, a few a second at most.
    fn log_refusal(&self, line: &str) {
        let allowed = self
            .refusal_log
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .allow((), Instant::now());
        if let Some(suppressed) = allowed {
            log::warn!("{line}{}", suppressed_note(suppressed));
        }
    }

    /// Hands `command` to the peer's task; answers the peer's backlog in bytes.
    fn command(&self, peer: PeerId, command: Command) -> Result<u64, ModuleError> {
        Self::command_in(&self.peers(), peer, command)
    }

    /// [`Self::command`] with the peers already locked.
    fn command_in(
        peers: &PeerMap<PeerHandle>,
        peer: PeerId,
        command: Command,
    ) -> Result<u64, ModuleError> {
        let handle = peers
            .get(&peer)
            .ok_or_else(|| ModuleError::msg(format!("no peer {peer} is connected")))?;
        handle.backlog.add(command.cost());
        handle
            .commands
            .send(command)
            .map_err(|_| ModuleError::msg(format!("peer {peer} is disconnecting")))?;
        Ok(handle.backlog.total() as u64)
    }

    /// Registers a peer and starts its task (inside the runtime).
    /// `first`: bytes already read from a new peer (after a PROXY header,
    /// or a plaintext peer's start on a TLS port), taken as its first input.
    fn start_peer(
        self: &Arc<Self>,
        stream: TcpStream,
        state: PeerState,
        announce: bool,
        first: Vec<u8>,
    ) {
        let (commands, receiver) = mpsc::unbounded_channel();
        let (peer, address) = (state.id, state.address.clone());
        let ip = address.parse::<SocketAddr>().ok().map(|a| a.ip());
        if let (Some(ip), false) = (ip, announce) {
            self.admission().readmit(ip, Instant::now());
        }
        let backlog = Arc::new(Backlog::default());
        {
            let mut peers = self.peers();
            if announce && self.closing.load(Ordering::Acquire) {
                // Its handshake ended as the module stops: never announced,
                // so nobody is told it left; its socket closes here.
                log::debug!(
                    "a connection from {address} finished its TLS handshake as the network module stopped: closed"
                );
                return;
            }
            peers.insert(
                peer,
                PeerHandle {
                    address: address.clone(),
                    ip,
                    commands,
                    backlog: backlog.clone(),
                },
            );
            self.peer_count.store(peers.len(), Ordering::Relaxed);
        }
        if announce {
            log::info!("peer {peer} connected from {address}");
            let _ = self.host.emit(&ClientConnected { peer, address });
        }
        tokio::spawn(peer::serve(
            self.clone(),
            stream,
            state,
            receiver,
            backlog,
            first,
        ));
    }

    /// A new connection from `connection` (the socket's own address):
    /// refused at once when the server is full; otherwise checked against
    /// the per-address limits (by the address a forwarder's PROXY header
    /// names, with `network.proxy_protocol`), made a TLS session on a TLS
    /// port (or served plaintext, for a loopback peer speaking it), and
    /// started as a peer.
    fn admit(self: &Arc<Self>, stream: TcpStream, connection: SocketAddr) {
        let _ = stream.set_nodelay(true);
        let connected = self.peers().len() + self.handshaking.load(Ordering::Relaxed);
        let forwarded = self.settings.proxy_protocol;
        let refusal = if connected >= self.peer_cap {
            Err(format!("server full ({connected} connections)"))
        } else if forwarded {
            // Limited once the header names the peer.
            Ok(())
        } else {
            self.admission().admit(connection.ip(), Instant::now())
        };
        if let Err(reason) = refusal {
            self.log_refusal(&format!("refused connection from {connection}: {reason}"));
            tokio::spawn(peer::refuse(stream, reason));
            return;
        }
        let tls = self.tls.get().cloned();
        if tls.is_none() && !forwarded {
            self.start_new_peer(stream, connection, None, Vec::new());
            return;
        }
        // The peer exists for the modules once its header is read and its
        // TLS session is up.
        self.handshaking.fetch_add(1, Ordering::Relaxed);
        let shared = self.clone();
        tokio::spawn(async move {
            let opened = shared.open(&stream, connection, tls).await;
            shared.handshaking.fetch_sub(1, Ordering::Relaxed);
            match opened {
                Ok((address, session, first)) => {
                    shared.start_new_peer(stream, address, session, first);
                }
                Err(Unopened { admitted, goodbye }) => {
                    if let Some(ip) = admitted {
                        shared.admission().release(ip);
                    }
                    if let Some(goodbye) = goodbye {
                        peer::refuse(stream, goodbye).await;
                    }
                }
            }
        });
    }

    /// Reads a forwarder's PROXY header (with `network.proxy_protocol`),
    /// admits the address it names, and runs the TLS handshake (on a TLS
    /// port): the peer's address, its TLS session (`None`: plaintext) and
    /// the bytes already read of what it said. Refusals are logged here.
    async fn open(
        &self,
        stream: &TcpStream,
        connection: SocketAddr,
        tls: Option<Arc<rustls::ServerConfig>>,
    ) -> Result<(SocketAddr, Option<tls::Session>, Vec<u8>), Unopened> {
        let deadline = Instant::now() + self.settings.handshake_timeout;
        let (address, first) = if self.settings.proxy_protocol {
            let (source, first) =
                forwarded::read_header(stream, deadline)
                    .await
                    .map_err(|reason| {
                        self.log_refusal(&format!(
                            "closed the connection from {connection}: {reason}"
                        ));
                        Unopened {
                            admitted: None,
                            goodbye: None,
                        }
                    })?;
            let address = source.unwrap_or(connection);
            if let Err(reason) = self.admission().admit(address.ip(), Instant::now()) {
                self.log_refusal(&format!(
                    "refused connection from {address} (forwarded by {connection}): {reason}"
                ));
                return Err(Unopened {
                    admitted: None,
                    goodbye: Some(reason),
                });
            }
            (address, first)
        } else {
            (connection, Vec::new())
        };
        let Some(config) = tls else {
            return Ok((address, None, first));
        };
        let plaintext_ok = buildat_network_api::address::is_loopback(address.ip());
        match tls::handshake(stream, config, deadline, first, plaintext_ok).await {
            Ok(tls::Opening::Tls(session)) => Ok((address, Some(*session), Vec::new())),
            Ok(tls::Opening::Plaintext(first)) => {
                log::debug!("{address} is loopback and speaks plaintext: served plaintext");
                Ok((address, None, first))
            }
            Err(failure) => {
                let goodbye = match failure {
                    tls::HandshakeFailure::NotTls => {
                        self.log_refusal(&format!(
                            "closed the connection from {address}: it does not speak TLS \
                             (a plaintext client?); told to connect with tls://"
                        ));
                        Some(tls::SPEAKS_TLS.to_string())
                    }
                    tls::HandshakeFailure::Failed(reason) => {
                        self.log_refusal(&format!(
                            "closed the connection from {address}: {reason}"
                        ));
                        None
                    }
                };
                Err(Unopened {
                    admitted: Some(address.ip()),
                    goodbye,
                })
            }
        }
    }

    fn start_new_peer(
        self: &Arc<Self>,
        stream: TcpStream,
        address: SocketAddr,
        tls: Option<tls::Session>,
        first: Vec<u8>,
    ) {
        let id = self.next_peer.fetch_add(1, Ordering::Relaxed);
        Counters::add(&self.counters.connections, 1);
        let mut state = PeerState::new(id, address.to_string(), &self.settings);
        state.tls = tls;
        self.start_peer(stream, state, true, first);
    }
}

/// A connection that did not become a peer: the address whose admission
/// to give back, and what to tell it.
struct Unopened {
    admitted: Option<IpAddr>,
    goodbye: Option<String>,
}

/// Accepts connections until told to stop; hands the listener back.
async fn accept_loop(
    shared: Arc<Shared>,
    listener: TcpListener,
    mut stop: oneshot::Receiver<()>,
) -> TcpListener {
    let mut accepting = shared.accepting.subscribe();
    tokio::select! {
        _ = &mut stop => return listener,
        // Never closed: `shared` holds the sender.
        _ = accepting.wait_for(|open| *open) => {}
    }
    loop {
        tokio::select! {
            _ = &mut stop => return listener,
            accepted = listener.accept() => match accepted {
                Ok((stream, address)) => shared.admit(stream, address),
                Err(error) => {
                    // Out of descriptors (EMFILE, ENFILE) or memory: the
                    // connection stays in the kernel's backlog; wait for
                    // peers to leave instead of spinning on the error.
                    shared.log_refusal(&format!("accepting a connection failed: {error}"));
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
    }
}

/// What crosses a reload (fds are reclaimed exactly once, by the next version).
#[derive(Serialize, Deserialize)]
struct Saved {
    listener_fd: RawFd,
    listen_address: String,
    next_peer: PeerId,
    peers: Vec<(RawFd, PeerState)>,
}

impl Stash for Saved {
    // 2: peers' readers bound their packet types; `PeerState::heard`;
    // 3: `PeerState::tls`.
    const LAYOUT: u32 = 3;
}

struct Running {
    runtime: tokio::runtime::Runtime,
    stop_listener: oneshot::Sender<()>,
    listener: tokio::task::JoinHandle<TcpListener>,
}

struct Network {
    host: Host,
    shared: Arc<Shared>,
    running: Option<Running>,
    listen_address: String,
}

fn runtime() -> Result<tokio::runtime::Runtime, ModuleError> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("network-io")
        .enable_io()
        .enable_time()
        .build()
        .map_err(|e| ModuleError::msg(format!("cannot start the network runtime: {e}")))
}

fn bind(address: &str) -> Result<TcpListener, ModuleError> {
    let cannot =
        |e: &dyn std::fmt::Display| ModuleError::msg(format!("cannot listen on {address}: {e}"));
    let socket_address = address
        .to_socket_addrs()
        .map_err(|e| cannot(&e))?
        .next()
        .ok_or_else(|| cannot(&"the address resolves to nothing"))?;
    let socket = if socket_address.is_ipv4() {
        TcpSocket::new_v4()
    } else {
        TcpSocket::new_v6()
    }
    .map_err(|e| cannot(&e))?;
    socket.set_reuseaddr(true).map_err(|e| cannot(&e))?;
    socket.bind(socket_address).map_err(|e| cannot(&e))?;
    socket.listen(4096).map_err(|e| cannot(&e))
}

impl Network {
    /// Queues packets to one peer, in order, as one command to its task;
    /// answers its backlog. Nothing is queued if a name is refused.
    fn queue_batch<'a>(
        &self,
        peer: PeerId,
        packets: impl IntoIterator<Item = PacketView<'a>>,
    ) -> Result<u64, ModuleError> {
        let batch = batch_of(packets, self.shared.settings.max_name_len)?;
        if batch.is_empty() {
            return Ok(0);
        }
        self.shared.command(peer, Command::Batch(batch))
    }

    /// Queues a `send_batches` event's packets ([`batches_by_peer`]), one
    /// [`Batch`] command per peer (one wake-up of its task, however many
    /// packets); packets to peers that left are dropped.
    fn queue_send_batches(&self, request: network::SendBatchesView) {
        let by_peer = batches_by_peer(request, self.shared.settings.max_name_len);
        let peers = self.shared.peers();
        for (peer, batch) in by_peer {
            if batch.is_empty() {
                continue;
            }
            if let Err(error) = Shared::command_in(&peers, peer, Command::Batch(batch)) {
                log::debug!("send_batches to peer {peer}: {error}");
            }
        }
    }

    /// Queues one packet to every peer, its payload shared by all;
    /// answers how many it was queued to.
    fn broadcast(&self, packet: PacketView) -> Result<u64, ModuleError> {
        check_name(packet.name, self.shared.settings.max_name_len)?;
        let name: Arc<str> = packet.name.into();
        let data = Arc::new(packet.data.to_vec());
        let handles = self.shared.peers();
        let queued = handles
            .values()
            .filter(|handle| {
                let command = Command::Send {
                    name: name.clone(),
                    data: Payload::Whole(data.clone()),
                };
                handle.backlog.add(command.cost());
                handle.commands.send(command).is_ok()
            })
            .count();
        Ok(queued as u64)
    }

    /// Queues packets with shared bodies to one peer, in order; answers its
    /// backlog. The bodies are not copied here: the peer's task frames
    /// them straight from the shared buffers.
    fn queue_shared(&self, batch: SendShared) -> Result<u64, ModuleError> {
        let packets = batch.packets.into_iter().map(|p| {
            let data = Payload::Parts {
                head: p.head,
                body: p.body,
            };
            (p.name, data)
        });
        self.queue_packets(batch.peer, packets)
    }

    /// Queues (name, payload) packets to one peer, in order; answers its
    /// backlog.
    fn queue_packets(
        &self,
        peer: PeerId,
        packets: impl Iterator<Item = (String, Payload)>,
    ) -> Result<u64, ModuleError> {
        let mut backlog = 0;
        for (name, data) in packets {
            check_name(&name, self.shared.settings.max_name_len)?;
            let name = name.into();
            backlog = self.shared.command(peer, Command::Send { name, data })?;
        }
        Ok(backlog)
    }

    /// Decides whether the port speaks TLS (`network.tls`) and, if it
    /// does, loads (or makes, on the first start) the certificate.
    fn set_up_tls(&self, listener: &TcpListener) -> Result<(), ModuleError> {
        let loopback = listener.local_addr().is_ok_and(|a| a.ip().is_loopback());
        let settings = &self.shared.settings;
        let wanted =
            tls::wanted(&settings.tls, loopback).map_err(|e| ModuleError::msg(e.to_string()))?;
        if !wanted {
            if !loopback {
                log::warn!(
                    "the game port is plaintext (network.tls={}) on an address that is not \
                     loopback: passwords and play cross it readable by anyone on the path",
                    settings.tls
                );
            }
            return Ok(());
        }
        let world = self.host.world_path();
        let (cert, key, made) = tls::certificate_files(
            &world,
            settings.tls_cert.as_deref(),
            settings.tls_key.as_deref(),
        )
        .map_err(|e| ModuleError::msg(format!("TLS: {e}")))?;
        let identity =
            tls::identity(&cert, &key).map_err(|e| ModuleError::msg(format!("TLS: {e}")))?;
        log::info!(
            "TLS on the game port: certificate {}{}; key fingerprint {} (clients pin it)",
            identity.cert_path.display(),
            if made { " (made now, self-signed)" } else { "" },
            identity.fingerprint
        );
        let _ = self.shared.tls.set(identity.config);
        Ok(())
    }

    fn run(&mut self, runtime: tokio::runtime::Runtime, listener: TcpListener) {
        self.listen_address = listener
            .local_addr()
            .map(|a| a.to_string())
            .unwrap_or_default();
        // A host that does not know the key (a test kit) has started.
        let starting = self.host.get_config(config::STARTED).as_deref() == Some("0");
        if starting {
            log::info!("accepting players once every module is loaded");
        } else {
            self.shared.accepting.send_replace(true);
        }
        let (stop_listener, stop) = oneshot::channel();
        let listener = runtime.spawn(accept_loop(self.shared.clone(), listener, stop));
        self.running = Some(Running {
            runtime,
            stop_listener,
            listener,
        });
    }

    fn start(&mut self) -> Result<(), ModuleError> {
        if self.host.get_config(config::HEADLESS).as_deref() == Some("1") {
            log::info!("headless run: not listening for players");
            return Ok(());
        }
        let address = self
            .host
            .get_config(config::LISTEN)
            .unwrap_or_else(|| "0.0.0.0:20000".to_string());
        let runtime = runtime()?;
        let listener = {
            let _context = runtime.enter();
            bind(&address)?
        };
        self.set_up_tls(&listener)?;
        self.run(runtime, listener);
        log::info!("listening on {}", self.listen_address);
        Ok(())
    }

    /// Takes back the sockets and state the previous version stashed.
    fn resume(&mut self) -> Result<(), ModuleError> {
        let Some(saved) = self.host.take_stash::<Saved>()? else {
            log::warn!("nothing stashed by a previous version; listening afresh");
            return self.start();
        };
        self.resume_from(saved)
    }

    fn resume_from(&mut self, saved: Saved) -> Result<(), ModuleError> {
        let runtime = runtime()?;
        let _context = runtime.enter();
        // SAFETY: the fd came from `into_raw_fd` in the previous version and
        // tmp data is taken once, so it is reclaimed exactly once.
        let listener = unsafe { std::net::TcpListener::from_raw_fd(saved.listener_fd) };
        listener.set_nonblocking(true)?;
        let listener = TcpListener::from_std(listener)?;
        if let Err(error) = self.set_up_tls(&listener) {
            // The peers are closed (their fds owned below are dropped);
            // each is reported gone.
            for (_, state) in saved.peers.iter() {
                self.shared
                    .peer_lost(state.id, format!("lost in the reload: {error}"));
            }
            // SAFETY: as below; each fd is reclaimed once, here.
            for (fd, _) in saved.peers {
                drop(unsafe { std::net::TcpStream::from_raw_fd(fd) });
            }
            return Err(error);
        }
        self.shared
            .next_peer
            .store(saved.next_peer, Ordering::Relaxed);
        // Every fd is owned (closed on drop) before anything can fail, so
        // a failing resume leaks none; a peer that cannot be taken back is
        // reported gone, never left a ghost.
        let peers: Vec<(std::net::TcpStream, PeerState)> = saved
            .peers
            .into_iter()
            // SAFETY: as above.
            .map(|(fd, state)| (unsafe { std::net::TcpStream::from_raw_fd(fd) }, state))
            .collect();
        let count = peers.len();
        for (stream, state) in peers {
            let taken = stream
                .set_nonblocking(true)
                .and_then(|()| TcpStream::from_std(stream));
            match taken {
                Ok(stream) => self.shared.start_peer(stream, state, false, Vec::new()),
                Err(error) => self
                    .shared
                    .peer_lost(state.id, format!("lost in the reload: {error}")),
            }
        }
        drop(_context);
        self.run(runtime, listener);
        log::info!(
            "resumed: listening on {} with {count} peers kept (was {})",
            self.listen_address,
            saved.listen_address
        );
        Ok(())
    }

    /// Stops accepting and parks every peer; returns what the next version needs.
    fn park(&mut self) -> Result<Saved, ModuleError> {
        let Some(Running {
            runtime,
            stop_listener,
            listener,
        }) = self.running.take()
        else {
            return Err(ModuleError::msg("not running"));
        };
        let shared = self.shared.clone();
        let saved = runtime.block_on(async move {
            let _ = stop_listener.send(());
            let listener = listener
                .await
                .map_err(|e| ModuleError::msg(format!("the listener task failed: {e}")))?;
            let handles: Vec<(PeerId, PeerHandle)> = {
                let mut peers = shared.peers();
                shared.closing.store(true, Ordering::Release);
                peers.drain().collect()
            };
            let mut peers = Vec::with_capacity(handles.len());
            for (peer, handle) in handles {
                let (reply, parked) = oneshot::channel();
                if handle.commands.send(Command::Park(reply)).is_err() {
                    continue;
                }
                match tokio::time::timeout(STOP_WAIT, parked).await {
                    Ok(Ok(Parked { state, stream })) => match stream.into_std() {
                        Ok(stream) => peers.push((stream.into_raw_fd(), state)),
                        Err(error) => {
                            shared.peer_lost(peer, format!("lost in the reload: {error}"))
                        }
                    },
                    _ => shared.peer_lost(peer, "did not stop in time for the reload".into()),
                }
            }
            Ok::<_, ModuleError>(Saved {
                listener_fd: listener.into_std()?.into_raw_fd(),
                listen_address: self.listen_address.clone(),
                next_peer: shared.next_peer.load(Ordering::Relaxed),
                peers,
            })
        });
        runtime.shutdown_timeout(STOP_WAIT);
        saved
    }

    /// Disconnects everyone and closes the listener.
    fn close(&mut self, reason: &str) {
        let Some(Running {
            runtime,
            stop_listener,
            listener,
        }) = self.running.take()
        else {
            return;
        };
        let shared = self.shared.clone();
        runtime.block_on(async move {
            let _ = stop_listener.send(());
            let _ = listener.await;
            let peers: Vec<mpsc::UnboundedSender<Command>> = {
                let peers = shared.peers();
                shared.closing.store(true, Ordering::Release);
                peers.values().map(|h| h.commands.clone()).collect()
            };
            for commands in &peers {
                let _ = commands.send(Command::Disconnect(reason.to_string()));
            }
            let deadline = tokio::time::Instant::now() + STOP_WAIT;
            while !shared.peers().is_empty() && tokio::time::Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        });
        runtime.shutdown_timeout(STOP_WAIT);
        log::info!("closed the listener and every connection: {reason}");
    }
}

impl Module for Network {
    fn create(host: Host) -> Result<Self, ModuleError> {
        let settings = Settings::from_host(&host)?;
        let descriptors = admission::descriptor_limit();
        let peer_cap = descriptors.map_or(settings.max_connections, |soft| {
            settings
                .max_connections
                .min(admission::peers_for_descriptors(soft))
        });
        if peer_cap < settings.max_connections {
            log::info!(
                "at most {peer_cap} connections: the descriptor limit is {}",
                descriptors.unwrap_or_default()
            );
        }
        let admission = Admission::new(settings.admission);
        Ok(Self {
            host,
            shared: Arc::new(Shared {
                host,
                settings,
                peers: Mutex::new(PeerMap::default()),
                peer_count: AtomicUsize::new(0),
                epoch: Instant::now(),
                next_peer: AtomicU64::new(1),
                admission: Mutex::new(admission),
                peer_cap,
                refusal_log: Mutex::new(LogLimiter::new(5, Duration::from_secs(1))),
                queues: QueueWatch::new(),
                counters: Counters::default(),
                tls: std::sync::OnceLock::new(),
                handshaking: AtomicUsize::new(0),
                closing: AtomicBool::new(false),
                accepting: tokio::sync::watch::Sender::new(false),
            }),
            running: None,
            listen_address: String::new(),
        })
    }

    fn receive(table: &mut Receive<Self>) {
        table
            .settings::<NetworkSettings>()
            // A stash on a fresh start was left by a reload whose next
            // version failed: take its listener and peers back rather than
            // leave the port held by an fd nobody owns.
            .event(
                |net, _: events::Start| match net.host.take_stash::<Saved>()? {
                    Some(saved) => {
                        log::warn!("taking back the sockets a failed reload left behind");
                        net.resume_from(saved)
                    }
                    None => net.start(),
                },
            )
            .event(|net, _: events::Started| {
                net.shared.accepting.send_replace(true);
                Ok(())
            })
            .event(|net, _: events::Continue| {
                if let Some(bytes) = net.host.tmp_restore_data(COUNTERS_TMP) {
                    net.shared.counters.restore(&bytes);
                }
                net.resume()
            })
            // Read in place (the packets borrowed from the event's bytes),
            // so decoded here rather than by the table.
            .event_raw(network::SendBatches::NAME, |net, payload| {
                let request: network::SendBatchesView =
                    buildat_format::payload::decode_borrowed(payload).map_err(|error| {
                        ModuleError::Malformed {
                            what: format!("event {}", network::SendBatches::NAME),
                            error,
                        }
                    })?;
                net.queue_send_batches(request);
                Ok(())
            })
            .call(|net, request: SendPacket| {
                net.queue_batch(request.peer, [PacketView::from(&request.packet)])
            })
            .call(|net, batch: SendBatch| {
                net.queue_batch(batch.peer, batch.packets.iter().map(PacketView::from))
            })
            .call(|net, batch: SendShared| net.queue_shared(batch))
            .call(|net, request: Broadcast| net.broadcast(PacketView::from(&request.packet)))
            .call(|net, _: ListPeers| {
                let mut peers: Vec<PeerInfo> = net
                    .shared
                    .peers()
                    .iter()
                    .map(|(peer, handle)| PeerInfo {
                        peer: *peer,
                        address: handle.address.clone(),
                    })
                    .collect();
                peers.sort_by_key(|p| p.peer);
                Ok(peers)
            })
            .call(|net, request: Disconnect| {
                net.shared
                    .command(request.peer, Command::Disconnect(request.reason))?;
                Ok(())
            })
            .call(|net, request: GetBacklog| {
                let peers = net.shared.peers();
                let handle = peers.get(&request.peer).ok_or_else(|| {
                    ModuleError::msg(format!("no peer {} is connected", request.peer))
                })?;
                Ok(handle.backlog.total() as u64)
            })
            .call(|net, _: ListenAddress| Ok(net.listen_address.clone()))
            .call(|net, _: GetStats| {
                let counters = &net.shared.counters;
                Ok(NetworkStats {
                    peers: net.shared.peer_count.load(Ordering::Relaxed) as u64,
                    connections: counters.connections.load(Ordering::Relaxed),
                    packets_in: counters.packets_in.load(Ordering::Relaxed),
                    bytes_in: counters.bytes_in.load(Ordering::Relaxed),
                    packets_out: counters.packets_out.load(Ordering::Relaxed),
                    bytes_out: counters.bytes_out.load(Ordering::Relaxed),
                })
            });
    }

    fn unload(&mut self, kind: UnloadKind) -> Result<(), ModuleError> {
        match kind {
            UnloadKind::Reload => {
                self.host
                    .tmp_store_data(COUNTERS_TMP, &self.shared.counters.to_bytes())?;
                let saved = self.park()?;
                log::info!(
                    "handing {} peers and the listener to the next version",
                    saved.peers.len()
                );
                self.host.store_stash(&saved)?;
            }
            UnloadKind::Stop => self.close("server stopping"),
            UnloadKind::ForGood | UnloadKind::AfterFailure => self.close("network module unloaded"),
        }
        Ok(())
    }
}

/// `packets` as one [`Batch`], in order; an error, and no batch, if a name
/// is refused.
fn batch_of<'a>(
    packets: impl IntoIterator<Item = PacketView<'a>>,
    max_name_len: usize,
) -> Result<Batch, ModuleError> {
    let mut batch = Batch::default();
    for packet in packets {
        check_name(packet.name, max_name_len)?;
        batch.push(packet.name, packet.data);
    }
    Ok(batch)
}

/// What a `send_batches` event gives each peer, in order: its batches, then
/// the multicasts it is among. A packet with a refused name drops its
/// batch, or its multicast, and nothing else.
fn batches_by_peer(request: network::SendBatchesView, max_name_len: usize) -> PeerMap<Batch> {
    use std::collections::hash_map::Entry;
    let mut by_peer: PeerMap<Batch> =
        PeerMap::with_capacity_and_hasher(request.batches.len(), Default::default());
    for batch in request.batches {
        match batch_of(batch.packets, max_name_len) {
            // The first batch for a peer is moved in, later ones appended.
            Ok(packets) => match by_peer.entry(batch.peer) {
                Entry::Vacant(entry) => {
                    entry.insert(packets);
                }
                Entry::Occupied(mut entry) => entry.get_mut().append(&packets),
            },
            Err(error) => log::debug!("send_batches to peer {}: {error}", batch.peer),
        }
    }
    for multicast in request.multicasts {
        let packet = multicast.packet;
        if let Err(error) = check_name(packet.name, max_name_len) {
            log::debug!("send_batches to {} peers: {error}", multicast.peers.len());
            continue;
        }
        for peer in multicast.peers {
            by_peer
                .entry(peer)
                .or_default()
                .push(packet.name, packet.data);
        }
    }
    by_peer
}

fn check_name(name: &str, max: usize) -> Result<(), ModuleError> {
    if name.is_empty() || name.len() > max {
        return Err(ModuleError::msg(format!(
            "packet name '{name}' must be 1 to {max} bytes"
        )));
    }
    Ok(())
}

export_module!(Network);

#[cfg(test)]
mod tests {
    use super::*;
    use buildat_network_api::{Multicast, OutgoingPacket, SendBatch, SendBatches};

    fn packet(name: &str, data: &[u8]) -> OutgoingPacket {
        OutgoingPacket::named(name, data)
    }

    #[test]
    fn on_the_kit_headless_its_table_answers_and_refuses_a_malformed_send() {
        use buildat_interface::core_api::DeclareSettings;
        use buildat_interface::testing::TestHost;

        let kit = TestHost::new().config(config::HEADLESS, "1");
        let mut net = kit.load::<Network>().unwrap();
        assert_eq!(
            kit.subscriptions(),
            [events::Started::NAME, network::SendBatches::NAME]
        );
        let declared = kit.calls::<DeclareSettings>();
        assert_eq!(declared.len(), 1);
        assert_eq!(declared[0].namespace, "network");
        assert_eq!(net.call(&ListPeers {}).unwrap(), []);
        assert_eq!(
            net.call(&ListenAddress {}).unwrap(),
            "",
            "headless: no port"
        );
        assert_eq!(net.call(&GetStats {}).unwrap().peers, 0);
        let error = net.call(&GetBacklog { peer: 9 }).unwrap_err();
        assert!(error.to_string().contains("no peer 9"), "{error}");
        let sends = SendBatches {
            batches: vec![SendBatch {
                peer: 9,
                packets: vec![packet("a:b", b"1")],
            }],
            multicasts: Vec::new(),
        };
        net.emit(&sends).unwrap();
        let error = net
            .emit_raw(network::SendBatches::NAME, &[0xff; 3])
            .unwrap_err();
        assert!(
            error.to_string().contains(network::SendBatches::NAME),
            "{error}"
        );
    }

    #[test]
    fn settings_are_declared_with_help_and_read_by_key() {
        use buildat_interface::settings::Settings as _;
        let declared = NetworkSettings::describe();
        assert_eq!(declared.len(), 21);
        for setting in &declared {
            assert!(setting.key.starts_with("network."), "{setting:?}");
            assert!(!setting.help.is_empty(), "{} has help", setting.key);
        }
        let set = |key: &str| match key {
            "network.max_connections_per_ip" => Some("3".to_string()),
            "network.idle_timeout_ms" => Some("250".to_string()),
            "network.tls_cert" => Some(String::new()),
            _ => None,
        };
        let settings = Settings::from(NetworkSettings::read_with(set).unwrap());
        assert_eq!(settings.admission.per_ip, 3);
        assert_eq!(settings.idle_timeout, Duration::from_millis(250));
        assert_eq!(settings.tls_cert, None, "empty is unset");
        assert_eq!(settings.max_frame_size, 16 << 20);
        assert_eq!(settings.write_delay, Duration::from_millis(10));
        let bad = NetworkSettings::read_with(|key| {
            (key == "network.proxy_protocol").then(|| "maybe".to_string())
        });
        assert!(
            bad.unwrap_err()
                .to_string()
                .contains("network.proxy_protocol")
        );
    }

    #[test]
    fn an_event_gives_each_peer_its_batches_then_its_multicasts_in_order() {
        let event = SendBatches {
            batches: vec![
                SendBatch {
                    peer: 1,
                    packets: vec![packet("a:first", b"1"), packet("a:second", b"2")],
                },
                SendBatch {
                    peer: 2,
                    packets: vec![packet("a:first", b"3")],
                },
                SendBatch {
                    peer: 1,
                    packets: vec![packet("a:third", b"4")],
                },
                SendBatch {
                    peer: 2,
                    packets: vec![packet("a:ok", b"5"), packet("", b"refused")],
                },
            ],
            multicasts: vec![
                Multicast {
                    peers: vec![2, 1, 3],
                    packet: packet("a:news", b"6"),
                },
                Multicast {
                    peers: vec![1],
                    packet: packet(&"x".repeat(300), b"refused"),
                },
                Multicast {
                    peers: vec![1],
                    packet: packet("a:news", b"7"),
                },
            ],
        };
        let bytes = buildat_interface::encode(&event).unwrap();
        let view: network::SendBatchesView =
            buildat_format::payload::decode_borrowed(&bytes).unwrap();
        let by_peer = batches_by_peer(view, 256);
        let got = |peer: PeerId| -> Vec<(String, Vec<u8>)> {
            by_peer[&peer]
                .packets()
                .map(|(name, data)| (name.to_string(), data.to_vec()))
                .collect()
        };
        let want = |packets: &[(&str, &[u8])]| -> Vec<(String, Vec<u8>)> {
            packets
                .iter()
                .map(|(name, data)| (name.to_string(), data.to_vec()))
                .collect()
        };
        assert_eq!(
            got(1),
            want(&[
                ("a:first", b"1"),
                ("a:second", b"2"),
                ("a:third", b"4"),
                ("a:news", b"6"),
                ("a:news", b"7"),
            ])
        );
        assert_eq!(
            got(2),
            want(&[("a:first", b"3"), ("a:news", b"6")]),
            "the batch with a refused name is dropped whole, nothing else"
        );
        assert_eq!(got(3), want(&[("a:news", b"6")]));
        assert_eq!(by_peer.len(), 3);
    }
}
