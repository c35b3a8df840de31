//! File transfer benchmark: the real server (release `network` and
//! `client_file`) sending a module's 1,000 client files, 50 MiB in total, to
//! a client that verifies every hash, against a raw TCP transfer of the same
//! bytes in this process; then a warm-cache reconnect. Prints a table.
//!
//! Run: `cargo bench -p buildat-server --bench files_bench`

mod support;

use buildat_client_file_api::{
    AnnounceFile, ContentHash, FileContent, RequestFile, TellAfterAllFilesTransferred,
};
use buildat_format::Packet;
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use buildat_format::{FrameDecoder, PacketWriter, Received, ReceiverPacketTypes};
use sha2::{Digest, Sha256};
use support::{Server, repo};

const FILES: usize = 1_000;
const TOTAL: usize = 50 << 20;

fn file_bytes(index: usize) -> Vec<u8> {
    let size = TOTAL / FILES;
    (0..size)
        .map(|i| ((i as u64 * 2_654_435_761 + index as u64 * 40_503) >> 7) as u8)
        .collect()
}

/// One client session: returns (seconds until every file verified, content
/// bytes received). Frames are decoded in place (no copy per packet) and
/// each file is hashed as its pieces arrive.
fn sync(address: &str, cache: &mut HashMap<ContentHash, Vec<u8>>) -> (f64, u64) {
    let started = Instant::now();
    let mut stream = TcpStream::connect(address).expect("connect");
    stream.set_nodelay(true).expect("nodelay");
    let mut frames = FrameDecoder::default();
    let mut types = ReceiverPacketTypes::default();
    let mut writer = PacketWriter::default();
    let mut announced: HashMap<String, ContentHash> = HashMap::new();
    let mut partial: HashMap<String, (Sha256, Vec<u8>)> = HashMap::new();
    let mut told = false;
    let mut received = 0u64;
    let mut buffer = vec![0u8; 256 * 1024];
    loop {
        while let Some((ty, data)) = frames.next_frame_ref().expect("frame") {
            let Received::Packet { name, data, .. } = types.receive(ty, data).expect("packet")
            else {
                continue;
            };
            match name {
                AnnounceFile::NAME => {
                    let announce = AnnounceFile::decode(data).expect("announce");
                    announced.insert(announce.name, announce.hash);
                }
                TellAfterAllFilesTransferred::NAME => {
                    told = true;
                    for (name, hash) in &announced {
                        if !cache.contains_key(hash) {
                            let request = RequestFile {
                                name: name.clone(),
                                hash: *hash,
                            };
                            writer
                                .write(RequestFile::NAME, &encoded(&request))
                                .expect("encode");
                        }
                    }
                    stream.write_all(&writer.take()).expect("request");
                }
                FileContent::NAME => {
                    let piece = FileContent::decode(data).expect("content");
                    received += piece.data.len() as u64;
                    let (hasher, bytes) = partial
                        .entry(piece.name.clone())
                        .or_insert_with(|| (Sha256::new(), Vec::new()));
                    hasher.update(&piece.data);
                    if bytes.is_empty() {
                        *bytes = piece.data;
                    } else {
                        bytes.extend_from_slice(&piece.data);
                    }
                    if bytes.len() as u64 == piece.size {
                        let (hasher, bytes) = partial.remove(&piece.name).unwrap_or_default();
                        let hash: ContentHash = hasher.finalize().into();
                        assert_eq!(hash, piece.hash);
                        cache.insert(hash, bytes);
                    }
                }
                _ => {}
            }
        }
        if told && announced.values().all(|h| cache.contains_key(h)) {
            return (started.elapsed().as_secs_f64(), received);
        }
        let read = stream.read(&mut buffer).expect("read");
        assert!(read > 0, "server closed");
        frames.push(&buffer[..read]);
    }
}

/// The raw floor: the same bytes over one TCP connection in this process,
/// hashed on arrival as the client does.
fn raw_transfer(files: &[Vec<u8>]) -> f64 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let address = listener.local_addr().expect("address");
    let payload: Vec<u8> = files.concat();
    let total = payload.len();
    let sender = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().expect("accept");
        stream.write_all(&payload).expect("send");
    });
    let started = Instant::now();
    let mut stream = TcpStream::connect(address).expect("connect");
    let mut buffer = vec![0u8; 256 * 1024];
    let mut got = 0;
    let mut hasher = Sha256::new();
    while got < total {
        let read = stream.read(&mut buffer).expect("read");
        assert!(read > 0);
        hasher.update(&buffer[..read]);
        got += read;
    }
    let _ = hasher.finalize();
    let elapsed = started.elapsed().as_secs_f64();
    sender.join().expect("sender");
    elapsed
}

fn main() {
    let files: Vec<Vec<u8>> = (0..FILES).map(file_bytes).collect();
    let server = Server::start(
        &[
            ("__loader", repo().join("modules/__loader")),
            ("network", repo().join("modules/network")),
            ("client_file", repo().join("modules/client_file")),
        ],
        |modules| {
            let data = modules.join("assets/client_data");
            std::fs::create_dir_all(&data).expect("assets");
            std::fs::write(
                modules.join("assets/meta.json"),
                r#"{"disable_rust": true}"#,
            )
            .expect("meta");
            for (index, bytes) in files.iter().enumerate() {
                std::fs::write(data.join(format!("file{index:04}.bin")), bytes).expect("file");
            }
        },
        &[],
    );
    // client_file registers files at start; give it a moment after listening.
    std::thread::sleep(Duration::from_millis(500));
    let mut cold_runs = Vec::new();
    let mut raw_runs = Vec::new();
    let mut warm = (0.0, 0);
    for _ in 0..3 {
        let mut cache = HashMap::new();
        let (seconds, bytes) = sync(&server.address, &mut cache);
        assert_eq!(bytes as usize, files.iter().map(Vec::len).sum::<usize>());
        cold_runs.push(seconds);
        raw_runs.push(raw_transfer(&files));
        warm = sync(&server.address, &mut cache);
    }
    cold_runs.sort_by(f64::total_cmp);
    raw_runs.sort_by(f64::total_cmp);
    let (cold, raw) = (cold_runs[1], raw_runs[1]);
    println!();
    println!(
        "{:<46} {:>10} {:>10} {:>7}  goal",
        "measure", "buildat", "raw", "ratio"
    );
    println!(
        "{:<46} {:>10.1} {:>10.1} {:>6.2}x  <= 1.5x raw",
        "first connect, 1000 files / 50 MiB (ms)",
        cold * 1000.0,
        raw * 1000.0,
        cold / raw
    );
    println!(
        "{:<46} {:>10.1} {:>10} {:>7}  -",
        "warm reconnect (ms)",
        warm.0 * 1000.0,
        "-",
        "-"
    );
    println!(
        "{:<46} {:>10} {:>10} {:>7}  0",
        "warm reconnect: content bytes sent", warm.1, "-", "-"
    );
}

/// A packet's payload, by its definition.
#[allow(dead_code)]
pub fn encoded<P: Packet>(packet: &P) -> Vec<u8> {
    packet.encode().expect("a test packet encodes")
}
