//! One call's sandbox: a fresh store with a deny-all WASI context (outgoing HTTP
//! requests included), fixed clocks, a memory cap, a CPU deadline, a log budget, and
//! the classification of what went wrong when a call fails.

use std::time::Duration;

use wasmtime::component::ResourceTable;
use wasmtime::{ResourceLimiter, Store, Trap};
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::{HostMonotonicClock, HostWallClock, WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpHooks, WasiHttpView};

use super::contract::MalformedAnswer;
use super::contract::bindings::kubewasm::reconciler::{log, types};
use super::engine::{EPOCH_TICK, Engine};
use super::pool::PoolSlots;

/// Resource limits of one call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// CPU deadline of one call.
    pub deadline: Duration,
    /// Largest linear memory, in bytes.
    pub memory_bytes: u64,
    /// Log lines kept per call; the rest are dropped and counted.
    pub log_lines: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Self { deadline: Duration::from_secs(1), memory_bytes: 64 << 20, log_lines: 1000 }
    }
}

impl Limits {
    /// The limits a plugin asked for in its manifest, never above `self`.
    #[must_use]
    pub fn lowered_to(self, deadline: Option<Duration>, memory_bytes: Option<u64>) -> Self {
        Self {
            deadline: deadline.map_or(self.deadline, |d| d.min(self.deadline)),
            memory_bytes: memory_bytes.map_or(self.memory_bytes, |m| m.min(self.memory_bytes)),
            ..self
        }
    }
}

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

impl CallError {
    /// Whether a retry may succeed without a new plugin version or a changed parent.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Plugin { retryable, .. } => *retryable,
            Self::Timeout { .. } | Self::OutOfMemory { .. } => true,
            Self::Panic { .. } | Self::Trap { .. } | Self::Malformed { .. } => false,
        }
    }
}

/// The store's data for one call.
pub struct CallState {
    wasi: WasiCtx,
    http: WasiHttpCtx,
    no_network: NoNetwork,
    table: ResourceTable,
    stderr: MemoryOutputPipe,
    memory_cap: u64,
    memory_exceeded: bool,
    /// The core instances, memories and tables the call may create: what it took
    /// from the instance pool.
    slots: PoolSlots,
    plugin: String,
    log_lines_left: u32,
    logs_dropped: u32,
}

/// The wall clock a plugin reads: 2000-01-01T00:00:00Z, always. Plugins get the time
/// from the request's `now`, so a reconcile depends on its inputs only; the clock is not
/// zero because some language runtimes (Go's) refuse to start on a zero clock.
struct FrozenClock;

/// Seconds from the Unix epoch to 2000-01-01T00:00:00Z.
const FROZEN_WALL_SECONDS: u64 = 946_684_800;

impl HostWallClock for FrozenClock {
    fn resolution(&self) -> Duration {
        Duration::from_secs(1)
    }
    fn now(&self) -> Duration {
        Duration::from_secs(FROZEN_WALL_SECONDS)
    }
}

/// A monotonic clock that starts at one second and moves one microsecond per reading:
/// runtimes that wait for time to pass make progress, and every call of a plugin on the
/// same input still reads the same times.
#[derive(Default)]
struct SteppedClock(std::sync::atomic::AtomicU64);

impl HostMonotonicClock for SteppedClock {
    fn resolution(&self) -> u64 {
        1_000
    }
    fn now(&self) -> u64 {
        1_000_000_000 + 1_000 * self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }
}

/// Enough of stderr to carry a panic message.
const STDERR_CAPTURE: usize = 16 << 10;

/// A fresh store for one call of `plugin`, with `limits` in force, in which no more
/// than `slots` core instances, memories and tables can be created.
pub(crate) fn new_store(engine: &Engine, plugin: &str, limits: Limits, slots: PoolSlots) -> Store<CallState> {
    let stderr = MemoryOutputPipe::new(STDERR_CAPTURE);
    // No preopened directories, no environment, no arguments, no network: the
    // builder's defaults deny everything; only stderr is captured.
    let wasi = WasiCtx::builder()
        .stderr(stderr.clone())
        .wall_clock(FrozenClock)
        .monotonic_clock(SteppedClock::default())
        .build();
    let state = CallState {
        wasi,
        http: WasiHttpCtx::new(),
        no_network: NoNetwork { plugin: plugin.to_string() },
        table: ResourceTable::new(),
        stderr,
        memory_cap: limits.memory_bytes,
        memory_exceeded: false,
        slots,
        plugin: plugin.to_string(),
        log_lines_left: limits.log_lines,
        logs_dropped: 0,
    };
    let mut store = Store::new(engine.wasmtime(), state);
    store.limiter(|s| s as &mut dyn ResourceLimiter);
    rearm(&mut store, limits);
    store
}

/// Gives the next call in `store` the whole deadline and log budget of `limits`:
/// the calls of one reconcile share an instance, not their limits.
pub(crate) fn rearm(store: &mut Store<CallState>, limits: Limits) {
    let ticks = limits.deadline.as_millis().div_ceil(EPOCH_TICK.as_millis()).max(1);
    store.set_epoch_deadline(u64::try_from(ticks).unwrap_or(u64::MAX));
    let state = store.data_mut();
    state.log_lines_left = limits.log_lines;
    state.logs_dropped = 0;
}

/// Whether instantiating failed because the store's limit on core instances was reached.
pub(crate) fn is_instance_limit(error: &wasmtime::Error) -> bool {
    // wasmtime's message (`StoreOpaque::bump_resource_counts`); it has no error type.
    format!("{error:#}").contains("resource limit exceeded: instance count too high")
}

/// Turns a failed call into the error a user can act on.
pub(crate) fn classify(
    error: &wasmtime::Error,
    store: &Store<CallState>,
    call: &'static str,
    limits: Limits,
) -> CallError {
    let state = store.data();
    let plugin = state.plugin.clone();
    if error.downcast_ref::<Trap>() == Some(&Trap::Interrupt) {
        return CallError::Timeout { plugin, call, deadline: limits.deadline };
    }
    if state.memory_exceeded {
        return CallError::OutOfMemory { plugin, call, limit_mib: state.memory_cap >> 20 };
    }
    let stderr = String::from_utf8_lossy(&state.stderr.contents()).into_owned();
    if let Some(panic) = Panic::find(&stderr) {
        let mut message = panic.message();
        // What the guest printed before it panicked: a log line, a console.error.
        if let Some(tail) = stderr_tail(panic.before) {
            message = format!("{message}; before it the plugin's stderr ends with:\n{tail}");
        }
        return CallError::Panic { plugin, call, message };
    }
    let mut message = match error.downcast_ref::<Trap>() {
        Some(trap) => trap.to_string(),
        None => format!("{error:#}"),
    };
    // What the guest printed last: a Python traceback, a JavaScript stack, Go's panic.
    if let Some(tail) = stderr_tail(&stderr) {
        message = format!("{message}; the plugin's stderr ends with:\n{tail}");
    }
    CallError::Trap { plugin, call, message }
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

impl CallState {
    /// Log lines the plugin emitted beyond its budget.
    pub(crate) fn logs_dropped(&self) -> u32 {
        self.logs_dropped
    }
}

impl WasiView for CallState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

impl WasiHttpView for CallState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView { ctx: &mut self.http, table: &mut self.table, hooks: &mut self.no_network }
    }
}

/// `wasi:http` without a network: every outgoing request fails with `HTTP request
/// denied` before any connection is made, and the host logs what was asked. Plugins
/// built with jco's defaults import `wasi:http` (for `fetch`), so it is linked; it
/// lets them load, not connect.
struct NoNetwork {
    plugin: String,
}

impl WasiHttpHooks for NoNetwork {
    fn send_request(
        &mut self,
        request: http::Request<wasmtime_wasi_http::WasiBody>,
        _options: Option<wasmtime_wasi_http::RequestOptions>,
        _done: Box<dyn Future<Output = Result<(), wasmtime_wasi_http::Error>> + Send>,
    ) -> Box<
        dyn Future<
                Output = Result<
                    (
                        http::Response<wasmtime_wasi_http::WasiBody>,
                        Box<dyn Future<Output = Result<(), wasmtime_wasi_http::Error>> + Send>,
                    ),
                    wasmtime_wasi_http::Error,
                >,
            > + Send,
    > {
        tracing::warn!(
            plugin = %self.plugin,
            method = %request.method(),
            uri = %request.uri(),
            "outgoing HTTP request denied: plugins have no network"
        );
        Box::new(std::future::ready(Err(wasmtime_wasi_http::Error::HttpRequestDenied)))
    }
}

impl ResourceLimiter for CallState {
    fn memory_growing(&mut self, _current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        let allowed = u64::try_from(desired).is_ok_and(|d| d <= self.memory_cap);
        self.memory_exceeded |= !allowed;
        Ok(allowed)
    }

    fn table_growing(&mut self, _current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        Ok(desired <= 100_000)
    }

    fn instances(&self) -> usize {
        usize::try_from(self.slots.core_instances).unwrap_or(usize::MAX)
    }

    fn memories(&self) -> usize {
        usize::try_from(self.slots.memories).unwrap_or(usize::MAX)
    }

    fn tables(&self) -> usize {
        usize::try_from(self.slots.tables).unwrap_or(usize::MAX)
    }
}

/// The shared types interface has no functions; the trait is a marker.
impl types::Host for CallState {}

impl log::Host for CallState {
    fn log(&mut self, level: log::Level, message: String, fields: Vec<(String, String)>) {
        if self.log_lines_left == 0 {
            self.logs_dropped = self.logs_dropped.saturating_add(1);
            return;
        }
        self.log_lines_left -= 1;
        let plugin = self.plugin.as_str();
        let fields = FieldList(&fields);
        // No `fields=` on a line without fields.
        macro_rules! at {
            ($level:expr) => {
                if fields.0.is_empty() {
                    tracing::event!($level, plugin, "{message}")
                } else {
                    tracing::event!($level, plugin, %fields, "{message}")
                }
            };
        }
        match level {
            log::Level::Trace => at!(tracing::Level::TRACE),
            log::Level::Debug => at!(tracing::Level::DEBUG),
            log::Level::Info => at!(tracing::Level::INFO),
            log::Level::Warn => at!(tracing::Level::WARN),
            log::Level::Error => at!(tracing::Level::ERROR),
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

    #[test]
    fn clocks_are_not_zero_and_read_the_same_in_every_call() {
        assert_eq!(FrozenClock.now(), Duration::from_secs(FROZEN_WALL_SECONDS));
        let readings = || {
            let clock = SteppedClock::default();
            [clock.now(), clock.now(), clock.now()]
        };
        let first = readings();
        assert!(first[0] > 0 && first[0] < first[1] && first[1] < first[2], "{first:?}");
        assert_eq!(first, readings(), "a fresh call reads the same times");
    }

    #[test]
    fn manifest_limits_only_lower_the_host_limits() {
        let host = Limits::default();
        let lowered = host.lowered_to(Some(Duration::from_millis(200)), Some(512 << 20));
        assert_eq!(lowered.deadline, Duration::from_millis(200));
        assert_eq!(lowered.memory_bytes, host.memory_bytes, "a plugin cannot raise the cap");
    }
}
