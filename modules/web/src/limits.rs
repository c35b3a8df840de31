//! What one client may cost the web page: connections and requests.
//!
//! Owns (counting an address by `buildat_network_api::address`'s
//! `limit_group`, an IPv6 /64 as one, as the game port does): the
//! connection cap ([`Connections`]: `web.max_connections` in all, of which
//! clients off loopback together hold at most three quarters, so strangers
//! cannot shut the operator's own browser out, and
//! [`PER_ADDRESS_CONNECTIONS`] for one address off loopback; a connection
//! over any is closed at once), and the request rate of an address off
//! loopback ([`RequestRate`]: a bucket of [`RATE_BURST`] requests refilled
//! at [`RATE_PER_SECOND`]; over it, 429). Loopback clients (the operator's
//! machine, the harness's load tests) count in the cap in all only. Does
//! not own: the map's share of the world's time (`map.rs`), who may see
//! what (`access.rs`).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard};

use buildat_network_api::address::limit_group;
use std::time::{Duration, Instant};

/// Connections one address off loopback may hold (a browser opens 6).
pub const PER_ADDRESS_CONNECTIONS: usize = 16;
/// Requests an address off loopback may make at once (a map page opening
/// on a large screen asks for a few hundred tiles), and how fast the
/// allowance comes back.
pub const RATE_BURST: f64 = 600.0;
pub const RATE_PER_SECOND: f64 = 60.0;
/// Addresses the rate remembers before forgetting those with a full
/// allowance.
const RATE_TABLE: usize = 4096;

#[derive(Default)]
struct Open {
    total: usize,
    /// Of `total`, those off loopback.
    remote: usize,
    by_address: HashMap<IpAddr, usize>,
}

/// The connections open now.
pub struct Connections {
    max: usize,
    open: Mutex<Open>,
}

/// One admitted connection; counted until dropped.
pub struct Admitted {
    connections: Arc<Connections>,
    key: Option<IpAddr>,
}

impl Connections {
    pub fn new(max: usize) -> Arc<Self> {
        Arc::new(Self {
            max,
            open: Mutex::new(Open::default()),
        })
    }

    fn open(&self) -> MutexGuard<'_, Open> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Counts a connection from `ip`, or `None` if it is one too many.
    pub fn admit(self: &Arc<Self>, ip: IpAddr) -> Option<Admitted> {
        let loopback = crate::access::is_loopback(ip);
        let key = (!loopback).then(|| limit_group(ip));
        let mut open = self.open();
        if open.total >= self.max {
            return None;
        }
        if let Some(key) = key {
            if open.remote >= self.max - self.max / 4 {
                return None;
            }
            let count = open.by_address.entry(key).or_default();
            if *count >= PER_ADDRESS_CONNECTIONS {
                return None;
            }
            *count += 1;
            open.remote += 1;
        }
        open.total += 1;
        Some(Admitted {
            connections: self.clone(),
            key,
        })
    }

    /// Connections open now.
    pub fn count(&self) -> usize {
        self.open().total
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let mut open = self.connections.open();
        open.total = open.total.saturating_sub(1);
        if self.key.is_some() {
            open.remote = open.remote.saturating_sub(1);
        }
        if let Some(key) = self.key
            && let Some(count) = open.by_address.get_mut(&key)
        {
            *count -= 1;
            if *count == 0 {
                open.by_address.remove(&key);
            }
        }
    }
}

/// The request rate of each address off loopback.
pub struct RequestRate {
    burst: f64,
    per_second: f64,
    buckets: Mutex<HashMap<IpAddr, (f64, Instant)>>,
}

impl Default for RequestRate {
    fn default() -> Self {
        Self::new(RATE_BURST, RATE_PER_SECOND)
    }
}

impl RequestRate {
    pub fn new(burst: f64, per_second: f64) -> Self {
        Self {
            burst,
            per_second,
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// Takes one request of `ip`'s allowance at `now`; when none is left,
    /// how long until one is.
    pub fn check(&self, ip: IpAddr, now: Instant) -> Result<(), Duration> {
        let key = limit_group(ip);
        let mut buckets = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        if buckets.len() >= RATE_TABLE && !buckets.contains_key(&key) {
            let (burst, per_second) = (self.burst, self.per_second);
            buckets.retain(|_, (left, at)| {
                *left + now.saturating_duration_since(*at).as_secs_f64() * per_second < burst
            });
        }
        let (left, at) = buckets.entry(key).or_insert((self.burst, now));
        let topped = (*left + now.saturating_duration_since(*at).as_secs_f64() * self.per_second)
            .min(self.burst);
        *at = now;
        if topped >= 1.0 {
            *left = topped - 1.0;
            Ok(())
        } else {
            *left = topped;
            Err(Duration::from_secs_f64((1.0 - topped) / self.per_second))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().expect("an address")
    }

    #[test]
    fn ipv6_counts_by_its_64_and_mapped_ipv4_as_ipv4() {
        assert_eq!(
            limit_group(ip("2001:db8:1:2:aaaa::1")),
            limit_group(ip("2001:db8:1:2:bbbb::9"))
        );
        assert_ne!(
            limit_group(ip("2001:db8:1:2::1")),
            limit_group(ip("2001:db8:1:3::1"))
        );
        assert_eq!(limit_group(ip("::ffff:192.0.2.1")), ip("192.0.2.1"));
    }

    #[test]
    fn strangers_leave_a_quarter_of_the_cap_to_loopback() {
        let connections = Connections::new(8);
        let strangers: Vec<Admitted> = (0..6)
            .map(|i| {
                connections
                    .admit(ip(&format!("192.0.2.{i}")))
                    .expect("three quarters")
            })
            .collect();
        assert!(
            connections.admit(ip("198.51.100.1")).is_none(),
            "a seventh stranger"
        );
        let _local: Vec<Admitted> = (0..2)
            .map(|_| {
                connections
                    .admit(ip("127.0.0.1"))
                    .expect("loopback's quarter")
            })
            .collect();
        assert!(
            connections.admit(ip("127.0.0.1")).is_none(),
            "the cap in all"
        );
        drop(strangers);
        assert!(connections.admit(ip("198.51.100.1")).is_some());
    }

    #[test]
    fn the_cap_closes_one_too_many_and_a_closed_one_makes_room() {
        let connections = Connections::new(4);
        let a = connections.admit(ip("127.0.0.1")).expect("1");
        let _b = connections.admit(ip("127.0.0.1")).expect("2");
        let _c = connections.admit(ip("192.0.2.1")).expect("3");
        let _d = connections.admit(ip("127.0.0.1")).expect("4");
        assert!(connections.admit(ip("127.0.0.1")).is_none(), "over the cap");
        assert!(connections.admit(ip("192.0.2.9")).is_none(), "over the cap");
        drop(a);
        assert_eq!(connections.count(), 3);
        assert!(connections.admit(ip("192.0.2.9")).is_some(), "room again");
    }

    #[test]
    fn one_address_off_loopback_holds_only_its_share() {
        let connections = Connections::new(1000);
        let held: Vec<Admitted> = (0..PER_ADDRESS_CONNECTIONS)
            .map(|i| {
                connections
                    .admit(ip(&format!("2001:db8::{i}")))
                    .expect("within the share")
            })
            .collect();
        assert!(
            connections.admit(ip("2001:db8::ffff")).is_none(),
            "the same /64"
        );
        assert!(
            connections.admit(ip("2001:db8:0:1::1")).is_some(),
            "another /64"
        );
        assert!(
            connections.admit(ip("::1")).is_some(),
            "loopback: the cap in all only"
        );
        drop(held);
        assert!(connections.admit(ip("2001:db8::ffff")).is_some());
    }

    #[test]
    fn the_rate_allows_a_burst_then_its_rate() {
        let rate = RequestRate::new(5.0, 10.0);
        let start = Instant::now();
        let client = ip("192.0.2.1");
        for _ in 0..5 {
            assert_eq!(rate.check(client, start), Ok(()));
        }
        let wait = rate.check(client, start).expect_err("the burst is spent");
        assert!(wait <= Duration::from_millis(100), "{wait:?}");
        assert_eq!(
            rate.check(ip("192.0.2.2"), start),
            Ok(()),
            "another address"
        );
        // A tenth of a second later: one more.
        let later = start + Duration::from_millis(100);
        assert_eq!(rate.check(client, later), Ok(()));
        assert!(rate.check(client, later).is_err());
        // Over a second: 10 a second, not more.
        let mut allowed = 0;
        for i in 1..=100 {
            let now = later + Duration::from_millis(10 * i);
            allowed += usize::from(rate.check(client, now).is_ok());
        }
        assert!((9..=11).contains(&allowed), "{allowed}");
    }
}
