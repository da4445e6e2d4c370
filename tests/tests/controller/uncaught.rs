//! An error nothing in the plugin caught (a TypeScript or JavaScript exception, a Python
//! one, a Go panic) is recorded on the parent as a `PluginFailed` Warning whose first line,
//! all that `kubectl get events` shows, names the error and the line of the plugin's own
//! file that raised it; the trace follows, as in the host's log.

use std::time::{Duration, Instant};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::harness::{Env, eventually, resource};

/// The `Thrower` kind of the throwing fixtures, which (but for python-throw) define no CRD.
async fn install_throwers(env: &Env) {
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "throwers.test.kubewasm.io"},
        "spec": {"group": "test.kubewasm.io", "scope": "Namespaced",
            "names": {"plural": "throwers", "singular": "thrower", "kind": "Thrower"},
            "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]},
    });
    let api = Api::<CustomResourceDefinition>::all(env.client.clone());
    let apply = PatchParams::apply("kubewasm-tests").force();
    api.patch("throwers.test.kubewasm.io", &apply, &Patch::Apply(crd)).await.expect("the CRD applied");
}

/// The note of the `PluginFailed` Warning that the fixture `plugin` leaves on a `Thrower`.
async fn failure_of(plugin: &str) -> String {
    let mut env = Env::start(&[plugin]).await;
    install_throwers(&env).await;
    // A plugin whose kind was not served waits; it starts once discovery serves it.
    let deadline = Instant::now() + Duration::from_secs(20);
    while env.host.controller(plugin).is_none() {
        env.host.start_waiting().await;
        assert!(Instant::now() < deadline, "the plugin did not start once Throwers are served");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let throwers = resource("test.kubewasm.io", "v1", "Thrower", "throwers");
    let thrower = json!({"apiVersion": "test.kubewasm.io/v1", "kind": "Thrower",
        "metadata": {"name": "t", "namespace": "default"}, "spec": {}});
    eventually("the Thrower created once its CRD is served", || async {
        let object = serde_json::from_value(thrower.clone()).expect("object");
        env.api(&throwers, "default").create(&PostParams::default(), &object).await.ok()
    })
    .await;
    let note = eventually("a PluginFailed Warning on the Thrower", || async {
        env.events("t", "PluginFailed").await.into_iter().find_map(|e| e.message)
    })
    .await;
    env.stop().await;
    note
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_typescript_exception_is_recorded_with_the_ts_files_line_first() {
    let note = failure_of("ts-throw").await;
    let first = note.lines().next().unwrap_or_default();
    assert_eq!(
        first,
        "plugin ts-throw panicked in reconcile: uncaught exception: TypeError: cannot read property 'size' of \
         undefined (at app.ts:23:11)"
    );
    assert!(note.contains("\n    at sizeOf (app.ts:23:11)\n"), "{note}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_exception_is_recorded_with_its_last_traceback_line_and_the_plugins_line_first() {
    let note = failure_of("python-throw").await;
    let first = note.lines().next().unwrap_or_default();
    assert_eq!(first, "plugin python-throw panicked in reconcile: KeyError: 'settings' (at app.py:37 in size_of)");
    assert!(
        note.contains("\nTraceback (most recent call last):\n") && note.ends_with("\nKeyError: 'settings'"),
        "{note}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_go_panic_is_recorded_with_its_message_and_the_plugins_line_first() {
    let note = failure_of("go-panic").await;
    let first = note.lines().next().unwrap_or_default();
    assert_eq!(
        first,
        "plugin go-panic trapped in reconcile: panic: assignment to entry in nil map (at main.go:28 in main.count)"
    );
    assert!(note.contains("\ngoroutine 1 [running]:\nmain.count(...)\n"), "{note}");
}
