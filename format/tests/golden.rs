//! Golden byte vectors: one checked-in encoding per format, checked in both
//! directions (the writer produces exactly these bytes, the reader decodes them
//! to exactly these values), so no format can drift silently. If one of these
//! fails, the on-disk or on-wire format changed: bump that format's version
//! byte and update docs/formats.md, never just the hex.

use std::collections::BTreeMap;

use buildat_format::backup::{
    BackupLogRun, BackupSection, BackupValue, LogRecordBlock, WorldBackup, backup_head,
    backup_head_len, check_backup_payload, check_payload_ref, decode_backup_head,
    decode_log_record, encode_log_record,
};
use buildat_format::container::{PayloadRef, decode_primary};
use buildat_format::packet::{self, DEFINE_PACKET_TYPE};
use buildat_format::records::{Entry, Pass, Placement, RecordReader, RecordWriter};
use buildat_format::section::{Node, NodeKind, NodeOptions, SectionReader, SectionWriter};
use buildat_format::strings::{StringTable, StringTableBuilder};
use buildat_format::voxel_blob::{decode_voxels, encode_voxels};
use buildat_format::writer::Writer;
use buildat_format::{Reader, ReceiverPacketTypes, SenderPacketTypes};

fn unhex(s: &str) -> Vec<u8> {
    let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

#[test]
fn primitives() {
    let cases: &[(u64, &str)] = &[
        (0, "00"),
        (1, "01"),
        (127, "7f"),
        (128, "8001"),
        (300, "ac02"),
        (16384, "808001"),
        (u64::from(u32::MAX), "ffffffff0f"),
        (u64::MAX, "ffffffffffffffffff01"),
    ];
    for &(v, h) in cases {
        let mut w = Writer::new();
        w.varint(v);
        assert_eq!(w.as_slice(), unhex(h), "varint {v}");
        assert_eq!(Reader::new(&unhex(h)).varint().unwrap(), v);
    }
    let zz: &[(i64, &str)] = &[
        (0, "00"),
        (-1, "01"),
        (1, "02"),
        (-64, "7f"),
        (64, "8001"),
        (i64::MIN, "ffffffffffffffffff01"),
    ];
    for &(v, h) in zz {
        let mut w = Writer::new();
        w.zigzag(v);
        assert_eq!(w.as_slice(), unhex(h), "zigzag {v}");
        assert_eq!(Reader::new(&unhex(h)).zigzag_i64().unwrap(), v);
    }
    let mut w = Writer::new();
    w.f32_le(1.5);
    w.f64_le(-2.0);
    w.str("hi");
    w.bytes(&[]);
    w.u16_le(0x1234);
    w.u32_le(0xdeadbeef);
    w.u64_le(1);
    let g = unhex("0000c03f 00000000000000c0 026869 00 3412 efbeadde 0100000000000000");
    assert_eq!(w.as_slice(), g);
    let mut r = Reader::new(&g);
    assert_eq!(r.f32_le().unwrap(), 1.5);
    assert_eq!(r.f64_le().unwrap(), -2.0);
    assert_eq!(r.str().unwrap(), "hi");
    assert_eq!(r.bytes().unwrap(), b"");
    assert_eq!(r.u16_le().unwrap(), 0x1234);
    assert_eq!(r.u32_le().unwrap(), 0xdeadbeef);
    assert_eq!(r.u64_le().unwrap(), 1);
    assert!(r.is_at_end());
}

#[test]
fn string_table() {
    let mut b = StringTableBuilder::new();
    assert_eq!(b.intern("a").unwrap(), 0);
    assert_eq!(b.intern("bc").unwrap(), 1);
    assert_eq!(b.intern("a").unwrap(), 0);
    let mut w = Writer::new();
    b.write_to(&mut w);
    let g = unhex("02 0161 026263");
    assert_eq!(w.as_slice(), g);
    let t = StringTable::read(&mut Reader::new(&g)).unwrap();
    assert_eq!(t.iter().collect::<Vec<_>>(), ["a", "bc"]);
}

const RECORDS: &str = "42525301 010568656c6c6f 00 0105 \
     0e0215 0000803f 00000040 00004040 000080bf 0205 030000003f 0400000000000000c0 1d010203 00 \
     060003 01ac02";

#[test]
fn record_stream() {
    let mut w = RecordWriter::new();
    w.str("hello").unwrap();
    w.uint(5);
    let p = Placement {
        position: [1.0, 2.0, 3.0],
        range: -1.0,
    };
    w.begin_record(2, Some(p)).unwrap();
    w.int(-3);
    w.f32(0.5);
    w.f64(-2.0);
    w.bytes(&[1, 2, 3]);
    w.str("hello").unwrap();
    w.end_record().unwrap();
    w.begin_record(0, None).unwrap();
    w.uint(300);
    w.end_record().unwrap();
    let g = unhex(RECORDS);
    assert_eq!(w.finish().unwrap(), g);

    let mut r = RecordReader::open(&g).unwrap();
    let mut got = Vec::new();
    while let Some(e) = r.next_entry().unwrap() {
        got.push(e);
    }
    assert_eq!(got.len(), 10);
    assert_eq!(got[0], Entry::Str("hello"));
    assert_eq!(got[1], Entry::UInt(5));
    let Entry::Record(h) = got[2] else { panic!() };
    assert_eq!((h.class, h.offset, h.placement), (2, 14, Some(p)));
    assert_eq!(
        &got[3..8],
        &[
            Entry::Int(-3),
            Entry::F32(0.5),
            Entry::F64(-2.0),
            Entry::Bytes(&[1, 2, 3]),
            Entry::Str("hello")
        ]
    );
    let Entry::Record(h) = got[8] else { panic!() };
    assert_eq!((h.class, h.placement), (0, None));
    assert_eq!(got[9], Entry::UInt(300));

    // The class-0 pass skips the class-2 record without decoding it.
    let mut r = RecordReader::open(&g).unwrap();
    r.set_pass(Pass::only(0));
    let mut got = Vec::new();
    while let Some(e) = r.next_entry().unwrap() {
        got.push(e);
    }
    assert_eq!(got.len(), 4);
    assert_eq!(got[3], Entry::UInt(300));
}

const VOXELS: &str = "010616789c63622d2ec9cf4b6549c92c2a61666060646060e5606403003d650400";
/// The uncompressed body of [`VOXELS`]: names, palette, runs.
const VOXELS_BODY: &str = "02 0573746f6e65 0464697274 03 0000 0100 0005 08 01 06";

#[test]
fn voxel_blob() {
    let v = [1u32, 1, 1, 2, 1 | (5 << 21), 1 | (5 << 21)];
    let names = |id| match id {
        1 => Some("stone"),
        2 => Some("dirt"),
        _ => None,
    };
    let enc = encode_voxels(&v, names).unwrap();
    let g = unhex(VOXELS);
    // Header is exact; the zlib part is compared after inflating, so a
    // different (still valid) deflate backend does not break the test.
    assert_eq!(enc[..3], g[..3]);
    let inflate = |b: &[u8]| {
        use std::io::Read;
        let mut out = Vec::new();
        flate2::read::ZlibDecoder::new(b)
            .read_to_end(&mut out)
            .unwrap();
        out
    };
    assert_eq!(inflate(&enc[3..]), unhex(VOXELS_BODY));
    assert_eq!(inflate(&g[3..]), unhex(VOXELS_BODY));

    // Decoding maps names through a registry that numbers them differently.
    let d = decode_voxels(
        &g,
        |n| match n {
            "stone" => Some(10),
            "dirt" => Some(20),
            _ => None,
        },
        0,
    )
    .unwrap();
    assert_eq!(d.voxels, [10, 10, 10, 20, 10 | (5 << 21), 10 | (5 << 21)]);
    assert!(d.unknown_names.is_empty());
    let d = decode_voxels(&g, |n| (n == "stone").then_some(1), 99).unwrap();
    assert_eq!(d.voxels, [1, 1, 1, 99, 1 | (5 << 21), 1 | (5 << 21)]);
    assert_eq!(d.unknown_names, ["dirt"]);
}

/// Light bytes `f0 f0 f0 0e` (three voxels in full sun, one lit 14 by a
/// torch): format 01, 4 bytes, zlib (still read).
const LIGHT_V1: &str = "0104789cfbf0e1031f00088202df";
/// The same as written now: format 02, 4 bytes, a zstd frame.
const LIGHT: &str = "0204 28b52ffd 2004 210000 f0f0f00e";

#[test]
fn light_blob() {
    let light = [0xf0u8, 0xf0, 0xf0, 0x0e];
    let enc = buildat_format::encode_light(&light).unwrap();
    let g = unhex(LIGHT);
    assert_eq!(enc, g, "version 2 is written byte for byte");
    assert_eq!(buildat_format::decode_light(&g, 4).unwrap(), light);
    let old = unhex(LIGHT_V1);
    // Version 1: the zlib stream compared by what it inflates to.
    assert_eq!(
        buildat_format::encode_light_v1(&light).unwrap()[..2],
        old[..2]
    );
    assert_eq!(buildat_format::decode_light(&old, 4).unwrap(), light);
}

const SECTION: &str = "42534e01 020306 202020 01 12 6275696c6461745f766f78656c5f64617461 \
     0e000d 0000a042 0000e0c2 00005043 000080bf 0107 0204 0207 020c 0101 00 0daa \
     0e0324 0000c03f 00000040 000050c0 00008042 0180808080802004 000000000000f83f \
     04 0000000000000040 04 000000000000 0ac0 0100";

fn section_nodes() -> [(Node, NodeOptions); 2] {
    let mut vars = BTreeMap::new();
    vars.insert("buildat_voxel_data".to_string(), vec![0xaa]);
    [
        (
            Node {
                id: 7,
                kind: NodeKind::StaticChunk { chunk: [2, -4, 6] },
                vars,
            },
            NodeOptions {
                needed_first: true,
                visibility_range: None,
            },
        ),
        (
            Node {
                id: 1 << 40,
                kind: NodeKind::Dynamic {
                    position: [1.5, 2.0, -3.25],
                },
                vars: BTreeMap::new(),
            },
            NodeOptions {
                needed_first: false,
                visibility_range: Some(64.0),
            },
        ),
    ]
}

#[test]
fn section() {
    let nodes = section_nodes();
    let mut s = SectionWriter::new([1, -2, 3], [32, 32, 32]).unwrap();
    for (n, o) in &nodes {
        s.add_node(n, *o).unwrap();
    }
    let g = unhex(SECTION);
    assert_eq!(s.finish().unwrap(), g);

    let r = SectionReader::open(&g).unwrap();
    assert_eq!(r.section(), [1, -2, 3]);
    assert_eq!(r.chunk_size(), [32, 32, 32]);
    let idx = r.index().unwrap();
    assert_eq!(idx.len(), 2);
    assert!(idx[0].is_static && idx[0].needed_first);
    assert_eq!(idx[0].placement.position, [80.0, -112.0, 208.0]);
    assert_eq!(idx[1].placement.range, 64.0);
    for (i, nr) in idx.iter().enumerate() {
        assert_eq!(r.read_node(nr.offset).unwrap(), nodes[i].0);
    }
}

/// A world backup (the container's one kind) with two sections whose
/// payloads are `abc` and `defg` (opaque to the container; in a real backup
/// each is a section record), one module's value, `hi`, and a run of one
/// rollback-log block (t0 1, t1 2, area 0 -1 1, blob `z`).
const BACKUP: &str = "4257424b 03000000 3900000000000000 \
     040404 202020 fb2c01 03613d31 04772e6462 fc00d2496b \
     02 020306 01 01 02 000003 000001 01 00 01 000304 \
     01 036d2e61 016b 000702 \
     01 01 000907 \
     616263 64656667 6869 \
     0204 000102 01 7a";

/// The second layout (validity token 2, before the rollback log): still
/// read, as a backup with an empty log.
const BACKUP_V2: &str = "4257424b 02000000 3400000000000000 \
     040404 202020 fb2c01 03613d31 04772e6462 fc00d2496b \
     02 020306 01 01 02 000003 000001 01 00 01 000304 \
     01 036d2e61 016b 000702 \
     616263 64656667 6869";

/// The same sections in the first layout (validity token 1, before
/// modules' values): still read, as a backup with no values.
const BACKUP_V1: &str = "4257424b 01000000 2a00000000000000 \
     040404 202020 fb2c01 03613d31 04772e6462 fc00d2496b \
     02 020306 01 01 02 000003 000001 01 00 01 000304 \
     616263 64656667";

fn backup_meta() -> WorldBackup {
    WorldBackup {
        section_size: [2, 2, 2],
        chunk_size: [32, 32, 32],
        next_node_id: 300,
        settings: "a=1".into(),
        source: "w.db".into(),
        taken_unix_s: 1_800_000_000,
        sections: vec![
            BackupSection {
                pos: [1, -2, 3],
                save_enabled: true,
                generated: true,
                nodes: 2,
                payload: PayloadRef {
                    blob: 0,
                    offset: 0,
                    len: 3,
                },
            },
            BackupSection {
                pos: [0, 0, -1],
                save_enabled: true,
                generated: false,
                nodes: 1,
                payload: PayloadRef {
                    blob: 0,
                    offset: 3,
                    len: 4,
                },
            },
        ],
        values: vec![BackupValue {
            space: "m.a".into(),
            key: "k".into(),
            payload: PayloadRef {
                blob: 0,
                offset: 7,
                len: 2,
            },
        }],
        log: vec![BackupLogRun {
            blocks: 1,
            payload: PayloadRef {
                blob: 0,
                offset: 9,
                len: 7,
            },
        }],
    }
}

fn log_block() -> LogRecordBlock {
    LogRecordBlock {
        t0: 1,
        t1: 2,
        area: [0, -1, 1],
        data: b"z".to_vec(),
    }
}

#[test]
fn container() {
    let meta = backup_meta();
    let mut file = backup_head(&meta).unwrap();
    file.extend_from_slice(b"abc");
    file.extend_from_slice(b"defg");
    file.extend_from_slice(b"hi");
    file.extend_from_slice(&encode_log_record(&[log_block()]));
    let g = unhex(BACKUP);
    assert_eq!(file, g);

    // The head alone gives the index; the payloads follow it.
    let head_len = backup_head_len(&g).unwrap();
    assert_eq!(head_len, 16 + 0x39);
    assert_eq!(decode_backup_head(&g[..head_len as usize]).unwrap(), meta);
    let (decoded, payloads) = decode_primary::<WorldBackup>(&g).unwrap();
    assert_eq!(decoded, meta);
    assert_eq!(&payloads[..9], b"abcdefghi");
    let run = &meta.log[0];
    let at = check_payload_ref(&run.payload, payloads.len() as u64).unwrap() as usize;
    assert_eq!(
        decode_log_record(&payloads[at..at + run.payload.len as usize], run.blocks).unwrap(),
        [log_block()]
    );
    let got: Vec<&[u8]> = meta
        .sections
        .iter()
        .map(|s| {
            let at = check_backup_payload(s, payloads.len() as u64).unwrap() as usize;
            &payloads[at..at + s.payload.len as usize]
        })
        .collect();
    assert_eq!(got, [&b"abc"[..], &b"defg"[..]]);
    let value = &meta.values[0].payload;
    let at = check_payload_ref(value, payloads.len() as u64).unwrap() as usize;
    assert_eq!(&payloads[at..at + value.len as usize], b"hi");
}

#[test]
fn container_first_layout() {
    let g = unhex(BACKUP_V1);
    let head_len = backup_head_len(&g).unwrap();
    assert_eq!(head_len, 16 + 0x2a);
    let read = decode_backup_head(&g[..head_len as usize]).unwrap();
    let mut meta = backup_meta();
    meta.values.clear();
    meta.log.clear();
    assert_eq!(read, meta);
    assert_eq!(&g[head_len as usize..], b"abcdefg");
}

#[test]
fn container_second_layout() {
    let g = unhex(BACKUP_V2);
    let head_len = backup_head_len(&g).unwrap();
    assert_eq!(head_len, 16 + 0x34);
    let read = decode_backup_head(&g[..head_len as usize]).unwrap();
    let mut meta = backup_meta();
    meta.log.clear();
    assert_eq!(read, meta);
    assert_eq!(&g[head_len as usize..], b"abcdefghi");
}

#[test]
fn packets() {
    let mut out = Vec::new();
    let mut s = SenderPacketTypes::new();
    assert_eq!(
        s.encode_packet("core:hello", &[1, 2, 3], &mut out).unwrap(),
        100
    );
    assert_eq!(s.encode_packet("core:hello", &[], &mut out).unwrap(), 100);
    let g = unhex(
        "0000 10000000 6400 0a000000 636f72653a68656c6c6f \
         6400 03000000 010203 \
         6400 00000000",
    );
    assert_eq!(out, g);
    assert_eq!(
        packet::encode_definition(100, "core:hello").unwrap(),
        g[6..22]
    );

    let mut d = packet::FrameDecoder::default();
    d.push(&g);
    let mut rx = ReceiverPacketTypes::new();
    let f = d.try_next_frame().unwrap().unwrap();
    assert_eq!(f.ty, DEFINE_PACKET_TYPE);
    assert_eq!(rx.accept_definition(&f.data).unwrap(), (100, "core:hello"));
    let f = d.try_next_frame().unwrap().unwrap();
    assert_eq!((f.ty, f.data.as_slice()), (100, &[1u8, 2, 3][..]));
    assert_eq!(rx.name_of(f.ty).unwrap(), "core:hello");
    let f = d.try_next_frame().unwrap().unwrap();
    assert_eq!((f.ty, f.data.len()), (100, 0));
    assert_eq!(d.try_next_frame().unwrap(), None);
}
