//! The client's side of TLS on the game port (docs/protocol.md §1.1):
//! the handshake (rustls, TLS 1.3, ALPN `buildat/1`) over a connected
//! socket, and pinning the server's key as SSH does. The first connection
//! to a server keeps the SHA-256 of its public key in the known-hosts file
//! (`known_hosts.rs`) and says so; a later one with another key is refused
//! before anything is sent, naming the server, both fingerprints and how
//! to accept the new key (`--accept-new-key`, or deleting its line). A
//! loopback server's key is not pinned (`transport.rs` decides).
//!
//! Owns: the pinning verifier (the handshake's signature is still checked
//! with the certificate's key, by rustls' helpers; no certificate
//! authority is involved), reading and updating the known-hosts file (one
//! session of this process at a time), telling a server that answers in
//! plaintext from one that fails its handshake. Does not own: the
//! connection loop (`app.rs`).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use buildat_format::{PacketReader, payload::Packet};
use buildat_network_protocol::DisconnectPacket;
use buildat_network_protocol::tls::{ALPN, SPEAKS_PLAINTEXT, spki_fingerprint};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, ClientConnection, DigitallySignedStruct, SignatureScheme, StreamOwned};

use crate::known_hosts::{self, KnownHosts};

/// How the client speaks TLS.
#[derive(Debug, Clone)]
pub struct TlsOptions {
    /// The known-hosts file.
    pub known_hosts: PathBuf,
    /// Replace a pinned key that changed instead of refusing it.
    pub accept_new_key: bool,
}

/// What became of the server's key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pinned {
    /// Not pinned: a loopback server (`transport.rs`), its key neither
    /// checked nor recorded.
    Unpinned { fingerprint: String },
    /// The key pinned for this server.
    Known,
    /// A server not seen before: its key is pinned now.
    New { fingerprint: String },
    /// The key changed and `--accept-new-key` replaced it.
    Replaced { old: String, new: String },
}

/// Why the TLS connection was not made.
#[derive(Debug)]
pub enum TlsFailure {
    /// The key differs from the pinned one.
    KeyChanged {
        old: String,
        new: String,
    },
    /// The server answered in plaintext Buildat (its reason, if it gave one).
    NotTls(Option<String>),
    /// The server refused the connection before any TLS (a plaintext
    /// `core:disconnect` such as `server full`), with its reason.
    Refused(String),
    KnownHosts(String),
    Handshake(String),
}

/// One session of this process reads and writes the file at a time
/// (`--bots N` sessions pin the same server together).
static FILE_LOCK: Mutex<()> = Mutex::new(());

/// Pins by fingerprint; checks the handshake's signature with the key.
#[derive(Debug)]
struct PinningVerifier {
    /// The pinned key (`None`: accept and pin whatever comes).
    expected: Option<String>,
    seen: Mutex<Option<String>>,
    algorithms: rustls::crypto::WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for PinningVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let cert = webpki::EndEntityCert::try_from(end_entity)
            .map_err(|e| rustls::Error::General(format!("the server's certificate: {e}")))?;
        let fingerprint = spki_fingerprint(&cert.subject_public_key_info());
        let matches = self.expected.as_deref().is_none_or(|e| e == fingerprint);
        *self.seen.lock().unwrap_or_else(|e| e.into_inner()) = Some(fingerprint);
        if matches {
            Ok(ServerCertVerified::assertion())
        } else {
            Err(rustls::Error::General("the server's key changed".into()))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// Reads through to the socket, keeping the first bytes received (to tell
/// a plaintext server's answer from a TLS one).
struct Recording<'a> {
    stream: &'a mut TcpStream,
    seen: Vec<u8>,
}

impl Read for Recording<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let read = self.stream.read(buf)?;
        if self.seen.len() < 64 * 1024 {
            self.seen
                .extend_from_slice(buf.get(..read).unwrap_or_default());
        }
        Ok(read)
    }
}

impl Write for Recording<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.stream.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.stream.flush()
    }
}

/// The server name for the handshake (an IP address or a DNS name; the
/// server ignores it and the key is pinned, so nothing is checked with it).
fn server_name(address: &str) -> ServerName<'static> {
    let host = address
        .rsplit_once(':')
        .map_or(address, |(host, _)| host)
        .trim_start_matches('[')
        .trim_end_matches(']');
    ServerName::try_from(host.to_string())
        .unwrap_or_else(|_| ServerName::try_from("buildat").expect("a valid DNS name"))
}

fn read_known_hosts(path: &Path) -> Result<(String, KnownHosts), TlsFailure> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(error) => {
            return Err(TlsFailure::KnownHosts(format!(
                "cannot read {}: {error}",
                path.display()
            )));
        }
    };
    let known = KnownHosts::parse(&text)
        .map_err(|e| TlsFailure::KnownHosts(format!("{}: {e}", path.display())))?;
    Ok((text, known))
}

/// Writes `text` to `path` whole (a temporary file renamed over it).
fn write_known_hosts(path: &Path, text: &str) -> Result<(), TlsFailure> {
    let failed =
        |e: std::io::Error| TlsFailure::KnownHosts(format!("cannot write {}: {e}", path.display()));
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(failed)?;
    }
    let temporary = path.with_extension(format!("tmp-{}", std::process::id()));
    std::fs::write(&temporary, text).map_err(failed)?;
    std::fs::rename(&temporary, path).map_err(failed)
}

/// What a plaintext server said, if `seen` holds Buildat frames with a
/// `core:disconnect`.
fn plaintext_reason(seen: &[u8]) -> Option<String> {
    let mut reader = PacketReader::default();
    reader.push(seen);
    while let Ok(Some(packet)) = reader.try_next_packet() {
        if packet.name == DisconnectPacket::NAME {
            return DisconnectPacket::decode(&packet.data)
                .ok()
                .map(|d| d.reason);
        }
    }
    None
}

/// Runs the handshake on `stream` (connected to `address`) within
/// `timeout`; with `pin`, checks and pins the server's key (without, a
/// loopback server's, nothing is checked or recorded). Answers the TLS
/// stream and what became of the key.
pub fn connect(
    mut stream: TcpStream,
    address: &str,
    pin: Option<&TlsOptions>,
    timeout: Duration,
) -> Result<(StreamOwned<ClientConnection, TcpStream>, Pinned), TlsFailure> {
    let host = known_hosts::host_key(address);
    let pinned = match pin {
        Some(options) => {
            let _lock = FILE_LOCK.lock().unwrap_or_else(|e| e.into_inner());
            let (_, known) = read_known_hosts(&options.known_hosts)?;
            known.lookup(&host).map(str::to_string)
        }
        None => None,
    };
    let accept_new_key = pin.is_some_and(|options| options.accept_new_key);
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = Arc::new(PinningVerifier {
        expected: pinned.clone().filter(|_| !accept_new_key),
        seen: Mutex::new(None),
        algorithms: provider.signature_verification_algorithms,
    });
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| TlsFailure::Handshake(e.to_string()))?
        .dangerous()
        .with_custom_certificate_verifier(verifier.clone())
        .with_no_client_auth();
    config.alpn_protocols = vec![ALPN.to_vec()];
    let mut connection = ClientConnection::new(Arc::new(config), server_name(address))
        .map_err(|e| TlsFailure::Handshake(e.to_string()))?;
    let set_timeouts = |stream: &TcpStream, t: Option<Duration>| {
        stream
            .set_read_timeout(t)
            .and_then(|()| stream.set_write_timeout(t))
            .map_err(|e| TlsFailure::Handshake(e.to_string()))
    };
    set_timeouts(&stream, Some(timeout))?;
    let mut recording = Recording {
        stream: &mut stream,
        seen: Vec::new(),
    };
    while connection.is_handshaking() {
        if let Err(error) = connection.complete_io(&mut recording) {
            let seen = std::mem::take(&mut recording.seen);
            let changed = verifier
                .seen
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone()
                .zip(verifier.expected.clone())
                .filter(|(new, old)| new != old);
            return Err(if let Some((new, old)) = changed {
                TlsFailure::KeyChanged { old, new }
            } else if seen.first().is_some_and(|&b| !(20..=23).contains(&b)) {
                match plaintext_reason(&seen) {
                    // Said by a TLS port too, before the handshake.
                    Some(reason) if reason != SPEAKS_PLAINTEXT => TlsFailure::Refused(reason),
                    reason => TlsFailure::NotTls(reason),
                }
            } else if error.kind() == std::io::ErrorKind::UnexpectedEof && seen.is_empty() {
                TlsFailure::Handshake(
                    "the server closed the connection during the TLS handshake".into(),
                )
            } else {
                TlsFailure::Handshake(error.to_string())
            });
        }
    }
    set_timeouts(&stream, None)?;
    let fingerprint = verifier
        .seen
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
        .ok_or_else(|| TlsFailure::Handshake("the server showed no certificate".into()))?;
    let Some(options) = pin else {
        return Ok((
            StreamOwned::new(connection, stream),
            Pinned::Unpinned { fingerprint },
        ));
    };
    let outcome = match pinned {
        Some(old) if old == fingerprint => Pinned::Known,
        Some(old) => Pinned::Replaced {
            old,
            new: fingerprint.clone(),
        },
        None => Pinned::New {
            fingerprint: fingerprint.clone(),
        },
    };
    if outcome != Pinned::Known {
        let _lock = FILE_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        let (text, known) = read_known_hosts(&options.known_hosts)?;
        if known.lookup(&host) != Some(fingerprint.as_str()) {
            write_known_hosts(
                &options.known_hosts,
                &known_hosts::with_key(&text, &host, &fingerprint),
            )?;
        }
    }
    Ok((StreamOwned::new(connection, stream), outcome))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plaintext_goodbye_is_read_back() {
        let mut writer = buildat_format::PacketWriter::default();
        let goodbye = DisconnectPacket {
            reason: "speaks plaintext".into(),
        };
        writer
            .write(DisconnectPacket::NAME, &goodbye.encode().expect("encodes"))
            .expect("writes");
        assert_eq!(
            plaintext_reason(&writer.take()).as_deref(),
            Some("speaks plaintext")
        );
        assert_eq!(plaintext_reason(&[22, 3, 3, 0, 1, 2]), None);
    }

    #[test]
    fn server_names_come_from_the_address() {
        assert_eq!(
            server_name("127.0.0.1:20000"),
            ServerName::try_from("127.0.0.1").expect("an IP")
        );
        assert_eq!(
            server_name("[::1]:20000"),
            ServerName::try_from("::1").expect("an IP")
        );
        assert_eq!(
            server_name("Example.org:1"),
            ServerName::try_from("Example.org").expect("a name")
        );
    }
}
