//! Protobuf request bodies of the simple kinds kubectl's typed `create` commands send.

use base64::Engine as _;
use serde_json::{Map, Value, json};

const MAGIC: &[u8] = b"k8s\0";

/// One protobuf field: its number and its value.
enum Field<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
}

/// A message that does not parse as protobuf.
struct Malformed;

struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    fn varint(&mut self) -> Option<u64> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let (&byte, rest) = self.buf.split_first()?;
            self.buf = rest;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Some(value);
            }
        }
        None
    }

    /// The next field, `None` at the end of the message.
    fn next_field(&mut self) -> Result<Option<(u64, Field<'a>)>, Malformed> {
        if self.buf.is_empty() {
            return Ok(None);
        }
        let key = self.varint().ok_or(Malformed)?;
        let number = key >> 3;
        let field = match key & 7 {
            0 => Field::Varint(self.varint().ok_or(Malformed)?),
            1 => {
                self.buf = self.buf.get(8..).ok_or(Malformed)?;
                return self.next_field();
            }
            2 => {
                let len = self.varint().and_then(|l| usize::try_from(l).ok()).ok_or(Malformed)?;
                let (bytes, rest) = self.buf.split_at_checked(len).ok_or(Malformed)?;
                self.buf = rest;
                Field::Bytes(bytes)
            }
            5 => {
                self.buf = self.buf.get(4..).ok_or(Malformed)?;
                return self.next_field();
            }
            _ => return Err(Malformed),
        };
        Ok(Some((number, field)))
    }

    /// All fields of a message; `None` when it is malformed.
    fn fields(buf: &'a [u8]) -> Option<Vec<(u64, Field<'a>)>> {
        let mut reader = Reader { buf };
        let mut out = Vec::new();
        while let Some(field) = reader.next_field().ok()? {
            out.push(field);
        }
        Some(out)
    }
}

fn text(bytes: &[u8]) -> Option<String> {
    String::from_utf8(bytes.to_vec()).ok()
}

/// A `map<string, string>` entry, or with `binary` a `map<string, bytes>` one (as base64).
fn map_entry(bytes: &[u8], binary: bool) -> Option<(String, Value)> {
    let mut key = String::new();
    let mut value = Value::String(String::new());
    for (number, field) in Reader::fields(bytes)? {
        match (number, field) {
            (1, Field::Bytes(b)) => key = text(b)?,
            (2, Field::Bytes(b)) if binary => value = json!(base64::engine::general_purpose::STANDARD.encode(b)),
            (2, Field::Bytes(b)) => value = json!(text(b)?),
            _ => {}
        }
    }
    Some((key, value))
}

fn insert_entry(map: &mut Map<String, Value>, field: &str, bytes: &[u8], binary: bool) -> Option<()> {
    let (k, v) = map_entry(bytes, binary)?;
    let entry = map.entry(field).or_insert_with(|| json!({}));
    entry.as_object_mut()?.insert(k, v);
    Some(())
}

/// The parts of `ObjectMeta` a create sends.
fn object_meta(bytes: &[u8]) -> Option<Value> {
    let mut meta = Map::new();
    for (number, field) in Reader::fields(bytes)? {
        match (number, field) {
            (1..=3, Field::Bytes(b)) if !b.is_empty() => {
                let name = ["name", "generateName", "namespace"][usize::try_from(number - 1).ok()?];
                meta.insert(name.into(), json!(text(b)?));
            }
            (11, Field::Bytes(b)) => insert_entry(&mut meta, "labels", b, false)?,
            (12, Field::Bytes(b)) => insert_entry(&mut meta, "annotations", b, false)?,
            (14, Field::Bytes(b)) => {
                let list = meta.entry("finalizers").or_insert_with(|| json!([]));
                list.as_array_mut()?.push(json!(text(b)?));
            }
            _ => {}
        }
    }
    Some(Value::Object(meta))
}

/// Decodes a protobuf body of `kind`; `None` when the kind is not one this decoder knows or
/// the body is malformed.
pub(crate) fn decode(body: &[u8], api_version: &str, kind: &str) -> Option<Value> {
    let envelope = body.strip_prefix(MAGIC)?;
    let mut raw: &[u8] = &[];
    for (number, field) in Reader::fields(envelope)? {
        if let (2, Field::Bytes(b)) = (number, field) {
            raw = b;
        }
    }
    let mut obj = Map::new();
    obj.insert("apiVersion".into(), json!(api_version));
    obj.insert("kind".into(), json!(kind));
    for (number, field) in Reader::fields(raw)? {
        match (kind, number, field) {
            (_, 1, Field::Bytes(b)) => _ = obj.insert("metadata".into(), object_meta(b)?),
            ("ConfigMap", 2, Field::Bytes(b)) => insert_entry(&mut obj, "data", b, false)?,
            ("ConfigMap", 3, Field::Bytes(b)) => insert_entry(&mut obj, "binaryData", b, true)?,
            ("ConfigMap", 4, Field::Varint(v)) | ("Secret", 5, Field::Varint(v)) => {
                _ = obj.insert("immutable".into(), json!(v != 0));
            }
            ("Secret", 2, Field::Bytes(b)) => insert_entry(&mut obj, "data", b, true)?,
            ("Secret", 3, Field::Bytes(b)) => _ = obj.insert("type".into(), json!(text(b)?)),
            ("Secret", 4, Field::Bytes(b)) => insert_entry(&mut obj, "stringData", b, false)?,
            ("Namespace", 2, Field::Bytes(b)) => {
                let mut finalizers = Vec::new();
                for (n, f) in Reader::fields(b)? {
                    if let (1, Field::Bytes(s)) = (n, f) {
                        finalizers.push(json!(text(s)?));
                    }
                }
                obj.insert("spec".into(), json!({ "finalizers": finalizers }));
            }
            ("ServiceAccount", 4, Field::Varint(v)) => {
                _ = obj.insert("automountServiceAccountToken".into(), json!(v != 0));
            }
            ("ConfigMap" | "Secret" | "Namespace" | "ServiceAccount", _, _) => {}
            _ => return None,
        }
    }
    matches!(kind, "ConfigMap" | "Secret" | "Namespace" | "ServiceAccount").then_some(Value::Object(obj))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(number: u64, bytes: &[u8]) -> Vec<u8> {
        let mut out = vec![u8::try_from(number << 3 | 2).unwrap(), u8::try_from(bytes.len()).unwrap()];
        out.extend_from_slice(bytes);
        out
    }

    #[test]
    fn a_config_map_created_by_kubectl_decodes() {
        let meta = field(1, b"cm");
        let entry = [field(1, b"a"), field(2, b"b")].concat();
        let raw = [field(1, &meta), field(2, &entry)].concat();
        let envelope = [MAGIC.to_vec(), field(2, &raw)].concat();
        let obj = decode(&envelope, "v1", "ConfigMap").unwrap();
        assert_eq!(
            obj,
            json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": "cm" }, "data": { "a": "b" } })
        );
        assert!(decode(&envelope, "apps/v1", "Deployment").is_none());
        assert!(decode(b"k8s\0\x12\x7f", "v1", "ConfigMap").is_none());
    }
}
