//! `net_probe`: a test fixture module for the network tests and benchmark.
//!
//! Owns nothing a user sees: it echoes every `test:echo` packet back to its
//! sender, counts `test:count` packets (answering the call `count`, and a
//! `test:count_query` packet with a `test:count_reply` of the count), and
//! sleeps as long as a `test:stall` says (a module falling behind), and
//! logs connects and disconnects. Its packets are defined once, in
//! `buildat-test-net-probe-api` (`api/`), for the fixture, the tests and
//! the benchmark.

use buildat_format::Packet;
use buildat_interface::{Event, Host, Module, ModuleError, decode, export_module, log};
use buildat_network_api::{
    self as network, ClientConnected, ClientDisconnected, OutgoingPacket, PacketReceived,
    SendPacket,
};
use buildat_test_net_probe_api::{CountPacket, CountQuery, CountReply, Echo, Stall};

/// The `count` call: how many `test:count` packets arrived.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct Count {}

buildat_interface::calls! {
    module "net_probe";
    Count = "count" -> u64;
}

struct NetProbe {
    host: Host,
    counted: u64,
    echo_event: String,
    count_event: String,
    query_event: String,
    stall_event: String,
}

impl Module for NetProbe {
    fn create(host: Host) -> Result<Self, ModuleError> {
        Ok(Self {
            host,
            counted: 0,
            echo_event: network::packet_received_event(Echo::NAME),
            count_event: network::packet_received_event(CountPacket::NAME),
            query_event: network::packet_received_event(CountQuery::NAME),
            stall_event: network::packet_received_event(Stall::NAME),
        })
    }

    fn init(&mut self) -> Result<(), ModuleError> {
        self.host.sub_event(&self.echo_event)?;
        self.host.sub_event(&self.count_event)?;
        self.host.sub_event(&self.query_event)?;
        self.host.sub_event(&self.stall_event)?;
        self.host.sub_event(ClientConnected::NAME)?;
        self.host.sub_event(ClientDisconnected::NAME)?;
        Ok(())
    }

    fn event(&mut self, name: &str, payload: &[u8]) -> Result<(), ModuleError> {
        if name == self.echo_event {
            let packet: PacketReceived = decode(payload)?;
            let reply = SendPacket {
                peer: packet.peer,
                packet: OutgoingPacket::new(&Echo { data: packet.data })?,
            };
            if let Err(error) = self.host.call(&reply) {
                log::warn!("echo to peer {} failed: {error}", packet.peer);
            }
        } else if name == self.count_event {
            self.counted += 1;
        } else if name == self.query_event {
            let packet: PacketReceived = decode(payload)?;
            let reply = SendPacket {
                peer: packet.peer,
                packet: OutgoingPacket::new(&CountReply {
                    count: self.counted,
                })?,
            };
            self.host.call(&reply)?;
        } else if name == self.stall_event {
            let packet: PacketReceived = decode(payload)?;
            let stall = packet.packet::<Stall>()?;
            std::thread::sleep(std::time::Duration::from_millis(u64::from(
                stall.ms.min(10_000),
            )));
        } else if name == ClientConnected::NAME {
            let connected: ClientConnected = decode(payload)?;
            log::info!(
                "net_probe saw peer {} connect from {}",
                connected.peer,
                connected.address
            );
        } else if name == ClientDisconnected::NAME {
            let gone: ClientDisconnected = decode(payload)?;
            log::info!("net_probe saw peer {} leave: {}", gone.peer, gone.reason);
        }
        Ok(())
    }

    fn call(&mut self, function: &str, payload: &[u8]) -> Result<Vec<u8>, ModuleError> {
        buildat_interface::answer_calls!(function, payload, {
            Count => |_| Ok(self.counted),
        })
    }
}

export_module!(NetProbe);
