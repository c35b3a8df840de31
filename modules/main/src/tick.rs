//! The game's tick, cut in steps the game emits to itself
//! (`main:tick_step`), so packets that come during a tick wait for one
//! step, not the whole tick; the news of a tick sent to the players near it.
//!
//! Owns: the steps, their timing (`get_tick_stats`). Does not own: what a
//! step judges (`actions.rs`, `players.rs`).

use super::*;

/// A tick's steps, each its own run of the handler: pings and packets
/// that come during a step are handled before the next one, so they wait
/// for one step (and the world's calls in it), not the whole tick.
/// `main` emits each step to itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) enum TickStep {
    /// Digs and places: their sight and the edits (two calls to the world).
    Actions,
    /// The players' nodes moved, the edits shared, late joiners dropped.
    Share,
}

impl Event for TickStep {
    const NAME: &'static str = "main:tick_step";
}

/// What the steps of a tick carry from one to the next.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TickInProgress {
    /// Seconds since the tick before.
    pub(crate) dtime: f64,
    /// Time spent in the steps so far (the tick's duration counts only
    /// this, not the packets handled between them).
    pub(crate) busy: Duration,
}

impl Game {
    /// Starts a tick with its first step (joins and moves); the rest
    /// follow as [`TickStep`]s. A `core:tick` that comes while a tick is
    /// under way (the world slow to answer) is folded into the next.
    pub(crate) fn start_tick(&mut self, dtime: f64) -> Result<(), ModuleError> {
        if self.tick.is_some() {
            self.owed_dtime += dtime;
            return Ok(());
        }
        let started = Instant::now();
        let dtime = dtime + std::mem::take(&mut self.owed_dtime);
        self.tick = Some(TickInProgress {
            dtime,
            busy: Duration::ZERO,
        });
        let done = self.spawn_waiting().and_then(|()| self.judge_moves());
        self.end_step(started, Some(TickStep::Actions))?;
        done
    }

    /// Runs one step of the tick under way; nothing if none is (a step
    /// that reached a reloaded instance: what it would have done waits,
    /// stashed, for the next tick).
    pub(crate) fn tick_step(&mut self, step: TickStep) -> Result<(), ModuleError> {
        let Some(tick) = self.tick else {
            return Ok(());
        };
        let started = Instant::now();
        let (done, next) = match step {
            TickStep::Actions => (self.judge_actions(), Some(TickStep::Share)),
            TickStep::Share => {
                let done = self.move_player_nodes(tick.dtime);
                self.send_edits();
                self.drop_unjoined();
                (done, None)
            }
        };
        self.end_step(started, next)?;
        done
    }

    /// Counts a step's time and queues the next step, or ends the tick
    /// (counted in `get_tick_stats`). A step that failed still passes the
    /// tick on, so one error never stops the game's ticks.
    pub(crate) fn end_step(
        &mut self,
        started: Instant,
        next: Option<TickStep>,
    ) -> Result<(), ModuleError> {
        let Some(tick) = self.tick.as_mut() else {
            return Ok(());
        };
        tick.busy += started.elapsed();
        match next {
            Some(step) => {
                if let Err(error) = self.host.emit(&step) {
                    self.tick = None;
                    return Err(error);
                }
            }
            None => {
                let busy = tick.busy;
                self.tick = None;
                self.tick_stats.observe(busy.as_secs_f64());
            }
        }
        Ok(())
    }

    /// Sends the edits gathered since the last tick: each player gets one
    /// `main:edits` of those near it (`main.news_radius`). A packet per
    /// edit per player, or all edits to everyone, would grow with the
    /// square of the player count. Players that get the same edits (all
    /// of them, on a crowded server) share one encoded packet.
    pub(crate) fn send_edits(&mut self) {
        let players: Vec<(PeerId, [f64; 3])> = self
            .players
            .iter()
            .map(|(peer, player)| (*peer, player.position))
            .collect();
        let multicasts = self
            .news
            .share_edits(&players, self.news_radius)
            .into_iter()
            .filter_map(|share| match OutgoingPacket::new(&share.edits) {
                Ok(packet) => Some(Multicast {
                    peers: share.peers,
                    packet,
                }),
                Err(error) => {
                    log::error!("encoding edits for {} peers: {error}", share.peers.len());
                    None
                }
            })
            .collect();
        if let Err(error) = network::queue_multicasts(&self.host, multicasts) {
            log::debug!("sending edits: {error}");
        }
    }
}
