//! Server-side apply and `managedFields`: field ownership per manager, conflicts, removal.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use serde_json::{Map, Value, json};

use super::builtins;
use super::object;

/// One step of a field path, as `FieldsV1` spells it (`f:`, `k:`, `v:`, `i:`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Step {
    Field(String),
    /// An item of an associative list, by its key fields (canonical JSON object).
    Key(String),
    /// An item of a set-like list, by value (canonical JSON).
    Value(String),
    Index(usize),
}

pub(crate) type Path = Vec<Step>;

/// A set of field paths owned by one manager.
pub(crate) type FieldSet = BTreeSet<Path>;

/// How a list is merged and tracked by server-side apply.
#[derive(Debug, Clone, PartialEq)]
enum ListType {
    Atomic,
    Set,
    Map(Vec<String>),
}

/// The type information server-side apply needs at one point of an object: the schema there
/// (a built-in's upstream definition or a custom resource's `openAPIV3Schema`), or nothing.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Node<'a> {
    Schema(&'a Value),
    /// Nothing known (`x-kubernetes-preserve-unknown-fields`): lists are atomic, maps granular.
    Deduced,
}

impl<'a> Node<'a> {
    /// The node of the whole object.
    pub(crate) fn root(schema: Option<&'a Value>) -> Node<'a> {
        schema.map_or(Node::Deduced, |s| Node::Schema(builtins::resolve(s)))
    }

    fn child(self, key: &str, at_root: bool) -> Node<'a> {
        match self {
            // A custom resource's schema does not describe metadata; every object's is `ObjectMeta`.
            Node::Schema(_) if at_root && key == "metadata" => Node::Schema(builtins::object_meta()),
            Node::Schema(s) => builtins::property(s, key).map_or(Node::Deduced, |p| Node::Schema(builtins::resolve(p))),
            Node::Deduced => Node::Deduced,
        }
    }

    fn items(self) -> Node<'a> {
        match self {
            Node::Schema(s) => builtins::items(s).map_or(Node::Deduced, |i| Node::Schema(builtins::resolve(i))),
            Node::Deduced => Node::Deduced,
        }
    }

    /// The list's type as the real server derives it from the `OpenAPI` schema (kube-openapi's
    /// schemaconv): `x-kubernetes-list-type`, else a `merge` patch strategy makes it associative
    /// (keyed by the patch merge key, or a set of scalars), else atomic.
    fn list_type(self) -> ListType {
        let Node::Schema(s) = self else {
            return ListType::Atomic;
        };
        let text = |key: &str| s.get(key).and_then(Value::as_str);
        match text("x-kubernetes-list-type") {
            Some("map") => ListType::Map(
                s.get("x-kubernetes-list-map-keys")
                    .and_then(Value::as_array)
                    .map(|k| k.iter().filter_map(|k| k.as_str().map(String::from)).collect())
                    .unwrap_or_default(),
            ),
            Some("set") => ListType::Set,
            None if text("x-kubernetes-patch-strategy").is_some_and(|p| p.split(',').any(|p| p == "merge")) => {
                match text("x-kubernetes-patch-merge-key") {
                    Some(key) => ListType::Map(vec![key.to_string()]),
                    None => ListType::Set,
                }
            }
            _ => ListType::Atomic,
        }
    }

    fn atomic_map(self) -> bool {
        match self {
            Node::Schema(s) => {
                s.get("x-kubernetes-map-type").and_then(Value::as_str) == Some("atomic")
                    || s.get("type").and_then(Value::as_str).is_some_and(|t| t != "object")
            }
            Node::Deduced => false,
        }
    }

    /// Whether the schema makes this map or list one value (`x-kubernetes-map-type: atomic`, an
    /// atomic list); scalars and schemaless values are not containers and answer false.
    fn atomic_container(self) -> bool {
        let Node::Schema(s) = self else {
            return false;
        };
        match s.get("type").and_then(Value::as_str) {
            Some("object") => s.get("x-kubernetes-map-type").and_then(Value::as_str) == Some("atomic"),
            Some("array") => self.list_type() == ListType::Atomic,
            _ => false,
        }
    }

    /// Whether `key` is a declared field of a struct (not an entry of a map).
    fn declared(self, key: &str, at_root: bool) -> bool {
        match self {
            Node::Schema(_) if at_root && key == "metadata" => true,
            Node::Schema(s) => s.get("properties").and_then(|p| p.get(key)).is_some(),
            Node::Deduced => false,
        }
    }
}

/// The value a missing key field of an associative list defaults to, when the item schema
/// gives none.
fn key_default(field: &str) -> Option<Value> {
    (field == "protocol").then(|| json!("TCP"))
}

/// The defaults the item schema of an associative list declares for its key fields (a
/// missing key takes its default, as structured-merge-diff reads it from the schema).
fn key_defaults(item: Node<'_>, keys: &[String]) -> Map<String, Value> {
    let Node::Schema(schema) = item else {
        return Map::new();
    };
    keys.iter()
        .filter_map(|k| {
            let default = builtins::property(schema, k).and_then(|p| builtins::resolve(p).get("default"))?;
            Some((k.clone(), default.clone()))
        })
        .collect()
}

/// The canonical key of an associative list item, or an error naming the missing key field.
fn item_key(item: &Value, keys: &[String], defaults: &Map<String, Value>) -> Result<String, String> {
    let mut key = Map::new();
    let mut sorted = keys.to_vec();
    sorted.sort();
    for k in &sorted {
        match item.get(k).or_else(|| defaults.get(k)).cloned().or_else(|| key_default(k)) {
            Some(v) => {
                key.insert(k.clone(), integral(v));
            }
            None => {
                return Err(format!("associative list with keys has an element that omits key field {k:?}"));
            }
        }
    }
    Ok(Value::Object(key).to_string())
}

/// A whole number as an integer (`2.0` is `2`): JSON numbers are one type, and the real
/// server's Go encoding writes a whole float without a fraction.
fn integral(value: Value) -> Value {
    match value.as_f64() {
        #[allow(clippy::cast_possible_truncation)] // only whole numbers within range
        Some(f) if value.is_f64() && f.fract() == 0.0 && f.abs() < 9.0e15 => json!(f as i64),
        _ => value,
    }
}

fn item_matches(item: &Value, key: &str) -> bool {
    let Ok(Value::Object(key)) = serde_json::from_str::<Value>(key) else {
        return false;
    };
    key.iter().all(|(k, v)| item.get(k).cloned().or_else(|| key_default(k)).map(integral).as_ref() == Some(v))
}

/// The fields a configuration sets (structured-merge-diff's `ToFieldSet`).
pub(crate) fn field_set(value: &Value, schema: Option<&Value>) -> Result<FieldSet, String> {
    let mut set = FieldSet::new();
    let mut walker = Walker { path: Vec::new() };
    walker.collect(value, Node::root(schema), None, &mut set)?;
    Ok(set)
}

struct Walker {
    path: Path,
}

impl Walker {
    fn collect(
        &mut self,
        value: &Value,
        node: Node<'_>,
        field: Option<&str>,
        set: &mut FieldSet,
    ) -> Result<(), String> {
        let at_root = self.path.is_empty();
        match value {
            Value::Object(map) => {
                if field.is_some() && node.atomic_map() {
                    set.insert(self.path.clone());
                    return Ok(());
                }
                for (key, child) in map {
                    self.path.push(Step::Field(key.clone()));
                    self.collect(child, node.child(key, at_root), Some(key), set)?;
                    let empty = child.is_null() || child.as_object().is_some_and(Map::is_empty);
                    if empty || !node.declared(key, at_root) {
                        set.insert(self.path.clone());
                    }
                    self.path.pop();
                }
            }
            Value::Array(items) => match node.list_type() {
                ListType::Atomic => {
                    set.insert(self.path.clone());
                }
                ListType::Set => {
                    for item in items {
                        self.path.push(Step::Value(item.to_string()));
                        set.insert(self.path.clone());
                        self.path.pop();
                    }
                }
                ListType::Map(keys) => {
                    let defaults = key_defaults(node.items(), &keys);
                    let mut seen = BTreeSet::new();
                    for item in items {
                        let key =
                            item_key(item, &keys, &defaults).map_err(|e| format!("{}: {e}", path_text(&self.path)))?;
                        if !seen.insert(key.clone()) {
                            let mut item_path = self.path.clone();
                            item_path.push(Step::Key(key));
                            return Err(format!("duplicate entries for key {}", path_text(&item_path)));
                        }
                        self.path.push(Step::Key(key));
                        self.collect(item, node.items(), None, set)?;
                        set.insert(self.path.clone());
                        self.path.pop();
                    }
                }
            },
            _ => {
                set.insert(self.path.clone());
            }
        }
        Ok(())
    }
}

/// What changed between two versions of an object (structured-merge-diff's `Compare`).
#[derive(Debug, Default)]
pub(crate) struct Comparison {
    pub added: FieldSet,
    pub modified: FieldSet,
    pub removed: FieldSet,
}

impl Comparison {
    fn changed(&self) -> FieldSet {
        self.added.union(&self.modified).cloned().collect()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.added.is_empty() && self.modified.is_empty() && self.removed.is_empty()
    }
}

pub(crate) fn compare(old: &Value, new: &Value, schema: Option<&Value>) -> Comparison {
    let mut out = Comparison::default();
    let mut walker = Walker { path: Vec::new() };
    walker.compare(Some(old), Some(new), Node::root(schema), None, &mut out);
    out
}

impl Walker {
    fn compare(
        &mut self,
        old: Option<&Value>,
        new: Option<&Value>,
        node: Node<'_>,
        field: Option<&str>,
        out: &mut Comparison,
    ) {
        let at_root = self.path.is_empty();
        // A null against a granular map or list compares as an empty one (structured-merge-diff
        // takes null as a wildcard of the other side's form).
        let (empty_map, empty_list) = (Value::Object(Map::new()), Value::Array(Vec::new()));
        let granular_map = !(field.is_some() && node.atomic_map());
        let granular_list = node.list_type() != ListType::Atomic;
        let (old, new) = match (old, new) {
            (Some(Value::Null), Some(Value::Object(_))) if granular_map => (Some(&empty_map), new),
            (Some(Value::Object(_)), Some(Value::Null)) if granular_map => (old, Some(&empty_map)),
            (Some(Value::Null), Some(Value::Array(_))) if granular_list => (Some(&empty_list), new),
            (Some(Value::Array(_)), Some(Value::Null)) if granular_list => (old, Some(&empty_list)),
            other => other,
        };
        let leaf = match (old, new) {
            (Some(Value::Object(a)), Some(Value::Object(b))) => {
                let atomic = field.is_some() && node.atomic_map();
                if atomic || (a.is_empty() && b.is_empty()) {
                    true
                } else {
                    let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
                    for key in keys {
                        self.path.push(Step::Field(key.clone()));
                        self.compare(a.get(key), b.get(key), node.child(key, at_root), Some(key), out);
                        self.path.pop();
                    }
                    false
                }
            }
            (Some(Value::Object(a)), None) | (None, Some(Value::Object(a))) if !a.is_empty() => {
                let atomic = field.is_some() && node.atomic_map();
                if !atomic {
                    for (key, child) in a {
                        let (o, n) = if old.is_some() { (Some(child), None) } else { (None, Some(child)) };
                        self.path.push(Step::Field(key.clone()));
                        self.compare(o, n, node.child(key, at_root), Some(key), out);
                        self.path.pop();
                    }
                }
                atomic
            }
            (Some(Value::Array(_)) | None, Some(Value::Array(_)) | None) if old.is_some() || new.is_some() => {
                let list_type = node.list_type();
                if list_type == ListType::Atomic {
                    true
                } else {
                    self.compare_items(old, new, &list_type, node.items(), out);
                    false
                }
            }
            _ => true,
        };
        if leaf {
            match (old, new) {
                (None, Some(_)) => {
                    out.added.insert(self.path.clone());
                }
                (Some(_), None) => {
                    out.removed.insert(self.path.clone());
                }
                (Some(a), Some(b)) if a != b => {
                    out.modified.insert(self.path.clone());
                }
                _ => {}
            }
        } else if !self.path.is_empty() {
            if old.is_none() && new.is_some() {
                out.added.insert(self.path.clone());
            } else if old.is_some() && new.is_none() {
                out.removed.insert(self.path.clone());
            }
        }
    }

    fn compare_items(
        &mut self,
        old: Option<&Value>,
        new: Option<&Value>,
        list_type: &ListType,
        item_node: Node<'_>,
        out: &mut Comparison,
    ) {
        let defaults = match list_type {
            ListType::Map(keys) => key_defaults(item_node, keys),
            _ => Map::new(),
        };
        let steps = |list: Option<&Value>| -> BTreeMap<Step, Value> {
            let mut map = BTreeMap::new();
            for (i, item) in list.and_then(Value::as_array).into_iter().flatten().enumerate() {
                let step = match list_type {
                    ListType::Map(keys) => item_key(item, keys, &defaults).map_or(Step::Index(i), Step::Key),
                    _ => Step::Value(item.to_string()),
                };
                map.insert(step, item.clone());
            }
            map
        };
        let (a, b) = (steps(old), steps(new));
        let all: BTreeSet<&Step> = a.keys().chain(b.keys()).collect();
        for step in all {
            self.path.push(step.clone());
            if matches!(list_type, ListType::Set) {
                match (a.get(step), b.get(step)) {
                    (None, Some(_)) => {
                        out.added.insert(self.path.clone());
                    }
                    (Some(_), None) => {
                        out.removed.insert(self.path.clone());
                    }
                    _ => {}
                }
            } else {
                self.compare(a.get(step), b.get(step), item_node, None, out);
            }
            self.path.pop();
        }
    }
}

/// Merges an applied configuration into the live object (lists by their list type).
pub(crate) fn merge(live: &Value, config: &Value, schema: Option<&Value>) -> Value {
    let mut names = Vec::new();
    merge_at(live, config, Node::root(schema), None, &mut names)
}

fn merge_at(live: &Value, config: &Value, node: Node<'_>, field: Option<&str>, names: &mut Vec<String>) -> Value {
    let at_root = names.is_empty();
    match (live, config) {
        (Value::Object(l), Value::Object(c)) if !(field.is_some() && node.atomic_map()) => {
            let mut out = l.clone();
            for (key, value) in c {
                names.push(key.clone());
                let merged = match l.get(key) {
                    Some(existing) => merge_at(existing, value, node.child(key, at_root), Some(key), names),
                    None => value.clone(),
                };
                names.pop();
                out.insert(key.clone(), merged);
            }
            Value::Object(out)
        }
        // A null applied over a granular map or list is a wildcard: it claims the field and
        // keeps what is there (structured-merge-diff merges it as an empty map or list).
        (Value::Object(_), Value::Null) if !(field.is_some() && node.atomic_map()) => live.clone(),
        (Value::Array(_), Value::Null) if node.list_type() != ListType::Atomic => live.clone(),
        (Value::Array(l), Value::Array(c)) => match node.list_type() {
            ListType::Atomic => config.clone(),
            ListType::Set => {
                let mut out = l.clone();
                for item in c {
                    if !out.contains(item) {
                        out.push(item.clone());
                    }
                }
                Value::Array(out)
            }
            ListType::Map(keys) => {
                let defaults = key_defaults(node.items(), &keys);
                let mut out = l.clone();
                for item in c {
                    let Ok(key) = item_key(item, &keys, &defaults) else {
                        continue;
                    };
                    match out.iter().position(|o| item_matches(o, &key)) {
                        Some(pos) => out[pos] = merge_at(&out[pos], item, node.items(), None, names),
                        None => out.push(item.clone()),
                    }
                }
                Value::Array(out)
            }
        },
        _ => config.clone(),
    }
}

/// Ownership recorded under the previous schema, brought to the current one
/// (structured-merge-diff's `reconcileManagedFieldsWithSchemaChanges`): a manager owning
/// fields inside a map or list that has become atomic owns the whole value instead. A value
/// that has become granular stays owned as one path, as upstream keeps it.
fn reconcile_with_schema(set: &FieldSet, schema: Option<&Value>) -> FieldSet {
    set.iter()
        .map(|path| {
            let mut node = Node::root(schema);
            for end in 1..path.len() {
                node = match &path[end - 1] {
                    Step::Field(name) => node.child(name, end == 1),
                    _ => node.items(),
                };
                if matches!(path[end - 1], Step::Field(_)) && node.atomic_container() {
                    return path[..end].to_vec();
                }
            }
            path.clone()
        })
        .collect()
}

/// `set` with every struct field that leads to a member added as a member
/// (structured-merge-diff's `EnsureNamedFieldsAreMembers`); map entries and list items are
/// not added.
fn with_named_parents(set: &FieldSet, schema: Option<&Value>) -> FieldSet {
    let mut out = set.clone();
    for path in set {
        let mut node = Node::root(schema);
        for end in 1..path.len() {
            node = match &path[end - 1] {
                Step::Field(name) => {
                    let at_root = end == 1;
                    if node.declared(name, at_root) {
                        out.insert(path[..end].to_vec());
                    }
                    node.child(name, at_root)
                }
                _ => node.items(),
            };
        }
    }
    out
}

/// After a removal at `path`, a map or list field it left empty becomes null, as
/// structured-merge-diff leaves it (a custom resource keeps it if `nullable`, else defaulting
/// drops it; a built-in decodes null as unset). In metadata the field goes.
fn null_emptied_parents(obj: &mut Value, path: &[Step]) {
    for end in (1..path.len()).rev() {
        let (parent, last) = (&path[..end - 1], &path[end - 1]);
        let Step::Field(name) = last else {
            continue;
        };
        let Some(Value::Object(map)) = value_at(obj, parent) else {
            return;
        };
        let emptied = map
            .get(name)
            .is_some_and(|v| v.as_object().is_some_and(Map::is_empty) || v.as_array().is_some_and(Vec::is_empty));
        if !emptied {
            return;
        }
        if matches!(path.first(), Some(Step::Field(f)) if f == "metadata") {
            map.remove(name);
        } else {
            map.insert(name.clone(), Value::Null);
        }
    }
}

fn value_at<'v>(obj: &'v mut Value, path: &[Step]) -> Option<&'v mut Value> {
    let mut cur = obj;
    for step in path {
        cur = match (step, cur) {
            (Step::Field(f), Value::Object(m)) => m.get_mut(f)?,
            (Step::Key(k), Value::Array(items)) => items.iter_mut().find(|i| item_matches(i, k))?,
            (Step::Value(v), Value::Array(items)) => items.iter_mut().find(|i| i.to_string() == *v)?,
            (Step::Index(i), Value::Array(items)) => items.get_mut(*i)?,
            _ => return None,
        };
    }
    Some(cur)
}

/// Removes the value at `path` from `obj`; returns whether something was removed.
fn remove_at(obj: &mut Value, path: &[Step]) -> bool {
    let Some((last, parents)) = path.split_last() else {
        return false;
    };
    let mut cur = obj;
    for step in parents {
        let next = match (step, cur) {
            (Step::Field(f), Value::Object(m)) => m.get_mut(f),
            (Step::Key(k), Value::Array(items)) => items.iter_mut().find(|i| item_matches(i, k)),
            (Step::Value(v), Value::Array(items)) => items.iter_mut().find(|i| i.to_string() == *v),
            (Step::Index(i), Value::Array(items)) => items.get_mut(*i),
            _ => None,
        };
        match next {
            Some(n) => cur = n,
            None => return false,
        }
    }
    match (last, cur) {
        (Step::Field(f), Value::Object(m)) => m.remove(f).is_some(),
        (Step::Key(k), Value::Array(items)) => {
            let before = items.len();
            items.retain(|i| !item_matches(i, k));
            before != items.len()
        }
        (Step::Value(v), Value::Array(items)) => {
            let before = items.len();
            let value: Value = serde_json::from_str(v).unwrap_or(Value::Null);
            items.retain(|i| *i != value);
            before != items.len()
        }
        (Step::Index(i), Value::Array(items)) if *i < items.len() => {
            items.remove(*i);
            true
        }
        _ => false,
    }
}

/// `.spec.containers[name="app"].image`: a path as conflict messages print it.
pub(crate) fn path_text(path: &[Step]) -> String {
    let mut out = String::new();
    for step in path {
        match step {
            Step::Field(f) => {
                out.push('.');
                out.push_str(f);
            }
            Step::Key(k) => {
                let parts: Vec<String> = serde_json::from_str::<Map<String, Value>>(k)
                    .map(|m| m.iter().map(|(k, v)| format!("{k}={v}")).collect())
                    .unwrap_or_default();
                let _ = write!(out, "[{}]", parts.join(","));
            }
            Step::Value(v) => {
                let _ = write!(out, "[={v}]");
            }
            Step::Index(i) => {
                let _ = write!(out, "[{i}]");
            }
        }
    }
    out
}

fn step_text(step: &Step) -> String {
    match step {
        Step::Field(f) => format!("f:{f}"),
        Step::Key(k) => format!("k:{k}"),
        Step::Value(v) => format!("v:{v}"),
        Step::Index(i) => format!("i:{i}"),
    }
}

fn parse_step(text: &str) -> Option<Step> {
    let (kind, rest) = text.split_at_checked(2)?;
    match kind {
        "f:" => Some(Step::Field(rest.to_string())),
        "k:" => {
            let v: Value = serde_json::from_str(rest).ok()?;
            let sorted: BTreeMap<String, Value> = v.as_object()?.clone().into_iter().collect();
            Some(Step::Key(serde_json::to_string(&sorted).ok()?))
        }
        "v:" => Some(Step::Value(serde_json::from_str::<Value>(rest).ok()?.to_string())),
        "i:" => rest.parse().ok().map(Step::Index),
        _ => None,
    }
}

/// A field set in the `FieldsV1` JSON form.
pub(crate) fn to_fields_v1(set: &FieldSet) -> Value {
    #[derive(Default)]
    struct Tree {
        member: bool,
        children: BTreeMap<Step, Tree>,
    }
    fn render(tree: &Tree) -> Value {
        let mut map = Map::new();
        if tree.member && !tree.children.is_empty() {
            map.insert(".".into(), json!({}));
        }
        for (step, child) in &tree.children {
            map.insert(step_text(step), render(child));
        }
        Value::Object(map)
    }
    let mut root = Tree::default();
    for path in set {
        let mut node = &mut root;
        for step in path {
            node = node.children.entry(step.clone()).or_default();
        }
        node.member = true;
    }
    render(&root)
}

/// Parses `FieldsV1` JSON; malformed entries are skipped.
pub(crate) fn from_fields_v1(value: &Value) -> FieldSet {
    fn walk(value: &Value, path: &mut Path, set: &mut FieldSet) {
        let Some(map) = value.as_object() else { return };
        for (key, child) in map {
            if key == "." {
                set.insert(path.clone());
                continue;
            }
            let Some(step) = parse_step(key) else {
                continue;
            };
            path.push(step);
            if child.as_object().is_some_and(Map::is_empty) {
                set.insert(path.clone());
            } else {
                walk(child, path, set);
            }
            path.pop();
        }
    }
    let mut set = FieldSet::new();
    walk(value, &mut Vec::new(), &mut set);
    set
}

/// One `managedFields` entry.
#[derive(Debug, Clone, PartialEq)]
#[allow(clippy::struct_field_names)] // the API's field names
pub(crate) struct Manager {
    pub manager: String,
    /// `Apply` or `Update`.
    pub operation: String,
    pub api_version: String,
    pub subresource: String,
    pub time: Option<String>,
    pub fields: FieldSet,
}

impl Manager {
    fn same_owner(&self, manager: &str, operation: &str, api_version: &str, subresource: &str) -> bool {
        self.manager == manager
            && self.operation == operation
            && self.subresource == subresource
            && (operation == "Apply" || self.api_version == api_version)
    }

    /// How conflict messages name this manager.
    fn describe(&self) -> String {
        let mut text = format!("{:?}", self.manager);
        if !self.subresource.is_empty() {
            text = format!("{text} with subresource {:?}", self.subresource);
        }
        if self.operation == "Update" {
            text = match &self.time {
                Some(t) => format!("{text} using {} at {t}", self.api_version),
                None => format!("{text} using {}", self.api_version),
            };
        }
        text
    }
}

pub(crate) fn read_managers(obj: &Value) -> Vec<Manager> {
    let entries = obj.get("metadata").and_then(|m| m.get("managedFields")).and_then(Value::as_array);
    entries
        .into_iter()
        .flatten()
        .map(|e| {
            let s = |f: &str| e.get(f).and_then(Value::as_str).unwrap_or_default().to_string();
            Manager {
                manager: s("manager"),
                operation: s("operation"),
                api_version: s("apiVersion"),
                subresource: s("subresource"),
                time: e.get("time").and_then(Value::as_str).map(String::from),
                fields: e.get("fieldsV1").map(from_fields_v1).unwrap_or_default(),
            }
        })
        .collect()
}

/// Writes `managedFields` in the order the real server sorts them.
pub(crate) fn write_managers(obj: &mut Value, mut managers: Vec<Manager>) {
    managers.retain(|m| !m.fields.is_empty());
    managers.sort_by(|p, q| {
        (&p.operation, &p.time, &p.manager, &p.api_version, &p.subresource).cmp(&(
            &q.operation,
            &q.time,
            &q.manager,
            &q.api_version,
            &q.subresource,
        ))
    });
    if managers.is_empty() {
        object::remove_meta(obj, "managedFields");
        return;
    }
    let entries: Vec<Value> = managers
        .iter()
        .map(|m| {
            let mut e = json!({
                "manager": m.manager,
                "operation": m.operation,
                "apiVersion": m.api_version,
                "fieldsType": "FieldsV1",
                "fieldsV1": to_fields_v1(&m.fields),
            });
            if let Some(t) = &m.time {
                e["time"] = json!(t);
            }
            if !m.subresource.is_empty() {
                e["subresource"] = json!(m.subresource);
            }
            e
        })
        .collect();
    object::set_meta(obj, "managedFields", Value::Array(entries));
}

/// Which part of the object a request may own: the main resource (everything but a status
/// served by its own subresource) or the `status` subresource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    Main { status_separate: bool },
    Status,
}

impl Scope {
    fn subresource(self) -> &'static str {
        match self {
            Scope::Main { .. } => "",
            Scope::Status => "status",
        }
    }

    /// Drops the paths the server manages itself or that this endpoint resets.
    fn filter(self, set: &mut FieldSet) {
        set.retain(|path| {
            let first = path.first();
            let is = |f: &str| matches!(first, Some(Step::Field(x)) if x == f);
            if path.len() == 1 && (is("apiVersion") || is("kind") || is("metadata")) {
                return false;
            }
            if is("metadata")
                && path.len() == 2
                && matches!(&path[1], Step::Field(f) if matches!(f.as_str(),
                    "name" | "namespace" | "uid" | "resourceVersion" | "generation" | "creationTimestamp"
                    | "managedFields" | "selfLink" | "deletionTimestamp" | "deletionGracePeriodSeconds"))
            {
                return false;
            }
            match self {
                Scope::Main { status_separate } => !(status_separate && is("status")),
                Scope::Status => is("status"),
            }
        });
    }
}

/// What an apply or update request is, for ownership bookkeeping.
pub(crate) struct Request<'a> {
    pub manager: &'a str,
    pub api_version: &'a str,
    pub scope: Scope,
    pub schema: Option<&'a Value>,
}

/// A refused apply: the conflicting fields and who owns them.
#[derive(Debug)]
pub(crate) struct Conflicts {
    pub message: String,
    pub causes: Vec<Value>,
    pub paths: FieldSet,
}

/// Server-side apply of `config` onto `live` (`None` when creating). Returns the new object,
/// `managedFields` set, or the conflicts when `force` is false.
pub(crate) fn apply(
    live: Option<&Value>,
    config: &Value,
    req: &Request<'_>,
    force: bool,
) -> Result<Result<Value, Conflicts>, String> {
    let empty = json!({});
    let live = live.unwrap_or(&empty);
    let mut managers = read_managers(live);
    for m in &mut managers {
        m.fields = reconcile_with_schema(&m.fields, req.schema);
    }
    let mut live_plain = live.clone();
    object::remove_meta(&mut live_plain, "managedFields");
    let mut config_plain = config.clone();
    object::remove_meta(&mut config_plain, "managedFields");

    let mut set = field_set(&config_plain, req.schema)?;
    req.scope.filter(&mut set);
    let subresource = req.scope.subresource();
    let previous = managers.iter().position(|m| m.same_owner(req.manager, "Apply", req.api_version, subresource));
    let last_set = previous.map(|i| managers[i].fields.clone()).unwrap_or_default();

    let mut merged = merge(&live_plain, &config_plain, req.schema);

    // Fields this manager applied before and no longer applies go away, whole, unless some
    // manager (this one included) owns that very path: owning a field inside a list item
    // does not keep the item (structured-merge-diff's prune). A struct or map field counts
    // as owned when anything under it is.
    let mut owned = with_named_parents(&set, req.schema);
    for (i, m) in managers.iter().enumerate() {
        if Some(i) != previous {
            owned.extend(with_named_parents(&m.fields, req.schema));
        }
    }
    // Shortest first: once a path is gone, what was under it goes with it.
    let mut dropped: Vec<Path> = with_named_parents(&last_set, req.schema).difference(&owned).cloned().collect();
    dropped.sort_by_key(Vec::len);
    for path in &dropped {
        if remove_at(&mut merged, path) {
            null_emptied_parents(&mut merged, path);
        }
    }

    let mut diff = compare(&live_plain, &merged, req.schema);
    req.scope.filter(&mut diff.added);
    req.scope.filter(&mut diff.modified);
    req.scope.filter(&mut diff.removed);
    let changed = diff.changed();

    let mut conflicts: Vec<(usize, Path)> = Vec::new();
    for (i, m) in managers.iter().enumerate() {
        if Some(i) == previous {
            continue;
        }
        for path in m.fields.intersection(&changed) {
            conflicts.push((i, path.clone()));
        }
    }
    if !conflicts.is_empty() && !force {
        let error = conflict_error(&managers, &conflicts);
        if !upgrades_client_side_apply(req, live, &error.paths) {
            return Ok(Err(error));
        }
    }
    for (i, path) in &conflicts {
        managers[*i].fields.remove(path);
    }
    for (i, m) in managers.iter_mut().enumerate() {
        if Some(i) != previous {
            m.fields.retain(|p| !diff.removed.contains(p));
        }
    }
    let object_changed = !diff.is_empty();
    match previous {
        Some(i) => {
            managers[i].fields = set;
            if object_changed || managers[i].time.is_none() {
                managers[i].time = Some(object::now());
            }
            managers[i].api_version = req.api_version.to_string();
        }
        None => managers.push(Manager {
            manager: req.manager.to_string(),
            operation: "Apply".into(),
            api_version: req.api_version.to_string(),
            subresource: subresource.to_string(),
            time: Some(object::now()),
            fields: set,
        }),
    }
    write_managers(&mut merged, managers);
    Ok(Ok(merged))
}

/// Records an ordinary write (create, update, non-apply patch) by `req.manager`: it takes the
/// fields it added or changed, and every manager loses the fields that were removed.
pub(crate) fn record_update(old: Option<&Value>, new: &mut Value, req: &Request<'_>) {
    let empty = json!({});
    let old = old.unwrap_or(&empty);
    // Like the real server, managedFields sent with a write replace the stored ones (that is
    // how clients migrate or reset ownership); absent or empty, the stored ones are kept.
    let provided = new.pointer("/metadata/managedFields").and_then(Value::as_array).is_some_and(|a| !a.is_empty());
    let mut managers = if provided && req.scope != Scope::Status { read_managers(new) } else { read_managers(old) };
    for m in &mut managers {
        m.fields = reconcile_with_schema(&m.fields, req.schema);
    }
    let mut old_plain = old.clone();
    object::remove_meta(&mut old_plain, "managedFields");
    object::remove_meta(new, "managedFields");
    let mut diff = compare(&old_plain, new, req.schema);
    req.scope.filter(&mut diff.added);
    req.scope.filter(&mut diff.modified);
    req.scope.filter(&mut diff.removed);
    if diff.is_empty() {
        write_managers(new, managers);
        return;
    }
    let changed = diff.changed();
    let subresource = req.scope.subresource();
    let mine = managers.iter().position(|m| m.same_owner(req.manager, "Update", req.api_version, subresource));
    for (i, m) in managers.iter_mut().enumerate() {
        if Some(i) != mine {
            m.fields.retain(|p| !changed.contains(p) && !diff.removed.contains(p));
        }
    }
    let now = object::now();
    match mine {
        Some(i) => {
            let m = &mut managers[i];
            m.fields.retain(|p| !diff.removed.contains(p));
            m.fields.extend(changed);
            m.time = Some(now);
        }
        None => managers.push(Manager {
            manager: req.manager.to_string(),
            operation: "Update".into(),
            api_version: req.api_version.to_string(),
            subresource: subresource.to_string(),
            time: Some(now),
            fields: changed,
        }),
    }
    write_managers(new, managers);
}

/// Whether a conflicting apply by `kubectl` only takes over fields its client-side apply set
/// (those in the `last-applied-configuration` annotation). The real server lets those through,
/// so users move from client-side to server-side apply without conflicts.
fn upgrades_client_side_apply(req: &Request<'_>, live: &Value, conflicts: &FieldSet) -> bool {
    if req.manager != "kubectl" {
        return false;
    }
    let Some(text) =
        live.pointer("/metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration").and_then(Value::as_str)
    else {
        return false;
    };
    let Ok(last) = serde_json::from_str::<Value>(text) else {
        return false;
    };
    let Ok(allowed) = field_set(&last, req.schema) else {
        return false;
    };
    conflicts.is_subset(&allowed)
}

fn conflict_error(managers: &[Manager], conflicts: &[(usize, Path)]) -> Conflicts {
    let causes = conflicts
        .iter()
        .map(|(i, path)| {
            json!({
                "type": "FieldManagerConflict",
                "message": format!("conflict with {}", managers[*i].describe()),
                "field": path_text(path),
            })
        })
        .collect();
    let message = if let [(i, path)] = conflicts {
        format!("Apply failed with 1 conflict: conflict with {}: {}", managers[*i].describe(), path_text(path))
    } else {
        let mut by_manager: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (i, path) in conflicts {
            by_manager.entry(managers[*i].describe()).or_default().push(path_text(path));
        }
        let mut lines = Vec::new();
        for (manager, paths) in by_manager {
            lines.push(format!("conflicts with {manager}"));
            lines.extend(paths.into_iter().map(|p| format!("- {p}")));
        }
        format!("Apply failed with {} conflicts: {}", conflicts.len(), lines.join("\n"))
    };
    Conflicts { message, causes, paths: conflicts.iter().map(|(_, p)| p.clone()).collect() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deployment(image: &str, replicas: i64) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "labels": {"app": "x"}},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "x"}},
                "template": {"spec": {"containers": [{"name": "c", "image": image, "ports": [{"containerPort": 80}]}]}}}})
    }

    fn req(manager: &str) -> Request<'_> {
        Request {
            manager,
            api_version: "apps/v1",
            scope: Scope::Main { status_separate: true },
            schema: builtins::definition("apps", "v1", "Deployment"),
        }
    }

    #[test]
    fn apply_field_set_uses_the_fields_v1_format() {
        let out = apply(None, &deployment("nginx", 1), &req("a"), false).unwrap().unwrap();
        let fields = &out["metadata"]["managedFields"][0]["fieldsV1"];
        assert_eq!(
            fields,
            &json!({"f:metadata": {"f:labels": {"f:app": {}}}, "f:spec": {"f:replicas": {}, "f:selector": {},
                "f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"c\"}": {".": {}, "f:image": {}, "f:name": {},
                    "f:ports": {"k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}}}}}}}}})
        );
        assert_eq!(
            from_fields_v1(fields),
            field_set(&deployment("nginx", 1), req("a").schema)
                .unwrap()
                .into_iter()
                .filter(|p| p.len() > 1 || !matches!(&p[0], Step::Field(f) if f == "apiVersion" || f == "kind"))
                .filter(|p| p != &vec![Step::Field("metadata".into()), Step::Field("name".into())])
                .collect()
        );
    }

    #[test]
    fn a_second_manager_conflicts_unless_forced() {
        let live = apply(None, &deployment("nginx", 1), &req("a"), false).unwrap().unwrap();
        let err = apply(Some(&live), &deployment("nginx", 3), &req("b"), false).unwrap().unwrap_err();
        assert_eq!(err.message, "Apply failed with 1 conflict: conflict with \"a\": .spec.replicas");
        let forced = apply(Some(&live), &deployment("nginx", 3), &req("b"), true).unwrap().unwrap();
        assert_eq!(forced["spec"]["replicas"], 3);
        let managers = read_managers(&forced);
        let a = managers.iter().find(|m| m.manager == "a").unwrap();
        assert!(!a.fields.contains(&vec![Step::Field("spec".into()), Step::Field("replicas".into())]));
        // Same value: shared ownership, no conflict.
        assert!(apply(Some(&live), &deployment("nginx", 1), &req("b"), false).unwrap().is_ok());
    }

    #[test]
    fn fields_an_applier_stops_applying_are_removed() {
        let live = apply(None, &deployment("nginx", 1), &req("a"), false).unwrap().unwrap();
        let mut smaller = deployment("nginx", 1);
        smaller["metadata"].as_object_mut().unwrap().remove("labels");
        let out = apply(Some(&live), &smaller, &req("a"), false).unwrap().unwrap();
        assert!(out["metadata"].get("labels").and_then(|l| l.get("app")).is_none());
    }
}
