//! Fuzz target: the record stream reader in every mode (passes, record-only
//! walking, skip-to-end, seek back) never panics, never loops without
//! progress, and serves only records of the chosen pass.
#![no_main]

use buildat_format::records::{Entry, Pass, RecordReader};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    // With and without the magic, so the body parser is reached often.
    let mut with_magic = b"BRS\x01".to_vec();
    with_magic.extend_from_slice(rest);
    let Ok(mut r) = RecordReader::open(&with_magic) else {
        return;
    };
    let pass = Pass::from_mask(u64::from(mode).wrapping_mul(0x0101_0101_0101_0101));
    r.set_pass(pass);
    let mut offsets = Vec::new();
    let mut steps = 0usize;
    loop {
        steps += 1;
        assert!(steps <= with_magic.len() + 2, "no progress");
        let before = r.position();
        match r.next_entry() {
            Ok(Some(Entry::Record(h))) => {
                assert!(pass.contains(h.class));
                assert!(h.body_end <= with_magic.len());
                offsets.push(h.offset);
                if mode & 1 == 1 {
                    r.skip_to_record_end();
                }
            }
            Ok(Some(_)) => {}
            Ok(None) => break,
            Err(_) => {
                assert_eq!(r.next_entry(), Ok(None), "parked after an error");
                break;
            }
        }
        assert!(r.position() > before || r.current_record().is_some());
        let p = r.progress();
        assert!((0.0..=1.0).contains(&p));
    }
    for off in offsets {
        if let Ok(h) = r.seek_record(off) {
            assert_eq!(h.offset, off);
            while let Ok(Some(_)) = r.next_in_record() {}
        }
    }
    let _ = r.seek_record(rest.len() / 2);
    r.rewind();
    r.set_pass(Pass::ALL);
    while let Ok(Some(_)) = r.next_record() {}
});
