//! End-to-end tests of liquids through the real server (the survival game
//! with `liquid`) and a wire client holding its part of the world: a
//! trench dug in the terrain beside a poured source stays dry behind its
//! bank; the bank dug, the water flows into it and stops (levels 7 to 4,
//! as the client is streamed them, the sunlight in it dimmed); a bucket takes the source back (the
//! bucket full in the census) and the flow dries up. A flood from a
//! source poured in the air keeps every step within its budget while the
//! server answers pings. And a generated
//! lake stays still until a bank beside it is dug: then it flows out into
//! a trench and stops.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use buildat_format::{Packet, decode_voxels};
use buildat_harness::raw_client::RawClient;
use buildat_main_api::{Correct, Dig, Join, Ping, Pong, Refused, Spawn, Use};
use buildat_voxel::VoxelInstance;
use buildat_voxel::geometry::{self, Pos};
use buildat_voxelworld_api::stream::{Ack, Chunk, Light, Registry, UnloadChunk, VoxelUpdates};
use buildat_worldgen_terrain::column::{SEA_LEVEL, column};

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
    /// Each held chunk's light bytes (`voxelworld:light`).
    lights: HashMap<Pos, Vec<u8>>,
    refused: Vec<String>,
    pongs: usize,
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
            lights: HashMap::new(),
            refused: Vec::new(),
            pongs: 0,
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
                Correct::NAME => self.position = Correct::decode(&packet.data).unwrap().position,
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
                Light::NAME => {
                    let light = Light::decode(&packet.data).unwrap();
                    let bytes = buildat_format::decode_light(&light.light, 32 * 32 * 32).unwrap();
                    self.lights.insert(light.chunk, bytes);
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
                Pong::NAME => self.pongs += 1,
                Refused::NAME => self
                    .refused
                    .push(Refused::decode(&packet.data).unwrap().reason),
                _ => {}
            }
        }
        true
    }

    /// The sunlight (0..=15) at `pos`, if its chunk's light is held.
    fn sunlight(&self, pos: Pos) -> Option<u8> {
        let light = self.lights.get(&geometry::chunk_of_voxel(pos))?;
        light
            .get(geometry::index_in_chunk(pos))
            .map(|byte| byte >> 4)
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
    // A view of radius 1 is the player's chunk and its six face neighbours.
    let chunk = geometry::chunk_of_voxel(diver.feet());
    let view: Vec<Pos> = [
        [0, 0, 0],
        [1, 0, 0],
        [-1, 0, 0],
        [0, 1, 0],
        [0, -1, 0],
        [0, 0, 1],
        [0, 0, -1],
    ]
    .map(|d| add(chunk, d))
    .to_vec();
    assert!(
        diver.pump_until(Duration::from_secs(120), |d| view
            .iter()
            .all(|c| d.chunks.contains_key(c))),
        "the view streamed"
    );
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
    for pos in &t[3..=5] {
        assert!(diver.is_air(*pos), "{:?} behind the bank", diver.at(*pos));
    }

    let sun_before = diver.sunlight(t[4]);
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
    // The light follows: full sunlight coming straight down into the
    // open trench loses the water's 1.
    assert_eq!(sun_before, Some(15), "the trench is open to the sky");
    assert!(
        diver.pump_until(seconds, |d| d.sunlight(t[4]) == Some(14)),
        "sunlight in the water {:?}",
        diver.sunlight(t[4])
    );
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

/// The world's seed, from the `world.toml` voxelworld wrote.
fn seed_of(scratch: &Scratch) -> u64 {
    let text = std::fs::read_to_string(scratch.world().join("world.toml")).expect("world.toml");
    text.lines()
        .find_map(|line| {
            let value = line.trim().strip_prefix("seed")?.trim().strip_prefix('=')?;
            value.trim().parse().ok()
        })
        .unwrap_or_else(|| panic!("a seed in {text}"))
}

/// Shores by the terrain's columns, nearest the origin first: a water
/// column at least two deep (no ice) and, inland along `dir`, a beach
/// column at sea level (the bank) and a column at most 3 above it (dug
/// top-down into a pit), ground beyond and beside both. The terrain's
/// shores rise steeply, so the trench is the bank and the pit's bottom.
fn shores(seed: u64) -> impl Iterator<Item = ([i32; 2], [i32; 2])> {
    let h = move |x: i32, z: i32| column(seed, x, z).height;
    (1..400)
        .flat_map(move |ring: i32| {
            let r = ring * 8;
            (-r..r).flat_map(move |k| {
                [[k, -r], [r, k], [-k, r], [-r, -k]]
                    .into_iter()
                    .flat_map(move |[x, z]| {
                        [[1, 0], [-1, 0], [0, 1], [0, -1]]
                            .into_iter()
                            .map(move |dir| ([x, z], dir))
                    })
            })
        })
        .filter(move |([x, z], [dx, dz])| {
            let water = column(seed, *x, *z);
            if water.height >= SEA_LEVEL - 1 || water.temperature < 0.3 {
                return false;
            }
            let at = |i: i32| [x + dx * i, z + dz * i];
            let ground_beside = |[cx, cz]: [i32; 2]| {
                h(cx + dz, cz + dx) >= SEA_LEVEL && h(cx - dz, cz - dx) >= SEA_LEVEL
            };
            let [x1, z1] = at(1);
            let [x2, z2] = at(2);
            let [x3, z3] = at(3);
            h(x1, z1) == SEA_LEVEL
                && (SEA_LEVEL..=SEA_LEVEL + 3).contains(&h(x2, z2))
                && h(x3, z3) >= SEA_LEVEL
                && ground_beside(at(1))
                && ground_beside(at(2))
        })
}

#[test]
fn a_generated_lake_stays_still_until_its_bank_is_dug_then_flows_out_and_stops() {
    let scratch = Scratch::new();
    scratch.add_survival_game();
    scratch.add_modules(&["liquid"]);
    // A view of radius 2 (a ball of chunks) holds the diagonal ones too.
    let settings = ["voxelworld.view_radius=2", SETTINGS[1], SETTINGS[2]];
    let (mut server, address) = start_game(&scratch, &settings);
    let mut diver = Diver::join(&address, "diver");
    let seed = seed_of(&scratch);
    let seconds = Duration::from_secs(10);
    for ([x, z], [dx, dz]) in shores(seed).take(5) {
        // Above the bank, in the air (the console moves the player).
        let above = [x + dx, 4, z + dz];
        let (fx, fz) = (f64::from(above[0]) + 0.5, f64::from(above[2]) + 0.5);
        console(&mut server, &format!("tp diver {fx} 4 {fz}"), "diver");
        let side = [dz, 0, dx];
        let t: [Pos; 4] =
            std::array::from_fn(|i| [x + dx * i as i32, SEA_LEVEL, z + dz * i as i32]);
        // Every chunk the checks below read.
        let chunks: Vec<Pos> = t
            .iter()
            .flat_map(|p| {
                [
                    [0, 0, 0],
                    [0, -1, 0],
                    [0, 1, 0],
                    [0, 3, 0],
                    side,
                    times(side, -1),
                ]
                .map(|d| geometry::chunk_of_voxel(add(*p, d)))
            })
            .collect();
        let held = diver.pump_until(Duration::from_secs(60), |d| {
            (d.position[0] - fx).abs() < 0.01 && chunks.iter().all(|c| d.chunks.contains_key(c))
        });
        assert!(
            held,
            "teleported to {above:?} and streamed {chunks:?}: at {:?}, holding {:?}",
            diver.position,
            diver.chunks.keys().collect::<Vec<_>>()
        );
        // The voxels as generated: else the next shore.
        let as_generated = diver.at(t[0]).is_some_and(|(name, _)| name == "water")
            && t[1..].iter().all(|p| diver.is_solid(*p))
            && t[1..3].iter().all(|p| {
                diver.is_solid(add(*p, [0, -1, 0]))
                    && diver.is_solid(add(*p, side))
                    && diver.is_solid(add(*p, times(side, -1)))
            })
            && diver.is_air(add(t[1], [0, 1, 0]));
        if !as_generated {
            continue;
        }
        // Dig the pit behind the bank, top-down to sea level: the lake
        // stays still.
        for y in (0..=3).rev() {
            let pos = [t[2][0], y, t[2][2]];
            if !diver.is_solid(pos) {
                continue;
            }
            diver.client.send_packet(&Dig { voxel: pos }).unwrap();
            assert!(
                diver.pump_until(seconds, |d| d.is_air(pos)),
                "dug {pos:?}: refused {:?}",
                diver.refused
            );
        }
        diver.pump_until(Duration::from_millis(1500), |_| false);
        assert!(diver.is_air(t[2]), "the bank holds: {:?}", diver.at(t[2]));
        // The bank dug: the lake flows out into the pit and stops there.
        diver.client.send_packet(&Dig { voxel: t[1] }).unwrap();
        for (i, level) in [(1, 7), (2, 6)] {
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
        assert!(diver.is_solid(t[3]));
        assert!(diver.is_air(add(t[2], [0, 1, 0])), "water does not rise");
        assert_eq!(
            diver.at(t[0]),
            Some(("water".to_string(), 0)),
            "the lake's source stays"
        );
        let stats = console(&mut server, "liquid", "liquid: ");
        assert!(stats.contains("liquid: 0 queued"), "{stats}");
        server.stop_cleanly();
        return;
    }
    panic!("no shore as generated near the origin for seed {seed}");
}

/// The number before `word` in a `liquid` stats line.
fn number_before(line: &str, word: &str) -> u64 {
    let words: Vec<&str> = line.split_whitespace().collect();
    words
        .windows(2)
        .find(|w| w[1] == word)
        .and_then(|w| w[0].parse().ok())
        .unwrap_or_else(|| panic!("a number before {word:?} in {line:?}"))
}

#[test]
fn a_flood_keeps_each_step_within_its_budget_and_the_server_answers_meanwhile() {
    let scratch = Scratch::new();
    scratch.add_survival_game();
    scratch.add_modules(&["liquid"]);
    let budget = 16;
    let settings = [
        SETTINGS[0],
        SETTINGS[1],
        "liquid.step_seconds=0.05",
        "liquid.updates_per_tick=16",
    ];
    let (mut server, address) = start_game(&scratch, &settings);
    let mut diver = Diver::join(&address, "diver");
    let chunk = geometry::chunk_of_voxel(diver.feet());
    assert!(
        diver.pump_until(Duration::from_secs(120), |d| [[0, 0, 0], [0, 1, 0]]
            .iter()
            .all(|c| d.chunks.contains_key(&add(chunk, *c)))),
        "the view streamed"
    );
    give(&mut server, "give diver bucket_water");
    // A source poured in the air, 5 above the ground beside the player: it
    // falls and spreads over the terrain.
    let spot = [[2, 5, 0], [-2, 5, 0], [0, 5, 2], [0, 5, -2]]
        .map(|d| add(diver.feet(), d))
        .into_iter()
        .find(|p| diver.is_air(*p))
        .expect("air above the ground beside the spawn");
    diver.client.send_packet(&Use { voxel: spot }).unwrap();
    assert!(
        diver.wait_for(spot, "water", 0, Duration::from_secs(10)),
        "poured at {spot:?}: {:?}, refused {:?}",
        diver.at(spot),
        diver.refused
    );
    let started = Instant::now();
    let (mut most_queued, mut slowest_ping) = (0, Duration::ZERO);
    loop {
        let line = console(&mut server, "liquid", "liquid: ");
        let looked = number_before(&line, "looked");
        assert!(looked <= budget, "a step over its budget: {line}");
        assert_eq!(number_before(&line, "dropped"), 0, "{line}");
        let queued = number_before(&line, "queued");
        most_queued = most_queued.max(queued);
        let pinged = Instant::now();
        let pongs = diver.pongs;
        diver.client.send_packet(&Ping { data: vec![7] }).unwrap();
        assert!(
            diver.pump_until(Duration::from_secs(5), |d| d.pongs > pongs),
            "the server answers a ping during the flood"
        );
        slowest_ping = slowest_ping.max(pinged.elapsed());
        if queued == 0 && number_before(&line, "voxels") > 0 {
            let changed = number_before(&line, "voxels");
            let peak: u64 = line
                .split("(peak ")
                .nth(1)
                .and_then(|rest| rest.split(',').next())
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("a peak in {line:?}"));
            assert!(
                changed > 20 && peak > budget,
                "a flood bigger than a step: {changed} changed, {peak} queued at most \
                 ({most_queued} seen)"
            );
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the flood settles: {line}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(slowest_ping < Duration::from_secs(2), "{slowest_ping:?}");
    server.stop_cleanly();
}
