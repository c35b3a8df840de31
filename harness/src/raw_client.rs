//! A small blocking client speaking the wire protocol through
//! `buildat-format` (docs/protocol.md): for the abuse corpus's attackers,
//! which send what no real client would, and its bystanders, which join
//! the default game and ping while the attacks run.
//!
//! Owns: one TCP connection, its packet reader and writer. Does not own:
//! Lua or files (that is buildat-client's job).

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use buildat_format::{Packet, PacketReader, PacketWriter, RawPacket};
use buildat_main_api::{Join, Ping, Pong, Spawn};

use crate::histogram::Histogram;

pub struct RawClient {
    pub stream: TcpStream,
    /// Where `main:spawn` put this player (after `join`).
    pub spawn: [f64; 3],
    reader: PacketReader,
    writer: PacketWriter,
    closed: bool,
}

impl RawClient {
    pub fn connect(address: &str) -> std::io::Result<Self> {
        let stream = TcpStream::connect(address)?;
        stream.set_nodelay(true)?;
        Ok(Self {
            stream,
            spawn: [0.0; 3],
            reader: PacketReader::default(),
            writer: PacketWriter::default(),
            closed: false,
        })
    }

    /// Sends a named packet (with its definition on first use).
    /// Sends a packet by its definition.
    pub fn send_packet<P: Packet>(&mut self, packet: &P) -> std::io::Result<()> {
        let data = packet
            .encode()
            .map_err(|e| std::io::Error::new(ErrorKind::InvalidInput, e.to_string()))?;
        self.send(P::NAME, &data)
    }

    /// Sends raw bytes under a packet name (malformed input on purpose).
    pub fn send(&mut self, name: &str, data: &[u8]) -> std::io::Result<()> {
        self.writer
            .write(name, data)
            .map_err(|e| std::io::Error::new(ErrorKind::InvalidInput, e.to_string()))?;
        let bytes = self.writer.take();
        self.stream.write_all(&bytes)
    }

    /// Sends bytes as they are.
    pub fn send_raw(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.stream.write_all(bytes)
    }

    /// The next packet within `timeout`; None on time-out or once closed.
    pub fn recv(&mut self, timeout: Duration) -> Option<RawPacket> {
        let deadline = Instant::now() + timeout;
        let mut buffer = [0u8; 64 * 1024];
        loop {
            match self.reader.try_next_packet() {
                Ok(Some(packet)) => return Some(packet),
                Ok(None) => {}
                Err(_) => {
                    self.closed = true;
                    return None;
                }
            }
            if self.closed {
                return None;
            }
            let left = deadline.checked_duration_since(Instant::now())?;
            let _ = self
                .stream
                .set_read_timeout(Some(left.max(Duration::from_millis(1))));
            match self.stream.read(&mut buffer) {
                Ok(0) => self.closed = true,
                Ok(n) => self.reader.push(&buffer[..n]),
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    return None;
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => self.closed = true,
            }
        }
    }

    /// Reads (and drops) everything until the server closes the connection;
    /// true if it did within `timeout`.
    pub fn wait_closed(&mut self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if self.closed {
                return true;
            }
            let _ = self.recv(Duration::from_millis(100));
        }
        self.closed
    }

    pub fn close(&self) {
        let _ = self.stream.shutdown(Shutdown::Both);
    }

    /// Joins the default game as `name` and waits for `main:spawn`.
    pub fn join(address: &str, name: &str, timeout: Duration) -> std::io::Result<Self> {
        let mut client = Self::connect(address)?;
        client.send_packet(&Join {
            name: name.to_string(),
        })?;
        let deadline = Instant::now() + timeout;
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            match client.recv(left) {
                Some(packet) if packet.name == Spawn::NAME => {
                    if let Ok(spawn) = Spawn::decode(&packet.data) {
                        client.spawn = spawn.position;
                    }
                    return Ok(client);
                }
                Some(_) => {}
                None if client.closed => break,
                None => {}
            }
        }
        Err(std::io::Error::new(
            ErrorKind::TimedOut,
            format!("{name}: no main:spawn within {timeout:?}"),
        ))
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
                    Some(packet) if packet.name == Pong::NAME => {
                        let seq = Pong::decode(&packet.data)
                            .ok()
                            .and_then(|pong| pong.data.get(..4)?.try_into().ok())
                            .map(u32::from_le_bytes);
                        if let Some(sent) = seq.and_then(|s| outstanding.remove(&s)) {
                            record(&mut report, sent);
                        }
                    }
                    Some(_) => {}
                    None if client.closed => {
                        report.disconnected = true;
                        break;
                    }
                    None => {}
                }
            }
            // Collect the pongs still on their way.
            let deadline = Instant::now() + Duration::from_secs(5);
            while !outstanding.is_empty() && !report.disconnected && Instant::now() < deadline {
                if let Some(packet) = client.recv(Duration::from_millis(100))
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
