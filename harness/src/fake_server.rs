//! A fake Buildat server for the client's tests and benchmark: speaks the
//! framing and core packets through `buildat-format`, serves files by the
//! protocol (announce, tell, pieces, run_script).
//!
//! Owns: listening on a loopback port, one connection's reader and writer.
//! Does not own: anything of the product (the real server is `server`).

use buildat_client_file_api::{
    AllFilesTransferred, AnnounceFile, FileContent, MAX_FILE_PIECE, RequestFile, RunScript,
    TellAfterAllFilesTransferred,
};
use std::io::{ErrorKind, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use buildat_format::{Packet, PacketReader, PacketWriter, RawPacket};

pub use crate::raw_client::encoded;
use sha2::{Digest, Sha256};

pub struct Conn {
    pub stream: TcpStream,
    reader: PacketReader,
    writer: PacketWriter,
    /// The client closed the connection.
    closed: bool,
}

impl Conn {
    /// Sends a packet by its definition.
    pub fn send_packet<P: Packet>(&mut self, packet: &P) {
        self.send(P::NAME, &encoded(packet));
    }

    /// Sends packets in one write (the client reads them together).
    pub fn send_together(&mut self, packets: &[(&str, &[u8])]) {
        for (name, data) in packets {
            self.writer.write(name, data).expect("encode");
        }
        let bytes = self.writer.take();
        let _ = self.stream.write_all(&bytes);
    }

    /// Sends raw bytes under a packet name (for malformed input).
    pub fn send(&mut self, name: &str, data: &[u8]) {
        self.writer.write(name, data).expect("encode");
        let bytes = self.writer.take();
        // The client may already be gone in some tests.
        let _ = self.stream.write_all(&bytes);
    }

    /// The next packet; None on timeout or when the client closed.
    pub fn recv(&mut self, timeout: Duration) -> Option<RawPacket> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(p) = self
                .reader
                .try_next_packet()
                .expect("client frames are valid")
            {
                return Some(p);
            }
            let left = deadline.checked_duration_since(Instant::now())?;
            self.stream
                .set_read_timeout(Some(left.max(Duration::from_millis(1))))
                .expect("timeout");
            let mut buf = [0u8; 65536];
            match self.stream.read(&mut buf) {
                Ok(0) => {
                    self.closed = true;
                    return None;
                }
                Ok(n) => self.reader.push(&buf[..n]),
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                Err(_) => {
                    self.closed = true;
                    return None;
                }
            }
        }
    }

    /// Closes the connection with a reset (`SO_LINGER` 0), as a server
    /// does that closes with the client's bytes unread: the client's next
    /// write fails.
    pub fn reset(self) {
        let _ = socket2::SockRef::from(&self.stream).set_linger(Some(Duration::ZERO));
    }

    /// Waits until the client closes its side; true if it did.
    pub fn wait_closed(&mut self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        while !self.closed && Instant::now() < deadline {
            self.recv(Duration::from_millis(100));
        }
        self.closed
    }
}

/// A one-connection server running `serve` on its own thread.
pub fn fake_server<T: Send + 'static>(
    serve: impl FnOnce(Conn) -> T + Send + 'static,
) -> (String, JoinHandle<T>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let address = listener.local_addr().expect("address").to_string();
    let handle = std::thread::spawn(move || {
        let (stream, _) = listener.accept().expect("accept");
        serve(Conn {
            stream,
            reader: PacketReader::default(),
            writer: PacketWriter::default(),
            closed: false,
        })
    });
    (address, handle)
}

pub fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// The server side of the file flow: announces `files`, serves requests,
/// and after `core:all_files_transferred` asks to run every `init.lua` in
/// order. Returns the names requested.
pub fn serve_files(conn: &mut Conn, files: &[(&str, Vec<u8>)]) -> Vec<String> {
    for (name, content) in files {
        let a = AnnounceFile {
            name: name.to_string(),
            hash: sha256(content),
            size: content.len() as u64,
        };
        conn.send(AnnounceFile::NAME, &encoded(&a));
    }
    conn.send(TellAfterAllFilesTransferred::NAME, &[]);
    let mut requested = Vec::new();
    loop {
        let p = conn
            .recv(Duration::from_secs(30))
            .expect("the client answers the announcements");
        match p.name.as_str() {
            RequestFile::NAME => {
                let r = RequestFile::decode(&p.data).expect("request");
                let (_, content) = files
                    .iter()
                    .find(|(n, _)| *n == r.name)
                    .expect("a known file");
                assert_eq!(r.hash, sha256(content));
                requested.push(r.name.clone());
                let mut offset = 0;
                loop {
                    let end = (offset + MAX_FILE_PIECE).min(content.len());
                    let piece = FileContent {
                        name: r.name.clone(),
                        hash: r.hash,
                        size: content.len() as u64,
                        offset: offset as u64,
                        data: content[offset..end].to_vec(),
                    };
                    conn.send(FileContent::NAME, &encoded(&piece));
                    offset = end;
                    if offset >= content.len() {
                        break;
                    }
                }
            }
            AllFilesTransferred::NAME => break,
            other => panic!("unexpected {other} before the files were transferred"),
        }
    }
    for (name, _) in files {
        if name.ends_with("/client_lua/init.lua") {
            let run = RunScript {
                name: name.to_string(),
            };
            conn.send(RunScript::NAME, &encoded(&run));
        }
    }
    requested
}

/// A server for `n` connections, each run by `serve(conn)` on its own
/// thread; the handle gives their results in accept order.
pub fn fake_server_many<T: Send + 'static>(
    n: usize,
    serve: impl Fn(Conn) -> T + Send + Sync + 'static,
) -> (String, JoinHandle<Vec<T>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let address = listener.local_addr().expect("address").to_string();
    let serve = std::sync::Arc::new(serve);
    let handle = std::thread::spawn(move || {
        let mut threads = Vec::new();
        for _ in 0..n {
            let (stream, _) = listener.accept().expect("accept");
            let serve = serve.clone();
            threads.push(std::thread::spawn(move || {
                serve(Conn {
                    stream,
                    reader: PacketReader::default(),
                    writer: PacketWriter::default(),
                    closed: false,
                })
            }));
        }
        threads
            .into_iter()
            .map(|t| t.join().expect("a connection's thread"))
            .collect()
    });
    (address, handle)
}
