//! An operator of a system outside the cluster, end to end: the `dns-record` example's
//! DnsRecords become records in a DNS HTTP API on loopback, through the host's outbound
//! HTTP with the API's token from a Secret.
//!
//! Every test runs for each build of the plugin listed at the end (`for_each_plugin!`, a module
//! per language): a port in another language is one more line there.

#[path = "../support/dns_api.rs"]
mod dns_api;
#[path = "../support/host.rs"]
#[allow(dead_code)] // shared with the kubewatch tests, which use all of it
mod host;

use std::time::Duration;

use serde_json::{Value, json};

use dns_api::{DnsApi, Record};
use host::{Host, eventually, resource, stays};

const TOKEN: &str = "t0ken";

fn dns_records() -> kube::discovery::ApiResource {
    resource("dns.kubewasm.io", "v1alpha1", "DnsRecord", "dnsrecords")
}

fn record(name: &str, values: &[&str]) -> Value {
    json!({
        "apiVersion": "dns.kubewasm.io/v1alpha1",
        "kind": "DnsRecord",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"zone": "example.org", "name": name, "type": "A", "ttl": 60, "values": values},
    })
}

fn key(name: &str) -> dns_api::RecordKey {
    ("example.org".into(), name.into(), "A".into())
}

/// `dns-record.toml`: the API granted by address, its token from the Secret `dns-api`.
fn settings(api: &DnsApi) -> String {
    format!(
        "[http]\nallow = [\"{}\"]\ntimeout-ms = 2000\n\n[config]\nendpoint = \"{}\"\ntoken = {{ secretKeyRef = {{ name = \"dns-api\", key = \"token\" }} }}\n",
        api.endpoint(),
        api.endpoint()
    )
}

async fn start(plugin: &str, api: &DnsApi) -> Host {
    let mut host = Host::start(plugin, "dns-record", "").await;
    host.create(
        &resource("", "v1", "Secret", "secrets"),
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "dns-api", "namespace": "default"},
               "stringData": {"token": TOKEN}}),
    )
    .await;
    host.settings("dns-record", &settings(api)).await;
    host
}

/// The DnsRecord's `Synced` condition: status and reason.
async fn synced(host: &Host, name: &str) -> Option<(String, String)> {
    let object = host.get(&dns_records(), name).await?;
    let conditions = object.data["status"]["conditions"].as_array()?.clone();
    let c = conditions.iter().find(|c| c["type"] == "Synced")?;
    Some((c["status"].as_str()?.to_string(), c["reason"].as_str()?.to_string()))
}

async fn wait_synced(host: &Host, name: &str, status: &str, reason: &str) {
    eventually(&format!("{name} Synced {status} {reason}"), || async {
        (synced(host, name).await == Some((status.into(), reason.into()))).then_some(())
    })
    .await;
}

async fn a_record_converges_and_follows_its_spec(plugin: &str) {
    let api = DnsApi::start(TOKEN).await;
    let host = start(plugin, &api).await;
    let created = host.create(&dns_records(), record("www", &["192.0.2.1"])).await;
    wait_synced(&host, "www", "True", "RecordSynced").await;
    let uid = created.metadata.uid.clone().expect("uid");
    assert_eq!(
        api.records().get(&key("www")),
        Some(&Record { ttl: 60, values: vec!["192.0.2.1".into()], owner: uid.clone() })
    );
    let object = host.get(&dns_records(), "www").await.expect("the DnsRecord");
    assert_eq!(object.data["status"]["fqdn"], "www.example.org.");
    assert_eq!(api.served("PUT"), 1, "{:?}", api.log());

    // Converged: reads only.
    stays("PUT requests", Duration::from_secs(1), || api.served("PUT")).await;

    host.merge(&dns_records(), "www", json!({"spec": {"values": ["192.0.2.1", "192.0.2.2"]}})).await;
    eventually("the new values in the API", || async {
        (api.records()[&key("www")].values == ["192.0.2.1", "192.0.2.2"]).then_some(())
    })
    .await;
    stays("PUT requests", Duration::from_secs(1), || api.served("PUT")).await;
    assert_eq!(api.served("PUT"), 2, "one write per change: {:?}", api.log());
    host.stop().await;
}

async fn the_finalizer_deletes_the_remote_record(plugin: &str) {
    let api = DnsApi::start(TOKEN).await;
    let host = start(plugin, &api).await;
    host.create(&dns_records(), record("gone", &["192.0.2.9"])).await;
    wait_synced(&host, "gone", "True", "RecordSynced").await;
    let object = host.get(&dns_records(), "gone").await.expect("the DnsRecord");
    assert!(
        // Named after the plugin's manifest: each build's own.
        object.metadata.finalizers.iter().flatten().any(|f| *f == format!("kubewasm.io/{plugin}")),
        "{:?}",
        object.metadata.finalizers
    );

    host.delete(&dns_records(), "gone").await;
    eventually("the DnsRecord gone", || async { host.get(&dns_records(), "gone").await.is_none().then_some(()) }).await;
    assert!(!api.records().contains_key(&key("gone")), "the remote record is deleted");
    assert_eq!(api.served("DELETE"), 1, "{:?}", api.log());
    host.stop().await;
}

async fn with_the_remote_down_the_status_says_so_and_no_duplicate_is_made(plugin: &str) {
    let api = DnsApi::start(TOKEN).await;
    api.set_down(true);
    let host = start(plugin, &api).await;
    host.create(&dns_records(), record("www", &["192.0.2.1"])).await;
    wait_synced(&host, "www", "False", "RemoteUnavailable").await;
    let warned = eventually("a RemoteUnavailable warning", || async {
        let events = host.events("RemoteUnavailable").await;
        (!events.is_empty()).then_some(events)
    })
    .await;
    assert!(warned[0].note.as_deref().unwrap_or_default().contains("503"), "{:?}", warned[0].note);
    // The host retries with backoff meanwhile.
    eventually("retries while the API is down", || async {
        (api.log().iter().filter(|l| l.ends_with("-> 503")).count() >= 3).then_some(())
    })
    .await;

    api.set_down(false);
    wait_synced(&host, "www", "True", "RecordSynced").await;
    assert_eq!(api.records().len(), 1, "one record, however many retries");
    assert_eq!(api.served("PUT"), 1, "{:?}", api.log());
    host.stop().await;
}

async fn a_record_someone_else_owns_is_left_alone(plugin: &str) {
    let api = DnsApi::start(TOKEN).await;
    let theirs = Record { ttl: 300, values: vec!["198.51.100.7".into()], owner: "someone-else".into() };
    api.put(key("taken"), theirs.clone());
    let host = start(plugin, &api).await;
    host.create(&dns_records(), record("taken", &["192.0.2.1"])).await;
    wait_synced(&host, "taken", "False", "RecordConflict").await;
    assert!(!host.events("RecordConflict").await.is_empty());
    assert_eq!(api.records()[&key("taken")], theirs);
    assert_eq!(api.served("PUT"), 0, "{:?}", api.log());
    host.stop().await;
}

kubewasm_tests::for_each_plugin!(
    [(rust, "dns-record", "The Rust plugin."), (typescript, "dns-record-ts", "The TypeScript port (guest-sdk/js)."),],
    (
        a_record_converges_and_follows_its_spec,
        the_finalizer_deletes_the_remote_record,
        with_the_remote_down_the_status_says_so_and_no_duplicate_is_made,
        a_record_someone_else_owns_is_left_alone
    )
);
