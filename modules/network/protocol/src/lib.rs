//! `buildat-network-protocol`: what the game port's two ends agree on below
//! the modules' packets, depending only on `buildat-format` (and SHA-256),
//! so the client links no module ABI; `buildat-network-api` re-exports it.
//!
//! Owns: peer ids, the `core:disconnect` packet ([`DisconnectPacket`]), the
//! loopback and per-address limit rules ([`address`]) and the TLS layer's
//! constants and key fingerprints ([`tls`]). Does not own: framing
//! (`buildat-format`), sockets (the `network` module) or the network
//! module's calls and events (`buildat-network-api`).

use buildat_format::payload::{Packet, PayloadError};

/// Peer ids are never reused within a server run.
pub type PeerId = u64;

/// `core:disconnect`, server → client before closing on purpose (server
/// full, kicked). Its payload is the reason as raw UTF-8, not bincode, so a
/// client that knows nothing else can still show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DisconnectPacket {
    pub reason: String,
}

impl Packet for DisconnectPacket {
    const NAME: &'static str = "core:disconnect";

    fn encode(&self) -> Result<Vec<u8>, PayloadError> {
        Ok(self.reason.as_bytes().to_vec())
    }

    fn decode(bytes: &[u8]) -> Result<Self, PayloadError> {
        Ok(Self {
            reason: String::from_utf8_lossy(bytes).into_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_disconnect_is_its_reason_as_raw_utf8() {
        let packet = DisconnectPacket {
            reason: "server full".into(),
        };
        assert_eq!(packet.encode().unwrap(), b"server full");
        assert_eq!(DisconnectPacket::decode(b"server full").unwrap(), packet);
        // Not UTF-8: still a reason to show, never an error.
        assert_eq!(
            DisconnectPacket::decode(&[b'a', 0xff]).unwrap().reason,
            "a\u{fffd}"
        );
    }
}

/// Peer addresses as limits, bans and the loopback rule see them, defined
/// once for the network module, the game, the web page and the client.
pub mod address {
    use std::net::{IpAddr, Ipv6Addr};

    /// Whether `ip` is this machine's own (an IPv4-mapped loopback address,
    /// `::ffff:127.0.0.1`, too): served plaintext on a TLS port, a guest
    /// under `main.guests=auto`, never pinned by the client.
    pub fn is_loopback(ip: IpAddr) -> bool {
        ip.to_canonical().is_loopback()
    }

    /// What per-address limits count `ip` under: an IPv4 address (also as
    /// `::ffff:a.b.c.d`) alone, an IPv6 address's /64 (one subscriber
    /// usually holds a whole /64).
    pub fn limit_group(ip: IpAddr) -> IpAddr {
        match ip.to_canonical() {
            IpAddr::V4(v4) => IpAddr::V4(v4),
            IpAddr::V6(v6) => IpAddr::V6(Ipv6Addr::from(u128::from(v6) & !(u128::MAX >> 64))),
        }
    }

    /// [`limit_group`] as text: `10.0.0.1`, `2001:db8:1:2::/64`.
    pub fn show_limit_group(ip: IpAddr) -> String {
        match limit_group(ip) {
            IpAddr::V4(v4) => v4.to_string(),
            IpAddr::V6(v6) => format!("{v6}/64"),
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        fn ip(text: &str) -> IpAddr {
            text.parse().expect("an address")
        }

        #[test]
        fn ipv6_is_grouped_by_its_64_and_ipv4_by_address() {
            assert_eq!(show_limit_group(ip("2001:db8:1:2::1")), "2001:db8:1:2::/64");
            assert_eq!(
                limit_group(ip("2001:db8:1:2:ffff:ffff:ffff:ffff")),
                limit_group(ip("2001:db8:1:2::1"))
            );
            assert_ne!(
                limit_group(ip("2001:db8:1:3::1")),
                limit_group(ip("2001:db8:1:2::1"))
            );
            assert_eq!(show_limit_group(ip("10.0.0.1")), "10.0.0.1");
            assert_ne!(limit_group(ip("10.0.0.2")), limit_group(ip("10.0.0.1")));
            assert_eq!(limit_group(ip("::ffff:10.0.0.1")), ip("10.0.0.1"));
        }

        #[test]
        fn loopback_includes_mapped_addresses() {
            for text in [
                "127.0.0.1",
                "127.9.9.9",
                "127.3.2.1",
                "::1",
                "::ffff:127.0.0.1",
            ] {
                assert!(is_loopback(ip(text)), "{text}");
            }
            for text in [
                "203.0.113.7",
                "::ffff:203.0.113.7",
                "0.0.0.0",
                "192.0.2.2",
                "10.0.0.1",
                "::ffff:10.0.0.1",
                "::",
            ] {
                assert!(!is_loopback(ip(text)), "{text}");
            }
        }
    }
}

/// The TLS layer of the game port (docs/protocol.md §1.1): what the server
/// and the client agree on, defined once.
pub mod tls {
    use sha2::{Digest, Sha256};

    /// The ALPN protocol name both sides offer.
    pub const ALPN: &[u8] = b"buildat/1";

    /// What a plaintext client on a TLS port is told (a plaintext
    /// `core:disconnect`), unless it is on loopback (then it is served
    /// plaintext). `buildat-client` never gets it but with
    /// `--insecure-plaintext`: any other address speaks TLS from the start.
    pub const SPEAKS_TLS: &str = "this server speaks TLS on its game port: connect with \
         tls://HOST:PORT (buildat-client speaks TLS to any address but loopback unless told \
         --insecure-plaintext)";

    /// What a TLS client on a plaintext port is told (a plaintext
    /// `core:disconnect`). A client never drops to plaintext on it by
    /// itself: that would let anyone on the path turn TLS off.
    pub const SPEAKS_PLAINTEXT: &str = "this server speaks plaintext on its game port";

    /// The name a client pins a server's key by: `SHA256:` and the
    /// lowercase hex SHA-256 of the DER SubjectPublicKeyInfo.
    pub fn spki_fingerprint(spki: &[u8]) -> String {
        let digest = Sha256::digest(spki);
        let mut text = String::with_capacity(7 + 64);
        text.push_str("SHA256:");
        for byte in digest {
            text.push_str(&format!("{byte:02x}"));
        }
        text
    }

    #[cfg(test)]
    mod tests {
        #[test]
        fn a_fingerprint_is_the_hex_sha256_of_the_key() {
            assert_eq!(
                super::spki_fingerprint(b"abc"),
                "SHA256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
            );
        }
    }
}
