//! Bincode encoding of every payload that crosses a module boundary or the
//! wire: one configuration for the whole project (`bincode::config::standard()`,
//! little-endian, varint integers) and a decode size limit so hostile bytes
//! cannot allocate without bound.
//!
//! Owns: `encode`, `decode`, [`DecodeError`]. Does not own: the packet framing
//! (that is in `buildat-format`).

/// Payloads larger than this are refused when decoding.
pub const DECODE_LIMIT: usize = 256 * 1024 * 1024;

/// A payload did not decode as the expected type.
#[derive(Debug, thiserror::Error)]
#[error("payload does not decode: {0}")]
pub struct DecodeError(String);

fn config() -> impl bincode::config::Config {
    bincode::config::standard().with_limit::<DECODE_LIMIT>()
}

/// Encodes `value` with the project's bincode configuration.
pub fn encode<T: serde::Serialize + ?Sized>(value: &T) -> Vec<u8> {
    // Encoding into a Vec only fails for types serde cannot represent, which
    // none of ours are; an empty payload then surfaces as a decode error.
    bincode::serde::encode_to_vec(value, config()).unwrap_or_default()
}

/// Decodes a whole payload; trailing bytes are an error.
pub fn decode<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, DecodeError> {
    let (value, read) = bincode::serde::decode_from_slice(bytes, config())
        .map_err(|e| DecodeError(e.to_string()))?;
    if read != bytes.len() {
        return Err(DecodeError(format!(
            "{} trailing bytes after the value",
            bytes.len() - read
        )));
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_rejects_garbage() {
        let value = (42u64, "name".to_string(), vec![1u8, 2, 3]);
        let bytes = encode(&value);
        let back: (u64, String, Vec<u8>) = decode(&bytes).expect("round trip");
        assert_eq!(back, value);
        assert!(decode::<(u64, String)>(&bytes[..bytes.len() - 1]).is_err());
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(decode::<(u64, String, Vec<u8>)>(&longer).is_err());
        // A huge length prefix must fail, not allocate.
        assert!(
            decode::<Vec<u8>>(&[0xfd, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f]).is_err()
        );
    }
}
