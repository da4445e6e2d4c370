//! What the tests that start `kubewasm run` and `kubewasm dev` processes share.

use std::path::PathBuf;
use std::time::Duration;

/// The cargo target directory this test binary was built into.
pub fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    // <target>/<profile>/deps/<test binary>
    exe.ancestors().nth(3).expect("target directory").to_path_buf()
}

/// The workspace's root: the examples plugins ship live there.
// Only the dev tests read examples.
#[allow(dead_code)]
pub fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().expect("the host crate is in the workspace").to_path_buf()
}

/// The status of `GET /readyz`, or `None` when nothing answers.
pub fn readyz(addr: &str) -> Option<u16> {
    http_get(addr, "/readyz").map(|(status, _)| status)
}

/// `GET path` of the health server at `addr`: its status and body (`None` when nothing
/// answers).
// Only the tests that read metrics call it directly.
#[allow(dead_code)]
pub fn http_get(addr: &str, path: &str) -> Option<(u16, String)> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(stream, "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let status = response.split(' ').nth(1)?.parse().ok()?;
    let body = response.split_once("\r\n\r\n").map(|(_, body)| body.to_string()).unwrap_or_default();
    Some((status, body))
}

/// `kubewasm dev` on the plugin directory `plugins`, writing its kubeconfig to `kubeconfig`,
/// its compiled plugins cached beside the directory, logging warnings.
// The tests of `kubewasm run` start that instead.
#[allow(dead_code)]
pub fn kubewasm_dev(plugins: &std::path::Path, kubeconfig: &std::path::Path) -> std::process::Command {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_kubewasm"));
    command
        .args(["dev", "--plugins"])
        .arg(plugins)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .env("KUBEWASM_CACHE_DIR", plugins.with_extension("cache"))
        .env("RUST_LOG", "warn");
    command
}

/// Starts `command` with its stderr collected line by line as it comes (for the messages
/// of a test that fails while the process runs), its stdout dropped.
// The tests of `kubewasm run` read its logs another way.
#[allow(dead_code)]
pub fn spawn_collecting_stderr(
    command: &mut std::process::Command,
) -> (std::process::Child, std::sync::Arc<std::sync::Mutex<String>>) {
    use std::io::BufRead;
    use std::process::Stdio;
    let mut child = command.stdout(Stdio::null()).stderr(Stdio::piped()).spawn().expect("the process starts");
    let stderr = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let (pipe, sink) = (child.stderr.take().expect("stderr piped"), stderr.clone());
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(pipe).lines().map_while(Result::ok) {
            let mut all = sink.lock().expect("stderr");
            all.push_str(&line);
            all.push('\n');
        }
    });
    (child, stderr)
}

/// `kubectl --kubeconfig KUBECONFIG ARGS` with `stdin` fed to it (its cache beside the
/// kubeconfig).
#[allow(dead_code)]
pub fn kubectl(kubeconfig: &std::path::Path, args: &[&str], stdin: &str) -> std::process::Output {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = std::process::Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("--cache-dir")
        .arg(kubeconfig.with_extension("kubectl-cache"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubectl runs");
    child.stdin.take().expect("stdin").write_all(stdin.as_bytes()).expect("write stdin");
    child.wait_with_output().expect("kubectl finishes")
}
