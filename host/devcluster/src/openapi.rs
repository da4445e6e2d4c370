//! The `OpenAPI` documents kubectl reads for `kubectl explain` and its client-side validation:
//! the upstream definitions of built-in kinds, and the schemas of custom resources.

use std::fmt::Write as _;

use serde_json::{Map, Value, json};
use sha2::Digest as _;

use super::builtins;
use super::registry::Registry;

/// The definitions reachable from `roots` (through `$ref`), their references rewritten to `prefix`.
fn reachable(roots: impl IntoIterator<Item = String>, prefix: &str) -> Map<String, Value> {
    let mut out = Map::new();
    let mut stack: Vec<String> = roots.into_iter().collect();
    while let Some(name) = stack.pop() {
        if out.contains_key(&name) {
            continue;
        }
        let Some(schema) = builtins::definitions().get(&name) else {
            continue;
        };
        let mut schema = schema.clone();
        rewrite_refs(&mut schema, prefix, &mut stack);
        out.insert(name, schema);
    }
    out
}

/// Points every `$ref` at `prefix` and collects the names it refers to.
fn rewrite_refs(schema: &mut Value, prefix: &str, names: &mut Vec<String>) {
    match schema {
        Value::Object(map) => {
            if let Some(Value::String(r)) = map.get_mut("$ref")
                && let Some(name) = r.strip_prefix("#/definitions/")
            {
                names.push(name.to_string());
                *r = format!("{prefix}{name}");
            }
            map.values_mut().for_each(|v| rewrite_refs(v, prefix, names));
        }
        Value::Array(items) => items.iter_mut().for_each(|v| rewrite_refs(v, prefix, names)),
        _ => {}
    }
}

/// The name a resource's own schema (a custom resource's) has in the documents
/// (`com.example.v1.Foo`).
fn schema_name(group: &str, version: &str, kind: &str) -> String {
    let reversed: Vec<&str> = group.split('.').rev().collect();
    format!("{}.{version}.{kind}", reversed.join("."))
}

/// A resource's own schema with its group-version-kind, as the documents list it.
fn with_gvk(schema: &Value, gvk: &Value) -> Value {
    let mut schema = schema.clone();
    if let Some(map) = schema.as_object_mut() {
        map.insert("x-kubernetes-group-version-kind".into(), json!([gvk]));
    }
    schema
}

/// `/openapi/v2`: one Swagger document with every definition (built-in and custom).
pub(crate) fn v2(registry: &Registry) -> Value {
    let mut definitions = reachable(builtins::definitions().keys().cloned(), "#/definitions/");
    for rt in registry.all() {
        for v in &rt.versions {
            if let Some(schema) = &v.schema {
                let gvk = json!({ "group": rt.group, "version": v.name, "kind": rt.kind });
                definitions.insert(schema_name(&rt.group, &v.name, &rt.kind), with_gvk(schema, &gvk));
            }
        }
    }
    json!({
        "swagger": "2.0",
        "info": { "title": "Kubernetes", "version": format!("v{}", builtins::kubernetes_version()) },
        "paths": {},
        "definitions": definitions,
    })
}

fn path_prefix(group: &str, version: &str) -> String {
    if group.is_empty() { format!("api/{version}") } else { format!("apis/{group}/{version}") }
}

/// Every group/version served, as `(group, version)`.
fn group_versions(registry: &Registry) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for rt in registry.all() {
        for v in &rt.versions {
            let gv = (rt.group.clone(), v.name.clone());
            if !out.contains(&gv) {
                out.push(gv);
            }
        }
    }
    out
}

/// `/openapi/v3`: where each group/version document is, with a content hash for caching.
pub(crate) fn root(registry: &Registry) -> Value {
    let mut paths = Map::new();
    for (group, version) in group_versions(registry) {
        let Some(doc) = document(registry, &group, &version) else {
            continue;
        };
        let hash = sha2::Sha256::digest(doc.to_string().as_bytes());
        let hash = hash.iter().take(16).fold(String::new(), |mut hex, b| {
            let _ = write!(hex, "{b:02X}");
            hex
        });
        let prefix = path_prefix(&group, &version);
        paths.insert(prefix.clone(), json!({ "serverRelativeURL": format!("/openapi/v3/{prefix}?hash={hash}") }));
    }
    json!({ "paths": paths })
}

/// `/openapi/v3/api/v1` or `/openapi/v3/apis/{group}/{version}`.
pub(crate) fn document(registry: &Registry, group: &str, version: &str) -> Option<Value> {
    let mut paths = Map::new();
    let mut schemas = Map::new();
    let mut roots = Vec::new();
    let prefix = path_prefix(group, version);
    for rt in registry.all().filter(|rt| rt.group == group) {
        let Some(v) = rt.version(version) else {
            continue;
        };
        let gvk = json!({ "group": rt.group, "version": version, "kind": rt.kind });
        let item = if rt.namespaced {
            format!("/{prefix}/namespaces/{{namespace}}/{}/{{name}}", rt.plural)
        } else {
            format!("/{prefix}/{}/{{name}}", rt.plural)
        };
        let operation = |id: &str| {
            json!({
                "operationId": id,
                "x-kubernetes-group-version-kind": gvk,
                "parameters": [
                    { "name": "dryRun", "in": "query", "schema": { "type": "string", "uniqueItems": true } },
                    { "name": "fieldManager", "in": "query", "schema": { "type": "string", "uniqueItems": true } },
                    { "name": "fieldValidation", "in": "query", "schema": { "type": "string", "uniqueItems": true } },
                ],
                "responses": { "200": { "description": "OK" } },
            })
        };
        paths.insert(item, json!({
            "get": { "operationId": format!("read{}", rt.kind), "x-kubernetes-group-version-kind": gvk, "responses": { "200": { "description": "OK" } } },
            "put": operation(&format!("replace{}", rt.kind)),
            "patch": operation(&format!("patch{}", rt.kind)),
        }));
        if let Some(schema) = &v.schema {
            schemas.insert(schema_name(&rt.group, version, &rt.kind), with_gvk(schema, &gvk));
        }
        if let Some(name) = builtins::definition_name(&rt.group, version, &rt.kind) {
            roots.push(name.to_string());
        }
    }
    // The built-in kinds' definitions and everything they refer to; custom resources' metadata
    // refers to `ObjectMeta` too.
    roots.push("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta".into());
    schemas.extend(reachable(roots, "#/components/schemas/"));
    if paths.is_empty() {
        return None;
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": { "title": "Kubernetes", "version": format!("v{}", builtins::kubernetes_version()) },
        "paths": paths,
        "components": { "schemas": schemas },
    }))
}
