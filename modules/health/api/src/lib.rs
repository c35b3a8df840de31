//! `buildat-health-api`: the `health` module's public API (being written).
