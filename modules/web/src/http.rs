//! The web module's HTTP server: hyper's HTTP/1.1 on a tokio runtime the
//! module owns, and the routes.
//!
//! Owns: the listening socket (bound with `SO_REUSEADDR`, so the next
//! version of the module binds the same port at once after `reload web`;
//! HTTPS when `tls.rs` says so, the handshake within 10 s), one task per
//! connection admitted by the cap (`limits.rs`), the order of a request's
//! checks (the address's rate off loopback, 429; the `Host`, 421; then
//! who may see what: loopback clients, the token as a header, the cookie
//! of `/login`, or `web.public`; an admin action needs the header), and
//! the routes: `/` (status page), `/status` (JSON), `/metrics`, `/map`,
//! `/map.js`, `/login` (a page asking for the token; `POST` with the
//! header sets the cookie), `/tile/Z/X/Y.png` (with an `ETag`: a page
//! asking again for a tile it has gets 304), `/api/players`,
//! `/api/changes?since=N`, `/api/live` (the map's pushed updates, a
//! stream of `live.rs`), `POST /admin/...`. Work that
//! calls other modules runs on the runtime's blocking threads, never on
//! the module's own thread, so the page never holds up the module's
//! events. [`Server::stop`] stops accepting, ends the connections and
//! shuts the runtime down within 5 s, joining its threads before the
//! module's library is closed.
//! Does not own: what the pages say (`status.rs`, `metrics.rs`, `map.rs`,
//! `admin.rs`), which names and keys pass (`access.rs`), the certificate
//! (`tls.rs`).

use std::convert::Infallible;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::time::{Duration, Instant};

use buildat_interface::core_api::ListModules;
use buildat_interface::log;
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::header::{
    CACHE_CONTROL, CONTENT_TYPE, ETAG, HeaderValue, IF_NONE_MATCH, LOCATION, REFERRER_POLICY,
    RETRY_AFTER, SET_COOKIE, X_CONTENT_TYPE_OPTIONS, X_FRAME_OPTIONS,
};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpSocket};
use tokio::sync::watch;

use crate::access::{self, AllowedHosts};
use crate::limits::{Connections, RequestRate};
use crate::{Shared, admin, live, map, metrics, status, tls};

/// How long stopping may wait for connections and blocking work.
const STOP_WAIT: Duration = Duration::from_secs(5);

const MAP_HTML: &str = include_str!("assets/map.html");
const MAP_JS: &str = include_str!("assets/map.js");
const LOGIN_HTML: &str = include_str!("assets/login.html");
/// How long a tile request waits for the map's budget before it is told
/// to come back later.
const BUDGET_WAIT: Duration = Duration::from_secs(10);
/// How long a client has to finish the TLS handshake.
const HANDSHAKE_WAIT: Duration = Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    #[error("'{0}' is not an address (ADDRESS:PORT)")]
    BadAddress(String),
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error("HTTPS: {0} (or set web.insecure_http=true for plain HTTP)")]
    Tls(#[from] tls::TlsError),
}

/// What every connection and request of one server is checked against.
struct Gate {
    hosts: AllowedHosts,
    connections: Arc<Connections>,
    rate: RequestRate,
    /// The page speaks HTTPS.
    secure: bool,
}

/// A running server.
pub struct Server {
    pub address: SocketAddr,
    /// `https` or `http`.
    pub scheme: &'static str,
    runtime: tokio::runtime::Runtime,
    stop: watch::Sender<bool>,
}

/// How much lower than the game's threads the page's threads run (a nice
/// value): on a busy machine the page takes the CPU the game leaves.
const PAGE_NICENESS: i32 = 10;

/// Lowers the calling thread's priority by [`PAGE_NICENESS`] (on Linux a
/// nice value is a thread's own). Failing to is harmless: the page then
/// runs at the game's priority.
fn yield_to_the_game() {
    // SAFETY: setpriority on the calling thread (who = 0) with a plain
    // integer; it touches no memory of ours.
    let _ = unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, PAGE_NICENESS) };
}

impl Server {
    pub fn start(shared: Arc<Shared>, listen: &str) -> Result<Self, ServeError> {
        let address = listen
            .to_socket_addrs()
            .map_err(|_| ServeError::BadAddress(listen.to_string()))?
            .next()
            .ok_or_else(|| ServeError::BadAddress(listen.to_string()))?;
        let acceptor = if tls::wanted(address, shared.settings.insecure_http) {
            let settings = &shared.settings;
            let own = settings
                .tls_cert
                .as_deref()
                .zip(settings.tls_key.as_deref());
            let game_cert = shared.host.get_config("network.tls_cert");
            let game_key = shared.host.get_config("network.tls_key");
            let game = game_cert
                .as_deref()
                .filter(|p| !p.is_empty())
                .zip(game_key.as_deref().filter(|p| !p.is_empty()));
            let (cert, key, made) = tls::certificate_files(&shared.host.world_path(), own, game)?;
            let config = tls::server_config(&cert, &key)?;
            log::info!(
                "the web page speaks HTTPS with {}{}",
                cert.display(),
                if made { " (made now, self-signed)" } else { "" }
            );
            Some(tokio_rustls::TlsAcceptor::from(config))
        } else {
            if !access::is_loopback(address.ip()) {
                log::warn!(
                    "the web page is plain HTTP (web.insecure_http=true) on an address that is \
                     not loopback: its token and cookie cross the network readable"
                );
            }
            None
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .max_blocking_threads(4)
            .thread_name("web")
            .on_thread_start(yield_to_the_game)
            .enable_all()
            .build()?;
        let listener = runtime.block_on(async {
            let socket = if address.is_ipv4() {
                TcpSocket::new_v4()?
            } else {
                TcpSocket::new_v6()?
            };
            socket.set_reuseaddr(true)?;
            socket.bind(address)?;
            socket.listen(128)
        })?;
        let address = listener.local_addr()?;
        let gate = Arc::new(Gate {
            hosts: AllowedHosts::new(listen, &shared.settings.hostnames),
            connections: Connections::new(shared.settings.max_connections),
            rate: RequestRate::default(),
            secure: acceptor.is_some(),
        });
        let scheme = if gate.secure { "https" } else { "http" };
        let (stop, stopped) = watch::channel(false);
        runtime.spawn(refresh_loop(shared.clone(), stopped.clone()));
        runtime.spawn(live::run(shared.clone(), stopped.clone()));
        runtime.spawn(accept_loop(shared, gate, acceptor, listener, stopped));
        Ok(Self {
            address,
            scheme,
            runtime,
            stop,
        })
    }

    /// Stops accepting, ends every connection, and joins the runtime's
    /// threads.
    pub fn stop(self) {
        let _ = self.stop.send(true);
        self.runtime.shutdown_timeout(STOP_WAIT);
    }
}

/// Every 250 ms: fetch again the map's blocks that changed or had
/// columns not generated (within the refresher's budget); every 2 s, note
/// the modules' reloads.
async fn refresh_loop(shared: Arc<Shared>, mut stopped: watch::Receiver<bool>) {
    let mut round = 0u64;
    loop {
        tokio::select! {
            _ = stopped.changed() => return,
            _ = tokio::time::sleep(Duration::from_millis(250)) => {
                round += 1;
                let shared = shared.clone();
                let _ = tokio::task::spawn_blocking(move || {
                    if round.is_multiple_of(8) && let Ok(modules) = shared.host.call(&ListModules {}) {
                        shared.counters().note_modules(&modules);
                    }
                    map::refresh(&shared);
                })
                .await;
            }
        }
    }
}

async fn accept_loop(
    shared: Arc<Shared>,
    gate: Arc<Gate>,
    acceptor: Option<tokio_rustls::TlsAcceptor>,
    listener: TcpListener,
    mut stopped: watch::Receiver<bool>,
) {
    loop {
        tokio::select! {
            _ = stopped.changed() => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    // One too many: closed at once, before any byte is read.
                    let Some(admitted) = gate.connections.admit(peer.ip()) else {
                        drop(stream);
                        continue;
                    };
                    let _ = stream.set_nodelay(true);
                    let (shared, gate, acceptor) = (shared.clone(), gate.clone(), acceptor.clone());
                    let stopped = stopped.clone();
                    tokio::spawn(async move {
                        let _admitted = admitted;
                        match acceptor {
                            None => serve(shared, gate, peer, stream, stopped).await,
                            Some(acceptor) => {
                                let handshake =
                                    tokio::time::timeout(HANDSHAKE_WAIT, acceptor.accept(stream));
                                if let Ok(Ok(stream)) = handshake.await {
                                    serve(shared, gate, peer, stream, stopped).await;
                                }
                            }
                        }
                    });
                }
                // Out of descriptors, say: wait instead of spinning.
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            },
        }
    }
}

/// Serves one connection's requests until it closes or the server stops.
async fn serve<S>(
    shared: Arc<Shared>,
    gate: Arc<Gate>,
    peer: SocketAddr,
    stream: S,
    mut stopped: watch::Receiver<bool>,
) where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let live_stopped = stopped.clone();
    let service = hyper::service::service_fn(move |request| {
        handle(
            shared.clone(),
            gate.clone(),
            peer,
            request,
            live_stopped.clone(),
        )
    });
    let connection = hyper::server::conn::http1::Builder::new()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(Duration::from_secs(10))
        .serve_connection(TokioIo::new(stream), service);
    tokio::pin!(connection);
    tokio::select! {
        _ = connection.as_mut() => {}
        _ = stopped.changed() => {
            connection.as_mut().graceful_shutdown();
            let _ = tokio::time::timeout(Duration::from_secs(1), connection).await;
        }
    }
}

pub type Reply = Response<Full<Bytes>>;

/// A response's body: all at once, or the live feed's stream.
pub type Body = http_body_util::Either<Full<Bytes>, live::LiveBody>;

pub fn reply(status: StatusCode, content_type: &str, body: impl Into<Bytes>) -> Reply {
    let mut response = Response::new(Full::new(body.into()));
    *response.status_mut() = status;
    if let Ok(value) = HeaderValue::from_str(content_type) {
        response.headers_mut().insert(CONTENT_TYPE, value);
    }
    let headers = response.headers_mut();
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    // No other site frames the pages (the login form among them), guesses
    // a type for them, or learns their addresses from a link.
    headers.insert(X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    response
}

fn text(status: StatusCode, body: impl Into<String>) -> Reply {
    reply(status, "text/plain; charset=utf-8", body.into())
}

fn json(value: &impl serde::Serialize) -> Reply {
    match serde_json::to_vec(value) {
        Ok(bytes) => reply(StatusCode::OK, "application/json", bytes),
        Err(error) => text(StatusCode::INTERNAL_SERVER_ERROR, error.to_string()),
    }
}

/// Runs `work` (which may call other modules and wait) on a blocking
/// thread.
async fn blocking(
    shared: &Arc<Shared>,
    work: impl FnOnce(&Shared) -> Reply + Send + 'static,
) -> Reply {
    let shared = shared.clone();
    tokio::task::spawn_blocking(move || work(&shared))
        .await
        .unwrap_or_else(|_| text(StatusCode::INTERNAL_SERVER_ERROR, "the request failed"))
}

/// A tile; while the map's budget is spent, waits for it (the blocks
/// fetched so far are kept), up to [`BUDGET_WAIT`], so a page's tiles come
/// at the pace the budget allows; then 503 with `Retry-After`.
/// A page that has the tile (`If-None-Match` its tag) gets 304; every
/// answer says to ask again (`no-cache`), so a changed tile is never
/// shown from the browser's cache.
async fn tile_reply(
    shared: &Arc<Shared>,
    tile: map::TileId,
    if_none_match: Option<String>,
) -> Reply {
    let deadline = Instant::now() + BUDGET_WAIT;
    loop {
        let shared = shared.clone();
        let if_none_match = if_none_match.clone();
        let drawn = tokio::task::spawn_blocking(move || {
            let started = Instant::now();
            match map::tile_png(&shared, tile) {
                Ok(drawn) => {
                    if drawn.drawn_now {
                        let mut counters = shared.counters();
                        counters.tiles_rendered += 1;
                        counters.tile_seconds += started.elapsed().as_secs_f64();
                    }
                    let unchanged = if_none_match
                        .as_deref()
                        .is_some_and(|tags| tags.split(',').any(|t| t.trim() == &*drawn.etag));
                    let response = if unchanged {
                        reply(StatusCode::NOT_MODIFIED, "image/png", Bytes::new())
                    } else {
                        reply(StatusCode::OK, "image/png", drawn.png)
                    };
                    let response = with_header(response, ETAG, &drawn.etag);
                    Ok(with_header(response, CACHE_CONTROL, "no-cache"))
                }
                Err(map::MapError::Busy(wait)) => Err(wait),
                Err(error) => {
                    note_tile_failure(&shared, tile, &error);
                    Ok(text(StatusCode::SERVICE_UNAVAILABLE, format!("{error}\n")))
                }
            }
        })
        .await;
        match drawn {
            Ok(Ok(reply)) => return reply,
            Ok(Err(wait)) if Instant::now() + wait <= deadline => {
                tokio::time::sleep(wait).await;
            }
            // Not a failure: the page asks again.
            Ok(Err(wait)) => {
                return try_later(
                    StatusCode::SERVICE_UNAVAILABLE,
                    wait,
                    format!("{}\n", map::MapError::Busy(wait)),
                );
            }
            Err(_) => return text(StatusCode::INTERNAL_SERVER_ERROR, "the request failed"),
        }
    }
}

/// Counts a tile that could not be drawn; warns at most every 10 s (the
/// page asks again, so one cause can fail many requests).
fn note_tile_failure(shared: &Shared, tile: map::TileId, error: &map::MapError) {
    let mut counters = shared.counters();
    counters.tile_failures += 1;
    let due = counters
        .tile_failure_warned
        .is_none_or(|at| at.elapsed() >= Duration::from_secs(10));
    if due {
        counters.tile_failure_warned = Some(Instant::now());
        let failures = counters.tile_failures;
        drop(counters);
        log::warn!(
            "map tile {}/{}/{} not drawn: {error} ({failures} tiles not drawn so far)",
            tile.level,
            tile.x,
            tile.z
        );
    }
}

/// `reply` with a header added.
fn with_header(mut response: Reply, name: hyper::header::HeaderName, value: &str) -> Reply {
    if let Ok(value) = HeaderValue::from_str(value) {
        response.headers_mut().insert(name, value);
    }
    response
}

/// 429 or 503 with `Retry-After` (whole seconds, at least 1).
fn try_later(status: StatusCode, wait: Duration, body: String) -> Reply {
    let seconds = wait.as_secs_f64().ceil().max(1.0) as u64;
    with_header(text(status, body), RETRY_AFTER, &seconds.to_string())
}

/// `/login`: the page asking for the token (GET), or the cookie for a
/// request carrying it as the header (POST).
fn login(gate: &Gate, shared: &Shared, method: &Method, bearer: bool) -> Reply {
    match *method {
        Method::GET | Method::HEAD => reply(StatusCode::OK, "text/html; charset=utf-8", LOGIN_HTML),
        Method::POST if bearer => with_header(
            text(StatusCode::OK, "logged in\n"),
            SET_COOKIE,
            &access::set_cookie(&shared.view_key, gate.secure),
        ),
        Method::POST => text(
            StatusCode::UNAUTHORIZED,
            "that is not the token of <world>/web-token.txt (send it as Authorization: Bearer TOKEN)\n",
        ),
        _ => text(StatusCode::METHOD_NOT_ALLOWED, "/login takes GET or POST\n"),
    }
}

/// Answers a request; `/api/live`, once [`answer`] lets it through, gets
/// the live feed's stream as its body.
async fn handle(
    shared: Arc<Shared>,
    gate: Arc<Gate>,
    peer: SocketAddr,
    request: Request<Incoming>,
    stopped: watch::Receiver<bool>,
) -> Result<Response<Body>, Infallible> {
    let live = request.method() == Method::GET && request.uri().path() == "/api/live";
    let reply = answer(shared.clone(), gate, peer, request).await?;
    if live && reply.status() == StatusCode::OK {
        let (parts, _) = reply.into_parts();
        return Ok(Response::from_parts(
            parts,
            http_body_util::Either::Right(shared.live.stream(stopped)),
        ));
    }
    Ok(reply.map(http_body_util::Either::Left))
}

async fn answer(
    shared: Arc<Shared>,
    gate: Arc<Gate>,
    peer: SocketAddr,
    request: Request<Incoming>,
) -> Result<Reply, Infallible> {
    shared.counters().requests += 1;
    let local = access::is_loopback(peer.ip());
    if !local && let Err(wait) = gate.rate.check(peer.ip(), Instant::now()) {
        return Ok(try_later(
            StatusCode::TOO_MANY_REQUESTS,
            wait,
            "too many requests from this address: slow down\n".into(),
        ));
    }
    // Before anything is read or done: a page of another site that made
    // its name point here gets nothing.
    if let Err(refusal) = gate.hosts.check(request.headers(), request.uri()) {
        return Ok(text(
            StatusCode::MISDIRECTED_REQUEST,
            format!("{refusal}\n"),
        ));
    }
    let path = request.uri().path().to_string();
    let if_none_match = request
        .headers()
        .get(IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let query = request.uri().query().unwrap_or_default().to_string();
    let bearer = admin::request_token(request.headers())
        .is_some_and(|t| admin::token_matches(&shared.token, t));
    let method = request.method().clone();
    if path == "/login" {
        return Ok(login(&gate, &shared, &method, bearer));
    }
    if let Some(action) = path.strip_prefix("/admin/") {
        if method != Method::POST {
            return Ok(text(
                StatusCode::METHOD_NOT_ALLOWED,
                "admin actions are POST requests\n",
            ));
        }
        if !bearer {
            return Ok(text(
                StatusCode::UNAUTHORIZED,
                "admin actions need the token of <world>/web-token.txt as a header \
                 (Authorization: Bearer TOKEN)\n",
            ));
        }
        let action = action.to_string();
        return Ok(blocking(&shared, move |shared| {
            shared.counters().admin_actions += 1;
            match admin::run(shared, &action) {
                Ok(done) => text(StatusCode::OK, format!("{done}\n")),
                Err(error) => text(error.status(), format!("{error}\n")),
            }
        })
        .await);
    }
    let viewer = local
        || shared.settings.public
        || bearer
        || access::cookie(request.headers(), access::COOKIE_NAME)
            .is_some_and(|c| admin::token_matches(&shared.view_key, c));
    if !viewer {
        // A browser opening a page is sent to the page asking for the
        // token; anything else is told.
        if method == Method::GET && (path == "/" || path == "/map") {
            let next = request
                .uri()
                .path_and_query()
                .map_or("/", |p| p.as_str())
                .to_string();
            let location = format!("/login?next={}", percent_encode(&next));
            return Ok(with_header(
                text(StatusCode::SEE_OTHER, "log in first: /login\n"),
                LOCATION,
                &location,
            ));
        }
        return Ok(text(
            StatusCode::UNAUTHORIZED,
            "this page is open to loopback clients; others need the token \
             (Authorization: Bearer TOKEN, or log in at /login) or web.public=true\n",
        ));
    }
    if method != Method::GET && method != Method::HEAD {
        return Ok(text(
            StatusCode::METHOD_NOT_ALLOWED,
            "read-only pages take GET\n",
        ));
    }
    let response = match path.as_str() {
        "/" => {
            blocking(&shared, |shared| {
                reply(
                    StatusCode::OK,
                    "text/html; charset=utf-8",
                    status::page(&status::collect(shared)),
                )
            })
            .await
        }
        "/status" => blocking(&shared, |shared| json(&status::collect(shared))).await,
        "/metrics" => {
            blocking(&shared, |shared| {
                reply(
                    StatusCode::OK,
                    metrics::CONTENT_TYPE,
                    metrics::render(&metrics::collect(shared)),
                )
            })
            .await
        }
        "/map" => reply(StatusCode::OK, "text/html; charset=utf-8", MAP_HTML),
        "/map.js" => reply(StatusCode::OK, "text/javascript; charset=utf-8", MAP_JS),
        "/api/players" => blocking(&shared, |shared| json(status::players(shared).as_ref())).await,
        // The stream itself is `handle`'s: these are its headers.
        "/api/live" => reply(StatusCode::OK, "text/event-stream", Bytes::new()),
        "/api/changes" => {
            let since = query
                .split('&')
                .find_map(|pair| pair.strip_prefix("since="))
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            json(&shared.map.changes_since(since))
        }
        _ => match map::parse_tile_path(&path) {
            Some(tile) => tile_reply(&shared, tile, if_none_match).await,
            None => text(StatusCode::NOT_FOUND, "no such page\n"),
        },
    };
    Ok(response)
}

/// `text` with every byte but letters, digits and `/-_.` as `%XX`.
fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"/-_.".contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}
