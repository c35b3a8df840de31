//! The game's tick, cut in steps the game emits to itself
//! (`main:tick_step`), so packets that come during a tick wait for one
//! step, not the whole tick; the news of a tick sent to the players near it.
//!
//! Owns: the steps, their timing (`get_tick_stats`, with the p50 and p99
//! of the last minute's ticks: [`TickWindow`], also in `/status`). Does
//! not own: what a step judges (`actions.rs`, `players.rs`).

use std::collections::VecDeque;

use super::*;

/// How far back the tick time's percentiles look.
pub(crate) const TICK_WINDOW: Duration = Duration::from_secs(60);
/// Ticks kept at most: a minute of 100 a second (`--tick-ms 10`); past
/// it the window is the latest ticks.
const TICK_WINDOW_MAX: usize = 6000;

/// The durations of the last minute's ticks, for their percentiles.
#[derive(Debug, Default)]
pub(crate) struct TickWindow {
    ticks: VecDeque<(Instant, f64)>,
}

/// The last minute's ticks: how many, their p50 and p99 in seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct MinuteTicks {
    pub(crate) count: usize,
    pub(crate) p50: f64,
    pub(crate) p99: f64,
}

impl TickWindow {
    /// Counts a tick of `seconds` that ended at `now`; forgets those older
    /// than [`TICK_WINDOW`].
    pub(crate) fn observe(&mut self, now: Instant, seconds: f64) {
        while let Some((at, _)) = self.ticks.front()
            && (now.saturating_duration_since(*at) > TICK_WINDOW
                || self.ticks.len() >= TICK_WINDOW_MAX)
        {
            self.ticks.pop_front();
        }
        self.ticks.push_back((now, seconds));
    }

    /// The ticks of the [`TICK_WINDOW`] before `now` (nearest rank), `None`
    /// when there was none.
    pub(crate) fn minute(&self, now: Instant) -> Option<MinuteTicks> {
        let mut times: Vec<f64> = self
            .ticks
            .iter()
            .filter(|(at, _)| now.saturating_duration_since(*at) <= TICK_WINDOW)
            .map(|(_, seconds)| *seconds)
            .collect();
        if times.is_empty() {
            return None;
        }
        times.sort_unstable_by(f64::total_cmp);
        let rank = |p: f64| {
            let index = (p * times.len() as f64).ceil() as usize;
            times[index.clamp(1, times.len()) - 1]
        };
        Some(MinuteTicks {
            count: times.len(),
            p50: rank(0.50),
            p99: rank(0.99),
        })
    }
}

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
                self.tick_window.observe(Instant::now(), busy.as_secs_f64());
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

impl Game {
    /// `get_tick_stats`: the ticks since the instance loaded, with the
    /// last minute's percentiles.
    pub(crate) fn tick_stats(&self) -> TickStats {
        let mut stats = self.tick_stats.clone();
        if let Some(minute) = self.tick_window.minute(Instant::now()) {
            stats.minute_count = minute.count as u64;
            stats.minute_p50_seconds = minute.p50;
            stats.minute_p99_seconds = minute.p99;
        }
        stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_keeps_the_last_minute_and_ranks_its_ticks() {
        let start = Instant::now();
        let at = |s: u64| start + Duration::from_secs(s);
        let mut window = TickWindow::default();
        assert_eq!(window.minute(start), None);
        // A slow minute, then a fast one: only the fast one counts later.
        for i in 0..100u64 {
            window.observe(at(i * 60 / 100), 0.5);
        }
        for i in 0..100u64 {
            // 1 ms ticks and one 40 ms tick in a hundred.
            let seconds = if i == 50 { 0.040 } else { 0.001 };
            window.observe(at(61 + i * 59 / 100), seconds);
        }
        let minute = window.minute(at(120)).expect("ticks");
        assert_eq!(minute.count, 100);
        assert_eq!(minute.p50, 0.001);
        assert_eq!(minute.p99, 0.001, "one slow tick in 100 is the p100");
        window.observe(at(120), 0.040);
        let minute = window.minute(at(120)).expect("ticks");
        assert_eq!((minute.count, minute.p99), (101, 0.040));
        assert_eq!(window.minute(at(300)), None, "nothing in the last minute");
        // Bounded however fast the ticks come.
        for _ in 0..2 * TICK_WINDOW_MAX {
            window.observe(at(400), 0.002);
        }
        assert_eq!(window.ticks.len(), TICK_WINDOW_MAX);
    }
}
