//! A small blocking test client speaking the packet protocol through
//! `buildat-format`'s codec (the real buildat-client comes later).

use buildat_client_file_api::{
    AllFilesTransferred, AnnounceFile, ContentHash, FileContent, RequestFile, RunScript,
    TellAfterAllFilesTransferred,
};
use buildat_format::Packet;
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use std::collections::{BTreeMap, HashMap};

use buildat_format::{PacketReader, PacketWriter, RawPacket};
use sha2::{Digest, Sha256};

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

    /// Sends a packet by its definition.
    pub fn send_packet<P: Packet>(&mut self, packet: &P) -> std::io::Result<()> {
        let data = packet.encode().expect("a test packet encodes");
        self.send(P::NAME, &data)
    }

    /// Sends raw bytes under a packet name (for malformed input).
    pub fn send(&mut self, name: &str, data: &[u8]) -> std::io::Result<()> {
        self.queue(name, data);
        self.flush()
    }

    pub fn send_raw(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.stream.write_all(bytes)
    }

    /// The next packet; `Ok(None)` on timeout; an error once the server closed.
    pub fn recv(&mut self, timeout: Duration) -> std::io::Result<Option<RawPacket>> {
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
    pub fn wait_closed(&mut self, timeout: Duration) -> Option<Vec<RawPacket>> {
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

impl TestClient {
    /// Runs the file flow like a client with `cache` (content hash -> bytes):
    /// requests what the cache lacks, verifies every hash, answers
    /// `core:all_files_transferred`, then collects `core:run_script`s until
    /// the server is quiet for `quiet`.
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
                self.send(AllFilesTransferred::NAME, &[]).expect("answer");
                answered = true;
            }
        }
    }

    fn request(&mut self, sync: &mut FileSync, name: &str, hash: ContentHash) {
        sync.requested.push(name.to_string());
        let request = RequestFile {
            name: name.to_string(),
            hash,
        };
        self.send(RequestFile::NAME, &encoded(&request))
            .expect("request");
    }
}

/// A packet's payload, by its definition.
#[allow(dead_code)]
pub fn encoded<P: Packet>(packet: &P) -> Vec<u8> {
    packet.encode().expect("a test packet encodes")
}
