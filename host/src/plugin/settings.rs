//! A plugin's operator settings: the optional `NAME.toml` beside `NAME.wasm`.
//!
//! ```toml
//! enabled = true           # false stops the plugin's controller and handler, children stay
//! namespace = "team-a"     # reconcile parents, watch children and watched kinds in one namespace only
//!
//! [limits]                 # lower the plugin's own limits, never raise them
//! deadline-ms = 500
//! memory-mib = 32
//!
//! [events]                 # a plugin that handles events
//! initial = false          # also deliver the objects that existed before it was first loaded
//! queue-limit = 1000       # undelivered events kept; past it the oldest are dropped
//!
//! [http]                   # outbound HTTP: what the operator grants, at most what the manifest asks
//! allow = ["https://hooks.slack.com"]   # Spin's allowed_outbound_hosts syntax
//! timeout-ms = 10000       # per request, redirects included
//! max-requests = 10        # per call
//! max-response-bytes = 1048576
//!
//! [config]                 # anything: handed to the plugin as `config` (JSON)
//! image-registry = "registry.example.com"
//! token = { secretKeyRef = { name = "slack", key = "token" } }   # a Secret key, resolved by the host
//! ```

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use super::sandbox::http::HttpSettings;
use super::sandbox::limits::Limits;

/// What an operator set for one plugin.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    pub enabled: bool,
    pub namespace: Option<String>,
    pub deadline: Option<Duration>,
    pub memory_bytes: Option<u64>,
    pub events: EventSettings,
    pub http: HttpSettings,
    /// Handed to the plugin; `secretKeyRef`s in it are resolved by the host.
    pub config: Value,
}

/// How a plugin's events are delivered (`[events]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventSettings {
    /// Deliver the objects that existed before the plugin was first loaded.
    pub initial: bool,
    /// Undelivered events kept; past it the oldest are dropped.
    pub queue_limit: usize,
}

impl Default for EventSettings {
    fn default() -> Self {
        Self { initial: false, queue_limit: 1000 }
    }
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            enabled: true,
            namespace: None,
            deadline: None,
            memory_bytes: None,
            events: EventSettings::default(),
            http: HttpSettings::default(),
            config: Value::Null,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct File {
    #[serde(default = "enabled")]
    enabled: bool,
    namespace: Option<String>,
    #[serde(default)]
    limits: FileLimits,
    #[serde(default)]
    events: FileEvents,
    #[serde(default)]
    http: FileHttp,
    config: Option<toml::Value>,
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct FileEvents {
    initial: Option<bool>,
    queue_limit: Option<u32>,
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct FileHttp {
    #[serde(default)]
    allow: Vec<String>,
    timeout_ms: Option<u32>,
    max_requests: Option<u32>,
    max_response_bytes: Option<u64>,
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct FileLimits {
    deadline_ms: Option<u32>,
    memory_mib: Option<u32>,
}

fn enabled() -> bool {
    true
}

/// Why a settings file was refused; the plugin keeps its previous settings.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error("{}: {source}", file.display())]
    Read { file: PathBuf, source: std::io::Error },
    #[error("{}: {source}", file.display())]
    Invalid { file: PathBuf, source: InvalidSettings },
}

/// What is wrong with the text of a settings file.
#[derive(Debug, thiserror::Error)]
pub enum InvalidSettings {
    /// Not TOML, or a field unknown or of the wrong type; the message gives the line.
    #[error("{}", .0.to_string().trim_end())]
    Toml(#[from] toml::de::Error),
    /// A limit of zero would refuse every call.
    #[error("{field} must be positive")]
    ZeroLimit { field: &'static str },
    /// `[config]` holds a value JSON cannot carry.
    #[error("config: {0}")]
    Config(#[source] serde_json::Error),
    /// A Secret reference in `[config]` written wrongly.
    #[error(transparent)]
    SecretRef(#[from] crate::secrets::InvalidRef),
    /// A pattern of `[http] allow` that does not parse.
    #[error("http.allow: {0}")]
    Grant(#[source] super::sandbox::http::allow::PatternError),
}

impl Settings {
    /// Reads `path`.
    ///
    /// # Errors
    ///
    /// A [`SettingsError`] naming the file, and the line and field for bad TOML.
    pub fn read(path: &Path) -> Result<Self, SettingsError> {
        let file = || path.to_path_buf();
        let text = std::fs::read_to_string(path).map_err(|source| SettingsError::Read { file: file(), source })?;
        Self::parse(&text).map_err(|source| SettingsError::Invalid { file: file(), source })
    }

    /// Parses the text of a settings file.
    ///
    /// # Errors
    ///
    /// What is wrong, with the line and column for bad TOML.
    pub fn parse(text: &str) -> Result<Self, InvalidSettings> {
        let file: File = toml::from_str(text)?;
        let http = &file.http;
        for (field, value) in [
            ("limits.deadline-ms", file.limits.deadline_ms),
            ("limits.memory-mib", file.limits.memory_mib),
            ("events.queue-limit", file.events.queue_limit),
            ("http.timeout-ms", http.timeout_ms),
            ("http.max-requests", http.max_requests),
        ] {
            if value == Some(0) {
                return Err(InvalidSettings::ZeroLimit { field });
            }
        }
        if http.max_response_bytes == Some(0) {
            return Err(InvalidSettings::ZeroLimit { field: "http.max-response-bytes" });
        }
        super::sandbox::http::allow::parse_all(&http.allow).map_err(InvalidSettings::Grant)?;
        let config = match file.config {
            Some(value) => serde_json::to_value(value).map_err(InvalidSettings::Config)?,
            None => Value::Null,
        };
        crate::secrets::refs(&config)?;
        let defaults = HttpSettings::default();
        let events = EventSettings::default();
        Ok(Self {
            enabled: file.enabled,
            namespace: file.namespace,
            deadline: file.limits.deadline_ms.map(|ms| Duration::from_millis(ms.into())),
            memory_bytes: file.limits.memory_mib.map(|mib| u64::from(mib) << 20),
            events: EventSettings {
                initial: file.events.initial.unwrap_or(events.initial),
                queue_limit: file.events.queue_limit.map_or(events.queue_limit, |n| n as usize),
            },
            http: HttpSettings {
                allow: file.http.allow,
                timeout: file.http.timeout_ms.map_or(defaults.timeout, |ms| Duration::from_millis(ms.into())),
                max_requests: file.http.max_requests.unwrap_or(defaults.max_requests),
                max_response_bytes: file.http.max_response_bytes.unwrap_or(defaults.max_response_bytes),
            },
            config,
        })
    }

    /// `limits` lowered by these settings.
    pub fn lower(&self, limits: Limits) -> Limits {
        limits.lowered_to(self.deadline, self.memory_bytes)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn every_field_is_read() {
        let s = Settings::parse(
            "enabled = false\nnamespace = \"team-a\"\n[limits]\ndeadline-ms = 250\nmemory-mib = 16\n[config]\nreplicas = 3\nimage = { tag = \"1.2\" }\n",
        )
        .unwrap();
        assert!(!s.enabled);
        assert_eq!(s.namespace.as_deref(), Some("team-a"));
        assert_eq!(s.deadline, Some(Duration::from_millis(250)));
        assert_eq!(s.memory_bytes, Some(16 << 20));
        assert_eq!(s.config, json!({"replicas": 3, "image": {"tag": "1.2"}}));
    }

    #[test]
    fn events_http_and_secret_references_are_read() {
        let s = Settings::parse(
            "[events]\ninitial = true\nqueue-limit = 5\n[http]\nallow = [\"https://hooks.slack.com\"]\ntimeout-ms = 250\nmax-requests = 3\nmax-response-bytes = 100\n[config]\ntoken = { secretKeyRef = { name = \"slack\", key = \"token\" } }\n",
        )
        .unwrap();
        assert_eq!(s.events, EventSettings { initial: true, queue_limit: 5 });
        assert_eq!(s.http.allow, ["https://hooks.slack.com"]);
        assert_eq!(
            (s.http.timeout, s.http.max_requests, s.http.max_response_bytes),
            (Duration::from_millis(250), 3, 100)
        );
        assert_eq!(s.config["token"]["secretKeyRef"]["name"], "slack");

        let err = Settings::parse("[http]\nallow = [\"hooks.slack.com\"]\n").unwrap_err().to_string();
        assert!(err.starts_with("http.allow: \"hooks.slack.com\" has no scheme"), "{err}");
        let err = Settings::parse("[config]\nt = { secretKeyRef = { name = \"s\" } }\n").unwrap_err().to_string();
        assert!(err.contains("config.t") && err.contains("needs a `key`"), "{err}");
        let err = Settings::parse("[http]\nmax-requests = 0\n").unwrap_err().to_string();
        assert_eq!(err, "http.max-requests must be positive");
    }

    #[test]
    fn an_empty_file_means_defaults() {
        assert_eq!(Settings::parse("").unwrap(), Settings::default());
    }

    #[test]
    fn mistakes_are_named_with_their_line() {
        let err = Settings::parse("enabled = true\nnamepsace = \"x\"\n").unwrap_err().to_string();
        assert!(err.contains("line 2") && err.contains("namepsace"), "{err}");
        let err = Settings::parse("[limits]\ndeadline-ms = \"fast\"\n").unwrap_err();
        assert!(matches!(err, InvalidSettings::Toml(_)), "the parser's error is kept: {err:?}");
        assert!(err.to_string().contains("line 2"), "{err}");
        let err = Settings::parse("[limits]\nmemory-mib = 0\n").unwrap_err();
        assert_eq!(err.to_string(), "limits.memory-mib must be positive");
    }

    #[test]
    fn a_read_error_names_the_file_and_keeps_its_cause() {
        let err = Settings::read(Path::new("/nonexistent/p.toml")).unwrap_err();
        assert!(err.to_string().starts_with("/nonexistent/p.toml: "), "{err}");
        let cause = std::error::Error::source(&err).expect("the cause is kept");
        assert!(cause.downcast_ref::<std::io::Error>().is_some(), "{cause:?}");
    }

    #[test]
    fn settings_only_lower_limits() {
        let s =
            Settings { deadline: Some(Duration::from_secs(30)), memory_bytes: Some(8 << 20), ..Settings::default() };
        let lowered = s.lower(Limits::default());
        assert_eq!(lowered.deadline, Limits::default().deadline, "cannot raise the deadline");
        assert_eq!(lowered.memory_bytes, 8 << 20);
    }
}
