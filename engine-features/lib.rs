//! The engine's features package (see its `Cargo.toml`): no code. It only
//! makes the server's build and its modules' build ask the same features of
//! the crates they share, so cargo compiles each of them once.
