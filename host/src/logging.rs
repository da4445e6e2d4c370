//! Log output on stderr: readable text by default, one JSON object per line for log
//! collectors, filtered by `RUST_LOG`.

use tracing_subscriber::EnvFilter;

/// The filter when `RUST_LOG` is unset or does not parse: the host at `info`, the
/// Kubernetes client's own chatter only when it warns.
pub const DEFAULT_FILTER: &str = "info,kube_runtime=warn,kube_client=warn";

/// How each log line is written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Format {
    /// For people: time, level, the spans (`plugin`, `object`) and the message.
    #[default]
    Text,
    /// For machines: one JSON object per line with `timestamp`, `level`, `fields`,
    /// `target`, the innermost `span` and every enclosing span in `spans`, so the
    /// `plugin` and `object` of a reconcile are on each of its lines.
    Json,
}

/// Installs the global subscriber. Call once, before anything logs.
///
/// # Errors
///
/// When a global subscriber is already installed.
pub fn init(format: Format) -> Result<(), tracing_subscriber::util::TryInitError> {
    use tracing_subscriber::util::SubscriberInitExt;
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER));
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    match format {
        Format::Text => builder.finish().try_init(),
        Format::Json => builder.json().with_current_span(true).with_span_list(true).finish().try_init(),
    }
}
