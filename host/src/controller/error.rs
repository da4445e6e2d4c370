//! Why a controller could not start or a reconcile failed, and what each failure means
//! for the retry and for the Event recorded on the parent.

use std::time::Duration;

use crate::discovery::KindError;
use crate::plugin::{CallError, Refusal};
use crate::secrets::SecretError;

/// Why a controller could not start or a reconcile failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A kind the manifest names is not in the API server's discovery (a CRD not installed
    /// yet, an API the cluster does not serve). The host starts the controller once it is.
    #[error("{kind} is not served by the API server")]
    NotServed { kind: String },
    /// A kind the manifest names does not match what the API server serves: a plural or
    /// scope that differs.
    #[error("kind {kind} cannot be used: {message}")]
    UnknownKind { kind: String, message: String },
    /// Discovery of a kind the manifest names failed (the API server unreachable, say).
    #[error("kind {kind}: discovery failed: {source}")]
    Discovery { kind: String, source: kube::Error },
    /// The manifest cannot be run as a controller.
    #[error("plugin {plugin}: {message}")]
    Unsupported { plugin: String, message: String },
    /// The plugin call failed.
    #[error(transparent)]
    Call(CallError),
    /// The plugin's answer was refused; nothing was written.
    #[error(transparent)]
    Refused(#[from] Refusal),
    /// A write to the API server failed.
    #[error("{what}: {source}")]
    Write { what: String, source: kube::Error },
    /// The parent has no uid (never the case for objects from an API server).
    #[error("the parent has no metadata.uid")]
    MissingUid,
    /// The host is shutting down.
    #[error("stopped: {0}")]
    Stopped(#[source] tokio::task::JoinError),
    /// A watch has not completed its first list (the API server refuses it, or is
    /// unreachable); the reconcile is retried.
    #[error("caches not synced within {0:?}")]
    NotSynced(Duration),
    /// A Secret the plugin's settings name cannot be read (yet); the reconcile is retried.
    #[error("the plugin's settings: {0}")]
    Secret(#[from] SecretError),
}

impl From<KindError> for Error {
    fn from(e: KindError) -> Self {
        match e {
            KindError::NotServed { kind } => Self::NotServed { kind },
            KindError::Unknown { kind, message } => Self::UnknownKind { kind, message },
            KindError::Discovery { kind, source } => Self::Discovery { kind, source },
        }
    }
}

impl Error {
    pub(crate) fn write(what: &str) -> impl FnOnce(kube::Error) -> Self + '_ {
        move |source| Self::Write { what: what.to_string(), source }
    }

    /// Whether trying again without a change can succeed: not for a plugin that refused,
    /// panicked or answered badly (its inputs, or a new version, must change first).
    pub(crate) fn is_retryable(&self) -> bool {
        match self {
            Self::Call(e) => e.is_retryable(),
            Self::Refused(_) | Self::Unsupported { .. } | Self::MissingUid => false,
            _ => true,
        }
    }

    /// The Event reason recorded on the parent.
    pub(crate) fn reason(&self) -> &'static str {
        match self {
            Self::Call(CallError::Plugin { .. }) => "ReconcileError",
            Self::Call(CallError::Timeout { .. }) => "PluginTimeout",
            Self::Call(CallError::OutOfMemory { .. }) => "PluginOutOfMemory",
            Self::Call(_) => "PluginFailed",
            Self::Refused(_) => "ResponseRefused",
            Self::Write { .. } => "WriteFailed",
            Self::Secret(_) => "SettingsUnresolved",
            Self::UnknownKind { .. }
            | Self::Discovery { .. }
            | Self::NotServed { .. }
            | Self::Unsupported { .. }
            | Self::MissingUid
            | Self::Stopped(_)
            | Self::NotSynced(_) => "ReconcileFailed",
        }
    }
}
