//! `buildat-daytime-protocol`: the `daytime` module's one packet,
//! `daytime:time` (docs/protocol.md, "Time of day"), shared by the module
//! (through `buildat-daytime-api`, which re-exports it), the client and
//! tests. Depends only on `buildat-format` and thiserror: the client links
//! no module ABI.
//!
//! Owns: [`TimePacket`]'s wire layout (raw little-endian `f32 time, f32
//! day_seconds`, read by Lua with `string.unpack("<ff")`) and its bounds.
//! Does not own: the clock (the `daytime` module), what a time means for
//! the sky (the client).

use buildat_format::payload::{Packet, PayloadError};

/// The bytes of a `daytime:time` payload.
pub const TIME_PACKET_BYTES: usize = 8;

/// Longest day a packet may tell, in real seconds (a year): a bound that
/// keeps a client's arithmetic finite.
pub const MAX_DAY_SECONDS: f32 = 366.0 * 86400.0;

/// `daytime:time` (server to client): the time of day now, and how many
/// real seconds a whole day lasts, so the client advances the clock
/// itself between two packets. Sent when a player joins, when the time is
/// set, and every 10 seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TimePacket {
    /// 0..1: 0 midnight, 0.25 six in the morning, 0.5 noon.
    pub time: f32,
    /// Real seconds per day; 0: the clock stands still.
    pub day_seconds: f32,
}

impl TimePacket {
    /// Checks the bounds: `time` in `0..1`, `day_seconds` in
    /// `0..=MAX_DAY_SECONDS`, both finite.
    pub fn check(&self) -> Result<(), PayloadError> {
        if !self.time.is_finite() || !(0.0..1.0).contains(&self.time) {
            return Err(PayloadError::Decode(format!(
                "daytime:time: a time of day is 0 to 1 (not included), not {}",
                self.time
            )));
        }
        if !self.day_seconds.is_finite() || !(0.0..=MAX_DAY_SECONDS).contains(&self.day_seconds) {
            return Err(PayloadError::Decode(format!(
                "daytime:time: a day lasts 0 to {MAX_DAY_SECONDS} seconds, not {}",
                self.day_seconds
            )));
        }
        Ok(())
    }
}

impl Packet for TimePacket {
    const NAME: &'static str = "daytime:time";

    fn encode(&self) -> Result<Vec<u8>, PayloadError> {
        self.check()?;
        let mut out = Vec::with_capacity(TIME_PACKET_BYTES);
        out.extend(self.time.to_le_bytes());
        out.extend(self.day_seconds.to_le_bytes());
        Ok(out)
    }

    fn decode(bytes: &[u8]) -> Result<Self, PayloadError> {
        let bytes: &[u8; TIME_PACKET_BYTES] = bytes.try_into().map_err(|_| {
            PayloadError::Decode(format!(
                "daytime:time is {TIME_PACKET_BYTES} bytes, not {}",
                bytes.len()
            ))
        })?;
        let [a, b, c, d, e, f, g, h] = *bytes;
        let packet = Self {
            time: f32::from_le_bytes([a, b, c, d]),
            day_seconds: f32::from_le_bytes([e, f, g, h]),
        };
        packet.check()?;
        Ok(packet)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn a_time_round_trips_in_eight_little_endian_bytes() {
        let packet = TimePacket {
            time: 0.5,
            day_seconds: 1200.0,
        };
        let bytes = packet.encode().expect("encodes");
        assert_eq!(bytes.len(), TIME_PACKET_BYTES);
        assert_eq!(&bytes[..4], &0.5f32.to_le_bytes());
        assert_eq!(TimePacket::decode(&bytes).expect("decodes"), packet);
    }

    #[test]
    fn wrong_lengths_and_values_out_of_bounds_are_refused() {
        assert!(TimePacket::decode(&[]).is_err());
        assert!(TimePacket::decode(&[0; 7]).is_err());
        assert!(TimePacket::decode(&[0; 9]).is_err());
        let raw = |time: f32, day: f32| {
            let mut bytes = time.to_le_bytes().to_vec();
            bytes.extend(day.to_le_bytes());
            bytes
        };
        assert!(TimePacket::decode(&raw(0.0, 0.0)).is_ok());
        assert!(TimePacket::decode(&raw(1.0, 60.0)).is_err());
        assert!(TimePacket::decode(&raw(-0.1, 60.0)).is_err());
        assert!(TimePacket::decode(&raw(f32::NAN, 60.0)).is_err());
        assert!(TimePacket::decode(&raw(0.5, -1.0)).is_err());
        assert!(TimePacket::decode(&raw(0.5, f32::INFINITY)).is_err());
        assert!(
            TimePacket {
                time: 2.0,
                day_seconds: 1.0
            }
            .encode()
            .is_err()
        );
    }

    proptest! {
        #[test]
        fn any_bytes_decode_without_panicking(data in proptest::collection::vec(any::<u8>(), 0..20)) {
            if let Ok(packet) = TimePacket::decode(&data) {
                prop_assert!(packet.check().is_ok());
                prop_assert_eq!(packet.encode().expect("re-encodes"), data);
            }
        }

        #[test]
        fn valid_times_round_trip(time in 0.0f32..1.0, day_seconds in 0.0f32..MAX_DAY_SECONDS) {
            let packet = TimePacket { time, day_seconds };
            let decoded = TimePacket::decode(&packet.encode().expect("encodes")).expect("decodes");
            prop_assert_eq!(decoded, packet);
        }
    }
}
