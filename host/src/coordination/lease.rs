//! One `coordination.k8s.io/v1` Lease this process holds, how the Leases of others are
//! judged live, and the task that keeps them: the mechanism under leader election and
//! sharding alike.
//!
//! client-go's rules: the holder renews its Lease every retry period; a Lease is live
//! while it changes (its resourceVersion) within its duration, measured on the
//! observer's own clock, so clock skew between nodes does not matter; every write
//! carries the resourceVersion it read, so of two writers racing for one Lease the API
//! server refuses the second with 409 Conflict; a holder that cannot renew for two
//! thirds of the lease duration stops acting before anyone else may start.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, PostParams};
use kube::{Client, ResourceExt};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// Why the Leases could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The API server refused the request or could not be reached; the task retries
    /// every retry period. Persistent `Forbidden`: the host's RBAC lacks `get`, `list`,
    /// `create`, `update` or `delete` on `coordination.k8s.io` `leases` (see
    /// `kubewasm rbac`).
    #[error("{subject}: {source}")]
    Api { subject: String, source: kube::Error },
    /// The task panicked or was aborted before it could release or delete its Lease.
    #[error("the {task} task ended abnormally: {source}")]
    Task { task: &'static str, source: tokio::task::JoinError },
}

/// A Lease this process holds (or stands for), written under one identity.
#[derive(Clone)]
pub(crate) struct Holder {
    api: Api<Lease>,
    name: String,
    identity: String,
    duration: Duration,
    /// How often the Lease is renewed and the others' read: a quarter of the duration
    /// unless set.
    retry_period: Duration,
    /// What errors name: the Lease, or the group it belongs to.
    subject: String,
}

impl Holder {
    /// The Lease `namespace/name` held as `identity` for `duration`, rounded up to
    /// whole seconds as a Lease stores it.
    pub(crate) fn new(
        client: Client,
        namespace: &str,
        name: &str,
        identity: String,
        duration: Duration,
        subject: String,
    ) -> Self {
        let seconds = duration.as_secs() + u64::from(duration.subsec_nanos() > 0);
        let duration = Duration::from_secs(seconds.max(1));
        Self {
            api: Api::namespaced(client, namespace),
            name: name.to_string(),
            identity,
            duration,
            retry_period: duration / 4,
            subject,
        }
    }

    pub(crate) fn set_retry_period(&mut self, retry_period: Duration) {
        self.retry_period = retry_period;
    }

    pub(crate) fn retry_period(&self) -> Duration {
        self.retry_period
    }

    pub(crate) fn identity(&self) -> &str {
        &self.identity
    }

    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// The lease duration, in whole seconds.
    pub(crate) fn duration(&self) -> Duration {
        self.duration
    }

    fn error(&self, source: kube::Error) -> Error {
        Error::Api { subject: self.subject.clone(), source }
    }

    /// The Lease as the API server has it now.
    pub(crate) async fn get(&self) -> Result<Option<Lease>, Error> {
        self.api.get_opt(&self.name).await.map_err(|e| self.error(e))
    }

    /// The Leases of the namespace with `labels` (a label selector).
    pub(crate) async fn list(&self, labels: &str) -> Result<Vec<Lease>, Error> {
        let leases = self.api.list(&ListParams::default().labels(labels)).await.map_err(|e| self.error(e))?;
        Ok(leases.items)
    }

    /// Creates the Lease held by this identity (`current`: `None`), or writes `current`
    /// back held by it and renewed now, taking it over from another holder; `edit` adds
    /// what the caller keeps in it. `None` when another writer got there first (409):
    /// read again next round.
    pub(crate) async fn renew(
        &self,
        current: Option<Lease>,
        edit: impl FnOnce(&mut Lease),
    ) -> Result<Option<Lease>, Error> {
        let now = MicroTime(k8s_openapi::jiff::Timestamp::now());
        let created = current.is_none();
        let mut lease = current.unwrap_or_else(|| Lease {
            metadata: ObjectMeta { name: Some(self.name.clone()), ..ObjectMeta::default() },
            spec: Some(LeaseSpec { acquire_time: Some(now.clone()), ..LeaseSpec::default() }),
        });
        let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
        if !created && holder(spec) != Some(self.identity.as_str()) {
            spec.acquire_time = Some(now.clone());
            spec.lease_transitions = Some(spec.lease_transitions.unwrap_or(0).saturating_add(1));
        }
        spec.holder_identity = Some(self.identity.clone());
        spec.lease_duration_seconds = Some(i32::try_from(self.duration.as_secs()).unwrap_or(i32::MAX));
        spec.renew_time = Some(now);
        edit(&mut lease);
        let written = if created {
            self.api.create(&PostParams::default(), &lease).await
        } else {
            self.api.replace(&self.name, &PostParams::default(), &lease).await
        };
        self.unless_conflict(written)
    }

    /// Writes `lease` back as it is; `None` when another writer got there first.
    pub(crate) async fn replace(&self, lease: &Lease) -> Result<Option<Lease>, Error> {
        self.unless_conflict(self.api.replace(&self.name, &PostParams::default(), lease).await)
    }

    fn unless_conflict(&self, written: kube::Result<Lease>) -> Result<Option<Lease>, Error> {
        match written {
            Ok(lease) => Ok(Some(lease)),
            Err(kube::Error::Api(status)) if status.code == 409 => Ok(None),
            Err(e) => Err(self.error(e)),
        }
    }

    /// Deletes the Lease; already gone is not an error.
    pub(crate) async fn delete(&self) -> Result<(), Error> {
        match self.api.delete(&self.name, &DeleteParams::default()).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
            Err(e) => Err(self.error(e)),
        }
    }
}

/// Who holds the Lease of `spec`, if anyone.
pub(crate) fn holder(spec: &LeaseSpec) -> Option<&str> {
    spec.holder_identity.as_deref().filter(|h| !h.is_empty())
}

/// When each Lease was first seen at its current resourceVersion, on this process's
/// clock: a Lease unchanged for its whole duration has expired.
#[derive(Default)]
pub(crate) struct Sightings(HashMap<String, (String, Instant)>);

impl Sightings {
    /// Records `lease` as seen now; returns how long it has kept its resourceVersion.
    pub(crate) fn see(&mut self, lease: &Lease) -> Duration {
        let version = lease.resource_version().unwrap_or_default();
        let now = Instant::now();
        let (_, since) = self
            .0
            .entry(lease.name_any())
            .and_modify(|seen| {
                if seen.0 != version {
                    *seen = (version.clone(), now);
                }
            })
            .or_insert_with(|| (version.clone(), now));
        now.duration_since(*since)
    }

    /// Forgets the Leases `keep` refuses (those no longer listed).
    pub(crate) fn retain(&mut self, keep: impl Fn(&str) -> bool) {
        self.0.retain(|name, _| keep(name));
    }

    /// The holder of `lease` while it is alive: the Lease has changed within its
    /// duration (`default` when it names none).
    pub(crate) fn live_holder<'a>(&mut self, lease: &'a Lease, default: Duration) -> Option<&'a str> {
        let unchanged = self.see(lease);
        let spec = lease.spec.as_ref()?;
        let duration =
            spec.lease_duration_seconds.and_then(|s| u64::try_from(s).ok()).map_or(default, Duration::from_secs);
        holder(spec).filter(|_| unchanged < duration)
    }
}

/// When this process last renewed its Lease. It stops acting once two thirds of the
/// lease duration pass without a renewal: the others wait a whole duration from when
/// they see the last write, so it stops before anyone else may start.
pub(crate) struct Renewal {
    deadline: Duration,
    at: Option<Instant>,
}

impl Renewal {
    pub(crate) fn new(lease_duration: Duration) -> Self {
        Self { deadline: lease_duration * 2 / 3, at: None }
    }

    /// The Lease was written: the request was sent at `sent`.
    pub(crate) fn renewed(&mut self, sent: Instant) {
        self.at = Some(sent);
    }

    /// Another holds the Lease.
    pub(crate) fn lost(&mut self) {
        self.at = None;
    }

    /// Whether the last renewal still holds.
    pub(crate) fn held(&self) -> bool {
        self.at.is_some()
    }

    /// Until when the last renewal holds.
    pub(crate) fn valid_until(&self) -> Option<Instant> {
        self.at.map(|at| at + self.deadline)
    }

    /// True once, when the renew deadline has just passed: the Lease no longer holds.
    pub(crate) fn lapsed(&mut self) -> bool {
        let lapsed = self.at.is_some_and(|at| at.elapsed() >= self.deadline);
        if lapsed {
            self.at = None;
        }
        lapsed
    }
}

/// A Lease's keeper running on a background task, and how to stop it.
pub(crate) struct Task {
    name: &'static str,
    stop: oneshot::Sender<()>,
    handle: JoinHandle<Result<(), Error>>,
}

/// What a background task is handed: it resolves when the task is asked to stop.
pub(crate) type Shutdown = Pin<Box<dyn Future<Output = ()> + Send>>;

impl Task {
    /// Runs `run` on a task; the future it is handed resolves at [`Task::finish`].
    pub(crate) fn spawn<F>(name: &'static str, run: impl FnOnce(Shutdown) -> F) -> Self
    where
        F: Future<Output = Result<(), Error>> + Send + 'static,
    {
        let (stop, stopped) = oneshot::channel::<()>();
        let shutdown = Box::pin(async move {
            let _ = stopped.await;
        });
        Self { name, stop, handle: tokio::spawn(run(shutdown)) }
    }

    /// Asks the task to stop and waits for its end.
    pub(crate) async fn finish(self) -> Result<(), Error> {
        let _ = self.stop.send(());
        self.handle.await.map_err(|source| Error::Task { task: self.name, source })?
    }

    /// Ends the task at once, as a crash would.
    pub(crate) fn abort(self) {
        self.handle.abort();
    }
}
