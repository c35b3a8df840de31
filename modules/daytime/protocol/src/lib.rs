//! `buildat-daytime-protocol`: the `daytime` module's packets (being written).
