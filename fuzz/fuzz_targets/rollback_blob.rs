//! Any bytes given to the rollback log's block decoders (voxel changes and
//! inventory changes): an error or a block, never a panic; a block that
//! decodes encodes back to one that decodes the same.

#![no_main]

use buildat_format::rollback_blob::{decode, decode_items, encode, encode_items};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(blob) = decode(data) {
        let again = decode(&encode(&blob)).expect("a block encoded back decodes");
        assert_eq!(again, blob);
    }
    // The same bytes as a block of inventory changes (its own version byte).
    let mut items = data.to_vec();
    if let Some(first) = items.first_mut() {
        *first = buildat_format::rollback_blob::ITEMS_VERSION;
    }
    if let Ok(blob) = decode_items(&items) {
        let again = decode_items(&encode_items(&blob)).expect("a block encoded back decodes");
        assert_eq!(again, blob);
    }
});
