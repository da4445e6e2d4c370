//! Sharding (`kubewasm::coordination::shard`) against the embedded API server: members of one group
//! split the buckets of parents, never two at once, take over from a member that crashes
//! or leaves, and give a newcomer its share.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use kube::Client;
use kube::api::{Api, ListParams};
use kubewasm::coordination::shard::{Bucket, GROUP_LABEL, Joined, Member, Shard, owner};
use tokio::sync::watch;
use tokio::time::Instant;

use super::start;

const GROUP: &str = "kubewasm-shards";
const LEASE_DURATION: Duration = Duration::from_secs(2);
const RETRY: Duration = Duration::from_millis(200);
const BUCKETS: usize = Bucket::COUNT as usize;

fn buckets() -> Vec<Bucket> {
    Bucket::all().collect()
}

fn join(client: &Client, identity: &str) -> (Shard, Joined) {
    Member::new(client.clone(), "default", GROUP, identity, LEASE_DURATION).with_retry_period(RETRY).spawn()
}

/// Checks every 10 ms, until told to stop, that no bucket is owned by two of `shards`;
/// returns the number of checks.
fn never_two_owners(shards: watch::Receiver<Vec<(String, Shard)>>) -> tokio::task::JoinHandle<usize> {
    tokio::spawn(async move {
        let buckets = buckets();
        let mut checks = 0;
        while shards.has_changed().is_ok() {
            let members = shards.borrow().clone();
            for bucket in &buckets {
                let owners: Vec<&str> =
                    members.iter().filter(|(_, shard)| shard.owns(*bucket)).map(|(name, _)| name.as_str()).collect();
                assert!(owners.len() <= 1, "{bucket:?} owned by {owners:?} at once");
            }
            checks += 1;
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        checks
    })
}

/// Waits until each bucket is owned by exactly one of `shards`, as the hash over their
/// names says; returns how long that took. Panics with the split after `bound`.
async fn settled(shards: &[(String, Shard)], bound: Duration) -> Duration {
    let started = Instant::now();
    let names: Vec<String> = {
        let mut names: Vec<String> = shards.iter().map(|(n, _)| n.clone()).collect();
        names.sort();
        names
    };
    loop {
        let wrong = buckets()
            .into_iter()
            .filter(|bucket| {
                let expected = owner(&names, *bucket).expect("members");
                shards.iter().any(|(name, shard)| shard.owns(*bucket) != (name == expected))
            })
            .count();
        if wrong == 0 {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < bound,
            "{wrong} of {BUCKETS} buckets not owned as {names:?} hash them after {bound:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn share(shard: &Shard) -> usize {
    buckets().into_iter().filter(|bucket| shard.owns(*bucket)).count()
}

async fn member_leases(client: &Client) -> Vec<String> {
    let leases: Api<Lease> = Api::namespaced(client.clone(), "default");
    let list =
        leases.list(&ListParams::default().labels(&format!("{GROUP_LABEL}={GROUP}"))).await.expect("list leases");
    list.items.into_iter().filter_map(|l| l.metadata.name).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn members_split_the_parents_take_over_from_a_crash_and_give_a_newcomer_its_share() {
    let (_cluster, client) = start().await;
    let (a, joined_a) = join(&client, "host-a");
    let (b, joined_b) = join(&client, "host-b");
    let (members, observed) =
        watch::channel(vec![("host-a".to_string(), a.clone()), ("host-b".to_string(), b.clone())]);
    let checker = never_two_owners(observed);

    let took = settled(&[("host-a".into(), a.clone()), ("host-b".into(), b.clone())], LEASE_DURATION * 3).await;
    eprintln!("two members split {BUCKETS} buckets in {took:?}: {} / {}", share(&a), share(&b));
    assert!(share(&a) > BUCKETS / 4 && share(&b) > BUCKETS / 4, "an even split, not {} / {}", share(&a), share(&b));

    // A third joins: it takes a third of the buckets, from both, without a moment of double ownership.
    let (c, joined_c) = join(&client, "host-c");
    members.send_modify(|m| m.push(("host-c".into(), c.clone())));
    let three = [("host-a".to_string(), a.clone()), ("host-b".into(), b.clone()), ("host-c".into(), c.clone())];
    let took = settled(&three, LEASE_DURATION * 3).await;
    eprintln!("a newcomer got its share in {took:?}: {} / {} / {}", share(&a), share(&b), share(&c));
    assert!(share(&c) > BUCKETS / 5, "the newcomer owns {} of {BUCKETS}", share(&c));
    assert_eq!(member_leases(&client).await.len(), 3, "one Lease per member");

    // b crashes (its Lease stays, unrenewed): a and c take its buckets once it expires.
    // A crashed member reconciles nothing, but b's Shard is kept in the check: even with
    // its task gone, its claim must lapse before anyone else takes its buckets.
    let crashed = Instant::now();
    joined_b.abort();
    let took = settled(&[("host-a".into(), a.clone()), ("host-c".into(), c.clone())], LEASE_DURATION * 4).await;
    let took_over = crashed.elapsed();
    eprintln!("a crashed member's buckets taken over {took_over:?} after the crash (settled in {took:?})");
    assert!(took_over >= LEASE_DURATION - RETRY, "taken over in {took_over:?}: before b's Lease could expire");
    assert_eq!(share(&b), 0, "a member that cannot renew owns nothing");
    members.send_modify(|m| m.retain(|(name, _)| name != "host-b"));

    // c leaves cleanly: it deletes its Lease, and a takes everything without waiting for expiry.
    let left = Instant::now();
    joined_c.leave().await.expect("c leaves");
    assert_eq!(share(&c), 0, "a member that left owns nothing");
    settled(&[("host-a".into(), a.clone())], LEASE_DURATION * 2).await;
    let took_over = left.elapsed();
    eprintln!("a departed member's buckets taken over in {took_over:?}");
    assert!(took_over < LEASE_DURATION, "taken over in {took_over:?}: a clean leave needs no expiry");

    drop(members);
    let checks = checker.await.expect("no parent had two owners at once");
    assert!(checks > 100, "only {checks} checks of double ownership ran");
    joined_a.leave().await.expect("a leaves");
    assert!(member_leases(&client).await.iter().all(|l| !l.contains("host-a") && !l.contains("host-c")));
}
