//! End-to-end tests of the living world together: `scripts/bots/living.lua` against the real server and client.

#[allow(unused_imports)]
use crate::common::*;
