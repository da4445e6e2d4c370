//! The host under faults, as Sieve and Acto test controllers: the same workload runs once on
//! a faithful API server (the reference) and once per fault class with faults injected while
//! it runs. Once the faults are lifted, each run must reach the reference's end state, with
//! each child created and removed as often as in the reference, no orphan, a bounded write
//! rate while the faults lasted, and no write once quiet.

#[path = "../controller/harness.rs"]
#[allow(dead_code)] // shared with the controller tests, which use all of it
mod harness;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::discovery::ApiResource;
use kubewasm_devcluster::{ErrorFault, Faults, Lifecycle, StaleReads, WatchFaults, comparable};
use serde_json::{Value, json};
use tokio::sync::OnceCell;

use harness::{Env, deployments, resource, services};

/// How long a run may take to converge once faults are lifted: a watch that failed several
/// times in a row waits up to 30 s before it retries (kube-runtime's backoff, as client-go's
/// reflector), so the bound is twice that.
const CONVERGENCE: Duration = Duration::from_secs(60);

fn demo_applications() -> ApiResource {
    resource("paas.cmft.com", "v1beta1", "DemoApplication", "demoapplications")
}

/// The end state a run reaches, with what differs between two faithful runs masked.
#[derive(Debug, Clone, PartialEq)]
struct Outcome {
    objects: BTreeMap<String, Value>,
    children: BTreeMap<String, Lifecycle>,
}

/// An object as two faithful runs agree on it (the hash of what was applied covers the
/// owner's uid).
fn masked(obj: Value) -> Value {
    let mut obj = comparable(obj);
    obj["metadata"]["annotations"].as_object_mut().map(|a| a.remove("kubewasm.io/applied-hash"));
    obj
}

async fn outcome(env: &Env) -> Outcome {
    let mut objects = BTreeMap::new();
    for (kind, resource) in [("demo", demo_applications()), ("deployment", deployments()), ("service", services())] {
        let list = env.api(&resource, "default").list(&ListParams::default()).await.expect("list");
        for item in list.items {
            let name = item.metadata.name.clone().unwrap_or_default();
            if kind == "service" && name == "kubernetes" {
                continue;
            }
            objects.insert(format!("{kind}/{name}"), masked(serde_json::to_value(item).expect("JSON")));
        }
    }
    let children = env
        .cluster
        .lifecycles()
        .into_iter()
        .filter(|(key, _)| key.starts_with("deployments.apps/default/") || key.starts_with("services/default/"))
        .filter(|(key, _)| key != "services/default/kubernetes")
        .collect();
    Outcome { objects, children }
}

/// Retries a write of the workload itself until the server takes it: an injected error
/// writes nothing, so trying again is safe.
async fn until_ok<T, F, Fut>(mut write: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = kube::Result<T>>,
{
    for _ in 0..200 {
        if let Ok(done) = write().await {
            return done;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the workload's own write was refused 200 times");
}

/// Parents created, changed and deleted while the host reconciles.
async fn workload(env: &Env) {
    let api = env.api(&demo_applications(), "default");
    let (post, patch, delete) = (PostParams::default(), PatchParams::default(), DeleteParams::default());
    for (i, name) in ["a", "b", "c", "d", "e"].into_iter().enumerate() {
        let parent = json!({
            "apiVersion": "paas.cmft.com/v1beta1", "kind": "DemoApplication",
            "metadata": { "name": name, "namespace": "default" },
            "spec": { "image": "nginx:1.27", "replica": i + 1, "ports": [{ "port": 80 }] },
        });
        let parent = serde_json::from_value(parent).expect("parent");
        until_ok(|| api.create(&post, &parent)).await;
    }
    tokio::time::sleep(Duration::from_millis(400)).await;
    let change = Patch::Merge(json!({ "spec": { "replica": 5, "ports": [{ "port": 8080, "targetPort": 80 }] } }));
    until_ok(|| api.patch("b", &patch, &change)).await;
    let no_ports = Patch::Merge(json!({ "spec": { "ports": [] } }));
    until_ok(|| api.patch("d", &patch, &no_ports)).await;
    until_ok(|| api.delete("c", &delete)).await;
    tokio::time::sleep(Duration::from_millis(400)).await;
}

/// Waits until the outcome has not changed for a second (and its objects are `target`'s),
/// and returns it; or returns what there is after `within`.
async fn settled(env: &Env, within: Duration, target: Option<&Outcome>) -> Outcome {
    let deadline = Instant::now() + within;
    let mut last = outcome(env).await;
    let mut since = Instant::now();
    loop {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let now = outcome(env).await;
        if now != last {
            last = now;
            since = Instant::now();
        } else if since.elapsed() >= Duration::from_secs(1) && target.is_none_or(|t| t.objects == last.objects) {
            return last;
        }
        if Instant::now() > deadline {
            return last;
        }
    }
}

async fn reference() -> &'static Outcome {
    static REFERENCE: OnceCell<Outcome> = OnceCell::const_new();
    REFERENCE
        .get_or_init(|| async {
            let env = Env::start(&["demo-application"]).await;
            workload(&env).await;
            let outcome = settled(&env, Duration::from_secs(30), None).await;
            env.stop().await;
            assert!(outcome.objects.contains_key("deployment/b") && !outcome.objects.contains_key("deployment/c"));
            outcome
        })
        .await
}

/// Runs the workload with `inject` in force, lifts the faults and checks every oracle;
/// returns how many faults were injected.
async fn under_faults(class: &str, inject: impl FnOnce(&Env)) -> u64 {
    let reference = reference().await;
    let env = Env::start(&["demo-application"]).await;
    let writes_before = env.cluster.write_requests();
    let started = Instant::now();
    inject(&env);
    workload(&env).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let faulty = started.elapsed().as_secs_f64();
    let max_rate = (env.cluster.write_requests() - writes_before) as f64 / faulty;
    let injected = env.cluster.faults_injected();
    env.cluster.set_faults(None);
    let lifted = Instant::now();

    let end = settled(&env, CONVERGENCE, Some(reference)).await;
    // `settled` waits a quiet second after the last change.
    let converged_in = lifted.elapsed().saturating_sub(Duration::from_secs(1));
    let lost = reference.objects.iter().filter(|(key, want)| end.objects.get(*key) != Some(want)).count()
        + end.objects.keys().filter(|key| !reference.objects.contains_key(*key)).count();
    for (key, want) in &reference.objects {
        assert_eq!(end.objects.get(key), Some(want), "{class}: {key} differs from the reference");
    }
    assert_eq!(end.objects.len(), reference.objects.len(), "{class}: objects {:?}", end.objects.keys());
    // Every child created and removed at most as often as in the reference: no duplicate,
    // no deletion the reference lacks. (A parent deleted before the host saw it may leave
    // no trace at all, which is fine.)
    let mut duplicates = 0;
    for (key, seen) in &end.children {
        let want = reference.children.get(key).copied().unwrap_or_default();
        duplicates += (seen.created.saturating_sub(want.created) + seen.removed.saturating_sub(want.removed)) as usize;
        assert!(
            seen.created <= want.created && seen.removed <= want.removed,
            "{class}: {key} created {} and removed {} times, the reference {} and {}",
            seen.created,
            seen.removed,
            want.created,
            want.removed
        );
    }
    assert!(max_rate < 300.0, "{class}: {max_rate:.0} writes per second while faults lasted: a hot loop");

    // No orphan: every owner reference names a live parent.
    let parents: Vec<String> = env
        .api(&demo_applications(), "default")
        .list(&ListParams::default())
        .await
        .expect("parents")
        .items
        .into_iter()
        .filter_map(|p| p.metadata.uid)
        .collect();
    let mut orphans = 0;
    for resource in [deployments(), services()] {
        for child in env.api(&resource, "default").list(&ListParams::default()).await.expect("children").items {
            for owner in child.metadata.owner_references.clone().unwrap_or_default() {
                orphans += usize::from(!parents.contains(&owner.uid));
                assert!(parents.contains(&owner.uid), "{class}: {:?} is an orphan", child.metadata.name);
            }
        }
    }
    // Quiet: no write once converged.
    let quiet = env.cluster.write_requests();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let late = usize::try_from(env.cluster.write_requests() - quiet).expect("a count");
    let recent = env.cluster.recent_writes();
    let late_writes = &recent[recent.len().saturating_sub(late)..];
    assert_eq!(late, 0, "{class}: writes once converged: {late_writes:?}");
    env.stop().await;
    // A row of RELIABILITY.md's table (`cargo test -p kubewasm-tests --test faults -- --nocapture`);
    // the assertions above make every count but the rates zero in a passing run.
    println!(
        "| {class} | 1 | {injected} | {} | {duplicates} | {orphans} | {lost} | {max_rate:.0}/s | {:.1} s |",
        if lost == 0 { "yes" } else { "no" },
        converged_in.as_secs_f64()
    );
    injected
}

fn errors(seed: u64, code: u16, rate: f64, verbs: &[&str]) -> Faults {
    let on = |resource: &str| ErrorFault {
        code,
        rate,
        verbs: verbs.iter().map(|v| (*v).to_string()).collect(),
        resource: Some(resource.into()),
        retry_after_seconds: 1,
    };
    Faults { seed, errors: vec![on("deployments"), on("services"), on("demoapplications")], ..Faults::default() }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conflicts_on_writes() {
    let injected = under_faults("409 on writes", |env| {
        env.cluster.set_faults(Some(errors(11, 409, 0.3, &["create", "update", "patch"])));
    })
    .await;
    assert!(injected > 0, "no fault was injected");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn throttling_with_retry_after() {
    let injected = under_faults("429", |env| env.cluster.set_faults(Some(errors(12, 429, 0.3, &[])))).await;
    assert!(injected > 0, "no fault was injected");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_errors_on_reads_and_writes() {
    let injected = under_faults("500 and 503", |env| {
        let mut faults = errors(13, 500, 0.2, &["patch", "update"]);
        faults.errors.extend(errors(13, 503, 0.2, &["get", "list", "watch"]).errors);
        env.cluster.set_faults(Some(faults));
    })
    .await;
    assert!(injected > 0, "no fault was injected");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cut_and_expired_watches() {
    let injected = under_faults("cut and 410 watches", |env| {
        let watch = WatchFaults { cut_rate: 0.3, gone_rate: 0.5, drop_bookmarks: true, ..WatchFaults::default() };
        env.cluster.set_faults(Some(Faults { seed: 14, watch, ..Faults::default() }));
    })
    .await;
    assert!(injected > 0, "no fault was injected");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delayed_events() {
    let injected = under_faults("events 300 ms late", |env| {
        let watch = WatchFaults { delay_ms: 300, ..WatchFaults::default() };
        env.cluster.set_faults(Some(Faults { seed: 15, watch, ..Faults::default() }));
    })
    .await;
    assert!(injected > 0, "no fault was injected");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_reads() {
    let injected = under_faults("reads 3 versions behind", |env| {
        let stale = ["deployments", "services", "demoapplications"]
            .map(|r| StaleReads { resource: r.into(), behind: 3 })
            .to_vec();
        env.cluster.set_faults(Some(Faults { seed: 16, stale_reads: stale, ..Faults::default() }));
    })
    .await;
    // The host reads without a resourceVersion (consistent reads), which a lagging
    // cache never answers: no stale read reaches it.
    assert_eq!(injected, 0, "the host asked for a read that may be stale");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_api_server_outage() {
    let injected = under_faults("1.5 s outage", |env| env.cluster.outage(Duration::from_millis(1500))).await;
    assert!(injected > 0, "no fault was injected");
}

/// A random mix of the fault classes above, drawn from `seed`: some error codes on some
/// verbs and resources, cut, expired and delayed watches, stale reads, and sometimes an outage.
fn random_mix(seed: u64) -> (Faults, Option<Duration>) {
    let mut rng = fastrand::Rng::with_seed(seed);
    let resources = [None, Some("deployments"), Some("services"), Some("demoapplications")];
    let verbs = ["get", "list", "watch", "create", "update", "patch", "delete"];
    let mut errors = Vec::new();
    for code in [409, 429, 500, 503] {
        if rng.bool() {
            errors.push(ErrorFault {
                code,
                rate: 0.05 + rng.f64() * 0.25,
                verbs: verbs.iter().filter(|_| rng.bool()).map(|v| (*v).to_string()).collect(),
                resource: resources[rng.usize(..resources.len())].map(str::to_string),
                retry_after_seconds: 1,
            });
        }
    }
    let watch = WatchFaults {
        cut_rate: if rng.bool() { rng.f64() * 0.3 } else { 0.0 },
        gone_rate: if rng.bool() { rng.f64() * 0.5 } else { 0.0 },
        drop_bookmarks: rng.bool(),
        delay_ms: if rng.bool() { rng.u64(50..=400) } else { 0 },
        ..WatchFaults::default()
    };
    let mut stale_reads = Vec::new();
    for resource in resources.into_iter().flatten() {
        if rng.u8(..3) == 0 {
            stale_reads.push(StaleReads { resource: resource.to_string(), behind: rng.u64(1..=4) });
        }
    }
    let outage = (rng.u8(..3) == 0).then(|| Duration::from_millis(rng.u64(300..=2000)));
    // Something always goes wrong: at least every write may fail.
    if errors.is_empty() {
        errors.push(ErrorFault { code: 500, rate: 0.2, verbs: vec![], resource: None, retry_after_seconds: 1 });
    }
    (Faults { seed, errors, watch, stale_reads }, outage)
}

/// The seeds of the random mixes: two fixed ones in CI; `make chaos` asks for
/// `KUBEWASM_CHAOS_RUNS` fresh ones, and `KUBEWASM_CHAOS_SEED` replays one.
fn chaos_seeds() -> Vec<u64> {
    let var = |name: &str| std::env::var(name).ok().map(|v| v.parse::<u64>().unwrap_or_else(|_| panic!("{name}={v}")));
    match (var("KUBEWASM_CHAOS_SEED"), var("KUBEWASM_CHAOS_RUNS")) {
        (Some(seed), _) => vec![seed],
        (None, Some(runs)) => {
            let base = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
            (0..runs).map(|i| base.wrapping_mul(1000) + i).collect()
        }
        (None, None) => vec![1, 2],
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_fault_mixes() {
    for seed in chaos_seeds() {
        let (faults, outage) = random_mix(seed);
        println!("chaos seed {seed} (replay: KUBEWASM_CHAOS_SEED={seed} make chaos): {faults:?}, outage {outage:?}");
        under_faults(&format!("random mix, seed {seed}"), |env| {
            env.cluster.set_faults(Some(faults));
            if let Some(outage) = outage {
                env.cluster.outage(outage);
            }
        })
        .await;
    }
}
