//! The operator console on stdin: one command a line. Works when stdin is a
//! pipe or a file, not only a terminal; end of input leaves the server
//! running.
//!
//! Commands run one at a time in the order typed, but `stop` is acted on
//! the moment it is read, even while another command (a `load` or `reload`
//! that compiles) runs; it cancels that build.
//!
//! Owns: parsing and answering console commands. Does not own: what the
//! commands do (`crate::core::Core`).

use std::io::BufRead;

use buildat_interface::core_api::ModuleState;

use crate::core::Core;

pub const HELP: &str = "\
commands:
  help            this list
  modules         every module: state, build hash, when loaded
  modules add DIR search DIR for modules too, load them and watch it
  load NAME       load a module from the module paths
  unload NAME     unload a module
  reload NAME     rebuild if changed, then reload keeping queued events;
                  the modules built against its changed API are rebuilt
                  and reloaded with it (all or none)
  set MODULE.KEY VALUE  check a setting's value, keep it in world.toml
                  (comments kept); a live one is applied now (MODULE
                  refusing it keeps its value and the file), the others
                  at MODULE's next reload (`settings` shows which)
  settings        every loaded module's settings: value, source, and
                  whether a `set` of it is applied live or at a reload
  emit NAME [TEXT]  emit an event; its payload is TEXT as a bincode string
                  (modules document which events take one), else empty
  stop            unload every module in reverse load order and exit
                  (at once: a running module build is cancelled)";

/// Reads commands from stdin on a thread of its own and runs them in order
/// on another, except `stop`, which is run as soon as it is read: a
/// `load` or `reload` compiling for minutes does not hold it up.
pub fn spawn(core: Core) -> std::io::Result<()> {
    let (send, commands) = crossbeam_channel::unbounded::<String>();
    let runner = core.clone();
    std::thread::Builder::new()
        .name("console-commands".into())
        .spawn(move || {
            for line in commands {
                print_answer(&run_command(&runner, &line));
            }
        })?;
    std::thread::Builder::new()
        .name("console".into())
        .spawn(move || {
            let stdin = std::io::stdin();
            for line in stdin.lock().lines() {
                let Ok(line) = line else { break };
                if line.split_whitespace().next() == Some("stop") {
                    print_answer(&run_command(&core, &line));
                } else if send.send(line).is_err() {
                    break;
                }
            }
            tracing::info!(
                "console: end of input; the server keeps running (stop it with SIGTERM)"
            );
        })
        .map(drop)
}

/// The built-in commands, then those of the modules.
fn help(core: &Core) -> String {
    let mut out = HELP.to_string();
    let commands = core.module_commands();
    if !commands.is_empty() {
        out.push_str("\ncommands of modules:");
        for (name, command) in commands {
            let usage = format!("{name} {}", command.usage);
            out.push_str(&format!(
                "\n  {:<15} {} ({})",
                usage.trim_end(),
                command.help,
                command.module
            ));
        }
    }
    out
}

fn print_answer(answer: &str) {
    if !answer.is_empty() {
        println!("{answer}");
    }
}

/// Runs one console line and returns what to print.
pub fn run_command(core: &Core, line: &str) -> String {
    let mut words = line.split_whitespace();
    let Some(command) = words.next() else {
        return String::new();
    };
    if command == "emit" {
        return emit(core, line);
    }
    if command == "set" {
        return set(core, line);
    }
    let argument = words.next();
    let result = match (command, argument) {
        ("help", _) => Ok(help(core)),
        ("settings", _) => return settings(core),
        ("modules", Some("add")) => return add_module_path(core, line),
        ("modules", _) => Ok(format_modules(core)),
        ("stop", _) => {
            core.request_shutdown(0, "stop command on the console".into());
            Ok("stopping".to_string())
        }
        ("load", Some(name)) => core
            .load_module(name, None)
            .map(|()| format!("loaded {name}")),
        ("unload", Some(name)) => core
            .unload_module(name)
            .map(|()| format!("unloaded {name}")),
        ("reload", Some(name)) => core
            .reload_module(name)
            .map(|reloaded| reloaded.to_string()),
        ("load" | "unload" | "reload", None) => return format!("usage: {command} NAME"),
        (other, _) => {
            let args = line
                .split_whitespace()
                .skip(1)
                .map(str::to_string)
                .collect();
            return match core.run_module_command(other, args) {
                Some(Ok(answer)) => answer,
                Some(Err(error)) => format!("error: {other}: {error}"),
                None => format!("unknown command '{other}'; type 'help'"),
            };
        }
    };
    match result {
        Ok(answer) => answer,
        Err(error) => format!("error: {error}"),
    }
}

/// `modules add DIR`: the rest of the line, trimmed, is DIR.
fn add_module_path(core: &Core, line: &str) -> String {
    let dir = line
        .trim_start()
        .trim_start_matches("modules")
        .trim_start()
        .trim_start_matches("add")
        .trim();
    if dir.is_empty() {
        return "usage: modules add DIR".to_string();
    }
    match crate::module_paths::add(core, std::path::Path::new(dir)) {
        Ok(answer) => answer,
        Err(error) => format!("error: {error}"),
    }
}

/// `set KEY VALUE`: the rest of the line after KEY, trimmed, is VALUE (a
/// string may hold spaces; empty: an unset optional).
fn set(core: &Core, line: &str) -> String {
    let rest = line.trim_start().trim_start_matches("set").trim_start();
    let (key, value) = match rest.split_once(char::is_whitespace) {
        Some((key, value)) => (key, value.trim()),
        None => (rest, ""),
    };
    if key.is_empty() {
        return "usage: set MODULE.KEY VALUE".to_string();
    }
    match core.set_setting(key, value) {
        Ok(answer) => answer,
        Err(error) => format!("error: {error}"),
    }
}

/// `settings`: the table `buildat-server settings` prints, of the running
/// server.
fn settings(core: &Core) -> String {
    match core.call_typed(&buildat_interface::core_api::ListSettings {}, None) {
        Ok(modules) => crate::settings::format_table(&modules)
            .trim_end()
            .to_string(),
        Err(error) => format!("error: settings: {error}"),
    }
}

/// `emit NAME [TEXT]`: the rest of the line after NAME, trimmed, is TEXT.
fn emit(core: &Core, line: &str) -> String {
    let rest = line.trim_start().trim_start_matches("emit").trim_start();
    let (name, text) = match rest.split_once(char::is_whitespace) {
        Some((name, text)) => (name, Some(text.trim())),
        None => (rest, None),
    };
    if name.is_empty() {
        return "usage: emit NAME [TEXT]".to_string();
    }
    if name.starts_with("core:") {
        return format!("error: {name}: core events are emitted by the core only");
    }
    let payload = match text.map(buildat_interface::encode).transpose() {
        Ok(payload) => payload.unwrap_or_default(),
        Err(error) => return format!("error: {name}: {error}"),
    };
    let subscribers = core.emit_event(name, payload);
    format!("emitted {name} to {subscribers} subscribers")
}

fn format_modules(core: &Core) -> String {
    let now = crate::core::unix_ms();
    let mut out = format!(
        "{:<20} {:<12} {:<22} {:>8} {:>9} {:>10} {}",
        "module", "state", "build", "queued", "busy s", "wait p99", "loaded"
    );
    for module in core.list_modules() {
        let state = match &module.state {
            ModuleState::Failed(reason) => format!("failed: {reason}"),
            ModuleState::Hung(what) => format!("hung in {what}"),
            other => format!("{other:?}").to_lowercase(),
        };
        let age = if module.loaded_at_unix_ms == 0 {
            "-".to_string()
        } else {
            format!(
                "{:.1} s ago",
                now.saturating_sub(module.loaded_at_unix_ms) as f64 / 1000.0
            )
        };
        let hash = if module.build_hash.is_empty() {
            "(no server code)".to_string()
        } else {
            module.build_hash.clone()
        };
        out.push_str(&format!(
            "\n{:<20} {:<12} {:<22} {:>8} {:>9.1} {:>10} {}",
            module.name,
            state,
            hash,
            module.queued,
            module.times.busy_seconds,
            module.times.wait_percentile_text(99.0),
            age
        ));
    }
    let (buffers, bytes) = core.shared_buffers();
    out.push_str(&format!(
        "\nshared buffers: {buffers} ({:.1} MiB)",
        bytes as f64 / (1 << 20) as f64
    ));
    out
}
