//! The game's client Lua in a real runtime, as a window's session runs
//! it, without a server: for the tests that feed it packets and frontend
//! events and read the UI state it sets (`ui_e2e`, `model_e2e`).

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use buildat_client::sandbox::{Level, LogSink, Options, Runtime};

use super::repo_root;

/// What the runtime logged: level, file, message.
pub type Log = Rc<RefCell<Vec<(Level, String, String)>>>;

/// A graphical runtime (as a window's session) named `tester`, running the
/// client Lua of `modules` (in order) as the server ships it; what it sent
/// while starting is dropped.
pub fn game(modules: &[&str]) -> (Runtime, Log) {
    let log: Log = Rc::default();
    let sink = log.clone();
    let rt = Runtime::new(Options {
        memory_limit: 64 << 20,
        time_limit: Duration::from_secs(2),
        client_name: "tester".into(),
        log: LogSink::new(Level::Debug, move |level, name, message| {
            sink.borrow_mut()
                .push((level, name.to_string(), message.to_string()));
        }),
    })
    .expect("runtime starts");
    rt.set_graphical(true);
    for module in modules {
        let name = format!("{module}/client_lua/init.lua");
        let source = std::fs::read(repo_root().join("modules").join(&name)).expect("client Lua");
        rt.set_file(&name, &source);
    }
    for module in modules {
        rt.run_script(&format!("{module}/client_lua/init.lua"))
            .unwrap_or_else(|e| panic!("{module}'s client Lua runs: {e}"));
    }
    rt.take_outgoing();
    (rt, log)
}

/// Errors (and warnings) the game's Lua logged.
pub fn errors(log: &Log) -> Vec<String> {
    log.borrow()
        .iter()
        .filter(|(level, _, _)| *level <= Level::Warning)
        .map(|(_, name, message)| format!("{name}: {message}"))
        .collect()
}
