//! The state the request handlers and the background tasks share.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::{Notify, watch};

use super::cluster::Cluster;
use super::faults::{Injector, Versions};
use super::pki::Pki;
use super::tokens::Signer;

/// How many write requests [`Shared::recent_writes`] keeps.
const RECENT_WRITES: usize = 32;

/// State shared by the request handlers and the background tasks.
pub(crate) struct Shared {
    cluster: Mutex<Cluster>,
    writes: AtomicU64,
    /// The last [`RECENT_WRITES`] write requests, for a test to say which write it did
    /// not expect.
    recent_writes: Mutex<VecDeque<String>>,
    /// Watches served, by resource (`resource[.group]`).
    watches: Mutex<BTreeMap<String, Watches>>,
    pub gc: Notify,
    pub persist: Notify,
    pub bookmark_interval: Duration,
    pub shutdown: watch::Receiver<bool>,
    pub address: String,
    /// Faults injected on purpose (none unless configured).
    pub faults: Arc<Injector>,
    /// Whether the `WatchList` feature is on (`Options::watch_list`).
    pub watch_list: bool,
    pub credentials: Credentials,
}

/// What authentication reads: the CA client certificates must come from, the key
/// service-account tokens are signed with, and whether the server speaks plain HTTP (then a
/// request without credentials is the administrator's, as on kube-apiserver's old insecure
/// port).
pub(crate) struct Credentials {
    pub pki: Pki,
    pub signer: Signer,
    pub plain_http: bool,
}

impl Shared {
    pub(crate) fn new(
        cluster: Cluster,
        bookmark_interval: Duration,
        shutdown: watch::Receiver<bool>,
        address: String,
        faults: Injector,
        watch_list: bool,
        credentials: Credentials,
    ) -> Shared {
        Shared {
            cluster: Mutex::new(cluster),
            writes: AtomicU64::new(0),
            recent_writes: Mutex::new(VecDeque::with_capacity(RECENT_WRITES)),
            watches: Mutex::default(),
            gc: Notify::new(),
            persist: Notify::new(),
            bookmark_interval,
            shutdown,
            address,
            faults: Arc::new(faults),
            watch_list,
            credentials,
        }
    }

    /// Counts a write request, `what` naming it (method, path and query).
    pub(crate) fn note_write(&self, what: String) {
        self.writes.fetch_add(1, Ordering::SeqCst);
        let mut recent = self.recent_writes.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if recent.len() == RECENT_WRITES {
            recent.pop_front();
        }
        recent.push_back(what);
    }

    /// Write requests so far, refused ones included.
    pub(crate) fn writes(&self) -> u64 {
        self.writes.load(Ordering::SeqCst)
    }

    /// The last write requests, oldest first.
    pub(crate) fn recent_writes(&self) -> Vec<String> {
        self.recent_writes.lock().unwrap_or_else(std::sync::PoisonError::into_inner).iter().cloned().collect()
    }

    fn watch_counts(&self) -> MutexGuard<'_, BTreeMap<String, Watches>> {
        self.watches.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Counts a watch of `resource` (`resource[.group]`) opened; it counts as open until
    /// the guard is dropped with the watch's stream.
    pub(crate) fn watch_opened(self: &Arc<Self>, resource: String) -> WatchGuard {
        let mut counts = self.watch_counts();
        let count = counts.entry(resource.clone()).or_default();
        count.opened += 1;
        count.open += 1;
        WatchGuard { shared: self.clone(), resource }
    }

    /// Watches served so far and open now, by resource.
    pub(crate) fn watches(&self) -> BTreeMap<String, Watches> {
        self.watch_counts().clone()
    }

    /// The cluster; a handler that panicked while holding it does not make it unusable.
    pub(crate) fn lock(&self) -> MutexGuard<'_, Cluster> {
        self.cluster.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// How many watches of one resource were opened, and how many are open now.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Watches {
    pub opened: u64,
    pub open: u64,
}

/// One open watch, counted until it is dropped.
pub(crate) struct WatchGuard {
    shared: Arc<Shared>,
    resource: String,
}

impl Drop for WatchGuard {
    fn drop(&mut self) {
        if let Some(count) = self.shared.watch_counts().get_mut(&self.resource) {
            count.open = count.open.saturating_sub(1);
        }
    }
}

impl Versions for Shared {
    fn current(&self) -> u64 {
        self.lock().store.current_rv()
    }

    fn oldest(&self) -> u64 {
        self.lock().store.oldest_watchable()
    }
}
