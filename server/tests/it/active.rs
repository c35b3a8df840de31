//! End-to-end tests of active voxels: rules over loaded voxels near players, voxel timers kept with their sections.

#[allow(unused_imports)]
use crate::common::*;
