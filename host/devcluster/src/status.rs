//! `Status` error objects: the code, reason, message and details a real API server answers with.

use std::fmt::Write as _;

use serde_json::{Value, json};

use super::resource::ResourceType;

/// One failed field check of an `Invalid` (422) answer (`details.causes[]`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Cause {
    /// `FieldValueInvalid`, `FieldValueRequired`, `FieldValueNotSupported`...
    pub reason: &'static str,
    /// The message without the field path, e.g. `Invalid value: 11: ...`.
    pub message: String,
    /// The field path, e.g. `spec.replicas`.
    pub field: String,
}

impl Cause {
    pub(crate) fn new(reason: &'static str, field: impl Into<String>, message: impl Into<String>) -> Cause {
        Cause { reason, message: message.into(), field: field.into() }
    }

    /// The text a real server prints for this cause: `field: message`.
    fn line(&self) -> String {
        if self.field.is_empty() { self.message.clone() } else { format!("{}: {}", self.field, self.message) }
    }
}

/// A failed request, answered as a `Status` object with `code` as the HTTP status.
#[derive(Debug, Clone)]
pub(crate) struct ApiError {
    pub code: u16,
    pub reason: &'static str,
    pub message: String,
    pub details: Option<Value>,
}

impl ApiError {
    pub(crate) fn new(code: u16, reason: &'static str, message: impl Into<String>) -> ApiError {
        ApiError { code, reason, message: message.into(), details: None }
    }

    pub(crate) fn with_details(mut self, details: Value) -> ApiError {
        self.details = Some(details);
        self
    }

    pub(crate) fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(400, "BadRequest", message)
    }

    /// 403, e.g. creating content in a namespace that is being terminated.
    pub(crate) fn forbidden(group: &str, resource: &str, name: &str, why: &str) -> ApiError {
        ApiError::new(403, "Forbidden", format!("{} \"{name}\" is forbidden: {why}", qualified(group, resource)))
            .with_details(name_details(group, resource, name))
    }

    /// 403 from authorization (`apierrors.NewForbidden`): `message` says who cannot do what;
    /// the resource (of `group`) and `name` are those of the request, both empty for a path.
    pub(crate) fn forbidden_access(group: &str, resource: &str, name: &str, message: &str) -> ApiError {
        let text = match (resource.is_empty() && group.is_empty(), name.is_empty()) {
            (true, _) => format!("forbidden: {message}"),
            (false, true) => format!("{} is forbidden: {message}", qualified(group, resource)),
            (false, false) => format!("{} {} is forbidden: {message}", qualified(group, resource), go_quote(name)),
        };
        let mut details = serde_json::Map::new();
        for (key, value) in [("name", name), ("group", group), ("kind", resource)] {
            if !value.is_empty() {
                details.insert(key.into(), json!(value));
            }
        }
        ApiError::new(403, "Forbidden", text).with_details(Value::Object(details))
    }

    /// 401: credentials were given and are not valid (`apierrors.NewUnauthorized`).
    pub(crate) fn unauthorized() -> ApiError {
        ApiError::new(401, "Unauthorized", "Unauthorized")
    }

    /// The answer for a path no resource is served at.
    pub(crate) fn no_route() -> ApiError {
        ApiError::new(404, "NotFound", "the server could not find the requested resource").with_details(json!({}))
    }

    pub(crate) fn not_found(group: &str, resource: &str, name: &str) -> ApiError {
        ApiError::new(404, "NotFound", format!("{} \"{name}\" not found", qualified(group, resource)))
            .with_details(name_details(group, resource, name))
    }

    pub(crate) fn already_exists(group: &str, resource: &str, name: &str) -> ApiError {
        ApiError::new(409, "AlreadyExists", format!("{} \"{name}\" already exists", qualified(group, resource)))
            .with_details(name_details(group, resource, name))
    }

    /// A stale `resourceVersion` on update.
    pub(crate) fn modified(group: &str, resource: &str, name: &str) -> ApiError {
        ApiError::conflict(
            group,
            resource,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    pub(crate) fn conflict(group: &str, resource: &str, name: &str, why: &str) -> ApiError {
        ApiError::new(
            409,
            "Conflict",
            format!("Operation cannot be fulfilled on {} \"{name}\": {why}", qualified(group, resource)),
        )
        .with_details(name_details(group, resource, name))
    }

    /// 422 with one cause per failed field check, worded like the real server.
    pub(crate) fn invalid(rt: &ResourceType, name: &str, causes: &[Cause]) -> ApiError {
        ApiError::invalid_kind(&rt.group, &rt.kind, name, causes)
    }

    /// 422 for request options that fail their checks (`CreateOptions`, `ListOptions`...,
    /// of the group `meta.k8s.io`), as `errors.NewInvalid` words it for them.
    pub(crate) fn invalid_options(kind: &str, causes: &[Cause]) -> ApiError {
        ApiError::invalid_kind("meta.k8s.io", kind, "", causes)
    }

    /// `errors.NewInvalid`: `<Kind>.<group> "<name>" is invalid: <causes>`, also for a kind
    /// that is not a served resource's (a `TokenRequest`, a review).
    pub(crate) fn invalid_kind(group: &str, kind: &str, name: &str, causes: &[Cause]) -> ApiError {
        let qualified = if group.is_empty() { kind.to_string() } else { format!("{kind}.{group}") };
        let mut lines: Vec<String> = Vec::new();
        for line in causes.iter().map(Cause::line) {
            // An aggregate of errors lists each message once.
            if !lines.contains(&line) {
                lines.push(line);
            }
        }
        let listed = if lines.len() == 1 { lines[0].clone() } else { format!("[{}]", lines.join(", ")) };
        let mut details = if name.is_empty() { json!({}) } else { json!({ "name": name }) };
        if !group.is_empty() {
            details["group"] = json!(group);
        }
        details["kind"] = json!(kind);
        details["causes"] =
            causes.iter().map(|c| json!({ "reason": c.reason, "message": c.message, "field": c.field })).collect();
        ApiError::new(422, "Invalid", format!("{qualified} \"{name}\" is invalid: {listed}")).with_details(details)
    }

    /// 422 without field causes, used when a patch cannot be applied.
    pub(crate) fn unprocessable(message: impl Into<String>) -> ApiError {
        ApiError::new(422, "Invalid", message)
    }

    pub(crate) fn method_not_allowed() -> ApiError {
        ApiError::new(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
            .with_details(json!({}))
    }

    /// 405 for a verb a resource does not serve (`NewMethodNotSupported`).
    pub(crate) fn method_not_supported(group: &str, resource: &str, verb: &str) -> ApiError {
        ApiError::new(
            405,
            "MethodNotAllowed",
            format!("{verb} is not supported on resources of kind {}", go_quote(&qualified(group, resource))),
        )
        .with_details(name_details(group, resource, ""))
    }

    pub(crate) fn method_not_allowed_because(message: &str) -> ApiError {
        ApiError::new(405, "MethodNotAllowed", message).with_details(json!({}))
    }

    pub(crate) fn unsupported_media_type(content_type: &str, accepted: &[&str]) -> ApiError {
        ApiError::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: {}",
                accepted.join(", ")
            ),
        )
        .with_details(json!({ "causes": [{ "reason": "UnexpectedServerResponse", "message": content_type }] }))
    }

    /// 406: the client accepts only a representation this server does not produce.
    pub(crate) fn not_acceptable(accepted: &[&str]) -> ApiError {
        ApiError::new(
            406,
            "NotAcceptable",
            format!("only the following media types are accepted: {}", accepted.join(", ")),
        )
    }

    /// 406: the representation asked for does not fit what the request returns.
    pub(crate) fn not_acceptable_because(message: String) -> ApiError {
        ApiError::new(406, "NotAcceptable", message)
    }

    /// A watch or continue token older than the retained history.
    pub(crate) fn expired(message: impl Into<String>) -> ApiError {
        ApiError::new(410, "Expired", message)
    }

    pub(crate) fn too_large(limit: usize) -> ApiError {
        ApiError::new(413, "RequestEntityTooLarge", format!("Request entity too large: limit is {limit}"))
    }

    /// A read at a resourceVersion the server has not reached (`NewTooLargeResourceVersionError`).
    pub(crate) fn resource_version_too_large(wanted: u64, current: u64) -> ApiError {
        let mut err =
            ApiError::new(504, "Timeout", format!("Timeout: Too large resource version: {wanted}, current: {current}"));
        err.details = Some(json!({
            "causes": [{ "reason": "ResourceVersionTooLarge", "message": "Too large resource version" }],
            "retryAfterSeconds": 1,
        }));
        err
    }

    pub(crate) fn internal(message: impl Into<String>) -> ApiError {
        ApiError::new(500, "InternalError", message)
    }

    /// `errors.NewInternalError(err)`: 500, `Internal error occurred: <err>`, the error as the
    /// one cause.
    pub(crate) fn internal_error(err: &str) -> ApiError {
        ApiError::new(500, "InternalError", format!("Internal error occurred: {err}"))
            .with_details(json!({ "causes": [{ "message": err }] }))
    }

    /// A server-side apply refused because other managers own fields it would change.
    pub(crate) fn apply_conflict(message: String, causes: &[Value]) -> ApiError {
        ApiError::new(409, "Conflict", message).with_details(json!({ "causes": causes }))
    }

    /// The `Status` object sent as the body (or inside a watch `ERROR` event).
    pub(crate) fn to_status(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
        });
        // An error that is no API status has no reason (`StatusReasonUnknown` is empty).
        if !self.reason.is_empty() {
            status["reason"] = json!(self.reason);
        }
        if let Some(details) = &self.details {
            status["details"] = details.clone();
        }
        status["code"] = json!(self.code);
        status
    }
}

/// The `Status` a successful delete answers with for resources that do not return the object.
pub(crate) fn success(group: &str, resource: &str, name: &str, uid: &str) -> Value {
    let mut details = name_details(group, resource, name);
    details["uid"] = json!(uid);
    json!({ "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details })
}

/// A parameter as `strconv.ParseInt(s, 10, 64)` reads it; one that does not parse is a 400
/// with Go's message, as a parameter that does not convert is.
pub(crate) fn parse_int64(text: &str) -> Result<i64, ApiError> {
    text.parse::<i64>().map_err(|e| {
        let why = match e.kind() {
            std::num::IntErrorKind::PosOverflow | std::num::IntErrorKind::NegOverflow => "value out of range",
            _ => "invalid syntax",
        };
        ApiError::bad_request(format!("strconv.ParseInt: parsing {}: {why}", go_quote(text)))
    })
}

/// `s` quoted as Go's `%q` (`strconv.Quote`) quotes it in error messages.
pub(crate) fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{b}' => out.push_str("\\v"),
            '\u{c}' => out.push_str("\\f"),
            c if u32::from(c) < 0x20 || c == '\u{7f}' => {
                let _ = write!(out, "\\x{:02x}", u32::from(c));
            }
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `resource.group`, or `resource` for the core group.
pub(crate) fn qualified(group: &str, resource: &str) -> String {
    if group.is_empty() { resource.to_string() } else { format!("{resource}.{group}") }
}

fn name_details(group: &str, resource: &str, name: &str) -> Value {
    let mut details = json!({ "name": name, "kind": resource });
    if !group.is_empty() {
        details["group"] = json!(group);
    }
    details
}
