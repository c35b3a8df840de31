//! Raw frames for sending what no real client would: a frame header with
//! any type and size, a packet-type definition with any number and name
//! bytes (docs/protocol.md §2-3). For the abuse corpus and the network
//! tests; well-formed traffic goes through `buildat-format`'s writer.
//!
//! Owns: building those byte strings. Does not own: any I/O.

/// A frame header: type, then data size (both little-endian).
pub fn header(ty: u16, size: u32) -> Vec<u8> {
    let mut bytes = ty.to_le_bytes().to_vec();
    bytes.extend(size.to_le_bytes());
    bytes
}

/// A whole frame.
pub fn frame(ty: u16, data: &[u8]) -> Vec<u8> {
    let mut bytes = header(ty, data.len() as u32);
    bytes.extend(data);
    bytes
}

/// A `core:define_packet_type` frame (type 0) defining `ty` as `name`.
pub fn definition(ty: u16, name: &[u8]) -> Vec<u8> {
    let mut data = ty.to_le_bytes().to_vec();
    data.extend((name.len() as u32).to_le_bytes());
    data.extend(name);
    frame(0, &data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_definition_is_a_type_0_frame() {
        assert_eq!(
            definition(100, b"a:b"),
            [0, 0, 9, 0, 0, 0, 100, 0, 3, 0, 0, 0, b'a', b':', b'b']
        );
    }
}
