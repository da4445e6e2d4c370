//! The DemoApplication reconciler in every language plugins are written in, side by side
//! in one run: the Rust plugin and its Python, JavaScript, TypeScript and Go ports (the
//! ones `make test` built), beside the Rust code called natively.
//!
//! Per language: the component's size; compiling it at load (`Plugin::load` into an empty
//! compiled-plugin cache: compile, write the cache, describe); a cached load (a new engine,
//! the same cache); one reconcile on a pooled engine (fresh instance, call, the host's
//! validation of the answer) with 0 and 10 observed children, the median of repeated
//! calls; and the resident memory one loaded plugin adds to a host process (measured in a
//! child process of this binary: before loading, then after loading from the cache and one
//! call).
//!
//! A plain binary: one pass is the measurement. Run with `make bench-languages`.
//! Results: BENCHMARKS.md.

#[path = "support/requests.rs"]
mod requests;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use demo_application::DemoApplicationReconciler;
use kubewasm::plugin::{Engine, EngineOptions, Plugin, Request, validate};
use kubewasm_sdk::testing::{self, TestRequest};
use requests::{observed, parent};
use serde_json::Value;

/// Calls are repeated for about this long (at least [`MIN_CALLS`], at most [`MAX_CALLS`]).
const CALL_TIME: Duration = Duration::from_secs(3);
const MIN_CALLS: usize = 15;
const MAX_CALLS: usize = 2000;

fn request(children: usize) -> Request {
    Request::new(parent(), observed(children), vec![], false, "2026-01-01T00:00:00Z".into(), Value::Null)
}

/// The median time of `call`, repeated for about [`CALL_TIME`] after two warm-up calls.
fn median(mut call: impl FnMut()) -> Duration {
    call();
    call();
    let started = Instant::now();
    let mut times = Vec::new();
    while times.len() < MAX_CALLS && (times.len() < MIN_CALLS || started.elapsed() < CALL_TIME) {
        let at = Instant::now();
        call();
        times.push(at.elapsed());
    }
    times.sort();
    times[times.len() / 2]
}

fn pooled(cache: &Path) -> Engine {
    Engine::with_options(&EngineOptions {
        pooling: true,
        cache_dir: Some(cache.to_path_buf()),
        ..EngineOptions::default()
    })
    .expect("engine")
}

/// Resident memory of this process, in KiB.
fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).expect("VmRSS");
    line.split_whitespace().nth(1).and_then(|kib| kib.parse().ok()).expect("VmRSS in kB")
}

/// Child mode: the memory one plugin adds, loaded from `cache` and called once.
fn memory_of(wasm: &Path, cache: &Path) {
    let engine = pooled(cache);
    let before = rss_kib();
    let plugin = Plugin::load(&engine, wasm).expect("the plugin loads");
    plugin.reconcile(&request(0)).expect("reconcile succeeds");
    println!("{}", rss_kib().saturating_sub(before));
}

struct Row {
    language: &'static str,
    size: Option<u64>,
    compile: Option<Duration>,
    cached: Option<Duration>,
    call0: Duration,
    call10: Duration,
    memory_kib: Option<u64>,
}

fn measure(language: &'static str, wasm: &Path) -> Row {
    let cache = std::env::temp_dir().join(format!("kubewasm-bench-languages-{}-{language}", std::process::id()));
    let _ = std::fs::remove_dir_all(&cache);
    let started = Instant::now();
    Plugin::load(&pooled(&cache), wasm).unwrap_or_else(|e| panic!("{}: {e}", wasm.display()));
    let compile = started.elapsed();
    let engine = pooled(&cache);
    let started = Instant::now();
    let plugin = Plugin::load(&engine, wasm).expect("the plugin loads from the cache");
    let cached = started.elapsed();
    let call = |request: &Request| {
        let response = plugin.reconcile(request).expect("reconcile succeeds");
        validate(plugin.manifest(), request, response).expect("a valid answer");
    };
    let (zero, ten) = (request(0), request(10));
    let call0 = median(|| call(&zero));
    let call10 = median(|| call(&ten));
    let child = std::process::Command::new(std::env::current_exe().expect("this binary"))
        .args(["--memory-of", wasm.to_str().expect("utf-8 path"), cache.to_str().expect("utf-8 path")])
        .output()
        .expect("the memory probe runs");
    let memory_kib = String::from_utf8_lossy(&child.stdout).trim().parse().ok();
    let _ = std::fs::remove_dir_all(&cache);
    Row {
        language,
        size: std::fs::metadata(wasm).ok().map(|m| m.len()),
        compile: Some(compile),
        cached: Some(cached),
        call0,
        call10,
        memory_kib,
    }
}

fn native() -> Row {
    let run = |n: usize| {
        let input = observed(n).into_iter().fold(TestRequest::new(parent()), TestRequest::child);
        median(|| {
            testing::reconcile::<DemoApplicationReconciler>(input.clone()).expect("reconcile succeeds");
        })
    };
    Row {
        language: "native Rust",
        size: None,
        compile: None,
        cached: None,
        call0: run(0),
        call10: run(10),
        memory_kib: None,
    }
}

fn variants() -> Vec<(&'static str, PathBuf)> {
    let exe = std::env::current_exe().expect("bench binary path");
    let target = exe.ancestors().nth(3).expect("target directory").to_path_buf();
    [
        ("Rust", target.join("plugins/demo-application.wasm")),
        ("Python", target.join("fixtures/demo-application-python.wasm")),
        ("JavaScript", target.join("fixtures/demo-application-js.wasm")),
        ("TypeScript", target.join("fixtures/demo-application-ts.wasm")),
        ("Go", target.join("fixtures/demo-application-go.wasm")),
    ]
    .into_iter()
    .filter(|(language, path)| {
        let found = path.exists();
        if !found {
            eprintln!("{language}: {} missing (make test builds it); skipped", path.display());
        }
        found
    })
    .collect()
}

#[allow(clippy::cast_precision_loss)]
fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--memory-of") {
        memory_of(Path::new(&args[i + 1]), Path::new(&args[i + 2]));
        return;
    }
    let mut rows: Vec<Row> = variants().iter().map(|(language, path)| measure(language, path)).collect();
    rows.push(native());
    let native = rows.last().map(|r| (r.call0, r.call10)).expect("the native row");
    let ms = |d: Duration| format!("{:.3} ms", d.as_secs_f64() * 1e3);
    let opt = |d: Option<Duration>| d.map_or_else(|| "-".into(), |d| format!("{:.2} s", d.as_secs_f64()));
    println!(
        "{:<12} {:>10} {:>10} {:>10} {:>12} {:>12} {:>9} {:>9} {:>11}",
        "language", "component", "compile", "cached", "call, 0", "call, 10", "/native", "/native", "memory"
    );
    for row in &rows {
        println!(
            "{:<12} {:>10} {:>10} {:>10} {:>12} {:>12} {:>9.1} {:>9.1} {:>11}",
            row.language,
            row.size.map_or_else(|| "-".into(), |b| format!("{:.1} MB", b as f64 / 1e6)),
            opt(row.compile),
            opt(row.cached),
            ms(row.call0),
            ms(row.call10),
            row.call0.as_secs_f64() / native.0.as_secs_f64(),
            row.call10.as_secs_f64() / native.1.as_secs_f64(),
            row.memory_kib.map_or_else(|| "-".into(), |k| format!("{:.1} MiB", k as f64 / 1024.0)),
        );
    }
}
