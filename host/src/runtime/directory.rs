//! The plugin directory on disk: `NAME.wasm` and its optional `NAME.toml`, scanned,
//! and watched without a fixed wait.
//!
//! A file is read as soon as it is complete: when its writer closes it (`cp`, a build
//! tool, an editor writing in place), when it is renamed into place, or when it appears
//! at once as a hard link (cargo's output). While a writer has it open it is not read;
//! a file read before its first write was seen (the two events race) fails to load,
//! and is read again when its writer closes it.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use notify::event::{AccessKind, AccessMode, EventKind, ModifyKind};
use notify::{RecommendedWatcher, RecursiveMode, Watcher};
use tokio::sync::mpsc;
use tokio::time::Instant;

/// How long a file being written may go without an event before it is read anyway.
/// Where the platform reports that a writer closed a file (Linux: inotify), only a
/// writer that holds a file open and pauses waits for this; where it does not, every
/// file written in place does.
const WRITE_BACKSTOP: Duration = if cfg!(any(target_os = "linux", target_os = "android")) {
    Duration::from_secs(2)
} else {
    Duration::from_millis(200)
};

/// One plugin's files.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// `NAME` of `NAME.wasm`.
    pub stem: String,
    pub wasm: PathBuf,
    /// `NAME.toml`, if present.
    pub settings: Option<PathBuf>,
}

/// The plugin files of `dir`, by stem. Hidden files (editors' and copiers'
/// temporaries) are ignored.
///
/// # Errors
///
/// When `dir` cannot be read.
pub fn scan(dir: &Path) -> std::io::Result<BTreeMap<String, Entry>> {
    let mut entries = BTreeMap::new();
    for item in std::fs::read_dir(dir)? {
        let path = item?.path();
        let (Some(stem), Some(ext)) = (path.file_stem().and_then(|s| s.to_str()), path.extension()) else { continue };
        if ext == "wasm" && !stem.starts_with('.') {
            let settings = path.with_extension("toml");
            entries.insert(
                stem.to_string(),
                Entry { stem: stem.to_string(), settings: settings.exists().then_some(settings), wasm: path },
            );
        }
    }
    Ok(entries)
}

/// What identifies one version of a file without reading it: its length, modification
/// time and (on Unix) inode. A file replaced, rewritten or linked anew has another.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stamp {
    len: u64,
    modified: SystemTime,
    inode: u64,
}

impl Stamp {
    /// The stamp of the file at `path` now; `None` when it is gone.
    pub fn of(path: &Path) -> Option<Stamp> {
        let meta = std::fs::metadata(path).ok()?;
        #[cfg(unix)]
        let inode = std::os::unix::fs::MetadataExt::ino(&meta);
        #[cfg(not(unix))]
        let inode = 0;
        Some(Stamp { len: meta.len(), modified: meta.modified().unwrap_or(SystemTime::UNIX_EPOCH), inode })
    }

    /// Whether the file was empty: created, not yet written.
    pub fn is_empty(self) -> bool {
        self.len == 0
    }
}

/// Watches `dir`, sending each event on one of its files except the host's own reads.
/// Keep the watcher alive as long as events are wanted.
///
/// # Errors
///
/// When the platform's file watcher cannot watch `dir`.
pub fn watch(dir: &Path) -> notify::Result<(RecommendedWatcher, mpsc::UnboundedReceiver<notify::Event>)> {
    let (tx, rx) = mpsc::unbounded_channel();
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| match event {
        Ok(event) if !is_read(event.kind) => {
            let _ = tx.send(event);
        }
        Ok(_) => {}
        Err(e) => tracing::warn!(error = %e, "plugin directory watcher"),
    })?;
    watcher.watch(dir, RecursiveMode::NonRecursive)?;
    Ok((watcher, rx))
}

/// An event that changes nothing: a file opened, or closed after reading (the host's
/// own reads make these).
fn is_read(kind: EventKind) -> bool {
    matches!(kind, EventKind::Access(access) if !matches!(access, AccessKind::Close(AccessMode::Write)))
}

/// The files a writer holds open: seen written to, not yet closed, renamed over or
/// removed. They are not read until then.
#[derive(Debug, Default)]
pub struct Writes {
    /// Each file being written, with the time of its last event.
    open: HashMap<PathBuf, Instant>,
}

impl Writes {
    /// Takes `event` into account; returns the paths it names.
    pub fn note(&mut self, event: notify::Event) -> Vec<PathBuf> {
        let now = Instant::now();
        for path in &event.paths {
            match event.kind {
                EventKind::Modify(ModifyKind::Data(_) | ModifyKind::Any) => {
                    self.open.insert(path.clone(), now);
                }
                // Complete: closed after writing, renamed into place, or gone.
                EventKind::Access(AccessKind::Close(AccessMode::Write))
                | EventKind::Modify(ModifyKind::Name(_))
                | EventKind::Remove(_) => {
                    self.open.remove(path);
                }
                _ => {}
            }
        }
        event.paths
    }

    /// Whether a writer holds `path` open.
    pub fn writing(&self, path: &Path) -> bool {
        self.open.contains_key(path)
    }

    /// When the earliest open file will have gone [`WRITE_BACKSTOP`] without an event.
    pub fn backstop(&self) -> Option<Instant> {
        self.open.values().min().map(|last| *last + WRITE_BACKSTOP)
    }

    /// Forgets the writes that have gone [`WRITE_BACKSTOP`] without an event; returns
    /// their files, to be read now.
    pub fn expire(&mut self, now: Instant) -> Vec<PathBuf> {
        let quiet: Vec<PathBuf> =
            self.open.iter().filter(|(_, last)| now >= **last + WRITE_BACKSTOP).map(|(p, _)| p.clone()).collect();
        for path in &quiet {
            self.open.remove(path);
        }
        quiet
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;

    fn temp_dir(test: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("kubewasm-dir-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn scan_pairs_plugins_with_their_settings() {
        let dir = temp_dir("scan");
        for f in ["a.wasm", "a.toml", "b.wasm", "c.toml", ".a.wasm", "notes.txt"] {
            std::fs::write(dir.join(f), b"x").unwrap();
        }
        let entries = scan(&dir).unwrap();
        assert_eq!(entries.keys().collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(entries["a"].settings.as_deref(), Some(dir.join("a.toml").as_path()));
        assert_eq!(entries["b"].settings, None);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Notes every event that arrives within `within` of the last one.
    async fn drain(events: &mut mpsc::UnboundedReceiver<notify::Event>, writes: &mut Writes, within: Duration) {
        while let Ok(Some(event)) = tokio::time::timeout(within, events.recv()).await {
            writes.note(event);
        }
    }

    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn a_file_open_for_writing_is_not_read_until_its_writer_closes_it() {
        let dir = temp_dir("writes");
        let path = dir.join("a.wasm");
        let (_watcher, mut events) = watch(&dir).unwrap();
        let mut writes = Writes::default();

        let mut file = std::fs::File::create(&path).unwrap();
        file.write_all(b"partial").unwrap();
        file.flush().unwrap();
        drain(&mut events, &mut writes, Duration::from_millis(200)).await;
        assert!(writes.writing(&path), "written, still open");
        file.write_all(b" and the rest").unwrap();
        drop(file);
        drain(&mut events, &mut writes, Duration::from_millis(200)).await;
        assert!(!writes.writing(&path), "the close says it is complete");

        // Renamed into place: complete at once, whatever happened to the name before.
        let tmp = dir.join(".a.wasm.tmp");
        std::fs::write(&tmp, b"whole").unwrap();
        writes.open.insert(path.clone(), Instant::now());
        std::fs::rename(&tmp, &path).unwrap();
        drain(&mut events, &mut writes, Duration::from_millis(200)).await;
        assert!(!writes.writing(&path), "renamed into place: complete");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_write_without_a_close_is_read_after_the_backstop() {
        let mut writes = Writes::default();
        let path = PathBuf::from("/plugins/a.wasm");
        let event = notify::Event::new(EventKind::Modify(ModifyKind::Data(notify::event::DataChange::Any)))
            .add_path(path.clone());
        assert_eq!(writes.note(event), std::slice::from_ref(&path));
        assert!(writes.writing(&path));
        let backstop = writes.backstop().unwrap();
        assert!(writes.expire(backstop - Duration::from_millis(1)).is_empty(), "not yet");
        assert_eq!(writes.expire(backstop), std::slice::from_ref(&path));
        assert!(!writes.writing(&path));
    }

    #[test]
    fn the_hosts_own_reads_are_not_changes() {
        assert!(is_read(EventKind::Access(AccessKind::Open(AccessMode::Any))));
        assert!(is_read(EventKind::Access(AccessKind::Close(AccessMode::Read))));
        assert!(!is_read(EventKind::Access(AccessKind::Close(AccessMode::Write))));
        assert!(!is_read(EventKind::Modify(ModifyKind::Name(notify::event::RenameMode::To))));
    }
}
