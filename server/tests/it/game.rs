//! The default game and the world stream over real sockets: joining,
//! streaming nearest first under flow control, each chunk's light after it
//! and again when an edit changes it, edits seen by others and kept across
//! a restart, a special voxel (the torch) told of the edits around it.

use buildat_format::Packet;
use buildat_main_api::{
    Correct, Dig, Edits, Join, Move, Ping, Place, Pong, Refused, Spawn, VAR_PEER, VAR_PLAYER,
};
use buildat_replicate_api::{NodeState, NodeUpdates};
use buildat_voxelworld_api::stream::{Ack, Chunk, Light, Registry, UnloadChunk, VoxelUpdates};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{Duration, Instant};

use crate::common::{Scratch, Server};
use buildat_format::decode_voxels;
use buildat_harness::raw_client::RawClient;
use buildat_voxel::geometry::{self, Pos};

const RADIUS: i32 = 2;
/// Chunks in flight without an ack (set small so the radius needs acks).
const BUDGET: usize = 16;

fn start(scratch: &Scratch) -> (Server, String) {
    start_with(scratch, &[])
}

fn start_with(scratch: &Scratch, settings: &[&str]) -> (Server, String) {
    let radius = format!("voxelworld.view_radius={RADIUS}");
    let budget = format!("voxelworld.stream_budget={BUDGET}");
    let mut all = settings.to_vec();
    all.extend([radius.as_str(), budget.as_str()]);
    crate::common::start_game(scratch, &all)
}

/// A player as the test sees it.
struct Player {
    client: RawClient,
    peer: u64,
    position: [f64; 3],
    names: Vec<String>,
    chunks: HashMap<Pos, Vec<u32>>,
    /// Each held chunk's light bytes (`voxelworld:light`).
    lights: HashMap<Pos, Vec<u8>>,
    /// `voxelworld:light` packets received.
    light_packets: usize,
    received: Vec<Pos>,
    /// `voxelworld:voxels` packets applied (single voxels of held chunks).
    voxel_updates: usize,
    edits: Vec<(Pos, String)>,
    acking: bool,
    registry_seen: bool,
    /// The nodes replication told this player of.
    nodes: BTreeMap<u64, NodeState>,
    /// Each `replicate:nodes` packet's server time.
    node_times: Vec<u64>,
}

impl Player {
    fn join(address: &str, name: &str) -> Self {
        let mut client = RawClient::connect(address).expect("connect");
        client
            .send_packet(&Join {
                name: name.to_string(),
            })
            .unwrap();
        let mut player = Self {
            client,
            peer: 0,
            position: [0.0; 3],
            names: Vec::new(),
            chunks: HashMap::new(),
            lights: HashMap::new(),
            light_packets: 0,
            received: Vec::new(),
            voxel_updates: 0,
            edits: Vec::new(),
            acking: true,
            registry_seen: false,
            nodes: BTreeMap::new(),
            node_times: Vec::new(),
        };
        player
            .pump_until(Duration::from_secs(120), |p| p.peer != 0)
            .expect("spawned");
        player
    }

    /// Handles packets until `done` or the timeout; false on timeout.
    fn pump_until(&mut self, timeout: Duration, mut done: impl FnMut(&Self) -> bool) -> Option<()> {
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
                    let spawn = Spawn::decode(&packet.data).unwrap();
                    self.peer = spawn.peer;
                    self.position = spawn.position;
                }
                Registry::NAME => {
                    assert!(
                        self.received.is_empty(),
                        "the registry comes before any chunk"
                    );
                    let mut registry = Registry::decode(&packet.data).unwrap();
                    registry.voxels.reindex();
                    self.names = registry
                        .voxels
                        .definitions()
                        .iter()
                        .map(|d| d.name.canonical())
                        .collect();
                    self.registry_seen = true;
                }
                Chunk::NAME => {
                    assert!(self.registry_seen, "registry first");
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
                    self.received.push(chunk.chunk);
                    if self.acking {
                        self.client.send_packet(&Ack { chunks: 1 }).unwrap();
                    }
                }
                Light::NAME => {
                    let light = Light::decode(&packet.data).unwrap();
                    assert!(
                        self.chunks.contains_key(&light.chunk),
                        "light comes after its chunk"
                    );
                    let bytes = buildat_format::decode_light(&light.light, 32 * 32 * 32).unwrap();
                    assert_eq!(bytes.len(), 32 * 32 * 32);
                    self.lights.insert(light.chunk, bytes);
                    self.light_packets += 1;
                }
                UnloadChunk::NAME => {
                    let unload = UnloadChunk::decode(&packet.data).unwrap();
                    self.chunks.remove(&unload.chunk);
                    self.lights.remove(&unload.chunk);
                }
                VoxelUpdates::NAME => {
                    let updates = VoxelUpdates::decode(&packet.data).unwrap();
                    let voxels = self
                        .chunks
                        .get_mut(&updates.chunk)
                        .expect("voxel updates come only for held chunks");
                    for (index, value) in updates.changes {
                        voxels[usize::from(index)] = buildat_voxel::VoxelInstance(value).type_id();
                    }
                    self.voxel_updates += 1;
                }
                Edits::NAME => {
                    for edit in Edits::decode(&packet.data).unwrap().edits {
                        self.edits.push((edit.voxel, edit.name));
                    }
                }
                Refused::NAME => {
                    panic!("refused: {}", Refused::decode(&packet.data).unwrap().reason)
                }
                NodeUpdates::NAME => {
                    let updates = NodeUpdates::decode(&packet.data).unwrap();
                    self.node_times.push(updates.time_ms);
                    for state in updates.added {
                        self.nodes.insert(state.id, state);
                    }
                    for delta in &updates.changed {
                        self.nodes
                            .get_mut(&delta.id)
                            .expect("a change of a known node")
                            .apply(delta);
                    }
                    for id in &updates.removed {
                        assert!(self.nodes.remove(id).is_some(), "removed once known");
                    }
                }
                _ => {}
            }
        }
        Some(())
    }

    /// The node of the player with this peer id, as this player knows it.
    fn player_node(&self, peer: u64) -> Option<&NodeState> {
        self.nodes
            .values()
            .find(|n| n.var(VAR_PEER) == Some(&peer.to_le_bytes()[..]))
    }

    fn voxel_name(&self, voxel: Pos) -> Option<&str> {
        let chunk = self.chunks.get(&geometry::chunk_of_voxel(voxel))?;
        let id = chunk[geometry::index_in_chunk(voxel)];
        self.names.get(id as usize).map(String::as_str)
    }

    /// The light byte at a voxel (sunlight in the high nibble, block light
    /// in the low one), if its chunk's light is held.
    fn light(&self, voxel: Pos) -> Option<u8> {
        let light = self.lights.get(&geometry::chunk_of_voxel(voxel))?;
        light.get(geometry::index_in_chunk(voxel)).copied()
    }

    fn dig(&mut self, voxel: Pos) {
        self.client.send_packet(&Dig { voxel }).unwrap();
    }

    fn place(&mut self, voxel: Pos, name: &str) {
        let name = name.to_string();
        self.client.send_packet(&Place { voxel, name }).unwrap();
    }

    fn feet(&self) -> Pos {
        self.position.map(|p| p.floor() as i32)
    }
}

/// Two players who joined and hold their whole view radius.
fn digger_and_watcher(address: &str) -> (Player, Player) {
    let mut digger = Player::join(address, "digger");
    let mut watcher = Player::join(address, "watcher");
    let all = chunks_in_radius(geometry::chunk_of_voxel(digger.feet()));
    for player in [&mut digger, &mut watcher] {
        player
            .pump_until(Duration::from_secs(120), |p| p.received.len() >= all.len())
            .expect("world");
    }
    (digger, watcher)
}

#[test]
fn players_see_each_other_as_nodes_within_a_tick_of_the_truth() {
    let scratch = Scratch::new();
    scratch.add_game();
    let (mut server, address) = start_with(&scratch, &["main.free_movement=true"]);
    let mut walker = Player::join(&address, "walker");
    let mut watcher = Player::join(&address, "watcher");
    let peer = walker.peer;
    watcher
        .pump_until(Duration::from_secs(30), |p| p.player_node(peer).is_some())
        .expect("the watcher learns the walker's node");
    let node = watcher.player_node(peer).expect("known").clone();
    assert_eq!(node.var(VAR_PLAYER), Some(&b"walker"[..]));
    assert_eq!(node.position(), walker.position);
    // The walker walks 5 voxels a second; the watcher samples what it
    // knows of it as it goes.
    let mut seen = HashSet::new();
    for _ in 0..40 {
        walker.position[0] += 0.25;
        let position = walker.position;
        walker.client.send_packet(&Move { position }).unwrap();
        watcher.pump_until(Duration::from_millis(50), |_| false);
        walker.pump_until(Duration::from_millis(1), |_| false);
        if let Some(known) = watcher.player_node(peer) {
            seen.insert(known.position[0]);
        }
    }
    assert!(
        seen.len() >= 10,
        "the watcher followed the walk step by step, not at its end: {} positions",
        seen.len()
    );
    // Stopped: the watcher holds exactly where the server has it (to
    // 1/64 voxel) within a tick or so, and sees it stand still.
    let truth = walker.position;
    watcher
        .pump_until(Duration::from_secs(5), |p| {
            p.player_node(peer)
                .is_some_and(|n| n.position() == truth && n.velocity() == [0.0; 3])
        })
        .unwrap_or_else(|| {
            panic!(
                "the watcher holds {:?}, the walker is at {truth:?}",
                watcher.player_node(peer).map(NodeState::position)
            )
        });
    assert!(
        watcher.node_times.windows(2).all(|w| w[0] <= w[1]),
        "server times never go back"
    );
    // The walker leaves: its node goes.
    drop(walker);
    watcher
        .pump_until(Duration::from_secs(10), |p| p.player_node(peer).is_none())
        .expect("the walker's node is removed when it leaves");
    let stats = server
        .command("replicate", &["replicate: "], Duration::from_secs(10))
        .expect("the replicate console command");
    assert!(stats.contains(" packets / "), "{stats}");
    server.stop_cleanly();
}

#[test]
fn a_player_sees_a_node_enter_its_view_and_leave_it() {
    let scratch = Scratch::new();
    scratch.add_game();
    scratch.add_fixture("world_probe", "world_probe");
    let (mut server, address) = start_with(&scratch, &["world_probe.idle=1"]);
    let mut player = Player::join(&address, "watcher");
    let created = server
        .command(
            "probe-nodes create 1",
            &["created nodes "],
            Duration::from_secs(30),
        )
        .expect("a node");
    let id: u64 = created
        .rsplit(' ')
        .next()
        .and_then(|id| id.trim().parse().ok())
        .unwrap_or_else(|| panic!("an id in {created:?}"));
    // Made high above the spawn (y 266): out of view.
    player.pump_until(Duration::from_secs(1), |_| false);
    assert!(
        !player.nodes.contains_key(&id),
        "a node out of view is not told"
    );
    let [x, y, z] = player.position;
    let mut put = |at: [f64; 3]| {
        let command = format!("probe-nodes at {id} {} {} {}", at[0], at[1], at[2]);
        server
            .command(&command, &["put node "], Duration::from_secs(30))
            .expect("moved");
    };
    // It comes down beside the player: added, with its variables.
    put([x + 5.0, y + 2.0, z]);
    player
        .pump_until(Duration::from_secs(10), |p| p.nodes.contains_key(&id))
        .expect("the node entering the view is added");
    let node = &player.nodes[&id];
    assert_eq!(node.position(), [x + 5.0, y + 2.0, z]);
    assert_eq!(node.var("index"), Some(&[0u8][..]));
    // It goes far away: removed.
    put([x + 400.0, y, z]);
    player
        .pump_until(Duration::from_secs(10), |p| !p.nodes.contains_key(&id))
        .expect("the node leaving the view is removed");
    server.stop_cleanly();
}

fn chunks_in_radius(center: Pos) -> HashSet<Pos> {
    buildat_voxel::geometry::chunks_in_view(center, RADIUS)
        .into_iter()
        .collect()
}

#[test]
fn a_joining_player_gets_its_own_chunk_first_then_the_radius_once_each() {
    let scratch = Scratch::new();
    scratch.add_game();
    let (mut server, address) = start(&scratch);
    let mut player = Player::join(&address, "first");
    let center = geometry::chunk_of_voxel(player.feet());
    let wanted = chunks_in_radius(center);
    player
        .pump_until(Duration::from_secs(120), |p| {
            p.received.len() >= wanted.len()
        })
        .unwrap_or_else(|| panic!("got {} of {} chunks", player.received.len(), wanted.len()));
    player.pump_until(Duration::from_millis(500), |_| false);
    assert_eq!(
        player.received[0], center,
        "the chunk it stands in comes first"
    );
    let received: HashSet<Pos> = player.received.iter().copied().collect();
    assert_eq!(received.len(), player.received.len(), "no chunk twice");
    assert_eq!(received, wanted, "every chunk within the radius");
    let standing_on = [player.feet()[0], player.feet()[1] - 1, player.feet()[2]];
    let ground = player.voxel_name(standing_on).expect("ground is held");
    assert_ne!(ground, "air", "it spawned on the surface");
    assert_eq!(player.voxel_name(player.feet()), Some("air"));
    server.stop_cleanly();
}

#[test]
fn light_comes_with_each_chunk_and_changes_with_edits() {
    let scratch = Scratch::new();
    scratch.add_game();
    let (mut server, address) = start(&scratch);
    let mut player = Player::join(&address, "lamplighter");
    let feet = player.feet();
    let wanted = chunks_in_radius(geometry::chunk_of_voxel(feet));
    player
        .pump_until(Duration::from_secs(120), |p| {
            wanted.iter().all(|c| p.lights.contains_key(c))
        })
        .unwrap_or_else(|| {
            panic!(
                "light of {} of {} chunks",
                player.lights.len(),
                wanted.len()
            )
        });
    // Open sky over the top of the world held: full sunlight on air there.
    let top = (geometry::chunk_of_voxel(feet)[1] + RADIUS) * 32 + 31;
    let sky = [feet[0], top, feet[2]];
    assert_eq!(player.voxel_name(sky), Some("air"));
    assert_eq!(player.light(sky), Some(0xf0), "sun 15, no block light");
    // A torch placed beside the player lights itself 14 and its air 13.
    let beside = [feet[0] + 2, feet[1], feet[2]];
    let next = [feet[0] + 3, feet[1], feet[2]];
    assert_eq!(player.voxel_name(beside), Some("air"));
    let block_light = |p: &Player, at| p.light(at).map(|l| l & 0x0f);
    assert_eq!(block_light(&player, beside), Some(0), "dark before");
    player.place(beside, "torch");
    player
        .pump_until(Duration::from_secs(30), |p| {
            block_light(p, beside) == Some(14)
        })
        .unwrap_or_else(|| panic!("torch light: {:?}", player.light(beside)));
    if player.voxel_name(next) == Some("air") {
        assert_eq!(block_light(&player, next), Some(13));
    }
    // Taken away, its light goes with it.
    player.dig(beside);
    player
        .pump_until(Duration::from_secs(30), |p| {
            block_light(p, beside) == Some(0)
        })
        .unwrap_or_else(|| panic!("torch gone: {:?}", player.light(beside)));
    // Digging the ground under the player lets the sun in there.
    let below = [feet[0], feet[1] - 1, feet[2]];
    let sun = |p: &Player, at| p.light(at).map(|l| l >> 4);
    assert_eq!(sun(&player, below), Some(0), "solid ground is dark");
    player.dig(below);
    player
        .pump_until(Duration::from_secs(30), |p| {
            sun(p, below).is_some_and(|s| s > 0)
        })
        .unwrap_or_else(|| panic!("the hole stays dark: {:?}", player.light(below)));
    server.stop_cleanly();
}

#[test]
fn a_client_that_stops_acking_stops_receiving_and_resumes() {
    let scratch = Scratch::new();
    scratch.add_game();
    let (mut server, address) = start(&scratch);
    let mut player = Player::join(&address, "lazy");
    player.acking = false;
    player.pump_until(Duration::from_secs(60), |p| p.received.len() >= BUDGET);
    player.pump_until(Duration::from_secs(1), |_| false);
    assert_eq!(
        player.received.len(),
        BUDGET,
        "the in-flight budget, and no more"
    );
    // Still connected and served: a ping is answered.
    player
        .client
        .send_packet(&Ping {
            data: b"still here".to_vec(),
        })
        .unwrap();
    let pong = loop {
        let packet = player
            .client
            .recv(Duration::from_secs(10))
            .unwrap()
            .expect("pong");
        if packet.name == Pong::NAME {
            break Pong::decode(&packet.data).unwrap();
        }
    };
    assert_eq!(pong.data, b"still here");
    player.acking = true;
    player
        .client
        .send_packet(&Ack {
            chunks: BUDGET as u32,
        })
        .unwrap();
    player
        .pump_until(Duration::from_secs(60), |p| p.received.len() == 33)
        .expect("resumed");
    server.stop_cleanly();
}

#[test]
fn edits_reach_other_players_at_once_and_survive_a_restart() {
    let scratch = Scratch::new();
    scratch.add_game();
    let (mut server, address) = start(&scratch);
    let (mut digger, mut watcher) = digger_and_watcher(&address);
    let feet = digger.feet();
    let below = [feet[0], feet[1] - 1, feet[2]];
    let beside = [feet[0] + 2, feet[1], feet[2]];
    digger.dig(below);
    digger.place(beside, "stone");
    watcher
        .pump_until(Duration::from_secs(30), |p| {
            p.voxel_name(below) == Some("air")
                && p.voxel_name(beside) == Some("stone")
                && p.edits.len() >= 2
        })
        .unwrap_or_else(|| panic!("the watcher sees both edits: {:?}", watcher.edits));
    assert!(watcher.edits.contains(&(below, "air".into())));
    assert!(watcher.edits.contains(&(beside, "stone".into())));
    // Refusals: out of reach, unknown voxel.
    digger.dig([feet[0] + 30, feet[1], feet[2]]);
    let refused = loop {
        let packet = digger
            .client
            .recv(Duration::from_secs(10))
            .unwrap()
            .expect("answer");
        if packet.name == Refused::NAME {
            break Refused::decode(&packet.data).unwrap().reason;
        }
    };
    assert!(refused.contains("out of reach"), "{refused}");
    drop(digger);
    drop(watcher);
    server.send("stop");
    assert_eq!(
        server.wait_exit(Duration::from_secs(30)),
        Some(0),
        "{}",
        server.output()
    );

    let (mut server, address) = start(&scratch);
    let mut returning = Player::join(&address, "returning");
    returning
        .pump_until(Duration::from_secs(60), |p| {
            p.voxel_name(beside).is_some() && p.voxel_name(below).is_some()
        })
        .expect("the edited chunks arrive");
    assert_eq!(
        returning.voxel_name(below),
        Some("air"),
        "the dig was saved"
    );
    assert_eq!(
        returning.voxel_name(beside),
        Some("stone"),
        "the placed stone was saved"
    );
    server.stop_cleanly();
}

#[test]
fn players_keep_playing_across_reloads_of_every_game_module() {
    let scratch = Scratch::new();
    scratch.add_game();
    let (mut server, address) = start(&scratch);
    let (mut digger, mut watcher) = digger_and_watcher(&address);
    let digger_peer = digger.peer;
    let digger_node = watcher
        .pump_until(Duration::from_secs(30), |p| {
            p.player_node(digger_peer).is_some()
        })
        .and_then(|_| watcher.player_node(digger_peer))
        .expect("the watcher knows the digger")
        .id;
    // A place sent just before `reload main` waits for the tick: the
    // reload carries it to the next version, which judges it.
    let feet = digger.feet();
    let beside = [feet[0] - 2, feet[1], feet[2]];
    digger.place(beside, "stone");
    for module in [
        "main",
        "voxelworld",
        "network",
        "client_file",
        "worldgen",
        "replicate",
    ] {
        server.send(&format!("reload {module}"));
        server
            .wait_for(&format!("reloaded {module}"), Duration::from_secs(60))
            .unwrap_or_else(|| panic!("reload {module}:\n{}", server.output()));
    }
    watcher
        .pump_until(Duration::from_secs(30), |p| {
            p.voxel_name(beside) == Some("stone")
        })
        .unwrap_or_else(|| {
            panic!(
                "the place sent before the reloads was judged:\n{}",
                server.output()
            )
        });
    // Still joined (no "join first" refusal) and still streamed to.
    let edits = watcher.edits.len();
    digger.dig(beside);
    watcher
        .pump_until(Duration::from_secs(30), |p| {
            p.voxel_name(beside) == Some("air") && p.edits.len() > edits
        })
        .unwrap_or_else(|| panic!("the edit after the reloads reaches the watcher"));
    digger.pump_until(Duration::from_millis(300), |_| false);
    let repeats = watcher.received.len() - watcher.received.iter().collect::<HashSet<_>>().len();
    assert_eq!(
        repeats, 0,
        "no chunk came again: the edit came as a single voxel"
    );
    assert!(watcher.voxel_updates >= 1);
    // The digger's node went through every reload, known all along.
    digger.position[0] += 0.5;
    let position = digger.position;
    digger.client.send_packet(&Move { position }).unwrap();
    watcher
        .pump_until(Duration::from_secs(10), |p| {
            p.nodes.get(&digger_node).map(NodeState::position) == Some(position)
        })
        .unwrap_or_else(|| panic!("the watcher follows the digger's node after the reloads"));
    assert!(
        !server.output().contains("disconnected:"),
        "{}",
        server.output()
    );
    server.stop_cleanly();
}

#[test]
fn a_torch_drops_when_the_voxel_under_it_is_dug() {
    let scratch = Scratch::new();
    scratch.add_game();
    let (mut server, address) = start(&scratch);
    let mut player = Player::join(&address, "torchbearer");
    let feet = player.feet();
    let all = chunks_in_radius(geometry::chunk_of_voxel(feet));
    player
        .pump_until(Duration::from_secs(120), |p| p.received.len() >= all.len())
        .expect("world");
    // A stone put in the air near the player, a torch on it and room
    // around the torch: the stone is all that holds it.
    let up = |p: Pos| [p[0], p[1] + 1, p[2]];
    let sides =
        |p: Pos| [[1, 0], [-1, 0], [0, 1], [0, -1]].map(|[dx, dz]| [p[0] + dx, p[1], p[2] + dz]);
    let (stone, torch) = [[2, 0], [-2, 0], [0, 2], [0, -2], [2, 2], [-2, -2]]
        .into_iter()
        .map(|[dx, dz]| [feet[0] + dx, feet[1], feet[2] + dz])
        .find(|&stone| {
            let (torch, above) = (up(stone), up(up(stone)));
            [stone, torch, above]
                .into_iter()
                .chain(sides(torch))
                .chain(sides(above))
                .all(|v| player.voxel_name(v) == Some("air"))
        })
        .map(|stone| (stone, up(stone)))
        .expect("room for a torch on a stone near the spawn");
    player.place(stone, "stone");
    player.place(torch, "torch");
    player
        .pump_until(Duration::from_secs(30), |p| {
            p.voxel_name(stone) == Some("stone") && p.voxel_name(torch) == Some("torch")
        })
        .unwrap_or_else(|| panic!("the torch stands on the stone:\n{}", server.output()));
    // A torch placed on the torch has nothing to hold it: it drops at once.
    let on_top = up(torch);
    player.place(on_top, "torch");
    player
        .pump_until(Duration::from_secs(30), |p| {
            p.edits.contains(&(on_top, "torch".into())) && p.voxel_name(on_top) == Some("air")
        })
        .unwrap_or_else(|| {
            panic!(
                "a torch held by nothing drops: {:?}\n{}",
                player.voxel_name(on_top),
                server.output()
            )
        });
    player.pump_until(Duration::from_millis(500), |_| false);
    assert_eq!(player.voxel_name(torch), Some("torch"), "held by the stone");
    // The stone dug: the torch on it goes too, seen as a single voxel.
    let updates = player.voxel_updates;
    player.dig(stone);
    player
        .pump_until(Duration::from_secs(30), |p| {
            p.voxel_name(stone) == Some("air") && p.voxel_name(torch) == Some("air")
        })
        .unwrap_or_else(|| {
            panic!(
                "the torch drops with its stone: {:?}\n{}",
                player.voxel_name(torch),
                server.output()
            )
        });
    assert!(
        player.voxel_updates >= updates + 2,
        "the dig, then the drop"
    );
    server.stop_cleanly();
}

/// Sends `packet` and reads until the game refuses it: the reason, and the
/// correction if one came with it.
fn refusal_of<P: Packet>(player: &mut Player, packet: &P) -> (String, Option<[f64; 3]>) {
    player.client.send_packet(packet).unwrap();
    let mut reason = None;
    loop {
        let packet = player
            .client
            .recv(Duration::from_secs(10))
            .expect("connected")
            .unwrap_or_else(|| panic!("refused ({reason:?}) and corrected"));
        match packet.name.as_str() {
            Refused::NAME if reason.is_none() => {
                reason = Some(Refused::decode(&packet.data).unwrap().reason);
                if P::NAME != Move::NAME {
                    return (reason.unwrap_or_default(), None);
                }
            }
            Correct::NAME => {
                let to = Correct::decode(&packet.data).unwrap().position;
                return (reason.expect("the reason comes first"), Some(to));
            }
            _ => {}
        }
    }
}

#[test]
fn the_server_decides_where_players_are_and_what_they_reach() {
    let scratch = Scratch::new();
    scratch.add_game();
    let (mut server, address) = start_with(&scratch, &["main.max_speed=2"]);
    let mut player = Player::join(&address, "cheater");
    let spawn = player.position;
    let [x, y, z] = spawn;
    let moved = |position| Move { position };

    let (reason, back) = refusal_of(&mut player, &moved([x, y + 10.0, z]));
    assert!(reason.contains("no flying"), "{reason}");
    assert_eq!(back, Some(spawn), "snapped back to where it stood");
    let (reason, back) = refusal_of(&mut player, &moved([x, y - 1.5, z]));
    assert!(reason.contains("blocked by a solid voxel"), "{reason}");
    assert_eq!(back, Some(spawn));

    // Hops in place: each costs a voxel of the allowance (16, then 2 a
    // second), so a burst of small moves is refused like one big one.
    let mut refused = None;
    for _ in 0..40 {
        player.client.queue_packet(&moved([x, y + 1.0, z])).unwrap();
        player.client.queue_packet(&moved(spawn)).unwrap();
    }
    player.client.flush().unwrap();
    while refused.is_none() {
        let packet = player
            .client
            .recv(Duration::from_secs(10))
            .expect("connected")
            .expect("a refusal");
        if packet.name == Refused::NAME {
            refused = Some(Refused::decode(&packet.data).unwrap().reason);
        }
    }
    let refused = refused.unwrap_or_default();
    assert!(
        refused.contains("faster than 2 voxels a second"),
        "{refused}"
    );
    // The rest of the burst's refusals.
    while player
        .client
        .recv(Duration::from_millis(700))
        .expect("connected")
        .is_some()
    {}

    // Reach is measured from the server's position, with line of sight.
    let feet = player.feet();
    let (reason, _) = refusal_of(
        &mut player,
        &Dig {
            voxel: [feet[0], feet[1] - 3, feet[2]],
        },
    );
    assert!(reason.contains("out of sight"), "{reason}");
    for name in ["unknown", "air"] {
        let place = Place {
            voxel: [feet[0], feet[1] + 2, feet[2]],
            name: name.into(),
        };
        let (reason, _) = refusal_of(&mut player, &place);
        assert!(reason.contains("cannot be placed"), "{name}: {reason}");
    }
    server.send("stop");
    assert_eq!(server.wait_exit(Duration::from_secs(30)), Some(0));
}

/// A player that joins and waits until it holds `voxel`; its name there.
fn seen_by_newcomer(address: &str, name: &str, voxel: Pos) -> Option<String> {
    let mut player = Player::join(address, name);
    player
        .pump_until(Duration::from_secs(60), |p| p.voxel_name(voxel).is_some())
        .expect("the chunk arrives");
    player.voxel_name(voxel).map(str::to_string)
}

#[test]
fn a_full_disk_loses_no_edit() {
    let scratch = Scratch::new();
    scratch.add_game();
    // The world database may not grow: every save fails as on a full disk.
    let (mut server, address) = start_with(
        &scratch,
        &[
            "voxelworld.max_database_bytes=1",
            "voxelworld.save_interval_s=0.2",
        ],
    );
    let (mut digger, _watcher) = digger_and_watcher(&address);
    let feet = digger.feet();
    let below = [feet[0], feet[1] - 1, feet[2]];
    digger.dig(below);
    server
        .wait_for("cannot save the world", Duration::from_secs(30))
        .unwrap_or_else(|| panic!("the operator is told:\n{}", server.output()));
    // Saves are retried every 0.2 s; the warning is not repeated each time,
    // and the stream keeps serving players.
    assert_eq!(
        seen_by_newcomer(&address, "second", below).as_deref(),
        Some("air")
    );
    server.pump();
    let warnings = server.lines_with(0, "cannot save the world").len();
    assert_eq!(warnings, 1, "{}", server.output());

    // A reload carries the unsaved section to the next version.
    server.send("reload voxelworld");
    server
        .wait_for("reloaded voxelworld", Duration::from_secs(120))
        .unwrap_or_else(|| panic!("{}", server.output()));
    assert_eq!(
        seen_by_newcomer(&address, "third", below).as_deref(),
        Some("air"),
        "the dig survived the reload"
    );

    // `stop` retries, then writes a recovery file.
    server.send("stop");
    assert_eq!(server.wait_exit(Duration::from_secs(60)), Some(0));
    assert!(
        server.output().contains("written to the recovery file"),
        "{}",
        server.output()
    );
    drop(digger);

    // The next start, with room on the disk, takes the edit back.
    let (mut server, address) = start(&scratch);
    server
        .wait_for("unsaved sections from", Duration::from_secs(30))
        .unwrap_or_else(|| panic!("{}", server.output()));
    assert_eq!(
        seen_by_newcomer(&address, "returning", below).as_deref(),
        Some("air"),
        "the dig was kept"
    );
    server.send("stop");
    assert_eq!(server.wait_exit(Duration::from_secs(30)), Some(0));
}

#[test]
fn a_damaged_section_is_quarantined_and_generated_again_for_the_players_near_it() {
    let scratch = Scratch::new();
    scratch.add_game();
    let (mut server, address) = start(&scratch);
    let mut digger = Player::join(&address, "digger");
    let feet = digger.feet();
    let below = [feet[0], feet[1] - 1, feet[2]];
    let everything = chunks_in_radius(geometry::chunk_of_voxel(feet));
    digger
        .pump_until(Duration::from_secs(120), |p| {
            p.received.len() >= everything.len()
        })
        .expect("world");
    let ground = digger.voxel_name(below).expect("held").to_string();
    digger.dig(below);
    digger
        .pump_until(Duration::from_secs(30), |p| {
            p.voxel_name(below) == Some("air")
        })
        .expect("the dig is seen");
    drop(digger);
    server.send("stop");
    assert_eq!(server.wait_exit(Duration::from_secs(30)), Some(0));

    // Every stored section's records are damaged on disk.
    let database = rusqlite::Connection::open(scratch.world().join("world.sqlite")).unwrap();
    let damaged = database
        .execute("UPDATE node SET data = x'deadbeef'", [])
        .unwrap();
    assert!(damaged > 0, "the dig was saved");
    drop(database);

    let (mut server, address) = start(&scratch);
    let mut returning = Player::join(&address, "returning");
    let everything = chunks_in_radius(geometry::chunk_of_voxel(returning.feet()));
    returning
        .pump_until(Duration::from_secs(120), |p| {
            p.received.len() >= everything.len()
        })
        .unwrap_or_else(|| {
            panic!(
                "the whole view radius arrives ({} of {} chunks):\n{}",
                returning.received.len(),
                everything.len(),
                server.output()
            )
        });
    assert_eq!(
        returning.voxel_name(below),
        Some(ground.as_str()),
        "the damaged section is generated again"
    );
    server
        .wait_for("moved to the quarantine table", Duration::from_secs(10))
        .unwrap_or_else(|| panic!("the operator is told:\n{}", server.output()));
    server.send("stop");
    assert_eq!(server.wait_exit(Duration::from_secs(30)), Some(0));
    let database = rusqlite::Connection::open(scratch.world().join("world.sqlite")).unwrap();
    let kept: usize = database
        .query_row(
            "SELECT count(*) FROM quarantine WHERE data = x'deadbeef'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(kept > 0, "the damaged rows are kept aside for the operator");
}
