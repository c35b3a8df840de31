//! The one rule for how the client speaks to a server, used alike by the
//! headless client, bots, the window and `--screenshot`: a password never
//! crosses a path where someone can read it.
//!
//! - An address that is not loopback speaks TLS, `HOST:PORT` as well as
//!   `tls://HOST:PORT`, and its key is pinned as SSH does (`tls.rs`); the
//!   login goes out only after the handshake and the pin check.
//! - Plaintext to an address that is not loopback needs
//!   `--insecure-plaintext`, which is refused together with a password.
//! - A loopback address speaks plaintext unless TLS is asked for
//!   (`tls://`, `--tls`); TLS to loopback pins nothing (a world made again
//!   on this machine must not turn into a refusal).
//! - There is no fallback: a TLS attempt is never retried in plaintext.
//!
//! Loopback is decided on the address the socket is connected to (after
//! resolving), not on the name typed. `BUILDAT_TEST_TREAT_AS_REMOTE=1`
//! makes every address count as not loopback, for tests that need a
//! "remote" server on 127.0.0.1; it can only make the client stricter.
//!
//! Owns: the decision (a pure function) and the flags' consistency. Does
//! not own: the handshake and pinning (`tls.rs`), connecting (`app.rs`).

use std::net::SocketAddr;

use thiserror::Error;

/// The environment variable that makes every address count as not
/// loopback (tests only).
pub const TREAT_AS_REMOTE_VAR: &str = "BUILDAT_TEST_TREAT_AS_REMOTE";

/// What the user asked for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Security {
    /// `tls://HOST:PORT` or `--tls`: TLS even on loopback.
    pub force_tls: bool,
    /// `--insecure-plaintext`: plaintext to an address that is not loopback.
    pub insecure_plaintext: bool,
    /// A password will be sent (`main:login`).
    pub has_password: bool,
}

/// How to speak to the server once connected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Plaintext,
    /// TLS; `pin`: check the server's key against the known-hosts file
    /// and record it there on the first connection.
    Tls {
        pin: bool,
    },
}

/// Why the flags cannot go together.
#[derive(Debug, Clone, Copy, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum SecurityError {
    #[error(
        "--insecure-plaintext with a password (--password-file or BUILDAT_PASSWORD): a password \
         never crosses the network in plaintext; leave out --insecure-plaintext (the client \
         speaks TLS to any address but loopback)"
    )]
    PasswordInPlaintext,
    #[error("--insecure-plaintext and --tls (or tls://HOST:PORT) contradict each other")]
    Contradiction,
}

impl Security {
    /// Checks the flags before connecting.
    pub fn check(&self) -> Result<(), SecurityError> {
        if self.insecure_plaintext && self.has_password {
            return Err(SecurityError::PasswordInPlaintext);
        }
        if self.insecure_plaintext && self.force_tls {
            return Err(SecurityError::Contradiction);
        }
        Ok(())
    }

    /// How to speak to a server whose address is loopback or not.
    pub fn decide(&self, loopback: bool) -> Result<Decision, SecurityError> {
        self.check()?;
        Ok(match (loopback, self.force_tls, self.insecure_plaintext) {
            (true, false, _) => Decision::Plaintext,
            (true, true, _) => Decision::Tls { pin: false },
            // `check` refused a password with it.
            (false, _, true) => Decision::Plaintext,
            (false, _, false) => Decision::Tls { pin: true },
        })
    }
}

pub use buildat_network_protocol::address::is_loopback;

/// Whether the server at `address` (where the socket is connected) counts
/// as loopback: it is, and [`TREAT_AS_REMOTE_VAR`] is not `1`.
pub fn counts_as_loopback(address: SocketAddr) -> bool {
    let treat_as_remote = std::env::var(TREAT_AS_REMOTE_VAR).is_ok_and(|v| v == "1");
    !treat_as_remote && is_loopback(address.ip())
}

/// `tls://HOST:PORT` → (`HOST:PORT`, true); anything else as it is.
pub fn split_scheme(connect: &str) -> (&str, bool) {
    match connect.strip_prefix("tls://") {
        Some(address) => (address, true),
        None => (connect, false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn security(force_tls: bool, insecure_plaintext: bool, has_password: bool) -> Security {
        Security {
            force_tls,
            insecure_plaintext,
            has_password,
        }
    }

    #[test]
    fn a_remote_address_speaks_tls_and_pins_by_default() {
        for password in [false, true] {
            for force in [false, true] {
                assert_eq!(
                    security(force, false, password).decide(false),
                    Ok(Decision::Tls { pin: true }),
                    "force {force} password {password}"
                );
            }
        }
    }

    #[test]
    fn loopback_is_plaintext_unless_tls_is_asked_for_and_never_pinned() {
        for password in [false, true] {
            assert_eq!(
                security(false, false, password).decide(true),
                Ok(Decision::Plaintext)
            );
            assert_eq!(
                security(true, false, password).decide(true),
                Ok(Decision::Tls { pin: false })
            );
        }
    }

    #[test]
    fn plaintext_to_a_remote_address_needs_the_flag_and_no_password() {
        assert_eq!(
            security(false, true, false).decide(false),
            Ok(Decision::Plaintext)
        );
        for loopback in [false, true] {
            assert_eq!(
                security(false, true, true).decide(loopback),
                Err(SecurityError::PasswordInPlaintext)
            );
            assert_eq!(
                security(true, true, false).decide(loopback),
                Err(SecurityError::Contradiction)
            );
        }
        assert_eq!(
            security(false, true, true).check(),
            Err(SecurityError::PasswordInPlaintext)
        );
    }

    #[test]
    fn no_decision_sends_a_password_in_plaintext_off_loopback() {
        for bits in 0..8u8 {
            let s = security(bits & 1 != 0, bits & 2 != 0, bits & 4 != 0);
            if let Ok(Decision::Plaintext) = s.decide(false) {
                assert!(!s.has_password, "{s:?}");
            }
        }
    }

    #[test]
    fn the_scheme_is_split_off() {
        assert_eq!(split_scheme("tls://a.org:1"), ("a.org:1", true));
        assert_eq!(split_scheme("a.org:1"), ("a.org:1", false));
    }
}
