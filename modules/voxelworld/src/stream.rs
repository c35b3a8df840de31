//! Streaming the world to clients: per viewer, the registry first, then the
//! chunks within the view radius nearest first, under a budget of chunks in
//! flight (the client acknowledges), withdrawing chunks that leave the radius,
//! and for chunks that change: the single voxels that changed
//! (`voxelworld:voxels`), or the whole chunk again when many did. Each chunk
//! is followed by its light (`voxelworld:light`), and a held chunk's light
//! again when a relight changed it. A change is encoded once and goes to
//! all its holders as one packet ([`Outbox::alike`]).
//!
//! Owns: viewers (peer → what it holds, what it still wants, what is in
//! flight), who holds each chunk (the viewers' held chunks inverted, kept
//! with them: a change looks at the chunk's holders, not at every viewer)
//! and the caches of encoded chunk and light packets (valid until
//! the chunk, or its light, changes). Invariant: what a pump records as sent (the registry, a held
//! chunk, one in flight) is in the packets it returns; a chunk that cannot
//! be read now (a storage error) stays queued and the error is reported in
//! the outbox, so nothing is recorded as sent that was dropped. Does not own: the world (`world.rs`), sockets (`network`), or
//! where players are (a game module tells us with `voxelworld:viewer_moved`
//! and `voxelworld:viewers_moved`).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::Instant;

use buildat_format::Packet;
use buildat_network_api::{OutgoingPacket, PeerId};
use buildat_voxel::geometry::{self, Pos, SectionSize};
use buildat_voxelworld_api::stream::{self, Chunk, Light, UnloadChunk, VoxelUpdates};
use serde::{Deserialize, Serialize};

use crate::world::{LIGHT_THREADS, Loaded, World, WorldError};

/// How many queued chunks one pump looks at per viewer (bounds the work of
/// a pump when nearby sections are still generating).
const SCAN_LIMIT: usize = 64;
/// Encoded chunks kept before the cache is cleared.
const CACHE_LIMIT: usize = 20_000;

#[derive(Default, Serialize, Deserialize)]
pub struct ViewerState {
    center: Option<Pos>,
    /// Chunks the client holds (sent and not withdrawn).
    held: HashSet<Pos>,
    /// Chunks it wants and does not hold, nearest first.
    queue: VecDeque<Pos>,
    /// Held chunks that changed and must be sent again.
    resend: BTreeSet<Pos>,
    /// Encoded `voxelworld:voxels` packets for held chunks, to send next.
    updates: Vec<Queued>,
    /// Encoded `voxelworld:light` packets for held chunks whose light
    /// changed (one per chunk, the newest), to send after the voxel updates.
    lights: Vec<Queued>,
    in_flight: u32,
    registry_sent: bool,
}

/// A change's packet waiting for a viewer: the same `packet` (one encoding)
/// waits for every holder of `chunk` it concerns, under one `order`, so a
/// pump sends it once to all of them.
#[derive(Serialize, Deserialize)]
struct Queued {
    chunk: Pos,
    /// When the change was made, among every viewer's queued packets.
    order: u64,
    packet: Arc<Vec<u8>>,
}

/// What a pump wants done: packets per peer, sections it waits on. Each
/// peer is sent its `first` packets, then the `alike` ones it is among, then
/// the `packets` it is among, in that order.
#[derive(Default)]
pub struct Outbox {
    /// Per peer, what goes before the changes (the registry).
    pub first: Vec<(PeerId, Vec<OutgoingPacket>)>,
    /// The changes to held chunks (voxel updates, then relit light), in the
    /// order they were made, each encoded once for all the peers it goes
    /// to: a change seen by a thousand players costs one packet here, not
    /// a thousand.
    pub alike: Vec<Alike>,
    /// The chunks sent whole, each followed by its light, each encoded
    /// once for all the peers it goes to in this pump (a crowd joining at
    /// one spot shares one copy of each chunk, not one each); a peer's
    /// chunks come in the order it was to get them, unless two peers were
    /// to get the same two in opposite orders.
    pub packets: Vec<Alike>,
    /// Sections to generate, with the distance of the player waiting
    /// (squared, in chunks, from its chunk to the section's chunk it wants).
    pub generate: Vec<(Pos, u32)>,
    /// The first error met reading the world (what it concerned stays queued
    /// for the next pump).
    pub failure: Option<WorldError>,
    /// The pump ran out of time with chunks still to encode (they stay
    /// queued): the caller pumps again once the events waiting have run.
    pub unfinished: bool,
}

/// One packet several peers get alike (see [`Outbox::alike`]).
#[derive(Debug)]
pub struct Alike {
    pub name: &'static str,
    pub data: Arc<Vec<u8>>,
    pub peers: Vec<PeerId>,
}

pub struct Streamer {
    viewers: HashMap<PeerId, ViewerState>,
    /// Changes' packets queued so far (the next one's [`Queued::order`]).
    queued_changes: u64,
    /// Who holds each chunk: exactly the viewers whose `held` has it.
    holders: HoldersIndex,
    radius: i32,
    budget: u32,
    cache: PacketCache,
    light_cache: PacketCache,
    /// Where a pump of every viewer starts, turned each time, so the
    /// viewers a deadline cuts off are first the next time.
    rotation: usize,
    /// Whole chunks sent since the module's instance started.
    pub chunks_streamed: u64,
}

/// The viewers holding each chunk (their `held` sets, inverted).
#[derive(Default)]
struct HoldersIndex(HashMap<Pos, BTreeSet<PeerId>>);

impl HoldersIndex {
    fn hold(&mut self, chunk: Pos, peer: PeerId) {
        self.0.entry(chunk).or_default().insert(peer);
    }

    fn release(&mut self, chunk: Pos, peer: PeerId) {
        if let Some(peers) = self.0.get_mut(&chunk) {
            peers.remove(&peer);
            if peers.is_empty() {
                self.0.remove(&chunk);
            }
        }
    }

    /// The holders of `chunk`, in peer order.
    fn of(&self, chunk: &Pos) -> impl Iterator<Item = PeerId> + '_ {
        self.0.get(chunk).into_iter().flatten().copied()
    }

    fn rebuild(viewers: &HashMap<PeerId, ViewerState>) -> Self {
        let mut index = Self::default();
        for (peer, viewer) in viewers {
            for chunk in &viewer.held {
                index.hold(*chunk, *peer);
            }
        }
        index
    }
}

/// Encoded packets by chunk, at most [`CACHE_LIMIT`] (emptied when full).
#[derive(Default)]
struct PacketCache(HashMap<Pos, Arc<Vec<u8>>>);

impl PacketCache {
    fn insert(&mut self, chunk: Pos, packet: Arc<Vec<u8>>) {
        if self.0.len() >= CACHE_LIMIT {
            self.0.clear();
        }
        self.0.insert(chunk, packet);
    }

    fn remove(&mut self, chunk: &Pos) {
        self.0.remove(chunk);
    }

    /// The cached packet, or `encode`'s (cached); `None` when it has none.
    fn get_or_encode(
        &mut self,
        chunk: Pos,
        encode: impl FnOnce() -> Result<Option<Vec<u8>>, WorldError>,
    ) -> Result<Option<Arc<Vec<u8>>>, WorldError> {
        if let Some(hit) = self.0.get(&chunk) {
            return Ok(Some(hit.clone()));
        }
        let Some(packet) = encode()? else {
            return Ok(None);
        };
        let packet = Arc::new(packet);
        self.insert(chunk, packet.clone());
        Ok(Some(packet))
    }
}

impl Streamer {
    pub fn new(radius: i32, budget: u32) -> Self {
        Self {
            viewers: HashMap::new(),
            holders: HoldersIndex::default(),
            queued_changes: 0,
            radius: radius.clamp(0, 32),
            budget: budget.max(1),
            cache: PacketCache::default(),
            light_cache: PacketCache::default(),
            rotation: 0,
            chunks_streamed: 0,
        }
    }

    pub fn viewer_count(&self) -> usize {
        self.viewers.len()
    }

    /// The viewers, to carry across a reload of the module.
    pub fn take_viewers(&mut self) -> HashMap<PeerId, ViewerState> {
        self.holders = HoldersIndex::default();
        std::mem::take(&mut self.viewers)
    }

    /// Puts back viewers from [`Streamer::take_viewers`] (acks sent during
    /// the reload wait in the module's queue and arrive afterwards).
    pub fn restore_viewers(&mut self, viewers: HashMap<PeerId, ViewerState>) {
        self.holders = HoldersIndex::rebuild(&viewers);
        let newest = viewers
            .values()
            .flat_map(|viewer| viewer.updates.iter().chain(&viewer.lights))
            .map(|queued| queued.order + 1)
            .max();
        self.queued_changes = self.queued_changes.max(newest.unwrap_or(0));
        self.viewers = viewers;
    }

    /// Moves (or adds) a viewer: chunks leaving the radius are withdrawn,
    /// entering ones queued nearest first.
    pub fn set_viewer(&mut self, peer: PeerId, position: [f64; 3]) -> Vec<OutgoingPacket> {
        let center = geometry::chunk_of_voxel(position.map(|p| p.floor() as i32));
        let radius = self.radius;
        let viewer = self.viewers.entry(peer).or_default();
        if viewer.center == Some(center) {
            return Vec::new();
        }
        viewer.center = Some(center);
        let mut wanted = geometry::chunks_in_view(center, radius);
        // Chunks are withdrawn only past radius + 1, so walking back and forth
        // over a chunk border does not unload and resend the same chunks.
        let keep = (radius + 1) * (radius + 1);
        let mut packets = Vec::new();
        let leaving: Vec<Pos> = viewer
            .held
            .iter()
            .filter(|c| {
                let d = [c[0] - center[0], c[1] - center[1], c[2] - center[2]];
                d[0] * d[0] + d[1] * d[1] + d[2] * d[2] > keep
            })
            .copied()
            .collect();
        for chunk in leaving {
            viewer.held.remove(&chunk);
            self.holders.release(chunk, peer);
            viewer.resend.remove(&chunk);
            viewer.updates.retain(|queued| queued.chunk != chunk);
            viewer.lights.retain(|queued| queued.chunk != chunk);
            if let Ok(packet) = OutgoingPacket::new(&UnloadChunk { chunk }) {
                packets.push(packet);
            }
        }
        wanted.retain(|c| !viewer.held.contains(c));
        wanted.sort_by_key(|c| (distance(Some(center), *c), *c));
        viewer.queue = wanted.into();
        packets
    }

    /// Every section holding a chunk some viewer still wants and does not
    /// hold, with the smallest distance of a viewer wanting it.
    pub fn wanted_sections(&self, section_size: SectionSize) -> HashMap<Pos, u32> {
        let mut wanted: HashMap<Pos, u32> = HashMap::new();
        for viewer in self.viewers.values() {
            for &chunk in &viewer.queue {
                let d = distance(viewer.center, chunk);
                wanted
                    .entry(section_size.section_of_chunk(chunk))
                    .and_modify(|nearest| *nearest = (*nearest).min(d))
                    .or_insert(d);
            }
        }
        wanted
    }

    /// Blocks were registered: every viewer gets the registry again.
    pub fn registry_changed(&mut self) {
        for viewer in self.viewers.values_mut() {
            viewer.registry_sent = false;
        }
    }

    pub fn remove_viewer(&mut self, peer: PeerId) {
        if let Some(viewer) = self.viewers.remove(&peer) {
            for chunk in viewer.held {
                self.holders.release(chunk, peer);
            }
        }
    }

    pub fn ack(&mut self, peer: PeerId, chunks: u32) {
        if let Some(viewer) = self.viewers.get_mut(&peer) {
            viewer.in_flight = viewer.in_flight.saturating_sub(chunks);
        }
    }

    /// A chunk changed: forget its encoding and resend it to its holders,
    /// who are added to `holders`.
    pub fn chunk_changed(&mut self, chunk: Pos, holders: &mut BTreeSet<PeerId>) {
        self.cache.remove(&chunk);
        for peer in self.holders.of(&chunk) {
            if let Some(viewer) = self.viewers.get_mut(&peer) {
                viewer.resend.insert(chunk);
                holders.insert(peer);
            }
        }
    }

    /// Single voxels of a chunk changed (`changes`, in order; None: too many
    /// to list): its holders get just those, unless a resend of the whole
    /// chunk is pending for them anyway. Holders are added to `holders`.
    pub fn voxels_changed(
        &mut self,
        chunk: Pos,
        changes: Option<&[(u16, u32)]>,
        holders: &mut BTreeSet<PeerId>,
    ) {
        let Some(changes) = changes.filter(|c| !c.is_empty()) else {
            return self.chunk_changed(chunk, holders);
        };
        self.cache.remove(&chunk);
        let updates = VoxelUpdates {
            chunk,
            changes: changes.to_vec(),
        };
        let Ok(packet) = updates.encode() else {
            return self.chunk_changed(chunk, holders);
        };
        let packet = Arc::new(packet);
        let order = self.next_order();
        for peer in self.holders.of(&chunk) {
            if let Some(viewer) = self.viewers.get_mut(&peer)
                && !viewer.resend.contains(&chunk)
            {
                viewer.updates.push(Queued {
                    chunk,
                    order,
                    packet: packet.clone(),
                });
                holders.insert(peer);
            }
        }
    }

    /// A relight changed a chunk's light (`packet`: its encoded
    /// `voxelworld:light`): its holders get it, unless a resend of the whole
    /// chunk (which brings its light) is pending for them. Holders are added
    /// to `holders`.
    pub fn light_changed(
        &mut self,
        chunk: Pos,
        packet: Arc<Vec<u8>>,
        holders: &mut BTreeSet<PeerId>,
    ) {
        self.light_cache.insert(chunk, packet.clone());
        let order = self.next_order();
        for peer in self.holders.of(&chunk) {
            if let Some(viewer) = self.viewers.get_mut(&peer)
                && !viewer.resend.contains(&chunk)
            {
                viewer.lights.retain(|queued| queued.chunk != chunk);
                viewer.lights.push(Queued {
                    chunk,
                    order,
                    packet: packet.clone(),
                });
                holders.insert(peer);
            }
        }
    }

    /// The order of a change queued now.
    fn next_order(&mut self) -> u64 {
        self.queued_changes += 1;
        self.queued_changes - 1
    }

    /// A chunk's encoded `voxelworld:light`, cached until its light changes.
    fn encoded_light(
        &mut self,
        world: &mut World,
        chunk: Pos,
    ) -> Result<Option<Arc<Vec<u8>>>, WorldError> {
        self.light_cache.get_or_encode(chunk, || {
            world
                .chunk_light(chunk)?
                .map(|light| encode_light_packet(chunk, &light))
                .transpose()
        })
    }

    fn encoded(
        &mut self,
        world: &mut World,
        chunk: Pos,
    ) -> Result<Option<Arc<Vec<u8>>>, WorldError> {
        self.cache.get_or_encode(chunk, || {
            let Some(data) = world.get_chunk(chunk)? else {
                return Ok(None);
            };
            Ok(Some(
                Chunk {
                    chunk,
                    blob: data.blob,
                }
                .encode()?,
            ))
        })
    }

    /// Fills the budget of `only` those viewers (None: every viewer) with
    /// chunks that are ready, changed ones first, then nearest first; lists
    /// the sections it waits on (the caller asks for them). A move or an ack
    /// pumps its own viewer, a commit the holders of the changed chunks; the
    /// tick and generated sections pump everyone. So the work per event does
    /// not grow with the player count.
    ///
    /// Encoding and lighting chunks stops at `deadline` (after at least one
    /// chunk, so every pump makes progress): what is left stays queued and
    /// the outbox says `unfinished`, so the module's thread goes back to the
    /// calls and events waiting on it between slices of streaming.
    pub fn pump(
        &mut self,
        world: &mut World,
        registry: &[u8],
        only: Option<&[PeerId]>,
        deadline: Instant,
    ) -> Outbox {
        let mut outbox = Outbox::default();
        let section_size = world.section_size();
        let peers: Vec<PeerId> = match only {
            Some(peers) => peers.to_vec(),
            None => {
                let mut peers: Vec<PeerId> = self.viewers.keys().copied().collect();
                peers.sort_unstable();
                if !peers.is_empty() {
                    self.rotation = (self.rotation + 1) % peers.len();
                    peers.rotate_left(self.rotation);
                }
                peers
            }
        };
        let mut encoded_any = false;
        // By (voxel updates before light, order made).
        let mut alike: BTreeMap<(bool, u64), Alike> = BTreeMap::new();
        // Where each chunk sent whole is in `outbox.packets` (its light, if
        // any, right after it).
        let mut sent_at: HashMap<Pos, usize> = HashMap::new();
        for peer in peers {
            let Some(viewer) = self.viewers.get_mut(&peer) else {
                continue;
            };
            if !viewer.registry_sent {
                viewer.registry_sent = true;
                let registry = OutgoingPacket::named(stream::Registry::NAME, registry.to_vec());
                outbox.first.push((peer, vec![registry]));
            }
            // Voxel updates (not counted against the budget: they are
            // small), then changed chunks, then new ones nearest first.
            let updates = viewer
                .updates
                .drain(..)
                .map(|q| (false, VoxelUpdates::NAME, q));
            let lights = viewer.lights.drain(..).map(|q| (true, Light::NAME, q));
            for (is_light, name, queued) in updates.chain(lights) {
                alike
                    .entry((is_light, queued.order))
                    .or_insert_with(|| Alike {
                        name,
                        data: queued.packet,
                        peers: Vec::new(),
                    })
                    .peers
                    .push(peer);
            }
            let mut picked = Vec::new();
            // Out of time: this viewer's chunks wait for the next slice
            // (its small updates above still go out).
            let out_of_time = encoded_any && Instant::now() >= deadline;
            outbox.unfinished |= out_of_time;
            let mut budget = if out_of_time {
                0
            } else {
                self.budget.saturating_sub(viewer.in_flight)
            };
            while budget > 0 {
                let Some(chunk) = viewer.resend.pop_first() else {
                    break;
                };
                picked.push(chunk);
                budget -= 1;
            }
            let mut scanned = 0;
            let mut index = 0;
            let mut waiting_sections = Vec::new();
            while budget > 0 && scanned < SCAN_LIMIT && index < viewer.queue.len() {
                scanned += 1;
                let chunk = viewer.queue[index];
                let section = section_size.section_of_chunk(chunk);
                match world.load_section(section) {
                    Ok(Loaded::Ready) => {
                        viewer.queue.remove(index);
                        picked.push(chunk);
                        budget -= 1;
                    }
                    Ok(_) => {
                        waiting_sections.push((section, distance(viewer.center, chunk)));
                        index += 1;
                    }
                    Err(error) => {
                        outbox.failure.get_or_insert(error);
                        index += 1;
                    }
                }
            }
            outbox.generate.extend(waiting_sections);
            let mut sent = 0;
            let mut unread = Vec::new();
            for (index, &chunk) in picked.iter().enumerate() {
                if encoded_any && Instant::now() >= deadline {
                    // Out of time: back in line, like a chunk not read.
                    outbox.unfinished = true;
                    unread.push(chunk);
                    continue;
                }
                encoded_any = true;
                if index % LIGHT_THREADS == 0 {
                    // This chunk and the next lit together (a failure is
                    // met again, and reported, lighting this one alone).
                    let batch = picked.get(index..).unwrap_or_default();
                    let _ = world.prelight(batch.get(..LIGHT_THREADS).unwrap_or(batch));
                }
                let encoded = self.encoded(world, chunk).and_then(|packet| {
                    Ok(match packet {
                        Some(packet) => Some((packet, self.encoded_light(world, chunk)?)),
                        None => None,
                    })
                });
                match encoded {
                    Ok(Some((packet, light))) => {
                        let at = *sent_at.entry(chunk).or_insert_with(|| {
                            let at = outbox.packets.len();
                            outbox.packets.push(Alike {
                                name: Chunk::NAME,
                                data: packet,
                                peers: Vec::new(),
                            });
                            if let Some(light) = light {
                                outbox.packets.push(Alike {
                                    name: Light::NAME,
                                    data: light,
                                    peers: Vec::new(),
                                });
                            }
                            at
                        });
                        // The chunk, then its light if it has one (the
                        // entry after it is then a light, not a chunk).
                        if let Some(entry) = outbox.packets.get_mut(at) {
                            entry.peers.push(peer);
                        }
                        if let Some(entry) = outbox
                            .packets
                            .get_mut(at + 1)
                            .filter(|entry| entry.name == Light::NAME)
                        {
                            entry.peers.push(peer);
                        }
                        sent += 1;
                        self.chunks_streamed += 1;
                        if let Some(viewer) = self.viewers.get_mut(&peer) {
                            viewer.held.insert(chunk);
                            self.holders.hold(chunk, peer);
                        }
                    }
                    Ok(None) => {}
                    Err(error) => {
                        outbox.failure.get_or_insert(error);
                        unread.push(chunk);
                    }
                }
            }
            if let Some(viewer) = self.viewers.get_mut(&peer) {
                viewer.in_flight += sent;
                // Not read, so not sent: asked for again, nearest first.
                for chunk in unread.into_iter().rev() {
                    if viewer.held.contains(&chunk) {
                        viewer.resend.insert(chunk);
                    } else {
                        viewer.queue.push_front(chunk);
                    }
                }
            }
        }
        outbox.alike = alike.into_values().collect();
        outbox
    }
}

/// Squared distance in chunks from a viewer's chunk to `chunk` (0 for a
/// viewer not placed yet).
fn distance(center: Option<Pos>, chunk: Pos) -> u32 {
    center.map_or(0, |c| {
        let d = [chunk[0] - c[0], chunk[1] - c[1], chunk[2] - c[2]];
        (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).unsigned_abs()
    })
}

/// A chunk's light as an encoded `voxelworld:light` packet.
pub fn encode_light_packet(chunk: Pos, light: &[u8]) -> Result<Vec<u8>, WorldError> {
    let light =
        buildat_format::encode_light(light).map_err(|e| WorldError::Light(e.to_string()))?;
    Ok(Light { chunk, light }.encode()?)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;

    use super::*;
    use crate::world::tests::{far, faulty, generate};
    use buildat_voxel::geometry::CHUNK_VOLUME;

    /// The chunks a pump sent, in order.
    fn chunks_sent(outbox: &Outbox) -> Vec<Pos> {
        outbox
            .packets
            .iter()
            .filter(|p| p.name == Chunk::NAME)
            .flat_map(|p| {
                let chunk = Chunk::decode(&p.data).unwrap().chunk;
                p.peers.iter().map(move |_| chunk)
            })
            .collect()
    }

    /// The index of holders is the viewers' `held` sets, inverted.
    fn check_holders(streamer: &Streamer) {
        let inverted = HoldersIndex::rebuild(&streamer.viewers);
        assert_eq!(streamer.holders.0, inverted.0);
    }

    /// A world whose sections x -2..=2, y -1..=0, z 0 are stone.
    fn stone_row(dir: &std::path::Path, budget: usize) -> World {
        let (mut world, _) = faulty(dir, budget);
        for x in -2..=2 {
            generate(&mut world, [x, 0, 0], "stone");
            generate(&mut world, [x, -1, 0], "stone");
        }
        world
    }

    #[test]
    fn who_holds_a_chunk_follows_moves_pumps_leaves_and_reloads() {
        let dir = tempfile::tempdir().unwrap();
        let mut world = stone_row(dir.path(), 256);
        let mut streamer = Streamer::new(1, 64);
        streamer.set_viewer(1, [0.5, 0.5, 0.5]);
        streamer.set_viewer(2, [40.5, 0.5, 0.5]);
        streamer.pump(&mut world, b"registry", None, far());
        check_holders(&streamer);
        let shared = [0, 0, 0];
        assert_eq!(streamer.holders.of(&shared).collect::<Vec<_>>(), [1, 2]);
        // A change reaches the holders only.
        let mut told = BTreeSet::new();
        streamer.voxels_changed(shared, Some(&[(0, 1)]), &mut told);
        assert_eq!(told, BTreeSet::from([1, 2]));
        let far_chunk = [-3, 0, 0];
        told.clear();
        streamer.chunk_changed(far_chunk, &mut told);
        assert!(told.is_empty(), "nobody holds {far_chunk:?}");
        // Viewer 1 walks away: what it withdrew it no longer holds.
        streamer.set_viewer(1, [-150.5, 0.5, 0.5]);
        check_holders(&streamer);
        assert_eq!(streamer.holders.of(&[-1, 0, 0]).count(), 0);
        streamer.pump(&mut world, b"registry", None, far());
        check_holders(&streamer);
        // Across a reload, then viewer 2 leaves.
        let viewers = streamer.take_viewers();
        assert!(streamer.holders.0.is_empty());
        streamer.restore_viewers(viewers);
        check_holders(&streamer);
        assert_eq!(streamer.holders.of(&[1, 0, 0]).collect::<Vec<_>>(), [2]);
        streamer.remove_viewer(2);
        check_holders(&streamer);
        assert_eq!(streamer.holders.of(&[1, 0, 0]).count(), 0);
    }

    #[test]
    fn a_crowd_at_one_spot_gets_one_copy_of_each_chunk() {
        let dir = tempfile::tempdir().unwrap();
        let mut world = stone_row(dir.path(), 256);
        let mut streamer = Streamer::new(1, 64);
        for peer in 1..=3 {
            streamer.set_viewer(peer, [0.5, 0.5, 0.5]);
        }
        let outbox = streamer.pump(&mut world, b"registry", None, far());
        let chunks: Vec<Pos> = outbox
            .packets
            .iter()
            .filter(|p| p.name == Chunk::NAME)
            .map(|p| Chunk::decode(&p.data).unwrap().chunk)
            .collect();
        assert!(chunks.len() > 1, "{chunks:?}");
        assert_eq!(
            chunks.len(),
            chunks.iter().collect::<HashSet<_>>().len(),
            "each chunk encoded once for the crowd"
        );
        for (index, packet) in outbox.packets.iter().enumerate() {
            let mut peers = packet.peers.clone();
            peers.sort_unstable();
            assert_eq!(peers, [1, 2, 3], "{} to everyone", packet.name);
            if packet.name == Light::NAME {
                assert_eq!(
                    outbox.packets.get(index.wrapping_sub(1)).map(|p| p.name),
                    Some(Chunk::NAME),
                    "a light right after its chunk"
                );
            }
        }
        check_holders(&streamer);
    }

    #[test]
    fn sections_waited_on_carry_their_distance_and_are_let_go_when_nobody_wants_them() {
        let dir = tempfile::tempdir().unwrap();
        let (mut world, _) = faulty(dir.path(), 256);
        let size = world.section_size();
        let mut streamer = Streamer::new(1, 64);
        let mut book = crate::generation::GenerationBook::default();
        let now = Instant::now();
        streamer.set_viewer(1, [0.5, 0.5, 0.5]);
        streamer.set_viewer(2, [0.5, 0.5, 0.5]);
        let outbox = streamer.pump(&mut world, b"registry", None, far());
        assert!(chunks_sent(&outbox).is_empty(), "nothing is generated");
        let home = size.section_of_chunk([0, 0, 0]);
        let west = size.section_of_chunk([-1, 0, 0]);
        assert!(outbox.generate.contains(&(home, 0)));
        assert!(
            outbox.generate.contains(&(west, 1)),
            "{:?}",
            outbox.generate
        );
        for (section, distance) in &outbox.generate {
            book.ask(*section, Some(*distance), now);
        }
        let asked: BTreeSet<Pos> = outbox.generate.iter().map(|(s, _)| *s).collect();
        assert_eq!(streamer.wanted_sections(size).get(&home), Some(&0));
        // One flies far away: the other still wants everything.
        streamer.set_viewer(1, [3200.5, 0.5, 0.5]);
        let review = book.review(&streamer.wanted_sections(size), now);
        assert!(review.cancel.is_empty(), "{review:?}");
        // Then the other leaves: nobody wants what they asked for.
        streamer.remove_viewer(2);
        let review = book.review(&streamer.wanted_sections(size), now);
        let cancelled: BTreeSet<Pos> = review.cancel.into_iter().collect();
        assert_eq!(cancelled, asked);
    }

    #[test]
    fn a_pump_out_of_time_sends_one_chunk_and_keeps_the_rest_queued() {
        let dir = tempfile::tempdir().unwrap();
        let (mut world, _) = faulty(dir.path(), 64);
        for section in [-1, 0].iter().flat_map(|&x| {
            [-1, 0]
                .iter()
                .flat_map(move |&y| [-1, 0].iter().map(move |&z| [x, y, z]))
        }) {
            generate(&mut world, section, "stone");
        }
        // What one pump with time to spare sends...
        let mut unhurried = Streamer::new(1, 64);
        unhurried.set_viewer(1, [0.5, 0.5, 0.5]);
        let outbox = unhurried.pump(&mut world, b"registry", None, far());
        assert!(!outbox.unfinished);
        let all: HashSet<Pos> = chunks_sent(&outbox).into_iter().collect();
        assert!(all.len() > 1, "the radius holds several chunks");
        // ...pumps always out of time send too, one chunk each, once each.
        let mut hurried = Streamer::new(1, 64);
        hurried.set_viewer(1, [0.5, 0.5, 0.5]);
        let mut sent = Vec::new();
        for pumps in 1.. {
            let outbox = hurried.pump(&mut world, b"registry", None, Instant::now());
            let chunks = chunks_sent(&outbox);
            assert!(chunks.len() <= 1, "out of time, one chunk a pump");
            sent.extend(chunks);
            if !outbox.unfinished {
                break;
            }
            assert!(pumps <= all.len(), "every pump makes progress");
        }
        assert_eq!(sent.len(), all.len(), "no chunk twice, none left out");
        assert_eq!(sent.into_iter().collect::<HashSet<_>>(), all);
    }

    /// The names of the packets a pump sent, in the order a peer gets them
    /// (with one peer: every packet).
    fn names(outbox: &Outbox) -> Vec<&str> {
        let first = outbox.first.iter().flat_map(|(_, packets)| packets);
        let alike = outbox.alike.iter().map(|alike| alike.name);
        let last = outbox.packets.iter().map(|alike| alike.name);
        first
            .map(|p| p.name.as_str())
            .chain(alike)
            .chain(last)
            .collect()
    }

    #[test]
    fn what_a_failed_read_keeps_back_is_sent_later_not_lost() {
        let dir = tempfile::tempdir().unwrap();
        let (mut world, _) = faulty(dir.path(), 64);
        generate(&mut world, [0, 0, 0], "stone");
        world.set_section_save_enabled([0, 0, 0], true).unwrap();
        world.save_all().unwrap();
        drop(world);
        // Reading the stored section fails for a while.
        let (mut world, faults) = faulty(dir.path(), 64);
        faults.reads.store(true, Ordering::Relaxed);
        let mut streamer = Streamer::new(0, 8);
        streamer.set_viewer(1, [0.5, 0.5, 0.5]);
        let outbox = streamer.pump(&mut world, b"registry", None, far());
        assert!(outbox.failure.is_some(), "the error is reported");
        assert_eq!(
            names(&outbox),
            [stream::Registry::NAME],
            "the registry went out"
        );
        faults.reads.store(false, Ordering::Relaxed);
        let outbox = streamer.pump(&mut world, b"registry", None, far());
        assert!(outbox.failure.is_none());
        assert_eq!(
            names(&outbox),
            [Chunk::NAME, Light::NAME],
            "the chunk, then its light, is sent once it reads"
        );
    }

    #[test]
    fn a_relit_chunk_s_light_goes_to_its_holders_only() {
        let dir = tempfile::tempdir().unwrap();
        let (mut world, _) = faulty(dir.path(), 64);
        generate(&mut world, [0, 0, 0], "stone");
        let mut streamer = Streamer::new(0, 8);
        streamer.set_viewer(1, [0.5, 0.5, 0.5]);
        streamer.set_viewer(2, [100.5, 0.5, 0.5]);
        streamer.pump(&mut world, b"registry", None, far());
        let packet = Arc::new(encode_light_packet([0, 0, 0], &[0; CHUNK_VOLUME]).unwrap());
        let mut holders = BTreeSet::new();
        streamer.light_changed([0, 0, 0], packet.clone(), &mut holders);
        assert_eq!(holders, BTreeSet::from([1]));
        let outbox = streamer.pump(&mut world, b"registry", Some(&[1]), far());
        assert_eq!(names(&outbox), [Light::NAME]);
        assert_eq!(outbox.alike[0].peers, [1]);
        let light = Light::decode(&outbox.alike[0].data).unwrap();
        assert_eq!(light.chunk, [0, 0, 0]);
        assert_eq!(
            buildat_format::decode_light(&light.light, CHUNK_VOLUME).unwrap(),
            vec![0; CHUNK_VOLUME]
        );
    }

    #[test]
    fn a_change_is_one_packet_for_all_its_holders_in_the_order_changes_were_made() {
        let dir = tempfile::tempdir().unwrap();
        let mut world = stone_row(dir.path(), 64);
        let mut streamer = Streamer::new(1, 64);
        // 1 holds [-1..=1, _, _], 2 holds [1..=3, _, _]: they share [1, 0, 0].
        streamer.set_viewer(1, [0.5, 0.5, 0.5]);
        streamer.set_viewer(2, [64.5, 0.5, 0.5]);
        streamer.pump(&mut world, b"registry", None, far());
        let (own, shared) = ([0, 0, 0], [1, 0, 0]);
        let mut told = BTreeSet::new();
        streamer.voxels_changed(own, Some(&[(0, 1)]), &mut told);
        streamer.voxels_changed(shared, Some(&[(1, 1)]), &mut told);
        streamer.voxels_changed(own, Some(&[(2, 1)]), &mut told);
        let light = Arc::new(encode_light_packet(shared, &[0; CHUNK_VOLUME]).unwrap());
        streamer.light_changed(shared, light, &mut told);
        let outbox = streamer.pump(&mut world, b"registry", None, far());
        let sent: Vec<(&str, Pos, Vec<PeerId>)> = outbox
            .alike
            .iter()
            .map(|alike| {
                let chunk = match alike.name {
                    VoxelUpdates::NAME => VoxelUpdates::decode(&alike.data).unwrap().chunk,
                    _ => Light::decode(&alike.data).unwrap().chunk,
                };
                (alike.name, chunk, alike.peers.clone())
            })
            .collect();
        assert_eq!(
            sent,
            [
                (VoxelUpdates::NAME, own, vec![1]),
                (VoxelUpdates::NAME, shared, vec![1, 2]),
                (VoxelUpdates::NAME, own, vec![1]),
                (Light::NAME, shared, vec![1, 2]),
            ],
            "one packet per change, to every holder, in order"
        );
        assert!(outbox.packets.is_empty(), "no chunk is resent");
        // Sent once: the next pump has nothing.
        let outbox = streamer.pump(&mut world, b"registry", None, far());
        assert!(outbox.alike.is_empty());
        // A holder walking away is not sent what changed in what it let go.
        streamer.voxels_changed(shared, Some(&[(3, 1)]), &mut told);
        streamer.set_viewer(1, [-100.5, 0.5, 0.5]);
        let outbox = streamer.pump(&mut world, b"registry", Some(&[1, 2]), far());
        let peers: Vec<&[PeerId]> = outbox.alike.iter().map(|a| a.peers.as_slice()).collect();
        assert_eq!(peers, [&[2][..]]);
    }
}
