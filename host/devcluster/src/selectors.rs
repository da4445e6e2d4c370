//! Label selectors (equality and set-based) and field selectors, parsed from list/watch queries
//! as apimachinery parses them, and the fields each kind lets a field selector name.

use serde_json::Value;

use super::printers::go_print;
use super::status::go_quote;

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

/// Which fields a field selector may name for a kind, and their values in an object: the
/// kind's field label conversion function (`AddFieldLabelConversionFunc`) and its strategy's
/// `GetAttrs`, in kube-apiserver.
#[derive(Debug, Clone)]
pub(crate) struct SelectableFields {
    /// The labels accepted.
    pub labels: Vec<String>,
    /// How the first label outside them is refused (with 400).
    pub refusal: Refusal,
    /// The value of a label in an object; a field that is not set reads `""`.
    pub value: fn(&Value, &str) -> String,
}

/// How a kind's conversion function words a field label it does not support.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// `field label not supported: <label>`: the core kinds with a function of their own,
    /// custom resources.
    Unsupported,
    /// `"<label>" is not a known field selector: only "metadata.name", "metadata.namespace"`:
    /// the kinds without one (`DefaultMetaV1FieldSelectorConversion`).
    Unknown,
    /// `field label "<label>" not supported for <type>`, as `batch/v1` words it for Jobs.
    UnsupportedFor(&'static str),
}

impl SelectableFields {
    /// What every kind without a conversion function of its own accepts: its name and
    /// namespace.
    pub(crate) fn metadata() -> SelectableFields {
        SelectableFields::new(&["metadata.name", "metadata.namespace"], Refusal::Unknown, field_value)
    }

    pub(crate) fn new(labels: &[&str], refusal: Refusal, value: fn(&Value, &str) -> String) -> SelectableFields {
        SelectableFields { labels: labels.iter().map(|l| (*l).to_string()).collect(), refusal, value }
    }

    /// The error text of `label`, when it is not accepted.
    fn refuse(&self, label: &str) -> Option<String> {
        if self.labels.iter().any(|l| l == label) {
            return None;
        }
        Some(match self.refusal {
            Refusal::Unsupported => format!("field label not supported: {label}"),
            Refusal::Unknown => format!(
                "{} is not a known field selector: only \"metadata.name\", \"metadata.namespace\"",
                go_quote(label)
            ),
            Refusal::UnsupportedFor(kind) => format!("field label {} not supported for {kind}", go_quote(label)),
        })
    }
}

/// A parsed `fieldSelector`: `field=value`, `field==value`, `field!=value`, comma-separated,
/// with `\,`, `\=` and `\\` escaping a value's characters (`fields.ParseSelector`).
#[derive(Debug, Clone)]
pub(crate) struct FieldSelector {
    /// `(label, equal, value)`, sorted by their text as the real parser sorts them.
    requirements: Vec<(String, bool, String)>,
    value: fn(&Value, &str) -> String,
}

impl Default for FieldSelector {
    fn default() -> FieldSelector {
        FieldSelector { requirements: Vec::new(), value: field_value }
    }
}

impl FieldSelector {
    /// Parses the selector as `fields.ParseSelector` does (terms are not trimmed; the first
    /// `!=`, `==` or `=` splits a term); the error is the text of a 400.
    pub(crate) fn parse(text: &str) -> Result<FieldSelector, String> {
        let mut terms = split_terms(text);
        terms.sort_unstable();
        let mut requirements = Vec::new();
        for term in terms.into_iter().filter(|t| !t.is_empty()) {
            let split = term.char_indices().find_map(|(i, _)| {
                let rest = &term[i..];
                ["!=", "==", "="].into_iter().find(|op| rest.starts_with(op)).map(|op| (i, op))
            });
            let Some((at, op)) = split else {
                return Err(format!("invalid selector: '{text}'; can't understand '{term}'"));
            };
            let value = unescape(&term[at + op.len()..])?;
            requirements.push((term[..at].to_string(), op != "!=", value));
        }
        Ok(FieldSelector { requirements, value: field_value })
    }

    /// The selector as a kind reads it (`ConvertFieldLabel`): refused, naming the first label
    /// in order that the kind does not support.
    pub(crate) fn for_kind(mut self, fields: &SelectableFields) -> Result<FieldSelector, String> {
        if let Some(refused) = self.requirements.iter().find_map(|(label, _, _)| fields.refuse(label)) {
            return Err(refused);
        }
        self.value = fields.value;
        Ok(self)
    }

    /// The name an `metadata.name=<name>` term requires, when the selector is only that.
    pub(crate) fn exact_name(&self) -> Option<&str> {
        match self.requirements.as_slice() {
            [(label, true, name)] if label == "metadata.name" => Some(name),
            _ => None,
        }
    }

    /// Whether it selects everything.
    pub(crate) fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    pub(crate) fn matches(&self, obj: &Value) -> bool {
        self.requirements.iter().all(|(field, equal, want)| ((self.value)(obj, field) == *want) == *equal)
    }
}

/// `splitTerms`: the selector cut at commas no backslash escapes.
fn split_terms(text: &str) -> Vec<&str> {
    if text.is_empty() {
        return Vec::new();
    }
    let mut terms = Vec::new();
    let (mut start, mut escaped) = (0, false);
    for (i, c) in text.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            ',' => {
                terms.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    terms.push(&text[start..]);
    terms
}

/// `UnescapeValue`: `\\`, `\,` and `\=` stand for the character; any other escape, or an
/// unescaped `,` or `=`, is refused.
fn unescape(value: &str) -> Result<String, String> {
    let mut out = String::with_capacity(value.len());
    let mut escaped = false;
    for c in value.chars() {
        match (escaped, c) {
            (true, '\\' | ',' | '=') => {
                out.push(c);
                escaped = false;
            }
            (true, other) => {
                return Err(format!("invalid field selector: invalid escape sequence: \\{other}"));
            }
            (false, '\\') => escaped = true,
            (false, ',' | '=') => {
                return Err(format!("invalid field selector: unescaped character in value: {}", u32::from(c)));
            }
            (false, c) => out.push(c),
        }
    }
    if escaped {
        return Err("invalid field selector: invalid escape sequence: \\".to_string());
    }
    Ok(out)
}

/// The value of a field label read from its path, as `fmt.Sprint` prints it: a string as it
/// is, a number or a boolean in Go's form; what is not set reads `""`.
pub(crate) fn field_value(obj: &Value, field: &str) -> String {
    let mut cur = obj;
    for part in field.split('.') {
        match cur.get(part) {
            Some(next) => cur = next,
            None => return String::new(),
        }
    }
    match cur {
        Value::Null => String::new(),
        other => go_print(other),
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
        let meta = SelectableFields::metadata();
        assert_eq!(
            FieldSelector::parse("spec.foo=1").unwrap().for_kind(&meta).unwrap_err(),
            "\"spec.foo\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
        );
        assert_eq!(
            FieldSelector::parse("metadata.name").unwrap_err(),
            "invalid selector: 'metadata.name'; can't understand 'metadata.name'"
        );
        assert_eq!(
            FieldSelector::parse("a==b=c").unwrap_err(),
            "invalid field selector: unescaped character in value: 61"
        );
        assert_eq!(FieldSelector::parse("a=b\\x").unwrap_err(), "invalid field selector: invalid escape sequence: \\x");
    }

    #[test]
    fn field_selectors_read_metadata_and_escaped_values() {
        let obj = serde_json::json!({"metadata": {"name": "a,b", "namespace": "n"}});
        assert!(FieldSelector::parse("metadata.name=a\\,b").unwrap().matches(&obj));
        assert!(!FieldSelector::parse("metadata.namespace!=n").unwrap().matches(&obj));
        assert!(FieldSelector::parse("metadata.namespace=n,,").unwrap().matches(&obj), "empty terms are skipped");
    }
}
