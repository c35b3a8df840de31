//! `buildat-server settings` on the real binary: every loaded module's
//! declared settings with their type, default, current value and help; a
//! `--set` key no module declares warned about; a bad value refused with
//! its key; and in the in-process host, what a module declared kept over
//! its reload and gone when it unloads.

use crate::common::{Scratch, run_headless};

fn words(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| w.to_string()).collect()
}

/// The row of `key` in the listing, split into words.
fn row<'a>(output: &'a str, key: &str) -> Vec<&'a str> {
    output
        .lines()
        .find(|line| line.split_whitespace().next() == Some(key))
        .unwrap_or_else(|| panic!("no row for {key}:\n{output}"))
        .split_whitespace()
        .collect()
}

#[test]
fn settings_lists_the_network_modules_settings_with_current_values() {
    let scratch = Scratch::new();
    scratch.add_network();
    let (status, output) = run_headless(
        &scratch,
        &words(&[
            "settings",
            "--set",
            "network.max_connections_per_ip=3",
            "--set",
            "network.max_conections=5",
        ]),
    );
    assert_eq!(status, Some(0), "{output}");
    let set = row(&output, "network.max_connections_per_ip");
    assert_eq!(
        &set[1..6],
        ["usize", "16", "3", "--set", "reload"],
        "{output}"
    );
    assert_eq!(
        set[6..].join(" "),
        "Connections one address may hold at once (0: unlimited).",
        "{output}"
    );
    let unset = row(&output, "network.max_frame_size");
    assert_eq!(
        &unset[1..5],
        ["u32", "16777216", "16777216", "default"],
        "{output}"
    );
    assert!(
        output.lines().any(|line| line == "network"),
        "the module's name heads its settings:\n{output}"
    );
    assert!(
        output.contains(
            "network.max_conections is not a setting of network; did you mean \
             network.max_connections? (set in --set"
        ),
        "a misspelt key is warned about:\n{output}"
    );
}

#[test]
fn a_bad_setting_value_is_refused_naming_the_key_and_type() {
    let scratch = Scratch::new();
    scratch.add_network();
    let (status, output) = run_headless(
        &scratch,
        &words(&["settings", "--set", "network.max_connections_per_ip=many"]),
    );
    assert_ne!(status, Some(0), "{output}");
    assert!(
        output.contains("setting network.max_connections_per_ip: 'many' is not a valid usize"),
        "{output}"
    );
}

#[test]
fn declared_settings_stay_over_a_reload_and_go_when_their_module_unloads() {
    use buildat_interface::config::HEADLESS;
    use buildat_interface::core_api::{ListSettings, ModuleSettings};

    let scratch = Scratch::new();
    scratch.add_network();
    let core = scratch.core(&[(HEADLESS, "1"), ("network.max_connections_per_ip", "3")]);
    core.start().expect("the modules load");
    let network = |core: &buildat_server::core::Core| -> Option<ModuleSettings> {
        let listed = core
            .call_typed(&ListSettings {}, None)
            .expect("list_settings");
        listed.into_iter().find(|m| m.module == "network")
    };
    let declared = network(&core).expect("network declared its settings");
    let per_ip = declared
        .settings
        .iter()
        .find(|s| s.info.key == "network.max_connections_per_ip")
        .expect("the per-address limit");
    assert_eq!(per_ip.value.as_deref(), Some("3"));
    assert_eq!(per_ip.info.default, "16");
    let unset = declared
        .settings
        .iter()
        .find(|s| s.info.key == "network.max_frame_size")
        .expect("the frame size");
    assert_eq!(unset.value, None);

    core.reload_module("network").expect("reload");
    assert_eq!(network(&core), Some(declared), "declared again, the same");
    core.unload_with_dependents("network").expect("unload");
    assert_eq!(network(&core), None, "gone with the module");
    core.stop_all();
}
