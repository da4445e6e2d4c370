//! Prometheus metrics of the host, per plugin: reconciles, durations, sandbox
//! failures, refused answers, writes and skipped writes, queue depth, reloads,
//! versions; events delivered, dropped and waiting; outbound HTTP requests.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::{Registry, Unit};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct PluginLabel {
    pub(crate) plugin: String,
}

/// Enums whose variants are label values, spelled as Prometheus expects them.
macro_rules! label_values {
    ($(#[$doc:meta])* $name:ident { $($variant:ident => $value:literal),* $(,)? }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub(crate) enum $name { $($variant),* }

        impl $name {
            pub(crate) fn as_str(self) -> &'static str {
                match self { $(Self::$variant => $value),* }
            }

            fn label(self) -> String {
                self.as_str().to_string()
            }
        }
    };
}

label_values!(
    /// How a reconcile or a reload ended.
    Outcome { Success => "success", Error => "error" }
);
label_values!(
    /// The calls into a plugin: a reconcile's two, an event's one, a webhook's one.
    Call {
        Related => "related",
        Reconcile => "reconcile",
        Handle => "handle",
        Default => "default",
        Validate => "validate",
        Convert => "convert",
    }
);
label_values!(
    /// How a plugin call failed.
    Failure {
        Timeout => "timeout",
        OutOfMemory => "out_of_memory",
        Panic => "panic",
        Trap => "trap",
        PluginError => "plugin_error",
        Malformed => "malformed",
    }
);
label_values!(
    /// What a webhook answered: a conversion that the plugin refused counts as denied;
    /// `error`, the plugin failed (answered by its failure policy).
    WebhookVerdict { Allowed => "allowed", Denied => "denied", Mutated => "mutated", Error => "error" }
);
label_values!(
    /// How a candidate in shadow answered, against the active.
    Shadowed { Same => "same", Different => "different", Error => "error" }
);
label_values!(
    /// What a write does.
    WriteKind { Apply => "apply", Prune => "prune", Status => "status", Metadata => "metadata", Finalizer => "finalizer" }
);

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct HttpLabels {
    pub(crate) plugin: String,
    /// `scheme://host:port`: bounded by what the operator granted, never a path.
    pub(crate) host: String,
    /// The status code, or why there is none (`denied`, `timeout`...).
    pub(crate) status: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct HostLabels {
    pub(crate) plugin: String,
    pub(crate) host: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct ChangeLabels {
    pub(crate) plugin: String,
    pub(crate) change: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct ReasonLabels {
    pub(crate) plugin: String,
    pub(crate) reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct ResultLabels {
    pub(crate) plugin: String,
    pub(crate) result: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct CallLabels {
    pub(crate) plugin: String,
    pub(crate) call: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct WebhookLabels {
    pub(crate) plugin: String,
    /// `default`, `validate` or `convert`.
    pub(crate) webhook: String,
    pub(crate) verdict: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct RolloutLabels {
    pub(crate) plugin: String,
    /// `active` or `candidate`.
    pub(crate) version: String,
    pub(crate) result: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct FailureLabels {
    pub(crate) plugin: String,
    pub(crate) failure: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct WriteLabels {
    pub(crate) plugin: String,
    pub(crate) write: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct FileLabels {
    pub(crate) file: String,
    pub(crate) result: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct VersionLabels {
    pub(crate) plugin: String,
    pub(crate) sha256: String,
}

type Histograms<L> = Family<L, Histogram, fn() -> Histogram>;

fn seconds() -> Histogram {
    // 50 µs to ~13 s: plugin calls are microseconds, reconciles with writes milliseconds.
    Histogram::new(exponential_buckets(0.000_05, 4.0, 10))
}

/// The host's metrics. Cheap to clone; every clone records into the same registry.
#[derive(Clone)]
pub struct Metrics(Arc<Inner>);

struct Inner {
    registry: Registry,
    pub(crate) reconciles: Family<ResultLabels, Counter>,
    pub(crate) reconcile_seconds: Histograms<PluginLabel>,
    pub(crate) in_flight: Family<PluginLabel, Gauge>,
    pub(crate) call_seconds: Histograms<CallLabels>,
    pub(crate) call_failures: Family<FailureLabels, Counter>,
    pub(crate) refused: Family<PluginLabel, Counter>,
    pub(crate) writes: Family<WriteLabels, Counter>,
    pub(crate) skipped_writes: Family<WriteLabels, Counter>,
    pub(crate) reloads: Family<FileLabels, Counter>,
    pub(crate) versions: Family<VersionLabels, Gauge>,
    pub(crate) http_requests: Family<HttpLabels, Counter>,
    pub(crate) http_seconds: Histograms<HostLabels>,
    pub(crate) events_delivered: Family<ChangeLabels, Counter>,
    pub(crate) events_dropped: Family<ReasonLabels, Counter>,
    pub(crate) events_waiting: Family<PluginLabel, Gauge>,
    pub(crate) webhooks: Family<WebhookLabels, Counter>,
    pub(crate) rollout_reconciles: Family<RolloutLabels, Counter>,
    pub(crate) shadow_answers: Family<ResultLabels, Counter>,
    controllers: Arc<Controllers>,
}

/// What a running controller shows at scrape time: its work queue and its caches.
pub(crate) trait ControllerGauges: Send + Sync {
    /// Parents waiting for a reconcile now.
    fn depth(&self) -> usize;

    /// Objects in the caches the plugin reads, by resource (`deployments.apps`).
    fn cached(&self) -> Vec<(String, usize)>;
}

/// `queue_depth` and `cached_objects`, read from each plugin's controller at scrape
/// time: a requeued parent joins the queue when its delay ends, with no event to count
/// it then, and a cache changes with every watch event.
#[derive(Default)]
struct Controllers(Mutex<BTreeMap<String, Weak<dyn ControllerGauges>>>);

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CacheLabels {
    plugin: String,
    resource: String,
}

impl std::fmt::Debug for Controllers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Controllers")
    }
}

impl Collector for Controllers {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let mut controllers = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        // A stopped controller is gone from the exposition.
        controllers.retain(|_, controller| controller.strong_count() > 0);
        let live: Vec<(&String, Arc<dyn ControllerGauges>)> =
            controllers.iter().filter_map(|(plugin, controller)| Some((plugin, controller.upgrade()?))).collect();
        let gauge = |n: usize| ConstGauge::new(i64::try_from(n).unwrap_or(i64::MAX));
        let mut family = encoder.encode_descriptor(
            "queue_depth",
            "Parents waiting for a reconcile: triggered by a watch event, a resync or a due requeue, not yet started",
            None,
            MetricType::Gauge,
        )?;
        for (plugin, controller) in &live {
            gauge(controller.depth()).encode(family.encode_family(&PluginLabel { plugin: (*plugin).clone() })?)?;
        }
        let mut family = encoder.encode_descriptor(
            "cached_objects",
            "Objects in the caches a plugin reads, by resource (a cache shared by several plugins counts under each)",
            None,
            MetricType::Gauge,
        )?;
        for (plugin, controller) in &live {
            for (resource, n) in controller.cached() {
                let labels = CacheLabels { plugin: (*plugin).clone(), resource };
                gauge(n).encode(family.encode_family(&labels)?)?;
            }
        }
        Ok(())
    }
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// A fresh registry with every kubewasm metric.
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("kubewasm");
        let inner = Inner {
            reconciles: Family::default(),
            reconcile_seconds: Family::new_with_constructor(seconds),
            in_flight: Family::default(),
            call_seconds: Family::new_with_constructor(seconds),
            call_failures: Family::default(),
            refused: Family::default(),
            writes: Family::default(),
            skipped_writes: Family::default(),
            reloads: Family::default(),
            versions: Family::default(),
            http_requests: Family::default(),
            http_seconds: Family::new_with_constructor(seconds),
            events_delivered: Family::default(),
            events_dropped: Family::default(),
            events_waiting: Family::default(),
            webhooks: Family::default(),
            rollout_reconciles: Family::default(),
            shadow_answers: Family::default(),
            controllers: Arc::default(),
            registry: Registry::default(),
        };
        register_reconciles(&mut registry, &inner);
        register_plugins(&mut registry, &inner);
        registry.register_collector(Box::new(inner.controllers.clone()));
        Self(Arc::new(Inner { registry, ..inner }))
    }

    /// `GET /metrics`, for the health server to serve beside the probes.
    pub fn router(&self) -> axum::Router {
        let metrics = self.clone();
        axum::Router::new().route(
            "/metrics",
            axum::routing::get(move || {
                let body = metrics.encode();
                async move {
                    (
                        [(
                            axum::http::header::CONTENT_TYPE,
                            "application/openmetrics-text; version=1.0.0; charset=utf-8",
                        )],
                        body,
                    )
                }
            }),
        )
    }

    /// The `OpenMetrics` text exposition.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.0.registry);
        out
    }

    pub(crate) fn reconciled(&self, plugin: &str, result: Outcome, took: Duration) {
        self.0.reconciles.get_or_create(&ResultLabels { plugin: plugin.into(), result: result.label() }).inc();
        self.0.reconcile_seconds.get_or_create(&PluginLabel { plugin: plugin.into() }).observe(took.as_secs_f64());
    }

    pub(crate) fn in_flight(&self, plugin: &str) -> Gauge {
        self.0.in_flight.get_or_create_owned(&PluginLabel { plugin: plugin.into() })
    }

    /// Reports `controller`'s queue and caches as `plugin`'s for as long as it lives (a
    /// restarted controller replaces the one before).
    pub(crate) fn controller(&self, plugin: &str, controller: Weak<dyn ControllerGauges>) {
        self.0.controllers.0.lock().unwrap_or_else(PoisonError::into_inner).insert(plugin.into(), controller);
    }

    pub(crate) fn called(&self, plugin: &str, call: Call, took: Duration, failure: Option<Failure>) {
        self.0
            .call_seconds
            .get_or_create(&CallLabels { plugin: plugin.into(), call: call.label() })
            .observe(took.as_secs_f64());
        if let Some(failure) = failure {
            self.0
                .call_failures
                .get_or_create(&FailureLabels { plugin: plugin.into(), failure: failure.label() })
                .inc();
        }
    }

    pub(crate) fn refused(&self, plugin: &str) {
        self.0.refused.get_or_create(&PluginLabel { plugin: plugin.into() }).inc();
    }

    pub(crate) fn wrote(&self, plugin: &str, write: WriteKind) {
        self.0.writes.get_or_create(&WriteLabels { plugin: plugin.into(), write: write.label() }).inc();
    }

    pub(crate) fn skipped(&self, plugin: &str, write: WriteKind) {
        self.0.skipped_writes.get_or_create(&WriteLabels { plugin: plugin.into(), write: write.label() }).inc();
    }

    pub(crate) fn reloaded(&self, file: &str, result: Outcome) {
        self.0.reloads.get_or_create(&FileLabels { file: file.into(), result: result.label() }).inc();
    }

    /// Marks `sha256` as the version `plugin` runs, and `previous` as no longer.
    pub(crate) fn version(&self, plugin: &str, sha256: &str, previous: Option<&str>) {
        if let Some(old) = previous.filter(|old| *old != sha256) {
            self.0.versions.remove(&VersionLabels { plugin: plugin.into(), sha256: old.into() });
        }
        self.0.versions.get_or_create(&VersionLabels { plugin: plugin.into(), sha256: sha256.into() }).set(1);
    }

    pub(crate) fn http_request(&self, plugin: &str, host: &str, status: &str, took: Duration) {
        let labels = HttpLabels { plugin: plugin.into(), host: host.into(), status: status.into() };
        self.0.http_requests.get_or_create(&labels).inc();
        let labels = HostLabels { plugin: plugin.into(), host: host.into() };
        self.0.http_seconds.get_or_create(&labels).observe(took.as_secs_f64());
    }

    pub(crate) fn event_delivered(&self, plugin: &str, change: &str) {
        self.0.events_delivered.get_or_create(&ChangeLabels { plugin: plugin.into(), change: change.into() }).inc();
    }

    pub(crate) fn events_dropped(&self, plugin: &str, reason: &str) {
        self.0.events_dropped.get_or_create(&ReasonLabels { plugin: plugin.into(), reason: reason.into() }).inc();
    }

    pub(crate) fn events_waiting(&self, plugin: &str, waiting: usize) {
        let waiting = i64::try_from(waiting).unwrap_or(i64::MAX);
        self.0.events_waiting.get_or_create(&PluginLabel { plugin: plugin.into() }).set(waiting);
    }

    pub(crate) fn webhook(&self, plugin: &str, webhook: Call, verdict: WebhookVerdict) {
        let labels = WebhookLabels { plugin: plugin.into(), webhook: webhook.label(), verdict: verdict.label() };
        self.0.webhooks.get_or_create(&labels).inc();
    }

    pub(crate) fn rolled_out(&self, plugin: &str, version: &str, result: Outcome) {
        let labels = RolloutLabels { plugin: plugin.into(), version: version.into(), result: result.label() };
        self.0.rollout_reconciles.get_or_create(&labels).inc();
    }

    pub(crate) fn shadowed(&self, plugin: &str, answer: Shadowed) {
        self.0.shadow_answers.get_or_create(&ResultLabels { plugin: plugin.into(), result: answer.label() }).inc();
    }

    /// Forgets `plugin`'s version: it no longer runs.
    pub(crate) fn unloaded(&self, plugin: &str, sha256: &str) {
        self.0.versions.remove(&VersionLabels { plugin: plugin.into(), sha256: sha256.into() });
    }
}

/// The metrics of reconciles: their results and durations, calls, writes.
fn register_reconciles(registry: &mut Registry, inner: &Inner) {
    registry.register("reconciles", "Reconciles finished, by result", inner.reconciles.clone());
    registry.register_with_unit(
        "reconcile_duration",
        "Whole reconciles: caches, plugin calls and writes",
        Unit::Seconds,
        inner.reconcile_seconds.clone(),
    );
    registry.register("reconciles_in_flight", "Reconciles running now", inner.in_flight.clone());
    registry.register_with_unit(
        "plugin_call_duration",
        "One sandboxed plugin call, fresh instance included",
        Unit::Seconds,
        inner.call_seconds.clone(),
    );
    registry.register(
        "plugin_call_failures",
        "Plugin calls that failed: timeouts, memory, panics, traps, plugin errors, malformed answers",
        inner.call_failures.clone(),
    );
    registry.register(
        "refused_responses",
        "Plugin answers refused by validation; nothing was written",
        inner.refused.clone(),
    );
    registry.register(
        "writes",
        "Writes to the API server: apply, prune, status, metadata, finalizer",
        inner.writes.clone(),
    );
    registry.register(
        "skipped_writes",
        "Writes not made because the cluster already held them",
        inner.skipped_writes.clone(),
    );
}

/// The metrics of plugins: reloads, versions, outbound HTTP, events, webhooks, rollouts.
fn register_plugins(registry: &mut Registry, inner: &Inner) {
    registry.register(
        "plugin_reloads",
        "Plugin files loaded from the plugin directory, by result",
        inner.reloads.clone(),
    );
    registry.register(
        "plugin_version_info",
        "The version (sha256 of the .wasm) each plugin runs",
        inner.versions.clone(),
    );
    registry.register(
        "plugin_http_requests",
        "Outbound HTTP requests of plugins, by origin and status (or why none: denied, timeout...)",
        inner.http_requests.clone(),
    );
    registry.register_with_unit(
        "plugin_http_request_duration",
        "Outbound HTTP requests of plugins, from sending to the last byte",
        Unit::Seconds,
        inner.http_seconds.clone(),
    );
    registry.register(
        "events_delivered",
        "Events a plugin's handler accepted, by change",
        inner.events_delivered.clone(),
    );
    registry.register(
        "events_dropped",
        "Events never delivered: past the plugin's queue limit, or refused by its handler for good",
        inner.events_dropped.clone(),
    );
    registry.register(
        "events_waiting",
        "Events waiting for a plugin's handler, in flight included",
        inner.events_waiting.clone(),
    );
    registry.register(
        "webhook_requests",
        "Admission and conversion webhook calls answered, by plugin, webhook and verdict",
        inner.webhooks.clone(),
    );
    registry.register(
        "rollout_reconciles",
        "Reconciles of plugins with a candidate rolled out, by the version that reconciled and result",
        inner.rollout_reconciles.clone(),
    );
    registry.register(
        "shadow_answers",
        "Answers of candidates in shadow against the active's: same, different or error",
        inner.shadow_answers.clone(),
    );
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    #[test]
    fn recorded_values_appear_in_the_exposition() {
        let m = Metrics::new();
        m.reconciled("foo", Outcome::Success, Duration::from_millis(3));
        m.called("foo", Call::Reconcile, Duration::from_micros(80), Some(Failure::Timeout));
        m.wrote("foo", WriteKind::Apply);
        m.skipped("foo", WriteKind::Status);
        m.version("foo", "abc", None);
        m.version("foo", "def", Some("abc"));
        m.rolled_out("foo", "candidate", Outcome::Error);
        m.shadowed("foo", Shadowed::Different);
        let text = m.encode();
        for line in [
            r#"kubewasm_reconciles_total{plugin="foo",result="success"} 1"#,
            r#"kubewasm_plugin_call_failures_total{plugin="foo",failure="timeout"} 1"#,
            r#"kubewasm_writes_total{plugin="foo",write="apply"} 1"#,
            r#"kubewasm_skipped_writes_total{plugin="foo",write="status"} 1"#,
            r#"kubewasm_plugin_version_info{plugin="foo",sha256="def"} 1"#,
            r#"kubewasm_reconcile_duration_seconds_count{plugin="foo"} 1"#,
            r#"kubewasm_rollout_reconciles_total{plugin="foo",version="candidate",result="error"} 1"#,
            r#"kubewasm_shadow_answers_total{plugin="foo",result="different"} 1"#,
        ] {
            assert!(text.contains(line), "missing {line} in:\n{text}");
        }
        assert!(!text.contains(r#"sha256="abc""#), "the replaced version is gone");
    }

    struct Fixed(usize);

    impl ControllerGauges for Fixed {
        fn depth(&self) -> usize {
            self.0
        }

        fn cached(&self) -> Vec<(String, usize)> {
            vec![("deployments.apps".into(), self.0 * 10)]
        }
    }

    #[test]
    fn queue_depth_and_cached_objects_are_read_at_scrape_time_and_leave_with_their_controller() {
        let m = Metrics::new();
        let first: Arc<dyn ControllerGauges> = Arc::new(Fixed(2));
        m.controller("foo", Arc::downgrade(&first));
        assert!(m.encode().contains(r#"kubewasm_queue_depth{plugin="foo"} 2"#), "{}", m.encode());
        let cached = r#"kubewasm_cached_objects{plugin="foo",resource="deployments.apps"} 20"#;
        assert!(m.encode().contains(cached), "{}", m.encode());
        // A restarted controller replaces the one before.
        let second: Arc<dyn ControllerGauges> = Arc::new(Fixed(5));
        m.controller("foo", Arc::downgrade(&second));
        assert!(m.encode().contains(r#"kubewasm_queue_depth{plugin="foo"} 5"#), "{}", m.encode());
        drop(second);
        assert!(!m.encode().contains("kubewasm_queue_depth{"), "{}", m.encode());
        assert!(!m.encode().contains("kubewasm_cached_objects{"), "{}", m.encode());
    }

    /// deploy/README.md lists the metrics for operators; it must list each one.
    #[test]
    fn every_metric_is_documented_for_operators() {
        let readme = include_str!("../../deploy/README.md");
        let documented: BTreeSet<&str> = readme
            .split('`')
            .filter(|s| s.starts_with("kubewasm_"))
            .map(|s| {
                let name = s.split('{').next().unwrap_or(s);
                name.strip_suffix("_total").unwrap_or(name)
            })
            .collect();
        // A family appears once it has a series: give each one.
        let m = Metrics::new();
        m.reconciled("foo", Outcome::Success, Duration::from_millis(3));
        m.in_flight("foo").inc();
        m.called("foo", Call::Reconcile, Duration::from_micros(80), Some(Failure::Trap));
        m.refused("foo");
        m.wrote("foo", WriteKind::Apply);
        m.skipped("foo", WriteKind::Apply);
        m.reloaded("foo.wasm", Outcome::Success);
        m.version("foo", "abc", None);
        m.http_request("foo", "https://hooks.slack.com:443", "200", Duration::from_millis(30));
        m.event_delivered("foo", "added");
        m.events_dropped("foo", "queue_limit");
        m.events_waiting("foo", 2);
        m.webhook("foo", Call::Validate, WebhookVerdict::Denied);
        m.rolled_out("foo", "active", Outcome::Success);
        m.shadowed("foo", Shadowed::Same);
        let queue: Arc<dyn ControllerGauges> = Arc::new(Fixed(0));
        m.controller("foo", Arc::downgrade(&queue));
        let text = m.encode();
        let exposed: BTreeSet<&str> =
            text.lines().filter_map(|l| l.strip_prefix("# TYPE ")).filter_map(|l| l.split(' ').next()).collect();
        assert_eq!(documented, exposed, "deploy/README.md's metrics table against the exposition");
    }

    #[tokio::test]
    async fn metrics_are_served_as_openmetrics() {
        use tower::ServiceExt;
        let m = Metrics::new();
        m.wrote("foo", WriteKind::Prune);
        let request = axum::http::Request::get("/metrics").body(axum::body::Body::empty()).unwrap();
        let response = m.router().oneshot(request).await.unwrap();
        assert_eq!(response.status(), 200);
        let content_type = response.headers()[axum::http::header::CONTENT_TYPE].to_str().unwrap().to_string();
        assert!(content_type.starts_with("application/openmetrics-text"), "{content_type}");
        let body = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap();
        let text = String::from_utf8(body.to_vec()).unwrap();
        assert!(text.contains(r#"kubewasm_writes_total{plugin="foo",write="prune"} 1"#), "{text}");
        assert!(text.ends_with("# EOF\n"), "OpenMetrics ends with # EOF");
    }
}
