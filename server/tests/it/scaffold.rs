//! A modder's first steps, through the real binary: `new-module` writes a
//! module into the world's modules folder of a running server, which loads
//! it live; its command answers on the console; `cargo test` in its folder
//! passes. A module folder outside the repository, added with `modules add
//! DIR` on the running server, builds against the engine's crates the
//! server supplies, loads, runs and keeps its state across a reload; the
//! engine's Cargo.lock is untouched throughout.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::{Scratch, build_dir, console, repo_root, start_server};

/// The server over `scratch`, watching its module paths (the world's
/// `modules/` among them), listening on a free loopback port.
fn start_watching(scratch: &Scratch) -> buildat_harness::server::Server {
    let mut args = scratch.server_args();
    args.extend(["--listen", "127.0.0.1:0"].map(String::from));
    let mut server = start_server(&args, Stdio::piped());
    server.expect_line("server started", Duration::from_secs(120));
    // A folder written before the watch is set up is not seen as new.
    server.expect_line("watching module folders", Duration::from_secs(10));
    server
}

/// `buildat-server new-module WORDS...` with the tests' build dir and
/// profile, to its exit (status 0); its output.
fn new_module(world: &Path, words: &[&str]) -> String {
    let mut args: Vec<String> = ["new-module"]
        .iter()
        .chain(words)
        .map(|w| w.to_string())
        .collect();
    args.extend([
        "--world".into(),
        world.display().to_string(),
        "--build-dir".into(),
        build_dir().display().to_string(),
        "--module-profile".into(),
        "dev".into(),
    ]);
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_buildat-server"))
        .args(&args)
        .output()
        .expect("buildat-server runs");
    let text = crate::common::output_text(&output);
    assert!(output.status.success(), "new-module {words:?}:\n{text}");
    text
}

fn engine_lock() -> Vec<u8> {
    std::fs::read(repo_root().join("Cargo.lock")).expect("the engine's Cargo.lock")
}

#[test]
fn a_new_module_loads_live_answers_and_its_own_test_passes() {
    let lock = engine_lock();
    let scratch = Scratch::new();
    let mut server = start_watching(&scratch);
    let world_modules = scratch.world().join("modules");
    assert!(
        world_modules.is_dir(),
        "the server makes the world's modules folder"
    );

    let said = new_module(&scratch.world(), &["hello"]);
    assert!(said.contains("cargo test"), "{said}");
    server.expect_line("new module hello: loaded hello", Duration::from_secs(600));
    let answer = console(&mut server, "hello", "greetings:");
    assert!(answer.contains("hello, console! greetings: 1"), "{answer}");

    new_module(&scratch.world(), &["plain", "--lua-only"]);
    server.expect_line("new module plain: loaded plain", Duration::from_secs(60));
    assert!(!world_modules.join("plain/Cargo.toml").exists());

    // The modder's own test, in the module's folder, with the target dir
    // the server wrote beside it (so it reuses the server's builds).
    let started = Instant::now();
    let output = std::process::Command::new(std::env::var("CARGO").unwrap_or("cargo".into()))
        .args(["test", "--offline"])
        .current_dir(world_modules.join("hello"))
        .env_remove("CARGO_TARGET_DIR")
        .output()
        .expect("cargo runs");
    let text = crate::common::output_text(&output);
    assert!(output.status.success(), "cargo test in the module:\n{text}");
    assert!(
        text.contains("greetings_are_counted_across_a_reload ... ok"),
        "{text}"
    );
    println!(
        "cargo test in the new module: {:.1} s",
        started.elapsed().as_secs_f64()
    );
    server.stop_cleanly();
    assert!(
        engine_lock() == lock,
        "the engine's Cargo.lock is unchanged"
    );
}

#[test]
fn modules_add_loads_a_module_folder_outside_the_repository() {
    let lock = engine_lock();
    let scratch = Scratch::new();
    let mut server = start_watching(&scratch);
    let outside = tempfile::tempdir().expect("temp dir");
    let mods = outside.path().join("mymods");

    // Refusals first: each says what is wrong.
    let missing = mods.join("nowhere");
    let answer = console(
        &mut server,
        &format!("modules add {}", missing.display()),
        "error",
    );
    assert!(answer.contains("no such folder"), "{answer}");
    std::fs::create_dir_all(&mods).expect("a folder");
    let file = outside.path().join("a-file");
    std::fs::write(&file, "").expect("a file");
    let answer = console(
        &mut server,
        &format!("modules add {}", file.display()),
        "error",
    );
    assert!(answer.contains("not a folder"), "{answer}");

    let said = new_module_into(&scratch, &mods, "greeter");
    assert!(said.contains("wrote module greeter"), "{said}");
    assert!(
        !std::fs::read_to_string(mods.join("greeter/Cargo.toml"))
            .expect("its manifest")
            .contains(&repo_root().display().to_string()),
        "the module names no path into the checkout"
    );
    let answer = console(
        &mut server,
        &format!("modules add {}", mods.join("greeter").display()),
        "error",
    );
    assert!(answer.contains("add the folder holding it"), "{answer}");
    let started = Instant::now();
    let answer = console(
        &mut server,
        &format!("modules add {}", mods.display()),
        "loaded greeter",
    );
    println!(
        "modules add with a first build of an outside module: {:.1} s",
        started.elapsed().as_secs_f64()
    );
    assert!(answer.contains("added the module path"), "{answer}");
    let answer = console(&mut server, "greeter", "greetings:");
    assert!(answer.contains("greetings: 1"), "{answer}");
    console(&mut server, "reload greeter", "greeter");
    let answer = console(&mut server, "greeter", "greetings:");
    assert!(
        answer.contains("greetings: 2"),
        "kept across the reload: {answer}"
    );

    // The added path is watched: a module folder dropped in later loads.
    new_module_into(&scratch, &mods, "second");
    server.expect_line("new module second: loaded second", Duration::from_secs(600));
    let empty = outside.path().join("empty");
    std::fs::create_dir_all(&empty).expect("a folder");
    let answer = console(
        &mut server,
        &format!("modules add {}", empty.display()),
        "no module in it yet",
    );
    assert!(answer.contains("added the module path"), "{answer}");
    server.stop_cleanly();
    assert!(
        engine_lock() == lock,
        "the engine's Cargo.lock is unchanged"
    );
}

/// `new-module NAME --modules DIR`.
fn new_module_into(scratch: &Scratch, modules: &Path, name: &str) -> String {
    new_module(
        &scratch.world(),
        &[name, "--modules", &modules.display().to_string()],
    )
}

#[test]
fn new_module_lua_writes_a_lua_mod_that_is_live_without_a_build_and_on_every_save() {
    let scratch = Scratch::new();
    scratch.add_game();
    scratch.add_modules(&["lua"]);
    let mut server = start_watching(&scratch);
    let world_modules = scratch.world().join("modules");

    // A Lua mod: live without a build, and again on every save.
    let said = new_module(&scratch.world(), &["garden", "--lua"]);
    assert!(said.contains("server_lua/init.lua"), "{said}");
    server.expect_line("lua mod garden loaded", Duration::from_secs(60));
    let answer = console(&mut server, "garden", "from garden");
    assert!(answer.contains("hello console from garden #1"), "{answer}");
    let init = world_modules.join("garden/server_lua/init.lua");
    let text = std::fs::read_to_string(&init).expect("init.lua");
    std::fs::write(&init, text.replace("\"hello \"", "\"hi \"")).expect("save");
    server.expect_line("lua mod garden reloaded", Duration::from_secs(10));
    let answer = console(&mut server, "garden", "from garden");
    assert!(answer.contains("hi console from garden #2"), "{answer}");
    assert!(!world_modules.join("garden/Cargo.toml").exists());
    server.stop_cleanly();
}
