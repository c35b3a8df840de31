//! Peer addresses as bans and limits see them, pure.
//!
//! Owns: an address's one form (an IPv4-mapped IPv6 address,
//! `::ffff:1.2.3.4`, is `1.2.3.4`: one address for bans and limits),
//! taken where an address enters the game ([`peer_ip`]), and the group
//! the per-address limits count together as the game keeps it, as text
//! ([`limit_group_of`], over `buildat_network_api::address`'s grouping:
//! an IPv4 address alone, an IPv6 address's /64). Does not own: the bans (`accounts.rs`) nor the limits
//! (`accounts::Attempts`, `login.rs`); the network module and the web page
//! group with the same function.

use std::net::{IpAddr, SocketAddr};

use buildat_network_api::address::show_limit_group;

/// The IP address of a peer's `HOST:PORT` (or of a bare address), in its
/// one form; `None` when it is neither.
pub fn peer_ip(address: &str) -> Option<IpAddr> {
    let ip = address
        .parse::<SocketAddr>()
        .map(|a| a.ip())
        .or_else(|_| address.parse::<IpAddr>())
        .ok()?;
    Some(ip.to_canonical())
}

/// The limit group of an address as the game keeps it (a peer's IP); the
/// text itself if it is no address.
pub fn limit_group_of(address: &str) -> String {
    peer_ip(address).map_or_else(|| address.to_string(), show_limit_group)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mapped_addresses_are_their_ipv4_form() {
        assert_eq!(
            peer_ip("[::ffff:10.0.0.1]:4000"),
            Some("10.0.0.1".parse().unwrap())
        );
        assert_eq!(
            peer_ip("::ffff:127.0.0.1").map(|ip| ip.is_loopback()),
            Some(true)
        );
        assert_eq!(peer_ip("10.0.0.1:1"), peer_ip("::ffff:10.0.0.1"));
        assert_eq!(peer_ip("[fd00::2]:1"), Some("fd00::2".parse().unwrap()));
        assert_eq!(peer_ip("alice"), None);
    }

    #[test]
    fn ipv6_is_grouped_by_its_64_and_ipv4_by_address() {
        let group = limit_group_of;
        assert_eq!(group("2001:db8:1:2::1"), "2001:db8:1:2::/64");
        assert_eq!(
            group("2001:db8:1:2:ffff:ffff:ffff:ffff"),
            "2001:db8:1:2::/64"
        );
        assert_ne!(group("2001:db8:1:3::1"), group("2001:db8:1:2::1"));
        assert_eq!(group("10.0.0.1"), "10.0.0.1");
        assert_ne!(group("10.0.0.2"), group("10.0.0.1"));
        assert_eq!(group("::ffff:10.0.0.1"), "10.0.0.1");
        assert_eq!(limit_group_of("2001:db8::5"), "2001:db8::/64");
    }
}
