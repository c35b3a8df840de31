//! The interned string table: every distinct string written once, referenced
//! everywhere else by its zero-based index.
//!
//! Owns: the table's layout (`varint count`, then `count` × `varint len` +
//! UTF-8 bytes), the writer-side [`StringTableBuilder`] (interning) and the
//! reader-side [`StringTable`], which serves `&str` views into the input buffer
//! without copying.
//!
//! Does not own: how indices are referenced (that is each format's business:
//! the record stream packs them into entry heads, the voxel blob into its
//! palette).

use std::collections::HashMap;

use crate::reader::{ReadError, Reader};
use crate::writer::Writer;

/// Interns strings for writing.
#[derive(Debug, Clone, Default)]
pub struct StringTableBuilder {
    index: HashMap<String, u32>,
    strings: Vec<String>,
}

/// More than `u32::MAX` distinct strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("string table is full (u32::MAX entries)")]
pub struct StringTableFull;

impl StringTableBuilder {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// The index of `s`, adding it on first use.
    pub fn intern(&mut self, s: &str) -> Result<u32, StringTableFull> {
        if let Some(&i) = self.index.get(s) {
            return Ok(i);
        }
        let i = u32::try_from(self.strings.len()).map_err(|_| StringTableFull)?;
        self.index.insert(s.to_owned(), i);
        self.strings.push(s.to_owned());
        Ok(i)
    }

    /// Number of distinct strings.
    pub fn len(&self) -> usize {
        self.strings.len()
    }

    /// True when nothing was interned.
    pub fn is_empty(&self) -> bool {
        self.strings.is_empty()
    }

    /// The string at `index`.
    pub fn get(&self, index: u32) -> Option<&str> {
        self.strings.get(index as usize).map(String::as_str)
    }

    /// Appends the table's encoding.
    pub fn write_to(&self, w: &mut Writer) {
        w.varint(self.strings.len() as u64);
        for s in &self.strings {
            w.str(s);
        }
    }
}

/// A decoded string table borrowing the input buffer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StringTable<'a> {
    strings: Vec<&'a str>,
}

impl<'a> StringTable<'a> {
    /// Reads a table at the reader's cursor. The count is checked against the
    /// bytes remaining (each string takes at least one byte) before any
    /// allocation; duplicates are accepted.
    pub fn read(r: &mut Reader<'a>) -> Result<Self, ReadError> {
        let count = r.varint_len(r.remaining())?;
        let mut strings = Vec::with_capacity(count);
        for _ in 0..count {
            strings.push(r.str()?);
        }
        Ok(Self { strings })
    }

    /// The string at `index`, as a view into the input buffer.
    #[inline]
    pub fn get(&self, index: u64) -> Option<&'a str> {
        usize::try_from(index)
            .ok()
            .and_then(|i| self.strings.get(i))
            .copied()
    }

    /// Number of strings.
    pub fn len(&self) -> usize {
        self.strings.len()
    }

    /// True when the table is empty.
    pub fn is_empty(&self) -> bool {
        self.strings.is_empty()
    }

    /// All strings in index order.
    pub fn iter(&self) -> impl Iterator<Item = &'a str> + '_ {
        self.strings.iter().copied()
    }
}
