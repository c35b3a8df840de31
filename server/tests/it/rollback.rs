//! The rollback log on the real server: a griefer's edits are logged with
//! its name, `inspect` shows them, `rollback griefer 10m` previews (on the
//! console and in chat) and `/rollback confirm` in chat puts the voxels
//! back while the player who ran it, standing there, is streamed the
//! change (its own edit stays); `restore` brings the griefer's voxels
//! again; `rollback 127.0.0.1 10m` names both bots; `/inspect` mode shows
//! a dug voxel's history instead of digging it. A player's inventory move
//! (and the operator's give) is listed by `inspect player NAME`. The log
//! goes with a backup: restored into a new world, `inspect` there tells the
//! same history.

use buildat_format::Packet;
use buildat_main_api::{Chat, ChatLine, Dig, Join, Place, Refused, Spawn};
use buildat_voxelworld_api::stream::{Ack, Chunk, Registry, VoxelUpdates};
use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::common::{Scratch, console, run_headless_args, start_server, with_world};
use buildat_format::decode_voxels;
use buildat_harness::raw_client::RawClient;
use buildat_voxel::geometry::{self, Pos};

/// A player as the test sees it: the chunks it holds, kept up to date.
struct Player {
    client: RawClient,
    position: [f64; 3],
    spawned: bool,
    names: Vec<String>,
    chunks: HashMap<Pos, Vec<u32>>,
    /// Chat lines received.
    chat: Vec<String>,
}

impl Player {
    fn join(address: &str, name: &str) -> Self {
        let mut client = RawClient::connect(address).expect("connect");
        client
            .send_packet(&Join {
                name: name.to_string(),
            })
            .expect("join");
        let mut player = Self {
            client,
            position: [0.0; 3],
            spawned: false,
            names: Vec::new(),
            chunks: HashMap::new(),
            chat: Vec::new(),
        };
        player
            .pump_until(Duration::from_secs(120), |p| {
                p.spawned && p.voxel_name(p.feet()).is_some()
            })
            .expect("spawned, its chunk held");
        player
    }

    /// Handles packets until `done` or the timeout (`None`).
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
                    self.position = Spawn::decode(&packet.data).expect("spawn").position;
                    self.spawned = true;
                }
                Registry::NAME => {
                    let mut registry = Registry::decode(&packet.data).expect("registry");
                    registry.voxels.reindex();
                    self.names = registry
                        .voxels
                        .definitions()
                        .iter()
                        .map(|d| d.name.canonical())
                        .collect();
                }
                Chunk::NAME => {
                    let chunk = Chunk::decode(&packet.data).expect("chunk");
                    let names = &self.names;
                    let voxels = decode_voxels(
                        &chunk.blob,
                        |n| names.iter().position(|x| x == n).map(|i| i as u32),
                        1,
                    )
                    .expect("voxels")
                    .voxels;
                    self.chunks.insert(chunk.chunk, voxels);
                    self.client.send_packet(&Ack { chunks: 1 }).expect("ack");
                }
                VoxelUpdates::NAME => {
                    let updates = VoxelUpdates::decode(&packet.data).expect("updates");
                    if let Some(voxels) = self.chunks.get_mut(&updates.chunk) {
                        for (index, value) in updates.changes {
                            voxels[usize::from(index)] =
                                buildat_voxel::VoxelInstance(value).type_id();
                        }
                    }
                }
                ChatLine::NAME => {
                    self.chat
                        .push(ChatLine::decode(&packet.data).expect("chat line").text);
                }
                Refused::NAME => {
                    panic!(
                        "refused: {}",
                        Refused::decode(&packet.data).expect("refused").reason
                    )
                }
                _ => {}
            }
        }
        Some(())
    }

    fn voxel_name(&self, voxel: Pos) -> Option<&str> {
        let chunk = self.chunks.get(&geometry::chunk_of_voxel(voxel))?;
        let id = chunk[geometry::index_in_chunk(voxel)];
        self.names.get(id as usize).map(String::as_str)
    }

    fn feet(&self) -> Pos {
        self.position.map(|p| p.floor() as i32)
    }

    /// Waits until this player sees each voxel as named.
    fn sees(&mut self, expected: &[(Pos, &str)], what: &str) {
        let seen = self.pump_until(Duration::from_secs(30), |p| {
            expected
                .iter()
                .all(|(pos, name)| p.voxel_name(*pos) == Some(*name))
        });
        if seen.is_none() {
            let now: Vec<_> = expected
                .iter()
                .map(|(pos, _)| (*pos, self.voxel_name(*pos).map(str::to_string)))
                .collect();
            panic!("{what}: expected {expected:?}, seen {now:?}");
        }
    }
}

#[test]
fn a_griefers_edits_are_rolled_back_while_another_player_watches_and_restored() {
    let started = Instant::now();
    let scratch = Scratch::new();
    scratch.add_game();
    // Guests may run the log's commands (privilege `server`) in chat.
    let (mut server, address) = crate::common::start_small_game(
        &scratch,
        &["main.default_privileges=interact,shout,server"],
    );
    let mut griefer = Player::join(&address, "griefer");
    let mut builder = Player::join(&address, "builder");
    let feet = griefer.feet();
    let below = [feet[0], feet[1] - 1, feet[2]];
    let ground = griefer.voxel_name(below).expect("held").to_string();
    assert_ne!(ground, "air", "standing on something");
    let placed = [feet[0] + 2, feet[1], feet[2]];
    let built = [feet[0], feet[1], feet[2] + 2];
    let free = |p: &Player, pos: Pos| p.voxel_name(pos) == Some("air");
    assert!(
        free(&griefer, placed) && free(&griefer, built),
        "air to build in"
    );

    griefer.dig(below);
    griefer.place(placed, "stone");
    builder.place(built, "stone");
    let griefed = [(below, "air"), (placed, "stone"), (built, "stone")];
    builder.sees(&griefed, "the edits");

    let history = console(
        &mut server,
        &format!("inspect {} {} {}", below[0], below[1], below[2]),
        "griefer:",
    );
    assert!(
        history.contains(&format!("griefer: {ground} -> air")),
        "{history}"
    );

    let preview = console(&mut server, "rollback griefer 10m", "rollback preview");
    assert!(
        preview.contains("2 edits by griefer on 2 voxels"),
        "{preview}"
    );
    // The same in chat, by the builder: its own preview, confirmed.
    let preview = builder.command("/rollback griefer 10m", "rollback preview");
    assert!(preview.contains("on 2 voxels"), "{preview}");
    let done = builder.command("/rollback confirm", "voxels put back");
    assert!(done.contains("2 voxels put back"), "{done}");
    builder.sees(
        &[(below, ground.as_str()), (placed, "air"), (built, "stone")],
        "the rollback streamed to the builder",
    );

    let restored = console(&mut server, "restore", "restore:");
    assert!(restored.contains("2 of 2"), "{restored}");
    builder.sees(&griefed, "the restore streamed to the builder");

    // Newest first: the restore, then the rollback, then the griefer.
    let inspect = format!("inspect {} {} {}", placed[0], placed[1], placed[2]);
    let newest = console(&mut server, &inspect, "restore: air -> stone");
    let line = server
        .wait_for_from(0, "griefer: air -> stone", Duration::from_secs(10))
        .expect("the griefer's edit in the history");
    assert!(newest.contains("ago"), "{newest} / {line}");

    // By address: both bots played from 127.0.0.1; the preview names them.
    let by_address = console(&mut server, "rollback 127.0.0.1 10m", "rollback preview");
    assert!(
        by_address.contains("3 edits by 127.0.0.1 (builder, griefer) on 3 voxels"),
        "{by_address}"
    );

    // Inspect mode: the builder's dig shows the voxel's history and does
    // not dig it; after /inspect off a dig digs.
    builder.command("/inspect", "inspect mode on");
    let from = builder.chat.len();
    builder.dig(placed);
    let told = builder.pump_until(Duration::from_secs(30), |p| {
        p.chat[from..]
            .iter()
            .any(|l| l.contains("restore: air -> stone") && l.contains("griefer: air -> stone"))
    });
    assert!(
        told.is_some(),
        "the history in chat: {:?}",
        &builder.chat[from..]
    );
    builder.command("/inspect off", "inspect mode off");
    assert_eq!(builder.voxel_name(placed), Some("stone"), "not dug");
    builder.dig(placed);
    builder.sees(&[(placed, "air")], "a dig after inspect mode");
    drop(griefer);
    drop(builder);
    server.stop_cleanly();
    println!("rollback e2e took {:?}", started.elapsed());
}

impl Player {
    /// Says `line` in chat and waits for a chat line holding `answer`.
    fn command(&mut self, line: &str, answer: &str) -> String {
        let from = self.chat.len();
        self.client
            .send_packet(&Chat { text: line.into() })
            .expect("chat");
        let found = |p: &Self| p.chat[from..].iter().any(|l| l.contains(answer));
        if self.pump_until(Duration::from_secs(30), found).is_none() {
            panic!("'{line}' answers '{answer}': {:?}", &self.chat[from..]);
        }
        self.chat[from..]
            .iter()
            .find(|l| l.contains(answer))
            .cloned()
            .unwrap_or_default()
    }

    fn dig(&mut self, voxel: Pos) {
        self.client.send_packet(&Dig { voxel }).expect("dig");
    }

    fn place(&mut self, voxel: Pos, name: &str) {
        let name = name.to_string();
        self.client
            .send_packet(&Place { voxel, name })
            .expect("place");
    }
}

/// In the survival game: the operator gives a player stone and the player
/// moves two of it to another slot with an `inventory:act` packet; the
/// transactions reach the rollback log (through the inventory module's
/// event to voxelworld) and `inspect player NAME` lists them, newest first.
#[test]
fn a_players_inventory_move_is_listed_by_inspect_player() {
    use buildat_inventory_api::{Act, Action, Owner, SlotRef};

    let scratch = Scratch::new();
    scratch.add_survival_game();
    let (mut server, address) = crate::common::start_small_game(&scratch, &[]);
    let mut mover = Player::join(&address, "mover");
    // The items module learns the terrain's blocks a moment after start.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let answer = console(&mut server, "give mover stone 5", "mover");
        if answer.contains("gave ") {
            break;
        }
        assert!(
            answer.contains("unknown item") && Instant::now() < deadline,
            "{answer}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    let slot = |index| SlotRef {
        owner: Owner::Player("mover".into()),
        list: "main".into(),
        index,
    };
    mover
        .client
        .send_packet(&Act {
            seq: 1,
            action: Action::Move {
                from: slot(0),
                to: slot(4),
                count: 2,
            },
        })
        .expect("act");
    // Stored, then told to the log: asked again until it is there.
    let deadline = Instant::now() + Duration::from_secs(30);
    let from = loop {
        mover.pump_until(Duration::from_millis(300), |_| false);
        server.pump();
        let from = server.seen.len();
        server.send("inspect player mover");
        let heading = server
            .wait_for_from(from, "inventory change", Duration::from_secs(30))
            .expect("inspect answers");
        if heading.contains("inventory changes, newest first") {
            let moved = server.wait_for_from(
                from,
                "mover: +2 stone into player:mover main slot 4",
                Duration::from_secs(5),
            );
            if moved.is_some() {
                break from;
            }
        }
        assert!(Instant::now() < deadline, "{}", server.output());
    };
    for line in [
        "mover: -2 stone out of player:mover main slot 0",
        "console: +5 stone into player:mover main slot 0",
    ] {
        assert!(
            server
                .wait_for_from(from, line, Duration::from_secs(5))
                .is_some(),
            "{line}: {}",
            server.output()
        );
    }
    drop(mover);
    server.stop_cleanly();
}

/// A griefer's edits, backed up on the live server (`backup FILE`), are in
/// the backup's log (`inspect FILE --verify` decodes its blocks); restored
/// into a new world, `inspect X Y Z` there tells the same history.
#[test]
fn the_log_goes_with_a_backup_into_a_restored_world() {
    let scratch = Scratch::new();
    scratch.add_game();
    let (mut server, address) = crate::common::start_small_game(&scratch, &[]);
    let mut griefer = Player::join(&address, "griefer");
    let feet = griefer.feet();
    let below = [feet[0], feet[1] - 1, feet[2]];
    let ground = griefer.voxel_name(below).expect("held").to_string();
    assert_ne!(ground, "air", "standing on something");
    griefer.dig(below);
    griefer.sees(&[(below, "air")], "the dig");
    let inspect = format!("inspect {} {} {}", below[0], below[1], below[2]);
    let told = format!("griefer: {ground} -> air");
    let history = console(&mut server, &inspect, "griefer:");
    assert!(history.contains(&told), "{history}");

    let file = scratch.dir.path().join("logged.backup");
    console(
        &mut server,
        &format!("backup {}", file.display()),
        "backup started into",
    );
    let done = server
        .wait_for("backup done in", Duration::from_secs(120))
        .unwrap_or_else(|| panic!("the backup ends:\n{}", server.output()));
    assert!(
        done.contains(" log blocks, ") && !done.contains(" 0 log blocks"),
        "{done}"
    );
    drop(griefer);
    server.stop_cleanly();

    let verified = run_headless_args(&[
        "inspect".to_string(),
        file.display().to_string(),
        "--verify".into(),
    ]);
    assert!(
        verified.contains("blocks of the rollback log read whole")
            && verified.contains("every log block decodes")
            && !verified.contains(" 0 blocks of the rollback log"),
        "{verified}"
    );

    let restored = scratch.dir.path().join("restored");
    let mut args = vec!["restore".to_string(), file.display().to_string()];
    args.extend(with_world(scratch.server_args(), &restored));
    let output = run_headless_args(&args);
    assert!(output.contains("restore done in"), "{output}");
    assert!(!output.contains(" 0 log blocks"), "{output}");

    let mut args = with_world(scratch.server_args(), &restored);
    args.extend(
        [
            "--set",
            "voxelworld.view_radius=1",
            "--listen",
            "127.0.0.1:0",
            "--no-watch",
        ]
        .map(String::from),
    );
    let mut server = start_server(&args, std::process::Stdio::piped());
    server.expect_line("server started", Duration::from_secs(120));
    let history = console(&mut server, &inspect, "griefer:");
    assert!(history.contains(&told), "in the restored world: {history}");
    server.stop_cleanly();
}
