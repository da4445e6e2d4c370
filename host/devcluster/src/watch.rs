//! Watches: JSON event streams from a resourceVersion, bookmarks, and 410 Gone; the faults
//! in force are applied to the frames on their way out (`faults::watch_stream`).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc};

use super::conversion::Conversion;
use super::encode;
use super::faults::Frame;
use super::present::{Presentation, present_one};
use super::read::{as_addressed, show};
use super::request::{Filter, Target};
use super::resource::GroupResource;
use super::state::Shared;
use super::status::ApiError;
use super::store::{Change, EventType};

/// What a `?watch=true` request asked for.
pub(crate) struct WatchRequest {
    pub target: Target,
    pub filter: Filter,
    /// `resourceVersion`; `None`, `""` and `"0"` start with the current state.
    pub resource_version: Option<String>,
    pub send_initial_events: Option<bool>,
    pub bookmarks: bool,
    pub timeout: Duration,
    pub presentation: Presentation,
}

fn line(kind: &str, object: &Value) -> Bytes {
    encode::watch_event(kind, object)
}

/// A bookmark at `rv`; `end` marks the end of the initial events.
fn bookmark(t: &Target, rv: u64, end: bool) -> Bytes {
    let mut meta = json!({ "resourceVersion": rv.to_string() });
    if end {
        meta["annotations"] = json!({ "k8s.io/initial-events-end": "true" });
    }
    line("BOOKMARK", &json!({ "kind": t.rt.kind, "apiVersion": t.rt.api_version(&t.version), "metadata": meta }))
}

/// How many frames a watch renders ahead of what its client has read.
const AHEAD: usize = 64;

/// Starts a watch and returns its frames (for the faults' adapter, then the client); errors
/// that precede the stream are returned.
pub(crate) fn start(shared: &Arc<Shared>, req: WatchRequest) -> Result<mpsc::Receiver<Frame>, ApiError> {
    let WatchRequest { target, filter, resource_version, send_initial_events, bookmarks, timeout, presentation } = req;
    let gr = target.gr();
    let (tx, frames) = mpsc::channel::<Frame>(AHEAD);
    let mut initial_end = false;
    // Under the lock, only what to send is taken (shared pointers); it is rendered after.
    let mut initial = Vec::new();
    let mut past = Vec::new();
    let (mut rx, start_rv, conversion) = {
        let mut cluster = shared.lock();
        let conversion = cluster.conversion(&target.rt);
        let store = &mut cluster.store;
        let rv = resource_version.as_deref().unwrap_or("");
        // With `sendInitialEvents`, the current state (at least as new as the version asked
        // for) comes first, ended by a bookmark when the client takes bookmarks.
        if rv.is_empty() || rv == "0" || send_initial_events == Some(true) {
            if send_initial_events != Some(false) {
                initial = store.list(&gr, target.namespace.as_deref());
                initial_end = send_initial_events == Some(true) && bookmarks;
            }
            (store.subscribe(&gr), store.current_rv(), conversion)
        } else {
            let from: u64 =
                rv.parse().map_err(|_| ApiError::bad_request(format!("invalid resource version: {rv:?}")))?;
            if let Some((changes, rx)) = store.changes_since(&gr, from) {
                past = changes;
                (rx, store.current_rv().max(from), conversion)
            } else {
                let gone =
                    ApiError::expired(format!("too old resource version: {from} ({})", store.oldest_watchable()));
                // The channel has room: the one frame is sent at once, and the stream ends.
                let _ = tx.try_send(Frame::Error(line("ERROR", &gone.to_status())));
                return Ok(frames);
            }
        }
    };
    // What comes first: the current objects, or the changes since the version asked for.
    let mut first: Vec<(&'static str, Arc<Value>)> =
        initial.into_iter().filter(|o| filter.matches(o)).map(|o| ("ADDED", o)).collect();
    for change in &past {
        if let Some((kind, _)) = event_for(&gr, &filter, change) {
            first.push((kind, change.object.clone()));
        }
    }
    let end_of_initial = initial_end.then(|| bookmark(&target, start_rv, true));
    let interval = shared.bookmark_interval;
    let mut shutdown = shared.shutdown.clone();
    // Converting may call a conversion webhook: it happens in the watch's own task.
    let mut render = Renderer { conversion, presentation, headers_sent: false };
    tokio::spawn(async move {
        for (kind, obj) in first {
            if !render.send(&tx, &target, kind, &obj).await {
                return;
            }
        }
        if let Some(bytes) = end_of_initial
            && tx.send(Frame::Event(bytes)).await.is_err()
        {
            return;
        }
        let deadline = tokio::time::sleep(timeout);
        tokio::pin!(deadline);
        let mut ticker = tokio::time::interval(interval);
        ticker.tick().await;
        let mut last_rv = start_rv;
        loop {
            tokio::select! {
                received = rx.recv() => match received {
                    Ok(change) if change.rv <= start_rv => {}
                    Ok(change) => {
                        last_rv = last_rv.max(change.rv);
                        if let Some((kind, _)) = event_for(&gr, &filter, &change)
                            && !render.send(&tx, &target, kind, &change.object).await
                        {
                            return;
                        }
                    }
                    Err(broadcast::error::RecvError::Lagged(_)) => {
                        let gone = ApiError::expired("the watch fell behind the event stream; start a new watch");
                        let _ = tx.send(Frame::Error(line("ERROR", &gone.to_status()))).await;
                        return;
                    }
                    Err(broadcast::error::RecvError::Closed) => return,
                },
                _ = ticker.tick(), if bookmarks => {
                    if tx.send(Frame::Bookmark(bookmark(&target, last_rv, false))).await.is_err() {
                        return;
                    }
                }
                () = &mut deadline => return,
                _ = shutdown.changed() => return,
                () = tx.closed() => return,
            }
        }
    });
    Ok(frames)
}

/// How a watch renders the objects of its events, as the client asked for them: in the
/// version it addresses (through the conversion webhook, if any), then a one-row table, the
/// metadata or whole. A table's column definitions come with the first event only
/// (`NoHeaders` after it); a list representation cannot show one object, so the events come
/// whole then, as upstream.
struct Renderer {
    conversion: Conversion,
    presentation: Presentation,
    headers_sent: bool,
}

impl Renderer {
    /// Sends `obj` as an event of `kind`; `false` once the watch ends: the client left, or the
    /// object could not be converted. As kube-apiserver's watch server, which logs an object
    /// it cannot encode and closes the stream, no error event is sent.
    async fn send(&mut self, tx: &mpsc::Sender<Frame>, t: &Target, kind: &str, obj: &Value) -> bool {
        let full = match show(&self.conversion, t, obj).await {
            Ok(full) => full,
            Err(e) => {
                tracing::warn!(resource = %t.rt.plural, error = %e.message, "unable to encode watch object; ending the watch");
                return false;
            }
        };
        let mut shown = present_one(t, &full, self.presentation).unwrap_or(full);
        if matches!(self.presentation, Presentation::Table { .. }) {
            if self.headers_sent {
                shown["columnDefinitions"] = Value::Null;
            }
            self.headers_sent = true;
        }
        tx.send(Frame::Event(line(kind, &as_addressed(t, shown)))).await.is_ok()
    }
}

/// The event a filtered watch sees for a change: selectors turn "started matching" into ADDED
/// and "stopped matching" into DELETED, as the real watch cache does.
fn event_for<'a>(gr: &GroupResource, filter: &Filter, change: &'a Change) -> Option<(&'static str, &'a Value)> {
    if change.resource != *gr {
        return None;
    }
    let now = filter.matches(&change.object);
    let before = change.old.as_deref().is_some_and(|o| filter.matches(o));
    match change.kind {
        EventType::Added => now.then_some(("ADDED", &*change.object)),
        EventType::Deleted => before.then_some(("DELETED", &*change.object)),
        EventType::Modified => match (before, now) {
            (true, true) => Some(("MODIFIED", &*change.object)),
            (false, true) => Some(("ADDED", &*change.object)),
            (true, false) => Some(("DELETED", &*change.object)),
            (false, false) => None,
        },
    }
}
