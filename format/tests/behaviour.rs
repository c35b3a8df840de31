//! Behaviour and error cases of every format: typed errors for wrong magic and
//! version, truncation, limits, conflicts; passes, seeking and load order.

use std::collections::BTreeMap;

use buildat_format::backup::{
    BackupSection, WorldBackup, backup_head, backup_head_len, check_backup_payload,
    decode_backup_head,
};
use buildat_format::container::{
    self, ContainerError, ContainerKind, HEADER_LEN, MAX_META_LEN, PayloadRef, decode_primary,
    primary_head,
};
use buildat_format::magic::MagicError;
use buildat_format::packet::*;
use buildat_format::reader::{ReadError, Reader};
use buildat_format::records::*;
use buildat_format::section::*;
use buildat_format::voxel_blob::*;

// ---------------------------------------------------------------- reader

#[test]
fn reader_parks_on_truncation() {
    let mut r = Reader::new(&[0x80, 0x80]);
    assert!(matches!(
        r.varint(),
        Err(ReadError::Truncated { offset: 0, .. })
    ));
    assert!(r.is_at_end());
    assert_eq!(r.progress(), 1.0);
    let mut r = Reader::new(&[5, 1, 2]);
    assert!(matches!(r.bytes(), Err(ReadError::Truncated { .. })));
    assert!(r.is_at_end());
    assert!(matches!(r.u8(), Err(ReadError::Truncated { .. })));
}

#[test]
fn reader_rejects_bad_varints() {
    assert_eq!(
        Reader::new(&[0x80, 0x00]).varint(),
        Err(ReadError::VarintNotMinimal { offset: 0 })
    );
    assert_eq!(
        Reader::new(&[0xff; 9].iter().copied().chain([0x02]).collect::<Vec<_>>()).varint(),
        Err(ReadError::VarintOverflow { offset: 0 })
    );
    assert_eq!(
        Reader::new(&[0xff; 11]).varint(),
        Err(ReadError::VarintOverflow { offset: 0 })
    );
    assert!(matches!(
        Reader::new(&[0x80, 0x80, 0x80, 0x80, 0x10]).varint_u32(),
        Err(ReadError::OutOfRange { .. })
    ));
    assert!(matches!(
        Reader::new(&[0x01, 0xff]).str(),
        Err(ReadError::InvalidUtf8 { .. })
    ));
    assert!(matches!(
        Reader::new(&[9]).bytes_max(8),
        Err(ReadError::TooLong { .. })
    ));
}

#[test]
fn reader_progress_and_seek() {
    let buf = [1, 2, 3, 4];
    let mut r = Reader::new(&buf);
    assert_eq!(r.progress(), 0.0);
    r.skip(2).unwrap();
    assert_eq!(r.progress(), 0.5);
    assert!(r.seek(5).is_err());
    assert_eq!(r.position(), 2);
    r.seek(4).unwrap();
    assert!(r.is_at_end());
}

// ---------------------------------------------------------------- records

fn sample_stream() -> Vec<u8> {
    let mut w = RecordWriter::new();
    w.str("top").unwrap();
    for i in 0..5u32 {
        let placement = (i % 2 == 0).then_some(Placement {
            position: [i as f32, 0.0, 0.0],
            range: 10.0,
        });
        w.begin_record(i, placement).unwrap();
        w.uint(u64::from(i));
        w.str("body").unwrap();
        w.bytes(&[i as u8; 3]);
        w.end_record().unwrap();
    }
    w.int(-1);
    w.finish().unwrap()
}

#[test]
fn records_pass_skip_and_seek() {
    let g = sample_stream();
    let mut r = RecordReader::open(&g).unwrap();
    r.set_pass(Pass::only(1).with(3));
    let mut served = Vec::new();
    let mut offsets = Vec::new();
    while let Some(e) = r.next_entry().unwrap() {
        if let Entry::Record(h) = e {
            offsets.push(r.record_offset().unwrap());
            assert_eq!(h.offset, r.record_offset().unwrap());
        }
        served.push(e);
    }
    // top str, 2 records × (marker + 3 entries), trailing int
    assert_eq!(served.len(), 1 + 2 * 4 + 1);
    assert_eq!(r.progress(), 1.0);

    // skip_to_record_end after peeking at one entry
    let mut r = RecordReader::open(&g).unwrap();
    let mut ids = Vec::new();
    while let Some(h) = r.next_record().unwrap() {
        let Some(Entry::UInt(id)) = r.next_in_record().unwrap() else {
            panic!()
        };
        assert_eq!(id, u64::from(h.class));
        ids.push(id);
        r.skip_to_record_end();
    }
    assert_eq!(ids, [0, 1, 2, 3, 4]);

    // Seek back to a remembered record, whatever the pass.
    let mut r = RecordReader::open(&g).unwrap();
    r.set_pass(Pass::NONE);
    let h = r.seek_record(offsets[1]).unwrap();
    assert_eq!(h.class, 3);
    assert_eq!(r.next_in_record().unwrap(), Some(Entry::UInt(3)));
    assert_eq!(r.next_in_record().unwrap(), Some(Entry::Str("body")));
    assert_eq!(r.next_in_record().unwrap(), Some(Entry::Bytes(&[3, 3, 3])));
    assert_eq!(r.next_in_record().unwrap(), None);
    assert!(r.current_record().is_none());
    // Pass NONE: the rest serves only the trailing top-level entry.
    assert_eq!(r.next_entry().unwrap(), Some(Entry::Int(-1)));
    assert_eq!(r.next_entry().unwrap(), None);

    assert!(matches!(
        r.seek_record(4),
        Err(RecordError::OffsetOutOfRange { .. }) | Err(RecordError::NotARecord { .. })
    ));
    assert!(matches!(
        r.seek_record(g.len()),
        Err(RecordError::OffsetOutOfRange { .. })
    ));
}

#[test]
fn records_reject_malformed() {
    let open = |body: &[u8]| {
        let mut b = RECORD_STREAM_MAGIC.to_vec();
        b.push(0); // empty string table
        b.extend_from_slice(body);
        b
    };
    let drain = |b: &[u8]| -> Result<usize, RecordError> {
        let mut r = RecordReader::open(b)?;
        let mut n = 0;
        while r.next_entry()?.is_some() {
            n += 1;
        }
        Ok(n)
    };
    assert!(matches!(
        drain(&open(&[7])),
        Err(RecordError::UnknownTag { tag: 7, .. })
    ));
    assert!(matches!(
        drain(&open(&[0])),
        Err(RecordError::BadStringIndex { .. })
    ));
    assert!(matches!(
        drain(&open(&[0x09, 1])),
        Err(RecordError::NonZeroHeadPayload { .. })
    ));
    assert!(matches!(
        drain(&open(&[0x16, 0, 0])),
        Err(RecordError::UnknownFlags { .. })
    ));
    assert!(matches!(
        drain(&open(&[0x06, 64, 0])),
        Err(RecordError::ClassOutOfRange { .. })
    ));
    assert!(matches!(
        drain(&open(&[0x06, 0, 9, 1])),
        Err(RecordError::Read(ReadError::Truncated { .. }))
    ));
    assert!(matches!(
        drain(&open(&[0x06, 0, 3, 0x06, 0, 0, 1])),
        Err(RecordError::NestedRecord { .. })
    ));
    // A u64 entry whose varint runs past its record's span.
    assert!(matches!(
        drain(&open(&[0x06, 0, 2, 0x01, 0x80, 0x01])),
        Err(RecordError::CrossesRecordEnd { .. })
    ));
    assert!(matches!(drain(&open(&[0x06, 0, 0])), Ok(1)));

    let mut b = open(&[]);
    b[3] = 2;
    assert!(matches!(
        RecordReader::open(&b),
        Err(RecordError::Magic(MagicError::WrongVersion {
            found: 2,
            expected: 1,
            ..
        }))
    ));
    b[0] = b'X';
    assert!(matches!(
        RecordReader::open(&b),
        Err(RecordError::Magic(MagicError::WrongMagic { .. }))
    ));
}

#[test]
fn records_writer_errors() {
    let mut w = RecordWriter::new();
    assert_eq!(
        w.begin_record(64, None),
        Err(RecordError::WriteClassOutOfRange(64))
    );
    assert_eq!(w.end_record(), Err(RecordError::NoOpenRecord));
    w.begin_record(1, None).unwrap();
    assert_eq!(w.begin_record(1, None), Err(RecordError::RecordAlreadyOpen));
    assert_eq!(w.finish(), Err(RecordError::UnfinishedRecord));
}

// ---------------------------------------------------------------- voxel blob

fn name_of(id: u32) -> Option<String> {
    Some(format!("test:voxel{id}"))
}

fn id_of(name: &str) -> Option<u32> {
    name.strip_prefix("test:voxel")?.parse().ok()
}

#[test]
fn voxel_blob_round_trips_and_maps_names() {
    let mut v: Vec<u32> = (0..32 * 32 * 32)
        .map(|i| if i < 20000 { 3 } else { 0 })
        .collect();
    v[5] = 7 | (0xff << 21);
    v[100] = 0x1f_ffff;
    let b = encode_voxels(&v, name_of).unwrap();
    assert_eq!(b[0], VOXEL_BLOB_V1);
    assert_eq!(peek_voxel_count(&b).unwrap(), v.len() as u64);
    let d = decode_voxels(&b, id_of, 0).unwrap();
    assert_eq!(d.voxels, v);
    assert!(d.unknown_names.is_empty());

    // A registry that lost voxel 7: its voxels get the placeholder, upper bits kept.
    let d = decode_voxels(&b, |n| id_of(n).filter(|&i| i != 7), 1).unwrap();
    assert_eq!(d.unknown_names, ["test:voxel7"]);
    assert_eq!(d.voxels[5], 1 | (0xff << 21));

    assert!(matches!(
        decode_voxels(&b, |_| Some(1 << 21), 0),
        Err(VoxelBlobError::TypeIdOutOfRange { .. })
    ));
    assert!(matches!(
        decode_voxels(&b, id_of, 1 << 21),
        Err(VoxelBlobError::PlaceholderOutOfRange(_))
    ));
    assert_eq!(
        encode_voxels(&[1, 2], |i| (i == 1).then_some("a")),
        Err(VoxelBlobError::UnnamedType(2))
    );

    let empty = encode_voxels(&[], name_of).unwrap();
    assert_eq!(
        decode_voxels(&empty, id_of, 0).unwrap().voxels,
        Vec::<u32>::new()
    );
}

#[test]
fn voxel_blob_rejects_bad_input() {
    let b = encode_voxels(&[1, 1, 2], name_of).unwrap();
    assert_eq!(decode_voxels(&[], id_of, 0), Err(VoxelBlobError::Empty));
    let mut other = b.clone();
    other[0] = 2;
    assert_eq!(
        decode_voxels(&other, id_of, 0),
        Err(VoxelBlobError::UnknownFormat(2))
    );
    let limits = DecodeLimits {
        max_voxels: 2,
        ..DecodeLimits::default()
    };
    assert!(matches!(
        decode_voxels_with_limits(&b, id_of, 0, &limits),
        Err(VoxelBlobError::TooManyVoxels { count: 3, max: 2 })
    ));
    // Truncated zlib stream.
    assert!(decode_voxels(&b[..b.len() - 2], id_of, 0).is_err());
    // Trailing garbage.
    let mut t = b.clone();
    t.push(0);
    assert!(matches!(
        decode_voxels(&t, id_of, 0),
        Err(VoxelBlobError::TrailingBytes(1))
    ));
}

/// A header and a valid zlib stream around a hand-made body.
fn wrap_body(count: u64, body: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut w = buildat_format::Writer::new();
    w.u8(VOXEL_BLOB_V1);
    w.varint(count);
    w.varint(body.len() as u64);
    let mut z = flate2::write::ZlibEncoder::new(w.into_vec(), flate2::Compression::new(6));
    z.write_all(body).unwrap();
    z.finish().unwrap()
}

#[test]
fn voxel_blob_rejects_bad_bodies() {
    let dec = |count, body: &[u8]| decode_voxels(&wrap_body(count, body), id_of, 0);
    // names ["test:voxel1"], palette [(0, 0)], one run of 4.
    let mut ok = vec![1, 11];
    ok.extend_from_slice(b"test:voxel1");
    ok.extend_from_slice(&[1, 0, 0, 3]);
    assert_eq!(dec(4, &ok).unwrap().voxels, [1, 1, 1, 1]);
    // Run past the count, including a run length of u64::MAX + 1.
    assert!(matches!(
        dec(3, &ok),
        Err(VoxelBlobError::RunOverflow { .. })
    ));
    let mut huge = ok[..ok.len() - 1].to_vec();
    huge.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]);
    assert!(matches!(
        dec(4, &huge),
        Err(VoxelBlobError::RunOverflow { .. })
    ));
    // Runs short of the count.
    assert!(matches!(dec(5, &ok), Err(VoxelBlobError::Read(_))));
    // Bytes after the last run.
    let mut t = ok.clone();
    t.push(0);
    assert!(matches!(dec(4, &t), Err(VoxelBlobError::TrailingBody(1))));
    // Palette index out of range: 3 entries (bits = 2), run head 3 = index 3.
    let mut b = vec![1, 11];
    b.extend_from_slice(b"test:voxel1");
    b.extend_from_slice(&[3, 0, 0, 0, 1, 0, 2, 3]);
    assert!(matches!(
        dec(5, &b),
        Err(VoxelBlobError::BadPaletteIndex { index: 3, .. })
    ));
    // Name index out of range, high bits over 11 bits, palette larger than count.
    assert!(matches!(
        dec(1, &[0, 1, 0, 0, 0]),
        Err(VoxelBlobError::BadStringIndex { .. })
    ));
    assert!(matches!(
        dec(1, &[1, 1, b'a', 1, 0, 0x80, 0x10, 0]),
        Err(VoxelBlobError::HighBitsOutOfRange { .. })
    ));
    assert!(matches!(
        dec(1, &[1, 1, b'a', 2, 0, 0, 0, 1, 0]),
        Err(VoxelBlobError::BadPaletteLen { .. })
    ));
    assert!(matches!(
        dec(1, &[0, 0]),
        Err(VoxelBlobError::BadPaletteLen { .. })
    ));
}

#[test]
fn voxel_blob_zip_bomb_is_an_error() {
    // A real bomb: 64 MiB of zeros deflates to ~64 KiB; declare a small body.
    let zeros = vec![0u8; 64 << 20];
    let mut z = Vec::new();
    {
        use std::io::Write;
        let mut e = flate2::write::ZlibEncoder::new(&mut z, flate2::Compression::new(9));
        e.write_all(&zeros).unwrap();
        e.finish().unwrap();
    }
    let mut b = vec![VOXEL_BLOB_V1, 0x80, 0x80, 0x02]; // 32768 voxels
    b.extend_from_slice(&[0x80, 0x80, 0x01]); // body_len 16384
    b.extend_from_slice(&z);
    assert!(matches!(
        decode_voxels(&b, id_of, 0),
        Err(VoxelBlobError::BodyLengthMismatch {
            declared: 16384,
            ..
        })
    ));
    // Declared body over the limit: refused before inflating.
    let mut b = vec![VOXEL_BLOB_V1, 1, 0xff, 0xff, 0xff, 0x7f];
    b.extend_from_slice(&z);
    assert!(matches!(
        decode_voxels(&b, id_of, 0),
        Err(VoxelBlobError::BodyTooLarge { .. })
    ));
    // Declared body impossible for the stream's size.
    let mut b = vec![VOXEL_BLOB_V1, 1, 0x80, 0x80, 0x80, 0x04];
    b.extend_from_slice(&z[..16]);
    assert!(matches!(
        decode_voxels(&b, id_of, 0),
        Err(VoxelBlobError::BodyImplausible { .. })
    ));
}

// ---------------------------------------------------------------- section

#[test]
fn section_load_order() {
    let mut w = SectionWriter::new([0, 0, 0], [32, 32, 32]).unwrap();
    let node = |id, kind| Node {
        id,
        kind,
        vars: BTreeMap::from([("v".to_string(), vec![id as u8])]),
    };
    let far = NodeKind::StaticChunk { chunk: [1, 1, 1] };
    let near = NodeKind::StaticChunk { chunk: [0, 0, 0] };
    let dyn_mid = NodeKind::Dynamic {
        position: [30.0, 30.0, 30.0],
    };
    w.add_node(&node(1, far), NodeOptions::default()).unwrap();
    w.add_node(
        &node(2, far),
        NodeOptions {
            needed_first: true,
            ..Default::default()
        },
    )
    .unwrap();
    w.add_node(&node(3, near), NodeOptions::default()).unwrap();
    w.add_node(
        &node(4, dyn_mid),
        NodeOptions {
            needed_first: true,
            visibility_range: Some(5.0),
        },
    )
    .unwrap();
    w.add_node(&node(5, dyn_mid), NodeOptions::default())
        .unwrap();
    let b = w.finish().unwrap();
    let r = SectionReader::open(&b).unwrap();
    let order = r.load_order([0.0, 0.0, 0.0]).unwrap();
    let ids: Vec<u64> = order
        .iter()
        .map(|n| r.read_node(n.offset).unwrap().id)
        .collect();
    assert_eq!(ids, [2, 4, 3, 5, 1]);

    let first: Vec<u64> = r
        .nodes(PASS_NEEDED_FIRST)
        .map(|n| n.unwrap().1.id)
        .collect();
    assert_eq!(first, [2, 4]);
    let rest: Vec<u64> = r.nodes(PASS_REST).map(|n| n.unwrap().1.id).collect();
    assert_eq!(rest, [1, 3, 5]);
    assert_eq!(r.all_nodes().unwrap().len(), 5);

    assert!(matches!(
        SectionWriter::new([0, 0, 0], [0, 1, 1]),
        Err(SectionError::BadChunkSize(_))
    ));
    let mut bad = b.clone();
    bad[3] = 9;
    assert!(matches!(
        SectionReader::open(&bad),
        Err(SectionError::Magic(MagicError::WrongVersion {
            found: 9,
            ..
        }))
    ));
    // A record stream is not a section.
    let rs = RecordWriter::new().finish().unwrap();
    assert!(matches!(
        SectionReader::open(&rs),
        Err(SectionError::Magic(MagicError::WrongMagic { .. }))
    ));
}

// ---------------------------------------------------------------- container

/// A backup of two sections whose payloads (`data`, `more!`) follow its head.
fn backup_file() -> (Vec<u8>, WorldBackup) {
    let section = |pos, offset, len| BackupSection {
        pos,
        save_enabled: true,
        generated: true,
        nodes: 1,
        payload: PayloadRef {
            blob: 0,
            offset,
            len,
        },
    };
    let meta = WorldBackup {
        section_size: [2, 2, 2],
        chunk_size: [32, 32, 32],
        next_node_id: 5,
        settings: String::new(),
        source: "w".into(),
        taken_unix_s: 0,
        sections: vec![section([0, 0, 0], 0, 4), section([1, 0, 0], 4, 5)],
        values: Vec::new(),
        log: Vec::new(),
    };
    let mut file = backup_head(&meta).unwrap();
    file.extend_from_slice(b"datamore!");
    (file, meta)
}

/// Another kind, to show kinds do not mix.
#[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
struct TestMeta {
    refs: Vec<PayloadRef>,
}
impl ContainerKind for TestMeta {
    const MAGIC: [u8; 4] = *b"TEST";
    const VALIDITY_TOKEN: u32 = 0xabcd;
}

#[test]
fn container_kinds_do_not_mix() {
    let (backup, meta) = backup_file();
    let other = primary_head(&TestMeta {
        refs: vec![meta.sections[0].payload],
    })
    .unwrap();
    assert!(matches!(
        decode_primary::<TestMeta>(&backup),
        Err(ContainerError::WrongMagic { .. })
    ));
    assert!(matches!(
        decode_primary::<WorldBackup>(&other),
        Err(ContainerError::WrongMagic { .. })
    ));
    assert!(matches!(
        backup_head_len(&other),
        Err(ContainerError::WrongMagic {
            expected: [b'B', b'W', b'B', b'K'],
            found: [b'T', b'E', b'S', b'T'],
        })
    ));
    assert_eq!(
        decode_primary::<TestMeta>(&other).unwrap().0.refs,
        [meta.sections[0].payload]
    );

    let mut stale = backup.clone();
    stale[4] = 4;
    assert_eq!(
        decode_backup_head(&stale).unwrap_err(),
        ContainerError::ValidityToken {
            expected: 3,
            found: 4
        }
    );
    assert_eq!(
        backup_head_len(&stale).unwrap_err(),
        ContainerError::ValidityToken {
            expected: 3,
            found: 4
        }
    );
    assert!(matches!(
        decode_backup_head(&backup[..10]),
        Err(ContainerError::Truncated { len: 10 })
    ));
    assert!(matches!(
        decode_backup_head(&backup[..20]),
        Err(ContainerError::MetaTruncated { .. })
    ));
}

#[test]
fn container_head_payloads_and_bounds() {
    let (file, meta) = backup_file();
    let h = container::read_header(&file).unwrap();
    assert_eq!(h.magic, *b"BWBK");
    assert_eq!(h.validity_token, 3);
    let head_len = backup_head_len(&file[..HEADER_LEN]).unwrap();
    assert_eq!(head_len, HEADER_LEN as u64 + h.meta_len);
    assert_eq!(file.len() as u64, head_len + 9);
    // The head alone decodes; the payloads are everything after it.
    assert_eq!(
        decode_backup_head(&file[..head_len as usize]).unwrap(),
        meta
    );
    let (decoded, payloads) = decode_primary::<WorldBackup>(&file).unwrap();
    assert_eq!(decoded, meta);
    assert_eq!(payloads, b"datamore!");
    let at = check_backup_payload(&meta.sections[1], payloads.len() as u64).unwrap();
    assert_eq!(at, 4);
    assert_eq!(&payloads[4..9], b"more!");

    // A payload past the end, overflowing, or in a blob other than 0.
    let mut s = meta.sections[1].clone();
    assert!(matches!(
        check_backup_payload(&s, 8),
        Err(ContainerError::PayloadOutOfBounds { section_len: 8, .. })
    ));
    s.payload.offset = u64::MAX;
    assert!(matches!(
        check_backup_payload(&s, u64::MAX),
        Err(ContainerError::PayloadOutOfBounds { .. })
    ));
    s.payload = PayloadRef {
        blob: 1,
        offset: 0,
        len: 1,
    };
    assert!(matches!(
        check_backup_payload(&s, 9),
        Err(ContainerError::MissingBlob { blob: 1, count: 1 })
    ));
    // An empty payload at the very end is in bounds.
    s.payload = PayloadRef {
        blob: 0,
        offset: 9,
        len: 0,
    };
    assert_eq!(check_backup_payload(&s, 9), Ok(9));

    // Metadata followed by junk inside meta_len.
    let mut junk = file.clone();
    junk[8..16].copy_from_slice(&(h.meta_len + 1).to_le_bytes());
    assert!(matches!(
        decode_primary::<WorldBackup>(&junk),
        Err(ContainerError::MetaTrailing { .. }) | Err(ContainerError::Meta(_))
    ));
    // meta_len over the limit is refused from the header alone.
    let mut huge = file[..HEADER_LEN].to_vec();
    huge[8..16].copy_from_slice(&(MAX_META_LEN as u64 + 1).to_le_bytes());
    assert!(matches!(
        backup_head_len(&huge),
        Err(ContainerError::MetaTooLarge { .. })
    ));
    assert!(matches!(
        decode_backup_head(&huge),
        Err(ContainerError::MetaTooLarge { .. })
    ));
}

// ---------------------------------------------------------------- packets

#[test]
fn frame_decoder_incremental_and_limits() {
    let mut enc = FrameEncoder::new();
    enc.push(120, b"hello").unwrap();
    enc.push(121, &[]).unwrap();
    enc.push(122, &[9; 1000]).unwrap();
    assert_eq!(enc.frame_count(), 3);
    let bytes = enc.take();
    assert!(enc.is_empty());

    let mut d = FrameDecoder::new(1000);
    let mut frames = Vec::new();
    for b in &bytes {
        d.push(std::slice::from_ref(b));
        while let Some(f) = d.try_next_frame().unwrap() {
            frames.push(f);
        }
    }
    assert_eq!(frames.len(), 3);
    assert_eq!(frames[0].data, b"hello");
    assert_eq!(frames[2].data.len(), 1000);
    assert_eq!(d.buffered_len(), 0);

    d.push(&[1, 0, 5]);
    assert_eq!(d.try_next_frame().unwrap(), None);
    assert_eq!(d.buffered_len(), 3);
    assert_eq!(d.pending_header(), None);
    d.push(&[0, 0, 0, b'a']);
    assert_eq!(d.pending_header(), Some((1, 5)));
    assert_eq!(d.try_next_frame().unwrap(), None);
    assert_eq!(d.buffered_len(), 7);

    // Oversized size field: refused from the header alone, and sticky.
    let mut d = FrameDecoder::new(1000);
    d.push(&[100, 0, 0xff, 0xff, 0xff, 0xff]);
    let e = FrameError::TooLarge {
        ty: 100,
        size: u32::MAX,
        max: 1000,
    };
    assert_eq!(d.try_next_frame(), Err(e.clone()));
    d.push(&[0; 10]);
    assert_eq!(d.try_next_frame(), Err(e));

    // The decoder survives a serde round trip with its partial frame.
    let mut d = FrameDecoder::new(1000);
    d.push(&bytes[..20]);
    while d.try_next_frame().unwrap().is_some() {}
    let cfg = bincode::config::standard();
    let saved = bincode::serde::encode_to_vec(&d, cfg).unwrap();
    let (mut d2, _): (FrameDecoder, usize) =
        bincode::serde::decode_from_slice(&saved, cfg).unwrap();
    d2.push(&bytes[20..]);
    let mut n = 0;
    while d2.try_next_frame().unwrap().is_some() {
        n += 1;
    }
    assert!(n >= 1);
    assert_eq!(d2.buffered_len(), 0);
}

fn def(ty: u16, name: &[u8]) -> Vec<u8> {
    let mut d = ty.to_le_bytes().to_vec();
    d.extend_from_slice(&(name.len() as u32).to_le_bytes());
    d.extend_from_slice(name);
    d
}

#[test]
fn receiver_table_errors() {
    let mut rx = ReceiverPacketTypes::with_max_name_len(16);
    assert_eq!(
        rx.accept_definition(&def(100, b"a:b")).unwrap(),
        (100, "a:b")
    );
    // Repeating a definition is fine.
    assert_eq!(
        rx.accept_definition(&def(100, b"a:b")).unwrap(),
        (100, "a:b")
    );
    assert!(matches!(
        rx.accept_definition(&def(100, b"a:c")),
        Err(PacketTypeError::Conflict { ty: 100, .. })
    ));
    assert!(matches!(
        rx.accept_definition(&def(101, b"a:b")),
        Err(PacketTypeError::NameTaken { .. })
    ));
    assert_eq!(
        rx.accept_definition(&def(0, b"x")),
        Err(PacketTypeError::DefineZero)
    );
    assert_eq!(
        rx.accept_definition(&def(1, b"x")),
        Err(PacketTypeError::Reserved(1))
    );
    assert_eq!(
        rx.accept_definition(&def(99, b"x")),
        Err(PacketTypeError::Reserved(99))
    );
    assert_eq!(
        rx.accept_definition(&def(102, &[0xff, 0xfe])),
        Err(PacketTypeError::InvalidUtf8(102))
    );
    assert!(matches!(
        rx.accept_definition(&def(102, &[b'a'; 17])),
        Err(PacketTypeError::NameTooLong { len: 17, max: 16 })
    ));
    assert_eq!(
        rx.accept_definition(&def(102, b"")),
        Err(PacketTypeError::EmptyName)
    );
    assert_eq!(
        rx.accept_definition(&def(102, DEFINE_PACKET_TYPE_NAME.as_bytes()[..16].as_ref()))
            .map(|(t, _)| t),
        Ok(102)
    );
    assert!(matches!(
        rx.accept_definition(&[1, 2, 3]),
        Err(PacketTypeError::MalformedDefinition { .. })
    ));
    let mut trailing = def(103, b"ab");
    trailing.push(0);
    assert!(matches!(
        rx.accept_definition(&trailing),
        Err(PacketTypeError::MalformedDefinition { .. })
    ));
    // A huge name_len is judged before any slicing or allocation.
    let mut huge = 104u16.to_le_bytes().to_vec();
    huge.extend_from_slice(&u32::MAX.to_le_bytes());
    assert!(matches!(
        rx.accept_definition(&huge),
        Err(PacketTypeError::NameTooLong { .. })
    ));
    assert_eq!(rx.name_of(555), Err(PacketTypeError::Undefined(555)));
    assert_eq!(rx.name_of(50), Err(PacketTypeError::Undefined(50)));
    assert_eq!(rx.name_of(0), Ok(DEFINE_PACKET_TYPE_NAME));
    assert_eq!(
        rx.receive(100, b"x").unwrap(),
        Received::Packet {
            ty: 100,
            name: "a:b",
            data: b"x"
        }
    );
    let d = def(110, b"q");
    assert_eq!(
        rx.receive(0, &d).unwrap(),
        Received::Definition { ty: 110, name: "q" }
    );
    assert_eq!(rx.type_of("q"), Some(110));

    let full = ReceiverPacketTypes::new();
    assert!(matches!(
        full.name_of(7),
        Err(PacketTypeError::Undefined(7))
    ));
}

#[test]
fn sender_table_assigns_defines_and_serialises() {
    let mut tx = SenderPacketTypes::new();
    let mut out = Vec::new();
    assert_eq!(tx.type_for("a", &mut out).unwrap(), 100);
    let first_len = out.len();
    assert_eq!(tx.type_for("a", &mut out).unwrap(), 100);
    assert_eq!(out.len(), first_len, "definition only on first use");
    assert_eq!(tx.type_for("b", &mut out).unwrap(), 101);
    assert_eq!(tx.type_for("", &mut out), Err(PacketTypeError::EmptyName));
    assert_eq!(
        tx.type_for(DEFINE_PACKET_TYPE_NAME, &mut out),
        Err(PacketTypeError::ReservedName)
    );
    assert!(matches!(
        tx.type_for(&"x".repeat(257), &mut out),
        Err(PacketTypeError::NameTooLong { .. })
    ));

    let cfg = bincode::config::standard();
    let saved = bincode::serde::encode_to_vec(&tx, cfg).unwrap();
    let (mut tx2, _): (SenderPacketTypes, usize) =
        bincode::serde::decode_from_slice(&saved, cfg).unwrap();
    assert_eq!(tx2, tx);
    assert_eq!(tx2.type_for("c", &mut out).unwrap(), 102);

    // The receiver fed the sender's output agrees.
    let mut d = FrameDecoder::default();
    d.push(&out);
    let mut rx = ReceiverPacketTypes::new();
    while let Some(f) = d.try_next_frame().unwrap() {
        rx.receive(f.ty, &f.data).unwrap();
    }
    assert_eq!(rx.name_of(102).unwrap(), "c");
    let saved = bincode::serde::encode_to_vec(&rx, cfg).unwrap();
    let (rx2, _): (ReceiverPacketTypes, usize) =
        bincode::serde::decode_from_slice(&saved, cfg).unwrap();
    assert_eq!(rx2, rx);

    // Exhaustion after 65436 names.
    let mut tx = SenderPacketTypes::new();
    let mut sink = Vec::new();
    for i in 0..(65536 - 100) {
        tx.type_for(&format!("n{i}"), &mut sink).unwrap();
        sink.clear();
    }
    assert_eq!(
        tx.type_for("one-more", &mut sink),
        Err(PacketTypeError::Exhausted)
    );
}

#[test]
fn packet_reader_and_writer() {
    let mut w = PacketWriter::default();
    assert_eq!(w.write("core:announce_file", b"a").unwrap(), 100);
    assert_eq!(w.write("core:run_script", b"b").unwrap(), 101);
    assert_eq!(w.write("core:announce_file", b"c").unwrap(), 100);
    let bytes = w.take();
    assert!(w.pending().is_empty());
    let mut r = PacketReader::new(1024, 64);
    r.push(&bytes[..bytes.len() - 1]);
    let mut got = Vec::new();
    while let Some(p) = r.try_next_packet().unwrap() {
        got.push((p.name, p.data));
    }
    assert_eq!(got.len(), 2);
    assert_eq!(r.buffered_len(), 6);
    // Carried across a "reload" mid-frame.
    let cfg = bincode::config::standard();
    let saved = bincode::serde::encode_to_vec(&r, cfg).unwrap();
    let (mut r, _): (PacketReader, usize) = bincode::serde::decode_from_slice(&saved, cfg).unwrap();
    r.push(&bytes[bytes.len() - 1..]);
    let p = r.try_next_packet().unwrap().unwrap();
    assert_eq!(
        (p.ty, p.name.as_str(), p.data.as_slice()),
        (100, "core:announce_file", &b"c"[..])
    );
    assert_eq!(r.types().name_of(101).unwrap(), "core:run_script");

    let mut r = PacketReader::default();
    r.push(&[200, 0, 0, 0, 0, 0]);
    assert_eq!(
        r.try_next_packet(),
        Err(PacketReadError::Type(PacketTypeError::Undefined(200)))
    );
}

#[test]
fn a_reader_bounds_its_table_and_shows_every_definition() {
    let mut w = PacketWriter::default();
    w.write("a:one", b"1").unwrap();
    w.write("a:one", b"2").unwrap();
    w.write("a:two", b"3").unwrap();
    let mut bytes = w.take();
    // A repeated definition is accepted, and still a frame the caller sees.
    encode_frame(
        &mut bytes,
        DEFINE_PACKET_TYPE,
        &encode_definition(100, "a:one").unwrap(),
    )
    .unwrap();
    let mut r = PacketReader::with_limits(1024, 64, 1);
    r.push(&bytes);
    let mut items = Vec::new();
    let error = loop {
        match r.next_item() {
            Ok(Some(ReadItem::Definition)) => items.push("definition".to_string()),
            Ok(Some(ReadItem::Packet(p))) => items.push(p.name),
            Ok(None) => panic!("the second type must be refused"),
            Err(error) => break error,
        }
    };
    assert_eq!(items, ["definition", "a:one", "a:one"]);
    assert_eq!(
        error,
        PacketReadError::Type(PacketTypeError::TooManyTypes { max: 1 })
    );
    let mut r = PacketReader::with_limits(1024, 64, 2);
    r.push(&bytes);
    let mut definitions = 0;
    while let Some(item) = r.next_item().unwrap() {
        definitions += usize::from(item == ReadItem::Definition);
    }
    assert_eq!(definitions, 3, "two new and one repeat");
}
