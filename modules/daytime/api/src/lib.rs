//! `buildat-daytime-api`: the `daytime` module's public API: its calls
//! ([`GetTime`], [`SetTime`]), its event ([`NightChanged`]), its privilege
//! ([`PRIVILEGE`]) and the clock arithmetic every reader must agree on
//! ([`is_night`], [`clock_text`], [`parse_clock`], [`advance`]).
//! Re-exports the `daytime:time` packet from `buildat-daytime-protocol`,
//! which the client links without this crate.
//!
//! Owns: what a time of day means (0..1 from midnight), when night is.
//! Does not own: the clock itself and its persistence (the `daytime`
//! module), the sky (the client).

pub use buildat_daytime_protocol::*;

use buildat_interface::Event;
use serde::{Deserialize, Serialize};

/// The daytime module's name.
pub const MODULE: &str = "daytime";

/// The privilege `/time HH:MM` needs (defined by the module through main's
/// `DefinePrivilege`).
pub const PRIVILEGE: &str = "settime";

/// Dawn: night ends at 6:00.
pub const DAWN: f64 = 0.25;
/// Dusk: night starts at 19:00.
pub const DUSK: f64 = 19.0 / 24.0;

/// Call `get_time`: the time of day now.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GetTime {}

/// The clock as [`GetTime`] answers.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TimeOfDay {
    /// 0..1: 0 midnight, 0.25 six in the morning, 0.5 noon.
    pub time: f64,
    /// Days since the world began (the first is day 0).
    pub day: u64,
    /// Real seconds per day; 0: the clock stands still.
    pub day_seconds: f64,
    /// Whether it is night ([`is_night`] of `time`).
    pub night: bool,
}

/// Call `set_time`: sets the time of day (0..1; the day count does not
/// change), tells every client at once. An error when `time` is not in
/// `0..1`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SetTime {
    pub time: f64,
}

buildat_interface::calls! {
    module MODULE;
    GetTime = "get_time" -> TimeOfDay;
    SetTime = "set_time" -> ();
}

/// `daytime:night_changed`: night fell (`night` true, at dusk) or the day
/// broke (false, at dawn), by the clock or by a set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct NightChanged {
    pub night: bool,
}
impl Event for NightChanged {
    const NAME: &'static str = "daytime:night_changed";
}

/// Whether `time` (0..1) is night: before [`DAWN`] or from [`DUSK`].
pub fn is_night(time: f64) -> bool {
    !(DAWN..DUSK).contains(&time)
}

/// `time` (0..1) as "HH:MM" on a 24-hour clock (minutes rounded down).
pub fn clock_text(time: f64) -> String {
    let minutes = (time.rem_euclid(1.0) * 1440.0).floor() as u32 % 1440;
    format!("{:02}:{:02}", minutes / 60, minutes % 60)
}

/// "HH:MM" (or "H:MM", or "HH") on a 24-hour clock as a time of day
/// (0..1), `None` when it is not one.
pub fn parse_clock(text: &str) -> Option<f64> {
    let (hours, minutes) = match text.split_once(':') {
        Some((h, m)) if m.len() == 2 => (h, m),
        Some(_) => return None,
        None => (text, "0"),
    };
    let digits = |s: &str| !s.is_empty() && s.len() <= 2 && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(hours) || !digits(minutes) {
        return None;
    }
    let (hours, minutes): (u32, u32) = (hours.parse().ok()?, minutes.parse().ok()?);
    if hours > 23 || minutes > 59 {
        return None;
    }
    Some(f64::from(hours * 60 + minutes) / 1440.0)
}

/// The clock `seconds` of real time later, with a day of `day_seconds`
/// (0 or less: stopped): the new time (0..1) and how many days passed.
pub fn advance(time: f64, day_seconds: f64, seconds: f64) -> (f64, u64) {
    if day_seconds <= 0.0 || !day_seconds.is_finite() || !seconds.is_finite() || seconds <= 0.0 {
        return (time, 0);
    }
    let total = time + seconds / day_seconds;
    let days = total.floor();
    let mut time = total - days;
    if time >= 1.0 {
        time = 0.0;
    }
    (time, days.max(0.0) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn night_is_before_six_and_from_nineteen() {
        assert!(is_night(0.0));
        assert!(is_night(0.2499));
        assert!(!is_night(0.25));
        assert!(!is_night(0.5));
        assert!(!is_night(parse_clock("18:59").expect("a clock")));
        assert!(is_night(parse_clock("19:00").expect("a clock")));
        assert!(is_night(parse_clock("23:00").expect("a clock")));
    }

    #[test]
    fn clocks_read_and_print_on_24_hours() {
        assert_eq!(clock_text(0.0), "00:00");
        assert_eq!(clock_text(0.5), "12:00");
        assert_eq!(clock_text(0.75), "18:00");
        assert_eq!(clock_text(0.999_999), "23:59");
        assert_eq!(parse_clock("6:30"), Some(390.0 / 1440.0));
        assert_eq!(parse_clock("23:00"), Some(23.0 / 24.0));
        assert_eq!(parse_clock("12"), Some(0.5));
        for text in ["00:00", "06:30", "12:00", "23:59"] {
            assert_eq!(clock_text(parse_clock(text).expect("a clock")), text);
        }
        for bad in [
            "", "24:00", "12:60", "12:5", "-1:00", "a:bc", "1:2:3", "123", " 1:00",
        ] {
            assert_eq!(parse_clock(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn the_clock_advances_and_counts_days() {
        assert_eq!(advance(0.5, 1200.0, 300.0), (0.75, 0));
        let (time, days) = advance(0.75, 1200.0, 600.0);
        assert!((time - 0.25).abs() < 1e-9);
        assert_eq!(days, 1);
        let (time, days) = advance(0.0, 100.0, 1050.0);
        assert!((time - 0.5).abs() < 1e-9);
        assert_eq!(days, 10);
        assert_eq!(advance(0.3, 0.0, 1000.0), (0.3, 0), "stopped");
        assert_eq!(advance(0.3, 1200.0, -5.0), (0.3, 0), "no going back");
        assert_eq!(advance(0.3, 1200.0, f64::NAN), (0.3, 0));
    }
}
