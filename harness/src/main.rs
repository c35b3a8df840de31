//! `buildat-harness`: the reliability harness's command line. Each
//! subcommand drives the real `buildat-server` and `buildat-client`
//! binaries (found beside this one) on 127.0.0.1 with a temporary world,
//! prints its figures as a table, and exits 0 only when nothing broke
//! (timing goals are reported, never asserted). The `scripts/loadtest`,
//! `scripts/faulttest`, `scripts/abuse` and `scripts/crashtest` wrappers
//! build everything first.
//!
//! Owns: argument parsing and exit codes. Does not own: the tests
//! themselves (one module each in the library, `buildat_harness`).

use std::process::ExitCode;

use buildat_harness::layout::{CommonOptions, Layout};
use buildat_harness::{
    abuse, census, crashtest, faulttest, inflate, lightbots, loadtest, mapbench, timerbench,
    walkgen,
};
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "buildat-harness",
    about = "Load, fault, abuse and crash tests against the real Buildat server and client",
    after_help = "Exit codes: 0 nothing broke; 1 something broke (the report says what); 2 usage."
)]
struct Cli {
    #[command(flatten)]
    common: CommonOptions,
    #[command(subcommand)]
    command: Test,
}

#[derive(Subcommand)]
enum Test {
    /// N bots play for SECONDS: connects, disconnects, ping p50/p99,
    /// chunks/s, server CPU and memory over time.
    Loadtest(loadtest::LoadOptions),
    /// While bots play: reload every module ROUNDS times, make a module panic
    /// and hang, run the abuse corpus; lost events, dropped players, exits.
    Faulttest(faulttest::FaultOptions),
    /// The bad-input corpus against a running server, with bystanders.
    Abuse(abuse::AbuseOptions),
    /// kill -9 during saves under load, ITERATIONS times; integrity and
    /// every acknowledged save checked after each.
    Crashtest(crashtest::CrashOptions),
    /// Bots keep items moving while the item modules are reloaded and the
    /// server killed; the item census must never change.
    Census(census::CensusOptions),
    /// Light bots against a running server (what `loadtest --light` starts):
    /// Rust players, a thread each, report lines on stderr.
    Lightbots(lightbots::LightBotOptions),
    /// A real browser draws the web map of a pregenerated square area:
    /// seconds, tiles and server CPU, cold and warm.
    Mapbench(mapbench::MapOptions),
    /// Players walk into terrain never generated: how long each waits for
    /// its full view after entering a chunk, against headless pregen.
    Walkgen(walkgen::WalkOptions),
    /// N voxel timers set around a player: the idle server with them
    /// stored and unloaded against none, the time to load and fire them.
    Timerbench(timerbench::TimerOptions),
    /// Makes a stopped world's database N bytes big by copying its
    /// sections (new positions, new ids): a big world for the backup and
    /// storage figures.
    Inflate(inflate::InflateOptions),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Test::Inflate(options) = &cli.command {
        return match inflate::run(options) {
            Ok(_) => ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("buildat-harness: {error:#}");
                ExitCode::FAILURE
            }
        };
    }
    if let Test::Lightbots(options) = &cli.command {
        return if lightbots::run(options) {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        };
    }
    let layout = match Layout::new(&cli.common) {
        Ok(layout) => layout,
        Err(error) => {
            eprintln!("buildat-harness: {error:#}");
            return ExitCode::from(2);
        }
    };
    let result = match &cli.command {
        Test::Loadtest(options) => loadtest::run(&layout, options),
        Test::Faulttest(options) => faulttest::run(&layout, options),
        Test::Abuse(options) => abuse::run_standalone(&layout, options),
        Test::Crashtest(options) => crashtest::run(&layout, options),
        Test::Census(options) => census::run(&layout, options),
        Test::Lightbots(_) | Test::Inflate(_) => Ok(true),
        Test::Mapbench(options) => mapbench::run(&layout, options),
        Test::Walkgen(options) => walkgen::run(&layout, options),
        Test::Timerbench(options) => timerbench::run(&layout, options),
    };
    if cli.common.keep {
        let _ = layout.scratch.keep();
    }
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(error) => {
            eprintln!("buildat-harness: {error:#}");
            ExitCode::FAILURE
        }
    }
}
