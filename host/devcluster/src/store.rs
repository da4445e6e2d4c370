//! Stored objects, the global resourceVersion counter, the watch history every write feeds,
//! and the indexes kept on every write (owners for garbage collection, objects a cleanup
//! controller works on, numbers held of shared ranges). It knows objects and versions, never
//! a kind: what to index of an object comes with the write ([`Keys`]).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::ops::Bound;
use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::broadcast;

use super::allocator::{Allocations, Range};
use super::object;
use super::object::FOREGROUND;
use super::resource::{GroupResource, Location, ObjectKey};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EventType {
    Added,
    Modified,
    Deleted,
}

/// One committed change, as watchers see it.
#[derive(Debug)]
pub(crate) struct Change {
    pub rv: u64,
    pub kind: EventType,
    pub resource: GroupResource,
    /// The object after the change (for a deletion: its last state, with the deletion's version).
    pub object: Arc<Value>,
    /// The object before the change, so selector-filtered watches can tell "stopped matching".
    pub old: Option<Arc<Value>>,
}

/// What garbage collection needs to know, kept up to date on every write so a collection pass
/// only looks at the objects a change concerns (see `gc.rs`).
#[derive(Debug, Default)]
struct GcIndex {
    /// Every stored object's uid.
    uids: HashMap<String, Location>,
    /// Owner uid to the objects naming it in `ownerReferences`.
    dependents: HashMap<String, BTreeSet<Location>>,
    /// The uids of objects being deleted in the foreground (they wait for their dependents).
    foreground: HashSet<String>,
    /// Objects being deleted that a cleanup controller empties first (a namespace, a CRD):
    /// garbage collection looks at them on every pass until they are gone.
    sweeping: BTreeSet<Location>,
    /// Objects garbage collection has to look at again.
    queue: BTreeSet<Location>,
}

fn owner_uids(obj: &Value) -> impl Iterator<Item = &str> {
    object::owner_refs(obj).iter().filter_map(|r| r.get("uid").and_then(Value::as_str))
}

/// Whether `obj` is being deleted in the foreground, waiting for its dependents.
pub(crate) fn in_foreground_deletion(obj: &Value) -> bool {
    object::is_deleting(obj) && object::has_finalizer(obj, FOREGROUND)
}

/// What the store indexes of an object besides its owners, given with each write by the layer
/// that knows the object's kind (from its strategy).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Keys {
    /// The object is being deleted and a cleanup controller empties it first.
    pub sweep: bool,
    /// The numbers of shared ranges the object holds (a Service's cluster IP and node ports).
    pub holds: Vec<(&'static Range, u32)>,
}

impl GcIndex {
    /// Indexes `new`, just stored at `loc` in place of `old`, and queues what the write may
    /// concern. Writes that change neither ownerReferences nor a deletion queue nothing.
    /// `sweep`: a cleanup controller has work on `new`.
    fn write(&mut self, loc: &Location, old: Option<&Value>, new: &Value, sweep: bool) {
        let uid = object::uid(new);
        if let Some(old) = old
            && object::uid(old) != uid
        {
            self.forget(loc, old);
            return self.write(loc, None, new, sweep);
        }
        if old.is_none() {
            self.uids.insert(uid.to_string(), loc.clone());
        }
        if old.is_none_or(|old| object::owner_refs(old) != object::owner_refs(new)) {
            if let Some(old) = old {
                self.unlink(loc, old);
            }
            let mut dangling = false;
            for owner in owner_uids(new) {
                dangling |= !self.uids.contains_key(owner);
                self.dependents.entry(owner.to_string()).or_default().insert(loc.clone());
            }
            // An owner in foreground deletion waits for (and deletes) its new dependents too.
            self.queue_waiting_owners(new);
            if dangling {
                self.queue.insert(loc.clone());
            }
        }
        if in_foreground_deletion(new) {
            self.foreground.insert(uid.to_string());
            self.queue.insert(loc.clone());
        } else {
            self.foreground.remove(uid);
        }
        if sweep {
            self.sweeping.insert(loc.clone());
        } else {
            self.sweeping.remove(loc);
        }
    }

    /// Forgets `obj`, removed from `loc`, and queues its dependents (their owner is gone) and
    /// its owners that wait for it in foreground deletion.
    fn forget(&mut self, loc: &Location, obj: &Value) {
        let uid = object::uid(obj);
        if self.uids.get(uid) == Some(loc) {
            self.uids.remove(uid);
        }
        self.foreground.remove(uid);
        self.sweeping.remove(loc);
        if let Some(deps) = self.dependents.get(uid) {
            self.queue.extend(deps.iter().cloned());
        }
        self.unlink(loc, obj);
    }

    /// Removes `loc` from the dependents of the owners `obj` names, queueing those that wait
    /// for it in foreground deletion.
    fn unlink(&mut self, loc: &Location, obj: &Value) {
        self.queue_waiting_owners(obj);
        for owner in owner_uids(obj) {
            if let Some(set) = self.dependents.get_mut(owner) {
                set.remove(loc);
                if set.is_empty() {
                    self.dependents.remove(owner);
                }
            }
        }
    }

    fn queue_waiting_owners(&mut self, obj: &Value) {
        for owner in owner_uids(obj) {
            if self.foreground.contains(owner)
                && let Some(owner_loc) = self.uids.get(owner)
            {
                self.queue.insert(owner_loc.clone());
            }
        }
    }
}

/// A receiver of the changes to one resource committed after it was created.
pub(crate) type Subscription = broadcast::Receiver<Arc<Change>>;

/// How many changes of one resource a watcher may fall behind before it is ended with
/// `410 Gone` (as the real server ends a watcher that does not keep up).
const WATCH_BUFFER: usize = 1 << 16;

/// All objects plus the history needed to serve watches from a past resourceVersion.
#[derive(Debug)]
pub(crate) struct Store {
    rv: u64,
    objects: BTreeMap<GroupResource, BTreeMap<ObjectKey, Arc<Value>>>,
    history: VecDeque<Arc<Change>>,
    history_limit: usize,
    /// The oldest resourceVersion a watch may start from; older ones get 410 Gone.
    oldest_watchable: u64,
    /// The watchers of each resource: a write wakes those of its resource only. A channel
    /// is made for the first watcher and dropped at a write that finds none left.
    changes: HashMap<GroupResource, broadcast::Sender<Arc<Change>>>,
    /// The resourceVersion of the last change, for reads that wait for a version.
    last_rv: tokio::sync::watch::Sender<u64>,
    gc: GcIndex,
    /// What the objects of each resource hold of its shared ranges (see `allocator`).
    allocations: HashMap<GroupResource, Allocations>,
    /// What each object holding numbers holds, released when it changes or goes.
    holdings: HashMap<Location, Vec<(&'static Range, u32)>>,
    /// How often each object was created and removed, for tests that look for duplicate
    /// creates and unexpected deletes (the oracles of fault-injection runs).
    lifecycles: BTreeMap<String, Lifecycle>,
}

/// How often one object (by resource, namespace and name) was created and removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Lifecycle {
    pub created: u32,
    pub removed: u32,
}

fn lifecycle_key(gr: &GroupResource, ns: &str, name: &str) -> String {
    let resource = if gr.0.is_empty() { gr.1.clone() } else { format!("{}.{}", gr.1, gr.0) };
    if ns.is_empty() { format!("{resource}/{name}") } else { format!("{resource}/{ns}/{name}") }
}

impl Store {
    pub(crate) fn new(history_limit: usize) -> Store {
        Store {
            rv: 0,
            objects: BTreeMap::new(),
            history: VecDeque::new(),
            history_limit: history_limit.max(1),
            oldest_watchable: 0,
            changes: HashMap::new(),
            last_rv: tokio::sync::watch::Sender::new(0),
            gc: GcIndex::default(),
            allocations: HashMap::new(),
            holdings: HashMap::new(),
            lifecycles: BTreeMap::new(),
        }
    }

    /// Creations and removals per object (`resource[.group]/[namespace/]name`).
    pub(crate) fn lifecycles(&self) -> &BTreeMap<String, Lifecycle> {
        &self.lifecycles
    }

    /// The resourceVersion of the last committed change.
    pub(crate) fn current_rv(&self) -> u64 {
        self.rv
    }

    pub(crate) fn oldest_watchable(&self) -> u64 {
        self.oldest_watchable
    }

    pub(crate) fn get(&self, gr: &GroupResource, ns: &str, name: &str) -> Option<Arc<Value>> {
        self.objects.get(gr)?.get(&(ns.to_string(), name.to_string())).cloned()
    }

    /// Objects of one resource, in key order, optionally restricted to one namespace.
    pub(crate) fn list(&self, gr: &GroupResource, ns: Option<&str>) -> Vec<Arc<Value>> {
        let Some(objects) = self.objects.get(gr) else {
            return Vec::new();
        };
        match ns {
            Some(ns) => objects
                .range((ns.to_string(), String::new())..)
                .take_while(|((n, _), _)| n == ns)
                .map(|(_, o)| o.clone())
                .collect(),
            None => objects.values().cloned().collect(),
        }
    }

    /// Objects of one resource as they were at `rv` (the snapshot a continued list pages
    /// through), in key order from just after `after`, optionally in one namespace; `None`
    /// when the history no longer reaches back. The stored objects are read in place and the
    /// changes after `rv` undone on the way, so a page costs the objects it passes over plus
    /// the changes to the resource since `rv`, not a copy of the resource.
    pub(crate) fn list_at<'a>(
        &'a self,
        gr: &GroupResource,
        ns: Option<&'a str>,
        rv: u64,
        after: Option<&ObjectKey>,
    ) -> Option<impl Iterator<Item = &'a Arc<Value>> + 'a> {
        if rv < self.rv && rv < self.oldest_watchable {
            return None;
        }
        let start = match (ns, after) {
            (Some(ns), Some(after)) if after.0.as_str() < ns => Bound::Included((ns.to_string(), String::new())),
            (_, Some(after)) => Bound::Excluded(after.clone()),
            (Some(ns), None) => Bound::Included((ns.to_string(), String::new())),
            (None, None) => Bound::Unbounded,
        };
        let within = {
            let start = start.clone();
            move |key: &ObjectKey| {
                let above = match &start {
                    Bound::Included(s) => key >= s,
                    Bound::Excluded(s) => key > s,
                    Bound::Unbounded => true,
                };
                above && ns.is_none_or(|ns| key.0 == ns)
            }
        };
        // The state at `rv` of each key changed since: the state before its oldest later change.
        let mut undone: BTreeMap<ObjectKey, Option<&'a Arc<Value>>> = BTreeMap::new();
        for change in self.history.iter().rev().take_while(|c| c.rv > rv) {
            if change.resource != *gr {
                continue;
            }
            let key = (object::namespace(&change.object).to_string(), object::name(&change.object).to_string());
            let before = if change.kind == EventType::Added { None } else { change.old.as_ref() };
            undone.insert(key, before);
        }
        undone.retain(|k, _| within(k));
        let mut undone = undone.into_iter().peekable();
        let objects = self.objects.get(gr);
        let mut live = objects
            .into_iter()
            .flat_map(move |o| o.range((start.clone(), Bound::Unbounded)))
            .take_while(move |(k, _)| within(k))
            .peekable();
        Some(std::iter::from_fn(move || {
            loop {
                let from_live = match (live.peek(), undone.peek()) {
                    (None, None) => return None,
                    (Some((l, _)), Some((u, _))) => *l < u,
                    (Some(_), None) => true,
                    (None, Some(_)) => false,
                };
                if from_live {
                    return live.next().map(|(_, o)| o);
                }
                let (key, before) = undone.next()?;
                if live.peek().is_some_and(|(l, _)| **l == key) {
                    live.next();
                }
                if let Some(before) = before {
                    return Some(before);
                }
            }
        }))
    }

    /// One object as it was at `rv` (which the history must reach back to).
    pub(crate) fn get_at(&self, gr: &GroupResource, ns: &str, name: &str, rv: u64) -> Option<Arc<Value>> {
        let mut found = self.get(gr, ns, name);
        for change in self.history.iter().rev().take_while(|c| c.rv > rv) {
            if change.resource == *gr && object::namespace(&change.object) == ns && object::name(&change.object) == name
            {
                found = if change.kind == EventType::Added { None } else { change.old.clone() };
            }
        }
        found
    }

    pub(crate) fn uid_exists(&self, uid: &str) -> bool {
        self.gc.uids.contains_key(uid)
    }

    /// The objects whose `ownerReferences` name `uid`.
    pub(crate) fn dependents_of(&self, uid: &str) -> Vec<Location> {
        self.gc.dependents.get(uid).map(|d| d.iter().cloned().collect()).unwrap_or_default()
    }

    /// The objects garbage collection has to look at, emptying the queue.
    pub(crate) fn take_gc_queue(&mut self) -> Vec<Location> {
        std::mem::take(&mut self.gc.queue).into_iter().collect()
    }

    /// The objects being deleted that a cleanup controller empties first.
    pub(crate) fn sweeping(&self) -> Vec<Location> {
        self.gc.sweeping.iter().cloned().collect()
    }

    /// Whether objects wait in the garbage collection queue.
    pub(crate) fn gc_queued(&self) -> bool {
        !self.gc.queue.is_empty()
    }

    /// Whether a garbage collection pass has anything to do.
    pub(crate) fn gc_pending(&self) -> bool {
        !self.gc.queue.is_empty() || !self.gc.sweeping.is_empty()
    }

    /// Every stored object with its resource (for garbage collection and persistence).
    pub(crate) fn iter_all(&self) -> impl Iterator<Item = (&GroupResource, &Arc<Value>)> {
        self.objects.iter().flat_map(|(gr, objs)| objs.values().map(move |o| (gr, o)))
    }

    /// Stores `obj` (created or replaced) under a new resourceVersion, indexes it with `keys`,
    /// and tells the watchers.
    pub(crate) fn put(&mut self, gr: &GroupResource, mut obj: Value, keys: Keys) -> Arc<Value> {
        self.rv += 1;
        object::set_meta(&mut obj, "resourceVersion", json!(self.rv.to_string()));
        let key = (object::namespace(&obj).to_string(), object::name(&obj).to_string());
        let obj = Arc::new(obj);
        let loc = (gr.clone(), key.clone());
        let old = self.objects.entry(gr.clone()).or_default().insert(key, obj.clone());
        self.gc.write(&loc, old.as_deref(), &obj, keys.sweep);
        self.hold(&loc, keys.holds);
        if old.is_none() {
            self.lifecycles.entry(lifecycle_key(gr, &loc.1.0, &loc.1.1)).or_default().created += 1;
        }
        let kind = if old.is_some() { EventType::Modified } else { EventType::Added };
        self.record(Change { rv: self.rv, kind, resource: gr.clone(), object: obj.clone(), old });
        obj
    }

    /// Removes an object for good; watchers get DELETED with the deletion's resourceVersion.
    pub(crate) fn remove(&mut self, gr: &GroupResource, ns: &str, name: &str) -> Option<Arc<Value>> {
        let key = (ns.to_string(), name.to_string());
        let old = self.objects.get_mut(gr)?.remove(&key)?;
        self.lifecycles.entry(lifecycle_key(gr, ns, name)).or_default().removed += 1;
        let loc = (gr.clone(), key);
        self.gc.forget(&loc, &old);
        self.hold(&loc, Vec::new());
        self.rv += 1;
        let mut last = (*old).clone();
        object::set_meta(&mut last, "resourceVersion", json!(self.rv.to_string()));
        let last = Arc::new(last);
        self.record(Change {
            rv: self.rv,
            kind: EventType::Deleted,
            resource: gr.clone(),
            object: last.clone(),
            old: Some(old),
        });
        Some(last)
    }

    /// What the stored objects of `gr` hold of its shared ranges.
    pub(crate) fn allocations(&self, gr: &GroupResource) -> &Allocations {
        static NONE: std::sync::LazyLock<Allocations> = std::sync::LazyLock::new(Allocations::default);
        self.allocations.get(gr).unwrap_or(&NONE)
    }

    /// Records that the object at `loc` holds `holds` now, releasing what it held before.
    fn hold(&mut self, loc: &Location, holds: Vec<(&'static Range, u32)>) {
        let released = self.holdings.get(loc).cloned().unwrap_or_default();
        if released == holds {
            return;
        }
        let allocations = self.allocations.entry(loc.0.clone()).or_default();
        for (range, n) in released {
            allocations.release(range, n);
        }
        for (range, n) in &holds {
            allocations.take(range, *n);
        }
        if holds.is_empty() {
            self.holdings.remove(loc);
        } else {
            self.holdings.insert(loc.clone(), holds);
        }
    }

    fn record(&mut self, change: Change) {
        let change = Arc::new(change);
        self.history.push_back(change.clone());
        while self.history.len() > self.history_limit {
            if let Some(dropped) = self.history.pop_front() {
                self.oldest_watchable = dropped.rv;
            }
        }
        self.last_rv.send_replace(change.rv);
        // A send fails when every watcher of the resource has gone.
        if let Some(watchers) = self.changes.get(&change.resource)
            && watchers.send(change.clone()).is_err()
        {
            self.changes.remove(&change.resource);
        }
    }

    /// The changes to `gr` after `rv` still in the history, plus a receiver for the ones to
    /// come. `None` when `rv` is older than the retained history.
    pub(crate) fn changes_since(&mut self, gr: &GroupResource, rv: u64) -> Option<(Vec<Arc<Change>>, Subscription)> {
        if rv < self.oldest_watchable {
            return None;
        }
        let newer = self.history.partition_point(|c| c.rv <= rv);
        let past = self.history.range(newer..).filter(|c| c.resource == *gr).cloned().collect();
        Some((past, self.subscribe(gr)))
    }

    /// A receiver of the changes to `gr` from now on.
    pub(crate) fn subscribe(&mut self, gr: &GroupResource) -> Subscription {
        self.changes.entry(gr.clone()).or_insert_with(|| broadcast::channel(WATCH_BUFFER).0).subscribe()
    }

    /// A receiver of the resourceVersion of the last change.
    pub(crate) fn last_rv(&self) -> tokio::sync::watch::Receiver<u64> {
        self.last_rv.subscribe()
    }

    /// Restores a snapshot: objects are inserted without events, the counter continues from `rv`.
    pub(crate) fn restore(&mut self, rv: u64, objects: Vec<(GroupResource, Value, Keys)>) {
        for (gr, obj, keys) in objects {
            let loc = (gr, (object::namespace(&obj).to_string(), object::name(&obj).to_string()));
            self.gc.write(&loc, None, &obj, keys.sweep);
            self.hold(&loc, keys.holds);
            self.objects.entry(loc.0).or_default().insert(loc.1, Arc::new(obj));
        }
        self.rv = rv;
        self.oldest_watchable = rv;
    }
}
