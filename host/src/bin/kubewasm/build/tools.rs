//! Python, JavaScript/TypeScript and Go plugins built with their SDKs' tools, as their
//! READMEs build them, into a scratch directory; a failure summed up by the line of
//! the tool's output that names the author's file.

use std::path::{Path, PathBuf};
use std::process::Output;

use tokio::process::Command;

use super::{Error, first_or_last_line};
use crate::componentize;

/// `python -m kubewasm build app.py`: componentize-py, with the Python of the
/// project's virtualenv (`.venv` or `venv`), else `python3` from the PATH (an
/// activated virtualenv's). `background`: the development component runs the saved
/// sources meanwhile, so the build yields the cores ([`in_background`]).
pub async fn python(dir: &Path, scratch: &Path, background: bool) -> Result<Vec<u8>, Error> {
    let app = dir.join("app.py");
    if !app.is_file() {
        return Err(Error::Layout { dir: dir.to_path_buf(), why: "no app.py, the plugin module".into() });
    }
    let python = python_of(dir);
    let out = output_in(scratch)?;
    let mut command = Command::new(&python);
    command.args(["-m", "kubewasm", "build", "app.py", "-o"]).arg(&out);
    // componentize-py's own stack is noise beside the plugin's traceback.
    command.envs([("RUST_BACKTRACE", "0"), ("RUST_LIB_BACKTRACE", "0")]);
    if background {
        in_background(&mut command);
    }
    let ran = run(command.current_dir(dir), &python.display().to_string(), PYTHON_HINT).await?;
    finish(&ran, &out, python_summary)
}

/// The scheduling priority (`nice`) of a build off the critical path.
#[cfg(target_os = "linux")]
const BACKGROUND_NICE: libc::c_int = 10;

/// Runs `command` at a lower scheduling priority: a build whose sources already act
/// (through a development component) must not slow the builds, compiles and reconciles
/// of the edits the user waits for. componentize-py holds a core for seconds.
fn in_background(command: &mut Command) {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: the closure runs in the child between fork and exec, where only
        // async-signal-safe calls are allowed: setpriority is one system call on integer
        // arguments (`0`: the calling process). A failure leaves the priority as it was.
        unsafe {
            command.pre_exec(|| {
                let _ = libc::setpriority(libc::PRIO_PROCESS, 0, BACKGROUND_NICE);
                Ok(())
            });
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = command;
}

/// `python -m kubewasm dev-component`: the Python SDK's development component (the
/// interpreter and the SDK, which import the plugin from a copy of the project's sources at each
/// call), built once per SDK version and kept in the host's cache directory.
pub async fn python_dev_component(dir: &Path, scratch: &Path) -> Result<Vec<u8>, Error> {
    let python = python_of(dir);
    let out = scratch.join("development.wasm");
    std::fs::create_dir_all(scratch).map_err(|source| Error::Io { path: scratch.to_path_buf(), source })?;
    let mut command = Command::new(&python);
    command.args(["-m", "kubewasm", "dev-component", "-o"]).arg(&out);
    if let Some(cache) = crate::cli::default_cache_dir() {
        command.arg("--cache").arg(cache);
    }
    command.envs([("RUST_BACKTRACE", "0"), ("RUST_LIB_BACKTRACE", "0")]);
    let ran = run(command.current_dir(dir), &python.display().to_string(), PYTHON_HINT).await?;
    finish(&ran, &out, |text| first_or_last_line(text, is_exception))
}

const PYTHON_HINT: &str = "create the project's virtualenv with the kubewasm SDK as its README says, or activate one";

/// The Python of the project's virtualenv (`.venv` or `venv`), else `python3` from the
/// PATH (an activated virtualenv's).
fn python_of(dir: &Path) -> PathBuf {
    [".venv", "venv"]
        .iter()
        .map(|venv| dir.join(venv).join("bin").join("python"))
        .find(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from("python3"))
}

/// A Python failure in one line: where in the plugin's own files (`app.py:28`, the
/// component's `/0/` being the project) and the exception (`SyntaxError: ...`), which
/// componentize-py repeats after `Caused by:`.
fn python_summary(text: &str) -> String {
    let exception = text
        .lines()
        .skip_while(|l| l.trim() != "Caused by:")
        .map(str::trim)
        .find(|l| !l.is_empty() && *l != "Caused by:")
        .or_else(|| text.lines().rev().map(str::trim).find(|l| is_exception(l)))
        .map_or_else(|| first_or_last_line(text, |_| false), str::to_string);
    let at = text.lines().rev().find_map(|line| {
        let (_, rest) = line.split_once("File \"/0/")?;
        let (file, rest) = rest.split_once('"')?;
        let number: String = rest.trim_start_matches(", line ").chars().take_while(char::is_ascii_digit).collect();
        Some(format!("{file}:{number}"))
    });
    match at {
        Some(at) => format!("{at}: {exception}"),
        None => exception,
    }
}

/// `NameError: name 'x' is not defined`, `kubewasm.errors.PermanentError: ...`.
fn is_exception(line: &str) -> bool {
    line.split_once(": ").is_some_and(|(name, _)| {
        (name.ends_with("Error") || name.ends_with("Exception"))
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
    })
}

/// The JavaScript SDK's `kubewasm-js build ENTRY` (jco), as the package's `build`
/// script runs it (its entry and `--engine`), with the SDK the package installed.
pub async fn javascript(dir: &Path, scratch: &Path) -> Result<Vec<u8>, Error> {
    let sdk = dir.join("node_modules/@kubewasm/sdk/bin/kubewasm-js.js");
    if !sdk.is_file() {
        let why = "no node_modules/@kubewasm/sdk: run `npm install` in it first";
        return Err(Error::Layout { dir: dir.to_path_buf(), why: why.into() });
    }
    let args = build_arguments(dir)?;
    let out = output_in(scratch)?;
    let mut command = Command::new("node");
    command.arg(&sdk).arg("build").args(&args).arg("-o").arg(&out);
    let ran = run(command.current_dir(dir), "node", "install Node.js 20.6 or later").await?;
    finish(&ran, &out, javascript_summary)
}

/// A JavaScript or TypeScript failure in one line: rolldown's error (`[PARSE_ERROR]
/// Unexpected token`) where it is (`app.ts:21:13`, from the frame under it), else the
/// build's own message.
fn javascript_summary(text: &str) -> String {
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    if let Some(i) = lines.iter().position(|l| l.starts_with('[') && l.contains("] ")) {
        let at = lines[i + 1..].iter().take(3).find_map(|l| Some(l.split_once("─[ ")?.1.trim_end_matches(']').trim()));
        return match at {
            Some(at) => format!("{at}: {}", lines[i]),
            None => lines[i].to_string(),
        };
    }
    first_or_last_line(text, |l| l.starts_with("kubewasm-js:") || l.starts_with("Error"))
}

/// The arguments of the package's `build` script after `kubewasm-js build`, but for
/// its output (`-o FILE`), which `kubewasm dev` chooses; `app.ts` or `app.js` without one.
fn build_arguments(dir: &Path) -> Result<Vec<String>, Error> {
    let manifest = dir.join("package.json");
    let text = std::fs::read_to_string(&manifest).map_err(|source| Error::Io { path: manifest.clone(), source })?;
    let package: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| Error::Layout { dir: dir.to_path_buf(), why: format!("package.json: {e}") })?;
    let script: Vec<&str> = package["scripts"]["build"].as_str().unwrap_or_default().split_whitespace().collect();
    if let Some(at) = script.windows(2).position(|w| w[0].ends_with("kubewasm-js") && w[1] == "build") {
        let mut args = Vec::new();
        let mut rest = script[at + 2..].iter().take_while(|a| !["&&", ";", "|"].contains(a));
        while let Some(arg) = rest.next() {
            if *arg == "-o" || *arg == "--output" {
                rest.next();
            } else {
                args.push((*arg).to_string());
            }
        }
        if !args.is_empty() {
            return Ok(args);
        }
    }
    ["app.ts", "app.js", "app.mts", "app.mjs"]
        .iter()
        .find(|entry| dir.join(entry).is_file())
        .map(|entry| vec![(*entry).to_string()])
        .ok_or_else(|| Error::Layout {
            dir: dir.to_path_buf(),
            why: "no `kubewasm-js build ENTRY` in package.json's build script, and no app.ts or app.js".into(),
        })
}

/// `GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared`, then the core module made a
/// component as `kubewasm componentize` does.
pub async fn go(dir: &Path, scratch: &Path) -> Result<Vec<u8>, Error> {
    let core = output_in(scratch)?.with_extension("core.wasm");
    let mut command = Command::new("go");
    command.args(["build", "-buildmode=c-shared", "-o"]).arg(&core).arg(".");
    command.envs([("GOOS", "wasip1"), ("GOARCH", "wasm")]);
    let ran = run(command.current_dir(dir), "go", "install Go 1.24 or later").await?;
    if !ran.status.success() {
        // `./main.go:12:5: undefined: x`, after a `# module` line.
        let text = String::from_utf8_lossy(&ran.stderr).into_owned();
        let summary = first_or_last_line(&text, |l| l.contains(".go:"));
        return Err(Error::Failed { summary: summary.trim_start_matches("./").to_string(), output: text });
    }
    tokio::task::spawn_blocking(move || componentize::componentize(&core))
        .await
        .map_err(|e| Error::Failed { summary: format!("componentize: {e}"), output: String::new() })?
        .map_err(|e| Error::Failed { summary: e.to_string(), output: String::new() })
}

/// Where a tool writes the component in `scratch`, created if need be.
fn output_in(scratch: &Path) -> Result<PathBuf, Error> {
    std::fs::create_dir_all(scratch).map_err(|source| Error::Io { path: scratch.to_path_buf(), source })?;
    Ok(scratch.join("plugin.wasm"))
}

async fn run(command: &mut Command, tool: &str, hint: &str) -> Result<Output, Error> {
    command.kill_on_drop(true).output().await.map_err(|source| Error::NoTool {
        tool: tool.to_string(),
        hint: hint.to_string(),
        source,
    })
}

/// The component the tool wrote to `out` when it succeeded; otherwise its failure,
/// summed up by `summary` of what it printed.
fn finish(ran: &Output, out: &Path, summary: impl Fn(&str) -> String) -> Result<Vec<u8>, Error> {
    if ran.status.success() {
        return std::fs::read(out).map_err(|source| Error::Io { path: out.to_path_buf(), source });
    }
    let text = format!("{}{}", String::from_utf8_lossy(&ran.stdout), String::from_utf8_lossy(&ran.stderr));
    Err(Error::Failed { summary: summary(&text), output: text })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_python_failure_is_summed_up_by_the_plugins_file_and_the_exception() {
        let syntax = "Traceback (most recent call last):\n  File \"/k/build.py\", line 41, in build\n\
            AssertionError:   File \"/0/app.py\", line 28\n    def reconcile(self,,\n    ^\nSyntaxError: invalid syntax\n\n\n\
            Caused by:\n    SyntaxError: invalid syntax (app.py, line 28)\n\nStack backtrace:\n   0: anyhow\n";
        assert_eq!(python_summary(syntax), "app.py:28: SyntaxError: invalid syntax (app.py, line 28)");
        let name = "AssertionError: Traceback (most recent call last):\n  File \"/0/app.py\", line 101, in <module>\n\
            undefined_name_here()\nNameError: name 'undefined_name_here' is not defined\n";
        assert_eq!(python_summary(name), "app.py:101: NameError: name 'undefined_name_here' is not defined");
    }

    #[test]
    fn a_javascript_failure_is_summed_up_by_rolldowns_error_where_it_is() {
        let parse =
            "Error: Build failed with 1 error:\n\n[PARSE_ERROR] Unexpected token\n    ╭─[ app.ts:21:13 ]\n    │\n";
        assert_eq!(javascript_summary(parse), "app.ts:21:13: [PARSE_ERROR] Unexpected token");
        let jco = "built bundle\nkubewasm-js: jco componentize failed (exit 1)\n";
        assert_eq!(javascript_summary(jco), "kubewasm-js: jco componentize failed (exit 1)");
    }

    #[test]
    fn the_build_scripts_entry_and_engine_are_kept_and_its_output_is_not() {
        let dir = std::env::temp_dir().join(format!("kubewasm-npm-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let script = |s: &str| {
            std::fs::write(dir.join("package.json"), serde_json::json!({"scripts": {"build": s}}).to_string()).unwrap();
        };
        script("kubewasm-js build src/main.ts -o hello.wasm --engine starlingmonkey");
        assert_eq!(build_arguments(&dir).unwrap(), ["src/main.ts", "--engine", "starlingmonkey"]);
        script("tsc && kubewasm-js build app.ts -o x.wasm && echo done");
        assert_eq!(build_arguments(&dir).unwrap(), ["app.ts"]);
        script("make");
        assert!(build_arguments(&dir).is_err(), "no entry to be found");
        std::fs::write(dir.join("app.js"), "").unwrap();
        assert_eq!(build_arguments(&dir).unwrap(), ["app.js"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
