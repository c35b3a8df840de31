//! Stamps the interface crate with the compiler version and a hash of its own
//! sources, so host and module can refuse each other when either differs.
use std::path::Path;

fn fnv1a(hash: &mut u64, bytes: &[u8]) {
    for byte in bytes {
        *hash ^= u64::from(*byte);
        *hash = hash.wrapping_mul(0x100_0000_01b3);
    }
}

fn hash_dir(hash: &mut u64, dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<_> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for path in paths {
        if path.is_dir() {
            hash_dir(hash, &path);
        } else if let Ok(bytes) = std::fs::read(&path) {
            fnv1a(
                hash,
                path.file_name()
                    .map(|n| n.as_encoded_bytes())
                    .unwrap_or_default(),
            );
            fnv1a(hash, &bytes);
        }
    }
}

fn main() {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let version = std::process::Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|| "unknown rustc".into());
    println!("cargo:rustc-env=BUILDAT_RUSTC_VERSION={version}");

    let mut hash = 0xcbf2_9ce4_8422_2325_u64;
    // Where cargo runs the script for, not where the script was compiled:
    // cargo may reuse one build-script binary for another checkout.
    let root = std::env::var_os("CARGO_MANIFEST_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf());
    hash_dir(&mut hash, &root.join("src"));
    if let Ok(bytes) = std::fs::read(root.join("Cargo.toml")) {
        fnv1a(&mut hash, &bytes);
    }
    println!("cargo:rustc-env=BUILDAT_INTERFACE_SOURCE_HASH={hash:016x}");
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=Cargo.toml");
}
