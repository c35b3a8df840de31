//! Ping round-trip histograms, in the buckets that `scripts/bots/loadbot.lua`
//! logs (`hist=B:COUNT,...`), merged across bots and windows.
//!
//! Owns: the bucket scheme (mirrors the Lua side: change both together) and
//! percentiles over it. Does not own: parsing the rest of a report line
//! (`fleet`).

use std::collections::BTreeMap;

/// Counts per bucket. Bucket B covers, in milliseconds: B < 100:
/// [B/10, (B+1)/10); 100 <= B < 1090: [B-90, B-89); B >= 1090:
/// [(B-1080)*100, (B-1079)*100).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Histogram {
    counts: BTreeMap<u32, u64>,
}

/// The bucket of a round trip of `ms` milliseconds.
pub fn bucket_of(ms: f64) -> u32 {
    if ms < 10.0 {
        (ms.max(0.0) * 10.0) as u32
    } else if ms < 1000.0 {
        90 + ms as u32
    } else {
        1080 + (ms / 100.0) as u32
    }
}

/// The upper edge of bucket `b`, in milliseconds.
pub fn bucket_upper_ms(b: u32) -> f64 {
    if b < 100 {
        f64::from(b + 1) / 10.0
    } else if b < 1090 {
        f64::from(b - 89)
    } else {
        f64::from(b - 1079) * 100.0
    }
}

impl Histogram {
    pub fn add(&mut self, bucket: u32, count: u64) {
        *self.counts.entry(bucket).or_default() += count;
    }

    pub fn record_ms(&mut self, ms: f64) {
        self.add(bucket_of(ms), 1);
    }

    pub fn merge(&mut self, other: &Histogram) {
        for (&b, &c) in &other.counts {
            self.add(b, c);
        }
    }

    pub fn total(&self) -> u64 {
        self.counts.values().sum()
    }

    /// `B:COUNT,B:COUNT,...`, as [`Histogram::parse`] reads it.
    pub fn to_field(&self) -> String {
        let pairs: Vec<String> = self
            .counts
            .iter()
            .map(|(b, c)| format!("{b}:{c}"))
            .collect();
        pairs.join(",")
    }

    /// Parses `B:COUNT,B:COUNT,...` (empty is an empty histogram).
    pub fn parse(text: &str) -> Option<Self> {
        let mut histogram = Self::default();
        for pair in text.split(',').filter(|p| !p.is_empty()) {
            let (b, c) = pair.split_once(':')?;
            histogram.add(b.parse().ok()?, c.parse().ok()?);
        }
        Some(histogram)
    }

    /// The nearest-rank percentile `p` (0 to 100) as its bucket's upper
    /// edge in milliseconds (so never below the true value); None when empty.
    pub fn percentile_ms(&self, p: f64) -> Option<f64> {
        let total = self.total();
        if total == 0 {
            return None;
        }
        let rank = ((p / 100.0 * total as f64).ceil() as u64).clamp(1, total);
        let mut seen = 0;
        for (&b, &c) in &self.counts {
            seen += c;
            if seen >= rank {
                return Some(bucket_upper_ms(b));
            }
        }
        None
    }

    pub fn max_ms(&self) -> Option<f64> {
        self.counts.keys().next_back().map(|&b| bucket_upper_ms(b))
    }
}

/// `12.3` for present figures, `-` for absent ones.
pub fn show_ms(value: Option<f64>) -> String {
    value.map_or_else(|| "-".to_string(), |v| format!("{v:.1}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_cover_their_values() {
        for ms in [0.0, 0.05, 0.1, 9.99, 10.0, 10.5, 999.9, 1000.0, 12_345.0] {
            let b = bucket_of(ms);
            assert!(ms < bucket_upper_ms(b), "{ms} in bucket {b}");
            if b > 0 {
                assert!(ms >= bucket_upper_ms(b - 1), "{ms} above bucket {}", b - 1);
            }
        }
    }

    #[test]
    fn percentiles_are_nearest_rank_upper_edges() {
        let mut h = Histogram::default();
        for _ in 0..99 {
            h.record_ms(1.04);
        }
        h.record_ms(60.0);
        assert_eq!(h.total(), 100);
        assert_eq!(h.percentile_ms(50.0), Some(1.1));
        assert_eq!(h.percentile_ms(99.0), Some(1.1));
        assert_eq!(h.percentile_ms(100.0), Some(61.0));
        assert_eq!(h.max_ms(), Some(61.0));
        assert_eq!(Histogram::default().percentile_ms(50.0), None);
    }

    #[test]
    fn parses_and_merges_report_fields() {
        let mut h = Histogram::parse("3:2,150:1").expect("parses");
        h.merge(&Histogram::parse("3:1").expect("parses"));
        assert_eq!(h.total(), 4);
        assert_eq!(Histogram::parse(""), Some(Histogram::default()));
        assert_eq!(Histogram::parse("3:x"), None);
        assert_eq!(Histogram::parse("3"), None);
    }
}
