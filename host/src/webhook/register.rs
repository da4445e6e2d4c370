//! What points the API server at the host's webhook server: one
//! `MutatingWebhookConfiguration` and one `ValidatingWebhookConfiguration` with an entry per
//! plugin that defaults or validates, and the `spec.conversion` of the CRD of each plugin that
//! converts; made from the plugins' manifests and `[webhooks]` settings, and kept in step with
//! the plugins the host runs.
//!
//! [`Registration::of`] is pure: `kubewasm webhooks` prints it for clusters where the host may
//! not write these objects, and [`Registrar::sync`] applies it (server-side apply, field
//! manager [`MANAGER`]) whenever a plugin loads, is swapped or goes. The shapes follow
//! `admissionregistration.k8s.io/v1` and `apiextensions.k8s.io/v1` as kube-apiserver validates
//! them: webhook names of three DNS segments (`PLUGIN.kubewasm.io`), `sideEffects: None`
//! (plugins cannot have side effects, and a dry run reaches only such webhooks),
//! `admissionReviewVersions` and `conversionReviewVersions` `["v1"]`, an `https` URL without
//! query or fragment, or a Service reference whose `path` starts with `/`.

use std::collections::BTreeSet;

use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1 as admission;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiextensions;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams};
use serde_json::{Value, json};
use tracing::{debug, info, warn};

use crate::plugin::{FailurePolicy, MatchPolicy, Reinvocation, WebhookSettings};
use crate::plugin::{KindRef, Manifest, Settings};

/// The field manager the host applies webhook configurations and CRDs' conversion with. Not
/// `kubewasm`, which `kubewasm dev` installs the plugins' CRDs with: an install leaves the
/// conversion this manager set in place.
pub const MANAGER: &str = "kubewasm-webhooks";

/// The name of the host's configurations unless told otherwise.
pub const DEFAULT_NAME: &str = "kubewasm";

/// The suffix of every webhook's name: `PLUGIN.kubewasm.io`, the name the API server quotes in
/// its denials (`admission webhook "cronjob.kubewasm.io" denied the request: ...`).
pub const WEBHOOK_SUFFIX: &str = "kubewasm.io";

/// The only review version the host speaks.
const REVIEW_VERSIONS: &[&str] = &["v1"];

/// Why the objects cannot be made or applied.
#[derive(Debug, thiserror::Error)]
pub enum RegisterError {
    /// A `--url` the API server would refuse.
    #[error("webhook URL {url:?}: {reason}")]
    Url { url: String, reason: &'static str },
    /// A Service reference that is not `NAMESPACE/NAME[:PORT]`.
    #[error("webhook Service {0:?}: expected NAMESPACE/NAME or NAMESPACE/NAME:PORT")]
    Service(String),
    /// A plugin's `[webhooks]` selector that is not a `LabelSelector`.
    #[error("plugin {plugin}: webhooks.{field}: {source}")]
    Selector { plugin: String, field: &'static str, source: serde_json::Error },
    /// A plugin converts but reconciles no custom kind whose CRD could say so.
    #[error(
        "plugin {0} converts, but its parent is no custom resource: only a CRD's versions are converted by webhook"
    )]
    ConvertsNoCrd(String),
    /// An object could not be encoded as JSON (not expected of these plain types).
    #[error("cannot encode a webhook configuration: {0}")]
    Encode(#[from] serde_json::Error),
    /// The API server refused an object, or could not be reached.
    #[error("{object}: {source}")]
    Api { object: String, source: kube::Error },
}

/// The three calls a plugin answers, and the server's path for each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Call {
    Default,
    Validate,
    Convert,
}

impl Call {
    /// `/default/PLUGIN`, `/validate/PLUGIN` or `/convert/PLUGIN`: where the webhook server
    /// answers this call of `plugin`.
    pub fn path(self, plugin: &str) -> String {
        let call = match self {
            Call::Default => "default",
            Call::Validate => "validate",
            Call::Convert => "convert",
        };
        format!("/{call}/{plugin}")
    }
}

/// Where the API server reaches the host's webhook server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Endpoint {
    /// `https://HOST:PORT`, the calls' paths appended: `kubewasm dev` on loopback, and a
    /// host outside the cluster.
    Url(String),
    /// A Service in front of the host, inside the cluster: the API server dials
    /// `NAME.NAMESPACE.svc:PORT`, so the certificate must name `NAME.NAMESPACE.svc`.
    Service { namespace: String, name: String, port: u16 },
}

impl Endpoint {
    /// An `https://` base URL, checked as kube-apiserver checks a webhook's `url`
    /// (`validateWebhookClientConfig`: https, a host, no user, query or fragment; its
    /// words), with any trailing `/` dropped.
    ///
    /// # Errors
    ///
    /// [`RegisterError::Url`] saying what the API server would refuse.
    pub fn url(base: &str) -> Result<Endpoint, RegisterError> {
        let fail = |reason| RegisterError::Url { url: base.to_string(), reason };
        let parsed = url::Url::parse(base).map_err(|_| fail("not a URL"))?;
        if parsed.scheme() != "https" {
            return Err(fail("'https' is the only allowed URL scheme; desired format: https://host[/path]"));
        }
        if parsed.host_str().is_none_or(str::is_empty) {
            return Err(fail("host must be provided; desired format: https://host[/path]"));
        }
        if !parsed.username().is_empty() || parsed.password().is_some() {
            return Err(fail("user information is not permitted in the URL"));
        }
        if parsed.query().is_some() {
            return Err(fail("query parameters are not permitted in the URL"));
        }
        if parsed.fragment().is_some() {
            return Err(fail("fragments are not permitted in the URL"));
        }
        Ok(Endpoint::Url(parsed.as_str().trim_end_matches('/').to_string()))
    }

    /// `NAMESPACE/NAME` or `NAMESPACE/NAME:PORT` (port 443 unless given).
    ///
    /// # Errors
    ///
    /// [`RegisterError::Service`] for anything else.
    pub fn service(reference: &str) -> Result<Endpoint, RegisterError> {
        let fail = || RegisterError::Service(reference.to_string());
        let (namespace, rest) = reference.split_once('/').ok_or_else(fail)?;
        let (name, port) = match rest.split_once(':') {
            Some((name, port)) => (name, port.parse::<u16>().ok().filter(|p| *p > 0).ok_or_else(fail)?),
            None => (rest, 443),
        };
        if namespace.is_empty() || name.is_empty() || name.contains('/') {
            return Err(fail());
        }
        Ok(Endpoint::Service { namespace: namespace.to_string(), name: name.to_string(), port })
    }

    /// The `clientConfig` of `call` of `plugin`, trusting `ca_bundle` (PEM; `None`: the API
    /// server's system roots).
    fn client_config(&self, call: Call, plugin: &str, ca_bundle: Option<&str>) -> admission::WebhookClientConfig {
        let ca_bundle = ca_bundle.map(|pem| ByteString(pem.as_bytes().to_vec()));
        match self {
            Endpoint::Url(base) => admission::WebhookClientConfig {
                url: Some(format!("{base}{}", call.path(plugin))),
                service: None,
                ca_bundle,
            },
            Endpoint::Service { namespace, name, port } => admission::WebhookClientConfig {
                url: None,
                service: Some(admission::ServiceReference {
                    namespace: namespace.clone(),
                    name: name.clone(),
                    path: Some(call.path(plugin)),
                    port: Some(i32::from(*port)),
                }),
                ca_bundle,
            },
        }
    }
}

/// One plugin as registration sees it: what its manifest admits, and its `[webhooks]`.
#[derive(Clone, Copy, Debug)]
pub struct Admits<'a> {
    pub manifest: &'a Manifest,
    pub settings: &'a WebhookSettings,
}

impl<'a> Admits<'a> {
    pub fn new(manifest: &'a Manifest, settings: &'a Settings) -> Self {
        Admits { manifest, settings: &settings.webhooks }
    }
}

/// The CRD conversion of one converting plugin's parent.
#[derive(Clone, Debug, PartialEq)]
pub struct Conversion {
    /// The CRD's name, `PLURAL.GROUP`.
    pub crd: String,
    pub plugin: String,
    pub conversion: apiextensions::CustomResourceConversion,
}

impl Conversion {
    /// The CRD as applied: its name and `spec.conversion`, nothing else (server-side apply
    /// merges it into the CRD the plugin defines; the manager owns only these fields).
    pub fn apply_configuration(&self) -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": { "name": self.crd },
            "spec": { "conversion": self.conversion },
        })
    }
}

/// Everything the API server needs to call the plugins: empty parts are absent.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Registration {
    pub mutating: Option<admission::MutatingWebhookConfiguration>,
    pub validating: Option<admission::ValidatingWebhookConfiguration>,
    pub conversions: Vec<Conversion>,
}

impl Registration {
    /// The objects for `plugins`, in configurations called `name`, their webhooks in the
    /// plugins' name order (the order the API server calls mutating webhooks in).
    ///
    /// # Errors
    ///
    /// A plugin's selector that is no `LabelSelector`, or a converting plugin without a
    /// custom parent kind.
    pub fn of(
        name: &str,
        plugins: &[Admits<'_>],
        endpoint: &Endpoint,
        ca_bundle: Option<&str>,
    ) -> Result<Registration, RegisterError> {
        let mut plugins = plugins.to_vec();
        plugins.sort_by(|a, b| a.manifest.name.cmp(&b.manifest.name));
        let mut mutating = Vec::new();
        let mut validating = Vec::new();
        let mut conversions = Vec::new();
        for plugin in &plugins {
            let (manifest, settings) = (plugin.manifest, plugin.settings);
            if !manifest.defaults.is_empty() {
                let hook = webhook(manifest, settings, Call::Default, endpoint, ca_bundle)?;
                mutating.push(admission::MutatingWebhook {
                    reinvocation_policy: Some(reinvocation(settings.reinvocation).into()),
                    ..mutating_of(hook)
                });
            }
            if !manifest.validates.is_empty() {
                validating.push(webhook(manifest, settings, Call::Validate, endpoint, ca_bundle)?);
            }
            if manifest.converts {
                conversions.push(conversion(manifest, endpoint, ca_bundle)?);
            }
        }
        let metadata = || ObjectMeta {
            name: Some(name.to_string()),
            labels: Some([("app.kubernetes.io/managed-by".to_string(), "kubewasm".to_string())].into()),
            ..ObjectMeta::default()
        };
        Ok(Registration {
            mutating: (!mutating.is_empty())
                .then(|| admission::MutatingWebhookConfiguration { metadata: metadata(), webhooks: Some(mutating) }),
            validating: (!validating.is_empty()).then(|| admission::ValidatingWebhookConfiguration {
                metadata: metadata(),
                webhooks: Some(validating),
            }),
            conversions,
        })
    }

    /// The objects as a YAML stream would hold them: the configurations (with `apiVersion`
    /// and `kind`), then each CRD's apply configuration.
    ///
    /// # Errors
    ///
    /// None in practice: the objects are plain data.
    pub fn objects(&self) -> Result<Vec<Value>, serde_json::Error> {
        let mut out = Vec::new();
        if let Some(m) = &self.mutating {
            out.push(typed(m)?);
        }
        if let Some(v) = &self.validating {
            out.push(typed(v)?);
        }
        out.extend(self.conversions.iter().map(Conversion::apply_configuration));
        Ok(out)
    }
}

/// `object` as JSON with its `apiVersion` and `kind`.
fn typed<K: kube::Resource<DynamicType = ()> + serde::Serialize>(object: &K) -> Result<Value, serde_json::Error> {
    let mut value = serde_json::to_value(object)?;
    value["apiVersion"] = json!(K::api_version(&()));
    value["kind"] = json!(K::kind(&()));
    Ok(value)
}

/// The name of the CRD of a custom `kind`: `PLURAL.GROUP`.
pub fn crd_name(kind: &KindRef) -> String {
    format!("{}.{}", kind.plural, kind.group)
}

/// The name of `plugin`'s webhooks.
pub fn webhook_name(plugin: &str) -> String {
    format!("{plugin}.{WEBHOOK_SUFFIX}")
}

/// A validating webhook entry for `call` of the plugin: the fields both kinds of entry share.
fn webhook(
    manifest: &Manifest,
    settings: &WebhookSettings,
    call: Call,
    endpoint: &Endpoint,
    ca_bundle: Option<&str>,
) -> Result<admission::ValidatingWebhook, RegisterError> {
    let selector = |field: &'static str, value: &Option<Value>| {
        let selector = match value {
            Some(value) => serde_json::from_value::<LabelSelector>(value.clone())
                .map_err(|source| RegisterError::Selector { plugin: manifest.name.clone(), field, source })?,
            None => LabelSelector::default(),
        };
        Ok::<_, RegisterError>(Some(selector))
    };
    let rules = if call == Call::Default { &manifest.defaults } else { &manifest.validates };
    Ok(admission::ValidatingWebhook {
        name: webhook_name(&manifest.name),
        admission_review_versions: REVIEW_VERSIONS.iter().map(ToString::to_string).collect(),
        side_effects: "None".into(),
        client_config: endpoint.client_config(call, &manifest.name, ca_bundle),
        rules: Some(
            rules
                .iter()
                .map(|rule| admission::RuleWithOperations {
                    api_groups: Some(vec![rule.kind.group.clone()]),
                    api_versions: Some(vec![rule.kind.version.clone()]),
                    resources: Some(vec![rule.kind.plural.clone()]),
                    operations: Some(rule.effective_operations().iter().map(|o| o.as_str().to_string()).collect()),
                    scope: Some(scope(&rule.kind).into()),
                })
                .collect(),
        ),
        failure_policy: Some(
            match settings.failure_policy {
                FailurePolicy::Fail => "Fail",
                FailurePolicy::Ignore => "Ignore",
            }
            .into(),
        ),
        match_policy: Some(
            match settings.match_policy {
                MatchPolicy::Equivalent => "Equivalent",
                MatchPolicy::Exact => "Exact",
            }
            .into(),
        ),
        timeout_seconds: Some(i32::try_from(settings.timeout_seconds).unwrap_or(30)),
        namespace_selector: selector("namespace-selector", &settings.namespace_selector)?,
        object_selector: selector("object-selector", &settings.object_selector)?,
        match_conditions: None,
    })
}

/// The same entry as a mutating webhook (`reinvocationPolicy` still to set).
fn mutating_of(hook: admission::ValidatingWebhook) -> admission::MutatingWebhook {
    admission::MutatingWebhook {
        admission_review_versions: hook.admission_review_versions,
        client_config: hook.client_config,
        failure_policy: hook.failure_policy,
        match_conditions: hook.match_conditions,
        match_policy: hook.match_policy,
        name: hook.name,
        namespace_selector: hook.namespace_selector,
        object_selector: hook.object_selector,
        reinvocation_policy: None,
        rules: hook.rules,
        side_effects: hook.side_effects,
        timeout_seconds: hook.timeout_seconds,
    }
}

fn reinvocation(policy: Reinvocation) -> &'static str {
    match policy {
        Reinvocation::Never => "Never",
        Reinvocation::IfNeeded => "IfNeeded",
    }
}

/// A rule's `scope`: the kind's own, so that the rule says what it matches.
fn scope(kind: &KindRef) -> &'static str {
    if kind.namespaced { "Namespaced" } else { "Cluster" }
}

/// The conversion of the plugin's parent CRD: `Webhook`, v1 reviews, the host's endpoint.
fn conversion(manifest: &Manifest, endpoint: &Endpoint, ca_bundle: Option<&str>) -> Result<Conversion, RegisterError> {
    let parent = manifest
        .parent
        .as_ref()
        .filter(|p| p.group.contains('.') && !p.group.ends_with(".k8s.io"))
        .ok_or_else(|| RegisterError::ConvertsNoCrd(manifest.name.clone()))?;
    let config = endpoint.client_config(Call::Convert, &manifest.name, ca_bundle);
    let client_config = apiextensions::WebhookClientConfig {
        url: config.url,
        service: config.service.map(|s| apiextensions::ServiceReference {
            namespace: s.namespace,
            name: s.name,
            path: s.path,
            port: s.port,
        }),
        ca_bundle: config.ca_bundle,
    };
    Ok(Conversion {
        crd: crd_name(parent),
        plugin: manifest.name.clone(),
        conversion: apiextensions::CustomResourceConversion {
            strategy: "Webhook".into(),
            webhook: Some(apiextensions::WebhookConversion {
                client_config: Some(client_config),
                conversion_review_versions: REVIEW_VERSIONS.iter().map(ToString::to_string).collect(),
            }),
        },
    })
}

/// Applies the [`Registration`] of the running plugins, and takes back what the plugins
/// that went had registered. Cheap to clone; one per host.
#[derive(Clone)]
pub struct Registrar {
    client: kube::Client,
    name: String,
    endpoint: Endpoint,
    ca_bundle: Option<String>,
}

impl Registrar {
    /// Registers configurations called `name` pointing at `endpoint`, trusting `ca_bundle`.
    pub fn new(client: kube::Client, name: &str, endpoint: Endpoint, ca_bundle: Option<String>) -> Self {
        Registrar { client, name: name.to_string(), endpoint, ca_bundle }
    }

    /// Makes the cluster's registration that of `plugins` (those that admit nothing are
    /// left out): applies the configurations, their entries of plugins no longer among
    /// `plugins` removed (an empty configuration is deleted), sets each converting plugin's
    /// CRD to convert through the host, and sets back to `None` the conversion of CRDs this
    /// manager had set whose plugin went. Idempotent: call it after every load, swap and
    /// removal.
    ///
    /// # Errors
    ///
    /// [`RegisterError`] naming the object the API server refused, or the plugin whose
    /// settings cannot be registered.
    pub async fn sync(&self, plugins: &[Admits<'_>]) -> Result<(), RegisterError> {
        let registration = Registration::of(&self.name, plugins, &self.endpoint, self.ca_bundle.as_deref())?;
        let params = PatchParams::apply(MANAGER).force();
        let mutating: Api<admission::MutatingWebhookConfiguration> = Api::all(self.client.clone());
        let validating: Api<admission::ValidatingWebhookConfiguration> = Api::all(self.client.clone());
        match &registration.mutating {
            Some(config) => apply(&mutating, &self.name, &typed(config)?, &params).await?,
            None => remove(&mutating, &self.name).await?,
        }
        match &registration.validating {
            Some(config) => apply(&validating, &self.name, &typed(config)?, &params).await?,
            None => remove(&validating, &self.name).await?,
        }
        let crds: Api<apiextensions::CustomResourceDefinition> = Api::all(self.client.clone());
        let wanted: BTreeSet<&str> = registration.conversions.iter().map(|c| c.crd.as_str()).collect();
        for conversion in &registration.conversions {
            apply(&crds, &conversion.crd, &conversion.apply_configuration(), &params).await?;
        }
        Self::release_conversions(&crds, &wanted, &params).await
    }

    /// Sets back to `None` the conversion of the CRDs that convert by webhook as this manager
    /// set them, but for `wanted`. (One set back keeps this manager as the owner of its
    /// `None`, and is left alone after.)
    async fn release_conversions(
        crds: &Api<apiextensions::CustomResourceDefinition>,
        wanted: &BTreeSet<&str>,
        params: &PatchParams,
    ) -> Result<(), RegisterError> {
        let listed = crds
            .list(&ListParams::default())
            .await
            .map_err(|source| RegisterError::Api { object: "CustomResourceDefinitions".into(), source })?;
        for crd in listed {
            let name = crd.metadata.name.clone().unwrap_or_default();
            let by_webhook = crd.spec.conversion.as_ref().is_some_and(|c| c.strategy == "Webhook");
            let ours = crd.metadata.managed_fields.iter().flatten().any(|f| f.manager.as_deref() == Some(MANAGER));
            if !by_webhook || !ours || wanted.contains(name.as_str()) {
                continue;
            }
            let none = json!({
                "apiVersion": "apiextensions.k8s.io/v1",
                "kind": "CustomResourceDefinition",
                "metadata": { "name": name },
                "spec": { "conversion": { "strategy": "None" } },
            });
            match apply(crds, &name, &none, params).await {
                Ok(()) => info!(crd = %name, "conversion webhook removed: no loaded plugin converts this kind"),
                // The host's RBAC names only the CRDs its plugins convert now.
                Err(RegisterError::Api { source: kube::Error::Api(status), .. }) if status.code == 403 => warn!(
                    crd = %name,
                    "no loaded plugin converts this kind, but the host may not set its CRD's conversion back: \
                     set spec.conversion.strategy to None by hand"
                ),
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

async fn apply<K>(api: &Api<K>, name: &str, object: &Value, params: &PatchParams) -> Result<(), RegisterError>
where
    K: kube::Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let object_name = || format!("{} {name}", K::kind(&()));
    api.patch(name, params, &Patch::Apply(object))
        .await
        .map_err(|source| RegisterError::Api { object: object_name(), source })?;
    debug!(object = %object_name(), "applied");
    Ok(())
}

/// Deletes configuration `name`. One that does not exist is fine, and so is one the host may
/// not delete: a host not granted the rights to write webhook configurations (no plugin of
/// its admits, `kubewasm rbac`) cannot have made one.
async fn remove<K>(api: &Api<K>, name: &str) -> Result<(), RegisterError>
where
    K: kube::Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    match api.delete(name, &DeleteParams::default()).await {
        Ok(_) => {
            info!(object = %format!("{} {name}", K::kind(&())), "removed: no loaded plugin needs it");
            Ok(())
        }
        Err(kube::Error::Api(status)) if status.code == 404 || status.code == 403 => Ok(()),
        Err(source) => Err(RegisterError::Api { object: format!("{} {name}", K::kind(&())), source }),
    }
}

#[cfg(test)]
mod tests {
    use kubewasm_contract::{AdmissionRule, Operation};

    use super::*;

    fn cronjobs(version: &str) -> KindRef {
        KindRef {
            group: "batch.tutorial.kubebuilder.io".into(),
            version: version.into(),
            kind: "CronJob".into(),
            plural: "cronjobs".into(),
            namespaced: true,
        }
    }

    fn namespaces() -> KindRef {
        KindRef {
            group: String::new(),
            version: "v1".into(),
            kind: "Namespace".into(),
            plural: "namespaces".into(),
            namespaced: false,
        }
    }

    /// A plugin that defaults, validates and converts its `CronJob`s.
    fn cronjob() -> Manifest {
        Manifest::new("cronjob", cronjobs("v1"))
            .defaults(AdmissionRule::new(cronjobs("v1")))
            .validates(AdmissionRule::new(cronjobs("v1")))
            .validates(AdmissionRule::new(namespaces()).on(&[Operation::Delete]))
            .converts()
    }

    fn tuned() -> WebhookSettings {
        WebhookSettings {
            failure_policy: FailurePolicy::Ignore,
            timeout_seconds: 3,
            match_policy: MatchPolicy::Exact,
            reinvocation: Reinvocation::IfNeeded,
            namespace_selector: Some(json!({"matchLabels": {"team": "a"}})),
            object_selector: None,
        }
    }

    const PEM: &str = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";

    #[test]
    fn a_plugin_that_defaults_validates_and_converts_gets_an_entry_in_each_configuration_and_its_crd() {
        let manifest = cronjob();
        let settings = tuned();
        let endpoint = Endpoint::url("https://127.0.0.1:9443/").unwrap();
        let registration =
            Registration::of("kubewasm", &[Admits { manifest: &manifest, settings: &settings }], &endpoint, Some(PEM))
                .unwrap();
        let objects = registration.objects().unwrap();
        let bundle = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUIKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo=";
        let metadata = json!({"name": "kubewasm", "labels": {"app.kubernetes.io/managed-by": "kubewasm"}});
        assert_eq!(
            objects[0],
            json!({
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": "MutatingWebhookConfiguration",
                "metadata": metadata,
                "webhooks": [{
                    "name": "cronjob.kubewasm.io",
                    "admissionReviewVersions": ["v1"],
                    "clientConfig": {"url": "https://127.0.0.1:9443/default/cronjob", "caBundle": bundle},
                    "failurePolicy": "Ignore",
                    "matchPolicy": "Exact",
                    "namespaceSelector": {"matchLabels": {"team": "a"}},
                    "objectSelector": {},
                    "reinvocationPolicy": "IfNeeded",
                    "rules": [{
                        "apiGroups": ["batch.tutorial.kubebuilder.io"],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE", "UPDATE"],
                        "resources": ["cronjobs"],
                        "scope": "Namespaced",
                    }],
                    "sideEffects": "None",
                    "timeoutSeconds": 3,
                }],
            })
        );
        let validating = &objects[1];
        assert_eq!(validating["kind"], "ValidatingWebhookConfiguration");
        let hook = &validating["webhooks"][0];
        assert_eq!(hook["clientConfig"]["url"], "https://127.0.0.1:9443/validate/cronjob");
        assert!(hook.get("reinvocationPolicy").is_none(), "a validating webhook has none: {hook}");
        assert_eq!(
            hook["rules"][1],
            json!({"apiGroups": [""], "apiVersions": ["v1"], "operations": ["DELETE"], "resources": ["namespaces"], "scope": "Cluster"})
        );
        assert_eq!(
            objects[2],
            json!({
                "apiVersion": "apiextensions.k8s.io/v1",
                "kind": "CustomResourceDefinition",
                "metadata": {"name": "cronjobs.batch.tutorial.kubebuilder.io"},
                "spec": {"conversion": {
                    "strategy": "Webhook",
                    "webhook": {
                        "clientConfig": {"url": "https://127.0.0.1:9443/convert/cronjob", "caBundle": bundle},
                        "conversionReviewVersions": ["v1"],
                    },
                }},
            })
        );
        assert_eq!(objects.len(), 3);
    }

    #[test]
    fn behind_a_service_each_call_has_its_path_and_the_defaults_are_explicit() {
        let manifest = Manifest::new("guard", cronjobs("v1")).validates(AdmissionRule::new(cronjobs("v1")));
        let settings = WebhookSettings::default();
        let endpoint = Endpoint::service("kubewasm-system/kubewasm-webhooks").unwrap();
        let registration =
            Registration::of("ops", &[Admits { manifest: &manifest, settings: &settings }], &endpoint, None).unwrap();
        assert_eq!(registration.mutating, None, "nothing defaults");
        assert!(registration.conversions.is_empty());
        let objects = registration.objects().unwrap();
        let hook = &objects[0]["webhooks"][0];
        assert_eq!(objects[0]["metadata"]["name"], "ops");
        assert_eq!(
            hook["clientConfig"],
            json!({"service": {"namespace": "kubewasm-system", "name": "kubewasm-webhooks", "path": "/validate/guard", "port": 443}}),
            "no caBundle: the API server's system roots"
        );
        assert_eq!(
            (&hook["failurePolicy"], &hook["matchPolicy"], &hook["timeoutSeconds"], &hook["namespaceSelector"]),
            (&json!("Fail"), &json!("Equivalent"), &json!(10), &json!({}))
        );
    }

    #[test]
    fn entries_follow_the_plugins_names_and_plugins_that_admit_nothing_are_left_out() {
        let (b, a) = (cronjob(), Manifest { name: "a".into(), ..cronjob() });
        let idle = Manifest::new("idle", cronjobs("v1"));
        let settings = WebhookSettings::default();
        let plugins: Vec<Admits<'_>> =
            [&b, &idle, &a].into_iter().map(|manifest| Admits { manifest, settings: &settings }).collect();
        let endpoint = Endpoint::url("https://h:1").unwrap();
        let registration = Registration::of("kubewasm", &plugins, &endpoint, None).unwrap();
        let names: Vec<String> =
            registration.mutating.unwrap().webhooks.unwrap_or_default().into_iter().map(|w| w.name).collect();
        assert_eq!(names, ["a.kubewasm.io", "cronjob.kubewasm.io"]);
        assert!(Registration::of("kubewasm", &plugins[1..2], &endpoint, None).unwrap() == Registration::default());
    }

    #[test]
    fn endpoints_the_api_server_would_refuse_are_refused_with_its_reason() {
        let url_err = |url: &str| Endpoint::url(url).unwrap_err().to_string();
        assert_eq!(
            url_err("http://127.0.0.1:9443"),
            "webhook URL \"http://127.0.0.1:9443\": 'https' is the only allowed URL scheme; desired format: https://host[/path]"
        );
        assert!(url_err("https://h:1/x?a=b").ends_with("query parameters are not permitted in the URL"));
        assert!(url_err("https://h:1/#top").ends_with("fragments are not permitted in the URL"));
        assert!(url_err("https://u:p@h:1").ends_with("user information is not permitted in the URL"));
        assert_eq!(
            Endpoint::service("ns/hooks:8443").unwrap(),
            Endpoint::Service { namespace: "ns".into(), name: "hooks".into(), port: 8443 }
        );
        for bad in ["hooks", "ns/", "/hooks", "ns/hooks:0", "ns/hooks:x", "ns/a/b"] {
            assert!(Endpoint::service(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_plugin_converting_a_built_in_kind_is_refused() {
        let manifest = Manifest::new(
            "pods",
            KindRef {
                group: String::new(),
                version: "v1".into(),
                kind: "Pod".into(),
                plural: "pods".into(),
                namespaced: true,
            },
        )
        .converts();
        let settings = WebhookSettings::default();
        let err = Registration::of(
            "k",
            &[Admits { manifest: &manifest, settings: &settings }],
            &Endpoint::url("https://h").unwrap(),
            None,
        )
        .unwrap_err();
        assert!(matches!(err, RegisterError::ConvertsNoCrd(ref p) if p == "pods"), "{err}");
    }

    fn admits<'a>(manifests: &[&'a Manifest], settings: &'a WebhookSettings) -> Vec<Admits<'a>> {
        manifests.iter().map(|manifest| Admits { manifest, settings }).collect()
    }

    #[tokio::test]
    async fn a_sync_registers_the_running_plugins_and_takes_back_what_those_that_went_registered() {
        let cluster = kubewasm_devcluster::DevCluster::start(kubewasm_devcluster::Options::default()).await.unwrap();
        let client = cluster.client();
        let crds: Api<apiextensions::CustomResourceDefinition> = Api::all(client.clone());
        let crd = kubewasm_tests::crd("batch.tutorial.kubebuilder.io", "CronJob", "cronjobs", &["v1", "v2"]);
        cluster.apply(&crd.to_string()).unwrap();
        let identity = super::super::tls::Identity::generate(&["127.0.0.1".into()]).unwrap();
        let registrar = Registrar::new(
            client.clone(),
            "kubewasm",
            Endpoint::url("https://127.0.0.1:9443").unwrap(),
            identity.ca_bundle().map(str::to_string),
        );
        let (cronjob, guard) =
            (cronjob(), Manifest::new("guard", cronjobs("v1")).validates(AdmissionRule::new(cronjobs("v1"))));
        let settings = WebhookSettings::default();
        let mutating: Api<admission::MutatingWebhookConfiguration> = Api::all(client.clone());
        let validating: Api<admission::ValidatingWebhookConfiguration> = Api::all(client.clone());
        let names = |hooks: Option<Vec<String>>| hooks.unwrap_or_default();
        let validating_names = || async {
            validating
                .get_opt("kubewasm")
                .await
                .unwrap()
                .map(|c| c.webhooks.unwrap_or_default().into_iter().map(|w| w.name).collect::<Vec<_>>())
        };
        let conversion =
            || async { crds.get("cronjobs.batch.tutorial.kubebuilder.io").await.unwrap().spec.conversion.unwrap() };

        registrar.sync(&admits(&[&cronjob, &guard], &settings)).await.unwrap();
        let hooks = mutating.get("kubewasm").await.unwrap().webhooks.unwrap();
        assert_eq!(hooks.len(), 1);
        assert_eq!(
            hooks[0].client_config.ca_bundle.as_ref().map(|b| b.0.as_slice()),
            identity.ca_bundle().map(str::as_bytes)
        );
        assert_eq!(names(validating_names().await), ["cronjob.kubewasm.io", "guard.kubewasm.io"]);
        let set = conversion().await;
        assert_eq!(set.strategy, "Webhook");
        let webhook = set.webhook.unwrap();
        assert_eq!(
            webhook.client_config.and_then(|c| c.url).as_deref(),
            Some("https://127.0.0.1:9443/convert/cronjob")
        );
        registrar
            .sync(&admits(&[&cronjob, &guard], &settings))
            .await
            .expect("a second sync changes nothing and succeeds");

        // The cronjob plugin goes: its entries and its conversion go with it.
        registrar.sync(&admits(&[&guard], &settings)).await.unwrap();
        assert!(mutating.get_opt("kubewasm").await.unwrap().is_none(), "no plugin defaults: no configuration");
        assert_eq!(names(validating_names().await), ["guard.kubewasm.io"]);
        let released = conversion().await;
        assert_eq!((released.strategy.as_str(), released.webhook), ("None", None));

        registrar.sync(&admits(&[], &settings)).await.unwrap();
        assert_eq!(validating_names().await, None);
    }
}
