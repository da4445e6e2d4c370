//! `kubewasm render --admission` and `--convert`: a write put to the plugin's webhooks, or
//! objects converted by it, as the API server calls them, with the API server's checks
//! of their answers.

use std::path::Path;

use serde_json::{Value, json};

use kubewasm::plugin::MatchPolicy;
use kubewasm_contract::{AdmissionRequest, AdmissionRule, ConversionRequest, KindRef, Mutation, Operation, Verdict};

use super::{Outcome, Prepared, RenderError, one_object, read_objects};

/// The write put to the plugin's `default` (if its manifest defaults it), then, unless
/// refused, the defaulted write to its `validate` (if it validates it): the order of
/// kube-apiserver's mutating and validating webhooks. Each call in a fresh instance.
pub(super) fn admit(
    prepared: &Prepared,
    operation: Operation,
    object_file: Option<&Path>,
    old_file: Option<&Path>,
    now: &str,
) -> Result<Outcome, RenderError> {
    let manifest = prepared.plugin.manifest();
    let wrong = |file: &Path, message: &str| RenderError::Input { file: file.to_path_buf(), message: message.into() };
    let (object, old) = match (operation, object_file, old_file) {
        (Operation::Create, Some(object), None) => (Some(object), None),
        (Operation::Update, Some(object), Some(old)) => (Some(object), Some(old)),
        (Operation::Delete, None, Some(old)) => (None, Some(old)),
        (Operation::Create, _, Some(old)) => return Err(wrong(old, "--old: a create has no stored object")),
        (Operation::Delete, Some(object), _) => {
            return Err(wrong(object, "a delete writes no object: give the stored one with --old"));
        }
        (Operation::Update | Operation::Delete, _, None) => {
            return Err(wrong(Path::new("--old"), &format!("{operation} needs the stored object: give it with --old")));
        }
        _ => {
            return Err(wrong(
                Path::new("--object"),
                &format!("{operation} needs the object written: give it with --object"),
            ));
        }
    };
    let object = object.map(one_object).transpose()?;
    let old = old.map(one_object).transpose()?;
    let subject = object.as_ref().or(old.as_ref()).unwrap_or(&Value::Null).clone();
    let (defaults, validates) = (
        rule(prepared, &manifest.defaults, &subject, operation),
        rule(prepared, &manifest.validates, &subject, operation),
    );
    let Some(kind) = defaults.as_ref().or(validates.as_ref()).map(|r| r.kind.clone()) else {
        return Err(wrong(
            object_file.or(old_file).unwrap_or(Path::new("--object")),
            &format!(
                "plugin {} neither defaults nor validates {operation} of {} {}",
                manifest.name,
                subject["apiVersion"].as_str().unwrap_or("<no apiVersion>"),
                subject["kind"].as_str().unwrap_or("<no kind>")
            ),
        ));
    };
    let written_version = subject["apiVersion"].as_str().unwrap_or_default().to_string();
    let mut request = AdmissionRequest::new(operation, kind, object, old);
    request.now = now.to_string();
    request.config = prepared.config.clone();
    let (mut defaulted, mut warnings) = (false, Vec::new());
    if let Some(rule) = defaults {
        let asked = in_version(prepared, &request, &rule.kind)?;
        let answer = match instance(prepared).default(&asked)? {
            Ok(answer) => answer,
            Err(denial) => return Ok(admitted(asked, false, Verdict::deny(denial))),
        };
        let object = answer
            .apply(&asked)
            .map_err(|e| RenderError::Webhook(format!("the API server would refuse the defaulting: {e}")))?;
        defaulted = answer.mutation != Mutation::Unchanged;
        if request.object.is_some() {
            // Back in the version written, as the API server converts a mutated object.
            let object = if object["apiVersion"] == written_version.as_str() {
                object
            } else {
                convert_objects(prepared, vec![object], &written_version, now)?.remove(0)
            };
            request.object = Some(kubewasm_contract::Object::new(object));
        }
        warnings = answer.warnings;
    }
    let mut verdict = match &validates {
        Some(rule) => instance(prepared).validate(&in_version(prepared, &request, &rule.kind)?)?,
        None => Verdict::allow(),
    };
    warnings.append(&mut verdict.warnings);
    verdict.warnings = warnings;
    Ok(admitted(request, defaulted, verdict))
}

/// The rule of `rules` that has the API server ask about `operation` of `subject`: one
/// naming its version, else, under `matchPolicy: Equivalent` and when the plugin converts
/// the kind, one naming another version of it (asked through conversion).
fn rule(prepared: &Prepared, rules: &[AdmissionRule], subject: &Value, operation: Operation) -> Option<AdmissionRule> {
    let manifest = prepared.plugin.manifest();
    let asks = |r: &&AdmissionRule| r.effective_operations().contains(&operation);
    let exact = rules.iter().filter(asks).find(|r| r.kind.matches(subject));
    let equivalent = || {
        let group = subject["apiVersion"].as_str().and_then(|v| v.rsplit_once('/')).map(|(group, _)| group);
        let converted = manifest.converts
            && manifest
                .parent
                .as_ref()
                .is_some_and(|p| Some(p.group.as_str()) == group && subject["kind"] == p.kind.as_str());
        rules
            .iter()
            .filter(asks)
            .filter(|_| converted && prepared.match_policy == MatchPolicy::Equivalent)
            .find(|r| Some(r.kind.group.as_str()) == group && subject["kind"] == r.kind.kind.as_str())
    };
    exact.or_else(equivalent).cloned()
}

/// `request` about objects of `kind`'s version: as it is, or its objects converted by the
/// plugin, as the API server asks a webhook that matched another version.
fn in_version(
    prepared: &Prepared,
    request: &AdmissionRequest,
    kind: &KindRef,
) -> Result<AdmissionRequest, RenderError> {
    let version = kind.api_version();
    let convert = |object: &Option<kubewasm_contract::Object>| -> Result<_, RenderError> {
        object
            .as_ref()
            .map(|o| {
                if o.api_version() == version {
                    return Ok(o.clone());
                }
                let converted = convert_objects(prepared, vec![o.json().clone()], &version, &request.now)?;
                Ok(kubewasm_contract::Object::new(converted.into_iter().next().unwrap_or_default()))
            })
            .transpose()
    };
    Ok(AdmissionRequest {
        kind: kind.clone(),
        object: convert(&request.object)?,
        old_object: convert(&request.old_object)?,
        ..request.clone()
    })
}

/// A fresh instance of the plugin, its Secret values hidden: one per webhook call.
fn instance(prepared: &Prepared) -> kubewasm::plugin::Instance<'_> {
    let mut instance = prepared.plugin.instance();
    instance.hide(prepared.hidden.clone());
    instance
}

fn admitted(request: AdmissionRequest, defaulted: bool, verdict: Verdict) -> Outcome {
    let object = request.object.as_ref().filter(|_| verdict.allowed()).map(|o| o.json().clone());
    Outcome::Admitted { request: Box::new(request), object, defaulted, verdict }
}

/// Every object of `file` converted by the plugin to `version`, checked and kept as
/// kube-apiserver keeps a conversion webhook's answer.
pub(super) fn convert(prepared: &Prepared, file: &Path, version: &str, now: &str) -> Result<Outcome, RenderError> {
    let manifest = prepared.plugin.manifest();
    let wrong = |message: String| RenderError::Input { file: file.to_path_buf(), message };
    let parent = match &manifest.parent {
        Some(parent) if manifest.converts => parent,
        _ => {
            return Err(wrong(format!(
                "plugin {} converts nothing: its manifest does not declare converts",
                manifest.name
            )));
        }
    };
    let objects = read_objects(file)?;
    if objects.is_empty() {
        return Err(wrong("no object to convert".into()));
    }
    let ours = |object: &Value| {
        let api_version = object["apiVersion"].as_str().unwrap_or_default();
        object["kind"] == parent.kind.as_str()
            && api_version.rsplit_once('/').is_some_and(|(group, _)| group == parent.group)
    };
    if let Some(other) = objects.iter().find(|o| !ours(o)) {
        return Err(wrong(format!(
            "{} {} is not a {} of group {}: plugin {} converts only its parent",
            other["apiVersion"].as_str().unwrap_or("<no apiVersion>"),
            other["kind"].as_str().unwrap_or("<no kind>"),
            parent.kind,
            parent.group,
            manifest.name
        )));
    }
    let desired = if version.contains('/') { version.to_string() } else { format!("{}/{version}", parent.group) };
    Ok(Outcome::Converted { objects: convert_objects(prepared, objects, &desired, now)? })
}

/// `objects` (of the plugin's parent kind) converted by the plugin to `desired`
/// (`group/version`), checked and kept as kube-apiserver keeps a conversion webhook's
/// answer; a failure worded as the API server words it.
fn convert_objects(
    prepared: &Prepared,
    objects: Vec<Value>,
    desired: &str,
    now: &str,
) -> Result<Vec<Value>, RenderError> {
    let gvk = format!(
        "{}, Kind={}",
        objects.first().and_then(|o| o["apiVersion"].as_str()).unwrap_or_default(),
        objects.first().and_then(|o| o["kind"].as_str()).unwrap_or_default()
    );
    let failed = |message: String| RenderError::Webhook(format!("conversion webhook for {gvk} failed: {message}"));
    let request = ConversionRequest {
        objects,
        desired_api_version: desired.to_string(),
        now: now.to_string(),
        config: prepared.config.clone(),
    };
    let converted = instance(prepared).convert(&request)?.map_err(failed)?;
    request.check(converted).map_err(failed)
}

/// The object as it would be stored (when allowed and not a delete), then an
/// `Admission` document: the operation, the object, whether defaulting changed it,
/// whether the write is allowed, the warnings, and for a denial the `Status` the API
/// server answers with.
pub(super) fn admitted_yaml(
    request: &AdmissionRequest,
    object: Option<&Value>,
    defaulted: bool,
    verdict: &Verdict,
) -> Result<String, serde_yaml_ng::Error> {
    let mut out = String::new();
    if let Some(object) = object {
        out.push_str("---\n");
        out.push_str(&serde_yaml_ng::to_string(object)?);
    }
    let mut document = json!({
        "apiVersion": "render.kubewasm.io/v1alpha1",
        "kind": "Admission",
        "operation": request.operation.as_str(),
        "object": {"kind": request.kind.to_string(), "name": request.name},
        "defaulted": defaulted,
        "allowed": verdict.allowed(),
    });
    if let Some(namespace) = &request.namespace {
        document["object"]["namespace"] = json!(namespace);
    }
    if !verdict.warnings.is_empty() {
        document["warnings"] = json!(verdict.warnings);
    }
    if let Some(denial) = &verdict.denied {
        document["status"] = denial.status(&request.kind, &request.name);
    }
    out.push_str("---\n");
    out.push_str(&serde_yaml_ng::to_string(&document)?);
    Ok(out)
}

/// The `Status` message of a denied write, for the error `kubewasm render` exits with.
pub fn denial_message(outcome: &Outcome) -> Option<String> {
    match outcome {
        Outcome::Admitted { request, verdict: Verdict { denied: Some(denial), .. }, .. } => {
            Some(denial.status(&request.kind, &request.name)["message"].as_str().unwrap_or_default().to_string())
        }
        _ => None,
    }
}
