//! `fault_probe`: the fault test's fixture module (`scripts/faulttest`),
//! loaded under several names (`fault_a`, `fault_b`, `fault_victim`).
//!
//! Owns: nothing a user sees. On every `core:tick` it emits
//! `fault_probe.per_tick` (default 10) `fault:seq` events numbered from 0,
//! and it counts the `fault:seq` events of every other instance, checking
//! that each sender's numbers arrive in order with no gap and no repeat. Its
//! numbering and counts survive reloads (tmp data), so a reload that lost
//! or doubled an event shows up as a gap or a repeat. A sender's first
//! event seen is where counting starts: events emitted before this instance
//! subscribed (an instance loaded a tick after another, or loaded again
//! after a panic) were never meant for it. Console events (the server's
//! `emit NAME TEXT`, payload a bincode string):
//! - `fault:report`: logs `fault_probe NAME sent S` and, per sender,
//!   `fault_probe NAME from SENDER: first F, received N, next M, gaps G,
//!   repeats R` (nothing lost or repeated: `N == M - F`, `G == R == 0`);
//! - `fault:panic NAME`: the instance of that name panics in the handler;
//! - `fault:hang NAME MILLIS`: the instance of that name blocks its thread.
//!
//! Does not own: what a panic or a hang does to the server (the core
//! contains them; the fault test checks it).

use std::collections::BTreeMap;
use std::time::Duration;

use buildat_interface::{
    Event, Host, Module, ModuleError, UnloadKind, decode, encode, events, export_module, log,
};
use serde::{Deserialize, Serialize};

pub const SEQ_EVENT: &str = "fault:seq";
pub const REPORT_EVENT: &str = "fault:report";
pub const PANIC_EVENT: &str = "fault:panic";
pub const HANG_EVENT: &str = "fault:hang";

/// What one sender's events looked like on arrival.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
struct Received {
    /// The number of the first event seen from this sender.
    first: u64,
    count: u64,
    next_expected: u64,
    gaps: u64,
    repeats: u64,
}

/// Everything kept across a reload.
#[derive(Debug, Default, Serialize, Deserialize)]
struct State {
    sent: u64,
    received: BTreeMap<String, Received>,
}

struct FaultProbe {
    host: Host,
    name: String,
    per_tick: u64,
    state: State,
}

const TMP_STATE: &str = "state";

impl FaultProbe {
    fn count(&mut self, sender: String, seq: u64) {
        let received = self
            .state
            .received
            .entry(sender.clone())
            .or_insert_with(|| {
                log::info!(
                    "fault_probe {}: first event from {sender} is number {seq}",
                    self.name
                );
                Received {
                    first: seq,
                    next_expected: seq,
                    ..Received::default()
                }
            });
        if seq > received.next_expected {
            // Named when it happens, so the server's log shows what it
            // happened next to (a reload, a hang).
            log::warn!(
                "fault_probe {}: {} events from {sender} missing before {seq}",
                self.name,
                seq - received.next_expected
            );
            received.gaps += seq - received.next_expected;
        } else if seq < received.next_expected {
            received.repeats += 1;
        }
        received.next_expected = received.next_expected.max(seq + 1);
        received.count += 1;
    }

    fn report(&self) {
        log::info!("fault_probe {} sent {}", self.name, self.state.sent);
        for (sender, r) in &self.state.received {
            log::info!(
                "fault_probe {} from {sender}: first {}, received {}, next {}, gaps {}, repeats {}",
                self.name,
                r.first,
                r.count,
                r.next_expected,
                r.gaps,
                r.repeats
            );
        }
    }

    /// The console's text argument, if the event is meant for this instance:
    /// `NAME` or `NAME REST` gives `Some(REST)`.
    fn addressed<'a>(&self, text: &'a str) -> Option<&'a str> {
        let (target, rest) = text.split_once(' ').unwrap_or((text, ""));
        (target == self.name).then_some(rest)
    }
}

impl Module for FaultProbe {
    fn create(host: Host) -> Result<Self, ModuleError> {
        Ok(Self {
            host,
            name: host.module_name(),
            per_tick: host.get_setting("fault_probe.per_tick", 10u64)?,
            state: State::default(),
        })
    }

    fn init(&mut self) -> Result<(), ModuleError> {
        for name in [
            events::Tick::NAME,
            events::Continue::NAME,
            SEQ_EVENT,
            REPORT_EVENT,
            PANIC_EVENT,
            HANG_EVENT,
        ] {
            self.host.sub_event(name)?;
        }
        Ok(())
    }

    fn event(&mut self, name: &str, payload: &[u8]) -> Result<(), ModuleError> {
        match name {
            events::Continue::NAME => {
                if let Some(bytes) = self.host.tmp_restore_data(TMP_STATE) {
                    self.state = decode(&bytes)?;
                }
            }
            events::Tick::NAME => {
                for _ in 0..self.per_tick {
                    let numbered = (self.name.as_str(), self.state.sent);
                    self.host.emit_event(SEQ_EVENT, &encode(&numbered)?)?;
                    self.state.sent += 1;
                }
            }
            SEQ_EVENT => {
                let (sender, seq): (String, u64) = decode(payload)?;
                if sender != self.name {
                    self.count(sender, seq);
                }
            }
            REPORT_EVENT => self.report(),
            PANIC_EVENT => {
                let text: String = decode(payload)?;
                if self.addressed(&text).is_some() {
                    panic!("fault_probe {} panics as asked", self.name);
                }
            }
            HANG_EVENT => {
                let text: String = decode(payload)?;
                if let Some(millis) = self.addressed(&text) {
                    let millis: u64 = millis
                        .trim()
                        .parse()
                        .map_err(|_| format!("fault:hang: bad milliseconds in {text:?}"))?;
                    log::info!("fault_probe {} hangs for {millis} ms", self.name);
                    std::thread::sleep(Duration::from_millis(millis));
                    log::info!("fault_probe {} is back", self.name);
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn call(&mut self, function: &str, _payload: &[u8]) -> Result<Vec<u8>, ModuleError> {
        Err(ModuleError::UnknownFunction(function.to_string()))
    }

    fn unload(&mut self, kind: UnloadKind) -> Result<(), ModuleError> {
        if kind == UnloadKind::Reload {
            self.host.tmp_store_data(TMP_STATE, &encode(&self.state)?)?;
        }
        Ok(())
    }
}

export_module!(FaultProbe);
