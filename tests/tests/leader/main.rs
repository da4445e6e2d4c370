//! Leader election (`kubewasm::coordination::leader`) against the embedded API server: two candidates
//! on one Lease, exactly one leads, and the standby takes over when the leader stops
//! or steps aside. Sharding, where every replica reconciles a part, is in `shard`.

mod shard;

use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use kube::Client;
use kube::api::{Api, Patch, PatchParams};
use kubewasm::coordination::leader::{Elector, Leadership};
use kubewasm_devcluster::{DevCluster, Options};
use serde_json::json;
use tokio::sync::watch;
use tokio::time::Instant;

const LEASE: &str = "kubewasm-test";
/// Short, so that takeover after a crash is quick; bounds below are generous multiples.
const LEASE_DURATION: Duration = Duration::from_secs(2);

async fn start() -> (DevCluster, Client) {
    let cluster = DevCluster::start(Options::default()).await.expect("the embedded API server starts");
    let client = cluster.client();
    (cluster, client)
}

fn candidate(client: &Client, identity: &str, lease_duration: Duration) -> Leadership {
    Elector::new(client.clone(), "default", LEASE, identity, lease_duration)
        .with_retry_period(Duration::from_millis(200))
        .spawn()
}

/// Waits until `leading` says `true`; panics naming `who` after `bound`.
async fn leads_within(leading: &mut watch::Receiver<bool>, who: &str, bound: Duration) -> Duration {
    let start = Instant::now();
    tokio::time::timeout(bound, leading.wait_for(|l| *l))
        .await
        .unwrap_or_else(|_| panic!("{who} did not lead within {bound:?}"))
        .expect("the elector runs");
    start.elapsed()
}

async fn holder(client: &Client) -> Option<String> {
    let leases: Api<Lease> = Api::namespaced(client.clone(), "default");
    leases.get(LEASE).await.expect("the lease exists").spec.and_then(|s| s.holder_identity)
}

/// Starts `a` and `b` on one Lease and returns them as (leader, standby) with
/// their identities, once one of them leads.
async fn elect(client: &Client, lease_duration: Duration) -> ((Leadership, &'static str), (Leadership, &'static str)) {
    let a = candidate(client, "host-a", lease_duration);
    let b = candidate(client, "host-b", lease_duration);
    let (mut la, mut lb) = (a.subscribe(), b.subscribe());
    let bound = lease_duration * 3;
    tokio::time::timeout(bound, async {
        tokio::select! {
            r = la.wait_for(|l| *l) => { r.expect("a runs"); }
            r = lb.wait_for(|l| *l) => { r.expect("b runs"); }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("nobody led within {bound:?}"));
    if a.is_leader() { ((a, "host-a"), (b, "host-b")) } else { ((b, "host-b"), (a, "host-a")) }
}

#[tokio::test(flavor = "multi_thread")]
async fn of_two_candidates_on_one_lease_exactly_one_leads() {
    let (cluster, client) = start().await;
    let ((leader, leader_id), (standby, standby_id)) = elect(&client, LEASE_DURATION).await;
    // Watch both across several renewals: never both at once.
    let until = Instant::now() + LEASE_DURATION * 2;
    while Instant::now() < until {
        assert!(!(leader.is_leader() && standby.is_leader()), "both candidates lead at once");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let now_leading = match (leader.is_leader(), standby.is_leader()) {
        (true, false) => leader_id,
        (false, true) => standby_id,
        other => panic!("exactly one candidate leads, not {other:?}"),
    };
    assert_eq!(holder(&client).await.as_deref(), Some(now_leading), "the Lease names the leader");
    leader.release().await.expect("releases");
    standby.release().await.expect("releases");
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_standby_takes_over_when_the_leader_stops_without_releasing() {
    let (cluster, client) = start().await;
    let ((leader, leader_id), (standby, standby_id)) = elect(&client, LEASE_DURATION).await;
    let mut standby_leading = standby.subscribe();
    leader.abort();
    // The Lease still names the crashed leader until it expires.
    assert_eq!(holder(&client).await.as_deref(), Some(leader_id));
    leads_within(&mut standby_leading, standby_id, LEASE_DURATION * 3).await;
    assert_eq!(holder(&client).await.as_deref(), Some(standby_id));
    standby.release().await.expect("releases");
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_standby_takes_over_promptly_when_the_leader_releases() {
    let (cluster, client) = start().await;
    // A long lease: a takeover well inside it proves the standby did not wait for expiry.
    let long = Duration::from_secs(60);
    let ((leader, _), (standby, standby_id)) = elect(&client, long).await;
    let mut standby_leading = standby.subscribe();
    let mut leader_leading = leader.subscribe();
    leader.release().await.expect("the leader releases its lease");
    assert!(!*leader_leading.borrow_and_update(), "a released leader no longer leads");
    let took = leads_within(&mut standby_leading, standby_id, long / 4).await;
    assert!(took < long / 4, "took {took:?}");
    assert_eq!(holder(&client).await.as_deref(), Some(standby_id));
    standby.release().await.expect("releases");
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_leader_whose_lease_is_taken_stops_leading() {
    let (cluster, client) = start().await;
    let ((leader, leader_id), (standby, _)) = elect(&client, LEASE_DURATION).await;
    standby.abort();
    let mut leading = leader.subscribe();
    // Another party (an operator, a host of another version) takes the Lease.
    let leases: Api<Lease> = Api::namespaced(client.clone(), "default");
    let long_lease = json!({ "spec": { "holderIdentity": "someone-else", "leaseDurationSeconds": 3600 } });
    leases.patch(LEASE, &PatchParams::default(), &Patch::Merge(long_lease)).await.expect("patch the lease");
    tokio::time::timeout(LEASE_DURATION * 3, leading.wait_for(|l| !*l))
        .await
        .unwrap_or_else(|_| panic!("{leader_id} still leads after losing its lease"))
        .expect("the elector runs");
    assert_eq!(holder(&client).await.as_deref(), Some("someone-else"), "it does not take a lease that is held");
    leader.release().await.expect("release leaves a lease it does not hold alone");
    assert_eq!(holder(&client).await.as_deref(), Some("someone-else"));
    cluster.shutdown().await;
}
