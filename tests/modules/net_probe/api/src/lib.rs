//! `buildat-test-net-probe-api`: the `net_probe` fixture's packets, one
//! typed definition each, used by the fixture, the server's network tests
//! and the network benchmark. A crate of its own, like a module's `api/`,
//! so a test binary can use it beside other fixtures' definitions without
//! linking the fixture library itself.

use buildat_format::payload::{Packet, PayloadError};

/// `test:echo`: any bytes, sent back as they are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Echo {
    pub data: Vec<u8>,
}

impl Echo {
    /// An echo carrying a sequence number (u64 LE), as the tests send.
    pub fn seq(seq: u64) -> Self {
        Self {
            data: seq.to_le_bytes().to_vec(),
        }
    }

    /// The sequence number [`Echo::seq`] put in, if the data holds one.
    pub fn read_seq(&self) -> Option<u64> {
        Some(u64::from_le_bytes(self.data.get(..8)?.try_into().ok()?))
    }
}

impl Packet for Echo {
    const NAME: &'static str = "test:echo";

    fn encode(&self) -> Result<Vec<u8>, PayloadError> {
        Ok(self.data.clone())
    }

    fn decode(bytes: &[u8]) -> Result<Self, PayloadError> {
        Ok(Self {
            data: bytes.to_vec(),
        })
    }
}

/// `test:count`: counted; its bytes are padding (any, to size the packet).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CountPacket {
    pub padding: Vec<u8>,
}

impl CountPacket {
    /// A packet of `size` bytes of padding.
    pub fn padded(size: usize) -> Self {
        Self {
            padding: vec![0xab; size],
        }
    }
}

impl Packet for CountPacket {
    const NAME: &'static str = "test:count";

    fn encode(&self) -> Result<Vec<u8>, PayloadError> {
        Ok(self.padding.clone())
    }

    fn decode(bytes: &[u8]) -> Result<Self, PayloadError> {
        Ok(Self {
            padding: bytes.to_vec(),
        })
    }
}

/// `test:count_query`: asks for a `test:count_reply`; carries nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CountQuery;

impl Packet for CountQuery {
    const NAME: &'static str = "test:count_query";

    fn encode(&self) -> Result<Vec<u8>, PayloadError> {
        Ok(Vec::new())
    }

    fn decode(_bytes: &[u8]) -> Result<Self, PayloadError> {
        Ok(Self)
    }
}

/// `test:count_reply`: how many `test:count` packets arrived, u64 LE.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CountReply {
    pub count: u64,
}

impl Packet for CountReply {
    const NAME: &'static str = "test:count_reply";

    fn encode(&self) -> Result<Vec<u8>, PayloadError> {
        Ok(self.count.to_le_bytes().to_vec())
    }

    fn decode(bytes: &[u8]) -> Result<Self, PayloadError> {
        let bytes: [u8; 8] = bytes.try_into().map_err(|_| {
            PayloadError::Decode(format!("test:count_reply: {} bytes, not 8", bytes.len()))
        })?;
        Ok(Self {
            count: u64::from_le_bytes(bytes),
        })
    }
}

/// `test:stall`: the fixture sleeps this many milliseconds (u32 LE, at
/// most 10 s) on its thread, as a module that falls behind would.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stall {
    pub ms: u32,
}

impl Packet for Stall {
    const NAME: &'static str = "test:stall";

    fn encode(&self) -> Result<Vec<u8>, PayloadError> {
        Ok(self.ms.to_le_bytes().to_vec())
    }

    fn decode(bytes: &[u8]) -> Result<Self, PayloadError> {
        let bytes: [u8; 4] = bytes.try_into().map_err(|_| {
            PayloadError::Decode(format!("test:stall: {} bytes, not 4", bytes.len()))
        })?;
        Ok(Self {
            ms: u32::from_le_bytes(bytes),
        })
    }
}
