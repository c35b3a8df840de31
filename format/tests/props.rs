//! Property tests: every format round-trips arbitrary values, and every decoder
//! survives arbitrary bytes (random and mutated valid encodings) without
//! panicking — the stand-in for fuzzing where cargo-fuzz is unavailable
//! (`scripts/fuzz` falls back to these). `PROPTEST_CASES` scales them.

use std::collections::BTreeMap;

use buildat_format::backup::{
    BackupSection, BackupValue, WorldBackup, backup_head, backup_head_len, check_backup_payload,
    check_payload_ref, decode_backup_head,
};
use buildat_format::container::{ContainerError, PayloadRef, decode_primary};
use buildat_format::packet::{FrameDecoder, FrameEncoder, ReceiverPacketTypes, SenderPacketTypes};
use buildat_format::reader::Reader;
use buildat_format::records::{Entry, Pass, Placement, RecordReader, RecordWriter};
use buildat_format::section::{Node, NodeKind, NodeOptions, SectionReader, SectionWriter};
use buildat_format::strings::StringTable;
use buildat_format::voxel_blob::{DecodeLimits, decode_voxels_with_limits, encode_voxels};
use buildat_format::writer::Writer;
use proptest::prelude::*;

fn cfg() -> ProptestConfig {
    ProptestConfig {
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(256),
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

// ------------------------------------------------------------ generators

#[derive(Debug, Clone)]
enum Op {
    Str(String),
    UInt(u64),
    Int(i64),
    F32(f32),
    F64(f64),
    Bytes(Vec<u8>),
    Begin(u32, Option<([f32; 3], f32)>),
    End,
}

fn finite_f32() -> impl Strategy<Value = f32> {
    -1e6f32..1e6f32
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        "[a-z:]{0,6}".prop_map(Op::Str),
        any::<u64>().prop_map(Op::UInt),
        any::<i64>().prop_map(Op::Int),
        finite_f32().prop_map(Op::F32),
        (-1e12f64..1e12).prop_map(Op::F64),
        prop::collection::vec(any::<u8>(), 0..20).prop_map(Op::Bytes),
        (
            0u32..64,
            prop::option::of((prop::array::uniform3(finite_f32()), finite_f32()))
        )
            .prop_map(|(c, p)| Op::Begin(c, p)),
        Just(Op::End),
    ]
}

/// Writes the ops (skipping invalid nesting) and returns the bytes plus the
/// entries a full pass must serve.
fn write_ops(ops: &[Op]) -> (Vec<u8>, Vec<Op>) {
    let mut w = RecordWriter::new();
    let mut open = false;
    let mut expect = Vec::new();
    for o in ops {
        match o {
            Op::Str(s) => w.str(s).unwrap(),
            Op::UInt(v) => w.uint(*v),
            Op::Int(v) => w.int(*v),
            Op::F32(v) => w.f32(*v),
            Op::F64(v) => w.f64(*v),
            Op::Bytes(b) => w.bytes(b),
            Op::Begin(c, p) => {
                if open {
                    continue;
                }
                let placement = p.map(|(position, range)| Placement { position, range });
                w.begin_record(*c, placement).unwrap();
                open = true;
            }
            Op::End => {
                if !open {
                    continue;
                }
                w.end_record().unwrap();
                open = false;
            }
        }
        expect.push(o.clone());
    }
    if open {
        w.end_record().unwrap();
        expect.push(Op::End);
    }
    (w.finish().unwrap(), expect)
}

fn node() -> impl Strategy<Value = (Node, NodeOptions)> {
    let kind = prop_oneof![
        prop::array::uniform3(any::<i32>()).prop_map(|chunk| NodeKind::StaticChunk { chunk }),
        prop::array::uniform3(-1e9f64..1e9).prop_map(|position| NodeKind::Dynamic { position }),
    ];
    (
        any::<u64>(),
        kind,
        prop::collection::btree_map(
            "[a-z_]{1,12}",
            prop::collection::vec(any::<u8>(), 0..16),
            0..4,
        ),
        any::<bool>(),
        prop::option::of(0f32..1e4),
    )
        .prop_map(|(id, kind, vars, needed_first, visibility_range)| {
            (
                Node { id, kind, vars },
                NodeOptions {
                    needed_first,
                    visibility_range,
                },
            )
        })
}

/// Terrain-ish voxels: runs of a few values with occasional upper bits.
fn voxels() -> impl Strategy<Value = Vec<u32>> {
    prop::collection::vec(
        (
            0u32..12,
            1usize..200,
            prop::bool::weighted(0.1),
            any::<u16>(),
        ),
        0..60,
    )
    .prop_map(|runs| {
        let mut v = Vec::new();
        for (t, n, hi, bits) in runs {
            let val = if hi {
                t | (u32::from(bits) << 16 & !0x1f_ffff)
            } else {
                t
            };
            v.extend(std::iter::repeat_n(val, n));
        }
        v
    })
}

/// A world backup's sections: index fields and each one's payload bytes.
type BackupIn = Vec<([i32; 3], bool, bool, u32, Vec<u8>)>;

fn backup_sections() -> impl Strategy<Value = BackupIn> {
    prop::collection::vec(
        (
            any::<[i32; 3]>(),
            any::<bool>(),
            any::<bool>(),
            any::<u32>(),
            prop::collection::vec(any::<u8>(), 0..64),
        ),
        0..10,
    )
}

/// A backup file (head, then the payloads in index order) and its index.
fn backup_file(
    sections: &BackupIn,
    next_node_id: u64,
    settings: &str,
    taken_unix_s: u64,
) -> (Vec<u8>, WorldBackup) {
    let mut payloads = Vec::new();
    let mut meta = WorldBackup {
        section_size: [2, 2, 2],
        chunk_size: [32, 32, 32],
        next_node_id,
        settings: settings.to_string(),
        source: "world.sqlite".into(),
        taken_unix_s,
        sections: Vec::new(),
        values: Vec::new(),
        log: Vec::new(),
    };
    for (pos, save_enabled, generated, nodes, bytes) in sections {
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
    // The settings' bytes as a module's value, after the sections'.
    meta.values.push(BackupValue {
        space: "main.accounts".into(),
        key: "k".into(),
        payload: PayloadRef {
            blob: 0,
            offset: payloads.len() as u64,
            len: settings.len() as u64,
        },
    });
    payloads.extend_from_slice(settings.as_bytes());
    let mut file = backup_head(&meta).unwrap();
    file.extend_from_slice(&payloads);
    (file, meta)
}

/// A few valid encodings of every format, to mutate.
fn seeds() -> Vec<Vec<u8>> {
    let (records, _) = write_ops(&[
        Op::Str("x".into()),
        Op::Begin(3, Some(([1.0, 2.0, 3.0], 4.0))),
        Op::UInt(7),
        Op::Bytes(vec![1, 2]),
        Op::End,
        Op::Int(-5),
    ]);
    let mut s = SectionWriter::new([1, 2, 3], [32, 32, 32]).unwrap();
    s.add_node(
        &Node {
            id: 9,
            kind: NodeKind::StaticChunk { chunk: [1, 2, 3] },
            vars: BTreeMap::from([("a".to_string(), vec![1, 2, 3])]),
        },
        NodeOptions::default(),
    )
    .unwrap();
    let v: Vec<u32> = (0..300).map(|i| (i / 40) as u32).collect();
    let blob = encode_voxels(&v, |i| Some(format!("v{i}"))).unwrap();
    let (backup, _) = backup_file(
        &vec![
            ([1, -2, 3], true, true, 2, b"xyz".to_vec()),
            ([0, 0, 0], false, true, 0, Vec::new()),
        ],
        9,
        "seed = 1",
        1_800_000_000,
    );
    let mut frames = Vec::new();
    SenderPacketTypes::new()
        .encode_packet("core:x", b"hello", &mut frames)
        .unwrap();
    vec![records, s.finish().unwrap(), blob, backup, frames]
}

fn garbage() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..300),
        (
            0usize..5,
            prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
            any::<prop::sample::Index>()
        )
            .prop_map(|(which, edits, cut)| {
                let mut b = seeds().swap_remove(which);
                for (i, v) in edits {
                    if !b.is_empty() {
                        let i = i.index(b.len());
                        b[i] = v;
                    }
                }
                let keep = cut.index(b.len() + 1);
                if keep > b.len() / 2 {
                    b.truncate(keep);
                }
                b
            }),
    ]
}

/// A voxel blob header and a valid zlib stream around an arbitrary body.
pub fn wrap_voxel_body(count: u64, body: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut w = Writer::new();
    w.u8(buildat_format::voxel_blob::VOXEL_BLOB_V1);
    w.varint(count);
    w.varint(body.len() as u64);
    let mut z = flate2::write::ZlibEncoder::new(w.into_vec(), flate2::Compression::fast());
    z.write_all(body).unwrap();
    z.finish().unwrap()
}

// ------------------------------------------------------------ decoders on garbage

/// Every decoder over the same bytes; returns nothing, must not panic.
fn decode_everything(b: &[u8]) {
    let mut r = Reader::new(b);
    while !r.is_at_end() {
        let _ = r.varint();
        let _ = r.str();
        let _ = r.f64_le();
    }
    let _ = StringTable::read(&mut Reader::new(b));
    for start in [0usize, 4] {
        if let Ok(mut rr) = RecordReader::open_at(b, start.min(b.len())) {
            rr.set_pass(Pass::only(1).with(3));
            for _ in 0..10_000 {
                match rr.next_entry() {
                    Ok(Some(_)) => {}
                    _ => break,
                }
            }
            let _ = rr.seek_record(b.len() / 2);
        }
    }
    if let Ok(s) = SectionReader::open(b) {
        let _ = s.load_order([0.0; 3]);
        let _ = s.all_nodes();
    }
    let limits = DecodeLimits {
        max_voxels: 1 << 16,
        max_body_bytes: 1 << 20,
    };
    let _ = decode_voxels_with_limits(b, |n| n.len().checked_sub(1).map(|x| x as u32), 0, &limits);
    let _ = buildat_format::decode_light(b, 1 << 16);
    let _ = decode_primary::<WorldBackup>(b);
    if let (Ok(head_len), Ok(meta)) = (backup_head_len(b), decode_backup_head(b)) {
        let payload_len = (b.len() as u64).saturating_sub(head_len);
        for s in &meta.sections {
            if let Ok(at) = check_backup_payload(s, payload_len) {
                assert!(
                    at.checked_add(s.payload.len)
                        .is_some_and(|end| end <= payload_len)
                );
            }
        }
    }
    let mut d = FrameDecoder::new(1 << 16);
    let mut rx = ReceiverPacketTypes::new();
    d.push(b);
    while let Ok(Some(f)) = d.try_next_frame() {
        let _ = rx.receive(f.ty, &f.data);
    }
    let _ = rx.accept_definition(b);
}

proptest! {
    #![proptest_config(cfg())]

    #[test]
    fn garbage_never_panics(b in garbage()) {
        decode_everything(&b);
    }

    #[test]
    fn voxel_body_garbage_never_panics(count in 0u64..5000, body in prop::collection::vec(any::<u8>(), 0..200)) {
        // A valid header and zlib stream around garbage: reaches the body parser.
        let b = wrap_voxel_body(count, &body);
        let _ = decode_voxels_with_limits(&b, |n| n.len().checked_sub(1).map(|x| x as u32), 0, &DecodeLimits::default());
    }

    #[test]
    fn garbage_with_magic_never_panics(
        which in 0usize..4,
        meta_len in 0u64..200,
        b in prop::collection::vec(any::<u8>(), 0..200),
    ) {
        // The fourth is a world backup header whose meta_len mostly lies
        // within the bytes, so the metadata decoder is reached.
        let mut backup = b"BWBK\x01\x00\x00\x00".to_vec();
        backup.extend_from_slice(&meta_len.to_le_bytes());
        let magic: &[u8] = [&b"BRS\x01"[..], &b"BSN\x01"[..], &[1u8][..], &backup[..]][which];
        let mut v = magic.to_vec();
        v.extend_from_slice(&b);
        decode_everything(&v);
    }

    // -------------------------------------------------------- round trips

    #[test]
    fn primitives_round_trip(u in any::<u64>(), i in any::<i64>(), f in any::<f32>(), d in any::<f64>(),
                             s in ".{0,20}", bytes in prop::collection::vec(any::<u8>(), 0..40)) {
        let mut w = Writer::new();
        w.varint(u);
        w.zigzag(i);
        w.f32_le(f);
        w.f64_le(d);
        w.str(&s);
        w.bytes(&bytes);
        prop_assert_eq!(buildat_format::writer::varint_len(u), {
            let mut x = Vec::new();
            buildat_format::writer::put_varint(&mut x, u);
            x.len()
        });
        let buf = w.into_vec();
        let mut r = Reader::new(&buf);
        prop_assert_eq!(r.varint().unwrap(), u);
        prop_assert_eq!(r.zigzag_i64().unwrap(), i);
        prop_assert_eq!(r.f32_le().unwrap().to_bits(), f.to_bits());
        prop_assert_eq!(r.f64_le().unwrap().to_bits(), d.to_bits());
        prop_assert_eq!(r.str().unwrap(), s.as_str());
        prop_assert_eq!(r.bytes().unwrap(), bytes.as_slice());
        prop_assert!(r.is_at_end());
        // Any prefix fails cleanly and parks.
        for cut in 0..buf.len() {
            let mut r = Reader::new(&buf[..cut]);
            let ok = r.varint().is_ok() && r.zigzag_i64().is_ok() && r.f32_le().is_ok()
                && r.f64_le().is_ok() && r.str().is_ok() && r.bytes().is_ok();
            prop_assert!(!ok);
            prop_assert!(r.is_at_end());
        }
    }

    #[test]
    fn records_round_trip(ops in prop::collection::vec(op(), 0..40), class in 0u32..64) {
        let (bytes, expect) = write_ops(&ops);
        let mut r = RecordReader::open(&bytes).unwrap();
        let mut got = Vec::new();
        let mut in_record = false;
        while let Some(e) = r.next_entry().unwrap() {
            // A record ends where the next record starts or where an entry
            // is served outside any record.
            if in_record && (matches!(e, Entry::Record(_)) || r.current_record().is_none()) {
                got.push(Op::End);
                in_record = false;
            }
            got.push(match e {
                Entry::Str(s) => Op::Str(s.to_string()),
                Entry::UInt(v) => Op::UInt(v),
                Entry::Int(v) => Op::Int(v),
                Entry::F32(v) => Op::F32(v),
                Entry::F64(v) => Op::F64(v),
                Entry::Bytes(b) => Op::Bytes(b.to_vec()),
                Entry::Record(h) => {
                    in_record = true;
                    Op::Begin(h.class, h.placement.map(|p| (p.position, p.range)))
                }
            });
        }
        if in_record {
            got.push(Op::End);
        }
        prop_assert_eq!(format!("{got:?}"), format!("{expect:?}"));
        prop_assert_eq!(r.progress(), 1.0);

        // A single-class pass serves exactly that class's records.
        let mut r = RecordReader::open(&bytes).unwrap();
        r.set_pass(Pass::only(class));
        let mut served = 0;
        while let Some(h) = r.next_record().unwrap() {
            prop_assert_eq!(h.class, class);
            served += 1;
        }
        let expected = expect.iter().filter(|o| matches!(o, Op::Begin(c, _) if *c == class)).count();
        prop_assert_eq!(served, expected);
    }

    #[test]
    fn section_round_trip(nodes in prop::collection::vec(node(), 0..12),
                          section in prop::array::uniform3(any::<i32>()),
                          point in prop::array::uniform3(-1e5f32..1e5)) {
        let mut w = SectionWriter::new(section, [32, 16, 32]).unwrap();
        for (n, o) in &nodes {
            w.add_node(n, *o).unwrap();
        }
        let bytes = w.finish().unwrap();
        let r = SectionReader::open(&bytes).unwrap();
        prop_assert_eq!(r.section(), section);
        let all = r.all_nodes().unwrap();
        prop_assert_eq!(all.len(), nodes.len());
        for ((nref, got), (want, o)) in all.iter().zip(&nodes) {
            prop_assert_eq!(got, want);
            prop_assert_eq!(nref.needed_first, o.needed_first);
            prop_assert_eq!(r.read_node(nref.offset).unwrap(), want.clone());
        }
        let order = r.load_order(point).unwrap();
        prop_assert_eq!(order.len(), nodes.len());
        let firsts = order.iter().take_while(|n| n.needed_first).count();
        prop_assert_eq!(firsts, nodes.iter().filter(|(_, o)| o.needed_first).count());
        let d: Vec<f32> = order[firsts..].iter().map(|n| n.placement.distance_sq(point)).collect();
        prop_assert!(d.windows(2).all(|w| w[0].total_cmp(&w[1]).is_le()));
    }

    #[test]
    fn voxel_blob_round_trip(v in voxels()) {
        let b = encode_voxels(&v, |id| Some(format!("mod:block{id}"))).unwrap();
        let d = decode_voxels_with_limits(
            &b,
            |n| n.strip_prefix("mod:block").and_then(|x| x.parse().ok()),
            0,
            &DecodeLimits::default(),
        ).unwrap();
        prop_assert_eq!(d.voxels, v);
        prop_assert!(d.unknown_names.is_empty());
    }

    #[test]
    fn container_round_trip(sections in backup_sections(), next_node_id in any::<u64>(),
                            settings in ".{0,40}", taken_unix_s in any::<u64>()) {
        let (file, meta) = backup_file(&sections, next_node_id, &settings, taken_unix_s);
        let head_len = backup_head_len(&file).unwrap();
        let head = &file[..head_len as usize];
        prop_assert_eq!(decode_backup_head(head).unwrap(), meta.clone());
        // The head alone decodes; every cut inside it does not.
        let cut = head_len as usize / 2;
        prop_assert!(decode_backup_head(&file[..cut]).is_err());
        let (decoded, payloads) = decode_primary::<WorldBackup>(&file).unwrap();
        prop_assert_eq!(&decoded, &meta);
        prop_assert_eq!(payloads.len() as u64, file.len() as u64 - head_len);
        for (s, (.., bytes)) in decoded.sections.iter().zip(&sections) {
            let at = check_backup_payload(s, payloads.len() as u64).unwrap() as usize;
            prop_assert_eq!(&payloads[at..at + s.payload.len as usize], bytes.as_slice());
        }
        let value = &decoded.values[0].payload;
        let at = check_payload_ref(value, payloads.len() as u64).unwrap() as usize;
        prop_assert_eq!(&payloads[at..at + value.len as usize], settings.as_bytes());
    }

    #[test]
    fn payload_refs_are_checked(blob in prop_oneof![Just(0u32), any::<u32>()],
                                offset in prop_oneof![0u64..100, any::<u64>()],
                                len in prop_oneof![0u64..100, any::<u64>()],
                                payload_len in prop_oneof![0u64..200, any::<u64>()]) {
        let section = BackupSection {
            pos: [0; 3],
            save_enabled: true,
            generated: true,
            nodes: 0,
            payload: PayloadRef { blob, offset, len },
        };
        let fits = blob == 0 && offset.checked_add(len).is_some_and(|end| end <= payload_len);
        match check_backup_payload(&section, payload_len) {
            Ok(at) => {
                prop_assert!(fits);
                prop_assert_eq!(at, offset);
            }
            Err(ContainerError::MissingBlob { .. }) => prop_assert!(blob != 0),
            Err(ContainerError::PayloadOutOfBounds { .. }) => prop_assert!(blob == 0 && !fits),
            Err(e) => prop_assert!(false, "unexpected error {e}"),
        }
    }

    #[test]
    fn packets_round_trip(packets in prop::collection::vec(("[a-z:]{1,8}", prop::collection::vec(any::<u8>(), 0..50)), 0..20),
                          chunk in 1usize..64) {
        let mut tx = SenderPacketTypes::new();
        let mut batch = FrameEncoder::new();
        for (name, data) in &packets {
            tx.encode_packet(name, data, batch.buffer_mut()).unwrap();
        }
        let bytes = batch.take();
        let mut d = FrameDecoder::default();
        let mut rx = ReceiverPacketTypes::new();
        let mut got = Vec::new();
        for part in bytes.chunks(chunk) {
            d.push(part);
            while let Some(f) = d.try_next_frame().unwrap() {
                if let buildat_format::Received::Packet { name, data, .. } = rx.receive(f.ty, &f.data).unwrap() {
                    got.push((name.to_string(), data.to_vec()));
                }
            }
        }
        prop_assert_eq!(got, packets);
        prop_assert_eq!(d.buffered_len(), 0);
    }
}
