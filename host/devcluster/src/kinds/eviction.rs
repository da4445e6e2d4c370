//! A pod's `eviction` subresource (`POST .../pods/{name}/eviction` with a policy/v1
//! `Eviction`), as kube-apiserver's `EvictionREST` serves it: a pod that is not running
//! (pending, finished or already being deleted) is deleted at once; one that is, only when
//! the one `PodDisruptionBudget` selecting it allows a disruption, which the eviction takes
//! from the budget's status. No disruption controller runs here: a budget's status is what
//! its writers make it, and a new budget, not yet observed, refuses evictions with 429 as a
//! real server's does until its controller has caught up.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::object;
use crate::printers::{condition_true, int, text};
use crate::selectors::LabelSelector;
use crate::status::ApiError;
use crate::strategy::{Action, Objects};

const PODS: (&str, &str) = ("", "pods");
const BUDGETS: (&str, &str) = ("policy", "poddisruptionbudgets");
/// The most evictions a budget records before its controller confirms them.
const MAX_DISRUPTED_PODS: usize = 2000;

fn gr((group, plural): (&str, &str)) -> (String, String) {
    (group.to_string(), plural.to_string())
}

/// Evicts the pod the action names; the answer is a `Status`.
pub(super) fn evict(action: &Action<'_>, objects: &mut dyn Objects) -> Result<Value, ApiError> {
    let eviction = action.body;
    if object::name(eviction) != action.name {
        return Err(ApiError::bad_request("name in URL does not match name in Eviction object"));
    }
    let options = eviction.get("deleteOptions").cloned().unwrap_or_else(|| json!({}));
    let pod = objects
        .get(&gr(PODS), action.namespace, action.name)
        .ok_or_else(|| ApiError::not_found(PODS.0, PODS.1, action.name))?;
    if can_ignore_budgets(&pod) {
        return delete(action, &pod, &options, objects);
    }
    let labels = object::labels(&pod);
    let budgets: Vec<Arc<Value>> = objects
        .list(&gr(BUDGETS), action.namespace)
        .into_iter()
        .filter(|pdb| {
            // A budget without a selector, or with an empty one, selects nothing here.
            pdb.pointer("/spec/selector")
                .filter(|s| !s.is_null())
                .and_then(|s| LabelSelector::from_object(s).ok())
                .is_some_and(|s| !s.is_empty() && s.matches(&labels))
        })
        .collect();
    let budget = match budgets.as_slice() {
        [] => return delete(action, &pod, &options, objects),
        [budget] => budget,
        _ => {
            // Answered as the result of the create, not as an error.
            return Ok(json!({ "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
                "code": 500 }));
        }
    };
    // An unready pod may go when the budget is healthy anyway, or allows unhealthy evictions.
    let unready = !condition_true(&pod, "Ready");
    let always = text(budget, "/spec/unhealthyPodEvictionPolicy") == "AlwaysAllow";
    let desired = int(budget, "/status/desiredHealthy");
    if unready && (always || (int(budget, "/status/currentHealthy") >= desired && desired > 0)) {
        let mut options = options;
        options["preconditions"]["resourceVersion"] = json!(object::meta_str(&pod, "resourceVersion"));
        return delete(action, &pod, &options, objects);
    }
    let updated = take_disruption(budget, action.name, action.dry_run)?;
    objects.put(&gr(BUDGETS), updated);
    delete(action, &pod, &options, objects)
}

/// `canIgnorePDB`: a pod that is not running, or already going.
fn can_ignore_budgets(pod: &Value) -> bool {
    matches!(text(pod, "/status/phase"), "Succeeded" | "Failed" | "Pending") || object::is_deleting(pod)
}

/// `checkAndDecrement`: the budget with one disruption taken for `pod`, or why there is none.
fn take_disruption(budget: &Value, pod: &str, dry_run: bool) -> Result<Value, ApiError> {
    let name = object::name(budget);
    if int(budget, "/status/observedGeneration") < object::generation(budget) {
        return Err(too_many_requests(
            10,
            &format!("The disruption budget {name} is still being processed by the server."),
        ));
    }
    let allowed = int(budget, "/status/disruptionsAllowed");
    if allowed < 0 {
        return Err(ApiError::forbidden("policy", "poddisruptionbudget", name, "pdb disruptions allowed is negative"));
    }
    let disrupted = budget.pointer("/status/disruptedPods").and_then(Value::as_object).map_or(0, serde_json::Map::len);
    if disrupted > MAX_DISRUPTED_PODS {
        return Err(ApiError::forbidden(
            "policy",
            "poddisruptionbudget",
            name,
            "DisruptedPods map too big - too many evictions not confirmed by PDB controller",
        ));
    }
    if allowed == 0 {
        let message = format!(
            "The disruption budget {name} needs {} healthy pods and has {} currently",
            int(budget, "/status/desiredHealthy"),
            int(budget, "/status/currentHealthy")
        );
        return Err(too_many_requests(0, &message));
    }
    let mut updated = budget.clone();
    updated["status"]["disruptionsAllowed"] = json!(allowed - 1);
    if allowed - 1 == 0 {
        set_disruption_allowed_condition(&mut updated);
    }
    if !dry_run {
        // Told so, the budget's controller does not count the pod as healthy while it goes.
        if !updated["status"]["disruptedPods"].is_object() {
            updated["status"]["disruptedPods"] = json!({});
        }
        updated["status"]["disruptedPods"][pod] = json!(object::now());
    }
    Ok(updated)
}

/// `UpdateDisruptionAllowedCondition` for a budget that allows no more disruptions.
fn set_disruption_allowed_condition(budget: &mut Value) {
    let generation = object::generation(budget);
    let condition = json!({ "type": "DisruptionAllowed", "status": "False", "observedGeneration": generation,
        "lastTransitionTime": object::now(), "reason": "InsufficientPods", "message": "" });
    let conditions = budget["status"]["conditions"].as_array().cloned().unwrap_or_default();
    let mut kept: Vec<Value> = conditions.into_iter().filter(|c| text(c, "/type") != "DisruptionAllowed").collect();
    kept.push(condition);
    budget["status"]["conditions"] = json!(kept);
}

/// The 429 of an eviction a budget refuses (`createTooManyRequestsError`).
fn too_many_requests(retry_after: u64, cause: &str) -> ApiError {
    let mut details = json!({ "causes": [{ "reason": "DisruptionBudget", "message": cause }] });
    if retry_after > 0 {
        details["retryAfterSeconds"] = json!(retry_after);
    }
    ApiError::new(429, "TooManyRequests", "Cannot evict pod as it would violate the pod's disruption budget.")
        .with_details(details)
}

/// `addConditionAndDeletePod`: the pod marked as a disruption target, then deleted with the
/// eviction's options.
fn delete(action: &Action<'_>, pod: &Value, options: &Value, objects: &mut dyn Objects) -> Result<Value, ApiError> {
    let dry_run = action.dry_run || options.get("dryRun").and_then(Value::as_array).is_some_and(|d| !d.is_empty());
    let mut options = options.clone();
    if !dry_run {
        // The resourceVersion precondition is checked here, then moved to the marked pod.
        let rv = object::meta_str(pod, "resourceVersion");
        if let Some(wanted) = options.pointer("/preconditions/resourceVersion").and_then(Value::as_str)
            && wanted != rv
        {
            return Err(ApiError::conflict(
                PODS.0,
                PODS.1,
                action.name,
                &format!(
                    "Precondition failed: ResourceVersion in precondition: {wanted}, ResourceVersion in object meta: {rv}"
                ),
            ));
        }
        let mut marked = pod.clone();
        let condition = json!({ "type": "DisruptionTarget", "status": "True", "lastProbeTime": null,
            "lastTransitionTime": object::now(), "reason": "EvictionByEvictionAPI", "message": "Eviction API: evicting" });
        let conditions = marked.pointer("/status/conditions").and_then(Value::as_array).cloned().unwrap_or_default();
        let mut kept: Vec<Value> = conditions.into_iter().filter(|c| text(c, "/type") != "DisruptionTarget").collect();
        kept.push(condition);
        marked["status"]["conditions"] = json!(kept);
        let marked = objects.put(&gr(PODS), marked);
        if options.pointer("/preconditions/resourceVersion").is_some() {
            options["preconditions"]["resourceVersion"] = json!(object::meta_str(&marked, "resourceVersion"));
        }
    }
    if dry_run {
        options["dryRun"] = json!(["All"]);
    }
    objects.delete(&gr(PODS), action.namespace, action.name, &options)?;
    Ok(json!({ "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success" }))
}
