//! `buildat-network-api`: the `network` module's public API, shared by every
//! module that talks to players, the client, tests and tools.
//!
//! Owns: the events (`network:client_connected`, `network:client_disconnected`,
//! `network:packet_received/<packet name>`, `network:send_batches`), the typed
//! calls ([`SendPacket`], [`SendBatch`], [`SendShared`], [`Broadcast`], [`ListPeers`],
//! [`Disconnect`], [`GetBacklog`], [`ListenAddress`], [`GetStats`]). Byte
//! fields use `serde_bytes` (the same bytes on the wire as a `Vec<u8>`,
//! copied in one go instead of per byte). Re-exports `buildat-network-protocol`
//! (peer ids, the `core:disconnect` packet, [`address`], [`tls`]), which
//! the client uses without this crate. Does not own: sockets or framing
//! (the `network` module and `buildat-format`).
//!
//! Versioned on its own: a change here rebuilds the modules that depend on
//! it (and only them) when they are next loaded or reloaded.

use buildat_format::payload::{Packet, PayloadError};
use buildat_interface::{Event, Host, ModuleError, SharedBytes};
use serde::{Deserialize, Serialize};

/// The network module's name.
pub const MODULE: &str = "network";

pub use buildat_network_protocol::{DisconnectPacket, PeerId, address, tls};

pub mod receive;
pub use receive::ReceivePackets;

/// Prefix of the event emitted for each received packet: the full name is
/// `network:packet_received/<packet name>`.
pub const PACKET_RECEIVED_PREFIX: &str = "network:packet_received/";

/// The event name for received packets named `packet`.
pub fn packet_received_event(packet: &str) -> String {
    format!("{PACKET_RECEIVED_PREFIX}{packet}")
}

/// The event name for received packets of type `P`: subscribe to it and
/// read the payload with [`PacketReceived::packet`].
pub fn received<P: Packet>() -> String {
    packet_received_event(P::NAME)
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

impl PacketReceived {
    /// The received packet's payload as `P`.
    pub fn packet<P: Packet>(&self) -> Result<P, PayloadError> {
        P::decode(&self.data)
    }
}

/// One packet ready to queue: its name and payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutgoingPacket {
    pub name: String,
    #[serde(with = "serde_bytes")]
    pub data: Vec<u8>,
}

impl OutgoingPacket {
    /// A packet already encoded, under `name`.
    pub fn named(name: impl Into<String>, data: impl Into<Vec<u8>>) -> Self {
        Self {
            name: name.into(),
            data: data.into(),
        }
    }

    /// Encodes `packet` by its definition.
    pub fn new<P: Packet>(packet: &P) -> Result<Self, PayloadError> {
        Ok(Self {
            name: P::NAME.to_string(),
            data: packet.encode()?,
        })
    }
}

/// Call `send`: queue a packet to one peer; answers the peer's backlog
/// (bytes queued for it and not yet written to its socket), so bulk senders
/// can pace themselves below `network.max_queue_bytes`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SendPacket {
    pub peer: PeerId,
    pub packet: OutgoingPacket,
}

/// Call `send_batch`: queue several packets to one peer in one call, in
/// order; answers the peer's backlog like [`SendPacket`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SendBatch {
    pub peer: PeerId,
    pub packets: Vec<OutgoingPacket>,
}

/// One packet whose payload is `head` then `body`, where `body` is bulk
/// bytes shared by reference ([`SharedBytes`]: a file's content, say).
/// The network module keeps the reference until the frame is written, so
/// the bytes are copied once, into the socket's buffer, however many
/// peers they go to. The peer sees one ordinary packet. With no body, the
/// head is the whole payload (so one call can carry a transfer's other
/// packets in order with its pieces).
#[derive(Debug, PartialEq, Serialize, Deserialize)]
pub struct SharedPacket {
    pub name: String,
    #[serde(with = "serde_bytes")]
    pub head: Vec<u8>,
    pub body: Option<SharedBytes>,
}

impl SharedPacket {
    /// `packet` encoded whole by its definition, with no shared body.
    pub fn whole<P: Packet>(packet: &P) -> Result<Self, PayloadError> {
        Ok(Self {
            name: P::NAME.to_string(),
            head: packet.encode()?,
            body: None,
        })
    }

    /// The payload's length.
    pub fn len(&self) -> usize {
        self.head.len() + self.body.as_ref().map_or(0, |body| body.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Call `send_shared`: queue packets with shared bodies to one peer, in
/// order; answers the peer's backlog like [`SendPacket`]. A call, not an event:
/// a shared body stays alive only while its sender holds it (see
/// `buildat_interface::shared`).
#[derive(Debug, PartialEq, Serialize, Deserialize)]
pub struct SendShared {
    pub peer: PeerId,
    pub packets: Vec<SharedPacket>,
}

/// Call `broadcast`: queue a packet to every peer; answers how many.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Broadcast {
    pub packet: OutgoingPacket,
}

/// Call `list_peers`: every connected peer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ListPeers {}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PeerInfo {
    pub peer: PeerId,
    pub address: String,
}

/// Call `disconnect`: close a peer's connection, telling it why
/// ([`DisconnectPacket`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Disconnect {
    pub peer: PeerId,
    pub reason: String,
}

/// Call `get_backlog`: a peer's backlog (as [`SendPacket`] answers) without sending.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GetBacklog {
    pub peer: PeerId,
}

/// Call `listen_address`: the bound address.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ListenAddress {}

/// Call `get_stats`: the traffic counted since the server started (carried
/// across `reload network`), for operators' dashboards.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GetStats {}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetworkStats {
    /// Peers connected now.
    pub peers: u64,
    /// Connections admitted (refused ones are not counted).
    pub connections: u64,
    /// Packets delivered to modules (packet-type definitions not counted).
    pub packets_in: u64,
    /// Bytes read from peers' sockets.
    pub bytes_in: u64,
    /// Packets queued to peers.
    pub packets_out: u64,
    /// Bytes written to peers' sockets.
    pub bytes_out: u64,
}

buildat_interface::calls! {
    module MODULE;
    SendPacket = "send" -> u64;
    SendBatch = "send_batch" -> u64;
    SendShared = "send_shared" -> u64;
    Broadcast = "broadcast" -> u64;
    ListPeers = "list_peers" -> Vec<PeerInfo>;
    Disconnect = "disconnect" -> ();
    GetBacklog = "get_backlog" -> u64;
    ListenAddress = "listen_address" -> String;
    GetStats = "get_stats" -> NetworkStats;
}

/// Event `network:send_batches`: queue packets to peers without waiting
/// for an answer. A module sending often (a game answering pings, sharing
/// news every tick, streaming) emits this instead of calling [`SendPacket`], so it
/// never waits on the network module's thread; packets to peers that left
/// are dropped. Callers that need the backlog (to pace bulk data) call
/// [`SendPacket`] or [`SendBatch`].
///
/// A packet that goes to many peers alike (news shared by the players in
/// one place) is a [`Multicast`]: encoded and carried once, queued to each.
/// The batches are queued first, then the multicasts.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SendBatches {
    pub batches: Vec<SendBatch>,
    pub multicasts: Vec<Multicast>,
}
impl Event for SendBatches {
    const NAME: &'static str = "network:send_batches";
}

impl SendBatches {
    /// Nothing to send.
    pub fn is_empty(&self) -> bool {
        self.batches.is_empty() && self.multicasts.is_empty()
    }

    /// The same sends as several, each for at most `max_peers` peers (in
    /// the order they first appear); a multicast reaching peers of several
    /// parts is carried, copied, in each. Each peer gets what it got
    /// before, in the same order, all from one part. Unsplit when it is
    /// that small already.
    pub fn split_by_peers(self, max_peers: usize) -> Vec<SendBatches> {
        let max_peers = max_peers.max(1);
        let mut part_of: std::collections::HashMap<PeerId, usize> =
            std::collections::HashMap::new();
        let peers = self
            .batches
            .iter()
            .map(|batch| batch.peer)
            .chain(self.multicasts.iter().flat_map(|m| m.peers.iter().copied()));
        for peer in peers {
            let next = part_of.len() / max_peers;
            part_of.entry(peer).or_insert(next);
        }
        let parts = part_of.len().div_ceil(max_peers);
        if parts <= 1 {
            return vec![self];
        }
        let mut split = vec![SendBatches::default(); parts];
        for batch in self.batches {
            split[part_of[&batch.peer]].batches.push(batch);
        }
        for multicast in self.multicasts {
            let mut peers_by_part = vec![Vec::new(); parts];
            for peer in multicast.peers {
                peers_by_part[part_of[&peer]].push(peer);
            }
            for (part, peers) in peers_by_part.into_iter().enumerate() {
                if !peers.is_empty() {
                    split[part].multicasts.push(Multicast {
                        peers,
                        packet: multicast.packet.clone(),
                    });
                }
            }
        }
        split
    }
}

/// One packet to several peers, its payload shared by all of them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Multicast {
    pub peers: Vec<PeerId>,
    pub packet: OutgoingPacket,
}

/// [`SendBatches`] as the network module reads it: the same encoding,
/// with every name and payload borrowed from the event's bytes instead of
/// copied into a `String` and a `Vec` of its own (a tick's sends to a
/// thousand players are thousands of packets). Senders encode
/// [`SendBatches`]; this is only decoded.
#[derive(Debug, PartialEq, Deserialize)]
pub struct SendBatchesView<'a> {
    #[serde(borrow)]
    pub batches: Vec<SendBatchView<'a>>,
    #[serde(borrow)]
    pub multicasts: Vec<MulticastView<'a>>,
}

/// A [`SendBatch`] inside a [`SendBatchesView`].
#[derive(Debug, PartialEq, Deserialize)]
pub struct SendBatchView<'a> {
    pub peer: PeerId,
    #[serde(borrow)]
    pub packets: Vec<PacketView<'a>>,
}

/// A [`Multicast`] inside a [`SendBatchesView`].
#[derive(Debug, PartialEq, Deserialize)]
pub struct MulticastView<'a> {
    pub peers: Vec<PeerId>,
    #[serde(borrow)]
    pub packet: PacketView<'a>,
}

/// An [`OutgoingPacket`] borrowed from the bytes it was decoded from.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
pub struct PacketView<'a> {
    pub name: &'a str,
    #[serde(with = "serde_bytes")]
    pub data: &'a [u8],
}

impl<'a> From<&'a OutgoingPacket> for PacketView<'a> {
    fn from(packet: &'a OutgoingPacket) -> Self {
        Self {
            name: &packet.name,
            data: &packet.data,
        }
    }
}

/// Queues packets to peers without waiting on the network module (emits
/// [`SendBatches`]); nothing to do for no batches.
pub fn queue(host: &Host, batches: Vec<SendBatch>) -> Result<(), ModuleError> {
    queue_sends(
        host,
        SendBatches {
            batches,
            multicasts: Vec::new(),
        },
    )
}

/// Queues packets each to several peers without waiting (see [`queue`]
/// and [`Multicast`]); nothing to do for none.
pub fn queue_multicasts(host: &Host, multicasts: Vec<Multicast>) -> Result<(), ModuleError> {
    queue_sends(
        host,
        SendBatches {
            batches: Vec::new(),
            multicasts,
        },
    )
}

/// Peers one [`SendBatches`] event reaches at most: a tick's sends to a
/// thousand players are several events, so a packet another module queues
/// meanwhile (a pong) waits behind one part on the network module's
/// thread, not behind the whole tick.
pub const MAX_PEERS_PER_EVENT: usize = 128;

/// Queues batches, then multicasts, without waiting (emits `sends`, in
/// parts of at most [`MAX_PEERS_PER_EVENT`] peers); nothing to do when it
/// is empty.
pub fn queue_sends(host: &Host, sends: SendBatches) -> Result<(), ModuleError> {
    if sends.is_empty() {
        return Ok(());
    }
    for part in sends.split_by_peers(MAX_PEERS_PER_EVENT) {
        host.emit(&part)?;
    }
    Ok(())
}

/// Queues one packet to one peer without waiting (see [`queue`]).
pub fn queue_packet<P: Packet>(host: &Host, peer: PeerId, packet: &P) -> Result<(), ModuleError> {
    queue(
        host,
        vec![SendBatch {
            peer,
            packets: vec![OutgoingPacket::new(packet)?],
        }],
    )
}

/// Sends one packet to every peer; answers how many.
pub fn broadcast<P: Packet>(host: &Host, packet: &P) -> Result<u64, ModuleError> {
    host.call(&Broadcast {
        packet: OutgoingPacket::new(packet)?,
    })
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use super::*;

    /// A peer's packets as (name, payload), in order.
    type Received = Vec<(String, Vec<u8>)>;

    /// What each peer gets from `sends`, in order, and in how many parts.
    fn per_peer(parts: &[SendBatches]) -> BTreeMap<PeerId, (Received, usize)> {
        let mut got: BTreeMap<PeerId, (Received, BTreeSet<usize>)> = BTreeMap::new();
        for (index, part) in parts.iter().enumerate() {
            let mut add = |peer: PeerId, packet: &OutgoingPacket| {
                let entry = got.entry(peer).or_default();
                entry.0.push((packet.name.clone(), packet.data.clone()));
                entry.1.insert(index);
            };
            for batch in &part.batches {
                batch
                    .packets
                    .iter()
                    .for_each(|packet| add(batch.peer, packet));
            }
            for multicast in &part.multicasts {
                multicast
                    .peers
                    .iter()
                    .for_each(|peer| add(*peer, &multicast.packet));
            }
        }
        got.into_iter()
            .map(|(peer, (packets, parts))| (peer, (packets, parts.len())))
            .collect()
    }

    #[test]
    fn sends_split_by_peers_keep_each_peers_packets_in_order() {
        let sends = SendBatches {
            batches: (1..=10)
                .chain([3, 7])
                .map(|peer| SendBatch {
                    peer,
                    packets: vec![OutgoingPacket::named("a:b", vec![peer as u8])],
                })
                .collect(),
            multicasts: vec![
                Multicast {
                    peers: (1..=12).rev().collect(),
                    packet: OutgoingPacket::named("a:news", b"n1".to_vec()),
                },
                Multicast {
                    peers: vec![2, 11],
                    packet: OutgoingPacket::named("a:news", b"n2".to_vec()),
                },
            ],
        };
        let whole = per_peer(std::slice::from_ref(&sends));
        let parts = sends.clone().split_by_peers(4);
        assert_eq!(parts.len(), 3, "12 peers, 4 a part");
        for part in &parts {
            let peers: BTreeSet<PeerId> = part
                .batches
                .iter()
                .map(|b| b.peer)
                .chain(part.multicasts.iter().flat_map(|m| m.peers.clone()))
                .collect();
            assert!(peers.len() <= 4, "{peers:?}");
        }
        let split = per_peer(&parts);
        assert_eq!(split.len(), 12);
        for (peer, (packets, in_parts)) in &split {
            assert_eq!(in_parts, &1, "peer {peer} in one part");
            assert_eq!(packets, &whole[peer].0, "peer {peer}");
        }
        assert_eq!(sends.clone().split_by_peers(12), vec![sends]);
    }

    #[test]
    fn packets_and_events_are_named_by_their_definitions() {
        assert_eq!(
            received::<DisconnectPacket>(),
            "network:packet_received/core:disconnect"
        );
        let packet = DisconnectPacket {
            reason: "server full".into(),
        };
        let outgoing = OutgoingPacket::new(&packet).unwrap();
        assert_eq!(outgoing.name, "core:disconnect");
        assert_eq!(outgoing.data, b"server full");
        let received = PacketReceived {
            peer: 1,
            data: outgoing.data,
        };
        assert_eq!(received.packet::<DisconnectPacket>().unwrap(), packet);
    }

    #[test]
    fn the_view_of_send_batches_reads_what_senders_encode() {
        let packet = |name: &str, data: &[u8]| OutgoingPacket::named(name, data);
        let sent = SendBatches {
            batches: vec![
                SendBatch {
                    peer: 7,
                    packets: vec![packet("main:a", b"one"), packet("main:b", b"")],
                },
                SendBatch {
                    peer: 9,
                    packets: Vec::new(),
                },
            ],
            multicasts: vec![Multicast {
                peers: vec![1, 2, 3],
                packet: packet("main:edits", &[0, 255, 7]),
            }],
        };
        let bytes = buildat_interface::encode(&sent).unwrap();
        let view: SendBatchesView = buildat_format::payload::decode_borrowed(&bytes).unwrap();
        let expected = SendBatchesView {
            batches: sent
                .batches
                .iter()
                .map(|batch| SendBatchView {
                    peer: batch.peer,
                    packets: batch.packets.iter().map(PacketView::from).collect(),
                })
                .collect(),
            multicasts: sent
                .multicasts
                .iter()
                .map(|multicast| MulticastView {
                    peers: multicast.peers.clone(),
                    packet: PacketView::from(&multicast.packet),
                })
                .collect(),
        };
        assert_eq!(view, expected);
        // A cut event is an error, not a panic.
        for end in 0..bytes.len() {
            let cut = bytes.get(..end).unwrap_or_default();
            assert!(buildat_format::payload::decode_borrowed::<SendBatchesView>(cut).is_err());
        }
    }
}
