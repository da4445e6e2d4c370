//! The plugin directory on disk: `NAME.wasm` and its optional `NAME.toml`, scanned
//! and watched.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use notify::{RecommendedWatcher, RecursiveMode, Watcher};
use tokio::sync::mpsc;

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

/// Reads a file once it has stopped changing: its size and modification time must
/// hold still for `settle`. `None` while it is still being written (or vanished).
pub async fn read_settled(path: &Path, settle: Duration) -> Option<Vec<u8>> {
    let stamp = |p: &Path| std::fs::metadata(p).ok().map(|m| (m.len(), m.modified().unwrap_or(SystemTime::UNIX_EPOCH)));
    let before = stamp(path)?;
    tokio::time::sleep(settle).await;
    let bytes = tokio::fs::read(path).await.ok()?;
    (stamp(path)? == before && bytes.len() as u64 == before.0).then_some(bytes)
}

/// Watches `dir`; each burst of changes yields one message once `quiet` has
/// passed without another. Keep the watcher alive as long as messages are wanted.
///
/// # Errors
///
/// When the platform's file watcher cannot watch `dir`.
pub fn watch(dir: &Path, quiet: Duration) -> notify::Result<(RecommendedWatcher, mpsc::Receiver<()>)> {
    let (raw_tx, mut raw_rx) = mpsc::unbounded_channel::<()>();
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        if event.is_ok_and(|e| !e.kind.is_access()) {
            let _ = raw_tx.send(());
        }
    })?;
    watcher.watch(dir, RecursiveMode::NonRecursive)?;
    let (tx, rx) = mpsc::channel(1);
    tokio::spawn(async move {
        while raw_rx.recv().await.is_some() {
            // Fold the burst: wait until it has been quiet for `quiet`.
            while let Ok(Some(())) = tokio::time::timeout(quiet, raw_rx.recv()).await {}
            if tx.send(()).await.is_err() {
                break;
            }
        }
    });
    Ok((watcher, rx))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scan_pairs_plugins_with_their_settings() {
        let dir = std::env::temp_dir().join(format!("kubewasm-scan-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for f in ["a.wasm", "a.toml", "b.wasm", "c.toml", ".a.wasm", "notes.txt"] {
            std::fs::write(dir.join(f), b"x").unwrap();
        }
        let entries = scan(&dir).unwrap();
        assert_eq!(entries.keys().collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(entries["a"].settings.as_deref(), Some(dir.join("a.toml").as_path()));
        assert_eq!(entries["b"].settings, None);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[tokio::test]
    async fn a_file_still_growing_is_not_read() {
        let path = std::env::temp_dir().join(format!("kubewasm-settle-{}.wasm", std::process::id()));
        std::fs::write(&path, b"partial").unwrap();
        let writer = {
            let path = path.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(20)).await;
                std::fs::write(&path, b"partial and more").unwrap();
            })
        };
        assert_eq!(read_settled(&path, Duration::from_millis(100)).await, None);
        writer.await.unwrap();
        assert_eq!(read_settled(&path, Duration::from_millis(50)).await.as_deref(), Some(&b"partial and more"[..]));
        std::fs::remove_file(&path).unwrap();
    }
}
