//! `buildat-harness mapbench`: how long a real browser takes to draw the
//! web module's map of a square area of generated terrain (issue 19's
//! goal: 1,000 × 1,000 voxels in under 5 s). A server with the default
//! game and the page pregenerates the area, then headless chromium opens
//! the map at one pixel per voxel in a window the size of the area: first
//! with nothing cached on the server (every tile read from stored
//! sections), then again in a new browser (tiles from the server's cache).
//! The tiles' throughput against decoding the same sections raw is
//! `cargo bench -p buildat-module-voxelworld --bench tops_bench`.
//!
//! Owns: this measurement and its table. Does not own: the browser driver
//! (`browser`), the server driver (`server`).

use std::time::Duration;

use anyhow::{Context, bail};

use crate::browser::Browser;
use crate::layout::Layout;
use crate::proc_stats::cpu_percent;
use crate::server::{Server, ServerOptions};

#[derive(Debug, Clone, clap::Args)]
pub struct MapOptions {
    /// Side of the square area drawn, in voxels (also the browser window's
    /// side in pixels: one pixel per voxel).
    #[arg(long, default_value_t = 1000)]
    pub size: u32,
}

pub fn run(layout: &Layout, options: &MapOptions) -> anyhow::Result<bool> {
    let Some(binary) = Browser::binary() else {
        bail!("chromium is missing: scripts/install-browser-deps installs it");
    };
    let size = options.size.clamp(128, 4096);
    // Sections (64 voxels a side in a default world) with x and z within
    // the radius of the origin cover the area centred on it.
    let radius = (size / 2).div_ceil(64);
    let mut server = Server::start(
        layout,
        &ServerOptions {
            world: layout.path("world"),
            extra_module_paths: Vec::new(),
            settings: vec!["web.listen=127.0.0.1:0".to_string()],
            tick_ms: 100,
            watchdog_ms: None,
            slow_handler_ms: None,
            log_file: layout.path("server.log"),
        },
    )?;
    let web = server.web_address()?;
    println!("mapbench: {size} x {size} voxels; pregen --radius {radius} (sections of 64 voxels)");
    server.pump();
    let mut from = server.seen.len();
    server.send(&format!("pregen --radius {radius}"));
    // Its progress, a line a second, until it is done.
    loop {
        let line = server
            .wait_for_from(from, "pregen: ", Duration::from_secs(600))
            .with_context(|| server.failure("pregen went quiet for 10 minutes"))?;
        println!("server: {}", line.trim());
        from = server
            .seen
            .iter()
            .rposition(|seen| *seen == line)
            .map_or(server.seen.len(), |at| at + 1);
        if line.contains("pregen: generated") {
            break;
        }
    }
    let url = format!("http://{web}/map?x=0&z=0&scale=1");
    let everything = "buildatMap.complete() && buildatMap.loaded() == buildatMap.tileCount()";
    println!(
        "{:<28} {:>9} {:>7} {:>9} {:>9}",
        "case", "seconds", "tiles", "tiles/s", "srv CPU%"
    );
    let mut cold_seconds = None;
    for case in ["cold (stored sections)", "warm (server's cache)"] {
        let mut browser = Browser::launch(binary, size, size)?;
        let before = server.sample();
        let started = std::time::Instant::now();
        browser.open(&url)?;
        let drawn = browser.wait_true(everything, Duration::from_secs(120))?;
        let seconds = started.elapsed().as_secs_f64();
        let after = server.sample();
        let Some(_) = drawn else {
            let shown = browser
                .evaluate("[buildatMap.complete(), buildatMap.loaded(), buildatMap.tileCount()]")?;
            let one = browser.evaluate(
                "fetch('/tile/0/0/0.png').then(async r => r.status + ' ' + (r.ok ? '' : await r.text()))",
            )?;
            bail!(
                "{case}: the map was not drawn in 120 s ([complete, loaded, tiles]: {shown}; \
                 a tile now: {one}); the server's last lines:\n{}",
                server.seen[server.seen.len().saturating_sub(20)..].join("\n")
            );
        };
        let tiles = browser
            .evaluate("buildatMap.tileCount()")?
            .as_u64()
            .unwrap_or(0);
        println!(
            "{case:<28} {seconds:>9.2} {tiles:>7} {:>9.0} {:>9.0}",
            tiles as f64 / seconds,
            before.zip(after).map_or(0.0, |(a, b)| cpu_percent(&a, &b))
        );
        cold_seconds.get_or_insert(seconds);
    }
    let met = cold_seconds.is_some_and(|s| s < 5.0);
    println!(
        "goal (the map of {size} x {size} voxels drawn in under 5 s, cold): {}",
        if met { "met" } else { "NOT met" }
    );
    let status = server.stop(Duration::from_secs(60));
    if status != Some(0) {
        println!("server: exit status after `stop`: {status:?}");
    }
    Ok(status == Some(0))
}
