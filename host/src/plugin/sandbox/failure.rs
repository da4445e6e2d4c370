//! Why a call failed, in words a plugin's author can act on: the deadline, the memory
//! cap, a panic (a Rust guest's, a JavaScript exception or a Python one that nothing
//! caught, read from stderr), a Go panic, any other trap with the end of the guest's
//! stderr, its own error, or an answer that cannot be decoded. An uncaught error's first
//! line names it and where the author's code raised it; the trace follows.

use std::time::Duration;

use wasmtime::Trap;

use super::logging::Redact;
use super::uncaught;
use crate::plugin::contract::MalformedAnswer;

/// Why a call produced no answer.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// The plugin ran past its CPU deadline and was interrupted.
    #[error("plugin {plugin} exceeded its deadline of {deadline:?} in {call}")]
    Timeout { plugin: String, call: &'static str, deadline: Duration },
    /// The plugin tried to grow its memory past the cap.
    #[error("plugin {plugin} exceeded its memory limit of {limit_mib} MiB in {call}")]
    OutOfMemory { plugin: String, call: &'static str, limit_mib: u64 },
    /// The plugin panicked; `message` is its panic message.
    #[error("plugin {plugin} panicked in {call}: {message}")]
    Panic { plugin: String, call: &'static str, message: String },
    /// Any other trap (unreachable, out-of-bounds access, stack overflow...).
    #[error("plugin {plugin} trapped in {call}: {message}")]
    Trap { plugin: String, call: &'static str, message: String },
    /// The plugin answered `reconcile` with its own error.
    #[error("plugin {plugin} returned an error{}: {message}", if *retryable { " (retryable)" } else { "" })]
    Plugin { plugin: String, message: String, retryable: bool },
    /// The plugin's answer cannot be decoded or asks for what it did not declare.
    #[error("plugin {plugin} returned a malformed response: {source}")]
    Malformed { plugin: String, source: MalformedAnswer },
}

impl From<&CallError> for crate::metrics::Failure {
    /// How `error` failed, as the metrics label it.
    fn from(error: &CallError) -> Self {
        match error {
            CallError::Timeout { .. } => Self::Timeout,
            CallError::OutOfMemory { .. } => Self::OutOfMemory,
            CallError::Panic { .. } => Self::Panic,
            CallError::Trap { .. } => Self::Trap,
            CallError::Plugin { .. } => Self::PluginError,
            CallError::Malformed { .. } => Self::Malformed,
        }
    }
}

impl CallError {
    /// Whether a retry may succeed without a new plugin version or a changed parent.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Plugin { retryable, .. } => *retryable,
            Self::Timeout { .. } | Self::OutOfMemory { .. } => true,
            Self::Panic { .. } | Self::Trap { .. } | Self::Malformed { .. } => false,
        }
    }

    /// The same error without `redact`'s values in what the plugin wrote (its panic
    /// message, its stderr, its own error).
    #[must_use]
    pub(crate) fn redacted(self, redact: &Redact) -> Self {
        if redact.is_empty() {
            return self;
        }
        match self {
            Self::Panic { plugin, call, message } => Self::Panic { plugin, call, message: redact.apply(&message) },
            Self::Trap { plugin, call, message } => Self::Trap { plugin, call, message: redact.apply(&message) },
            Self::Plugin { plugin, message, retryable } => {
                Self::Plugin { plugin, message: redact.apply(&message), retryable }
            }
            other => other,
        }
    }
}

/// What a failed call left behind, to tell its failures apart.
pub(crate) struct Evidence<'a> {
    pub(crate) plugin: &'a str,
    pub(crate) call: &'static str,
    pub(crate) deadline: Duration,
    /// The memory cap in MiB, when the plugin tried to grow past it.
    pub(crate) memory_exceeded_mib: Option<u64>,
    /// What the guest wrote to stderr.
    pub(crate) stderr: &'a str,
}

/// Turns a failed call into the error a user can act on.
pub(crate) fn classify(error: &wasmtime::Error, evidence: &Evidence<'_>) -> CallError {
    let (plugin, call) = (evidence.plugin.to_string(), evidence.call);
    if error.downcast_ref::<Trap>() == Some(&Trap::Interrupt) {
        return CallError::Timeout { plugin, call, deadline: evidence.deadline };
    }
    if let Some(limit_mib) = evidence.memory_exceeded_mib {
        return CallError::OutOfMemory { plugin, call, limit_mib };
    }
    if let Some(panic) = Panic::find(evidence.stderr) {
        // componentize-py's runtime panics after Python printed the traceback: its summary
        // first, then all the guest wrote.
        if let Some(summary) = uncaught::python(panic.before) {
            return CallError::Panic { plugin, call, message: format!("{summary}\n{}", panic.before.trim_end()) };
        }
        let mut message = panic.message();
        // What the guest printed before it panicked: a log line, a console.error.
        if let Some(tail) = stderr_tail(panic.before) {
            message = format!("{message}; before it the plugin's stderr ends with:\n{tail}");
        }
        return CallError::Panic { plugin, call, message };
    }
    // Go's runtime prints the panic and its goroutines, then traps: the trap says nothing more.
    if let Some(summary) = uncaught::go(evidence.stderr) {
        return CallError::Trap { plugin, call, message: format!("{summary}\n{}", evidence.stderr.trim_end()) };
    }
    let mut message = match error.downcast_ref::<Trap>() {
        Some(trap) => trap.to_string(),
        None => format!("{error:#}"),
    };
    // What the guest printed last: a Python traceback, a JavaScript stack, Go's panic.
    if let Some(tail) = stderr_tail(evidence.stderr) {
        message = format!("{message}; the plugin's stderr ends with:\n{tail}");
    }
    CallError::Trap { plugin, call, message }
}

/// Whether instantiating failed because the store's limit on core instances was reached.
pub(crate) fn is_instance_limit(error: &wasmtime::Error) -> bool {
    // wasmtime's message (`StoreOpaque::bump_resource_counts`); it has no error type.
    format!("{error:#}").contains("resource limit exceeded: instance count too high")
}

/// The last lines a guest wrote to stderr, at most [`STDERR_TAIL_LINES`] of them.
fn stderr_tail(stderr: &str) -> Option<String> {
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    let tail = &lines[lines.len().saturating_sub(STDERR_TAIL_LINES)..];
    (!tail.is_empty()).then(|| tail.join("\n"))
}

/// Enough lines for the end of a traceback.
const STDERR_TAIL_LINES: usize = 20;

/// A Rust panic as the standard library prints it to stderr: a line `thread '<unnamed>'
/// panicked at src/lib.rs:3:5:`, the message (one line or more), then a line `note: run
/// with RUST_BACKTRACE=1 ...`. Guests written in Rust panic so, and so do the runtimes of
/// other languages (the `QuickJS` one, on an exception nothing caught).
struct Panic<'a> {
    /// What the guest wrote to stderr before.
    before: &'a str,
    /// `src/lib.rs:3:5`.
    location: &'a str,
    /// Every line of the message.
    text: &'a str,
}

impl<'a> Panic<'a> {
    fn find(stderr: &'a str) -> Option<Self> {
        let at = stderr.find("panicked at ")?;
        let line_start = stderr[..at].rfind('\n').map_or(0, |n| n + 1);
        let rest = &stderr[at + "panicked at ".len()..];
        let (location, text) = rest.split_once('\n').unwrap_or((rest, ""));
        let text = text.find("\nnote: run with `RUST_BACKTRACE").map_or(text, |end| &text[..end]);
        Some(Panic { before: &stderr[..line_start], location: location.trim_end_matches(':'), text: text.trim_end() })
    }

    /// The message a user reads: a JavaScript exception's message and stack, else the
    /// panic's message and where it was raised.
    fn message(&self) -> String {
        match js_exception(self.text) {
            Some(exception) => exception,
            None => format!("{} (at {})", self.text, self.location),
        }
    }
}

/// The exception in the panic of componentize-qjs's runtime, which prints it as Rust
/// debug text (`Failed to call 'reconcile': Value(Exception(\nException { message:
/// Some("TypeError: ..."), stack: Some("    at sizeOf (/bundle.js:9:5)\\n...") })\n)`):
/// `uncaught exception: TypeError: ...` and the stack, one frame a line.
fn js_exception(text: &str) -> Option<String> {
    let rest = &text[text.find("Exception { message: ")? + "Exception { message: ".len()..];
    let (message, rest) = debug_option_str(rest)?;
    let (stack, _) = debug_option_str(rest.strip_prefix(", stack: ")?)?;
    let mut out = format!("uncaught exception: {}", message.as_deref().unwrap_or("(no message)"));
    for frame in stack.iter().flat_map(|s| s.lines()).filter(|l| !l.trim().is_empty()) {
        out.push('\n');
        out.push_str(frame);
    }
    Some(out)
}

/// `None` or `Some("...")` at the start of `text` as `{:?}` prints an `Option<String>`,
/// and what follows it.
fn debug_option_str(text: &str) -> Option<(Option<String>, &str)> {
    if let Some(rest) = text.strip_prefix("None") {
        return Some((None, rest));
    }
    let (value, rest) = debug_str(text.strip_prefix("Some(")?)?;
    Some((Some(value), rest.strip_prefix(')')?))
}

/// A string literal at the start of `text` as `{:?}` prints a `str`, unescaped, and what
/// follows it.
fn debug_str(text: &str) -> Option<(String, &str)> {
    let mut chars = text.strip_prefix('"')?.char_indices();
    let body = &text[1..];
    let mut out = String::new();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Some((out, &body[i + 1..])),
            '\\' => match chars.next()?.1 {
                'n' => out.push('\n'),
                'r' => out.push('\r'),
                't' => out.push('\t'),
                '0' => out.push('\0'),
                'u' => {
                    let hex: String = chars.by_ref().map(|(_, c)| c).skip(1).take_while(|&c| c != '}').collect();
                    out.push(char::from_u32(u32::from_str_radix(&hex, 16).ok()?)?);
                }
                other => out.push(other),
            },
            c => out.push(c),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panic_message_is_read_from_stderr() {
        let stderr =
            "\nthread '<unnamed>' panicked at src/lib.rs:12:9:\nboom: bad spec\nnote: run with `RUST_BACKTRACE=1`\n";
        assert_eq!(Panic::find(stderr).unwrap().message(), "boom: bad spec (at src/lib.rs:12:9)");
        assert!(Panic::find("plain output").is_none());
        let multiline = "thread 'main' panicked at src/lib.rs:1:1:\nfirst\nsecond\n";
        assert_eq!(Panic::find(multiline).unwrap().message(), "first\nsecond (at src/lib.rs:1:1)");
    }

    #[test]
    fn a_javascript_exception_is_read_from_the_quickjs_runtimes_panic() {
        let stderr = concat!(
            "printed first\n",
            "thread '<unnamed>' (1) panicked at crates/runtime/src/interpreter.rs:51:31:\n",
            "Failed to call 'reconcile': Value(Exception(\n",
            r#"Exception { message: Some("TypeError: cannot read property 'size' of \"x\" \u{e9}"), "#,
            r#"stack: Some("    at sizeOf (/bundle.js:792:9)\n    at reconcile (/bundle.js:788:48)\n") })"#,
            "\n)\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n",
        );
        let panic = Panic::find(stderr).unwrap();
        assert_eq!(panic.before, "printed first\n");
        assert_eq!(
            panic.message(),
            "uncaught exception: TypeError: cannot read property 'size' of \"x\" \u{e9}\n    at sizeOf (/bundle.js:792:9)\n    at reconcile (/bundle.js:788:48)"
        );
        let bare = "thread '<unnamed>' panicked at x.rs:1:1:\nValue(Exception(\nException { message: None, stack: None })\n)\n";
        assert_eq!(Panic::find(bare).unwrap().message(), "uncaught exception: (no message)");
        // Debug text that is not an exception's (or is cut short) is shown as it is.
        let cut = "thread '<unnamed>' panicked at x.rs:1:1:\nException { message: Some(\"unterminated\n";
        assert_eq!(Panic::find(cut).unwrap().message(), "Exception { message: Some(\"unterminated (at x.rs:1:1)");
    }

    #[test]
    fn a_trap_carries_the_tail_of_the_guests_stderr() {
        let traceback =
            "Traceback (most recent call last):\n  File \"app.py\", line 3, in reconcile\nKeyError: 'image'\n";
        assert_eq!(stderr_tail(traceback).as_deref(), Some(traceback.trim_end()));
        let long = (0..50).map(|i| format!("line {i}")).collect::<Vec<_>>().join("\n");
        let tail = stderr_tail(&long).unwrap();
        assert!(tail.starts_with("line 30\n") && tail.ends_with("line 49"), "{tail}");
        assert_eq!(stderr_tail("\n \n"), None);
    }
}
