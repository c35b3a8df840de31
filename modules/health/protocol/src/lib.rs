//! `buildat-health-protocol`: the `health` module's packets
//! (docs/protocol.md, "health"), shared by the module (through
//! `buildat-health-api`, which re-exports them), the client and tests.
//! Depends only on `buildat-format`: the client links no module ABI.
//!
//! Owns: the layouts of `health:state`, `health:hurt`, `health:died`
//! (server to client) and `health:respawn` (client to server): raw
//! little-endian, read by Lua with `string.unpack` (`<I2I2I2I2`, `<I2s2`,
//! `<s2`). Does not own: when they are sent or what they change
//! (`modules/health`).

use buildat_format::payload::{Packet, PayloadError};
use buildat_format::reader::Reader;

/// Longest cause text on the wire, in bytes (a longer one is cut).
pub const MAX_CAUSE: usize = 64;

fn decode_error(what: &str, error: impl std::fmt::Display) -> PayloadError {
    PayloadError::Decode(format!("{what}: {error}"))
}

fn finish(reader: &Reader<'_>, what: &str) -> Result<(), PayloadError> {
    if reader.is_at_end() {
        Ok(())
    } else {
        Err(PayloadError::Decode(format!(
            "{what}: {} trailing bytes",
            reader.remaining()
        )))
    }
}

/// Writes `text` cut to [`MAX_CAUSE`] bytes (at a char boundary) as `s2`.
fn put_cause(out: &mut Vec<u8>, text: &str) {
    let mut end = text.len().min(MAX_CAUSE);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let cut = text.get(..end).unwrap_or("");
    // At most MAX_CAUSE bytes: fits a u16.
    out.extend((cut.len() as u16).to_le_bytes());
    out.extend(cut.as_bytes());
}

fn take_cause(reader: &mut Reader<'_>, what: &str) -> Result<String, PayloadError> {
    let len = usize::from(reader.u16_le().map_err(|e| decode_error(what, e))?);
    if len > MAX_CAUSE {
        return Err(PayloadError::Decode(format!(
            "{what}: a cause of {len} bytes, more than {MAX_CAUSE}"
        )));
    }
    let bytes = reader.take(len).map_err(|e| decode_error(what, e))?;
    String::from_utf8(bytes.to_vec())
        .map_err(|_| PayloadError::Decode(format!("{what}: the cause is not UTF-8")))
}

/// S→C `health:state`: the player's health, on join and on every change.
/// Layout: `u16` hp, `u16` max_hp, `u16` breath, `u16` max_breath (Lua
/// `string.unpack("<I2I2I2I2", data)`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HealthState {
    pub hp: u16,
    pub max_hp: u16,
    pub breath: u16,
    pub max_breath: u16,
}

impl Packet for HealthState {
    const NAME: &'static str = "health:state";

    fn encode(&self) -> Result<Vec<u8>, PayloadError> {
        let mut out = Vec::with_capacity(8);
        for value in [self.hp, self.max_hp, self.breath, self.max_breath] {
            out.extend(value.to_le_bytes());
        }
        Ok(out)
    }

    fn decode(bytes: &[u8]) -> Result<Self, PayloadError> {
        let what = Self::NAME;
        let mut reader = Reader::new(bytes);
        let mut next = || reader.u16_le().map_err(|e| decode_error(what, e));
        let state = Self {
            hp: next()?,
            max_hp: next()?,
            breath: next()?,
            max_breath: next()?,
        };
        finish(&reader, what)?;
        Ok(state)
    }
}

/// S→C `health:hurt`: the player lost `amount` hp, for `cause` (`fall`,
/// `drown`, `void`, `lava`, `command` or a module's text). Layout: `u16`
/// amount, `s2` cause of at most [`MAX_CAUSE`] bytes (Lua `"<I2s2"`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Hurt {
    pub amount: u16,
    pub cause: String,
}

impl Packet for Hurt {
    const NAME: &'static str = "health:hurt";

    fn encode(&self) -> Result<Vec<u8>, PayloadError> {
        let mut out = Vec::with_capacity(4 + self.cause.len());
        out.extend(self.amount.to_le_bytes());
        put_cause(&mut out, &self.cause);
        Ok(out)
    }

    fn decode(bytes: &[u8]) -> Result<Self, PayloadError> {
        let what = Self::NAME;
        let mut reader = Reader::new(bytes);
        let amount = reader.u16_le().map_err(|e| decode_error(what, e))?;
        let cause = take_cause(&mut reader, what)?;
        finish(&reader, what)?;
        Ok(Self { amount, cause })
    }
}

/// S→C `health:died`: the player died; it sees the world until it sends
/// `health:respawn`. Layout: `s2` cause (Lua `"<s2"`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct YouDied {
    pub cause: String,
}

impl Packet for YouDied {
    const NAME: &'static str = "health:died";

    fn encode(&self) -> Result<Vec<u8>, PayloadError> {
        let mut out = Vec::with_capacity(2 + self.cause.len());
        put_cause(&mut out, &self.cause);
        Ok(out)
    }

    fn decode(bytes: &[u8]) -> Result<Self, PayloadError> {
        let what = Self::NAME;
        let mut reader = Reader::new(bytes);
        let cause = take_cause(&mut reader, what)?;
        finish(&reader, what)?;
        Ok(Self { cause })
    }
}

/// C→S `health:respawn`: a dead player asks to come back (ignored while
/// alive). Empty payload.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RespawnRequest {}

impl Packet for RespawnRequest {
    const NAME: &'static str = "health:respawn";

    fn encode(&self) -> Result<Vec<u8>, PayloadError> {
        Ok(Vec::new())
    }

    fn decode(bytes: &[u8]) -> Result<Self, PayloadError> {
        if bytes.is_empty() {
            Ok(Self {})
        } else {
            Err(PayloadError::Decode(format!(
                "{}: {} bytes in an empty packet",
                Self::NAME,
                bytes.len()
            )))
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn packets_round_trip() {
        let state = HealthState {
            hp: 17,
            max_hp: 20,
            breath: 3,
            max_breath: 10,
        };
        let bytes = state.encode().unwrap();
        assert_eq!(bytes, [17, 0, 20, 0, 3, 0, 10, 0]);
        assert_eq!(HealthState::decode(&bytes).unwrap(), state);
        let hurt = Hurt {
            amount: 4,
            cause: "fall".into(),
        };
        let bytes = hurt.encode().unwrap();
        assert_eq!(bytes, [4, 0, 4, 0, b'f', b'a', b'l', b'l']);
        assert_eq!(Hurt::decode(&bytes).unwrap(), hurt);
        let died = YouDied {
            cause: "void".into(),
        };
        assert_eq!(YouDied::decode(&died.encode().unwrap()).unwrap(), died);
        assert_eq!(
            RespawnRequest::decode(&RespawnRequest {}.encode().unwrap()).unwrap(),
            RespawnRequest {}
        );
    }

    #[test]
    fn a_long_cause_is_cut_at_a_char_boundary() {
        let hurt = Hurt {
            amount: 1,
            cause: "é".repeat(40),
        };
        let back = Hurt::decode(&hurt.encode().unwrap()).unwrap();
        assert_eq!(back.cause, "é".repeat(32));
    }

    #[test]
    fn malformed_packets_are_refused() {
        assert!(HealthState::decode(&[1, 0, 20, 0, 3, 0, 10]).is_err());
        assert!(HealthState::decode(&[1, 0, 20, 0, 3, 0, 10, 0, 0]).is_err());
        assert!(Hurt::decode(&[1, 0, 5, 0, b'a']).is_err(), "short text");
        assert!(Hurt::decode(&[1, 0, 200, 0]).is_err(), "past MAX_CAUSE");
        assert!(Hurt::decode(&[1, 0, 1, 0, 0xff]).is_err(), "not UTF-8");
        assert!(YouDied::decode(&[]).is_err());
        assert!(YouDied::decode(&[0, 0, 9]).is_err(), "trailing");
        assert!(RespawnRequest::decode(&[0]).is_err());
    }

    proptest! {
        #[test]
        fn states_and_hurts_round_trip(hp: u16, max: u16, breath: u16, amount: u16,
                                       cause in "[a-z:_]{0,64}") {
            let state = HealthState { hp, max_hp: max, breath, max_breath: max };
            prop_assert_eq!(HealthState::decode(&state.encode().unwrap()).unwrap(), state);
            let hurt = Hurt { amount, cause: cause.clone() };
            prop_assert_eq!(Hurt::decode(&hurt.encode().unwrap()).unwrap(), hurt);
            let died = YouDied { cause };
            prop_assert_eq!(YouDied::decode(&died.encode().unwrap()).unwrap(), died);
        }

        #[test]
        fn any_bytes_decode_or_fail_without_panic(bytes in proptest::collection::vec(any::<u8>(), 0..80)) {
            let _ = HealthState::decode(&bytes);
            let _ = Hurt::decode(&bytes);
            let _ = YouDied::decode(&bytes);
            let _ = RespawnRequest::decode(&bytes);
        }
    }
}
