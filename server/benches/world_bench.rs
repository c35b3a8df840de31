//! World module benchmark in an in-process host (release builds of
//! voxelworld, worldgen and the world_probe fixture): get_voxel and
//! set_voxel calls per second from another module, and pregen sections per
//! second. Storage throughput against raw rusqlite + flate2 is in
//! `cargo bench -p buildat-module-voxelworld`. Prints a table.
//!
//! Run: `cargo bench -p buildat-server --bench world_bench`

mod support;

use support::{build_dir, install, repo};

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use buildat_server::config::ServerConfig;
use buildat_server::core::Core;
use buildat_test_world_probe::{Hammer, IsReady};
use buildat_voxelworld_api::Pregen;

const CALLS: u32 = 20_000;
const PREGEN_RADIUS: u32 = 3;

fn host(dir: &Path, modules: &[(&str, PathBuf)], settings: &[(&str, &str)]) -> Core {
    for (name, from) in modules {
        install(&dir.join("modules"), name, from);
    }
    let mut config = ServerConfig::new(dir.join("world"), vec![dir.join("modules")], build_dir());
    config.call_timeout = Duration::from_secs(600);
    for (key, value) in settings {
        config.extra.insert(key.to_string(), value.to_string());
    }
    Core::new(config).expect("core")
}

fn main() {
    let world_modules = [
        ("__loader", repo().join("modules/__loader")),
        ("voxelworld", repo().join("modules/voxelworld")),
        ("worldgen", repo().join("modules/worldgen")),
    ];

    // Pregen on a fresh world.
    let dir = tempfile::tempdir().expect("temp");
    let core = host(dir.path(), &world_modules, &[]);
    core.start().expect("start");
    let started = Instant::now();
    let report = core
        .call_typed(
            &Pregen {
                radius: PREGEN_RADIUS,
                height: 1,
            },
            None,
        )
        .expect("pregen");
    let pregen_rate = report.generated as f64 / started.elapsed().as_secs_f64();
    core.stop_all();

    // Calls from another module.
    let dir = tempfile::tempdir().expect("temp");
    let mut modules = world_modules.to_vec();
    modules.push(("world_probe", repo().join("tests/modules/world_probe")));
    let core = host(dir.path(), &modules, &[("world_probe.idle", "1")]);
    core.start().expect("start");
    while !core.call_typed(&IsReady {}, None).expect("ready") {
        std::thread::sleep(Duration::from_millis(20));
    }
    let (gets, sets) = core
        .call_typed(&Hammer { count: CALLS }, None)
        .expect("hammer");
    core.stop_all();

    println!();
    println!("{:<44} {:>12}", "measure", "buildat");
    println!(
        "{:<44} {:>12.0}",
        "get_voxel calls/s from another module",
        f64::from(CALLS) / (gets as f64 / 1e9)
    );
    println!(
        "{:<44} {:>12.0}",
        "set_voxel calls/s from another module",
        f64::from(CALLS) / (sets as f64 / 1e9)
    );
    println!(
        "{:<44} {:>12.1}",
        format!("pregen sections/s ({} sections)", report.generated),
        pregen_rate
    );
}
