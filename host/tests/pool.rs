//! The instance pool of `kubewasm dev` and `run`: what one instance of each kind of
//! plugin takes from it, counted at load, and calls beyond what it holds waiting for a
//! slot rather than failing.
//!
//! The plugins are built by `make plugins`, `make python-plugins` and `make js-plugins`.

use std::path::{Path, PathBuf};

use kubewasm::plugin::{Engine, EngineOptions, LoadError, Plugin, PoolSlots, Request};
use serde_json::json;

/// The cargo target directory this test binary was built into.
fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    exe.ancestors().nth(3).expect("target directory").to_path_buf()
}

fn built(path: &str, make: &str) -> PathBuf {
    let path = target_dir().join(path);
    assert!(path.exists(), "{} is missing: run `{make}` first", path.display());
    path
}

fn pooled(size: PoolSlots) -> Engine {
    // Compiled once for the tests of this file: the Python component takes seconds.
    let options = EngineOptions {
        pooling: true,
        cache_dir: Some(target_dir().join("pool-test-cache")),
        ..EngineOptions::default()
    };
    let engine = Engine::with_pool(&options, size).expect("engine");
    assert_eq!(engine.pool_size(), Some(size), "this machine cannot reserve a pool");
    engine
}

fn load(engine: &Engine, path: &Path) -> Plugin {
    Plugin::load(engine, path).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn each_plugin_takes_from_the_pool_the_core_instances_its_component_instantiates() {
    let engine = pooled(PoolSlots::default());
    // What wasmtime's pool allocates for one instance of each (its metrics say so):
    // the QuickJS plugin's 9 include an adapter module wasmtime adds between the
    // component's nested components, which its sections do not show.
    for (path, make, core_instances, memories) in [
        ("plugins/demo-application.wasm", "make plugins", 3, 1),
        ("fixtures/demo-application-python.wasm", "make python-plugins", 14, 1),
        ("fixtures/demo-application-js.wasm", "make js-plugins", 9, 2),
        ("fixtures/js-fetch.wasm", "make js-plugins", 4, 1),
    ] {
        let plugin = load(&engine, &built(path, make));
        let slots = plugin.pool_slots();
        assert_eq!(
            (slots.component_instances, slots.core_instances, slots.memories),
            (1, core_instances, memories),
            "{path}"
        );
    }
}

#[test]
fn calls_beyond_what_the_pool_holds_wait_for_a_slot_instead_of_failing() {
    let python = built("fixtures/demo-application-python.wasm", "make python-plugins");
    let one = load(&pooled(PoolSlots::default()), &python).pool_slots();
    // A pool of exactly two Python instances, and six times as many calls at once.
    let two = PoolSlots {
        component_instances: 2 * one.component_instances,
        core_instances: 2 * one.core_instances,
        memories: 2 * one.memories,
        tables: 2 * one.tables,
    };
    let plugin = load(&pooled(two), &python);
    let parent = json!({
        "apiVersion": "paas.cmft.com/v1beta1",
        "kind": "DemoApplication",
        "metadata": { "name": "web", "namespace": "default", "uid": "u-1" },
        "spec": { "image": "nginx:1.27", "replica": 2, "ports": [{ "port": 80 }] },
    });
    let request = Request::new(parent, vec![], vec![], false, "2026-01-01T00:00:00Z".into(), json!(null));
    std::thread::scope(|scope| {
        let calls: Vec<_> = (0..12).map(|_| scope.spawn(|| plugin.reconcile(&request))).collect();
        for (i, call) in calls.into_iter().enumerate() {
            let response = call.join().expect("call thread").unwrap_or_else(|e| panic!("call {i}: {e}"));
            assert_eq!(response.children.len(), 2, "call {i}: a Deployment and a Service");
        }
    });
}

#[test]
fn a_plugin_that_alone_overflows_the_pool_is_refused_at_load_naming_the_file() {
    let python = built("fixtures/demo-application-python.wasm", "make python-plugins");
    let small = PoolSlots { component_instances: 4, core_instances: 13, memories: 4, tables: 8 };
    match Plugin::load(&pooled(small), &python) {
        Err(e @ LoadError::TooLargeForPool { .. }) => {
            let message = e.to_string();
            assert!(message.starts_with(&python.display().to_string()), "{message}");
            assert!(
                message.contains("one instance needs 14 core instances, but the host's instance pool has 13"),
                "{message}"
            );
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}
