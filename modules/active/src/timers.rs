//! Voxel timers: in memory only for the sections in memory, stored in the
//! world's values (space [`SPACE`], one key per chunk,
//! `"SX,SY,SZ/CX,CY,CZ"`, so a section's timers are listed by the prefix
//! `"SX,SY,SZ/"`), written through on every change.
//!
//! Owns: the timers of loaded sections by chunk, the index of deadlines,
//! the stored layout ([`encode_chunk`], [`decode_chunk`]), and the bounds
//! ([`MAX_TIMERS_PER_CHUNK`], [`MAX_TAG`]). Does not own: when sections
//! load (voxelworld's events), reading voxels or values (`lib.rs` calls
//! voxelworld).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use buildat_voxel::geometry::{Pos, SectionSize, chunk_of_voxel};
use serde::{Deserialize, Serialize};

/// The values' space.
pub const SPACE: &str = "active.timers";
/// Most timers in one chunk (all modules): a chunk's value stays well
/// under voxelworld's largest value.
pub const MAX_TIMERS_PER_CHUNK: usize = 4096;
/// Longest tag and module name, in bytes.
pub const MAX_TAG: usize = 64;
/// The stored layout's version, the value's first byte.
const LAYOUT: u8 = 1;

/// A timer in memory (its position and module are its key).
#[derive(Debug, Clone, PartialEq)]
pub struct Timer {
    /// Wall clock, unix milliseconds.
    pub deadline_ms: i64,
    pub tag: String,
    /// The voxel type it is bound to.
    pub voxel_type: u32,
}

/// A timer as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Stored {
    module: String,
    pos: Pos,
    deadline_ms: i64,
    tag: String,
    voxel_type: u32,
}

/// One chunk's timers: by position, then module.
pub type ChunkTimers = BTreeMap<(Pos, String), Timer>;

/// A chunk's timers as a value.
pub fn encode_chunk(timers: &ChunkTimers) -> Result<Vec<u8>, buildat_interface::PayloadError> {
    let stored: Vec<Stored> = timers
        .iter()
        .map(|((pos, module), t)| Stored {
            module: module.clone(),
            pos: *pos,
            deadline_ms: t.deadline_ms,
            tag: t.tag.clone(),
            voxel_type: t.voxel_type,
        })
        .collect();
    let mut bytes = vec![LAYOUT];
    bytes.extend(buildat_interface::encode(&stored)?);
    Ok(bytes)
}

/// A chunk's value back as timers (`None`: not this layout or damaged).
pub fn decode_chunk(bytes: &[u8]) -> Option<ChunkTimers> {
    let (&layout, rest) = bytes.split_first()?;
    if layout != LAYOUT {
        return None;
    }
    let stored: Vec<Stored> = buildat_interface::decode(rest).ok()?;
    Some(
        stored
            .into_iter()
            .map(|s| {
                (
                    (s.pos, s.module),
                    Timer {
                        deadline_ms: s.deadline_ms,
                        tag: s.tag,
                        voxel_type: s.voxel_type,
                    },
                )
            })
            .collect(),
    )
}

/// The key prefix of a section's chunks.
pub fn section_prefix(section: Pos) -> String {
    format!("{},{},{}/", section[0], section[1], section[2])
}

/// The key of a chunk's timers.
pub fn chunk_key(size: SectionSize, chunk: Pos) -> String {
    format!(
        "{}{},{},{}",
        section_prefix(size.section_of_chunk(chunk)),
        chunk[0],
        chunk[1],
        chunk[2]
    )
}

/// A due timer, as the index holds it.
type Due = (i64, Pos, String);

/// The timers of the sections in memory.
#[derive(Debug)]
pub struct Timers {
    size: SectionSize,
    /// Sections whose timers are in memory.
    sections: HashSet<Pos>,
    chunks: HashMap<Pos, ChunkTimers>,
    /// Every timer in memory by deadline.
    due: BTreeSet<Due>,
    /// Chunks changed since the last [`Timers::take_dirty`].
    dirty: BTreeSet<Pos>,
}

/// Why a timer was not set.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum TimerError {
    #[error("chunk {0:?} already holds {MAX_TIMERS_PER_CHUNK} timers")]
    ChunkFull(Pos),
    #[error("the timer's tag or module is longer than {MAX_TAG} bytes")]
    TooLong,
    #[error("a timer's seconds must be a number from 0 to 1e9, not {0}")]
    BadSeconds(f64),
}

impl Timers {
    pub fn new(size: SectionSize) -> Self {
        Self {
            size,
            sections: HashSet::new(),
            chunks: HashMap::new(),
            due: BTreeSet::new(),
            dirty: BTreeSet::new(),
        }
    }

    pub fn section_size(&self) -> SectionSize {
        self.size
    }

    /// Timers in memory.
    pub fn len(&self) -> usize {
        self.due.len()
    }

    pub fn is_empty(&self) -> bool {
        self.due.is_empty()
    }

    pub fn is_loaded(&self, section: Pos) -> bool {
        self.sections.contains(&section)
    }

    /// The sections whose timers are in memory.
    pub fn sections(&self) -> impl Iterator<Item = &Pos> {
        self.sections.iter()
    }

    /// The section of a voxel.
    pub fn section_of(&self, pos: Pos) -> Pos {
        self.size.section_of_chunk(chunk_of_voxel(pos))
    }

    /// A section's stored chunks, now in memory.
    pub fn load_section(&mut self, section: Pos, chunks: Vec<(Pos, ChunkTimers)>) {
        if !self.sections.insert(section) {
            return;
        }
        for (chunk, timers) in chunks {
            if self.size.section_of_chunk(chunk) != section {
                continue;
            }
            for ((pos, module), timer) in &timers {
                self.due.insert((timer.deadline_ms, *pos, module.clone()));
            }
            self.chunks.insert(chunk, timers);
        }
    }

    /// Drops a section's timers from memory (they are stored); answers
    /// how many.
    pub fn unload_section(&mut self, section: Pos) -> usize {
        if !self.sections.remove(&section) {
            return 0;
        }
        let mut dropped = 0;
        for chunk in self.size.chunks_of_section(section) {
            self.dirty.remove(&chunk);
            if let Some(timers) = self.chunks.remove(&chunk) {
                for ((pos, module), timer) in timers {
                    self.due.remove(&(timer.deadline_ms, pos, module));
                    dropped += 1;
                }
            }
        }
        dropped
    }

    /// Sets (or replaces) `module`'s timer at `pos`, whose section must be
    /// loaded.
    pub fn set(
        &mut self,
        module: &str,
        pos: Pos,
        timer: Timer,
    ) -> Result<Option<Timer>, TimerError> {
        if timer.tag.len() > MAX_TAG || module.len() > MAX_TAG {
            return Err(TimerError::TooLong);
        }
        let chunk = chunk_of_voxel(pos);
        let timers = self.chunks.entry(chunk).or_default();
        let key = (pos, module.to_string());
        if !timers.contains_key(&key) && timers.len() >= MAX_TIMERS_PER_CHUNK {
            return Err(TimerError::ChunkFull(chunk));
        }
        self.due
            .insert((timer.deadline_ms, pos, module.to_string()));
        let old = timers.insert(key, timer);
        if let Some(old) = &old {
            self.due.remove(&(old.deadline_ms, pos, module.to_string()));
        }
        self.dirty.insert(chunk);
        Ok(old)
    }

    pub fn get(&self, module: &str, pos: Pos) -> Option<&Timer> {
        self.chunks
            .get(&chunk_of_voxel(pos))?
            .get(&(pos, module.to_string()))
    }

    /// Removes `module`'s timer at `pos`.
    pub fn remove(&mut self, module: &str, pos: Pos) -> Option<Timer> {
        let chunk = chunk_of_voxel(pos);
        let timers = self.chunks.get_mut(&chunk)?;
        let timer = timers.remove(&(pos, module.to_string()))?;
        self.due
            .remove(&(timer.deadline_ms, pos, module.to_string()));
        self.dirty.insert(chunk);
        Some(timer)
    }

    /// Drops the timers at `pos` bound to another type than `now`'s (the
    /// voxel there was replaced); answers how many.
    pub fn voxel_changed(&mut self, pos: Pos, now_type: u32) -> usize {
        let Some(timers) = self.chunks.get(&chunk_of_voxel(pos)) else {
            return 0;
        };
        let gone: Vec<String> = timers
            .range((pos, String::new())..)
            .take_while(|((p, _), _)| *p == pos)
            .filter(|(_, t)| t.voxel_type != now_type)
            .map(|((_, module), _)| module.clone())
            .collect();
        for module in &gone {
            self.remove(module, pos);
        }
        gone.len()
    }

    /// Up to `most` timers due at `now_ms`, earliest first, left in place.
    pub fn due(&self, now_ms: i64, most: usize) -> Vec<(Pos, String)> {
        self.due
            .iter()
            .take_while(|(deadline, _, _)| *deadline <= now_ms)
            .take(most)
            .map(|(_, pos, module)| (*pos, module.clone()))
            .collect()
    }

    /// Marks chunks to be written again (a write failed).
    pub fn mark_dirty(&mut self, chunks: impl IntoIterator<Item = Pos>) {
        self.dirty.extend(chunks);
    }

    /// The chunks changed since the last call, with their timers (empty:
    /// the key is removed), for writing.
    pub fn take_dirty(&mut self) -> Vec<(Pos, ChunkTimers)> {
        let dirty = std::mem::take(&mut self.dirty);
        dirty
            .into_iter()
            .map(|chunk| {
                let timers = self.chunks.get(&chunk).cloned().unwrap_or_default();
                if timers.is_empty() {
                    self.chunks.remove(&chunk);
                }
                (chunk, timers)
            })
            .collect()
    }
}

/// A timer's deadline `seconds` after `now_ms`.
pub fn deadline(now_ms: i64, seconds: f64) -> Result<i64, TimerError> {
    if !seconds.is_finite() || !(0.0..=1e9).contains(&seconds) {
        return Err(TimerError::BadSeconds(seconds));
    }
    Ok(now_ms.saturating_add((seconds * 1000.0).round() as i64))
}

/// The wall clock in unix milliseconds.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timer(deadline_ms: i64, voxel_type: u32) -> Timer {
        Timer {
            deadline_ms,
            tag: "grow".into(),
            voxel_type,
        }
    }

    /// Timers are set, replaced, found due in deadline order, dropped when
    /// their voxel's type changes, and written by chunk; a section's
    /// unload drops its timers from memory, its load brings back what was
    /// stored; a chunk holds at most its bound.
    #[test]
    fn timers_live_by_section_and_chunk() {
        let mut timers = Timers::new(SectionSize::default());
        timers.load_section([0, 0, 0], Vec::new());
        timers.set("a", [1, 1, 1], timer(300, 5)).unwrap();
        timers.set("b", [1, 1, 1], timer(100, 5)).unwrap();
        timers.set("a", [40, 1, 1], timer(200, 6)).unwrap();
        assert!(
            timers
                .set("a", [40, 1, 1], timer(250, 6))
                .unwrap()
                .is_some()
        );
        assert_eq!(timers.len(), 3);
        assert_eq!(
            timers.due(260, 10),
            vec![([1, 1, 1], "b".to_string()), ([40, 1, 1], "a".to_string())]
        );
        assert_eq!(timers.voxel_changed([1, 1, 1], 5), 0, "same type");
        assert_eq!(timers.voxel_changed([1, 1, 1], 7), 2);
        let dirty = timers.take_dirty();
        assert_eq!(dirty.len(), 2, "two chunks");
        assert!(dirty[0].1.is_empty(), "chunk 0 emptied: its key removed");
        let stored: Vec<(Pos, ChunkTimers)> = dirty
            .into_iter()
            .map(|(c, t)| (c, decode_chunk(&encode_chunk(&t).unwrap()).unwrap()))
            .collect();
        assert_eq!(timers.unload_section([0, 0, 0]), 1);
        assert!(timers.is_empty());
        assert!(timers.due(i64::MAX, 10).is_empty());
        timers.load_section([0, 0, 0], stored);
        assert_eq!(timers.get("a", [40, 1, 1]), Some(&timer(250, 6)));
        assert_eq!(
            chunk_key(SectionSize::default(), [3, -1, 0]),
            "1,-1,0/3,-1,0"
        );

        for i in 0..MAX_TIMERS_PER_CHUNK as i32 {
            timers
                .set("a", [i % 32, (i / 32) % 32, 64 + i / 1024], timer(1, 1))
                .unwrap();
        }
        assert_eq!(
            timers.set("a", [31, 31, 95], timer(1, 1)),
            Err(TimerError::ChunkFull([0, 0, 2]))
        );
        assert!(deadline(0, -1.0).is_err());
        assert!(deadline(0, f64::NAN).is_err());
        assert_eq!(deadline(1000, 1.5), Ok(2500));
        assert_eq!(decode_chunk(&[9, 1, 2]), None);
    }
}
