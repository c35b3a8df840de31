//! `fault_probe`: the fault test's fixture module (`scripts/faulttest`),
//! loaded under several names (`fault_a`, `fault_b`, `fault_victim`).
//!
//! Owns: nothing a user sees. On every `core:tick` it emits
//! `fault_probe.per_tick` (default 10) `fault:seq` events numbered from 0,
//! and it counts the `fault:seq` events of every other instance, checking
//! that each sender's numbers arrive in order with no gap and no repeat. Its
//! numbering and counts survive reloads (its stash), so a reload that lost
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
    Host, Module, ModuleError, Receive, Stash, encode, events, export_module, log,
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
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
struct State {
    sent: u64,
    received: BTreeMap<String, Received>,
}

impl Stash for State {
    const LAYOUT: u32 = 1;
}

struct FaultProbe {
    host: Host,
    name: String,
    per_tick: u64,
    state: State,
}

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

    fn tick(&mut self) -> Result<(), ModuleError> {
        for _ in 0..self.per_tick {
            let numbered = (self.name.as_str(), self.state.sent);
            self.host.emit_event(SEQ_EVENT, &encode(&numbered)?)?;
            self.state.sent += 1;
        }
        Ok(())
    }

    fn hang(&self, text: &str) -> Result<(), ModuleError> {
        if let Some(millis) = self.addressed(text) {
            let millis: u64 = millis
                .trim()
                .parse()
                .map_err(|_| format!("fault:hang: bad milliseconds in {text:?}"))?;
            log::info!("fault_probe {} hangs for {millis} ms", self.name);
            std::thread::sleep(Duration::from_millis(millis));
            log::info!("fault_probe {} is back", self.name);
        }
        Ok(())
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

    fn receive(table: &mut Receive<Self>) {
        table
            .event(|probe, _: events::Tick| probe.tick())
            .event_named(SEQ_EVENT, |probe, (sender, seq): (String, u64)| {
                if sender != probe.name {
                    probe.count(sender, seq);
                }
                Ok(())
            })
            // The console's text is not read: every instance reports.
            .event_raw(REPORT_EVENT, |probe, _| {
                probe.report();
                Ok(())
            })
            .event_named(PANIC_EVENT, |probe, text: String| {
                if probe.addressed(&text).is_some() {
                    panic!("fault_probe {} panics as asked", probe.name);
                }
                Ok(())
            })
            .event_named(HANG_EVENT, |probe, text: String| probe.hang(&text))
            .stash(
                |probe| probe.state.clone(),
                |probe, state| {
                    probe.state = state;
                    Ok(())
                },
            );
    }
}

export_module!(FaultProbe);

#[cfg(test)]
mod tests {
    use buildat_interface::encode;
    use buildat_interface::testing::TestHost;

    use super::*;

    #[test]
    fn it_numbers_its_events_and_counts_another_senders_over_a_reload() {
        let kit = TestHost::new()
            .name("fault_a")
            .config("fault_probe.per_tick", "2");
        let mut probe = kit.load::<FaultProbe>().unwrap();
        probe.emit(&events::Tick { dtime: 0.05 }).unwrap();
        let sent: Vec<(String, u64)> = kit.emitted_named(SEQ_EVENT);
        assert_eq!(sent, [("fault_a".into(), 0), ("fault_a".into(), 1)]);
        for seq in [5u64, 6, 8, 8] {
            probe
                .emit_raw(SEQ_EVENT, &encode(&("fault_b", seq)).unwrap())
                .unwrap();
        }

        let probe = probe.reload::<FaultProbe>().unwrap();
        let state = &probe.module().state;
        assert_eq!(state.sent, 2, "its numbering goes on after the reload");
        assert!(
            !state.received.contains_key("fault_a"),
            "its own not counted"
        );
        let b = &state.received["fault_b"];
        assert_eq!(
            (b.first, b.count, b.next_expected, b.gaps, b.repeats),
            (5, 4, 9, 1, 1)
        );
    }
}
