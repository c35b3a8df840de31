//! `probe`: a test fixture module, loaded by the server's tests and
//! benchmarks under several names (its folder is copied as `a`, `b`, ...).
//!
//! Owns: nothing a user sees. It emits numbered events, counts the ones it
//! receives (checking order), echoes and proxies calls, keeps a counter
//! across reloads in its stash, reports its code `VERSION` (edited by the
//! reload tests), and panics or hangs on request. What it receives is in
//! its table; `ping` (its raw payload echoed), `call` (a proxied call's raw
//! reply) and the events subscribed at run time (`subscribe`) go through
//! `Module::call` and `Module::event`, the fallback. The setting
//! `probe_panic=<module>:<stage>` (stage: constructor, init, start) makes the
//! module of that name panic there.

use std::collections::HashMap;
use std::time::Instant;

use buildat_interface::{
    Event, Host, Module, ModuleError, Receive, Stash, decode, encode, events, export_module, log,
};
use serde::{Deserialize, Serialize};

/// Edited by the reload tests to prove new code runs after a rebuild.
pub const VERSION: &str = "probe-1";

pub use buildat_test_probe_api::*;

/// `version`: the code's [`VERSION`].
#[derive(Serialize, Deserialize)]
struct GetVersion {}

/// `lifecycle`: the start events seen (`core:start`, `core:continue`).
#[derive(Serialize, Deserialize)]
struct Lifecycle {}

/// `incr`: adds one to the counter, answers it.
#[derive(Serialize, Deserialize)]
struct Incr {}

/// `get`: the counter.
#[derive(Serialize, Deserialize)]
struct Get {}

/// `subscribe NAME`: counts the events named NAME too.
#[derive(Serialize, Deserialize)]
struct Subscribe(String);

/// `stats NAME`: what the events named NAME looked like.
#[derive(Serialize, Deserialize)]
struct GetStats(String);

/// `emit`: numbered events.
#[derive(Serialize, Deserialize)]
struct Emit(EmitRequest);

/// `call_many`: timed calls of another module.
#[derive(Serialize, Deserialize)]
struct Many(CallMany);

/// `panic`: panics in the call.
#[derive(Serialize, Deserialize)]
struct Panic {}

/// `log TEXT`: logs TEXT.
#[derive(Serialize, Deserialize)]
struct Log(String);

buildat_interface::calls! {
    module "probe";
    GetVersion = "version" -> String;
    Lifecycle = "lifecycle" -> Vec<String>;
    Incr = "incr" -> u64;
    Get = "get" -> u64;
    Subscribe = "subscribe" -> ();
    GetStats = "stats" -> Stats;
    Emit = "emit" -> ();
    Many = "call_many" -> CallManyResult;
    Panic = "panic" -> ();
    Log = "log" -> ();
}

/// What the probe carries over a reload.
#[derive(Serialize, Deserialize)]
struct ProbeStash {
    counter: u64,
    stats: HashMap<String, Stats>,
}

impl Stash for ProbeStash {
    const LAYOUT: u32 = 1;
}

struct Probe {
    host: Host,
    name: String,
    counter: u64,
    stats: HashMap<String, Stats>,
    started: Vec<String>,
}

impl Probe {
    fn maybe_panic(&self, stage: &str) {
        if let Some(setting) = self.host.get_config("probe_panic")
            && setting == format!("{}:{stage}", self.name)
        {
            panic!("probe {} panics in {stage} as asked", self.name);
        }
    }

    fn count_event(&mut self, name: &str, numbered: Numbered) {
        let stats = self.stats.entry(name.to_string()).or_insert(Stats {
            in_order: true,
            ..Stats::default()
        });
        if numbered.seq != stats.next_expected {
            stats.in_order = false;
            stats.duplicates_or_gaps += 1;
        }
        stats.next_expected = numbered.seq + 1;
        stats.count += 1;
    }

    fn emit(&self, request: EmitRequest) -> Result<(), ModuleError> {
        let padding = vec![0u8; request.payload_size as usize];
        for seq in 0..request.count {
            let numbered = Numbered {
                seq,
                padding: padding.clone(),
            };
            self.host.emit_event(&request.name, &encode(&numbered)?)?;
        }
        Ok(())
    }

    fn call_many(&self, request: CallMany) -> CallManyResult {
        let mut result = CallManyResult {
            errors: 0,
            latencies_ns: Vec::with_capacity(request.count as usize),
        };
        let body = [0u8; 16];
        for _ in 0..request.count {
            let started = Instant::now();
            if self
                .host
                .call_raw(&request.module, &request.function, &body)
                .is_err()
            {
                result.errors += 1;
            }
            result
                .latencies_ns
                .push(started.elapsed().as_nanos() as u64);
        }
        result
    }
}

impl Module for Probe {
    fn create(host: Host) -> Result<Self, ModuleError> {
        let probe = Self {
            host,
            name: host.module_name(),
            counter: 0,
            stats: HashMap::new(),
            started: Vec::new(),
        };
        probe.maybe_panic("constructor");
        Ok(probe)
    }

    fn receive(table: &mut Receive<Self>) {
        table
            .event(|probe, _: events::Start| {
                probe.maybe_panic("start");
                probe.started.push(events::Start::NAME.to_string());
                Ok(())
            })
            .event(|probe, _: events::Continue| {
                probe.started.push(events::Continue::NAME.to_string());
                Ok(())
            })
            .event(|probe, modified: events::ModuleModified| {
                log::info!(
                    "probe {} saw {} modified: {}",
                    probe.name,
                    modified.name,
                    modified.path
                );
                Ok(())
            })
            .event_named("probe:panic", |probe, target: String| {
                if target == probe.name {
                    panic!("probe {} panics in an event as asked", probe.name);
                }
                Ok(())
            })
            .event_named("probe:hang", |_, millis: u64| {
                std::thread::sleep(std::time::Duration::from_millis(millis));
                Ok(())
            })
            .event_named(SEQ_EVENT, |probe, numbered: Numbered| {
                probe.count_event(SEQ_EVENT, numbered);
                Ok(())
            })
            .call(|_, _: GetVersion| Ok(VERSION.to_string()))
            .call(|probe, _: Lifecycle| Ok(probe.started.clone()))
            .call(|probe, _: Incr| {
                probe.counter += 1;
                Ok(probe.counter)
            })
            .call(|probe, _: Get| Ok(probe.counter))
            .call(|probe, Subscribe(name)| Ok(probe.host.sub_event(&name)?))
            .call(|probe, GetStats(name)| Ok(probe.stats.get(&name).cloned().unwrap_or_default()))
            .call(|probe, Emit(request)| probe.emit(request))
            .call(|probe, Many(request)| Ok(probe.call_many(request)))
            .call(|probe, _: Panic| -> Result<(), ModuleError> {
                panic!("probe {} panics in a call as asked", probe.name)
            })
            .call(|_, Log(message)| {
                log::info!("{message}");
                Ok(())
            })
            .stash(
                |probe| ProbeStash {
                    counter: probe.counter,
                    stats: probe.stats.clone(),
                },
                |probe, stash| {
                    probe.counter = stash.counter;
                    probe.stats = stash.stats;
                    Ok(())
                },
            );
    }

    fn init(&mut self) -> Result<(), ModuleError> {
        self.maybe_panic("init");
        Ok(())
    }

    /// The events subscribed at run time (`subscribe`): counted.
    fn event(&mut self, name: &str, payload: &[u8]) -> Result<(), ModuleError> {
        let numbered: Numbered = decode(payload)?;
        self.count_event(name, numbered);
        Ok(())
    }

    /// The calls whose payloads and replies are raw bytes.
    fn call(&mut self, function: &str, payload: &[u8]) -> Result<Vec<u8>, ModuleError> {
        match function {
            "ping" => Ok(payload.to_vec()),
            "call" => {
                let request: ProxyCall = decode(payload)?;
                Ok(self
                    .host
                    .call_raw(&request.module, &request.function, &request.payload)?)
            }
            other => Err(ModuleError::UnknownFunction(other.to_string())),
        }
    }
}

export_module!(Probe);
