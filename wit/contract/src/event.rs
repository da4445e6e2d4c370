//! What an event handler receives: one change of one watched object.

use serde_json::Value;

use crate::{KindRef, Object};

/// What happened to a watched object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Change {
    /// The object appeared: created, or first seen.
    Added,
    /// The object changed (a new resourceVersion).
    Updated,
    /// The object is gone.
    Deleted,
}

impl Change {
    /// `added`, `updated` or `deleted`: the word in delivery ids.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Added => "added",
            Self::Updated => "updated",
            Self::Deleted => "deleted",
        }
    }
}

impl std::fmt::Display for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One change of one watched object, the contract's `object-event` record.
///
/// Changes of one object arrive in order, one at a time: the next is delivered once the
/// handler has accepted this one.
#[derive(Clone, Debug, PartialEq)]
pub struct ObjectEvent {
    pub change: Change,
    /// The object's kind, as the manifest's watch names it.
    pub kind: KindRef,
    /// The object now (added, updated) or as last known (deleted).
    pub object: Object,
    /// Updated: the object before the change; after a host restart only its metadata.
    pub old_object: Option<Object>,
    /// The object existed before the plugin was first loaded (delivered only when its
    /// settings ask for initial objects).
    pub initial: bool,
    /// Deleted: noticed by a relist or a restart, not the watch; `object` may be stale.
    pub final_state_unknown: bool,
    /// `<uid>:<resourceVersion>:<change>`: the same on every retry and after restarts.
    pub delivery_id: String,
    /// 1 on the first delivery, counting up on retries.
    pub attempt: u32,
    /// The host's current time, RFC 3339.
    pub now: String,
    /// The plugin's settings (`null` if none), Secret references resolved.
    pub config: Value,
}

impl ObjectEvent {
    /// The delivery id of `change` of the object with `uid` at `resource_version`.
    pub fn delivery_id(uid: &str, resource_version: &str, change: Change) -> String {
        format!("{uid}:{resource_version}:{change}")
    }
}
