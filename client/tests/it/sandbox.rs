//! The sandbox against the exploit list of issue 7 and DESIGN §6, run on the
//! real runtime (`buildat_client::sandbox::Runtime`, with the embedded
//! `client_lua/`), no network. Each case checks three things: the script
//! gets an error (of the expected kind), the VM keeps working, and a script
//! that subscribed earlier still runs. Plus the API itself and an escape
//! audit that walks every value reachable from a sandboxed environment.

use std::cell::RefCell;
use std::collections::HashSet;
use std::rc::Rc;
use std::time::{Duration, Instant};

use buildat_client::sandbox::{FailureKind, Level, LogSink, Options, Runtime, ScriptError};
use mlua::Value;

type Log = Rc<RefCell<Vec<(Level, String, String)>>>;

const TIME_LIMIT: Duration = Duration::from_millis(200);
/// The time limit of the memory exploits: filling the memory limit must
/// come first, even in a debug build on a loaded machine.
const MEMORY_CASE_TIME_LIMIT: Duration = Duration::from_secs(10);
const MEMORY_LIMIT: usize = 32 << 20;
/// The time limit of the cases that check what a script can reach or
/// fill, not how fast: the escape audit's walk (a few hundred values,
/// every function called three times) and the UI floods take 10 to 20 ms
/// in a debug build but over 200 ms when the machine's cores are
/// contended (30 runs at once on 2 cores).
const WORK_TIME_LIMIT: Duration = Duration::from_secs(10);

fn runtime() -> (Runtime, Log) {
    runtime_with_time_limit(TIME_LIMIT)
}

fn runtime_with_time_limit(time_limit: Duration) -> (Runtime, Log) {
    let log: Log = Rc::default();
    let sink = log.clone();
    let rt = Runtime::new(Options {
        memory_limit: MEMORY_LIMIT,
        time_limit,
        client_name: "tester".into(),
        log: LogSink::new(Level::Debug, move |level, name, message| {
            sink.borrow_mut()
                .push((level, name.to_string(), message.to_string()));
        }),
    })
    .expect("runtime starts");
    (rt, log)
}

fn run(rt: &Runtime, name: &str, source: &str) -> Result<(), ScriptError> {
    rt.set_file(name, source.as_bytes());
    rt.run_script(name)
}

/// Packets the runtime queued, as (name, data-as-text).
fn sent(rt: &Runtime) -> Vec<(String, String)> {
    rt.take_outgoing()
        .into_iter()
        .map(|(n, d)| (n, String::from_utf8_lossy(&d).into_owned()))
        .collect()
}

/// A runtime with a bystander script that answers `test:ping` with
/// `test:pong`.
fn runtime_with_bystander(time_limit: Duration) -> (Runtime, Log) {
    let (rt, log) = runtime_with_time_limit(time_limit);
    run(
        &rt,
        "bystander/client_lua/init.lua",
        r#"
        buildat.sub_packet("test:ping", function(data)
            buildat.send_packet("test:pong", "pong " .. data)
        end)
        "#,
    )
    .expect("bystander runs");
    (rt, log)
}

/// The VM still runs new scripts, allocates, and earlier subscribers still
/// answer.
fn assert_healthy(rt: &Runtime, case: &str) {
    let _ = rt.take_outgoing();
    run(
        rt,
        "healthy/client_lua/check.lua",
        r#"
        local s = string.rep("x", 1024 * 1024) -- 1 MiB still fits
        local t = {}
        for i = 1, 10000 do t[i] = i end
        buildat.send_packet("test:healthy", tostring(#s + #t))
        "#,
    )
    .unwrap_or_else(|e| panic!("{case}: a new script still runs: {e}"));
    assert!(rt.dispatch_packet("test:ping", b"1").is_empty(), "{case}");
    assert_eq!(
        sent(rt),
        [
            ("test:healthy".to_string(), "1058576".to_string()),
            ("test:pong".to_string(), "pong 1".to_string()),
        ],
        "{case}: the VM and the bystander keep working"
    );
}

/// Runs an exploit: it must fail with `kind`, quickly, and leave the VM
/// healthy.
fn assert_contained(source: &str, kind: FailureKind, case: &str) -> ScriptError {
    let time_limit = match kind {
        FailureKind::MemoryLimit => MEMORY_CASE_TIME_LIMIT,
        _ => TIME_LIMIT,
    };
    let (rt, _log) = runtime_with_bystander(time_limit);
    let start = Instant::now();
    let error = run(&rt, "evil/client_lua/init.lua", source)
        .expect_err(&format!("{case}: the script is stopped"));
    let took = start.elapsed();
    assert_eq!(error.kind, kind, "{case}: {error}");
    assert_eq!(error.file, "evil/client_lua/init.lua", "{case}");
    // A hang guard, not a timing figure: a loaded machine may be slow, but a
    // script that escaped the budget would run for far longer.
    assert!(
        took < time_limit * 50,
        "{case}: stopped only after {took:?}, the budget is {time_limit:?}"
    );
    assert_healthy(&rt, case);
    error
}

// ---------------------------------------------------------------------------
// The exploit list
// ---------------------------------------------------------------------------

#[test]
fn infinite_loop() {
    let e = assert_contained("while true do end", FailureKind::TimeLimit, "while true");
    assert!(e.message.contains("time limit of 200 ms"), "{e}");
    // Where the loop was, as Lua names the file.
    assert!(
        e.message
            .starts_with("evil/client_lua/init.lua:1: stopped: ran past"),
        "{e}"
    );
}

#[test]
fn infinite_loop_in_a_coroutine() {
    assert_contained(
        "coroutine.wrap(function() while true do end end)()",
        FailureKind::TimeLimit,
        "coroutine.wrap",
    );
    // Resuming again and again to swallow the error does not help either.
    assert_contained(
        r#"
        while true do
            local co = coroutine.create(function() while true do end end)
            coroutine.resume(co)
        end
        "#,
        FailureKind::TimeLimit,
        "coroutine.resume in a loop",
    );
}

#[test]
fn infinite_loop_under_pcall_in_a_loop() {
    assert_contained(
        "while true do pcall(function() while true do end end) end",
        FailureKind::TimeLimit,
        "while true do pcall(...) end",
    );
    assert_contained(
        "while true do pcall(error, 'x') end",
        FailureKind::TimeLimit,
        "a loop of pcalls with no loop inside",
    );
}

#[test]
fn infinite_loop_in_an_xpcall_handler() {
    assert_contained(
        r#"
        while true do
            xpcall(function() error("x") end, function() while true do end end)
        end
        "#,
        FailureKind::TimeLimit,
        "xpcall handler in a loop",
    );
    // A single one: the handler is stopped, xpcall reports the failure,
    // and the script cannot do anything after it but end.
    let (rt, _log) = runtime_with_bystander(TIME_LIMIT);
    let start = Instant::now();
    let result = run(
        &rt,
        "evil/client_lua/init.lua",
        r#"
        local ok = xpcall(function() error("x") end, function() while true do end end)
        assert(not ok)
        for i = 1, 1e9 do end
        buildat.send_packet("test:escaped", "")
        "#,
    );
    assert_eq!(result.expect_err("stopped").kind, FailureKind::TimeLimit);
    assert!(start.elapsed() < TIME_LIMIT * 50, "hang guard");
    assert_healthy(&rt, "single xpcall handler");
}

#[test]
fn gc_finalizers_do_not_run() {
    // Luau has no __gc for tables (only native userdata destructors, which
    // Lua code cannot create: newproxy is removed). So the finalizer loop
    // can never run: the script ends normally and a full collection by
    // the host returns at once without running Lua.
    let (rt, _log) = runtime_with_bystander(TIME_LIMIT);
    run(
        &rt,
        "evil/client_lua/init.lua",
        r#"
        for i = 1, 100 do
            pcall(setmetatable, {}, { __gc = function()
                buildat.send_packet("test:gc", "ran")
                while true do end
            end })
        end
        assert(newproxy == nil)
        "#,
    )
    .expect("creating tables with __gc is harmless");
    let start = Instant::now();
    rt.lua().gc_collect().expect("collect");
    rt.lua().gc_collect().expect("collect");
    assert!(start.elapsed() < Duration::from_secs(10), "hang guard");
    assert!(
        !sent(&rt).iter().any(|(n, _)| n == "test:gc"),
        "no finalizer ran"
    );
    assert_healthy(&rt, "__gc");
}

#[test]
fn pathological_pattern_backtracking() {
    assert_contained(
        r#"string.find(string.rep("a", 30), string.rep("a*", 30) .. "b")"#,
        FailureKind::TimeLimit,
        "string.find backtracking",
    );
    assert_contained(
        r#"pcall(string.match, string.rep("a", 40), string.rep(".-", 20) .. "b")
           while true do end"#,
        FailureKind::TimeLimit,
        "string.match backtracking under pcall",
    );
}

#[test]
fn string_rep_and_concatenation_memory_bombs() {
    assert_contained(
        r#"local s = string.rep("x", 2^30)"#,
        FailureKind::MemoryLimit,
        "string.rep 1 GiB",
    );
    assert_contained(
        r#"local s = string.rep("x", 20 * 1024 * 1024)
           local t = { s, s }
           local u = table.concat(t) .. s"#,
        FailureKind::MemoryLimit,
        "string.rep then concatenation",
    );
    assert_contained(
        r#"local s = "x" while true do s = s .. s end"#,
        FailureKind::MemoryLimit,
        "doubling concatenation",
    );
    assert_contained(
        r#"local b = buffer.create(1024 * 1024 * 1024)"#,
        FailureKind::MemoryLimit,
        "huge buffer",
    );
}

#[test]
fn unbounded_table_growth() {
    assert_contained(
        r#"local t = {} local i = 0 while true do i += 1 t[i] = { i } end"#,
        FailureKind::MemoryLimit,
        "table growth",
    );
    // Growth kept alive in the file's own environment (a global) is
    // reclaimed too once the file failed: nothing holds its environment.
    let error = assert_contained(
        r#"hoard = {} while true do hoard[#hoard + 1] = string.rep("y", 1000) .. #hoard end"#,
        FailureKind::MemoryLimit,
        "global table growth",
    );
    assert!(error.message.contains("memory limit"), "{error}");
}

#[test]
fn memory_is_reclaimed_after_a_bomb() {
    let (rt, _log) = runtime_with_bystander(MEMORY_CASE_TIME_LIMIT);
    let before = rt.used_memory();
    let _ = run(
        &rt,
        "evil/client_lua/init.lua",
        r#"local t = {} while true do t[#t+1] = {} end"#,
    );
    assert!(
        rt.used_memory() < before + MEMORY_LIMIT / 4,
        "used {} after, {} before",
        rt.used_memory(),
        before
    );
    // A script needing a quarter of the limit still fits.
    run(
        &rt,
        "big/client_lua/init.lua",
        "local s = string.rep('z', 8 * 1024 * 1024) assert(#s == 8388608)",
    )
    .expect("memory is back");
}

#[test]
fn memory_is_reclaimed_after_a_script_stopped_by_the_time_limit() {
    let (rt, _log) = runtime_with_bystander(TIME_LIMIT);
    let before = rt.used_memory();
    let error = run(
        &rt,
        "slow/client_lua/init.lua",
        r#"local t = {} while true do t[#t+1] = { #t } for _ = 1, 100 do end end"#,
    )
    .expect_err("stopped");
    assert_eq!(error.kind, FailureKind::TimeLimit, "{error}");
    assert!(
        rt.used_memory() < before + (1 << 20),
        "used {} after, {} before",
        rt.used_memory(),
        before
    );
}

#[test]
fn deep_recursion() {
    let e = assert_contained(
        "local function f(n) return f(n + 1) + 1 end f(1)",
        FailureKind::Error,
        "Lua recursion",
    );
    assert!(e.message.contains("stack overflow"), "{e}");
    let e = assert_contained(
        "local t = setmetatable({}, { __index = function(t, k) return t[k] end }) return t.x",
        FailureKind::Error,
        "__index recursion through C",
    );
    assert!(e.message.contains("stack overflow"), "{e}");
    // pcall nested at every level unwinds cleanly and the script goes on.
    let (rt, _log) = runtime_with_bystander(TIME_LIMIT);
    run(
        &rt,
        "deep/client_lua/init.lua",
        "local function f() pcall(f) end f() buildat.send_packet('test:after', '')",
    )
    .expect("contained by pcall");
    assert_eq!(sent(&rt), [("test:after".to_string(), String::new())]);
    assert_healthy(&rt, "pcall recursion");
}

#[test]
fn bytecode_is_never_loaded() {
    let (rt, _log) = runtime_with_bystander(TIME_LIMIT);
    let bytecode = mlua::chunk::Compiler::new()
        .compile("buildat.send_packet('test:bytecode', 'ran')")
        .expect("compile");
    rt.set_file("evil/client_lua/init.lua", &bytecode);
    let error = rt
        .run_script("evil/client_lua/init.lua")
        .expect_err("bytecode is refused");
    assert!(error.message.contains("binary chunk"), "{error}");
    assert!(sent(&rt).is_empty(), "the bytecode did not run");
    // Nor through run_script_file.
    rt.set_file("evil/client_lua/blob.lua", &bytecode);
    run(
        &rt,
        "evil/client_lua/loader.lua",
        r#"
        local ok, err = pcall(buildat.run_script_file, "evil/client_lua/blob.lua")
        assert(not ok and string.find(tostring(err), "binary chunk"), tostring(err))
        assert(load == nil and loadstring == nil and dofile == nil and loadfile == nil)
        "#,
    )
    .expect("checked inside");
    assert!(sent(&rt).is_empty());
    assert_healthy(&rt, "bytecode");
}

#[test]
fn string_dump_is_unreachable() {
    let (rt, _log) = runtime();
    run(
        &rt,
        "probe/client_lua/init.lua",
        r#"
        assert(string.dump == nil)
        assert(("").dump == nil)
        assert(getmetatable("").__index.dump == nil)
        local ok = pcall(function() return ("").dump(print) end)
        assert(not ok)
        "#,
    )
    .expect("no string.dump anywhere");
}

#[test]
fn one_script_cannot_change_what_another_sees() {
    let (rt, _log) = runtime();
    run(
        &rt,
        "evil/client_lua/init.lua",
        r#"
        local mt = getmetatable("")
        local attempts = {
            function() mt.__index = { upper = function() return "pwned" end } end,
            function() mt.__index.upper = function() return "pwned" end end,
            function() string.upper = function() return "pwned" end end,
            function() rawset(string, "upper", function() return "pwned" end) end,
            function() rawset(mt, "__index", {}) end,
            function() setmetatable(string, { __index = function() return "pwned" end }) end,
            function() mt.__add = function() return "pwned" end end,
            function() table.insert = nil end,
            function() math.floor = nil end,
            function() os.time = nil end,
            function() buildat.send_packet = nil end,
            function() rawset(buildat, "send_packet", nil) end,
            function() coroutine.wrap = nil end,
        }
        local escaped = {}
        for i, f in ipairs(attempts) do
            if pcall(f) then escaped[#escaped + 1] = i end
        end
        -- Changing its own globals is allowed and stays local.
        string = { upper = function() return "local only" end }
        assert(string.upper("a") == "local only")
        buildat.send_packet("test:escaped", table.concat(escaped, ","))
        "#,
    )
    .expect("attempts run");
    assert_eq!(
        sent(&rt),
        [("test:escaped".to_string(), String::new())],
        "every attempt failed"
    );
    run(
        &rt,
        "victim/client_lua/init.lua",
        r#"
        assert(("abc"):upper() == "ABC")
        assert(string.upper("x") == "X")
        assert(getmetatable("").__index == string)
        assert(table.insert ~= nil and math.floor(1.5) == 1 and os.time() > 0)
        assert(type(buildat.send_packet) == "function")
        buildat.send_packet("test:victim", "fine")
        "#,
    )
    .expect("the other script sees the originals");
    assert_eq!(sent(&rt), [("test:victim".to_string(), "fine".to_string())]);
}

#[test]
fn no_io_os_execute_debug_load_or_path_require() {
    let (rt, _log) = runtime();
    run(
        &rt,
        "probe/client_lua/init.lua",
        r#"
        assert(io == nil, "io")
        assert(debug == nil, "debug")
        assert(os.execute == nil and os.exit == nil and os.getenv == nil, "os")
        assert(os.remove == nil and os.rename == nil and os.tmpname == nil, "os files")
        local keys = {}
        for k in pairs(os) do keys[#keys + 1] = k end
        table.sort(keys)
        assert(table.concat(keys, ",") == "clock,date,difftime,time", table.concat(keys, ","))
        assert(getfenv == nil and setfenv == nil, "fenv")
        assert(load == nil and loadstring == nil and dofile == nil and loadfile == nil, "load")
        assert(newproxy == nil and gcinfo == nil, "misc")
        assert(not pcall(collectgarbage, "collect"), "collectgarbage only counts")
        assert(type(collectgarbage("count")) == "number")
        for _, path in ipairs({ "os", "io", "./x", "/etc/passwd", "@self/x",
                                "buildat/module/x/../../etc", "buildat/extension/../x",
                                "client_lua/boot", "buildat/extension/nope" }) do
            local ok, err = pcall(require, path)
            assert(not ok, path)
        end
        buildat.send_packet("test:done", "")
        "#,
    )
    .expect("nothing dangerous is there");
    assert_eq!(sent(&rt).len(), 1);
}

#[test]
fn imports_resolve_from_the_files_own_environment() {
    // Regression guard for Luau's "safeenv" import pre-resolution: globals
    // read with constant keys must come from the file's environment, never
    // from the VM's real globals (which is where the loader would look).
    let (rt, _log) = runtime();
    let values = rt
        .eval_sandboxed(
            "probe/client_lua/init.lua",
            r#"
            local co = coroutine.wrap(function()
                return getfenv, setfenv, debug, loadstring, newproxy
            end)
            return getfenv, setfenv, debug, loadstring, newproxy, require ~= nil, co()
            "#,
        )
        .expect("runs");
    assert_eq!(values.len(), 11);
    for (i, value) in values.iter().enumerate() {
        if i == 5 {
            assert_eq!(value, &Value::Boolean(true));
        } else {
            assert!(value.is_nil(), "value {i} is {value:?}");
        }
    }
}

#[test]
fn errors_name_the_file_and_line_and_are_contained() {
    let (rt, _log) = runtime_with_bystander(TIME_LIMIT);
    let error = run(
        &rt,
        "broken/client_lua/init.lua",
        "local x = 1\nerror('boom')",
    )
    .expect_err("fails");
    assert_eq!(error.kind, FailureKind::Error);
    assert_eq!(error.file, "broken/client_lua/init.lua");
    assert!(
        error.message.contains("broken/client_lua/init.lua:2: boom"),
        "{error}"
    );
    let error = run(&rt, "broken/client_lua/syntax.lua", "local = 1").expect_err("syntax");
    assert!(
        error.message.contains("broken/client_lua/syntax.lua:1"),
        "{error}"
    );
    // A failing handler does not stop the others.
    run(
        &rt,
        "flaky/client_lua/init.lua",
        r#"buildat.sub_packet("test:ping", function() error("handler broke") end)"#,
    )
    .expect("subscribes");
    let errors = rt.dispatch_packet("test:ping", b"2");
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].file, "flaky/client_lua/init.lua");
    assert!(errors[0].message.contains("handler of packet test:ping"));
    assert!(errors[0].message.contains("handler broke"));
    assert_eq!(sent(&rt), [("test:pong".to_string(), "pong 2".to_string())]);
    // And a handler in an endless loop is stopped per call.
    run(
        &rt,
        "stuck/client_lua/init.lua",
        r#"buildat.sub_packet("test:ping", function() while true do end end)"#,
    )
    .expect("subscribes");
    let errors = rt.dispatch_packet("test:ping", b"3");
    assert_eq!(errors.len(), 2);
    assert!(errors.iter().any(|e| e.kind == FailureKind::TimeLimit));
    assert_eq!(sent(&rt), [("test:pong".to_string(), "pong 3".to_string())]);
}

// ---------------------------------------------------------------------------
// The escape audit
// ---------------------------------------------------------------------------

const WALKER: &str = r#"
local json = require("buildat/extension/json")
local lib = require("buildat/module/lib")
local MAX = 50000
local seen, found, paths = {}, {}, {}
local names = {}
local unfrozen, settable = {}, {}
local owned = { [_G] = true, [lib] = true }
local queue = {}
local function visit(v, path, called)
    local t = type(v)
    if t ~= "table" and t ~= "function" and t ~= "userdata" and t ~= "thread" then
        return
    end
    if seen[v] or #found >= MAX then
        return
    end
    seen[v] = true
    found[#found + 1] = v
    paths[#paths + 1] = path
    queue[#queue + 1] = { v, path, called }
end
local function meta(v, path, called)
    local mt = getmetatable(v)
    if mt ~= nil then
        if type(mt) ~= "table" then
            names[#names + 1] = "<locked " .. tostring(mt) .. ">"
        end
        visit(mt, path .. "<mt>", called)
    end
end
visit(_G, "_G", false)
visit(json, "json", false)
visit(lib, "lib", false)
meta("", "string", false)
meta(1, "number", false)
meta(true, "boolean", false)
meta(buffer.create(1), "buffer", false)
meta(vector.create(1, 2, 3), "vector", false)
local i = 1
while i <= #queue do
    local v, path, called = queue[i][1], queue[i][2], queue[i][3]
    i += 1
    meta(v, path, called)
    local t = type(v)
    if t == "table" then
        if not owned[v] and not called then
            if not table.isfrozen(v) then
                unfrozen[#unfrozen + 1] = path
            end
            if pcall(setmetatable, v, {}) then
                settable[#settable + 1] = path
            end
        end
        for k, x in next, v do
            if type(k) == "string" and not called then
                names[#names + 1] = k
            end
            visit(k, path .. "[key]", called)
            visit(x, path .. "." .. tostring(k), called)
        end
    elseif t == "function" and not called then
        for _, args in ipairs({ table.pack(v), table.pack(), table.pack("buildat/module/lib") }) do
            local r = table.pack(pcall(v, table.unpack(args, 1, args.n)))
            for j = 1, r.n do
                visit(r[j], path .. "(...)#" .. j, true)
            end
        end
    elseif t == "thread" then
        visit(coroutine.status(v), path .. "<status>", called)
    end
end
return found, paths, names, unfrozen, settable
"#;

#[test]
fn escape_audit_finds_nothing_of_the_host() {
    let (rt, log) = runtime_with_time_limit(WORK_TIME_LIMIT);
    run(
        &rt,
        "lib/client_lua/init.lua",
        "local M = {} function M.hello() return 'hi' end return M",
    )
    .expect("module");
    let values = rt
        .eval_sandboxed("auditor/client_lua/init.lua", WALKER)
        .expect("the walk completes within the limits");
    let [found, paths, names, unfrozen, settable] = values.as_slice() else {
        panic!("walker returned {} values", values.len());
    };
    let list = |v: &Value| -> Vec<Value> {
        v.as_table()
            .expect("a list")
            .sequence_values::<Value>()
            .collect::<Result<_, _>>()
            .expect("values")
    };
    let strings = |v: &Value| -> Vec<String> {
        list(v)
            .into_iter()
            .map(|s| s.to_string().expect("string"))
            .collect()
    };
    let found = list(found);
    let paths = strings(paths);
    let names: HashSet<String> = strings(names).into_iter().collect();
    assert!(
        found.len() > 150,
        "the walk reached only {} values",
        found.len()
    );
    // It did reach what a script legitimately sees.
    for expected in [
        "send_packet",
        "encode",
        "decode",
        "upper",
        "floor",
        "__index",
        "hello",
        "get_voxel",
        "set_acking",
        "set_interval",
    ] {
        assert!(names.contains(expected), "the walk saw {expected}");
    }
    // Errors from Rust functions were walked, and their metatable is locked.
    assert!(names.contains("<locked false>"), "error userdata seen");
    // None of these names anywhere.
    for forbidden in [
        "getfenv",
        "setfenv",
        "debug",
        "io",
        "execute",
        "loadstring",
        "load",
        "dofile",
        "loadfile",
        "newproxy",
        "gcinfo",
        "exit",
        "getenv",
        "rename",
        "tmpname",
        "read_file",
        "set_timer",
        "extension_source",
        "registry",
        "run_trusted",
        "sandbox_env",
        "forget_file",
        "on_exit",
        "world_get_voxel",
    ] {
        assert!(!names.contains(forbidden), "{forbidden} is reachable");
    }
    // None of the host's own values.
    let host = rt.host_values().expect("host values");
    assert!(host.len() > 15, "{} host values", host.len());
    for (name, value) in &host {
        let pointer = value.to_pointer();
        if pointer.is_null() {
            continue;
        }
        if let Some(index) = found.iter().position(|v| v.to_pointer() == pointer) {
            panic!("the sandbox reached the host's {name} at {}", paths[index]);
        }
    }
    // Every table reached by fields (not the file's own environment or
    // module interfaces) is read-only, and its metatable cannot be set.
    assert_eq!(
        strings(unfrozen),
        Vec::<String>::new(),
        "writable shared tables"
    );
    assert_eq!(
        strings(settable),
        Vec::<String>::new(),
        "setmetatable worked on"
    );
    // The VM is fine afterwards.
    drop(log);
    assert!(run(&rt, "after/client_lua/init.lua", "return 1").is_ok());
}

// ---------------------------------------------------------------------------
// The API
// ---------------------------------------------------------------------------

#[test]
fn modules_run_once_and_return_their_interface() {
    let (rt, _log) = runtime();
    rt.set_file(
        "lib/client_lua/init.lua",
        br#"buildat.send_packet("test:lib_loaded", "") return { n = 42 }"#,
    );
    run(
        &rt,
        "app/client_lua/init.lua",
        r#"
        local a = require("buildat/module/lib")
        local b = require("buildat/module/lib")
        assert(a == b and a.n == 42)
        local ok, err = pcall(require, "buildat/module/missing")
        assert(not ok and string.find(tostring(err), "missing/client_lua/init.lua"), tostring(err))
        "#,
    )
    .expect("app runs");
    // The server's run_script for lib's init.lua does not run it again.
    rt.run_script("lib/client_lua/init.lua").expect("skip");
    assert_eq!(sent(&rt), [("test:lib_loaded".to_string(), String::new())]);
    // A new version of the file loads afresh.
    rt.set_file(
        "lib/client_lua/init.lua",
        br#"buildat.send_packet("test:lib_v2", "") return 2"#,
    );
    rt.run_script("lib/client_lua/init.lua").expect("v2");
    assert_eq!(sent(&rt), [("test:lib_v2".to_string(), String::new())]);
    // A require cycle is an error, not a hang.
    rt.set_file(
        "x/client_lua/init.lua",
        br#"return require("buildat/module/y")"#,
    );
    rt.set_file(
        "y/client_lua/init.lua",
        br#"return require("buildat/module/x")"#,
    );
    let error = rt.run_script("x/client_lua/init.lua").expect_err("cycle");
    assert!(error.message.contains("cycle"), "{error}");
}

#[test]
fn extensions_give_sandboxed_code_only_their_safe_table() {
    let (rt, _log) = runtime();
    run(
        &rt,
        "user/client_lua/init.lua",
        r#"
        local json = require("buildat/extension/json")
        assert(json.safe == nil, "only the safe table")
        assert(table.isfrozen(json))
        assert(not pcall(function() json.encode = nil end))
        local text = json.encode({ a = { 1, 2, 3 }, b = "x\n", c = true })
        assert(text == '{"a":[1,2,3],"b":"x\\n","c":true}', text)
        local back = json.decode(text)
        assert(back.a[3] == 3 and back.b == "x\n" and back.c == true)
        assert(require("buildat/extension/json") == json)
        buildat.send_packet("test:json", text)
        "#,
    )
    .expect("json works");
    assert_eq!(sent(&rt)[0].1, r#"{"a":[1,2,3],"b":"x\n","c":true}"#);
}

/// A level the sink does not keep costs its caller nothing: the logger
/// does not even turn its arguments into text, and `log:enabled` says so.
#[test]
fn a_logger_skips_the_levels_its_sink_does_not_keep() {
    let log: Log = Rc::default();
    let sink = log.clone();
    let rt = Runtime::new(Options {
        memory_limit: MEMORY_LIMIT,
        time_limit: TIME_LIMIT,
        client_name: "tester".into(),
        log: LogSink::new(Level::Info, move |level, name, message| {
            sink.borrow_mut()
                .push((level, name.to_string(), message.to_string()));
        }),
    })
    .expect("runtime starts");
    run(
        &rt,
        "levels/client_lua/init.lua",
        r#"
        local log = buildat.Logger("levels")
        local formatted = 0
        local costly = setmetatable({}, { __tostring = function()
            formatted += 1
            return "costly"
        end })
        log:verbose("skipped", costly)
        log:debug(costly)
        log:info("kept", costly)
        assert(formatted == 1, "formatted " .. formatted .. " times")
        assert(log:enabled("info") and log:enabled("error"))
        assert(not log:enabled("verbose") and not log:enabled("debug"))
        assert(not pcall(log.enabled, log, "loud"), "an unknown level is an error")
        "#,
    )
    .expect("levels");
    assert_eq!(
        *log.borrow(),
        [(Level::Info, "levels".to_string(), "kept costly".to_string())]
    );
}

#[test]
fn api_subscribe_unsubscribe_logger_dump_bytes_disconnect() {
    let (rt, log) = runtime();
    run(
        &rt,
        "api/client_lua/init.lua",
        r#"
        local log = buildat.Logger("mylogger")
        log:info("hello", 1)
        log.warning("careful")
        log:debug("details")
        print("printed", nil)
        local function on(data)
            buildat.send_packet("test:got", buildat.dump(buildat.bytes(data)))
            buildat.unsub_packet(on)
        end
        buildat.sub_packet("test:data", on)
        assert(buildat.dump({ b = 1, a = { "x" } }) == '{a = {"x"}, b = 1}', buildat.dump({ b = 1, a = { "x" } }))
        assert(buildat.client_name == "tester")
        assert(type(buildat.set_timeout) == "function", "module files get timers")
        assert(buildat.on_exit == nil, "exit hooks are for bots")
        assert(not pcall(buildat.send_packet, "core:request_file", ""))
        assert(not pcall(buildat.sub_packet, "core:run_script", print))
        "#,
    )
    .expect("api");
    assert_eq!(
        rt.subscriptions(),
        [(
            "test:data".to_string(),
            "api/client_lua/init.lua".to_string()
        )]
    );
    assert!(rt.dispatch_packet("test:data", b"AB").is_empty());
    assert!(
        rt.dispatch_packet("test:data", b"CD").is_empty(),
        "unsubscribed"
    );
    assert_eq!(
        sent(&rt),
        [("test:got".to_string(), "{65, 66}".to_string())]
    );
    let log = log.borrow();
    assert!(log.contains(&(Level::Info, "mylogger".into(), "hello 1".into())));
    assert!(log.contains(&(Level::Warning, "mylogger".into(), "careful".into())));
    assert!(log.contains(&(Level::Debug, "mylogger".into(), "details".into())));
    assert!(log.contains(&(
        Level::Info,
        "api/client_lua/init.lua".into(),
        "printed nil".into()
    )));
    assert!(!rt.disconnect_requested());
    run(&rt, "api/client_lua/bye.lua", "buildat.disconnect()").expect("bye");
    assert!(rt.disconnect_requested());
}

#[test]
fn run_script_file_runs_another_transferred_file_sandboxed() {
    let (rt, _log) = runtime();
    rt.set_file(
        "m/client_lua/helper.lua",
        b"buildat.send_packet('test:helper', tostring(secret)) return 7",
    );
    run(
        &rt,
        "m/client_lua/init.lua",
        r#"
        secret = "mine"
        assert(buildat.run_script_file("m/client_lua/helper.lua") == 7)
        assert(not pcall(buildat.run_script_file, "/etc/passwd"))
        "#,
    )
    .expect("runs");
    // The helper ran in a fresh environment: it does not see `secret`.
    assert_eq!(sent(&rt), [("test:helper".to_string(), "nil".to_string())]);
}

#[test]
fn bot_scripts_get_timers() {
    let (rt, _log) = runtime();
    rt.run_trusted(
        "bot.lua",
        br#"
        local n = 0
        local id
        id = buildat.set_interval(0.001, function()
            n += 1
            buildat.send_packet("test:tick", tostring(n))
            if n == 3 then buildat.clear_timer(id) end
        end)
        buildat.set_timeout(0, function() buildat.send_packet("test:once", "") end)
        buildat.set_timeout(0, function() while true do end end)
        local json = require("buildat/extension/json")
        assert(type(json.safe) == "table", "bots get the whole extension")
        "#,
    )
    .expect("bot runs");
    let start = Instant::now();
    let mut ticks = Vec::new();
    let mut errors = Vec::new();
    while start.elapsed() < Duration::from_secs(5)
        && ticks
            .iter()
            .filter(|t: &&String| t.starts_with("test:tick"))
            .count()
            < 3
    {
        errors.extend(rt.run_due_timers(Instant::now()));
        ticks.extend(sent(&rt).into_iter().map(|(n, d)| format!("{n}={d}")));
        std::thread::sleep(Duration::from_millis(2));
    }
    assert!(ticks.contains(&"test:once=".to_string()), "{ticks:?}");
    ticks.retain(|t| t.starts_with("test:tick"));
    assert_eq!(ticks, ["test:tick=1", "test:tick=2", "test:tick=3"]);
    assert_eq!(errors.len(), 1, "the stuck timer was stopped");
    assert_eq!(errors[0].kind, FailureKind::TimeLimit);
    assert_eq!(errors[0].file, "bot.lua");
    std::thread::sleep(Duration::from_millis(10));
    assert!(rt.run_due_timers(Instant::now()).is_empty());
    assert!(sent(&rt).is_empty(), "the interval was cleared");
    assert_eq!(rt.next_timer(), None);
}

#[test]
fn module_timers_belong_to_their_file() {
    let (rt, _log) = runtime();
    run(
        &rt,
        "a/client_lua/init.lua",
        r#"
        local n = 0
        local id
        id = buildat.set_interval(0.001, function()
            n += 1
            buildat.send_packet("test:a", tostring(n))
            if n == 2 then buildat.clear_timer(id) end
        end)
        "#,
    )
    .expect("a runs");
    // Another file cannot clear a's timer (ids are guessable).
    run(
        &rt,
        "b/client_lua/init.lua",
        r#"for id = 1, 10 do buildat.clear_timer(id) end"#,
    )
    .expect("b runs");
    let start = Instant::now();
    let mut ticks = Vec::new();
    while start.elapsed() < Duration::from_secs(5) && ticks.len() < 2 {
        assert!(rt.run_due_timers(Instant::now()).is_empty());
        ticks.extend(sent(&rt).into_iter().map(|(_, d)| d));
        std::thread::sleep(Duration::from_millis(2));
    }
    assert_eq!(ticks, ["1", "2"], "b did not clear a's timer");
    std::thread::sleep(Duration::from_millis(10));
    assert!(rt.run_due_timers(Instant::now()).is_empty());
    assert!(sent(&rt).is_empty(), "a cleared its own interval");
    assert_eq!(rt.next_timer(), None);
}

#[test]
fn bot_exit_hooks_run_once_and_are_contained() {
    let (rt, _log) = runtime();
    rt.run_trusted(
        "bot.lua",
        br#"
        buildat.on_exit(function() buildat.send_packet("test:bye", "1") end)
        buildat.on_exit(function() error("hook broke") end)
        buildat.on_exit(function() while true do end end)
        buildat.on_exit(function() buildat.send_packet("test:bye", "2") end)
        "#,
    )
    .expect("bot runs");
    let errors = rt.run_exit_hooks();
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(errors[0].message.contains("hook broke"));
    assert_eq!(errors[1].kind, FailureKind::TimeLimit);
    assert_eq!(
        sent(&rt),
        [
            ("test:bye".to_string(), "1".to_string()),
            ("test:bye".to_string(), "2".to_string())
        ]
    );
    assert!(rt.run_exit_hooks().is_empty(), "each hook runs once");
}

/// `buildat.ui` as a game uses it: text lines (cut to the limit), key
/// bindings to actions and to functions, the hotbar and its selection
/// (wrapping both ways), boxes, moving the player; then the frontend's
/// side: a key, a click with its target and a move reach the handlers of
/// the file that set them, and a failing handler is contained.
#[test]
fn the_ui_api_holds_what_the_game_set_and_passes_input_to_its_handlers() {
    use buildat_client::frontend::{Button, Target};
    use buildat_client::sandbox::{Action, MAX_TEXT_BYTES};

    let (rt, _log) = runtime();
    rt.set_graphical(true);
    run(
        &rt,
        "game/client_lua/init.lua",
        r#"
        local ui = buildat.ui
        assert(ui.graphical() == true)
        ui.set_text("1 help", "hello")
        ui.set_text("2 long", string.rep("é", 300))
        ui.set_text("3 gone", "x")
        ui.set_text("3 gone", nil)
        ui.bind("W", "forward")
        ui.bind("Q", "free_mouse")
        ui.bind("E", function(pressed)
            buildat.send_packet("test:key", "E " .. tostring(pressed))
        end)
        ui.bind("F", function() error("boom") end)
        local ok, err = pcall(ui.bind, "G", "fly")
        assert(not ok and string.find(tostring(err), "unknown action"), tostring(err))
        ui.set_hotbar({ "stone", "dirt", "grass" })
        ui.select(0)
        local slot, name = ui.selected()
        assert(slot == 3 and name == "grass", "select(0) wraps to the last slot")
        ui.select(5)
        slot, name = ui.selected()
        assert(slot == 2 and name == "dirt", "select(5) wraps to the second slot")
        ui.set_box("p", 1, 2, 3, 0.6, 1.8, 0.9, 2, -1)
        ui.set_box("q", 0, 0, 0, 1, 1)
        ui.remove_box("q")
        ui.set_position(4, 5, 6)
        ui.on_click(function(button, target)
            if target then
                buildat.send_packet("test:click", button .. " " .. target.x .. "," .. target.y
                    .. "," .. target.z .. " before " .. target.before.y)
            else
                buildat.send_packet("test:click", button .. " nothing")
            end
        end)
        ui.on_move(function(x, y, z)
            buildat.send_packet("test:move", x .. "," .. y .. "," .. z)
        end)
        "#,
    )
    .expect("the game's UI script runs");

    let state = rt.take_ui_change().expect("the UI changed");
    assert!(rt.take_ui_change().is_none(), "a change is taken once");
    assert_eq!(state.texts.len(), 2, "{:?}", state.texts);
    assert_eq!(state.texts["1 help"], "hello");
    let long = &state.texts["2 long"];
    assert!(long.len() <= MAX_TEXT_BYTES && long.len() >= MAX_TEXT_BYTES - 1);
    assert!(
        long.chars().all(|c| c == 'é'),
        "cut on a character boundary"
    );
    assert_eq!(state.actions.get("W"), Some(&Action::Forward));
    assert_eq!(state.actions.get("Q"), Some(&Action::FreeMouse));
    assert!(
        !state.actions.contains_key("E"),
        "a function binding is not an action"
    );
    assert_eq!(state.hotbar, ["stone", "dirt", "grass"]);
    assert_eq!(state.selected, 1);
    assert_eq!(state.boxes.len(), 1);
    let player = state.boxes["p"];
    assert_eq!(player.position, [1.0, 2.0, 3.0]);
    assert_eq!(
        player.colour,
        [0.9, 1.0, 0.0],
        "channels are clamped to 0..1"
    );
    assert_eq!(state.teleport.map(|(_, p)| p), Some([4.0, 5.0, 6.0]));

    assert!(rt.dispatch_key("E", true).is_empty());
    assert!(rt.dispatch_key("E", false).is_empty());
    assert!(
        rt.dispatch_key("Z", true).is_empty(),
        "an unbound key calls nothing"
    );
    let target = Target {
        voxel: [7, -8, 9],
        before: [7, -7, 9],
    };
    assert!(rt.dispatch_click(Button::Right, Some(target)).is_empty());
    assert!(rt.dispatch_click(Button::Left, None).is_empty());
    assert!(rt.dispatch_move([1.5, 2.0, -3.25]).is_empty());
    assert_eq!(
        sent(&rt),
        [
            ("test:key".to_string(), "E true".to_string()),
            ("test:key".to_string(), "E false".to_string()),
            (
                "test:click".to_string(),
                "right 7,-8,9 before -7".to_string()
            ),
            ("test:click".to_string(), "left nothing".to_string()),
            ("test:move".to_string(), "1.5,2,-3.25".to_string()),
        ]
    );

    let errors = rt.dispatch_key("F", true);
    assert_eq!(errors.len(), 1, "the failing handler's error is returned");
    assert!(errors[0].to_string().contains("boom"), "{}", errors[0]);
    assert!(
        rt.dispatch_key("E", true).is_empty(),
        "the runtime still works"
    );
}

/// Each kind of UI entry is bounded: text lines, key bindings and boxes
/// stop at `MAX_UI_ENTRIES` with an error, and non-finite positions are
/// refused.
#[test]
fn the_ui_api_is_bounded() {
    use buildat_client::sandbox::MAX_UI_ENTRIES;

    let (rt, _log) = runtime_with_bystander(WORK_TIME_LIMIT);
    let result = rt.eval_sandboxed(
        "game/client_lua/flood.lua",
        &format!(
            r#"
            local ui = buildat.ui
            local function fill(f)
                for i = 1, {n} do
                    local ok, err = pcall(f, i)
                    if not ok then return i, tostring(err) end
                end
                return nil
            end
            local texts = fill(function(i) ui.set_text("t" .. i, "x") end)
            local keys = fill(function(i) ui.bind("K" .. i, function() end) end)
            local boxes = fill(function(i) ui.set_box("b" .. i, 0, 0, 0, 1, 1) end)
            local nan_ok = pcall(ui.set_box, "nan", 0 / 0, 0, 0, 1, 1)
            local inf_ok = pcall(ui.set_position, math.huge, 0, 0)
            return texts, keys, boxes, nan_ok, inf_ok
            "#,
            n = MAX_UI_ENTRIES + 10
        ),
    );
    let values = result.expect("the flood script runs to its end");
    let number = |i: usize| match &values[i] {
        Value::Integer(n) => *n as usize,
        Value::Number(n) => *n as usize,
        other => panic!("value {i}: {other:?}"),
    };
    for (i, what) in ["texts", "keys", "boxes"].iter().enumerate() {
        assert_eq!(number(i), MAX_UI_ENTRIES + 1, "{what} stop after the limit");
    }
    assert_eq!(values[3], Value::Boolean(false), "a NaN box is refused");
    assert_eq!(
        values[4],
        Value::Boolean(false),
        "an infinite position is refused"
    );
    assert_healthy(&rt, "after the UI flood");
}

/// The default game's controls (`modules/main/client_lua/init.lua`, run as
/// the server ships it): a left click starts a dig (`main:dig_start`; it
/// completes once the server's `main:dig_time` has passed), with F held
/// punches, with E held uses, a middle click uses; each sends its `main:*`
/// packet for the voxel clicked.
#[test]
fn the_game_s_clicks_dig_punch_and_use_the_voxel_under_the_crosshair() {
    use buildat_client::frontend::{Button, Target};
    use buildat_format::Packet;
    use buildat_main_protocol::{DigStart, Punch, Use};

    let (rt, _log) = runtime();
    rt.set_graphical(true);
    let game = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../modules/main/client_lua/init.lua");
    let source = std::fs::read_to_string(&game).expect("the game's client Lua");
    run(&rt, "main/client_lua/init.lua", &source).expect("the game's Lua runs");
    rt.take_outgoing();
    let target = Some(Target {
        voxel: [3, -4, 5],
        before: [3, -3, 5],
    });
    let voxel = [3, -4, 5];
    let click = |button| assert!(rt.dispatch_click(button, target).is_empty());
    let key = |key, pressed| assert!(rt.dispatch_key(key, pressed).is_empty());
    click(Button::Left);
    key("F", true);
    click(Button::Left);
    key("F", false);
    key("E", true);
    click(Button::Left);
    key("E", false);
    click(Button::Middle);
    click(Button::Left);
    let expected = [
        (DigStart::NAME, DigStart { voxel }.encode().unwrap()),
        (Punch::NAME, Punch { voxel }.encode().unwrap()),
        (Use::NAME, Use { voxel }.encode().unwrap()),
        (Use::NAME, Use { voxel }.encode().unwrap()),
        (DigStart::NAME, DigStart { voxel }.encode().unwrap()),
    ]
    .map(|(name, data)| (name.to_string(), data));
    assert_eq!(rt.take_outgoing(), expected);
}

/// `buildat.ui.set_daylight(sun, r, g, b)`: held in the UI state (clamped
/// to 0..1, non-finite refused), a repeat of the same light is no change.
#[test]
fn set_daylight_holds_the_sunlight_and_the_sky() {
    use buildat_client::sandbox::Daylight;

    let (rt, _log) = runtime();
    assert_eq!(
        rt.ui_state().daylight,
        None,
        "full sun until a game sets it"
    );
    run(
        &rt,
        "game/client_lua/init.lua",
        r#"
        buildat.ui.set_daylight(0.25, 0.1, 0.2, 2)
        local ok = pcall(buildat.ui.set_daylight, 0 / 0, 0, 0, 0)
        assert(not ok, "NaN is refused")
        "#,
    )
    .expect("runs");
    let state = rt.take_ui_change().expect("changed");
    assert_eq!(
        state.daylight,
        Some(Daylight {
            sun: 0.25,
            sky: [0.1, 0.2, 1.0]
        })
    );
    run(
        &rt,
        "game/again.lua",
        "buildat.ui.set_daylight(0.25, 0.1, 0.2, 1)",
    )
    .expect("runs");
    assert!(rt.take_ui_change().is_none(), "the same light is no change");
}

/// The daytime module's client Lua (`modules/daytime/client_lua/init.lua`)
/// on a `daytime:time` packet: its clock, night and on_change, and the
/// daylight it sets: full sun under the client's own sky at noon, a little
/// light under a dark sky at midnight; a malformed packet is ignored.
#[test]
fn the_daytime_module_sets_the_daylight_from_the_time_it_is_told() {
    use buildat_client::render::SKY;

    const DAYTIME: &str = include_str!("../../../modules/daytime/client_lua/init.lua");
    let (rt, log) = runtime();
    rt.set_file("daytime/client_lua/init.lua", DAYTIME.as_bytes());
    run(
        &rt,
        "bot.lua",
        r#"
        local daytime = require("buildat/module/daytime")
        assert(daytime.time() == nil and daytime.clock() == nil)
        daytime.on_change(function(t)
            buildat.send_packet("test:time", daytime.clock() .. " " .. tostring(daytime.night()))
        end)
        "#,
    )
    .expect("runs");
    let packet = |time: f32, day: f32| {
        let mut data = time.to_le_bytes().to_vec();
        data.extend(day.to_le_bytes());
        data
    };
    assert!(
        rt.dispatch_packet("daytime:time", &packet(0.5, 0.0))
            .is_empty()
    );
    let noon = rt.take_ui_change().expect("the daylight is set");
    let noon = noon.daylight.expect("a daylight");
    assert_eq!(noon.sun, 1.0);
    assert_eq!(noon.sky, SKY, "the day's sky is the client's own");

    assert!(
        rt.dispatch_packet("daytime:time", &packet(0.0, 0.0))
            .is_empty()
    );
    let midnight = rt.take_ui_change().expect("changed").daylight.expect("set");
    assert!(midnight.sun > 0.05 && midnight.sun < 0.3, "{midnight:?}");
    assert!(midnight.sky.iter().all(|c| *c < 0.1), "{midnight:?}");

    assert!(rt.dispatch_packet("daytime:time", &[1, 2, 3]).is_empty());
    assert!(
        rt.dispatch_packet("daytime:time", &packet(1.5, 0.0))
            .is_empty()
    );
    assert!(
        rt.take_ui_change().is_none(),
        "malformed packets change nothing"
    );
    assert_eq!(
        sent(&rt),
        [
            ("test:time".to_string(), "12:00 false".to_string()),
            ("test:time".to_string(), "00:00 true".to_string())
        ]
    );
    let warnings = log
        .borrow()
        .iter()
        .filter(|(_, name, message)| name == "daytime" && message.contains("malformed"))
        .count();
    assert_eq!(warnings, 2);

    // Between two packets the clock runs on locally: a 10 s day, 0.5 s on.
    assert!(
        rt.dispatch_packet("daytime:time", &packet(0.5, 10.0))
            .is_empty()
    );
    std::thread::sleep(Duration::from_millis(500));
    let now = rt
        .eval_sandboxed(
            "ask.lua",
            r#"return require("buildat/module/daytime").time()"#,
        )
        .expect("runs");
    let Some(Value::Number(now)) = now.first().cloned() else {
        panic!("a number: {now:?}");
    };
    assert!((0.54..0.6).contains(&now), "{now}");
}

/// The game screens' API (docs/client.md "Game screens"): items, a screen
/// with every kind of widget, slots updated in the screen and the hotbar,
/// the hotbar's item slots and their selection, health, the chat; then
/// the frontend's widget messages reach the right callbacks (the target
/// grid's `on_move` with 1-based indices and the whole stack's count for a
/// left drag, a slot click, a button, a field, the chat, Esc closing the
/// screen and calling its `on_close`), a failing one contained.
#[test]
fn the_game_screens_hold_what_the_game_opened_and_route_widget_events() {
    use buildat_client::frontend::{Button, FromFrontend};
    use buildat_client::sandbox::{CHAT_LINES, Stack, WidgetKind};

    let (rt, _log) = runtime();
    rt.set_graphical(true);
    run(
        &rt,
        "game/client_lua/init.lua",
        r##"
        local ui = buildat.ui
        local function say(...)
            local parts = {}
            for i = 1, select("#", ...) do parts[i] = tostring((select(i, ...))) end
            buildat.send_packet("test:ui", table.concat(parts, " "))
        end
        ui.define_items({
            stone = { description = "Stone", voxel = "stone" },
            stick = { description = "Stick", texture = "main/client_data/textures/stick.png" },
            dirt = { description = "Dirt", texture = "", voxel = "dirt" },
        })
        ui.open_screen("inv", {
            title = "Inventory", columns = 9, rows = 6,
            on_close = function() say("closed inv") end,
            widgets = {
                { kind = "slots", id = "main", x = 0, y = 1, columns = 8,
                  slots = { { name = "stone", count = 5 }, false, { "stick", 2, 7 } },
                  on_move = function(...) say("move", ...) end },
                { kind = "slots", id = "craft", x = 0, y = 4, columns = 2, slots = { false, false },
                  on_move = function(...) say("craft move", ...) end,
                  on_click = function(...) say("craft click", ...) end },
                { kind = "label", x = 3, y = 4, text = "Craft" },
                { kind = "button", id = "sort", x = 6, y = 4, text = "Sort",
                  on_click = function() say("sort") end },
                { kind = "field", id = "search", x = 0, y = 5, width = 5, text = "st",
                  on_submit = function(text) say("search", text) end },
                { kind = "button", id = "bad", x = 6, y = 5, text = "Bad",
                  on_click = function() error("button boom") end },
                { kind = "image", x = 8, y = 0, width = 1, height = 1,
                  file = "main/client_data/logo.png" },
            },
        })
        ui.update_slots("main", { false, { name = "stone", count = 4 } })
        ui.set_hotbar_slots({ { name = "dirt", count = 3 }, false })
        ui.select(2)
        local slot, name = ui.selected()
        assert(slot == 2 and name == nil, "an empty hotbar slot: " .. tostring(slot))
        ui.select(3)
        slot, name = ui.selected()
        assert(slot == 1 and name == "dirt", "select wraps over the item slots")
        ui.set_health(17, 20)
        ui.on_chat(function(text) say("chat", text) end)
        ui.open_chat("/")
        for i = 1, 12 do ui.add_chat_line("line " .. i) end

        -- Bad arguments are clear errors naming what is wrong.
        local function fails(pattern, f, ...)
            local ok, err = pcall(f, ...)
            assert(not ok, "expected an error matching " .. pattern)
            assert(string.find(tostring(err), pattern, 1, true), tostring(err))
        end
        fails('field "columns" must be a number from 1 to 64', ui.open_screen, "x",
            { title = "t", columns = 0, rows = 1 })
        fails('widget 1: unknown kind "slider"', ui.open_screen, "x",
            { columns = 1, rows = 1, widgets = { { kind = "slider" } } })
        fails('widget 1: field "id" must be a string', ui.open_screen, "x",
            { columns = 1, rows = 1, widgets = { { kind = "slots", columns = 1, slots = {} } } })
        fails("slot 2 must be a stack table or false", ui.update_slots, "main", { false, 7 })
        fails('field "on_click" must be a function', ui.open_screen, "x",
            { columns = 1, rows = 1, widgets = { { kind = "button", id = "b", on_click = 1 } } })
        fails("define_items: item \"x\" must be a table", ui.define_items, { x = 1 })
        fails("define_items: a key (an item name) must be 1 to 200 bytes long, got 0",
            ui.define_items, { [""] = {} })
        fails("open_screen: the id must be a string, got", ui.open_screen, 1, {})
        fails('slot 1: field "name" must be 1 to 200 bytes long, got 0', ui.update_slots, "main",
            { { name = "" } })
        fails("set_hotbar_slots: slots must be a table of stacks, got", ui.set_hotbar_slots, 5)
        fails("the maximum must be 1 to 1000", ui.set_health, 1, 0)
        fails("add_chat_line: expected a string", ui.add_chat_line, {})
        fails("on_chat: expected a function", ui.on_chat, 1)
        "##,
    )
    .expect("the game's screen script runs");

    let state = rt.take_ui_change().expect("the UI changed");
    assert_eq!(state.items.len(), 3);
    assert_eq!(state.items["stone"].voxel.as_deref(), Some("stone"));
    assert_eq!(
        state.items["dirt"].texture, None,
        "an empty texture is none"
    );
    assert_eq!(state.screens.len(), 1, "the failed screens were not opened");
    let screen = &state.screens[0];
    assert_eq!(
        (screen.id.as_str(), screen.title.as_str()),
        ("inv", "Inventory")
    );
    assert_eq!((screen.columns, screen.rows), (9.0, 6.0));
    assert_eq!(screen.widgets.len(), 7);
    let stone = |count| {
        Some(Stack {
            name: "stone".into(),
            count,
            wear: 0,
        })
    };
    match &screen.widgets[0].kind {
        WidgetKind::Slots {
            id,
            columns,
            slots,
            clickable,
        } => {
            assert_eq!((id.as_str(), *columns, *clickable), ("main", 8, false));
            assert_eq!(slots, &vec![None, stone(4)], "update_slots replaced them");
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        &screen.widgets[1].kind,
        WidgetKind::Slots {
            clickable: true,
            ..
        }
    ));
    assert!(matches!(&screen.widgets[4].kind, WidgetKind::Field { text, .. } if text == "st"));
    assert!(
        matches!(&screen.widgets[6].kind, WidgetKind::Image { file, .. } if file == "main/client_data/logo.png")
    );
    assert_eq!(
        state.hotbar_slots,
        Some(vec![
            Some(Stack {
                name: "dirt".into(),
                count: 3,
                wear: 0
            }),
            None
        ])
    );
    assert_eq!(state.selected, 0);
    assert_eq!(state.health, Some((17, 20)));
    assert_eq!(state.chat_open.as_ref().map(|(_, p)| p.as_str()), Some("/"));
    assert_eq!(state.chat_lines.len(), CHAT_LINES);
    assert_eq!(state.chat_lines[0].text, "line 3", "the oldest lines go");
    assert_eq!(state.chat_lines[CHAT_LINES - 1].text, "line 12");
    sent(&rt);

    let screen = || "inv".to_string();
    let left_drag = FromFrontend::SlotMove {
        from: ("main".into(), 1),
        to: ("craft".into(), 0),
        count: None,
        screen: screen(),
    };
    let to_hotbar = FromFrontend::SlotMove {
        from: ("main".into(), 1),
        to: ("hotbar".into(), 1),
        count: Some(2),
        screen: screen(),
    };
    let messages = [
        left_drag,
        to_hotbar,
        FromFrontend::SlotClick {
            grid: "craft".into(),
            index: 1,
            button: Button::Right,
            screen: screen(),
        },
        FromFrontend::ButtonClick {
            screen: screen(),
            widget: "sort".into(),
        },
        FromFrontend::FieldSubmit {
            screen: screen(),
            widget: "search".into(),
            text: "stone".into(),
        },
        FromFrontend::ChatSubmit("/help me".into()),
        FromFrontend::ButtonClick {
            screen: "gone".into(),
            widget: "sort".into(),
        },
    ];
    for message in &messages {
        let errors = rt.dispatch_ui(message);
        assert!(errors.is_empty(), "{message:?}: {errors:?}");
    }
    let errors = rt.dispatch_ui(&FromFrontend::ButtonClick {
        screen: screen(),
        widget: "bad".into(),
    });
    assert_eq!(errors.len(), 1, "the failing button's error is returned");
    assert!(
        errors[0].to_string().contains("button boom"),
        "{}",
        errors[0]
    );
    assert!(
        rt.dispatch_ui(&FromFrontend::ScreenClosed(screen()))
            .is_empty()
    );
    assert!(
        rt.dispatch_ui(&FromFrontend::ScreenClosed(screen()))
            .is_empty(),
        "closing it again calls nothing"
    );
    let said: Vec<String> = sent(&rt).into_iter().map(|(_, text)| text).collect();
    assert_eq!(
        said,
        [
            "craft move main 2 craft 1 4",
            "move main 2 hotbar 2 2",
            "craft click 2 right",
            "sort",
            "search stone",
            "chat /help me",
            "closed inv",
        ]
    );
    let state = rt.take_ui_change().expect("closing changed the UI");
    assert!(state.screens.is_empty(), "Esc removed the screen");
    // The game closing a screen removes it and its handlers, without
    // calling its on_close.
    rt.eval_sandboxed(
        "game/client_lua/close.lua",
        r#"
        buildat.ui.open_screen("x", { columns = 1, rows = 1,
            on_close = function() error("on_close called") end })
        buildat.ui.close_screen("x")
        "#,
    )
    .expect("opens and closes a screen");
    let state = rt.take_ui_change().expect("the UI changed");
    assert!(state.screens.is_empty(), "close_screen removed it");
    assert!(
        rt.dispatch_ui(&FromFrontend::ScreenClosed("x".into()))
            .is_empty(),
        "its handlers went with it"
    );
}

/// Screens, their widgets and slots, items and chat handlers are bounded
/// like every other UI entry.
#[test]
fn the_game_screens_are_bounded() {
    use buildat_client::sandbox::MAX_UI_ENTRIES;

    let (rt, _log) = runtime_with_bystander(WORK_TIME_LIMIT);
    let result = rt.eval_sandboxed(
        "game/client_lua/flood.lua",
        &format!(
            r#"
            local ui = buildat.ui
            local n = {n}
            local slots, widgets = {{}}, {{}}
            for i = 1, n do
                slots[i] = {{ name = "stone", count = 1 }}
                widgets[i] = {{ kind = "label", text = "x" }}
            end
            local big_grid = pcall(ui.update_slots, "g", slots)
            local many_widgets = pcall(ui.open_screen, "s", {{ columns = 1, rows = 1, widgets = widgets }})
            local screens
            for i = 1, 100 do
                if not pcall(ui.open_screen, "s" .. i, {{ columns = 1, rows = 1 }}) then
                    screens = i
                    break
                end
            end
            local items
            for i = 1, n do
                if not pcall(ui.define_items, {{ ["item" .. i] = {{ description = "x" }} }}) then
                    items = i
                    break
                end
            end
            local chats
            for i = 1, n do
                if not pcall(ui.on_chat, function() end) then
                    chats = i
                    break
                end
            end
            local long = string.rep("x", 300)
            local long_id = pcall(ui.open_screen, long, {{ columns = 1, rows = 1 }})
            local nan_health = pcall(ui.set_health, 0 / 0, 20)
            return big_grid, many_widgets, screens, items, chats, long_id, nan_health
            "#,
            n = MAX_UI_ENTRIES + 10
        ),
    );
    let values = result.expect("the flood script runs to its end");
    assert_eq!(values[0], Value::Boolean(false), "a grid over the limit");
    assert_eq!(values[1], Value::Boolean(false), "widgets over the limit");
    let number = |i: usize| match &values[i] {
        Value::Integer(n) => *n as usize,
        other => panic!("value {i}: {other:?}"),
    };
    assert_eq!(number(2), 65, "64 open screens at most");
    assert_eq!(number(3), MAX_UI_ENTRIES + 1, "items");
    assert_eq!(number(4), MAX_UI_ENTRIES + 1, "chat handlers");
    assert_eq!(values[5], Value::Boolean(false), "an over-long screen id");
    assert_eq!(values[6], Value::Boolean(false), "a NaN health");
    assert_healthy(&rt, "after the screens flood");
}
