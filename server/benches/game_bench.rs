//! Game and world stream benchmark with the real server binary (release
//! modules) over a pregenerated world:
//! - one client joining with view radius 6: time to the first chunk and to
//!   the full radius, chunks/s and bytes/s, against the floor (median of 3)
//!   of encoding the same number of chunks (voxel blob) and writing them
//!   framed over raw TCP in this process;
//! - 100 bot clients walking for 60 s: aggregate chunks/s, server CPU and RSS
//!   per client, p50/p99 of a ping round trip.
//!
//! Prints a table; asserts nothing.
//!
//! Run: `cargo bench -p buildat-server --bench game_bench`
//! (`GAME_BENCH_BOTS` and `GAME_BENCH_SECONDS` override 100 and 60.)

mod support;

use buildat_format::Packet;
use buildat_main_api::{Join, Move, Ping, Pong, Spawn};
use buildat_voxelworld_api::stream::{Ack, Chunk};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use buildat_format::{FrameDecoder, PacketWriter, Received, ReceiverPacketTypes, encode_voxels};
use support::{Server, build_dir, repo};

const RADIUS: i32 = 6;

fn modules() -> Vec<(&'static str, std::path::PathBuf)> {
    [
        "__loader",
        "network",
        "client_file",
        "voxelworld",
        "worldgen",
        "main",
    ]
    .into_iter()
    .map(|name| (name, repo().join("modules").join(name)))
    .collect()
}

/// A minimal bot speaking the game protocol over a blocking socket.
struct Bot {
    stream: TcpStream,
    frames: FrameDecoder,
    types: ReceiverPacketTypes,
    writer: PacketWriter,
    position: [f64; 3],
    spawned: bool,
    chunks: u64,
    bytes: u64,
    first_chunk: Option<Instant>,
    pongs: Vec<Instant>,
}

impl Bot {
    fn join(address: &str, name: &str) -> Self {
        let stream = TcpStream::connect(address).expect("connect");
        stream.set_nodelay(true).expect("nodelay");
        let mut bot = Self {
            stream,
            frames: FrameDecoder::default(),
            types: ReceiverPacketTypes::default(),
            writer: PacketWriter::default(),
            position: [0.0; 3],
            spawned: false,
            chunks: 0,
            bytes: 0,
            first_chunk: None,
            pongs: Vec::new(),
        };
        bot.send(&Join {
            name: name.to_string(),
        });
        bot
    }

    fn send<P: Packet>(&mut self, packet: &P) {
        let data = packet.encode().expect("encode");
        self.writer.write(P::NAME, &data).expect("encode");
        let _ = self.stream.write_all(&self.writer.take());
    }

    /// Reads what is there (waiting up to `wait`), acking every chunk.
    fn poll(&mut self, wait: Duration) {
        self.stream
            .set_read_timeout(Some(wait.max(Duration::from_millis(1))))
            .expect("timeout");
        let mut buffer = [0u8; 64 * 1024];
        match self.stream.read(&mut buffer) {
            Ok(0) => panic!("server closed"),
            Ok(read) => self.frames.push(&buffer[..read]),
            Err(_) => return,
        }
        let mut acks = 0u32;
        while let Some((ty, data)) = self.frames.next_frame_ref().expect("frame") {
            let Received::Packet { name, data, .. } = self.types.receive(ty, data).expect("packet")
            else {
                continue;
            };
            match name {
                Chunk::NAME => {
                    self.chunks += 1;
                    self.bytes += data.len() as u64 + 6;
                    self.first_chunk.get_or_insert_with(Instant::now);
                    acks += 1;
                }
                Spawn::NAME => {
                    self.position = Spawn::decode(data).expect("spawn").position;
                    self.spawned = true;
                }
                Pong::NAME => self.pongs.push(Instant::now()),
                _ => {}
            }
        }
        if acks > 0 {
            self.send(&Ack { chunks: acks });
        }
    }

    fn step(&mut self, dx: f64, dz: f64) {
        self.position[0] += dx;
        self.position[2] += dz;
        self.send(&Move {
            position: self.position,
        });
    }
}

/// The floor: the same number of chunks encoded as voxel blobs and written
/// framed over raw TCP to a reader in this process. Returns seconds.
fn floor(chunks: usize) -> f64 {
    use buildat_worldgen_terrain as terrain;
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let address = listener.local_addr().expect("address");
    let reader = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().expect("accept");
        let mut frames = FrameDecoder::default();
        let mut buffer = [0u8; 64 * 1024];
        let mut seen = 0;
        while seen < chunks {
            let read = stream.read(&mut buffer).expect("read");
            frames.push(&buffer[..read]);
            while let Some(_frame) = frames.next_frame_ref().expect("frame") {
                seen += 1;
            }
        }
    });
    // Terrain is made before the clock starts: the floor is encoding and
    // writing only.
    let side = (chunks as f64).cbrt().ceil() as i32;
    let mut terrain_chunks = Vec::with_capacity(chunks);
    'outer: for x in 0..side {
        for y in -2..side - 2 {
            for z in 0..side {
                if terrain_chunks.len() == chunks {
                    break 'outer;
                }
                terrain_chunks.push(([x, y, z], terrain::generate_chunk(1, [x, y, z])));
            }
        }
    }
    let started = Instant::now();
    let mut stream = TcpStream::connect(address).expect("connect");
    let mut writer = PacketWriter::default();
    for (chunk, voxels) in &terrain_chunks {
        let blob =
            encode_voxels(voxels, |id| terrain::PALETTE.get(id as usize).copied()).expect("encode");
        let data = encoded(&Chunk {
            chunk: *chunk,
            blob,
        });
        writer.write(Chunk::NAME, &data).expect("frame");
    }
    stream.write_all(&writer.take()).expect("send");
    reader.join().expect("reader");
    started.elapsed().as_secs_f64()
}

fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    let ticks: f64 = fields.get(11).and_then(|u| u.parse().ok()).unwrap_or(0.0)
        + fields.get(12).and_then(|s| s.parse().ok()).unwrap_or(0.0);
    ticks / 100.0
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted
        .get(((sorted.len() as f64 - 1.0) * p).round() as usize)
        .copied()
        .unwrap_or(0.0)
}

fn main() {
    let bots: usize = std::env::var("GAME_BENCH_BOTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
    let seconds: u64 = std::env::var("GAME_BENCH_SECONDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(60);
    let world = tempfile::tempdir().expect("temp");
    let world_path = world.path().join("world");
    // Pregenerate the area the bots walk in.
    let module_dir = tempfile::tempdir().expect("temp");
    for (name, from) in modules() {
        support::install(&module_dir.path().join("modules"), name, &from);
    }
    let status = Command::new(env!("CARGO_BIN_EXE_buildat-server"))
        .args([
            "--world",
            &world_path.display().to_string(),
            "--no-default-modules",
        ])
        .args([
            "--modules",
            &module_dir.path().join("modules").display().to_string(),
        ])
        .args([
            "--build-dir",
            &build_dir().display().to_string(),
            "--log-level",
            "warn",
        ])
        .args(["pregen", "--radius", "4", "--height", "4"])
        .stdin(Stdio::null())
        .status()
        .expect("pregen");
    assert!(status.success());
    let world_arg = world_path.display().to_string();
    let radius = format!("voxelworld.view_radius={RADIUS}");
    let server = Server::start(
        &modules(),
        |_| {},
        &[
            "--world",
            &world_arg,
            "--set",
            &radius,
            "--set",
            "network.max_connections=20000",
            "--set",
            "voxelworld.stream_budget=128",
        ],
    );

    // One client, the full radius.
    let wanted = {
        let mut count = 0;
        for dz in -RADIUS..=RADIUS {
            for dy in -RADIUS..=RADIUS {
                for dx in -RADIUS..=RADIUS {
                    count += usize::from(dx * dx + dy * dy + dz * dz <= RADIUS * RADIUS);
                }
            }
        }
        count as u64
    };
    let started = Instant::now();
    let mut bot = Bot::join(&server.address, "solo");
    while bot.chunks < wanted && started.elapsed() < Duration::from_secs(120) {
        bot.poll(Duration::from_millis(50));
    }
    let full = started.elapsed().as_secs_f64();
    let first = bot
        .first_chunk
        .map(|t| t.duration_since(started).as_secs_f64())
        .unwrap_or(f64::NAN);
    let stream_time = full - first;
    let mut floors: Vec<f64> = (0..3).map(|_| floor(bot.chunks as usize)).collect();
    floors.sort_by(f64::total_cmp);
    let floor_time = floors[1];
    let (chunks, bytes) = (bot.chunks, bot.bytes);
    drop(bot);

    // Many bots walking.
    let stop = Arc::new(AtomicBool::new(false));
    let total_chunks = Arc::new(AtomicU64::new(0));
    let rss_before = server.rss_kib();
    let cpu_before = cpu_seconds(server.pid());
    let threads: Vec<_> = (0..bots)
        .map(|index| {
            let (address, stop, total_chunks) =
                (server.address.clone(), stop.clone(), total_chunks.clone());
            std::thread::spawn(move || {
                let mut bot = Bot::join(&address, &format!("bot{index}"));
                let mut pings = Vec::new();
                let mut last_step = Instant::now();
                let mut step = 0u64;
                let mut ping_sent: Option<Instant> = None;
                while !stop.load(Ordering::Relaxed) {
                    bot.poll(Duration::from_millis(20));
                    if let (Some(sent), Some(pong)) = (ping_sent, bot.pongs.pop()) {
                        pings.push(pong.duration_since(sent).as_secs_f64() * 1000.0);
                        ping_sent = None;
                    }
                    if bot.spawned && last_step.elapsed() >= Duration::from_millis(200) {
                        last_step = Instant::now();
                        step += 1;
                        let (dx, dz) = [(2.0, 0.0), (0.0, 2.0), (-2.0, 0.0), (0.0, -2.0)]
                            [(step / 20 % 4) as usize];
                        bot.step(dx, dz);
                        if ping_sent.is_none() && step.is_multiple_of(5) {
                            ping_sent = Some(Instant::now());
                            bot.send(&Ping {
                                data: step.to_le_bytes().to_vec(),
                            });
                        }
                    }
                }
                total_chunks.fetch_add(bot.chunks, Ordering::Relaxed);
                pings
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs(seconds));
    let rss_during = server.rss_kib();
    let cpu_during = cpu_seconds(server.pid()) - cpu_before;
    stop.store(true, Ordering::Relaxed);
    let mut pings: Vec<f64> = threads
        .into_iter()
        .flat_map(|t| t.join().unwrap_or_default())
        .collect();
    pings.sort_by(f64::total_cmp);

    println!();
    println!(
        "{:<52} {:>12} {:>12} {:>7}  goal",
        "measure", "buildat", "floor", "ratio"
    );
    println!(
        "{:<52} {:>12.0} {:>12.0} {:>7.2}  >= 0.5 of floor",
        format!("stream to one client, {chunks} chunks (chunks/s)"),
        chunks as f64 / stream_time,
        chunks as f64 / floor_time,
        floor_time / stream_time
    );
    println!(
        "{:<52} {:>12.1} {:>12.1} {:>7.2}",
        "stream to one client (MB/s)",
        bytes as f64 / stream_time / 1e6,
        bytes as f64 / floor_time / 1e6,
        floor_time / stream_time
    );
    println!(
        "{:<52} {:>12.1}",
        "join to first chunk (ms)",
        first * 1000.0
    );
    println!(
        "{:<52} {:>12.1}",
        format!("join to full radius {RADIUS} (ms)"),
        full * 1000.0
    );
    println!(
        "{:<52} {:>12.0}",
        format!("{bots} bots walking {seconds} s: chunks/s"),
        total_chunks.load(Ordering::Relaxed) as f64 / seconds as f64
    );
    println!(
        "{:<52} {:>12.2}",
        "  ping p50 (ms)",
        percentile(&pings, 0.5)
    );
    println!(
        "{:<52} {:>12.2}",
        "  ping p99 (ms)",
        percentile(&pings, 0.99)
    );
    println!(
        "{:<52} {:>12.1}",
        "  server CPU (% of one core)",
        cpu_during / seconds as f64 * 100.0
    );
    println!(
        "{:<52} {:>12.1}",
        "  server RSS per client (KiB)",
        rss_during.saturating_sub(rss_before) as f64 / bots as f64
    );
}

/// A packet's payload, by its definition (the harness's one helper).
#[allow(unused_imports)]
pub use buildat_harness::raw_client::encoded;
