//! Any bytes given to the rollback log's block decoder: an error or a
//! block, never a panic; a block that decodes encodes back to one that
//! decodes the same.

#![no_main]

use buildat_format::rollback_blob::{decode, encode};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(blob) = decode(data) {
        let again = decode(&encode(&blob)).expect("a block encoded back decodes");
        assert_eq!(again, blob);
    }
});
