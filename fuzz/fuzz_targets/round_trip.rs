//! Fuzz target (oracle): arbitrary values of every format encode, decode back
//! to the same values, and framing/type tables deliver every packet intact.
#![no_main]

use std::collections::BTreeMap;

use buildat_format::container::{Container, PayloadPacker};
use buildat_format::packet::{FrameDecoder, Received, ReceiverPacketTypes, SenderPacketTypes};
use buildat_format::records::{Entry, Pass, Placement, RecordReader, RecordWriter};
use buildat_format::section::{Node, NodeKind, NodeOptions, SectionReader, SectionWriter};
use buildat_format::voxel_blob::{decode_voxels, encode_voxels};
use buildat_format::{FileBundle, encode_bundle};
use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;

#[derive(Debug, Arbitrary)]
enum Item {
    Str(String),
    UInt(u64),
    Int(i64),
    F64(u64),
    Bytes(Vec<u8>),
    Record {
        class: u8,
        placed: Option<[u32; 4]>,
        body: Vec<(u8, u64)>,
    },
}

#[derive(Debug, Arbitrary)]
struct NodeIn {
    id: u64,
    chunk: Option<[i32; 3]>,
    pos: [u64; 3],
    vars: BTreeMap<String, Vec<u8>>,
    first: bool,
    range: Option<u16>,
}

#[derive(Debug, Arbitrary)]
struct Input {
    items: Vec<Item>,
    runs: Vec<(u8, u16, u8)>,
    nodes: Vec<NodeIn>,
    section: [i32; 3],
    files: Vec<(String, Vec<u8>)>,
    ceiling: u8,
    packets: Vec<(String, Vec<u8>)>,
    piece: u8,
}

fuzz_target!(|inp: Input| {
    // Record stream.
    let mut w = RecordWriter::new();
    for it in &inp.items {
        match it {
            Item::Str(s) => w.str(s).unwrap(),
            Item::UInt(v) => w.uint(*v),
            Item::Int(v) => w.int(*v),
            Item::F64(v) => w.f64(f64::from_bits(*v)),
            Item::Bytes(b) => w.bytes(b),
            Item::Record {
                class,
                placed,
                body,
            } => {
                let placement = placed.map(|p| Placement {
                    position: [
                        f32::from_bits(p[0]),
                        f32::from_bits(p[1]),
                        f32::from_bits(p[2]),
                    ],
                    range: f32::from_bits(p[3]),
                });
                w.begin_record(u32::from(*class % 64), placement).unwrap();
                for (k, v) in body {
                    if k % 2 == 0 {
                        w.uint(*v)
                    } else {
                        w.int(*v as i64)
                    }
                }
                w.end_record().unwrap();
            }
        }
    }
    let bytes = w.finish().unwrap();
    let mut r = RecordReader::open(&bytes).unwrap();
    let mut n_top = 0;
    let mut n_rec = 0;
    while let Some(e) = r.next_entry().unwrap() {
        match e {
            Entry::Record(_) => {
                n_rec += 1;
                r.skip_to_record_end();
            }
            _ => n_top += 1,
        }
    }
    let recs = inp
        .items
        .iter()
        .filter(|i| matches!(i, Item::Record { .. }))
        .count();
    assert_eq!(n_rec, recs);
    assert_eq!(n_top, inp.items.len() - recs);
    let mut r = RecordReader::open(&bytes).unwrap();
    r.set_pass(Pass::NONE);
    let mut tops = 0;
    while r.next_entry().unwrap().is_some() {
        tops += 1;
    }
    assert_eq!(tops, n_top);

    // Voxel blob.
    let mut voxels = Vec::new();
    for (t, n, hi) in inp.runs.iter().take(64) {
        let v = u32::from(*t) | (u32::from(*hi) << 21);
        voxels.extend(std::iter::repeat_n(v, usize::from(*n % 2048)));
    }
    let blob = encode_voxels(&voxels, |id| Some(format!("n{id}"))).unwrap();
    let d = decode_voxels(&blob, |n| n.strip_prefix('n')?.parse().ok(), 0).unwrap();
    assert_eq!(d.voxels, voxels);

    // Section.
    let mut sw = SectionWriter::new(inp.section, [32, 32, 32]).unwrap();
    let mut want = Vec::new();
    for n in inp.nodes.iter().take(32) {
        let kind = match n.chunk {
            Some(chunk) => NodeKind::StaticChunk { chunk },
            None => NodeKind::Dynamic {
                position: n.pos.map(f64::from_bits),
            },
        };
        let node = Node {
            id: n.id,
            kind,
            vars: n.vars.clone(),
        };
        let opts = NodeOptions {
            needed_first: n.first,
            visibility_range: n.range.map(f32::from),
        };
        sw.add_node(&node, opts).unwrap();
        want.push(node);
    }
    let sb = sw.finish().unwrap();
    let sr = SectionReader::open(&sb).unwrap();
    let got = sr.all_nodes().unwrap();
    assert_eq!(got.len(), want.len());
    for ((_, g), w) in got.iter().zip(&want) {
        assert_eq!(format!("{g:?}"), format!("{w:?}"));
    }
    assert_eq!(sr.load_order([0.0; 3]).unwrap().len(), want.len());

    // Container.
    let ceiling = usize::from(inp.ceiling);
    let files: Vec<(&str, [u8; 32], &[u8])> = inp
        .files
        .iter()
        .map(|(n, b)| (n.as_str(), [b.len() as u8; 32], b.as_slice()))
        .collect();
    let blobs = encode_bundle(files.iter().copied(), ceiling).unwrap();
    let c = Container::<FileBundle>::open(&blobs).unwrap();
    for (e, (n, _, b)) in c.meta().entries.iter().zip(&files) {
        assert_eq!(e.name, *n);
        assert_eq!(c.payload(&e.payload).unwrap(), *b);
    }
    let _ = PayloadPacker::new(ceiling);

    // Packets.
    let mut tx = SenderPacketTypes::new();
    let mut out = Vec::new();
    let mut sent = Vec::new();
    for (name, data) in inp.packets.iter().take(64) {
        if tx.encode_packet(name, data, &mut out).is_ok() {
            sent.push((name.clone(), data.clone()));
        }
    }
    let mut dec = FrameDecoder::default();
    let mut rx = ReceiverPacketTypes::new();
    let mut got = Vec::new();
    for p in out.chunks(usize::from(inp.piece).max(1)) {
        dec.push(p);
        while let Some(f) = dec.try_next_frame().unwrap() {
            if let Received::Packet { name, data, .. } = rx.receive(f.ty, &f.data).unwrap() {
                got.push((name.to_string(), data.to_vec()));
            }
        }
    }
    assert_eq!(got, sent);
});
