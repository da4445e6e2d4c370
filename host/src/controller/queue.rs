//! The bookkeeping of a plugin's work queue, all of it: what is queued (parents
//! triggered and not yet started), when a reconcile runs again (its requeue, or the
//! backoff after a failure), and the `Action` kube-runtime's scheduler acts on.
//! kube-runtime's scheduler keeps its queue to itself, so the controller counts at
//! the edges it sees: triggers in (watch events, resyncs, requeues), reconciles
//! started out. Like the scheduler, it keeps one entry per parent, due at the
//! earliest time anything asked for. It also knows whether anything but a change of the
//! parent itself asked for a reconcile, which the reconcile needs to tell the echo of the
//! host's own write from a reason to call the plugin.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use futures::{Stream, StreamExt};
use kube::api::DynamicObject;
use kube::discovery::ApiResource;
use kube::runtime::controller::Action;
use kube::runtime::reflector::{ObjectRef, Store};

use super::backoff::Backoff;

type Key = ObjectRef<DynamicObject>;

/// One plugin's queue of parents.
pub(crate) struct Queue {
    due: Mutex<HashMap<Key, Instant>>,
    /// Parents something other than a change of the parent itself (a child or related
    /// object, a resync) asked to reconcile since their last reconcile started.
    asked: Mutex<HashSet<Key>>,
    /// When each parent's requeue or retry is due: the scheduler's own timer, whose
    /// firing passes none of the streams counted here.
    requeues: Mutex<HashMap<Key, Instant>>,
    /// The parent cache: the scheduler drops a parent deleted before its turn.
    parents: Store<DynamicObject>,
    resource: ApiResource,
    backoff: Backoff<Key>,
}

impl Queue {
    pub(crate) fn new(parents: Store<DynamicObject>, resource: ApiResource) -> Self {
        Self {
            due: Mutex::default(),
            asked: Mutex::default(),
            requeues: Mutex::default(),
            parents,
            resource,
            backoff: Backoff::new(),
        }
    }

    /// The key of a parent object.
    pub(crate) fn key(&self, parent: &DynamicObject) -> Key {
        ObjectRef::from_obj_with(parent, self.resource.clone())
    }

    fn due(&self) -> MutexGuard<'_, HashMap<Key, Instant>> {
        self.due.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn asked(&self) -> MutexGuard<'_, HashSet<Key>> {
        self.asked.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn requeues(&self) -> MutexGuard<'_, HashMap<Key, Instant>> {
        self.requeues.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `parent` is to be reconciled after `delay`, or sooner if it already was. A
    /// parent no longer cached (its deletion just seen) leaves the queue instead, so
    /// the queue never outgrows the cache.
    fn after(&self, parent: Key, delay: Duration) {
        if self.parents.get(&parent).is_none() {
            self.due().remove(&parent);
            self.asked().remove(&parent);
            self.requeues().remove(&parent);
            return;
        }
        let at = Instant::now() + delay;
        self.due().entry(parent).and_modify(|due| *due = (*due).min(at)).or_insert(at);
    }

    /// `parent` is to be reconciled now.
    fn now(&self, parent: Key) {
        self.after(parent, Duration::ZERO);
    }

    /// Every cached parent is to be reconciled now (a resync).
    fn all(&self) {
        let parents = self.parents.state();
        let now = Instant::now();
        let mut due = self.due();
        let mut asked = self.asked();
        for parent in parents {
            let key = self.key(&parent);
            asked.insert(key.clone());
            due.insert(key, now);
        }
    }

    /// The parent watch, each parent counted in as it passes to the queue.
    pub(crate) fn count_parents<S>(self: &Arc<Self>, parents: S) -> impl Stream<Item = S::Item> + use<S>
    where
        S: Stream<Item = Arc<DynamicObject>>,
    {
        let pending = self.clone();
        parents.inspect(move |parent| pending.now(pending.key(parent)))
    }

    /// A child or related kind's mapper, the parents it names counted in.
    pub(crate) fn count_mapped<T, F>(self: &Arc<Self>, mapper: F) -> impl Fn(T) -> Vec<Key> + use<T, F>
    where
        F: Fn(T) -> Vec<Key>,
    {
        let pending = self.clone();
        move |object| {
            let parents = mapper(object);
            for parent in &parents {
                pending.asked().insert(parent.clone());
                pending.now(parent.clone());
            }
            parents
        }
    }

    /// Resync requests, each counting every cached parent in.
    pub(crate) fn count_resyncs<S>(self: &Arc<Self>, resyncs: S) -> impl Stream<Item = ()> + use<S>
    where
        S: Stream<Item = ()>,
    {
        let pending = self.clone();
        resyncs.inspect(move |()| pending.all())
    }

    /// `parent`'s reconcile has started: it has left the queue. True when something other
    /// than a change of the parent itself asked for it: a child or related object, a
    /// resync, its requeue or retry coming due.
    pub(crate) fn started(&self, parent: &Key) -> bool {
        self.due().remove(parent);
        let asked = self.asked().remove(parent);
        asked || self.requeues().get(parent).is_some_and(|at| *at <= Instant::now())
    }

    /// `parent`'s reconcile succeeded: its backoff is forgotten, and it is queued again
    /// after `requeue` (`None`: only when something changes).
    pub(crate) fn succeeded(&self, parent: Key, requeue: Option<Duration>) -> Action {
        self.backoff.succeed(&parent);
        let Some(delay) = requeue else {
            self.requeues().remove(&parent);
            return Action::await_change();
        };
        self.requeues().insert(parent.clone(), Instant::now() + delay);
        self.after(parent, delay);
        Action::requeue(delay)
    }

    /// `parent`'s reconcile was not needed (see [`Queue::started`]): the requeue of the one
    /// before it still stands.
    pub(crate) fn skipped(&self, parent: &Key) -> Action {
        let due = self.requeues().get(parent).copied();
        due.map_or_else(Action::await_change, |at| Action::requeue(at.saturating_duration_since(Instant::now())))
    }

    /// `parent`'s reconcile failed: it is queued again after its backoff, the longest
    /// at once when retrying cannot help (a change to the parent, a child or a related
    /// object reconciles it at once anyway).
    pub(crate) fn failed(&self, parent: Key, retryable: bool) -> Action {
        let delay =
            if retryable { self.backoff.fail(parent.clone()) } else { self.backoff.fail_permanently(parent.clone()) };
        self.requeues().insert(parent.clone(), Instant::now() + delay);
        self.after(parent, delay);
        Action::requeue(delay)
    }

    /// Parents waiting for a reconcile now.
    pub(crate) fn depth(&self) -> usize {
        let now = Instant::now();
        let due = self.due();
        due.iter().filter(|(parent, at)| **at <= now && self.parents.get(parent).is_some()).count()
    }
}

#[cfg(test)]
mod tests {
    use kube::runtime::reflector::store::Writer;
    use kube::runtime::watcher;

    use super::*;

    fn resource() -> ApiResource {
        ApiResource {
            group: "example.com".into(),
            version: "v1".into(),
            api_version: "example.com/v1".into(),
            kind: "Echo".into(),
            plural: "echoes".into(),
        }
    }

    fn parent(name: &str) -> DynamicObject {
        DynamicObject::new(name, &resource()).within("default")
    }

    /// A queue over a parent cache holding `names`, and the cache's writer.
    fn cached(names: &[&str]) -> (Queue, Writer<DynamicObject>) {
        let mut writer = Writer::new(resource());
        for name in names {
            writer.apply_watcher_event(&watcher::Event::Apply(parent(name)));
        }
        (Queue::new(writer.as_reader(), resource()), writer)
    }

    fn pending(names: &[&str]) -> Queue {
        cached(names).0
    }

    #[test]
    fn a_parent_triggered_twice_waits_once_and_leaves_when_started() {
        let queue = pending(&["a", "b"]);
        let (a, b) = (queue.key(&parent("a")), queue.key(&parent("b")));
        queue.now(a.clone());
        queue.now(a.clone());
        queue.now(b);
        assert_eq!(queue.depth(), 2);
        queue.started(&a);
        assert_eq!(queue.depth(), 1);
    }

    #[test]
    fn a_requeue_waits_outside_the_queue_until_due_or_triggered() {
        let queue = pending(&["a"]);
        let a = queue.key(&parent("a"));
        queue.after(a.clone(), Duration::from_hours(1));
        assert_eq!(queue.depth(), 0, "not due for an hour");
        queue.now(a.clone());
        assert_eq!(queue.depth(), 1, "a watch event brings it forward");
        queue.after(a, Duration::from_hours(1));
        assert_eq!(queue.depth(), 1, "the earliest time wins");
    }

    #[test]
    fn a_resync_queues_every_cached_parent_and_a_deleted_one_is_dropped() {
        let queue = pending(&["a", "b", "c"]);
        queue.all();
        assert_eq!(queue.depth(), 3);
        queue.now(queue.key(&parent("gone")));
        assert_eq!(queue.depth(), 3, "a parent not in the cache is never reconciled");
    }

    #[test]
    fn a_reconcile_knows_whether_more_than_a_change_of_its_parent_asked_for_it() {
        let queue = Arc::new(pending(&["a", "b"]));
        let (a, b) = (queue.key(&parent("a")), queue.key(&parent("b")));
        queue.now(a.clone());
        assert!(!queue.started(&a), "only the parent changed");
        let mapper = queue.count_mapped(|_: DynamicObject| vec![ObjectRef::from_obj_with(&parent("a"), resource())]);
        mapper(parent("child"));
        assert!(queue.started(&a), "a child asked");
        assert!(!queue.started(&a), "asked once, for the one reconcile");
        queue.all();
        assert!(queue.started(&b), "a resync asked");
        let _ = queue.succeeded(a.clone(), Some(Duration::ZERO));
        assert!(queue.started(&a), "its requeue came due");
        let _ = queue.succeeded(b.clone(), Some(Duration::from_hours(1)));
        assert!(!queue.started(&b), "its requeue is not due yet");
        assert_ne!(queue.skipped(&b), Action::await_change(), "the requeue still stands");
    }

    #[test]
    fn a_parent_leaves_the_queue_when_its_deletion_is_seen() {
        let (queue, mut writer) = cached(&["a", "b"]);
        let a = queue.key(&parent("a"));
        queue.now(a.clone());
        queue.after(queue.key(&parent("b")), Duration::from_hours(1));
        writer.apply_watcher_event(&watcher::Event::Delete(parent("a")));
        queue.now(a);
        assert_eq!(queue.due().len(), 1, "only b's requeue is kept");
        assert_eq!(queue.depth(), 0);
    }
}
