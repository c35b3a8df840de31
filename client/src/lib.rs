//! `buildat-client`'s library: everything but the command line, so tests
//! and benchmarks drive the real parts.
//!
//! Owns: the module list. Does not own: argument parsing, exit codes and
//! printing the summary (`main.rs`).
//!
//! - [`cache`]: files by content hash, verified reads, atomic writes.
//! - [`session`]: the file-transfer protocol, sans-IO.
//! - [`sandbox`]: the Luau VM, its limits and the host primitives.
//! - [`lua_sources`]: the embedded `client_lua/`.
//! - [`world`]: the world view kept from the voxelworld stream, and its maps.
//! - [`nodes`]: the nodes the server replicates to this client.
//! - [`app`]: the connection loop tying them together.
//! - [`transport`]: the one rule for TLS or plaintext, and pinning or not.
//! - [`tls`]: TLS on the game port and pinning the server's key.
//! - [`known_hosts`]: the file of pinned server keys.
//! - [`frontend`]: what the session and a graphical frontend tell each other.
//! - [`render`]: the renderer (window and offscreen), never used by bots.
//! - [`terminal`]: server text escaped before it is printed.
//! - [`settings`]: the window's settings file (view radius, field of view, mouse, keys).

pub mod app;
pub mod cache;
pub mod frontend;
pub mod known_hosts;
pub mod lua_sources;
pub mod nodes;
pub mod render;
pub mod sandbox;
pub mod session;
pub mod settings;
pub mod terminal;
pub mod tls;
pub mod transport;
pub mod world;
