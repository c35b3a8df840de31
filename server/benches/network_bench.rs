//! Network benchmark: the real server binary with the `network` module and
//! the `net_probe` subscriber (release builds), against raw tokio baselines
//! run in this same process on loopback:
//! - bulk: one client sending 64 KiB packets, until the subscriber module has
//!   counted them all, vs a raw TCP copy of the same bytes;
//! - small packets: 100 clients sending 64-byte packets, until the subscriber
//!   module has counted them all, vs a raw server that decodes the same
//!   frames with the same codec and counts them;
//! - memory per idle connection: server RSS growth over 1,000 connections.
//!
//! Prints a table; asserts nothing.
//!
//! Run: `cargo bench -p buildat-server --bench network_bench`

mod support;

use support::{Server, repo};

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use buildat_format::{FrameDecoder, Packet, PacketReader, PacketWriter};
use buildat_test_net_probe_api::{CountPacket, CountQuery, CountReply};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const BULK_PACKETS: u64 = 2_000;
const BULK_SIZE: usize = 64 * 1024;
const SMALL_CLIENTS: u64 = 100;
const SMALL_PER_CLIENT: u64 = 5_000;
const SMALL_SIZE: usize = 64;
const IDLE_CONNECTIONS: usize = 1_000;

/// Asks net_probe how many `test:count` packets it has counted.
async fn query_count(
    stream: &mut TcpStream,
    writer: &mut PacketWriter,
    reader: &mut PacketReader,
) -> u64 {
    writer
        .write(CountQuery::NAME, &CountQuery.encode().expect("encode"))
        .expect("encode");
    stream.write_all(&writer.take()).await.expect("query");
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        if let Some(packet) = reader.try_next_packet().expect("reply") {
            if packet.name == CountReply::NAME {
                return CountReply::decode(&packet.data).expect("a count").count;
            }
            continue;
        }
        let read = stream.read(&mut buffer).await.expect("read reply");
        assert!(read > 0, "server closed");
        reader.push(&buffer[..read]);
    }
}

async fn wait_count(address: &str, target: u64) {
    let mut stream = TcpStream::connect(address).await.expect("connect");
    let mut writer = PacketWriter::default();
    let mut reader = PacketReader::default();
    while query_count(&mut stream, &mut writer, &mut reader).await < target {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// Frames `count` packets of `size` bytes named `test:count` into one buffer.
fn frames(count: u64, size: usize) -> Vec<u8> {
    let mut writer = PacketWriter::default();
    let data = CountPacket::padded(size).encode().expect("encode");
    for _ in 0..count {
        writer.write(CountPacket::NAME, &data).expect("encode");
    }
    writer.take()
}

async fn send_all(address: String, bytes: Arc<Vec<u8>>) -> TcpStream {
    let mut stream = TcpStream::connect(&address).await.expect("connect");
    stream.set_nodelay(true).expect("nodelay");
    for chunk in bytes.chunks(256 * 1024) {
        stream.write_all(chunk).await.expect("send");
    }
    stream
}

/// Our path: clients -> server -> subscriber module. Returns seconds.
async fn ours(address: &str, clients: u64, per_client: u64, size: usize, baseline: u64) -> f64 {
    let bytes = Arc::new(frames(per_client, size));
    let started = Instant::now();
    let senders: Vec<_> = (0..clients)
        .map(|_| tokio::spawn(send_all(address.to_string(), bytes.clone())))
        .collect();
    wait_count(address, baseline + clients * per_client).await;
    let elapsed = started.elapsed().as_secs_f64();
    for sender in senders {
        drop(sender.await);
    }
    elapsed
}

/// Raw floor: a tokio server in this process that decodes the same frames
/// with the same codec and counts them. Returns seconds.
async fn raw(clients: u64, per_client: u64, size: usize) -> f64 {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("address").to_string();
    let counted = Arc::new(AtomicU64::new(0));
    let total = clients * per_client;
    let acceptor = {
        let counted = counted.clone();
        tokio::spawn(async move {
            for _ in 0..clients {
                let (mut stream, _) = listener.accept().await.expect("accept");
                let counted = counted.clone();
                tokio::spawn(async move {
                    let mut decoder = FrameDecoder::default();
                    let mut buffer = vec![0u8; 64 * 1024];
                    loop {
                        let read = stream.read(&mut buffer).await.unwrap_or(0);
                        if read == 0 {
                            return;
                        }
                        decoder.push(&buffer[..read]);
                        while let Ok(Some(_)) = decoder.next_frame_ref() {
                            counted.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                });
            }
        })
    };
    let bytes = Arc::new(frames(per_client, size));
    let started = Instant::now();
    let senders: Vec<_> = (0..clients)
        .map(|_| tokio::spawn(send_all(address.clone(), bytes.clone())))
        .collect();
    // Definitions are frames too: each client sends one more.
    while counted.load(Ordering::Relaxed) < total + clients {
        tokio::task::yield_now().await;
    }
    let elapsed = started.elapsed().as_secs_f64();
    for sender in senders {
        drop(sender.await);
    }
    acceptor.abort();
    elapsed
}

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn main() {
    let server = Server::start(
        &[
            ("__loader", repo().join("modules/__loader")),
            ("network", repo().join("modules/network")),
            ("net_probe", repo().join("tests/modules/net_probe")),
        ],
        |_| {},
        // The per-peer input budget is off: this measures the transport.
        &[
            "--set",
            "network.max_connections=20000",
            "--set",
            "network.max_packets_per_second=0",
        ],
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let address = server.address.clone();
    let mut counted = 0u64;
    let mut rows: Vec<(String, String, String, String, &str)> = Vec::new();

    // Memory per idle connection, first, on the fresh server (later
    // phases leave freed memory the allocator would reuse).
    std::thread::sleep(Duration::from_millis(500));
    let before = server.rss_kib();
    let idle: Vec<std::net::TcpStream> = (0..IDLE_CONNECTIONS)
        .map(|_| std::net::TcpStream::connect(&address).expect("connect"))
        .collect();
    std::thread::sleep(Duration::from_secs(2));
    let after = server.rss_kib();
    drop(idle);
    let per = (after.saturating_sub(before)) as f64 / IDLE_CONNECTIONS as f64;
    rows.push((
        format!("RSS per idle connection, {IDLE_CONNECTIONS} (KiB)"),
        format!("{per:.1}"),
        "-".into(),
        "-".into(),
        "<= 32 KiB",
    ));

    // Bulk.
    let bulk_bytes = (BULK_PACKETS * BULK_SIZE as u64) as f64;
    let (mut ours_s, mut raw_s) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        ours_s.push(runtime.block_on(ours(&address, 1, BULK_PACKETS, BULK_SIZE, counted)));
        counted += BULK_PACKETS;
        raw_s.push(runtime.block_on(raw(1, BULK_PACKETS, BULK_SIZE)));
    }
    let (o, r) = (
        bulk_bytes / median(ours_s) / 1e6,
        bulk_bytes / median(raw_s) / 1e6,
    );
    rows.push((
        "bulk, 1 client, 64 KiB packets (MB/s)".into(),
        format!("{o:.0}"),
        format!("{r:.0}"),
        format!("{:.2}", o / r),
        ">= 0.6 of raw",
    ));

    // Small packets from 100 clients.
    let total = (SMALL_CLIENTS * SMALL_PER_CLIENT) as f64;
    let (mut ours_s, mut raw_s) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        ours_s.push(runtime.block_on(ours(
            &address,
            SMALL_CLIENTS,
            SMALL_PER_CLIENT,
            SMALL_SIZE,
            counted,
        )));
        counted += SMALL_CLIENTS * SMALL_PER_CLIENT;
        raw_s.push(runtime.block_on(raw(SMALL_CLIENTS, SMALL_PER_CLIENT, SMALL_SIZE)));
    }
    let (o, r) = (total / median(ours_s), total / median(raw_s));
    rows.push((
        "small, 100 clients, 64 B (packets/s)".into(),
        format!("{o:.0}"),
        format!("{r:.0}"),
        format!("{:.2}", o / r),
        ">= 300k/s",
    ));

    println!();
    println!(
        "{:<42} {:>12} {:>12} {:>7}  goal",
        "measure", "buildat", "raw", "ratio"
    );
    for (name, o, r, ratio, goal) in rows {
        println!("{name:<42} {o:>12} {r:>12} {ratio:>7}  {goal}");
    }
}
