//! The fault layer: each fault class happens as configured, writes nothing it refuses, stops
//! when the faults are lifted, and the same seed injects the same faults. Clients that
//! retry and re-watch (kube-runtime's watcher) still see every object.

use std::time::{Duration, Instant};

use futures_util::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use kubewasm_devcluster::{DevCluster, ErrorFault, Faults, Options, StaleReads, WatchFaults};
use serde_json::{Value, json};

use super::{raw, start, start_empty};

const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

fn errors(code: u16, rate: f64, verbs: &[&str], resource: Option<&str>) -> Faults {
    Faults {
        seed: 1,
        errors: vec![ErrorFault {
            code,
            rate,
            verbs: verbs.iter().map(|v| (*v).to_string()).collect(),
            resource: resource.map(String::from),
            retry_after_seconds: 2,
        }],
        ..Faults::default()
    }
}

fn config_map(name: &str) -> String {
    json!({ "metadata": { "name": name }, "data": { "v": "1" } }).to_string()
}

/// A client that does not retry, to see each injected answer.
fn once(dc: &DevCluster) -> kube::Client {
    once_with(dc.config())
}

/// A client of `config` that does not retry.
fn once_with(mut config: kube::Config) -> kube::Client {
    config.default_retry = false;
    kube::Client::try_from(config).unwrap()
}

/// The JSON lines of a watch, until it ends or `within` passes.
async fn watch_lines(dc: &DevCluster, path: &str, within: Duration) -> (Vec<Value>, bool) {
    lines_of(&once(dc), path, within).await
}

/// The JSON lines `client` reads of the watch at `path`, until it ends or `within` passes, and
/// whether it ended by itself.
async fn lines_of(client: &kube::Client, path: &str, within: Duration) -> (Vec<Value>, bool) {
    let req = http::Request::builder().uri(path).body(Vec::new()).unwrap();
    let resp = client.send(req.map(kube::client::Body::from)).await.unwrap();
    let mut body = http_body_util::BodyStream::new(resp.into_body());
    let mut text = String::new();
    let ended = tokio::time::timeout(within, async {
        while let Some(Ok(frame)) = body.next().await {
            if let Ok(data) = frame.into_data() {
                text.push_str(&String::from_utf8_lossy(&data));
            }
        }
    })
    .await
    .is_ok();
    (text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect(), ended)
}

#[tokio::test]
async fn injected_errors_answer_as_the_real_server_and_write_nothing() {
    let dc = start_empty().await;
    dc.set_faults(Some(errors(409, 1.0, &["create"], Some("configmaps"))));
    let (code, body) = raw(&dc, "POST", CONFIGMAPS, "application/json", &config_map("a")).await;
    assert_eq!((code, body["reason"].as_str()), (409, Some("AlreadyExists")), "{body}");
    assert_eq!(body["message"], r#"configmaps "a" already exists"#);
    let (_, list) = raw(&dc, "GET", CONFIGMAPS, "", "").await;
    assert_eq!(list["items"], json!([]), "a refused create writes nothing");
    // Other resources are served.
    let secret = json!({ "metadata": { "name": "s" } }).to_string();
    let (code, _) = raw(&dc, "POST", "/api/v1/namespaces/default/secrets", "application/json", &secret).await;
    assert_eq!(code, 201);

    dc.set_faults(Some(errors(429, 1.0, &["get"], None)));
    let req = http::Request::builder().uri(format!("{CONFIGMAPS}/a")).body(Vec::new()).unwrap();
    let resp = once(&dc).send(req.map(kube::client::Body::from)).await.unwrap();
    assert_eq!(resp.status().as_u16(), 429);
    assert_eq!(resp.headers()["retry-after"], "2", "Retry-After says when to come back");

    for code in [500, 503] {
        dc.set_faults(Some(errors(code, 1.0, &["list"], None)));
        let req = http::Request::builder().uri(CONFIGMAPS).body(Vec::new()).unwrap();
        let resp = once(&dc).send(req.map(kube::client::Body::from)).await.unwrap();
        assert_eq!(resp.status().as_u16(), code);
    }
    dc.set_faults(None);
    let (code, _) = raw(&dc, "POST", CONFIGMAPS, "application/json", &config_map("a")).await;
    assert_eq!(code, 201, "lifted faults serve again");
    assert!(dc.faults_injected() >= 4);
    dc.shutdown().await;
}

#[tokio::test]
async fn the_same_seed_fails_the_same_requests() {
    let mut outcomes = Vec::new();
    for _ in 0..2 {
        let dc = start().await;
        dc.set_faults(Some(errors(500, 0.5, &["create"], None)));
        let mut codes = Vec::new();
        for i in 0..24 {
            codes.push(raw(&dc, "POST", CONFIGMAPS, "application/json", &config_map(&format!("c{i}"))).await.0);
        }
        outcomes.push(codes);
        dc.shutdown().await;
    }
    assert_eq!(outcomes[0], outcomes[1]);
    assert!(outcomes[0].contains(&500) && outcomes[0].contains(&201), "{:?}", outcomes[0]);
}

#[tokio::test]
async fn watches_are_cut_expired_stalled_and_delayed_on_demand() {
    let dc = start().await;
    let (_, list) = raw(&dc, "GET", CONFIGMAPS, "", "").await;
    let rv = list["metadata"]["resourceVersion"].as_str().unwrap().to_string();

    dc.set_faults(Some(Faults {
        watch: WatchFaults { gone_rate: 1.0, ..WatchFaults::default() },
        ..Faults::default()
    }));
    let (lines, _) =
        watch_lines(&dc, &format!("{CONFIGMAPS}?watch=true&resourceVersion={rv}"), Duration::from_secs(2)).await;
    assert_eq!(lines[0]["type"], "ERROR");
    assert_eq!(lines[0]["object"]["code"], 410, "a resumed watch expired: {lines:?}");

    for (faults, expect_end) in [
        (WatchFaults { cut_rate: 1.0, ..WatchFaults::default() }, true),
        (WatchFaults { stall_rate: 1.0, ..WatchFaults::default() }, false),
    ] {
        dc.set_faults(Some(Faults { watch: faults, ..Faults::default() }));
        let watching = tokio::spawn({
            let path = format!("{CONFIGMAPS}?watch=true&resourceVersion={rv}");
            let config = dc.config();
            async move {
                let dc = SecondClient(config);
                dc.watch(&path).await
            }
        });
        tokio::time::sleep(Duration::from_millis(200)).await;
        let name = format!("w{}", u8::from(expect_end));
        assert_eq!(raw(&dc, "POST", CONFIGMAPS, "application/json", &config_map(&name)).await.0, 201);
        let (lines, ended) = watching.await.unwrap();
        assert!(lines.is_empty(), "no event is delivered: {lines:?}");
        assert_eq!(ended, expect_end, "a cut stream ends, a stalled one stays open");
    }

    dc.set_faults(Some(Faults { watch: WatchFaults { delay_ms: 400, ..WatchFaults::default() }, ..Faults::default() }));
    let (_, list) = raw(&dc, "GET", CONFIGMAPS, "", "").await;
    let rv = list["metadata"]["resourceVersion"].as_str().unwrap().to_string();
    let watching = tokio::spawn({
        let path = format!("{CONFIGMAPS}?watch=true&resourceVersion={rv}");
        let dc = SecondClient(dc.config());
        async move {
            let started = Instant::now();
            let lines = dc.watch(&path).await.0;
            (lines, started.elapsed())
        }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    raw(&dc, "POST", CONFIGMAPS, "application/json", &config_map("late")).await;
    let (lines, _) = watching.await.unwrap();
    assert_eq!(lines.first().map(|l| l["object"]["metadata"]["name"].clone()), Some(json!("late")));
    dc.shutdown().await;
}

/// A second client on the same server, for a watch running in its own task.
struct SecondClient(kube::Config);

impl SecondClient {
    /// The events of a watch within 1.5 s, and whether the stream ended by itself.
    async fn watch(&self, path: &str) -> (Vec<Value>, bool) {
        lines_of(&once_with(self.0.clone()), path, Duration::from_millis(1500)).await
    }
}

#[tokio::test]
async fn bookmarks_are_dropped_on_demand() {
    let options = Options { bookmark_interval: Duration::from_millis(100), ..Options::default() };
    let dc = DevCluster::start(options).await.unwrap();
    let path = format!("{CONFIGMAPS}?watch=true&allowWatchBookmarks=true&resourceVersion=1");
    let (lines, _) = watch_lines(&dc, &path, Duration::from_millis(600)).await;
    assert!(lines.iter().any(|l| l["type"] == "BOOKMARK"), "bookmarks arrive without faults");
    dc.set_faults(Some(Faults {
        watch: WatchFaults { drop_bookmarks: true, ..WatchFaults::default() },
        ..Faults::default()
    }));
    let (lines, _) = watch_lines(&dc, &path, Duration::from_millis(600)).await;
    assert!(!lines.iter().any(|l| l["type"] == "BOOKMARK"), "{lines:?}");
    dc.shutdown().await;
}

#[tokio::test]
async fn stale_reads_serve_an_older_state_to_reads_that_allow_one_until_lifted() {
    use kube::api::{GetParams, ListParams};
    let dc = start_empty().await;
    let api: Api<ConfigMap> = Api::namespaced(dc.client(), "default");
    let mut cm: ConfigMap = serde_json::from_str(&config_map("stale")).unwrap();
    api.create(&PostParams::default(), &cm).await.unwrap();
    for v in 2..=5 {
        cm = api.get("stale").await.unwrap();
        cm.data = Some([("v".to_string(), v.to_string())].into());
        api.replace("stale", &PostParams::default(), &cm).await.unwrap();
    }
    dc.set_faults(Some(Faults {
        stale_reads: vec![StaleReads { resource: "configmaps".into(), behind: 2 }],
        ..Faults::default()
    }));
    let v = |cm: ConfigMap| cm.data.unwrap()["v"].clone();
    // resourceVersion=0: any version will do, as from a lagging watch cache.
    assert_eq!(v(api.get_with("stale", &GetParams::any()).await.unwrap()), "3", "two versions behind");
    let listed = api.list(&ListParams::default().match_any()).await.unwrap();
    assert_eq!(listed.items[0].data.as_ref().unwrap()["v"], "3");
    // No resourceVersion: a consistent read, never stale.
    assert_eq!(v(api.get("stale").await.unwrap()), "5");
    assert_eq!(api.list(&ListParams::default()).await.unwrap().items[0].data.as_ref().unwrap()["v"], "5");
    // Not older than the latest: the latest.
    let latest = cm.metadata.resource_version.clone().unwrap();
    let at_least = ListParams::default().at(&latest);
    assert_eq!(api.list(&at_least).await.unwrap().items[0].data.as_ref().unwrap()["v"], "5");
    dc.set_faults(None);
    assert_eq!(v(api.get_with("stale", &GetParams::any()).await.unwrap()), "5");
    dc.shutdown().await;
}

#[tokio::test]
async fn an_outage_ends_watches_and_refuses_requests_then_state_and_versions_continue() {
    let dc = start_empty().await;
    raw(&dc, "POST", CONFIGMAPS, "application/json", &config_map("before")).await;
    let (_, list) = raw(&dc, "GET", CONFIGMAPS, "", "").await;
    let rv: u64 = list["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap();
    let watching = tokio::spawn({
        let dc = SecondClient(dc.config());
        async move { dc.watch(&format!("{CONFIGMAPS}?watch=true&resourceVersion={rv}")).await }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    dc.outage(Duration::from_millis(700));
    let (_, ended) = watching.await.unwrap();
    assert!(ended, "open watches end");
    let req = http::Request::builder().uri(CONFIGMAPS).body(Vec::new()).unwrap();
    let resp = once(&dc).send(req.map(kube::client::Body::from)).await.unwrap();
    assert_eq!(resp.status().as_u16(), 503);
    tokio::time::sleep(Duration::from_millis(800)).await;
    let (code, body) = raw(&dc, "POST", CONFIGMAPS, "application/json", &config_map("after")).await;
    assert_eq!(code, 201);
    let after: u64 = body["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap();
    assert!(after > rv, "resourceVersions continue");
    let (_, list) = raw(&dc, "GET", CONFIGMAPS, "", "").await;
    assert_eq!(list["items"].as_array().unwrap().len(), 2, "the state is kept");
    dc.shutdown().await;
}

#[tokio::test]
async fn a_kube_runtime_watcher_sees_every_object_through_cut_and_expired_watches() {
    let dc = start_empty().await;
    dc.set_faults(Some(Faults {
        seed: 3,
        watch: WatchFaults { cut_rate: 0.3, gone_rate: 0.5, ..WatchFaults::default() },
        errors: vec![ErrorFault {
            code: 503,
            rate: 0.2,
            verbs: vec!["list".into(), "watch".into()],
            resource: None,
            retry_after_seconds: 1,
        }],
        ..Faults::default()
    }));
    let api: Api<ConfigMap> = Api::namespaced(dc.client(), "default");
    let (reader, writer) = kube::runtime::reflector::store();
    let stream = kube::runtime::reflector(writer, watcher(api.clone(), watcher::Config::default()))
        .default_backoff()
        .applied_objects();
    let follow = tokio::spawn(async move {
        futures_util::pin_mut!(stream);
        while stream.next().await.is_some() {}
    });
    for i in 0..20 {
        let cm: ConfigMap = serde_json::from_str(&config_map(&format!("cm{i}"))).unwrap();
        let _ = api.create(&PostParams::default(), &cm).await;
    }
    let all = super::eventually(|| {
        let reader = reader.clone();
        async move { reader.state().len() == 20 }
    })
    .await;
    assert!(all, "the watcher caught up: {} of 20", reader.state().len());
    assert!(dc.faults_injected() > 0);
    follow.abort();
    dc.shutdown().await;
}
