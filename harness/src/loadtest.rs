//! `loadtest N SECONDS`: N loadbots (`buildat-client --bots`) play against
//! a real server for SECONDS; every window prints the ping round trips,
//! losses, and the server's CPU and memory; the end prints totals and the
//! verdict against the goal. With `--browsers N`, N headless chromium
//! pages show the web map from a third into the steady state on, and
//! the report compares the two halves.
//!
//! Owns: the load run and its report. Does not own: the bots' behaviour
//! (`scripts/bots/loadbot.lua`) or the parsing of their lines (`fleet`).

use std::time::{Duration, Instant};

use anyhow::Context;

use crate::browser::Browser;
use crate::fleet::{BOTS_MAX_SPEED, Counts, Fleet, FleetOptions};
use crate::histogram::show_ms;
use crate::layout::Layout;
use crate::map_pages::MapPages;
use crate::proc_stats::{Sample, cpu_percent};
use crate::server::{ONE_ADDRESS_CROWD, Server, ServerOptions};
use crate::slow_handlers::{SlowHandlers, seconds_of_day};

#[derive(Debug, Clone, clap::Args)]
pub struct LoadOptions {
    /// Number of bots.
    pub bots: u32,
    /// How long each bot plays, in seconds.
    pub seconds: f64,
    /// Bots per client process (they join together).
    #[arg(long, default_value_t = 50)]
    pub per_process: u32,
    /// Seconds over which the client processes are started (default: one
    /// process every 5 s).
    #[arg(long)]
    pub ramp: Option<f64>,
    /// The world's view radius in chunks (`voxelworld.view_radius`).
    #[arg(long, default_value_t = 3)]
    pub view_radius: u32,
    /// Seconds per report window.
    #[arg(long, default_value_t = 10.0)]
    pub window: f64,
    /// Rust light bots (no Lua, no world kept: the server is what is
    /// measured) instead of `buildat-client --bots` with the Lua bot.
    #[arg(long)]
    pub light: bool,
    /// Run the bots' processes under `nice -n N` (1 to 19; 0, the
    /// default, runs them as the harness runs), so the server
    /// gets the CPU first, as on a machine of its own: on one small
    /// machine the Lua bots otherwise take the cores the server's threads
    /// wait for, and the ping measures that wait.
    #[arg(long, value_name = "N", default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=19))]
    pub bots_nice: u8,
    /// More server settings, `KEY=VALUE` (repeatable), e.g.
    /// `--set creatures.count=2000`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub settings: Vec<String>,
    /// Headless chromium pages showing the web module's map, opened
    /// a third into the steady state: the report compares ping and
    /// server CPU before and after they open.
    #[arg(long, default_value_t = 0, conflicts_with = "pages")]
    pub browsers: u32,
    /// Light map pages (threads asking what the map page asks, drawing
    /// nothing: the page's cost to the server alone), open and closed in
    /// turns every 20 s through the steady state: the report compares the
    /// windows with them open and closed.
    #[arg(long, default_value_t = 0)]
    pub pages: u32,
    /// Have the server log every handler that runs at least this many
    /// milliseconds (`--slow-handler-ms`); the report ends with the slowest.
    #[arg(long, value_name = "MS")]
    pub slow_handler_ms: Option<u64>,
    /// Play in this world (used in place) instead of a new one.
    #[arg(long, value_name = "DIR")]
    pub world: Option<std::path::PathBuf>,
    /// `T:LINE`: at T seconds, send LINE on the server's console (e.g.
    /// `60:backup /tmp/world.backup`); the table marks the moment
    /// (repeatable).
    #[arg(long = "console", value_name = "T:LINE", value_parser = parse_console_line)]
    pub console: Vec<(f64, String)>,
    /// A console command asked after every window, its answer printed
    /// under the row (e.g. `active`, `liquid`; repeatable).
    #[arg(long = "ask", value_name = "COMMAND")]
    pub ask: Vec<String>,
    /// `[LABEL=]FROM:TO`: the report adds the ping over the windows that
    /// lie within FROM to TO seconds (e.g. while a console line's work
    /// runs; repeatable). Spans with the same LABEL are also added up into
    /// one line, so states taken in turns compare in one run (`--span
    /// on=70:130 --span off=130:190 --span on=190:250 ...`).
    #[arg(long = "span", value_name = "[LABEL=]FROM:TO", value_parser = parse_span)]
    pub spans: Vec<Span>,
}

/// A `--span`: its label (empty when none) and its seconds.
#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    pub label: String,
    pub from: f64,
    pub to: f64,
}

fn parse_span(text: &str) -> Result<Span, String> {
    let (label, times) = match text.split_once('=') {
        Some((label, times)) if !label.trim().is_empty() => (label.trim().to_string(), times),
        Some(_) => return Err(format!("'{text}': the label before '=' is empty")),
        None => (String::new(), text),
    };
    let (from, to) = parse_times(times)?;
    Ok(Span { label, from, to })
}

fn parse_times(text: &str) -> Result<(f64, f64), String> {
    let (from, to) = text
        .split_once(':')
        .ok_or_else(|| format!("'{text}': expected FROM:TO"))?;
    let number = |t: &str| t.trim().parse::<f64>().map_err(|e| format!("'{t}': {e}"));
    let (from, to) = (number(from)?, number(to)?);
    if !(from >= 0.0 && to > from) {
        return Err(format!("'{text}': FROM must be 0 or more and below TO"));
    }
    Ok((from, to))
}

/// How a console line's answer starts: its first word and a colon, or its
/// first word and a space (`liquid flood 0 0 9` → `liquid:`, `liquid `;
/// `rollback 127.0.0.1 10m` is answered `rollback preview: ...`).
fn answer_prefixes(line: &str) -> Vec<String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let mut prefixes = Vec::new();
    if let Some(first) = words.first() {
        prefixes.push(format!("{first}:"));
        prefixes.push(format!("{first} "));
    }
    prefixes
}

/// The windows that lie within `span` (seconds from the start; a window
/// ends at its row's time), their counts added up.
fn span_counts(rows: &[(f64, f64, Counts)], span: (f64, f64)) -> Counts {
    let mut counts = Counts::default();
    for (start, end, row) in rows {
        if *start >= span.0 - 0.5 && *end <= span.1 + 0.5 {
            counts.merge(row);
        }
    }
    counts
}

fn parse_console_line(text: &str) -> Result<(f64, String), String> {
    let (at, line) = text
        .split_once(':')
        .ok_or_else(|| format!("'{text}': expected T:LINE"))?;
    let at: f64 = at.trim().parse().map_err(|e| format!("'{at}': {e}"))?;
    Ok((at, line.to_string()))
}

/// One row of the table.
struct Row {
    t: f64,
    counts: Counts,
    server_cpu: f64,
    server_rss_kib: u64,
    clients_cpu: f64,
    /// The module with the most queued messages, and how many.
    deepest_queue: Option<(String, u64)>,
    /// The module whose thread was busiest in the window, and its share
    /// of the window (percent of one core's time, calls it made included).
    busiest: Option<(String, f64)>,
}

pub fn print_header() {
    println!(
        "{:>6} {:>6} {:>7} {:>8} {:>8} {:>8} {:>5} {:>8} {:>9} {:>9}  {:<13} {:<16}",
        "t s",
        "bots",
        "pongs",
        "p50 ms",
        "p99 ms",
        "max ms",
        "lost",
        "srv CPU%",
        "srv RSS",
        "bots CPU%",
        "deepest queue",
        "busiest module"
    );
}

fn print_row(spawned: u64, row: &Row) {
    let h = &row.counts.hist;
    println!(
        "{:>6.0} {:>6} {:>7} {:>8} {:>8} {:>8} {:>5} {:>8.0} {:>6} MiB {:>9.0}  {:<13} {}",
        row.t,
        spawned,
        row.counts.answered,
        show_ms(h.percentile_ms(50.0)),
        show_ms(h.percentile_ms(99.0)),
        show_ms(h.max_ms()),
        row.counts.lost,
        row.server_cpu,
        row.server_rss_kib / 1024,
        row.clients_cpu,
        row.deepest_queue
            .as_ref()
            .map_or("-".to_string(), |(name, n)| format!("{name} {n}")),
        row.busiest
            .as_ref()
            .map_or("-".to_string(), |(name, p)| format!("{name} {p:.0}%"))
    );
}

/// Some windows of the table added up: the bots' counts, and the server's
/// CPU seconds against the wall seconds.
#[derive(Default)]
struct Windows {
    counts: Counts,
    cpu_seconds: f64,
    wall_seconds: f64,
}

impl Windows {
    fn add(&mut self, counts: &Counts, cpu: Option<(&Sample, &Sample)>) {
        self.counts.merge(counts);
        if let Some((a, b)) = cpu {
            self.cpu_seconds += b.cpu_seconds - a.cpu_seconds;
            self.wall_seconds += b.at.duration_since(a.at).as_secs_f64();
        }
    }

    /// A report line: the pings' p50 and p99, and the server's CPU.
    fn line(&self, label: &str) -> String {
        format!(
            "steady, {label}: p50 {} ms, p99 {} ms ({} pongs); server CPU {:.0} %",
            show_ms(self.counts.hist.percentile_ms(50.0)),
            show_ms(self.counts.hist.percentile_ms(99.0)),
            self.counts.answered,
            self.cpu_seconds / self.wall_seconds.max(f64::EPSILON) * 100.0
        )
    }
}

/// What a driven run measured besides the fleet's own report.
struct Driven {
    /// The windows after the ramp while every bot plays: the steady state
    /// (with `--browsers` or `--pages`, those with none open).
    steady: Windows,
    /// The steady windows with the browsers or pages open (the window in
    /// which browsers opened, and the one after, are in neither).
    browsing: Windows,
    /// `--browsers`: the web module's work while they were open.
    web_work: Option<String>,
    notes: Vec<String>,
    peak_rss_kib: u64,
    /// Every window: its start and end (seconds from the start) and counts.
    windows: Vec<(f64, f64, Counts)>,
}

/// `--browsers`: the pages (idle-priority browsers: on this one machine they
/// would otherwise take the CPU of the server and bots they measure, which
/// browsers elsewhere would not), opened by a thread of their own (chromium
/// starting on a busy machine takes seconds; the fleet's lines are read
/// meanwhile).
struct Browsers {
    /// Where the web module serves its page.
    web: String,
    /// When to open them, seconds from the start.
    open_at: f64,
    /// The thread opening them, until they are open.
    opening: Option<std::sync::mpsc::Receiver<anyhow::Result<Vec<Browser>>>>,
    open: Vec<Browser>,
    /// Rows not counted in either half: while opening, and the first after.
    settling: bool,
    /// The web module's own counters once the pages showed, and when.
    counters_at_open: Option<(Instant, std::collections::HashMap<String, f64>)>,
    /// The browsers' CPU seconds (every process of theirs) once the pages
    /// showed, and when.
    cpu_at_open: Option<(Instant, f64)>,
}

/// The web module's `buildat_web_*` counters, read from `/metrics` (not
/// through a page: an idle-priority browser on a busy machine took up to
/// a minute to answer, and the run's rows waited for it).
fn web_counters(web: &str) -> Option<std::collections::HashMap<String, f64>> {
    let reply = crate::http::request(web, "GET", "/metrics", None).ok()?;
    Some(
        reply
            .text()
            .lines()
            .filter(|line| line.starts_with("buildat_web_"))
            .filter_map(|line| {
                let (name, value) = line.split_once(' ')?;
                Some((name.to_string(), value.trim().parse().ok()?))
            })
            .collect(),
    )
}

impl Browsers {
    /// The browsers' own CPU while they were open (% of one core, all
    /// their processes), and their threads' scheduling policies: what they
    /// took of the machine the server shares with them.
    fn browser_work(&mut self) -> Option<String> {
        let (at, before) = self.cpu_at_open.take()?;
        let now: f64 = self.open.iter().map(Browser::cpu_seconds).sum();
        let seconds = at.elapsed().as_secs_f64().max(f64::EPSILON);
        let processes: usize = self.open.iter().map(|b| b.processes().len()).sum();
        let (idle, other) = self
            .open
            .iter()
            .map(Browser::thread_policies)
            .fold((0, 0), |(i, o), p| (i + p.idle, o + p.other));
        Some(format!(
            "browsers over {seconds:.0} s open: {:.0} % of a core ({:.1} s of CPU), {processes} processes, \
             threads: {idle} at idle priority, {other} not",
            (now - before) / seconds * 100.0,
            now - before
        ))
    }

    /// What the page's server side did while the pages were open.
    fn web_work(&mut self) -> Option<String> {
        let (at, before) = self.counters_at_open.take()?;
        let after = web_counters(&self.web)?;
        let delta = |name: &str| {
            after.get(name).copied().unwrap_or(0.0) - before.get(name).copied().unwrap_or(0.0)
        };
        let seconds = at.elapsed().as_secs_f64().max(f64::EPSILON);
        Some(format!(
            "web module over {seconds:.0} s with the pages open: {:.0} requests, {:.0} tiles drawn ({:.2} s), \
             {:.0} column_tops calls ({:.2} s of voxelworld's thread, {:.1} %)",
            delta("buildat_web_requests_total"),
            delta("buildat_web_tiles_rendered_total"),
            delta("buildat_web_tile_render_seconds_total"),
            delta("buildat_web_column_tops_calls_total"),
            delta("buildat_web_column_tops_seconds_total"),
            delta("buildat_web_column_tops_seconds_total") / seconds * 100.0
        ))
    }
}

impl Browsers {
    fn start_opening(&mut self, count: u32) {
        let (done, opening) = std::sync::mpsc::channel();
        let url = format!("http://{}/map?x=0&z=0&scale=1", self.web);
        std::thread::spawn(move || {
            let open = || -> anyhow::Result<Vec<Browser>> {
                let binary = Browser::binary()
                    .context("chromium is missing: scripts/install-browser-deps installs it")?;
                // All at once: one after the other, ten chromium at idle
                // priority on a busy machine took 60 to 95 s to open.
                let opening: Vec<_> = (0..count)
                    .map(|_| {
                        let url = url.clone();
                        std::thread::spawn(move || -> anyhow::Result<Browser> {
                            let mut browser = Browser::launch_idle(binary, 1100, 720)?;
                            browser.navigate(&url)?;
                            Ok(browser)
                        })
                    })
                    .collect();
                opening
                    .into_iter()
                    .map(|thread| {
                        thread
                            .join()
                            .map_err(|_| anyhow::anyhow!("a browser's thread panicked"))?
                    })
                    .collect()
            };
            let _ = done.send(open());
        });
        self.opening = Some(opening);
        self.settling = true;
    }
}

/// Runs the fleet against `server` until it is done, printing a row per
/// window.
fn drive(server: &mut Server, fleet: &mut Fleet, options: &LoadOptions, ramp: Duration) -> Driven {
    let started = Instant::now();
    let window = Duration::from_secs_f64(options.window.max(1.0));
    let limit = Duration::from_secs_f64(options.seconds) + ramp + Duration::from_secs(60);
    let mut driven = Driven {
        steady: Windows::default(),
        browsing: Windows::default(),
        web_work: None,
        notes: Vec::new(),
        peak_rss_kib: 0,
        windows: Vec::new(),
    };
    let mut pages = match options.pages {
        0 => None,
        count => match server.web_address() {
            Ok(web) => Some(MapPages::start(&web, count)),
            Err(error) => {
                driven.notes.push(format!("no pages: {error:#}"));
                None
            }
        },
    };
    let mut pages_open = false;
    let mut steady_rows = 0u32;
    let mut browsers = match options.browsers {
        0 => None,
        _ => match server.web_address() {
            Ok(web) => Some(Browsers {
                web,
                // A third into the steady state: opening takes a while on
                // a busy machine, and the half with them open needs windows.
                open_at: {
                    let steady_from = ramp.as_secs_f64() + window.as_secs_f64();
                    steady_from + (options.seconds - steady_from).max(60.0) / 3.0
                },
                opening: None,
                open: Vec::new(),
                settling: false,
                counters_at_open: None,
                cpu_at_open: None,
            }),
            Err(error) => {
                driven.notes.push(format!("no browsers: {error:#}"));
                None
            }
        },
    };
    let mut last_server: Option<Sample> = server.sample();
    let mut last_fleet: Option<Sample> = fleet.sample();
    let mut next_row = started + window;
    let mut last_busy: std::collections::HashMap<String, f64> = Default::default();
    let mut last_table_at = Instant::now();
    let mut console_lines = options.console.clone();
    console_lines.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut console_lines = console_lines.into_iter().peekable();
    let mut window_start = 0.0;
    let mut answers_from: Vec<(usize, Vec<String>)> = Vec::new();
    print_header();
    loop {
        std::thread::sleep(Duration::from_millis(250));
        server.pump();
        fleet.pump();
        let t = started.elapsed().as_secs_f64();
        while let Some((_, line)) = console_lines.next_if(|(at, _)| *at <= t) {
            println!("-- t = {t:.0} s: `{line}` on the console --");
            server.send(&line);
            answers_from.push((server.seen.len(), answer_prefixes(&line)));
        }
        // The console lines' answers: the first line after each that starts
        // with its first two words or its name and a colon.
        answers_from.retain(|(from, prefixes)| {
            let answer = server.seen[*from..]
                .iter()
                .find(|l| prefixes.iter().any(|p| l.starts_with(p.as_str())));
            if let Some(answer) = answer {
                println!("-- console: {answer}");
            }
            answer.is_none()
        });
        if let Some(b) = &mut browsers
            && let Some(opened) = b.opening.as_ref().and_then(|o| o.try_recv().ok())
        {
            b.opening = None;
            match opened {
                Ok(open) => {
                    println!("-- {} browsers show the map (t = {t:.0} s) --", open.len());
                    b.open = open;
                    b.counters_at_open =
                        web_counters(&b.web).map(|counters| (Instant::now(), counters));
                    b.cpu_at_open = Some((
                        Instant::now(),
                        b.open.iter().map(Browser::cpu_seconds).sum(),
                    ));
                }
                Err(error) => {
                    driven.notes.push(format!("browsers: {error:#}"));
                    browsers = None;
                }
            }
        }
        if !server.is_running() {
            driven
                .notes
                .push(format!("the server exited at t = {t:.0} s"));
            break;
        }
        let fleet_done = fleet.report.ended.len() as u32 >= options.bots;
        if Instant::now() >= next_row || fleet_done {
            next_row += window;
            let server_now = server.sample();
            let fleet_now = fleet.sample();
            let counts = fleet.take_window();
            let mut row = Row {
                t,
                server_cpu: match (&last_server, &server_now) {
                    (Some(a), Some(b)) => cpu_percent(a, b),
                    _ => 0.0,
                },
                server_rss_kib: server_now.map_or(0, |s| s.rss_kib),
                // Processes starting or ending in the window make this rough.
                clients_cpu: match (&last_fleet, &fleet_now) {
                    (Some(a), Some(b)) => cpu_percent(a, b).max(0.0),
                    _ => 0.0,
                },
                counts,
                deepest_queue: None,
                busiest: None,
            };
            if let Some(modules) = module_table(server) {
                row.deepest_queue = modules
                    .iter()
                    .max_by_key(|m| m.queued)
                    .map(|m| (m.name.clone(), m.queued));
                let wall = last_table_at.elapsed().as_secs_f64().max(f64::EPSILON);
                row.busiest = modules
                    .iter()
                    .filter_map(|m| {
                        let before = last_busy.get(&m.name)?;
                        Some((m.name.clone(), (m.busy_seconds - before) / wall * 100.0))
                    })
                    .max_by(|a, b| a.1.total_cmp(&b.1));
                last_busy = modules
                    .into_iter()
                    .map(|m| (m.name, m.busy_seconds))
                    .collect();
                last_table_at = Instant::now();
            }
            print_row(fleet.report.spawned, &row);
            driven.windows.push((window_start, t, row.counts.clone()));
            window_start = t;
            for command in &options.ask {
                let answer = format!("{}: ", command.split_whitespace().next().unwrap_or(""));
                match server.command(command, &[&answer], Duration::from_secs(5)) {
                    Ok(line) => println!("       {line}"),
                    Err(error) => println!("       {error:#}"),
                }
            }
            driven.peak_rss_kib = driven.peak_rss_kib.max(row.server_rss_kib);
            // The steady state: every bot joined and none gone yet.
            if started.elapsed() > ramp + window
                && fleet.all_started()
                && fleet.report.ended.is_empty()
            {
                let windows = match &mut browsers {
                    Some(b) if b.settling => {
                        // Open since the last row: the next counts.
                        b.settling = b.open.is_empty();
                        None
                    }
                    Some(b) if !b.open.is_empty() => Some(&mut driven.browsing),
                    _ if pages_open => Some(&mut driven.browsing),
                    _ => Some(&mut driven.steady),
                };
                if let Some(windows) = windows {
                    windows.add(&row.counts, last_server.as_ref().zip(server_now.as_ref()));
                }
                steady_rows += 1;
                // Light pages: open and closed in turns, two rows each.
                if let Some(pages) = &pages
                    && steady_rows.is_multiple_of(2)
                {
                    pages_open = !pages_open;
                    pages.set_open(pages_open);
                    println!(
                        "-- {} light pages {} --",
                        options.pages,
                        if pages_open { "open" } else { "closed" }
                    );
                }
            } else if let Some(pages) = &pages
                && pages_open
            {
                // The bots are leaving: the comparison is over.
                pages_open = false;
                pages.set_open(false);
            }
            if let Some(b) = &mut browsers
                && b.open.is_empty()
                && b.opening.is_none()
                && t >= b.open_at
                && fleet.all_started()
            {
                println!("-- opening {} browsers on the map --", options.browsers);
                b.start_opening(options.browsers);
            }
            last_server = server_now;
            // CPU of the clients: only between samples of the same processes.
            last_fleet = fleet_now;
        }
        if fleet_done {
            break;
        }
        if started.elapsed() > limit {
            driven.notes.push(format!(
                "the bots were still running {} s after their end",
                (limit - ramp).as_secs()
            ));
            break;
        }
    }
    if let Some(b) = browsers.as_mut() {
        let work: Vec<String> = [b.web_work(), b.browser_work()]
            .into_iter()
            .flatten()
            .collect();
        if !work.is_empty() {
            driven.web_work = Some(work.join("\n"));
        }
    }
    if let Some(pages) = pages.take() {
        let (answered, failed) = (
            pages.answered.load(std::sync::atomic::Ordering::Relaxed),
            pages.failed.load(std::sync::atomic::Ordering::Relaxed),
        );
        driven.web_work = Some(format!(
            "light pages: {answered} requests answered, {failed} failed"
        ));
    }
    fleet.wait(Duration::from_secs(30));
    driven
}

/// The fleet's totals as report lines, its health first; also whether it
/// is healthy.
fn fleet_summary(fleet: &Fleet, bots: u32, seconds: f64, steady: &Counts) -> (bool, Vec<String>) {
    let r = &fleet.report;
    let h = &r.total.hist;
    let mut lines = r.health_lines(bots);
    lines.extend([
        format!(
            "ping round trip, whole run:  p50 {} ms, p99 {} ms, max {} ms",
            show_ms(h.percentile_ms(50.0)),
            show_ms(h.percentile_ms(99.0)),
            show_ms(h.max_ms())
        ),
        format!(
            "ping round trip, after ramp: p50 {} ms, p99 {} ms, max {} ms ({} pongs)",
            show_ms(steady.hist.percentile_ms(50.0)),
            show_ms(steady.hist.percentile_ms(99.0)),
            show_ms(steady.hist.max_ms()),
            steady.answered
        ),
        format!(
            "actions: {} moves, {} digs, {} places; {} edits seen, {} refused",
            r.total.moves, r.total.digs, r.total.places, r.total.edits, r.total.refused
        ),
        format!(
            "chunks received:             {} ({:.0} chunks/s)",
            r.chunk_packets,
            r.chunk_packets as f64 / seconds.max(1.0)
        ),
    ]);
    let healthy = r.is_healthy(bots) && r.ended.len() as u64 == u64::from(bots);
    (healthy, lines)
}

/// Each module's share of the run in its handlers and its messages' wait
/// p99, busiest first.
fn busy_summary(start: &(Instant, Vec<ModuleLine>), end: &[ModuleLine]) -> String {
    let wall = start.0.elapsed().as_secs_f64().max(f64::EPSILON);
    let mut shares: Vec<(f64, String)> = end
        .iter()
        .map(|m| {
            let before = start
                .1
                .iter()
                .find(|s| s.name == m.name)
                .map_or(0.0, |s| s.busy_seconds);
            let share = (m.busy_seconds - before) / wall * 100.0;
            (
                share,
                format!("{} {share:.0}% (wait p99 {})", m.name, m.wait_p99),
            )
        })
        .collect();
    shares.sort_by(|a, b| b.0.total_cmp(&a.0));
    let shares: Vec<String> = shares.into_iter().map(|(_, text)| text).collect();
    format!(
        "modules, time in handlers over the run: {}",
        shares.join(", ")
    )
}

/// The handlers that ran at least `limit_ms`, most time first, with the
/// worst run's time in seconds after the server said where it listens.
fn slow_handler_lines(server: &Server, limit_ms: u64) -> Vec<String> {
    let sums = SlowHandlers::from_lines(&server.seen);
    let epoch = server
        .seen
        .iter()
        .find(|l| l.contains("listening on "))
        .and_then(|l| seconds_of_day(l));
    let mut lines = vec![format!(
        "server: handlers that ran {limit_ms} ms or more ({} of them; worst t: seconds after the server listened):",
        sums.handlers.len()
    )];
    lines.extend(sums.table(12, epoch).into_iter().map(|l| format!("  {l}")));
    lines
}

/// A row of the console's `modules` table.
pub(crate) struct ModuleLine {
    pub(crate) name: String,
    queued: u64,
    /// Seconds in its handlers since the server started.
    pub(crate) busy_seconds: f64,
    /// Its messages' wait p99 since the server started (`≤ 25 ms`, ...).
    pub(crate) wait_p99: String,
}

/// The console's `modules` table (the rows of loaded modules; a failed
/// one's state holds spaces and is skipped).
pub(crate) fn module_table(server: &mut Server) -> Option<Vec<ModuleLine>> {
    let from = server.seen.len();
    server.send("modules");
    server.wait_for("queued", Duration::from_secs(5))?;
    std::thread::sleep(Duration::from_millis(50));
    server.pump();
    let header = from
        + server.seen[from..]
            .iter()
            .position(|l| l.contains("queued"))?;
    let rows = server.seen[header + 1..]
        .iter()
        .map_while(|line| {
            // module, state, build, queued, busy s, wait p99, loaded.
            let fields: Vec<&str> = line.split_whitespace().collect();
            // "loaded" is `N s ago` or `-`.
            let loaded_words = if fields.last() == Some(&"ago") { 3 } else { 1 };
            Some(ModuleLine {
                name: fields.first()?.to_string(),
                queued: fields.get(3)?.parse().ok()?,
                busy_seconds: fields.get(4)?.parse().ok()?,
                wait_p99: fields
                    .get(5..fields.len().checked_sub(loaded_words)?)?
                    .join(" "),
            })
        })
        .collect();
    Some(rows)
}

/// Console commands whose answers end the report (those of the game's
/// modules that are loaded).
const STATUS_COMMANDS: [&str; 5] = ["world", "replicate", "creatures", "active", "liquid"];

/// The answers of [`STATUS_COMMANDS`] at the end of the run.
fn ask_status(server: &mut Server) -> Vec<String> {
    let mut told = Vec::new();
    for command in STATUS_COMMANDS {
        let answer = format!("{command}: ");
        if let Ok(line) = server.command(command, &[&answer], Duration::from_secs(10)) {
            told.push(line);
        }
    }
    told
}

pub fn run(layout: &Layout, options: &LoadOptions) -> anyhow::Result<bool> {
    let processes = options.bots.div_ceil(options.per_process.max(1));
    let ramp = Duration::from_secs_f64(
        options
            .ramp
            .unwrap_or(5.0 * f64::from(processes.saturating_sub(1))),
    );
    println!(
        "loadtest: {} bots in {processes} client processes (ramp {:.0} s), {} s each, view radius {}{}",
        options.bots,
        ramp.as_secs_f64(),
        options.seconds,
        options.view_radius,
        if options.bots_nice > 0 {
            format!(", bots under nice -n {}", options.bots_nice)
        } else {
            String::new()
        }
    );
    let mut server = Server::start(
        layout,
        &ServerOptions {
            world: options
                .world
                .clone()
                .unwrap_or_else(|| layout.path("world")),
            extra_module_paths: Vec::new(),
            settings: [format!("voxelworld.view_radius={}", options.view_radius)]
                .into_iter()
                .chain(ONE_ADDRESS_CROWD.map(String::from))
                .chain([BOTS_MAX_SPEED.to_string()])
                // The page on a port of its own when browsers will look.
                .chain(
                    (options.browsers > 0 || options.pages > 0)
                        .then(|| "web.listen=127.0.0.1:0".to_string()),
                )
                .chain(options.settings.iter().cloned())
                .collect(),
            tick_ms: 100,
            watchdog_ms: None,
            slow_handler_ms: options.slow_handler_ms,
            log_file: layout.path("server.log"),
        },
    )?;
    println!("server {} listening on {}", server.pid(), server.address);
    let start_sample = server.sample();
    let modules_at_start = (
        Instant::now(),
        module_table(&mut server).unwrap_or_default(),
    );
    let mut fleet = Fleet::start(
        layout,
        &server.address,
        &FleetOptions {
            bots: options.bots,
            per_process: options.per_process,
            ramp,
            seconds: options.seconds,
            light: options.light,
            nice: options.bots_nice,
        },
    )?;
    let Driven {
        steady,
        browsing,
        web_work,
        notes,
        peak_rss_kib,
        windows,
    } = drive(&mut server, &mut fleet, options, ramp);
    let end_sample = server.sample();
    let mut told = ask_status(&mut server);
    if let Some(modules) = module_table(&mut server) {
        told.push(busy_summary(&modules_at_start, &modules));
    }
    let problems = server.problems_since(0);
    let status = server.stop(Duration::from_secs(60));
    let (clean, mut lines) = fleet_summary(&fleet, options.bots, options.seconds, &steady.counts);
    if let (Some(a), Some(b)) = (start_sample, end_sample) {
        lines.push(format!(
            "server: CPU {:.0} % of one core on average, {:.1} CPU s in all; RSS {} MiB at start, {} MiB peak, {} MiB at end ({} KiB per bot)",
            cpu_percent(&a, &b),
            b.cpu_seconds - a.cpu_seconds,
            a.rss_kib / 1024,
            peak_rss_kib / 1024,
            b.rss_kib / 1024,
            b.rss_kib.saturating_sub(a.rss_kib) / u64::from(options.bots.max(1))
        ));
    }
    lines.push(format!(
        "server: {} ERROR/WARN lines; exit status after `stop`: {}",
        problems.len(),
        status.map_or("did not exit".to_string(), |s| s.to_string())
    ));
    for line in problems.iter().take(5) {
        lines.push(format!("  server: {line}"));
    }
    if options.browsers > 0 || options.pages > 0 {
        let what = if options.pages > 0 {
            format!("{} light pages open", options.pages)
        } else {
            format!("{} browsers open", options.browsers)
        };
        lines.push(steady.line("none open"));
        lines.push(browsing.line(&what));
        lines.extend(web_work);
    }
    let ping_line = |what: String, counts: &Counts| {
        format!(
            "ping round trip, {what}: p50 {} ms, p99 {} ms, max {} ms ({} pongs)",
            show_ms(counts.hist.percentile_ms(50.0)),
            show_ms(counts.hist.percentile_ms(99.0)),
            show_ms(counts.hist.max_ms()),
            counts.answered
        )
    };
    let mut labelled: Vec<(String, Counts)> = Vec::new();
    for span in &options.spans {
        let counts = span_counts(&windows, (span.from, span.to));
        let name = if span.label.is_empty() {
            String::new()
        } else {
            format!("{} ", span.label)
        };
        let what = format!("{name}windows within {:.0}..{:.0} s", span.from, span.to);
        lines.push(ping_line(what, &counts));
        if !span.label.is_empty() {
            match labelled.iter_mut().find(|(label, _)| *label == span.label) {
                Some((_, total)) => total.merge(&counts),
                None => labelled.push((span.label.clone(), counts)),
            }
        }
    }
    for (label, counts) in &labelled {
        lines.push(ping_line(format!("every '{label}' span"), counts));
    }
    lines.extend(told.iter().map(|t| format!("server: {t}")));
    if let Some(limit) = options.slow_handler_ms {
        lines.extend(slow_handler_lines(&server, limit));
    }
    lines.extend(notes.iter().map(|n| format!("note: {n}")));
    let pass = clean && status == Some(0) && notes.is_empty();
    let p99 = fleet.report.total.hist.percentile_ms(99.0);
    let run = GoalRun {
        bots: options.bots,
        seconds: options.seconds,
        ramp_seconds: ramp.as_secs_f64(),
        light: options.light,
        clean: fleet.report.unexpected.is_empty(),
        p99_ms: p99,
    };
    lines.extend(goal_lines(&run));
    lines.push(format!("loadtest: {}", if pass { "PASS" } else { "FAIL" }));
    println!("\n{}", lines.join("\n"));
    Ok(pass)
}

/// What a run's goal lines are judged on.
struct GoalRun {
    bots: u32,
    seconds: f64,
    ramp_seconds: f64,
    light: bool,
    /// No unexpected disconnect.
    clean: bool,
    /// The whole run's ping p99.
    p99_ms: Option<f64>,
}

/// The load goals and whether this run met them: 500 bots for 5 minutes,
/// and (issue 21) 1,000 light bots all connected at once, each with p99
/// under 50 ms over the whole run, joins included.
fn goal_lines(run: &GoalRun) -> [String; 2] {
    let verdict = |measured: bool| {
        if !measured {
            return format!(
                "not measured by this run ({} bots, {} s)",
                run.bots, run.seconds
            );
        }
        let p99 = run.p99_ms.map_or("none".to_string(), |p| format!("{p} ms"));
        let met = run.clean && run.p99_ms.is_some_and(|p| p < 50.0);
        format!("{} (p99 {p99})", if met { "met" } else { "NOT met" })
    };
    let five_minutes = run.bots >= 500 && run.seconds >= 300.0;
    let thousand_at_once = run.light && run.bots >= 1000 && run.seconds > run.ramp_seconds;
    [
        format!(
            "goal (500 bots, 5 min, 0 unexpected disconnects, p99 < 50 ms): {}",
            verdict(five_minutes)
        ),
        format!(
            "goal (1,000 light bots connected at once, 0 unexpected disconnects, p99 < 50 ms over the whole run): {}",
            verdict(thousand_at_once)
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_goals_are_judged_only_on_runs_that_measure_them() {
        let run = GoalRun {
            bots: 1000,
            seconds: 150.0,
            ramp_seconds: 95.0,
            light: true,
            clean: true,
            p99_ms: Some(46.0),
        };
        let [five_minutes, thousand] = goal_lines(&run);
        assert!(five_minutes.ends_with("not measured by this run (1000 bots, 150 s)"));
        assert!(thousand.ends_with(": met (p99 46 ms)"), "{thousand}");
        let slow = GoalRun {
            p99_ms: Some(51.0),
            ..run
        };
        assert!(goal_lines(&slow)[1].ends_with(": NOT met (p99 51 ms)"));
        let dropped = GoalRun {
            clean: false,
            ..slow
        };
        assert!(goal_lines(&dropped)[1].contains("NOT met"));
        let short = GoalRun {
            seconds: 60.0,
            p99_ms: Some(20.0),
            ..dropped
        };
        assert!(
            goal_lines(&short)[1].contains("not measured"),
            "never all at once"
        );
        let long = GoalRun {
            bots: 500,
            seconds: 300.0,
            light: false,
            clean: true,
            ..short
        };
        let [five_minutes, thousand] = goal_lines(&long);
        assert!(five_minutes.ends_with(": met (p99 20 ms)"));
        assert!(thousand.contains("not measured"));
    }

    #[test]
    fn a_span_counts_only_the_windows_within_it() {
        let span = |label: &str, from, to| Span {
            label: label.to_string(),
            from,
            to,
        };
        assert_eq!(parse_span("30:60"), Ok(span("", 30.0, 60.0)));
        assert_eq!(parse_span("off=30:60"), Ok(span("off", 30.0, 60.0)));
        assert!(parse_span("=30:60").is_err());
        assert!(parse_span("60:30").is_err());
        assert!(parse_span("30").is_err());
        let window = |ms: f64| {
            let mut counts = Counts {
                answered: 1,
                ..Counts::default()
            };
            counts.hist.record_ms(ms);
            counts
        };
        let rows = vec![
            (0.0, 10.2, window(1.0)),
            (10.2, 20.1, window(100.0)),
            (20.1, 30.3, window(200.0)),
            (30.3, 40.0, window(1.0)),
        ];
        let during = span_counts(&rows, (10.0, 30.0));
        assert_eq!(during.answered, 2);
        assert!(during.hist.percentile_ms(50.0).is_some_and(|p| p >= 100.0));
        assert_eq!(span_counts(&rows, (0.0, 5.0)).answered, 0);
        assert_eq!(span_counts(&rows, (0.0, 40.0)).answered, 4);
    }

    #[test]
    fn a_console_lines_answer_starts_with_its_first_word() {
        assert_eq!(
            answer_prefixes("liquid flood 0 0 9"),
            ["liquid:", "liquid "]
        );
        assert_eq!(answer_prefixes("active"), ["active:", "active "]);
        assert!(answer_prefixes("  ").is_empty());
    }

    #[test]
    fn a_console_line_is_a_time_then_the_line() {
        assert_eq!(
            parse_console_line("60:backup /tmp/a:b.backup"),
            Ok((60.0, "backup /tmp/a:b.backup".to_string()))
        );
        assert!(parse_console_line("backup").is_err());
        assert!(parse_console_line("soon:backup x").is_err());
    }
}
