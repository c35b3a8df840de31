//! What crosses a reload of the game: every player and what waits for the
//! next tick, so nobody is dropped and nothing is lost.
//!
//! Owns: the stash's layout and making it. Does not own: taking it back
//! (`Game::start`).

use super::*;

impl Game {
    pub(crate) fn stash(&mut self) -> GameStash {
        let now = Instant::now();
        GameStash {
            pending_moves: std::mem::take(&mut self.pending_moves)
                .into_iter()
                .map(|(peer, to, at)| (peer, to, now.duration_since(at).as_secs_f64()))
                .collect(),
            pending_actions: std::mem::take(&mut self.pending_actions),
            pending_dig_starts: std::mem::take(&mut self.pending_dig_starts),
            pending_node_actions: std::mem::take(&mut self.pending_node_actions),
            players: self
                .players
                .iter()
                .map(|(peer, p)| StashedPlayer {
                    peer: *peer,
                    account: p.account.clone(),
                    position: p.position,
                    node: p.node,
                    wield: p.wield,
                })
                .collect(),
            joining: self.joining.clone(),
            spawn: self.spawn,
            news: self.news.clone(),
            unjoined: self.unjoined.keys().copied().collect(),
            logged_in: self.logged_in.clone(),
            addresses: self.addresses.clone(),
            privileges: self.privileges.clone(),
        }
    }
}

/// What crosses a reload of the game: every player, so nobody is dropped.
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) struct GameStash {
    pub(crate) players: Vec<StashedPlayer>,
    pub(crate) joining: BTreeMap<PeerId, Account>,
    pub(crate) spawn: Option<[f64; 3]>,
    /// News not sent yet: it goes out at the next version's first tick.
    pub(crate) news: rules::News,
    /// Connections that have not joined yet (their deadline starts again).
    pub(crate) unjoined: Vec<PeerId>,
    pub(crate) logged_in: BTreeMap<PeerId, Account>,
    pub(crate) addresses: BTreeMap<PeerId, String>,
    /// Privileges defined (modules define theirs again when they load).
    pub(crate) privileges: BTreeMap<String, String>,
    /// Moves received and not judged yet, with how long ago each came (in
    /// seconds), judged at the next version's first tick.
    pub(crate) pending_moves: Vec<(PeerId, [f64; 3], f64)>,
    /// Digs, places, punches and uses received and not judged yet.
    pub(crate) pending_actions: Vec<PendingAction>,
    /// Dig starts received and not judged yet (digs under way are not
    /// kept: a dig completed after a reload is refused, started again).
    pub(crate) pending_dig_starts: Vec<(PeerId, Pos)>,
    /// Node punches and uses received and not judged yet.
    pub(crate) pending_node_actions: Vec<(PeerId, u64, BlockActionKind)>,
}

impl buildat_interface::Stash for GameStash {
    // 2: `unjoined`; 3: players' nodes; 4: accounts; 5: pending moves and
    // actions; 6: punches and uses among the actions; 7: the wielded slot,
    // dig starts and node actions.
    const LAYOUT: u32 = 7;
}

#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) struct StashedPlayer {
    pub(crate) peer: PeerId,
    pub(crate) account: Account,
    pub(crate) position: [f64; 3],
    pub(crate) node: Option<u64>,
    pub(crate) wield: u16,
}
