//! Writes small valid inputs for each fuzz target into `DIR/<target>/`
//! (default `fuzz/seeds`), so fuzzing starts from real encodings:
//! `cargo run -p buildat-format --example fuzz_seeds -- fuzz/seeds`.

use std::collections::BTreeMap;
use std::path::Path;

use buildat_format::backup::{
    BackupLogRun, BackupSection, BackupValue, LogRecordBlock, WorldBackup, backup_head,
    encode_log_record,
};
use buildat_format::container::PayloadRef;
use buildat_format::records::{Placement, RecordWriter};
use buildat_format::section::{Node, NodeKind, NodeOptions, SectionWriter};
use buildat_format::writer::Writer;
use buildat_format::{SenderPacketTypes, encode_voxels};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "fuzz/seeds".into());
    let put = |target: &str, name: &str, bytes: &[u8]| -> std::io::Result<()> {
        let d = Path::new(&dir).join(target);
        std::fs::create_dir_all(&d)?;
        std::fs::write(d.join(name), bytes)
    };

    let mut w = Writer::new();
    w.u8(0);
    w.varint(300);
    w.zigzag(-5);
    w.str("stone");
    w.f64_le(1.5);
    put("reader", "primitives", w.as_slice())?;

    let mut rw = RecordWriter::new();
    rw.str("top")?;
    for class in 0..4 {
        let p = (class % 2 == 0).then_some(Placement {
            position: [1.0, 2.0, 3.0],
            range: 8.0,
        });
        rw.begin_record(class, p)?;
        rw.uint(u64::from(class));
        rw.str("body")?;
        rw.bytes(&[1, 2, 3]);
        rw.f32(0.5);
        rw.int(-9);
        rw.end_record()?;
    }
    let stream = rw.finish()?;
    for mode in [0u8, 1, 0x0a] {
        let mut s = vec![mode];
        s.extend_from_slice(stream.get(4..).unwrap_or_default());
        put("records", &format!("stream{mode}"), &s)?;
    }

    let voxels: Vec<u32> = (0..4096u32)
        .map(|i| {
            if i < 2000 {
                1
            } else if i % 97 == 0 {
                3 | (1 << 21)
            } else {
                0
            }
        })
        .collect();
    // voxel_blob: a mode byte (even = whole blob follows, odd = a body follows).
    let mut blob = vec![0u8];
    blob.extend_from_slice(&encode_voxels(&voxels, |id| {
        Some(format!("default:v{id}"))
    })?);
    put("voxel_blob", "chunk", &blob)?;
    let mut empty = vec![0u8];
    empty.extend_from_slice(&encode_voxels(&[], |id| Some(format!("v{id}")))?);
    put("voxel_blob", "empty", &empty)?;
    // Body for 37 voxels: names ["a", "b"], palette [(0,0), (1,3)], runs 20 × a, 17 × b.
    let body = [
        3u8,
        2,
        1,
        b'a',
        1,
        b'b',
        2,
        0,
        0,
        1,
        3,
        19 << 1,
        (16 << 1) | 1,
    ];
    put("voxel_blob", "body37", &body)?;

    let mut sw = SectionWriter::new([1, -2, 3], [32, 32, 32])?;
    sw.add_node(
        &Node {
            id: 7,
            kind: NodeKind::StaticChunk { chunk: [2, -4, 6] },
            vars: BTreeMap::from([("buildat_voxel_data".to_string(), vec![1, 2, 3])]),
        },
        NodeOptions {
            needed_first: true,
            visibility_range: None,
        },
    )?;
    sw.add_node(
        &Node {
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
    )?;
    let section = sw.finish()?;
    put("section", "two_nodes", section.get(4..).unwrap_or_default())?;

    // container: a mode byte, then a world backup (head, then the payloads:
    // the section record above and two bytes of a scratch section).
    let payload = |offset: usize, len: usize| PayloadRef {
        blob: 0,
        offset: offset as u64,
        len: len as u64,
    };
    let log = encode_log_record(&[LogRecordBlock {
        t0: 1_800_000_000_000,
        t1: 1_800_000_010_000,
        area: [0, -1, 1],
        data: b"packed".to_vec(),
    }]);
    let meta = WorldBackup {
        section_size: [2, 2, 2],
        chunk_size: [32, 32, 32],
        next_node_id: 1 << 40,
        settings: "[world]\nseed = 1\n".into(),
        source: "world.sqlite".into(),
        taken_unix_s: 1_800_000_000,
        sections: vec![
            BackupSection {
                pos: [1, -2, 3],
                save_enabled: true,
                generated: true,
                nodes: 2,
                payload: payload(0, section.len()),
            },
            BackupSection {
                pos: [0, 0, -1],
                save_enabled: false,
                generated: false,
                nodes: 0,
                payload: payload(section.len(), 2),
            },
        ],
        values: vec![BackupValue {
            space: "main.accounts".into(),
            key: "ann".into(),
            payload: payload(section.len() + 2, 3),
        }],
        log: vec![BackupLogRun {
            blocks: 1,
            payload: payload(section.len() + 5, log.len()),
        }],
    };
    let mut c = vec![0u8];
    c.extend_from_slice(&backup_head(&meta)?);
    c.extend_from_slice(&section);
    c.extend_from_slice(b"xy");
    c.extend_from_slice(b"ann");
    c.extend_from_slice(&log);
    put("container", "backup", &c)?;

    let mut tx = SenderPacketTypes::new();
    let mut out = vec![3u8];
    tx.encode_packet("core:announce_file", b"abc", &mut out)?;
    tx.encode_packet("core:run_script", b"", &mut out)?;
    tx.encode_packet("core:announce_file", b"def", &mut out)?;
    put("frames", "packets", &out)?;
    Ok(())
}
