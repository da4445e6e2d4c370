//! One offline reconcile on objects read from YAML files: what `kubewasm render`
//! prints and what golden tests compare.
//!
//! The plugin sees exactly what the host would hand it ([`kubewasm::plugin::view`], the
//! function the controllers use): only the observed objects its parent controls, only
//! the related objects its queries select, and no `managedFields`.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use kubewasm::plugin::{CallError, Plugin, Refusal, Request, Response, validate, view};

/// Why a render failed; each variant names what to fix.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    /// The file cannot be read.
    #[error("{}: {source}", file.display())]
    Read { file: PathBuf, source: std::io::Error },
    /// The file is not YAML or JSON; the message gives the line and column.
    #[error("{}: {}", file.display(), located(source))]
    Parse { file: PathBuf, source: serde_yaml_ng::Error },
    /// The file parses but does not hold what the render needs.
    #[error("{}: {message}", file.display())]
    Input { file: PathBuf, message: String },
    #[error(transparent)]
    Call(#[from] CallError),
    #[error(transparent)]
    Refused(#[from] Refusal),
}

/// The files of one render.
#[derive(Clone, Debug, Default)]
pub struct Inputs {
    pub parent: PathBuf,
    pub observed: Option<PathBuf>,
    pub related: Option<PathBuf>,
    pub config: Option<PathBuf>,
}

/// A validated decision, and notes on inputs the host would not have passed.
#[derive(Clone, Debug)]
pub struct Rendered {
    pub parent: Value,
    pub response: Response,
    pub notes: Vec<String>,
    /// The observed children the answer keeps as they are (`Response::keep`): the host
    /// neither writes nor deletes them.
    pub kept: Vec<String>,
    /// The observed children the parent controls that the answer omits: the host deletes them.
    pub deleted: Vec<String>,
}

/// Reads the inputs, calls the plugin as the host would, and validates the answer.
///
/// # Errors
///
/// A [`RenderError`]: an input file that does not parse (with its line), a failed
/// call, or a refused response.
pub fn render(plugin: &Plugin, inputs: &Inputs, now: &str) -> Result<Rendered, RenderError> {
    let manifest = plugin.manifest();
    let mut parents = read_objects(&inputs.parent)?;
    if parents.len() != 1 {
        return Err(RenderError::Input {
            file: inputs.parent.clone(),
            message: format!("expected exactly one parent object, found {}", parents.len()),
        });
    }
    let parent = view::shown(parents.remove(0));
    let Some(kind) = &manifest.parent else {
        return Err(RenderError::Input {
            file: inputs.parent.clone(),
            message: format!("plugin {} reconciles no parent kind: it handles events (render --event)", manifest.name),
        });
    };
    if !kind.matches(&parent) {
        return Err(RenderError::Input {
            file: inputs.parent.clone(),
            message: format!("the parent must be a {kind}, this plugin's parent kind"),
        });
    }
    let observed = optional_objects(inputs.observed.as_deref())?;
    let related = optional_objects(inputs.related.as_deref())?;
    let config = match &inputs.config {
        Some(file) => read_document(file)?,
        None => Value::Null,
    };
    // One instance for both calls, as the controllers do.
    let mut instance = plugin.instance();
    instance.set_time(now);
    let queries = instance.related(&parent)?;
    let shown = view::select(manifest, &parent, &queries, observed, related);
    let request = Request::new(parent, shown.children, shown.related, false, now.into(), config);
    let response = instance.reconcile(&request)?;
    let response = validate(manifest, request.parent().json(), response)?;
    let kept = response.children.iter().filter(|c| c["metadata"]["uid"].is_string()).map(describe).collect();
    let namespace = request.parent().json()["metadata"]["namespace"].as_str();
    let deleted = request
        .children()
        .iter()
        .map(kubewasm_contract::Object::json)
        .filter(|o| !answered(&response.children, o, namespace))
        .map(describe)
        .collect();
    Ok(Rendered { parent: request.parent().json().clone(), response, notes: shown.left_out, kept, deleted })
}

/// Whether one of the answer's `children` is `observed`: the same kind, namespace (a child
/// without one is in its parent's, `namespace`) and name, as the host tells the children to
/// keep from those to delete.
fn answered(children: &[Value], observed: &Value, namespace: Option<&str>) -> bool {
    let key = |object: &Value| {
        let meta = &object["metadata"];
        (
            object["apiVersion"].as_str().map(str::to_string),
            object["kind"].as_str().map(str::to_string),
            meta["namespace"].as_str().or(namespace).map(str::to_string),
            meta["name"].as_str().map(str::to_string),
        )
    };
    let observed = key(observed);
    children.iter().any(|child| key(child) == observed)
}

/// `Kind name` of an object, as render's notes name it.
fn describe(object: &Value) -> String {
    format!(
        "{} {}",
        object["kind"].as_str().unwrap_or_default(),
        object["metadata"]["name"].as_str().unwrap_or_default()
    )
}

impl Rendered {
    /// What render says besides the YAML, one line each: inputs the host would not have
    /// passed, children kept as they are, children the host would delete.
    pub fn remarks(&self) -> impl Iterator<Item = String> + '_ {
        let notes = self.notes.iter().map(|note| format!("note: {note}"));
        let kept =
            self.kept.iter().map(|c| format!("kept: {c} (observed, kept as it is: neither written nor deleted)"));
        let deleted =
            self.deleted.iter().map(|c| format!("deleted: {c} (the parent controls it and the answer omits it)"));
        notes.chain(kept).chain(deleted)
    }

    /// The decision as a YAML stream: the parent with its new status, labels and
    /// annotations; each desired child; then a `Result` with events and requeue, if any.
    ///
    /// # Errors
    ///
    /// Only if serialization fails, which JSON values never do.
    pub fn to_yaml(&self) -> Result<String, serde_yaml_ng::Error> {
        let r = &self.response;
        let meta = &self.parent["metadata"];
        let mut parent = json!({
            "apiVersion": self.parent["apiVersion"],
            "kind": self.parent["kind"],
            "metadata": {"name": meta["name"]},
        });
        if let Some(ns) = meta.get("namespace") {
            parent["metadata"]["namespace"] = ns.clone();
        }
        if !r.labels.is_empty() {
            parent["metadata"]["labels"] = json!(r.labels);
        }
        if !r.annotations.is_empty() {
            parent["metadata"]["annotations"] = json!(r.annotations);
        }
        if let Some(status) = &r.status {
            parent["status"] = status.clone();
        }
        let mut documents = vec![parent];
        documents.extend(r.children.iter().cloned());
        if !r.events.is_empty() || r.requeue_after.is_some() || r.finalized {
            let mut result = json!({"apiVersion": "render.kubewasm.io/v1alpha1", "kind": "Result"});
            if !r.events.is_empty() {
                result["events"] = json!(r.events);
            }
            if let Some(after) = r.requeue_after {
                result["requeueAfter"] = json!(format!("{}ms", after.as_millis()));
            }
            if r.finalized {
                result["finalized"] = json!(true);
            }
            documents.push(result);
        }
        let mut out = String::new();
        for doc in documents {
            out.push_str("---\n");
            out.push_str(&serde_yaml_ng::to_string(&doc)?);
        }
        Ok(out)
    }
}

/// Every object in a YAML (or JSON) file: several `---` documents and `kind: List`
/// objects are flattened; empty documents are skipped.
///
/// # Errors
///
/// A [`RenderError`] naming the file and, for syntax errors, the line and column.
pub fn read_objects(file: &Path) -> Result<Vec<Value>, RenderError> {
    let text = read_text(file)?;
    let mut objects = Vec::new();
    for document in serde_yaml_ng::Deserializer::from_str(&text) {
        let value: Value = serde::Deserialize::deserialize(document).map_err(|source| parse_error(file, source))?;
        match value {
            Value::Null => {}
            Value::Object(ref o) if o.get("kind").and_then(Value::as_str).is_some_and(|k| k.ends_with("List")) => {
                objects.extend(o.get("items").and_then(Value::as_array).cloned().unwrap_or_default());
            }
            Value::Object(_) => objects.push(value),
            other => {
                return Err(RenderError::Input {
                    file: file.to_path_buf(),
                    message: format!("expected Kubernetes objects, found {other}"),
                });
            }
        }
    }
    Ok(objects)
}

fn optional_objects(file: Option<&Path>) -> Result<Vec<Value>, RenderError> {
    file.map_or_else(|| Ok(Vec::new()), read_objects)
}

fn read_document(file: &Path) -> Result<Value, RenderError> {
    serde_yaml_ng::from_str(&read_text(file)?).map_err(|source| parse_error(file, source))
}

fn read_text(file: &Path) -> Result<String, RenderError> {
    std::fs::read_to_string(file).map_err(|source| RenderError::Read { file: file.to_path_buf(), source })
}

fn parse_error(file: &Path, source: serde_yaml_ng::Error) -> RenderError {
    RenderError::Parse { file: file.to_path_buf(), source }
}

/// A YAML error with its line and column first, where the parser knows them.
fn located(e: &serde_yaml_ng::Error) -> String {
    match e.location() {
        Some(l) => format!("line {} column {}: {e}", l.line(), l.column()),
        None => e.to_string(),
    }
}
