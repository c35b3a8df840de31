//! `buildat-active-api`: the `active` module's public API (being written).
