//! End-to-end tests of liquids through the real server (the survival game
//! with `liquid`) and a wire client holding its part of the world: a
//! trench dug in the terrain beside a poured source stays dry behind its
//! bank; the bank dug, the water flows into it and stops (levels 7 to 4,
//! as the client is streamed them); a bucket takes the source back (the
//! bucket full in the census) and the flow dries up.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use buildat_format::{Packet, decode_voxels};
use buildat_harness::raw_client::RawClient;
use buildat_main_api::{Dig, Join, Refused, Spawn, Use};
use buildat_voxel::VoxelInstance;
use buildat_voxel::geometry::{self, Pos};
use buildat_voxelworld_api::stream::{Ack, Chunk, Registry, UnloadChunk, VoxelUpdates};

use crate::common::{Scratch, Server, console, start_game};

const SETTINGS: [&str; 3] = [
    "voxelworld.view_radius=1",
    "main.default_privileges=interact,shout,fly,fast,creative",
    "liquid.step_seconds=0.1",
];

/// A player as the test sees the world: the chunks it holds, with the
/// game bits of every voxel the stream changed.
struct Diver {
    client: RawClient,
    position: [f64; 3],
    names: Vec<String>,
    solid: Vec<bool>,
    chunks: HashMap<Pos, Vec<u32>>,
    refused: Vec<String>,
}

impl Diver {
    fn join(address: &str, name: &str) -> Self {
        let mut client = RawClient::connect(address).expect("connect");
        client
            .send_packet(&Join {
                name: name.to_string(),
            })
            .expect("join");
        let mut diver = Self {
            client,
            position: [f64::NAN; 3],
            names: Vec::new(),
            solid: Vec::new(),
            chunks: HashMap::new(),
            refused: Vec::new(),
        };
        assert!(
            diver.pump_until(Duration::from_secs(120), |d| !d.position[0].is_nan()),
            "spawned"
        );
        diver
    }

    /// Handles packets until `done` or the timeout; whether `done`.
    fn pump_until(&mut self, timeout: Duration, mut done: impl FnMut(&Self) -> bool) -> bool {
        let deadline = Instant::now() + timeout;
        while !done(self) {
            let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                return false;
            };
            let Some(packet) = self
                .client
                .recv(left.min(Duration::from_millis(100)))
                .expect("connected")
            else {
                continue;
            };
            match packet.name.as_str() {
                Spawn::NAME => self.position = Spawn::decode(&packet.data).unwrap().position,
                Registry::NAME => {
                    let mut registry = Registry::decode(&packet.data).unwrap().voxels;
                    registry.reindex();
                    let definitions = registry.definitions();
                    self.names = definitions.iter().map(|d| d.name.canonical()).collect();
                    self.solid = definitions.iter().map(|d| d.physically_solid).collect();
                }
                Chunk::NAME => {
                    let chunk = Chunk::decode(&packet.data).unwrap();
                    let names = &self.names;
                    let voxels = decode_voxels(
                        &chunk.blob,
                        |n| names.iter().position(|x| x == n).map(|i| i as u32),
                        1,
                    )
                    .unwrap()
                    .voxels;
                    self.chunks.insert(chunk.chunk, voxels);
                    self.client.send_packet(&Ack { chunks: 1 }).unwrap();
                }
                UnloadChunk::NAME => {
                    let unload = UnloadChunk::decode(&packet.data).unwrap();
                    self.chunks.remove(&unload.chunk);
                }
                VoxelUpdates::NAME => {
                    let updates = VoxelUpdates::decode(&packet.data).unwrap();
                    if let Some(voxels) = self.chunks.get_mut(&updates.chunk) {
                        for (index, value) in updates.changes {
                            voxels[usize::from(index)] = value;
                        }
                    }
                }
                Refused::NAME => self
                    .refused
                    .push(Refused::decode(&packet.data).unwrap().reason),
                _ => {}
            }
        }
        true
    }

    fn voxel(&self, pos: Pos) -> Option<u32> {
        let chunk = self.chunks.get(&geometry::chunk_of_voxel(pos))?;
        chunk.get(geometry::index_in_chunk(pos)).copied()
    }

    /// The block name and level (game bits) at `pos`.
    fn at(&self, pos: Pos) -> Option<(String, u8)> {
        let instance = VoxelInstance(self.voxel(pos)?);
        let name = self.names.get(instance.type_id() as usize)?;
        Some((name.clone(), instance.game_bits()))
    }

    fn is_solid(&self, pos: Pos) -> bool {
        self.voxel(pos)
            .and_then(|v| self.solid.get(VoxelInstance(v).type_id() as usize))
            .copied()
            .unwrap_or(false)
    }

    fn is_air(&self, pos: Pos) -> bool {
        self.at(pos).is_some_and(|(name, _)| name == "air")
    }

    fn feet(&self) -> Pos {
        self.position.map(|p| p.floor() as i32)
    }

    fn eyes(&self) -> [f64; 3] {
        [self.position[0], self.position[1] + 1.6, self.position[2]]
    }

    fn near(&self, pos: Pos) -> bool {
        let eyes = self.eyes();
        let d: f64 = (0..3)
            .map(|i| (f64::from(pos[i]) + 0.5 - eyes[i]).powi(2))
            .sum();
        d.sqrt() <= 7.0
    }

    /// Waits until `pos` holds `name` at `level` (as streamed).
    fn wait_for(&mut self, pos: Pos, name: &str, level: u8, timeout: Duration) -> bool {
        let want = (name.to_string(), level);
        self.pump_until(timeout, |d| d.at(pos).as_ref() == Some(&want))
    }
}

fn add(a: Pos, b: Pos) -> Pos {
    [a[0] + b[0], a[1] + b[1], a[2] + b[2]]
}

fn times(d: Pos, n: i32) -> Pos {
    d.map(|v| v * n)
}

/// A straight trench site in the terrain near the player: `t[0]` (a wall),
/// `t[1]` (where the source goes), `t[2]` (the bank), `t[3..=5]` (the
/// trench), `t[6]` (its end): all solid voxels of one flat surface, solid
/// under them and beside `t[1..=5]`, air over `t[1..=5]`, within reach.
fn find_site(diver: &Diver) -> Option<[Pos; 7]> {
    let feet = diver.feet();
    let mut sites = Vec::new();
    for dx in -3..=3 {
        for dz in -3..=3 {
            for dy in -4..=0 {
                for dir in [[1, 0, 0], [-1, 0, 0], [0, 0, 1], [0, 0, -1]] {
                    let origin = add(feet, [dx, dy, dz]);
                    let t: [Pos; 7] = std::array::from_fn(|i| add(origin, times(dir, i as i32)));
                    let side = [dir[2], 0, dir[0]];
                    let ok = t.iter().all(|p| diver.is_solid(*p))
                        && t.iter().all(|p| diver.is_solid(add(*p, [0, -1, 0])))
                        && t[1..=5].iter().all(|p| {
                            diver.is_solid(add(*p, side))
                                && diver.is_solid(add(*p, times(side, -1)))
                                && diver.is_air(add(*p, [0, 1, 0]))
                                && diver.near(*p)
                        });
                    if ok {
                        let eyes = diver.eyes();
                        let d = (0..3)
                            .map(|i| (f64::from(t[3][i]) - eyes[i]).powi(2))
                            .sum::<f64>();
                        sites.push((d, t));
                    }
                }
            }
        }
    }
    sites.sort_by(|a, b| a.0.total_cmp(&b.0));
    sites.first().map(|(_, t)| *t)
}

/// Gives on the console, again while the item is not known yet.
fn give(server: &mut Server, line: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let answer = console(server, line, "diver");
        if answer.contains("gave ") {
            return;
        }
        assert!(Instant::now() < deadline, "{answer}\n{}", server.output());
        std::thread::sleep(Duration::from_millis(500));
    }
}

#[test]
fn a_dug_bank_lets_a_poured_source_flow_until_it_stops_and_a_bucket_takes_it_back() {
    let scratch = Scratch::new();
    scratch.add_survival_game();
    scratch.add_modules(&["liquid"]);
    let (mut server, address) = start_game(&scratch, &SETTINGS);
    let mut diver = Diver::join(&address, "diver");
    let chunk = geometry::chunk_of_voxel(diver.feet());
    diver.pump_until(Duration::from_secs(120), |d| {
        (-1..=1).all(|x| (-1..=1).all(|z| d.chunks.contains_key(&add(chunk, [x, 0, z]))))
            && d.chunks.contains_key(&add(chunk, [0, -1, 0]))
    });
    let t = find_site(&diver).unwrap_or_else(|| {
        panic!(
            "no flat ground for a trench near {:?} (the test's terrain)",
            diver.feet()
        )
    });
    give(&mut server, "give diver bucket_water");
    let seconds = Duration::from_secs(10);

    // Dig where the source goes and the trench behind the bank.
    for i in [1, 3, 4, 5] {
        diver.client.send_packet(&Dig { voxel: t[i] }).unwrap();
        assert!(
            diver.pump_until(seconds, |d| d.is_air(t[i])),
            "dug {:?}: refused {:?}",
            t[i],
            diver.refused
        );
    }
    // Pour the bucket where the source goes.
    diver.client.send_packet(&Use { voxel: t[1] }).unwrap();
    assert!(
        diver.wait_for(t[1], "water", 0, seconds),
        "poured: {:?}, refused {:?}\n{}",
        diver.at(t[1]),
        diver.refused,
        server.output()
    );
    // The bank holds: nothing flows into the trench.
    diver.pump_until(Duration::from_millis(1500), |_| false);
    for i in 3..=5 {
        assert!(diver.is_air(t[i]), "{:?} behind the bank", diver.at(t[i]));
    }

    // The bank dug: the water flows in, 7 beside the source, one less a
    // voxel, and stops at the trench's end.
    diver.client.send_packet(&Dig { voxel: t[2] }).unwrap();
    for (i, level) in [(2, 7), (3, 6), (4, 5), (5, 4)] {
        assert!(
            diver.wait_for(t[i], "water_flowing", level, seconds),
            "{:?} at {:?}; refused {:?}\n{}",
            diver.at(t[i]),
            t[i],
            diver.refused,
            server.output()
        );
    }
    diver.pump_until(Duration::from_secs(1), |_| false);
    let settled: Vec<_> = t.iter().map(|p| diver.at(*p)).collect();
    assert!(diver.is_solid(t[6]), "the trench's end holds: {settled:?}");
    let stats = console(&mut server, "liquid", "liquid: ");
    assert!(stats.contains("liquid: 0 queued"), "{stats}");
    assert!(stats.contains(" 0 dropped"), "{stats}");
    diver.pump_until(Duration::from_secs(1), |_| false);
    assert_eq!(
        t.iter().map(|p| diver.at(*p)).collect::<Vec<_>>(),
        settled,
        "it stopped"
    );

    // The bucket, empty again, takes the source back; the flow dries up.
    diver.client.send_packet(&Use { voxel: t[1] }).unwrap();
    assert!(
        diver.pump_until(seconds, |d| (1..=5).all(|i| d.is_air(t[i]))),
        "dried: {:?}, refused {:?}\n{}",
        t.iter().map(|p| diver.at(*p)).collect::<Vec<_>>(),
        diver.refused,
        server.output()
    );
    console(&mut server, "census", "total ");
    let output = server.output();
    assert!(output.contains("bucket_water 1"), "{output}");
    server.stop_cleanly();
}
