//! A small blocking client speaking the wire protocol through
//! `buildat-format` (docs/protocol.md): the server's end-to-end tests'
//! client, the abuse corpus's attackers, which send what no real client
//! would, and its bystanders, which join the default game and ping while
//! the attacks run.
//!
//! Owns: one TCP connection, its packet reader and writer, and the file
//! flow as a test client runs it (`sync_files`). Does not own: Lua (that is
//! buildat-client's job).

use std::collections::{BTreeMap, HashMap};
use std::io::{ErrorKind, Read, Write};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use buildat_client_file_api::{
    AllFilesTransferred, AnnounceFile, ContentHash, FileContent, RequestFile, RunScript,
    TellAfterAllFilesTransferred,
};
use buildat_format::{Packet, PacketReader, PacketWriter, RawPacket};
use buildat_main_api::{Join, Ping, Pong, Spawn};
use sha2::{Digest, Sha256};

use crate::histogram::Histogram;

pub struct RawClient {
    pub stream: TcpStream,
    /// Where `main:spawn` put this player (after `join`).
    pub spawn: [f64; 3],
    /// Its peer id, from `main:spawn` (after `join`).
    pub peer: u64,
    reader: PacketReader,
    writer: PacketWriter,
    closed: bool,
    /// What `recv` reads the socket into, made once: a fresh 64 KiB
    /// buffer zeroed on every call was a quarter of a thousand light
    /// bots' CPU.
    read_buffer: Box<[u8]>,
}

/// Bytes read from the socket at a time.
const READ_BUFFER: usize = 64 * 1024;

/// A packet's payload, by its definition (panics if it does not encode: for
/// tests, whose packets always do).
pub fn encoded<P: Packet>(packet: &P) -> Vec<u8> {
    packet.encode().expect("a test packet encodes")
}

fn invalid(error: impl std::fmt::Display) -> std::io::Error {
    std::io::Error::new(ErrorKind::InvalidInput, error.to_string())
}

impl RawClient {
    pub fn connect(address: &str) -> std::io::Result<Self> {
        Self::from_stream(TcpStream::connect(address)?)
    }

    /// Connects from `source` (another loopback address, 127.0.0.2 and up,
    /// is another address to the server's per-address limits).
    pub fn connect_from(address: &str, source: IpAddr) -> std::io::Result<Self> {
        let target: SocketAddr = address.parse().map_err(invalid)?;
        let socket = socket2::Socket::new(
            socket2::Domain::for_address(target),
            socket2::Type::STREAM,
            None,
        )?;
        socket.bind(&SocketAddr::new(source, 0).into())?;
        socket.connect(&target.into())?;
        Self::from_stream(socket.into())
    }

    fn from_stream(stream: TcpStream) -> std::io::Result<Self> {
        stream.set_nodelay(true)?;
        Ok(Self {
            stream,
            spawn: [0.0; 3],
            peer: 0,
            reader: PacketReader::default(),
            writer: PacketWriter::default(),
            closed: false,
            read_buffer: vec![0; READ_BUFFER].into_boxed_slice(),
        })
    }

    /// Queues a named packet (with its definition on first use) without
    /// writing it; `flush` writes everything queued.
    pub fn queue(&mut self, name: &str, data: &[u8]) -> std::io::Result<()> {
        self.writer.write(name, data).map_err(invalid)?;
        Ok(())
    }

    /// Queues a packet by its definition.
    pub fn queue_packet<P: Packet>(&mut self, packet: &P) -> std::io::Result<()> {
        let data = packet.encode().map_err(invalid)?;
        self.queue(P::NAME, &data)
    }

    /// The bytes everything queued goes out as, taken without writing
    /// them (for an attacker writing them its own way).
    pub fn take_queued(&mut self) -> Vec<u8> {
        self.writer.take()
    }

    /// Writes everything queued.
    pub fn flush(&mut self) -> std::io::Result<()> {
        let bytes = self.writer.take();
        self.stream.write_all(&bytes)
    }

    /// Sends a packet by its definition.
    pub fn send_packet<P: Packet>(&mut self, packet: &P) -> std::io::Result<()> {
        self.queue_packet(packet)?;
        self.flush()
    }

    /// Sends raw bytes under a packet name (malformed input on purpose).
    pub fn send(&mut self, name: &str, data: &[u8]) -> std::io::Result<()> {
        self.queue(name, data)?;
        self.flush()
    }

    /// Sends bytes as they are.
    pub fn send_raw(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.stream.write_all(bytes)
    }

    /// Whether the server closed the connection (or sent what does not
    /// parse), as far as reading has seen.
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// The next packet; `Ok(None)` on time-out; an error once the server
    /// closed the connection or sent what does not parse.
    pub fn recv(&mut self, timeout: Duration) -> std::io::Result<Option<RawPacket>> {
        let deadline = Instant::now() + timeout;
        loop {
            match self.reader.try_next_packet() {
                Ok(Some(packet)) => return Ok(Some(packet)),
                Ok(None) => {}
                Err(e) => {
                    self.closed = true;
                    return Err(std::io::Error::new(ErrorKind::InvalidData, e.to_string()));
                }
            }
            if self.closed {
                return Err(std::io::Error::new(
                    ErrorKind::UnexpectedEof,
                    "closed by the server",
                ));
            }
            let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                return Ok(None);
            };
            self.stream
                .set_read_timeout(Some(left.max(Duration::from_millis(1))))?;
            match self.stream.read(&mut self.read_buffer) {
                Ok(0) => self.closed = true,
                Ok(n) => self
                    .reader
                    .push(self.read_buffer.get(..n).unwrap_or_default()),
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    return Ok(None);
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => {
                    self.closed = true;
                    return Err(e);
                }
            }
        }
    }

    /// The next packet, `None` on time-out or once closed (see `is_closed`).
    pub fn recv_some(&mut self, timeout: Duration) -> Option<RawPacket> {
        self.recv(timeout).ok().flatten()
    }

    /// Reads until the server closes the connection; the packets seen on
    /// the way, or `None` if it is still open after `timeout`.
    pub fn wait_closed(&mut self, timeout: Duration) -> Option<Vec<RawPacket>> {
        let deadline = Instant::now() + timeout;
        let mut packets = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.recv(left.min(Duration::from_millis(100))) {
                Ok(Some(packet)) => packets.push(packet),
                Ok(None) if left.is_zero() => return None,
                Ok(None) => {}
                Err(_) => return Some(packets),
            }
        }
    }

    pub fn close(&self) {
        let _ = self.stream.shutdown(Shutdown::Both);
    }

    /// Joins the default game as `name` and waits for `main:spawn`.
    pub fn join(address: &str, name: &str, timeout: Duration) -> std::io::Result<Self> {
        Self::join_with(Self::connect(address)?, name, timeout)
    }

    /// Joins the default game on a connection already made.
    pub fn join_with(mut client: Self, name: &str, timeout: Duration) -> std::io::Result<Self> {
        client.send_packet(&Join {
            name: name.to_string(),
        })?;
        let deadline = Instant::now() + timeout;
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            match client.recv(left) {
                Ok(Some(packet)) if packet.name == Spawn::NAME => {
                    if let Ok(spawn) = Spawn::decode(&packet.data) {
                        client.spawn = spawn.position;
                        client.peer = spawn.peer;
                    }
                    return Ok(client);
                }
                Ok(_) => {}
                Err(_) => break,
            }
        }
        Err(std::io::Error::new(
            ErrorKind::TimedOut,
            format!("{name}: no main:spawn within {timeout:?}"),
        ))
    }
}

/// What one file synchronisation saw.
#[derive(Debug, Default)]
pub struct FileSync {
    pub announced: BTreeMap<String, ContentHash>,
    pub requested: Vec<String>,
    pub content_bytes: u64,
    pub scripts: Vec<String>,
    /// Other packets seen on the way, in order.
    pub other: Vec<RawPacket>,
}

impl RawClient {
    /// Runs the file flow like a client with `cache` (content hash -> bytes):
    /// requests what the cache lacks, verifies every hash, answers
    /// `core:all_files_transferred`, then collects `core:run_script`s until
    /// the server is quiet for `quiet`. Panics (it is for tests) if the flow
    /// stalls, the connection drops or a file does not verify.
    pub fn sync_files(
        &mut self,
        cache: &mut HashMap<ContentHash, Vec<u8>>,
        quiet: Duration,
    ) -> FileSync {
        let mut sync = FileSync::default();
        let mut partial: HashMap<String, Vec<u8>> = HashMap::new();
        let mut told = false;
        let mut answered = false;
        loop {
            let wait = if answered {
                quiet
            } else {
                Duration::from_secs(120)
            };
            let Some(packet) = self.recv(wait).expect("connected") else {
                assert!(answered, "the file flow stalled: {sync:?}");
                return sync;
            };
            match packet.name.as_str() {
                AnnounceFile::NAME => {
                    let announce = AnnounceFile::decode(&packet.data).expect("announce");
                    sync.announced.insert(announce.name.clone(), announce.hash);
                    if told && !cache.contains_key(&announce.hash) {
                        self.request(&mut sync, &announce.name, announce.hash);
                    }
                }
                TellAfterAllFilesTransferred::NAME => {
                    told = true;
                    let missing: Vec<(String, ContentHash)> = sync
                        .announced
                        .iter()
                        .filter(|(_, hash)| !cache.contains_key(*hash))
                        .map(|(name, hash)| (name.clone(), *hash))
                        .collect();
                    for (name, hash) in missing {
                        self.request(&mut sync, &name, hash);
                    }
                }
                FileContent::NAME => {
                    let piece = FileContent::decode(&packet.data).expect("content");
                    sync.content_bytes += piece.data.len() as u64;
                    let buffer = partial.entry(piece.name.clone()).or_default();
                    assert_eq!(buffer.len() as u64, piece.offset, "pieces arrive in order");
                    buffer.extend_from_slice(&piece.data);
                    if buffer.len() as u64 == piece.size {
                        let bytes = partial.remove(&piece.name).unwrap_or_default();
                        let hash: ContentHash = Sha256::digest(&bytes).into();
                        assert_eq!(hash, piece.hash, "{} verifies", piece.name);
                        cache.insert(hash, bytes);
                    }
                }
                RunScript::NAME => {
                    let run = RunScript::decode(&packet.data).expect("run_script");
                    sync.scripts.push(run.name);
                }
                _ => sync.other.push(packet),
            }
            let complete = told && sync.announced.values().all(|hash| cache.contains_key(hash));
            if complete && !answered {
                self.send_packet(&AllFilesTransferred {}).expect("answer");
                answered = true;
            }
        }
    }

    fn request(&mut self, sync: &mut FileSync, name: &str, hash: ContentHash) {
        sync.requested.push(name.to_string());
        self.send_packet(&RequestFile {
            name: name.to_string(),
            hash,
        })
        .expect("request");
    }
}

/// What a bystander saw.
#[derive(Debug, Default, Clone)]
pub struct BystanderReport {
    pub sent: u64,
    pub answered: u64,
    pub disconnected: bool,
    pub rtt: Histogram,
}

/// A player that joined and pings every `every` until told to stop,
/// noticing if it is ever disconnected.
pub struct Bystander {
    stop: Arc<AtomicBool>,
    /// Slowest round trip since the last `take_worst_ms`, in microseconds.
    worst_us: Arc<AtomicU64>,
    thread: std::thread::JoinHandle<BystanderReport>,
}

impl Bystander {
    pub fn start(address: &str, name: &str, every: Duration) -> std::io::Result<Self> {
        let mut client = RawClient::join(address, name, Duration::from_secs(60))?;
        let stop = Arc::new(AtomicBool::new(false));
        let stop_seen = stop.clone();
        let worst_us = Arc::new(AtomicU64::new(0));
        let worst_seen = worst_us.clone();
        let record = move |report: &mut BystanderReport, sent: Instant| {
            let rtt = sent.elapsed();
            report.answered += 1;
            report.rtt.record_ms(rtt.as_secs_f64() * 1e3);
            worst_seen.fetch_max(rtt.as_micros() as u64, Ordering::Relaxed);
        };
        let thread = std::thread::spawn(move || {
            let mut report = BystanderReport::default();
            let mut outstanding = std::collections::HashMap::new();
            let mut next_ping = Instant::now();
            while !stop_seen.load(Ordering::Relaxed) {
                if Instant::now() >= next_ping {
                    next_ping += every;
                    let seq = report.sent as u32;
                    let ping = Ping {
                        data: seq.to_le_bytes().to_vec(),
                    };
                    if client.send_packet(&ping).is_err() {
                        report.disconnected = true;
                        break;
                    }
                    outstanding.insert(seq, Instant::now());
                    report.sent += 1;
                }
                let wait = next_ping.saturating_duration_since(Instant::now());
                match client.recv(wait.max(Duration::from_millis(1))) {
                    Ok(Some(packet)) if packet.name == Pong::NAME => {
                        let seq = Pong::decode(&packet.data)
                            .ok()
                            .and_then(|pong| pong.data.get(..4)?.try_into().ok())
                            .map(u32::from_le_bytes);
                        if let Some(sent) = seq.and_then(|s| outstanding.remove(&s)) {
                            record(&mut report, sent);
                        }
                    }
                    Ok(_) => {}
                    Err(_) => {
                        report.disconnected = true;
                        break;
                    }
                }
            }
            // Collect the pongs still on their way.
            let deadline = Instant::now() + Duration::from_secs(5);
            while !outstanding.is_empty() && !report.disconnected && Instant::now() < deadline {
                if let Some(packet) = client.recv_some(Duration::from_millis(100))
                    && packet.name == Pong::NAME
                    && let Some(seq) = packet.data.get(..4).and_then(|b| b.try_into().ok())
                    && let Some(sent) = outstanding.remove(&u32::from_le_bytes(seq))
                {
                    record(&mut report, sent);
                }
            }
            client.close();
            report
        });
        Ok(Self {
            stop,
            worst_us,
            thread,
        })
    }

    /// The slowest round trip since the last call, in milliseconds.
    pub fn take_worst_ms(&self) -> f64 {
        self.worst_us.swap(0, Ordering::Relaxed) as f64 / 1e3
    }

    pub fn finish(self) -> BystanderReport {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap_or(BystanderReport {
            disconnected: true,
            ..BystanderReport::default()
        })
    }
}
