//! The `web` module in the real server: `/metrics` parses as the
//! Prometheus text format (a strict parser below) and counts what
//! happened, `/status` lists the player and the modules, tiles show the
//! terrain, admin actions need the token, and the page survives `reload
//! web`; then a real headless browser (Debian's `chromium` over the
//! DevTools protocol, through a pipe) draws the map, sees the terrain and
//! a walking bot's marker move, and takes the screenshots of
//! docs/operators.md (written to docs/images/ when
//! `BUILDAT_DOCS_IMAGES=1`, else to target/web-screenshots/).

use std::collections::{BTreeMap, HashSet};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use buildat_harness::browser::Browser;
use buildat_harness::http::{Reply, request};
use buildat_harness::raw_client::RawClient;
use buildat_main_api::{Dig, Move};

use crate::common::{Scratch, Server, repo_root, start_server, wait_until};

/// A port free now (for a page that must keep its port across a reload).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// The server with the default game and `web`; answers it with the game's
/// and the page's addresses.
fn start(scratch: &Scratch) -> (Server, String, String) {
    let web = format!("127.0.0.1:{}", free_port());
    start_with(scratch, &web, &[])
}

/// [`start`] with the page on `web` (`ADDRESS:PORT`) and more `settings`
/// (`KEY=VALUE`).
fn start_with(scratch: &Scratch, web: &str, settings: &[&str]) -> (Server, String, String) {
    scratch.add_game();
    scratch.add_web();
    let mut args = scratch.server_args();
    args.extend(
        [
            "--listen",
            "127.0.0.1:0",
            "--no-watch",
            "--set",
            &format!("web.listen={web}"),
            "--set",
            "voxelworld.view_radius=3",
            "--set",
            "main.free_movement=true",
        ]
        .map(String::from),
    );
    for setting in settings {
        args.extend(["--set".to_string(), setting.to_string()]);
    }
    let mut server = start_server(&args, Stdio::piped());
    let address = server.listen_address();
    let line = server.expect_line("web page at ", Duration::from_secs(300));
    assert!(line.contains(web), "{line}");
    server.expect_line("server started", Duration::from_secs(120));
    (server, address, web.to_string())
}

// ---------------------------------------------------------------------
// HTTP through the harness's small client.

fn get(address: &str, path: &str) -> Reply {
    request(address, "GET", path, None).unwrap_or_else(|e| panic!("GET {path}: {e}"))
}

fn post(address: &str, path: &str, token: Option<&str>) -> Reply {
    request(address, "POST", path, token).unwrap_or_else(|e| panic!("POST {path}: {e}"))
}

// ---------------------------------------------------------------------
// A strict parser of the Prometheus text format (0.0.4).

#[derive(Debug, Clone, PartialEq)]
struct Sample {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

#[derive(Debug, Default)]
struct Exposition {
    /// Family name -> type.
    types: BTreeMap<String, String>,
    samples: Vec<Sample>,
}

impl Exposition {
    fn value(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        self.samples
            .iter()
            .find(|s| {
                s.name == name
                    && labels
                        .iter()
                        .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
            })
            .map(|s| s.value)
    }
}

fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

fn parse_value(text: &str) -> Result<f64, String> {
    match text {
        "+Inf" => Ok(f64::INFINITY),
        "-Inf" => Ok(f64::NEG_INFINITY),
        "NaN" => Ok(f64::NAN),
        _ => text.parse().map_err(|_| format!("bad value '{text}'")),
    }
}

/// The family a sample belongs to, given the declared types.
fn family_of<'a>(name: &'a str, types: &BTreeMap<String, String>) -> &'a str {
    for suffix in ["_bucket", "_sum", "_count"] {
        if let Some(base) = name.strip_suffix(suffix)
            && types
                .get(base)
                .is_some_and(|t| t == "histogram" || t == "summary")
        {
            return base;
        }
    }
    name
}

fn parse_labels(text: &str) -> Result<BTreeMap<String, String>, String> {
    let mut labels = BTreeMap::new();
    let mut chars = text.chars().peekable();
    loop {
        let name: String = std::iter::from_fn(|| chars.next_if(|c| *c != '=')).collect();
        if name.is_empty() && chars.peek().is_none() {
            return Ok(labels);
        }
        let name = name.trim().to_string();
        if !valid_name(&name) || name.starts_with("__") {
            return Err(format!("bad label name '{name}'"));
        }
        if chars.next() != Some('=') || chars.next() != Some('"') {
            return Err(format!("label {name}: expected =\""));
        }
        let mut value = String::new();
        loop {
            match chars.next() {
                Some('\\') => match chars.next() {
                    Some('\\') => value.push('\\'),
                    Some('"') => value.push('"'),
                    Some('n') => value.push('\n'),
                    other => return Err(format!("label {name}: bad escape {other:?}")),
                },
                Some('"') => break,
                Some('\n') | None => return Err(format!("label {name}: unterminated")),
                Some(c) => value.push(c),
            }
        }
        if labels.insert(name.clone(), value).is_some() {
            return Err(format!("label {name} twice"));
        }
        match chars.next() {
            None => return Ok(labels),
            Some(',') => continue,
            Some(c) => return Err(format!("after label {name}: unexpected '{c}'")),
        }
    }
}

fn parse_exposition(text: &str) -> Result<Exposition, String> {
    let mut exposition = Exposition::default();
    let mut helps = HashSet::new();
    // Families seen, to check each one's samples are together.
    let mut finished: HashSet<String> = HashSet::new();
    let mut current: Option<String> = None;
    if !text.ends_with('\n') {
        return Err("the exposition must end with a newline".into());
    }
    for (number, line) in text.lines().enumerate() {
        let at = |e: String| format!("line {}: {e}: {line}", number + 1);
        if line.is_empty() {
            continue;
        }
        if let Some(comment) = line.strip_prefix('#') {
            let mut words = comment.trim_start().splitn(3, ' ');
            match words.next() {
                Some("HELP") => {
                    let name = words
                        .next()
                        .ok_or_else(|| at("HELP without a name".into()))?;
                    if !valid_name(name) || !helps.insert(name.to_string()) {
                        return Err(at("bad or repeated HELP".into()));
                    }
                }
                Some("TYPE") => {
                    let name = words
                        .next()
                        .ok_or_else(|| at("TYPE without a name".into()))?;
                    let kind = words
                        .next()
                        .ok_or_else(|| at("TYPE without a type".into()))?;
                    if !["counter", "gauge", "histogram", "summary", "untyped"].contains(&kind) {
                        return Err(at(format!("unknown type {kind}")));
                    }
                    if !valid_name(name) || exposition.types.contains_key(name) {
                        return Err(at("bad or repeated TYPE".into()));
                    }
                    if exposition
                        .samples
                        .iter()
                        .any(|s| family_of(&s.name, &exposition.types) == name)
                    {
                        return Err(at("TYPE after the family's samples".into()));
                    }
                    exposition.types.insert(name.to_string(), kind.to_string());
                }
                _ => {}
            }
            continue;
        }
        let (name_and_labels, rest) = match line.find('{') {
            Some(_) => {
                let close = line
                    .rfind('}')
                    .ok_or_else(|| at("unclosed labels".into()))?;
                (&line[..close + 1], line[close + 1..].trim_start())
            }
            None => line.split_once(' ').ok_or_else(|| at("no value".into()))?,
        };
        let (name, labels) = match name_and_labels.split_once('{') {
            Some((name, labels)) => (name, parse_labels(&labels[..labels.len() - 1]).map_err(at)?),
            None => (name_and_labels, BTreeMap::new()),
        };
        if !valid_name(name) {
            return Err(at(format!("bad metric name '{name}'")));
        }
        let mut parts = rest.split(' ');
        let value = parse_value(parts.next().unwrap_or_default()).map_err(at)?;
        if let Some(timestamp) = parts.next() {
            timestamp
                .parse::<i64>()
                .map_err(|_| at("bad timestamp".into()))?;
        }
        if parts.next().is_some() {
            return Err(at("trailing text".into()));
        }
        let family = family_of(name, &exposition.types).to_string();
        if current.as_deref() != Some(family.as_str()) {
            if finished.contains(&family) {
                return Err(at(format!("the samples of {family} are not together")));
            }
            if let Some(previous) = current.take() {
                finished.insert(previous);
            }
            current = Some(family.clone());
        }
        let sample = Sample {
            name: name.to_string(),
            labels,
            value,
        };
        if exposition
            .samples
            .iter()
            .any(|s| s.name == sample.name && s.labels == sample.labels)
        {
            return Err(at("a repeated sample".into()));
        }
        exposition.samples.push(sample);
    }
    // Each family's type holds: counters, histograms.
    for (family, kind) in &exposition.types {
        let samples: Vec<&Sample> = exposition
            .samples
            .iter()
            .filter(|s| family_of(&s.name, &exposition.types) == family)
            .collect();
        match kind.as_str() {
            "counter" => {
                if !family.ends_with("_total") {
                    return Err(format!("counter {family} does not end in _total"));
                }
                if samples.iter().any(|s| s.value < 0.0 || s.value.is_nan()) {
                    return Err(format!("counter {family} is negative"));
                }
            }
            "histogram" => {
                // One series per set of labels other than `le`.
                let mut series: BTreeMap<BTreeMap<String, String>, Vec<&&Sample>> = BTreeMap::new();
                for bucket in samples
                    .iter()
                    .filter(|s| s.name == format!("{family}_bucket"))
                {
                    let mut labels = bucket.labels.clone();
                    labels.remove("le");
                    series.entry(labels).or_default().push(bucket);
                }
                for (labels, buckets) in &series {
                    let mut last = (f64::NEG_INFINITY, 0.0);
                    for bucket in buckets {
                        let le = bucket
                            .labels
                            .get("le")
                            .ok_or_else(|| format!("{family}: a bucket without le"))?;
                        let le = parse_value(le)?;
                        if le <= last.0 || bucket.value < last.1 {
                            return Err(format!(
                                "{family}{labels:?}: buckets not cumulative and ordered"
                            ));
                        }
                        last = (le, bucket.value);
                    }
                    let of_series = |suffix: &str| {
                        samples
                            .iter()
                            .find(|s| s.name == format!("{family}{suffix}") && s.labels == *labels)
                            .map(|s| s.value)
                    };
                    let count = of_series("_count")
                        .ok_or_else(|| format!("{family}{labels:?}: no _count"))?;
                    of_series("_sum").ok_or_else(|| format!("{family}{labels:?}: no _sum"))?;
                    if last.0 != f64::INFINITY || last.1 != count {
                        return Err(format!(
                            "{family}{labels:?}: the +Inf bucket is not the count"
                        ));
                    }
                }
            }
            _ => {}
        }
    }
    for sample in &exposition.samples {
        if !exposition
            .types
            .contains_key(family_of(&sample.name, &exposition.types))
        {
            return Err(format!("{} has no TYPE", sample.name));
        }
    }
    Ok(exposition)
}

#[test]
fn the_strict_parser_refuses_what_prometheus_refuses() {
    let good = "# HELP a_total A.\n# TYPE a_total counter\na_total{x=\"1\\\"\"} 3\n\
                # TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_sum 3.5\nh_count 2\n";
    let parsed = parse_exposition(good).expect("valid");
    assert_eq!(parsed.value("a_total", &[("x", "1\"")]), Some(3.0));
    let two_series = "# TYPE w histogram\n\
        w_bucket{m=\"a\",le=\"1\"} 1\nw_bucket{m=\"a\",le=\"+Inf\"} 2\nw_sum{m=\"a\"} 1\nw_count{m=\"a\"} 2\n\
        w_bucket{m=\"b\",le=\"1\"} 0\nw_bucket{m=\"b\",le=\"+Inf\"} 1\nw_sum{m=\"b\"} 1\nw_count{m=\"b\"} 1\n";
    assert!(
        parse_exposition(two_series).is_ok(),
        "a histogram per label set"
    );
    for bad in [
        "a_total 1\n",                                              // no TYPE
        "# TYPE a counter\na 1\n",                                  // counter without _total
        "# TYPE a_total counter\na_total{x=\"1} 1\n",               // unterminated label
        "# TYPE a_total counter\na_total one\n",                    // bad value
        "# TYPE g gauge\ng 1\n# TYPE k gauge\nk 1\ng{a=\"b\"} 2\n", // family split
        "# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n",
        "# TYPE g gauge\ng 1", // no final newline
        // The second series' +Inf bucket is not its count.
        "# TYPE w histogram\nw_bucket{m=\"a\",le=\"+Inf\"} 1\nw_sum{m=\"a\"} 1\nw_count{m=\"a\"} 1\n\
         w_bucket{m=\"b\",le=\"+Inf\"} 1\nw_sum{m=\"b\"} 1\nw_count{m=\"b\"} 2\n",
    ] {
        assert!(parse_exposition(bad).is_err(), "accepted: {bad}");
    }
}

// ---------------------------------------------------------------------
// A bot walking along +x.

struct Walker {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<RawClient>>,
}

impl Walker {
    /// Joins as `name` and walks at 5 voxels a second, to 10 voxels east
    /// of the spawn and back, again and again.
    fn start(address: &str, name: &str) -> (Self, [f64; 3]) {
        let mut client = RawClient::join(address, name, Duration::from_secs(120)).expect("join");
        let spawn = client.spawn;
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut position = spawn;
            let mut next = Instant::now();
            let mut step = 0u64;
            while !stopping.load(Ordering::Relaxed) {
                if Instant::now() >= next {
                    // 20 steps east, 20 west.
                    position[0] += if step % 40 < 20 { 0.5 } else { -0.5 };
                    step += 1;
                    if client.send_packet(&Move { position }).is_err() {
                        break;
                    }
                    next += Duration::from_millis(100);
                }
                // Drain what the server sends (chunks, nodes).
                if client.recv(Duration::from_millis(20)).is_err() {
                    break;
                }
            }
            client
        });
        (
            Self {
                stop,
                thread: Some(thread),
            },
            spawn,
        )
    }

    fn stop(&mut self) -> Option<RawClient> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.take().and_then(|t| t.join().ok())
    }
}

impl Drop for Walker {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The change feed's latest change number.
fn changes_seq(web: &str) -> u64 {
    let reply = get(web, "/api/changes?since=0");
    let changes: serde_json::Value = serde_json::from_slice(&reply.body).expect("changes JSON");
    changes["seq"].as_u64().expect("a change number")
}

fn players(web: &str) -> serde_json::Value {
    let reply = get(web, "/api/players");
    assert_eq!(reply.status, 200, "{}", reply.text());
    serde_json::from_slice(&reply.body).expect("players JSON")
}

fn player_x(web: &str, name: &str) -> Option<f64> {
    players(web)
        .as_array()?
        .iter()
        .find(|p| p["name"] == name)?["position"][0]
        .as_f64()
}

/// Opaque pixels and distinct colours of a tile.
fn tile_terrain(web: &str, path: &str) -> (usize, usize) {
    let reply = get(web, path);
    assert_eq!(reply.status, 200, "{path}: {}", reply.text());
    assert_eq!(reply.content_type, "image/png");
    let decoder = png::Decoder::new(std::io::Cursor::new(reply.body));
    let mut reader = decoder.read_info().expect("a PNG");
    let mut pixels = vec![0; reader.output_buffer_size().expect("size")];
    let info = reader.next_frame(&mut pixels).expect("a frame");
    assert_eq!((info.width, info.height), (128, 128));
    assert_eq!(info.color_type, png::ColorType::Rgba);
    let mut colours = HashSet::new();
    let mut opaque = 0;
    for pixel in pixels.chunks_exact(4) {
        if pixel[3] == 255 {
            opaque += 1;
            colours.insert([pixel[0], pixel[1], pixel[2]]);
        }
    }
    (opaque, colours.len())
}

/// The level-0 tile holding the voxel column (x, z).
fn tile_of(x: f64, z: f64) -> String {
    format!(
        "/tile/0/{}/{}.png",
        (x.floor() as i64).div_euclid(128),
        (z.floor() as i64).div_euclid(128)
    )
}

#[test]
fn web_page_serves_metrics_status_tiles_and_admin_actions_and_survives_a_reload() {
    let scratch = Scratch::new();
    let (mut server, address, web) = start(&scratch);

    let metrics = get(&web, "/metrics");
    assert_eq!(metrics.status, 200);
    assert!(
        metrics
            .content_type
            .starts_with("text/plain; version=0.0.4")
    );
    let parsed =
        parse_exposition(&metrics.text()).unwrap_or_else(|e| panic!("{e}\n{}", metrics.text()));
    for (name, kind) in [
        ("buildat_players", "gauge"),
        ("buildat_connections", "gauge"),
        ("buildat_received_bytes_total", "counter"),
        ("buildat_sent_bytes_total", "counter"),
        ("buildat_packets_received_total", "counter"),
        ("buildat_packets_sent_total", "counter"),
        ("buildat_chunks_streamed_total", "counter"),
        ("buildat_tick_duration_seconds", "histogram"),
        ("buildat_module_queue_depth", "gauge"),
        ("buildat_module_queue_wait_seconds", "histogram"),
        ("buildat_module_busy_seconds_total", "counter"),
        ("buildat_saves_total", "counter"),
        ("buildat_save_errors_total", "counter"),
        ("buildat_module_reloads_total", "counter"),
    ] {
        assert_eq!(
            parsed.types.get(name).map(String::as_str),
            Some(kind),
            "{name}:\n{}",
            metrics.text()
        );
    }
    assert!(
        parsed
            .value("buildat_module_queue_depth", &[("module", "voxelworld")])
            .is_some()
    );

    // A player walks; the page sees it, and the metrics count it.
    let (mut walker, spawn) = Walker::start(&address, "walker");
    let first = wait_until(Duration::from_secs(30), || player_x(&web, "walker"))
        .unwrap_or_else(|| panic!("the player is listed:\n{}", server.output()));
    let moved = wait_until(Duration::from_secs(30), || {
        player_x(&web, "walker").filter(|x| (x - first).abs() > 2.0)
    });
    assert!(moved.is_some(), "the player's position moves");

    let status: serde_json::Value =
        serde_json::from_slice(&get(&web, "/status").body).expect("JSON");
    let modules = status["modules"].as_array().expect("modules");
    for name in ["voxelworld", "network", "main", "web"] {
        let row = modules
            .iter()
            .find(|m| m["name"] == name)
            .unwrap_or_else(|| panic!("{name} in {status}"));
        assert_eq!(row["state"], "loaded", "{row}");
        assert!(!row["build_id"].as_str().unwrap_or_default().is_empty());
    }
    assert!(
        status["tick"]["count"].as_u64().unwrap_or(0) > 0,
        "{status}"
    );
    // The last minute's tick time, as `/status` in chat gives it.
    let minute = |key: &str| status["tick"][key].as_f64().unwrap_or(-1.0);
    assert!(minute("minute_count") > 0.0, "{status}");
    assert!(
        minute("minute_p99_seconds") >= minute("minute_p50_seconds")
            && minute("minute_p50_seconds") > 0.0,
        "{status}"
    );
    assert!(
        status["world_disk_bytes"].as_u64().unwrap_or(0) > 0,
        "{status}"
    );
    let html = get(&web, "/").text();
    assert!(
        html.contains("walker") && html.contains("voxelworld"),
        "{html}"
    );
    assert!(html.contains("; last minute: p50 "), "{html}");

    let after = parse_exposition(&get(&web, "/metrics").text()).expect("valid");
    assert_eq!(after.value("buildat_players", &[]), Some(1.0));
    assert!(after.value("buildat_connections_total", &[]) >= Some(1.0));
    assert!(after.value("buildat_packets_received_total", &[]) > Some(3.0));
    assert!(after.value("buildat_sent_bytes_total", &[]) > Some(10_000.0));
    assert!(after.value("buildat_chunks_streamed_total", &[]) > Some(0.0));
    assert!(after.value("buildat_tick_duration_seconds_count", &[]) > Some(0.0));
    // The game's module took the walker's packets off its queue.
    let main = [("module", "main")];
    assert!(after.value("buildat_module_queue_wait_seconds_count", &main) > Some(3.0));
    assert!(after.value("buildat_module_busy_seconds_total", &main) > Some(0.0));

    // The tile under the spawn shows terrain: mostly opaque, in several
    // colours.
    let tile = tile_of(spawn[0], spawn[2]);
    let terrain = wait_until(Duration::from_secs(60), || {
        let (opaque, colours) = tile_terrain(&web, &tile);
        (opaque > 128 * 128 / 4 && colours >= 3).then_some((opaque, colours))
    });
    assert!(
        terrain.is_some(),
        "{tile} shows terrain: {:?}",
        tile_terrain(&web, &tile)
    );
    assert_eq!(get(&web, "/tile/0/1/2/3.png").status, 404);

    // A voxel dug under the tile: the change feed names its block and the
    // tile is drawn again, different.
    let before = get(&web, &tile).body;
    let seq = changes_seq(&web);
    let mut digger = RawClient::join(&address, "digger", Duration::from_secs(60)).expect("join");
    let feet = digger.spawn.map(|c| c.floor() as i32);
    digger
        .send_packet(&Dig {
            voxel: [feet[0], feet[1] - 1, feet[2]],
        })
        .expect("dig");
    let block = [feet[0].div_euclid(128), feet[2].div_euclid(128)];
    let told = wait_until(Duration::from_secs(60), || {
        let _ = digger.recv(Duration::from_millis(10));
        let changes = get(&web, &format!("/api/changes?since={seq}"));
        let changes: serde_json::Value = serde_json::from_slice(&changes.body).ok()?;
        changes["blocks"]
            .as_array()?
            .iter()
            .any(|b| b[0] == block[0] && b[1] == block[1])
            .then_some(())
    });
    assert!(
        told.is_some(),
        "the feed names block {block:?}:\n{}",
        server.output()
    );
    assert_ne!(get(&web, &tile).body, before, "{tile} is drawn again");
    digger.close();
    assert_eq!(get(&web, "/map").status, 200);
    assert!(get(&web, "/map.js").text().contains("buildatMap"));

    // Admin actions: the token of the world folder, nothing else.
    let token = std::fs::read_to_string(scratch.world().join("web-token.txt")).expect("token");
    let token = token.trim();
    assert_eq!(post(&web, "/admin/save", None).status, 401);
    assert_eq!(post(&web, "/admin/save", Some("not-the-token")).status, 401);
    assert_eq!(get(&web, "/admin/save").status, 405);
    let saved = post(&web, "/admin/save", Some(token));
    assert_eq!(saved.status, 200, "{}", saved.text());
    assert!(saved.text().starts_with("saved "), "{}", saved.text());
    let reload = post(&web, "/admin/reload/replicate", Some(token));
    assert_eq!(reload.status, 200, "{}", reload.text());
    assert_eq!(post(&web, "/admin/reload/web", Some(token)).status, 400);
    assert_eq!(post(&web, "/admin/kick/nobody", Some(token)).status, 400);
    let kicked = post(&web, "/admin/kick/walker", Some(token));
    assert_eq!(kicked.status, 200, "{}", kicked.text());
    let client = walker.stop().expect("the walker's connection");
    assert!(
        client.is_closed()
            || wait_until(Duration::from_secs(10), || player_x(&web, "walker")
                .is_none()
                .then_some(()))
            .is_some(),
        "the kicked player leaves"
    );
    let reloads = parse_exposition(&get(&web, "/metrics").text()).expect("valid");
    assert_eq!(
        reloads.value("buildat_module_reloads_total", &[("module", "replicate")]),
        Some(1.0)
    );

    // The page survives its own reload, on the same address.
    server.send("reload web");
    server.expect_line("reloaded web", Duration::from_secs(300));
    let again = wait_until(Duration::from_secs(10), || {
        request(&web, "GET", "/status", None)
            .ok()
            .filter(|r| r.status == 200)
    });
    assert!(again.is_some(), "the page answers after the reload");
    let metrics = parse_exposition(&get(&web, "/metrics").text()).expect("valid");
    assert_eq!(
        metrics.value("buildat_module_reloads_total", &[("module", "web")]),
        Some(1.0)
    );
    server.stop_cleanly();
    assert!(
        !server
            .seen
            .iter()
            .any(|l| l.contains(" web") && (l.contains("ERROR") || l.contains("leaked"))),
        "{}",
        server.output()
    );
}

// ---------------------------------------------------------------------
// The headless browser (the harness's `browser`), at the size of the
// screenshots in docs/operators.md.

const WIDTH: u32 = 1100;
const HEIGHT: u32 = 720;

fn launch_browser(binary: &str) -> Browser {
    Browser::launch(binary, WIDTH, HEIGHT).expect("chromium starts")
}

fn evaluate(browser: &mut Browser, expression: &str) -> serde_json::Value {
    browser
        .evaluate(expression)
        .unwrap_or_else(|e| panic!("{e:#}"))
}

/// Saves the page as `name` in docs/images/ when `BUILDAT_DOCS_IMAGES=1`,
/// else in target/web-screenshots/.
fn screenshot(browser: &mut Browser, name: &str) {
    let png = browser.screenshot().expect("a screenshot");
    let dir = if std::env::var_os("BUILDAT_DOCS_IMAGES").is_some_and(|v| v == "1") {
        repo_root().join("docs").join("images")
    } else {
        repo_root().join("target").join("web-screenshots")
    };
    std::fs::create_dir_all(&dir).expect("screenshot dir");
    std::fs::write(dir.join(name), &png).expect("write the screenshot");
}

/// Opaque pixels and colours of the map's tiles as the page has them.
const TILE_PIXELS: &str = "(() => {
    const canvas = document.createElement('canvas');
    const context = canvas.getContext('2d');
    let opaque = 0;
    const colours = new Set();
    for (const img of document.querySelectorAll('#tiles img')) {
        if (!img.naturalWidth) continue;
        canvas.width = img.naturalWidth;
        canvas.height = img.naturalHeight;
        context.clearRect(0, 0, canvas.width, canvas.height);
        context.drawImage(img, 0, 0);
        const data = context.getImageData(0, 0, canvas.width, canvas.height).data;
        for (let i = 0; i < data.length; i += 4) {
            if (data[i + 3] > 0) {
                opaque++;
                colours.add((data[i] << 16) | (data[i + 1] << 8) | data[i + 2]);
            }
        }
    }
    return [opaque, colours.size];
})()";

#[test]
fn a_browser_draws_the_map_and_a_walking_players_marker() {
    let Some(binary) = Browser::binary() else {
        // CI installs it (scripts/install-browser-deps); elsewhere the
        // test says why it did nothing.
        assert!(
            std::env::var_os("CI").is_none(),
            "chromium is missing: scripts/install-browser-deps installs it"
        );
        eprintln!("skipped: no chromium (scripts/install-browser-deps installs it)");
        return;
    };
    let scratch = Scratch::new();
    // The zoomed-out view below asks for about 280 blocks: in the tests'
    // dev builds a `column_tops` call takes about 26 ms (5 ms in release),
    // 7 s of the world's time, which the default share (10 %) would spread
    // over a minute. The share is the map's budget's own test's (map.rs).
    let web = format!("127.0.0.1:{}", free_port());
    let (mut server, address, web) = start_with(&scratch, &web, &["web.map_share=0.5"]);
    let (mut walker, spawn) = Walker::start(&address, "walker");
    // The terrain around the spawn is there before the pictures are taken.
    let tile = tile_of(spawn[0], spawn[2]);
    wait_until(Duration::from_secs(60), || {
        let (opaque, _) = tile_terrain(&web, &tile);
        (opaque > 128 * 128 / 4).then_some(())
    })
    .unwrap_or_else(|| panic!("terrain under the spawn:\n{}", server.output()));

    let mut browser = launch_browser(binary);
    browser
        .open(&format!("http://{web}/"))
        .expect("the status page");
    let text = evaluate(&mut browser, "document.body.innerText");
    assert!(
        text.as_str()
            .is_some_and(|t| t.contains("walker") && t.contains("voxelworld")),
        "{text}"
    );
    screenshot(&mut browser, "web-status.png");

    browser
        .open(&format!(
            "http://{web}/map?x={:.0}&z={:.0}&scale=4",
            spawn[0], spawn[2]
        ))
        .expect("the map page");
    let drawn = wait_until(Duration::from_secs(60), || {
        let done = evaluate(
            &mut browser,
            "buildatMap.complete() && buildatMap.loaded() == buildatMap.tileCount()",
        );
        (done == true).then_some(())
    });
    assert!(drawn.is_some(), "every tile in view loads");
    let pixels = evaluate(&mut browser, TILE_PIXELS);
    let (opaque, colours) = (
        pixels[0].as_u64().unwrap_or(0),
        pixels[1].as_u64().unwrap_or(0),
    );
    assert!(
        opaque > 10_000 && colours >= 3,
        "the map shows terrain: {pixels}"
    );

    // The walker's marker moves with it (players are polled every second).
    let marker = |browser: &mut Browser| {
        let at = evaluate(browser, "buildatMap.markerPosition('walker')");
        at[0].as_f64().zip(at[1].as_f64())
    };
    let first = wait_until(Duration::from_secs(15), || marker(&mut browser))
        .unwrap_or_else(|| panic!("a marker for the walker"));
    let later = wait_until(Duration::from_secs(15), || {
        marker(&mut browser).filter(|(x, _)| (x - first.0).abs() > 8.0)
    });
    assert!(later.is_some(), "the marker moves from {first:?}");
    // The players come on the pushed stream, never polled, and the marker
    // is painted where the walker stands: red at the spot on the canvas,
    // within the walk of a frame and a half (5 voxels a second, 4 pixels
    // a voxel) of where the world has it.
    assert_eq!(evaluate(&mut browser, "buildatMap.live()"), true);
    assert!(
        evaluate(&mut browser, "buildatMap.frames").as_u64() >= Some(2),
        "frames on the stream"
    );
    let polled = evaluate(
        &mut browser,
        "performance.getEntriesByType('resource').filter(e => e.name.includes('/api/players')).length",
    );
    assert_eq!(polled, 0, "the page does not poll /api/players");
    let painted = evaluate(
        &mut browser,
        "(() => {
            const at = buildatMap.markerPosition('walker');
            const ratio = window.devicePixelRatio || 1;
            const canvas = document.getElementById('markers');
            const pixel = canvas.getContext('2d')
                .getImageData(Math.round(at[0] * ratio), Math.round(at[1] * ratio), 1, 1).data;
            return [at[0], at[1], pixel[0], pixel[1], pixel[2], pixel[3]];
        })()",
    );
    let world_x = player_x(&web, "walker").expect("the walker in /api/players");
    let expected_x = f64::from(WIDTH) / 2.0 + (world_x - spawn[0].round()) * 4.0;
    let painted_x = painted[0].as_f64().unwrap_or(f64::NAN);
    assert!(
        (painted_x - expected_x).abs() <= 30.0,
        "marker at {painted}, the walker at x {world_x} (expected about {expected_x})"
    );
    let (red, green, alpha) = (
        painted[2].as_u64().unwrap_or(0),
        painted[3].as_u64().unwrap_or(255),
        painted[5].as_u64().unwrap_or(0),
    );
    assert!(
        red > 200 && green < 120 && alpha > 200,
        "a red marker painted there: {painted}"
    );
    screenshot(&mut browser, "web-map.png");

    // The 1,000 × 1,000 voxel area around the spawn, zoomed out, fully
    // drawn (tiles of stored and loaded sections; the rest is blank).
    let started = Instant::now();
    evaluate(
        &mut browser,
        &format!("buildatMap.moveTo({:.0}, {:.0}, 0.5)", spawn[0], spawn[2]),
    );
    let drawn = wait_until(Duration::from_secs(60), || {
        (evaluate(&mut browser, "buildatMap.complete()") == true).then_some(())
    });
    assert!(drawn.is_some(), "the zoomed-out map loads");
    println!(
        "map of {}x{} voxels drawn in {:.2} s ({} tiles)",
        WIDTH * 2,
        HEIGHT * 2,
        started.elapsed().as_secs_f64(),
        evaluate(&mut browser, "buildatMap.tileCount()")
    );
    drop(browser);
    walker.stop();
    server.stop_cleanly();
}

/// A raw `/api/live` stream: its reply's head, then the frames (`data:`
/// lines) it sends, counted by a thread of its own until `stop`.
struct LiveStream {
    frames: Arc<std::sync::Mutex<Vec<String>>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl LiveStream {
    fn open(web: &str, stop: Arc<AtomicBool>) -> (Self, String) {
        use std::io::{BufRead, BufReader, Write};
        let mut stream = std::net::TcpStream::connect(web).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_millis(200)))
            .expect("timeout");
        write!(stream, "GET /api/live HTTP/1.1\r\nHost: {web}\r\n\r\n").expect("write");
        let mut reader = BufReader::new(stream);
        let mut head = String::new();
        let deadline = Instant::now() + Duration::from_secs(10);
        while !head.ends_with("\r\n\r\n") && Instant::now() < deadline {
            let _ = reader.read_line(&mut head);
        }
        let frames = Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = frames.clone();
        let thread = std::thread::spawn(move || {
            let mut line = String::new();
            while !stop.load(Ordering::Relaxed) {
                match reader.read_line(&mut line) {
                    Ok(0) => return,
                    // Chunked: a frame's line sits between chunk sizes.
                    Ok(_) if line.ends_with('\n') => {
                        if let Some(data) = line.trim_end().strip_prefix("data: ") {
                            seen.lock().expect("frames").push(data.to_string());
                        }
                        line.clear();
                    }
                    _ => {}
                }
            }
        });
        (
            Self {
                frames,
                thread: Some(thread),
            },
            head,
        )
    }

    fn frames(&self) -> Vec<String> {
        self.frames.lock().expect("frames").clone()
    }
}

impl Drop for LiveStream {
    fn drop(&mut self) {
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn metric(web: &str, name: &str) -> f64 {
    parse_exposition(&get(web, "/metrics").text())
        .expect("metrics parse")
        .value(name, &[])
        .unwrap_or_else(|| panic!("{name} in /metrics"))
}

#[test]
fn live_streams_share_one_players_snapshot_and_tiles_are_asked_again_cheaply() {
    let scratch = Scratch::new();
    let (mut server, address, web) = start(&scratch);
    let (mut walker, spawn) = Walker::start(&address, "walker");
    wait_until(Duration::from_secs(30), || player_x(&web, "walker")).expect("the walker");

    // Eight pages listen for six seconds while the walker walks.
    const PAGES: usize = 8;
    let stop = Arc::new(AtomicBool::new(false));
    let asked_before = metric(&web, "buildat_web_players_asked_total");
    let started = Instant::now();
    let streams: Vec<LiveStream> = (0..PAGES)
        .map(|_| {
            let (stream, head) = LiveStream::open(&web, stop.clone());
            assert!(head.starts_with("HTTP/1.1 200"), "{head}");
            assert!(
                head.to_ascii_lowercase()
                    .contains("content-type: text/event-stream"),
                "{head}"
            );
            stream
        })
        .collect();
    std::thread::sleep(Duration::from_secs(6));
    assert_eq!(metric(&web, "buildat_web_live_streams"), PAGES as f64);
    let asked = metric(&web, "buildat_web_players_asked_total") - asked_before;
    let seconds = started.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    // Once a frame (a second) for all of them, and once for each of the
    // two /metrics reads: not once a page.
    assert!(
        asked <= seconds.ceil() + 3.0,
        "{asked} asks of the world in {seconds:.1} s for {PAGES} pages"
    );
    let all: Vec<Vec<String>> = streams.iter().map(LiveStream::frames).collect();
    for frames in &all {
        assert!(frames.len() >= 3, "a frame a second: {frames:?}");
        let frame: serde_json::Value =
            serde_json::from_str(frames.last().expect("a frame")).expect("a JSON frame");
        let walker_at = frame["players"]
            .as_array()
            .and_then(|players| players.iter().find(|p| p[0] == "walker"))
            .unwrap_or_else(|| panic!("the walker in {frame}"));
        assert!(
            (walker_at[1].as_f64().unwrap_or(f64::NAN) - spawn[0]).abs() <= 11.0,
            "{frame}"
        );
        assert!(frame["seq"].is_u64() && frame["from"].is_u64(), "{frame}");
    }
    // The pages see the same frames (one snapshot shared).
    let first: HashSet<&String> = all[0].iter().collect();
    assert!(
        all[1..]
            .iter()
            .all(|f| f.iter().any(|frame| first.contains(frame))),
        "the streams share frames"
    );
    drop(streams);
    wait_until(Duration::from_secs(5), || {
        (metric(&web, "buildat_web_live_streams") == 0.0).then_some(())
    })
    .expect("a stream ends with its page");

    // A tile a page has is not sent again: its tag answers 304.
    let tile = tile_of(spawn[0], spawn[2]);
    let first = get_as(&web, &web, &tile, "");
    assert_eq!(first.status, 200);
    assert_eq!(first.header("cache-control"), Some("no-cache"));
    let tag = first.header("etag").expect("a tile's ETag").to_string();
    let again = get_as(&web, &web, &tile, &format!("If-None-Match: {tag}\r\n"));
    assert_eq!(again.status, 304, "{again:?}");
    assert!(again.body.is_empty());
    let other = get_as(&web, &web, &tile, "If-None-Match: \"old\"\r\n");
    assert_eq!(other.status, 200);

    walker.stop();
    server.stop_cleanly();
}

// ---------------------------------------------------------------------
// Who may see the page (issue 43, item 8).

/// A reply read off a raw connection: status, headers (lower-case names)
/// and body.
#[derive(Debug)]
struct RawReply {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl RawReply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Writes `request` as it is on `stream` and reads the reply to the end.
fn exchange(mut stream: impl std::io::Read + std::io::Write, request: &str) -> RawReply {
    stream.write_all(request.as_bytes()).expect("write");
    let mut bytes = Vec::new();
    // A reset after the reply (the server closing first) is an end too.
    let _ = stream.read_to_end(&mut bytes);
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let (head, body) = text
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("no reply to {request:?}: {text:?}"));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("a status line: {head}"));
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    RawReply {
        status,
        headers,
        body: body.to_string(),
    }
}

/// `request` over a new plain connection to `address`.
fn raw(address: &str, request: &str) -> RawReply {
    let stream = std::net::TcpStream::connect(address).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    exchange(stream, request)
}

/// A GET of `path` naming `host`, with more header lines `extra`.
fn get_as(address: &str, host: &str, path: &str, extra: &str) -> RawReply {
    raw(
        address,
        &format!("GET {path} HTTP/1.1\r\nHost: {host}\r\n{extra}Connection: close\r\n\r\n"),
    )
}

/// This machine's address that is not loopback (the one it would reach
/// the world by), to be a client off loopback; `None` if it has none.
fn address_off_loopback() -> Option<std::net::IpAddr> {
    let socket = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    // No packet is sent: connecting a UDP socket only picks the route.
    socket.connect("192.0.2.1:9").ok()?;
    let ip = socket.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

/// The address off loopback, or a loud skip (a failure under CI).
fn require_address_off_loopback() -> Option<std::net::IpAddr> {
    let ip = address_off_loopback();
    if ip.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "this machine has no address off loopback to test from"
        );
        eprintln!("skipped: this machine has no address off loopback to test from");
    }
    ip
}

#[test]
fn the_page_answers_only_to_its_own_names_and_takes_the_token_only_as_a_header() {
    let scratch = Scratch::new();
    let port = free_port();
    let (mut server, address, web) = start_with(
        &scratch,
        &format!("127.0.0.1:{port}"),
        &["web.hostnames=map.example.org"],
    );
    let (mut player, _) = Walker::start(&address, "watched");
    let listed = wait_until(Duration::from_secs(30), || {
        let reply = get_as(&web, &format!("localhost:{port}"), "/api/players", "");
        (reply.status == 200 && reply.body.contains("watched")).then_some(())
    });
    assert!(listed.is_some(), "localhost:PORT sees the player");

    // A stranger's page whose name was made to point here (DNS rebinding)
    // names itself in Host: refused, the positions not read.
    for path in ["/api/players", "/", "/status", "/map", "/tile/0/0/0.png"] {
        let refused = get_as(&web, "evil.example", path, "");
        assert_eq!(refused.status, 421, "{path}: {refused:?}");
        assert!(!refused.body.contains("watched"), "{path}: {refused:?}");
        let refused = get_as(&web, &format!("evil.example:{port}"), path, "");
        assert_eq!(refused.status, 421, "{path}: {refused:?}");
    }
    // An absolute URI naming another host, and no Host at all (HTTP/1.0).
    let absolute = raw(
        &web,
        &format!(
            "GET http://evil.example/api/players HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
        ),
    );
    assert_eq!(absolute.status, 421, "{absolute:?}");
    let no_host = raw(&web, "GET /api/players HTTP/1.0\r\n\r\n");
    assert_eq!(no_host.status, 421, "{no_host:?}");
    assert!(!no_host.body.contains("watched"));
    // The names it answers to.
    for host in [
        format!("127.0.0.1:{port}"),
        format!("[::1]:{port}"),
        "localhost".to_string(),
        "map.example.org".to_string(),
        format!("MAP.example.org:{port}"),
    ] {
        let reply = get_as(&web, &host, "/api/players", "");
        assert_eq!(reply.status, 200, "{host}: {reply:?}");
    }

    // Admin actions: the token as a header, nowhere else.
    let token = std::fs::read_to_string(scratch.world().join("web-token.txt")).expect("token");
    let token = token.trim();
    let in_query = raw(
        &web,
        &format!(
            "POST /admin/save?token={token} HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        ),
    );
    assert_eq!(in_query.status, 401, "{in_query:?}");
    let form = format!("token={token}");
    let in_form = raw(
        &web,
        &format!(
            "POST /admin/save HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{form}",
            form.len()
        ),
    );
    assert_eq!(in_form.status, 401, "{in_form:?}");
    // The view cookie opens no admin action.
    let login = raw(
        &web,
        &format!(
            "POST /login HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {token}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        ),
    );
    assert_eq!(login.status, 200, "{login:?}");
    assert_eq!(login.header("x-frame-options"), Some("DENY"), "{login:?}");
    let cookie = login
        .header("set-cookie")
        .and_then(|c| c.split(';').next())
        .expect("a cookie")
        .to_string();
    assert!(!cookie.contains(token), "the cookie is not the token");
    let with_cookie = raw(
        &web,
        &format!(
            "POST /admin/save HTTP/1.1\r\nHost: localhost\r\nCookie: {cookie}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        ),
    );
    assert_eq!(with_cookie.status, 401, "{with_cookie:?}");
    let in_header = raw(
        &web,
        &format!(
            "POST /admin/save HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {token}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        ),
    );
    assert_eq!(in_header.status, 200, "{in_header:?}");

    // The token file is the owner's only.
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(scratch.world().join("web-token.txt"))
        .expect("token file")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    player.stop();
    server.stop_cleanly();
}

#[test]
fn connections_over_the_cap_are_closed_at_once() {
    use std::io::{Read, Write};
    let scratch = Scratch::new();
    let web = format!("127.0.0.1:{}", free_port());
    let (mut server, _address, web) = start_with(&scratch, &web, &["web.max_connections=4"]);
    // Four idle connections hold the cap.
    let held: Vec<std::net::TcpStream> = (0..4)
        .map(|_| std::net::TcpStream::connect(&web).expect("connect"))
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    for stream in &held {
        stream
            .set_read_timeout(Some(Duration::from_millis(200)))
            .expect("timeout");
        let mut byte = [0u8; 1];
        let read = (&*stream).read(&mut byte);
        assert!(
            matches!(&read, Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut)),
            "a connection within the cap stays open: {read:?}"
        );
    }
    // A fifth: closed at once, unanswered.
    let started = Instant::now();
    let mut fifth = std::net::TcpStream::connect(&web).expect("connect");
    fifth
        .set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    let _ = fifth.write_all(b"GET /status HTTP/1.1\r\nHost: localhost\r\n\r\n");
    let mut bytes = Vec::new();
    let _ = fifth.read_to_end(&mut bytes);
    assert!(bytes.is_empty(), "no answer over the cap: {bytes:?}");
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "closed at once, not after a timeout: {:?}",
        started.elapsed()
    );
    // One closed makes room.
    drop(held);
    let answered = wait_until(Duration::from_secs(10), || {
        request(&web, "GET", "/status", None)
            .ok()
            .filter(|r| r.status == 200)
    });
    assert!(answered.is_some(), "room again once they close");
    server.stop_cleanly();
}

/// Accepts the one certificate it is given (the world's), checking the
/// handshake's signatures with it.
#[derive(Debug)]
struct ThisCertificate {
    expected: Vec<u8>,
    algorithms: rustls::crypto::WebPkiSupportedAlgorithms,
}

impl rustls::client::danger::ServerCertVerifier for ThisCertificate {
    fn verify_server_cert(
        &self,
        end_entity: &rustls::pki_types::CertificateDer<'_>,
        _intermediates: &[rustls::pki_types::CertificateDer<'_>],
        _server_name: &rustls::pki_types::ServerName<'_>,
        _ocsp_response: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        if end_entity.as_ref() == self.expected.as_slice() {
            Ok(rustls::client::danger::ServerCertVerified::assertion())
        } else {
            Err(rustls::Error::General("not the world's certificate".into()))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// `request` over TLS to `address`, trusting only the certificate in
/// `cert_pem`.
fn https(address: &str, cert_pem: &std::path::Path, request: &str) -> RawReply {
    use rustls::pki_types::pem::PemObject;
    let expected = rustls::pki_types::CertificateDer::from_pem_file(cert_pem)
        .expect("the world's certificate")
        .to_vec();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = Arc::new(ThisCertificate {
        expected,
        algorithms: provider.signature_verification_algorithms,
    });
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from("buildat").expect("a name");
    let connection = rustls::ClientConnection::new(Arc::new(config), name).expect("a client");
    let socket = std::net::TcpStream::connect(address).expect("connect");
    socket
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    exchange(rustls::StreamOwned::new(connection, socket), request)
}

#[test]
fn off_loopback_the_page_speaks_https_and_keeps_positions_behind_the_token() {
    let Some(ip) = require_address_off_loopback() else {
        return;
    };
    let scratch = Scratch::new();
    let port = free_port();
    let (mut server, address, _) = start_with(&scratch, &format!("0.0.0.0:{port}"), &[]);
    assert!(
        server
            .seen
            .iter()
            .any(|l| l.contains(&format!("web page at https://0.0.0.0:{port}/"))),
        "{}",
        server.output()
    );
    let (mut player, _) = Walker::start(&address, "watched");
    let cert = scratch.world().join("tls").join("cert.pem");
    {
        use std::os::unix::fs::PermissionsExt;
        let key = std::fs::metadata(scratch.world().join("tls").join("key.pem")).expect("key");
        assert_eq!(key.permissions().mode() & 0o777, 0o600);
    }
    // From loopback it stays open (over HTTPS: the port speaks it).
    let listed = wait_until(Duration::from_secs(30), || {
        let local = https(
            &format!("127.0.0.1:{port}"),
            &cert,
            &format!(
                "GET /api/players HTTP/1.1\r\nHost: localhost:{port}\r\nConnection: close\r\n\r\n"
            ),
        );
        (local.status == 200 && local.body.contains("watched")).then_some(())
    });
    assert!(listed.is_some(), "loopback sees the player");
    let remote = format!("{ip}:{port}");
    // Plain HTTP gets no page.
    let stream = std::net::TcpStream::connect(&remote).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let mut plain = stream;
    {
        use std::io::{Read, Write};
        let _ = plain.write_all(
            format!("GET /api/players HTTP/1.1\r\nHost: {remote}\r\nConnection: close\r\n\r\n")
                .as_bytes(),
        );
        let mut bytes = Vec::new();
        let _ = plain.read_to_end(&mut bytes);
        let text = String::from_utf8_lossy(&bytes);
        assert!(
            !text.starts_with("HTTP/") && !text.contains("watched"),
            "plain HTTP answered: {text}"
        );
    }
    let token = std::fs::read_to_string(scratch.world().join("web-token.txt")).expect("token");
    let token = token.trim();
    let ask = |path: &str, extra: &str| {
        https(
            &remote,
            &cert,
            &format!("GET {path} HTTP/1.1\r\nHost: {remote}\r\n{extra}Connection: close\r\n\r\n"),
        )
    };
    // Off loopback, no token: no positions, in no form.
    for path in ["/api/players", "/status", "/tile/0/0/0.png", "/metrics"] {
        let refused = ask(path, "");
        assert_eq!(refused.status, 401, "{path}: {refused:?}");
        assert!(!refused.body.contains("watched"));
    }
    let refused = ask(&format!("/api/players?token={token}"), "");
    assert_eq!(refused.status, 401, "not in the address: {refused:?}");
    let refused = ask("/api/players", "Cookie: buildat_web=0123456789abcdef\r\n");
    assert_eq!(refused.status, 401, "{refused:?}");
    // A browser is sent to the login page, which sets the cookie for the
    // token sent as a header.
    let sent = ask("/map?x=1", "");
    assert_eq!(sent.status, 303, "{sent:?}");
    assert_eq!(sent.header("location"), Some("/login?next=/map%3Fx%3D1"));
    assert_eq!(ask("/login", "").status, 200);
    let login = https(
        &remote,
        &cert,
        &format!(
            "POST /login HTTP/1.1\r\nHost: {remote}\r\nAuthorization: Bearer {token}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        ),
    );
    assert_eq!(login.status, 200, "{login:?}");
    let set_cookie = login.header("set-cookie").expect("a cookie").to_string();
    assert!(
        set_cookie.contains("HttpOnly") && set_cookie.contains("Secure"),
        "{set_cookie}"
    );
    let cookie = set_cookie.split(';').next().expect("a value").to_string();
    let seen = ask("/api/players", &format!("Cookie: {cookie}\r\n"));
    assert_eq!(seen.status, 200, "{seen:?}");
    assert!(seen.body.contains("watched"), "{seen:?}");
    let seen = ask(
        "/api/players",
        &format!("Authorization: Bearer {token}\r\n"),
    );
    assert_eq!(seen.status, 200, "{seen:?}");
    assert!(seen.body.contains("watched"), "{seen:?}");
    // A name it does not answer to, even with the token.
    let refused = https(
        &remote,
        &cert,
        &format!(
            "GET /api/players HTTP/1.1\r\nHost: evil.example\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n"
        ),
    );
    assert_eq!(refused.status, 421, "{refused:?}");
    player.stop();
    server.stop_cleanly();
}

#[test]
fn off_loopback_with_insecure_http_the_page_is_plain_http_and_still_needs_the_token() {
    let Some(ip) = require_address_off_loopback() else {
        return;
    };
    let scratch = Scratch::new();
    let port = free_port();
    let (mut server, _address, _) = start_with(
        &scratch,
        &format!("0.0.0.0:{port}"),
        &["web.insecure_http=true"],
    );
    let remote = format!("{ip}:{port}");
    assert!(
        server
            .seen
            .iter()
            .any(|l| l.contains(&format!("web page at http://0.0.0.0:{port}/"))),
        "{}",
        server.output()
    );
    assert!(
        server
            .seen
            .iter()
            .any(|l| l.contains("WARN") && l.contains("web.insecure_http")),
        "{}",
        server.output()
    );
    let refused = get_as(&remote, &remote, "/api/players", "");
    assert_eq!(refused.status, 401, "{refused:?}");
    let token = std::fs::read_to_string(scratch.world().join("web-token.txt")).expect("token");
    let seen = get_as(
        &remote,
        &remote,
        "/api/players",
        &format!("Authorization: Bearer {}\r\n", token.trim()),
    );
    assert_eq!(seen.status, 200, "{seen:?}");
    assert!(
        !scratch.world().join("tls").exists(),
        "no certificate needed"
    );

    // One address asking without pause is slowed down (600 at once, 60 a
    // second after), and told when to come back; loopback is not.
    let slowed = (0..3000).find_map(|_| {
        let reply = get_as(&remote, &remote, "/api/changes?since=0", "");
        (reply.status == 429).then_some(reply)
    });
    let slowed = slowed.expect("429 within 3000 requests");
    assert!(
        slowed
            .header("retry-after")
            .and_then(|v| v.parse::<u64>().ok())
            .is_some_and(|s| s >= 1),
        "{slowed:?}"
    );
    let local = get_as(
        &format!("127.0.0.1:{port}"),
        "localhost",
        "/api/changes?since=0",
        "",
    );
    assert_eq!(local.status, 200, "loopback is not slowed: {local:?}");
    server.stop_cleanly();
}

#[test]
fn a_browser_off_loopback_logs_in_with_the_token_and_sees_the_players() {
    let Some(binary) = Browser::binary() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "chromium is missing: scripts/install-browser-deps installs it"
        );
        eprintln!("skipped: no chromium (scripts/install-browser-deps installs it)");
        return;
    };
    let Some(ip) = require_address_off_loopback() else {
        return;
    };
    let scratch = Scratch::new();
    let port = free_port();
    // As an operator opens it to other machines: HTTPS, the self-signed
    // certificate made for the world.
    let (mut server, address, _) = start_with(&scratch, &format!("0.0.0.0:{port}"), &[]);
    let (mut walker, spawn) = Walker::start(&address, "walker");
    let token = std::fs::read_to_string(scratch.world().join("web-token.txt")).expect("token");
    let token = token.trim();

    let mut browser = launch_browser(binary);
    // The one thing a person does by hand: accept the self-signed
    // certificate.
    browser
        .command(
            "Security.setIgnoreCertificateErrors",
            serde_json::json!({"ignore": true}),
        )
        .expect("certificate errors ignored");
    let map = format!(
        "https://{ip}:{port}/map?x={:.0}&z={:.0}&scale=4",
        spawn[0], spawn[2]
    );
    browser.open(&map).expect("the map page");
    // Sent to the login page.
    let at_login = browser
        .wait_true("location.pathname === '/login'", Duration::from_secs(30))
        .expect("evaluate");
    assert!(at_login.is_some(), "the map sends to /login");
    // A wrong token: told, and still there.
    evaluate(
        &mut browser,
        "document.getElementById('token').value = 'not-the-token'; \
         document.getElementById('login').requestSubmit(); true",
    );
    let told = browser
        .wait_true(
            "document.getElementById('error').textContent.includes('not the token')",
            Duration::from_secs(30),
        )
        .expect("evaluate");
    assert!(told.is_some(), "a wrong token is refused");
    // The token: back to the map, which shows the walker.
    evaluate(
        &mut browser,
        &format!(
            "document.getElementById('token').value = '{token}'; \
             document.getElementById('login').requestSubmit(); true"
        ),
    );
    let on_map = browser
        .wait_true(
            "location.pathname === '/map' && !!window.buildatMap \
             && buildatMap.markerPosition('walker') !== null",
            Duration::from_secs(60),
        )
        .expect("evaluate");
    assert!(
        on_map.is_some(),
        "logged in, the map shows the walker: {}",
        evaluate(&mut browser, "location.href")
    );
    assert!(
        (evaluate(&mut browser, "location.search")
            == format!("?x={:.0}&z={:.0}&scale=4", spawn[0], spawn[2])),
        "back where it was"
    );
    // The page's scripts cannot read the cookie, nor the token.
    assert_eq!(evaluate(&mut browser, "document.cookie"), "");
    drop(browser);
    walker.stop();
    server.stop_cleanly();
}
