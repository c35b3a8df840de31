//! `buildat-liquid-api`: the `liquid` module's public API (being written).
