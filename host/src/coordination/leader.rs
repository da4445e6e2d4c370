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
//! # async fn example(client: kube::Client) -> Result<(), kubewasm::coordination::Error> {
//! use std::time::Duration;
//! use kubewasm::coordination::leader::Elector;
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

use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::Client;
use tokio::sync::watch;
use tokio::time::Instant;
use tracing::{debug, info, warn};

use super::lease::{self, Error, Holder, Renewal, Sightings, Task};

/// One candidate for one Lease. Cheap to create; [`Elector::run`] or
/// [`Elector::spawn`] does the work.
#[derive(Clone)]
pub struct Elector {
    lease: Holder,
    namespace: String,
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
        let subject = format!("lease {namespace}/{lease_name}");
        let lease = Holder::new(client, namespace, lease_name, identity.into(), lease_duration, subject);
        Self { lease, namespace: namespace.to_string() }
    }

    /// How often the holder renews and a standby checks the Lease. Shorter than a
    /// third of the lease duration, or the holder may lose the Lease between renewals.
    #[must_use]
    pub fn with_retry_period(mut self, retry_period: Duration) -> Self {
        self.lease.set_retry_period(retry_period);
        self
    }

    pub fn identity(&self) -> &str {
        self.lease.identity()
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
        let mut sightings = Sightings::default();
        let mut renewal = Renewal::new(self.lease.duration());
        loop {
            match self.try_acquire_or_renew(&mut sightings).await {
                Ok(Round::Holding) => renewal.renewed(Instant::now()),
                Ok(Round::HeldByAnother) => renewal.lost(),
                // A write lost a race: the next round reads who won. A holder keeps
                // leading meanwhile, within its renew deadline.
                Ok(Round::Contended) => {}
                Err(e) => warn!(error = %e, identity = %self.identity(), "leader election: lease not read or written"),
            }
            if renewal.lapsed() {
                warn!(identity = %self.identity(), "could not renew the lease in time; no longer leading");
            }
            self.announce(leading, renewal.held());
            tokio::select! {
                () = tokio::time::sleep(self.lease.retry_period()) => {}
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
        let task = Task::spawn("leader election", |shutdown| async move { self.run(&sender, shutdown).await });
        Leadership { leading, task }
    }

    fn announce(&self, leading: &watch::Sender<bool>, now: bool) {
        let changed = leading.send_if_modified(|was| std::mem::replace(was, now) != now);
        if changed {
            let lease = format!("{}/{}", self.namespace, self.lease.name());
            info!(identity = %self.identity(), lease = %lease, leading = now, "leadership changed");
        }
    }

    /// One round: create, renew or take the Lease when this candidate may.
    async fn try_acquire_or_renew(&self, sightings: &mut Sightings) -> Result<Round, Error> {
        let current = self.lease.get().await?;
        if let Some(lease) = &current {
            let live = sightings.live_holder(lease, self.lease.duration());
            match live {
                Some(holder) if holder != self.identity() => return Ok(Round::HeldByAnother),
                Some(_) => {}
                None => {
                    let previous = lease.spec.as_ref().and_then(lease::holder);
                    if previous != Some(self.identity()) {
                        debug!(identity = %self.identity(), previous = ?previous, "taking the lease");
                    }
                }
            }
        }
        let written = self
            .lease
            .renew(current, |lease| {
                let spec = lease.spec.get_or_insert_default();
                spec.lease_transitions.get_or_insert(0);
            })
            .await?;
        Ok(match written {
            Some(written) => {
                sightings.see(&written);
                Round::Holding
            }
            // Someone else wrote first: whoever it was, re-read next round.
            None => Round::Contended,
        })
    }

    /// Gives up the Lease if this candidate holds it (guarded by resourceVersion, so
    /// a Lease someone else took meanwhile is left alone).
    async fn release(&self) -> Result<(), Error> {
        let Some(mut lease) = self.lease.get().await? else { return Ok(()) };
        let Some(spec) = lease.spec.as_mut() else { return Ok(()) };
        if spec.holder_identity.as_deref() != Some(self.identity()) {
            return Ok(());
        }
        spec.holder_identity = None;
        spec.lease_duration_seconds = Some(1);
        spec.renew_time = Some(MicroTime(k8s_openapi::jiff::Timestamp::now()));
        if self.lease.replace(&lease).await?.is_some() {
            info!(identity = %self.identity(), "lease released");
        }
        Ok(())
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
    task: Task,
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
        self.task.finish().await
    }

    /// Stops campaigning without giving up the Lease, as a crash would: a standby
    /// takes over only once the lease expires.
    pub fn abort(self) {
        self.task.abort();
    }
}
