//! Accounts, privileges, chat and moderation against the real server, with
//! wire clients (`RawClient`, the typed `main:*` packets) and the real
//! `buildat-client` binary: a name is claimed by its first login and a
//! wrong password is refused while the first player stays; a player
//! without `interact` cannot dig until granted it; chat and `/msg` reach
//! whom they should; `kick` on the console disconnects the real client,
//! which shows the reason; a banned address cannot connect, also after a
//! restart; passwords are checked off the game's thread, past a cap the
//! login is told the server is busy, and logins being checked when `main`
//! reloads are answered and join as their accounts; accounts, privileges
//! and bans move with the world to PostgreSQL and come back from a backup;
//! loopback peers of an open port play as guests, others need accounts;
//! admin is the operator's act on an account (`main.admin` refused); a
//! stranger's failures never lock an owner out and one address cannot fill
//! the login queue; names are never addresses, a mapped address is its
//! IPv4 form, new accounts have a rate; `/password`, `resetpassword` and
//! `deleteaccount`.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use buildat_format::Packet;
use buildat_harness::raw_client::RawClient;
use buildat_main_api::{Chat, ChatLine, Dig, Edits, LoggedIn, Login, Ping, Pong, Refused};
use buildat_network_api::DisconnectPacket;

use buildat_harness::pg::TestDatabase;

use crate::common::{
    Scratch, Server, client_binary, console, output_text, run_headless, run_headless_args,
    start_small_game,
};

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

/// A new connection that has sent a login for `name`.
fn send_login(address: &str, name: &str, password: &str) -> RawClient {
    send_login_from(address, "127.0.0.1", name, password)
}

/// A new connection from `source` (a loopback address: 127.0.0.2 and up
/// are other addresses to the server's limits) that has sent a login.
fn send_login_from(address: &str, source: &str, name: &str, password: &str) -> RawClient {
    let source = source.parse().expect("an address");
    let mut client = RawClient::connect_from(address, source).expect("connect");
    client
        .send_packet(&Login {
            name: name.into(),
            password: password.into(),
        })
        .expect("send the login");
    client
}

/// Logs in as `name` and joins; waits for `main:spawn`.
fn log_in(address: &str, name: &str, password: &str) -> RawClient {
    RawClient::join_with(send_login(address, name, password), name, TIMEOUT).expect("joined")
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
        &["main.guests=false", "main.default_privileges=shout"],
    );

    // The first login claims the name.
    let mut ann = log_in(&address, "Ann", "ann's secret");
    // The operator makes an admin of an account.
    let mut op = log_in(&address, "op", "op's secret");
    console(&mut server, "admin op", "granted ");
    wait_for::<ChatLine>(&mut op, |l| l.text.starts_with("the server granted ban, "));

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
    let mut again = send_login(&address, "eve", "eve's secret");
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
    // Each from an address of its own (one address has its own cap).
    let from = std::cell::Cell::new(10u8);
    let login = |name: &str| {
        from.set(from.get() + 1);
        let source = format!("127.0.0.{}", from.get());
        send_login_from(&address, &source, name, &format!("{name}'s secret"))
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

/// Sends a login for `name` and reads its answer.
fn try_login(address: &str, name: &str, password: &str) -> Result<String, String> {
    login_answer(&mut send_login(address, name, password))
}

/// What a world's accounts must still be wherever it went: Gina's
/// password (and only hers), her granted `fly`, the address ban.
fn check_accounts_kept(server: &mut Server, address: &str, where_: &str) {
    assert_eq!(
        try_login(address, "gina", "gina's secret"),
        Ok("Gina".to_string()),
        "{where_}"
    );
    let refused = try_login(address, "gina", "a guess").expect_err("a wrong password");
    assert!(
        refused.contains("wrong name or password"),
        "{where_}: {refused}"
    );
    let privileges = console(server, "privs gina", "gina: ");
    assert!(privileges.contains("fly"), "{where_}: {privileges}");
    let mut banned = RawClient::connect_from(address, "127.0.0.3".parse().unwrap())
        .expect("the TCP connection is accepted");
    assert!(
        disconnect_reason(&mut banned).contains("spamming"),
        "{where_}"
    );
}

#[test]
fn accounts_move_with_the_world_to_postgresql_and_into_backups() {
    let Some(database) = TestDatabase::on_test_cluster("buildat_it_accounts") else {
        return;
    };
    let scratch = Scratch::new();
    scratch.add_game();
    // On SQLite: a name claimed, a privilege granted, an address banned.
    let (mut server, address) = start_small_game(&scratch, &["main.guests=false"]);
    let mut gina = log_in(&address, "Gina", "gina's secret");
    still_playing(&mut gina);
    console(&mut server, "grant gina fly", "granted fly to Gina");
    console(&mut server, "ban 127.0.0.3 spamming", "127.0.0.3 is banned");
    drop(gina);
    server.stop_cleanly();
    drop(server);

    // `migrate` takes them to PostgreSQL with the sections.
    let to_pg = ["migrate".to_string(), "--to".into(), database.url.clone()];
    let (status, output) = run_headless(&scratch, &to_pg);
    assert_eq!(status, Some(0), "{output}");
    assert!(output.contains("and 4 values copied"), "{output}");
    let on_pg = format!("voxelworld.storage={}", database.url);
    let (mut server, address) = start_small_game(&scratch, &["main.guests=false", &on_pg]);
    check_accounts_kept(&mut server, &address, "on PostgreSQL");
    server.stop_cleanly();
    drop(server);

    // A backup of the PostgreSQL world holds them; restored into a new
    // SQLite world, they are there.
    let file = scratch.dir.path().join("accounts.backup");
    let backup = [
        "backup".to_string(),
        file.display().to_string(),
        "--set".into(),
        on_pg,
    ];
    let (status, output) = run_headless(&scratch, &backup);
    assert_eq!(status, Some(0), "{output}");
    assert!(output.contains(" nodes, 4 values, "), "{output}");
    let inspected = run_headless_args(&["inspect".to_string(), file.display().to_string()]);
    assert!(
        inspected.contains(
            "4 module values: main.accounts 1, main.bans 1, main.logins 1, main.privileges 1"
        ),
        "{inspected}"
    );
    assert!(!inspected.contains("argon2"), "values are never shown");
    std::fs::remove_dir_all(scratch.world()).expect("remove the world");
    let (status, output) = run_headless(
        &scratch,
        &["restore".to_string(), file.display().to_string()],
    );
    assert_eq!(status, Some(0), "{output}");
    assert!(
        output.contains(" nodes and 4 values, ") && output.contains("log blocks written"),
        "{output}"
    );
    let (mut server, address) = start_small_game(&scratch, &["main.guests=false"]);
    check_accounts_kept(&mut server, &address, "restored into SQLite");
    server.stop_cleanly();
}

#[test]
fn an_older_worlds_account_tables_are_taken_in_at_start() {
    let scratch = Scratch::new();
    scratch.add_game();
    // A world as the version before values left it: main's own tables in
    // world.sqlite.
    std::fs::create_dir_all(scratch.world()).expect("the world's folder");
    let old = rusqlite::Connection::open(scratch.world().join("world.sqlite")).expect("open");
    old.execute_batch(
        "CREATE TABLE main_accounts (key TEXT PRIMARY KEY NOT NULL, name TEXT NOT NULL,
             verifier TEXT NOT NULL, created_ms INTEGER NOT NULL);
         CREATE TABLE main_privileges (key TEXT NOT NULL, privilege TEXT NOT NULL,
             PRIMARY KEY (key, privilege));
         CREATE TABLE main_bans (kind TEXT NOT NULL, value TEXT NOT NULL, reason TEXT NOT NULL,
             by TEXT NOT NULL, expires_ms INTEGER, PRIMARY KEY (kind, value));
         INSERT INTO main_accounts VALUES ('olga', 'Olga', '$argon2id$v=19$m=19456,t=2,p=1$x$y', 1);
         INSERT INTO main_privileges VALUES ('olga', 'fly');
         INSERT INTO main_bans VALUES ('ip', '127.0.0.4', 'an old ban', 'op', NULL);",
    )
    .expect("the old tables");
    drop(old);
    let (mut server, address) = start_small_game(&scratch, &[]);
    server.expect_line("took in 1 accounts, 1 privileges and 1 bans", TIMEOUT);
    let mut banned = RawClient::connect_from(&address, "127.0.0.4".parse().unwrap())
        .expect("the TCP connection is accepted");
    assert!(disconnect_reason(&mut banned).contains("an old ban"));
    let mut guest = RawClient::connect(&address).expect("connect");
    guest
        .send_packet(&buildat_main_api::Join {
            name: "olga".into(),
        })
        .expect("join");
    let reason = disconnect_reason(&mut guest);
    assert!(
        reason.contains("olga has an account: log in with its password"),
        "{reason}"
    );
    console(&mut server, "privs olga", "olga: fly");
    server.stop_cleanly();
    drop(server);
    // Taken in once: the next start finds no old table.
    let tables: Vec<String> = rusqlite::Connection::open(scratch.world().join("world.sqlite"))
        .expect("open")
        .prepare("SELECT name FROM sqlite_master WHERE name LIKE 'main_%'")
        .expect("query")
        .query_map([], |r| r.get(0))
        .expect("rows")
        .collect::<Result<_, _>>()
        .expect("names");
    assert!(tables.is_empty(), "{tables:?}");
}

/// The real server listening on `listen` (such as `0.0.0.0:0`, `[::]:0`)
/// over plaintext, with `settings`; its port.
fn start_open_game(scratch: &Scratch, listen: &str, settings: &[&str]) -> (Server, u16) {
    let mut args = scratch.server_args();
    for setting in ["network.tls=off", "voxelworld.view_radius=1"]
        .iter()
        .chain(settings)
    {
        args.extend(["--set".to_string(), setting.to_string()]);
    }
    args.extend(["--listen", listen, "--no-watch"].map(String::from));
    let mut server = crate::common::start_server(&args, Stdio::piped());
    let listened = server.listen_address();
    server.expect_line("server started", TIMEOUT);
    let port = listened
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("a port in {listened:?}"));
    (server, port)
}

/// An address of this machine that is not loopback (where it has one), to
/// connect from as a stranger would.
fn non_loopback_address() -> Option<std::net::IpAddr> {
    let socket = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    // No packet is sent: connecting a UDP socket only picks a route.
    socket.connect("192.0.2.1:9").ok()?;
    Some(socket.local_addr().ok()?.ip()).filter(|ip| !ip.is_loopback() && !ip.is_unspecified())
}

/// Sends `main:join` as a guest named `name` on a new connection.
fn join_as_guest(address: &str, name: &str) -> RawClient {
    let mut client = RawClient::connect(address).expect("connect");
    client
        .send_packet(&buildat_main_api::Join { name: name.into() })
        .expect("join");
    client
}

#[test]
fn guests_play_from_loopback_peers_of_an_open_port_and_strangers_need_an_account() {
    let scratch = Scratch::new();
    scratch.add_game();
    // The README's server listens on every address; the machine's own
    // user, from loopback, plays as a guest without a password.
    let (mut server, port) = start_open_game(&scratch, "0.0.0.0:0", &[]);
    let local = format!("127.0.0.1:{port}");
    let mut alice =
        RawClient::join_with(join_as_guest(&local, "alice"), "alice", TIMEOUT).expect("joined");
    still_playing(&mut alice);
    say(&mut alice, "/privs");
    wait_for::<ChatLine>(&mut alice, |l| {
        l.text.starts_with("yours: interact, shout\n")
    });
    // Anyone else needs an account.
    match non_loopback_address() {
        Some(ip) => {
            let mut stranger = join_as_guest(&format!("{ip}:{port}"), "mallory");
            let reason = disconnect_reason(&mut stranger);
            assert!(reason.contains("needs a password"), "{ip}: {reason}");
            let mut owner = send_login(&format!("{ip}:{port}"), "mallory", "a secret");
            assert_eq!(login_answer(&mut owner), Ok("mallory".to_string()));
        }
        None => eprintln!("no address other than loopback: the stranger's part is skipped"),
    }
    still_playing(&mut alice);
    server.stop_cleanly();
}

#[test]
fn admin_is_the_operators_act_on_an_existing_account() {
    let scratch = Scratch::new();
    scratch.add_game();
    // `main.admin` handed every privilege to whoever claimed the name
    // first: the server refuses it and says what to do instead.
    let mut args = scratch.server_args();
    args.extend(
        [
            "--set",
            "main.admin=Op",
            "--listen",
            "127.0.0.1:0",
            "--no-watch",
        ]
        .map(String::from),
    );
    let mut refused = crate::common::start_server(&args, Stdio::piped());
    let status = refused.wait_exit(TIMEOUT);
    let output = refused.output();
    assert_ne!(status, Some(0), "{output}");
    assert!(output.contains("main.admin is no longer read"), "{output}");
    assert!(output.contains("admin Op"), "{output}");
    drop(refused);

    // A guest claiming the admin's name gets the defaults only, and
    // `admin` refuses a name without an account.
    let (mut server, address) = start_small_game(&scratch, &[]);
    let mut guest =
        RawClient::join_with(join_as_guest(&address, "op"), "op", TIMEOUT).expect("joined");
    let answer = console(&mut server, "admin op", "no account is called op");
    assert!(answer.contains("a guest has no account"), "{answer}");
    say(&mut guest, "/privs");
    wait_for::<ChatLine>(&mut guest, |l| {
        l.text.starts_with("yours: interact, shout\n")
    });
    drop(guest);
    // Carol makes an account; the operator makes her admin, headless.
    let mut carol = log_in(&address, "Carol", "carol's secret");
    still_playing(&mut carol);
    drop(carol);
    server.stop_cleanly();
    drop(server);
    let (status, output) = run_headless(&scratch, &["admin".to_string(), "nobody".into()]);
    assert_ne!(status, Some(0), "{output}");
    assert!(output.contains("no account is called nobody"), "{output}");
    let (status, output) = run_headless(&scratch, &["admin".to_string(), "carol".into()]);
    assert_eq!(status, Some(0), "{output}");
    assert!(output.contains("to Carol"), "{output}");
    let (mut server, address) = start_small_game(&scratch, &[]);
    let mut carol = log_in(&address, "carol", "carol's secret");
    say(&mut carol, "/privs");
    wait_for::<ChatLine>(&mut carol, |l| {
        l.text.starts_with("yours: ") && l.text.contains("privs") && l.text.contains("ban")
    });
    // `admin` is the console's only.
    say(&mut carol, "/admin carol");
    wait_for::<ChatLine>(&mut carol, |l| l.text == "admin is a console command only");
    server.stop_cleanly();
}

#[test]
fn strangers_cannot_lock_out_an_owner_nor_fill_the_login_queue() {
    let scratch = Scratch::new();
    scratch.add_game();
    let (mut server, address) = start_small_game(
        &scratch,
        &[
            "main.guests=false",
            "main.logins_per_name_per_minute=3",
            "main.logins_per_address_per_minute=100",
            "main.login_threads=1",
            "main.max_pending_logins=8",
        ],
    );
    // The owner claims the name from 127.0.0.1.
    assert_eq!(
        try_login(&address, "owen", "owen's secret"),
        Ok("owen".to_string())
    );
    // Strangers fail at it until the name is held back for them...
    for _ in 0..3 {
        let mut guess = send_login_from(&address, "127.0.0.5", "owen", "a guess");
        let refused = login_answer(&mut guess).expect_err("a wrong password");
        assert!(refused.contains("wrong name or password"), "{refused}");
    }
    for stranger in ["127.0.0.5", "127.0.0.6"] {
        let mut guess = send_login_from(&address, stranger, "owen", "owen's secret");
        let refused = login_answer(&mut guess).expect_err("held back");
        assert!(refused.contains("too many failed logins"), "{refused}");
    }
    // ...never for the owner, from where he logged in before.
    assert_eq!(
        try_login(&address, "owen", "owen's secret"),
        Ok("owen".to_string())
    );

    // One address sends eight claims at once: it is held to its own share
    // of the queue (2 of 8), so another address is not told "busy".
    let mut flood: Vec<RawClient> = (0..8)
        .map(|i| send_login_from(&address, "127.0.0.8", &format!("flood{i}"), "x"))
        .collect();
    let mut newcomer = send_login_from(&address, "127.0.0.9", "nina", "nina's secret");
    assert_eq!(login_answer(&mut newcomer), Ok("nina".to_string()));
    let answers: Vec<Result<String, String>> = flood.iter_mut().map(login_answer).collect();
    let held = answers
        .iter()
        .filter(|a| a.as_ref().is_err_and(|r| r.contains("from your address")))
        .count();
    assert!(held >= 1, "{answers:?}");
    assert!(
        !answers
            .iter()
            .any(|a| a.as_ref().is_err_and(|r| r.contains("busy"))),
        "{answers:?}"
    );
    server.stop_cleanly();
}

#[test]
fn names_are_never_addresses_and_a_mapped_address_is_its_ipv4_form() {
    let scratch = Scratch::new();
    scratch.add_game();
    // Dual-stack: an IPv4 client is seen as `::ffff:a.b.c.d`.
    let (mut server, port) =
        start_open_game(&scratch, "[::]:0", &["main.new_accounts_per_minute=2"]);
    let address = format!("127.0.0.1:{port}");
    // A name that reads as an address, or holds a space, is refused.
    for name in ["127.0.0.9", "::ffff:127.0.0.9", "alice x"] {
        let refused = try_login(&address, name, "a secret").expect_err("refused");
        assert!(
            refused.contains("may not be an IP address") || refused.contains("may not hold spaces"),
            "{name}: {refused}"
        );
    }
    // `ban alice x` bans alice, with the reason x: nobody else can be
    // called that.
    let mut alice = log_in(&address, "alice", "alice's secret");
    let answer = console(&mut server, "ban alice x", "is banned");
    assert!(answer.contains("alice is banned for ever"), "{answer}");
    assert!(disconnect_reason(&mut alice).contains("banned from this server: x"));
    // A ban of the IPv4 form holds the mapped peer, and the other way round.
    console(&mut server, "ban 127.0.0.2 spamming", "is banned");
    console(&mut server, "ban ::ffff:127.0.0.3 flooding", "is banned");
    for (source, reason) in [
        ("127.0.0.2", "spamming"),
        ("::ffff:127.0.0.2", "spamming"),
        ("127.0.0.3", "flooding"),
    ] {
        let target = if source.contains(':') {
            format!("[::ffff:127.0.0.1]:{port}")
        } else {
            address.clone()
        };
        let mut client =
            RawClient::connect_from(&target, source.parse().expect("an address")).expect("connect");
        let said = disconnect_reason(&mut client);
        assert!(said.contains(reason), "{source}: {said}");
    }
    // A mapped loopback peer is a loopback peer: a guest under auto.
    let mut guest = RawClient::join_with(
        join_as_guest(&format!("[::ffff:127.0.0.1]:{port}"), "gus"),
        "gus",
        TIMEOUT,
    )
    .expect("joined as a guest");
    still_playing(&mut guest);
    // New accounts have a rate for everyone together (2 a minute here,
    // alice's the first); an existing account still logs in.
    assert_eq!(
        try_login(&address, "bea", "bea's secret"),
        Ok("bea".to_string())
    );
    let refused = try_login(&address, "cy", "cy's secret").expect_err("no new account now");
    assert!(refused.contains("too many new accounts"), "{refused}");
    assert_eq!(
        try_login(&address, "bea", "bea's secret"),
        Ok("bea".to_string())
    );
    server.stop_cleanly();
}

#[test]
fn players_change_their_password_and_the_operator_resets_and_deletes_accounts() {
    let scratch = Scratch::new();
    scratch.add_game();
    let (mut server, address) = start_small_game(
        &scratch,
        &["main.guests=false", "main.default_privileges=shout"],
    );
    // `/password OLD NEW`: the old one is needed.
    let mut pat = log_in(&address, "Pat", "pat-old");
    say(&mut pat, "/password wrong pat-new");
    wait_for::<ChatLine>(&mut pat, |l| l.text == "wrong password: yours is unchanged");
    say(&mut pat, "/password pat-old pat-new");
    wait_for::<ChatLine>(&mut pat, |l| l.text == "your password is changed");
    drop(pat);
    let refused = try_login(&address, "pat", "pat-old").expect_err("the old one");
    assert!(refused.contains("wrong name or password"), "{refused}");
    let mut pat = log_in(&address, "pat", "pat-new");

    // `resetpassword`: a one-time password for the operator to hand over;
    // whoever plays the account is disconnected, and it has no privileges
    // until its player sets its own.
    console(&mut server, "grant pat fly", "granted fly to Pat");
    let answer = console(
        &mut server,
        "resetpassword pat",
        "the password of Pat is now ",
    );
    let one_time = answer
        .split("is now ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .expect("the one-time password")
        .to_string();
    assert!(
        disconnect_reason(&mut pat).contains("reset your password"),
        "the player of the account is disconnected"
    );
    let refused = try_login(&address, "pat", "pat-new").expect_err("the old one");
    assert!(refused.contains("wrong name or password"), "{refused}");
    let mut pat = log_in(&address, "pat", &one_time);
    let lines = wait_for::<ChatLine>(&mut pat, |l| l.text.contains("reset your password"));
    assert!(lines.iter().any(|l| l.contains("/password")), "{lines:?}");
    say(&mut pat, "/privs");
    wait_for::<ChatLine>(&mut pat, |l| l.text.starts_with("yours: none\n"));
    say(&mut pat, &format!("/password {one_time} pat-mine"));
    wait_for::<ChatLine>(&mut pat, |l| l.text == "your password is changed");
    say(&mut pat, "/privs");
    wait_for::<ChatLine>(&mut pat, |l| l.text.starts_with("yours: fly, shout\n"));

    // `deleteaccount`: gone with its privileges; whoever claims the name
    // next inherits nothing.
    let answer = console(&mut server, "deleteaccount PAT", "with its privileges;");
    assert!(answer.contains("1 disconnected"), "{answer}");
    assert!(disconnect_reason(&mut pat).contains("deleted your account"));
    assert_eq!(
        try_login(&address, "pat", "someone else's"),
        Ok("pat".to_string())
    );
    console(&mut server, "privs pat", "pat: shout");
    let answer = console(&mut server, "deleteaccount nobody", "no account");
    assert!(answer.contains("no account is called nobody"), "{answer}");
    server.stop_cleanly();
}
