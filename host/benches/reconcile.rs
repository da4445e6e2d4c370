//! One reconcile of `demo-application`: in WebAssembly through the host (fresh
//! instance + call + decode + the host's validation of the answer), with instances allocated on demand (`wasm`) and from
//! the pooling allocator (`wasm-pooled`), beside the same plugin code called
//! natively through the SDK's test path (`native`: same JSON encoding, decoding and
//! validation, no sandbox), and behind a loopback HTTP webhook as Metacontroller calls its hooks
//! (`webhook`: the request POSTed as JSON over a kept-alive HTTP/1.1 connection to a
//! server that runs the native path and answers JSON).
//!
//! Run with `make bench` (builds the plugin first). Results: BENCHMARKS.md.

#[path = "support/requests.rs"]
mod requests;
mod support;

use std::net::SocketAddr;

use criterion::{BatchSize, BenchmarkId, Criterion, criterion_group, criterion_main};
use demo_application::DemoApplicationReconciler;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use kubewasm::plugin::{Engine, EngineOptions, Plugin, Request, validate};
use kubewasm_sdk::testing::{self, TestRequest};
use requests::{observed, parent};
use serde_json::{Value, json};

/// The hook: the native reconcile behind `POST /reconcile`, JSON in and out.
async fn hook(body: bytes::Bytes) -> ([(http::header::HeaderName, &'static str); 1], Vec<u8>) {
    let request: Value = serde_json::from_slice(&body).expect("request JSON");
    let children = request["children"].as_array().cloned().unwrap_or_default();
    let test_request = children.into_iter().fold(TestRequest::new(request["parent"].clone()), TestRequest::child);
    let out = testing::reconcile::<DemoApplicationReconciler>(test_request).expect("reconcile succeeds");
    let children: Vec<Value> = out.children.iter().map(|c| c.json().clone()).collect();
    let answer = serde_json::to_vec(&json!({ "children": children, "status": out.status })).expect("encode");
    ([(http::header::CONTENT_TYPE, "application/json")], answer)
}

/// A webhook server on a loopback port, and a client that keeps its connection.
fn webhook(runtime: &tokio::runtime::Runtime) -> (SocketAddr, Client<HttpConnector, Full<bytes::Bytes>>) {
    let listener = runtime.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).expect("bind loopback");
    let addr = listener.local_addr().expect("address");
    let app = axum::Router::new().route("/reconcile", axum::routing::post(hook));
    runtime.spawn(async move { axum::serve(listener, app).await.expect("webhook serves") });
    (addr, Client::builder(TokioExecutor::new()).build_http())
}

/// One call of the webhook: encode, POST, read and decode the answer.
async fn call_webhook(client: &Client<HttpConnector, Full<bytes::Bytes>>, addr: SocketAddr, request: &Value) -> Value {
    let body = Full::new(bytes::Bytes::from(serde_json::to_vec(request).expect("encode")));
    let post = http::Request::post(format!("http://{addr}/reconcile"))
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(body)
        .expect("request");
    let response = client.request(post).await.expect("webhook answers");
    assert!(response.status().is_success(), "webhook status {}", response.status());
    let bytes = response.into_body().collect().await.expect("read body").to_bytes();
    serde_json::from_slice(&bytes).expect("decode")
}

fn reconcile(c: &mut Criterion) {
    let engine = Engine::new().expect("engine");
    let plugin = Plugin::load(&engine, &support::demo_application_wasm()).expect("demo-application loads");
    let pooled_engine =
        Engine::with_options(&EngineOptions { pooling: true, ..EngineOptions::default() }).expect("engine");
    let pooled = Plugin::load(&pooled_engine, &support::demo_application_wasm()).expect("demo-application loads");
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().expect("runtime");
    let (addr, client) = webhook(&runtime);
    let mut group = c.benchmark_group("reconcile/demo-application");
    for n in [0, 10, 100] {
        let request = Request::new(parent(), observed(n), vec![], false, "2026-01-01T00:00:00Z".into(), Value::Null);
        let call = |plugin: &Plugin, request: &Request| {
            let response = plugin.reconcile(request).expect("reconcile succeeds");
            validate(plugin.manifest(), request, response).expect("valid answer")
        };
        group.bench_with_input(BenchmarkId::new("wasm", n), &request, |b, request| {
            b.iter(|| call(&plugin, request));
        });
        let native = observed(n).into_iter().fold(TestRequest::new(parent()), TestRequest::child);
        group.bench_with_input(BenchmarkId::new("wasm-pooled", n), &request, |b, request| {
            b.iter(|| call(&pooled, request));
        });
        let hook_request = json!({ "parent": parent(), "children": observed(n) });
        group.bench_with_input(BenchmarkId::new("webhook", n), &hook_request, |b, request| {
            b.iter(|| runtime.block_on(call_webhook(&client, addr, request)));
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
