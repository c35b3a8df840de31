//! Light map pages for `loadtest --pages N`: threads that ask the web
//! module for what `modules/web/src/assets/map.js` asks when it shows
//! 1100 × 720 pixels at one pixel per voxel around the origin (every tile
//! in view when it opens, the players every second, the change feed every
//! 2 s and the tiles it names), without drawing anything. They measure what
//! the page costs the server, apart from what a browser costs the machine
//! it runs on (on this 2-core machine real browsers take the CPU of the
//! server they measure). They can be paused and resumed, so a run can
//! alternate between pages open and closed.
//!
//! Owns: the page's request pattern. Does not own: HTTP (`http`), the
//! page itself (`modules/web`).

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::http::request;

/// As the page: pixels of the view, pixels (and columns) of a tile.
const VIEW: (i32, i32) = (1100, 720);
const TILE: i32 = 128;

/// The level-0 tiles in view around the origin at one pixel per voxel,
/// as `map.js` lists them.
fn tiles_in_view() -> Vec<(i32, i32)> {
    let (half_w, half_h) = (VIEW.0 / 2, VIEW.1 / 2);
    let mut tiles = Vec::new();
    let mut tz = (-half_h).div_euclid(TILE);
    while tz * TILE < half_h {
        let mut tx = (-half_w).div_euclid(TILE);
        while tx * TILE < half_w {
            tiles.push((tx, tz));
            tx += 1;
        }
        tz += 1;
    }
    tiles
}

/// Running pages; stopped and joined on drop.
pub struct MapPages {
    open: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
    /// Requests answered and failed, by every page.
    pub answered: Arc<AtomicU64>,
    pub failed: Arc<AtomicU64>,
    threads: Vec<JoinHandle<()>>,
}

impl MapPages {
    /// Starts `count` pages on the web page at `web`, closed.
    pub fn start(web: &str, count: u32) -> Self {
        let open = Arc::new(AtomicBool::new(false));
        let stop = Arc::new(AtomicBool::new(false));
        let answered = Arc::new(AtomicU64::new(0));
        let failed = Arc::new(AtomicU64::new(0));
        let threads = (0..count)
            .map(|_| {
                let (web, open, stop) = (web.to_string(), open.clone(), stop.clone());
                let (answered, failed) = (answered.clone(), failed.clone());
                std::thread::spawn(move || {
                    let get = |path: &str| match request(&web, "GET", path, None) {
                        Ok(reply) if reply.status == 200 => {
                            answered.fetch_add(1, Ordering::Relaxed);
                            Some(reply)
                        }
                        _ => {
                            failed.fetch_add(1, Ordering::Relaxed);
                            None
                        }
                    };
                    serve_page(&get, &open, &stop);
                })
            })
            .collect();
        Self {
            open,
            stop,
            answered,
            failed,
            threads,
        }
    }

    /// Opens (true) or closes (false) every page; a page opened again
    /// loads every tile, as a page opened anew.
    pub fn set_open(&self, open: bool) {
        self.open.store(open, Ordering::Relaxed);
    }
}

impl Drop for MapPages {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

/// One page's life: while open, what `map.js` asks for; while closed,
/// nothing.
fn serve_page(
    get: &dyn Fn(&str) -> Option<crate::http::Reply>,
    open: &AtomicBool,
    stop: &AtomicBool,
) {
    let in_view: HashSet<(i32, i32)> = tiles_in_view().into_iter().collect();
    let mut was_open = false;
    let mut seq: Option<u64> = None;
    let (mut next_players, mut next_changes) = (Instant::now(), Instant::now());
    while !stop.load(Ordering::Relaxed) {
        if !open.load(Ordering::Relaxed) {
            was_open = false;
            std::thread::sleep(Duration::from_millis(50));
            continue;
        }
        if !was_open {
            was_open = true;
            seq = None;
            for (x, z) in &in_view {
                get(&format!("/tile/0/{x}/{z}.png"));
            }
        }
        let now = Instant::now();
        if now >= next_players {
            next_players = now + Duration::from_secs(1);
            get("/api/players");
        }
        if now >= next_changes {
            next_changes = now + Duration::from_secs(2);
            let since = seq.unwrap_or(0);
            let changes = get(&format!("/api/changes?since={since}"))
                .and_then(|reply| serde_json::from_slice::<serde_json::Value>(&reply.body).ok());
            if let Some(changes) = changes {
                let reset = changes["reset"] == true;
                let changed: HashSet<(i32, i32)> = changes["blocks"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|b| Some((b[0].as_i64()? as i32, b[1].as_i64()? as i32)))
                    .collect();
                let new_seq = changes["seq"].as_u64();
                if seq.is_some() {
                    for (x, z) in in_view.iter().filter(|t| reset || changed.contains(t)) {
                        get(&format!("/tile/0/{x}/{z}.png?v={}", new_seq.unwrap_or(0)));
                    }
                }
                seq = new_seq;
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_view_is_the_pages_tiles() {
        let tiles = tiles_in_view();
        // x from -550 to 550: tiles -5..=4; z from -360 to 360: -3..=2.
        assert_eq!(tiles.len(), 10 * 6);
        assert!(tiles.contains(&(-5, -3)) && tiles.contains(&(4, 2)));
        assert!(!tiles.contains(&(5, 0)));
    }
}
