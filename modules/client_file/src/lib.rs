//! `client_file`: ships every module's client Lua and data to clients by
//! content hash.
//!
//! Owns: the file registry (`registry.rs`: every module's `client_lua/` and
//! `client_data/`, registered as `<module>/<folder>/<path>` when it loads and
//! withdrawn when it unloads, plus files added by calls), each connected
//! client's transfer state, the pump thread that sends file pieces
//! round-robin across clients while each client's network backlog stays
//! below a high-water mark (so a big file never stalls others or trips the
//! network module's "not reading" limit), and after a client has every file,
//! `client_file:files_transmitted` and one `core:run_script` per loaded
//! module's `client_lua/init.lua`, in load order. A file edited on disk
//! (`core:module_modified`) is re-hashed and re-announced to everyone.
//!
//! What a client can make it hold is bounded and charged to that client:
//! a request for a file already queued for it is ignored (so its queue
//! holds each registered file at most once), a request name over the
//! limit is malformed (the client is dropped and the name is never echoed),
//! refusals are logged a few per client per 10 s, and a client whose
//! backlog stays over the high-water mark for `client_file.stall_timeout_ms`
//! is dropped as not reading. Settings: `ClientFileSettings` declares them
//! with their defaults (the high-water mark `client_file.max_backlog_bytes`
//! is never over a third of `network.max_queue_bytes`).
//! Does not own: sockets (`network`) or the packet bytes
//! (`buildat_format::protocol`, documented in docs/protocol.md).
//!
//! Calls: `add_file_content`, `add_file_path`, `remove_file`, `list_files`.

mod registry;

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use buildat_client_file_api::{
    AddFileContent, AddFilePath, AllFilesTransferred, AnnounceFile, ContentHash, FileContent,
    FileError, FileInfo, FilesTransmitted, ListFiles, MAX_FILE_PIECE, RemoveFile, RemoveFilePacket,
    RequestFile, RunScript, TellAfterAllFilesTransferred,
};
use buildat_format::Packet;
use buildat_interface::core_api::{ListModules, ModuleInfo, ModuleState};
use buildat_interface::log_limit::{LogLimiter, suppressed_note};
use buildat_interface::settings::Settings as _;
use buildat_interface::{
    Host, Module, ModuleError, Receive, Stash, UnloadKind, events, export_module, log,
};
use buildat_network_api::{
    self as network, ClientConnected, ClientDisconnected, GetBacklog, OutgoingPacket, PeerId,
    ReceivePackets, SendBatch, SendShared, SharedPacket,
};
pub use registry::{Registry, check_name};
use serde::{Deserialize, Serialize};

/// The network module's default limit of a client's backlog (setting
/// `network.max_queue_bytes`): a client past it is dropped as not reading.
const NETWORK_QUEUE_LIMIT: u64 = 32 << 20;
/// Bytes sent to one client per round of the pump (one network call).
const ROUND_BYTES: usize = 1 << 20;

buildat_interface::settings! {
    /// What operators set (`--set client_file.KEY=VALUE`).
    struct ClientFileSettings in "client_file" {
        /// High-water mark of a client's backlog, in bytes (never over a third of network.max_queue_bytes).
        max_backlog_bytes: u64 = 4 << 20,
        /// A client whose backlog stays over the high-water mark this long is dropped, in ms.
        stall_timeout_ms: u64 = 20_000,
    }
}

#[derive(Debug, Serialize, Deserialize)]
struct Transfer {
    name: String,
    hash: ContentHash,
    offset: usize,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct PeerFiles {
    queue: VecDeque<Transfer>,
    /// Has answered `core:all_files_transferred` once.
    transmitted: bool,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct State {
    registry: Registry,
    peers: BTreeMap<PeerId, PeerFiles>,
}

impl Stash for State {
    const LAYOUT: u32 = 1;
}

struct Shared {
    host: Host,
    /// A client whose network backlog passes this is paused (a third of the
    /// network module's limit)...
    high_water: u64,
    /// ...until it drains below this.
    low_water: u64,
    /// A client paused this long without draining is dropped as not reading.
    stall_timeout: Duration,
    state: Mutex<State>,
    work: Condvar,
    stop: AtomicBool,
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sends a packet to a peer, logging a failure (a peer that left).
    fn send_or_log<P: Packet>(&self, peer: PeerId, packet: &P) {
        let sent = OutgoingPacket::new(packet)
            .map_err(ModuleError::from)
            .and_then(|packet| self.host.call(&network::SendPacket { peer, packet }));
        if let Err(error) = sent {
            log::warn!("sending {} to peer {peer}: {error}", P::NAME);
        }
    }

    /// Sends a packet to every connected client in one call.
    fn broadcast<P: Packet>(&self, packet: &P) {
        if let Err(error) = network::broadcast(&self.host, packet) {
            log::warn!("broadcasting {}: {error}", P::NAME);
        }
    }

    /// Tells every connected client about a new or changed file.
    fn announce_to_all(&self, name: &str) {
        let announce = {
            let state = self.state();
            let Some(entry) = state.registry.get(name) else {
                return;
            };
            AnnounceFile {
                name: name.to_string(),
                hash: entry.hash,
                size: entry.content.len() as u64,
            }
        };
        self.broadcast(&announce);
    }

    fn withdraw_from_all(&self, names: &[String]) {
        for name in names {
            self.broadcast(&RemoveFilePacket { name: name.clone() });
        }
    }

    /// The next piece for `peer` (its data a range of the file's shared
    /// buffer, not a copy), or an error packet for a transfer whose file
    /// changed or vanished since it was requested.
    fn next_piece(host: &Host, state: &mut State, peer: PeerId) -> Option<SharedPacket> {
        let State { registry, peers } = state;
        let transfer = peers.get_mut(&peer)?.queue.front_mut()?;
        let piece = match registry.get(&transfer.name).map(|entry| entry.hash) {
            Some(hash) if hash == transfer.hash => {
                Self::piece(host, registry, transfer).map_err(|e| e.to_string())
            }
            _ => {
                transfer.offset = usize::MAX;
                let error = FileError {
                    name: transfer.name.clone(),
                    message: "the file changed or was withdrawn during the transfer; its new state was announced"
                        .into(),
                };
                SharedPacket::whole(&error).map_err(|e| e.to_string())
            }
        };
        let finished = registry
            .get(&transfer.name)
            .is_none_or(|entry| transfer.offset >= entry.content.len());
        if finished && let Some(files) = peers.get_mut(&peer) {
            files.queue.pop_front();
        }
        match piece {
            Ok(piece) => Some(piece),
            Err(error) => {
                log::error!("encoding a file piece for peer {peer}: {error}");
                None
            }
        }
    }

    /// The piece of `transfer`'s file at its offset, which it moves past.
    fn piece(
        host: &Host,
        registry: &mut Registry,
        transfer: &mut Transfer,
    ) -> Result<SharedPacket, ModuleError> {
        let content = registry
            .share(&transfer.name, |bytes| host.share_bytes(bytes))
            .ok_or_else(|| ModuleError::msg(format!("{} is not registered", transfer.name)))??;
        let start = transfer.offset.min(content.len());
        let end = (start + MAX_FILE_PIECE).min(content.len());
        transfer.offset = end;
        let head = FileContent::encode_head(
            &transfer.name,
            &transfer.hash,
            content.len() as u64,
            start as u64,
            end - start,
        )?;
        let body = content
            .get(start..end)
            .ok_or_else(|| ModuleError::msg("a piece past the file's end"))??;
        Ok(SharedPacket {
            name: FileContent::NAME.to_string(),
            head,
            body: Some(body),
        })
    }

    /// Sends file pieces until told to stop: up to [`ROUND_BYTES`] per client
    /// per round,
    /// skipping clients whose backlog is over the high-water mark.
    fn pump(self: Arc<Self>) {
        // Paused clients, with when they were paused.
        let mut paused: BTreeMap<PeerId, Instant> = BTreeMap::new();
        while !self.stop.load(Ordering::Acquire) {
            paused.retain(|peer, since| {
                let backlog = self.host.call(&GetBacklog { peer: *peer }).ok();
                let still = backlog.is_some_and(|b| b >= self.low_water);
                if still && since.elapsed() >= self.stall_timeout {
                    self.drop_stalled(*peer);
                    return false;
                }
                still
            });
            let batches: Vec<(PeerId, Vec<SharedPacket>)> = {
                let mut state = self.state();
                let peers: Vec<PeerId> = state
                    .peers
                    .iter()
                    .filter(|(peer, files)| !files.queue.is_empty() && !paused.contains_key(peer))
                    .map(|(peer, _)| *peer)
                    .collect();
                if peers.is_empty() {
                    if paused.is_empty() {
                        let _ = self.work.wait_timeout(state, Duration::from_millis(100));
                    } else {
                        drop(state);
                        std::thread::sleep(Duration::from_micros(200));
                    }
                    continue;
                }
                peers
                    .into_iter()
                    .map(|peer| (peer, Self::next_batch(&self.host, &mut state, peer)))
                    .collect()
            };
            for (peer, packets) in batches {
                let sent = self.host.call(&SendShared { peer, packets });
                match sent {
                    Ok(backlog) if backlog > self.high_water => {
                        paused.insert(peer, Instant::now());
                    }
                    Ok(_) => {}
                    Err(error) => {
                        log::warn!("file transfer to peer {peer} stopped: {error}");
                        if let Some(files) = self.state().peers.get_mut(&peer) {
                            files.queue.clear();
                        }
                    }
                }
            }
        }
    }

    /// Drops a client that has not drained its backlog for the stall timeout.
    fn drop_stalled(&self, peer: PeerId) {
        let reason = format!(
            "not reading its files: backlog over {} bytes for {} s",
            self.low_water,
            self.stall_timeout.as_secs_f64()
        );
        log::warn!("peer {peer}: {reason}; disconnecting it");
        if let Some(files) = self.state().peers.get_mut(&peer) {
            files.queue.clear();
        }
        let _ = self.host.call(&network::Disconnect { peer, reason });
    }

    /// Pieces for `peer` up to [`ROUND_BYTES`], possibly of several files.
    fn next_batch(host: &Host, state: &mut State, peer: PeerId) -> Vec<SharedPacket> {
        let mut packets = Vec::new();
        let mut bytes = 0;
        while bytes < ROUND_BYTES {
            let Some(packet) = Self::next_piece(host, state, peer) else {
                break;
            };
            bytes += packet.len();
            packets.push(packet);
        }
        packets
    }
}

struct ClientFile {
    host: Host,
    shared: Arc<Shared>,
    pump: Option<JoinHandle<()>>,
    /// Refused requests are logged a few per client per window.
    refusal_log: LogLimiter<PeerId>,
}

impl ClientFile {
    fn modules(&self) -> Result<Vec<ModuleInfo>, ModuleError> {
        let mut modules = self.host.call(&ListModules {})?;
        modules.retain(|m| m.state == ModuleState::Loaded);
        modules.sort_by_key(|m| m.load_index);
        Ok(modules)
    }

    fn module_dir(&self, name: &str) -> Result<PathBuf, ModuleError> {
        let modules: Vec<ModuleInfo> = self.host.call(&ListModules {})?;
        modules
            .into_iter()
            .find(|m| m.name == name)
            .map(|m| PathBuf::from(m.path))
            .ok_or_else(|| ModuleError::msg(format!("module {name} is not known to the core")))
    }

    /// Registers a module's client files, announcing new or changed ones.
    fn register_module(&self, name: &str, dir: &std::path::Path) {
        let files = registry::module_files(name, dir);
        let mut changed = Vec::new();
        for (file, path) in files {
            match std::fs::read(&path) {
                Ok(content) => match self
                    .shared
                    .state()
                    .registry
                    .insert(&file, content, Some(name))
                {
                    Ok(registry::Change::Unchanged) => {}
                    Ok(_) => changed.push(file),
                    Err(error) => log::warn!("{}: {error}", path.display()),
                },
                Err(error) => log::warn!("cannot read {}: {error}", path.display()),
            }
        }
        if !changed.is_empty() {
            log::info!("registered {} client files of {name}", changed.len());
        }
        for file in changed {
            self.shared.announce_to_all(&file);
        }
    }

    /// A file of a module changed on disk: re-read, re-hash, re-announce.
    fn file_modified(&self, modified: events::ModuleModified) -> Result<(), ModuleError> {
        if !registry::CLIENT_DIRS
            .iter()
            .any(|folder| modified.path.starts_with(&format!("{folder}/")))
        {
            return Ok(());
        }
        let name = format!("{}/{}", modified.name, modified.path);
        check_name(&name).map_err(ModuleError::msg)?;
        let path = self.module_dir(&modified.name)?.join(&modified.path);
        let link = std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink());
        match std::fs::read(&path).ok().filter(|_| !link).ok_or(()) {
            Ok(content) => {
                let change = self
                    .shared
                    .state()
                    .registry
                    .insert(&name, content, Some(&modified.name))
                    .map_err(ModuleError::msg)?;
                if change != registry::Change::Unchanged {
                    log::info!("{name} changed on disk; announcing it again");
                    self.shared.announce_to_all(&name);
                }
            }
            Err(_) => {
                if self.shared.state().registry.remove(&name).is_some() {
                    log::info!("{name} was deleted; withdrawing it");
                    self.shared.withdraw_from_all(&[name]);
                }
            }
        }
        Ok(())
    }

    fn client_connected(&self, peer: PeerId) {
        let packets: Result<Vec<OutgoingPacket>, _> = {
            let mut state = self.shared.state();
            state.peers.insert(peer, PeerFiles::default());
            state
                .registry
                .iter()
                .map(|(name, entry)| {
                    OutgoingPacket::new(&AnnounceFile {
                        name: name.clone(),
                        hash: entry.hash,
                        size: entry.content.len() as u64,
                    })
                })
                .chain([OutgoingPacket::new(&TellAfterAllFilesTransferred {})])
                .collect()
        };
        let sent = packets
            .map_err(ModuleError::from)
            .and_then(|packets| self.host.call(&SendBatch { peer, packets }));
        if let Err(error) = sent {
            log::warn!("announcing files to peer {peer}: {error}");
        }
    }

    /// A client's request (one that does not decode is refused by the
    /// table, its peer dropped).
    fn file_requested(&mut self, peer: PeerId, request: RequestFile) {
        // A name over the limit is malformed: no registered name is that
        // long, and repeating it would echo whatever the client sent.
        if request.name.len() > registry::MAX_NAME_LEN {
            let error = format!(
                "a name of {} bytes, over the maximum of {}",
                request.name.len(),
                registry::MAX_NAME_LEN
            );
            log::warn!("peer {peer} sent a malformed file request: {error}; disconnecting it");
            let disconnect = network::Disconnect {
                peer,
                reason: format!("malformed {}: {error}", RequestFile::NAME),
            };
            let _ = self.host.call(&disconnect);
            return;
        }
        let refusal = {
            let mut state = self.shared.state();
            let State { registry, peers } = &mut *state;
            let queued = peers.get(&peer).is_some_and(|files| {
                files
                    .queue
                    .iter()
                    .any(|t| t.name == request.name && t.hash == request.hash)
            });
            if queued {
                // Already on its way: a repeat would only pin memory.
                return;
            }
            let refusal = match registry.get(&request.name) {
                None => Some(format!("no file named {:?} is registered", request.name)),
                Some(entry) if entry.hash != request.hash => Some(format!(
                    "stale hash for {}: the file changed and its new hash was announced",
                    request.name
                )),
                Some(_) => None,
            };
            if refusal.is_none()
                && let Some(files) = peers.get_mut(&peer)
            {
                files.queue.push_back(Transfer {
                    name: request.name.clone(),
                    hash: request.hash,
                    offset: 0,
                });
                self.shared.work.notify_all();
            }
            refusal
        };
        if let Some(message) = refusal {
            if let Some(suppressed) = self.refusal_log.allow(peer, Instant::now()) {
                log::warn!(
                    "peer {peer}: refused file request: {message}{}",
                    suppressed_note(suppressed)
                );
            }
            let error = FileError {
                name: request.name,
                message,
            };
            self.shared.send_or_log(peer, &error);
        }
    }

    fn all_files_transferred(&self, peer: PeerId) -> Result<(), ModuleError> {
        {
            let mut state = self.shared.state();
            let Some(files) = state.peers.get_mut(&peer) else {
                return Ok(());
            };
            if files.transmitted {
                return Ok(());
            }
            files.transmitted = true;
        }
        self.host.emit(&FilesTransmitted { peer })?;
        for module in self.modules()? {
            let script = format!("{}/client_lua/init.lua", module.name);
            if self.shared.state().registry.get(&script).is_some() {
                self.shared.send_or_log(peer, &RunScript { name: script });
            }
        }
        Ok(())
    }

    fn start_pump(&mut self) -> Result<(), ModuleError> {
        self.shared.stop.store(false, Ordering::Release);
        let shared = self.shared.clone();
        self.pump = Some(
            std::thread::Builder::new()
                .name("client_file-pump".into())
                .spawn(move || shared.pump())?,
        );
        Ok(())
    }

    fn stop_pump(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        self.shared.work.notify_all();
        if let Some(pump) = self.pump.take() {
            let _ = pump.join();
        }
    }

    fn add_file(&self, name: &str, content: Vec<u8>) -> Result<(), ModuleError> {
        let change = self
            .shared
            .state()
            .registry
            .insert(name, content, None)
            .map_err(ModuleError::msg)?;
        if change != registry::Change::Unchanged {
            self.shared.announce_to_all(name);
        }
        Ok(())
    }
}

impl Module for ClientFile {
    fn create(host: Host) -> Result<Self, ModuleError> {
        let settings = ClientFileSettings::read(&host)?;
        let queue_limit = host.get_setting("network.max_queue_bytes", NETWORK_QUEUE_LIMIT)?;
        let high_water = (queue_limit / 3)
            .min(settings.max_backlog_bytes)
            .max(MAX_FILE_PIECE as u64);
        let stall_timeout = Duration::from_millis(settings.stall_timeout_ms);
        Ok(Self {
            host,
            shared: Arc::new(Shared {
                host,
                high_water,
                low_water: high_water / 3,
                stall_timeout,
                state: Mutex::new(State::default()),
                work: Condvar::new(),
                stop: AtomicBool::new(false),
            }),
            pump: None,
            refusal_log: LogLimiter::new(5, Duration::from_secs(10)),
        })
    }

    fn receive(table: &mut Receive<Self>) {
        table
            .settings::<ClientFileSettings>()
            .event(|files, _: events::Start| {
                for module in files.modules()? {
                    files.register_module(&module.name, &PathBuf::from(&module.path));
                }
                files.start_pump()
            })
            .event(|files, _: events::Continue| {
                if let Some(state) = files.host.take_stash::<State>()? {
                    *files.shared.state() = state;
                }
                files.start_pump()
            })
            .event(|files, loaded: events::ModuleLoaded| {
                let dir = files.module_dir(&loaded.name)?;
                files.register_module(&loaded.name, &dir);
                Ok(())
            })
            .event(|files, unloaded: events::ModuleUnloaded| {
                let names = files
                    .shared
                    .state()
                    .registry
                    .remove_owned_by(&unloaded.name);
                files.shared.withdraw_from_all(&names);
                Ok(())
            })
            .event(|files, modified: events::ModuleModified| files.file_modified(modified))
            .event(|files, connected: ClientConnected| {
                files.client_connected(connected.peer);
                Ok(())
            })
            .event(|files, gone: ClientDisconnected| {
                files.shared.state().peers.remove(&gone.peer);
                files.refusal_log.forget(&gone.peer);
                Ok(())
            })
            .packet(|files, peer, request: RequestFile| {
                files.file_requested(peer, request);
                Ok(())
            })
            .packet(|files, peer, _: AllFilesTransferred| files.all_files_transferred(peer))
            .call(|files, request: AddFileContent| files.add_file(&request.name, request.content))
            .call(|files, request: AddFilePath| {
                let content = std::fs::read(&request.path)
                    .map_err(|e| ModuleError::msg(format!("cannot read {}: {e}", request.path)))?;
                files.add_file(&request.name, content)
            })
            .call(|files, request: RemoveFile| {
                if files
                    .shared
                    .state()
                    .registry
                    .remove(&request.name)
                    .is_some()
                {
                    files.shared.withdraw_from_all(&[request.name]);
                }
                Ok(())
            })
            .call(|files, _: ListFiles| {
                Ok(files
                    .shared
                    .state()
                    .registry
                    .iter()
                    .map(|(name, entry)| FileInfo {
                        name: name.clone(),
                        hash: entry.hash,
                        size: entry.content.len() as u64,
                    })
                    .collect())
            });
    }

    fn unload(&mut self, kind: UnloadKind) -> Result<(), ModuleError> {
        self.stop_pump();
        if kind == UnloadKind::Reload {
            let state = std::mem::take(&mut *self.shared.state());
            self.host.store_stash(&state)?;
        }
        Ok(())
    }
}

export_module!(ClientFile);

#[cfg(test)]
mod tests {
    use super::*;

    /// Every packet the module sent to one peer with `send` or
    /// `send_batch`, by name, in order.
    fn sent_names(kit: &buildat_interface::testing::TestHost) -> Vec<(PeerId, String)> {
        let mut sent: Vec<(PeerId, String)> = kit
            .calls::<SendBatch>()
            .into_iter()
            .flat_map(|b| b.packets.into_iter().map(move |p| (b.peer, p.name)))
            .collect();
        sent.extend(
            kit.calls::<network::SendPacket>()
                .into_iter()
                .map(|s| (s.peer, s.packet.name)),
        );
        sent
    }

    #[test]
    fn on_the_kit_files_are_announced_requests_answered_and_bad_ones_dropped() {
        use buildat_interface::testing::TestHost;
        use buildat_network_api::receive::testing::{DeliverPackets, disconnected};

        let dir =
            std::env::temp_dir().join(format!("buildat-client-file-kit-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("game/client_lua")).unwrap();
        std::fs::write(dir.join("game/client_lua/init.lua"), "print('hi')").unwrap();
        let kit = TestHost::new();
        let game_path = dir.join("game").display().to_string();
        kit.answer(move |_: ListModules| {
            Ok(vec![ModuleInfo {
                name: "game".into(),
                path: game_path.clone(),
                state: ModuleState::Loaded,
                build_hash: String::new(),
                loaded_at_unix_ms: 0,
                load_index: 1,
                queued: 0,
                times: Default::default(),
            }])
        });
        kit.answer(|_: SendBatch| Ok(0));
        kit.answer(|_: network::SendPacket| Ok(0));
        kit.answer(|_: network::Disconnect| Ok(()));
        let mut files = kit.load::<ClientFile>().unwrap();
        let listed = files.call(&ListFiles {}).unwrap();
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].name, "game/client_lua/init.lua");

        files
            .emit(&ClientConnected {
                peer: 3,
                address: "127.0.0.1:1".into(),
            })
            .unwrap();
        assert_eq!(
            sent_names(&kit),
            [
                (3, AnnounceFile::NAME.to_string()),
                (3, TellAfterAllFilesTransferred::NAME.to_string())
            ]
        );
        kit.clear();
        let unknown = RequestFile {
            name: "game/nope.lua".into(),
            hash: [0; 32],
        };
        files.packet(3, &unknown).unwrap();
        assert_eq!(sent_names(&kit), [(3, FileError::NAME.to_string())]);

        kit.clear();
        files.packet(3, &AllFilesTransferred {}).unwrap();
        assert_eq!(
            kit.emitted::<FilesTransmitted>(),
            [FilesTransmitted { peer: 3 }]
        );
        assert_eq!(sent_names(&kit), [(3, RunScript::NAME.to_string())]);

        files.packet_bytes(4, RequestFile::NAME, &[0xff]).unwrap();
        let long = RequestFile {
            name: "x".repeat(registry::MAX_NAME_LEN + 1),
            hash: [0; 32],
        };
        files.packet(5, &long).unwrap();
        let dropped = disconnected(&kit);
        assert_eq!(dropped.len(), 2, "{dropped:?}");
        assert_eq!(dropped[0].0, 4);
        let malformed = format!("malformed {} packet", RequestFile::NAME);
        assert!(dropped[0].1.starts_with(&malformed), "{dropped:?}");
        assert_eq!(dropped[1].0, 5);
        assert!(!dropped[1].1.contains("xxxx"), "the name is not echoed");
        drop(files);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn settings_are_declared_with_their_defaults() {
        let declared = ClientFileSettings::describe();
        let keys: Vec<(&str, &str)> = declared
            .iter()
            .map(|s| (s.key.as_str(), s.default.as_str()))
            .collect();
        assert_eq!(
            keys,
            [
                ("client_file.max_backlog_bytes", "4194304"),
                ("client_file.stall_timeout_ms", "20000")
            ]
        );
        let set = ClientFileSettings::read_with(|key| {
            (key == "client_file.stall_timeout_ms").then(|| "5".to_string())
        })
        .unwrap();
        assert_eq!((set.stall_timeout_ms, set.max_backlog_bytes), (5, 4 << 20));
    }
}
