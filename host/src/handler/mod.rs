//! One plugin as an event handler, beside (or instead of) its controller: a kube-runtime
//! watch of each kind its manifest `watches`, the changes found by the `differ` against
//! what the plugin was last told (its `ledger`, persisted in the host's namespace), and a
//! `queue` that hands them to the plugin's `handle` in order per object, retrying a failed
//! delivery with backoff while that object's later changes wait.
//!
//! Data flows one way: watch → differ → queue → `handle` (a fresh instance, off the
//! async runtime) → ledger. Guarantees, as client-go's informers give them and more:
//! each object's changes in order; at least once, each with a delivery id stable across
//! retries and restarts; no replay when a watch is cut and resumed, relists, or the host
//! restarts; changes made while the host was away are found by the relist; objects that
//! existed before the plugin was first loaded only when its settings ask (`initial`).

mod differ;
mod ledger;
mod queue;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::ObjectReference;
use kube::Client;
use kube::api::{Api, DynamicObject};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::{JoinHandle, JoinSet};
use tracing::{Instrument, debug, info_span, warn};

use crate::discovery::{self, KindError};
use crate::events::{Event, Events};
use crate::metrics::{Call, Failure, Metrics};
use crate::plugin::{CallError, KindRef, Object, ObjectEvent, Plugin, view};
use crate::secrets::Secrets;
use differ::{Differ, Found};
use ledger::Ledger;
use queue::{Outcome, Queue, Queued};

/// How long [`Handler::stop`] lets deliveries in flight finish.
const STOP_GRACE: Duration = Duration::from_secs(15);
/// How often the ledger is written while it changes.
const LEDGER_FLUSH: Duration = Duration::from_secs(1);

/// How a plugin's event handler runs.
#[derive(Clone, Debug)]
pub struct Options {
    /// Watch namespaced kinds in this namespace only.
    pub namespace: Option<String>,
    /// The plugin's settings, handed to it as `config` (Secret references resolved).
    pub config: Value,
    /// Deliver the objects that existed before the plugin was first loaded, as `added`
    /// with `initial` (kubewatch's behaviour is not to).
    pub initial: bool,
    /// Undelivered events beyond which the oldest are dropped.
    pub queue_limit: usize,
    /// Deliveries (of different objects) running at once.
    pub concurrency: usize,
    /// Where the ledger's `ConfigMap`s live: the host's own namespace.
    pub ledger_namespace: String,
    pub metrics: Metrics,
    /// The Secrets the settings name.
    pub secrets: Secrets,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            namespace: None,
            config: Value::Null,
            initial: false,
            queue_limit: 1000,
            concurrency: 8,
            ledger_namespace: "default".into(),
            metrics: Metrics::default(),
            secrets: Secrets::none(),
        }
    }
}

/// Why a plugin's handler could not start.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Kind(#[from] KindError),
    /// The ledger's `ConfigMap`s cannot be read.
    #[error("plugin {plugin}: reading its ledger in namespace {namespace}: {source}")]
    Ledger { plugin: String, namespace: String, source: kube::Error },
}

/// The plugin version and settings a delivery starts with.
#[derive(Clone)]
struct Current {
    plugin: Arc<Plugin>,
    config: Value,
}

/// A running event handler for one plugin.
pub struct Handler {
    name: String,
    current: Arc<RwLock<Current>>,
    swapped: mpsc::UnboundedSender<()>,
    stop: oneshot::Sender<()>,
    synced: watch::Receiver<bool>,
    delivered: Arc<AtomicU64>,
    metrics: Metrics,
    task: JoinHandle<()>,
}

/// What the watch of one kind tells the dispatcher.
enum Seen {
    Found(usize, Box<Found>),
    /// The kind's first list (this run) is done.
    Listed(usize),
}

impl Handler {
    /// Resolves the watched kinds, reads the ledger, starts the watches and the
    /// deliveries; returns once they run.
    ///
    /// # Errors
    ///
    /// [`Error::Kind`] when a kind is not served (yet) or not as declared; an
    /// [`Error::Ledger`] when the ledger cannot be read.
    pub async fn start(client: Client, plugin: Arc<Plugin>, options: Options) -> Result<Self, Error> {
        let manifest = plugin.manifest().clone();
        let name = manifest.name.clone();
        let mut kinds = Vec::new();
        for watch in &manifest.watches {
            kinds.push((watch.clone(), discovery::resolve(&client, &watch.kind).await?));
        }
        let mut store = ledger::Store::new(client.clone(), &options.ledger_namespace, &name);
        let ledger = store.load().await.map_err(|source| Error::Ledger {
            plugin: name.clone(),
            namespace: options.ledger_namespace.clone(),
            source,
        })?;

        let (seen_tx, seen_rx) = mpsc::unbounded_channel();
        let mut watches = Vec::new();
        for (index, (watch, resource)) in kinds.iter().enumerate() {
            let (known, never_listed) = ledger.known(&watch.kind);
            let differ = Differ::new(known, never_listed);
            let api: Api<DynamicObject> = match &options.namespace {
                Some(ns) if watch.kind.namespaced => Api::namespaced_with(client.clone(), ns, resource),
                _ => Api::all_with(client.clone(), resource),
            };
            let mut config = watcher::Config::default();
            if let Some(labels) = &watch.label_selector {
                config = config.labels(labels);
            }
            if let Some(fields) = &watch.field_selector {
                config = config.fields(fields);
            }
            let span = info_span!("watch", plugin = %name, kind = %watch.kind);
            let follow = follow(api, config, resource.clone(), index, differ, seen_tx.clone(), reporter(&name));
            watches.push(tokio::spawn(follow.instrument(span)));
        }
        drop(seen_tx);

        let current = Arc::new(RwLock::new(Current { plugin, config: options.config.clone() }));
        let (swapped, swaps) = mpsc::unbounded_channel();
        let (stop, stopped) = oneshot::channel();
        let (synced_tx, synced) = watch::channel(kinds.is_empty());
        let delivered = Arc::new(AtomicU64::new(0));
        let metrics = options.metrics.clone();
        let dispatcher = Dispatcher {
            name: name.clone(),
            kinds: kinds.into_iter().map(|(w, _)| w.kind).collect(),
            current: current.clone(),
            queue: Queue::new(options.queue_limit),
            ledger,
            store,
            events: Events::new(client, reporter(&name)),
            listed: Vec::new(),
            synced: synced_tx,
            delivered: delivered.clone(),
            options,
        };
        let span = info_span!("handler", plugin = %name);
        let task = tokio::spawn(dispatcher.run(seen_rx, swaps, stopped, watches).instrument(span));
        Ok(Self { name, current, swapped, stop, synced, delivered, metrics, task })
    }

    /// The plugin this handler runs.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The plugin version deliveries start with now.
    pub fn plugin(&self) -> Arc<Plugin> {
        self.current.read().unwrap_or_else(PoisonError::into_inner).plugin.clone()
    }

    /// Switches to a new version of the plugin, or new settings; deliveries in flight
    /// finish with the old one, and events waiting for a retry are delivered at once.
    pub fn update(&self, plugin: Arc<Plugin>, config: Value) {
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = Current { plugin, config };
        let _ = self.swapped.send(());
    }

    /// Waits until every watched kind has been listed once, for at most `limit`.
    pub async fn wait_synced(&self, limit: Duration) -> bool {
        let mut synced = self.synced.clone();
        tokio::time::timeout(limit, synced.wait_for(|s| *s)).await.is_ok_and(|r| r.is_ok())
    }

    /// Where this handler's deliveries and requests are counted.
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// Events the plugin accepted so far.
    pub fn delivered(&self) -> u64 {
        self.delivered.load(Ordering::Relaxed)
    }

    /// Stops watching; deliveries in flight get [`STOP_GRACE`] to finish; the ledger
    /// is written a last time.
    pub async fn stop(self) {
        let _ = self.stop.send(());
        let abort = self.task.abort_handle();
        if tokio::time::timeout(STOP_GRACE + Duration::from_secs(5), self.task).await.is_err() {
            warn!(plugin = %self.name, "event handler still running after {STOP_GRACE:?}; stopping it");
            abort.abort();
        }
    }
}

/// The `reportingController` of the Events a plugin's handler records.
fn reporter(plugin: &str) -> String {
    format!("kubewasm.{plugin}")
}

/// Watches one kind and tells the dispatcher what changed; `reporter`: the handler's
/// own Events, which it is not told of.
async fn follow(
    api: Api<DynamicObject>,
    config: watcher::Config,
    resource: kube::discovery::ApiResource,
    index: usize,
    mut differ: Differ,
    seen: mpsc::UnboundedSender<Seen>,
    reporter: String,
) {
    let types = kube::api::TypeMeta { api_version: resource.api_version.clone(), kind: resource.kind.clone() };
    let mut stream = watcher(api, config).default_backoff().boxed();
    while let Some(event) = stream.next().await {
        let event = match event {
            Ok(event) => event,
            Err(e) => {
                debug!(error = %e, "watch error; it resumes");
                continue;
            }
        };
        let done = matches!(event, watcher::Event::InitDone);
        // The host's own bookkeeping is no plugin's business (and a handler told of its
        // ledger's writes, or of its own Warnings about events it dropped, would be told
        // of them forever). An Event names its reporter in `reportingController`
        // (events.k8s.io) or `reportingComponent` (core).
        let bookkeeping = |o: &DynamicObject| {
            o.metadata.labels.as_ref().is_some_and(|l| l.contains_key(ledger::LABEL))
                || ["reportingController", "reportingComponent"]
                    .iter()
                    .any(|field| o.data[field].as_str() == Some(reporter.as_str()))
        };
        if let watcher::Event::Apply(o) | watcher::Event::InitApply(o) | watcher::Event::Delete(o) = &event
            && bookkeeping(o)
        {
            continue;
        }
        let json = |mut object: DynamicObject| {
            // List items may come without their type; the plugin needs it.
            object.types = Some(types.clone());
            view::shown(serde_json::to_value(object).unwrap_or_default())
        };
        let event = match event {
            watcher::Event::Apply(o) => watcher::Event::Apply(json(o)),
            watcher::Event::InitApply(o) => watcher::Event::InitApply(json(o)),
            watcher::Event::Delete(o) => watcher::Event::Delete(json(o)),
            watcher::Event::Init => watcher::Event::Init,
            watcher::Event::InitDone => watcher::Event::InitDone,
        };
        for found in differ.apply(event) {
            if seen.send(Seen::Found(index, Box::new(found))).is_err() {
                return;
            }
        }
        if done && seen.send(Seen::Listed(index)).is_err() {
            return;
        }
    }
}

/// What one event handler keeps while it runs.
struct Dispatcher {
    name: String,
    kinds: Vec<KindRef>,
    current: Arc<RwLock<Current>>,
    queue: Queue<(usize, Found)>,
    ledger: Ledger,
    store: ledger::Store,
    events: Events,
    /// Kinds listed at least once in this run.
    listed: Vec<usize>,
    synced: watch::Sender<bool>,
    delivered: Arc<AtomicU64>,
    options: Options,
}

/// How one delivery ended, back from its blocking task.
struct Finished {
    lane: String,
    queued: Queued<(usize, Found)>,
    result: Result<(), Failed>,
    took: Duration,
}

/// Why a delivery failed.
enum Failed {
    Call(CallError),
    Secret(crate::secrets::SecretError),
    Stopped,
}

impl Dispatcher {
    async fn run(
        mut self,
        mut seen: mpsc::UnboundedReceiver<Seen>,
        mut swaps: mpsc::UnboundedReceiver<()>,
        mut stopped: oneshot::Receiver<()>,
        watches: Vec<JoinHandle<()>>,
    ) {
        let mut in_flight: JoinSet<Finished> = JoinSet::new();
        let mut flush = tokio::time::interval(LEDGER_FLUSH);
        flush.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            self.start_deliveries(&mut in_flight);
            let retry = self.queue.next_due().map(tokio::time::Instant::from_std);
            tokio::select! {
                _ = &mut stopped => break,
                message = seen.recv() => match message {
                    Some(Seen::Found(index, found)) => self.enqueue(index, *found).await,
                    Some(Seen::Listed(index)) => self.listed(index),
                    None => break,
                },
                Some(()) = swaps.recv() => self.queue.retry_now(),
                Some(done) = in_flight.join_next(), if !in_flight.is_empty() => {
                    if let Ok(done) = done {
                        self.finish(done).await;
                    }
                }
                () = sleep_until(retry), if retry.is_some() => {}
                _ = flush.tick() => self.save().await,
            }
        }
        for watch in watches {
            watch.abort();
        }
        let deadline = tokio::time::Instant::now() + STOP_GRACE;
        while let Ok(Some(done)) = tokio::time::timeout_at(deadline, in_flight.join_next()).await {
            if let Ok(done) = done {
                self.finish(done).await;
            }
        }
        in_flight.abort_all();
        self.save().await;
    }

    /// The watch of kind `index` found `found`: queued, or only recorded when it is an
    /// initial object the settings do not ask for.
    async fn enqueue(&mut self, index: usize, found: Found) {
        if found.initial && !self.options.initial {
            self.ledger.record(&self.kinds[index], &found);
            return;
        }
        let lane = found.uid.clone();
        for dropped in self.queue.push(&lane, (index, found)) {
            let (index, found) = dropped.item;
            let kind = &self.kinds[index];
            let note = format!(
                "plugin {} has more than {} undelivered events: dropped {} of {kind} {} (delivery {})",
                self.name,
                self.options.queue_limit,
                found.change,
                object_name(&found),
                delivery_id(&found)
            );
            warn!("{note}");
            self.options.metrics.events_dropped(&self.name, "queue_limit");
            self.ledger.record(kind, &found);
            self.publish(&found, kind, "EventsDropped", &note).await;
        }
        self.options.metrics.events_waiting(&self.name, self.queue.len());
    }

    fn listed(&mut self, index: usize) {
        self.ledger.listed(&self.kinds[index]);
        if !self.listed.contains(&index) {
            self.listed.push(index);
        }
        if self.listed.len() == self.kinds.len() {
            let _ = self.synced.send(true);
        }
    }

    /// Starts what may start: in order per object, within the concurrency.
    fn start_deliveries(&mut self, in_flight: &mut JoinSet<Finished>) {
        let room = self.options.concurrency.saturating_sub(in_flight.len());
        for queued in self.queue.start(Instant::now(), room) {
            let current = self.current.read().unwrap_or_else(PoisonError::into_inner).clone();
            let kind = self.kinds[queued.item.0].clone();
            let secrets = self.options.secrets.clone();
            let lane = queued.lane.clone();
            let span = info_span!("deliver", object = %object_name(&queued.item.1), change = %queued.item.1.change);
            in_flight.spawn(
                async move {
                    let started = Instant::now();
                    let call = queued.clone();
                    let result = tokio::task::spawn_blocking(move || deliver(&current, &secrets, &kind, &call))
                        .await
                        .unwrap_or(Err(Failed::Stopped));
                    Finished { lane, queued, result, took: started.elapsed() }
                }
                .instrument(span),
            );
        }
    }

    /// Acts on how a delivery ended: the lane moves on, or waits to retry.
    async fn finish(&mut self, done: Finished) {
        let Finished { lane, queued, result, took } = done;
        let (index, found) = &queued.item;
        let kind = self.kinds[*index].clone();
        let metrics = self.options.metrics.clone();
        let failure = match &result {
            Err(Failed::Call(e)) => Some(call_failure(e)),
            _ => None,
        };
        if !matches!(result, Err(Failed::Secret(_) | Failed::Stopped)) {
            metrics.called(&self.name, Call::Handle, took, failure);
        }
        let now = Instant::now();
        let outcome = match result {
            Ok(()) => {
                self.delivered.fetch_add(1, Ordering::Relaxed);
                metrics.event_delivered(&self.name, found.change.as_str());
                Outcome::Delivered
            }
            Err(Failed::Stopped) => Outcome::Retry(Duration::ZERO),
            Err(Failed::Secret(e)) => {
                warn!(error = %e, "event not delivered: the plugin's settings cannot be resolved; retrying");
                Outcome::Retry(queue::backoff(queued.attempt))
            }
            Err(Failed::Call(e)) => {
                let what =
                    format!("{} of {kind} {} (delivery {})", found.change, object_name(found), delivery_id(found));
                match &e {
                    CallError::Plugin { retryable: false, .. } | CallError::Malformed { .. } => {
                        warn!(error = %e, "{what} rejected by the plugin; not delivered again");
                        metrics.events_dropped(&self.name, "rejected");
                        self.publish(found, &kind, "EventRejected", &format!("{what}: {e}")).await;
                        Outcome::Abandoned
                    }
                    CallError::Panic { .. } | CallError::Trap { .. } => {
                        warn!(error = %e, "{what} failed; retried in {:?} or with a new plugin version", queue::STUCK);
                        self.publish(found, &kind, "PluginFailed", &e.to_string()).await;
                        Outcome::Retry(queue::STUCK)
                    }
                    _ => {
                        debug!(error = %e, attempt = queued.attempt, "{what} failed; retrying");
                        Outcome::Retry(queue::backoff(queued.attempt))
                    }
                }
            }
        };
        if matches!(outcome, Outcome::Delivered | Outcome::Abandoned) {
            self.ledger.record(&kind, found);
        }
        self.queue.finish(&lane, outcome, now);
        metrics.events_waiting(&self.name, self.queue.len());
    }

    /// A Warning on the object the event is about.
    async fn publish(&self, found: &Found, kind: &KindRef, reason: &str, note: &str) {
        let regarding = ObjectReference {
            api_version: Some(kind.api_version()),
            kind: Some(kind.kind.clone()),
            name: Some(found.key.1.clone()),
            namespace: (!found.key.0.is_empty()).then(|| found.key.0.clone()),
            uid: Some(found.uid.clone()),
            ..ObjectReference::default()
        };
        if let Err(e) = self.events.publish(&Event::warning(reason, note, "Handle"), &regarding).await {
            debug!(error = %e, "event not recorded");
        }
    }

    async fn save(&mut self) {
        if let Err(e) = self.store.save(&mut self.ledger).await {
            warn!(error = %e, "ledger not written; retrying");
        }
    }
}

async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// One delivery, in a fresh instance, on a blocking thread: the settings resolved now,
/// their Secret values hidden from what the plugin writes.
fn deliver(
    current: &Current,
    secrets: &Secrets,
    kind: &KindRef,
    queued: &Queued<(usize, Found)>,
) -> Result<(), Failed> {
    let resolved = secrets.resolve(&current.config).map_err(Failed::Secret)?;
    let event = event_of(&queued.item.1, kind, queued.attempt, resolved.config);
    let mut instance = current.plugin.instance();
    instance.hide(resolved.hidden);
    instance.set_time(&event.now);
    instance.handle(&event).map_err(Failed::Call)
}

fn call_failure(error: &CallError) -> Failure {
    Failure::from(error)
}

fn object_name(found: &Found) -> String {
    if found.key.0.is_empty() { found.key.1.clone() } else { format!("{}/{}", found.key.0, found.key.1) }
}

fn delivery_id(found: &Found) -> String {
    ObjectEvent::delivery_id(&found.uid, &found.resource_version, found.change)
}

/// The contract's record of one delivery.
fn event_of(found: &Found, kind: &KindRef, attempt: u32, config: Value) -> ObjectEvent {
    ObjectEvent {
        change: found.change,
        kind: kind.clone(),
        object: Object::new(found.object.clone()),
        old_object: found.old.clone().map(Object::new),
        initial: found.initial,
        final_state_unknown: found.final_state_unknown,
        delivery_id: delivery_id(found),
        attempt,
        now: jiff::Timestamp::now().to_string(),
        config,
    }
}
