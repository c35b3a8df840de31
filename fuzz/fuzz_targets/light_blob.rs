//! Fuzz target: the light blob decoder never panics, never allocates past
//! its limit, and what it accepts re-encodes to a blob that decodes the same.
#![no_main]

use buildat_format::light_blob::{decode_light, encode_light};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let max = 1 << 16;
    let Ok(light) = decode_light(data, max) else {
        return;
    };
    assert!(light.len() <= max);
    let again = encode_light(&light).expect("re-encode");
    assert_eq!(decode_light(&again, max).expect("re-decode"), light);
});
