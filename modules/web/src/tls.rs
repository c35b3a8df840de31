//! HTTPS for the web page when it listens off loopback.
//!
//! Owns: whether the page speaks TLS (off loopback, unless
//! `web.insecure_http=true`), which certificate it uses (`web.tls_cert`
//! and `web.tls_key`; else the game port's, `network.tls_cert` and
//! `network.tls_key`; else `<world>/tls/cert.pem` and `key.pem`, the
//! files the network module makes, made here the same way, a self-signed
//! certificate of a new ECDSA P-256 key, the key 0600 in a 0700 folder, if
//! the game port has not made them), and the server's rustls
//! configuration (TLS 1.2 and 1.3, ALPN `http/1.1`). Does not own: the
//! sockets (`http.rs`), the game port's TLS (the network module).

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::ServerConfig;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// How long to wait for the other of the two files when only one is there
/// (the network module writing them).
const PAIR_WAIT: Duration = Duration::from_secs(5);

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TlsError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Pem { path: PathBuf, message: String },
    #[error("{0} is there but {1} is not")]
    HalfPair(PathBuf, PathBuf),
    #[error("making a certificate: {0}")]
    Generate(#[from] rcgen::Error),
    #[error("the TLS configuration: {0}")]
    Rustls(#[from] rustls::Error),
}

/// Whether a page listening on `address` speaks TLS.
pub fn wanted(address: SocketAddr, insecure_http: bool) -> bool {
    !crate::access::is_loopback(address.ip()) && !insecure_http
}

/// The certificate and key files to use: `own` (the web's settings),
/// else `game` (the network's), both relative to `world`; else the world's
/// `tls/cert.pem` and `tls/key.pem`, made now if neither is there. Answers
/// the paths and whether they were made now.
pub fn certificate_files(
    world: &Path,
    own: Option<(&str, &str)>,
    game: Option<(&str, &str)>,
) -> Result<(PathBuf, PathBuf, bool), TlsError> {
    if let Some((cert, key)) = own.or(game) {
        return Ok((world.join(cert), world.join(key), false));
    }
    let dir = world.join("tls");
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    let started = Instant::now();
    loop {
        match (cert.exists(), key.exists()) {
            (true, true) => return Ok((cert, key, false)),
            (false, false) => break,
            (has_cert, _) if started.elapsed() >= PAIR_WAIT => {
                let (there, missing) = if has_cert { (cert, key) } else { (key, cert) };
                return Err(TlsError::HalfPair(there, missing));
            }
            _ => std::thread::sleep(Duration::from_millis(50)),
        }
    }
    make_dir(&dir)?;
    let pair = rcgen::KeyPair::generate()?;
    let mut params = rcgen::CertificateParams::new(vec!["buildat".to_string()])?;
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "buildat server");
    params.not_before = rcgen::date_time_ymd(2025, 1, 1);
    params.not_after = rcgen::date_time_ymd(4000, 1, 1);
    let certificate = params.self_signed(&pair)?;
    // The key first: a reader that sees the certificate finds its key.
    write_new(&key, pair.serialize_pem().as_bytes())?;
    write_new(&cert, certificate.pem().as_bytes())?;
    Ok((cert, key, true))
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> TlsError + '_ {
    move |source| TlsError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn make_dir(dir: &Path) -> Result<(), TlsError> {
    use std::os::unix::fs::DirBuilderExt;
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && dir.is_dir() => Ok(()),
        Err(e) => Err(io_error(dir)(e)),
    }
}

/// A new file at `path` (never one there already, never through a
/// symlink), readable by its owner only.
fn write_new(path: &Path, bytes: &[u8]) -> Result<(), TlsError> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(io_error(path))?;
    file.write_all(bytes).map_err(io_error(path))?;
    file.sync_all().map_err(io_error(path))
}

/// The page's rustls configuration from PEM files.
pub fn server_config(cert_path: &Path, key_path: &Path) -> Result<Arc<ServerConfig>, TlsError> {
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
    if chain.is_empty() {
        return Err(TlsError::Pem {
            path: cert_path.to_path_buf(),
            message: "no certificate in the file".into(),
        });
    }
    let key = PrivateKeyDer::from_pem_file(key_path).map_err(pem(key_path))?;
    let provider = rustls::crypto::ring::default_provider();
    let mut config = ServerConfig::builder_with_provider(Arc::new(provider))
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(chain, key)?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("buildat-web-tls-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("scratch");
        dir
    }

    #[test]
    fn off_loopback_is_tls_unless_the_operator_says_otherwise() {
        let at = |s: &str| s.parse::<SocketAddr>().expect("address");
        assert!(!wanted(at("127.0.0.1:1"), false));
        assert!(!wanted(at("[::1]:1"), false));
        assert!(wanted(at("0.0.0.0:1"), false));
        assert!(wanted(at("192.0.2.1:1"), false));
        assert!(!wanted(at("0.0.0.0:1"), true));
    }

    #[test]
    fn a_certificate_is_made_private_once_and_then_kept() {
        use std::os::unix::fs::PermissionsExt;
        let world = scratch("made");
        let (cert, key, made) = certificate_files(&world, None, None).expect("made");
        assert!(made);
        let mode = |p: &Path| std::fs::metadata(p).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode(&key), 0o600);
        assert_eq!(mode(&world.join("tls")), 0o700);
        server_config(&cert, &key).expect("a usable certificate");
        let (cert2, _, made) = certificate_files(&world, None, None).expect("kept");
        assert!(!made);
        assert_eq!(cert2, cert);
        // The operator's files win, the web's over the game port's.
        let (own, _, _) =
            certificate_files(&world, Some(("a.pem", "b.pem")), Some(("c.pem", "d.pem")))
                .expect("own");
        assert_eq!(own, world.join("a.pem"));
        let (game, _, _) = certificate_files(&world, None, Some(("c.pem", "d.pem"))).expect("game");
        assert_eq!(game, world.join("c.pem"));
        let _ = std::fs::remove_dir_all(&world);
    }

    #[test]
    fn half_a_pair_is_an_error_not_a_new_key() {
        let world = scratch("half");
        std::fs::create_dir_all(world.join("tls")).expect("dir");
        std::fs::write(world.join("tls/cert.pem"), "x").expect("write");
        let started = Instant::now();
        let error = certificate_files(&world, None, None).expect_err("half a pair");
        assert!(matches!(error, TlsError::HalfPair(..)), "{error}");
        assert!(started.elapsed() >= PAIR_WAIT);
        assert!(!world.join("tls/key.pem").exists());
        let _ = std::fs::remove_dir_all(&world);
    }
}
