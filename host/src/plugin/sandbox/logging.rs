//! The contract's `log` import: a plugin's log lines become the host's tracing events,
//! with the plugin (and the reconcile's spans) as fields, within a budget per call.

use crate::plugin::contract::bindings::kubewasm::reconciler::{log, types};
use crate::plugin::contract::bindings_0_1_0::kubewasm::reconciler::{log as log_0_1_0, types as types_0_1_0};

/// The tracing target of what a sandbox reports (a plugin's log lines, its denied
/// requests): one name for log filters, wherever the code lives.
pub(crate) const TARGET: &str = "kubewasm::plugin::sandbox";

/// One call's log budget and the plugin whose lines it carries.
pub(crate) struct PluginLog {
    plugin: String,
    lines_left: u32,
    dropped: u32,
}

impl PluginLog {
    pub(crate) fn new(plugin: &str, lines: u32) -> Self {
        Self { plugin: plugin.to_string(), lines_left: lines, dropped: 0 }
    }

    /// Starts a new call's budget of `lines`.
    pub(crate) fn rearm(&mut self, lines: u32) {
        self.lines_left = lines;
        self.dropped = 0;
    }

    /// Log lines the plugin emitted beyond its budget in this call.
    pub(crate) fn dropped(&self) -> u32 {
        self.dropped
    }
}

/// The shared types interfaces have no functions; the traits are markers.
impl types::Host for PluginLog {}
impl types_0_1_0::Host for PluginLog {}

impl log::Host for PluginLog {
    fn log(&mut self, level: log::Level, message: String, fields: Vec<(String, String)>) {
        let level = match level {
            log::Level::Trace => tracing::Level::TRACE,
            log::Level::Debug => tracing::Level::DEBUG,
            log::Level::Info => tracing::Level::INFO,
            log::Level::Warn => tracing::Level::WARN,
            log::Level::Error => tracing::Level::ERROR,
        };
        self.emit(level, &message, &fields);
    }
}

/// Contract 0.1.0's `log`, the same function.
impl log_0_1_0::Host for PluginLog {
    fn log(&mut self, level: log_0_1_0::Level, message: String, fields: Vec<(String, String)>) {
        let level = match level {
            log_0_1_0::Level::Trace => tracing::Level::TRACE,
            log_0_1_0::Level::Debug => tracing::Level::DEBUG,
            log_0_1_0::Level::Info => tracing::Level::INFO,
            log_0_1_0::Level::Warn => tracing::Level::WARN,
            log_0_1_0::Level::Error => tracing::Level::ERROR,
        };
        self.emit(level, &message, &fields);
    }
}

impl PluginLog {
    /// One line of the plugin's, within its budget.
    fn emit(&mut self, level: tracing::Level, message: &str, fields: &[(String, String)]) {
        if self.lines_left == 0 {
            self.dropped = self.dropped.saturating_add(1);
            return;
        }
        self.lines_left -= 1;
        let plugin = self.plugin.as_str();
        let fields = FieldList(fields);
        // No `fields=` on a line without fields.
        macro_rules! at {
            ($level:expr) => {
                if fields.0.is_empty() {
                    tracing::event!(target: TARGET, $level, plugin, "{message}")
                } else {
                    tracing::event!(target: TARGET, $level, plugin, %fields, "{message}")
                }
            };
        }
        match level {
            tracing::Level::TRACE => at!(tracing::Level::TRACE),
            tracing::Level::DEBUG => at!(tracing::Level::DEBUG),
            tracing::Level::INFO => at!(tracing::Level::INFO),
            tracing::Level::WARN => at!(tracing::Level::WARN),
            tracing::Level::ERROR => at!(tracing::Level::ERROR),
        }
    }
}

/// Plugin-supplied fields rendered as `k=v k=v`.
struct FieldList<'a>(&'a [(String, String)]);

impl std::fmt::Display for FieldList<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, (k, v)) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            write!(f, "{k}={v:?}")?;
        }
        Ok(())
    }
}
