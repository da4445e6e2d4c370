//! What each plugin's handler has been told, persisted so that a restarted host does not
//! replay it: for every watched object, the uid and resourceVersion of the last change
//! the handler accepted (or gave up on), and which kinds have been listed once.
//!
//! Kept in `ConfigMap`s of the host's own namespace, `kubewasm-ledger-<plugin>` and, past
//! 4000 objects, `kubewasm-ledger-<plugin>-1`, `-2`...; labelled
//! `kubewasm.io/ledger: <plugin>`. Written at most once a second while something
//! changed, and when the handler stops: a host that crashes redelivers at most that
//! last second's events (at least once, with the same delivery ids). No write touches a
//! watched object.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams};
use serde_json::json;

use super::differ::{Found, Key, Known};
use crate::plugin::{Change, KindRef};

/// Objects in one `ConfigMap`: each line is ~120 bytes, well within the 1 MiB limit.
const LINES_PER_CONFIGMAP: usize = 4000;
/// The label that finds a plugin's ledger; the handlers are never told of objects that
/// carry it.
pub(crate) const LABEL: &str = "kubewasm.io/ledger";
const MANAGER: &str = "kubewasm-ledger";

/// One object's entry.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Entry {
    uid: String,
    resource_version: String,
}

/// A plugin's ledger in memory.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Ledger {
    /// By kind (`apps/v1/Deployment`), then object key.
    objects: BTreeMap<String, BTreeMap<Key, Entry>>,
    /// Kinds whose first list is done.
    listed: BTreeSet<String>,
    /// Whether any `ConfigMap` was found or written: the plugin ran here before.
    pub(crate) existed: bool,
    dirty: bool,
}

/// A kind's name in the ledger.
pub(crate) fn kind_id(kind: &KindRef) -> String {
    format!("{}/{}", kind.api_version(), kind.kind)
}

impl Ledger {
    /// What the differ of `kind` starts from, and whether the kind was never listed.
    pub(crate) fn known(&self, kind: &KindRef) -> (HashMap<Key, Known>, bool) {
        let id = kind_id(kind);
        let known = self
            .objects
            .get(&id)
            .into_iter()
            .flatten()
            .map(|(key, e)| {
                let known = Known { uid: e.uid.clone(), resource_version: e.resource_version.clone(), object: None };
                (key.clone(), known)
            })
            .collect();
        (known, !self.listed.contains(&id))
    }

    /// The handler has been told of `found` (or will never be): the ledger follows.
    pub(crate) fn record(&mut self, kind: &KindRef, found: &Found) {
        let objects = self.objects.entry(kind_id(kind)).or_default();
        match found.change {
            Change::Deleted => {
                // A later object of the same key (created again) is not this one.
                if objects.get(&found.key).is_some_and(|e| e.uid == found.uid) {
                    objects.remove(&found.key);
                }
            }
            Change::Added | Change::Updated => {
                let entry = Entry { uid: found.uid.clone(), resource_version: found.resource_version.clone() };
                objects.insert(found.key.clone(), entry);
            }
        }
        self.dirty = true;
    }

    /// The first list of `kind` is done.
    pub(crate) fn listed(&mut self, kind: &KindRef) {
        self.dirty |= self.listed.insert(kind_id(kind));
    }

    /// The `ConfigMap`s' data: `kinds` (one kind a line) in the first, `objects` (one
    /// `kind uid resourceVersion namespace name` a line, tab-separated) in each.
    fn chunks(&self) -> Vec<BTreeMap<String, String>> {
        let lines: Vec<String> = self
            .objects
            .iter()
            .flat_map(|(kind, objects)| {
                objects
                    .iter()
                    .map(move |((ns, name), e)| format!("{kind}\t{}\t{}\t{ns}\t{name}", e.uid, e.resource_version))
            })
            .collect();
        let mut chunks: Vec<BTreeMap<String, String>> = lines
            .chunks(LINES_PER_CONFIGMAP)
            .map(|chunk| BTreeMap::from([("objects".to_string(), chunk.join("\n"))]))
            .collect();
        if chunks.is_empty() {
            chunks.push(BTreeMap::from([("objects".to_string(), String::new())]));
        }
        let kinds: Vec<&str> = self.listed.iter().map(String::as_str).collect();
        chunks[0].insert("kinds".into(), kinds.join("\n"));
        chunks
    }

    /// A ledger from the data of its `ConfigMap`s; lines it cannot read are skipped (a
    /// skipped object is delivered again, never lost).
    fn from_chunks<'a>(chunks: impl IntoIterator<Item = &'a BTreeMap<String, String>>) -> Self {
        let mut ledger = Self { existed: true, ..Self::default() };
        for data in chunks {
            for kind in data.get("kinds").into_iter().flat_map(|k| k.lines()).filter(|l| !l.is_empty()) {
                ledger.listed.insert(kind.to_string());
            }
            for line in data.get("objects").into_iter().flat_map(|o| o.lines()) {
                let fields: Vec<&str> = line.split('\t').collect();
                if let [kind, uid, rv, ns, name] = fields[..] {
                    let entry = Entry { uid: uid.into(), resource_version: rv.into() };
                    ledger.objects.entry(kind.into()).or_default().insert((ns.into(), name.into()), entry);
                }
            }
        }
        ledger
    }
}

/// Where one plugin's ledger is kept.
pub(crate) struct Store {
    api: Api<ConfigMap>,
    plugin: String,
    /// `ConfigMap`s written last time, to delete the ones no longer needed.
    written: usize,
}

impl Store {
    pub(crate) fn new(client: kube::Client, namespace: &str, plugin: &str) -> Self {
        Self { api: Api::namespaced(client, namespace), plugin: plugin.to_string(), written: 0 }
    }

    fn name(&self, chunk: usize) -> String {
        if chunk == 0 {
            format!("kubewasm-ledger-{}", self.plugin)
        } else {
            format!("kubewasm-ledger-{}-{chunk}", self.plugin)
        }
    }

    /// The plugin's ledger: empty (and not `existed`) the first time it runs here.
    pub(crate) async fn load(&mut self) -> Result<Ledger, kube::Error> {
        let list = self.api.list(&ListParams::default().labels(&format!("{LABEL}={}", self.plugin))).await?;
        self.written = list.items.len();
        if list.items.is_empty() {
            return Ok(Ledger::default());
        }
        let data: Vec<BTreeMap<String, String>> =
            list.items.into_iter().map(|cm| cm.data.unwrap_or_default()).collect();
        Ok(Ledger::from_chunks(&data))
    }

    /// Writes `ledger` if it changed.
    pub(crate) async fn save(&mut self, ledger: &mut Ledger) -> Result<(), kube::Error> {
        if !ledger.dirty {
            return Ok(());
        }
        let chunks = ledger.chunks();
        let params = PatchParams::apply(MANAGER).force();
        for (i, data) in chunks.iter().enumerate() {
            let name = self.name(i);
            let object = json!({
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {
                    "name": name,
                    "labels": {LABEL: self.plugin, "app.kubernetes.io/managed-by": "kubewasm"},
                },
                "data": data,
            });
            self.api.patch(&name, &params, &Patch::Apply(&object)).await?;
        }
        for i in chunks.len()..self.written {
            match self.api.delete(&self.name(i), &DeleteParams::default()).await {
                Err(kube::Error::Api(status)) if status.code != 404 => return Err(kube::Error::Api(status)),
                _ => {}
            }
        }
        self.written = chunks.len();
        ledger.dirty = false;
        ledger.existed = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;

    fn pods() -> KindRef {
        KindRef::namespaced("", "v1", "Pod", "pods")
    }

    fn found(change: Change, name: &str, uid: &str, rv: &str) -> Found {
        Found {
            change,
            key: ("default".into(), name.into()),
            uid: uid.into(),
            resource_version: rv.into(),
            object: Value::Null,
            old: None,
            initial: false,
            final_state_unknown: false,
        }
    }

    #[test]
    fn a_ledger_survives_its_configmaps_and_follows_deliveries() {
        let mut ledger = Ledger::default();
        assert!(ledger.known(&pods()).1, "never listed");
        ledger.record(&pods(), &found(Change::Added, "a", "u1", "1"));
        ledger.record(&pods(), &found(Change::Added, "b", "u2", "2"));
        ledger.record(&pods(), &found(Change::Updated, "a", "u1", "3"));
        ledger.record(&pods(), &found(Change::Deleted, "b", "u2", "4"));
        ledger.listed(&pods());
        assert!(ledger.dirty);

        let back = Ledger::from_chunks(&ledger.chunks());
        let (known, never_listed) = back.known(&pods());
        assert!(!never_listed);
        assert_eq!(known.len(), 1);
        let a = &known[&("default".to_string(), "a".to_string())];
        assert_eq!((a.uid.as_str(), a.resource_version.as_str(), a.object.is_none()), ("u1", "3", true));
        assert!(back.existed);
    }

    #[test]
    fn a_deletion_of_an_older_object_of_the_same_name_leaves_the_newer_one() {
        let mut ledger = Ledger::default();
        ledger.record(&pods(), &found(Change::Added, "a", "new", "5"));
        ledger.record(&pods(), &found(Change::Deleted, "a", "old", "4"));
        assert_eq!(ledger.known(&pods()).0.len(), 1);
    }

    #[test]
    fn many_objects_are_split_across_configmaps() {
        let mut ledger = Ledger::default();
        for i in 0..=LINES_PER_CONFIGMAP {
            ledger.record(&pods(), &found(Change::Added, &format!("p{i}"), &format!("u{i}"), "1"));
        }
        let chunks = ledger.chunks();
        assert_eq!(chunks.len(), 2);
        assert!(chunks[0].contains_key("kinds") && !chunks[1].contains_key("kinds"));
        assert_eq!(Ledger::from_chunks(&chunks).known(&pods()).0.len(), LINES_PER_CONFIGMAP + 1);
    }
}
