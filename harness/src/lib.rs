//! `buildat_harness`: the reliability harness (docs/RELIABILITY.md) as a
//! library: one module per test (`loadtest`, `faulttest`, `abuse`,
//! `crashtest`) and what they share (the server and client processes, wire
//! clients, histograms, `/proc` samples, reading saved rounds back). The
//! binary `buildat-harness` is its command line. The server's and the
//! client's tests and benchmarks use it too: `server` (the one server
//! driver), `raw_client` (the one wire client), `fake_server`, `wire`,
//! `layout` (the scratch module workspace), `world_check` and `pg` (a
//! database per run on the PostgreSQL test cluster).
//!
//! Owns: driving real processes from outside. Does not own: anything inside
//! the server or the client.

pub mod abuse;
pub mod browser;
pub mod census;
pub mod crashtest;
pub mod creatures_report;
pub mod fake_server;
pub mod faulttest;
pub mod fleet;
pub mod histogram;
pub mod http;
pub mod inflate;
pub mod layout;
pub mod lightbots;
pub mod loadtest;
pub mod map_pages;
pub mod mapbench;
/// PostgreSQL test databases (its own crate, which module tests can use).
pub use buildat_test_pg as pg;
pub mod proc_stats;
pub mod raw_client;
pub mod server;
pub mod slow_handlers;
pub mod timerbench;
pub mod walkgen;
pub mod wire;
pub mod world_check;
