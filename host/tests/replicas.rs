//! Three `kubewasm run --shard` processes on one embedded API server: every parent is
//! reconciled by exactly one of them, never by two at once, a replica killed with
//! SIGKILL has its parents taken over once its Lease expires, and one that joins gets
//! its share. Each replica caches only its share: the parents of its buckets, labelled
//! by the replicas, and their children, labelled by the host that wrote them; a parent
//! labelled by hand with another replica's bucket moves there with its children.
//!
//! Who reconciled what is read from each process's JSON log: the `reconciled` line at
//! the end of every reconcile carries the parent, the time and the reconcile's length.
//!
//! The plugins are built to wasm32-wasip2 by `make plugins`.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::ResourceExt;
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::discovery::ApiResource;
use kubewasm::coordination::shard::{BUCKET_LABEL, Bucket, owner};
use kubewasm_devcluster::{DevCluster, Options};
use serde_json::{Value, json};

use common::{http_get, readyz, target_dir};

const PARENTS: usize = 30;
const LEASE_SECONDS: u64 = 2;
const GROUP: &str = "kubewasm";

fn demo_applications(cluster: &DevCluster) -> Api<DynamicObject> {
    let resource = ApiResource {
        group: "paas.cmft.com".into(),
        version: "v1beta1".into(),
        api_version: "paas.cmft.com/v1beta1".into(),
        kind: "DemoApplication".into(),
        plural: "demoapplications".into(),
    };
    Api::namespaced_with(cluster.client(), "default", &resource)
}

/// One `kubewasm run --shard` process, logging JSON to a file.
struct Replica {
    name: &'static str,
    child: Child,
    addr: String,
    log: PathBuf,
}

impl Replica {
    /// `kubewasm run --shard` as `name`, with the kubeconfig at `kubeconfig` (the host's
    /// service account).
    fn start(kubeconfig: &std::path::Path, name: &'static str) -> Replica {
        let dir = target_dir().join("replicas-test-plugins");
        std::fs::create_dir_all(&dir).expect("plugin dir");
        std::fs::copy(target_dir().join("plugins").join("demo-application.wasm"), dir.join("demo-application.wasm"))
            .expect("demo-application.wasm: run `make plugins` first");
        let port = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("address").port();
        let addr = format!("127.0.0.1:{port}");
        let log = target_dir().join(format!("replicas-test-{name}.log"));
        let child = Command::new(env!("CARGO_BIN_EXE_kubewasm"))
            .args(["--log-format", "json", "run", "--shard", "--identity", name, "--health-addr", &addr])
            .args(["--lease-duration", &LEASE_SECONDS.to_string(), "--lease-namespace", "default"])
            .arg("--plugins")
            .arg(&dir)
            .arg("--cache-dir")
            .arg(target_dir().join("replicas-test-cache"))
            .env("KUBECONFIG", kubeconfig)
            .env(
                "RUST_LOG",
                "warn,kubewasm::coordination=info,kubewasm::controller=info,kubewasm::controller::reconcile=debug",
            )
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("log file"))
            .spawn()
            .expect("kubewasm run starts");
        Replica { name, child, addr, log }
    }

    /// Waits until its caches are synced (`/readyz`).
    async fn ready(mut self) -> Replica {
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            assert!(self.child.try_wait().expect("poll").is_none(), "{} exited early: {}", self.name, self.logs());
            if readyz(&self.addr) == Some(200) {
                return self;
            }
            assert!(Instant::now() < deadline, "{} not ready within 120 s", self.name);
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    fn logs(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Every reconcile in the log: (parent, start, end).
    fn reconciles(&self) -> Vec<(String, Timestamp, Timestamp)> {
        self.logs()
            .lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .filter(|line| line["fields"]["message"] == "reconciled")
            .map(|line| {
                let parent = line["span"]["object"].as_str().expect("the reconcile span names its parent").to_string();
                let end: Timestamp = line["timestamp"].as_str().expect("timestamp").parse().expect("RFC 3339");
                let micros = line["fields"]["elapsed_us"].as_i64().expect("elapsed_us");
                (parent, end - SignedDuration::from_micros(micros), end)
            })
            .collect()
    }

    /// The objects of `resource` (`deployments.apps`) its demo-application caches hold,
    /// from `/metrics`.
    fn cached(&self, resource: &str) -> Option<usize> {
        let (_, metrics) = http_get(&self.addr, "/metrics")?;
        let series = format!("kubewasm_cached_objects{{plugin=\"demo-application\",resource=\"{resource}\"}} ");
        metrics.lines().find_map(|line| line.strip_prefix(&series)?.parse().ok())
    }

    fn kill(&mut self) {
        self.child.kill().expect("SIGKILL");
        self.child.wait().expect("reap");
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Sets every parent's `spec.replica` and waits until every Deployment has it; returns
/// how long that took.
async fn scale_all(cluster: &DevCluster, replicas: i32, bound: Duration) -> Duration {
    let started = Instant::now();
    let parents = demo_applications(cluster);
    for i in 0..PARENTS {
        let patch = json!({"spec": {"replica": replicas}});
        parents.patch(&format!("app-{i}"), &PatchParams::default(), &Patch::Merge(&patch)).await.expect("scale");
    }
    let deployments: Api<Deployment> = Api::namespaced(cluster.client(), "default");
    loop {
        let list = deployments.list(&ListParams::default()).await.expect("list deployments");
        let done = list.items.iter().filter(|d| d.spec.as_ref().and_then(|s| s.replicas) == Some(replicas)).count();
        if done == PARENTS {
            return started.elapsed();
        }
        assert!(started.elapsed() < bound, "{done} of {PARENTS} Deployments at {replicas} replicas after {bound:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits until the group's Leases all publish a view of exactly `members`.
async fn views_agree(cluster: &DevCluster, members: &[&str]) {
    let leases: Api<Lease> = Api::namespaced(cluster.client(), "default");
    let expected: Vec<String> = members.iter().map(|m| (*m).to_string()).collect();
    let deadline = Instant::now() + Duration::from_secs(LEASE_SECONDS * 5);
    loop {
        let list = leases.list(&ListParams::default().labels(&format!("kubewasm.io/shard-group={GROUP}"))).await;
        let views: Vec<Vec<String>> = list
            .expect("list leases")
            .items
            .iter()
            .map(|l| {
                let view = l.metadata.annotations.as_ref().and_then(|a| a.get("kubewasm.io/shard-view"));
                view.and_then(|v| serde_json::from_str(v).ok()).unwrap_or_default()
            })
            .collect();
        if views.len() == members.len() && views.iter().all(|v| *v == expected) {
            return;
        }
        assert!(Instant::now() < deadline, "the members' views are {views:?}, not all {expected:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Checks that every parent carries the bucket its kind, namespace and name hash to and
/// its Deployment the same, then waits until each of `replicas` caches exactly the
/// parents and Deployments of the buckets their names' hash gives it.
async fn each_caches_its_share(cluster: &DevCluster, replicas: &[&Replica]) {
    let mut names: Vec<String> = replicas.iter().map(|r| r.name.to_string()).collect();
    names.sort();
    let parents = demo_applications(cluster).list(&ListParams::default()).await.expect("list parents").items;
    let deployments: Api<Deployment> = Api::namespaced(cluster.client(), "default");
    let deployments = deployments.list(&ListParams::default()).await.expect("list deployments").items;
    let mut share = BTreeMap::<&str, usize>::new();
    for parent in &parents {
        let name = parent.name_any();
        let hashed = Bucket::of(&BTreeMap::new(), "paas.cmft.com", "DemoApplication", Some("default"), &name);
        let label = parent.labels().get(BUCKET_LABEL).cloned();
        assert_eq!(label, Some(hashed.label()), "{name}'s bucket label");
        let child = deployments
            .iter()
            .find(|d| d.owner_references().iter().any(|o| o.controller == Some(true) && o.name == name))
            .unwrap_or_else(|| panic!("{name}'s Deployment"));
        assert_eq!(child.labels().get(BUCKET_LABEL), label.as_ref(), "{name}'s Deployment carries its bucket");
        *share.entry(owner(&names, hashed).expect("members")).or_default() += 1;
    }
    let deadline = Instant::now() + Duration::from_secs(LEASE_SECONDS * 5);
    loop {
        let cached: Vec<(&str, Option<usize>, Option<usize>)> = replicas
            .iter()
            .map(|r| (r.name, r.cached("demoapplications.paas.cmft.com"), r.cached("deployments.apps")))
            .collect();
        let expected: Vec<(&str, Option<usize>, Option<usize>)> = replicas
            .iter()
            .map(|r| {
                let n = share.get(r.name).copied().unwrap_or_default();
                (r.name, Some(n), Some(n))
            })
            .collect();
        if cached == expected {
            eprintln!("each replica caches its share (name, parents, Deployments): {cached:?}");
            return;
        }
        assert!(Instant::now() < deadline, "cached {cached:?}, expected each replica's share {expected:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// `kubectl label` of a parent with a bucket of the other replica: that replica caches
/// it from then on, and its Deployment follows with the new label, which the replica that
/// gave it up no longer caches.
async fn a_label_set_by_hand_moves_the_parent_and_its_children(cluster: &DevCluster, a: &Replica, b: &Replica) {
    let members = vec![a.name.to_string(), b.name.to_string()];
    let hashed = Bucket::of(&BTreeMap::new(), "paas.cmft.com", "DemoApplication", Some("default"), "app-0");
    let (from, to) = if owner(&members, hashed) == Some(a.name) { (a, b) } else { (b, a) };
    let moved = Bucket::all().find(|bucket| owner(&members, *bucket) == Some(to.name)).expect("a bucket of the other");
    let cached = |r: &Replica| (r.cached("demoapplications.paas.cmft.com"), r.cached("deployments.apps"));
    let (before_from, before_to) = (cached(from), cached(to));
    let patch = json!({"metadata": {"labels": {BUCKET_LABEL: moved.label()}}});
    demo_applications(cluster).patch("app-0", &PatchParams::default(), &Patch::Merge(&patch)).await.expect("label");
    let deployments: Api<Deployment> = Api::namespaced(cluster.client(), "default");
    let plus = |n: Option<usize>, d: isize| n.map(|n| n.checked_add_signed(d).expect("a count"));
    let deadline = Instant::now() + Duration::from_secs(LEASE_SECONDS * 5);
    loop {
        let label = deployments.get("app-0").await.expect("app-0's Deployment").labels().get(BUCKET_LABEL).cloned();
        let (now_from, now_to) = (cached(from), cached(to));
        let expected_from = (plus(before_from.0, -1), plus(before_from.1, -1));
        let expected_to = (plus(before_to.0, 1), plus(before_to.1, 1));
        if label == Some(moved.label()) && now_from == expected_from && now_to == expected_to {
            eprintln!("app-0 moved from {} to {} with its Deployment", from.name, to.name);
            return;
        }
        assert!(
            Instant::now() < deadline,
            "app-0 labelled {moved:?}: Deployment label {label:?}; {} caches {now_from:?} (was {before_from:?}), \
             {} caches {now_to:?} (was {before_to:?})",
            from.name,
            to.name
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Who reconciled each parent after `since`, read once every parent's reconcile has
/// logged its end (or after 10 s): a reconcile logs its `reconciled` line after its last
/// write, so a moment after its Deployment shows the change.
async fn reconciled_after(replicas: &[&Replica], since: Timestamp) -> BTreeMap<String, BTreeSet<&'static str>> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let mut by = BTreeMap::<String, BTreeSet<&'static str>>::new();
        for replica in replicas {
            for (parent, start, _) in replica.reconciles() {
                if start > since {
                    by.entry(parent).or_default().insert(replica.name);
                }
            }
        }
        if by.len() == PARENTS || Instant::now() >= deadline {
            return by;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn assert_each_by_exactly_one(by: &BTreeMap<String, BTreeSet<&'static str>>, replicas: &[&Replica]) {
    assert_eq!(by.len(), PARENTS, "every parent is reconciled after the change: {by:?}");
    for (parent, who) in by {
        assert_eq!(who.len(), 1, "{parent} was reconciled by {who:?}");
    }
    for replica in replicas {
        let share = by.values().filter(|who| who.contains(replica.name)).count();
        assert!(share > 0, "{} reconciled none of {PARENTS} parents: {by:?}", replica.name);
        eprintln!("{} reconciled {share} of {PARENTS}", replica.name);
    }
}

/// No two replicas' reconciles of one parent overlap in time, across the whole run.
fn assert_never_two_at_once(replicas: &[&Replica]) {
    let mut intervals = BTreeMap::<String, Vec<(Timestamp, Timestamp, &str)>>::new();
    for replica in replicas {
        for (parent, start, end) in replica.reconciles() {
            intervals.entry(parent).or_default().push((start, end, replica.name));
        }
    }
    let mut checked = 0;
    for (parent, mut list) in intervals {
        list.sort();
        for pair in list.windows(2) {
            let ((_, end, a), (start, _, b)) = (pair[0], pair[1]);
            assert!(a == b || start >= end, "{parent}: {a} reconciled it until {end} while {b} started at {start}");
            checked += 1;
        }
    }
    assert!(checked > PARENTS, "only {checked} pairs of reconciles compared");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_replicas_split_the_parents_take_over_from_a_killed_one_and_share_with_a_newcomer() {
    let cluster = DevCluster::start(Options::default()).await.expect("the embedded API server starts");
    let engine = kubewasm::plugin::Engine::new().expect("engine");
    let demo = target_dir().join("plugins").join("demo-application.wasm");
    let demo = Arc::new(kubewasm::plugin::Plugin::load(&engine, &demo).expect("demo-application loads"));
    kubewasm::runtime::install_crds(&cluster.client(), &[demo]).await.expect("CRDs");
    let kubewasm = std::path::Path::new(env!("CARGO_BIN_EXE_kubewasm"));
    let demo = target_dir().join("plugins").join("demo-application.wasm");
    let kubeconfig = kubewasm_tests::host_kubeconfig_file(&cluster, kubewasm, &[demo]).await;
    let parents = demo_applications(&cluster);
    for i in 0..PARENTS {
        let parent = json!({
            "apiVersion": "paas.cmft.com/v1beta1", "kind": "DemoApplication",
            "metadata": { "name": format!("app-{i}"), "namespace": "default" },
            "spec": { "image": "nginx:1.27", "replica": 1, "ports": [{ "port": 80 }] },
        });
        parents.create(&PostParams::default(), &serde_json::from_value(parent).expect("parent")).await.expect("create");
    }

    // Two replicas split the parents.
    let a = Replica::start(&kubeconfig, "host-a");
    let b = Replica::start(&kubeconfig, "host-b");
    let (a, b) = (a.ready().await, b.ready().await);
    views_agree(&cluster, &["host-a", "host-b"]).await;
    let since = Timestamp::now();
    let took = scale_all(&cluster, 2, Duration::from_secs(30)).await;
    eprintln!("two replicas: every parent scaled in {took:?}");
    assert_each_by_exactly_one(&reconciled_after(&[&a, &b], since).await, &[&a, &b]);

    // A third joins and takes its share from both.
    let mut c = Replica::start(&kubeconfig, "host-c").ready().await;
    views_agree(&cluster, &["host-a", "host-b", "host-c"]).await;
    let since = Timestamp::now();
    let took = scale_all(&cluster, 3, Duration::from_secs(30)).await;
    eprintln!("three replicas: every parent scaled in {took:?}");
    assert_each_by_exactly_one(&reconciled_after(&[&a, &b, &c], since).await, &[&a, &b, &c]);
    each_caches_its_share(&cluster, &[&a, &b, &c]).await;

    // The third is killed: its Lease stays until it expires, then a and b take its parents.
    c.kill();
    let since = Timestamp::now();
    let took = scale_all(&cluster, 4, Duration::from_secs(LEASE_SECONDS * 5)).await;
    eprintln!("after a replica was killed: every parent scaled in {took:?} (lease duration {LEASE_SECONDS} s)");
    assert_each_by_exactly_one(&reconciled_after(&[&a, &b], since).await, &[&a, &b]);
    each_caches_its_share(&cluster, &[&a, &b]).await;
    a_label_set_by_hand_moves_the_parent_and_its_children(&cluster, &a, &b).await;

    assert_never_two_at_once(&[&a, &b, &c]);
    drop((a, b, c));
    cluster.shutdown().await;
}
