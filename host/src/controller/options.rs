//! How a plugin's controller runs: concurrency, debounce, resync, its settings, and
//! the share of the parents this replica reconciles.

use std::time::Duration;

use serde_json::Value;

use super::warnings::Warnings;
use crate::coordination::shard::Shard;
use crate::metrics::Metrics;
use crate::secrets::Secrets;

/// How long to wait before calling a finalizing plugin again when it has not said
/// `finalized` and asked for no requeue.
const FINALIZING_REQUEUE: Duration = Duration::from_secs(5);

/// How a plugin's controller runs.
#[derive(Clone, Debug)]
pub struct Options {
    /// Reconciles of different parents running at once.
    pub concurrency: u16,
    /// Quiet period that folds bursts of events for one parent into one reconcile.
    pub debounce: Duration,
    /// Every parent is reconciled at least this often.
    pub resync: Duration,
    /// Delay before calling a finalizing plugin again that has not finalized.
    pub finalizing_requeue: Duration,
    /// The plugin's settings, handed to it as `config` (its Secret references resolved by
    /// `secrets` at each call).
    pub config: Value,
    /// The Secrets the settings name, followed: every parent is reconciled again when one
    /// changes.
    pub secrets: Secrets,
    /// Watch and reconcile in this namespace only (cluster-scoped kinds are
    /// watched cluster-wide regardless).
    pub namespace: Option<String>,
    /// Where reconciles, calls and writes are counted; share one across plugins.
    pub metrics: Metrics,
    /// Where the API server's warnings about each plugin's writes are kept; share one
    /// across plugins.
    pub warnings: Warnings,
    /// The parents this replica reconciles (all of them unless replicas share the work).
    pub shard: Shard,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            concurrency: 8,
            debounce: Duration::from_millis(50),
            resync: Duration::from_mins(10),
            finalizing_requeue: FINALIZING_REQUEUE,
            config: Value::Null,
            secrets: Secrets::none(),
            namespace: None,
            metrics: Metrics::default(),
            warnings: Warnings::default(),
            shard: Shard::whole(),
        }
    }
}
