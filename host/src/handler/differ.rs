//! Informer events from a kube-runtime watcher, the way client-go's shared informer hands
//! them to a `ResourceEventHandler`: added, updated (old and new) and deleted (last known),
//! decided against what this plugin was last told of each object, not by the watch
//! event's type (kube-runtime says `Apply` for both an addition and a change).
//!
//! Pure: each watcher event goes in, the changes to deliver come out. What the differ
//! knows at start is the persisted ledger (see `ledger`), so a restarted host delivers
//! only what changed while it was away: changed objects as `updated` (the old object
//! known by its metadata only), objects gone as `deleted` with `final-state-unknown`,
//! new ones as `added`. Objects listed the first time a kind is ever watched are
//! `initial`. (client-go: `tools/cache/controller.go` `processDeltas`, `delta_fifo.go`
//! `Replace` for deletions noticed by a relist.)

use std::collections::{HashMap, HashSet};

use kube::runtime::watcher;
use serde_json::{Value, json};

use crate::plugin::Change;

/// An object's key within its kind: namespace and name.
pub(crate) type Key = (String, String);

/// What the plugin was last told of one object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Known {
    pub(crate) uid: String,
    pub(crate) resource_version: String,
    /// The object as last seen; `None` when only the ledger's metadata is known (after a
    /// restart).
    pub(crate) object: Option<Value>,
}

/// One change to hand the plugin.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Found {
    pub(crate) change: Change,
    pub(crate) key: Key,
    pub(crate) uid: String,
    pub(crate) resource_version: String,
    pub(crate) object: Value,
    pub(crate) old: Option<Value>,
    pub(crate) initial: bool,
    pub(crate) final_state_unknown: bool,
}

/// The differ of one watched kind.
#[derive(Debug, Default)]
pub(crate) struct Differ {
    known: HashMap<Key, Known>,
    /// The keys a relist has listed so far, from `Init` to `InitDone`.
    relist: Option<HashSet<Key>>,
    /// Whether the first list of this kind ever is still under way: its objects are
    /// `initial`.
    first_ever: bool,
}

impl Differ {
    /// A differ that starts from `known` (the ledger); `first_ever` when the kind has
    /// never been listed for this plugin.
    pub(crate) fn new(known: HashMap<Key, Known>, first_ever: bool) -> Self {
        Self { known, relist: None, first_ever }
    }

    /// The changes a watcher event means; objects are JSON.
    pub(crate) fn apply(&mut self, event: watcher::Event<Value>) -> Vec<Found> {
        match event {
            watcher::Event::Apply(object) => self.seen(object, false),
            watcher::Event::InitApply(object) => {
                if let Some(listed) = self.relist.as_mut() {
                    listed.insert(key(&object));
                }
                let initial = self.first_ever;
                self.seen(object, initial)
            }
            watcher::Event::Delete(object) => {
                let key = key(&object);
                match self.known.remove(&key) {
                    Some(_) => vec![deleted(key, object, false)],
                    // An object the plugin was never told of: nothing to say.
                    None => Vec::new(),
                }
            }
            watcher::Event::Init => {
                self.relist = Some(HashSet::new());
                Vec::new()
            }
            watcher::Event::InitDone => {
                let listed = self.relist.take().unwrap_or_default();
                self.first_ever = false;
                let mut gone: Vec<Key> = self.known.keys().filter(|k| !listed.contains(*k)).cloned().collect();
                gone.sort();
                gone.into_iter()
                    .filter_map(|key| {
                        let known = self.known.remove(&key)?;
                        let object = last_known(&key, &known);
                        Some(deleted(key, object, true))
                    })
                    .collect()
            }
        }
    }

    fn seen(&mut self, object: Value, initial: bool) -> Vec<Found> {
        let key = key(&object);
        let (uid, rv) = (meta(&object, "uid"), meta(&object, "resourceVersion"));
        let now = Known { uid: uid.clone(), resource_version: rv.clone(), object: Some(object.clone()) };
        let Some(before) = self.known.insert(key.clone(), now) else {
            return vec![added(key, uid, rv, object, initial)];
        };
        if before.uid != uid {
            // Deleted and created again while the watch was not looking.
            let old = last_known(&key, &before);
            return vec![deleted(key.clone(), old, true), added(key, uid, rv, object, false)];
        }
        if before.resource_version == rv {
            // A relist showing what was already known: no change (client-go's listeners
            // without resync skip these too).
            return Vec::new();
        }
        let old = match before.object {
            Some(object) => object,
            None => last_known(&key, &before),
        };
        vec![Found {
            change: Change::Updated,
            key,
            uid,
            resource_version: rv,
            object,
            old: Some(old),
            initial: false,
            final_state_unknown: false,
        }]
    }
}

fn added(key: Key, uid: String, resource_version: String, object: Value, initial: bool) -> Found {
    Found { change: Change::Added, key, uid, resource_version, object, old: None, initial, final_state_unknown: false }
}

fn deleted(key: Key, object: Value, final_state_unknown: bool) -> Found {
    Found {
        change: Change::Deleted,
        uid: meta(&object, "uid"),
        resource_version: meta(&object, "resourceVersion"),
        key,
        object,
        old: None,
        initial: false,
        final_state_unknown,
    }
}

/// The object as last known: itself, or its metadata as the ledger kept it.
fn last_known(key: &Key, known: &Known) -> Value {
    known.object.clone().unwrap_or_else(|| {
        let mut metadata = json!({"name": key.1, "uid": known.uid, "resourceVersion": known.resource_version});
        if !key.0.is_empty() {
            metadata["namespace"] = json!(key.0);
        }
        json!({"metadata": metadata})
    })
}

pub(crate) fn key(object: &Value) -> Key {
    (meta(object, "namespace"), meta(object, "name"))
}

fn meta(object: &Value, field: &str) -> String {
    object["metadata"][field].as_str().unwrap_or_default().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(name: &str, uid: &str, rv: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": name, "namespace": "default", "uid": uid, "resourceVersion": rv}})
    }

    fn summary(found: &[Found]) -> Vec<String> {
        found
            .iter()
            .map(|f| {
                let flags = match (f.initial, f.final_state_unknown) {
                    (true, _) => " initial",
                    (_, true) => " final-state-unknown",
                    _ => "",
                };
                format!("{} {} {}{flags}", f.change, f.key.1, f.resource_version)
            })
            .collect()
    }

    fn run(differ: &mut Differ, events: Vec<watcher::Event<Value>>) -> Vec<String> {
        events.into_iter().flat_map(|e| summary(&differ.apply(e))).collect()
    }

    #[test]
    fn the_first_list_ever_is_initial_then_the_watch_gives_added_updated_deleted() {
        let mut d = Differ::new(HashMap::new(), true);
        let out = run(
            &mut d,
            vec![
                watcher::Event::Init,
                watcher::Event::InitApply(pod("a", "u1", "1")),
                watcher::Event::InitDone,
                watcher::Event::Apply(pod("b", "u2", "2")),
                watcher::Event::Apply(pod("a", "u1", "3")),
                watcher::Event::Apply(pod("a", "u1", "3")),
                watcher::Event::Delete(pod("b", "u2", "4")),
            ],
        );
        assert_eq!(out, ["added a 1 initial", "added b 2", "updated a 3", "deleted b 4"]);
        assert!(!d.first_ever, "listed once");
    }

    #[test]
    fn an_update_carries_the_object_before_it() {
        let mut d = Differ::new(HashMap::new(), false);
        d.apply(watcher::Event::Apply(pod("a", "u1", "1")));
        let found = d.apply(watcher::Event::Apply(pod("a", "u1", "2")));
        assert_eq!(found[0].old, Some(pod("a", "u1", "1")));
        assert_eq!(found[0].object, pod("a", "u1", "2"));
    }

    #[test]
    fn a_relist_after_a_cut_watch_replays_nothing_and_finds_what_was_missed() {
        let mut d = Differ::new(HashMap::new(), false);
        run(&mut d, vec![watcher::Event::Apply(pod("kept", "u1", "1")), watcher::Event::Apply(pod("gone", "u2", "2"))]);
        run(
            &mut d,
            vec![watcher::Event::Apply(pod("changed", "u3", "3")), watcher::Event::Apply(pod("again", "u4", "4"))],
        );
        let out = run(
            &mut d,
            vec![
                watcher::Event::Init,
                watcher::Event::InitApply(pod("kept", "u1", "1")),
                watcher::Event::InitApply(pod("changed", "u3", "7")),
                watcher::Event::InitApply(pod("again", "u5", "8")),
                watcher::Event::InitApply(pod("new", "u6", "9")),
                watcher::Event::InitDone,
            ],
        );
        assert_eq!(
            out,
            [
                "updated changed 7",
                "deleted again 4 final-state-unknown",
                "added again 8",
                "added new 9",
                "deleted gone 2 final-state-unknown",
            ]
        );
    }

    #[test]
    fn after_a_restart_the_ledger_says_what_was_delivered() {
        let known = |uid: &str, rv: &str| Known { uid: uid.into(), resource_version: rv.into(), object: None };
        let ledger = HashMap::from([
            (("default".to_string(), "same".to_string()), known("u1", "1")),
            (("default".to_string(), "moved".to_string()), known("u2", "2")),
            (("default".to_string(), "gone".to_string()), known("u3", "3")),
        ]);
        let mut d = Differ::new(ledger, false);
        let found: Vec<Found> = [
            watcher::Event::Init,
            watcher::Event::InitApply(pod("same", "u1", "1")),
            watcher::Event::InitApply(pod("moved", "u2", "5")),
            watcher::Event::InitApply(pod("born", "u4", "6")),
            watcher::Event::InitDone,
        ]
        .into_iter()
        .flat_map(|e| d.apply(e))
        .collect();
        assert_eq!(summary(&found), ["updated moved 5", "added born 6", "deleted gone 3 final-state-unknown"]);
        let old = found[0].old.as_ref().unwrap();
        assert_eq!(old["metadata"]["resourceVersion"], "2", "the old object is its metadata: {old}");
        assert_eq!(found[2].object["metadata"]["name"], "gone");
    }
}
