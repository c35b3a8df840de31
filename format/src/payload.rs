//! Payload encoding and typed packets: the one bincode configuration of the
//! project (`bincode::config::standard()`: little-endian, varint integers,
//! byte fields as length + bytes) with a decode limit, and the [`Packet`]
//! trait every packet definition implements.
//!
//! Owns: [`encode`], [`decode`], [`decode_limited`], [`decode_borrowed`], [`PayloadError`], the
//! [`Packet`] trait and the [`bincode_packet!`](crate::bincode_packet) macro.
//! Does not own: framing ([`crate::packet`]) or any packet's definition: each
//! lives in the crate that owns it (a module's API crate), so that server
//! modules, the client, tests, benches and the harness share one definition
//! and nothing writes a packet's bytes by hand.

use serde::Serialize;
use serde::de::DeserializeOwned;
use thiserror::Error;

/// Payloads that cross a module boundary may be at most this long when decoded.
pub const DECODE_LIMIT: usize = 256 * 1024 * 1024;
/// A packet's payload may be at most this long (as its frame).
pub const MAX_PACKET_PAYLOAD: usize = 16 << 20;

/// A payload did not encode, or did not decode as the expected type.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum PayloadError {
    #[error("payload does not encode: {0}")]
    Encode(String),
    #[error("malformed payload: {0}")]
    Decode(String),
    #[error("malformed payload: {0} trailing bytes after the value")]
    TrailingBytes(usize),
}

/// Encodes `value` with the project's bincode configuration.
pub fn encode<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, PayloadError> {
    bincode::serde::encode_to_vec(value, bincode::config::standard())
        .map_err(|e| PayloadError::Encode(e.to_string()))
}

/// Decodes a whole payload of at most [`DECODE_LIMIT`] bytes; trailing bytes
/// are an error.
pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, PayloadError> {
    decode_limited::<T, DECODE_LIMIT>(bytes)
}

/// Decodes a whole payload, refusing any length claim past `LIMIT` bytes
/// before it allocates; trailing bytes are an error.
pub fn decode_limited<T: DeserializeOwned, const LIMIT: usize>(
    bytes: &[u8],
) -> Result<T, PayloadError> {
    let config = bincode::config::standard().with_limit::<LIMIT>();
    let (value, used) = bincode::serde::decode_from_slice(bytes, config)
        .map_err(|e| PayloadError::Decode(e.to_string()))?;
    if used != bytes.len() {
        return Err(PayloadError::TrailingBytes(bytes.len() - used));
    }
    Ok(value)
}

/// Decodes a whole payload into a value that borrows from it (`&str`,
/// `&[u8]` fields: no copy of their bytes), with the limit of
/// [`decode_limited`]; trailing bytes are an error.
pub fn decode_borrowed<'a, T: serde::Deserialize<'a>>(bytes: &'a [u8]) -> Result<T, PayloadError> {
    let config = bincode::config::standard().with_limit::<MAX_PACKET_PAYLOAD>();
    let (value, used) = bincode::serde::borrow_decode_from_slice(bytes, config)
        .map_err(|e| PayloadError::Decode(e.to_string()))?;
    if used != bytes.len() {
        return Err(PayloadError::TrailingBytes(bytes.len() - used));
    }
    Ok(value)
}

/// One packet's definition: its name on the wire and how its payload is
/// written and read. Implement it with [`bincode_packet!`](crate::bincode_packet)
/// for a serde type, or by hand for a payload of another layout.
pub trait Packet: Sized {
    /// The packet's name, e.g. `core:request_file`.
    const NAME: &'static str;

    /// The payload's bytes.
    fn encode(&self) -> Result<Vec<u8>, PayloadError>;

    /// Reads a whole payload; never panics, whatever the bytes.
    fn decode(bytes: &[u8]) -> Result<Self, PayloadError>;
}

/// Implements [`Packet`] for serde types as bincode payloads of at most
/// [`MAX_PACKET_PAYLOAD`] bytes: `bincode_packet!(RequestFile = "core:request_file");`.
#[macro_export]
macro_rules! bincode_packet {
    ($($ty:ty = $name:literal;)+) => {
        $(
            impl $crate::payload::Packet for $ty {
                const NAME: &'static str = $name;

                fn encode(&self) -> ::std::result::Result<::std::vec::Vec<u8>, $crate::payload::PayloadError> {
                    $crate::payload::encode(self)
                }

                fn decode(bytes: &[u8]) -> ::std::result::Result<Self, $crate::payload::PayloadError> {
                    $crate::payload::decode_limited::<Self, { $crate::payload::MAX_PACKET_PAYLOAD }>(bytes)
                }
            }
        )+
    };
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Example {
        name: String,
        #[serde(with = "serde_bytes")]
        data: Vec<u8>,
    }
    crate::bincode_packet!(Example = "test:example";);

    #[test]
    fn round_trip_and_rejects_garbage() {
        let value = (42u64, "name".to_string(), vec![1u8, 2, 3]);
        let bytes = encode(&value).unwrap();
        let back: (u64, String, Vec<u8>) = decode(&bytes).unwrap();
        assert_eq!(back, value);
        assert!(decode::<(u64, String)>(&bytes[..bytes.len() - 1]).is_err());
        let mut longer = bytes.clone();
        longer.push(0);
        assert_eq!(
            decode::<(u64, String, Vec<u8>)>(&longer),
            Err(PayloadError::TrailingBytes(1))
        );
        // A huge length prefix fails instead of allocating.
        assert!(
            decode::<Vec<u8>>(&[0xfd, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f]).is_err()
        );
    }

    #[test]
    fn packets_round_trip_under_their_limit() {
        let packet = Example {
            name: "a".into(),
            data: vec![1, 2, 3],
        };
        let bytes = Packet::encode(&packet).unwrap();
        assert_eq!(<Example as Packet>::decode(&bytes).unwrap(), packet);
        assert_eq!(Example::NAME, "test:example");
        // A length claim past the packet limit is refused before allocating.
        let mut claim = vec![1, b'a', 0xfc];
        claim.extend_from_slice(&(MAX_PACKET_PAYLOAD as u32 + 1).to_le_bytes());
        assert!(<Example as Packet>::decode(&claim).is_err());
    }
}
