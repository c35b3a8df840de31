//! `replicate`: tells each client about the dynamic nodes near it.
//!
//! Owns: interest management and the `replicate:nodes` stream
//! (`interest.rs`): a client knows the nodes within `replicate.radius`
//! voxels of its viewer (rounded up to 32-voxel cells; the settings and
//! their defaults are declared in `ReplicateSettings`), is
//! told when one enters (its whole state), changes (a delta) or leaves,
//! once a tick in one packet, positions quantised to 1/64 voxel, stamped
//! with the server's time for interpolation; at most the nearest
//! `replicate.max_known` nodes at once; the changes of a
//! node within `replicate.full_rate_radius` voxels every
//! tick, within twice that every 2nd tick, further every 4th. It listens to the world's
//! `voxelworld:nodes_changed` (what changed) and `voxelworld:viewer_moved` and `viewers_moved`
//! (where each client looks from), and `network:client_disconnected`. Its
//! calls (`buildat-replicate-api`): the peers knowing a node, a forced
//! resend, statistics; the console command `replicate` prints them. What
//! it knows crosses `reload replicate`; loaded later than the world, it
//! starts from the world's loaded nodes.
//! Does not own: the nodes or their motion (`voxelworld` and the modules
//! moving them), sockets (`network`), what a client draws.

pub mod interest;

use std::time::{SystemTime, UNIX_EPOCH};

use buildat_format::Packet;
use buildat_interface::settings::Settings as _;
use buildat_interface::{
    Host, Module, ModuleError, Receive, UnloadKind, clap, events, export_module, log,
};
use buildat_network_api::{self as network, ClientDisconnected, OutgoingPacket, SendBatch};
use buildat_replicate_api::{ForceSync, GetStats, KnowingPeers, NodeUpdates};
use buildat_voxelworld_api::{GetNode, ListNodes, NodesChanged, Viewer, Viewers};
use interest::{DEFAULT_FULL_RATE_RADIUS, Replicator};

buildat_interface::settings! {
    /// What operators set (`--set replicate.KEY=VALUE`).
    struct ReplicateSettings in "replicate" {
        /// Voxels around a client's viewer within which it knows the nodes (rounded up to 32-voxel cells).
        radius: f64 = 96.0,
        /// Most nodes a client knows at once, the nearest (at least 1).
        max_known: usize = 256,
        /// Voxels within which a client is told every change of a node; further, every 2nd or 4th tick (inf: all).
        full_rate_radius: f64 = DEFAULT_FULL_RATE_RADIUS,
    }
}

/// The console and chat command `replicate`.
#[derive(clap::Parser)]
#[command(name = "replicate", about = "what replication tracks and has sent")]
struct Report {}

struct Replicate {
    host: Host,
    replicator: Replicator,
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

impl Replicate {
    fn send_updates(&mut self) -> Result<(), ModuleError> {
        let out = self
            .replicator
            .tick(now_ms())
            .map_err(|e| ModuleError::msg(format!("encoding replicate:nodes: {e}")))?;
        let batches = out
            .into_iter()
            .map(|(peer, data)| SendBatch {
                peer,
                packets: vec![OutgoingPacket::named(NodeUpdates::NAME, data)],
            })
            .collect();
        // An event, not a call: replication never waits on sockets.
        network::queue(&self.host, batches)
    }

    /// On `core:start` and `core:continue`: what the previous version knew,
    /// or else the world's loaded nodes.
    fn start(&mut self) -> Result<(), ModuleError> {
        if let Some(stash) = self.host.take_stash::<ReplicateStash>()? {
            self.replicator = stash.replicator;
            log::info!("resumed: {}", self.describe());
        } else {
            for node in self.host.call(&ListNodes::default())? {
                self.replicator.node_changed(&node);
            }
        }
        Ok(())
    }

    fn nodes_changed(&mut self, changes: NodesChanged) -> Result<(), ModuleError> {
        for node in &changes.changed {
            self.replicator.node_changed(node);
        }
        for motion in &changes.moved {
            // A node moved before this module knew it (loaded between the
            // world's list and its first event).
            if !self.replicator.node_moved(motion)
                && let Some(node) = self.host.call(&GetNode { id: motion.id })?
            {
                self.replicator.node_changed(&node);
            }
        }
        for id in changes.removed {
            self.replicator.node_removed(id);
        }
        Ok(())
    }

    fn describe(&self) -> String {
        let s = self.replicator.stats();
        let [full, half, quarter] = s.known_by_rate;
        format!(
            "replicate: {} nodes, {} peers ({} crowded), {} known ({full} told every tick, \
             {half} every 2nd, {quarter} every 4th), {} packets / {} bytes sent",
            s.nodes, s.peers, s.crowded, s.known, s.packets_sent, s.bytes_sent
        )
    }
}

impl Module for Replicate {
    fn create(host: Host) -> Result<Self, ModuleError> {
        let ReplicateSettings {
            radius,
            max_known,
            full_rate_radius,
        } = ReplicateSettings::read(&host)?;
        if max_known == 0 {
            return Err(ModuleError::msg(
                "setting replicate.max_known: 0 would tell clients nothing; at least 1",
            ));
        }
        if full_rate_radius.is_nan() || full_rate_radius < 0.0 {
            return Err(ModuleError::msg(format!(
                "setting replicate.full_rate_radius: {full_rate_radius} is not a distance; \
                 0 or more voxels (inf: every change to every client)"
            )));
        }
        Ok(Self {
            host,
            replicator: Replicator::new(radius, max_known, full_rate_radius),
        })
    }

    fn receive(table: &mut Receive<Self>) {
        table
            .settings::<ReplicateSettings>()
            .event(|replicate, _: events::Start| replicate.start())
            .event(|replicate, _: events::Continue| replicate.start())
            .event(|replicate, changes: NodesChanged| replicate.nodes_changed(changes))
            .event(|replicate, viewer: Viewer| {
                replicate
                    .replicator
                    .set_viewer(viewer.peer, viewer.position);
                Ok(())
            })
            .event(|replicate, moved: Viewers| {
                for viewer in moved.viewers {
                    replicate
                        .replicator
                        .set_viewer(viewer.peer, viewer.position);
                }
                Ok(())
            })
            .event(|replicate, gone: ClientDisconnected| {
                replicate.replicator.remove_peer(gone.peer);
                Ok(())
            })
            .event(|replicate, _: events::Tick| replicate.send_updates())
            .call(|replicate, request: KnowingPeers| {
                Ok(replicate.replicator.knowing_peers(request.node))
            })
            .call(|replicate, request: ForceSync| {
                replicate.replicator.force_sync(request.node);
                Ok(())
            })
            .call(|replicate, _: GetStats| Ok(replicate.replicator.stats()))
            .command(Some("server"), |replicate, _, _: Report| {
                Ok(replicate.describe())
            });
    }

    fn unload(&mut self, kind: UnloadKind) -> Result<(), ModuleError> {
        if kind == UnloadKind::Reload {
            self.host.store_stash(&ReplicateStash {
                replicator: self.replicator.clone(),
            })?;
        }
        Ok(())
    }
}

/// What crosses a reload: who knows what, so nobody is told twice.
#[derive(serde::Serialize, serde::Deserialize)]
struct ReplicateStash {
    replicator: Replicator,
}

impl buildat_interface::Stash for ReplicateStash {
    const LAYOUT: u32 = 3;
}

export_module!(Replicate);

#[cfg(test)]
mod tests {
    use buildat_interface::settings::Settings as _;

    use super::*;

    #[test]
    fn on_the_kit_a_viewer_is_told_of_the_nodes_near_it_each_tick() {
        use std::collections::BTreeMap;

        use buildat_interface::testing::TestHost;
        use buildat_network_api::receive::testing::sent;
        use buildat_voxelworld_api::DynamicNode;

        let kit = TestHost::new();
        kit.answer(|_: ListNodes| {
            let near = DynamicNode::at_rest(1, [10.0, 0.0, 10.0], false, BTreeMap::new());
            let far = DynamicNode::at_rest(2, [5000.0, 0.0, 10.0], false, BTreeMap::new());
            Ok(vec![near, far])
        });
        let mut replicate = kit.load::<Replicate>().unwrap();
        let registered = kit.commands();
        assert_eq!(registered.len(), 1);
        assert_eq!(registered[0].name, "replicate");
        assert_eq!(registered[0].privilege.as_deref(), Some("server"));
        let viewer = Viewer {
            peer: 5,
            position: [0.0; 3],
        };
        replicate.emit(&viewer).unwrap();
        replicate.emit(&events::Tick { dtime: 0.1 }).unwrap();
        let told = sent::<NodeUpdates>(&kit);
        assert_eq!(told.len(), 1);
        assert_eq!(told[0].0, 5);
        let added: Vec<u64> = told[0].1.added.iter().map(|n| n.id).collect();
        assert_eq!(added, [1], "the near node, not the far one");
        assert_eq!(
            replicate.call(&KnowingPeers { node: 1 }).unwrap(),
            [5],
            "the call through the table"
        );

        kit.clear();
        let removed = NodesChanged {
            changed: Vec::new(),
            moved: Vec::new(),
            removed: vec![1],
        };
        replicate.emit(&removed).unwrap();
        replicate.emit(&events::Tick { dtime: 0.1 }).unwrap();
        let told = sent::<NodeUpdates>(&kit);
        assert_eq!(told.len(), 1);
        assert_eq!(told[0].1.removed, [1]);

        let report = replicate.command("replicate", &[], Some("admin")).unwrap();
        assert!(
            report.starts_with("replicate: 1 nodes, 1 peers"),
            "{report}"
        );

        // What it knows crosses a reload: no second list, the peer still known.
        let listed = kit.calls::<ListNodes>().len();
        let mut replicate = replicate.reload::<Replicate>().unwrap();
        assert_eq!(kit.calls::<ListNodes>().len(), listed);
        assert_eq!(replicate.call(&GetStats {}).unwrap().peers, 1);
        let gone = ClientDisconnected {
            peer: 5,
            reason: String::new(),
        };
        replicate.emit(&gone).unwrap();
        assert_eq!(replicate.call(&GetStats {}).unwrap().peers, 0);
    }

    #[test]
    fn settings_are_declared_with_their_defaults() {
        let declared = ReplicateSettings::describe();
        let defaults: Vec<(&str, &str)> = declared
            .iter()
            .map(|s| (s.key.as_str(), s.default.as_str()))
            .collect();
        assert_eq!(
            defaults,
            [
                ("replicate.radius", "96"),
                ("replicate.max_known", "256"),
                ("replicate.full_rate_radius", "16")
            ]
        );
        let set = ReplicateSettings::read_with(|key| {
            (key == "replicate.full_rate_radius").then(|| "inf".to_string())
        })
        .unwrap();
        assert!(set.full_rate_radius.is_infinite());
        assert_eq!(set.radius, 96.0);
    }
}
