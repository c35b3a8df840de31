//! `/metrics`: the server's figures in the Prometheus text format (0.0.4).
//!
//! Owns: the metric names (by Prometheus' conventions: the `buildat_`
//! prefix, `_total` for counters, base units: seconds and bytes), their
//! help and types, label escaping, and writing them from a [`Status`]
//! (the same figures as the status page, gathered by `status.rs`).
//! Counters kept by a module count from that module's start, network's
//! across its reloads; Prometheus takes a counter reset in its stride.
//! Does not own: the figures (the modules owning them).

use std::fmt::Write;
use std::sync::atomic::Ordering;

use buildat_interface::core_api::QUEUE_WAIT_BOUNDS_S;
use buildat_main_api::TICK_BUCKETS;

use crate::Shared;
use crate::status::{self, Status};

pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The figures `/metrics` shows.
pub struct Snapshot {
    pub status: Status,
    pub reloads: Vec<(String, u64)>,
    pub tops_calls: u64,
    pub tops_seconds: f64,
    pub requests: u64,
    pub admin_actions: u64,
    pub cached_blocks: u64,
    /// The map's live feed: streams open, frames made, and the times the
    /// players were asked of the world.
    pub live_streams: u64,
    pub live_frames: u64,
    pub players_asked: u64,
}

pub fn collect(shared: &Shared) -> Snapshot {
    let status = status::collect(shared);
    let counters = shared.counters().clone();
    Snapshot {
        reloads: status
            .modules
            .iter()
            .map(|m| (m.name.clone(), m.reloads))
            .collect(),
        status,
        tops_calls: counters.tops_calls,
        tops_seconds: counters.tops_seconds,
        requests: counters.requests,
        admin_actions: counters.admin_actions,
        cached_blocks: shared.map.cached_blocks() as u64,
        live_streams: shared.live.streams() as u64,
        live_frames: shared.live.frames_made.load(Ordering::Relaxed),
        players_asked: shared.live.players_asked.load(Ordering::Relaxed),
    }
}

/// A label value escaped for the text format.
pub fn escape_label(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// Writes the metrics in the text format.
struct Out(String);

impl Out {
    fn head(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.0, "# HELP {name} {help}");
        let _ = writeln!(self.0, "# TYPE {name} {kind}");
    }

    fn one(&mut self, name: &str, kind: &str, help: &str, value: f64) {
        self.head(name, kind, help);
        self.sample(name, "", value);
    }

    /// A histogram's samples from per-bucket counts (`counts[i]`: at most
    /// `bounds[i]`, above the one before); `labels` go before `le`.
    fn histogram(
        &mut self,
        name: &str,
        labels: &str,
        bounds: &[f64],
        counts: &[u64],
        count: u64,
        sum: f64,
    ) {
        let before = if labels.is_empty() {
            String::new()
        } else {
            format!("{labels},")
        };
        let mut cumulative = 0u64;
        for (bound, n) in bounds.iter().zip(counts) {
            cumulative += n;
            self.sample(
                &format!("{name}_bucket"),
                &format!("{before}le=\"{}\"", number(*bound)),
                cumulative as f64,
            );
        }
        self.sample(
            &format!("{name}_bucket"),
            &format!("{before}le=\"+Inf\""),
            count as f64,
        );
        self.sample(&format!("{name}_sum"), labels, sum);
        self.sample(&format!("{name}_count"), labels, count as f64);
    }

    fn sample(&mut self, name: &str, labels: &str, value: f64) {
        let _ = if labels.is_empty() {
            writeln!(self.0, "{name} {}", number(value))
        } else {
            writeln!(self.0, "{name}{{{labels}}} {}", number(value))
        };
    }
}

fn number(value: f64) -> String {
    if value.is_nan() {
        "NaN".into()
    } else if value.is_infinite() {
        if value > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        }
    } else if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{}", value as i64)
    } else {
        format!("{value}")
    }
}

pub fn render(snapshot: &Snapshot) -> String {
    let status = &snapshot.status;
    let mut out = Out(String::new());
    out.one(
        "buildat_uptime_seconds",
        "gauge",
        "Seconds since the server started.",
        status.uptime_seconds,
    );
    out.one(
        "buildat_players",
        "gauge",
        "Players in the world now.",
        status.players.len() as f64,
    );
    if let Some(network) = &status.network {
        out.one(
            "buildat_connections",
            "gauge",
            "Connections open now.",
            network.peers as f64,
        );
        out.one(
            "buildat_connections_total",
            "counter",
            "Connections admitted.",
            network.connections as f64,
        );
        out.one(
            "buildat_packets_received_total",
            "counter",
            "Packets received from clients.",
            network.packets_in as f64,
        );
        out.one(
            "buildat_packets_sent_total",
            "counter",
            "Packets queued to clients.",
            network.packets_out as f64,
        );
        out.one(
            "buildat_received_bytes_total",
            "counter",
            "Bytes read from clients' connections.",
            network.bytes_in as f64,
        );
        out.one(
            "buildat_sent_bytes_total",
            "counter",
            "Bytes written to clients' connections.",
            network.bytes_out as f64,
        );
    }
    if let Some(world) = &status.world {
        out.one(
            "buildat_chunks_streamed_total",
            "counter",
            "Whole chunks sent to players.",
            world.chunks_streamed as f64,
        );
        out.one(
            "buildat_loaded_sections",
            "gauge",
            "World sections in memory.",
            world.loaded_sections as f64,
        );
        out.one(
            "buildat_unsaved_sections",
            "gauge",
            "Sections with changes not written yet.",
            world.unsaved_sections as f64,
        );
        out.one(
            "buildat_saves_total",
            "counter",
            "World saves finished.",
            world.saves as f64,
        );
        out.one(
            "buildat_save_errors_total",
            "counter",
            "World saves that failed.",
            world.save_errors as f64,
        );
        out.one(
            "buildat_saved_sections_total",
            "counter",
            "Sections written to storage.",
            world.sections_saved as f64,
        );
    }
    out.one(
        "buildat_world_disk_bytes",
        "gauge",
        "Bytes of the world folder on disk.",
        status.world_disk_bytes as f64,
    );
    if let Some(tick) = &status.tick {
        let name = "buildat_tick_duration_seconds";
        out.head(name, "histogram", "How long the game's ticks took.");
        out.histogram(
            name,
            "",
            &TICK_BUCKETS,
            &tick.buckets,
            tick.count,
            tick.sum_seconds,
        );
    }
    if let Some(replicate) = &status.replicate {
        out.one(
            "buildat_replicated_nodes",
            "gauge",
            "Dynamic nodes replication tracks.",
            replicate.nodes as f64,
        );
    }
    if let Some(active) = &status.active {
        for (name, kind, help, value) in [
            (
                "buildat_active_backlog_chunks",
                "gauge",
                "Chunks left of the ABMs' current rounds (what did not fit the budget yet).",
                f64::from(active.backlog_chunks),
            ),
            (
                "buildat_active_chunks",
                "gauge",
                "Chunks in the active area (near players).",
                f64::from(active.active_chunks),
            ),
            (
                "buildat_active_tick_seconds",
                "gauge",
                "Time the last tick spent finding ABMs' voxels.",
                active.last_tick_micros as f64 / 1e6,
            ),
            (
                "buildat_active_tick_p99_seconds",
                "gauge",
                "The 99th percentile of the recent ticks' time finding ABMs' voxels.",
                active.p99_tick_micros as f64 / 1e6,
            ),
            (
                "buildat_active_budget_seconds",
                "gauge",
                "The time a tick may spend finding ABMs' voxels (active.budget_ms).",
                active.budget_micros as f64 / 1e6,
            ),
            (
                "buildat_active_ticks_over_budget_total",
                "counter",
                "Ticks whose ABM work went over the budget.",
                active.ticks_over_budget as f64,
            ),
            (
                "buildat_active_voxels_delivered_total",
                "counter",
                "Voxels delivered to ABMs' modules.",
                active.voxels_delivered as f64,
            ),
            (
                "buildat_active_timers_loaded",
                "gauge",
                "Voxel timers in memory (those of sections in memory).",
                active.timers_loaded as f64,
            ),
            (
                "buildat_active_timers_fired_total",
                "counter",
                "Voxel timers fired.",
                active.timers_fired as f64,
            ),
        ] {
            out.one(name, kind, help, value);
        }
    }
    out.head(
        "buildat_module_queue_depth",
        "gauge",
        "Messages waiting in each module's queue.",
    );
    for module in &status.modules {
        out.sample(
            "buildat_module_queue_depth",
            &format!("module=\"{}\"", escape_label(&module.name)),
            module.queued as f64,
        );
    }
    let name = "buildat_module_queue_wait_seconds";
    out.head(
        name,
        "histogram",
        "How long each module's events and calls waited in its queue before its thread took them.",
    );
    for module in &status.modules {
        let times = &module.times;
        out.histogram(
            name,
            &format!("module=\"{}\"", escape_label(&module.name)),
            &QUEUE_WAIT_BOUNDS_S,
            &times.wait_buckets,
            times.handled,
            times.wait_seconds,
        );
    }
    out.head(
        "buildat_module_busy_seconds_total",
        "counter",
        "Seconds each module's thread spent in its handlers (calls to other modules included).",
    );
    for module in &status.modules {
        out.sample(
            "buildat_module_busy_seconds_total",
            &format!("module=\"{}\"", escape_label(&module.name)),
            module.times.busy_seconds,
        );
    }
    out.head(
        "buildat_module_loaded",
        "gauge",
        "1 for each module loaded and running, 0 for one failed, hung or in transition.",
    );
    for module in &status.modules {
        out.sample(
            "buildat_module_loaded",
            &format!("module=\"{}\"", escape_label(&module.name)),
            if module.state == "loaded" { 1.0 } else { 0.0 },
        );
    }
    out.head(
        "buildat_module_reloads_total",
        "counter",
        "Reloads of each module since the server started.",
    );
    for (module, reloads) in &snapshot.reloads {
        out.sample(
            "buildat_module_reloads_total",
            &format!("module=\"{}\"", escape_label(module)),
            *reloads as f64,
        );
    }
    out.one(
        "buildat_web_tiles_rendered_total",
        "counter",
        "Map tiles drawn by the web module.",
        status.tiles_rendered as f64,
    );
    out.one(
        "buildat_web_tile_failures_total",
        "counter",
        "Map tiles the web module could not draw (answered 503).",
        status.tile_failures as f64,
    );
    out.one(
        "buildat_web_tile_render_seconds_total",
        "counter",
        "Seconds spent drawing map tiles, world calls included.",
        status.tile_seconds,
    );
    out.one(
        "buildat_web_column_tops_calls_total",
        "counter",
        "column_tops calls the map made to the world.",
        snapshot.tops_calls as f64,
    );
    out.one(
        "buildat_web_column_tops_seconds_total",
        "counter",
        "Seconds the map waited on column_tops calls.",
        snapshot.tops_seconds,
    );
    out.one(
        "buildat_web_map_cached_blocks",
        "gauge",
        "Map blocks (128 by 128 columns) the web module keeps.",
        snapshot.cached_blocks as f64,
    );
    out.one(
        "buildat_web_live_streams",
        "gauge",
        "Map pages listening to the live feed (/api/live) now.",
        snapshot.live_streams as f64,
    );
    out.one(
        "buildat_web_live_frames_total",
        "counter",
        "Frames of the live feed made (each encoded once for every page).",
        snapshot.live_frames as f64,
    );
    out.one(
        "buildat_web_players_asked_total",
        "counter",
        "Times the web module asked the world for the players.",
        snapshot.players_asked as f64,
    );
    out.one(
        "buildat_web_requests_total",
        "counter",
        "HTTP requests the web module answered.",
        snapshot.requests as f64,
    );
    out.one(
        "buildat_web_admin_actions_total",
        "counter",
        "Admin actions asked of the web module with the token.",
        snapshot.admin_actions as f64,
    );
    out.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_escaped() {
        assert_eq!(escape_label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }

    /// The active voxels' backlog and timers are metrics when `active` runs.
    #[test]
    fn active_voxels_are_metrics() {
        let snapshot = Snapshot {
            status: Status {
                uptime_seconds: 1.0,
                players: vec![],
                modules: vec![],
                tick: None,
                world: None,
                world_disk_bytes: 0,
                network: None,
                replicate: None,
                active: Some(buildat_active_api::ActiveStats {
                    backlog_chunks: 17,
                    timers_loaded: 100_000,
                    ..Default::default()
                }),
                backups: None,
                tiles_rendered: 0,
                tile_seconds: 0.0,
                tile_failures: 0,
                unavailable: vec![],
            },
            reloads: vec![],
            tops_calls: 0,
            tops_seconds: 0.0,
            requests: 0,
            admin_actions: 0,
            cached_blocks: 0,
            live_streams: 2,
            live_frames: 0,
            players_asked: 0,
        };
        let text = render(&snapshot);
        assert!(
            text.contains("\nbuildat_active_backlog_chunks 17\n"),
            "{text}"
        );
        assert!(
            text.contains("\nbuildat_active_timers_loaded 100000\n"),
            "{text}"
        );
        assert!(text.contains("# TYPE buildat_active_timers_fired_total counter"));
        assert!(text.contains("\nbuildat_web_live_streams 2\n"), "{text}");
        assert!(text.contains("# TYPE buildat_web_players_asked_total counter"));
    }

    #[test]
    fn numbers_are_written_plainly() {
        assert_eq!(number(3.0), "3");
        assert_eq!(number(0.0025), "0.0025");
        assert_eq!(number(f64::INFINITY), "+Inf");
    }
}
