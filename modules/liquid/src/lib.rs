//! The `liquid` module (being written).
