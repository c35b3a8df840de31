//! Who may see the web page: the `Host` a request names, and the token or
//! cookie it carries.
//!
//! Owns: the names the page answers to ([`AllowedHosts`]: `localhost`,
//! any IP address, the name in `web.listen`, and `web.hostnames`; a
//! request naming anything else, or nothing, is refused with 421, so a
//! stranger's web page that rebinds its own name to this address (DNS
//! rebinding) reads nothing), the view key (what the cookie `/login` sets
//! holds: a hash of the token, so the cookie opens the read-only pages and
//! never an admin action, and changes with the token), reading the cookie,
//! and whether a client is on loopback (an IPv4-mapped IPv6 address as its
//! IPv4 form). Does not own: the token (`admin.rs`), the routes
//! (`http.rs`).
//!
//! Why any IP address is let through: a page can make a browser connect to
//! this server under the page's own origin only through a name it controls
//! resolving here; a `Host` that is an IP address is one the browser
//! connected to as itself, so the page reading the answer is this server's
//! own. Names are what rebinding takes over, and only names this server is
//! told of are answered.

use hyper::header::{COOKIE, HOST, HeaderMap};

/// The cookie `/login` sets.
pub const COOKIE_NAME: &str = "buildat_web";

/// `web.hostnames`: comma-separated names (a port after one is ignored).
pub fn parse_hostnames(setting: &str) -> Vec<String> {
    setting
        .split(',')
        .filter_map(host_name)
        .filter(|name| !name.is_empty())
        .collect()
}

/// The host part of a `Host` value or of `web.listen` (`NAME`,
/// `NAME:PORT`, `[V6]:PORT`, `V4:PORT`), lower case, without a final dot;
/// `None` if it is malformed.
pub fn host_name(authority: &str) -> Option<String> {
    let authority = authority.trim();
    let name = if let Some(rest) = authority.strip_prefix('[') {
        let (inside, after) = rest.split_once(']')?;
        if !(after.is_empty() || port_part(after)) {
            return None;
        }
        return inside
            .parse::<std::net::Ipv6Addr>()
            .ok()
            .map(|ip| format!("[{ip}]"));
    } else {
        match authority.rsplit_once(':') {
            Some((name, port)) if port_part(&format!(":{port}")) => name,
            Some(_) => return None,
            None => authority,
        }
    };
    let name = name.strip_suffix('.').unwrap_or(name).to_ascii_lowercase();
    let valid = name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.' || b == b'_');
    valid.then_some(name)
}

/// `:` and 1 to 5 digits.
fn port_part(text: &str) -> bool {
    text.strip_prefix(':').is_some_and(|digits| {
        !digits.is_empty() && digits.len() <= 5 && digits.bytes().all(|b| b.is_ascii_digit())
    })
}

/// Whether `name` (from [`host_name`]) is an IP address.
fn is_ip(name: &str) -> bool {
    name.parse::<std::net::Ipv4Addr>().is_ok()
        || name
            .strip_prefix('[')
            .and_then(|n| n.strip_suffix(']'))
            .is_some_and(|n| n.parse::<std::net::Ipv6Addr>().is_ok())
}

/// The names a request may name in its `Host`.
#[derive(Debug, Clone)]
pub struct AllowedHosts {
    names: Vec<String>,
}

/// Why a request's `Host` is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HostRefusal {
    #[error("the request names no host (HTTP/1.1 and a Host header are needed)")]
    Missing,
    #[error("this page does not answer to '{0}': the operator can add the name to web.hostnames")]
    Unknown(String),
}

impl AllowedHosts {
    /// Loopback's names, the name in `listen` (if it is one) and
    /// `configured`.
    pub fn new(listen: &str, configured: &[String]) -> Self {
        let mut names = vec!["localhost".to_string()];
        if let Some(name) = host_name(listen).filter(|n| !is_ip(n)) {
            names.push(name);
        }
        names.extend(configured.iter().cloned());
        Self { names }
    }

    /// Whether a request's `Host` (and the authority of an absolute URI,
    /// if it has one) names this server.
    pub fn check(&self, headers: &HeaderMap, uri: &hyper::Uri) -> Result<(), HostRefusal> {
        let host = headers
            .get(HOST)
            .and_then(|v| v.to_str().ok())
            .ok_or(HostRefusal::Missing)?;
        self.check_name(host)?;
        match uri.authority() {
            Some(authority) => self.check_name(authority.as_str()),
            None => Ok(()),
        }
    }

    pub fn check_name(&self, authority: &str) -> Result<(), HostRefusal> {
        let refused = || HostRefusal::Unknown(authority.chars().take(100).collect());
        let name = host_name(authority).ok_or_else(refused)?;
        if is_ip(&name) || self.names.contains(&name) {
            Ok(())
        } else {
            Err(refused())
        }
    }
}

pub use buildat_network_api::address::is_loopback;

/// What the view cookie holds for `token`: the hex SHA-256 of a label and
/// the token.
pub fn view_key(token: &str) -> String {
    let digest = ring::digest::digest(
        &ring::digest::SHA256,
        format!("buildat web view key\n{token}").as_bytes(),
    );
    digest.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

/// The value of cookie `name` in a request, if it has one.
pub fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|pair| {
            let (key, value) = pair.trim().split_once('=')?;
            (key == name).then_some(value.trim_matches('"'))
        })
}

/// The `Set-Cookie` value for the view key (`Secure` over HTTPS).
pub fn set_cookie(view_key: &str, secure: bool) -> String {
    format!(
        "{COOKIE_NAME}={view_key}; Path=/; HttpOnly; SameSite=Lax{}",
        if secure { "; Secure" } else { "" }
    )
}

/// Where `/login` may send the browser back to: a path on this server,
/// never another site.
pub fn local_path(next: &str) -> Option<&str> {
    let ok = next.starts_with('/')
        && !next.starts_with("//")
        && !next.contains('\\')
        && next.bytes().all(|b| b.is_ascii_graphic());
    ok.then_some(next)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts() -> AllowedHosts {
        AllowedHosts::new(
            "0.0.0.0:20080",
            &parse_hostnames("Map.Example.org, other:8080"),
        )
    }

    #[test]
    fn loopback_names_addresses_and_configured_names_pass() {
        let hosts = hosts();
        for good in [
            "localhost",
            "localhost:20080",
            "LOCALHOST.",
            "127.0.0.1",
            "127.0.0.1:20080",
            "[::1]",
            "[::1]:20080",
            "192.0.2.7:20080",
            "[fd00::2]:443",
            "map.example.org",
            "map.example.org:20080",
            "other",
        ] {
            assert_eq!(hosts.check_name(good), Ok(()), "{good}");
        }
    }

    #[test]
    fn other_names_and_garbage_are_refused() {
        let hosts = hosts();
        for bad in [
            "evil.example",
            "evil.example:20080",
            "localhost.evil.example",
            "map.example.org.evil",
            "127.0.0.1.nip.io",
            "",
            "localhost:port",
            "[::1",
            "[nothing]:1",
            "a b",
            "localhost:123456",
        ] {
            assert!(hosts.check_name(bad).is_err(), "{bad}");
        }
        let mut headers = HeaderMap::new();
        let uri: hyper::Uri = "/".parse().expect("uri");
        assert_eq!(hosts.check(&headers, &uri), Err(HostRefusal::Missing));
        headers.insert(HOST, "localhost".parse().expect("header"));
        assert_eq!(hosts.check(&headers, &uri), Ok(()));
        // An absolute URI naming another host is refused too.
        let absolute: hyper::Uri = "http://evil.example/api/players".parse().expect("uri");
        assert!(hosts.check(&headers, &absolute).is_err());
    }

    #[test]
    fn a_named_listen_address_is_a_name_the_page_answers_to() {
        let hosts = AllowedHosts::new("box.lan:20080", &[]);
        assert_eq!(hosts.check_name("box.lan:20080"), Ok(()));
        assert!(hosts.check_name("evil.example").is_err());
    }

    #[test]
    fn the_view_key_is_not_the_token_and_follows_it() {
        let key = view_key("abcdef0123456789");
        assert_eq!(key.len(), 64);
        assert!(!key.contains("abcdef0123456789"));
        assert_ne!(key, view_key("abcdef0123456780"));
        assert_eq!(key, view_key("abcdef0123456789"));
    }

    #[test]
    fn cookies_are_found_by_name() {
        let mut headers = HeaderMap::new();
        headers.insert(COOKIE, "a=1; buildat_web=xyz; b=2".parse().expect("header"));
        assert_eq!(cookie(&headers, COOKIE_NAME), Some("xyz"));
        assert_eq!(cookie(&headers, "buildat"), None);
    }

    #[test]
    fn login_sends_back_only_to_this_server() {
        assert_eq!(local_path("/map?x=1"), Some("/map?x=1"));
        assert_eq!(local_path("//evil.example/"), None);
        assert_eq!(local_path("https://evil.example/"), None);
        assert_eq!(local_path("/\\evil.example"), None);
    }
}
