//! Fuzz target: container parsing (both kinds, one or several blobs, payload
//! lookups) never panics.
#![no_main]

use buildat_format::container::{self, Container, PayloadRef};
use buildat_format::{FileBundle, FileCache};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&split, rest)) = data.split_first() else {
        return;
    };
    let _ = container::read_header(rest);
    // Give the input a valid bundle header now and then so bincode is reached.
    let mut framed = b"BFBN\x01\x00\x00\x00".to_vec();
    let meta_len = (rest.len() as u64).min(u64::from(split));
    framed.extend_from_slice(&meta_len.to_le_bytes());
    framed.extend_from_slice(rest);
    let cut = usize::from(split).min(rest.len());
    let (a, b) = rest.split_at(cut);
    let blobs: [&[u8]; 3] = [&framed, a, b];
    if let Ok(c) = Container::<FileBundle>::open(&blobs[..1]) {
        for e in &c.meta().entries {
            let _ = c.payload(&e.payload);
        }
        let _ = c.file("a");
    }
    let _ = Container::<FileBundle>::open(&blobs);
    if let Ok(c) = Container::<FileBundle>::open(&[rest, a, b]) {
        for e in &c.meta().entries {
            let _ = c.payload(&e.payload);
        }
    }
    if let Ok(c) = Container::<FileCache>::open(&[rest]) {
        for e in &c.meta().entries {
            let _ = c.payload(&e.payload);
        }
        let _ = c.payload(&PayloadRef {
            blob: u32::MAX,
            offset: u64::MAX,
            len: u64::MAX,
        });
    }
});
