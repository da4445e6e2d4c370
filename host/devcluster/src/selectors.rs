//! Label selectors (equality and set-based) and field selectors, parsed from list/watch queries.

use serde_json::Value;

use super::object;

#[derive(Debug, Clone, PartialEq)]
enum Op {
    Exists,
    NotExists,
    Equals(String),
    NotEquals(String),
    In(Vec<String>),
    NotIn(Vec<String>),
    Greater(i64),
    Less(i64),
}

/// A parsed `labelSelector`: every requirement must hold.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct LabelSelector {
    requirements: Vec<(String, Op)>,
}

impl LabelSelector {
    /// Parses the string form (`app=x,tier in (a,b),!legacy`). The error is the text of a 400.
    pub(crate) fn parse(text: &str) -> Result<LabelSelector, String> {
        let mut requirements = Vec::new();
        for part in split_top_level(text) {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            requirements.push(parse_requirement(part)?);
        }
        Ok(LabelSelector { requirements })
    }

    /// Whether it selects everything.
    pub(crate) fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Builds a selector from a `metav1.LabelSelector` object (`matchLabels`, `matchExpressions`).
    pub(crate) fn from_object(sel: &Value) -> Result<LabelSelector, String> {
        let mut requirements = Vec::new();
        if let Some(labels) = sel.get("matchLabels").and_then(Value::as_object) {
            for (k, v) in labels {
                requirements.push((k.clone(), Op::Equals(v.as_str().unwrap_or_default().to_string())));
            }
        }
        for expr in sel.get("matchExpressions").and_then(Value::as_array).into_iter().flatten() {
            let key = expr.get("key").and_then(Value::as_str).unwrap_or_default().to_string();
            let values: Vec<String> = expr
                .get("values")
                .and_then(Value::as_array)
                .map(|v| v.iter().filter_map(|s| s.as_str().map(String::from)).collect())
                .unwrap_or_default();
            let op = match expr.get("operator").and_then(Value::as_str) {
                Some("In") => Op::In(values),
                Some("NotIn") => Op::NotIn(values),
                Some("Exists") => Op::Exists,
                Some("DoesNotExist") => Op::NotExists,
                other => return Err(format!("{other:?} is not a valid label selector operator")),
            };
            requirements.push((key, op));
        }
        Ok(LabelSelector { requirements })
    }

    pub(crate) fn matches(&self, labels: &[(&str, &str)]) -> bool {
        self.requirements.iter().all(|(key, op)| {
            let value = labels.iter().find(|(k, _)| k == key).map(|(_, v)| *v);
            match op {
                Op::Exists => value.is_some(),
                Op::NotExists => value.is_none(),
                Op::Equals(want) => value == Some(want.as_str()),
                Op::NotEquals(want) => value != Some(want.as_str()),
                Op::In(set) => value.is_some_and(|v| set.iter().any(|s| s == v)),
                Op::NotIn(set) => value.is_none_or(|v| !set.iter().any(|s| s == v)),
                Op::Greater(n) => value.and_then(|v| v.parse::<i64>().ok()).is_some_and(|v| v > *n),
                Op::Less(n) => value.and_then(|v| v.parse::<i64>().ok()).is_some_and(|v| v < *n),
            }
        })
    }

    /// The selector in its canonical string form (as the scale subresource reports it).
    pub(crate) fn to_text(&self) -> String {
        let parts: Vec<String> = self
            .requirements
            .iter()
            .map(|(k, op)| match op {
                Op::Exists => k.clone(),
                Op::NotExists => format!("!{k}"),
                Op::Equals(v) => format!("{k}={v}"),
                Op::NotEquals(v) => format!("{k}!={v}"),
                Op::In(s) => format!("{k} in ({})", s.join(",")),
                Op::NotIn(s) => format!("{k} notin ({})", s.join(",")),
                Op::Greater(n) => format!("{k}>{n}"),
                Op::Less(n) => format!("{k}<{n}"),
            })
            .collect();
        parts.join(",")
    }
}

/// Splits on commas that are not inside parentheses.
fn split_top_level(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

fn parse_requirement(part: &str) -> Result<(String, Op), String> {
    let bad = || format!("unable to parse requirement: invalid label selector: \"{part}\"");
    if let Some(key) = part.strip_prefix('!') {
        let key = key.trim();
        check_key(key).map_err(|()| bad())?;
        return Ok((key.to_string(), Op::NotExists));
    }
    for (token, make) in [
        ("==", Op::Equals as fn(String) -> Op),
        ("!=", Op::NotEquals as fn(String) -> Op),
        ("=", Op::Equals as fn(String) -> Op),
    ] {
        if let Some((key, value)) = part.split_once(token) {
            let key = key.trim();
            check_key(key).map_err(|()| bad())?;
            return Ok((key.to_string(), make(value.trim().to_string())));
        }
    }
    for (token, greater) in [(">", true), ("<", false)] {
        if let Some((key, value)) = part.split_once(token) {
            let n: i64 = value.trim().parse().map_err(|_| bad())?;
            let key = key.trim();
            check_key(key).map_err(|()| bad())?;
            return Ok((key.to_string(), if greater { Op::Greater(n) } else { Op::Less(n) }));
        }
    }
    let words: Vec<&str> = part.splitn(2, char::is_whitespace).collect();
    if words.len() == 2 {
        let key = words[0].trim();
        let rest = words[1].trim();
        let (notin, set) = if let Some(set) = rest.strip_prefix("notin") {
            (true, set)
        } else if let Some(set) = rest.strip_prefix("in") {
            (false, set)
        } else {
            return Err(bad());
        };
        let set = set.trim();
        let inner = set.strip_prefix('(').and_then(|s| s.strip_suffix(')')).ok_or_else(bad)?;
        let values: Vec<String> = inner.split(',').map(|v| v.trim().to_string()).filter(|v| !v.is_empty()).collect();
        check_key(key).map_err(|()| bad())?;
        return Ok((key.to_string(), if notin { Op::NotIn(values) } else { Op::In(values) }));
    }
    check_key(part).map_err(|()| bad())?;
    Ok((part.to_string(), Op::Exists))
}

fn check_key(key: &str) -> Result<(), ()> {
    let ok = !key.is_empty()
        && key.len() <= 317
        && key.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'));
    if ok { Ok(()) } else { Err(()) }
}

/// A parsed `fieldSelector`: `field=value`, `field==value`, `field!=value`, comma-separated.
#[derive(Debug, Clone, Default)]
pub(crate) struct FieldSelector {
    requirements: Vec<(String, bool, String)>,
}

impl FieldSelector {
    /// Parses and checks the fields against those the resource supports (`kind_fields`, plus
    /// `metadata.name` and `metadata.namespace` everywhere), like the real server.
    pub(crate) fn parse(text: &str, kind_fields: &[&str]) -> Result<FieldSelector, String> {
        let mut requirements = Vec::new();
        for part in text.split(',') {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            let (field, equal, value) = if let Some((f, v)) = part.split_once("!=") {
                (f, false, v)
            } else if let Some((f, v)) = part.split_once("==") {
                (f, true, v)
            } else if let Some((f, v)) = part.split_once('=') {
                (f, true, v)
            } else {
                return Err(format!("invalid selector: '{text}'; can't understand '{part}'"));
            };
            let field = field.trim();
            if field != "metadata.name" && field != "metadata.namespace" && !kind_fields.contains(&field) {
                return Err(format!("field label not supported: {field}"));
            }
            requirements.push((field.to_string(), equal, value.trim().to_string()));
        }
        Ok(FieldSelector { requirements })
    }

    /// Whether it selects everything.
    pub(crate) fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    pub(crate) fn matches(&self, obj: &Value) -> bool {
        self.requirements.iter().all(|(field, equal, want)| {
            let actual = field_value(obj, field);
            (actual == *want) == *equal
        })
    }
}

/// The string value of a dotted field path; absent fields read as `""`.
fn field_value(obj: &Value, field: &str) -> String {
    if field == "metadata.name" {
        return object::name(obj).to_string();
    }
    if field == "metadata.namespace" {
        return object::namespace(obj).to_string();
    }
    let mut cur = obj;
    for part in field.split('.') {
        match cur.get(part) {
            Some(next) => cur = next,
            None => return String::new(),
        }
    }
    match cur {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sel(s: &str) -> LabelSelector {
        LabelSelector::parse(s).unwrap()
    }

    #[test]
    fn equality_and_set_based_requirements() {
        let labels = [("app", "web"), ("tier", "front")];
        assert!(sel("app=web").matches(&labels));
        assert!(sel("app==web,tier=front").matches(&labels));
        assert!(!sel("app!=web").matches(&labels));
        assert!(sel("tier in (front, back)").matches(&labels));
        assert!(!sel("tier notin (front,back)").matches(&labels));
        assert!(sel("app,!legacy").matches(&labels));
        assert!(!sel("legacy").matches(&labels));
        assert!(sel("legacy notin (x)").matches(&labels));
        assert!(sel("").matches(&labels));
    }

    #[test]
    fn malformed_selectors_are_refused() {
        assert!(LabelSelector::parse("app in x").is_err());
        assert!(LabelSelector::parse("a b c").is_err());
        assert!(FieldSelector::parse("spec.foo=1", &[]).is_err());
        assert!(FieldSelector::parse("metadata.name", &[]).is_err());
    }

    #[test]
    fn field_selectors_read_metadata() {
        let obj = serde_json::json!({"metadata": {"name": "a", "namespace": "n"}});
        assert!(FieldSelector::parse("metadata.name=a", &[]).unwrap().matches(&obj));
        assert!(!FieldSelector::parse("metadata.namespace!=n", &[]).unwrap().matches(&obj));
    }
}
