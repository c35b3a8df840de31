//! The section record: one world section's nodes (static chunk nodes and
//! dynamic nodes, each with its 64-bit persistent id, position and named user
//! variables) as placed records of a record stream, so a loader serves the
//! nodes the game needs first, then the rest nearest a point first, without
//! decoding the records it skips.
//!
//! Owns: the section layout (magic [`SECTION_MAGIC`], section position, chunk
//! size, then a record-stream body), the node classes, the node body layout,
//! [`SectionWriter`] and [`SectionReader`] (marker-only index, load order,
//! on-demand node decoding by offset).
//!
//! Does not own: what the user variables contain (the voxel data blob of
//! [`crate::voxel_blob`] is usually one of them), the section size policy,
//! storage, or I/O.

use std::collections::BTreeMap;

use thiserror::Error;

use crate::magic::{MagicError, check_magic};
use crate::reader::{ReadError, Reader};
use crate::records::{Entry, Pass, Placement, RecordError, RecordReader, RecordWriter};
use crate::writer::Writer;

/// Magic and version of a section record: `"BSN"` then version 1.
pub const SECTION_MAGIC: [u8; 4] = *b"BSN\x01";

/// Record class: a static chunk node the game needs first.
pub const CLASS_STATIC_FIRST: u32 = 0;
/// Record class: a dynamic node the game needs first.
pub const CLASS_DYNAMIC_FIRST: u32 = 1;
/// Record class: a static chunk node served nearest-first.
pub const CLASS_STATIC: u32 = 2;
/// Record class: a dynamic node served nearest-first.
pub const CLASS_DYNAMIC: u32 = 3;

/// The pass serving what the game needs first.
pub const PASS_NEEDED_FIRST: Pass = Pass::only(CLASS_STATIC_FIRST).with(CLASS_DYNAMIC_FIRST);
/// The pass serving everything else.
pub const PASS_REST: Pass = Pass::only(CLASS_STATIC).with(CLASS_DYNAMIC);
/// Every node.
pub const PASS_ALL_NODES: Pass = Pass::from_mask(0b1111);

/// Largest chunk edge accepted (a sanity bound for readers).
pub const MAX_CHUNK_EDGE: u32 = 1 << 16;

/// Where a node is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum NodeKind {
    /// A static chunk node at world chunk coordinates `chunk`.
    StaticChunk { chunk: [i32; 3] },
    /// A dynamic node at a world position in voxel units.
    Dynamic { position: [f64; 3] },
}

/// One node of a section.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// The persistent id (never reused in the world's lifetime).
    pub id: u64,
    /// Static chunk or dynamic, with its position.
    pub kind: NodeKind,
    /// Named user variables (e.g. `buildat_voxel_data`), sorted by name.
    pub vars: BTreeMap<String, Vec<u8>>,
}

/// How a node is filed in the section record.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct NodeOptions {
    /// Served by [`PASS_NEEDED_FIRST`] rather than [`PASS_REST`].
    pub needed_first: bool,
    /// Visibility range in voxel units; `None` is unlimited.
    pub visibility_range: Option<f32>,
}

/// A node's marker, read without decoding its body.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NodeRef {
    /// Offset of the marker (for [`SectionReader::read_node`]).
    pub offset: usize,
    /// True for static chunk nodes.
    pub is_static: bool,
    /// True if filed as needed first.
    pub needed_first: bool,
    /// Position (voxel units; a static chunk's centre) and visibility range.
    pub placement: Placement,
}

/// Errors reading or writing a section record.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum SectionError {
    #[error(transparent)]
    Magic(#[from] MagicError),
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error(transparent)]
    Record(#[from] RecordError),
    /// A chunk edge of 0 or over [`MAX_CHUNK_EDGE`].
    #[error("chunk size {0:?} is invalid (each edge 1..={MAX_CHUNK_EDGE})")]
    BadChunkSize([u64; 3]),
    /// A top-level entry that is not a node record.
    #[error("unexpected top-level entry at offset {offset}")]
    UnexpectedEntry { offset: usize },
    /// A record with a class that is not a node class.
    #[error("record at offset {offset} has class {class}, not a node class")]
    UnknownClass { class: u32, offset: usize },
    /// A node record without a placement.
    #[error("node record at offset {offset} has no placement")]
    MissingPlacement { offset: usize },
    /// A node body that does not match the layout.
    #[error("node record at offset {offset}: expected {expected}")]
    BadNodeBody {
        offset: usize,
        expected: &'static str,
    },
    /// Variables not in strictly increasing name order (or duplicated).
    #[error("node record at offset {offset}: variable {name:?} out of order or duplicated")]
    VarsNotSorted { offset: usize, name: String },
    /// A chunk coordinate outside `i32`.
    #[error("node record at offset {offset}: chunk coordinate {value} out of i32 range")]
    ChunkOutOfRange { offset: usize, value: i64 },
}

/// Builds a section record.
#[derive(Debug, Clone)]
pub struct SectionWriter {
    section: [i32; 3],
    chunk_size: [u32; 3],
    records: RecordWriter,
}

impl SectionWriter {
    /// A section at section coordinates `section` whose chunks are
    /// `chunk_size` voxels (each edge `1..=MAX_CHUNK_EDGE`).
    pub fn new(section: [i32; 3], chunk_size: [u32; 3]) -> Result<Self, SectionError> {
        if chunk_size.iter().any(|&e| e == 0 || e > MAX_CHUNK_EDGE) {
            return Err(SectionError::BadChunkSize(chunk_size.map(u64::from)));
        }
        Ok(Self {
            section,
            chunk_size,
            records: RecordWriter::new(),
        })
    }

    /// Appends a node.
    pub fn add_node(&mut self, node: &Node, opts: NodeOptions) -> Result<(), SectionError> {
        let range = opts.visibility_range.unwrap_or(-1.0);
        let (class, position) = match node.kind {
            NodeKind::StaticChunk { chunk } => {
                let c = if opts.needed_first {
                    CLASS_STATIC_FIRST
                } else {
                    CLASS_STATIC
                };
                (c, chunk_centre(chunk, self.chunk_size))
            }
            NodeKind::Dynamic { position } => {
                let c = if opts.needed_first {
                    CLASS_DYNAMIC_FIRST
                } else {
                    CLASS_DYNAMIC
                };
                (c, position.map(|v| v as f32))
            }
        };
        let w = &mut self.records;
        w.begin_record(class, Some(Placement { position, range }))?;
        w.uint(node.id);
        match node.kind {
            NodeKind::StaticChunk { chunk } => {
                for c in chunk {
                    w.int(i64::from(c));
                }
            }
            NodeKind::Dynamic { position } => {
                for p in position {
                    w.f64(p);
                }
            }
        }
        w.uint(node.vars.len() as u64);
        for (name, value) in &node.vars {
            w.str(name)?;
            w.bytes(value);
        }
        w.end_record()?;
        Ok(())
    }

    /// The encoded section record.
    pub fn finish(self) -> Result<Vec<u8>, SectionError> {
        let mut w = Writer::with_capacity(self.records.entries_len() + 64);
        w.raw(&SECTION_MAGIC);
        for c in self.section {
            w.zigzag(i64::from(c));
        }
        for e in self.chunk_size {
            w.varint(u64::from(e));
        }
        self.records.finish_into(&mut w)?;
        Ok(w.into_vec())
    }
}

fn chunk_centre(chunk: [i32; 3], size: [u32; 3]) -> [f32; 3] {
    let [cx, cy, cz] = chunk;
    let [sx, sy, sz] = size;
    let centre = |c: i32, s: u32| ((f64::from(c) + 0.5) * f64::from(s)) as f32;
    [centre(cx, sx), centre(cy, sy), centre(cz, sz)]
}

/// Reads a section record.
#[derive(Debug, Clone)]
pub struct SectionReader<'a> {
    section: [i32; 3],
    chunk_size: [u32; 3],
    records: RecordReader<'a>,
}

impl<'a> SectionReader<'a> {
    /// Checks the magic, reads the header and the string table.
    pub fn open(buf: &'a [u8]) -> Result<Self, SectionError> {
        check_magic(buf, SECTION_MAGIC, "section record")?;
        let mut r = Reader::at(buf, SECTION_MAGIC.len())?;
        let section = [r.zigzag_i32()?, r.zigzag_i32()?, r.zigzag_i32()?];
        let raw = [r.varint()?, r.varint()?, r.varint()?];
        if raw.iter().any(|&e| e == 0 || e > u64::from(MAX_CHUNK_EDGE)) {
            return Err(SectionError::BadChunkSize(raw));
        }
        let chunk_size = raw.map(|e| e as u32);
        let records = RecordReader::open_at(buf, r.position())?;
        Ok(Self {
            section,
            chunk_size,
            records,
        })
    }

    /// Section coordinates.
    pub fn section(&self) -> [i32; 3] {
        self.section
    }

    /// Chunk size in voxels.
    pub fn chunk_size(&self) -> [u32; 3] {
        self.chunk_size
    }

    fn node_ref(h: &crate::records::RecordHeader) -> Result<NodeRef, SectionError> {
        let (is_static, needed_first) = match h.class {
            CLASS_STATIC_FIRST => (true, true),
            CLASS_DYNAMIC_FIRST => (false, true),
            CLASS_STATIC => (true, false),
            CLASS_DYNAMIC => (false, false),
            class => {
                return Err(SectionError::UnknownClass {
                    class,
                    offset: h.offset,
                });
            }
        };
        let placement = h
            .placement
            .ok_or(SectionError::MissingPlacement { offset: h.offset })?;
        Ok(NodeRef {
            offset: h.offset,
            is_static,
            needed_first,
            placement,
        })
    }

    /// Every node's marker in file order, decoding no body (each record is
    /// skipped in O(1)).
    pub fn index(&self) -> Result<Vec<NodeRef>, SectionError> {
        let mut rr = self.records.clone();
        rr.rewind();
        rr.set_pass(Pass::ALL);
        let mut out = Vec::new();
        loop {
            let offset = rr.position();
            match rr.next_entry()? {
                None => return Ok(out),
                Some(Entry::Record(h)) => {
                    out.push(Self::node_ref(&h)?);
                    rr.skip_to_record_end();
                }
                Some(_) => return Err(SectionError::UnexpectedEntry { offset }),
            }
        }
    }

    /// The order a loader should serve nodes in: needed-first nodes in file
    /// order, then the rest by increasing distance from `point` (ties in file
    /// order). Bodies are not decoded.
    pub fn load_order(&self, point: [f32; 3]) -> Result<Vec<NodeRef>, SectionError> {
        let all = self.index()?;
        let (mut first, mut rest): (Vec<_>, Vec<_>) = all.into_iter().partition(|n| n.needed_first);
        rest.sort_by(|a, b| {
            a.placement
                .distance_sq(point)
                .total_cmp(&b.placement.distance_sq(point))
        });
        first.append(&mut rest);
        Ok(first)
    }

    /// Decodes the node whose marker is at `offset` (from [`NodeRef::offset`]).
    pub fn read_node(&self, offset: usize) -> Result<Node, SectionError> {
        let mut rr = self.records.clone();
        let h = rr.seek_record(offset)?;
        let nref = Self::node_ref(&h)?;
        decode_body(&mut rr, nref)
    }

    /// Serves the nodes of `pass` in file order, each decoded; records outside
    /// the pass are skipped without decoding.
    pub fn nodes(&self, pass: Pass) -> NodeIter<'a> {
        let mut rr = self.records.clone();
        rr.rewind();
        rr.set_pass(pass);
        NodeIter {
            records: rr,
            done: false,
        }
    }

    /// Every node, decoded, in file order.
    pub fn all_nodes(&self) -> Result<Vec<(NodeRef, Node)>, SectionError> {
        self.nodes(Pass::ALL).collect()
    }
}

/// Iterator returned by [`SectionReader::nodes`]; stops after the first error.
#[derive(Debug, Clone)]
pub struct NodeIter<'a> {
    records: RecordReader<'a>,
    done: bool,
}

impl NodeIter<'_> {
    /// Fraction of the section's records consumed, for loading bars.
    pub fn progress(&self) -> f64 {
        self.records.progress()
    }

    fn step(&mut self) -> Result<Option<(NodeRef, Node)>, SectionError> {
        let offset = self.records.position();
        match self.records.next_entry()? {
            None => Ok(None),
            Some(Entry::Record(h)) => {
                let nref = SectionReader::node_ref(&h)?;
                let node = decode_body(&mut self.records, nref)?;
                Ok(Some((nref, node)))
            }
            Some(_) => Err(SectionError::UnexpectedEntry { offset }),
        }
    }
}

impl Iterator for NodeIter<'_> {
    type Item = Result<(NodeRef, Node), SectionError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.step() {
            Ok(Some(v)) => Some(Ok(v)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

fn decode_body(rr: &mut RecordReader<'_>, nref: NodeRef) -> Result<Node, SectionError> {
    let offset = nref.offset;
    let bad = |expected| SectionError::BadNodeBody { offset, expected };
    let Some(Entry::UInt(id)) = rr.next_in_record()? else {
        return Err(bad("uint id"));
    };
    let kind = if nref.is_static {
        let mut chunk = [0i32; 3];
        for c in &mut chunk {
            let Some(Entry::Int(v)) = rr.next_in_record()? else {
                return Err(bad("int chunk coordinate"));
            };
            *c =
                i32::try_from(v).map_err(|_| SectionError::ChunkOutOfRange { offset, value: v })?;
        }
        NodeKind::StaticChunk { chunk }
    } else {
        let mut position = [0f64; 3];
        for p in &mut position {
            let Some(Entry::F64(v)) = rr.next_in_record()? else {
                return Err(bad("f64 position"));
            };
            *p = v;
        }
        NodeKind::Dynamic { position }
    };
    let Some(Entry::UInt(count)) = rr.next_in_record()? else {
        return Err(bad("uint variable count"));
    };
    let mut vars = BTreeMap::new();
    let mut last: Option<&str> = None;
    for _ in 0..count {
        let Some(Entry::Str(name)) = rr.next_in_record()? else {
            return Err(bad("str variable name"));
        };
        let Some(Entry::Bytes(value)) = rr.next_in_record()? else {
            return Err(bad("bytes variable value"));
        };
        if last.is_some_and(|l| l >= name) {
            return Err(SectionError::VarsNotSorted {
                offset,
                name: name.to_owned(),
            });
        }
        last = Some(name);
        vars.insert(name.to_owned(), value.to_vec());
    }
    if rr.next_in_record()?.is_some() {
        return Err(bad("end of node record"));
    }
    Ok(Node { id, kind, vars })
}
