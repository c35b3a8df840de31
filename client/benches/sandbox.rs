//! Benchmark of the client's Lua sandbox and of a whole connection.
//!
//! 1. Sandbox overhead: the same CPU-heavy Lua inside the sandbox (a fresh
//!    per-file environment, interrupt-based time limit, memory limit) and in
//!    a plain unsandboxed Luau VM, run alternately; median of 11 runs each,
//!    ratio in the same run. Goal: at most 1.3x.
//! 2. Memory of the Lua state: a fresh runtime, and one after running a
//!    module script.
//! 3. A whole client process (the real binary) against an in-process fake
//!    server: time from the start of connecting to the end of the first
//!    module script, cold and warm cache, and the process's memory.
//!
//! 4. A packet every player's edits bring (`main:edits`, 32 entries) into
//!    the game's client Lua: logging at info (verbose skipped, as a client
//!    runs by default) against a sink that keeps verbose but discards it:
//!    what every client paid before a skipped level cost nothing.
//!
//! Run: `cargo bench -p buildat-client --bench sandbox`. Plain
//! `std::time::Instant`, no harness.

use buildat_harness::fake_server;
use std::process::Command;
use std::time::{Duration, Instant};

use buildat_client::sandbox::{Level, LogSink, Options, Runtime};
use mlua::{Lua, Value};

const RUNS: usize = 11;

const WORKLOADS: &[(&str, &str)] = &[
    (
        "numeric loop",
        r#"
        local acc = 0
        for i = 1, 5000000 do
            acc = (acc + i * 7) % 1000003
        end
        return acc
        "#,
    ),
    (
        "calls + tables",
        r#"
        local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end
        local t = {}
        for i = 1, 200000 do t[i] = { x = i, y = i * 2 } end
        local s = 0
        for _, v in ipairs(t) do s = s + v.x + v.y end
        return fib(24) + s
        "#,
    ),
    (
        "strings + math",
        r#"
        local parts = {}
        for i = 1, 100000 do
            parts[#parts + 1] = string.format("%d:%s", i, tostring(math.floor(math.sqrt(i))))
        end
        local joined = table.concat(parts, ",")
        local n = 0
        for _ in string.gmatch(joined, "%d+:1%d") do n += 1 end
        return n + #joined
        "#,
    ),
];

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// Runs the workload alternately in a plain VM and in the sandbox (so load
/// from other processes hits both alike); medians of each.
fn time_both(runtime: &Runtime, source: &str) -> (Duration, Duration) {
    let lua = Lua::new();
    let plain_fn = lua.load(source).into_function().expect("compile");
    let mut plain = Vec::new();
    let mut sandboxed = Vec::new();
    for _ in 0..RUNS {
        let start = Instant::now();
        let a = plain_fn.call::<i64>(()).expect("run");
        plain.push(start.elapsed());
        // A fresh environment and compile per run, as for a file.
        let start = Instant::now();
        let values = runtime
            .eval_sandboxed("bench/client_lua/init.lua", source)
            .expect("run in the sandbox");
        sandboxed.push(start.elapsed());
        let b = match values.first() {
            Some(Value::Integer(n)) => *n,
            Some(Value::Number(n)) => *n as i64,
            other => panic!("unexpected result {other:?}"),
        };
        assert_eq!(a, b, "the same result");
    }
    (median(plain), median(sandboxed))
}

fn quiet_runtime() -> Runtime {
    Runtime::new(Options {
        time_limit: Duration::from_secs(60),
        log: LogSink::new(Level::Info, |_, _, _| {}),
        ..Options::default()
    })
    .expect("runtime")
}

fn overhead() {
    println!("## Sandbox overhead (median of {RUNS} runs)");
    println!();
    println!("| workload | unsandboxed Luau | sandboxed | ratio |");
    println!("|---|---:|---:|---:|");
    let runtime = quiet_runtime();
    for (name, source) in WORKLOADS {
        let (plain, sandboxed) = time_both(&runtime, source);
        println!(
            "| {name} | {:.1} ms | {:.1} ms | {:.2}x |",
            plain.as_secs_f64() * 1e3,
            sandboxed.as_secs_f64() * 1e3,
            sandboxed.as_secs_f64() / plain.as_secs_f64()
        );
    }
    println!();
}

fn memory() {
    println!("## Lua state memory");
    println!();
    let plain = Lua::new();
    let runtime = quiet_runtime();
    println!("| state | bytes |");
    println!("|---|---:|");
    println!("| plain Luau VM (Lua::new) | {} |", plain.used_memory());
    println!("| client runtime after boot | {} |", runtime.used_memory());
    runtime.set_file(
        "game/client_lua/init.lua",
        br#"
        local log = buildat.Logger("game")
        local json = require("buildat/extension/json")
        local state = {}
        for i = 1, 100 do
            buildat.sub_packet("game:p" .. i, function(data) state[i] = json.decode(data) end)
        end
        "#,
    );
    runtime
        .run_script("game/client_lua/init.lua")
        .expect("module script");
    let _ = runtime.lua().gc_collect();
    println!(
        "| after a module script (100 subscriptions, json extension) | {} |",
        runtime.used_memory()
    );
    println!();
}

/// One client process against a fake server; returns (first script ms,
/// process memory text).
fn one_connection(cache: &std::path::Path, data: &[u8]) -> (f64, String) {
    let files = vec![
        (
            "game/client_lua/init.lua",
            br#"buildat.send_packet("test:ready", "") buildat.disconnect()"#.to_vec(),
        ),
        ("game/client_data/blob.bin", data.to_vec()),
    ];
    let (address, server) = fake_server::fake_server(move |mut conn| {
        fake_server::serve_files(&mut conn, &files);
        let ready = conn.recv(Duration::from_secs(30)).expect("script ran");
        assert_eq!(ready.name, "test:ready");
        conn.wait_closed(Duration::from_secs(10));
    });
    let out = Command::new(env!("CARGO_BIN_EXE_buildat-client"))
        .args(["--connect", &address, "--cache"])
        .arg(cache)
        .args(["-v", "--quit-after", "60"])
        .output()
        .expect("run the client");
    server.join().expect("server side");
    let text = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{text}");
    let line = text
        .lines()
        .find(|l| l.contains("first script done after"))
        .unwrap_or_else(|| panic!("no timing line in {text}"));
    let ms: f64 = line
        .split("first script done after ")
        .nth(1)
        .and_then(|s| s.split(" ms").next())
        .and_then(|s| s.parse().ok())
        .expect("milliseconds");
    let memory = line
        .split("process memory ")
        .nth(1)
        .unwrap_or("unknown")
        .to_string();
    (ms, memory)
}

fn connection() {
    println!("## A client process against an in-process fake server (median of 5)");
    println!();
    println!("| cache | connect → first module script done | process memory at exit |");
    println!("|---|---:|---|");
    let data: Vec<u8> = (0..4_000_000u32).map(|i| (i % 251) as u8).collect();
    for warm in [false, true] {
        let mut times = Vec::new();
        let mut memory = String::new();
        for _ in 0..5 {
            let dir = tempfile::tempdir().expect("temp");
            if warm {
                one_connection(dir.path(), &data);
            }
            let (ms, mem) = one_connection(dir.path(), &data);
            times.push(Duration::from_secs_f64(ms / 1e3));
            memory = mem;
        }
        println!(
            "| {} (init.lua + 4 MB of data) | {:.1} ms | {memory} |",
            if warm { "warm" } else { "cold" },
            median(times).as_secs_f64() * 1e3
        );
    }
    println!();
}

/// A runtime running main's client Lua, logging up to `level` into nothing.
fn game_runtime(level: Level) -> Runtime {
    let runtime = Runtime::new(Options {
        time_limit: Duration::from_secs(60),
        log: LogSink::new(level, |_, _, _| {}),
        ..Options::default()
    })
    .expect("runtime");
    let name = "main/client_lua/init.lua";
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../modules")
        .join(name);
    let source = std::fs::read(&path).expect("main's client Lua");
    runtime.set_file(name, &source);
    runtime.run_script(name).expect("main's client Lua runs");
    runtime.take_outgoing();
    runtime
}

/// `main:edits` of `entries` edits: `[<I8i4i4i4s2]` each.
fn edits_packet(entries: u32) -> Vec<u8> {
    let mut data = Vec::new();
    for i in 0..entries {
        data.extend_from_slice(&u64::from(i % 7).to_le_bytes());
        for c in [i as i32 * 3, 40 + i as i32 % 5, -(i as i32)] {
            data.extend_from_slice(&c.to_le_bytes());
        }
        let name = if i % 2 == 0 { "stone" } else { "air" };
        data.extend_from_slice(&(name.len() as u16).to_le_bytes());
        data.extend_from_slice(name.as_bytes());
    }
    data
}

fn edits() {
    const PACKETS: usize = 2_000;
    println!(
        "## `main:edits` of 32 entries into main's client Lua (median of {RUNS} runs of {PACKETS})"
    );
    println!();
    println!("| logging | per packet | ratio |");
    println!("|---|---:|---:|");
    let packet = edits_packet(32);
    let runtimes = [game_runtime(Level::Verbose), game_runtime(Level::Info)];
    let mut samples = [Vec::new(), Vec::new()];
    for _ in 0..RUNS {
        for (runtime, samples) in runtimes.iter().zip(&mut samples) {
            let started = Instant::now();
            for _ in 0..PACKETS {
                let failures = runtime.dispatch_packet("main:edits", &packet);
                assert!(failures.is_empty(), "main:edits is handled");
            }
            samples.push(started.elapsed() / PACKETS as u32);
        }
    }
    let [verbose, info] = samples.map(median);
    for (name, time) in [
        ("verbose kept (every level built, as before)", verbose),
        ("info (verbose skipped)", info),
    ] {
        println!(
            "| {name} | {:.1} µs | {:.2} |",
            time.as_secs_f64() * 1e6,
            time.as_secs_f64() / verbose.as_secs_f64()
        );
    }
    println!();
}

fn main() {
    // `cargo test --benches` runs this with --test: keep it quick there.
    if std::env::args().any(|a| a == "--test") {
        let runtime = quiet_runtime();
        assert!(runtime.eval_sandboxed("smoke", "return 1").is_ok());
        return;
    }
    overhead();
    memory();
    edits();
    connection();
}
