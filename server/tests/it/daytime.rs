//! End-to-end tests of the time of day: its clock, `/time`, what clients are told.

#[allow(unused_imports)]
use crate::common::*;
