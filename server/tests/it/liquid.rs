//! End-to-end tests of liquids: water flowing from a dug bank and settling, buckets, the budget under a flood.

#[allow(unused_imports)]
use crate::common::*;
