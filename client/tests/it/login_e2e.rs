//! The window on its own (issue 47, item 5), through the real server and
//! the real window client under Xvfb, typed into with xdotool: opened
//! without a password, the window asks for a name and password before it
//! connects; what is typed logs in (the first login claims the name).
//!
//! Needs a Vulkan driver (lavapipe on CI), `Xvfb` and `xdotool`: without
//! them it fails on CI (`CI` set) and is skipped elsewhere, saying so.

use std::process::Command;
use std::time::Duration;

use crate::common::game::{CLIENT, Running, SERIAL, Setup};
use crate::common::xvfb::{self, Xvfb};

#[test]
fn the_window_asks_for_a_login_before_it_connects() {
    if !xvfb::available() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let setup = Setup::new();
    let (_server, address) = setup.start(&[]);
    let xvfb = Xvfb::start();
    let config = tempfile::tempdir().expect("config dir");
    // No --password-file, no BUILDAT_PASSWORD, no --quit-after: the prompt.
    let mut command = Command::new(CLIENT);
    command
        .args(["--connect", &address, "--cache"])
        .arg(setup.cache())
        .args(["--name", "alice", "--window", "--size", "640x480"])
        .env("DISPLAY", &xvfb.display)
        .env("XDG_CONFIG_HOME", config.path())
        .env_remove("BUILDAT_PASSWORD");
    let mut client = Running::spawn(command);
    let id = xvfb
        .window("Buildat", Duration::from_secs(60))
        .expect("the client's window");
    xvfb.xdotool(&["windowfocus", &id]);
    // Nothing is said to the server while the prompt waits.
    assert!(
        client
            .wait_for("logged in as", Duration::from_secs(3))
            .is_none(),
        "it connected before the prompt was answered"
    );
    assert!(client.running(), "the window closed");
    // The name is offered (--name); the password field has the keys.
    xvfb.xdotool(&["type", "--delay", "60", "s3cret pass"]);
    xvfb.xdotool(&["key", "Return"]);
    let line = client.wait_for("logged in as", Duration::from_secs(60));
    let (_, stderr) = client.finish(Duration::from_secs(1));
    let line = line.unwrap_or_else(|| panic!("no login; the client said:\n{stderr}"));
    assert!(line.contains("logged in as alice"), "{line}\n{stderr}");
    assert!(
        stderr.contains("logging in as alice"),
        "the window's answer: {stderr}"
    );
}
