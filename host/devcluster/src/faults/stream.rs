//! The faults of watch streams, as an adapter around each one: an event may end the stream
//! (cut), leave it open and silent until its timeout (stalled), or come late, in order;
//! bookmarks may be dropped; an outage ends every stream.

use std::sync::Arc;

use bytes::Bytes;
use futures_util::Stream;
use tokio::sync::{mpsc, watch};

use super::injector::{EventFate, Injector};

/// What a watch sends, told apart as the faults treat it.
pub(crate) enum Frame {
    /// An event: of the initial state, of a change, or the bookmark that ends the initial
    /// events.
    Event(Bytes),
    /// A periodic bookmark.
    Bookmark(Bytes),
    /// An `ERROR` event that ends the watch.
    Error(Bytes),
}

struct Adapter {
    frames: mpsc::Receiver<Frame>,
    injector: Arc<Injector>,
    outages: watch::Receiver<u64>,
    stalled: bool,
}

/// The bytes a client receives of `frames`, with the watch faults in force applied.
pub(crate) fn watch_stream(injector: Arc<Injector>, frames: mpsc::Receiver<Frame>) -> impl Stream<Item = Bytes> {
    let outages = injector.outages();
    let adapter = Adapter { frames, injector, outages, stalled: false };
    futures_util::stream::unfold(adapter, |mut a| async move {
        loop {
            let frame = tokio::select! {
                frame = a.frames.recv() => frame?,
                _ = a.outages.changed() => return None,
            };
            if a.stalled {
                continue;
            }
            match frame {
                Frame::Event(bytes) => match a.injector.before_event() {
                    EventFate::Cut => return None,
                    // Half-open: connected and silent until the watch's time is up.
                    EventFate::Stall => a.stalled = true,
                    EventFate::Send(delay) => {
                        if !delay.is_zero() {
                            tokio::time::sleep(delay).await;
                        }
                        return Some((bytes, a));
                    }
                },
                Frame::Bookmark(bytes) => {
                    if !a.injector.drop_bookmarks() {
                        return Some((bytes, a));
                    }
                }
                Frame::Error(bytes) => return Some((bytes, a)),
            }
        }
    })
}
