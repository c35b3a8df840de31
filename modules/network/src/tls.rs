//! TLS on the game port: the server's certificate (made on first start in
//! the world folder, or the operator's), the handshake (rustls, TLS 1.3
//! only, ALPN `buildat/1`, no session tickets), and after it the record
//! layer of the session ([`Session`], with `ring`'s AEADs).
//!
//! Why a record layer of our own: once the handshake is done the session's
//! traffic keys and sequence numbers are taken out of rustls
//! (`dangerous_extract_secrets`, as for kernel TLS) and the records are
//! sealed and opened here. A [`Session`] is then plain data (keys, ivs,
//! sequence numbers, half-read records, sealed bytes not written), so it
//! crosses `reload network` in the peer's state with its socket, and a
//! player connected over TLS sees no disconnect, as over plaintext.
//!
//! Owns: the certificate and key files (`<world>/tls/cert.pem`,
//! `<world>/tls/key.pem` with mode 0600, unless `network.tls_cert` and
//! `network.tls_key` name others), the server's rustls configuration, the
//! handshake of one connection, sealing and opening records, telling a
//! plaintext client on a TLS port (and, in `peer.rs`, a TLS client on a
//! plaintext port) why it is refused; a loopback peer speaking plaintext
//! on a TLS port is served plaintext instead (nothing it says crosses a
//! network). Does not own: the socket's life, the
//! peer table, framing (`peer.rs`, `lib.rs`).
//!
//! Limits: a session whose client sends a TLS 1.3 `KeyUpdate` (rustls does
//! so only near an AEAD's confidentiality limit: never in practice with
//! ChaCha20-Poly1305, which the server prefers) is closed with the reason
//! said; so is one that would seal more records than AES-GCM's limit.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub(crate) use buildat_network_api::tls::{ALPN, SPEAKS_PLAINTEXT, SPEAKS_TLS, spki_fingerprint};
use ring::aead::{self, Aad, LessSafeKey, Nonce, UnboundKey};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{ConnectionTrafficSecrets, ServerConfig, ServerConnection};
use serde::{Deserialize, Serialize};
use thiserror::Error;
use tokio::net::TcpStream;

/// Plaintext bytes in one record (RFC 8446 §5.1).
const MAX_PLAINTEXT: usize = 16 * 1024;
/// Ciphertext bytes one record may carry (§5.2: plaintext, content type,
/// padding and tag stay within 2^14 + 256).
const MAX_CIPHERTEXT: usize = MAX_PLAINTEXT + 256;
const HEADER_LEN: usize = 5;
const TAG_LEN: usize = 16;

const CHANGE_CIPHER_SPEC: u8 = 20;
const ALERT: u8 = 21;
const HANDSHAKE: u8 = 22;
const APPLICATION_DATA: u8 = 23;

/// Records AES-GCM may seal with one key (RFC 8446 §5.5: 2^24.5 full
/// records; kept under 2^24). ChaCha20-Poly1305 has no practical limit.
const AES_GCM_RECORD_LIMIT: u64 = 1 << 24;

#[derive(Debug, Error)]
#[non_exhaustive]
pub enum TlsError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Pem { path: PathBuf, message: String },
    #[error("making a certificate: {0}")]
    Generate(#[from] rcgen::Error),
    #[error("the TLS configuration: {0}")]
    Rustls(#[from] rustls::Error),
    #[error("{0}")]
    Setting(String),
}

/// The server's TLS configuration and what the log says about it.
pub(crate) struct Identity {
    pub config: Arc<ServerConfig>,
    /// `SHA256:` and the hex SHA-256 of the certificate's public key (what
    /// clients pin).
    pub fingerprint: String,
    pub cert_path: PathBuf,
}

/// Whether the game port speaks TLS, from `network.tls`: `on`, `off`, or
/// `auto` (TLS unless the port is on a loopback address).
pub(crate) fn wanted(setting: &str, loopback: bool) -> Result<bool, TlsError> {
    match setting {
        "on" | "true" => Ok(true),
        "off" | "false" => Ok(false),
        "auto" => Ok(!loopback),
        other => Err(TlsError::Setting(format!(
            "network.tls is on, off or auto, not {other:?}"
        ))),
    }
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> TlsError + '_ {
    move |source| TlsError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Writes `bytes` to a new file at `path`, readable by its owner only when
/// `private`.
fn write_new(path: &Path, bytes: &[u8], private: bool) -> Result<(), TlsError> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    if private {
        options.mode(0o600);
    }
    let mut file = options.open(path).map_err(io_error(path))?;
    file.write_all(bytes).map_err(io_error(path))?;
    file.sync_all().map_err(io_error(path))
}

/// The certificate and key to use: the operator's (`cert`, `key`, relative
/// to the world folder), or `<world>/tls/cert.pem` and `key.pem`, made now
/// (a self-signed certificate of a new ECDSA P-256 key) if they are not
/// there yet. Answers the paths and whether they were made now.
pub(crate) fn certificate_files(
    world: &Path,
    cert: Option<&str>,
    key: Option<&str>,
) -> Result<(PathBuf, PathBuf, bool), TlsError> {
    match (cert, key) {
        (Some(cert), Some(key)) => return Ok((world.join(cert), world.join(key), false)),
        (None, None) => {}
        _ => {
            return Err(TlsError::Setting(
                "network.tls_cert and network.tls_key are set together".into(),
            ));
        }
    }
    let dir = world.join("tls");
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    if cert.exists() || key.exists() {
        return Ok((cert, key, false));
    }
    std::fs::create_dir_all(&dir).map_err(io_error(&dir))?;
    let pair = rcgen::KeyPair::generate()?;
    let mut params = rcgen::CertificateParams::new(vec!["buildat".to_string()])?;
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "buildat server");
    // Clients pin the key, not the certificate: its dates only have to
    // satisfy tools that look at them.
    params.not_before = rcgen::date_time_ymd(2025, 1, 1);
    params.not_after = rcgen::date_time_ymd(4000, 1, 1);
    let certificate = params.self_signed(&pair)?;
    write_new(&key, pair.serialize_pem().as_bytes(), true)?;
    write_new(&cert, certificate.pem().as_bytes(), false)?;
    Ok((cert, key, true))
}

/// The fingerprint of the public key in a DER certificate.
pub(crate) fn cert_fingerprint(cert: &CertificateDer<'_>) -> Result<String, String> {
    let parsed = webpki::EndEntityCert::try_from(cert).map_err(|e| e.to_string())?;
    Ok(spki_fingerprint(&parsed.subject_public_key_info()))
}

/// The server's rustls configuration: TLS 1.3 only, ChaCha20-Poly1305
/// first (the server's order wins), ALPN `buildat/1`, no session tickets,
/// secrets extractable (for [`Session`]).
pub(crate) fn identity(cert_path: &Path, key_path: &Path) -> Result<Identity, TlsError> {
    let pem = |path: &Path| {
        let path = path.to_path_buf();
        move |e: rustls::pki_types::pem::Error| TlsError::Pem {
            path,
            message: e.to_string(),
        }
    };
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert_path)
        .map_err(pem(cert_path))?
        .collect::<Result<_, _>>()
        .map_err(pem(cert_path))?;
    let Some(leaf) = chain.first() else {
        return Err(TlsError::Pem {
            path: cert_path.to_path_buf(),
            message: "no certificate in the file".into(),
        });
    };
    let fingerprint = cert_fingerprint(leaf).map_err(|message| TlsError::Pem {
        path: cert_path.to_path_buf(),
        message,
    })?;
    let key = PrivateKeyDer::from_pem_file(key_path).map_err(pem(key_path))?;
    let mut provider = rustls::crypto::ring::default_provider();
    provider.cipher_suites = vec![
        rustls::crypto::ring::cipher_suite::TLS13_CHACHA20_POLY1305_SHA256,
        rustls::crypto::ring::cipher_suite::TLS13_AES_128_GCM_SHA256,
        rustls::crypto::ring::cipher_suite::TLS13_AES_256_GCM_SHA384,
    ];
    let mut config = ServerConfig::builder_with_provider(Arc::new(provider))
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .with_no_client_auth()
        .with_single_cert(chain, key)?;
    config.alpn_protocols = vec![ALPN.to_vec()];
    config.ignore_client_order = true;
    config.send_tls13_tickets = 0;
    config.enable_secret_extraction = true;
    Ok(Identity {
        config: Arc::new(config),
        fingerprint,
        cert_path: cert_path.to_path_buf(),
    })
}

/// Which AEAD a session uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
enum Suite {
    Aes128Gcm,
    Aes256Gcm,
    Chacha20Poly1305,
}

impl Suite {
    fn algorithm(self) -> &'static aead::Algorithm {
        match self {
            Self::Aes128Gcm => &aead::AES_128_GCM,
            Self::Aes256Gcm => &aead::AES_256_GCM,
            Self::Chacha20Poly1305 => &aead::CHACHA20_POLY1305,
        }
    }

    fn record_limit(self) -> u64 {
        match self {
            Self::Chacha20Poly1305 => u64::MAX,
            Self::Aes128Gcm | Self::Aes256Gcm => AES_GCM_RECORD_LIMIT,
        }
    }
}

/// One direction's key, iv and sequence number.
#[derive(Serialize, Deserialize)]
struct Direction {
    key: Vec<u8>,
    iv: [u8; 12],
    seq: u64,
    #[serde(skip)]
    bound: Option<LessSafeKey>,
}

impl std::fmt::Debug for Direction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Direction").field("seq", &self.seq).finish()
    }
}

impl Direction {
    fn new(seq: u64, secrets: ConnectionTrafficSecrets) -> Result<(Suite, Self), String> {
        let (suite, key, iv) = match secrets {
            ConnectionTrafficSecrets::Aes128Gcm { key, iv } => (Suite::Aes128Gcm, key, iv),
            ConnectionTrafficSecrets::Aes256Gcm { key, iv } => (Suite::Aes256Gcm, key, iv),
            ConnectionTrafficSecrets::Chacha20Poly1305 { key, iv } => {
                (Suite::Chacha20Poly1305, key, iv)
            }
            _ => return Err("an unknown cipher suite was negotiated".into()),
        };
        let iv: [u8; 12] = iv
            .as_ref()
            .try_into()
            .map_err(|_| "the negotiated iv is not 12 bytes".to_string())?;
        Ok((
            suite,
            Self {
                key: key.as_ref().to_vec(),
                iv,
                seq,
                bound: None,
            },
        ))
    }

    /// This record's nonce (RFC 8446 §5.3) and the key, bound on first use.
    fn next(&mut self, suite: Suite) -> Result<(&LessSafeKey, Nonce), String> {
        if self.seq >= suite.record_limit() {
            return Err("the TLS session used its key for as many records as it may".into());
        }
        let mut nonce = self.iv;
        for (byte, seq) in nonce.iter_mut().skip(4).zip(self.seq.to_be_bytes()) {
            *byte ^= seq;
        }
        self.seq += 1;
        if self.bound.is_none() {
            let unbound = UnboundKey::new(suite.algorithm(), &self.key)
                .map_err(|_| "the negotiated key does not fit its cipher".to_string())?;
            self.bound = Some(LessSafeKey::new(unbound));
        }
        let key = self.bound.as_ref().ok_or_else(|| "no key".to_string())?;
        Ok((key, Nonce::assume_unique_for_key(nonce)))
    }
}

/// An established TLS 1.3 session's record layer: plain data, so it
/// crosses a reload with the peer's state.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Session {
    suite: Suite,
    rx: Direction,
    tx: Direction,
    /// Received bytes not yet a whole record.
    raw_in: Vec<u8>,
    /// Sealed records not yet written to the socket, and how much of them was.
    sealed: Vec<u8>,
    sent: usize,
}

/// What opening received bytes gave.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Opened {
    /// Application data was appended (possibly none yet).
    Data,
    /// The client closed the session (`close_notify` or another alert).
    Closed(String),
}

impl Session {
    fn from_connection(connection: ServerConnection, raw_in: Vec<u8>) -> Result<Self, String> {
        #[allow(deprecated)]
        let secrets = connection
            .dangerous_extract_secrets()
            .map_err(|e| format!("taking the session's keys: {e}"))?;
        let (suite, tx) = Direction::new(secrets.tx.0, secrets.tx.1)?;
        let (rx_suite, rx) = Direction::new(secrets.rx.0, secrets.rx.1)?;
        if rx_suite != suite {
            return Err("the two directions use different ciphers".into());
        }
        Ok(Self {
            suite,
            rx,
            tx,
            raw_in,
            sealed: Vec::new(),
            sent: 0,
        })
    }

    /// Received bytes not yet opened (a partial record).
    pub fn buffered_len(&self) -> usize {
        self.raw_in.len()
    }

    /// Sealed bytes not yet written.
    pub fn unsent(&self) -> &[u8] {
        self.sealed.get(self.sent..).unwrap_or_default()
    }

    /// `count` sealed bytes were written.
    pub fn wrote(&mut self, count: usize) {
        self.sent += count;
        if self.sent >= self.sealed.len() {
            self.sealed.clear();
            self.sent = 0;
            if self.sealed.capacity() > 256 * 1024 {
                self.sealed.shrink_to(16 * 1024);
            }
        } else if self.sent > 1024 * 1024 {
            self.sealed.drain(..self.sent);
            self.sent = 0;
        }
    }

    /// Seals `plain` into application-data records after what is unsent.
    pub fn seal(&mut self, plain: &[u8]) -> Result<(), String> {
        for chunk in plain.chunks(MAX_PLAINTEXT) {
            self.seal_record(APPLICATION_DATA, chunk)?;
        }
        Ok(())
    }

    /// Seals a `close_notify` alert: the session ends here, cleanly.
    pub fn seal_close_notify(&mut self) -> Result<(), String> {
        self.seal_record(ALERT, &[1, 0])
    }

    fn seal_record(&mut self, kind: u8, chunk: &[u8]) -> Result<(), String> {
        {
            let start = self.sealed.len();
            let length = chunk.len() + 1 + TAG_LEN;
            let header = [
                APPLICATION_DATA,
                3,
                3,
                (length >> 8) as u8,
                (length & 0xff) as u8,
            ];
            self.sealed.extend_from_slice(&header);
            self.sealed.extend_from_slice(chunk);
            self.sealed.push(kind);
            let (key, nonce) = self.tx.next(self.suite)?;
            let body = self
                .sealed
                .get_mut(start + HEADER_LEN..)
                .unwrap_or_default();
            let tag = key
                .seal_in_place_separate_tag(nonce, Aad::from(header), body)
                .map_err(|_| "sealing a record failed".to_string())?;
            self.sealed.extend_from_slice(tag.as_ref());
        }
        Ok(())
    }

    /// Opens every whole record of `input` (after what was left over),
    /// appending application data to `plain`. An error is a reason to
    /// close the connection.
    pub fn open(&mut self, input: &[u8], plain: &mut Vec<u8>) -> Result<Opened, String> {
        self.raw_in.extend_from_slice(input);
        let mut at = 0;
        let result = loop {
            let Some(header) = self.raw_in.get(at..at + HEADER_LEN) else {
                break Ok(Opened::Data);
            };
            let kind = header[0];
            let length = usize::from(u16::from_be_bytes([header[3], header[4]]));
            if length > MAX_CIPHERTEXT {
                break Err(format!(
                    "a TLS record of {length} bytes (at most {MAX_CIPHERTEXT})"
                ));
            }
            let header: [u8; HEADER_LEN] = [header[0], header[1], header[2], header[3], header[4]];
            let end = at + HEADER_LEN + length;
            if self.raw_in.len() < end {
                break Ok(Opened::Data);
            }
            let record = at + HEADER_LEN..end;
            at = end;
            match kind {
                // RFC 8446 §5: a ChangeCipherSpec is dropped only before the
                // peer's Finished (rustls does, in `handshake`); after it,
                // it is an unexpected_message.
                CHANGE_CIPHER_SPEC => {
                    break Err(
                        "unexpected_message: a TLS ChangeCipherSpec record after the handshake"
                            .into(),
                    );
                }
                APPLICATION_DATA => {}
                other => break Err(format!("an unprotected TLS record of type {other}")),
            }
            let (key, nonce) = match self.rx.next(self.suite) {
                Ok(next) => next,
                Err(error) => break Err(error),
            };
            let Some(body) = self.raw_in.get_mut(record) else {
                break Err("a TLS record out of bounds".into());
            };
            let Ok(opened) = key.open_in_place(nonce, Aad::from(header), body) else {
                break Err("a TLS record that does not authenticate".into());
            };
            // The inner content type is the last byte that is not padding.
            let Some(end) = opened.iter().rposition(|&b| b != 0) else {
                break Err("a TLS record with no content type".into());
            };
            let (content, kind) = opened.split_at(end);
            let kind = kind.first().copied().unwrap_or_default();
            match kind {
                APPLICATION_DATA => plain.extend_from_slice(content),
                ALERT => {
                    break Ok(Opened::Closed(match content {
                        [_, 0] => "the client closed the TLS session".into(),
                        [_, code] => format!("the client sent TLS alert {code}"),
                        _ => "the client sent a malformed TLS alert".into(),
                    }));
                }
                HANDSHAKE => {
                    break Err(
                        "the client sent a TLS handshake message (a key update?) after the \
                         handshake, which this server does not follow"
                            .into(),
                    );
                }
                other => break Err(format!("a TLS record of inner type {other}")),
            }
        };
        self.raw_in.drain(..at);
        result
    }
}

/// How long a connection to a TLS port may stay silent before it is told
/// the port speaks TLS (a TLS client sends its ClientHello at once; a
/// plaintext one may wait for the server to speak first).
const FIRST_BYTES: Duration = Duration::from_secs(3);
/// The same for a loopback peer, which is then served plaintext: a guest's
/// plaintext client says nothing until the server does.
const LOOPBACK_FIRST_BYTES: Duration = Duration::from_secs(1);

/// Why a connection to a TLS port did not become a session.
#[derive(Debug)]
pub(crate) enum HandshakeFailure {
    /// It spoke plaintext Buildat (or anything but TLS): told so.
    NotTls,
    Failed(String),
}

/// What a connection to a TLS port became.
#[derive(Debug)]
pub(crate) enum Opening {
    /// A TLS session.
    Tls(Box<Session>),
    /// A loopback peer that speaks plaintext (its first bytes are not a TLS
    /// record, or it said nothing for [`LOOPBACK_FIRST_BYTES`]): served
    /// plaintext, starting with these bytes.
    Plaintext(Vec<u8>),
}

/// Whether `first` bytes start a TLS record (a ClientHello is a handshake
/// record of version 3.x).
pub(crate) fn looks_like_tls(first: &[u8]) -> bool {
    matches!(first, [HANDSHAKE, 3, ..] | [HANDSHAKE])
}

/// Runs the server side of the handshake on `stream` until `deadline`,
/// `raw` being what was already read from it (after a PROXY protocol
/// header); answers the session, its record layer taking over. With
/// `plaintext_ok` (a loopback peer), a peer whose first bytes are not a
/// TLS record, or that says nothing for a moment, is served plaintext.
pub(crate) async fn handshake(
    stream: &TcpStream,
    config: Arc<ServerConfig>,
    deadline: Instant,
    mut raw: Vec<u8>,
    plaintext_ok: bool,
) -> Result<Opening, HandshakeFailure> {
    let failed = HandshakeFailure::Failed;
    let mut connection =
        ServerConnection::new(config).map_err(|e| failed(format!("starting TLS: {e}")))?;
    let mut out: Vec<u8> = Vec::new();
    let mut buffer = [0u8; 4096];
    let mut fed = false;
    let first_bytes = Instant::now()
        + if plaintext_ok {
            LOOPBACK_FIRST_BYTES
        } else {
            FIRST_BYTES
        };
    loop {
        // Whole records are handed to rustls one at a time, so none is
        // half inside it when the handshake ends and the keys are taken.
        while connection.is_handshaking() {
            // TLS 1.3 hides the rest of the handshake in application-data records.
            if raw
                .first()
                .is_some_and(|b| !(CHANGE_CIPHER_SPEC..=APPLICATION_DATA).contains(b))
            {
                if !fed && plaintext_ok {
                    return Ok(Opening::Plaintext(raw));
                }
                return Err(if !fed {
                    HandshakeFailure::NotTls
                } else {
                    failed("a record that is not part of a TLS handshake".into())
                });
            }
            let Some(length) = raw
                .get(3..HEADER_LEN)
                .map(|l| HEADER_LEN + usize::from(u16::from_be_bytes([l[0], l[1]])))
            else {
                break;
            };
            if length > HEADER_LEN + MAX_CIPHERTEXT {
                return Err(failed(format!("a TLS record of {length} bytes")));
            }
            let Some(mut record) = raw.get(..length) else {
                break;
            };
            while !record.is_empty() {
                connection
                    .read_tls(&mut record)
                    .map_err(|e| failed(format!("reading the handshake: {e}")))?;
            }
            raw.drain(..length);
            fed = true;
            if let Err(error) = connection.process_new_packets() {
                // Tell the client why, if rustls has an alert for it.
                let _ = connection.write_tls(&mut out);
                let _ = stream.try_write(&out);
                return Err(failed(format!("TLS handshake: {error}")));
            }
        }
        while connection.wants_write() {
            connection
                .write_tls(&mut out)
                .map_err(|e| failed(format!("writing the handshake: {e}")))?;
        }
        while !out.is_empty() {
            let wait = deadline.saturating_duration_since(Instant::now());
            match tokio::time::timeout(wait, stream.writable()).await {
                Err(_) => return Err(failed("the TLS handshake took too long".into())),
                Ok(Err(error)) => return Err(failed(format!("write error: {error}"))),
                Ok(Ok(())) => {}
            }
            match stream.try_write(&out) {
                Ok(count) => {
                    out.drain(..count);
                }
                Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(error) => return Err(failed(format!("write error: {error}"))),
            }
        }
        if !connection.is_handshaking() {
            if connection.alpn_protocol().is_some_and(|p| p != ALPN) {
                return Err(failed("the client asked for another protocol".into()));
            }
            return Session::from_connection(connection, raw)
                .map(|session| Opening::Tls(Box::new(session)))
                .map_err(failed);
        }
        // A TLS client speaks first, at once; a silent one is most likely
        // a plaintext client waiting for the server: told so soon.
        let silent = !fed && raw.is_empty();
        let until = if silent {
            deadline.min(first_bytes)
        } else {
            deadline
        };
        match tokio::time::timeout(
            until.saturating_duration_since(Instant::now()),
            stream.readable(),
        )
        .await
        {
            Err(_) if silent && plaintext_ok => return Ok(Opening::Plaintext(Vec::new())),
            Err(_) if silent => return Err(HandshakeFailure::NotTls),
            Err(_) => return Err(failed("the TLS handshake took too long".into())),
            Ok(Err(error)) => return Err(failed(format!("read error: {error}"))),
            Ok(Ok(())) => {}
        }
        match stream.try_read(&mut buffer) {
            Ok(0) => return Err(failed("closed during the TLS handshake".into())),
            Ok(read) => raw.extend_from_slice(buffer.get(..read).unwrap_or_default()),
            Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(error) => return Err(failed(format!("read error: {error}"))),
        }
        if raw.len() > 4 * (HEADER_LEN + MAX_CIPHERTEXT) {
            return Err(failed("too much handshake data".into()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(suite: Suite) -> (Session, Session) {
        let key = vec![7u8; suite.algorithm().key_len()];
        let direction = |iv: u8| Direction {
            key: key.clone(),
            iv: [iv; 12],
            seq: 0,
            bound: None,
        };
        let session = |a, b| Session {
            suite,
            rx: direction(a),
            tx: direction(b),
            raw_in: Vec::new(),
            sealed: Vec::new(),
            sent: 0,
        };
        (session(1, 2), session(2, 1))
    }

    #[test]
    fn records_open_what_was_sealed_in_any_cut() {
        for suite in [Suite::Aes128Gcm, Suite::Aes256Gcm, Suite::Chacha20Poly1305] {
            let (mut a, mut b) = pair(suite);
            let message: Vec<u8> = (0..40_000u32).map(|i| (i * 7) as u8).collect();
            a.seal(&message).expect("seal");
            a.seal(b"tail").expect("seal");
            let wire = a.unsent().to_vec();
            assert_eq!(
                wire.len(),
                message.len() + 4 + 4 * (HEADER_LEN + 1 + TAG_LEN)
            );
            let mut plain = Vec::new();
            for piece in wire.chunks(1000) {
                assert_eq!(b.open(piece, &mut plain), Ok(Opened::Data));
            }
            assert_eq!(plain.len(), message.len() + 4);
            assert_eq!(&plain[..message.len()], &message[..]);
            assert_eq!(b.buffered_len(), 0);
        }
    }

    #[test]
    fn a_tampered_or_replayed_record_closes_the_session() {
        let (mut a, mut b) = pair(Suite::Chacha20Poly1305);
        a.seal(b"hello").expect("seal");
        let mut wire = a.unsent().to_vec();
        let mut plain = Vec::new();
        assert_eq!(b.open(&wire, &mut plain), Ok(Opened::Data));
        assert!(b.open(&wire, &mut plain).is_err(), "replayed");
        let (mut a, mut b) = pair(Suite::Chacha20Poly1305);
        a.seal(b"hello").expect("seal");
        wire = a.unsent().to_vec();
        wire[7] ^= 1;
        assert!(b.open(&wire, &mut plain).is_err(), "tampered");
    }

    #[test]
    fn a_change_cipher_spec_after_the_handshake_closes_the_session() {
        let (mut a, mut b) = pair(Suite::Aes128Gcm);
        a.seal(b"before").expect("seal");
        let mut wire = a.unsent().to_vec();
        // The middlebox-compatibility record (RFC 8446 §5, D.4): type 20,
        // legacy version 3.3, one byte of value 1.
        wire.extend_from_slice(&[CHANGE_CIPHER_SPEC, 3, 3, 0, 1, 1]);
        a.wrote(a.unsent().len());
        a.seal(b"after").expect("seal");
        wire.extend_from_slice(a.unsent());
        let mut plain = Vec::new();
        let refused = b.open(&wire, &mut plain).expect_err("refused");
        assert!(
            refused.contains("unexpected_message") && refused.contains("ChangeCipherSpec"),
            "{refused}"
        );
        assert_eq!(plain, b"before", "nothing after it is opened");
    }

    #[test]
    fn a_session_survives_serialisation_mid_record() {
        let (mut a, mut b) = pair(Suite::Aes128Gcm);
        a.seal(b"first").expect("seal");
        a.seal(b"second").expect("seal");
        let wire = a.unsent().to_vec();
        let mut plain = Vec::new();
        b.open(&wire[..30], &mut plain).expect("open");
        let bytes = buildat_interface::encode(&b).expect("encode");
        let mut b: Session = buildat_interface::decode(&bytes).expect("decode");
        b.open(&wire[30..], &mut plain).expect("open");
        assert_eq!(plain, b"firstsecond");
    }

    #[test]
    fn tls_is_told_from_plaintext() {
        assert!(looks_like_tls(&[22, 3, 1, 0, 200]));
        assert!(!looks_like_tls(&[0, 0, 16, 0, 0, 0]));
        assert!(wanted("auto", false).expect("valid"));
        assert!(!wanted("auto", true).expect("valid"));
        assert!(wanted("maybe", true).is_err());
    }
}
