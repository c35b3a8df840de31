//! `buildat-main-protocol`: the default game's packets (`docs/protocol.md`
//! §10), one definition each, shared by the `main` module (through
//! `buildat-main-api`, which re-exports them), the client, tests, benches
//! and the harness. Depends only on `buildat-format`: the client links no
//! module ABI. The game's client Lua reads and writes the same layouts with
//! `string.pack`.
//!
//! Owns: the layouts of the `main:*` packets (raw little-endian, not
//! bincode, so Lua reads them without a bincode decoder), read with bounds
//! checks, their size limits, and the variables of a player's node. Does
//! not own: what the game accepts (`modules/main`'s rules: name length,
//! move distance, reach) or the game's calls (`buildat-main-api`).

use buildat_format::payload::{Packet, PayloadError};

/// A peer id, as the network module numbers peers.
pub type PeerId = u64;
/// A voxel position.
pub type VoxelPos = [i32; 3];

/// A player's node (transient, made by the game; `replicate` tells the
/// clients near it) carries this variable: the player's name (UTF-8).
/// Other modules find the players with `ListNodes { with_var: VAR_PLAYER }`.
pub const VAR_PLAYER: &str = "player";
/// A player node's variable holding its peer id (8 bytes, little-endian).
pub const VAR_PEER: &str = "peer";

/// Bytes of a `main:spawn`.
pub const SPAWN_BYTES: usize = 32;

/// Reads fixed-size little-endian fields off the front of a payload.
struct Fields<'a>(&'a [u8]);

impl<'a> Fields<'a> {
    fn take<const N: usize>(&mut self, what: &str) -> Result<[u8; N], PayloadError> {
        let (head, rest) = self
            .0
            .split_first_chunk::<N>()
            .ok_or_else(|| PayloadError::Decode(format!("{what}: {N} more bytes expected")))?;
        self.0 = rest;
        Ok(*head)
    }

    fn u64(&mut self, what: &str) -> Result<u64, PayloadError> {
        self.take::<8>(what).map(u64::from_le_bytes)
    }

    fn position(&mut self) -> Result<[f64; 3], PayloadError> {
        let mut position = [0.0; 3];
        for value in &mut position {
            *value = f64::from_le_bytes(self.take::<8>("a position")?);
        }
        Ok(position)
    }

    fn voxel(&mut self) -> Result<VoxelPos, PayloadError> {
        let mut voxel = [0; 3];
        for value in &mut voxel {
            *value = i32::from_le_bytes(self.take::<4>("a voxel position")?);
        }
        Ok(voxel)
    }

    fn text(&mut self, what: &str) -> Result<String, PayloadError> {
        let bytes = std::mem::take(&mut self.0);
        String::from_utf8(bytes.to_vec())
            .map_err(|_| PayloadError::Decode(format!("{what} is not UTF-8")))
    }

    fn end(&self) -> Result<(), PayloadError> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(PayloadError::TrailingBytes(self.0.len()))
        }
    }
}

fn put_position(out: &mut Vec<u8>, position: [f64; 3]) {
    for value in position {
        out.extend(value.to_le_bytes());
    }
}

fn put_voxel(out: &mut Vec<u8>, voxel: VoxelPos) {
    for value in voxel {
        out.extend(value.to_le_bytes());
    }
}

/// Defines a packet whose payload is its text, raw UTF-8.
macro_rules! text_packet {
    ($(#[$doc:meta])* $ty:ident { $field:ident } = $name:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub struct $ty {
            pub $field: String,
        }

        impl Packet for $ty {
            const NAME: &'static str = $name;

            fn encode(&self) -> Result<Vec<u8>, PayloadError> {
                Ok(self.$field.as_bytes().to_vec())
            }

            fn decode(bytes: &[u8]) -> Result<Self, PayloadError> {
                Ok(Self {
                    $field: Fields(bytes).text(stringify!($field))?,
                })
            }
        }
    };
}

/// Defines a packet whose payload is opaque bytes.
macro_rules! bytes_packet {
    ($(#[$doc:meta])* $ty:ident = $name:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub struct $ty {
            pub data: Vec<u8>,
        }

        impl Packet for $ty {
            const NAME: &'static str = $name;

            fn encode(&self) -> Result<Vec<u8>, PayloadError> {
                Ok(self.data.clone())
            }

            fn decode(bytes: &[u8]) -> Result<Self, PayloadError> {
                Ok(Self {
                    data: bytes.to_vec(),
                })
            }
        }
    };
}

text_packet!(
    /// C→S: join under a name (the game checks it).
    Join { name } = "main:join"
);
text_packet!(
    /// S→C: why an action was refused (the client stays connected).
    Refused { reason } = "main:refused"
);
bytes_packet!(
    /// C→S: opaque bytes, echoed back as [`Pong`].
    Ping = "main:ping"
);
bytes_packet!(
    /// S→C: a [`Ping`]'s bytes.
    Pong = "main:pong"
);

text_packet!(
    /// C→S: a chat line, or a command starting with `/` (at most
    /// [`MAX_CHAT_BYTES`]).
    Chat { text } = "main:chat"
);
text_packet!(
    /// S→C: a line for the player's chat view (someone's message, a
    /// command's answer, a server notice).
    ChatLine { text } = "main:chat_line"
);
text_packet!(
    /// S→C: the login was accepted; the account's name as the server
    /// normalised it (what others see).
    LoggedIn { name } = "main:logged_in"
);

/// Longest chat line a client may send, in bytes.
pub const MAX_CHAT_BYTES: usize = 500;
/// Longest password a login may carry, in bytes.
pub const MAX_PASSWORD_BYTES: usize = 256;

/// C→S, before `main:join`: log in to the account `name` with `password`,
/// claiming the name if no account has it (docs/protocol.md §10.1). Layout:
/// `u8` name length, the name (UTF-8), then the password (UTF-8) to the
/// end.
#[derive(Clone, PartialEq, Eq)]
pub struct Login {
    pub name: String,
    pub password: String,
}

impl std::fmt::Debug for Login {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Login")
            .field("name", &self.name)
            .field("password", &"…")
            .finish()
    }
}

impl Packet for Login {
    const NAME: &'static str = "main:login";

    fn encode(&self) -> Result<Vec<u8>, PayloadError> {
        let len = u8::try_from(self.name.len())
            .map_err(|_| PayloadError::Encode("a login name is at most 255 bytes".into()))?;
        let mut out = Vec::with_capacity(1 + self.name.len() + self.password.len());
        out.push(len);
        out.extend(self.name.as_bytes());
        out.extend(self.password.as_bytes());
        Ok(out)
    }

    fn decode(bytes: &[u8]) -> Result<Self, PayloadError> {
        let mut fields = Fields(bytes);
        let [len] = fields.take::<1>("a name length")?;
        let (name, rest) = fields
            .0
            .split_at_checked(usize::from(len))
            .ok_or_else(|| PayloadError::Decode(format!("a {len}-byte name expected")))?;
        let name = Fields(name).text("the name")?;
        let password = Fields(rest).text("the password")?;
        Ok(Self { name, password })
    }
}

/// Defines a packet whose payload is one position `[<ddd]`.
macro_rules! position_packet {
    ($(#[$doc:meta])* $ty:ident = $name:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq)]
        pub struct $ty {
            pub position: [f64; 3],
        }

        impl Packet for $ty {
            const NAME: &'static str = $name;

            fn encode(&self) -> Result<Vec<u8>, PayloadError> {
                let mut out = Vec::with_capacity(24);
                put_position(&mut out, self.position);
                Ok(out)
            }

            fn decode(bytes: &[u8]) -> Result<Self, PayloadError> {
                let mut fields = Fields(bytes);
                let position = fields.position()?;
                fields.end()?;
                Ok(Self { position })
            }
        }
    };
}

position_packet!(
    /// C→S: the player's new position (feet, in voxels).
    Move = "main:move"
);
position_packet!(
    /// S→C: the server refused a move (too far, too fast, through a solid
    /// voxel, flying): the player is at `position`, where the server last
    /// accepted it; the client moves it back there.
    Correct = "main:correct"
);

/// Defines a packet whose payload is one voxel position `[<i4i4i4]`.
macro_rules! voxel_packet {
    ($(#[$doc:meta])* $ty:ident = $name:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub struct $ty {
            pub voxel: VoxelPos,
        }

        impl Packet for $ty {
            const NAME: &'static str = $name;

            fn encode(&self) -> Result<Vec<u8>, PayloadError> {
                let mut out = Vec::with_capacity(12);
                put_voxel(&mut out, self.voxel);
                Ok(out)
            }

            fn decode(bytes: &[u8]) -> Result<Self, PayloadError> {
                let mut fields = Fields(bytes);
                let voxel = fields.voxel()?;
                fields.end()?;
                Ok(Self { voxel })
            }
        }
    };
}

voxel_packet!(
    /// C→S: dig the voxel at `voxel`.
    Dig = "main:dig"
);
voxel_packet!(
    /// C→S: punch the voxel at `voxel` (its block's handler module is
    /// told; nothing happens to a voxel without one).
    Punch = "main:punch"
);
voxel_packet!(
    /// C→S: use the voxel at `voxel` (its block's handler module is told;
    /// nothing happens to a voxel without one).
    Use = "main:use"
);

voxel_packet!(
    /// C→S: start digging the voxel at `voxel` with the wielded item; the
    /// server answers with [`DigTime`]. A `main:dig` of it completes the
    /// dig once that time has passed.
    DigStart = "main:dig_start"
);

/// The hotbar: slots 0..`HOTBAR_SLOTS` of the inventory's `main` list can
/// be wielded.
pub const HOTBAR_SLOTS: u16 = 8;

/// S→C: how long digging `voxel` takes with the wielded item, in seconds
/// (the answer to a [`DigStart`]); negative when it cannot be dug that way
/// (the reason comes in a `main:refused`). Layout: the voxel `<i4i4i4`,
/// then `<f` seconds: 16 bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct DigTime {
    pub voxel: VoxelPos,
    pub seconds: f32,
}

impl Packet for DigTime {
    const NAME: &'static str = "main:dig_time";

    fn encode(&self) -> Result<Vec<u8>, PayloadError> {
        let mut out = Vec::with_capacity(16);
        put_voxel(&mut out, self.voxel);
        out.extend(self.seconds.to_le_bytes());
        Ok(out)
    }

    fn decode(bytes: &[u8]) -> Result<Self, PayloadError> {
        let mut fields = Fields(bytes);
        let voxel = fields.voxel()?;
        let seconds = f32::from_le_bytes(fields.take::<4>("the seconds")?);
        fields.end()?;
        Ok(Self { voxel, seconds })
    }
}

/// C→S: wield hotbar slot `index` (0..[`HOTBAR_SLOTS`]) of the `main`
/// list. Layout: `<u2`, 2 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wield {
    pub index: u16,
}

impl Packet for Wield {
    const NAME: &'static str = "main:wield";

    fn encode(&self) -> Result<Vec<u8>, PayloadError> {
        Ok(self.index.to_le_bytes().to_vec())
    }

    fn decode(bytes: &[u8]) -> Result<Self, PayloadError> {
        let mut fields = Fields(bytes);
        let index = u16::from_le_bytes(fields.take::<2>("a slot index")?);
        fields.end()?;
        Ok(Self { index })
    }
}

/// Defines a packet whose payload is one node id `<u8`.
macro_rules! node_packet {
    ($(#[$doc:meta])* $ty:ident = $name:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct $ty {
            pub node: u64,
        }

        impl Packet for $ty {
            const NAME: &'static str = $name;

            fn encode(&self) -> Result<Vec<u8>, PayloadError> {
                Ok(self.node.to_le_bytes().to_vec())
            }

            fn decode(bytes: &[u8]) -> Result<Self, PayloadError> {
                let mut fields = Fields(bytes);
                let node = fields.u64("a node id")?;
                fields.end()?;
                Ok(Self { node })
            }
        }
    };
}

node_packet!(
    /// C→S: punch the node `node` (a creature, a drop) with the wielded
    /// item; modules hear of it through `main:node_actions`.
    PunchNode = "main:punch_node"
);
node_packet!(
    /// C→S: use (right-click) the node `node` with the wielded item.
    UseNode = "main:use_node"
);

/// C→S: place a voxel named `name` at `voxel`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    pub voxel: VoxelPos,
    pub name: String,
}

impl Packet for Place {
    const NAME: &'static str = "main:place";

    fn encode(&self) -> Result<Vec<u8>, PayloadError> {
        let mut out = Vec::with_capacity(12 + self.name.len());
        put_voxel(&mut out, self.voxel);
        out.extend(self.name.as_bytes());
        Ok(out)
    }

    fn decode(bytes: &[u8]) -> Result<Self, PayloadError> {
        let mut fields = Fields(bytes);
        let voxel = fields.voxel()?;
        let name = fields.text("the voxel name")?;
        Ok(Self { voxel, name })
    }
}

/// S→C: your peer id and where you spawned.
#[derive(Debug, Clone, PartialEq)]
pub struct Spawn {
    pub peer: PeerId,
    pub position: [f64; 3],
}

impl Packet for Spawn {
    const NAME: &'static str = "main:spawn";

    fn encode(&self) -> Result<Vec<u8>, PayloadError> {
        let mut out = Vec::with_capacity(SPAWN_BYTES);
        out.extend(self.peer.to_le_bytes());
        put_position(&mut out, self.position);
        Ok(out)
    }

    fn decode(bytes: &[u8]) -> Result<Self, PayloadError> {
        let mut fields = Fields(bytes);
        let peer = fields.u64("a peer id")?;
        let position = fields.position()?;
        fields.end()?;
        Ok(Self { peer, position })
    }
}

/// One entry of [`Edits`]: who set which voxel to what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edit {
    pub peer: PeerId,
    pub voxel: VoxelPos,
    /// The new voxel's name (at most 65535 bytes; a longer one is cut).
    pub name: String,
}

/// S→C, once per tick if anything near was edited: the edits in the order
/// they were made.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Edits {
    pub edits: Vec<Edit>,
}

impl Packet for Edits {
    const NAME: &'static str = "main:edits";

    fn encode(&self) -> Result<Vec<u8>, PayloadError> {
        let mut out = Vec::new();
        for edit in &self.edits {
            out.extend(edit.peer.to_le_bytes());
            put_voxel(&mut out, edit.voxel);
            let name = edit.name.as_bytes();
            let name = name.get(..usize::from(u16::MAX)).unwrap_or(name);
            out.extend((name.len() as u16).to_le_bytes());
            out.extend(name);
        }
        Ok(out)
    }

    fn decode(bytes: &[u8]) -> Result<Self, PayloadError> {
        let mut fields = Fields(bytes);
        let mut edits = Vec::new();
        while !fields.0.is_empty() {
            let (peer, voxel, name) = fields.edit()?;
            let name = String::from_utf8_lossy(name).into_owned();
            edits.push(Edit { peer, voxel, name });
        }
        Ok(Self { edits })
    }
}

impl Edits {
    /// How many edits a `main:edits` payload holds, checked as
    /// [`Packet::decode`] checks it but without copying a name (for
    /// clients that only count them, such as the load test's bots).
    pub fn count(bytes: &[u8]) -> Result<usize, PayloadError> {
        let mut fields = Fields(bytes);
        let mut count = 0;
        while !fields.0.is_empty() {
            fields.edit()?;
            count += 1;
        }
        Ok(count)
    }
}

impl<'a> Fields<'a> {
    /// One edit of a `main:edits`: who made it, where, and the new voxel's
    /// name as it was sent.
    fn edit(&mut self) -> Result<(PeerId, VoxelPos, &'a [u8]), PayloadError> {
        let peer = self.u64("a peer id")?;
        let voxel = self.voxel()?;
        let len = usize::from(u16::from_le_bytes(self.take::<2>("a name length")?));
        let (name, rest) = self
            .0
            .split_at_checked(len)
            .ok_or_else(|| PayloadError::Decode(format!("a {len}-byte name expected")))?;
        self.0 = rest;
        Ok((peer, voxel, name))
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// What decodes encodes to bytes that decode to the same encoding.
    fn idempotent<P: Packet>(data: &[u8]) {
        if let Ok(packet) = P::decode(data) {
            let once = packet.encode().unwrap();
            let again = P::decode(&once).unwrap().encode().unwrap();
            assert_eq!(again, once, "{}", P::NAME);
        }
    }

    proptest! {
        #[test]
        fn any_bytes_decode_without_panicking(data in proptest::collection::vec(any::<u8>(), 0..200)) {
            idempotent::<Join>(&data);
            idempotent::<Move>(&data);
            idempotent::<Correct>(&data);
            idempotent::<Dig>(&data);
            idempotent::<Punch>(&data);
            idempotent::<Use>(&data);
            idempotent::<Place>(&data);
            idempotent::<Spawn>(&data);
            idempotent::<Edits>(&data);
            idempotent::<Refused>(&data);
            idempotent::<Ping>(&data);
            idempotent::<Login>(&data);
            idempotent::<Chat>(&data);
            idempotent::<ChatLine>(&data);
            idempotent::<DigStart>(&data);
            idempotent::<DigTime>(&data);
            idempotent::<Wield>(&data);
            idempotent::<PunchNode>(&data);
            idempotent::<UseNode>(&data);
        }

        #[test]
        fn edits_count_agrees_with_decode(data in proptest::collection::vec(any::<u8>(), 0..200)) {
            let decoded = Edits::decode(&data).map(|edits| edits.edits.len());
            prop_assert_eq!(Edits::count(&data).ok(), decoded.ok());
        }
    }

    fn round_trip<P: Packet + PartialEq + std::fmt::Debug>(packet: P) -> Vec<u8> {
        let bytes = packet.encode().unwrap();
        assert_eq!(P::decode(&bytes).unwrap(), packet);
        bytes
    }

    #[test]
    fn layouts_match_the_protocol_page_and_round_trip() {
        let bytes = round_trip(Spawn {
            peer: 7,
            position: [1.5, 2.0, -3.0],
        });
        assert_eq!(bytes.len(), 32);
        assert_eq!(bytes[..8], 7u64.to_le_bytes());
        assert_eq!(bytes[8..16], 1.5f64.to_le_bytes());
        let bytes = round_trip(Place {
            voxel: [1, -2, 3],
            name: "stone".into(),
        });
        assert_eq!(&bytes[12..], b"stone");
        let bytes = round_trip(Edits {
            edits: vec![Edit {
                peer: 3,
                voxel: [4, 5, 6],
                name: "dirt".into(),
            }],
        });
        assert_eq!(bytes[20..22], 4u16.to_le_bytes());
        let three = [bytes.as_slice(), &bytes, &bytes].concat();
        assert_eq!(Edits::count(&three).ok(), Some(3));
        assert!(Edits::count(&three[..three.len() - 1]).is_err());
        round_trip(Join { name: "ann".into() });
        let bytes = round_trip(Use { voxel: [1, -2, 3] });
        assert_eq!(bytes[4..8], (-2i32).to_le_bytes());
        assert_eq!(Punch::NAME, "main:punch");
        assert_eq!(Use::NAME, "main:use");
        let bytes = round_trip(Login {
            name: "ann".into(),
            password: "pw".into(),
        });
        assert_eq!(bytes, b"\x03annpw");
        assert!(!format!("{:?}", Login::decode(&bytes).unwrap()).contains("pw"));
        let bytes = round_trip(Correct {
            position: [1.0, -2.5, 3.0],
        });
        assert_eq!(bytes[8..16], (-2.5f64).to_le_bytes());
    }

    #[test]
    fn digging_wielding_and_node_actions_round_trip_in_their_layouts() {
        let bytes = round_trip(DigStart { voxel: [1, -2, 3] });
        assert_eq!(bytes.len(), 12);
        assert_eq!(DigStart::NAME, "main:dig_start");
        let bytes = round_trip(DigTime {
            voxel: [1, -2, 3],
            seconds: 1.5,
        });
        assert_eq!(bytes.len(), 16);
        assert_eq!(bytes[4..8], (-2i32).to_le_bytes());
        assert_eq!(bytes[12..], 1.5f32.to_le_bytes());
        let bytes = round_trip(Wield { index: 7 });
        assert_eq!(bytes, [7, 0]);
        let bytes = round_trip(PunchNode { node: 0x0102 });
        assert_eq!(bytes, [2, 1, 0, 0, 0, 0, 0, 0]);
        let bytes = round_trip(UseNode { node: 9 });
        assert_eq!(bytes.len(), 8);
        assert_eq!(PunchNode::NAME, "main:punch_node");
        assert_eq!(UseNode::NAME, "main:use_node");
        assert_eq!(Wield::NAME, "main:wield");
        assert_eq!(DigTime::NAME, "main:dig_time");
    }

    #[test]
    fn short_long_and_garbled_payloads_are_errors() {
        assert!(DigTime::decode(&[0; 15]).is_err());
        assert!(DigTime::decode(&[0; 17]).is_err());
        assert!(Wield::decode(&[0; 1]).is_err());
        assert!(Wield::decode(&[0; 3]).is_err());
        assert!(PunchNode::decode(&[0; 7]).is_err());
        assert!(UseNode::decode(&[0; 9]).is_err());
        assert!(Move::decode(&[0; 23]).is_err());
        assert!(Move::decode(&[0; 25]).is_err());
        assert!(Correct::decode(&[0; 23]).is_err());
        assert!(Dig::decode(&[0; 11]).is_err());
        assert!(Dig::decode(&[0; 13]).is_err());
        assert!(Punch::decode(&[0; 11]).is_err());
        assert!(Use::decode(&[0; 13]).is_err());
        assert!(Place::decode(&[0; 5]).is_err());
        assert!(Edits::decode(&[0; 21]).is_err());
        // A name length past the end.
        let mut edit = vec![0; 20];
        edit.extend(9u16.to_le_bytes());
        edit.extend(b"abc");
        assert!(Edits::decode(&edit).is_err());
        assert!(Join::decode(&[0xff, 0xfe]).is_err());
        assert!(Login::decode(&[]).is_err());
        assert!(Login::decode(&[4, b'a']).is_err());
        assert!(Login::decode(&[1, 0xff]).is_err());
    }
}
