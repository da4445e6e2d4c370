//! One reconcile of `demo-application`: in WebAssembly through the host (fresh
//! instance + call + decode), with instances allocated on demand (`wasm`) and from
//! the pooling allocator (`wasm-pooled`), beside the same plugin code called
//! natively through the SDK's test path (same JSON encoding and decoding, no
//! sandbox).
//!
//! Run with `make bench` (builds the plugin first). Results: BENCHMARKS.md.

mod support;

use criterion::{BatchSize, BenchmarkId, Criterion, criterion_group, criterion_main};
use demo_application::DemoApplicationReconciler;
use kubewasm::plugin::{Engine, EngineOptions, Plugin, Request};
use kubewasm_sdk::testing::{self, TestRequest};
use serde_json::{Value, json};

fn parent() -> Value {
    json!({
        "apiVersion": "paas.cmft.com/v1beta1",
        "kind": "DemoApplication",
        "metadata": {"name": "web", "namespace": "default", "uid": "uid-web"},
        "spec": {"image": "nginx:1.27", "replica": 3,
                 "ports": [{"port": 80, "targetPort": 8080}, {"port": 443, "targetPort": 8443, "nodePort": 30443}]}
    })
}

/// `n` observed Deployments controlled by the parent; the first is the plugin's own.
fn observed(n: usize) -> Vec<Value> {
    (0..n)
        .map(|i| {
            let name = if i == 0 { "web".to_string() } else { format!("web-old-{i}") };
            json!({
                "apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{i}"),
                             "labels": {"app": "web"},
                             "ownerReferences": [{"apiVersion": "paas.cmft.com/v1beta1", "kind": "DemoApplication",
                                                  "name": "web", "uid": "uid-web", "controller": true}]},
                "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                         "template": {"metadata": {"labels": {"app": "web"}},
                                      "spec": {"containers": [{"name": "app", "image": "nginx:1.27",
                                                               "ports": [{"containerPort": 8080}]}]}}},
                "status": {"replicas": 3, "availableReplicas": 3}
            })
        })
        .collect()
}

fn reconcile(c: &mut Criterion) {
    let engine = Engine::new().expect("engine");
    let plugin = Plugin::load(&engine, &support::demo_application_wasm()).expect("demo-application loads");
    let pooled_engine = Engine::with_options(&EngineOptions { pooling: true, cache_dir: None }).expect("engine");
    let pooled = Plugin::load(&pooled_engine, &support::demo_application_wasm()).expect("demo-application loads");
    let mut group = c.benchmark_group("reconcile/demo-application");
    for n in [0, 10, 100] {
        let request = Request {
            parent: parent(),
            children: observed(n),
            related: vec![],
            finalizing: false,
            now: "2026-01-01T00:00:00Z".into(),
            config: Value::Null,
        };
        group.bench_with_input(BenchmarkId::new("wasm", n), &request, |b, request| {
            b.iter(|| plugin.reconcile(request).expect("reconcile succeeds"));
        });
        let native = observed(n).into_iter().fold(TestRequest::new(parent()), TestRequest::child);
        group.bench_with_input(BenchmarkId::new("wasm-pooled", n), &request, |b, request| {
            b.iter(|| pooled.reconcile(request).expect("reconcile succeeds"));
        });
        group.bench_with_input(BenchmarkId::new("native", n), &native, |b, native| {
            b.iter_batched(
                || native.clone(),
                |r| testing::reconcile::<DemoApplicationReconciler>(r).expect("reconcile succeeds"),
                BatchSize::SmallInput,
            );
        });
    }
    group.finish();
}

criterion_group!(benches, reconcile);
criterion_main!(benches);
