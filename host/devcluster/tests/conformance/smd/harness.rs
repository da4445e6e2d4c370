//! Runs a structured-merge-diff scenario against the server: the scenario's schema becomes a
//! CRD, each operation a request through kube-rs, each expectation an assertion on the answers.

use std::collections::{BTreeMap, BTreeSet};

use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kubewasm_devcluster::DevCluster;
use serde_json::{Map, Value, json};

use crate::{api_error, crd_resource, start};

const GROUP: &str = "smd.kubewasm.dev";
const NAME: &str = "subject";

/// What an operation does, as the upstream fixture names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Apply,
    ForceApply,
    /// An apply the server must refuse (not by a conflict).
    ApplyRefused,
    /// A controller's write of the whole object (PUT, or POST when there is none yet).
    Update,
    /// An update the server must refuse as invalid (422).
    UpdateRefused,
    /// The CRD's schema changes (in every version) to `Operation::object`.
    ChangeSchema,
}

struct Operation {
    kind: Kind,
    manager: String,
    version: String,
    object: Value,
    /// The (manager, path) pairs the refused apply must name; empty: the apply succeeds.
    conflicts: BTreeSet<(String, String)>,
}

/// One upstream test case: a schema, operations, and the expected object and managers.
pub struct Scenario {
    /// `openAPIV3Schema` of the CRD.
    schema: Value,
    ops: Vec<Operation>,
    object: Option<Value>,
    /// manager name -> (API version, field paths).
    managed: Option<BTreeMap<String, (String, BTreeSet<String>)>>,
}

impl Scenario {
    /// A scenario typed by `root`, a type of `schema` (structured-merge-diff's schema language).
    pub fn new(schema: &str, root: &str) -> Scenario {
        let schema: Value = serde_yaml_ng::from_str(&dedent(schema)).expect("the scenario's schema is YAML");
        let types: BTreeMap<String, Value> = schema["types"]
            .as_array()
            .expect("a list of types")
            .iter()
            .map(|t| (t["name"].as_str().expect("a named type").to_string(), t.clone()))
            .collect();
        let mut root_schema = Translator { types: &types, stack: Vec::new() }.named(root);
        add_object_fields(&mut root_schema);
        Scenario::with_schema(root_schema)
    }

    /// A scenario without a schema (upstream's `DeducedParser`): the CRD preserves unknown fields.
    pub fn deduced() -> Scenario {
        let mut schema = json!({ "type": "object", "x-kubernetes-preserve-unknown-fields": true });
        add_object_fields(&mut schema);
        Scenario::with_schema(schema)
    }

    /// The CRD's schema becomes `root` of `schema` (upstream's `ChangeParser`), as a CRD update.
    pub fn change_schema(mut self, schema: &str, root: &str) -> Scenario {
        let changed = Scenario::new(schema, root).schema;
        let version = self.ops.last().map(|o| o.version.clone()).unwrap_or_default();
        self.ops.push(Operation {
            kind: Kind::ChangeSchema,
            manager: String::new(),
            version,
            object: changed,
            conflicts: BTreeSet::new(),
        });
        self
    }

    fn with_schema(schema: Value) -> Scenario {
        Scenario { schema, ops: Vec::new(), object: None, managed: None }
    }

    fn op(mut self, kind: Kind, manager: &str, version: &str, object: &str) -> Scenario {
        self.ops.push(Operation {
            kind,
            manager: manager.into(),
            version: version.into(),
            object: yaml(object),
            conflicts: BTreeSet::new(),
        });
        self
    }

    pub fn apply(self, manager: &str, version: &str, object: &str) -> Scenario {
        self.op(Kind::Apply, manager, version, object)
    }

    pub fn force_apply(self, manager: &str, version: &str, object: &str) -> Scenario {
        self.op(Kind::ForceApply, manager, version, object)
    }

    pub fn apply_refused(self, manager: &str, version: &str, object: &str) -> Scenario {
        self.op(Kind::ApplyRefused, manager, version, object)
    }

    pub fn update(self, manager: &str, version: &str, object: &str) -> Scenario {
        self.op(Kind::Update, manager, version, object)
    }

    pub fn update_refused(self, manager: &str, version: &str, object: &str) -> Scenario {
        self.op(Kind::UpdateRefused, manager, version, object)
    }

    /// The previous apply is refused with exactly these conflicts (manager, field path).
    pub fn conflicts(mut self, conflicts: &[(&str, &str)]) -> Scenario {
        let last = self.ops.last_mut().expect("conflicts follow an apply");
        last.conflicts = conflicts.iter().map(|(m, p)| ((*m).to_string(), (*p).to_string())).collect();
        self
    }

    /// The object after all operations (its own fields: no apiVersion, kind or metadata).
    pub fn object(mut self, object: &str) -> Scenario {
        self.object = Some(yaml(object));
        self
    }

    /// `manager` owns exactly `paths` (in `fieldpath`'s text form, `.list[name="a"].value`),
    /// recorded with `version`.
    pub fn managed(mut self, manager: &str, version: &str, paths: &[&str]) -> Scenario {
        self.managed
            .get_or_insert_with(BTreeMap::new)
            .insert(manager.into(), (version.into(), paths.iter().map(|p| (*p).to_string()).collect()));
        self
    }

    /// No manager owns anything.
    pub fn no_managers(mut self) -> Scenario {
        self.managed = Some(BTreeMap::new());
        self
    }

    pub async fn run(self) {
        let dc = start().await;
        self.install(&dc).await;
        for (i, op) in self.ops.iter().enumerate() {
            run_op(&dc, i, op).await;
        }
        if self.object.is_none() && self.managed.is_none() {
            dc.shutdown().await;
            return;
        }
        let storage = &self.ops.first().expect("a scenario has operations").version;
        let live = api(&dc, storage).get(NAME).await.expect("the object exists after the operations");
        let live = serde_json::to_value(&live).expect("JSON");
        if let Some(expected) = &self.object {
            let mut own = live.clone();
            for field in ["apiVersion", "kind", "metadata"] {
                own.as_object_mut().expect("an object").remove(field);
            }
            let expected = if expected.is_null() { json!({}) } else { expected.clone() };
            assert_eq!(
                normalize(&own, &self.schema),
                normalize(&expected, &self.schema),
                "the object after the operations"
            );
        }
        if let Some(expected) = &self.managed {
            assert_eq!(managers(&live), *expected, "managedFields per manager");
        }
        dc.shutdown().await;
    }

    async fn install(&self, dc: &DevCluster) {
        let mut names: Vec<&str> =
            self.ops.iter().filter(|o| o.kind != Kind::ChangeSchema).map(|o| o.version.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        let storage = &self.ops.first().expect("a scenario has operations").version;
        let versions: Vec<Value> = names
            .iter()
            .map(|v| {
                json!({ "name": v, "served": true, "storage": v == storage,
                    "schema": { "openAPIV3Schema": self.schema } })
            })
            .collect();
        let crd = json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": { "name": format!("subjects.{GROUP}") },
            "spec": { "group": GROUP, "scope": "Namespaced",
                "names": { "plural": "subjects", "singular": "subject", "kind": "Subject", "listKind": "SubjectList" },
                "versions": versions },
        });
        let crds: Api<DynamicObject> = Api::all_with(dc.client(), &crd_resource());
        let crd: DynamicObject = serde_json::from_value(crd).expect("a CRD");
        crds.create(&PostParams::default(), &crd).await.expect("the scenario's CRD is accepted");
    }
}

fn api(dc: &DevCluster, version: &str) -> Api<DynamicObject> {
    let resource = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(GROUP, version, "Subject"), "subjects");
    Api::namespaced_with(dc.client(), "default", &resource)
}

/// The operation's object as a whole `Subject`.
fn subject(op: &Operation) -> DynamicObject {
    let mut object = match &op.object {
        Value::Null => Map::new(),
        Value::Object(fields) => fields.clone(),
        other => panic!("an operation's object is a map, not {other}"),
    };
    object.insert("apiVersion".into(), json!(format!("{GROUP}/{}", op.version)));
    object.insert("kind".into(), json!("Subject"));
    object.insert("metadata".into(), json!({ "name": NAME }));
    serde_json::from_value(Value::Object(object)).expect("a Subject")
}

async fn run_op(dc: &DevCluster, i: usize, op: &Operation) {
    let api = api(dc, &op.version);
    let what = format!("operation {i} ({:?} by {:?} at {})", op.kind, op.manager, op.version);
    match op.kind {
        Kind::Apply | Kind::ForceApply | Kind::ApplyRefused => {
            let mut params = PatchParams::apply(&op.manager);
            if op.kind == Kind::ForceApply {
                params = params.force();
            }
            let result = api.patch(NAME, &params, &Patch::Apply(&subject(op))).await;
            if op.kind == Kind::ApplyRefused {
                let status = api_error(result.expect_err(&format!("{what} is refused")));
                assert!((400..500).contains(&status.code) && status.code != 409, "{what}: {status:?}");
            } else if op.conflicts.is_empty() {
                result.unwrap_or_else(|e| panic!("{what} succeeds: {e}"));
            } else {
                let status = api_error(result.expect_err(&format!("{what} conflicts")));
                assert_eq!((status.code, status.reason.as_str()), (409, "Conflict"), "{what}: {status:?}");
                let causes: BTreeSet<(String, String)> = status
                    .details
                    .expect("a conflict has details")
                    .causes
                    .iter()
                    .map(|c| (conflict_manager(&c.message), c.field.clone()))
                    .collect();
                assert_eq!(causes, op.conflicts, "{what}: the conflicts");
            }
        }
        Kind::ChangeSchema => {
            let crds: Api<DynamicObject> = Api::all_with(dc.client(), &crd_resource());
            let name = format!("subjects.{GROUP}");
            let mut crd = crds.get(&name).await.expect("the scenario's CRD");
            for version in crd.data["spec"]["versions"].as_array_mut().expect("versions") {
                version["schema"]["openAPIV3Schema"] = op.object.clone();
            }
            crds.replace(&name, &PostParams::default(), &crd).await.expect("the CRD's schema changes");
        }
        Kind::Update | Kind::UpdateRefused => {
            let params = PostParams { field_manager: Some(op.manager.clone()), ..PostParams::default() };
            let mut body = subject(op);
            let result = match api.get_opt(NAME).await.expect("get") {
                Some(live) => {
                    body.metadata.resource_version = live.metadata.resource_version;
                    api.replace(NAME, &params, &body).await
                }
                None => api.create(&params, &body).await,
            };
            if op.kind == Kind::Update {
                result.unwrap_or_else(|e| panic!("{what} succeeds: {e}"));
            } else {
                let status = api_error(result.expect_err(&format!("{what} is refused")));
                assert_eq!((status.code, status.reason.as_str()), (422, "Invalid"), "{what}: {status:?}");
            }
        }
    }
}

/// The manager a conflict cause names: `conflict with "name"` (an applier) or
/// `conflict with "name" using v1` (an updater).
fn conflict_manager(message: &str) -> String {
    let rest = message.strip_prefix("conflict with \"").unwrap_or_else(|| panic!("a conflict cause: {message}"));
    rest.split('"').next().unwrap_or_default().to_string()
}

/// The fields each manager owns, as `fieldpath` paths, with the API version it used (without
/// the group). A manager that wrote with several versions has one entry per version (the real
/// server keys updaters by version); their fields are united and the last version reported.
fn managers(live: &Value) -> BTreeMap<String, (String, BTreeSet<String>)> {
    let mut out: BTreeMap<String, (String, BTreeSet<String>)> = BTreeMap::new();
    for entry in live.pointer("/metadata/managedFields").and_then(Value::as_array).into_iter().flatten() {
        let manager = entry["manager"].as_str().expect("a manager").to_string();
        let version = entry["apiVersion"].as_str().expect("an apiVersion").rsplit('/').next().unwrap_or_default();
        let mut paths = BTreeSet::new();
        fields_v1_paths(&entry["fieldsV1"], "", &mut paths);
        let slot = out.entry(manager).or_default();
        slot.0 = version.to_string();
        slot.1.extend(paths);
    }
    out
}

/// The paths a `FieldsV1` tree holds, in `fieldpath`'s text form.
fn fields_v1_paths(tree: &Value, prefix: &str, out: &mut BTreeSet<String>) {
    let Some(children) = tree.as_object() else {
        return;
    };
    for (key, child) in children {
        if key == "." {
            out.insert(prefix.to_string());
            continue;
        }
        let (kind, text) = key.split_once(':').expect("a FieldsV1 key has a prefix");
        let step = match kind {
            "f" => format!(".{text}"),
            "v" => format!("[={text}]"),
            "i" => format!("[{text}]"),
            "k" => {
                let fields: BTreeMap<String, Value> = serde_json::from_str(text).expect("a key is a JSON object");
                let pairs: Vec<String> = fields.iter().map(|(k, v)| format!("{k}={v}")).collect();
                format!("[{}]", pairs.join(","))
            }
            other => panic!("unknown FieldsV1 key kind {other:?}"),
        };
        let path = format!("{prefix}{step}");
        if child.as_object().is_some_and(Map::is_empty) {
            out.insert(path);
        } else {
            fields_v1_paths(child, &path, out);
        }
    }
}

/// Sorts the items of set and map lists (their order is not part of upstream's comparison)
/// and fills in the schema's defaults (a CRD's defaults are part of every object the real
/// server stores; upstream's library does not default).
fn normalize(value: &Value, schema: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut out: Map<String, Value> = map
                .iter()
                .map(|(k, v)| {
                    let child = schema
                        .pointer(&format!("/properties/{k}"))
                        .or_else(|| schema.get("additionalProperties"))
                        .unwrap_or(&Value::Null);
                    (k.clone(), normalize(v, child))
                })
                .collect();
            for (k, property) in schema.get("properties").and_then(Value::as_object).into_iter().flatten() {
                if let (false, Some(default)) = (out.contains_key(k), property.get("default")) {
                    out.insert(k.clone(), normalize(default, property));
                }
            }
            Value::Object(out)
        }
        Value::Array(items) => {
            let item_schema = schema.get("items").unwrap_or(&Value::Null);
            let mut items: Vec<Value> = items.iter().map(|i| normalize(i, item_schema)).collect();
            if matches!(schema.get("x-kubernetes-list-type").and_then(Value::as_str), Some("set" | "map")) {
                items.sort_by_key(Value::to_string);
            }
            Value::Array(items)
        }
        // A whole float (a default of `2.0`) is written `2` by Go, and read back as an integer.
        Value::Number(n) => match n.as_f64() {
            #[allow(clippy::cast_possible_truncation)] // a whole number within i64
            Some(f) if n.is_f64() && f.fract() == 0.0 && f.abs() < 9e15 => json!(f as i64),
            _ => value.clone(),
        },
        other => other.clone(),
    }
}

/// Adds what every custom resource's schema may hold beside the scenario's fields.
fn add_object_fields(schema: &mut Value) {
    let properties = schema.as_object_mut().expect("an object schema").entry("properties").or_insert_with(|| json!({}));
    properties["apiVersion"] = json!({ "type": "string" });
    properties["kind"] = json!({ "type": "string" });
    properties["metadata"] = json!({ "type": "object" });
}

/// Translates structured-merge-diff's schema language into a CRD's structural schema.
struct Translator<'a> {
    types: &'a BTreeMap<String, Value>,
    /// Named types being translated: a CRD schema cannot recurse, so a type met again inside
    /// itself becomes a schemaless map (which server-side apply also treats as granular).
    stack: Vec<String>,
}

impl Translator<'_> {
    fn named(&mut self, name: &str) -> Value {
        if self.stack.iter().any(|n| n == name) {
            return json!({ "type": "object", "x-kubernetes-preserve-unknown-fields": true });
        }
        let definition = self.types.get(name).unwrap_or_else(|| panic!("type {name} is declared")).clone();
        self.stack.push(name.to_string());
        let out = self.atom(&definition);
        self.stack.pop();
        out
    }

    /// A type reference (`namedType`, `scalar`, `map`, `list`, `untyped`), with the reference's
    /// own `elementRelationship` overriding the named type's.
    fn atom(&mut self, atom: &Value) -> Value {
        let mut out = if let Some(name) = atom.get("namedType").and_then(Value::as_str) {
            self.named(name)
        } else if let Some(scalar) = atom.get("scalar").and_then(Value::as_str) {
            match scalar {
                "string" => json!({ "type": "string" }),
                "numeric" => json!({ "type": "number" }),
                "boolean" => json!({ "type": "boolean" }),
                _ => json!({ "x-kubernetes-preserve-unknown-fields": true }),
            }
        } else if let Some(map) = atom.get("map") {
            self.map(map)
        } else if let Some(list) = atom.get("list") {
            self.list(list)
        } else {
            json!({ "x-kubernetes-preserve-unknown-fields": true })
        };
        if let Some(relationship) = atom.get("elementRelationship").and_then(Value::as_str) {
            relate(&mut out, relationship, None);
        }
        out
    }

    fn map(&mut self, map: &Value) -> Value {
        let mut out = json!({ "type": "object" });
        let fields = map.get("fields").and_then(Value::as_array);
        if let Some(fields) = fields {
            let mut properties = Map::new();
            for field in fields {
                let mut schema = self.atom(&field["type"]);
                // Any value of upstream's schema language may be null.
                schema["nullable"] = json!(true);
                if let Some(default) = field.get("default") {
                    schema["default"] = default.clone();
                }
                properties.insert(field["name"].as_str().expect("a field name").to_string(), schema);
            }
            out["properties"] = Value::Object(properties);
        }
        if let Some(element) = map.get("elementType") {
            if fields.is_some() {
                // A structural schema cannot have both properties and additionalProperties:
                // the closest is keeping the undeclared fields untyped (granular, as the
                // scalar or map values upstream's element types have).
                out["x-kubernetes-preserve-unknown-fields"] = json!(true);
            } else {
                let mut element = self.atom(element);
                element["nullable"] = json!(true);
                out["additionalProperties"] = element;
            }
        } else if fields.is_none() {
            out["x-kubernetes-preserve-unknown-fields"] = json!(true);
        }
        if let Some(relationship) = map.get("elementRelationship").and_then(Value::as_str) {
            relate(&mut out, relationship, None);
        }
        out
    }

    fn list(&mut self, list: &Value) -> Value {
        let mut out = json!({ "type": "array", "items": self.atom(&list["elementType"]) });
        let relationship = list.get("elementRelationship").and_then(Value::as_str).unwrap_or("atomic");
        relate(&mut out, relationship, list.get("keys"));
        out
    }
}

/// Sets a map's or list's `elementRelationship` as the CRD extensions say it.
fn relate(schema: &mut Value, relationship: &str, keys: Option<&Value>) {
    let list = schema.get("type").and_then(Value::as_str) == Some("array");
    if list {
        if let Some(fields) = schema.as_object_mut() {
            fields.remove("x-kubernetes-list-map-keys");
        }
        let keys: Vec<String> = keys
            .and_then(Value::as_array)
            .map(|k| k.iter().filter_map(|k| k.as_str().map(String::from)).collect())
            .unwrap_or_default();
        match relationship {
            "associative" if !keys.is_empty() => {
                schema["x-kubernetes-list-type"] = json!("map");
                schema["x-kubernetes-list-map-keys"] = json!(keys);
                // A map list's keys must be present or defaulted.
                let items = &mut schema["items"];
                let required: Vec<&String> =
                    keys.iter().filter(|k| items.pointer(&format!("/properties/{k}/default")).is_none()).collect();
                if !required.is_empty() {
                    items["required"] = json!(required);
                }
            }
            "associative" => schema["x-kubernetes-list-type"] = json!("set"),
            _ => schema["x-kubernetes-list-type"] = json!("atomic"),
        }
    } else if schema.get("type").and_then(Value::as_str) == Some("object") {
        match relationship {
            "atomic" => schema["x-kubernetes-map-type"] = json!("atomic"),
            _ => {
                schema.as_object_mut().expect("an object schema").remove("x-kubernetes-map-type");
            }
        }
    }
}

/// An operation's or expectation's object: YAML indented to fit the test's code.
fn yaml(text: &str) -> Value {
    serde_yaml_ng::from_str(&dedent(text)).expect("the scenario's object is YAML")
}

fn dedent(text: &str) -> String {
    let indent = text.lines().filter(|l| !l.trim().is_empty()).map(|l| l.len() - l.trim_start().len()).min();
    let indent = indent.unwrap_or(0);
    text.lines().map(|l| l.get(indent..).unwrap_or("")).collect::<Vec<_>>().join("\n")
}
