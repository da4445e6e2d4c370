//! Protobuf request bodies (`application/vnd.kubernetes.protobuf`), which kubectl and client-go
//! send for built-in kinds. The field numbers and types of every message come from upstream
//! (`data/protobuf.json`, written by `data/protobuf.py` from the `k8s-pb` crate); the JSON
//! produced is what the real server would store from the same bytes.
//!
//! One approximation: Go writes a non-pointer scalar field even when it holds its zero value,
//! and the messages do not say which fields are pointers, so an empty string, `0` or `false`
//! reads as unset (the JSON form omits those fields too, as `omitempty`), where the real
//! server keeps an explicit zero of a pointer field such as `replicas: 0`.

use std::collections::HashMap;
use std::sync::OnceLock;

use base64::Engine as _;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::builtins;

const MAGIC: &[u8] = b"k8s\0";
/// Nesting deeper than any Kubernetes type, so a hostile body cannot exhaust the stack.
const MAX_DEPTH: usize = 64;

/// Why a protobuf body was not read.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Error {
    /// The kind has no protobuf message (a custom resource): the server does not take it.
    NotBuiltin,
    /// The bytes are not a well-formed message of the kind.
    Malformed(String),
}

/// One field of a message: number, JSON name (empty for a struct embedded inline), type, repeated.
#[derive(Debug, Deserialize)]
struct Field(u64, String, String, bool);

#[derive(Deserialize)]
struct Messages {
    messages: HashMap<String, Vec<Field>>,
}

fn messages() -> &'static HashMap<String, Vec<Field>> {
    static MESSAGES: OnceLock<HashMap<String, Vec<Field>>> = OnceLock::new();
    MESSAGES.get_or_init(|| {
        // Generated and checked in tests; a parse failure is a build defect.
        let parsed: Messages =
            serde_json::from_str(include_str!("../data/protobuf.json")).expect("data/protobuf.json parses");
        parsed.messages
    })
}

/// The fields of the message `name` in their declaration order, which is the Go struct's (the
/// order JSON is written in): each field's JSON name (empty for a struct embedded inline) and
/// type (a scalar, `map:KEY:VALUE`, or a message name).
pub(crate) fn fields(name: &str) -> Option<impl Iterator<Item = (&'static str, &'static str)>> {
    messages().get(name).map(|fields| fields.iter().map(|f| (f.1.as_str(), f.2.as_str())))
}

/// The name of every message.
pub(crate) fn names() -> impl Iterator<Item = &'static str> {
    messages().keys().map(String::as_str)
}

/// The value of one field on the wire.
enum Wire<'a> {
    Varint(u64),
    Fixed64(u64),
    Fixed32(u32),
    Bytes(&'a [u8]),
}

struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    fn varint(&mut self) -> Result<u64, String> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let (&byte, rest) = self.buf.split_first().ok_or("truncated varint")?;
            self.buf = rest;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err("varint longer than 10 bytes".into())
    }

    fn take(&mut self, len: usize) -> Result<&'a [u8], String> {
        let (bytes, rest) = self.buf.split_at_checked(len).ok_or("truncated field")?;
        self.buf = rest;
        Ok(bytes)
    }

    /// The next field, `None` at the end of the message.
    fn next_field(&mut self) -> Result<Option<(u64, Wire<'a>)>, String> {
        if self.buf.is_empty() {
            return Ok(None);
        }
        let key = self.varint()?;
        let wire = match key & 7 {
            0 => Wire::Varint(self.varint()?),
            1 => Wire::Fixed64(u64::from_le_bytes(self.take(8)?.try_into().map_err(|_| "truncated fixed64")?)),
            2 => {
                let len = usize::try_from(self.varint()?).map_err(|_| "length out of range")?;
                Wire::Bytes(self.take(len)?)
            }
            5 => Wire::Fixed32(u32::from_le_bytes(self.take(4)?.try_into().map_err(|_| "truncated fixed32")?)),
            other => return Err(format!("unsupported wire type {other}")),
        };
        Ok(Some((key >> 3, wire)))
    }

    fn fields(buf: &'a [u8]) -> Result<Vec<(u64, Wire<'a>)>, String> {
        let mut reader = Reader { buf };
        let mut out = Vec::new();
        while let Some(field) = reader.next_field()? {
            out.push(field);
        }
        Ok(out)
    }
}

/// Decodes a protobuf body for an object of `api_version` and `kind`.
pub(crate) fn decode(body: &[u8], api_version: &str, kind: &str) -> Result<Value, Error> {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let package = if group.is_empty() { "core" } else { group.split('.').next().unwrap_or(group) };
    let packaged = format!("io.k8s.api.{package}.{version}.{kind}");
    // A subresource's body (`TokenRequest`) is a message the OpenAPI definitions may lack:
    // `k8s.io/api` names its package after the group's first label.
    let name = match builtins::definition_name(group, version, kind) {
        Some(name) => name,
        None => messages().get_key_value(&packaged).map(|(name, _)| name.as_str()).ok_or(Error::NotBuiltin)?,
    };
    let envelope = body.strip_prefix(MAGIC).ok_or_else(|| Error::Malformed("no protobuf envelope".into()))?;
    let mut raw: &[u8] = &[];
    for (number, wire) in Reader::fields(envelope).map_err(Error::Malformed)? {
        match (number, wire) {
            (2, Wire::Bytes(bytes)) => raw = bytes,
            (3, Wire::Bytes(encoding)) if !encoding.is_empty() => {
                let encoding = String::from_utf8_lossy(encoding);
                return Err(Error::Malformed(format!("content encoding {encoding:?} is not supported")));
            }
            _ => {}
        }
    }
    let mut object = match message(raw, name, 0).map_err(Error::Malformed)? {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    object.insert("apiVersion".into(), json!(api_version));
    object.insert("kind".into(), json!(kind));
    Ok(Value::Object(object))
}

/// Go's `time.Duration` text (`1h2m3.5s`), as `metav1.Duration` is written in JSON.
fn duration_text(nanos: i64) -> String {
    if nanos == 0 {
        return "0s".into();
    }
    let sign = if nanos < 0 { "-" } else { "" };
    let nanos = nanos.unsigned_abs();
    let (hours, minutes) = (nanos / 3_600_000_000_000, nanos / 60_000_000_000 % 60);
    let seconds = nanos % 60_000_000_000;
    let mut seconds_text = format!("{}.{:09}", seconds / 1_000_000_000, seconds % 1_000_000_000);
    seconds_text = seconds_text.trim_end_matches('0').trim_end_matches('.').to_string();
    match (hours, minutes) {
        (0, 0) => format!("{sign}{seconds_text}s"),
        (0, m) => format!("{sign}{m}m{seconds_text}s"),
        (h, m) => format!("{sign}{h}h{m}m{seconds_text}s"),
    }
}

fn int(fields: &[(u64, Wire<'_>)], number: u64) -> Option<i64> {
    fields.iter().find_map(|(n, w)| match w {
        #[allow(clippy::cast_possible_wrap)] // two's complement, as protobuf encodes negative numbers
        Wire::Varint(v) if *n == number => Some(*v as i64),
        _ => None,
    })
}

fn bytes<'a>(fields: &[(u64, Wire<'a>)], number: u64) -> Option<&'a [u8]> {
    fields.iter().find_map(|(n, w)| match w {
        Wire::Bytes(b) if *n == number => Some(*b),
        _ => None,
    })
}

fn text(bytes: &[u8]) -> Result<String, String> {
    String::from_utf8(bytes.to_vec()).map_err(|_| "a string field is not UTF-8".into())
}

/// The messages whose JSON form is not an object of their fields.
#[allow(clippy::cast_possible_truncation)] // an int32 on the wire is a 64-bit varint
fn special(buf: &[u8], name: &str) -> Result<Option<Value>, String> {
    let simple = name.rsplit('.').next().unwrap_or_default();
    let value = match name {
        "io.k8s.apimachinery.pkg.apis.meta.v1.Time" | "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime" => {
            let fields = Reader::fields(buf)?;
            let Some(seconds) = int(&fields, 1) else {
                // Go writes a zero time as an empty message; its JSON is null.
                return Ok(Some(Value::Null));
            };
            let nanos = int(&fields, 2).unwrap_or(0);
            let time = jiff::Timestamp::new(seconds, i32::try_from(nanos).unwrap_or(0))
                .map_err(|e| format!("time out of range: {e}"))?;
            let format = if simple == "Time" { "%Y-%m-%dT%H:%M:%SZ" } else { "%Y-%m-%dT%H:%M:%S.%6fZ" };
            json!(time.strftime(format).to_string())
        }
        "io.k8s.apimachinery.pkg.util.intstr.IntOrString" => {
            let fields = Reader::fields(buf)?;
            if int(&fields, 1) == Some(1) {
                json!(text(bytes(&fields, 3).unwrap_or_default())?)
            } else {
                json!(int(&fields, 2).map_or(0, |v| i64::from(v as i32)))
            }
        }
        "io.k8s.apimachinery.pkg.api.resource.Quantity" => {
            json!(text(bytes(&Reader::fields(buf)?, 1).unwrap_or_default())?)
        }
        "io.k8s.apimachinery.pkg.apis.meta.v1.Duration" => {
            json!(duration_text(int(&Reader::fields(buf)?, 1).unwrap_or(0)))
        }
        "io.k8s.apimachinery.pkg.runtime.RawExtension"
        | "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1"
        | "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON" => {
            let raw = bytes(&Reader::fields(buf)?, 1).unwrap_or_default();
            if raw.is_empty() {
                Value::Null
            } else {
                serde_json::from_slice(raw).map_err(|e| format!("{simple} does not hold JSON: {e}"))?
            }
        }
        _ => return Ok(None),
    };
    Ok(Some(value))
}

/// A message's JSON form.
fn message(buf: &[u8], name: &str, depth: usize) -> Result<Value, String> {
    if depth > MAX_DEPTH {
        return Err(format!("messages nested deeper than {MAX_DEPTH}"));
    }
    if let Some(value) = special(buf, name)? {
        return Ok(value);
    }
    let fields = messages().get(name).ok_or_else(|| format!("no protobuf message {name}"))?;
    // A wrapper of a list (`ExtraValue`): its JSON form is the list.
    let wrapper =
        fields.len() == 1 && fields[0].3 && fields[0].1 == "items" && !builtins::definitions().contains_key(name);
    let mut out = Map::new();
    for (number, wire) in Reader::fields(buf)? {
        // Go ignores fields it does not know; so does this.
        let Some(Field(_, json_name, kind, repeated)) = fields.iter().find(|f| f.0 == number) else {
            continue;
        };
        if let Some(map_types) = kind.strip_prefix("map:") {
            let Wire::Bytes(entry) = wire else {
                return Err(format!("{json_name}: a map entry must be length-delimited"));
            };
            let value_type = map_types.split_once(':').map_or("string", |(_, v)| v);
            let entry = Reader::fields(entry)?;
            let key = text(bytes(&entry, 1).unwrap_or_default())?;
            let value = match entry.into_iter().find(|(n, _)| *n == 2) {
                Some((_, wire)) => scalar_or_message(wire, value_type, json_name, depth)?,
                None => zero(value_type),
            };
            let map = out.entry(json_name.clone()).or_insert_with(|| json!({}));
            if let Some(map) = map.as_object_mut() {
                map.insert(key, value);
            }
        } else if *repeated {
            let list = out.entry(json_name.clone()).or_insert_with(|| json!([]));
            let Some(list) = list.as_array_mut() else { continue };
            match wire {
                // A packed list of numbers.
                Wire::Bytes(packed) if is_number(kind) => {
                    let mut reader = Reader { buf: packed };
                    while !reader.buf.is_empty() {
                        list.push(scalar_or_message(Wire::Varint(reader.varint()?), kind, json_name, depth)?);
                    }
                }
                wire => list.push(scalar_or_message(wire, kind, json_name, depth)?),
            }
        } else if json_name.is_empty() {
            // A struct embedded inline: its fields are this message's.
            if let Value::Object(fields) = scalar_or_message(wire, kind, json_name, depth)? {
                out.extend(fields);
            }
        } else {
            let value = scalar_or_message(wire, kind, json_name, depth)?;
            out.insert(json_name.clone(), value);
        }
    }
    // Zero scalars read as unset (see the module docs); so do null messages (a zero time).
    out.retain(|_, v| !matches!(v, Value::Null | Value::Bool(false)) && v != "" && v != 0);
    if wrapper {
        return Ok(out.remove("items").unwrap_or_else(|| json!([])));
    }
    Ok(Value::Object(out))
}

fn is_number(kind: &str) -> bool {
    matches!(kind, "int32" | "int64" | "uint32" | "uint64" | "bool")
}

fn zero(kind: &str) -> Value {
    match kind {
        "string" | "bytes" => json!(""),
        "bool" => json!(false),
        k if is_number(k) || k == "double" || k == "float" => json!(0),
        _ => json!({}),
    }
}

#[allow(clippy::cast_possible_truncation, clippy::cast_possible_wrap)] // protobuf's own integer encodings
fn scalar_or_message(wire: Wire<'_>, kind: &str, field: &str, depth: usize) -> Result<Value, String> {
    let mismatch = || format!("{field}: the wire type does not match its type {kind}");
    Ok(match (kind, wire) {
        ("int32", Wire::Varint(v)) => json!(i64::from(v as i32)),
        ("int64", Wire::Varint(v)) => json!(v as i64),
        ("uint32" | "uint64", Wire::Varint(v)) => json!(v),
        ("bool", Wire::Varint(v)) => json!(v != 0),
        ("double", Wire::Fixed64(v)) => json!(f64::from_bits(v)),
        ("float", Wire::Fixed32(v)) => json!(f32::from_bits(v)),
        ("string", Wire::Bytes(b)) => json!(text(b).map_err(|e| format!("{field}: {e}"))?),
        ("bytes", Wire::Bytes(b)) => json!(base64::engine::general_purpose::STANDARD.encode(b)),
        (name, Wire::Bytes(b)) if name.starts_with("io.") => message(b, name, depth + 1)?,
        _ => return Err(mismatch()),
    })
}

#[cfg(test)]
#[allow(clippy::default_trait_access)] // the messages' types are long; `Default::default()` reads better
mod tests {
    use super::*;

    /// A body as client-go sends it: the magic number and a `runtime.Unknown` around the message.
    fn envelope(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
        use prost::Message as _;
        let unknown = k8s_pb::apimachinery::pkg::runtime::Unknown {
            type_meta: Some(k8s_pb::apimachinery::pkg::runtime::TypeMeta {
                api_version: Some(api_version.into()),
                kind: Some(kind.into()),
            }),
            raw: Some(raw.to_vec()),
            content_encoding: Some(String::new()),
            content_type: Some(String::new()),
        };
        [MAGIC.to_vec(), unknown.encode_to_vec()].concat()
    }

    fn encode(message: &impl prost::Message) -> Vec<u8> {
        message.encode_to_vec()
    }

    #[allow(clippy::unnecessary_wraps)] // the messages hold their metadata as an Option
    fn meta(name: &str) -> Option<k8s_pb::apimachinery::pkg::apis::meta::v1::ObjectMeta> {
        Some(k8s_pb::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some(name.into()),
            // Go writes these even when empty: they must read as unset.
            namespace: Some(String::new()),
            creation_timestamp: Some(k8s_pb::apimachinery::pkg::apis::meta::v1::Time::default()),
            ..Default::default()
        })
    }

    #[test]
    fn a_deployment_as_kubectl_create_sends_it() {
        use k8s_pb::api::apps::v1::{Deployment, DeploymentSpec};
        use k8s_pb::api::core::v1::{Container, ContainerPort, PodSpec, PodTemplateSpec};
        use k8s_pb::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
        let labels: std::collections::BTreeMap<String, String> = [("app".to_string(), "web".to_string())].into();
        let deployment = Deployment {
            metadata: Some(ObjectMeta { labels: labels.clone(), ..meta("web").unwrap() }),
            spec: Some(DeploymentSpec {
                replicas: Some(3),
                selector: Some(LabelSelector { match_labels: labels.clone(), ..Default::default() }),
                template: Some(PodTemplateSpec {
                    metadata: Some(ObjectMeta { labels, ..Default::default() }),
                    spec: Some(PodSpec {
                        containers: vec![Container {
                            name: Some("nginx".into()),
                            image: Some("nginx".into()),
                            ports: vec![ContainerPort { container_port: Some(80), ..Default::default() }],
                            resources: Some(Default::default()),
                            ..Default::default()
                        }],
                        ..Default::default()
                    }),
                }),
                strategy: Some(Default::default()),
                ..Default::default()
            }),
            status: Some(Default::default()),
        };
        let body = envelope("apps/v1", "Deployment", &encode(&deployment));
        let decoded = decode(&body, "apps/v1", "Deployment").unwrap();
        assert_eq!(
            decoded,
            json!({
                "apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": { "name": "web", "labels": { "app": "web" } },
                "spec": {
                    "replicas": 3,
                    "selector": { "matchLabels": { "app": "web" } },
                    "template": {
                        "metadata": { "labels": { "app": "web" } },
                        "spec": { "containers": [{ "name": "nginx", "image": "nginx",
                            "ports": [{ "containerPort": 80 }], "resources": {} }] },
                    },
                    "strategy": {},
                },
                "status": {},
            })
        );
    }

    #[test]
    fn special_messages_read_as_their_json_forms() {
        use k8s_pb::api::core::v1::{Secret, Service, ServicePort, ServiceSpec};
        use k8s_pb::apimachinery::pkg::apis::meta::v1::Time;
        use k8s_pb::apimachinery::pkg::util::intstr::IntOrString;
        let service = Service {
            metadata: meta("web"),
            spec: Some(ServiceSpec {
                ports: vec![
                    ServicePort {
                        port: Some(80),
                        target_port: Some(IntOrString { r#type: Some(0), int_val: Some(8080), str_val: None }),
                        ..Default::default()
                    },
                    ServicePort {
                        port: Some(443),
                        target_port: Some(IntOrString {
                            r#type: Some(1),
                            int_val: None,
                            str_val: Some("https".into()),
                        }),
                        ..Default::default()
                    },
                ],
                ..Default::default()
            }),
            status: None,
        };
        let decoded = decode(&envelope("v1", "Service", &encode(&service)), "v1", "Service").unwrap();
        assert_eq!(
            decoded["spec"]["ports"],
            json!([{ "port": 80, "targetPort": 8080 }, { "port": 443, "targetPort": "https" }])
        );

        let secret = Secret {
            metadata: Some(k8s_pb::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                name: Some("s".into()),
                creation_timestamp: Some(Time { seconds: Some(1_700_000_000), nanos: Some(0) }),
                ..Default::default()
            }),
            data: [("key".to_string(), vec![0u8, 159, 146, 150])].into(),
            r#type: Some("Opaque".into()),
            ..Default::default()
        };
        let decoded = decode(&envelope("v1", "Secret", &encode(&secret)), "v1", "Secret").unwrap();
        assert_eq!(decoded["data"], json!({ "key": "AJ+Slg==" }));
        assert_eq!(decoded["metadata"]["creationTimestamp"], "2023-11-14T22:13:20Z");
        assert_eq!(decoded["type"], "Opaque");
    }

    #[test]
    fn quantities_and_cron_jobs_decode() {
        use k8s_pb::api::batch::v1::{CronJob, CronJobSpec, JobTemplateSpec};
        use k8s_pb::api::core::v1::ResourceQuota;
        use k8s_pb::apimachinery::pkg::api::resource::Quantity;
        let quota = ResourceQuota {
            metadata: meta("q"),
            spec: Some(k8s_pb::api::core::v1::ResourceQuotaSpec {
                hard: [("pods".to_string(), Quantity { string: Some("10".into()) })].into(),
                ..Default::default()
            }),
            status: None,
        };
        let decoded = decode(&envelope("v1", "ResourceQuota", &encode(&quota)), "v1", "ResourceQuota").unwrap();
        assert_eq!(decoded["spec"]["hard"], json!({ "pods": "10" }));
        let cron = CronJob {
            metadata: meta("nightly"),
            spec: Some(CronJobSpec {
                schedule: Some("0 3 * * *".into()),
                job_template: Some(JobTemplateSpec { metadata: None, spec: Some(Default::default()) }),
                ..Default::default()
            }),
            status: None,
        };
        let decoded = decode(&envelope("batch/v1", "CronJob", &encode(&cron)), "batch/v1", "CronJob").unwrap();
        assert_eq!(decoded["spec"], json!({ "schedule": "0 3 * * *", "jobTemplate": { "spec": {} } }));
    }

    #[test]
    fn bad_bodies_are_refused_with_a_reason_never_a_panic() {
        assert_eq!(decode(b"k8s\0", "example.com/v1", "Foo"), Err(Error::NotBuiltin));
        assert!(matches!(decode(b"not protobuf", "v1", "ConfigMap"), Err(Error::Malformed(_))));
        assert!(matches!(decode(b"k8s\0\x12\x7f", "v1", "ConfigMap"), Err(Error::Malformed(_))));
        // A field declared as a string sent as a number.
        let raw = [0x08, 0x01];
        let meta_as_varint = envelope("v1", "ConfigMap", &raw);
        assert!(
            matches!(decode(&meta_as_varint, "v1", "ConfigMap"), Err(Error::Malformed(m)) if m.contains("metadata"))
        );
        // Deep nesting: a schema whose `not` (field 28) holds a schema, 100 levels down.
        let mut nested: Vec<u8> = Vec::new();
        for _ in 0..100 {
            let mut next = vec![0xe2, 0x01]; // field 28, length-delimited
            let mut len = nested.len();
            while len >= 0x80 {
                next.push(u8::try_from(len & 0x7f).unwrap() | 0x80);
                len >>= 7;
            }
            next.push(u8::try_from(len).unwrap());
            next.extend_from_slice(&nested);
            nested = next;
        }
        let schema = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps";
        assert!(message(&nested[..], schema, 0).unwrap_err().contains("nested deeper"));
        // Every truncation of a real body is refused or read, never a panic.
        let cm = k8s_pb::api::core::v1::ConfigMap {
            metadata: meta("cm"),
            data: [("a".into(), "b".into())].into(),
            ..Default::default()
        };
        let body = envelope("v1", "ConfigMap", &encode(&cm));
        for end in 0..body.len() {
            let _ = decode(&body[..end], "v1", "ConfigMap");
        }
    }

    #[test]
    fn every_served_kind_has_its_message() {
        let missing: Vec<&str> = builtins::resources()
            .iter()
            .filter_map(|r| builtins::definition_name(&r.group, &r.version, &r.kind))
            .filter(|name| !messages().contains_key(*name))
            .collect();
        assert!(missing.is_empty(), "no protobuf message for {missing:?}");
    }
}
