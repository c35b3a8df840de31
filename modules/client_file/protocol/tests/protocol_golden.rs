//! Golden bytes of the worked example in docs/protocol.md §3, built with the
//! real codec, so the page and the code cannot drift apart.

use buildat_client_file_protocol::{ContentHash, RequestFile};
use buildat_format::{Packet, PacketWriter};

const SHA256_OF_PRINT_1: &str = "cc42155088fca5730758db72b2a5bca33112a941dfaa2d43098ec422ce4ea213";

fn unhex(text: &str) -> Vec<u8> {
    let digits: Vec<u8> = text.bytes().filter(|b| b.is_ascii_hexdigit()).collect();
    digits
        .chunks(2)
        .map(|pair| u8::from_str_radix(std::str::from_utf8(pair).unwrap(), 16).unwrap())
        .collect()
}

#[test]
fn request_file_example_matches_the_protocol_page() {
    let hash: ContentHash = unhex(SHA256_OF_PRINT_1).try_into().unwrap();
    let request = RequestFile {
        name: "m/client_lua/init.lua".into(),
        hash,
    };
    let mut writer = PacketWriter::default();
    writer
        .write(RequestFile::NAME, &request.encode().unwrap())
        .unwrap();
    let expected = unhex(&format!(
        "0000 17000000 6400 11000000 {} 6400 36000000 15 {} {}",
        "636f72653a726571756573745f66696c65",
        "6d2f636c69656e745f6c75612f696e69742e6c7561",
        SHA256_OF_PRINT_1
    ));
    assert_eq!(writer.take(), expected);
}
