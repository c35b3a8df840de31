//! The map's live feed: `/api/live`, one long-lived response
//! (Server-Sent Events) per open map page, in place of the page polling
//! the players and the change feed.
//!
//! Owns: the feed's frames (every [`INTERVAL`], while at least one page
//! listens: the players asked of the world once, and the map's blocks
//! changed since the last frame; encoded once into one event that every
//! stream sends as the same shared buffer, and not sent at all when
//! nothing changed), each stream's task (the latest frame at once, then
//! each new one; a page too slow for a frame skips it, and the next
//! frame's `from` tells it to ask `/api/changes` for what it missed; a
//! comment every [`KEEPALIVE`] while nothing changes; it ends when the
//! page goes or the server stops), and the feed's counters (frames made,
//! players asked, streams open). A page costs a socket and a task; the
//! world is asked for the players at most once an interval however many
//! pages listen, and not at all while none does.
//! Does not own: the players (`status.rs` asks voxelworld), the change
//! feed and tiles (`map.rs`), who may listen (`http.rs`).

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::body::{Body, Bytes, Frame};
use serde::Serialize;
use tokio::sync::{mpsc, watch};

use crate::Shared;
use crate::map::Changes;
use crate::status::{self, Player};

/// How often a frame is made while a page listens.
pub const INTERVAL: Duration = Duration::from_secs(1);
/// How long a stream stays silent before it sends a comment (proxies and
/// browsers keep a line that talks).
pub const KEEPALIVE: Duration = Duration::from_secs(15);
const KEEPALIVE_COMMENT: &[u8] = b": still here\n\n";

/// The feed: the latest frame (empty: none yet, or no page listened),
/// and its counters.
pub struct Live {
    latest: watch::Sender<Bytes>,
    /// Frames made (each encoded once for every stream).
    pub frames_made: AtomicU64,
    /// Times the players were asked of the world (the feed's frames and
    /// `/api/players` together).
    pub players_asked: AtomicU64,
}

impl Default for Live {
    fn default() -> Self {
        Self {
            latest: watch::Sender::new(Bytes::new()),
            frames_made: AtomicU64::new(0),
            players_asked: AtomicU64::new(0),
        }
    }
}

impl Live {
    /// Streams open now.
    pub fn streams(&self) -> usize {
        self.latest.receiver_count()
    }

    /// Shares `frame` with every stream.
    fn publish(&self, frame: Bytes) {
        self.frames_made.fetch_add(1, Ordering::Relaxed);
        self.latest.send_replace(frame);
    }
}

/// One frame as the page reads it.
#[derive(Serialize)]
struct FrameJson<'a> {
    /// The change number this frame's `blocks` start after.
    from: u64,
    /// The change number after them.
    seq: u64,
    /// `from` is older than the change feed remembers: redraw everything.
    reset: bool,
    /// Level-0 blocks (x, z) changed after `from`.
    blocks: &'a [[i32; 2]],
    /// Every player: name, x, y, z (to a tenth of a voxel).
    players: Vec<(&'a str, f64, f64, f64)>,
}

/// The players part of a frame, to tell whether they moved.
fn players_json(players: &[Player]) -> Vec<(&str, f64, f64, f64)> {
    let tenth = |v: f64| (v * 10.0).round() / 10.0;
    players
        .iter()
        .map(|p| {
            (
                p.name.as_str(),
                tenth(p.position[0]),
                tenth(p.position[1]),
                tenth(p.position[2]),
            )
        })
        .collect()
}

/// A frame as one Server-Sent Event (`data:` one line of JSON, then a
/// blank line).
pub fn encode_frame(from: u64, changes: &Changes, players: &[Player]) -> Bytes {
    let frame = FrameJson {
        from,
        seq: changes.seq,
        reset: changes.reset,
        blocks: &changes.blocks,
        players: players_json(players),
    };
    // Plain data only: it always encodes, and to one line (JSON escapes
    // line breaks inside strings).
    let json = serde_json::to_vec(&frame).unwrap_or_else(|_| b"{}".to_vec());
    let mut event = Vec::with_capacity(json.len() + 8);
    event.extend_from_slice(b"data: ");
    event.extend_from_slice(&json);
    event.extend_from_slice(b"\n\n");
    Bytes::from(event)
}

/// What the feed made last: the change number and the players' part.
#[derive(Default)]
struct Made {
    seq: Option<u64>,
    players: Option<Vec<u8>>,
}

/// One round of the feed: the frame to share, or None when nothing
/// changed (or nobody listens).
fn next_frame(shared: &Shared, made: &mut Made) -> Option<Bytes> {
    let players = status::players(shared);
    let from = made.seq.unwrap_or_else(|| shared.map.seq());
    let changes = shared.map.changes_since(from);
    let players_part = serde_json::to_vec(&players_json(&players)).ok();
    let moved = players_part != made.players;
    let changed = changes.seq != from || changes.reset;
    made.seq = Some(changes.seq);
    made.players = players_part;
    (moved || changed).then(|| encode_frame(from, &changes, &players))
}

/// Makes the frames while the server runs: every [`INTERVAL`] while a
/// page listens; when none does, nothing is asked and the last frame is
/// dropped (a page coming later waits for a fresh one).
pub async fn run(shared: Arc<Shared>, mut stopped: watch::Receiver<bool>) {
    let mut ticker = tokio::time::interval(INTERVAL);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut made = Some(Made::default());
    loop {
        tokio::select! {
            _ = stopped.changed() => return,
            _ = ticker.tick() => {}
        }
        if shared.live.streams() == 0 {
            if made.as_ref().is_some_and(|m| m.seq.is_some()) {
                shared.live.latest.send_replace(Bytes::new());
                made = Some(Made::default());
            }
            continue;
        }
        let Some(mut state) = made.take() else {
            return;
        };
        let work = shared.clone();
        // The world is asked on a blocking thread, never this one.
        let Ok((state, frame)) = tokio::task::spawn_blocking(move || {
            let frame = next_frame(&work, &mut state);
            (state, frame)
        })
        .await
        else {
            return;
        };
        made = Some(state);
        if let Some(frame) = frame {
            shared.live.publish(frame);
        }
    }
}

/// The body of one `/api/live` response.
pub struct LiveBody {
    frames: mpsc::Receiver<Bytes>,
}

impl Body for LiveBody {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        self.frames
            .poll_recv(cx)
            .map(|next| next.map(|bytes| Ok(Frame::data(bytes))))
    }
}

impl Live {
    /// A stream of the feed for one page, until it goes or the server
    /// stops.
    pub fn stream(&self, mut stopped: watch::Receiver<bool>) -> LiveBody {
        let mut latest = self.latest.subscribe();
        // One frame in flight: a page that does not read holds one buffer
        // and skips the frames made meanwhile.
        let (send, frames) = mpsc::channel::<Bytes>(1);
        tokio::spawn(async move {
            let mut next = latest.borrow_and_update().clone();
            loop {
                if !next.is_empty() && send.send(next).await.is_err() {
                    return;
                }
                next = tokio::select! {
                    _ = stopped.changed() => return,
                    _ = send.closed() => return,
                    changed = tokio::time::timeout(KEEPALIVE, latest.changed()) => match changed {
                        Ok(Ok(())) => latest.borrow_and_update().clone(),
                        Ok(Err(_)) => return,
                        Err(_) => Bytes::from_static(KEEPALIVE_COMMENT),
                    },
                };
            }
        });
        LiveBody { frames }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn player(name: &str, position: [f64; 3]) -> Player {
        Player {
            name: name.into(),
            peer: Some(1),
            position,
        }
    }

    fn changes(seq: u64, blocks: Vec<[i32; 2]>) -> Changes {
        Changes {
            seq,
            blocks,
            reset: false,
        }
    }

    #[test]
    fn a_frame_is_one_event_of_one_json_line() {
        let frame = encode_frame(
            3,
            &changes(5, vec![[0, -1], [2, 3]]),
            &[
                player("ann", [1.04, 64.0, -2.26]),
                player("bob\nnext", [0.0, 0.0, 0.0]),
            ],
        );
        let text = std::str::from_utf8(&frame).expect("text");
        let data = text
            .strip_prefix("data: ")
            .and_then(|t| t.strip_suffix("\n\n"))
            .expect("one event");
        assert!(!data.contains('\n'), "one line: {data}");
        let value: serde_json::Value = serde_json::from_str(data).expect("JSON");
        assert_eq!(value["from"], 3);
        assert_eq!(value["seq"], 5);
        assert_eq!(value["reset"], false);
        assert_eq!(value["blocks"], serde_json::json!([[0, -1], [2, 3]]));
        assert_eq!(
            value["players"],
            serde_json::json!([["ann", 1.0, 64.0, -2.3], ["bob\nnext", 0.0, 0.0, 0.0]])
        );
    }

    #[tokio::test(flavor = "current_thread")]
    async fn every_stream_sends_the_same_buffer_and_a_slow_one_skips_to_the_latest() {
        let live = Live::default();
        let shared_frame = |n: u8| Bytes::from(vec![n; 4]);
        let (_stop, stopped) = watch::channel(false);
        let streams: Vec<LiveBody> = (0..3).map(|_| live.stream(stopped.clone())).collect();
        assert_eq!(live.streams(), 3);
        live.publish(shared_frame(1));
        let mut streams = streams;
        let mut first = Vec::new();
        for stream in &mut streams {
            first.push(stream.frames.recv().await.expect("a frame"));
        }
        // One encoding, shared: every stream holds the very same bytes.
        assert!(first.iter().all(|f| f.as_ptr() == first[0].as_ptr()));
        assert_eq!(live.frames_made.load(Ordering::Relaxed), 1);
        // A stream that reads nothing while three frames come gets the
        // one in flight and then the latest, not a queue of them.
        for n in 2..=6 {
            live.publish(shared_frame(n));
            tokio::task::yield_now().await;
        }
        let mut seen = Vec::new();
        while let Ok(Some(frame)) =
            tokio::time::timeout(Duration::from_millis(100), streams[0].frames.recv()).await
        {
            seen.push(frame[0]);
        }
        assert_eq!(seen.last(), Some(&6), "{seen:?}");
        assert!(seen.len() <= 3, "skipped to the latest: {seen:?}");
        drop(streams);
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        assert_eq!(live.streams(), 0, "a stream's task ends with its page");
    }
}
