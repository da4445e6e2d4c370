//! CRDs generated from a plugin's types: what the API server reads of them, for each
//! Kubebuilder marker a plugin author reaches for.

use kube::core::crd::merge_crds;
use kube::{CustomResource, CustomResourceExt};
use kubewasm_sdk::prelude::*;
use kubewasm_sdk::serde_json::{Value, json};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

mod v1 {
    use super::*;

    /// A database the operator runs.
    #[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
    #[kube(group = "example.com", version = "v1", kind = "Database", namespaced)]
    #[kube(status = "DatabaseStatus", shortname = "db", shortname = "dbs", category = "all")]
    #[kube(printcolumn(name = "Engine", type_ = "string", json_path = ".spec.engine"))]
    #[serde(rename_all = "camelCase")]
    pub struct DatabaseSpec {
        #[schemars(range(min = 1, max = 9))]
        pub replicas: i32,
        pub engine: Engine,
        #[schemars(length(max = 63), regex(pattern = r"^[a-z][a-z0-9-]*$"))]
        pub owner: String,
        #[serde(default = "default_size", skip_serializing_if = "Option::is_none")]
        pub size: Option<String>,
    }

    #[derive(Deserialize, Serialize, Clone, Debug, JsonSchema)]
    #[serde(rename_all = "lowercase")]
    pub enum Engine {
        Postgres,
        Mysql,
    }

    #[allow(clippy::unnecessary_wraps)]
    fn default_size() -> Option<String> {
        Some("1Gi".into())
    }

    #[derive(Deserialize, Serialize, Clone, Debug, JsonSchema)]
    pub struct DatabaseStatus {
        pub ready: bool,
    }
}

mod v2 {
    use super::*;

    #[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
    #[kube(group = "example.com", version = "v2", kind = "Database", namespaced, shortname = "db")]
    pub struct DatabaseSpec {
        pub instances: i32,
    }
}

/// A cluster-scoped kind without status.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(group = "example.com", version = "v1alpha1", kind = "Zone")]
pub struct ZoneSpec {
    pub region: String,
}

fn manifest_crd(manifest: &Manifest) -> Value {
    assert_eq!(manifest.crds.len(), 1);
    kubewasm_sdk::serde_json::from_str(&manifest.crds[0]).expect("the CRD is JSON")
}

#[test]
fn the_kind_is_the_types() {
    assert_eq!(KindRef::of_crd::<v1::Database>(), KindRef::namespaced("example.com", "v1", "Database", "databases"));
    assert_eq!(KindRef::of_crd::<Zone>(), KindRef::cluster("example.com", "v1alpha1", "Zone", "zones"));
}

#[test]
fn names_scope_columns_and_status_subresource_come_from_the_kube_attributes() {
    let crd = manifest_crd(&Manifest::new("db", KindRef::of_crd::<v1::Database>()).crd_of::<v1::Database>());
    assert_eq!(crd["apiVersion"], "apiextensions.k8s.io/v1");
    assert_eq!(crd["kind"], "CustomResourceDefinition");
    assert_eq!(crd["metadata"]["name"], "databases.example.com");
    assert_eq!(crd["spec"]["scope"], "Namespaced");
    assert_eq!(crd["spec"]["names"]["shortNames"], json!(["db", "dbs"]));
    assert_eq!(crd["spec"]["names"]["categories"], json!(["all"]));
    let version = &crd["spec"]["versions"][0];
    assert_eq!(
        (version["name"].as_str(), version["served"].as_bool(), version["storage"].as_bool()),
        (Some("v1"), Some(true), Some(true))
    );
    assert_eq!(version["subresources"], json!({"status": {}}));
    assert_eq!(
        version["additionalPrinterColumns"],
        json!([{"name": "Engine", "type": "string", "jsonPath": ".spec.engine"}])
    );

    let zone = manifest_crd(&Manifest::handler("zones").crd_of::<Zone>());
    assert_eq!(zone["spec"]["scope"], "Cluster");
    assert!(zone["spec"]["versions"][0].get("subresources").is_none(), "no status, no subresource");
}

#[test]
fn field_markers_become_the_schema_the_api_server_validates() {
    let crd = manifest_crd(&Manifest::handler("db").crd_of::<v1::Database>());
    let root = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
    let spec = &root["properties"]["spec"];
    assert_eq!(spec["type"], "object");
    assert_eq!(spec["required"], json!(["engine", "owner", "replicas"]));
    let fields = &spec["properties"];
    assert_eq!(fields["replicas"]["type"], "integer");
    assert_eq!(fields["replicas"]["format"], "int32");
    assert_eq!(fields["replicas"]["minimum"].as_f64(), Some(1.0));
    assert_eq!(fields["replicas"]["maximum"].as_f64(), Some(9.0));
    assert_eq!(fields["engine"]["type"], "string");
    assert_eq!(fields["engine"]["enum"], json!(["postgres", "mysql"]));
    assert_eq!(fields["owner"]["maxLength"], 63);
    assert_eq!(fields["owner"]["pattern"], "^[a-z][a-z0-9-]*$");
    assert_eq!(fields["size"]["default"], "1Gi");
    assert_eq!(fields["size"]["nullable"], true);
    assert_eq!(root["properties"]["status"]["properties"]["ready"]["type"], "boolean");
}

/// Structural: every node has a type, and nothing the API server refuses (`$ref`,
/// `definitions`, `$schema`, `anyOf` at a node without a type) is left in.
#[test]
fn the_schema_is_structural() {
    fn check(path: &str, node: &Value) {
        let map = node.as_object().unwrap_or_else(|| panic!("{path} is a schema object"));
        for refused in ["$ref", "$schema", "definitions", "$defs"] {
            assert!(!map.contains_key(refused), "{path} has {refused}");
        }
        assert!(map.contains_key("type"), "{path} has no type");
        for (name, child) in map.get("properties").and_then(Value::as_object).into_iter().flatten() {
            check(&format!("{path}.{name}"), child);
        }
        if let Some(items) = map.get("items") {
            check(&format!("{path}[]"), items);
        }
    }
    let crd = manifest_crd(&Manifest::handler("db").crd_of::<v1::Database>());
    check("openAPIV3Schema", &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]);
}

#[test]
fn several_versions_merge_into_one_crd_with_one_storage_version() {
    let merged = merge_crds(vec![v1::Database::crd(), v2::Database::crd()], "v2").expect("the versions merge");
    let crd = manifest_crd(&Manifest::handler("db").crd_from(&merged));
    let versions = crd["spec"]["versions"].as_array().expect("versions");
    let mut summary: Vec<_> = versions.iter().map(|v| (v["name"].clone(), v["storage"].clone())).collect();
    summary.sort_by_key(|(name, _)| name.to_string());
    assert_eq!(summary, [(json!("v1"), json!(false)), (json!("v2"), json!(true))]);
    let v2 = versions.iter().find(|v| v["name"] == "v2").expect("v2");
    assert_eq!(v2["schema"]["openAPIV3Schema"]["properties"]["spec"]["required"], json!(["instances"]));
}
