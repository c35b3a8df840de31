//! Fuzz target: the frame decoder, fed the input in pieces, and the receiver
//! packet-type table never panic; frames obey the size limit; the decoder
//! returns the same frames whatever the piece sizes.
#![no_main]

use buildat_format::packet::{FrameDecoder, PacketReader, ReceiverPacketTypes};
use libfuzzer_sys::fuzz_target;

const MAX: u32 = 4096;

fn frames(data: &[u8], piece: usize) -> (Vec<(u16, Vec<u8>)>, bool, usize) {
    let mut d = FrameDecoder::new(MAX);
    let mut out = Vec::new();
    for p in data.chunks(piece.max(1)) {
        d.push(p);
        loop {
            match d.try_next_frame() {
                Ok(Some(f)) => {
                    assert!(f.data.len() <= MAX as usize);
                    out.push((f.ty, f.data));
                }
                Ok(None) => break,
                Err(_) => return (out, true, 0),
            }
        }
    }
    (out, false, d.buffered_len())
}

fuzz_target!(|data: &[u8]| {
    let Some((&piece, rest)) = data.split_first() else {
        return;
    };
    let (whole, err_a, left_a) = frames(rest, rest.len());
    let (pieces, err_b, left_b) = frames(rest, usize::from(piece));
    assert_eq!(whole, pieces);
    assert_eq!(err_a, err_b);
    assert_eq!(left_a, left_b);
    let mut rx = ReceiverPacketTypes::with_max_name_len(64);
    for (ty, data) in &whole {
        let _ = rx.receive(*ty, data);
    }
    let _ = rx.accept_definition(rest);
    // The combined reader agrees with frames + table.
    let mut pr = PacketReader::new(MAX, 64);
    pr.push(rest);
    let mut n = 0;
    while let Ok(Some(p)) = pr.try_next_packet() {
        assert!(p.ty >= 100);
        n += 1;
    }
    assert!(n <= whole.len());
});
