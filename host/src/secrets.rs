//! Secrets by reference: a plugin's settings may name a Secret key anywhere in
//! `[config]` (`token = { secretKeyRef = { name = "slack", key = "token" } }`, the
//! spelling of a Pod's `env[].valueFrom.secretKeyRef`), and the host hands the plugin
//! the value in its `config`. The host reads only those Secrets, from its own namespace,
//! follows their changes (the next call has the new value; every parent is reconciled
//! again), and keeps the values out of its logs, events and metrics: the values are
//! [`Resolved::hidden`], which the sandbox masks in what a plugin writes. No plugin needs
//! to read Secrets itself.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, PoisonError};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Secret;
use kube::api::Api;
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::Value;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// The key of a reference: `{secretKeyRef: {name, key}}`.
const REF: &str = "secretKeyRef";

/// One Secret key named in a plugin's settings.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct SecretRef {
    pub name: String,
    pub key: String,
}

impl std::fmt::Display for SecretRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "secret {} key {}", self.name, self.key)
    }
}

/// A `secretKeyRef` object written wrongly; `path` says where in `[config]`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("config.{path}: {why}; write {{ secretKeyRef = {{ name = \"NAME\", key = \"KEY\" }} }}")]
pub struct InvalidRef {
    pub path: String,
    pub why: String,
}

/// Why a plugin's config cannot be resolved now.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SecretError {
    /// The Secret does not exist (yet), or the host cannot read it.
    #[error("{namespace}/{name}: the Secret the plugin's settings name does not exist or cannot be read")]
    Missing { namespace: String, name: String },
    /// The Secret has no such key.
    #[error("{namespace}/{name}: the Secret has no key {key:?}")]
    NoKey { namespace: String, name: String, key: String },
    /// The value is not UTF-8 text.
    #[error("{namespace}/{name} key {key:?}: the value is not UTF-8 text")]
    NotText { namespace: String, name: String, key: String },
}

/// Every reference in `config`, each once, in order.
///
/// # Errors
///
/// An [`InvalidRef`] for a `secretKeyRef` object that is not exactly `{name, key}` with
/// text values.
pub fn refs(config: &Value) -> Result<Vec<SecretRef>, InvalidRef> {
    let mut found = BTreeSet::new();
    walk(config, "", &mut |path, object| {
        let r = parse_ref(path, object)?;
        found.insert(r);
        Ok(())
    })?;
    Ok(found.into_iter().collect())
}

/// Calls `f` with each `secretKeyRef` object in `value` and its path.
fn walk(
    value: &Value,
    path: &str,
    f: &mut impl FnMut(&str, &serde_json::Map<String, Value>) -> Result<(), InvalidRef>,
) -> Result<(), InvalidRef> {
    match value {
        Value::Object(map) if map.contains_key(REF) => f(path, map),
        Value::Object(map) => {
            for (k, v) in map {
                walk(v, &join(path, k), f)?;
            }
            Ok(())
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                walk(v, &format!("{path}[{i}]"), f)?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() { key.to_string() } else { format!("{path}.{key}") }
}

fn parse_ref(path: &str, object: &serde_json::Map<String, Value>) -> Result<SecretRef, InvalidRef> {
    let invalid = |why: &str| InvalidRef { path: path.to_string(), why: why.to_string() };
    if object.len() != 1 {
        return Err(invalid("a secretKeyRef stands alone in its table"));
    }
    let Some(Value::Object(inner)) = object.get(REF) else { return Err(invalid("secretKeyRef must be a table")) };
    let text = |field: &str| match inner.get(field) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        _ => Err(invalid(&format!("secretKeyRef needs a `{field}`, as text"))),
    };
    if let Some(other) = inner.keys().find(|k| *k != "name" && *k != "key") {
        return Err(invalid(&format!("secretKeyRef has an unknown field `{other}`")));
    }
    Ok(SecretRef { name: text("name")?, key: text("key")? })
}

/// A plugin's config with its references replaced by their values.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Resolved {
    pub config: Value,
    /// The values put in: never to be shown.
    pub hidden: Vec<String>,
}

/// `config` with each reference replaced by what `lookup` finds.
///
/// # Errors
///
/// The first reference `lookup` cannot resolve.
pub fn substitute(
    config: &Value,
    lookup: &impl Fn(&SecretRef) -> Result<String, SecretError>,
) -> Result<Resolved, SecretError> {
    let mut hidden = Vec::new();
    let config = replace(config, lookup, &mut hidden)?;
    hidden.sort();
    hidden.dedup();
    Ok(Resolved { config, hidden })
}

fn replace(
    value: &Value,
    lookup: &impl Fn(&SecretRef) -> Result<String, SecretError>,
    hidden: &mut Vec<String>,
) -> Result<Value, SecretError> {
    Ok(match value {
        Value::Object(map) if map.contains_key(REF) => match parse_ref("", map) {
            Ok(r) => {
                let secret = lookup(&r)?;
                hidden.push(secret.clone());
                Value::String(secret)
            }
            // Checked when the settings were read; left as it is otherwise.
            Err(_) => value.clone(),
        },
        Value::Object(map) => Value::Object(
            map.iter().map(|(k, v)| Ok((k.clone(), replace(v, lookup, hidden)?))).collect::<Result<_, _>>()?,
        ),
        Value::Array(items) => {
            Value::Array(items.iter().map(|v| replace(v, lookup, hidden)).collect::<Result<_, _>>()?)
        }
        other => other.clone(),
    })
}

/// The Secrets one plugin's settings name, followed as they change. Cheap to clone.
#[derive(Clone, Default)]
pub struct Secrets(Option<Arc<Inner>>);

/// A Secret's keys and values.
type Data = BTreeMap<String, Vec<u8>>;

struct Inner {
    namespace: String,
    /// By Secret name: its data, `None` until seen or once gone.
    data: Mutex<BTreeMap<String, Option<Data>>>,
    /// The Secrets a relist under way has not listed (yet): gone at its end.
    unlisted: Mutex<BTreeSet<String>>,
    changes: watch::Sender<u64>,
    tasks: Mutex<Vec<JoinHandle<()>>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        for task in self.tasks.get_mut().unwrap_or_else(PoisonError::into_inner).iter() {
            task.abort();
        }
    }
}

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            // Never the values.
            Some(inner) => f.debug_struct("Secrets").field("namespace", &inner.namespace).finish_non_exhaustive(),
            None => f.write_str("Secrets(none)"),
        }
    }
}

impl Secrets {
    /// No Secret is followed: configs without references resolve to themselves.
    pub fn none() -> Self {
        Self(None)
    }

    /// Follows the Secrets `config` names, in `namespace`: one watch each, by name
    /// (what RBAC's `resourceNames` allows).
    ///
    /// # Errors
    ///
    /// An [`InvalidRef`] when `config` has a malformed reference.
    pub fn follow(client: &kube::Client, namespace: &str, config: &Value) -> Result<Self, InvalidRef> {
        let names: BTreeSet<String> = refs(config)?.into_iter().map(|r| r.name).collect();
        if names.is_empty() {
            return Ok(Self::none());
        }
        let (changes, _) = watch::channel(0);
        let data = Mutex::new(names.iter().map(|n| (n.clone(), None)).collect());
        let inner = Arc::new(Inner {
            namespace: namespace.to_string(),
            data,
            unlisted: Mutex::new(BTreeSet::new()),
            changes,
            tasks: Mutex::new(Vec::new()),
        });
        // The watches hold the data weakly, so that dropping the last `Secrets` ends them;
        // they start once `inner` is whole (a watcher's first event, `Init`, comes at once).
        let tasks = names.iter().map(|name| {
            let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
            let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
            let (me, name) = (Arc::downgrade(&inner), name.clone());
            tokio::spawn(async move {
                let mut stream = watcher(api, config).default_backoff().boxed();
                while let Some(event) = stream.next().await {
                    let Some(inner) = me.upgrade() else { return };
                    match event {
                        Ok(event) => inner.apply(&name, event),
                        Err(e) => tracing::debug!(secret = %name, error = %e, "Secret watch error; it resumes"),
                    }
                }
            })
        });
        inner.tasks.lock().unwrap_or_else(PoisonError::into_inner).extend(tasks);
        Ok(Self(Some(inner)))
    }

    /// `config` with its references resolved now.
    ///
    /// # Errors
    ///
    /// A [`SecretError`] naming the Secret (and key) that cannot be read.
    pub fn resolve(&self, config: &Value) -> Result<Resolved, SecretError> {
        let Some(inner) = &self.0 else {
            // Nothing followed: a reference (settings of a test) cannot resolve.
            return substitute(config, &|r| {
                Err(SecretError::Missing { namespace: String::new(), name: r.name.clone() })
            });
        };
        let data = inner.data.lock().unwrap_or_else(PoisonError::into_inner);
        substitute(config, &|r| {
            let (namespace, name, key) = (inner.namespace.clone(), r.name.clone(), r.key.clone());
            let secret = data.get(&r.name).and_then(Option::as_ref);
            let Some(secret) = secret else { return Err(SecretError::Missing { namespace, name }) };
            let Some(bytes) = secret.get(&r.key) else { return Err(SecretError::NoKey { namespace, name, key }) };
            String::from_utf8(bytes.clone()).map_err(|_| SecretError::NotText { namespace, name, key })
        })
    }

    /// Ticks each time a followed Secret changes.
    pub fn changes(&self) -> Option<watch::Receiver<u64>> {
        self.0.as_ref().map(|inner| inner.changes.subscribe())
    }
}

impl Inner {
    fn apply(&self, name: &str, event: watcher::Event<Secret>) {
        let mut unlisted = self.unlisted.lock().unwrap_or_else(PoisonError::into_inner);
        let value = match event {
            watcher::Event::Apply(secret) => Some(contents(secret)),
            watcher::Event::InitApply(secret) => {
                unlisted.remove(name);
                Some(contents(secret))
            }
            watcher::Event::Delete(_) => None,
            // The value stays while a relist runs: a call meanwhile must not fail for it.
            watcher::Event::Init => {
                unlisted.insert(name.to_string());
                return;
            }
            // A relist that did not list it: gone.
            watcher::Event::InitDone if unlisted.remove(name) => None,
            watcher::Event::InitDone => return,
        };
        drop(unlisted);
        let mut data = self.data.lock().unwrap_or_else(PoisonError::into_inner);
        if data.get(name) != Some(&value) {
            data.insert(name.to_string(), value);
            self.changes.send_modify(|n| *n += 1);
        }
    }
}

/// A Secret's keys and values: `data`, with `stringData` over it.
fn contents(secret: Secret) -> Data {
    let mut out: Data = secret.data.unwrap_or_default().into_iter().map(|(k, v)| (k, v.0)).collect();
    for (k, v) in secret.string_data.unwrap_or_default() {
        out.insert(k, v.into_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn config() -> Value {
        json!({
            "handler": {
                "slackwebhook": {"channel": "#alerts", "slackwebhookurl": {"secretKeyRef": {"name": "kw", "key": "slack"}}},
                "webhook": {"url": {"secretKeyRef": {"name": "kw", "key": "hook"}}},
            },
            "tokens": [{"secretKeyRef": {"name": "other", "key": "t"}}],
        })
    }

    #[test]
    fn references_are_found_at_any_depth() {
        let found = refs(&config()).unwrap();
        let names: Vec<String> = found.iter().map(ToString::to_string).collect();
        assert_eq!(names, ["secret kw key hook", "secret kw key slack", "secret other key t"]);
    }

    #[test]
    fn a_malformed_reference_is_named_by_its_path() {
        let err = refs(&json!({"a": {"b": {"secretKeyRef": {"name": "x"}}}})).unwrap_err();
        assert_eq!(err.path, "a.b");
        assert!(err.to_string().contains("needs a `key`"), "{err}");
        let err = refs(&json!({"a": {"secretKeyRef": {"name": "x", "key": "k"}, "other": 1}})).unwrap_err();
        assert!(err.to_string().contains("stands alone"), "{err}");
        let err = refs(&json!({"a": {"secretKeyRef": {"name": "x", "key": "k", "namespace": "n"}}})).unwrap_err();
        assert!(err.to_string().contains("unknown field `namespace`"), "{err}");
    }

    #[test]
    fn values_replace_references_and_are_listed_as_hidden() {
        let resolved = substitute(&config(), &|r| Ok(format!("value-of-{}", r.key))).unwrap();
        assert_eq!(resolved.config["handler"]["webhook"]["url"], "value-of-hook");
        assert_eq!(resolved.config["handler"]["slackwebhook"]["channel"], "#alerts");
        assert_eq!(resolved.config["tokens"][0], "value-of-t");
        assert_eq!(resolved.hidden, ["value-of-hook", "value-of-slack", "value-of-t"]);
        let missing =
            substitute(&config(), &|r| Err(SecretError::Missing { namespace: "ns".into(), name: r.name.clone() }));
        assert!(missing.unwrap_err().to_string().starts_with("ns/kw:"));
    }

    #[test]
    fn a_config_without_references_resolves_to_itself() {
        let plain = json!({"a": 1});
        assert_eq!(Secrets::none().resolve(&plain).unwrap(), Resolved { config: plain, hidden: Vec::new() });
    }
}
