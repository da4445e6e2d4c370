//! The `OpenAPI` v3 documents kubectl reads to leave field validation to the server.

use std::fmt::Write as _;

use serde_json::{Map, Value, json};
use sha2::Digest as _;

use super::discovery::Registry;

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
            let mut schema = schema.clone();
            if let Some(map) = schema.as_object_mut() {
                map.insert("x-kubernetes-group-version-kind".into(), json!([gvk]));
            }
            let reversed: Vec<&str> = rt.group.split('.').rev().collect();
            schemas.insert(format!("{}.{version}.{}", reversed.join("."), rt.kind), schema);
        }
    }
    if paths.is_empty() {
        return None;
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": { "title": "Kubernetes", "version": "v1.33.0" },
        "paths": paths,
        "components": { "schemas": schemas },
    }))
}
