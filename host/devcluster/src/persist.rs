//! `--data-dir`: the store as a JSON snapshot, written after changes and loaded at start.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::cluster::Cluster;
use super::resource::GroupResource;
use super::state::Shared;
use super::store::Store;

const FILE: &str = "store.json";

/// How long writes are collected before a snapshot is taken.
const DEBOUNCE: Duration = Duration::from_millis(100);

/// The store as written to disk: the objects are taken (shared) under the lock, and
/// serialized after it is released.
#[derive(serde::Serialize)]
struct Snapshot {
    #[serde(rename = "resourceVersion")]
    resource_version: u64,
    objects: Vec<Entry>,
}

/// One object and its resource (shared by the objects of one resource).
struct Entry {
    resource: Arc<GroupResource>,
    object: Arc<Value>,
}

impl serde::Serialize for Entry {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut entry = serializer.serialize_struct("Entry", 3)?;
        entry.serialize_field("group", &self.resource.0)?;
        entry.serialize_field("resource", &self.resource.1)?;
        entry.serialize_field("object", &*self.object)?;
        entry.end()
    }
}

fn snapshot(store: &Store) -> Snapshot {
    let mut objects = Vec::new();
    let mut resource: Option<Arc<GroupResource>> = None;
    for (gr, object) in store.iter_all() {
        let shared = match &resource {
            Some(r) if **r == *gr => r.clone(),
            _ => resource.insert(Arc::new(gr.clone())).clone(),
        };
        objects.push(Entry { resource: shared, object: object.clone() });
    }
    Snapshot { resource_version: store.current_rv(), objects }
}

/// Loads a snapshot written by an earlier run (what its objects serve, a CRD's resource, is
/// served again). A missing file is an empty store; an unreadable one is an error (nothing is
/// overwritten).
pub(crate) fn load(dir: &Path, cluster: &mut Cluster) -> std::io::Result<bool> {
    let path = dir.join(FILE);
    let text = match std::fs::read(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e),
    };
    let snap: Value = serde_json::from_slice(&text)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, format!("{}: {e}", path.display())))?;
    let rv = snap.get("resourceVersion").and_then(Value::as_u64).unwrap_or(0);
    let mut objects = Vec::new();
    for entry in snap.get("objects").and_then(Value::as_array).into_iter().flatten() {
        let group = entry.get("group").and_then(Value::as_str).unwrap_or_default().to_string();
        let resource = entry.get("resource").and_then(Value::as_str).unwrap_or_default().to_string();
        let Some(obj) = entry.get("object").cloned() else {
            continue;
        };
        objects.push(((group, resource), obj));
    }
    cluster.restore(rv, objects);
    Ok(true)
}

fn write(path: &Path, snap: &Snapshot) -> std::io::Result<()> {
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, serde_json::to_vec(snap)?)?;
    std::fs::rename(&tmp, path)
}

/// Writes a snapshot now if the store changed since `written_rv`; returns the version written.
pub(crate) fn flush(shared: &Shared, dir: &Path, written_rv: u64) -> u64 {
    let (rv, snap) = {
        let cluster = shared.lock();
        let store = &cluster.store;
        if store.current_rv() == written_rv {
            return written_rv;
        }
        (store.current_rv(), snapshot(store))
    };
    match write(&dir.join(FILE), &snap) {
        Ok(()) => rv,
        Err(e) => {
            tracing::warn!(error = %e, dir = %dir.display(), "could not write the store snapshot");
            written_rv
        }
    }
}

/// Writes a snapshot after each burst of changes until shutdown, then a last one.
pub(crate) async fn run(shared: Arc<Shared>, dir: PathBuf) {
    let mut written = shared.lock().store.current_rv();
    let mut shutdown = shared.shutdown.clone();
    loop {
        tokio::select! {
            () = shared.persist.notified() => {
                tokio::time::sleep(DEBOUNCE).await;
                let (s, d) = (shared.clone(), dir.clone());
                written = tokio::task::spawn_blocking(move || flush(&s, &d, written)).await.unwrap_or(written);
            }
            _ = shutdown.changed() => break,
        }
    }
    flush(&shared, &dir, written);
}
