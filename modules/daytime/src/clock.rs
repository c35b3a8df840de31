//! The clock: the time of day and the day count, advanced by real seconds,
//! and how it is stored in the world's values (space `daytime`, key
//! `clock`, a version byte then bincode of [`Clock`]).
//!
//! Owns: advancing (with the night/day flips it crosses), the stored
//! layout. Does not own: when it advances or is saved (`lib.rs`), what
//! night means (`buildat-daytime-api`).

use buildat_daytime_api::{TimeOfDay, advance, is_night};
use buildat_interface::ModuleError;
use serde::{Deserialize, Serialize};

/// The world values' space of the clock.
pub const VALUE_SPACE: &str = "daytime";
/// Its key.
pub const VALUE_KEY: &str = "clock";
/// The layout's version, the value's first byte.
const VERSION: u8 = 1;

/// The time of day (0..1) and the days passed.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Clock {
    pub time: f64,
    pub day: u64,
}

impl Clock {
    /// A new world's clock at `time`.
    pub fn new(time: f64) -> Self {
        Self { time, day: 0 }
    }

    /// `seconds` later with a day of `day_seconds` (0: stopped); whether
    /// night and day changed (`Some(night)` when it did, its new state).
    pub fn advance(&mut self, day_seconds: f64, seconds: f64) -> Option<bool> {
        let was = is_night(self.time);
        let (time, days) = advance(self.time, day_seconds, seconds);
        self.time = time;
        self.day = self.day.saturating_add(days);
        let now = is_night(self.time);
        (now != was).then_some(now)
    }

    /// Sets the time of day (the day count stays); `Some(night)` when night
    /// and day changed.
    pub fn set(&mut self, time: f64) -> Option<bool> {
        let was = is_night(self.time);
        self.time = time;
        let now = is_night(time);
        (now != was).then_some(now)
    }

    /// As [`buildat_daytime_api::GetTime`] answers.
    pub fn of_day(&self, day_seconds: f64) -> TimeOfDay {
        TimeOfDay {
            time: self.time,
            day: self.day,
            day_seconds,
            night: is_night(self.time),
        }
    }

    /// The stored bytes.
    pub fn encode(&self) -> Result<Vec<u8>, ModuleError> {
        let mut bytes = vec![VERSION];
        bytes.extend(buildat_interface::encode(self)?);
        Ok(bytes)
    }

    /// Reads stored bytes; an error naming what is wrong.
    pub fn decode(bytes: &[u8]) -> Result<Self, ModuleError> {
        let clock: Self = match bytes.split_first() {
            Some((&VERSION, rest)) => buildat_interface::decode(rest)
                .map_err(|e| ModuleError::msg(format!("the stored clock is corrupt: {e}")))?,
            Some((version, _)) => {
                return Err(ModuleError::msg(format!(
                    "the stored clock has layout {version}, this version reads {VERSION}"
                )));
            }
            None => return Err(ModuleError::msg("the stored clock is empty")),
        };
        if !clock.time.is_finite() || !(0.0..1.0).contains(&clock.time) {
            return Err(ModuleError::msg(format!(
                "the stored clock's time {} is not in 0..1",
                clock.time
            )));
        }
        Ok(clock)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advancing_counts_days_and_reports_dusk_and_dawn() {
        let mut clock = Clock::new(0.5);
        assert_eq!(clock.advance(1200.0, 60.0), None);
        assert!((clock.time - 0.55).abs() < 1e-9);
        // 0.55 + 0.25 = 0.8: past 19:00.
        assert_eq!(clock.advance(1200.0, 300.0), Some(true));
        assert_eq!(clock.day, 0);
        // 0.8 + 0.3 = 1.1: past midnight, still night.
        assert_eq!(clock.advance(1200.0, 360.0), None);
        assert_eq!(clock.day, 1);
        // 0.1 + 0.2 = 0.3: morning.
        assert_eq!(clock.advance(1200.0, 240.0), Some(false));
        assert_eq!(clock.advance(0.0, 10_000.0), None, "stopped");
        assert!((clock.time - 0.3).abs() < 1e-9);
    }

    #[test]
    fn setting_keeps_the_day_and_reports_a_flip() {
        let mut clock = Clock { time: 0.5, day: 7 };
        assert_eq!(clock.set(23.0 / 24.0), Some(true));
        assert_eq!(clock.set(0.1), None);
        assert_eq!(clock.set(0.5), Some(false));
        assert_eq!(clock.day, 7);
        let told = clock.of_day(1200.0);
        assert_eq!((told.day, told.night, told.day_seconds), (7, false, 1200.0));
    }

    #[test]
    fn a_stored_clock_round_trips_and_bad_bytes_are_refused() {
        let clock = Clock { time: 0.75, day: 3 };
        let bytes = clock.encode().expect("encodes");
        assert_eq!(Clock::decode(&bytes).expect("decodes"), clock);
        assert!(Clock::decode(&[]).is_err());
        let mut other = bytes.clone();
        other[0] = 9;
        assert!(
            Clock::decode(&other)
                .unwrap_err()
                .to_string()
                .contains("layout 9")
        );
        assert!(Clock::decode(&bytes[..3]).is_err());
        let out_of_day = Clock { time: 1.5, day: 0 }.encode().expect("encodes");
        assert!(Clock::decode(&out_of_day).is_err());
    }
}
