//! A plugin project's sources: every file under its directory but what tools and
//! editors keep there (build output, dependencies, virtualenvs, caches, version
//! control, temporaries, components); watched for changes and fingerprinted, so that a
//! burst of saves builds once and a save that changed nothing builds not at all.

use std::collections::BTreeMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use notify::event::{AccessKind, AccessMode, EventKind, ModifyKind, RenameMode};
use notify::{RecommendedWatcher, RecursiveMode, Watcher};
use tokio::sync::mpsc;

/// Directories whose files are not sources: build output, dependencies, caches.
const NOT_SOURCES: &[&str] = &["target", "node_modules", "__pycache__", "venv"];

/// Whether `path` (under `root`) is a source: not in a hidden or [`NOT_SOURCES`]
/// directory, not hidden itself, not an editor's backup or probe, not a component.
pub fn is_source(root: &Path, path: &Path) -> bool {
    let Ok(relative) = path.strip_prefix(root) else { return false };
    let mut parts = relative.components().map(|c| c.as_os_str().to_string_lossy()).peekable();
    while let Some(part) = parts.next() {
        let last = parts.peek().is_none();
        if part.starts_with('.') || (!last && NOT_SOURCES.contains(&part.as_ref())) {
            return false;
        }
        if last {
            // vim's backup (`x~`), swap (`.x.swp`, hidden) and the file it writes to
            // probe a directory (`4913`); emacs's autosave (`#x#`); JetBrains' safe
            // write (`x___jb_tmp___`); built components.
            let temporary = part.ends_with('~') || part == "4913" || part.starts_with('#') || part.ends_with("___");
            return !temporary && !part.ends_with(".wasm");
        }
    }
    false
}

/// Watches the sources under `root`; each event that may have changed one (a source
/// written and closed, renamed into place or removed) sends the path it names, and for a
/// removal `true`. Keep the watcher alive as long as messages are wanted.
///
/// # Errors
///
/// When the platform's file watcher cannot watch `root`.
pub fn watch(root: &Path) -> notify::Result<(RecommendedWatcher, mpsc::UnboundedReceiver<(PathBuf, bool)>)> {
    let (tx, rx) = mpsc::unbounded_channel();
    let base = root.to_path_buf();
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        let Ok(event) = event else { return };
        let removed = matches!(event.kind, EventKind::Remove(_));
        if let Some(path) = changed(&event).filter(|p| is_source(&base, p)) {
            let _ = tx.send((path.to_path_buf(), removed));
        }
    })?;
    watcher.watch(root, RecursiveMode::Recursive)?;
    Ok((watcher, rx))
}

/// The file whose content an event may have changed: one written and closed, renamed
/// into place (not the name it left: an editor moving the old file aside before it
/// writes the new one), or removed. Where the platform does not report that a writer
/// closed a file (only Linux does), a write counts at once.
fn changed(event: &notify::Event) -> Option<&Path> {
    let closes = cfg!(any(target_os = "linux", target_os = "android"));
    let path = match event.kind {
        EventKind::Modify(ModifyKind::Name(RenameMode::Both)) => event.paths.last(),
        EventKind::Modify(ModifyKind::Data(_) | ModifyKind::Any) if !closes => event.paths.first(),
        EventKind::Access(AccessKind::Close(AccessMode::Write))
        | EventKind::Remove(_)
        | EventKind::Modify(ModifyKind::Name(RenameMode::To | RenameMode::Any)) => event.paths.first(),
        _ => None,
    };
    path.map(PathBuf::as_path)
}

/// Whether a batch of [`watch`]'s messages changed a source: a removal, or a file that
/// is still there (an editor's or `sed -i`'s temporary file, written then renamed over
/// the source, is gone by the time the batch is read, and the rename is in the batch).
pub fn changed_any(batch: &[(PathBuf, bool)]) -> bool {
    batch.iter().any(|(path, removed)| *removed || path.exists())
}

/// What the sources under `root` are now: each one's path, length and modification
/// time. Two equal fingerprints mean nothing to build again.
pub fn fingerprint(root: &Path) -> u64 {
    let mut files = BTreeMap::new();
    collect(root, root, &mut files);
    let mut hasher = DefaultHasher::new();
    files.hash(&mut hasher);
    hasher.finish()
}

/// Copies the sources under `root` into the directory `to`, made beside it and renamed
/// into place, so that it is whole once it exists; nothing when it exists already. What
/// one version of a development component reads: a later save does not change it.
///
/// # Errors
///
/// When a source cannot be copied or `to` cannot be made.
pub fn snapshot(root: &Path, to: &Path) -> std::io::Result<()> {
    if to.is_dir() {
        return Ok(());
    }
    let mut files = BTreeMap::new();
    collect(root, root, &mut files);
    let partial = to.with_extension("partial");
    let _ = std::fs::remove_dir_all(&partial);
    std::fs::create_dir_all(&partial)?;
    for path in files.keys() {
        let Ok(relative) = path.strip_prefix(root) else { continue };
        let copy = partial.join(relative);
        if let Some(parent) = copy.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::copy(path, &copy)?;
    }
    std::fs::rename(&partial, to)
}

fn collect(root: &Path, dir: &Path, files: &mut BTreeMap<PathBuf, (u64, SystemTime)>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(meta) = entry.metadata() else { continue };
        if meta.is_dir() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if !name.starts_with('.') && !NOT_SOURCES.contains(&name.as_ref()) {
                collect(root, &path, files);
            }
        } else if is_source(root, &path) {
            files.insert(path, (meta.len(), meta.modified().unwrap_or(SystemTime::UNIX_EPOCH)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_are_what_the_author_edits() {
        let root = Path::new("/p");
        for source in ["/p/src/lib.rs", "/p/Cargo.toml", "/p/app.ts", "/p/crd.yaml", "/p/pkg/util.go", "/p/main.go"] {
            assert!(is_source(root, Path::new(source)), "{source}");
        }
        for other in [
            "/p/target/wasm32-wasip2/plugin-dev/x.wasm",
            "/p/node_modules/@kubewasm/sdk/index.js",
            "/p/.git/index",
            "/p/.venv/lib/python3.11/site.py",
            "/p/__pycache__/app.cpython-311.pyc",
            "/p/src/.lib.rs.swp",
            "/p/src/lib.rs~",
            "/p/4913",
            "/p/main.go___jb_old___",
            "/p/hello.wasm",
            "/elsewhere/lib.rs",
        ] {
            assert!(!is_source(root, Path::new(other)), "{other}");
        }
    }

    #[test]
    fn a_fingerprint_changes_with_a_source_and_not_with_build_output() {
        let root = std::env::temp_dir().join(format!("kubewasm-sources-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::create_dir_all(root.join("target")).unwrap();
        std::fs::write(root.join("src/lib.rs"), "fn a() {}").unwrap();
        let before = fingerprint(&root);
        std::fs::write(root.join("target/out.wasm"), "built").unwrap();
        std::fs::write(root.join("plugin.wasm"), "built").unwrap();
        assert_eq!(fingerprint(&root), before, "build output is not a source");
        std::fs::write(root.join("src/lib.rs"), "fn a() { 1; }").unwrap();
        assert_ne!(fingerprint(&root), before, "an edited source is");
        std::fs::remove_dir_all(&root).unwrap();
    }
}

#[cfg(all(test, any(target_os = "linux", target_os = "android")))]
mod watch_tests {
    use super::*;
    use std::time::Duration;

    /// The messages that arrive within `within` of each other.
    async fn batch(changes: &mut mpsc::UnboundedReceiver<(PathBuf, bool)>, within: Duration) -> Vec<(PathBuf, bool)> {
        let mut batch = Vec::new();
        while let Ok(Some(message)) = tokio::time::timeout(within, changes.recv()).await {
            batch.push(message);
        }
        batch
    }

    #[tokio::test]
    async fn a_save_by_rename_is_one_change_of_the_source_and_a_temporary_alone_is_none() {
        let root = std::env::temp_dir().join(format!("kubewasm-watch-sources-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(root.join("main.go"), "package main").unwrap();
        let (_watcher, mut changes) = watch(&root).unwrap();

        // `sed -i`: a temporary written beside it, then renamed over it.
        std::fs::write(root.join("sedAb12Cd"), "package main // edited").unwrap();
        std::fs::rename(root.join("sedAb12Cd"), root.join("main.go")).unwrap();
        let saved = batch(&mut changes, Duration::from_millis(300)).await;
        assert!(saved.iter().any(|(p, _)| p.ends_with("main.go")), "{saved:?}");
        assert!(changed_any(&saved));

        // vim: the source moved aside, written anew, the backup removed.
        std::fs::rename(root.join("main.go"), root.join("main.go~")).unwrap();
        std::fs::write(root.join("main.go"), "package main // again").unwrap();
        std::fs::remove_file(root.join("main.go~")).unwrap();
        let saved = batch(&mut changes, Duration::from_millis(300)).await;
        assert!(saved.iter().all(|(p, _)| p.ends_with("main.go")), "only the source: {saved:?}");
        assert!(changed_any(&saved));

        // Build output, and a temporary renamed away before the batch is read.
        std::fs::create_dir_all(root.join("target")).unwrap();
        std::fs::write(root.join("target/out.wasm"), "built").unwrap();
        std::fs::write(root.join("draft"), "x").unwrap();
        std::fs::rename(root.join("draft"), root.join(".draft")).unwrap();
        let written = batch(&mut changes, Duration::from_millis(300)).await;
        assert_eq!(written.len(), 1, "the temporary only: {written:?}");
        assert!(!changed_any(&written), "gone by the time it is read");

        std::fs::remove_file(root.join("main.go")).unwrap();
        let removed = batch(&mut changes, Duration::from_millis(300)).await;
        assert!(changed_any(&removed), "a removed source is a change: {removed:?}");
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_snapshot_holds_the_sources_as_they_were_and_nothing_else() {
        let root = std::env::temp_dir().join(format!("kubewasm-snapshot-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let project = root.join("project");
        for (file, text) in
            [("app.py", "v1"), ("lib/util.py", "u"), (".venv/bin/python", "x"), ("__pycache__/a.pyc", "c")]
        {
            std::fs::create_dir_all(project.join(file).parent().unwrap()).unwrap();
            std::fs::write(project.join(file), text).unwrap();
        }
        let copy = root.join("copies/0001");
        snapshot(&project, &copy).unwrap();
        assert_eq!(std::fs::read_to_string(copy.join("app.py")).unwrap(), "v1");
        assert_eq!(std::fs::read_to_string(copy.join("lib/util.py")).unwrap(), "u");
        assert!(!copy.join(".venv").exists() && !copy.join("__pycache__").exists(), "sources only");
        std::fs::write(project.join("app.py"), "v2").unwrap();
        snapshot(&project, &copy).unwrap();
        assert_eq!(std::fs::read_to_string(copy.join("app.py")).unwrap(), "v1", "a version's copy never changes");
        assert_eq!(std::fs::read_dir(root.join("copies")).unwrap().count(), 1, "no partial copy left behind");
        std::fs::remove_dir_all(&root).unwrap();
    }
}
