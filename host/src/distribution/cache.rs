//! Pulled modules kept by their digest, beside the compiled plugins in the engine's cache
//! directory: `blobs/sha256/HEX`, the layout of an OCI image layout's blobs.
//!
//! The layer digest of a Wasm artifact is the SHA-256 of the component, the same hash the
//! compiled-plugin cache is keyed by (`HEX-COMPAT.cwasm`), so a module pulled once is
//! neither downloaded nor compiled again, whichever tag or registry names it.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use crate::plugin::digest;

/// The store of pulled modules under one directory.
#[derive(Clone, Debug)]
pub struct BlobCache {
    dir: PathBuf,
}

impl BlobCache {
    /// The store under `cache_dir` (the engine's cache directory).
    pub fn new(cache_dir: &Path) -> Self {
        Self { dir: cache_dir.join("blobs").join("sha256") }
    }

    /// The bytes of `digest` (`sha256:HEX`), if held and still of that digest: a file
    /// changed on disk is removed and reported missing, so that it is pulled again.
    pub fn get(&self, digest_ref: &str) -> Option<Vec<u8>> {
        let path = self.path(digest_ref)?;
        let bytes = std::fs::read(&path).ok()?;
        if format!("sha256:{}", digest(&bytes)) == digest_ref {
            Some(bytes)
        } else {
            tracing::warn!(path = %path.display(), "cached module does not match its digest; pulling it again");
            let _ = std::fs::remove_file(&path);
            None
        }
    }

    /// Keeps `bytes`, whose digest the caller checked, as `digest`. Written to a
    /// temporary file and renamed, so a reader never sees half a module.
    ///
    /// # Errors
    ///
    /// When the directory or file cannot be written, or `digest` is not `sha256:HEX`.
    pub fn put(&self, digest_ref: &str, bytes: &[u8]) -> std::io::Result<PathBuf> {
        let path = self.path(digest_ref).ok_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("not a sha256 digest: {digest_ref}"))
        })?;
        std::fs::create_dir_all(&self.dir)?;
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, &path)?;
        Ok(path)
    }

    /// Where `digest` is kept; `None` for anything but `sha256:` and 64 hex digits, so a
    /// digest from a registry never names a path outside the store.
    fn path(&self, digest_ref: &str) -> Option<PathBuf> {
        let hex = digest_ref.strip_prefix("sha256:")?;
        (hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()))
            .then(|| self.dir.join(hex))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_blob_is_kept_by_digest_and_a_changed_file_is_dropped() {
        let dir = std::env::temp_dir().join(format!("kubewasm-blob-cache-{}", std::process::id()));
        let cache = BlobCache::new(&dir);
        let bytes = b"\0asm component bytes";
        let key = format!("sha256:{}", digest(bytes));
        assert_eq!(cache.get(&key), None);
        let path = cache.put(&key, bytes).unwrap();
        assert_eq!(path, dir.join("blobs/sha256").join(digest(bytes)));
        assert_eq!(cache.get(&key).as_deref(), Some(&bytes[..]));

        std::fs::write(&path, b"tampered").unwrap();
        assert_eq!(cache.get(&key), None);
        assert!(!path.exists());

        assert!(cache.put("sha256:../../etc/passwd", bytes).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
