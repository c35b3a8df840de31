//! `buildat-health-api`: the `health` module's public API: a player's hit
//! points and breath ([`Health`]), its calls ([`Damage`], [`Heal`],
//! [`GetHealth`], [`SetRespawn`]) and events ([`Damaged`], [`Died`],
//! [`Respawned`]).
//!
//! Owns: what the calls answer and what the events carry. Does not own:
//! the rules of falling, drowning, lava, the void and regeneration, nor
//! where hp is stored (`modules/health`), the packets
//! (`buildat-health-protocol`, re-exported here).

pub use buildat_health_protocol::*;

use buildat_interface::Event;
use serde::{Deserialize, Serialize};

/// The health module's name, for its calls.
pub const MODULE: &str = "health";
/// The hit points of a player in full health.
pub const MAX_HP: u16 = 20;
/// The breath of a player out of water.
pub const MAX_BREATH: u16 = 10;
/// The space of the world's values health is kept in (keys: `hp/NAME`,
/// `respawn/NAME`).
pub const VALUE_SPACE: &str = "health";

/// Why a player was hurt.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Cause {
    /// Landed after falling further than `health.fall_safe`.
    Fall,
    /// Out of breath under a liquid.
    Drown,
    /// Below `health.void_y`.
    Void,
    /// Standing in lava.
    Lava,
    /// Another module's [`Damage`] call: its name for the cause
    /// (`"creatures:bite"`).
    Module(String),
    /// `/kill`, by an operator or the player.
    Command,
}

impl Cause {
    /// How the cause is written to the client and in logs: `fall`,
    /// `drown`, `void`, `lava`, `command`, or the module's text.
    pub fn text(&self) -> &str {
        match self {
            Cause::Fall => "fall",
            Cause::Drown => "drown",
            Cause::Void => "void",
            Cause::Lava => "lava",
            Cause::Command => "command",
            Cause::Module(text) => text,
        }
    }
}

/// Call `damage`: takes `amount` hp from a player in the game (0 and
/// below kills it). Answers its hp after, `None` when it is not in the
/// game or already dead (nothing happens then).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Damage {
    pub player: String,
    pub amount: u16,
    pub cause: Cause,
}

/// Call `heal`: gives a living player in the game `amount` hp, up to
/// [`MAX_HP`]. Answers its hp after, `None` when not in the game or dead.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Heal {
    pub player: String,
    pub amount: u16,
}

/// Call `get_health`: a player's health, `None` when it is not in the
/// game.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GetHealth {
    pub player: String,
}

/// A player's health.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Health {
    /// 0 ..= [`MAX_HP`]; 0 when dead.
    pub hp: u16,
    /// 0 ..= [`MAX_BREATH`].
    pub breath: u16,
    /// Died and has not asked to respawn yet.
    pub dead: bool,
}

/// Call `set_respawn`: where a player comes back after dying (its feet): a
/// bed; `None` goes back to the world's spawn point. Kept in the world's
/// values; works whether or not the player is in the game.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SetRespawn {
    pub player: String,
    pub position: Option<[f64; 3]>,
}

/// Call `get_health_stats`: what the module tracks.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GetHealthStats {}

/// What [`GetHealthStats`] answers.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HealthStats {
    /// Players in the game, tracked.
    pub players: u32,
    /// Of them, dead.
    pub dead: u32,
    /// Since the module loaded.
    pub damaged_total: u64,
    pub deaths_total: u64,
}

buildat_interface::calls! {
    module MODULE;
    Damage = "damage" -> Option<u16>;
    Heal = "heal" -> Option<u16>;
    GetHealth = "get_health" -> Option<Health>;
    SetRespawn = "set_respawn" -> ();
    GetHealthStats = "get_health_stats" -> HealthStats;
}

/// `health:damaged`: a player lost `amount` hp (its hp now `hp`; 0: it
/// died, [`Died`] follows).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Damaged {
    pub player: String,
    pub amount: u16,
    pub cause: Cause,
    pub hp: u16,
}
impl Event for Damaged {
    const NAME: &'static str = "health:damaged";
}

/// `health:died`: a player died at `position` (its inventory dropped
/// there when `health.drop_on_death`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Died {
    pub player: String,
    pub cause: Cause,
    pub position: [f64; 3],
}
impl Event for Died {
    const NAME: &'static str = "health:died";
}

/// `health:respawned`: a dead player came back at `position` with full
/// hp and breath.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Respawned {
    pub player: String,
    pub position: [f64; 3],
}
impl Event for Respawned {
    const NAME: &'static str = "health:respawned";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn causes_have_their_text() {
        assert_eq!(Cause::Fall.text(), "fall");
        assert_eq!(Cause::Drown.text(), "drown");
        assert_eq!(Cause::Void.text(), "void");
        assert_eq!(Cause::Lava.text(), "lava");
        assert_eq!(Cause::Command.text(), "command");
        assert_eq!(
            Cause::Module("creatures:bite".into()).text(),
            "creatures:bite"
        );
    }
}
