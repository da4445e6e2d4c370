//! kubewatch as a plugin, end to end: the host (event handlers, outbound HTTP, Secrets by
//! reference) on the embedded API server, the real plugin component, and receivers on
//! loopback that check what arrives.
//!
//! Every test runs for each build of the plugin listed at the end (`for_each_plugin!`, a module
//! per language): a port in another language is one more line there.

#[path = "../support/host.rs"]
#[allow(dead_code)] // shared with the external-system tests, which use all of it
mod host;
#[path = "../support/receiver.rs"]
mod receiver;

use std::collections::BTreeMap;
use std::time::Duration;

use kube::ResourceExt;
use kube::api::{Api, DynamicObject, ListParams};
use kubewasm_devcluster::{Faults, WatchFaults};
use serde_json::{Value, json};

use host::{Host, eventually, resource, stays};
use receiver::Receiver;

fn configmaps() -> kube::discovery::ApiResource {
    resource("", "v1", "ConfigMap", "configmaps")
}

fn services() -> kube::discovery::ApiResource {
    resource("", "v1", "Service", "services")
}

fn secrets() -> kube::discovery::ApiResource {
    resource("", "v1", "Secret", "secrets")
}

fn configmap(name: &str, value: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"},
           "data": {"v": value}})
}

fn service(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": "default"},
           "spec": {"ports": [{"port": 80}]}})
}

/// `kubewatch.toml` granting `receiver`, with `handlers` (TOML tables) and the kinds
/// `resources` on.
fn settings(receiver: &Receiver, resources: &[&str], handlers: &str) -> String {
    let resources: String = resources.iter().map(|r| format!("{r} = true\n")).collect();
    format!("[http]\nallow = [\"{}\"]\n\n[config.resource]\n{resources}\n{handlers}", receiver.origin())
}

/// The generic webhook at `path` of `receiver`.
fn webhook(receiver: &Receiver, path: &str) -> String {
    format!("[config.handler.webhook]\nurl = \"{}\"\n", receiver.url(path))
}

/// `Reason Kind name` of each webhook notification `receiver` accepted at `path`.
fn notifications(receiver: &Receiver, path: &str) -> Vec<String> {
    receiver
        .accepted(path)
        .iter()
        .map(|r| {
            let meta = &r.json()["eventmeta"];
            format!(
                "{} {} {}",
                meta["reason"].as_str().unwrap_or("?"),
                meta["kind"].as_str().unwrap_or("?"),
                meta["name"].as_str().unwrap_or("?")
            )
        })
        .collect()
}

/// The notifications of each object, in the order they arrived.
fn by_object(notes: &[String]) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for note in notes {
        let (reason, object) = note.split_once(' ').expect("reason and object");
        out.entry(object.to_string()).or_default().push(reason.to_string());
    }
    out
}

async fn wait_count(receiver: &Receiver, path: &str, n: usize) -> Vec<String> {
    eventually(&format!("{n} notifications at {path}"), || async {
        let got = notifications(receiver, path);
        (got.len() >= n).then_some(got)
    })
    .await
}

async fn each_handler_gets_kubewatchs_payload(plugin: &str) {
    let receiver = Receiver::start().await;
    let handlers = format!(
        "{}[config.handler.slackwebhook]\nslackwebhookurl = \"{}\"\nchannel = \"#alerts\"\nusername = \"kubewatch\"\nemoji = \":k8s:\"\n\
         [config.handler.msteams]\nwebhookurl = \"{}\"\n[config.handler.cloudevent]\nurl = \"{}\"\n",
        webhook(&receiver, "/webhook"),
        receiver.url("/slack"),
        receiver.url("/teams"),
        receiver.url("/ce"),
    );
    let host = Host::start(plugin, "kubewatch", &settings(&receiver, &["configmap"], &handlers)).await;
    let created = host.create(&configmaps(), configmap("web", "1")).await;
    let text = "A `ConfigMap` in namespace `default` has been `Created`:\n`web`";

    let hook = eventually("the webhook", || async { receiver.accepted("/webhook").pop() }).await;
    assert_eq!(hook.method, "POST");
    assert_eq!(hook.headers.get("content-type").map(String::as_str), Some("application/json"));
    let body = hook.json();
    assert_eq!(
        body["eventmeta"],
        json!({"kind": "ConfigMap", "name": "web", "namespace": "default", "reason": "Created"})
    );
    assert_eq!(body["text"], text);
    let time = body["time"].as_str().expect("time");
    assert!(time.parse::<jiff::Timestamp>().is_ok(), "time is RFC 3339: {time}");
    assert!(
        hook.text().starts_with(
            r#"{"eventmeta":{"kind":"ConfigMap","name":"web","namespace":"default","reason":"Created"},"text":"#
        ),
        "kubewatch's key order: {}",
        hook.text()
    );

    let slack = eventually("the Slack webhook", || async { receiver.accepted("/slack").pop() }).await;
    assert_eq!(
        slack.text(),
        format!(
            r##"{{"username":"kubewatch","icon_emoji":":k8s:","channel":"#alerts","text":{},"replace_original":false,"delete_original":false}}"##,
            json!(text)
        )
    );

    let teams = eventually("the Teams webhook", || async { receiver.accepted("/teams").pop() }).await;
    assert_eq!(
        teams.text(),
        format!(
            "{{\"@type\":\"MessageCard\",\"@context\":\"http://schema.org/extensions\",\"themeColor\":\"2DC72D\",\"summary\":\"kubewatch notification received\",\"title\":\"kubewatch\",\"sections\":[{{\"activityTitle\":{},\"facts\":null,\"markdown\":true}}]}}\n",
            json!(text)
        )
    );

    let ce = eventually("the CloudEvent", || async { receiver.accepted("/ce").pop() }).await;
    let uid = created.metadata.uid.as_deref().expect("uid");
    let rv = created.metadata.resource_version.as_deref().expect("resourceVersion");
    let header = |name: &str| ce.headers.get(name).map(String::as_str);
    assert_eq!(header("ce-specversion"), Some("1.0"));
    assert_eq!(header("ce-id"), Some(format!("{uid}:{rv}:added").as_str()), "the delivery id");
    assert_eq!(header("ce-source"), Some("https://github.com/aantn/kubewatch"));
    assert_eq!(header("ce-type"), Some("KUBERNETES_TOPOLOGY_CHANGE"));
    assert_eq!(header("ce-subject"), Some("default/web"));
    assert!(header("ce-time").is_some_and(|t| t.parse::<jiff::Timestamp>().is_ok()), "{:?}", ce.headers);
    assert_eq!(header("content-type"), Some("application/json"));
    assert_eq!(header("ce-datacontenttype"), None);
    let data = ce.json();
    assert_eq!(data["operation"], "create");
    assert_eq!(data["kind"], "ConfigMap");
    assert_eq!(data["apiVersion"], "v1");
    assert_eq!(data["description"], text);
    assert_eq!(data["obj"]["data"], json!({"v": "1"}));
    assert!(data["obj"]["metadata"].get("managedFields").is_none(), "{data}");
    assert_eq!(data["oldObj"], Value::Null);
    host.stop().await;
}

async fn changes_of_several_kinds_give_exactly_the_expected_notifications_in_order(plugin: &str) {
    let receiver = Receiver::start().await;
    let settings = settings(&receiver, &["configmap", "services"], &webhook(&receiver, "/hook"));
    // Objects that exist before the plugin is first loaded are not announced (kubewatch's
    // behaviour, and the host's unless `[events] initial` says otherwise).
    let mut host = Host::stopped(plugin, "kubewatch", &settings).await;
    host.create(&configmaps(), configmap("before", "0")).await;
    host.run().await;

    host.create(&configmaps(), configmap("a", "1")).await;
    host.create(&services(), service("b")).await;
    host.merge(&configmaps(), "a", json!({"data": {"v": "2"}})).await;
    // Not on: no notification.
    host.create(
        &secrets(),
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "default"}}),
    )
    .await;
    host.delete(&configmaps(), "a").await;
    host.delete(&services(), "b").await;

    let got = wait_count(&receiver, "/hook", 5).await;
    stays("notifications", Duration::from_secs(1), || notifications(&receiver, "/hook").len()).await;
    let got_now = notifications(&receiver, "/hook");
    assert_eq!(got_now.len(), 5, "exactly five: {got_now:?}");
    let objects = by_object(&got);
    assert_eq!(
        objects,
        BTreeMap::from([
            ("ConfigMap a".to_string(), vec!["Created".to_string(), "Updated".into(), "Deleted".into()]),
            ("Service b".to_string(), vec!["Created".to_string(), "Deleted".into()]),
        ]),
        "in order per object: {got:?}"
    );
    host.stop().await;
}

/// The CloudEvent ids the receiver accepted at `path`.
fn ids(receiver: &Receiver, path: &str) -> Vec<String> {
    receiver.accepted(path).iter().filter_map(|r| r.headers.get("ce-id").cloned()).collect()
}

fn cloudevent(receiver: &Receiver, path: &str) -> String {
    format!("[config.handler.cloudevent]\nurl = \"{}\"\n", receiver.url(path))
}

async fn objects_that_existed_before_the_plugin_are_announced_once_when_its_settings_ask(plugin: &str) {
    let receiver = Receiver::start().await;
    let handlers = format!("[events]\ninitial = true\n\n{}", webhook(&receiver, "/hook"));
    let mut host = Host::stopped(plugin, "kubewatch", &settings(&receiver, &["configmap"], &handlers)).await;
    host.create(&configmaps(), configmap("before", "0")).await;
    // Every ConfigMap there is now: this one, and each namespace's `kube-root-ca.crt`.
    let existing = Api::<DynamicObject>::all_with(host.client.clone(), &configmaps())
        .list(&ListParams::default())
        .await
        .expect("list ConfigMaps");
    let mut expected: Vec<String> =
        existing.items.iter().map(|cm| format!("Created ConfigMap {}", cm.name_any())).collect();
    expected.sort();
    assert!(expected.contains(&"Created ConfigMap before".to_string()), "{expected:?}");
    host.run().await;
    wait_count(&receiver, "/hook", expected.len()).await;
    stays("notifications", Duration::from_secs(1), || notifications(&receiver, "/hook").len()).await;
    let mut announced = notifications(&receiver, "/hook");
    announced.sort();
    assert_eq!(announced, expected, "each object that existed before, announced once");

    // Delivered once: a restarted host does not announce them again.
    host.halt().await;
    host.run().await;
    stays("notifications", Duration::from_secs(1), || notifications(&receiver, "/hook").len()).await;
    assert_eq!(notifications(&receiver, "/hook").len(), expected.len(), "nothing announced again");
    host.stop().await;
}

async fn a_watch_cut_and_resumed_replays_nothing(plugin: &str) {
    let receiver = Receiver::start().await;
    let host =
        Host::start(plugin, "kubewatch", &settings(&receiver, &["configmap"], &cloudevent(&receiver, "/ce"))).await;
    for i in 0..3 {
        host.create(&configmaps(), configmap(&format!("cm{i}"), "1")).await;
    }
    eventually("three creations", || async { (ids(&receiver, "/ce").len() == 3).then_some(()) }).await;

    // Watches cut often, and resumed with 410 Gone (a relist) half the time.
    let watch = WatchFaults { cut_rate: 0.5, gone_rate: 0.5, drop_bookmarks: true, ..WatchFaults::default() };
    host.cluster.set_faults(Some(Faults { seed: 21, watch, ..Faults::default() }));
    for i in 0..3 {
        host.merge(&configmaps(), &format!("cm{i}"), json!({"data": {"v": "2"}})).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    host.cluster.set_faults(None);
    // Each object changed once: one update each, whether the watch saw it or a relist did.
    eventually("three updates", || async { (ids(&receiver, "/ce").len() >= 6).then_some(()) }).await;
    // (A deletion while the watch is down would be noticed by the relist, with the object
    // as last known: the update before it would be lost, as with client-go's informers.)
    host.delete(&configmaps(), "cm0").await;
    eventually("a deletion", || async { (ids(&receiver, "/ce").len() >= 7).then_some(()) }).await;
    stays("CloudEvents", Duration::from_secs(2), || ids(&receiver, "/ce").len()).await;
    let got = ids(&receiver, "/ce");
    let mut unique = got.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), got.len(), "no event delivered twice: {got:?}");
    assert_eq!(got.len(), 7, "three creations, three updates, one deletion: {got:?}");
    assert_eq!(got.iter().filter(|id| id.ends_with(":deleted")).count(), 1, "{got:?}");
    host.stop().await;
}

async fn a_restarted_host_replays_nothing_and_announces_what_happened_while_it_was_down(plugin: &str) {
    let receiver = Receiver::start().await;
    let mut host =
        Host::start(plugin, "kubewatch", &settings(&receiver, &["configmap"], &webhook(&receiver, "/hook"))).await;
    host.create(&configmaps(), configmap("kept", "1")).await;
    host.create(&configmaps(), configmap("changed", "1")).await;
    host.create(&configmaps(), configmap("gone", "1")).await;
    wait_count(&receiver, "/hook", 3).await;

    host.halt().await;
    host.merge(&configmaps(), "changed", json!({"data": {"v": "2"}})).await;
    host.delete(&configmaps(), "gone").await;
    host.create(&configmaps(), configmap("born", "1")).await;
    host.run().await;

    let got = wait_count(&receiver, "/hook", 6).await;
    stays("notifications", Duration::from_secs(1), || notifications(&receiver, "/hook").len()).await;
    let mut after: Vec<String> = got[3..].to_vec();
    after.sort();
    assert_eq!(
        after,
        ["Created ConfigMap born", "Deleted ConfigMap gone", "Updated ConfigMap changed"],
        "what changed while the host was down, and nothing it had already said: {got:?}"
    );
    assert_eq!(notifications(&receiver, "/hook").len(), 6, "{:?}", notifications(&receiver, "/hook"));
    host.stop().await;
}

async fn a_receiver_down_for_a_while_gets_everything_after(plugin: &str) {
    let receiver = Receiver::start().await;
    let host =
        Host::start(plugin, "kubewatch", &settings(&receiver, &["configmap"], &webhook(&receiver, "/hook"))).await;
    receiver.answer(503);
    host.create(&configmaps(), configmap("a", "1")).await;
    host.merge(&configmaps(), "a", json!({"data": {"v": "2"}})).await;
    host.create(&configmaps(), configmap("b", "1")).await;
    host.delete(&configmaps(), "a").await;
    eventually("retries against the receiver that is down", || async {
        (receiver.received().iter().filter(|r| r.status == 503).count() >= 4).then_some(())
    })
    .await;
    assert!(notifications(&receiver, "/hook").is_empty());

    receiver.answer(200);
    let got = wait_count(&receiver, "/hook", 4).await;
    stays("notifications", Duration::from_secs(1), || notifications(&receiver, "/hook").len()).await;
    assert_eq!(
        by_object(&got),
        BTreeMap::from([
            ("ConfigMap a".to_string(), vec!["Created".to_string(), "Updated".into(), "Deleted".into()]),
            ("ConfigMap b".to_string(), vec!["Created".to_string()]),
        ]),
        "nothing lost, in order per object: {got:?}"
    );
    host.stop().await;
}

async fn past_the_queue_limit_the_oldest_are_dropped_with_a_warning_and_a_metric(plugin: &str) {
    let receiver = Receiver::start().await;
    let handlers = format!("[events]\nqueue-limit = 2\n\n{}", webhook(&receiver, "/hook"));
    let host = Host::start(plugin, "kubewatch", &settings(&receiver, &["configmap"], &handlers)).await;
    receiver.answer(503);
    host.create(&configmaps(), configmap("a", "1")).await;
    eventually("the first attempt", || async { (!receiver.received().is_empty()).then_some(()) }).await;
    // The creation waits for a retry; four updates queue behind it, two more than the limit.
    for v in 2..=5 {
        host.merge(&configmaps(), "a", json!({"data": {"v": v.to_string()}})).await;
    }
    let warned = eventually("an EventsDropped warning", || async {
        let events = host.events("EventsDropped").await;
        (!events.is_empty()).then_some(events)
    })
    .await;
    let note = warned[0].note.clone().unwrap_or_default();
    assert!(note.contains(&format!("plugin {plugin} has more than 2 undelivered events: dropped")), "{note}");
    assert_eq!(warned[0].regarding.as_ref().and_then(|r| r.name.as_deref()), Some("a"));

    receiver.answer(200);
    let dropped = || host.metric("kubewasm_events_dropped_total", &[("plugin", plugin), ("reason", "queue_limit")]);
    // Each of the five events is either delivered or counted as dropped: none is lost unsaid.
    eventually("five events delivered or dropped", || async {
        (notifications(&receiver, "/hook").len() + dropped() as usize == 5).then_some(())
    })
    .await;
    stays("notifications", Duration::from_secs(1), || notifications(&receiver, "/hook").len()).await;
    assert!(dropped() >= 2.0, "at least the two past the limit: {}", dropped());
    let got = notifications(&receiver, "/hook");
    assert_eq!(got.last().map(String::as_str), Some("Updated ConfigMap a"), "the newest is kept: {got:?}");
    host.stop().await;
}

async fn a_url_not_granted_is_refused_and_never_sent(plugin: &str) {
    let granted = Receiver::start().await;
    let other = Receiver::start().await;
    // The webhook goes to `other`, which the operator did not grant.
    let host = Host::start(plugin, "kubewatch", &settings(&granted, &["configmap"], &webhook(&other, "/hook"))).await;
    host.create(&configmaps(), configmap("a", "1")).await;
    let events = eventually("the refusal recorded on the ConfigMap", || async {
        let events = host.events("EventRejected").await;
        (!events.is_empty()).then_some(events)
    })
    .await;
    let note = events[0].note.clone().unwrap_or_default();
    assert!(note.contains(&format!("{} is not granted to plugin {plugin}:", other.origin())), "{note}");
    assert!(note.contains("[http]"), "names the setting: {note}");
    assert!(!note.contains("/hook"), "no path in what the host shows: {note}");
    assert!(other.received().is_empty(), "nothing reached the URL not granted");
    assert!(host.metric("kubewasm_plugin_http_requests_total", &[("plugin", plugin), ("status", "denied")]) >= 1.0);
    host.stop().await;
}

async fn a_rotated_secret_is_used_from_the_next_notification(plugin: &str) {
    let receiver = Receiver::start().await;
    let handlers =
        "[config.handler.webhook]\nurl = { secretKeyRef = { name = \"kubewatch\", key = \"webhook-url\" } }\n";
    let host = Host::start(plugin, "kubewatch", "").await;
    host.create(
        &secrets(),
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "kubewatch", "namespace": "default"},
               "stringData": {"webhook-url": receiver.url("/first")}}),
    )
    .await;
    let mut host = host;
    host.settings("kubewatch", &settings(&receiver, &["configmap"], handlers)).await;
    host.create(&configmaps(), configmap("a", "1")).await;
    eventually("the first URL", || async { (!receiver.accepted("/first").is_empty()).then_some(()) }).await;

    host.merge(&secrets(), "kubewatch", json!({"stringData": {"webhook-url": receiver.url("/second")}})).await;
    // The next notification after the Secret changed goes to the new URL.
    eventually("the second URL", || async {
        host.merge(&configmaps(), "a", json!({"data": {"v": jiff::Timestamp::now().to_string()}})).await;
        tokio::time::sleep(Duration::from_millis(200)).await;
        (!receiver.accepted("/second").is_empty()).then_some(())
    })
    .await;
    host.stop().await;
}

/// Not kubewatch's: a handler with a bug (`host/tests/fixtures/panic-handler`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handler_that_panics_is_reported_on_the_object_as_a_reconcile_that_panics() {
    let host = Host::start("panic-handler", "panic-handler", "").await;
    host.create(&configmaps(), configmap("a", "1")).await;
    let failed = eventually("a PluginFailed warning", || async {
        let events = host.events("PluginFailed").await;
        (!events.is_empty()).then_some(events)
    })
    .await;
    let note = failed[0].note.clone().unwrap_or_default();
    assert!(note.contains("plugin panic-handler panicked in handle: panic-handler was told to panic by"), "{note}");
    assert_eq!(failed[0].regarding.as_ref().and_then(|r| r.name.as_deref()), Some("a"));
    assert!(
        host.metric("kubewasm_plugin_call_failures_total", &[("plugin", "panic-handler"), ("failure", "panic")]) >= 1.0
    );
    host.stop().await;
}

kubewasm_tests::for_each_plugin!(
    [(rust, "kubewatch", "The Rust plugin."), (typescript, "kubewatch-ts", "The TypeScript port (guest-sdk/js)."),],
    (
        each_handler_gets_kubewatchs_payload,
        changes_of_several_kinds_give_exactly_the_expected_notifications_in_order,
        objects_that_existed_before_the_plugin_are_announced_once_when_its_settings_ask,
        a_watch_cut_and_resumed_replays_nothing,
        a_restarted_host_replays_nothing_and_announces_what_happened_while_it_was_down,
        a_receiver_down_for_a_while_gets_everything_after,
        past_the_queue_limit_the_oldest_are_dropped_with_a_warning_and_a_metric,
        a_url_not_granted_is_refused_and_never_sent,
        a_rotated_secret_is_used_from_the_next_notification
    )
);
