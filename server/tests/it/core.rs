//! The module host with real cdylibs built by cargo, loaded with libloading,
//! each on its own thread: events, calls, panics, ABI refusal, call cycles,
//! load/unload cycles, reload with state and queued events, the watchdog.

use std::time::{Duration, Instant};

use crate::common::{Scratch, logs, wait_until};
use buildat_interface::core_api::ModuleState;
use buildat_interface::{CallError, decode, encode};
use buildat_test_probe_api::{CallMany, CallManyResult, EmitRequest, ProxyCall, Stats};

fn stats(core: &buildat_server::core::Core, module: &str, event: &str) -> Stats {
    decode(
        &core
            .call(module, "stats", &encode(event).expect("encode"))
            .expect("stats call"),
    )
    .expect("stats")
}

fn version(core: &buildat_server::core::Core, module: &str) -> String {
    decode(&core.call(module, "version", &[]).expect("version call")).expect("version")
}

fn state(core: &buildat_server::core::Core, module: &str) -> Option<ModuleState> {
    core.list_modules()
        .into_iter()
        .find(|m| m.name == module)
        .map(|m| m.state)
}

fn emit(core: &buildat_server::core::Core, from: &str, event: &str, count: u64) {
    let request = EmitRequest {
        name: event.into(),
        count,
        payload_size: 16,
    };
    core.call(from, "emit", &encode(&request).expect("encode"))
        .expect("emit");
}

/// Images of this process's loaded copies still mapped, for module `name`.
fn mapped_images(name: &str) -> Vec<String> {
    let store = format!("/loaded/{}-", std::process::id());
    let file = format!("/{name}-");
    let mut images: Vec<String> = std::fs::read_to_string("/proc/self/maps")
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains(&store) && l.contains(&file))
        .filter_map(|l| l.split_whitespace().nth(5).map(str::to_string))
        .collect();
    images.sort();
    images.dedup();
    images
}

#[test]
fn modules_exchange_100k_events_and_10k_calls() {
    let scratch = Scratch::new();
    scratch.add_probe("ev_a");
    scratch.add_probe("ev_b");
    let core = scratch.core(&[]);
    assert_eq!(core.start().expect("start"), 3);
    emit(&core, "ev_a", "probe:seq", 100_000);
    let received = wait_until(Duration::from_secs(120), || {
        let s = stats(&core, "ev_b", "probe:seq");
        (s.count >= 100_000).then_some(s)
    })
    .expect("ev_b received every event");
    assert_eq!(received.count, 100_000, "each event delivered once");
    assert!(
        received.in_order && received.duplicates_or_gaps == 0,
        "{received:?}"
    );

    let request = CallMany {
        module: "ev_b".into(),
        function: "ping".into(),
        count: 10_000,
    };
    let result: CallManyResult = decode(
        &core
            .call("ev_a", "call_many", &encode(&request).expect("encode"))
            .expect("call_many"),
    )
    .expect("result");
    assert_eq!(result.errors, 0);
    assert_eq!(result.latencies_ns.len(), 10_000);
    core.stop_all();
}

#[test]
fn start_and_continue_follow_init() {
    let scratch = Scratch::new();
    scratch.add_probe("life_a");
    let core = scratch.core(&[]);
    core.start().expect("start");
    let lifecycle: Vec<String> = decode(&core.call("life_a", "lifecycle", &[]).unwrap()).unwrap();
    assert_eq!(lifecycle, ["core:start"]);
    for _ in 0..3 {
        core.call("life_a", "incr", &[]).unwrap();
    }
    core.reload_module("life_a").expect("reload");
    let lifecycle: Vec<String> = decode(&core.call("life_a", "lifecycle", &[]).unwrap()).unwrap();
    assert_eq!(
        lifecycle,
        ["core:continue"],
        "a reload delivers core:continue, not core:start"
    );
    let counter: u64 = decode(&core.call("life_a", "get", &[]).unwrap()).unwrap();
    assert_eq!(
        counter, 3,
        "the counter survives the reload through tmp data"
    );
    core.stop_all();
}

#[test]
fn panics_in_constructor_init_and_start_fail_only_that_module() {
    for stage in ["constructor", "init", "start"] {
        let scratch = Scratch::new();
        scratch.add_probe("steady");
        let victim = format!("victim_{stage}");
        // Kept out of the module path the loader scans; loaded by hand.
        let victim_dir = scratch.dir.path().join("outside").join(&victim);
        crate::common::copy_dir(&crate::common::fixture("probe"), &victim_dir);
        let core = scratch.core(&[("probe_panic", &format!("{victim}:{stage}"))]);
        core.start().expect("start");
        let error = core
            .load_module(&victim, Some(&victim_dir))
            .expect_err("the victim panics")
            .to_string();
        assert!(error.contains(&victim), "{error}");
        assert!(error.contains("panicked in"), "{error}");
        assert!(
            error.contains(&format!("probe {victim} panics in {stage} as asked")),
            "{error}"
        );
        assert!(matches!(
            state(&core, &victim),
            Some(ModuleState::Failed(_))
        ));
        assert_eq!(
            core.call("steady", "ping", b"still here").unwrap(),
            b"still here"
        );
        assert!(
            mapped_images(&victim).is_empty(),
            "the failed image was closed"
        );
        core.stop_all();
    }
}

#[test]
fn panics_in_event_and_call_are_contained_and_named() {
    let scratch = Scratch::new();
    scratch.add_probe("calm");
    scratch.add_probe("boom_call");
    scratch.add_probe("boom_event");
    let core = scratch.core(&[]);
    core.start().expect("start");

    let error = core.call("boom_call", "panic", &[]).expect_err("panics");
    assert!(matches!(error, CallError::Panicked(_)), "{error:?}");
    assert!(
        error
            .message()
            .contains("probe boom_call panics in a call as asked"),
        "{error}"
    );

    // Every probe subscribes to probe:panic; only boom_event is told to panic.
    core.emit_event("probe:panic", encode("boom_event").expect("encode"));
    wait_until(Duration::from_secs(10), || {
        matches!(state(&core, "boom_event"), Some(ModuleState::Failed(_))).then_some(())
    })
    .expect("boom_event is marked failed");
    assert!(matches!(
        state(&core, "boom_call"),
        Some(ModuleState::Failed(_))
    ));
    assert_eq!(state(&core, "calm"), Some(ModuleState::Loaded));
    assert_eq!(core.call("calm", "ping", b"ok").unwrap(), b"ok");
    let error = core
        .call("boom_call", "ping", &[])
        .expect_err("failed module refuses calls");
    assert!(error.message().contains("failed"), "{error}");

    let logged = wait_until(Duration::from_secs(10), || {
        let logs = logs();
        (logs.contains("module boom_event failed and is unloaded: panicked in event 'probe:panic'")
            && logs.contains("probe boom_event panics in an event as asked")
            && logs.contains("module boom_call failed and is unloaded"))
        .then_some(())
    });
    assert!(
        logged.is_some(),
        "the log names the module and the message:\n{}",
        logs()
    );
    wait_until(Duration::from_secs(10), || {
        (mapped_images("boom_event").is_empty() && mapped_images("boom_call").is_empty())
            .then_some(())
    })
    .expect("failed images are closed by the supervisor");

    // A failed module can be loaded again.
    core.reload_module("boom_call")
        .expect("reload a failed module");
    assert_eq!(core.call("boom_call", "ping", b"back").unwrap(), b"back");
    core.stop_all();
}

#[test]
fn library_of_another_abi_version_is_refused() {
    let scratch = Scratch::new();
    crate::common::prebuild(&crate::common::fixture("bad_abi"));
    scratch.add_probe("abi_ok");
    let core = scratch.core(&[]);
    core.start().expect("start");
    let dir = scratch.dir.path().join("elsewhere").join("bad_abi");
    crate::common::copy_dir(&crate::common::fixture("bad_abi"), &dir);
    let error = core
        .load_module("bad_abi", Some(&dir))
        .expect_err("refused")
        .to_string();
    assert!(
        error.contains("module bad_abi was built for module ABI version 999"),
        "{error}"
    );
    assert!(error.contains("rebuild it"), "{error}");
    assert_eq!(core.call("abi_ok", "ping", b"x").unwrap(), b"x");
    core.stop_all();
}

#[test]
fn call_cycle_returns_an_error_quickly() {
    let scratch = Scratch::new();
    scratch.add_probe("cy_a");
    scratch.add_probe("cy_b");
    let core = scratch.core(&[]);
    core.start().expect("start");
    // cy_a calls cy_b, which calls back into cy_a while cy_a waits.
    let inner = ProxyCall {
        module: "cy_a".into(),
        function: "ping".into(),
        payload: Vec::new(),
    };
    let outer = ProxyCall {
        module: "cy_b".into(),
        function: "call".into(),
        payload: encode(&inner).expect("encode"),
    };
    let started = Instant::now();
    let error = core
        .call("cy_a", "call", &encode(&outer).expect("encode"))
        .expect_err("cycle");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "took {:?}",
        started.elapsed()
    );
    assert!(matches!(error, CallError::Cycle(_)), "{error:?}");
    assert!(error.message().contains("cy_b -> cy_a -> cy_b"), "{error}");
    // Nothing is left blocked.
    assert_eq!(core.call("cy_a", "ping", b"1").unwrap(), b"1");
    assert_eq!(core.call("cy_b", "ping", b"2").unwrap(), b"2");
    core.stop_all();
}

#[test]
fn load_and_unload_twenty_times_leaves_no_image_mapped() {
    let scratch = Scratch::new();
    let dir = scratch.dir.path().join("outside").join("cycler");
    crate::common::copy_dir(&crate::common::fixture("probe"), &dir);
    let core = scratch.core(&[]);
    core.start().expect("start");
    for round in 0..20 {
        core.load_module("cycler", Some(&dir)).expect("load");
        assert_eq!(
            mapped_images("cycler").len(),
            1,
            "round {round}: one image while loaded"
        );
        assert_eq!(version(&core, "cycler"), "probe-1");
        core.unload_module("cycler").expect("unload");
        assert!(
            mapped_images("cycler").is_empty(),
            "round {round}: image left mapped"
        );
    }
    core.stop_all();
}

#[test]
fn reload_runs_rebuilt_code_and_keeps_old_code_on_compile_error() {
    let scratch = Scratch::new();
    let dir = scratch.add_editable_probe("editable");
    let core = scratch.core(&[]);
    core.start().expect("start");
    assert_eq!(version(&core, "editable"), "probe-1");
    let source = dir.join("src/lib.rs");
    let text = std::fs::read_to_string(&source).unwrap();
    std::fs::write(&source, text.replace("\"probe-1\"", "\"probe-2\"")).unwrap();
    core.reload_module("editable").expect("reload after edit");
    assert_eq!(
        version(&core, "editable"),
        "probe-2",
        "the new code is mapped"
    );
    assert_eq!(mapped_images("editable").len(), 1, "the old image is gone");

    std::fs::write(
        &source,
        text.replace("\"probe-1\"", "\"probe-3\"")
            .replace("fn create", "fn create("),
    )
    .unwrap();
    let error = core
        .reload_module("editable")
        .expect_err("compile error")
        .to_string();
    assert!(error.contains("module editable failed to build"), "{error}");
    assert!(
        error.contains("error"),
        "the compiler's message is shown: {error}"
    );
    assert_eq!(state(&core, "editable"), Some(ModuleState::Loaded));
    assert_eq!(
        version(&core, "editable"),
        "probe-2",
        "the old version keeps serving"
    );
    core.stop_all();
}

#[test]
fn events_sent_during_reloads_arrive_once_and_in_order() {
    let scratch = Scratch::new();
    scratch.add_probe("seq_sender");
    scratch.add_probe("seq_receiver");
    let core = scratch.core(&[]);
    core.start().expect("start");
    let sender = {
        let core = core.clone();
        std::thread::spawn(move || {
            for _ in 0..10 {
                emit(&core, "seq_sender", "probe:seq", 1_000);
            }
        })
    };
    // The sender's count restarts at 0 every 1,000 events; the receiver sees
    // ten runs of 0..1000, so "in order" means exactly 10 resets.
    for _ in 0..5 {
        core.reload_module("seq_receiver").expect("reload receiver");
    }
    sender.join().expect("sender");
    let received = wait_until(Duration::from_secs(60), || {
        let s = stats(&core, "seq_receiver", "probe:seq");
        (s.count >= 10_000).then_some(s)
    })
    .expect("every event arrives");
    assert_eq!(
        received.count, 10_000,
        "none lost or duplicated: {received:?}"
    );
    assert_eq!(
        received.duplicates_or_gaps, 9,
        "only the sender's nine restarts: {received:?}"
    );
    core.stop_all();
}

#[test]
fn watchdog_names_a_stuck_module() {
    let scratch = Scratch::new();
    scratch.add_probe("sleepy");
    scratch.add_probe("awake");
    let core = scratch.core_with(|config| config.watchdog_limit = Duration::from_millis(300));
    core.start().expect("start");
    core.emit_event("probe:hang", encode(&1_500u64).expect("encode"));
    let reported = wait_until(Duration::from_secs(5), || {
        logs()
            .contains("watchdog: module sleepy has been stuck in 'probe:hang'")
            .then_some(())
    });
    assert!(reported.is_some(), "{}", logs());
    wait_until(Duration::from_secs(5), || {
        (state(&core, "sleepy") == Some(ModuleState::Loaded)).then_some(())
    })
    .expect("sleepy recovers");
    core.stop_all();
}

#[test]
fn slow_handlers_are_logged_with_their_module_and_wait() {
    let scratch = Scratch::new();
    scratch.add_probe("slowpoke");
    scratch.add_probe("quick");
    let core =
        scratch.core_with(|config| config.slow_handler_limit = Some(Duration::from_millis(200)));
    core.start().expect("start");
    core.call("quick", "incr", &[]).expect("incr");
    core.emit_event("probe:hang", encode(&300u64).expect("encode"));
    let line = wait_until(Duration::from_secs(5), || {
        logs()
            .lines()
            .find(|l| l.contains("slow handler: module slowpoke ran event 'probe:hang' for "))
            .map(str::to_string)
    });
    let line = line.unwrap_or_else(|| panic!("no slow-handler line:\n{}", logs()));
    assert!(line.contains("in its queue"), "{line}");
    assert!(
        !logs().contains("slow handler: module quick ran call 'incr'"),
        "a fast handler is not logged:\n{}",
        logs()
    );
    core.stop_all();
}

/// The threads [`record_collect`] was called from.
static COLLECTED_ON: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

fn record_collect() {
    let thread = std::thread::current().name().unwrap_or("").to_string();
    COLLECTED_ON
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(thread);
}

#[test]
fn each_modules_thread_has_the_allocator_collect_as_messages_come() {
    let scratch = Scratch::new();
    scratch.add_probe("busy");
    let core = scratch.core_with(|config| {
        config.allocator_collect = Some(record_collect);
        config.allocator_collect_interval = Duration::from_millis(50);
    });
    core.start().expect("start");
    let collects = || {
        let on = COLLECTED_ON.lock().unwrap_or_else(|e| e.into_inner());
        on.iter().filter(|t| *t == "module:busy").count()
    };
    let started = Instant::now();
    while started.elapsed() < Duration::from_millis(500) {
        core.call("busy", "incr", &[]).expect("incr");
        std::thread::sleep(Duration::from_millis(5));
    }
    let during = collects();
    // Half a second of messages: a collect every 50 ms, not one a message.
    assert!((2..=11).contains(&during), "{during} collects");
    std::thread::sleep(Duration::from_millis(200));
    assert!(collects() <= during + 1, "no message, no collect");
    core.stop_all();
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

#[test]
fn hundred_reloads_leave_no_stale_image() {
    let scratch = Scratch::new();
    scratch.add_probe("reloaded");
    let core = scratch.core(&[]);
    core.start().expect("start");
    core.reload_module("reloaded").expect("warm-up reload");
    let before = rss_kib();
    for round in 0..100 {
        core.call("reloaded", "incr", &[]).expect("incr");
        core.reload_module("reloaded")
            .unwrap_or_else(|e| panic!("round {round}: {e}"));
        assert_eq!(
            mapped_images("reloaded").len(),
            1,
            "round {round}: stale image mapped"
        );
    }
    let after = rss_kib();
    let counter: u64 = decode(&core.call("reloaded", "get", &[]).unwrap()).unwrap();
    assert_eq!(counter, 100, "state carried through every reload");
    eprintln!("100 reloads: RSS before {before} KiB, after {after} KiB");
    core.stop_all();
}

#[test]
fn an_answer_after_its_timeout_is_not_taken_for_the_next_call() {
    let scratch = Scratch::new();
    scratch.add_probe("late");
    let core = scratch.core(&[]);
    core.start().expect("start");
    // The module is held up; a call behind it gives up before it answers.
    core.emit_event("probe:hang", encode(&400u64).expect("encode"));
    let error = core
        .call_with_timeout("late", "ping", b"first", Some(Duration::from_millis(100)))
        .expect_err("timed out");
    assert!(matches!(error, CallError::Timeout(_)), "{error:?}");
    // The late answer to "first" reaches this thread's reply channel
    // meanwhile; the next call gets its own.
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(core.call("late", "ping", b"second").unwrap(), b"second");
    assert_eq!(core.call("late", "ping", b"third").unwrap(), b"third");
}
