//! The client's one rule for passwords (`buildat_client::transport`),
//! through the real binary:
//!
//! - against a listener that answers like a plaintext Buildat server (an
//!   attacker on the path who "simply answers in plaintext"), a client
//!   with a password, told the address is not loopback
//!   (`BUILDAT_TEST_TREAT_AS_REMOTE=1`), speaks TLS first and never sends
//!   the password, whatever it is told back; also with `tls://`;
//! - `--insecure-plaintext` with a password is refused before connecting;
//! - the README's commands: `buildat-server --world DIR` on 0.0.0.0 (TLS
//!   by `network.tls=auto`) and `buildat-client --connect 127.0.0.1:PORT
//!   --name alice` play together, in plaintext on loopback, pinning
//!   nothing; told the address is remote, the same client speaks TLS and
//!   pins the key.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use buildat_format::{Packet, PacketWriter};
use buildat_network_protocol::DisconnectPacket;
use buildat_network_protocol::tls::{SPEAKS_PLAINTEXT, SPEAKS_TLS};

use crate::common::game::{CLIENT, SERIAL, Setup, text};
use crate::common::{Server, server_binary};

const PASSWORD: &str = "hunter2-do-not-leak";

/// A listener that answers every connection like a plaintext Buildat
/// server would (a TLS ClientHello gets "speaks plaintext"; anything else
/// "speaks TLS", the answer that used to make the client log in again),
/// and keeps every byte it receives.
struct PlaintextListener {
    address: String,
    received: Arc<Mutex<Vec<Vec<u8>>>>,
}

impl PlaintextListener {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let address = listener.local_addr().expect("address").to_string();
        let received = Arc::new(Mutex::new(Vec::new()));
        let kept = received.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let kept = kept.clone();
                std::thread::spawn(move || {
                    let _ = stream.set_read_timeout(Some(Duration::from_millis(200)));
                    let mut bytes = Vec::new();
                    let mut answered = false;
                    let until = Instant::now() + Duration::from_secs(5);
                    let mut buffer = [0u8; 4096];
                    while Instant::now() < until {
                        match stream.read(&mut buffer) {
                            Ok(0) => break,
                            Ok(n) => bytes.extend_from_slice(&buffer[..n]),
                            Err(_) => {}
                        }
                        if !answered && !bytes.is_empty() {
                            answered = true;
                            let reason = if bytes[0] == 22 {
                                SPEAKS_PLAINTEXT
                            } else {
                                SPEAKS_TLS
                            };
                            let mut writer = PacketWriter::default();
                            let goodbye = DisconnectPacket {
                                reason: reason.to_string(),
                            };
                            writer
                                .write(DisconnectPacket::NAME, &goodbye.encode().expect("encodes"))
                                .expect("writes");
                            let _ = stream.write_all(&writer.take());
                        }
                    }
                    kept.lock().expect("lock").push(bytes);
                });
            }
        });
        Self { address, received }
    }

    /// Every connection's bytes, once the client is done.
    fn received(&self) -> Vec<Vec<u8>> {
        // Each connection's thread keeps its bytes when it ends.
        std::thread::sleep(Duration::from_millis(5500));
        self.received.lock().expect("lock").clone()
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// The client with a password, its cache and known-hosts file in `dir`.
fn client_with_password(connect: &str, dir: &std::path::Path) -> Command {
    let mut command = Command::new(CLIENT);
    command
        .args(["--connect", connect, "--name", "alice", "--cache"])
        .arg(dir.join("cache"))
        .arg("--known-hosts")
        .arg(dir.join("known_hosts"))
        .args(["--quit-after", "10", "--headless"])
        .env("BUILDAT_PASSWORD", PASSWORD);
    command
}

#[test]
fn a_password_never_crosses_a_path_in_plaintext() {
    let dir = tempfile::tempdir().expect("temp dir");
    for connect in ["ADDRESS", "tls://ADDRESS"] {
        let listener = PlaintextListener::start();
        let connect = connect.replace("ADDRESS", &listener.address);
        let out = client_with_password(&connect, dir.path())
            .env("BUILDAT_TEST_TREAT_AS_REMOTE", "1")
            .output()
            .expect("run buildat-client");
        let said = text(&out.stderr);
        let received = listener.received();
        assert!(!received.is_empty(), "{connect}: it connected:\n{said}");
        for bytes in &received {
            assert!(
                !contains(bytes, PASSWORD.as_bytes()),
                "{connect}: the password went out in plaintext:\n{said}"
            );
            assert_eq!(bytes.first(), Some(&22), "{connect}: TLS first:\n{said}");
        }
        assert_eq!(received.len(), 1, "{connect}: no second attempt:\n{said}");
        assert_eq!(out.status.code(), Some(4), "{connect}:\n{said}");
        assert!(said.contains("does not speak TLS"), "{said}");
        assert!(said.contains("nothing was sent"), "{said}");
    }
}

#[test]
fn insecure_plaintext_with_a_password_is_refused_before_connecting() {
    let dir = tempfile::tempdir().expect("temp dir");
    let listener = PlaintextListener::start();
    let out = client_with_password(&listener.address, dir.path())
        .env("BUILDAT_TEST_TREAT_AS_REMOTE", "1")
        .arg("--insecure-plaintext")
        .output()
        .expect("run buildat-client");
    let said = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(
        said.contains("--insecure-plaintext with a password"),
        "{said}"
    );
    assert!(listener.received().is_empty(), "it connected:\n{said}");
    // Without a password it is allowed, in plaintext, and says so.
    let out = Command::new(CLIENT)
        .args(["--connect", &listener.address, "--insecure-plaintext"])
        .arg("--cache")
        .arg(dir.path().join("cache"))
        .args(["--quit-after", "10", "--headless"])
        .env("BUILDAT_TEST_TREAT_AS_REMOTE", "1")
        .env_remove("BUILDAT_PASSWORD")
        .output()
        .expect("run buildat-client");
    let said = text(&out.stderr);
    assert!(said.contains("as --insecure-plaintext asks"), "{said}");
    assert_eq!(out.status.code(), Some(5), "told to leave:\n{said}");
}

/// `buildat-server --world DIR` as the README runs it, but on a free port:
/// every address (0.0.0.0), so `network.tls=auto` speaks TLS. Its port.
fn readme_server(setup: &Setup) -> (Server, u16) {
    let args: Vec<std::ffi::OsString> = vec![
        "--world".into(),
        setup.world.clone().into(),
        "--no-default-modules".into(),
        "--modules".into(),
        setup.modules.clone().into(),
        "--build-dir".into(),
        crate::common::build_dir().into(),
        "--module-profile".into(),
        "dev".into(),
        "--listen".into(),
        "0.0.0.0:0".into(),
        "--no-watch".into(),
        "--set".into(),
        "voxelworld.view_radius=1".into(),
    ];
    let mut server = Server::spawn(server_binary(), &args, std::process::Stdio::piped())
        .expect("start buildat-server");
    let address = server.wait_started();
    let port = address
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("a port in {address}"));
    server.expect_line("key fingerprint SHA256:", Duration::from_secs(60));
    (server, port)
}

fn play(setup: &Setup, connect: &str, known_hosts: &std::path::Path, remote: bool) -> Output {
    let mut command = Command::new(CLIENT);
    command
        .args(["--connect", connect, "--name", "alice", "--cache"])
        .arg(setup.cache())
        .arg("--known-hosts")
        .arg(known_hosts)
        .args(["--quit-after", "8", "--headless"])
        .env_remove("BUILDAT_PASSWORD");
    if remote {
        command.env("BUILDAT_TEST_TREAT_AS_REMOTE", "1");
    }
    command.output().expect("run buildat-client")
}

#[test]
fn the_readme_commands_play_together() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let setup = Setup::new();
    let (mut server, port) = readme_server(&setup);
    let known_hosts = setup.scratch.path().join("known_hosts");
    let connect = format!("127.0.0.1:{port}");
    // Loopback: plaintext, served plaintext by the TLS port, as a guest.
    let out = play(&setup, &connect, &known_hosts, false);
    let said = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(!said.contains("world: held 0 chunks"), "{said}");
    server.expect_line("player alice (peer", Duration::from_secs(60));
    assert!(!known_hosts.exists(), "nothing pinned on loopback:\n{said}");
    // The same server as a remote one: TLS, its key pinned.
    let out = play(&setup, &connect, &known_hosts, true);
    let said = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(said.contains("is now pinned"), "{said}");
    assert!(
        std::fs::read_to_string(&known_hosts)
            .expect("pinned")
            .contains(&connect),
        "{said}"
    );
    server.stop_cleanly();
}
