//! The `crafting` module (being written).
