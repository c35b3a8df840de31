//! `buildat-voxelworld-api`: the `voxelworld` module's public API, used by
//! games, generators, tools, the client and tests.
//!
//! Owns: the events (`voxelworld:generation_request`,
//! `voxelworld:node_volume_updated`, `voxelworld:viewer_moved` and
//! `voxelworld:viewers_moved`,
//! `voxelworld:nodes_changed`, `voxelworld:special/<module>`: [`SpecialVoxels`]), the typed
//! calls (among them modules' values kept with the world: [`GetValue`],
//! [`PutValues`], [`ListValues`], and edits stored together
//! with values: [`EditTogether`]), the generator's call ([`Generate`]) and
//! the stored node record, and the world border's rule ([`Border`]: what
//! voxelworld does not generate and `main` does not let players cross).
//! Re-exports the world stream's packets
//! ([`stream`]) and dynamic nodes ([`DynamicNode`]) from
//! `buildat-voxelworld-protocol`, which the client uses without this crate.
//! Does not own: the world itself (the `voxelworld` module) or voxel types
//! (`buildat-voxel`).
//!
//! Versioned on its own: a change here rebuilds the modules that depend on
//! it (and only them) when they are next loaded or reloaded.

pub use buildat_voxelworld_protocol::node::{DynamicNode, IDENTITY, NodeMotion};
pub use buildat_voxelworld_protocol::stream;

use std::collections::BTreeMap;

use buildat_interface::Event;
use buildat_network_api::PeerId;
use buildat_voxel::geometry::Pos;
use serde::{Deserialize, Serialize};

pub use buildat_voxel::{BlockDefinition, VoxelDefinition, VoxelRegistry};

/// The voxelworld module's name.
pub const MODULE: &str = "voxelworld";

/// A section needs its voxels: a generator answers with [`ApplyGenerated`].
/// A generator with a queue serves the smallest `distance` first: the
/// squared distance, in chunks, from the section's chunk a player wants to
/// that player's chunk (0 when a call, not a player, waits on it). The same
/// section asked again while queued takes the new distance when smaller
/// (voxelworld asks again as players come nearer).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GenerationRequest {
    pub section: Pos,
    pub distance: u32,
}
impl Event for GenerationRequest {
    const NAME: &'static str = "voxelworld:generation_request";
}

/// Sections asked for that nobody wants any more (the players who wanted
/// them moved away or left): a generator drops them from its queue. One
/// already being generated is still handed back (and stored).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GenerationCancel {
    pub sections: Vec<Pos>,
}
impl Event for GenerationCancel {
    const NAME: &'static str = "voxelworld:generation_cancel";
}

/// A chunk's voxels changed (committed edits or generation).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeVolumeUpdated {
    pub node_id: u64,
    pub chunk: Pos,
}
impl Event for NodeVolumeUpdated {
    const NAME: &'static str = "voxelworld:node_volume_updated";
}

/// Stream the world around `position` to `peer` (registry first, then
/// chunks nearest first; see [`stream`]): an event a game emits on every
/// move without waiting for the world. A peer that disconnects stops being
/// streamed to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Viewer {
    pub peer: PeerId,
    pub position: [f64; 3],
}
impl Event for Viewer {
    const NAME: &'static str = "voxelworld:viewer_moved";
}

/// Many [`Viewer`]s at once (`voxelworld:viewers_moved`): a game tells the
/// world where every player that moved in a tick is in one event, so a
/// call behind it waits for one event, not one per player.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Viewers {
    pub viewers: Vec<Viewer>,
}
impl Event for Viewers {
    const NAME: &'static str = "voxelworld:viewers_moved";
}

/// One slot's change in an inventory transaction, for the rollback log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ItemLogged {
    /// Milliseconds since the Unix epoch.
    pub time_ms: i64,
    /// Who it was for: a player's name, else a module's (`by_module`).
    pub by: String,
    /// The inventory and its list, as `player:ann main`.
    pub inventory: String,
    pub slot: u16,
    /// The item's name.
    pub item: String,
    /// How many came into the slot (negative: went out of it).
    pub count: i32,
}

/// Inventory transactions' slot changes for the rollback log
/// (`voxelworld:log_items`), sent by the inventory module after they are
/// stored; kept with the log's voxel changes, pruned with them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogItems {
    pub changes: Vec<ItemLogged>,
}
impl Event for LogItems {
    const NAME: &'static str = "voxelworld:log_items";
}

/// A player joined from an address (`voxelworld:log_login`), told by the
/// game: the rollback log keeps it as long as its edits, so
/// `rollback ADDRESS DURATION` knows who played from where.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogLogin {
    /// Milliseconds since the Unix epoch.
    pub time_ms: i64,
    pub name: String,
    /// The peer's IP address in its one form (`1.2.3.4`, `2001:db8::1`).
    pub address: String,
}
impl Event for LogLogin {
    const NAME: &'static str = "voxelworld:log_login";
}

/// Call: register a block; answers the voxel ids it uses.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RegisterBlock {
    pub block: BlockDefinition,
}

/// Call: the voxel registry.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GetRegistry {}

/// Call: the world's configuration (`world.toml`, which voxelworld owns and
/// alone parses), with the section size in force.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GetWorldConfig {}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WorldConfig {
    pub name: String,
    /// The terrain generator's seed.
    pub seed: u64,
    /// Chunks along each side of a section.
    pub section_size: [i32; 3],
}

/// Call: the world's chunk and section sizes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GetSizes {}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sizes {
    /// Voxels along each side of a chunk.
    pub chunk_size: i32,
    /// Chunks along each side of a section.
    pub section_size: [i32; 3],
}

/// Call `get_border`: the world border (`voxelworld.border`), `None`
/// when the world has none.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GetBorder {}

/// The world border: the world stops `blocks` voxels from 0,0 on x and on
/// z. A position is inside while `|x|` and `|z|` are at most `blocks`
/// (the voxels `-blocks..blocks`); a section with no voxel inside is never
/// generated, and players do not move past it (`main`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Border {
    pub blocks: u32,
}

/// Emitted by voxelworld when the console's `set voxelworld.border`
/// changed the border of the running world (`main` stops moves at the new
/// one).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BorderChanged {
    pub border: Option<Border>,
}
impl Event for BorderChanged {
    const NAME: &'static str = "voxelworld:border_changed";
}

impl Border {
    /// The border of the setting `voxelworld.border` (0: none).
    pub fn of_setting(blocks: u32) -> Option<Self> {
        (blocks > 0).then_some(Self { blocks })
    }

    /// How far `position` is beyond the border on x or z (the farther),
    /// 0 inside.
    pub fn beyond(&self, position: [f64; 3]) -> f64 {
        let limit = f64::from(self.blocks);
        (position[0].abs() - limit)
            .max(position[2].abs() - limit)
            .max(0.0)
    }

    /// Whether no voxel of `section` (of `section_size` chunks of
    /// `chunk_size` voxels) is inside the border on x or z.
    pub fn section_beyond(&self, section: Pos, section_size: [i32; 3], chunk_size: i32) -> bool {
        let limit = i64::from(self.blocks);
        [0, 2].into_iter().any(|axis| {
            let side = i64::from(section_size[axis]) * i64::from(chunk_size);
            let first = i64::from(section[axis]) * side;
            let last = first + side - 1;
            first >= limit || last < -limit
        })
    }
}

/// Call: a voxel; `None` where its section is not generated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GetVoxel {
    pub pos: Pos,
}

/// Call: several voxels at once (in the order asked; `None` where a section
/// is not generated): one call where a game checks a move or a line of
/// sight. At most [`MAX_VOXELS_PER_CALL`] positions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GetVoxels {
    pub positions: Vec<Pos>,
}

/// Most positions one [`GetVoxels`] may ask for.
pub const MAX_VOXELS_PER_CALL: usize = 4096;

/// Call: set a voxel; takes effect at once, [`Commit`] announces it. Games
/// editing on a player's behalf use [`EditVoxel`] instead.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SetVoxel {
    pub pos: Pos,
    pub voxel: u32,
}

/// Call: emit `node_volume_updated` for every chunk changed since the last
/// commit and stream the changes; answers how many chunks.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Commit {}

/// Which voxels an [`EditVoxel`] may replace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Replace {
    /// Whatever is there.
    Any,
    /// Only air (placing).
    OnlyAir,
    /// Anything but air (digging).
    NotAir,
    /// Only this very voxel (type and game bits): a module acting on what
    /// it saw there, such as a handler removing its own voxel, never
    /// replaces what somebody put there meanwhile.
    Exactly(u32),
}

/// Call: one edit in one call. Checks `replace` against the voxel there,
/// sets it, marks its section for saving when `save`, and commits; the
/// changed chunk streams to its holders after the call has answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EditVoxel {
    pub pos: Pos,
    pub voxel: u32,
    pub replace: Replace,
    pub save: bool,
    /// The player the edit is made for (a dig, a place), if any: handler
    /// modules are told it ([`SpecialVoxel::by`]). A module's own edit
    /// (water flowing, a torch dropping) names its module with
    /// [`by_module`]: the rollback log records it, handlers are told `None`.
    pub by: Option<String>,
}

/// What follows a module's name in [`EditVoxel::by`] for its own edits (a
/// space: no player's name holds one).
pub const MODULE_ACTOR_SUFFIX: &str = " (module)";

/// [`EditVoxel::by`] of an edit the module `module` makes on its own
/// (not for a player): logged as `liquid (module)`.
pub fn by_module(module: &str) -> Option<String> {
    Some(format!("{module}{MODULE_ACTOR_SUFFIX}"))
}

/// The player an [`EditVoxel::by`] names: `None` for a module's own edit.
pub fn get_player_of(by: Option<&str>) -> Option<&str> {
    by.filter(|by| !by.ends_with(MODULE_ACTOR_SUFFIX))
}

/// What an [`EditVoxel`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum EditOutcome {
    /// Set; `previous` was there before.
    Edited { previous: u32 },
    /// The voxel there did not match `replace`; nothing changed.
    Refused { current: u32 },
    /// Its section is not generated yet; nothing changed.
    NotGenerated,
}

/// Prefix of the event a voxel's handler module is told through: the full
/// name is `voxelworld:special/<handler module>`.
pub const SPECIAL_VOXEL_PREFIX: &str = "voxelworld:special/";

/// The event name a handler module subscribes to: `voxelworld:special/<module>`
/// (its payload is [`SpecialVoxels`]).
pub fn special_voxel_event(module: &str) -> String {
    format!("{SPECIAL_VOXEL_PREFIX}{module}")
}

/// `voxelworld:special/<module>`: what happened to the voxels whose
/// definition names `<module>` as its `handler_module`, in one commit of
/// edits ([`EditVoxel`], or [`SetVoxel`]s and their [`Commit`]), in the
/// order the edits were made. One event per handler module per commit, so
/// a commit of many voxels does not flood the handler's queue. Only edits
/// are told: generated or loaded terrain is not. A voxel set several times
/// in one commit is told once, from what was there before the commit to
/// what is there after it (nothing when that is the same voxel); a change
/// of its game bits alone is neither [`SpecialCause::Placed`] nor
/// [`SpecialCause::Dug`]. Neighbours in sections not in memory are not
/// told. At most [`MAX_SPECIAL_CHANGES`] changed voxels of a commit are
/// looked at. An event, not a call: a handler may call voxelworld back (an
/// [`EditVoxel`] whose own commit is told in turn; ending a chain of
/// reactions is the handler's business).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SpecialVoxels {
    pub voxels: Vec<SpecialVoxel>,
}

/// Something happened to or beside a voxel with a handler module.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpecialVoxel {
    /// Where the voxel is.
    pub pos: Pos,
    /// The voxel there now (after a [`SpecialCause::Dug`], the one that
    /// replaced the handler's).
    pub voxel: u32,
    /// The voxel there before the commit (the same as `voxel` when only a
    /// neighbour changed).
    pub previous: u32,
    pub cause: SpecialCause,
    /// The player whose edit this was ([`EditVoxel::by`]: for `Placed` and
    /// `Dug`, who changed the voxel; for `NeighbourChanged`, who changed
    /// the neighbour); `None` for a module's or the console's edit.
    pub by: Option<String>,
}

/// Why a handler module is told about a voxel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SpecialCause {
    /// A voxel of the handler's was put at `pos` (`voxel`), replacing
    /// `previous` (of another type).
    Placed,
    /// The handler's voxel `previous` at `pos` was replaced by `voxel`
    /// (air when dug, another type when replaced).
    Dug,
    /// One of the six face neighbours of the handler's voxel at `pos`
    /// changed from `was` to `now` (game bits alone too).
    NeighbourChanged { neighbour: Pos, was: u32, now: u32 },
}

/// Most changed voxels of one commit that handler modules are told about;
/// the changes beyond are not told (and voxelworld logs it).
pub const MAX_SPECIAL_CHANGES: usize = 16384;

/// Call: load a section from storage or ask for its generation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadOrGenerateSection {
    pub section: Pos,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SectionStatus {
    pub generated: bool,
    pub save_enabled: bool,
}

/// Call: whether a section is written to storage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SetSectionSaveEnabled {
    pub section: Pos,
    pub enabled: bool,
}

/// Call: a generator's answer to a [`GenerationRequest`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApplyGenerated {
    pub section: GeneratedSection,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GeneratedSection {
    pub section: Pos,
    /// Each chunk's voxel blob (`buildat_format::encode_voxels`, voxels by name).
    pub chunks: Vec<(Pos, ChunkData)>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChunkData {
    pub node_id: u64,
    #[serde(with = "serde_bytes")]
    pub blob: Vec<u8>,
}

/// Call: create a dynamic node; answers its id, never reused.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CreateNode {
    pub position: [f64; 3],
    pub save_enabled: bool,
    pub vars: BTreeMap<String, Vec<u8>>,
}

/// Call: several [`EditVoxel`]s in one call, each checked and set in turn
/// (a tick's digs and places of every player), then committed together: a
/// chunk several of them change is streamed to its holders once, as one
/// `voxelworld:voxel_updates`. Answers each one's outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EditVoxels {
    pub edits: Vec<EditVoxel>,
}

/// Call: create several dynamic nodes in one call (a tick's joiners, a
/// herd); answers each one's id, or `None` where its place cannot be
/// loaded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CreateNodes {
    pub nodes: Vec<CreateNode>,
}

/// Call: a dynamic node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GetNode {
    pub id: u64,
}

/// Call: every loaded dynamic node (`with_var`: only those having that
/// variable), in no particular order. What a module loaded after the nodes
/// were made starts from (the `replicate` module, a creatures module
/// adopting its persistent creatures).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ListNodes {
    pub with_var: Option<String>,
}

impl ListNodes {
    /// Whether `node` is one this call lists (it has the variable asked
    /// for, or none was).
    pub fn includes(&self, node: &DynamicNode) -> bool {
        self.with_var
            .as_ref()
            .is_none_or(|var| node.vars.contains_key(var))
    }
}

/// Call: move dynamic nodes, all of a module's in one call a tick; the
/// nodes attached to each move with it. A node moving into another section
/// moves there (saved with it if persistent). Answers the ids it does not
/// know (removed, or their section was unloaded).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MoveNodes {
    pub moves: Vec<NodeMotion>,
}

/// Call: attach a node to `parent` (it then moves with it, keeping its
/// offset) or detach it (`None`: it stays where it is). Attaching a node to
/// itself or to one of its own descendants is refused.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SetNodeParent {
    pub id: u64,
    pub parent: Option<u64>,
}

/// `voxelworld:nodes_changed`: the dynamic nodes created or changed
/// (variables, parent) since the last one, whole; those only moved, by
/// their motion (a moving crowd costs no variables); and those removed.
/// Each node in one list at most; once a tick at most. Nodes of a section
/// loaded from storage count as created, those of a section leaving memory
/// as removed. What the `replicate` module listens to.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NodesChanged {
    pub changed: Vec<DynamicNode>,
    pub moved: Vec<NodeMotion>,
    pub removed: Vec<u64>,
}
impl Event for NodesChanged {
    const NAME: &'static str = "voxelworld:nodes_changed";
}

/// Call: remove a dynamic node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RemoveNode {
    pub id: u64,
}

/// Call: remove several dynamic nodes in one call (a herd falling
/// asleep, a crowd gone); answers the ids that were not there.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RemoveNodes {
    pub ids: Vec<u64>,
}

/// Call: set a dynamic node's variable.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SetNodeVar {
    pub id: u64,
    pub name: String,
    pub value: Vec<u8>,
}

/// Call: write every changed save-enabled section now; answers how many.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Save {}

/// Call: generate and save the region around the origin, in sections.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pregen {
    /// x and z from -radius to radius.
    pub radius: u32,
    /// y from -height to height.
    pub height: u32,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PregenReport {
    pub generated: u64,
    pub already_present: u64,
}

/// Call: the top voxel of each column of a region, from the sections in
/// memory and those stored (nothing is generated or kept loaded for it),
/// for maps. Columns `x + i·step`, `z + j·step` for `i < width`, `j <
/// depth`, answered row by row (`j` outer); at most [`MAX_COLUMNS`]
/// columns and [`MAX_COLUMN_HEIGHT`] voxels from `y_top` down to
/// `y_bottom`, so one call stays short on the world's thread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ColumnTops {
    pub x: i32,
    pub z: i32,
    pub width: u32,
    pub depth: u32,
    /// 1 or more: voxels between two columns.
    pub step: u32,
    pub y_top: i32,
    pub y_bottom: i32,
}

/// Most columns one [`ColumnTops`] call answers.
pub const MAX_COLUMNS: u32 = 128 * 128;
/// Most voxels from `y_top` to `y_bottom` in one [`ColumnTops`] call.
pub const MAX_COLUMN_HEIGHT: i32 = 1024;

/// The answer to [`ColumnTops`], one entry per column.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Tops {
    /// The top voxel that is not air ([`buildat_voxel::AIR`] where the
    /// column is all air or nothing of it is generated).
    pub voxels: Vec<u32>,
    /// Its y (`i32::MIN` where there is none).
    pub heights: Vec<i32>,
    /// Columns not known: a chunk in the range above their top (or above
    /// their bottom, for a column of air) is not generated yet (a map
    /// asks again later). Their voxel is air.
    pub missing: u32,
}

/// Call: the ground of the column at `x`, `z`: its highest physically
/// solid voxel within the surface band (the sections at y = -1, 0 and 1,
/// [`GROUND_SECTIONS_Y`], where the default terrain keeps its surface),
/// loading the band's sections or asking for their generation. What a
/// module placing something on the terrain asks (an entity near spawn, a
/// creature); stand at `y + 1`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GetGround {
    pub x: i32,
    pub z: i32,
}

/// The sections (y) [`GetGround`] and [`GetSpawn`] search, top first.
pub const GROUND_SECTIONS_Y: [i32; 3] = [1, 0, -1];

/// The answer to [`GetGround`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Ground {
    /// The highest physically solid voxel is at `y`; `above` is the voxel
    /// on it (air, or water, say).
    Solid { y: i32, above: u32 },
    /// The band holds no physically solid voxel in this column.
    NoGround,
    /// A section of the band is not generated yet: its generation is asked
    /// for; ask again in a moment.
    NotGenerated,
}

/// Call: where players spawn: on the ground of the column x = 0, z = 0
/// (its middle, `[0.5, y + 1, 0.5]`), or at the band's top where it has
/// none; `None` while its sections are not generated (asked for: ask
/// again). The same for every module: the game puts players there.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GetSpawn {}

/// Call: what the world holds and has done, for operators' dashboards
/// (counts since the module's instance loaded).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GetStats {}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorldStats {
    pub loaded_sections: u64,
    /// Sections with changes not written yet.
    pub unsaved_sections: u64,
    /// Players (viewers) the world streams to.
    pub viewers: u64,
    /// Whole chunks sent to viewers.
    pub chunks_streamed: u64,
    /// Saves finished (periodic, asked for, at unload).
    pub saves: u64,
    /// Sections written.
    pub sections_saved: u64,
    /// Saves that failed.
    pub save_errors: u64,
}

/// Call: the scheduled backups (`backup.every`, `backup.keep`,
/// `backup.dir`) and how the last one ended, for operators' dashboards.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GetBackupStatus {}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackupStatus {
    /// Seconds between scheduled backups (0: none scheduled).
    pub every_s: u64,
    /// How many scheduled backups are kept.
    pub keep: u32,
    /// Where they are written.
    pub dir: String,
    /// Seconds until the next one (or its retry); `None` when none is
    /// scheduled or one is running.
    pub next_in_s: Option<u64>,
    /// A scheduled backup is being written.
    pub running: bool,
    /// How the last scheduled backup ended, if one did since the start.
    pub last: Option<BackupOutcome>,
}

/// How one scheduled backup ended.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackupOutcome {
    /// When it ended, seconds since the Unix epoch.
    pub finished_unix_s: u64,
    /// The file it wrote (or would have).
    pub file: String,
    /// Its size in bytes (0 when it failed).
    pub bytes: u64,
    /// Why it failed; `None` when it is whole.
    pub error: Option<String>,
}

/// A module's value kept in the world's storage with the world (on its
/// backend, moved by `migrate`, in every backup): what a module keeps
/// that is not in a section (accounts, bans, a shop's prices). Keyed by a
/// space (by convention `module.what`, as `main.accounts`) and a key, both
/// text; the value is bytes the module encodes as it likes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredValue {
    pub space: String,
    pub key: String,
    pub value: Vec<u8>,
}

/// One write of [`PutValues`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ValueWrite {
    pub space: String,
    pub key: String,
    /// The new value; `None` removes the key.
    pub value: Option<Vec<u8>>,
    /// Only when the key holds nothing yet (claiming a name).
    pub only_if_absent: bool,
}

/// Longest space name, in bytes.
pub const MAX_VALUE_SPACE: usize = 64;
/// Longest key, in bytes.
pub const MAX_VALUE_KEY: usize = 512;
/// Largest value, in bytes.
pub const MAX_VALUE_BYTES: usize = 1 << 20;
/// Most writes in one [`PutValues`].
pub const MAX_VALUE_WRITES: usize = 1000;
/// Most values one [`ListValues`] answers.
pub const MAX_VALUES_LISTED: u32 = 1000;

/// Checks a space: non-empty, not too long, no control character.
pub fn check_value_space(space: &str) -> Result<(), String> {
    if space.is_empty() || space.len() > MAX_VALUE_SPACE {
        return Err(format!(
            "a value's space must be 1 to {MAX_VALUE_SPACE} bytes, '{space}' is {}",
            space.len()
        ));
    }
    if space.chars().any(char::is_control) {
        return Err(format!(
            "a value's space may not hold control characters ('{space}')"
        ));
    }
    Ok(())
}

/// Checks a space and key: non-empty, not too long, no control character.
pub fn check_value_key(space: &str, key: &str) -> Result<(), String> {
    check_value_space(space)?;
    if key.is_empty() || key.len() > MAX_VALUE_KEY {
        return Err(format!(
            "a value's key must be 1 to {MAX_VALUE_KEY} bytes, the key in '{space}' is {}",
            key.len()
        ));
    }
    if key.chars().any(char::is_control) {
        return Err(format!(
            "a value's key may not hold control characters (in '{space}')"
        ));
    }
    Ok(())
}

/// The world's values in a map, answering [`GetValue`], [`PutValues`] and
/// [`ListValues`] by their rules (all writes or none, `only_if_absent`,
/// bytewise key order, paging after a key, the listing cap): what a
/// module's tests answer those calls with, so every fake world keeps
/// values the way storage does. Derefs to the map.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemoryValues(pub BTreeMap<(String, String), Vec<u8>>);

impl MemoryValues {
    /// [`GetValue`]'s answer.
    pub fn answer_get(&self, get: &GetValue) -> Option<Vec<u8>> {
        self.0.get(&(get.space.clone(), get.key.clone())).cloned()
    }

    /// [`PutValues`]'s answer: writes all of `writes` (true), or none when
    /// an `only_if_absent` write finds its key taken (false).
    pub fn answer_put(&mut self, writes: &[ValueWrite]) -> bool {
        let taken = writes.iter().any(|write| {
            write.only_if_absent
                && self
                    .0
                    .contains_key(&(write.space.clone(), write.key.clone()))
        });
        if taken {
            return false;
        }
        for write in writes {
            let key = (write.space.clone(), write.key.clone());
            match &write.value {
                Some(value) => self.0.insert(key, value.clone()),
                None => self.0.remove(&key),
            };
        }
        true
    }

    /// [`ListValues`]'s answer.
    pub fn answer_list(&self, list: &ListValues) -> Vec<StoredValue> {
        self.0
            .iter()
            .filter(|((space, key), _)| {
                *space == list.space
                    && key.starts_with(&list.key_prefix)
                    && list.after.as_ref().is_none_or(|after| key > after)
            })
            .take(list.limit.min(MAX_VALUES_LISTED) as usize)
            .map(|((space, key), value)| StoredValue {
                space: space.clone(),
                key: key.clone(),
                value: value.clone(),
            })
            .collect()
    }
}

impl std::ops::Deref for MemoryValues {
    type Target = BTreeMap<(String, String), Vec<u8>>;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl std::ops::DerefMut for MemoryValues {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

/// Call: the value at `space`/`key`, if any (read from storage).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GetValue {
    pub space: String,
    pub key: String,
}

/// Call: writes values in one storage transaction, durably before the
/// answer: all of them, or none when a write `only_if_absent` finds its key
/// taken; answers whether they were written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PutValues {
    pub writes: Vec<ValueWrite>,
}

/// One all-or-nothing part of an [`EditTogether`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EditGroup {
    pub edits: Vec<EditVoxel>,
    pub writes: Vec<ValueWrite>,
}

/// Call: groups of edits and value writes, each group applied whole or not
/// at all, and every applied group stored in ONE storage transaction (the
/// sections its edits touched, written now, and its values) durably before
/// the answer: what a module keeping items in values uses so that a dig's
/// drop and the voxel's removal (a place's take and the voxel's
/// appearance) are stored together or not at all.
///
/// Groups are taken in order; a group applies when each of its edits'
/// `replace` holds (checked in turn, as if the earlier edits of the group
/// and the earlier applied groups were made), its section is generated,
/// each `only_if_absent` write finds its key free (as left by the earlier
/// applied groups), and no earlier group that did not apply writes one of
/// its value keys (its values were computed on top of that group).
/// Answers, per group, whether it applied. When the storage transaction
/// fails nothing is applied (in memory the voxels are put back) and the
/// call fails with the storage error. Events and streaming as for
/// [`EditVoxels`] (special voxels told with `by`, one commit). The
/// sections an applied group touched become save-enabled (an edit's `save`
/// is not looked at) and, written now, are no longer waiting for the
/// periodic save. At most
/// [`MAX_VALUE_WRITES`] writes and [`MAX_VOXELS_PER_CALL`] edits in all,
/// each write checked as for [`PutValues`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EditTogether {
    pub groups: Vec<EditGroup>,
}

/// Call: the values of `space` whose key starts with `key_prefix`, after
/// the key `after` (paging), in key order (bytewise), at most `limit`
/// (capped at [`MAX_VALUES_LISTED`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListValues {
    pub space: String,
    pub key_prefix: String,
    pub after: Option<String>,
    pub limit: u32,
}

/// Call: a table another module kept in `<world>/world.sqlite` before
/// modules' values existed, read whole (`None`: there is no such table),
/// so that module can move its rows into values. Only voxelworld opens
/// that file: each cdylib links its own SQLite, and a second copy opening
/// and closing the file in the same process drops the first one's locks
/// (and may delete its WAL). The world's own tables are refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadOldTable {
    /// Letters, digits and `_`.
    pub table: String,
}

/// The rows of an old table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OldTable {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<OldCell>>,
}

/// One SQLite value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum OldCell {
    Null,
    Integer(i64),
    Real(f64),
    Text(String),
    Blob(Vec<u8>),
}

impl OldTable {
    /// The cell of `column` in `row`, if both exist.
    pub fn get<'a>(&'a self, row: &'a [OldCell], column: &str) -> Option<&'a OldCell> {
        let at = self.columns.iter().position(|c| c == column)?;
        row.get(at)
    }
}

/// Call: drops old tables (see [`ReadOldTable`]) in one transaction, once
/// their rows are values; the world's own tables are refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DropOldTables {
    pub tables: Vec<String>,
}

/// `voxelworld:voxels_changed`: every voxel changed by one commit (edits
/// of any module or player, not generation or loading), in the order made,
/// with who made it: what a module reacting to any change listens to
/// (liquids next to a dug bank, voxel timers of a replaced voxel, a
/// rollback log). A voxel set several times in one commit is told once,
/// from what was there before to what is there after (nothing when that is
/// the same). At most [`MAX_SPECIAL_CHANGES`] changes per commit are told;
/// `untold` counts the rest.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct VoxelsChanged {
    pub changes: Vec<VoxelChange>,
    pub untold: u32,
}
impl Event for VoxelsChanged {
    const NAME: &'static str = "voxelworld:voxels_changed";
}

/// One change of [`VoxelsChanged`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VoxelChange {
    pub pos: Pos,
    /// The voxel before (type and game bits).
    pub was: u32,
    /// The voxel now.
    pub now: u32,
    /// The player the edit was made for ([`EditVoxel::by`]), if any.
    pub by: Option<String>,
}

/// `voxelworld:sections_loaded`: sections that came into memory with their
/// voxels (loaded from storage, or generated), once each time; what a
/// module keeping things per section (voxel timers) loads its part on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SectionsLoaded {
    pub sections: Vec<Pos>,
}
impl Event for SectionsLoaded {
    const NAME: &'static str = "voxelworld:sections_loaded";
}

/// `voxelworld:sections_unloaded`: sections that left memory (after their
/// save).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SectionsUnloaded {
    pub sections: Vec<Pos>,
}
impl Event for SectionsUnloaded {
    const NAME: &'static str = "voxelworld:sections_unloaded";
}

/// Call: the voxels of some types in loaded chunks, for modules acting on
/// the world over time (the `active` module) without a copy of it. Looks
/// at the chunks in `chunks` that are in memory (the others are answered
/// in `missing`), keeps each voxel whose type id (game bits ignored) is in
/// `types` and, when `neighbours` is not empty, one of whose six face
/// neighbours has a type in `neighbours` (neighbours in chunks not in
/// memory count as absent); of those keeps each with chance 1/`chance`
/// (1 or 0: all; drawn from `seed` and the position, so the same call
/// answers the same), stopping at `limit` found. At most
/// [`MAX_FIND_CHUNKS`] chunks per call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FindVoxels {
    pub chunks: Vec<Pos>,
    pub types: Vec<u32>,
    pub neighbours: Vec<u32>,
    pub chance: u32,
    pub seed: u64,
    pub limit: u32,
}

/// Most chunks one [`FindVoxels`] looks at.
pub const MAX_FIND_CHUNKS: usize = 256;

/// The answer to [`FindVoxels`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FoundVoxels {
    /// Position and voxel (with game bits) of each kept voxel, chunk by
    /// chunk in the order asked.
    pub found: Vec<(Pos, u32)>,
    /// Chunks asked for that are not in memory.
    pub missing: Vec<Pos>,
    /// Chunks looked at whole (fewer than asked when `limit` stopped it).
    pub scanned: u32,
    /// The time the world's thread spent on the call, in microseconds:
    /// the work a caller budgets (its own wait for the answer also holds
    /// the time the call waited behind others).
    pub micros: u64,
    /// Chunks skipped without decoding their voxels: the types they hold
    /// were known and none was asked for.
    pub skipped: u32,
}

/// Call: the light at several voxels (`None` where its chunk is not in
/// memory): `(sunlight, block light)`, each 0..=15. At most
/// [`MAX_VOXELS_PER_CALL`] positions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GetLights {
    pub positions: Vec<Pos>,
}

buildat_interface::calls! {
    module MODULE;
    ColumnTops = "column_tops" -> Tops;
    GetStats = "get_stats" -> WorldStats;
    GetBackupStatus = "get_backup_status" -> BackupStatus;
    GetGround = "get_ground" -> Ground;
    GetSpawn = "get_spawn" -> Option<[f64; 3]>;
    FindVoxels = "find_voxels" -> FoundVoxels;
    GetLights = "get_lights" -> Vec<Option<(u8, u8)>>;
}

buildat_interface::calls! {
    module MODULE;
    RegisterBlock = "register_block" -> Vec<u32>;
    GetRegistry = "get_registry" -> VoxelRegistry;
    GetSizes = "get_sizes" -> Sizes;
    GetBorder = "get_border" -> Option<Border>;
    GetWorldConfig = "get_world_config" -> WorldConfig;
    GetVoxel = "get_voxel" -> Option<u32>;
    GetVoxels = "get_voxels" -> Vec<Option<u32>>;
    SetVoxel = "set_voxel" -> ();
    Commit = "commit" -> u32;
    EditVoxel = "edit_voxel" -> EditOutcome;
    EditVoxels = "edit_voxels" -> Vec<EditOutcome>;
    LoadOrGenerateSection = "load_or_generate_section" -> SectionStatus;
    SetSectionSaveEnabled = "set_section_save_enabled" -> ();
    ApplyGenerated = "apply_generated" -> ();
    CreateNode = "create_node" -> u64;
    CreateNodes = "create_nodes" -> Vec<Option<u64>>;
    GetNode = "get_node" -> Option<DynamicNode>;
    ListNodes = "list_nodes" -> Vec<DynamicNode>;
    RemoveNode = "remove_node" -> ();
    RemoveNodes = "remove_nodes" -> Vec<u64>;
    SetNodeVar = "set_node_var" -> ();
    MoveNodes = "move_nodes" -> Vec<u64>;
    SetNodeParent = "set_node_parent" -> ();
    Save = "save" -> u32;
    Pregen = "pregen" -> PregenReport;
    GetValue = "get_value" -> Option<Vec<u8>>;
    PutValues = "put_values" -> bool;
    EditTogether = "edit_together" -> Vec<bool>;
    ListValues = "list_values" -> Vec<StoredValue>;
    ReadOldTable = "read_old_table" -> Option<OldTable>;
    DropOldTables = "drop_old_tables" -> ();
}

/// The generator's call (answered by the module named by
/// `voxelworld.generator`, `worldgen` by default; make it with
/// `Host::call_module`): generate these sections.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Generate {
    pub sections: Vec<Pos>,
}

buildat_interface::calls! {
    module "worldgen";
    Generate = "generate" -> Vec<GeneratedSection>;
}

/// Variable of a static chunk node holding its voxel blob.
pub const VAR_VOXEL_DATA: &str = "buildat_voxel_data";
/// Variable naming the registry the blob's names belong to ("main").
pub const VAR_REGISTRY_NAME: &str = "buildat_voxel_registry_name";
/// Variable holding the blob format's version.
pub const VAR_MOD_VERSION: &str = "buildat_voxel_mod_version";

/// What a `node` row's `data` column holds (bincode).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredNode {
    pub kind: StoredNodeKind,
    pub save_enabled: bool,
    pub vars: BTreeMap<String, Vec<u8>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum StoredNodeKind {
    StaticChunk {
        chunk: Pos,
    },
    /// A dynamic node as written before nodes moved (read, never written).
    Dynamic {
        position: [f64; 3],
    },
    /// A dynamic node.
    Moving {
        position: [f64; 3],
        orientation: [f32; 4],
        velocity: [f32; 3],
        parent: Option<u64>,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(key: &str, value: Option<&[u8]>, only_if_absent: bool) -> ValueWrite {
        ValueWrite {
            space: "s".into(),
            key: key.into(),
            value: value.map(<[u8]>::to_vec),
            only_if_absent,
        }
    }

    #[test]
    fn memory_values_write_all_or_nothing_and_list_in_pages() {
        let mut values = MemoryValues::default();
        assert!(values.answer_put(&[write("a", Some(b"1"), true), write("b", Some(b"2"), false)]));
        // A claim on a taken key refuses the whole write.
        assert!(!values.answer_put(&[write("c", Some(b"3"), false), write("a", Some(b"x"), true)]));
        assert_eq!(values.len(), 2, "nothing of the refused write");
        let get = |key: &str| GetValue {
            space: "s".into(),
            key: key.into(),
        };
        assert_eq!(values.answer_get(&get("a")), Some(b"1".to_vec()));
        assert!(values.answer_put(&[write("a", None, false), write("ab", Some(b"4"), false)]));
        assert_eq!(values.answer_get(&get("a")), None, "removed");
        let list = |after: Option<&str>, limit| ListValues {
            space: "s".into(),
            key_prefix: "a".into(),
            after: after.map(str::to_string),
            limit,
        };
        let keys = |listed: Vec<StoredValue>| -> Vec<String> {
            listed.into_iter().map(|v| v.key).collect()
        };
        assert_eq!(keys(values.answer_list(&list(None, 10))), ["ab"]);
        assert!(values.answer_put(&[write("aa", Some(b"5"), false)]));
        assert_eq!(keys(values.answer_list(&list(None, 1))), ["aa"]);
        assert_eq!(keys(values.answer_list(&list(Some("aa"), 10))), ["ab"]);
    }

    #[test]
    fn the_border_holds_sections_with_a_voxel_inside_and_measures_how_far_out() {
        assert_eq!(Border::of_setting(0), None);
        let border = Border::of_setting(20).expect("a border");
        assert_eq!(border.beyond([20.0, 500.0, -20.0]), 0.0);
        assert_eq!(border.beyond([-23.5, 0.0, 21.0]), 3.5);
        // Sections of 64 voxels: x -64..-1 and 0..63 reach inside, 64.. not.
        let beyond = |s: Pos| border.section_beyond(s, [2, 2, 2], 32);
        assert!(!beyond([0, 0, 0]) && !beyond([-1, 9, -1]));
        assert!(beyond([1, 0, 0]) && beyond([0, 0, -2]) && beyond([-2, 0, 0]));
        // A border on a section's edge: the section starting there is out.
        let edge = Border { blocks: 64 };
        assert!(!edge.section_beyond([-1, 0, 0], [2, 2, 2], 32));
        assert!(edge.section_beyond([1, 0, 0], [2, 2, 2], 32));
        assert!(edge.section_beyond([-2, 0, 0], [2, 2, 2], 32));
        let huge = Border { blocks: u32::MAX };
        assert!(!huge.section_beyond([1000, 0, -1000], [64, 64, 64], 32));
        assert!(huge.section_beyond([i32::MAX, 0, i32::MIN], [64, 64, 64], 32));
    }
}
