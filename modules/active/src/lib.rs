//! The `active` module (being written).
