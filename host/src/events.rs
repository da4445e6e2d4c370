//! Events on parents (`events.k8s.io/v1`), as kube-runtime's `Recorder` writes them, but
//! grouped by their message too: an event repeated within six minutes becomes one event
//! with a series count, and one with another message is its own event. The Recorder groups
//! by reason alone, so "created job 860" after eight different Jobs showed the first Job's
//! message eight times. [`Event`] is the value a reconcile plans to record.

use std::collections::HashMap;

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::{Event as EventObject, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use tokio::sync::Mutex;

/// How long a repeat still joins the earlier event's series (kube-runtime's and client-go's).
const SERIES_WINDOW: SignedDuration = SignedDuration::from_mins(6);

/// The longest note recorded; a longer one is cut, with `...`.
const MAX_NOTE: usize = 1024;

/// An Event to record on a parent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Event {
    pub(crate) warning: bool,
    /// Why, in one word: `ChildConflict`, `ReconcileError`.
    pub(crate) reason: String,
    pub(crate) note: String,
    /// What the host was doing: `Reconcile`, `Apply`.
    pub(crate) action: &'static str,
}

impl Event {
    /// A Warning about `action`.
    pub(crate) fn warning(reason: &str, note: &str, action: &'static str) -> Self {
        Self { warning: true, reason: reason.to_string(), note: truncate(note, MAX_NOTE), action }
    }

    /// An event the plugin asked for.
    pub(crate) fn from_plugin(event: &crate::plugin::Event) -> Self {
        Self {
            warning: event.type_ == crate::plugin::EventType::Warning,
            reason: event.reason.clone(),
            note: truncate(&event.message, MAX_NOTE),
            action: "Reconcile",
        }
    }
}

fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &s[..end])
}

/// What makes two events the same event: everything but the time.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Key {
    warning: bool,
    reason: String,
    note: String,
    action: &'static str,
    regarding: (Option<String>, Option<String>, Option<String>, Option<String>),
}

/// Publishes a controller's events.
pub(crate) struct Events {
    client: Client,
    controller: String,
    recent: Mutex<HashMap<Key, EventObject>>,
}

impl Events {
    pub(crate) fn new(client: Client, controller: String) -> Self {
        Self { client, controller, recent: Mutex::default() }
    }

    /// Records `event` on the object `regarding`: a new event, or the next of a series.
    pub(crate) async fn publish(&self, event: &Event, regarding: &ObjectReference) -> Result<(), kube::Error> {
        let now = Timestamp::now();
        let key = Key {
            warning: event.warning,
            reason: event.reason.clone(),
            note: event.note.clone(),
            action: event.action,
            regarding: (
                regarding.uid.clone(),
                regarding.namespace.clone(),
                regarding.name.clone(),
                regarding.kind.clone(),
            ),
        };
        let mut recent = self.recent.lock().await;
        recent.retain(|_, e| last_seen(e).is_some_and(|t| t + SERIES_WINDOW > now));
        let namespace = regarding.namespace.as_deref().unwrap_or("default");
        let api: Api<EventObject> = Api::namespaced(self.client.clone(), namespace);
        let written = if let Some(earlier) = recent.get(&key) {
            let count = earlier.series.as_ref().map_or(2, |s| s.count + 1);
            let mut next = earlier.clone();
            next.series = Some(EventSeries { count, last_observed_time: MicroTime(now) });
            api.patch(&next.name_any(), &PatchParams::default(), &Patch::Merge(&next)).await?;
            next
        } else {
            let new = self.new_event(event, regarding, now);
            api.create(&PostParams::default(), &new).await?;
            new
        };
        recent.insert(key, written);
        Ok(())
    }

    fn new_event(&self, event: &Event, regarding: &ObjectReference, now: Timestamp) -> EventObject {
        let name = regarding.name.as_deref().unwrap_or(&self.controller);
        EventObject {
            action: Some(event.action.to_string()),
            reason: Some(event.reason.clone()),
            note: Some(event.note.clone()),
            event_time: Some(MicroTime(now)),
            regarding: Some(regarding.clone()),
            metadata: ObjectMeta {
                namespace: regarding.namespace.clone(),
                name: Some(format!("{name}.{:x}", now.as_nanosecond())),
                ..ObjectMeta::default()
            },
            reporting_controller: Some(self.controller.clone()),
            reporting_instance: Some(self.controller.clone()),
            type_: Some(if event.warning { "Warning" } else { "Normal" }.into()),
            ..EventObject::default()
        }
    }
}

fn last_seen(event: &EventObject) -> Option<Timestamp> {
    event.series.as_ref().map(|s| s.last_observed_time.0).or_else(|| event.event_time.as_ref().map(|t| t.0))
}
