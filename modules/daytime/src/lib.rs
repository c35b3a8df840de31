//! The `daytime` module (being written).
