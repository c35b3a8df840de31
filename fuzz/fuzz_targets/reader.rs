//! Fuzz target: the primitive reader and the string table never panic, never
//! read past the buffer, and park at the end after any error.
#![no_main]

use buildat_format::reader::Reader;
use buildat_format::strings::StringTable;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&op_seed, rest)) = data.split_first() else {
        return;
    };
    let mut r = Reader::new(rest);
    let mut op = op_seed;
    while !r.is_at_end() {
        let before = r.position();
        let res = match op % 12 {
            0 => r.varint().map(|_| ()),
            1 => r.zigzag_i64().map(|_| ()),
            2 => r.zigzag_i32().map(|_| ()),
            3 => r.varint_u32().map(|_| ()),
            4 => r.f32_le().map(|_| ()),
            5 => r.f64_le().map(|_| ()),
            6 => r.bytes().map(|_| ()),
            7 => r.str().map(|_| ()),
            8 => r.bytes_max(16).map(|_| ()),
            9 => r.u16_le().map(|_| ()),
            10 => r.u64_le().map(|_| ()),
            _ => r.u8().map(|_| ()),
        };
        match res {
            Ok(()) => assert!(r.position() > before && r.position() <= r.len()),
            Err(_) => assert!(r.is_at_end(), "a failed read must park"),
        }
        assert!((0.0..=1.0).contains(&r.progress()));
        op = op.wrapping_mul(31).wrapping_add(7);
    }
    if let Ok(t) = StringTable::read(&mut Reader::new(rest)) {
        for s in t.iter() {
            assert!(s.len() <= rest.len());
        }
    }
});
