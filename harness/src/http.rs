//! A small HTTP/1.1 client (one request per connection, `Connection:
//! close`) for the web module's page: its end-to-end test and the light
//! map pages of `loadtest --pages`.
//!
//! Owns: writing a request and reading one reply. Does not own: what a
//! page asks for (`map_pages`, the tests).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// One reply: status, content type and the whole body.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub content_type: String,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// Sends `method path` (with a bearer `token` if given) to `address` and
/// reads the reply to the end (60 s at most).
pub fn request(
    address: &str,
    method: &str,
    path: &str,
    token: Option<&str>,
) -> std::io::Result<Reply> {
    let mut stream = TcpStream::connect(address)?;
    stream.set_read_timeout(Some(Duration::from_secs(60)))?;
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {address}\r\n{auth}Content-Length: 0\r\nConnection: close\r\n\r\n"
    )?;
    let mut bytes = Vec::new();
    stream.read_to_end(&mut bytes)?;
    let split = bytes
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| std::io::Error::other("no end of headers"))?;
    let head = String::from_utf8_lossy(&bytes[..split]).into_owned();
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("bad status line: {head}")))?;
    let mut content_type = String::new();
    let mut length = None;
    for line in lines {
        if let Some((name, value)) = line.split_once(':') {
            match name.to_ascii_lowercase().as_str() {
                "content-type" => content_type = value.trim().to_string(),
                "content-length" => length = value.trim().parse::<usize>().ok(),
                _ => {}
            }
        }
    }
    let body = bytes[split + 4..].to_vec();
    if let Some(length) = length
        && body.len() != length
    {
        return Err(std::io::Error::other(format!(
            "{} body bytes where the headers said {length}: {head}",
            body.len()
        )));
    }
    Ok(Reply {
        status,
        content_type,
        body,
    })
}
