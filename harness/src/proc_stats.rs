//! CPU time and resident memory of a process, read from `/proc` (Linux).
//!
//! Owns: sampling one pid and turning two samples into a CPU share, and
//! finding the port a process listens on. Does not own: which processes
//! are watched (the tests).

use std::time::Instant;

/// One look at a process.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    pub at: Instant,
    /// User + system CPU seconds since the process started.
    pub cpu_seconds: f64,
    pub rss_kib: u64,
}

fn clock_ticks_per_second() -> f64 {
    static TICKS: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    *TICKS.get_or_init(|| {
        std::process::Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(100.0)
    })
}

/// Samples `pid`; None once it is gone (or off Linux).
pub fn sample(pid: u32) -> Option<Sample> {
    let at = Instant::now();
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name, which is in parentheses and may hold spaces.
    let after_name = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the whole line: 12 and 13 here.
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let rss_kib = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some(Sample {
        at,
        cpu_seconds: (utime + stime) / clock_ticks_per_second(),
        rss_kib,
    })
}

/// Percent of one core used between two samples.
pub fn cpu_percent(earlier: &Sample, later: &Sample) -> f64 {
    let wall = later.at.duration_since(earlier.at).as_secs_f64();
    if wall <= 0.0 {
        return 0.0;
    }
    (later.cpu_seconds - earlier.cpu_seconds) / wall * 100.0
}

/// The port of a TCP socket `pid` listens on (IPv4), from its open file
/// descriptors and `/proc/net/tcp`; None if it has none (yet).
pub fn listening_port(pid: u32) -> Option<u16> {
    let inodes: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .ok()?
        .flatten()
        .filter_map(|e| std::fs::read_link(e.path()).ok())
        .filter_map(|l| {
            l.to_string_lossy()
                .strip_prefix("socket:[")
                .map(|s| s.trim_end_matches(']').to_string())
        })
        .collect();
    let tcp = std::fs::read_to_string("/proc/net/tcp").ok()?;
    tcp.lines().skip(1).find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        // local_address rem_address st ... inode; state 0A = LISTEN
        let listening =
            fields.len() > 9 && fields[3] == "0A" && inodes.iter().any(|i| i == fields[9]);
        listening
            .then(|| u16::from_str_radix(fields[1].rsplit(':').next()?, 16).ok())
            .flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_this_process() {
        let first = sample(std::process::id()).expect("this process is sampled");
        assert!(first.rss_kib > 0);
        let mut x = 0u64;
        for i in 0..20_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        let second = sample(std::process::id()).expect("sampled again");
        assert!(second.cpu_seconds >= first.cpu_seconds);
        assert!(cpu_percent(&first, &second) >= 0.0);
    }
}
