//! Log output on stderr: readable text by default, one JSON object per line for log
//! collectors, filtered by `RUST_LOG`.

use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::MakeWriter;

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

/// Installs the global subscriber, writing to stderr. Call once, before anything logs.
///
/// # Errors
///
/// When a global subscriber is already installed.
pub fn init(format: Format) -> Result<(), tracing_subscriber::util::TryInitError> {
    use std::io::IsTerminal;
    use tracing_subscriber::util::SubscriberInitExt;
    subscriber(format, std::io::stderr, std::io::stderr().is_terminal()).try_init()
}

/// The subscriber [`init`] installs, writing to `writer`; `colors` adds ANSI colors
/// to the text format (for a terminal, not for a file or a log collector).
pub fn subscriber<W>(format: Format, writer: W, colors: bool) -> Box<dyn tracing::Subscriber + Send + Sync>
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER));
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(writer).with_ansi(colors);
    match format {
        Format::Text => Box::new(builder.finish()),
        Format::Json => Box::new(builder.with_ansi(false).json().with_current_span(true).with_span_list(true).finish()),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    /// Collects what the subscriber writes.
    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Buffer {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().map_err(|_| std::io::Error::other("poisoned"))?.extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn log_a_reconcile(format: Format) -> String {
        let buffer = Buffer::default();
        let writer = buffer.clone();
        let subscriber = subscriber(format, move || writer.clone(), false);
        tracing::subscriber::with_default(subscriber, || {
            let controller = tracing::info_span!("controller", plugin = "foo");
            let _controller = controller.enter();
            let reconcile = tracing::info_span!("reconcile", object = "default/example-foo");
            let _reconcile = reconcile.enter();
            tracing::info!(kind = "Deployment", "child applied");
        });
        let bytes = buffer.0.lock().expect("buffer").clone();
        String::from_utf8(bytes).expect("utf-8 log")
    }

    #[test]
    fn json_lines_carry_the_plugin_and_object_of_their_spans() {
        let text = log_a_reconcile(Format::Json);
        let line: serde_json::Value = serde_json::from_str(text.trim()).expect("one JSON object per line");
        assert_eq!(line["level"], "INFO");
        assert_eq!(line["fields"]["message"], "child applied");
        assert_eq!(line["fields"]["kind"], "Deployment");
        assert_eq!(line["span"]["object"], "default/example-foo", "innermost span: {line}");
        assert_eq!(line["spans"][0]["plugin"], "foo", "enclosing spans: {line}");
        assert_eq!(line["spans"][1]["object"], "default/example-foo");
    }

    #[test]
    fn text_lines_are_readable_with_the_span_fields() {
        let text = log_a_reconcile(Format::Text);
        assert!(serde_json::from_str::<serde_json::Value>(text.trim()).is_err(), "not JSON: {text}");
        for needle in [
            "INFO",
            "controller{plugin=\"foo\"}",
            "reconcile{object=\"default/example-foo\"}",
            "child applied",
            "kind=\"Deployment\"",
        ] {
            assert!(text.contains(needle), "{needle} missing from {text}");
        }
    }
}
