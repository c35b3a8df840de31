//! A small blocking test client speaking the packet protocol through
//! `buildat-format`'s codec (the real buildat-client comes later).

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use buildat_format::{Packet, PacketReader, PacketWriter};

pub struct TestClient {
    pub stream: TcpStream,
    reader: PacketReader,
    writer: PacketWriter,
}

impl TestClient {
    pub fn connect(address: &str) -> Self {
        let stream =
            TcpStream::connect(address).unwrap_or_else(|e| panic!("connect {address}: {e}"));
        stream.set_nodelay(true).expect("nodelay");
        Self {
            stream,
            reader: PacketReader::default(),
            writer: PacketWriter::default(),
        }
    }

    /// Queues a packet (with its definition on first use) without writing.
    pub fn queue(&mut self, name: &str, data: &[u8]) {
        self.writer.write(name, data).expect("encode packet");
    }

    /// Writes everything queued.
    pub fn flush(&mut self) -> std::io::Result<()> {
        let bytes = self.writer.take();
        self.stream.write_all(&bytes)
    }

    pub fn send(&mut self, name: &str, data: &[u8]) -> std::io::Result<()> {
        self.queue(name, data);
        self.flush()
    }

    pub fn send_raw(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.stream.write_all(bytes)
    }

    /// The next packet; `Ok(None)` on timeout; an error once the server closed.
    pub fn recv(&mut self, timeout: Duration) -> std::io::Result<Option<Packet>> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(packet) = self
                .reader
                .try_next_packet()
                .map_err(|e| std::io::Error::new(ErrorKind::InvalidData, e.to_string()))?
            {
                return Ok(Some(packet));
            }
            let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                return Ok(None);
            };
            self.stream
                .set_read_timeout(Some(left.max(Duration::from_millis(1))))?;
            let mut buffer = [0u8; 64 * 1024];
            match self.stream.read(&mut buffer) {
                Ok(0) => {
                    return Err(std::io::Error::new(
                        ErrorKind::UnexpectedEof,
                        "closed by server",
                    ));
                }
                Ok(read) => self.reader.push(&buffer[..read]),
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Reads until the server closes the connection; returns the packets
    /// seen on the way, or `None` if it is still open after `timeout`.
    pub fn wait_closed(&mut self, timeout: Duration) -> Option<Vec<Packet>> {
        let deadline = Instant::now() + timeout;
        let mut packets = Vec::new();
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            match self.recv(left) {
                Ok(Some(packet)) => packets.push(packet),
                Ok(None) => return None,
                Err(_) => return Some(packets),
            }
        }
        None
    }
}
