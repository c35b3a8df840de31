//! The web module's HTTP server: hyper's HTTP/1.1 on a tokio runtime the
//! module owns, and the routes.
//!
//! Owns: the listening socket (bound with `SO_REUSEADDR`, so the next
//! version of the module binds the same port at once after `reload web`),
//! one task per connection, who may see what (loopback clients, or the
//! token, or `web.public`), and the routes: `/` (status page), `/status`
//! (JSON), `/metrics`, `/map`, `/map.js`, `/tile/Z/X/Y.png`,
//! `/api/players`, `/api/changes?since=N`, `POST /admin/...`. Work that
//! calls other modules runs on the runtime's blocking threads, never on
//! the module's own thread, so the page never holds up the module's
//! events. [`Server::stop`] stops accepting, ends the connections and
//! shuts the runtime down within 5 s, joining its threads before the
//! module's library is closed.
//! Does not own: what the pages say (`status.rs`, `metrics.rs`, `map.rs`,
//! `admin.rs`).

use std::convert::Infallible;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::time::{Duration, Instant};

use buildat_interface::core_api::ListModules;
use buildat_interface::log;
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::header::{CACHE_CONTROL, CONTENT_TYPE, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpSocket};
use tokio::sync::watch;

use crate::{Shared, admin, map, metrics, status};

/// How long stopping may wait for connections and blocking work.
const STOP_WAIT: Duration = Duration::from_secs(5);

const MAP_HTML: &str = include_str!("assets/map.html");
const MAP_JS: &str = include_str!("assets/map.js");

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    #[error("'{0}' is not an address (ADDRESS:PORT)")]
    BadAddress(String),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// A running server.
pub struct Server {
    pub address: SocketAddr,
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
        let (stop, stopped) = watch::channel(false);
        runtime.spawn(refresh_loop(shared.clone(), stopped.clone()));
        runtime.spawn(accept_loop(shared, listener, stopped));
        Ok(Self {
            address,
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
    listener: TcpListener,
    mut stopped: watch::Receiver<bool>,
) {
    loop {
        tokio::select! {
            _ = stopped.changed() => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    let _ = stream.set_nodelay(true);
                    let shared = shared.clone();
                    let mut stopped = stopped.clone();
                    tokio::spawn(async move {
                        let service = hyper::service::service_fn(move |request| {
                            handle(shared.clone(), peer, request)
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
                    });
                }
                // Out of descriptors, say: wait instead of spinning.
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            },
        }
    }
}

pub type Reply = Response<Full<Bytes>>;

pub fn reply(status: StatusCode, content_type: &str, body: impl Into<Bytes>) -> Reply {
    let mut response = Response::new(Full::new(body.into()));
    *response.status_mut() = status;
    if let Ok(value) = HeaderValue::from_str(content_type) {
        response.headers_mut().insert(CONTENT_TYPE, value);
    }
    response
        .headers_mut()
        .insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
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

async fn handle(
    shared: Arc<Shared>,
    peer: SocketAddr,
    request: Request<Incoming>,
) -> Result<Reply, Infallible> {
    shared.counters().requests += 1;
    let path = request.uri().path().to_string();
    let query = request.uri().query().unwrap_or_default().to_string();
    let token = admin::request_token(request.headers(), &query);
    let authorised = token.is_some_and(|t| admin::token_matches(&shared.token, t));
    let method = request.method().clone();
    if let Some(action) = path.strip_prefix("/admin/") {
        if method != Method::POST {
            return Ok(text(
                StatusCode::METHOD_NOT_ALLOWED,
                "admin actions are POST requests\n",
            ));
        }
        if !authorised {
            return Ok(text(
                StatusCode::UNAUTHORIZED,
                "admin actions need the token of <world>/web-token.txt (Authorization: Bearer TOKEN)\n",
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
    if !(peer.ip().is_loopback() || shared.settings.public || authorised) {
        return Ok(text(
            StatusCode::UNAUTHORIZED,
            "this page is open to loopback clients; others need the token (or web.public=true)\n",
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
        "/api/changes" => {
            let since = query
                .split('&')
                .find_map(|pair| pair.strip_prefix("since="))
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            json(&shared.map.changes_since(since))
        }
        _ => match map::parse_tile_path(&path) {
            Some(tile) => {
                blocking(&shared, move |shared| {
                    let started = Instant::now();
                    match map::tile_png(shared, tile) {
                        Ok((png, drawn_now)) => {
                            if drawn_now {
                                let mut counters = shared.counters();
                                counters.tiles_rendered += 1;
                                counters.tile_seconds += started.elapsed().as_secs_f64();
                            }
                            reply(StatusCode::OK, "image/png", png)
                        }
                        Err(error) => {
                            note_tile_failure(shared, tile, &error);
                            text(StatusCode::SERVICE_UNAVAILABLE, format!("{error}\n"))
                        }
                    }
                })
                .await
            }
            None => text(StatusCode::NOT_FOUND, "no such page\n"),
        },
    };
    Ok(response)
}
