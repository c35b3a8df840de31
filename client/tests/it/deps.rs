//! What the client links: the wire (the modules' protocol crates, which
//! depend on `buildat-format` alone), never the module ABI
//! (`buildat-interface`) or a module's API crate, directly or through
//! another crate. Read from `cargo tree`, as cargo resolves it.

use std::path::Path;
use std::process::Command;

/// Every package the client's library and binary build with (normal and
/// build dependencies, transitively; not its tests' dev-dependencies).
fn linked_packages() -> Vec<String> {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    let output = Command::new(std::env::var("CARGO").unwrap_or("cargo".into()))
        .args(["tree", "--edges", "normal,build", "--prefix", "none"])
        .args(["--format", "{p}", "--package", "buildat-client"])
        .arg("--manifest-path")
        .arg(&manifest)
        .output()
        .expect("cargo tree runs");
    assert!(
        output.status.success(),
        "cargo tree: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

#[test]
fn the_client_links_the_protocol_crates_and_no_module_abi() {
    let packages = linked_packages();
    for wire in [
        "buildat-network-protocol",
        "buildat-client-file-protocol",
        "buildat-voxelworld-protocol",
        "buildat-main-protocol",
        "buildat-replicate-protocol",
        "buildat-format",
    ] {
        assert!(
            packages.iter().any(|p| p == wire),
            "{wire} among {packages:?}"
        );
    }
    let abi: Vec<&String> = packages
        .iter()
        .filter(|p| *p == "buildat-interface" || (p.starts_with("buildat-") && p.ends_with("-api")))
        .collect();
    assert!(
        abi.is_empty(),
        "the client links the module ABI or an API crate: {abi:?}"
    );
}
