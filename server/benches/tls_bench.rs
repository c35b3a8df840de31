//! What TLS costs on the game port: the handshake and a bulk stream,
//! each against a raw baseline measured in the same run.
//!
//! - raw: tokio TCP on loopback, connect and a 256 MiB stream;
//! - raw TLS: the same over tokio-rustls, configured as the game port is
//!   (TLS 1.3, ChaCha20-Poly1305, an ECDSA P-256 key made by rcgen);
//! - buildat: the real server (release `network` and `client_file`)
//!   sending a module's 1,000 client files (50 MiB) to a client that
//!   verifies every hash, with `network.tls=off` and `network.tls=on`, and
//!   the time from connecting to a TLS session with it.
//!
//! Run: `cargo bench -p buildat-server --bench tls_bench`

mod support;

use std::collections::{HashMap, HashSet};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Instant;

use buildat_client_file_api::{
    AnnounceFile, ContentHash, FileContent, RequestFile, TellAfterAllFilesTransferred,
};
use buildat_format::Packet;
use buildat_format::{FrameDecoder, PacketWriter, Received, ReceiverPacketTypes};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use sha2::{Digest, Sha256};
use support::{Server, repo};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const FILES: usize = 1_000;
const TOTAL: usize = 50 << 20;
const STREAM: usize = 256 << 20;
const HANDSHAKES: usize = 200;

/// The bench trusts any key (pinning is the client's business, tested
/// elsewhere); signatures are still checked.
#[derive(Debug)]
struct AnyKey(rustls::crypto::WebPkiSupportedAlgorithms);

impl ServerCertVerifier for AnyKey {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_schemes()
    }
}

fn client_config() -> Arc<rustls::ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = Arc::new(AnyKey(provider.signature_verification_algorithms));
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .expect("TLS 1.3")
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    config.alpn_protocols = vec![buildat_network_api::tls::ALPN.to_vec()];
    Arc::new(config)
}

fn server_config() -> Arc<rustls::ServerConfig> {
    let pair = rcgen::KeyPair::generate().expect("a key");
    let cert = rcgen::CertificateParams::new(vec!["buildat".into()])
        .expect("params")
        .self_signed(&pair)
        .expect("a certificate");
    let mut provider = rustls::crypto::ring::default_provider();
    provider.cipher_suites =
        vec![rustls::crypto::ring::cipher_suite::TLS13_CHACHA20_POLY1305_SHA256];
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(provider))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .expect("TLS 1.3")
        .with_no_client_auth()
        .with_single_cert(
            vec![cert.der().clone()],
            PrivateKeyDer::try_from(pair.serialize_der()).expect("a key"),
        )
        .expect("a config");
    config.send_tls13_tickets = 0;
    Arc::new(config)
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// (median connect or handshake in ms, stream MiB/s) over tokio, raw or TLS.
fn tokio_case(tls: bool) -> (f64, f64) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let address = listener.local_addr().expect("address");
        let acceptor = tokio_rustls::TlsAcceptor::from(server_config());
        let connector = tokio_rustls::TlsConnector::from(client_config());
        // The server: each connection is handshaken, then sent `STREAM`
        // bytes if it asks (one byte 1) or closed (0).
        tokio::spawn(async move {
            let payload = Arc::new(vec![7u8; 1 << 20]);
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let _ = stream.set_nodelay(true);
                let acceptor = acceptor.clone();
                let payload = payload.clone();
                tokio::spawn(async move {
                    let mut stream: Box<dyn Stream> = if tls {
                        Box::new(acceptor.accept(stream).await.expect("accept"))
                    } else {
                        Box::new(stream)
                    };
                    let mut ask = [0u8; 1];
                    if stream.read_exact(&mut ask).await.is_err() || ask[0] == 0 {
                        return;
                    }
                    for _ in 0..STREAM / payload.len() {
                        stream.write_all(&payload).await.expect("send");
                    }
                    stream.shutdown().await.ok();
                });
            }
        });
        let mut handshakes = Vec::new();
        for _ in 0..HANDSHAKES {
            let started = Instant::now();
            let stream = tokio::net::TcpStream::connect(address)
                .await
                .expect("connect");
            let _ = stream.set_nodelay(true);
            let mut stream: Box<dyn Stream> = if tls {
                let name = ServerName::try_from("buildat").expect("a name");
                Box::new(connector.connect(name, stream).await.expect("handshake"))
            } else {
                Box::new(stream)
            };
            handshakes.push(started.elapsed().as_secs_f64() * 1e3);
            stream.write_all(&[0]).await.expect("bye");
        }
        let stream = tokio::net::TcpStream::connect(address)
            .await
            .expect("connect");
        let mut stream: Box<dyn Stream> = if tls {
            let name = ServerName::try_from("buildat").expect("a name");
            Box::new(connector.connect(name, stream).await.expect("handshake"))
        } else {
            Box::new(stream)
        };
        let started = Instant::now();
        stream.write_all(&[1]).await.expect("ask");
        let mut buffer = vec![0u8; 256 * 1024];
        let mut got = 0;
        while got < STREAM {
            let read = stream.read(&mut buffer).await.expect("read");
            assert!(read > 0, "closed early");
            got += read;
        }
        let seconds = started.elapsed().as_secs_f64();
        (median(handshakes), (STREAM >> 20) as f64 / seconds)
    })
}

trait Stream: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send {}
impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send> Stream for T {}

fn file_bytes(index: usize) -> Vec<u8> {
    let size = TOTAL / FILES;
    (0..size)
        .map(|i| ((i as u64 * 2_654_435_761 + index as u64 * 40_503) >> 7) as u8)
        .collect()
}

/// Connects to the real server, over TLS if `tls`; the connection and how
/// long it took to be ready to speak.
fn connect(address: &str, tls: bool) -> (Box<dyn ReadWrite>, f64) {
    let started = Instant::now();
    let stream = TcpStream::connect(address).expect("connect");
    stream.set_nodelay(true).expect("nodelay");
    if !tls {
        return (Box::new(stream), started.elapsed().as_secs_f64());
    }
    let name = ServerName::try_from("buildat").expect("a name");
    let mut connection = rustls::ClientConnection::new(client_config(), name).expect("client");
    let mut stream = stream;
    while connection.is_handshaking() {
        connection.complete_io(&mut stream).expect("handshake");
    }
    let seconds = started.elapsed().as_secs_f64();
    (
        Box::new(rustls::StreamOwned::new(connection, stream)),
        seconds,
    )
}

trait ReadWrite: Read + Write {}
impl<T: Read + Write> ReadWrite for T {}

/// One client session: every file fetched and verified; (seconds, bytes).
fn sync(address: &str, tls: bool) -> (f64, u64) {
    let started = Instant::now();
    let (mut stream, _) = connect(address, tls);
    let mut frames = FrameDecoder::default();
    let mut types = ReceiverPacketTypes::default();
    let mut writer = PacketWriter::default();
    let mut announced: HashMap<String, ContentHash> = HashMap::new();
    let mut partial: HashMap<String, (Sha256, u64)> = HashMap::new();
    let mut done: HashSet<ContentHash> = HashSet::new();
    let mut told = false;
    let mut received = 0u64;
    let mut buffer = vec![0u8; 256 * 1024];
    loop {
        while let Some((ty, data)) = frames.next_frame_ref().expect("frame") {
            let Received::Packet { name, data, .. } = types.receive(ty, data).expect("packet")
            else {
                continue;
            };
            match name {
                AnnounceFile::NAME => {
                    let announce = AnnounceFile::decode(data).expect("announce");
                    announced.insert(announce.name, announce.hash);
                }
                TellAfterAllFilesTransferred::NAME => {
                    told = true;
                    for (name, hash) in &announced {
                        let request = RequestFile {
                            name: name.clone(),
                            hash: *hash,
                        };
                        writer
                            .write(RequestFile::NAME, &request.encode().expect("encodes"))
                            .expect("encode");
                    }
                    stream.write_all(&writer.take()).expect("request");
                    stream.flush().expect("flush");
                }
                FileContent::NAME => {
                    let piece = FileContent::decode(data).expect("content");
                    received += piece.data.len() as u64;
                    let (hasher, length) = partial
                        .entry(piece.name.clone())
                        .or_insert_with(|| (Sha256::new(), 0));
                    hasher.update(&piece.data);
                    *length += piece.data.len() as u64;
                    if *length == piece.size {
                        let (hasher, _) = partial.remove(&piece.name).unwrap_or_default();
                        let hash: ContentHash = hasher.finalize().into();
                        assert_eq!(hash, piece.hash);
                        done.insert(hash);
                    }
                }
                _ => {}
            }
        }
        if told && announced.values().all(|h| done.contains(h)) {
            return (started.elapsed().as_secs_f64(), received);
        }
        let read = stream.read(&mut buffer).expect("read");
        assert!(read > 0, "server closed");
        frames.push(&buffer[..read]);
    }
}

fn buildat_server(files: &[Vec<u8>], tls: bool) -> Server {
    let setting = format!("network.tls={}", if tls { "on" } else { "off" });
    Server::start(
        &[
            ("__loader", repo().join("modules/__loader")),
            ("network", repo().join("modules/network")),
            ("client_file", repo().join("modules/client_file")),
        ],
        |modules| {
            let data = modules.join("assets/client_data");
            std::fs::create_dir_all(&data).expect("assets");
            std::fs::write(
                modules.join("assets/meta.json"),
                r#"{"disable_rust": true}"#,
            )
            .expect("meta");
            for (index, bytes) in files.iter().enumerate() {
                std::fs::write(data.join(format!("file{index:04}.bin")), bytes).expect("file");
            }
        },
        &["--set", &setting],
    )
}

fn main() {
    let (raw_connect, raw_stream) = tokio_case(false);
    let (tls_handshake, tls_stream) = tokio_case(true);

    let files: Vec<Vec<u8>> = (0..FILES).map(file_bytes).collect();
    let total: usize = files.iter().map(Vec::len).sum();
    let plain = buildat_server(&files, false);
    let secure = buildat_server(&files, true);
    // client_file registers files at start; give it a moment after listening.
    std::thread::sleep(std::time::Duration::from_millis(500));
    let mut handshakes = (Vec::new(), Vec::new());
    for _ in 0..50 {
        handshakes.0.push(connect(&plain.address, false).1 * 1e3);
        handshakes.1.push(connect(&secure.address, true).1 * 1e3);
    }
    let mut runs = (Vec::new(), Vec::new());
    for _ in 0..5 {
        for (tls, server, seconds) in [(false, &plain, &mut runs.0), (true, &secure, &mut runs.1)] {
            let (elapsed, bytes) = sync(&server.address, tls);
            assert_eq!(bytes as usize, total);
            seconds.push(elapsed);
        }
    }
    let (plain_files, tls_files) = (median(runs.0), median(runs.1));
    let mib = |seconds: f64, bytes: usize| (bytes >> 20) as f64 / seconds;
    let (plain_connect, tls_connect) = (median(handshakes.0), median(handshakes.1));

    println!();
    println!(
        "{:<52} {:>12} {:>12} {:>7}",
        "case", "measured", "baseline", "ratio"
    );
    println!(
        "{:<52} {:>9.3} ms {:>9.3} ms {:>6.1}x",
        "handshake: tokio-rustls vs raw tokio connect",
        tls_handshake,
        raw_connect,
        tls_handshake / raw_connect
    );
    println!(
        "{:<52} {:>9.3} ms {:>9.3} ms {:>6.1}x",
        "handshake: buildat TLS port vs plaintext port",
        tls_connect,
        plain_connect,
        tls_connect / plain_connect
    );
    println!(
        "{:<52} {:>7.0} MiB/s {:>7.0} MiB/s {:>6.2}x",
        "stream 256 MiB: tokio-rustls vs raw tokio",
        tls_stream,
        raw_stream,
        raw_stream / tls_stream
    );
    println!(
        "{:<52} {:>7.0} MiB/s {:>7.0} MiB/s {:>6.2}x",
        "files 1000 / 50 MiB: buildat TLS vs plaintext",
        mib(tls_files, total),
        mib(plain_files, total),
        tls_files / plain_files
    );
    println!(
        "{:<52} {:>7.0} MiB/s {:>7.0} MiB/s {:>6.2}x",
        "files over buildat TLS vs raw tokio-rustls stream",
        mib(tls_files, total),
        tls_stream,
        tls_stream / mib(tls_files, total)
    );
    println!("(ratio: time with the first over time with the baseline; medians)");
}
