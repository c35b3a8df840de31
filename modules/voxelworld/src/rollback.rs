//! The rollback log: who changed which voxel, when, from what to what;
//! `inspect`, `rollback` and `restore` (with no file) on it.
//!
//! Owns: recording every voxel change the world makes through
//! `set_voxel_by` (edits, `edit_together`, `set_voxel`: [`Recorder`], in
//! memory on the module's thread, the player's name or `EditVoxel::by`,
//! `by_module` names a module, else unnamed), writing it to the world's storage in blocks every
//! [`FLUSH_INTERVAL_S`] (one block per [`AREA`]-voxel cube a flush touched;
//! each a zlib-packed blob of varint columns, with its own tables of
//! actor names and voxel type names, so ids that change between runs do
//! not matter: [`encode_block`], [`decode_block`] over
//! `buildat_format::rollback_blob`), pruning blocks older
//! than `rollback.keep_days` at start and daily, the choice of what a
//! rollback puts back ([`select`]), and the commands' runs: a preview,
//! `rollback confirm` through the normal edit path (`EditVoxels`, so
//! holders of the chunks are streamed the change; recorded as done by
//! `rollback`), `restore` putting back what the last rollback replaced
//! (recorded as `restore`). Also the inventory module's transactions
//! (`voxelworld:log_items`, blocks of [`ITEMS_AREA`], `inspect player
//! NAME`) and the game's joins with their addresses
//! (`voxelworld:log_login`, blocks of [`LOGINS_AREA`], whose sessions
//! `rollback ADDRESS` covers), written and pruned with the voxels'.
//! Does not own: the storage tables (`storage.rs`,
//! `storage/postgresql.rs`: `rollback_block`), the edit path (`edits.rs`),
//! inspect mode (main's chat).
//! Not recorded: sections generated. The previews and the stack of
//! rollbacks `restore` undoes are in memory: they cross a reload
//! ([`RollbackStash`]), a restart forgets them.

use std::collections::{BTreeMap, HashMap};

use buildat_format::rollback_blob::{self, LoggedChange, LoggedVoxel, RollbackBlob};
use buildat_voxel::{TYPE_ID_BITS, VoxelInstance};
use buildat_voxelworld_api::{ItemLogged, LogItems, LogLogin, Replace};

use super::*;
use crate::storage::LogBlock;

/// A block of the log covers a cube of this many voxels a side.
pub const AREA: i32 = 128;
/// Seconds between two writes of the log to storage.
pub const FLUSH_INTERVAL_S: f64 = 10.0;
/// Edits in memory that make a write before its time.
const FLUSH_EDITS: usize = 200_000;
/// Edits one tick writes at most (a write goes on over the next ticks):
/// packing them costs the world's thread a few milliseconds at a time.
pub const WRITE_SLICE: usize = 4096;
/// Edits kept in memory while storage fails, at most (the oldest go past it).
const MAX_UNWRITTEN: usize = 2_000_000;
/// The area the blocks of inventory changes are stored under: below any
/// voxel's (a voxel's area is at least `i32::MIN / AREA`).
pub const ITEMS_AREA: [i32; 3] = [i32::MIN; 3];
/// The area the blocks of logins (who played from which address) are
/// stored under, in the inventory changes' layout (actor: the name,
/// inventory: [`LOGIN`], item: the address).
pub const LOGINS_AREA: [i32; 3] = [i32::MIN, i32::MIN, i32::MIN + 1];
/// The inventory name of a login in its block.
pub const LOGIN: &str = "login";
/// Inventory changes kept in memory while storage fails, at most.
const MAX_UNWRITTEN_ITEMS: usize = 200_000;
/// Seconds between two prunings.
const PRUNE_INTERVAL_S: f64 = 86_400.0;
/// The name edits without `by` are logged under.
pub const UNNAMED: &str = "(unnamed)";
/// Who the edits of `rollback confirm` and of `restore` are logged as.
pub const ROLLBACK_ACTOR: &str = "rollback";
pub const RESTORE_ACTOR: &str = "restore";

buildat_interface::settings! {
    /// The rollback log (`--set rollback.KEY=VALUE`), declared by voxelworld.
    pub(crate) struct RollbackSettings in "rollback" {
        /// Record every voxel change (who, when, before and after) for inspect, rollback and restore.
        #[live]
        enabled: bool = true,
        /// Days the log keeps; older blocks are pruned at start and daily (0: kept for ever).
        #[live]
        keep_days: u32 = 14,
        /// Megabytes of packed blocks the log keeps at most; the oldest past it are pruned at start and daily (0: no cap).
        #[live]
        max_mb: u64 = 0,
    }
}

/// Why the log cannot be read or a command cannot run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LogError {
    #[error("rollback log block damaged: {0}")]
    Damaged(String),
    #[error("rollback log: {0}")]
    Storage(#[from] storage::StorageError),
    #[error("{0}")]
    Usage(String),
}

impl From<LogError> for ModuleError {
    fn from(error: LogError) -> Self {
        match error {
            LogError::Usage(text) => ModuleError::Usage(text),
            error => ModuleError::msg(error.to_string()),
        }
    }
}

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// One change as recorded in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Logged {
    pub time_ms: i64,
    pub pos: Pos,
    pub before: u32,
    pub after: u32,
    /// Index into the recorder's actors.
    pub actor: u32,
}

/// The changes not written yet, in the order they were made.
#[derive(Debug, Default)]
pub struct Recorder {
    pub enabled: bool,
    actors: Vec<String>,
    actor_index: HashMap<String, u32>,
    pending: Vec<Logged>,
    /// Inventory changes not written yet, in the order told.
    items: Vec<ItemLogged>,
    /// Logins not written yet (as [`LOGINS_AREA`]'s blocks hold them).
    logins: Vec<ItemLogged>,
}

impl Recorder {
    /// Records one change (nothing when the log is off).
    pub fn record(&mut self, pos: Pos, before: u32, after: u32, by: Option<&str>) {
        if !self.enabled {
            return;
        }
        let name = by.unwrap_or(UNNAMED);
        let actor = match self.actor_index.get(name) {
            Some(actor) => *actor,
            None => {
                let actor = self.actors.len() as u32;
                self.actors.push(name.to_string());
                self.actor_index.insert(name.to_string(), actor);
                actor
            }
        };
        self.pending.push(Logged {
            time_ms: now_ms(),
            pos,
            before,
            after,
            actor,
        });
    }

    /// Records inventory changes (nothing when the log is off).
    pub fn record_items(&mut self, changes: Vec<ItemLogged>) {
        if !self.enabled {
            return;
        }
        self.items.extend(changes);
        let over = self.items.len().saturating_sub(MAX_UNWRITTEN_ITEMS);
        self.items.drain(..over);
    }

    /// The oldest `limit` inventory changes not written, taken.
    pub fn take_items(&mut self, limit: usize) -> Vec<ItemLogged> {
        let n = limit.min(self.items.len());
        self.items.drain(..n).collect()
    }

    /// Puts back inventory changes a write could not store.
    pub fn put_back_items(&mut self, mut items: Vec<ItemLogged>) {
        items.append(&mut self.items);
        self.items = items;
        let over = self.items.len().saturating_sub(MAX_UNWRITTEN_ITEMS);
        self.items.drain(..over);
    }

    /// Records a login (nothing when the log is off).
    pub fn record_login(&mut self, login: LogLogin) {
        if !self.enabled || self.logins.len() >= MAX_UNWRITTEN_ITEMS {
            return;
        }
        self.logins.push(ItemLogged {
            time_ms: login.time_ms,
            by: login.name,
            inventory: LOGIN.into(),
            slot: 0,
            item: login.address,
            count: 0,
        });
    }

    /// Voxel and inventory changes and logins not written.
    pub fn len(&self) -> usize {
        self.pending.len() + self.items.len() + self.logins.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pending.is_empty() && self.items.is_empty() && self.logins.is_empty()
    }

    /// The oldest `limit` pending changes with their actors' names, taken.
    pub fn take(&mut self, limit: usize) -> Vec<Entry> {
        let n = limit.min(self.pending.len());
        let entries = self
            .pending
            .drain(..n)
            .map(|l| Entry {
                time_ms: l.time_ms,
                pos: l.pos,
                before: l.before,
                after: l.after,
                by: self.actors[l.actor as usize].clone(),
            })
            .collect();
        if self.pending.is_empty() && self.actors.len() > 4096 {
            self.actors.clear();
            self.actor_index.clear();
        }
        entries
    }

    /// Puts back entries a write could not store (before newer ones).
    pub fn put_back(&mut self, entries: Vec<Entry>) {
        let newer = std::mem::take(&mut self.pending);
        let enabled = self.enabled;
        self.enabled = true;
        let keep = entries.len().min(MAX_UNWRITTEN.saturating_sub(newer.len()));
        let skip = entries.len() - keep;
        for e in entries.into_iter().skip(skip) {
            self.record(e.pos, e.before, e.after, Some(&e.by));
            if let Some(last) = self.pending.last_mut() {
                last.time_ms = e.time_ms;
            }
        }
        self.enabled = enabled;
        self.pending.extend(newer);
    }
}

/// One change with its actor's name (voxels as this run's ids).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub time_ms: i64,
    pub pos: Pos,
    pub before: u32,
    pub after: u32,
    pub by: String,
}

/// The area (cube of [`AREA`] voxels) holding `pos`.
pub fn area_of(pos: Pos) -> [i32; 3] {
    pos.map(|c| c.div_euclid(AREA))
}

/// Every voxel's area (not [`ITEMS_AREA`]).
pub fn voxel_areas() -> [[i32; 3]; 2] {
    [area_of([i32::MIN; 3]), area_of([i32::MAX; 3])]
}

/// Packs inventory changes into a block stored under `area`
/// ([`ITEMS_AREA`], [`LOGINS_AREA`]).
pub fn items_block(changes: &[ItemLogged], area: [i32; 3]) -> LogBlock {
    let (mut actors, mut inventories, mut items) =
        (Names::default(), Names::default(), Names::default());
    let changes = changes
        .iter()
        .map(|c| rollback_blob::LoggedItem {
            time_ms: c.time_ms,
            actor: actors.of(&c.by),
            inventory: inventories.of(&c.inventory),
            slot: c.slot,
            item: items.of(&c.item),
            count: c.count,
        })
        .collect::<Vec<_>>();
    LogBlock {
        t0: changes.iter().map(|c| c.time_ms).min().unwrap_or(0),
        t1: changes.iter().map(|c| c.time_ms).max().unwrap_or(0),
        area,
        data: rollback_blob::encode_items(&rollback_blob::ItemsBlob {
            actors: actors.list,
            inventories: inventories.list,
            items: items.list,
            changes,
        }),
    }
}

/// A block of inventory changes back, in the order made.
pub fn decode_items_block(data: &[u8]) -> Result<Vec<ItemLogged>, LogError> {
    let blob = rollback_blob::decode_items(data).map_err(|e| LogError::Damaged(e.to_string()))?;
    let name = |names: &[String], i: u32| names.get(i as usize).cloned().unwrap_or_default();
    Ok(blob
        .changes
        .iter()
        .map(|c| ItemLogged {
            time_ms: c.time_ms,
            by: name(&blob.actors, c.actor),
            inventory: name(&blob.inventories, c.inventory),
            slot: c.slot,
            item: name(&blob.items, c.item),
            count: c.count,
        })
        .collect())
}

/// Interns strings in order of first use.
#[derive(Default)]
struct Names {
    list: Vec<String>,
    index: HashMap<String, u32>,
}

impl Names {
    fn of(&mut self, name: &str) -> u32 {
        if let Some(i) = self.index.get(name) {
            return *i;
        }
        let i = self.list.len() as u32;
        self.list.push(name.to_string());
        self.index.insert(name.to_string(), i);
        i
    }
}

/// Packs changes (in the order made) into a block's blob
/// ([`buildat_format::rollback_blob`]): actors and voxel types by name
/// (`voxel_name` of a type id), so ids that change between runs do not
/// matter.
pub fn encode_block(entries: &[Entry], voxel_name: &dyn Fn(u32) -> String) -> Vec<u8> {
    let mut actors = Names::default();
    let mut types = Names::default();
    // Each type's name looked up once a block.
    let mut local_of: HashMap<u32, u32> = HashMap::new();
    let mut voxel = |v: u32| {
        let type_id = VoxelInstance(v).type_id();
        let type_index = *local_of
            .entry(type_id)
            .or_insert_with(|| types.of(&voxel_name(type_id)));
        LoggedVoxel {
            type_index,
            bits: v >> TYPE_ID_BITS,
        }
    };
    let changes = entries
        .iter()
        .map(|e| LoggedChange {
            time_ms: e.time_ms,
            pos: e.pos,
            before: voxel(e.before),
            after: voxel(e.after),
            actor: actors.of(&e.by),
        })
        .collect();
    rollback_blob::encode(&RollbackBlob {
        actors: actors.list,
        types: types.list,
        changes,
    })
}

/// A block's changes back, in the order made; voxel types by name through
/// `voxel_id` (a type this run does not know reads as `unknown`).
pub fn decode_block(
    data: &[u8],
    voxel_id: &dyn Fn(&str) -> Option<u32>,
) -> Result<Vec<Entry>, LogError> {
    let blob = rollback_blob::decode(data).map_err(|e| LogError::Damaged(e.to_string()))?;
    let ids: Vec<u32> = blob
        .types
        .iter()
        .map(|name| voxel_id(name).unwrap_or(buildat_voxel::UNKNOWN))
        .collect();
    let voxel = |v: LoggedVoxel| {
        ids.get(v.type_index as usize)
            .map(|id| id | (v.bits << TYPE_ID_BITS))
            .ok_or_else(|| {
                LogError::Damaged(format!("voxel type {} not in the block", v.type_index))
            })
    };
    blob.changes
        .iter()
        .map(|c| {
            Ok(Entry {
                time_ms: c.time_ms,
                pos: c.pos,
                before: voxel(c.before)?,
                after: voxel(c.after)?,
                by: blob
                    .actors
                    .get(c.actor as usize)
                    .cloned()
                    .ok_or_else(|| LogError::Damaged("an actor not in the block".into()))?,
            })
        })
        .collect()
}

/// Groups changes by area into blocks (each in the order made).
pub fn blocks_of(entries: &[Entry], voxel_name: &dyn Fn(u32) -> String) -> Vec<LogBlock> {
    let mut by_area: BTreeMap<[i32; 3], Vec<Entry>> = BTreeMap::new();
    for e in entries {
        by_area.entry(area_of(e.pos)).or_default().push(e.clone());
    }
    by_area
        .into_iter()
        .map(|(area, list)| LogBlock {
            t0: list.iter().map(|e| e.time_ms).min().unwrap_or(0),
            t1: list.iter().map(|e| e.time_ms).max().unwrap_or(0),
            area,
            data: encode_block(&list, voxel_name),
        })
        .collect()
}

/// Writes the world's oldest `limit` recorded changes to its storage in
/// blocks; how many (on an error they stay recorded, for the next try).
pub fn write_log(world: &mut World, limit: usize) -> Result<usize, storage::StorageError> {
    if world.log.is_empty() {
        return Ok(0);
    }
    if !world.log.logins.is_empty() {
        let logins = items_block(&world.log.logins, LOGINS_AREA);
        world.storage_mut().append_log(&[logins])?;
        world.log.logins.clear();
    }
    let items = world.log.take_items(limit);
    let written = items.len();
    if !items.is_empty()
        && let Err(error) = world
            .storage_mut()
            .append_log(&[items_block(&items, ITEMS_AREA)])
    {
        world.log.put_back_items(items);
        return Err(error);
    }
    let entries = world.log.take(limit.saturating_sub(written));
    if entries.is_empty() {
        return Ok(written);
    }
    let voxels = &world.voxels;
    let name = |id: u32| voxels.get_name(id).unwrap_or_else(|| format!("#{id}"));
    let blocks = blocks_of(&entries, &name);
    match world.storage_mut().append_log(&blocks) {
        Ok(()) => Ok(written + entries.len()),
        Err(error) => {
            world.log.put_back(entries);
            Err(error)
        }
    }
}

/// The stored changes since `since` in the areas `areas` (from
/// `areas[0]` to `areas[1]`) that `keep` accepts, in the order made;
/// voxels as this run's ids. Blocks are decoded one at a time, so only
/// what is kept is held.
pub fn read_log(
    world: &mut World,
    since: i64,
    areas: [[i32; 3]; 2],
    keep: &dyn Fn(&Entry) -> bool,
) -> Result<Vec<Entry>, LogError> {
    let blocks = world.storage_mut().read_log(since, areas)?;
    let voxels = &world.voxels;
    let id = |name: &str| voxels.get_id(name);
    let mut entries = Vec::new();
    for block in blocks {
        // One damaged block does not hide the others.
        match decode_block(&block.data, &id) {
            Ok(decoded) => entries.extend(decoded.into_iter().filter(|e| keep(e))),
            Err(error) => log::warn!(
                "rollback log: the block of area {:?} from {} to {} ms is skipped: {error}",
                block.area,
                block.t0,
                block.t1
            ),
        }
    }
    entries.sort_by_key(|e| e.time_ms);
    Ok(entries)
}

/// What a rollback puts back at one position.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Revert {
    pub pos: Pos,
    /// The voxel before the actor's first change in the window.
    pub to: u32,
    /// What the actor left there (the voxel must still be it, unless forced).
    pub expect: u32,
}

/// A box of voxels: a centre and a radius (a cube).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Within {
    pub centre: Pos,
    pub radius: i32,
}

impl Within {
    fn holds(&self, pos: Pos) -> bool {
        (0..3).all(|a| {
            (i64::from(pos[a]) - i64::from(self.centre[a])).abs() <= i64::from(self.radius)
        })
    }
}

/// What a rollback of `name`'s changes since `since` puts back: for every
/// position `name` changed then (within `within`), the voxel from before
/// `name`'s first change there in the window, expected to still hold
/// what `name`'s last change there left. `entries` in the order made.
/// Also how many of `name`'s changes that covers.
pub fn select(
    entries: &[Entry],
    name: &str,
    since: i64,
    within: Option<Within>,
) -> (Vec<Revert>, usize) {
    select_by(entries, &|e| e.by == name, since, within)
}

/// [`select`] of the changes `covers` accepts (an address's players while
/// they played from it).
pub fn select_by(
    entries: &[Entry],
    covers: &dyn Fn(&Entry) -> bool,
    since: i64,
    within: Option<Within>,
) -> (Vec<Revert>, usize) {
    let mut by_pos: BTreeMap<Pos, Revert> = BTreeMap::new();
    let mut edits = 0;
    for e in entries {
        if !covers(e) || e.time_ms < since || !within.is_none_or(|w| w.holds(e.pos)) {
            continue;
        }
        edits += 1;
        by_pos
            .entry(e.pos)
            .and_modify(|r| r.expect = e.after)
            .or_insert(Revert {
                pos: e.pos,
                to: e.before,
                expect: e.after,
            });
    }
    (by_pos.into_values().collect(), edits)
}

/// A player's time on one address: from a login to its next login (or
/// for ever).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    pub name: String,
    pub from_ms: i64,
    pub to_ms: i64,
}

/// The sessions from `address` that reach `since` or later, from logins
/// (each `by`: the name, `item`: the address) in any order.
pub fn sessions_from(logins: &[ItemLogged], address: &str, since: i64) -> Vec<Session> {
    let mut by_name: BTreeMap<&str, Vec<&ItemLogged>> = BTreeMap::new();
    for login in logins {
        by_name.entry(&login.by).or_default().push(login);
    }
    let mut sessions = Vec::new();
    for (name, mut list) in by_name {
        list.sort_by_key(|l| l.time_ms);
        for (i, login) in list.iter().enumerate() {
            let to_ms = list.get(i + 1).map_or(i64::MAX, |next| next.time_ms);
            if login.item == address && to_ms >= since {
                sessions.push(Session {
                    name: name.to_string(),
                    from_ms: login.time_ms,
                    to_ms,
                });
            }
        }
    }
    sessions
}

/// A duration as `90s`, `10m`, `2h`, `3d` (a bare number: seconds), in
/// milliseconds.
pub fn parse_duration(text: &str) -> Option<i64> {
    let (number, unit) = match text.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((at, _)) => text.split_at(at),
        None => (text, "s"),
    };
    let n: i64 = number.parse().ok()?;
    let seconds = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        "w" => 7 * 86_400,
        _ => return None,
    };
    n.checked_mul(seconds)?.checked_mul(1000)
}

/// `YYYY-MM-DD HH:MM:SS UTC` of a time in milliseconds since the epoch.
fn describe_time(ms: i64) -> String {
    let stamp = crate::backup_schedule::stamp((ms.max(0) / 1000) as u64);
    // `YYYY-MM-DDTHH-MM-SSZ`.
    match (
        stamp.get(..10),
        stamp.get(11..13),
        stamp.get(14..16),
        stamp.get(17..19),
    ) {
        (Some(date), Some(h), Some(m), Some(s)) => format!("{date} {h}:{m}:{s} UTC"),
        _ => stamp,
    }
}

fn describe_age(ms: i64) -> String {
    let s = ms.max(0) / 1000;
    match s {
        0..60 => format!("{s}s ago"),
        60..3600 => format!("{}m{:02}s ago", s / 60, s % 60),
        3600..86_400 => format!("{}h{:02}m ago", s / 3600, s / 60 % 60),
        _ => format!("{}d{:02}h ago", s / 86_400, s / 3600 % 24),
    }
}

/// A rollback previewed, waiting for `rollback confirm`.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Plan {
    pub name: String,
    pub reverts: Vec<Revert>,
    pub force: bool,
}

/// The log's state in the module.
#[derive(Debug, Default)]
pub struct RollbackState {
    /// `rollback.enabled`.
    pub enabled: bool,
    pub keep_days: u32,
    /// `rollback.max_mb`.
    pub max_mb: u64,
    since_flush: f64,
    since_prune: f64,
    /// A write of the log is going on, a slice a tick.
    writing: bool,
    /// Previews by who made them (`""`: the console).
    plans: HashMap<String, Plan>,
    /// Rollbacks applied, newest last: (position, what was replaced, what was put).
    done: Vec<Vec<(Pos, u32, u32)>>,
    failing: bool,
}

/// What of the commands crosses a reload of voxelworld: the previews
/// waiting for `rollback confirm` and the rollbacks `restore` can undo.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct RollbackStash {
    plans: HashMap<String, Plan>,
    done: Vec<Vec<(Pos, u32, u32)>>,
}

impl RollbackState {
    /// The previews and the rollbacks to undo, for the next version.
    pub(crate) fn stash(&mut self) -> RollbackStash {
        RollbackStash {
            plans: std::mem::take(&mut self.plans),
            done: std::mem::take(&mut self.done),
        }
    }

    /// Takes back what [`Self::stash`] gave.
    pub(crate) fn restore(&mut self, stash: RollbackStash) {
        self.plans = stash.plans;
        self.done = stash.done;
    }

    pub(crate) fn new(settings: &RollbackSettings) -> Self {
        Self {
            enabled: settings.enabled,
            keep_days: settings.keep_days,
            max_mb: settings.max_mb,
            ..Self::default()
        }
    }
}

/// The voxel's name as `inspect` shows it.
fn shown(world: &World, voxel: u32) -> String {
    let name = world
        .voxels
        .get_name(VoxelInstance(voxel).type_id())
        .unwrap_or_else(|| format!("#{voxel}"));
    match VoxelInstance(voxel).game_bits() {
        0 => name,
        bits => format!("{name}+{bits}"),
    }
}

impl VoxelWorld {
    /// A tick: writes the log every [`FLUSH_INTERVAL_S`] (or when much is
    /// waiting), prunes it daily.
    pub(crate) fn tick_rollback(&mut self, dtime: f64) {
        let state = &mut self.rollback;
        state.since_flush += dtime;
        state.since_prune += dtime;
        if state.since_flush >= FLUSH_INTERVAL_S || self.world.log.len() >= FLUSH_EDITS {
            state.since_flush = 0.0;
            state.writing = true;
        }
        if self.rollback.writing {
            self.write_log_slice(WRITE_SLICE);
            if self.world.log.is_empty() || self.rollback.failing {
                self.rollback.writing = false;
            }
        }
        if self.rollback.since_prune >= PRUNE_INTERVAL_S {
            self.rollback.since_prune = 0.0;
            self.prune_log(now_ms());
        }
    }

    /// Writes what is in memory to storage (kept for the next try when
    /// storage fails, one warning until it works again).
    pub(crate) fn flush_log(&mut self) {
        self.write_log_slice(usize::MAX);
    }

    /// Writes the oldest `limit` changes in memory to storage.
    fn write_log_slice(&mut self, limit: usize) {
        if self.world.log.is_empty() {
            return;
        }
        match write_log(&mut self.world, limit) {
            Ok(_) => {
                if self.rollback.failing {
                    log::info!("rollback log: written again");
                }
                self.rollback.failing = false;
            }
            Err(error) => {
                if !self.rollback.failing {
                    log::warn!(
                        "rollback log: cannot write {} edits ({error}); kept in memory and retried",
                        self.world.log.len()
                    );
                }
                self.rollback.failing = true;
            }
        }
    }

    /// The console's `set` of a `rollback.*` setting: recording stops or
    /// starts at once (what was recorded is still written), and a changed
    /// limit prunes the log now, not at the next daily pruning.
    pub(crate) fn apply_rollback_settings(&mut self, settings: RollbackSettings) -> String {
        let limits = (settings.keep_days, settings.max_mb);
        let changed = limits != (self.rollback.keep_days, self.rollback.max_mb);
        self.rollback.enabled = settings.enabled;
        self.world.log.enabled = settings.enabled;
        self.rollback.keep_days = settings.keep_days;
        self.rollback.max_mb = settings.max_mb;
        let recording = if settings.enabled { "on" } else { "off" };
        if changed {
            self.prune_log(now_ms());
            format!("the rollback log is {recording}, pruned now by its new limits")
        } else {
            format!("the rollback log is {recording}")
        }
    }

    /// Deletes blocks older than `rollback.keep_days` before `now`, then
    /// the oldest past `rollback.max_mb`.
    pub(crate) fn prune_log(&mut self, now: i64) {
        if self.rollback.max_mb > 0 {
            let max_bytes = self.rollback.max_mb.saturating_mul(1_000_000);
            match self.world.storage_mut().prune_log_to(max_bytes) {
                Ok(0) | Err(storage::StorageError::NoLog) => {}
                Ok(n) => log::info!(
                    "rollback log: pruned the {n} oldest blocks past {} MB",
                    self.rollback.max_mb
                ),
                Err(error) => log::warn!("rollback log: cannot prune by size ({error})"),
            }
        }
        if self.rollback.keep_days == 0 {
            return;
        }
        let before = now - i64::from(self.rollback.keep_days) * 86_400_000;
        match self.world.storage_mut().prune_log(before) {
            Ok(0) | Err(storage::StorageError::NoLog) => {}
            Ok(n) => log::info!(
                "rollback log: pruned {n} blocks older than {} days",
                self.rollback.keep_days
            ),
            Err(error) => log::warn!("rollback log: cannot prune ({error})"),
        }
    }

    /// The log's changes since `since` in the areas `areas`, in the order
    /// made (what is in memory written first).
    pub(crate) fn read_log(
        &mut self,
        since: i64,
        areas: [[i32; 3]; 2],
        keep: &dyn Fn(&Entry) -> bool,
    ) -> Result<Vec<Entry>, LogError> {
        self.flush_log();
        read_log(&mut self.world, since, areas, keep)
    }

    /// `inspect X Y Z`: the voxel's history, newest first.
    pub(crate) fn inspect(&mut self, pos: Pos, lines: usize) -> Result<String, LogError> {
        let area = area_of(pos);
        let entries = self.read_log(i64::MIN, [area, area], &|e| e.pos == pos)?;
        let now = now_ms();
        let mut out: Vec<String> = entries
            .iter()
            .rev()
            .filter(|e| e.pos == pos)
            .take(lines)
            .map(|e| {
                format!(
                    "{} ({}) {}: {} -> {}",
                    describe_time(e.time_ms),
                    describe_age(now - e.time_ms),
                    e.by,
                    shown(&self.world, e.before),
                    shown(&self.world, e.after)
                )
            })
            .collect();
        let [x, y, z] = pos;
        if out.is_empty() {
            return Ok(format!("{x} {y} {z}: no change logged"));
        }
        out.insert(0, format!("{x} {y} {z}, newest first:"));
        Ok(out.join("\n"))
    }

    /// Every login the log keeps (what is in memory written first).
    fn read_logins(&mut self) -> Result<Vec<ItemLogged>, LogError> {
        self.flush_log();
        let blocks = self
            .world
            .storage_mut()
            .read_log(i64::MIN, [LOGINS_AREA, LOGINS_AREA])?;
        let mut logins = Vec::new();
        for block in blocks {
            match decode_items_block(&block.data) {
                Ok(list) => logins.extend(list),
                Err(error) => log::warn!(
                    "rollback log: a block of logins from {} to {} ms is skipped: {error}",
                    block.t0,
                    block.t1
                ),
            }
        }
        Ok(logins)
    }

    /// `inspect player NAME`: the inventory changes NAME made or NAME's
    /// inventories took, newest first.
    pub(crate) fn inspect_player(&mut self, name: &str, lines: usize) -> Result<String, LogError> {
        self.flush_log();
        let blocks = self
            .world
            .storage_mut()
            .read_log(i64::MIN, [ITEMS_AREA, ITEMS_AREA])?;
        let own = format!("player:{name} ");
        let mut found = Vec::new();
        for block in blocks {
            match decode_items_block(&block.data) {
                Ok(changes) => found.extend(
                    changes
                        .into_iter()
                        .filter(|c| c.by == name || c.inventory.starts_with(&own)),
                ),
                Err(error) => log::warn!(
                    "rollback log: a block of inventory changes from {} to {} ms is skipped: {error}",
                    block.t0,
                    block.t1
                ),
            }
        }
        found.sort_by_key(|c| c.time_ms);
        let now = now_ms();
        let mut out: Vec<String> = found
            .iter()
            .rev()
            .take(lines)
            .map(|c| {
                format!(
                    "{} ({}) {}: {:+} {} {} {} slot {}",
                    describe_time(c.time_ms),
                    describe_age(now - c.time_ms),
                    c.by,
                    c.count,
                    c.item,
                    if c.count < 0 { "out of" } else { "into" },
                    c.inventory,
                    c.slot
                )
            })
            .collect();
        if out.is_empty() {
            return Ok(format!("{name}: no inventory change logged"));
        }
        out.insert(0, format!("{name}'s inventory changes, newest first:"));
        Ok(out.join("\n"))
    }

    /// `rollback NAME DURATION [radius R at X Y Z] [force]`: the preview.
    pub(crate) fn preview_rollback(
        &mut self,
        caller: &str,
        name: &str,
        within_ms: i64,
        within: Option<Within>,
        force: bool,
    ) -> Result<String, LogError> {
        let since = now_ms() - within_ms;
        let areas = match within {
            Some(w) => [
                area_of(w.centre.map(|c| c.saturating_sub(w.radius))),
                area_of(w.centre.map(|c| c.saturating_add(w.radius))),
            ],
            None => voxel_areas(),
        };
        // An address: every name that played from it in the window,
        // while it did.
        let address = name
            .parse::<std::net::IpAddr>()
            .ok()
            .map(|ip| ip.to_canonical().to_string());
        let sessions = match &address {
            Some(address) => sessions_from(&self.read_logins()?, address, since),
            None => Vec::new(),
        };
        let covers = |e: &Entry| match &address {
            Some(_) => sessions
                .iter()
                .any(|s| s.name == e.by && (s.from_ms..s.to_ms).contains(&e.time_ms)),
            None => e.by == name,
        };
        let entries = self.read_log(since, areas, &covers)?;
        let (reverts, edits) = select_by(&entries, &covers, since, within);
        let name = match &address {
            Some(address) => {
                let mut names: Vec<&str> = sessions.iter().map(|s| s.name.as_str()).collect();
                names.sort_unstable();
                names.dedup();
                if names.is_empty() {
                    self.rollback.plans.remove(caller);
                    return Ok(format!(
                        "rollback: nobody played from {address} in that time"
                    ));
                }
                format!("{address} ({})", names.join(", "))
            }
            None => name.to_string(),
        };
        let name = name.as_str();
        if reverts.is_empty() {
            self.rollback.plans.remove(caller);
            return Ok(format!(
                "rollback: {name} changed nothing in that time and place"
            ));
        }
        let mut low = reverts[0].pos;
        let mut high = low;
        for r in &reverts {
            for a in 0..3 {
                low[a] = low[a].min(r.pos[a]);
                high[a] = high[a].max(r.pos[a]);
            }
        }
        let voxels = reverts.len();
        self.rollback.plans.insert(
            caller.to_string(),
            Plan {
                name: name.to_string(),
                reverts,
                force,
            },
        );
        Ok(format!(
            "rollback preview: {edits} edits by {name} on {voxels} voxels, from {} {} {} to {} {} {}{}; \
             `rollback confirm` puts them back",
            low[0],
            low[1],
            low[2],
            high[0],
            high[1],
            high[2],
            if force {
                " (force: also where others changed them since)"
            } else {
                ""
            }
        ))
    }

    /// Edits by `actor`, each only where the voxel is still what is
    /// expected (unless `force`), through the edit path; the ones made as
    /// (position, replaced, put).
    fn apply_reverts(
        &mut self,
        reverts: &[(Pos, u32, u32)],
        force: bool,
        actor: &str,
    ) -> Result<Vec<(Pos, u32, u32)>, ModuleError> {
        let mut made = Vec::new();
        for chunk in reverts.chunks(MAX_VOXELS_PER_CALL) {
            let edits = chunk
                .iter()
                .map(|(pos, expect, to)| EditVoxel {
                    pos: *pos,
                    voxel: *to,
                    replace: if force {
                        Replace::Any
                    } else {
                        Replace::Exactly(*expect)
                    },
                    save: true,
                    by: Some(actor.to_string()),
                })
                .collect();
            let outcomes = self.edit_voxels(edits)?;
            for ((pos, _, to), outcome) in chunk.iter().zip(outcomes) {
                if let EditOutcome::Edited { previous } = outcome
                    && previous != *to
                {
                    made.push((*pos, previous, *to));
                }
            }
        }
        Ok(made)
    }

    /// `rollback confirm`: the caller's preview applied.
    pub(crate) fn confirm_rollback(&mut self, caller: &str) -> Result<String, ModuleError> {
        let Some(plan) = self.rollback.plans.remove(caller) else {
            return Err(LogError::Usage(
                "rollback confirm: nothing previewed; run rollback NAME DURATION first".into(),
            )
            .into());
        };
        let reverts: Vec<(Pos, u32, u32)> = plan
            .reverts
            .iter()
            .map(|r| (r.pos, r.expect, r.to))
            .collect();
        let started = std::time::Instant::now();
        let made = self.apply_reverts(&reverts, plan.force, ROLLBACK_ACTOR)?;
        let seconds = started.elapsed().as_secs_f64();
        let skipped = plan.reverts.len() - made.len();
        let count = made.len();
        self.rollback.done.push(made);
        Ok(format!(
            "rollback of {}: {count} voxels put back, {skipped} left (changed by others since, \
             not generated, or already so) in {seconds:.2} s; `restore` undoes it",
            plan.name
        ))
    }

    /// `restore` with no file: the last rollback undone.
    pub(crate) fn restore_rollback(&mut self) -> Result<String, ModuleError> {
        let Some(done) = self.rollback.done.pop() else {
            return Err(LogError::Usage(
                "restore: no rollback to undo since the server started (restore FILE restores a backup)"
                    .into(),
            )
            .into());
        };
        // Put back what was replaced, where the rollback's voxel still is.
        let undo: Vec<(Pos, u32, u32)> =
            done.iter().map(|(p, was, put)| (*p, *put, *was)).collect();
        let started = std::time::Instant::now();
        let made = self.apply_reverts(&undo, false, RESTORE_ACTOR)?;
        Ok(format!(
            "restore: {} of {} voxels the last rollback changed are back as they were (in {:.2} s)",
            made.len(),
            done.len(),
            started.elapsed().as_secs_f64()
        ))
    }
}

/// `inspect`.
#[derive(clap::Parser)]
#[command(
    name = "inspect",
    about = "a voxel's history from the rollback log, newest first: when, who, before -> after; \
             or a player's inventory changes",
    override_usage = "inspect X Y Z [--lines N] | inspect player NAME [--lines N]",
    allow_negative_numbers = true
)]
struct InspectArgs {
    #[arg(value_name = "WORDS")]
    words: Vec<String>,
    /// At most N lines.
    #[arg(long, default_value_t = 10)]
    lines: usize,
}

/// `rollback`.
#[derive(clap::Parser)]
#[command(
    name = "rollback",
    about = "puts back what a player (or every player on an IP address) changed: a preview, \
             then `rollback confirm` applies it; DURATION as 30m, 2h, 3d; force: also where \
             others changed the voxel since",
    override_usage = "rollback NAME|ADDRESS|module:MODULE DURATION [radius R at X Y Z] [force] | rollback confirm",
    allow_negative_numbers = true
)]
struct RollbackArgs {
    #[arg(value_name = "WORDS", required = true)]
    words: Vec<String>,
}

const INSPECT_USAGE: &str = "usage: inspect X Y Z [--lines N] | inspect player NAME [--lines N]";

const ROLLBACK_USAGE: &str = "usage: rollback NAME|ADDRESS|module:MODULE DURATION [radius R at X Y Z] [force] | rollback confirm";

fn usage(what: &str) -> LogError {
    LogError::Usage(format!("rollback: {what}; {ROLLBACK_USAGE}"))
}

/// A rollback's words: NAME, DURATION, then options.
fn parse_rollback(words: &[String]) -> Result<(String, i64, Option<Within>, bool), LogError> {
    let [name, duration, rest @ ..] = words else {
        return Err(usage("NAME and DURATION are needed"));
    };
    let within_ms =
        parse_duration(duration).ok_or_else(|| usage(&format!("{duration:?} is no duration")))?;
    let (mut within, mut force) = (None, false);
    let number = |w: Option<&String>| -> Result<i32, LogError> {
        w.and_then(|w| w.parse().ok())
            .ok_or_else(|| usage("radius R at X Y Z takes four numbers"))
    };
    let mut rest = rest.iter();
    while let Some(word) = rest.next() {
        match word.as_str() {
            "force" => force = true,
            "radius" => {
                let radius = number(rest.next())?;
                if rest.next().map(String::as_str) != Some("at") {
                    return Err(usage("radius R needs its centre: at X Y Z"));
                }
                let centre = [
                    number(rest.next())?,
                    number(rest.next())?,
                    number(rest.next())?,
                ];
                within = Some(Within {
                    centre,
                    radius: radius.max(0),
                });
            }
            other => return Err(usage(&format!("{other:?} is not understood"))),
        }
    }
    Ok((actor_of(name)?, within_ms, within, force))
}

/// The log's actor a rollback's NAME means: `module:NAME` is the module's
/// own edits (`NAME (module)`, a name with a space no word can hold), any
/// other word a player's name or an address.
fn actor_of(name: &str) -> Result<String, LogError> {
    match name.strip_prefix("module:") {
        Some("") => Err(usage("module: needs the module's name (module:liquid)")),
        Some(module) => buildat_voxelworld_api::by_module(module)
            .ok_or_else(|| usage(&format!("{module:?} is no module's name"))),
        None => Ok(name.to_string()),
    }
}

/// The log's commands, in the module's receive table (`restore` with no
/// file is `commands.rs`'s).
pub(crate) fn receive(table: &mut Receive<VoxelWorld>) {
    table
        .command(Some("server"), |world, _, asked: InspectArgs| {
            let words: Vec<&str> = asked.words.iter().map(String::as_str).collect();
            match words.as_slice() {
                ["player", name] => Ok(world.inspect_player(name, asked.lines)?),
                [x, y, z] => {
                    let number = |w: &str| {
                        w.parse::<i32>().map_err(|_| {
                            LogError::Usage(format!(
                                "inspect: {w:?} is no coordinate; {INSPECT_USAGE}"
                            ))
                        })
                    };
                    let pos = [number(x)?, number(y)?, number(z)?];
                    Ok(world.inspect(pos, asked.lines)?)
                }
                _ => Err(LogError::Usage(INSPECT_USAGE.into()).into()),
            }
        })
        .event(|world, logged: LogItems| {
            world.world.log.record_items(logged.changes);
            Ok(())
        })
        .event(|world, login: LogLogin| {
            world.world.log.record_login(login);
            Ok(())
        })
        .command(Some("server"), |world, by, asked: RollbackArgs| {
            let caller = by.unwrap_or("").to_string();
            if asked.words.len() == 1 && asked.words[0] == "confirm" {
                return world.confirm_rollback(&caller);
            }
            let (name, within_ms, within, force) = parse_rollback(&asked.words)?;
            Ok(world.preview_rollback(&caller, &name, within_ms, within, force)?)
        });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> (impl Fn(u32) -> String, impl Fn(&str) -> Option<u32>) {
        let table = ["air", "unknown", "stone", "dirt", "glass", "water"];
        (
            move |id: u32| {
                table
                    .get(id as usize)
                    .map_or(format!("#{id}"), |s| s.to_string())
            },
            move |name: &str| table.iter().position(|n| *n == name).map(|i| i as u32),
        )
    }

    fn entry(time_ms: i64, pos: Pos, before: u32, after: u32, by: &str) -> Entry {
        Entry {
            time_ms,
            pos,
            before,
            after,
            by: by.into(),
        }
    }

    /// A realistic batch: 100 players digging and placing near each other
    /// over a minute, water flowing; 20,000 edits in one area.
    fn realistic_batch(count: usize) -> Vec<Entry> {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let players: Vec<String> = (0..100).map(|i| format!("player{i}")).collect();
        let mut time = 1_790_000_000_000i64;
        let mut spots: Vec<Pos> = (0..100)
            .map(|_| {
                let r = next();
                [
                    (r % 120) as i32,
                    10 + (r >> 8) as i32 % 20,
                    (r >> 16) as i32 % 120,
                ]
            })
            .collect();
        (0..count)
            .map(|_| {
                let r = next();
                time += (r % 6) as i64;
                let who = (r >> 8) as usize % 100;
                let spot = &mut spots[who];
                spot[(r >> 20) as usize % 3] += ((r >> 24) % 3) as i32 - 1;
                let (before, after, by) = match r >> 40 & 7 {
                    0 => (0, 5, UNNAMED.to_string()),
                    1..4 => (2 + (r >> 44) as u32 % 2, 0, players[who].clone()),
                    _ => (0, 2 + (r >> 44) as u32 % 3, players[who].clone()),
                };
                entry(time, *spot, before, after, &by)
            })
            .collect()
    }

    #[test]
    fn a_block_round_trips_and_costs_few_bytes_an_edit() {
        let (name, id) = names();
        let mut entries = realistic_batch(20_000);
        entries.push(entry(
            5,
            [-7, i32::MIN, i32::MAX],
            2 | (3 << TYPE_ID_BITS),
            1,
            "ann",
        ));
        entries.push(entry(-5, [0, 0, 0], 9, 0, "ann"));
        let blob = encode_block(&entries, &name);
        let back = decode_block(&blob, &id).expect("decodes");
        let mut expected = entries.clone();
        // Type 9 has no name this run knows: it reads as unknown.
        expected.last_mut().unwrap().before = buildat_voxel::UNKNOWN;
        assert_eq!(back, expected);
        let real = realistic_batch(20_000);
        let bytes = encode_block(&real, &name).len();
        let per_edit = bytes as f64 / real.len() as f64;
        println!(
            "rollback log: {bytes} bytes for {} edits: {per_edit:.2} bytes an edit",
            real.len()
        );
        assert!(per_edit <= 8.0, "{per_edit} bytes an edit");
        assert!(
            decode_block(&blob[..blob.len() / 2], &id).is_err(),
            "cut short"
        );
        assert!(decode_block(&[7, 1, 2], &id).is_err(), "another layout");
    }

    /// Several players on the same voxels: the griefer's are put back to
    /// what was there before the griefer's first change in the window,
    /// expecting what the griefer left; others' changes and the
    /// griefer's before the window are not touched.
    #[test]
    fn a_rollback_selects_the_voxel_from_before_the_actors_first_change() {
        let (stone, dirt, glass) = (2, 3, 4);
        let entries = vec![
            entry(100, [0, 0, 0], 0, dirt, "ann"),
            entry(200, [0, 0, 0], dirt, 0, "griefer"),
            entry(300, [0, 0, 0], 0, glass, "griefer"),
            entry(400, [1, 0, 0], stone, 0, "griefer"),
            entry(500, [1, 0, 0], 0, dirt, "ann"),
            entry(600, [2, 0, 0], stone, 0, "ann"),
            entry(50, [3, 0, 0], stone, 0, "griefer"),
            entry(700, [50, 0, 0], stone, 0, "griefer"),
        ];
        let (reverts, edits) = select(&entries, "griefer", 150, None);
        assert_eq!(edits, 4);
        assert_eq!(
            reverts,
            vec![
                Revert {
                    pos: [0, 0, 0],
                    to: dirt,
                    expect: glass
                },
                Revert {
                    pos: [1, 0, 0],
                    to: stone,
                    expect: 0
                },
                Revert {
                    pos: [50, 0, 0],
                    to: stone,
                    expect: 0
                },
            ]
        );
        let near = Within {
            centre: [0, 0, 0],
            radius: 10,
        };
        let (reverts, _) = select(&entries, "griefer", 150, Some(near));
        assert_eq!(reverts.len(), 2, "{reverts:?}");
        assert!(select(&entries, "nobody", 0, None).0.is_empty());
    }

    /// The log on each backend: blocks appended and read back by time and
    /// area; pruning deletes the blocks that ended before the cut, whole,
    /// and nothing else.
    #[test]
    fn pruning_removes_only_blocks_older_than_the_cut_or_past_the_size() {
        for test_world in crate::storage::testing::each_backend() {
            let mut storage = test_world.open(buildat_voxel::geometry::SectionSize::default());
            let block = |t0: i64, t1: i64, area: [i32; 3]| LogBlock {
                t0,
                t1,
                area,
                data: vec![1, 2, 3],
            };
            let day = 86_400_000;
            let now = 100 * day;
            storage
                .append_log(&[
                    block(now - 20 * day, now - 15 * day, [0, 0, 0]),
                    block(now - 15 * day, now - 13 * day, [0, 0, 0]),
                    block(now - day, now, [0, 0, 0]),
                    block(now - day, now, [5, 0, 0]),
                ])
                .expect("appended");
            let all = [[i32::MIN; 3], [i32::MAX; 3]];
            assert_eq!(storage.read_log(i64::MIN, all).expect("read").len(), 4);
            let here = storage.read_log(i64::MIN, [[0; 3], [0; 3]]).expect("read");
            assert_eq!(here.len(), 3, "{}: by area", test_world.backend);
            assert_eq!(
                storage.read_log(now - 14 * day, all).expect("read").len(),
                3,
                "by end"
            );
            // keep_days 14: what ended before now - 14 days goes.
            assert_eq!(storage.prune_log(now - 14 * day).expect("pruned"), 1);
            let left = storage.read_log(i64::MIN, all).expect("read");
            assert_eq!(left.len(), 3, "{}", test_world.backend);
            assert!(left.iter().all(|b| b.t1 >= now - 14 * day));
            assert_eq!(left[0], block(now - 15 * day, now - 13 * day, [0, 0, 0]));
            assert_eq!(storage.prune_log(now - 14 * day).expect("pruned"), 0);

            // By size: the newest blocks whose blobs fit stay.
            let sized = |t1: i64, bytes: usize| LogBlock {
                t0: t1 - 10,
                t1,
                area: [1, 1, 1],
                data: vec![7; bytes],
            };
            storage
                .append_log(&[
                    sized(now + 30, 100),
                    sized(now + 10, 100),
                    sized(now + 20, 100),
                ])
                .expect("appended");
            let total = |storage: &mut Box<dyn crate::storage::WorldStorage>| -> usize {
                storage
                    .read_log(i64::MIN, all)
                    .expect("read")
                    .iter()
                    .map(|b| b.data.len())
                    .sum()
            };
            assert_eq!(total(&mut storage), 309);
            assert_eq!(storage.prune_log_to(10_000).expect("pruned"), 0, "all fit");
            assert_eq!(
                storage.prune_log_to(250).expect("pruned"),
                4,
                "{}",
                test_world.backend
            );
            let left = storage.read_log(i64::MIN, all).expect("read");
            assert_eq!(
                left.iter().map(|b| b.t1).collect::<Vec<_>>(),
                vec![now + 20, now + 30],
                "{}: the two newest",
                test_world.backend
            );
        }
    }

    /// The module: edits by a griefer and by ann are logged with who made
    /// them; `inspect` shows a voxel's history newest first; a rollback
    /// previews, `rollback confirm` puts back the griefer's voxels
    /// (streamed to the chunk's holder), not where ann changed one after
    /// the griefer; `restore` brings the griefer's voxels again; the log
    /// survives a restart of the module (read from storage).
    #[test]
    fn rollback_confirm_and_restore_through_the_module() {
        use buildat_interface::testing::TestHost;
        use buildat_network_api::receive::testing::sent;
        use buildat_voxel::BlockDefinition;
        use buildat_voxel::geometry::SectionSize;
        use buildat_voxelworld_api::ChunkData;
        use buildat_voxelworld_api::stream::VoxelUpdates;

        let dir = tempfile::tempdir().expect("temp dir");
        let kit = TestHost::new().world_path(dir.path());
        let mut world = kit.load::<VoxelWorld>().expect("loads");
        let stone = world
            .call(&RegisterBlock {
                block: BlockDefinition::simple("stone", "stone.png"),
            })
            .expect("registers")[0];
        let chunks = SectionSize::default()
            .chunks_of_section([0, 0, 0])
            .into_iter()
            .map(|chunk| {
                let voxels = vec![stone; CHUNK_SIZE.pow(3) as usize];
                let blob = buildat_format::encode_voxels(&voxels, |_| Some("stone")).expect("blob");
                (chunk, ChunkData { node_id: 0, blob })
            })
            .collect();
        world
            .call(&ApplyGenerated {
                section: GeneratedSection {
                    section: [0, 0, 0],
                    chunks,
                },
            })
            .expect("applied");
        world
            .emit(&Viewer {
                peer: 7,
                position: [1.5, 2.5, 3.5],
            })
            .expect("moved");
        let edit = |pos: Pos, voxel: u32, by: &str| EditVoxel {
            pos,
            voxel,
            replace: Replace::Any,
            save: true,
            by: Some(by.into()),
        };
        let air = buildat_voxel::AIR;
        world
            .call(&EditVoxels {
                edits: vec![
                    edit([1, 1, 1], air, "griefer"),
                    edit([2, 1, 1], air, "griefer"),
                    edit([3, 1, 1], air, "griefer"),
                    edit([5, 1, 1], air, "ann"),
                ],
            })
            .expect("edited");
        // ann fills one of the griefer's holes: the rollback leaves it.
        world
            .call(&EditVoxels {
                edits: vec![edit([3, 1, 1], stone, "ann")],
            })
            .expect("edited");
        let command = |world: &mut buildat_interface::testing::TestModule<VoxelWorld>,
                       words: &[&str]| {
            let (name, args) = words.split_first().expect("a command");
            world.command(name, args, None).expect("runs")
        };
        let history = command(&mut world, &["inspect", "3", "1", "1"]);
        let lines: Vec<&str> = history.lines().collect();
        assert_eq!(lines.len(), 3, "{history}");
        assert!(lines[1].ends_with("ann: air -> stone"), "{history}");
        assert!(lines[2].ends_with("griefer: stone -> air"), "{history}");
        assert!(command(&mut world, &["inspect", "9", "9", "9"]).contains("no change logged"));

        let preview = command(&mut world, &["rollback", "griefer", "10m"]);
        assert!(
            preview.contains("3 edits by griefer on 3 voxels"),
            "{preview}"
        );
        assert_eq!(
            world.call(&GetVoxel { pos: [1, 1, 1] }).expect("read"),
            Some(air),
            "a preview changes nothing"
        );
        kit.clear();
        let done = command(&mut world, &["rollback", "confirm"]);
        assert!(done.contains("2 voxels put back, 1 left"), "{done}");
        let at = |world: &mut buildat_interface::testing::TestModule<VoxelWorld>, pos: Pos| {
            world.call(&GetVoxel { pos }).expect("read")
        };
        assert_eq!(at(&mut world, [1, 1, 1]), Some(stone));
        assert_eq!(at(&mut world, [2, 1, 1]), Some(stone));
        assert_eq!(at(&mut world, [5, 1, 1]), Some(air), "ann's dig stays");
        assert!(
            !sent::<VoxelUpdates>(&kit).is_empty(),
            "streamed to the holder"
        );
        let history = command(&mut world, &["inspect", "1", "1", "1"]);
        assert!(
            history
                .lines()
                .nth(1)
                .is_some_and(|l| l.ends_with("rollback: air -> stone")),
            "{history}"
        );
        assert!(
            world.command("rollback", &["confirm"], None).is_err(),
            "used up"
        );

        let restored = command(&mut world, &["restore"]);
        assert!(restored.contains("2 of 2"), "{restored}");
        assert_eq!(at(&mut world, [1, 1, 1]), Some(air));
        assert_eq!(at(&mut world, [3, 1, 1]), Some(stone));
        assert!(
            world.command("restore", &[], None).is_err(),
            "nothing left to undo"
        );

        // Written to storage on unload, read back by the next run.
        drop(world);
        let mut world = kit.load::<VoxelWorld>().expect("loads again");
        world
            .call(&RegisterBlock {
                block: BlockDefinition::simple("stone", "stone.png"),
            })
            .expect("registers");
        let history = command(&mut world, &["inspect", "1", "1", "1"]);
        assert_eq!(history.lines().count(), 4, "{history}");
        assert!(
            history
                .lines()
                .nth(1)
                .is_some_and(|l| l.ends_with("restore: stone -> air"))
        );
    }

    /// The recorder hands out its oldest changes a slice at a time, with
    /// their actors, and puts back what could not be written before newer
    /// ones; it records nothing while off.
    #[test]
    fn the_recorder_is_written_in_slices_oldest_first() {
        let mut recorder = Recorder::default();
        recorder.record([0, 0, 0], 0, 2, Some("ann"));
        assert!(recorder.is_empty(), "off");
        recorder.enabled = true;
        recorder.record([1, 0, 0], 0, 2, Some("ann"));
        recorder.record([2, 0, 0], 0, 2, None);
        recorder.record([3, 0, 0], 2, 0, Some("bob"));
        let first = recorder.take(2);
        assert_eq!(
            first
                .iter()
                .map(|e| (e.pos[0], e.by.as_str()))
                .collect::<Vec<_>>(),
            vec![(1, "ann"), (2, UNNAMED)]
        );
        recorder.record([4, 0, 0], 2, 0, Some("ann"));
        recorder.put_back(first.clone());
        let all = recorder.take(usize::MAX);
        assert_eq!(
            all.iter()
                .map(|e| (e.pos[0], e.by.as_str()))
                .collect::<Vec<_>>(),
            vec![(1, "ann"), (2, UNNAMED), (3, "bob"), (4, "ann")]
        );
        assert_eq!(all[0].time_ms, first[0].time_ms, "its time kept");
        assert!(recorder.is_empty());
    }

    /// `rollback.keep_days` through the module: at start, the blocks
    /// that ended more than that many days ago go, the newer stay; with
    /// `rollback.enabled=false` an edit is not logged.
    #[test]
    fn the_module_prunes_at_start_and_a_disabled_log_records_nothing() {
        use buildat_interface::testing::TestHost;
        use buildat_voxel::BlockDefinition;
        use buildat_voxel::geometry::SectionSize;
        use buildat_voxelworld_api::ChunkData;

        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("world.sqlite");
        let day = 86_400_000;
        let now = now_ms();
        let block = |t1: i64| LogBlock {
            t0: t1 - 1000,
            t1,
            area: [0, 0, 0],
            // The newer one damaged: skipped by inspect, not in its way.
            data: if t1 < now - 3 * day {
                encode_block(&[], &|_| String::new())
            } else {
                vec![rollback_blob::VERSION, 0xff]
            },
        };
        let mut storage =
            crate::storage::SqliteStorage::open(&path, SectionSize::default()).expect("opens");
        crate::storage::WorldStorage::append_log(
            &mut storage,
            &[block(now - 4 * day), block(now - 2 * day)],
        )
        .expect("appended");
        drop(storage);
        let all = [[i32::MIN; 3], [i32::MAX; 3]];
        let kit = TestHost::new()
            .world_path(dir.path())
            .config("rollback.keep_days", "3")
            .config("rollback.enabled", "false");
        let mut world = kit.load::<VoxelWorld>().expect("loads");
        let left = world
            .module_mut()
            .world
            .storage_mut()
            .read_log(i64::MIN, all)
            .expect("read");
        assert_eq!(left, vec![block(now - 2 * day)], "only the older went");

        let stone = world
            .call(&RegisterBlock {
                block: BlockDefinition::simple("stone", "stone.png"),
            })
            .expect("registers")[0];
        let chunks = SectionSize::default()
            .chunks_of_section([0, 0, 0])
            .into_iter()
            .map(|chunk| {
                let voxels = vec![buildat_voxel::AIR; CHUNK_SIZE.pow(3) as usize];
                let blob = buildat_format::encode_voxels(&voxels, |_| Some("air")).expect("blob");
                (chunk, ChunkData { node_id: 0, blob })
            })
            .collect();
        world
            .call(&ApplyGenerated {
                section: GeneratedSection {
                    section: [0, 0, 0],
                    chunks,
                },
            })
            .expect("applied");
        world
            .call(&EditVoxel {
                pos: [1, 1, 1],
                voxel: stone,
                replace: Replace::Any,
                save: true,
                by: Some("ann".into()),
            })
            .expect("edited");
        let answer = world
            .command("inspect", &["1", "1", "1"], None)
            .expect("runs");
        assert!(answer.contains("no change logged"), "{answer}");
    }

    /// Inventory changes told by the inventory module are kept in the
    /// log's storage (a restart reads them back); `inspect player NAME`
    /// lists what NAME did or NAME's inventories took, newest first; they
    /// are pruned by `rollback.keep_days` like the voxels' blocks, the
    /// newer kept; a voxel's history and a whole-world rollback do not
    /// trip on their blocks.
    #[test]
    fn inventory_changes_are_logged_inspected_by_player_and_pruned() {
        use buildat_interface::testing::TestHost;

        let dir = tempfile::tempdir().expect("temp dir");
        let day = 86_400_000;
        let now = now_ms();
        let change = |time_ms: i64, by: &str, inventory: &str, item: &str, count: i32| ItemLogged {
            time_ms,
            by: by.into(),
            inventory: inventory.into(),
            slot: 3,
            item: item.into(),
            count,
        };
        let kit = TestHost::new().world_path(dir.path());
        let mut world = kit.load::<VoxelWorld>().expect("loads");
        world
            .emit(&LogItems {
                changes: vec![change(now - 5 * day, "ann", "player:ann main", "stick", 2)],
            })
            .expect("told");
        world.module_mut().flush_log();
        world
            .emit(&LogItems {
                changes: vec![
                    change(now - 1000, "ann", "player:ann main", "dirt", -3),
                    change(now - 1000, "ann", "voxel:1,2,3 main", "dirt", 3),
                    change(now - 500, "console", "player:ann main", "pick", 1),
                    change(now - 400, "bob", "player:bob main", "stone", 5),
                ],
            })
            .expect("told");
        let answer = world
            .command("inspect", &["player", "ann", "--lines", "3"], None)
            .expect("runs");
        let lines: Vec<&str> = answer.lines().collect();
        assert_eq!(lines.len(), 4, "{answer}");
        assert!(
            lines[1].ends_with("console: +1 pick into player:ann main slot 3"),
            "{answer}"
        );
        assert!(
            lines[2].ends_with("ann: +3 dirt into voxel:1,2,3 main slot 3"),
            "{answer}"
        );
        assert!(
            lines[3].ends_with("ann: -3 dirt out of player:ann main slot 3"),
            "{answer}"
        );
        assert!(
            world
                .command("inspect", &["player", "nobody"], None)
                .expect("runs")
                .contains("no inventory change logged")
        );
        assert!(
            world.command("inspect", &["player"], None).is_err(),
            "usage"
        );
        // A voxel's history and a rollback over the whole world read past
        // the items' blocks.
        assert!(
            world
                .command("inspect", &["1", "2", "3"], None)
                .expect("runs")
                .contains("no change logged")
        );
        assert!(
            world
                .command("rollback", &["ann", "10d"], None)
                .expect("runs")
                .contains("changed nothing")
        );
        let skipped = kit
            .logs()
            .into_iter()
            .filter(|(_, line)| line.contains("skipped"))
            .collect::<Vec<_>>();
        assert!(
            skipped.is_empty(),
            "no block taken for damaged: {skipped:?}"
        );

        // A restart: kept in storage; keep_days 3 prunes the older block.
        drop(world);
        kit.set_config("rollback.keep_days", "3");
        let mut world = kit.load::<VoxelWorld>().expect("loads again");
        let answer = world
            .command("inspect", &["player", "ann", "--lines", "10"], None)
            .expect("runs");
        assert_eq!(answer.lines().count(), 4, "{answer}");
        assert!(!answer.contains("stick"), "pruned: {answer}");
        let bob = world
            .command("inspect", &["player", "bob"], None)
            .expect("runs");
        assert!(bob.contains("bob: +5 stone into player:bob main"), "{bob}");
    }

    /// A player's sessions: from each login to its next; those from the
    /// address that reach the window are kept, per name.
    #[test]
    fn sessions_from_an_address_run_from_a_login_to_the_next() {
        let login = |time_ms: i64, name: &str, address: &str| ItemLogged {
            time_ms,
            by: name.into(),
            inventory: LOGIN.into(),
            slot: 0,
            item: address.into(),
            count: 0,
        };
        let logins = vec![
            login(300, "ann", "10.0.0.3"),
            login(100, "ann", "10.0.0.1"),
            login(50, "bob", "10.0.0.1"),
            login(10, "carl", "10.0.0.1"),
            login(20, "carl", "10.0.0.2"),
            login(150, "dan", "10.0.0.2"),
        ];
        let sessions = sessions_from(&logins, "10.0.0.1", 40);
        let session = |name: &str, from_ms, to_ms| Session {
            name: name.into(),
            from_ms,
            to_ms,
        };
        assert_eq!(
            sessions,
            vec![session("ann", 100, 300), session("bob", 50, i64::MAX)],
            "carl left 10.0.0.1 before the window"
        );
        assert!(sessions_from(&logins, "10.9.9.9", 0).is_empty());
    }

    /// `rollback ADDRESS DURATION` through the module: the logins the game
    /// tells are kept; the preview names every player that played from
    /// the address and covers their edits, not another address's player;
    /// confirm puts them back.
    #[test]
    fn a_rollback_by_address_covers_every_player_from_it() {
        use buildat_interface::testing::TestHost;
        use buildat_voxel::BlockDefinition;
        use buildat_voxel::geometry::SectionSize;
        use buildat_voxelworld_api::ChunkData;

        let dir = tempfile::tempdir().expect("temp dir");
        let kit = TestHost::new().world_path(dir.path());
        let mut world = kit.load::<VoxelWorld>().expect("loads");
        let stone = world
            .call(&RegisterBlock {
                block: BlockDefinition::simple("stone", "stone.png"),
            })
            .expect("registers")[0];
        let chunks = SectionSize::default()
            .chunks_of_section([0, 0, 0])
            .into_iter()
            .map(|chunk| {
                let voxels = vec![stone; CHUNK_SIZE.pow(3) as usize];
                let blob = buildat_format::encode_voxels(&voxels, |_| Some("stone")).expect("blob");
                (chunk, ChunkData { node_id: 0, blob })
            })
            .collect();
        world
            .call(&ApplyGenerated {
                section: GeneratedSection {
                    section: [0, 0, 0],
                    chunks,
                },
            })
            .expect("applied");
        let now = now_ms();
        for (name, address) in [
            ("ann", "127.0.0.1"),
            ("bob", "127.0.0.1"),
            ("carl", "10.0.0.2"),
        ] {
            world
                .emit(&LogLogin {
                    time_ms: now - 60_000,
                    name: name.into(),
                    address: address.into(),
                })
                .expect("told");
        }
        let dig = |pos: Pos, by: &str| EditVoxel {
            pos,
            voxel: buildat_voxel::AIR,
            replace: Replace::Any,
            save: true,
            by: Some(by.into()),
        };
        world
            .call(&EditVoxels {
                edits: vec![
                    dig([1, 1, 1], "ann"),
                    dig([2, 1, 1], "bob"),
                    dig([3, 1, 1], "carl"),
                ],
            })
            .expect("edited");
        let preview = world
            .command("rollback", &["127.0.0.1", "10m"], None)
            .expect("runs");
        assert!(
            preview.contains("2 edits by 127.0.0.1 (ann, bob) on 2 voxels"),
            "{preview}"
        );
        let nobody = world
            .command("rollback", &["10.9.9.9", "10m"], None)
            .expect("runs");
        assert!(nobody.contains("nobody played from 10.9.9.9"), "{nobody}");
        world
            .command("rollback", &["127.0.0.1", "10m"], None)
            .expect("runs");
        let done = world.command("rollback", &["confirm"], None).expect("runs");
        assert!(done.contains("2 voxels put back"), "{done}");
        let at = |world: &mut buildat_interface::testing::TestModule<VoxelWorld>, pos: Pos| {
            world.call(&GetVoxel { pos }).expect("read")
        };
        assert_eq!(at(&mut world, [1, 1, 1]), Some(stone));
        assert_eq!(at(&mut world, [2, 1, 1]), Some(stone));
        assert_eq!(
            at(&mut world, [3, 1, 1]),
            Some(buildat_voxel::AIR),
            "carl's stays"
        );
    }

    /// A preview waits for `rollback confirm` across a reload of the
    /// module, and the rollback it applies is undone by `restore` after
    /// another reload (the module's stash).
    #[test]
    fn previews_and_undoable_rollbacks_cross_a_reload() {
        use buildat_interface::testing::{TestHost, TestModule};
        use buildat_voxel::BlockDefinition;
        use buildat_voxel::geometry::SectionSize;
        use buildat_voxelworld_api::ChunkData;

        let dir = tempfile::tempdir().expect("temp dir");
        let kit = TestHost::new().world_path(dir.path());
        let mut world = kit.load::<VoxelWorld>().expect("loads");
        let stone = world
            .call(&RegisterBlock {
                block: BlockDefinition::simple("stone", "stone.png"),
            })
            .expect("registers")[0];
        let chunks = SectionSize::default()
            .chunks_of_section([0, 0, 0])
            .into_iter()
            .map(|chunk| {
                let voxels = vec![stone; CHUNK_SIZE.pow(3) as usize];
                let blob = buildat_format::encode_voxels(&voxels, |_| Some("stone")).expect("blob");
                (chunk, ChunkData { node_id: 0, blob })
            })
            .collect();
        world
            .call(&ApplyGenerated {
                section: GeneratedSection {
                    section: [0, 0, 0],
                    chunks,
                },
            })
            .expect("applied");
        world
            .call(&EditVoxel {
                pos: [1, 1, 1],
                voxel: buildat_voxel::AIR,
                replace: Replace::Any,
                save: true,
                by: Some("griefer".into()),
            })
            .expect("edited");
        let preview = world
            .command("rollback", &["griefer", "10m"], Some("op"))
            .expect("runs");
        assert!(preview.contains("1 edits by griefer"), "{preview}");
        let at = |world: &mut TestModule<VoxelWorld>| {
            world.call(&GetVoxel { pos: [1, 1, 1] }).expect("read")
        };
        let mut world = world.reload::<VoxelWorld>().expect("reloads");
        let done = world
            .command("rollback", &["confirm"], Some("op"))
            .expect("the preview crossed the reload");
        assert!(done.contains("1 voxels put back"), "{done}");
        assert_eq!(at(&mut world), Some(stone));
        let mut world = world.reload::<VoxelWorld>().expect("reloads");
        let restored = world
            .command("restore", &[], None)
            .expect("the rollback crossed the reload");
        assert!(restored.contains("1 of 1"), "{restored}");
        assert_eq!(at(&mut world), Some(buildat_voxel::AIR));
    }

    #[test]
    fn rollback_words_and_durations_parse() {
        assert_eq!(describe_time(1_796_608_700_123), "2026-12-07 01:58:20 UTC");
        assert_eq!(describe_age(3_725_000), "1h02m ago");
        assert_eq!(parse_duration("10m"), Some(600_000));
        assert_eq!(parse_duration("2h"), Some(7_200_000));
        assert_eq!(parse_duration("3d"), Some(259_200_000));
        assert_eq!(parse_duration("45"), Some(45_000));
        assert_eq!(parse_duration("1y"), None);
        let words = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
        let (name, ms, within, force) =
            parse_rollback(&words("griefer 1h radius 5 at 1 -2 3 force")).expect("parses");
        assert_eq!((name.as_str(), ms, force), ("griefer", 3_600_000, true));
        assert_eq!(
            within,
            Some(Within {
                centre: [1, -2, 3],
                radius: 5
            })
        );
        assert!(parse_rollback(&words("griefer")).is_err());
        assert!(parse_rollback(&words("griefer soon")).is_err());
        assert!(parse_rollback(&words("griefer 1h radius 5")).is_err());
        // A module's own edits, by a word: the log's `liquid (module)`.
        let (name, ..) = parse_rollback(&words("module:liquid 10m")).expect("parses");
        assert_eq!(name, "liquid (module)");
        let error = parse_rollback(&words("module: 10m")).expect_err("no module named");
        assert!(error.to_string().contains("module:liquid"), "{error}");
    }

    /// `rollback module:liquid` puts back the water's edits, not a
    /// player's next to them.
    #[test]
    fn a_modules_edits_are_rolled_back_by_module_name() {
        use buildat_interface::testing::TestHost;
        use buildat_voxel::BlockDefinition;
        use buildat_voxel::geometry::SectionSize;
        use buildat_voxelworld_api::ChunkData;

        let dir = tempfile::tempdir().expect("temp dir");
        let kit = TestHost::new().world_path(dir.path());
        let mut world = kit.load::<VoxelWorld>().expect("loads");
        let stone = world
            .call(&RegisterBlock {
                block: BlockDefinition::simple("stone", "stone.png"),
            })
            .expect("registers")[0];
        let chunks = SectionSize::default()
            .chunks_of_section([0, 0, 0])
            .into_iter()
            .map(|chunk| {
                let voxels = vec![stone; CHUNK_SIZE.pow(3) as usize];
                let blob = buildat_format::encode_voxels(&voxels, |_| Some("stone")).expect("blob");
                (chunk, ChunkData { node_id: 0, blob })
            })
            .collect();
        world
            .call(&ApplyGenerated {
                section: GeneratedSection {
                    section: [0, 0, 0],
                    chunks,
                },
            })
            .expect("applied");
        for (pos, by) in [
            ([1, 1, 1], buildat_voxelworld_api::by_module("liquid")),
            ([2, 1, 1], Some("ann".to_string())),
        ] {
            world
                .call(&EditVoxel {
                    pos,
                    voxel: buildat_voxel::AIR,
                    replace: Replace::Any,
                    save: true,
                    by,
                })
                .expect("edited");
        }
        let preview = world
            .command("rollback", &["module:liquid", "10m"], Some("op"))
            .expect("runs");
        assert!(preview.contains("1 edits by liquid (module)"), "{preview}");
        let done = world
            .command("rollback", &["confirm"], Some("op"))
            .expect("applies");
        assert!(done.contains("1 voxels put back"), "{done}");
        let mut at = |pos| world.call(&GetVoxel { pos }).expect("read");
        assert_eq!(at([1, 1, 1]), Some(stone));
        assert_eq!(at([2, 1, 1]), Some(buildat_voxel::AIR), "ann's stays");
    }
}
