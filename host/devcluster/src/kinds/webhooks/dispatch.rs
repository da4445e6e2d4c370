//! The `MutatingAdmissionWebhook` and `ValidatingAdmissionWebhook` plugins, as kube-apiserver's
//! `pkg/admission/plugin/webhook`: the configurations in name order and their webhooks in list
//! order; per webhook the namespace selector, object selector, rules (with `matchPolicy:
//! Equivalent`, the other served versions of the resource) and match conditions
//! (`ShouldCallHook`); mutating webhooks one after the other, each seeing the last one's patch,
//! with one more round for the `reinvocationPolicy: IfNeeded` ones an later patch changed;
//! validating webhooks all at once. A webhook that cannot be called fails the request or is
//! skipped, as its `failurePolicy` says; one that refuses always fails it.
//!
//! Differences: validating webhooks that refuse together report the first in configuration
//! order (upstream: the first to answer); match conditions have no `authorizer` variable.

use std::collections::BTreeSet;
use std::time::Duration;

use futures_util::future::{BoxFuture, join_all};
use serde_json::Value;

use super::review;
use crate::admission::{Attributes, Calls, Lookup, Operation, Phase, Webhooks};
use crate::cel::{self, CelValue, Expression};
use crate::conversion::Conversion;
use crate::kinds::matching;
use crate::object;
use crate::status::ApiError;
use crate::webhook::{Endpoint, review_uid};

const GROUP: &str = "admissionregistration.k8s.io";

/// The kinds no webhook registered through the API is called for
/// (`IsExemptAdmissionConfigurationResource`): a webhook cannot lock itself in.
const EXEMPT: [&str; 6] = [
    "mutatingwebhookconfigurations",
    "validatingwebhookconfigurations",
    "validatingadmissionpolicies",
    "validatingadmissionpolicybindings",
    "mutatingadmissionpolicies",
    "mutatingadmissionpolicybindings",
];

/// Both webhook plugins, as one step of the admission chain.
pub(crate) struct AdmissionWebhooks;

impl Webhooks for AdmissionWebhooks {
    fn prepare(&self, phase: Phase, a: &Attributes<'_>, lookup: &dyn Lookup) -> Option<Box<dyn Calls>> {
        if a.resource.group == GROUP && EXEMPT.contains(&a.resource.plural.as_str()) {
            return None;
        }
        let plural = match phase {
            Phase::Mutating => "mutatingwebhookconfigurations",
            Phase::Validating => "validatingwebhookconfigurations",
        };
        let mut configurations = lookup.objects(&(GROUP.to_string(), plural.to_string()), None);
        configurations.sort_by(|x, y| object::name(x).cmp(object::name(y)));
        let hooks: Vec<Hook> = configurations
            .iter()
            .flat_map(|c| c.get("webhooks").and_then(Value::as_array).cloned().unwrap_or_default())
            .map(|spec| Hook::new(spec, lookup))
            .collect();
        if hooks.is_empty() {
            return None;
        }
        let namespace = if matching::labels_of_object(a) {
            Namespace::OfObject
        } else {
            Namespace::Known(matching::namespace_labels(a, None, lookup))
        };
        Some(Box::new(Dispatch { phase, hooks, namespace }))
    }
}

/// How a webhook's rules match a request in another version of its resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MatchPolicy {
    /// Only in the request's version.
    Exact,
    /// In any served version (the request converted for the call).
    Equivalent,
}

/// One webhook of a configuration, with what its calls need.
struct Hook {
    name: String,
    /// The webhook as configured (rules, selectors).
    spec: Value,
    ignore_failures: bool,
    /// `matchPolicy`.
    policy: MatchPolicy,
    reinvoke: bool,
    /// Whether it may be called for a dry run (`sideEffects: None` or `NoneOnDryRun`).
    dry_run_safe: bool,
    timeout: Duration,
    /// The `AdmissionReview` version it is spoken to in.
    review_version: Option<&'static str>,
    conditions: Vec<Result<Expression, String>>,
    /// Where it is called, or why it cannot be.
    endpoint: Result<Endpoint, String>,
}

impl Hook {
    fn new(spec: Value, lookup: &dyn Lookup) -> Hook {
        let text = |f: &str| spec.get(f).and_then(Value::as_str).unwrap_or_default().to_string();
        let endpoint = match crate::webhook::ClientConfig::parse(spec.get("clientConfig").unwrap_or(&Value::Null)) {
            Ok(client) => client.endpoint(client.service().map(|s| lookup.service_address(s))),
            Err(why) => Err(why),
        };
        let conditions = spec
            .get("matchConditions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|c| Expression::compile(c.get("expression").and_then(Value::as_str).unwrap_or_default()))
            .collect();
        Hook {
            name: text("name"),
            ignore_failures: text("failurePolicy") == "Ignore",
            policy: if text("matchPolicy") == "Exact" { MatchPolicy::Exact } else { MatchPolicy::Equivalent },
            reinvoke: text("reinvocationPolicy") == "IfNeeded",
            dry_run_safe: matches!(text("sideEffects").as_str(), "None" | "NoneOnDryRun"),
            timeout: Duration::from_secs(spec.get("timeoutSeconds").and_then(Value::as_u64).unwrap_or(10)),
            review_version: review::version(&spec),
            conditions,
            endpoint,
            spec,
        }
    }

    /// The error of a call that could not be made (`ErrCallingWebhook`).
    fn calling(&self, why: &str) -> Failure {
        Failure::Calling(format!("failed calling webhook {:?}: {why}", self.name))
    }

    /// The error a failure is for the request: none for a call that could not be made to a
    /// webhook that ignores failures.
    fn fail(&self, failure: Failure) -> Result<(), ApiError> {
        match failure {
            Failure::Calling(why) if self.ignore_failures => {
                tracing::warn!(webhook = %self.name, error = %why, "failed calling webhook, failing open");
                Ok(())
            }
            Failure::Calling(why) => Err(ApiError::internal_error(&why)),
            Failure::Refused(err) => Err(err),
        }
    }

    /// The version a rule of `hook` matches the request in: the request's own, or with
    /// `matchPolicy: Equivalent` another served version of the resource.
    fn matched_version(&self, a: &Attributes<'_>) -> Option<String> {
        let rules = self.spec.get("rules").and_then(Value::as_array).cloned().unwrap_or_default();
        if rules.iter().any(|r| matching::rule_matches(r, a, a.version)) {
            return Some(a.version.to_string());
        }
        if self.policy == MatchPolicy::Exact {
            return None;
        }
        rules.iter().find_map(|rule| {
            a.resource
                .versions
                .iter()
                .map(|v| v.name.as_str())
                .filter(|v| *v != a.version)
                .find(|v| matching::rule_matches(rule, a, v))
                .map(String::from)
        })
    }

    /// The match conditions: any false skips the webhook; errors without a false one fail the
    /// request (403), or skip it when the webhook ignores failures.
    fn conditions_match(&self, a: &Attributes<'_>, invocation: &Invocation) -> Result<bool, ApiError> {
        if self.conditions.is_empty() {
            return Ok(true);
        }
        let variables = [
            ("object", invocation.object.as_ref().map_or(CelValue::Null, cel::value)),
            ("oldObject", invocation.old.as_ref().map_or(CelValue::Null, cel::value)),
            ("request", cel::value(&matching::request(a, &invocation.version))),
        ];
        let mut errors = Vec::new();
        for (condition, spec) in
            self.conditions.iter().zip(self.spec.get("matchConditions").and_then(Value::as_array).into_iter().flatten())
        {
            let source = spec.get("expression").and_then(Value::as_str).unwrap_or_default();
            match condition.as_ref().map_err(Clone::clone).and_then(|e| e.eval(&variables)) {
                Ok(CelValue::Bool(true)) => {}
                Ok(CelValue::Bool(false)) => return Ok(false),
                Ok(_) => errors.push(format!("expression '{source}' resulted in error: no such overload")),
                Err(e) => errors.push(format!("expression '{source}' resulted in error: {e}")),
            }
        }
        if errors.is_empty() {
            return Ok(true);
        }
        if self.ignore_failures {
            return Ok(false);
        }
        let why = if errors.len() == 1 { errors.remove(0) } else { format!("[{}]", errors.join(", ")) };
        Err(ApiError::forbidden(&a.resource.group, &a.resource.plural, a.name, &why))
    }
}

/// The labels a namespace selector is matched with.
enum Namespace {
    /// The object's own (a create or update of a Namespace).
    OfObject,
    /// The stored namespace's (`None`: a cluster-scoped request), or the error of a missing one.
    Known(Result<Option<Value>, ApiError>),
}

/// A request's webhook calls of one phase.
struct Dispatch {
    phase: Phase,
    hooks: Vec<Hook>,
    namespace: Namespace,
}

/// A call to be made: the version the webhook matched and the objects in it.
struct Invocation {
    version: String,
    object: Option<Value>,
    old: Option<Value>,
}

/// Why a call did not allow the request.
enum Failure {
    /// It could not be made, or its answer is not one (`failurePolicy` decides).
    Calling(String),
    /// The request fails, whatever the policy says (a refusal, a patch that does not apply).
    Refused(ApiError),
}

impl Calls for Dispatch {
    fn run<'a>(
        &'a self,
        a: &'a Attributes<'a>,
        obj: Option<&'a mut Value>,
        conversion: &'a Conversion,
    ) -> BoxFuture<'a, Result<(), ApiError>> {
        Box::pin(async move {
            match self.phase {
                Phase::Mutating => self.mutate(a, obj, conversion).await,
                Phase::Validating => self.validate(a, obj.as_deref(), conversion).await,
            }
        })
    }
}

impl Dispatch {
    /// The mutating webhooks in order, then once more those with `reinvocationPolicy:
    /// IfNeeded` that ran before a later webhook changed the object.
    async fn mutate(
        &self,
        a: &Attributes<'_>,
        mut obj: Option<&mut Value>,
        conversion: &Conversion,
    ) -> Result<(), ApiError> {
        let mut invoked: BTreeSet<usize> = BTreeSet::new();
        let mut reinvoke: BTreeSet<usize> = BTreeSet::new();
        let mut changed_any = false;
        for round in 0..2 {
            if round == 1 && !changed_any {
                break;
            }
            for (i, hook) in self.hooks.iter().enumerate() {
                let Some(invocation) = self.should_call(hook, a, obj.as_deref(), conversion).await? else {
                    continue;
                };
                // In the second round a webhook is only called again, never for the first time.
                if round == 1 && !reinvoke.contains(&i) {
                    continue;
                }
                let changed = match self.call_mutating(hook, a, invocation, obj.as_deref_mut(), conversion).await {
                    Ok(changed) => changed,
                    Err(failure) => {
                        hook.fail(failure)?;
                        false
                    }
                };
                if changed {
                    reinvoke.append(&mut invoked);
                    changed_any = true;
                }
                if hook.reinvoke {
                    invoked.insert(i);
                }
            }
        }
        Ok(())
    }

    /// Every matching validating webhook, called at once.
    async fn validate(&self, a: &Attributes<'_>, obj: Option<&Value>, conversion: &Conversion) -> Result<(), ApiError> {
        let mut calls = Vec::new();
        for hook in &self.hooks {
            if let Some(invocation) = self.should_call(hook, a, obj, conversion).await? {
                calls.push((hook, invocation));
            }
        }
        let outcomes = join_all(calls.into_iter().map(|(hook, invocation)| async move {
            let outcome = self.call(hook, a, &invocation, false).await.map(|_| ());
            (hook, outcome)
        }))
        .await;
        for (hook, outcome) in outcomes {
            if let Err(failure) = outcome {
                hook.fail(failure)?;
            }
        }
        Ok(())
    }

    /// Whether `hook` is called for the request (`ShouldCallHook`), and with what.
    async fn should_call(
        &self,
        hook: &Hook,
        a: &Attributes<'_>,
        obj: Option<&Value>,
        conversion: &Conversion,
    ) -> Result<Option<Invocation>, ApiError> {
        let selector = hook.spec.get("namespaceSelector");
        let mut namespace_error = None;
        if !matching::selects_all(selector) {
            let selected = match &self.namespace {
                Namespace::OfObject => matching::selects(selector, obj.and_then(|o| o.pointer("/metadata/labels"))),
                Namespace::Known(Ok(None)) => true,
                Namespace::Known(Ok(Some(labels))) => matching::selects(selector, Some(labels)),
                Namespace::Known(Err(e)) => {
                    namespace_error = Some(e.clone());
                    true
                }
            };
            if !selected {
                return Ok(None);
            }
        }
        if !matching::object_selected(hook.spec.get("objectSelector"), obj, a.old) {
            return Ok(None);
        }
        let Some(version) = hook.matched_version(a) else {
            return Ok(None);
        };
        if let Some(e) = namespace_error {
            return Err(e);
        }
        let invocation = Invocation {
            object: versioned(obj, &version, a, conversion).await?,
            old: versioned(a.old, &version, a, conversion).await?,
            version,
        };
        if !hook.conditions_match(a, &invocation)? {
            return Ok(None);
        }
        Ok(Some(invocation))
    }

    /// Calls a mutating webhook and applies its patch to `obj`; whether it changed it.
    async fn call_mutating(
        &self,
        hook: &Hook,
        a: &Attributes<'_>,
        invocation: Invocation,
        obj: Option<&mut Value>,
        conversion: &Conversion,
    ) -> Result<bool, Failure> {
        let Some(patched) = self.call(hook, a, &invocation, true).await? else {
            return Ok(false);
        };
        let Some(obj) = obj else {
            return Err(Failure::Refused(ApiError::internal_error(&format!(
                "admission webhook {:?} attempted to modify the object, which is not supported for this operation",
                hook.name
            ))));
        };
        let mut patched = if invocation.version == a.version {
            patched
        } else {
            conversion.one(&patched, a.version).await.map_err(Failure::Refused)?
        };
        // The patched object is read again as the request's version and defaulted again.
        let (mut reread, _) =
            a.resource.decode(a.version, patched.take()).map_err(|e| Failure::Refused(ApiError::internal_error(&e)))?;
        a.resource.strategy(a.version).defaults(&mut reread);
        let changed = *obj != reread;
        *obj = reread;
        Ok(changed)
    }

    /// One call (`callHook`, `callAttrMutatingHook`): the review sent, the answer checked, its
    /// warnings kept, a refusal turned into the request's error. A mutating webhook's patch
    /// comes back applied to the object in the version it matched (`None`: no change).
    async fn call(
        &self,
        hook: &Hook,
        a: &Attributes<'_>,
        invocation: &Invocation,
        mutating: bool,
    ) -> Result<Option<Value>, Failure> {
        if a.dry_run && !hook.dry_run_safe {
            // `NewDryRunUnsupportedErr`: a 400 whatever the failure policy, from either plugin.
            let message = format!("admission webhook {:?} does not support dry run", hook.name);
            return Err(Failure::Refused(ApiError::bad_request(message)));
        }
        let Some(version) = hook.review_version else {
            return Err(hook.calling(
                "could not create admission objects: webhook does not accept known AdmissionReview versions (v1, v1beta1)",
            ));
        };
        let endpoint =
            hook.endpoint.as_ref().map_err(|why| hook.calling(&format!("could not get REST client: {why}")))?;
        let uid = review_uid();
        let request = matching::request(a, &invocation.version);
        let object = if a.operation == Operation::Delete { None } else { invocation.object.as_ref() };
        let review = review::review(version, &uid, &request, object, invocation.old.as_ref());
        let answer = endpoint
            .post(&review, hook.timeout, true)
            .await
            .map_err(|e| hook.calling(&format!("failed to call webhook: {e}")))?;
        let verdict = review::verdict(&answer, &uid, version, mutating)
            .map_err(|why| hook.calling(&format!("received invalid webhook response: {why}")))?;
        for warning in verdict.warnings {
            a.warn(warning);
        }
        if !verdict.allowed {
            return Err(Failure::Refused(review::denied(&hook.name, verdict.status.as_ref())));
        }
        let Some(patch) = verdict.patch.filter(|p| !p.is_empty()) else {
            return Ok(None);
        };
        if verdict.patch_type.as_deref() != Some("JSONPatch") {
            return Err(hook.calling(&format!("unsupported patch type {:?}", verdict.patch_type.unwrap_or_default())));
        }
        let patch: json_patch::Patch = serde_json::from_slice(&patch)
            .map_err(|e| hook.calling(&format!("received undecodable patch in webhook response: {e}")))?;
        if patch.0.is_empty() {
            return Ok(None);
        }
        let Some(mut target) = invocation.object.clone().filter(|_| a.operation != Operation::Delete) else {
            return Err(Failure::Refused(ApiError::internal_error(&format!(
                "admission webhook {:?} attempted to modify the object, which is not supported for this operation",
                hook.name
            ))));
        };
        json_patch::patch(&mut target, &patch)
            .map_err(|e| Failure::Refused(ApiError::internal_error(&e.to_string())))?;
        Ok(Some(target))
    }
}

/// `obj` in `version` (the version a webhook matched), converted when it is not the request's.
async fn versioned(
    obj: Option<&Value>,
    version: &str,
    a: &Attributes<'_>,
    conversion: &Conversion,
) -> Result<Option<Value>, ApiError> {
    match obj {
        Some(o) if version != a.version => conversion.one(o, version).await.map(Some),
        Some(o) => Ok(Some(o.clone())),
        None => Ok(None),
    }
}
