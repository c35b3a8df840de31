//! Fuzz target: the PROXY protocol v2 header parser never panics, never
//! claims more bytes than it was given, and answers the same for a whole
//! header whatever follows it (the client's own bytes).
#![no_main]

use buildat_format::proxy::{self, MAX_HEADER_LEN};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // With the signature in front, most inputs reach the header's fields.
    let mut input = proxy::SIGNATURE.to_vec();
    input.extend_from_slice(data);
    for bytes in [data, input.as_slice()] {
        if let Ok(Some(header)) = proxy::parse(bytes) {
            assert!(header.len <= bytes.len());
            assert!(header.len <= MAX_HEADER_LEN);
            let whole = bytes.get(..header.len).expect("within the input");
            assert_eq!(proxy::parse(whole), Ok(Some(header)));
        }
    }
});
