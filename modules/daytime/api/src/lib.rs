//! `buildat-daytime-api`: the `daytime` module's public API (being written).
