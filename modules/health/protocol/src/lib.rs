//! `buildat-health-protocol`: the `health` module's packets (being written).
