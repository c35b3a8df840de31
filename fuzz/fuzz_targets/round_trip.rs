//! Fuzz target (oracle): arbitrary values of every format encode, decode back
//! to the same values, and framing/type tables deliver every packet intact.
#![no_main]

use std::collections::BTreeMap;

use buildat_format::backup::{
    BackupSection, WorldBackup, backup_head, backup_head_len, check_backup_payload,
    decode_backup_head,
};
use buildat_format::container::{PayloadRef, decode_primary};
use buildat_format::packet::{FrameDecoder, Received, ReceiverPacketTypes, SenderPacketTypes};
use buildat_format::records::{Entry, Pass, Placement, RecordReader, RecordWriter};
use buildat_format::section::{Node, NodeKind, NodeOptions, SectionReader, SectionWriter};
use buildat_format::voxel_blob::{decode_voxels, encode_voxels};
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

/// One backup section: position, save_enabled, generated, node count, and
/// its payload bytes.
type SectionIn = ([i32; 3], bool, bool, u32, Vec<u8>);

#[derive(Debug, Arbitrary)]
struct BackupIn {
    next_node_id: u64,
    settings: String,
    source: String,
    taken_unix_s: u64,
    sections: Vec<SectionIn>,
}

#[derive(Debug, Arbitrary)]
struct Input {
    items: Vec<Item>,
    runs: Vec<(u8, u16, u8)>,
    nodes: Vec<NodeIn>,
    section: [i32; 3],
    backup: BackupIn,
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

    // Container, through its one kind: a world backup's head, then the
    // payloads in index order.
    let b = &inp.backup;
    let mut meta = WorldBackup {
        section_size: [2, 2, 2],
        chunk_size: [32, 32, 32],
        next_node_id: b.next_node_id,
        settings: b.settings.clone(),
        source: b.source.clone(),
        taken_unix_s: b.taken_unix_s,
        sections: Vec::new(),
        values: Vec::new(),
        log: Vec::new(),
    };
    let mut payloads = Vec::new();
    for (pos, save_enabled, generated, nodes, bytes) in b.sections.iter().take(64) {
        meta.sections.push(BackupSection {
            pos: *pos,
            save_enabled: *save_enabled,
            generated: *generated,
            nodes: *nodes,
            payload: PayloadRef {
                blob: 0,
                offset: payloads.len() as u64,
                len: bytes.len() as u64,
            },
        });
        payloads.extend_from_slice(bytes);
    }
    let mut file = backup_head(&meta).unwrap();
    let head_len = file.len();
    file.extend_from_slice(&payloads);
    assert_eq!(backup_head_len(&file).unwrap(), head_len as u64);
    assert_eq!(decode_backup_head(&file[..head_len]).unwrap(), meta);
    let (decoded, section) = decode_primary::<WorldBackup>(&file).unwrap();
    assert_eq!(decoded, meta);
    assert_eq!(section, payloads.as_slice());
    for (s, (.., bytes)) in decoded.sections.iter().zip(&b.sections) {
        let at = check_backup_payload(s, section.len() as u64).unwrap() as usize;
        assert_eq!(&section[at..at + bytes.len()], bytes.as_slice());
    }

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
