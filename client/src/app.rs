//! The client's connection loop: one TCP connection (over TLS or not as
//! `transport.rs` decides, the handshake in `tls.rs`) to a server, driving
//! the [`Session`] (file transfer) and the [`Runtime`] (Lua) until the
//! server disconnects, Lua calls `buildat.disconnect()`, or `--quit-after`
//! runs out.
//!
//! Owns: connecting, reading and writing frames through `buildat_format`'s
//! codec, routing session events (files into the runtime, `core:run_script`,
//! the world stream into the session's [`WorldView`](crate::world::WorldView),
//! game packets to subscribers), sending `voxelworld:ack` once per
//! read-loop iteration for the chunks processed in it, timers, the bot
//! script and its exit hooks, progress lines on stderr, the maps at exit,
//! and the [`Summary`]; with a frontend attached (window or offscreen),
//! forwarding it the world's chunks, `client_data` files and Lua's UI
//! state, and passing its keys, clicks and moves to Lua. Does not own: the protocol rules (`session`), Lua
//! (`sandbox`), the world's contents (`world`), exit codes (`main.rs` maps
//! [`Outcome`] and [`AppError`] to them).

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream, ToSocketAddrs};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use buildat_format::Packet;
use buildat_format::{PacketReadError, PacketReader, PacketWriter};
use buildat_main_protocol::{LoggedIn, Login};
use buildat_voxelworld_protocol::stream::Ack;
use crossbeam_channel::TryRecvError;
use rustls::{ClientConnection, StreamOwned};
use thiserror::Error;

use crate::cache::{Cache, CacheError};
use crate::frontend::{FromFrontend, SessionLink, ToFrontend};
use crate::nodes::NodeView;
use crate::sandbox::{self, Level, LogSink, Runtime, ScriptError};
use crate::session::{Event, Session, SessionError, Stats};
use crate::tls::{self, Pinned, TlsFailure, TlsOptions};
use crate::transport::{self, Decision, Security, SecurityError};
use crate::world::{self, Handled, WorldStats, WorldView};

/// What the client was asked to do.
#[derive(Clone)]
pub struct Config {
    /// `HOST:PORT`.
    pub address: String,
    /// The cache folder (holding `files/`).
    pub cache_dir: PathBuf,
    /// What the cache may hold (0: no limit).
    pub cache_max_bytes: u64,
    /// Bot mode: a trusted local script (display name, source), run once
    /// every announced file is present.
    pub script: Option<(String, Vec<u8>)>,
    /// `buildat.client_name`.
    pub name: String,
    /// Disconnect (exit 0) after this long.
    pub quit_after: Option<Duration>,
    /// Lua VM memory limit.
    pub memory_limit: usize,
    /// Time limit of one call into Lua.
    pub time_limit: Duration,
    /// How long to try connecting.
    pub connect_timeout: Duration,
    /// Where log lines go.
    pub log: LogSink,
    /// Draw the ASCII map into [`Summary::ascii_map`] at exit.
    pub ascii_map: bool,
    /// Write the PNG map here at exit.
    pub map_png: Option<PathBuf>,
    /// Half-width of the maps, in voxels.
    pub map_radius: i32,
    /// The frontend drawing this session, if any (never for bots).
    pub frontend: Option<SessionLink>,
    /// Log in to the account `name` with this password (`main:login`,
    /// sent first thing, after the TLS handshake and the pin check when
    /// there is one); `None`: join as a guest.
    pub password: Option<String>,
    /// `tls://HOST:PORT` or `--tls`: TLS even to a loopback address
    /// (`transport.rs` has the rule).
    pub force_tls: bool,
    /// `--insecure-plaintext`: plaintext to an address that is not loopback
    /// (refused with a password).
    pub insecure_plaintext: bool,
    /// The known-hosts file and `--accept-new-key`, for pinning the key of
    /// a server that is not loopback; `None`: no file could be named, and
    /// such a server is refused.
    pub pins: Option<TlsOptions>,
}

impl Config {
    /// A configuration with the defaults for everything but the address,
    /// the cache and the name.
    pub fn new(address: &str, cache_dir: PathBuf, name: &str, log: LogSink) -> Self {
        Self {
            address: address.to_string(),
            cache_dir,
            cache_max_bytes: crate::cache::DEFAULT_MAX_CACHE_BYTES,
            script: None,
            name: name.to_string(),
            quit_after: None,
            memory_limit: sandbox::DEFAULT_MEMORY_LIMIT,
            time_limit: sandbox::DEFAULT_TIME_LIMIT,
            connect_timeout: Duration::from_secs(10),
            log,
            ascii_map: false,
            map_png: None,
            map_radius: world::DEFAULT_MAP_RADIUS,
            frontend: None,
            password: None,
            force_tls: false,
            insecure_plaintext: false,
            pins: None,
        }
    }

    /// What [`transport`] decides with.
    pub fn security(&self) -> Security {
        Security {
            force_tls: self.force_tls,
            insecure_plaintext: self.insecure_plaintext,
            has_password: self.password.is_some(),
        }
    }
}

/// How the connection ended without an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// `--quit-after` elapsed.
    QuitAfter,
    /// Lua called `buildat.disconnect()`.
    DisconnectRequested,
    /// The server said `core:disconnect` (or closed the connection).
    DisconnectedByServer { reason: String },
    /// The frontend ended the session (its window was closed, or the
    /// screenshot was taken).
    FrontendClosed,
}

/// Why the client stopped with an error.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum AppError {
    #[error("cannot resolve {address}: {source}")]
    Resolve {
        address: String,
        source: std::io::Error,
    },
    #[error("cannot connect to {address}: {source}")]
    Connect {
        address: String,
        source: std::io::Error,
    },
    #[error("protocol error: {0}")]
    Protocol(String),
    #[error(
        "the key of {host} CHANGED: pinned {old}, now {new}. Someone may be between you and \
         the server, or the server has a new certificate. If you know it does, run again with \
         --accept-new-key (or delete the line for {host} in {file}); nothing was sent"
    )]
    KeyChanged {
        host: String,
        old: String,
        new: String,
        file: PathBuf,
    },
    #[error("refused by the server: {reason}")]
    Refused { reason: String },
    #[error("{address} does not speak TLS: {reason}; nothing was sent")]
    NotTls { address: String, reason: String },
    #[error(transparent)]
    Insecure(#[from] SecurityError),
    #[error("TLS with {address}: {message}")]
    Tls { address: String, message: String },
    #[error("the known-hosts file: {0}")]
    KnownHosts(String),
    #[error("connection lost: {0}")]
    ConnectionLost(std::io::Error),
    #[error(transparent)]
    Cache(#[from] CacheError),
    #[error(transparent)]
    Runtime(#[from] sandbox::SetupError),
}

impl From<SessionError> for AppError {
    fn from(e: SessionError) -> Self {
        match e {
            SessionError::Cache(e) => Self::Cache(e),
            other => Self::Protocol(other.to_string()),
        }
    }
}

impl From<PacketReadError> for AppError {
    fn from(e: PacketReadError) -> Self {
        Self::Protocol(e.to_string())
    }
}

/// What happened, for the closing summary.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    pub stats: Stats,
    /// `core:run_script`s handled.
    pub scripts_run: u64,
    /// Contained Lua failures (scripts, handlers, timers).
    pub lua_errors: u64,
    /// From the start of connecting to every announced file present.
    pub files_complete_after: Option<Duration>,
    /// From the start of connecting to the end of the first module script.
    pub first_script_after: Option<Duration>,
    /// Bytes the Lua VM used at the end.
    pub lua_memory: usize,
    /// The world view's counters at the end.
    pub world: WorldStats,
    /// Replicated nodes known at the end.
    pub nodes_known: usize,
    /// The ASCII map, when asked for.
    pub ascii_map: Option<String>,
    /// Writing the PNG map, when asked for: the path or why it failed.
    pub map_png: Option<Result<PathBuf, String>>,
}

const READ_BUFFER: usize = 64 * 1024;
/// Longest wait between two looks at timers and quit time.
const MAX_WAIT: Duration = Duration::from_millis(100);
/// The same with a frontend, whose input must reach Lua within a frame.
const MAX_WAIT_WITH_FRONTEND: Duration = Duration::from_millis(4);

/// The connection: plain TCP or TLS over it.
enum Conn {
    Plain(TcpStream),
    Tls(Box<StreamOwned<ClientConnection, TcpStream>>),
}

impl Conn {
    fn tcp(&self) -> &TcpStream {
        match self {
            Self::Plain(stream) => stream,
            Self::Tls(stream) => stream.get_ref(),
        }
    }

    fn set_read_timeout(&self, timeout: Option<Duration>) -> std::io::Result<()> {
        self.tcp().set_read_timeout(timeout)
    }

    /// Ends our side: a TLS `close_notify`, then the socket's write side.
    fn shutdown_write(&mut self) {
        if let Self::Tls(stream) = self {
            stream.conn.send_close_notify();
            let _ = stream.flush();
        }
        let _ = self.tcp().shutdown(Shutdown::Write);
    }
}

impl Read for Conn {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Self::Plain(stream) => stream.read(buf),
            Self::Tls(stream) => stream.read(buf),
        }
    }
}

impl Write for Conn {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Self::Plain(stream) => stream.write(buf),
            Self::Tls(stream) => stream.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Self::Plain(stream) => stream.flush(),
            Self::Tls(stream) => stream.flush(),
        }
    }
}

/// Speaks TLS on `stream` or not, as [`transport`]'s rule decides for
/// the address it is connected to; says what became of the key. Nothing
/// has been sent yet, and with TLS nothing is until the handshake and the
/// pin check are done.
fn secure(stream: TcpStream, config: &Config) -> Result<Conn, AppError> {
    let peer = stream.peer_addr().map_err(AppError::ConnectionLost)?;
    let loopback = transport::counts_as_loopback(peer);
    let address = config.address.clone();
    let pin = match config.security().decide(loopback)? {
        Decision::Plaintext => {
            if loopback {
                config.log.log(
                    Level::Verbose,
                    "buildat-client",
                    &format!("plaintext to {address} ({peer}, loopback)"),
                );
            } else {
                config.log.log(
                    Level::Warning,
                    "buildat-client",
                    &format!(
                        "plaintext to {address} ({peer}) as --insecure-plaintext asks: anyone \
                         on the path can read and change what is said"
                    ),
                );
            }
            return Ok(Conn::Plain(stream));
        }
        Decision::Tls { pin: false } => None,
        Decision::Tls { pin: true } => Some(config.pins.as_ref().ok_or_else(|| {
            AppError::KnownHosts(
                "no known-hosts file to pin the server's key in: set BUILDAT_KNOWN_HOSTS, \
                 XDG_CONFIG_HOME or HOME, or pass --known-hosts FILE"
                    .into(),
            )
        })?),
    };
    let (stream, pinned) = tls::connect(stream, &address, pin, config.connect_timeout).map_err(
        |failure| match failure {
            TlsFailure::KeyChanged { old, new } => AppError::KeyChanged {
                host: crate::known_hosts::host_key(&address),
                old,
                new,
                file: pin.map(|p| p.known_hosts.clone()).unwrap_or_default(),
            },
            TlsFailure::NotTls(reason) => AppError::NotTls {
                address: address.clone(),
                reason: format!(
                    "{} ({})",
                    reason.unwrap_or_else(|| "it answered in plaintext".to_string()),
                    if loopback {
                        "on loopback, connect without tls:// or --tls"
                    } else {
                        "the client speaks TLS to any address but loopback; plaintext to one \
                         needs --insecure-plaintext, never with a password"
                    }
                ),
            },
            TlsFailure::Refused(reason) => AppError::Refused { reason },
            TlsFailure::KnownHosts(message) => AppError::KnownHosts(message),
            TlsFailure::Handshake(message) => AppError::Tls {
                address: address.clone(),
                message,
            },
        },
    )?;
    let file = pin
        .map(|p| p.known_hosts.display().to_string())
        .unwrap_or_default();
    match pinned {
        Pinned::Unpinned { fingerprint } => config.log.log(
            Level::Verbose,
            "buildat-client",
            &format!("TLS to {address} ({peer}, loopback): its key {fingerprint} is not pinned"),
        ),
        Pinned::Known => config.log.log(
            Level::Verbose,
            "buildat-client",
            &format!("TLS: the key of {address} is the one pinned in {file}"),
        ),
        Pinned::New { fingerprint } => config.log.log(
            Level::Info,
            "buildat-client",
            &format!(
                "TLS: first connection to {address}; its key {fingerprint} is now pinned in {file}"
            ),
        ),
        Pinned::Replaced { old, new } => config.log.log(
            Level::Warning,
            "buildat-client",
            &format!(
                "TLS: the key of {address} changed from {old} to {new}; accepted (--accept-new-key) and pinned in {file}"
            ),
        ),
    }
    Ok(Conn::Tls(Box::new(stream)))
}

struct Client {
    config: Config,
    stream: Conn,
    reader: PacketReader,
    writer: PacketWriter,
    session: Session,
    runtime: Runtime,
    started: Instant,
    summary: Summary,
    last_progress: Option<Instant>,
    outcome: Option<Outcome>,
}

/// Connects to the first address of `address` that answers.
fn connect(address: &str, timeout: Duration) -> Result<TcpStream, AppError> {
    let addrs: Vec<SocketAddr> = address
        .to_socket_addrs()
        .map_err(|source| AppError::Resolve {
            address: address.to_string(),
            source,
        })?
        .collect();
    let mut last = std::io::Error::new(ErrorKind::NotFound, "no addresses");
    for addr in addrs {
        match TcpStream::connect_timeout(&addr, timeout) {
            Ok(stream) => return Ok(stream),
            Err(e) => last = e,
        }
    }
    Err(AppError::Connect {
        address: address.to_string(),
        source: last,
    })
}

/// Runs one connection to the end. The summary is filled in either way.
pub fn run(config: Config) -> (Result<Outcome, AppError>, Summary) {
    let mut summary = Summary::default();
    let result = run_inner(config, &mut summary);
    (result, summary)
}

fn run_inner(config: Config, summary: &mut Summary) -> Result<Outcome, AppError> {
    let cache = Cache::open(&config.cache_dir)?.with_max_bytes(config.cache_max_bytes);
    let runtime = Runtime::new(sandbox::Options {
        memory_limit: config.memory_limit,
        time_limit: config.time_limit,
        client_name: config.name.clone(),
        log: config.log.clone(),
    })?;
    runtime.set_graphical(config.frontend.is_some());
    let started = Instant::now();
    config.security().check()?;
    let stream = connect(&config.address, config.connect_timeout)?;
    let _ = stream.set_nodelay(true);
    let stream = secure(stream, &config)?;
    stream
        .tcp()
        .set_write_timeout(Some(Duration::from_secs(30)))
        .map_err(AppError::ConnectionLost)?;
    config.log.log(
        Level::Verbose,
        "buildat-client",
        &format!("connected to {}", config.address),
    );
    let mut client = Client {
        config,
        stream,
        reader: PacketReader::default(),
        writer: PacketWriter::default(),
        session: Session::new(cache),
        runtime,
        started,
        summary: Summary::default(),
        last_progress: None,
        outcome: None,
    };
    client.login()?;
    let result = client.run();
    client.finish();
    client.tell_frontend(ToFrontend::Ended);
    *summary = client.summary.clone();
    result
}

impl Client {
    /// After the connection: exit hooks, maps, counters.
    fn finish(&mut self) {
        for error in self.runtime.run_exit_hooks() {
            self.lua_failed(&error);
        }
        self.summary.stats = self.session.stats();
        self.summary.lua_memory = self.runtime.used_memory();
        let nodes: Vec<[f64; 3]> = self.runtime.nodes().borrow().positions().collect();
        self.summary.nodes_known = nodes.len();
        let mut world = self.runtime.world().borrow_mut();
        if self.config.ascii_map || self.config.map_png.is_some() {
            let mut view = world.top_view(self.config.map_radius);
            view.mark_nodes(&nodes);
            if self.config.ascii_map {
                self.summary.ascii_map = Some(view.ascii());
            }
            if let Some(path) = &self.config.map_png {
                self.summary.map_png = Some(
                    view.write_png(path)
                        .map(|()| path.clone())
                        .map_err(|e| e.to_string()),
                );
            }
        }
        // After the maps: drawing them may decode chunks, and count bad ones.
        self.summary.world = world.stats();
    }

    /// Sends `main:login` when there is a password (before anything
    /// else, so the game knows who this is before the Lua joins).
    fn login(&mut self) -> Result<(), AppError> {
        let Some(password) = self.config.password.clone() else {
            return Ok(());
        };
        let login = Login {
            name: self.config.name.clone(),
            password,
        };
        let data = login
            .encode()
            .map_err(|e| AppError::Protocol(format!("--name: {e}")))?;
        self.writer
            .write(Login::NAME, &data)
            .map(drop)
            .map_err(|e| AppError::Protocol(e.to_string()))
    }

    fn log(&self, level: Level, message: &str) {
        self.config.log.log(level, "buildat-client", message);
    }

    fn run(&mut self) -> Result<Outcome, AppError> {
        let quit_at = self.config.quit_after.map(|d| self.started + d);
        let mut buffer = vec![0u8; READ_BUFFER];
        loop {
            let now = Instant::now();
            if quit_at.is_some_and(|t| now >= t) {
                self.close();
                return Ok(Outcome::QuitAfter);
            }
            self.run_timers(now);
            self.pump_frontend();
            if let Err(error) = self.flush() {
                return self.after_write_error(error);
            }
            if let Some(outcome) = self.outcome.take() {
                if matches!(
                    outcome,
                    Outcome::DisconnectRequested | Outcome::FrontendClosed
                ) {
                    self.close();
                }
                return Ok(outcome);
            }
            let mut wait = if self.config.frontend.is_some() {
                MAX_WAIT_WITH_FRONTEND
            } else {
                MAX_WAIT
            };
            for deadline in [quit_at, self.runtime.next_timer()].into_iter().flatten() {
                wait = wait.min(deadline.saturating_duration_since(now));
            }
            self.stream
                .set_read_timeout(Some(wait.max(Duration::from_millis(1))))
                .map_err(AppError::ConnectionLost)?;
            match self.stream.read(&mut buffer) {
                Ok(0) => {
                    return Ok(Outcome::DisconnectedByServer {
                        reason: "the server closed the connection without a reason".into(),
                    });
                }
                Ok(n) => {
                    self.reader.push(buffer.get(..n).unwrap_or_default());
                    self.process()?;
                }
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(AppError::ConnectionLost(e)),
            }
        }
    }

    /// Handles every whole packet received.
    fn process(&mut self) -> Result<(), AppError> {
        while let Some(packet) = self.reader.try_next_packet()? {
            let events = self.session.handle(&packet)?;
            for event in events {
                self.handle(event)?;
                if self.outcome.is_some() {
                    return Ok(());
                }
            }
            if self.runtime.disconnect_requested() {
                self.outcome = Some(Outcome::DisconnectRequested);
                return Ok(());
            }
        }
        self.show_progress(false);
        Ok(())
    }

    fn lua_failed(&mut self, error: &ScriptError) {
        self.summary.lua_errors += 1;
        self.config
            .log
            .log(Level::Error, &error.file, &error.message);
    }

    fn handle(&mut self, event: Event) -> Result<(), AppError> {
        match event {
            Event::Send { name, data } => {
                self.writer
                    .write(name, &data)
                    .map_err(|e| AppError::Protocol(e.to_string()))?;
            }
            Event::FileReady { name, content } => {
                if name.contains("/client_lua/") {
                    self.runtime.set_file(&name, &content);
                } else if name.contains("/client_data/") {
                    self.tell_frontend(ToFrontend::File {
                        name,
                        content: content.into(),
                    });
                }
            }
            Event::FileRemoved { name } => self.runtime.remove_file(&name),
            Event::FilesComplete { first } => {
                self.show_progress(true);
                if first {
                    self.summary.files_complete_after = Some(self.started.elapsed());
                    self.start_bot();
                }
            }
            Event::RunScript { name } => {
                self.summary.scripts_run += 1;
                self.log(Level::Verbose, &format!("running {name}"));
                if let Err(error) = self.runtime.run_script(&name) {
                    self.lua_failed(&error);
                }
                if self.summary.first_script_after.is_none() {
                    self.summary.first_script_after = Some(self.started.elapsed());
                }
            }
            Event::Packet { name, data } => {
                if name == LoggedIn::NAME
                    && let Ok(logged_in) = LoggedIn::decode(&data)
                {
                    self.log(
                        Level::Info,
                        &format!("logged in as {}", crate::terminal::escape(&logged_in.name)),
                    );
                }
                if WorldView::is_world_packet(&name) {
                    let mut world = self.runtime.world().borrow_mut();
                    let result = world.handle_packet(&name, &data);
                    let warnings = world.take_warnings();
                    drop(world);
                    match result {
                        Ok(handled) => {
                            self.log(Level::Debug, &format!("{name}: {handled:?}"));
                            self.forward_world_change(&handled);
                        }
                        Err(error) => self.log(Level::Warning, &format!("ignored: {error}")),
                    }
                    for warning in warnings {
                        self.log(Level::Warning, &warning);
                    }
                }
                if NodeView::is_nodes_packet(&name) {
                    let result = self.runtime.nodes().borrow_mut().handle_packet(&data);
                    match result {
                        Ok(applied) => {
                            for warning in &applied.warnings {
                                self.log(Level::Warning, warning);
                            }
                            for error in self.runtime.dispatch_nodes(&applied) {
                                self.lua_failed(&error);
                            }
                        }
                        Err(error) => self.log(Level::Warning, &format!("ignored: {error}")),
                    }
                }
                for error in self.runtime.dispatch_packet(&name, &data) {
                    self.lua_failed(&error);
                }
            }
            Event::Disconnected { reason } => {
                self.outcome = Some(Outcome::DisconnectedByServer { reason });
            }
            Event::Warning(message) => self.log(Level::Warning, &message),
        }
        if self.runtime.disconnect_requested() && self.outcome.is_none() {
            self.outcome = Some(Outcome::DisconnectRequested);
        }
        Ok(())
    }

    /// Sends `message` to the frontend, if one is attached (and still
    /// there: a frontend that went away is the window closing, seen by
    /// [`Client::pump_frontend`]).
    fn tell_frontend(&self, message: ToFrontend) {
        if let Some(link) = &self.config.frontend {
            let _ = link.to_frontend.send(message);
        }
    }

    /// Forwards what a stream packet changed to the frontend.
    fn forward_world_change(&mut self, handled: &Handled) {
        if self.config.frontend.is_none() {
            return;
        }
        let mut world = self.runtime.world().borrow_mut();
        let mut messages = Vec::new();
        let chunk_message = |world: &mut WorldView, chunk| {
            world.chunk_values(chunk).map(|values| ToFrontend::Chunk {
                chunk,
                voxels: values.into(),
            })
        };
        match *handled {
            Handled::Registry { .. } => {
                messages.push(ToFrontend::Registry(world.registry().clone()));
                // Held chunks were re-mapped to the new ids.
                for chunk in world.held_chunks() {
                    messages.extend(chunk_message(&mut world, chunk));
                }
            }
            Handled::Chunk { chunk, .. }
            | Handled::Voxels {
                chunk, held: true, ..
            } => messages.extend(chunk_message(&mut world, chunk)),
            Handled::Light { chunk, held: true } => {
                if let Some(light) = world.chunk_light(chunk) {
                    messages.push(ToFrontend::Light { chunk, light });
                }
            }
            Handled::Unload { chunk, held: true } => messages.push(ToFrontend::Unload { chunk }),
            _ => {}
        }
        drop(world);
        for message in messages {
            self.tell_frontend(message);
        }
    }

    /// Passes the frontend's input to Lua and Lua's UI changes back.
    fn pump_frontend(&mut self) {
        let Some(link) = &self.config.frontend else {
            return;
        };
        let mut input = Vec::new();
        let mut closed = false;
        loop {
            match link.from_frontend.try_recv() {
                Ok(message) => input.push(message),
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    closed = true;
                    break;
                }
            }
        }
        for message in input {
            let errors = match message {
                FromFrontend::Key { key, pressed } => self.runtime.dispatch_key(&key, pressed),
                FromFrontend::Click { button, target } => {
                    self.runtime.dispatch_click(button, target)
                }
                FromFrontend::Moved(position) => self.runtime.dispatch_move(position),
                FromFrontend::Quit => {
                    self.outcome.get_or_insert(Outcome::FrontendClosed);
                    Vec::new()
                }
                widget => self.runtime.dispatch_ui(&widget),
            };
            for error in errors {
                self.lua_failed(&error);
            }
        }
        if closed {
            self.outcome.get_or_insert(Outcome::FrontendClosed);
        }
        if let Some(state) = self.runtime.take_ui_change() {
            self.tell_frontend(ToFrontend::Ui(state));
        }
    }

    fn start_bot(&mut self) {
        let Some((name, source)) = self.config.script.clone() else {
            return;
        };
        self.log(Level::Verbose, &format!("running bot script {name}"));
        if let Err(error) = self.runtime.run_trusted(&name, &source) {
            self.lua_failed(&error);
        }
    }

    fn run_timers(&mut self, now: Instant) {
        if self.runtime.next_timer().is_some_and(|t| t <= now) {
            for error in self.runtime.run_due_timers(now) {
                self.lua_failed(&error);
            }
            if self.runtime.disconnect_requested() && self.outcome.is_none() {
                self.outcome = Some(Outcome::DisconnectRequested);
            }
        }
    }

    /// Writes what the session and Lua queued, and one `voxelworld:ack`
    /// for the chunks processed since the last one (unless acking is
    /// paused).
    fn flush(&mut self) -> Result<(), AppError> {
        for (name, data) in self.runtime.take_outgoing() {
            self.writer
                .write(&name, &data)
                .map_err(|e| AppError::Protocol(format!("cannot send {name}: {e}")))?;
        }
        let ack = self.runtime.world().borrow_mut().take_ack_packet();
        if let Some(ack) = ack {
            let data = ack
                .encode()
                .map_err(|e| AppError::Protocol(format!("cannot send {}: {e}", Ack::NAME)))?;
            self.writer
                .write(Ack::NAME, &data)
                .map_err(|e| AppError::Protocol(format!("cannot send {}: {e}", Ack::NAME)))?;
        }
        let bytes = self.writer.take();
        if !bytes.is_empty() {
            self.stream
                .write_all(&bytes)
                .map_err(AppError::ConnectionLost)?;
        }
        Ok(())
    }

    /// A write failed: the server may have closed the connection after
    /// saying why (a kick, a ban, a shutdown), and its goodbye may still be
    /// unread. Reads what is left for a moment and reports the server's
    /// reason when one is there, else the write's error.
    fn after_write_error(&mut self, error: AppError) -> Result<Outcome, AppError> {
        if !matches!(error, AppError::ConnectionLost(_)) {
            return Err(error);
        }
        let until = Instant::now() + Duration::from_millis(200);
        let mut buffer = vec![0u8; READ_BUFFER];
        while self.outcome.is_none() && Instant::now() < until {
            let _ = self
                .stream
                .set_read_timeout(Some(Duration::from_millis(20)));
            match self.stream.read(&mut buffer) {
                Ok(0) => break,
                Ok(n) => {
                    self.reader.push(buffer.get(..n).unwrap_or_default());
                    if self.process().is_err() {
                        break;
                    }
                }
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        match self.outcome.take() {
            Some(outcome @ Outcome::DisconnectedByServer { .. }) => Ok(outcome),
            _ => Err(error),
        }
    }

    /// Ends the connection from our side: what is queued is sent, then the
    /// write side is shut and the server's remaining bytes drained briefly
    /// (closing with unread data would reset the connection).
    fn close(&mut self) {
        let _ = self.flush();
        self.stream.shutdown_write();
        let until = Instant::now() + Duration::from_millis(500);
        let mut buffer = vec![0u8; READ_BUFFER];
        while Instant::now() < until {
            let _ = self
                .stream
                .set_read_timeout(Some(Duration::from_millis(50)));
            match self.stream.read(&mut buffer) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                Err(_) => break,
            }
        }
    }

    /// `receiving files: X / Y KiB (N pending)` once every file was
    /// announced, then at most once a second, and a last line when
    /// everything is there.
    fn show_progress(&mut self, done: bool) {
        let p = self.session.progress();
        if p.bytes_requested == 0 {
            return;
        }
        let now = Instant::now();
        if done {
            self.log(
                Level::Info,
                &format!(
                    "files received: {} KiB in {:.1} s",
                    p.bytes_received.div_ceil(1024),
                    self.started.elapsed().as_secs_f64()
                ),
            );
            self.last_progress = Some(now);
            return;
        }
        if p.files_pending == 0
            || !self.session.all_announced()
            || self
                .last_progress
                .is_some_and(|t| now.duration_since(t) < Duration::from_secs(1))
        {
            return;
        }
        self.last_progress = Some(now);
        self.log(
            Level::Info,
            &format!(
                "receiving files: {} / {} KiB ({} pending)",
                p.bytes_received.div_ceil(1024),
                p.bytes_requested.div_ceil(1024),
                p.files_pending
            ),
        );
    }
}
