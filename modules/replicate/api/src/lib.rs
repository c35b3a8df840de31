//! `buildat-replicate-api`: the `replicate` module's public API: its calls
//! ([`KnowingPeers`], [`ForceSync`], [`GetStats`]) and, re-exported from
//! `buildat-replicate-protocol`, the `replicate:nodes` packet and the
//! quantised node state it carries.
//!
//! Owns: the module's calls and statistics. Does not own: the packet
//! (`buildat-replicate-protocol`), the nodes (`voxelworld`), who knows what
//! (the `replicate` module).
//!
//! Versioned on its own: a change here rebuilds the modules using it.

use buildat_network_api::PeerId;
use serde::{Deserialize, Serialize};

pub use buildat_replicate_protocol::*;

/// The replicate module's name.
pub const MODULE: &str = "replicate";

/// Call: the peers that know a node now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KnowingPeers {
    pub node: u64,
}

/// Call: send a node's whole state again to every peer that knows it, at
/// the next tick (after a change a client cannot have followed, or to
/// recover one that lost track).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ForceSync {
    pub node: u64,
}

/// Call: what the module holds and has sent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GetStats {}

/// Update rates by distance: rate `k` tells a knower a node's changes
/// every `2^k`-th tick (`replicate.full_rate_radius`, docs/protocol.md §11).
pub const RATE_TIERS: usize = 3;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    /// Nodes tracked.
    pub nodes: u64,
    /// Peers with a viewer position.
    pub peers: u64,
    /// Pairs (peer, node known by it).
    pub known: u64,
    /// Peers with more nodes in range than they may know (they know the
    /// nearest).
    pub crowded: u64,
    /// Of `known`, the pairs told every change, every 2nd tick's and every
    /// 4th tick's (by distance: `replicate.full_rate_radius`).
    pub known_by_rate: [u64; RATE_TIERS],
    /// `replicate:nodes` packets and their payload bytes since the module
    /// was first loaded.
    pub packets_sent: u64,
    pub bytes_sent: u64,
}

buildat_interface::calls! {
    module MODULE;
    KnowingPeers = "knowing_peers" -> Vec<PeerId>;
    ForceSync = "force_sync" -> ();
    GetStats = "get_stats" -> Stats;
}
