//! A plugin's operator settings: the optional `NAME.toml` beside `NAME.wasm`.
//!
//! ```toml
//! enabled = true           # false stops the plugin's controller, children stay
//! namespace = "team-a"     # reconcile parents (and watch children) in one namespace only
//!
//! [limits]                 # lower the plugin's own limits, never raise them
//! deadline-ms = 500
//! memory-mib = 32
//!
//! [config]                 # anything: handed to the plugin as `config` (JSON)
//! image-registry = "registry.example.com"
//! ```

use std::path::Path;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use super::sandbox::Limits;

/// What an operator set for one plugin.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    pub enabled: bool,
    pub namespace: Option<String>,
    pub deadline: Option<Duration>,
    pub memory_bytes: Option<u64>,
    pub config: Value,
}

impl Default for Settings {
    fn default() -> Self {
        Self { enabled: true, namespace: None, deadline: None, memory_bytes: None, config: Value::Null }
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
    config: Option<toml::Value>,
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
#[error("{file}: {message}")]
pub struct SettingsError {
    pub file: String,
    pub message: String,
}

impl Settings {
    /// Reads `path`.
    ///
    /// # Errors
    ///
    /// A [`SettingsError`] naming the file, and the line and field for bad TOML.
    pub fn read(path: &Path) -> Result<Self, SettingsError> {
        let error = |message: String| SettingsError { file: path.display().to_string(), message };
        let text = std::fs::read_to_string(path).map_err(|e| error(e.to_string()))?;
        Self::parse(&text).map_err(error)
    }

    /// Parses the text of a settings file.
    ///
    /// # Errors
    ///
    /// The parser's message, with line and column.
    pub fn parse(text: &str) -> Result<Self, String> {
        let file: File = toml::from_str(text).map_err(|e| e.to_string().trim_end().to_string())?;
        if file.limits.deadline_ms == Some(0) || file.limits.memory_mib == Some(0) {
            return Err("limits must be positive".into());
        }
        let config = match file.config {
            Some(value) => serde_json::to_value(value).map_err(|e| format!("config: {e}"))?,
            None => Value::Null,
        };
        Ok(Self {
            enabled: file.enabled,
            namespace: file.namespace,
            deadline: file.limits.deadline_ms.map(|ms| Duration::from_millis(ms.into())),
            memory_bytes: file.limits.memory_mib.map(|mib| u64::from(mib) << 20),
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
    fn an_empty_file_means_defaults() {
        assert_eq!(Settings::parse("").unwrap(), Settings::default());
    }

    #[test]
    fn mistakes_are_named_with_their_line() {
        let err = Settings::parse("enabled = true\nnamepsace = \"x\"\n").unwrap_err();
        assert!(err.contains("line 2") && err.contains("namepsace"), "{err}");
        let err = Settings::parse("[limits]\ndeadline-ms = \"fast\"\n").unwrap_err();
        assert!(err.contains("line 2"), "{err}");
        assert!(Settings::parse("[limits]\nmemory-mib = 0\n").is_err());
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
