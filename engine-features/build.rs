//! No build step: the build-dependencies of this package are listed only
//! for their features (see `Cargo.toml`), and cargo uses a package's
//! build-dependencies only when it has a build script.
fn main() {}
