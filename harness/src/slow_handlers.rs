//! The server's `slow handler:` log lines (`--slow-handler-ms`), parsed and
//! summed per handler: which module's event or call held its thread, how
//! often, how long at worst and when.
//!
//! Owns: [`SlowHandler`] (one line), [`SlowHandlers`] (the sums) and their
//! table. Does not own: starting the server with the flag (`server.rs`) or
//! deciding what is too slow (the server's limit).

use std::collections::BTreeMap;

const MARK: &str = "slow handler: module ";

/// One `slow handler: module M ran KIND 'NAME' for R ms, after W ms in its
/// queue` line.
#[derive(Debug, Clone, PartialEq)]
pub struct SlowHandler {
    pub module: String,
    /// "event" or "call".
    pub kind: String,
    pub name: String,
    pub run_ms: f64,
    pub wait_ms: f64,
    /// Seconds since midnight UTC from the line's timestamp, when it has one.
    pub at_s: Option<f64>,
}

impl SlowHandler {
    pub fn parse(line: &str) -> Option<Self> {
        let (head, rest) = line.split_once(MARK)?;
        let (module, rest) = rest.split_once(" ran ")?;
        let (kind, rest) = rest.split_once(" '")?;
        let (name, rest) = rest.rsplit_once("' for ")?;
        let (run, rest) = rest.split_once(" ms, after ")?;
        let (wait, _) = rest.split_once(" ms in its queue")?;
        Some(Self {
            module: module.to_string(),
            kind: kind.to_string(),
            name: name.to_string(),
            run_ms: run.parse().ok()?,
            wait_ms: wait.parse().ok()?,
            at_s: seconds_of_day(head),
        })
    }
}

/// `...THH:MM:SS.ffffffZ...` at the start of a log line, as seconds since
/// midnight.
pub fn seconds_of_day(line: &str) -> Option<f64> {
    let time = line.split_whitespace().next()?.split_once('T')?.1;
    let time = time.strip_suffix('Z').unwrap_or(time);
    let mut parts = time.split(':');
    let hours: f64 = parts.next()?.parse().ok()?;
    let minutes: f64 = parts.next()?.parse().ok()?;
    let seconds: f64 = parts.next()?.parse().ok()?;
    Some(hours * 3600.0 + minutes * 60.0 + seconds)
}

/// One handler's slow runs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HandlerSums {
    pub count: u64,
    pub total_ms: f64,
    pub max_run_ms: f64,
    pub max_wait_ms: f64,
    /// When its longest run ended (seconds of the day).
    pub worst_at_s: Option<f64>,
}

/// The slow runs of a server's log, per (module, kind, name).
#[derive(Debug, Default)]
pub struct SlowHandlers {
    pub handlers: BTreeMap<(String, String, String), HandlerSums>,
}

impl SlowHandlers {
    pub fn from_lines<'a>(lines: impl IntoIterator<Item = &'a String>) -> Self {
        let mut sums = Self::default();
        for slow in lines.into_iter().filter_map(|l| SlowHandler::parse(l)) {
            let entry = sums
                .handlers
                .entry((slow.module, slow.kind, slow.name))
                .or_default();
            entry.count += 1;
            entry.total_ms += slow.run_ms;
            if slow.run_ms >= entry.max_run_ms {
                entry.max_run_ms = slow.run_ms;
                entry.worst_at_s = slow.at_s;
            }
            entry.max_wait_ms = entry.max_wait_ms.max(slow.wait_ms);
        }
        sums
    }

    /// Up to `rows` handlers, most time first, as table lines; the worst
    /// run's time is given as seconds after `epoch_s` (seconds of the day).
    pub fn table(&self, rows: usize, epoch_s: Option<f64>) -> Vec<String> {
        let mut sorted: Vec<_> = self.handlers.iter().collect();
        sorted.sort_by(|a, b| b.1.total_ms.total_cmp(&a.1.total_ms));
        let mut lines = vec![format!(
            "{:<12} {:<5} {:<28} {:>6} {:>9} {:>9} {:>10} {:>8}",
            "module", "kind", "name", "runs", "total s", "max ms", "max wait", "worst t"
        )];
        for ((module, kind, name), sums) in sorted.into_iter().take(rows) {
            let worst = match (sums.worst_at_s, epoch_s) {
                (Some(at), Some(epoch)) => format!("{:.1}", (at - epoch).rem_euclid(86_400.0)),
                _ => "-".to_string(),
            };
            lines.push(format!(
                "{module:<12} {kind:<5} {name:<28} {:>6} {:>9.2} {:>9.1} {:>10.1} {worst:>8}",
                sums.count,
                sums.total_ms / 1e3,
                sums.max_run_ms,
                sums.max_wait_ms
            ));
        }
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINE: &str = "2026-12-05T17:35:23.500000Z  INFO slow handler: module main ran event 'main:tick_step' for 23.4 ms, after 0.3 ms in its queue";

    #[test]
    fn parses_the_servers_line() {
        let slow = SlowHandler::parse(LINE).expect("parsed");
        assert_eq!(slow.module, "main");
        assert_eq!(slow.kind, "event");
        assert_eq!(slow.name, "main:tick_step");
        assert_eq!(slow.run_ms, 23.4);
        assert_eq!(slow.wait_ms, 0.3);
        assert_eq!(slow.at_s, Some(17.0 * 3600.0 + 35.0 * 60.0 + 23.5));
        assert_eq!(SlowHandler::parse("INFO slow handler: module main"), None);
        assert_eq!(SlowHandler::parse("creatures: 3"), None);
    }

    #[test]
    fn sums_per_handler_most_time_first() {
        let lines: Vec<String> = [
            LINE.to_string(),
            LINE.replace("23.4 ms", "40.0 ms")
                .replace("23.500000", "25.000000"),
            LINE.replace("module main", "module voxelworld")
                .replace("event 'main:tick_step'", "call 'edit_voxels'")
                .replace("23.4 ms", "9.0 ms"),
            "an unrelated line".to_string(),
        ]
        .into();
        let sums = SlowHandlers::from_lines(&lines);
        let main = &sums.handlers[&(
            "main".to_string(),
            "event".to_string(),
            "main:tick_step".to_string(),
        )];
        assert_eq!(main.count, 2);
        assert!((main.total_ms - 63.4).abs() < 1e-9);
        assert_eq!(main.max_run_ms, 40.0);
        let table = sums.table(5, seconds_of_day("2026-12-05T17:35:20Z x"));
        assert_eq!(table.len(), 3, "{table:?}");
        assert!(table[1].starts_with("main "), "{table:?}");
        assert!(
            table[1].ends_with(" 5.0"),
            "worst 5 s after the epoch: {table:?}"
        );
        assert!(table[2].starts_with("voxelworld "), "{table:?}");
    }
}
