//! Leader election on a `coordination.k8s.io/v1` Lease: of the hosts sharing one
//! Lease, only the holder reconciles.
//!
//! The algorithm is client-go's: the holder renews the Lease every retry period; a
//! standby takes it when the holder gives it up or when the Lease has not changed
//! for a whole lease duration, measured on the standby's own clock (so clock skew
//! between nodes does not matter). Every write carries the `resourceVersion` it
//! read, so two hosts racing for one Lease cannot both win: the API server refuses
//! the second with 409 Conflict. A holder that cannot renew for two thirds of the
//! lease duration stops leading before anyone else may start.
//!
//! Why not the `kube-lease-manager` crate (0.13, which does support kube 5): its
//! standby sleeps until the previous holder's lease would have expired even when
//! that holder released it, so a clean handover (a rolling update) waits a whole
//! lease duration; and its holder keeps reporting leadership while renewals fail,
//! so a host cut off from the API server would go on reconciling after another
//! took over.
//!
//! ```no_run
//! # async fn example(client: kube::Client) -> Result<(), kubewasm::leader::Error> {
//! use std::time::Duration;
//! use kubewasm::leader::Elector;
//!
//! let elector = Elector::new(client, "kubewasm-system", "kubewasm", "pod-a", Duration::from_secs(15));
//! let leadership = elector.spawn();
//! let mut leading = leadership.subscribe();
//! while leading.changed().await.is_ok() {
//!     if *leading.borrow() { /* start the controllers */ } else { /* stop them */ }
//! }
//! leadership.release().await?;
//! # Ok(()) }
//! ```

use std::future::Future;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::Client;
use kube::api::{Api, ObjectMeta, PostParams};
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tracing::{debug, info, warn};

/// Why the elector could not read or write its Lease.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The API server refused the request or could not be reached; the elector
    /// retries every retry period. Persistent `Forbidden`: the host's RBAC lacks
    /// `get`, `create`, `update` on `coordination.k8s.io` `leases` (see `kubewasm rbac`).
    #[error("lease {namespace}/{name}: {source}")]
    Api { namespace: String, name: String, source: kube::Error },
    /// The elector task panicked or was aborted before it could release the Lease.
    #[error("the leader election task ended abnormally: {0}")]
    Task(#[from] tokio::task::JoinError),
}

/// One candidate for one Lease. Cheap to create; [`Elector::run`] or
/// [`Elector::spawn`] does the work.
#[derive(Clone)]
pub struct Elector {
    api: Api<Lease>,
    namespace: String,
    name: String,
    identity: String,
    lease_duration: Duration,
    retry_period: Duration,
}

impl Elector {
    /// A candidate named `identity` (unique per host process: the Pod name) for the
    /// Lease `namespace/lease_name`, created when missing. A standby takes over at
    /// most `lease_duration` (rounded up to whole seconds, as the Lease stores it)
    /// plus one retry period after the holder stopped renewing. The retry period
    /// defaults to a quarter of the lease duration.
    pub fn new(
        client: Client,
        namespace: &str,
        lease_name: &str,
        identity: impl Into<String>,
        lease_duration: Duration,
    ) -> Self {
        let seconds = lease_duration.as_secs() + u64::from(lease_duration.subsec_nanos() > 0);
        let lease_duration = Duration::from_secs(seconds.max(1));
        Self {
            api: Api::namespaced(client, namespace),
            namespace: namespace.to_string(),
            name: lease_name.to_string(),
            identity: identity.into(),
            lease_duration,
            retry_period: lease_duration / 4,
        }
    }

    /// How often the holder renews and a standby checks the Lease. Shorter than a
    /// third of the lease duration, or the holder may lose the Lease between renewals.
    #[must_use]
    pub fn with_retry_period(mut self, retry_period: Duration) -> Self {
        self.retry_period = retry_period;
        self
    }

    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// Campaigns until `shutdown` resolves, sending `true` on `leading` while this
    /// candidate holds the Lease and `false` otherwise (only changes are sent).
    /// On shutdown it gives up the Lease if it holds it, so a standby takes over at
    /// its next retry instead of waiting for the lease to expire.
    ///
    /// # Errors
    ///
    /// Only when releasing the Lease at shutdown fails; failures while campaigning
    /// are logged and retried.
    pub async fn run(self, leading: &watch::Sender<bool>, shutdown: impl Future<Output = ()>) -> Result<(), Error> {
        tokio::pin!(shutdown);
        let mut observed: Option<(String, Instant)> = None;
        let mut renewed: Option<Instant> = None;
        let renew_deadline = self.lease_duration * 2 / 3;
        loop {
            match self.try_acquire_or_renew(&mut observed).await {
                Ok(Round::Holding) => renewed = Some(Instant::now()),
                Ok(Round::HeldByAnother) => renewed = None,
                // A write lost a race: the next round reads who won. A holder keeps
                // leading meanwhile, within its renew deadline.
                Ok(Round::Contended) => {}
                Err(e) => warn!(error = %e, identity = %self.identity, "leader election: lease not read or written"),
            }
            if renewed.is_some_and(|at| at.elapsed() >= renew_deadline) {
                warn!(identity = %self.identity, "could not renew the lease in time; no longer leading");
                renewed = None;
            }
            self.announce(leading, renewed.is_some());
            tokio::select! {
                () = tokio::time::sleep(self.retry_period) => {}
                () = &mut shutdown => break,
            }
        }
        let released = self.release().await;
        self.announce(leading, false);
        released
    }

    /// Runs [`Elector::run`] on a background task.
    pub fn spawn(self) -> Leadership {
        let (sender, leading) = watch::channel(false);
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            self.run(&sender, async {
                let _ = stopped.await;
            })
            .await
        });
        Leadership { leading, stop, task }
    }

    fn announce(&self, leading: &watch::Sender<bool>, now: bool) {
        let changed = leading.send_if_modified(|was| std::mem::replace(was, now) != now);
        if changed {
            info!(identity = %self.identity, lease = %format!("{}/{}", self.namespace, self.name), leading = now, "leadership changed");
        }
    }

    fn api_error(&self, source: kube::Error) -> Error {
        Error::Api { namespace: self.namespace.clone(), name: self.name.clone(), source }
    }

    /// One round: create, renew or take the Lease when this candidate may.
    /// `observed` is the Lease's last seen resourceVersion and when it was first seen.
    async fn try_acquire_or_renew(&self, observed: &mut Option<(String, Instant)>) -> Result<Round, Error> {
        let now = MicroTime(k8s_openapi::jiff::Timestamp::now());
        let seconds = i32::try_from(self.lease_duration.as_secs()).unwrap_or(i32::MAX);
        let Some(mut lease) = self.api.get_opt(&self.name).await.map_err(|e| self.api_error(e))? else {
            let lease = Lease {
                metadata: ObjectMeta { name: Some(self.name.clone()), ..ObjectMeta::default() },
                spec: Some(LeaseSpec {
                    holder_identity: Some(self.identity.clone()),
                    lease_duration_seconds: Some(seconds),
                    acquire_time: Some(now.clone()),
                    renew_time: Some(now),
                    lease_transitions: Some(0),
                    ..LeaseSpec::default()
                }),
            };
            return match self.api.create(&PostParams::default(), &lease).await {
                Ok(created) => {
                    *observed = created.metadata.resource_version.map(|rv| (rv, Instant::now()));
                    Ok(Round::Holding)
                }
                Err(kube::Error::Api(status)) if status.code == 409 => Ok(Round::Contended),
                Err(e) => Err(self.api_error(e)),
            };
        };
        let version = lease.metadata.resource_version.clone().unwrap_or_default();
        if observed.as_ref().is_none_or(|(seen, _)| *seen != version) {
            *observed = Some((version, Instant::now()));
        }
        let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
        let holder = spec.holder_identity.as_deref().filter(|h| !h.is_empty());
        let mine = holder == Some(self.identity.as_str());
        let their_duration = spec
            .lease_duration_seconds
            .and_then(|s| u64::try_from(s).ok())
            .map_or(self.lease_duration, Duration::from_secs);
        let expired = holder.is_none() || observed.as_ref().is_some_and(|(_, at)| at.elapsed() >= their_duration);
        if !mine && !expired {
            return Ok(Round::HeldByAnother);
        }
        if !mine {
            debug!(identity = %self.identity, previous = ?holder, "taking the lease");
            spec.acquire_time = Some(now.clone());
            spec.lease_transitions = Some(spec.lease_transitions.unwrap_or(0).saturating_add(1));
        }
        spec.holder_identity = Some(self.identity.clone());
        spec.lease_duration_seconds = Some(seconds);
        spec.renew_time = Some(now);
        match self.api.replace(&self.name, &PostParams::default(), &lease).await {
            Ok(written) => {
                *observed = written.metadata.resource_version.map(|rv| (rv, Instant::now()));
                Ok(Round::Holding)
            }
            // Someone else wrote first: whoever it was, re-read next round.
            Err(kube::Error::Api(status)) if status.code == 409 => Ok(Round::Contended),
            Err(e) => Err(self.api_error(e)),
        }
    }

    /// Gives up the Lease if this candidate holds it (guarded by resourceVersion, so
    /// a Lease someone else took meanwhile is left alone).
    async fn release(&self) -> Result<(), Error> {
        let Some(mut lease) = self.api.get_opt(&self.name).await.map_err(|e| self.api_error(e))? else {
            return Ok(());
        };
        let Some(spec) = lease.spec.as_mut() else { return Ok(()) };
        if spec.holder_identity.as_deref() != Some(self.identity.as_str()) {
            return Ok(());
        }
        spec.holder_identity = None;
        spec.lease_duration_seconds = Some(1);
        spec.renew_time = Some(MicroTime(k8s_openapi::jiff::Timestamp::now()));
        match self.api.replace(&self.name, &PostParams::default(), &lease).await {
            Ok(_) => {
                info!(identity = %self.identity, "lease released");
                Ok(())
            }
            Err(kube::Error::Api(status)) if status.code == 409 => Ok(()),
            Err(e) => Err(self.api_error(e)),
        }
    }
}

/// What one round of campaigning found.
enum Round {
    /// This candidate holds the Lease (created, renewed or taken).
    Holding,
    /// Another candidate holds the Lease and it has not expired.
    HeldByAnother,
    /// A write was refused with 409: another candidate wrote the Lease first.
    Contended,
}

/// A running [`Elector`]: whether it leads, and how to stop it.
pub struct Leadership {
    leading: watch::Receiver<bool>,
    stop: oneshot::Sender<()>,
    task: JoinHandle<Result<(), Error>>,
}

impl Leadership {
    /// A receiver of "this host leads" that sees every change.
    pub fn subscribe(&self) -> watch::Receiver<bool> {
        self.leading.clone()
    }

    pub fn is_leader(&self) -> bool {
        *self.leading.borrow()
    }

    /// Stops campaigning and gives up the Lease if held, so a standby takes over
    /// at its next retry: what a host does on SIGTERM, after its controllers stopped.
    ///
    /// # Errors
    ///
    /// When the Lease could not be released (a standby then waits for it to expire).
    pub async fn release(self) -> Result<(), Error> {
        let _ = self.stop.send(());
        self.task.await?
    }

    /// Stops campaigning without giving up the Lease, as a crash would: a standby
    /// takes over only once the lease expires.
    pub fn abort(self) {
        self.task.abort();
    }
}
