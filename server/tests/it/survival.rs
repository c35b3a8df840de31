//! The survival loop end to end (issue 45's "done when"): the real server
//! with the default game (`main`, `items`, `crafting`, `inventory`,
//! `survival`, not creative) and the real headless client running
//! `scripts/bots/survival.lua`: wood by hand from a tree, planks, sticks, a
//! crafting table, a wooden pickaxe, stone with it (faster than by hand),
//! a stone pickaxe, blocks placed from the inventory; then the server
//! restarts and the same player finds its inventory again (the bot's
//! second run exits 0 only then).
//!
//! The bot may fly, teleport and move fast (`main.default_privileges`): it
//! goes to the nearest tree it holds.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{Scratch, client_binary, lines_of, output_text, repo_root, start_game};

const SETTINGS: [&str; 2] = [
    "voxelworld.view_radius=2",
    "main.default_privileges=interact,shout,fly,fast,teleport,noclip",
];

/// The default game with its survival modules.
fn setup() -> Scratch {
    let scratch = Scratch::new();
    scratch.add_survival_game();
    scratch
}

fn bot_script() -> std::path::PathBuf {
    repo_root()
        .join("scripts")
        .join("bots")
        .join("survival.lua")
}

fn bot(address: &str, cache: &std::path::Path) -> Command {
    let mut command = Command::new(client_binary());
    command
        .args(["--connect", address, "--cache"])
        .arg(cache)
        .args(["--name", "survivor", "-v", "--script"])
        .arg(bot_script())
        .stdin(Stdio::null());
    command
}

/// The `survival: inventory: ...` line's list.
fn inventory_of(text: &str) -> String {
    text.lines()
        .filter_map(|l| l.split("survival: inventory: ").nth(1))
        .next_back()
        .unwrap_or_else(|| panic!("no inventory line in:\n{text}"))
        .trim()
        .to_string()
}

/// The server's seconds of the first `survival: stone with TOOL: S s
/// (measured M s)` line.
fn pick_seconds(text: &str) -> f64 {
    let line = text
        .lines()
        .find(|l| l.contains("survival: stone with ") && l.contains(" s (measured"))
        .unwrap_or_else(|| panic!("no pickaxe line in:\n{text}"));
    line.split(" s (measured")
        .next()
        .and_then(|before| before.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no seconds in {line:?}"))
}

#[test]
fn a_bot_plays_the_survival_loop_and_finds_its_inventory_after_a_restart() {
    let scratch = setup();
    let cache = tempfile::tempdir().expect("temp dir");
    let (mut server, address) = start_game(&scratch, &SETTINGS);

    let mut child = bot(&address, cache.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run buildat-client");
    let lines = lines_of(&mut child);
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(400);
    let mut waiting = false;
    while Instant::now() < deadline {
        match lines.recv_timeout(Duration::from_millis(500)) {
            Ok(line) => {
                waiting |= line.contains("survival: waiting for a server restart");
                let failed = line.contains("survival: FAILED");
                seen.push(line);
                if waiting || failed {
                    break;
                }
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    let text = seen.join("\n");
    if !waiting {
        let _ = child.kill();
        panic!(
            "the bot did not finish the loop:\n{text}\n--- server:\n{}",
            server.output()
        );
    }
    eprintln!("--- the bot's first run:\n{text}");
    for step in [
        "survival: a tree at ",
        "survival: punched 3 wood by hand",
        "survival: crafted planks",
        "survival: crafted sticks",
        "survival: crafted a crafting table",
        "survival: crafted a wooden pickaxe",
        "survival: stone by hand: ",
        "survival: mined 3 stone",
        "survival: crafted a stone pickaxe",
        "survival: placed ",
    ] {
        assert!(text.contains(step), "{step:?} missing:\n{text}");
    }
    // Faster than by hand: by hand the server refuses (a negative time) or
    // takes longer.
    let hand = text
        .lines()
        .find_map(|l| l.split("survival: stone by hand: ").nth(1))
        .expect("the hand's line");
    let pick = pick_seconds(&text);
    assert!(pick > 0.0, "{text}");
    if !hand.starts_with("cannot be dug") {
        let hand: f64 = hand.trim_end_matches(" s").parse().expect("seconds");
        assert!(pick < hand, "the pickaxe {pick} s, the hand {hand} s");
    }
    let placed: Vec<&str> = text
        .lines()
        .filter_map(|l| l.split(" from my inventory: ").nth(1))
        .collect();
    assert!(placed.len() >= 2, "{text}");
    for counts in &placed {
        let (before, after) = counts.split_once(" -> ").expect("before -> after");
        let before: u32 = before.trim().parse().expect("a count");
        let after: u32 = after.trim().parse().expect("a count");
        assert_eq!(after + 1, before, "the count goes down: {counts}");
    }
    let before_restart = inventory_of(&text);

    // A restart: the client loses its connection (not a success), the
    // inventory stays.
    assert_eq!(
        server.stop(Duration::from_secs(60)),
        Some(0),
        "{}",
        server.output()
    );
    let status = child.wait().expect("the first run ends");
    assert_ne!(status.code(), Some(0), "half the loop is not a success");
    let (mut server, address) = start_game(&scratch, &SETTINGS);
    let out = bot(&address, cache.path())
        .args(["--quit-after", "120"])
        .output()
        .expect("run buildat-client again");
    let again = output_text(&out);
    eprintln!("--- the bot's second run:\n{again}");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{again}\n--- server:\n{}",
        server.output()
    );
    assert!(
        again.contains("survival: found my inventory again after a restart"),
        "{again}"
    );
    assert!(again.contains("survival: done"), "{again}");
    assert_eq!(inventory_of(&again), before_restart);
    assert_eq!(
        server.stop(Duration::from_secs(60)),
        Some(0),
        "{}",
        server.output()
    );
}

/// The README's builder bot plays survival too: it digs the top of a
/// column for as long as the server says, places back what digging gave it
/// (grass gives dirt) from its hotbar, and nothing is refused.
#[test]
fn the_builder_bot_digs_and_places_back_what_it_dug_in_survival() {
    let scratch = setup();
    let (mut server, address) = start_game(&scratch, &SETTINGS);
    let dir = tempfile::tempdir().expect("temp dir");
    let out = Command::new(client_binary())
        .args(["--connect", &address, "--cache"])
        .arg(dir.path().join("cache"))
        .args(["--name", "builder", "--quit-after", "15", "--script"])
        .arg(repo_root().join("scripts/bots/builder.lua"))
        .stdin(Stdio::null())
        .output()
        .expect("run buildat-client");
    let text = output_text(&out);
    let counts: Vec<u32> = text
        .split("builder: builder: ")
        .nth(1)
        .and_then(|rest| rest.lines().next())
        .map(|line| {
            line.split(", ")
                .filter_map(|part| part.split(' ').next()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    let context = || format!("{text}\n--- server:\n{}", server.output());
    // digs, places, edits confirmed, refused
    let [digs, places, confirmed, refused] = counts[..] else {
        panic!("the builder's counts: {}", context());
    };
    assert!(digs >= 2 && places >= 2, "{}", context());
    assert!(confirmed >= 4, "{}", context());
    assert_eq!(refused, 0, "{}", context());
    server.pump();
    // What it dug went back, but for a dig not yet placed at the end.
    let census = crate::common::console(&mut server, "census", "total ");
    let total: u32 = census
        .rsplit("total ")
        .next()
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("a census total: {census}"));
    assert!(total <= 1, "{census}");
}

/// The living world's survival rules through the real server (`active`
/// finding voxels near the player and firing timers), watched by a player
/// over a raw connection as the world streams it: dirt placed beside
/// grass in the sunlight turns to grass (fast settings: a round a second,
/// every voxel), and a sapling grows into a tree when its timer fires.
mod living {
    use std::collections::HashMap;
    use std::time::{Duration, Instant};

    use buildat_format::{Packet, decode_voxels};
    use buildat_harness::raw_client::RawClient;
    use buildat_main_api::{ChatLine, Correct, Dig, Join, Place, Refused, Spawn, Use};
    use buildat_voxel::geometry::{self, Pos};
    use buildat_voxelworld_api::stream::{Ack, Chunk, Registry, UnloadChunk, VoxelUpdates};

    use crate::common::{Scratch, console, start_game};

    const SETTINGS: [&str; 6] = [
        "voxelworld.view_radius=2",
        "main.default_privileges=interact,shout,creative",
        "survival.grass_seconds=1",
        "survival.grass_chance=1",
        "survival.sapling_seconds=2",
        "active.radius_chunks=2",
    ];

    /// A player who sees the world as it streams.
    struct Gardener {
        client: RawClient,
        position: Option<[f64; 3]>,
        names: Vec<String>,
        chunks: HashMap<Pos, Vec<u32>>,
        refused: Vec<String>,
        /// Chat lines told.
        told: Vec<String>,
        /// Positions the server moved the player to (`main:correct`).
        corrected: Vec<[f64; 3]>,
        /// `health:died` received.
        died: bool,
    }

    impl Gardener {
        fn join(address: &str) -> Self {
            let mut client = RawClient::connect(address).expect("connect");
            let join = Join {
                name: "gardener".into(),
            };
            client.send_packet(&join).expect("join");
            let mut gardener = Self {
                client,
                position: None,
                names: Vec::new(),
                chunks: HashMap::new(),
                refused: Vec::new(),
                told: Vec::new(),
                corrected: Vec::new(),
                died: false,
            };
            gardener
                .pump_until(Duration::from_secs(120), |g| {
                    let Some(feet) = g.position.map(|p| p.map(|v| v.floor() as i32)) else {
                        return false;
                    };
                    // The chunks around the feet, where it gardens.
                    let chunk = geometry::chunk_of_voxel(feet);
                    (-1..=1).all(|dx| {
                        (-1..=1).all(|dy| {
                            (-1..=1).all(|dz| {
                                g.chunks.contains_key(&[
                                    chunk[0] + dx,
                                    chunk[1] + dy,
                                    chunk[2] + dz,
                                ])
                            })
                        })
                    })
                })
                .expect("spawned with the world around");
            gardener
        }

        /// Handles packets until `done`; `None` on timeout.
        fn pump_until(&mut self, timeout: Duration, done: impl Fn(&Self) -> bool) -> Option<()> {
            let deadline = Instant::now() + timeout;
            while !done(self) {
                let left = deadline.checked_duration_since(Instant::now())?;
                let Some(packet) = self
                    .client
                    .recv(left.min(Duration::from_millis(200)))
                    .expect("connected")
                else {
                    continue;
                };
                match packet.name.as_str() {
                    Spawn::NAME => {
                        self.position = Some(Spawn::decode(&packet.data).unwrap().position);
                    }
                    Registry::NAME => {
                        let mut registry = Registry::decode(&packet.data).unwrap();
                        registry.voxels.reindex();
                        self.names = registry
                            .voxels
                            .definitions()
                            .iter()
                            .map(|d| d.name.canonical())
                            .collect();
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
                                voxels[usize::from(index)] =
                                    buildat_voxel::VoxelInstance(value).type_id();
                            }
                        }
                    }
                    Refused::NAME => {
                        let refused = Refused::decode(&packet.data).unwrap();
                        self.refused.push(refused.reason);
                    }
                    ChatLine::NAME => {
                        self.told.push(ChatLine::decode(&packet.data).unwrap().text);
                    }
                    Correct::NAME => {
                        let position = Correct::decode(&packet.data).unwrap().position;
                        self.corrected.push(position);
                    }
                    "health:died" => self.died = true,
                    _ => {}
                }
            }
            Some(())
        }

        fn voxel(&self, voxel: Pos) -> Option<&str> {
            let chunk = self.chunks.get(&geometry::chunk_of_voxel(voxel))?;
            let id = chunk[geometry::index_in_chunk(voxel)];
            self.names.get(id as usize).map(String::as_str)
        }

        /// Waits until the voxel at `pos` is `name`; panics naming what it
        /// is after `seconds`.
        fn wait_for(&mut self, pos: Pos, name: &str, seconds: u64) {
            let seen =
                self.pump_until(Duration::from_secs(seconds), |g| g.voxel(pos) == Some(name));
            assert!(
                seen.is_some(),
                "{pos:?} is {:?}, not {name}, after {seconds} s (refused: {:?})",
                self.voxel(pos),
                self.refused
            );
        }

        fn feet(&self) -> Pos {
            self.position.expect("spawned").map(|v| v.floor() as i32)
        }

        /// Whether the `height` voxels from `pos` up are air.
        fn open(&self, [x, y, z]: Pos, height: i32) -> bool {
            (0..height).all(|dy| self.voxel([x, y + dy, z]) == Some("air"))
        }

        /// Where a sapling can grow `steps` voxels from the feet in one
        /// of the four directions (but `not`): on the ground, 10 voxels
        /// free above, the way to it free to see.
        fn sapling_spot(&self, steps: i32, not: Option<Pos>) -> Option<Pos> {
            let [x, y, z] = self.feet();
            [[1, 0, 0], [-1, 0, 0], [0, 0, 1], [0, 0, -1]]
                .into_iter()
                .filter(|side| Some(*side) != not)
                .find(|[dx, _, dz]| {
                    let at = |step: i32| [x + step * dx, y, z + step * dz];
                    let below = [x + steps * dx, y - 1, z + steps * dz];
                    (1..steps).all(|step| self.open(at(step), 2))
                        && self.open(at(steps), 10)
                        && self
                            .voxel(below)
                            .is_some_and(|v| v != "air" && v != "water")
                })
                .map(|[dx, _, dz]| [x + steps * dx, y, z + steps * dz])
        }

        /// A direction along which the ground is flat and open for
        /// `reach` voxels from the feet: the voxels on the ground there
        /// are free up to `height`.
        fn open_side(&self, reach: i32, height: i32) -> Option<Pos> {
            let [x, y, z] = self.feet();
            [[1, 0, 0], [-1, 0, 0], [0, 0, 1], [0, 0, -1]]
                .into_iter()
                .find(|[dx, _, dz]| {
                    (1..=reach).all(|step| {
                        let at = [x + dx * step, y, z + dz * step];
                        let below = [at[0], y - 1, at[2]];
                        self.voxel(below)
                            .is_some_and(|v| v != "air" && v != "water")
                            && self.open(at, height)
                    })
                })
        }
    }

    #[test]
    fn dirt_beside_grass_in_the_light_turns_to_grass_and_a_sapling_grows_into_a_tree() {
        let scratch = Scratch::new();
        scratch.add_living_world();
        let (mut server, address) = start_game(&scratch, &SETTINGS);
        let mut gardener = Gardener::join(&address);
        let context = |g: &Gardener, server: &mut crate::common::Server| {
            format!("refused: {:?}\n--- server:\n{}", g.refused, server.output())
        };
        let [x, y, z] = gardener.feet();

        // Dirt, and grass beside it, on the ground in the open (the dirt
        // first: the grass would hide it from the eyes).
        let Some([dx, _, dz]) = gardener.open_side(2, 16) else {
            panic!("no open flat ground beside {:?}", gardener.feet());
        };
        let grass = [x + dx, y, z + dz];
        let dirt = [x + 2 * dx, y, z + 2 * dz];
        let place = |g: &mut Gardener, voxel: Pos, name: &str| {
            let name = name.to_string();
            g.client.send_packet(&Place { voxel, name }).unwrap();
        };
        place(&mut gardener, dirt, "dirt");
        gardener.wait_for(dirt, "dirt", 30);
        let placed = Instant::now();
        place(&mut gardener, grass, "grass");
        gardener.wait_for(dirt, "grass", 60);
        eprintln!("the dirt turned to grass in {:?}", placed.elapsed());
        assert_eq!(
            gardener.voxel(grass),
            Some("grass"),
            "{}",
            context(&gardener, &mut server)
        );

        // A sapling on another side, with room above: a tree after its
        // timer (2 s).
        let sides = [[-dx, 0, -dz], [dz, 0, dx], [-dz, 0, -dx]];
        let Some([bx, _, bz]) = sides.into_iter().find(|[bx, _, bz]| {
            let at = |step: i32| [x + step * bx, y, z + step * bz];
            let below = [x + 3 * bx, y - 1, z + 3 * bz];
            gardener.open(at(1), 2)
                && gardener.open(at(2), 2)
                && gardener.open(at(3), 10)
                && gardener
                    .voxel(below)
                    .is_some_and(|v| v != "air" && v != "water")
        }) else {
            panic!("no open ground for a sapling around {:?}", gardener.feet());
        };
        let sapling = [x + 3 * bx, y, z + 3 * bz];
        place(&mut gardener, sapling, "sapling");
        gardener.wait_for(sapling, "sapling", 30);
        let planted = Instant::now();
        gardener.wait_for(sapling, "wood", 60);
        eprintln!("the sapling grew in {:?}", planted.elapsed());
        assert!(
            planted.elapsed() >= Duration::from_millis(1500),
            "not before its timer"
        );
        for dy in 1..4 {
            gardener.wait_for([sapling[0], y + dy, sapling[2]], "wood", 10);
        }
        let leaves = (-2..=2)
            .flat_map(|ox| (2..9).flat_map(move |oy| (-2..=2).map(move |oz| [ox, oy, oz])))
            .filter(|[ox, oy, oz]| {
                gardener.voxel([sapling[0] + ox, y + oy, sapling[2] + oz]) == Some("leaves")
            })
            .count();
        assert!(
            leaves >= 30,
            "{leaves} leaves: {}",
            context(&gardener, &mut server)
        );

        // Dirt placed on the ground's grass (its only grass beside it is
        // below, covered and dying): it turns all the same.
        let on_grass = [[0, -1], [1, -1], [-1, -1], [1, 1], [-1, 1]]
            .into_iter()
            .map(|[a, b]| {
                // Across the grass side (a) and away from the sapling (b).
                [x + a * dz - b * bx, y, z + a * dx - b * bz]
            })
            .find(|&[px, _, pz]| {
                [px, pz] != [x, z]
                    && [px, y, pz] != grass
                    && [px, y, pz] != dirt
                    && gardener.open([px, y, pz], 3)
                    && gardener.voxel([px, y - 1, pz]) == Some("grass")
            });
        match on_grass {
            Some(spot) => {
                place(&mut gardener, spot, "dirt");
                gardener.wait_for(spot, "dirt", 30);
                gardener.wait_for(spot, "grass", 60);
            }
            None => eprintln!(
                "no grass ground around {:?}: not placed on grass",
                [x, y, z]
            ),
        }
        assert!(
            gardener.refused.is_empty(),
            "{}",
            context(&gardener, &mut server)
        );
        assert_eq!(
            server.stop(Duration::from_secs(60)),
            Some(0),
            "{}",
            server.output()
        );
    }

    #[test]
    fn a_player_who_used_a_bed_respawns_on_it_until_it_is_dug() {
        let scratch = Scratch::new();
        scratch.add_living_world();
        let (mut server, address) = start_game(&scratch, &SETTINGS);
        let mut gardener = Gardener::join(&address);
        let [x, y, z] = gardener.feet();
        let Some([dx, _, dz]) = gardener.open_side(2, 3) else {
            panic!("no open flat ground beside {:?}", gardener.feet());
        };
        let bed = [x + 2 * dx, y, z + 2 * dz];
        let name = "bed".to_string();
        gardener
            .client
            .send_packet(&Place { voxel: bed, name })
            .unwrap();
        gardener.wait_for(bed, "bed", 30);
        gardener.client.send_packet(&Use { voxel: bed }).unwrap();
        let set = gardener.pump_until(Duration::from_secs(30), |g| {
            g.told.iter().any(|t| t.contains("Respawn point set"))
        });
        assert!(
            set.is_some(),
            "told {:?}, refused {:?}\n--- server:\n{}",
            gardener.told,
            gardener.refused,
            server.output()
        );

        console(&mut server, "kill gardener", "gardener is dead");
        gardener
            .pump_until(Duration::from_secs(30), |g| g.died)
            .expect("told it died");
        gardener.client.send("health:respawn", &[]).unwrap();
        let on_bed = [
            f64::from(bed[0]) + 0.5,
            f64::from(y) + 1.0,
            f64::from(bed[2]) + 0.5,
        ];
        let back = gardener.pump_until(Duration::from_secs(30), |g| {
            g.corrected
                .iter()
                .any(|p| (0..3).all(|i| (p[i] - on_bed[i]).abs() < 1e-6))
        });
        assert!(
            back.is_some(),
            "moved to {:?}, not {on_bed:?} (the spawn: {:?})\n--- server:\n{}",
            gardener.corrected,
            gardener.position,
            server.output()
        );

        // The bed dug: the next death respawns it at the spawn point.
        let spawn = gardener.position.expect("spawned");
        gardener.client.send_packet(&Dig { voxel: bed }).unwrap();
        gardener.wait_for(bed, "air", 30);
        gardener
            .pump_until(Duration::from_secs(30), |g| {
                g.told.iter().any(|t| t.contains("bed is gone"))
            })
            .expect("told its bed is gone");
        gardener.died = false;
        gardener.corrected.clear();
        console(&mut server, "kill gardener", "gardener is dead");
        gardener
            .pump_until(Duration::from_secs(30), |g| g.died)
            .expect("told it died again");
        gardener.client.send("health:respawn", &[]).unwrap();
        let at_spawn = gardener.pump_until(Duration::from_secs(30), |g| {
            g.corrected
                .iter()
                .any(|p| (0..3).all(|i| (p[i] - spawn[i]).abs() < 1e-6))
        });
        assert!(
            at_spawn.is_some(),
            "moved to {:?}, not the spawn {spawn:?}\n--- server:\n{}",
            gardener.corrected,
            server.output()
        );
        assert_eq!(
            server.stop(Duration::from_secs(60)),
            Some(0),
            "{}",
            server.output()
        );
    }

    #[test]
    fn a_sapling_planted_before_a_restart_grows_after_it() {
        let scratch = Scratch::new();
        scratch.add_living_world();
        let mut settings = SETTINGS.to_vec();
        settings.retain(|s| !s.starts_with("survival.sapling_seconds="));
        settings.push("survival.sapling_seconds=15");
        let (mut server, address) = start_game(&scratch, &settings);
        let mut gardener = Gardener::join(&address);
        let Some(sapling) = gardener.sapling_spot(3, None) else {
            panic!("no open ground for a sapling around {:?}", gardener.feet());
        };
        let name = "sapling".to_string();
        let place = Place {
            voxel: sapling,
            name,
        };
        gardener.client.send_packet(&place).unwrap();
        gardener.wait_for(sapling, "sapling", 30);
        let planted = Instant::now();
        // Stopped before its timer fires: the timer is kept with its section.
        assert_eq!(
            server.stop(Duration::from_secs(60)),
            Some(0),
            "{}",
            server.output()
        );
        drop(gardener);
        assert!(
            planted.elapsed() < Duration::from_secs(15),
            "the server took {:?} to stop: the timer may have fired before",
            planted.elapsed()
        );

        let (mut server, address) = start_game(&scratch, &settings);
        let mut gardener = Gardener::join(&address);
        let there = gardener.voxel(sapling).map(str::to_string);
        assert!(
            matches!(there.as_deref(), Some("sapling" | "wood")),
            "{there:?} at {sapling:?}"
        );
        gardener.wait_for(sapling, "wood", 60);
        gardener.wait_for([sapling[0], sapling[1] + 3, sapling[2]], "wood", 10);
        assert_eq!(
            server.stop(Duration::from_secs(60)),
            Some(0),
            "{}",
            server.output()
        );
    }
}
