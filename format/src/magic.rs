//! The four-byte magic that opens the record stream and the section record: three
//! identifying bytes and a version byte, matched exactly.
//!
//! Owns: [`check_magic`] and [`MagicError`], which tells "not this format" apart
//! from "this format, another version" so a caller can regenerate a stale file
//! instead of misreading it.
//!
//! Does not own: the magics themselves (each format module defines its own), the
//! one-byte format id of the voxel blob, or the container's magic (which is tied
//! to a metadata type in [`crate::container`]).

use thiserror::Error;

/// A buffer whose magic is not the one expected.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum MagicError {
    /// Fewer than four bytes.
    #[error("too short for a {format} header ({len} bytes)")]
    Truncated { format: &'static str, len: usize },
    /// The first three bytes are not this format's.
    #[error("not a {format}: magic {found:02x?}, expected {expected:02x?}")]
    WrongMagic {
        format: &'static str,
        found: [u8; 4],
        expected: [u8; 4],
    },
    /// This format, but another version: regenerate rather than misread.
    #[error("{format} version {found} is not the supported version {expected}")]
    WrongVersion {
        format: &'static str,
        found: u8,
        expected: u8,
    },
}

/// Checks that `buf` starts with `expected` (three identifying bytes, then the
/// version byte).
pub fn check_magic(buf: &[u8], expected: [u8; 4], format: &'static str) -> Result<(), MagicError> {
    let Some(found) = buf.first_chunk::<4>() else {
        return Err(MagicError::Truncated {
            format,
            len: buf.len(),
        });
    };
    if found[..3] != expected[..3] {
        return Err(MagicError::WrongMagic {
            format,
            found: *found,
            expected,
        });
    }
    if found[3] != expected[3] {
        return Err(MagicError::WrongVersion {
            format,
            found: found[3],
            expected: expected[3],
        });
    }
    Ok(())
}
