//! The known-hosts file: the server keys this client has pinned, as SSH
//! does, one server a line:
//!
//! ```text
//! # comment
//! example.org:20000 SHA256:0f3c...  (64 hex digits)
//! ```
//!
//! Owns: parsing the file (a malformed line is an error naming its
//! number, never skipped), looking a server up, the text with one server's
//! key set (other lines and comments kept), the default path. Pure but for
//! [`default_path`]. Does not own: reading or writing the file, or
//! deciding what to do with a changed key (`tls.rs`).

use std::path::PathBuf;

use thiserror::Error;

#[derive(Debug, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum KnownHostsError {
    #[error("line {line}: expected `HOST:PORT SHA256:<64 hex digits>`, found {found:?}")]
    Malformed { line: usize, found: String },
}

/// One pinned server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// `HOST:PORT`, as the client was told to connect (lowercase).
    pub host: String,
    /// `SHA256:` and 64 lowercase hex digits.
    pub fingerprint: String,
}

/// The parsed file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KnownHosts {
    pub entries: Vec<Entry>,
}

/// Whether `text` is a fingerprint as written by this client.
pub fn is_fingerprint(text: &str) -> bool {
    text.strip_prefix("SHA256:").is_some_and(|hex| {
        hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// The name a server is pinned under: the address as given, lowercased,
/// without a `tls://` scheme.
pub fn host_key(address: &str) -> String {
    address
        .trim()
        .trim_start_matches("tls://")
        .to_ascii_lowercase()
}

impl KnownHosts {
    pub fn parse(text: &str) -> Result<Self, KnownHostsError> {
        let mut entries = Vec::new();
        for (index, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let mut words = line.split_whitespace();
            match (words.next(), words.next(), words.next()) {
                (Some(host), Some(fingerprint), None)
                    if host.contains(':') && is_fingerprint(fingerprint) =>
                {
                    entries.push(Entry {
                        host: host_key(host),
                        fingerprint: fingerprint.to_string(),
                    });
                }
                _ => {
                    return Err(KnownHostsError::Malformed {
                        line: index + 1,
                        found: line.chars().take(100).collect(),
                    });
                }
            }
        }
        Ok(Self { entries })
    }

    /// The key pinned for `host` (the last line for it wins).
    pub fn lookup(&self, host: &str) -> Option<&str> {
        let host = host_key(host);
        self.entries
            .iter()
            .rev()
            .find(|e| e.host == host)
            .map(|e| e.fingerprint.as_str())
    }
}

/// `text` (a known-hosts file) with `host` pinned to `fingerprint`: its
/// lines replaced by one, or one added; every other line kept.
pub fn with_key(text: &str, host: &str, fingerprint: &str) -> String {
    let host = host_key(host);
    let mut out = String::new();
    if text.trim().is_empty() {
        out.push_str("# buildat-client's known servers: HOST:PORT and the SHA-256 of its key\n");
    }
    for line in text.lines() {
        let first = line.split_whitespace().next().map(host_key);
        if first.as_deref() == Some(host.as_str()) && !line.trim_start().starts_with('#') {
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out.push_str(&format!("{host} {fingerprint}\n"));
    out
}

/// `$BUILDAT_KNOWN_HOSTS`, else `$XDG_CONFIG_HOME/buildat/known_hosts`,
/// else `~/.config/buildat/known_hosts`.
pub fn default_path() -> Option<PathBuf> {
    let set = |name| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(path) = set("BUILDAT_KNOWN_HOSTS") {
        return Some(PathBuf::from(path));
    }
    let config = set("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| set("HOME").map(|home| PathBuf::from(home).join(".config")))?;
    Some(config.join("buildat").join("known_hosts"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "SHA256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
    const B: &str = "SHA256:0000000000000000000000000000000000000000000000000000000000000001";

    #[test]
    fn lines_comments_and_blanks_parse() {
        let text = format!("# mine\n\nExample.org:20000 {A}\n  127.0.0.1:1 {B}  \n");
        let known = KnownHosts::parse(&text).expect("parses");
        assert_eq!(known.entries.len(), 2);
        assert_eq!(known.lookup("example.org:20000"), Some(A));
        assert_eq!(known.lookup("tls://EXAMPLE.org:20000"), Some(A));
        assert_eq!(known.lookup("127.0.0.1:1"), Some(B));
        assert_eq!(known.lookup("127.0.0.1:2"), None);
    }

    #[test]
    fn a_malformed_line_is_an_error_naming_it() {
        for bad in [
            "host:1",
            "host:1 SHA256:abc",
            &format!("host {A}"),
            &format!("host:1 {A} extra"),
            &format!("host:1 {}", A.to_uppercase()),
        ] {
            let text = format!("# ok\n{bad}\n");
            assert!(
                matches!(
                    KnownHosts::parse(&text),
                    Err(KnownHostsError::Malformed { line: 2, .. })
                ),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn setting_a_key_replaces_the_old_line_and_keeps_the_rest() {
        let text = format!("# mine\nother:1 {B}\nhost:1 {A}\n");
        let updated = with_key(&text, "HOST:1", B);
        assert_eq!(updated, format!("# mine\nother:1 {B}\nhost:1 {B}\n"));
        let known = KnownHosts::parse(&updated).expect("parses");
        assert_eq!(known.lookup("host:1"), Some(B));
        let fresh = with_key("", "new:2", A);
        assert!(fresh.starts_with('#'));
        assert_eq!(
            KnownHosts::parse(&fresh).expect("parses").lookup("new:2"),
            Some(A)
        );
    }
}
