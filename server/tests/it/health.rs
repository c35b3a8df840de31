//! End-to-end tests of health: damage, falls, drowning, the void, death and respawn.

#[allow(unused_imports)]
use crate::common::*;
