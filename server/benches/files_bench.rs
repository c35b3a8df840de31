//! File transfer benchmark: the real server (release `network` and
//! `client_file`) sending a module's 1,000 client files, 50 MiB in total, to
//! a client that verifies every hash and keeps every file, against a raw
//! TCP transfer of the same bytes in this process, hashed and kept per file
//! the same way (and, for comparison with earlier figures, hashed only);
//! the server's CPU per transfer against the raw sender thread's; then a
//! warm-cache reconnect. Prints a table.
//!
//! Run: `cargo bench -p buildat-server --bench files_bench`

mod support;

use buildat_client_file_api::{
    AnnounceFile, ContentHash, FileContent, FileContentRef, RequestFile,
    TellAfterAllFilesTransferred,
};
use buildat_format::Packet;
use std::collections::HashMap;
use std::io::{BufRead, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use buildat_format::{FrameDecoder, PacketWriter, Received, ReceiverPacketTypes};
use sha2::{Digest, Sha256};
use support::{Server, repo};

const FILES: usize = 1_000;
const TOTAL: usize = 50 << 20;
/// First connects measured (the medians are shown; CPU is summed over
/// them, as `/proc` counts it in 10 ms ticks).
const RUNS: usize = 5;

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
                    eprintln!(
                        "requests sent at {:.1} ms",
                        started.elapsed().as_secs_f64() * 1000.0
                    );
                }
                FileContent::NAME => {
                    let piece = FileContentRef::decode(data).expect("content");
                    received += piece.data.len() as u64;
                    let (hasher, bytes) =
                        partial.entry(piece.name.to_string()).or_insert_with(|| {
                            (Sha256::new(), Vec::with_capacity(piece.size as usize))
                        });
                    hasher.update(piece.data);
                    bytes.extend_from_slice(piece.data);
                    if bytes.len() as u64 == piece.size {
                        let (hasher, bytes) = partial.remove(piece.name).unwrap_or_default();
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

/// What a raw receiver does with the bytes besides hashing them.
#[derive(Clone, Copy, PartialEq)]
enum Keep {
    /// Nothing: the bytes are hashed and dropped.
    Nothing,
    /// Each file's bytes are copied into a buffer of its own, as a client
    /// that keeps its files does.
    EachFile,
}

/// One raw transfer: seconds until every byte arrived and was hashed
/// (and kept), and the CPU seconds the sending process used.
struct Raw {
    seconds: f64,
    sender_cpu: f64,
}

/// Set in the environment of the raw sender: this binary run again as a
/// process of its own, as the server is, so neither floor nor server
/// shares the receiver's process.
const RAW_SENDER: &str = "FILES_BENCH_RAW_SENDER";

/// The CPU seconds this process has used (user and system).
fn process_cpu_seconds() -> f64 {
    // SAFETY: `getrusage` fills the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
        return 0.0;
    }
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

/// The raw sender's process: listens, prints its port, sends the files'
/// bytes in one write to the first connection, prints the CPU it used
/// sending them.
fn raw_sender() {
    let payload: Vec<u8> = (0..FILES).map(file_bytes).collect::<Vec<_>>().concat();
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    println!("{}", listener.local_addr().expect("address").port());
    let (mut stream, _) = listener.accept().expect("accept");
    let before = process_cpu_seconds();
    stream.write_all(&payload).expect("send");
    println!("{}", process_cpu_seconds() - before);
}

/// The raw floor: the same bytes over one TCP connection from a process
/// of their own, hashed on arrival as the client does (and kept per file,
/// with [`Keep::EachFile`]).
fn raw_transfer(sizes: &[usize], keep: Keep) -> Raw {
    let mut sender = std::process::Command::new(std::env::current_exe().expect("this binary"))
        .env(RAW_SENDER, "1")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("the raw sender starts");
    let mut lines = std::io::BufReader::new(sender.stdout.take().expect("piped")).lines();
    let mut line = || lines.next().expect("a line").expect("read");
    let port: u16 = line().trim().parse().expect("a port");
    let total: usize = sizes.iter().sum();
    let started = Instant::now();
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    let mut buffer = vec![0u8; 256 * 1024];
    let mut got = 0;
    let mut hasher = Sha256::new();
    let mut kept: Vec<Vec<u8>> = Vec::new();
    let mut current: Vec<u8> = Vec::new();
    while got < total {
        let read = stream.read(&mut buffer).expect("read");
        assert!(read > 0);
        let mut bytes = &buffer[..read];
        hasher.update(bytes);
        got += read;
        while keep == Keep::EachFile && !bytes.is_empty() {
            let Some(&size) = sizes.get(kept.len()) else {
                break;
            };
            if current.capacity() == 0 {
                current.reserve_exact(size);
            }
            let take = (size - current.len()).min(bytes.len());
            current.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
            if current.len() == size {
                kept.push(std::mem::take(&mut current));
            }
        }
    }
    let _ = hasher.finalize();
    let seconds = started.elapsed().as_secs_f64();
    let sender_cpu = line().trim().parse().expect("CPU seconds");
    let _ = sender.wait();
    drop(kept);
    Raw {
        seconds,
        sender_cpu,
    }
}

/// Gives freed memory back to the system, so each transfer that keeps its
/// files starts as a client's first connect does: on pages never touched
/// (not on the pages the previous run freed).
fn fresh_heap() {
    // SAFETY: no argument is a pointer; glibc's `malloc_trim` only
    // releases free memory.
    unsafe { libc::malloc_trim(0) };
}

/// The median of `values`.
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    if std::env::var_os(RAW_SENDER).is_some() {
        return raw_sender();
    }
    let files: Vec<Vec<u8>> = (0..FILES).map(file_bytes).collect();
    let sizes: Vec<usize> = files.iter().map(Vec::len).collect();
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
    let (mut raw_hashed, mut raw_kept) = (Vec::new(), Vec::new());
    let (mut server_cpu, mut sender_cpu) = (0.0, 0.0);
    let mut warm = (0.0, 0);
    for _ in 0..RUNS {
        let mut cache = HashMap::new();
        fresh_heap();
        let before = buildat_harness::proc_stats::sample(server.pid()).expect("server alive");
        let (seconds, bytes) = sync(&server.address, &mut cache);
        let after = buildat_harness::proc_stats::sample(server.pid()).expect("server alive");
        server_cpu += after.cpu_seconds - before.cpu_seconds;
        assert_eq!(bytes as usize, files.iter().map(Vec::len).sum::<usize>());
        cold_runs.push(seconds);
        warm = sync(&server.address, &mut cache);
        drop(cache);
        fresh_heap();
        raw_hashed.push(raw_transfer(&sizes, Keep::Nothing).seconds);
        fresh_heap();
        let kept = raw_transfer(&sizes, Keep::EachFile);
        sender_cpu += kept.sender_cpu;
        raw_kept.push(kept.seconds);
    }
    let cold = median(cold_runs);
    let (hashed, kept) = (median(raw_hashed), median(raw_kept));
    let runs = RUNS as f64;
    println!();
    println!(
        "{:<58} {:>10} {:>10} {:>7}  goal",
        "measure", "buildat", "raw", "ratio"
    );
    println!(
        "{:<58} {:>10.1} {:>10.1} {:>6.2}x  <= 1.3x raw",
        "first connect, 1000 files / 50 MiB, hashed and kept (ms)",
        cold * 1000.0,
        kept * 1000.0,
        cold / kept
    );
    println!(
        "{:<58} {:>10.1} {:>10.1} {:>6.2}x  -",
        "first connect against raw hashed only, kept nothing (ms)",
        cold * 1000.0,
        hashed * 1000.0,
        cold / hashed
    );
    println!(
        "{:<58} {:>10.1} {:>10.1} {:>6.2}x  -",
        "sending CPU per first connect: server / raw sender (ms)",
        server_cpu / runs * 1000.0,
        sender_cpu / runs * 1000.0,
        server_cpu / sender_cpu.max(1e-9)
    );
    println!(
        "{:<58} {:>10.1} {:>10} {:>7}  -",
        "warm reconnect (ms)",
        warm.0 * 1000.0,
        "-",
        "-"
    );
    println!(
        "{:<58} {:>10} {:>10} {:>7}  0",
        "warm reconnect: content bytes sent", warm.1, "-", "-"
    );
}

/// A packet's payload, by its definition (the harness's one helper).
#[allow(unused_imports)]
pub use buildat_harness::raw_client::encoded;
