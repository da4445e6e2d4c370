//! Memory of ten controllers side by side: ten plugins run by one `kubewasm run` process,
//! beside the same ten controllers as ten native kube-rs processes, each with its own
//! caches (as ten separately deployed controllers would be).
//!
//! The ten plugins are `demo-instance-0` to `-9` (host/tests/fixtures/demo-instance):
//! DemoApplication's logic, each for `DemoApplication`s of its own API group. The native
//! processes are this binary again (`--native GROUP`): the benchmarks' native
//! DemoApplication controller for one group. Each side gets a fresh embedded API server
//! in this process; the controllers are separate processes, so each side's resident
//! memory (`VmRSS`, summed over its processes) is the controllers' alone. It is read
//! once they are ready with nothing to do, and again once N parents per plugin have
//! converged (each wants a Deployment and a Service) and no write came for two seconds.
//!
//! The host is started twice: the first process compiles the plugins into an empty
//! cache (it is stopped once every plugin's optimised code is in the cache), the second,
//! measured, loads them from it (as every restart does).
//!
//! With `KUBEWASM_BENCH_SHARDS=R`, a third side runs R `kubewasm run --shard` processes
//! over the same parents, each measured on its own: a replica watches and caches only
//! its share, so each should hold about 1/R of the one host's objects.
//! `KUBEWASM_BENCH_NATIVE=0` leaves the native side out.
//!
//! Run with `make bench-memory` (it builds the ten plugins);
//! `KUBEWASM_BENCH_PARENTS` sets N (default 100), or several, comma-separated, each
//! measured afresh; `KUBEWASM_BENCH_PLUGINS` how many of the ten controllers run
//! (default 10): with one, the figures are one controller's caches, host beside native,
//! per parent. Each host process's resident pages of its own binary (code, and the
//! rest: read-only data, unwind tables) are read from `/proc/PID/smaps` once converged.
//! `KUBEWASM_BENCH_HOST_BIN` runs another `kubewasm` binary as the host
//! (default: the one cargo built beside this benchmark), to compare builds of it, such
//! as one with link-time optimisation, on the same plugins; `make bench-memory` sets it
//! to the `dist` profile's build, the binary as it ships. Results: BENCHMARKS.md.

#[path = "support/native.rs"]
mod native;
#[path = "support/watch.rs"]
mod watch;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use kube::api::{Api, DynamicObject, PostParams};
use kube::discovery::ApiResource;
use kubewasm::plugin::{Engine, Plugin};
use kubewasm_devcluster::{self as devcluster, DevCluster};
use serde_json::json;

/// The plugins built: demo-instance-0 to -9.
const PLUGINS: usize = 10;
const QUIET: Duration = Duration::from_secs(2);
const PATIENCE: Duration = Duration::from_mins(10);

fn group(i: usize) -> String {
    format!("i{i}.demo.kubewasm.dev")
}

fn parent_resource(group: &str) -> ApiResource {
    ApiResource {
        group: group.into(),
        version: "v1beta1".into(),
        api_version: format!("{group}/v1beta1"),
        kind: "DemoApplication".into(),
        plural: "demoapplications".into(),
    }
}

/// Resident pages of `file` mapped by a process, in KiB: those of its executable
/// mappings, and of the others (a binary's read-only data, unwind tables, relocations).
fn mapped_kib(pid: u32, file: &Path) -> (u64, u64) {
    let smaps = std::fs::read_to_string(format!("/proc/{pid}/smaps")).expect("the process's smaps");
    let (mut code, mut rest) = (0, 0);
    let mut current: Option<bool> = None;
    for line in smaps.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        // A mapping's header: "START-END PERMS OFFSET DEV INODE [PATH]".
        if fields.first().is_some_and(|f| f.contains('-') && f.chars().all(|c| c.is_ascii_hexdigit() || c == '-')) {
            current = (fields.get(5).map(Path::new) == Some(file)).then_some(fields[1].contains('x'));
        } else if let (Some(executable), ["Rss:", kib, "kB"]) = (current, fields.as_slice()) {
            let kib: u64 = kib.parse().expect("Rss in kB");
            if executable { code += kib } else { rest += kib }
        }
    }
    (code, rest)
}

/// Resident memory of a process, in KiB.
fn rss_kib(pid: u32) -> u64 {
    status_kib(pid, "VmRSS:")
}

/// A figure of `/proc/PID/status` given in kB (`field` with its colon).
fn status_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("the process's status");
    let line = status.lines().find(|l| l.starts_with(field)).unwrap_or_else(|| panic!("{field} in status"));
    line.split_whitespace().nth(1).and_then(|kib| kib.parse().ok()).unwrap_or_else(|| panic!("{field} in kB"))
}

fn readyz(addr: &str) -> bool {
    use std::io::Write;
    let Ok(mut stream) = std::net::TcpStream::connect(addr) else { return false };
    let _ = write!(stream, "GET /readyz HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer.starts_with("HTTP/1.1 200")
}

/// Waits until no write has reached `cluster` for [`QUIET`].
async fn quiet(cluster: &DevCluster) {
    let (mut last, mut since) = (cluster.write_requests(), Instant::now());
    while since.elapsed() < QUIET {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let now = cluster.write_requests();
        if now != last {
            (last, since) = (now, Instant::now());
        }
    }
}

/// Creates `per_plugin` parents of each of `plugins` groups and waits until every one
/// has its Deployment and Service (seen by watches: listing tens of thousands of objects
/// over and over would load the API server under measurement).
async fn converge(cluster: &DevCluster, plugins: usize, per_plugin: usize) -> Duration {
    let client = cluster.client();
    let want = plugins * per_plugin;
    let deployments = watch::all_seen::<k8s_openapi::api::apps::v1::Deployment>(&client, "default", want);
    let services = watch::all_seen::<k8s_openapi::api::core::v1::Service>(&client, "default", want);
    let started = Instant::now();
    let creations = (0..plugins).flat_map(|i| (0..per_plugin).map(move |k| (i, k)));
    futures::stream::iter(creations)
        .for_each_concurrent(16, |(i, k)| {
            let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &parent_resource(&group(i)));
            async move {
                let parent = json!({
                    "apiVersion": format!("{}/v1beta1", group(i)), "kind": "DemoApplication",
                    "metadata": {"name": format!("i{i}-app-{k:05}"), "namespace": "default"},
                    "spec": {"image": "nginx:1.27", "replica": 2, "ports": [{"port": 80, "targetPort": 8080}]},
                });
                let parent: DynamicObject = serde_json::from_value(parent).expect("parent JSON");
                api.create(&PostParams::default(), &parent).await.expect("parent created");
            }
        })
        .await;
    let seen = async {
        deployments.await.expect("the Deployments' watch");
        services.await.expect("the Services' watch");
    };
    if tokio::time::timeout(PATIENCE, seen).await.is_err() {
        panic!("not {want} Deployments and Services after {PATIENCE:?}");
    }
    started.elapsed()
}

/// What one side measured.
struct Side {
    /// The host's first start, which compiled the plugins (then cached on disk).
    compiling_kib: Option<u64>,
    idle_kib: u64,
    converged_kib: u64,
    /// Each process's share of `converged_kib`.
    converged_each_kib: Vec<u64>,
    /// Of that, each process's private memory (`RssAnon`): not the pages of its binary
    /// and of the compiled plugins mapped from files, which one machine's processes share.
    anon_each_kib: Vec<u64>,
    /// Of that, each process's resident pages of the host binary: code, and the rest
    /// (none for native controllers, which are not that binary).
    binary_each_kib: Vec<(u64, u64)>,
    /// The most resident at once (`VmHWM`, summed), over the whole run.
    peak_kib: u64,
    converge: Duration,
}

async fn measure(
    plugins: &[Arc<Plugin>],
    per_plugin: usize,
    start: impl FnOnce(&Path) -> (Vec<Child>, Option<u64>),
) -> Side {
    let cluster = DevCluster::start(devcluster::Options::default()).await.expect("API server starts");
    kubewasm::runtime::install_crds(&cluster.client(), plugins).await.expect("CRDs install");
    let (mut children, compiling_kib) = start(cluster.kubeconfig_path());
    // Ready and idle: caches listed, nothing to reconcile.
    tokio::time::sleep(Duration::from_secs(3)).await;
    quiet(&cluster).await;
    let rss = |children: &[Child]| children.iter().map(|c| rss_kib(c.id())).sum::<u64>();
    let idle_kib = rss(&children);
    let converge = converge(&cluster, plugins.len(), per_plugin).await;
    quiet(&cluster).await;
    let converged_each_kib: Vec<u64> = children.iter().map(|c| rss_kib(c.id())).collect();
    let converged_kib = converged_each_kib.iter().sum();
    let anon_each_kib: Vec<u64> = children.iter().map(|c| status_kib(c.id(), "RssAnon:")).collect();
    let host_bin = std::fs::canonicalize(host_bin()).expect("the host binary");
    let binary_each_kib: Vec<(u64, u64)> = children.iter().map(|c| mapped_kib(c.id(), &host_bin)).collect();
    let peak_kib = children.iter().map(|c| status_kib(c.id(), "VmHWM:")).sum::<u64>();
    for child in &mut children {
        // A native controller stops when its stdin closes; the host is killed.
        if child.stdin.take().is_none() {
            let _ = child.kill();
        }
        let _ = child.wait();
    }
    cluster.shutdown().await;
    Side {
        compiling_kib,
        idle_kib,
        converged_kib,
        converged_each_kib,
        anon_each_kib,
        binary_each_kib,
        peak_kib,
        converge,
    }
}

/// `replicas` `kubewasm run` processes on `plugins`, ready (with more than one, each
/// `--shard`). A first process compiles the plugins into an empty cache and is stopped
/// once the optimised code of every plugin is there (its resident memory 3 s after it
/// was ready, compiling in the background, is returned); the ones measured load them
/// from it, as a restarted host does.
fn host_processes(plugins: &Path, kubeconfig: &Path, replicas: usize) -> (Vec<Child>, Option<u64>) {
    let cache = tempfile_dir("kubewasm-bench-memory-cache");
    let start = |replica: Option<usize>| {
        let addr = std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port");
        let addr = addr.to_string();
        let mut command = Command::new(host_bin());
        command.args(["run", "--health-addr", &addr, "--plugins"]).arg(plugins).arg("--cache-dir").arg(&cache);
        if let Some(i) = replica {
            command.args(["--shard", "--lease-namespace", "default", "--identity", &format!("host-{i}")]);
        }
        let child = command
            .env("KUBECONFIG", kubeconfig)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .spawn()
            .expect("kubewasm run starts");
        let deadline = Instant::now() + Duration::from_mins(2);
        while !readyz(&addr) {
            assert!(Instant::now() < deadline, "kubewasm run not ready within 2 minutes");
            std::thread::sleep(Duration::from_millis(100));
        }
        child
    };
    let mut first = start(None);
    std::thread::sleep(Duration::from_secs(3));
    let compiling = rss_kib(first.id());
    let plugin_count = std::fs::read_dir(plugins).expect("plugin directory").count();
    let deadline = Instant::now() + Duration::from_mins(10);
    while cached_plugins(&cache) < plugin_count {
        assert!(Instant::now() < deadline, "the plugins' optimised code not cached within 10 minutes");
        std::thread::sleep(Duration::from_millis(200));
    }
    let _ = first.kill();
    let _ = first.wait();
    let measured = match replicas {
        1 => vec![start(None)],
        n => (0..n).map(|i| start(Some(i))).collect(),
    };
    (measured, Some(compiling))
}

/// The `kubewasm` binary run as the host: `KUBEWASM_BENCH_HOST_BIN`, or the one built
/// with this benchmark.
fn host_bin() -> PathBuf {
    std::env::var_os("KUBEWASM_BENCH_HOST_BIN").map_or_else(|| env!("CARGO_BIN_EXE_kubewasm").into(), PathBuf::from)
}

/// The compiled plugins in the cache directory `cache`.
fn cached_plugins(cache: &Path) -> usize {
    std::fs::read_dir(cache).map_or(0, |entries| {
        entries.filter_map(Result::ok).filter(|e| e.path().extension().is_some_and(|x| x == "cwasm")).count()
    })
}

/// An empty directory under the system's temporary directory.
fn tempfile_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temporary directory");
    dir
}

fn native_processes(plugins: usize, kubeconfig: &Path) -> (Vec<Child>, Option<u64>) {
    let exe = std::env::current_exe().expect("this binary");
    let children = (0..plugins)
        .map(|i| {
            Command::new(&exe)
                .args(["--native", &group(i)])
                .env("KUBECONFIG", kubeconfig)
                .stdin(Stdio::piped())
                .spawn()
                .expect("a native controller starts")
        })
        .collect();
    (children, None)
}

/// Child mode: the native controller for one group, until stdin closes.
async fn native(group: &str) {
    let client = kube::Client::try_default().await.expect("KUBECONFIG");
    let controller = native::Native::start(client, parent_resource(group));
    tokio::task::spawn_blocking(|| {
        let _ = std::io::stdin().read_to_end(&mut Vec::new());
    })
    .await
    .expect("stdin");
    eprintln!("native controller of {group}: {} reconciles", controller.reconciles());
    controller.stop().await;
}

#[allow(clippy::cast_precision_loss)]
fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--native") {
        native(args.get(i + 1).expect("--native GROUP")).await;
        return;
    }
    let built = PathBuf::from(std::env::var("KUBEWASM_BENCH_MEMORY_PLUGINS").expect(
        "KUBEWASM_BENCH_MEMORY_PLUGINS: a directory of demo-instance-0..9.wasm; `make bench-memory` builds it",
    ));
    let counts: Vec<usize> = std::env::var("KUBEWASM_BENCH_PARENTS").ok().map_or_else(
        || vec![100],
        |n| n.split(',').map(|n| n.trim().parse().expect("KUBEWASM_BENCH_PARENTS")).collect(),
    );
    let controllers: usize =
        std::env::var("KUBEWASM_BENCH_PLUGINS").ok().map_or(PLUGINS, |n| n.parse().expect("KUBEWASM_BENCH_PLUGINS"));
    assert!((1..=PLUGINS).contains(&controllers), "KUBEWASM_BENCH_PLUGINS: 1 to {PLUGINS}");
    // The host's plugin directory holds the plugins that run, and only them.
    let dir = tempfile_dir("kubewasm-bench-memory-plugins");
    let engine = Engine::new().expect("engine");
    let plugins: Vec<Arc<Plugin>> = (0..controllers)
        .map(|i| {
            let name = format!("demo-instance-{i}.wasm");
            std::fs::copy(built.join(&name), dir.join(&name))
                .unwrap_or_else(|e| panic!("{}: {e}", built.join(&name).display()));
            let path = dir.join(&name);
            Arc::new(Plugin::load(&engine, &path).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
        })
        .collect();

    let shards: usize =
        std::env::var("KUBEWASM_BENCH_SHARDS").ok().map_or(1, |n| n.parse().expect("KUBEWASM_BENCH_SHARDS"));
    let with_native = std::env::var("KUBEWASM_BENCH_NATIVE").map_or(true, |v| v != "0");

    let mut rows = Vec::new();
    for &per_plugin in &counts {
        let host = measure(&plugins, per_plugin, |kubeconfig| host_processes(&dir, kubeconfig, 1)).await;
        let native = if with_native {
            Some(measure(&plugins, per_plugin, |kubeconfig| native_processes(controllers, kubeconfig)).await)
        } else {
            None
        };
        let sharded = if shards > 1 {
            Some(measure(&plugins, per_plugin, |kubeconfig| host_processes(&dir, kubeconfig, shards)).await)
        } else {
            None
        };
        rows.push(Row { per_plugin, host, native, sharded });
    }
    print(controllers, shards, &rows);
}

/// The sides measured at one number of parents per plugin.
struct Row {
    per_plugin: usize,
    host: Side,
    native: Option<Side>,
    /// `KUBEWASM_BENCH_SHARDS` replicas of the host.
    sharded: Option<Side>,
}

#[allow(clippy::cast_precision_loss)]
fn print(controllers: usize, shards: usize, rows: &[Row]) {
    let plural = |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let host_label = format!("kubewasm run, {}", plural(controllers, "plugin", "plugins"));
    let native_label = format!("native kube-rs, {}", plural(controllers, "process", "processes"));
    let sharded_label = format!("kubewasm run --shard, {shards} replicas");
    println!(
        "{controllers} controller(s) of DemoApplication logic, one API group each; each parent wants a Deployment and a Service"
    );
    println!("host binary: {}", host_bin().display());
    println!(
        "{:<14} {:<32} {:>16} {:>12} {:>14} {:>12} {:>14} {:>11}",
        "parents each", "side", "idle, compiling", "idle", "converged", "peak", "per parent", "converge"
    );
    let ratio = |a: u64, b: u64| a as f64 / b as f64;
    for row in rows {
        let per_plugin = row.per_plugin;
        let parents = (controllers * per_plugin) as f64;
        let sides = [
            (&host_label, Some(&row.host)),
            (&native_label, row.native.as_ref()),
            (&sharded_label, row.sharded.as_ref()),
        ];
        for (label, side) in sides {
            let Some(side) = side else { continue };
            let per_parent = (side.converged_kib.saturating_sub(side.idle_kib)) as f64 / parents;
            println!(
                "{per_plugin:<14} {label:<32} {:>16} {:>12} {:>14} {:>12} {:>10.1} KiB {:>9.2} s",
                side.compiling_kib.map_or_else(|| "-".into(), mib),
                mib(side.idle_kib),
                mib(side.converged_kib),
                mib(side.peak_kib),
                per_parent,
                side.converge.as_secs_f64()
            );
        }
        for (label, side) in [("one host", Some(&row.host)), ("replica", row.sharded.as_ref())] {
            let Some(side) = side else { continue };
            for (i, (code, rest)) in side.binary_each_kib.iter().enumerate() {
                let label = if side.binary_each_kib.len() == 1 { label.to_string() } else { format!("{label} {i}") };
                println!(
                    "{per_plugin:<14} {:<32} code {}, read-only data and the rest {}",
                    format!("{label}: the binary's pages"),
                    mib(*code),
                    mib(*rest)
                );
            }
        }
        if let Some(native) = &row.native {
            println!(
                "{per_plugin:<14} {:<32} {:>16} {:>12.2} {:>14.2} {:>12.2} {:>14} {:>11.2}",
                "host / native",
                "",
                ratio(row.host.idle_kib, native.idle_kib),
                ratio(row.host.converged_kib, native.converged_kib),
                ratio(row.host.peak_kib, native.peak_kib),
                "",
                row.host.converge.as_secs_f64() / native.converge.as_secs_f64(),
            );
        }
        if let Some(sharded) = &row.sharded {
            let host_anon: u64 = row.host.anon_each_kib.iter().sum();
            for (i, (each, anon)) in sharded.converged_each_kib.iter().zip(&sharded.anon_each_kib).enumerate() {
                println!(
                    "{per_plugin:<14} {:<32} {:>16} {:>12} {:>14} {:>12.2} of the one host's {}; private {} = {:.2} of its {}",
                    format!("replica {i} of {shards}, converged"),
                    "",
                    "",
                    mib(*each),
                    ratio(*each, row.host.converged_kib),
                    mib(row.host.converged_kib),
                    mib(*anon),
                    ratio(*anon, host_anon),
                    mib(host_anon),
                );
            }
        }
    }
}
