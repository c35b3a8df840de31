//! What a module carries across its own reload ("the stash"): one value kept
//! by the host between `core:unload` and the next version's `core:continue`,
//! stamped with its layout version so a version that changed the layout
//! refuses the old stash with a clear message instead of misdecoding it.
//!
//! Owns: the [`Stash`] trait and the stash's bytes (a `u32` layout version,
//! then the bincode value). Does not own: keeping the bytes (the host's tmp
//! data, [`crate::Host::tmp_store_data`]).

use serde::Serialize;
use serde::de::DeserializeOwned;

/// The tmp data name every stash is kept under.
pub const STASH_NAME: &str = "stash";

/// A module's reload stash. Bump [`Stash::LAYOUT`] whenever the type changes.
pub trait Stash: Serialize + DeserializeOwned {
    const LAYOUT: u32;
}

/// The stash could not be carried over.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StashError {
    #[error(
        "the previous version stashed layout {found}, this version expects layout {expected}: \
         its state is not carried over (unload and load the module instead of reloading it)"
    )]
    Layout { found: u32, expected: u32 },
    #[error("the stash is corrupt: {0}")]
    Corrupt(#[from] crate::PayloadError),
    #[error("the stash is too short")]
    Short,
}

/// The stash's bytes.
pub fn encode_stash<S: Stash>(stash: &S) -> Result<Vec<u8>, crate::PayloadError> {
    let mut bytes = S::LAYOUT.to_le_bytes().to_vec();
    bytes.extend_from_slice(&crate::encode(stash)?);
    Ok(bytes)
}

/// Reads a stash, refusing another layout.
pub fn decode_stash<S: Stash>(bytes: &[u8]) -> Result<S, StashError> {
    let (layout, value) = bytes.split_first_chunk::<4>().ok_or(StashError::Short)?;
    let found = u32::from_le_bytes(*layout);
    if found != S::LAYOUT {
        return Err(StashError::Layout {
            found,
            expected: S::LAYOUT,
        });
    }
    Ok(crate::decode(value)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct V1 {
        sockets: Vec<i32>,
    }
    impl Stash for V1 {
        const LAYOUT: u32 = 1;
    }
    #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct V2 {
        sockets: Vec<(i32, u64)>,
    }
    impl Stash for V2 {
        const LAYOUT: u32 = 2;
    }

    #[test]
    fn a_changed_layout_is_refused() {
        let bytes = encode_stash(&V1 {
            sockets: vec![3, 4],
        })
        .unwrap();
        assert_eq!(
            decode_stash::<V1>(&bytes).unwrap(),
            V1 {
                sockets: vec![3, 4]
            }
        );
        let error = decode_stash::<V2>(&bytes).unwrap_err();
        assert!(matches!(
            error,
            StashError::Layout {
                found: 1,
                expected: 2
            }
        ));
        assert!(error.to_string().contains("layout 1"));
        assert!(matches!(
            decode_stash::<V1>(&bytes[..2]),
            Err(StashError::Short)
        ));
        assert!(matches!(
            decode_stash::<V1>(&bytes[..5]),
            Err(StashError::Corrupt(_))
        ));
    }
}
