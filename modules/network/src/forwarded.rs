//! Connections that come through a forwarder (HAProxy, nginx's stream
//! module) with `network.proxy_protocol` on: every connection must start
//! with a PROXY protocol v2 header (parsed by `buildat_format::proxy`),
//! and the address it names is the peer's address for everything (bans,
//! per-address limits, whether the peer is loopback, the
//! `network:client_connected` event). A `LOCAL` header (a forwarder's
//! health check) keeps the connection's own address. With the setting
//! off, no header is ever looked for or trusted.
//!
//! Owns: reading the header off the socket (bounded in bytes and time)
//! and handing back what came after it; whether an address is loopback.
//! Does not own: the format (`buildat_format::proxy`), admission, TLS.

use std::net::SocketAddr;
use std::time::Instant;

use buildat_format::proxy;
use tokio::net::TcpStream;

/// Reads the PROXY v2 header the connection must start with, until
/// `deadline`: the source address it names (`None`: the connection's
/// own) and the bytes read after it. An error is the reason to close.
pub(crate) async fn read_header(
    stream: &TcpStream,
    deadline: Instant,
) -> Result<(Option<SocketAddr>, Vec<u8>), String> {
    let mut raw: Vec<u8> = Vec::new();
    let mut buffer = [0u8; 512];
    loop {
        match proxy::parse(&raw) {
            Ok(Some(header)) => {
                let rest = raw.split_off(header.len.min(raw.len()));
                return Ok((header.source, rest));
            }
            Ok(None) => {}
            Err(error) => return Err(format!("network.proxy_protocol is on: {error}")),
        }
        let wait = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(wait, stream.readable()).await {
            Err(_) => {
                return Err(
                    "network.proxy_protocol is on: no whole PROXY protocol header in time".into(),
                );
            }
            Ok(Err(error)) => return Err(format!("read error: {error}")),
            Ok(Ok(())) => {}
        }
        match stream.try_read(&mut buffer) {
            Ok(0) => return Err("closed before its PROXY protocol header".into()),
            Ok(read) => raw.extend_from_slice(buffer.get(..read).unwrap_or_default()),
            Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(error) => return Err(format!("read error: {error}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_and_what_follows_are_read_from_a_socket() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        runtime.block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("bind");
            let at = listener.local_addr().expect("address");
            let source: SocketAddr = "203.0.113.7:4444".parse().expect("address");
            let mut sent = proxy::encode(Some((source, at)));
            sent.extend_from_slice(b"\0\0first bytes");
            let client = tokio::spawn(async move {
                use tokio::io::AsyncWriteExt;
                let mut stream = TcpStream::connect(at).await.expect("connect");
                // In two pieces, the cut inside the header.
                stream.write_all(&sent[..10]).await.expect("write");
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                stream.write_all(&sent[10..]).await.expect("write");
                stream
            });
            let (stream, _) = listener.accept().await.expect("accept");
            let deadline = Instant::now() + std::time::Duration::from_secs(5);
            let (got, rest) = read_header(&stream, deadline).await.expect("a header");
            assert_eq!(got, Some(source));
            assert_eq!(rest, b"\0\0first bytes");
            let _client = client.await.expect("client");

            // Plaintext without a header: refused, saying why.
            let client = tokio::spawn(async move {
                use tokio::io::AsyncWriteExt;
                let mut stream = TcpStream::connect(at).await.expect("connect");
                stream.write_all(&[0, 0, 16, 0, 0, 0]).await.expect("write");
                stream
            });
            let (stream, _) = listener.accept().await.expect("accept");
            let error = read_header(&stream, deadline).await.expect_err("refused");
            assert!(error.contains("no PROXY protocol v2 header"), "{error}");
            let _client = client.await.expect("client");
        });
    }
}
