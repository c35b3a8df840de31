//! Fuzz target: the section reader (index, load order, pass iteration, node
//! decoding by offset) never panics, and accepted nodes re-encode equal.
#![no_main]

use buildat_format::section::{NodeOptions, PASS_NEEDED_FIRST, SectionReader, SectionWriter};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut buf = b"BSN\x01".to_vec();
    buf.extend_from_slice(data);
    let Ok(r) = SectionReader::open(&buf) else {
        return;
    };
    let _ = r.load_order([1.0, -2.0, 3.0]);
    for n in r.nodes(PASS_NEEDED_FIRST) {
        if n.is_err() {
            break;
        }
    }
    let Ok(index) = r.index() else {
        return;
    };
    let Ok(all) = r.all_nodes() else {
        return;
    };
    assert_eq!(index.len(), all.len());
    let mut w = SectionWriter::new(r.section(), r.chunk_size()).expect("valid header");
    for (nref, node) in &all {
        // Dynamic positions may be NaN: compare through Debug.
        let again = r
            .read_node(nref.offset)
            .expect("node decoded once decodes by offset");
        assert_eq!(format!("{again:?}"), format!("{node:?}"));
        let range = nref.placement.range;
        let opts = NodeOptions {
            needed_first: nref.needed_first,
            visibility_range: (range >= 0.0).then_some(range),
        };
        w.add_node(node, opts).expect("re-encode");
    }
    let again = w.finish().expect("finish");
    let r2 = SectionReader::open(&again).expect("reopen");
    let all2 = r2.all_nodes().expect("re-decode");
    assert_eq!(all2.len(), all.len());
    for ((_, a), (_, b)) in all.iter().zip(&all2) {
        // Dynamic positions may be NaN; compare bit patterns via Debug.
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
    }
});
