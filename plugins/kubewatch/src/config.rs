//! The plugin's settings: kubewatch's own configuration (`.kubewatch.yaml`, or the Helm
//! chart's values) in the `[config]` of `kubewatch.toml`, so an existing one can be
//! carried over. Unlike kubewatch, every handler configured is notified, not only the
//! first.

use std::collections::BTreeMap;

use kubewasm_sdk::serde_json::Value;
use serde::Deserialize;

/// kubewatch's configuration, as far as this plugin reads it.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct Config {
    pub handler: Handlers,
    /// `deployment = true`, `pod = true`...: the kinds to notify of (none by default,
    /// as in kubewatch).
    pub resource: BTreeMap<String, bool>,
    /// Notify of objects in this namespace only (cluster-scoped kinds always); empty:
    /// all. (The host's own `namespace` setting watches one namespace, which costs less.)
    pub namespace: String,
}

/// The handlers to notify; any number of them.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct Handlers {
    pub webhook: Option<Webhook>,
    pub slackwebhook: Option<SlackWebhook>,
    pub msteams: Option<MsTeams>,
    pub cloudevent: Option<CloudEvent>,
    /// kubewatch's other handlers (slack, hipchat, mattermost, flock, smtp, lark): not
    /// supported here; logged.
    #[serde(flatten)]
    pub unsupported: BTreeMap<String, Value>,
}

/// The generic webhook.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct Webhook {
    pub url: String,
}

/// A Slack-compatible incoming webhook.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct SlackWebhook {
    pub slackwebhookurl: String,
    pub channel: String,
    pub username: String,
    pub emoji: String,
}

/// A Microsoft Teams incoming webhook.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct MsTeams {
    pub webhookurl: String,
}

/// A CloudEvents receiver (binary mode).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct CloudEvent {
    pub url: String,
    /// `ce-source`; default kubewatch's `https://github.com/aantn/kubewatch`.
    pub source: Option<String>,
    /// `ce-type`; default kubewatch's `KUBERNETES_TOPOLOGY_CHANGE`.
    #[serde(rename = "type")]
    pub type_: Option<String>,
    /// The data's `clusterUid`.
    pub clusteruid: String,
}

impl CloudEvent {
    pub fn source(&self) -> &str {
        self.source.as_deref().unwrap_or("https://github.com/aantn/kubewatch")
    }

    pub fn type_(&self) -> &str {
        self.type_.as_deref().unwrap_or("KUBERNETES_TOPOLOGY_CHANGE")
    }
}

impl Config {
    /// Whether changes of the kind with `resource:` key `key` are notified.
    pub fn watches(&self, key: &str) -> bool {
        self.resource.get(key).copied().unwrap_or(false)
    }
}
