//! Interest management: which peer knows which node, and what each peer is
//! told in a tick. Pure (no host): `lib.rs` feeds it the world's node
//! changes and the viewers' positions and sends what [`Replicator::tick`]
//! returns.
//!
//! Space is cut into cubic cells of [`CELL`] voxels, indexed both ways
//! (nodes by cell, peers by cell). A peer starts knowing a node when their
//! cells are within `radius_cells` of each other (Chebyshev distance) and
//! stops when they are more than one cell further apart, so a node pacing
//! along the edge is not added and removed every tick. Interest is
//! recomputed only for a node or a peer that changed cell; a node that
//! changed state has its delta encoded once and copied to each peer that
//! knows it. So a tick costs in proportion to what changed and who sees
//! it, not to the world's size.
//!
//! A peer knows at most `max_known` nodes: when more are in range (a
//! crowd, a herd), it knows the nearest ones. Such a crowded peer is
//! looked at again once in [`REFRESH_TICKS`] ticks (a few each tick, in
//! turn), and when it changes cell, so the nearest stay the ones it knows.
//!
//! Update rates follow distance (as games cut far entities' rates): a
//! knower within `full_rate_radius` voxels of a node is told its changes
//! every tick, one within twice that every 2nd tick, one further every
//! 4th ([`RATE_TIERS`]). Each rate has its own baseline, so a delta is
//! still encoded once per rate whoever gets it; a node's ticks are
//! staggered by its id, so the quarter-rate work is spread over four ticks.
//! A knower changes rate only when it holds the baseline of the new one:
//! at the node's sync tick (every rate due, every baseline caught up), or
//! when a node at rest starts to change. Added, removed and forced nodes
//! go at once, whatever the rate.
//!
//! Invariants: `peer.known` and `node.knowers` mirror each other; every
//! peer that knows a node holds the baseline of its rate,
//! [`Tracked::sent`]`[rate]` (it got every delta of its rate since it was
//! added or moved to that rate); a node whose baselines may lag its state
//! (`stale`) and that has knowers is in `dirty`; a tick tells a peer a node
//! at most once; peers learn and forget nodes only within [`Replicator::tick`]
//! (so no knower is re-rated while its node's whole state is on its way).
//! Does not own: the nodes (`voxelworld`), sockets (`network`).

use std::collections::{HashMap as StdHashMap, HashSet as StdHashSet, VecDeque};

use buildat_format::payload::PayloadError;
use buildat_network_api::PeerId;
use buildat_replicate_api::{NodeDelta, NodeState, RATE_TIERS, Stats, encode_piece, write_updates};
use buildat_voxelworld_api::{DynamicNode, NodeMotion};
use serde::{Deserialize, Serialize};

/// Maps keyed by ids and cells, with a fast seeded hash (the keys are the
/// server's own ids and positions; the seed is random per process).
type HashMap<K, V> = StdHashMap<K, V, foldhash::fast::RandomState>;
type HashSet<K> = StdHashSet<K, foldhash::fast::RandomState>;

/// Voxels along a cell's side.
pub const CELL: f64 = 32.0;

/// A crowded peer's nearest nodes are chosen again once in this many ticks.
pub const REFRESH_TICKS: usize = 10;

/// The default distance (voxels) within which a knower is told every
/// change (`replicate.full_rate_radius`).
pub const DEFAULT_FULL_RATE_RADIUS: f64 = 16.0;

/// All of a node's baselines may lag its state.
const ALL_STALE: u8 = (1 << RATE_TIERS) - 1;

/// Whether rate `rate` is told a node's changes at `tick`.
fn rate_due(rate: usize, tick: u64, id: u64) -> bool {
    tick.wrapping_add(id).is_multiple_of(1 << rate)
}

/// The rate of a knower `distance_sq` (squared voxels) from a node.
fn rate_at(distance_sq: f64, full_rate_radius: f64) -> usize {
    let full = full_rate_radius * full_rate_radius;
    if distance_sq <= full {
        0
    } else if distance_sq <= 4.0 * full {
        1
    } else {
        2
    }
}

pub type Cell = [i32; 3];

pub fn cell_of(position: [f64; 3]) -> Cell {
    // `as` saturates: a node at an absurd position lands in an edge cell.
    position.map(|p| (p / CELL).floor() as i32)
}

fn cell_distance(a: Cell, b: Cell) -> i64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (i64::from(*x) - i64::from(y)).abs())
        .max()
        .unwrap_or(0)
}

/// Every cell within `radius` of `center`.
fn cells_around(center: Cell, radius: i32) -> impl Iterator<Item = Cell> {
    let r = radius;
    (-r..=r).flat_map(move |dx| {
        (-r..=r).flat_map(move |dy| {
            (-r..=r).map(move |dz| {
                [
                    center[0].saturating_add(dx),
                    center[1].saturating_add(dy),
                    center[2].saturating_add(dz),
                ]
            })
        })
    })
}

/// The peers knowing a node, each with its update rate.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Knowers {
    rates: HashMap<PeerId, u8>,
    /// Knowers at each rate.
    counts: [u32; RATE_TIERS],
}

impl Knowers {
    fn is_empty(&self) -> bool {
        self.rates.is_empty()
    }

    fn peers(&self) -> impl Iterator<Item = PeerId> + '_ {
        self.rates.keys().copied()
    }

    /// A new knower is at the full rate (its baseline is caught up by the
    /// tick that tells it the node whole).
    fn insert(&mut self, peer: PeerId) {
        if let Some(old) = self.rates.insert(peer, 0) {
            self.uncount(usize::from(old));
        }
        self.counts[0] += 1;
    }

    fn remove(&mut self, peer: PeerId) {
        if let Some(old) = self.rates.remove(&peer) {
            self.uncount(usize::from(old));
        }
    }

    fn uncount(&mut self, rate: usize) {
        if let Some(count) = self.counts.get_mut(rate) {
            *count = count.saturating_sub(1);
        }
    }

    /// Every knower at the full rate (each is told the node whole).
    fn all_full_rate(&mut self) {
        for rate in self.rates.values_mut() {
            *rate = 0;
        }
        self.counts = [0; RATE_TIERS];
        self.counts[0] = self.rates.len() as u32;
    }
}

/// A node as replication holds it.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Tracked {
    /// The latest state from the world (quantised).
    state: NodeState,
    /// What the knowers at each rate hold.
    sent: [NodeState; RATE_TIERS],
    /// Bit `k`: `sent[k]` may lag `state`.
    stale: u8,
    cell: Cell,
    knowers: Knowers,
}

impl Tracked {
    fn new(state: NodeState, cell: Cell) -> Self {
        Self {
            sent: std::array::from_fn(|_| state.clone()),
            state,
            stale: 0,
            cell,
            knowers: Knowers::default(),
        }
    }

    /// Rate `rate`'s baseline becomes the state (its knowers are told it).
    fn catch_up(&mut self, rate: usize) {
        if let Some(sent) = self.sent.get_mut(rate) {
            sent.catch_up(&self.state);
        }
        self.stale &= !(1 << rate);
    }

    /// Each knower's rate from its distance. Only while every knower
    /// holds the state (no baseline stale).
    fn rerate(&mut self, peers: &HashMap<PeerId, PeerView>, full_rate_radius: f64) {
        debug_assert_eq!(self.stale, 0, "a knower would skip changes");
        let at = self.state.position();
        let mut counts = [0u32; RATE_TIERS];
        for (peer, rate) in &mut self.knowers.rates {
            let new = peers.get(peer).map_or(0, |view| {
                let d: f64 = (0..3).map(|i| (view.position[i] - at[i]).powi(2)).sum();
                rate_at(d, full_rate_radius)
            });
            *rate = new as u8;
            counts[new] += 1;
        }
        self.knowers.counts = counts;
    }
}

/// A viewer.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct PeerView {
    cell: Cell,
    /// Where it looks from (the nearest nodes are chosen from here).
    position: [f64; 3],
    known: HashSet<u64>,
    /// More nodes were in range than it may know: it is in the refresh
    /// queue.
    crowded: bool,
}

/// What a peer is told at the next tick besides deltas.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
struct Pending {
    added: Vec<u64>,
    removed: Vec<u64>,
}

/// Who knows which node. Serialisable whole: it crosses a reload.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Replicator {
    radius_cells: i32,
    /// Most nodes a peer knows at once.
    max_known: usize,
    /// Knowers within this many voxels of a node are told every change.
    full_rate_radius: f64,
    /// Ticks so far (the rates' schedule).
    ticks: u64,
    /// Crowded peers, in the order their nearest nodes are chosen again.
    refresh: VecDeque<PeerId>,
    nodes: HashMap<u64, Tracked>,
    node_cells: HashMap<Cell, HashSet<u64>>,
    peers: HashMap<PeerId, PeerView>,
    peer_cells: HashMap<Cell, HashSet<PeerId>>,
    pending: HashMap<PeerId, Pending>,
    /// Nodes whose state changed since the last tick.
    dirty: HashSet<u64>,
    /// Nodes that changed cell (or are new) since the last tick.
    moved_nodes: HashSet<u64>,
    /// Peers that changed cell (or are new) since the last tick.
    moved_peers: HashSet<PeerId>,
    /// Nodes whose whole state goes again to their knowers.
    forced: HashSet<u64>,
    stats: Stats,
}

impl Replicator {
    /// Peers know nodes within `radius` voxels (rounded up to cells), at
    /// most the nearest `max_known` of them, told every change of those
    /// within `full_rate_radius` voxels and fewer of those further
    /// (module doc; `f64::INFINITY`: every change to every knower).
    pub fn new(radius: f64, max_known: usize, full_rate_radius: f64) -> Self {
        let radius_cells = (radius.max(0.0) / CELL).ceil().min(64.0) as i32;
        Self {
            radius_cells,
            max_known,
            full_rate_radius: full_rate_radius.max(0.0),
            ticks: 0,
            refresh: VecDeque::new(),
            nodes: HashMap::default(),
            node_cells: HashMap::default(),
            peers: HashMap::default(),
            peer_cells: HashMap::default(),
            pending: HashMap::default(),
            dirty: HashSet::default(),
            moved_nodes: HashSet::default(),
            moved_peers: HashSet::default(),
            forced: HashSet::default(),
            stats: Stats::default(),
        }
    }

    /// Moves a tracked node to `cell` in the index.
    fn recell(&mut self, id: u64, cell: Cell) {
        let Some(tracked) = self.nodes.get_mut(&id) else {
            return;
        };
        if tracked.cell == cell {
            return;
        }
        if let Some(ids) = self.node_cells.get_mut(&tracked.cell) {
            ids.remove(&id);
            if ids.is_empty() {
                self.node_cells.remove(&tracked.cell);
            }
        }
        self.node_cells.entry(cell).or_default().insert(id);
        tracked.cell = cell;
        self.moved_nodes.insert(id);
    }

    /// A node moved; false if it is not tracked (its whole state is
    /// needed: [`Self::node_changed`]).
    pub fn node_moved(&mut self, motion: &NodeMotion) -> bool {
        if !self.nodes.contains_key(&motion.id) {
            return false;
        }
        self.mark_changed(motion.id, |state| state.set_motion(motion));
        self.recell(motion.id, cell_of(motion.position));
        true
    }

    /// A tracked node's state changes: its baselines lag it.
    fn mark_changed(&mut self, id: u64, change: impl FnOnce(&mut NodeState)) {
        let Some(tracked) = self.nodes.get_mut(&id) else {
            return;
        };
        // At rest, every knower holds the state: the moment to move each
        // to the rate of its distance now.
        if tracked.stale == 0 && !tracked.knowers.is_empty() {
            tracked.rerate(&self.peers, self.full_rate_radius);
        }
        change(&mut tracked.state);
        tracked.stale = ALL_STALE;
        // Nobody knows it: no delta to work out (a peer learning it gets
        // it whole).
        if !tracked.knowers.is_empty() {
            self.dirty.insert(id);
        }
    }

    /// A node created or changed (its whole state).
    pub fn node_changed(&mut self, node: &DynamicNode) {
        let state = NodeState::of(node);
        let cell = cell_of(node.position);
        match self.nodes.get(&node.id) {
            Some(_) => {
                self.mark_changed(node.id, |old| *old = state);
                self.recell(node.id, cell);
            }
            None => {
                self.nodes.insert(node.id, Tracked::new(state, cell));
                self.node_cells.entry(cell).or_default().insert(node.id);
                self.moved_nodes.insert(node.id);
            }
        }
    }

    /// A node removed (or gone with its section): its knowers are told.
    pub fn node_removed(&mut self, id: u64) {
        let Some(tracked) = self.nodes.remove(&id) else {
            return;
        };
        if let Some(ids) = self.node_cells.get_mut(&tracked.cell) {
            ids.remove(&id);
            if ids.is_empty() {
                self.node_cells.remove(&tracked.cell);
            }
        }
        for peer in tracked.knowers.peers() {
            if let Some(view) = self.peers.get_mut(&peer) {
                view.known.remove(&id);
            }
            let pending = self.pending.entry(peer).or_default();
            pending.added.retain(|a| *a != id);
            pending.removed.push(id);
        }
        self.dirty.remove(&id);
        self.moved_nodes.remove(&id);
        self.forced.remove(&id);
    }

    /// Where a peer's viewer is.
    pub fn set_viewer(&mut self, peer: PeerId, position: [f64; 3]) {
        let cell = cell_of(position);
        match self.peers.get_mut(&peer) {
            Some(view) if view.cell == cell => {
                view.position = position;
                return;
            }
            Some(view) => {
                view.position = position;
                if let Some(peers) = self.peer_cells.get_mut(&view.cell) {
                    peers.remove(&peer);
                    if peers.is_empty() {
                        self.peer_cells.remove(&view.cell);
                    }
                }
                view.cell = cell;
            }
            None => {
                self.peers.insert(
                    peer,
                    PeerView {
                        cell,
                        position,
                        known: HashSet::default(),
                        crowded: false,
                    },
                );
            }
        }
        self.peer_cells.entry(cell).or_default().insert(peer);
        self.moved_peers.insert(peer);
    }

    /// A peer gone: nothing more is sent to it.
    pub fn remove_peer(&mut self, peer: PeerId) {
        let Some(view) = self.peers.remove(&peer) else {
            return;
        };
        if let Some(peers) = self.peer_cells.get_mut(&view.cell) {
            peers.remove(&peer);
            if peers.is_empty() {
                self.peer_cells.remove(&view.cell);
            }
        }
        for id in view.known {
            if let Some(tracked) = self.nodes.get_mut(&id) {
                tracked.knowers.remove(peer);
            }
        }
        self.pending.remove(&peer);
        self.moved_peers.remove(&peer);
        self.refresh.retain(|p| *p != peer);
    }

    /// The peers that know a node.
    pub fn knowing_peers(&self, id: u64) -> Vec<PeerId> {
        let mut peers: Vec<PeerId> = self
            .nodes
            .get(&id)
            .map(|t| t.knowers.peers().collect())
            .unwrap_or_default();
        peers.sort_unstable();
        peers
    }

    /// Sends a node's whole state again to its knowers at the next tick.
    pub fn force_sync(&mut self, id: u64) {
        if self.nodes.contains_key(&id) {
            self.forced.insert(id);
        }
    }

    pub fn stats(&self) -> Stats {
        Stats {
            nodes: self.nodes.len() as u64,
            peers: self.peers.len() as u64,
            known: self.peers.values().map(|v| v.known.len() as u64).sum(),
            crowded: self.peers.values().filter(|v| v.crowded).count() as u64,
            known_by_rate: self.nodes.values().fold([0; RATE_TIERS], |mut sum, t| {
                for (s, c) in sum.iter_mut().zip(t.knowers.counts) {
                    *s += u64::from(c);
                }
                sum
            }),
            ..self.stats.clone()
        }
    }

    /// The peer learns the node, unless it knows as many as it may (then
    /// it is crowded: its nearest are chosen at its turn).
    fn know(&mut self, peer: PeerId, id: u64) {
        let (Some(view), Some(tracked)) = (self.peers.get_mut(&peer), self.nodes.get_mut(&id))
        else {
            return;
        };
        if view.known.len() >= self.max_known && !view.known.contains(&id) {
            if !view.crowded {
                view.crowded = true;
                self.refresh.push_back(peer);
            }
            return;
        }
        if view.known.insert(id) {
            tracked.knowers.insert(peer);
            let pending = self.pending.entry(peer).or_default();
            pending.removed.retain(|r| *r != id);
            pending.added.push(id);
        }
    }

    fn forget(&mut self, peer: PeerId, id: u64) {
        let (Some(view), Some(tracked)) = (self.peers.get_mut(&peer), self.nodes.get_mut(&id))
        else {
            return;
        };
        if view.known.remove(&id) {
            tracked.knowers.remove(peer);
            let pending = self.pending.entry(peer).or_default();
            let was_added = pending.added.len();
            pending.added.retain(|a| *a != id);
            // Added and gone within one tick: the peer never hears of it.
            if pending.added.len() == was_added {
                pending.removed.push(id);
            }
        }
    }

    /// Whether cells are close enough for a peer to learn a node.
    fn in_range(&self, a: Cell, b: Cell) -> bool {
        cell_distance(a, b) <= i64::from(self.radius_cells)
    }

    /// Whether cells are far enough for a peer to forget a node (a cell
    /// beyond the range: no flapping at its edge).
    fn gone_out(&self, a: Cell, b: Cell) -> bool {
        cell_distance(a, b) > i64::from(self.radius_cells) + 1
    }

    /// Interest of a node that changed cell: far knowers forget it, peers
    /// in range learn it.
    fn update_node_interest(&mut self, id: u64) {
        let Some(tracked) = self.nodes.get(&id) else {
            return;
        };
        let cell = tracked.cell;
        let far: Vec<PeerId> = tracked
            .knowers
            .peers()
            .filter(|p| {
                self.peers
                    .get(p)
                    .is_none_or(|v| self.gone_out(v.cell, cell))
            })
            .collect();
        for peer in far {
            self.forget(peer, id);
        }
        let span = i64::from(self.radius_cells) * 2 + 1;
        let near: Vec<PeerId> = if (self.peers.len() as i64) < span * span * span {
            self.peers
                .iter()
                .filter(|(_, v)| self.in_range(v.cell, cell))
                .map(|(p, _)| *p)
                .collect()
        } else {
            cells_around(cell, self.radius_cells)
                .filter_map(|c| self.peer_cells.get(&c))
                .flatten()
                .copied()
                .collect()
        };
        for peer in near {
            self.know(peer, id);
        }
    }

    /// Interest of a peer that changed cell.
    fn update_peer_interest(&mut self, peer: PeerId) {
        let Some(view) = self.peers.get(&peer) else {
            return;
        };
        let cell = view.cell;
        let far: Vec<u64> = view
            .known
            .iter()
            .filter(|id| {
                self.nodes
                    .get(id)
                    .is_none_or(|t| self.gone_out(t.cell, cell))
            })
            .copied()
            .collect();
        for id in far {
            self.forget(peer, id);
        }
        let near = self.nodes_in_range(cell);
        if near.len() > self.max_known {
            self.know_nearest(peer, near);
        } else {
            for id in near {
                self.know(peer, id);
            }
        }
    }

    /// The nodes in cells within range of `cell`.
    fn nodes_in_range(&self, cell: Cell) -> Vec<u64> {
        cells_around(cell, self.radius_cells)
            .filter_map(|c| self.node_cells.get(&c))
            .flatten()
            .copied()
            .collect()
    }

    /// A crowded peer comes to know the `max_known` nodes of `candidates`
    /// nearest to it, and forgets the others it knew.
    fn know_nearest(&mut self, peer: PeerId, mut candidates: Vec<u64>) {
        let Some(view) = self.peers.get(&peer) else {
            return;
        };
        let from = view.position;
        let crowded = candidates.len() > self.max_known;
        if crowded {
            // Each candidate's distance is worked out once, not at every
            // comparison of the selection.
            let mut by_distance: Vec<(f64, u64)> = candidates
                .iter()
                .map(|&id| {
                    let distance = self.nodes.get(&id).map_or(f64::INFINITY, |t| {
                        let p = t.state.position();
                        (0..3).map(|i| (p[i] - from[i]).powi(2)).sum::<f64>()
                    });
                    (distance, id)
                })
                .collect();
            by_distance.select_nth_unstable_by(self.max_known, |a, b| a.0.total_cmp(&b.0));
            by_distance.truncate(self.max_known);
            candidates = by_distance.into_iter().map(|(_, id)| id).collect();
        }
        let chosen: HashSet<u64> = candidates.iter().copied().collect();
        let dropped: Vec<u64> = view
            .known
            .iter()
            .filter(|id| !chosen.contains(id))
            .copied()
            .collect();
        for id in dropped {
            self.forget(peer, id);
        }
        for id in candidates {
            self.know(peer, id);
        }
        if let Some(view) = self.peers.get_mut(&peer) {
            if crowded && !view.crowded {
                self.refresh.push_back(peer);
            }
            view.crowded = crowded;
        }
    }

    /// Chooses the nearest nodes again for the crowded peers whose turn it
    /// is (all of them once in [`REFRESH_TICKS`] ticks).
    fn refresh_crowded(&mut self) {
        let turns = self.refresh.len().div_ceil(REFRESH_TICKS);
        for _ in 0..turns {
            let Some(peer) = self.refresh.pop_front() else {
                break;
            };
            let Some(view) = self.peers.get_mut(&peer) else {
                continue;
            };
            // Out of the queue: `know_nearest` queues it again if it is
            // still crowded.
            view.crowded = false;
            let cell = view.cell;
            let near = self.nodes_in_range(cell);
            self.know_nearest(peer, near);
        }
    }

    /// What each peer is told this tick: `replicate:nodes` payloads.
    /// Every changed node's delta (one per rate due) and every added
    /// node's state are encoded once, whoever gets them.
    pub fn tick(&mut self, time_ms: u64) -> Result<Vec<(PeerId, Vec<u8>)>, PayloadError> {
        let tick = self.ticks;
        self.ticks = self.ticks.wrapping_add(1);
        for id in std::mem::take(&mut self.moved_nodes) {
            self.update_node_interest(id);
        }
        for peer in std::mem::take(&mut self.moved_peers) {
            self.update_peer_interest(peer);
        }
        self.refresh_crowded();
        for id in std::mem::take(&mut self.forced) {
            if let Some(tracked) = self.nodes.get_mut(&id) {
                // Told whole: every knower holds the state, at the full
                // rate, whose baseline this tick catches up.
                tracked.knowers.all_full_rate();
                for peer in tracked.knowers.peers() {
                    let pending = self.pending.entry(peer).or_default();
                    if !pending.added.contains(&id) {
                        pending.added.push(id);
                    }
                }
            }
        }
        // Deltas from what each rate's knowers hold, each encoded once.
        let mut deltas: Vec<Vec<u8>> = Vec::new();
        let mut per_peer: HashMap<PeerId, Vec<(u64, usize)>> = HashMap::default();
        let mut lagging = Vec::new();
        for id in std::mem::take(&mut self.dirty) {
            let Some(tracked) = self.nodes.get_mut(&id) else {
                continue;
            };
            // Nobody to tell: nothing to work out (a peer learning it later
            // gets it whole).
            if tracked.knowers.is_empty() {
                continue;
            }
            // Each due rate's delta, then one pass over the knowers.
            let mut pieces: [Option<usize>; RATE_TIERS] = [None; RATE_TIERS];
            for (rate, piece) in pieces.iter_mut().enumerate() {
                if tracked.stale & (1 << rate) == 0 || !rate_due(rate, tick, id) {
                    continue;
                }
                let has_knowers = tracked.knowers.counts.get(rate).is_some_and(|c| *c > 0);
                let delta = has_knowers
                    .then(|| tracked.sent.get(rate))
                    .flatten()
                    .and_then(|sent| NodeDelta::between(sent, &tracked.state));
                tracked.catch_up(rate);
                if let Some(delta) = delta {
                    *piece = Some(deltas.len());
                    deltas.push(encode_piece(&delta)?);
                }
            }
            if pieces.iter().any(Option::is_some) {
                for (peer, rate) in &tracked.knowers.rates {
                    if let Some(Some(piece)) = pieces.get(usize::from(*rate)) {
                        per_peer.entry(*peer).or_default().push((id, *piece));
                    }
                }
            }
            if tracked.stale == 0 {
                // The sync tick (every rate was due): every knower holds
                // the state, so each moves to the rate of its distance.
                tracked.rerate(&self.peers, self.full_rate_radius);
            } else {
                lagging.push(id);
            }
        }
        // Baselines not due yet: told at their rate's tick.
        self.dirty.extend(lagging);
        // A node added this tick goes whole, in its latest state, to a
        // knower at the full rate.
        for pending in self.pending.values() {
            for id in &pending.added {
                if let Some(tracked) = self.nodes.get_mut(id) {
                    for rate in 0..RATE_TIERS {
                        if rate == 0 || tracked.knowers.counts.get(rate) == Some(&0) {
                            tracked.catch_up(rate);
                        }
                    }
                }
            }
        }
        let mut states: HashMap<u64, Vec<u8>> = HashMap::default();
        let mut out = Vec::new();
        let mut peers: HashSet<PeerId> = per_peer.keys().copied().collect();
        peers.extend(self.pending.keys().copied());
        for peer in peers {
            let pending = self.pending.remove(&peer).unwrap_or_default();
            let mut changed_ids = per_peer.remove(&peer).unwrap_or_default();
            if !pending.added.is_empty() {
                let added: HashSet<u64> = pending.added.iter().copied().collect();
                changed_ids.retain(|(id, _)| !added.contains(id));
            }
            for id in &pending.added {
                if !states.contains_key(id)
                    && let Some(tracked) = self.nodes.get(id)
                {
                    states.insert(*id, encode_piece(&tracked.state)?);
                }
            }
            let added: Vec<&[u8]> = pending
                .added
                .iter()
                .filter_map(|id| states.get(id).map(Vec::as_slice))
                .collect();
            let changed: Vec<&[u8]> = changed_ids
                .iter()
                .filter_map(|(_, piece)| deltas.get(*piece).map(Vec::as_slice))
                .collect();
            if added.is_empty() && changed.is_empty() && pending.removed.is_empty() {
                continue;
            }
            let payload = write_updates(time_ms, &added, &changed, &pending.removed)?;
            self.stats.packets_sent += 1;
            self.stats.bytes_sent += payload.len() as u64;
            out.push((peer, payload));
        }
        out.sort_unstable_by_key(|(peer, _)| *peer);
        Ok(out)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use buildat_format::Packet;
    use buildat_replicate_api::NodeUpdates;
    use std::collections::BTreeMap;

    /// What a client holds: applies packets as the client does.
    #[derive(Default)]
    struct Client {
        nodes: BTreeMap<u64, NodeState>,
    }

    impl Client {
        fn apply(&mut self, payload: &[u8]) -> NodeUpdates {
            let updates = NodeUpdates::decode(payload).unwrap();
            for state in &updates.added {
                self.nodes.insert(state.id, state.clone());
            }
            for delta in &updates.changed {
                self.nodes
                    .get_mut(&delta.id)
                    .expect("a delta of a known node")
                    .apply(delta);
            }
            for id in &updates.removed {
                assert!(self.nodes.remove(id).is_some(), "removed once known");
            }
            updates
        }
    }

    fn node(id: u64, position: [f64; 3]) -> DynamicNode {
        let vars = BTreeMap::from([("kind".to_string(), b"cow".to_vec())]);
        DynamicNode::at_rest(id, position, false, vars)
    }

    fn run(r: &mut Replicator, clients: &mut BTreeMap<PeerId, Client>) -> usize {
        let out = r.tick(1).unwrap();
        for (peer, payload) in &out {
            clients.entry(*peer).or_default().apply(payload);
        }
        out.len()
    }

    #[test]
    fn a_peer_learns_the_nodes_near_it_follows_them_and_forgets_them() {
        let mut r = Replicator::new(64.0, usize::MAX, f64::INFINITY);
        let mut clients = BTreeMap::new();
        r.node_changed(&node(1, [10.0, 0.0, 10.0]));
        r.node_changed(&node(2, [1000.0, 0.0, 10.0]));
        r.set_viewer(100, [0.0, 0.0, 0.0]);
        run(&mut r, &mut clients);
        let client = &clients[&100];
        assert_eq!(client.nodes.keys().copied().collect::<Vec<_>>(), [1]);
        // It walks: the client follows, each step a delta.
        for step in 1..=20 {
            let mut moved = node(1, [10.0 + f64::from(step) * 0.2, 0.0, 10.0]);
            moved.velocity = [4.0, 0.0, 0.0];
            assert!(r.node_moved(&NodeMotion {
                id: 1,
                position: moved.position,
                orientation: moved.orientation,
                velocity: moved.velocity,
            }));
            run(&mut r, &mut clients);
            assert_eq!(clients[&100].nodes[&1], NodeState::of(&moved));
        }
        assert!(
            !r.node_moved(&NodeMotion {
                id: 77,
                position: [0.0; 3],
                orientation: [0.0, 0.0, 0.0, 1.0],
                velocity: [0.0; 3],
            }),
            "a move of an untracked node asks for its whole state"
        );
        // A variable changes: the client gets it.
        let mut painted = node(1, [14.0, 0.0, 10.0]);
        painted.velocity = [4.0, 0.0, 0.0];
        painted.vars.insert("colour".into(), vec![1, 2, 3]);
        r.node_changed(&painted);
        run(&mut r, &mut clients);
        assert_eq!(
            clients[&100].nodes[&1].var("colour"),
            Some(&[1u8, 2, 3][..])
        );
        // Nothing changed: nothing sent.
        assert_eq!(run(&mut r, &mut clients), 0);
        // Far away (beyond the radius and its margin): forgotten.
        r.node_changed(&node(1, [200.0, 0.0, 10.0]));
        run(&mut r, &mut clients);
        assert!(clients[&100].nodes.is_empty());
        assert_eq!(r.knowing_peers(1), Vec::<PeerId>::new());
        // The peer walks to it: learns it again, and not the far one.
        r.set_viewer(100, [190.0, 0.0, 0.0]);
        run(&mut r, &mut clients);
        assert_eq!(clients[&100].nodes.keys().copied().collect::<Vec<_>>(), [1]);
        assert_eq!(r.knowing_peers(1), [100]);
        r.node_removed(1);
        run(&mut r, &mut clients);
        assert!(clients[&100].nodes.is_empty());
        assert_eq!(r.stats().known, 0);
    }

    #[test]
    fn a_crowded_peer_knows_the_nearest_nodes_and_follows_as_they_move() {
        let mut r = Replicator::new(96.0, 4, f64::INFINITY);
        let mut clients = BTreeMap::new();
        // Ten nodes in a row, 5 voxels apart, all in range.
        for id in 1..=10 {
            r.node_changed(&node(id, [5.0 * id as f64, 0.0, 0.0]));
        }
        r.set_viewer(100, [0.0, 0.0, 0.0]);
        run(&mut r, &mut clients);
        let known = |clients: &BTreeMap<PeerId, Client>| {
            clients[&100].nodes.keys().copied().collect::<Vec<u64>>()
        };
        assert_eq!(known(&clients), [1, 2, 3, 4], "the four nearest");
        assert_eq!(r.stats().crowded, 1);
        assert_eq!(r.stats().known, 4);
        // The viewer walks to the other end (same cell): at its turn, it
        // knows the nearest there instead.
        r.set_viewer(100, [52.0, 0.0, 0.0]);
        for _ in 0..REFRESH_TICKS {
            run(&mut r, &mut clients);
        }
        assert_eq!(known(&clients), [7, 8, 9, 10]);
        // A node comes right next to it: it takes a far one's place.
        r.node_moved(&NodeMotion {
            id: 1,
            position: [52.5, 0.0, 0.0],
            orientation: [0.0, 0.0, 0.0, 1.0],
            velocity: [0.0; 3],
        });
        for _ in 0..REFRESH_TICKS {
            run(&mut r, &mut clients);
        }
        assert_eq!(known(&clients), [1, 8, 9, 10]);
        // Most nodes leave: no longer crowded, it knows all that are left.
        for id in 2..=9 {
            r.node_removed(id);
        }
        for _ in 0..REFRESH_TICKS {
            run(&mut r, &mut clients);
        }
        assert_eq!(known(&clients), [1, 10]);
        assert_eq!(r.stats().crowded, 0);
        // Another peer at the other end is not bounded by the first.
        r.set_viewer(200, [0.0, 0.0, 0.0]);
        run(&mut r, &mut clients);
        assert_eq!(clients[&200].nodes.len(), 2);
    }

    #[test]
    fn pacing_along_the_edge_does_not_flap() {
        let mut r = Replicator::new(32.0, usize::MAX, f64::INFINITY);
        let mut clients = BTreeMap::new();
        r.set_viewer(1, [0.0, 0.0, 0.0]);
        r.node_changed(&node(5, [63.0, 0.0, 0.0]));
        run(&mut r, &mut clients);
        assert!(clients[&1].nodes.contains_key(&5));
        let before = r.stats().packets_sent;
        for i in 0..10 {
            let x = if i % 2 == 0 { 65.0 } else { 63.0 };
            r.node_changed(&node(5, [x, 0.0, 0.0]));
            let out = r.tick(1).unwrap();
            for (peer, payload) in &out {
                let updates = clients.get_mut(peer).unwrap().apply(payload);
                assert!(updates.added.is_empty() && updates.removed.is_empty());
            }
        }
        assert_eq!(r.stats().packets_sent - before, 10, "deltas only");
    }

    #[test]
    fn a_node_added_and_gone_within_a_tick_is_never_told_and_force_sync_resends() {
        let mut r = Replicator::new(64.0, usize::MAX, f64::INFINITY);
        let mut clients = BTreeMap::new();
        r.set_viewer(1, [0.0; 3]);
        r.set_viewer(2, [0.0; 3]);
        run(&mut r, &mut clients);
        r.node_changed(&node(9, [1.0; 3]));
        r.node_removed(9);
        assert_eq!(run(&mut r, &mut clients), 0);
        r.node_changed(&node(10, [1.0; 3]));
        run(&mut r, &mut clients);
        r.force_sync(10);
        let out = r.tick(2).unwrap();
        assert_eq!(out.len(), 2);
        for (_, payload) in out {
            let updates = NodeUpdates::decode(&payload).unwrap();
            assert_eq!(updates.added.len(), 1);
            assert!(updates.changed.is_empty());
        }
        r.remove_peer(1);
        assert_eq!(r.knowing_peers(10), [2]);
    }

    #[test]
    fn deltas_cost_a_fraction_of_whole_states() {
        let mut r = Replicator::new(64.0, usize::MAX, f64::INFINITY);
        let mut clients = BTreeMap::new();
        r.set_viewer(1, [0.0; 3]);
        for id in 0..50 {
            r.node_changed(&node(id, [f64::from(id as u32), 0.0, 0.0]));
        }
        run(&mut r, &mut clients);
        let before = r.stats().bytes_sent;
        for step in 1..=20 {
            for id in 0..50 {
                let mut n = node(id, [f64::from(id as u32) + f64::from(step) * 0.2, 0.0, 0.0]);
                n.velocity = [4.0, 0.0, 0.0];
                r.node_changed(&n);
            }
            run(&mut r, &mut clients);
        }
        let deltas = r.stats().bytes_sent - before;
        let whole: usize = (0..50u64)
            .map(|id| {
                buildat_format::payload::encode(&node(id, [1.0; 3]))
                    .unwrap()
                    .len()
            })
            .sum::<usize>()
            * 20;
        assert!(
            (deltas as f64) < 0.3 * whole as f64,
            "{deltas} bytes of deltas against {whole} of whole states"
        );
    }

    fn motion(id: u64, position: [f64; 3]) -> NodeMotion {
        NodeMotion {
            id,
            position,
            orientation: [0.0, 0.0, 0.0, 1.0],
            velocity: [1.0, 0.0, 0.0],
        }
    }

    #[test]
    fn far_knowers_are_told_less_often_and_catch_up_exactly() {
        let mut r = Replicator::new(96.0, usize::MAX, 16.0);
        let mut clients = BTreeMap::new();
        r.set_viewer(1, [0.0; 3]);
        // Near (every tick), middle (every 2nd), far (every 4th).
        let starts = [(1, 5.0), (2, 24.0), (3, 60.0)];
        for (id, x) in starts {
            r.node_changed(&node(id, [x, 0.0, 0.0]));
        }
        run(&mut r, &mut clients);
        let mut told = BTreeMap::<u64, usize>::new();
        let mut truth = BTreeMap::new();
        for step in 1..=16u32 {
            for (id, x) in starts {
                let m = motion(id, [x + f64::from(step) * 0.1, 0.0, 0.0]);
                r.node_moved(&m);
                truth.insert(id, m);
            }
            for (peer, payload) in r.tick(u64::from(step)).unwrap() {
                let updates = clients.get_mut(&peer).unwrap().apply(&payload);
                for delta in updates.changed {
                    *told.entry(delta.id).or_default() += 1;
                }
            }
            // The near node is always where it is.
            let near = &clients[&1].nodes[&1];
            assert_eq!(
                near.position(),
                truth[&1].position.map(|p| (p * 64.0).round() / 64.0)
            );
        }
        // The first move comes from rest: each knower takes the rate of its
        // distance then.
        assert_eq!(told[&1], 16);
        assert_eq!(told[&2], 8);
        assert_eq!(told[&3], 4);
        assert_eq!(r.stats().known_by_rate, [1, 1, 1]);
        // Stopped: within four ticks every knower holds the truth.
        for tick in 17..=20 {
            for (peer, payload) in r.tick(tick).unwrap() {
                clients.get_mut(&peer).unwrap().apply(&payload);
            }
        }
        for (id, m) in &truth {
            let state = &clients[&1].nodes[id];
            let mut expected = state.clone();
            expected.set_motion(m);
            assert_eq!(*state, expected, "node {id}");
        }
        // Nothing left to tell.
        assert!(r.tick(21).unwrap().is_empty());
        // The viewer walks up to the far node: at its next sync tick it
        // is told every change.
        r.set_viewer(1, [62.0, 0.0, 0.0]);
        let mut far_told = 0;
        for step in 22..=37u32 {
            // A tenth of a voxel a tick: every move shows once quantised.
            r.node_moved(&motion(3, [59.5 + f64::from(step) * 0.1, 0.0, 0.0]));
            for (peer, payload) in r.tick(u64::from(step)).unwrap() {
                let updates = clients.get_mut(&peer).unwrap().apply(&payload);
                if step >= 26 {
                    far_told += updates.changed.iter().filter(|d| d.id == 3).count();
                }
            }
        }
        assert_eq!(far_told, 12, "every tick once re-rated");
    }

    /// A small deterministic generator (xorshift).
    struct Rng(u64);
    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
    }

    #[test]
    fn whatever_moves_learns_forgets_and_is_forced_every_client_converges() {
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        let mut r = Replicator::new(64.0, 12, 10.0);
        let mut clients: BTreeMap<PeerId, Client> = BTreeMap::new();
        let mut truth: BTreeMap<u64, DynamicNode> = BTreeMap::new();
        let mut viewers: BTreeMap<PeerId, [f64; 3]> = BTreeMap::new();
        let at = |rng: &mut Rng| [rng.below(200) as f64, 0.0, rng.below(200) as f64];
        for id in 1..=40 {
            let n = node(id, at(&mut rng));
            r.node_changed(&n);
            truth.insert(id, n);
        }
        for peer in 1..=6 {
            let position = at(&mut rng);
            r.set_viewer(peer, position);
            viewers.insert(peer, position);
        }
        let step = |p: f64, rng: &mut Rng| p + rng.below(9) as f64 * 0.25 - 1.0;
        for tick in 0..400 {
            let moving = tick < 380;
            for (id, n) in truth.iter_mut() {
                if moving && rng.below(3) > 0 {
                    n.position = [
                        step(n.position[0], &mut rng),
                        0.0,
                        step(n.position[2], &mut rng),
                    ];
                    n.velocity = [rng.below(4) as f32, 0.0, 0.0];
                    if rng.below(50) == 0 {
                        n.vars.insert("mood".into(), vec![rng.below(255) as u8]);
                        r.node_changed(n);
                    } else {
                        r.node_moved(&NodeMotion {
                            id: *id,
                            position: n.position,
                            orientation: n.orientation,
                            velocity: n.velocity,
                        });
                    }
                }
            }
            for (peer, position) in viewers.iter_mut() {
                if moving && rng.below(2) == 0 {
                    *position = [
                        step(position[0], &mut rng),
                        0.0,
                        step(position[2], &mut rng),
                    ];
                    r.set_viewer(*peer, *position);
                }
            }
            if moving && rng.below(7) == 0 {
                r.force_sync(1 + rng.below(40));
            }
            if moving && rng.below(40) == 0 {
                let id = 1 + rng.below(40);
                if truth.remove(&id).is_some() {
                    r.node_removed(id);
                }
            }
            for (peer, payload) in r.tick(tick).unwrap() {
                clients.entry(peer).or_default().apply(&payload);
            }
        }
        // Everyone still: every client holds exactly what it knows.
        let mut checked = 0;
        for (peer, client) in &clients {
            for (id, state) in &client.nodes {
                assert_eq!(*state, NodeState::of(&truth[id]), "peer {peer} node {id}");
                assert!(r.knowing_peers(*id).contains(peer));
                checked += 1;
            }
        }
        assert_eq!(checked as u64, r.stats().known);
        assert!(checked > 20, "the test knew {checked} pairs");
        assert!(r.tick(400).unwrap().is_empty(), "nothing left to tell");
    }
}
