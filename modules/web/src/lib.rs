//! `web`: the operator's web page, served by the module itself.
//!
//! Owns: an HTTP/1.1 server (hyper, on the module's own tokio runtime:
//! `http.rs`) listening on `web.listen` (default `127.0.0.1:20080`;
//! loopback only unless the operator names another address), started on
//! `core:start` and `core:continue`, shut down and joined on unload, so it
//! survives `reload web`; the pages it serves: the status page and its JSON
//! (`status.rs`: uptime, players and their positions, modules with their
//! state, build id and queue, tick time, world size on disk), `/metrics`
//! in the Prometheus text format (`metrics.rs`), the live map (`map.rs`:
//! tiles drawn from the world's column tops, one `column_tops` call per
//! tile, cached and redrawn when their chunks change; `assets/map.js`
//! draws them with pan, zoom and player markers), and admin actions
//! (`admin.rs`: reload a module, kick a player, save the world) behind a
//! token kept in `<world>/web-token.txt`, sent only as `Authorization:
//! Bearer TOKEN`. Who may see what (`access.rs`): every request's `Host`
//! must name this server (a loopback name, an IP address, the listen
//! address's name or one of `web.hostnames`), so a stranger's web page
//! cannot rebind its own name to this address; read-only pages are open to
//! loopback clients, others need the token (as the header, or the cookie
//! `/login` sets for a browser) unless `web.public=true`. What a client
//! may cost (`limits.rs`): at most `web.max_connections` connections
//! (three quarters of them for clients off loopback, 16 for one address
//! off loopback; more are closed at once), a request rate for each
//! address off loopback, and the map's share of the world's time
//! (`map.rs`), spent by pages' new blocks and refreshes alike. Off
//! loopback the page speaks HTTPS (`tls.rs`: the game port's certificate
//! or `web.tls_cert`/`web.tls_key`) unless `web.insecure_http=true`.
//! The module counts the reloads it sees (a module's load time changing in
//! the core's `list_modules`, looked at every 2 s and for every page) for
//! `/metrics`.
//! Does not own: any of the figures it shows (each comes from the module
//! owning it through that module's API: the core's `list_modules`,
//! network's, voxelworld's, main's and replicate's `get_stats` calls), the
//! world, players or sockets of players.
//!
//! Settings: [`WebSettings`] declares every `web.*` key with its type,
//! default and help (`buildat-server settings` lists them); no server runs
//! headless.

pub mod access;
pub mod admin;
pub mod http;
pub mod limits;
pub mod live;
pub mod map;
pub mod metrics;
pub mod status;
pub mod tls;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use buildat_interface::settings::Settings as _;
use buildat_interface::{
    Host, Module, ModuleError, Receive, Stash, UnloadKind, config, events, export_module, log,
};
use buildat_voxelworld_api::NodeVolumeUpdated;
use serde::{Deserialize, Serialize};

/// The default address: loopback only.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:20080";

/// What the HTTP side and the module's thread share.
pub struct Shared {
    pub host: Host,
    pub settings: Settings,
    /// The admin token (from `<world>/web-token.txt`).
    pub token: String,
    /// The value of the cookie `/login` sets (derived from the token; it
    /// opens the read-only pages, never an admin action).
    pub view_key: String,
    /// When this module was first started in this server run (kept across
    /// reloads), for uptime.
    pub started_unix_ms: AtomicU64,
    pub started: Instant,
    pub map: map::MapState,
    /// The map's live feed (`/api/live`).
    pub live: live::Live,
    /// Counters the module keeps itself.
    pub counters: Mutex<Counters>,
    /// The players as last asked of the world, and when: the live feed
    /// asks once a second while a page listens, `/api/players` is answered
    /// from this for half a second.
    pub players: Mutex<Option<(Instant, Arc<Vec<status::Player>>)>>,
}

impl Shared {
    pub fn counters(&self) -> MutexGuard<'_, Counters> {
        self.counters.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// When this module first started in this server run.
    pub fn started_unix_ms(&self) -> u64 {
        self.started_unix_ms.load(Ordering::Relaxed)
    }
}

/// Counts kept by this module, carried across its reloads.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Counters {
    /// Reloads of each module seen (its load time changed).
    pub reloads: BTreeMap<String, u64>,
    /// Each module's load time as last seen.
    pub loaded_at: BTreeMap<String, u64>,
    /// Tiles drawn and the time spent drawing them (seconds).
    pub tiles_rendered: u64,
    pub tile_seconds: f64,
    /// Tiles that could not be drawn (answered 503), and when the last
    /// warning about them was logged.
    pub tile_failures: u64,
    #[serde(skip)]
    pub tile_failure_warned: Option<std::time::Instant>,
    /// Column tops fetched from the world (calls) and their time.
    pub tops_calls: u64,
    pub tops_seconds: f64,
    /// Requests answered and admin actions done.
    pub requests: u64,
    pub admin_actions: u64,
}

buildat_interface::settings! {
    /// What operators set (`--set web.KEY=VALUE`); checked into
    /// [`Settings`].
    pub struct WebSettings in "web" {
        /// Address the page listens on (loopback only unless named); off: none.
        pub listen: String = DEFAULT_LISTEN.to_string(),
        /// true: the read-only pages open to everyone, not only loopback and token holders.
        pub public: bool = false,
        /// More names the page answers to, comma-separated.
        pub hostnames: String = String::new(),
        /// Connections open at once (1 or more).
        pub max_connections: usize = 64,
        /// true: plain HTTP off loopback too (the token crosses readable).
        pub insecure_http: bool = false,
        /// HTTPS certificate (PEM) relative to the world; unset: the game port's.
        pub tls_cert: Option<String> = None,
        /// HTTPS key (PEM) relative to the world, set with web.tls_cert.
        pub tls_key: Option<String> = None,
        /// Highest voxel searched for a column's top on the map.
        pub map_top: i32 = 127,
        /// Lowest voxel searched for a column's top on the map.
        pub map_bottom: i32 = -64,
        /// Share of the world module's time the map may spend (above 0, at most 1).
        pub map_share: f64 = map::MAP_SHARE,
    }
}

#[derive(Debug, Clone)]
pub struct Settings {
    /// `None`: no server (headless, or `web.listen=off`).
    pub listen: Option<String>,
    pub public: bool,
    /// `web.hostnames`: more names the page answers to.
    pub hostnames: Vec<String>,
    /// `web.max_connections`.
    pub max_connections: usize,
    /// `web.insecure_http`: plain HTTP off loopback.
    pub insecure_http: bool,
    /// `web.tls_cert` and `web.tls_key` (relative to the world folder).
    pub tls_cert: Option<String>,
    pub tls_key: Option<String>,
    pub map_top: i32,
    pub map_bottom: i32,
    /// `web.map_share`: the share of the world's time the map may spend.
    pub map_share: f64,
}

impl Settings {
    /// The settings `set` declares, checked; no server when `headless`.
    pub fn check_from(set: WebSettings, headless: bool) -> Result<Self, ModuleError> {
        let listen = (!headless && set.listen != "off").then_some(set.listen);
        let settings = Settings {
            listen,
            public: set.public,
            hostnames: access::parse_hostnames(&set.hostnames),
            max_connections: set.max_connections,
            insecure_http: set.insecure_http,
            tls_cert: set.tls_cert,
            tls_key: set.tls_key,
            map_top: set.map_top,
            map_bottom: set.map_bottom,
            map_share: set.map_share,
        };
        if settings.map_top < settings.map_bottom
            || settings.map_top - settings.map_bottom >= buildat_voxelworld_api::MAX_COLUMN_HEIGHT
        {
            return Err(ModuleError::msg(format!(
                "web.map_top must be above web.map_bottom, by less than {}",
                buildat_voxelworld_api::MAX_COLUMN_HEIGHT
            )));
        }
        if !(settings.map_share > 0.0 && settings.map_share <= 1.0) {
            return Err(ModuleError::msg(
                "web.map_share is a share of the world's time: above 0, at most 1",
            ));
        }
        if settings.max_connections == 0 {
            return Err(ModuleError::msg("web.max_connections must be 1 or more"));
        }
        if settings.tls_cert.is_some() != settings.tls_key.is_some() {
            return Err(ModuleError::msg(
                "web.tls_cert and web.tls_key are set together",
            ));
        }
        Ok(settings)
    }
}

pub fn now_unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

impl Counters {
    /// Counts the modules whose load time changed since last seen loaded
    /// (one in the middle of a reload is looked at once it is loaded).
    pub fn note_modules(&mut self, modules: &[buildat_interface::core_api::ModuleInfo]) {
        let loaded = modules
            .iter()
            .filter(|m| m.state == buildat_interface::core_api::ModuleState::Loaded);
        for module in loaded {
            let previous = self
                .loaded_at
                .insert(module.name.clone(), module.loaded_at_unix_ms);
            if previous.is_some_and(|at| at != module.loaded_at_unix_ms) {
                *self.reloads.entry(module.name.clone()).or_default() += 1;
            }
        }
    }
}

/// What crosses `reload web`.
#[derive(Serialize, Deserialize)]
struct WebStash {
    started_unix_ms: u64,
    counters: Counters,
}

impl Stash for WebStash {
    const LAYOUT: u32 = 2;
}

struct Web {
    host: Host,
    shared: Arc<Shared>,
    server: Option<http::Server>,
}

impl Web {
    /// On `core:start` and `core:continue`: the counters of the server run
    /// go on, then the page is served.
    fn start(&mut self) -> Result<(), ModuleError> {
        if let Some(stash) = self.host.take_stash::<WebStash>()? {
            // The uptime and counters of the server run go on.
            self.shared
                .started_unix_ms
                .store(stash.started_unix_ms, Ordering::Relaxed);
            *self.shared.counters() = stash.counters;
        }
        if let Ok(modules) = self.host.call(&buildat_interface::core_api::ListModules {}) {
            self.shared.counters().note_modules(&modules);
        }
        self.start_server()
    }

    fn start_server(&mut self) -> Result<(), ModuleError> {
        let Some(listen) = self.shared.settings.listen.clone() else {
            log::info!("no web page: the server runs headless or web.listen is off");
            return Ok(());
        };
        match http::Server::start(self.shared.clone(), &listen) {
            Ok(server) => {
                log::info!(
                    "web page at {}://{}/ (map at /map, metrics at /metrics)",
                    server.scheme,
                    server.address
                );
                self.server = Some(server);
            }
            // The game goes on without its web page: a port in use is the
            // operator's to fix, not a reason to stop the server.
            Err(error) => log::error!("no web page: cannot serve on {listen}: {error}"),
        }
        Ok(())
    }
}

impl Module for Web {
    fn create(host: Host) -> Result<Self, ModuleError> {
        let headless = host.get_config(config::HEADLESS).is_some_and(|v| v == "1");
        let settings = Settings::check_from(WebSettings::read(&host)?, headless)?;
        let token = admin::load_or_create_token(&host.world_path())
            .map_err(|e| ModuleError::msg(e.to_string()))?;
        let view_key = access::view_key(&token);
        let map = map::MapState::new(settings.map_share);
        Ok(Self {
            host,
            shared: Arc::new(Shared {
                host,
                settings,
                token,
                view_key,
                started_unix_ms: AtomicU64::new(now_unix_ms()),
                started: Instant::now(),
                map,
                live: live::Live::default(),
                counters: Mutex::new(Counters::default()),
                players: Mutex::new(None),
            }),
            server: None,
        })
    }

    fn receive(table: &mut Receive<Self>) {
        table
            .settings::<WebSettings>()
            .event(|web, _: events::Start| web.start())
            .event(|web, _: events::Continue| web.start())
            .event(|web, updated: NodeVolumeUpdated| {
                web.shared.map.chunk_changed(updated.chunk);
                Ok(())
            });
    }

    fn unload(&mut self, kind: UnloadKind) -> Result<(), ModuleError> {
        if let Some(server) = self.server.take() {
            server.stop();
        }
        if kind == UnloadKind::Reload {
            let counters = self.shared.counters().clone();
            self.host.store_stash(&WebStash {
                started_unix_ms: self.shared.started_unix_ms(),
                counters,
            })?;
        }
        Ok(())
    }
}

export_module!(Web);

#[cfg(test)]
mod tests {
    use buildat_interface::settings::Settings as _;

    use super::*;

    fn read(values: &[(&str, &str)]) -> Result<WebSettings, ModuleError> {
        Ok(WebSettings::read_with(|key| {
            values
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| v.to_string())
        })?)
    }

    #[test]
    fn the_table_subscribes_declares_and_carries_the_run_over_a_reload() {
        use buildat_interface::Event as _;
        use buildat_interface::core_api::DeclareSettings;
        use buildat_interface::testing::TestHost;
        let world = std::env::temp_dir().join(format!("buildat-web-kit-{}", std::process::id()));
        std::fs::create_dir_all(&world).unwrap();
        let kit = TestHost::new()
            .config("web.listen", "off")
            .world_path(&world);
        let mut web = kit.load::<Web>().unwrap();
        assert!(
            kit.subscriptions()
                .contains(&NodeVolumeUpdated::NAME.to_string())
        );
        let declared = kit.calls::<DeclareSettings>();
        assert_eq!(declared.len(), 1);
        assert_eq!(declared[0].namespace, "web");
        assert_eq!(declared[0].settings, WebSettings::describe());
        web.emit(&NodeVolumeUpdated {
            node_id: 1,
            chunk: [0, 0, 0],
        })
        .unwrap();
        let malformed = web.emit_raw(NodeVolumeUpdated::NAME, &[1]).unwrap_err();
        assert!(
            malformed.to_string().contains(NodeVolumeUpdated::NAME),
            "{malformed}"
        );
        web.module()
            .shared
            .started_unix_ms
            .store(42, Ordering::Relaxed);
        let web = web.reload::<Web>().unwrap();
        assert_eq!(
            web.module().shared.started_unix_ms(),
            42,
            "the run's uptime goes on"
        );
        assert_eq!(
            kit.calls::<DeclareSettings>().len(),
            2,
            "declared again on continue"
        );
        drop(web);
        let _ = std::fs::remove_dir_all(&world);
    }

    #[test]
    fn settings_are_declared_read_and_checked() {
        let declared = WebSettings::describe();
        assert_eq!(declared.len(), 10);
        assert!(declared.iter().all(|s| !s.help.is_empty()));
        let defaults = Settings::check_from(read(&[]).unwrap(), false).unwrap();
        assert_eq!(defaults.listen.as_deref(), Some(DEFAULT_LISTEN));
        assert_eq!(defaults.max_connections, 64);
        assert_eq!((defaults.map_top, defaults.map_bottom), (127, -64));
        assert_eq!(
            Settings::check_from(read(&[]).unwrap(), true)
                .unwrap()
                .listen,
            None
        );
        let off = read(&[("web.listen", "off"), ("web.hostnames", "a.org, b:1")]).unwrap();
        let off = Settings::check_from(off, false).unwrap();
        assert_eq!(off.listen, None);
        assert_eq!(off.hostnames, ["a.org", "b"]);
        for bad in [
            ("web.max_connections", "0"),
            ("web.map_share", "2"),
            ("web.map_top", "-100"),
            ("web.tls_cert", "cert.pem"),
        ] {
            let set = read(&[bad]).unwrap();
            assert!(Settings::check_from(set, false).is_err(), "{bad:?}");
        }
        let error = read(&[("web.public", "yes")]).unwrap_err().to_string();
        assert!(
            error.contains("web.public") && error.contains("bool"),
            "{error}"
        );
    }
}
