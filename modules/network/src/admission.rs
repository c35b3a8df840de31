//! Admission: whether a new connection may become a peer, before anything
//! is spent on it. Pure bookkeeping, driven by `lib.rs`'s accept path.
//!
//! Owns: the count of connections per address group and each group's
//! connect-rate token bucket (forgotten once the group has no connection
//! and a full bucket), counted by `buildat_network_api::address`'s
//! `limit_group` (an IPv6 /64 is one address, as for `main` and `web`),
//! the cap on peers derived from the descriptor limit.
//! Does not own: sockets, refusing them (`peer::refuse`) or the peer table.

use std::collections::HashMap;
use std::net::IpAddr;

use buildat_network_api::address::{limit_group, show_limit_group};
use std::time::Instant;

/// Descriptors kept free of peers for everything else the process opens
/// (module images, the world database, log files, refusals in progress).
const RESERVED_DESCRIPTORS: u64 = 128;

/// How many peers fit under a descriptor soft limit of `soft`: an eighth of
/// it (at least [`RESERVED_DESCRIPTORS`]) stays free, so "server full" is
/// said long before `accept` fails with `EMFILE`.
pub(crate) fn peers_for_descriptors(soft: u64) -> usize {
    let reserve = (soft / 8).max(RESERVED_DESCRIPTORS);
    usize::try_from(soft.saturating_sub(reserve)).unwrap_or(usize::MAX)
}

/// The process's soft limit of open descriptors, if it can be read.
pub(crate) fn descriptor_limit() -> Option<u64> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit only writes `limit`.
    (unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0).then_some(limit.rlim_cur)
}

/// Per-address limits (0 turns one off).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// Connections open at once from one address.
    pub per_ip: usize,
    /// New connections a second from one address...
    pub connects_per_second: f64,
    /// ...with bursts of this many.
    pub connect_burst: f64,
}

struct Address {
    connections: usize,
    tokens: f64,
    refilled: Instant,
}

/// Connections and connect rates per address.
pub(crate) struct Admission {
    limits: Limits,
    addresses: HashMap<IpAddr, Address>,
}

impl Admission {
    pub fn new(limits: Limits) -> Self {
        Self {
            limits,
            addresses: HashMap::new(),
        }
    }

    /// Counts a connection from `ip` if its group's limits allow one now;
    /// why not otherwise (said to the client, so it names no other peer).
    pub fn admit(&mut self, ip: IpAddr, now: Instant) -> Result<(), String> {
        let limits = self.limits;
        let from = show_limit_group(ip);
        let ip = limit_group(ip);
        let address = self.addresses.entry(ip).or_insert(Address {
            connections: 0,
            tokens: limits.connect_burst,
            refilled: now,
        });
        if limits.connects_per_second > 0.0 {
            let elapsed = now
                .saturating_duration_since(address.refilled)
                .as_secs_f64();
            address.tokens =
                (address.tokens + elapsed * limits.connects_per_second).min(limits.connect_burst);
            address.refilled = now;
            if address.tokens < 1.0 {
                return Err(format!(
                    "too many connections from {from} (at most {} a second)",
                    limits.connects_per_second
                ));
            }
        }
        if limits.per_ip > 0 && address.connections >= limits.per_ip {
            return Err(format!(
                "too many connections from {from} (at most {} at once)",
                limits.per_ip
            ));
        }
        if limits.connects_per_second > 0.0 {
            address.tokens -= 1.0;
        }
        address.connections += 1;
        Ok(())
    }

    /// Counts a connection kept across a reload (no rate applies).
    pub fn readmit(&mut self, ip: IpAddr, now: Instant) {
        let burst = self.limits.connect_burst;
        self.addresses
            .entry(limit_group(ip))
            .or_insert(Address {
                connections: 0,
                tokens: burst,
                refilled: now,
            })
            .connections += 1;
    }

    /// A connection from `ip` ended.
    pub fn release(&mut self, ip: IpAddr) {
        if let Some(address) = self.addresses.get_mut(&limit_group(ip)) {
            address.connections = address.connections.saturating_sub(1);
        }
        self.forget_idle(Instant::now());
    }

    /// Forgets addresses with no connection whose bucket is full again, so
    /// the table does not grow with every address ever seen.
    fn forget_idle(&mut self, now: Instant) {
        if self.addresses.len() < 1024 {
            return;
        }
        let limits = self.limits;
        self.addresses.retain(|_, address| {
            let elapsed = now
                .saturating_duration_since(address.refilled)
                .as_secs_f64();
            address.connections > 0
                || (limits.connects_per_second > 0.0
                    && address.tokens + elapsed * limits.connects_per_second < limits.connect_burst)
        });
    }

    /// Addresses tracked.
    #[cfg(test)]
    fn tracked(&self) -> usize {
        self.addresses.len()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([10, 0, 0, last])
    }

    #[test]
    fn an_address_gets_its_share_and_no_more() {
        let mut admission = Admission::new(Limits {
            per_ip: 3,
            connects_per_second: 0.0,
            connect_burst: 0.0,
        });
        let now = Instant::now();
        for _ in 0..3 {
            admission.admit(ip(1), now).expect("within the limit");
        }
        let refused = admission.admit(ip(1), now).expect_err("a fourth");
        assert!(refused.contains("at most 3 at once"), "{refused}");
        admission
            .admit(ip(2), now)
            .expect("another address is not held up");
        admission.release(ip(1));
        admission.admit(ip(1), now).expect("a slot came free");
    }

    #[test]
    fn connects_are_rate_limited_per_address() {
        let mut admission = Admission::new(Limits {
            per_ip: 0,
            connects_per_second: 2.0,
            connect_burst: 4.0,
        });
        let now = Instant::now();
        for _ in 0..4 {
            admission.admit(ip(1), now).expect("the burst");
            admission.release(ip(1));
        }
        let refused = admission.admit(ip(1), now).expect_err("past the burst");
        assert!(refused.contains("a second"), "{refused}");
        admission.admit(ip(2), now).expect("others connect");
        admission
            .admit(ip(1), now + Duration::from_millis(500))
            .expect("refilled at 2 a second");
    }

    #[test]
    fn an_ipv6_64_is_one_address_and_mapped_ipv4_is_ipv4() {
        let mut admission = Admission::new(Limits {
            per_ip: 2,
            connects_per_second: 0.0,
            connect_burst: 0.0,
        });
        let now = Instant::now();
        let v6 = |a: &str| a.parse::<IpAddr>().unwrap();
        admission.admit(v6("2001:db8:1:2::1"), now).expect("first");
        admission
            .admit(v6("2001:db8:1:2:ffff::9"), now)
            .expect("second, same /64");
        let refused = admission
            .admit(v6("2001:db8:1:2::3"), now)
            .expect_err("a third from that /64");
        assert!(refused.contains("from 2001:db8:1:2::/64"), "{refused}");
        admission
            .admit(v6("2001:db8:1:3::1"), now)
            .expect("another /64 is not held up");
        admission.release(v6("2001:db8:1:2::1"));
        admission
            .admit(v6("2001:db8:1:2::7"), now)
            .expect("a slot of the /64 came free");
        // `::ffff:10.0.0.1` is 10.0.0.1.
        admission.admit(ip(1), now).expect("first");
        admission.admit(v6("::ffff:10.0.0.1"), now).expect("second");
        admission
            .admit(ip(1), now)
            .expect_err("a third, counted with the mapped ones");
        assert_eq!(limit_group(v6("::ffff:10.0.0.1")), ip(1));
    }

    #[test]
    fn idle_addresses_are_forgotten() {
        let mut admission = Admission::new(Limits {
            per_ip: 10,
            connects_per_second: 0.0,
            connect_burst: 0.0,
        });
        let now = Instant::now();
        for n in 0..2000u32 {
            let address = IpAddr::from(n.to_be_bytes());
            admission.admit(address, now).expect("admitted");
            admission.release(address);
        }
        assert!(admission.tracked() <= 1024, "{}", admission.tracked());
    }

    #[test]
    fn peers_leave_room_for_other_descriptors() {
        assert_eq!(peers_for_descriptors(1024), 896);
        assert_eq!(peers_for_descriptors(100), 0);
        assert_eq!(peers_for_descriptors(1 << 20), (1 << 20) - (1 << 17));
    }
}
