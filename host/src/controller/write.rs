//! Carrying out a [`Plan`]: server-side apply of children, parent metadata and status,
//! create-only applies of children the cache has not seen, deletion of children no
//! longer desired, the finalizer, and the Events, each counted as a write or as a write
//! skipped. Nothing here decides what to write but for a child that the cache had not
//! seen and that exists after all: it is judged by the plan's own [`plan::compare`].

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::{Mutex, MutexGuard, PoisonError};

use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, Preconditions, PropagationPolicy};
use kube::discovery::ApiResource;
use kube::{Client, Resource, ResourceExt};
use serde_json::{Value, json};
use tracing::{debug, info, warn};

use super::error::Error;
use super::finalizer::Change;
use super::plan::{self, Action, Child, Metadata, Plan, StatusWritten, Write};
use super::warnings::{self, Reported, Warnings};
use crate::events::{Event, Events};
use crate::metrics::{Metrics, WriteKind};
use crate::plugin::{KindRef, view};

/// How a plan's writes ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Written {
    /// Every write was made (or held already).
    Done,
    /// The API server no longer shows the parent: the writes stopped before creating a
    /// child that would be collected at once.
    ParentGone,
}

/// Writes the plans of one plugin's controller: through its field manager, to the
/// resources its kinds resolved to, counted in its metrics.
pub(crate) struct Writer {
    fields: FieldManager,
    plugin: String,
    parent: ApiResource,
    /// The resource of each child (and related) kind.
    kinds: Vec<(KindRef, ApiResource)>,
    events: Events,
    metrics: Metrics,
    /// Per parent uid: the status last written and the resourceVersions it was written
    /// over and answered with (see [`plan::Observed::status_written`]).
    status_written: Mutex<HashMap<String, StatusWritten>>,
    /// Per parent uid: the resourceVersion of this host's last status write, when that
    /// write changed nothing else of the parent (see [`Writer::is_own_echo`]).
    echoes: Mutex<HashMap<String, String>>,
    /// The API server's warnings about this plugin's writes: reported once per cause.
    reported: Reported,
    warnings: Warnings,
}

/// What the API server answered a write with.
struct Answer {
    /// The object as the write left it.
    object: DynamicObject,
    /// Its `Warning` headers.
    warnings: Vec<String>,
}

/// The API server's warnings about one reconcile's writes: what each write was, and
/// the warning.
type Warned = Vec<(String, String)>;

impl Writer {
    pub(crate) fn new(
        client: Client,
        manager: String,
        plugin: String,
        parent: ApiResource,
        kinds: Vec<(KindRef, ApiResource)>,
        metrics: Metrics,
        warnings: Warnings,
    ) -> Self {
        Self {
            events: Events::new(client.clone(), manager.clone()),
            fields: FieldManager { client, manager },
            plugin,
            parent,
            kinds,
            metrics,
            status_written: Mutex::default(),
            echoes: Mutex::default(),
            reported: Reported::default(),
            warnings,
        }
    }

    /// The field manager every write goes through.
    pub(crate) fn manager(&self) -> &str {
        &self.fields.manager
    }

    /// The status this host last wrote on the parent with `uid`, and what the API server
    /// made of it.
    pub(crate) fn status_written(&self, uid: &str) -> Option<StatusWritten> {
        self.written().get(uid).cloned()
    }

    fn written(&self) -> MutexGuard<'_, HashMap<String, StatusWritten>> {
        self.status_written.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Forgets what the API server made of every status written: the parents' schema
    /// changed, and a field it dropped may be kept now.
    pub(crate) fn forget_statuses(&self) {
        self.written().clear();
    }

    fn echoes(&self) -> MutexGuard<'_, HashMap<String, String>> {
        self.echoes.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether `parent` is exactly what this host's own last status write left: a change
    /// the plugin made through the host, so no reason to call it again.
    pub(crate) fn is_own_echo(&self, parent: &DynamicObject) -> bool {
        let (Some(uid), Some(version)) = (parent.uid(), parent.resource_version()) else { return false };
        self.echoes().get(&uid) == Some(&version)
    }

    fn resource(&self, kind: &KindRef) -> Option<&ApiResource> {
        self.kinds.iter().find(|(k, _)| k == kind).map(|(_, resource)| resource)
    }

    /// Records `event` on `parent`; failing to record one never fails a reconcile.
    pub(crate) async fn publish(&self, parent: &DynamicObject, event: &Event) {
        let reference = parent.object_ref(&self.parent);
        if let Err(e) = self.events.publish(event, &reference).await {
            warn!(error = %e, reason = %event.reason, "could not record event");
        }
    }

    /// Makes the writes of `plan` for `parent`, in order: the finalizer's addition, the
    /// children, the prunes, the status, the labels and annotations, the events, and
    /// the finalizer's removal.
    ///
    /// # Errors
    ///
    /// The first write the API server refused; the writes after it are not made.
    pub(crate) async fn execute(&self, plan: &Plan, parent: &DynamicObject) -> Result<Written, Error> {
        let mut warned = Warned::new();
        let result = self.write(plan, parent, &mut warned).await;
        // What the API server warned about the writes that were made, even when a later one failed.
        for event in self.report(parent, warned) {
            self.publish(parent, &event).await;
        }
        result
    }

    async fn write(&self, plan: &Plan, parent: &DynamicObject, warned: &mut Warned) -> Result<Written, Error> {
        if let Some(add @ Change::Add(_)) = &plan.finalizers {
            self.set_finalizers(parent, add, "add finalizer").await?;
        }
        let Some(warnings) = self.children(parent, &plan.children, warned).await? else {
            return Ok(Written::ParentGone);
        };
        self.prune(&plan.prune).await?;
        if let Some(status) = &plan.status {
            self.status(parent, status, warned).await?;
        }
        if let Some(metadata) = &plan.metadata {
            self.metadata(parent, metadata, warned).await?;
        }
        for event in plan.events.iter().chain(&warnings) {
            self.publish(parent, event).await;
        }
        if let Some(remove @ Change::Remove(_)) = &plan.finalizers {
            self.set_finalizers(parent, remove, "remove finalizer").await?;
            info!("finalized");
        }
        Ok(Written::Done)
    }

    /// The Warning Events of the API server's warnings about this reconcile's writes, each
    /// cause once per parent; every one is logged, and the dev table shows the last.
    fn report(&self, parent: &DynamicObject, warned: Warned) -> Vec<Event> {
        let uid = parent.uid().unwrap_or_default();
        let mut events = Vec::new();
        for (what, warning) in warned {
            if !self.reported.first(&uid, &warning) {
                debug!(write = %what, %warning, "API server warning, reported before");
                continue;
            }
            warn!(write = %what, %warning, "the API server warned about a write");
            let mut note = format!("{what}: the API server warned: {warning}");
            if warning.starts_with("unknown field") {
                note.push_str("; it was not stored: declare it in the schema and the host writes it again");
            }
            self.warnings.record(&self.plugin, format!("{} {}: {note}", self.parent.kind, parent.name_any()));
            events.push(Event::warning("APIServerWarning", &note, "Apply"));
        }
        events
    }

    /// Writes the desired children; returns the warnings about them, or `None` when it
    /// stopped because the parent is gone.
    async fn children(
        &self,
        parent: &DynamicObject,
        children: &[Child],
        warned: &mut Warned,
    ) -> Result<Option<Vec<Event>>, Error> {
        let mut warnings = Vec::new();
        // Whether the parent still exists on the API server, asked once before a first create.
        let mut parent_alive = None;
        for child in children {
            let Some(resource) = self.resource(&child.kind) else { continue };
            let compared;
            let (action, warning) = match &child.action {
                Action::Create(prepared) => match self
                    .create(parent, &mut parent_alive, resource, child, prepared, warned)
                    .await?
                {
                    Creation::Created => continue,
                    Creation::ParentGone => return Ok(None),
                    Creation::Exists(existing) => {
                        let uid = parent.uid().unwrap_or_default();
                        let (kind, name) = (&child.kind, &child.name);
                        compared =
                            plan::compare(&self.parent.kind, kind, name, existing.as_deref(), prepared.clone(), &uid);
                        (&compared.0, compared.1.as_ref())
                    }
                },
                action => (action, child.warning.as_ref()),
            };
            warnings.extend(warning.cloned());
            self.child(resource, child, action, warned).await?;
        }
        Ok(Some(warnings))
    }

    /// Deletes the children no longer desired.
    async fn prune(&self, children: &[(KindRef, Arc<DynamicObject>)]) -> Result<(), Error> {
        for (kind, child) in children {
            let Some(resource) = self.resource(kind) else { continue };
            let what = format!("delete {} {}", kind.kind, child.name_any());
            self.fields.delete(resource, child).await.map_err(Error::write(&what))?;
            self.metrics.wrote(&self.plugin, WriteKind::Prune);
            debug!(kind = %kind, name = %child.name_any(), "child pruned");
        }
        Ok(())
    }

    /// Writes one desired child as `action` says (never [`Action::Create`]).
    async fn child(
        &self,
        resource: &ApiResource,
        child: &Child,
        action: &Action,
        warned: &mut Warned,
    ) -> Result<(), Error> {
        let (kind, name) = (&child.kind, &child.name);
        match action {
            Action::Held => {
                self.metrics.skipped(&self.plugin, WriteKind::Apply);
                debug!(kind = %kind, name, "child up to date");
            }
            Action::Kept => self.metrics.skipped(&self.plugin, WriteKind::Apply),
            Action::Conflict | Action::Create(_) => {}
            Action::Apply(object) => {
                let what = format!("apply {} {name}", kind.kind);
                let answer = self.fields.apply(resource, object).await.map_err(Error::write(&what))?;
                warned.extend(answer.warnings.into_iter().map(|w| (what.clone(), w)));
                self.metrics.wrote(&self.plugin, WriteKind::Apply);
                debug!(kind = %kind, name, "child applied");
            }
        }
        Ok(())
    }

    /// Creates a child the cache has not seen. Most likely it is new, but the cache may
    /// lag the API server, and a forced apply must never take over an object someone else
    /// created: it is created only if it does not exist, and read if it does.
    async fn create(
        &self,
        parent: &DynamicObject,
        parent_alive: &mut Option<bool>,
        resource: &ApiResource,
        child: &Child,
        prepared: &Value,
        warned: &mut Warned,
    ) -> Result<Creation, Error> {
        // The cache may still show a parent that was deleted (its events lag): a child
        // created now would be collected at once, and recreated on the next stale
        // reconcile, over and over. Its deletion is on its way.
        if !self.alive(parent, parent_alive).await? {
            debug!(kind = %resource.kind, name = %child.name, "parent not found; child not created");
            return Ok(Creation::ParentGone);
        }
        let what = |verb: &str| format!("{verb} {} {}", resource.kind, child.name);
        if let Some(answer) = self.fields.create(resource, prepared).await.map_err(Error::write(&what("create")))? {
            warned.extend(answer.warnings.into_iter().map(|w| (what("create"), w)));
            debug!(kind = %resource.kind, name = %child.name, "child created");
            self.metrics.wrote(&self.plugin, WriteKind::Apply);
            return Ok(Creation::Created);
        }
        let existing = self.fields.get(resource, prepared).await.map_err(Error::write(&what("read")))?;
        Ok(Creation::Exists(existing.map(Box::new)))
    }

    /// Whether `parent` (its uid) still exists on the API server: asked once per
    /// reconcile, and only before creating a child (cached parents can outlive their
    /// deletion).
    async fn alive(&self, parent: &DynamicObject, known: &mut Option<bool>) -> Result<bool, Error> {
        if let Some(known) = *known {
            return Ok(known);
        }
        let live = self
            .fields
            .get(&self.parent, &serde_json::to_value(parent).unwrap_or_default())
            .await
            .map_err(Error::write("read the parent"))?;
        let is_alive = live.is_some_and(|p| p.metadata.uid == parent.metadata.uid);
        *known = Some(is_alive);
        Ok(is_alive)
    }

    async fn metadata(
        &self,
        parent: &DynamicObject,
        metadata: &Write<Metadata>,
        warned: &mut Warned,
    ) -> Result<(), Error> {
        let Write::Write(metadata) = metadata else {
            self.metrics.skipped(&self.plugin, WriteKind::Metadata);
            return Ok(());
        };
        let what = "apply parent labels and annotations";
        let fields = json!({"metadata": {"labels": metadata.labels, "annotations": metadata.annotations}});
        let answer =
            self.fields.apply_to_parent(&self.parent, parent, fields, false).await.map_err(Error::write(what))?;
        warned.extend(answer.warnings.into_iter().map(|w| (what.to_string(), w)));
        self.metrics.wrote(&self.plugin, WriteKind::Metadata);
        Ok(())
    }

    /// Writes the status and remembers what the API server made of it: what it kept (a
    /// field the schema does not declare is dropped), and over which versions of the
    /// parent, so that the plan writes it again only when that could change the outcome.
    async fn status(&self, parent: &DynamicObject, status: &Write<Value>, warned: &mut Warned) -> Result<(), Error> {
        let Write::Write(status) = status else {
            self.metrics.skipped(&self.plugin, WriteKind::Status);
            return Ok(());
        };
        let uid = parent.uid().unwrap_or_default();
        let what = "apply status";
        let written = self.fields.apply_to_parent(&self.parent, parent, json!({"status": status}), true).await;
        let answer = match written {
            Ok(answer) => answer,
            Err(e) => {
                self.written().remove(&uid);
                return Err(Error::write(what)(e));
            }
        };
        warned.extend(answer.warnings.into_iter().map(|w| (what.to_string(), w)));
        self.metrics.wrote(&self.plugin, WriteKind::Status);
        let kept = answer.object.data.get("status").unwrap_or(&Value::Null);
        if !plan::same(kept, status) {
            debug!(asked = %status, kept = %kept, "the API server did not keep the status as written");
        }
        let answered = answer.object.resource_version().unwrap_or_default();
        if only_status_changed(parent, &answer.object) {
            self.echoes().insert(uid.clone(), answered.clone());
        }
        let over = parent.resource_version().unwrap_or_default();
        self.written().insert(uid, StatusWritten { over, answered, status: status.clone() });
        Ok(())
    }

    async fn set_finalizers(&self, parent: &DynamicObject, change: &Change, what: &str) -> Result<(), Error> {
        self.fields.set_finalizers(&self.parent, parent, change.finalizers()).await.map_err(Error::write(what))?;
        self.metrics.wrote(&self.plugin, WriteKind::Finalizer);
        Ok(())
    }
}

/// Whether `after` is `before` but for its status and the server's bookkeeping: no one
/// else's change came in between.
fn only_status_changed(before: &DynamicObject, after: &DynamicObject) -> bool {
    let strip = |object: &DynamicObject| {
        let mut object = view::shown(serde_json::to_value(object).unwrap_or_default());
        if let Some(map) = object.as_object_mut() {
            map.remove("status");
        }
        if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("resourceVersion");
        }
        object
    };
    strip(before) == strip(after)
}

/// What became of a child the cache had not seen.
enum Creation {
    Created,
    /// The parent is gone: nothing was written.
    ParentGone,
    /// It exists after all (the cache lags): as read from the API server.
    Exists(Option<Box<DynamicObject>>),
}

/// The uid [`FieldManager::create`] sends: no API server assigns the nil UUID.
const CREATE_ONLY_UID: &str = "00000000-0000-0000-0000-000000000000";

/// The API requests of one field manager.
struct FieldManager {
    client: Client,
    manager: String,
}

impl FieldManager {
    fn api(&self, resource: &ApiResource, namespace: Option<&str>) -> Api<DynamicObject> {
        match namespace {
            Some(ns) => Api::namespaced_with(self.client.clone(), ns, resource),
            None => Api::all_with(self.client.clone(), resource),
        }
    }

    fn apply_params(&self) -> PatchParams {
        PatchParams::apply(&self.manager).force()
    }

    /// The object of `resource` named like `object`, read from the API server.
    async fn get(&self, resource: &ApiResource, object: &Value) -> kube::Result<Option<DynamicObject>> {
        let name = object["metadata"]["name"].as_str().unwrap_or_default();
        self.api(resource, object["metadata"]["namespace"].as_str()).get_opt(name).await
    }

    /// Server-side apply of `object` only if no object of its name exists: the answer
    /// when it was created, `None` when one exists (left untouched).
    ///
    /// The apply carries a made-up `metadata.uid`. On a create the API server assigns
    /// its own (`BeforeCreate`) and the uid is no managed field; on an existing object
    /// it is a change of an immutable field, refused as a whole with 422 Invalid
    /// (`ValidateObjectMetaUpdate`). One request, where a read before the apply takes two.
    async fn create(&self, resource: &ApiResource, object: &Value) -> kube::Result<Option<Answer>> {
        let mut object = object.clone();
        object["metadata"]["uid"] = json!(CREATE_ONLY_UID);
        match self.apply(resource, &object).await {
            Ok(answer) => Ok(Some(answer)),
            Err(kube::Error::Api(status))
                if status.is_invalid()
                    && status.details.as_ref().is_some_and(|d| d.causes.iter().any(|c| c.field == "metadata.uid")) =>
            {
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// Server-side apply of `object`, forcing ownership of its fields.
    async fn apply(&self, resource: &ApiResource, object: &Value) -> kube::Result<Answer> {
        let name = object["metadata"]["name"].as_str().unwrap_or_default();
        let ns = object["metadata"]["namespace"].as_str();
        self.send_apply(resource, ns, name, false, object).await
    }

    /// Server-side apply of `fields` (a `status`, or `metadata` with labels and
    /// annotations) to the parent, through the status subresource when `status`. Keys
    /// this manager set before and leaves out now are removed by the API server.
    async fn apply_to_parent(
        &self,
        resource: &ApiResource,
        parent: &DynamicObject,
        fields: Value,
        status: bool,
    ) -> kube::Result<Answer> {
        let mut body = json!({
            "apiVersion": resource.api_version,
            "kind": resource.kind,
            "metadata": {"name": parent.name_any()},
        });
        if let (Some(body), Value::Object(fields)) = (body.as_object_mut(), fields) {
            for (key, value) in fields {
                match (body.get_mut(&key), value) {
                    (Some(Value::Object(into)), Value::Object(more)) => into.extend(more),
                    (_, value) => drop(body.insert(key, value)),
                }
            }
        }
        self.send_apply(resource, parent.namespace().as_deref(), &parent.name_any(), status, &body).await
    }

    /// Server-side apply of `body` to the object `name` (its status subresource when
    /// `status`), sent as kube's `Api::patch` sends it, but read here: kube's client
    /// drops the response's `Warning` headers.
    async fn send_apply(
        &self,
        resource: &ApiResource,
        namespace: Option<&str>,
        name: &str,
        status: bool,
        body: &Value,
    ) -> kube::Result<Answer> {
        let request = kube::core::Request::new(DynamicObject::url_path(resource, namespace));
        let (params, patch) = (self.apply_params(), Patch::Apply(body));
        let request = if status {
            request.patch_subresource("status", name, &params, &patch)
        } else {
            request.patch(name, &params, &patch)
        }
        .map_err(kube::Error::BuildRequest)?;
        let response = self.client.send(request.map(kube::client::Body::from)).await?;
        let warnings = warnings::from_headers(response.headers());
        let code = response.status();
        let bytes = response.into_body().collect_bytes().await?;
        if code.is_client_error() || code.is_server_error() {
            // As kube's client answers a failed request: the API server's `Status`.
            let status = serde_json::from_slice::<kube::core::Status>(&bytes).unwrap_or_else(|_| {
                let text = String::from_utf8_lossy(&bytes);
                kube::core::Status::failure(text.trim(), "Failed to parse error data").with_code(code.as_u16())
            });
            return Err(kube::Error::Api(status.boxed()));
        }
        let object = serde_json::from_slice(&bytes).map_err(kube::Error::SerdeError)?;
        Ok(Answer { object, warnings })
    }

    /// Replaces the parent's finalizers, guarded by its resourceVersion so that a
    /// concurrent change is not lost (the write fails with 409 and is retried).
    async fn set_finalizers(
        &self,
        resource: &ApiResource,
        parent: &DynamicObject,
        finalizers: &[String],
    ) -> kube::Result<()> {
        let body = json!({"metadata": {"resourceVersion": parent.resource_version(), "finalizers": finalizers}});
        self.api(resource, parent.namespace().as_deref())
            .patch(&parent.name_any(), &PatchParams::default(), &Patch::Merge(body))
            .await?;
        Ok(())
    }

    /// Deletes `object` if it is still the same object (uid precondition); its own
    /// dependents are collected in the background. Already gone is not an error.
    async fn delete(&self, resource: &ApiResource, object: &DynamicObject) -> kube::Result<()> {
        let params = DeleteParams {
            preconditions: Some(Preconditions { uid: object.uid(), resource_version: None }),
            propagation_policy: Some(PropagationPolicy::Background),
            ..DeleteParams::default()
        };
        match self.api(resource, object.namespace().as_deref()).delete(&object.name_any(), &params).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => Ok(()),
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod create_only {
    use kubewasm_devcluster::{DevCluster, Options};

    use super::*;

    fn config_map(data: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": "default"},
               "data": {"key": data}})
    }

    #[tokio::test]
    async fn creates_what_is_missing_and_leaves_what_exists_untouched() {
        let cluster = DevCluster::start(Options::default()).await.expect("API server starts");
        let resource = ApiResource::erase::<k8s_openapi::api::core::v1::ConfigMap>(&());
        let writer = FieldManager { client: cluster.client(), manager: "kubewasm.test".into() };
        let api = writer.api(&resource, Some("default"));

        assert!(writer.create(&resource, &config_map("ours")).await.expect("create").is_some(), "missing: created");
        let created = api.get("settings").await.expect("created");
        assert_ne!(created.metadata.uid.as_deref(), Some(CREATE_ONLY_UID), "the server's own uid");
        assert_eq!(created.data["data"]["key"], "ours");
        let managers: Vec<_> = created.metadata.managed_fields.iter().flatten().map(|m| m.manager.clone()).collect();
        assert_eq!(managers, [Some("kubewasm.test".to_string())], "applied by our manager");

        // Someone else's object of that name now: it exists, so nothing is written.
        api.delete("settings", &kube::api::DeleteParams::default()).await.expect("delete");
        let theirs: DynamicObject = serde_json::from_value(config_map("theirs")).expect("object");
        let theirs = api.create(&kube::api::PostParams::default(), &theirs).await.expect("someone else creates it");
        assert!(
            writer.create(&resource, &config_map("ours")).await.expect("create-only").is_none(),
            "exists: not created"
        );
        let after = api.get("settings").await.expect("still there");
        assert_eq!(after.data["data"]["key"], "theirs");
        assert_eq!(after.metadata.resource_version, theirs.metadata.resource_version, "not written at all");
        cluster.shutdown().await;
    }
}
