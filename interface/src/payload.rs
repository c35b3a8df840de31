//! Payload encoding for everything that crosses a module boundary: the
//! project's one bincode configuration, which lives in `buildat-format`
//! (shared with the wire) and is re-exported here for module authors.
//!
//! Owns: nothing of its own. Does not own: the packet framing (that is in
//! `buildat-format`).

pub use buildat_format::payload::{DECODE_LIMIT, PayloadError, decode, encode};
