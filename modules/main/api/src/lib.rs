//! `buildat-main-api`: the default game's public API: its calls
//! (privileges, tick statistics), the event telling a block's handler
//! module of punches and uses ([`BlockActions`]) and, re-exported from
//! `buildat-main-protocol`, its packets (`docs/protocol.md` §10), so a
//! module finds both in one crate.
//!
//! Owns: the `main` module's calls and what they answer, and its events.
//! Does not own: the packets' layouts (`buildat-main-protocol`) or what the
//! game accepts (`modules/main`).

pub use buildat_items_protocol::ItemStack;
pub use buildat_main_protocol::*;

/// The `main` module's name, for its calls.
pub const MODULE: &str = "main";

/// Upper bounds (seconds) of the buckets of [`TickStats`]; a last bucket
/// takes the rest.
pub const TICK_BUCKETS: [f64; 10] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0,
];

/// Call `get_tick_stats`: how long the game's ticks took (the steps of
/// each `core:tick`: joins, moves, actions, news; not the packets handled
/// between the steps), since the module's instance loaded, and the p50
/// and p99 of the last minute.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct GetTickStats {}

/// A histogram of tick durations.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TickStats {
    /// Ticks counted.
    pub count: u64,
    /// Their durations added up, in seconds.
    pub sum_seconds: f64,
    /// Ticks per bucket of [`TICK_BUCKETS`] (not cumulative), then those
    /// longer than the last bound.
    pub buckets: Vec<u64>,
    /// The latest tick's duration, in seconds.
    pub last_seconds: f64,
    /// Ticks of the last minute (the `minute_` figures; 0: none yet).
    pub minute_count: u64,
    /// The median duration of the last minute's ticks, in seconds.
    pub minute_p50_seconds: f64,
    /// The 99th percentile of the last minute's ticks, in seconds.
    pub minute_p99_seconds: f64,
}

impl TickStats {
    /// Counts one tick of `seconds`.
    pub fn observe(&mut self, seconds: f64) {
        if self.buckets.len() != TICK_BUCKETS.len() + 1 {
            self.buckets = vec![0; TICK_BUCKETS.len() + 1];
        }
        let bucket = TICK_BUCKETS
            .iter()
            .position(|bound| seconds <= *bound)
            .unwrap_or(TICK_BUCKETS.len());
        if let Some(slot) = self.buckets.get_mut(bucket) {
            *slot += 1;
        }
        self.count += 1;
        self.sum_seconds += seconds;
        self.last_seconds = seconds;
    }
}

/// The prefix of the events telling a handler module of punches and uses.
pub const BLOCK_ACTION_PREFIX: &str = "main:block_action/";

/// The event a handler module subscribes to for the punches and uses of
/// its blocks: `main:block_action/<module>` (its payload is
/// [`BlockActions`]).
pub fn block_action_event(module: &str) -> String {
    format!("{BLOCK_ACTION_PREFIX}{module}")
}

/// `main:block_action/<module>`: the punches and uses (`main:punch`,
/// `main:use`) of one tick on voxels whose definition names `<module>` as
/// its `handler_module`, in the order they came, each judged as a dig is
/// (reach and sight from the server's position). One event per handler
/// module per tick; a punch or use of a voxel without a handler module is
/// told to nobody.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BlockActions {
    pub actions: Vec<BlockAction>,
}

/// A player punched or used a voxel.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BlockAction {
    /// Where the voxel is.
    pub pos: VoxelPos,
    /// The voxel (with its game bits) when it was judged.
    pub voxel: u32,
    /// The player's account name.
    pub player: String,
    /// The wielded stack, if any.
    pub item: Option<ItemStack>,
    pub kind: BlockActionKind,
}

/// What a player did to a voxel or a node besides digging and placing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum BlockActionKind {
    /// `main:punch` (`main:punch_node` for a node).
    Punch,
    /// `main:use` (`main:use_node` for a node).
    Use,
}

/// The privileges the game knows from the start (docs/operators.md).
pub const BUILT_IN_PRIVILEGES: &[(&str, &str)] = &[
    ("interact", "dig, place, punch and use"),
    ("shout", "chat"),
    ("fly", "move without ground below"),
    ("fast", "move four times as fast"),
    ("noclip", "move through solid voxels"),
    ("teleport", "/tp"),
    ("creative", "endless blocks, instant digging"),
    ("give", "give items (for modules)"),
    ("kick", "/kick"),
    ("ban", "/ban and /unban"),
    ("privs", "/grant and /revoke"),
    ("server", "run other modules' commands and see /status"),
];

/// Call `define_privilege`: a module adds a privilege (a name of 1 to 32
/// lowercase letters, digits or `_`); defining one again changes its
/// description.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DefinePrivilege {
    pub name: String,
    pub description: String,
}

/// Call `has_privilege`: whether the account `player` holds `privilege`
/// (false for unknown players and privileges).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct HasPrivilege {
    pub player: String,
    pub privilege: String,
}

/// Call `get_privileges`: an account's privileges, `None` if no account has
/// that name.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct GetPrivileges {
    pub player: String,
}

/// Call `grant_privilege`: gives an account a defined privilege (kept in
/// the world's database); an error names why not.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct GrantPrivilege {
    pub player: String,
    pub privilege: String,
}

/// Call `revoke_privilege`: takes a privilege from an account.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RevokePrivilege {
    pub player: String,
    pub privilege: String,
}

/// The setting `main.creative`: when true every player plays as if they
/// held the `creative` privilege (the test harness sets it).
pub const SETTING_CREATIVE: &str = "main.creative";

/// Call `get_players`: the players in the game now (joined, not yet left),
/// by name.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct GetPlayers {}

/// One player in the game, as [`GetPlayers`] answers.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PlayerState {
    /// The account name.
    pub name: String,
    pub peer: PeerId,
    /// The feet, where the server last accepted a move.
    pub position: [f64; 3],
    /// The wielded hotbar slot (index of the inventory's `main` list,
    /// 0..[`HOTBAR_SLOTS`]).
    pub wield: u16,
}

/// `main:player_joined`: a player joined the game (after `main:join` was
/// accepted, before its first tick in the world).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PlayerJoined {
    pub name: String,
    pub peer: PeerId,
}
impl buildat_interface::Event for PlayerJoined {
    const NAME: &'static str = "main:player_joined";
}

/// `main:player_left`: a player that had joined left (disconnected or
/// kicked).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PlayerLeft {
    pub name: String,
    pub peer: PeerId,
}
impl buildat_interface::Event for PlayerLeft {
    const NAME: &'static str = "main:player_left";
}

/// `main:node_actions`: the punches and uses (`main:punch_node`,
/// `main:use_node`) of one tick on nodes (creatures, drops, other
/// players), in the order they came, each judged for reach from the
/// server's position. One event per tick with any.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct NodeActions {
    pub actions: Vec<NodeAction>,
}
impl buildat_interface::Event for NodeActions {
    const NAME: &'static str = "main:node_actions";
}

/// A player punched or used a node.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct NodeAction {
    /// The node's id.
    pub node: u64,
    /// The player's account name.
    pub player: String,
    /// The wielded stack, if any.
    pub item: Option<ItemStack>,
    pub kind: BlockActionKind,
}

/// `main:voxel_actions`: every punch and use of a voxel in one tick that
/// passed the game's checks (reach, sight, privilege), whatever its block,
/// in the order they came: what a module acting on an item's use listens
/// to (a bucket taking water), where [`BlockActions`] go only to the
/// block's handler module. One event per tick with any.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct VoxelActions {
    pub actions: Vec<BlockAction>,
}
impl buildat_interface::Event for VoxelActions {
    const NAME: &'static str = "main:voxel_actions";
}

/// Call `teleport`: moves a player (by account name) to `position` (its
/// feet), as `/tp` does: the client is corrected, the world streams
/// around the new place. An error when the player is not in the game or
/// the position is not in the world.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Teleport {
    pub player: String,
    pub position: [f64; 3],
}

buildat_interface::calls! {
    module MODULE;
    GetPlayers = "get_players" -> Vec<PlayerState>;
    Teleport = "teleport" -> ();
    GetTickStats = "get_tick_stats" -> TickStats;
    DefinePrivilege = "define_privilege" -> ();
    HasPrivilege = "has_privilege" -> bool;
    GetPrivileges = "get_privileges" -> Option<Vec<String>>;
    GrantPrivilege = "grant_privilege" -> ();
    RevokePrivilege = "revoke_privilege" -> ();
}

#[cfg(test)]
mod tick_tests {
    use super::*;

    #[test]
    fn ticks_land_in_their_buckets() {
        let mut stats = TickStats::default();
        stats.observe(0.0001);
        stats.observe(0.003);
        stats.observe(5.0);
        assert_eq!(stats.count, 3);
        assert_eq!(stats.buckets.len(), TICK_BUCKETS.len() + 1);
        assert_eq!(stats.buckets[0], 1);
        assert_eq!(stats.buckets[3], 1);
        assert_eq!(stats.buckets[TICK_BUCKETS.len()], 1);
        assert!((stats.sum_seconds - 5.0031).abs() < 1e-9);
    }
}
