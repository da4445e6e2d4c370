//! Watches: events in order from a resourceVersion, selector transitions, bookmarks, 410 Gone
//! for expired versions, streaming lists, and `kube::runtime::watcher` end to end.

use std::time::Duration;

use futures_util::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube::runtime::watcher;
use kubewasm_devcluster::{DevCluster, Options};
use serde_json::json;

use super::{start, start_empty};

fn cm(name: &str, app: &str) -> ConfigMap {
    serde_json::from_value(json!({ "metadata": { "name": name, "labels": { "app": app } }, "data": { "v": "0" } }))
        .unwrap()
}

fn label(ev: &WatchEvent<ConfigMap>) -> String {
    match ev {
        WatchEvent::Added(o) => format!("ADDED {}", o.metadata.name.clone().unwrap()),
        WatchEvent::Modified(o) => format!("MODIFIED {}", o.metadata.name.clone().unwrap()),
        WatchEvent::Deleted(o) => format!("DELETED {}", o.metadata.name.clone().unwrap()),
        WatchEvent::Bookmark(b) => format!("BOOKMARK {}", b.metadata.resource_version),
        WatchEvent::Error(e) => format!("ERROR {}", e.code),
    }
}

async fn next_events(
    stream: &mut (impl futures_util::Stream<Item = kube::Result<WatchEvent<ConfigMap>>> + Unpin),
    n: usize,
) -> Vec<String> {
    let mut out = Vec::new();
    while out.len() < n {
        let ev = tokio::time::timeout(Duration::from_secs(5), stream.try_next()).await.expect("an event in time");
        let ev = ev.expect("a good event").expect("stream still open");
        if !matches!(ev, WatchEvent::Bookmark(_)) {
            out.push(label(&ev));
        }
    }
    out
}

#[tokio::test]
async fn watch_from_a_version_sees_added_modified_deleted_in_order() {
    let dc = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(dc.client(), "default");
    let first = cms.create(&PostParams::default(), &cm("a", "x")).await.unwrap();
    let from = first.metadata.resource_version.unwrap();
    cms.patch("a", &PatchParams::default(), &Patch::Merge(json!({ "data": { "v": "1" } }))).await.unwrap();
    cms.create(&PostParams::default(), &cm("b", "x")).await.unwrap();
    cms.delete("a", &DeleteParams::default()).await.unwrap();
    let mut stream = cms.watch(&WatchParams::default(), &from).await.unwrap().boxed();
    assert_eq!(next_events(&mut stream, 3).await, ["MODIFIED a", "ADDED b", "DELETED a"]);
    cms.delete("b", &DeleteParams::default()).await.unwrap();
    assert_eq!(next_events(&mut stream, 1).await, ["DELETED b"]);
    dc.shutdown().await;
}

#[tokio::test]
async fn watch_without_a_version_starts_with_the_current_state() {
    let dc = start_empty().await;
    let cms: Api<ConfigMap> = Api::namespaced(dc.client(), "default");
    cms.create(&PostParams::default(), &cm("a", "x")).await.unwrap();
    let mut stream = cms.watch(&WatchParams::default(), "0").await.unwrap().boxed();
    assert_eq!(next_events(&mut stream, 1).await, ["ADDED a"]);
    cms.create(&PostParams::default(), &cm("b", "x")).await.unwrap();
    assert_eq!(next_events(&mut stream, 1).await, ["ADDED b"]);
    dc.shutdown().await;
}

#[tokio::test]
async fn selector_watches_see_objects_enter_and_leave() {
    let dc = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(dc.client(), "default");
    let first = cms.create(&PostParams::default(), &cm("a", "web")).await.unwrap();
    let params = WatchParams::default().labels("app=web");
    let mut stream = cms.watch(&params, first.metadata.resource_version.as_deref().unwrap()).await.unwrap().boxed();
    let relabel = |app: &str| Patch::Merge(json!({ "metadata": { "labels": { "app": app } } }));
    cms.patch("a", &PatchParams::default(), &relabel("db")).await.unwrap();
    cms.patch("a", &PatchParams::default(), &relabel("web")).await.unwrap();
    cms.create(&PostParams::default(), &cm("other", "db")).await.unwrap();
    cms.patch("a", &PatchParams::default(), &Patch::Merge(json!({ "data": { "v": "2" } }))).await.unwrap();
    assert_eq!(next_events(&mut stream, 3).await, ["DELETED a", "ADDED a", "MODIFIED a"]);
    dc.shutdown().await;
}

#[tokio::test]
async fn bookmarks_arrive_when_asked_for() {
    let opts = Options { bookmark_interval: Duration::from_millis(100), ..Options::default() };
    let dc = DevCluster::start(opts).await.unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(dc.client(), "default");
    let created = cms.create(&PostParams::default(), &cm("a", "x")).await.unwrap();
    let rv = created.metadata.resource_version.unwrap();
    let mut stream = cms.watch(&WatchParams::default(), &rv).await.unwrap().boxed();
    let ev = tokio::time::timeout(Duration::from_secs(5), stream.try_next()).await.unwrap().unwrap().unwrap();
    match ev {
        WatchEvent::Bookmark(b) => assert_eq!(b.metadata.resource_version, rv),
        other => panic!("expected a bookmark, got {}", label(&other)),
    }
    let mut quiet = cms.watch(&WatchParams::default().disable_bookmarks(), &rv).await.unwrap().boxed();
    assert!(
        tokio::time::timeout(Duration::from_millis(400), quiet.try_next()).await.is_err(),
        "no bookmark unless asked"
    );
    dc.shutdown().await;
}

#[tokio::test]
async fn a_version_older_than_the_history_gets_410_gone() {
    let opts = Options { watch_history: 2, ..Options::default() };
    let dc = DevCluster::start(opts).await.unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(dc.client(), "default");
    let first = cms.create(&PostParams::default(), &cm("a", "x")).await.unwrap();
    for i in 0..4 {
        cms.patch("a", &PatchParams::default(), &Patch::Merge(json!({ "data": { "v": i.to_string() } })))
            .await
            .unwrap();
    }
    let mut stream =
        cms.watch(&WatchParams::default(), first.metadata.resource_version.as_deref().unwrap()).await.unwrap().boxed();
    let ev = tokio::time::timeout(Duration::from_secs(5), stream.try_next()).await.unwrap().unwrap().unwrap();
    match ev {
        WatchEvent::Error(status) => {
            assert_eq!(status.code, 410);
            assert_eq!(status.reason, "Expired");
            assert!(status.message.starts_with("too old resource version"), "{}", status.message);
        }
        other => panic!("expected 410, got {}", label(&other)),
    }
    dc.shutdown().await;
}

#[tokio::test]
async fn runtime_watcher_lists_in_pages_then_follows_changes() {
    let dc = start_empty().await;
    let cms: Api<ConfigMap> = Api::namespaced(dc.client(), "default");
    for i in 0..5 {
        cms.create(&PostParams::default(), &cm(&format!("c{i}"), "x")).await.unwrap();
    }
    let mut events = watcher(cms.clone(), watcher::Config::default().page_size(2)).boxed();
    let mut initial = Vec::new();
    loop {
        match tokio::time::timeout(Duration::from_secs(5), events.try_next()).await.unwrap().unwrap().unwrap() {
            watcher::Event::InitApply(o) => initial.push(o.metadata.name.unwrap()),
            watcher::Event::InitDone => break,
            _ => {}
        }
    }
    assert_eq!(initial, ["c0", "c1", "c2", "c3", "c4"]);
    cms.patch("c3", &PatchParams::default(), &Patch::Merge(json!({ "data": { "v": "9" } }))).await.unwrap();
    cms.delete("c1", &DeleteParams::default()).await.unwrap();
    let mut seen = Vec::new();
    while seen.len() < 2 {
        match tokio::time::timeout(Duration::from_secs(5), events.try_next()).await.unwrap().unwrap().unwrap() {
            watcher::Event::Apply(o) => seen.push(format!("apply {}", o.metadata.name.unwrap())),
            watcher::Event::Delete(o) => seen.push(format!("delete {}", o.metadata.name.unwrap())),
            _ => {}
        }
    }
    assert_eq!(seen, ["apply c3", "delete c1"]);
    dc.shutdown().await;
}

/// Streaming lists are the `WatchList` feature, off in Kubernetes 1.33 (`kube_features.go`:
/// `{1.33, Beta, false}`): a server asked for them answers as kube-apiserver 1.33 does.
#[tokio::test]
async fn a_streaming_list_is_refused_as_by_kubernetes_1_33_unless_asked_for() {
    let dc = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(dc.client(), "default");
    let refused = cms.watch(&WatchParams::streaming_lists(), "0").await.err().map(super::api_error);
    let status = refused.expect("a 1.33 server refuses sendInitialEvents");
    assert_eq!((status.code, status.reason.as_str()), (422, "Invalid"));
    assert_eq!(
        status.message,
        "ListOptions.meta.k8s.io \"\" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled"
    );
    dc.shutdown().await;
}

#[tokio::test]
async fn runtime_watcher_with_streaming_lists_gets_initial_events() {
    super::watchdog();
    let dc = DevCluster::start(Options { watch_list: true, namespace_controllers: false, ..Options::default() })
        .await
        .expect("the server starts");
    let cms: Api<ConfigMap> = Api::namespaced(dc.client(), "default");
    cms.create(&PostParams::default(), &cm("s", "x")).await.unwrap();
    let mut events = watcher(cms.clone(), watcher::Config::default().streaming_lists()).boxed();
    let mut initial = Vec::new();
    loop {
        match tokio::time::timeout(Duration::from_secs(5), events.try_next()).await.unwrap().unwrap().unwrap() {
            watcher::Event::InitApply(o) => initial.push(o.metadata.name.unwrap()),
            watcher::Event::InitDone => break,
            _ => {}
        }
    }
    assert_eq!(initial, ["s"]);
    dc.shutdown().await;
}

#[tokio::test]
async fn metadata_watcher_receives_partial_objects() {
    let dc = start_empty().await;
    let cms: Api<ConfigMap> = Api::namespaced(dc.client(), "default");
    cms.create(&PostParams::default(), &cm("m", "x")).await.unwrap();
    let metadata: Api<kube::core::PartialObjectMeta<ConfigMap>> = Api::namespaced(dc.client(), "default");
    let mut events = watcher(metadata, watcher::Config::default()).boxed();
    loop {
        match tokio::time::timeout(Duration::from_secs(5), events.try_next()).await.unwrap().unwrap().unwrap() {
            watcher::Event::InitApply(o) => assert_eq!(o.metadata.name.as_deref(), Some("m")),
            watcher::Event::InitDone => break,
            _ => {}
        }
    }
    dc.shutdown().await;
}

#[tokio::test]
async fn the_legacy_watch_path_streams_json_lines_until_the_timeout() {
    let dc = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(dc.client(), "default");
    cms.create(&PostParams::default(), &cm("legacy", "x")).await.unwrap();
    let (code, body) =
        super::raw(&dc, "GET", "/api/v1/watch/namespaces/default/configmaps?timeoutSeconds=1", "", "").await;
    assert_eq!(code, 200);
    let text = match body {
        serde_json::Value::String(lines) => lines,
        one_event => one_event.to_string(),
    };
    assert!(text.contains("\"type\":\"ADDED\"") && text.contains("legacy"), "{text}");
    dc.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kube_runtime_controller_converges_and_its_children_are_collected() {
    use k8s_openapi::api::core::v1::Secret;
    use kube::Resource;
    use kube::runtime::controller::{Action, Controller};
    use std::sync::Arc;

    #[derive(Debug)]
    struct Never;
    impl std::fmt::Display for Never {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("never")
        }
    }
    impl std::error::Error for Never {}

    let dc = start().await;
    let parents: Api<ConfigMap> = Api::namespaced(dc.client(), "default");
    let children: Api<Secret> = Api::namespaced(dc.client(), "default");
    let reconcile = |parent: Arc<ConfigMap>, children: Arc<Api<Secret>>| async move {
        let owner = parent.controller_owner_ref(&()).unwrap();
        let child = json!({ "apiVersion": "v1", "kind": "Secret",
            "metadata": { "name": format!("{}-child", parent.metadata.name.as_deref().unwrap()), "ownerReferences": [owner] },
            "stringData": { "v": parent.data.as_ref().and_then(|d| d.get("v")).cloned().unwrap_or_default() } });
        let name = child["metadata"]["name"].as_str().unwrap().to_string();
        children
            .patch(&name, &PatchParams::apply("kubewasm.test").force(), &Patch::Apply(child))
            .await
            .map_err(|_| Never)?;
        Ok::<_, Never>(Action::await_change())
    };
    let controller = Controller::new(parents.clone(), watcher::Config::default())
        .owns(children.clone(), watcher::Config::default())
        .run(reconcile, |_, _, _| Action::await_change(), Arc::new(children.clone()))
        .for_each(|_| async {});
    let running = tokio::spawn(controller);

    parents.create(&PostParams::default(), &cm("p", "x")).await.unwrap();
    assert!(super::eventually(|| async { children.get_opt("p-child").await.unwrap().is_some() }).await);
    parents.patch("p", &PatchParams::default(), &Patch::Merge(json!({ "data": { "v": "1" } }))).await.unwrap();
    let updated = super::eventually(|| async {
        children.get("p-child").await.unwrap().data.unwrap_or_default().get("v").is_some_and(|v| v.0 == b"1")
    })
    .await;
    assert!(updated, "a parent change is reconciled into the child");
    // Let reconciles still in flight finish, then prove the steady state makes no writes.
    let mut settled = None;
    let mut last = dc.write_requests();
    for _ in 0..20 {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let now = dc.write_requests();
        if now == last {
            settled = Some(now);
            break;
        }
        last = now;
    }
    let settled = settled.expect("the controller settles");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(dc.write_requests(), settled, "the steady state makes no writes");
    parents.delete("p", &DeleteParams::default()).await.unwrap();
    assert!(
        super::eventually(|| async { children.get_opt("p-child").await.unwrap().is_none() }).await,
        "the child is collected"
    );
    running.abort();
    dc.shutdown().await;
}
