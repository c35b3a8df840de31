//! The example modules (`examples/modules`, written on the modkit) in the
//! real server beside the default game, loaded with `--modules
//! examples/modules`: `hello` answers on the console and in chat with its
//! setting's words and keeps its count over a reload; `bouncer` puts a
//! torch on itself when a player places it, is told which player touched
//! it, says who used it (`main:use`, judged by the game and told to the
//! block's module) and says so when dug;
//! `circler`'s entity appears above spawn and a player sees it move.

use std::collections::BTreeMap;
use std::process::Stdio;
use std::time::{Duration, Instant};

use buildat_format::Packet;
use buildat_harness::raw_client::RawClient;
use buildat_main_api::{Chat, ChatLine, Dig, Join, Place, Refused, Spawn, Use};
use buildat_replicate_api::{NodeState, NodeUpdates};
use buildat_voxel::geometry::Pos;

use crate::common::{Scratch, Server, console, repo_root, start_server};

/// A player: what it was told in chat, the nodes it knows.
struct Player {
    client: RawClient,
    feet: Pos,
    chat: Vec<String>,
    refused: Vec<String>,
    nodes: BTreeMap<u64, NodeState>,
    /// Every position the circler's node was seen at, in order.
    circler: Vec<[f64; 3]>,
}

impl Player {
    fn join(address: &str, name: &str) -> Self {
        let mut client = RawClient::connect(address).expect("connect");
        let join = Join {
            name: name.to_string(),
        };
        client.send_packet(&join).expect("join");
        let mut player = Self {
            client,
            feet: [i32::MIN; 3],
            chat: Vec::new(),
            refused: Vec::new(),
            nodes: BTreeMap::new(),
            circler: Vec::new(),
        };
        player
            .pump_until(Duration::from_secs(120), |p| p.feet[0] != i32::MIN)
            .expect("spawned");
        player
    }

    /// Handles packets until `done` or the timeout.
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
                    let spawn = Spawn::decode(&packet.data).unwrap();
                    self.feet = spawn.position.map(|p| p.floor() as i32);
                }
                ChatLine::NAME => self.chat.push(ChatLine::decode(&packet.data).unwrap().text),
                Refused::NAME => self
                    .refused
                    .push(Refused::decode(&packet.data).unwrap().reason),
                NodeUpdates::NAME => {
                    let updates = NodeUpdates::decode(&packet.data).unwrap();
                    for state in updates.added {
                        self.nodes.insert(state.id, state);
                    }
                    for delta in &updates.changed {
                        if let Some(node) = self.nodes.get_mut(&delta.id) {
                            node.apply(delta);
                        }
                    }
                    for id in &updates.removed {
                        self.nodes.remove(id);
                    }
                    if let Some(circler) = self
                        .nodes
                        .values()
                        .find(|n| n.var("entity") == Some(&b"circler"[..]))
                    {
                        self.circler.push(circler.position());
                    }
                }
                _ => {}
            }
        }
        Some(())
    }

    fn said(&self, text: &str) -> bool {
        self.chat.iter().any(|line| line.contains(text))
    }
}

fn start(scratch: &Scratch) -> (Server, String) {
    let mut args = scratch.server_args();
    let examples = repo_root().join("examples").join("modules");
    args.extend(
        [
            "--modules",
            &examples.display().to_string(),
            "--set",
            "hello.text=hi there",
            "--set",
            "voxelworld.view_radius=1",
            "--listen",
            "127.0.0.1:0",
            "--no-watch",
        ]
        .map(String::from),
    );
    let mut server = start_server(&args, Stdio::piped());
    let address = server.listen_address();
    server.expect_line("server started", Duration::from_secs(600));
    (server, address)
}

#[test]
fn the_examples_load_beside_the_game_and_do_their_thing() {
    let scratch = Scratch::new();
    scratch.add_game();
    let (mut server, address) = start(&scratch);

    // hello: on the console, in chat, and over a reload, in its setting's
    // words.
    console(&mut server, "hello", "hi there #1");
    let mut ann = Player::join(&address, "ann");
    let chat = Chat {
        text: "/hello".into(),
    };
    ann.client.send_packet(&chat).unwrap();
    ann.pump_until(Duration::from_secs(30), |p| p.said("hi there #2"))
        .unwrap_or_else(|| panic!("/hello answers in chat: {:?}", ann.chat));
    // A reload may wait for other tests' module builds (one at a time).
    server.send("reload hello");
    server.expect_line("reloaded hello", Duration::from_secs(600));
    console(&mut server, "hello", "hi there #3");

    // bouncer: placed above ann's head (air: the spawn is on the column's
    // highest ground), it puts a torch on itself, which touches it.
    let at = [ann.feet[0], ann.feet[1] + 2, ann.feet[2]];
    let place = Place {
        voxel: at,
        name: "bouncer".into(),
    };
    ann.client.send_packet(&place).unwrap();
    server
        .wait_for(
            &format!("bouncer {at:?} touched by None"),
            Duration::from_secs(30),
        )
        .unwrap_or_else(|| {
            panic!(
                "the bouncer's torch touched it (refused: {:?}):\n{}",
                ann.refused,
                server.output()
            )
        });
    // ann puts dirt beside it (where there is air): the bouncer is told
    // who touched it.
    let by_ann = format!("bouncer {at:?} touched by Some(\"ann\")");
    let touched = [[1, 0], [-1, 0], [0, 1], [0, -1]]
        .into_iter()
        .any(|[dx, dz]| {
            let place = Place {
                voxel: [at[0] + dx, at[1], at[2] + dz],
                name: "dirt".into(),
            };
            ann.client.send_packet(&place).unwrap();
            server.wait_for(&by_ann, Duration::from_secs(5)).is_some()
        });
    assert!(touched, "ann touched the bouncer:\n{}", server.output());
    ann.client.send_packet(&Use { voxel: at }).unwrap();
    ann.pump_until(Duration::from_secs(30), |p| p.said("ann bounces ("))
        .unwrap_or_else(|| {
            panic!(
                "using the bouncer is announced: {:?} (refused: {:?})",
                ann.chat, ann.refused
            )
        });
    ann.client.send_packet(&Dig { voxel: at }).unwrap();
    let gone = format!("the bouncer at {at:?} is gone");
    ann.pump_until(Duration::from_secs(30), |p| p.said(&gone))
        .unwrap_or_else(|| panic!("digging the bouncer is announced: {:?}", ann.chat));

    // circler: its node appears above the spawn and ann sees it move.
    ann.pump_until(Duration::from_secs(60), |p| {
        let mut seen: Vec<String> = p.circler.iter().map(|p| format!("{p:?}")).collect();
        seen.dedup();
        seen.len() >= 10
    })
    .unwrap_or_else(|| {
        panic!(
            "ann sees the circler move: {:?}\n{}",
            ann.circler,
            server.output()
        )
    });
    server
        .wait_for_from(0, "made circler", Duration::from_secs(10))
        .expect("the circler's making is logged");
}
