//! What a request's query, headers and body say, read as kube-apiserver reads them: the query
//! converted to the options of its verb as apimachinery's parameter codec converts it (the
//! first value of a parameter counts, unknown parameters are ignored, booleans by
//! [`k8s_bool`]), a value that does not convert answered with 400 and options that fail their
//! checks with 422 (`CreateOptions.meta.k8s.io "" is invalid: ...`), the body decoded, and how
//! objects are to be rendered.

use axum::http::header;
use serde_json::Value;

use super::Call;
use crate::pipeline::PatchType;
use crate::protobuf;
use crate::request::{DeleteOptions, FieldValidation, Target, WriteOptions};
use crate::status::{ApiError, Cause, go_quote, parse_int64};

/// apimachinery's `Convert_Slice_string_To_bool`: a parameter is false only when it reads `0`
/// or `false` (in any case); any other value, the empty one of `?watch` included, is true.
pub(super) fn k8s_bool(value: &str) -> bool {
    !(value == "0" || value.eq_ignore_ascii_case("false"))
}

impl Call {
    /// Every value of a repeated parameter (`dryRun`), in order.
    fn params(&self, name: &str) -> Vec<&str> {
        self.query.iter().filter(|(k, _)| k == name).map(|(_, v)| v.as_str()).collect()
    }

    /// A boolean parameter: `None` when absent, else [`k8s_bool`] of its first value.
    fn bool_param(&self, name: &str) -> Option<bool> {
        self.param(name).map(k8s_bool)
    }

    /// An integer parameter (`strconv.ParseInt(s, 10, 64)`); one that does not parse is a 400
    /// with Go's message.
    fn int_param(&self, name: &str) -> Result<Option<i64>, ApiError> {
        let Some(text) = self.param(name) else {
            return Ok(None);
        };
        parse_int64(text).map(Some)
    }
}

/// Whether the client accepts a JSON answer.
pub(super) fn accepts_json(call: &Call) -> bool {
    let accept = call.header(header::ACCEPT);
    accept.is_empty() || accept.split(',').any(|a| a.contains("json") || a.trim_start().starts_with("*/*"))
}

/// Decodes a create/update body (JSON, YAML or protobuf, as the content type says), in the
/// stored form of the resource (a view's body converted).
pub(super) fn decode_body(call: &Call, target: &Target) -> Result<Value, ApiError> {
    let (addressed, version) = target.view.as_ref().map_or((&target.rt, target.version.as_str()), |(v, n)| (v, n));
    let value = decode_as(call, &addressed.api_version(version), &addressed.kind)?;
    Ok(match &target.view {
        Some((view, version)) => view.strategy(version).convert_to_stored(&value),
        None => value,
    })
}

/// Decodes a body that is an object of `api_version` and `kind` (JSON, YAML, or protobuf
/// for a built-in kind).
pub(super) fn decode_as(call: &Call, api_version: &str, kind: &str) -> Result<Value, ApiError> {
    let content_type = call.header(header::CONTENT_TYPE);
    let value: Value = if content_type.starts_with("application/vnd.kubernetes.protobuf") {
        protobuf::decode(&call.body, api_version, kind).map_err(|e| match e {
            protobuf::Error::NotBuiltin => {
                ApiError::unsupported_media_type(content_type, &["application/json", "application/yaml"])
            }
            protobuf::Error::Malformed(why) => {
                ApiError::bad_request(format!("the protobuf body of {kind} could not be decoded: {why}"))
            }
        })?
    } else if content_type.contains("yaml") {
        serde_yaml_ng::from_slice(&call.body).map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?
    } else if content_type.is_empty() || content_type.contains("json") {
        serde_json::from_slice(&call.body)
            .map_err(|e| ApiError::bad_request(format!("the request body is not valid JSON: {e}")))?
    } else {
        return Err(ApiError::unsupported_media_type(content_type, &["application/json", "application/yaml"]));
    };
    if !value.is_object() {
        return Err(ApiError::bad_request("the request body must be a JSON object"));
    }
    Ok(value)
}

/// The options of a list or watch (`ListOptions`), converted and checked
/// (`ValidateListOptions`).
#[derive(Debug, Clone, Default)]
pub(super) struct ListOptions {
    pub resource_version: Option<String>,
    pub resource_version_match: Option<String>,
    /// `timeoutSeconds` of a watch; `None` (or 0) for the server's default.
    pub timeout_seconds: Option<i64>,
    /// `limit`; 0 or less lists everything.
    pub limit: i64,
    pub continue_token: Option<String>,
    pub send_initial_events: Option<bool>,
    pub bookmarks: bool,
}

/// `ListOptions` from the query of a list (`watch` false) or a watch. `watch_list`: whether
/// the `WatchList` feature is on (it is off in Kubernetes 1.33), which decides whether a watch
/// may ask for its initial events with `sendInitialEvents`, and defaults it as 1.34 does.
pub(super) fn list_options(call: &Call, watch: bool, watch_list: bool) -> Result<ListOptions, ApiError> {
    let text = |name: &str| call.param(name).map(String::from);
    let mut opts = ListOptions {
        limit: call.int_param("limit")?.unwrap_or(0),
        timeout_seconds: call.int_param("timeoutSeconds")?,
        resource_version: text("resourceVersion"),
        resource_version_match: text("resourceVersionMatch").filter(|m| !m.is_empty()),
        continue_token: text("continue").filter(|c| !c.is_empty()),
        send_initial_events: call.bool_param("sendInitialEvents"),
        bookmarks: call.bool_param("allowWatchBookmarks").unwrap_or(false),
    };
    let causes = if watch { watch_causes(&opts, watch_list) } else { list_causes(&opts) };
    if !causes.is_empty() {
        return Err(ApiError::invalid_options("ListOptions", &causes));
    }
    // `SetListOptionsDefaults`: with WatchList on, a watch from "now" streams the current
    // objects first, as a list would have given them.
    let from_now = opts.resource_version.as_deref().is_none_or(|rv| rv.is_empty() || rv == "0");
    if watch_list && watch && from_now && opts.send_initial_events.is_none() && opts.resource_version_match.is_none() {
        opts.send_initial_events = Some(true);
        opts.resource_version_match = Some("NotOlderThan".into());
    }
    Ok(opts)
}

/// `ValidateListOptions` of a list.
fn list_causes(opts: &ListOptions) -> Vec<Cause> {
    let mut causes = Vec::new();
    if let Some(matching) = opts.resource_version_match.as_deref() {
        let rv = opts.resource_version.as_deref().unwrap_or("");
        if rv.is_empty() {
            causes.push(forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden unless resourceVersion is provided",
            ));
        }
        if opts.continue_token.is_some() {
            causes
                .push(forbidden("resourceVersionMatch", "resourceVersionMatch is forbidden when continue is provided"));
        }
        if !matches!(matching, "Exact" | "NotOlderThan") {
            causes.push(not_supported("resourceVersionMatch", &go_quote(matching), &["Exact", "NotOlderThan", ""]));
        }
        if matching == "Exact" && rv == "0" {
            causes.push(forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
            ));
        }
    }
    if opts.send_initial_events.is_some() {
        causes.push(forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list"));
    }
    causes
}

/// `validateWatchOptions`.
fn watch_causes(opts: &ListOptions, watch_list: bool) -> Vec<Cause> {
    let mut causes = Vec::new();
    let matching = opts.resource_version_match.as_deref();
    if opts.send_initial_events.is_some() {
        if matching != Some("NotOlderThan") {
            causes.push(forbidden(
                "resourceVersionMatch",
                "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
            ));
        }
        if !watch_list {
            causes.push(forbidden(
                "sendInitialEvents",
                "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled",
            ));
        }
    }
    if let Some(matching) = matching {
        if opts.send_initial_events.is_none() {
            causes.push(forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
            ));
        }
        if matching != "NotOlderThan" {
            causes.push(not_supported("resourceVersionMatch", &go_quote(matching), &["NotOlderThan"]));
        }
        if opts.continue_token.is_some() {
            causes
                .push(forbidden("resourceVersionMatch", "resourceVersionMatch is forbidden when continue is provided"));
        }
    }
    causes
}

/// The options of a create, an update or a patch (`CreateOptions`, `UpdateOptions`,
/// `PatchOptions`), checked as `ValidateCreateOptions` and its siblings check them. `patch`:
/// the patch type of a patch, which decides whether `force` may be given and `fieldManager`
/// must be.
pub(super) fn write_options(call: &Call, patch: Option<PatchType>) -> Result<WriteOptions, ApiError> {
    let kind = match (patch, call.info.verb) {
        (Some(_), _) => "PatchOptions",
        (None, "create") => "CreateOptions",
        (None, _) => "UpdateOptions",
    };
    let dry_run = call.params("dryRun");
    let given = call.param("fieldManager").unwrap_or("");
    let validation = call.param("fieldValidation").unwrap_or("");
    let force = call.bool_param("force");
    let mut causes = Vec::new();
    match patch {
        Some(PatchType::Apply) if given.is_empty() => {
            causes.push(Cause::new(
                "FieldValueRequired",
                "fieldManager",
                "Required value: is required for apply patch",
            ));
        }
        Some(PatchType::Apply) => {}
        Some(_) if force.is_some() => causes.push(forbidden("force", "may not be specified for non-apply patch")),
        _ => {}
    }
    causes.extend(field_manager_causes(given));
    causes.extend(dry_run_causes(&dry_run));
    if !matches!(validation, "" | "Ignore" | "Strict" | "Warn") {
        causes.push(not_supported("fieldValidation", &go_quote(validation), &["", "Ignore", "Strict", "Warn"]));
    }
    if !causes.is_empty() {
        return Err(ApiError::invalid_options(kind, &causes));
    }
    let manager = if given.is_empty() { manager_from_agent(call.header(header::USER_AGENT)) } else { given.into() };
    Ok(WriteOptions {
        dry_run: !dry_run.is_empty(),
        manager,
        explicit_manager: !given.is_empty(),
        force: patch == Some(PatchType::Apply) && force == Some(true),
        validation: match validation {
            "Ignore" => FieldValidation::Ignore,
            "Strict" => FieldValidation::Strict,
            _ => FieldValidation::Warn,
        },
        warnings: std::sync::Mutex::default(),
        user: call.user.clone(),
    })
}

/// The field manager of a write that names none: the product of its user agent
/// (`kubectl/v1.33.0 (linux/amd64)` is `kubectl`), printable characters only.
fn manager_from_agent(agent: &str) -> String {
    let product: String = agent.split('/').next().unwrap_or("").chars().filter(|c| !c.is_control()).take(128).collect();
    let product = product.trim();
    if product.is_empty() { "unknown".to_string() } else { product.to_string() }
}

/// `ValidateFieldManager`: at most 128 bytes, printable.
fn field_manager_causes(manager: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    if manager.len() > 128 {
        causes.push(Cause::new("FieldValueTooLong", "fieldManager", "Too long: may not be more than 128 bytes"));
    }
    for (i, c) in manager.char_indices() {
        if c.is_control() {
            causes.push(Cause::new(
                "FieldValueInvalid",
                "fieldManager",
                format!(
                    "Invalid value: {}: invalid character U+{:04X} (at position {i})",
                    go_quote(manager),
                    u32::from(c)
                ),
            ));
        }
    }
    causes
}

/// `ValidateDryRun`: every value `All`; the whole list is printed as Go prints a `[]string`.
fn dry_run_causes(values: &[&str]) -> Vec<Cause> {
    if values.iter().all(|v| *v == "All") {
        return Vec::new();
    }
    let listed: Vec<String> = values.iter().map(|v| go_quote(v)).collect();
    vec![not_supported("dryRun", &format!("[]string{{{}}}", listed.join(", ")), &["All"])]
}

/// The options of a delete (`DeleteOptions`): from the body when it has one, and then only
/// from it (the query is not read); else from the query, where `uid` and `resourceVersion` are
/// preconditions. Checked as `ValidateDeleteOptions` checks them.
pub(super) fn delete_options(call: &Call) -> Result<DeleteOptions, ApiError> {
    let (propagation, orphan, dry_run, precondition_uid, precondition_rv) = if call.body.is_empty() {
        call.int_param("gracePeriodSeconds")?;
        let nonempty = |name: &str| call.param(name).filter(|v| !v.is_empty()).map(String::from);
        let dry_run: Vec<String> = call.params("dryRun").into_iter().map(String::from).collect();
        (
            call.param("propagationPolicy").map(String::from),
            call.bool_param("orphanDependents"),
            dry_run,
            nonempty("uid"),
            nonempty("resourceVersion"),
        )
    } else {
        let body: Value = serde_json::from_slice(&call.body)
            .map_err(|e| ApiError::bad_request(format!("the DeleteOptions body is not valid JSON: {e}")))?;
        let Some(fields) = body.as_object() else {
            return Err(ApiError::bad_request("the DeleteOptions body must be a JSON object"));
        };
        if fields.get("kind").and_then(Value::as_str).is_some_and(|k| !k.is_empty() && k != "DeleteOptions") {
            return Err(ApiError::internal("decoded object cannot be converted to DeleteOptions"));
        }
        let text = |pointer: &str| body.pointer(pointer).and_then(Value::as_str).map(String::from);
        let dry_run: Vec<String> = body
            .get("dryRun")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(String::from)
            .collect();
        (
            text("/propagationPolicy"),
            body.get("orphanDependents").and_then(Value::as_bool),
            dry_run,
            text("/preconditions/uid"),
            text("/preconditions/resourceVersion"),
        )
    };
    let mut causes = Vec::new();
    if let (Some(policy), Some(_)) = (&propagation, orphan) {
        causes.push(Cause::new(
            "FieldValueInvalid",
            "propagationPolicy",
            format!("Invalid value: {}: orphanDependents and deletionPropagation cannot be both set", go_quote(policy)),
        ));
    }
    if let Some(policy) = propagation.as_deref().filter(|p| !matches!(*p, "Foreground" | "Background" | "Orphan")) {
        causes.push(not_supported(
            "propagationPolicy",
            &go_quote(policy),
            &["Foreground", "Background", "Orphan", "nil"],
        ));
    }
    causes.extend(dry_run_causes(&dry_run.iter().map(String::as_str).collect::<Vec<_>>()));
    if !causes.is_empty() {
        return Err(ApiError::invalid_options("DeleteOptions", &causes));
    }
    let propagation = propagation.or_else(|| orphan.map(|o| if o { "Orphan" } else { "Background" }.to_string()));
    Ok(DeleteOptions { propagation, precondition_uid, precondition_rv, dry_run: !dry_run.is_empty() })
}

/// `field.Forbidden`.
fn forbidden(field: &str, detail: &str) -> Cause {
    Cause::new("FieldValueForbidden", field, format!("Forbidden: {detail}"))
}

/// `field.NotSupported`: `value` as the message prints it, then the values supported, quoted.
fn not_supported(field: &str, value: &str, supported: &[&str]) -> Cause {
    let listed: Vec<String> = supported.iter().map(|s| go_quote(s)).collect();
    Cause::new(
        "FieldValueNotSupported",
        field,
        format!("Unsupported value: {value}: supported values: {}", listed.join(", ")),
    )
}

/// Go's `time.ParseDuration`, for the `timeout` parameter: `Ok` when `text` is a duration,
/// else Go's message.
pub(super) fn check_duration(text: &str) -> Result<(), String> {
    let invalid = || format!("time: invalid duration {}", go_quote(text));
    let mut rest = text.strip_prefix(['-', '+']).unwrap_or(text);
    if rest == "0" {
        return Ok(());
    }
    if rest.is_empty() {
        return Err(invalid());
    }
    while !rest.is_empty() {
        let number = rest.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(rest.len());
        let digits = &rest[..number];
        if digits.is_empty() || digits == "." || digits.matches('.').count() > 1 {
            return Err(invalid());
        }
        rest = &rest[number..];
        let unit_end = rest.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(rest.len());
        let unit = &rest[..unit_end];
        if unit.is_empty() {
            return Err(format!("time: missing unit in duration {}", go_quote(text)));
        }
        if !matches!(unit, "ns" | "us" | "µs" | "μs" | "ms" | "s" | "m" | "h") {
            return Err(format!("time: unknown unit {} in duration {}", go_quote(unit), go_quote(text)));
        }
        rest = &rest[unit_end..];
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn booleans_are_false_only_for_zero_and_false() {
        for truthy in ["", "1", "true", "True", "yes", "no", "off"] {
            assert!(k8s_bool(truthy), "{truthy:?}");
        }
        for falsy in ["0", "false", "False", "FALSE", "fAlSe"] {
            assert!(!k8s_bool(falsy), "{falsy:?}");
        }
    }

    #[test]
    fn durations_parse_as_go_parses_them() {
        for good in ["0", "30s", "1m", "1h2m3.5s", "-1s", "100ms", "1.5h"] {
            assert_eq!(check_duration(good), Ok(()), "{good}");
        }
        assert_eq!(check_duration("x"), Err("time: invalid duration \"x\"".into()));
        assert_eq!(check_duration("1"), Err("time: missing unit in duration \"1\"".into()));
        assert_eq!(check_duration("1x"), Err("time: unknown unit \"x\" in duration \"1x\"".into()));
        assert_eq!(check_duration(""), Err("time: invalid duration \"\"".into()));
    }
}
