//! One watch and one cache per kind for all the plugins of a host: plugins that watch
//! the same kind in the same scope share them, each controller subscribed to the
//! watch's events. The last controller to let go of a kind closes its watch.
//!
//! Ten plugins whose children are Deployments hold one cache of Deployments, not ten.
//! A watch is shared only where every subscriber would have opened the same one: the
//! same resource, the same namespace (or all of them), the same `managedFields` kept,
//! the same identity (a plugin that reads as its own `ServiceAccount` sees only
//! what that account may list), and the same selection: a sharded replica's watches of
//! parents and children select its share ([`Shard::selection`]), its watches of related
//! kinds everything.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use futures::{Stream, StreamExt};
use kube::Client;
use kube::api::{Api, DynamicObject, TypeMeta};
use kube::discovery::ApiResource;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use tokio::sync::{mpsc, watch};
use tokio::task::AbortHandle;
use tracing::{Instrument, debug, info_span};

use super::controlled::ControllerIndex;
use crate::coordination::shard::{Selection, Shard};
use crate::plugin::KindRef;

/// The watches and caches a host's controllers share. Cloning it shares the registry.
#[derive(Clone, Default)]
pub struct SharedCaches {
    registry: Arc<Registry>,
    /// Whose identity the watches are made with: `None` for the host's own.
    identity: Option<Arc<str>>,
}

impl std::fmt::Debug for SharedCaches {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The registry shows as the number of watches it holds open.
        f.debug_struct("SharedCaches")
            .field("watches", &self.watches())
            .field("identity", &self.identity)
            .finish_non_exhaustive()
    }
}

#[derive(Default)]
struct Registry {
    kinds: Mutex<HashMap<WatchKey, Weak<Watched>>>,
}

impl Registry {
    fn kinds(&self) -> MutexGuard<'_, HashMap<WatchKey, Weak<Watched>>> {
        self.kinds.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// What makes two watches the same watch.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct WatchKey {
    group: String,
    version: String,
    plural: String,
    /// `None`: every namespace (or a cluster-scoped kind).
    namespace: Option<String>,
    keep_manager: Option<String>,
    identity: Option<Arc<str>>,
    /// Selects the replica's share of the objects (parents and children of a sharded replica).
    selected: bool,
}

impl SharedCaches {
    /// A registry of its own: nothing shared with any other.
    pub fn new() -> Self {
        Self::default()
    }

    /// The same registry, for controllers that read as `identity` (impersonated): they
    /// share watches with each other, never with the host's own or another identity's.
    #[must_use]
    pub fn as_identity(&self, identity: &str) -> Self {
        Self { registry: self.registry.clone(), identity: Some(identity.into()) }
    }

    /// The watches open now, one per shared kind and scope.
    pub fn watches(&self) -> usize {
        self.registry.kinds().values().filter(|w| w.strong_count() > 0).count()
    }

    /// Subscribes to the watch of `kind` (in `namespace` only, if given and the kind is
    /// namespaced), opening it with `client` if none is open: the shared watch and a
    /// stream of the objects its events touch, beginning with every object already cached.
    ///
    /// `managedFields` are dropped from every cached object but the entries of
    /// `keep_manager`: the host reads its own entry on parents to know which labels and
    /// annotations it set, and nothing else needs them.
    ///
    /// With a `shard` that is partitioned, the watch selects the replica's share and
    /// lists again whenever the share changes.
    pub(crate) fn subscribe(
        &self,
        client: &Client,
        kind: &KindRef,
        resource: &ApiResource,
        namespace: Option<&str>,
        keep_manager: Option<String>,
        shard: Option<&Shard>,
    ) -> (Arc<Watched>, Subscription) {
        let selection = shard.filter(|s| s.partitioned()).map(Shard::selection);
        let namespace = namespace.filter(|_| kind.namespaced).map(str::to_string);
        let key = WatchKey {
            group: resource.group.clone(),
            version: resource.version.clone(),
            plural: resource.plural.clone(),
            namespace,
            keep_manager,
            identity: self.identity.clone(),
            selected: selection.is_some(),
        };
        let watched = {
            let mut kinds = self.registry.kinds();
            if let Some(watched) = kinds.get(&key).and_then(Weak::upgrade) {
                watched
            } else {
                let watched = Watched::open(client, resource, key.clone(), selection, Arc::downgrade(&self.registry));
                kinds.insert(key, Arc::downgrade(&watched));
                watched
            }
        };
        let subscription = watched.fanout.subscribe();
        (watched, subscription)
    }
}

/// One open watch and its cache.
pub(crate) struct Watched {
    pub(crate) store: Store<DynamicObject>,
    /// The cached objects by the uid of their controller.
    pub(crate) controlled: Arc<ControllerIndex>,
    fanout: Arc<Fanout>,
    task: AbortHandle,
    key: WatchKey,
    registry: Weak<Registry>,
}

impl Watched {
    /// Whether the cache holds what the selection of `epoch` (or a later one) selects;
    /// always for a watch that selects everything.
    pub(crate) fn selected(&self, epoch: u64) -> bool {
        !self.key.selected || self.fanout.listed.load(Ordering::Acquire) >= epoch
    }

    fn open(
        client: &Client,
        resource: &ApiResource,
        key: WatchKey,
        selection: Option<watch::Receiver<Selection>>,
        registry: Weak<Registry>,
    ) -> Arc<Self> {
        let writer = reflector::store::Writer::new(resource.clone());
        let store = writer.as_reader();
        let types = TypeMeta { api_version: resource.api_version.clone(), kind: resource.kind.clone() };
        let api: Api<DynamicObject> = match &key.namespace {
            Some(ns) => Api::namespaced_with(client.clone(), ns, resource),
            None => Api::all_with(client.clone(), resource),
        };
        let keep_manager = key.keep_manager.clone();
        let listing = Arc::new(AtomicU64::new(0));
        let events = selected_events(api, selection, listing.clone())
            .modify(move |object| {
                // List items may come without their type; requests need it.
                object.types = Some(types.clone());
                let fields = &mut object.metadata.managed_fields;
                match &keep_manager {
                    Some(manager) => {
                        if let Some(entries) = fields.as_mut() {
                            entries.retain(|e| e.manager.as_deref() == Some(manager));
                        }
                    }
                    None => *fields = None,
                }
            })
            .reflect(writer);
        let controlled = Arc::new(ControllerIndex::default());
        let fanout = Arc::new(Fanout {
            resource: resource.clone(),
            store: store.clone(),
            controlled: controlled.clone(),
            subscribers: Mutex::new(Subscribers { listing: true, listed: false, list: Vec::new() }),
            listing,
            listed: AtomicU64::new(0),
        });
        let span = info_span!("watch", kind = %resource.kind, group = %resource.group, namespace = ?key.namespace);
        let task = tokio::spawn(fanout.clone().run(events).instrument(span)).abort_handle();
        Arc::new(Self { store, controlled, fanout, task, key, registry })
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        self.task.abort();
        if let Some(registry) = self.registry.upgrade() {
            let mut kinds = registry.kinds();
            // Another subscriber may have opened the kind again since this one's last
            // subscriber let go: that watch stays.
            if kinds.get(&self.key).is_some_and(|w| w.strong_count() == 0) {
                kinds.remove(&self.key);
            }
        }
    }
}

/// The events of a watch through `api` of what `selection` selects (everything without
/// one): whenever the selection changes, the watch starts again with it, listing anew,
/// and `listing` holds the epoch of the selection being watched.
fn selected_events(
    api: Api<DynamicObject>,
    selection: Option<watch::Receiver<Selection>>,
    listing: Arc<AtomicU64>,
) -> impl Stream<Item = Result<watcher::Event<DynamicObject>, watcher::Error>> + Send {
    let start = move |selection: &Selection| {
        listing.store(selection.epoch, Ordering::Release);
        let mut config = watcher::Config::default();
        if let Some(labels) = &selection.labels {
            config = config.labels(labels);
        }
        watcher(api.clone(), config).default_backoff().boxed()
    };
    let first = start(&selection.as_ref().map_or(Selection { epoch: 0, labels: None }, |s| s.borrow().clone()));
    futures::stream::unfold((selection, first, start), |(mut selection, mut events, start)| async move {
        loop {
            let changed = async {
                match &mut selection {
                    Some(rx) => rx.changed().await.is_ok(),
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                event = events.next() => return event.map(|event| (event, (selection, events, start))),
                ok = changed => match selection.as_mut().filter(|_| ok) {
                    Some(rx) => events = start(&rx.borrow_and_update()),
                    // The shard is gone: the watch keeps its last selection.
                    None => selection = None,
                },
            }
        }
    })
}

/// The objects a subscriber's watch events touch, in order.
pub(crate) type Subscription = std::pin::Pin<Box<dyn Stream<Item = Arc<DynamicObject>> + Send>>;

/// Applies one watch's events to its index and hands the objects they touch to every
/// subscriber.
struct Fanout {
    resource: ApiResource,
    store: Store<DynamicObject>,
    controlled: Arc<ControllerIndex>,
    subscribers: Mutex<Subscribers>,
    /// The epoch of the selection being listed and watched.
    listing: Arc<AtomicU64>,
    /// The epoch of the selection the store holds, once listed.
    listed: AtomicU64,
}

struct Subscribers {
    /// A list is under way: its objects reach the store only when it completes.
    listing: bool,
    /// The list under way has handed out objects already.
    listed: bool,
    list: Vec<Subscriber>,
}

struct Subscriber {
    to: mpsc::UnboundedSender<Arc<DynamicObject>>,
    /// Joined after a list had handed out objects: gets every cached object once the
    /// list completes.
    wants_all: bool,
}

impl Fanout {
    fn subscribers(&self) -> MutexGuard<'_, Subscribers> {
        self.subscribers.lock().unwrap_or_else(PoisonError::into_inner)
    }

    async fn run(self: Arc<Self>, events: impl Stream<Item = Result<watcher::Event<DynamicObject>, watcher::Error>>) {
        let mut events = std::pin::pin!(events);
        while let Some(event) = events.next().await {
            match event {
                // The watcher retries with backoff.
                Err(e) => debug!(error = %e, "watch"),
                Ok(event) => self.apply(&event),
            }
        }
    }

    /// After the store: a reconcile this event triggers finds the object in the store
    /// and in the index.
    fn apply(&self, event: &watcher::Event<DynamicObject>) {
        self.controlled.apply(event);
        let mut subscribers = self.subscribers();
        match event {
            watcher::Event::Apply(object) => {
                // The store's own copy when it has it: one object in memory, not two.
                let key = ObjectRef::from_obj_with(object, self.resource.clone());
                let object = self.store.get(&key).unwrap_or_else(|| Arc::new(object.clone()));
                subscribers.send(&object);
            }
            watcher::Event::InitApply(object) => {
                subscribers.listed = true;
                subscribers.send(&Arc::new(object.clone()));
            }
            watcher::Event::Delete(object) => subscribers.send(&Arc::new(object.clone())),
            watcher::Event::Init => (subscribers.listing, subscribers.listed) = (true, false),
            watcher::Event::InitDone => {
                (subscribers.listing, subscribers.listed) = (false, false);
                // A new selection listed: the objects it gained reached the store only now,
                // after their events, so every subscriber gets every object again.
                let epoch = self.listing.load(Ordering::Acquire);
                let reselected = self.listed.swap(epoch, Ordering::AcqRel) != epoch;
                let mut all = None;
                subscribers.list.retain_mut(|s| {
                    if !std::mem::take(&mut s.wants_all) && !reselected {
                        return true;
                    }
                    let all = all.get_or_insert_with(|| self.store.state());
                    all.iter().all(|object| s.to.send(object.clone()).is_ok())
                });
            }
        }
    }

    fn subscribe(&self) -> Subscription {
        let (to, from) = mpsc::unbounded_channel();
        let mut subscribers = self.subscribers();
        let wants_all = subscribers.listing && subscribers.listed;
        if !subscribers.listing {
            for object in self.store.state() {
                let _ = to.send(object);
            }
        }
        subscribers.list.push(Subscriber { to, wants_all });
        futures::stream::unfold(from, |mut from| async move { from.recv().await.map(|object| (object, from)) }).boxed()
    }
}

impl Subscribers {
    /// Hands `object` to every subscriber; those gone leave the list.
    fn send(&mut self, object: &Arc<DynamicObject>) {
        self.list.retain(|s| s.to.send(object.clone()).is_ok());
    }
}

#[cfg(test)]
mod tests {
    use futures::FutureExt;
    use kube::runtime::reflector::store::Writer;
    use watcher::Event;

    use super::*;

    fn resource() -> ApiResource {
        ApiResource::erase::<k8s_openapi::api::apps::v1::Deployment>(&())
    }

    fn object(name: &str) -> DynamicObject {
        DynamicObject::new(name, &resource()).within("default")
    }

    /// A fan-out over a fresh store, and the store's writer (the reflector's part).
    fn fanout() -> (Fanout, Writer<DynamicObject>) {
        let writer = Writer::new(resource());
        let fanout = Fanout {
            resource: resource(),
            store: writer.as_reader(),
            controlled: Arc::default(),
            subscribers: Mutex::new(Subscribers { listing: true, listed: false, list: Vec::new() }),
            listing: Arc::default(),
            listed: AtomicU64::new(0),
        };
        (fanout, writer)
    }

    /// What the watch does with one event: the store first, then the fan-out.
    fn event(fanout: &Fanout, writer: &mut Writer<DynamicObject>, event: &Event<DynamicObject>) {
        writer.apply_watcher_event(event);
        fanout.apply(event);
    }

    /// The names a subscription has received so far, sorted.
    fn received(subscription: &mut Subscription) -> Vec<String> {
        let mut names = Vec::new();
        while let Some(Some(object)) = subscription.next().now_or_never() {
            names.push(object.metadata.name.clone().unwrap_or_default());
        }
        names.sort();
        names
    }

    #[test]
    fn a_late_subscriber_receives_what_is_cached_then_every_event() {
        let (fanout, mut writer) = fanout();
        let mut first = fanout.subscribe();
        event(&fanout, &mut writer, &Event::Init);
        event(&fanout, &mut writer, &Event::InitApply(object("a")));
        event(&fanout, &mut writer, &Event::InitDone);
        event(&fanout, &mut writer, &Event::Apply(object("b")));
        assert_eq!(received(&mut first), ["a", "b"], "joined before the list: each object once");

        let mut second = fanout.subscribe();
        assert_eq!(received(&mut second), ["a", "b"], "the cache as it is when it joins");
        event(&fanout, &mut writer, &Event::Delete(object("a")));
        assert_eq!(received(&mut first), ["a"]);
        assert_eq!(received(&mut second), ["a"], "a deletion reaches every subscriber");
    }

    #[test]
    fn a_subscriber_joining_during_a_list_receives_the_whole_list_when_it_completes() {
        let (fanout, mut writer) = fanout();
        event(&fanout, &mut writer, &Event::Init);
        event(&fanout, &mut writer, &Event::InitApply(object("a")));
        let mut joined = fanout.subscribe();
        assert!(received(&mut joined).is_empty(), "nothing is in the store before the list completes");
        event(&fanout, &mut writer, &Event::InitApply(object("b")));
        event(&fanout, &mut writer, &Event::InitDone);
        // b twice: as it was listed, then with the whole list.
        assert_eq!(received(&mut joined), ["a", "b", "b"]);
    }

    #[test]
    fn a_new_selection_listed_hands_every_object_to_every_subscriber_once_in_the_store() {
        let (fanout, mut writer) = fanout();
        let mut subscribed = fanout.subscribe();
        for e in [Event::Init, Event::InitApply(object("a")), Event::InitDone] {
            event(&fanout, &mut writer, &e);
        }
        assert_eq!(received(&mut subscribed), ["a"]);

        // The replica's share grew: the watch lists its new selection (epoch 1). The
        // objects gained reach the store at the end of the list, so they are handed out
        // again then, when a reconcile finds them.
        fanout.listing.store(1, Ordering::Release);
        for e in [Event::Init, Event::InitApply(object("a")), Event::InitApply(object("b")), Event::InitDone] {
            event(&fanout, &mut writer, &e);
        }
        assert_eq!(received(&mut subscribed), ["a", "a", "b", "b"], "as listed, then from the store");
        assert_eq!(fanout.listed.load(Ordering::Acquire), 1, "the store holds the selection of epoch 1");

        // The same selection listed again (after a watch error): each object once.
        for e in [Event::Init, Event::InitApply(object("a")), Event::InitApply(object("b")), Event::InitDone] {
            event(&fanout, &mut writer, &e);
        }
        assert_eq!(received(&mut subscribed), ["a", "b"]);
    }

    #[test]
    fn a_subscriber_gone_leaves_the_list() {
        let (fanout, mut writer) = fanout();
        event(&fanout, &mut writer, &Event::Init);
        event(&fanout, &mut writer, &Event::InitDone);
        let kept = fanout.subscribe();
        drop(fanout.subscribe());
        event(&fanout, &mut writer, &Event::Apply(object("a")));
        assert_eq!(fanout.subscribers().list.len(), 1);
        drop(kept);
    }
}
