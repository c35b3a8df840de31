//! Accounts, privileges, chat and moderation against the real server, with
//! wire clients (`RawClient`, the typed `main:*` packets) and the real
//! `buildat-client` binary: a name is claimed by its first login and a
//! wrong password is refused while the first player stays; a player
//! without `interact` cannot dig until granted it; chat and `/msg` reach
//! whom they should; `kick` on the console disconnects the real client,
//! which shows the reason; a banned address cannot connect, also after a
//! restart; passwords are checked off the game's thread, past a cap the
//! login is told the server is busy, and logins being checked when `main`
//! reloads are answered and join as their accounts.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use buildat_format::Packet;
use buildat_harness::raw_client::RawClient;
use buildat_main_api::{Chat, ChatLine, Dig, Edits, LoggedIn, Login, Ping, Pong, Refused};
use buildat_network_api::DisconnectPacket;

use crate::common::{Scratch, client_binary, output_text, start_small_game};

const TIMEOUT: Duration = Duration::from_secs(120);

/// Runs the real client as `name` with `password` until it ends (at most
/// `seconds`).
fn real_client(address: &str, dir: &Path, name: &str, password: &str, seconds: u32) -> Command {
    let file = dir.join(format!("password-{name}"));
    std::fs::write(&file, format!("{password}\n")).expect("password file");
    let mut command = Command::new(client_binary());
    command
        .args(["--connect", address, "--cache"])
        .arg(dir.join("cache"))
        .args(["--name", name, "--password-file"])
        .arg(&file)
        .args(["--quit-after", &seconds.to_string()])
        .stdin(Stdio::null());
    command
}

/// Logs in as `name` and joins; waits for `main:spawn`.
fn log_in(address: &str, name: &str, password: &str) -> RawClient {
    let mut client = RawClient::connect(address).expect("connect");
    client
        .send_packet(&Login {
            name: name.into(),
            password: password.into(),
        })
        .expect("send the login");
    RawClient::join_with(client, name, TIMEOUT).expect("joined")
}

/// Reads until a packet `P` whose decoded form passes `wanted`; the chat
/// lines seen on the way (that one included, if it is one).
fn wait_for<P: Packet>(client: &mut RawClient, mut wanted: impl FnMut(&P) -> bool) -> Vec<String> {
    let deadline = Instant::now() + TIMEOUT;
    let mut lines = Vec::new();
    loop {
        let left = deadline
            .checked_duration_since(Instant::now())
            .unwrap_or_else(|| panic!("no {} in time; chat seen: {lines:?}", P::NAME));
        let Some(packet) = client.recv(left).expect("still connected") else {
            continue;
        };
        if packet.name == ChatLine::NAME {
            lines.push(ChatLine::decode(&packet.data).expect("a chat line").text);
        }
        if packet.name == P::NAME && wanted(&P::decode(&packet.data).expect("decodes")) {
            return lines;
        }
    }
}

/// Reads until the server closes the connection; the reason it gave.
fn disconnect_reason(client: &mut RawClient) -> String {
    let packets = client
        .wait_closed(TIMEOUT)
        .expect("the server closes the connection");
    packets
        .iter()
        .find(|p| p.name == DisconnectPacket::NAME)
        .map(|p| DisconnectPacket::decode(&p.data).expect("a reason").reason)
        .unwrap_or_else(|| panic!("no core:disconnect among {} packets", packets.len()))
}

fn say(client: &mut RawClient, text: &str) {
    client
        .send_packet(&Chat { text: text.into() })
        .expect("send a chat line");
}

/// Still playing: a ping comes back.
fn still_playing(client: &mut RawClient) {
    client
        .send_packet(&Ping {
            data: b"alive?".to_vec(),
        })
        .expect("send a ping");
    wait_for::<Pong>(client, |pong| pong.data == b"alive?");
}

#[test]
fn names_are_claimed_privileges_checked_and_chat_delivered() {
    let scratch = Scratch::new();
    scratch.add_game();
    let (mut server, address) = start_small_game(
        &scratch,
        &[
            "main.guests=false",
            "main.default_privileges=shout",
            "main.admin=Op",
        ],
    );

    // The first login claims the name.
    let mut ann = log_in(&address, "Ann", "ann's secret");

    // A second login under the taken name (any case) with a wrong password,
    // from the real client: refused, and the first player stays.
    let dir = scratch.dir.path();
    let out = real_client(&address, dir, "ANN", "a guess", 60)
        .output()
        .expect("run buildat-client");
    let said = output_text(&out);
    assert_eq!(out.status.code(), Some(5), "disconnected:\n{said}");
    assert!(said.contains("wrong name or password"), "{said}");
    still_playing(&mut ann);
    // So is a guest, on a server that wants passwords.
    let mut guest = RawClient::connect(&address).expect("connect");
    guest
        .send_packet(&buildat_main_api::Join {
            name: "guest".into(),
        })
        .expect("join");
    assert!(disconnect_reason(&mut guest).contains("needs a password"));

    // Without `interact` (the defaults are `shout` only), digging is refused.
    let [x, y, z] = ann.spawn;
    let below = [x.floor() as i32, y.floor() as i32 - 1, z.floor() as i32];
    ann.send_packet(&Dig { voxel: below }).expect("dig");
    wait_for::<Refused>(&mut ann, |r| r.reason.contains("'interact'"));

    // The admin grants it from chat; Ann is told, and digs.
    let mut op = log_in(&address, "op", "op's secret");
    say(&mut op, "/grant ann interact");
    let lines = wait_for::<ChatLine>(&mut op, |l| l.text.contains("granted"));
    assert_eq!(lines, ["granted interact to Ann"]);
    wait_for::<ChatLine>(&mut ann, |l| l.text == "op granted interact");
    ann.send_packet(&Dig { voxel: below }).expect("dig");
    wait_for::<Edits>(&mut ann, |e| e.edits.iter().any(|e| e.voxel == below));

    // A line said reaches everyone; a /msg only its addressee.
    let mut bob = log_in(&address, "bob", "bob's secret");
    say(&mut ann, "hello all");
    for client in [&mut bob, &mut op] {
        wait_for::<ChatLine>(client, |l| l.text == "<Ann> hello all");
    }
    say(&mut op, "/msg bob only for you");
    wait_for::<ChatLine>(&mut bob, |l| l.text == "[op → you] only for you");
    say(&mut op, "/me waves");
    let seen = wait_for::<ChatLine>(&mut ann, |l| l.text == "* op waves");
    assert!(
        seen.iter().all(|l| !l.contains("only for you")),
        "a /msg reached someone else: {seen:?}"
    );
    // Bob holds no `kick`: refused; `/privs` tells what he has.
    say(&mut bob, "/kick Ann");
    wait_for::<ChatLine>(&mut bob, |l| l.text == "/kick needs the 'kick' privilege");
    say(&mut bob, "/privs");
    wait_for::<ChatLine>(&mut bob, |l| l.text.starts_with("yours: shout\n"));
    // Another module's command, through the same registry as the console's.
    say(&mut op, "/world");
    wait_for::<ChatLine>(&mut op, |l| l.text.contains("sections"));
    say(&mut bob, "/world");
    wait_for::<ChatLine>(&mut bob, |l| {
        l.text == "/world needs the 'server' privilege"
    });
    still_playing(&mut ann);
    server.stop_cleanly();
}

#[test]
fn kicks_and_bans_reach_the_client_and_bans_persist() {
    let scratch = Scratch::new();
    scratch.add_game();
    let (mut server, address) = start_small_game(&scratch, &[]);
    let dir = scratch.dir.path();

    // The real client logs in and plays; `kick` on the console ends it,
    // and it shows why.
    let dave = real_client(&address, dir, "dave", "dave's secret", 120)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start buildat-client");
    server.expect_line("player dave (peer", TIMEOUT);
    server.send("kick dave griefing the spawn");
    let out = dave.wait_with_output().expect("the client's output");
    let said = output_text(&out);
    assert_eq!(
        out.status.code(),
        Some(5),
        "disconnected by the server:\n{said}"
    );
    assert!(
        said.contains("kicked by the server: griefing the spawn"),
        "{said}"
    );

    // A banned address cannot connect; another can.
    server.send("ban 127.0.0.2 1d spamming");
    server.expect_line("127.0.0.2 is banned for 24 h 0 min", TIMEOUT);
    let banned = || {
        let mut client = RawClient::connect_from(&address, "127.0.0.2".parse().unwrap())
            .expect("the TCP connection is accepted");
        disconnect_reason(&mut client)
    };
    let reason = banned();
    assert!(
        reason.starts_with("banned from this server: spamming (for 23 h 59 min"),
        "{reason}"
    );
    let mut eve = log_in(&address, "eve", "eve's secret");
    still_playing(&mut eve);

    // A banned name cannot log in, with the right password either.
    server.send("ban Eve cheating");
    assert!(disconnect_reason(&mut eve).contains("cheating"));
    let mut again = RawClient::connect(&address).expect("connect");
    again
        .send_packet(&Login {
            name: "eve".into(),
            password: "eve's secret".into(),
        })
        .expect("login");
    assert!(disconnect_reason(&mut again).contains("cheating"));

    // Bans are kept in the world's database: after a restart, still banned.
    server.stop_cleanly();
    drop(server);
    let (mut server, address) = start_small_game(&scratch, &[]);
    let mut client = RawClient::connect_from(&address, "127.0.0.2".parse().unwrap())
        .expect("the TCP connection is accepted");
    assert!(disconnect_reason(&mut client).contains("spamming"));
    server.send("unban 127.0.0.2");
    server.expect_line("127.0.0.2 is no longer banned", TIMEOUT);
    let mut client =
        RawClient::connect_from(&address, "127.0.0.2".parse().unwrap()).expect("connect");
    client
        .send_packet(&Login {
            name: "frank".into(),
            password: "frank's secret".into(),
        })
        .expect("login");
    wait_for::<LoggedIn>(&mut client, |l| l.name == "frank");
    server.stop_cleanly();
}

/// Reads until the login's answer: the account's name, or why the server
/// closed the connection.
fn login_answer(client: &mut RawClient) -> Result<String, String> {
    let deadline = Instant::now() + TIMEOUT;
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        match client.recv(left) {
            Ok(Some(packet)) if packet.name == LoggedIn::NAME => {
                return Ok(LoggedIn::decode(&packet.data).expect("a name").name);
            }
            Ok(Some(packet)) if packet.name == DisconnectPacket::NAME => {
                return Err(DisconnectPacket::decode(&packet.data)
                    .expect("a reason")
                    .reason);
            }
            Ok(_) => {}
            Err(error) => return Err(format!("closed without a reason: {error}")),
        }
    }
    panic!("no answer to the login in time");
}

#[test]
fn logins_are_checked_off_the_game_thread_capped_and_answered_across_a_reload() {
    let scratch = Scratch::new();
    scratch.add_game();
    let (mut server, address) = start_small_game(
        &scratch,
        &[
            "main.login_threads=1",
            "main.max_pending_logins=2",
            "main.logins_per_address_per_minute=100",
        ],
    );
    let login = |name: &str| {
        let mut client = RawClient::connect(&address).expect("connect");
        client
            .send_packet(&Login {
                name: name.into(),
                password: format!("{name}'s secret"),
            })
            .expect("send the login");
        client
    };
    // Eight claims at once: two wait for the one worker, the others are
    // told the server is busy; every one is answered, and a player already
    // on plays on meanwhile.
    let mut first = log_in(&address, "first", "first's secret");
    let mut clients: Vec<RawClient> = (0..8).map(|i| login(&format!("user{i}"))).collect();
    still_playing(&mut first);
    let answers: Vec<Result<String, String>> = clients.iter_mut().map(login_answer).collect();
    let busy = answers
        .iter()
        .filter(|a| {
            a.as_ref()
                .is_err_and(|r| r.contains("busy") && r.contains("try again"))
        })
        .count();
    let logged_in = answers.iter().filter(|a| a.is_ok()).count();
    assert!(busy >= 1 && logged_in >= 1, "{answers:?}");
    assert_eq!(busy + logged_in, 8, "{answers:?}");
    // A busy refusal is no attempt against the name: it logs in now.
    let refused = answers.iter().position(|a| a.is_err()).expect("one busy");
    let name = format!("user{refused}");
    let mut again = login(&name);
    assert_eq!(login_answer(&mut again), Ok(name.clone()));

    // `reload main` while logins are checked: each is answered by the old
    // version, and the new one lets them join as their accounts.
    let mut late = vec![login("late0"), login("late1")];
    server.send("reload main");
    for (i, client) in late.drain(..).enumerate() {
        let mut client = client;
        let name = format!("late{i}");
        assert_eq!(login_answer(&mut client), Ok(name.clone()));
        let mut client = RawClient::join_with(client, "ignored", TIMEOUT).expect("joins");
        still_playing(&mut client);
    }
    server.expect_line("reloaded main", TIMEOUT);
    still_playing(&mut first);
    server.stop_cleanly();
}
