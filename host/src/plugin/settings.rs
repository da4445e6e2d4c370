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
//! [webhooks]               # a plugin that defaults, validates or converts (its manifest says)
//! failure-policy = "Fail"  # or "Ignore": what the API server does when the host cannot answer,
//!                          # and what the host answers when the plugin traps or runs out of time
//! timeout-seconds = 10     # the API server's wait for the host, 1 to 30
//! match-policy = "Equivalent"          # or "Exact"
//! reinvocation-policy = "Never"        # or "IfNeeded": default again after later mutations
//! namespace-selector = { matchLabels = { team = "a" } }   # Kubernetes LabelSelectors
//! object-selector = { matchExpressions = [{ key = "skip", operator = "DoesNotExist" }] }
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
    /// The `ServiceAccount` (in the host's namespace) the plugin acts as when each plugin
    /// has its own identity; by default `kubewasm-plugin-NAME`.
    pub service_account: Option<String>,
    pub deadline: Option<Duration>,
    pub memory_bytes: Option<u64>,
    pub events: EventSettings,
    pub http: HttpSettings,
    pub webhooks: WebhookSettings,
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

/// How the API server calls the plugin's admission and conversion webhooks, and what
/// the host answers when the plugin cannot (`[webhooks]`).
#[derive(Clone, Debug, PartialEq)]
pub struct WebhookSettings {
    pub failure_policy: FailurePolicy,
    /// The API server's wait for the host's answer (`timeoutSeconds`), 1 to 30.
    pub timeout_seconds: u32,
    pub match_policy: MatchPolicy,
    pub reinvocation: Reinvocation,
    /// A Kubernetes `LabelSelector`, JSON.
    pub namespace_selector: Option<Value>,
    /// A Kubernetes `LabelSelector`, JSON.
    pub object_selector: Option<Value>,
}

impl Default for WebhookSettings {
    fn default() -> Self {
        Self {
            failure_policy: FailurePolicy::Fail,
            timeout_seconds: 10,
            match_policy: MatchPolicy::Equivalent,
            reinvocation: Reinvocation::Never,
            namespace_selector: None,
            object_selector: None,
        }
    }
}

/// What happens to a write when its webhook cannot answer: the API server's
/// `failurePolicy`, which the host also applies when the plugin traps, runs out of time
/// or answers what does not parse.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
pub enum FailurePolicy {
    /// Refuse the write, saying why.
    #[default]
    Fail,
    /// Let the write through unchanged.
    Ignore,
}

/// Whether writes through another version of the same resource are sent too
/// (`matchPolicy`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
pub enum MatchPolicy {
    #[default]
    Equivalent,
    Exact,
}

/// Whether a mutating webhook runs again after later webhooks changed the object
/// (`reinvocationPolicy`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
pub enum Reinvocation {
    #[default]
    Never,
    IfNeeded,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            enabled: true,
            namespace: None,
            service_account: None,
            deadline: None,
            memory_bytes: None,
            events: EventSettings::default(),
            http: HttpSettings::default(),
            webhooks: WebhookSettings::default(),
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
    service_account: Option<String>,
    #[serde(default)]
    limits: FileLimits,
    #[serde(default)]
    events: FileEvents,
    #[serde(default)]
    http: FileHttp,
    #[serde(default)]
    webhooks: FileWebhooks,
    config: Option<toml::Value>,
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct FileWebhooks {
    failure_policy: Option<FailurePolicy>,
    timeout_seconds: Option<u32>,
    match_policy: Option<MatchPolicy>,
    reinvocation_policy: Option<Reinvocation>,
    namespace_selector: Option<toml::Value>,
    object_selector: Option<toml::Value>,
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
    /// A `Plugin` resource's settings with a field unknown or of the wrong type.
    #[error("{0}")]
    Json(#[source] serde_json::Error),
    /// A limit of zero would refuse every call.
    #[error("{field} must be positive")]
    ZeroLimit { field: &'static str },
    /// `service-account` is no `ServiceAccount` name.
    #[error(
        "service-account {0:?} is no ServiceAccount name (a DNS subdomain: lower-case letters, digits, '-' and '.')"
    )]
    ServiceAccount(String),
    /// `[config]` holds a value JSON cannot carry.
    #[error("config: {0}")]
    Config(#[source] serde_json::Error),
    /// A Secret reference in `[config]` written wrongly.
    #[error(transparent)]
    SecretRef(#[from] crate::secrets::InvalidRef),
    /// `webhooks.timeout-seconds` outside what the API server accepts.
    #[error("webhooks.timeout-seconds must be between 1 and 30, not {0}")]
    WebhookTimeout(u32),
    /// A selector of `[webhooks]` that is no `LabelSelector`.
    #[error("webhooks.{field}: {reason}")]
    Selector { field: &'static str, reason: String },
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
        Self::from_file(toml::from_str(text)?)
    }

    /// Reads the same keys as a settings file from a JSON object: a `Plugin` resource's
    /// `spec.settings`.
    ///
    /// # Errors
    ///
    /// What is wrong, naming the field.
    pub fn from_json(value: &Value) -> Result<Self, InvalidSettings> {
        Self::from_file(File::deserialize(value).map_err(InvalidSettings::Json)?)
    }

    fn from_file(file: File) -> Result<Self, InvalidSettings> {
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
        let webhooks = webhook_settings(file.webhooks)?;
        let defaults = HttpSettings::default();
        let events = EventSettings::default();
        Ok(Self {
            enabled: file.enabled,
            namespace: file.namespace,
            service_account: file.service_account.map(service_account).transpose()?,
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
            webhooks,
            config,
        })
    }

    /// `limits` lowered by these settings.
    pub fn lower(&self, limits: Limits) -> Limits {
        limits.lowered_to(self.deadline, self.memory_bytes)
    }
}

/// `name`, if it can name a `ServiceAccount` (a DNS subdomain, as the API server checks).
///
/// # Errors
///
/// When it cannot.
pub fn service_account(name: String) -> Result<String, InvalidSettings> {
    let label = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && l.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    if name.len() <= 253 && name.split('.').all(label) { Ok(name) } else { Err(InvalidSettings::ServiceAccount(name)) }
}

fn webhook_settings(file: FileWebhooks) -> Result<WebhookSettings, InvalidSettings> {
    let defaults = WebhookSettings::default();
    let timeout_seconds = file.timeout_seconds.unwrap_or(defaults.timeout_seconds);
    if !(1..=30).contains(&timeout_seconds) {
        return Err(InvalidSettings::WebhookTimeout(timeout_seconds));
    }
    let selector = |field: &'static str, value: Option<toml::Value>| -> Result<Option<Value>, InvalidSettings> {
        let Some(value) = value else { return Ok(None) };
        let json = serde_json::to_value(value).map_err(InvalidSettings::Config)?;
        serde_json::from_value::<k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector>(json.clone())
            .map_err(|e| InvalidSettings::Selector { field, reason: e.to_string() })?;
        Ok(Some(json))
    };
    Ok(WebhookSettings {
        failure_policy: file.failure_policy.unwrap_or(defaults.failure_policy),
        timeout_seconds,
        match_policy: file.match_policy.unwrap_or(defaults.match_policy),
        reinvocation: file.reinvocation_policy.unwrap_or(defaults.reinvocation),
        namespace_selector: selector("namespace-selector", file.namespace_selector)?,
        object_selector: selector("object-selector", file.object_selector)?,
    })
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
    fn the_service_account_is_a_serviceaccount_name() {
        let s = Settings::parse("service-account = \"team-a.reconciler\"\n").unwrap();
        assert_eq!(s.service_account.as_deref(), Some("team-a.reconciler"));
        let err = Settings::parse("service-account = \"Team_A\"\n").unwrap_err();
        assert_eq!(
            err.to_string(),
            "service-account \"Team_A\" is no ServiceAccount name (a DNS subdomain: lower-case letters, digits, '-' and '.')"
        );
    }

    #[test]
    fn a_plugin_resources_settings_are_read_as_a_settings_file_is() {
        let toml = Settings::parse(
            "namespace = \"team-a\"\n[limits]\ndeadline-ms = 250\n[http]\nallow = [\"https://api.example\"]\n[config]\nreplicas = 3\n",
        )
        .unwrap();
        let json = Settings::from_json(&json!({
            "namespace": "team-a",
            "limits": {"deadline-ms": 250},
            "http": {"allow": ["https://api.example"]},
            "config": {"replicas": 3}
        }))
        .unwrap();
        assert_eq!(json, toml);
        let err = Settings::from_json(&json!({"limits": {"deadline": 250}})).unwrap_err();
        assert!(err.to_string().contains("unknown field `deadline`"), "{err}");
        let err = Settings::from_json(&json!({"limits": {"memory-mib": 0}})).unwrap_err();
        assert_eq!(err.to_string(), "limits.memory-mib must be positive");
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
    fn webhook_settings_are_read_and_checked() {
        let s = Settings::parse(
            "[webhooks]\nfailure-policy = \"Ignore\"\ntimeout-seconds = 3\nmatch-policy = \"Exact\"\nreinvocation-policy = \"IfNeeded\"\nnamespace-selector = { matchLabels = { team = \"a\" } }\n",
        )
        .unwrap();
        assert_eq!(s.webhooks.failure_policy, FailurePolicy::Ignore);
        assert_eq!(s.webhooks.timeout_seconds, 3);
        assert_eq!(s.webhooks.match_policy, MatchPolicy::Exact);
        assert_eq!(s.webhooks.reinvocation, Reinvocation::IfNeeded);
        assert_eq!(s.webhooks.namespace_selector, Some(json!({"matchLabels": {"team": "a"}})));
        let err = Settings::parse("[webhooks]\ntimeout-seconds = 31\n").unwrap_err().to_string();
        assert_eq!(err, "webhooks.timeout-seconds must be between 1 and 30, not 31");
        let err = Settings::parse("[webhooks]\nobject-selector = { matchLabels = 3 }\n").unwrap_err().to_string();
        assert!(err.starts_with("webhooks.object-selector: "), "{err}");
        let err = Settings::parse("[webhooks]\nfailure-policy = \"Maybe\"\n").unwrap_err().to_string();
        assert!(err.contains("Maybe"), "{err}");
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
