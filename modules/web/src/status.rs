//! The status page and its JSON (`/status`, `/api/players`).
//!
//! Owns: gathering the server's state from the modules that own it (the
//! core's `list_modules`; voxelworld's `list_nodes` of players,
//! `get_stats` and `get_backup_status` (the `backups` row); network's, main's and replicate's `get_stats` and
//! active's `get_active_stats` when those modules are loaded), the world folder's size on disk, and drawing it as
//! one HTML page (escaped, refreshed every 5 s, no script). Does not own:
//! any figure (the modules above), the metrics' names (`metrics.rs`).

use std::fmt::Write;
use std::path::Path;

use buildat_interface::core_api::{LOADER, ListModules, ModuleInfo, ModuleState, QueueTimes};
use buildat_interface::{Call, Host};
use buildat_main_api::{GetTickStats, TickStats, VAR_PEER, VAR_PLAYER};
use buildat_network_api::NetworkStats;
use buildat_voxelworld_api::{ListNodes, WorldStats};
use serde::Serialize;

use crate::Shared;

#[derive(Debug, Clone, Serialize)]
pub struct Player {
    pub name: String,
    pub peer: Option<u64>,
    pub position: [f64; 3],
}

#[derive(Debug, Clone, Serialize)]
pub struct ModuleRow {
    pub name: String,
    /// `loaded`, `building`, `failed: why`, ...
    pub state: String,
    /// The hash of its build inputs (empty for Lua-only modules).
    pub build_id: String,
    /// Messages waiting in its queue.
    pub queued: u64,
    /// Its messages' waits and its handlers' time since the server started.
    pub times: QueueTimes,
    pub loaded_at_unix_ms: u64,
    /// Reloads seen by this module since the server started.
    pub reloads: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Status {
    pub uptime_seconds: f64,
    pub players: Vec<Player>,
    pub modules: Vec<ModuleRow>,
    /// The game's ticks (`main`), when it is loaded.
    pub tick: Option<TickStats>,
    pub world: Option<WorldStats>,
    /// Bytes of the world folder on disk.
    pub world_disk_bytes: u64,
    pub network: Option<NetworkStats>,
    pub replicate: Option<buildat_replicate_api::Stats>,
    /// Active voxels (`active`): the ABMs' backlog and budget, the timers.
    pub active: Option<buildat_active_api::ActiveStats>,
    /// Scheduled backups (`voxelworld`'s `backup.*`) and the last one's end.
    pub backups: Option<buildat_voxelworld_api::BackupStatus>,
    /// Map tiles drawn by this page and the time they took.
    pub tiles_rendered: u64,
    pub tile_seconds: f64,
    pub tile_failures: u64,
    /// What could not be asked (a module not loaded, or failing).
    pub unavailable: Vec<String>,
}

/// The players: nodes with the game's `player` variable.
/// How long an answer of [`players`] is served to other pages.
const PLAYERS_FRESH: std::time::Duration = std::time::Duration::from_millis(500);

/// The players, asked of the world at most every [`PLAYERS_FRESH`]
/// however many pages poll them.
pub fn players(shared: &Shared) -> std::sync::Arc<Vec<Player>> {
    let mut cached = shared.players.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((at, players)) = cached.as_ref()
        && at.elapsed() < PLAYERS_FRESH
    {
        return players.clone();
    }
    let players = std::sync::Arc::new(ask_players(shared));
    *cached = Some((std::time::Instant::now(), players.clone()));
    players
}

fn ask_players(shared: &Shared) -> Vec<Player> {
    shared
        .live
        .players_asked
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let Ok(nodes) = shared.host.call(&ListNodes {
        with_var: Some(VAR_PLAYER.into()),
    }) else {
        return Vec::new();
    };
    let mut players: Vec<Player> = nodes
        .into_iter()
        .filter_map(|node| {
            let name = String::from_utf8_lossy(node.vars.get(VAR_PLAYER)?).into_owned();
            let peer = node
                .vars
                .get(VAR_PEER)
                .and_then(|b| <[u8; 8]>::try_from(b.as_slice()).ok())
                .map(u64::from_le_bytes);
            Some(Player {
                name,
                peer,
                position: node.position,
            })
        })
        .collect();
    players.sort_by(|a, b| a.name.cmp(&b.name));
    players
}

fn state_text(state: &ModuleState) -> String {
    match state {
        ModuleState::Building => "building".into(),
        ModuleState::Loading => "loading".into(),
        ModuleState::Loaded => "loaded".into(),
        ModuleState::Reloading => "reloading".into(),
        ModuleState::Unloading => "unloading".into(),
        ModuleState::Failed(why) => format!("failed: {why}"),
        ModuleState::Hung(why) => format!("hung: {why}"),
    }
}

/// Bytes of the files under `dir` (two levels down).
pub fn disk_bytes(dir: &Path) -> u64 {
    fn walk(dir: &Path, depth: u32) -> u64 {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return 0;
        };
        entries
            .flatten()
            .map(|entry| match entry.metadata() {
                Ok(meta) if meta.is_file() => meta.len(),
                Ok(meta) if meta.is_dir() && depth > 0 => walk(&entry.path(), depth - 1),
                _ => 0,
            })
            .sum()
    }
    walk(dir, 2)
}

/// `call`'s answer if the module answering it is loaded; a failure is
/// noted in `unavailable` as `what`.
fn ask_loaded<C: Call>(
    host: &Host,
    modules: &[ModuleInfo],
    what: &str,
    call: &C,
    unavailable: &mut Vec<String>,
) -> Option<C::Reply> {
    modules
        .iter()
        .any(|m| m.name == C::MODULE && m.state == ModuleState::Loaded)
        .then(|| host.call(call))?
        .map_err(|error| unavailable.push(format!("{what}: {error}")))
        .ok()
}

pub fn collect(shared: &Shared) -> Status {
    let host = &shared.host;
    let mut unavailable = Vec::new();
    let modules = host.call(&ListModules {}).unwrap_or_else(|error| {
        unavailable.push(format!("modules: {error}"));
        Vec::new()
    });
    let counters = {
        let mut counters = shared.counters();
        counters.note_modules(&modules);
        counters.clone()
    };
    // The server started when it loaded its first module.
    let started = modules
        .iter()
        .find(|m| m.name == LOADER)
        .map_or(shared.started_unix_ms(), |m| m.loaded_at_unix_ms);
    let tick = ask_loaded(host, &modules, "tick", &GetTickStats {}, &mut unavailable);
    let world = ask_loaded(
        host,
        &modules,
        "world",
        &buildat_voxelworld_api::GetStats {},
        &mut unavailable,
    );
    let network = ask_loaded(
        host,
        &modules,
        "network",
        &buildat_network_api::GetStats {},
        &mut unavailable,
    );
    let replicate = ask_loaded(
        host,
        &modules,
        "replicate",
        &buildat_replicate_api::GetStats {},
        &mut unavailable,
    );
    let active = ask_loaded(
        host,
        &modules,
        "active",
        &buildat_active_api::GetActiveStats {},
        &mut unavailable,
    );
    let backups = ask_loaded(
        host,
        &modules,
        "backups",
        &buildat_voxelworld_api::GetBackupStatus {},
        &mut unavailable,
    );
    let rows = modules
        .iter()
        .map(|m| ModuleRow {
            name: m.name.clone(),
            state: state_text(&m.state),
            build_id: m.build_hash.clone(),
            queued: m.queued,
            times: m.times.clone(),
            loaded_at_unix_ms: m.loaded_at_unix_ms,
            reloads: counters.reloads.get(&m.name).copied().unwrap_or(0),
        })
        .collect();
    Status {
        uptime_seconds: crate::now_unix_ms().saturating_sub(started) as f64 / 1000.0,
        players: players(shared).as_ref().clone(),
        modules: rows,
        tick,
        world,
        world_disk_bytes: disk_bytes(&host.world_path()),
        network,
        replicate,
        active,
        backups,
        tiles_rendered: counters.tiles_rendered,
        tile_seconds: counters.tile_seconds,
        tile_failures: counters.tile_failures,
        unavailable,
    }
}

/// `text` safe inside HTML.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn duration_text(seconds: f64) -> String {
    let s = seconds as u64;
    match s {
        0..60 => format!("{s} s"),
        60..3600 => format!("{} min {} s", s / 60, s % 60),
        _ => format!("{} h {} min", s / 3600, s % 3600 / 60),
    }
}

fn bytes_text(bytes: u64) -> String {
    match bytes {
        0..1024 => format!("{bytes} B"),
        1024..1_048_576 => format!("{:.1} KiB", bytes as f64 / 1024.0),
        _ => format!("{:.1} MiB", bytes as f64 / 1_048_576.0),
    }
}

const STYLE: &str = "body{font-family:'DejaVu Sans',sans-serif;margin:1.5em;background:#f4f4f0;color:#222}\
h1{font-size:1.4em}h2{font-size:1.1em;margin-top:1.4em}\
table{border-collapse:collapse;background:#fff}td,th{border:1px solid #ccc;padding:.25em .6em;text-align:left}\
th{background:#e4e4dc}.num{text-align:right;font-variant-numeric:tabular-nums}\
.bad{color:#b00}nav a{margin-right:1em}code{font-size:.9em}";

/// The active voxels' row: the backlog and the budget first.
pub fn active_text(active: &buildat_active_api::ActiveStats) -> String {
    format!(
        "backlog {} chunks of {} active; {} ABMs; tick {:.2} ms (p99 {:.2} ms, budget {:.2} ms, \
         {} over); {} voxels delivered; timers {} loaded, {} fired",
        active.backlog_chunks,
        active.active_chunks,
        active.abms,
        active.last_tick_micros as f64 / 1000.0,
        active.p99_tick_micros as f64 / 1000.0,
        active.budget_micros as f64 / 1000.0,
        active.ticks_over_budget,
        active.voxels_delivered,
        active.timers_loaded,
        active.timers_fired
    )
}

/// The scheduled backups' row (HTML, escaped): the schedule, how the last
/// one ended (a failure with its cause) and when the next is due.
pub fn backups_text(backups: &buildat_voxelworld_api::BackupStatus, now_unix_s: u64) -> String {
    let mut out = if backups.every_s == 0 {
        "none scheduled (backup.every)".to_string()
    } else {
        format!(
            "every {}, the newest {} kept",
            duration_text(backups.every_s as f64),
            backups.keep
        )
    };
    if let Some(last) = &backups.last {
        let ago = duration_text(now_unix_s.saturating_sub(last.finished_unix_s) as f64);
        match &last.error {
            None => out.push_str(&format!(
                "; last ok {ago} ago: {} ({})",
                escape(&last.file),
                bytes_text(last.bytes)
            )),
            Some(error) => out.push_str(&format!(
                "; <span class=\"bad\">last FAILED {ago} ago: {}: {}</span>",
                escape(&last.file),
                escape(error)
            )),
        }
    }
    if backups.running {
        out.push_str("; one being written");
    }
    if let Some(next) = backups.next_in_s {
        out.push_str(&format!("; next in {}", duration_text(next as f64)));
    }
    out
}

/// The status page.
pub fn page(status: &Status) -> String {
    let mut html = String::new();
    let _ = write!(
        html,
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>Buildat status</title>\
         <meta http-equiv=\"refresh\" content=\"5\"><style>{STYLE}</style></head><body>\
         <h1>Buildat server</h1><nav><a href=\"/\">status</a><a href=\"/map\">map</a>\
         <a href=\"/metrics\">metrics</a><a href=\"/status\">status JSON</a></nav>"
    );
    let _ = write!(html, "<h2>Server</h2><table>");
    let mut row = |name: &str, value: String| {
        let _ = write!(
            html,
            "<tr><th>{name}</th><td class=\"num\">{value}</td></tr>"
        );
    };
    row("uptime", duration_text(status.uptime_seconds));
    row("players", status.players.len().to_string());
    if let Some(tick) = &status.tick {
        let mean = if tick.count > 0 {
            tick.sum_seconds / tick.count as f64
        } else {
            0.0
        };
        row(
            "game tick",
            format!(
                "{:.2} ms last, {:.2} ms mean over {} ticks; last minute: p50 {:.2} ms, p99 {:.2} ms",
                tick.last_seconds * 1000.0,
                mean * 1000.0,
                tick.count,
                tick.minute_p50_seconds * 1000.0,
                tick.minute_p99_seconds * 1000.0,
            ),
        );
    }
    row("world on disk", bytes_text(status.world_disk_bytes));
    if let Some(world) = &status.world {
        row(
            "world",
            format!(
                "{} sections loaded, {} unsaved, {} chunks streamed, {} saves ({} errors)",
                world.loaded_sections,
                world.unsaved_sections,
                world.chunks_streamed,
                world.saves,
                world.save_errors
            ),
        );
    }
    if let Some(network) = &status.network {
        row(
            "network",
            format!(
                "{} connected, {} connections; in {} packets / {}; out {} packets / {}",
                network.peers,
                network.connections,
                network.packets_in,
                bytes_text(network.bytes_in),
                network.packets_out,
                bytes_text(network.bytes_out)
            ),
        );
    }
    if let Some(replicate) = &status.replicate {
        row(
            "replication",
            format!(
                "{} nodes, {} known by peers, {} packets sent",
                replicate.nodes, replicate.known, replicate.packets_sent
            ),
        );
    }
    if let Some(active) = &status.active {
        row("active voxels", active_text(active));
    }
    if let Some(backups) = &status.backups {
        row(
            "backups",
            backups_text(backups, crate::now_unix_ms() / 1000),
        );
    }
    row(
        "map tiles drawn",
        format!(
            "{} ({:.1} ms each); {} not drawn",
            status.tiles_rendered,
            status.tile_seconds * 1000.0 / status.tiles_rendered.max(1) as f64,
            status.tile_failures
        ),
    );
    let _ = write!(html, "</table>");

    let _ = write!(
        html,
        "<h2>Players</h2><table><tr><th>name</th><th>peer</th><th>x</th><th>y</th><th>z</th></tr>"
    );
    for player in &status.players {
        let [x, y, z] = player.position;
        let _ = write!(
            html,
            "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{x:.1}</td>\
             <td class=\"num\">{y:.1}</td><td class=\"num\">{z:.1}</td></tr>",
            escape(&player.name),
            player.peer.map(|p| p.to_string()).unwrap_or_default()
        );
    }
    if status.players.is_empty() {
        let _ = write!(html, "<tr><td colspan=\"5\">nobody is playing</td></tr>");
    }
    let _ = write!(html, "</table>");

    let _ = write!(
        html,
        "<h2>Modules</h2><table><tr><th>module</th><th>state</th><th>build</th>\
         <th>queue</th><th>wait p99</th><th>busy</th><th>reloads</th></tr>"
    );
    for module in &status.modules {
        let class = if module.state == "loaded" {
            ""
        } else {
            " class=\"bad\""
        };
        let build: String = module.build_id.chars().take(12).collect();
        let _ = write!(
            html,
            "<tr><td>{}</td><td{class}>{}</td><td><code>{}</code></td>\
             <td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{:.1} s</td>\
             <td class=\"num\">{}</td></tr>",
            escape(&module.name),
            escape(&module.state),
            escape(&build),
            module.queued,
            escape(&module.times.wait_percentile_text(99.0)),
            module.times.busy_seconds,
            module.reloads
        );
    }
    let _ = write!(html, "</table>");
    if !status.unavailable.is_empty() {
        let _ = write!(html, "<h2>Not available</h2><ul>");
        for what in &status.unavailable {
            let _ = write!(html, "<li class=\"bad\">{}</li>", escape(what));
        }
        let _ = write!(html, "</ul>");
    }
    let _ = write!(html, "</body></html>");
    html
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_escaped() {
        assert_eq!(escape("<b>&\"'"), "&lt;b&gt;&amp;&quot;&#39;");
    }

    #[test]
    fn the_page_shows_players_and_modules() {
        let status = Status {
            uptime_seconds: 3725.0,
            players: vec![Player {
                name: "<alice>".into(),
                peer: Some(3),
                position: [1.0, 2.0, 3.0],
            }],
            modules: vec![ModuleRow {
                name: "voxelworld".into(),
                state: "loaded".into(),
                build_id: "0123456789abcdef".into(),
                queued: 2,
                times: QueueTimes::default(),
                loaded_at_unix_ms: 0,
                reloads: 1,
            }],
            tick: None,
            world: None,
            world_disk_bytes: 2048,
            network: None,
            replicate: None,
            active: Some(buildat_active_api::ActiveStats {
                backlog_chunks: 17,
                timers_loaded: 5,
                ..Default::default()
            }),
            backups: Some(buildat_voxelworld_api::BackupStatus {
                every_s: 6 * 3600,
                keep: 7,
                last: Some(buildat_voxelworld_api::BackupOutcome {
                    finished_unix_s: crate::now_unix_ms() / 1000 - 30,
                    file: "/w/backups/<b>.backup".into(),
                    bytes: 0,
                    error: Some("No space left on device".into()),
                }),
                next_in_s: Some(60),
                ..Default::default()
            }),
            tiles_rendered: 0,
            tile_seconds: 0.0,
            tile_failures: 0,
            unavailable: vec![],
        };
        let html = page(&status);
        assert!(html.contains("&lt;alice&gt;"));
        assert!(html.contains("1 h 2 min"));
        assert!(html.contains("0123456789ab"));
        assert!(html.contains("2.0 KiB"));
        assert!(html.contains("active voxels"), "{html}");
        assert!(html.contains("backlog 17 chunks"), "{html}");
        assert!(html.contains("timers 5 loaded"), "{html}");
        assert!(html.contains("<th>backups</th>"), "{html}");
        assert!(
            html.contains("every 6 h 0 min, the newest 7 kept"),
            "{html}"
        );
        assert!(
            html.contains("last FAILED 30 s ago: /w/backups/&lt;b&gt;.backup: No space left"),
            "{html}"
        );
        assert!(html.contains("next in 1 min 0 s"), "{html}");
    }
}
