//! `net_probe`: a test fixture module for the network tests and benchmark.
//!
//! Owns nothing a user sees: it echoes every `test:echo` packet back to its
//! sender, counts `test:count` packets (answering the call `count`, and a
//! `test:count_query` packet with a `test:count_reply` of the count), and
//! sleeps as long as a `test:stall` says (a module falling behind), and
//! logs connects and disconnects; with `net_probe.start_delay_ms` its
//! `core:start` takes that long (a module slow to load, or to build, on a
//! first start); all through its receive table (a
//! `test:stall` that does not decode disconnects its peer, as any module's
//! malformed packet does). Its packets are defined once, in
//! `buildat-test-net-probe-api` (`api/`), for the fixture, the tests and
//! the benchmark.

use buildat_interface::settings::Settings;
use buildat_interface::{Host, Module, ModuleError, Receive, events, export_module, log};
use buildat_network_api::{
    ClientConnected, ClientDisconnected, OutgoingPacket, PeerId, ReceivePackets, SendPacket,
};
use buildat_test_net_probe_api::{CountPacket, CountQuery, CountReply, Echo, Stall};

/// The `count` call: how many `test:count` packets arrived.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct Count {}

buildat_interface::calls! {
    module "net_probe";
    Count = "count" -> u64;
}

buildat_interface::settings! {
    /// The fixture's settings (`--set net_probe.KEY=VALUE`).
    struct NetProbeSettings in "net_probe" {
        /// Milliseconds `core:start` sleeps.
        start_delay_ms: u64 = 0,
    }
}

struct NetProbe {
    host: Host,
    counted: u64,
}

impl NetProbe {
    fn echo(&mut self, peer: PeerId, echo: Echo) -> Result<(), ModuleError> {
        let reply = SendPacket {
            peer,
            packet: OutgoingPacket::new(&echo)?,
        };
        if let Err(error) = self.host.call(&reply) {
            log::warn!("echo to peer {peer} failed: {error}");
        }
        Ok(())
    }

    fn answer_query(&mut self, peer: PeerId) -> Result<(), ModuleError> {
        let reply = SendPacket {
            peer,
            packet: OutgoingPacket::new(&CountReply {
                count: self.counted,
            })?,
        };
        self.host.call(&reply)?;
        Ok(())
    }
}

impl Module for NetProbe {
    fn create(host: Host) -> Result<Self, ModuleError> {
        Ok(Self { host, counted: 0 })
    }

    fn receive(table: &mut Receive<Self>) {
        table
            .settings::<NetProbeSettings>()
            .event(|probe, _: events::Start| {
                let settings = NetProbeSettings::read(&probe.host)?;
                std::thread::sleep(std::time::Duration::from_millis(settings.start_delay_ms));
                Ok(())
            })
            .packet(|probe, peer, echo: Echo| probe.echo(peer, echo))
            .packet(|probe, _, _: CountPacket| {
                probe.counted += 1;
                Ok(())
            })
            .packet(|probe, peer, _: CountQuery| probe.answer_query(peer))
            .packet(|_, _, stall: Stall| {
                std::thread::sleep(std::time::Duration::from_millis(u64::from(
                    stall.ms.min(10_000),
                )));
                Ok(())
            })
            .event(|_, connected: ClientConnected| {
                log::info!(
                    "net_probe saw peer {} connect from {}",
                    connected.peer,
                    connected.address
                );
                Ok(())
            })
            .event(|_, gone: ClientDisconnected| {
                log::info!("net_probe saw peer {} leave: {}", gone.peer, gone.reason);
                Ok(())
            })
            .call(|probe, _: Count| Ok(probe.counted));
    }
}

export_module!(NetProbe);
