//! `probe`: a test fixture module, loaded by the server's tests and
//! benchmarks under several names (its folder is copied as `a`, `b`, ...).
//!
//! Owns: nothing a user sees. It emits numbered events, counts the ones it
//! receives (checking order), echoes and proxies calls, keeps a counter
//! across reloads with tmp data, reports its code `VERSION` (edited by the
//! reload tests), and panics or hangs on request. The setting
//! `probe_panic=<module>:<stage>` (stage: constructor, init, start) makes the
//! module of that name panic there.

use std::collections::HashMap;
use std::time::Instant;

use buildat_interface::{
    Event, Host, Module, ModuleError, UnloadKind, decode, encode, events, export_module, log,
};

/// Edited by the reload tests to prove new code runs after a rebuild.
pub const VERSION: &str = "probe-1";

pub use buildat_test_probe_api::*;

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

    fn count_event(&mut self, name: &str, payload: &[u8]) -> Result<(), ModuleError> {
        let numbered: Numbered = decode(payload)?;
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
        Ok(())
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

    fn init(&mut self) -> Result<(), ModuleError> {
        self.maybe_panic("init");
        self.host.sub_event(SEQ_EVENT)?;
        self.host.sub_event(events::Start::NAME)?;
        self.host.sub_event(events::Continue::NAME)?;
        self.host.sub_event("probe:panic")?;
        self.host.sub_event("probe:hang")?;
        self.host.sub_event(events::ModuleModified::NAME)?;
        Ok(())
    }

    fn event(&mut self, name: &str, payload: &[u8]) -> Result<(), ModuleError> {
        match name {
            events::Start::NAME => {
                self.maybe_panic("start");
                self.started.push(name.to_string());
            }
            events::Continue::NAME => {
                self.started.push(name.to_string());
                if let Some(bytes) = self.host.tmp_restore_data("counter") {
                    self.counter = decode(&bytes)?;
                }
                if let Some(bytes) = self.host.tmp_restore_data("stats") {
                    self.stats = decode(&bytes)?;
                }
            }
            events::ModuleModified::NAME => {
                let modified: events::ModuleModified = decode(payload)?;
                log::info!(
                    "probe {} saw {} modified: {}",
                    self.name,
                    modified.name,
                    modified.path
                );
            }
            "probe:panic" => {
                let target: String = decode(payload)?;
                if target == self.name {
                    panic!("probe {} panics in an event as asked", self.name);
                }
            }
            "probe:hang" => {
                let millis: u64 = decode(payload)?;
                std::thread::sleep(std::time::Duration::from_millis(millis));
            }
            _ => self.count_event(name, payload)?,
        }
        Ok(())
    }

    fn call(&mut self, function: &str, payload: &[u8]) -> Result<Vec<u8>, ModuleError> {
        Ok(match function {
            "ping" => payload.to_vec(),
            "version" => encode(VERSION)?,
            "lifecycle" => encode(&self.started)?,
            "incr" => {
                self.counter += 1;
                encode(&self.counter)?
            }
            "get" => encode(&self.counter)?,
            "subscribe" => {
                let name: String = decode(payload)?;
                self.host.sub_event(&name)?;
                encode(&())?
            }
            "stats" => {
                let name: String = decode(payload)?;
                encode(&self.stats.get(&name).cloned().unwrap_or_default())?
            }
            "emit" => {
                let request: EmitRequest = decode(payload)?;
                let padding = vec![0u8; request.payload_size as usize];
                for seq in 0..request.count {
                    let numbered = Numbered {
                        seq,
                        padding: padding.clone(),
                    };
                    self.host.emit_event(&request.name, &encode(&numbered)?)?;
                }
                encode(&())?
            }
            "call" => {
                let request: ProxyCall = decode(payload)?;
                self.host
                    .call_raw(&request.module, &request.function, &request.payload)?
            }
            "call_many" => {
                let request: CallMany = decode(payload)?;
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
                encode(&result)?
            }
            "panic" => panic!("probe {} panics in a call as asked", self.name),
            "log" => {
                let message: String = decode(payload)?;
                log::info!("{message}");
                encode(&())?
            }
            other => return Err(ModuleError::UnknownFunction(other.to_string())),
        })
    }

    fn unload(&mut self, kind: UnloadKind) -> Result<(), ModuleError> {
        if kind == UnloadKind::Reload {
            self.host
                .tmp_store_data("counter", &encode(&self.counter)?)?;
            self.host.tmp_store_data("stats", &encode(&self.stats)?)?;
        }
        Ok(())
    }
}

export_module!(Probe);
