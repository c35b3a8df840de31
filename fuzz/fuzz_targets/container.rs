//! Fuzz target: the container read as a world backup (its one kind) never
//! panics: the header, the head (header and metadata), and every payload ref
//! of a decoded index checked against the payload bytes there are, the
//! `BackupReader` over the same bytes, and the rollback log's records
//! (each run's payload, and the input itself) decoded.
#![no_main]

use buildat_format::backup::{
    BackupReader, WorldBackup, backup_head, backup_head_len, check_backup_payload,
    decode_backup_head, decode_log_record, encode_log_record,
};
use buildat_format::container::{self, HEADER_LEN, decode_primary};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&split, rest)) = data.split_first() else {
        return;
    };
    let _ = container::read_header(rest);
    check(rest);
    check_log_record(rest, u32::from(split));
    // Give the input a valid backup header (of any layout) now and then
    // so bincode is reached.
    let mut framed = b"BWBK".to_vec();
    framed.extend_from_slice(&(1 + u32::from(split % 3)).to_le_bytes());
    let meta_len = (rest.len() as u64).min(u64::from(split));
    framed.extend_from_slice(&meta_len.to_le_bytes());
    framed.extend_from_slice(rest);
    check(&framed);
});

fn check(file: &[u8]) {
    // The reader the server and the world use, over the same bytes.
    if let Ok(mut reader) = BackupReader::open(std::io::Cursor::new(file)) {
        for entry in reader.meta().sections.clone() {
            if let Ok(record) = reader.record(&entry) {
                assert_eq!(record.len() as u64, entry.payload.len);
            }
        }
        for value in reader.meta().values.clone() {
            if let Ok(bytes) = reader.read_payload(&value.payload) {
                assert_eq!(bytes.len() as u64, value.payload.len);
            }
        }
        for run in reader.meta().log.clone() {
            if let Ok(bytes) = reader.read_payload(&run.payload) {
                check_log_record(&bytes, run.blocks);
            }
        }
    }
    let _ = decode_primary::<WorldBackup>(file);
    let _ = backup_head_len(file.get(..HEADER_LEN).unwrap_or(file));
    let Ok(head_len) = backup_head_len(file) else {
        return;
    };
    let Ok(meta) = decode_backup_head(file) else {
        return;
    };
    // The head decoded, so it lies within the bytes; the rest are payloads.
    let payloads = usize::try_from(head_len)
        .ok()
        .and_then(|h| file.get(h..))
        .expect("a decoded head lies within the file");
    let payload_len = payloads.len() as u64;
    for s in &meta.sections {
        if let Ok(at) = check_backup_payload(s, payload_len) {
            assert_eq!(at, s.payload.offset);
            let start = usize::try_from(at).expect("in bounds");
            let len = usize::try_from(s.payload.len).expect("in bounds");
            assert!(payloads.get(start..start + len).is_some());
        }
        let _ = check_backup_payload(s, u64::MAX);
        let _ = check_backup_payload(s, 0);
    }
    // What decoded encodes and decodes back to the same index.
    let head = backup_head(&meta).expect("a decoded index encodes");
    assert_eq!(decode_backup_head(&head).expect("re-decodes"), meta);
}

/// A log record never panics; what decodes encodes back to the same bytes.
fn check_log_record(bytes: &[u8], blocks: u32) {
    if let Ok(decoded) = decode_log_record(bytes, blocks) {
        assert_eq!(decoded.len(), blocks as usize);
        assert_eq!(encode_log_record(&decoded), bytes);
    }
}
