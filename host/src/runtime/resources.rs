//! The `Plugin` resources a host runs beside its plugin directory: watched, each new
//! generation's module fetched (pulled, verified, loaded: `resource::fetch`), and the
//! outcome written to the object's status. A generation that fails at any step leaves
//! the version that runs in place; the conditions say which step failed and why, and
//! `status.digest` keeps naming what runs. A generation that failed at its registry or
//! pull Secret is attempted again every [`RETRY`].

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::StreamExt as _;
use futures::stream::BoxStream;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams};
use kube::runtime::{WatchStreamExt as _, watcher};
use serde_json::json;

use crate::controller::Rollout;
use crate::distribution::{BlobCache, DockerConfig, TrustedRoot};
use crate::plugin::{Engine, Plugin, Settings};
use crate::resource::crd::{GROUP, KIND, VERSION};
use crate::resource::crd::{RolloutMode, RolloutSpec};
use crate::resource::status::{Serving, Succeeded, conditions, manifest_summary, ready};
use crate::resource::{self, Condition, Failure, Fetched, PluginSpec, Step};

/// How often a generation that failed at its registry or pull Secret is attempted again.
pub(super) const RETRY: std::time::Duration = std::time::Duration::from_secs(10);

/// The `Plugin` objects of the cluster and what the host made of each.
pub(super) struct Resources {
    api: Api<DynamicObject>,
    secrets: Api<Secret>,
    cache: Option<BlobCache>,
    trusted_root: Arc<TrustedRoot>,
    pub(super) slots: BTreeMap<String, Slot>,
}

/// One `Plugin` object as the host runs it.
#[derive(Default)]
pub(super) struct Slot {
    /// The version that runs (or last ran) and its settings.
    pub(super) plugin: Option<Arc<Plugin>>,
    pub(super) settings: Settings,
    /// `spec.source.oci` of the generation last attempted.
    pub(super) reference: String,
    /// Why the last generation attempted is not in use.
    pub(super) error: Option<String>,
    /// The generation last attempted, and its spec.
    generation: Option<i64>,
    spec: Option<PluginSpec>,
    /// Whether its last attempt failed for a reason that may pass.
    retry: bool,
    /// The manifest digest of what runs.
    digest: Option<String>,
    conditions: Vec<Condition>,
    /// The status last written, so that an unchanged one is not written again.
    published: Option<serde_json::Value>,
    /// The candidate of `spec.rollout`, if the spec has one.
    pub(super) candidate: Option<Candidate>,
}

/// The candidate version of a `Plugin` object's rollout, as the host runs it.
pub(super) struct Candidate {
    pub(super) spec: RolloutSpec,
    /// The manifest digest of the candidate, and its module as loaded.
    digest: Option<String>,
    plugin: Option<Arc<Plugin>>,
    /// What runs beside the active version, once it does.
    pub(super) rollout: Option<Arc<Rollout>>,
    /// Why the candidate does not run.
    error: Option<String>,
}

impl Candidate {
    /// A candidate that runs as `rollout`.
    pub(super) fn running(spec: RolloutSpec, fetched: &Fetched, rollout: Arc<Rollout>) -> Self {
        let (digest, plugin) = (Some(fetched.digest.clone()), Some(fetched.plugin.clone()));
        Self { spec, digest, plugin, rollout: Some(rollout), error: None }
    }

    /// A candidate that does not run, and why.
    pub(super) fn refused(spec: RolloutSpec, digest: Option<String>, error: String) -> Self {
        Self { spec, digest, plugin: None, rollout: None, error: Some(error) }
    }

    /// `status.rollout`: how the candidate fares.
    fn status(&self) -> serde_json::Value {
        let mode = match self.spec.mode {
            RolloutMode::Shadow => "Shadow",
            RolloutMode::Canary => "Canary",
        };
        let mut status = match (&self.error, &self.rollout) {
            (Some(error), _) => json!({"phase": "Failed", "message": error}),
            (None, None) => json!({"phase": "Pending"}),
            (None, Some(rollout)) => {
                let report = rollout.report();
                let (phase, message) = match (&report.rolled_back, self.spec.mode) {
                    (Some(why), _) => ("RolledBack", format!("every parent runs the active version: {why}")),
                    (None, RolloutMode::Shadow) => {
                        ("Shadow", "the candidate answers every reconcile after the active and writes nothing".into())
                    }
                    (None, RolloutMode::Canary) => {
                        (mode, format!("the candidate reconciles {}% of the parents", self.spec.percent.min(100)))
                    }
                };
                let mut status = serde_json::to_value(report).unwrap_or_default();
                status["phase"] = phase.into();
                status["message"] = message.into();
                status
            }
        };
        status["mode"] = mode.into();
        if let Some(digest) = &self.digest {
            status["candidateDigest"] = digest.clone().into();
        }
        status
    }
}

impl Resources {
    pub(super) fn new(client: &kube::Client, options: &super::Options, engine: &Engine) -> Self {
        let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(GROUP, VERSION, KIND));
        Self {
            api: Api::all_with(client.clone(), &resource),
            secrets: Api::namespaced(client.clone(), &options.host_namespace),
            cache: engine.cache_dir().map(BlobCache::new),
            trusted_root: options.trusted_root.clone(),
            slots: BTreeMap::new(),
        }
    }

    /// The changes of every `Plugin` object, retried with backoff when the watch fails;
    /// boxed, so the host's loop does not carry an object's size in its own.
    pub(super) fn watch(&self) -> BoxStream<'static, Result<Box<watcher::Event<DynamicObject>>, Box<watcher::Error>>> {
        watcher(self.api.clone(), watcher::Config::default())
            .default_backoff()
            .map(|event| event.map(Box::new).map_err(Box::new))
            .boxed()
    }

    /// Fetches the module of `object`'s generation, unless that generation was attempted
    /// already: `None` then.
    pub(super) async fn attempt(
        &mut self,
        engine: &Engine,
        object: &DynamicObject,
    ) -> Option<(String, Result<Fetched, Failure>)> {
        let name = object.metadata.name.clone()?;
        let generation = object.metadata.generation.unwrap_or_default();
        let slot = self.slots.entry(name.clone()).or_default();
        if slot.generation == Some(generation) {
            return None;
        }
        slot.generation = Some(generation);
        match serde_json::from_value::<PluginSpec>(object.data["spec"].clone()) {
            Ok(spec) => {
                slot.reference.clone_from(&spec.source.oci);
                slot.spec = Some(spec);
            }
            Err(e) => {
                slot.spec = None;
                let failure = Failure { step: Step::Pulled, reason: "SpecInvalid", message: format!("spec: {e}") };
                return Some((name, Err(failure)));
            }
        }
        Some((name.clone(), self.fetch(engine, &name).await?))
    }

    /// The objects whose last attempt failed for a reason that may pass (the registry
    /// or the pull Secret), to be attempted again.
    pub(super) fn due(&self) -> Vec<String> {
        self.slots.iter().filter(|(_, slot)| slot.retry).map(|(name, _)| name.clone()).collect()
    }

    /// Fetches the module of `name`'s current spec.
    pub(super) async fn fetch(&self, engine: &Engine, name: &str) -> Option<Result<Fetched, Failure>> {
        let spec = self.slots.get(name)?.spec.as_ref()?;
        Some(self.fetch_spec(engine, name, spec).await)
    }

    /// Fetches the candidate of `name`'s current spec, if it rolls one out: pulled with
    /// its own source's credentials, verified with the spec's keys.
    pub(super) async fn fetch_candidate(&self, engine: &Engine, name: &str) -> Option<Result<Fetched, Failure>> {
        let spec = self.slots.get(name)?.spec.as_ref()?;
        let rollout = spec.rollout.as_ref()?;
        let candidate = PluginSpec { source: rollout.candidate.clone(), rollout: None, ..spec.clone() };
        Some(self.fetch_spec(engine, name, &candidate).await)
    }

    /// The spec of `name`'s generation last attempted.
    pub(super) fn spec(&self, name: &str) -> Option<&PluginSpec> {
        self.slots.get(name)?.spec.as_ref()
    }

    async fn fetch_spec(&self, engine: &Engine, name: &str, spec: &PluginSpec) -> Result<Fetched, Failure> {
        let credentials = match &spec.source.pull_secret {
            None => DockerConfig::default(),
            Some(secret) => match self.pull_secret(secret).await {
                Ok(credentials) => credentials,
                Err(message) => {
                    return Err(Failure { step: Step::Pulled, reason: "PullSecretUnreadable", message });
                }
            },
        };
        let slot = self.slots.get(name);
        let loaded = slot
            .and_then(|s| s.plugin.clone())
            .into_iter()
            .chain(slot.and_then(|s| s.candidate.as_ref()?.plugin.clone()))
            .collect();
        let context = resource::Context {
            engine,
            credentials,
            cache: self.cache.as_ref(),
            trusted_root: self.trusted_root.clone(),
            loaded,
        };
        resource::fetch(name, spec, context).await
    }

    async fn pull_secret(&self, name: &str) -> Result<DockerConfig, String> {
        let secret = self.secrets.get(name).await.map_err(|e| format!("spec.source.pullSecret {name}: {e}"))?;
        DockerConfig::from_secret(&secret).map_err(|e| e.to_string())
    }

    /// Whether a candidate of some `Plugin` object is rolled out.
    pub(super) fn rolling_out(&self) -> bool {
        self.slots.values().any(|s| s.candidate.as_ref().is_some_and(|c| c.rollout.is_some()))
    }

    /// Whether a `Plugin` object runs a plugin of this name.
    pub(super) fn runs(&self, plugin: &str) -> bool {
        self.slots.values().any(|s| s.plugin.as_ref().is_some_and(|p| p.manifest().name == plugin))
    }

    /// Records the outcome of `name`'s attempt in its conditions (`Ready` aside), which
    /// `publish` writes; on success the slot already holds the new version.
    pub(super) fn report(&mut self, name: &str, attempt: Result<&Fetched, &Failure>) {
        let Some(slot) = self.slots.get_mut(name) else { return };
        let now = jiff::Timestamp::now().to_string();
        let generation = slot.generation.unwrap_or_default();
        let summary;
        let outcome = match attempt {
            Ok(fetched) => {
                slot.digest = Some(fetched.digest.clone());
                slot.error = None;
                slot.retry = false;
                summary = Succeeded {
                    reference: &slot.reference,
                    digest: &fetched.digest,
                    signed_by: fetched.signed_by.as_deref(),
                    plugin: &fetched.plugin.manifest().name,
                };
                Ok(&summary)
            }
            Err(failure) => {
                slot.error = Some(failure.to_string());
                slot.retry = matches!(failure.reason, "PullFailed" | "PullSecretUnreadable");
                tracing::error!(plugin = %name, "Plugin not updated, the running version stays: {failure}");
                Err(failure)
            }
        };
        let mut next = conditions(outcome, generation, &now, &slot.conditions);
        // Ready stays as it was until `publish` says what runs now.
        next.extend(slot.conditions.iter().find(|c| c.kind == "Ready").cloned());
        slot.conditions = next;
    }

    /// The plugins of the objects, by object name: what `publish` asks the runners about.
    pub(super) fn plugin_names(&self) -> Vec<(String, Option<String>)> {
        self.slots
            .iter()
            .map(|(name, slot)| (name.clone(), slot.plugin.as_ref().map(|p| p.manifest().name.clone())))
            .collect()
    }

    /// Writes `name`'s status, with its `Ready` condition from what runs (`running`, or
    /// waiting for a kind), unless it is what was written last.
    pub(super) async fn publish(&mut self, name: &str, running: bool, waiting_for: Option<&str>) {
        let Some(slot) = self.slots.get_mut(name) else { return };
        let generation = slot.generation.unwrap_or_default();
        let serving = Serving {
            refused: slot.error.is_some(),
            enabled: slot.settings.enabled,
            running,
            waiting_for,
            digest: slot.digest.as_deref(),
        };
        let now = jiff::Timestamp::now().to_string();
        let ready = ready(&serving, generation, &now, &slot.conditions);
        slot.conditions.retain(|c| c.kind != "Ready");
        slot.conditions.push(ready);
        let status = json!({
            "observedGeneration": generation,
            "digest": slot.digest,
            "layerDigest": slot.plugin.as_ref().map(|p| format!("sha256:{}", p.hash())),
            "plugin": slot.plugin.as_ref().map(|p| p.manifest().name.clone()),
            "manifest": slot.plugin.as_deref().map(manifest_summary),
            "lastError": slot.error.clone().unwrap_or_default(),
            "conditions": slot.conditions,
            "rollout": slot.candidate.as_ref().map(Candidate::status),
        });
        // Transition times aside, nothing changed: nothing to write.
        let comparable = |status: &serde_json::Value| {
            let mut status = status.clone();
            status["conditions"].as_array_mut().into_iter().flatten().for_each(|c| {
                c["lastTransitionTime"].take();
            });
            status
        };
        if slot.published.as_ref().map(comparable) == Some(comparable(&status)) {
            return;
        }
        let patch = json!({"status": status});
        match self.api.patch_status(name, &PatchParams::default(), &Patch::Merge(&patch)).await {
            Ok(_) => slot.published = Some(status),
            Err(e) => tracing::warn!(plugin = %name, error = %e, "Plugin status not written"),
        }
    }
}
