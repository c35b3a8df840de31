//! The client's world view without a server: stream packets fed through
//! `WorldView::handle_packet` (the same call the connection loop makes)
//! and through a runtime's view read from Lua (`buildat.world`): held
//! counts, updates, unloads, voxel lookups by name, acks batched, paused and
//! resumed, malformed packets counted and still acknowledged, a registry
//! change; then the ASCII map of a synthetic world and its PNG (decoded
//! back with the `png` crate).

use buildat_format::Packet;
use buildat_voxelworld_protocol::stream::{Chunk, Light, Registry, UnloadChunk, VoxelUpdates};

use crate::common::world_data::*;
use buildat_client::sandbox::{Level, LogSink, Options, Runtime};
use buildat_client::world::{BlockKind, Column, Handled, WorldView};
use mlua::Value;

fn feed(view: &mut WorldView, name: &str, data: &[u8]) -> Handled {
    view.handle_packet(name, data)
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn stone_or_air(p: [i32; 3]) -> &'static str {
    if p[1] < 5 { "stone" } else { "air" }
}

#[test]
fn chunks_are_held_updated_and_unloaded() {
    let registry = registry();
    let mut view = WorldView::new();
    assert_eq!(
        feed(&mut view, buildat_main_protocol::Edits::NAME, b"whatever"),
        Handled::NotWorld,
        "other packets are not the view's"
    );
    assert_eq!(
        feed(&mut view, Registry::NAME, &registry_packet(&registry)),
        Handled::Registry { types: 9 }
    );
    for chunk in [[0, 0, 0], [1, 0, 0], [0, -1, 0]] {
        assert_eq!(
            feed(
                &mut view,
                Chunk::NAME,
                &chunk_packet(&registry, chunk, &terrain)
            ),
            Handled::Chunk {
                chunk,
                update: false
            }
        );
    }
    assert_eq!(view.chunk_count(), 3);
    assert_eq!(view.voxel_name([0, 10, 0]).as_deref(), Some("grass"));
    assert_eq!(
        view.voxel_name([-9, 10, 0]),
        None,
        "chunk (-1,0,0) is not held"
    );
    assert_eq!(view.voxel_name([40, 10, 31]).as_deref(), Some("stone"));
    assert_eq!(view.voxel_name([40, 11, 31]).as_deref(), Some("air"));
    assert_eq!(view.voxel_name([5, -20, 5]).as_deref(), Some("stone"));
    assert_eq!(view.voxel_name([20, 10, 20]).as_deref(), Some("coal_ore"));

    // The same chunk again is an update: held count unchanged.
    assert_eq!(
        feed(
            &mut view,
            Chunk::NAME,
            &chunk_packet(&registry, [0, 0, 0], &stone_or_air)
        ),
        Handled::Chunk {
            chunk: [0, 0, 0],
            update: true
        }
    );
    assert_eq!(view.voxel_name([0, 10, 0]).as_deref(), Some("air"));
    assert_eq!(view.voxel_name([0, 4, 0]).as_deref(), Some("stone"));

    assert_eq!(
        feed(&mut view, UnloadChunk::NAME, &unload_packet([1, 0, 0])),
        Handled::Unload {
            chunk: [1, 0, 0],
            held: true
        }
    );
    assert_eq!(
        feed(&mut view, UnloadChunk::NAME, &unload_packet([9, 9, 9])),
        Handled::Unload {
            chunk: [9, 9, 9],
            held: false
        }
    );
    assert_eq!(view.voxel_name([40, 10, 31]), None, "unloaded");
    assert!(!view.holds([1, 0, 0]));
    let stats = view.stats();
    assert_eq!(
        (
            stats.held,
            stats.chunk_packets,
            stats.updates,
            stats.unloads
        ),
        (2, 4, 1, 2)
    );
    assert_eq!(stats.first_chunk, Some([0, 0, 0]));
    assert_eq!(
        stats.summary_line(),
        "world: held 2 chunks, received 4 chunk packets (1 updates), first chunk (0,0,0); 2 unloaded"
    );
    // Coming back after an unload is not an update.
    feed(
        &mut view,
        Chunk::NAME,
        &chunk_packet(&registry, [1, 0, 0], &terrain),
    );
    assert_eq!(view.stats().updates, 1);
    assert_eq!(view.chunk_count(), 3);
}

#[test]
fn a_held_chunk_keeps_its_light_until_it_changes_or_leaves() {
    let registry = registry();
    let mut view = WorldView::new();
    feed(&mut view, Registry::NAME, &registry_packet(&registry));
    let light_packet = |chunk, light: &[u8]| {
        Light {
            chunk,
            light: buildat_format::encode_light(light).unwrap(),
        }
        .encode()
        .unwrap()
    };
    let mut light = vec![0xf0u8; 32 * 32 * 32];
    light[5] = 0x0e;
    assert_eq!(
        feed(&mut view, Light::NAME, &light_packet([0, 0, 0], &light)),
        Handled::Light {
            chunk: [0, 0, 0],
            held: false
        },
        "light of a chunk not held is dropped"
    );
    feed(
        &mut view,
        Chunk::NAME,
        &chunk_packet(&registry, [0, 0, 0], &terrain),
    );
    assert_eq!(view.light([5, 0, 0]), None, "not come yet");
    assert_eq!(
        feed(&mut view, Light::NAME, &light_packet([0, 0, 0], &light)),
        Handled::Light {
            chunk: [0, 0, 0],
            held: true
        }
    );
    assert_eq!(view.light([5, 0, 0]), Some(0x0e));
    assert_eq!(view.light([6, 0, 0]), Some(0xf0));
    light[5] = 0;
    feed(&mut view, Light::NAME, &light_packet([0, 0, 0], &light));
    assert_eq!(view.light([5, 0, 0]), Some(0), "replaced whole");
    assert!(
        view.handle_packet(Light::NAME, &light_packet([0, 0, 0], &[1, 2]))
            .is_err(),
        "a chunk's light is 32768 bytes"
    );
    feed(
        &mut view,
        UnloadChunk::NAME,
        &UnloadChunk { chunk: [0, 0, 0] }.encode().unwrap(),
    );
    assert_eq!(view.light([5, 0, 0]), None, "gone with its chunk");
    assert_eq!(view.stats().lights, 4);
}

#[test]
fn acks_are_batched_paused_and_resumed() {
    let registry = registry();
    let mut view = WorldView::new();
    feed(&mut view, Registry::NAME, &registry_packet(&registry));
    assert_eq!(view.take_ack(), None, "a registry is not a chunk");
    for x in 0..3 {
        feed(
            &mut view,
            Chunk::NAME,
            &chunk_packet(&registry, [x, 0, 0], &terrain),
        );
    }
    let ack = view.take_ack_packet().expect("an ack");
    assert_eq!(ack.chunks, 3, "one ack for the batch");
    assert_eq!(view.take_ack(), None, "nothing new");

    view.set_acking(false);
    for x in 3..8 {
        feed(
            &mut view,
            Chunk::NAME,
            &chunk_packet(&registry, [x, 0, 0], &terrain),
        );
    }
    feed(
        &mut view,
        Chunk::NAME,
        &chunk_packet(&registry, [3, 0, 0], &terrain),
    );
    assert_eq!(view.take_ack(), None, "paused");
    assert_eq!(view.unacked(), 6);
    assert_eq!(view.chunk_count(), 8, "chunks are still kept while paused");
    view.set_acking(true);
    assert_eq!(view.take_ack(), Some(6), "everything received meanwhile");
    assert_eq!(view.stats().acked, 9);
}

#[test]
fn malformed_packets_are_counted_and_still_acked() {
    let registry = registry();
    let mut view = WorldView::new();
    feed(&mut view, Registry::NAME, &registry_packet(&registry));
    assert!(view.handle_packet(Chunk::NAME, b"\x01\x02").is_err());
    let bad_blob = encoded(&Chunk {
        chunk: [0, 0, 0],
        blob: vec![0x7f, 1, 2, 3],
    });
    assert!(view.handle_packet(Chunk::NAME, &bad_blob).is_err());
    let short = encoded(&Chunk {
        chunk: [0, 0, 0],
        blob: buildat_format::encode_voxels(&[2u32; 10], |id| registry.get_name(id)).expect("blob"),
    });
    let error = view
        .handle_packet(Chunk::NAME, &short)
        .expect_err("10 voxels");
    assert!(error.to_string().contains("10 voxels"), "{error}");
    assert!(view.handle_packet(Registry::NAME, b"").is_err());
    assert!(view.handle_packet(UnloadChunk::NAME, b"\xff").is_err());
    let stats = view.stats();
    assert_eq!(
        (stats.held, stats.chunk_packets, stats.malformed),
        (0, 3, 5)
    );
    assert_eq!(stats.first_chunk, None);
    assert_eq!(
        view.take_ack(),
        Some(3),
        "the server's budget must not leak"
    );
    assert!(
        stats
            .summary_line()
            .ends_with("first chunk none; 1 unloaded; 5 malformed"),
        "{}",
        stats.summary_line()
    );

    // A name the registry lacks reads as `unknown`, with one warning.
    let values = chunk_values(&registry, [0, 0, 0], &terrain);
    let grass = registry.get_id("grass").expect("grass");
    for _ in 0..2 {
        feed(
            &mut view,
            Chunk::NAME,
            &chunk_packet_of(&registry, [0, 0, 0], &values, Some((grass, "mystery"))),
        );
    }
    assert_eq!(view.voxel_name([0, 10, 0]).as_deref(), Some("unknown"));
    assert_eq!(view.voxel_name([0, 9, 0]).as_deref(), Some("stone"));
    let warnings = view.take_warnings();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("\"mystery\""), "{warnings:?}");
}

#[test]
fn a_new_registry_keeps_held_voxels_by_name() {
    let registry = registry();
    let mut view = WorldView::new();
    feed(&mut view, Registry::NAME, &registry_packet(&registry));
    feed(
        &mut view,
        Chunk::NAME,
        &chunk_packet(&registry, [0, 0, 0], &terrain),
    );
    // The server's registry changes: a new block first, ids shift.
    let mut voxels = buildat_voxel::VoxelRegistry::default();
    let mut blocks = buildat_voxel::BlockRegistry::default();
    for name in ["glass", "grass", "stone"] {
        blocks
            .add(
                buildat_voxel::BlockDefinition::simple(name, "t.png"),
                &mut voxels,
            )
            .expect("block");
    }
    feed(&mut view, Registry::NAME, &registry_packet(&voxels));
    assert_eq!(view.voxel_name([0, 10, 0]).as_deref(), Some("grass"));
    assert_eq!(view.voxel_name([0, 9, 0]).as_deref(), Some("stone"));
    assert_eq!(
        view.voxel_name([9, 10, 0]).as_deref(),
        Some("unknown"),
        "dirt is gone"
    );
    assert_eq!(view.voxel_name([0, 20, 0]).as_deref(), Some("air"));
}

fn map_world(focus: Option<[f64; 3]>) -> WorldView {
    let registry = registry();
    let mut view = WorldView::new();
    feed(&mut view, Registry::NAME, &registry_packet(&registry));
    for chunk in MAP_CHUNKS {
        feed(
            &mut view,
            Chunk::NAME,
            &chunk_packet(&registry, chunk, &terrain),
        );
    }
    // An all-air chunk above: still "held", changes nothing.
    feed(
        &mut view,
        Chunk::NAME,
        &chunk_packet(&registry, [0, 1, 0], &|_| "air"),
    );
    if let Some(f) = focus {
        assert!(view.set_focus(f));
    }
    view
}

#[test]
fn the_ascii_map_shows_the_top_voxel_per_column() {
    let mut view = map_world(Some([0.5, 11.0, 0.5]));
    let top = view.top_view(24);
    assert_eq!(top.center, [0, 11, 0]);
    assert_eq!(
        top.at(-20, 5),
        Column::Top {
            kind: BlockKind::Water,
            y: 10
        }
    );
    assert_eq!(
        top.at(20, 20),
        Column::Top {
            kind: BlockKind::Ore,
            y: 10
        }
    );
    assert_eq!(
        top.at(-3, 3),
        Column::Top {
            kind: BlockKind::Other,
            y: 10
        }
    );
    assert_eq!(top.at(-3, -3), Column::NotHeld);
    let map = top.ascii();
    print!("{map}");
    let lines: Vec<&str> = map.lines().collect();
    assert!(lines[0].contains("focus (0,11,0) is @"), "{}", lines[0]);
    assert!(lines[0].contains("x -24..24") && lines[0].contains("z -24..24"));
    assert!(lines[1].starts_with("legend: # stone"));
    let border = format!("+{}+", "-".repeat(49));
    assert_eq!(lines[2], border);
    assert_eq!(lines[2 + 50], border);
    assert_eq!(lines.len(), 53);
    let row = |z: i32| lines[(3 + z + 24) as usize];
    // z < 0: x < 0 is not held.
    let expected: String = terrain_row(-5, false)
        .chars()
        .enumerate()
        .map(|(i, c)| if i < 24 { ' ' } else { c })
        .collect();
    assert_eq!(row(-5), format!("|{expected}|"));
    assert_eq!(row(0), format!("|{}|", terrain_row(0, true)));
    assert_eq!(row(3), format!("|{}|", terrain_row(3, false)));
    assert_eq!(&row(3)[1 + 21..1 + 22], "?", "the lamp");
    assert_eq!(&row(20)[1 + 44..1 + 45], "*", "the ore");
    assert!(
        row(5).starts_with("|~~~~~~~~~~~~~~~~........\"\"\"\"\"\"\"\"%%%%%%%%#########"),
        "{}",
        row(5)
    );

    // No focus: centred on the first chunk's middle.
    let mut view = map_world(None);
    let top = view.top_view(4);
    assert_eq!(top.center, [16, 16, 16]);
    assert!(
        top.ascii()
            .starts_with("map: top-down, highest held voxel per column; no focus set")
    );
}

#[test]
fn the_png_map_is_written_and_decodes() {
    let mut view = map_world(Some([0.5, 11.0, 0.5]));
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("map.png");
    view.top_view(24).write_png(&path).expect("png written");
    let decoder = png::Decoder::new(std::io::BufReader::new(
        std::fs::File::open(&path).expect("open"),
    ));
    let mut reader = decoder.read_info().expect("png header");
    let mut data = vec![0; reader.output_buffer_size().expect("size")];
    let info = reader.next_frame(&mut data).expect("png data");
    let scale = buildat_client::world::PNG_PIXELS_PER_COLUMN as i32;
    assert_eq!(
        (info.width, info.height),
        (49 * scale as u32, 49 * scale as u32)
    );
    assert_eq!(info.color_type, png::ColorType::Rgb);
    // The centre pixel of each column's square.
    let pixel = |dx: i32, dz: i32| {
        let (x, y) = ((dx + 24) * scale + scale / 2, (dz + 24) * scale + scale / 2);
        let i = ((y * 49 * scale + x) * 3) as usize;
        [data[i], data[i + 1], data[i + 2]]
    };
    assert_eq!(pixel(0, 0), [255, 0, 0], "the focus");
    assert_eq!(pixel(-3, -3), [0, 0, 0], "not held");
    let [r, g, b] = pixel(-20, 5);
    assert!(b > 2 * r && b > g, "water is blue: {r},{g},{b}");
    let [r, g, b] = pixel(4, 5);
    assert!(g > r && g > b, "grass is green: {r},{g},{b}");
    let [r, g, b] = pixel(20, 5);
    assert!(r == g && g == b && r > 50, "stone is grey: {r},{g},{b}");
    // Unwritable place: an error, not a panic.
    assert!(
        view.top_view(2)
            .write_png(&dir.path().join("no/such/dir/map.png"))
            .is_err()
    );
}

fn runtime() -> Runtime {
    Runtime::new(Options {
        log: LogSink::new(Level::Info, |_, _, _| {}),
        ..Options::default()
    })
    .expect("runtime")
}

#[test]
fn lua_reads_the_world_and_controls_acking_and_focus() {
    let rt = runtime();
    let registry = registry();
    {
        let mut view = rt.world().borrow_mut();
        feed(&mut view, Registry::NAME, &registry_packet(&registry));
        feed(
            &mut view,
            Chunk::NAME,
            &chunk_packet(&registry, [0, 0, 0], &terrain),
        );
        feed(
            &mut view,
            Chunk::NAME,
            &chunk_packet(&registry, [0, 0, 0], &terrain),
        );
    }
    let values = rt
        .eval_sandboxed(
            "game/client_lua/init.lua",
            r#"
            local w = buildat.world
            assert(table.isfrozen(w))
            assert(not pcall(function() w.get_voxel = nil end))
            assert(w.get_voxel(0, 10, 0) == "grass")
            assert(w.get_voxel(0.9, 10.2, 0.1) == "grass", "coordinates are floored")
            assert(w.get_voxel(-1, 10, 0) == nil, "not held")
            assert(not pcall(w.get_voxel, 0 / 0, 0, 0))
            assert(not pcall(w.get_voxel, "x", 0, 0))
            assert(not pcall(w.set_acking, 1))
            assert(not pcall(w.set_focus, 1, math.huge, 1))
            w.set_acking(false)
            w.set_focus(3.5, 12, -4.25)
            return w.chunk_count(), w.chunks_received()
            "#,
        )
        .expect("the world API works");
    assert!(
        matches!(values.as_slice(), [Value::Integer(1), Value::Integer(2)]),
        "{values:?}"
    );
    let mut view = rt.world().borrow_mut();
    assert!(!view.acking());
    assert_eq!(view.take_ack(), None);
    assert_eq!(view.focus(), Some([3.5, 12.0, -4.25]));
    assert_eq!(view.map_center(), ([3, 12, -5], true));
    drop(view);
    rt.eval_sandboxed(
        "other/client_lua/init.lua",
        "buildat.world.set_acking(true)",
    )
    .expect("resume");
    assert_eq!(rt.world().borrow_mut().take_ack(), Some(2));
}

#[test]
fn single_voxel_updates_apply_to_held_chunks() {
    let registry = registry();
    let mut view = WorldView::new();
    feed(&mut view, Registry::NAME, &registry_packet(&registry));
    feed(
        &mut view,
        Chunk::NAME,
        &chunk_packet(&registry, [0, 0, 0], &terrain),
    );
    // A chunk of one voxel kind (all air) is stored compactly; an update
    // must still land.
    feed(
        &mut view,
        Chunk::NAME,
        &chunk_packet(&registry, [0, 1, 0], &stone_or_air),
    );
    let stone = registry.get_id("stone").expect("stone");
    let air = registry.get_id("air").expect("air");
    let index = |p: [i32; 3]| buildat_voxel::geometry::index_in_chunk(p) as u16;
    let updates = VoxelUpdates {
        chunk: [0, 0, 0],
        changes: vec![
            (index([0, 10, 0]), air),
            (index([3, 20, 4]), stone),
            (index([3, 20, 4]), air),
            (index([5, 25, 5]), stone),
        ],
    };
    assert_eq!(
        feed(&mut view, VoxelUpdates::NAME, &encoded(&updates)),
        Handled::Voxels {
            chunk: [0, 0, 0],
            count: 4,
            held: true
        }
    );
    assert_eq!(view.voxel_name([0, 10, 0]).as_deref(), Some("air"));
    assert_eq!(
        view.voxel_name([3, 20, 4]).as_deref(),
        Some("air"),
        "in order: the last one wins"
    );
    assert_eq!(view.voxel_name([5, 25, 5]).as_deref(), Some("stone"));
    let uniform = VoxelUpdates {
        chunk: [0, 1, 0],
        changes: vec![(index([1, 33, 1]), stone)],
    };
    feed(&mut view, VoxelUpdates::NAME, &encoded(&uniform));
    assert_eq!(view.voxel_name([1, 33, 1]).as_deref(), Some("stone"));
    assert_eq!(view.voxel_name([2, 33, 1]).as_deref(), Some("air"));
    let elsewhere = VoxelUpdates {
        chunk: [7, 7, 7],
        changes: vec![(0, stone)],
    };
    assert_eq!(
        feed(&mut view, VoxelUpdates::NAME, &encoded(&elsewhere)),
        Handled::Voxels {
            chunk: [7, 7, 7],
            count: 1,
            held: false
        },
        "a chunk not held: dropped"
    );
    let past_the_end = VoxelUpdates {
        chunk: [0, 0, 0],
        changes: vec![(40_000, stone)],
    };
    assert!(
        view.handle_packet(VoxelUpdates::NAME, &encoded(&past_the_end))
            .is_err()
    );
    assert!(view.handle_packet(VoxelUpdates::NAME, &[1, 2]).is_err());
    let stats = view.stats();
    assert_eq!(
        (stats.voxel_updates, stats.malformed, stats.updates),
        (5, 2, 0)
    );
    assert!(stats.summary_line().contains("; 5 voxel updates"));
}

#[test]
fn chunks_decode_when_first_read_and_a_bad_body_reads_as_unknown() {
    let registry = registry();
    let mut view = WorldView::new();
    feed(&mut view, Registry::NAME, &registry_packet(&registry));
    let values = chunk_values(&registry, [2, 0, 0], &terrain);
    let mut blob =
        buildat_format::encode_voxels(&values, |id| registry.get_name(id)).expect("blob");
    // The header (format, voxel count) is whole; the compressed body is cut.
    blob.truncate(blob.len() / 2);
    let packet = encoded(&Chunk {
        chunk: [2, 0, 0],
        blob,
    });
    assert_eq!(
        feed(&mut view, Chunk::NAME, &packet),
        Handled::Chunk {
            chunk: [2, 0, 0],
            update: false
        },
        "held: only the header is read on arrival"
    );
    assert_eq!(view.stats().malformed, 0);
    assert_eq!(view.voxel_name([70, 10, 5]).as_deref(), Some("unknown"));
    assert_eq!(view.stats().malformed, 1, "counted once, when first read");
    assert_eq!(view.voxel_name([71, 10, 5]).as_deref(), Some("unknown"));
    assert_eq!(view.stats().malformed, 1);
    let warnings = view.take_warnings();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("does not decode"), "{warnings:?}");
}

/// A packet's payload, by its definition (the harness's one helper).
#[allow(unused_imports)]
pub use buildat_harness::raw_client::encoded;
