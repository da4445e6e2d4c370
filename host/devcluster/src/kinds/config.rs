//! `ConfigMaps` and Secrets.

use serde_json::{Value, json};

use crate::printers::{Columns, age, age_column, column, doc, name, name_column, text};
use crate::strategy::Strategy;

pub(crate) struct ConfigMaps;

impl Strategy for ConfigMaps {
    fn columns(&self) -> Columns {
        Columns::one(column("Data", "integer", &doc("io.k8s.api.core.v1.ConfigMap", "data"), 0), |o| {
            json!(entries(o, "data") + entries(o, "binaryData"))
        })
    }
}

pub(crate) struct Secrets;

impl Strategy for Secrets {
    /// `type` defaults to `Opaque`; `stringData` is folded into base64 `data`.
    fn defaults(&self, obj: &mut Value) {
        use base64::Engine as _;
        let engine = base64::engine::general_purpose::STANDARD;
        let Some(map) = obj.as_object_mut() else {
            return;
        };
        map.entry("type").or_insert(json!("Opaque"));
        if let Some(Value::Object(plain)) = map.remove("stringData") {
            let data = map.entry("data").or_insert_with(|| json!({}));
            if let Some(data) = data.as_object_mut() {
                for (k, v) in plain {
                    let text = v.as_str().map_or_else(|| v.to_string(), String::from);
                    data.insert(k, json!(engine.encode(text)));
                }
            }
        }
    }

    fn selectable_fields(&self) -> &'static [&'static str] {
        &["type"]
    }

    fn columns(&self) -> Columns {
        Columns {
            defs: vec![
                name_column(),
                column("Type", "string", &doc("io.k8s.api.core.v1.Secret", "type"), 0),
                column("Data", "string", &doc("io.k8s.api.core.v1.Secret", "data"), 0),
                age_column(),
            ],
            cells: Box::new(|o| vec![name(o), json!(text(o, "/type")), json!(entries(o, "data")), age(o)]),
        }
    }
}

fn entries(obj: &Value, field: &str) -> usize {
    obj.get(field).and_then(Value::as_object).map_or(0, serde_json::Map::len)
}
