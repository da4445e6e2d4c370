//! What happens while a plugin call runs, with the test acting from inside the call:
//! the `demo-relabel` fixture logs `relabel: reconcile` from inside the sandbox, and a
//! tracing layer runs the test's action right there, on the thread running the
//! call, before the log import returns. No timing is involved.
//!
//! - A plugin swapped mid-call: the call finishes on the version it started with,
//!   its answer is applied, and the next reconcile uses the new version.
//! - Parents triggered while the only reconcile slot is busy wait in the queue, and
//!   `kubewasm_queue_depth` counts them.

use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use futures_util::{StreamExt, TryStreamExt};
use kube::api::{ListParams, WatchEvent, WatchParams};
use serde_json::{Value, json};
use tracing::field::{Field, Visit};
use tracing::subscriber::Interest;
use tracing::{Event, Metadata, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};

use crate::harness::{Env, deployments, eventually, metric_sum, plugin, quick, resource, wait_for};
use kubewasm::controller::Options;

/// What the fixture logs at the start of each reconcile, from inside the call.
const MARKER: &str = "relabel: reconcile";
/// Where the host turns a plugin's log call into a tracing event.
const SANDBOX: &str = "kubewasm::plugin::sandbox";

/// What to do inside the call that logs [`MARKER`] for `parent`.
struct Armed {
    parent: String,
    during: Box<dyn FnOnce() + Send>,
    done: mpsc::Sender<()>,
}

/// Runs each armed action inside the first plugin call that logs [`MARKER`] for its
/// parent. Tests run at once in one binary, so each arms its own parent names.
#[derive(Clone, Default)]
struct Inside(Arc<Mutex<Vec<Armed>>>);

impl Inside {
    /// The process-wide layer, installed once per test binary.
    fn installed() -> Inside {
        static INSIDE: OnceLock<Inside> = OnceLock::new();
        INSIDE
            .get_or_init(|| {
                let inside = Inside::default();
                tracing::subscriber::set_global_default(tracing_subscriber::registry().with(inside.clone()))
                    .expect("no other global subscriber in this test binary");
                inside
            })
            .clone()
    }

    /// Arms `during` for `parent`'s next call; the receiver fires once it has run.
    fn arm(&self, parent: &str, during: impl FnOnce() + Send + 'static) -> mpsc::Receiver<()> {
        let (done, ran) = mpsc::channel();
        self.0.lock().expect("armed").push(Armed { parent: parent.into(), during: Box::new(during), done });
        ran
    }
}

impl<S: Subscriber> Layer<S> for Inside {
    fn register_callsite(&self, metadata: &'static Metadata<'static>) -> Interest {
        if metadata.target() == SANDBOX { Interest::always() } else { Interest::never() }
    }

    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let mut line = Line::default();
        event.record(&mut line);
        if line.message != MARKER {
            return;
        }
        let armed = {
            let mut armed = self.0.lock().expect("armed");
            let index = armed.iter().position(|a| line.fields == format!("parent={:?}", a.parent));
            index.map(|i| armed.swap_remove(i))
        };
        if let Some(Armed { during, done, .. }) = armed {
            during();
            let _ = done.send(());
        }
    }
}

#[derive(Default)]
struct Line {
    message: String,
    fields: String,
}

impl Visit for Line {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        match field.name() {
            "message" => self.message = format!("{value:?}"),
            "fields" => self.fields = format!("{value:?}"),
            _ => {}
        }
    }
}

fn demo_applications() -> kube::discovery::ApiResource {
    resource("paas.cmft.com", "v1beta1", "DemoApplication", "demoapplications")
}

fn demo_app(name: &str) -> Value {
    json!({"apiVersion": "paas.cmft.com/v1beta1", "kind": "DemoApplication",
           "metadata": {"name": name, "namespace": "default"},
           "spec": {"image": "nginx", "replica": 1, "ports": [{"port": 80}]}})
}

/// Waits, off the async runtime, for the armed action to have run.
async fn ran(signal: mpsc::Receiver<()>, what: &str) {
    tokio::task::spawn_blocking(move || signal.recv_timeout(Duration::from_secs(30)))
        .await
        .expect("wait for the armed action")
        .unwrap_or_else(|_| panic!("{what}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_in_flight_finishes_on_the_version_it_started_with() {
    let inside = Inside::installed();
    // The old version is the fixture (children labelled `kubewasm.io/version: v2`),
    // the new one the example plugin (no such label).
    let env = Arc::new(Env::start(&["demo-relabel"]).await);
    let new = plugin("demo-application");

    // Every version of the Deployment the API server stores, in order.
    let api = env.api(&deployments(), "default");
    let from = api.list(&ListParams::default()).await.expect("list").metadata.resource_version.expect("rv");
    let mut watch = api.watch(&WatchParams::default(), &from).await.expect("watch").boxed();
    let versions = Arc::new(Mutex::new(Vec::<Option<String>>::new()));
    let record = versions.clone();
    let watching = tokio::spawn(async move {
        while let Ok(Some(event)) = watch.try_next().await {
            if let WatchEvent::Added(d) | WatchEvent::Modified(d) = event
                && d.metadata.name.as_deref() == Some("held")
            {
                let label = d.metadata.labels.as_ref().and_then(|l| l.get("kubewasm.io/version")).cloned();
                record.lock().expect("versions").push(label);
            }
        }
    });

    // Swapped inside the first call for `held`: reconciles from then on start with
    // the new version.
    let swap = {
        let (env, new) = (env.clone(), new.clone());
        move || env.host.controller("demo-application").expect("the controller runs").update(new, Value::Null)
    };
    let swapped = inside.arm("held", swap);
    env.create(&demo_applications(), demo_app("held")).await;
    ran(swapped, "the plugin is swapped inside the first call for `held`").await;
    let controller = env.host.controller("demo-application").expect("the controller runs");
    assert_eq!(controller.plugin().hash(), new.hash());

    let seen = eventually("the Deployment written by both versions", || async {
        let seen = versions.lock().expect("versions").clone();
        (!seen.is_empty() && seen.last() == Some(&None)).then_some(seen)
    })
    .await;
    assert_eq!(
        seen.first(),
        Some(&Some("v2".to_string())),
        "the call in flight finished on the old version and its answer was applied first: {seen:?}"
    );
    watching.abort();
    Arc::into_inner(env).expect("the swap has run and let go of the env").stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parents_waiting_for_a_busy_controller_are_counted_in_the_queue_depth() {
    let inside = Inside::installed();
    // One reconcile at a time, so the held one keeps every other parent waiting.
    let env = Env::start_with_options(vec![("demo-relabel", Options { concurrency: 1, ..quick() })]).await;
    let depth = |env: &Env| metric_sum(&env.host, "kubewasm_queue_depth");

    let (release, released) = mpsc::channel::<()>();
    let busy = inside.arm("busy", move || {
        // Bounded, so a failing test cannot hold the call for ever.
        let _ = released.recv_timeout(Duration::from_secs(60));
    });
    env.create(&demo_applications(), demo_app("busy")).await;
    // The action blocks inside the call: wait for the call to be in the plugin.
    eventually("the first reconcile in flight", || async {
        (metric_sum(&env.host, "kubewasm_reconciles_in_flight") == 1.0).then_some(())
    })
    .await;
    assert_eq!(depth(&env), 0.0, "the reconcile in flight has left the queue");

    for name in ["waiting-1", "waiting-2", "waiting-3"] {
        env.create(&demo_applications(), demo_app(name)).await;
    }
    eventually("three parents in the queue", || async { (depth(&env) == 3.0).then_some(()) }).await;

    release.send(()).expect("the held call waits");
    ran(busy, "the held call went on").await;
    for name in ["waiting-1", "waiting-2", "waiting-3"] {
        wait_for(&env, &deployments(), name, "the waiting parents reconciled", |_| true).await;
    }
    eventually("the queue drained", || async { (depth(&env) == 0.0).then_some(()) }).await;
    env.stop().await;
}
