//! One offline reconcile, one event handed to a handler, one write put to the plugin's
//! admission webhooks, or objects converted by it, on objects read from YAML files: what
//! `kubewasm render` prints and what golden tests compare.
//!
//! The plugin sees exactly what the host would hand it ([`kubewasm::plugin::view`], the
//! function the controllers use): only the observed objects its parent controls, only
//! the related objects its queries select, and no `managedFields`. Its HTTP requests go
//! through the host's egress policy (the grant of `--settings`, else what the manifest
//! asks for) and are answered from the canned responses of `--http`, then printed, with
//! the values of the Secrets the settings name masked.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};

use kubewasm::plugin::{
    CallError, Canned, Change, Egress, HttpSettings, MatchPolicy, Object, ObjectEvent, Plugin, Recorded, Refusal,
    Request, Response, Settings, Transport, validate, view,
};
use kubewasm::secrets::{self, SecretError};
use kubewasm_contract::{AdmissionRequest, Operation, Verdict};

mod admission;

pub use admission::denial_message;

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
    /// The plugin's answer to an admission or conversion call is one the API server
    /// would refuse, or the conversion failed; the message says which and why.
    #[error("{0}")]
    Webhook(String),
    /// A Secret the config names is not in `--secrets`.
    #[error("{}: {source}", file.as_ref().map_or_else(|| "--secrets".to_string(), |f| f.display().to_string()))]
    Secret { file: Option<PathBuf>, source: SecretError },
}

/// The files of one render, and the settings the plugin runs with.
#[derive(Clone, Debug, Default)]
pub struct Inputs {
    pub observed: Option<PathBuf>,
    pub related: Option<PathBuf>,
    /// The plugin's `config` (YAML or JSON); else the `[config]` of `settings`.
    pub config: Option<PathBuf>,
    /// A `NAME.toml`: its `[http]` grant and limits, and its `[config]`.
    pub settings: Option<PathBuf>,
    /// Canned responses to the plugin's HTTP requests.
    pub http: Option<PathBuf>,
    /// `Secret` objects (YAML stream) for the `secretKeyRef`s of the config.
    pub secrets: Option<PathBuf>,
}

/// What to hand the plugin: a parent to reconcile, a change to handle, a write to
/// admit, or objects to convert.
#[derive(Clone, Debug)]
pub enum Call {
    Reconcile {
        parent: PathBuf,
    },
    Handle {
        change: Change,
        object: PathBuf,
        old: Option<PathBuf>,
        initial: bool,
        final_state_unknown: bool,
    },
    /// `object` is written (none for a delete), `old` is stored (update and delete).
    Admit {
        operation: Operation,
        object: Option<PathBuf>,
        old: Option<PathBuf>,
    },
    /// Every object of `objects` to `version` (`v2`, or `group/v2`).
    Convert {
        objects: PathBuf,
        version: String,
    },
}

/// What the plugin did: a validated decision or a handled event, the requests it
/// sent, and notes on inputs the host would not have passed.
#[derive(Debug)]
pub struct Rendered {
    pub outcome: Outcome,
    pub requests: Vec<Recorded>,
    /// Whether `--http` was given (the requests are printed then, even none).
    pub http: bool,
    pub notes: Vec<String>,
}

#[derive(Debug)]
pub enum Outcome {
    Reconciled {
        parent: Value,
        response: Response,
        /// The observed children the answer keeps as they are (`Response::keep`, as
        /// `Kind name`): the host neither writes nor deletes them.
        kept: Vec<String>,
        /// The observed children the answer omits whose kind the manifest keeps unlisted
        /// (`keepUnlisted`): the host neither writes nor deletes them either.
        unlisted: Vec<String>,
        /// The observed children the parent controls that the answer omits, of the other
        /// kinds: the host deletes them.
        deleted: Vec<String>,
        /// The observed children the answer deletes by uid (`Response::delete`), of any
        /// kind: the host deletes them too.
        named: Vec<String>,
    },
    /// The event handed over, and the handler's error if it did not accept it.
    Handled { event: ObjectEvent, error: Option<CallError> },
    /// A write as the API server would store it, after the plugin's defaulting (when it
    /// defaults this write) and its validation (when it validates it).
    Admitted {
        request: Box<AdmissionRequest>,
        /// The object as it would be stored; `None` for a delete, or when defaulting
        /// refused the write.
        object: Option<Value>,
        /// Whether the plugin's defaulting changed the object.
        defaulted: bool,
        verdict: Verdict,
    },
    /// The objects in the desired version, as the API server keeps them.
    Converted { objects: Vec<Value> },
}

/// The plugin's config and HTTP settings for a render, its Secret values, and the canned
/// transport.
struct Prepared {
    plugin: Plugin,
    config: Value,
    hidden: Vec<String>,
    canned: Arc<Canned>,
    /// Whether a write of another version of a kind the plugin admits is admitted through
    /// conversion (`[webhooks] match-policy`).
    match_policy: MatchPolicy,
}

fn prepare(plugin: &Plugin, inputs: &Inputs) -> Result<Prepared, RenderError> {
    let manifest = plugin.manifest();
    let settings = match &inputs.settings {
        Some(file) => Some(
            Settings::parse(&read_text(file)?)
                .map_err(|e| RenderError::Input { file: file.clone(), message: e.to_string() })?,
        ),
        None => None,
    };
    let config = match (&inputs.config, &settings) {
        (Some(file), _) => read_document(file)?,
        (None, Some(settings)) => settings.config.clone(),
        (None, None) => Value::Null,
    };
    let found = match &inputs.secrets {
        Some(file) => read_objects(file)?,
        None => Vec::new(),
    };
    let resolved = secrets::substitute(&config, &|r| {
        let secret = found.iter().find(|s| s["kind"] == "Secret" && s["metadata"]["name"] == r.name.as_str());
        let missing = || SecretError::Missing { namespace: "--secrets".into(), name: r.name.clone() };
        let secret = secret.ok_or_else(missing)?;
        let no_key = || SecretError::NoKey { namespace: "--secrets".into(), name: r.name.clone(), key: r.key.clone() };
        if let Some(text) = secret["stringData"][&r.key].as_str() {
            return Ok(text.to_string());
        }
        let encoded = secret["data"][&r.key].as_str().ok_or_else(no_key)?;
        let bytes = base64_decode(encoded).ok_or_else(no_key)?;
        String::from_utf8(bytes).map_err(|_| SecretError::NotText {
            namespace: "--secrets".into(),
            name: r.name.clone(),
            key: r.key.clone(),
        })
    })
    .map_err(|source| RenderError::Secret { file: inputs.secrets.clone(), source })?;
    let canned = match &inputs.http {
        Some(file) => Canned::parse(&read_text(file)?)
            .map_err(|e| RenderError::Input { file: file.clone(), message: e.to_string() })?,
        None => Canned::parse("")
            .map_err(|e| RenderError::Input { file: PathBuf::from("--http"), message: e.to_string() })?,
    };
    let canned = Arc::new(canned);
    // Without settings, the grant is what the plugin asks for.
    let http = match &settings {
        Some(settings) => settings.http.clone(),
        None => HttpSettings { allow: manifest.outbound.clone(), ..HttpSettings::default() },
    };
    let egress = Egress::new(&manifest.name, &manifest.outbound, &http, Transport::Canned(canned.clone()), None)
        .map_err(|e| RenderError::Input {
            file: inputs.settings.clone().unwrap_or_else(|| PathBuf::from(plugin.origin())),
            message: e.to_string(),
        })?;
    let mut plugin = plugin.clone().with_egress(Arc::new(egress));
    if let Some(settings) = &settings {
        let limits = settings.lower(plugin.limits());
        plugin = plugin.with_limits(limits);
    }
    let match_policy = settings.as_ref().map(|s| s.webhooks.match_policy).unwrap_or_default();
    Ok(Prepared { plugin, config: resolved.config, hidden: resolved.hidden, canned, match_policy })
}

/// Standard base64, as Secrets' `data` holds it.
fn base64_decode(text: &str) -> Option<Vec<u8>> {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = Vec::new();
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in text.bytes().filter(|c| !c.is_ascii_whitespace() && *c != b'=') {
        let v = u32::try_from(ALPHABET.iter().position(|&a| a == c)?).ok()?;
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push(u8::try_from((acc >> bits) & 0xff).ok()?);
        }
    }
    Some(out)
}

/// Reads the inputs, calls the plugin as the host would, and validates its answer. A
/// handler's error is part of what is rendered: the requests it made are shown with it.
///
/// # Errors
///
/// A [`RenderError`]: an input file that does not parse (with its line), a failed
/// reconcile, or a refused response.
pub fn render(plugin: &Plugin, call: &Call, inputs: &Inputs, now: &str) -> Result<Rendered, RenderError> {
    let prepared = prepare(plugin, inputs)?;
    let (outcome, notes) = match call {
        Call::Reconcile { parent } => reconcile(&prepared, parent, inputs, now)?,
        Call::Handle { change, object, old, initial, final_state_unknown } => {
            handle(&prepared, *change, object, old.as_deref(), *initial, *final_state_unknown, now)?
        }
        Call::Admit { operation, object, old } => {
            (admission::admit(&prepared, *operation, object.as_deref(), old.as_deref(), now)?, Vec::new())
        }
        Call::Convert { objects, version } => (admission::convert(&prepared, objects, version, now)?, Vec::new()),
    };
    let requests = mask(prepared.canned.recorded(), &prepared.hidden);
    Ok(Rendered { outcome, requests, http: inputs.http.is_some(), notes })
}

/// `recorded` with every Secret value replaced by `[secret]`.
fn mask(recorded: Vec<Recorded>, hidden: &[String]) -> Vec<Recorded> {
    let hide = |text: &str| {
        hidden.iter().filter(|h| !h.is_empty()).fold(text.to_string(), |t, h| t.replace(h.as_str(), "[secret]"))
    };
    recorded
        .into_iter()
        .map(|mut r| {
            r.url = hide(&r.url);
            for (_, value) in &mut r.headers {
                *value = hide(value);
            }
            if let Ok(text) = String::from_utf8(r.body.clone()) {
                r.body = hide(&text).into_bytes();
            }
            r
        })
        .collect()
}

fn handle(
    prepared: &Prepared,
    change: Change,
    object_file: &Path,
    old: Option<&Path>,
    initial: bool,
    final_state_unknown: bool,
    now: &str,
) -> Result<(Outcome, Vec<String>), RenderError> {
    let manifest = prepared.plugin.manifest();
    let object = one_object(object_file)?;
    let watch = manifest.watches.iter().find(|w| w.kind.matches(&object)).ok_or_else(|| RenderError::Input {
        file: object_file.to_path_buf(),
        message: format!(
            "plugin {} watches no {} {}",
            manifest.name,
            object["apiVersion"].as_str().unwrap_or("<no apiVersion>"),
            object["kind"].as_str().unwrap_or("<no kind>")
        ),
    })?;
    let old = old.map(one_object).transpose()?;
    if old.is_some() != (change == Change::Updated) {
        return Err(RenderError::Input {
            file: object_file.to_path_buf(),
            message: "--old goes with --event updated, and only with it".into(),
        });
    }
    let meta = |field: &str| object["metadata"][field].as_str().unwrap_or_default().to_string();
    let event = ObjectEvent {
        change,
        kind: watch.kind.clone(),
        delivery_id: ObjectEvent::delivery_id(&meta("uid"), &meta("resourceVersion"), change),
        object: Object::new(object),
        old_object: old.map(Object::new),
        initial,
        final_state_unknown,
        attempt: 1,
        now: now.to_string(),
        config: prepared.config.clone(),
    };
    let mut instance = prepared.plugin.instance();
    instance.hide(prepared.hidden.clone());
    instance.set_time(now);
    let error = instance.handle(&event).err();
    Ok((Outcome::Handled { event, error }, Vec::new()))
}

/// The one object of `file`, as the plugin is shown it.
fn one_object(file: &Path) -> Result<Value, RenderError> {
    let mut objects = read_objects(file)?;
    if objects.len() != 1 {
        return Err(RenderError::Input {
            file: file.to_path_buf(),
            message: format!("expected exactly one object, found {}", objects.len()),
        });
    }
    Ok(view::shown(objects.remove(0)))
}

fn reconcile(
    prepared: &Prepared,
    parent_file: &Path,
    inputs: &Inputs,
    now: &str,
) -> Result<(Outcome, Vec<String>), RenderError> {
    let plugin = &prepared.plugin;
    let manifest = plugin.manifest();
    let inputs_parent = parent_file.to_path_buf();
    let mut parents = read_objects(parent_file)?;
    if parents.len() != 1 {
        return Err(RenderError::Input {
            file: inputs_parent,
            message: format!("expected exactly one parent object, found {}", parents.len()),
        });
    }
    let parent = view::shown(parents.remove(0));
    let Some(kind) = &manifest.parent else {
        return Err(RenderError::Input {
            file: inputs_parent,
            message: format!("plugin {} reconciles no parent kind: it handles events (render --event)", manifest.name),
        });
    };
    if !kind.matches(&parent) {
        return Err(RenderError::Input {
            file: inputs_parent,
            message: format!("the parent must be a {kind}, this plugin's parent kind"),
        });
    }
    let observed = optional_objects(inputs.observed.as_deref())?;
    let related = optional_objects(inputs.related.as_deref())?;
    // One instance for both calls, as the controllers do.
    let mut instance = plugin.instance();
    instance.hide(prepared.hidden.clone());
    instance.set_time(now);
    let queries = instance.related(&parent)?;
    let shown = view::select(manifest, &parent, &queries, observed, related);
    let request = Request::new(parent, shown.children, shown.related, false, now.into(), prepared.config.clone());
    let response = instance.reconcile(&request)?;
    let response = validate(manifest, &request, response)?;
    let kept = response.children.iter().filter(|c| c["metadata"]["uid"].is_string()).map(describe).collect();
    let namespace = request.parent().json()["metadata"]["namespace"].as_str();
    // Validation found each uid to delete among the observed children, and none answered.
    let (named, omitted): (Vec<&Value>, Vec<&Value>) = request
        .children()
        .iter()
        .map(kubewasm_contract::Object::json)
        .partition(|o| o["metadata"]["uid"].as_str().is_some_and(|uid| response.delete.iter().any(|d| d == uid)));
    let (unlisted, deleted): (Vec<&Value>, Vec<&Value>) = omitted
        .into_iter()
        .filter(|o| !answered(&response.children, o, namespace))
        .partition(|o| manifest.keep_unlisted.iter().any(|kind| kind.matches(o)));
    let describe_all = |objects: Vec<&Value>| objects.into_iter().map(describe).collect();
    let (unlisted, deleted, named) = (describe_all(unlisted), describe_all(deleted), describe_all(named));
    let parent = request.parent().json().clone();
    Ok((Outcome::Reconciled { parent, response, kept, unlisted, deleted, named }, shown.left_out))
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

/// The requests as the `Requests` document of a render.
pub fn requests_yaml(requests: &[Recorded]) -> Result<String, serde_yaml_ng::Error> {
    let requests: Vec<Value> = requests
        .iter()
        .map(|r| {
            let mut request = json!({
                "method": r.method,
                "url": r.url,
                "headers": r.headers.iter().map(|(n, v)| json!({"name": n, "value": v})).collect::<Vec<_>>(),
            });
            if !r.body.is_empty() {
                request["body"] = match std::str::from_utf8(&r.body) {
                    Ok(text) => json!(text),
                    Err(_) => json!(format!("<{} bytes, not UTF-8>", r.body.len())),
                };
            }
            request["response"] = match r.status {
                Some(status) => json!({"status": status}),
                None => json!("none: no canned response matched"),
            };
            request
        })
        .collect();
    let document = json!({"apiVersion": "render.kubewasm.io/v1alpha1", "kind": "Requests", "requests": requests});
    Ok(format!("---\n{}", serde_yaml_ng::to_string(&document)?))
}

impl Rendered {
    /// What render says besides the YAML, one line each: inputs the host would not have
    /// passed, children kept as they are (returned with their uid, or omitted and of a kind
    /// kept unlisted), children the host would delete (omitted, or named by uid).
    pub fn remarks(&self) -> impl Iterator<Item = String> + '_ {
        let (kept, unlisted, deleted, named): (&[String], &[String], &[String], &[String]) = match &self.outcome {
            Outcome::Reconciled { kept, unlisted, deleted, named, .. } => (kept, unlisted, deleted, named),
            Outcome::Handled { .. } | Outcome::Admitted { .. } | Outcome::Converted { .. } => (&[], &[], &[], &[]),
        };
        let notes = self.notes.iter().map(|note| format!("note: {note}"));
        let kept = kept.iter().map(|c| format!("kept: {c} (observed, kept as it is: neither written nor deleted)"));
        let unlisted = unlisted.iter().map(|c| {
            format!(
                "kept: {c} (observed and omitted, of a kind the plugin keeps unlisted: neither written nor deleted)"
            )
        });
        let deleted = deleted.iter().map(|c| format!("deleted: {c} (the parent controls it and the answer omits it)"));
        let named = named.iter().map(|c| format!("deleted: {c} (the answer deletes it by uid)"));
        notes.chain(kept).chain(unlisted).chain(deleted).chain(named)
    }

    /// What the plugin did as a YAML stream. A reconcile: the parent with its new status,
    /// labels and annotations; each desired child; then a `Result` with events and
    /// requeue, if any. An event: a `Handled` document. Then, with `--http` or any
    /// request made, a `Requests` document.
    ///
    /// # Errors
    ///
    /// Only if serialization fails, which JSON values never do.
    pub fn to_yaml(&self) -> Result<String, serde_yaml_ng::Error> {
        let mut out = match &self.outcome {
            Outcome::Reconciled { parent, response, .. } => reconciled_yaml(parent, response)?,
            Outcome::Handled { event, error } => {
                let mut document = json!({
                    "apiVersion": "render.kubewasm.io/v1alpha1",
                    "kind": "Handled",
                    "change": event.change.as_str(),
                    "object": {"kind": event.kind.to_string(), "name": event.object.name()},
                    "deliveryId": event.delivery_id,
                    "accepted": error.is_none(),
                });
                if let Some(ns) = event.object.namespace() {
                    document["object"]["namespace"] = json!(ns);
                }
                if let Some(error) = error {
                    document["error"] = json!({"message": error.to_string(), "retryable": error.is_retryable()});
                }
                format!("---\n{}", serde_yaml_ng::to_string(&document)?)
            }
            Outcome::Admitted { request, object, defaulted, verdict } => {
                admission::admitted_yaml(request, object.as_ref(), *defaulted, verdict)?
            }
            Outcome::Converted { objects } => {
                let mut out = String::new();
                for object in objects {
                    out.push_str("---\n");
                    out.push_str(&serde_yaml_ng::to_string(object)?);
                }
                out
            }
        };
        if self.http || !self.requests.is_empty() {
            out.push_str(&requests_yaml(&self.requests)?);
        }
        Ok(out)
    }
}

fn reconciled_yaml(parent_value: &Value, r: &Response) -> Result<String, serde_yaml_ng::Error> {
    let meta = &parent_value["metadata"];
    let mut parent = json!({
        "apiVersion": parent_value["apiVersion"],
        "kind": parent_value["kind"],
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
