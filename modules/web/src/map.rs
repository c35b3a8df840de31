//! The live map's tiles.
//!
//! Owns: the map's blocks (a block is 128 × 128 columns, the area of one
//! tile at level 0: each column's top voxel and its height, fetched with
//! one `column_tops` call of voxelworld per block, one call at a time; a
//! block a page asks for and nobody fetched is fetched then, a cached one
//! is served as it is, and one whose chunks changed
//! (`voxelworld:node_volume_updated`) or with columns not generated yet is
//! fetched again by the refresher, if a page asked for it lately), the
//! map's budget of the world's time (`web.map_share`, with up to
//! `MAP_BURST_S` saved): pages' new blocks and the refresher's spend the
//! same budget, the refresher only while more than `REFRESH_FLOOR_S` is
//! left (the rest is for pages) and within its own part of the share
//! (`REFRESH_PART`), and a tile needing a block when none is
//! left is answered 503 with `Retry-After`: however many pages ask, for
//! whatever tiles, and however fast the world changes, the map costs the
//! world at most that share of its thread over time,
//! the change feed the map page polls (`/api/changes?since=N`: the blocks
//! changed since N), and drawing a tile (`/tile/Z/X/Y.png`: level Z covers
//! 128·2^Z voxels with 128 × 128 pixels, X along x and Y along z; each
//! pixel the colour of its column's top block (`buildat_voxel::colour`)
//! shaded by the slope and the height, transparent where nothing is
//! generated). Does not own: the voxels (voxelworld) or the page
//! (`assets/map.js`).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use buildat_voxel::colour::block_colour;
use buildat_voxel::geometry::{CHUNK_SIZE, Pos};
use buildat_voxel::{AIR, VoxelInstance, VoxelRegistry};
use buildat_voxelworld_api::{ColumnTops, GetRegistry, Tops};
use serde::Serialize;

use crate::Shared;

/// Columns along each side of a block, and pixels along each side of a
/// tile.
pub const TILE: i32 = 128;
/// The most zoomed-out level (a tile of 128·2^5 = 4096 voxels).
pub const MAX_LEVEL: u32 = 5;
/// Changes remembered for the feed.
const MAX_CHANGES: usize = 4096;
/// Blocks kept (about 130 KiB each).
const MAX_BLOCKS: usize = 2048;
/// How long a block with columns not generated yet is kept before it is
/// fetched again.
const INCOMPLETE_TTL: Duration = Duration::from_secs(3);
/// The share of the world's thread the map may spend on `column_tops`
/// calls by default (`web.map_share`), and the most it may save up
/// (seconds of calls: about 400 blocks of a release build, a map of 2,500
/// × 2,500 voxels drawn at once).
pub const MAP_SHARE: f64 = 0.1;
pub const MAP_BURST_S: f64 = 2.0;
/// The refresher fetches only while more than this is saved: the rest is
/// for the blocks pages ask for.
const REFRESH_FLOOR_S: f64 = 1.0;
/// The refresher's own part of the share, and the most it may save up: a
/// world edited all over the view keeps every block changing, and the
/// refresher fetching them again at the whole share cost a busy world
/// that share for as long as a page was open; at a quarter of it, a
/// changed tile waits longer instead.
pub const REFRESH_PART: f64 = 0.25;
const REFRESH_BURST_S: f64 = 0.25;
/// A block no page asked for this long is not refreshed (a changed one is
/// dropped, to be fetched when asked again).
const WANTED_FOR: Duration = Duration::from_secs(120);

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MapError {
    #[error("the world did not answer: {0}")]
    World(String),
    #[error("encoding the tile: {0}")]
    Png(String),
    #[error("the map's share of the world's time is spent for now: try again in {} s", .0.as_secs().max(1))]
    Busy(Duration),
}

/// Who spends the map's budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spender {
    /// A page asking for a block not cached.
    Page,
    /// The refresher, fetching changed blocks again.
    Refresher,
}

/// A tile's address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TileId {
    pub level: u32,
    pub x: i32,
    pub z: i32,
}

/// `/tile/Z/X/Y.png`.
pub fn parse_tile_path(path: &str) -> Option<TileId> {
    let rest = path.strip_prefix("/tile/")?.strip_suffix(".png")?;
    let mut parts = rest.split('/');
    let level: u32 = parts.next()?.parse().ok()?;
    let x: i32 = parts.next()?.parse().ok()?;
    let z: i32 = parts.next()?.parse().ok()?;
    if parts.next().is_some() || level > MAX_LEVEL {
        return None;
    }
    // Tiles beyond ±2^24 voxels are no place anyone walks to.
    let limit = (1i64 << 24) >> (7 + level);
    (i64::from(x).abs() <= limit && i64::from(z).abs() <= limit).then_some(TileId { level, x, z })
}

/// One block's columns, row by row (z outer).
#[derive(Debug, Clone)]
pub struct Block {
    pub tops: Tops,
    fetched: Instant,
}

#[derive(Default)]
struct Inner {
    blocks: HashMap<(i32, i32), Arc<Block>>,
    /// Cached blocks with a chunk changed since they were fetched.
    stale: std::collections::HashSet<(i32, i32)>,
    /// When a page last asked for each block (the refresher looks only at
    /// those asked for lately).
    wanted: HashMap<(i32, i32), Instant>,
    seq: u64,
    changes: VecDeque<(u64, (i32, i32))>,
}

/// The map's state, shared by the module's thread (changes) and the HTTP
/// side (tiles).
pub struct MapState {
    /// The share of the world's time the map may spend.
    share: f64,
    inner: Mutex<Inner>,
    /// Held during each `column_tops` call: the map makes one at a time.
    fetching: Mutex<()>,
    /// Colours by voxel type id.
    palette: Mutex<Option<Arc<Vec<[u8; 3]>>>>,
    /// The map's budget: seconds of calls it may make now, and when it
    /// was last topped up.
    budget: Mutex<Option<(f64, Instant)>>,
    /// The refresher's own part ([`REFRESH_PART`] of the share), spent
    /// with the budget above.
    refresh_budget: Mutex<Option<(f64, Instant)>>,
    /// Tiles drawn, with the blocks they were drawn from: served again
    /// while those are still the cached ones (every open page asks for a
    /// changed tile; it is drawn once).
    drawn: Mutex<HashMap<TileId, DrawnTile>>,
    /// Tags of drawn tiles: this map's own prefix (its start, so a tag
    /// of a module before a reload is never taken for one of now) and a
    /// count.
    tag_prefix: String,
    tags: std::sync::atomic::AtomicU64,
}

impl Default for MapState {
    fn default() -> Self {
        Self::new(MAP_SHARE)
    }
}

struct DrawnTile {
    blocks: Vec<Arc<Block>>,
    png: hyper::body::Bytes,
    etag: Arc<str>,
}

/// A tile as served: the PNG (one buffer shared by every page asking),
/// its tag (`ETag`: the same until a block under it changes), and whether
/// it was drawn for this request.
#[derive(Debug, Clone)]
pub struct TilePng {
    pub png: hyper::body::Bytes,
    pub etag: Arc<str>,
    pub drawn_now: bool,
}

/// Tiles kept drawn (a few KiB to 50 KiB each).
const MAX_DRAWN: usize = 1024;

/// What `/api/changes` answers.
#[derive(Debug, Clone, Serialize)]
pub struct Changes {
    pub seq: u64,
    /// Blocks (x and z of level-0 tiles) changed after `since`.
    pub blocks: Vec<[i32; 2]>,
    /// `since` is older than the feed remembers: redraw everything.
    pub reset: bool,
}

impl MapState {
    /// A map spending at most `share` of the world's time.
    pub fn new(share: f64) -> Self {
        Self {
            share,
            inner: Mutex::default(),
            fetching: Mutex::default(),
            palette: Mutex::default(),
            budget: Mutex::default(),
            refresh_budget: Mutex::default(),
            drawn: Mutex::default(),
            tag_prefix: format!(
                "{:x}",
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_micros())
            ),
            tags: std::sync::atomic::AtomicU64::new(0),
        }
    }

    fn inner(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A chunk's voxels changed: its block (if cached) is due for the
    /// refresher, which tells the pages through the feed once it has it.
    pub fn chunk_changed(&self, chunk: Pos) {
        let key = (
            (chunk[0] * CHUNK_SIZE).div_euclid(TILE),
            (chunk[2] * CHUNK_SIZE).div_euclid(TILE),
        );
        let mut inner = self.inner();
        if inner.blocks.contains_key(&key) {
            inner.stale.insert(key);
        }
    }

    /// Keeps a fetched block; the feed tells the pages if it differs from
    /// the one it replaces.
    fn store(&self, key: (i32, i32), block: Arc<Block>) {
        let mut inner = self.inner();
        if inner.blocks.len() >= MAX_BLOCKS {
            inner.blocks.clear();
            inner.stale.clear();
            inner.wanted.clear();
        }
        inner.stale.remove(&key);
        let previous = inner.blocks.insert(key, block.clone());
        if previous.is_some_and(|p| p.tops != block.tops) {
            Self::record(&mut inner, key);
        }
    }

    /// The blocks the refresher should fetch again, those a page asked for
    /// last first: changed ones, and ones with columns not generated that
    /// are older than [`INCOMPLETE_TTL`]. Changed blocks nobody asked for
    /// lately are dropped.
    fn due(&self) -> Vec<(i32, i32)> {
        let mut inner = self.inner();
        let Inner {
            blocks,
            stale,
            wanted,
            ..
        } = &mut *inner;
        let asked = |key: &(i32, i32)| wanted.get(key).filter(|at| at.elapsed() < WANTED_FOR);
        stale.retain(|key| {
            let keep = asked(key).is_some();
            if !keep {
                blocks.remove(key);
            }
            keep
        });
        let mut due: Vec<(Instant, (i32, i32))> = blocks
            .iter()
            .filter(|(key, block)| {
                stale.contains(key)
                    || (block.tops.missing > 0 && block.fetched.elapsed() >= INCOMPLETE_TTL)
            })
            .filter_map(|(key, _)| Some((*asked(key)?, *key)))
            .collect();
        due.sort_unstable_by_key(|(at, _)| std::cmp::Reverse(*at));
        due.into_iter().map(|(_, key)| key).collect()
    }

    /// Takes `spent` seconds of calls from the budget at `now`, after
    /// topping it up by its share of the time since; answers what is
    /// left.
    fn spend_at(&self, spent: f64, now: Instant) -> f64 {
        take_from(&self.budget, self.share, MAP_BURST_S, spent, now)
    }

    /// The refresher's part: [`Self::spend_at`] of its own bucket.
    fn spend_refresh_at(&self, spent: f64, now: Instant) -> f64 {
        take_from(
            &self.refresh_budget,
            self.share * REFRESH_PART,
            REFRESH_BURST_S,
            spent,
            now,
        )
    }

    /// Takes `spent` seconds of calls `who` made from the budget (and the
    /// refresher's from its part too).
    pub fn spend_as(&self, who: Spender, spent: f64) {
        self.spend_as_at(who, spent, Instant::now());
    }

    fn spend_as_at(&self, who: Spender, spent: f64, now: Instant) {
        self.spend_at(spent, now);
        if who == Spender::Refresher {
            self.spend_refresh_at(spent, now);
        }
    }

    /// Whether `who` may make a call at `now`; if not, how long until it
    /// may.
    pub fn may_fetch_at(&self, who: Spender, now: Instant) -> Result<(), Duration> {
        let floor = match who {
            Spender::Page => 0.0,
            Spender::Refresher => REFRESH_FLOOR_S,
        };
        let left = self.spend_at(0.0, now);
        let mut wait = (floor - left) / self.share;
        if who == Spender::Refresher {
            let part = self.spend_refresh_at(0.0, now);
            wait = wait.max(-part / (self.share * REFRESH_PART));
        }
        if wait < 0.0 {
            Ok(())
        } else {
            Err(Duration::from_secs_f64(wait + 0.05))
        }
    }

    pub fn may_fetch(&self, who: Spender) -> Result<(), Duration> {
        self.may_fetch_at(who, Instant::now())
    }

    fn record(inner: &mut Inner, key: (i32, i32)) {
        inner.seq += 1;
        let seq = inner.seq;
        inner.changes.push_back((seq, key));
        while inner.changes.len() > MAX_CHANGES {
            inner.changes.pop_front();
        }
    }

    pub fn changes_since(&self, since: u64) -> Changes {
        let inner = self.inner();
        let oldest = inner.changes.front().map_or(inner.seq, |(seq, _)| seq - 1);
        let mut blocks: Vec<[i32; 2]> = inner
            .changes
            .iter()
            .filter(|(seq, _)| *seq > since)
            .map(|(_, (x, z))| [*x, *z])
            .collect();
        blocks.sort_unstable();
        blocks.dedup();
        Changes {
            seq: inner.seq,
            blocks,
            reset: since < oldest || since > inner.seq,
        }
    }

    /// The latest change's number.
    pub fn seq(&self) -> u64 {
        self.inner().seq
    }

    /// Blocks cached now.
    pub fn cached_blocks(&self) -> usize {
        self.inner().blocks.len()
    }
}

/// The block at `key`, from the cache or fetched.
fn block(shared: &Shared, key: (i32, i32)) -> Result<Arc<Block>, MapError> {
    block_for(shared, key, true)
}

/// [`block`]; `asked`: a page asked for it (served from the cache if there
/// at all), else the refresher (fetched again).
fn block_for(shared: &Shared, key: (i32, i32), asked: bool) -> Result<Arc<Block>, MapError> {
    let map = &shared.map;
    let cached = || map.inner().blocks.get(&key).cloned();
    if asked {
        map.inner().wanted.insert(key, Instant::now());
        if let Some(block) = cached() {
            return Ok(block);
        }
    }
    // One call at a time; another request may have fetched it meanwhile.
    let _one_at_a_time = map.fetching.lock().unwrap_or_else(|e| e.into_inner());
    if asked && let Some(block) = cached() {
        return Ok(block);
    }
    let who = if asked {
        Spender::Page
    } else {
        Spender::Refresher
    };
    map.may_fetch(who).map_err(MapError::Busy)?;
    let started = Instant::now();
    let fetched = fetch(shared, key);
    map.spend_as(who, started.elapsed().as_secs_f64());
    let block = Arc::new(Block {
        tops: fetched?,
        fetched: Instant::now(),
    });
    map.store(key, block.clone());
    Ok(block)
}

/// One `column_tops` call for the block at `key`.
fn fetch(shared: &Shared, key: (i32, i32)) -> Result<Tops, MapError> {
    let started = Instant::now();
    let tops = shared
        .host
        .call(&ColumnTops {
            x: key.0 * TILE,
            z: key.1 * TILE,
            width: TILE as u32,
            depth: TILE as u32,
            step: 1,
            y_top: shared.settings.map_top,
            y_bottom: shared.settings.map_bottom,
        })
        .map_err(|e| MapError::World(e.to_string()))?;
    let mut counters = shared.counters();
    counters.tops_calls += 1;
    counters.tops_seconds += started.elapsed().as_secs_f64();
    Ok(tops)
}

/// A bucket's seconds left at `now` after topping it up by `share` of the
/// time since (to at most `burst`) and taking `spent`.
fn take_from(
    bucket: &Mutex<Option<(f64, Instant)>>,
    share: f64,
    burst: f64,
    spent: f64,
    now: Instant,
) -> f64 {
    let mut bucket = bucket.lock().unwrap_or_else(|e| e.into_inner());
    let (left, at) = bucket.unwrap_or((burst, now));
    let topped =
        (left + now.saturating_duration_since(at).as_secs_f64() * share).min(burst) - spent;
    *bucket = Some((topped, now));
    topped
}

/// Fetches again the blocks that changed or have columns not generated,
/// that a page asked for lately, while the refresher's part of the budget
/// lasts; a block that differs goes in the feed.
pub fn refresh(shared: &Shared) {
    if shared.map.may_fetch(Spender::Refresher).is_err() {
        return;
    }
    for key in shared.map.due() {
        if block_for(shared, key, false).is_err() {
            return;
        }
    }
}

/// Colours by voxel type id, fetched again when `type_id` is not in it.
fn palette(shared: &Shared, type_id: u32) -> Result<Arc<Vec<[u8; 3]>>, MapError> {
    let mut palette = shared.map.palette.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(known) = palette.as_ref()
        && (type_id as usize) < known.len()
    {
        return Ok(known.clone());
    }
    let registry = shared
        .host
        .call(&GetRegistry {})
        .map_err(|e| MapError::World(e.to_string()))?;
    let colours = Arc::new(colours_of(&registry));
    *palette = Some(colours.clone());
    Ok(colours)
}

/// Each voxel type's map colour.
pub fn colours_of(registry: &VoxelRegistry) -> Vec<[u8; 3]> {
    registry
        .definitions()
        .iter()
        .map(|definition| block_colour(&definition.name.block_name))
        .collect()
}

/// A tile as a PNG, drawn again only if a block under it changed.
pub fn tile_png(shared: &Shared, tile: TileId) -> Result<TilePng, MapError> {
    let blocks = tile_blocks(shared, tile)?;
    let cached_png = {
        let drawn = shared.map.drawn.lock().unwrap_or_else(|e| e.into_inner());
        drawn
            .get(&tile)
            .filter(|d| {
                d.blocks.len() == blocks.len()
                    && d.blocks.iter().zip(&blocks).all(|(a, b)| Arc::ptr_eq(a, b))
            })
            .map(|d| TilePng {
                png: d.png.clone(),
                etag: d.etag.clone(),
                drawn_now: false,
            })
    };
    if let Some(cached) = cached_png {
        return Ok(cached);
    }
    let png = hyper::body::Bytes::from(render_tile(shared, &blocks, tile.level)?);
    let etag: Arc<str> = format!(
        "\"{}-{}\"",
        shared.map.tag_prefix,
        shared
            .map
            .tags
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    )
    .into();
    let mut drawn = shared.map.drawn.lock().unwrap_or_else(|e| e.into_inner());
    if drawn.len() >= MAX_DRAWN {
        drawn.clear();
    }
    drawn.insert(
        tile,
        DrawnTile {
            blocks,
            png: png.clone(),
            etag: etag.clone(),
        },
    );
    Ok(TilePng {
        png,
        etag,
        drawn_now: true,
    })
}

/// The blocks under a tile, row by row.
fn tile_blocks(shared: &Shared, tile: TileId) -> Result<Vec<Arc<Block>>, MapError> {
    let blocks_per_side = 1i32 << tile.level;
    let mut blocks = Vec::with_capacity((blocks_per_side * blocks_per_side) as usize);
    for j in 0..blocks_per_side {
        for i in 0..blocks_per_side {
            let key = (tile.x * blocks_per_side + i, tile.z * blocks_per_side + j);
            blocks.push(block(shared, key)?);
        }
    }
    Ok(blocks)
}

/// Draws a tile of `level` from its blocks as a PNG.
fn render_tile(shared: &Shared, blocks: &[Arc<Block>], level: u32) -> Result<Vec<u8>, MapError> {
    let highest = blocks
        .iter()
        .filter_map(|b| b.tops.voxels.iter().max())
        .map(|top| VoxelInstance(*top).type_id())
        .max()
        .unwrap_or(0);
    let colours = palette(shared, highest)?;
    let columns = sample(blocks, level);
    encode_png(&shade(&columns, &colours))
}

/// One column of a tile: its top voxel and height (`i32::MIN`: none).
pub type Column = (u32, i32);

/// The tile's 128 × 128 columns (every 2^level-th one) from its blocks
/// (2^level × 2^level of them, row by row).
pub fn sample(blocks: &[Arc<Block>], level: u32) -> Vec<Column> {
    let step = 1usize << level;
    let per_side = 1usize << level;
    let tile = TILE as usize;
    let mut columns = Vec::with_capacity(tile * tile);
    for j in 0..tile {
        for i in 0..tile {
            let (x, z) = (i * step, j * step);
            let column = blocks
                .get((z / tile) * per_side + x / tile)
                .and_then(|block| {
                    let index = (z % tile) * tile + x % tile;
                    Some((
                        *block.tops.voxels.get(index)?,
                        *block.tops.heights.get(index)?,
                    ))
                })
                .unwrap_or((AIR, i32::MIN));
            columns.push(column);
        }
    }
    columns
}

/// RGBA pixels of 128 × 128 columns: the top block's colour, lit from the
/// north-west by the slope and a little brighter the higher it is;
/// transparent where nothing is known.
pub fn shade(columns: &[Column], colours: &[[u8; 3]]) -> Vec<u8> {
    let side = TILE as usize;
    let height = |i: usize, j: usize| -> Option<i32> {
        if i >= side || j >= side {
            return None;
        }
        columns
            .get(j * side + i)
            .map(|c| c.1)
            .filter(|h| *h != i32::MIN)
    };
    let mut pixels = Vec::with_capacity(side * side * 4);
    for j in 0..side {
        for i in 0..side {
            let (voxel, h) = columns
                .get(j * side + i)
                .copied()
                .unwrap_or((AIR, i32::MIN));
            if h == i32::MIN {
                pixels.extend_from_slice(&[0, 0, 0, 0]);
                continue;
            }
            let colour = colours
                .get(VoxelInstance(voxel).type_id() as usize)
                .copied()
                .unwrap_or([200, 40, 200]);
            // The slope towards the light (north-west), one-sided at the
            // tile's edges.
            let west = height(i.wrapping_sub(1), j).or_else(|| height(i + 1, j).map(|e| 2 * h - e));
            let north =
                height(i, j.wrapping_sub(1)).or_else(|| height(i, j + 1).map(|s| 2 * h - s));
            let slope = (h - west.unwrap_or(h)) + (h - north.unwrap_or(h));
            let light = 1.0
                + (slope as f32 * 0.12).clamp(-0.45, 0.35)
                + ((h as f32 - 64.0) / 400.0).clamp(-0.15, 0.15);
            for channel in colour {
                pixels.push((f32::from(channel) * light).round().clamp(0.0, 255.0) as u8);
            }
            pixels.push(255);
        }
    }
    pixels
}

/// A 128 × 128 RGBA picture as a PNG.
pub fn encode_png(pixels: &[u8]) -> Result<Vec<u8>, MapError> {
    let mut out = Vec::new();
    {
        let mut encoder = png::Encoder::new(&mut out, TILE as u32, TILE as u32);
        encoder.set_color(png::ColorType::Rgba);
        encoder.set_depth(png::BitDepth::Eight);
        encoder.set_compression(png::Compression::Fast);
        let mut writer = encoder
            .write_header()
            .map_err(|e| MapError::Png(e.to_string()))?;
        writer
            .write_image_data(pixels)
            .map_err(|e| MapError::Png(e.to_string()))?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tile_paths_parse_and_bad_ones_do_not() {
        assert_eq!(
            parse_tile_path("/tile/0/-1/2.png"),
            Some(TileId {
                level: 0,
                x: -1,
                z: 2
            })
        );
        assert_eq!(parse_tile_path("/tile/9/0/0.png"), None);
        assert_eq!(parse_tile_path("/tile/0/0.png"), None);
        assert_eq!(parse_tile_path("/tile/0/0/0/0.png"), None);
        assert_eq!(parse_tile_path("/tile/0/99999999/0.png"), None);
        assert_eq!(parse_tile_path("/tile/a/0/0.png"), None);
    }

    fn flat_block(voxel: u32, height: i32) -> Arc<Block> {
        let count = (TILE * TILE) as usize;
        Arc::new(Block {
            tops: Tops {
                voxels: vec![voxel; count],
                heights: vec![height; count],
                missing: 0,
            },
            fetched: Instant::now(),
        })
    }

    #[test]
    fn a_flat_tile_is_its_colour_and_nothing_is_transparent() {
        let columns = sample(&[flat_block(2, 64)], 0);
        let pixels = shade(&columns, &[[0, 0, 0], [0, 0, 0], [100, 150, 50]]);
        assert_eq!(pixels.len(), (TILE * TILE * 4) as usize);
        assert_eq!(&pixels[..4], &[100, 150, 50, 255]);
        let empty = sample(&[flat_block(AIR, i32::MIN)], 0);
        assert_eq!(&shade(&empty, &[])[..4], &[0, 0, 0, 0]);
        let png = encode_png(&pixels).expect("png");
        assert_eq!(&png[1..4], b"PNG");
    }

    #[test]
    fn a_slope_facing_the_light_is_brighter() {
        let mut columns = vec![(2u32, 64i32); (TILE * TILE) as usize];
        // A step up at x = 10: its west edge faces the light.
        for j in 0..TILE as usize {
            for i in 10..TILE as usize {
                columns[j * TILE as usize + i].1 = 66;
            }
        }
        let pixels = shade(&columns, &[[0, 0, 0], [0, 0, 0], [100, 100, 100]]);
        let at = |i: usize, j: usize| pixels[(j * TILE as usize + i) * 4];
        assert!(at(10, 5) > at(5, 5), "{} {}", at(10, 5), at(5, 5));
    }

    #[test]
    fn zoomed_out_tiles_sample_every_block() {
        let blocks = vec![
            flat_block(1, 10),
            flat_block(2, 20),
            flat_block(3, 30),
            flat_block(4, 40),
        ];
        let columns = sample(&blocks, 1);
        let side = TILE as usize;
        assert_eq!(columns[0], (1, 10));
        assert_eq!(columns[side - 1], (2, 20));
        assert_eq!(columns[(side - 1) * side], (3, 30));
        assert_eq!(columns[side * side - 1], (4, 40));
    }

    #[test]
    fn changed_blocks_are_due_and_the_feed_tells_them_once_fetched_again() {
        let map = MapState::default();
        map.store((0, 0), flat_block(1, 1));
        map.store((5, 5), flat_block(1, 1));
        map.inner().wanted.insert((0, 0), Instant::now());
        map.chunk_changed([1, 0, 2]);
        map.chunk_changed([5 * 4, 0, 5 * 4]);
        // Not cached: nothing to do.
        map.chunk_changed([100, 0, 100]);
        assert_eq!(map.changes_since(0).seq, 0, "nothing told before a fetch");
        // Due: the changed block a page asked for; the other is dropped.
        assert_eq!(map.due(), vec![(0, 0)]);
        assert_eq!(map.cached_blocks(), 1);
        // Fetched again, the same: nothing to tell, nothing due.
        map.store((0, 0), flat_block(1, 1));
        assert_eq!(map.changes_since(0).seq, 0);
        assert!(map.due().is_empty());
        // Changed and fetched again, different: told once.
        map.chunk_changed([1, 0, 2]);
        map.store((0, 0), flat_block(2, 1));
        let changes = map.changes_since(0);
        assert_eq!((changes.seq, changes.blocks), (1, vec![[0, 0]]));
        assert!(!changes.reset);
        assert!(map.changes_since(1).blocks.is_empty());
    }

    #[test]
    fn pages_and_the_refresher_spend_one_budget() {
        let map = MapState::default();
        let start = Instant::now();
        assert_eq!(map.may_fetch_at(Spender::Page, start), Ok(()));
        assert_eq!(map.may_fetch_at(Spender::Refresher, start), Ok(()));
        // Pages spend past the refresher's floor: the refresher waits, a
        // page may go on.
        map.spend_at(MAP_BURST_S - REFRESH_FLOOR_S + 0.01, start);
        let wait = map
            .may_fetch_at(Spender::Refresher, start)
            .expect_err("below the refresher's floor");
        assert!(
            wait >= Duration::from_secs_f64(0.01 / MAP_SHARE),
            "{wait:?}"
        );
        assert_eq!(map.may_fetch_at(Spender::Page, start), Ok(()));
        // Pages spend the rest: a page waits too, for the time the share
        // takes to give back what is missing.
        map.spend_at(REFRESH_FLOOR_S + 0.5, start);
        let wait = map
            .may_fetch_at(Spender::Page, start)
            .expect_err("nothing left");
        let expected = 0.51 / MAP_SHARE;
        assert!(
            (wait.as_secs_f64() - expected).abs() < 0.2,
            "{wait:?}, not about {expected} s"
        );
        assert!(map.may_fetch_at(Spender::Page, start + wait).is_ok());
    }

    #[test]
    fn the_refresher_alone_spends_its_part_of_the_share() {
        // The refresher fetching without pause (a world edited all over
        // the view), each call 5 ms: over 100 s it spends its part, and a
        // page may still fetch at once.
        let map = MapState::default();
        let start = Instant::now();
        let mut spent = 0.0;
        for step in 0..100_000u64 {
            let now = start + Duration::from_millis(step);
            if map.may_fetch_at(Spender::Refresher, now).is_ok() {
                map.spend_as_at(Spender::Refresher, 0.005, now);
                spent += 0.005;
            }
        }
        let allowed = REFRESH_BURST_S + 100.0 * MAP_SHARE * REFRESH_PART;
        assert!(spent <= allowed + 0.01, "{spent} s of calls in 100 s");
        assert!(spent >= allowed - 0.1, "{spent} s: its part is used");
        let end = start + Duration::from_secs(100);
        assert_eq!(map.may_fetch_at(Spender::Page, end), Ok(()));
        assert!(map.may_fetch_at(Spender::Refresher, end).is_err());
    }

    #[test]
    fn over_a_long_run_the_map_costs_its_share() {
        // Pages asking without pause, each call 5 ms: over 100 s the calls
        // made take the burst and 5 % of the time, not more.
        let map = MapState::default();
        let start = Instant::now();
        let mut spent = 0.0;
        for step in 0..100_000u64 {
            let now = start + Duration::from_millis(step);
            if map.may_fetch_at(Spender::Page, now).is_ok() {
                map.spend_at(0.005, now);
                spent += 0.005;
            }
        }
        let allowed = MAP_BURST_S + 100.0 * MAP_SHARE;
        assert!(spent <= allowed + 0.01, "{spent} s of calls in 100 s");
        assert!(spent >= allowed - 0.1, "{spent} s: the budget is used");
    }
}
