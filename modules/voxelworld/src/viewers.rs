//! The module's side of streaming (`stream.rs`): viewers moved where the
//! game says, a pump of what each viewer's budget allows (after each move,
//! ack, commit and tick), the packets queued to the network without
//! waiting on it, and what a relight changed queued for its holders.
//!
//! Owns: when the stream is pumped and how its packets go out (the
//! registry and changes before the chunks sent whole). Does not own: what
//! each viewer holds or is sent next (`stream.rs`).

use super::*;

impl VoxelWorld {
    /// Relights what changed since the last tick (edits, generated and
    /// loaded chunks, all at once; a slice of it when it is much) and
    /// queues the changed light for the chunks' holders (the tick's pump
    /// sends it).
    pub(crate) fn relight(&mut self) {
        let relit = match self.world.relight(Instant::now() + WORK_SLICE) {
            Ok(relit) => relit,
            Err(error) => {
                if let Some(suppressed) = self.stream_log.allow((), Instant::now()) {
                    log::error!("relighting: {error}{}", suppressed_note(suppressed));
                }
                return;
            }
        };
        let mut holders = BTreeSet::new();
        for (chunk, light) in relit {
            match stream::encode_light_packet(chunk, &light) {
                Ok(packet) => {
                    self.streamer
                        .light_changed(chunk, std::sync::Arc::new(packet), &mut holders)
                }
                Err(error) => log::debug!("light of chunk {chunk:?}: {error}"),
            }
        }
    }

    /// Sends each viewer what its budget allows and asks for the sections
    /// it waits on; relighting left for later is done later too.
    pub(crate) fn pump(&mut self) -> Result<(), ModuleError> {
        if self.world.light_pending() {
            self.more_work_later()?;
        }
        self.pump_viewers(None)
    }

    /// Asks for a [`MoreWork`] (unless one is on its way).
    pub(crate) fn more_work_later(&mut self) -> Result<(), ModuleError> {
        if !self.more_work_pending {
            self.more_work_pending = true;
            self.host.emit(&MoreWork {})?;
        }
        Ok(())
    }

    /// [`Self::pump`] for `only` those viewers, or every viewer.
    pub(crate) fn pump_viewers(&mut self, only: Option<&[PeerId]>) -> Result<(), ModuleError> {
        if self.streamer.viewer_count() == 0 {
            return Ok(());
        }
        let registry = match &mut self.registry_packet {
            Some(registry) => registry,
            None => self.registry_packet.insert(
                Registry {
                    voxels: self.world.voxels.clone(),
                }
                .encode()?,
            ),
        };
        let deadline = Instant::now() + WORK_SLICE;
        let outbox = self
            .streamer
            .pump(&mut self.world, registry, only, deadline);
        if outbox.unfinished {
            self.more_work_later()?;
        }
        if let Some(error) = &outbox.failure
            && let Some(suppressed) = self.stream_log.allow((), Instant::now())
        {
            log::error!(
                "streaming: {error}; the chunks it concerns are sent once they can be read{}",
                suppressed_note(suppressed)
            );
        }
        for (section, distance) in outbox.generate {
            self.request_generation(section, Some(distance))?;
        }
        // Two events, so every peer gets the registry and the changes
        // before the chunks (the network queues an event's batches, then its
        // multicasts): an update after a chunk sent whole with it, or with a
        // newer change, would set a voxel back.
        let batches = |packets: Vec<(PeerId, Vec<OutgoingPacket>)>| {
            packets
                .into_iter()
                .map(|(peer, packets)| SendBatch { peer, packets })
                .collect()
        };
        let multicasts = |alike: Vec<stream::Alike>| {
            alike
                .into_iter()
                .map(|alike| Multicast {
                    peers: alike.peers,
                    packet: OutgoingPacket::named(alike.name, Arc::unwrap_or_clone(alike.data)),
                })
                .collect()
        };
        self.send(SendBatches {
            batches: batches(outbox.first),
            multicasts: multicasts(outbox.alike),
        });
        // The chunks sent whole: each once for all the peers it goes to.
        self.send(SendBatches {
            batches: Vec::new(),
            multicasts: multicasts(outbox.packets),
        });
        Ok(())
    }

    /// Queues packets to peers without waiting on the network module.
    pub(crate) fn send(&self, sends: SendBatches) {
        if let Err(error) = network::queue_sends(&self.host, sends) {
            log::debug!("streaming: {error}");
        }
    }

    pub(crate) fn set_viewer(&mut self, viewer: Viewer) -> Result<(), ModuleError> {
        self.set_viewers(vec![viewer])
    }

    /// Moves each viewer (one whose position is out of the world is
    /// refused, the others still move), then streams to all of them in
    /// one pump.
    pub(crate) fn set_viewers(&mut self, viewers: Vec<Viewer>) -> Result<(), ModuleError> {
        let mut moved = Vec::with_capacity(viewers.len());
        let mut refused = None;
        for viewer in viewers {
            if viewer
                .position
                .iter()
                .any(|p| !p.is_finite() || p.abs() > 1e8)
            {
                refused = Some(WorldError::ViewerOutOfWorld(viewer.peer).into());
                continue;
            }
            let packets = self.streamer.set_viewer(viewer.peer, viewer.position);
            self.send_packets(viewer.peer, packets);
            moved.push(viewer.peer);
        }
        if !moved.is_empty() {
            self.pump_viewers(Some(&moved))?;
        }
        refused.map_or(Ok(()), Err)
    }

    pub(crate) fn send_packets(&self, peer: PeerId, packets: Vec<OutgoingPacket>) {
        if !packets.is_empty() {
            self.send(SendBatches {
                batches: vec![SendBatch { peer, packets }],
                multicasts: Vec::new(),
            });
        }
    }
}

/// Where the game says players are, and their acks, in the module's
/// receive table (a malformed ack drops its peer, as every packet does).
pub(crate) fn receive(table: &mut Receive<VoxelWorld>) {
    table
        .event(|world, viewer: Viewer| world.set_viewer(viewer))
        .event(|world, moved: Viewers| world.set_viewers(moved.viewers))
        .packet(|world, peer, ack: Ack| {
            world.streamer.ack(peer, ack.chunks);
            world.pump_viewers(Some(&[peer]))
        });
}

#[cfg(test)]
mod tests {
    use super::*;
    use buildat_interface::testing::TestHost;
    use serde::{Deserialize, Serialize};

    #[derive(Serialize, Deserialize)]
    struct OldGetChunk {
        chunk: Pos,
    }
    #[derive(Serialize, Deserialize)]
    struct OldSetViewer(Viewer);
    #[derive(Serialize, Deserialize)]
    struct OldRemoveViewer {
        peer: PeerId,
    }
    buildat_interface::calls! {
        module buildat_voxelworld_api::MODULE;
        OldGetChunk = "get_chunk" -> Option<buildat_voxelworld_api::ChunkData>;
        OldSetViewer = "set_viewer" -> ();
        OldRemoveViewer = "remove_viewer" -> ();
    }

    /// The calls nothing made are gone: a viewer moves by its events only
    /// and stops being streamed to when its peer leaves.
    #[test]
    fn the_calls_nothing_made_are_unknown_functions() {
        let dir = tempfile::tempdir().expect("temp dir");
        let kit = TestHost::new().world_path(dir.path());
        let mut world = kit.load::<VoxelWorld>().expect("loads");
        let viewer = Viewer {
            peer: 3,
            position: [0.5; 3],
        };
        for error in [
            world.call(&OldGetChunk { chunk: [0; 3] }).map(drop),
            world.call(&OldSetViewer(viewer.clone())).map(drop),
            world.call(&OldRemoveViewer { peer: 3 }).map(drop),
        ] {
            assert!(
                matches!(error, Err(ModuleError::UnknownFunction(_))),
                "{error:?}"
            );
        }
        world.emit(&viewer).expect("moves by its event");
        assert_eq!(world.module().streamer.viewer_count(), 1);
        world
            .emit(&ClientDisconnected {
                peer: 3,
                reason: "gone".into(),
            })
            .expect("leaves");
        assert_eq!(world.module().streamer.viewer_count(), 0);
    }
}
