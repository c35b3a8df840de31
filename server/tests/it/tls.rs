//! TLS on the game port against the real server and the real
//! `buildat-client`: the whole game (files, world stream, edits, a login)
//! over TLS, also across `reload network`; the client pins the key of a
//! server that is not loopback (`BUILDAT_TEST_TREAT_AS_REMOTE=1` makes it
//! treat 127.0.0.1 so) on its first connection, refuses a changed one (the
//! certificate made again in the world folder) with a message naming both
//! keys, and takes it with `--accept-new-key`; a loopback server's key is
//! not pinned, so a world made again is no refusal; an operator's
//! certificate is used. On a TLS port a loopback peer speaking plaintext is
//! served plaintext, and one that is not loopback (a PROXY header says so)
//! is told the port speaks TLS; a TLS client on a plaintext port is told
//! so and never falls back; the server stays up; a refusal before TLS (too
//! many connections) reaches a TLS client as a refusal.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use buildat_format::Packet;
use buildat_harness::raw_client::RawClient;
use buildat_main_api::Ping;
use buildat_network_api::DisconnectPacket;
use buildat_network_api::tls::SPEAKS_TLS;

use crate::common::{Scratch, Server, client_binary, output_text, start_small_game};

const TIMEOUT: Duration = Duration::from_secs(120);

/// The real client against `address` for at most `seconds`, its cache and
/// known-hosts file in `dir`; `remote`: it treats the address as not
/// loopback, so speaks TLS and pins the key as it would off this machine.
fn client(address: &str, dir: &Path, remote: bool, seconds: u32) -> Command {
    let mut command = Command::new(client_binary());
    command
        .args(["--connect", address, "--cache"])
        .arg(dir.join("cache"))
        .args(["--quit-after", &seconds.to_string(), "--headless"])
        .arg("--known-hosts")
        .arg(known_hosts(dir))
        .env_remove("BUILDAT_PASSWORD")
        .stdin(Stdio::null());
    if remote {
        command.env("BUILDAT_TEST_TREAT_AS_REMOTE", "1");
    }
    command
}

fn known_hosts(dir: &Path) -> PathBuf {
    dir.join("known_hosts")
}

/// The fingerprint the server logged for its key.
fn logged_fingerprint(server: &mut Server) -> String {
    let line = server.expect_line("key fingerprint SHA256:", TIMEOUT);
    let at = line.find("SHA256:").expect("a fingerprint");
    line[at..at + 71].to_string()
}

#[test]
fn the_whole_game_works_over_tls_and_across_a_reload_of_network() {
    let scratch = Scratch::new();
    scratch.add_game();
    // The builder bot looks for a column's top in the chunks around it.
    let (mut server, address) =
        start_small_game(&scratch, &["network.tls=on", "voxelworld.view_radius=2"]);
    let fingerprint = logged_fingerprint(&mut server);
    // The certificate was made in the world folder, its key private.
    let tls_dir = scratch.world().join("tls");
    let key_mode = std::fs::metadata(tls_dir.join("key.pem"))
        .expect("key.pem")
        .permissions()
        .mode();
    assert_eq!(key_mode & 0o777, 0o600);
    assert!(tls_dir.join("cert.pem").is_file());

    // A bot logs in, gets every file and its chunks, digs and places.
    let dir = scratch.dir.path();
    std::fs::write(dir.join("password"), "secret\n").expect("password file");
    let bot = client(&address, dir, true, 25)
        .args(["--name", "tlsbot", "--password-file"])
        .arg(dir.join("password"))
        .arg("--script")
        .arg(crate::common::repo_root().join("scripts/bots/builder.lua"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start buildat-client");
    server.expect_line("player tlsbot (peer", TIMEOUT);
    // The session's keys cross a reload of network with its socket.
    server.send("reload network");
    server.expect_line("handing 1 peers and the listener", TIMEOUT);
    server.expect_line("with 1 peers kept", TIMEOUT);
    let out = bot.wait_with_output().expect("the client's output");
    let said = output_text(&out);
    assert_eq!(out.status.code(), Some(0), "played to the end:\n{said}");
    assert!(said.contains("logged in as tlsbot"), "{said}");
    assert!(
        said.contains(&format!("its key {fingerprint} is now pinned")),
        "{said}"
    );
    let files: u64 = said
        .split("buildat-client: files: ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("a files line:\n{said}"));
    assert!(files > 0, "{said}");
    assert!(said.contains("world: held "), "{said}");
    assert!(!said.contains("world: held 0 chunks"), "{said}");
    let confirmed = said
        .split("places, ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse::<u32>().ok())
        .unwrap_or_else(|| panic!("the builder's counts:\n{said}"));
    assert!(confirmed >= 2, "edits confirmed over TLS:\n{said}");
    assert!(!server.output().contains("TLS: "), "{}", server.output());
    let pinned = std::fs::read_to_string(known_hosts(dir)).expect("known hosts");
    assert!(
        pinned.contains(&format!("{address} {fingerprint}")),
        "{pinned}"
    );
    // A kick's reason reaches the client inside TLS, then a clean close.
    let guest = client(&address, dir, true, 60)
        .args(["--name", "visitor"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start buildat-client");
    server.expect_line("player visitor (peer", TIMEOUT);
    server.send("kick visitor enough for today");
    let out = guest.wait_with_output().expect("the client's output");
    let said = output_text(&out);
    assert_eq!(out.status.code(), Some(5), "{said}");
    assert!(
        said.contains("kicked by the server: enough for today"),
        "{said}"
    );
    server.stop_cleanly();
}

#[test]
fn a_changed_key_is_refused_until_accepted() {
    let scratch = Scratch::new();
    scratch.add_game();
    let dir = scratch.dir.path();
    let (mut server, address) = start_small_game(&scratch, &["network.tls=on"]);
    let first = logged_fingerprint(&mut server);
    let out = client(&address, dir, true, 2).output().expect("run");
    assert_eq!(out.status.code(), Some(0), "{}", output_text(&out));
    let out = client(&address, dir, true, 2).output().expect("run");
    assert_eq!(
        out.status.code(),
        Some(0),
        "known now: {}",
        output_text(&out)
    );
    assert!(
        !output_text(&out).contains("pinned in"),
        "{}",
        output_text(&out)
    );
    server.stop_cleanly();
    drop(server);

    // The certificate is made again: a new key, refused with what to do.
    let tls_dir = scratch.world().join("tls");
    let kept = dir.join("old-tls");
    std::fs::rename(&tls_dir, &kept).expect("move the certificate away");
    let (mut server, new_address) = start_small_game(&scratch, &["network.tls=on"]);
    let second = logged_fingerprint(&mut server);
    assert_ne!(first, second);
    // The same server, as far as the client knows: its pin under the new port.
    let file = known_hosts(dir);
    let pins = std::fs::read_to_string(&file).expect("known hosts");
    std::fs::write(&file, pins.replace(&address, &new_address)).expect("known hosts");
    let out = client(&new_address, dir, true, 2).output().expect("run");
    let said = output_text(&out);
    assert_eq!(out.status.code(), Some(6), "refused:\n{said}");
    for needle in [
        format!("the key of {new_address} CHANGED"),
        format!("pinned {first}, now {second}"),
        "--accept-new-key".to_string(),
        file.display().to_string(),
    ] {
        assert!(said.contains(&needle), "{needle:?} in:\n{said}");
    }
    assert!(!said.contains("files: 1"), "nothing was exchanged:\n{said}");
    // On loopback no key is pinned: the world's new key is no refusal,
    // over TLS (tls://) as in plaintext.
    for connect in [new_address.clone(), format!("tls://{new_address}")] {
        let out = client(&connect, dir, false, 2).output().expect("run");
        let said = output_text(&out);
        assert_eq!(out.status.code(), Some(0), "{connect}:\n{said}");
        assert!(!said.contains("pinned"), "{connect}:\n{said}");
    }
    // Accepted on request, and pinned from then on.
    let out = client(&new_address, dir, true, 2)
        .arg("--accept-new-key")
        .output()
        .expect("run");
    let said = output_text(&out);
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(
        said.contains(&format!("changed from {first} to {second}")),
        "{said}"
    );
    let out = client(&new_address, dir, true, 2).output().expect("run");
    assert_eq!(out.status.code(), Some(0), "{}", output_text(&out));
    server.stop_cleanly();
    drop(server);

    // The operator names a certificate: the first key again.
    let (mut server, _) = start_small_game(
        &scratch,
        &[
            "network.tls=on",
            &format!("network.tls_cert={}", kept.join("cert.pem").display()),
            &format!("network.tls_key={}", kept.join("key.pem").display()),
        ],
    );
    assert_eq!(logged_fingerprint(&mut server), first);
    server.stop_cleanly();
}

#[test]
fn a_client_speaking_the_other_way_is_told_and_the_server_stays_up() {
    let scratch = Scratch::new();
    scratch.add_game();
    let dir = scratch.dir.path();
    let (mut server, address) = start_small_game(
        &scratch,
        &["network.tls=on", "network.max_connections_per_ip=1"],
    );
    // Plaintext from loopback to the TLS port: served plaintext (the
    // server speaks first: its files), not told to use TLS.
    let mut raw = RawClient::connect(&address).expect("connect");
    let first = raw.recv(TIMEOUT).expect("read").expect("a packet");
    assert_ne!(first.name, DisconnectPacket::NAME, "served plaintext");
    raw.close();
    drop(raw);
    // (Its connection counted against the one allowed until it is gone.)
    server.expect_line(") disconnected: ", TIMEOUT);
    // The real client: plaintext on loopback, pinning nothing.
    let out = client(&address, dir, false, 3).output().expect("run");
    let said = output_text(&out);
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(!said.contains("pinned"), "{said}");
    assert!(!said.contains("world: held 0 chunks"), "{said}");
    // As a remote server: TLS at once, the key pinned.
    let out = client(&address, dir, true, 3).output().expect("run");
    let said = output_text(&out);
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(said.contains("is now pinned"), "{said}");
    // A refusal before any TLS (here: one connection per address, and one
    // is open) reaches a TLS client as what it is.
    let held = std::net::TcpStream::connect(&address).expect("connect");
    let out = client(&address, dir, true, 3).output().expect("run");
    let said = output_text(&out);
    assert_eq!(out.status.code(), Some(5), "{said}");
    assert!(
        said.contains("refused by the server: too many connections from 127.0.0.1"),
        "{said}"
    );
    drop(held);
    server.stop_cleanly();
    drop(server);

    // A peer that is not loopback (a forwarder's PROXY header says so)
    // speaking plaintext to the TLS port: told, in plaintext, to use TLS.
    let (mut server, address) =
        start_small_game(&scratch, &["network.tls=on", "network.proxy_protocol=true"]);
    let mut raw = RawClient::connect(&address).expect("connect");
    let at: std::net::SocketAddr = address.parse().expect("an address");
    let stranger: std::net::SocketAddr = "203.0.113.7:4444".parse().expect("an address");
    raw.send_raw(&buildat_format::proxy::encode(Some((stranger, at))))
        .expect("send");
    raw.send_packet(&Ping {
        data: b"hello?".to_vec(),
    })
    .expect("send");
    let packets = raw.wait_closed(TIMEOUT).expect("closed");
    let reason = packets
        .iter()
        .find(|p| p.name == DisconnectPacket::NAME)
        .map(|p| DisconnectPacket::decode(&p.data).expect("a reason").reason);
    assert_eq!(reason.as_deref(), Some(SPEAKS_TLS));
    server.expect_line(
        "closed the connection from 203.0.113.7:4444: it does not speak TLS",
        TIMEOUT,
    );
    server.stop_cleanly();
    drop(server);

    // TLS to a plaintext port: told so; never a fallback to plaintext.
    let (mut server, address) = start_small_game(&scratch, &["network.tls=off"]);
    let out = client(&format!("tls://{address}"), dir, false, 30)
        .output()
        .expect("run");
    let said = output_text(&out);
    assert_eq!(out.status.code(), Some(4), "{said}");
    assert!(said.contains("does not speak TLS"), "{said}");
    assert!(said.contains("nothing was sent"), "{said}");
    server.expect_line("sent a TLS ClientHello to a plaintext port", TIMEOUT);
    let out = client(&address, dir, false, 3).output().expect("run");
    assert_eq!(out.status.code(), Some(0), "{}", output_text(&out));
    server.stop_cleanly();
}
