//! The network module's events and calls (its public API), shared by every
//! module that talks to players.
//!
//! Owns: the names and payload types. Byte fields use `serde_bytes` (the same
//! bytes on the wire as a `Vec<u8>`, copied in one go instead of per byte). Does not own: sockets or framing (the
//! `network` module and `buildat-format`).

use serde::{Deserialize, Serialize};

use crate::{Event, Host, HostError, ModuleError};

/// The network module's name, for `Host::call`.
pub const MODULE: &str = "network";

/// Peer ids are never reused within a server run.
pub type PeerId = u64;

/// Prefix of the event emitted for each received packet: the full name is
/// `network:packet_received/<packet name>`.
pub const PACKET_RECEIVED_PREFIX: &str = "network:packet_received/";

/// The event name for packets named `packet`.
pub fn packet_received_event(packet: &str) -> String {
    format!("{PACKET_RECEIVED_PREFIX}{packet}")
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClientConnected {
    pub peer: PeerId,
    pub address: String,
}
impl Event for ClientConnected {
    const NAME: &'static str = "network:client_connected";
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClientDisconnected {
    pub peer: PeerId,
    pub reason: String,
}
impl Event for ClientDisconnected {
    const NAME: &'static str = "network:client_disconnected";
}

/// Payload of `network:packet_received/<name>`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PacketReceived {
    pub peer: PeerId,
    #[serde(with = "serde_bytes")]
    pub data: Vec<u8>,
}

/// Call `send`: queue a packet to one peer; answers the peer's backlog (u64
/// bytes queued for it and not yet written to its socket), so bulk senders
/// can pace themselves below `network.max_queue_bytes`.
pub const SEND: &str = "send";
/// Call `send_batch`: queue several packets to one peer in one call (in
/// order); answers the peer's backlog like `send`.
pub const SEND_BATCH: &str = "send_batch";
/// Call `broadcast`: queue a packet to every peer; answers the count.
pub const BROADCAST: &str = "broadcast";
/// Call `list_peers`: answers `Vec<PeerInfo>`.
pub const LIST_PEERS: &str = "list_peers";
/// Call `disconnect`: close a peer's connection with a reason.
pub const DISCONNECT: &str = "disconnect";
/// Call `get_backlog`: answers a peer's backlog (as `send` does) without sending.
pub const GET_BACKLOG: &str = "get_backlog";
/// Call `listen_address`: answers the bound address as a string.
pub const LISTEN_ADDRESS: &str = "listen_address";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Send {
    pub peer: PeerId,
    pub name: String,
    #[serde(with = "serde_bytes")]
    pub data: Vec<u8>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutgoingPacket {
    pub name: String,
    #[serde(with = "serde_bytes")]
    pub data: Vec<u8>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SendBatch {
    pub peer: PeerId,
    pub packets: Vec<OutgoingPacket>,
}

/// Event `network:send_batches`: queue packets to peers without waiting
/// for an answer. A module sending often (a game answering pings, sharing
/// news every tick, streaming) emits this instead of calling `send`, so it
/// never waits on the network module's thread; packets to peers that left
/// are dropped. Callers that need the backlog (to pace bulk data) call
/// `send` or `send_batch`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SendBatches {
    pub batches: Vec<SendBatch>,
}
impl Event for SendBatches {
    const NAME: &'static str = "network:send_batches";
}

/// Queues packets to peers without waiting on the network module (emits
/// [`SendBatches`]); nothing to do for no batches.
pub fn queue(host: &Host, batches: Vec<SendBatch>) -> Result<(), HostError> {
    if batches.is_empty() {
        return Ok(());
    }
    host.emit(&SendBatches { batches })
}

/// Calls `broadcast`: one packet to every peer; answers how many.
pub fn broadcast(host: &Host, name: &str, data: Vec<u8>) -> Result<u64, ModuleError> {
    let request = Broadcast {
        name: name.to_string(),
        data,
    };
    host.call_typed(MODULE, BROADCAST, &request)
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Broadcast {
    pub name: String,
    #[serde(with = "serde_bytes")]
    pub data: Vec<u8>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Disconnect {
    pub peer: PeerId,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PeerInfo {
    pub peer: PeerId,
    pub address: String,
}

/// The packet a server sends before closing a connection on purpose (server
/// full, kicked): its data is the reason, UTF-8.
pub const DISCONNECT_PACKET: &str = "core:disconnect";
