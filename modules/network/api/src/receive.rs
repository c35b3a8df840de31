//! Packets in a module's receive table, and the packet side of the test
//! kit.
//!
//! Owns: [`ReceivePackets`] (a packet's handler in a
//! [`buildat_interface::Receive`] table: the subscription to
//! `network:packet_received/NAME`, the decoding, and the one answer to a
//! malformed packet: its peer is disconnected, with the reason) and
//! [`testing`] (packets delivered to and sent by a module on
//! [`buildat_interface::testing::TestHost`]). Does not own: sockets,
//! framing or budgets (the network module).

use buildat_format::payload::Packet;
use buildat_interface::{ModuleError, Receive, log};

use crate::{Disconnect, PacketReceived, PeerId, received};

/// Receiving packets through a module's table.
pub trait ReceivePackets<M> {
    /// Handles packets `P` from peers. A packet whose payload does not
    /// decode as `P` never reaches `handler`: its peer is disconnected
    /// with "malformed NAME packet: ..." (the rule for every module's
    /// packets, kept here once).
    fn packet<P: Packet + 'static>(
        &mut self,
        handler: impl FnMut(&mut M, PeerId, P) -> Result<(), ModuleError> + 'static,
    ) -> &mut Self;
}

impl<M: 'static> ReceivePackets<M> for Receive<M> {
    fn packet<P: Packet + 'static>(
        &mut self,
        mut handler: impl FnMut(&mut M, PeerId, P) -> Result<(), ModuleError> + 'static,
    ) -> &mut Self {
        let host = self.host();
        self.event_named(
            received::<P>(),
            move |module, received: PacketReceived| match received.packet::<P>() {
                Ok(packet) => handler(module, received.peer, packet),
                Err(error) => {
                    let peer = received.peer;
                    let reason = format!("malformed {} packet: {error}", P::NAME);
                    log::info!("peer {peer}: {reason}; disconnecting it");
                    if let Err(error) = host.call(&Disconnect { peer, reason }) {
                        log::debug!("disconnecting peer {peer}: {error}");
                    }
                    Ok(())
                }
            },
        )
    }
}

/// Packets on the test kit: delivered to a module as the network module
/// would, and read back from what the module sent.
pub mod testing {
    use buildat_format::payload::Packet;
    use buildat_interface::testing::{TestHost, TestModule};
    use buildat_interface::{Module, ModuleError};

    use crate::{Broadcast, PacketReceived, PeerId, SendBatches, packet_received_event};

    /// Delivering packets to a module on the kit.
    pub trait DeliverPackets {
        /// Delivers `packet` from `peer` (an error if the module does not
        /// receive `P`).
        fn packet<P: Packet>(&mut self, peer: PeerId, packet: &P) -> Result<(), ModuleError>;

        /// Delivers `data` as a packet named `name` from `peer`, undecoded
        /// (malformed input).
        fn packet_bytes(
            &mut self,
            peer: PeerId,
            name: &str,
            data: &[u8],
        ) -> Result<(), ModuleError>;
    }

    impl<M: Module> DeliverPackets for TestModule<M> {
        fn packet<P: Packet>(&mut self, peer: PeerId, packet: &P) -> Result<(), ModuleError> {
            self.packet_bytes(peer, P::NAME, &packet.encode()?)
        }

        fn packet_bytes(
            &mut self,
            peer: PeerId,
            name: &str,
            data: &[u8],
        ) -> Result<(), ModuleError> {
            let event = PacketReceived {
                peer,
                data: data.to_vec(),
            };
            self.emit_raw(
                &packet_received_event(name),
                &buildat_interface::encode(&event)?,
            )
        }
    }

    /// Every `P` the module sent, to whom, in order: queued to one peer or
    /// several ([`SendBatches`]) or broadcast (peer 0). A `P` that does
    /// not decode is a test failure.
    pub fn sent<P: Packet>(kit: &TestHost) -> Vec<(PeerId, P)> {
        let read = |data: &[u8]| {
            P::decode(data).unwrap_or_else(|e| panic!("{} the module sent: {e}", P::NAME))
        };
        let mut out = Vec::new();
        for sends in kit.emitted::<SendBatches>() {
            for batch in &sends.batches {
                for packet in batch.packets.iter().filter(|p| p.name == P::NAME) {
                    out.push((batch.peer, read(&packet.data)));
                }
            }
            for multicast in sends.multicasts.iter().filter(|m| m.packet.name == P::NAME) {
                for peer in &multicast.peers {
                    out.push((*peer, read(&multicast.packet.data)));
                }
            }
        }
        for broadcast in kit.calls::<Broadcast>() {
            if broadcast.packet.name == P::NAME {
                out.push((0, read(&broadcast.packet.data)));
            }
        }
        out
    }

    /// The peers the module disconnected, with the reasons.
    pub fn disconnected(kit: &TestHost) -> Vec<(PeerId, String)> {
        kit.calls::<crate::Disconnect>()
            .into_iter()
            .map(|d| (d.peer, d.reason))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use buildat_interface::testing::TestHost;
    use buildat_interface::{Host, Module, Receive};
    use serde::{Deserialize, Serialize};

    use super::testing::{DeliverPackets, disconnected, sent};
    use super::*;

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    struct Hello {
        name: String,
    }
    buildat_format::bincode_packet!(Hello = "test:hello";);

    struct Greeter {
        host: Host,
        greeted: Vec<String>,
    }

    impl Module for Greeter {
        fn create(host: Host) -> Result<Self, ModuleError> {
            Ok(Self {
                host,
                greeted: Vec::new(),
            })
        }

        fn receive(table: &mut Receive<Self>) {
            table.packet(|greeter, peer, hello: Hello| {
                greeter.greeted.push(hello.name.clone());
                crate::queue_packet(&greeter.host, peer, &hello)
            });
        }
    }

    #[test]
    fn packets_reach_their_handler_and_a_malformed_one_drops_its_peer() {
        let kit = TestHost::new();
        kit.answer(|_: Disconnect| Ok(()));
        let mut greeter = kit.load::<Greeter>().unwrap();
        assert_eq!(kit.subscriptions(), vec![received::<Hello>()]);
        let hello = Hello { name: "ann".into() };
        greeter.packet(7, &hello).unwrap();
        assert_eq!(greeter.module().greeted, ["ann"]);
        assert_eq!(sent::<Hello>(&kit), vec![(7, hello)]);

        greeter.packet_bytes(8, "test:hello", &[0xff]).unwrap();
        assert_eq!(greeter.module().greeted.len(), 1);
        let dropped = disconnected(&kit);
        assert_eq!(dropped.len(), 1);
        assert_eq!(dropped[0].0, 8);
        assert!(
            dropped[0].1.starts_with("malformed test:hello packet"),
            "{dropped:?}"
        );
    }
}
