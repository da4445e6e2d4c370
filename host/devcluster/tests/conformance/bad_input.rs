//! Bad input gets a clear 4xx and nothing else: malformed, oversized and deeply nested
//! bodies in every content type, unknown content types, absurd selectors, and reads at a
//! resourceVersion from the future. After each, the server still serves.

use proptest::prelude::*;
use serde_json::Value;

use super::{raw, raw_bytes, start};

const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";
const DEPLOYMENTS: &str = "/apis/apps/v1/namespaces/default/deployments";
const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

fn message(body: &Value) -> &str {
    body["message"].as_str().unwrap_or_default()
}

async fn still_serves(dc: &kubewasm_devcluster::DevCluster) {
    let (code, _) = raw(dc, "GET", CONFIGMAPS, "", "").await;
    assert_eq!(code, 200, "the server still serves");
}

#[tokio::test]
async fn malformed_bodies_are_refused_with_400_naming_the_format() {
    let dc = start().await;
    let (code, body) = raw(&dc, "POST", CONFIGMAPS, "application/json", r#"{"metadata": {"name": "#).await;
    assert_eq!(code, 400, "{body}");
    assert!(message(&body).contains("not valid JSON"), "{body}");

    let (code, body) = raw(&dc, "POST", CONFIGMAPS, "application/yaml", "metadata: [unclosed").await;
    assert_eq!(code, 400, "{body}");
    assert!(message(&body).contains("YAML"), "{body}");

    // The protobuf envelope with a truncated object inside.
    let mut envelope = b"k8s\0".to_vec();
    envelope.extend_from_slice(&[0x0a, 0x20, 0x0a, 0x02, b'v']);
    let (code, body) = raw_bytes(&dc, "POST", DEPLOYMENTS, PROTOBUF, envelope).await;
    assert_eq!(code, 400, "{body}");
    assert!(message(&body).contains("protobuf"), "{body}");

    let (code, body) = raw(&dc, "POST", CONFIGMAPS, "application/json", "[1, 2]").await;
    assert_eq!(code, 400, "{body}");
    still_serves(&dc).await;
    dc.shutdown().await;
}

#[tokio::test]
async fn deep_nesting_and_alias_bombs_are_refused_without_exhausting_the_server() {
    let dc = start().await;
    let deep =
        format!("{{\"metadata\":{{\"name\":\"deep\"}},\"data\":{}1{}}}", "[".repeat(100_000), "]".repeat(100_000));
    let (code, body) = raw(&dc, "POST", CONFIGMAPS, "application/json", &deep).await;
    assert_eq!(code, 400, "{body}");

    let deep_yaml = format!("metadata: {{name: deep}}\ndata: {}1{}\n", "[".repeat(100_000), "]".repeat(100_000));
    let (code, body) = raw(&dc, "POST", CONFIGMAPS, "application/yaml", &deep_yaml).await;
    assert_eq!(code, 400, "{body}");

    // A "billion laughs": nine levels of nine aliases would expand to 10^9 strings.
    let mut bomb = String::from("a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n");
    for (prev, level) in ('a'..='h').zip('b'..='i') {
        let refs = vec![format!("*{prev}"); 9].join(",");
        bomb.push_str(&format!("{level}: &{level} [{refs}]\n"));
    }
    bomb.push_str("metadata: {name: bomb}\n");
    let (code, body) = raw(&dc, "POST", CONFIGMAPS, "application/yaml", &bomb).await;
    assert_eq!(code, 400, "{body}");
    still_serves(&dc).await;
    dc.shutdown().await;
}

#[tokio::test]
async fn oversized_bodies_and_unknown_content_types_are_refused() {
    let dc = start().await;
    let huge = format!("{{\"metadata\":{{\"name\":\"huge\"}},\"data\":{{\"a\":\"{}\"}}}}", "x".repeat(4 * 1024 * 1024));
    let (code, body) = raw(&dc, "POST", CONFIGMAPS, "application/json", &huge).await;
    assert_eq!(code, 413, "{body}");
    assert_eq!(body["reason"], "RequestEntityTooLarge");

    let (code, body) = raw(&dc, "POST", CONFIGMAPS, "text/plain", "name=x").await;
    assert_eq!(code, 415, "{body}");
    let (code, body) = raw(&dc, "PATCH", &format!("{CONFIGMAPS}/none"), "application/x-unknown-patch", "{}").await;
    assert_eq!(code, 415, "{body}");
    still_serves(&dc).await;
    dc.shutdown().await;
}

#[tokio::test]
async fn absurd_selectors_are_answered_not_choked_on() {
    let dc = start().await;
    let many = (0..5_000).map(|i| format!("k{i}=v")).collect::<Vec<_>>().join(",");
    let (code, body) = raw(&dc, "GET", &format!("{CONFIGMAPS}?labelSelector={many}"), "", "").await;
    assert_eq!(code, 200, "a long valid selector matches nothing: {body}");
    assert_eq!(body["items"], serde_json::json!([]));

    let (code, body) = raw(&dc, "GET", &format!("{CONFIGMAPS}?labelSelector={}", "(".repeat(10_000)), "", "").await;
    assert_eq!(code, 400, "{body}");
    let (code, body) =
        raw(&dc, "GET", &format!("{CONFIGMAPS}?fieldSelector=spec.{}=1", "a.".repeat(5_000)), "", "").await;
    assert_eq!(code, 400, "{body}");
    still_serves(&dc).await;
    dc.shutdown().await;
}

#[tokio::test]
async fn a_read_from_a_future_resource_version_waits_then_is_refused_as_too_large() {
    let dc = start().await;
    let (_, list) = raw(&dc, "GET", CONFIGMAPS, "", "").await;
    let current: u64 = list["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap();

    let future = current + 1000;
    let started = std::time::Instant::now();
    // kube's client retries a 504 for minutes (as it would against a real server): ask once.
    let mut config = dc.config();
    config.default_retry = false;
    let once = kube::Client::try_from(config).unwrap();
    let req = http::Request::builder()
        .uri(format!("{CONFIGMAPS}?watch=true&resourceVersion={future}"))
        .body(Vec::new())
        .unwrap();
    let resp = once.send(req.map(kube::client::Body::from)).await.unwrap();
    let code = resp.status().as_u16();
    let bytes = http_body_util::BodyExt::collect(resp.into_body()).await.unwrap().to_bytes();
    let body: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(code, 504, "{body}");
    assert_eq!(body["reason"], "Timeout");
    assert_eq!(body["details"]["causes"][0]["reason"], "ResourceVersionTooLarge");
    assert_eq!(message(&body), format!("Timeout: Too large resource version: {future}, current: {current}"));
    assert!(started.elapsed() >= std::time::Duration::from_secs(2), "it waited for the version to arrive");

    // A version reached while the read waits is served.
    let next = current + 1;
    let waiting = tokio::spawn({
        let dc_client = dc.client();
        async move {
            let req = http::Request::builder()
                .uri(format!("{CONFIGMAPS}?resourceVersion={next}&resourceVersionMatch=NotOlderThan"))
                .body(Vec::new())
                .unwrap();
            dc_client.send(req.map(kube::client::Body::from)).await.unwrap().status().as_u16()
        }
    });
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let (code, _) = raw(&dc, "POST", CONFIGMAPS, "application/json", r#"{"metadata": {"name": "arrives"}}"#).await;
    assert_eq!(code, 201);
    assert_eq!(waiting.await.unwrap(), 200);
    dc.shutdown().await;
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Any bytes, in any content type the server reads, get an answer below 500.
    #[test]
    fn random_bodies_never_get_a_server_error(
        body in proptest::collection::vec(any::<u8>(), 0..512),
        content_type in prop::sample::select(vec!["application/json", "application/yaml", PROTOBUF]),
        protobuf_magic in any::<bool>(),
        path in prop::sample::select(vec![CONFIGMAPS, DEPLOYMENTS, "/api/v1/namespaces/default/services"]),
    ) {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        runtime.block_on(async {
            let dc = start().await;
            let mut bytes = if protobuf_magic { b"k8s\0".to_vec() } else { Vec::new() };
            bytes.extend_from_slice(&body);
            let (code, answer) = raw_bytes(&dc, "POST", path, content_type, bytes).await;
            assert!((200..500).contains(&code), "{code} for {content_type}: {answer}");
            still_serves(&dc).await;
            dc.shutdown().await;
        });
    }
}
