//! `buildat-test-probe-api`: the probe fixture's call and event payloads,
//! shared with the tests and benchmarks that drive it (bincode is
//! structural, so both sides must use these very types). A crate of its
//! own, like a module's `api/`, so a test binary can use it beside other
//! fixtures' definitions without linking the fixture library itself.

use serde::{Deserialize, Serialize};

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct Stats {
    pub count: u64,
    pub in_order: bool,
    pub next_expected: u64,
    pub duplicates_or_gaps: u64,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct EmitRequest {
    pub name: String,
    pub count: u64,
    pub payload_size: u32,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct ProxyCall {
    pub module: String,
    pub function: String,
    pub payload: Vec<u8>,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct CallMany {
    pub module: String,
    pub function: String,
    pub count: u64,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct CallManyResult {
    pub errors: u64,
    /// Round trip of each call in nanoseconds.
    pub latencies_ns: Vec<u64>,
}

/// A numbered event's payload: the sequence number, then padding.
#[derive(Debug, Serialize, Deserialize)]
pub struct Numbered {
    pub seq: u64,
    pub padding: Vec<u8>,
}

pub const SEQ_EVENT: &str = "probe:seq";
