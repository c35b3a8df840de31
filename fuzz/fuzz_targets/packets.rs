//! Fuzz target: every packet definition of the modules' protocol crates decodes
//! any bytes without panicking, and what it decodes encodes to bytes that
//! decode to the same encoding again (encode ∘ decode is idempotent); a
//! file piece read in place agrees with the owned decode.
#![no_main]

use buildat_format::Packet;
use libfuzzer_sys::fuzz_target;

fn check<P: Packet>(data: &[u8]) {
    let Ok(packet) = P::decode(data) else {
        return;
    };
    let once = packet.encode().expect("a decoded packet encodes");
    let again = P::decode(&once).expect("an encoded packet decodes");
    assert_eq!(again.encode().expect("encodes"), once, "{}", P::NAME);
}

/// A file piece read in place decodes exactly when it decodes owned, to
/// the same fields.
fn check_file_content_in_place(data: &[u8]) {
    use buildat_client_file_protocol::{FileContent, FileContentRef};
    match (FileContentRef::decode(data), FileContent::decode(data)) {
        (Ok(borrowed), Ok(owned)) => {
            assert_eq!(borrowed.name, owned.name);
            assert_eq!(borrowed.data, owned.data.as_slice());
            assert_eq!(
                (borrowed.hash, borrowed.size, borrowed.offset),
                (owned.hash, owned.size, owned.offset)
            );
        }
        (Err(_), Err(_)) => {}
        (borrowed, owned) => panic!("in place {borrowed:?}, owned {owned:?}"),
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&which, data)) = data.split_first() else {
        return;
    };
    use buildat_client_file_protocol as files;
    use buildat_main_protocol as game;
    use buildat_voxelworld_protocol::stream;
    match which % 28 {
        0 => check::<game::Join>(data),
        1 => check::<game::Move>(data),
        2 => check::<game::Dig>(data),
        3 => check::<game::Place>(data),
        4 => check::<game::Ping>(data),
        5 => check::<game::Spawn>(data),
        6 => check::<buildat_replicate_protocol::NodeUpdates>(data),
        7 => check::<game::Correct>(data),
        8 => check::<game::Pong>(data),
        9 => check::<game::Edits>(data),
        10 => check::<game::Refused>(data),
        11 => check::<files::AnnounceFile>(data),
        12 => check::<files::RequestFile>(data),
        13 => {
            check::<files::FileContent>(data);
            check_file_content_in_place(data);
        }
        14 => check::<files::FileError>(data),
        15 => check::<files::RemoveFilePacket>(data),
        16 => check::<files::RunScript>(data),
        17 => check::<stream::Registry>(data),
        18 => check::<stream::Chunk>(data),
        19 => check::<stream::VoxelUpdates>(data),
        20 => check::<stream::UnloadChunk>(data),
        21 => check::<stream::Ack>(data),
        22 => check::<buildat_network_protocol::DisconnectPacket>(data),
        23 => check::<game::Login>(data),
        24 => check::<game::Chat>(data),
        25 => check::<game::ChatLine>(data),
        26 => check::<game::LoggedIn>(data),
        _ => check::<buildat_replicate_protocol::NodeUpdates>(data),
    }
});
