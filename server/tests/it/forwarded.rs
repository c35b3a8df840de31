//! Forwarders: `network.proxy_protocol` against the real server and game.
//! With it on, the address a PROXY protocol v2 header names is the peer's
//! for everything: the log and `network:client_connected`, the
//! per-address connection limit, the game's guest rule
//! (`main.guests=auto`: loopback peers only) and its bans; a
//! LOCAL header keeps the connection's own address; a connection without a
//! header is closed with the reason logged. With it off, a header is never
//! trusted.

use std::net::SocketAddr;
use std::time::Duration;

use buildat_format::Packet;
use buildat_format::proxy;
use buildat_harness::raw_client::RawClient;
use buildat_main_api::Join;
use buildat_network_api::DisconnectPacket;

use crate::common::{Scratch, start_small_game};

const TIMEOUT: Duration = Duration::from_secs(120);

/// A raw client whose connection starts with a PROXY v2 header naming
/// `source` (`None`: a LOCAL header).
fn forwarded(address: &str, source: Option<&str>) -> RawClient {
    let mut raw = RawClient::connect(address).expect("connect");
    let at: SocketAddr = address.parse().expect("an address");
    let source = source.map(|s| (s.parse().expect("an address"), at));
    raw.send_raw(&proxy::encode(source)).expect("send");
    raw
}

/// The reason of the `core:disconnect` a closed client got.
fn goodbye(raw: &mut RawClient) -> Option<String> {
    raw.wait_closed(TIMEOUT)
        .expect("closed")
        .iter()
        .find(|p| p.name == DisconnectPacket::NAME)
        .map(|p| DisconnectPacket::decode(&p.data).expect("a reason").reason)
}

#[test]
fn a_forwarders_header_names_the_peer_for_everything() {
    let scratch = Scratch::new();
    scratch.add_game();
    let (mut server, address) = start_small_game(
        &scratch,
        &[
            "network.proxy_protocol=true",
            "network.tls=off",
            "network.max_connections_per_ip=2",
        ],
    );
    // A stranger through the forwarder: its address in the log, and not a
    // loopback guest (main.guests=auto).
    let mut stranger = forwarded(&address, Some("203.0.113.7:4444"));
    stranger
        .send_packet(&Join {
            name: "stranger".into(),
        })
        .expect("send");
    let reason = goodbye(&mut stranger).expect("a reason");
    assert!(reason.contains("needs a password"), "{reason}");
    server.expect_line("connected from 203.0.113.7:4444", TIMEOUT);
    // The forwarder's health check (LOCAL): the connection's own address,
    // loopback, so a guest may play.
    let local = forwarded(&address, None);
    let local = RawClient::join_with(local, "local", TIMEOUT).expect("a loopback guest joins");
    assert!(local.peer > 0);
    // A ban of the stranger's address refuses it, and only it.
    server.send("ban 203.0.113.7 testing forwarded addresses");
    server.expect_line("203.0.113.7", TIMEOUT);
    let mut again = forwarded(&address, Some("203.0.113.7:5000"));
    let reason = goodbye(&mut again).expect("a reason");
    assert!(reason.contains("banned from this server"), "{reason}");
    server.expect_line("connected from 203.0.113.7:5000", TIMEOUT);
    let mut other = forwarded(&address, Some("198.51.100.1:6000"));
    other
        .send_packet(&Join {
            name: "other".into(),
        })
        .expect("send");
    // Not banned; not loopback either, so refused as a guest only.
    let reason = goodbye(&mut other).expect("a reason");
    assert!(reason.contains("needs a password"), "{reason}");
    // The per-address limit counts the named address, not the forwarder's:
    // two from one stranger are held, a third is refused, another
    // stranger is not.
    let held = [
        forwarded(&address, Some("203.0.113.9:1")),
        forwarded(&address, Some("203.0.113.9:2")),
    ];
    server.expect_line("connected from 203.0.113.9:2", TIMEOUT);
    let mut third = forwarded(&address, Some("203.0.113.9:3"));
    let reason = goodbye(&mut third).expect("a reason");
    assert!(
        reason.contains("too many connections from 203.0.113.9"),
        "{reason}"
    );
    let mut fourth = forwarded(&address, Some("203.0.113.10:4"));
    fourth
        .send_packet(&Join {
            name: "fourth".into(),
        })
        .expect("send");
    let reason = goodbye(&mut fourth).expect("a reason");
    assert!(reason.contains("needs a password"), "{reason}");
    drop(held);
    // A connection with no header: closed, the reason logged.
    let mut bare = RawClient::connect(&address).expect("connect");
    bare.send_packet(&buildat_main_api::Ping {
        data: b"no header".to_vec(),
    })
    .expect("send");
    let _ = bare.wait_closed(TIMEOUT).expect("closed");
    server.expect_line("no PROXY protocol v2 header", TIMEOUT);
    server.stop_cleanly();
    drop(server);

    // Off: a header is not trusted; the peer is who the socket says.
    let (mut server, address) = start_small_game(&scratch, &["network.tls=off"]);
    let mut liar = forwarded(&address, Some("203.0.113.7:4444"));
    let _ = liar
        .wait_closed(TIMEOUT)
        .expect("closed as a protocol error");
    server.expect_line("connected from 127.0.0.1:", TIMEOUT);
    assert!(
        !server.output().contains("203.0.113.7"),
        "{}",
        server.output()
    );
    server.stop_cleanly();
}
