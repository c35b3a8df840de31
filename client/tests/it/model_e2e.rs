//! Models end to end, against the real server running the default game
//! (`common::game`): offscreen screenshots of the same scene with a model
//! that Lua placed in front of the camera (`buildat.ui.set_model`, the
//! player's model the default game ships), and with the same call naming
//! a broken file and a missing one. The model's pixels differ from the
//! box a failed model is drawn as; the broken and the missing file draw
//! the same box; each failure is warned about, naming the file and the
//! cause.
//!
//! Needs a Vulkan driver (mesa's lavapipe on CI). `BUILDAT_TEST_KEEP_SHOTS=DIR`
//! keeps the pictures to look at.

use std::path::Path;
use std::process::Command;

use crate::common::game::{CLIENT, SERIAL, Setup, text};

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
