//! The `daytime` module: the time of day. A clock (`clock.rs`) advanced by
//! each `core:tick`, a day lasting `daytime.day_minutes` real minutes;
//! `daytime:night_changed` at dusk and dawn; every joined player told
//! `daytime:time` when it joins, when the time is set and every
//! `daytime.send_seconds` (its client advances the clock in between);
//! `get_time` / `set_time` for modules; the command `time [HH:MM]` on the
//! console and as `/time` in chat for anyone (setting needs the `settime`
//! privilege, defined here through main). A player's `/time HH:MM` is
//! judged on the next tick: a chat command runs inside main's call, so
//! asking main whether the player holds the privilege there would be a
//! call cycle; the answer goes to the player as a `main:chat_line`.
//!
//! The clock is kept in the world's values (space `daytime`): written every
//! `daytime.save_seconds`, on a set and when the module unloads; read when
//! it starts (a new world starts at `daytime.start_time`). A reload carries
//! it in the stash, so not a second is lost.
//!
//! Owns: the clock, who has been told. Does not own: what night means
//! (`buildat-daytime-api`), the sky (the client and this module's
//! `client_lua`), the players (`main`), storage (`voxelworld`).

mod clock;

use std::collections::BTreeMap;

use buildat_daytime_api::{
    GetTime, MAX_DAY_SECONDS, NightChanged, PRIVILEGE, SetTime, TimeOfDay, TimePacket, clock_text,
    parse_clock,
};
use buildat_interface::settings::Settings;
use buildat_interface::stash::Stash;
use buildat_interface::{
    Host, Module, ModuleError, Receive, UnloadKind, events, export_module, log,
};
use buildat_main_api::{
    ChatLine, DefinePrivilege, GetPlayers, HasPrivilege, PlayerJoined, PlayerLeft,
};
use buildat_network_api::{self as network, ClientDisconnected, Multicast, OutgoingPacket, PeerId};
use buildat_voxelworld_api::{GetValue, PutValues, ValueWrite};
use serde::{Deserialize, Serialize};

use clock::{Clock, VALUE_KEY, VALUE_SPACE};

buildat_interface::settings! {
    /// The time of day's settings (`--set daytime.KEY=VALUE`).
    pub(crate) struct DaytimeSettings in "daytime" {
        /// Real minutes a whole day lasts (0: the clock stands still).
        day_minutes: f64 = 20.0,
        /// The time of day a new world starts at (0..1: 0 midnight, 0.5 noon).
        start_time: f64 = 0.3,
        /// Seconds between two `daytime:time` packets to every player.
        send_seconds: f64 = 10.0,
        /// Seconds between two writes of the clock to the world.
        save_seconds: f64 = 60.0,
    }
}

/// `time [HH:MM]`: the time of day; with a clock, set it.
#[derive(clap::Parser)]
#[command(
    name = "time",
    about = "show the time of day; `time HH:MM` sets it (privilege settime)"
)]
struct TimeCommand {
    /// The new time of day, HH:MM on a 24-hour clock.
    clock: Option<String>,
}

/// Players' `/time HH:MM` waiting for the next tick, at most.
const MAX_PENDING_SETS: usize = 64;

/// What a reload carries over: the clock as it is now, who was told.
#[derive(Debug, Serialize, Deserialize)]
struct Kept {
    clock: Clock,
    peers: BTreeMap<PeerId, String>,
    since_save: f64,
    pending: Vec<(String, f64)>,
}

impl Stash for Kept {
    const LAYOUT: u32 = 1;
}

pub struct Daytime {
    host: Host,
    settings: DaytimeSettings,
    clock: Clock,
    /// Whether the clock came from a stash (then it is not read again).
    restored: bool,
    /// Joined players, told the time.
    peers: BTreeMap<PeerId, String>,
    /// Players' `/time HH:MM` (player, time), judged on the next tick.
    pending: Vec<(String, f64)>,
    since_send: f64,
    since_save: f64,
}

impl Daytime {
    fn day_seconds(&self) -> f64 {
        self.settings.day_minutes * 60.0
    }

    fn start(&mut self) -> Result<(), ModuleError> {
        self.settings = DaytimeSettings::read(&self.host)?;
        check_settings(&self.settings)?;
        self.host.call(&DefinePrivilege {
            name: PRIVILEGE.to_string(),
            description: "set the time of day (/time HH:MM)".to_string(),
        })?;
        if !self.restored {
            self.clock = self.load()?;
            self.restored = true;
        }
        for player in self.host.call(&GetPlayers {})? {
            self.peers.insert(player.peer, player.name);
        }
        let peers: Vec<PeerId> = self.peers.keys().copied().collect();
        self.send(peers)
    }

    /// The stored clock, or a new world's.
    fn load(&self) -> Result<Clock, ModuleError> {
        let stored = self.host.call(&GetValue {
            space: VALUE_SPACE.to_string(),
            key: VALUE_KEY.to_string(),
        })?;
        Ok(match stored.map(|bytes| Clock::decode(&bytes)) {
            Some(Ok(clock)) => clock,
            Some(Err(error)) => {
                log::warn!("{error}; the clock starts again at the start time");
                Clock::new(self.settings.start_time)
            }
            None => Clock::new(self.settings.start_time),
        })
    }

    fn save(&mut self) -> Result<(), ModuleError> {
        self.since_save = 0.0;
        self.host.call(&PutValues {
            writes: vec![ValueWrite {
                space: VALUE_SPACE.to_string(),
                key: VALUE_KEY.to_string(),
                value: Some(self.clock.encode()?),
                only_if_absent: false,
            }],
        })?;
        Ok(())
    }

    /// Tells `peers` the time now.
    fn send(&self, peers: Vec<PeerId>) -> Result<(), ModuleError> {
        if peers.is_empty() {
            return Ok(());
        }
        let packet = OutgoingPacket::new(&TimePacket {
            time: (self.clock.time as f32).min(1.0 - f32::EPSILON),
            day_seconds: (self.day_seconds() as f32).min(MAX_DAY_SECONDS),
        })?;
        network::queue_multicasts(&self.host, vec![Multicast { peers, packet }])
    }

    fn send_all(&mut self) -> Result<(), ModuleError> {
        self.since_send = 0.0;
        self.send(self.peers.keys().copied().collect())
    }

    fn night_changed(&self, flip: Option<bool>) -> Result<(), ModuleError> {
        match flip {
            Some(night) => {
                log::info!(
                    "{} at {}",
                    if night {
                        "night falls"
                    } else {
                        "the day breaks"
                    },
                    clock_text(self.clock.time)
                );
                self.host.emit(&NightChanged { night })
            }
            None => Ok(()),
        }
    }

    /// Judges the players' `/time HH:MM` (outside main's call now): sets
    /// the time for those holding the privilege, tells each its answer.
    fn judge_pending(&mut self) -> Result<(), ModuleError> {
        for (player, time) in std::mem::take(&mut self.pending) {
            let may = self.host.call(&HasPrivilege {
                player: player.clone(),
                privilege: PRIVILEGE.to_string(),
            })?;
            let answer = if may {
                self.set(time)?;
                log::info!("{player} set the time to {}", clock_text(time));
                format!("time set: {}", self.report())
            } else {
                format!("setting the time needs the '{PRIVILEGE}' privilege")
            };
            self.tell(&player, answer)?;
        }
        Ok(())
    }

    /// A chat line to `player`, if it plays.
    fn tell(&self, player: &str, text: String) -> Result<(), ModuleError> {
        let Some(peer) = self
            .peers
            .iter()
            .find_map(|(peer, name)| (name == player).then_some(*peer))
        else {
            return Ok(());
        };
        let packet = OutgoingPacket::new(&ChatLine { text })?;
        network::queue_multicasts(
            &self.host,
            vec![Multicast {
                peers: vec![peer],
                packet,
            }],
        )
    }

    fn tick(&mut self, dtime: f64) -> Result<(), ModuleError> {
        self.judge_pending()?;
        let flip = self.clock.advance(self.day_seconds(), dtime);
        self.night_changed(flip)?;
        self.since_send += dtime.max(0.0);
        if self.since_send >= self.settings.send_seconds {
            self.send_all()?;
        }
        self.since_save += dtime.max(0.0);
        if self.since_save >= self.settings.save_seconds
            && let Err(error) = self.save()
        {
            log::warn!("saving the clock: {error}");
        }
        Ok(())
    }

    fn set(&mut self, time: f64) -> Result<(), ModuleError> {
        if !time.is_finite() || !(0.0..1.0).contains(&time) {
            return Err(ModuleError::msg(format!(
                "a time of day is 0 to 1 (0 midnight, 0.5 noon), not {time}"
            )));
        }
        let flip = self.clock.set(time);
        self.night_changed(flip)?;
        self.save()?;
        self.send_all()
    }

    fn get(&self) -> TimeOfDay {
        self.clock.of_day(self.day_seconds())
    }

    /// "HH:MM, day N" (and ", night").
    fn report(&self) -> String {
        let now = self.get();
        format!(
            "{}, day {}{}",
            clock_text(now.time),
            now.day,
            if now.night { ", night" } else { "" }
        )
    }

    fn command(&mut self, by: Option<&str>, asked: TimeCommand) -> Result<String, ModuleError> {
        let Some(text) = asked.clock else {
            return Ok(self.report());
        };
        let time = parse_clock(&text).ok_or_else(|| {
            ModuleError::Usage(format!(
                "{text:?} is not a time of day: HH:MM on a 24-hour clock, e.g. 6:30 or 23:00"
            ))
        })?;
        if let Some(player) = by {
            // Main waits for this answer: its privileges are asked on the
            // next tick.
            if self.pending.len() >= MAX_PENDING_SETS {
                return Err(ModuleError::msg(
                    "too many asking to set the time at once; try again",
                ));
            }
            self.pending.push((player.to_string(), time));
            return Ok(format!(
                "setting the time to {} (privilege '{PRIVILEGE}')...",
                clock_text(time)
            ));
        }
        self.set(time)?;
        log::info!("the console set the time to {}", clock_text(time));
        Ok(format!("time set: {}", self.report()))
    }

    fn keep(&mut self) -> Kept {
        Kept {
            clock: self.clock,
            peers: std::mem::take(&mut self.peers),
            since_save: self.since_save,
            pending: std::mem::take(&mut self.pending),
        }
    }

    fn restore(&mut self, kept: Kept) {
        self.clock = kept.clock;
        self.peers = kept.peers;
        self.since_save = kept.since_save;
        self.pending = kept.pending;
        self.restored = true;
    }
}

/// Checks the settings' bounds.
fn check_settings(settings: &DaytimeSettings) -> Result<(), ModuleError> {
    let max_minutes = f64::from(MAX_DAY_SECONDS) / 60.0;
    let bad = |key: &str, range: String, value: f64| {
        Err(ModuleError::msg(format!(
            "daytime.{key} must be {range}, not {value}"
        )))
    };
    if !(0.0..=max_minutes).contains(&settings.day_minutes) {
        return bad(
            "day_minutes",
            format!("0 to {max_minutes} (0: stopped)"),
            settings.day_minutes,
        );
    }
    if !(0.0..1.0).contains(&settings.start_time) {
        return bad(
            "start_time",
            "0 to 1 (0 midnight, 0.5 noon)".into(),
            settings.start_time,
        );
    }
    if !(0.1..=3600.0).contains(&settings.send_seconds) {
        return bad("send_seconds", "0.1 to 3600".into(), settings.send_seconds);
    }
    if !(1.0..=86400.0).contains(&settings.save_seconds) {
        return bad("save_seconds", "1 to 86400".into(), settings.save_seconds);
    }
    Ok(())
}

impl Module for Daytime {
    fn create(host: Host) -> Result<Self, ModuleError> {
        let settings = DaytimeSettings::default();
        Ok(Self {
            host,
            clock: Clock::new(settings.start_time),
            settings,
            restored: false,
            peers: BTreeMap::new(),
            pending: Vec::new(),
            since_send: 0.0,
            since_save: 0.0,
        })
    }

    fn receive(table: &mut Receive<Self>) {
        table
            .settings::<DaytimeSettings>()
            .event(|day, _: events::Start| day.start())
            .event(|day, _: events::Continue| day.start())
            .event(|day, tick: events::Tick| day.tick(tick.dtime))
            .event(|day, joined: PlayerJoined| {
                day.peers.insert(joined.peer, joined.name);
                day.send(vec![joined.peer])
            })
            .event(|day, left: PlayerLeft| {
                day.peers.remove(&left.peer);
                Ok(())
            })
            .event(|day, gone: ClientDisconnected| {
                day.peers.remove(&gone.peer);
                Ok(())
            })
            .call(|day, _: GetTime| Ok(day.get()))
            .call(|day, set: SetTime| day.set(set.time))
            .command(Some(""), |day, by, asked: TimeCommand| {
                day.command(by, asked)
            })
            .stash(Daytime::keep, |day, kept: Kept| {
                day.restore(kept);
                Ok(())
            });
    }

    fn unload(&mut self, kind: UnloadKind) -> Result<(), ModuleError> {
        if kind == UnloadKind::AfterFailure {
            return Ok(());
        }
        self.save()
    }
}

export_module!(Daytime);

#[cfg(test)]
mod tests;
