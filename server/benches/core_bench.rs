//! Module host benchmark: real modules (the `probe` fixture, release build)
//! in an in-process host, each figure against a raw baseline run in the same
//! process: events through the bus vs a raw channel between two threads,
//! call round trips vs a raw channel ping-pong, startup with 5 prebuilt
//! modules, reload latency. Prints a table; asserts nothing.
//!
//! Run: `cargo bench -p buildat-server --bench core_bench`

mod support;

use buildat_test_probe_api::{CallMany, CallManyResult, EmitRequest, Numbered, Stats};
use support::{build_dir, copy_dir, prebuild, repo};

use std::path::Path;
use std::time::{Duration, Instant};

use buildat_interface::{decode, encode};
use buildat_server::config::ServerConfig;
use buildat_server::core::Core;

const EVENTS: u64 = 200_000;
const PAYLOAD: u32 = 64;
const CALLS: u64 = 20_000;

/// A module path with `__loader` and probes named `names`.
fn scratch(names: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp");
    let modules = dir.path().join("modules");
    buildat_harness::layout::write_module_workspace(&modules).expect("module workspace");
    copy_dir(&repo().join("modules/__loader"), &modules.join("__loader"));
    for name in names {
        copy_dir(&repo().join("tests/modules/probe"), &modules.join(name));
    }
    dir
}

fn core(dir: &Path) -> Core {
    let config = ServerConfig::new(dir.join("world"), vec![dir.join("modules")], build_dir());
    Core::new(config).expect("core")
}

fn percentile(sorted: &[u64], p: f64) -> u64 {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted.get(index).copied().unwrap_or(0)
}

struct Row {
    name: &'static str,
    ours: String,
    raw: String,
    ratio: String,
    goal: &'static str,
}

/// Each run uses its own event name so the receiver's count starts at 0.
fn bus_events(core: &Core, run: u32) -> f64 {
    let name = format!("bench:run{run}");
    core.call("b", "subscribe", &encode(&name).expect("encode"))
        .expect("subscribe");
    let request = EmitRequest {
        name: name.clone(),
        count: EVENTS,
        payload_size: PAYLOAD,
    };
    let started = Instant::now();
    core.call("a", "emit", &encode(&request).expect("encode"))
        .expect("emit");
    loop {
        let stats: Stats = decode(
            &core
                .call("b", "stats", &encode(&name).expect("encode"))
                .expect("stats"),
        )
        .expect("decode");
        if stats.count >= EVENTS {
            assert!(stats.in_order, "events out of order");
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    EVENTS as f64 / started.elapsed().as_secs_f64()
}

fn raw_events() -> f64 {
    let (send, receive) = crossbeam_channel::unbounded::<Vec<u8>>();
    let started = Instant::now();
    let receiver = std::thread::spawn(move || {
        for (next, bytes) in receive.iter().take(EVENTS as usize).enumerate() {
            let numbered: Numbered = decode(&bytes).expect("decode");
            assert_eq!(numbered.seq, next as u64);
        }
    });
    let padding = vec![0u8; PAYLOAD as usize];
    for seq in 0..EVENTS {
        let numbered = Numbered {
            seq,
            padding: padding.clone(),
        };
        send.send(encode(&numbered).expect("encode")).expect("send");
    }
    receiver.join().expect("receiver");
    EVENTS as f64 / started.elapsed().as_secs_f64()
}

fn bus_calls(core: &Core) -> Vec<u64> {
    let request = CallMany {
        module: "b".into(),
        function: "ping".into(),
        count: CALLS,
    };
    let result: CallManyResult = decode(
        &core
            .call("a", "call_many", &encode(&request).expect("encode"))
            .expect("call_many"),
    )
    .expect("decode");
    assert_eq!(result.errors, 0);
    let mut latencies = result.latencies_ns;
    latencies.sort_unstable();
    latencies
}

fn raw_calls() -> Vec<u64> {
    let (to_server, requests) = crossbeam_channel::bounded::<Vec<u8>>(1);
    let (to_client, replies) = crossbeam_channel::bounded::<Vec<u8>>(1);
    let server = std::thread::spawn(move || {
        for request in requests.iter() {
            if to_client.send(request).is_err() {
                break;
            }
        }
    });
    let mut latencies = Vec::with_capacity(CALLS as usize);
    for _ in 0..CALLS {
        let started = Instant::now();
        to_server.send(vec![0u8; 16]).expect("send");
        replies.recv().expect("reply");
        latencies.push(started.elapsed().as_nanos() as u64);
    }
    drop(to_server);
    server.join().expect("server");
    latencies.sort_unstable();
    latencies
}

fn median_ms(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn main() {
    prebuild(&repo().join("modules/__loader"));
    prebuild(&repo().join("tests/modules/probe"));
    let mut rows = Vec::new();

    // Events and calls between two modules.
    let dir = scratch(&["a", "b"]);
    let host = core(dir.path());
    host.start().expect("start");
    bus_events(&host, 0); // warm up
    let mut ours = Vec::new();
    let mut raw = Vec::new();
    for run in 1..=3 {
        ours.push(bus_events(&host, run));
        raw.push(raw_events());
    }
    let (ours, raw) = (median_ms(ours), median_ms(raw));
    rows.push(Row {
        name: "events/s a -> b (64 B payload)",
        ours: format!("{ours:.0}"),
        raw: format!("{raw:.0}"),
        ratio: format!("{:.2}", ours / raw),
        goal: ">= 0.25 of raw",
    });

    bus_calls(&host); // warm up
    let ours = bus_calls(&host);
    let raw = raw_calls();
    for (name, p) in [
        ("call round trip median (us)", 0.5),
        ("call round trip p99 (us)", 0.99),
    ] {
        let (o, r) = (
            percentile(&ours, p) as f64 / 1000.0,
            percentile(&raw, p) as f64 / 1000.0,
        );
        rows.push(Row {
            name,
            ours: format!("{o:.1}"),
            raw: format!("{r:.1}"),
            ratio: format!("{:.2}x", o / r),
            goal: "<= 4x raw",
        });
    }

    // Reload with unchanged source: command to core:continue handled.
    let mut reloads = Vec::new();
    for _ in 0..20 {
        let started = Instant::now();
        host.reload_module("b").expect("reload");
        reloads.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    let mut sorted = reloads.clone();
    sorted.sort_by(f64::total_cmp);
    rows.push(Row {
        name: "reload, unchanged source (ms)",
        ours: format!(
            "median {:.1}, max {:.1}",
            median_ms(reloads),
            sorted[sorted.len() - 1]
        ),
        raw: "-".into(),
        ratio: "-".into(),
        goal: "median < 100 ms",
    });
    host.stop_all();

    // Startup to core:start with 5 prebuilt modules (+ __loader).
    let mut startups = Vec::new();
    for _ in 0..5 {
        let dir = scratch(&["m1", "m2", "m3", "m4", "m5"]);
        let started = Instant::now();
        let host = core(dir.path());
        let loaded = host.start().expect("start");
        startups.push(started.elapsed().as_secs_f64() * 1000.0);
        assert_eq!(loaded, 6);
        host.stop_all();
    }
    rows.push(Row {
        name: "startup to core:start, 5 modules (ms)",
        ours: format!("{:.1}", median_ms(startups)),
        raw: "-".into(),
        ratio: "-".into(),
        goal: "< 300 ms",
    });

    // Reload after a one-line source change: incremental cargo build + swap.
    let dir = scratch(&[]);
    let editable = dir.path().join("modules/edit");
    copy_dir(&repo().join("tests/modules/probe"), &editable);
    buildat_harness::layout::make_standalone(&editable).expect("standalone");
    let host = core(dir.path());
    host.start().expect("start");
    let source = editable.join("src/lib.rs");
    let original = std::fs::read_to_string(&source).expect("source");
    let stamp = format!("\"probe-{}\"", std::process::id());
    std::fs::write(&source, original.replace("\"probe-1\"", &stamp)).expect("edit");
    let started = Instant::now();
    host.reload_module("edit").expect("reload after edit");
    let edited = started.elapsed().as_secs_f64();
    let version: String =
        decode(&host.call("edit", "version", &[]).expect("version")).expect("decode");
    assert_eq!(format!("\"{version}\""), stamp, "new code runs");
    host.stop_all();
    rows.push(Row {
        name: "reload after a one-line edit (s)",
        ours: format!("{edited:.1}"),
        raw: "-".into(),
        ratio: "-".into(),
        goal: "report (release build)",
    });

    println!();
    println!(
        "{:<40} {:>26} {:>12} {:>8}  goal",
        "measure", "buildat", "raw", "ratio"
    );
    for row in rows {
        println!(
            "{:<40} {:>26} {:>12} {:>8}  {}",
            row.name, row.ours, row.raw, row.ratio, row.goal
        );
    }
}
