//! The file-transfer side of the protocol, sans-IO: packets from the server
//! go in, packets to send and things to do come out as [`Event`]s.
//!
//! Owns: which files the server announced and in which version (hash),
//! which the cache already has (verified), the `core:request_file`s sent and
//! the pieces of `core:file_content` received (offsets checked, the whole
//! content checked against its hash before it is stored), `core:file_error`
//! and `core:remove_file`, and when to answer `core:all_files_transferred`
//! (after `core:tell_after_all_files_transferred`, once every announced file
//! is present or was refused, and again after a later announce was
//! satisfied). What a server can make it fetch is bounded: a file over
//! the per-file limit, past the connection's total download limit, or past
//! [`MAX_ANNOUNCED_FILES`] is refused with a warning (server text in
//! warnings is quoted with its control characters escaped). Also decodes `core:run_script` and `core:disconnect` and
//! passes game packets through. Counts what it did ([`Stats`]).
//!
//! Does not own: sockets and framing (`connection`, `buildat_format`),
//! running Lua (`sandbox`), printing (the caller prints [`Event::Warning`]s
//! and [`Session::progress`]).

use std::collections::{BTreeMap, HashMap, VecDeque};

use buildat_client_file_protocol::{
    AllFilesTransferred, AnnounceFile, ContentHash, FileContent, FileContentRef, FileError,
    RemoveFilePacket, RequestFile, RunScript, TellAfterAllFilesTransferred,
};
use buildat_format::Packet;
use buildat_format::RawPacket;
use buildat_network_protocol::DisconnectPacket;
use thiserror::Error;

use crate::cache::{Cache, CacheError, Lookup, hex, sha256};

/// Files larger than this are refused (reported, not fetched).
pub const DEFAULT_MAX_FILE_SIZE: u64 = 1 << 30;
/// Bytes one connection may ask for in all: past it, further files are
/// refused (a malicious server cannot fill the disk by announcing without
/// end).
pub const DEFAULT_MAX_TOTAL_DOWNLOAD: u64 = 4 << 30;
/// Files one connection may announce: past it, further announcements are
/// refused (the table of announced files stays bounded).
pub const MAX_ANNOUNCED_FILES: usize = 100_000;

/// Something the caller must do or know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// Send this packet to the server.
    Send { name: &'static str, data: Vec<u8> },
    /// The announced version of `name` is present (from the cache or just
    /// received and verified).
    FileReady { name: String, content: Vec<u8> },
    /// The server withdrew `name`.
    FileRemoved { name: String },
    /// Every announced file is present (or was refused) and
    /// `core:all_files_transferred` was just sent; `first` for the first time.
    FilesComplete { first: bool },
    /// The server asks to run a transferred Lua file.
    RunScript { name: String },
    /// A game packet (any name outside `core:`), for the Lua side.
    Packet { name: String, data: Vec<u8> },
    /// The server said goodbye with this reason and will close.
    Disconnected { reason: String },
    /// Something odd that does not end the session (print it).
    Warning(String),
}

/// A protocol violation: the connection cannot go on.
#[derive(Debug, Error)]
pub enum SessionError {
    #[error("malformed {packet} packet: {message}")]
    Malformed { packet: String, message: String },
    #[error("{name}: piece at offset {offset} does not continue the {received} bytes received")]
    OutOfOrder {
        name: String,
        offset: u64,
        received: u64,
    },
    #[error("{name}: piece of {len} bytes at offset {offset} runs past the file size {size}")]
    PastEnd {
        name: String,
        offset: u64,
        len: usize,
        size: u64,
    },
    #[error("{name}: the server said {size} bytes, but announced {announced}")]
    SizeChanged {
        name: String,
        size: u64,
        announced: u64,
    },
    #[error("{name}: the content received hashes to {actual}, not the announced {expected}")]
    HashMismatch {
        name: String,
        expected: String,
        actual: String,
    },
    #[error(transparent)]
    Cache(#[from] CacheError),
}

/// What the session did, for the exit summary and tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// `core:announce_file` packets received.
    pub announced: u64,
    /// `core:request_file` packets sent.
    pub requested: u64,
    /// Announced files found (verified) in the cache.
    pub cache_hits: u64,
    /// Cache entries that failed verification (deleted and refetched).
    pub corrupt: u64,
    /// Bytes of file content received.
    pub bytes_received: u64,
    /// Bytes asked for (sum of the requested files' sizes).
    pub bytes_requested: u64,
    /// `core:file_error` answers.
    pub refused: u64,
}

/// Transfer progress of the files requested so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    pub bytes_received: u64,
    pub bytes_requested: u64,
    /// Files still being fetched.
    pub files_pending: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum FileState {
    Present,
    Requested,
    Failed,
}

#[derive(Debug)]
struct Announced {
    hash: ContentHash,
    size: u64,
    state: FileState,
}

#[derive(Debug)]
struct Download {
    size: u64,
    data: Vec<u8>,
}

/// One connection's file-transfer state.
#[derive(Debug)]
pub struct Session {
    cache: Cache,
    max_file_size: u64,
    max_total_download: u64,
    announced: BTreeMap<String, Announced>,
    /// Requests sent and not yet answered, per name, oldest first (with the
    /// size asked for).
    outstanding: HashMap<String, VecDeque<(ContentHash, u64)>>,
    downloads: HashMap<(String, ContentHash), Download>,
    told: bool,
    /// The current complete state was already reported.
    reported: bool,
    completions: u64,
    stats: Stats,
}

fn decode<P: Packet>(data: &[u8]) -> Result<P, SessionError> {
    P::decode(data).map_err(|e| malformed(P::NAME, &e))
}

fn malformed(packet: &str, error: &buildat_format::PayloadError) -> SessionError {
    SessionError::Malformed {
        packet: packet.to_string(),
        message: error.to_string(),
    }
}

/// The event sending `packet` to the server.
fn send_event<P: Packet>(packet: &P) -> Result<Event, SessionError> {
    Ok(Event::Send {
        name: P::NAME,
        data: packet.encode().map_err(|e| SessionError::Malformed {
            packet: P::NAME.to_string(),
            message: e.to_string(),
        })?,
    })
}

impl Session {
    /// A session storing files in `cache`.
    pub fn new(cache: Cache) -> Self {
        Self {
            cache,
            max_file_size: DEFAULT_MAX_FILE_SIZE,
            max_total_download: DEFAULT_MAX_TOTAL_DOWNLOAD,
            announced: BTreeMap::new(),
            outstanding: HashMap::new(),
            downloads: HashMap::new(),
            told: false,
            reported: false,
            completions: 0,
            stats: Stats::default(),
        }
    }

    /// Refuse files over `max` bytes (default [`DEFAULT_MAX_FILE_SIZE`]).
    pub fn with_max_file_size(mut self, max: u64) -> Self {
        self.max_file_size = max;
        self
    }

    /// Ask for at most `max` bytes in all (default
    /// [`DEFAULT_MAX_TOTAL_DOWNLOAD`]).
    pub fn with_max_total_download(mut self, max: u64) -> Self {
        self.max_total_download = max;
        self
    }

    /// Counters so far.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// How many times `core:all_files_transferred` was sent.
    pub fn completions(&self) -> u64 {
        self.completions
    }

    /// Progress of the requested files.
    pub fn progress(&self) -> Progress {
        Progress {
            bytes_received: self.stats.bytes_received,
            bytes_requested: self.stats.bytes_requested,
            files_pending: self.outstanding.values().map(VecDeque::len).sum(),
        }
    }

    /// Whether `core:tell_after_all_files_transferred` arrived (every file
    /// of the connection was announced).
    pub fn all_announced(&self) -> bool {
        self.told
    }

    /// The hash of the present version of `name`, if any.
    pub fn present_hash(&self, name: &str) -> Option<ContentHash> {
        self.announced
            .get(name)
            .filter(|a| a.state == FileState::Present)
            .map(|a| a.hash)
    }

    /// Handles one packet from the server.
    pub fn handle(&mut self, packet: &RawPacket) -> Result<Vec<Event>, SessionError> {
        let mut events = Vec::new();
        let name = packet.name.as_str();
        let data = packet.data.as_slice();
        match name {
            AnnounceFile::NAME => self.announce(decode(data)?, &mut events)?,
            TellAfterAllFilesTransferred::NAME => self.told = true,
            FileContent::NAME => {
                let piece =
                    FileContentRef::decode(data).map_err(|e| malformed(FileContent::NAME, &e))?;
                self.content(piece, &mut events)?
            }
            FileError::NAME => self.refused(decode(data)?, &mut events),
            RemoveFilePacket::NAME => {
                let RemoveFilePacket { name } = decode(data)?;
                if self.announced.remove(&name).is_some() {
                    events.push(Event::FileRemoved { name });
                }
            }
            RunScript::NAME => {
                let RunScript { name } = decode(data)?;
                events.push(Event::RunScript { name });
            }
            DisconnectPacket::NAME => events.push(Event::Disconnected {
                reason: decode::<DisconnectPacket>(data)?.reason,
            }),
            other if other.starts_with("core:") => events.push(Event::Warning(format!(
                "ignoring unknown core packet {other} ({} bytes)",
                data.len()
            ))),
            other => events.push(Event::Packet {
                name: other.to_string(),
                data: data.to_vec(),
            }),
        }
        self.check_complete(&mut events);
        Ok(events)
    }

    fn announce(&mut self, a: AnnounceFile, events: &mut Vec<Event>) -> Result<(), SessionError> {
        self.stats.announced += 1;
        if let Some(known) = self.announced.get(&a.name)
            && known.hash == a.hash
            && known.state != FileState::Failed
        {
            return Ok(()); // the same version again
        }
        if !self.announced.contains_key(&a.name) && self.announced.len() >= MAX_ANNOUNCED_FILES {
            events.push(Event::Warning(format!(
                "{:?}: more than {MAX_ANNOUNCED_FILES} files announced; ignoring it",
                a.name
            )));
            return Ok(());
        }
        let state = if a.size > self.max_file_size {
            events.push(Event::Warning(format!(
                "{:?}: {} bytes is over the limit of {} bytes; not fetching it",
                a.name, a.size, self.max_file_size
            )));
            FileState::Failed
        } else if self.stats.bytes_requested.saturating_add(a.size) > self.max_total_download {
            events.push(Event::Warning(format!(
                "{:?}: {} bytes would take this connection's downloads past {} bytes; not fetching it",
                a.name, a.size, self.max_total_download
            )));
            FileState::Failed
        } else if a.size == 0 && a.hash == sha256(&[]) {
            events.push(Event::FileReady {
                name: a.name.clone(),
                content: Vec::new(),
            });
            FileState::Present
        } else {
            match self.cache.load(&a.hash) {
                Ok(Lookup::Hit(content)) => {
                    self.stats.cache_hits += 1;
                    events.push(Event::FileReady {
                        name: a.name.clone(),
                        content,
                    });
                    FileState::Present
                }
                other => {
                    match other {
                        Ok(Lookup::Corrupt) => {
                            self.stats.corrupt += 1;
                            events.push(Event::Warning(format!(
                                "cache entry of {} ({}) was corrupt; deleted it, fetching again",
                                a.name,
                                hex(&a.hash)
                            )));
                        }
                        Err(error) => events.push(Event::Warning(format!(
                            "{error}; fetching {} again",
                            a.name
                        ))),
                        _ => {}
                    }
                    self.request(&a.name, a.hash, a.size, events)?;
                    FileState::Requested
                }
            }
        };
        self.announced.insert(
            a.name,
            Announced {
                hash: a.hash,
                size: a.size,
                state,
            },
        );
        Ok(())
    }

    fn request(
        &mut self,
        name: &str,
        hash: ContentHash,
        size: u64,
        events: &mut Vec<Event>,
    ) -> Result<(), SessionError> {
        let queue = self.outstanding.entry(name.to_string()).or_default();
        if queue.iter().any(|(h, _)| *h == hash) {
            return Ok(()); // already asked for
        }
        queue.push_back((hash, size));
        self.stats.requested += 1;
        self.stats.bytes_requested += size;
        self.reported = false;
        events.push(send_event(&RequestFile {
            name: name.to_string(),
            hash,
        })?);
        Ok(())
    }

    fn content(
        &mut self,
        piece: FileContentRef<'_>,
        events: &mut Vec<Event>,
    ) -> Result<(), SessionError> {
        let Some(&(_, asked_size)) = self
            .outstanding
            .get(piece.name)
            .and_then(|q| q.iter().find(|(h, _)| *h == piece.hash))
        else {
            events.push(Event::Warning(format!(
                "ignoring a piece of {} ({}) that was not requested",
                piece.name,
                hex(&piece.hash)
            )));
            return Ok(());
        };
        if piece.size != asked_size {
            return Err(SessionError::SizeChanged {
                name: piece.name.to_string(),
                size: piece.size,
                announced: asked_size,
            });
        }
        let key = (piece.name.to_string(), piece.hash);
        let download = self
            .downloads
            .entry(key.clone())
            .or_insert_with(|| Download {
                size: piece.size,
                // Trust the size only up to a point before anything arrived.
                data: Vec::with_capacity(piece.size.min(16 << 20) as usize),
            });
        let received = download.data.len() as u64;
        if piece.offset != received {
            return Err(SessionError::OutOfOrder {
                name: piece.name.to_string(),
                offset: piece.offset,
                received,
            });
        }
        if piece.offset + piece.data.len() as u64 > download.size {
            return Err(SessionError::PastEnd {
                name: piece.name.to_string(),
                offset: piece.offset,
                len: piece.data.len(),
                size: download.size,
            });
        }
        download.data.extend_from_slice(piece.data);
        self.stats.bytes_received += piece.data.len() as u64;
        if (download.data.len() as u64) < download.size {
            return Ok(());
        }
        let Some(Download { data: content, .. }) = self.downloads.remove(&key) else {
            return Ok(());
        };
        let actual = sha256(&content);
        if actual != piece.hash {
            return Err(SessionError::HashMismatch {
                name: piece.name.to_string(),
                expected: hex(&piece.hash),
                actual: hex(&actual),
            });
        }
        if let Some(queue) = self.outstanding.get_mut(piece.name) {
            queue.retain(|(h, _)| *h != piece.hash);
            if queue.is_empty() {
                self.outstanding.remove(piece.name);
            }
        }
        if let Err(error) = self.cache.store(&piece.hash, &content) {
            // The content is verified; it can still be used this session.
            events.push(Event::Warning(format!(
                "{error}; using {} from memory",
                piece.name
            )));
        }
        if let Some(entry) = self.announced.get_mut(piece.name)
            && entry.hash == piece.hash
        {
            entry.state = FileState::Present;
            events.push(Event::FileReady {
                name: piece.name.to_string(),
                content,
            });
        }
        Ok(())
    }

    fn refused(&mut self, error: FileError, events: &mut Vec<Event>) {
        self.stats.refused += 1;
        // The server answers requests in order: the error is for the oldest.
        let (refused, now_empty) = match self.outstanding.get_mut(&error.name) {
            Some(queue) => (queue.pop_front(), queue.is_empty()),
            None => (None, false),
        };
        if now_empty {
            self.outstanding.remove(&error.name);
        }
        let Some((hash, _)) = refused else {
            events.push(Event::Warning(format!(
                "the server reported an error for {} which was not requested: {}",
                error.name, error.message
            )));
            return;
        };
        self.downloads.remove(&(error.name.clone(), hash));
        if let Some(entry) = self.announced.get_mut(&error.name)
            && entry.hash == hash
        {
            entry.state = FileState::Failed;
            events.push(Event::Warning(format!(
                "the server could not send {} ({} bytes): {}",
                error.name, entry.size, error.message
            )));
        }
    }

    fn check_complete(&mut self, events: &mut Vec<Event>) {
        if !self.told || self.reported {
            return;
        }
        if self
            .announced
            .values()
            .any(|a| a.state == FileState::Requested)
        {
            return;
        }
        self.reported = true;
        self.completions += 1;
        events.push(Event::Send {
            name: AllFilesTransferred::NAME,
            data: Vec::new(),
        });
        events.push(Event::FilesComplete {
            first: self.completions == 1,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use buildat_format::{PacketReader, PacketWriter};

    use buildat_harness::raw_client::encoded;

    /// An in-memory server: encodes packets through the real codec.
    struct Peer {
        files: BTreeMap<String, Vec<u8>>,
        to_client: PacketWriter,
        from_client: PacketReader,
        /// The client's ends of the connection.
        client_reader: PacketReader,
        client_writer: PacketWriter,
    }

    impl Peer {
        fn new(files: &[(&str, Vec<u8>)]) -> Self {
            Self {
                files: files
                    .iter()
                    .map(|(n, c)| (n.to_string(), c.clone()))
                    .collect(),
                to_client: PacketWriter::default(),
                from_client: PacketReader::default(),
                client_reader: PacketReader::default(),
                client_writer: PacketWriter::default(),
            }
        }

        fn send(&mut self, name: &str, data: &[u8]) {
            self.to_client.write(name, data).expect("encode");
        }

        fn announce_all(&mut self) {
            let files: Vec<_> = self.files.clone().into_iter().collect();
            for (name, content) in files {
                let a = AnnounceFile {
                    name,
                    hash: sha256(&content),
                    size: content.len() as u64,
                };
                self.send(AnnounceFile::NAME, &encoded(&a));
            }
            self.send(TellAfterAllFilesTransferred::NAME, &[]);
        }

        /// The pieces answering a request, in order.
        fn pieces(&self, name: &str) -> Vec<Vec<u8>> {
            let content = &self.files[name];
            let hash = sha256(content);
            let mut out = Vec::new();
            let mut offset = 0;
            loop {
                let end =
                    (offset + buildat_client_file_protocol::MAX_FILE_PIECE).min(content.len());
                out.push(encoded(&FileContent {
                    name: name.to_string(),
                    hash,
                    size: content.len() as u64,
                    offset: offset as u64,
                    data: content[offset..end].to_vec(),
                }));
                offset = end;
                if offset >= content.len() {
                    return out;
                }
            }
        }

        /// Feeds what the peer wrote to the session, collecting events.
        fn deliver(&mut self, session: &mut Session) -> Result<Vec<Event>, SessionError> {
            self.client_reader.push(&self.to_client.take());
            let mut events = Vec::new();
            while let Some(p) = self.client_reader.try_next_packet().expect("frames") {
                events.extend(session.handle(&p)?);
            }
            // What the session sends back goes through the codec too.
            for e in &events {
                if let Event::Send { name, data } = e {
                    self.client_writer.write(name, data).expect("encode");
                }
            }
            self.from_client.push(&self.client_writer.take());
            Ok(events)
        }

        /// Requests the client sent so far, decoded.
        fn requests(&mut self) -> Vec<String> {
            let mut out = Vec::new();
            while let Some(p) = self.from_client.try_next_packet().expect("frames") {
                match p.name.as_str() {
                    RequestFile::NAME => {
                        let r = RequestFile::decode(&p.data).expect("request");
                        assert_eq!(
                            r.hash,
                            sha256(&self.files[&r.name]),
                            "asks for the announced hash"
                        );
                        out.push(r.name);
                    }
                    AllFilesTransferred::NAME => {
                        assert!(p.data.is_empty());
                        out.push("<all>".into());
                    }
                    other => panic!("unexpected {other}"),
                }
            }
            out
        }
    }

    fn ready(events: &[Event]) -> Vec<(String, Vec<u8>)> {
        events
            .iter()
            .filter_map(|e| match e {
                Event::FileReady { name, content } => Some((name.clone(), content.clone())),
                _ => None,
            })
            .collect()
    }

    fn big_file() -> Vec<u8> {
        (0..(buildat_client_file_protocol::MAX_FILE_PIECE * 2 + 1000))
            .map(|i| (i * 31 % 251) as u8)
            .collect()
    }

    fn files() -> Vec<(&'static str, Vec<u8>)> {
        vec![
            ("a/client_lua/init.lua", b"print('a')".to_vec()),
            ("b/client_data/big.bin", big_file()),
            ("b/client_data/empty", Vec::new()),
        ]
    }

    #[test]
    fn cold_then_warm_connect() {
        let dir = tempfile::tempdir().expect("temp");
        let cache = Cache::open(dir.path()).expect("cache");
        let mut peer = Peer::new(&files());
        let mut session = Session::new(cache.clone());
        peer.announce_all();
        let events = peer.deliver(&mut session).expect("announce");
        // The empty file needs no transfer; the others are requested.
        assert_eq!(
            ready(&events),
            [("b/client_data/empty".to_string(), Vec::new())]
        );
        let mut requested = peer.requests();
        requested.sort();
        assert_eq!(
            requested,
            ["a/client_lua/init.lua", "b/client_data/big.bin"]
        );
        assert!(
            !events
                .iter()
                .any(|e| matches!(e, Event::FilesComplete { .. }))
        );

        // Pieces of the two files interleave.
        let big = peer.pieces("b/client_data/big.bin");
        assert_eq!(big.len(), 3);
        let small = peer.pieces("a/client_lua/init.lua");
        peer.send(FileContent::NAME, &big[0]);
        peer.send(FileContent::NAME, &small[0]);
        peer.send(FileContent::NAME, &big[1]);
        let events = peer.deliver(&mut session).expect("pieces");
        assert_eq!(
            ready(&events),
            [("a/client_lua/init.lua".to_string(), b"print('a')".to_vec())]
        );
        assert_eq!(peer.requests(), Vec::<String>::new(), "not complete yet");
        let p = session.progress();
        assert_eq!(p.files_pending, 1);
        assert!(p.bytes_received < p.bytes_requested);

        peer.send(FileContent::NAME, &big[2]);
        let events = peer.deliver(&mut session).expect("last piece");
        assert_eq!(
            ready(&events),
            [("b/client_data/big.bin".to_string(), big_file())]
        );
        assert!(events.contains(&Event::FilesComplete { first: true }));
        assert_eq!(peer.requests(), ["<all>"]);
        let stats = session.stats();
        assert_eq!(stats.announced, 3);
        assert_eq!(stats.requested, 2);
        assert_eq!(stats.bytes_received, stats.bytes_requested);
        assert_eq!(session.progress().files_pending, 0);

        // The server then asks to run a script; game packets pass through.
        peer.send(
            RunScript::NAME,
            &encoded(&RunScript {
                name: "a/client_lua/init.lua".into(),
            }),
        );
        peer.send("game:hello", b"\x00\x01");
        let events = peer.deliver(&mut session).expect("run");
        assert_eq!(
            events,
            [
                Event::RunScript {
                    name: "a/client_lua/init.lua".into()
                },
                Event::Packet {
                    name: "game:hello".into(),
                    data: vec![0, 1]
                }
            ]
        );

        // Warm: a new connection with the same cache transfers nothing.
        let mut peer = Peer::new(&files());
        let mut warm = Session::new(cache);
        peer.announce_all();
        let events = peer.deliver(&mut warm).expect("warm");
        assert_eq!(ready(&events).len(), 3);
        assert_eq!(peer.requests(), ["<all>"]);
        assert_eq!(warm.stats().requested, 0);
        assert_eq!(warm.stats().cache_hits, 2);
    }

    #[test]
    fn a_corrupt_cache_entry_is_fetched_again() {
        let dir = tempfile::tempdir().expect("temp");
        let cache = Cache::open(dir.path()).expect("cache");
        let content = b"print('a')".to_vec();
        cache.store(&sha256(&content), &content).expect("store");
        std::fs::write(cache.path_of(&sha256(&content)), b"print('A')").expect("corrupt");
        let mut peer = Peer::new(&[("a/client_lua/init.lua", content.clone())]);
        let mut session = Session::new(cache.clone());
        peer.announce_all();
        let events = peer.deliver(&mut session).expect("announce");
        assert!(
            events
                .iter()
                .any(|e| matches!(e, Event::Warning(w) if w.contains("corrupt")))
        );
        assert_eq!(peer.requests(), ["a/client_lua/init.lua"]);
        assert_eq!(session.stats().corrupt, 1);
        for piece in peer.pieces("a/client_lua/init.lua") {
            peer.send(FileContent::NAME, &piece);
        }
        let events = peer.deliver(&mut session).expect("content");
        assert_eq!(
            ready(&events),
            [("a/client_lua/init.lua".into(), content.clone())]
        );
        assert_eq!(peer.requests(), ["<all>"]);
        assert_eq!(
            cache.load(&sha256(&content)).expect("load"),
            Lookup::Hit(content),
            "the entry is repaired"
        );
    }

    #[test]
    fn content_that_does_not_match_its_hash_is_a_protocol_error() {
        let dir = tempfile::tempdir().expect("temp");
        let mut peer = Peer::new(&[("a/x", b"good".to_vec())]);
        let mut session = Session::new(Cache::open(dir.path()).expect("cache"));
        peer.announce_all();
        peer.deliver(&mut session).expect("announce");
        peer.send(
            FileContent::NAME,
            &encoded(&FileContent {
                name: "a/x".into(),
                hash: sha256(b"good"),
                size: 4,
                offset: 0,
                data: b"evil".to_vec(),
            }),
        );
        assert!(matches!(
            peer.deliver(&mut session),
            Err(SessionError::HashMismatch { .. })
        ));
        assert_eq!(
            Cache::open(dir.path())
                .expect("cache")
                .load(&sha256(b"good"))
                .expect("load"),
            Lookup::Miss,
            "nothing bad was stored"
        );
    }

    #[test]
    fn pieces_out_of_order_or_past_the_end_are_protocol_errors() {
        let dir = tempfile::tempdir().expect("temp");
        let content = b"0123456789".to_vec();
        let piece = |offset: u64, data: &[u8], size: u64| {
            encoded(&FileContent {
                name: "a/x".into(),
                hash: sha256(b"0123456789"),
                size,
                offset,
                data: data.to_vec(),
            })
        };
        for (bytes, check) in [
            (piece(5, b"56789", 10), "out of order"),
            (piece(0, b"0123456789AB", 10), "past the end"),
            (piece(0, b"0123", 11), "size changed"),
        ] {
            let mut peer = Peer::new(&[("a/x", content.clone())]);
            let mut session = Session::new(Cache::open(dir.path()).expect("cache"));
            peer.announce_all();
            peer.deliver(&mut session).expect("announce");
            peer.send(FileContent::NAME, &bytes);
            let error = peer.deliver(&mut session).expect_err(check);
            match check {
                "out of order" => assert!(matches!(error, SessionError::OutOfOrder { .. })),
                "past the end" => assert!(matches!(error, SessionError::PastEnd { .. })),
                _ => assert!(matches!(error, SessionError::SizeChanged { .. })),
            }
        }
    }

    #[test]
    fn a_server_cannot_make_the_client_fetch_without_end() {
        let dir = tempfile::tempdir().expect("temp");
        let files = [
            ("a/x", vec![1u8; 600]),
            ("a/y", vec![2u8; 10]),
            ("a/z\x1b[2J", vec![3u8; 600]),
        ];
        let mut peer = Peer::new(&files);
        let mut session =
            Session::new(Cache::open(dir.path()).expect("cache")).with_max_total_download(1000);
        peer.announce_all();
        let events = peer.deliver(&mut session).expect("announce");
        assert_eq!(
            peer.requests().len(),
            2,
            "the second 600-byte file would pass the total"
        );
        let warnings: Vec<&String> = events
            .iter()
            .filter_map(|e| match e {
                Event::Warning(w) => Some(w),
                _ => None,
            })
            .collect();
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("past 1000 bytes"), "{}", warnings[0]);
        assert!(
            warnings[0].contains("\\u{1b}") && !warnings[0].contains('\x1b'),
            "server text is escaped: {}",
            warnings[0]
        );
    }

    #[test]
    fn a_refused_file_does_not_block_completion() {
        let dir = tempfile::tempdir().expect("temp");
        let mut peer = Peer::new(&[("a/x", b"x".to_vec()), ("a/y", b"y".to_vec())]);
        let mut session = Session::new(Cache::open(dir.path()).expect("cache"));
        peer.announce_all();
        peer.deliver(&mut session).expect("announce");
        assert_eq!(peer.requests().len(), 2);
        peer.send(
            FileError::NAME,
            &encoded(&FileError {
                name: "a/x".into(),
                message: "gone".into(),
            }),
        );
        for piece in peer.pieces("a/y") {
            peer.send(FileContent::NAME, &piece);
        }
        let events = peer.deliver(&mut session).expect("answers");
        assert!(
            events
                .iter()
                .any(|e| matches!(e, Event::Warning(w) if w.contains("gone")))
        );
        assert!(events.contains(&Event::FilesComplete { first: true }));
        assert_eq!(session.present_hash("a/x"), None);
        assert_eq!(session.present_hash("a/y"), Some(sha256(b"y")));
        assert_eq!(session.stats().refused, 1);
    }

    #[test]
    fn a_reannounce_is_fetched_and_answered_again() {
        let dir = tempfile::tempdir().expect("temp");
        let mut peer = Peer::new(&[("m/client_lua/init.lua", b"v1".to_vec())]);
        let mut session = Session::new(Cache::open(dir.path()).expect("cache"));
        peer.announce_all();
        peer.deliver(&mut session).expect("announce");
        for piece in peer.pieces("m/client_lua/init.lua") {
            peer.send(FileContent::NAME, &piece);
        }
        peer.deliver(&mut session).expect("content");
        assert_eq!(peer.requests(), ["m/client_lua/init.lua", "<all>"]);

        // Edited on the server while connected: v2 is announced, fetched,
        // and all_files_transferred is sent again.
        peer.files
            .insert("m/client_lua/init.lua".into(), b"v2".to_vec());
        let announce = AnnounceFile {
            name: "m/client_lua/init.lua".into(),
            hash: sha256(b"v2"),
            size: 2,
        };
        peer.send(AnnounceFile::NAME, &encoded(&announce));
        let events = peer.deliver(&mut session).expect("re-announce");
        assert!(ready(&events).is_empty());
        assert_eq!(peer.requests(), ["m/client_lua/init.lua"]);
        for piece in peer.pieces("m/client_lua/init.lua") {
            peer.send(FileContent::NAME, &piece);
        }
        let events = peer.deliver(&mut session).expect("v2");
        assert_eq!(
            ready(&events),
            [("m/client_lua/init.lua".into(), b"v2".to_vec())]
        );
        assert!(events.contains(&Event::FilesComplete { first: false }));
        assert_eq!(peer.requests(), ["<all>"]);
        assert_eq!(session.completions(), 2);
    }

    #[test]
    fn a_stale_refusal_applies_to_the_oldest_request() {
        let dir = tempfile::tempdir().expect("temp");
        let mut session = Session::new(Cache::open(dir.path()).expect("cache"));
        let announce = |content: &[u8]| RawPacket {
            ty: 100,
            name: AnnounceFile::NAME.into(),
            data: encoded(&AnnounceFile {
                name: "m/f".into(),
                hash: sha256(content),
                size: content.len() as u64,
            }),
        };
        let tell = RawPacket {
            ty: 101,
            name: TellAfterAllFilesTransferred::NAME.into(),
            data: Vec::new(),
        };
        session.handle(&announce(b"old")).expect("a");
        session.handle(&tell).expect("tell");
        session.handle(&announce(b"new")).expect("b");
        assert_eq!(session.stats().requested, 2);
        let events = session
            .handle(&RawPacket {
                ty: 102,
                name: FileError::NAME.into(),
                data: encoded(&FileError {
                    name: "m/f".into(),
                    message: "stale hash".into(),
                }),
            })
            .expect("error");
        assert!(
            !events
                .iter()
                .any(|e| matches!(e, Event::FilesComplete { .. }))
        );
        let events = session
            .handle(&RawPacket {
                ty: 103,
                name: FileContent::NAME.into(),
                data: encoded(&FileContent {
                    name: "m/f".into(),
                    hash: sha256(b"new"),
                    size: 3,
                    offset: 0,
                    data: b"new".to_vec(),
                }),
            })
            .expect("content");
        assert_eq!(ready(&events), [("m/f".into(), b"new".to_vec())]);
        assert!(events.contains(&Event::FilesComplete { first: true }));
    }

    #[test]
    fn removal_disconnect_and_malformed_payloads() {
        let dir = tempfile::tempdir().expect("temp");
        let mut peer = Peer::new(&[("a/x", b"x".to_vec())]);
        let mut session = Session::new(Cache::open(dir.path()).expect("cache"));
        peer.announce_all();
        peer.deliver(&mut session).expect("announce");
        peer.send(
            RemoveFilePacket::NAME,
            &encoded(&RemoveFilePacket { name: "a/x".into() }),
        );
        let events = peer.deliver(&mut session).expect("remove");
        assert!(events.contains(&Event::FileRemoved { name: "a/x".into() }));
        assert!(events.contains(&Event::FilesComplete { first: true }));

        peer.send(DisconnectPacket::NAME, "server stopping".as_bytes());
        let events = peer.deliver(&mut session).expect("disconnect");
        assert_eq!(
            events,
            [Event::Disconnected {
                reason: "server stopping".into()
            }]
        );

        peer.send(RunScript::NAME, &[0xff, 0xff, 0xff]);
        assert!(matches!(
            peer.deliver(&mut session),
            Err(SessionError::Malformed { .. })
        ));
    }
}
