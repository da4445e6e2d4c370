//! What a request's headers, parameters and body say, read for the verbs: the body decoded,
//! the options of writes and deletes, and how objects are to be rendered.

use axum::http::header;
use serde_json::{Value, json};

use super::Call;
use crate::present::Presentation;
use crate::protobuf;
use crate::request::{DeleteOptions, FieldValidation, Target, WriteOptions};
use crate::status::ApiError;
use crate::table::Include;

/// Whether the client accepts a JSON answer.
pub(super) fn accepts_json(call: &Call) -> bool {
    let accept = call.header(header::ACCEPT);
    accept.is_empty() || accept.split(',').any(|a| a.contains("json") || a.trim_start().starts_with("*/*"))
}

/// How the client asks objects to be rendered (`Accept`).
pub(super) fn presentation(call: &Call) -> Presentation {
    let accept = call.header(header::ACCEPT);
    if accept.contains("as=Table") {
        Presentation::Table(Include::parse(call.param("includeObject")))
    } else if accept.contains("as=PartialObjectMetadata") {
        Presentation::Metadata
    } else {
        Presentation::Full
    }
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

/// Decodes a body of the kind `kind` of `api_version` (JSON, YAML or protobuf).
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

fn dry_run(values: &[&str]) -> Result<bool, ApiError> {
    for v in values {
        if *v != "All" {
            return Err(ApiError::bad_request(format!("Invalid dryRun value: {v:?}: supported values: \"All\"")));
        }
    }
    Ok(!values.is_empty())
}

pub(super) fn write_options(call: &Call) -> Result<WriteOptions, ApiError> {
    let dry: Vec<&str> = call.query.iter().filter(|(k, _)| k == "dryRun").map(|(_, v)| v.as_str()).collect();
    let explicit = call.param("fieldManager").filter(|m| !m.is_empty());
    if explicit.is_some_and(|m| m.len() > 128) {
        return Err(ApiError::bad_request("fieldManager: Too long: may not be more than 128 bytes"));
    }
    let agent = call.header(header::USER_AGENT);
    let from_agent = agent.split('/').next().unwrap_or("").trim();
    let manager = explicit.map_or_else(
        || {
            if from_agent.is_empty() { "unknown".to_string() } else { from_agent.chars().take(128).collect() }
        },
        String::from,
    );
    let validation = match call.param("fieldValidation") {
        None | Some("" | "Warn") => FieldValidation::Warn,
        Some("Ignore") => FieldValidation::Ignore,
        Some("Strict") => FieldValidation::Strict,
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "fieldValidation: Unsupported value: {other:?}: supported values: \"Ignore\", \"Strict\", \"Warn\""
            )));
        }
    };
    Ok(WriteOptions {
        dry_run: dry_run(&dry)?,
        manager,
        explicit_manager: explicit.is_some(),
        force: false,
        validation,
        warnings: std::sync::Mutex::default(),
        user: call.user.clone(),
    })
}

pub(super) fn delete_options(call: &Call) -> Result<DeleteOptions, ApiError> {
    let body: Value = if call.body.iter().all(u8::is_ascii_whitespace) {
        json!({})
    } else {
        serde_json::from_slice(&call.body)
            .map_err(|e| ApiError::bad_request(format!("the DeleteOptions body is not valid JSON: {e}")))?
    };
    let s = |v: Option<&Value>| v.and_then(Value::as_str).map(String::from);
    let mut propagation =
        s(body.get("propagationPolicy")).or_else(|| call.param("propagationPolicy").map(String::from));
    let orphan = body
        .get("orphanDependents")
        .and_then(Value::as_bool)
        .or_else(|| call.param("orphanDependents").map(|v| v == "true"));
    if propagation.is_none() {
        propagation = orphan.map(|o| if o { "Orphan".to_string() } else { "Background".to_string() });
    }
    let mut dry: Vec<&str> = call.query.iter().filter(|(k, _)| k == "dryRun").map(|(_, v)| v.as_str()).collect();
    dry.extend(body.get("dryRun").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str));
    Ok(DeleteOptions {
        propagation,
        precondition_uid: s(body.pointer("/preconditions/uid")),
        precondition_rv: s(body.pointer("/preconditions/resourceVersion")),
        dry_run: dry_run(&dry)?,
    })
}
