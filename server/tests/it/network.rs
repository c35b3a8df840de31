//! The network module in the real server binary over real sockets: packet
//! exchange, bad input costing only its sender, reload with clients
//! streaming, many connections.

use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::common::{self, Scratch, Server};
use buildat_format::Packet;
use buildat_harness::raw_client::RawClient;
use buildat_harness::server::ONE_ADDRESS_CROWD;
use buildat_harness::wire::{definition, header};
use buildat_network_api::DisconnectPacket;
use buildat_test_net_probe_api::{CountPacket, CountQuery, CountReply, Echo, Stall};

fn start_server(scratch: &Scratch, settings: &[&str]) -> (Server, String) {
    let (mut server, address) = spawn_server(scratch, settings);
    server.expect_line("server started", Duration::from_secs(60));
    (server, address)
}

/// [`start_server`] that returns once the port is bound, before the
/// modules after the network module are loaded.
fn spawn_server(scratch: &Scratch, settings: &[&str]) -> (Server, String) {
    scratch.add_network();
    let mut args = scratch.server_args();
    args.extend([
        "--listen".to_string(),
        "127.0.0.1:0".to_string(),
        "--no-watch".to_string(),
    ]);
    for setting in settings {
        args.extend(["--set".to_string(), setting.to_string()]);
    }
    let mut server = common::start_server(&args, Stdio::piped());
    let address = server.listen_address();
    (server, address)
}

/// Sends `test:echo` packets carrying sequence numbers and checks each
/// echo comes back in order. Returns how many round trips completed.
fn echo_stream(client: &mut RawClient, first: u64, count: u64, window: u64) -> u64 {
    let mut sent = first;
    let mut received = first;
    while received < first + count {
        while sent < first + count && sent - received < window {
            client.queue_packet(&Echo::seq(sent)).expect("queue");
            sent += 1;
        }
        client.flush().expect("send echo requests");
        let packet = client
            .recv(Duration::from_secs(30))
            .expect("connection stays up")
            .unwrap_or_else(|| panic!("echo {received} did not come back"));
        assert_eq!(packet.name, Echo::NAME);
        let seq = Echo::decode(&packet.data)
            .ok()
            .and_then(|echo| echo.read_seq())
            .expect("a sequence number");
        assert_eq!(
            seq, received,
            "echoes arrive in order, none lost or duplicated"
        );
        received += 1;
    }
    received - first
}

#[test]
fn clients_exchange_packets_both_ways() {
    let scratch = Scratch::new();
    let (mut server, address) = start_server(&scratch, &[]);
    let mut client = RawClient::connect(&address).expect("connect");
    client
        .send_packet(&Echo {
            data: b"hello over the wire".to_vec(),
        })
        .unwrap();
    let packet = client.recv(Duration::from_secs(10)).unwrap().expect("echo");
    assert_eq!(packet.name, Echo::NAME);
    assert_eq!(packet.data, b"hello over the wire");
    assert_eq!(echo_stream(&mut client, 0, 500, 50), 500);
    server
        .wait_for(
            "net_probe saw peer 1 connect from 127.0.0.1:",
            Duration::from_secs(5),
        )
        .expect("client_connected event");
    drop(client);
    server
        .wait_for(
            "net_probe saw peer 1 leave: connection closed by the client",
            Duration::from_secs(5),
        )
        .expect("client_disconnected event");
    server.stop_cleanly();
}

/// A player who connects while the server starts (a module still loading,
/// or building on a first start) waits in the listen backlog and is taken
/// once every module is loaded, so each of them sees it connect.
#[test]
fn a_client_that_comes_while_the_server_starts_is_taken_once_it_has_started() {
    let scratch = Scratch::new();
    let (mut server, address) = spawn_server(&scratch, &["net_probe.start_delay_ms=1500"]);
    let mut client = RawClient::connect(&address).expect("the port takes it into its backlog");
    client
        .send_packet(&Echo {
            data: b"early".to_vec(),
        })
        .unwrap();
    let packet = client
        .recv(Duration::from_secs(30))
        .unwrap()
        .expect("echoed once the server has started");
    assert_eq!(packet.data, b"early");
    server.expect_line("net_probe saw peer 1 connect", Duration::from_secs(5));
    let output = server.output();
    let started = output.find("server started").expect("started");
    let connected = output.find("peer 1 connected").expect("peer 1 connected");
    assert!(
        started < connected,
        "the early client is taken after the start, not while net_probe loads:\n{output}"
    );
    server.stop_cleanly();
}

/// Two well-behaved clients keep echoing while `attack` runs; they must see
/// no gap and no disconnect.
fn with_bystanders(address: &str, attack: impl FnOnce()) {
    let stop = Arc::new(AtomicBool::new(false));
    let bystanders: Vec<_> = (0..2)
        .map(|_| {
            let address = address.to_string();
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut client = RawClient::connect(&address).expect("connect");
                let mut done = 0;
                loop {
                    done += echo_stream(&mut client, done, 20, 5);
                    if stop.load(Ordering::Relaxed) {
                        return done;
                    }
                }
            })
        })
        .collect();
    attack();
    stop.store(true, Ordering::Relaxed);
    for bystander in bystanders {
        assert!(bystander.join().expect("bystander kept its connection") > 0);
    }
}

#[test]
fn bad_input_costs_only_its_sender() {
    let scratch = Scratch::new();
    let (mut server, address) = start_server(
        &scratch,
        &[
            "network.idle_timeout_ms=500",
            "network.max_queue_bytes=1000000",
            "network.max_frame_size=1048576",
            // Bystanders and senders connect for every case.
            "network.connects_per_ip_per_second=0",
        ],
    );
    let long_name = vec![b'x'; 1000];
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "oversized size field",
            header(100, u32::MAX),
            "over the maximum",
        ),
        // The whole reason: a bare "150" also matches a log timestamp.
        (
            "undefined type",
            header(150, 0),
            "packet type 150 is not defined",
        ),
        (
            "malformed definition",
            [header(0, 3), vec![1, 2, 3]].concat(),
            "protocol error",
        ),
        (
            "reserved number",
            definition(5, b"core:sneaky"),
            "protocol error",
        ),
        (
            "name not UTF-8",
            definition(100, &[0xff, 0xfe]),
            "protocol error",
        ),
        (
            "name too long",
            definition(100, &long_name),
            "protocol error",
        ),
        (
            "half-sent header",
            vec![100, 0, 8],
            "incomplete packet was held open",
        ),
    ];
    for (case, bytes, reason) in cases {
        // Only this case's lines: several cases share a reason.
        server.pump();
        let from = server.seen.len();
        with_bystanders(&address, || {
            let mut bad = RawClient::connect(&address).expect("connect");
            bad.send_raw(&bytes).expect("send bad bytes");
            assert!(
                bad.wait_closed(Duration::from_secs(10)).is_some(),
                "{case}: the sender is disconnected"
            );
        });
        dropped_for(&mut server, from, reason);
    }

    // A sender of a bad packet is told why, even with more of its bytes
    // unread behind the bad one and a write of its own after the server
    // closed. (The server ends its side and drains briefly before closing
    // rather than resetting the connection.)
    let mut bad = RawClient::connect(&address).expect("connect");
    bad.send_raw(&[header(150, 0), vec![0u8; 32 * 1024]].concat())
        .expect("send bad bytes and more");
    std::thread::sleep(Duration::from_millis(300));
    let _ = bad.send_raw(&[0u8; 16]);
    let before_close = bad
        .wait_closed(Duration::from_secs(10))
        .expect("the sender is disconnected");
    let goodbye = before_close
        .iter()
        .find(|packet| packet.name == DisconnectPacket::NAME)
        .and_then(|packet| DisconnectPacket::decode(&packet.data).ok())
        .expect("the goodbye was read before the close");
    assert!(goodbye.reason.contains("150"), "{}", goodbye.reason);

    // A client that never reads: its outgoing queue passes the limit.
    with_bystanders(&address, || {
        let mut lazy = RawClient::connect(&address).expect("connect");
        let big = Echo {
            data: vec![7u8; 64 * 1024],
        };
        let mut closed = false;
        for _ in 0..2000 {
            lazy.queue_packet(&big).expect("queue");
            if lazy.flush().is_err() {
                closed = true;
                break;
            }
        }
        assert!(
            closed || lazy.wait_closed(Duration::from_secs(20)).is_some(),
            "the lazy reader is dropped"
        );
    });
    server.expect_line("not reading", Duration::from_secs(10));
    server.stop_cleanly();
}

/// Three connections that are served, then a fourth: the three, and the
/// reason the server gave when it refused the fourth.
fn three_served_and_a_fourth_refused(address: &str) -> (Vec<RawClient>, String) {
    let mut held: Vec<RawClient> = (0..3)
        .map(|_| RawClient::connect(address).expect("connect"))
        .collect();
    for client in &mut held {
        assert_eq!(echo_stream(client, 0, 1, 1), 1);
    }
    let mut extra = RawClient::connect(address).expect("connect");
    let packets = extra
        .wait_closed(Duration::from_secs(10))
        .expect("refused and closed");
    let goodbye = packets
        .iter()
        .find(|p| p.name == DisconnectPacket::NAME)
        .and_then(|p| DisconnectPacket::decode(&p.data).ok())
        .expect("a reason is sent");
    (held, goodbye.reason)
}

#[test]
fn connections_over_the_limit_are_refused_cleanly() {
    let scratch = Scratch::new();
    let (mut server, address) = start_server(&scratch, &["network.max_connections=3"]);
    let (mut held, reason) = three_served_and_a_fourth_refused(&address);
    assert!(reason.contains("server full"), "{reason}");
    for client in &mut held {
        assert_eq!(
            echo_stream(client, 1, 1, 1),
            1,
            "the others are still served"
        );
    }
    server
        .wait_for("refused connection from", Duration::from_secs(5))
        .expect("logged");
    server.stop_cleanly();
}

#[test]
fn reload_network_while_twenty_clients_stream() {
    let scratch = Scratch::new();
    let (mut server, address) = start_server(&scratch, &ONE_ADDRESS_CROWD);
    let clients: Vec<_> = (0..20)
        .map(|_| {
            let address = address.clone();
            std::thread::spawn(move || {
                let mut client = RawClient::connect(&address).expect("connect");
                echo_stream(&mut client, 0, 3_000, 16)
            })
        })
        .collect();
    for round in 0..3 {
        std::thread::sleep(Duration::from_millis(300));
        server.send("reload network");
        server
            .wait_for("reloaded network", Duration::from_secs(60))
            .unwrap_or_else(|| panic!("reload {round}:\n{}", server.output()));
    }
    for client in clients {
        assert_eq!(
            client.join().expect("client saw no disconnect and no gap"),
            3_000
        );
    }
    let output = server.output();
    assert!(
        output.contains("with 20 peers kept") || output.contains("peers kept"),
        "{output}"
    );
    assert!(
        !output.contains("disconnected:"),
        "nobody was disconnected:\n{output}"
    );
    assert!(
        !output.contains("still mapped"),
        "old images unmapped:\n{output}"
    );
    server.stop_cleanly();
}

#[test]
fn a_thousand_connections_are_held_and_served() {
    let scratch = Scratch::new();
    // All from 127.0.0.1: the per-address limits are off.
    let (mut server, address) = start_server(&scratch, &ONE_ADDRESS_CROWD);
    let started = Instant::now();
    let mut clients: Vec<RawClient> = (0..1000)
        .map(|_| RawClient::connect(&address).expect("connect"))
        .collect();
    for (index, client) in clients.iter_mut().enumerate() {
        client
            .queue_packet(&Echo::seq(index as u64))
            .expect("queue");
        client.flush().expect("send");
    }
    for (index, client) in clients.iter_mut().enumerate() {
        let packet = client
            .recv(Duration::from_secs(30))
            .expect("still connected")
            .unwrap_or_else(|| panic!("client {index} got no echo"));
        assert_eq!(packet.data, (index as u64).to_le_bytes());
    }
    eprintln!("1000 connections served in {:?}", started.elapsed());
    drop(clients);
    server.send("stop");
    assert_eq!(server.wait_exit(Duration::from_secs(60)), Some(0));
}

/// Waits for the server to log, from its `from`-th line on, that it
/// dropped a peer for `reason`.
fn dropped_for(server: &mut Server, from: usize, reason: &str) {
    let dropped = |line: &str| line.contains("disconnected: ") && line.contains(reason);
    server
        .wait_for_line(from, dropped, Duration::from_secs(20))
        .unwrap_or_else(|| panic!("'{reason}' logged:\n{}", server.output()));
}

#[test]
fn packet_type_definitions_are_bounded_and_charged() {
    let scratch = Scratch::new();
    let (mut server, address) = start_server(&scratch, &["network.max_packet_types=50"]);
    // More types than allowed: dropped.
    let mut greedy = RawClient::connect(&address).expect("connect");
    let definitions: Vec<u8> = (0..60u16)
        .flat_map(|n| definition(100 + n, format!("x:{n}").as_bytes()))
        .collect();
    greedy.send_raw(&definitions).expect("send");
    assert!(
        greedy.wait_closed(Duration::from_secs(20)).is_some(),
        "the sender of 60 types is dropped"
    );
    dropped_for(&mut server, 0, "more than 50 packet types defined");
    server.send("stop");
    assert_eq!(server.wait_exit(Duration::from_secs(30)), Some(0));

    let (mut server, address) = start_server(
        &scratch,
        &["network.max_packets_per_second=1", "network.packet_burst=1"],
    );
    // Repeated definitions cost the input budget like packets: at one
    // frame a second, an echo behind 30 repeats waits for them.
    let mut repeater = RawClient::connect(&address).expect("connect");
    let repeat = definition(100, Echo::NAME.as_bytes());
    repeater.send_raw(&repeat.repeat(30)).expect("send");
    repeater
        .send_packet(&Echo {
            data: b"behind".to_vec(),
        })
        .expect("send");
    assert!(
        repeater
            .recv(Duration::from_secs(5))
            .expect("connected")
            .is_none(),
        "the echo waits behind the definitions"
    );
    server.send("stop");
    assert_eq!(server.wait_exit(Duration::from_secs(30)), Some(0));
}

#[test]
fn slow_and_silent_peers_are_closed() {
    let scratch = Scratch::new();
    let (mut server, address) = start_server(
        &scratch,
        &[
            "network.idle_timeout_ms=1000",
            "network.min_bytes_per_second=1000",
            "network.handshake_timeout_ms=1000",
        ],
    );
    // Says nothing at all.
    let mut silent = RawClient::connect(&address).expect("connect");
    assert!(silent.wait_closed(Duration::from_secs(20)).is_some());
    dropped_for(
        &mut server,
        0,
        "sent no whole packet within 1 s of connecting",
    );

    // Drips a big frame a byte every 300 ms: never idle for a second.
    with_bystanders(&address, || {
        let mut dripper = RawClient::connect(&address).expect("connect");
        dripper.send_packet(&Echo::seq(0)).expect("a first packet");
        let frame = header(100, 1 << 20);
        let mut closed = false;
        for byte in frame.iter().chain(std::iter::repeat(&0u8)).take(200) {
            if dripper.send_raw(&[*byte]).is_err() {
                closed = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(300));
            if dripper.recv(Duration::from_millis(1)).is_err() {
                closed = true;
                break;
            }
        }
        assert!(closed, "the dripper is dropped");
    });
    dropped_for(&mut server, 0, "arrived slower than 1000 bytes a second");
    server.send("stop");
    assert_eq!(server.wait_exit(Duration::from_secs(30)), Some(0));
}

#[test]
fn connections_are_limited_per_address() {
    let scratch = Scratch::new();
    let (mut server, address) = start_server(
        &scratch,
        &[
            "network.max_connections_per_ip=3",
            "network.connects_per_ip_per_second=0",
        ],
    );
    let (_held, reason) = three_served_and_a_fourth_refused(&address);
    assert!(
        reason.contains("too many connections from 127.0.0.1"),
        "{reason}"
    );
    // Another address is not held up by this one.
    let other: std::net::IpAddr = [127, 0, 0, 2].into();
    let mut elsewhere = RawClient::connect_from(&address, other).expect("connect");
    assert_eq!(echo_stream(&mut elsewhere, 0, 1, 1), 1);
    server.send("stop");
    assert_eq!(server.wait_exit(Duration::from_secs(30)), Some(0));
}

/// The soft limit of this process's descriptors, set to `soft` (children
/// started meanwhile inherit it); the previous one.
fn set_descriptor_soft_limit(soft: u64) -> u64 {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit only read and write `limit`.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit), 0);
        let previous = limit.rlim_cur;
        limit.rlim_cur = soft.min(limit.rlim_max);
        assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &limit), 0);
        previous
    }
}

#[test]
fn a_player_gets_in_past_three_thousand_silent_sockets() {
    let scratch = Scratch::new();
    scratch.add_network();
    let mut args = scratch.server_args();
    args.extend(["--listen", "127.0.0.1:0", "--no-watch"].map(String::from));
    args.extend(["--set", "network.handshake_timeout_ms=2000"].map(String::from));
    // The server starts under the usual default soft limit of 1,024.
    let previous = set_descriptor_soft_limit(1024);
    let mut server = common::start_server(&args, Stdio::piped());
    set_descriptor_soft_limit(previous.max(4096));
    let address = server.listen_address();
    server
        .wait_for("server started", Duration::from_secs(60))
        .unwrap_or_else(|| panic!("{}", server.output()));
    assert!(
        server
            .output()
            .contains("raised the descriptor limit from 1024"),
        "{}",
        server.output()
    );
    let silent: Vec<RawClient> = (0..3000)
        .filter_map(|_| RawClient::connect(&address).ok())
        .collect();
    assert!(silent.len() >= 2900, "{} connected", silent.len());
    let newcomer: std::net::IpAddr = [127, 0, 0, 3].into();
    let mut player = RawClient::connect_from(&address, newcomer).expect("connect");
    assert_eq!(echo_stream(&mut player, 0, 100, 10), 100, "served");
    assert!(server.is_running());
    drop(silent);
    server.send("stop");
    assert_eq!(server.wait_exit(Duration::from_secs(60)), Some(0));
}

#[test]
fn a_failed_reload_does_not_wedge_the_port() {
    let scratch = Scratch::new();
    let (mut server, address) = start_server(&scratch, &[]);
    let mut client = RawClient::connect(&address).expect("connect");
    assert_eq!(echo_stream(&mut client, 0, 5, 1), 5);

    // A next version that cannot read the stash fails after the old one
    // handed over the listener and the peer.
    let source = scratch.modules().join("network/src/lib.rs");
    let original = std::fs::read_to_string(&source).expect("source");
    let layout = "const LAYOUT: u32 = 3;";
    assert!(original.contains(layout), "the stash layout line");
    std::fs::write(&source, original.replace(layout, "const LAYOUT: u32 = 99;")).unwrap();
    server.send("reload network");
    server
        .wait_for(
            "module network: core:continue failed: the previous version stashed layout 3",
            Duration::from_secs(300),
        )
        .unwrap_or_else(|| panic!("the new version fails:\n{}", server.output()));

    // The fixed version loads again and takes back what was handed over.
    std::fs::write(&source, &original).unwrap();
    server.send("reload network");
    server
        .wait_for("module network reloaded", Duration::from_secs(300))
        .unwrap_or_else(|| panic!("the next reload works:\n{}", server.output()));
    assert_eq!(
        echo_stream(&mut client, 5, 5, 1),
        5,
        "the peer handed over is served again"
    );
    let mut fresh = RawClient::connect(&address).expect("the port accepts");
    assert_eq!(echo_stream(&mut fresh, 0, 5, 1), 5);
    server.send("stop");
    assert_eq!(server.wait_exit(Duration::from_secs(30)), Some(0));
}

/// The messages waiting in `module`'s queue, from the console's `modules`.
fn queued(server: &mut Server, module: &str) -> Option<u64> {
    server.pump();
    let from = server.seen.len();
    server.send("modules");
    common::wait_until(Duration::from_secs(10), || {
        server.pump();
        server
            .lines_with(from, module)
            .into_iter()
            .find_map(|line| {
                let mut words = line.split_whitespace();
                (words.next() == Some(module)).then_some(())?;
                // module, state, build, queued, "N.N s ago"
                words.nth(2)?.parse().ok()
            })
    })
}

#[test]
fn a_module_that_falls_behind_pauses_reading_instead_of_queueing() {
    let scratch = Scratch::new();
    // Input budgets off: only the queue bound holds a flood back.
    let (mut server, address) = start_server(
        &scratch,
        &[
            "network.max_packets_per_second=0",
            "network.max_packets_per_second_total=0",
            "network.max_queued_events=100",
        ],
    );
    let mut client = RawClient::connect(&address).expect("connect");
    client.send_packet(&Stall { ms: 4000 }).expect("stall");
    const FLOOD: u64 = 20_000;
    for _ in 0..FLOOD {
        client.queue_packet(&CountPacket::default()).expect("queue");
    }
    client.flush().expect("send the flood");
    // While net_probe sleeps, the packets wait in the socket, not in its
    // queue: what is queued stays near the bound (one read's worth and up
    // to 10 ms of delivery past it, the age of the queues' reading), far
    // from the whole flood. A debug build on a busy machine delivers
    // 5,000–7,400 in those 10 ms (a third of the runs went past 5,000 on
    // CI's machine): half the flood is the line.
    let mut most = 0;
    let until = Instant::now() + Duration::from_millis(3000);
    while Instant::now() < until {
        most = most.max(queued(&mut server, "net_probe").expect("a modules line"));
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(
        most > 0 && most < FLOOD / 2,
        "net_probe's queue held {most} messages while it was behind"
    );
    server.pump();
    assert!(
        !server
            .lines_with(0, "not reading from peers until it catches up")
            .is_empty(),
        "the operator is told:\n{}",
        server.output()
    );
    eprintln!("net_probe's queue held at most {most} messages");
    // Nothing is lost: once it catches up, every packet arrives.
    let counted = common::wait_until(Duration::from_secs(60), || {
        client.send_packet(&CountQuery).ok()?;
        let reply = client.recv(Duration::from_secs(10)).ok()??;
        let count = CountReply::decode(&reply.data).ok()?.count;
        (count == FLOOD).then_some(count)
    });
    assert_eq!(counted, Some(FLOOD), "every packet of the flood arrived");
    server.send("stop");
    assert_eq!(server.wait_exit(Duration::from_secs(30)), Some(0));
}
