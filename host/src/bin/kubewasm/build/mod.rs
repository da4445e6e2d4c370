//! `kubewasm dev --watch`: plugin projects built from source whenever their sources
//! change, each with its language's tools (cargo with a development profile,
//! componentize-py, the JavaScript SDK's build, Go and `kubewasm componentize`), the
//! component installed into the plugin directory by a rename, which the host reads at
//! once. A build that fails changes nothing in the directory: the version that runs
//! stays, and the failure is reported with its first error.

mod cargo;
mod sources;
mod tools;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Semaphore;

/// A plugin project: a directory its language's tools build into a component.
#[derive(Clone, Debug)]
pub struct Project {
    /// The project's directory, absolute.
    pub dir: PathBuf,
    /// Its plugin file in the plugin directory is `NAME.wasm`, NAME the directory's name.
    pub name: String,
    pub language: Language,
}

/// How a project is built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Language {
    /// A crate (`Cargo.toml`): `cargo build --profile plugin-dev --target wasm32-wasip2`.
    Rust,
    /// `app.py` (or a `pyproject.toml`): `python -m kubewasm build` (componentize-py).
    Python,
    /// An npm package (`package.json`) in JavaScript or TypeScript: the SDK's
    /// `kubewasm-js build`.
    JavaScript,
    /// A Go module (`go.mod`): `go build` for wasip1, then `kubewasm componentize`.
    Go,
}

impl std::fmt::Display for Language {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Language::Rust => "Rust",
            Language::Python => "Python",
            Language::JavaScript => "JavaScript",
            Language::Go => "Go",
        })
    }
}

/// Why a project could not be followed or built.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{}: not a plugin project: no Cargo.toml, go.mod, package.json, pyproject.toml or app.py", .0.display())]
    NotAProject(PathBuf),
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    /// The project's sources cannot be watched.
    #[error("{}: cannot watch its sources: {source}", dir.display())]
    Watch { dir: PathBuf, source: notify::Error },
    /// The build tool cannot be started.
    #[error("cannot run {tool}: {source}; {hint}")]
    NoTool { tool: String, hint: String, source: std::io::Error },
    /// The project is not laid out as its tools need.
    #[error("{}: {why}", dir.display())]
    Layout { dir: PathBuf, why: String },
    /// The build failed: `summary` is its first error, `output` all the tool said.
    #[error("{summary}")]
    Failed { summary: String, output: String },
}

impl Error {
    /// Everything the tool said, for the log; the message alone for other errors.
    pub fn output(&self) -> String {
        match self {
            Error::Failed { output, .. } => output.clone(),
            other => other.to_string(),
        }
    }
}

/// Where a project's build stands, as the dev table shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum State {
    /// `development`: the development component runs the saved sources meanwhile.
    Building { development: bool },
    /// Built and installed; `took` from the start of the build.
    Built { took: Duration },
    /// The first error; the plugin directory was left as it was.
    Failed(String),
}

impl Project {
    /// The plugin project in `dir`, told by its files: `Cargo.toml` (Rust), `go.mod`
    /// (Go), `package.json` (JavaScript, TypeScript), `pyproject.toml` or `app.py`
    /// (Python).
    ///
    /// # Errors
    ///
    /// [`Error::Io`] when `dir` cannot be resolved, [`Error::NotAProject`] when it holds
    /// none of those files.
    pub fn at(dir: &Path) -> Result<Project, Error> {
        let dir = dir.canonicalize().map_err(|source| Error::Io { path: dir.to_path_buf(), source })?;
        let language = [
            ("Cargo.toml", Language::Rust),
            ("go.mod", Language::Go),
            ("package.json", Language::JavaScript),
            ("pyproject.toml", Language::Python),
            ("app.py", Language::Python),
        ]
        .into_iter()
        .find_map(|(file, language)| dir.join(file).is_file().then_some(language))
        .ok_or_else(|| Error::NotAProject(dir.clone()))?;
        let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        Ok(Project { dir, name, language })
    }

    /// The plugin projects among the directories in `dir`, in name order.
    pub fn found_in(dir: &Path) -> Vec<Project> {
        let mut found: Vec<Project> = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|entry| entry.path())
            .filter(|path| path.is_dir() && !path.file_name().is_some_and(|n| n.to_string_lossy().starts_with('.')))
            .filter_map(|path| Project::at(&path).ok())
            .collect();
        found.sort_by(|a, b| a.name.cmp(&b.name));
        found
    }

    /// Where `kubewasm dev` keeps a copy of the sources for each version of the
    /// development component, named by the version: what each version reads, so that
    /// the version that runs is not changed by a later save, which may not load.
    pub fn snapshots(&self) -> PathBuf {
        scratch_root().join(&self.name).join("sources")
    }

    /// The component's bytes, built with the project's tools into `scratch`.
    /// `background`: a development component runs the sources meanwhile.
    async fn build(&self, scratch: &Path, background: bool) -> Result<Vec<u8>, Error> {
        match self.language {
            Language::Rust => cargo::build(&self.dir).await,
            Language::Python => tools::python(&self.dir, scratch, background).await,
            Language::JavaScript => tools::javascript(&self.dir, scratch).await,
            Language::Go => tools::go(&self.dir, scratch).await,
        }
    }
}

/// Builds `project` now and each time its sources change, installing each component
/// as `plugin_dir/NAME.wasm`, until the task is dropped (which kills a build in
/// progress). One build at a time per `builds` permit; changes during a build make one
/// more build after it. `report` is told each [`State`].
///
/// A Python project runs first as the SDK's development component, which reads the
/// project's sources at each call (see [`kubewasm::plugin::development`]): installed at
/// once and at each save, marked with the sources' version, so that a save acts without
/// waiting for the build; the build runs meanwhile and its component replaces the
/// development one. A save during that build installs the development component again
/// and starts the build afresh.
///
/// # Errors
///
/// When the sources cannot be watched.
pub async fn follow(
    project: Project,
    plugin_dir: PathBuf,
    builds: Arc<Semaphore>,
    report: impl Fn(&Project, State, Option<&Error>) + Send,
) -> Result<(), Error> {
    let (_watcher, mut changes) =
        sources::watch(&project.dir).map_err(|source| Error::Watch { dir: project.dir.clone(), source })?;
    let scratch = scratch_root().join(&project.name);
    let development = match project.language {
        Language::Python => match tools::python_dev_component(&project.dir, &scratch).await {
            Ok(component) => Some(component),
            Err(e) => {
                tracing::warn!(project = %project.dir.display(), "no development component, each save waits for its build: {e}");
                None
            }
        },
        _ => None,
    };
    let mut built = None;
    loop {
        // A burst of saves is one build; a save that changed nothing, none.
        let now = sources::fingerprint(&project.dir);
        if built != Some(now) {
            built = Some(now);
            let live = development.as_ref().is_some_and(|component| {
                let version = format!("{now:016x}");
                let marked = kubewasm::plugin::development::mark(component, &version);
                let snapshot = project.snapshots().join(&version);
                let installed = sources::snapshot(&project.dir, &snapshot)
                    .map_err(|source| Error::Io { path: snapshot, source })
                    .and_then(|()| install(&plugin_dir, &project.name, &marked));
                match installed {
                    Ok(()) => true,
                    Err(e) => {
                        report(&project, State::Failed(e.to_string()), Some(&e));
                        false
                    }
                }
            });
            let building = build_and_install(&project, &plugin_dir, &scratch, &builds, live, &report);
            if development.is_some() {
                tokio::select! {
                    () = building => {}
                    // Live at once in the development component; the build starts afresh.
                    more = next_change(&mut changes) => if more { continue } else { return Ok(()) },
                }
            } else {
                building.await;
            }
        }
        if !next_change(&mut changes).await {
            return Ok(());
        }
    }
}

/// One build of `project`, its component installed when it succeeds; `development`:
/// the development component runs the sources meanwhile. Such a build is off the
/// critical path: it runs beside the others at a lower priority rather than taking the
/// one turn of `builds`, for which another project's save would wait.
async fn build_and_install(
    project: &Project,
    plugin_dir: &Path,
    scratch: &Path,
    builds: &Semaphore,
    development: bool,
    report: &impl Fn(&Project, State, Option<&Error>),
) {
    let _permit = if development {
        None
    } else {
        let Ok(permit) = builds.acquire().await else { return };
        Some(permit)
    };
    report(project, State::Building { development }, None);
    let started = Instant::now();
    let installed = match project.build(scratch, development).await {
        Ok(bytes) => install(plugin_dir, &project.name, &bytes),
        Err(e) => Err(e),
    };
    match installed {
        Ok(()) => report(project, State::Built { took: started.elapsed() }, None),
        Err(e) => report(project, State::Failed(e.to_string()), Some(&e)),
    }
}

/// Waits for the next batch of the watcher's messages that changed a source (what it
/// has delivered by the time the first message is read); `false` when the watcher is gone.
async fn next_change(changes: &mut tokio::sync::mpsc::UnboundedReceiver<(PathBuf, bool)>) -> bool {
    loop {
        let Some(first) = changes.recv().await else { return false };
        let mut batch = vec![first];
        while let Ok(more) = changes.try_recv() {
            batch.push(more);
        }
        if sources::changed_any(&batch) {
            return true;
        }
    }
}

/// Where the tools write their output before it is installed, one directory per
/// project: removed by `kubewasm dev` on its way out.
pub fn scratch_root() -> PathBuf {
    std::env::temp_dir().join(format!("kubewasm-dev-{}", std::process::id()))
}

/// Puts `bytes` in place as `dir/NAME.wasm` by renaming a file written beside it, so
/// that the host never reads half of it; nothing is written when it already holds them.
fn install(dir: &Path, name: &str, bytes: &[u8]) -> Result<(), Error> {
    let path = dir.join(format!("{name}.wasm"));
    if std::fs::read(&path).is_ok_and(|held| held == bytes) {
        return Ok(());
    }
    // Hidden: the host does not take it for a plugin.
    let partial = dir.join(format!(".{name}.wasm.{}.partial", std::process::id()));
    std::fs::write(&partial, bytes)
        .and_then(|()| std::fs::rename(&partial, &path))
        .map_err(|source| Error::Io { path: path.clone(), source })
}

/// The first line of `text` with something on it that `pick` accepts, else its last
/// line with something on it: the summary of a tool's output.
fn first_or_last_line(text: &str, pick: impl Fn(&str) -> bool) -> String {
    let lines = || text.lines().map(str::trim_end).filter(|l| !l.trim().is_empty());
    lines()
        .find(|l| pick(l))
        .or_else(|| lines().next_back())
        .unwrap_or("the build failed, saying nothing")
        .trim()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(test: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("kubewasm-build-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_project_is_told_by_its_files_and_named_by_its_directory() {
        let base = temp("projects");
        for (name, file) in
            [("rusty", "Cargo.toml"), ("gopher", "go.mod"), ("scripted", "package.json"), ("snake", "app.py")]
        {
            std::fs::create_dir_all(base.join(name)).unwrap();
            std::fs::write(base.join(name).join(file), "").unwrap();
        }
        std::fs::create_dir_all(base.join("notes")).unwrap();
        std::fs::create_dir_all(base.join(".hidden")).unwrap();
        std::fs::write(base.join(".hidden/app.py"), "").unwrap();
        let found: Vec<(String, Language)> =
            Project::found_in(&base).into_iter().map(|p| (p.name, p.language)).collect();
        assert_eq!(
            found,
            [
                ("gopher".to_string(), Language::Go),
                ("rusty".to_string(), Language::Rust),
                ("scripted".to_string(), Language::JavaScript),
                ("snake".to_string(), Language::Python),
            ]
        );
        match Project::at(&base.join("notes")) {
            Err(e @ Error::NotAProject(_)) => assert!(e.to_string().contains("notes: not a plugin project"), "{e}"),
            other => panic!("{other:?}"),
        }
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn install_renames_into_place_and_skips_what_is_already_there() {
        let dir = temp("install");
        install(&dir, "hello", b"\0asm one").unwrap();
        assert_eq!(std::fs::read(dir.join("hello.wasm")).unwrap(), b"\0asm one");
        let before = std::fs::metadata(dir.join("hello.wasm")).unwrap().modified().unwrap();
        install(&dir, "hello", b"\0asm one").unwrap();
        assert_eq!(std::fs::metadata(dir.join("hello.wasm")).unwrap().modified().unwrap(), before, "not rewritten");
        install(&dir, "hello", b"\0asm two").unwrap();
        assert_eq!(std::fs::read(dir.join("hello.wasm")).unwrap(), b"\0asm two");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1, "no partial file left behind");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
