//! A load on the embedded API server alone, to see whether its cost grows with what it
//! stores: N parents (`ConfigMaps`), each owning a Deployment and a Service written by
//! server-side apply (3 writes a parent, 16 requests in flight), while three all-namespace
//! watches follow every change; then paged and unpaged lists, gets, an unchanged re-apply of
//! every child, and the deletion of every parent with its children left to garbage
//! collection.
//!
//! ```sh
//! cargo run --release -p kubewasm-devcluster --example load -- 20000
//! ```
//!
//! It prints the time of each tenth of each phase: flat tenths mean a cost linear in N,
//! growing ones a cost that grows with what is stored. And the resident memory of the
//! process (server and client) per stored object, measured before the first parent and once
//! every watch has seen every object.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::discovery::ApiResource;
use kube::runtime::{WatchStreamExt, watcher};
use kubewasm_devcluster::{DevCluster, Options};
use serde_json::json;

const NAMESPACE: &str = "default";
const IN_FLIGHT: usize = 16;
const MANAGER: &str = "load";

fn resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    let api_version = if group.is_empty() { version.to_string() } else { format!("{group}/{version}") };
    ApiResource { group: group.into(), version: version.into(), api_version, kind: kind.into(), plural: plural.into() }
}

fn name(i: usize) -> String {
    format!("app-{i:05}")
}

fn deployment(i: usize, owner: &serde_json::Value) -> serde_json::Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": { "name": name(i), "labels": { "app": name(i) }, "ownerReferences": [owner] },
        "spec": {
            "replicas": 2,
            "selector": { "matchLabels": { "app": name(i) } },
            "template": {
                "metadata": { "labels": { "app": name(i) } },
                "spec": { "containers": [{ "name": "app", "image": "nginx:1.27", "ports": [{ "containerPort": 8080 }] }] },
            },
        },
    })
}

fn service(i: usize, owner: &serde_json::Value) -> serde_json::Value {
    json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": { "name": name(i), "labels": { "app": name(i) }, "ownerReferences": [owner] },
        "spec": { "selector": { "app": name(i) }, "ports": [{ "port": 80, "targetPort": 8080 }] },
    })
}

/// Resident memory of this process, from `/proc/self/status` (0 where there is none).
/// Applies parent `i`'s Deployment and Service, controlled by `parent`.
async fn apply_children(
    deploys: &Api<DynamicObject>,
    svcs: &Api<DynamicObject>,
    apply: &PatchParams,
    i: usize,
    parent: &DynamicObject,
) {
    let owner = json!({
        "apiVersion": "v1", "kind": "ConfigMap", "name": name(i),
        "uid": parent.metadata.uid, "controller": true, "blockOwnerDeletion": true,
    });
    deploys.patch(&name(i), apply, &Patch::Apply(deployment(i, &owner))).await.expect("deployment applied");
    svcs.patch(&name(i), apply, &Patch::Apply(service(i, &owner))).await.expect("service applied");
}

fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("VmRSS:"))?.to_string();
            line.split_whitespace().nth(1)?.parse::<u64>().ok()
        })
        .map_or(0, |kib| kib * 1024)
}

/// Runs `n` jobs, `IN_FLIGHT` at once, and returns the time each tenth of them took.
async fn timed<F, Fut>(n: usize, job: F) -> Vec<Duration>
where
    F: Fn(usize) -> Fut,
    Fut: Future<Output = ()>,
{
    let done = AtomicUsize::new(0);
    let marks = std::sync::Mutex::new(Vec::new());
    let start = Instant::now();
    futures_util::stream::iter(0..n)
        .map(|i| {
            let fut = job(i);
            let (done, marks) = (&done, &marks);
            async move {
                fut.await;
                let k = done.fetch_add(1, Ordering::SeqCst) + 1;
                if k % (n / 10).max(1) == 0 || k == n {
                    marks.lock().expect("marks").push(start.elapsed());
                }
            }
        })
        .buffer_unordered(IN_FLIGHT)
        .for_each(|()| async {})
        .await;
    let mut marks = marks.into_inner().expect("marks");
    marks.sort();
    let mut last = Duration::ZERO;
    marks
        .into_iter()
        .map(|m| {
            let d = m - last;
            last = m;
            d
        })
        .collect()
}

fn report(phase: &str, tenths: &[Duration]) {
    let total: Duration = tenths.iter().sum();
    let shown: Vec<String> = tenths.iter().map(|d| format!("{:.2}", d.as_secs_f64())).collect();
    println!("{phase:<28} {:>9.2} s   tenths: {}", total.as_secs_f64(), shown.join(" "));
}

/// Counts the objects an all-namespace watch of `ar` has seen, until `stop`.
fn follow(client: &kube::Client, ar: &ApiResource) -> Arc<AtomicUsize> {
    let seen = Arc::new(AtomicUsize::new(0));
    let api: Api<DynamicObject> = Api::all_with(client.clone(), ar);
    let count = seen.clone();
    tokio::spawn(async move {
        let mut events = watcher(api, watcher::Config::default()).default_backoff().boxed();
        while let Some(Ok(event)) = events.next().await {
            if let watcher::Event::Apply(_) = event {
                count.fetch_add(1, Ordering::Relaxed);
            }
        }
    });
    seen
}

#[tokio::main]
#[allow(clippy::cast_precision_loss, clippy::too_many_lines)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: usize = std::env::args().nth(1).map_or(Ok(1000), |a| a.parse())?;
    let cluster = DevCluster::start(Options::default()).await?;
    let client = cluster.client();
    let configmaps = resource("", "v1", "ConfigMap", "configmaps");
    let deployments = resource("apps", "v1", "Deployment", "deployments");
    let services = resource("", "v1", "Service", "services");
    let parents: Api<DynamicObject> = Api::namespaced_with(client.clone(), NAMESPACE, &configmaps);
    let deploys: Api<DynamicObject> = Api::namespaced_with(client.clone(), NAMESPACE, &deployments);
    let svcs: Api<DynamicObject> = Api::namespaced_with(client.clone(), NAMESPACE, &services);
    let watched = [follow(&client, &configmaps), follow(&client, &deployments), follow(&client, &services)];
    tokio::time::sleep(Duration::from_millis(500)).await;
    let rss_before = rss_bytes();
    println!("{n} parents, {} objects stored; {IN_FLIGHT} requests in flight", 3 * n);

    let apply = PatchParams::apply(MANAGER).force();
    let started = Instant::now();
    let tenths = timed(n, |i| {
        let (parents, deploys, svcs, apply) = (parents.clone(), deploys.clone(), svcs.clone(), apply.clone());
        async move {
            let parent: DynamicObject = serde_json::from_value(json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": { "name": name(i) }, "data": { "image": "nginx:1.27" },
            }))
            .expect("parent");
            let parent = parents.create(&PostParams::default(), &parent).await.expect("parent created");
            apply_children(&deploys, &svcs, &apply, i, &parent).await;
        }
    })
    .await;
    report("create (3 writes a parent)", &tenths);
    while watched.iter().map(|w| w.load(Ordering::Relaxed)).sum::<usize>() < 3 * n {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    println!("{:<28} {:>9.2} s   (from the first create)", "watches saw every object", started.elapsed().as_secs_f64());
    tokio::time::sleep(Duration::from_millis(500)).await;
    let rss_after = rss_bytes();
    println!(
        "{:<28} {:>9.1} MiB before, {:.1} MiB after: {:.0} bytes per stored object",
        "resident memory",
        rss_before as f64 / 1048576.0,
        rss_after as f64 / 1048576.0,
        rss_after.saturating_sub(rss_before) as f64 / (3 * n) as f64
    );

    let t = Instant::now();
    let mut pages = 0;
    let mut listed = 0;
    let mut params = ListParams::default().limit(500);
    loop {
        let page = deploys.list(&params).await?;
        pages += 1;
        listed += page.items.len();
        match page.metadata.continue_ {
            Some(token) if !token.is_empty() => params = params.continue_token(&token),
            _ => break,
        }
    }
    println!(
        "{:<28} {:>9.2} s   {listed} Deployments in {pages} pages of 500",
        "paged list",
        t.elapsed().as_secs_f64()
    );
    let t = Instant::now();
    let all = svcs.list(&ListParams::default()).await?;
    println!("{:<28} {:>9.2} s   {} Services", "unpaged list", t.elapsed().as_secs_f64(), all.items.len());
    let t = Instant::now();
    for i in 0..100 {
        let one = svcs.list(&ListParams::default().labels(&format!("app={}", name(i * n / 100)))).await?;
        assert_eq!(one.items.len(), 1);
    }
    println!(
        "{:<28} {:>9.2} s   100 lists by label, 1 Service each",
        "label-selected lists",
        t.elapsed().as_secs_f64()
    );
    let tenths = timed(n, |i| {
        let deploys = deploys.clone();
        async move {
            deploys.get(&name(i)).await.expect("get");
        }
    })
    .await;
    report("get every Deployment", &tenths);

    let tenths = timed(n, |i| {
        let (deploys, svcs, parents, apply) = (deploys.clone(), svcs.clone(), parents.clone(), apply.clone());
        async move {
            let parent = parents.get(&name(i)).await.expect("parent");
            apply_children(&deploys, &svcs, &apply, i, &parent).await;
        }
    })
    .await;
    report("unchanged re-apply (+1 get)", &tenths);

    let writes = cluster.write_requests();
    let tenths = timed(n, |i| {
        let parents = parents.clone();
        async move {
            parents.delete(&name(i), &DeleteParams::background()).await.expect("parent deleted");
        }
    })
    .await;
    report("delete every parent", &tenths);
    let t = Instant::now();
    loop {
        // The children have the label `app` (the `kubernetes` Service has not).
        let d = deploys.list(&ListParams::default().labels("app").limit(1)).await?;
        let s = svcs.list(&ListParams::default().labels("app").limit(1)).await?;
        if d.items.is_empty() && s.items.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    println!(
        "{:<28} {:>9.2} s   after the last delete ({} writes during the deletes)",
        "children collected",
        t.elapsed().as_secs_f64(),
        cluster.write_requests() - writes
    );
    println!(
        "{:<28} {:>9.1} MiB with the parents and children gone",
        "resident memory",
        rss_bytes() as f64 / 1048576.0
    );
    cluster.shutdown().await;
    Ok(())
}
