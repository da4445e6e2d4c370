//! The official Python client's own end-to-end suite (`python-client/e2e_test`, copied
//! unmodified from kubernetes-client/python v36.0.3) against the server, as that client's CI
//! runs it against a kind cluster: every test passes but those listed in [`NOT_PASSING`],
//! which need a kubelet or kube-controller-manager, each with its reason.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use kubewasm_devcluster::{DevCluster, Options};

/// The tests a bare API server cannot pass, and why. Nothing else may fail, and each of
/// these must still fail: one that passes has to leave the list.
///
/// Without a kubelet a Pod is created and stays `Pending`, as on a real cluster with no node;
/// every test that waits for one to run times out (after `pytest.ini`'s 20 seconds).
const NOT_PASSING: &[(&str, &str)] = &[
    (
        "e2e_test/test_client.py::TestClient::test_pod_apis",
        "kubelet: waits for a busybox Pod to leave Pending, then runs commands in it through pods/exec",
    ),
    (
        "e2e_test/test_client.py::TestClient::test_pod_exec_close_channel",
        "kubelet: waits for a Pod to be Running, then closes stdin of an exec (v5.channel.k8s.io)",
    ),
    (
        "e2e_test/test_client.py::TestClient::test_exit_code",
        "kubelet: waits for a Pod to leave Pending, then reads the exit codes of commands run by exec",
    ),
    (
        "e2e_test/test_client.py::TestClient::test_portforward_raw",
        "kubelet: waits for a Pod's container to be ready, then sends bytes through pods/portforward",
    ),
    (
        "e2e_test/test_client.py::TestClient::test_portforward_http",
        "kubelet: waits for an nginx Pod to leave Pending, then makes HTTP requests through pods/portforward",
    ),
    (
        "e2e_test/test_utils.py::TestUtils::test_metrics_utilities_integration",
        "kubelet and metrics-server: waits for a Pod to be Running, then reads metrics.k8s.io, which \
         metrics-server serves from what kubelets measure (on kind, without metrics-server, upstream's CI skips it)",
    ),
];

/// The suite's directory: the vendored tests, the `conftest.py` that runs them from an
/// installed client, and `pytest.ini`.
fn suite() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python-client")
}

/// `<target>/<profile>/deps/<test binary>`: the target directory, where the virtualenv is kept.
fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    exe.ancestors().nth(3).expect("the target directory").to_path_buf()
}

fn run(command: &mut Command) -> Output {
    command.output().unwrap_or_else(|e| panic!("{command:?} does not start: {e}"))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The Python of a virtualenv with the versions of `requirements.txt` from PyPI, made once
/// (as the Makefile makes its own) and made again when that file changes.
fn venv_python() -> PathBuf {
    let requirements = suite().join("requirements.txt");
    let wanted = std::fs::read_to_string(&requirements).expect("requirements.txt is readable");
    let venv = target_dir().join("python-client-venv");
    let python = venv.join("bin/python");
    let marker = venv.join("installed-requirements.txt");
    if std::fs::read_to_string(&marker).ok().as_deref() == Some(wanted.as_str()) {
        return python;
    }
    let _ = std::fs::remove_dir_all(&venv);
    let base = std::env::var("PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let made = run(Command::new(&base).arg("-m").arg("venv").arg(&venv));
    assert!(made.status.success(), "{base} -m venv {}: {}", venv.display(), text(&made.stderr));
    let installed = run(Command::new(&python)
        .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "-r"])
        .arg(&requirements));
    assert!(installed.status.success(), "pip install -r {}: {}", requirements.display(), text(&installed.stderr));
    std::fs::write(&marker, wanted).expect("the virtualenv's marker is written");
    python
}

/// pytest in the suite's directory, against the cluster of `kubeconfig`: its output, or a
/// panic when it runs longer than ten minutes (each test has its own limit in `pytest.ini`;
/// this one ends a run that hangs between tests).
fn pytest(python: &Path, kubeconfig: &Path, args: &[&str]) -> (std::process::ExitStatus, String) {
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    let log = target_dir().join(format!("python-client-pytest-{}.log", RUNS.fetch_add(1, Ordering::SeqCst)));
    let file = std::fs::File::create(&log).expect("pytest's log is created");
    let mut child = Command::new(python)
        .args(["-m", "pytest"])
        .args(args)
        .current_dir(suite())
        .env("KUBECONFIG", kubeconfig)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .stdout(file.try_clone().expect("pytest's log is shared"))
        .stderr(file)
        .spawn()
        .expect("pytest starts");
    let deadline = Instant::now() + Duration::from_mins(10);
    let status = loop {
        if let Some(status) = child.try_wait().expect("pytest is waited for") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("pytest still runs after 10 minutes: {}", std::fs::read_to_string(&log).unwrap_or_default());
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    (status, std::fs::read_to_string(&log).expect("pytest's log is readable"))
}

/// Each test's outcomes in the `-rA` summary (`PASSED id`, `FAILED id - why`, `ERROR id -
/// why`), by test id. A skipped test names no id there; it has no entry, as one that never ran.
fn outcomes(stdout: &str) -> BTreeMap<String, Vec<String>> {
    let mut found: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let summary = stdout.split_once("short test summary info").map_or("", |(_, s)| s);
    for line in summary.lines() {
        let Some((outcome, rest)) = line.split_once(' ') else { continue };
        if ["PASSED", "FAILED", "ERROR"].contains(&outcome) {
            let id = rest.split_once(" - ").map_or(rest, |(id, _)| id);
            found.entry(id.to_owned()).or_default().push(line.to_owned());
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread")]
async fn the_python_clients_e2e_suite_fails_only_where_a_kubelet_or_controller_manager_is_needed() {
    let python = tokio::task::spawn_blocking(venv_python).await.expect("the virtualenv is made");
    let cluster = DevCluster::start(Options::default()).await.expect("the server starts");
    let kubeconfig = cluster.kubeconfig_path().to_path_buf();

    let (collected, ran) = tokio::task::spawn_blocking(move || {
        (pytest(&python, &kubeconfig, &["--collect-only", "-q"]), pytest(&python, &kubeconfig, &[]))
    })
    .await
    .expect("pytest runs");
    let (collected_status, collected_out) = collected;
    assert!(collected_status.success(), "collecting the suite: {collected_out}");
    let tests: BTreeSet<&str> = collected_out.lines().filter(|l| l.contains("::")).collect();
    assert_eq!(tests.len(), 43, "the suite of v36.0.3 has 43 tests: {collected_out}");

    let (status, stdout) = ran;
    // 0: all passed, 1: some failed; anything else is pytest itself failing (usage, internal error).
    assert!(matches!(status.code(), Some(0 | 1)), "pytest ended with {status}: {stdout}");
    let outcomes = outcomes(&stdout);
    let passed = |id: &str| outcomes.get(id).is_some_and(|lines| lines.iter().all(|l| l.starts_with("PASSED ")));
    let not_passing: BTreeSet<&str> = tests.iter().copied().filter(|id| !passed(id)).collect();
    let expected: BTreeSet<&str> = NOT_PASSING.iter().map(|(id, _)| *id).collect();
    for id in &expected {
        assert!(tests.contains(id), "{id} is listed as not passing but is not in the suite");
    }
    for id in &tests {
        let outcome = outcomes.get(*id).map_or_else(|| format!("NOT RUN {id} (skipped)"), |lines| lines.join("; "));
        let why = NOT_PASSING.iter().find(|(listed, _)| listed == id).map_or("", |(_, why)| why);
        eprintln!("{outcome}{}{why}", if why.is_empty() { "" } else { "\n    needs a " });
    }
    let unexpected: Vec<_> = not_passing.difference(&expected).collect();
    let now_passing: Vec<_> = expected.difference(&not_passing).collect();
    assert!(
        unexpected.is_empty() && now_passing.is_empty(),
        "failing but not listed: {unexpected:#?}\nlisted but passing: {now_passing:#?}\n\n{stdout}"
    );
    cluster.shutdown().await;
}
