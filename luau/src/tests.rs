//! The VM's limits and set-up, through real Luau code.

use std::time::{Duration, Instant};

use mlua::{MultiValue, Table, Value};

use super::*;

const MEMORY: usize = 16 << 20;

fn vm(time_per_entry: Duration) -> Vm {
    Vm::new(Limits {
        memory_bytes: MEMORY,
        time_per_entry,
    })
    .expect("a VM")
}

/// A fresh environment reading the real globals, as a script gets.
fn env(vm: &Vm) -> Table {
    let env = vm.lua().create_table().expect("table");
    let meta = vm.lua().create_table().expect("table");
    meta.raw_set("__index", vm.real_globals()).expect("set");
    env.set_metatable(Some(meta)).expect("metatable");
    env
}

fn run(
    vm: &Vm,
    deadline: Option<Instant>,
    file: &str,
    source: &str,
) -> Result<Vec<Value>, Failure> {
    vm.enter(deadline, || {
        let f = load_text(vm.lua(), source.as_bytes(), file, env(vm), true)?;
        Ok(f.call::<MultiValue>(())?.into_vec())
    })
}

fn number(value: &Value) -> f64 {
    match value {
        Value::Integer(n) => *n as f64,
        Value::Number(n) => *n,
        other => panic!("not a number: {other:?}"),
    }
}

#[test]
fn a_loop_is_stopped_by_the_time_limit_where_it_loops() {
    let vm = vm(Duration::from_millis(100));
    let start = Instant::now();
    let failure = run(
        &vm,
        None,
        "mod/spin.lua",
        "local n = 0\nwhile true do\n  n = n + 1\nend\n",
    )
    .expect_err("stopped");
    assert_eq!(failure.kind, FailureKind::TimeLimit, "{failure}");
    assert_eq!(
        failure.message,
        "stopped: ran past the time limit of 100 ms"
    );
    let location = failure.location.clone().expect("a location");
    assert!(
        location == "mod/spin.lua:2" || location == "mod/spin.lua:3",
        "{location}"
    );
    assert_eq!(
        failure.to_string(),
        format!("{location}: {}", failure.message)
    );
    assert!(start.elapsed() < Duration::from_secs(5));
    // The VM is usable afterwards, under a fresh budget.
    let values = run(&vm, None, "mod/after.lua", "return 1 + 1").expect("runs");
    assert_eq!(values.iter().map(number).collect::<Vec<_>>(), vec![2.0]);
}

#[test]
fn the_location_of_a_loop_inside_a_function_is_the_function_s_line() {
    let vm = vm(Duration::from_millis(50));
    let failure = run(
        &vm,
        None,
        "mod/deep.lua",
        "local function f()\n  local s = 0\n  for i = 1, math.huge do s = s + i end\nend\nf()\n",
    )
    .expect_err("stopped");
    assert_eq!(failure.kind, FailureKind::TimeLimit);
    assert_eq!(failure.location.as_deref(), Some("mod/deep.lua:3"));
}

#[test]
fn a_memory_bomb_is_stopped_by_the_memory_limit() {
    let vm = vm(Duration::from_secs(10));
    let failure = run(
        &vm,
        None,
        "mod/bomb.lua",
        "local t = {}\nwhile true do\n  t[#t + 1] = string.rep(\"x\", 1000) .. #t\nend\n",
    )
    .expect_err("stopped");
    assert_eq!(failure.kind, FailureKind::MemoryLimit, "{failure}");
    assert_eq!(
        failure.message,
        format!("stopped: the Lua memory limit of {MEMORY} bytes was reached")
    );
    let location = failure.location.clone().expect("a location");
    assert!(
        location == "mod/bomb.lua:2" || location == "mod/bomb.lua:3",
        "{location}"
    );
    // The garbage is collected: the VM has room again.
    assert!(vm.used_memory() < MEMORY / 2, "{}", vm.used_memory());
    run(
        &vm,
        None,
        "mod/after.lua",
        "local t = {} for i = 1, 1000 do t[i] = i end",
    )
    .expect("runs");
}

#[test]
fn an_error_is_file_line_message() {
    let vm = vm(Duration::from_secs(1));
    let failure = run(&vm, None, "mod/init.lua", "local a = 1\nerror(\"x\")\n").expect_err("fails");
    assert_eq!(failure.kind, FailureKind::Error);
    assert_eq!(failure.message, "mod/init.lua:2: x");
    assert_eq!(failure.location, None);
    assert_eq!(failure.to_string(), "mod/init.lua:2: x");
}

#[test]
fn pcall_cannot_swallow_the_time_limit() {
    let vm = vm(Duration::from_millis(50));
    let failure = run(
        &vm,
        None,
        "mod/sly.lua",
        "while true do\n  pcall(function() while true do end end)\nend\n",
    )
    .expect_err("stopped");
    assert_eq!(failure.kind, FailureKind::TimeLimit, "{failure}");
    let failure = run(
        &vm,
        None,
        "mod/sly2.lua",
        "for i = 1, 1e9 do\n  local ok = pcall(function() for j = 1, 1e9 do end end)\n  if not ok then return 'swallowed' end\nend\n",
    )
    .expect_err("stopped");
    assert_eq!(failure.kind, FailureKind::TimeLimit, "{failure}");
}

#[test]
fn the_extra_deadline_stops_a_loop_sooner() {
    let vm = vm(Duration::from_secs(20));
    let start = Instant::now();
    let failure = run(
        &vm,
        Some(start + Duration::from_millis(30)),
        "mod/tick.lua",
        "while true do end\n",
    )
    .expect_err("stopped");
    assert_eq!(failure.kind, FailureKind::TimeLimit, "{failure}");
    assert!(
        failure
            .message
            .starts_with("stopped: ran past the time limit of "),
        "{failure}"
    );
    assert_eq!(failure.location.as_deref(), Some("mod/tick.lua:1"));
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    // A deadline later than time_per_entry changes nothing.
    let later = Instant::now() + Duration::from_secs(3600);
    let values = run(&vm, Some(later), "mod/ok.lua", "return 'ok'").expect("runs");
    assert_eq!(values.len(), 1);
}

#[test]
fn nested_entries_share_the_outer_budget() {
    let vm = vm(Duration::from_millis(50));
    let inner = vm.lua().create_function(|_, ()| Ok(())).expect("function");
    let start = Instant::now();
    let failure = vm
        .enter(None, || {
            // An inner entry does not renew the budget.
            let _ = vm.enter(None, || inner.call::<()>(()));
            let f = load_text(vm.lua(), b"while true do end", "mod/n.lua", env(&vm), true)?;
            f.call::<()>(())
        })
        .expect_err("stopped");
    assert_eq!(failure.kind, FailureKind::TimeLimit);
    assert!(start.elapsed() < Duration::from_secs(5));
}

#[test]
fn removed_globals_are_nil_and_libraries_are_frozen() {
    let vm = vm(Duration::from_secs(1));
    let values = run(
        &vm,
        None,
        "mod/probe.lua",
        "return require, debug, loadstring, getfenv, setfenv, newproxy, gcinfo",
    )
    .expect("runs");
    assert_eq!(values.len(), 7);
    assert!(values.iter().all(Value::is_nil), "{values:?}");
    for name in ["require", "debug", "loadstring", "getfenv"] {
        let value: Value = vm.real_globals().raw_get(name).expect("get");
        assert!(value.is_nil(), "{name}");
    }
    let failure = run(&vm, None, "mod/poke.lua", "math.floor = nil").expect_err("read-only");
    assert_eq!(failure.kind, FailureKind::Error);
    assert!(failure.message.starts_with("mod/poke.lua:1:"), "{failure}");
    let values = run(
        &vm,
        None,
        "mod/libs.lua",
        "return math.floor(2.5), string.upper('a'), bit32.band(3, 1), os.clock() >= 0",
    )
    .expect("runs");
    assert_eq!(number(&values[0]), 2.0);
    assert_eq!(values[3], Value::Boolean(true));
}

#[test]
fn bytecode_is_refused() {
    let vm = vm(Duration::from_secs(1));
    let result = load_text(vm.lua(), b"\x1bLua", "mod/bin.lua", env(&vm), true);
    assert!(result.is_err());
}

#[test]
fn describe_drops_the_traceback() {
    let error = lua_error("a.lua:1: boom\nstack traceback:\n  a.lua:1");
    assert_eq!(describe(&error), "a.lua:1: boom");
}

#[test]
fn a_bomb_of_a_few_big_pieces_is_placed_too() {
    let vm = Vm::new(Limits {
        memory_bytes: 16 << 20,
        time_per_entry: Duration::from_secs(5),
    })
    .expect("vm");
    let failure = vm
        .enter(None, || {
            let source = "local kept = {}\nfor i = 1, 100 do\n  kept[i] = string.rep('x', 1048576 + i)\nend\n";
            vm.lua().load(source).set_name("=mod/big.lua").exec()
        })
        .expect_err("the limit stops it");
    assert_eq!(failure.kind, FailureKind::MemoryLimit);
    let location = failure.location.expect("placed");
    assert!(location.starts_with("mod/big.lua:"), "{location}");
}
