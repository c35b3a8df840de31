//! Models end to end:
//!
//! - in the runtime (no network), the default game's Lua as the server
//!   ships it, fed `replicate:nodes`: another player is drawn with the
//!   player's model facing where it walks, a creature whose node names a
//!   model with that model facing its orientation and moving at its
//!   velocity, a node naming none as a box, and a node gone loses its
//!   model; `buildat.ui.set_model` refuses bad arguments and is bounded;
//! - against the real server running the default game
//!   (`common::game`): offscreen screenshots of the same scene with a
//!   model that Lua placed in front of the camera (`buildat.ui.set_model`,
//!   the player's model the default game ships), and with the same call
//!   naming a broken file and a missing one. The model's pixels differ
//!   from the box a failed model is drawn as; the broken and the missing
//!   file draw the same box; each failure is warned about, naming the file
//!   and the cause.
//!
//! Needs a Vulkan driver (mesa's lavapipe on CI). `BUILDAT_TEST_KEEP_SHOTS=DIR`
//! keeps the pictures to look at.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use buildat_client::sandbox::{MAX_UI_ENTRIES, Runtime};
use buildat_format::Packet;
use buildat_replicate_protocol::{NodeState, NodeUpdates};
use buildat_voxelworld_protocol::DynamicNode;

use crate::common::game::{CLIENT, SERIAL, Setup, text};

/// A graphical runtime running the default game's client Lua (`main`) as
/// the server ships it.
fn game() -> Runtime {
    crate::common::lua::game(&["main"]).0
}

/// A node at `position` with `orientation`, `velocity` and `vars`.
fn node(
    id: u64,
    position: [f64; 3],
    orientation: [f32; 4],
    velocity: [f32; 3],
    vars: &[(&str, &[u8])],
) -> NodeState {
    let vars: BTreeMap<String, Vec<u8>> = vars
        .iter()
        .map(|(name, value)| (name.to_string(), value.to_vec()))
        .collect();
    let mut node = DynamicNode::at_rest(id, position, false, vars);
    node.orientation = orientation;
    node.velocity = velocity;
    NodeState::of(&node)
}

/// Feeds a `replicate:nodes` packet to the runtime's node view and its
/// callbacks.
fn replicate(rt: &Runtime, added: Vec<NodeState>, removed: Vec<u64>) {
    let packet = NodeUpdates {
        time_ms: 1,
        added,
        changed: vec![],
        removed,
    }
    .encode()
    .expect("encodes");
    let applied = rt
        .nodes()
        .borrow_mut()
        .handle_packet(&packet)
        .expect("applies");
    let errors = rt.dispatch_nodes(&applied);
    assert!(errors.is_empty(), "{errors:?}");
}

/// Degrees between two yaws, around the circle.
fn turn(a: f32, b: f32) -> f32 {
    let d = (a - b).rem_euclid(360.0);
    d.min(360.0 - d)
}

#[test]
fn the_default_game_draws_players_and_creatures_with_their_models() {
    let rt = game();
    // A cow turned a quarter about +y (its +z front to +x), walking +x.
    let half = std::f32::consts::FRAC_PI_4;
    let cow = node(
        7,
        [5.0, 10.0, 5.0],
        [0.0, half.sin(), 0.0, half.cos()],
        [1.5, 0.0, 0.0],
        &[
            ("creature", b"cow"),
            ("model", b"creatures/client_data/models/cow.glb"),
        ],
    );
    // Another player, unturned, walking along +z.
    let player = node(
        8,
        [1.0, 10.0, 1.0],
        [0.0, 0.0, 0.0, 1.0],
        [0.0, 0.0, 2.0],
        &[("player", b"other"), ("peer", &9u64.to_le_bytes())],
    );
    // A node naming no model.
    let rock = node(9, [0.0, 10.0, 0.0], [0.0, 0.0, 0.0, 1.0], [0.0; 3], &[]);
    replicate(&rt, vec![cow, player, rock], vec![]);
    let state = rt.ui_state();
    let cow = &state.models["node:7"];
    assert_eq!(cow.file, "creatures/client_data/models/cow.glb");
    assert_eq!(cow.position, [5.0, 10.0, 5.0]);
    assert!(turn(cow.yaw, 0.0) < 1.0, "the cow faces +x: {}", cow.yaw);
    assert!((cow.velocity[0] - 1.5).abs() < 0.01, "{:?}", cow.velocity);
    let other = &state.models["node:8"];
    assert_eq!(other.file, "main/client_data/models/player.glb");
    assert!(
        turn(other.yaw, 90.0) < 1.0,
        "the player faces +z: {}",
        other.yaw
    );
    assert!(!state.boxes.contains_key("node:7") && !state.boxes.contains_key("node:8"));
    assert!(state.boxes.contains_key("node:9") && !state.models.contains_key("node:9"));
    // Gone: no model left.
    replicate(&rt, vec![], vec![7, 8]);
    let state = rt.ui_state();
    assert!(state.models.is_empty(), "{:?}", state.models);
}

#[test]
fn set_model_refuses_bad_arguments_and_is_bounded() {
    let rt = game();
    let values = rt
        .eval_sandboxed(
            "game/client_lua/models.lua",
            &format!(
                r#"
                local ui = buildat.ui
                local nan = pcall(ui.set_model, "a", "m.glb", 0 / 0, 0, 0)
                local empty = pcall(ui.set_model, "a", "", 0, 0, 0)
                local long = pcall(ui.set_model, "a", string.rep("x", 300), 0, 0, 0)
                local infinite_speed = pcall(ui.set_model, "a", "m.glb", 0, 0, 0, 0, math.huge, 0, 0)
                for i = 1, {n} do
                    local ok = pcall(ui.set_model, "m" .. i, "m.glb", i, 0, 0, 45, 1, 0, 0)
                    if not ok then return nan, empty, long, infinite_speed, i end
                end
                return nan, empty, long, infinite_speed, nil
                "#,
                n = MAX_UI_ENTRIES + 10
            ),
        )
        .expect("the script runs to its end");
    let text = format!("{values:?}");
    assert_eq!(
        &text[..text.find("Integer").unwrap_or(text.len())],
        "[Boolean(false), Boolean(false), Boolean(false), Boolean(false), ",
        "NaN, an empty or long name, an infinite speed are refused: {text}"
    );
    assert!(
        text.contains(&format!("Integer({})", MAX_UI_ENTRIES + 1)),
        "models stop after the limit: {text}"
    );
    let state = rt.ui_state();
    assert_eq!(state.models.len(), MAX_UI_ENTRIES);
    let one = &state.models["m1"];
    assert_eq!((one.yaw, one.velocity), (45.0, [1.0, 0.0, 0.0]));
}

/// Places a model three voxels along +x of the spawn point (where the
/// default camera looks), a voxel up, facing the camera.
const PLACER: &str = r#"
local main = require("buildat/module/main")
main.on_spawn(function(_, x, y, z)
    buildat.ui.set_model("test", "@FILE@", x + 3, y + 1, z, 180)
end)
"#;

/// Shoots the scene with the model file `file`; the RGB pixels and stderr.
fn shoot(setup: &Setup, address: &str, file: &str, name: &str) -> (Vec<u8>, String) {
    let script = setup.script(&format!("{name}.lua"), &PLACER.replace("@FILE@", file));
    let path = setup.scratch.path().join(format!("{name}.png"));
    let out = Command::new(CLIENT)
        .args(["--connect", address, "--cache"])
        .arg(setup.cache())
        .args(["--name", name, "--size", "320x180", "--quit-after", "150"])
        .arg("--script")
        .arg(&script)
        .arg("--screenshot")
        .arg(&path)
        .output()
        .expect("run buildat-client --screenshot");
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("screenshot written to") && !stderr.contains("before the world settled"),
        "{stderr}"
    );
    if let Some(keep) = std::env::var_os("BUILDAT_TEST_KEEP_SHOTS") {
        let _ = std::fs::copy(
            &path,
            Path::new(&keep).join(format!("model_e2e_{name}.png")),
        );
    }
    (read_rgb(&path), stderr)
}

fn read_rgb(path: &Path) -> Vec<u8> {
    let bytes = std::fs::read(path).expect("screenshot written");
    let decoder = png::Decoder::new(std::io::Cursor::new(bytes));
    let mut reader = decoder.read_info().expect("a PNG");
    let mut rgb = vec![0; reader.output_buffer_size().expect("size")];
    reader.next_frame(&mut rgb).expect("PNG data");
    rgb
}

/// Pixels whose colour differs by more than 12 in a channel.
fn differing(a: &[u8], b: &[u8]) -> usize {
    assert_eq!(a.len(), b.len());
    a.chunks_exact(3)
        .zip(b.chunks_exact(3))
        .filter(|(p, q)| {
            p.iter()
                .zip(q.iter())
                .any(|(&p, &q)| (i32::from(p) - i32::from(q)).abs() > 12)
        })
        .count()
}

#[test]
fn a_model_is_drawn_and_a_broken_one_is_a_box() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let setup = Setup::new();
    // A broken copy of the player's model beside it in the served module.
    let models = setup.modules.join("main/client_data/models");
    let good = std::fs::read(models.join("player.glb")).expect("the player's model ships");
    std::fs::write(models.join("broken.glb"), &good[..good.len() / 2]).expect("write");
    let (_server, address) = setup.start(&[]);

    let (model, said) = shoot(
        &setup,
        &address,
        "main/client_data/models/player.glb",
        "model",
    );
    assert!(!said.contains("warning: model"), "{said}");
    let (broken, said) = shoot(
        &setup,
        &address,
        "main/client_data/models/broken.glb",
        "broken",
    );
    assert!(
        said.contains("warning: model main/client_data/models/broken.glb: ")
            && said.contains("drawn as a box"),
        "{said}"
    );
    let (missing, said) = shoot(
        &setup,
        &address,
        "main/client_data/models/missing.glb",
        "missing",
    );
    assert!(
        said.contains(
            "warning: model main/client_data/models/missing.glb: the file is not among the \
             client_data files"
        ),
        "{said}"
    );

    // The two failures draw the same box; the model differs from it.
    let boxes = differing(&broken, &missing);
    let drawn = differing(&model, &broken);
    assert!(
        drawn > 150 && drawn > 10 * boxes.max(1),
        "the model differs from the box in {drawn} pixels, the two boxes in {boxes}"
    );
}
