//! The `items` module (being written).
