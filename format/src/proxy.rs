//! The PROXY protocol, version 2 (HAProxy's `send-proxy-v2`, nginx's
//! `proxy_protocol on`): the binary header a forwarder sends first on each
//! connection, naming the address of the client it forwards. Only the
//! header is read here; what comes after it is the client's own bytes.
//!
//! ```text
//! 12  signature   \r\n\r\n\0\r\nQUIT\n
//! 1   version (high nibble, 2) and command (low: 0 LOCAL, 1 PROXY)
//! 1   family (high: 0 UNSPEC, 1 INET, 2 INET6, 3 UNIX), transport (low: 1 STREAM)
//! 2   length of the rest, big-endian
//! ... INET: source, destination (4 bytes each), source port, destination port
//!     INET6: the same with 16-byte addresses; then TLVs (ignored)
//! ```
//!
//! Owns: parsing a header from the first bytes of a connection, bounds
//! checked, never panicking. Does not own: reading the socket, or whether
//! a header is trusted at all (the network module's `network.proxy_protocol`).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use thiserror::Error;

/// The 12 bytes every v2 header starts with.
pub const SIGNATURE: [u8; 12] = *b"\r\n\r\n\0\r\nQUIT\n";
/// The fixed part: signature, version and command, family, length.
pub const FIXED_LEN: usize = 16;
/// The longest header accepted (the fixed part and 2 KiB of addresses and
/// TLVs; forwarders send far less).
pub const MAX_HEADER_LEN: usize = FIXED_LEN + 2048;

/// A whole header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProxyHeader {
    /// The forwarded client's address: `None` for a `LOCAL` command (the
    /// forwarder's own connection, a health check) or a `PROXY` one whose
    /// family carries no IP address (UNSPEC, UNIX): the connection's own
    /// address stands.
    pub source: Option<SocketAddr>,
    /// Bytes of the connection the header takes.
    pub len: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ProxyError {
    #[error("no PROXY protocol v2 header (the connection does not start with its signature)")]
    NoSignature,
    #[error("PROXY protocol version {0}, not 2")]
    Version(u8),
    #[error("PROXY protocol command {0} (0 LOCAL and 1 PROXY are defined)")]
    Command(u8),
    #[error("PROXY protocol family {family} with transport {transport} (a stream is expected)")]
    Family { family: u8, transport: u8 },
    #[error("a PROXY protocol header of {0} bytes (at most {MAX_HEADER_LEN})")]
    TooLong(usize),
    #[error("a PROXY protocol header too short for its {family} addresses ({len} bytes)")]
    TooShort { family: &'static str, len: usize },
}

/// Parses the header at the start of `bytes`: `Ok(None)` while more bytes
/// are needed (what is there so far is a header's start), an error as soon
/// as `bytes` cannot start one.
pub fn parse(bytes: &[u8]) -> Result<Option<ProxyHeader>, ProxyError> {
    let signature_seen = bytes.len().min(SIGNATURE.len());
    if bytes.get(..signature_seen) != SIGNATURE.get(..signature_seen) {
        return Err(ProxyError::NoSignature);
    }
    let Some(fixed) = bytes.get(..FIXED_LEN) else {
        return Ok(None);
    };
    let (version_command, family_transport) = match fixed.get(12..14) {
        Some(&[a, b]) => (a, b),
        _ => return Ok(None),
    };
    let rest = match fixed.get(14..16) {
        Some(&[hi, lo]) => usize::from(u16::from_be_bytes([hi, lo])),
        _ => return Ok(None),
    };
    let (version, command) = (version_command >> 4, version_command & 0x0f);
    if version != 2 {
        return Err(ProxyError::Version(version));
    }
    if command > 1 {
        return Err(ProxyError::Command(command));
    }
    let len = FIXED_LEN + rest;
    if len > MAX_HEADER_LEN {
        return Err(ProxyError::TooLong(len));
    }
    let (family, transport) = (family_transport >> 4, family_transport & 0x0f);
    let ip_family = matches!(family, 1 | 2);
    if command == 1 && ip_family && transport != 1 {
        return Err(ProxyError::Family { family, transport });
    }
    if family > 3 || transport > 2 {
        return Err(ProxyError::Family { family, transport });
    }
    let Some(addresses) = bytes.get(FIXED_LEN..len) else {
        return Ok(None);
    };
    // LOCAL: the receiver uses the connection's own address (and ignores
    // whatever the header carries).
    if command == 0 || !ip_family {
        return Ok(Some(ProxyHeader { source: None, len }));
    }
    let source = if family == 1 {
        match (addresses.get(0..4), addresses.get(8..10)) {
            (Some(&[a, b, c, d]), Some(&[p0, p1])) => SocketAddr::new(
                IpAddr::V4(Ipv4Addr::new(a, b, c, d)),
                u16::from_be_bytes([p0, p1]),
            ),
            _ => {
                return Err(ProxyError::TooShort {
                    family: "IPv4",
                    len,
                });
            }
        }
    } else {
        let ip = addresses
            .get(0..16)
            .and_then(|b| <[u8; 16]>::try_from(b).ok());
        match (ip, addresses.get(32..34)) {
            (Some(ip), Some(&[p0, p1])) => {
                SocketAddr::new(IpAddr::V6(Ipv6Addr::from(ip)), u16::from_be_bytes([p0, p1]))
            }
            _ => {
                return Err(ProxyError::TooShort {
                    family: "IPv6",
                    len,
                });
            }
        }
    };
    Ok(Some(ProxyHeader {
        source: Some(source),
        len,
    }))
}

/// A v2 header for `source` → `destination` (`None`: a `LOCAL` one), as a
/// forwarder sends it; for tests and tools.
pub fn encode(source_and_destination: Option<(SocketAddr, SocketAddr)>) -> Vec<u8> {
    let mut out = SIGNATURE.to_vec();
    match source_and_destination {
        None => out.extend_from_slice(&[0x20, 0x00, 0, 0]),
        Some((SocketAddr::V4(s), SocketAddr::V4(d))) => {
            out.extend_from_slice(&[0x21, 0x11, 0, 12]);
            out.extend_from_slice(&s.ip().octets());
            out.extend_from_slice(&d.ip().octets());
            out.extend_from_slice(&s.port().to_be_bytes());
            out.extend_from_slice(&d.port().to_be_bytes());
        }
        Some((s, d)) => {
            let v6 = |a: SocketAddr| match a.ip() {
                IpAddr::V4(ip) => ip.to_ipv6_mapped(),
                IpAddr::V6(ip) => ip,
            };
            out.extend_from_slice(&[0x21, 0x21, 0, 36]);
            out.extend_from_slice(&v6(s).octets());
            out.extend_from_slice(&v6(d).octets());
            out.extend_from_slice(&s.port().to_be_bytes());
            out.extend_from_slice(&d.port().to_be_bytes());
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn addr(text: &str) -> SocketAddr {
        text.parse().expect("an address")
    }

    #[test]
    fn an_ipv4_header_gives_its_source_and_length() {
        let mut bytes = encode(Some((addr("203.0.113.7:5555"), addr("10.0.0.1:20000"))));
        assert_eq!(bytes.len(), 28);
        bytes.extend_from_slice(b"\0\0after");
        assert_eq!(
            parse(&bytes),
            Ok(Some(ProxyHeader {
                source: Some(addr("203.0.113.7:5555")),
                len: 28
            }))
        );
    }

    #[test]
    fn an_ipv6_header_and_tlvs() {
        let mut bytes = encode(Some((addr("[2001:db8::7]:1"), addr("[::1]:2"))));
        // A TLV (type 4, NOOP, 3 bytes) after the addresses.
        bytes[15] += 6;
        bytes.extend_from_slice(&[4, 0, 3, 9, 9, 9]);
        assert_eq!(
            parse(&bytes),
            Ok(Some(ProxyHeader {
                source: Some(addr("[2001:db8::7]:1")),
                len: 16 + 36 + 6
            }))
        );
    }

    #[test]
    fn local_and_addressless_headers_keep_the_connections_address() {
        assert_eq!(
            parse(&encode(None)),
            Ok(Some(ProxyHeader {
                source: None,
                len: 16
            }))
        );
        // PROXY with AF_UNSPEC.
        let mut bytes = SIGNATURE.to_vec();
        bytes.extend_from_slice(&[0x21, 0x00, 0, 0]);
        assert_eq!(parse(&bytes).unwrap().unwrap().source, None);
        // LOCAL carrying addresses: ignored.
        let mut bytes = encode(Some((addr("1.2.3.4:1"), addr("5.6.7.8:2"))));
        bytes[12] = 0x20;
        assert_eq!(parse(&bytes).unwrap().unwrap().source, None);
    }

    #[test]
    fn every_cut_of_a_header_asks_for_more() {
        let bytes = encode(Some((addr("[2001:db8::7]:1"), addr("[::1]:2"))));
        for end in 0..bytes.len() {
            assert_eq!(parse(&bytes[..end]), Ok(None), "cut at {end}");
        }
    }

    #[test]
    fn anything_else_is_refused_at_once() {
        // Plaintext Buildat (a definition frame) and a TLS ClientHello.
        assert_eq!(parse(&[0, 0, 16, 0]), Err(ProxyError::NoSignature));
        assert_eq!(parse(&[22, 3, 1]), Err(ProxyError::NoSignature));
        // PROXY protocol v1 (text).
        assert_eq!(
            parse(b"PROXY TCP4 1.2.3.4 5.6.7.8 1 2\r\n"),
            Err(ProxyError::NoSignature)
        );
        let good = encode(Some((addr("1.2.3.4:1"), addr("5.6.7.8:2"))));
        let with = |at: usize, value: u8| {
            let mut bytes = good.clone();
            bytes[at] = value;
            parse(&bytes)
        };
        assert_eq!(with(12, 0x11), Err(ProxyError::Version(1)));
        assert_eq!(with(12, 0x22), Err(ProxyError::Command(2)));
        assert_eq!(
            with(13, 0x12),
            Err(ProxyError::Family {
                family: 1,
                transport: 2
            })
        );
        assert_eq!(
            with(13, 0x51),
            Err(ProxyError::Family {
                family: 5,
                transport: 1
            })
        );
        // Lengths: too long, and too short for the family's addresses.
        assert_eq!(with(14, 0xff), Err(ProxyError::TooLong(16 + 0xff0c)));
        let mut short = good[..16].to_vec();
        short[15] = 4;
        short.extend_from_slice(&[1, 2, 3, 4]);
        assert!(matches!(parse(&short), Err(ProxyError::TooShort { .. })));
    }

    #[test]
    fn no_input_panics() {
        // Every header with one byte changed to every value, cut anywhere.
        let good = encode(Some((addr("[2001:db8::7]:1"), addr("[::1]:2"))));
        for at in 0..good.len() {
            for value in 0..=255u8 {
                let mut bytes = good.clone();
                bytes[at] = value;
                for end in [at + 1, bytes.len()] {
                    let _ = parse(&bytes[..end]);
                }
            }
        }
    }
}
