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
use buildat_harness::wire::{definition, header};
use buildat_network_api::DisconnectPacket;
use buildat_test_net_probe_api::Echo;

fn start_server(scratch: &Scratch, settings: &[&str]) -> (Server, String) {
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
    server.expect_line("server started", Duration::from_secs(60));
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
        ],
    );
    let long_name = vec![b'x'; 1000];
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "oversized size field",
            header(100, u32::MAX),
            "over the maximum",
        ),
        ("undefined type", header(150, 0), "150"),
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
        with_bystanders(&address, || {
            let mut bad = RawClient::connect(&address).expect("connect");
            bad.send_raw(&bytes).expect("send bad bytes");
            assert!(
                bad.wait_closed(Duration::from_secs(10)).is_some(),
                "{case}: the sender is disconnected"
            );
        });
        let line = server
            .wait_for(reason, Duration::from_secs(5))
            .unwrap_or_else(|| panic!("{case}: reason '{reason}' logged:\n{}", server.output()));
        assert!(line.contains("disconnected"), "{case}: {line}");
    }

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

#[test]
fn connections_over_the_limit_are_refused_cleanly() {
    let scratch = Scratch::new();
    let (mut server, address) = start_server(&scratch, &["network.max_connections=3"]);
    let mut held: Vec<RawClient> = (0..3)
        .map(|_| RawClient::connect(&address).expect("connect"))
        .collect();
    for client in &mut held {
        assert_eq!(echo_stream(client, 0, 1, 1), 1);
    }
    let mut extra = RawClient::connect(&address).expect("connect");
    let packets = extra
        .wait_closed(Duration::from_secs(10))
        .expect("refused and closed");
    let goodbye = packets
        .iter()
        .find(|p| p.name == DisconnectPacket::NAME)
        .expect("a reason is sent");
    let goodbye = DisconnectPacket::decode(&goodbye.data).expect("a reason");
    assert!(goodbye.reason.contains("server full"), "{goodbye:?}");
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
    let (mut server, address) = start_server(&scratch, &[]);
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
    let (mut server, address) = start_server(&scratch, &[]);
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
