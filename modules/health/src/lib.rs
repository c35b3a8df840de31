//! The `health` module (being written).
