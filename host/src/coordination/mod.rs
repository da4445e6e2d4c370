//! Several replicas of the host, and who reconciles what: one alone, a leader elected
//! among them, or the parents split between them. Both leader election and sharding
//! stand on one Lease mechanism (`lease`); [`ReplicaMode`] says which a replica does,
//! so that an invalid combination cannot be written.

pub mod leader;
mod lease;
pub mod shard;

use std::time::Duration;

use kube::Client;

use leader::Elector;
pub use lease::Error;
use shard::Member;

/// How a replica shares the work with the others.
#[derive(Clone, Debug, Default)]
pub enum ReplicaMode {
    /// Alone: it reconciles every parent, and holds no Lease.
    #[default]
    Single,
    /// Of the replicas sharing one Lease, only its holder reconciles; the others wait
    /// and take over.
    LeaderElected(LeaderElection),
    /// The replicas of a group split the parents: each reconciles the share a hash of
    /// their uid assigns it.
    Sharded(Sharding),
}

/// Leader election among the replicas sharing one Lease.
#[derive(Clone, Debug)]
pub struct LeaderElection {
    pub lease_namespace: String,
    pub lease_name: String,
    /// How long a Lease holds without renewal; a standby takes over within it.
    pub lease_duration: Duration,
    /// This replica's name in the Lease: unique per process.
    pub identity: String,
}

impl LeaderElection {
    /// This replica's candidate for the Lease.
    pub fn elector(&self, client: &Client) -> Elector {
        Elector::new(client.clone(), &self.lease_namespace, &self.lease_name, &self.identity, self.lease_duration)
    }
}

/// Replicas that split the parents between them (see [`shard`]): each holds its own
/// Lease, and reconciles the parents a hash of their uid assigns it.
#[derive(Clone, Debug)]
pub struct Sharding {
    pub lease_namespace: String,
    /// The group's name: its members' Leases carry it as a label, and their names
    /// start with it.
    pub group: String,
    /// How long a member's Lease holds without renewal; the others take its parents
    /// over after it, plus two retry periods.
    pub lease_duration: Duration,
    /// This replica's name: unique per process.
    pub identity: String,
}

impl Sharding {
    /// This replica's membership of the group.
    pub fn member(&self, client: &Client) -> Member {
        Member::new(client.clone(), &self.lease_namespace, &self.group, &self.identity, self.lease_duration)
    }
}

/// The hostname and process id: unique enough outside a Pod (where the Pod's name is
/// the identity).
pub fn default_identity() -> String {
    let host = std::fs::read_to_string("/etc/hostname").map_or_else(|_| "kubewasm".into(), |h| h.trim().to_string());
    format!("{host}-{}", std::process::id())
}
