//! Fuzz target: the voxel blob decoder never panics, never allocates past its
//! limits, and what it accepts re-encodes to a blob that decodes the same.
#![no_main]

use buildat_format::voxel_blob::{DecodeLimits, decode_voxels_with_limits, encode_voxels};
use libfuzzer_sys::fuzz_target;

fn id_of(name: &str) -> Option<u32> {
    // Some names known, some not: exercises the placeholder path.
    let h = name
        .bytes()
        .fold(7u32, |a, b| a.wrapping_mul(31).wrapping_add(u32::from(b)));
    (h % 3 != 0).then_some(h & 0x1f_ffff)
}

/// A valid header and zlib stream around `body`, so the body parser (names,
/// palette, runs) is reached without the fuzzer having to forge checksums.
fn wrap(count: u64, body: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut out = vec![1u8];
    for mut v in [count, body.len() as u64] {
        while v >= 0x80 {
            out.push(v as u8 | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }
    let mut z = flate2::write::ZlibEncoder::new(out, flate2::Compression::fast());
    z.write_all(body).expect("vec write");
    z.finish().expect("vec write")
}

fuzz_target!(|data: &[u8]| {
    let limits = DecodeLimits {
        max_voxels: 1 << 20,
        max_body_bytes: 4 << 20,
    };
    // First byte: mode. Odd: the rest is a body, wrapped for a count of
    // (mode >> 1) * 37 voxels. Even: the rest is a whole blob.
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let wrapped;
    let input = if mode & 1 == 1 {
        wrapped = wrap(u64::from(mode >> 1) * 37, rest);
        &wrapped[..]
    } else {
        rest
    };
    let Ok(d) = decode_voxels_with_limits(input, id_of, 5, &limits) else {
        return;
    };
    assert!(d.voxels.len() <= limits.max_voxels);
    // Oracle: encode with a naming that inverts the registry mapping used
    // above for known ids, decode with its inverse, compare.
    let enc = encode_voxels(&d.voxels, |id| Some(format!("id{id}"))).expect("re-encode");
    let back = decode_voxels_with_limits(&enc, |n| n.strip_prefix("id")?.parse().ok(), 0, &limits)
        .expect("re-decode");
    assert_eq!(back.voxels, d.voxels);
});
